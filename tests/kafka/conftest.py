"""Settings for the Kafka-style balancing tests."""

from __future__ import annotations

import warnings

# kafka-python 3.0.12 loads its protocol schemas at import time with the deprecated
# importlib.resources.open_text/read_text; import the parts we use once, quietly.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.coordinator.assignors.cooperative_sticky  # noqa: F401
    import kafka.coordinator.assignors.range  # noqa: F401
    import kafka.coordinator.assignors.roundrobin  # noqa: F401
    import kafka.partitioner.default  # noqa: F401
