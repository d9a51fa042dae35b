"""Reading broker.conf files (Java properties as Pulsar loads them) and --set overrides."""

from __future__ import annotations

import warnings

import pytest

from brokerlb.config import (
    DeprecatedConfigKeyWarning,
    InvalidConfigError,
    ServiceConfig,
    UnknownConfigKeyError,
    UnknownConfigKeyWarning,
    load_broker_conf,
    parse_broker_conf,
    parse_overrides,
)
from brokerlb.config.properties import format_properties, parse_properties

BROKER_CONF = """\
# Pulsar-style broker.conf
clusterName=standalone
   # indented comment
! bang comment

advertisedAddress = 127.0.0.1
webServicePort: 18080
brokerServicePort 16650
loadBalancerSheddingIntervalMinutes=0.05\t\t
loadBalancerLoadSheddingStrategy=org.apache.pulsar.broker.loadbalance.impl.UniformLoadShedder
supportedNamespaceBundleSplitAlgorithms= range_equally_divide , topic_count_equally_divide,
defaultNamespaceBundleSplitAlgorithm=topic_count_equally_divide
loadBalancerSheddingEnabled=FALSE
webServicePortTls=
loadBalancerBrokerOverloadedThresholdPercentage=
managedLedgerDefaultEnsembleSize=3
bookkeeperClientTimeoutInSeconds=30
"""


def test_load_pulsar_style_file(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text(BROKER_CONF)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # ignored Pulsar keys must not warn
        conf = load_broker_conf(path)
    assert conf.clusterName == "standalone"
    assert conf.advertisedAddress == "127.0.0.1"
    assert conf.webServicePort == 18080
    assert conf.brokerServicePort == 16650
    assert conf.loadBalancerSheddingIntervalMinutes == 0.05
    assert conf.loadBalancerLoadSheddingStrategy.endswith("UniformLoadShedder")
    assert conf.supportedNamespaceBundleSplitAlgorithms == (
        "range_equally_divide",
        "topic_count_equally_divide",
    )
    assert conf.loadBalancerSheddingEnabled is False
    assert conf.webServicePortTls is None
    # blank scalar keeps its default, as in Pulsar
    assert conf.loadBalancerBrokerOverloadedThresholdPercentage == 85
    assert "loadBalancerBrokerOverloadedThresholdPercentage" not in conf.changed()


def test_overrides_win_over_the_file(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("clusterName=a\nmaxUnloadPercentage=0.3\n")
    conf = load_broker_conf(path, ["clusterName=b", "loadBalancerSheddingIntervalMinutes = 0.5"])
    assert conf.clusterName == "b"
    assert conf.maxUnloadPercentage == 0.3
    assert conf.loadBalancerSheddingIntervalMinutes == 0.5
    assert load_broker_conf(path, {"clusterName": "c"}).clusterName == "c"


def test_no_file_is_defaults_plus_overrides() -> None:
    assert load_broker_conf() == ServiceConfig()
    assert load_broker_conf(None, ["clusterName=x"]).clusterName == "x"


def test_override_value_may_contain_equals() -> None:
    assert parse_overrides(["advertisedListeners=internal:pulsar://h:6650"]) == {
        "advertisedListeners": "internal:pulsar://h:6650"
    }
    assert parse_overrides(["a=b=c", " k = v "]) == {"a": "b=c", "k": "v"}


def test_blank_list_becomes_empty_and_optional_unset() -> None:
    conf = ServiceConfig.from_mapping({"webServicePort": " ", "webServicePortTls": "8443"})
    assert conf.webServicePort is None
    # a blank list is empty (Pulsar's setEmptyValue); the default must then be listed too
    with pytest.raises(InvalidConfigError, match="empty"):
        ServiceConfig.from_mapping({"supportedNamespaceBundleSplitAlgorithms": "   "})


def test_last_occurrence_wins_and_line_numbers() -> None:
    values, lines = parse_broker_conf("a=1\n\nb=2\na=3\n")
    assert values == {"a": "3", "b": "2"}
    assert lines == {"a": 4, "b": 3}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("k=v", [("k", "v")]),
        ("k = v ", [("k", "v ")]),
        ("k:v", [("k", "v")]),
        ("k v", [("k", "v")]),
        ("k\t=\tv", [("k", "v")]),
        ("k=", [("k", "")]),
        ("k", [("k", "")]),
        ("k=a=b", [("k", "a=b")]),
        ("k=zk:h1:2181,h2:2181/chroot", [("k", "zk:h1:2181,h2:2181/chroot")]),
        ("k=one \\\n    two", [("k", "one two")]),
        ("k=a\\\\", [("k", "a\\")]),
        ("k\\=x=v", [("k=x", "v")]),
        ("k=\\u0041\\t\\:", [("k", "A\t:")]),
        ("  # comment\n!x=y\n\n   \nk=v", [("k", "v")]),
    ],
)
def test_properties_syntax(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(e.key, e.value) for e in parse_properties(text)] == expected


def test_properties_round_trip() -> None:
    pairs = [
        ("a", "plain"),
        ("b", " leading space"),
        ("c", "back\\slash"),
        ("d", "tab\tand\nnewline"),
        ("e", ""),
        ("key with=odd:chars", "v#!"),
    ]
    parsed = parse_properties(format_properties(pairs, header="test"))
    assert [(e.key, e.value) for e in parsed] == pairs


def test_unknown_key_warns_with_suggestion(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("loadBalancerSheddingEnable=false\ntotallyUnknownKey=1\n")
    with pytest.warns(UnknownConfigKeyWarning) as record:
        conf = load_broker_conf(path)
    messages = [str(w.message) for w in record]
    assert any(
        "loadBalancerSheddingEnable'" in m and "did you mean loadBalancerSheddingEnabled" in m
        for m in messages
    )
    assert any("totallyUnknownKey" in m and str(path) in m for m in messages)
    assert {w.filename for w in record} == {__file__}  # points at the caller, not at brokerlb
    assert conf == ServiceConfig()  # nothing applied, nothing crashed


def test_strict_mode_raises_on_unknown_key(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("clusterName=c\nloadBalancerSheddingEnable=false\n")
    with pytest.raises(UnknownConfigKeyError) as info:
        load_broker_conf(path, strict=True)
    assert info.value.key == "loadBalancerSheddingEnable"
    assert info.value.suggestions[0] == "loadBalancerSheddingEnabled"
    assert f"{path}:2" in str(info.value)
    # ignored Pulsar keys are still fine in strict mode
    path.write_text("managedLedgerDefaultEnsembleSize=2\n")
    assert load_broker_conf(path, strict=True) == ServiceConfig()


def test_deprecated_alias_in_file_warns_and_applies(tmp_path) -> None:
    path = tmp_path / "broker.conf"
    path.write_text("zookeeperServers=127.0.0.1:2181\n")
    with pytest.warns(DeprecatedConfigKeyWarning, match="metadataStoreUrl"):
        conf = load_broker_conf(path)
    assert conf.metadataStoreUrl == "zk:127.0.0.1:2181"
