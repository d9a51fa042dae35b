"""``loaddata``: the leader's load data computed at scale from the history, with its history.

Inputs (from the warehouse ``ingest`` filled):

* ``source="reports"`` (default): ``broker_samples`` (the cycles) and ``bundle_samples`` (each
  report's ``lastStats``) -- exactly what the leader read;
* ``source="topics"``: ``topic_samples`` mapped to bundles (``crc32`` + the layout valid at the
  sample's time, :mod:`brokerlb.pipeline.topic_bundles`) and summed per ``(timestamp, broker,
  bundle)`` into bundle samples, as a broker sums its topics into ``lastStats``
  (``topics`` = number of topics; ``cacheSize`` 0). Each ``(timestamp, broker)`` is one report;
  the leader's removals in ``broker_samples`` (when ingested) of brokers that wrote topic samples
  are cycles too: a broker that left stops counting, its last dump is not current for ever.

Report cycles, and the fold order inside a cycle, are those of
:func:`brokerlb.history.replay_load_data` (``cycles="leader"``: every report re-folds every
broker's latest ``lastStats`` -- each cycle is the leader's own refresh; ``"report"``: a report
folds only its own). Per bundle, the contributions are folded by
:func:`brokerlb.pipeline.running_average.sweep_bundle` in a ``mapInArrow`` over partitions
grouped by bundle (no per-row Python UDF, no per-group call). A broker's time averages, as the
leader computes them, sum its bundles' states right after its own fold in the cycle (the
sweep's ``own`` snapshots). The results equal the in-process replay, and so the live leader's
refresh (a test checks every value; relative tolerance 1e-9).

Outputs, under ``<warehouse>/loaddata/<source>-<cycles>/`` (replaced on each run):

============================== ============================================================
``bundle_load_data``           final ``BundleData`` per bundle: short/long-term averages, sample
                               counts, ``topics``; ``lastCycle``/``lastTimestamp`` of its last fold;
                               ``active`` (listed in some broker's latest report)
``bundle_load_history``        the bundle's ``BundleData`` right after each report that listed it
``broker_time_average``        final ``TimeAverageBrokerData`` per broker still present
``broker_time_average_history`` a broker's ``TimeAverageBrokerData`` right after each of its reports
``unmapped_topic_samples``     (``source="topics"``) samples left without a bundle, with ``reason``
``summary.json``               counts and timings
============================== ============================================================
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError
from brokerlb.history.replay import CYCLE_MODES
from brokerlb.pipeline.columns import BROKER_AVERAGE_FIELDS, BUNDLE_STATE_FIELDS
from brokerlb.pipeline.tables import Warehouse

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "SOURCES",
    "BROKER_AVERAGE_FIELDS",
    "LoadDataFrames",
    "LoadDataResult",
    "load_data",
    "compute_load_data",
    "bundle_samples_from_topics",
    "load_data_json",
]

SOURCES = ("reports", "topics")
_VALUE_COLUMNS = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")
_SWEEP_SCHEMA = (
    "rowType string, bundle string, cycle long, brokerId string, "
    + ", ".join(
        f"{name} {'long' if name.endswith('Samples') or name == 'topics' else 'double'}"
        for name in BUNDLE_STATE_FIELDS
    )
    + ", lastCycle long"
)


def _sweep_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the partition's contributions, sorted by (bundle, cycle, brokerId).

    Arrow in and out, not pandas: a Spark Python worker then never imports pandas (≈ 2 s per
    worker on a cold start, paid by every ``loaddata`` run in a fresh session).
    """
    import pyarrow as pa

    from brokerlb.pipeline.running_average import sweep_bundle

    parts = [b for b in batches if b.num_rows]
    if not parts:
        return
    table = pa.Table.from_batches(parts)
    bundles = table.column("bundle").to_pylist()
    starts = table.column("cycle").to_pylist()
    ends = table.column("end").to_pylist()
    brokers = table.column("brokerId").to_pylist()
    values = list(zip(*(table.column(c).to_pylist() for c in _VALUE_COLUMNS), strict=True))
    topics = table.column("topics").to_pylist()
    n = len(bundles)
    firsts = [i for i in range(n) if i == 0 or bundles[i] != bundles[i - 1]] + [n]
    out: list[tuple[Any, ...]] = []
    for a, b in zip(firsts[:-1], firsts[1:], strict=True):
        result = sweep_bundle(starts[a:b], ends[a:b], brokers[a:b], values[a:b], topics[a:b])
        for k, snap in enumerate(result.after_start):
            out.append(("sample", bundles[a], starts[a + k], brokers[a + k], *snap))
        for kind, snaps in (("own", result.own_start), ("last", result.own_last)):
            for k, snap in enumerate(snaps):
                out.append((kind, bundles[a], starts[a + k], brokers[a + k], *snap))
        out.append(("final", bundles[a], None, None, *result.final))
    columns = list(zip(*out, strict=True))
    yield pa.RecordBatch.from_arrays(
        [pa.array(col, type=kind) for col, kind in zip(columns, _sweep_arrow_types(), strict=True)],
        names=_SWEEP_COLUMNS,
    )


_SWEEP_COLUMNS = ["rowType", "bundle", "cycle", "brokerId", *BUNDLE_STATE_FIELDS, "lastCycle"]


def _sweep_arrow_types() -> list[pa.DataType]:
    """Arrow types of :data:`_SWEEP_SCHEMA`'s columns, in order."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "double": pa.float64()}
    return [kinds[part.split()[1]] for part in _SWEEP_SCHEMA.split(", ")]


@dataclass
class LoadDataFrames:
    """The four load-data results as DataFrames (not written yet)."""

    bundle_load_data: DataFrame
    bundle_load_history: DataFrame
    broker_time_average: DataFrame
    broker_time_average_history: DataFrame
    cycles: int


def _cycles(cycle_records: DataFrame) -> DataFrame:
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    unique = cycle_records.select("timestamp", "brokerId", "removed").dropDuplicates(
        ["timestamp", "brokerId"]
    )
    ordered = unique.withColumn("cycle", F.row_number().over(Window.orderBy("timestamp", "brokerId")) - 1)
    return ordered.withColumn(
        "nextCycle", F.lead("cycle").over(Window.partitionBy("brokerId").orderBy("cycle"))
    )


def compute_load_data(
    spark: SparkSession, cycle_records: DataFrame, bundle_samples: DataFrame, *, cycles: str = "leader"
) -> LoadDataFrames:
    """The load data of ``bundle_samples`` over the cycles of ``cycle_records``.

    ``cycle_records``: ``timestamp, brokerId, removed`` (one per report or removal);
    ``bundle_samples``: ``timestamp, brokerId, bundle, msgThroughputIn/Out, msgRateIn/Out, topics``.
    """
    from pyspark.sql import functions as F

    if cycles not in CYCLE_MODES:
        raise InvalidInputError(f"Unknown cycle mode {cycles!r}; known: {', '.join(CYCLE_MODES)}")
    cyc = _cycles(cycle_records).persist()
    total = cyc.count()
    reports = cyc.where(~F.col("removed"))
    end = F.coalesce(F.col("nextCycle"), F.lit(total)) if cycles == "leader" else F.col("cycle") + 1
    contributions = (
        bundle_samples.select("timestamp", "brokerId", "bundle", *_VALUE_COLUMNS, "topics")
        .dropDuplicates(["timestamp", "brokerId", "bundle"])
        .join(reports.select("timestamp", "brokerId", "cycle", "nextCycle"), ["timestamp", "brokerId"])
        .withColumn("end", end.cast("long"))
        .withColumn("latest", F.col("nextCycle").isNull())
        .persist()
    )
    swept = (
        contributions.select("bundle", "cycle", "end", "brokerId", *_VALUE_COLUMNS, "topics")
        .repartition("bundle")
        .sortWithinPartitions("bundle", "cycle", "brokerId")
        .mapInArrow(_sweep_partition, _SWEEP_SCHEMA)
        .persist()
    )
    times = cyc.select("cycle", "timestamp")
    state = [F.col(name) for name in BUNDLE_STATE_FIELDS]
    namespace = F.regexp_extract(F.col("bundle"), r"^(.*)/[^/]*$", 1).alias("namespace")

    history = (
        swept.where(F.col("rowType") == "sample")
        .join(times, "cycle")
        .select(
            "timestamp",
            F.to_date(F.timestamp_millis("timestamp")).alias("date"),
            "cycle",
            "brokerId",
            "bundle",
            namespace,
            *state,
        )
    )
    active = (
        contributions.where(F.col("latest")).select("bundle").distinct().withColumn("active", F.lit(True))
    )
    final = (
        swept.where(F.col("rowType") == "final")
        .join(
            times.withColumnRenamed("cycle", "lastCycle").withColumnRenamed("timestamp", "lastTimestamp"),
            "lastCycle",
            "left",
        )
        .join(active, "bundle", "left")
        .select(
            "bundle",
            namespace,
            *state,
            "lastCycle",
            "lastTimestamp",
            F.coalesce(F.col("active"), F.lit(False)).alias("active"),
        )
    )

    def sums(prefix_map: dict[str, str]) -> list:
        return [F.sum(F.col(src)).alias(dst) for dst, src in prefix_map.items()]

    average_of = {name: name for name in BROKER_AVERAGE_FIELDS}
    zero = [F.coalesce(F.col(name), F.lit(0.0)).alias(name) for name in BROKER_AVERAGE_FIELDS]
    per_report = (
        swept.where(F.col("rowType") == "own")
        .groupBy("brokerId", "cycle")
        .agg(*sums(average_of), F.count(F.lit(1)).alias("numBundles"))
    )
    broker_history = (
        reports.select("brokerId", "cycle", "timestamp")
        .join(per_report, ["brokerId", "cycle"], "left")
        .select(
            "timestamp",
            F.to_date(F.timestamp_millis("timestamp")).alias("date"),
            "cycle",
            "brokerId",
            *zero,
            F.coalesce(F.col("numBundles"), F.lit(0)).alias("numBundles"),
        )
    )
    latest_bundles = contributions.where(F.col("latest")).select("brokerId", "bundle", "cycle")
    if cycles == "leader":  # each broker's averages from its own fold in the last cycle
        last_own = swept.where(F.col("rowType") == "last").select(
            "brokerId", "bundle", "cycle", *BROKER_AVERAGE_FIELDS
        )
        latest_states = latest_bundles.join(last_own, ["brokerId", "bundle", "cycle"])
    else:  # a report folds only its own: the averages over the bundles' final states
        latest_states = latest_bundles.join(final.select("bundle", *BROKER_AVERAGE_FIELDS), "bundle")
    per_broker = latest_states.groupBy("brokerId").agg(
        *sums(average_of), F.count(F.lit(1)).alias("numBundles")
    )
    broker_final = (
        reports.where(F.col("nextCycle").isNull())
        .select("brokerId", F.col("timestamp").alias("lastReport"))
        .join(per_broker, "brokerId", "left")
        .select(
            "brokerId", *zero, F.coalesce(F.col("numBundles"), F.lit(0)).alias("numBundles"), "lastReport"
        )
    )
    return LoadDataFrames(final, history, broker_final, broker_history, total)


def bundle_samples_from_topics(
    spark: SparkSession, topic_samples: DataFrame, layouts: DataFrame | None
) -> tuple[DataFrame, DataFrame, DataFrame, DataFrame]:
    """``(cycle_records, bundle_samples, unmapped, unmapped_count)`` from topic samples (see the module
    docstring); ``unmapped_count`` is one row: ``n``, the samples without a bundle, and
    ``mismatches``, the samples whose recorded bundle disagrees with the layout."""
    from pyspark.sql import functions as F

    from brokerlb.pipeline.topic_bundles import (
        SUMMED,
        assign_bundles,
        boundary_index,
        bundle_name_from_range,
        bundle_sums,
        unmapped_reason,
    )

    index = boundary_index(layouts)
    # One pass over the samples: the layout lookup and the sums per (timestamp, broker, namespace,
    # looked-up range, recorded bundle) -- numeric keys, so the bundle's name is built once per group
    # instead of once per sample -- then per (timestamp, broker, bundle) on that small result.
    ranges = bundle_sums(spark, topic_samples, index)
    computed, recorded = bundle_name_from_range(), F.col("recordedBundle")
    mismatch = computed.isNotNull() & recorded.isNotNull() & (computed != recorded)
    groups = (
        ranges.withColumn("bundle", F.coalesce(computed, recorded))
        .withColumn("mismatches", F.when(mismatch, F.col("topics")).otherwise(F.lit(0)))
        .groupBy("timestamp", F.col("broker").alias("brokerId"), "bundle")
        .agg(
            *(F.sum(name).alias(name) for name in SUMMED),
            F.sum("topics").alias("topics"),
            F.sum("mismatches").alias("bundleMismatches"),
        )
        .persist()
    )
    cycle_records = groups.select("timestamp", "brokerId").distinct().withColumn("removed", F.lit(False))
    bundle_samples = groups.where(F.col("bundle").isNotNull())
    # The samples without a bundle, with their reason: a second pass over the samples, which
    # load_data runs only when the sums counted some (a null-bundle group).
    unmapped = (
        assign_bundles(spark, topic_samples, index)
        .where(F.col("bundle").isNull())
        .select(unmapped_reason().alias("reason"), "timestamp", "broker", "topic", "namespace")
    )
    # both counts in one small job over the cached sums: samples without a bundle, recorded
    # bundles that disagree with the layout
    unmapped_count = groups.agg(
        F.coalesce(F.sum(F.when(F.col("bundle").isNull(), F.col("topics"))), F.lit(0)).alias("n"),
        F.coalesce(F.sum("bundleMismatches"), F.lit(0)).alias("mismatches"),
    )
    return cycle_records, bundle_samples, unmapped, unmapped_count


@dataclass
class LoadDataResult:
    """Where ``loaddata`` wrote its tables, and what it counted."""

    output: str
    source: str
    cycles: str
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def table(self, spark: SparkSession, name: str) -> DataFrame:
        return spark.read.parquet(Warehouse(self.output).table(name))

    def to_json(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "source": self.source,
            "cycles": self.cycles,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
        }


def _window(df: DataFrame, since: int | None, until: int | None) -> DataFrame:
    from pyspark.sql import functions as F

    if since is not None:
        df = df.where(F.col("timestamp") >= since)
    if until is not None:
        df = df.where(F.col("timestamp") <= until)
    return df


def _with_removals(
    dumps: DataFrame, broker_samples: DataFrame | None, since: int | None, until: int | None
) -> DataFrame:
    """The topic dumps' cycles plus the leader's removals of the brokers that wrote them: a broker whose
    registration vanished stops counting, as in the leader (its last dump is not current for ever)."""
    if broker_samples is None:
        return dumps
    from pyspark.sql import functions as F

    writers = dumps.select("brokerId").distinct()
    removals = (
        _window(broker_samples, since, until)
        .where(F.col("removed"))
        .select("timestamp", "brokerId", "removed")
        .join(writers, "brokerId", "left_semi")
    )
    return dumps.unionByName(removals)


def _write_counted(df: DataFrame, path: str, partition_by: str | None = None) -> int:
    """Write ``df`` as Parquet (replacing ``path``) and return its row count, counted by the write
    itself through an ``Observation`` -- a separate ``count()`` would be one more Spark job per table."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(f"rows of {path}")
    writer = df.observe(observation, F.count(F.lit(1)).alias("rows")).write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer.parquet(path)
    return int(observation.get.get("rows") or 0)


def load_data(
    spark: SparkSession,
    warehouse: str,
    *,
    source: str = "reports",
    cycles: str = "leader",
    since: int | None = None,
    until: int | None = None,
    output: str | None = None,
) -> LoadDataResult:
    """Compute and write the load-data tables (see the module docstring). ``since``/``until``: ms, inclusive."""
    if source not in SOURCES:
        raise InvalidInputError(f"Unknown load-data source {source!r}; known: {', '.join(SOURCES)}")
    if cycles not in CYCLE_MODES:
        raise InvalidInputError(f"Unknown cycle mode {cycles!r}; known: {', '.join(CYCLE_MODES)}")
    started = time.perf_counter()
    wh = Warehouse(warehouse)
    out = Warehouse(output or wh.path("loaddata", f"{source}-{cycles}"))
    counts: dict[str, int] = {}
    unmapped = unmapped_count = None
    if source == "reports":
        cycle_records = _window(wh.read(spark, "broker_samples"), since, until)
        bundle_samples = _window(wh.read(spark, "bundle_samples"), since, until)
    else:
        topic_samples = _window(wh.read(spark, "topic_samples"), since, until)
        layouts = wh.read_optional(spark, "bundle_boundaries")
        cycle_records, bundle_samples, unmapped, unmapped_count = bundle_samples_from_topics(
            spark, topic_samples, layouts
        )
        cycle_records = _with_removals(cycle_records, wh.read_optional(spark, "broker_samples"), since, until)
        bundle_samples = bundle_samples.persist()
    frames = compute_load_data(spark, cycle_records, bundle_samples, cycles=cycles)
    counts["cycles"] = frames.cycles
    counts["bundles"] = _write_counted(frames.bundle_load_data, out.table("bundle_load_data"))
    counts["bundleSamples"] = _write_counted(
        frames.bundle_load_history, out.table("bundle_load_history"), "date"
    )
    counts["brokers"] = _write_counted(frames.broker_time_average, out.table("broker_time_average"))
    _write_counted(frames.broker_time_average_history, out.table("broker_time_average_history"), "date")
    if unmapped is not None and unmapped_count is not None:
        found = unmapped_count.first()  # from the cached sums: no pass over the samples
        if found is None or not found["n"]:
            unmapped = unmapped.limit(0)
        counts["unmappedTopicSamples"] = _write_counted(unmapped, out.table("unmapped_topic_samples"))
        counts["bundleMismatches"] = int(found["mismatches"]) if found is not None else 0
    spark.catalog.clearCache()
    result = LoadDataResult(out.root, source, cycles, counts, time.perf_counter() - started)
    if "://" not in out.root:
        with open(os.path.join(out.root, "summary.json"), "w", encoding="utf-8") as f:
            json.dump(result.to_json(), f, indent=2)
    return result


def load_data_json(spark: SparkSession, result: LoadDataResult) -> dict[str, Any]:
    """The final load data in Pulsar's JSON, validated through :mod:`brokerlb.model`:
    ``{"bundleData": {bundle: BundleData}, "timeAverageData": {broker: TimeAverageBrokerData}}``
    (the leader's ``/loadbalance/bundle-data`` and ``/loadbalance/broker-time-average`` documents)."""
    from brokerlb.model import (
        NUM_LONG_SAMPLES,
        NUM_SHORT_SAMPLES,
        BundleData,
        TimeAverageBrokerData,
        TimeAverageMessageData,
    )

    bundles: dict[str, Any] = {}
    for row in result.table(spark, "bundle_load_data").collect():
        short = TimeAverageMessageData(
            NUM_SHORT_SAMPLES,
            row["shortTermSamples"],
            row["shortTermMsgThroughputIn"],
            row["shortTermMsgThroughputOut"],
            row["shortTermMsgRateIn"],
            row["shortTermMsgRateOut"],
        )
        long_ = TimeAverageMessageData(
            NUM_LONG_SAMPLES,
            row["longTermSamples"],
            row["longTermMsgThroughputIn"],
            row["longTermMsgThroughputOut"],
            row["longTermMsgRateIn"],
            row["longTermMsgRateOut"],
        )
        bundles[row["bundle"]] = BundleData(short, long_, row["topics"]).to_json()
    brokers = {
        row["brokerId"]: TimeAverageBrokerData.from_json(
            {name: row[name] for name in BROKER_AVERAGE_FIELDS}
        ).to_json()
        for row in result.table(spark, "broker_time_average").collect()
    }
    return {"bundleData": dict(sorted(bundles.items())), "timeAverageData": dict(sorted(brokers.items()))}
