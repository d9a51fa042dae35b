"""The storage contract every engine keeps: appends, reads, ledgers, cursors, fencing by hash range."""

from __future__ import annotations

import pytest

from brokerlb.errors import LedgerFencedError
from brokerlb.mledger import CursorInfo, Position
from brokerlb.storage import AppendGroup, bundle_hash_range

NS = "t/ns"
TOPIC = "t/ns/persistent/a"
H = 0x1234


def group(topic, ledger, first, payloads, t0=1000):
    entries = [(t0 + i, 1, p) for i, p in enumerate(payloads)]
    return AppendGroup(topic, ledger, first, entries, sum(len(p) for p in payloads))


async def opened(engine, name=TOPIC, hash_=H, owner="b1"):
    epoch = (await engine.fence(NS, 0, 0x1_0000_0000, owner, 1)).epoch
    record = await engine.open_topic(name, NS, hash_, epoch, 2)
    return epoch, record


async def test_append_read_and_reopen(engine):
    epoch, record = await opened(engine)
    assert record.created and len(record.ledgers) == 1 and not record.ledgers[0].closed
    ledger = record.ledgers[-1].ledger_id
    assert await engine.append([group(TOPIC, ledger, 0, [b"a", b"bb"])]) == [True]
    assert await engine.append([group(TOPIC, ledger, 2, [b"c"])]) == [True]
    entries = await engine.read(ledger, 0, 10)
    assert [(e.entry_id, e.payload, e.publish_time) for e in entries] == [
        (0, b"a", 1000),
        (1, b"bb", 1001),
        (2, b"c", 1000),
    ]
    assert [e.payload for e in await engine.read(ledger, 1, 1)] == [b"bb"]
    # a gap or a repeat is refused: the writer's idea of the ledger is wrong
    assert await engine.append([group(TOPIC, ledger, 5, [b"x"])]) == [False]
    # re-opened by the next owner's fence (the topic is active): the last ledger is closed at its
    # committed end, a new one opens
    fence = await engine.fence(NS, 0, 0x1_0000_0000, "b2", 3)
    assert fence.epoch > epoch
    (again,) = fence.topics
    assert again.name == TOPIC and again.epoch == fence.epoch and not again.created
    first, second = again.ledgers
    assert (first.ledger_id, first.entries, first.size, first.closed) == (ledger, 3, 4, True)
    assert second.ledger_id > ledger and second.base == 3 and second.base_offset == 4 and not second.closed
    assert await engine.topics(NS) == [TOPIC]
    assert [i.ledger_id for i in await engine.ledgers_of(TOPIC)] == [ledger, second.ledger_id]


async def test_a_fenced_writer_stores_nothing(engine):
    epoch, record = await opened(engine)
    ledger = record.ledgers[-1].ledger_id
    assert await engine.append([group(TOPIC, ledger, 0, [b"a"])]) == [True]
    lo, hi = bundle_hash_range(0x0000, 0x7FFFFFFF)
    newer = (await engine.fence(NS, lo, hi, "b2", 5)).epoch  # another broker takes the bundle holding H
    other = "t/ns/persistent/b"
    # the former owner: its append, rollover, cursor write and trimming are refused
    assert await engine.append([group(TOPIC, ledger, 1, [b"late"])]) == [False]
    with pytest.raises(LedgerFencedError):
        await engine.rollover(TOPIC, epoch, record.ledgers[-1], 6)
    cursor = CursorInfo("s", "Shared", Position(ledger, 0))
    assert await engine.save_cursors([(TOPIC, epoch, cursor)]) == [False]
    assert not await engine.delete_ledgers(TOPIC, epoch, [ledger])
    # ... and it cannot open or create topics in the range any more
    with pytest.raises(LedgerFencedError):
        await engine.open_topic(TOPIC, NS, H, epoch, 6)
    with pytest.raises(LedgerFencedError):
        await engine.open_topic(other, NS, 0x10, epoch, 6)
    # outside the taken range its fence still holds
    other_rec = await engine.open_topic(other, NS, 0x9000_0000, epoch, 6)
    assert other_rec is not None and other_rec.created
    # the new owner sees the committed entry, nothing after it
    record2 = await engine.open_topic(TOPIC, NS, H, newer, 7)
    assert record2.ledgers[0].entries == 1 and record2.ledgers[0].closed
    assert [e.payload for e in await engine.read(ledger, 0, 5)] == [b"a"]
    assert await engine.save_cursors([(TOPIC, newer, cursor)]) == [True]


async def test_a_stale_fence_never_wins_over_a_newer_one_in_its_range(engine):
    old = (await engine.fence(NS, 0, 0x8000_0000, "a", 1)).epoch
    child = (await engine.fence(NS, 0, 0x4000_0000, "b", 2)).epoch  # a split child taken by b
    assert child > old
    with pytest.raises(LedgerFencedError):
        await engine.open_topic(TOPIC, NS, H, old, 3)
    assert (await engine.open_topic(TOPIC, NS, H, child, 3)).created
    merged = (await engine.fence(NS, 0, 0x8000_0000, "c", 4)).epoch  # merged back, taken by c
    with pytest.raises(LedgerFencedError):
        await engine.open_topic(TOPIC, NS, H, child, 5)
    assert not (await engine.open_topic(TOPIC, NS, H, merged, 5)).created


async def test_rollover_cursors_trimming_and_delete(engine):
    epoch, record = await opened(engine)
    first = record.ledgers[-1]
    assert await engine.append([group(TOPIC, first.ledger_id, 0, [b"x" * 10, b"y" * 10])]) == [True]
    closing = first.__class__(first.ledger_id, 2, 20, first.timestamp_ms, 0, 0, False)
    second = await engine.rollover(TOPIC, epoch, closing, 50)
    assert second.ledger_id > first.ledger_id and (second.base, second.base_offset) == (2, 20)
    assert await engine.append([group(TOPIC, first.ledger_id, 2, [b"late"])]) == [False]  # closed
    assert await engine.append([group(TOPIC, second.ledger_id, 0, [b"z"], t0=5000)]) == [True]
    assert await engine.find_by_publish_time(TOPIC, 1001) == (first.ledger_id, 1)
    assert await engine.find_by_publish_time(TOPIC, 1002) == (second.ledger_id, 0)
    assert await engine.find_by_publish_time(TOPIC, 9999) is None
    cursor = CursorInfo(
        "sub",
        "Key_Shared",
        Position(first.ledger_id, 0),
        ((Position(first.ledger_id, 1), Position(second.ledger_id, 0)),),
        {Position(first.ledger_id, 1): 5},
        {Position(first.ledger_id, 1): 2},
    )
    assert await engine.save_cursors([(TOPIC, epoch, cursor)]) == [True]
    assert await engine.save_cursors([(TOPIC, epoch, cursor)]) == [True]  # an upsert
    assert await engine.delete_ledgers(TOPIC, epoch, [first.ledger_id, second.ledger_id])
    assert [i.ledger_id for i in await engine.ledgers_of(TOPIC)] == [second.ledger_id]  # never the current
    assert await engine.read(first.ledger_id, 0, 5) == []
    newer = (await engine.fence(NS, 0, 0x1_0000_0000, "b9", 60)).epoch
    record2 = await engine.open_topic(TOPIC, NS, H, newer, 61)
    assert record2.cursors == [cursor]
    assert await engine.delete_cursor(TOPIC, newer, "sub")
    assert await engine.delete_topic(TOPIC)
    assert not await engine.delete_topic(TOPIC)
    assert await engine.topics(NS) == []
    assert await engine.open_topic(TOPIC, NS, H, newer, 62, create=False) is None


async def test_ledger_ids_only_grow_across_topics_and_owners(engine):
    seen = []
    for i in range(3):
        epoch = (await engine.fence(NS, 0, 0x1_0000_0000, f"b{i}", i)).epoch
        for name in ("t/ns/persistent/x", "t/ns/persistent/y"):
            record = await engine.open_topic(name, NS, H + i, epoch, i)
            seen.append(record.ledgers[-1].ledger_id)
    assert seen == sorted(seen) and len(set(seen)) == len(seen)


async def test_many_groups_of_many_topics_in_one_commit(engine):
    epoch = (await engine.fence(NS, 0, 0x1_0000_0000, "b", 1)).epoch
    ledgers = {}
    for i in range(20):
        name = f"t/ns/persistent/m{i}"
        ledgers[name] = (await engine.open_topic(name, NS, i, epoch, 1)).ledgers[-1].ledger_id
    groups = [
        group(name, ledger, 0, [bytes([i]) * 100] * 50) for i, (name, ledger) in enumerate(ledgers.items())
    ]
    assert await engine.append(groups) == [True] * 20
    for ledger in ledgers.values():
        assert len(await engine.read(ledger, 0, 100)) == 50


async def test_a_bundles_topics_close_in_one_call_and_its_next_owner_finds_them_open(engine):
    from brokerlb.storage import TopicClose

    lo, hi = bundle_hash_range(0x0000, 0x7FFFFFFF)
    epoch = (await engine.fence(NS, lo, hi, "b1", 1)).epoch
    names = [f"t/ns/persistent/c{i}" for i in range(4)]
    records = {n: await engine.open_topic(n, NS, 0x100 + i, epoch, 2) for i, n in enumerate(names)}
    other = (await engine.fence(NS, hi, 0x1_0000_0000, "b1", 1)).epoch  # another bundle of b1
    outside = await engine.open_topic("t/ns/persistent/far", NS, 0x9000_0000, other, 2)
    for n, r in records.items():
        assert await engine.append([group(n, r.ledgers[-1].ledger_id, 0, [b"a", b"b"])]) == [True]
    ledger_of = {n: r.ledgers[-1].ledger_id for n, r in records.items()}
    cursor = CursorInfo("s", "Shared", Position(ledger_of[names[0]], 0))
    # c0 and c1 close for a move (clients expected back), c2 as idle; c3 is left open (a crash)
    closes = [
        TopicClose(names[0], epoch, ledger_of[names[0]], (cursor,)),
        TopicClose(names[1], epoch, ledger_of[names[1]]),
        TopicClose(names[2], epoch, ledger_of[names[2]], active=False),
        TopicClose(names[0], epoch - 1, None),  # a stale writer: refused, nothing written
    ]
    assert await engine.close_topics(closes, 3) == [True, True, True, False]
    for n in names[:3]:
        (info,) = await engine.ledgers_of(n)
        assert info.closed and info.entries == 2
    assert await engine.append([group(names[0], ledger_of[names[0]], 2, [b"late"])]) == [False]

    fence = await engine.fence(NS, lo, hi, "b2", 4)
    opened = {r.name: r for r in fence.topics}
    assert sorted(opened) == [names[0], names[1], names[3]]  # the idle one is not, nor another bundle's
    for n, r in opened.items():
        assert r.epoch == fence.epoch and not r.created
        old, new = r.ledgers
        assert (old.ledger_id, old.entries, old.closed) == (ledger_of[n], 2, True)
        assert new.ledger_id > old.ledger_id and not new.closed and (new.base, new.entries) == (2, 0)
    assert opened[names[0]].cursors == [cursor] and opened[names[1]].cursors == []
    # the crashed owner's ledger was closed at its committed end: its late append stores nothing
    assert await engine.append([group(names[3], ledger_of[names[3]], 2, [b"late"])]) == [False]
    # the new owner appends to the ledgers the fence opened
    new3 = opened[names[3]].ledgers[-1].ledger_id
    assert await engine.append([group(names[3], new3, 0, [b"c"])]) == [True]
    assert [i.ledger_id for i in await engine.ledgers_of(outside.name)] == [outside.ledgers[-1].ledger_id]
    # a topic opened again the ordinary way is active again
    await engine.open_topic(names[2], NS, 0x102, fence.epoch, 5)
    again = await engine.fence(NS, lo, hi, "b3", 6)
    assert sorted(r.name for r in again.topics) == sorted(names)
