"""``brokerlb perf`` over Pulsar's binary protocol: a ``pulsar://`` service URL, as ``pulsar-perf -u``.

brokerlb's own client (:mod:`brokerlb.client`) speaks the WebSocket data path and needs a broker's
web URL. For a ``pulsar://`` (or ``pulsar+ssl://``) URL the perf runs use Apache Pulsar's official
client (the ``pulsar-client`` package, C++ core) through the same small interface: producers that
send asynchronously and call their listeners with each outcome, consumers that receive and
acknowledge. What the official client does not tell -- when it reconnects, looks a topic up again,
or was closed by its broker -- is left at zero in the run's summary.
"""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from brokerlb.client.link import LinkStats
from brokerlb.errors import BrokerLBError, ClientClosedError, InvalidConfigError

__all__ = ["BinaryClient", "BinaryProducer", "BinaryConsumer", "is_binary_url", "native_logger"]

#: ``--subscription-type`` names -> the official client's enum member names
_SUBSCRIPTION_TYPES = {
    "Exclusive": "Exclusive",
    "Shared": "Shared",
    "Failover": "Failover",
    "Key_Shared": "KeyShared",
}


def is_binary_url(url: str) -> bool:
    """Whether ``url`` names Pulsar's binary protocol (``pulsar://`` or ``pulsar+ssl://``)."""
    return url.startswith(("pulsar://", "pulsar+ssl://"))


class BinaryError(BrokerLBError):
    """A send or receive the official client reported as failed (its ``Result`` name)."""


def _pulsar() -> Any:
    try:
        import pulsar
    except ImportError:
        raise InvalidConfigError(
            "--service-url",
            "pulsar://...",
            "a pulsar:// URL needs Apache Pulsar's client: pip install pulsar-client",
        ) from None
    return pulsar


def native_logger(path: str = os.devnull, *, errors_only: bool = False) -> Any:
    """A logger inside the official client's C++ library (warnings and errors, or errors only, to ``path``):
    for every process that exits after using the client -- ``brokerlb perf``, benchmarks, load generators.
    With a Python logger the client calls back into the interpreter while it is being torn down, and now
    and then the exit aborts with "terminate called without an active exception" (SIGABRT, exit -6:
    apache/pulsar-client-python#256; seen in a CI run of bench_shutdown). Tests keep
    :func:`brokerlb.testing.official_client.quiet_logger`: their process exits once, after pytest's report."""
    pulsar = _pulsar()
    level = pulsar.LoggerLevel.Error if errors_only else pulsar.LoggerLevel.Warn
    return pulsar.FileLogger(level, path)


class BinaryClient:
    """The subset of :class:`brokerlb.client.Client` the perf runs use, over the official client."""

    def __init__(self, service_url: str, *, operation_timeout: float = 30.0) -> None:
        pulsar = _pulsar()
        # errors only: failed sends and receives are counted and reported by the run itself
        quiet = native_logger(errors_only=True)
        self.service_url = service_url
        self._pulsar = pulsar
        self._client = pulsar.Client(
            service_url, operation_timeout_seconds=max(1, int(operation_timeout)), logger=quiet
        )

    async def create_producer(
        self,
        topic: str,
        *,
        partitioned: bool = False,
        max_pending_messages: int = 1000,
        send_timeout: float = 30.0,
    ) -> BinaryProducer:
        producer = await asyncio.to_thread(
            self._client.create_producer,
            str(topic),
            max_pending_messages=max_pending_messages,
            send_timeout_millis=int(send_timeout * 1000),
            block_if_queue_full=False,
            batching_enabled=False,
        )
        return BinaryProducer(str(topic), producer, asyncio.get_running_loop(), self._pulsar.Result.Ok)

    async def subscribe(
        self,
        topic: str,
        subscription: str,
        *,
        partitioned: bool = False,
        subscription_type: str = "Exclusive",
        receiver_queue_size: int = 1000,
    ) -> BinaryConsumer:
        kind = _SUBSCRIPTION_TYPES.get(subscription_type)
        if kind is None:
            raise InvalidConfigError(
                "--subscription-type", subscription_type, f"expected one of {sorted(_SUBSCRIPTION_TYPES)}"
            )
        consumer = BinaryConsumer(str(topic), asyncio.get_running_loop())
        consumer.raw = await asyncio.to_thread(
            self._client.subscribe,
            str(topic),
            subscription,
            consumer_type=getattr(self._pulsar.ConsumerType, kind),
            receiver_queue_size=receiver_queue_size,
            message_listener=consumer.on_message,
        )
        return consumer

    async def close(self) -> None:
        await asyncio.to_thread(self._client.close)


class BinaryProducer:
    """A producer: ``send_async`` queues a message, each listener hears ``(error, queued_at, now)``."""

    def __init__(self, topic: str, raw: Any, loop: asyncio.AbstractEventLoop, ok: Any) -> None:
        self.topic = topic
        self.raw = raw
        self.listeners: list[Callable[[Exception | None, float, float], None]] = []
        #: not observable through the official client (left at zero)
        self.stats = LinkStats()
        self.broker_url: str | None = None
        self._loop = loop
        self._ok = ok
        self._closed = False
        #: sends queued and not answered yet
        self.pending_count = 0

    async def send_async(self, payload: bytes, *, key: str | None = None) -> None:
        if self._closed:
            raise ClientClosedError(f"Producer of {self.topic} is closed")
        queued_at = time.monotonic()
        self.pending_count += 1

        def sent(result: Any, _message_id: Any) -> None:  # the client's thread
            error = None if result == self._ok else BinaryError(str(result))
            self._loop.call_soon_threadsafe(self._done, error, queued_at)

        kwargs = {"partition_key": key} if key is not None else {}
        self.raw.send_async(payload, sent, **kwargs)

    def _done(self, error: Exception | None, queued_at: float) -> None:
        self.pending_count -= 1
        now = time.monotonic()
        for listener in self.listeners:
            listener(error, queued_at, now)

    async def flush(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(asyncio.to_thread(self.raw.flush), timeout)

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await asyncio.to_thread(self.raw.close)


@dataclass(frozen=True, slots=True)
class BinaryMessage:
    """A received message in the shape the perf runs read (:class:`brokerlb.client.Message`'s fields)."""

    payload_b64: str
    publish_time: str
    raw: Any = field(default=None, repr=False, compare=False)


class BinaryConsumer:
    """A consumer fed by the official client's listener thread; :meth:`receive` awaits the next message."""

    def __init__(self, topic: str, loop: asyncio.AbstractEventLoop) -> None:
        self.topic = topic
        self.raw: Any = None
        self.stats = LinkStats()
        self._loop = loop
        self._queue: asyncio.Queue[BinaryMessage] = asyncio.Queue()
        self._closed = False

    def on_message(self, _consumer: Any, message: Any) -> None:  # the client's thread
        published = datetime.fromtimestamp(message.publish_timestamp() / 1000, tz=UTC).isoformat()
        item = BinaryMessage(base64.b64encode(message.data()).decode(), published, message)
        self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    async def receive(self) -> BinaryMessage:
        if self._closed:
            raise ClientClosedError(f"Consumer of {self.topic} is closed")
        return await self._queue.get()

    async def acknowledge(self, message: BinaryMessage) -> None:
        self.raw.acknowledge(message.raw)

    async def close(self) -> None:
        if not self._closed and self.raw is not None:
            self._closed = True
            await asyncio.to_thread(self.raw.close)
