"""The dynamic configuration in the metadata store: ``/admin/configuration``, one JSON map key → value.

Pulsar's ``DynamicConfigurationResources``: ``pulsar-admin brokers update-dynamic-config`` writes
the map (values as strings, as broker.conf writes them), every broker watches the node and applies
the values of the keys it knows to be dynamic. Changes are compare-and-set on the whole map, so two
admins changing different keys at once both win.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from brokerlb.coordination.paths import DYNAMIC_CONFIG_PATH
from brokerlb.coordination.records import decode_json
from brokerlb.coordination.retry import BUNDLE_UPDATE_RETRY, RetryPolicy, Sleep, retry_async
from brokerlb.coordination.store import MetadataStore
from brokerlb.coordination.watches import DataWatch
from brokerlb.errors import BadVersionError, CorruptMetadataError, NodeExistsError

__all__ = ["DynamicConfigStore", "parse_dynamic_config"]


def parse_dynamic_config(data: bytes | None, path: str = DYNAMIC_CONFIG_PATH) -> dict[str, str]:
    """The stored map (empty for no node or an empty one); every value as a string."""
    if data is None or not data.strip():
        return {}
    value = decode_json(data, path)
    if not isinstance(value, dict):
        raise CorruptMetadataError(f"The dynamic configuration must be a JSON object, got {value!r}", path)
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


class DynamicConfigStore:
    """Read, change and watch ``/admin/configuration``."""

    def __init__(
        self, store: MetadataStore, *, retry: RetryPolicy = BUNDLE_UPDATE_RETRY, sleep: Sleep = asyncio.sleep
    ) -> None:
        self.store = store
        self.retry = retry
        self._sleep = sleep

    async def read(self) -> dict[str, str]:
        node = await self.store.get_or_none(DYNAMIC_CONFIG_PATH)
        return parse_dynamic_config(None if node is None else node.data)

    async def set(self, key: str, value: str) -> None:
        await self._change(lambda values: {**values, key: value}, f"dynamic config {key}")

    async def delete(self, key: str) -> bool:
        """Remove ``key``; False when it was not set."""
        removed: list[bool] = []

        def drop(values: dict[str, str]) -> dict[str, str]:
            removed[:] = [key in values]
            return {k: v for k, v in values.items() if k != key}

        await self._change(drop, f"dynamic config {key}")
        return bool(removed and removed[0])

    def watch(self, callback: Callable[[bytes | None], None]) -> DataWatch:
        """Call ``callback(raw value or None)`` once started and on every change (start the watch with
        ``await watch.start()``; parse with :func:`parse_dynamic_config`)."""
        return self.store.watch_data(
            DYNAMIC_CONFIG_PATH, lambda node: callback(None if node is None else node.data)
        )

    async def _change(self, change: Callable[[dict[str, str]], dict[str, str]], what: str) -> None:
        async def attempt() -> None:
            node = await self.store.get_or_none(DYNAMIC_CONFIG_PATH)
            current = parse_dynamic_config(None if node is None else node.data)
            data = json.dumps(change(current), sort_keys=True, separators=(",", ":")).encode()
            if node is None:
                await self.store.create(DYNAMIC_CONFIG_PATH, data, make_parents=True)
            else:
                await self.store.set(DYNAMIC_CONFIG_PATH, data, version=node.stat.version)

        await retry_async(
            attempt,
            policy=self.retry,
            retry_on=(BadVersionError, NodeExistsError),
            sleep=self._sleep,
            what=what,
        )
