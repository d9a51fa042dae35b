"""The exact oracle: the least moved throughput that brings every broker under a target load.

A mixed-integer program solved by HiGHS (``highspy``, the optional ``optimize`` extra):

* ``x[k, b] in {0, 1}`` for every movable bundle ``k`` and every broker ``b`` it may be on (its
  own broker and the destinations the filters allow); ``sum_b x[k, b] = 1``;
* for every broker ``b`` and resource ``r``: what stays (usage minus its movable bundles' demand)
  plus ``sum_k demand[k, r] x[k, b]`` is at most ``target_b x limit[b, r] / w_r``;
* minimise ``sum_k throughput_k x (1 - x[k, owner_k])``.

It answers on the same :class:`~brokerlb.loadbalance.balancer.model.ClusterModel` the greedy
planner uses, so the two compare: the test suite checks the planner's moved throughput against it
on small random clusters, and ``brokerlb plan optimize --exact`` uses it on small snapshots
(:func:`min_max_load` first finds the lowest busiest-broker load any assignment reaches, when
the target cannot be met).

Worked example: a broker at 0.80 with bundles of 0.10, 0.08, 0.05 and 0.57 (one MB/s per point)
and an idle one, target 0.65 on both: the least is to move 0.10 + 0.05, 15 MB/s; no assignment
gets the busiest broker under 0.57 (:func:`min_max_load`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from brokerlb.errors import InvalidInputError
from brokerlb.loadbalance.balancer.model import ClusterModel

__all__ = ["OracleResult", "OracleUnavailableError", "min_moved_throughput", "min_max_load", "MAX_BINARIES"]

#: the oracle refuses larger problems (``plan optimize --exact`` is for small snapshots)
MAX_BINARIES = 20_000


class OracleUnavailableError(InvalidInputError):
    """The exact oracle needs the ``optimize`` extra (``highspy``) or a smaller problem."""


@dataclass(frozen=True, slots=True)
class OracleResult:
    """The oracle's assignment: bundle index -> broker index for the bundles that move."""

    feasible: bool
    moves: dict[int, int]
    moved_throughput: float
    busiest: float


def _solver() -> Any:
    try:
        import highspy
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise OracleUnavailableError(
            "the exact oracle needs the MIP solver HiGHS: pip install 'brokerlb[optimize]' (highspy)"
        ) from exc
    with _quiet_stdout():  # HiGHS prints a banner on construction
        highs = highspy.Highs()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("mip_rel_gap", 1e-6)
    return highs


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    try:
        fd = os.dup(1)
    except OSError:  # pragma: no cover - no stdout
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 1)
            yield
    finally:
        os.dup2(fd, 1)
        os.close(fd)


def _build(
    model: ClusterModel,
    movable: np.ndarray,
    destinations: Callable[[int], np.ndarray],
    *,
    priced: bool = True,
) -> tuple[Any, dict[tuple[int, int], Any], np.ndarray]:
    """The solver with the assignment variables; ``fixed`` (n, 4): usage that stays put."""
    highs = _solver()
    demands = model.demands()
    fixed = model.usage.copy()
    variables: dict[tuple[int, int], Any] = {}
    ks = np.flatnonzero(movable)
    count = 0
    for index in ks:
        count += int(destinations(int(index)).sum()) + 1
    if count > MAX_BINARIES:
        raise OracleUnavailableError(
            f"the exact oracle is for small clusters: {count} assignment variables > {MAX_BINARIES}"
        )
    for index in ks:
        k = int(index)
        owner = int(model.owner[k])
        fixed[owner] = fixed[owner] - demands[k]
        allowed = destinations(k).copy()
        allowed[owner] = True
        row = []
        for b in np.flatnonzero(allowed):
            cost = 0.0 if b == owner or not priced else float(model.throughput[k])
            var = highs.addBinary(obj=cost)
            variables[(k, int(b))] = var
            row.append(var)
        highs.addConstr(highs.qsum(row) == 1)
    return highs, variables, np.maximum(fixed, 0.0)


def _capacity_rows(
    highs: Any,
    model: ClusterModel,
    variables: dict[tuple[int, int], Any],
    fixed: np.ndarray,
    target: np.ndarray | Any,
) -> None:
    """Every broker under its target, per resource (``target`` per broker, numbers or a variable)."""
    demands = model.demands()
    by_broker: dict[int, list[tuple[int, Any]]] = {}
    for (k, b), var in variables.items():
        by_broker.setdefault(b, []).append((k, var))
    for b in range(len(model.brokers)):
        for r in range(4):
            limit, weight = float(model.limit[b, r]), float(model.weights[r])
            if limit <= 0 or weight <= 0:
                continue
            terms = [float(demands[k, r]) * var for k, var in by_broker.get(b, []) if demands[k, r] > 0]
            scale = weight / limit
            rest = float(fixed[b, r]) * scale
            bound = float(target[b]) if isinstance(target, np.ndarray) else target
            if terms:
                highs.addConstr(highs.qsum(terms) * scale + rest <= bound)
            elif isinstance(bound, float) and rest > bound:
                highs.addConstr(highs.qsum(list(variables.values())[:1]) * 0.0 >= 1.0)  # infeasible
            elif not isinstance(bound, float):
                highs.addConstr(bound >= rest)


def min_moved_throughput(
    model: ClusterModel,
    movable: np.ndarray,
    destinations: Callable[[int], np.ndarray],
    target: np.ndarray,
) -> OracleResult:
    """The least moved throughput that puts every broker ``b`` at or under ``target[b]``."""
    highs, variables, fixed = _build(model, movable, destinations)
    _capacity_rows(highs, model, variables, fixed, target)
    highs.minimize()
    return _result(highs, model, variables)


def min_max_load(
    model: ClusterModel, movable: np.ndarray, destinations: Callable[[int], np.ndarray]
) -> float:
    """The lowest busiest-broker load any assignment of the movable bundles reaches."""
    highs, variables, fixed = _build(model, movable, destinations, priced=False)
    level = highs.addVariable(lb=0.0, obj=1.0)
    _capacity_rows(highs, model, variables, fixed, level)
    highs.minimize()
    return float(highs.val(level))


def _result(highs: Any, model: ClusterModel, variables: dict[tuple[int, int], Any]) -> OracleResult:
    import highspy

    if highs.getModelStatus() != highspy.HighsModelStatus.kOptimal:
        return OracleResult(False, {}, 0.0, float("nan"))
    usage = model.usage.copy()
    demands = model.demands()
    moves: dict[int, int] = {}
    for (k, b), var in variables.items():
        if b != int(model.owner[k]) and highs.val(var) > 0.5:
            moves[k] = b
            usage[int(model.owner[k])] -= demands[k]
            usage[b] += demands[k]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(model.limit > 0, np.maximum(usage, 0.0) / model.limit, 0.0)
    busiest = float(np.maximum(model.floor, (ratios * model.weights).max(axis=1)).max())
    moved = float(sum(model.throughput[k] for k in moves))
    return OracleResult(True, moves, moved, busiest)
