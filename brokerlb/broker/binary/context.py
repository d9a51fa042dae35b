"""What a binary-protocol connection needs from its broker, and the authentication seam.

:class:`BinaryContext` is the narrow view the listener gets (no service locator): the data
path, the lookup service (the same resolution as the HTTP lookup), the namespace bundles, the
partitioned-topic metadata, the brokers' URLs, the limits from broker.conf, and an
:class:`Authenticator`.

**Authentication seam.** ``CONNECT`` carries ``auth_method_name`` and ``auth_data``; the
connection asks ``authenticator.authenticate(method, data)`` for the client's role before it
answers ``CONNECTED``, with the credentials' expiry (a token's ``exp``), which the connection
checks every ``authenticationRefreshCheckSeconds``. :class:`AnonymousAuthenticator` (the default)
accepts everyone as ``anonymous``; an authenticator that refuses raises (:class:`~brokerlb.errors.AuthenticationError`)
and the connection answers ``ERROR{AuthenticationError}`` and closes, as Pulsar does. With
``authenticationEnabled`` the broker's token authentication plugs in here; with
``authorizationEnabled`` ``authorize`` checks the role's permission before PRODUCER (produce),
SUBSCRIBE (consume), LOOKUP and PARTITIONED_METADATA (produce or consume), and
``authorize_namespace`` before GET_TOPICS_OF_NAMESPACE (produce or consume on the namespace,
Pulsar's ``GET_TOPICS``): ``AuthorizationError``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from brokerlb.broker.binary.limits import ConnectionLimits
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.limits import InputLimits
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.security.authentication import Credentials

if TYPE_CHECKING:
    from brokerlb.broker.data.data_path import DataPath
    from brokerlb.broker.ownership.lookup import LookupService

__all__ = ["Authenticator", "AnonymousAuthenticator", "BinaryContext", "ANONYMOUS_ROLE"]

ANONYMOUS_ROLE = "anonymous"


class Authenticator(Protocol):
    """Turns CONNECT's (or AUTH_RESPONSE's) credentials into a role and their expiry (raises to
    refuse them)."""

    def authenticate(self, auth_method: str | None, auth_data: bytes | None) -> Credentials: ...


class AnonymousAuthenticator:
    """Everyone is :data:`ANONYMOUS_ROLE` (Pulsar with ``authenticationEnabled=false``)."""

    def authenticate(self, auth_method: str | None, auth_data: bytes | None) -> Credentials:
        return Credentials(ANONYMOUS_ROLE)


@dataclass
class BinaryContext:
    """The broker as a binary-protocol connection sees it (module docstring)."""

    data_path: DataPath
    #: the broker's lookup service (its :class:`~brokerlb.broker.ownership.lookup.LookupResult`, rendered here)
    lookup: LookupService
    #: ``await namespace_bundles(namespace)`` -- raises NamespaceNotFoundError for an unknown namespace
    namespace_bundles: Callable[[NamespaceName], Awaitable[Any]]
    #: ``await partitions(topic)`` -> number of partitions (0 = not partitioned)
    partitions: Callable[[Any], Awaitable[int]]
    #: ``await partitioned_topics(namespace)`` -> the namespace's partitioned topics (full names)
    partitioned_topics: Callable[[NamespaceName], Awaitable[list[str]]]
    cluster: str
    #: makes producer names unique across brokers: ``{cluster}-{name_prefix}-{n}``
    name_prefix: str
    max_message_size: int = 5 * 1024 * 1024
    keep_alive_seconds: float = 30.0
    #: outbound backpressure (Pulsar's ``pulsarChannelWriteBuffer{High,Low}WaterMark``, bytes)
    write_buffer_high_water_mark: int = 64 * 1024
    write_buffer_low_water_mark: int = 32 * 1024
    #: stop reading a connection's requests while it is unwritable
    pause_reading_if_unwritable: bool = True
    #: seconds a frame that has begun may take to complete (``brokerlbFrameCompletionTimeoutSeconds``)
    frame_completion_timeout: float = 30.0
    #: ``brokerMaxConnections`` / ``brokerMaxConnectionsPerIp``, shared by the plain and TLS listeners
    connection_limits: ConnectionLimits = field(default_factory=ConnectionLimits)
    #: bounds on what commands carry (names within ``brokerlbMaxNameLength``)
    limits: InputLimits = field(default_factory=InputLimits)
    #: keep-alive checks are timers on this clock
    clock: Clock = SYSTEM_CLOCK
    authenticator: Authenticator = field(default_factory=AnonymousAuthenticator)
    #: ``authenticationRefreshCheckSeconds``: how often open connections check their credentials' expiry
    auth_refresh_check_seconds: float = 60.0
    #: ``await authorize(topic, role, actions)``: may the role do one of ``actions`` ("produce",
    #: "consume") on the topic? ``None`` = no authorization (everyone may)
    authorize: Callable[[TopicName, str | None, tuple[str, ...]], Awaitable[bool]] | None = None
    #: ``await authorize_namespace(namespace, role)``: may the role list the namespace's topics?
    authorize_namespace: Callable[[NamespaceName, str | None], Awaitable[bool]] | None = None
    server_version: str = "brokerlb"
    _names: int = 0

    def next_producer_name(self) -> str:
        self._names += 1
        return f"{self.cluster}-{self.name_prefix}-{self._names - 1}"


def web_base(url: str) -> str:
    """``scheme://host:port`` of a URL (what the registry's ``webServiceUrl`` holds)."""
    match = re.match(r"^([a-z+]+://[^/?#]+)", url)
    return match.group(1) if match else url
