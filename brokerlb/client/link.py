"""A producer's or consumer's connection to the broker that serves its topic, kept alive across moves.

:class:`TopicLink` owns one WebSocket at a time and a task that reads it. When the broker
closes it (:mod:`brokerlb.messaging.protocol` close convention) or the connection
breaks, the link reconnects:

* ``TopicTransferred`` with the new owner's ``httpUrl`` (PIP-307), or ``TopicRedirected``
  (the broker refused the topic but named its owner): connect there at once, no lookup;
  if that fails, fall back to a lookup;
* anything else (``TopicUnloaded``, ``ServiceNotReady``, a broken connection): wait
  the next :class:`~brokerlb.backoff.Backoff` delay (100 ms first, as Pulsar's
  client), look the topic up (following redirects), connect to the owner.

Retriable failures (503 lookups, refused connections, a broker refusing the topic) go
on with a growing delay; the backoff starts over once a connection proved good (it
carried a frame, or stayed open a second). A permanent refusal (HTTP 4xx to the
upgrade or the lookup: unknown namespace, bad name, Exclusive subscription taken) ends
the link with that error. Subclasses react in :meth:`on_connected`, :meth:`on_frame`
and :meth:`on_disconnected`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import websockets
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException

from brokerlb.backoff import Backoff
from brokerlb.client.lookup import ws_url
from brokerlb.errors import BrokerLBError, BrokerUnreachableError, ClientClosedError, remote_error
from brokerlb.messaging import CloseReason
from brokerlb.naming import TopicName

if TYPE_CHECKING:
    from brokerlb.client.client import Client

__all__ = ["TopicLink", "LinkStats"]

logger = logging.getLogger(__name__)

#: A connection that stayed open this long (seconds) resets the backoff.
STABLE_AFTER = 1.0
#: Close events remembered per link.
MAX_CLOSE_EVENTS = 1000


def with_token(path: str, token: str | None) -> str:
    """``path`` with the ``token`` query parameter added (Pulsar's WebSocket authentication)."""
    if not token:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode({'token': token})}"


class LinkStats:
    """Counters of one link: connections made, reconnects, lookups, closes by reason.

    ``close_events`` keeps the latest closes as ``(monotonic time, reason)`` (bounded), so a
    perf run can tell what each move cost (:mod:`brokerlb.perf.moves`).
    """

    def __init__(self) -> None:
        self.connects = 0
        self.reconnects = 0
        self.lookups = 0
        self.direct_reconnects = 0
        self.closes: dict[str, int] = {}
        self.close_events: collections.deque[tuple[float, str]] = collections.deque(maxlen=MAX_CLOSE_EVENTS)

    def to_json(self) -> dict[str, Any]:
        return {
            "connects": self.connects,
            "reconnects": self.reconnects,
            "lookups": self.lookups,
            "directReconnects": self.direct_reconnects,
            "closes": dict(self.closes),
        }


class TopicLink:
    """The connection machinery shared by :class:`Producer` and :class:`Consumer` (module docstring)."""

    def __init__(self, client: Client, topic: TopicName | str, path: str) -> None:
        self.client = client
        self.topic = TopicName.parse(topic)
        self.path = path
        self.ws: Any = None
        self.stats = LinkStats()
        self.closed = False
        self.failure: BaseException | None = None
        self._backoff = Backoff(client.initial_backoff, client.max_backoff)
        self._task: asyncio.Task[None] | None = None
        self._connected_at = 0.0
        self._frames = 0
        self.connected = asyncio.Event()
        #: Web URL of the broker connected to now (``None`` between connections).
        self.broker_url: str | None = None
        self._direct_in_row = 0

    # ------------------------------------------------------------------ hooks
    async def on_connected(self, ws: Any) -> None:
        """A new connection is open (re-send what is pending, ...)."""

    def on_frame(self, text: str | bytes) -> None:
        """A frame from the broker."""

    def on_disconnected(self, reason: CloseReason) -> None:
        """The connection ended (the broker's reason; "look up again" for a broken connection)."""

    def on_failed(self, error: BaseException) -> None:
        """The link gave up for good (permanent error) or was closed."""

    # ------------------------------------------------------------------ life cycle
    async def start(self) -> None:
        """Connect (looking the topic up) and start reading; raises if the first connection fails for good."""
        await self._connect(None, first=True)
        self._task = asyncio.create_task(self._run(), name=f"link {self.topic}")

    def _tls_options(self) -> dict[str, Any]:
        """``ssl=`` for a TLS client (websockets refuses it on a ``ws://`` URL)."""
        return {"ssl": self.client.ssl} if self.client.ssl is not None else {}

    async def _connect(self, target: str | None, *, first: bool = False) -> None:
        deadline = time.monotonic() + self.client.operation_timeout
        while not self.closed:
            direct = target is not None
            try:
                if target is not None and self.client.use_tls and not target.startswith("https://"):
                    target = None  # a broker named its plain URL: look the topic up for the TLS one
                if target is None:
                    self.stats.lookups += 1
                    target = (await self.client.lookup(self.topic)).http_url
                ws = await websockets.connect(
                    ws_url(target) + with_token(self.path, self.client.token),
                    compression=None,
                    proxy=None,
                    open_timeout=self.client.connect_timeout,
                    max_size=None,
                    **self._tls_options(),
                )
            except InvalidStatus as exc:
                status = exc.response.status_code
                error = remote_error(status, _body(exc), "GET", target or "")
                if error.retriable:
                    target = None
                    await self._wait_retry(deadline, first, error)
                    continue
                raise error from exc
            except (OSError, TimeoutError, WebSocketException) as exc:
                target = None
                await self._wait_retry(deadline, first, BrokerUnreachableError(f"connect failed: {exc}"))
                continue
            except BrokerLBError as exc:
                if not exc.retriable:
                    raise
                target = None
                await self._wait_retry(deadline, first, exc)
                continue
            if direct:
                self.stats.direct_reconnects += 1
            self.stats.connects += 1
            if not first:
                self.stats.reconnects += 1
            self.ws = ws
            self.broker_url = target
            self._connected_at = time.monotonic()
            self._frames = 0
            await self.on_connected(ws)
            self.connected.set()
            return
        raise ClientClosedError(f"{type(self).__name__} of {self.topic} is closed")

    async def _wait_retry(self, deadline: float, first: bool, error: BrokerLBError) -> None:
        delay = self._backoff.next()
        if first and time.monotonic() + delay > deadline:
            raise error
        logger.debug("%s: retrying in %.3f s after %s", self.topic, delay, error)
        await asyncio.sleep(delay)

    async def _run(self) -> None:
        try:
            while not self.closed:
                reason = await self._read(self.ws)
                self.connected.clear()
                self.ws = None
                self.broker_url = None
                if self.closed:
                    break
                self.stats.closes[reason.reason] = self.stats.closes.get(reason.reason, 0) + 1
                self.stats.close_events.append((time.monotonic(), reason.reason))
                self.on_disconnected(reason)
                stable = bool(self._frames) or time.monotonic() - self._connected_at >= STABLE_AFTER
                if stable:
                    self._backoff.reset()
                    self._direct_in_row = 0
                target = reason.http_url
                if target is not None and not stable:
                    # refused right after connecting: follow a named owner once, then look up (no ping-pong
                    # between two brokers with stale ownership caches)
                    self._direct_in_row += 1
                    if self._direct_in_row > 1:
                        target = None
                if target is None:
                    await asyncio.sleep(self._backoff.next())
                await self._connect(target)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # a permanent error: the link is over
            self.failure = exc
            logger.warning("%s of %s gave up: %s", type(self).__name__, self.topic, exc)
            self.on_failed(exc)

    async def _read(self, ws: Any) -> CloseReason:
        """Read frames until the connection ends; the broker's close reason (a lookup if none)."""
        try:
            async for frame in ws:
                self._frames += 1
                self.on_frame(frame)
        except ConnectionClosed:
            pass
        close = ws.protocol.close_rcvd
        if close is None:
            return CloseReason.unloaded("connection lost")
        return CloseReason.decode(close.code, close.reason)

    async def close(self) -> None:
        """Close the connection and stop reconnecting."""
        if self.closed:
            return
        self.closed = True
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        self.ws = None
        self.connected.clear()
        self.client.forget(self)
        self.on_failed(ClientClosedError(f"{type(self).__name__} of {self.topic} was closed"))


def _body(exc: InvalidStatus) -> str:
    try:
        body = exc.response.body or b""
        import json

        return str(json.loads(body).get("reason", body.decode(errors="replace")))
    except (ValueError, AttributeError):
        return str(exc)
