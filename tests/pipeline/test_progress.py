"""A pipeline job shows its running Spark stages and tasks on a terminal (``brokerlb pipeline``)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from brokerlb.cli import progress as cli_progress

pytestmark = pytest.mark.spark


def test_spark_progress_shows_the_running_stages_tasks(spark, monkeypatch) -> None:
    monkeypatch.setattr(cli_progress, "POLL_SECONDS", 0.02)
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=140)
    with cli_progress.spark_progress(spark, "loaddata", console=terminal):
        rows = (
            spark.range(0, 3_000_000, numPartitions=8)
            .selectExpr("substring(sha2(cast(id as string), 256), 1, 2) as k")
            .groupBy("k")
            .count()
            .collect()
        )
    assert len(rows) == 256
    text = out.getvalue()
    assert "loaddata" in text and "stage " in text and "tasks" in text and "done" in text


def test_spark_progress_is_silent_off_a_terminal(spark) -> None:
    out = io.StringIO()
    with cli_progress.spark_progress(spark, "ingest", console=Console(file=out, force_terminal=False)):
        spark.range(10).count()
    assert out.getvalue() == ""
