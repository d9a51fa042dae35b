"""Every kind of bad value raises InvalidConfigError naming the key and the value."""

from __future__ import annotations

import pytest

from brokerlb.config import InvalidConfigError, ServiceConfig, load_broker_conf
from brokerlb.errors import InvalidInputError

# (key, bad value as text, words expected in the reason)
BAD_TEXT = [
    # not a number / not an integer
    ("loadBalancerBrokerOverloadedThresholdPercentage", "eighty", "integer"),
    ("loadBalancerBrokerOverloadedThresholdPercentage", "85.5", "integer"),
    ("defaultNumberOfNamespaceBundles", "1_000", "integer"),
    ("defaultNumberOfNamespaceBundles", "0x10", "integer"),
    ("maxConcurrentLookupRequest", "2147483648", "32-bit"),
    ("brokerShutdownTimeoutMs", "9223372036854775808", "64-bit"),
    ("maxUnloadPercentage", "abc", "number"),
    ("maxUnloadPercentage", "1.5d", "number"),
    ("loadBalancerSheddingIntervalMinutes", "1m", "number"),
    # NaN / infinities where a finite number is needed
    ("loadBalancerHistoryResourcePercentage", "NaN", "finite"),
    ("loadBalancerCPUResourceWeight", "Infinity", "finite"),
    ("loadBalancerCPUResourceWeight", "-inf", "finite"),
    ("loadBalancerSheddingIntervalMinutes", "nan", "finite"),
    ("loadBalancerSheddingIntervalMinutes", "1e999", "finite"),
    ("loadBalancerOverrideBrokerNicSpeedGbps", "inf", "finite"),
    # negative / out of bounds
    ("loadBalancerBrokerOverloadedThresholdPercentage", "-1", ">= 0"),
    ("loadBalancerBrokerThresholdShedderPercentage", "-5", ">= 0"),
    ("loadBalancerSheddingIntervalMinutes", "0", "at least 0.5 s"),
    ("loadBalancerSheddingIntervalMinutes", "-0.5", "at least 0.5 s"),
    ("loadBalancerSheddingIntervalMinutes", "1e-9", "at least 0.5 s"),
    ("loadManagerClassName", "a.", "implements ModularLoadManagerImpl and ExtensibleLoadManagerImpl"),
    ("loadManagerClassName", "org.example.ModularLoadManagerImpl", "implements ModularLoadManagerImpl"),
    ("loadBalancerSheddingGracePeriodMinutes", "-1", ">= 0"),
    ("loadBalancerReportUpdateMinIntervalMillis", "49", "at least 0.05 s"),
    ("loadBalancerHostUsageCheckIntervalMinutes", "0", "at least 0.05 s"),
    ("loadBalancerSplitIntervalMinutes", "0.001", "at least 0.5 s"),
    ("loadBalancerResourceQuotaUpdateIntervalMinutes", "0", "at least 0.5 s"),
    ("loadBalancerServiceUnitStateMonitorIntervalInSeconds", "0", "at least 0.5 s"),
    ("loadBalancerHistoryResourcePercentage", "1.1", "<= 1"),
    ("maxUnloadPercentage", "-0.1", ">= 0"),
    ("maxUnloadBundleNumPerShedding", "-2", ">= -1"),
    ("loadBalancerMaxNumberOfBundlesInBundleLoadReport", "-2", ">= -1"),
    ("defaultNumberOfNamespaceBundles", "0", ">= 1"),
    ("loadBalancerNamespaceMaximumBundles", "0", ">= 1"),
    ("maxConcurrentLookupRequest", "0", ">= 1"),
    ("metadataStoreSessionTimeoutMillis", "0", "> 0"),
    ("loadBalancerBandwidthInResourceWeight", "-1.0", ">= 0"),
    ("minUnloadMessageThroughput", "-1", ">= 0"),
    ("webServicePort", "70000", "<= 65535"),
    ("brokerServicePort", "-1", ">= 0"),
    ("loadBalancerOverrideBrokerNicSpeedGbps", "0", "> 0"),
    ("loadBalanceSheddingDelayInSeconds", "-3", ">= 0"),
    # booleans: Java would read these as false; brokerlb refuses them
    ("loadBalancerSheddingEnabled", "yes", "true or false"),
    ("loadBalancerSheddingEnabled", "1", "true or false"),
    ("loadBalancerAutoBundleSplitEnabled", "ture", "true or false"),
    # lists and choices
    ("supportedNamespaceBundleSplitAlgorithms", "range_equally_divide,hash_divide", "hash_divide"),
    ("defaultNamespaceBundleSplitAlgorithm", "largest_divide", "expected one of"),
    ("allowAutoTopicCreationType", "sharded", "expected one of"),
    ("loadBalancerServiceUnitTableViewSyncer", "Both", "expected one of"),
    # metadata store URL
    ("metadataStoreUrl", "etcd:http://localhost:2379", "unsupported metadata store"),
    ("metadataStoreUrl", "zk://localhost:2181", "is not host:port"),
    ("metadataStoreUrl", "zk:localhost:notaport", "unsupported metadata store"),
    ("metadataStoreUrl", "zk:localhost", "is not host:port"),
    ("metadataStoreUrl", "zk:localhost:99999", "bad port"),
    ("metadataStoreUrl", "zk:", "is not host:port"),
    ("metadataStoreUrl", "zk:h1:2181,,h2:2181", "is not host:port"),
    ("metadataStoreUrl", "zk:h1:2181/a//b", "invalid chroot"),
]


@pytest.mark.parametrize(("name", "text", "why"), BAD_TEXT)
def test_bad_text_value_names_key_and_value(name: str, text: str, why: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        ServiceConfig.from_mapping({name: text})
    err = info.value
    assert err.key == name
    assert err.value == text
    message = str(err)
    assert name in message and repr(text) in message
    assert why in message
    assert isinstance(err, InvalidInputError) and err.http_status == 400


# typed values (as from a JSON snapshot or Python code)
BAD_TYPED = [
    ("loadBalancerSheddingEnabled", 1, "boolean"),
    ("loadBalancerSheddingEnabled", None, "boolean"),
    ("defaultNumberOfNamespaceBundles", True, "not a boolean"),
    ("defaultNumberOfNamespaceBundles", 4.5, "integer"),
    ("defaultNumberOfNamespaceBundles", [4], "integer"),
    ("maxUnloadPercentage", float("nan"), "finite"),
    ("maxUnloadPercentage", float("inf"), "finite"),
    ("maxUnloadPercentage", True, "number"),
    ("loadBalancerSheddingIntervalMinutes", float("nan"), "finite"),
    ("loadBalancerSheddingIntervalMinutes", -1, "at least 0.5 s"),
    ("loadBalancerLoadSheddingStrategy", 3, "string"),
    ("supportedNamespaceBundleSplitAlgorithms", ["range_equally_divide", 3], "not a string"),
    ("supportedNamespaceBundleSplitAlgorithms", 7, "list"),
    ("webServicePortTls", "x", "integer"),
    ("allowAutoTopicCreationType", 1, "expected one of"),
]


@pytest.mark.parametrize(("name", "value", "why"), BAD_TYPED)
def test_bad_typed_value_names_key(name: str, value: object, why: str) -> None:
    with pytest.raises(InvalidConfigError) as info:
        ServiceConfig.from_mapping({name: value})
    assert info.value.key == name
    assert name in str(info.value)
    assert why in str(info.value)


def test_bad_kwarg_in_code_raises_too() -> None:
    with pytest.raises(InvalidConfigError, match="loadBalancerBrokerOverloadedThresholdPercentage"):
        ServiceConfig(loadBalancerBrokerOverloadedThresholdPercentage=-3)


# ---------------------------------------------------------------- checks across keys


def test_default_split_algorithm_must_be_supported() -> None:
    with pytest.raises(InvalidConfigError) as info:
        ServiceConfig.from_mapping({"supportedNamespaceBundleSplitAlgorithms": "topic_count_equally_divide"})
    assert info.value.key == "defaultNamespaceBundleSplitAlgorithm"
    assert "supportedNamespaceBundleSplitAlgorithms" in str(info.value)
    ok = ServiceConfig.from_mapping(
        {
            "supportedNamespaceBundleSplitAlgorithms": "topic_count_equally_divide",
            "defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide",
        }
    )
    assert ok.supportedNamespaceBundleSplitAlgorithms == ("topic_count_equally_divide",)


def test_empty_supported_list_rejects_any_default() -> None:
    with pytest.raises(InvalidConfigError, match="empty"):
        ServiceConfig.from_mapping({"supportedNamespaceBundleSplitAlgorithms": ""})


def test_specified_positions_cannot_be_the_default() -> None:
    with pytest.raises(InvalidConfigError, match="cannot be the default"):
        ServiceConfig.from_mapping({"defaultNamespaceBundleSplitAlgorithm": "specified_positions_divide"})


def test_tombstone_delay_must_cover_in_flight_wait() -> None:
    with pytest.raises(InvalidConfigError) as info:
        ServiceConfig.from_mapping({"loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": "20"})
    assert info.value.key == "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds"
    assert "30000 ms" in str(info.value)
    fast = ServiceConfig.from_mapping(
        {
            "loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds": "2.5",
            "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": "2500",
        }
    )
    assert fast.loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds == 2.5


@pytest.mark.parametrize(
    ("plain", "tls"), [("webServicePort", "webServicePortTls"), ("brokerServicePort", "brokerServicePortTls")]
)
def test_a_broker_needs_a_port(plain: str, tls: str) -> None:
    with pytest.raises(InvalidConfigError, match=f"{plain} and {tls} are both unset"):
        ServiceConfig.from_mapping({plain: ""})
    only_tls = ServiceConfig.from_mapping({plain: "", tls: "8443"})
    assert only_tls.get(plain) is None and only_tls.get(tls) == 8443


def test_avg_shedder_low_threshold_not_above_high() -> None:
    with pytest.raises(InvalidConfigError) as info:
        ServiceConfig.from_mapping({"loadBalancerAvgShedderLowThreshold": "50"})
    assert info.value.key == "loadBalancerAvgShedderLowThreshold"


def test_file_error_names_file_and_line(tmp_path) -> None:
    conf = tmp_path / "broker.conf"
    conf.write_text("clusterName=c1\n\n# a comment\nmaxUnloadPercentage=2\n")
    with pytest.raises(InvalidConfigError) as info:
        load_broker_conf(conf)
    assert info.value.key == "maxUnloadPercentage"
    assert f"{conf}:4" in str(info.value)


def test_override_error_says_set() -> None:
    with pytest.raises(InvalidConfigError, match=r"\[--set\]"):
        load_broker_conf(None, ["loadBalancerSheddingEnabled=maybe"])


def test_malformed_override() -> None:
    with pytest.raises(InvalidConfigError, match="key=value"):
        load_broker_conf(None, ["loadBalancerSheddingEnabled"])
    with pytest.raises(InvalidConfigError, match="key=value"):
        load_broker_conf(None, ["=true"])


def test_unreadable_file(tmp_path) -> None:
    with pytest.raises(InvalidConfigError, match="cannot read"):
        load_broker_conf(tmp_path / "missing.conf")
    binary = tmp_path / "binary.conf"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(InvalidConfigError, match="UTF-8"):
        load_broker_conf(binary)
