"""``recommend``: hot-bundle splits, cold-bundle merges and bundle counts from topic-level history → a plan.

1. Topic samples in the window (default: the 24 hours up to the newest sample) are reduced per
   topic to one load: ``mean`` (default), ``p95`` or ``max`` over its samples of msg rate in +
   out, throughput in + out and producers + consumers.
2. Each topic goes to its bundle in the namespace's layout valid at the window's end (``crc32``
   of the full name, as the ring does). Namespaces without a recorded layout are listed in the
   advice and left alone.
3. Per namespace (``applyInPandas`` over namespaces: coarse groups), the pure advisor
   :func:`brokerlb.pipeline.advisor.plan_namespace` picks balanced split boundaries for hot
   bundles (hot topics alone), merges of adjacent cold bundles, and a bundle count -- never
   fewer bundles than the brokers that reported in the window (``AdvisorOptions.brokers``).
4. Each split's children are placed (unless ``--no-unload`` or ``--no-placement``): the parent's
   load leaves the broker that served its topics last, and each child, heaviest first, goes to the
   broker with the least load (the rates of the topics each broker served last); a child placed
   elsewhere is a transfer (``unload`` with ``destinationBroker``) after the split, which then keeps
   its children (:mod:`brokerlb.pipeline.placement`).
5. The result is a :class:`~brokerlb.plan.Plan` (splits, the children's transfers, then merges)
   that ``brokerlb plan apply PLAN --url ...`` sends to a cluster.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError
from brokerlb.pipeline.advisor import AdvisorOptions, BundleLimits
from brokerlb.pipeline.tables import Warehouse
from brokerlb.plan.format import MergeOp, Plan, SplitOp, UnloadOp

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["STATISTICS", "DEFAULT_WINDOW_MS", "topic_loads", "recommend"]

STATISTICS = ("mean", "p95", "max")
DEFAULT_WINDOW_MS = 24 * 3600 * 1000


def _stat(column, statistic: str):  # type: ignore[no-untyped-def]
    from pyspark.sql import functions as F

    if statistic == "mean":
        return F.avg(column)
    if statistic == "max":
        return F.max(column)
    return F.percentile_approx(column, 0.95, 1000).cast("double")


def topic_loads(samples: DataFrame, statistic: str = "mean") -> DataFrame:
    """One row per topic: ``namespace, topic, topicHash, msgRate, msgThroughput, sessions, samples`` and
    ``broker``, the one that served it last."""
    from pyspark.sql import functions as F

    if statistic not in STATISTICS:
        raise InvalidInputError(f"Unknown statistic {statistic!r}; known: {', '.join(STATISTICS)}")
    rate = F.col("msgRateIn") + F.col("msgRateOut")
    tput = F.col("msgThroughputIn") + F.col("msgThroughputOut")
    sessions = (F.col("producerCount") + F.col("consumerCount")).cast("double")
    return samples.groupBy("namespace", "topic").agg(
        F.first(F.crc32(F.col("topic"))).alias("topicHash"),
        _stat(rate, statistic).alias("msgRate"),
        _stat(tput, statistic).alias("msgThroughput"),
        _stat(sessions, statistic).alias("sessions"),
        F.count(F.lit(1)).alias("samples"),
        F.max_by("broker", "timestamp").alias("broker"),
    )


def _planner(layouts: dict[str, tuple[int, ...]], limits: BundleLimits, options: AdvisorOptions):  # type: ignore[no-untyped-def]
    def plan_group(key: tuple[Any, ...], frame: pd.DataFrame) -> pd.DataFrame:
        import pandas as pd

        from brokerlb.pipeline.advisor import TopicLoads, plan_namespace

        namespace = key[0]
        topics = TopicLoads.of(
            frame["topicHash"].to_numpy(),
            frame["msgRate"].to_numpy(),
            frame["msgThroughput"].to_numpy(),
            frame["sessions"].to_numpy(),
            frame["topic"].tolist(),
        )
        plan = plan_namespace(namespace, layouts[namespace], topics, limits, options)
        doc = {
            "splits": [op.to_json() for op in plan.splits],
            "merges": [op.to_json() for op in plan.merges],
            "advice": plan.advice,
        }
        return pd.DataFrame({"namespace": [namespace], "plan": [json.dumps(doc)]})

    return plan_group


def _brokers(spark: SparkSession, wh: Warehouse, since: int, until: int) -> int:
    """Brokers that reported in the window (the history records no isolation policy: each of them
    is taken as eligible for every namespace)."""
    from pyspark.sql import functions as F

    reports = wh.read_optional(spark, "broker_samples")
    if reports is None:
        return 0
    window = reports.where((F.col("timestamp") >= since) & (F.col("timestamp") <= until))
    if "removed" in window.columns:
        window = window.where(~F.col("removed"))
    row = window.agg(F.countDistinct("brokerId").alias("n")).first()
    return int(row["n"]) if row is not None and row["n"] is not None else 0


def _placed(
    spark: SparkSession, wh: Warehouse, loads: DataFrame, splits: list[SplitOp], since: int, until: int
) -> tuple[list[SplitOp], list[UnloadOp]]:
    """The splits with their children placed (:func:`brokerlb.pipeline.placement.place_children`): the
    brokers' loads are the rates of the topics each served last; brokers whose latest broker sample
    in the window is a removal take nothing, brokers reporting without topics take from zero."""
    from collections import Counter

    from pyspark.sql import functions as F

    from brokerlb.pipeline.placement import place_children
    from brokerlb.ring import parse_range

    broker_load = {
        r["broker"]: float(r["load"] or 0.0)
        for r in loads.groupBy("broker").agg(F.sum("msgRate").alias("load")).collect()
    }
    reports = wh.read_optional(spark, "broker_samples")
    if reports is not None:
        latest = (
            reports.where((F.col("timestamp") >= since) & (F.col("timestamp") <= until))
            .groupBy("brokerId")
            .agg(F.max_by("removed", "timestamp").alias("removed"))
            .collect()
        )
        for r in latest:
            if r["removed"]:
                broker_load.pop(r["brokerId"], None)
            else:
                broker_load.setdefault(r["brokerId"], 0.0)
    namespaces = sorted({op.namespace for op in splits})
    topics = (
        loads.where(F.col("namespace").isin(namespaces)).select("namespace", "topicHash", "broker").collect()
    )
    owners: dict[str, str] = {}
    for op in splits:
        lower, upper = parse_range(op.bundle)
        served = Counter(
            t["broker"]
            for t in topics
            if t["namespace"] == op.namespace
            and lower <= t["topicHash"] < upper + (1 if upper == 0xFFFFFFFF else 0)
        )
        if served:
            owners[f"{op.namespace}/{op.bundle}"] = served.most_common(1)[0][0]
    return place_children(splits, owners, broker_load)


def recommend(
    spark: SparkSession,
    warehouse: str,
    *,
    since: int | None = None,
    until: int | None = None,
    statistic: str = "mean",
    limits: BundleLimits | None = None,
    options: AdvisorOptions | None = None,
    created_at: int | None = None,
) -> Plan:
    """The plan for the topic samples of ``warehouse`` (see the module docstring)."""
    from pyspark.sql import functions as F

    from brokerlb.pipeline.topic_bundles import boundary_index

    limits = limits or BundleLimits()
    options = options or AdvisorOptions()
    wh = Warehouse(warehouse)
    samples = wh.read(spark, "topic_samples")
    if until is None:
        newest = samples.agg(F.max("timestamp").alias("t")).first()
        until = newest["t"] if newest is not None else None
        if until is None:
            raise InvalidInputError(f"No topic samples in warehouse {warehouse}")
    if since is None:
        since = until - DEFAULT_WINDOW_MS
    window = samples.where((F.col("timestamp") >= since) & (F.col("timestamp") <= until))
    brokers = _brokers(spark, wh, since, until)
    if brokers > options.brokers:  # the floor: no fewer bundles than the brokers can share
        options = replace(options, brokers=brokers)
    loads = topic_loads(window, statistic).persist()
    index = boundary_index(wh.read_optional(spark, "bundle_boundaries"), until=until)
    layouts = {ns: v.boundaries for ns, v in index.latest(until).items()}
    namespaces = {
        r["namespace"]: (r["topics"], r["samples"])
        for r in loads.groupBy("namespace")
        .agg(F.count(F.lit(1)).alias("topics"), F.sum("samples").alias("samples"))
        .collect()
    }
    advice: list[dict[str, Any]] = []
    splits: list[SplitOp] = []
    merges: list[MergeOp] = []
    known = sorted(ns for ns in namespaces if ns in layouts)
    if known:
        planned = (
            loads.where(F.col("namespace").isin(known))
            .groupBy("namespace")
            .applyInPandas(_planner(layouts, limits, options), "namespace string, plan string")
            .collect()
        )
        for row in sorted(planned, key=lambda r: r["namespace"]):
            doc = json.loads(row["plan"])
            plan = Plan.from_json({"operations": doc["splits"] + doc["merges"]})
            splits.extend(op for op in plan.operations if isinstance(op, SplitOp))
            merges.extend(op for op in plan.operations if isinstance(op, MergeOp))
            advice.append(doc["advice"])
    for ns in sorted(set(namespaces) - set(layouts)):
        advice.append(
            {
                "namespace": ns,
                "notes": ["no bundle-boundaries record at or before the window's end: left alone"],
                "load": {"topics": namespaces[ns][0]},
            }
        )
    moves: list[UnloadOp] = []
    if options.unload and options.place and splits:
        splits, moves = _placed(spark, wh, loads, splits, since, until)
    loads.unpersist()
    source = {
        "job": "recommend",
        "warehouse": str(warehouse),
        "window": {"since": since, "until": until},
        "statistic": statistic,
        "topics": sum(t for t, _ in namespaces.values()),
        "samples": sum(s for _, s in namespaces.values()),
        "limits": limits.to_json(),
        "options": options.to_json(),
    }
    return Plan(
        tuple(splits) + tuple(moves) + tuple(merges),
        created_at if created_at is not None else int(time.time() * 1000),
        source,
        advice,
    )
