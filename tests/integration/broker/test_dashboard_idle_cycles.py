"""What moved and why stays at a glance: the dashboard in headless Chromium, a shedding move, then two
minutes of idle leader cycles.

The brokers run on one injected :class:`~brokerlb.clock.ManualClock`: the test moves time (shedding
every 6 s, reports, leases) instead of waiting two minutes. Before, every idle cycle added a
"Skip/Balanced" entry and the panel kept the last 15: the move scrolled away after about 90 s, and
it read ``Admin`` whenever its cycle's record was missing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.broker.data.synthetic import SyntheticClients
from brokerlb.broker.data.topics import TopicStats
from brokerlb.broker.service import BrokerService
from brokerlb.broker.standalone import standalone_config
from brokerlb.broker.wiring import build_broker
from brokerlb.clock import ManualClock
from brokerlb.config import ServiceConfig
from brokerlb.testing.browser import artifacts_dir, async_headless_chromium

from .helpers import new_namespace, topics_of

pytestmark = [pytest.mark.asyncio(loop_scope="package"), pytest.mark.browser]

SETTINGS = {
    "loadBalancerSheddingIntervalMinutes": 0.1,  # 6 s
    "loadBalancerSheddingGracePeriodMinutes": 0.5,
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.01,
    "loadBalancerLoadSheddingStrategy": "OverloadShedder",
    "loadBalancerDistributeBundlesEvenlyEnabled": False,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 10_000,
}
WAIT_MS = 30_000


async def until(
    clock: ManualClock, task: asyncio.Future[object] | asyncio.Task[object], step: float = 0.2
) -> object:
    """Move the clock in small steps (letting real I/O run between them) until ``task`` is done."""
    while not task.done():
        await clock.advance_and_settle(step)
        await asyncio.sleep(0.005)
    return task.result()


async def run_for(clock: ManualClock, seconds: float, step: float = 0.5) -> None:
    for _ in range(round(seconds / step)):
        await clock.advance_and_settle(step)
        await asyncio.sleep(0.005)


async def test_a_shedding_move_stays_visible_with_its_cause_after_two_minutes_of_idle_cycles() -> None:
    clock = ManualClock(1_800_000_000_000)
    store = f"memory:dash-idle-{uuid.uuid4().hex[:8]}"
    base = ServiceConfig().with_overrides({**SETTINGS, "clusterName": "e2e"})
    brokers: list[BrokerService] = []
    clients = None
    try:
        for i in range(3):
            conf = standalone_config(base, i, metadata_store=store, web_port=0, broker_port=0)
            broker = await until(clock, asyncio.ensure_future(build_broker(conf, clock=clock)))
            assert isinstance(broker, BrokerService)
            brokers.append(broker)
            await until(clock, asyncio.ensure_future(broker.start()))
        leader = await until(clock, asyncio.ensure_future(_leader(brokers, clock)))
        assert isinstance(leader, BrokerService)
        ns = new_namespace("dashidle")
        async with AsyncAdminClient(brokers[0].url) as admin:
            await admin.create_namespace(ns, num_bundles=6)
        clients = SyntheticClients(brokers)
        await until(
            clock,
            asyncio.ensure_future(
                clients.add_many({t: TopicStats(msg_rate_in=10) for t in topics_of(ns, 60)})
            ),
        )
        placement = clients.placement()
        hot, count = Counter(placement.values()).most_common(1)[0]
        rate = 0.95 * 10_000 / count  # the hot broker's topics make its modelled CPU 95 %
        for topic, broker in placement.items():
            if broker == hot:
                clients.set_stats(topic, TopicStats(msg_rate_in=rate, msg_throughput_in=rate * 20_000))

        def moved_off_hot() -> bool:
            return any(
                done and move.source == hot
                for record in leader.leader_tasks.records
                for move, done in zip(record.moves, record.moves_done, strict=True)
            )

        for _ in range(120):  # up to 60 s of clock time for the shedding cycle that moves
            if moved_off_hot():
                break
            await run_for(clock, 0.5)
        assert moved_off_hot(), [r.decision_keys() for r in list(leader.leader_tasks.records)[-3:]]
        # calm the cluster down: the traffic goes, every later cycle is idle
        for topic in placement:
            clients.set_stats(topic, TopicStats(msg_rate_in=1))
        await run_for(clock, 120.0)  # two minutes of 6-s shedding cycles

        async with async_headless_chromium() as browser:
            page = await browser.new_page(viewport={"width": 1500, "height": 1200})
            await page.goto(f"{brokers[1].url}/dashboard", wait_until="load")
            move = page.locator("#moves tr[data-category='shedding'][data-cause='Overloaded']").first
            await move.wait_for(timeout=WAIT_MS)
            assert "shedding · Overloaded" in await move.inner_text()
            assert hot in await move.inner_text()
            # the cycle that moved is listed before the idle ones, which are collapsed with their count
            first = page.locator("#cycles .cycle").first
            assert "moved" in await first.inner_text() and "Overloaded" in await first.inner_text()
            idle = page.locator("#cycles .cycle.idle")
            counts = [
                int(await idle.nth(i).get_attribute("data-count") or 0) for i in range(await idle.count())
            ]
            assert sum(counts) >= 18 and max(counts) >= 10, counts  # ~20 cycles in a few lines
            assert await page.locator("#cycles .cycle").count() <= 20
            # the story opens where the bundle is clicked
            await move.locator("a").click()
            await page.wait_for_function(
                "() => document.querySelectorAll('#story li').length > 0", timeout=WAIT_MS
            )
            assert await page.locator("#story-section.inline").count() == 1
            await page.screenshot(
                path=str(artifacts_dir("dashboard") / "5-move-after-idle-cycles.png"), full_page=True
            )
    finally:
        if clients is not None:
            await clients.close()
        for broker in brokers:
            await until(clock, asyncio.ensure_future(broker.stop()))


async def _leader(brokers: list[BrokerService], clock: ManualClock) -> BrokerService:
    while True:
        found = next((b for b in brokers if b.is_leader), None)
        if found is not None:
            return found
        await asyncio.sleep(0.01)
