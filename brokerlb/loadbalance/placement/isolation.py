"""Namespace isolation policies: which brokers may own a bundle (Pulsar's ``applyNamespacePolicies``).

Goal: keep a namespace on the brokers its isolation policy names, fall back to its
secondary brokers when too few primaries are up, and keep every other namespace off the
brokers some policy reserves as primaries.

Rules (``LoadManagerShared.applyNamespacePolicies``, ``SimpleResourceAllocationPolicies``,
``NamespaceIsolationPolicies``, ``MinAvailablePolicy``):

* A broker id ``host:port`` matches a regex when the regex fully matches the id or its host
  (the id without a numeric ``:port``), so policies may name hosts (``broker1.*``) or broker
  ids (``broker1:8080``), as Pulsar's newest matcher allows.
* The namespace's policy is the first policy whose ``namespaces`` regex matches the whole
  namespace name.
* **With a policy**: a broker whose host fully matches a ``primary`` regex is a primary;
  else one matching a ``secondary`` regex is a secondary; else it is skipped. The result
  is the primaries, plus the secondaries when ``len(primaries) < min_limit``
  (``min_available`` failover). The persistent/non-persistent flags are not looked at.
* **Without a policy**: a broker that does not serve the bundle's topic domain
  (``persistentTopicsEnabled`` / ``nonPersistentTopicsEnabled`` of its report) is skipped;
  else it is a candidate when it is *shared*: no policy of the cluster lists its host as a
  primary (every broker is shared when there are no policies).

Worked example (Pulsar's ``testNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers``):
policy ``my-property/use/my-ns.*``, primary ``prod1-broker1``, secondary ``prod1-broker2``,
``min_limit = 1``; brokers ``prod1-broker1:8080``, ``prod1-broker2:8080``, ``broker3:8080``
give ``[prod1-broker1:8080]``; without ``prod1-broker1`` they give ``[prod1-broker2:8080]``
(failover); with only ``broker3`` nothing. With ``min_limit = 2`` the first case gives both
the primary and the secondary.

Deviation (documented): Pulsar 3.x skips a broker id without ``:`` ("Invalid brokerId");
brokerlb matches such an id as a host of its own (what Pulsar 2.x did with ``new URL``), so
snapshots with opaque broker names (Pulsar's own tests use ``broker1``) still place.
Regexes are Java regexes run by Python's :mod:`re` (the same for the usual host patterns).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from brokerlb.loadbalance.policies import policy_for_namespace
from brokerlb.safe_regex import compile_pattern

__all__ = [
    "IsolationPolicy",
    "IsolationResult",
    "broker_host",
    "host_matches",
    "policy_for_namespace",
    "is_shared_broker",
    "apply_namespace_policies",
    "OwnershipAssignment",
    "ownership_assignment",
]

_PORT_SUFFIX = re.compile(r"^(.*):\d+$")


class _FailoverPolicy(Protocol):
    @property
    def min_limit(self) -> int: ...


class IsolationPolicy(Protocol):
    """What placement reads from a namespace isolation policy (``NamespaceIsolationData``)."""

    @property
    def primary(self) -> tuple[str, ...]: ...

    @property
    def secondary(self) -> tuple[str, ...]: ...

    @property
    def auto_failover_policy(self) -> _FailoverPolicy: ...

    def matches_namespace(self, namespace: str) -> bool: ...


def broker_host(broker_id: str) -> str:
    """The host part of a broker id: text before the last ``:`` (IPv6-safe), or the whole id."""
    pos = broker_id.rfind(":")
    return broker_id[:pos] if pos > -1 else broker_id


def _compiled(pattern: str) -> Any:
    """The RE2 pattern (linear-time matching, :mod:`brokerlb.safe_regex`), or None if RE2 refuses it."""
    try:
        return compile_pattern(pattern)
    except Exception:  # re2.error: validated when the policy was read; never match a broken one
        return None


def host_matches(patterns: Iterable[str], host: str) -> bool:
    """Whether ``host`` (a host or a broker id) fully matches one of the regexes (Java ``String.matches``).

    As in Pulsar's newest matcher, a ``host:port`` value is also tried without a numeric port.
    """
    stripped = _PORT_SUFFIX.match(host)
    for pattern in patterns:
        compiled = _compiled(pattern)
        if compiled is None:
            continue
        if compiled.fullmatch(host) or (stripped is not None and compiled.fullmatch(stripped.group(1))):
            return True
    return False


def is_shared_broker(policies: Mapping[str, IsolationPolicy], host: str) -> bool:
    """True when no policy lists ``host`` (a host or a broker id) as a primary (always true
    without policies)."""
    return not any(host_matches(p.primary, host) for p in policies.values())


class _PrimarySecondary(Protocol):
    @property
    def primary(self) -> tuple[str, ...]: ...

    @property
    def secondary(self) -> tuple[str, ...]: ...


class OwnershipAssignment(NamedTuple):
    """A broker's assignment to a namespace it owns a bundle of (Pulsar's ``NamespaceOwnershipStatus``)."""

    #: ``primary``, ``secondary`` or ``shared`` (Pulsar's ``BrokerAssignment``)
    broker_assignment: str
    #: whether an isolation policy covers the namespace
    is_controlled: bool


def ownership_assignment(policy: _PrimarySecondary | None, broker: str) -> OwnershipAssignment:
    """How ``broker`` (a broker id or host) stands to a namespace whose isolation policy is ``policy``.

    Pulsar's ``NamespaceService.getNamespaceOwnershipStatus`` (the ``ownedNamespaces`` admin
    call): without a policy the namespace is uncontrolled and the broker ``shared``; with one it
    is controlled, and the broker is ``primary`` when it matches a ``primary`` regex, else
    ``secondary`` when it matches a ``secondary`` regex, else ``shared``. Matching is
    :func:`host_matches` (the broker id, or its host without the port), as placement matches.

    >>> from brokerlb.loadbalance.policies import NamespaceIsolationData
    >>> policy = NamespaceIsolationData(
    ...     namespaces=("t/ns.*",), primary=("broker1.*",), secondary=("broker2",)
    ... )
    >>> ownership_assignment(policy, "broker1.example.com:8080")
    OwnershipAssignment(broker_assignment='primary', is_controlled=True)
    >>> ownership_assignment(policy, "broker2:8080")
    OwnershipAssignment(broker_assignment='secondary', is_controlled=True)
    >>> ownership_assignment(policy, "broker3:8080")
    OwnershipAssignment(broker_assignment='shared', is_controlled=True)
    >>> ownership_assignment(None, "broker1:8080")
    OwnershipAssignment(broker_assignment='shared', is_controlled=False)
    """
    if policy is None:
        return OwnershipAssignment("shared", False)
    if host_matches(policy.primary, broker):
        return OwnershipAssignment("primary", True)
    if host_matches(policy.secondary, broker):
        return OwnershipAssignment("secondary", True)
    return OwnershipAssignment("shared", True)


@dataclass(frozen=True, slots=True)
class IsolationResult:
    """Outcome of :func:`apply_namespace_policies`.

    ``candidates`` keeps the order of the available brokers. ``policy`` is the name of the
    namespace's policy (``None`` when it has none); ``primaries`` / ``secondaries`` are the
    brokers of each kind; ``failover`` tells whether the secondaries were added; ``skipped``
    maps each excluded broker to why.
    """

    candidates: tuple[str, ...]
    policy: str | None
    primaries: tuple[str, ...] = ()
    secondaries: tuple[str, ...] = ()
    failover: bool = False
    skipped: Mapping[str, str] | None = None

    def describe(self) -> str:
        """``no policy`` or ``policy 'p' (1 primary, 2 secondary, failover)``, for decision details."""
        if self.policy is None:
            return "no policy"
        text = f"policy '{self.policy}' ({len(self.primaries)} primary, {len(self.secondaries)} secondary"
        return text + (", failover)" if self.failover else ")")


def apply_namespace_policies(
    namespace: str,
    brokers: Iterable[str],
    policies: Mapping[str, IsolationPolicy],
    *,
    non_persistent: bool = False,
    serves_domain: Callable[[str, bool], bool] | None = None,
    shared_hosts: Mapping[str, bool] | None = None,
) -> IsolationResult:
    """The brokers allowed to own a bundle of ``namespace`` (see the module docstring).

    ``serves_domain(broker, non_persistent)`` says whether the broker serves the topic domain
    (default: every broker does). ``shared_hosts`` may carry precomputed
    :func:`is_shared_broker` answers by broker id (placement caches them per snapshot).
    """
    found = policy_for_namespace(policies, namespace) if policies else None
    skipped: dict[str, str] = {}
    if found is not None:
        name, policy = found
        primaries: list[str] = []
        secondaries: list[str] = []
        for broker in brokers:
            if host_matches(policy.primary, broker):
                primaries.append(broker)
            elif host_matches(policy.secondary, broker):
                secondaries.append(broker)
            else:
                skipped[broker] = f"neither primary nor secondary of policy '{name}'"
        failover = len(primaries) < policy.auto_failover_policy.min_limit
        ordered = tuple(primaries) + (tuple(secondaries) if failover else ())
        if not failover:
            for broker in secondaries:
                skipped[broker] = f"secondary of policy '{name}', enough primaries available"
        return IsolationResult(ordered, name, tuple(primaries), tuple(secondaries), failover, skipped)

    candidates: list[str] = []
    for broker in brokers:
        if serves_domain is not None and not serves_domain(broker, non_persistent):
            kind = "non-persistent" if non_persistent else "persistent"
            skipped[broker] = f"{kind} topics disabled on the broker"
            continue
        shared = shared_hosts.get(broker) if shared_hosts is not None else None
        if shared is None:
            shared = is_shared_broker(policies, broker) if policies else True
        if shared:
            candidates.append(broker)
        else:
            skipped[broker] = "primary broker of another namespace's isolation policy"
    return IsolationResult(tuple(candidates), None, skipped=skipped)
