"""``backtest``: what a grid of strategies and settings would have done with the recorded traffic.

Every configuration of a :class:`~brokerlb.pipeline.backtest_grid.BacktestGrid` is one run of the
simulator (:func:`brokerlb.sim.run_scenario`) replaying the history's topic samples
(:class:`~brokerlb.sim.RecordedWorkload`) on the same cluster: the scenario given, or the one
:func:`~brokerlb.pipeline.history_scenario.scenario_from_history` derives from the brokers'
reports. The runs are Spark tasks -- one partition, hence one task, per configuration -- so a
grid spreads over the cluster's cores (``local[*]``) or executors (``--master``). The scenario
and the workload go to the executors once, as a broadcast; each task returns its picklable
:class:`~brokerlb.sim.SimulationResult`.

A task runs exactly what ``run_scenario(scenario, strategy, settings, workload=workload)``
runs in-process, so its result is the same (the simulator is deterministic: same seed, same
numbers); a test checks it.

Bad input fails in :func:`prepare_backtest`, before Spark is involved: a missing history or one
without topic samples, an empty grid, an unknown key, value or strategy.

Output (``output`` directory; :mod:`~brokerlb.pipeline.backtest_report`): ``summary.parquet``
and ``summary.csv`` (one row per configuration), ``series.parquet`` (one row per configuration
and cycle), ``backtest.json`` (grid, scenario, summary rows) and PNG plots.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from brokerlb.errors import InvalidInputError
from brokerlb.history import TOPIC_SAMPLES, history_files
from brokerlb.pipeline.backtest_grid import BacktestConfig, BacktestGrid, check_configurations

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from brokerlb.sim import RecordedWorkload, Scenario, SimulationResult

#: Spark job group of the backtest's job (``sc.statusTracker().getJobIdsForGroup(JOB_GROUP)``).
JOB_GROUP = "brokerlb-backtest"

__all__ = [
    "JOB_GROUP",
    "BacktestPlan",
    "BacktestResult",
    "prepare_backtest",
    "run_backtest",
    "backtest",
    "run_configuration",
]


@dataclass(frozen=True)
class BacktestPlan:
    """What a backtest runs: the scenario, the recorded workload and the checked configurations."""

    history_root: str
    grid: BacktestGrid
    scenario: Scenario
    workload: RecordedWorkload
    configurations: list[BacktestConfig]


@dataclass
class BacktestResult:
    """The runs of a backtest, in configuration order."""

    plan: BacktestPlan
    results: list[SimulationResult]
    seconds: float = 0.0
    output: str | None = None
    files: list[str] = field(default_factory=list)

    def rows(self) -> list[dict[str, Any]]:
        """One summary row per configuration (:func:`~brokerlb.pipeline.backtest_report.summary_row`)."""
        from brokerlb.pipeline.backtest_report import summary_row

        return [summary_row(c, r) for c, r in zip(self.plan.configurations, self.results, strict=True)]

    def to_json(self) -> dict[str, Any]:
        return {
            "history": self.plan.history_root,
            "scenario": self.plan.scenario.name,
            "cycles": self.plan.scenario.cycles,
            "tickSeconds": self.plan.scenario.tick,
            "topics": len(self.plan.workload.topics),
            "topicSamples": int(len(self.plan.workload.timestamp)),
            "configurations": len(self.results),
            "seconds": round(self.seconds, 3),
            "output": self.output,
            "files": self.files,
            "rows": self.rows(),
        }


def prepare_backtest(
    history_root: str | os.PathLike[str],
    grid: BacktestGrid,
    scenario: Scenario | str | os.PathLike[str] | None = None,
    *,
    tick: float = 60.0,
) -> BacktestPlan:
    """Read and check everything a backtest needs (no Spark): see the module docstring.

    ``scenario`` (a :class:`~brokerlb.sim.Scenario`, a YAML file or a library name) defaults
    to the grid file's ``scenario``, else to the history's own cluster (``tick`` long cycles).
    """
    from brokerlb.pipeline.history_scenario import scenario_from_history
    from brokerlb.sim import RecordedWorkload, resolve_scenario

    root = os.fspath(history_root)
    configs = grid.configurations()  # an empty grid fails before the history is read
    if not os.path.isdir(root):
        raise InvalidInputError(f"history {root}: no such directory")
    if not history_files(root, TOPIC_SAMPLES):
        raise InvalidInputError(
            f"history {root}: no topic samples ({TOPIC_SAMPLES}/*.jsonl); the backtest "
            f"replays recorded topic-level traffic"
        )
    workload = RecordedWorkload.from_history(root)
    chosen = scenario if scenario is not None else grid.scenario
    resolved = (
        resolve_scenario(chosen) if chosen is not None else scenario_from_history(root, workload, tick=tick)
    )
    return BacktestPlan(root, grid, resolved, workload, check_configurations(resolved, configs))


def run_configuration(
    scenario: Scenario, workload: RecordedWorkload, config: BacktestConfig
) -> SimulationResult:
    """One configuration's run: what one Spark task executes (and what a caller can run in-process)."""
    from brokerlb.sim import run_scenario

    return run_scenario(scenario, config.strategy, dict(config.settings), workload=workload)


def run_backtest(
    spark: SparkSession,
    plan: BacktestPlan,
    output: str | os.PathLike[str] | None = None,
    *,
    plots: bool = True,
) -> BacktestResult:
    """Run ``plan`` with one Spark task per configuration; write the tables (and plots) to ``output``."""
    started = time.perf_counter()
    sc = spark.sparkContext
    shared = sc.broadcast((plan.scenario, plan.workload))
    configs = plan.configurations
    group_keys = ("spark.jobGroup.id", "spark.job.description", "spark.job.interruptOnCancel")
    previous = {key: sc.getLocalProperty(key) for key in group_keys}
    sc.setJobGroup(JOB_GROUP, f"backtest of {len(configs)} configurations")
    try:
        tasks = sc.parallelize(configs, len(configs))
        results: list[SimulationResult] = tasks.map(
            lambda config: run_configuration(*shared.value, config)
        ).collect()
    finally:
        for key, value in previous.items():
            sc.setLocalProperty(key, value)  # type: ignore[arg-type]  # None removes it
        shared.unpersist()
    result = BacktestResult(plan, results, time.perf_counter() - started)
    if output is not None:
        from brokerlb.pipeline.backtest_report import write_backtest

        result.output = os.fspath(output)
        result.files = write_backtest(result, output, plots=plots)
    return result


def backtest(
    spark: SparkSession,
    history_root: str | os.PathLike[str],
    grid: BacktestGrid,
    scenario: Scenario | str | os.PathLike[str] | None = None,
    *,
    output: str | os.PathLike[str] | None = None,
    tick: float = 60.0,
    plots: bool = True,
) -> BacktestResult:
    """:func:`prepare_backtest` then :func:`run_backtest`."""
    return run_backtest(spark, prepare_backtest(history_root, grid, scenario, tick=tick), output, plots=plots)
