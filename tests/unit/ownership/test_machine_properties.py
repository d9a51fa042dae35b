"""Random event sequences never break the machine's invariants, and the watchdog always ends in-flight states."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from brokerlb.errors import InvalidTransitionError
from brokerlb.ownership import (
    FORCED_TRANSITIONS,
    IN_FLIGHT,
    Assign,
    AssignmentDone,
    AssignmentFailed,
    BrokerLost,
    OwnershipLost,
    OwnershipMachine,
    ReleaseDone,
    RingUpdated,
    Split,
    SplitDone,
    SplitFailed,
    Tick,
    Unload,
    is_valid_transition,
)

NS = "t/ns"
PARENT = f"{NS}/0x00000000_0xffffffff"
CHILDREN = (f"{NS}/0x00000000_0x7fffffff", f"{NS}/0x7fffffff_0xffffffff")
BUNDLES = [PARENT, *CHILDREN]
BROKERS = ["b1", "b2", "b3"]

bundle = st.sampled_from(BUNDLES)
broker = st.sampled_from(BROKERS)
event = st.one_of(
    st.builds(lambda b, k: ("assign", b, k), bundle, broker),
    st.builds(lambda b, k: ("done", b, k), bundle, broker),
    st.builds(lambda b, k: ("failed", b, k), bundle, broker),
    st.builds(lambda b, k: ("owner-lost", b, k), bundle, broker),
    st.builds(lambda b, k: ("unload", b, k), bundle, st.one_of(st.none(), broker)),
    st.builds(lambda b: ("released", b, None), bundle),
    st.just(("split", PARENT, None)),
    st.just(("split-done", PARENT, None)),
    st.just(("split-failed", PARENT, None)),
    st.builds(lambda k: ("lost", None, k), broker),
    st.sampled_from([("ring", None, (PARENT,)), ("ring", None, CHILDREN)]),
    st.integers(min_value=1, max_value=40_000).map(lambda dt: ("tick", None, dt)),
)


def make(kind, b, arg, sid, at):
    common = {"stimulus_id": sid, "at_ms": at}
    return {
        "assign": lambda: Assign(bundle=b, broker=arg, **common),
        "done": lambda: AssignmentDone(bundle=b, broker=arg, **common),
        "failed": lambda: AssignmentFailed(bundle=b, broker=arg, **common),
        "owner-lost": lambda: OwnershipLost(bundle=b, broker=arg, **common),
        "unload": lambda: Unload(bundle=b, to=arg, **common),
        "released": lambda: ReleaseDone(bundle=b, **common),
        "split": lambda: Split(bundle=b, children=CHILDREN, **common),
        "split-done": lambda: SplitDone(bundle=b, **common),
        "split-failed": lambda: SplitFailed(bundle=b, **common),
        "lost": lambda: BrokerLost(broker=arg, **common),
        "ring": lambda: RingUpdated(namespace=NS, bundles=arg, **common),
        "tick": lambda: Tick(**common),
    }[kind]()


@settings(max_examples=500, deadline=None)
@given(st.lists(event, min_size=1, max_size=40))
@example(
    events=[  # a SplitDone refused because a child is busy names the parent and carries its story
        ("assign", "t/ns/0x00000000_0xffffffff", "b1"),
        ("assign", "t/ns/0x00000000_0x7fffffff", "b1"),
        ("done", "t/ns/0x00000000_0xffffffff", "b1"),
        ("split", "t/ns/0x00000000_0xffffffff", None),
        ("split-done", "t/ns/0x00000000_0xffffffff", None),
    ]
)
def test_random_sequences_keep_the_invariants(events):
    m = OwnershipMachine(in_flight_timeout_ms=30_000, tombstone_delay_ms=100_000, validate=True)
    now = 0
    for i, (kind, b, arg) in enumerate(events):
        if kind == "tick":
            now += arg
        ev = make(kind, b, arg, f"s{i}", now)
        before = m.records()
        try:
            m.handle(ev)
        except InvalidTransitionError as exc:
            assert m.records() == before, "an invalid event changed the state"
            assert exc.story == m.story(b) if b else True
    for t in m.story(*BUNDLES):
        legal = t.start is t.finish or is_valid_transition(t.start, t.finish)
        assert legal or (t.forced and (t.start, t.finish) in FORCED_TRANSITIONS), str(t)
    # However it got here, one watchdog tick after the timeout leaves nothing in flight.
    m.handle(Tick(stimulus_id="final", at_ms=now + 30_000))
    assert not [r for r in m.records().values() if r.state in IN_FLIGHT]
