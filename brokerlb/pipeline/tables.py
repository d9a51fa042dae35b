"""The warehouse: where the pipeline's Parquet tables, checkpoints and job outputs live.

::

    <warehouse>/broker_samples/      date=YYYY-MM-DD/ingestBatch=b00000000/part-*.parquet
    <warehouse>/bundle_samples/      (same partitioning)
    <warehouse>/topic_samples/
    <warehouse>/bundle_boundaries/
    <warehouse>/rejects/             kind=<history kind>/ingestBatch=.../
    <warehouse>/_checkpoints/<kind>/ Structured Streaming checkpoints of ingest
    <warehouse>/_ingest/last-run.json what the last ingest found, read and skipped (its JSON summary)
    <warehouse>/loaddata/<source>-<cycles>/   outputs of loaddata (see brokerlb.pipeline.loaddata)

Paths may be local directories or Hadoop URIs (``hdfs://``, ``s3a://``...).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError
from brokerlb.history.records import BROKER_SAMPLES, BUNDLE_BOUNDARIES, KIND_PRODUCERS, TOPIC_SAMPLES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Warehouse", "TABLES", "TABLE_KINDS", "LAST_INGEST"]

TABLES = ("broker_samples", "bundle_samples", "topic_samples", "bundle_boundaries", "rejects")
#: The history kind each table is ingested from.
TABLE_KINDS = {
    "broker_samples": BROKER_SAMPLES,
    "bundle_samples": BROKER_SAMPLES,
    "topic_samples": TOPIC_SAMPLES,
    "bundle_boundaries": BUNDLE_BOUNDARIES,
}
#: ``<warehouse>/_ingest/last-run.json``: what the last ingest found (named by the errors of the jobs).
LAST_INGEST = ("_ingest", "last-run.json")


def _join(root: str, *parts: str) -> str:
    return "/".join([root.rstrip("/"), *parts]) if "://" in root else os.path.join(root, *parts)


class Warehouse:
    """Paths under a warehouse root, and readers for its tables."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)

    def table(self, name: str) -> str:
        return _join(self.root, name)

    def checkpoint(self, kind: str) -> str:
        return _join(self.root, "_checkpoints", kind)

    def path(self, *parts: str) -> str:
        return _join(self.root, *parts)

    def exists(self, name: str) -> bool:
        path = self.table(name)
        return "://" in path or os.path.isdir(path)

    def read(self, spark: SparkSession, name: str) -> DataFrame:
        """The table ``name``; :class:`InvalidInputError` if it was never written, naming the history
        kind it comes from, where the last ingest looked for it and who writes it."""
        table = self.read_optional(spark, name)
        if table is None:
            raise InvalidInputError(self.missing(name))
        return table

    def last_ingest(self) -> dict[str, Any] | None:
        """The JSON summary of the last ``ingest`` into this warehouse, if recorded (local warehouses)."""
        if "://" in self.root:
            return None
        try:
            with open(self.path(*LAST_INGEST), encoding="utf-8") as f:
                doc = json.load(f)
        except (OSError, ValueError):
            return None
        return doc if isinstance(doc, dict) else None

    def missing(self, name: str) -> str:
        """Why table ``name`` is missing, and how to get it, in words."""
        kind = TABLE_KINDS.get(name)
        if kind is None:
            return f"Table {name} does not exist in warehouse {self.root}"
        what = kind.replace("-", " ")
        head = f"No {what} in warehouse {self.root} (table {name} at {self.table(name)} was never written)."
        run = self.last_ingest()
        if run is None:
            seen = " No ingest has run into this warehouse."
            history = "DIR"
        else:
            history = str(run.get("history") or "DIR")
            at = datetime.fromtimestamp(int(run.get("at", 0)) / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            files = (run.get("files") or {}).get(kind)
            directory = os.path.join(history, kind)
            if kind in (run.get("skipped") or []):
                seen = f" The last ingest ({at}) read history {history}: there is no directory {directory}."
            elif not isinstance(files, dict):
                seen = f" The last ingest ({at}) read history {history} but not {kind} (--kind)."
            else:
                seen = (
                    f" The last ingest ({at}) looked in {files.get('directory') or directory}: "
                    f"{files.get('published') or 0} published file(s), "
                    f"{files.get('inProgress') or 0} still being written (not published yet)"
                    f"{', every line rejected (see the rejects table)' if files.get('new') else ''}."
                )
        return (
            f"{head}{seen} Who writes them: {KIND_PRODUCERS[kind]}. Then run 'brokerlb pipeline ingest "
            f"--history {history} --warehouse {self.root}' (publish a live cluster's open files first: "
            "'brokerlb pipeline publish --url URL')."
        )

    def read_optional(self, spark: SparkSession, name: str) -> DataFrame | None:
        """The table ``name``, or ``None`` if it was never written."""
        if not self._has_data(name):
            return None
        return spark.read.parquet(self.table(name))

    def _has_data(self, name: str) -> bool:
        path = self.table(name)
        if "://" in path:
            return True
        if not os.path.isdir(path):
            return False
        return any(not entry.startswith(("_", ".")) for entry in os.listdir(path))
