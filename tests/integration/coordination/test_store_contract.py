"""The MetadataStore contract: the same tests on the embedded store and on a real ZooKeeper."""

from __future__ import annotations

import asyncio

import pytest

from brokerlb.coordination import (
    CheckOp,
    CreateOp,
    DeleteOp,
    EventType,
    SessionState,
    SetOp,
)
from brokerlb.errors import (
    BadVersionError,
    InvalidStoreOperationError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    StoreClosedError,
)

from .conftest import events_delivered


class Recorder:
    """A watch callback that records what it is called with."""

    def __init__(self) -> None:
        self.events = []

    def __call__(self, event) -> None:
        self.events.append(event)

    @property
    def types(self):
        return [e.type for e in self.events]


async def test_create_get_set_delete_with_versions(store):
    assert await store.create("/a", b"one") == "/a"
    data, stat = await store.get("/a")
    assert data == b"one"
    assert stat.version == 0 and stat.data_length == 3 and not stat.is_ephemeral
    new = await store.set("/a", b"two", version=0)
    assert new.version == 1 and new.mzxid > stat.mzxid and new.czxid == stat.czxid
    assert (await store.get("/a")).data == b"two"
    await store.set("/a", b"three")  # version -1: unconditional
    assert (await store.get("/a")).stat.version == 2
    await store.delete("/a", version=2)
    assert await store.exists("/a") is None
    with pytest.raises(NoNodeError) as err:
        await store.get("/a")
    assert err.value.path == "/a" and err.value.http_status == 404


async def test_compare_and_set_refuses_a_stale_version(store, other):
    await store.create("/cas", b"0")
    _, stat = await store.get("/cas")
    await other.set("/cas", b"other", version=stat.version)
    with pytest.raises(BadVersionError) as err:
        await store.set("/cas", b"mine", version=stat.version)
    assert not err.value.retriable
    with pytest.raises(BadVersionError):
        await store.delete("/cas", version=stat.version)
    assert (await store.get("/cas")).data == b"other"


async def test_create_errors(store):
    await store.create("/x", b"")
    with pytest.raises(NodeExistsError):
        await store.create("/x", b"")
    with pytest.raises(NoNodeError):
        await store.create("/missing/child", b"")
    assert await store.create("/deep/er/path", b"v", make_parents=True) == "/deep/er/path"
    assert (await store.get("/deep/er")).data == b""


async def test_delete_refuses_a_node_with_children(store):
    await store.create("/p/c", b"", make_parents=True)
    with pytest.raises(NotEmptyError):
        await store.delete("/p")
    await store.delete_recursive("/p")
    assert await store.exists("/p") is None
    await store.delete_recursive("/p")  # absent: no error


async def test_children_are_sorted_names(store):
    for name in ["b", "a", "c"]:
        await store.create(f"/kids/{name}", b"", make_parents=True)
    assert await store.children("/kids") == ["a", "b", "c"]
    with pytest.raises(NoNodeError):
        await store.children("/nope")
    assert (await store.exists("/kids")).num_children == 3


async def test_sequential_nodes_get_a_ten_digit_counter(store):
    await store.ensure_path("/seq")
    first = await store.create("/seq/n-", b"", sequential=True)
    second = await store.create("/seq/n-", b"", sequential=True)
    assert first.startswith("/seq/n-") and len(first.rsplit("-", 1)[1]) == 10
    assert int(second[-10:]) > int(first[-10:])


async def test_ephemeral_belongs_to_the_session_and_vanishes_on_close(backend, store, other):
    await store.ensure_path("/eph")
    await store.create("/eph/mine", b"x", ephemeral=True)
    stat = await other.exists("/eph/mine")
    assert stat.ephemeral_owner == store.session_id != other.session_id
    assert store.owns(stat) and not other.owns(stat)
    with pytest.raises(InvalidStoreOperationError):
        await store.create("/eph/mine/child", b"")
    await store.close()
    assert await other.exists("/eph/mine") is None


async def test_session_expiry_removes_ephemerals_and_opens_a_new_session(backend, store, other):
    events = []
    store.add_session_listener(events.append)
    await store.create("/lease", b"", ephemeral=True)
    old_session = store.session_id
    await backend.expire(store)
    await backend.until(
        lambda: store.connected and store.session_id not in (None, old_session),
        message="reconnect with a new session",
    )
    states = [e.state for e in events]
    assert SessionState.LOST in states and states[-1] is SessionState.CONNECTED
    assert events[-1].new_session
    assert await other.exists("/lease") is None
    await store.create("/lease", b"", ephemeral=True)  # the app re-registers in the new session
    assert store.owns(await other.exists("/lease"))


async def test_one_shot_data_watches(backend, store, other):
    changed, created = Recorder(), Recorder()
    await store.create("/w", b"1")
    await store.get("/w", watch=changed)
    assert await store.exists("/w2", watch=created) is None
    await other.set("/w", b"2")
    await other.set("/w", b"3")  # the watch fired already: no second event
    await other.create("/w2", b"")
    await backend.until(lambda: changed.events and created.events, message="watch events")
    await events_delivered(backend, store, other)  # a second event would have arrived by now
    assert changed.types == [EventType.CHANGED] and changed.events[0].path == "/w"
    assert created.types == [EventType.CREATED]


async def test_delete_fires_data_and_child_watches(backend, store, other):
    await store.create("/dw/n", b"", make_parents=True)
    data_w, node_kids, parent_kids = Recorder(), Recorder(), Recorder()
    await store.get("/dw/n", watch=data_w)
    await store.children("/dw/n", watch=node_kids)
    await store.children("/dw", watch=parent_kids)
    await other.delete("/dw/n")
    await backend.until(
        lambda: data_w.events and node_kids.events and parent_kids.events, message="watch events"
    )
    assert data_w.types == [EventType.DELETED]
    assert node_kids.types == [EventType.DELETED]
    assert parent_kids.types == [EventType.CHILD] and parent_kids.events[0].path == "/dw"


async def test_persistent_data_watch_delivers_the_latest_value(store, other):
    seen = []
    watch = await store.watch_data("/pw", lambda n: seen.append(None if n is None else n.data)).start()
    assert seen == [None]
    await other.create("/pw", b"a")
    await watch.wait_delivered(lambda n: n is not None and n.data == b"a")
    for i in range(5):
        await other.set("/pw", f"v{i}".encode())
    await watch.wait_delivered(lambda n: n is not None and n.data == b"v4")
    await other.delete("/pw")
    await watch.wait_delivered(lambda n: n is None)
    assert seen[0] is None and seen[1] == b"a" and seen[-2] == b"v4" and seen[-1] is None
    watch.cancel()


async def test_persistent_watches_survive_session_expiry(backend, store, other):
    kids = await store.watch_children("/members", lambda c: None).start()
    assert kids.value is None
    await other.create("/members/a", b"", make_parents=True)
    await kids.wait_delivered(lambda c: c == ["a"])
    await backend.expire(store)
    await store.wait_connected(10)
    await other.create("/members/b", b"")
    await kids.wait_delivered(lambda c: c == ["a", "b"])
    kids.cancel()


async def test_multi_commits_all_operations(store):
    await store.create("/t", b"")
    await store.create("/t/old", b"")
    results = await store.multi(
        [
            CheckOp("/t", 0),
            CreateOp("/t/new", b"n"),
            SetOp("/t/old", b"o", version=0),
            DeleteOp("/t/old", version=1),
            CreateOp("/t/seq-", b"", sequential=True),
        ]
    )
    assert results[0] is None and results[1] == "/t/new" and results[2].version == 1
    assert results[3] is None and results[4].startswith("/t/seq-")
    assert sorted(await store.children("/t")) == sorted(["new", results[4].rsplit("/", 1)[1]])


async def test_multi_is_all_or_nothing(store):
    await store.create("/tx", b"0")
    with pytest.raises(BadVersionError) as err:
        await store.multi([CreateOp("/tx/a", b""), SetOp("/tx", b"1", version=7), CreateOp("/tx/b", b"")])
    assert err.value.op_index == 1
    assert await store.children("/tx") == []
    assert (await store.get("/tx")).stat.version == 0
    with pytest.raises(NodeExistsError) as err:
        await store.multi([CheckOp("/tx", 0), CreateOp("/tx", b"")])
    assert err.value.op_index == 1


async def test_bad_requests_are_refused_clearly(store):
    for bad in ["relative", "/trailing/", "/a//b", "/a/./b", ""]:
        with pytest.raises(InvalidStoreOperationError):
            await store.create(bad, b"")
    with pytest.raises(InvalidStoreOperationError):
        await store.create("/text", "not bytes")  # type: ignore[arg-type]


async def test_closed_store_refuses_operations(store):
    await store.close()
    assert store.session_state is SessionState.CLOSED
    with pytest.raises(StoreClosedError):
        await store.get("/")


async def test_concurrent_creates_have_one_winner(store, other):
    await store.ensure_path("/race")
    results = await asyncio.gather(
        *(s.create(f"/race/{i}", s.url.encode(), ephemeral=True) for i in range(50) for s in (store, other)),
        return_exceptions=True,
    )
    wins = [r for r in results if isinstance(r, str)]
    losses = [r for r in results if isinstance(r, NodeExistsError)]
    assert len(wins) == 50 and len(losses) == 50
