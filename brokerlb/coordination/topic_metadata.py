"""Created persistent topics: ``/managed-ledgers/{tenant}/{ns}/persistent/{encodedLocalName}``.

Pulsar keeps a persistent topic's managed-ledger metadata at that path and lists a namespace's
persistent topics from its children (``getListOfPersistentTopics``). brokerlb keeps no messages in
the store; its node only says "this persistent topic was created" (by ``PUT
/admin/v2/persistent/{t}/{ns}/{topic}`` or with a partitioned topic's partitions), with the
properties given at creation. Non-persistent topics have no node (they exist while served).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import unquote_plus

from brokerlb.coordination.paths import managed_ledger_path, managed_ledgers_path
from brokerlb.coordination.store import MetadataStore
from brokerlb.errors import ConflictError, NodeExistsError, NoNodeError
from brokerlb.naming import NamespaceName, TopicName

__all__ = ["PersistentTopics"]


class PersistentTopics:
    """The created persistent topics of the cluster."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    async def create(self, topic: TopicName | str, properties: Mapping[str, str] | None = None) -> None:
        """409 "This topic already exists" when it does."""
        name = TopicName.parse(topic)
        data = json.dumps({"properties": dict(properties or {})}, separators=(",", ":")).encode()
        try:
            await self.store.create(managed_ledger_path(name), data, make_parents=True)
        except NodeExistsError as exc:
            raise ConflictError(f"This topic already exists: {name}") from exc

    async def ensure(self, topic: TopicName | str) -> None:
        """Create the node if missing (a partition of a new partitioned topic)."""
        try:
            await self.create(topic)
        except ConflictError:
            pass

    async def exists(self, topic: TopicName | str) -> bool:
        return await self.store.exists(managed_ledger_path(TopicName.parse(topic))) is not None

    async def delete(self, topic: TopicName | str) -> bool:
        """False when there was nothing to delete."""
        try:
            await self.store.delete(managed_ledger_path(TopicName.parse(topic)))
            return True
        except NoNodeError:
            return False

    async def names(self, namespace: NamespaceName | str) -> list[str]:
        """Full names of the namespace's created persistent topics (sorted)."""
        ns = NamespaceName.parse(namespace)
        try:
            encoded = await self.store.children(managed_ledgers_path(ns))
        except NoNodeError:
            return []
        return sorted(f"persistent://{ns}/{unquote_plus(e)}" for e in encoded)

    async def delete_namespace(self, namespace: NamespaceName | str) -> None:
        await self.store.delete_recursive(f"/managed-ledgers/{NamespaceName.parse(namespace)}")
