"""The topic engine: a topic's retained entries, its subscriptions' cursors and their dispatch.

One engine serves both data paths (Pulsar's binary protocol and its WebSocket API). It does
no I/O: the shells hand it payload sections and permits and give each consumer a *sink*
whose ``deliver`` must return at once (it queues a frame for the connection's writer).
Times come from the functions passed in, so tests drive them.

**Entries.** Each publish is one entry (a single message or a producer's batch, kept as
the payload section the producer sent). Ids are ``(ledger_id, entry_id)``: one ledger per
topic state, entries numbered from 0 and increasing; a state handed to another broker keeps
its ledger and numbering, so ids stay unique and increasing across owners.

**Persistent topics** (``persistent://``) keep Pulsar's promises while their owner lives:

* a *durable* subscription keeps a cursor -- ``mark_delete`` (everything up to it is
  acknowledged) plus the entries acknowledged individually above it -- and retains every
  entry it has not acknowledged, whether or not a consumer is connected;
* entries leave the topic once every subscription is past them (readers' non-durable
  cursors count while connected) and the retention policy (``defaultRetentionTimeInMinutes``,
  ``defaultRetentionSizeInMB``; 0 = none, -1 = infinite) lets them go;
* dispatch (:meth:`Topic.dispatch`) sends entries to consumers with permits, redeliveries
  first (in id order), then new entries from the subscription's read position. The choice of
  consumer is the subscription type's dispatcher (:mod:`brokerlb.dispatch`): Exclusive and
  Failover the active consumer, Shared priority round robin, Key_Shared the consumer owning
  the key's hash. An entry uses as many permits as it holds messages (a batch counts each);
* an entry delivered and not acknowledged is *pending* on its consumer; a negative ack / ack
  timeout (``redeliver``), a consumer leaving, or a change of the Failover active consumer
  puts it back for redelivery; a ``redeliver`` increments its redelivery count, which every
  later delivery carries (Pulsar's ``redelivery_count``);
* **Key_Shared keeps per-key order**: an entry whose consumer has no permits is held and so
  is every later entry of the same key hash; a consumer that joins while others hold older
  entries receives only entries older than the read position at its join until every entry
  before that position is acknowledged (Pulsar's "recently joined consumers" rule);
* acknowledgements: individual (by id, or by batch index through Pulsar's ``ack_set`` bit
  words: set bits = still unacknowledged) and cumulative (Exclusive / Failover only, as in
  Pulsar);
* **backlog quota** (``backlogQuotaDefaultLimitBytes``, -1 = none, and
  ``backlogQuotaDefaultRetentionPolicy``): when the slowest durable subscription's backlog
  exceeds the limit, ``producer_request_hold`` holds new publishes (stored and acknowledged,
  in order, once acknowledgements bring the backlog under the limit), ``producer_exception``
  refuses them (:class:`BacklogQuotaExceeded`), ``consumer_backlog_eviction`` moves the
  slowest cursors forward over the oldest entries;
* readers are non-durable subscriptions that start at a message id (inclusive: the client
  filters the start message itself, as Pulsar's client does), at the earliest retained entry
  or at the end; they go away with their consumer.

**Non-persistent topics** keep Pulsar's non-persistent semantics: at publish time the message
goes to each subscription's chosen consumer if it has a permit, else it is dropped for that
subscription and counted (``msgDropRate``); nothing is retained or redelivered.

A *fenced* topic (a move in progress) ignores publishes (the producer gets no receipt and
re-sends to the next owner) and dispatches nothing.

**Hand-off**: :meth:`Topic.export_state` gives a :class:`TopicState` (entries, ledger, next
id, durable subscriptions' cursors and redelivery counts); :meth:`Topic.from_state` builds
the topic from it on the next owner. What was pending on a consumer is simply unacknowledged
there, so it is redelivered when the consumers reconnect.
"""

from __future__ import annotations

import bisect
import collections
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from brokerlb.dispatch import (
    DispatchConsumer,
    Dispatcher,
    KeySharedDispatcher,
    KeySharedMode,
    Message,
    create_dispatcher,
    sticky_key_hash,
)
from brokerlb.errors import BrokerLBError, ConflictError, ConsumerBusyError, InvalidInputError
from brokerlb.messaging.frames import read_metadata
from brokerlb.messaging.stats import TopicCounters, TopicLoad
from brokerlb.naming import TopicName

__all__ = [
    "BACKLOG_POLICIES",
    "BacklogQuota",
    "BacklogQuotaExceeded",
    "ConsumerSink",
    "Entry",
    "ProducerBusyError",
    "Retention",
    "Subscription",
    "SubscriptionState",
    "Topic",
    "TopicState",
    "EARLIEST",
    "LATEST",
]

#: ``BacklogQuota.RetentionPolicy`` names.
BACKLOG_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")
#: Start positions of a reader or a new subscription (Pulsar's ``MessageId.earliest`` / ``latest``).
EARLIEST = "earliest"
LATEST = "latest"
#: Key_Shared: how many entries may wait for a busy consumer before reading stops.
KEY_SHARED_LOOKAHEAD = 1000
_MAX_LONG = (1 << 63) - 1
_WORD = (1 << 64) - 1


class ProducerBusyError(ConflictError):
    """A producer of that name is already connected to the topic (Pulsar's ``ProducerBusy``)."""


class BacklogQuotaExceeded(BrokerLBError):
    """A publish refused because the backlog quota is exceeded (``producer_exception``)."""

    http_status = 400


@dataclass(frozen=True, slots=True)
class Retention:
    """Keep acknowledged entries for ``time_ms`` and up to ``size_bytes`` (0 = none, -1 = infinite)."""

    time_ms: int = 0
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class BacklogQuota:
    """``limit_bytes`` (-1 = no quota) and the policy applied beyond it (one of :data:`BACKLOG_POLICIES`)."""

    limit_bytes: int = -1
    policy: str = "producer_request_hold"

    def __post_init__(self) -> None:
        if self.policy not in BACKLOG_POLICIES:
            raise InvalidInputError(
                f"Unknown backlog quota policy {self.policy!r}; expected one of {', '.join(BACKLOG_POLICIES)}"
            )


class Entry:
    """One stored publish: the payload section as the producer sent it, and what dispatch needs."""

    __slots__ = ("entry_id", "section", "num_messages", "size", "publish_time", "offset", "_key_hash")

    def __init__(
        self, entry_id: int, section: bytes, num_messages: int, publish_time: int, offset: int
    ) -> None:
        self.entry_id = entry_id
        self.section = section
        self.num_messages = num_messages
        self.size = len(section)
        self.publish_time = publish_time
        #: bytes written to the topic before this entry (backlog and retention sizes are differences)
        self.offset = offset
        self._key_hash: int | None = None

    @property
    def key_hash(self) -> int:
        """The sticky-key hash of the entry (ordering key, else partition key, else ``NONE_KEY``)."""
        if self._key_hash is None:
            try:
                meta = read_metadata(self.section)
                key: str | bytes | None = meta.partition_key
                ordering = meta.ordering_key
            except BrokerLBError:
                key, ordering = None, None
            self._key_hash = sticky_key_hash(Message(key=key, ordering_key=ordering).sticky_key)
        return self._key_hash


class ConsumerSink(Protocol):
    """Where a consumer's entries go; every method must return at once."""

    def deliver(self, entry: Entry, redelivery_count: int, unacked_mask: int | None) -> None:
        """Send ``entry``; ``unacked_mask``: the batch indexes still unacknowledged (``None`` = all)."""

    def active_changed(self, is_active: bool) -> None:
        """Failover / Exclusive: this consumer became (in)active."""


@dataclass(eq=False, slots=True)
class _Attached:
    consumer: DispatchConsumer
    sink: ConsumerSink
    pending: set[int] = field(default_factory=set)


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
    """Everything a topic must keep across a planned move (module docstring)."""

    name: str
    ledger_id: int
    next_entry_id: int
    #: ``(entry_id, payload section, messages in it, publish time ms)``
    entries: list[tuple[int, bytes, int, int]] = field(default_factory=list)
    subscriptions: list[SubscriptionState] = field(default_factory=list)


class Subscription:
    """One subscription: its dispatcher, attached consumers and cursor."""

    def __init__(
        self,
        name: str,
        subscription_type: str,
        *,
        durable: bool,
        partition_index: int,
        start: int,
        key_shared_mode: KeySharedMode = KeySharedMode.AUTO_SPLIT,
    ) -> None:
        self.name = name
        self.type = subscription_type
        self.durable = durable
        self.dispatcher: Dispatcher = create_dispatcher(
            subscription_type, partition_index=partition_index, key_shared_mode=key_shared_mode
        )
        self.attached: dict[int, _Attached] = {}
        #: every entry up to this id is acknowledged
        self.mark_delete = start - 1
        #: next entry to read for a first delivery
        self.read_position = start
        self.acked: set[int] = set()
        self.partial: dict[int, int] = {}
        self.pending: dict[int, int] = {}  # entry id -> consumer id
        self.replay: set[int] = set()
        self.redeliveries: dict[int, int] = {}
        self.recently_joined: dict[int, int] = {}  # Key_Shared: consumer id -> read position at its join
        self.delivered = 0
        self.dropped = 0

    @property
    def consumer_count(self) -> int:
        return len(self.attached)

    @property
    def consumers(self) -> list[DispatchConsumer]:
        return [a.consumer for a in self.attached.values()]

    def is_acked(self, entry_id: int) -> bool:
        return entry_id <= self.mark_delete or entry_id in self.acked

    @property
    def floor(self) -> int:
        """The oldest entry this subscription still needs (a reader: the next one it reads)."""
        if self.durable:
            return self.mark_delete + 1
        return min(self.replay) if self.replay else self.read_position

    def unacked_of(self, consumer: DispatchConsumer) -> int:
        """Entries delivered to ``consumer`` and not acknowledged yet (its ``unackedMessages``)."""
        attached = self.attached.get(consumer.consumer_id)
        return 0 if attached is None else len(attached.pending)

    def active_consumer(self) -> DispatchConsumer | None:
        return getattr(self.dispatcher, "active_consumer", None)

    def state(self) -> SubscriptionState:
        return SubscriptionState(
            self.name,
            self.type,
            self.mark_delete,
            sorted(self.acked),
            dict(self.partial),
            dict(self.redeliveries),
        )


class Topic:
    """One topic (module docstring)."""

    def __init__(
        self,
        name: TopicName | str,
        *,
        ledger_id: int,
        window: int,
        now: Callable[[], float],
        now_ms: Callable[[], int],
        retention: Retention = Retention(),
        backlog_quota: BacklogQuota = BacklogQuota(),
    ) -> None:
        self.name = TopicName.parse(name)
        self.persistent = self.name.domain == "persistent"
        self.partition = self.name.partition_index
        self.ledger_id = ledger_id
        self._now = now
        self._now_ms = now_ms
        self.retention = retention
        self.backlog_quota = backlog_quota
        self.counters = TopicCounters(window, now())
        self.entries: collections.deque[Entry] = collections.deque()
        self.next_entry_id = 0
        self._written = 0  # bytes ever written (entry offsets)
        self.subscriptions: dict[str, Subscription] = {}
        self.producers: dict[str, object] = {}
        self.fenced = False
        #: Asked before every publish: ``False`` ignores it as a fenced topic does (the broker that
        #: serves the topic cannot confirm it still owns it; the producer re-sends after reconnecting).
        self.accepting: Callable[[], bool] = lambda: True
        #: publishes held by ``producer_request_hold``: (section, messages, token)
        self.held: collections.deque[tuple[bytes, int, object]] = collections.deque()
        #: called with (token, entry id) when a held publish is finally stored
        self.on_released: Callable[[object, int], None] = lambda token, entry_id: None
        self.evicted = 0

    # ------------------------------------------------------------------ producers
    def add_producer(self, name: str, producer: object) -> None:
        """Register a producer by name; :class:`ProducerBusyError` if the name is taken."""
        if name in self.producers and self.producers[name] is not producer:
            raise ProducerBusyError(f"Producer with name '{name}' is already connected to topic {self.name}")
        self.producers[name] = producer

    def remove_producer(self, name: str, producer: object) -> None:
        if self.producers.get(name) is producer:
            del self.producers[name]

    @property
    def producer_count(self) -> int:
        return len(self.producers)

    # ------------------------------------------------------------------ the log
    @property
    def first_entry_id(self) -> int:
        return self.entries[0].entry_id if self.entries else self.next_entry_id

    @property
    def last_entry_id(self) -> int:
        """The id of the newest entry (-1 when none was ever written)."""
        return self.next_entry_id - 1

    def entry(self, entry_id: int) -> Entry | None:
        first = self.first_entry_id
        if first <= entry_id < self.next_entry_id:
            return self.entries[entry_id - first]
        return None

    def backlog_bytes(self) -> int:
        """Bytes from the slowest durable subscription's first unacknowledged entry to the end."""
        durable = [s for s in self.subscriptions.values() if s.durable]
        if not durable or not self.entries:
            return 0
        oldest = self.entry(max(min(s.mark_delete for s in durable) + 1, self.first_entry_id))
        return 0 if oldest is None else self._written - oldest.offset

    def quota_exceeded(self) -> bool:
        limit = self.backlog_quota.limit_bytes
        return self.persistent and limit >= 0 and self.backlog_bytes() > limit

    def publish(self, section: bytes, num_messages: int = 1, token: object = None) -> int | None:
        """Store (persistent) or route (non-persistent) one entry; its entry id.

        ``None`` when the topic is fenced (ignored) or the publish is held by the backlog quota
        (``on_released(token, entry_id)`` follows). :class:`BacklogQuotaExceeded` under
        ``producer_exception``.
        """
        if self.fenced or not self.accepting():
            return None
        if self.persistent and (self.held or self.quota_exceeded()):
            policy = self.backlog_quota.policy
            if policy == "consumer_backlog_eviction":
                self._evict()
            elif policy == "producer_exception":
                raise BacklogQuotaExceeded(
                    f"Cannot publish on topic {self.name}: the backlog quota of "
                    f"{self.backlog_quota.limit_bytes} bytes is exceeded (producer_exception)"
                )
            else:
                self.held.append((section, num_messages, token))
                return None
        return self._store(section, num_messages)

    def _store(self, section: bytes, num_messages: int) -> int:
        entry_id = self.next_entry_id
        self.next_entry_id = entry_id + 1
        now = self._now()
        entry = Entry(entry_id, section, max(1, num_messages), self._now_ms(), self._written)
        self._written += entry.size
        self.counters.msg_in.add(now, entry.num_messages, entry.size)
        if not self.persistent:
            self._route_now(entry, now)
            return entry_id
        self.entries.append(entry)
        for sub in self.subscriptions.values():
            if sub.attached:
                self.dispatch(sub)
        self._trim()
        return entry_id

    def _route_now(self, entry: Entry, now: float) -> None:
        """Non-persistent: offer to each subscription's chosen consumer, drop when nobody can take it."""
        for sub in self.subscriptions.values():
            consumer = self._select(sub, entry, None)
            if consumer is None:
                sub.dropped += 1
                self.counters.dropped.add(now, entry.num_messages, entry.size)
                continue
            attached = sub.attached[consumer.consumer_id]
            consumer.permits -= entry.num_messages
            sub.delivered += 1
            self.counters.msg_out.add(now, entry.num_messages, entry.size)
            attached.sink.deliver(entry, 0, None)

    def _trim(self) -> None:
        """Drop entries every subscription is past and the retention policy lets go."""
        if not self.entries:
            return
        floor = min((s.floor for s in self.subscriptions.values()), default=self.next_entry_id)
        keep_ms, keep_bytes = self.retention.time_ms, self.retention.size_bytes
        entries = self.entries
        if entries[0].entry_id >= floor:
            return
        boundary = self.entry(floor)
        below_end = boundary.offset if boundary is not None else self._written
        now_ms = self._now_ms()
        while entries and entries[0].entry_id < floor:
            head = entries[0]
            expired = keep_ms >= 0 and now_ms - head.publish_time >= keep_ms
            oversize = keep_bytes >= 0 and below_end - head.offset > keep_bytes
            if not (expired or oversize):
                break
            entries.popleft()

    def _evict(self) -> None:
        """``consumer_backlog_eviction``: move the slowest cursors forward until the backlog fits."""
        limit = self.backlog_quota.limit_bytes
        while self.entries and self.backlog_bytes() > limit:
            durable = [s for s in self.subscriptions.values() if s.durable]
            slowest = min(s.mark_delete for s in durable)
            moved = 0
            for sub in durable:
                if sub.mark_delete == slowest:
                    moved += self._ack_up_to(sub, slowest + 2)  # the oldest unacknowledged entry
            if not moved:
                return
            self.evicted += 1
            self._trim()

    def _release_held(self) -> None:
        while self.held and not self.quota_exceeded() and not self.fenced:
            section, num_messages, token = self.held.popleft()
            self.on_released(token, self._store(section, num_messages))

    # ------------------------------------------------------------------ subscriptions
    def subscribe(
        self,
        subscription: str,
        subscription_type: str,
        consumer: DispatchConsumer,
        sink: ConsumerSink,
        *,
        durable: bool = True,
        initial_position: str = LATEST,
        start: tuple[int, int] | str | None = None,
        key_shared_mode: KeySharedMode = KeySharedMode.AUTO_SPLIT,
    ) -> Subscription:
        """Attach a consumer (module docstring). ``start`` (readers): ``(ledger, entry)``,
        :data:`EARLIEST` or :data:`LATEST`; a new durable subscription starts at
        ``initial_position``. Raises :class:`~brokerlb.errors.ConsumerBusyError` when the
        type differs or an Exclusive subscription is taken."""
        if not subscription:
            raise InvalidInputError("Empty subscription name")
        sub = self.subscriptions.get(subscription)
        if sub is None:
            position = self._start_position(start if start is not None else initial_position)
            sub = Subscription(
                subscription,
                subscription_type,
                durable=durable and self.persistent,
                partition_index=self.partition,
                start=position,
                key_shared_mode=key_shared_mode,
            )
        elif sub.type != subscription_type:
            raise ConsumerBusyError(
                f"Subscription {subscription} is of type {sub.type}, not {subscription_type}"
            )
        others = bool(sub.attached)
        changed = sub.dispatcher.add_consumer(consumer)  # may raise ConsumerBusyError / ConsumerAssignError
        sub.attached[consumer.consumer_id] = _Attached(consumer, sink)
        self.subscriptions[subscription] = sub
        if (
            sub.type == "Key_Shared"
            and others
            and self.persistent
            and sub.mark_delete + 1 < sub.read_position
        ):
            sub.recently_joined[consumer.consumer_id] = sub.read_position
        if sub.type in ("Failover", "Exclusive"):
            self._active_changed(sub, bool(changed), new=consumer)
        if self.persistent:
            self.dispatch(sub)
        return sub

    def _start_position(self, start: tuple[int, int] | str) -> int:
        if start == EARLIEST:
            return self.first_entry_id
        if start == LATEST or not isinstance(start, tuple):
            return self.next_entry_id
        ledger, entry = start
        if ledger == -1 or ledger < self.ledger_id:
            return self.first_entry_id
        if ledger > self.ledger_id or ledger == _MAX_LONG:
            return self.next_entry_id
        return min(max(entry, self.first_entry_id), self.next_entry_id)

    def detach(self, subscription: str, consumer: DispatchConsumer) -> None:
        """A consumer leaves: what it held is redelivered to the others; a non-durable (or
        non-persistent) subscription goes away with its last consumer."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            return
        attached = sub.attached.pop(consumer.consumer_id, None)
        if attached is None:
            return
        changed = sub.dispatcher.remove_consumer(consumer)
        sub.recently_joined.pop(consumer.consumer_id, None)
        for entry_id in attached.pending:
            if sub.pending.get(entry_id) == consumer.consumer_id:
                del sub.pending[entry_id]
                sub.replay.add(entry_id)
        if not sub.attached and not sub.durable:
            del self.subscriptions[subscription]
            self._trim()
            return
        if sub.type in ("Failover", "Exclusive"):
            self._active_changed(sub, bool(changed), new=None)
        if self.persistent:
            self.dispatch(sub)

    def unsubscribe(self, subscription: str, consumer: DispatchConsumer, force: bool = False) -> None:
        """Delete the subscription; :class:`ConsumerBusyError` while other consumers are attached."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            return
        others = [a for cid, a in sub.attached.items() if cid != consumer.consumer_id]
        if others and not force:
            raise ConsumerBusyError(
                f"Unconnected or shared consumer attempting to unsubscribe from {subscription}: "
                f"{len(others)} other consumers are connected"
            )
        del self.subscriptions[subscription]
        self._trim()
        self._release_held()

    def _active_changed(self, sub: Subscription, changed: bool, new: DispatchConsumer | None) -> None:
        """Failover / Exclusive: tell consumers who is active; on a change what was pending goes back."""
        active = sub.active_consumer()
        if changed:
            for attached in sub.attached.values():
                if attached.consumer is not active:
                    self._take_back(sub, attached, count=False)
            for attached in sub.attached.values():
                attached.sink.active_changed(attached.consumer is active)
        elif new is not None and new.consumer_id in sub.attached:
            sub.attached[new.consumer_id].sink.active_changed(new is active)

    def _take_back(
        self, sub: Subscription, attached: _Attached, *, count: bool, only: Iterable[int] | None = None
    ) -> int:
        ids = list(attached.pending) if only is None else [e for e in only if e in attached.pending]
        for entry_id in ids:
            attached.pending.discard(entry_id)
            if sub.pending.get(entry_id) == attached.consumer.consumer_id:
                del sub.pending[entry_id]
            if not sub.is_acked(entry_id):
                sub.replay.add(entry_id)
                if count:
                    sub.redeliveries[entry_id] = sub.redeliveries.get(entry_id, 0) + 1
        return len(ids)

    # ------------------------------------------------------------------ consumer commands
    def flow(self, subscription: str, consumer: DispatchConsumer, permits: int) -> None:
        """``FLOW``: the consumer may receive ``permits`` more messages."""
        consumer.permits += max(0, permits)
        sub = self.subscriptions.get(subscription)
        if sub is not None and self.persistent:
            self.dispatch(sub)

    def acknowledge(
        self,
        subscription: str,
        consumer: DispatchConsumer,
        acks: Iterable[tuple[int, int, int | None]],
        *,
        cumulative: bool = False,
    ) -> int:
        """``(ledger, entry, unacked batch mask or None)`` acks; returns how many entries became acknowledged.

        A cumulative ack on a Shared or Key_Shared subscription is ignored (Pulsar refuses it).
        """
        sub = self.subscriptions.get(subscription)
        if sub is None or not self.persistent:
            return 0
        done = 0
        if cumulative:
            if sub.type in ("Shared", "Key_Shared"):
                return 0
            for ledger, entry_id, mask in acks:
                if ledger != self.ledger_id:
                    continue
                if mask:
                    done += self._ack_up_to(sub, entry_id)
                    self._ack_partial(sub, entry_id, mask)
                else:
                    done += self._ack_up_to(sub, entry_id + 1)
        else:
            for ledger, entry_id, mask in acks:
                if ledger != self.ledger_id or sub.is_acked(entry_id) or entry_id >= self.next_entry_id:
                    continue
                if mask:
                    if not self._ack_partial(sub, entry_id, mask):
                        continue
                self._ack_one(sub, entry_id)
                done += 1
            self._advance(sub)
        if done:
            if sub.recently_joined:
                floor = sub.mark_delete + 1
                sub.recently_joined = {c: p for c, p in sub.recently_joined.items() if p > floor}
                self.dispatch(sub)
            self._trim()
            if self.held:
                self._release_held()
        return done

    def _ack_partial(self, sub: Subscription, entry_id: int, mask: int) -> bool:
        """Combine a batch's still-unacked mask; True once every index is acknowledged."""
        current = sub.partial.get(entry_id)
        combined = mask if current is None else current & mask
        if combined:
            sub.partial[entry_id] = combined
            return False
        sub.partial.pop(entry_id, None)
        return True

    def _ack_one(self, sub: Subscription, entry_id: int) -> None:
        holder = sub.pending.pop(entry_id, None)
        if holder is not None:
            attached = sub.attached.get(holder)
            if attached is not None:
                attached.pending.discard(entry_id)
        sub.replay.discard(entry_id)
        sub.redeliveries.pop(entry_id, None)
        sub.partial.pop(entry_id, None)
        sub.acked.add(entry_id)

    def _advance(self, sub: Subscription) -> None:
        acked = sub.acked
        mark = sub.mark_delete
        while mark + 1 in acked:
            mark += 1
            acked.discard(mark)
        sub.mark_delete = mark

    def _ack_up_to(self, sub: Subscription, end: int) -> int:
        """Acknowledge every entry before ``end``; returns how many were not acknowledged yet."""
        end = min(end, self.next_entry_id)
        if end - 1 <= sub.mark_delete:
            return 0
        done = end - 1 - sub.mark_delete - sum(1 for e in sub.acked if e < end)
        sub.mark_delete = end - 1
        sub.acked = {e for e in sub.acked if e >= end}
        for entry_id in [e for e in sub.pending if e < end]:
            holder = sub.pending.pop(entry_id)
            attached = sub.attached.get(holder)
            if attached is not None:
                attached.pending.discard(entry_id)
        sub.replay = {e for e in sub.replay if e >= end}
        sub.redeliveries = {e: c for e, c in sub.redeliveries.items() if e >= end}
        sub.partial = {e: m for e, m in sub.partial.items() if e >= end}
        if sub.read_position < end:
            sub.read_position = end
        self._advance(sub)
        return done

    def redeliver(
        self, subscription: str, consumer: DispatchConsumer, entry_ids: Iterable[int] | None = None
    ) -> int:
        """``REDELIVER_UNACKNOWLEDGED_MESSAGES``: the consumer's pending entries (those listed, or all;
        Exclusive / Failover always all, as Pulsar rewinds their cursor) go back for redelivery with
        their redelivery count incremented. Returns how many."""
        sub = self.subscriptions.get(subscription)
        attached = sub.attached.get(consumer.consumer_id) if sub is not None else None
        if sub is None or attached is None or not self.persistent:
            return 0
        only = None if entry_ids is None or sub.type in ("Exclusive", "Failover") else list(entry_ids)
        taken = self._take_back(sub, attached, count=True, only=only)
        self.dispatch(sub)
        return taken

    def seek(
        self,
        subscription: str,
        start: tuple[int, int] | str | None = None,
        *,
        publish_time: int | None = None,
    ) -> None:
        """Reset the cursor to a message id (the next delivery is that entry) or to the first entry
        published at or after ``publish_time`` (ms); pending and individual acks are forgotten."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            raise InvalidInputError(f"Subscription {subscription} does not exist on {self.name}")
        if publish_time is not None:
            times = [e.publish_time for e in self.entries]
            position = self.first_entry_id + bisect.bisect_left(times, publish_time)
        else:
            position = self._start_position(start if start is not None else EARLIEST)
        sub.mark_delete = position - 1
        sub.read_position = position
        sub.acked.clear()
        sub.partial.clear()
        sub.pending.clear()
        sub.replay.clear()
        sub.redeliveries.clear()
        for attached in sub.attached.values():
            attached.pending.clear()

    # ------------------------------------------------------------------ dispatch
    def _select(self, sub: Subscription, entry: Entry, blocked: set[int] | None) -> DispatchConsumer | None:
        dispatcher = sub.dispatcher
        if isinstance(dispatcher, KeySharedDispatcher):
            key_hash = entry.key_hash
            if blocked is not None and key_hash in blocked:
                return None
            owner = dispatcher.selector.select(key_hash)
            if owner is None or not owner.available:
                return None
            joined = sub.recently_joined.get(owner.consumer_id)
            if joined is not None and entry.entry_id >= joined:
                return None
            return owner
        return dispatcher.select(_ANY)

    def dispatch(self, sub: Subscription) -> None:
        """Send what this subscription can send now (module docstring)."""
        if self.fenced or not sub.attached:
            return
        key_shared = sub.type == "Key_Shared"
        blocked: set[int] | None = set() if key_shared else None
        if sub.replay:
            for entry_id in sorted(sub.replay):
                entry = self.entry(entry_id)
                if entry is None or sub.is_acked(entry_id):
                    sub.replay.discard(entry_id)
                    continue
                consumer = self._select(sub, entry, blocked)
                if consumer is None:
                    if blocked is None:
                        return
                    blocked.add(entry.key_hash)
                    continue
                sub.replay.discard(entry_id)
                self._send(sub, consumer, entry)
        first = self.first_entry_id
        if sub.read_position < first:
            sub.read_position = first
        entries = self.entries
        while sub.read_position < self.next_entry_id:
            entry_id = sub.read_position
            if entry_id in sub.pending or entry_id in sub.replay or sub.is_acked(entry_id):
                sub.read_position = entry_id + 1
                continue
            entry = entries[entry_id - first]
            consumer = self._select(sub, entry, blocked)
            if consumer is None:
                if blocked is None or len(sub.replay) >= KEY_SHARED_LOOKAHEAD:
                    return
                blocked.add(entry.key_hash)
                sub.replay.add(entry_id)
                sub.read_position = entry_id + 1
                continue
            sub.read_position = entry_id + 1
            self._send(sub, consumer, entry)

    def _send(self, sub: Subscription, consumer: DispatchConsumer, entry: Entry) -> None:
        attached = sub.attached[consumer.consumer_id]
        entry_id = entry.entry_id
        sub.pending[entry_id] = consumer.consumer_id
        attached.pending.add(entry_id)
        consumer.permits -= entry.num_messages
        sub.delivered += 1
        self.counters.msg_out.add(self._now(), entry.num_messages, entry.size)
        attached.sink.deliver(entry, sub.redeliveries.get(entry_id, 0), sub.partial.get(entry_id))

    # ------------------------------------------------------------------ reading
    @property
    def consumer_count(self) -> int:
        return sum(s.consumer_count for s in self.subscriptions.values())

    @property
    def idle(self) -> bool:
        """Nothing to keep: no producer, no consumer, no durable subscription, no retained entry."""
        return (
            not self.producers
            and not self.entries
            and not self.held
            and not any(s.attached or s.durable for s in self.subscriptions.values())
        )

    def load(self) -> TopicLoad:
        return self.counters.load(self._now(), self.producer_count, self.consumer_count)

    def backlog(self, subscription: str) -> int:
        """Entries of ``subscription`` not acknowledged yet."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            return 0
        start = max(sub.mark_delete + 1, self.first_entry_id)
        return max(0, self.next_entry_id - start - sum(1 for e in sub.acked if e >= start))

    # ------------------------------------------------------------------ hand-off
    def export_state(self) -> TopicState:
        """The state the next owner needs (durable subscriptions only; readers re-subscribe by id)."""
        return TopicState(
            str(self.name),
            self.ledger_id,
            self.next_entry_id,
            [(e.entry_id, e.section, e.num_messages, e.publish_time) for e in self.entries],
            [s.state() for s in self.subscriptions.values() if s.durable],
        )

    @classmethod
    def from_state(
        cls,
        state: TopicState,
        *,
        window: int,
        now: Callable[[], float],
        now_ms: Callable[[], int],
        retention: Retention = Retention(),
        backlog_quota: BacklogQuota = BacklogQuota(),
    ) -> Topic:
        topic = cls(
            state.name,
            ledger_id=state.ledger_id,
            window=window,
            now=now,
            now_ms=now_ms,
            retention=retention,
            backlog_quota=backlog_quota,
        )
        offset = 0
        last = -1
        for entry_id, section, num_messages, publish_time in state.entries:
            if entry_id <= last or entry_id >= state.next_entry_id:
                raise InvalidInputError(
                    f"Topic state of {state.name}: entry ids must increase below next_entry_id"
                )
            if last >= 0 and entry_id != last + 1:
                raise InvalidInputError(f"Topic state of {state.name}: entry ids must be consecutive")
            topic.entries.append(Entry(entry_id, section, num_messages, publish_time, offset))
            offset += len(section)
            last = entry_id
        topic._written = offset
        topic.next_entry_id = state.next_entry_id
        for s in state.subscriptions:
            sub = Subscription(
                s.name, s.type, durable=True, partition_index=topic.partition, start=s.mark_delete + 1
            )
            sub.acked = {e for e in s.acked if e > s.mark_delete}
            sub.partial = dict(s.partial)
            sub.redeliveries = dict(s.redeliveries)
            topic.subscriptions[s.name] = sub
        return topic


#: Shared / Failover / Exclusive dispatchers do not look at the message.
_ANY = Message()
