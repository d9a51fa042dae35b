"""Candidate filters: topic counts, even spread, load-manager class, broker version; semver."""

import pytest

from brokerlb.loadbalance.placement.filters import (
    broker_version_filter,
    filter_brokers_with_large_topic_count,
    latest_version,
    load_manager_class_filter,
    remove_most_servicing_brokers_for_namespace,
)
from brokerlb.loadbalance.placement.semver import build_aware_key, parse_version

MODULAR = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
EXTENSIBLE = "org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"


def test_large_topic_count_filter_keeps_all_when_all_are_over() -> None:
    topics = {"b1": 10, "b2": 60, "b3": 50}
    assert filter_brokers_with_large_topic_count(["b1", "b2", "b3", "b4"], topics, 50) == ["b1", "b3", "b4"]
    assert filter_brokers_with_large_topic_count(["b2"], topics, 50) == ["b2"]


def test_remove_most_servicing_brokers() -> None:
    """Pulsar's LoadManagerSharedTest.testRemoveMostServicingBrokersForNamespace."""
    assert remove_most_servicing_brokers_for_namespace([], {}) == []
    assert remove_most_servicing_brokers_for_namespace(["broker1"], {}) == ["broker1"]
    assert remove_most_servicing_brokers_for_namespace(["broker1"], {"broker1": 1}) == ["broker1"]
    assert remove_most_servicing_brokers_for_namespace(["broker1", "broker2"], {"broker1": 1}) == ["broker2"]
    counts = {"broker1": 1, "broker2": 1}
    assert remove_most_servicing_brokers_for_namespace(["broker1", "broker2"], counts) == [
        "broker1",
        "broker2",
    ]
    counts["broker2"] = 2
    assert remove_most_servicing_brokers_for_namespace(["broker1", "broker2"], counts) == ["broker1"]
    counts["broker3"] = 1
    assert remove_most_servicing_brokers_for_namespace(["broker1", "broker2", "broker3"], counts) == [
        "broker1",
        "broker3",
    ]


def test_load_manager_class_filter() -> None:
    """Pulsar's (modular) BrokerLoadManagerClassFilterTest: a null class name is dropped."""
    classes = {"broker1": MODULAR, "broker2": EXTENSIBLE, "broker3": None}
    brokers = ["broker1", "broker2", "broker3"]
    assert load_manager_class_filter(brokers, classes.get, MODULAR) == ["broker1"]
    assert load_manager_class_filter(brokers, classes.get, EXTENSIBLE) == ["broker2"]
    assert load_manager_class_filter(brokers, classes.get, "ModularLoadManagerImpl") == ["broker1"]


def test_version_filter() -> None:
    """Pulsar's BrokerVersionFilterTest: 1.1.0-SNAPSHOT x2 and 1.2.0-SNAPSHOT keep one broker."""
    versions = {"broker1": "1.1.0-SNAPSHOT", "broker2": "1.1.0-SNAPSHOT", "broker3": "1.2.0-SNAPSHOT"}
    latest = latest_version(list(versions), versions.get)
    assert (latest.major, latest.minor, latest.patch) == (1, 2, 0)
    assert broker_version_filter(list(versions), versions.get, True).kept == ["broker3"]
    assert broker_version_filter(list(versions), versions.get, False).kept == list(versions)


@pytest.mark.parametrize("bad", [None, "", "1.2", "v1.2.0", "1.02.0"])
def test_version_filter_fails_on_missing_or_bad_versions(bad) -> None:
    versions = {"broker1": "1.1.0", "broker2": bad}
    result = broker_version_filter(["broker1", "broker2"], versions.get, True)
    assert result.failure is not None and "broker2" in result.failure
    assert result.kept == ["broker1", "broker2"]


def test_semver_precedence_and_build_metadata() -> None:
    order = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "2.0.0",
        "2.1.0",
        "2.1.1",
        "10.0.0",
    ]
    parsed = [parse_version(v) for v in order]
    assert sorted(parsed, key=lambda v: v.precedence_key()) == parsed
    a, b = parse_version("1.2.0+a"), parse_version("1.2.0")
    assert a.precedence_key() == b.precedence_key()
    assert build_aware_key(b) < build_aware_key(a)
    assert str(parse_version("3.1.0-SNAPSHOT+build.7")) == "3.1.0-SNAPSHOT+build.7"
    versions = {"b1": "1.2.0", "b2": "1.2.0+exp"}
    assert broker_version_filter(["b1", "b2"], versions.get, True).kept == ["b1", "b2"]
