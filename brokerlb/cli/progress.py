"""Progress of long commands on a terminal (rich), and silence everywhere else.

A command shows progress on stderr only when stderr is a terminal and it was not asked for
machine output (``--json``): scripts, pipes and CI logs get the result alone.

* :func:`progress_bar` -- a rich :class:`~rich.progress.Progress` (disabled when it must be quiet);
* :func:`spark_progress` -- while a Spark job runs, the tasks of its running stages, read from
  Spark's status tracker every half second by a daemon thread (``brokerlb pipeline``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from brokerlb.cli.common import err_console

__all__ = ["progress_enabled", "progress_bar", "spark_progress", "POLL_SECONDS"]

#: How often the Spark status tracker is read.
POLL_SECONDS = 0.5


def progress_enabled(quiet: bool = False, console: Console = err_console) -> bool:
    """Progress is shown on a terminal, unless the command prints machine output."""
    return not quiet and console.is_terminal


def progress_bar(*, quiet: bool = False, unit: str = "", console: Console = err_console) -> Progress:
    """A bar per task: description, bar, done/total (``unit``), elapsed time."""
    columns: list[Any] = [TextColumn("[bold]{task.description:<28}"), BarColumn(), MofNCompleteColumn()]
    if unit:
        columns.append(TextColumn(unit))
    columns.append(TimeElapsedColumn())
    return Progress(*columns, console=console, transient=False, disable=not progress_enabled(quiet, console))


@contextmanager
def spark_progress(
    spark: Any, job: str, *, quiet: bool = False, console: Console = err_console
) -> Iterator[None]:
    """Show the running stages' tasks of ``spark`` while the block runs (a no-op when quiet)."""
    if not progress_enabled(quiet, console):
        yield
        return
    tracker = spark.sparkContext.statusTracker()
    progress = Progress(
        SpinnerColumn(),
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("tasks · {task.fields[stages]}"),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    task = progress.add_task(job, total=None, stages="starting")
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(POLL_SECONDS):
            try:
                active = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            except Exception:  # the session is stopping
                return
            active = [s for s in active if s is not None]
            total = sum(s.numTasks for s in active)
            done = sum(s.numCompletedTasks for s in active)
            names = ", ".join(f"stage {s.stageId}" for s in active[:3]) or "between stages"
            progress.update(task, total=total or None, completed=done, stages=names)

    thread = threading.Thread(target=poll, name=f"progress {job}", daemon=True)
    with progress:
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=5)
            progress.update(task, stages="done", total=1, completed=1)
