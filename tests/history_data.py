"""Seeded generators of load history for the history and pipeline tests."""

from __future__ import annotations

import random
import zlib

from brokerlb.history import BrokerSample, BundleBoundaries, TopicSample
from brokerlb.model import LocalBrokerData, NamespaceBundleStats
from brokerlb.ring import NamespaceBundles

T0 = 1_700_000_000_000


def broker_samples(
    seed: int,
    *,
    cycles: int = 200,
    brokers: int = 4,
    bundles: int = 10,
    removal_rate: float = 0.05,
    move_rate: float = 0.1,
) -> list[BrokerSample]:
    """Reports of ``brokers`` brokers on ``bundles`` bundles of ``t/ns``: bundles move between brokers
    (a moved bundle stays in its old owner's latest report until that broker reports again),
    brokers vanish now and then, several brokers report in the same millisecond, some reports
    omit a bundle, and a few records are written twice (an exact duplicate is one report).
    One broker never writes two different records in the same millisecond."""
    rng = random.Random(seed)
    layout = NamespaceBundles.create("t/ns", bundles)
    owner = {str(b): f"b{rng.randrange(brokers)}" for b in layout}
    samples: list[BrokerSample] = []
    used: set[tuple[int, str]] = set()
    ts = T0
    for _ in range(cycles):
        ts += rng.choice([0, 1, 5, 1000])
        b = f"b{rng.randrange(brokers)}"
        if samples and rng.random() < 0.03:
            samples.append(samples[-1])  # written twice
        while (ts, b) in used:
            ts += 1
        used.add((ts, b))
        if rng.random() < removal_rate:
            samples.append(BrokerSample.removed(ts, b))
            continue
        if rng.random() < move_rate:
            owner[rng.choice(list(owner))] = f"b{rng.randrange(brokers)}"
        stats = {
            name: NamespaceBundleStats(
                msg_rate_in=rng.random() * 100,
                msg_throughput_in=rng.random() * 1e6,
                msg_rate_out=rng.random() * 10,
                msg_throughput_out=rng.random() * 1e5,
                consumer_count=rng.randrange(5),
                producer_count=rng.randrange(3),
                topics=rng.randrange(1, 9),
            )
            for name, o in owner.items()
            if o == b and rng.random() < 0.9
        }
        report = LocalBrokerData()
        report.last_stats = stats
        samples.append(BrokerSample(ts, b, report))
    return samples


def topic_names(namespace: str, count: int, prefix: str = "topic") -> list[str]:
    return [f"persistent://{namespace}/{prefix}-{i}" for i in range(count)]


def topic_history(
    seed: int,
    *,
    namespaces: dict[str, int],
    topics: int = 40,
    snapshots: int = 6,
    brokers: int = 3,
    step_ms: int = 60_000,
    hot: dict[str, float] | None = None,
) -> tuple[list[TopicSample], list[BundleBoundaries]]:
    """Topic samples of ``topics`` topics per namespace over ``snapshots`` dumps (every topic on one
    broker per dump), and each namespace's layout: ``namespaces[ns]`` equal bundles at T0, and the
    first bundle split in half half-way through. ``hot`` adds topics with a steady msg rate in."""
    rng = random.Random(seed)
    samples: list[TopicSample] = []
    layouts: list[BundleBoundaries] = []
    for ns, count in namespaces.items():
        bundles = NamespaceBundles.create(ns, count)
        layouts.append(BundleBoundaries.of(T0, bundles))
        first = bundles.bundles[0]
        split_at = T0 + (snapshots // 2) * step_ms
        layouts.append(
            BundleBoundaries.of(
                split_at, bundles.split(first, [first.lower + (first.upper - first.lower) // 2])
            )
        )
    for k in range(snapshots):
        ts = T0 + k * step_ms
        for ns in namespaces:
            for name in topic_names(ns, topics):
                broker = f"broker-{zlib.crc32(name.encode()) % brokers}:8080"
                samples.append(
                    TopicSample(
                        ts,
                        broker,
                        name,
                        msg_rate_in=rng.random() * 100,
                        msg_rate_out=rng.random() * 50,
                        msg_throughput_in=rng.random() * 1e5,
                        msg_throughput_out=rng.random() * 5e4,
                        producer_count=rng.randrange(3),
                        consumer_count=rng.randrange(4),
                    )
                )
        for name, rate in (hot or {}).items():
            samples.append(
                TopicSample(ts, "broker-0:8080", name, msg_rate_in=rate, producer_count=1, consumer_count=1)
            )
    return samples, layouts


#: A small cluster under skewed traffic with a hot topic: 4 brokers of 2 cores at about 60%,
#: 3 namespaces of 4 bundles; strategies and thresholds make different moves on it.
BACKTEST_SCENARIO = {
    "seed": 3,
    "duration": "60m",
    "tick": "1m",
    "brokers": [{"name": "broker-{i}", "count": 4, "cores": 2}],
    "workload": {"msg_rate": "55k", "msg_size": "1KB", "zipf": 1.1, "noise": 0.1},
    "namespaces": [{"name": "t/ns-{i}", "count": 3, "bundles": 4, "topics": 40}],
    "events": [{"at": "20m", "type": "hot_topic", "namespace": "t/ns-1", "topic": 3, "factor": 8}],
}


def simulated_history(root) -> None:  # type: ignore[no-untyped-def]
    """Write the load history of :data:`BACKTEST_SCENARIO` under ThresholdShedder into ``root``
    (broker reports, layouts, topic samples every minute): a recorded cluster for backtests."""
    from brokerlb.sim import parse_scenario, run_scenario

    run_scenario(
        parse_scenario(BACKTEST_SCENARIO), "ThresholdShedder", history_dir=root, history_topic_interval=60
    )
