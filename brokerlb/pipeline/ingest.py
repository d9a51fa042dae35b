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
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError
from brokerlb.history.records import BROKER_SAMPLES, BUNDLE_BOUNDARIES, RECORD_KINDS, TOPIC_SAMPLES
from brokerlb.pipeline.tables import LAST_INGEST, Warehouse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["IngestResult", "KindFiles", "ingest", "KIND_TABLES", "ABANDONED_AFTER_S"]

#: Schema of the binary-file source the stream lists new files with.
_FILE_LISTING = "path string, modificationTime timestamp, length long, content binary"

#: The tables each history kind feeds (besides ``rejects``).
KIND_TABLES = {
    BROKER_SAMPLES: ("broker_samples", "bundle_samples"),
    TOPIC_SAMPLES: ("topic_samples",),
    BUNDLE_BOUNDARIES: ("bundle_boundaries",),
}


#: An in-progress file not modified for this long was left by a writer that stopped without
#: closing it (a crash): a writer with the same id publishes it when it starts again.
ABANDONED_AFTER_S = 3600.0


@dataclass
class KindFiles:
    """What ``ingest`` found in one kind's directory (local histories; ``None`` where not listed)."""

    directory: str
    #: Published files (``*.jsonl``) there after the run.
    published: int | None = None
    #: Files this run read.
    new: int = 0
    #: Files earlier runs read (from the stream's checkpoint).
    ingested_before: int | None = None
    #: Published files no run has read yet (published while this run listed): the next run reads them.
    waiting: int | None = None
    #: Hidden ``.inprogress`` files: still being written, not published yet.
    in_progress: int = 0
    #: Seconds since the oldest in-progress file was last written.
    oldest_in_progress_s: float | None = None
    #: In-progress files not written for :data:`ABANDONED_AFTER_S`.
    abandoned: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "directory": self.directory,
            "published": self.published,
            "new": self.new,
            "ingestedBefore": self.ingested_before,
            "waiting": self.waiting,
            "inProgress": self.in_progress,
            "oldestInProgressSeconds": None
            if self.oldest_in_progress_s is None
            else round(self.oldest_in_progress_s, 1),
            "abandoned": self.abandoned,
        }


@dataclass
class IngestResult:
    """What one ``ingest`` run did: per kind, micro-batches, rows per table and rejected lines, the
    files it found, read and left, and ``notes`` saying what was skipped and why."""

    batches: dict[str, int] = field(default_factory=dict)
    rows: dict[str, int] = field(default_factory=dict)
    rejects: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    #: Files per kind whose good rows were parsed by the JSON file source (see ``plain_files``).
    json_source_files: dict[str, int] = field(default_factory=dict)
    history: str = ""
    files: dict[str, KindFiles] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {
            "history": self.history,
            "batches": self.batches,
            "rows": self.rows,
            "rejects": self.rejects,
            "skipped": self.skipped,
            "files": {kind: f.to_json() for kind, f in self.files.items()},
            "notes": self.notes,
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
        if self.kind in self.result.files:
            self.result.files[self.kind].new += len(files)
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
    result = IngestResult(history=str(history_root))
    started = time.perf_counter()
    with sql_conf(spark, PARSE_CONF):
        _ingest_kinds(spark, history_root, wh, kinds, max_files_per_trigger, result, json_file_source)
    result.seconds = time.perf_counter() - started
    _record_run(wh, result)
    return result


def _source_paths(checkpoint: str) -> set[str] | None:
    """The files a stream's checkpoint says it has read (Spark's file-source log: ``sources/0/<batch>``
    and ``.compact`` files, ``v1`` then one JSON entry per file); ``None`` if it cannot be read."""
    import json

    log = os.path.join(checkpoint, "sources", "0")
    if "://" in checkpoint:
        return None
    if not os.path.isdir(log):
        return set()
    paths: set[str] = set()
    try:
        for name in os.listdir(log):
            if name.startswith(".") or name.endswith(".tmp"):
                continue
            with open(os.path.join(log, name), encoding="utf-8") as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("{"):
                        paths.add(_local_path(json.loads(line)["path"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return paths


def _local_path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else uri


def _list_kind(directory: str, now: float) -> KindFiles:
    files = KindFiles(directory)
    if "://" in directory or not os.path.isdir(directory):
        return files
    published = 0
    ages = []
    for entry in os.scandir(directory):
        if not entry.is_file():
            continue
        if entry.name.endswith(".jsonl") and not entry.name.startswith((".", "_")):
            published += 1
        elif entry.name.startswith(".") and entry.name.endswith(".inprogress"):
            ages.append(max(0.0, now - entry.stat().st_mtime))
    files.published = published
    files.in_progress = len(ages)
    files.oldest_in_progress_s = max(ages) if ages else None
    files.abandoned = sum(1 for age in ages if age >= ABANDONED_AFTER_S)
    return files


def _notes(kind: str, files: KindFiles) -> list[str]:
    """What a run left of a kind, and why, in words."""
    from brokerlb.history.records import KIND_PRODUCERS

    notes = []
    live = files.in_progress - files.abandoned
    if live > 0:
        notes.append(
            f"{kind}: {live} file(s) still being written in {files.directory} (hidden .inprogress, the "
            f"oldest last written {files.oldest_in_progress_s or 0:.0f} s ago) are not read until published: "
            "brokers publish them every brokerlbLoadHistoryPublishIntervalSeconds, or now with "
            "'brokerlb pipeline publish --url URL'"
        )
    if files.abandoned:
        notes.append(
            f"{kind}: {files.abandoned} in-progress file(s) in {files.directory} not written for over "
            f"{ABANDONED_AFTER_S / 3600:.0f} h were left by a writer that stopped without closing them (a "
            "crash): a writer with the same id publishes them when it starts again"
        )
    if files.waiting:
        notes.append(
            f"{kind}: {files.waiting} file(s) published while this run listed {files.directory}: the next "
            "run reads them"
        )
    if files.published == 0 and files.ingested_before == 0 and not files.new:
        notes.append(f"{kind}: no published file in {files.directory} yet; {KIND_PRODUCERS[kind]}")
    return notes


def _record_run(wh: Warehouse, result: IngestResult) -> None:
    import json

    if "://" in wh.root:
        return
    path = wh.path(*LAST_INGEST)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    doc = {"at": int(time.time() * 1000), **result.to_json()}
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


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
    from brokerlb.history.records import KIND_PRODUCERS

    for kind in kinds:
        source = os.path.join(str(history_root), kind)
        if not _exists(source):
            result.skipped.append(kind)
            result.notes.append(f"{kind}: skipped, no directory {source}; {KIND_PRODUCERS[kind]}")
            continue
        before = _source_paths(wh.checkpoint(kind))
        result.files[kind] = KindFiles(source)
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
        files = _list_kind(source, time.time())
        files.new = result.files[kind].new
        after = _source_paths(wh.checkpoint(kind))
        if before is not None and after is not None and files.published is not None:
            files.ingested_before = len(before)
            listed = {
                os.path.abspath(os.path.join(source, n))
                for n in os.listdir(source)
                if n.endswith(".jsonl") and not n.startswith((".", "_"))
            }
            files.waiting = len(listed - after)
        result.files[kind] = files
        result.notes.extend(_notes(kind, files))
