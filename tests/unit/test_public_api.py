"""The public API: names re-exported from ``brokerlb`` and the purity of the core."""

from __future__ import annotations

import doctest
import importlib
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import brokerlb

EXPECTED_TOP_LEVEL = {
    "BrokerLBError",
    "NamespaceBundle",
    "NamespaceBundles",
    "NamespaceName",
    "TopicName",
    "__version__",
    "topic_hash",
}


def test_top_level_all_is_pinned():
    assert set(brokerlb.__all__) == EXPECTED_TOP_LEVEL
    for name in brokerlb.__all__:
        assert hasattr(brokerlb, name), name


def test_issue_2_api_shape():
    from brokerlb import NamespaceBundles, NamespaceName, TopicName

    t = TopicName.parse("my-topic")
    assert (t.domain, t.tenant, str(t.namespace), t.local_name, t.partition_index) == (
        "persistent",
        "public",
        "public/default",
        "my-topic",
        -1,
    )
    assert isinstance(t.namespace, NamespaceName)
    nb = NamespaceBundles.from_boundaries("public/default", ["0x00000000", 0x80000000, "0xffffffff"])
    assert nb.boundaries == [0, 0x80000000, 0xFFFFFFFF]
    b = nb.find_bundle(t)
    assert str(b) == "public/default/0x00000000_0x80000000" and b.range == "0x00000000_0x80000000"
    assert nb.to_json() == {"boundaries": ["0x00000000", "0x80000000", "0xffffffff"], "numBundles": 2}
    assert len(nb.split(b, [0x40000000])) == 3
    assert nb.split(b, [0x40000000]).merge(["0x00000000_0x40000000", "0x40000000_0x80000000"]) == nb


#: Modules of the pure core: they must not pull in I/O libraries.
PURE_MODULES = [
    "brokerlb",
    "brokerlb.naming",
    "brokerlb.ring",
    "brokerlb.model",
    "brokerlb.config",
    "brokerlb.errors",
    "brokerlb.clock",
    "brokerlb.java_hash",
]
OPTIONAL_PURE = [
    "brokerlb.loadbalance",
    "brokerlb.loadbalance.leader",
    "brokerlb.loadbalance.cycle",
    "brokerlb.ownership",
    "brokerlb.dispatch",
    "brokerlb.kafka.assignors",
    "brokerlb.kafka.hashing",
    "brokerlb.kafka.checker",
    "brokerlb.kafka.reconciliation",
    "brokerlb.history",
    "brokerlb.messaging",
    "brokerlb.mledger",
]
FORBIDDEN = [
    "asyncio",
    "kazoo",
    "httpx",
    "fastapi",
    "starlette",
    "uvicorn",
    "pyspark",
    "matplotlib",
    "socket",
    "aiohttp",
    "websockets",
    "pandas",
]


def _imported_after(module: str) -> set[str]:
    code = (
        f"import sys, importlib; before = set(sys.modules); importlib.import_module({module!r}); "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split())


@pytest.mark.parametrize("module", PURE_MODULES + OPTIONAL_PURE)
def test_core_imports_no_io_library(module):
    try:
        __import__(module)
    except ModuleNotFoundError:
        pytest.skip(f"{module} not built yet")
    loaded = _imported_after(module)
    bad = sorted(m for m in loaded if m.split(".")[0] in FORBIDDEN)
    assert not bad, f"{module} imports I/O libraries: {bad}"


# ------------------------------------------------------------------ API for embedding and checks
# docs/api.md lists the names an embedding program or an outside check (replaying Pulsar's own
# test scenarios) calls; they are pinned here -- the exports, the parameter names, and that the
# page mentions each one and its examples run.

DOCS_API = Path(__file__).parents[2] / "docs" / "api.md"

PINNED_EXPORTS = {
    "brokerlb.naming": {"TopicName", "NamespaceName", "is_blank", "PARTITIONED_TOPIC_SUFFIX"},
    "brokerlb.ring": {
        "topic_hash",
        "NamespaceBundle",
        "NamespaceBundles",
        "split_boundaries",
        "get_split_algorithm",
        "resolve_split_algorithm",
        "BundleSplitOption",
        "TopicRates",
        "RANGE_EQUALLY_DIVIDE",
        "TOPIC_COUNT_EQUALLY_DIVIDE",
        "SPECIFIED_POSITIONS_DIVIDE",
        "SPECIFIED_POSITIONS_DIVIDE_FORCE",
        "FLOW_OR_QPS_EQUALLY_DIVIDE",
        "SUPPORTED_SPLIT_ALGORITHMS",
    },
    "brokerlb.model": {
        "ResourceUsage",
        "SystemResourceUsage",
        "ResourceWeights",
        "LocalBrokerData",
        "NamespaceBundleStats",
        "BundleData",
        "TimeAverageMessageData",
        "BrokerLoadData",
        "TopBundlesLoadData",
        "top_k_bundles",
    },
    "brokerlb.loadbalance.placement.filters": {
        "FilterResult",
        "filter_brokers_with_large_topic_count",
        "remove_most_servicing_brokers_for_namespace",
        "load_manager_class_filter",
        "broker_version_filter",
        "latest_version",
    },
    "brokerlb.loadbalance.placement.isolation": {"apply_namespace_policies", "IsolationResult"},
    "brokerlb.loadbalance.placement.anti_affinity": {
        "anti_affinity_namespace_counts",
        "anti_affinity_bundle_counts",
        "filter_anti_affinity_group_owned_brokers",
        "should_anti_affinity_namespace_unload",
        "anti_affinity_can_unload",
    },
}

#: "module:Qualified.name" -> its parameter names, in order.
PINNED_SIGNATURES = {
    "brokerlb.naming:TopicName.parse": ["name"],
    "brokerlb.naming:TopicName.partition": ["self", "index"],
    "brokerlb.naming:TopicName.partition_index_of": ["name"],
    "brokerlb.naming:NamespaceName.parse": ["name"],
    "brokerlb.naming:is_blank": ["text"],
    "brokerlb.ring:topic_hash": ["full_name"],
    "brokerlb.ring:NamespaceBundle.__init__": ["self", "namespace", "lower", "upper"],
    "brokerlb.ring:NamespaceBundle.parse": ["name"],
    "brokerlb.ring:NamespaceBundle.includes": ["self", "topic"],
    "brokerlb.ring:NamespaceBundle.includes_hash": ["self", "h"],
    "brokerlb.ring:NamespaceBundle.compare_to": ["self", "other"],
    "brokerlb.ring:NamespaceBundles.create": ["namespace", "num_bundles"],
    "brokerlb.ring:NamespaceBundles.from_boundaries": ["namespace", "boundaries"],
    "brokerlb.ring:NamespaceBundles.from_json": ["namespace", "data", "default_num_bundles"],
    "brokerlb.ring:NamespaceBundles.find_bundle": ["self", "topic"],
    "brokerlb.ring:NamespaceBundles.get_bundle": ["self", "bundle"],
    "brokerlb.ring:NamespaceBundles.split": ["self", "bundle", "boundaries"],
    "brokerlb.ring:NamespaceBundles.merge": ["self", "bundles"],
    "brokerlb.ring:split_boundaries": [
        "algorithm",
        "bundle",
        "topics",
        "positions",
        "topic_rates",
        "max_msg_rate",
        "max_bandwidth_mbytes",
        "flow_or_qps_difference_threshold_percentage",
    ],
    "brokerlb.ring:get_split_algorithm": ["name", "supported"],
    "brokerlb.ring:resolve_split_algorithm": ["name", "default"],
    "brokerlb.model:LocalBrokerData.max_resource_usage": ["self", "include_memory"],
    "brokerlb.model:LocalBrokerData.max_resource_usage_with_weight": [
        "self",
        "cpu_weight",
        "memory_weight",
        "direct_memory_weight",
        "bandwidth_in_weight",
        "bandwidth_out_weight",
    ],
    "brokerlb.model:LocalBrokerData.max_resource_usage_with_weight_no_memory": [
        "self",
        "cpu_weight",
        "direct_memory_weight",
        "bandwidth_in_weight",
        "bandwidth_out_weight",
    ],
    "brokerlb.model:LocalBrokerData.max_resource_usage_with_weight_within_limit": [
        "self",
        "cpu_weight",
        "memory_weight",
        "direct_memory_weight",
        "bandwidth_in_weight",
        "bandwidth_out_weight",
    ],
    "brokerlb.model:LocalBrokerData.to_json": ["self", "include_memory_in_max"],
    "brokerlb.model:LocalBrokerData.from_json": ["data", "path"],
    "brokerlb.model:BrokerLoadData.update": [
        "self",
        "usage",
        "msg_throughput_in",
        "msg_throughput_out",
        "msg_rate_in",
        "msg_rate_out",
        "bundle_count",
        "topics",
        "now_ms",
        "weights",
        "history_percentage",
    ],
    "brokerlb.model:top_k_bundles": ["bundle_stats", "k", "excluded_namespaces", "has_policies"],
    "brokerlb.model:TopBundlesLoadData.of": ["bundle_stats", "k", "excluded_namespaces", "has_policies"],
    "brokerlb.loadbalance.placement.filters:filter_brokers_with_large_topic_count": [
        "candidates",
        "topics",
        "max_topics",
    ],
    "brokerlb.loadbalance.placement.filters:remove_most_servicing_brokers_for_namespace": [
        "candidates",
        "namespace_bundle_counts",
    ],
    "brokerlb.loadbalance.placement.filters:load_manager_class_filter": [
        "candidates",
        "class_of",
        "configured",
    ],
    "brokerlb.loadbalance.placement.filters:broker_version_filter": [
        "candidates",
        "version_of",
        "prefer_later_versions",
    ],
    "brokerlb.loadbalance.placement.filters:latest_version": ["candidates", "version_of"],
    "brokerlb.loadbalance.placement.isolation:apply_namespace_policies": [
        "namespace",
        "brokers",
        "policies",
        "non_persistent",
        "serves_domain",
        "shared_hosts",
    ],
    "brokerlb.loadbalance.placement.anti_affinity:anti_affinity_namespace_counts": [
        "group",
        "broker_namespaces",
        "group_of",
    ],
    "brokerlb.loadbalance.placement.anti_affinity:anti_affinity_bundle_counts": [
        "group",
        "ownership",
        "group_of",
        "namespace_of",
    ],
    "brokerlb.loadbalance.placement.anti_affinity:filter_anti_affinity_group_owned_brokers": [
        "candidates",
        "counts",
        "broker_domain",
        "failure_domains_enabled",
    ],
    "brokerlb.loadbalance.placement.anti_affinity:should_anti_affinity_namespace_unload": [
        "current_broker",
        "candidates",
        "counts",
    ],
    "brokerlb.loadbalance.snapshot:parse_snapshot": ["data", "now_ms", "warn"],
}

#: Attributes (properties and fields) of instances.
PINNED_ATTRIBUTES = {
    "brokerlb.naming:TopicName": [
        "domain",
        "tenant",
        "namespace",
        "local_name",
        "partition_index",
        "is_partitioned",
        "partitioned_topic_name",
        "is_persistent",
        "is_v2",
        "lookup_name",
        "encoded_local_name",
    ],
    "brokerlb.ring:NamespaceBundle": [
        "namespace",
        "lower",
        "upper",
        "range",
        "upper_inclusive",
        "can_split",
        "size",
    ],
    "brokerlb.model:BrokerLoadData": [
        "max_resource_usage",
        "weighted_max_ema",
        "msg_throughput_ema",
        "updated_at",
    ],
}


def _resolve(target: str) -> object:
    module_name, _, qualified = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualified.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("module", sorted(PINNED_EXPORTS))
def test_pinned_exports(module: str) -> None:
    exported = set(importlib.import_module(module).__all__)
    assert PINNED_EXPORTS[module] <= exported, sorted(PINNED_EXPORTS[module] - exported)


@pytest.mark.parametrize("target", sorted(PINNED_SIGNATURES))
def test_pinned_signatures(target: str) -> None:
    assert list(inspect.signature(_resolve(target)).parameters) == PINNED_SIGNATURES[target]  # type: ignore[arg-type]


def test_pinned_attributes() -> None:
    from brokerlb import NamespaceBundle, TopicName
    from brokerlb.model import BrokerLoadData

    instances = {
        "brokerlb.naming:TopicName": TopicName.parse("t/ns/a-partition-1"),
        "brokerlb.ring:NamespaceBundle": NamespaceBundle.parse("t/ns/0x00000000_0xffffffff"),
        "brokerlb.model:BrokerLoadData": BrokerLoadData(),
    }
    for target, names in PINNED_ATTRIBUTES.items():
        for name in names:
            assert hasattr(instances[target], name), f"{target}.{name}"


def test_the_api_page_names_every_pinned_name() -> None:
    text = DOCS_API.read_text(encoding="utf-8")
    names = {n for exports in PINNED_EXPORTS.values() for n in exports}
    names |= {target.rpartition(":")[2].rpartition(".")[2] for target in PINNED_SIGNATURES}
    names |= {n for attrs in PINNED_ATTRIBUTES.values() for n in attrs}
    names.discard("__init__")
    missing = sorted(n for n in names if n not in text)
    assert not missing, missing


def test_the_api_page_examples_run() -> None:
    result = doctest.testfile(str(DOCS_API), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 30 and result.failed == 0
