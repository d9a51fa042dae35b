"""Who may call each route: one declaration per route, checked for every request.

A route declares what it needs in its decorator, one line::

    @router.put(f"{_P}/{{tenant}}/{{namespace}}", ..., openapi_extra=access(Access.TENANT_ADMIN))

The declaration is part of the route's OpenAPI operation (``x-brokerlb-access``), so the
document says who may call what. :func:`authorize` -- a dependency of the whole FastAPI app
-- reads the matched route's declaration and checks the caller; a route that declares
nothing is allowed to super-users only (and ``tests/unit/security`` fails on it). The raw
lookup fast path and the WebSocket endpoint call :meth:`Security.check` themselves.

=================  ===========================================================================
``Access``         who passes (with ``authenticationEnabled``; everyone passes without it)
=================  ===========================================================================
``PUBLIC``         everyone, without credentials
``METRICS``        everyone; any authenticated role with ``authenticateMetricsEndpoint`` (Pulsar)
``AUTHENTICATED``  any authenticated role (or ``anonymousUserRole``)
``SUPER_USER``     a role in ``superUserRoles``
``TENANT_ADMIN``   a super-user or an admin of the ``{tenant}`` in the path
``NAMESPACE_USE``  a tenant admin, or a role with produce/consume on ``{tenant}/{namespace}``
``TOPIC_LOOKUP``   a tenant admin, or a role with produce/consume on the topic in the path
``TOPIC_PRODUCE``  a tenant admin, or a role with produce on the topic (WebSocket producers)
``TOPIC_CONSUME``  a tenant admin, or a role with consume on the topic (WebSocket consumers)
=================  ===========================================================================

Without credentials (or with bad ones) the answer is 401; with a role that may not, 403.
Authorization is checked only when ``authorizationEnabled`` (else any authenticated role passes).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from brokerlb.coordination.permissions import NamespacePermissions
from brokerlb.errors import AuthorizationError
from brokerlb.naming import NamespaceName, TopicName
from brokerlb.security.authentication import AuthenticationService, Credentials
from brokerlb.security.authorization import AuthorizationService

__all__ = ["Access", "access", "route_access", "Security", "authorize", "ACCESS_KEY"]

#: The OpenAPI extension (and ``openapi_extra`` key) carrying a route's declaration.
ACCESS_KEY = "x-brokerlb-access"


class Access(enum.Enum):
    PUBLIC = "public"
    METRICS = "metrics"
    AUTHENTICATED = "authenticated"
    SUPER_USER = "super-user"
    TENANT_ADMIN = "tenant-admin"
    NAMESPACE_USE = "namespace-use"
    TOPIC_LOOKUP = "topic-lookup"
    TOPIC_PRODUCE = "topic-produce"
    TOPIC_CONSUME = "topic-consume"


def access(needed: Access) -> dict[str, Any]:
    """The route decorator's ``openapi_extra`` declaring ``needed``."""
    return {ACCESS_KEY: needed.value}


def route_access(route: Any) -> Access | None:
    """The declaration of a FastAPI route, or ``None`` when it has none."""
    extra = getattr(route, "openapi_extra", None) or {}
    value = extra.get(ACCESS_KEY)
    return Access(value) if value is not None else None


_TOPIC_ACTIONS = {
    Access.TOPIC_LOOKUP: ("produce", "consume"),
    Access.TOPIC_PRODUCE: ("produce",),
    Access.TOPIC_CONSUME: ("consume",),
}


@dataclass(frozen=True)
class Security:
    """Authentication and authorization of one broker, applied to a request."""

    authentication: AuthenticationService
    authorization: AuthorizationService
    authenticate_metrics: bool = False

    @classmethod
    def from_config(cls, conf: Any, store: Any) -> Security:
        return cls(
            AuthenticationService.from_config(conf),
            AuthorizationService.from_config(conf, NamespacePermissions(store)),
            bool(conf.authenticateMetricsEndpoint),
        )

    @classmethod
    def disabled(cls) -> Security:
        return cls(AuthenticationService.disabled(), AuthorizationService(False, frozenset()))

    @property
    def enabled(self) -> bool:
        return self.authentication.enabled

    async def check(
        self,
        needed: Access,
        params: Mapping[str, str],
        authorization: str | None,
        query_token: str | None = None,
        topic: TopicName | None = None,
    ) -> str | None:
        """The caller's role once it may do ``needed``; 401 / 403 otherwise.

        ``params`` are the route's path parameters (``tenant``, ``namespace`` ...); ``topic``
        the topic of a topic route when the caller has parsed it already.
        """
        role = self.authenticate(needed, authorization, query_token)
        await self.authorize(needed, params, role, topic)
        return role

    def authenticate(
        self, needed: Access, authorization: str | None, query_token: str | None = None
    ) -> str | None:
        """The caller's role for ``needed`` (401 without valid credentials; ``None`` when no
        credentials are needed). Call it before any work on the request that allocates."""
        return self.credentials(needed, authorization, query_token).role

    def credentials(
        self, needed: Access, authorization: str | None, query_token: str | None = None
    ) -> Credentials:
        """:meth:`authenticate` with the credentials' expiry (a WebSocket session re-checks it)."""
        needed = self._effective(needed)
        if not self.enabled or needed is Access.PUBLIC:
            return Credentials(None)
        return self.authentication.credentials_http(authorization, query_token)

    async def authorize(
        self, needed: Access, params: Mapping[str, str], role: str | None, topic: TopicName | None = None
    ) -> None:
        """403 unless the role :meth:`authenticate` gave may do ``needed``."""
        needed = self._effective(needed)
        if not self.enabled or needed in (Access.PUBLIC, Access.AUTHENTICATED):
            return
        if not self.authorization.enabled or await self._allowed(needed, params, role, topic):
            return
        raise AuthorizationError(
            f"Role {role} is not authorized: {needed.value} access is required{_on(params)}"
        )

    def _effective(self, needed: Access) -> Access:
        if needed is Access.METRICS:
            return Access.AUTHENTICATED if self.authenticate_metrics else Access.PUBLIC
        return needed

    async def _allowed(
        self, needed: Access, params: Mapping[str, str], role: str | None, topic: TopicName | None
    ) -> bool:
        authz = self.authorization
        if needed is Access.SUPER_USER:
            return authz.is_super_user(role)
        if needed is Access.TENANT_ADMIN:
            return await authz.is_tenant_admin(params["tenant"], role)
        if needed is Access.NAMESPACE_USE:
            namespace = (
                topic.namespace
                if topic is not None
                else NamespaceName.parse(f"{params['tenant']}/{params['namespace']}")
            )
            return await authz.can_use_namespace(namespace, role)
        if topic is None:
            from brokerlb.broker.http.lookup_routes import topic_from_segments

            topic = topic_from_segments(
                params["domain"], params["tenant"], params["namespace"], params["topic"]
            )
        return await authz.can(topic, role, _TOPIC_ACTIONS[needed])


def _on(params: Mapping[str, str]) -> str:
    shown = {k: params[k] for k in ("tenant", "namespace", "topic") if k in params}
    return (" on " + "/".join(shown.values())) if shown else ""


async def authorize(request: Request) -> None:
    """The app-wide dependency: the matched route's declaration, checked (module docstring)."""
    security = getattr(request.app.state, "security", None)
    if not isinstance(security, Security) or not security.enabled:
        return
    route = request.scope.get("route")
    needed = route_access(route) or Access.SUPER_USER
    params = dict(request.path_params)
    if "topic" in params and "domain" not in params:
        params["domain"] = _domain_of(getattr(route, "path", ""))
    role = await security.check(needed, params, request.headers.get("authorization"))
    request.state.role = role


def _domain_of(template: str) -> str:
    """The topic domain fixed in a route's path (``/admin/v2/persistent/{tenant}/...``): the segment
    before ``{tenant}``."""
    parts = template.split("/")
    return parts[parts.index("{tenant}") - 1] if "{tenant}" in parts else "persistent"
