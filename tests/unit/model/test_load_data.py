"""LoadData / BrokerData, and the test-kit builders that produce them."""

import pytest

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import BrokerData, BundleData, LoadData, LocalBrokerData, NamespaceBundleStats
from brokerlb.testing import (
    BANDWIDTH_LIMIT_KBPS,
    CPU_LIMIT,
    broker,
    broker_id,
    broker_load,
    bundle_data,
    bundle_stats,
    load_data,
    system_usage,
    usage,
)


def test_bundle_data_for_load_shedding_skips_system_namespaces():
    data = LoadData(
        bundle_data={
            "pulsar/system/0x00000000_0xffffffff": BundleData(),
            "pulsar/use/broker-1:8080/0x00000000_0xffffffff": BundleData(),  # heartbeat v1
            "pulsar/broker-1:8080/0x00000000_0xffffffff": BundleData(),  # heartbeat v2
            "sla-monitor/use/broker-1:8080/0x00000000_0xffffffff": BundleData(),
            "public/default/0x00000000_0x80000000": BundleData(),
            "pulsar/functions/0x00000000_0xffffffff": BundleData(),  # not a system-service namespace
        }
    )
    assert sorted(data.bundle_data_for_load_shedding()) == [
        "public/default/0x00000000_0x80000000",
        "pulsar/functions/0x00000000_0xffffffff",
    ]
    assert len(data.bundle_data) == 6  # the snapshot itself is untouched


def test_broker_data_defaults():
    b = BrokerData(LocalBrokerData())
    assert b.preallocated_bundle_data == {} and b.time_average_data.short_term_msg_rate_in == 0.0


# ---------------------------------------------------------------- builders


def test_usage_and_system_usage():
    assert usage(80, 800) == usage(80, 800.0)
    assert usage(80, 800).usage == 640.0
    s = system_usage(cpu=80, bandwidth_in=50)
    assert s.cpu.limit == CPU_LIMIT and s.cpu.percent_usage() == 80.0
    assert s.bandwidth_in.limit == BANDWIDTH_LIMIT_KBPS and s.bandwidth_in.percent_usage() == 50.0


def test_broker_builder_reads_like_pulsar_tests():
    b1 = broker(
        "b1",
        cpu=80,
        bundles={
            "t/ns/0x00000000_0x40000000": bundle_stats(
                msg_rate_in=100, msg_throughput_in=1e6, consumer_count=2
            ),
            "t/ns/0x40000000_0x80000000": bundle_stats(msg_rate_out=50),
        },
    )
    assert b1.cpu.percent_usage() == 80.0 and b1.max_resource_usage() == 0.8
    assert (b1.msg_rate_in, b1.msg_rate_out, b1.msg_throughput_in) == (100.0, 50.0, 1e6)
    assert (b1.num_bundles, b1.num_topics, b1.num_consumers) == (2, 2, 2)
    assert b1.last_bundle_gains == set()  # as after a write
    assert b1.web_service_url == "http://b1" and broker_id(b1) == "b1"
    assert broker_id(broker("broker-1:8080")) == "broker-1:8080"
    assert broker("broker-1:8080").pulsar_service_url == "pulsar://broker-1:6650"
    # LocalBrokerData round trip of a built broker
    assert LocalBrokerData.from_json(b1.to_json()) == b1


def test_broker_builder_names_and_overrides():
    b = broker("b2", bundles=["t/ns/a", "t/ns/b"], msg_rate_in=5000, msg_throughput_out=7.0)
    assert b.bundles == {"t/ns/a", "t/ns/b"} and b.num_topics == 2
    assert b.msg_rate_in == 5000.0 and b.msg_throughput_out == 7.0
    with pytest.raises(InvalidLoadDataError):
        broker("b3", msg_rate_in=-1)
    with pytest.raises(InvalidLoadDataError):
        broker("b3", cpu=float("nan"))


def test_bundle_data_builder():
    b = bundle_data(msg_rate_in=10, msg_throughput_in=2000, long_msg_rate_in=5)
    assert b.short_term_data.msg_rate_in == 10.0 and b.long_term_data.msg_rate_in == 5.0
    assert b.long_term_data.msg_throughput_in == 2000.0
    assert b.short_term_data.num_samples == 10 and b.long_term_data.num_samples == 1000 and b.topics == 1
    young = bundle_data(msg_rate_in=10, num_samples=3)
    assert young.short_term_data.num_samples == 3 and young.long_term_data.num_samples == 3


def test_load_data_builder():
    hot = "t/ns/0x00000000_0x40000000"
    data = load_data(
        [
            broker(
                "b1",
                cpu=80,
                bundles={hot: bundle_stats(msg_rate_in=100), "t/ns/0x40000000_0x80000000": bundle_stats()},
            ),
            broker("b2", cpu=10),
        ],
        bundles={"t/ns/0x40000000_0x80000000": bundle_data(msg_rate_in=7)},
        recently_unloaded={"t/ns/0x80000000_0xffffffff": 1000},
    )
    assert sorted(data.broker_data) == ["b1", "b2"]
    assert data.bundle_data[hot].short_term_data.msg_rate_in == 100.0  # history from current stats
    assert data.bundle_data["t/ns/0x40000000_0x80000000"].short_term_data.msg_rate_in == 7.0  # explicit wins
    assert data.broker_data["b1"].time_average_data.short_term_msg_rate_in == 107.0
    assert data.broker_data["b2"].time_average_data.long_term_msg_rate_in == 0.0
    assert data.recently_unloaded_bundles == {"t/ns/0x80000000_0xffffffff": 1000}


def test_load_data_without_history_uses_pulsar_defaults_in_time_averages():
    data = load_data({"x": broker("ignored", bundles=["t/ns/a"])}, history_from_stats=False)
    assert list(data.broker_data) == ["x"] and data.bundle_data == {}
    assert data.broker_data["x"].time_average_data.short_term_msg_rate_in == 50.0


def test_broker_load_builder():
    load = broker_load(cpu=55, msg_throughput_in=10, msg_throughput_out=5, bundle_count=3)
    assert load.weighted_max_ema == 0.55 and load.max_resource_usage == 0.55
    assert load.msg_throughput_ema == 15.0 and load.updated_at == 1 and load.bundle_count == 3


def test_builders_produce_validated_objects():
    assert isinstance(bundle_stats(), NamespaceBundleStats) and bundle_stats().topics == 1
    with pytest.raises(InvalidLoadDataError):
        bundle_stats(msg_rate_in=float("inf"))
    with pytest.raises(InvalidLoadDataError):
        bundle_data(msg_rate_out=-1)
