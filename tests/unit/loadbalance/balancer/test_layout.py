"""The balancer's bundle table kept between cycles (:mod:`brokerlb.loadbalance.balancer.layout`):
it does only what changed, and the model read from it is the model read from scratch."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb.loadbalance.balancer.layout import Layout
from brokerlb.loadbalance.balancer.memory import BalancerMemory
from brokerlb.loadbalance.balancer.model import ClusterModel
from brokerlb.loadbalance.view import ClusterView
from brokerlb.model import LocalBrokerData
from brokerlb.model.stats_columns import BundleStatsColumns
from brokerlb.testing import broker, bundle_stats, load_data

A, B, C, D = (
    f"t/ns/0x{lo:08x}_0x{up:08x}"
    for lo, up in ((0, 1 << 30), (1 << 30, 2 << 30), (2 << 30, 3 << 30), (3 << 30, 0xFFFFFFFF))
)
OTHER = "t/other/0x00000000_0xffffffff"
BROKERS = ("b1:8080", "b2:8080")


def report(name: str, rates: dict[str, float], last_update: int = 1) -> LocalBrokerData:
    return broker(
        name,
        bundles={
            b: bundle_stats(r, r, 1000 * r, 1000 * r, topics=2, producer_count=1) for b, r in rates.items()
        },
        last_update=last_update,
    )


def test_the_same_reports_change_nothing_and_new_stats_only_their_rows() -> None:
    layout = Layout()
    first = [report("b1:8080", {A: 1, B: 2}), report("b2:8080", {C: 3})]
    assert layout.refresh(BROKERS, first) is True
    version, names, table = layout.version, layout.names, layout.table()
    assert names == [A, B, C] and layout.owner.tolist() == [0, 0, 1]
    assert table[:, 0].tolist() == [2, 4, 6] and table[:, 3].tolist() == [2, 2, 2]

    assert layout.refresh(BROKERS, first) is False  # the same objects: nothing read
    assert layout.version == version and layout.names is names

    rewritten = [first[0], report("b2:8080", {C: 5}, last_update=2)]  # same bundles, new numbers
    assert layout.refresh(BROKERS, rewritten) is False
    assert layout.version == version and layout.names is names
    assert layout.table()[:, 0].tolist() == [2, 4, 10]
    assert table[:, 0].tolist() == [2, 4, 6]  # a table handed out earlier is not overwritten


def test_a_moved_bundle_makes_the_table_again_and_bumps_the_version() -> None:
    layout = Layout()
    layout.refresh(BROKERS, [report("b1:8080", {A: 1, B: 2}), report("b2:8080", {C: 3})])
    version = layout.version
    assert layout.refresh(BROKERS, [report("b1:8080", {A: 1}, 2), report("b2:8080", {C: 3, B: 2}, 2)]) is True
    assert layout.version > version
    assert layout.names == [A, C, B] and layout.owner.tolist() == [0, 1, 1]
    assert layout.bundle_index == {A: 0, C: 1, B: 2}


def test_a_bundle_listed_twice_belongs_to_the_first_broker() -> None:
    layout = Layout()
    # a stale report of b2 still lists B, which b1 serves now
    layout.refresh(BROKERS, [report("b1:8080", {A: 1, B: 7}), report("b2:8080", {B: 2, C: 3})])
    assert layout.names == [A, B, C] and layout.owner.tolist() == [0, 0, 1]
    assert layout.table()[:, 0].tolist() == [2, 14, 6]
    # b1's numbers change in place; the kept rows follow
    layout.refresh(BROKERS, [report("b1:8080", {A: 1, B: 9}, 2), layout.blocks[1].report])
    assert layout.table()[:, 0].tolist() == [2, 18, 6]


def test_namespaces_ranges_and_the_ring_order_of_merges() -> None:
    layout = Layout()
    layout.refresh(
        BROKERS, [report("b1:8080", {D: 1, OTHER: 1, "t/ns/not-a-range": 1}), report("b2:8080", {B: 1, A: 1})]
    )
    assert [layout.namespaces[i] for i in layout.ns_id] == ["t/ns", "t/other", "t/ns", "t/ns", "t/ns"]
    assert layout.bounds[2].tolist() == [-1, -1]
    assert [layout.names[k] for k in layout.merge_order()] == [A, B, D, OTHER]


def test_a_broker_joining_or_leaving_makes_the_table_again() -> None:
    layout = Layout()
    one = report("b1:8080", {A: 1})
    layout.refresh(BROKERS[:1], [one])
    version = layout.version
    assert layout.refresh(BROKERS, [one, report("b2:8080", {})]) is True
    assert layout.version > version and layout.names == [A] and len(layout.starts) == 3
    assert layout.refresh((), []) is True
    assert layout.names == [] and layout.table().shape == (0, 5) and layout.merge_order().tolist() == []


def test_columnar_reports_read_as_reports_of_samples() -> None:
    sampled = report("b1:8080", {A: 1, B: 2, C: 3})
    columnar = report("b1:8080", {A: 1, B: 2, C: 3})
    columnar.last_stats = BundleStatsColumns.of(sampled.last_stats)
    plain, cols = Layout(), Layout()
    plain.refresh(BROKERS[:1], [sampled])
    cols.refresh(BROKERS[:1], [columnar])
    assert np.array_equal(plain.table(), cols.table()) and plain.names == cols.names


# --------------------------------------------------------------- kept == read from scratch

CHANGES = st.lists(
    st.tuples(
        st.sampled_from(["same", "stats", "move", "stale", "join", "leave"]),
        st.integers(0, 99),
        st.floats(0, 50, allow_nan=False),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=40, deadline=None)
@given(CHANGES)
def test_the_model_kept_between_cycles_is_the_model_read_from_scratch(changes) -> None:  # type: ignore[no-untyped-def]
    names = [
        f"t/n{ns}/0x{i * (1 << 29):08x}_0x{(i + 1) * (1 << 29) - (i == 7):08x}"
        for ns in (1, 2)
        for i in range(8)
    ]
    held: dict[str, dict[str, float]] = {"b1:8080": {}, "b2:8080": {}, "b3:8080": {}}
    for k, name in enumerate(names):
        held[list(held)[k % 3]][name] = float(k)
    reports = {b: report(b, rates) for b, rates in held.items()}
    memory = BalancerMemory()
    for step, (kind, x, value) in enumerate(changes, start=2):
        brokers = sorted(held)
        b = brokers[x % len(brokers)]
        if kind == "stats" and held[b]:
            bundle = sorted(held[b])[x % len(held[b])]
            held[b][bundle] = value
            reports[b] = report(b, held[b], step)
        elif kind in ("move", "stale") and held[b] and len(brokers) > 1:
            bundle = sorted(held[b])[x % len(held[b])]
            to = brokers[(x + 1) % len(brokers)]
            if to != b:
                held[to][bundle] = held[b].pop(bundle)
                reports[to] = report(to, held[to], step)
                if kind == "move":  # "stale": the source's report still lists it
                    reports[b] = report(b, held[b], step)
        elif kind == "join":
            name = f"b{len(held) + 1}:8080"
            held[name], reports[name] = {}, report(name, {}, step)
        elif kind == "leave" and len(held) > 1:
            gone = held.pop(b)
            del reports[b]
            heir = sorted(held)[0]
            held[heir].update(gone)
            reports[heir] = report(heir, held[heir], step)
        view = ClusterView(load_data=load_data(dict(sorted(reports.items()))))
        kept = ClusterModel.build(view, memory)
        fresh = ClusterModel.build(view, BalancerMemory())
        assert kept.bundles == fresh.bundles and kept.bundle_index == fresh.bundle_index
        assert [kept.namespace_of(k) for k in range(len(kept.bundles))] == [
            fresh.namespace_of(k) for k in range(len(fresh.bundles))
        ]
        for attr in (
            "owner",
            "traffic",
            "throughput",
            "msg_rate",
            "topics",
            "sessions",
            "bounds",
            "usage",
            "cost",
        ):
            assert np.array_equal(getattr(kept, attr), getattr(fresh, attr)), attr
