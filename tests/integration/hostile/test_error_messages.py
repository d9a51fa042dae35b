"""Errors name what is wrong in the client's terms, never in Python's.

The probe of issue 30: a 400 quoted ``sys.set_int_max_str_digits`` (Python refuses to read an integer
of more than 4,300 digits and says how to raise its own limit). Numbers a client sends are bounded
before Python reads them (:data:`brokerlb.limits.MAX_JSON_INT_DIGITS`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio

from brokerlb.testing.standalone_process import StandaloneProcess

pytestmark = [pytest.mark.slow, pytest.mark.asyncio(loop_scope="module")]

HUGE = "9" * 5000
JSON = {"content-type": "application/json"}
PYTHON = ("sys.", "set_int_max_str_digits", "Traceback", "<class", "object at 0x")
PROBES = [
    ("PUT", "/admin/v2/persistent/public/default/huge/partitions", HUGE, 400),
    ("PUT", "/admin/v2/namespaces/public/huge-bundles", '{"bundles": {"numBundles": ' + HUGE + "}}", 400),
    ("POST", f"/admin/v2/brokers/configuration/loadBalancerBrokerMaxTopics/{HUGE}", None, 400),
    ("POST", "/admin/v2/brokers/configuration/loadBalancerBrokerMaxTopics/" + "9" * 250, None, 412),
    ("POST", "/admin/v2/brokers/configuration/maxUnloadPercentage/" + "9" * 250, None, 412),
    (
        "PUT",
        f"/admin/v2/namespaces/public/default/0x00000000_0x40000000/unload?leaderEpoch={HUGE}",
        None,
        400,
    ),
    ("GET", f"/lookup/v2/topic/persistent/public/default/x?authoritative={HUGE}", None, 400),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def broker() -> AsyncIterator[StandaloneProcess]:
    async with StandaloneProcess(1) as process:
        yield process


@pytest.mark.parametrize(("method", "path", "body", "status"), PROBES)
async def test_huge_numbers_are_refused_in_the_clients_terms(
    broker: StandaloneProcess, method: str, path: str, body: str | None, status: int
) -> None:
    async with httpx.AsyncClient(base_url=broker.urls[0], timeout=60) as http:
        answer = await http.request(method, path, content=body, headers=JSON if method != "GET" else None)
    assert answer.status_code == status, answer.text
    reason = answer.json()["reason"]
    assert not any(word in reason for word in PYTHON), reason
    assert len(reason) < 1200, reason  # what it quotes of the input is bounded
