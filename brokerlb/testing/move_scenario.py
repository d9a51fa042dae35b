"""The data path's end-to-end scenario: skewed traffic on a standalone cluster while bundles move.

:func:`run_move_scenario` starts ``brokerlb standalone`` with N brokers as a separate
process (:class:`~brokerlb.testing.standalone_process.StandaloneProcess`: embedded store,
WebSocket data path on, short report / stats / shedding intervals, ``UniformLoadShedder``),
creates a namespace, subscribes a Shared consumer to every topic and publishes over them
with Zipf skew from this process (:mod:`brokerlb.perf.runner`). While traffic runs it

1. unloads the hottest bundles one after another (**plain unloads**: clients look up),
2. then transfers the same bundles to another broker (**transfers**: clients go straight
   to the new owner, PIP-307),

and the leader sheds meanwhile (its unloads are transfers too). At the end every send is
accounted for (acked or errored); each admin move gets the longest publish pause of its
topics (:func:`~brokerlb.perf.moves.attribute_pauses`), and every close any producer saw
-- admin or shedding -- gets the pause around it, by close reason
(:func:`~brokerlb.perf.moves.pauses_by_close`). Used by the end-to-end test and by
``benchmarks/bench_moves.py``; nothing here imports pytest.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination.retry import RetryPolicy, is_retriable, retry_async
from brokerlb.naming import TopicName
from brokerlb.perf.moves import Move, attribute_pauses, pause_summary, pauses_by_close
from brokerlb.perf.runner import (
    ConsumeOptions,
    ConsumeRun,
    ConsumeSummary,
    ProduceOptions,
    ProduceRun,
    ProduceSummary,
)
from brokerlb.perf.workload import skew_weights
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.standalone_process import StandaloneProcess
from brokerlb.testing.waiting import eventually

#: a lookup of a bundle in flight: retried every 0.2 s, up to a minute (a move ends well within it)
IN_FLIGHT_RETRY = RetryPolicy(max_retries=300, delay_s=0.2)

__all__ = ["MoveScenario", "MoveScenarioResult", "run_move_scenario", "SCENARIO_OVERRIDES", "hottest_bundles"]

logger = logging.getLogger(__name__)

#: Broker settings of the scenario: data path on, fast reports and rates, shedding every 3 s.
SCENARIO_OVERRIDES: dict[str, Any] = {
    "webSocketServiceEnabled": True,
    "statsUpdateFrequencyInSecs": 3,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerSheddingIntervalMinutes": 0.05,
    "loadBalancerSheddingGracePeriodMinutes": 0.25,
    "loadBalancerLoadSheddingStrategy": "UniformLoadShedder",
    "minUnloadMessage": 20,
    "minUnloadMessageThroughput": 1000,
    "metadataStoreSessionTimeoutMillis": 10000,
}


@dataclass
class MoveScenario:
    brokers: int = 3
    topics: int = 200
    bundles: int = 16
    rate: float = 600.0
    size: int = 256
    zipf: float = 1.0
    seed: int = 42
    plain_unloads: int = 3
    transfers: int = 3
    move_gap: float = 2.0
    warmup: float = 4.0
    tail: float = 3.0
    shedding: bool = True
    #: With shedding on, the tail lasts until the leader has shed at least once (up to this long).
    shed_timeout: float = 120.0
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class MoveScenarioResult:
    produce: ProduceSummary
    consume: ConsumeSummary
    moves: list[Move]
    shed_closes: int

    @property
    def admin_pauses(self) -> dict[str, dict[str, Any]]:
        """Admin moves by kind (``unload``, ``transfer``): the longest pause of each move's topics."""
        return pause_summary(self.moves)

    @property
    def close_pauses(self) -> dict[str, dict[str, Any]]:
        """Every close a producer saw, by reason: the pause around it."""
        return pauses_by_close(self.produce.close_events, self.produce.pauses)

    def to_json(self) -> dict[str, Any]:
        return {
            "produce": self.produce.to_json(),
            "consume": self.consume.to_json(),
            "adminMovePauses": self.admin_pauses,
            "closePauses": self.close_pauses,
            "shedCloses": self.shed_closes,
            "moves": [m.to_json() for m in self.moves],
        }


def hottest_bundles(
    bundles: NamespaceBundles, topics: list[str], weights: list[float], count: int
) -> list[str]:
    """The ``count`` bundles carrying the largest share of the traffic, hottest first."""
    load: dict[str, float] = {}
    for topic, w in zip(topics, weights, strict=True):
        name = str(bundles.find_bundle(TopicName.parse(topic)))
        load[name] = load.get(name, 0.0) + w
    return [b for b, _ in sorted(load.items(), key=lambda kv: -kv[1])[:count]]


async def run_move_scenario(s: MoveScenario, log: Callable[[str], None] = logger.info) -> MoveScenarioResult:
    overrides = {**SCENARIO_OVERRIDES, **s.overrides}
    if not s.shedding:
        overrides["loadBalancerSheddingEnabled"] = False
    async with StandaloneProcess(s.brokers, overrides) as cluster:
        log(f"brokerlb standalone: {len(cluster.urls)} brokers at {', '.join(cluster.urls)}")
        return await _run(cluster, s, log)


async def _run(cluster: StandaloneProcess, s: MoveScenario, log: Callable[[str], None]) -> MoveScenarioResult:
    namespace = f"public/moves-{uuid.uuid4().hex[:6]}"
    base = f"persistent://{namespace}/perf"
    url = cluster.urls[0]
    async with AsyncAdminClient(url) as admin:
        await admin.create_namespace(namespace, num_bundles=s.bundles)
        ring = NamespaceBundles.from_json(namespace, await admin.get_bundles(namespace))
    consume = ConsumeRun(ConsumeOptions(url, base, s.topics, subscription="e2e", subscription_type="Shared"))
    produce = ProduceRun(
        ProduceOptions(
            url,
            base,
            s.topics,
            rate=s.rate,
            size=s.size,
            topic_skew="zipf",
            topic_zipf=s.zipf,
            seed=s.seed,
            pause_keep_above=0.002,
        )
    )
    t0 = time.monotonic()
    await consume.start()
    await produce.start()
    log(f"{s.topics} producers and {s.topics} consumers connected in {time.monotonic() - t0:.1f} s")

    def topics_of(bundle: str) -> frozenset[str]:
        return frozenset(t for t in produce.topics if str(ring.find_bundle(TopicName.parse(t))) == bundle)

    moves: list[Move] = []
    producing = asyncio.create_task(produce.run())
    consuming = asyncio.create_task(consume.run())
    try:
        await asyncio.sleep(s.warmup)
        hot = hottest_bundles(
            ring, produce.topics, skew_weights(s.topics, "zipf", s.zipf), max(s.plain_unloads, s.transfers)
        )
        async with AsyncAdminClient(url) as admin:
            for kind, count in (("unload", s.plain_unloads), ("transfer", s.transfers)):
                for bundle in hot[:count]:
                    move = await _move(admin, cluster.broker_ids, kind, bundle, topics_of(bundle))
                    moves.append(move)
                    log(
                        f"{kind:8s} {bundle} ({len(move.topics)} topics, {move.source} -> "
                        f"{move.destination or 'lookup'}) took {(move.end - move.start) * 1e3:.0f} ms"
                    )
                    await asyncio.sleep(s.move_gap)
        await asyncio.sleep(s.tail)
        if s.shedding:
            await _until_shed(produce, sum(len(m.topics) for m in moves), s.shed_timeout, log)
    finally:
        produce.stop()
        consume.stop()
        produce_summary = await producing
        consume_summary = await consuming
    attribute_pauses(moves, produce_summary.pauses)
    admin_closes = sum(len(m.topics) for m in moves)
    shed = max(0, sum(produce_summary.closes.values()) - admin_closes)
    return MoveScenarioResult(produce_summary, consume_summary, moves, shed)


async def _until_shed(
    produce: ProduceRun, admin_closes: int, timeout: float, log: Callable[[str], None]
) -> None:
    """Keep the traffic going until a producer saw a close the admin moves do not explain (the
    leader shed), so a loaded machine ends the scenario later rather than without shedding."""

    def shed() -> bool:
        return sum(sum(p.stats.closes.values()) for p in produce.producers) > admin_closes

    try:
        await eventually(shed, timeout=timeout, interval=0.1, message="a close by the leader's shedding")
    except AssertionError:
        log(f"the leader shed nothing within {timeout:.0f} s after the admin moves")


async def _move(
    admin: AsyncAdminClient, brokers: list[str], kind: str, bundle: str, topics: frozenset[str]
) -> Move:
    namespace, _, bundle_range = bundle.rpartition("/")
    source = None
    if topics:
        # the bundle may be in flight (the leader's shedding moves it too): 503, look it up again,
        # as a client does
        topic = next(iter(topics))
        owner = await retry_async(
            lambda: admin.lookup_topic(topic), policy=IN_FLIGHT_RETRY, retry_on=is_retriable, what="lookup"
        )
        source = str(owner["httpUrl"]).split("://", 1)[1]
    destination = next((b for b in brokers if b != source), None) if kind == "transfer" else None
    start = time.monotonic()
    await admin.unload_bundle(namespace, bundle_range, destination_broker=destination)
    return Move(kind, bundle, start, time.monotonic(), topics, source, destination)
