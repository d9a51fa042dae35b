"""Pulsar's capped running average over report cycles, for many cycles at once (pure, no Spark).

``TimeAverageMessageData.update`` is sequential::

    n = min(n + 1, max_samples);  avg = ((n - 1) * avg + x) / n

A bundle's samples come from broker reports. In the leader's semantics (see
:mod:`brokerlb.history.replay`) one report's value ``x`` is folded again on **every** cycle
until the broker reports again, so a bundle sees long runs of equal samples. Folding them one
by one costs ``O(cycles × bundles)``; this module folds a run of ``L`` cycles in ``O(k)``
(``k`` = reports that list the bundle during the run, usually 1):

* while ``n < max``: the average is the plain mean, ``avg' = (n·avg + L·Σx) / (n + k·L)``;
* the cycle in which ``n`` reaches ``max`` is folded sample by sample;
* once capped, each fold is ``avg ← a·avg + x/max`` with ``a = (max-1)/max``; one cycle is the
  affine map ``avg ← A·avg + B`` (``A = a^k``, ``B = Σ a^(k-1-i)·x_i / max``), and ``L`` cycles are
  ``A^L·avg + B·(1 - A^L)/(1 - A)`` (computed with ``expm1``/``log1p``).

Runs of at most :data:`STEPWISE_FOLDS` folds are folded one by one with the model's own
formula, so ``cycles="report"`` (every run is one cycle) is bit-identical to
``TimeAverageMessageData``; long runs agree to about 1e-13 relative (the tests allow 1e-9).

:func:`sweep_bundle` walks one bundle's contributions (a report's sample with the cycles
``[start, end)`` during which it is the broker's latest) and returns the bundle's history after
each contribution's first cycle, the state right after the contribution's own fold in its first
and in its last cycle, and its final state. The Spark job runs it per bundle.

Within a cycle the leader folds brokers one after the other (in id order) and computes each
broker's time averages right after folding that broker's report
(:func:`brokerlb.loadbalance.refresh.refresh`); a broker's time averages therefore use each
bundle's state *right after its own fold*, which is what the ``own`` snapshots give. The
cycles in which a contribution starts or ends are folded broker by broker for that reason;
the cycles between are folded at once.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from brokerlb.model import NUM_LONG_SAMPLES, NUM_SHORT_SAMPLES

__all__ = ["STEPWISE_FOLDS", "Window", "BundleState", "SweepResult", "sweep_bundle"]

#: Runs of at most this many folds are folded one by one (exactly as the model does).
STEPWISE_FOLDS = 64

Values = tuple[float, float, float, float]  # msgThroughputIn, msgThroughputOut, msgRateIn, msgRateOut


@dataclass(slots=True)
class Window:
    """A capped running average of four values (``TimeAverageMessageData`` without the JSON)."""

    max_samples: int
    num_samples: int = 0
    values: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0, 0.0])

    def fold(self, x: Values) -> None:
        """One sample, with the model's formula."""
        n = self.num_samples = min(self.num_samples + 1, self.max_samples)
        v = self.values
        v[0] = ((n - 1) * v[0] + x[0]) / n
        v[1] = ((n - 1) * v[1] + x[1]) / n
        v[2] = ((n - 1) * v[2] + x[2]) / n
        v[3] = ((n - 1) * v[3] + x[3]) / n

    def advance(self, xs: Sequence[Values], cycles: int) -> None:
        """``cycles`` cycles, each folding ``xs`` in order."""
        k = len(xs)
        if k == 0 or cycles <= 0:
            return
        if k * cycles <= STEPWISE_FOLDS:
            for _ in range(cycles):
                for x in xs:
                    self.fold(x)
            return
        m = self.max_samples
        if self.num_samples < m:
            whole = min(cycles, (m - self.num_samples) // k)
            if whole > 0:
                self._mean_of_runs(xs, whole)
                cycles -= whole
            if cycles > 0 and self.num_samples < m:
                for x in xs:  # the cycle that reaches the cap
                    self.fold(x)
                cycles -= 1
        if cycles > 0:
            self._capped_runs(xs, cycles)

    def _mean_of_runs(self, xs: Sequence[Values], cycles: int) -> None:
        n = self.num_samples
        total = n + len(xs) * cycles
        for j in range(4):
            s = math.fsum(x[j] for x in xs)
            self.values[j] = (n * self.values[j] + cycles * s) / total
        self.num_samples = total

    def _capped_runs(self, xs: Sequence[Values], cycles: int) -> None:
        m = self.max_samples
        k = len(xs)
        if m == 1:  # each fold replaces the value
            self.values = list(xs[-1])
            return
        log_a = math.log1p(-1.0 / m)
        weights = [math.exp((k - 1 - i) * log_a) / m for i in range(k)]
        log_big_a = k * log_a
        a_pow = math.exp(cycles * log_big_a)
        geometric = math.expm1(cycles * log_big_a) / math.expm1(log_big_a)
        for j in range(4):
            b = math.fsum(w * x[j] for w, x in zip(weights, xs, strict=True))
            self.values[j] = a_pow * self.values[j] + b * geometric

    def snapshot(self) -> tuple[float, float, float, float, int]:
        v = self.values
        return v[0], v[1], v[2], v[3], self.num_samples


@dataclass(slots=True)
class BundleState:
    """Short- and long-term windows plus the topic count of the last folded sample."""

    short: Window = field(default_factory=lambda: Window(NUM_SHORT_SAMPLES))
    long: Window = field(default_factory=lambda: Window(NUM_LONG_SAMPLES))
    topics: int = 0
    last_cycle: int = -1

    def advance(self, xs: Sequence[Values], topics: int, first_cycle: int, cycles: int) -> None:
        if not xs or cycles <= 0:
            return
        self.short.advance(xs, cycles)
        self.long.advance(xs, cycles)
        self.topics = topics
        self.last_cycle = first_cycle + cycles - 1

    def snapshot(self) -> tuple:
        """``(short 4 values, short n, long 4 values, long n, topics, last_cycle)``."""
        return (*self.short.snapshot(), *self.long.snapshot(), self.topics, self.last_cycle)


@dataclass(slots=True)
class SweepResult:
    #: per contribution (input order): :meth:`BundleState.snapshot` after its first cycle
    after_start: list[tuple]
    #: per contribution: the snapshot right after its own fold in its first cycle
    own_start: list[tuple]
    #: per contribution: the snapshot right after its own fold in its last cycle
    own_last: list[tuple]
    #: :meth:`BundleState.snapshot` after the last cycle
    final: tuple


def sweep_bundle(
    starts: Sequence[int],
    ends: Sequence[int],
    brokers: Sequence[str],
    values: Sequence[Values],
    topics: Sequence[int],
    *,
    short_samples: int = NUM_SHORT_SAMPLES,
    long_samples: int = NUM_LONG_SAMPLES,
) -> SweepResult:
    """Fold one bundle's contributions, given sorted by ``(start, broker)``.

    Contribution ``i`` (broker ``brokers[i]``'s report at cycle ``starts[i]``) is folded once per
    cycle in ``[starts[i], ends[i])``; in a cycle, the active contributions are folded in broker
    order. A broker has at most one active contribution (a newer one replaces it).
    """
    state = BundleState(Window(short_samples), Window(long_samples))
    after: list[tuple | None] = [None] * len(starts)
    own_start: list[tuple | None] = [None] * len(starts)
    own_last: list[tuple | None] = [None] * len(starts)
    active: dict[str, int] = {}  # broker -> contribution index
    folded: tuple[list[Values], int] = ([], 0)  # values in broker order, topics of the last

    def refresh() -> tuple[list[Values], int]:
        order = [active[b] for b in sorted(active)]
        return [values[i] for i in order], (topics[order[-1]] if order else 0)

    def fold_cycle(cycle: int, started: frozenset[int] = frozenset()) -> None:
        """One cycle, broker by broker, keeping each contribution's state after its own fold."""
        for broker in sorted(active):
            j = active[broker]
            state.short.fold(values[j])
            state.long.fold(values[j])
            state.topics = topics[j]
            snap = (*state.short.snapshot(), *state.long.snapshot(), state.topics, cycle)
            own_last[j] = snap
            if j in started:
                own_start[j] = snap
        state.last_cycle = cycle

    i, n = 0, len(starts)
    cursor = starts[0] if n else 0  # cycles before `cursor` are folded
    infinity = float("inf")
    while True:
        next_start = starts[i] if i < n else infinity
        next_end = min((ends[j] for j in active.values()), default=infinity)
        t = min(next_start, next_end)
        if t == infinity:
            break
        t = int(t)
        if t - cursor >= 1 and next_end == t:
            # a contribution ends: its last cycle broker by broker, the ones before it at once
            state.advance(folded[0], folded[1], cursor, t - cursor - 1)
            fold_cycle(t - 1)
        else:
            state.advance(folded[0], folded[1], cursor, t - cursor)
        cursor = t
        changed = False
        for b in [b for b, j in active.items() if ends[j] <= t]:
            del active[b]
            changed = True
        started = []
        while i < n and starts[i] == t:
            active[brokers[i]] = i
            started.append(i)
            i += 1
            changed = True
        if changed:
            folded = refresh()
        if started:
            fold_cycle(t, frozenset(started))
            cursor = t + 1
            snap = state.snapshot()
            for j in started:
                after[j] = snap
    return SweepResult(after, own_start, own_last, state.snapshot())  # type: ignore[arg-type]
