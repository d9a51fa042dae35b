"""Traffic from Apache Pulsar's official client (``pulsar-client``, C++ core) for tests and benchmarks.

The official client runs its own threads and blocks in its calls, so it must never run on a
broker's event loop: :class:`ProducerLoad` and :class:`ConsumerLoad` are threads (tests with
in-process brokers wait for them with ``asyncio.to_thread``), and benchmarks run them in a
process of their own. Every message carries a unique payload ``{tag}-{n}``; what the broker
acknowledged to the producer and what each durable subscription received are recorded, and
:func:`delivery_report` accounts for them: every acknowledged message must have been received
(``lost`` must be empty); receiving one twice is counted (``duplicates``), which at-least-once
delivery allows.

Pacing (``rate``) uses sleeps inside the load thread -- that is the load generator's clock, not
synchronisation; tests wait on conditions (counts reached), never on time.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ProducerLoad",
    "ConsumerLoad",
    "OfficialTraffic",
    "DeliveryReport",
    "delivery_report",
    "quiet_logger",
]


def quiet_logger() -> Any:
    """A Python logger for the client that keeps its INFO lines (reconnects etc.) out of test output."""
    import logging

    logger = logging.getLogger("pulsar-client")
    logger.setLevel(logging.WARNING)
    return logger


@dataclass
class DeliveryReport:
    """What was acknowledged to producers against what one subscription received."""

    acked: int
    received: int
    lost: list[str] = field(default_factory=list)
    duplicates: int = 0
    unexpected: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.lost and not self.unexpected


def delivery_report(
    acked: set[str], received: collections.Counter[str], sent: set[str] | None = None
) -> DeliveryReport:
    """Account one subscription's deliveries (module docstring). ``sent``: every payload a producer
    tried (received payloads outside it are ``unexpected``)."""
    lost = sorted(acked - received.keys())
    unexpected = sorted(received.keys() - sent) if sent is not None else []
    return DeliveryReport(
        len(acked),
        sum(received.values()),
        lost,
        sum(count - 1 for count in received.values() if count > 1),
        unexpected,
    )


class ProducerLoad(threading.Thread):
    """One producer sending ``{tag}-{n}`` until :meth:`finish` (or ``count`` messages), at ``rate``
    messages/s (``None`` = as fast as the client's pending queue allows)."""

    def __init__(
        self,
        client: Any,
        topic: str,
        tag: str,
        *,
        rate: float | None = None,
        count: int | None = None,
        batching: bool = False,
        key: Callable[[int], str | None] = lambda n: None,
        producer_options: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(name=f"producer {tag}", daemon=True)
        self.client = client
        self.topic = topic
        self.tag = tag
        self.rate = rate
        self.count = count
        self.batching = batching
        self.key = key
        self.options = producer_options or {}
        self.sent: set[str] = set()
        self.acked: set[str] = set()
        #: payload -> the message id the broker acknowledged it with (``(ledger,entry,partition,batch)``)
        self.ids: dict[str, str] = {}
        self.errors: list[str] = []
        self.started = threading.Event()
        self._finish = threading.Event()
        self._lock = threading.Lock()
        self.failure: BaseException | None = None

    def finish(self) -> None:
        self._finish.set()

    def _callback(self, payload: str) -> Callable[[Any, Any], None]:
        def done(result: Any, message_id: Any) -> None:
            import pulsar

            with self._lock:
                if result == pulsar.Result.Ok:
                    self.acked.add(payload)
                    self.ids[payload] = str(message_id)
                else:
                    self.errors.append(f"{payload}: {result}")

        return done

    def run(self) -> None:
        try:
            options = {
                "send_timeout_millis": 0,  # never give up on a message: a move must not lose it
                **self.options,
            }
            producer = self.client.create_producer(
                self.topic, batching_enabled=self.batching, block_if_queue_full=True, **options
            )
        except BaseException as exc:
            self.failure = exc
            self.started.set()
            return
        self.started.set()
        n = 0
        begun = time.monotonic()
        try:
            while not self._finish.is_set() and (self.count is None or n < self.count):
                payload = f"{self.tag}-{n}"
                key = self.key(n)
                with self._lock:
                    self.sent.add(payload)
                if key is None:
                    producer.send_async(payload.encode(), self._callback(payload))
                else:
                    producer.send_async(payload.encode(), self._callback(payload), partition_key=key)
                n += 1
                if self.rate:
                    delay = begun + n / self.rate - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
            producer.flush()
        except BaseException as exc:
            self.failure = exc
        finally:
            try:
                producer.close()
            except Exception:
                pass

    @property
    def outstanding(self) -> int:
        with self._lock:
            return len(self.sent) - len(self.acked) - len(self.errors)


class ConsumerLoad(threading.Thread):
    """One consumer of a subscription, acknowledging everything it receives, until :meth:`finish`."""

    def __init__(
        self, client: Any, topic: str, subscription: str, *, consumer_options: dict[str, Any] | None = None
    ) -> None:
        super().__init__(name=f"consumer {subscription}", daemon=True)
        self.client = client
        self.topic = topic
        self.subscription = subscription
        self.options = consumer_options or {}
        self.received: collections.Counter[str] = collections.Counter()
        self.redelivered = 0
        self.started = threading.Event()
        self._finish = threading.Event()
        self._lock = threading.Lock()
        self.failure: BaseException | None = None

    def finish(self) -> None:
        self._finish.set()

    def snapshot(self) -> collections.Counter[str]:
        with self._lock:
            return collections.Counter(self.received)

    def run(self) -> None:
        import pulsar

        try:
            consumer = self.client.subscribe(self.topic, self.subscription, **self.options)
        except BaseException as exc:
            self.failure = exc
            self.started.set()
            return
        self.started.set()
        try:
            while not self._finish.is_set():
                try:
                    message = consumer.receive(200)
                except pulsar.Timeout:
                    continue
                with self._lock:
                    self.received[message.data().decode()] += 1
                    if message.redelivery_count():
                        self.redelivered += 1
                consumer.acknowledge(message)
        except BaseException as exc:
            self.failure = exc
        finally:
            try:
                consumer.close()
            except Exception:
                pass


class OfficialTraffic:
    """One producer per topic at its rate and one consumer per topic and subscription, on two clients
    (producers and consumers on separate connections), with the accounting of :func:`delivery_report`.

    Every method blocks (the official client's calls do): tests with brokers on their own event
    loop call them through ``asyncio.to_thread``. ``timeout`` only guards against hanging.
    """

    def __init__(
        self,
        service_url: str,
        rates: dict[str, float],
        *,
        subscriptions: tuple[str, ...] = ("audit",),
        timeout: float = 120.0,
        logger: Any = None,
    ) -> None:
        self.service_url = service_url
        self.logger = logger
        self.rates = dict(rates)
        self.subscriptions = subscriptions
        self.timeout = timeout
        self.clients: list[Any] = []
        self.producers: dict[str, ProducerLoad] = {}
        self.consumers: list[ConsumerLoad] = []

    def start(self) -> OfficialTraffic:
        """Subscribe first (every acknowledged message then has a subscription), then produce."""
        import pulsar

        for _ in range(2):
            self.clients.append(
                pulsar.Client(
                    self.service_url,
                    operation_timeout_seconds=int(self.timeout),
                    logger=self.logger if self.logger is not None else quiet_logger(),
                )
            )
        for topic in self.rates:
            for subscription in self.subscriptions:
                consumer = ConsumerLoad(self.clients[1], topic, subscription)
                consumer.start()
                self.consumers.append(consumer)
        for consumer in self.consumers:
            consumer.started.wait(self.timeout)
            if consumer.failure is not None:
                raise consumer.failure
        for i, (topic, rate) in enumerate(self.rates.items()):
            producer = ProducerLoad(self.clients[0], topic, f"m{i}", rate=rate)
            producer.start()
            self.producers[topic] = producer
        for producer in self.producers.values():
            producer.started.wait(self.timeout)
            if producer.failure is not None:
                raise producer.failure
        return self

    def acked(self) -> int:
        return sum(len(p.acked) for p in self.producers.values())

    def stop_producing(self) -> None:
        for producer in self.producers.values():
            producer.finish()
        for producer in self.producers.values():
            producer.join(self.timeout)

    def all_received(self) -> bool:
        """Has every subscription received every message acknowledged to its topic's producer?"""
        return all(self.producers[c.topic].acked <= c.snapshot().keys() for c in self.consumers)

    def reports(self) -> list[DeliveryReport]:
        return [
            delivery_report(self.producers[c.topic].acked, c.snapshot(), self.producers[c.topic].sent)
            for c in self.consumers
        ]

    def failures(self) -> list[str]:
        """Producer and consumer failures and send errors (none expected)."""
        out = [f"{p.topic}: {p.failure!r}" for p in self.producers.values() if p.failure is not None]
        out += [f"{p.topic}: {e}" for p in self.producers.values() for e in p.errors[:3]]
        out += [f"{c.topic} {c.subscription}: {c.failure!r}" for c in self.consumers if c.failure is not None]
        return out

    def close(self) -> None:
        """Stop producing and consuming and close the clients (also after a failure)."""
        self.stop_producing()
        for consumer in self.consumers:
            consumer.finish()
        for consumer in self.consumers:
            consumer.join(self.timeout)
        for client in self.clients:
            try:
                client.close()
            except Exception:
                pass
