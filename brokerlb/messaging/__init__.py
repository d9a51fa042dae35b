"""The data path's pure core: Pulsar's binary protocol codec, WebSocket frames, the topic engine, rates.

No sockets here: the broker's binary and WebSocket shells (:mod:`brokerlb.broker.binary`,
:mod:`brokerlb.broker.websocket`) and the client library (:mod:`brokerlb.client`) build on
these pieces.

* :mod:`~brokerlb.messaging.wire` -- Pulsar's protocol-buffer messages and their codec;
* :mod:`~brokerlb.messaging.frames` -- framing, CRC-32C, batches;
* :mod:`~brokerlb.messaging.topic` -- the topic engine (retention, cursors, dispatch, redelivery);
* :mod:`~brokerlb.messaging.log` -- the seam to where a topic's entries are stored (memory, or a managed ledger);
* :mod:`~brokerlb.messaging.protocol` -- Pulsar's WebSocket frames and brokerlb's close convention;
* :mod:`~brokerlb.messaging.stats` -- sliding-window rates.
"""

from brokerlb.messaging.log import MemoryLog, TopicLog
from brokerlb.messaging.protocol import (
    MAX_CLOSE_REASON_BYTES,
    MAX_RECEIVER_QUEUE_SIZE,
    SUBSCRIPTION_TYPES,
    WS_PREFIX,
    CloseCode,
    CloseReason,
    ConsumerCommand,
    Endpoint,
    ProducerAck,
    ProducerMessage,
    WebSocketError,
    consumer_frames,
    consumer_path,
    decode_message_id,
    encode_message_id,
    format_publish_time,
    parse_endpoint,
    parse_message_id,
    producer_path,
    publish_section,
)
from brokerlb.messaging.stats import RateWindow, TopicCounters, TopicLoad
from brokerlb.messaging.topic import (
    EARLIEST,
    LATEST,
    BacklogQuota,
    BacklogQuotaExceeded,
    ConsumerSink,
    Entry,
    ProducerBusyError,
    Retention,
    Subscription,
    Topic,
)

__all__ = [
    "EARLIEST",
    "LATEST",
    "MAX_CLOSE_REASON_BYTES",
    "MAX_RECEIVER_QUEUE_SIZE",
    "SUBSCRIPTION_TYPES",
    "WS_PREFIX",
    "BacklogQuota",
    "BacklogQuotaExceeded",
    "CloseCode",
    "CloseReason",
    "ConsumerCommand",
    "ConsumerSink",
    "Endpoint",
    "Entry",
    "MemoryLog",
    "TopicLog",
    "ProducerAck",
    "ProducerBusyError",
    "ProducerMessage",
    "RateWindow",
    "Retention",
    "Subscription",
    "Topic",
    "TopicCounters",
    "TopicLoad",
    "WebSocketError",
    "consumer_frames",
    "consumer_path",
    "decode_message_id",
    "encode_message_id",
    "format_publish_time",
    "parse_endpoint",
    "parse_message_id",
    "producer_path",
    "publish_section",
]
