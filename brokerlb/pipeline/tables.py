"""The warehouse: where the pipeline's Parquet tables, checkpoints and job outputs live.

::

    <warehouse>/broker_samples/      date=YYYY-MM-DD/ingestBatch=b00000000/part-*.parquet
    <warehouse>/bundle_samples/      (same partitioning)
    <warehouse>/topic_samples/
    <warehouse>/bundle_boundaries/
    <warehouse>/rejects/             kind=<history kind>/ingestBatch=.../
    <warehouse>/_checkpoints/<kind>/ Structured Streaming checkpoints of ingest
    <warehouse>/loaddata/<source>-<cycles>/   outputs of loaddata (see brokerlb.pipeline.loaddata)

Paths may be local directories or Hadoop URIs (``hdfs://``, ``s3a://``...).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from brokerlb.errors import InvalidInputError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["Warehouse", "TABLES"]

TABLES = ("broker_samples", "bundle_samples", "topic_samples", "bundle_boundaries", "rejects")


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
        """The table ``name``; :class:`InvalidInputError` if it was never written."""
        table = self.read_optional(spark, name)
        if table is None:
            raise InvalidInputError(
                f"Table {name} does not exist in warehouse {self.root}: run 'brokerlb pipeline ingest' first"
            )
        return table

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
