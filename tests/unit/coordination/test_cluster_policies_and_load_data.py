from __future__ import annotations

import pytest

from brokerlb.coordination import (
    ClusterPolicies,
    FailureDomain,
    LoadDataStore,
    NamespaceIsolationData,
)
from brokerlb.errors import ConflictError, CorruptMetadataError, NotFoundError


async def test_isolation_policies_by_compare_and_set(store):
    cluster = ClusterPolicies(store, "use")
    assert (await cluster.isolation_policies()).policies == {}
    policy = NamespaceIsolationData(namespaces=("t/.*",), primary=("b1.*",))
    await cluster.set_isolation_policy("p1", policy)
    await cluster.set_isolation_policy("p2", NamespaceIsolationData(namespaces=("x/.*",), primary=("b2.*",)))
    stored = await cluster.isolation_policies()
    assert sorted(stored.policies) == ["p1", "p2"] and stored.policies["p1"] == policy
    await cluster.set_isolation_policy("p1", None)
    assert sorted((await cluster.isolation_policies()).policies) == ["p2"]
    with pytest.raises(NotFoundError):
        await cluster.set_isolation_policy("p1", None)


async def test_failure_domains(store):
    cluster = ClusterPolicies(store, "use")
    await cluster.set_failure_domain("rack-1", FailureDomain(frozenset({"b1:8080", "b2:8080"})))
    await cluster.set_failure_domain("rack-2", FailureDomain(frozenset({"b3:8080"})))
    assert await cluster.failure_domain_names() == ["rack-1", "rack-2"]
    assert (await cluster.broker_domains())["b3:8080"] == "rack-2"
    with pytest.raises(ConflictError, match="b1:8080 in rack-1"):
        await cluster.set_failure_domain("rack-2", FailureDomain(frozenset({"b1:8080", "b3:8080"})))
    await cluster.set_failure_domain("rack-1", FailureDomain(frozenset({"b1:8080"})))  # shrink is fine
    await cluster.delete_failure_domain("rack-2")
    with pytest.raises(NotFoundError):
        await cluster.delete_failure_domain("rack-2")
    assert await cluster.failure_domain("rack-2") is None


async def test_load_data_round_trip(store):
    load = LoadDataStore(store)
    bundle = "t/ns/0x00000000_0x40000000"
    await load.write_bundle_data(bundle, {"shortTermData": {"msgRateIn": 1.0}, "topics": 3})
    await load.write_bundle_data(bundle, {"shortTermData": {"msgRateIn": 2.0}, "topics": 4})
    assert (await load.read_bundle_data(bundle))["topics"] == 4
    assert list(await load.namespace_bundle_data("t/ns")) == ["0x00000000_0x40000000"]
    await load.write_broker_time_average("b1:8080", {"shortTermMsgRateIn": 5.0})
    assert await load.brokers_with_time_average() == ["b1:8080"]
    assert (await load.read_broker_time_average("b1:8080"))["shortTermMsgRateIn"] == 5.0
    await load.delete_bundle_data(bundle)
    assert await load.read_bundle_data(bundle) is None
    await store.create("/loadbalance/broker-time-average/bad:1", b"not json")
    with pytest.raises(CorruptMetadataError, match="bad:1"):
        await load.read_broker_time_average("bad:1")


async def test_a_superseded_leaders_load_data_writes_change_nothing(store):
    """The leader's load-data writes and deletes are conditional on its leader epoch: after another
    leader was elected (the epoch node written again), the former one's write, first write and
    delete are refused (409) and the stored data stays as the current leader left it."""
    from brokerlb.coordination import current_fencing_token
    from brokerlb.coordination.election import epoch_path_of
    from brokerlb.coordination.paths import LEADER_PATH

    load = LoadDataStore(store)
    await store.create(epoch_path_of(LEADER_PATH), b"", make_parents=True)
    former = await current_fencing_token(store)
    assert former is not None
    bundle, fresh = "t/ns/0x00000000_0x40000000", "t/ns/0x40000000_0x80000000"
    await load.write_bundle_data(bundle, {"topics": 1}, leader_epoch=former)  # creates it
    await load.write_bundle_data(bundle, {"topics": 2}, leader_epoch=former)  # sets it
    await store.set(epoch_path_of(LEADER_PATH), b"")  # a new leader is elected
    current = await current_fencing_token(store)
    assert current != former
    with pytest.raises(ConflictError, match=rf"superseded leader \(epoch {former}\)"):
        await load.write_bundle_data(bundle, {"topics": 99}, leader_epoch=former)
    with pytest.raises(ConflictError):
        await load.write_bundle_data(fresh, {"topics": 99}, leader_epoch=former)
    with pytest.raises(ConflictError):
        await load.write_broker_time_average("b1:8080", {"shortTermMsgRateIn": 9.0}, leader_epoch=former)
    with pytest.raises(ConflictError):
        await load.delete_bundle_data(bundle, leader_epoch=former)
    assert (await load.read_bundle_data(bundle))["topics"] == 2
    assert await load.read_bundle_data(fresh) is None
    assert await load.read_broker_time_average("b1:8080") is None
    await load.write_bundle_data(bundle, {"topics": 3}, leader_epoch=current)
    await load.delete_bundle_data(fresh, leader_epoch=current)  # nothing there: no error
    assert (await load.read_bundle_data(bundle))["topics"] == 3
