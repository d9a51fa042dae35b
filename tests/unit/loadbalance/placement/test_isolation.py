"""Namespace isolation policies (``LoadManagerShared.applyNamespacePolicies``)."""

from brokerlb.loadbalance.placement.isolation import (
    apply_namespace_policies,
    broker_host,
    host_matches,
    is_shared_broker,
    policy_for_namespace,
)
from brokerlb.loadbalance.policies import AutoFailoverPolicy, NamespaceIsolationData

NS = "my-property/use/my-ns"


def policy(primary: str, secondary: str, min_limit: int, namespaces: str = "my-property/use/my-ns.*"):
    return NamespaceIsolationData(
        (namespaces,), (primary,), (secondary,), AutoFailoverPolicy(min_limit=min_limit)
    )


def candidates(available, policies, **kw):
    return sorted(apply_namespace_policies(NS, available, policies, **kw).candidates)


def test_primary_then_secondary_failover_with_min_limit_1() -> None:
    """Pulsar's testNamespaceIsolationPoliciesForPrimaryAndSecondaryBrokers, min_limit = 1."""
    policies = {"p": policy("prod1-broker1", "prod1-broker2", 1)}
    b1, b2, shared = "prod1-broker1:8080", "prod1-broker2:8080", "broker3:8080"
    assert candidates([shared, b1, b2], policies) == [b1]
    assert candidates([shared, b2], policies) == [b2]
    assert candidates([shared], policies) == []


def test_min_limit_2_adds_secondaries_while_primaries_are_few() -> None:
    policies = {"p": policy("prod1-broker1", "prod1-broker2", 2)}
    b1, b2, shared = "prod1-broker1:8080", "prod1-broker2:8080", "broker3:8080"
    assert candidates([shared, b1, b2], policies) == [b1, b2]
    assert candidates([shared, b2], policies) == [b2]
    assert candidates([shared], policies) == []


def test_namespace_without_policy_gets_only_shared_brokers() -> None:
    policies = {"p": policy("prod1-broker1", "prod1-broker2", 1)}
    result = apply_namespace_policies(
        "other/ns", ["prod1-broker1:8080", "prod1-broker2:8080", "broker3:8080"], policies
    )
    # broker1 is some namespace's primary: not shared; secondaries are shared
    assert sorted(result.candidates) == ["broker3:8080", "prod1-broker2:8080"]
    assert result.policy is None
    assert "primary broker" in (result.skipped or {})["prod1-broker1:8080"]


def test_topic_domain_flags_apply_only_without_policy() -> None:
    serves = lambda broker, non_persistent: broker != "b1:8080" or not non_persistent  # noqa: E731
    assert candidates(["b1:8080", "b2:8080"], {}, non_persistent=True, serves_domain=serves) == ["b2:8080"]
    assert candidates(["b1:8080", "b2:8080"], {}, non_persistent=False, serves_domain=serves) == [
        "b1:8080",
        "b2:8080",
    ]
    policies = {"p": policy("b.*", "x", 1)}
    assert candidates(["b1:8080"], policies, non_persistent=True, serves_domain=serves) == ["b1:8080"]


def test_hosts_match_whole_regex_and_ids_without_port() -> None:
    assert broker_host("b1:8080") == "b1"
    assert broker_host("[::1]:8080") == "[::1]"
    assert broker_host("broker1") == "broker1"  # brokerlb: an id without port is its own host
    assert host_matches(["prod1-broker[1-3]"], "prod1-broker2")
    assert not host_matches(["broker"], "prod1-broker2")  # String.matches: whole string
    assert host_matches(["b1"], "b1:8080")  # tried without the numeric port too
    assert not host_matches(["("], "b1")  # a broken regex never matches


def test_policy_lookup_and_shared_brokers() -> None:
    policies = {"a": policy("x", "y", 1, "t/a.*"), "b": policy("z", "y", 1, "t/.*")}
    assert policy_for_namespace(policies, "t/a1")[0] == "a"
    assert policy_for_namespace(policies, "t/b")[0] == "b"
    assert policy_for_namespace(policies, "u/b") is None
    assert is_shared_broker(policies, "y") and not is_shared_broker(policies, "z")
    assert is_shared_broker({}, "anything")


def test_policies_may_name_broker_ids() -> None:
    """BrokerIsolationPoliciesFilterTest.testFilterWithNamespaceIsolationPoliciesUsingBrokerIds."""
    policies = {"p": policy("broker1:8080", "broker2:8080", 1, "my-tenant/my-ns")}
    ns = "my-tenant/my-ns"
    all3 = ["broker1:8080", "broker2:8080", "broker3:8080"]
    assert apply_namespace_policies(ns, all3, policies).candidates == ("broker1:8080",)
    assert apply_namespace_policies(ns, all3[1:], policies).candidates == ("broker2:8080",)
    assert not host_matches(["broker1:8080"], "broker1:8081")
