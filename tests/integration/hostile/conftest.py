"""Shared by the hostile-client tests: bystanders watching the module's ``broker`` fixture."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio

from brokerlb.testing.hostile import Bystanders
from brokerlb.testing.standalone_process import StandaloneProcess


@pytest_asyncio.fixture(loop_scope="module")
async def bystanders(broker: StandaloneProcess) -> AsyncIterator[Bystanders]:
    """Lookups and produces on the module's broker during a test; they must all be served."""
    watcher = await Bystanders(
        broker.urls[0], broker.binary_urls[0], "persistent://public/default/calm"
    ).start()
    yield watcher
    await watcher.stop()
    watcher.check()
