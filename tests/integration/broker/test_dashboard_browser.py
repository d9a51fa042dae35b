"""The live dashboard in real headless Chromium: brokers listed, bundles on the ring, a forced unload appears with
its reason, a bundle's story. Screenshots are kept in ``out/test-artifacts/dashboard`` (or
``$BROKERLB_TEST_ARTIFACTS/dashboard``) for a person to look at.
"""

from __future__ import annotations

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.testing.browser import artifacts_dir, async_headless_chromium, chromium_available
from brokerlb.testing.clusters import InProcessCluster

from .helpers import FAST_SHEDDING, lookup_data, new_namespace, overload_one_broker, topics_of

pytestmark = [
    pytest.mark.asyncio(loop_scope="package"),
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs Debian's chromium (scripts/setup.sh)"),
]

#: Guards against hanging only; the page updates every 2 s.
WAIT_MS = 20_000


async def test_dashboard_shows_brokers_ring_and_a_forced_unload_with_its_reason() -> None:
    cluster = await InProcessCluster(3).start()
    shots = artifacts_dir("dashboard")
    try:
        ns = new_namespace("dash")
        async with AsyncAdminClient(cluster.urls[0]) as admin:
            await admin.create_namespace(ns, num_bundles=4)
            await lookup_data(cluster.urls[0], topics_of(ns, 40))
            leader = (await admin.get_leader_broker())["brokerId"]
        follower_url = next(u for u, b in zip(cluster.urls, cluster.broker_ids, strict=True) if b != leader)

        async with async_headless_chromium() as browser:
            page = await browser.new_page(viewport={"width": 1500, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            failed: list[str] = []
            page.on("requestfailed", lambda request: failed.append(request.url))
            page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
            response = await page.goto(f"{follower_url}/dashboard", wait_until="load")
            assert response is not None and response.status == 200
            icon = await page.request.get(f"{follower_url}/favicon.ico")  # what a browser asks any page for
            assert icon.status == 200 and icon.headers["content-type"] == "image/svg+xml"

            rows = page.locator("#brokers tbody tr")
            await page.wait_for_function(
                "n => document.querySelectorAll('#brokers tbody tr').length === n", arg=3, timeout=WAIT_MS
            )
            listed = [await rows.nth(i).get_attribute("data-broker-id") for i in range(3)]
            assert sorted(listed) == sorted(cluster.broker_ids)
            assert "★" in await page.locator(f"#brokers tr[data-broker-id='{leader}']").inner_text()
            assert await page.locator("#leader").inner_text() == leader
            assert await page.locator("#state").inner_text() in ("READY", "IN PROGRESS")

            ring = page.locator(f".ring-row[data-namespace='{ns}'] .ring > div")
            await ring.first.wait_for(timeout=WAIT_MS)
            assert await ring.count() == 4
            await page.screenshot(path=str(shots / "1-brokers-and-ring.png"), full_page=True)

            bundle = await ring.nth(1).get_attribute("data-bundle")
            assert bundle is not None
            async with AsyncAdminClient(follower_url) as admin:
                await admin.unload_bundle(ns, bundle.rsplit("/", 1)[1])
            move = page.locator(f"#moves tr[data-bundle='{bundle}']").first
            await move.wait_for(timeout=WAIT_MS)
            assert await move.get_attribute("data-cause") == "Admin"
            assert await move.get_attribute("data-category") == "admin"
            assert "admin" in await move.inner_text()
            await page.screenshot(path=str(shots / "2-forced-unload.png"), full_page=True)

            await ring.nth(1).click()
            await page.wait_for_function(
                "() => document.querySelectorAll('#story li').length > 0", timeout=WAIT_MS
            )
            story = await page.locator("#story").inner_text()
            # the record: the unload an operator asked for, then Free
            assert "Owned → Releasing" in story and "Releasing → Free" in story and ": admin unload" in story
            await page.locator("#story-section").screenshot(path=str(shots / "3-bundle-story.png"))
            assert not errors, errors
            assert not failed, failed  # every file the page loads is there (the icon was a 404)
    finally:
        await cluster.stop()


async def test_dashboard_shows_the_leaders_decisions_with_reasons_and_numbers() -> None:
    cluster = await InProcessCluster(3, FAST_SHEDDING).start()
    clients = None
    shots = artifacts_dir("dashboard")
    try:
        clients, hot = await overload_one_broker(cluster, new_namespace("dashshed"))
        async with async_headless_chromium() as browser:
            page = await browser.new_page(viewport={"width": 1500, "height": 1100})
            await page.goto(f"{cluster.urls[2]}/dashboard", wait_until="load")
            moved = page.locator("#moves tr[data-cause='Overloaded']").first
            try:
                await moved.wait_for(timeout=60_000)
            except Exception as exc:
                async with AsyncAdminClient(cluster.urls[2]) as admin:
                    state = await admin.get_dashboard_state()
                raise AssertionError(
                    f"{exc}\nleader {state['leader']} moves {state['moves']}\ncycles {state['cycles'][:3]}"
                ) from None
            assert hot in await moved.inner_text()
            cycle = page.locator("#cycles .cycle", has_text="Success/Overloaded").first
            await cycle.wait_for(timeout=WAIT_MS)
            text = await cycle.inner_text()
            assert "moved" in text and "Overloaded" in text and "%" in text  # the decision's numbers
            await page.screenshot(path=str(shots / "4-shedding-decisions.png"), full_page=True)
    finally:
        if clients is not None:
            await clients.close()
        await cluster.stop()


async def test_with_authentication_the_page_needs_a_super_users_token() -> None:
    from tests.integration.security.test_auth_matrix import OVERRIDES, token

    cluster = await InProcessCluster(2, OVERRIDES).start()
    try:
        leader = cluster.cluster.leader()
        assert leader is not None
        follower_url = next(s.url for s in cluster.services if s is not leader)
        async with async_headless_chromium() as browser:
            page = await browser.new_page()
            await page.goto(f"{follower_url}/dashboard", wait_until="load")
            await page.locator("#error").wait_for(state="visible", timeout=WAIT_MS)
            assert "401" in await page.locator("#error").inner_text()
            page = await browser.new_page()
            await page.goto(f"{follower_url}/dashboard#token={token('admin')}", wait_until="load")
            await page.wait_for_function(
                "n => document.querySelectorAll('#brokers tbody tr').length === n", arg=2, timeout=WAIT_MS
            )
            assert page.url.endswith("/dashboard"), "the token leaves the address bar"
            assert await page.locator("#leader").inner_text() == leader.broker_id
    finally:
        await cluster.stop()
