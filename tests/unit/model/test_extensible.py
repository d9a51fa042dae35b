"""BrokerLoadData (EMA features) and the top-K bundles report of the extensible load manager."""

import json
import math

import pytest

from brokerlb.errors import InvalidConfigError, InvalidLoadDataError
from brokerlb.model import (
    BrokerLoadData,
    BundleLoadData,
    NamespaceBundleStats,
    ResourceUsage,
    ResourceWeights,
    SystemResourceUsage,
    TopBundlesLoadData,
    top_k_bundles,
)

HALF = ResourceWeights(0.5, 0.5, 0.5, 0.5, 0.5)


def usage(cpu, memory, direct, bw_in, bw_out):
    return SystemResourceUsage(
        cpu=ResourceUsage(*cpu),
        memory=ResourceUsage(*memory),
        direct_memory=ResourceUsage(*direct),
        bandwidth_in=ResourceUsage(*bw_in),
        bandwidth_out=ResourceUsage(*bw_out),
    )


def test_defaults_before_any_update():
    data = BrokerLoadData()
    assert data.max_resource_usage == 1.0 and data.weighted_max_ema == 1.0  # unknown broker looks full
    assert data.msg_throughput_ema == 0.0 and data.updated_at == 0 and data.reported_at == 0


def test_pulsar_broker_load_data_test():
    """Pulsar's BrokerLoadDataTest.testUpdateBySystemResourceUsage, number for number."""
    data = BrokerLoadData()
    first = usage((1.0, 100.0), (800.0, 200.0), (2.0, 100.0), (3.0, 100.0), (4.0, 100.0))
    data.update(first, 1, 2, 3, 4, 5, 6, now_ms=1000, weights=HALF, history_percentage=0.75)
    assert (data.msg_throughput_in, data.msg_throughput_out, data.msg_rate_in, data.msg_rate_out) == (
        1,
        2,
        3,
        4,
    )
    assert (data.bundle_count, data.topics) == (5, 6)
    assert data.max_resource_usage == 0.04  # skips memory
    assert data.weighted_max_ema == 2.0  # first update: memory 400% * 0.5
    assert data.msg_throughput_ema == 3.0  # first update: 1 + 2
    assert data.updated_at == 1000

    second = usage((300.0, 100.0), (200.0, 200.0), (2.0, 100.0), (3.0, 100.0), (4.0, 100.0))
    data.update(second, 5, 6, 7, 8, 9, 10, now_ms=2000, weights=HALF, history_percentage=0.75)
    assert data.max_resource_usage == 3.0
    assert data.weighted_max_ema == 1.875  # 2.0 * 0.75 + 0.25 * 1.5
    assert data.msg_throughput_ema == 5.0  # 3 * 0.75 + 0.25 * 11
    assert data.updated_at == 2000 and data.reported_at == 0

    data.clear()
    assert data == BrokerLoadData()


def test_default_history_and_weights():
    data = BrokerLoadData()
    u = usage((50.0, 100.0), (90.0, 100.0), (90.0, 100.0), (0.0, 100.0), (0.0, 100.0))
    data.update(u, 0, 0, 0, 0, 0, 0, now_ms=1)
    assert data.weighted_max_ema == 0.5  # memory and direct memory weigh 0 by default
    data.update(usage((100.0, 100.0), (0, 1), (0, 1), (0, 1), (0, 1)), 0, 0, 0, 0, 0, 0, now_ms=2)
    assert data.weighted_max_ema == pytest.approx(0.5 * 0.9 + 0.1 * 1.0)


def test_update_from_copies_everything():
    other = BrokerLoadData()
    other.update(
        usage((1, 100), (800, 200), (2, 100), (3, 100), (4, 100)), 1, 2, 3, 4, 5, 6, now_ms=7, weights=HALF
    )
    other.reported_at = 9
    data = BrokerLoadData()
    data.update_from(other)
    assert data == other and data.copy() == other


@pytest.mark.parametrize(
    "kwargs, error, where",
    [
        ({"now_ms": 0}, InvalidLoadDataError, "now_ms"),
        ({"now_ms": -1}, InvalidLoadDataError, "now_ms"),
        ({"history_percentage": 1.5}, InvalidConfigError, "loadBalancerHistoryResourcePercentage"),
        ({"history_percentage": math.nan}, InvalidConfigError, "loadBalancerHistoryResourcePercentage"),
        ({"history_percentage": -0.1}, InvalidConfigError, "loadBalancerHistoryResourcePercentage"),
    ],
)
def test_update_argument_validation(kwargs, error, where):
    data = BrokerLoadData()
    args = {"now_ms": 5, **kwargs}
    with pytest.raises(error) as err:
        data.update(SystemResourceUsage(), 0, 0, 0, 0, 0, 0, **args)
    assert where in str(err.value)
    assert data == BrokerLoadData()


@pytest.mark.parametrize(
    "values, field",
    [
        ((math.nan, 0, 0, 0, 0, 0), "msgThroughputIn"),
        ((0, -1.0, 0, 0, 0, 0), "msgThroughputOut"),
        ((0, 0, math.inf, 0, 0, 0), "msgRateIn"),
        ((0, 0, 0, 0, -1, 0), "bundleCount"),
        ((0, 0, 0, 0, 0, 2.5), "topics"),
    ],
)
def test_update_value_validation(values, field):
    data = BrokerLoadData()
    with pytest.raises(InvalidLoadDataError) as err:
        data.update(SystemResourceUsage(), *values, now_ms=5)
    assert err.value.field == field
    assert data == BrokerLoadData()


# Extensible load manager sample from Pulsar's docs (loadbalancer-broker-load-data topic).
DOC_SAMPLE = (
    '{"cpu":{"usage":14.397985201479854,"limit":800.0},"memory":{"usage":300.0,"limit":2096.0},'
    '"directMemory":{"usage":40.0,"limit":256.0},"bandwidthIn":{"usage":0.7817884878178855,"limit":1.0E7},'
    '"bandwidthOut":{"usage":0.7213945272139455,"limit":1.0E7},"msgThroughputIn":3.000538680274058,'
    '"msgThroughputOut":3.0005621893825616,"msgRateIn":0.03333931866971176,"msgRateOut":0.033339579882028465,'
    '"bundleCount":3,"topics":3,"maxResourceUsage":0.15625,"weightedMaxEMA":0.15625,'
    '"msgThroughputEMA":38.88925615962549,"updatedAt":1691043751060,"reportedAt":1691043631073}'
)


def test_docs_sample_round_trips():
    doc = json.loads(DOC_SAMPLE)
    data = BrokerLoadData.from_json(doc)
    assert data.to_json() == doc and list(data.to_json()) == list(doc)
    assert data.direct_memory.percent_usage() / 100 == data.max_resource_usage  # 40/256


def test_json_defaults_and_validation():
    assert BrokerLoadData.from_json({}) == BrokerLoadData()
    with pytest.raises(InvalidLoadDataError) as err:
        BrokerLoadData.from_json({"weightedMaxEMA": "NaN"})
    assert err.value.field == "weightedMaxEMA"
    with pytest.raises(InvalidLoadDataError) as err:
        BrokerLoadData.from_json({"cpu": {"usage": -1, "limit": 8}})
    assert err.value.field == "cpu.usage"


# ---------------------------------------------------------------- top-K bundles (Pulsar's TopKBundlesTest)

B1 = "my-tenant/my-namespace1/0x00000000_0x0FFFFFFF"
B2 = "my-tenant/my-namespace2/0x00000000_0x0FFFFFFF"
B3 = "my-tenant/my-namespace3/0x00000000_0x0FFFFFFF"
B4 = "my-tenant/my-namespace4/0x00000000_0x0FFFFFFF"


def rate(r):
    return NamespaceBundleStats(msg_rate_in=r)


def names(entries):
    return [e.bundle_name for e in entries]


def test_top_bundles_in_pulsar_order():
    stats = {B1: rate(100000), B2: rate(500), B3: rate(10000), B4: rate(0)}
    # lightest of the top K first, heaviest last
    assert names(top_k_bundles(stats, 3)) == [B2, B3, B1]
    assert names(top_k_bundles(stats, 10)) == [B4, B2, B3, B1]
    assert top_k_bundles(stats, 0) == []
    assert names(top_k_bundles(stats, -1)) == [B4, B2, B3, B1]  # -1: no limit


def test_top_bundles_exclusions():
    stats = {
        "pulsar/system/0x00000000_0x0FFFFFFF": rate(500),
        "pulsar/use/broker-1:8080/0x00000000_0xffffffff": rate(900),  # heartbeat
        "sla-monitor/use/broker-1:8080/0x00000000_0xffffffff": rate(900),  # SLA monitor
        B1: rate(10000),
        B2: rate(700),
        B3: rate(600),
    }
    assert names(top_k_bundles(stats, 10)) == [B3, B2, B1]
    assert names(top_k_bundles(stats, 10, excluded_namespaces={"my-tenant/my-namespace2"})) == [B3, B1]
    assert names(top_k_bundles(stats, 10, has_policies=lambda b: b == B1)) == [B3, B2]


def test_top_bundles_ties_are_deterministic():
    stats = {"t/c/0x0_0x1": rate(10), "t/a/0x0_0x1": rate(20), "t/b/0x0_0x1": rate(30)}  # one bucket
    first = names(top_k_bundles(stats, 2))
    assert first == names(top_k_bundles(dict(reversed(list(stats.items()))), 2))
    assert first == ["t/b/0x0_0x1", "t/a/0x0_0x1"]  # equal keys: smaller names chosen, reported reversed


def test_top_bundles_json():
    report = TopBundlesLoadData.of({B1: rate(1000), B2: rate(10)}, 10)
    doc = report.to_json()
    assert doc == {
        "topBundlesLoadData": [
            {"bundleName": B2, "stats": rate(10).to_json()},
            {"bundleName": B1, "stats": rate(1000).to_json()},
        ]
    }
    assert TopBundlesLoadData.from_json(doc) == report
    assert report.bundle_names() == [B2, B1]
    assert TopBundlesLoadData.from_json({}) == TopBundlesLoadData()
    with pytest.raises(InvalidLoadDataError) as err:
        TopBundlesLoadData.from_json({"topBundlesLoadData": [{"stats": {}}]})
    assert err.value.field == "topBundlesLoadData[0].bundleName"
    with pytest.raises(InvalidLoadDataError) as err:
        TopBundlesLoadData.from_json({"topBundlesLoadData": [{"bundleName": B1, "stats": {"topics": -1}}]})
    assert err.value.field == "topBundlesLoadData[0].stats.topics"
    with pytest.raises(InvalidLoadDataError):
        BundleLoadData(B1, {"msgRateIn": 1})  # type: ignore[arg-type]
