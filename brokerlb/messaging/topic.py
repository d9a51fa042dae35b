"""The topic engine: a topic's retained entries, its subscriptions' cursors and their dispatch.

One engine serves both data paths (Pulsar's binary protocol and its WebSocket API). It does
no I/O: the shells hand it payload sections and permits and give each consumer a *sink*
whose ``deliver`` must return at once (it queues a frame for the connection's writer).
Times come from the functions passed in, so tests drive them.

**Entries.** Each publish is one entry (a single message or a producer's batch, kept as
the payload section the producer sent) in the topic's *log* (:mod:`brokerlb.messaging.log`):
a managed ledger on the storage tier for a persistent topic of a broker with storage, else one
ledger in memory. The engine counts entries in the log's dense sequence numbers; clients see
Pulsar's ``(ledger id, entry id)``, which the log maps to and from. A publish is acknowledged
(``on_stored``) only once the log has committed it; dispatch sends only committed entries,
reading back from storage what is not at hand.

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

A *fenced* topic (a move in progress, or its log fenced by another owner) ignores publishes
(the producer gets no receipt and re-sends to the next owner) and dispatches nothing.

**Durable cursors** are persisted by the log (lazily: :meth:`TopicLog.cursor_changed`); a topic
opened again -- on the next owner, or after a restart -- gets them back through
:meth:`Topic.restore_subscription`. What was pending on a consumer is simply unacknowledged
there, so it is redelivered when the consumers reconnect.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from brokerlb.dispatch import (
    DispatchConsumer,
    Dispatcher,
    KeySharedDispatcher,
    KeySharedMode,
    Message,
    create_dispatcher,
)
from brokerlb.errors import BrokerLBError, ConflictError, ConsumerBusyError, InvalidInputError
from brokerlb.messaging.log import Entry, MemoryLog, Retention, TopicLog
from brokerlb.messaging.stats import TopicCounters, TopicLoad
from brokerlb.mledger.cursor import CursorState
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
    "Topic",
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
#: Entries read from storage at once for a subscription (Pulsar's ``dispatcherMaxReadBatchSize``).
READ_BATCH = 100
_MAX_LONG = (1 << 63) - 1
#: Acknowledged entries are not kept (Pulsar's default retention).
NO_RETENTION = Retention()


class ProducerBusyError(ConflictError):
    """A producer of that name is already connected to the topic (Pulsar's ``ProducerBusy``)."""


class BacklogQuotaExceeded(BrokerLBError):
    """A publish refused because the backlog quota is exceeded (``producer_exception``)."""

    http_status = 400


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
        #: every entry up to this sequence number is acknowledged
        self.mark_delete = start - 1
        #: next entry to read for a first delivery
        self.read_position = start
        self.acked: set[int] = set()
        self.partial: dict[int, int] = {}
        self.pending: dict[int, int] = {}  # entry seq -> consumer id
        self.replay: set[int] = set()
        self.redeliveries: dict[int, int] = {}
        self.recently_joined: dict[int, int] = {}  # Key_Shared: consumer id -> read position at its join
        self.delivered = 0
        self.dropped = 0
        #: a read from storage is under way for this subscription
        self.reading = False

    @property
    def consumer_count(self) -> int:
        return len(self.attached)

    @property
    def consumers(self) -> list[DispatchConsumer]:
        return [a.consumer for a in self.attached.values()]

    def is_acked(self, seq: int) -> bool:
        return seq <= self.mark_delete or seq in self.acked

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

    def cursor(self) -> CursorState:
        """The cursor as the log persists it."""
        return CursorState(
            self.mark_delete, frozenset(self.acked), dict(self.partial), dict(self.redeliveries)
        )


class Topic:
    """One topic (module docstring)."""

    def __init__(
        self,
        name: TopicName | str,
        *,
        ledger_id: int = 0,
        window: int,
        now: Callable[[], float],
        now_ms: Callable[[], int],
        retention: Retention = NO_RETENTION,
        backlog_quota: BacklogQuota = BacklogQuota(),
        log: TopicLog | None = None,
    ) -> None:
        self.name = TopicName.parse(name)
        self.persistent = self.name.domain == "persistent"
        self.partition = self.name.partition_index
        self._now = now
        self._now_ms = now_ms
        self.backlog_quota = backlog_quota
        self.counters = TopicCounters(window, now())
        self.log: TopicLog = log if log is not None else MemoryLog(ledger_id, retention, now_ms)
        self.log.listener = self
        self.subscriptions: dict[str, Subscription] = {}
        self.producers: dict[str, object] = {}
        self.fenced = False
        #: Asked before every publish: ``False`` ignores it as a fenced topic does (the broker that
        #: serves the topic cannot confirm it still owns it; the producer re-sends after reconnecting).
        self.accepting: Callable[[], bool] = lambda: True
        #: publishes held by ``producer_request_hold``: (section, messages, token)
        self.held: list[tuple[bytes, int, object]] = []
        #: called with (token, ledger id, entry id) when a publish is committed after ``publish`` returned
        self.on_stored: Callable[[object, int, int], None] = lambda token, ledger, entry: None
        #: called when the log can take no more appends (fenced by another owner, storage failed)
        self.on_failed: Callable[[BrokerLBError], None] = lambda error: None
        self.evicted = 0
        self._publishing = False
        self._stored_now: int | None = None
        #: entries read from storage for the dispatch under way
        self._fetched: dict[int, Entry] = {}

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
        """The oldest entry kept (a sequence number)."""
        return self.log.first_seq

    @property
    def next_entry_id(self) -> int:
        """The sequence number the next committed entry gets."""
        return self.log.next_seq

    @property
    def last_entry_id(self) -> int:
        """The sequence number of the newest entry (-1 when none was ever written)."""
        return self.log.next_seq - 1

    def entry(self, seq: int) -> Entry | None:
        """The entry if it is at hand (in memory, cached, or just read for dispatch)."""
        return self._fetched.get(seq) or self.log.entry(seq)

    def position_of(self, seq: int) -> tuple[int, int]:
        """Pulsar's ``(ledger id, entry id)`` of an entry."""
        return self.log.position_of(seq)

    def backlog_bytes(self) -> int:
        """Bytes from the slowest durable subscription's first unacknowledged entry to the end."""
        durable = [s for s in self.subscriptions.values() if s.durable]
        log = self.log
        if not durable or log.next_seq == log.first_seq:
            return 0
        oldest = max(min(s.mark_delete for s in durable) + 1, log.first_seq)
        if oldest >= log.next_seq:
            return 0
        return log.written - log.offset_of(oldest)

    def quota_exceeded(self) -> bool:
        limit = self.backlog_quota.limit_bytes
        return self.persistent and limit >= 0 and self.backlog_bytes() > limit

    def publish(self, section: bytes, num_messages: int = 1, token: object = None) -> int | None:
        """Store (persistent) or route (non-persistent) one entry.

        Returns the entry's sequence number when it is committed at once (a non-persistent topic,
        an in-memory log); ``None`` when it is ignored (a fenced topic), held by the backlog quota,
        or being committed -- ``on_stored(token, ledger id, entry id)`` follows once it is.
        :class:`BacklogQuotaExceeded` under ``producer_exception``.
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
        return self._store(section, num_messages, token)

    def _store(self, section: bytes, num_messages: int, token: object) -> int | None:
        num_messages = max(1, num_messages)
        if not self.persistent:
            seq = self.log.next_seq
            entry = Entry(seq, section, num_messages, self._now_ms(), self.log.written)
            self._nonpersistent_next(entry)
            return seq
        self._publishing, self._stored_now = True, None
        try:
            self.log.append(section, num_messages, self._now_ms(), token)
        finally:
            self._publishing = False
        return self._stored_now

    def _nonpersistent_next(self, entry: Entry) -> None:
        log = self.log
        assert isinstance(log, MemoryLog)
        log._next += 1  # ids of routed messages grow; nothing is kept
        log._written += entry.size
        now = self._now()
        self.counters.msg_in.add(now, entry.num_messages, entry.size)
        entry.ledger_id = log.ledger_id
        self._route_now(entry, now)

    # ------------------------------------------------------------------ the log's callbacks
    def added(self, entries: Sequence[Entry], tokens: Sequence[object]) -> None:
        """The log committed ``entries``: count them, acknowledge their producers, dispatch them."""
        now = self._now()
        for entry, token in zip(entries, tokens, strict=True):
            self.counters.msg_in.add(now, entry.num_messages, entry.size)
            if self._publishing:
                self._stored_now = entry.seq
            elif token is not None:
                self.on_stored(token, entry.ledger_id, entry.entry_id)
        if self.fenced:
            return
        for sub in self.subscriptions.values():
            if sub.attached:
                self.dispatch(sub)
        self._trim()

    def failed(self, error: BrokerLBError) -> None:
        """The log can take no more appends: stop, and let the shell close the topic."""
        self.fenced = True
        self.held.clear()
        self.on_failed(error)

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

    def _floor(self) -> int:
        return min((s.floor for s in self.subscriptions.values()), default=self.log.next_seq)

    def _trim(self) -> None:
        """Let the log drop what every subscription is past and retention lets go."""
        if self.persistent:
            self.log.trim(self._floor())

    def _evict(self) -> None:
        """``consumer_backlog_eviction``: move the slowest cursors forward until the backlog fits."""
        limit = self.backlog_quota.limit_bytes
        while self.log.next_seq > self.log.first_seq and self.backlog_bytes() > limit:
            durable = [s for s in self.subscriptions.values() if s.durable]
            slowest = min(s.mark_delete for s in durable)
            moved = 0
            for sub in durable:
                if sub.mark_delete == slowest:
                    moved += self._ack_up_to(sub, slowest + 2)  # the oldest unacknowledged entry
                    self.log.cursor_changed(sub.name)
            if not moved:
                return
            self.evicted += 1
            self._trim()

    def _release_held(self) -> None:
        while self.held and not self.quota_exceeded() and not self.fenced:
            section, num_messages, token = self.held.pop(0)
            seq = self._store(section, num_messages, token)
            if seq is not None and token is not None:
                self.on_stored(token, *self.log.position_of(seq))

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
        created = sub is None
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
        if created and sub.durable:
            self.log.cursor_changed(subscription)
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

    def restore_subscription(self, name: str, subscription_type: str, cursor: CursorState) -> Subscription:
        """A durable subscription as the log kept it (the topic opened again, here or elsewhere)."""
        sub = Subscription(
            name,
            subscription_type,
            durable=True,
            partition_index=self.partition,
            start=cursor.mark_delete + 1,
        )
        sub.acked = {s for s in cursor.acked if s > cursor.mark_delete}
        sub.partial = dict(cursor.partial)
        sub.redeliveries = dict(cursor.redeliveries)
        self.subscriptions[name] = sub
        return sub

    def _start_position(self, start: tuple[int, int] | str) -> int:
        log = self.log
        if start == EARLIEST:
            return log.first_seq
        if start == LATEST or not isinstance(start, tuple):
            return log.next_seq
        ledger, entry = start
        if ledger == _MAX_LONG:
            return log.next_seq
        return log.seq_at_or_after(ledger, entry)

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
        for seq in attached.pending:
            if sub.pending.get(seq) == consumer.consumer_id:
                del sub.pending[seq]
                sub.replay.add(seq)
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
        if sub.durable:
            self.log.cursor_removed(subscription)
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
        for seq in ids:
            attached.pending.discard(seq)
            if sub.pending.get(seq) == attached.consumer.consumer_id:
                del sub.pending[seq]
            if not sub.is_acked(seq):
                sub.replay.add(seq)
                if count:
                    sub.redeliveries[seq] = sub.redeliveries.get(seq, 0) + 1
        if count and ids and sub.durable:
            self.log.cursor_changed(sub.name)
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
        if sub is None or not self.persistent or self.fenced:
            return 0
        done = 0
        seq_of = self.log.seq_of
        if cumulative:
            if sub.type in ("Shared", "Key_Shared"):
                return 0
            for ledger, entry_id, mask in acks:
                seq = seq_of(ledger, entry_id)
                if seq is None:
                    continue
                if mask:
                    done += self._ack_up_to(sub, seq)
                    self._ack_partial(sub, seq, mask)
                else:
                    done += self._ack_up_to(sub, seq + 1)
        else:
            end = self.log.next_seq
            for ledger, entry_id, mask in acks:
                seq = seq_of(ledger, entry_id)
                if seq is None or seq >= end or sub.is_acked(seq):
                    continue
                if mask:
                    if not self._ack_partial(sub, seq, mask):
                        continue
                self._ack_one(sub, seq)
                done += 1
            self._advance(sub)
        if done or (cumulative is False and sub.partial):
            self.log.cursor_changed(sub.name)
        if done:
            if sub.recently_joined:
                floor = sub.mark_delete + 1
                sub.recently_joined = {c: p for c, p in sub.recently_joined.items() if p > floor}
                self.dispatch(sub)
            self._trim()
            if self.held:
                self._release_held()
        return done

    def _ack_partial(self, sub: Subscription, seq: int, mask: int) -> bool:
        """Combine a batch's still-unacked mask; True once every index is acknowledged."""
        current = sub.partial.get(seq)
        combined = mask if current is None else current & mask
        if combined:
            sub.partial[seq] = combined
            return False
        sub.partial.pop(seq, None)
        return True

    def _ack_one(self, sub: Subscription, seq: int) -> None:
        holder = sub.pending.pop(seq, None)
        if holder is not None:
            attached = sub.attached.get(holder)
            if attached is not None:
                attached.pending.discard(seq)
        sub.replay.discard(seq)
        sub.redeliveries.pop(seq, None)
        sub.partial.pop(seq, None)
        sub.acked.add(seq)

    def _advance(self, sub: Subscription) -> None:
        acked = sub.acked
        mark = sub.mark_delete
        while mark + 1 in acked:
            mark += 1
            acked.discard(mark)
        sub.mark_delete = mark

    def _ack_up_to(self, sub: Subscription, end: int) -> int:
        """Acknowledge every entry before ``end``; returns how many were not acknowledged yet."""
        end = min(end, self.log.next_seq)
        if end - 1 <= sub.mark_delete:
            return 0
        done = end - 1 - sub.mark_delete - sum(1 for e in sub.acked if e < end)
        sub.mark_delete = end - 1
        sub.acked = {e for e in sub.acked if e >= end}
        for seq in [e for e in sub.pending if e < end]:
            holder = sub.pending.pop(seq)
            attached = sub.attached.get(holder)
            if attached is not None:
                attached.pending.discard(seq)
        sub.replay = {e for e in sub.replay if e >= end}
        sub.redeliveries = {e: c for e, c in sub.redeliveries.items() if e >= end}
        sub.partial = {e: m for e, m in sub.partial.items() if e >= end}
        if sub.read_position < end:
            sub.read_position = end
        self._advance(sub)
        return done

    def redeliver(
        self,
        subscription: str,
        consumer: DispatchConsumer,
        entry_ids: Iterable[tuple[int, int]] | None = None,
    ) -> int:
        """``REDELIVER_UNACKNOWLEDGED_MESSAGES``: the consumer's pending entries (those listed by
        ``(ledger, entry)``, or all; Exclusive / Failover always all, as Pulsar rewinds their
        cursor) go back for redelivery with their redelivery count incremented. Returns how many."""
        sub = self.subscriptions.get(subscription)
        attached = sub.attached.get(consumer.consumer_id) if sub is not None else None
        if sub is None or attached is None or not self.persistent:
            return 0
        only = None
        if entry_ids is not None and sub.type not in ("Exclusive", "Failover"):
            only = [s for ledger, entry in entry_ids if (s := self.log.seq_of(ledger, entry)) is not None]
        taken = self._take_back(sub, attached, count=True, only=only)
        self.dispatch(sub)
        return taken

    def seek(
        self,
        subscription: str,
        start: tuple[int, int] | str | None = None,
        *,
        publish_time: int | None = None,
        seq: int | None = None,
    ) -> None:
        """Reset the cursor to a message id (the next delivery is that entry), to a sequence number
        or to the first entry published at or after ``publish_time`` (ms; an in-memory log only --
        a managed ledger finds the position in storage first); pending and individual acks are
        forgotten."""
        sub = self.subscriptions.get(subscription)
        if sub is None:
            raise InvalidInputError(f"Subscription {subscription} does not exist on {self.name}")
        if seq is not None:
            position = min(max(seq, self.log.first_seq), self.log.next_seq)
        elif publish_time is not None:
            log = self.log
            if not isinstance(log, MemoryLog):
                raise InvalidInputError(
                    "Seek by publish time on a stored topic needs the position from storage"
                )
            position = log.publish_time_seq(publish_time)
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
        if sub.durable:
            self.log.cursor_changed(sub.name)

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
            if joined is not None and entry.seq >= joined:
                return None
            return owner
        return dispatcher.select(_ANY)

    def _fetch(self, sub: Subscription, seq: int) -> None:
        """Read entries from ``seq`` on from storage for ``sub``; dispatch goes on when they are here."""
        if sub.reading:
            return
        sub.reading = True
        last = min(seq + READ_BATCH, self.log.next_seq) - 1
        name = sub.name

        def done(result: Sequence[Entry] | BaseException) -> None:
            current = self.subscriptions.get(name)
            if current is not sub:
                return
            sub.reading = False
            if isinstance(result, BaseException) or not result:
                return  # the log retries reads itself; nothing to send (deleted meanwhile)
            fetched = self._fetched
            for entry in result:
                fetched[entry.seq] = entry
            try:
                self.dispatch(sub)
            finally:
                for entry in result:
                    fetched.pop(entry.seq, None)

        self.log.read(seq, last, done)

    def dispatch(self, sub: Subscription) -> None:
        """Send what this subscription can send now (module docstring)."""
        if self.fenced or not sub.attached or sub.reading:
            return
        key_shared = sub.type == "Key_Shared"
        blocked: set[int] | None = set() if key_shared else None
        log = self.log
        if sub.replay:
            for seq in sorted(sub.replay):
                if sub.is_acked(seq) or seq < log.first_seq:
                    sub.replay.discard(seq)
                    continue
                entry = self.entry(seq)
                if entry is None:
                    self._fetch(sub, seq)
                    return
                consumer = self._select(sub, entry, blocked)
                if consumer is None:
                    if blocked is None:
                        return
                    blocked.add(entry.key_hash)
                    continue
                sub.replay.discard(seq)
                self._send(sub, consumer, entry)
        first = log.first_seq
        if sub.read_position < first:
            sub.read_position = first
        end = log.next_seq
        while sub.read_position < end:
            seq = sub.read_position
            if seq in sub.pending or seq in sub.replay or sub.is_acked(seq):
                sub.read_position = seq + 1
                continue
            if not key_shared and not any(a.consumer.available for a in sub.attached.values()):
                return  # nobody can take an entry now: do not read it
            entry = self.entry(seq)
            if entry is None:
                self._fetch(sub, seq)
                return
            consumer = self._select(sub, entry, blocked)
            if consumer is None:
                if blocked is None or len(sub.replay) >= KEY_SHARED_LOOKAHEAD:
                    return
                blocked.add(entry.key_hash)
                sub.replay.add(seq)
                sub.read_position = seq + 1
                continue
            sub.read_position = seq + 1
            self._send(sub, consumer, entry)

    def _send(self, sub: Subscription, consumer: DispatchConsumer, entry: Entry) -> None:
        attached = sub.attached[consumer.consumer_id]
        seq = entry.seq
        sub.pending[seq] = consumer.consumer_id
        attached.pending.add(seq)
        consumer.permits -= entry.num_messages
        sub.delivered += 1
        self.counters.msg_out.add(self._now(), entry.num_messages, entry.size)
        attached.sink.deliver(entry, sub.redeliveries.get(seq, 0), sub.partial.get(seq))

    # ------------------------------------------------------------------ reading
    @property
    def consumer_count(self) -> int:
        return sum(s.consumer_count for s in self.subscriptions.values())

    @property
    def idle(self) -> bool:
        """Nothing to keep: no producer, no consumer, no durable subscription, no retained entry."""
        return (
            not self.producers
            and self.log.next_seq == self.log.first_seq
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
        start = max(sub.mark_delete + 1, self.log.first_seq)
        return max(0, self.log.next_seq - start - sum(1 for e in sub.acked if e >= start))


#: Shared / Failover / Exclusive dispatchers do not look at the message.
_ANY = Message()
