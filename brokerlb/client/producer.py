"""A producer that never loses a send silently: every send ends in an ack or an error.

Sends go into a bounded *pending queue* (``max_pending_messages``, Pulsar's
``maxPendingMessages``, 1000) in order, each with a context id. A writer task sends them
on the current connection; the broker's ack (``{"result": "ok", "messageId", "context"}``)
completes the send with its message id, an error result fails it with
:class:`~brokerlb.errors.ProducerSendError`. When the connection ends -- the bundle was
unloaded or transferred, the broker went away -- the pending sends stay queued and are
**re-sent in order** on the next connection (PIP-307's transfer: the old owner ignored
them while fenced). A send with no ack after ``send_timeout`` seconds (Pulsar's
``sendTimeoutMs``, 30 s) fails with :class:`~brokerlb.errors.SendTimeoutError`; closing
the producer fails what is left with :class:`~brokerlb.errors.ClientClosedError`.

When the queue is full, :meth:`Producer.send_async` waits for room
(``block_if_queue_full=True``, the default here) or fails at once with
:class:`~brokerlb.errors.ProducerQueueIsFullError` (Pulsar's default).

Delivery is at least once from the producer's view: a message the old owner delivered
but whose ack was lost in the close is sent again (Pulsar dedups only with
``brokerDeduplicationEnabled``, which the in-memory data path does not have).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerlb.client.link import TopicLink
from brokerlb.errors import (
    ClientClosedError,
    InvalidInputError,
    ProducerQueueIsFullError,
    ProducerSendError,
    SendTimeoutError,
)
from brokerlb.messaging import ProducerAck, ProducerMessage, producer_path
from brokerlb.naming import TopicName

if TYPE_CHECKING:
    from brokerlb.client.client import Client

__all__ = ["Producer", "SendReceipt"]


@dataclass(slots=True)
class _Pending:
    frame: str
    future: asyncio.Future[str]
    queued_at: float


@dataclass(frozen=True, slots=True)
class SendReceipt:
    """What :meth:`Producer.send_async` returns: the future of the message id, and when it was queued."""

    future: asyncio.Future[str]
    queued_at: float


class Producer(TopicLink):
    """Publish to one topic (module docstring). Create with :meth:`Client.create_producer`."""

    def __init__(
        self,
        client: Client,
        topic: TopicName | str,
        *,
        max_pending_messages: int = 1000,
        block_if_queue_full: bool = True,
        send_timeout: float = 30.0,
    ) -> None:
        if max_pending_messages < 1:
            raise InvalidInputError(f"maxPendingMessages must be >= 1, got {max_pending_messages}")
        if send_timeout <= 0:
            raise InvalidInputError(f"sendTimeoutMs must be > 0, got {send_timeout * 1000:g}")
        super().__init__(client, topic, producer_path(topic))
        self.max_pending_messages = max_pending_messages
        self.block_if_queue_full = block_if_queue_full
        self.send_timeout = send_timeout
        self._pending: collections.OrderedDict[str, _Pending] = collections.OrderedDict()
        self._unsent: collections.deque[str] = collections.deque()
        self._wake = asyncio.Event()
        self._room = asyncio.Event()
        self._room.set()
        self._sequence = 0
        self._writer: asyncio.Task[None] | None = None
        #: Called with ``(error or None, queued_at, now)`` (monotonic seconds) when a send completes,
        #: before its future's callbacks run (perf tools measure latency and pauses with it).
        self.listeners: list[Callable[[Exception | None, float, float], None]] = []
        self.sent = self.acked = self.failed = 0

    # ------------------------------------------------------------------ sending
    @property
    def pending_count(self) -> int:
        return len(self._pending)

    async def send_async(
        self, payload: bytes, *, key: str | None = None, properties: dict[str, str] | None = None
    ) -> SendReceipt:
        """Queue a message (waiting for room when the queue is full); returns its receipt at once."""
        if self.closed:
            raise ClientClosedError(f"Producer of {self.topic} is closed")
        if isinstance(self.failure, Exception):  # the link gave up for good (e.g. the namespace was deleted)
            raise self.failure
        while len(self._pending) >= self.max_pending_messages:
            if not self.block_if_queue_full:
                raise ProducerQueueIsFullError(
                    f"Producer send queue is full ({self.max_pending_messages} pending)"
                )
            self._room.clear()
            await self._room.wait()
            if self.closed:
                raise ClientClosedError(f"Producer of {self.topic} is closed")
        self._sequence += 1
        context = str(self._sequence)
        frame = ProducerMessage(
            base64.b64encode(payload).decode(), len(payload), context, key, properties or None
        ).encode()
        now = time.monotonic()
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[context] = _Pending(frame, future, now)
        self._unsent.append(context)
        self.sent += 1
        self._wake.set()
        return SendReceipt(future, now)

    async def send(
        self, payload: bytes, *, key: str | None = None, properties: dict[str, str] | None = None
    ) -> str:
        """Send and wait for the ack; the message id (raises on an error or timeout)."""
        receipt = await self.send_async(payload, key=key, properties=properties)
        return await receipt.future

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued send has completed (acked, failed or timed out)."""
        futures = [p.future for p in self._pending.values()]
        if futures:
            await asyncio.wait(futures, timeout=timeout)

    # ------------------------------------------------------------------ link hooks
    async def start(self) -> None:
        await super().start()
        self._writer = asyncio.create_task(self._write(), name=f"producer writer {self.topic}")
        self.client.register_timeouts(self)

    async def on_connected(self, ws: Any) -> None:
        self._unsent = collections.deque(self._pending)  # re-send everything not acknowledged, in order
        self._wake.set()

    def on_frame(self, text: str | bytes) -> None:
        try:
            ack = ProducerAck.parse(text)
        except (ValueError, InvalidInputError):
            return
        pending = self._pending.pop(ack.context, None) if ack.context is not None else None
        if pending is None:
            return  # timed out already, or a duplicate
        if ack.ok:
            self._complete(pending, ack.message_id or "", None)
        else:
            self._complete(pending, None, ProducerSendError(ack.error_msg or ack.result, ack.result))

    def on_failed(self, error: BaseException) -> None:
        self._fail_all(error if isinstance(error, Exception) else ClientClosedError(str(error)))

    # ------------------------------------------------------------------ internals
    def _complete(self, pending: _Pending, message_id: str | None, error: Exception | None) -> None:
        now = time.monotonic()
        if error is None:
            self.acked += 1
            if not pending.future.done():
                pending.future.set_result(message_id or "")
        else:
            self.failed += 1
            if not pending.future.done():
                pending.future.set_exception(error)
                pending.future.exception()  # retrieved: nobody awaiting it is not an "unhandled" error
        for listener in self.listeners:
            listener(error, pending.queued_at, now)
        if len(self._pending) < self.max_pending_messages:
            self._room.set()

    async def _write(self) -> None:
        while not self.closed:
            await self._wake.wait()
            self._wake.clear()
            while self._unsent and not self.closed:
                ws = self.ws
                if ws is None:
                    break  # disconnected: on_connected re-queues everything pending
                context = self._unsent.popleft()
                pending = self._pending.get(context)
                if pending is None:
                    continue
                try:
                    await ws.send(pending.frame)
                except Exception:  # the connection broke: the reader notices and reconnects
                    break

    def expire(self, now: float) -> None:
        """Fail the sends queued more than ``send_timeout`` ago (called by the client's timer)."""
        while self._pending:
            context, pending = next(iter(self._pending.items()))
            if now - pending.queued_at < self.send_timeout:
                return
            del self._pending[context]
            self._complete(
                pending,
                None,
                SendTimeoutError(
                    f"Could not send message to broker within given timeout ({self.send_timeout * 1000:g} ms)"
                ),
            )

    def _fail_all(self, error: Exception) -> None:
        while self._pending:
            _context, pending = self._pending.popitem(last=False)
            self._complete(pending, None, error)
        self._unsent.clear()

    async def close(self) -> None:
        """Close: pending sends fail with :class:`ClientClosedError` (flush first to wait for them)."""
        if self.closed:
            return
        await super().close()
        self.client.unregister_timeouts(self)
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._writer
        self._room.set()
