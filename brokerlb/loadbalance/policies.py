"""Namespace policies the decision engine reads: anti-affinity groups, bundles, isolation, failure domains.

Minimal pure value types with Pulsar's JSON shapes, read by :mod:`brokerlb.loadbalance.snapshot`:

* :class:`NamespacePolicy` -- ``{"antiAffinityGroup": "...", "bundles": <BundlesData>}`` (the
  parts of Pulsar's ``LocalPolicies`` / ``Policies`` the load manager uses);
* :class:`NamespaceIsolationData` + :class:`AutoFailoverPolicy` -- one namespace isolation
  policy as ``pulsar-admin ns-isolation-policy`` stores it::

      {"namespaces": ["my-tenant/.*"], "primary": ["broker1.*"], "secondary": ["broker2.*"],
       "auto_failover_policy": {"policy_type": "min_available",
                                "parameters": {"min_limit": "1", "usage_threshold": "80"}}}

* :class:`FailureDomain` -- ``{"brokers": ["host:port", ...]}`` (a bare list is accepted too).

Attribute names match :mod:`brokerlb.coordination.records` (the metadata-store records), so the
two can be merged when both are on main. Regexes are Java regexes matched against the whole
string (``String.matches``), compiled once here; matching brokers against ``primary`` /
``secondary`` is placement's business (:mod:`brokerlb.loadbalance.placement`).

Errors raise :class:`~brokerlb.errors.InvalidSnapshotError` naming the path of the bad field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from brokerlb.errors import BrokerLBError, InvalidSnapshotError
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.safe_regex import compile_pattern

__all__ = [
    "AutoFailoverPolicy",
    "FailureDomain",
    "NamespaceIsolationData",
    "NamespacePolicy",
    "MIN_AVAILABLE",
    "policy_for_namespace",
]

#: The only auto-failover policy type Pulsar has.
MIN_AVAILABLE = "min_available"


def _bad(path: str, value: Any, why: str) -> InvalidSnapshotError:
    return InvalidSnapshotError(why, path=path, value=value)


def _obj(data: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(data, Mapping):
        raise _bad(path, data, "expected a JSON object")
    return data


def _str_list(data: Mapping[str, Any], key: str, path: str, *, required: bool) -> tuple[str, ...]:
    value = data.get(key)
    where = f"{path}.{key}"
    if value is None:
        if required:
            raise _bad(where, value, "required")
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _bad(where, value, "expected a list of strings")
    return tuple(value)


def _compile(patterns: tuple[str, ...], path: str) -> tuple[Any, ...]:
    """RE2 patterns (:mod:`brokerlb.safe_regex`: linear-time matching)."""
    compiled = []
    for i, pattern in enumerate(patterns):
        try:
            compiled.append(compile_pattern(pattern))
        except Exception as exc:  # re2.error
            raise _bad(f"{path}[{i}]", pattern, f"regex not supported by RE2: {exc}") from exc
    return tuple(compiled)


@dataclass(frozen=True, slots=True)
class AutoFailoverPolicy:
    """``min_available``: fail over to secondaries when fewer than ``min_limit`` primaries are available.

    ``usage_threshold`` (percent) marks a primary unavailable when its load factor reaches it
    (100 disables that check).
    """

    policy_type: str = MIN_AVAILABLE
    min_limit: int = 1
    usage_threshold: int = 100

    def to_json(self) -> dict[str, Any]:
        return {
            "policy_type": self.policy_type,
            "parameters": {"min_limit": str(self.min_limit), "usage_threshold": str(self.usage_threshold)},
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "auto_failover_policy") -> AutoFailoverPolicy:
        obj = _obj(data, path)
        policy_type = obj.get("policy_type", MIN_AVAILABLE)
        if policy_type != MIN_AVAILABLE:
            raise _bad(f"{path}.policy_type", policy_type, f"unknown policy type (known: {MIN_AVAILABLE})")
        params = _obj(obj.get("parameters") or {}, f"{path}.parameters")
        return cls(
            policy_type,
            _int_param(params, "min_limit", 1, f"{path}.parameters"),
            _int_param(params, "usage_threshold", 100, f"{path}.parameters"),
        )


def _int_param(params: Mapping[str, Any], key: str, default: int, path: str) -> int:
    value = params.get(key)
    if value is None:
        return default
    try:
        number = int(str(value).strip())
    except ValueError:
        raise _bad(f"{path}.{key}", value, "expected an integer") from None
    if number < 0:
        raise _bad(f"{path}.{key}", value, "must not be negative")
    return number


@dataclass(frozen=True)
class NamespaceIsolationData:
    """One namespace isolation policy (Pulsar's ``NamespaceIsolationData``).

    ``namespaces``, ``primary`` and ``secondary`` are regexes (whole-string match).
    Compiled patterns are in ``namespace_patterns`` / ``primary_patterns`` /
    ``secondary_patterns``.
    """

    namespaces: tuple[str, ...]
    primary: tuple[str, ...]
    secondary: tuple[str, ...] = ()
    auto_failover_policy: AutoFailoverPolicy = field(default_factory=AutoFailoverPolicy)
    namespace_patterns: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    primary_patterns: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    secondary_patterns: tuple[Any, ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.namespaces:
            raise _bad("namespaces", self.namespaces, "must not be empty")
        if not self.primary:
            raise _bad("primary", self.primary, "must not be empty")
        for attr, source in (
            ("namespace_patterns", "namespaces"),
            ("primary_patterns", "primary"),
            ("secondary_patterns", "secondary"),
        ):
            object.__setattr__(self, attr, _compile(tuple(getattr(self, source)), source))

    def matches_namespace(self, namespace: str) -> bool:
        """Whether the policy applies to ``namespace`` (some ``namespaces`` regex matches all of it)."""
        return any(p.fullmatch(namespace) for p in self.namespace_patterns)

    def to_json(self) -> dict[str, Any]:
        return {
            "namespaces": list(self.namespaces),
            "primary": list(self.primary),
            "secondary": list(self.secondary),
            "auto_failover_policy": self.auto_failover_policy.to_json(),
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "") -> NamespaceIsolationData:
        obj = _obj(data, path or "<policy>")
        if "secondary" in obj and obj["secondary"] is None:
            raise _bad(f"{path}.secondary", None, "must not be null")
        failover = obj.get("auto_failover_policy")
        if failover is None:
            raise _bad(f"{path}.auto_failover_policy", None, "required")
        namespaces = _str_list(obj, "namespaces", path, required=True)
        primary = _str_list(obj, "primary", path, required=True)
        secondary = _str_list(obj, "secondary", path, required=False)
        failover_policy = AutoFailoverPolicy.from_json(failover, f"{path}.auto_failover_policy")
        try:
            return cls(namespaces, primary, secondary, failover_policy)
        except InvalidSnapshotError as exc:  # a regex that does not compile: name it under ``path``
            raise _bad(f"{path}.{exc.path}", exc.value, exc.why) from exc


@dataclass(frozen=True, slots=True)
class FailureDomain:
    """A failure domain: the brokers (ids ``host:port``) in it."""

    brokers: frozenset[str] = frozenset()

    def to_json(self) -> dict[str, Any]:
        return {"brokers": sorted(self.brokers)}

    @classmethod
    def from_json(cls, data: Any, path: str = "") -> FailureDomain:
        if isinstance(data, list):
            data = {"brokers": data}
        obj = _obj(data, path)
        return cls(frozenset(_str_list(obj, "brokers", path, required=False)))


@dataclass(frozen=True, slots=True)
class NamespacePolicy:
    """What the load manager reads from a namespace's policies.

    ``anti_affinity_group``: ``namespaceAntiAffinityGroup`` of the local policies (``None`` = no
    group). ``bundles``: the namespace's bundle boundaries (``None`` = not given; counts then come
    from the bundles the snapshot mentions).
    """

    anti_affinity_group: str | None = None
    bundles: NamespaceBundles | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.anti_affinity_group is not None:
            out["antiAffinityGroup"] = self.anti_affinity_group
        if self.bundles is not None:
            out["bundles"] = self.bundles.to_json()
        return out

    @classmethod
    def from_json(cls, namespace: str, data: Any, path: str = "") -> NamespacePolicy:
        obj = _obj(data, path)
        group = obj.get("antiAffinityGroup", obj.get("namespaceAntiAffinityGroup"))
        if group is not None and not isinstance(group, str):
            raise _bad(f"{path}.antiAffinityGroup", group, "expected a string")
        bundles_json = obj.get("bundles")
        bundles = None
        if bundles_json is not None:
            bundles_obj = _obj(bundles_json, f"{path}.bundles")
            try:
                bundles = NamespaceBundles.from_json(namespace, bundles_obj)
            except BrokerLBError as exc:
                raise _bad(f"{path}.bundles", bundles_json, str(exc)) from exc
        return cls(group or None, bundles)


class _MatchesNamespace(Protocol):
    def matches_namespace(self, namespace: str) -> bool: ...


_Policy = TypeVar("_Policy", bound=_MatchesNamespace)


def policy_for_namespace(policies: Mapping[str, _Policy], namespace: str) -> tuple[str, _Policy] | None:
    """The policy a namespace falls under: the first by name whose ``namespaces`` regexes match
    it (Pulsar's ``NamespaceIsolationPolicies.getPolicyByNamespace`` takes the first match of its
    map; ordering by name makes the choice the same on every broker when two policies match).

    >>> both = NamespaceIsolationData(namespaces=("t/.*",), primary=("b1",))
    >>> some = NamespaceIsolationData(namespaces=("t/ns",), primary=("b2",))
    >>> policy_for_namespace({"z": both, "a": some}, "t/ns")[0], policy_for_namespace({"z": both}, "u/ns")
    ('a', None)
    """
    for name in sorted(policies):
        policy = policies[name]
        if policy.matches_namespace(namespace):
            return name, policy
    return None
