"""A standalone cluster: N brokers in this process on consecutive loopback ports.

``StandaloneCluster(brokers=3)`` starts brokers ``127.0.0.1:8080``, ``:8081``, ``:8082``
(Pulsar's binary protocol on 6650, 6651, ...; with ``web_port=0`` or ``broker_port=0`` the
ports are free ones, printed at start) over the embedded metadata store by default
(``memory:standalone``), or over ZooKeeper (``zk:host:port``). The namespace ``public/default``
is created at start (as Pulsar's standalone does). Every broker is a full
:class:`~brokerlb.broker.service.BrokerService` (its own store session, registration,
election, HTTP server); only the process is shared. Because of that, host usage is
modelled from each broker's traffic (``brokerlbHostUsage=traffic``) unless set
otherwise, on a small modelled broker (one core of 500 msg/s, ``brokerlbModelCores`` /
``brokerlbModelMsgRatePerCore``) so that local traffic shows.

:meth:`StandaloneCluster.stop` stops every broker gracefully (bundles released,
deregistered) -- what Ctrl-C does in ``brokerlb standalone``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from brokerlb.broker.service import BrokerService
from brokerlb.broker.wiring import build_broker
from brokerlb.config import ServiceConfig
from brokerlb.errors import InvalidConfigError

__all__ = ["StandaloneCluster", "standalone_config"]

logger = logging.getLogger(__name__)

#: Created at start, as Pulsar's standalone creates ``public/default``.
DEFAULT_NAMESPACE = "public/default"

STANDALONE_DEFAULTS: dict[str, Any] = {
    "clusterName": "standalone",
    "advertisedAddress": "127.0.0.1",
    "bindAddress": "127.0.0.1",
    "brokerlbHostUsage": "traffic",
    # a local broker is modelled small, so a developer's traffic reads tens of percent: one core of
    # 500 msg/s (in + out). `brokerlb perf` at its default 100 msg/s with a consumer, spread over 3
    # brokers, reads 10-20 % each (the defaults of `brokerlb broker`, 4 x 50,000, would read 0.1 %)
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 500,
    "webSocketServiceEnabled": True,
}


def standalone_config(
    base: ServiceConfig | None, index: int, *, metadata_store: str, web_port: int, broker_port: int | None
) -> ServiceConfig:
    """Broker ``index``'s config: the base, standalone defaults where the base left them unset, its ports."""
    base = base or ServiceConfig()
    values = {k: v for k, v in STANDALONE_DEFAULTS.items() if k not in base.explicit_keys}
    values["metadataStoreUrl"] = metadata_store
    values["webServicePort"] = web_port + index if web_port else 0
    if broker_port is None:  # consecutive binary ports beside consecutive web ports, else free ones
        broker_port = 6650 if web_port else 0
    values["brokerServicePort"] = broker_port + index if broker_port else 0
    return base.with_overrides(values)


class StandaloneCluster:
    """N brokers in one process (module docstring)."""

    def __init__(
        self,
        brokers: int = 3,
        *,
        metadata_store: str = "memory:standalone",
        web_port: int = 8080,
        broker_port: int | None = None,
        config: ServiceConfig | None = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> None:
        if brokers < 1:
            raise InvalidConfigError("--brokers", brokers, "a cluster needs at least one broker")
        base = (config or ServiceConfig()).with_overrides(dict(overrides or {}))
        self.configs = [
            standalone_config(
                base, i, metadata_store=metadata_store, web_port=web_port, broker_port=broker_port
            )
            for i in range(brokers)
        ]
        self.metadata_store = metadata_store
        self.brokers: list[BrokerService] = []

    async def start(self) -> StandaloneCluster:
        """Make sure the namespace ``public/default`` exists, as Pulsar's standalone does, then start
        every broker (one after another, so the first one is the first leader).

        The namespace is written to the metadata store before any broker answers HTTP, so no
        client of a ready (or even listening) broker can look it up before it exists.
        """
        try:
            await self._default_namespace()
            for conf in self.configs:
                self.brokers.append(await (await build_broker(conf)).start())
        except BaseException:
            await self.stop()
            raise
        return self

    async def _default_namespace(self) -> None:
        from brokerlb.coordination import BundleMetadata, open_store
        from brokerlb.errors import ConflictError, NodeExistsError

        conf = self.configs[0]
        store = open_store(
            self.metadata_store,
            session_timeout=conf.duration_seconds("metadataStoreSessionTimeoutMillis"),
            operation_timeout=conf.duration_seconds("metadataStoreOperationTimeoutSeconds"),
        )
        await store.start()
        try:
            metadata = BundleMetadata(store, default_num_bundles=conf.defaultNumberOfNamespaceBundles)
            await metadata.create_namespace(DEFAULT_NAMESPACE)
        except (ConflictError, NodeExistsError):  # already there (a restart on a kept store)
            pass
        finally:
            await store.close()

    async def stop(self) -> bool:
        """Stop every broker gracefully, the leader last (fewer leader changes while stopping), all
        within one ``brokerShutdownTimeoutMs`` (each broker gets what the ones before it left).
        Returns whether every broker's graceful part finished."""
        running = [b for b in self.brokers if b.started]
        running.sort(key=lambda b: b.is_leader)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.configs[0].brokerShutdownTimeoutMs / 1000
        graceful = True
        for broker in running:
            try:
                graceful = await broker.stop(timeout=deadline - loop.time()) and graceful
            except Exception:
                graceful = False
                logger.exception("Stopping broker %s failed", broker.broker_id)
        return graceful

    @property
    def urls(self) -> list[str]:
        return [b.url for b in self.brokers]

    def leader(self) -> BrokerService | None:
        return next((b for b in self.brokers if b.started and b.is_leader), None)

    async def wait_for_leader(self, timeout: float = 10.0) -> BrokerService:
        async def wait() -> BrokerService:
            while (leader := self.leader()) is None:
                await asyncio.sleep(0.02)
            return leader

        return await asyncio.wait_for(wait(), timeout)

    async def __aenter__(self) -> StandaloneCluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
