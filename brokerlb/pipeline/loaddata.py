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

How it runs (few Spark jobs: a job costs the same code generation and JIT compilation whatever
its size, and after the pass over the samples every input is small):

1. ``topics``: one pass over the samples (layout lookup + sums, persisted); one small job over
   those sums collects the dumps with their unmapped and mismatched counts. ``reports``: the
   broker samples' ``(timestamp, brokerId, removed)`` are collected.
2. The cycles are numbered on the driver (:class:`Cycles`; brokers x reports rows, as the
   in-process replay does) and joined back as a broadcast table read from the plan.
3. One sweep (``mapInArrow``, persisted) emits every row the outputs need: each contribution's
   history row, each bundle's final row (with ``active``), and the ``own``/``last`` states the
   broker averages sum -- the bundle tables are written from it, the broker sums are collected
   in one aggregation and the two broker tables built from them and the cycles.
4. ``unmapped_topic_samples`` is computed (a second pass over the samples) only when the sums
   counted some; otherwise an empty table is written from the schema alone.

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
from collections.abc import Iterable, Iterator
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
    "Cycles",
    "load_data_json",
]

SOURCES = ("reports", "topics")
_VALUE_COLUMNS = ("msgThroughputIn", "msgThroughputOut", "msgRateIn", "msgRateOut")


def _state_type(name: str) -> str:
    return "long" if name.endswith("Samples") or name == "topics" else "double"


#: The sweep's output: one row per use, told apart by ``rowType`` (columns a type does not use are null):
#:
#: * ``sample`` -- a contribution's bundle state after its first cycle (``bundle_load_history``);
#: * ``final`` -- a bundle's final state, ``lastCycle`` and ``active`` (``bundle_load_data``);
#: * ``own`` -- a contribution's state right after its own fold in its first cycle (summed per
#:   broker and cycle into ``broker_time_average_history``);
#: * ``last`` -- per contribution in its broker's latest report, the state its broker's final time
#:   averages sum (``broker_time_average``).
_SWEEP_COLUMNS = [
    "rowType",
    "bundle",
    "timestamp",
    "cycle",
    "brokerId",
    *BUNDLE_STATE_FIELDS,
    "lastCycle",
    "active",
]
_SWEEP_SCHEMA = ", ".join(
    [
        "rowType string",
        "bundle string",
        "timestamp long",
        "cycle long",
        "brokerId string",
        *(f"{name} {_state_type(name)}" for name in BUNDLE_STATE_FIELDS),
        "lastCycle long",
        "active boolean",
    ]
)


def _sweep_partition(
    batches: Iterator[pa.RecordBatch], *, report_mode: bool = False
) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the partition's contributions, sorted by (bundle, cycle, brokerId), swept
    per bundle into the rows of :data:`_SWEEP_SCHEMA`.

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
    stamps = table.column("timestamp").to_pylist()
    starts = table.column("cycle").to_pylist()
    ends = table.column("end").to_pylist()
    brokers = table.column("brokerId").to_pylist()
    latest = table.column("latest").to_pylist()
    values = list(zip(*(table.column(c).to_pylist() for c in _VALUE_COLUMNS), strict=True))
    topics = table.column("topics").to_pylist()
    n = len(bundles)
    firsts = [i for i in range(n) if i == 0 or bundles[i] != bundles[i - 1]] + [n]
    out: list[tuple[Any, ...]] = []
    for a, b in zip(firsts[:-1], firsts[1:], strict=True):
        bundle = bundles[a]
        result = sweep_bundle(starts[a:b], ends[a:b], brokers[a:b], values[a:b], topics[a:b])
        for k, snap in enumerate(result.after_start):
            out.append(("sample", bundle, stamps[a + k], starts[a + k], brokers[a + k], *snap, None))
        for k, snap in enumerate(result.own_start):
            out.append(("own", bundle, None, starts[a + k], brokers[a + k], *snap, None))
        for k in range(b - a):
            if latest[a + k]:  # leader: its own fold in its last cycle; report: the bundle's final state
                snap = result.final if report_mode else result.own_last[k]
                out.append(("last", bundle, None, None, brokers[a + k], *snap, None))
        out.append(("final", bundle, None, None, None, *result.final, any(latest[a:b])))
    columns = list(zip(*out, strict=True))
    yield pa.RecordBatch.from_arrays(
        [pa.array(col, type=kind) for col, kind in zip(columns, _sweep_arrow_types(), strict=True)],
        names=_SWEEP_COLUMNS,
    )


def _sweep_arrow_types() -> list[pa.DataType]:
    """Arrow types of :data:`_SWEEP_SCHEMA`'s columns, in order."""
    import pyarrow as pa

    kinds = {"string": pa.string(), "long": pa.int64(), "double": pa.float64(), "boolean": pa.bool_()}
    return [kinds[part.split()[1]] for part in _SWEEP_SCHEMA.split(", ")]


@dataclass(frozen=True)
class Cycles:
    """The report cycles, numbered on the driver: one per distinct ``(timestamp, brokerId)`` of the
    reports and removals, in that order (a report before a removal of the same broker and millisecond).

    Small (brokers x reports), so numbered here rather than by a global Spark window: each record's
    ``cycle`` and ``nextCycle`` (the same broker's next record, or ``None``).
    """

    timestamps: list[int]
    brokers: list[str]
    removed: list[bool]
    next_cycle: list[int | None]

    @classmethod
    def of(cls, records: Iterable[tuple[int, str, bool]]) -> Cycles:
        seen: set[tuple[int, str]] = set()
        ordered: list[tuple[int, str, bool]] = []
        for ts, broker, removed in sorted(records):
            if (ts, broker) not in seen:
                seen.add((ts, broker))
                ordered.append((ts, broker, removed))
        following: dict[str, int] = {}
        next_cycle: list[int | None] = [None] * len(ordered)
        for i in range(len(ordered) - 1, -1, -1):
            next_cycle[i] = following.get(ordered[i][1])
            following[ordered[i][1]] = i
        return cls([r[0] for r in ordered], [r[1] for r in ordered], [r[2] for r in ordered], next_cycle)

    @property
    def total(self) -> int:
        return len(self.timestamps)

    def reports(self) -> list[int]:
        """The cycles of reports (not removals)."""
        return [i for i, removed in enumerate(self.removed) if not removed]

    def report_frame(self, spark: SparkSession, cycles: str) -> DataFrame:
        """``(timestamp, brokerId, cycle, end, latest)`` per report: ``[cycle, end)`` are the cycles its
        bundle samples are folded in (``leader``: until the broker's next record; ``report``: its own),
        ``latest`` whether it is its broker's last record. From Arrow: Spark reads it from the plan."""
        import pyarrow as pa

        rows = self.reports()
        ends = [
            (self.next_cycle[i] if self.next_cycle[i] is not None else self.total)
            if cycles == "leader"
            else i + 1
            for i in rows
        ]
        table = pa.table(
            {
                "timestamp": pa.array([self.timestamps[i] for i in rows], pa.int64()),
                "brokerId": pa.array([self.brokers[i] for i in rows], pa.string()),
                "cycle": pa.array(rows, pa.int64()),
                "end": pa.array(ends, pa.int64()),
                "latest": pa.array([self.next_cycle[i] is None for i in rows], pa.bool_()),
            }
        )
        return spark.createDataFrame(table)

    def time_frame(self, spark: SparkSession) -> DataFrame:
        """``(lastCycle, lastTimestamp)`` of every cycle."""
        import pyarrow as pa

        table = pa.table(
            {
                "lastCycle": pa.array(range(self.total), pa.int64()),
                "lastTimestamp": pa.array(self.timestamps, pa.int64()),
            }
        )
        return spark.createDataFrame(table)


@dataclass
class LoadDataFrames:
    """The bundle tables as DataFrames (not written yet) and the broker sums they need (see :func:`compute_load_data`)."""

    bundle_load_data: DataFrame
    bundle_load_history: DataFrame
    #: per ``rowType`` (``own``: per broker and cycle; ``last``: per broker), the summed averages and ``numBundles``
    broker_sums: DataFrame
    #: the sweep's output (persisted): unpersist when the tables are written
    swept: DataFrame
    cycles: Cycles


def compute_load_data(
    spark: SparkSession, cycles: Cycles, bundle_samples: DataFrame, *, mode: str = "leader"
) -> LoadDataFrames:
    """The load data of ``bundle_samples`` over ``cycles``.

    ``bundle_samples``: ``timestamp, brokerId, bundle, msgThroughputIn/Out, msgRateIn/Out, topics``,
    at most one row per ``(timestamp, brokerId, bundle)``.
    """
    from functools import partial

    from pyspark.sql import functions as F

    if mode not in CYCLE_MODES:
        raise InvalidInputError(f"Unknown cycle mode {mode!r}; known: {', '.join(CYCLE_MODES)}")
    contributions = bundle_samples.select("timestamp", "brokerId", "bundle", *_VALUE_COLUMNS, "topics").join(
        F.broadcast(cycles.report_frame(spark, mode)), ["timestamp", "brokerId"]
    )
    swept = (
        contributions.select(
            "bundle", "timestamp", "cycle", "end", "brokerId", *_VALUE_COLUMNS, "topics", "latest"
        )
        .repartition("bundle")
        .sortWithinPartitions("bundle", "cycle", "brokerId")
        .mapInArrow(partial(_sweep_partition, report_mode=mode == "report"), _SWEEP_SCHEMA)
        .persist()
    )
    state = [F.col(name) for name in BUNDLE_STATE_FIELDS]
    namespace = F.regexp_extract(F.col("bundle"), r"^(.*)/[^/]*$", 1).alias("namespace")
    row_type = F.col("rowType")
    history = swept.where(row_type == "sample").select(
        "timestamp",
        F.to_date(F.timestamp_millis("timestamp")).alias("date"),
        "cycle",
        "brokerId",
        "bundle",
        namespace,
        *state,
    )
    final = (
        swept.where(row_type == "final")
        .join(F.broadcast(cycles.time_frame(spark)), "lastCycle", "left")
        .select("bundle", namespace, *state, "lastCycle", "lastTimestamp", "active")
    )
    broker_sums = (
        swept.where(row_type.isin("own", "last"))
        .groupBy("rowType", "brokerId", "cycle")
        .agg(
            *(F.sum(F.col(name)).alias(name) for name in BROKER_AVERAGE_FIELDS),
            F.count(F.lit(1)).alias("numBundles"),
        )
    )
    return LoadDataFrames(final, history, broker_sums, swept, cycles)


def _broker_tables(spark: SparkSession, frames: LoadDataFrames) -> tuple[DataFrame, DataFrame]:
    """``(broker_time_average_history, broker_time_average)`` from the broker sums (collected: one row per
    report and per broker) and the reports: a report or broker without bundles has zero averages."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    cycles = frames.cycles
    sums = frames.broker_sums.toArrow().to_pylist()
    own = {(r["brokerId"], r["cycle"]): r for r in sums if r["rowType"] == "own"}
    last = {r["brokerId"]: r for r in sums if r["rowType"] == "last"}
    reports = cycles.reports()
    zero: dict[str, Any] = {name: 0.0 for name in BROKER_AVERAGE_FIELDS} | {"numBundles": 0}

    def averages(found: list[dict[str, Any] | None]) -> dict[str, pa.Array]:
        return {
            name: pa.array([(row or zero)[name] for row in found], pa.float64())
            for name in BROKER_AVERAGE_FIELDS
        } | {"numBundles": pa.array([(row or zero)["numBundles"] for row in found], pa.int64())}

    history = pa.table(
        {
            "timestamp": pa.array([cycles.timestamps[i] for i in reports], pa.int64()),
            "cycle": pa.array(reports, pa.int32()),
            "brokerId": pa.array([cycles.brokers[i] for i in reports], pa.string()),
        }
        | averages([own.get((cycles.brokers[i], i)) for i in reports])
    )
    latest = [i for i in reports if cycles.next_cycle[i] is None]
    final = pa.table(
        {"brokerId": pa.array([cycles.brokers[i] for i in latest], pa.string())}
        | averages([last.get(cycles.brokers[i]) for i in latest])
        | {"lastReport": pa.array([cycles.timestamps[i] for i in latest], pa.int64())}
    )
    history_frame = spark.createDataFrame(history).select(
        "timestamp",
        F.to_date(F.timestamp_millis("timestamp")).alias("date"),
        "cycle",
        "brokerId",
        *BROKER_AVERAGE_FIELDS,
        "numBundles",
    )
    return history_frame, spark.createDataFrame(final)


def _topic_bundle_samples(
    spark: SparkSession, topic_samples: DataFrame, layouts: DataFrame | None
) -> tuple[DataFrame, DataFrame]:
    """``(groups, unmapped)`` from topic samples (see the module docstring).

    ``groups``: per ``(timestamp, brokerId, bundle)`` the summed samples, ``topics`` and
    ``bundleMismatches`` (samples whose recorded bundle disagrees with the layout); ``bundle`` is
    null for the samples without one. ``unmapped``: those samples, with their reason -- a second
    pass over the samples, run only when the sums counted some.
    """
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
    )
    unmapped = (
        assign_bundles(spark, topic_samples, index)
        .where(F.col("bundle").isNull())
        .select(unmapped_reason().alias("reason"), "timestamp", "broker", "topic", "namespace")
    )
    return groups, unmapped


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


def _removals(
    broker_samples: DataFrame | None, writers: set[str], since: int | None, until: int | None
) -> list[tuple[int, str, bool]]:
    """The leader's removals of the brokers that wrote topic dumps (``writers``): a broker whose
    registration vanished stops counting, as in the leader (its last dump is not current for ever)."""
    if broker_samples is None or not writers:
        return []
    from pyspark.sql import functions as F

    removed = _window(broker_samples, since, until).where(F.col("removed")).select("timestamp", "brokerId")
    return [(r["timestamp"], r["brokerId"], True) for r in removed.collect() if r["brokerId"] in writers]


def _records(frame: DataFrame, *columns: str) -> list[tuple[Any, ...]]:
    """``columns`` of every row of ``frame`` (small), through Arrow."""
    table = frame.select(*columns).toArrow()
    return list(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


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


def _write(df: DataFrame, path: str, partition_by: str | None = None) -> None:
    writer = df.write.mode("overwrite")
    if partition_by:
        writer = writer.partitionBy(partition_by)
    writer.parquet(path)


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
    from pyspark.sql import functions as F

    if source not in SOURCES:
        raise InvalidInputError(f"Unknown load-data source {source!r}; known: {', '.join(SOURCES)}")
    if cycles not in CYCLE_MODES:
        raise InvalidInputError(f"Unknown cycle mode {cycles!r}; known: {', '.join(CYCLE_MODES)}")
    started = time.perf_counter()
    wh = Warehouse(warehouse)
    out = Warehouse(output or wh.path("loaddata", f"{source}-{cycles}"))
    counts: dict[str, int] = {}
    unmapped = None
    cached: list[DataFrame] = []
    if source == "reports":
        records = _records(
            _window(wh.read(spark, "broker_samples"), since, until), "timestamp", "brokerId", "removed"
        )
        bundle_samples = (
            _window(wh.read(spark, "bundle_samples"), since, until)
            .repartition("bundle")
            .dropDuplicates(["timestamp", "brokerId", "bundle"])
        )
    else:
        topic_samples = _window(wh.read(spark, "topic_samples"), since, until)
        groups, unmapped = _topic_bundle_samples(
            spark, topic_samples, wh.read_optional(spark, "bundle_boundaries")
        )
        groups = groups.persist()
        cached.append(groups)
        # one small job over the sums: the dumps (each a report) with their unmapped samples and
        # recorded bundles that disagree with the layout
        dumps = groups.groupBy("timestamp", "brokerId").agg(
            F.sum(F.when(F.col("bundle").isNull(), F.col("topics")).otherwise(F.lit(0))).alias("unmapped"),
            F.sum("bundleMismatches").alias("mismatches"),
        )
        found = _records(dumps, "timestamp", "brokerId", "unmapped", "mismatches")
        unmapped_n = sum(int(r[2] or 0) for r in found)
        mismatches = sum(int(r[3] or 0) for r in found)
        writers = {r[1] for r in found}
        records = [(r[0], r[1], False) for r in found] + _removals(
            wh.read_optional(spark, "broker_samples"), writers, since, until
        )
        bundle_samples = groups.where(F.col("bundle").isNotNull())
    frames = compute_load_data(spark, Cycles.of(records), bundle_samples, mode=cycles)
    cached.append(frames.swept)
    counts["cycles"] = frames.cycles.total
    counts["bundles"] = _write_counted(frames.bundle_load_data, out.table("bundle_load_data"))
    counts["bundleSamples"] = _write_counted(
        frames.bundle_load_history, out.table("bundle_load_history"), "date"
    )
    broker_history, broker_final = _broker_tables(spark, frames)
    counts["brokers"] = _write_counted(broker_final, out.table("broker_time_average"))
    _write(broker_history, out.table("broker_time_average_history"), "date")
    if unmapped is not None:
        if not unmapped_n:  # the (empty) table without a pass over the samples
            unmapped = spark.createDataFrame([], unmapped.schema)
        counts["unmappedTopicSamples"] = _write_counted(unmapped, out.table("unmapped_topic_samples"))
        counts["bundleMismatches"] = mismatches
    for frame in cached:
        frame.unpersist()
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
