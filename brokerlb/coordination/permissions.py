"""Tenant admins and namespace permissions where Pulsar keeps them.

* a tenant's ``TenantInfo`` is the data of ``/admin/policies/{tenant}``:
  ``{"adminRoles": [...], "allowedClusters": [...]}``, written by the tenants API
  (``PUT``/``POST /admin/v2/tenants/{tenant}``, :mod:`brokerlb.coordination.tenants`); an empty or
  unreadable node has no admins but the super-users;
* a namespace's permissions are ``auth_policies`` of its ``Policies``
  (``/admin/policies/{tenant}/{namespace}``)::

      "auth_policies": {
        "namespace_auth": {"app-1": ["consume", "produce"]},
        "destination_auth": {"persistent://t/ns/topic": {"app-2": ["consume"]}},
        "subscription_auth_roles": {}
      }

Grants and revokes are compare-and-set on the policies node (every other field kept), retried
on a lost race like every policies update.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from brokerlb.coordination.paths import POLICIES_ROOT
from brokerlb.coordination.store import MetadataStore
from brokerlb.coordination.tenants import Tenants
from brokerlb.errors import (
    BadVersionError,
    CorruptMetadataError,
    InvalidInputError,
    NamespaceNotFoundError,
    NoNodeError,
    NotFoundError,
    PreconditionFailedError,
)
from brokerlb.naming import NamespaceName

__all__ = ["AUTH_ACTIONS", "NamespacePermissions", "parse_actions"]

#: Pulsar's ``AuthAction`` values, as its JSON writes them.
AUTH_ACTIONS = ("produce", "consume", "functions", "sources", "sinks", "packages")
_RETRIES = 7

logger = logging.getLogger(__name__)


def parse_actions(body: object) -> list[str]:
    """A grant body: a JSON list of actions (Pulsar's ``Set<AuthAction>``); 400 otherwise."""
    if not isinstance(body, list) or not all(isinstance(a, str) for a in body):
        raise InvalidInputError(
            f"Invalid actions: expected a JSON list of {', '.join(AUTH_ACTIONS)}, got {body!r}"
        )
    unknown = sorted({a for a in body if a not in AUTH_ACTIONS})
    if unknown:
        raise InvalidInputError(f"Invalid actions {unknown}: expected some of {', '.join(AUTH_ACTIONS)}")
    return sorted(set(body))


def _decode(data: bytes) -> dict[str, Any]:
    try:
        value = json.loads(data) if data.strip() else {}
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _role_map(value: Any) -> dict[str, list[str]]:
    if not isinstance(value, Mapping):
        return {}
    return {
        str(role): sorted(str(a) for a in actions if isinstance(a, str))
        for role, actions in value.items()
        if isinstance(actions, list)
    }


class NamespacePermissions:
    """Reads and changes tenant admins and namespace permissions (module docstring)."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    async def tenant_admin_roles(self, tenant: str) -> list[str]:
        """The tenant's ``adminRoles`` (its TenantInfo, as the tenants API writes it).

        An unknown tenant (or a name no tenant can have) is Pulsar's 404 "Tenant does not exist"
        (``validateTenantAdminAccess``); an unreadable TenantInfo has no admins (logged).
        """
        try:
            info = await Tenants(self.store).get(tenant)
        except PreconditionFailedError:
            info = None
        except CorruptMetadataError as exc:
            logger.warning("Tenant %s: unreadable TenantInfo, no tenant admins: %s", tenant, exc)
            return []
        if info is None:
            raise NotFoundError(f"Tenant {tenant} does not exist")
        return list(info.admin_roles)

    async def _policies(self, namespace: NamespaceName) -> tuple[dict[str, Any], int]:
        try:
            node = await self.store.get(f"{POLICIES_ROOT}/{namespace}")
        except NoNodeError:
            raise NamespaceNotFoundError(f"Namespace {namespace} does not exist") from None
        return _decode(node.data), node.stat.version

    async def permissions(self, namespace: NamespaceName | str) -> dict[str, list[str]]:
        """``namespace_auth``: role -> actions (Pulsar's ``GET .../permissions``)."""
        policies, _ = await self._policies(NamespaceName.parse(namespace))
        return _role_map((policies.get("auth_policies") or {}).get("namespace_auth"))

    async def topic_permissions(self, namespace: NamespaceName | str, topic: str) -> dict[str, list[str]]:
        """``destination_auth[topic]``: role -> actions granted on one topic."""
        policies, _ = await self._policies(NamespaceName.parse(namespace))
        per_topic = (policies.get("auth_policies") or {}).get("destination_auth") or {}
        return _role_map(per_topic.get(topic) if isinstance(per_topic, Mapping) else None)

    async def grant(self, namespace: NamespaceName | str, role: str, actions: Iterable[str]) -> None:
        chosen = sorted(set(actions))
        await self._update(NamespaceName.parse(namespace), lambda auth: auth.__setitem__(role, chosen))

    async def revoke(self, namespace: NamespaceName | str, role: str) -> None:
        await self._update(NamespaceName.parse(namespace), lambda auth: auth.pop(role, None))

    async def _update(self, namespace: NamespaceName, change: Any) -> None:
        for _ in range(_RETRIES):
            policies, version = await self._policies(namespace)
            auth = policies.get("auth_policies")
            auth = dict(auth) if isinstance(auth, Mapping) else {}
            namespace_auth = _role_map(auth.get("namespace_auth"))
            change(namespace_auth)
            auth["namespace_auth"] = namespace_auth
            auth.setdefault("destination_auth", {})
            auth.setdefault("subscription_auth_roles", {})
            policies["auth_policies"] = auth
            try:
                await self.store.set(
                    f"{POLICIES_ROOT}/{namespace}", json.dumps(policies).encode(), version=version
                )
                return
            except BadVersionError:
                continue
        raise BadVersionError(f"Permissions of {namespace} changed concurrently {_RETRIES} times; try again")
