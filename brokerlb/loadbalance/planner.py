"""The offline planner: "given this cluster snapshot, what would the load manager do?".

Operations (each answers one JSON document, see :func:`empty_answer`):

* ``shed`` -- by default what the leader's shedding loop would unload
  (:func:`brokerlb.loadbalance.shedding.loop.run_shedding_cycle`: enabled flags, more than
  one broker, grace period, isolation and anti-affinity checks, destinations); with
  ``raw`` the strategy's own ``findBundlesForUnloading`` on every broker of the snapshot;
* ``split`` -- which bundles the split check would split
  (:func:`brokerlb.loadbalance.split.find_bundles_to_split`);
* ``place`` -- where the full placement pipeline would put ``bundle``
  (:func:`brokerlb.loadbalance.placement.pipeline.select_broker_for_assignment`); with
  ``raw`` the strategy's ``selectBroker`` over all brokers of the snapshot.

Strategy memory (ThresholdShedder history, hit counters, EMAs, the round-robin counter)
lives in a :class:`PlannerSession`; requests naming the same ``session`` share one, so a
sequence of snapshots replays several leader cycles. A request without a session gets a
fresh one. Randomness comes from the session's ``random.Random``: seeded with the
request's ``seed`` (default :data:`~brokerlb.loadbalance.state.DEFAULT_SEED`, so answers
are reproducible); a later request of the same session that gives a ``seed`` reseeds it.

Answer shape::

    {"op": "shed", "strategy": "<Pulsar class name>", "unload": [...], "split": [...],
     "merge": [...], "placement": null | {...}, "stats": {...}}

Only ``unload`` entries with ``"label": "Success"`` are unloads; the others say why
something did not move. An answer also has ``"warnings": [sentence, ...]`` when its snapshot
held values accepted with a warning (a Pulsar config key brokerlb does not model, a window's
``numSamples`` above ``maxSamples``; :mod:`brokerlb.loadbalance.snapshot`). Errors raise :class:`~brokerlb.errors.BrokerLBError` subclasses;
:meth:`Planner.run_batch` turns each into an ``{"error": ...}`` answer and goes on.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from brokerlb.errors import (
    BrokerLBError,
    BundleNotFoundError,
    InvalidInputError,
    StrategyNotAvailableError,
)
from brokerlb.loadbalance.decisions import (
    PlacementDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    SplitResult,
)
from brokerlb.loadbalance.registry import StrategyKind, default_strategy_name, resolve
from brokerlb.loadbalance.snapshot import parse_snapshot
from brokerlb.loadbalance.state import DEFAULT_SEED, StrategyState, new_rng
from brokerlb.loadbalance.view import ClusterView
from brokerlb.naming import is_system_service_namespace

__all__ = ["OPS", "PlanRequest", "PlannerSession", "Planner", "empty_answer"]

#: Operations the planner answers.
OPS = ("shed", "split", "place")
_REQUEST_KEYS = frozenset({"op", "snapshot", "strategy", "bundle", "session", "seed", "raw", "set"})
#: Keys a request may carry for its author (ignored), besides any key starting with ``_``.
_NOTE_KEYS = frozenset({"id", "name", "comment", "description", "expect", "expected"})


def empty_answer(op: str, strategy: str | None) -> dict[str, Any]:
    """The answer skeleton every operation fills its part of."""
    return {
        "op": op,
        "strategy": strategy,
        "unload": [],
        "split": [],
        "merge": [],
        "placement": None,
        "stats": {},
    }


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """One planner request (a batch line, or a CLI call).

    ``snapshot`` is a snapshot document (dict) or an already-built view; ``overrides`` are
    config keys applied over the snapshot's (``--set``).
    """

    op: str
    snapshot: Mapping[str, Any] | ClusterView | None = None
    strategy: str | None = None
    bundle: str | None = None
    session: str | None = None
    seed: int | None = None
    raw: bool = False
    overrides: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> PlanRequest:
        """A batch line's request; bad fields raise :class:`InvalidInputError`."""
        if not isinstance(data, Mapping):
            raise InvalidInputError("a batch request must be a JSON object")
        unknown = sorted(
            k for k in data if k not in _REQUEST_KEYS and k not in _NOTE_KEYS and not str(k).startswith("_")
        )
        if unknown:
            raise InvalidInputError(
                f"unknown request key(s) {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(_REQUEST_KEYS))}"
            )
        op = data.get("op")
        if op not in OPS:
            raise InvalidInputError(f"'op' must be one of {', '.join(OPS)}, got {op!r}")
        for key in ("strategy", "bundle", "session"):
            if data.get(key) is not None and not isinstance(data[key], str):
                raise InvalidInputError(f"'{key}' must be a string, got {data[key]!r}")
        seed = data.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise InvalidInputError(f"'seed' must be an integer, got {seed!r}")
        raw = data.get("raw", False)
        if not isinstance(raw, bool):
            raise InvalidInputError(f"'raw' must be true or false, got {raw!r}")
        overrides = data.get("set") or {}
        if not isinstance(overrides, Mapping):
            raise InvalidInputError(f"'set' must be an object of config keys, got {overrides!r}")
        snapshot = data.get("snapshot")
        if snapshot is not None and not isinstance(snapshot, Mapping):
            raise InvalidInputError("'snapshot' must be a JSON object")
        return cls(
            op,
            snapshot,
            data.get("strategy"),
            data.get("bundle"),
            data.get("session"),
            seed,
            raw,
            dict(overrides),
        )


@dataclass(slots=True)
class PlannerSession:
    """Strategy memory and random source shared by the requests of one session."""

    state: StrategyState = field(default_factory=StrategyState)
    rng: random.Random = field(default_factory=new_rng)


class Planner:
    """Answers planner requests; keeps the sessions of a batch.

    ``clock`` gives "now" (ms) for snapshots without ``now`` (the CLI passes the wall clock);
    ``default_snapshot`` is used by requests that carry none.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], int] | None = None,
        default_snapshot: Mapping[str, Any] | ClusterView | None = None,
    ) -> None:
        self._clock = clock
        self._default_snapshot = default_snapshot
        self.sessions: dict[str, PlannerSession] = {}

    # ------------------------------------------------------------------ requests

    def run(self, request: PlanRequest | Mapping[str, Any]) -> dict[str, Any]:
        """Answer one request (raises on error)."""
        if not isinstance(request, PlanRequest):
            request = PlanRequest.from_json(request)
        snapshot_warnings: list[str] = []
        view = self.view_of(request.snapshot, request.overrides, warn=snapshot_warnings.append)
        session = self.session(request.session, request.seed)
        if request.op == "shed":
            answer = self.shed(view, session, strategy=request.strategy, raw=request.raw)
        elif request.op == "split":
            answer = self.split(view, session, strategy=request.strategy)
        elif request.bundle is None:
            raise InvalidInputError("'place' needs a bundle ('bundle' / --bundle)")
        else:
            answer = self.place(view, request.bundle, session, strategy=request.strategy, raw=request.raw)
        if snapshot_warnings:
            answer["warnings"] = snapshot_warnings
        return answer

    def run_batch(self, lines: Iterable[str]) -> Iterator[dict[str, Any]]:
        """One answer per non-blank JSON Lines request, in order; errors become ``{"error": ...}``."""
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                try:
                    data = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidInputError(f"line {number} is not valid JSON: {exc}") from exc
                yield self.run(data)
            except BrokerLBError as exc:
                yield {"error": str(exc), "line": number}

    def view_of(
        self,
        snapshot: Mapping[str, Any] | ClusterView | None,
        overrides: Mapping[str, Any] | None = None,
        *,
        warn: Callable[[str], None] | None = None,
    ) -> ClusterView:
        """The view a request works on (its snapshot, or the default one, plus ``overrides``);
        ``warn`` receives the snapshot's warnings (:func:`~brokerlb.loadbalance.snapshot.parse_snapshot`)."""
        source = snapshot if snapshot is not None else self._default_snapshot
        if source is None:
            raise InvalidInputError("no snapshot given")
        view = (
            source
            if isinstance(source, ClusterView)
            else parse_snapshot(source, now_ms=self._clock() if self._clock else None, warn=warn)
        )
        if overrides and warn is not None:
            ignored = view.config.registry.ignored
            for key in overrides:
                if str(key).strip() in ignored:
                    warn(f"set.{key}: a Pulsar key brokerlb does not model; accepted and ignored")
        return view.with_overrides(overrides) if overrides else view

    def session(self, session_id: str | None, seed: int | None = None) -> PlannerSession:
        """The named session (created on first use), or a fresh one; ``seed`` (re)seeds its rng."""
        if session_id is None:
            return PlannerSession(rng=new_rng(DEFAULT_SEED if seed is None else seed))
        session = self.sessions.get(session_id)
        if session is None:
            session = self.sessions[session_id] = PlannerSession(
                rng=new_rng(DEFAULT_SEED if seed is None else seed)
            )
        elif seed is not None:
            session.rng.seed(seed)
        return session

    # ------------------------------------------------------------------ operations

    def shed(
        self, view: ClusterView, session: PlannerSession, *, strategy: str | None = None, raw: bool = False
    ) -> dict[str, Any]:
        spec = resolve(
            StrategyKind.SHEDDING, strategy or default_strategy_name(StrategyKind.SHEDDING, view.config)
        )
        if raw:
            result = spec.create().find_bundles_for_unloading(view, session.state, session.rng)
        else:
            from brokerlb.loadbalance.shedding.loop import run_shedding_cycle

            result = run_shedding_cycle(view, session.state, session.rng, strategy=spec.class_name)
        answer = empty_answer("shed", spec.class_name)
        answer.update(_as_shedding(result).to_json())
        return answer

    def split(
        self, view: ClusterView, session: PlannerSession, *, strategy: str | None = None
    ) -> dict[str, Any]:
        spec = resolve(StrategyKind.SPLIT, strategy or default_strategy_name(StrategyKind.SPLIT, view.config))
        find_bundles_to_split = _import(
            "brokerlb.loadbalance.split", "find_bundles_to_split", spec.class_name, "split"
        )
        result = find_bundles_to_split(view, session.state, spec.class_name)
        answer = empty_answer("split", spec.class_name)
        answer.update(_as_split(result).to_json())
        return answer

    def place(
        self,
        view: ClusterView,
        bundle: str,
        session: PlannerSession,
        *,
        strategy: str | None = None,
        raw: bool = False,
    ) -> dict[str, Any]:
        if not view.knows_bundle(bundle) and not is_system_service_namespace(view.namespace_of(bundle)):
            raise BundleNotFoundError(
                f"Bundle {bundle} is not in the snapshot (no history, report, owner, "
                "preallocation or namespace bundles mention it)"
            )
        spec = resolve(
            StrategyKind.PLACEMENT, strategy or default_strategy_name(StrategyKind.PLACEMENT, view.config)
        )
        if raw:
            candidates = view.available_brokers
            broker = spec.create().select_broker(view, candidates, bundle, session.state, session.rng)
            decision = PlacementDecision(
                bundle,
                broker,
                tuple(candidates),
                Reason.SELECTED
                if broker is not None
                else (Reason.NO_BROKERS if not candidates else Reason.NO_CANDIDATES),
                "raw selectBroker over every broker of the snapshot",
            )
        else:
            select = _import(
                "brokerlb.loadbalance.placement.pipeline",
                "select_broker_for_assignment",
                spec.class_name,
                "placement",
            )
            decision = select(view, bundle, session.state, session.rng, strategy=spec.class_name)
        answer = empty_answer("place", spec.class_name)
        answer["placement"] = decision.to_json()
        return answer


def _import(module: str, attribute: str, strategy: str, kind: str) -> Any:
    import importlib

    try:
        return getattr(importlib.import_module(module), attribute)
    except (ModuleNotFoundError, AttributeError) as exc:
        raise StrategyNotAvailableError(strategy, kind, f"{module}.{attribute} is not available") from exc


def _as_shedding(result: SheddingResult | Any) -> SheddingResult:
    if isinstance(result, SheddingResult):
        return result
    return SheddingResult.of(result)


def _as_split(result: SplitResult | Iterable[SplitDecision]) -> SplitResult:
    if isinstance(result, SplitResult):
        return result
    return SplitResult.of(result)
