"""Seeded traffic models: how much every topic publishes and delivers at time ``t``.

A workload answers :meth:`Workload.traffic` with a :class:`TopicTraffic` -- one
numpy array per quantity, indexed by topic id (the order of :attr:`Workload.topics`).
Everything is vectorised: one call costs a few numpy operations over all topics.

:class:`SyntheticWorkload` builds the traffic from the scenario's namespaces:

* **steady Zipf skew** -- topic of rank ``r`` gets weight ``r ** -zipf``; ranks are a seeded
  permutation, so the hot topics fall into random bundles;
* **diurnal curves** -- ``1 + amplitude * cos(2*pi*(t - peak) / period)`` per namespace;
* **hot-topic spike** (:class:`~brokerlb.sim.spec.HotTopic`) -- one topic ramps to
  ``factor`` times its rate;
* **namespace growth** (:class:`~brokerlb.sim.spec.NamespaceGrowth`) -- new topics appear
  evenly over a period, with the namespace's per-topic traffic;
* **traffic scaling** (:class:`~brokerlb.sim.spec.ScaleTraffic`);
* **noise** -- a seeded multiplicative log-normal factor per topic and call (mean 1).

``msg_rate`` of a namespace is its publish rate over its initial topics (for a namespace
that starts with no topic: over all the topics it grows to). The noise stream is drawn in
call order, so two runs that call :meth:`traffic` at the same times get the same traffic --
which is what lets strategies be compared on identical load.

The recorded alternative is :class:`~brokerlb.sim.recorded.RecordedWorkload`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.spec import HotTopic, NamespaceGrowth, ScaleTraffic, Scenario, WorkloadSpec

__all__ = ["TopicTraffic", "Workload", "SyntheticWorkload", "topic_name"]


def topic_name(namespace: str, index: int) -> str:
    """Name of a synthetic topic: ``persistent://{namespace}/topic-{index}``."""
    return f"persistent://{namespace}/topic-{index}"


@dataclass(slots=True)
class TopicTraffic:
    """Traffic of every topic at one instant (arrays indexed by topic id).

    Rates are messages/s, throughputs bytes/s; ``active`` is False for a topic that does
    not exist yet (it then has zero traffic and no connections). The arrays are not written
    after they are handed out, so two quantities with the same values may be one array (with a
    fanout of 1 everywhere, ``msg_rate_out`` is ``msg_rate_in``).
    """

    msg_rate_in: np.ndarray
    msg_rate_out: np.ndarray
    msg_throughput_in: np.ndarray
    msg_throughput_out: np.ndarray
    producers: np.ndarray
    consumers: np.ndarray
    active: np.ndarray

    @classmethod
    def zeros(cls, n: int) -> TopicTraffic:
        z = np.zeros(n)
        zi = np.zeros(n, dtype=np.int64)
        return cls(z, z.copy(), z.copy(), z.copy(), zi, zi.copy(), np.zeros(n, dtype=bool))

    def total_throughput(self) -> float:
        return float(self.msg_throughput_in.sum() + self.msg_throughput_out.sum())


class Workload(Protocol):
    """A source of topic traffic over time."""

    #: namespace -> full topic names, in topic-id order (namespaces in declaration order)
    topics: dict[str, list[str]]

    def traffic(self, t: float) -> TopicTraffic:
        """Traffic at ``t`` seconds from the start."""


class SyntheticWorkload:
    """The scenario's synthetic workloads (module docstring). ``rng`` seeds every random choice."""

    def __init__(self, scenario: Scenario, rng: np.random.Generator) -> None:
        self.topics: dict[str, list[str]] = {}
        growth = _growth_by_namespace(scenario)
        rates: list[np.ndarray] = []
        noise: list[np.ndarray] = []
        activation: list[np.ndarray] = []
        fanout: list[np.ndarray] = []
        size: list[np.ndarray] = []
        producers: list[np.ndarray] = []
        consumers: list[np.ndarray] = []
        ns_sizes: list[int] = []
        self._specs: list[WorkloadSpec] = []
        for ns in scenario.namespaces:
            w = ns.workload
            born = _activation_times(ns.topics, growth.get(ns.name, []))
            n = len(born)
            self.topics[ns.name] = [topic_name(ns.name, k) for k in range(n)]
            rates.append(_zipf_rates(n, ns.topics, w, rng))
            activation.append(born)
            noise.append(np.full(n, w.noise))
            fanout.append(np.full(n, w.fanout))
            size.append(np.full(n, w.msg_size))
            producers.append(np.full(n, w.producers, dtype=np.int64))
            consumers.append(np.full(n, w.consumers, dtype=np.int64))
            ns_sizes.append(n)
            self._specs.append(w)

        def cat(parts: Sequence[np.ndarray], dtype: type = float) -> np.ndarray:
            return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

        self._base_rate = cat(rates)
        self._activation = cat(activation)
        self._sigma = cat(noise)
        self._fanout = cat(fanout)
        self._size = cat(size)
        self._producers = cat(producers, np.int64)
        self._consumers = cat(consumers, np.int64)
        #: topics per namespace: a namespace's topics are contiguous, so a per-namespace factor
        #: is spread over the topics by ``np.repeat``
        self._ns_sizes = np.array(ns_sizes, dtype=np.int64)
        self._noisy = bool((self._sigma > 0).any())
        self._unit_fanout = bool((self._fanout == 1.0).all())  # out == in: one array for both
        self._half_variance = 0.5 * self._sigma**2
        self._last_activation = float(self._activation.max()) if len(self._activation) else 0.0
        self._all_true = np.ones(len(self._base_rate), dtype=bool)
        self._rng = rng
        ns_index = {ns.name: i for i, ns in enumerate(scenario.namespaces)}
        offsets = np.cumsum([0] + [len(self.topics[ns.name]) for ns in scenario.namespaces])
        self._hot: list[tuple[int, HotTopic]] = []
        for e in scenario.events:
            if isinstance(e, HotTopic):
                if e.topic >= len(self.topics[e.namespace]):
                    raise InvalidScenarioError(
                        f"hot_topic: namespace {e.namespace} has {len(self.topics[e.namespace])} topics, "
                        f"no topic {e.topic}",
                        field="events",
                        source=scenario.source,
                    )
                topic = int(offsets[ns_index[e.namespace]] + e.topic)
                if e.rate is not None:  # a target rate: the factor that reaches it from the base rate
                    base = float(self._base_rate[topic])
                    e = replace(e, factor=e.rate / base if base > 0 else 1.0)
                self._hot.append((topic, e))
        self._scales = [e for e in scenario.events if isinstance(e, ScaleTraffic)]
        self._ns_index = ns_index

    @property
    def num_topics(self) -> int:
        return len(self._base_rate)

    def namespace_factors(self, t: float) -> np.ndarray:
        """Diurnal curve times traffic scaling, per namespace, at ``t``."""
        factors = np.ones(len(self._specs))
        for i, w in enumerate(self._specs):
            if w.diurnal is not None:
                d = w.diurnal
                factors[i] = 1.0 + d.amplitude * math.cos(2 * math.pi * (t - d.peak) / d.period)
        if self._scales:
            factors *= _scale_factors(self._scales, self._ns_index, len(self._specs), t)
        return factors

    def traffic(self, t: float) -> TopicTraffic:
        all_active = t >= self._last_activation
        rate = self._base_rate * np.repeat(self.namespace_factors(t), self._ns_sizes)
        for topic, event in self._hot:
            rate[topic] *= _hot_factor(event, t)
        if self._noisy:
            z = self._rng.standard_normal(len(rate))
            z *= self._sigma
            z -= self._half_variance
            np.exp(z, out=z)
            rate *= z
        if all_active:
            active, producers, consumers = self._all_true, self._producers, self._consumers
        else:
            active = self._activation <= t
            rate[~active] = 0.0
            producers = np.where(active, self._producers, 0)
            consumers = np.where(active, self._consumers, 0)
        throughput_in = rate * self._size
        if self._unit_fanout:  # rate * 1.0 is rate, bit for bit
            out, throughput_out = rate, throughput_in
        else:
            out = rate * self._fanout
            throughput_out = out * self._size
        return TopicTraffic(
            msg_rate_in=rate,
            msg_rate_out=out,
            msg_throughput_in=throughput_in,
            msg_throughput_out=throughput_out,
            producers=producers,
            consumers=consumers,
            active=active,
        )


def _growth_by_namespace(scenario: Scenario) -> dict[str, list[NamespaceGrowth]]:
    out: dict[str, list[NamespaceGrowth]] = {}
    for e in scenario.events:
        if isinstance(e, NamespaceGrowth):
            out.setdefault(e.namespace, []).append(e)
    return out


def _activation_times(initial: int, growth: list[NamespaceGrowth]) -> np.ndarray:
    """Creation time of each topic: 0 for the initial ones, then evenly over each growth period."""
    parts: list[np.ndarray] = [np.zeros(initial)]
    for g in growth:
        parts.append(g.at + np.arange(g.topics) * (g.over / g.topics))
    return np.concatenate(parts)


def _zipf_rates(n: int, initial: int, w: WorkloadSpec, rng: np.random.Generator) -> np.ndarray:
    """Per-topic publish rates: Zipf weights over a seeded rank permutation, scaled to ``msg_rate``."""
    if n == 0:
        return np.zeros(0)
    ranks = rng.permutation(n) + 1.0
    weights = ranks ** (-w.zipf) if w.zipf > 0 else np.ones(n)
    reference = weights[:initial].sum() if initial > 0 else weights.sum()
    return weights * (w.msg_rate / reference)


def _hot_factor(event: HotTopic, t: float) -> float:
    if t < event.at:
        return 1.0
    if event.duration is not None and t >= event.at + event.duration:
        return 1.0
    progress = 1.0 if event.ramp <= 0 else min(1.0, (t - event.at) / event.ramp)
    return 1.0 + (event.factor - 1.0) * progress


def _scale_factors(events: list[ScaleTraffic], ns_index: dict[str, int], n: int, t: float) -> np.ndarray:
    factors = np.ones(n)
    for e in events:  # sorted by time: each moves its namespaces from the current factor to e.factor
        if t < e.at:
            break
        targets = range(n) if e.namespace is None else [ns_index[e.namespace]]
        progress = 1.0 if e.ramp <= 0 else min(1.0, (t - e.at) / e.ramp)
        for i in targets:
            factors[i] = factors[i] + (e.factor - factors[i]) * progress
    return factors
