"""ServiceConfig: attributes, immutability, overrides, round trips, aliases, sub-minute values."""

from __future__ import annotations

import copy
import json
import pickle
import warnings

import pytest

from brokerlb.config import (
    REGISTRY,
    DeprecatedConfigKeyWarning,
    InvalidConfigError,
    ServiceConfig,
    UnknownConfigKeyError,
    load_broker_conf,
)


def _quiet(mapping: dict[str, object]) -> ServiceConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedConfigKeyWarning)
        return ServiceConfig.from_mapping(mapping)


# ---------------------------------------------------------------- attributes and immutability


def test_attributes_are_named_like_pulsar_keys() -> None:
    conf = ServiceConfig()
    for config_key in REGISTRY:
        assert getattr(conf, config_key.name) == conf.get(config_key.name) == config_key.default


def test_immutable() -> None:
    conf = ServiceConfig()
    with pytest.raises(AttributeError, match="with_overrides"):
        conf.loadBalancerSheddingEnabled = False  # type: ignore[misc]
    with pytest.raises(AttributeError):
        conf.somethingNew = 1  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        del conf.loadBalancerSheddingEnabled
    assert conf.loadBalancerSheddingEnabled is True


def test_constructor_kwargs_are_strict() -> None:
    conf = ServiceConfig(clusterName="c1", loadBalancerSheddingIntervalMinutes=0.5)
    assert (conf.clusterName, conf.loadBalancerSheddingIntervalMinutes) == ("c1", 0.5)
    with pytest.raises(UnknownConfigKeyError, match="did you mean loadBalancerSheddingEnabled"):
        ServiceConfig(loadBalancerSheddingEnable=False)
    with pytest.raises(UnknownConfigKeyError):
        ServiceConfig(managedLedgerDefaultEnsembleSize=2)  # known to Pulsar, but not modelled
    with pytest.raises(KeyError):  # UnknownConfigKeyError is also a KeyError
        ServiceConfig().get("noSuchKey")


def test_get_resolves_aliases() -> None:
    conf = ServiceConfig(loadBalancerBandwidthInResourceWeight=2.0)
    assert conf.get("loadBalancerBandwithInResourceWeight") == 2.0


def test_with_overrides_returns_new_config() -> None:
    base = ServiceConfig(clusterName="c")
    changed = base.with_overrides({"loadBalancerSheddingEnabled": "false", "maxUnloadPercentage": 0.5})
    assert base.loadBalancerSheddingEnabled is True
    assert changed.loadBalancerSheddingEnabled is False
    assert changed.maxUnloadPercentage == 0.5
    assert changed.clusterName == "c"
    assert changed.explicit_keys == {"clusterName", "loadBalancerSheddingEnabled", "maxUnloadPercentage"}


def test_dynamic_only_overrides() -> None:
    conf = ServiceConfig()
    assert (
        conf.with_overrides(
            {"loadBalancerSheddingEnabled": "false"}, dynamic_only=True
        ).loadBalancerSheddingEnabled
        is False
    )
    with pytest.raises(InvalidConfigError, match="not a dynamic configuration") as info:
        conf.with_overrides({"loadBalancerEnabled": "false"}, dynamic_only=True)
    assert info.value.key == "loadBalancerEnabled"
    assert "loadBalancerSheddingEnabled" in REGISTRY.dynamic_keys()
    assert "loadBalancerEnabled" not in REGISTRY.dynamic_keys()


def test_equality_hash_repr_copy_pickle() -> None:
    a = ServiceConfig(clusterName="c", maxUnloadPercentage=0.5)
    b = ServiceConfig.from_mapping({"maxUnloadPercentage": "0.5", "clusterName": "c"})
    assert a == b and hash(a) == hash(b)
    assert a != ServiceConfig()
    assert len({a, b, ServiceConfig()}) == 2
    assert repr(a) == "ServiceConfig(clusterName='c', maxUnloadPercentage=0.5)"
    assert pickle.loads(pickle.dumps(a)) == a
    assert copy.deepcopy(a) == a and copy.copy(a) == a


# ---------------------------------------------------------------- round trips


def _non_default_config() -> ServiceConfig:
    return _quiet(
        {
            "clusterName": "c1",
            "webServicePortTls": "8443",
            "loadBalancerSheddingIntervalMinutes": "0.05",
            "loadBalancerOverrideBrokerNicSpeedGbps": "2.5",
            "supportedNamespaceBundleSplitAlgorithms": "range_equally_divide,flow_or_qps_equally_divide",
            "allowAutoTopicCreationType": "PARTITIONED",
            "loadBalancerLoadSheddingStrategy": "AvgShedder",
            "maxUnloadPercentage": "0.5",
            "brokerlbLoadHistoryDir": "/tmp/h",
            "metadataStoreUrl": "zk:127.0.0.1:2181/lb",
            "loadBalanceSheddingDelayInSeconds": "1.5",
            "loadBalancerMemoryResourceWeight": "0.5",
        }
    )


def test_round_trip_to_dict_from_mapping() -> None:
    conf = _non_default_config()
    snapshot = conf.to_dict()
    assert set(snapshot) == set(REGISTRY.keys)
    assert json.loads(json.dumps(snapshot)) == snapshot  # JSON-friendly
    assert _quiet(json.loads(json.dumps(snapshot))) == conf
    assert _quiet(conf.to_dict(changed_only=True)) == conf
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a snapshot of defaults reads back without warnings
        assert ServiceConfig.from_mapping(ServiceConfig().to_dict()) == ServiceConfig()


def test_round_trip_broker_conf_text(tmp_path) -> None:
    conf = _non_default_config()
    path = tmp_path / "broker.conf"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedConfigKeyWarning)
        path.write_text(conf.to_broker_conf())
        assert load_broker_conf(path) == conf
        path.write_text(conf.to_broker_conf(changed_only=False))
        assert load_broker_conf(path) == conf


def test_to_broker_conf_writes_unset_optionals_blank(tmp_path) -> None:
    conf = ServiceConfig(webServicePort=None, webServicePortTls=8443)
    text = conf.to_broker_conf()
    assert "webServicePort=\n" in text and "webServicePortTls=8443\n" in text
    path = tmp_path / "b.conf"
    path.write_text(text)
    assert load_broker_conf(path).webServicePort is None


def test_typed_values_are_normalised() -> None:
    conf = ServiceConfig.from_mapping(
        {
            "defaultNumberOfNamespaceBundles": 16.0,
            "maxUnloadPercentage": 1,
            "supportedNamespaceBundleSplitAlgorithms": ["range_equally_divide"],
            "loadBalancerSheddingIntervalMinutes": 2.0,
        }
    )
    assert conf.defaultNumberOfNamespaceBundles == 16 and type(conf.defaultNumberOfNamespaceBundles) is int
    assert conf.maxUnloadPercentage == 1.0 and type(conf.maxUnloadPercentage) is float
    assert conf.supportedNamespaceBundleSplitAlgorithms == ("range_equally_divide",)
    assert (
        conf.loadBalancerSheddingIntervalMinutes == 2
        and type(conf.loadBalancerSheddingIntervalMinutes) is int
    )


# ---------------------------------------------------------------- sub-minute intervals


@pytest.mark.parametrize(
    ("text", "value", "seconds"),
    [
        ("1", 1, 60.0),
        ("0.05", 0.05, 3.0),
        ("0.5", 0.5, 30.0),
        (".25", 0.25, 15.0),
        ("2.0", 2, 120.0),
        ("1e-2", 0.01, 0.6),
    ],
)
def test_sub_minute_intervals(text: str, value: float, seconds: float) -> None:
    conf = ServiceConfig.from_mapping({"loadBalancerSheddingIntervalMinutes": text})
    assert conf.loadBalancerSheddingIntervalMinutes == value
    assert conf.duration_seconds("loadBalancerSheddingIntervalMinutes") == pytest.approx(seconds)


def test_whole_minutes_stay_integers_like_pulsar() -> None:
    conf = ServiceConfig.from_mapping({"loadBalancerSheddingGracePeriodMinutes": "30"})
    assert type(conf.loadBalancerSheddingGracePeriodMinutes) is int
    assert conf.to_dict()["loadBalancerSheddingGracePeriodMinutes"] == 30


def test_duration_seconds_for_every_unit() -> None:
    conf = ServiceConfig()
    assert conf.duration_seconds("loadBalancerReportUpdateMaxIntervalMinutes") == 900.0
    assert conf.duration_seconds("loadBalanceSheddingDelayInSeconds") == 180.0
    assert conf.duration_seconds("loadBalancerReportUpdateMinIntervalMillis") == 5.0
    assert conf.duration_seconds("namespaceBundleUnloadingTimeoutMs") == 60.0
    assert conf.duration_seconds("metadataStoreSessionTimeoutMillis") == 30.0
    with pytest.raises(InvalidConfigError, match="not a time interval"):
        conf.duration_seconds("loadBalancerBrokerMaxTopics")


def test_every_interval_key_has_a_unit() -> None:
    suffixes = ("Minutes", "Seconds", "InSecs", "Millis", "Ms")
    for config_key in REGISTRY:
        if config_key.name.endswith(suffixes):
            assert config_key.unit in ("minutes", "seconds", "millis"), config_key.name


# ---------------------------------------------------------------- deprecated aliases


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({}, 1.0),
        ({"loadBalancerBandwithInResourceWeight": "3"}, 3.0),  # old non-1.0 is used
        ({"loadBalancerBandwidthInResourceWeight": "2"}, 2.0),
        ({"loadBalancerBandwidthInResourceWeight": "2", "loadBalancerBandwithInResourceWeight": "3"}, 2.0),
        ({"loadBalancerBandwidthInResourceWeight": "1.0", "loadBalancerBandwithInResourceWeight": "3"}, 3.0),
        ({"loadBalancerBandwithInResourceWeight": "1.0"}, 1.0),
        ({"loadBalancerBandwithInResourceWeight": "0"}, 0.0),
    ],
)
def test_bandwidth_weight_alias_rule(mapping: dict[str, str], expected: float) -> None:
    assert _quiet(mapping).loadBalancerBandwidthInResourceWeight == expected
    out_mapping = {k.replace("In", "Out"): v for k, v in mapping.items()}
    assert _quiet(out_mapping).loadBalancerBandwidthOutResourceWeight == expected


def test_alias_layers_like_one_property_set() -> None:
    base = ServiceConfig(loadBalancerBandwidthInResourceWeight=3.0)
    assert (
        _quiet_overrides(
            base, {"loadBalancerBandwithInResourceWeight": "5"}
        ).loadBalancerBandwidthInResourceWeight
        == 3.0
    )
    assert (
        _quiet_overrides(
            ServiceConfig(), {"loadBalancerBandwithInResourceWeight": "5"}
        ).loadBalancerBandwidthInResourceWeight
        == 5.0
    )


def _quiet_overrides(conf: ServiceConfig, mapping: dict[str, str]) -> ServiceConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedConfigKeyWarning)
        return conf.with_overrides(mapping)


def test_alias_warns() -> None:
    with pytest.warns(DeprecatedConfigKeyWarning, match="loadBalancerBandwidthOutResourceWeight"):
        ServiceConfig.from_mapping({"loadBalancerBandwithOutResourceWeight": "2"})


def test_deprecated_key_warns_but_applies() -> None:
    with pytest.warns(DeprecatedConfigKeyWarning, match="memory is no longer"):
        conf = ServiceConfig.from_mapping({"loadBalancerMemoryResourceWeight": "1"})
    assert conf.loadBalancerMemoryResourceWeight == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # set to its default: harmless, no warning
        ServiceConfig.from_mapping({"loadBalancerMemoryResourceWeight": "0"})


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({"zookeeperServers": "h1:2181,h2:2181"}, "zk:h1:2181,h2:2181"),
        ({"zookeeperServers": "h1:2181", "metadataStoreUrl": "zk:other:2181"}, "zk:other:2181"),
        ({"zookeeperServers": "h1:2181", "metadataStoreUrl": "memory:"}, "memory:"),  # explicitly set wins
        ({"zookeeperServers": ""}, "memory:"),
    ],
)
def test_zookeeper_servers_alias(mapping: dict[str, str], expected: str) -> None:
    assert _quiet(mapping).metadataStoreUrl == expected


def test_bad_zookeeper_servers_names_the_old_key() -> None:
    with pytest.raises(InvalidConfigError) as info:
        _quiet({"zookeeperServers": "h1:port"})
    assert info.value.key == "zookeeperServers"


@pytest.mark.parametrize(
    ("old", "new", "old_value", "expected"),
    [
        ("zooKeeperSessionTimeoutMillis", "metadataStoreSessionTimeoutMillis", "-1", 30000),
        ("zooKeeperSessionTimeoutMillis", "metadataStoreSessionTimeoutMillis", "5000", 5000),
        ("zooKeeperOperationTimeoutSeconds", "metadataStoreOperationTimeoutSeconds", "-1", 30),
        ("zooKeeperOperationTimeoutSeconds", "metadataStoreOperationTimeoutSeconds", "7", 7),
    ],
)
def test_zookeeper_timeout_aliases_positive_wins(old: str, new: str, old_value: str, expected: int) -> None:
    assert _quiet({old: old_value}).get(new) == expected
    # a positive old value wins even over an explicit new one (Pulsar's getter)
    both = _quiet({old: old_value, new: "12"}).get(new)
    assert both == (expected if int(old_value) > 0 else 12)


def test_exposure_metrics_old_spelling() -> None:
    assert _quiet({"exposeBunlesMetricsInPrometheus": "true"}).exposeBundlesMetricsInPrometheus is True
    assert (
        _quiet(
            {"exposeBunlesMetricsInPrometheus": "true", "exposeBundlesMetricsInPrometheus": "false"}
        ).exposeBundlesMetricsInPrometheus
        is False
    )


# ---------------------------------------------------------------- completeness and strategy names


def test_check_complete_requires_cluster_name() -> None:
    with pytest.raises(InvalidConfigError, match="clusterName") as info:
        ServiceConfig().check_complete()
    assert info.value.key == "clusterName"
    ServiceConfig(clusterName="c").check_complete()


def test_strategy_keys_take_short_or_class_names_without_validation() -> None:
    conf = ServiceConfig.from_mapping(
        {
            "loadBalancerLoadSheddingStrategy": "TransferShedder",
            "loadBalancerLoadPlacementStrategy": "com.example.MyPlacement",
        }
    )
    assert conf.loadBalancerLoadSheddingStrategy == "TransferShedder"
    assert conf.loadBalancerLoadPlacementStrategy == "com.example.MyPlacement"
    # blank keeps the default, as Pulsar does for String keys
    assert ServiceConfig.from_mapping({"loadManagerClassName": " "}).loadManagerClassName.endswith(
        "ModularLoadManagerImpl"
    )


def test_choice_keys_are_case_insensitive_and_canonical() -> None:
    conf = ServiceConfig.from_mapping(
        {
            "allowAutoTopicCreationType": "Partitioned",
            "loadBalancerServiceUnitTableViewSyncer": "metadatastoretosystemtopicsyncer",
            "defaultNamespaceBundleSplitAlgorithm": "TOPIC_COUNT_EQUALLY_DIVIDE",
        }
    )
    assert conf.allowAutoTopicCreationType == "partitioned"
    assert conf.loadBalancerServiceUnitTableViewSyncer == "MetadataStoreToSystemTopicSyncer"
    assert conf.defaultNamespaceBundleSplitAlgorithm == "topic_count_equally_divide"
    assert (
        ServiceConfig.from_mapping(
            {"allowAutoTopicCreationType": "NON_PARTITIONED"}
        ).allowAutoTopicCreationType
        == "non-partitioned"
    )
