import random
from collections import Counter

import pytest

from brokerlb.dispatch import (
    NONE_KEY,
    ConsistentHashingSelector,
    DispatchConsumer,
    HashRange,
    HashRangeAutoSplitSelector,
    KeySharedDispatcher,
    KeySharedMode,
    Message,
    create_dispatcher,
    sticky_key_hash,
)
from brokerlb.errors import ConsumerAssignError, ConsumerBusyError, InvalidInputError, UnknownStrategyError
from brokerlb.kafka.hashing import murmur3_32


def ranges(selector):
    return [(c.consumer_name, (r.start, r.end)) for c, r in selector.consumer_ranges()]


def keys(n, seed=0):
    rng = random.Random(seed)
    return [f"key-{rng.getrandbits(40)}" for _ in range(n)]


# --------------------------------------------------------------------------- AUTO_SPLIT, range splitting


def test_auto_split_ranges_split_on_join():
    s = HashRangeAutoSplitSelector()
    c1, c2, c3, c4 = (DispatchConsumer(n) for n in ("c1", "c2", "c3", "c4"))
    s.add_consumer(c1)
    assert ranges(s) == [("c1", (0, 65535))]
    s.add_consumer(c2)  # Pulsar javadoc: 0 -> 32768 (consumer-2) -> 65536 (consumer-1)
    assert ranges(s) == [("c2", (0, 32768)), ("c1", (32769, 65535))]
    s.add_consumer(c3)  # the first biggest range is split
    assert ranges(s) == [("c3", (0, 16384)), ("c2", (16385, 32768)), ("c1", (32769, 65535))]
    s.add_consumer(c4)
    assert ranges(s) == [
        ("c3", (0, 16384)),
        ("c2", (16385, 32768)),
        ("c4", (32769, 49152)),
        ("c1", (49153, 65535)),
    ]


def test_auto_split_ranges_merge_on_leave():
    s = HashRangeAutoSplitSelector()
    c1, c2, c3 = (DispatchConsumer(n) for n in ("c1", "c2", "c3"))
    for c in (c1, c2, c3):
        s.add_consumer(c)
    s.remove_consumer(c2)  # its range goes to the consumer above
    assert ranges(s) == [("c3", (0, 16384)), ("c1", (16385, 65535))]
    s.remove_consumer(c1)  # the top holder leaves: the one below takes the top
    assert ranges(s) == [("c3", (0, 65535))]
    s.remove_consumer(c3)
    assert s.select(123) is None
    s.remove_consumer(c3)  # unknown: ignored, as Pulsar does


def test_auto_split_selection_follows_ranges():
    s = HashRangeAutoSplitSelector()
    for n in ("a", "b", "c", "d", "e"):
        s.add_consumer(DispatchConsumer(n))
    table = ranges(s)
    for k in keys(2000):
        h = sticky_key_hash(k.encode())
        slot = h % 65536
        owner = next(name for name, (lo, hi) in table if lo <= slot <= hi)
        assert s.select(h).consumer_name == owner


def test_auto_split_runs_out_of_ranges():
    s = HashRangeAutoSplitSelector(range_size=4)
    for n in "abcd":
        s.add_consumer(DispatchConsumer(n))
    with pytest.raises(ConsumerAssignError, match="No more range can assigned to new consumer"):
        s.add_consumer(DispatchConsumer("e"))
    with pytest.raises(InvalidInputError, match="power of 2"):
        HashRangeAutoSplitSelector(range_size=6)


# --------------------------------------------------------------------------- AUTO_SPLIT, consistent hashing


def test_consistent_ring_points_and_balance():
    s = ConsistentHashingSelector()
    consumers = [DispatchConsumer(f"consumer-{i}") for i in range(4)]
    for c in consumers:
        s.add_consumer(c)
    assert len(s.ring()) == 400
    assert s.ring()[0][0] == min(
        murmur3_32(f"consumer-{i}\0{j}".encode()) & 0x7FFFFFFF for i in range(4) for j in range(100)
    )
    counts = Counter(s.select(sticky_key_hash(k.encode())).consumer_name for k in keys(20000))
    assert set(counts) == {c.consumer_name for c in consumers}
    assert max(counts.values()) < 1.6 * min(counts.values())


def test_consistent_join_and_leave_move_only_the_keys_they_must():
    s = ConsistentHashingSelector()
    base = [DispatchConsumer(n) for n in ("a", "b", "c")]
    for c in base:
        s.add_consumer(c)
    sample = [sticky_key_hash(k.encode()) for k in keys(5000, seed=1)]
    before = {h: s.select(h) for h in sample}
    newcomer = DispatchConsumer("d")
    s.add_consumer(newcomer)
    after = {h: s.select(h) for h in sample}
    moved = [h for h in sample if after[h] is not before[h]]
    assert moved and all(after[h] is newcomer for h in moved)  # keys only move to the newcomer
    s.remove_consumer(newcomer)
    assert {h: s.select(h) for h in sample} == before  # and come back when it leaves


def test_consistent_same_name_consumers_share_points():
    s = ConsistentHashingSelector(replica_points=50)
    twin1, twin2 = DispatchConsumer("same"), DispatchConsumer("same")
    s.add_consumer(twin1)
    s.add_consumer(twin2)
    served = Counter(c.consumer_id for _, c in s.ring())
    assert served == {twin1.consumer_id: 25, twin2.consumer_id: 25}
    s.remove_consumer(twin1)
    assert {c.consumer_id for _, c in s.ring()} == {twin2.consumer_id} and len(s.ring()) == 50
    with pytest.raises(InvalidInputError):
        ConsistentHashingSelector(replica_points=0)


# --------------------------------------------------------------------------- STICKY


def sticky(*specs, strict=False):
    d = KeySharedDispatcher(KeySharedMode.STICKY, strict_ranges=strict)
    out = {}
    for name, rs in specs:
        out[name] = DispatchConsumer(name, permits=100, hash_ranges=tuple(HashRange(a, b) for a, b in rs))
        d.add_consumer(out[name])
    return d, out


def test_sticky_fixed_ranges_select_by_slot():
    d, c = sticky(("low", [(0, 32767)]), ("high", [(32768, 65535)]))
    for k in keys(500):
        slot = sticky_key_hash(k.encode()) % 65536
        assert d.owner_of(Message(key=k)) is (c["low"] if slot <= 32767 else c["high"])


def test_sticky_overlap_refused_with_clear_error_and_nothing_changed():
    d, c = sticky(("a", [(0, 100), (200, 300)]))
    with pytest.raises(
        ConsumerAssignError,
        match=r"Range conflict with consumer a: its range \[200, 300\] "
        r"overlaps \[250, 400\] of b",
    ):
        d.add_consumer(DispatchConsumer("b", hash_ranges=(HashRange(250, 400),)))
    assert [x.consumer_name for x in d.consumers] == ["a"]
    d.add_consumer(DispatchConsumer("b", hash_ranges=(HashRange(301, 400),)))  # adjacent is fine
    with pytest.raises(ConsumerAssignError, match="must not be empty"):
        d.add_consumer(DispatchConsumer("c"))
    with pytest.raises(InvalidInputError, match="overlap"):
        DispatchConsumer("d", hash_ranges=(HashRange(0, 10), HashRange(5, 20)))
    with pytest.raises(InvalidInputError, match="<= 65535"):
        HashRange(0, 65536)


def test_sticky_uncovered_slots_and_pulsar_gap_quirk():
    d, c = sticky(("a", [(0, 10), (20, 30)]))
    selector = d.selector
    assert selector.select(5) is c["a"] and selector.select(40) is None
    assert selector.select(15) is c["a"]  # Pulsar: floor and ceiling both belong to "a"
    strict, cs = sticky(("a", [(0, 10), (20, 30)]), strict=True)
    assert strict.selector.select(15) is None and strict.selector.select(25) is cs["a"]
    d.remove_consumer(c["a"])
    assert selector.select(5) is None


# --------------------------------------------------------------------------- dispatcher


def test_sticky_key_precedence():
    assert Message(key="k", ordering_key=b"o").sticky_key == b"o"
    assert Message(key="k").sticky_key == b"k" and Message(key=b"\x00").sticky_key == b"\x00"
    assert Message().sticky_key == NONE_KEY


def test_same_key_always_same_consumer_and_held_without_permits():
    d = KeySharedDispatcher()
    a, b = DispatchConsumer("a", permits=1000), DispatchConsumer("b", permits=1000)
    d.add_consumer(a)
    d.add_consumer(b)
    msgs = [Message(key=k, message_id=i) for i, k in enumerate(keys(50) * 4)]
    result = d.dispatch(msgs)
    owner_by_key: dict[str, str] = {}
    for consumer, sent in result.sent:
        for m in sent:
            assert owner_by_key.setdefault(m.key, consumer.consumer_name) == consumer.consumer_name
    assert not result.held and a.permits + b.permits == 2000 - 200
    starved = d.owner_of(msgs[0])
    starved.permits = 0
    result = d.dispatch(msgs[:10])
    assert all(d.owner_of(m) is starved for m in result.held) and result.held
    assert all(c is not starved for c, _ in result.sent)


def test_mode_mismatch_and_factory():
    d = KeySharedDispatcher()
    with pytest.raises(ConsumerBusyError, match="different type"):
        d.add_consumer(DispatchConsumer("x", hash_ranges=(HashRange(0, 5),)))
    assert isinstance(
        create_dispatcher("Key_Shared", use_consistent_hashing=False).selector, HashRangeAutoSplitSelector
    )
    assert create_dispatcher("Exclusive").subscription_type == "Exclusive"
    assert create_dispatcher("Failover", partition_index=2).partition_index == 2
    assert create_dispatcher("Shared").subscription_type == "Shared"
    with pytest.raises(UnknownStrategyError, match="Key_Shared"):
        create_dispatcher("Broadcast")
