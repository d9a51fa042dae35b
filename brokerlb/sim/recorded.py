"""Replay recorded topic-level traffic instead of a synthetic workload.

A :class:`RecordedWorkload` is a list of topic samples over time -- what the
pipeline collects from brokers' topic stats. Each sample says: at ``timestamp``
(ms since the epoch) topic ``topic`` had these rates. At simulated time ``t`` every
topic carries the values of its latest sample at or before ``start_ms + t * 1000``
(sample and hold); a topic exists from its first sample on.

Records (one JSON object per line, or dicts in code) use Pulsar's TopicStats names::

    {"timestamp": 1700000000000, "topic": "persistent://t/ns/orders",
     "msgRateIn": 120.0, "msgRateOut": 240.0, "msgThroughputIn": 122880.0,
     "msgThroughputOut": 245760.0, "producerCount": 2, "consumerCount": 4}

``timestamp`` may also be named ``ts`` or ``time``; missing rates are 0, missing counts 0.
These are the pipeline's ``topic-samples`` records (docs/load-history.md; other keys such as
``broker`` and ``bundle`` are ignored): :meth:`RecordedWorkload.from_history` reads them from a
load-history directory.
Bad records raise :class:`~brokerlb.errors.InvalidScenarioError` naming the line and field.

The object is plain numpy arrays (picklable), so a Spark task can receive it and call
:func:`brokerlb.sim.run_scenario` with ``workload=...``.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from brokerlb.errors import InvalidInputError, InvalidScenarioError
from brokerlb.naming import TopicName
from brokerlb.sim.workloads import TopicTraffic

__all__ = ["RecordedWorkload", "RecordedPlayer"]

_TIME_KEYS = ("timestamp", "ts", "time")
_RATE_KEYS = ("msgRateIn", "msgRateOut", "msgThroughputIn", "msgThroughputOut")
_COUNT_KEYS = ("producerCount", "consumerCount")


@dataclass(frozen=True, eq=False)
class RecordedWorkload:
    """Topic samples over time, as sorted parallel arrays (see the module docstring).

    ``topics`` lists full topic names; ``topic[i]`` of sample ``i`` indexes it.
    """

    topics: tuple[str, ...]
    timestamp: np.ndarray
    topic: np.ndarray
    msg_rate_in: np.ndarray
    msg_rate_out: np.ndarray
    msg_throughput_in: np.ndarray
    msg_throughput_out: np.ndarray
    producers: np.ndarray
    consumers: np.ndarray
    namespaces: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        order = np.argsort(self.timestamp, kind="stable")
        for name in ("timestamp", "topic", *_ATTRS, "producers", "consumers"):
            object.__setattr__(self, name, np.asarray(getattr(self, name))[order])
        seen: dict[str, None] = {}
        for t in self.topics:
            seen.setdefault(str(TopicName.parse(t).namespace), None)
        object.__setattr__(self, "namespaces", tuple(seen))

    @property
    def start_ms(self) -> int:
        """Time of the first sample (simulated time 0)."""
        return int(self.timestamp[0]) if len(self.timestamp) else 0

    @property
    def span_seconds(self) -> float:
        """Seconds from the first to the last sample."""
        return float(self.timestamp[-1] - self.timestamp[0]) / 1000 if len(self.timestamp) else 0.0

    def topics_by_namespace(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {ns: [] for ns in self.namespaces}
        for t in self.topics:
            out[str(TopicName.parse(t).namespace)].append(t)
        return out

    # ------------------------------------------------------------------ building

    @classmethod
    def from_records(
        cls, records: Iterable[Mapping[str, Any]], source: str | None = None
    ) -> RecordedWorkload:
        """Build from sample dicts (module docstring). ``source`` names the input in errors."""
        index: dict[str, int] = {}
        names: list[str] = []
        columns: dict[str, list[float]] = {k: [] for k in ("timestamp", "topic", *_RATE_KEYS, *_COUNT_KEYS)}
        for line, record in enumerate(records, start=1):
            where = f"record {line}"
            if not isinstance(record, Mapping):
                raise InvalidScenarioError(
                    f"expected a JSON object, got {record!r}", field=where, source=source
                )
            topic = _topic(record, where, source)
            if topic not in index:
                index[topic] = len(names)
                names.append(topic)
            columns["timestamp"].append(_timestamp(record, where, source))
            columns["topic"].append(index[topic])
            for key in _RATE_KEYS:
                columns[key].append(_number(record.get(key, 0.0), f"{where}.{key}", source, integer=False))
            for key in _COUNT_KEYS:
                columns[key].append(_number(record.get(key, 0), f"{where}.{key}", source, integer=True))
        if not names:
            raise InvalidScenarioError("no topic samples", source=source)
        return cls(
            topics=tuple(names),
            timestamp=np.asarray(columns["timestamp"], dtype=np.int64),
            topic=np.asarray(columns["topic"], dtype=np.int64),
            msg_rate_in=np.asarray(columns["msgRateIn"], dtype=float),
            msg_rate_out=np.asarray(columns["msgRateOut"], dtype=float),
            msg_throughput_in=np.asarray(columns["msgThroughputIn"], dtype=float),
            msg_throughput_out=np.asarray(columns["msgThroughputOut"], dtype=float),
            producers=np.asarray(columns["producerCount"], dtype=np.int64),
            consumers=np.asarray(columns["consumerCount"], dtype=np.int64),
        )

    @classmethod
    def from_jsonl(cls, path: str | os.PathLike[str]) -> RecordedWorkload:
        """Read a JSON Lines file of samples (blank lines are skipped)."""
        source = str(path)

        def records() -> Iterable[Mapping[str, Any]]:
            try:
                with open(path, encoding="utf-8") as handle:
                    for number, text in enumerate(handle, start=1):
                        if not text.strip():
                            continue
                        try:
                            yield json.loads(text)
                        except json.JSONDecodeError as exc:
                            raise InvalidScenarioError(
                                f"line {number} is not JSON: {exc.msg}", source=source
                            ) from exc
            except OSError as exc:
                raise InvalidScenarioError(
                    f"cannot read the file: {exc.strerror or exc}", source=source
                ) from exc

        return cls.from_records(records(), source=source)

    @classmethod
    def from_history(cls, root: str | os.PathLike[str]) -> RecordedWorkload:
        """Read the ``topic-samples`` of a load-history directory (:mod:`brokerlb.history`,
        docs/load-history.md): what a cluster -- or a simulation -- recorded."""
        from brokerlb.history import TOPIC_SAMPLES, read_history

        records = [record.to_json() for record in read_history(root, TOPIC_SAMPLES)]
        return cls.from_records(records, source=f"{os.fspath(root)}/{TOPIC_SAMPLES}")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> RecordedWorkload:
        """A JSON Lines file of samples, or a load-history directory."""
        return cls.from_history(path) if os.path.isdir(path) else cls.from_jsonl(path)

    def player(self) -> RecordedPlayer:
        return RecordedPlayer(self)


_ATTRS = ("msg_rate_in", "msg_rate_out", "msg_throughput_in", "msg_throughput_out")


class RecordedPlayer:
    """Plays a :class:`RecordedWorkload` forward in time (sample and hold); times must not go back."""

    def __init__(self, recorded: RecordedWorkload) -> None:
        self._rec = recorded
        by_ns = recorded.topics_by_namespace()
        #: namespace -> topics, in topic-id order of :meth:`traffic`
        self.topics: dict[str, list[str]] = by_ns
        order = [t for names in by_ns.values() for t in names]
        position = {t: i for i, t in enumerate(order)}
        self._slot = np.asarray([position[t] for t in recorded.topics], dtype=np.int64)
        self._state = TopicTraffic.zeros(len(order))
        self._next = 0
        self._last_t = -math.inf

    def traffic(self, t: float) -> TopicTraffic:
        if t < self._last_t:
            raise ValueError(f"recorded workload played backwards ({self._last_t} -> {t})")
        self._last_t = t
        rec, state = self._rec, self._state
        now_ms = rec.start_ms + t * 1000.0
        end = int(np.searchsorted(rec.timestamp, now_ms, side="right"))
        if end > self._next:
            topics = rec.topic[self._next : end]
            # keep each topic's latest sample in the window (numpy does not order duplicate writes)
            last_of_topic, first_in_reversed = np.unique(topics[::-1], return_index=True)
            rows = self._next + (len(topics) - 1 - first_in_reversed)
            slots = self._slot[last_of_topic]
            state.msg_rate_in[slots] = rec.msg_rate_in[rows]
            state.msg_rate_out[slots] = rec.msg_rate_out[rows]
            state.msg_throughput_in[slots] = rec.msg_throughput_in[rows]
            state.msg_throughput_out[slots] = rec.msg_throughput_out[rows]
            state.producers[slots] = rec.producers[rows]
            state.consumers[slots] = rec.consumers[rows]
            state.active[slots] = True
            self._next = end
        return TopicTraffic(
            state.msg_rate_in.copy(),
            state.msg_rate_out.copy(),
            state.msg_throughput_in.copy(),
            state.msg_throughput_out.copy(),
            state.producers.copy(),
            state.consumers.copy(),
            state.active.copy(),
        )


def _topic(record: Mapping[str, Any], where: str, source: str | None) -> str:
    raw = record.get("topic")
    if not isinstance(raw, str):
        raise InvalidScenarioError(
            f"missing or non-string topic: {raw!r}", field=f"{where}.topic", source=source
        )
    try:
        return str(TopicName.parse(raw))
    except InvalidInputError as exc:
        raise InvalidScenarioError(str(exc), field=f"{where}.topic", source=source) from None


def _timestamp(record: Mapping[str, Any], where: str, source: str | None) -> int:
    for key in _TIME_KEYS:
        if key in record:
            return int(_number(record[key], f"{where}.{key}", source, integer=True))
    raise InvalidScenarioError(
        f"missing timestamp (one of {', '.join(_TIME_KEYS)})", field=where, source=source
    )


def _number(value: Any, where: str, source: str | None, *, integer: bool) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if ok and integer and isinstance(value, float):
        ok = value.is_integer()
    if not ok or not math.isfinite(value) or value < 0:
        kind = "a non-negative integer" if integer else "a finite non-negative number"
        raise InvalidScenarioError(f"{value!r} is not {kind}", field=where, source=source)
    return value
