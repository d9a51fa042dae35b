"""The data path's pure core: Pulsar's WebSocket frames, in-memory topics, traffic rates.

No sockets here: the broker's WebSocket shell (:mod:`brokerlb.broker.websocket`) and the
client library (:mod:`brokerlb.client`) both build on these pieces.
"""

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
    consumer_frame,
    consumer_path,
    decode_message_id,
    encode_message_id,
    format_publish_time,
    parse_endpoint,
    producer_path,
)
from brokerlb.messaging.stats import RateWindow, TopicCounters, TopicLoad
from brokerlb.messaging.topic import ConsumerSink, Delivery, Subscription, Topic

__all__ = [
    "MAX_CLOSE_REASON_BYTES",
    "MAX_RECEIVER_QUEUE_SIZE",
    "SUBSCRIPTION_TYPES",
    "WS_PREFIX",
    "CloseCode",
    "CloseReason",
    "ConsumerCommand",
    "ConsumerSink",
    "Delivery",
    "Endpoint",
    "ProducerAck",
    "ProducerMessage",
    "RateWindow",
    "Subscription",
    "Topic",
    "TopicCounters",
    "TopicLoad",
    "WebSocketError",
    "consumer_frame",
    "consumer_path",
    "decode_message_id",
    "encode_message_id",
    "format_publish_time",
    "parse_endpoint",
    "producer_path",
]
