"""The load reporter: Pulsar's report-update rule, forced writes, connected-only writes."""

from __future__ import annotations

from brokerlb.broker.data.topics import TopicRegistry, TopicStats
from brokerlb.broker.identity import BrokerIdentity
from brokerlb.broker.report.reporter import LoadReporter
from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig
from brokerlb.model import LocalBrokerData, SystemResourceUsage
from brokerlb.ring import NamespaceBundles
from brokerlb.testing import system_usage

BUNDLES = NamespaceBundles.create("t/ns", 2)
CONF = ServiceConfig(
    clusterName="c",
    advertisedAddress="b1",
    webServicePort=8080,
    loadBalancerHostUsageCheckIntervalMinutes=0.001,
)


class Host:
    def __init__(self) -> None:
        self.usage = system_usage(cpu=10)

    def sample(self) -> SystemResourceUsage:
        return self.usage


def make(owned: list[str] | None = None, conf: ServiceConfig = CONF):
    clock = ManualClock(1_000_000)
    host = Host()
    topics = TopicRegistry(lambda t: str(BUNDLES.find_bundle(t)))
    written: list[dict] = []
    connected = {"yes": True}

    async def publish(data: LocalBrokerData) -> None:
        written.append(data.to_json())

    reporter = LoadReporter(
        BrokerIdentity.from_config(conf),
        conf,
        host_usage=host,
        topics=topics,
        owned_bundles=lambda: owned or [],
        publish=publish,
        connected=lambda: connected["yes"],
        clock=clock,
    )
    return reporter, clock, host, topics, written, connected


async def test_first_report_has_identity_and_idle_owned_bundles() -> None:
    owned = [str(BUNDLES.bundles[0])]
    reporter, clock, _host, _topics, written, _c = make(owned)
    decision = await reporter.write_if_needed()
    assert decision.write and decision.reason == "threshold"  # 0 -> 1 bundle is an infinite change
    report = written[-1]
    assert report["webServiceUrl"] == "http://b1:8080" and report["pulsarServiceUrl"] == "pulsar://b1:6650"
    assert report["bundles"] == owned and report["numBundles"] == 1
    assert report["lastBundleGains"] == owned
    assert report["lastUpdate"] == clock.now_ms()
    assert report["loadManagerClassName"].endswith("ModularLoadManagerImpl")
    assert reporter.local_data.last_bundle_gains == set()  # cleaned after the write


async def test_small_changes_wait_for_the_max_interval() -> None:
    reporter, clock, host, _topics, written, _c = make()
    await reporter.write_if_needed(force=True)
    writes = len(written)
    clock.advance(10)
    host.usage = system_usage(cpu=15)  # +5 points of max usage < 10% threshold
    assert not (await reporter.write_if_needed()).write
    clock.advance(15 * 60)  # loadBalancerReportUpdateMaxIntervalMinutes
    decision = await reporter.write_if_needed()
    assert decision.write and decision.reason == "max-interval"
    assert len(written) == writes + 1


async def test_a_big_change_or_a_forced_update_writes_at_once() -> None:
    reporter, clock, host, topics, written, _c = make()
    await reporter.write_if_needed(force=True)
    clock.advance(1)
    host.usage = system_usage(cpu=40)
    assert (await reporter.write_if_needed()).reason == "threshold"
    clock.advance(1)
    reporter.force_update()
    assert (await reporter.write_if_needed()).reason == "forced"
    clock.advance(1)
    assert not (await reporter.write_if_needed()).write  # the force is spent


async def test_topic_traffic_reaches_the_report() -> None:
    reporter, clock, _host, topics, written, _c = make()
    topics.attach("persistent://t/ns/a", stats=TopicStats(msg_rate_in=100, msg_throughput_in=1e5))
    await reporter.write_if_needed()
    report = written[-1]
    assert report["msgRateIn"] == 100 and report["numTopics"] == 1
    assert sum(s["topics"] for s in report["lastStats"].values()) == 1


async def test_no_write_while_disconnected() -> None:
    reporter, clock, host, _topics, written, connected = make()
    await reporter.write_if_needed(force=True)
    connected["yes"] = False
    clock.advance(1)
    host.usage = system_usage(cpu=90)
    assert (await reporter.write_if_needed()).write  # the rule says write ...
    assert len(written) == 1  # ... but nothing is written without a session
    connected["yes"] = True
    await reporter.write_if_needed()
    assert len(written) == 2


async def test_idle_owned_bundles_can_be_left_out_as_in_pulsar() -> None:
    conf = CONF.with_overrides({"brokerlbReportOwnedIdleBundles": False})
    reporter, _clock, _host, _topics, written, _c = make([str(BUNDLES.bundles[0])], conf)
    reporter.force_update()
    await reporter.write_if_needed()
    assert written[-1]["bundles"] == []


async def test_the_report_loop_runs_on_the_clock() -> None:
    """Every loadBalancerReportUpdateMinIntervalMillis (5 s) the rule is checked; a forced update wakes
    the loop at once and is written FORCE_COALESCE_S later, so a burst of gains makes one write."""
    import asyncio

    from brokerlb.broker.report.reporter import FORCE_COALESCE_S

    reporter, clock, host, _topics, written, _c = make([str(BUNDLES.bundles[0])])
    loop = asyncio.create_task(reporter.run())
    await clock.settle()
    assert len(written) == 1  # the first report: 0 -> 1 bundle is an infinite change
    host.usage = system_usage(cpu=60)
    await clock.advance_and_settle(4.999)
    assert len(written) == 1
    await clock.advance_and_settle(0.001)  # the interval: the big change is written
    assert len(written) == 2
    reporter.force_update()
    reporter.force_update()  # a burst: one write
    await clock.advance_and_settle(FORCE_COALESCE_S - 0.001)
    assert len(written) == 2
    await clock.advance_and_settle(0.001)
    assert len(written) == 3 and written[-1]["lastUpdate"] == clock.now_ms()
    await clock.advance_and_settle(60)  # nothing changes: no writes until the max interval
    assert len(written) == 3
    loop.cancel()


async def test_usage_modelled_from_traffic_follows_the_traffic_from_the_first_report() -> None:
    """With brokerlbHostUsage=traffic the usage is the report's own traffic: sampled at every refresh,
    not once per loadBalancerHostUsageCheckIntervalMinutes (a minute by default), during which a
    standalone read 0.0 % while messages flowed."""
    from brokerlb.broker.report.traffic_usage import TrafficHostUsage

    conf = ServiceConfig(clusterName="c", advertisedAddress="b1", webServicePort=8080)  # a minute
    for from_traffic, expected in ((False, 0.0), (True, 20.0)):
        clock = ManualClock(1_000_000)
        topics = TopicRegistry(lambda t: str(BUNDLES.find_bundle(t)))
        made: list[LoadReporter] = []
        usage = TrafficHostUsage(
            lambda made=made: made[0].local_data_totals(), cores=1, msg_rate_per_core=500
        )

        async def publish(data: LocalBrokerData) -> None:
            pass

        reporter = LoadReporter(
            BrokerIdentity.from_config(conf),
            conf,
            host_usage=usage,
            topics=topics,
            owned_bundles=list,
            publish=publish,
            connected=lambda: True,
            clock=clock,
            usage_from_traffic=from_traffic,
        )
        made.append(reporter)
        reporter.refresh()  # at start: no traffic yet
        topics.attach("persistent://t/ns/a", stats=TopicStats(msg_rate_in=50, msg_rate_out=50))
        clock.advance(5)  # the next refresh, well within the minute
        assert reporter.refresh().cpu.percent_usage() == expected
