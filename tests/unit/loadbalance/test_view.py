"""ClusterView: available brokers, owners, namespace indexes, policies."""

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, FailureDomain, NamespaceIsolationData, NamespacePolicy
from brokerlb.model import TopBundlesLoadData
from brokerlb.ring.bundles import NamespaceBundles
from brokerlb.testing import broker, broker_load, bundle_stats, load_data

A1 = "t/a/0x00000000_0x80000000"
A2 = "t/a/0x80000000_0xffffffff"
B1 = "t/b/0x00000000_0xffffffff"


def _view(**kwargs) -> ClusterView:
    data = load_data(
        [
            broker("b1:8080", bundles={A1: bundle_stats(10), B1: bundle_stats(5)}),
            broker("b2:8080", bundles=[A2]),
        ]
    )
    return ClusterView(load_data=data, now_ms=1000, **kwargs)


def test_available_brokers_are_every_source_sorted() -> None:
    view = _view(broker_load_data={"b3:8080": broker_load(cpu=10)}, broker_lookup_data={})
    assert view.available_brokers == ("b1:8080", "b2:8080", "b3:8080")


def test_owner_from_reports() -> None:
    view = _view()
    assert view.owner_of(A1) == "b1:8080" and view.owner_of(A2) == "b2:8080"
    assert view.owner_of("t/zzz/0x0_0x1") is None
    assert view.bundles_owned_by("b1:8080") == {A1, B1}
    assert view.is_owner("b1:8080", A1) and not view.is_owner("b2:8080", A1)


def test_ownership_map_wins() -> None:
    view = _view(ownership={A1: "b2:8080"})
    assert view.owner_of(A1) == "b2:8080"
    assert not view.is_owner("b1:8080", A1) and view.is_owner("b2:8080", A1)
    assert view.bundles_owned_by("b1:8080") == {B1}
    assert view.bundles_owned_by("b2:8080") == {A1, A2}


def test_top_bundles_count_as_reported() -> None:
    top = TopBundlesLoadData.of({"t/c/0x00000000_0xffffffff": bundle_stats(1)}, 10)
    view = ClusterView(top_bundles={"b9:8080": top}, broker_load_data={"b9:8080": broker_load()})
    assert view.owner_of("t/c/0x00000000_0xffffffff") == "b9:8080"


def test_namespace_indexes() -> None:
    view = _view()
    assert view.namespace_bundle_ranges["b1:8080"] == {
        "t/a": {"0x00000000_0x80000000"},
        "t/b": {"0x00000000_0xffffffff"},
    }
    assert view.bundle_count("t/a") == 2
    assert view.bundles_of_namespace("t/a") == {A1, A2}
    assert view.knows_bundle(A1) and not view.knows_bundle("t/a/0x00000000_0x40000000")


def test_bundle_count_prefers_the_policy() -> None:
    policy = NamespacePolicy("grp", NamespaceBundles.create("t/a", 16))
    view = _view(namespace_policies={"t/a": policy})
    assert view.bundle_count("t/a") == 16
    assert view.anti_affinity_group("t/a") == "grp" and view.anti_affinity_group("t/b") is None
    assert view.knows_bundle("t/a/0x00000000_0x10000000")  # a range of the policy's bundles


def test_isolation_policy_and_failure_domains() -> None:
    iso = NamespaceIsolationData(("t/a",), ("b1.*",))
    view = _view(
        isolation_policies={"z": iso}, failure_domains={"rack1": FailureDomain(frozenset({"b2:8080"}))}
    )
    assert view.isolation_policy_for("t/a") == ("z", iso)
    assert view.isolation_policy_for("t/b") is None
    assert view.failure_domain_of("b2:8080") == "rack1" and view.failure_domain_of("b1:8080") is None


def test_system_bundles_are_left_out_of_shedding_data() -> None:
    data = load_data(
        [
            broker(
                "b1:8080",
                bundles={"pulsar/system/0x00000000_0xffffffff": bundle_stats(1), A1: bundle_stats(1)},
            )
        ]
    )
    view = ClusterView(load_data=data)
    assert set(view.bundle_data_for_load_shedding) == {A1}
    assert view.is_system_bundle("pulsar/system/0x00000000_0xffffffff") and not view.is_system_bundle(A1)


def test_with_overrides_changes_only_the_config() -> None:
    view = _view()
    other = view.with_overrides({"loadBalancerSheddingEnabled": "false"})
    assert other.config.loadBalancerSheddingEnabled is False and view.config == ServiceConfig()
    assert other.load_data is view.load_data
    assert not view.is_extensible
    ext = view.with_overrides(
        {"loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"}
    )
    assert ext.is_extensible
