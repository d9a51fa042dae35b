"""Anti-affinity groups and failure domains (``LoadManagerShared``)."""

from brokerlb.loadbalance.placement.anti_affinity import (
    anti_affinity_bundle_counts,
    anti_affinity_can_unload,
    anti_affinity_namespace_counts,
    filter_anti_affinity_group_owned_brokers,
    should_anti_affinity_namespace_unload,
)

GROUP = "my-antiaffinity"


def group_of(namespace: str) -> str | None:
    return "MY-AntiAffinity" if namespace.startswith("my-tenant/use/my-ns") else None


def test_counts_namespaces_of_the_group_case_insensitively() -> None:
    brokers = {
        "b0": ["my-tenant/use/my-ns0", "other/ns"],
        "b1": ["my-tenant/use/my-ns1", "my-tenant/use/my-ns2"],
        "b2": ["other/ns"],
    }
    assert anti_affinity_namespace_counts(GROUP, brokers, group_of) == {"b0": 1, "b1": 2}
    assert anti_affinity_namespace_counts(None, brokers, group_of) is None


def test_extensible_counts_owned_bundles() -> None:
    ownership = {
        "my-tenant/use/my-ns0/0x0_0x1": "b0",
        "my-tenant/use/my-ns0/0x1_0x2": "b0",
        "o/n/0x0_0x1": "b1",
    }
    counts = anti_affinity_bundle_counts(GROUP, ownership, group_of, lambda b: b.rpartition("/")[0])
    assert counts == {"b0": 2}


def test_filter_without_domains() -> None:
    """Pulsar's testAntiAffinityNamespaceFilteringWithoutDomain."""
    brokers = ["broker-0", "broker-1", "broker-2"]
    assert filter_anti_affinity_group_owned_brokers(brokers, {}) == brokers
    assert filter_anti_affinity_group_owned_brokers(brokers, {"broker-0": 1}) == ["broker-1", "broker-2"]
    assert filter_anti_affinity_group_owned_brokers(brokers, {"broker-0": 1, "broker-1": 1}) == ["broker-2"]
    everyone = {"broker-0": 1, "broker-1": 1, "broker-2": 1}
    assert filter_anti_affinity_group_owned_brokers(brokers, everyone) == brokers
    assert filter_anti_affinity_group_owned_brokers(brokers, None) == brokers


def test_filter_with_domains() -> None:
    """Pulsar's testAntiAffinityNamespaceFilteringWithDomain (4 brokers, 2 domains)."""
    brokers = ["brokerName-0", "brokerName-1", "brokerName-2", "brokerName-3"]
    domain = {
        "brokerName-0": "domain-0",
        "brokerName-1": "domain-0",
        "brokerName-2": "domain-1",
        "brokerName-3": "domain-1",
    }

    def run(counts):
        return filter_anti_affinity_group_owned_brokers(
            brokers, counts, broker_domain=domain, failure_domains_enabled=True
        )

    assert run({}) == brokers
    assert run({"brokerName-0": 1}) == ["brokerName-2", "brokerName-3"]
    assert run({"brokerName-0": 1, "brokerName-2": 1}) == ["brokerName-1", "brokerName-3"]
    assert run({"brokerName-0": 1, "brokerName-2": 1, "brokerName-1": 1}) == ["brokerName-3"]
    assert run({b: 1 for b in brokers}) == brokers


def test_javadoc_example_keeps_least_loaded_brokers_of_least_loaded_domains() -> None:
    counts = {"b1": 2, "b2": 1, "b3": 2, "b4": 1, "b5": 2, "b6": 2}
    domain = {"b1": "d1", "b2": "d1", "b3": "d2", "b4": "d2", "b5": "d3", "b6": "d3"}
    kept = filter_anti_affinity_group_owned_brokers(
        list(counts), counts, broker_domain=domain, failure_domains_enabled=True
    )
    assert kept == ["b2", "b4"]


def test_should_unload() -> None:
    """Pulsar's testLoadSheddingUtilWithAntiAffinityNamespace."""
    brokers = ["broker-0", "broker-1", "broker-2"]
    assert should_anti_affinity_namespace_unload("broker-0", brokers, {"broker-0": 1})
    assert should_anti_affinity_namespace_unload("broker-0", brokers, {"broker-0": 1, "broker-1": 1})
    assert not should_anti_affinity_namespace_unload("broker-0", brokers, {b: 1 for b in brokers})
    assert should_anti_affinity_namespace_unload(
        "broker-0", brokers, {"broker-0": 2, "broker-1": 1, "broker-2": 1}
    )
    assert should_anti_affinity_namespace_unload("broker-0", brokers, None)
    assert not should_anti_affinity_namespace_unload("broker-0", [], {"broker-0": 1})


def test_extensible_can_unload() -> None:
    assert anti_affinity_can_unload(["b1", "b2"], "b1", None)
    assert not anti_affinity_can_unload(["b1"], "b1", None)
    assert anti_affinity_can_unload(["b1", "b2"], "b1", "b2")
    assert not anti_affinity_can_unload(["b1", "b2"], "b1", "b3")
