"""What a role may do: Pulsar's ``PulsarAuthorizationProvider`` rules.

* a **super-user** (``superUserRoles``) may do everything;
* a **tenant admin** (a role in the tenant's ``adminRoles``, or a super-user) administers the
  tenant's namespaces: create, list, policies, permissions, deleting bundles;
* a role granted ``produce`` or ``consume`` on a namespace (or on a topic) may look its topics
  up and read their metadata; ``produce`` lets it publish and ``consume`` subscribe. Pulsar's
  ``lookup`` operation is allowed by either action (``canLookup``).

With ``authorizationAllowWildcardsMatching`` a granted role ``my.role.*`` matches every role
starting with ``my.role.`` and ``*.role.my`` every role ending with ``.role.my`` (Pulsar: the
wildcard works only at the start or the end).

``authorizationEnabled=false`` allows every authenticated role everything (as Pulsar).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from brokerlb.coordination.permissions import NamespacePermissions
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["AuthorizationService", "role_matches"]


def role_matches(granted: str, role: str, wildcards: bool) -> bool:
    """Whether permissions granted to ``granted`` apply to ``role`` (module docstring)."""
    if granted == role:
        return True
    if not wildcards or "*" not in granted:
        return False
    if granted.endswith("*") and granted.count("*") == 1:
        return role.startswith(granted[:-1])
    if granted.startswith("*") and granted.count("*") == 1:
        return role.endswith(granted[1:])
    return False


def _actions_of(grants: Mapping[str, list[str]], role: str, wildcards: bool) -> set[str]:
    return {
        a for granted, actions in grants.items() if role_matches(granted, role, wildcards) for a in actions
    }


@dataclass(frozen=True)
class AuthorizationService:
    """The rules above over the permissions stored in the metadata store."""

    enabled: bool
    super_users: frozenset[str]
    permissions: NamespacePermissions | None = None
    wildcards: bool = False

    @classmethod
    def from_config(cls, conf: Any, permissions: NamespacePermissions) -> AuthorizationService:
        return cls(
            bool(conf.authorizationEnabled),
            frozenset(conf.superUserRoles),
            permissions,
            bool(conf.authorizationAllowWildcardsMatching),
        )

    def is_super_user(self, role: str | None) -> bool:
        return not self.enabled or (role is not None and role in self.super_users)

    async def is_tenant_admin(self, tenant: str, role: str | None) -> bool:
        if self.is_super_user(role):
            return True
        if role is None or self.permissions is None:
            return False
        return any(
            role_matches(r, role, self.wildcards) for r in await self.permissions.tenant_admin_roles(tenant)
        )

    async def namespace_actions(self, namespace: NamespaceName, role: str) -> set[str]:
        assert self.permissions is not None
        return _actions_of(await self.permissions.permissions(namespace), role, self.wildcards)

    async def topic_actions(self, topic: TopicName, role: str) -> set[str]:
        """Actions on ``topic``: the namespace's grants and the topic's own (of the partitioned parent too)."""
        assert self.permissions is not None
        actions = await self.namespace_actions(topic.namespace, role)
        names = {str(topic)}
        if topic.is_partitioned:
            names.add(str(topic.partitioned_topic_name))
        for name in names:
            actions |= _actions_of(
                await self.permissions.topic_permissions(topic.namespace, name), role, self.wildcards
            )
        return actions

    async def can(self, topic: TopicName, role: str | None, wanted: Iterable[str]) -> bool:
        """Whether ``role`` holds one of ``wanted`` on ``topic`` (or administers its tenant)."""
        if await self.is_tenant_admin(topic.namespace.tenant, role):
            return True
        if role is None:
            return False
        return bool(await self.topic_actions(topic, role) & set(wanted))

    async def can_use_namespace(self, namespace: NamespaceName, role: str | None) -> bool:
        """Produce or consume on the namespace, or tenant admin (Pulsar's GET_BUNDLE and similar reads)."""
        if await self.is_tenant_admin(namespace.tenant, role):
            return True
        if role is None:
            return False
        return bool(await self.namespace_actions(namespace, role) & {"produce", "consume"})
