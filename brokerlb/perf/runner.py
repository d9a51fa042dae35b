"""Perf runs over the data path: ``pulsar-perf produce`` / ``consume`` with skew and move accounting.

:class:`ProduceRun` creates one producer per topic, sends at the target total rate with
the topic and key skew of :mod:`brokerlb.perf.workload`, and accounts for every send:
``sent == acked + errored`` once the run has ended (the producers are flushed, then
closed, which fails whatever is left -- nothing is lost silently). It measures the
publish latency (queued → acked) and the publish pauses (:mod:`brokerlb.perf.pauses`),
and counts reconnects, lookups and the brokers' close reasons.

:class:`ConsumeRun` subscribes to the same topics and measures the receive rate and
the end-to-end latency (``publishTime`` → received, same host clock).

Both expose :meth:`snapshot` for a live view (the rates since the previous snapshot)
and return a summary with ``to_json()``.
"""

from __future__ import annotations

import asyncio
import collections
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from brokerlb.client import Client, Consumer, Producer
from brokerlb.errors import BrokerLBError, InvalidInputError
from brokerlb.perf.binary import BinaryClient, is_binary_url
from brokerlb.perf.histogram import LatencyHistogram
from brokerlb.perf.pauses import Pause, PauseTracker
from brokerlb.perf.workload import Pacer, Picker, topic_names

__all__ = [
    "ProduceOptions",
    "ConsumeOptions",
    "ProduceRun",
    "ConsumeRun",
    "Interval",
    "ProduceSummary",
    "ConsumeSummary",
]

#: Producers / consumers created at once when a run starts.
CONNECT_CONCURRENCY = 32
#: Sends handed out per pacing step at most, and how often a burst yields to the event loop.
SEND_BURST = 1000
YIELD_EVERY = 32


@dataclass
class ProduceOptions:
    """``brokerlb perf produce`` settings (``pulsar-perf produce`` names in the CLI)."""

    service_url: str
    topic: str
    num_topics: int = 1
    rate: float = 100.0
    size: int = 1024
    duration: float = 0.0
    topic_skew: str = "uniform"
    topic_zipf: float = 1.0
    key_skew: str = "none"
    num_keys: int = 1000
    key_zipf: float = 1.0
    max_pending: int = 1000
    send_timeout: float = 30.0
    seed: int | None = None
    pause_keep_above: float = 0.05
    #: ``pulsar-perf produce --num-messages``: stop after this many sends (0 = no limit).
    num_messages: int = 0

    def check(self) -> None:
        if self.size < 0:
            raise InvalidInputError(f"--size must be >= 0, got {self.size}")
        if self.duration < 0:
            raise InvalidInputError(f"--test-duration must be >= 0 (0 = until stopped), got {self.duration}")
        if self.num_messages < 0:
            raise InvalidInputError(f"--num-messages must be >= 0 (0 = no limit), got {self.num_messages}")
        if self.key_skew not in ("none", "uniform", "zipf"):
            raise InvalidInputError(f"--key-skew must be none, uniform or zipf, got {self.key_skew!r}")
        if self.num_keys < 1:
            raise InvalidInputError(f"--num-keys must be >= 1, got {self.num_keys}")


@dataclass
class ConsumeOptions:
    service_url: str
    topic: str
    num_topics: int = 1
    subscription: str = "sub"
    subscription_type: str = "Exclusive"
    receiver_queue_size: int = 1000
    duration: float = 0.0
    #: ``pulsar-perf consume --num-messages``: stop after receiving this many (0 = no limit).
    num_messages: int = 0

    def check(self) -> None:
        if self.duration < 0:
            raise InvalidInputError(f"--test-duration must be >= 0 (0 = until stopped), got {self.duration}")
        if self.num_messages < 0:
            raise InvalidInputError(f"--num-messages must be >= 0 (0 = no limit), got {self.num_messages}")


@dataclass(frozen=True)
class Interval:
    """Rates over the last snapshot interval, and the run's state now (for the live view)."""

    seconds: float
    msgs: int
    bytes: int
    errors: int
    latency_ms: dict[str, float]
    outstanding: int
    reconnects: int
    longest_pause_ms: float

    @property
    def rate(self) -> float:
        return self.msgs / self.seconds if self.seconds > 0 else 0.0

    @property
    def mbytes_per_s(self) -> float:
        return self.bytes / self.seconds / 1e6 if self.seconds > 0 else 0.0


@dataclass
class ProduceSummary:
    topics: int
    seconds: float
    sent: int
    acked: int
    errored: int
    errors: dict[str, int]
    latency_ms: dict[str, float]
    reconnects: int
    lookups: int
    direct_reconnects: int
    closes: dict[str, int]
    longest_pause: Pause
    pauses: list[Pause] = field(default_factory=list, repr=False)
    #: Every close a producer saw: ``(topic, monotonic time, reason)``.
    close_events: list[tuple[str, float, str]] = field(default_factory=list, repr=False)

    @property
    def unaccounted(self) -> int:
        """Sends that ended in neither an ack nor an error: must be 0."""
        return self.sent - self.acked - self.errored

    @property
    def rate(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "topics": self.topics,
            "seconds": round(self.seconds, 3),
            "sent": self.sent,
            "acked": self.acked,
            "errored": self.errored,
            "unaccounted": self.unaccounted,
            "errors": self.errors,
            "rate": round(self.rate, 1),
            "latencyMs": {k: round(v, 3) for k, v in self.latency_ms.items()},
            "reconnects": self.reconnects,
            "lookups": self.lookups,
            "directReconnects": self.direct_reconnects,
            "closes": self.closes,
            "longestPauseMs": round(self.longest_pause.seconds * 1e3, 1),
            "longestPauseTopic": self.longest_pause.topic,
        }


@dataclass
class ConsumeSummary:
    topics: int
    seconds: float
    received: int
    bytes: int
    latency_ms: dict[str, float]
    reconnects: int
    closes: dict[str, int]

    @property
    def rate(self) -> float:
        return self.received / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "topics": self.topics,
            "seconds": round(self.seconds, 3),
            "received": self.received,
            "bytes": self.bytes,
            "rate": round(self.rate, 1),
            "endToEndLatencyMs": {k: round(v, 3) for k, v in self.latency_ms.items()},
            "reconnects": self.reconnects,
            "closes": self.closes,
        }


async def _bounded(coros: list[Any], limit: int) -> list[Any]:
    gate = asyncio.Semaphore(limit)

    async def one(coro: Any) -> Any:
        async with gate:
            return await coro

    return list(await asyncio.gather(*(one(c) for c in coros)))


class _Window:
    """Counts since the last snapshot."""

    def __init__(self, now: float) -> None:
        self.reset(now)

    def reset(self, now: float) -> None:
        self.start = now
        self.msgs = 0
        self.bytes = 0
        self.errors = 0
        self.latency = LatencyHistogram()


class ProduceRun:
    """One ``perf produce`` run (module docstring)."""

    def __init__(
        self,
        options: ProduceOptions,
        *,
        client: Client | BinaryClient | None = None,
        topics: list[str] | None = None,
        weights: list[float] | None = None,
    ) -> None:
        """``topics`` / ``weights`` replace the named topics and the skew (the demo sets its own)."""
        options.check()
        self.options = options
        self.topics = list(topics) if topics is not None else topic_names(options.topic, options.num_topics)
        self._own_client = client is None
        self.client = client or perf_client(
            options.service_url, operation_timeout=max(30.0, options.send_timeout)
        )
        seed = options.seed
        self._topic_picker = (
            Picker.from_weights(weights, seed=seed)
            if weights is not None
            else Picker(len(self.topics), options.topic_skew, options.topic_zipf, seed=seed)
        )
        self._pacer: Pacer | None = None
        self._key_picker = (
            None
            if options.key_skew == "none"
            else Picker(
                options.num_keys, options.key_skew, options.key_zipf, seed=None if seed is None else seed + 1
            )
        )
        self._payload = os.urandom(options.size) if options.size else b""
        self.producers: list[Producer] = []
        self.latency = LatencyHistogram()
        self.pauses = PauseTracker(keep_above=options.pause_keep_above)
        self.errors: collections.Counter[str] = collections.Counter()
        self.sent = self.acked = self.errored = 0
        self._window = _Window(time.monotonic())
        self._stop = asyncio.Event()
        self.started_at = 0.0
        self.ended_at = 0.0

    async def start(self) -> None:
        """Create and connect the producers (a failure here is an error of the run)."""
        self.producers = await self._create(self.topics)

    async def _create(self, topics: list[str]) -> list[Producer]:
        opts = self.options
        producers = await _bounded(
            [
                self.client.create_producer(
                    t,
                    partitioned=False,
                    max_pending_messages=opts.max_pending,
                    send_timeout=opts.send_timeout,
                )
                for t in topics
            ],
            CONNECT_CONCURRENCY,
        )
        for producer in producers:
            producer.listeners.append(self._listener(str(producer.topic)))
        return producers

    async def add_topics(self, topics: list[str], weights: list[float], rate: float | None = None) -> None:
        """Start producing to more topics too: ``weights`` now covers old and new topics, in order."""
        if len(weights) != len(self.topics) + len(topics):
            raise InvalidInputError(f"need {len(self.topics) + len(topics)} weights, got {len(weights)}")
        new = await self._create(topics)
        self.topics.extend(topics)
        self.producers.extend(new)
        self.set_weights(weights, rate)

    def set_weights(self, weights: list[float], rate: float | None = None) -> None:
        """Change how the rate spreads over the topics (and the total rate), from now on."""
        if len(weights) != len(self.topics):
            raise InvalidInputError(f"need {len(self.topics)} weights, got {len(weights)}")
        self._topic_picker = Picker.from_weights(weights, seed=self.options.seed)
        if rate is not None:
            self.options.rate = rate
            if self._pacer is not None:
                self._pacer = Pacer(rate, start=time.monotonic())

    def broker_of(self, topic: str) -> str | None:
        """The web URL of the broker the topic's producer is connected to now (``None`` between brokers)."""
        for producer in self.producers:
            if str(producer.topic) == topic:
                return producer.broker_url
        return None

    def _listener(self, topic: str) -> Any:
        def done(error: Exception | None, queued_at: float, now: float) -> None:
            self.pauses.on_done(topic, now)
            window = self._window
            if error is None:
                self.acked += 1
                latency = now - queued_at
                self.latency.record(latency)
                window.latency.record(latency)
                window.msgs += 1
                window.bytes += self.options.size
            else:
                self.errored += 1
                window.errors += 1
                self.errors[type(error).__name__] += 1

        return done

    def stop(self) -> None:
        """End the sending phase (the run then flushes and returns its summary)."""
        self._stop.set()

    async def run(self) -> ProduceSummary:
        """Send until the duration is over, ``num_messages`` are sent, or :meth:`stop`; then account for
        every send."""
        if not self.producers:
            await self.start()
        opts = self.options
        self.started_at = time.monotonic()
        self._window.reset(self.started_at)
        deadline = self.started_at + opts.duration if opts.duration > 0 else None
        try:
            await self._send_loop(deadline)
        finally:
            await self._finish()
        return self.summary()

    async def _send_loop(self, deadline: float | None) -> None:
        self._pacer = Pacer(self.options.rate, start=self.started_at)
        producers, keys = self.producers, self._key_picker
        payload = self._payload
        limit = self.options.num_messages
        while not self._stop.is_set():
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return
            if limit and self.sent >= limit:
                return
            due = self._pacer.due(now, cap=SEND_BURST)
            if limit:
                due = min(due, limit - self.sent)
            pick = self._topic_picker.pick
            for sent_now in range(due):
                if sent_now and not sent_now % YIELD_EVERY:
                    await asyncio.sleep(0)  # let acks and other connections through during a burst
                producer = producers[pick()]
                key = None if keys is None else f"key-{keys.pick()}"
                try:
                    await producer.send_async(payload, key=key)
                except BrokerLBError as exc:  # queue full (not blocking) or closed: an error of this send
                    self.sent += 1
                    self.errored += 1
                    self.errors[type(exc).__name__] += 1
                    continue
                self.sent += 1
                self.pauses.on_send(str(producer.topic), time.monotonic())
                if self._stop.is_set():
                    return
            await asyncio.sleep(0.001 if self.options.rate <= 0 or self.options.rate > 1000 else 0.005)

    async def _finish(self) -> None:
        self.ended_at = time.monotonic()
        await asyncio.gather(
            *(p.flush(self.options.send_timeout + 1) for p in self.producers), return_exceptions=True
        )
        await asyncio.gather(*(p.close() for p in self.producers), return_exceptions=True)
        if self._own_client:
            await self.client.close()

    def snapshot(self) -> Interval:
        now = time.monotonic()
        w = self._window
        interval = Interval(
            now - w.start,
            w.msgs,
            w.bytes,
            w.errors,
            w.latency.summary_ms(),
            sum(p.pending_count for p in self.producers),
            sum(p.stats.reconnects for p in self.producers),
            self.pauses.longest.seconds * 1e3,
        )
        w.reset(now)
        return interval

    def summary(self) -> ProduceSummary:
        closes: collections.Counter[str] = collections.Counter()
        for p in self.producers:
            closes.update(p.stats.closes)
        seconds = (self.ended_at or time.monotonic()) - self.started_at
        return ProduceSummary(
            topics=len(self.topics),
            seconds=seconds,
            sent=self.sent,
            acked=self.acked,
            errored=self.errored,
            errors=dict(self.errors),
            latency_ms=self.latency.summary_ms(),
            reconnects=sum(p.stats.reconnects for p in self.producers),
            lookups=sum(p.stats.lookups for p in self.producers),
            direct_reconnects=sum(p.stats.direct_reconnects for p in self.producers),
            closes=dict(closes),
            longest_pause=self.pauses.longest,
            pauses=list(self.pauses.kept),
            close_events=sorted(
                ((str(p.topic), at, reason) for p in self.producers for at, reason in p.stats.close_events),
                key=lambda e: e[1],
            ),
        )


def perf_client(service_url: str, *, operation_timeout: float = 30.0) -> Client | BinaryClient:
    """The client for ``service_url``: brokerlb's WebSocket client for a web URL, Pulsar's official
    client over the binary protocol for ``pulsar://`` (:mod:`brokerlb.perf.binary`)."""
    if is_binary_url(service_url):
        return BinaryClient(service_url, operation_timeout=operation_timeout)
    return Client(service_url, operation_timeout=operation_timeout)


def parse_publish_time(text: str) -> float | None:
    """Pulsar's ``publishTime`` (ISO-8601) → epoch seconds; ``None`` if unreadable."""
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


class ConsumeRun:
    """One ``perf consume`` run: a consumer per topic, each acking what it receives."""

    def __init__(
        self,
        options: ConsumeOptions,
        *,
        client: Client | BinaryClient | None = None,
        topics: list[str] | None = None,
    ) -> None:
        options.check()
        self.options = options
        self.topics = list(topics) if topics is not None else topic_names(options.topic, options.num_topics)
        self._own_client = client is None
        self.client = client or perf_client(options.service_url)
        self.consumers: list[Consumer] = []
        self.latency = LatencyHistogram()
        self.received = 0
        self.bytes = 0
        self._window = _Window(time.monotonic())
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] | None = None
        self.started_at = 0.0
        self.ended_at = 0.0

    async def start(self) -> None:
        self.consumers = await self._subscribe(self.topics)

    async def _subscribe(self, topics: list[str]) -> list[Consumer]:
        o = self.options
        return await _bounded(
            [
                self.client.subscribe(
                    t,
                    o.subscription,
                    partitioned=False,
                    subscription_type=o.subscription_type,
                    receiver_queue_size=o.receiver_queue_size,
                )
                for t in topics
            ],
            CONNECT_CONCURRENCY,
        )

    async def add_topics(self, topics: list[str]) -> None:
        """Subscribe to more topics (consumed at once if the run is going)."""
        new = await self._subscribe(topics)
        self.topics.extend(topics)
        self.consumers.extend(new)
        for consumer in new:
            if self._tasks is not None:
                self._tasks.append(asyncio.create_task(self._consume(consumer)))

    def stop(self) -> None:
        self._stop.set()

    async def _consume(self, consumer: Consumer) -> None:
        while not self._stop.is_set():
            try:
                message = await consumer.receive()
            except BrokerLBError:
                return
            now = time.time()
            published = parse_publish_time(message.publish_time)
            size = len(message.payload_b64) * 3 // 4
            self.received += 1
            self.bytes += size
            window = self._window
            window.msgs += 1
            window.bytes += size
            if published is not None:
                latency = max(0.0, now - published)
                self.latency.record(latency)
                window.latency.record(latency)
            await consumer.acknowledge(message)
            if self.options.num_messages and self.received >= self.options.num_messages:
                self._stop.set()  # all that was asked for is received and acknowledged

    async def run(self) -> ConsumeSummary:
        if not self.consumers:
            await self.start()
        self.started_at = time.monotonic()
        self._window.reset(self.started_at)
        tasks = self._tasks = [asyncio.create_task(self._consume(c)) for c in self.consumers]
        try:
            timeout = self.options.duration if self.options.duration > 0 else None
            try:
                await asyncio.wait_for(self._stop.wait(), timeout)
            except TimeoutError:
                pass
        finally:
            self._stop.set()
            self.ended_at = time.monotonic()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.gather(*(c.close() for c in self.consumers), return_exceptions=True)
            if self._own_client:
                await self.client.close()
        return self.summary()

    def snapshot(self) -> Interval:
        now = time.monotonic()
        w = self._window
        interval = Interval(
            now - w.start,
            w.msgs,
            w.bytes,
            0,
            w.latency.summary_ms(),
            0,
            sum(c.stats.reconnects for c in self.consumers),
            0.0,
        )
        w.reset(now)
        return interval

    def summary(self) -> ConsumeSummary:
        closes: collections.Counter[str] = collections.Counter()
        for c in self.consumers:
            closes.update(c.stats.closes)
        return ConsumeSummary(
            len(self.topics),
            (self.ended_at or time.monotonic()) - self.started_at,
            self.received,
            self.bytes,
            self.latency.summary_ms(),
            sum(c.stats.reconnects for c in self.consumers),
            dict(closes),
        )
