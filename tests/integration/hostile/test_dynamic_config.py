"""Dynamic configuration cannot break a running broker: a value it could not start with is refused
(412) and nothing changes.

The probes of issue 30: ``loadManagerClassName=a.`` was accepted (204) and every new placement then
failed; ``loadBalancerSheddingIntervalMinutes=1e-9`` was accepted and put the leader at 100 % CPU
(lookup p99 3.3 ms -> 4.0 s). Bystanders (lookups, produces) are served throughout, and new topics
are still placed afterwards.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from brokerlb.testing.hostile import Bystanders
from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

JSON = {"content-type": "application/json"}
REFUSED = [
    ("loadManagerClassName", "a.", "ModularLoadManagerImpl and ExtensibleLoadManagerImpl"),
    ("loadBalancerSheddingIntervalMinutes", "1e-9", "at least 0.5 s"),
    ("loadBalancerSheddingIntervalMinutes", "0", "at least 0.5 s"),
    ("loadBalancerReportUpdateMinIntervalMillis", "1", "at least 0.05 s"),
    ("loadBalancerLoadSheddingStrategy", "NoSuchShedder", "ThresholdShedder"),
    ("loadBalancerBrokerOverloadedThresholdPercentage", "-1", ">= 0"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(2, {"loadBalancerSheddingIntervalMinutes": 0.05}) as process:
        yield process


@pytest.mark.parametrize(("key", "value", "why"), REFUSED)
async def test_a_value_the_broker_could_not_start_with_is_refused_and_changes_nothing(
    broker: StandaloneProcess, key: str, value: str, why: str
) -> None:
    bystanders = await Bystanders(
        broker.urls[0], broker.binary_urls[0], "persistent://public/default/calm"
    ).start()
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=60, follow_redirects=True) as http:
        before = (await http.get("/admin/v2/brokers/configuration/runtime")).json()[key]
        answer = await http.post(f"/admin/v2/brokers/configuration/{key}/{value}", headers=JSON)
        assert answer.status_code == 412, answer.text
        reason = answer.json()["reason"]
        assert key in reason and why in reason, reason
        stored = (await http.get("/admin/v2/brokers/configuration/values")).json()
        assert key not in stored
        await bystanders.serve_more()
        for url in broker.urls:  # neither broker adopted it
            assert (await http.get(f"{url}/admin/v2/brokers/configuration/runtime")).json()[key] == before
        # new topics are still placed
        for _ in range(5):
            topic = f"persistent/public/default/new-{uuid.uuid4().hex[:8]}"
            assert (await http.get(f"/lookup/v2/topic/{topic}")).status_code == 200
    await bystanders.stop()
    bystanders.check()


async def test_a_valid_value_is_still_applied(broker: StandaloneProcess) -> None:
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=60) as http:
        answer = await http.post(
            "/admin/v2/brokers/configuration/loadBalancerSheddingIntervalMinutes/0.5", headers=JSON
        )
        assert answer.status_code == 204, answer.text
        answer = await http.post(
            "/admin/v2/brokers/configuration/loadBalancerLoadSheddingStrategy/UniformLoadShedder",
            headers=JSON,
        )
        assert answer.status_code == 204, answer.text
        assert (await http.get("/admin/v2/brokers/configuration/values")).json() == {
            "loadBalancerSheddingIntervalMinutes": "0.5",
            "loadBalancerLoadSheddingStrategy": "UniformLoadShedder",
        }
