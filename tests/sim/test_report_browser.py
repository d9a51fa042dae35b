"""The HTML report in real headless Chromium, served over loopback HTTP."""

import pytest

from brokerlb.sim import compare
from brokerlb.sim.report import write_report
from brokerlb.testing.browser import chromium_available, headless_chromium, serve_directory
from tests.sim.conftest import small_scenario

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not chromium_available(), reason="needs Debian's chromium (scripts/setup.sh)"),
]


def test_report_renders_side_by_side_with_every_image_loaded(tmp_path):
    scenario = small_scenario(
        [{"at": "3m", "type": "restart_broker", "broker": "b1", "downtime": "1m"}], minutes=6
    )
    results = compare(scenario, ["OverloadShedder", "OverloadShedder+RoundRobinBrokerSelector"])
    write_report(scenario, results, tmp_path)
    with serve_directory(tmp_path) as base, headless_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        response = page.goto(f"{base}/index.html", wait_until="load")
        assert response is not None and response.status == 200
        assert page.title() == "brokerlb simulation: small"

        columns = page.locator("section.strategy")
        assert columns.count() == 2
        labels = [columns.nth(i).get_attribute("data-strategy") for i in range(2)]
        assert labels == ["OverloadShedder", "OverloadShedder+RoundRobinBrokerSelector"]
        left, right = columns.nth(0).bounding_box(), columns.nth(1).bounding_box()
        assert abs(left["y"] - right["y"]) < 1 and right["x"] >= left["x"] + left["width"]  # side by side

        headers = page.locator("table.summary thead th").all_inner_texts()
        assert headers[1:3] == labels
        moves_row = page.locator("table.summary tr[data-metric='moves'] td").all_inner_texts()
        assert moves_row[1:3] == [f"{r.summary['moves']:,}" for r in results]

        images = page.evaluate("""() => Array.from(document.images).map(
            i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0}))""")
        assert len(images) == 5 + 2 * 2
        assert all(img["ok"] for img in images), images
        assert page.locator("section.strategy table.decisions tbody tr").count() >= 2


def test_every_strategy_of_a_wide_comparison_stays_on_screen_with_readable_moves(tmp_path):
    """Five strategies at 1400 px: the columns wrap instead of running off-screen (the last one,
    brokerlb, was out of view), and each strategy's moves are a full-width table whose bundle
    ranges do not break over lines."""
    scenario = small_scenario(minutes=6)
    strategies = ["ThresholdShedder", "UniformLoadShedder", "AvgShedder", "TransferShedder", "brokerlb"]
    results = compare(scenario, strategies)
    write_report(scenario, results, tmp_path)
    with serve_directory(tmp_path) as base, headless_chromium() as browser:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{base}/index.html", wait_until="load")
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 1400
        columns = page.locator("section.strategy")
        assert columns.count() == 5
        for i in range(5):
            box = columns.nth(i).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 1400
        for table in page.locator("table.moves").all():
            cell = table.locator("td.range").first
            if cell.count():
                lines = cell.evaluate(
                    "c => { const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length; }"
                )
                assert lines == 1  # the range on one line
