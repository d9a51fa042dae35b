"""The "max resource usage" formulas shared by :class:`LocalBrokerData` and :class:`BrokerLoadData`.

All take the five :class:`ResourceUsage` values and return a fraction (1.0 = 100%).

* :func:`max_usage` -- current Pulsar: ``max(cpu%, directMemory%, bwIn%, bwOut%) / 100``.
  Memory is not a load signal any more (it is noisy by GC; 3.x ``BrokerLoadData`` and
  the 4.x config mark it deprecated). Computed in doubles.
* :func:`max_usage_with_memory_2x` -- Pulsar 2.x ``LocalBrokerData.getMaxResourceUsage``:
  memory included, and, because Java picks the ``max(float...)`` overload for the float
  percentages, the maximum and the division by 100 happen in **float32**. Reproduced
  bit for bit for replaying 2.x reports.
* :func:`max_usage_with_weight` -- ``max(pct_i * w_i) / 100`` in doubles, over the five
  resources; pass ``memory_weight=None`` for the 4-weight overload (memory left out) that
  AvgShedder calls.
* :func:`max_usage_with_weight_within_limit` -- the same but weighted terms above 100 are
  ignored (starts from 0, takes ``d`` only if ``d <= 100``); ThresholdShedder uses it
  when the plain weighted maximum exceeds 1.0.
"""

from __future__ import annotations

import numpy as np

from brokerlb.model.resources import ResourceUsage

__all__ = [
    "max_usage",
    "max_usage_with_memory_2x",
    "max_usage_with_weight",
    "max_usage_with_weight_within_limit",
]


def max_usage(
    cpu: ResourceUsage,
    direct_memory: ResourceUsage,
    bandwidth_in: ResourceUsage,
    bandwidth_out: ResourceUsage,
) -> float:
    """``max(cpu%, directMemory%, bwIn%, bwOut%) / 100`` (memory excluded)."""
    return (
        max(
            cpu.percent_usage(),
            direct_memory.percent_usage(),
            bandwidth_in.percent_usage(),
            bandwidth_out.percent_usage(),
        )
        / 100
    )


def max_usage_with_memory_2x(
    cpu: ResourceUsage,
    memory: ResourceUsage,
    direct_memory: ResourceUsage,
    bandwidth_in: ResourceUsage,
    bandwidth_out: ResourceUsage,
) -> float:
    """Pulsar 2.x: ``(float) max(cpu%, memory%, directMemory%, bwIn%, bwOut%) / 100f``, widened."""
    biggest = max(
        cpu.percent_usage(),
        memory.percent_usage(),
        direct_memory.percent_usage(),
        bandwidth_in.percent_usage(),
        bandwidth_out.percent_usage(),
    )
    with np.errstate(all="ignore"):
        return float(np.float32(biggest) / np.float32(100))


def _weighted_terms(
    cpu: ResourceUsage,
    memory: ResourceUsage,
    direct_memory: ResourceUsage,
    bandwidth_in: ResourceUsage,
    bandwidth_out: ResourceUsage,
    weights: tuple[float, float | None, float, float, float],
) -> list[float]:
    cpu_w, memory_w, direct_memory_w, bandwidth_in_w, bandwidth_out_w = weights
    terms = [cpu.percent_usage() * cpu_w]
    if memory_w is not None:
        terms.append(memory.percent_usage() * memory_w)
    terms.append(direct_memory.percent_usage() * direct_memory_w)
    terms.append(bandwidth_in.percent_usage() * bandwidth_in_w)
    terms.append(bandwidth_out.percent_usage() * bandwidth_out_w)
    return terms


def max_usage_with_weight(
    cpu: ResourceUsage,
    memory: ResourceUsage,
    direct_memory: ResourceUsage,
    bandwidth_in: ResourceUsage,
    bandwidth_out: ResourceUsage,
    weights: tuple[float, float | None, float, float, float],
) -> float:
    """``max(cpu%*w, memory%*w, directMemory%*w, bwIn%*w, bwOut%*w) / 100``.

    ``weights`` is ``(cpu, memory, direct_memory, bandwidth_in, bandwidth_out)``; a ``None``
    memory weight leaves memory out (Pulsar's 4-weight overload).
    """
    return max(_weighted_terms(cpu, memory, direct_memory, bandwidth_in, bandwidth_out, weights)) / 100


def max_usage_with_weight_within_limit(
    cpu: ResourceUsage,
    memory: ResourceUsage,
    direct_memory: ResourceUsage,
    bandwidth_in: ResourceUsage,
    bandwidth_out: ResourceUsage,
    weights: tuple[float, float | None, float, float, float],
    limit: float = 100.0,
) -> float:
    """Like :func:`max_usage_with_weight`, ignoring weighted terms ``> limit`` (Pulsar's ``maxWithinLimit``)."""
    best = 0.0
    for term in _weighted_terms(cpu, memory, direct_memory, bandwidth_in, bandwidth_out, weights):
        if best < term <= limit:
            best = term
    return best / 100
