"""Pulsar's paths and JSON shapes."""

from __future__ import annotations

import json

import pytest

from brokerlb.coordination import paths
from brokerlb.coordination.records import (
    AutoFailoverPolicy,
    FailureDomain,
    LeaderBroker,
    LocalPolicies,
    NamespaceEphemeralData,
    NamespaceIsolationData,
    NamespaceIsolationPolicies,
    Policies,
    decode_json,
    encode_json,
)
from brokerlb.errors import CorruptMetadataError, InvalidBundleRangeError, InvalidInputError
from brokerlb.ring import NamespaceBundles


def test_paths_match_pulsar():
    assert paths.broker_path("broker-1:8080") == "/loadbalance/brokers/broker-1:8080"
    assert paths.LEADER_PATH == "/loadbalance/leader"
    assert (
        paths.ownership_path("public/default/0x00000000_0x40000000")
        == "/namespace/public/default/0x00000000_0x40000000"
    )
    assert (
        paths.ownership_path("pulsar/use/ns/0x00000000_0xffffffff")
        == "/namespace/pulsar/use/ns/0x00000000_0xffffffff"
    )
    assert paths.policies_path("t/ns") == "/admin/policies/t/ns"
    assert paths.local_policies_path("t/ns") == "/admin/local-policies/t/ns"
    assert (
        paths.bundle_data_path("t/ns/0x00000000_0x40000000")
        == "/loadbalance/bundle-data/t/ns/0x00000000_0x40000000"
    )
    assert paths.broker_time_average_path("b:8080") == "/loadbalance/broker-time-average/b:8080"
    assert paths.isolation_policies_path("use") == "/admin/clusters/use/namespaceIsolationPolicies"
    assert paths.failure_domain_path("use", "rack-1") == "/admin/clusters/use/failureDomain/rack-1"
    assert (
        paths.partitioned_topic_path("persistent://t/ns/my topic")
        == "/admin/partitioned-topics/t/ns/persistent/my+topic"
    )
    assert (
        str(paths.bundle_of_ownership_path("/namespace/t/ns/0x00000000_0x40000000"))
        == "t/ns/0x00000000_0x40000000"
    )
    assert paths.broker_id_of_path("/loadbalance/brokers/b:1") == "b:1"


@pytest.mark.parametrize("bad", ["", "a/b", "..", None])
def test_bad_broker_ids(bad):
    with pytest.raises(InvalidInputError, match="broker id"):
        paths.broker_path(bad)


def test_bad_ownership_paths():
    with pytest.raises(InvalidInputError):
        paths.bundle_of_ownership_path("/elsewhere/t/ns/0x00000000_0x40000000")
    with pytest.raises(InvalidBundleRangeError):
        paths.ownership_path("t/ns/not-a-range")


def test_namespace_ephemeral_data_json():
    data = NamespaceEphemeralData(
        "pulsar://b:6650", "pulsar+ssl://b:6651", "http://b:8080", "https://b:8443", advertised_listeners={}
    )
    assert data.to_json() == {
        "nativeUrl": "pulsar://b:6650",
        "nativeUrlTls": "pulsar+ssl://b:6651",
        "httpUrl": "http://b:8080",
        "httpUrlTls": "https://b:8443",
        "disabled": False,
        "advertisedListeners": {},
    }
    assert NamespaceEphemeralData.from_bytes(data.to_bytes()) == data
    assert data.broker_id == "b:8080" and data.with_disabled().disabled
    pulsar_written = {
        "nativeUrl": "pulsar://b:6650",
        "httpUrl": "http://b:8080",
        "disabled": True,
        "advertisedListeners": {"internal": {"brokerServiceUrl": "pulsar://10.0.0.1:6650"}},
    }
    parsed = NamespaceEphemeralData.from_json(pulsar_written)
    assert (
        parsed.disabled
        and parsed.advertised_listeners["internal"].broker_service_url == "pulsar://10.0.0.1:6650"
    )
    assert parsed.to_json() == pulsar_written


def test_leader_json_and_the_old_format():
    leader = LeaderBroker("b:8080", "http://b:8080")
    assert json.loads(leader.to_bytes()) == {"brokerId": "b:8080", "serviceUrl": "http://b:8080"}
    assert LeaderBroker.from_json({"serviceUrl": "http://old:8080"}).broker_id == "old:8080"


def test_local_policies_keep_unknown_fields():
    raw = {
        "bundles": {"boundaries": ["0x00000000", "0xffffffff"], "numBundles": 1},
        "bookieAffinityGroup": {"bookkeeperAffinityGroupPrimary": "g"},
        "namespaceAntiAffinityGroup": "aa",
        "migrated": True,
    }
    local = LocalPolicies.from_json(raw)
    assert local.namespace_anti_affinity_group == "aa" and local.extra == {"migrated": True}
    assert local.to_json() == raw
    two = local.with_bundles(NamespaceBundles.create("t/ns", 2))
    assert two.to_json()["bundles"]["numBundles"] == 2 and two.to_json()["migrated"] is True
    assert len(LocalPolicies().namespace_bundles("t/ns")) == 1  # Pulsar's LocalPolicies default


def test_policies_keep_every_other_field():
    raw = {
        "auth_policies": {},
        "replication_clusters": ["use"],
        "bundles": {"numBundles": 4},
        "deleted": False,
    }
    pol = Policies.from_json(raw)
    assert len(pol.namespace_bundles("t/ns")) == 4
    assert pol.to_json() == raw


def test_isolation_policy_json_and_validation():
    raw = {
        "namespaces": ["t/ns.*"],
        "primary": ["broker-[12].*"],
        "secondary": ["broker-3.*"],
        "auto_failover_policy": {
            "policy_type": "min_available",
            "parameters": {"min_limit": "1", "usage_threshold": "80"},
        },
    }
    policy = NamespaceIsolationData.from_json(raw)
    assert policy.to_json() == raw and policy.auto_failover_policy.min_limit == 1
    assert policy.matches_namespace("t/ns-1") and not policy.matches_namespace("x/t/ns")
    all_policies = NamespaceIsolationPolicies.from_json({"p1": raw})
    assert all_policies.policy_for("t/ns") == ("p1", policy)
    with pytest.raises(InvalidInputError, match="primary"):
        NamespaceIsolationData.from_json({**raw, "primary": []})
    with pytest.raises(InvalidInputError, match="does not compile"):
        NamespaceIsolationData.from_json({**raw, "namespaces": ["("]})
    with pytest.raises(InvalidInputError, match="auto_failover_policy"):
        NamespaceIsolationData.from_json({k: v for k, v in raw.items() if k != "auto_failover_policy"})
    with pytest.raises(InvalidInputError, match="policy_type"):
        AutoFailoverPolicy("max_available")
    with pytest.raises(InvalidInputError, match="min_limit"):
        AutoFailoverPolicy(parameters={"min_limit": "x", "usage_threshold": "80"})


def test_failure_domain_json():
    assert FailureDomain(frozenset({"b:2", "b:1"})).to_json() == {"brokers": ["b:1", "b:2"]}
    assert FailureDomain.from_json({"brokers": ["x:1"]}).brokers == {"x:1"}


def test_corrupt_stored_values_name_the_path():
    with pytest.raises(CorruptMetadataError, match="/namespace/t/ns/r") as err:
        NamespaceEphemeralData.from_bytes(b"{not json", "/namespace/t/ns/r")
    assert err.value.path == "/namespace/t/ns/r"
    with pytest.raises(CorruptMetadataError, match="disabled"):
        NamespaceEphemeralData.from_bytes(b'{"disabled": "yes"}', "/p")
    with pytest.raises(CorruptMetadataError):
        decode_json(b"\xff", "/p")


def test_encode_json_accepts_bytes_dicts_and_records():
    assert encode_json(b"raw") == b"raw"
    assert encode_json({"a": 1}) == b'{"a":1}'
    assert encode_json(LeaderBroker("b:1", "http://b:1")) == b'{"brokerId":"b:1","serviceUrl":"http://b:1"}'

    class WithJsonText:
        def to_json(self):
            return '{"x": 1}'

    assert encode_json(WithJsonText()) == b'{"x": 1}'
    with pytest.raises(InvalidInputError):
        encode_json({"nan": float("nan")})
