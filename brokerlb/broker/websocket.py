"""Pulsar's WebSocket API on the broker's web port: ``/ws/v2/producer|consumer|reader/...``.

Frames, close codes and the reconnect convention are in :mod:`brokerlb.messaging.protocol`;
the sessions serve the same topics as the binary protocol (the topic engine,
:mod:`brokerlb.messaging.topic`). Per connection:

1. parse the URL (400 / 412 on a bad topic or parameter) and load the namespace's bundles
   (404 unknown namespace) -- answered as HTTP errors to the upgrade request, as Pulsar's
   proxy does;
2. ask :meth:`DataPath.open <brokerlb.broker.data.data_path.DataPath.open>` for the topic: not
   owned here → accept and close at once, with 4003 ``TopicRedirected`` and the owner's URL
   when this broker's ownership records name another owner, else 4002 ``ServiceNotReady``
   (look it up again);
3. a producer registers its name (``producerName``; 409 when taken), a consumer joins its
   subscription (409 when an Exclusive one is taken, or the types differ), a reader opens a
   non-durable subscription at ``messageId`` (``earliest``, ``latest`` or an id; it receives
   what comes after that id);
4. then serve: a producer's frames are stored (as Pulsar message metadata and payload, so
   binary-protocol consumers read them too) and acknowledged in order -- a fenced topic (a
   move in progress) ignores them: no ack, the client re-sends after reconnecting; a
   consumer receives its messages (``redeliveryCount`` included; a binary producer's batch
   as one frame per message) from a writer task. Its acks and negative acks give a permit
   back; a negative ack redelivers after ``negativeAckRedeliveryDelay`` ms (Pulsar's one
   minute by default). With ``pullMode=true`` messages flow only against
   ``{"type": "permit", "permitMessages": N}``. A session whose outbox holds more than
   ``OUTBOX_HIGH`` characters is skipped by dispatch until its writer brings it under
   ``OUTBOX_LOW`` (the binary protocol's writability: a client that does not read cannot grow
   the broker, however many nacks give permits back).

The broker closes a session when its bundle leaves (the topic's close callback, with
the reason), when its token has expired (code 1008, checked every
``authenticationRefreshCheckSeconds``), and the session ends when the client goes away.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from brokerlb.broker.http.access import Access, Security
from brokerlb.broker.http.errors import error_body, error_status
from brokerlb.clock import SYSTEM_CLOCK, Clock, TimerHandle
from brokerlb.dispatch import DispatchConsumer
from brokerlb.errors import (
    BrokerLBError,
    BundleUnloadingError,
    DataPathProtocolError,
    InvalidInputError,
    NotFoundError,
)
from brokerlb.limits import InputLimits
from brokerlb.messaging import (
    WS_PREFIX,
    BacklogQuotaExceeded,
    CloseReason,
    ConsumerCommand,
    Endpoint,
    Entry,
    ProducerAck,
    ProducerMessage,
    WebSocketError,
    consumer_frames,
    encode_message_id,
    parse_endpoint,
    parse_message_id,
    publish_section,
)
from brokerlb.security.authentication import Credentials, first_header

if TYPE_CHECKING:
    from brokerlb.broker.data.data_path import DataPath, ServedTopic

__all__ = ["WebSocketEndpoint", "Connection", "ProducerSession", "ConsumerSession"]

logger = logging.getLogger(__name__)

Scope = dict[str, Any]
#: a consumer session's outbox bounds, in characters (as the binary protocol's write-buffer marks)
OUTBOX_HIGH, OUTBOX_LOW = 64 * 1024, 32 * 1024


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
    """A producer connection: each frame is stored and answered with Pulsar's ``ProducerAck``."""

    _names = itertools.count()

    def __init__(self, conn: Connection, served: ServedTopic, endpoint: Endpoint) -> None:
        self.conn = conn
        self.served = served
        self.name = endpoint.producer_name or f"ws-producer-{next(self._names)}-{id(self):x}"
        self.sequence = 0
        self._late: set[asyncio.Task[bool]] = set()

    def join(self) -> None:
        """Register the producer's name on the topic (``ProducerBusyError`` when taken)."""
        self.served.topic.add_producer(self.name, self)

    async def close(self, reason: CloseReason) -> None:
        await self.conn.close(reason)

    def _released(self, context: str | None) -> Any:
        """A publish's ack, sent once the entry is committed (to the storage tier, or after the
        backlog quota ``producer_request_hold`` let it in)."""
        partition = self.served.topic.partition

        def ack(ledger_id: int, entry_id: int) -> None:
            text = ProducerAck.success_text(encode_message_id(ledger_id, entry_id, partition), context)
            task = asyncio.ensure_future(self.conn.send_text(text))
            self._late.add(task)
            task.add_done_callback(self._late.discard)

        return ack

    async def serve(self) -> None:
        topic = self.served.topic
        clock_ms = self.served.now_ms
        try:
            while (text := await self.conn.receive_text()) is not None:
                try:
                    message = ProducerMessage.parse(text)
                    section = publish_section(
                        message, producer_name=self.name, sequence_id=self.sequence, publish_time=clock_ms()
                    )
                    self.sequence += 1
                    entry_id = topic.publish(section, 1, self._released(message.context))
                except DataPathProtocolError as exc:
                    await self.conn.send_text(ProducerAck.error(exc.code, str(exc), exc.context).encode())
                    continue
                except BacklogQuotaExceeded as exc:
                    await self.conn.send_text(
                        ProducerAck.error(WebSocketError.UNKNOWN_ERROR, str(exc), message.context).encode()
                    )
                    continue
                if entry_id is None:
                    continue  # being committed, held, or fenced for a move (the client re-sends)
                ledger_id, entry = topic.position_of(entry_id)
                await self.conn.send_text(
                    ProducerAck.success_text(
                        encode_message_id(ledger_id, entry, topic.partition), message.context
                    )
                )
        finally:
            topic.remove_producer(self.name, self)


class ConsumerSession:
    """A consumer (or reader) connection: a writer task sends its messages; acks, negative acks and
    ``permit`` commands come back (module docstring)."""

    def __init__(
        self, conn: Connection, served: ServedTopic, endpoint: Endpoint, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.conn = conn
        self.served = served
        self._clock = clock
        self.reader = endpoint.kind == "reader"
        self.subscription = endpoint.subscription or f"reader-{id(self):x}"
        self.subscription_type = "Exclusive" if self.reader else endpoint.subscription_type
        self.durable = not self.reader and endpoint.durable
        self.pull_mode = not self.reader and endpoint.pull_mode
        self.nack_delay = 0.0 if self.reader else endpoint.negative_ack_redelivery_delay_ms / 1000
        self.consumer = DispatchConsumer(
            endpoint.consumer_name or f"ws-{id(self):x}",
            priority_level=0 if self.reader else endpoint.priority_level,
            permits=0 if self.pull_mode else endpoint.receiver_queue_size,
        )
        self.start: tuple[int, int] | str | None = None
        #: a reader skips what is not after its start id (the engine starts at it, inclusively)
        self._skip_through: tuple[int, int, int] | None = None
        if self.reader:
            value = endpoint.start_message_id
            if value in ("earliest", "latest"):
                self.start = value
            else:
                start = parse_message_id(value)
                self.start = (start.ledgerId, start.entryId)
                self._skip_through = (
                    start.ledgerId,
                    start.entryId,
                    -1 if start.batch_index is None else start.batch_index,
                )
        self._outbox: collections.deque[str] = collections.deque()
        #: characters in the outbox: above OUTBOX_HIGH the consumer is skipped by dispatch until the
        #: writer brings them under OUTBOX_LOW (a client that does not read cannot grow the broker)
        self._queued = 0
        self._ready = asyncio.Event()
        self._timers: set[TimerHandle] = set()

    # the engine's sink
    def deliver(self, entry: Entry, redelivery_count: int, unacked_mask: int | None) -> None:
        topic = self.served.topic
        try:
            frames = consumer_frames(
                entry.section,
                ledger_id=entry.ledger_id,
                entry_id=entry.entry_id,
                partition=topic.partition,
                redelivery_count=redelivery_count,
                unacked_mask=unacked_mask,
            )
        except BrokerLBError as exc:
            logger.warning(
                "Cannot pass entry %d of %s to a WebSocket consumer: %s", entry.entry_id, topic.name, exc
            )
            return
        for message_id, frame in frames:
            if self._skip_through is not None and self._before_start(message_id):
                self.consumer.permits += 1
                continue
            self._outbox.append(frame)
            self._queued += len(frame)
        if self._queued > OUTBOX_HIGH:
            self.consumer.writable = False
        self._ready.set()

    def _before_start(self, message_id: str) -> bool:
        assert self._skip_through is not None
        mid = parse_message_id(message_id)
        position = (mid.ledgerId, mid.entryId, -1 if mid.batch_index is None else mid.batch_index)
        if position <= self._skip_through:
            return True
        self._skip_through = None
        return False

    def active_changed(self, is_active: bool) -> None:
        pass  # Pulsar's WebSocket API has no frame for it

    def join(self) -> None:
        """Attach to the subscription (raises ConsumerBusyError / ConsumerAssignError)."""
        self.served.topic.subscribe(
            self.subscription,
            self.subscription_type,
            self.consumer,
            self,
            durable=self.durable,
            start=self.start,
        )

    async def close(self, reason: CloseReason) -> None:
        await self.conn.close(reason)
        self._ready.set()

    async def _write(self) -> None:
        while not self.conn.closed:
            await self._ready.wait()
            self._ready.clear()
            while self._outbox and not self.conn.closed:
                frame = self._outbox.popleft()
                self._queued -= len(frame)
                if not await self.conn.send_text(frame):
                    return
                if not self.consumer.writable and self._queued <= OUTBOX_LOW:
                    self.consumer.writable = True
                    self.served.topic.flow(self.subscription, self.consumer, 0)  # what waited goes out

    def _command(self, command: ConsumerCommand) -> None:
        topic = self.served.topic
        if command.type == "permit":
            if self.pull_mode:
                topic.flow(self.subscription, self.consumer, command.permits)
            return
        mid = parse_message_id(command.message_id)
        mask = None
        if mid.batch_index is not None and mid.batch_size:
            mask = ((1 << mid.batch_size) - 1) & ~(1 << mid.batch_index)
        if command.type == "ack":
            topic.acknowledge(self.subscription, self.consumer, [(mid.ledgerId, mid.entryId, mask)])
        elif self.nack_delay > 0:
            handle = self._clock.call_later(self.nack_delay, self._redeliver, (mid.ledgerId, mid.entryId))
            self._timers.add(handle)
        else:
            self._redeliver((mid.ledgerId, mid.entryId))
        if not self.pull_mode:
            topic.flow(self.subscription, self.consumer, 1)

    def _redeliver(self, message_id: tuple[int, int]) -> None:
        if not self.conn.closed:
            self.served.topic.redeliver(self.subscription, self.consumer, [message_id])

    async def serve(self) -> None:
        topic = self.served.topic
        writer = asyncio.create_task(self._write(), name=f"ws consumer writer {topic.name}")
        try:
            while (text := await self.conn.receive_text()) is not None:
                try:
                    self._command(ConsumerCommand.parse(text))
                except (DataPathProtocolError, InvalidInputError) as exc:
                    logger.debug("Ignoring a bad consumer frame on %s: %s", topic.name, exc)
        finally:
            writer.cancel()
            for handle in self._timers:
                handle.cancel()
            topic.detach(self.subscription, self.consumer)
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
        limits: InputLimits | None = None,
        auth_refresh_check_seconds: float = 60.0,
    ) -> None:
        self.data_path = data_path
        self.security = security
        #: ``authenticationRefreshCheckSeconds``: how often an open session checks its credentials' expiry
        self.auth_refresh_check_seconds = auth_refresh_check_seconds
        self.limits = limits if limits is not None else InputLimits()
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
            # the name bound and the credentials first: nothing of the path is parsed (or cached) before
            self.limits.check_path(scope.get("raw_path") or str(scope["path"]).encode())
            credentials = self._authenticate(scope)
            endpoint = parse_endpoint(scope["path"], scope.get("query_string", b""))
            await self._authorize(endpoint, credentials.role)
            await self.bundles.get(endpoint.topic.namespace)  # 404 unknown namespace; caches the ring
        except BrokerLBError as exc:
            await conn.deny(exc)
            return
        await self._serve(conn, endpoint, self.data_path, credentials)

    def _authenticate(self, scope: Scope) -> Credentials:
        """Pulsar's WebSocket service: the token from the ``token`` query parameter (or the
        ``Authorization`` header); 401 without a valid one."""
        if self.security is None or not self.security.enabled:
            return Credentials(None)
        query = parse_qs(bytes(scope.get("query_string", b"")).decode("latin-1"))
        token = next(iter(query.get("token") or []), None)
        return self.security.credentials(
            Access.TOPIC_LOOKUP, first_header(scope.get("headers", ()), b"authorization"), token
        )

    async def _authorize(self, endpoint: Endpoint, role: str | None) -> None:
        """Producers need ``produce``, consumers and readers ``consume`` (403)."""
        if self.security is None or not self.security.enabled:
            return
        needed = Access.TOPIC_PRODUCE if endpoint.kind == "producer" else Access.TOPIC_CONSUME
        await self.security.authorize(
            needed, {"tenant": endpoint.topic.namespace.tenant}, role, endpoint.topic
        )

    def _other_owner(self, bundle: str) -> str | None:
        """The broker that owns ``bundle`` now by this broker's ownership records (not us)."""
        owner = self._owners.owner(bundle).broker if self._owners is not None else None
        return None if owner is None or owner == self._self_id else str(owner)

    async def _expire(self, conn: Connection, credentials: Credentials, clock: Clock) -> None:
        """Close the session once its credentials have expired, checked every
        ``authenticationRefreshCheckSeconds`` (a WebSocket client cannot refresh them: it reconnects)."""
        while not conn.closed:
            await clock.sleep(self.auth_refresh_check_seconds)
            if credentials.expired(clock.now_ms() / 1000) and not conn.closed:
                logger.info("Closing the WebSocket session of %s: its credentials expired", credentials.role)
                await conn.close(CloseReason.credentials_expired("the session's credentials expired"))
                return

    async def _serve(
        self, conn: Connection, endpoint: Endpoint, data_path: DataPath, credentials: Credentials
    ) -> None:
        try:
            served = await data_path.open(endpoint.topic)
        except BundleUnloadingError:
            await conn.close(data_path.refusal(endpoint.topic, self._other_owner))
            return
        except BrokerLBError as exc:  # storage unreachable: the client retries
            await conn.deny(exc)
            return
        session: ProducerSession | ConsumerSession
        if endpoint.kind == "producer":
            session = ProducerSession(conn, served, endpoint)
        else:
            session = ConsumerSession(conn, served, endpoint, data_path.clock)
        try:
            session.join()
            if isinstance(session, ConsumerSession) and session.durable and served.ledger is not None:
                await served.ledger.flush_cursors()  # a new durable subscription exists once stored
        except BrokerLBError as exc:
            await conn.deny(exc)
            return
        data_path.add_session(served, session)
        expiry = (
            asyncio.ensure_future(self._expire(conn, credentials, data_path.clock))
            if credentials.expires_at is not None
            else None
        )
        try:
            await conn.accept()  # a no-op if the bundle left meanwhile (the session was closed)
            await session.serve()
        finally:
            if expiry is not None:
                expiry.cancel()
            data_path.remove_session(served, session)
