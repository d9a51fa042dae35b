"""The admin plan: bundle operations to apply to a running cluster, as JSON (``docs/plan-format.md``).

::

    {"kind": "brokerlb.plan", "version": 1, "createdAt": 1700000000000,
     "source": {"job": "recommend", ...},
     "operations": [
       {"op": "split", "namespace": "public/default", "bundle": "0x00000000_0x40000000",
        "boundaries": ["0x12345678", "0x23456789"], "unload": true, "reason": "...", "expected": [...]},
       {"op": "merge", "namespace": "public/default",
        "bundles": ["0x80000000_0xc0000000", "0xc0000000_0xffffffff"], "reason": "...", "expected": {...}},
       {"op": "unload", "namespace": "public/default", "bundle": "0x40000000_0x80000000",
        "destinationBroker": "broker-2:8080", "reason": "..."}],
     "advice": [{"namespace": "public/default", "currentBundles": 4, "advisedBundles": 6, ...}]}

Operations run in order; each names bundles by range in the layout it expects when it runs.
``reason``, ``expected`` and ``advice`` are for people (the apply client ignores them).
Reading validates everything (:class:`~brokerlb.errors.InvalidPlanError` names the operation
and the field): namespaces, ranges, split boundaries strictly inside the bundle, merged bundles
adjacent.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.errors import InvalidInputError, InvalidPlanError
from brokerlb.naming import NamespaceName
from brokerlb.ring import NamespaceBundles, format_boundary, format_range, parse_boundary, parse_range

__all__ = [
    "PLAN_KIND",
    "PLAN_VERSION",
    "SplitOp",
    "MergeOp",
    "UnloadOp",
    "PlanOp",
    "Plan",
]

PLAN_KIND = "brokerlb.plan"
PLAN_VERSION = 1


def _with_notes(out: dict[str, Any], reason: str, expected: Any = None) -> dict[str, Any]:
    """``out`` with the optional ``reason`` and ``expected`` fields of an operation, when set."""
    if reason:
        out["reason"] = reason
    if expected is not None:
        out["expected"] = expected
    return out


def _namespace(value: Any, where: str) -> str:
    try:
        return str(NamespaceName.parse(value))
    except InvalidInputError as exc:
        raise InvalidPlanError(f"{where}.namespace: {exc}") from exc


def _range(value: Any, where: str) -> tuple[int, int]:
    try:
        return parse_range(value)
    except InvalidInputError as exc:
        raise InvalidPlanError(f"{where}: {exc}") from exc


@dataclass(frozen=True)
class SplitOp:
    """Split ``bundle`` at ``boundaries`` (Pulsar's ``specified_positions_divide``)."""

    op: ClassVar[str] = "split"

    namespace: str
    bundle: str
    boundaries: tuple[int, ...]
    unload: bool = False
    reason: str = ""
    expected: Any = None

    def __post_init__(self) -> None:
        where = f"split {self.namespace}/{self.bundle}"
        object.__setattr__(self, "namespace", _namespace(self.namespace, where))
        lower, upper = _range(self.bundle, where)
        object.__setattr__(self, "bundle", format_range(lower, upper))
        try:
            points = tuple(sorted({parse_boundary(b) for b in self.boundaries}))
        except InvalidInputError as exc:
            raise InvalidPlanError(f"{where}.boundaries: {exc}") from exc
        if not points:
            raise InvalidPlanError(f"{where}.boundaries: at least one boundary is needed")
        outside = [format_boundary(p) for p in points if not lower < p < upper]
        if outside:
            raise InvalidPlanError(f"{where}.boundaries: {', '.join(outside)} not strictly inside the bundle")
        object.__setattr__(self, "boundaries", points)

    @property
    def children(self) -> list[str]:
        lower, upper = parse_range(self.bundle)
        points = [lower, *self.boundaries, upper]
        return [format_range(a, b) for a, b in zip(points, points[1:], strict=False)]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "op": self.op,
            "namespace": self.namespace,
            "bundle": self.bundle,
            "boundaries": [format_boundary(b) for b in self.boundaries],
            "unload": self.unload,
        }
        return _with_notes(out, self.reason, self.expected)


@dataclass(frozen=True)
class MergeOp:
    """Merge two or more adjacent bundles into one (a brokerlb extension; Pulsar cannot merge)."""

    op: ClassVar[str] = "merge"

    namespace: str
    bundles: tuple[str, ...]
    reason: str = ""
    expected: Any = None

    def __post_init__(self) -> None:
        where = f"merge in {self.namespace}"
        object.__setattr__(self, "namespace", _namespace(self.namespace, where))
        if isinstance(self.bundles, str) or len(self.bundles) < 2:
            raise InvalidPlanError(f"{where}.bundles: at least two bundles are needed")
        ranges = sorted({_range(b, where) for b in self.bundles})
        if len(ranges) < 2:
            raise InvalidPlanError(f"{where}.bundles: at least two distinct bundles are needed")
        for (_, upper), (lower, _) in zip(ranges, ranges[1:], strict=False):
            if upper != lower:
                raise InvalidPlanError(
                    f"{where}.bundles: {format_boundary(upper)} and {format_boundary(lower)} leave a gap: "
                    "only adjacent bundles merge"
                )
        object.__setattr__(self, "bundles", tuple(format_range(a, b) for a, b in ranges))

    @property
    def merged(self) -> str:
        return format_range(parse_range(self.bundles[0])[0], parse_range(self.bundles[-1])[1])

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "namespace": self.namespace, "bundles": list(self.bundles)}
        return _with_notes(out, self.reason, self.expected)


@dataclass(frozen=True)
class UnloadOp:
    """Unload ``bundle`` (to ``destination_broker`` if given)."""

    op: ClassVar[str] = "unload"

    namespace: str
    bundle: str
    destination_broker: str | None = None
    reason: str = ""

    def __post_init__(self) -> None:
        where = f"unload {self.namespace}/{self.bundle}"
        object.__setattr__(self, "namespace", _namespace(self.namespace, where))
        object.__setattr__(self, "bundle", format_range(*_range(self.bundle, where)))
        if self.destination_broker is not None and (
            not isinstance(self.destination_broker, str) or not self.destination_broker
        ):
            raise InvalidPlanError(f"{where}.destinationBroker: expected a broker id")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"op": self.op, "namespace": self.namespace, "bundle": self.bundle}
        if self.destination_broker is not None:
            out["destinationBroker"] = self.destination_broker
        return _with_notes(out, self.reason)


PlanOp = SplitOp | MergeOp | UnloadOp


def _op_from_json(data: Any, index: int) -> PlanOp:
    where = f"operations[{index}]"
    if not isinstance(data, Mapping):
        raise InvalidPlanError(f"{where}: expected a JSON object")
    op = data.get("op")
    namespace: Any = data.get("namespace")
    bundle: Any = data.get("bundle")
    reason = data.get("reason", "")
    if not isinstance(reason, str):
        raise InvalidPlanError(f"{where}.reason: expected a string")
    try:
        if op == "split":
            boundaries = data.get("boundaries")
            if not isinstance(boundaries, list):
                raise InvalidPlanError(f"{where}.boundaries: expected a list of 0x… strings")
            unload = data.get("unload", False)
            if not isinstance(unload, bool):
                raise InvalidPlanError(f"{where}.unload: expected true or false")
            return SplitOp(namespace, bundle, tuple(boundaries), unload, reason, data.get("expected"))
        if op == "merge":
            bundles = data.get("bundles")
            if not isinstance(bundles, list):
                raise InvalidPlanError(f"{where}.bundles: expected a list of bundle ranges")
            return MergeOp(namespace, tuple(bundles), reason, data.get("expected"))
        if op == "unload":
            return UnloadOp(namespace, bundle, data.get("destinationBroker"), reason)
    except InvalidPlanError as exc:
        raise InvalidPlanError(f"{where}: {exc}") from exc
    raise InvalidPlanError(f"{where}.op: unknown operation {op!r} (expected split, merge or unload)")


@dataclass(frozen=True)
class Plan:
    """An ordered list of bundle operations plus where they came from and advice for people."""

    operations: tuple[PlanOp, ...] = ()
    created_at: int | None = None
    source: Mapping[str, Any] = field(default_factory=dict)
    advice: Sequence[Mapping[str, Any]] = ()

    def __post_init__(self) -> None:
        for i, op in enumerate(self.operations):
            if not isinstance(op, SplitOp | MergeOp | UnloadOp):
                raise InvalidPlanError(f"operations[{i}]: not a plan operation: {op!r}")
        object.__setattr__(self, "operations", tuple(self.operations))
        object.__setattr__(self, "source", dict(self.source))
        object.__setattr__(self, "advice", tuple(dict(a) for a in self.advice))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": PLAN_KIND, "version": PLAN_VERSION}
        if self.created_at is not None:
            out["createdAt"] = self.created_at
        out["source"] = dict(self.source)
        out["operations"] = [op.to_json() for op in self.operations]
        out["advice"] = [dict(a) for a in self.advice]
        return out

    @classmethod
    def from_json(cls, data: Any) -> Plan:
        if not isinstance(data, Mapping):
            raise InvalidPlanError("A plan must be a JSON object")
        if data.get("kind", PLAN_KIND) != PLAN_KIND:
            raise InvalidPlanError(f"kind: expected {PLAN_KIND!r}, got {data.get('kind')!r}")
        if data.get("version", PLAN_VERSION) != PLAN_VERSION:
            raise InvalidPlanError(
                f"version: this brokerlb reads plan version {PLAN_VERSION}, got {data.get('version')!r}"
            )
        ops = data.get("operations", [])
        if not isinstance(ops, list):
            raise InvalidPlanError("operations: expected a list")
        created = data.get("createdAt")
        if created is not None and (isinstance(created, bool) or not isinstance(created, int)):
            raise InvalidPlanError("createdAt: expected milliseconds since the epoch")
        source = data.get("source", {})
        advice = data.get("advice", [])
        if not isinstance(source, Mapping) or not isinstance(advice, list):
            raise InvalidPlanError("source must be an object and advice a list")
        return cls(
            tuple(_op_from_json(op, i) for i, op in enumerate(ops)), created, dict(source), list(advice)
        )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Plan:
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except json.JSONDecodeError as exc:
            raise InvalidPlanError(f"{path}: not JSON: {exc}") from exc
        except OSError as exc:
            raise InvalidPlanError(f"{path}: cannot read the plan: {exc.strerror}") from exc
        return cls.from_json(data)

    def save(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=2)
            f.write("\n")

    def apply_to(self, layouts: Mapping[str, NamespaceBundles]) -> dict[str, NamespaceBundles]:
        """The layouts after the plan's splits and merges (offline check; raises like the broker would)."""
        out = dict(layouts)
        for i, op in enumerate(self.operations):
            if isinstance(op, UnloadOp):
                continue
            current = out.get(op.namespace)
            if current is None:
                raise InvalidPlanError(f"operations[{i}]: no layout for namespace {op.namespace}")
            try:
                out[op.namespace] = (
                    current.split(op.bundle, op.boundaries)
                    if isinstance(op, SplitOp)
                    else current.merge(op.bundles)
                )
            except InvalidInputError as exc:
                raise InvalidPlanError(f"operations[{i}] ({op.op}): {exc}") from exc
            except Exception as exc:  # BundleNotFoundError
                raise InvalidPlanError(f"operations[{i}] ({op.op}): {exc}") from exc
        return out
