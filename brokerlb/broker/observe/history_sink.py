"""What a broker writes to the load history (``brokerlbLoadHistoryDir``): the pipeline's inputs, live.

Every broker of the cluster writes into the one history directory (a file system they all
reach), under its own writer id -- its broker id -- the three record kinds of
``docs/load-history.md``:

* **broker samples**, while it leads: every load report the leader reads, and a removal when a
  broker's registration vanished (:meth:`BrokerHistory.report`, the leader's
  :class:`~brokerlb.broker.leader.leader.HistorySink`);
* **topic samples**, every ``statsUpdateFrequencyInSecs``: each topic it serves, with the rates,
  counts and sizes it measures (its ``broker-stats/topics``, :func:`topic_samples`);
* **bundle layouts**: every layout it writes to the metadata store (a namespace created, a bundle
  split or merged), at once (:meth:`BrokerHistory.layout`); while it leads, also the layout of
  every namespace in the brokers' reports when it takes over and when a new one appears.

Files are published (renamed from their hidden in-progress names) every
``brokerlbLoadHistoryPublishIntervalSeconds`` and on demand (:meth:`BrokerHistory.publish`,
``POST /admin/v2/brokers/load-history/publish``).

**Departures, shutdowns and restarts** (:class:`~brokerlb.history.DepartureHold`): after a
broker's registration vanishes, load records (broker and topic samples) are held back for
``brokerlbLoadHistoryDepartureHoldSeconds``; a broker still running after that writes them; a
broker that stops first drops them -- so a cluster that stops leaves its history as it served,
not as it shut down. A broker that takes over the leadership compares the brokers the written
history counts as present (``broker-samples/_members.json``) with the registered ones and writes
the removal of those that did not come back (held back the same way; a broker that registers
within the hold was starting, not gone).

The sink counts what it costs (:attr:`BrokerHistory.cost`): time per load report written by the
leader and per topic dump, read by ``GET /admin/v2/brokers/load-history``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brokerlb.clock import Clock
from brokerlb.errors import BrokerLBError, NamespaceNotFoundError
from brokerlb.history import (
    BrokerSample,
    BundleBoundaries,
    DepartureHold,
    HistoryRecord,
    HistoryWriter,
    TopicSample,
    read_members,
    write_members,
)
from brokerlb.model import LocalBrokerData
from brokerlb.naming import is_heartbeat_namespace, is_sla_namespace
from brokerlb.ring import NamespaceBundles

if TYPE_CHECKING:
    from brokerlb.broker.data.served_topics import ServedTopics
    from brokerlb.broker.data.topics import TopicRegistry
    from brokerlb.broker.ownership.bundles_cache import NamespaceBundlesCache
    from brokerlb.config import ServiceConfig
    from brokerlb.coordination import BrokerRegistry, BundleMetadata, LeaderLease, RegistryEvent

__all__ = [
    "BrokerHistory",
    "HistoryCost",
    "DUMP_SLICE",
    "attach_broker_history",
    "topic_names",
    "topic_samples",
]

logger = logging.getLogger(__name__)


@dataclass
class HistoryCost:
    """What writing the history has cost this broker (wall seconds on its event loop)."""

    reports: int = 0
    report_seconds: float = 0.0
    topic_dumps: int = 0
    topic_rows: int = 0
    topic_seconds: float = 0.0
    layouts: int = 0
    publishes: int = 0
    publish_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        def per(seconds: float, n: int) -> float | None:
            return round(seconds / n * 1e6, 1) if n else None

        return {
            "reports": self.reports,
            "reportSeconds": round(self.report_seconds, 6),
            "microsecondsPerReport": per(self.report_seconds, self.reports),
            "topicDumps": self.topic_dumps,
            "topicRows": self.topic_rows,
            "topicSeconds": round(self.topic_seconds, 6),
            "microsecondsPerTopicRow": per(self.topic_seconds, self.topic_rows),
            "layouts": self.layouts,
            "publishes": self.publishes,
            "publishSeconds": round(self.publish_seconds, 6),
        }


#: Topics per slice of a dump: between slices the broker's event loop serves (a dump of 10,000
#: topics is not one stall of half a second).
DUMP_SLICE = 256


def topic_names(topics: TopicRegistry) -> list[tuple[str, str]]:
    """``(bundle, topic)`` of every topic this broker serves."""
    return [(bundle, name) for bundle, names in topics.by_bundle().items() for name in names]


def topic_samples(
    served: ServedTopics, names: Iterable[tuple[str, str]], now_ms: int, broker_id: str
) -> list[TopicSample]:
    """One :class:`TopicSample` per ``(bundle, topic)`` still served, as this broker's ``broker-stats/topics``
    measures it: rates and counts from the topic registry, subscriptions, backlog and counters from
    the engine."""
    rows = []
    for bundle, name in names:
        view = served.view(name)
        if view is None:
            continue
        st = view.stats
        rows.append(
            TopicSample(
                now_ms,
                broker_id,
                name,
                bundle,
                msg_rate_in=st.msg_rate_in,
                msg_rate_out=st.msg_rate_out,
                msg_throughput_in=st.msg_throughput_in,
                msg_throughput_out=st.msg_throughput_out,
                producer_count=st.producer_count,
                consumer_count=st.consumer_count,
                subscription_count=len(view.subscriptions),
                average_msg_size=st.msg_throughput_in / st.msg_rate_in if st.msg_rate_in else 0.0,
                backlog_size=view.backlog_size,
                msg_backlog=sum(s.msg_backlog for s in view.subscriptions),
                msg_in_count=view.msg_in_counter or 0,
                bytes_in_count=view.bytes_in_counter or 0,
                msg_out_count=view.msg_out_counter or 0,
                bytes_out_count=view.bytes_out_counter or 0,
            )
        )
    return rows


class BrokerHistory:
    """One broker's load-history writer (module docstring)."""

    def __init__(
        self,
        directory: str,
        broker_id: str,
        *,
        clock: Clock,
        publish_interval_s: float = 60.0,
        hold_s: float = 60.0,
        topic_interval_s: float = 60.0,
        served: ServedTopics | None = None,
        topics: TopicRegistry | None = None,
        registry: BrokerRegistry | None = None,
        bundles: NamespaceBundlesCache | None = None,
    ) -> None:
        self.directory = Path(directory)
        self.broker_id = broker_id
        self.writer = HistoryWriter(directory, broker_id)
        self.clock = clock
        self.publish_interval_s = publish_interval_s
        self.topic_interval_s = topic_interval_s
        self.hold: DepartureHold[HistoryRecord] = DepartureHold(int(hold_s * 1000))
        self.cost = HistoryCost()
        self._served = served
        self._topics = topics
        self._registry = registry
        self._bundles = bundles
        #: The report last written per broker (``None`` after its removal sample).
        self.latest: dict[str, LocalBrokerData | None] = {}
        #: Brokers the written broker samples count as present (``_members.json``; the leader's).
        self.members: set[str] | None = None
        #: Removals written at a takeover for brokers missing then (dropped if they register in time).
        self._recovered: dict[str, BrokerSample] = {}
        #: The layout this writer wrote last, per namespace.
        self._layouts: dict[str, tuple[int, ...]] = {}
        self.published_at_ms: int | None = None
        self.last_published: list[str] = []
        self._stopped = False
        self._closed = False
        #: Removers of the listeners :func:`attach_broker_history` added.
        self.detach: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ writing
    def _write_load(self, records: list[HistoryRecord], now_ms: int) -> None:
        """Load records go through the departure hold; what it lets through is written now."""
        if self._stopped:
            return
        out = self.hold.admit(records, now_ms)
        if out:
            self.writer.write_all(out)
            self._track_members(out)

    def _release(self, now_ms: int) -> None:
        out = self.hold.release(now_ms)
        if out:
            self.writer.write_all(out)
            self._track_members(out)

    def _track_members(self, written: list[HistoryRecord]) -> None:
        samples = [r for r in written if isinstance(r, BrokerSample)]
        if not samples:
            return
        members = set(self.members or ())
        for sample in samples:
            if sample.is_removal:
                members.discard(sample.broker_id)
            else:
                members.add(sample.broker_id)
        if members != self.members:
            self.members = members
            try:
                write_members(self.directory, samples[-1].timestamp, members)
            except OSError as exc:
                logger.warning("Could not write %s: %s", self.directory / "broker-samples", exc)

    def report(self, now_ms: int, broker_id: str, data: LocalBrokerData | None) -> None:
        """The leader read ``broker_id``'s load report (``None``: its registration vanished)."""
        started = time.perf_counter()
        if data is None:
            self.hold.departed(now_ms)
            sample = BrokerSample.removed(now_ms, broker_id)
        else:
            sample = BrokerSample(now_ms, broker_id, data)
        self._write_load([sample], now_ms)
        self.latest[broker_id] = data
        self.cost.reports += 1
        self.cost.report_seconds += time.perf_counter() - started

    async def sample_topics(self) -> int:
        """Write one dump of this broker's topics (all rows at one timestamp), :data:`DUMP_SLICE` topics
        at a time with the event loop serving in between; returns the rows written (or held back)."""
        if self._served is None or self._topics is None or self._stopped:
            return 0
        now = self.clock.now_ms()
        started = time.perf_counter()
        names = topic_names(self._topics)
        spent = time.perf_counter() - started
        written = 0
        for first in range(0, len(names), DUMP_SLICE):
            if first:
                await asyncio.sleep(0)
                if self._stopped:
                    break
            started = time.perf_counter()
            rows = topic_samples(self._served, names[first : first + DUMP_SLICE], now, self.broker_id)
            self._write_load(list(rows), now)
            written += len(rows)
            spent += time.perf_counter() - started
        self.cost.topic_dumps += 1
        self.cost.topic_rows += written
        self.cost.topic_seconds += spent
        return written

    def layout(self, bundles: NamespaceBundles, now_ms: int | None = None) -> bool:
        """Write a namespace's layout (never held back); ``False`` if this writer wrote the same last."""
        namespace = str(bundles.namespace)
        if self._closed or self._layouts.get(namespace) == tuple(bundles.boundaries):
            return False
        record = BundleBoundaries.of(self.clock.now_ms() if now_ms is None else now_ms, bundles)
        self.writer.write(record)
        self._layouts[namespace] = record.boundaries
        self.cost.layouts += 1
        return True

    def layout_written(self, bundles: NamespaceBundles) -> None:
        """:class:`~brokerlb.coordination.BundleMetadata`'s listener: a layout this broker wrote."""
        try:
            self.layout(bundles)
        except (BrokerLBError, OSError) as exc:
            logger.warning(
                "Could not record the layout of %s in the load history: %s", bundles.namespace, exc
            )

    # ------------------------------------------------------------------ cluster events
    def on_registry(self, event: RegistryEvent) -> None:
        """A broker left: hold load records back. A broker counted as gone at a takeover registered."""
        from brokerlb.coordination import RegistryEventKind

        if event.broker_id == self.broker_id:
            return
        if event.kind is RegistryEventKind.LEFT:
            self.hold.departed(self.clock.now_ms())
        elif event.kind is RegistryEventKind.JOINED:
            recovered = self._recovered.pop(event.broker_id, None)
            if recovered is not None:
                self.hold.discard(lambda r: r is recovered)

    # ------------------------------------------------------------------ publishing
    def publish(self) -> list[str]:
        """Write the held-back records whose hold has passed, then publish every open file now."""
        if self._closed:
            return []
        started = time.perf_counter()
        now = self.clock.now_ms()
        self._release(now)
        paths = [str(p) for p in self.writer.roll()]
        self.published_at_ms = now
        self.last_published = paths
        self.cost.publishes += 1
        self.cost.publish_seconds += time.perf_counter() - started
        return paths

    def status(self) -> dict[str, Any]:
        """What ``GET /admin/v2/brokers/load-history`` shows for this broker."""
        return {
            "brokerId": self.broker_id,
            "directory": str(self.directory),
            "publishIntervalSeconds": self.publish_interval_s,
            "topicSampleIntervalSeconds": self.topic_interval_s,
            "departureHoldSeconds": self.hold.hold_ms / 1000,
            "publishedAt": self.published_at_ms,
            "lastPublished": self.last_published,
            "heldBack": self.hold.held,
            "heldUntil": self.hold.until_ms,
            "droppedAtStop": self.hold.dropped,
            "stopped": self._stopped,
            "cost": self.cost.to_json(),
        }

    # ------------------------------------------------------------------ tasks
    async def run(self) -> None:
        """Topic dumps every ``topic_interval_s``, publication every ``publish_interval_s`` (cancelled
        when the broker stops)."""
        now = self.clock.monotonic()
        next_topics, next_publish = now + self.topic_interval_s, now + self.publish_interval_s
        while not self._stopped:
            now = self.clock.monotonic()
            wait = min(next_topics, next_publish) - now
            if wait > 0:
                await self.clock.sleep(wait)
                continue
            try:
                if now >= next_topics:
                    next_topics = now + self.topic_interval_s
                    await self.sample_topics()
                if now >= next_publish:
                    next_publish = now + self.publish_interval_s
                    self.publish()
            except (BrokerLBError, OSError) as exc:
                logger.warning("Load history of %s: %s", self.broker_id, exc)

    async def lead(self, lease: LeaderLease) -> None:
        """Leader work: removals of brokers the history counts but that are gone, then the layouts of
        the namespaces in the reports (at once, and each new one every publish interval)."""
        self._takeover(self.clock.now_ms())
        while True:
            lease.check()
            await self._record_layouts()
            await self.clock.sleep(self.publish_interval_s)

    def _takeover(self, now_ms: int) -> None:
        if self._registry is None:
            return
        try:
            known = read_members(self.directory)
        except BrokerLBError as exc:
            logger.warning("Load history: %s; the brokers of the previous leadership are not checked", exc)
            known = None
        self.members = set(known) if known is not None else set()
        registered = set(self._registry.available_brokers())
        gone = sorted(self.members - registered)
        if not gone:
            return
        logger.info(
            "Load history: %s counted as present by the history but not registered; their removals are "
            "written unless they register within %.0f s",
            ", ".join(gone),
            self.hold.hold_ms / 1000,
        )
        self.hold.departed(now_ms)
        for broker in gone:
            removal = BrokerSample.removed(now_ms, broker)
            self._recovered[broker] = removal
            self._write_load([removal], now_ms)

    async def _record_layouts(self) -> None:
        if self._registry is None or self._bundles is None:
            return
        namespaces: set[str] = set()
        for broker in self._registry.available_brokers():
            report = self._registry.report(broker)
            if report is not None:
                namespaces.update(b.rpartition("/")[0] for b in report.last_stats)
        for namespace in sorted(namespaces):
            if not namespace or is_heartbeat_namespace(namespace) or is_sla_namespace(namespace):
                continue
            if namespace in self._layouts:
                continue
            try:
                self.layout(await self._bundles.get(namespace))
            except NamespaceNotFoundError:
                continue
            except (BrokerLBError, OSError) as exc:
                logger.warning("Could not record the layout of %s in the load history: %s", namespace, exc)

    # ------------------------------------------------------------------ stop
    def stopping(self) -> None:
        """The broker stops: no more load records; what is held back is dropped (the shutdown rule)."""
        if self._stopped:
            return
        self._stopped = True
        dropped = self.hold.drop()
        if dropped:
            logger.info(
                "Load history: %d records written since a broker left are dropped -- this broker stops "
                "within %.0f s of the departure (a cluster stopping)",
                dropped,
                self.hold.hold_ms / 1000,
            )

    def close(self) -> None:
        """Stop (if not yet) and publish the open files."""
        if self._closed:
            return
        self.stopping()
        self._closed = True
        for remove in self.detach:
            remove()
        self.writer.close()


def attach_broker_history(
    conf: ServiceConfig,
    broker_id: str,
    *,
    clock: Clock,
    registry: BrokerRegistry,
    bundles: NamespaceBundlesCache,
    metadata: BundleMetadata,
    served: ServedTopics,
    topics: TopicRegistry,
) -> BrokerHistory | None:
    """The broker's :class:`BrokerHistory` when ``brokerlbLoadHistoryDir`` is set, listening to the
    registry and to the layouts ``metadata`` writes; ``None`` otherwise."""
    if not conf.brokerlbLoadHistoryDir:
        return None
    history = BrokerHistory(
        conf.brokerlbLoadHistoryDir,
        broker_id,
        clock=clock,
        publish_interval_s=conf.brokerlbLoadHistoryPublishIntervalSeconds,
        hold_s=conf.brokerlbLoadHistoryDepartureHoldSeconds,
        topic_interval_s=float(conf.statsUpdateFrequencyInSecs),
        served=served,
        topics=topics,
        registry=registry,
        bundles=bundles,
    )
    history.detach += [
        registry.add_listener(history.on_registry),
        metadata.add_layout_listener(history.layout_written),
    ]
    return history
