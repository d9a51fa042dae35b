"""Run scenarios: the pure entry points for the CLI, the report and the pipeline's backtests.

:func:`run_scenario` takes picklable inputs and returns a picklable
:class:`~brokerlb.sim.result.SimulationResult`; it keeps no global state, so a Spark task
can call it. :func:`compare` runs one scenario under several strategies (same seed, hence
the same traffic), optionally in parallel processes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from brokerlb.sim.library import resolve_scenario
from brokerlb.sim.loader import apply_settings
from brokerlb.sim.recorded import RecordedWorkload
from brokerlb.sim.result import SimulationResult
from brokerlb.sim.simulation import Simulation
from brokerlb.sim.spec import Scenario
from brokerlb.sim.strategies import strategy_label, strategy_overrides

__all__ = ["run_scenario", "compare", "prepare"]


def prepare(
    scenario: Scenario | str | os.PathLike[str],
    strategy: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
) -> tuple[Scenario, dict[str, str], str]:
    """The scenario with ``overrides`` applied, the strategy's config and its label."""
    s = resolve_scenario(scenario)
    if overrides:
        s = apply_settings(s, {str(k): v for k, v in overrides.items()})
    if seed is not None:
        s = apply_settings(s, {"seed": seed})
    if strategy is None:
        from brokerlb.config import ServiceConfig

        strategy = ServiceConfig.from_mapping(dict(s.config)).loadBalancerLoadSheddingStrategy
        placement = s.config.get("loadBalancerLoadPlacementStrategy")
        if placement is not None and "+" not in strategy:
            strategy = f"{strategy}+{placement}"
    return s, strategy_overrides(strategy), strategy_label(strategy)


def run_scenario(
    scenario: Scenario | str | os.PathLike[str],
    strategy: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    *,
    workload: RecordedWorkload | None = None,
    validate: bool = False,
    on_cycle: Callable[[int, int], None] | None = None,
    history_dir: str | os.PathLike[str] | None = None,
    history_topic_interval: float = 900.0,
) -> SimulationResult:
    """Run one scenario under one strategy.

    * ``scenario`` -- a :class:`Scenario`, a YAML file, or a library name;
    * ``strategy`` -- ``SHEDDER[+PLACEMENT]`` (Pulsar class or short names); default: the
      scenario's configured strategy;
    * ``overrides`` -- ``--set`` pairs: broker.conf keys, or ``seed``/``duration``/``tick``/
      ``timing.*``/``resources.*``;
    * ``seed`` -- replaces the scenario's seed;
    * ``workload`` -- recorded topic traffic to replay instead of the synthetic workloads;
    * ``history_dir`` -- also write the load history there (:mod:`brokerlb.sim.history`), with
      topic stats every ``history_topic_interval`` seconds (0: none).
    """
    s, config, label = prepare(scenario, strategy, overrides, seed)
    history = None
    if history_dir is not None:
        from brokerlb.sim.history import HistoryWriter

        history = HistoryWriter(history_dir, label, topic_interval=history_topic_interval)
    try:
        sim = Simulation(
            s,
            config_overrides=config,
            workload=workload,
            validate=validate,
            on_cycle=on_cycle,
            history=history,
            label=label,
        )
        return sim.run()
    finally:
        if history is not None:
            history.close()


def _run_one(args: tuple[Any, ...]) -> SimulationResult:
    scenario, strategy, overrides, seed, workload, validate, history_dir, interval = args
    return run_scenario(
        scenario,
        strategy,
        overrides,
        seed,
        workload=workload,
        validate=validate,
        history_dir=history_dir,
        history_topic_interval=interval,
    )


def compare(
    scenario: Scenario | str | os.PathLike[str],
    strategies: Sequence[str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    *,
    workload: RecordedWorkload | None = None,
    jobs: int = 1,
    validate: bool = False,
    on_cycle: Callable[[str, int, int], None] | None = None,
    history_dir: str | os.PathLike[str] | None = None,
    history_topic_interval: float = 900.0,
) -> list[SimulationResult]:
    """Run ``scenario`` once per strategy (default: the scenario's ``strategies``), in order.

    ``jobs > 1`` runs them in that many processes (``on_cycle`` is then called only when a
    run finishes, with ``done == total``). ``history_dir`` gets one sub-directory per strategy.
    """
    s = resolve_scenario(scenario)
    labels = list(strategies or s.strategies)
    dirs = [
        None if history_dir is None else os.path.join(history_dir, label.replace("+", "_"))
        for label in labels
    ]
    if jobs > 1 and len(labels) > 1:
        from concurrent.futures import ProcessPoolExecutor

        args = [
            (s, label, overrides, seed, workload, validate, d, history_topic_interval)
            for label, d in zip(labels, dirs, strict=True)
        ]
        with ProcessPoolExecutor(max_workers=min(jobs, len(labels))) as pool:
            results = []
            for label, result in zip(labels, pool.map(_run_one, args), strict=True):
                if on_cycle is not None:
                    on_cycle(label, result.cycles, result.cycles)
                results.append(result)
            return results
    results = []
    for label, d in zip(labels, dirs, strict=True):
        progress = None if on_cycle is None else (lambda done, total, _l=label: on_cycle(_l, done, total))
        results.append(
            run_scenario(
                s,
                label,
                overrides,
                seed,
                workload=workload,
                validate=validate,
                on_cycle=progress,
                history_dir=d,
                history_topic_interval=history_topic_interval,
            )
        )
    return results
