"""An acquisition the metadata store did not answer.

A broker creates a bundle's ownership node and the answer is lost (the connection dropped after
ZooKeeper applied the create). The broker does not count the bundle as its own, yet the node is
its live session's: every lookup names this broker, and this broker refuses the clients ("not
served by this broker") until its session ends -- nothing else would ever delete the node. The
acquisition now looks again once the store answers (and adopts the node); when the store does not
come back in time, the ownership watchdog, which gives up on the assignment after the in-flight
timeout, deletes a node of this session that the broker does not hold, and the next lookup takes
the bundle. This test is the second case.
"""

from __future__ import annotations

import httpx
import pytest

from brokerlb.coordination.paths import ownership_path
from brokerlb.errors import ConnectionLossError, OperationTimeoutError
from brokerlb.ring import NamespaceBundle
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.waiting import eventually

from .helpers import new_namespace

pytestmark = pytest.mark.asyncio(loop_scope="function")

GUARD = 60.0


async def test_an_acquisition_the_store_did_not_answer_does_not_leave_a_bundle_nobody_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = await InProcessCluster(
        1, {"loadBalancerInFlightServiceUnitStateWaitingTimeInMillis": 1000}
    ).start()
    try:
        service = cluster.services[0]
        namespace = new_namespace("unanswered")
        topic = f"persistent://{namespace}/t"
        bundle = NamespaceBundle.parse(f"{namespace}/0x00000000_0xffffffff")
        path = ownership_path(str(bundle))
        async with httpx.AsyncClient(base_url=service.url) as http:
            created = await http.put(f"/admin/v2/namespaces/{namespace}", json={"bundles": {"numBundles": 1}})
            assert created.status_code == 204, created.text
            store = service.store
            lost = []
            real_multi, real_create = store.multi, store.create

            async def multi_then_drop(ops, *args, **kwargs):
                result = await real_multi(ops, *args, **kwargs)
                if not lost and any(getattr(op, "path", None) == path for op in ops):
                    lost.append(path)
                    raise ConnectionLossError(f"connection lost (path {path})")
                return result

            async def create_then_drop(node_path, *args, **kwargs):
                result = await real_create(node_path, *args, **kwargs)
                if not lost and node_path == path:
                    lost.append(path)
                    raise ConnectionLossError(f"connection lost (path {node_path})")
                return result

            real_wait = store.wait_connected

            async def not_back_at_once(timeout=None):  # no second look: the watchdog's case
                monkeypatch.setattr(store, "wait_connected", real_wait)
                raise OperationTimeoutError("the store did not come back in time")

            monkeypatch.setattr(store, "multi", multi_then_drop)
            monkeypatch.setattr(store, "create", create_then_drop)
            monkeypatch.setattr(store, "wait_connected", not_back_at_once)
            first = await http.get(f"/lookup/v2/topic/persistent/{topic.removeprefix('persistent://')}")
            assert first.status_code >= 500 and lost == [path], first.text
            node = await store.get_or_none(path)
            assert node is not None and store.owns(node.stat)  # created all the same
            assert not service.ownership.serving(bundle)

            async def served() -> bool:
                answer = await http.get(f"/lookup/v2/topic/persistent/{topic.removeprefix('persistent://')}")
                return answer.status_code == 200 and service.ownership.serving(bundle)

            await eventually(served, GUARD, message="the bundle served by the broker lookups name")
    finally:
        await cluster.stop()
