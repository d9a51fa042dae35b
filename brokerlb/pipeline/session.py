"""Start a SparkSession set up for the pipeline (the only place that configures Spark).

Defaults: ``local[*]``, UTC session time zone, Arrow on, dynamic partition overwrite (the
ingest's idempotent batches rely on it), small shuffle partitions, no UI, quiet logs (a
``log4j2.properties`` shipped in ``brokerlb/pipeline/conf`` unless ``SPARK_CONF_DIR`` is set),
and JVMs that JIT-compile huge methods (:data:`JIT_HUGE_METHODS`).
Python workers run this interpreter (``PYSPARK_PYTHON``), and Spark binds to 127.0.0.1
unless ``SPARK_LOCAL_IP`` says otherwise. For ``local-cluster[...]`` masters, ``SPARK_HOME``
defaults to pyspark's install directory (the executors are launched from there).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_MASTER",
    "JIT_HUGE_METHODS",
    "CODEGEN_CACHE_ENTRIES",
    "spark_session",
    "prepare_environment",
    "default_conf",
]

DEFAULT_MASTER = "local[*]"

#: JVM option for the driver and executors. The ingest's per-row checks make Spark generate a
#: whole-stage loop of ~22 KB of bytecode; HotSpot never JIT-compiles a method above 8,000 bytes
#: (``DontCompileHugeMethods``), so that loop ran interpreted. With this option it is compiled:
#: parsing + checking 1M topic samples took 43.8 s -> 16.9 s (``local[2]``, same session order).
#: It only acts on JVMs this module starts (``getOrCreate`` reuses a running one as is).
JIT_HUGE_METHODS = "-XX:-DontCompileHugeMethods"
#: Generated classes Spark keeps per JVM (its default: 100). One ``ingest`` + ``loaddata`` generates
#: ~90 (each query stage's code, compiled by Janino and then JIT-compiled by the JVM, ~1-2 CPU s
#: together); with the default they evict each other, so every run in a session paid for all of
#: them again. Only a session that runs the jobs more than once gains (``backtest``, notebooks,
#: the benchmark's alternated runs); a one-off CLI command compiles them once either way.
CODEGEN_CACHE_ENTRIES = 1000
_CONF_DIR = Path(__file__).with_name("conf")


def prepare_environment(master: str) -> None:
    """Environment variables Spark reads at JVM start (only those not already set)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("SPARK_CONF_DIR", str(_CONF_DIR))
    if master.startswith("local-cluster") and "SPARK_HOME" not in os.environ:
        import pyspark

        os.environ["SPARK_HOME"] = str(Path(pyspark.__file__).parent)


def default_conf(master: str) -> dict[str, str]:
    """The pipeline's Spark settings (``conf`` of :func:`spark_session` overrides them)."""
    cores = os.cpu_count() or 2
    return {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": str(max(2, 2 * cores)) if master.startswith("local") else "64",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.sources.partitionOverwriteMode": "dynamic",
        "spark.sql.adaptive.enabled": "true",
        "spark.sql.adaptive.autoBroadcastJoinThreshold": "64MB",
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.driver.memory": "2g",
        "spark.driver.extraJavaOptions": JIT_HUGE_METHODS,
        "spark.executor.extraJavaOptions": JIT_HUGE_METHODS,
        "spark.driver.bindAddress": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "spark.driver.host": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
    }


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "brokerlb-pipeline",
    conf: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for the pipeline (``getOrCreate``: an existing session is reused as is)."""
    master = master or DEFAULT_MASTER
    prepare_environment(master)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in {**default_conf(master), **dict(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
