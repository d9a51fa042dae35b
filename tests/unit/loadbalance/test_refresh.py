"""The modular leader's refresh (Pulsar's updateAll minus the split check)."""

from brokerlb.loadbalance.refresh import LeaderLoadState, bundle_data_or_default, refresh
from brokerlb.model import BundleData, ResourceQuota
from brokerlb.testing import broker, bundle_data, bundle_stats

A = "t/ns/0x00000000_0x80000000"
B = "t/ns/0x80000000_0xffffffff"
C = "t/other/0x00000000_0xffffffff"


def test_first_sample_replaces_the_default_history() -> None:
    state = LeaderLoadState()
    result = refresh(state, {"b1": broker("b1", bundles={A: bundle_stats(msg_rate_in=100.0)})})
    assert result.added_brokers == ("b1",) and result.new_bundles == (A,)
    history = state.load_data.bundle_data[A]
    assert history.short_term_data.msg_rate_in == 100.0 and history.long_term_data.msg_rate_in == 100.0
    assert history.short_term_data.num_samples == 1
    refresh(state, {"b1": broker("b1", bundles={A: bundle_stats(msg_rate_in=200.0)})})
    assert state.load_data.bundle_data[A].short_term_data.msg_rate_in == 150.0


def test_time_average_and_namespace_map() -> None:
    state = LeaderLoadState()
    refresh(
        state,
        {
            "b1": broker(
                "b1", bundles={A: bundle_stats(msg_rate_in=100.0), B: bundle_stats(msg_rate_out=7.0)}
            ),
            "b2": broker("b2", bundles={C: bundle_stats(msg_rate_in=1.0)}),
        },
    )
    tad = state.load_data.broker_data["b1"].time_average_data
    assert (tad.short_term_msg_rate_in, tad.short_term_msg_rate_out) == (100.0, 7.0)
    assert state.namespace_bundle_ranges["b1"] == {"t/ns": {"0x00000000_0x80000000", "0x80000000_0xffffffff"}}
    assert state.namespace_bundle_ranges["b2"] == {"t/other": {"0x00000000_0xffffffff"}}


def test_brokers_that_left_are_dropped() -> None:
    state = LeaderLoadState()
    refresh(state, {"b1": broker("b1", bundles=[A]), "b2": broker("b2", bundles=[B])})
    result = refresh(state, {"b1": broker("b1", bundles=[A]), "b3": None})
    assert result.removed_brokers == ("b2",)
    assert set(state.load_data.broker_data) == {"b1"} and "b2" not in state.namespace_bundle_ranges
    # bundle histories stay (the leader keeps them for whoever owns the bundle next)
    assert B in state.load_data.bundle_data


def test_stored_history_then_quota_then_default() -> None:
    stored = bundle_data(msg_rate_in=5.0, num_samples=10)
    got = bundle_data_or_default(A, lambda b: stored if b == A else None)
    assert got == stored and got is not stored
    quota = ResourceQuota(msg_rate_in=9.0, bandwidth_in=1000.0)
    from_quota = bundle_data_or_default(A, lambda b: None, lambda b: quota)
    assert from_quota.short_term_data.num_samples == 10 and from_quota.long_term_data.num_samples == 1000
    assert from_quota.long_term_data.msg_throughput_in == 1000.0
    default = bundle_data_or_default(A)
    assert default.short_term_data.msg_rate_in == 50.0 and default.short_term_data.num_samples == 0


def test_stored_history_gets_the_new_sample() -> None:
    state = LeaderLoadState()
    stored = bundle_data(msg_rate_in=10.0, num_samples=1)  # one earlier sample of 10
    refresh(
        state,
        {"b1": broker("b1", bundles={A: bundle_stats(msg_rate_in=30.0)})},
        stored_bundle_data=lambda b: stored,
    )
    assert state.load_data.bundle_data[A].short_term_data.msg_rate_in == 20.0
    assert stored.short_term_data.msg_rate_in == 10.0  # the stored object is not changed


def test_preallocations_are_cleared_once_the_broker_reports_one() -> None:
    state = LeaderLoadState()
    refresh(state, {"b1": broker("b1", bundles=[A])})
    data = state.load_data.broker_data["b1"]
    # the leader assigned B and C to b1 (placement puts their history into bundle_data too)
    for bundle in (B, C):
        data.preallocated_bundle_data[bundle] = state.load_data.bundle_data.setdefault(
            bundle, BundleData.new_default()
        )
        state.preallocated_bundle_to_broker[bundle] = "b1"
    refresh(state, {"b1": broker("b1", bundles=[A])})  # reports neither yet
    assert set(data.preallocated_bundle_data) == {B, C}
    assert state.namespace_bundle_ranges["b1"]["t/other"] == {"0x00000000_0xffffffff"}
    # Pulsar drops every preallocated name from preallocatedBundleToBroker on each refresh
    assert state.preallocated_bundle_to_broker == {}
    result = refresh(state, {"b1": broker("b1", bundles=[A, B])})  # now reports B
    # Pulsar's loop then removes every preallocation that has bundle data: C goes too
    assert data.preallocated_bundle_data == {} and set(result.cleared_preallocations) == {B, C}


def test_the_one_pass_fold_agrees_with_the_model() -> None:
    import random

    from brokerlb.model import NamespaceBundleStats, TimeAverageBrokerData

    rng = random.Random(3)
    state = LeaderLoadState()
    reference: dict[str, BundleData] = {}
    bundles = [A, B, C]
    for _ in range(1200):  # past both window sizes
        samples = {
            b: NamespaceBundleStats(
                msg_rate_in=rng.uniform(0, 1e4),
                msg_rate_out=rng.uniform(0, 1e4),
                msg_throughput_in=rng.uniform(0, 1e8),
                msg_throughput_out=rng.uniform(0, 1e8),
                topics=rng.randint(0, 99),
            )
            for b in bundles
        }
        for bundle, sample in samples.items():
            reference.setdefault(bundle, bundle_data_or_default(bundle)).update(sample)
        refresh(state, {"b1": broker("b1", bundles=samples)})
    assert state.load_data.bundle_data == reference
    expected = TimeAverageBrokerData.of(bundles, reference, NamespaceBundleStats.new_default())
    assert state.load_data.broker_data["b1"].time_average_data == expected
