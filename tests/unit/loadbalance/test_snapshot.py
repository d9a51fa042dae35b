"""Snapshot JSON <-> ClusterView: parsing, defaults, errors naming the bad field, round trips."""

import json
from pathlib import Path

import pytest

from brokerlb.config import ServiceConfig
from brokerlb.config.aliases import REFUSED_WHEN_SET
from brokerlb.errors import InvalidSnapshotError, SnapshotWarning
from brokerlb.loadbalance import load_snapshot, parse_snapshot, snapshot_to_json
from brokerlb.loadbalance.snapshot import snapshot_from_load_reports

EXAMPLE = Path(__file__).parents[3] / "examples" / "snapshots" / "skewed-cluster.json"

B1 = "t/ns/0x00000000_0x80000000"


def _doc(**extra) -> dict:
    doc = {
        "now": 1000,
        "brokers": {
            "b1:8080": {
                "localData": {
                    "webServiceUrl": "http://b1:8080",
                    "cpu": {"usage": 400.0, "limit": 800.0},
                    "lastStats": {B1: {"msgRateIn": 100.0, "topics": 3}},
                    "bundles": [B1],
                }
            }
        },
        "bundleData": {
            B1: {"shortTermData": {"msgRateIn": 80.0}, "longTermData": {"msgRateIn": 60.0}, "topics": 3}
        },
    }
    doc.update(extra)
    return doc


def test_minimal_snapshot() -> None:
    view = parse_snapshot(_doc())
    assert view.now_ms == 1000 and view.available_brokers == ("b1:8080",)
    history = view.bundle_data[B1]
    assert history.short_term_data.max_samples == 10 and history.short_term_data.num_samples == 10
    assert history.long_term_data.max_samples == 1000 and history.long_term_data.msg_rate_in == 60.0
    # time averages derived from bundleData over the broker's lastStats bundles
    assert view.brokers["b1:8080"].time_average_data.short_term_msg_rate_in == 80.0
    assert view.brokers["b1:8080"].time_average_data.long_term_msg_rate_in == 60.0


def test_bare_local_broker_data_is_accepted() -> None:
    doc = _doc()
    doc["brokers"]["b1:8080"] = doc["brokers"]["b1:8080"]["localData"]
    assert parse_snapshot(doc).brokers["b1:8080"].local_data.cpu.usage == 400.0


def test_now_from_the_caller_when_missing() -> None:
    doc = _doc()
    del doc["now"]
    assert parse_snapshot(doc, now_ms=42).now_ms == 42
    with pytest.raises(InvalidSnapshotError, match="now"):
        parse_snapshot(doc)


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (
            lambda d: d["brokers"]["b1:8080"]["localData"]["cpu"].update(usage=float("nan")),
            "brokers[b1:8080].localData.cpu.usage",
        ),
        (
            lambda d: d["brokers"]["b1:8080"]["localData"]["lastStats"][B1].update(msgRateIn=-1),
            f"brokers[b1:8080].localData.lastStats[{B1}].msgRateIn",
        ),
        (
            lambda d: d["bundleData"][B1]["shortTermData"].update(msgRateOut="x"),
            f"bundleData[{B1}].shortTermData.msgRateOut",
        ),
        (
            lambda d: d.update(config={"loadBalancerSheddingEnabled": "maybe"}),
            "config.loadBalancerSheddingEnabled",
        ),
        (
            lambda d: d.update(config={"loadBalancerShedingEnabled": True}),
            "config.loadBalancerShedingEnabled",
        ),
        (lambda d: d.update(now=-5), "now"),
        (lambda d: d.update(recentlyUnloadedBundles={B1: "yesterday"}), f"recentlyUnloadedBundles[{B1}]"),
        (lambda d: d.update(ownership={B1: 7}), f"ownership[{B1}]"),
        (
            lambda d: d.update(
                isolationPolicies={
                    "p": {"namespaces": ["t/.*"], "primary": ["("], "auto_failover_policy": {}}
                }
            ),
            "isolationPolicies[p].primary[0]",
        ),
        (
            lambda d: d.update(isolationPolicies={"p": {"namespaces": ["t/.*"], "primary": ["b1"]}}),
            "isolationPolicies[p].auto_failover_policy",
        ),
        (
            lambda d: d.update(
                namespacePolicies={"t/ns": {"bundles": {"boundaries": ["0x00000000", "0x10"]}}}
            ),
            "namespacePolicies[t/ns].bundles",
        ),
        (
            lambda d: d.update(brokerLoadData={"b1:8080": {"weightedMaxEMA": -1}}),
            "brokerLoadData[b1:8080].weightedMaxEMA",
        ),
        (
            lambda d: d.update(topBundlesLoadData={"b1:8080": [{"stats": {}}]}),
            "topBundlesLoadData[b1:8080][0].bundleName",
        ),
        (
            lambda d: d.update(brokerLookupData={"b1:8080": {"persistentTopicsEnabled": "yes"}}),
            "brokerLookupData[b1:8080].persistentTopicsEnabled",
        ),
        (lambda d: d["brokers"]["b1:8080"].update(timeAverage={}), "brokers[b1:8080]"),
        (lambda d: d["brokers"].update({"b2:8080": {"timeAverageData": {}}}), "brokers[b2:8080].localData"),
    ],
)
def test_errors_name_the_bad_field(mutate, path: str) -> None:
    doc = _doc()
    mutate(doc)
    with pytest.raises(InvalidSnapshotError) as info:
        parse_snapshot(doc)
    assert info.value.path == path, str(info.value)
    assert path in str(info.value)


def test_unknown_top_level_key_is_refused_but_notes_are_fine() -> None:
    with pytest.raises(InvalidSnapshotError, match="'bundelData'"):
        parse_snapshot(_doc(bundelData={}))
    assert parse_snapshot(_doc(description="a note", _comment="x")).now_ms == 1000


def test_not_an_object() -> None:
    with pytest.raises(InvalidSnapshotError, match="expected a JSON object"):
        parse_snapshot([1, 2])


def test_round_trip_of_the_example() -> None:
    view = load_snapshot(EXAMPLE)
    again = parse_snapshot(json.loads(json.dumps(snapshot_to_json(view))))
    assert snapshot_to_json(again) == snapshot_to_json(view)
    assert again.config == view.config and again.now_ms == view.now_ms


def test_round_trip_of_extensible_parts() -> None:
    doc = _doc(
        config={
            "loadManagerClassName": "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
        },
        brokerLoadData={
            "b1:8080": {
                "cpu": {"usage": 50, "limit": 100},
                "weightedMaxEMA": 0.5,
                "updatedAt": 900,
                "msgThroughputEMA": 10.0,
            }
        },
        topBundlesLoadData={
            "b1:8080": {"topBundlesLoadData": [{"bundleName": B1, "stats": {"msgRateIn": 5}}]}
        },
        brokerLookupData={"b1:8080": {"brokerVersion": "3.1.0", "webServiceUrl": "http://b1:8080", "x": 1}},
        ownership={B1: "b1:8080"},
        recentlyUnloadedBrokers={"b1:8080": 500},
        failureDomains={"rack": ["b1:8080"]},
        namespacePolicies={"t/ns": {"antiAffinityGroup": "g", "bundles": {"numBundles": 2}}},
        isolationPolicies={
            "p": {
                "namespaces": ["t/.*"],
                "primary": ["b1.*"],
                "secondary": [],
                "auto_failover_policy": {
                    "policy_type": "min_available",
                    "parameters": {"min_limit": 1, "usage_threshold": "80"},
                },
            }
        },
    )
    view = parse_snapshot(doc)
    assert view.is_extensible and view.broker_load_data["b1:8080"].weighted_max_ema == 0.5
    assert view.top_bundles["b1:8080"].bundle_names() == [B1]
    assert view.broker_lookup_data["b1:8080"].broker_version == "3.1.0"
    assert view.failure_domain_of("b1:8080") == "rack"
    assert view.isolation_policies["p"].auto_failover_policy.min_limit == 1
    assert view.isolation_policies["p"].auto_failover_policy.usage_threshold == 80
    assert view.namespace_policies["t/ns"].bundles.num_bundles == 2
    again = parse_snapshot(snapshot_to_json(view))
    assert snapshot_to_json(again) == snapshot_to_json(view)
    assert again.broker_lookup_data["b1:8080"].extra == {"x": 1}


def test_load_reports_folder(tmp_path: Path) -> None:
    example = json.loads(EXAMPLE.read_text())
    for broker, entry in example["brokers"].items():
        (tmp_path / f"{broker.replace(':', '_')}.json").write_text(json.dumps(entry["localData"]))
    (tmp_path / "notes.txt").write_text("ignored")
    doc = snapshot_from_load_reports(tmp_path)
    view = parse_snapshot(doc)
    assert view.available_brokers == tuple(sorted(example["brokers"]))
    assert view.now_ms == max(e["localData"]["lastUpdate"] for e in example["brokers"].values())
    bundle = "orders/payments/0x00000000_0x40000000"
    sample = example["brokers"]["broker-1:8080"]["localData"]["lastStats"][bundle]
    history = view.bundle_data[bundle]
    assert history.short_term_data.num_samples == 1
    assert history.short_term_data.msg_rate_in == sample["msgRateIn"]
    assert history.long_term_data.msg_throughput_out == sample["msgThroughputOut"]


def test_load_reports_errors(tmp_path: Path) -> None:
    with pytest.raises(InvalidSnapshotError, match="no \\*.json"):
        snapshot_from_load_reports(tmp_path)
    with pytest.raises(InvalidSnapshotError, match="does not exist"):
        snapshot_from_load_reports(tmp_path / "nope")
    (tmp_path / "b1.json").write_text("{broken")
    with pytest.raises(InvalidSnapshotError, match="not valid JSON"):
        snapshot_from_load_reports(tmp_path)
    (tmp_path / "b1.json").write_text(json.dumps({"cpu": {"usage": "NaN", "limit": 100}}))
    with pytest.raises(InvalidSnapshotError, match="cpu.usage"):
        snapshot_from_load_reports(tmp_path)


# Every Pulsar key brokerlb does not model is accepted in a snapshot's config with a warning
# (docs/snapshot.md); a key Pulsar does not have stays an error (a typo never goes unseen).
# security keys brokerlb does not implement are refused when turned on (brokerlb.config.aliases.REFUSED_WHEN_SET)
IGNORED = sorted(ServiceConfig.registry.ignored - REFUSED_WHEN_SET.keys())


def test_there_is_an_ignored_key_for_every_unmodelled_pulsar_area() -> None:
    assert len(IGNORED) > 380  # the security and TLS keys brokerlb implements are modelled, not ignored
    for key in (
        "managedLedgerDefaultEnsembleSize",
        "bookkeeperClientTimeoutInSeconds",
        "tlsCertRefreshCheckDurationSec",
    ):
        assert key in IGNORED


@pytest.mark.parametrize("key", IGNORED)
def test_every_ignored_pulsar_key_is_accepted_with_a_warning(key: str) -> None:
    warned: list[str] = []
    view = parse_snapshot(_doc(config={key: "1"}), warn=warned.append)
    assert warned == [f"config.{key}: a Pulsar key brokerlb does not model; accepted and ignored"]
    assert view.config == ServiceConfig()


@pytest.mark.parametrize("key", sorted(REFUSED_WHEN_SET))
def test_unimplemented_security_keys_turned_on_are_refused(key: str) -> None:
    with pytest.raises(InvalidSnapshotError, match="not implemented by brokerlb"):
        parse_snapshot(_doc(config={key: "1"}))


def test_ignored_keys_warn_as_snapshot_warnings_without_a_callback() -> None:
    with pytest.warns(SnapshotWarning, match="config.bookkeeperClientTimeoutInSeconds"):
        parse_snapshot(_doc(config={"bookkeeperClientTimeoutInSeconds": 30}))


def test_excluded_namespaces_are_a_modelled_key() -> None:
    warned: list[str] = []
    view = parse_snapshot(
        _doc(config={"loadBalancerSheddingExcludedNamespaces": "t/a, t/b"}), warn=warned.append
    )
    assert view.config.loadBalancerSheddingExcludedNamespaces == frozenset({"t/a", "t/b"}) and warned == []


# Pulsar accepts a window whose numSamples exceeds its maxSamples (TimeAverageMessageData's
# setter; its own tests build such data): the window counts as full and the next sample caps the
# count. A snapshot keeps the value as given and warns.
def test_num_samples_above_max_samples_is_accepted_with_a_warning() -> None:
    doc = _doc()
    doc["bundleData"][B1]["shortTermData"] = {"maxSamples": 10, "numSamples": 25, "msgRateIn": 80.0}
    warned: list[str] = []
    view = parse_snapshot(doc, warn=warned.append)
    window = view.bundle_data[B1].short_term_data
    assert (window.num_samples, window.max_samples) == (25, 10)
    assert warned == [
        f"bundleData[{B1}].shortTermData.numSamples = 25 exceeds maxSamples 10: accepted as Pulsar does "
        "(a full window; the next sample caps the count)"
    ]
    # worked example: the next sample of 100 msg/s gives (9 * 80 + 100) / 10 = 82 and 10 samples
    window.update_values(0.0, 0.0, 100.0, 0.0)
    assert (window.num_samples, window.msg_rate_in) == (10, 82.0)
    assert snapshot_to_json(view)["bundleData"][B1]["shortTermData"]["numSamples"] == 10


def test_planner_answers_carry_the_snapshot_warnings() -> None:
    from brokerlb.loadbalance.planner import Planner

    doc = _doc(config={"managedLedgerDefaultEnsembleSize": 3})
    answer = Planner().run({"op": "shed", "snapshot": doc, "raw": True, "strategy": "ThresholdShedder"})
    assert answer["warnings"] == [
        "config.managedLedgerDefaultEnsembleSize: a Pulsar key brokerlb does not model; accepted and ignored"
    ]
    assert "warnings" not in Planner().run({"op": "shed", "snapshot": _doc(), "raw": True})
    # a request's "set" (--set) overrides warn the same way
    answer = Planner().run(
        {"op": "shed", "snapshot": _doc(), "raw": True, "set": {"bookkeeperClientTimeoutInSeconds": "30"}}
    )
    assert answer["warnings"] == [
        "set.bookkeeperClientTimeoutInSeconds: a Pulsar key brokerlb does not model; accepted and ignored"
    ]
