"""The ownership table on both backends: records mirrored by watches, changed only by compare-and-set,
several records and the namespace's bundles in one transaction, guards that write nothing when they fail."""

from __future__ import annotations

import pytest

from brokerlb.coordination import BundleMetadata, CheckOp, SetOp
from brokerlb.coordination.ownership_table import Guard, OwnershipTable, StoredRecord
from brokerlb.coordination.paths import local_policies_path, service_unit_state_path
from brokerlb.coordination.records import LocalPolicies
from brokerlb.errors import BadVersionError, LeadershipLostError, RecordConflictError
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import NO_NODE, RecordChanged, SessionChanged, Write
from brokerlb.ownership.machine import OwnershipMachine

pytestmark = pytest.mark.asyncio(loop_scope="function")

S = BundleState
NS = "t/ns"
FULL = f"{NS}/0x00000000_0xffffffff"


def mirror(table: OwnershipTable) -> dict[str, StoredRecord | None]:
    seen: dict[str, StoredRecord | None] = {}
    table.add_listener(lambda bundle, stored: seen.__setitem__(bundle, stored))
    return seen


async def test_a_record_written_by_one_broker_is_seen_by_another_and_changed_only_by_cas(
    backend, store, other
):
    a = await OwnershipTable(store).start()
    b = await OwnershipTable(other).start()
    seen = mirror(b)
    leader = OwnershipMachine(me="b3")
    assign = leader.assign(FULL, "b2", at_ms=1, by="b3", reason="least loaded")
    await a.write(assign)
    await backend.until(lambda: FULL in seen, message="the record at the other broker")
    stored = seen[FULL]
    assert stored is not None and stored.record.state is S.ASSIGNING and stored.record.dst == "b2"
    assert (await b.read(FULL)) == stored

    # the destination takes it: its machine answers the Assigning with Owned under its session
    dst = OwnershipMachine(me="b2")
    dst.handle(SessionChanged(session=other.session_id, at_ms=2))
    (take,) = dst.handle(
        RecordChanged(bundle=FULL, record=stored.record, stat_version=stored.stat_version, at_ms=2)
    )
    assert isinstance(take, Write) and take.record is not None and take.record.state is S.OWNED
    await b.write(take)
    await backend.until(lambda: a.get(FULL) and a.get(FULL).record.state is S.OWNED, message="Owned at a")

    # a second write from the same read loses: nothing changes
    with pytest.raises(RecordConflictError):
        await a.write(take)
    # a create of a bundle that has a record loses too
    with pytest.raises(RecordConflictError):
        await a.write(Write(bundle=FULL, record=assign.record, expected=NO_NODE))
    assert (await a.read(FULL)).record == take.record


async def test_a_split_commits_the_ring_and_the_records_in_one_transaction(backend, store, other):
    metadata = BundleMetadata(store)
    await metadata.create_namespace(NS, num_bundles=1)
    table = await OwnershipTable(store).start()
    watcher = await OwnershipTable(other).start()
    seen = mirror(watcher)
    m = OwnershipMachine(me="b1")
    m.handle(SessionChanged(session=store.session_id, at_ms=0))

    async def apply(write: Write) -> list[object]:
        await table.write(write)
        stored = await table.read(write.bundle)
        return m.handle(
            RecordChanged(
                bundle=write.bundle, record=stored.record, stat_version=stored.stat_version, at_ms=0
            )
        )

    follow = await apply(m.assign(FULL, "b1", at_ms=0))
    take = next(i for i in follow if isinstance(i, Write))
    await apply(take)
    children = (f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff")
    await apply(m.split(FULL, children, at_ms=1))
    writes = m.split_commit(FULL, at_ms=2)

    node = await store.get(local_policies_path(NS))
    ring = (await metadata.get_bundles(NS)).split(FULL, [0x7FFFFFFF])
    local = LocalPolicies.from_bytes(node.data).with_bundles(ring)
    ring_op = SetOp(local_policies_path(NS), local.to_bytes(), node.stat.version)

    # a competing change of the ring in between: the whole commit fails, nothing is written
    await metadata.set_anti_affinity_group(NS, "g")
    with pytest.raises(BadVersionError):
        await table.commit(writes, ops=[ring_op])
    assert (await table.read(FULL)).record.state is S.SPLITTING
    assert [await table.read(c) for c in children] == [None, None]

    node = await store.get(local_policies_path(NS))
    ring_op = SetOp(
        local_policies_path(NS),
        LocalPolicies.from_bytes(node.data).with_bundles(ring).to_bytes(),
        node.stat.version,
    )
    await table.commit(writes, ops=[ring_op])
    parent = (await table.read(FULL)).record
    assert parent.state is S.DELETED
    for child in children:
        record = (await table.read(child)).record
        assert record.state is S.OWNED and record.dst == "b1" and record.dst_session == store.session_id
    assert [str(b) for b in await metadata.get_bundles(NS)] == list(children)
    await backend.until(lambda: all(c in seen for c in children) and seen[FULL].record.state is S.DELETED)


async def test_a_failed_guard_names_its_error_and_writes_nothing(backend, store):
    table = await OwnershipTable(store).start()
    await store.create("/epoch", b"")
    await store.set("/epoch", b"1")  # version 1: a later leader's epoch
    write = OwnershipMachine().assign(FULL, "b1", at_ms=0)
    stale = Guard(CheckOp("/epoch", 0), lambda: LeadershipLostError("a superseded leader"))
    with pytest.raises(LeadershipLostError):
        await table.write(write, guards=[stale])
    assert await table.read(FULL) is None
    await table.write(write, guards=[Guard(CheckOp("/epoch", 1), lambda: LeadershipLostError("x"))])
    assert (await table.read(FULL)).record.state is S.ASSIGNING


async def test_tombstones_and_unreadable_records(backend, store, other):
    table = await OwnershipTable(store).start()
    watcher = await OwnershipTable(other).start()
    seen = mirror(watcher)
    m = OwnershipMachine(me=None)
    w = m.assign(FULL, "b1", at_ms=0)
    await table.write(w)
    stored = await table.read(FULL)
    m.handle(RecordChanged(bundle=FULL, record=stored.record, stat_version=stored.stat_version, at_ms=0))
    # Free it by force, then tombstone it
    m.handle(SessionChanged(session=1, at_ms=0))
    free = m.override(FULL, None, None, version=stored.record.version, at_ms=1, reason="test")
    await table.write(free)
    stored = await table.read(FULL)
    m.handle(RecordChanged(bundle=FULL, record=stored.record, stat_version=stored.stat_version, at_ms=1))
    await backend.until(lambda: seen.get(FULL) and seen[FULL].record.state is S.FREE, message="Free there")
    await table.write(m.tombstone(FULL))
    assert await table.read(FULL) is None
    await backend.until(
        lambda: FULL in seen and seen[FULL] is None, message="the tombstone at the other broker"
    )

    bad = f"{NS}/0x00000000_0x7fffffff"
    await store.create(service_unit_state_path(bad), b"{not json", make_parents=True)
    good = OwnershipMachine().assign(f"{NS}/0x7fffffff_0xffffffff", "b1", at_ms=0)
    await table.write(good)
    await backend.until(lambda: good.bundle in seen, message="a readable record after an unreadable one")
    assert bad not in seen and watcher.get(bad) is None


async def test_records_outlive_the_writers_session_and_the_registry_names_sessions(backend, store, other):
    from brokerlb.coordination import BrokerRegistry

    table = await OwnershipTable(store).start()
    registry = await BrokerRegistry(store).start()
    await registry.register("b1:8080", {"webServiceUrl": "http://b1:8080"})
    watcher_registry = await BrokerRegistry(other).start()
    await backend.until(lambda: watcher_registry.sessions().get("b1:8080") == store.session_id)
    assert await watcher_registry.read_session("b1:8080") == store.session_id
    await table.write(OwnershipMachine().assign(FULL, "b1:8080", at_ms=0))
    before = store.session_id
    await backend.expire(store)
    await backend.until(lambda: store.session_id not in (None, before), message="a new session")
    # the record is persistent: it is still there, naming what it named
    watcher = await OwnershipTable(other).start()
    assert watcher.get(FULL) is not None and watcher.get(FULL).record.dst == "b1:8080"
    await backend.until(
        lambda: watcher_registry.sessions().get("b1:8080") == store.session_id, message="re-registered"
    )
