"""The bytes a bundle's topic state travels in from one owner to the next.

A planned move (unload, transfer) hands every topic of the bundle to the next owner before
its clients reconnect (:meth:`~brokerlb.messaging.topic.Topic.export_state`). The states are
sent as one protocol-buffer message, ``BundleState`` -- brokerlb's own schema, written with
the same codec as Pulsar's commands (:mod:`brokerlb.messaging.wire`)::

    message BundleState        { required string bundle = 1; repeated TopicStateProto topics = 2; }
    message TopicStateProto    { required string name = 1; required int64 ledger_id = 2;
                                 required int64 next_entry_id = 3; repeated EntryProto entries = 4;
                                 repeated CursorProto subscriptions = 5; }
    message EntryProto         { required int64 entry_id = 1; required bytes section = 2;
                                 required int64 num_messages = 3; required int64 publish_time = 4; }
    message CursorProto        { required string name = 1; required string type = 2;
                                 required int64 mark_delete = 3; repeated int64 acked = 4;
                                 repeated EntryCount partial = 5; repeated EntryCount redeliveries = 6; }
    message EntryCount         { required int64 entry_id = 1; required bytes value = 2; }

A partial ack mask can exceed 64 bits (a batch of more than 64 messages), so it travels as
little-endian bytes.

>>> from brokerlb.messaging.handoff import SubscriptionState, TopicState
>>> state = TopicState("persistent://t/ns/a", 7, 3, [(2, b"x", 1, 5)], [SubscriptionState("s", "Shared", 1)])
>>> decode_bundle_state(encode_bundle_state("t/ns/0x00000000_0xffffffff", [state]))[1] == [state]
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from brokerlb.messaging.wire import (
    BYTES,
    I64,
    MESSAGE,
    REPEATED,
    REQUIRED,
    STRING,
    Message,
    decode,
    encode,
    message_schema,
)

__all__ = ["SubscriptionState", "TopicState", "encode_bundle_state", "decode_bundle_state"]


@dataclass
class SubscriptionState:
    """A durable subscription's cursor, as handed to the next owner."""

    name: str
    type: str
    mark_delete: int
    acked: list[int] = field(default_factory=list)
    #: entry id -> bit mask of the batch indexes still unacknowledged
    partial: dict[int, int] = field(default_factory=dict)
    redeliveries: dict[int, int] = field(default_factory=dict)


@dataclass
class TopicState:
    """A topic's retained entries and durable cursors, as the hand-off carried them."""

    name: str
    ledger_id: int
    next_entry_id: int
    #: ``(entry_id, payload section, messages in it, publish time ms)``
    entries: list[tuple[int, bytes, int, int]] = field(default_factory=list)
    subscriptions: list[SubscriptionState] = field(default_factory=list)


@dataclass(slots=True)
class _EntryCount(Message):
    entry_id: int = 0
    value: bytes = b""


message_schema(_EntryCount, (1, "entry_id", I64, REQUIRED), (2, "value", BYTES, REQUIRED))


@dataclass(slots=True)
class _Cursor(Message):
    name: str = ""
    type: str = ""
    mark_delete: int = 0
    acked: list[int] = field(default_factory=list)
    partial: list[_EntryCount] = field(default_factory=list)
    redeliveries: list[_EntryCount] = field(default_factory=list)


message_schema(
    _Cursor,
    (1, "name", STRING, REQUIRED),
    (2, "type", STRING, REQUIRED),
    (3, "mark_delete", I64, REQUIRED),
    (4, "acked", I64, REPEATED),
    (5, "partial", MESSAGE, REPEATED, _EntryCount),
    (6, "redeliveries", MESSAGE, REPEATED, _EntryCount),
)


@dataclass(slots=True)
class _Entry(Message):
    entry_id: int = 0
    section: bytes = b""
    num_messages: int = 0
    publish_time: int = 0


message_schema(
    _Entry,
    (1, "entry_id", I64, REQUIRED),
    (2, "section", BYTES, REQUIRED),
    (3, "num_messages", I64, REQUIRED),
    (4, "publish_time", I64, REQUIRED),
)


@dataclass(slots=True)
class _Topic(Message):
    name: str = ""
    ledger_id: int = 0
    next_entry_id: int = 0
    entries: list[_Entry] = field(default_factory=list)
    subscriptions: list[_Cursor] = field(default_factory=list)


message_schema(
    _Topic,
    (1, "name", STRING, REQUIRED),
    (2, "ledger_id", I64, REQUIRED),
    (3, "next_entry_id", I64, REQUIRED),
    (4, "entries", MESSAGE, REPEATED, _Entry),
    (5, "subscriptions", MESSAGE, REPEATED, _Cursor),
)


@dataclass(slots=True)
class _Bundle(Message):
    bundle: str = ""
    topics: list[_Topic] = field(default_factory=list)


message_schema(_Bundle, (1, "bundle", STRING, REQUIRED), (2, "topics", MESSAGE, REPEATED, _Topic))


def _mask_bytes(mask: int) -> bytes:
    return mask.to_bytes(max(1, (mask.bit_length() + 7) // 8), "little")


def encode_bundle_state(bundle: str, states: list[TopicState]) -> bytes:
    """``BundleState`` bytes of ``states`` (module docstring)."""
    topics = [
        _Topic(
            s.name,
            s.ledger_id,
            s.next_entry_id,
            [_Entry(e, section, n, t) for e, section, n, t in s.entries],
            [
                _Cursor(
                    c.name,
                    c.type,
                    c.mark_delete,
                    list(c.acked),
                    [_EntryCount(e, _mask_bytes(m)) for e, m in c.partial.items()],
                    [_EntryCount(e, _mask_bytes(n)) for e, n in c.redeliveries.items()],
                )
                for c in s.subscriptions
            ],
        )
        for s in states
    ]
    return encode(_Bundle(bundle, topics))


def decode_bundle_state(data: bytes) -> tuple[str, list[TopicState]]:
    """``(bundle, states)`` from :func:`encode_bundle_state` bytes (:class:`~brokerlb.errors.BinaryProtocolError`
    when they do not parse)."""
    msg = decode(_Bundle, data)
    states = [
        TopicState(
            t.name,
            t.ledger_id,
            t.next_entry_id,
            [(e.entry_id, e.section, e.num_messages, e.publish_time) for e in t.entries],
            [
                SubscriptionState(
                    c.name,
                    c.type,
                    c.mark_delete,
                    list(c.acked),
                    {p.entry_id: int.from_bytes(p.value, "little") for p in c.partial},
                    {r.entry_id: int.from_bytes(r.value, "little") for r in c.redeliveries},
                )
                for c in t.subscriptions
            ],
        )
        for t in msg.topics
    ]
    return msg.bundle, states
