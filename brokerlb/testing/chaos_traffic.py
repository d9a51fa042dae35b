"""A fault campaign's traffic: official-client producers and consumers that retry as applications
do, and the account of what was acknowledged, delivered and lost -- per fault kind.

Apache Pulsar's official client (C++ core) reconnects an established producer or consumer by
itself, with its backoff (100 ms doubling up to ``maxBackoffIntervalMs``, 60 s), but the
*creation* of one fails after ``operation_timeout_seconds`` -- an application then tries again.
:class:`RetryingProducer` and :class:`RetryingConsumer` do what such an application does: create
with a backoff of the same shape (:class:`~brokerlb.backoff.Backoff`; capped at :data:`MAX_BACKOFF_S` so a campaign of
minutes keeps measuring), create again when the client gives a producer or consumer up, and
re-send a message whose send failed. Every message carries a unique payload ``{tag}-{n}``.

Each topic has one durable subscription, subscribed *before* its producer starts, so every
message acknowledged to a producer has a subscription that must receive it. At the end,
:func:`account` compares, per message, the time it was acknowledged with the faults injected:

* ``acknowledged`` -- the broker answered the send with a receipt;
* ``delivered`` -- the durable subscription received it at least once;
* ``acknowledged_lost`` -- acknowledged and never received (what a storage tier must prevent);

and counts each message under the *window* its acknowledgement fell in: ``warm-up`` before the
first fault, a fault kind from that fault's injection to the next one's, ``heal`` after the
schedule. A SIGKILL loses what the killed broker had acknowledged and not delivered yet: those
messages were acknowledged in the window *before* the kill, so every lost message is also
listed with the first fault injected after its acknowledgement (``lost_by_next_fault_kind``).

The official client runs its own threads and blocks in its calls: everything here is threads,
never code on an event loop. Pacing (``rate``) is the load generator's clock; waits are bounded
guards, never synchronisation.
"""

from __future__ import annotations

import bisect
import collections
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brokerlb.backoff import Backoff

__all__ = [
    "RetryingProducer",
    "RetryingConsumer",
    "ChaosTraffic",
    "account",
    "WARM_UP",
    "HEAL",
    "MAX_BACKOFF_S",
]

#: the window before the first fault, and the one after the schedule
WARM_UP = "warm-up"
HEAL = "heal"
#: the application's backoff cap (the client's own is 60 s; a campaign lasts minutes)
MAX_BACKOFF_S = 10.0


class _Worker(threading.Thread):
    """Common parts: a stop event, a backoff, counts of creations and their failures."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        super().__init__(name=name, daemon=True)
        self.stop = stop
        self.backoff = Backoff(0.1, MAX_BACKOFF_S)
        self.lock = threading.Lock()
        self.created = 0
        self.create_failures = 0
        self.last_error = ""

    def _wait(self) -> None:
        self.stop.wait(self.backoff.next())

    def _failed(self, what: str, exc: BaseException) -> None:
        with self.lock:
            self.create_failures += 1
            self.last_error = f"{what}: {type(exc).__name__}: {exc}"


class RetryingConsumer(_Worker):
    """One consumer of a durable subscription, acknowledging what it receives; subscribes again
    (with the backoff) whenever subscribing fails or the client gives the consumer up."""

    def __init__(self, client: Any, topic: str, subscription: str, stop: threading.Event) -> None:
        super().__init__(f"chaos consumer {subscription}", stop)
        self.client = client
        self.topic = topic
        self.subscription = subscription
        #: payload -> monotonic ns of its first reception
        self.received: dict[str, int] = {}
        self.duplicates = 0
        #: set once the subscription exists (the producer of the topic starts then)
        self.subscribed = threading.Event()

    def run(self) -> None:
        import pulsar

        while not self.stop.is_set():
            try:
                consumer = self.client.subscribe(
                    self.topic,
                    self.subscription,
                    consumer_type=pulsar.ConsumerType.Shared,
                    initial_position=pulsar.InitialPosition.Earliest,
                )
            except Exception as exc:
                self._failed("subscribe", exc)
                self._wait()
                continue
            with self.lock:
                self.created += 1
            self.backoff.reset()
            self.subscribed.set()
            try:
                self._consume(consumer)
            except Exception as exc:  # the client gave the consumer up: subscribe again
                self._failed("receive", exc)
                self._wait()
            finally:
                try:
                    consumer.close()
                except Exception:
                    pass

    def _consume(self, consumer: Any) -> None:
        import pulsar

        while not self.stop.is_set():
            try:
                message = consumer.receive(200)
            except pulsar.Timeout:
                continue
            payload = message.data().decode(errors="replace")
            now = time.monotonic_ns()
            with self.lock:
                if payload in self.received:
                    self.duplicates += 1
                else:
                    self.received[payload] = now
            consumer.acknowledge(message)

    def delivered(self) -> set[str]:
        with self.lock:
            return set(self.received)


class RetryingProducer(_Worker):
    """One producer sending ``{tag}-{n}`` at ``rate`` messages/s once ``ready`` is set; creates the
    producer again when the client gives it up, and re-sends a message whose send failed."""

    def __init__(
        self,
        client: Any,
        topic: str,
        tag: str,
        rate: float,
        stop: threading.Event,
        ready: threading.Event,
    ) -> None:
        super().__init__(f"chaos producer {tag}", stop)
        self.client = client
        self.topic = topic
        self.tag = tag
        self.rate = rate
        self.ready = ready
        #: every payload given to the client, and those acknowledged (payload -> monotonic ns)
        self.sent: set[str] = set()
        self.acked: dict[str, int] = {}
        self.send_errors: collections.Counter[str] = collections.Counter()
        self._resend: collections.deque[str] = collections.deque()

    def run(self) -> None:
        while not self.ready.is_set():
            if self.stop.wait(0.05):
                return
        n = 0
        begun = time.monotonic()
        while not self.stop.is_set():
            try:
                producer = self.client.create_producer(
                    self.topic, block_if_queue_full=True, batching_enabled=False, send_timeout_millis=30_000
                )
            except Exception as exc:
                self._failed("create_producer", exc)
                self._wait()
                continue
            with self.lock:
                self.created += 1
            self.backoff.reset()
            try:
                while not self.stop.is_set():
                    with self.lock:
                        payload = self._resend.popleft() if self._resend else None
                    if payload is None:
                        payload = f"{self.tag}-{n}"
                        n += 1
                    with self.lock:
                        self.sent.add(payload)
                    producer.send_async(payload.encode(), self._callback(payload))
                    delay = begun + n / self.rate - time.monotonic()
                    if delay > 0:
                        self.stop.wait(delay)
                producer.flush()
            except Exception as exc:  # the producer is closed or failed: create it again
                self._failed("send", exc)
                self._wait()
            finally:
                try:
                    producer.close()
                except Exception:
                    pass

    def _callback(self, payload: str) -> Any:
        def done(result: Any, _message_id: Any) -> None:
            import pulsar

            now = time.monotonic_ns()
            with self.lock:
                if result == pulsar.Result.Ok:
                    self.acked.setdefault(payload, now)
                else:
                    self.send_errors[str(result)] += 1
                    if payload not in self.acked and not self.stop.is_set():
                        self._resend.append(payload)  # as an application does: send it again

        return done

    def acknowledged(self) -> dict[str, int]:
        with self.lock:
            return dict(self.acked)


@dataclass
class ChaosTraffic:
    """One retrying consumer (durable, Shared) and one retrying producer per topic, on two clients."""

    service_url: str
    topics: Sequence[str]
    rate: float
    logger: Any = None

    def __post_init__(self) -> None:
        self.clients: list[Any] = []
        self.consumers: list[RetryingConsumer] = []
        self.producers: list[RetryingProducer] = []
        self._stop_producers = threading.Event()
        self._stop_consumers = threading.Event()

    def start(self) -> ChaosTraffic:
        import pulsar

        for _ in range(2):
            self.clients.append(
                pulsar.Client(
                    self.service_url,
                    operation_timeout_seconds=10,
                    connection_timeout_ms=2000,
                    logger=self.logger,
                )
            )
        for i, topic in enumerate(self.topics):
            consumer = RetryingConsumer(self.clients[1], topic, f"sub-{i}", self._stop_consumers)
            producer = RetryingProducer(
                self.clients[0], topic, f"p{i}", self.rate, self._stop_producers, consumer.subscribed
            )
            self.consumers.append(consumer)
            self.producers.append(producer)
        for worker in (*self.consumers, *self.producers):
            worker.start()
        return self

    def stop_producing(self, timeout: float = 15.0) -> None:
        self._stop_producers.set()
        for producer in self.producers:
            producer.join(timeout)

    def wait_delivered(self, quiet: float = 10.0, ceiling: float = 60.0) -> None:
        """Wait until every acknowledged message was received, or nothing new arrived for ``quiet``
        seconds (a lost message never arrives), at most ``ceiling`` seconds (guards only)."""
        limit = time.monotonic() + ceiling
        last_count, last_change = -1, time.monotonic()
        while time.monotonic() < limit:
            acked = set().union(*(p.acknowledged() for p in self.producers))
            delivered = set().union(*(c.delivered() for c in self.consumers))
            if acked <= delivered:
                return
            if len(delivered) != last_count:
                last_count, last_change = len(delivered), time.monotonic()
            elif time.monotonic() - last_change > quiet:
                return
            time.sleep(0.1)

    def close(self, timeout: float = 10.0) -> None:
        self._stop_producers.set()
        self._stop_consumers.set()
        for worker in (*self.producers, *self.consumers):
            worker.join(timeout)
        for client in self.clients:
            try:
                client.close()
            except Exception:
                pass

    def summary(self, faults: Sequence[tuple[int, str]], schedule_end_ns: int | None) -> dict[str, Any]:
        acked: dict[str, int] = {}
        sent: set[str] = set()
        for producer in self.producers:
            acked.update(producer.acknowledged())
            with producer.lock:
                sent |= producer.sent
        delivered: set[str] = set()
        for consumer in self.consumers:
            delivered |= consumer.delivered()
        out = account(acked, delivered, faults, schedule_end_ns)
        out["messages"].update(
            {
                "sent": len(sent),
                "unacknowledged": len(sent - acked.keys()),
                "duplicates": sum(c.duplicates for c in self.consumers),
                "send_errors": sum(sum(p.send_errors.values()) for p in self.producers),
                "producers_created": sum(p.created for p in self.producers),
                "producer_create_failures": sum(p.create_failures for p in self.producers),
                "consumers_subscribed": sum(c.created for c in self.consumers),
                "consumer_subscribe_failures": sum(c.create_failures for c in self.consumers),
                "topics_without_subscription": sum(not c.subscribed.is_set() for c in self.consumers),
            }
        )
        out["client_errors"] = [w.last_error for w in (*self.producers, *self.consumers) if w.last_error][:8]
        return out


def account(
    acked: Mapping[str, int],
    delivered: Collection[str],
    faults: Sequence[tuple[int, str]],
    schedule_end_ns: int | None = None,
) -> dict[str, Any]:
    """Acknowledged, delivered and lost messages in all and per fault window (module docstring).

    ``acked``: payload -> monotonic ns of its acknowledgement; ``delivered``: payloads the durable
    subscriptions received; ``faults``: ``(monotonic ns, kind)`` of each injection, in order;
    ``schedule_end_ns``: when the schedule ended (later acknowledgements are ``heal``)."""
    starts = [at for at, _ in faults]
    by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    lost_next: collections.Counter[str] = collections.Counter()
    lost: list[tuple[int, str]] = []
    for payload, at in acked.items():
        i = bisect.bisect_right(starts, at)
        if i == 0:
            window = WARM_UP
        elif schedule_end_ns is not None and at >= schedule_end_ns:
            window = HEAL
        else:
            window = faults[i - 1][1]
        counts = by_kind[window]
        counts["acknowledged"] += 1
        if payload in delivered:
            counts["delivered"] += 1
        else:
            counts["acknowledged_lost"] += 1
            lost_next[faults[i][1] if i < len(faults) else HEAL] += 1
            lost.append((at, payload))
    total_lost = len(lost)
    lost.sort()
    return {
        "acknowledged_lost": total_lost,
        "messages": {
            "acknowledged": len(acked),
            "delivered": sum(1 for p in acked if p in delivered),
            "acknowledged_lost": total_lost,
        },
        "messages_by_fault_kind": {
            kind: {k: counts[k] for k in ("acknowledged", "delivered", "acknowledged_lost")}
            for kind, counts in sorted(by_kind.items())
        },
        "lost_by_next_fault_kind": dict(sorted(lost_next.items())),
        "lost_examples": [payload for _, payload in lost[:10]],
    }
