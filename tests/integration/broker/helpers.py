"""Shared helpers of the end-to-end suite (real HTTP, bounded waits)."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from typing import Any

import httpx

from brokerlb.admin import AsyncAdminClient
from brokerlb.coordination import MetadataStore
from brokerlb.errors import NoNodeError
from brokerlb.naming import TopicName
from brokerlb.ring import NamespaceBundles
from brokerlb.testing.coordination import CoordinationSnapshot, check_coordination_invariants
from brokerlb.testing.waiting import eventually

#: a guard against hanging, never a speed check
CONVERGE_GUARD = 60.0


def new_namespace(prefix: str = "e2e") -> str:
    return f"public/{prefix}-{uuid.uuid4().hex[:8]}"


def topics_of(namespace: str, count: int, prefix: str = "t") -> list[str]:
    return [f"persistent://{namespace}/{prefix}-{i}" for i in range(count)]


async def lookup_many(
    url: str, topics: list[str], *, concurrency: int = 16, follow_redirects: bool = True
) -> dict[str, httpx.Response]:
    """GET the lookup of every topic from ``url`` (``concurrency`` at a time)."""
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(
        base_url=url,
        follow_redirects=follow_redirects,
        timeout=30,
        limits=httpx.Limits(max_connections=concurrency),
    ) as client:

        async def one(topic: str) -> tuple[str, httpx.Response]:
            async with gate:
                return topic, await client.get(f"/lookup/v2/topic/{TopicName.parse(topic).lookup_name}")

        return dict(await asyncio.gather(*(one(t) for t in topics)))


async def lookup_data(url: str, topics: list[str], **kwargs: Any) -> dict[str, dict[str, Any]]:
    answers = await lookup_many(url, topics, **kwargs)
    bad = {t: (r.status_code, r.text) for t, r in answers.items() if r.status_code != 200}
    assert not bad, f"{len(bad)} lookups failed, e.g. {next(iter(bad.items()))}"
    return {t: r.json() for t, r in answers.items()}


async def owners_snapshot(
    store: MetadataStore, namespace: str, *, require_all_owned: bool = False
) -> CoordinationSnapshot:
    return await check_coordination_invariants(store, [namespace], require_all_owned=require_all_owned)


def mismatched_answers(
    answers: dict[str, dict[str, Any]], snap: CoordinationSnapshot, namespace: str
) -> list[str]:
    """The answers that do not name their bundle's owner in ``snap`` (or whose bundle has none)."""
    bundles: NamespaceBundles = snap.bundles[namespace]
    wrong = []
    for topic, data in answers.items():
        bundle = str(bundles.find_bundle(topic))
        owner = snap.owners.get(bundle)
        if owner is None:
            wrong.append(f"{topic}: its bundle {bundle} has no owner")
        elif data["httpUrl"] != f"http://{owner}":
            wrong.append(f"{topic}: answered {data} but {bundle} is owned by {owner}")
    return wrong


def assert_answers_match_owners(
    answers: dict[str, dict[str, Any]], snap: CoordinationSnapshot, namespace: str
) -> None:
    wrong = mismatched_answers(answers, snap, namespace)
    assert not wrong, f"{len(wrong)} answers disagree with the store, e.g. {wrong[:3]}"


async def lookups_converge_to_owners(
    url: str, topics: list[str], store: MetadataStore, namespace: str
) -> None:
    """Look ``topics`` up at ``url`` until every answer names its bundle's owner in the store.

    A broker answers from its view of the ownership table, which follows the store by a watch (as
    Pulsar's table view does): right after a change the test read in the store (a split's children
    released, a dead broker's bundles taken over), the broker asked may still answer from the state
    before it -- a hint the client's connect corrects. What must hold is that the answers converge.
    """
    last: list[str] = []

    async def converged() -> bool:
        answers = await lookup_data(url, topics)
        last[:] = mismatched_answers(answers, await owners_snapshot(store, namespace), namespace)
        return not last

    try:
        await eventually(converged, timeout=CONVERGE_GUARD, message="lookups converge to the owners")
    except AssertionError as exc:
        if not last:  # a failed lookup, not the guard
            raise
        raise AssertionError(f"{len(last)} answers still disagree with the store, e.g. {last[:3]}") from exc


def owned_counts(snap: CoordinationSnapshot) -> Counter[str]:
    return Counter(snap.owners.values())


async def admin_call(url: str, method: str, *args: Any, **kwargs: Any) -> Any:
    async with AsyncAdminClient(url) as admin:
        return await getattr(admin, method)(*args, **kwargs)


async def store_tree(store: MetadataStore, root: str = "/admin") -> dict[str, bytes]:
    """Every node under ``root`` (path → data): to check that a refused request changed nothing."""
    out: dict[str, bytes] = {}

    async def walk(path: str) -> None:
        node = await store.get_or_none(path)
        if node is None:
            return
        out[path] = node.data
        try:
            kids = await store.children(path)
        except NoNodeError:
            return
        for kid in kids:
            await walk(f"{path.rstrip('/')}/{kid}")

    await walk(root)
    return out


#: Leader cycles every 1.2 s and reports every 100 ms, modelled CPU from traffic (1 core, 10,000 msg/s),
#: OverloadShedder: a broker over 85 % is shed at the next cycle.
FAST_SHEDDING: dict[str, Any] = {
    "loadBalancerSheddingIntervalMinutes": 0.02,
    "loadBalancerSheddingGracePeriodMinutes": 0.05,
    "loadBalancerReportUpdateMinIntervalMillis": 100,
    "loadBalancerHostUsageCheckIntervalMinutes": 0.001,
    "brokerlbModelCores": 1,
    "brokerlbModelMsgRatePerCore": 10_000,
    "loadBalancerLoadSheddingStrategy": "OverloadShedder",
    "loadBalancerDistributeBundlesEvenlyEnabled": False,
}


async def overload_one_broker(cluster: Any, ns: str, usage: float = 0.95) -> tuple[Any, str]:
    """Traffic on 60 topics of ``ns`` (6 bundles); one broker's topics together make its modelled CPU
    ``usage`` (over OverloadShedder's 85 %). Returns the synthetic clients (close them) and that broker."""
    from brokerlb.broker.data.synthetic import SyntheticClients
    from brokerlb.broker.data.topics import TopicStats

    async with AsyncAdminClient(cluster.urls[0]) as admin:
        await admin.create_namespace(ns, num_bundles=6)
    clients = SyntheticClients(cluster.services)
    await clients.add_many({t: TopicStats(msg_rate_in=10) for t in topics_of(ns, 60)})
    placement = clients.placement()
    hot, count = Counter(placement.values()).most_common(1)[0]
    rate = usage * FAST_SHEDDING["brokerlbModelMsgRatePerCore"] * FAST_SHEDDING["brokerlbModelCores"] / count
    for topic, broker in placement.items():
        if broker == hot:
            clients.set_stats(topic, TopicStats(msg_rate_in=rate, msg_throughput_in=rate * 20_000))
    return clients, hot


def carried_out_moves(service: Any) -> list[Any]:
    """The moves the leader on ``service`` carried out, oldest first, from its records (the leader feed)."""
    feed = service.operations.feed
    return [m for r in feed.recent for m, done in zip(r.moves, r.moves_done, strict=True) if done]
