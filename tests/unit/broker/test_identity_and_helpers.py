"""Broker identity from config, LookupData JSON, single-flight, placement rules, redirects, lookup paths."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.broker.http.lookup_routes import parse_bool, topic_from_segments
from brokerlb.broker.http.redirects import redirect_location
from brokerlb.broker.identity import BrokerIdentity, parse_advertised_listeners
from brokerlb.broker.leader.load_manager import LoadManager
from brokerlb.broker.ownership.redirect import Redirect
from brokerlb.broker.ownership.singleflight import SingleFlight
from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig
from brokerlb.errors import (
    InvalidConfigError,
    InvalidInputError,
    InvalidTopicNameError,
    ServiceUnavailableError,
)
from brokerlb.loadbalance.decisions import PlacementDecision
from brokerlb.loadbalance.leader import ClusterInputs
from brokerlb.loadbalance.refresh import LeaderLoadState
from brokerlb.ring import NamespaceBundle
from brokerlb.testing.waiting import eventually


def test_identity_follows_pulsar_keys() -> None:
    conf = ServiceConfig(
        clusterName="c1",
        advertisedAddress="10.0.0.5",
        webServicePort=8081,
        brokerServicePort=6651,
        advertisedListeners="internal:pulsar://10.1.0.5:6650,internal:pulsar+ssl://10.1.0.5:6651",
    )
    ident = BrokerIdentity.from_config(conf)
    assert ident.broker_id == "10.0.0.5:8081" and ident.cluster == "c1"
    assert ident.lookup_data() == {
        "brokerUrl": "pulsar://10.0.0.5:6651",
        "httpUrl": "http://10.0.0.5:8081",
        "nativeUrl": "pulsar://10.0.0.5:6651",
        "brokerUrlSsl": "",
    }
    internal = ident.lookup_data("internal")
    assert (
        internal["brokerUrl"] == "pulsar://10.1.0.5:6650"
        and internal["brokerUrlTls"] == "pulsar+ssl://10.1.0.5:6651"
    )
    assert BrokerIdentity.from_config(conf, web_port=9999).broker_id == "10.0.0.5:9999"


def test_identity_needs_a_cluster_and_a_web_port() -> None:
    with pytest.raises(InvalidConfigError, match="clusterName"):
        BrokerIdentity.from_config(ServiceConfig(advertisedAddress="h"))
    with pytest.raises(InvalidConfigError, match="webServicePort"):
        BrokerIdentity.from_config(ServiceConfig(clusterName="c", advertisedAddress="h", webServicePort=None))


@pytest.mark.parametrize("text", ["internal", "internal:http://h:1", "x:pulsar://h:1,x:pulsar://h:2"])
def test_bad_advertised_listeners(text: str) -> None:
    with pytest.raises(InvalidConfigError, match="advertisedListeners"):
        parse_advertised_listeners(text)


async def test_single_flight_shares_one_run_and_its_failure() -> None:
    flights: SingleFlight[str, int] = SingleFlight()
    runs = 0
    release = asyncio.Event()

    async def work() -> int:
        nonlocal runs
        runs += 1
        await release.wait()  # still running while the other callers arrive
        return 7

    callers = asyncio.gather(*(flights.run("k", work) for _ in range(10)))
    await eventually(lambda: runs == 1 and len(flights) == 1, message="the first caller runs the work")
    release.set()
    assert await callers == [7] * 10
    assert runs == 1 and len(flights) == 0

    async def fail() -> int:
        await release.wait()
        raise ValueError("nope")

    release.clear()
    failing = asyncio.gather(*(flights.run("k", fail) for _ in range(3)), return_exceptions=True)
    await eventually(lambda: len(flights) == 1, message="the failing work runs")
    release.set()
    results = await failing
    assert len(results) == 3 and all(isinstance(r, ValueError) for r in results)


BUNDLE = NamespaceBundle.parse("t/ns/0x00000000_0x80000000")


async def test_a_bundle_being_merged_is_not_placed_until_unblocked() -> None:
    placed: list[str] = []

    class Leader:
        refreshes = 1

        def place(self, now_ms, bundle, inputs):
            placed.append(bundle)
            return PlacementDecision(bundle, "b1:8080", ("b1:8080",))

    class Inputs:
        def current(self):
            return ClusterInputs(reports={})

    manager = LoadManager(Leader(), Inputs(), bundles=None, load_data_store=None, clock=ManualClock())
    manager.leader.load_state = LeaderLoadState()
    manager.block([str(BUNDLE)], "being merged")
    with pytest.raises(ServiceUnavailableError, match="being merged"):
        await manager.place(BUNDLE)
    assert placed == []
    manager.unblock([str(BUNDLE)])
    assert await manager.place(BUNDLE) == "b1:8080"


def test_redirect_replaces_host_and_authoritative_and_keeps_the_rest() -> None:
    location = redirect_location(
        Redirect("http://b2:8080/", True),
        b"/admin/v2/namespaces/t/ns/0x00000000_0x80000000/split",
        b"unload=true&authoritative=false&splitAlgorithmName=range_equally_divide",
    )
    assert location == (
        "http://b2:8080/admin/v2/namespaces/t/ns/0x00000000_0x80000000/split"
        "?unload=true&splitAlgorithmName=range_equally_divide&authoritative=true"
    )


def test_lookup_path_segments() -> None:
    assert str(topic_from_segments("persistent", "t", "ns", "my+topic")) == "persistent://t/ns/my topic"
    with pytest.raises(InvalidTopicNameError, match="without '/'"):  # a v2 local name has no '/'
        topic_from_segments("persistent", "t", "ns", "a%2Fb")
    assert str(topic_from_segments("non-persistent", "t", "ns", "a%20b")) == "non-persistent://t/ns/a b"
    with pytest.raises(InvalidTopicNameError):
        topic_from_segments("durable", "t", "ns", "x")
    with pytest.raises(InvalidTopicNameError):
        topic_from_segments("persistent", "t", "n$s", "x")
    assert parse_bool("TRUE", "a") is True and parse_bool(None, "a") is False
    with pytest.raises(InvalidInputError, match="authoritative"):
        parse_bool("yes", "authoritative")
