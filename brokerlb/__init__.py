"""brokerlb: load balancing and topic ownership for message-broker clusters.

The public API is re-exported here explicitly; ``tests/unit/test_public_api.py``
pins it. Heavy parts (kazoo, the web server, pyspark, plotting) are imported
only by the modules that need them, so ``import brokerlb`` stays fast.
"""

from brokerlb.errors import BrokerLBError
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.ring import NamespaceBundle, NamespaceBundles, topic_hash

__version__ = "0.1.0"

__all__ = [
    "BrokerLBError",
    "NamespaceBundle",
    "NamespaceBundles",
    "NamespaceName",
    "TopicName",
    "__version__",
    "topic_hash",
]
