"""``brokerlb perf``: load generation over the data path, like ``pulsar-perf``.

Pure pieces (:mod:`~brokerlb.perf.workload` skew and pacing, :mod:`~brokerlb.perf.histogram`,
:mod:`~brokerlb.perf.pauses`) and the runs over the client (:mod:`~brokerlb.perf.runner`).
"""

from brokerlb.perf.histogram import LatencyHistogram
from brokerlb.perf.pauses import Pause, PauseTracker
from brokerlb.perf.workload import SKEWS, Pacer, Picker, skew_weights, topic_names

__all__ = [
    "SKEWS",
    "LatencyHistogram",
    "Pacer",
    "Pause",
    "PauseTracker",
    "Picker",
    "skew_weights",
    "topic_names",
]
