"""How a :class:`~brokerlb.broker.service.BrokerService` gets its binary listener.

Kept out of the service module so the broker's composition only calls two functions:
:func:`bind_for` (the sockets, plain and TLS, before the broker's identity is known) and
:func:`binary_server` (the listener, once the broker is wired).
Each is given the broker's parts it uses, by name.
"""

from __future__ import annotations

import socket
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brokerlb import __version__
from brokerlb.broker.binary.context import ANONYMOUS_ROLE, BinaryContext
from brokerlb.broker.binary.limits import ConnectionLimits
from brokerlb.broker.binary.server import BinaryServer, bind_binary_socket
from brokerlb.broker.http.access import Security
from brokerlb.coordination.paths import partitioned_topic_path
from brokerlb.errors import NoNodeError
from brokerlb.limits import InputLimits
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.security.authentication import AuthenticationService, Credentials
from brokerlb.security.tls import server_context

if TYPE_CHECKING:
    from brokerlb.broker.admin.partitioned_topics import PartitionedTopics
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.identity import BrokerIdentity
    from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
    from brokerlb.broker.ownership.lookup import LookupService
    from brokerlb.clock import Clock
    from brokerlb.config import ServiceConfig
    from brokerlb.coordination import BrokerRegistry, MetadataStore

__all__ = ["BinarySockets", "bind_for", "binary_server"]


@dataclass
class BinarySockets:
    """The binary listener's sockets: ``brokerServicePort`` and ``brokerServicePortTls`` (with its
    TLS context from the broker's certificate files, :func:`brokerlb.security.tls.server_context`)."""

    plain: socket.socket | None
    tls: tuple[socket.socket, ssl.SSLContext] | None

    @property
    def port(self) -> int | None:
        return int(self.plain.getsockname()[1]) if self.plain is not None else None

    @property
    def tls_port(self) -> int | None:
        return int(self.tls[0].getsockname()[1]) if self.tls is not None else None

    def close(self) -> None:
        for sock in (self.plain, self.tls[0] if self.tls is not None else None):
            if sock is not None:
                sock.close()


def bind_for(conf: Any) -> BinarySockets | None:
    """The binary listener's sockets on ``bindAddress:brokerServicePort`` and
    ``bindAddress:brokerServicePortTls`` (0 = a free port); ``None`` when both are unset."""
    context = server_context(conf, "brokerServicePortTls")  # checks the files first
    if conf.brokerServicePort is None and context is None:
        return None
    plain = None
    if conf.brokerServicePort is not None:
        plain = bind_binary_socket(conf.bindAddress, conf.brokerServicePort)
    try:
        tls = None
        if context is not None:
            tls = (bind_binary_socket(conf.bindAddress, conf.brokerServicePortTls), context)
    except BaseException:
        if plain is not None:
            plain.close()
        raise
    return BinarySockets(plain, tls)


def binary_server(
    sockets: BinarySockets,
    *,
    conf: ServiceConfig,
    identity: BrokerIdentity,
    data_path: DataPath,
    lookup: LookupService,
    bundles: NamespaceBundlesCache,
    registry: BrokerRegistry,
    partitioned_topics: PartitionedTopics,
    store: MetadataStore,
    clock: Clock,
    authenticator: Any = None,
) -> BinaryServer:
    """The broker's binary listener on ``sockets``, serving ``data_path``."""
    ident = identity

    async def partitions(topic: TopicName) -> int:
        return int((await partitioned_topics.metadata(topic))["partitions"])

    async def partitions_of(namespace: NamespaceName) -> list[str]:
        out: list[str] = []
        for domain in ("persistent", "non-persistent"):
            parent = partitioned_topic_path(f"{domain}://{namespace}/x").rsplit("/", 1)[0]
            try:
                names = await store.children(parent)
            except NoNodeError:
                continue
            for local in names:
                base = TopicName.parse(f"{domain}://{namespace}/{local}")
                count = await partitions(base)
                out += [f"{base}-partition-{i}" for i in range(count)]
        return out

    context = BinaryContext(
        data_path=data_path,
        lookup=lookup,
        namespace_bundles=bundles.get,
        partitions=partitions,
        partitioned_topics=partitions_of,
        cluster=ident.cluster or "brokerlb",
        name_prefix=ident.broker_id.replace(":", "-"),
        max_message_size=conf.maxMessageSize,
        keep_alive_seconds=conf.keepAliveIntervalSeconds,
        write_buffer_high_water_mark=conf.pulsarChannelWriteBufferHighWaterMark,
        write_buffer_low_water_mark=conf.pulsarChannelWriteBufferLowWaterMark,
        pause_reading_if_unwritable=conf.pulsarChannelPauseReceivingRequestsIfUnwritable,
        frame_completion_timeout=conf.brokerlbFrameCompletionTimeoutSeconds,
        connection_limits=ConnectionLimits(conf.brokerMaxConnections, conf.brokerMaxConnectionsPerIp),
        limits=InputLimits.from_config(conf),
        auth_refresh_check_seconds=conf.authenticationRefreshCheckSeconds,
        clock=clock,
        server_version=f"brokerlb-{__version__}",
    )
    if authenticator is not None:
        context.authenticator = authenticator
    elif conf.authenticationEnabled:
        context.authenticator = _TokenAuthenticator(AuthenticationService.from_config(conf))
    if conf.authenticationEnabled and conf.authorizationEnabled:
        authorization = Security.from_config(conf, store).authorization
        context.authorize = lambda topic, role, actions: authorization.can(topic, role, actions)
        context.authorize_namespace = lambda namespace, role: authorization.can_use_namespace(namespace, role)
    return BinaryServer(context, sockets.plain, sockets.tls)


class _TokenAuthenticator:
    """CONNECT's credentials through the broker's authentication service (``authenticationEnabled``)."""

    def __init__(self, service: AuthenticationService) -> None:
        self.service = service

    def authenticate(self, auth_method: str | None, auth_data: bytes | None) -> Credentials:
        credentials = self.service.credentials(auth_method, auth_data)
        return Credentials(credentials.role or ANONYMOUS_ROLE, credentials.expires_at)
