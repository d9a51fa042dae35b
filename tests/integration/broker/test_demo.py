"""The main job, shortened: real traffic, it balances the surge and ends by itself."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from brokerlb.demo import DemoOptions, run_demo

pytestmark = [pytest.mark.asyncio(loop_scope="package"), pytest.mark.slow]


async def test_demo_balances_the_surge_and_ends() -> None:
    out = io.StringIO()
    summary = await run_demo(DemoOptions(duration=30, web_port=0), Console(file=out, width=140))
    text = out.getvalue()
    assert "SURGE" in text and "before (worst moment after the surge)" in text
    assert "real traffic over the data path" in text
    assert summary["synthetic_traffic"] is False and summary["hot_broker"] in summary["brokers"]
    assert summary["transfers"] + summary["splits"] >= 1, text  # the leader acted on the surge
    assert summary["after"]["stddev"] < summary["before"]["stddev"], text
    produced = summary["produce"]
    assert produced["acked"] > 1000 and produced["unaccounted"] == 0, produced  # every send acked or errored
    assert summary["consume"]["received"] > 0.9 * produced["acked"]
