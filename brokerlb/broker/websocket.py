"""Pulsar's WebSocket API on the broker's web port: ``/ws/v2/producer/...`` and ``/ws/v2/consumer/...``.

Frames, close codes and the reconnect convention are in :mod:`brokerlb.messaging.protocol`.
Per connection:

1. parse the URL (400 / 412 on a bad topic or parameter) and load the namespace's bundles
   (404 unknown namespace) -- answered as HTTP errors to the upgrade request, as Pulsar's
   proxy does;
2. ask :meth:`DataPath.open <brokerlb.broker.data_path.DataPath.open>` for the topic: not
   owned here → accept and close at once, with 4003 ``TopicRedirected`` and the owner's URL
   when this broker's ownership cache knows another owner, else 4002 ``ServiceNotReady``
   (look it up again);
3. a consumer joins its subscription (409 when an Exclusive one is taken, or the types
   differ);
4. then serve: a producer's frames are published and acknowledged in order (a fenced
   topic -- transfer in progress -- ignores them: no ack, the client re-sends after
   reconnecting); a consumer receives its messages from a writer task and acks them.

The broker closes a session when its bundle leaves (the topic's close callback, with
the reason), and the session ends when the client goes away.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from brokerlb.broker.http.access import Access, Security
from brokerlb.broker.http.errors import error_body, error_status
from brokerlb.dispatch import DispatchConsumer
from brokerlb.errors import BrokerLBError, BundleUnloadingError, DataPathProtocolError, NotFoundError
from brokerlb.messaging import (
    WS_PREFIX,
    CloseReason,
    ConsumerCommand,
    Endpoint,
    ProducerAck,
    ProducerMessage,
    parse_endpoint,
)
from brokerlb.security.authentication import first_header

if TYPE_CHECKING:
    from brokerlb.broker.data_path import DataPath, ServedTopic

__all__ = ["WebSocketEndpoint", "Connection", "ProducerSession", "ConsumerSession"]

logger = logging.getLogger(__name__)

Scope = dict[str, Any]


class Connection:
    """One ASGI WebSocket: accept, deny, send text, close -- never raising on a vanished client."""

    def __init__(self, scope: Scope, receive: Any, send: Any) -> None:
        self.scope = scope
        self._receive = receive
        self._send = send
        self.accepted = False
        self.closed = False

    async def receive_text(self) -> str | bytes | None:
        """The next frame's data, or ``None`` once the connection is closed."""
        while True:
            message = await self._receive()
            kind = message["type"]
            if kind == "websocket.receive":
                text = message.get("text")
                return text if text is not None else message.get("bytes") or b""
            if kind == "websocket.disconnect":
                self.closed = True
                return None

    async def accept(self) -> None:
        if not (self.accepted or self.closed):
            await self._send({"type": "websocket.accept"})
            self.accepted = True

    async def deny(self, exc: BaseException) -> None:
        """Refuse the upgrade with an HTTP error and ``{"reason": ...}`` (403 if the server cannot)."""
        self.closed = True
        if "websocket.http.response" in self.scope.get("extensions", {}):
            await self._send(
                {
                    "type": "websocket.http.response.start",
                    "status": error_status(exc),
                    "headers": [(b"content-type", b"application/json")],
                }
            )
            await self._send({"type": "websocket.http.response.body", "body": error_body(exc)})
        else:  # pragma: no cover - uvicorn supports the denial extension
            await self._send({"type": "websocket.close", "code": 1008})

    async def send_text(self, text: str) -> bool:
        if self.closed:
            return False
        try:
            await self._send({"type": "websocket.send", "text": text})
            return True
        except (OSError, RuntimeError):  # client gone (uvicorn's ClientDisconnected is an OSError)
            self.closed = True
            return False

    async def close(self, reason: CloseReason) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            if not self.accepted:
                await self._send({"type": "websocket.accept"})
                self.accepted = True
            await self._send({"type": "websocket.close", "code": int(reason.code), "reason": reason.encode()})
        except (OSError, RuntimeError):
            pass


class ProducerSession:
    """A producer connection: publish each frame, answer with Pulsar's ``ProducerAck``."""

    def __init__(self, conn: Connection, served: ServedTopic) -> None:
        self.conn = conn
        self.served = served

    async def close(self, reason: CloseReason) -> None:
        await self.conn.close(reason)

    async def serve(self) -> None:
        topic = self.served.topic
        topic.add_producer()
        try:
            while (text := await self.conn.receive_text()) is not None:
                try:
                    message = ProducerMessage.parse(text)
                except DataPathProtocolError as exc:
                    await self.conn.send_text(ProducerAck.error(exc.code, str(exc), exc.context).encode())
                    continue
                delivery = topic.publish(message)
                if delivery is None:
                    continue  # fenced for a transfer: ignored, the client re-sends to the new owner
                await self.conn.send_text(ProducerAck.success_text(delivery.message_id, message.context))
        finally:
            topic.remove_producer()


class ConsumerSession:
    """A consumer connection: a writer task sends its messages; acks give permits back."""

    def __init__(self, conn: Connection, served: ServedTopic, endpoint: Endpoint) -> None:
        self.conn = conn
        self.served = served
        self.subscription = endpoint.subscription or ""
        self.subscription_type = endpoint.subscription_type
        self.consumer = DispatchConsumer(
            endpoint.consumer_name or f"ws-{id(self):x}",
            priority_level=endpoint.priority_level,
            permits=endpoint.receiver_queue_size,
        )
        self._outbox: collections.deque[str] = collections.deque()
        self._ready = asyncio.Event()

    def deliver(self, message_id: str, frame: str, size: int) -> None:
        self._outbox.append(frame)
        self._ready.set()

    def join(self) -> None:
        """Attach to the subscription (raises ConsumerBusyError / ConsumerAssignError)."""
        self.served.topic.subscribe(self.subscription, self.subscription_type, self.consumer, self)

    async def close(self, reason: CloseReason) -> None:
        await self.conn.close(reason)
        self._ready.set()

    async def _write(self) -> None:
        while not self.conn.closed:
            await self._ready.wait()
            self._ready.clear()
            while self._outbox and not self.conn.closed:
                if not await self.conn.send_text(self._outbox.popleft()):
                    return

    async def serve(self) -> None:
        topic = self.served.topic
        writer = asyncio.create_task(self._write(), name=f"ws consumer writer {topic.name}")
        try:
            while (text := await self.conn.receive_text()) is not None:
                try:
                    command = ConsumerCommand.parse(text)
                except DataPathProtocolError as exc:
                    logger.debug("Ignoring a bad consumer frame on %s: %s", topic.name, exc)
                    continue
                topic.acknowledge(self.subscription, self.consumer, command.message_id)
        finally:
            writer.cancel()
            topic.unsubscribe(self.subscription, self.consumer)
            self._outbox.clear()


class _DenialLogFilter(logging.Filter):
    """Drop uvicorn's "returned without completing handshake" error after a denial response.

    uvicorn's sans-I/O WebSocket protocol logs that error whenever the app answers the
    upgrade with an HTTP response (the ``websocket.http.response`` extension), although
    the response is sent correctly. Our handler always accepts or denies, so the message
    only ever follows a deliberate denial.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing handshake" not in record.getMessage()


_DENIAL_FILTER = _DenialLogFilter()


class WebSocketEndpoint:
    """The ASGI handler for ``/ws/v2/...`` (module docstring)."""

    def __init__(
        self,
        data_path: DataPath | None,
        bundles: Any,
        owners: Any = None,
        self_id: str | None = None,
        *,
        security: Security | None = None,
    ) -> None:
        self.data_path = data_path
        self.security = security
        self.bundles = bundles
        self._owners = owners
        self._self_id = self_id
        uvicorn_errors = logging.getLogger("uvicorn.error")
        if _DENIAL_FILTER not in uvicorn_errors.filters:
            uvicorn_errors.addFilter(_DENIAL_FILTER)

    @staticmethod
    def handles(scope: Scope) -> bool:
        return scope["type"] == "websocket" and str(scope.get("path", "")).startswith(WS_PREFIX + "/")

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        conn = Connection(scope, receive, send)
        if (await receive())["type"] != "websocket.connect":
            return
        try:
            if self.data_path is None:
                raise NotFoundError(
                    "The WebSocket service is not enabled on this broker (webSocketServiceEnabled=false)"
                )
            endpoint = parse_endpoint(scope["path"], scope.get("query_string", b""))
            await self._authorize(scope, endpoint)
            await self.bundles.get(endpoint.topic.namespace)  # 404 unknown namespace; caches the ring
        except BrokerLBError as exc:
            await conn.deny(exc)
            return
        await self._serve(conn, endpoint, self.data_path)

    async def _authorize(self, scope: Scope, endpoint: Endpoint) -> None:
        """Pulsar's WebSocket service: the token from the ``token`` query parameter (or the
        ``Authorization`` header); producers need ``produce``, consumers ``consume`` (401 / 403)."""
        if self.security is None or not self.security.enabled:
            return
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        token = next(iter(query.get("token") or []), None)
        needed = Access.TOPIC_PRODUCE if endpoint.kind == "producer" else Access.TOPIC_CONSUME
        await self.security.check(
            needed,
            {"tenant": endpoint.topic.namespace.tenant},
            first_header(scope.get("headers", ()), b"authorization"),
            token,
            topic=endpoint.topic,
        )

    def _other_owner(self, bundle: str) -> str | None:
        """The broker that owns ``bundle`` now by this broker's ownership cache (enabled, not us)."""
        info = self._owners.get_owner(bundle) if self._owners is not None else None
        if info is None or info.disabled or info.broker_id == self._self_id:
            return None
        return str(info.broker_id)

    async def _serve(self, conn: Connection, endpoint: Endpoint, data_path: DataPath) -> None:
        try:
            served = data_path.open(endpoint.topic)
        except BundleUnloadingError:
            await conn.close(data_path.refusal(endpoint.topic, self._other_owner))
            return
        session: ProducerSession | ConsumerSession
        if endpoint.kind == "producer":
            session = ProducerSession(conn, served)
        else:
            session = ConsumerSession(conn, served, endpoint)
            try:
                session.join()
            except BrokerLBError as exc:
                await conn.deny(exc)
                return
        data_path.add_session(served, session)
        try:
            await conn.accept()  # a no-op if the bundle left meanwhile (the session was closed)
            await session.serve()
        finally:
            data_path.remove_session(served, session)
