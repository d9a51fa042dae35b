"""The data-path client (asyncio): producers and consumers over Pulsar's WebSocket API.

* :class:`Client` -- looks topics up (following redirects) and creates producers and
  consumers connected to the owning broker;
* :class:`Producer` -- bounded pending queue, re-sends what was not acknowledged after a
  reconnect; every send ends in an ack or an error;
* :class:`Consumer` -- re-subscribes after a move (straight to the new owner after a
  transfer, PIP-307; through a lookup after an unload).

Needs the ``server`` extra (``websockets``, ``httpx``).
"""

from brokerlb.backoff import Backoff
from brokerlb.client.client import Client
from brokerlb.client.consumer import Consumer, Message
from brokerlb.client.link import LinkStats, TopicLink
from brokerlb.client.lookup import HttpLookup, LookupResult, ws_url
from brokerlb.client.partitioned import PartitionedConsumer, PartitionedProducer
from brokerlb.client.producer import Producer, SendReceipt

__all__ = [
    "Backoff",
    "Client",
    "Consumer",
    "HttpLookup",
    "LinkStats",
    "LookupResult",
    "Message",
    "PartitionedConsumer",
    "PartitionedProducer",
    "Producer",
    "SendReceipt",
    "TopicLink",
    "ws_url",
]
