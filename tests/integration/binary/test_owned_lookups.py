"""Owned lookups answered from memory (HTTP and binary) say what the full path says, on every broker,
and stop naming an owner once its bundle is unloaded."""

from __future__ import annotations

import json

import httpx
import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.messaging.wire import CommandLookupTopic, CommandLookupTopicResponse
from brokerlb.naming import TopicName
from brokerlb.ownership import BundleState
from brokerlb.testing.clusters import InProcessCluster
from brokerlb.testing.hostile import RawConnection
from brokerlb.testing.waiting import eventually

pytestmark = pytest.mark.asyncio(loop_scope="module")

GUARD = 30.0


async def _binary_lookup(raw: RawConnection, topic: str, request: int, listener: str | None = None) -> object:
    raw.send(CommandLookupTopic(topic, request, False, listener))
    return await raw.next()


async def test_owned_lookups_agree_with_the_owner_on_every_broker(
    cluster: InProcessCluster, namespace: str
) -> None:
    # names with the characters a lookup path carries as they are, and names it encodes
    topics = [f"persistent://{namespace}/owned-{i}" for i in range(12)] + [
        f"persistent://{namespace}/a.b=c:d_e-partition-3",
        f"non-persistent://{namespace}/np-{namespace.rsplit('-', 1)[1]}",
        f"persistent://{namespace}/with space",
        f"persistent://{namespace}/slash%2For+plus",
        f"persistent://{namespace}/ünïcode",
    ]
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        for t in topics:
            await admin.lookup_topic(t)  # assigns every bundle
    first = cluster.services[0]
    owners = {}
    for t in topics:  # the owner as the ownership table says, for the ring as the full path reads it
        view = first.channel.owner(await first.lookup.bundle_of(TopicName.parse(t)))
        assert view.state is BundleState.OWNED and view.broker is not None, (t, view)
        owners[t] = json.loads(first.lookup.lookup_data(view.broker, None))
    for i, service in enumerate(cluster.services):
        before = service.lookup.stats["broker"]
        raw = await RawConnection.open(cluster.binary_urls[i])
        try:
            async with httpx.AsyncClient(base_url=cluster.urls[i], timeout=GUARD) as http:
                for n, topic in enumerate(topics):
                    path = f"/lookup/v2/topic/{TopicName.parse(topic).lookup_name}"
                    for query in ("", "?authoritative=false"):
                        answer = await http.get(path + query)
                        assert answer.status_code == 200, answer.text
                        assert answer.json() == owners[topic]
                        assert answer.headers["content-type"] == "application/json"
                    binary = await _binary_lookup(raw, topic, n)
                    assert isinstance(binary, CommandLookupTopicResponse), binary
                    assert binary.response == 1 and binary.authoritative, binary  # Connect
                    assert binary.brokerServiceUrl == owners[topic]["brokerUrl"]
                    assert binary.request_id == n
                # an unknown listener is the full path's error, on both protocols
                unknown = await http.get(path, headers={"X-Pulsar-ListenerName": "nope"})
                assert unknown.status_code == 404 and "nope" in unknown.json()["reason"], unknown.text
            refused = await _binary_lookup(raw, topics[0], 99, listener="nope")
            assert isinstance(refused, CommandLookupTopicResponse) and refused.response == 2, refused
            assert "nope" in (refused.message or "")
        finally:
            raw.close()
        # every answer counted once; the two unknown-listener lookups found the owner (the full path
        # counts that) before the listener failed them
        assert service.lookup.stats["broker"] - before == 3 * len(topics) + 2


async def test_an_unloaded_bundle_is_not_answered_from_memory(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/moved"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        first = await admin.lookup_topic(topic)
        bundle = str(await cluster.services[0].lookup.bundle_of(TopicName.parse(topic)))
        await admin.unload_bundle(namespace, bundle.rsplit("/", 1)[1])

    def unowned_everywhere() -> bool:
        return all(
            (r := s.channel.record(bundle)) is None or r.state is not BundleState.OWNED
            for s in cluster.services
        )

    await eventually(unowned_everywhere, timeout=GUARD, message="the unload seen by every broker")
    raw = await RawConnection.open(cluster.binary_urls[1])
    try:
        answer = await _binary_lookup(raw, topic, 7)  # not from memory: the full path assigns it again
    finally:
        raw.close()
    assert isinstance(answer, CommandLookupTopicResponse), answer
    if answer.response == 1:
        owner = cluster.services[1].channel.owner(bundle)
        assert owner.state is BundleState.OWNED and owner.broker is not None
        assert answer.brokerServiceUrl == cluster.services[1].lookup.pulsar_urls(owner.broker, None)[0]
    else:  # Redirect to the leader, which places it
        assert answer.response == 0 and not answer.authoritative, answer
    assert first["brokerUrl"]
