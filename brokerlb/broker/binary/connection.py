"""One binary-protocol connection: Pulsar's commands on top of the topic engine.

:class:`BinaryConnection` is an :class:`asyncio.Protocol`: bytes in, frames cut and checked by
:class:`~brokerlb.messaging.frames.FrameDecoder`, one handler per command, frames out in one
write per event-loop turn. Commands (Pulsar's ``ServerCnx``):

* ``CONNECT`` → authentication (:mod:`~brokerlb.broker.binary.context`) → ``CONNECTED`` with the
  negotiated protocol version and ``maxMessageSize``; any other command first is refused and
  the connection closed;
* ``PING`` → ``PONG``; the broker pings a quiet connection every ``keepAliveIntervalSeconds`` and
  closes it when the previous ping is still unanswered (any frame counts as an answer);
* expiring credentials (a token's ``exp``) are checked every ``authenticationRefreshCheckSeconds``
  (Pulsar's ``refreshAuthenticationCredentials``): once expired, a client that announced
  ``supports_auth_refresh`` gets ``AUTH_CHALLENGE`` (``PulsarAuthRefresh``) and must answer
  ``AUTH_RESPONSE`` with valid credentials of the same role before the next check; a client that
  did not announce it, no answer, or bad credentials: the connection is closed;
* ``LOOKUP`` → the broker's lookup service (the HTTP lookup's resolution): ``Connect`` with the
  owner's ``pulsarServiceUrl``, ``Redirect`` to the leader or the chosen broker (with
  ``authoritative``), ``Failed`` with the error; ``PARTITIONED_METADATA``;
  ``GET_TOPICS_OF_NAMESPACE`` (partitioned topics of the namespace and the topics served here);
* ``PRODUCER`` (``ServiceNotReady`` when this broker does not own the topic's bundle, so the
  client looks it up again; ``ProducerBusy`` when the name is taken on the topic), ``SEND``
  (the payload section is stored as received -- batches included; ``ChecksumError`` when its
  CRC-32C does not match; ``NotAllowedError`` when its ``num_messages`` cannot fit in its bytes,
  6 a message, since the count drives permits, rates and splits; no receipt while the topic is
  fenced for a move), ``CLOSE_PRODUCER``;
* ``SUBSCRIBE`` (the four subscription types, durable or not, initial position, start message
  id; ``ConsumerBusy``), ``FLOW``, ``ACK`` (individual, cumulative, batch ack sets, with an
  ``ACK_RESPONSE`` when the client asks), ``REDELIVER_UNACKNOWLEDGED_MESSAGES``, ``UNSUBSCRIBE``,
  ``SEEK`` (the subscription's consumers are closed afterwards, as Pulsar does, and come back at
  the new position), ``GET_LAST_MESSAGE_ID``, ``CLOSE_CONSUMER``; the broker sends ``MESSAGE``
  (the producer's payload section unchanged, with ``redelivery_count``) and
  ``ACTIVE_CONSUMER_CHANGE``;
* a command brokerlb does not serve (transactions, schemas, topic watchers ...) gets
  ``ERROR{NotAllowedError}`` naming it when it carries a request id.

When a bundle moves, the data path closes the topic's sessions: each producer and consumer gets
``CLOSE_PRODUCER`` / ``CLOSE_CONSUMER`` -- with ``assignedBrokerServiceUrl`` for a transfer
(PIP-307: the client connects straight there), without for an unload (it looks the topic up).

Bad input never takes the listener down: a frame that cannot be read gets ``ERROR`` and the
connection is closed (the byte stream cannot be trusted any more); a bad command gets its
error and the connection goes on.

**Bounded memory.** What one connection can make the broker hold is bounded:

* *outbound*: frames queued for the peer (in this turn's batch and in the transport's buffer)
  above ``pulsarChannelWriteBufferHighWaterMark`` make the connection *unwritable* (Netty's
  channel writability, as in Pulsar) until they drain below
  ``pulsarChannelWriteBufferLowWaterMark``: its consumers are skipped by dispatch (their
  deliveries, redeliveries included, wait; apache/pulsar#6740) and, with
  ``pulsarChannelPauseReceivingRequestsIfUnwritable``, the broker stops reading its requests. A
  connection still unwritable after a whole ``keepAliveIntervalSeconds`` -- a peer that does not
  read -- is closed and its buffers dropped;
* *inbound*: a frame is at most ``maxMessageSize`` plus 10 KB, and a frame that has begun must
  complete within ``brokerlbFrameCompletionTimeoutSeconds`` or the connection is closed;
* connections: ``brokerMaxConnections`` and ``brokerMaxConnectionsPerIp``
  (:mod:`~brokerlb.broker.binary.limits`).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import socket
from collections.abc import Callable
from typing import Any, cast

from brokerlb.broker.binary.context import BinaryContext
from brokerlb.broker.binary.errors import server_error_of
from brokerlb.broker.data.data_path import ServedTopic
from brokerlb.clock import TimerHandle
from brokerlb.dispatch import DispatchConsumer, HashRange, KeySharedMode
from brokerlb.errors import AuthorizationError, BinaryProtocolError, BrokerLBError
from brokerlb.messaging import EARLIEST, LATEST, CloseReason, Entry
from brokerlb.messaging.frames import (
    Frame,
    FrameDecoder,
    checksum_ok,
    crc32c,
    message_frame,
    read_metadata,
    send_receipt_frame,
    simple_frame,
)
from brokerlb.messaging.topic import BacklogQuotaExceeded
from brokerlb.messaging.wire import (
    AuthData,
    CommandAck,
    CommandAckResponse,
    CommandActiveConsumerChange,
    CommandAuthChallenge,
    CommandAuthResponse,
    CommandCloseConsumer,
    CommandCloseProducer,
    CommandConnect,
    CommandConnected,
    CommandError,
    CommandFlow,
    CommandGetLastMessageId,
    CommandGetLastMessageIdResponse,
    CommandGetTopicsOfNamespace,
    CommandGetTopicsOfNamespaceResponse,
    CommandLookupTopic,
    CommandLookupTopicResponse,
    CommandPartitionedTopicMetadata,
    CommandPartitionedTopicMetadataResponse,
    CommandPing,
    CommandPong,
    CommandProducer,
    CommandProducerSuccess,
    CommandRedeliverUnacknowledgedMessages,
    CommandSeek,
    CommandSend,
    CommandSendError,
    CommandSubscribe,
    CommandSuccess,
    CommandType,
    CommandUnsubscribe,
    FeatureFlags,
    Message,
    MessageIdData,
    ServerError,
)
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.safe_regex import check_pattern, compile_pattern
from brokerlb.security.authentication import Credentials

__all__ = ["BinaryConnection", "PROTOCOL_VERSION", "SUBSCRIPTION_TYPE_NAMES"]

logger = logging.getLogger(__name__)

#: The newest protocol version brokerlb speaks (``ProtocolVersion.v21``).
PROTOCOL_VERSION = 21
#: ``CommandSubscribe.SubType`` -> brokerlb's subscription type names.
SUBSCRIPTION_TYPE_NAMES = {0: "Exclusive", 1: "Shared", 2: "Failover", 3: "Key_Shared"}
#: request id of broker-initiated CLOSE_PRODUCER / CLOSE_CONSUMER (Pulsar sends -1)
_NO_REQUEST = -1
_WORD = (1 << 64) - 1
#: the challenge data of a credentials refresh (Pulsar's ``AuthData.REFRESH_AUTH_DATA``)
AUTH_REFRESH_DATA = b"PulsarAuthRefresh"
#: the least bytes one message of a batch takes: its 4-byte metadata size and a SingleMessageMetadata
#: holding at least its required payload_size (tag and varint: 2 bytes)
_MIN_BATCHED_MESSAGE_BYTES = 6
#: producer ids a connection remembers as closed (their in-flight SENDs are ignored, not refused)
_CLOSED_PRODUCERS_KEPT = 1000


def _mask_of(words: list[int]) -> int | None:
    """Pulsar's ``ack_set`` (BitSet long words, set bits = still unacknowledged) as one integer."""
    if not words:
        return None
    mask = 0
    for i, word in enumerate(words):
        mask |= (word & _WORD) << (64 * i)
    return mask


def _words_of(mask: int | None) -> tuple[int, ...]:
    if mask is None:
        return ()
    words = []
    while True:
        word = mask & _WORD
        words.append(word - (1 << 64) if word >= 1 << 63 else word)
        mask >>= 64
        if not mask:
            return tuple(words)


class BinaryProducer:
    """A producer on a connection: its topic and name; closed by the broker on a move."""

    __slots__ = ("conn", "producer_id", "served", "name")

    def __init__(self, conn: BinaryConnection, producer_id: int, served: ServedTopic, name: str) -> None:
        self.conn = conn
        self.producer_id = producer_id
        self.served = served
        self.name = name

    async def close(self, reason: CloseReason) -> None:
        """The bundle moved: tell the client (with the new owner's URL on a transfer)."""
        if self.conn.producers.get(self.producer_id) is not self:
            return
        self.conn.drop_producer(self)
        self.conn.send(
            simple_frame(
                CommandCloseProducer(
                    self.producer_id,
                    _NO_REQUEST,
                    assignedBrokerServiceUrl=None if reason.lookup else reason.broker_url,
                )
            )
        )


class BinaryConsumer:
    """A consumer on a connection: the engine's sink (its MESSAGE frames) and its session."""

    __slots__ = ("conn", "consumer_id", "served", "subscription", "dispatch")

    def __init__(
        self,
        conn: BinaryConnection,
        consumer_id: int,
        served: ServedTopic,
        subscription: str,
        dispatch: DispatchConsumer,
    ) -> None:
        self.conn = conn
        self.consumer_id = consumer_id
        self.served = served
        self.subscription = subscription
        self.dispatch = dispatch

    def deliver(self, entry: Entry, redelivery_count: int, unacked_mask: int | None) -> None:
        self.conn.send(
            message_frame(
                self.consumer_id,
                entry.ledger_id,
                entry.entry_id,
                self.served.topic.partition,
                entry.section,
                redelivery_count,
                _words_of(unacked_mask),
            )
        )

    def active_changed(self, is_active: bool) -> None:
        self.conn.send(simple_frame(CommandActiveConsumerChange(self.consumer_id, is_active)))

    async def close(self, reason: CloseReason) -> None:
        self.close_now(reason)

    def close_now(self, reason: CloseReason) -> None:
        if self.conn.consumers.get(self.consumer_id) is not self:
            return
        self.conn.drop_consumer(self)
        self.conn.send(
            simple_frame(
                CommandCloseConsumer(
                    self.consumer_id,
                    _NO_REQUEST,
                    assignedBrokerServiceUrl=None if reason.lookup else reason.broker_url,
                )
            )
        )


class BinaryConnection(asyncio.Protocol):
    """One client connection (module docstring)."""

    def __init__(self, context: BinaryContext, on_closed: Callable[[BinaryConnection], None]) -> None:
        self.ctx = context
        self._on_closed = on_closed
        self.decoder = FrameDecoder(context.max_message_size)
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.connected = False  # CONNECT answered
        self.closed = False
        self.role: str | None = None
        #: what CONNECT (or the last AUTH_RESPONSE) authenticated, with its expiry
        self.credentials = Credentials(None)
        self._auth_method = ""
        self._supports_auth_refresh = False
        self._auth_challenge_pending = False
        self._auth_check: TimerHandle | None = None
        self.protocol_version = 0
        self.producers: dict[int, BinaryProducer] = {}
        self.consumers: dict[int, BinaryConsumer] = {}
        self._pending_producers: set[int] = set()
        #: producer ids this broker closed (a move), whose in-flight SENDs are ignored (Pulsar's
        #: ``recentlyClosedProducers``); bounded
        self._closed_producers: collections.OrderedDict[int, None] = collections.OrderedDict()
        self._out: list[bytes] = []
        #: bytes in ``_out`` (not yet handed to the transport)
        self._queued = 0
        #: outbound backpressure (module docstring)
        self.writable = True
        self._transport_paused = False
        self._unwritable_since: float | None = None
        self._reading_paused = False
        self._partial_frame: TimerHandle | None = None
        self._flush_scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiting_for_pong = False
        self._keep_alive: TimerHandle | None = None
        self._handlers: dict[int, Callable[[Any], None]] = {
            CommandType.PING: self._on_ping,
            CommandType.PONG: self._on_pong,
            CommandType.FLOW: self._on_flow,
            CommandType.ACK: self._on_ack,
            CommandType.LOOKUP: self._on_lookup,
            CommandType.PARTITIONED_METADATA: self._on_partitioned_metadata,
            CommandType.GET_TOPICS_OF_NAMESPACE: self._on_topics_of_namespace,
            CommandType.PRODUCER: self._on_producer,
            CommandType.SUBSCRIBE: self._on_subscribe,
            CommandType.REDELIVER_UNACKNOWLEDGED_MESSAGES: self._on_redeliver,
            CommandType.UNSUBSCRIBE: self._on_unsubscribe,
            CommandType.CLOSE_PRODUCER: self._on_close_producer,
            CommandType.CLOSE_CONSUMER: self._on_close_consumer,
            CommandType.GET_LAST_MESSAGE_ID: self._on_get_last_message_id,
            CommandType.SEEK: self._on_seek,
            CommandType.CONNECT: self._on_connect,
            CommandType.AUTH_RESPONSE: self._on_auth_response,
        }

    # ------------------------------------------------------------------ transport
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not subclasses
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        refused = self.ctx.connection_limits.admit(self)
        if refused is not None:  # Pulsar's ServerCnx.channelActive: ERROR, then close
            logger.info("Refusing connection from %s: %s", self.peer, refused)
            self.closed = True
            self.transport.write(
                simple_frame(CommandError(_NO_REQUEST, int(ServerError.NotAllowedError), refused))
            )
            self.transport.close()
            return
        self.transport.set_write_buffer_limits(
            high=self.ctx.write_buffer_high_water_mark, low=self.ctx.write_buffer_low_water_mark
        )
        self._schedule_keep_alive()

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            frames = self.decoder.feed(data)
        except BinaryProtocolError as exc:
            self._fatal(exc)
            return
        self._watch_partial_frame()
        for frame in frames:
            if self.closed:
                break
            self._waiting_for_pong = False
            try:
                self._dispatch(frame)
            except BinaryProtocolError as exc:
                if exc.fatal:
                    self._fatal(exc)
                    return
                self._error(_request_id(frame), server_error_of(exc), str(exc))
            except Exception as exc:  # a bug must cost one command, never the listener
                logger.exception("Command %s from %s failed", _type_name(frame.type), self.peer)
                self._error(_request_id(frame), ServerError.UnknownError, f"{type(exc).__name__}: {exc}")
        self.flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self._teardown()
        self.ctx.connection_limits.release(self)  # also a connection refused at once

    def send(self, frame: bytes) -> None:
        """Queue a frame; everything queued in one event-loop turn goes out in one write."""
        if self.closed:
            return
        self._out.append(frame)
        self._queued += len(frame)
        if self.writable and self._queued > self.ctx.write_buffer_high_water_mark:
            self._set_writable(False)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        if self._out and self.transport is not None and not self.closed:
            out, self._out = self._out, []
            self._queued = 0
            self.transport.write(b"".join(out) if len(out) > 1 else out[0])
            if not self.writable and not self._transport_paused and not self.closed:
                self._set_writable(True)  # the batch went out (or into a buffer under the mark)

    # ------------------------------------------------------------------ backpressure
    def pause_writing(self) -> None:
        """The transport's buffer passed the high-water mark (asyncio's flow control)."""
        self._transport_paused = True
        self._set_writable(False)

    def resume_writing(self) -> None:
        """The transport's buffer drained below the low-water mark."""
        self._transport_paused = False
        if self._queued <= self.ctx.write_buffer_high_water_mark:
            self._set_writable(True)

    def _set_writable(self, writable: bool) -> None:
        if writable == self.writable or self.closed:
            return
        self.writable = writable
        self._unwritable_since = None if writable else self.ctx.clock.monotonic()
        for consumer in list(self.consumers.values()):
            consumer.dispatch.writable = writable
        if self.ctx.pause_reading_if_unwritable and self.transport is not None:
            if not writable and not self._reading_paused:
                self._reading_paused = True
                self.transport.pause_reading()
            elif writable and self._reading_paused:
                self._reading_paused = False
                self.transport.resume_reading()
        if writable:  # what waited for this connection goes out now
            for consumer in list(self.consumers.values()):
                consumer.served.topic.flow(consumer.subscription, consumer.dispatch, 0)

    def _watch_partial_frame(self) -> None:
        """A frame that has begun must complete within ``brokerlbFrameCompletionTimeoutSeconds``."""
        if self.decoder.buffered == 0:
            if self._partial_frame is not None:
                self._partial_frame.cancel()
                self._partial_frame = None
        elif self._partial_frame is None:
            self._partial_frame = self.ctx.clock.call_later(
                self.ctx.frame_completion_timeout, self._partial_frame_expired, self.decoder.frames_seen
            )

    def _partial_frame_expired(self, frames_seen: int) -> None:
        self._partial_frame = None
        if self.closed or self.decoder.buffered == 0:
            return
        if self.decoder.frames_seen != frames_seen or self._reading_paused:
            # that frame completed (the one now begun gets its time), or the broker itself stopped
            # reading (backpressure: the drain rule of the keep-alive check applies instead)
            self._watch_partial_frame()
            return
        self._fatal(
            BinaryProtocolError(
                "NotAllowedError",
                f"A frame was not completed within {self.ctx.frame_completion_timeout:g} s "
                f"({self.decoder.buffered} bytes received; brokerlbFrameCompletionTimeoutSeconds)",
                fatal=True,
            )
        )

    def close(self) -> None:
        """Close the connection (after sending what is queued; at once when the peer does not read)."""
        if self.closed:
            return
        self.flush()
        self._teardown()
        if self.transport is not None:
            if self.writable:
                self.transport.close()
            else:
                self.transport.abort()  # a peer that does not read would keep the buffer for ever

    def _teardown(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._out.clear()
        self._queued = 0
        self.decoder.clear()
        self.ctx.connection_limits.release(self)
        if self._partial_frame is not None:
            self._partial_frame.cancel()
        if self._keep_alive is not None:
            self._keep_alive.cancel()
        if self._auth_check is not None:
            self._auth_check.cancel()
        for task in list(self._tasks):
            task.cancel()
        for producer in list(self.producers.values()):
            self.drop_producer(producer)
        for consumer in list(self.consumers.values()):
            self.drop_consumer(consumer)
        self._on_closed(self)

    def _fatal(self, exc: BinaryProtocolError) -> None:
        logger.warning("Closing connection from %s: %s", self.peer, exc)
        self._error(0, server_error_of(exc), str(exc))
        self.close()

    def _error(self, request_id: int, error: ServerError, message: str) -> None:
        self.send(simple_frame(CommandError(request_id, int(error), message)))

    def _spawn(self, coro: Any) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ------------------------------------------------------------------ keep-alive
    def _schedule_keep_alive(self) -> None:
        self._keep_alive = self.ctx.clock.call_later(self.ctx.keep_alive_seconds, self._keep_alive_check)

    def _keep_alive_check(self) -> None:
        if self.closed:
            return
        since = self._unwritable_since
        if since is not None and self.ctx.clock.monotonic() - since >= self.ctx.keep_alive_seconds:
            logger.info(
                "Closing connection from %s: it has not read what the broker sent for %.0f s",
                self.peer,
                self.ctx.clock.monotonic() - since,
            )
            self.close()
            return
        if not self.connected or self._waiting_for_pong:
            logger.info("Closing connection from %s: no answer within keepAliveIntervalSeconds", self.peer)
            self.close()
            return
        self._waiting_for_pong = True
        self.send(simple_frame(CommandPing()))
        self._schedule_keep_alive()

    # ------------------------------------------------------------------ dispatch
    def _dispatch(self, frame: Frame) -> None:
        if not self.connected and frame.type != CommandType.CONNECT:
            raise BinaryProtocolError(
                "NotAllowedError",
                f"{_type_name(frame.type)} before CONNECT: the first command must be CONNECT",
                fatal=True,
            )
        if frame.type == CommandType.SEND and frame.command is not None:
            self._on_send(frame)
            return
        handler = self._handlers.get(frame.type)
        if handler is None or frame.command is None:
            if frame.request_id is None and frame.command is None:
                logger.info("Ignoring %s from %s (not served by brokerlb)", _type_name(frame.type), self.peer)
                return
            raise BinaryProtocolError(
                "NotAllowedError", f"{_type_name(frame.type)} is not supported by this broker (brokerlb)"
            )
        handler(frame.command)

    # ------------------------------------------------------------------ connection
    def _on_connect(self, cmd: CommandConnect) -> None:
        if self.connected:
            raise BinaryProtocolError("NotAllowedError", "CONNECT was already received on this connection")
        try:
            self.credentials = self.ctx.authenticator.authenticate(cmd.auth_method_name, cmd.auth_data)
        except BrokerLBError as exc:
            self._error(0, server_error_of(exc), str(exc))
            self.close()
            return
        self.role = self.credentials.role
        self._auth_method = cmd.auth_method_name or ""
        flags = cmd.feature_flags
        self._supports_auth_refresh = bool(flags is not None and flags.supports_auth_refresh)
        self.protocol_version = min(cmd.protocol_version or 0, PROTOCOL_VERSION)
        self.connected = True
        if self.credentials.expires_at is not None:
            self._schedule_auth_check()
        self.send(
            simple_frame(
                CommandConnected(
                    self.ctx.server_version,
                    self.protocol_version,
                    self.ctx.max_message_size,
                    FeatureFlags(supports_get_partitioned_metadata_without_auto_creation=True),
                )
            )
        )

    # ------------------------------------------------------------------ credentials' expiry
    def _schedule_auth_check(self) -> None:
        self._auth_check = self.ctx.clock.call_later(self.ctx.auth_refresh_check_seconds, self._check_auth)

    def _check_auth(self) -> None:
        """Pulsar's ``refreshAuthenticationCredentials``: every ``authenticationRefreshCheckSeconds``;
        expired credentials are refreshed through AUTH_CHALLENGE, or the connection is closed."""
        self._auth_check = None
        if self.closed:
            return
        if not self.credentials.expired(self.ctx.clock.now_ms() / 1000):
            self._schedule_auth_check()
            return
        if not self._supports_auth_refresh:
            logger.info(
                "Closing connection from %s: its credentials expired (the client cannot refresh them)",
                self.peer,
            )
            self.close()
            return
        if self._auth_challenge_pending:
            logger.info(
                "Closing connection from %s: no fresh credentials since the AUTH_CHALLENGE", self.peer
            )
            self.close()
            return
        self._auth_challenge_pending = True
        challenge = AuthData(self._auth_method, AUTH_REFRESH_DATA)
        self.send(
            simple_frame(CommandAuthChallenge(self.ctx.server_version, challenge, self.protocol_version))
        )
        self._schedule_auth_check()

    def _on_auth_response(self, cmd: CommandAuthResponse) -> None:
        response = cmd.response or AuthData()
        try:
            credentials = self.ctx.authenticator.authenticate(response.auth_method_name, response.auth_data)
        except BrokerLBError as exc:
            logger.info("Closing connection from %s: its refreshed credentials failed (%s)", self.peer, exc)
            self._error(_NO_REQUEST, ServerError.AuthenticationError, "Failed to authenticate")
            self.close()
            return
        if credentials.role != self.role:
            logger.warning(
                "Closing connection from %s: the role cannot change on a refresh (%s, then %s)",
                self.peer,
                self.role,
                credentials.role,
            )
            self._error(_NO_REQUEST, ServerError.AuthenticationError, "The role cannot change on a refresh")
            self.close()
            return
        self.credentials = credentials
        self._auth_challenge_pending = False
        logger.info("Refreshed the credentials of %s for role %s", self.peer, self.role)

    def _on_ping(self, _cmd: CommandPing) -> None:
        self.send(simple_frame(CommandPong()))

    def _on_pong(self, _cmd: CommandPong) -> None:
        self._waiting_for_pong = False

    # ------------------------------------------------------------------ lookups
    async def _authorize(self, topic: TopicName, actions: tuple[str, ...]) -> None:
        """Refuse with ``AuthorizationError`` unless the connection's role may do one of ``actions``."""
        authorize = self.ctx.authorize
        if authorize is not None and not await authorize(topic, self.role, actions):
            raise AuthorizationError(
                f"Role {self.role} is not authorized to {' or '.join(actions)} on topic {topic}"
            )

    async def _authorize_namespace(self, namespace: NamespaceName) -> None:
        """Refuse with ``AuthorizationError`` unless the role may list the namespace's topics."""
        authorize = self.ctx.authorize_namespace
        if authorize is not None and not await authorize(namespace, self.role):
            raise AuthorizationError(
                f"Role {self.role} is not authorized to list the topics of namespace {namespace}"
            )

    def _on_lookup(self, cmd: CommandLookupTopic) -> None:
        response = self._owned_lookup(cmd)
        if response is not None:  # the hot path: answered from memory, no task
            self.send(simple_frame(response))
            return
        self._spawn(self._lookup(cmd))

    def _owned_lookup(self, cmd: CommandLookupTopic) -> CommandLookupTopicResponse | None:
        """Connect to the owner of an Owned bundle, from memory, when no authorization is asked
        for; ``None``: :meth:`_lookup` decides (and answers every error)."""
        if self.ctx.authorize is not None:
            return None
        try:
            topic = self.ctx.limits.topic(cmd.topic)
        except (BrokerLBError, ValueError):
            return None
        urls = self.ctx.lookup.pulsar_urls_cached(topic, cmd.advertised_listener_name or None)
        if urls is None:
            return None
        return CommandLookupTopicResponse(
            urls[0], urls[1], response=1, request_id=cmd.request_id, authoritative=True
        )

    async def _lookup(self, cmd: CommandLookupTopic) -> None:
        """The lookup's domain answer as a LOOKUP response: Connect to the owner's pulsar:// URLs (of the
        listener asked for), or Redirect to the broker to ask."""
        try:
            topic = self.ctx.limits.topic(cmd.topic)
            await self._authorize(topic, ("produce", "consume"))
            result = await self.ctx.lookup.lookup(topic, authoritative=bool(cmd.authoritative))
            url, url_tls = self.ctx.lookup.pulsar_urls(result.broker, cmd.advertised_listener_name or None)
            if not url and not url_tls:
                raise BinaryProtocolError(
                    "ServiceNotReady", f"Broker {result.broker} advertises no pulsar:// URL"
                )
            response = CommandLookupTopicResponse(
                url,
                url_tls,
                response=0 if result.redirect else 1,  # Redirect / Connect
                request_id=cmd.request_id,
                authoritative=result.authoritative if result.redirect else True,
            )
        except (BrokerLBError, ValueError) as exc:
            response = CommandLookupTopicResponse(
                response=2, request_id=cmd.request_id, error=int(server_error_of(exc)), message=str(exc)
            )
        self.send(simple_frame(response))

    def _on_partitioned_metadata(self, cmd: CommandPartitionedTopicMetadata) -> None:
        self._spawn(self._partitioned_metadata(cmd))

    async def _partitioned_metadata(self, cmd: CommandPartitionedTopicMetadata) -> None:
        try:
            topic = self.ctx.limits.topic(cmd.topic)
            await self._authorize(topic, ("produce", "consume"))
            await self.ctx.namespace_bundles(topic.namespace)
            partitions = await self.ctx.partitions(topic)
            response = CommandPartitionedTopicMetadataResponse(partitions, cmd.request_id, response=0)
        except (BrokerLBError, ValueError) as exc:
            response = CommandPartitionedTopicMetadataResponse(
                request_id=cmd.request_id, response=1, error=int(server_error_of(exc)), message=str(exc)
            )
        self.send(simple_frame(response))

    def _on_topics_of_namespace(self, cmd: CommandGetTopicsOfNamespace) -> None:
        self._spawn(self._topics_of_namespace(cmd))

    async def _topics_of_namespace(self, cmd: CommandGetTopicsOfNamespace) -> None:
        try:
            namespace = self.ctx.limits.namespace(cmd.namespace)
            await self._authorize_namespace(namespace)
            await self.ctx.namespace_bundles(namespace)
            names = set(await self.ctx.partitioned_topics(namespace))
            for served in list(self.ctx.data_path.topics.values()):
                if served.topic.name.namespace == namespace:
                    names.add(str(served.topic.name))
            mode = cmd.mode or 0
            domains = {0: ("persistent",), 1: ("non-persistent",)}.get(mode, ("persistent", "non-persistent"))
            topics = sorted(n for n in names if TopicName.parse(n).domain in domains)
            filtered = False
            if cmd.topics_pattern:  # RE2: a client's pattern runs in linear time
                pattern = topics_pattern(cmd.topics_pattern.split("://", 1)[-1])
                topics = [t for t in topics if pattern.fullmatch(t.split("://", 1)[-1])]
                filtered = True
            digest = str(crc32c("".join(topics).encode()))
            changed = digest != cmd.topics_hash
            self.send(
                simple_frame(
                    CommandGetTopicsOfNamespaceResponse(
                        cmd.request_id, topics if changed else [], filtered, digest, changed
                    )
                )
            )
        except (BrokerLBError, ValueError) as exc:
            self._error(cmd.request_id, server_error_of(exc), str(exc))

    # ------------------------------------------------------------------ producers
    def _on_producer(self, cmd: CommandProducer) -> None:
        existing = self.producers.get(cmd.producer_id)
        if existing is not None:  # the client retried: answer again
            self.send(
                simple_frame(CommandProducerSuccess(cmd.request_id, existing.name, -1, producer_ready=True))
            )
            return
        if cmd.producer_id in self._pending_producers:
            return
        self._pending_producers.add(cmd.producer_id)
        self._spawn(self._producer(cmd))

    async def _producer(self, cmd: CommandProducer) -> None:
        try:
            topic = self.ctx.limits.topic(cmd.topic)
            await self._authorize(topic, ("produce",))
            await self.ctx.namespace_bundles(topic.namespace)
            if self.closed:
                return
            served = await self.ctx.data_path.open(topic)
            if self.closed:
                return
            engine = served.topic
            name = cmd.producer_name or self.ctx.next_producer_name()
            if (
                engine.persistent
                and engine.quota_exceeded()
                and engine.backlog_quota.policy == "producer_exception"
            ):
                raise BacklogQuotaExceeded(
                    f"Cannot create producer on topic {topic}: the backlog quota of "
                    f"{engine.backlog_quota.limit_bytes} bytes is exceeded (producer_exception)"
                )
            producer = BinaryProducer(self, cmd.producer_id, served, name)
            stale = engine.producers.get(name)
            if isinstance(stale, BinaryProducer) and stale.conn.closed:
                engine.remove_producer(name, stale)
            engine.add_producer(name, producer)
            self.producers[cmd.producer_id] = producer
            self.ctx.data_path.add_session(served, producer)
            self.send(simple_frame(CommandProducerSuccess(cmd.request_id, name, -1, producer_ready=True)))
        except (BrokerLBError, ValueError) as exc:
            self._error(cmd.request_id, server_error_of(exc), str(exc))
        finally:
            self._pending_producers.discard(cmd.producer_id)
            self.flush()

    def drop_producer(self, producer: BinaryProducer) -> None:
        if self.producers.get(producer.producer_id) is producer:
            del self.producers[producer.producer_id]
            self._closed_producers[producer.producer_id] = None
            while len(self._closed_producers) > _CLOSED_PRODUCERS_KEPT:
                self._closed_producers.popitem(last=False)
        producer.served.topic.remove_producer(producer.name, producer)
        self.ctx.data_path.remove_session(producer.served, producer)

    def _refuse_send(self, cmd: CommandSend, error: ServerError, message: str) -> None:
        self.send(simple_frame(CommandSendError(cmd.producer_id, cmd.sequence_id, error, message)))

    def _on_send(self, frame: Frame) -> None:
        cmd = frame.command
        assert isinstance(cmd, CommandSend)
        producer = self.producers.get(cmd.producer_id)
        if producer is None:
            if cmd.producer_id in self._closed_producers:
                return  # closed by the broker meanwhile (a move): the client re-sends to the next owner
            # Pulsar's ServerCnx.handleSend: "producer is not ready" -- the connection is closed
            raise BinaryProtocolError(
                "NotAllowedError",
                f"SEND for producer {cmd.producer_id}, which is not open on this connection",
                fatal=True,
            )
        section = frame.payload
        if not section:
            raise BinaryProtocolError("UnknownError", "SEND without a payload", fatal=True)
        if not checksum_ok(section):
            self._refuse_send(cmd, ServerError.ChecksumError, "Checksum failed on the broker")
            return
        if len(section) > self.ctx.max_message_size:
            self._refuse_send(
                cmd,
                ServerError.NotAllowedError,
                f"Message of {len(section)} bytes exceeds maxMessageSize {self.ctx.max_message_size}",
            )
            return
        num_messages = cmd.num_messages or 1
        if num_messages > max(1, len(section) // _MIN_BATCHED_MESSAGE_BYTES):
            # the count drives permits, rates, load reports and splits: it must be what the bytes can hold
            self._refuse_send(
                cmd,
                ServerError.NotAllowedError,
                f"num_messages {num_messages} cannot fit in a payload of {len(section)} bytes "
                f"(a batched message takes at least {_MIN_BATCHED_MESSAGE_BYTES})",
            )
            return
        topic = producer.served.topic
        highest = cmd.highest_sequence_id or 0
        try:
            entry_id = topic.publish(
                section,
                num_messages,
                _Receipt(self, cmd.producer_id, cmd.sequence_id, highest, topic.partition),
            )
        except BacklogQuotaExceeded as exc:
            self._refuse_send(cmd, ServerError.ProducerBlockedQuotaExceededException, str(exc))
            return
        if entry_id is not None:  # committed at once (non-persistent, or an in-memory log)
            ledger_id, entry = topic.position_of(entry_id)
            self.send(
                send_receipt_frame(
                    cmd.producer_id, cmd.sequence_id, ledger_id, entry, topic.partition, highest
                )
            )

    # ------------------------------------------------------------------ consumers
    def _on_subscribe(self, cmd: CommandSubscribe) -> None:
        if cmd.consumer_id in self.consumers:
            self.send(simple_frame(CommandSuccess(cmd.request_id)))
            return
        self._spawn(self._subscribe(cmd))

    async def _subscribe(self, cmd: CommandSubscribe) -> None:
        try:
            topic = self.ctx.limits.topic(cmd.topic)
            await self._authorize(topic, ("consume",))
            await self.ctx.namespace_bundles(topic.namespace)
            if self.closed:
                return
            kind = SUBSCRIPTION_TYPE_NAMES.get(cmd.subType)
            if kind is None:
                raise BinaryProtocolError("NotAllowedError", f"Unknown subscription type {cmd.subType}")
            if not cmd.subscription:
                raise BinaryProtocolError("NotAllowedError", "Empty subscription name")
            served = await self.ctx.data_path.open(topic)
            if self.closed:
                return
            meta = cmd.keySharedMeta
            mode = (
                KeySharedMode.STICKY
                if meta is not None and meta.keySharedMode == 1
                else KeySharedMode.AUTO_SPLIT
            )
            ranges = tuple(HashRange(r.start, r.end) for r in meta.hashRanges) if meta is not None else ()
            dispatch = DispatchConsumer(
                cmd.consumer_name or f"consumer-{cmd.consumer_id}",
                priority_level=max(0, cmd.priority_level or 0),
                hash_ranges=ranges if mode is KeySharedMode.STICKY else (),
            )
            dispatch.writable = self.writable
            consumer = BinaryConsumer(self, cmd.consumer_id, served, cmd.subscription, dispatch)
            durable = cmd.durable is not False
            start: tuple[int, int] | str | None = None
            if not durable:
                start = EARLIEST if cmd.initialPosition == 1 else LATEST
                if cmd.start_message_id is not None:
                    start = (cmd.start_message_id.ledgerId, cmd.start_message_id.entryId)
            self.consumers[cmd.consumer_id] = consumer
            created = cmd.subscription not in served.topic.subscriptions
            try:
                sub = served.topic.subscribe(
                    cmd.subscription,
                    kind,
                    dispatch,
                    consumer,
                    durable=durable,
                    initial_position=EARLIEST if cmd.initialPosition == 1 else LATEST,
                    start=start,
                    key_shared_mode=mode,
                )
            except BaseException:
                del self.consumers[cmd.consumer_id]
                raise
            self.ctx.data_path.add_session(served, consumer)
            if created and sub.durable and served.ledger is not None:
                await served.ledger.flush_cursors()  # a new durable subscription exists once stored
            self.send(simple_frame(CommandSuccess(cmd.request_id)))
        except (BrokerLBError, ValueError) as exc:
            self._error(cmd.request_id, server_error_of(exc), str(exc))
        finally:
            self.flush()

    def drop_consumer(self, consumer: BinaryConsumer) -> None:
        if self.consumers.get(consumer.consumer_id) is consumer:
            del self.consumers[consumer.consumer_id]
        consumer.served.topic.detach(consumer.subscription, consumer.dispatch)
        self.ctx.data_path.remove_session(consumer.served, consumer)

    def _consumer(self, consumer_id: int) -> BinaryConsumer | None:
        return self.consumers.get(consumer_id)

    def _on_flow(self, cmd: CommandFlow) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is not None:
            consumer.served.topic.flow(consumer.subscription, consumer.dispatch, cmd.messagePermits)

    def _on_ack(self, cmd: CommandAck) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is not None:
            consumer.served.topic.acknowledge(
                consumer.subscription,
                consumer.dispatch,
                [(m.ledgerId, m.entryId, _mask_of(m.ack_set)) for m in cmd.message_id],
                cumulative=cmd.ack_type == 1,
            )
        if cmd.request_id is not None:
            response = CommandAckResponse(cmd.consumer_id, request_id=cmd.request_id)
            if consumer is None:
                response.error, response.message = int(ServerError.ConsumerNotFound), "Consumer not found"
            self.send(simple_frame(response))

    def _on_redeliver(self, cmd: CommandRedeliverUnacknowledgedMessages) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is None:
            return
        ids = [(m.ledgerId, m.entryId) for m in cmd.message_ids] if cmd.message_ids else None
        consumer.served.topic.redeliver(consumer.subscription, consumer.dispatch, ids)

    def _on_unsubscribe(self, cmd: CommandUnsubscribe) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is None:
            raise BinaryProtocolError("ConsumerNotFound", f"Consumer {cmd.consumer_id} not found")
        consumer.served.topic.unsubscribe(consumer.subscription, consumer.dispatch, force=bool(cmd.force))
        self.drop_consumer(consumer)
        self.send(simple_frame(CommandSuccess(cmd.request_id)))

    def _on_close_producer(self, cmd: CommandCloseProducer) -> None:
        producer = self.producers.get(cmd.producer_id)
        if producer is not None:
            self.drop_producer(producer)
        self.send(simple_frame(CommandSuccess(cmd.request_id)))

    def _on_close_consumer(self, cmd: CommandCloseConsumer) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is not None:
            self.drop_consumer(consumer)
        self.send(simple_frame(CommandSuccess(cmd.request_id)))

    def _on_get_last_message_id(self, cmd: CommandGetLastMessageId) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is None:
            raise BinaryProtocolError("ConsumerNotFound", f"Consumer {cmd.consumer_id} not found")
        self._spawn(self._last_message_id(cmd, consumer))

    async def _last_message_id(self, cmd: CommandGetLastMessageId, consumer: BinaryConsumer) -> None:
        topic = consumer.served.topic
        partition = topic.partition if topic.partition >= 0 else None
        last = topic.last_entry_id
        ledger_id, entry_id = topic.position_of(last) if last >= 0 else topic.position_of(0)
        last_id = MessageIdData(ledger_id, entry_id if last >= 0 else -1, partition)
        entry = topic.entry(last) if last >= topic.first_entry_id else None
        ledger = consumer.served.ledger
        if entry is None and ledger is not None and last >= topic.first_entry_id:
            try:
                found = await ledger.read_entries(last, last)
            except BrokerLBError:
                found = []
            entry = found[0] if found else None
        if entry is not None:
            try:
                batch = read_metadata(entry.section).num_messages_in_batch
            except BrokerLBError:
                batch = None
            if batch is not None:
                last_id.batch_index = batch - 1
        sub = topic.subscriptions.get(consumer.subscription)
        mark = None
        if sub is not None:
            mark_ledger, mark_entry = (
                topic.position_of(sub.mark_delete) if sub.mark_delete >= 0 else (ledger_id, -1)
            )
            mark = MessageIdData(mark_ledger, mark_entry, partition)
        self.send(simple_frame(CommandGetLastMessageIdResponse(last_id, cmd.request_id, mark)))
        self.flush()

    def _on_seek(self, cmd: CommandSeek) -> None:
        consumer = self._consumer(cmd.consumer_id)
        if consumer is None:
            raise BinaryProtocolError("ConsumerNotFound", f"Consumer {cmd.consumer_id} not found")
        if cmd.message_id is None and cmd.message_publish_time is None:
            raise BinaryProtocolError("NotAllowedError", "SEEK needs a message id or a publish time")
        self._spawn(self._seek(cmd, consumer))

    async def _seek(self, cmd: CommandSeek, consumer: BinaryConsumer) -> None:
        served = consumer.served
        topic = served.topic
        try:
            seq = None
            if cmd.message_id is None and served.ledger is not None:
                seq = await served.ledger.find_by_publish_time(cmd.message_publish_time or 0)
            # As Pulsar: the subscription's consumers are disconnected first (acks still in flight from
            # them are ignored from now on), the cursor moves, and they come back at the new position.
            sub = topic.subscriptions.get(consumer.subscription)
            attached = set(sub.attached) if sub is not None else set()
            for session in list(served.sessions):
                if isinstance(session, BinaryConsumer) and session.dispatch.consumer_id in attached:
                    session.close_now(CloseReason.unloaded("seek"))
            if seq is not None:
                topic.seek(consumer.subscription, seq=seq)
            elif cmd.message_id is not None:
                topic.seek(consumer.subscription, (cmd.message_id.ledgerId, cmd.message_id.entryId))
            else:
                topic.seek(consumer.subscription, publish_time=cmd.message_publish_time)
            if served.ledger is not None:
                await served.ledger.flush_cursors()
            self.send(simple_frame(CommandSuccess(cmd.request_id)))
        except (BrokerLBError, ValueError) as exc:
            self._error(cmd.request_id, server_error_of(exc), str(exc))
        self.flush()


class _Receipt:
    """A publish's receipt, sent once the entry is committed (to the storage tier, or after the
    backlog quota ``producer_request_hold`` let it in)."""

    __slots__ = ("conn", "producer_id", "sequence_id", "highest", "partition")

    def __init__(
        self, conn: BinaryConnection, producer_id: int, sequence_id: int, highest: int, partition: int
    ) -> None:
        self.conn = conn
        self.producer_id = producer_id
        self.sequence_id = sequence_id
        self.highest = highest
        self.partition = partition

    def __call__(self, ledger_id: int, entry_id: int) -> None:
        self.conn.send(
            send_receipt_frame(
                self.producer_id, self.sequence_id, ledger_id, entry_id, self.partition, self.highest
            )
        )


def _request_id(frame: Frame) -> int:
    if frame.request_id is not None:
        return frame.request_id
    cmd: Message | None = frame.command
    value = getattr(cmd, "request_id", None)
    return value if isinstance(value, int) else 0


def _type_name(command_type: int) -> str:
    try:
        return CommandType(command_type).name
    except ValueError:
        return f"command type {command_type}"


def topics_pattern(pattern: str) -> Any:
    """A GET_TOPICS_OF_NAMESPACE pattern compiled with RE2 (a refused one is NotAllowedError naming it)."""
    check_pattern(pattern, "topics_pattern", "topics pattern")
    return compile_pattern(pattern)
