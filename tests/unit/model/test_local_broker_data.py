"""LocalBrokerData: the load report sample, update(), gains/losses, max-usage formulas, validation."""

import json
import math

import numpy as np
import pytest

from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import (
    AdvertisedListener,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    SystemResourceUsage,
)

# The load report of a 3.1 broker as printed by `pulsar-admin broker-stats load-report`,
# byte for byte.
SAMPLE = (
    '{"webServiceUrl":"http://broker-1:8080","pulsarServiceUrl":"pulsar://broker-1:6650",'
    '"persistentTopicsEnabled":true,"nonPersistentTopicsEnabled":true,'
    '"cpu":{"usage":7.31,"limit":800.0},"memory":{"usage":124.0,"limit":2096.0},'
    '"directMemory":{"usage":36.0,"limit":256.0},"bandwidthIn":{"usage":0.83,"limit":1.0E7},'
    '"bandwidthOut":{"usage":0.71,"limit":1.0E7},"msgThroughputIn":0.0,"msgThroughputOut":0.0,'
    '"msgRateIn":0.0,"msgRateOut":0.0,"lastUpdate":1690979816792,'
    '"lastStats":{"my-tenant/my-namespace/0x4ccccccb_0x66666664":{"msgRateIn":0.0,"msgThroughputIn":0.0,'
    '"msgRateOut":0.0,"msgThroughputOut":0.0,"consumerCount":2,"producerCount":0,"topics":1,"cacheSize":0}},'
    '"numTopics":1,"numBundles":1,"numConsumers":2,"numProducers":0,'
    '"bundles":["my-tenant/my-namespace/0x4ccccccb_0x66666664"],"lastBundleGains":[],"lastBundleLosses":[],'
    '"brokerVersionString":"3.1.0-SNAPSHOT","protocols":{},'
    '"advertisedListeners":{"internal":{"brokerServiceUrl":"pulsar://broker-1:6650"}},'
    '"loadManagerClassName":"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",'
    '"startTimestamp":1690940955211,"maxResourceUsage":0.140625,"loadReportType":"LocalBrokerData"}'
)
BUNDLE = "my-tenant/my-namespace/0x4ccccccb_0x66666664"


def stats(rate_in=0.0, rate_out=0.0, tput_in=0.0, tput_out=0.0, topics=1, consumers=0, producers=0):
    return NamespaceBundleStats(
        msg_rate_in=rate_in,
        msg_rate_out=rate_out,
        msg_throughput_in=tput_in,
        msg_throughput_out=tput_out,
        topics=topics,
        consumer_count=consumers,
        producer_count=producers,
    )


def host(cpu=(0.0, 100.0), memory=(0.0, 100.0), direct=(0.0, 100.0), bw_in=(0.0, 100.0), bw_out=(0.0, 100.0)):
    return SystemResourceUsage(
        cpu=ResourceUsage(*cpu),
        memory=ResourceUsage(*memory),
        direct_memory=ResourceUsage(*direct),
        bandwidth_in=ResourceUsage(*bw_in),
        bandwidth_out=ResourceUsage(*bw_out),
    )


# ---------------------------------------------------------------- the sample


def test_sample_round_trips_exactly():
    doc = json.loads(SAMPLE)
    data = LocalBrokerData.from_json(doc)
    out = data.to_json()
    assert out == doc
    assert list(out) == list(doc)  # same key order as Jackson
    assert json.loads(json.dumps(out)) == doc


def test_sample_fields():
    data = LocalBrokerData.from_json(json.loads(SAMPLE))
    assert data.web_service_url == "http://broker-1:8080"
    assert data.web_service_url_tls is None and data.pulsar_service_url_tls is None
    assert data.cpu == ResourceUsage(7.31, 800.0)
    assert data.bandwidth_in.limit == 1e7
    assert data.last_update == 1690979816792 and data.start_timestamp == 1690940955211
    assert data.last_stats[BUNDLE] == stats(topics=1, consumers=2)
    assert data.bundles == {BUNDLE} and data.last_bundle_gains == set()
    assert data.advertised_listeners == {"internal": AdvertisedListener("pulsar://broker-1:6650")}
    assert data.broker_version_string == "3.1.0-SNAPSHOT"
    assert data.load_report_type == "LocalBrokerData"
    # maxResourceUsage = directMemory 36/256 under both formulas
    assert data.max_resource_usage() == 0.140625
    assert data.max_resource_usage(include_memory=True) == 0.140625


def test_nulls_omitted_and_tls_fields_in_field_order():
    data = LocalBrokerData(
        web_service_url="http://b:8080",
        web_service_url_tls="https://b:8443",
        pulsar_service_url="pulsar://b:6650",
        pulsar_service_url_tls="pulsar+ssl://b:6651",
    )
    keys = list(data.to_json())
    assert keys[:4] == ["webServiceUrl", "webServiceUrlTls", "pulsarServiceUrl", "pulsarServiceUrlTls"]
    bare = LocalBrokerData().to_json()
    assert None not in bare.values()
    assert (
        "webServiceUrl" not in bare
        and "brokerVersionString" not in bare
        and "loadManagerClassName" not in bare
    )


def test_unknown_fields_and_old_report_types_ignored():
    doc = json.loads(SAMPLE)
    doc["someFutureField"] = {"x": 1}
    doc["loadReportType"] = "SomethingElse"
    del doc["maxResourceUsage"]
    assert LocalBrokerData.from_json(doc).to_json() == json.loads(SAMPLE)
    old = json.loads(SAMPLE)
    del old["loadReportType"], old["loadManagerClassName"], old["startTimestamp"], old["advertisedListeners"]
    data = LocalBrokerData.from_json(old)
    assert (
        data.load_manager_class_name is None and data.start_timestamp == 0 and data.advertised_listeners == {}
    )


def test_simple_load_manager_report_refused():
    with pytest.raises(InvalidLoadDataError, match="LoadReport") as err:
        LocalBrokerData.from_json({"loadReportType": "LoadReport", "name": "b"})
    assert err.value.field == "loadReportType"
    with pytest.raises(InvalidLoadDataError):
        LocalBrokerData.from_json({"underLoaded": True})


def test_missing_fields_take_pulsar_defaults():
    data = LocalBrokerData.from_json({})
    assert data == LocalBrokerData()
    assert data.persistent_topics_enabled and data.non_persistent_topics_enabled
    assert data.cpu == ResourceUsage(0.0, 0.0) and data.last_update == 0
    assert data.max_resource_usage() == 0.0


# ---------------------------------------------------------------- validation of reports


def test_nan_cpu_report_rejected_with_path():
    doc = json.loads(SAMPLE)
    doc["cpu"]["usage"] = math.nan  # Pulsar issue #382: loadFactorCPU NaN
    with pytest.raises(InvalidLoadDataError) as err:
        LocalBrokerData.from_json(doc)
    assert err.value.field == "cpu.usage"
    assert "nan" in str(err.value)


@pytest.mark.parametrize(
    "mutate, field",
    [
        (lambda d: d["cpu"].update(usage="NaN"), "cpu.usage"),
        (lambda d: d["bandwidthOut"].update(limit=math.inf), "bandwidthOut.limit"),
        (lambda d: d["memory"].update(usage=-3.0), "memory.usage"),
        (lambda d: d.update(msgRateIn=-1.0), "msgRateIn"),
        (lambda d: d.update(msgThroughputOut="12"), "msgThroughputOut"),
        (lambda d: d.update(numTopics=1.5), "numTopics"),
        (lambda d: d.update(lastUpdate=-5), "lastUpdate"),
        (lambda d: d.update(persistentTopicsEnabled="yes"), "persistentTopicsEnabled"),
        (lambda d: d.update(webServiceUrl=8080), "webServiceUrl"),
        (lambda d: d.update(bundles="t/ns/0x00000000_0xffffffff"), "bundles"),
        (lambda d: d.update(bundles=[1]), "bundles[0]"),
        (lambda d: d.update(lastStats=[]), "lastStats"),
        (lambda d: d["lastStats"][BUNDLE].update(msgRateOut=math.nan), f"lastStats[{BUNDLE}].msgRateOut"),
        (lambda d: d["lastStats"][BUNDLE].update(consumerCount=-2), f"lastStats[{BUNDLE}].consumerCount"),
        (lambda d: d["lastStats"].update({"t/ns/x": "bad"}), "lastStats[t/ns/x]"),
        (lambda d: d.update(protocols={"kafka": 9092}), "protocols[kafka]"),
        (
            lambda d: d["advertisedListeners"].update(internal={"brokerServiceUrl": 1}),
            "advertisedListeners[internal].brokerServiceUrl",
        ),
        (lambda d: d.update(cpu=[7.31, 800]), "cpu"),
    ],
)
def test_bad_report_fields(mutate, field):
    doc = json.loads(SAMPLE)
    mutate(doc)
    with pytest.raises(InvalidLoadDataError) as err:
        LocalBrokerData.from_json(doc)
    assert err.value.field == field


def test_document_must_be_an_object():
    with pytest.raises(InvalidLoadDataError):
        LocalBrokerData.from_json([1, 2])  # type: ignore[arg-type]


def test_constructor_validates_too():
    with pytest.raises(InvalidLoadDataError):
        LocalBrokerData(msg_rate_in=math.nan)
    with pytest.raises(InvalidLoadDataError):
        LocalBrokerData(cpu=0.5)  # type: ignore[arg-type]
    with pytest.raises(InvalidLoadDataError):
        LocalBrokerData(num_bundles=-1)
    with pytest.raises(InvalidLoadDataError) as err:
        LocalBrokerData(last_stats={"b": {"msgRateIn": 1.0}})  # type: ignore[dict-item]
    assert err.value.field == "lastStats[b]"
    assert LocalBrokerData(bundles=["a", "b"]).bundles == {"a", "b"}  # type: ignore[arg-type]


# ---------------------------------------------------------------- update()


def test_update_sums_totals_and_tracks_gains_and_losses():
    data = LocalBrokerData()
    data.update(
        host(cpu=(400.0, 800.0)),
        {
            "t/ns/a": stats(10.0, 20.0, 1000.0, 2000.0, topics=3, consumers=4, producers=5),
            "t/ns/b": stats(1.0, 2.0, 100.0, 200.0, topics=1, consumers=1, producers=0),
        },
    )
    assert data.cpu == ResourceUsage(400.0, 800.0)
    assert (data.msg_rate_in, data.msg_rate_out) == (11.0, 22.0)
    assert (data.msg_throughput_in, data.msg_throughput_out) == (1100.0, 2200.0)
    assert (data.num_topics, data.num_bundles, data.num_consumers, data.num_producers) == (4, 2, 5, 5)
    assert data.bundles == {"t/ns/a", "t/ns/b"}
    assert data.last_bundle_gains == {"t/ns/a", "t/ns/b"} and data.last_bundle_losses == set()
    assert data.total_msg_rate() == 33.0 and data.total_msg_throughput() == 3300.0

    data.clean_deltas()
    data.update(host(), {"t/ns/b": stats(), "t/ns/c": stats()})
    assert data.bundles == {"t/ns/b", "t/ns/c"}
    assert data.last_bundle_gains == {"t/ns/c"} and data.last_bundle_losses == {"t/ns/a"}
    assert data.num_bundles == 2 and data.msg_rate_in == 0.0

    # without clean_deltas, gains and losses accumulate (a bundle can be in both)
    data.update(host(), {"t/ns/a": stats()})
    assert data.last_bundle_gains == {"t/ns/c", "t/ns/a"}
    assert data.last_bundle_losses == {"t/ns/a", "t/ns/b", "t/ns/c"}
    assert data.bundles == {"t/ns/a"} and data.num_bundles == 1


def test_update_keeps_last_update_and_copies_stats():
    data = LocalBrokerData(last_update=123)
    given = {"t/ns/a": stats()}
    data.update(host(), given)
    given["t/ns/b"] = stats()
    assert data.last_update == 123 and list(data.last_stats) == ["t/ns/a"]


def test_update_with_no_bundles_zeroes_totals():
    data = LocalBrokerData()
    data.update(host(), {"t/ns/a": stats(5.0, 5.0, 5.0, 5.0)})
    data.update(host(), {})
    assert (data.msg_rate_in, data.num_topics, data.num_bundles, data.bundles) == (0.0, 0, 0, set())


def test_update_rejects_wrong_inputs():
    data = LocalBrokerData()
    with pytest.raises(InvalidLoadDataError):
        data.update({"cpu": 1}, {})  # type: ignore[arg-type]
    with pytest.raises(InvalidLoadDataError) as err:
        data.update(host(), {"t/ns/a": {"msgRateIn": 1}})  # type: ignore[dict-item]
    assert err.value.field == "bundleStats[t/ns/a]"
    assert data == LocalBrokerData()  # nothing changed


def test_update_from_other_and_copy():
    current = LocalBrokerData()
    current.update(host(cpu=(10.0, 100.0)), {"t/ns/a": stats(1.0)})
    last = LocalBrokerData()
    last.update_from(current)
    assert last.cpu == current.cpu and last.msg_rate_in == 1.0 and last.bundles == {"t/ns/a"}
    assert last.last_stats == current.last_stats and last.last_stats is not current.last_stats

    clone = current.copy()
    assert clone == current
    clone.bundles.add("x")
    clone.last_stats["x"] = stats()
    clone.protocols["p"] = "q"
    assert "x" not in current.bundles and "x" not in current.last_stats and current.protocols == {}


# ---------------------------------------------------------------- max resource usage


def broker_with(cpu=0.0, memory=0.0, direct=0.0, bw_in=0.0, bw_out=0.0):
    data = LocalBrokerData()
    data.update(
        host(
            cpu=(cpu, 100.0),
            memory=(memory, 100.0),
            direct=(direct, 100.0),
            bw_in=(bw_in, 100.0),
            bw_out=(bw_out, 100.0),
        ),
        {},
    )
    return data


def test_current_max_excludes_memory():
    data = broker_with(cpu=1.0, memory=800.0, direct=2.0, bw_in=3.0, bw_out=4.0)
    assert data.max_resource_usage() == 0.04  # skips memory (Pulsar BrokerLoadDataTest)
    assert data.max_resource_usage(include_memory=True) == float(np.float32(800.0) / np.float32(100))


def test_2x_formula_is_float32():
    data = broker_with(cpu=33.0)
    # 33% -> 33.0f; 33.0f / 100f in float32 is not the double 0.33
    assert data.max_resource_usage(include_memory=True) == float(np.float32(33.0) / np.float32(100.0))
    assert data.max_resource_usage(include_memory=True) != 0.33
    assert data.max_resource_usage() == 0.33


def test_weighted_variants():
    data = broker_with(cpu=1.0, memory=400.0, direct=2.0, bw_in=3.0, bw_out=4.0)
    assert data.max_resource_usage_with_weight(0.5, 0.5, 0.5, 0.5, 0.5) == 2.0  # memory 400% * 0.5
    assert (
        data.max_resource_usage_with_weight_within_limit(0.5, 0.5, 0.5, 0.5, 0.5) == 0.02
    )  # 200 > 100 ignored
    assert data.max_resource_usage_with_weight_no_memory(0.5, 0.5, 0.5, 0.5) == 0.02
    # Pulsar 4.x default weights: cpu, bwIn, bwOut
    assert data.max_resource_usage_with_weight(1.0, 0.0, 0.0, 1.0, 1.0) == 0.04


def test_within_limit_boundaries():
    data = broker_with(cpu=100.0, bw_in=150.0)
    assert data.max_resource_usage_with_weight(1, 0, 0, 1, 1) == 1.5
    assert data.max_resource_usage_with_weight_within_limit(1, 0, 0, 1, 1) == 1.0  # exactly 100 kept
    assert broker_with(cpu=120.0).max_resource_usage_with_weight_within_limit(1, 0, 0, 1, 1) == 0.0


def test_unmeasured_resources_count_as_zero():
    data = LocalBrokerData()
    data.update(SystemResourceUsage(cpu=ResourceUsage(10.0, 100.0)), {})  # others -1/-1
    assert data.max_resource_usage() == 0.1


def test_print_resource_usage_is_pulsars_log_line():
    """Pulsar's ``LocalBrokerData.printResourceUsage()``: Java's ``%.2f`` of the 32-bit percentages,
    widened to double and rounded half up: 3.125 is 3.13 (Python's own format gives 3.12), and
    0.005 is 0.00 (its float32 is 0.004999999888...)."""
    assert broker_with(cpu=12.345, bw_out=1.0).print_resource_usage() == (
        "cpu: 12.35%, memory: 0.00%, directMemory: 0.00%, bandwidthIn: 0.00%, bandwidthOut: 1.00%"
    )
    assert broker_with(cpu=3.125, memory=50.0, direct=0.005, bw_in=99.999).print_resource_usage() == (
        "cpu: 3.13%, memory: 50.00%, directMemory: 0.00%, bandwidthIn: 100.00%, bandwidthOut: 0.00%"
    )
    assert f"{3.125:.2f}" == "3.12"  # why the half-up rounding is spelled out


def test_to_json_max_usage_formula_option():
    data = broker_with(cpu=10.0, memory=50.0)
    assert data.to_json()["maxResourceUsage"] == 0.1
    assert data.to_json(include_memory_in_max=True)["maxResourceUsage"] == float(np.float32(0.5))
