"""How a :class:`~brokerlb.broker.service.BrokerService` gets its binary listener and state hand-off.

Kept out of the service module so the broker's composition only calls three functions:
:func:`bind_for` (the socket, before the broker's identity is known), :func:`binary_server`
(the listener, once the broker is wired) and :func:`state_hand_off` (lossless planned moves).
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING, Any

from brokerlb import __version__
from brokerlb.broker.binary.context import ANONYMOUS_ROLE, BinaryContext
from brokerlb.broker.binary.server import BinaryServer, bind_binary_socket
from brokerlb.broker.handoff import TopicHandOff
from brokerlb.broker.http.access import Security
from brokerlb.broker.http.handoff_routes import place_for_hand_off
from brokerlb.coordination.paths import partitioned_topic_path
from brokerlb.errors import BrokerLBError, NoNodeError
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.security.authentication import AuthenticationService

if TYPE_CHECKING:
    from brokerlb.broker.service import BrokerService

__all__ = ["bind_for", "binary_server", "state_hand_off"]


def bind_for(conf: Any) -> socket.socket | None:
    """The binary listener's socket on ``bindAddress:brokerServicePort`` (0 = a free port); ``None``
    when ``brokerServicePort`` is unset."""
    if conf.brokerServicePort is None:
        return None
    return bind_binary_socket(conf.bindAddress, conf.brokerServicePort)


def _registered(service: BrokerService, broker_id: str, field: str) -> str | None:
    report = service.registry.broker_json(broker_id)
    value = report.get(field) if isinstance(report, dict) else None
    return str(value) if value else None


def binary_server(service: BrokerService, sock: socket.socket, authenticator: Any = None) -> BinaryServer:
    """The listener of ``service`` on ``sock`` (its data path must exist)."""
    assert service.data_path is not None
    conf, ident = service.conf, service.identity

    def pulsar_url_of(web_url: str) -> str | None:
        base = web_url.rstrip("/")
        if base == (ident.web_service_url or "").rstrip("/"):
            return ident.pulsar_service_url
        for broker in service.registry.available_brokers():
            if (_registered(service, broker, "webServiceUrl") or "").rstrip("/") == base:
                return _registered(service, broker, "pulsarServiceUrl")
        return None

    async def partitions(topic: TopicName) -> int:
        return int((await service.partitioned_topics.metadata(topic))["partitions"])

    async def partitioned_topics(namespace: NamespaceName) -> list[str]:
        out: list[str] = []
        for domain in ("persistent", "non-persistent"):
            parent = partitioned_topic_path(f"{domain}://{namespace}/x").rsplit("/", 1)[0]
            try:
                names = await service.store.children(parent)
            except NoNodeError:
                continue
            for local in names:
                base = TopicName.parse(f"{domain}://{namespace}/{local}")
                count = await partitions(base)
                out += [f"{base}-partition-{i}" for i in range(count)]
        return out

    context = BinaryContext(
        data_path=service.data_path,
        lookup=service.lookup,
        namespace_bundles=service.bundles.get,
        partitions=partitions,
        partitioned_topics=partitioned_topics,
        pulsar_url_of=pulsar_url_of,
        cluster=ident.cluster or "brokerlb",
        name_prefix=ident.broker_id.replace(":", "-"),
        max_message_size=conf.maxMessageSize,
        keep_alive_seconds=conf.keepAliveIntervalSeconds,
        server_version=f"brokerlb-{__version__}",
    )
    if authenticator is not None:
        context.authenticator = authenticator
    elif conf.authenticationEnabled:
        context.authenticator = _TokenAuthenticator(AuthenticationService.from_config(conf))
    if conf.authenticationEnabled and conf.authorizationEnabled:
        authorization = Security.from_config(conf, service.store).authorization
        context.authorize = lambda topic, role, actions: authorization.can(topic, role, actions)
    return BinaryServer(context, sock)


class _TokenAuthenticator:
    """CONNECT's credentials through the broker's authentication service (``authenticationEnabled``)."""

    def __init__(self, service: AuthenticationService) -> None:
        self.service = service

    def authenticate(self, auth_method: str | None, auth_data: bytes | None) -> str:
        return self.service.authenticate(auth_method, auth_data) or ANONYMOUS_ROLE


def state_hand_off(service: BrokerService) -> TopicHandOff | None:
    """The hand-off of topic state for the owner's unload / transfer flow (``None`` without a data path)."""
    if service.data_path is None:
        return None

    async def leader_url() -> str | None:
        # read from the store: a stopping broker has left the election and no longer watches it
        try:
            leader = await service.election.get_leader()
        except BrokerLBError:
            return None
        return leader.service_url.rstrip("/") if leader is not None and leader.service_url else None

    async def owner_of(bundle: Any) -> str | None:
        info = await service.owners.lookup_owner(bundle)
        return None if info is None else str(info.broker_id)

    return TopicHandOff(
        service.data_path,
        self_id=service.identity.broker_id,
        self_url=service.identity.web_service_url,
        admin=service.admin,
        web_url_of=lambda broker: _registered(service, broker, "webServiceUrl"),
        leader_url=leader_url,
        is_leader=lambda: service.is_leader,
        place=lambda bundle: place_for_hand_off(service.load_manager, bundle),
        owner_of=owner_of,
    )
