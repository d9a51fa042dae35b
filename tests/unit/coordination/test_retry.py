"""Pulsar's bundle-metadata retry: 7 retries, 100 ms apart, on BadVersion only."""

from __future__ import annotations

import random
import uuid

import pytest

from brokerlb.coordination import BundleMetadata, MemoryMetadataStore, MemoryServer, RetryPolicy, retry_async
from brokerlb.coordination.paths import local_policies_path
from brokerlb.errors import BadVersionError, ConnectionLossError, InvalidConfigError


class FakeSleep:
    def __init__(self, on_sleep=None):
        self.waits = []
        self.on_sleep = on_sleep

    async def __call__(self, seconds):
        self.waits.append(seconds)
        if self.on_sleep is not None:
            await self.on_sleep()


async def test_gives_up_after_seven_retries_100_ms_apart():
    attempts = []

    async def always_loses():
        attempts.append(1)
        raise BadVersionError("lost", "/p")

    sleep = FakeSleep()
    with pytest.raises(BadVersionError) as err:
        await retry_async(always_loses, sleep=sleep, what="split")
    assert len(attempts) == 8 and sleep.waits == [0.1] * 7
    assert "gave up after 8 attempts" in "".join(err.value.__notes__)


async def test_other_errors_are_not_retried():
    async def broken():
        raise ConnectionLossError("down")

    sleep = FakeSleep()
    with pytest.raises(ConnectionLossError):
        await retry_async(broken, sleep=sleep)
    assert sleep.waits == []


async def test_predicate_backoff_and_jitter():
    policy = RetryPolicy(max_retries=3, delay_s=0.1, backoff=2.0, jitter=0.5)
    assert [policy.delay(i) for i in (1, 2, 3)] == [0.1, 0.2, 0.4]
    assert 0.1 <= policy.delay(1, random.Random(1)) <= 0.15
    with pytest.raises(InvalidConfigError):
        RetryPolicy(backoff=0.5)


async def test_bundle_update_recomputes_after_every_lost_race():
    server = MemoryServer(f"retry-{uuid.uuid4().hex[:6]}")
    store, rival = MemoryMetadataStore(server), MemoryMetadataStore(server)
    await store.start()
    await rival.start()
    path = local_policies_path("t/ns")

    async def rival_writes():  # another broker commits between our read and our write, every time
        node = await rival.get(path)
        await rival.set(path, node.data, version=node.stat.version)

    sleep = FakeSleep()
    metadata = BundleMetadata(store, sleep=sleep)
    await metadata.create_namespace("t/ns", num_bundles=2)
    calls = []
    original_write = metadata._write_local

    async def rival_commits_first(ns, local, version):
        if len(calls) <= 3:  # the rival's write lands between our read and our write, three times
            await rival_writes()
        await original_write(ns, local, version)

    metadata._write_local = rival_commits_first

    def split(bundles):
        calls.append(len(bundles))
        return bundles.split("t/ns/0x00000000_0x80000000", [0x40000000])

    result = await metadata.update_bundles("t/ns", split)
    assert len(result) == 3
    assert calls == [2, 2, 2, 2]  # recomputed from a fresh read after each lost race
    assert sleep.waits == [0.1] * 3
