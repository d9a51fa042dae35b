"""``ingest``: history JSON Lines → Parquet tables partitioned by date, incrementally.

For each record kind present under the history root, a Structured Streaming query lists the
published ``*.jsonl`` files (file source, ``trigger(availableNow=True)``) with a checkpoint
under ``<warehouse>/_checkpoints/<kind>``, so a re-run only reads files it has not seen. Each
micro-batch's files are read and parsed once (:mod:`brokerlb.pipeline.parse`) -- topic samples
of plain files by Spark's JSON file source, everything else as text lines + ``from_json``, with
the same rows and rejects either way (:mod:`brokerlb.pipeline.plain_files`) -- and written to:

=====================  =================================  ===========================================
table                  from                               one row per
=====================  =================================  ===========================================
``broker_samples``     ``broker-samples/``                load report (or removal) of a broker
``bundle_samples``     ``broker-samples/`` ``lastStats``  bundle of a load report
``topic_samples``      ``topic-samples/``                 topic and time
``bundle_boundaries``  ``bundle-boundaries/``             namespace layout (from this time on)
``rejects``            every kind                         line that does not fit, with ``reason``
=====================  =================================  ===========================================

Tables are partitioned by ``date`` (UTC day of each record's ``timestamp``) and
``ingestBatch`` (``b`` + the micro-batch id); ``rejects`` by ``kind`` and ``ingestBatch``.
A batch's partitions are written with dynamic partition overwrite, so a batch that Spark
replays after a crash replaces its own output instead of duplicating it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brokerlb.errors import InvalidInputError
from brokerlb.history.records import BROKER_SAMPLES, BUNDLE_BOUNDARIES, RECORD_KINDS, TOPIC_SAMPLES
from brokerlb.pipeline.tables import Warehouse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["IngestResult", "ingest", "KIND_TABLES"]

#: Schema of the binary-file source the stream lists new files with.
_FILE_LISTING = "path string, modificationTime timestamp, length long, content binary"

#: The tables each history kind feeds (besides ``rejects``).
KIND_TABLES = {
    BROKER_SAMPLES: ("broker_samples", "bundle_samples"),
    TOPIC_SAMPLES: ("topic_samples",),
    BUNDLE_BOUNDARIES: ("bundle_boundaries",),
}


@dataclass
class IngestResult:
    """What one ``ingest`` run did: per kind, micro-batches, rows per table and rejected lines."""

    batches: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: Files per kind whose good rows were parsed by the JSON file source (see ``plain_files``).
    json_source_files: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {
            "batches": self.batches,
            "rows": self.rows,
            "rejects": self.rejects,
            "skipped": self.skipped,
            "jsonSourceFiles": self.json_source_files,
            "seconds": round(self.seconds, 3),
        }


def _outputs(kind: str, parsed: DataFrame, observed: DataFrame) -> list[tuple[str, DataFrame]]:
    """The tables a kind writes; the first is computed from ``observed`` (it carries the counters)."""
    from brokerlb.pipeline import parse

    if kind == BROKER_SAMPLES:
        return [
            ("broker_samples", parse.broker_sample_rows(observed)),
            ("bundle_samples", parse.bundle_sample_rows(parsed)),
        ]
    if kind == TOPIC_SAMPLES:
        return [("topic_samples", parse.topic_sample_rows(observed))]
    return [("bundle_boundaries", parse.bundle_boundaries_rows(observed))]


def _parser(kind: str):  # type: ignore[no-untyped-def]
    from brokerlb.pipeline import parse

    return {
        BROKER_SAMPLES: parse.parse_broker_samples,
        TOPIC_SAMPLES: parse.parse_topic_samples,
        BUNDLE_BOUNDARIES: parse.parse_bundle_boundaries,
    }[kind]


class _BatchWriter:
    """The ``foreachBatch`` function of one kind's query.

    Topic samples (the big kind) are parsed in one pass that writes the good rows while an
    ``Observation`` counts the rejects; only a batch with rejects is read a second time to
    write them. The small kinds are cached and written from the cache.
    """

    def __init__(
        self, kind: str, warehouse: Warehouse, result: IngestResult, *, json_file_source: bool = True
    ) -> None:
        self.kind = kind
        self.warehouse = warehouse
        self.result = result
        self.json_file_source = json_file_source and kind == TOPIC_SAMPLES

    def _parse(self, spark: SparkSession, files: list[str]) -> DataFrame:
        """The batch's files parsed and checked: topic samples of plain files through the JSON file source."""
        from brokerlb.pipeline import parse
        from brokerlb.pipeline.plain_files import split_plain_files

        if not self.json_file_source:
            return _parser(self.kind)(read_lines(spark, files))
        plain, other = split_plain_files(files)
        self.result.json_source_files[self.kind] = self.result.json_source_files.get(self.kind, 0) + len(
            plain
        )
        fast = [_glob_escape(f) for f in plain]
        if not other:
            return parse.read_topic_samples_json(spark, fast)
        slow = parse.parse_topic_samples(read_lines(spark, other))
        if not plain:
            return slow
        return parse.read_topic_samples_json(spark, fast, nested=True).unionByName(slow)

    def __call__(self, new_files: DataFrame, batch_id: int) -> None:
        """Process one micro-batch: ``new_files`` has a row (``path``) per file the stream has not seen."""
        # A file can come once per split of it (seen with Spark 4.3's streaming binary-file source
        # on small files): the set of paths is the batch.
        files = sorted({row["path"] for row in new_files.select("path").collect()})
        self.write_files(new_files.sparkSession, files, batch_id)

    def write_files(self, spark: SparkSession, files: list[str], batch_id: int) -> None:
        """Parse ``files`` and write this kind's tables and rejects as micro-batch ``batch_id``."""
        from pyspark.sql import Observation
        from pyspark.sql import functions as F

        from brokerlb.pipeline.parse import reject_rows

        if not files:
            self.result.batches[self.kind] = self.result.batches.get(self.kind, 0) + 1
            return
        tag = f"b{batch_id:08d}"
        parsed = self._parse(spark, files)
        cached = self.kind != TOPIC_SAMPLES
        if cached:
            parsed = parsed.persist()
        try:
            good = F.col("reason").isNull()
            counters = [
                F.count(F.when(good, 1)).alias("good"),
                F.count(F.when(~good, 1)).alias("bad"),
            ]
            if self.kind == BROKER_SAMPLES:
                stats = F.when(good, F.size(F.col("j")["localData"]["lastStats"]))
                counters.append(F.coalesce(F.sum(F.greatest(stats, F.lit(0))), F.lit(0)).alias("bundles"))
            observation = Observation(f"ingest-{self.kind}-{batch_id}")
            observed = parsed.observe(observation, *counters)
            for table, rows in _outputs(self.kind, parsed, observed):
                self._write(rows.withColumn("ingestBatch", F.lit(tag)), table, ["date", "ingestBatch"])
            metrics = observation.get
            for table in KIND_TABLES[self.kind]:
                count = metrics["bundles"] if table == "bundle_samples" else metrics["good"]
                self.result.rows[table] = self.result.rows.get(table, 0) + int(count)
            bad = int(metrics["bad"])
            if bad:
                # From the lines themselves (the JSON file source does not keep them): the batch
                # through the text path again, whichever path its good rows took.
                source = _parser(self.kind)(read_lines(spark, files)) if self.json_file_source else parsed
                rejects = reject_rows(source, int(time.time() * 1000))
                rejects = rejects.withColumn("kind", F.lit(self.kind)).withColumn("ingestBatch", F.lit(tag))
                self._write(rejects, "rejects", ["kind", "ingestBatch"])
            self.result.rejects[self.kind] = self.result.rejects.get(self.kind, 0) + bad
        finally:
            if cached:
                parsed.unpersist()
        self.result.batches[self.kind] = self.result.batches.get(self.kind, 0) + 1

    def _write(self, rows: DataFrame, table: str, partitions: list[str]) -> None:
        rows.write.mode("overwrite").partitionBy(*partitions).parquet(self.warehouse.table(table))


def read_lines(spark: SparkSession, files: list[str]) -> DataFrame:
    """``value`` (each line) and ``file`` (its file's URI) of ``files``, by the text source."""
    from pyspark.sql import functions as F

    return (
        spark.read.format("text")
        .load([_glob_escape(f) for f in files])
        .select("value", F.col("_metadata.file_path").alias("file"))
    )


def _glob_escape(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark's ``load`` expands globs in the paths it is given."""
    return re.sub(r"([\\{}\[\]*?])", r"\\\1", path)


def _exists(path: str) -> bool:
    return "://" in path or os.path.isdir(path)


def ingest(
    spark: SparkSession,
    history_root: str,
    warehouse: str,
    *,
    kinds: Iterable[str] = RECORD_KINDS,
    max_files_per_trigger: int | None = None,
    json_file_source: bool = True,
) -> IngestResult:
    """Ingest the files under ``history_root`` not ingested yet into ``warehouse`` (see the module docstring).

    ``max_files_per_trigger`` bounds the files per micro-batch (default: all new files in one).
    Kinds whose directory does not exist yet are listed in ``skipped``. ``json_file_source``:
    parse plain topic-sample files with Spark's JSON file source (faster; same rows and rejects,
    see :mod:`brokerlb.pipeline.plain_files`); ``False`` reads every line as text + ``from_json``.
    """
    kinds = list(kinds)
    unknown = [k for k in kinds if k not in RECORD_KINDS]
    if unknown:
        raise InvalidInputError(f"Unknown history kinds {unknown}; known: {', '.join(RECORD_KINDS)}")
    wh = Warehouse(warehouse)
    result = IngestResult()
    started = time.perf_counter()
    with sql_conf(spark, PARSE_CONF):
        _ingest_kinds(spark, history_root, wh, kinds, max_files_per_trigger, result, json_file_source)
    result.seconds = time.perf_counter() - started
    return result


#: Session settings ``ingest`` runs with (restored afterwards).
#:
#: * Spark's JSON optimisation rewrites each ``from_json(...).field`` into a ``from_json`` of that
#:   field alone: with the many checks on every field, a line would be parsed dozens of times.
#:   Without it, one parse per line is shared.
#: * A partitioned write normally sorts each task's rows by the partition columns first (a full
#:   sort of the batch, spilling, for a handful of ``date`` values). With concurrent writers, a
#:   task keeps one open file per partition value instead and sorts only if it meets more than
#:   this many values (a batch spans few days): 1M topic samples written by date 24.9 s -> 11.1 s.
PARSE_CONF = {
    "spark.sql.optimizer.enableJsonExpressionOptimization": "false",
    "spark.sql.maxConcurrentOutputFileWriters": "16",
}


@contextmanager
def sql_conf(spark: SparkSession, settings: dict[str, str]) -> Iterator[None]:
    """Set session SQL settings for a block, restoring the previous values."""
    previous = {key: spark.conf.get(key, None) for key in settings}
    for key, value in settings.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, old in previous.items():
            if old is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, old)


def _ingest_kinds(
    spark: SparkSession,
    history_root: str,
    wh: Warehouse,
    kinds: list[str],
    max_files_per_trigger: int | None,
    result: IngestResult,
    json_file_source: bool,
) -> None:
    for kind in kinds:
        source = os.path.join(str(history_root), kind)
        if not _exists(source):
            result.skipped.append(kind)
            continue
        # The stream tracks files, not lines: the binary-file source lists the new files of each
        # micro-batch without reading them (its ``content`` column is not selected), and the batch
        # writer reads them -- as text, or, for plain topic-sample files, with the JSON file source.
        reader = (
            spark.readStream.format("binaryFile").schema(_FILE_LISTING).option("pathGlobFilter", "*.jsonl")
        )
        if max_files_per_trigger:
            reader = reader.option("maxFilesPerTrigger", max_files_per_trigger)
        new_files = reader.load(source).select("path")
        result.batches.setdefault(kind, 0)
        query = (
            new_files.writeStream.foreachBatch(
                _BatchWriter(kind, wh, result, json_file_source=json_file_source)
            )
            .option("checkpointLocation", wh.checkpoint(kind))
            .trigger(availableNow=True)
            .queryName(f"brokerlb-ingest-{kind}")
            .start()
        )
        query.awaitTermination()
