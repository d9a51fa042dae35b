"""The WebSocket data-path protocol: Pulsar's WebSocket API frames plus brokerlb's close convention.

Endpoints (served by the broker that owns the topic's bundle, on its web port):

* ``/ws/v2/producer/{persistent|non-persistent}/{tenant}/{namespace}/{topic}``
* ``/ws/v2/consumer/{persistent|non-persistent}/{tenant}/{namespace}/{topic}/{subscription}``
  with ``?subscriptionType=Exclusive|Shared|Failover|Key_Shared`` (default Exclusive),
  ``receiverQueueSize`` (default 1000, at most 1000), ``consumerName``, ``priorityLevel``.

Frames are JSON text, as in Pulsar's WebSocket API (``pulsar-websocket``):

==========================  ================================================================
producer → broker           ``{"payload": base64, "properties": {..}, "context": "..", "key": ".."}``
broker → producer (ok)      ``{"result": "ok", "messageId": "..", "context": ".."}``
broker → producer (error)   ``{"result": "send-error:<code>", "errorMsg": "..", "context": ".."}``
broker → consumer           ``{"messageId", "payload", "properties", "publishTime", "key"}``
consumer → broker (ack)     ``{"messageId": ".."}``
consumer → broker (nack)    ``{"type": "negativeAcknowledge", "messageId": ".."}``
==========================  ================================================================

Error codes are Pulsar's ``WebSocketError`` (3 = bad JSON, 7 = bad payload encoding, 8 =
unknown). A message id is the base64 of Pulsar's ``MessageIdData`` protobuf (ledger id,
entry id, partition), so it looks like Pulsar's and Pulsar tooling can decode it.

**Close convention** (brokerlb's; Pulsar's WebSocket proxy hides moves behind its own
client). When a broker stops serving a topic it closes the WebSocket with a code in the
private range and a reason that is compact JSON (at most 123 bytes, the WebSocket limit):

=====  ==================  ==========================================================
code   ``reason``          what the client does
=====  ==================  ==========================================================
4000   ``TopicUnloaded``   the bundle was unloaded (or lost, or the broker stops):
                           ``{"reason": "TopicUnloaded", "lookup": true}`` -- look the
                           topic up again (with backoff) and reconnect
4001   ``TopicTransferred`` the bundle moved to a known broker (PIP-307):
                           ``{"reason": "TopicTransferred", "httpUrl": "http://h:p",
                           "brokerUrl": "pulsar://h:p"}`` -- connect there at once, no
                           lookup (``brokerUrl`` is left out when it would not fit)
4002   ``ServiceNotReady``  refused at connect: this broker does not own the bundle
                           and knows no other owner (Pulsar's ServiceNotReady) -- look
                           the topic up again
4003   ``TopicRedirected``  refused at connect, but the bundle has an owner: ``{"reason":
                           "TopicRedirected", "httpUrl": ..., "brokerUrl": ...}`` --
                           connect there at once (a client that followed a stale lookup
                           answer saves a lookup and a backoff; brokerlb's extension)
=====  ==================  ==========================================================

Permanent errors at connect (bad topic or parameters, unknown namespace, an Exclusive
subscription already taken, the WebSocket service disabled) are HTTP answers to the
upgrade request, as Pulsar's proxy gives them: 400, 404, 409, 405, with ``{"reason": ..}``.
"""

from __future__ import annotations

import base64
import binascii
import enum
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, unquote_plus

from brokerlb.errors import BinaryProtocolError, DataPathProtocolError, InvalidInputError
from brokerlb.limits import parse_json
from brokerlb.messaging.frames import payload_section, read_payload, unpack_batch
from brokerlb.messaging.wire import KeyValue, MessageIdData, MessageMetadata, decode
from brokerlb.naming import TopicName

__all__ = [
    "WS_PREFIX",
    "MAX_CLOSE_REASON_BYTES",
    "CloseCode",
    "CloseReason",
    "WebSocketError",
    "SUBSCRIPTION_TYPES",
    "MAX_RECEIVER_QUEUE_SIZE",
    "Endpoint",
    "parse_endpoint",
    "producer_path",
    "consumer_path",
    "ProducerMessage",
    "ProducerAck",
    "ConsumerCommand",
    "encode_message_id",
    "decode_message_id",
    "format_publish_time",
    "consumer_frames",
    "publish_section",
    "parse_message_id",
]

WS_PREFIX = "/ws/v2"
#: RFC 6455: a close frame's reason is at most 123 bytes of UTF-8.
MAX_CLOSE_REASON_BYTES = 123
SUBSCRIPTION_TYPES = ("Exclusive", "Shared", "Failover", "Key_Shared")
#: Pulsar's WebSocket consumer caps ``receiverQueueSize`` at 1000 (also its default).
MAX_RECEIVER_QUEUE_SIZE = 1000


class CloseCode(enum.IntEnum):
    """WebSocket close codes of the data path (module docstring)."""

    NORMAL = 1000
    GOING_AWAY = 1001
    #: the session's credentials expired (RFC 6455's policy violation)
    POLICY_VIOLATION = 1008
    TOPIC_UNLOADED = 4000
    TOPIC_TRANSFERRED = 4001
    SERVICE_NOT_READY = 4002
    TOPIC_REDIRECTED = 4003


class WebSocketError(enum.IntEnum):
    """Pulsar's ``WebSocketError`` codes (``send-error:<code>``)."""

    FAILED_TO_CREATE_PRODUCER = 1
    FAILED_TO_SUBSCRIBE = 2
    FAILED_TO_DESERIALIZE_FROM_JSON = 3
    FAILED_TO_SERIALIZE_TO_JSON = 4
    AUTHENTICATION_ERROR = 5
    NOT_AUTHORIZED_ERROR = 6
    PAYLOAD_ENCODING_ERROR = 7
    UNKNOWN_ERROR = 8


@dataclass(frozen=True, slots=True)
class CloseReason:
    """Why a broker closed a data-path WebSocket, and where the client goes next."""

    code: CloseCode
    reason: str
    http_url: str | None = None
    broker_url: str | None = None
    message: str = ""

    @property
    def lookup(self) -> bool:
        """The client must look the topic up again (no destination given)."""
        return self.http_url is None

    @classmethod
    def unloaded(cls, message: str = "") -> CloseReason:
        return cls(CloseCode.TOPIC_UNLOADED, "TopicUnloaded", message=message)

    @classmethod
    def transferred(cls, http_url: str, broker_url: str | None = None) -> CloseReason:
        return cls(CloseCode.TOPIC_TRANSFERRED, "TopicTransferred", http_url=http_url, broker_url=broker_url)

    @classmethod
    def credentials_expired(cls, message: str = "") -> CloseReason:
        return cls(CloseCode.POLICY_VIOLATION, "AuthenticationError", message=message)

    @classmethod
    def not_ready(cls, message: str = "") -> CloseReason:
        return cls(CloseCode.SERVICE_NOT_READY, "ServiceNotReady", message=message)

    @classmethod
    def redirected(cls, http_url: str, broker_url: str | None = None) -> CloseReason:
        return cls(CloseCode.TOPIC_REDIRECTED, "TopicRedirected", http_url=http_url, broker_url=broker_url)

    def encode(self) -> str:
        """The close frame's reason: compact JSON of at most :data:`MAX_CLOSE_REASON_BYTES` bytes.

        Optional parts are dropped until it fits: ``message`` first, then ``brokerUrl``; a
        transfer whose ``httpUrl`` alone does not fit degrades to ``lookup: true``.
        """
        body: dict[str, Any] = {"reason": self.reason}
        if self.http_url is None:
            body["lookup"] = True
        else:
            body["httpUrl"] = self.http_url
            if self.broker_url:
                body["brokerUrl"] = self.broker_url
        if self.message:
            body["message"] = self.message
        for drop in (None, "message", "brokerUrl", "httpUrl"):
            if drop is not None and drop in body:
                del body[drop]
                if drop == "httpUrl":
                    body["lookup"] = True
            text = json.dumps(body, separators=(",", ":"))
            if len(text.encode()) <= MAX_CLOSE_REASON_BYTES:
                return text
        return json.dumps({"reason": self.reason[:80], "lookup": True}, separators=(",", ":"))

    @classmethod
    def decode(cls, code: int, text: str | None) -> CloseReason:
        """Parse a close frame; anything unexpected means "look it up again"."""
        try:
            close_code = CloseCode(code)
        except ValueError:
            close_code = CloseCode.TOPIC_UNLOADED if code >= 4000 else CloseCode.GOING_AWAY
        try:
            body = json.loads(text) if text else {}
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        with_url = close_code in (CloseCode.TOPIC_TRANSFERRED, CloseCode.TOPIC_REDIRECTED)
        http_url = body.get("httpUrl") if with_url else None
        broker_url = body.get("brokerUrl") if http_url else None
        return cls(
            close_code,
            str(body.get("reason") or close_code.name),
            http_url=_str_or_none(http_url),
            broker_url=_str_or_none(broker_url),
            message=str(body.get("message") or text or ""),
        )


def _json_object(text: str | bytes, what: str) -> dict[str, Any]:
    """A client frame's JSON object; Pulsar's ``FailedToDeserializeFromJSON`` if it is not one."""
    try:
        body = parse_json(text)
    except ValueError as exc:
        raise DataPathProtocolError(WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, str(exc)) from None
    if not isinstance(body, dict):
        raise DataPathProtocolError(
            WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, f"{what} must be a JSON object"
        )
    return body


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


# --------------------------------------------------------------------------- paths


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A parsed data-path request: producer or consumer of a topic, with the query parameters."""

    kind: str  # "producer" | "consumer" | "reader"
    topic: TopicName
    subscription: str | None = None
    params: dict[str, str] = field(default_factory=dict)

    @property
    def subscription_type(self) -> str:
        value = self.params.get("subscriptionType", "Exclusive")
        if value not in SUBSCRIPTION_TYPES:
            raise InvalidInputError(f"Invalid query params: Invalid subscriptionType {value}")
        return value

    @property
    def receiver_queue_size(self) -> int:
        return min(
            _int_param(self.params, "receiverQueueSize", MAX_RECEIVER_QUEUE_SIZE, minimum=1),
            MAX_RECEIVER_QUEUE_SIZE,
        )

    @property
    def priority_level(self) -> int:
        return _int_param(self.params, "priorityLevel", 0, minimum=0)

    @property
    def consumer_name(self) -> str:
        return self.params.get("consumerName") or self.params.get("readerName") or ""

    @property
    def producer_name(self) -> str:
        return self.params.get("producerName", "")

    @property
    def pull_mode(self) -> bool:
        """``pullMode=true``: messages are sent only against ``permit`` commands."""
        return _bool_param(self.params, "pullMode")

    @property
    def negative_ack_redelivery_delay_ms(self) -> int:
        """``negativeAckRedeliveryDelay`` (ms; Pulsar's consumer default: one minute)."""
        return _int_param(self.params, "negativeAckRedeliveryDelay", 60_000, minimum=0)

    @property
    def durable(self) -> bool:
        """``subscriptionMode=Durable|NonDurable`` (default Durable)."""
        mode = self.params.get("subscriptionMode", "Durable")
        if mode not in ("Durable", "NonDurable"):
            raise InvalidInputError(f"Invalid query params: Invalid subscriptionMode {mode}")
        return mode == "Durable"

    @property
    def start_message_id(self) -> str:
        """A reader's ``messageId``: ``earliest``, ``latest`` (default) or a base64 message id."""
        value = self.params.get("messageId", "latest")
        if value not in ("earliest", "latest"):
            parse_message_id(value)
        return value


def _bool_param(params: dict[str, str], name: str) -> bool:
    raw = params.get(name, "false").lower()
    if raw not in ("true", "false"):
        raise InvalidInputError(f"Invalid query params: {name} must be true or false, got {raw!r}")
    return raw == "true"


def _int_param(params: dict[str, str], name: str, default: int, *, minimum: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInputError(f"Invalid query params: {name} must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidInputError(f"Invalid query params: {name} must be >= {minimum}, got {value}")
    return value


def parse_endpoint(path: str, query_string: bytes | str = b"") -> Endpoint:
    """``/ws/v2/{producer|consumer|reader}/{domain}/{tenant}/{ns}/{topic}[/{subscription}]`` → :class:`Endpoint`."""
    if not path.startswith(WS_PREFIX + "/"):
        raise InvalidInputError(
            f"Not a data-path URL: {path} (expected {WS_PREFIX}/producer|consumer|reader/...)"
        )
    parts = path[len(WS_PREFIX) + 1 :].split("/")
    kind = parts[0]
    expected = {"producer": 5, "consumer": 6, "reader": 5}.get(kind)
    if expected is None:
        raise InvalidInputError(
            f"Unknown data-path endpoint '{kind}' (expected producer, consumer or reader)"
        )
    if len(parts) != expected or not all(parts):
        shape = "{domain}/{tenant}/{namespace}/{topic}" + ("/{subscription}" if kind == "consumer" else "")
        raise InvalidInputError(f"Invalid topic name format: {path} (expected {WS_PREFIX}/{kind}/{shape})")
    domain, tenant, namespace, local = parts[1:5]
    if domain not in ("persistent", "non-persistent"):
        raise InvalidInputError(f"Invalid domain '{domain}' (expected persistent or non-persistent)")
    topic = TopicName.parse(f"{domain}://{tenant}/{namespace}/{unquote_plus(local)}")  # Java URLDecoder
    subscription = unquote(parts[5]) if kind == "consumer" else None
    qs = query_string.decode("latin-1") if isinstance(query_string, bytes) else query_string
    params = {k: v[-1] for k, v in parse_qs(qs, keep_blank_values=True).items()}
    endpoint = Endpoint(kind, topic, subscription, params)
    if kind == "consumer":  # validate the parameters up front (400 rather than a late failure)
        _ = endpoint.subscription_type, endpoint.receiver_queue_size, endpoint.priority_level
        _ = endpoint.pull_mode, endpoint.negative_ack_redelivery_delay_ms, endpoint.durable
    elif kind == "reader":
        _ = endpoint.receiver_queue_size, endpoint.start_message_id
    return endpoint


def _topic_path(topic: TopicName) -> str:
    return f"{topic.domain}/{topic.namespace}/{topic.encoded_local_name}"


def producer_path(topic: TopicName | str) -> str:
    return f"{WS_PREFIX}/producer/{_topic_path(TopicName.parse(topic))}"


def consumer_path(topic: TopicName | str, subscription: str, **params: object) -> str:
    from urllib.parse import quote, urlencode

    path = f"{WS_PREFIX}/consumer/{_topic_path(TopicName.parse(topic))}/{quote(subscription, safe='')}"
    query = urlencode({k: v for k, v in params.items() if v is not None})
    return f"{path}?{query}" if query else path


# --------------------------------------------------------------------------- frames


@dataclass(slots=True)
class ProducerMessage:
    """A producer's send request; ``payload`` stays base64 (it is forwarded as is).

    Not frozen: one is made per message on the broker's hot path (treat it as read-only).
    """

    payload: str
    size: int
    context: str | None = None
    key: str | None = None
    properties: dict[str, str] | None = None
    event_time: str | None = None

    @classmethod
    def parse(cls, text: str | bytes) -> ProducerMessage:
        """Parse and validate; raises :class:`~brokerlb.errors.DataPathProtocolError` carrying the Pulsar error code."""
        body = _json_object(text, "a send request")
        context = body.get("context")
        context = None if context is None else str(context)
        payload = body.get("payload")
        if not isinstance(payload, str):
            raise DataPathProtocolError(
                WebSocketError.PAYLOAD_ENCODING_ERROR, "Null or non-string payload", context
            )
        try:
            size = len(binascii.a2b_base64(payload, strict_mode=True))
        except (binascii.Error, ValueError) as exc:
            raise DataPathProtocolError(
                WebSocketError.PAYLOAD_ENCODING_ERROR, f"Invalid Base64 message-payload error={exc}", context
            ) from None
        properties = body.get("properties")
        if properties is not None and (
            not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values())
        ):
            raise DataPathProtocolError(
                WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON,
                "properties must be an object of strings",
                context,
            )
        key = body.get("key")
        event_time = body.get("eventTime")
        return cls(
            payload,
            size,
            context,
            None if key is None else str(key),
            properties or None,
            None if event_time is None else str(event_time),
        )

    def encode(self) -> str:
        body: dict[str, Any] = {"payload": self.payload}
        if self.properties:
            body["properties"] = self.properties
        if self.context is not None:
            body["context"] = self.context
        if self.key is not None:
            body["key"] = self.key
        if self.event_time is not None:
            body["eventTime"] = self.event_time
        return json.dumps(body, separators=(",", ":"))


@dataclass(frozen=True, slots=True)
class ProducerAck:
    """The broker's answer to one send: ``ok`` with a message id, or ``send-error:<code>``."""

    result: str
    message_id: str | None = None
    context: str | None = None
    error_msg: str | None = None

    @property
    def ok(self) -> bool:
        return self.result == "ok"

    @classmethod
    def success(cls, message_id: str, context: str | None) -> ProducerAck:
        return cls("ok", message_id, context)

    @staticmethod
    def success_text(message_id: str, context: str | None) -> str:
        """``success(message_id, context).encode()`` without the object (the broker's hot path)."""
        if context is None:
            return f'{{"result":"ok","messageId":"{message_id}"}}'
        return f'{{"result":"ok","messageId":"{message_id}","context":{_json_str(context)}}}'

    @classmethod
    def error(cls, code: WebSocketError | int, message: str, context: str | None) -> ProducerAck:
        return cls(f"send-error:{int(code)}", None, context, message)

    def encode(self) -> str:
        body: dict[str, Any] = {"result": self.result}
        if self.error_msg is not None:
            body["errorMsg"] = self.error_msg
        if self.message_id is not None:
            body["messageId"] = self.message_id
        if self.context is not None:
            body["context"] = self.context
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def parse(cls, text: str | bytes) -> ProducerAck:
        body = json.loads(text)
        if not isinstance(body, dict) or not isinstance(body.get("result"), str):
            raise InvalidInputError(f"Not a producer ack: {text!r}")
        context = body.get("context")
        return cls(
            body["result"],
            body.get("messageId"),
            None if context is None else str(context),
            body.get("errorMsg"),
        )


@dataclass(frozen=True, slots=True)
class ConsumerCommand:
    """What a consumer (or reader) sends: an ack (no ``type``, or ``"ack"``), a negative ack
    (``"negativeAcknowledge"``), or ``{"type": "permit", "permitMessages": N}`` in pull mode."""

    type: str
    message_id: str
    permits: int = 0

    @classmethod
    def parse(cls, text: str | bytes) -> ConsumerCommand:
        body = _json_object(text, "a command")
        kind = body.get("type") or "ack"
        if kind not in ("ack", "negativeAcknowledge", "permit"):
            raise DataPathProtocolError(
                WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, f"Unsupported command type {kind!r}"
            )
        if kind == "permit":
            permits = body.get("permitMessages")
            if isinstance(permits, bool) or not isinstance(permits, int) or permits <= 0:
                raise DataPathProtocolError(
                    WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON,
                    "permitMessages must be a positive integer",
                )
            return cls(kind, "", permits)
        message_id = body.get("messageId")
        if not isinstance(message_id, str) or not message_id:
            raise DataPathProtocolError(
                WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, "messageId is missing"
            )
        return cls(kind, message_id)


# --------------------------------------------------------------------------- message ids


def encode_message_id(
    ledger_id: int, entry_id: int, partition: int = -1, batch_index: int = -1, batch_size: int = 0
) -> str:
    """Base64 of Pulsar's ``MessageIdData`` (partition, batch index and size only when set)."""
    msg = MessageIdData(
        ledger_id,
        entry_id,
        partition if partition >= 0 else None,
        batch_index if batch_index >= 0 else None,
        batch_size=batch_size if batch_index >= 0 and batch_size else None,
    )
    return base64.b64encode(msg.encode()).decode()


def parse_message_id(text: str) -> MessageIdData:
    """The ``MessageIdData`` in a base64 message id (:class:`InvalidInputError` naming what is wrong)."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError(f"Invalid message id {text!r}: {exc}") from None
    try:
        return decode(MessageIdData, data)
    except BinaryProtocolError as exc:
        raise InvalidInputError(f"Invalid message id {text!r}: {exc}") from None


def decode_message_id(text: str) -> tuple[int, int, int]:
    """``(ledger_id, entry_id, partition)`` of a base64 message id (unknown fields skipped)."""
    msg = parse_message_id(text)
    return msg.ledgerId, msg.entryId, -1 if msg.partition is None else msg.partition


_second_cache: list[Any] = [None, ""]


def format_publish_time(epoch_ms: int) -> str:
    """Pulsar's ``DateFormatter.format``: ISO-8601 with milliseconds (here in UTC)."""
    seconds, millis = divmod(epoch_ms, 1000)
    if _second_cache[0] != seconds:  # the date part changes once a second
        _second_cache[0], _second_cache[1] = seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    return f"{_second_cache[1]}.{millis:03d}Z"


def publish_section(
    message: ProducerMessage, *, producer_name: str, sequence_id: int, publish_time: int
) -> bytes:
    """The payload section a WebSocket send is stored as (Pulsar's ``MessageMetadata`` + payload, CRC-32C)."""
    metadata = MessageMetadata(
        producer_name,
        sequence_id,
        publish_time,
        [KeyValue(k, v) for k, v in (message.properties or {}).items()],
        partition_key=message.key,
    )
    if message.event_time is not None and message.event_time.isdigit():
        metadata.event_time = int(message.event_time)
    return payload_section(metadata, base64.b64decode(message.payload))


def consumer_frames(
    section: bytes,
    *,
    ledger_id: int,
    entry_id: int,
    partition: int,
    redelivery_count: int = 0,
    unacked_mask: int | None = None,
) -> list[tuple[str, str]]:
    """``(message id, frame)`` per message of an entry, as Pulsar's WebSocket ``ConsumerMessage``:
    ``{"messageId", "payload", "properties", "publishTime", "redeliveryCount", "key", "eventTime"}``.

    A batch gives one frame per message (ids with the batch index), skipping the indexes
    already acknowledged (``unacked_mask``: set bits = still unacknowledged). A payload the
    broker cannot read (LZ4 / ZSTD / SNAPPY compression) raises
    :class:`~brokerlb.errors.BinaryProtocolError`.
    """
    metadata, payload = read_payload(section)
    messages = unpack_batch(metadata, payload)
    publish_time = format_publish_time(metadata.publish_time)
    batched = metadata.num_messages_in_batch is not None
    out: list[tuple[str, str]] = []
    for index, (single, data) in enumerate(messages):
        if batched and unacked_mask is not None and not unacked_mask >> index & 1:
            continue
        message_id = encode_message_id(
            ledger_id, entry_id, partition, index if batched else -1, len(messages) if batched else 0
        )
        source = single if single is not None else metadata
        body: dict[str, Any] = {
            "messageId": message_id,
            "payload": base64.b64encode(data).decode(),
            "properties": {kv.key: kv.value for kv in source.properties},
            "publishTime": publish_time,
            "redeliveryCount": redelivery_count,
        }
        if source.partition_key is not None:
            body["key"] = source.partition_key
        event_time = source.event_time or 0
        if event_time:
            body["eventTime"] = str(event_time)
        out.append((message_id, json.dumps(body, separators=(",", ":"))))
    return out


_json_str = json.encoder.encode_basestring_ascii
