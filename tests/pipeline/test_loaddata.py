"""loaddata equals the in-process load data (brokerlb.history.replay_load_data over brokerlb.model).

Tolerance: relative 1e-9 on every average (the closed-form folds of long runs differ from
step-by-step folding in the last bits; sample counts and topic counts are exact).
"""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from brokerlb.history import (
    TOPIC_SAMPLES,
    BrokerSample,
    HistoryWriter,
    TopicSample,
    record_from_json,
    replay_load_data,
)
from brokerlb.model import BundleData, LocalBrokerData, NamespaceBundleStats, TimeAverageBrokerData
from brokerlb.ring import NamespaceBundles, topic_hash
from tests.pipeline.conftest import ODD_GOOD_LINES

pytestmark = pytest.mark.spark

REL = 1e-9
WINDOWS = (("shortTerm", "short_term_data"), ("longTerm", "long_term_data"))
VALUES = (
    ("MsgThroughputIn", "msg_throughput_in"),
    ("MsgThroughputOut", "msg_throughput_out"),
    ("MsgRateIn", "msg_rate_in"),
    ("MsgRateOut", "msg_rate_out"),
)


def assert_bundle(row, data: BundleData) -> None:
    for prefix, attr in WINDOWS:
        window = getattr(data, attr)
        assert row[f"{prefix}Samples"] == window.num_samples, (row["bundle"], prefix)
        for column, field in VALUES:
            assert row[prefix + column] == pytest.approx(getattr(window, field), rel=REL, abs=1e-12), (
                row["bundle"],
                column,
            )
    assert row["topics"] == data.topics


def assert_broker(row, data: TimeAverageBrokerData) -> None:
    for key, value in data.to_json().items():
        assert row[key] == pytest.approx(value, rel=REL, abs=1e-9), (row["brokerId"], key)


def assert_equal_to_replay(spark, result, ref) -> None:
    final = {r["bundle"]: r for r in result.table(spark, "bundle_load_data").collect()}
    assert set(final) == set(ref.bundle_data)
    for bundle, data in ref.bundle_data.items():
        assert_bundle(final[bundle], data)
    active = {b for report in ref.latest_reports.values() for b in report.last_stats}
    assert {b for b, r in final.items() if r["active"]} == active
    history = {(r["cycle"], r["bundle"]): r for r in result.table(spark, "bundle_load_history").collect()}
    assert set(history) == {(h.cycle, h.bundle) for h in ref.bundle_history}
    for h in ref.bundle_history:
        assert_bundle(history[(h.cycle, h.bundle)], h.data)
        assert history[(h.cycle, h.bundle)]["timestamp"] == h.timestamp
    brokers = {r["brokerId"]: r for r in result.table(spark, "broker_time_average").collect()}
    assert set(brokers) == set(ref.time_average_data)
    for broker, data in ref.time_average_data.items():
        assert_broker(brokers[broker], data)
    broker_history = {
        (r["cycle"], r["brokerId"]): r for r in result.table(spark, "broker_time_average_history").collect()
    }
    assert set(broker_history) == {(h.cycle, h.broker_id) for h in ref.broker_history}
    for h in ref.broker_history:
        assert_broker(broker_history[(h.cycle, h.broker_id)], h.data)
    assert result.counts["cycles"] == ref.cycles
    # the counts come from the writes (observed), and must be the written tables' sizes
    assert result.counts["bundles"] == len(final)
    assert result.counts["bundleSamples"] == len(history)
    assert result.counts["brokers"] == len(brokers)


@pytest.mark.parametrize("cycles", ["leader", "report"])
def test_reports_equal_the_in_process_leader(spark, history, cycles):
    from brokerlb.pipeline.loaddata import load_data

    result = load_data(spark, str(history.warehouse), cycles=cycles)
    assert_equal_to_replay(spark, result, replay_load_data(history.broker_samples, cycles=cycles))
    assert (history.warehouse / "loaddata" / f"reports-{cycles}" / "summary.json").exists()


def topic_reports(samples: list[TopicSample], layouts) -> list[BrokerSample]:
    """What a broker would report from these topic samples: per (timestamp, broker), per bundle, the sums."""
    versions = defaultdict(list)
    for layout in layouts:
        versions[layout.namespace].append(
            (layout.timestamp, NamespaceBundles(layout.namespace, layout.boundaries))
        )
    groups: dict = defaultdict(lambda: defaultdict(list))
    for s in samples:
        valid = [b for ts, b in sorted(versions[s.namespace], key=lambda v: v[0]) if ts <= s.timestamp]
        bundle = str(valid[-1].bundle_for_hash(topic_hash(s.topic))) if valid else s.bundle
        groups[(s.timestamp, s.broker)][bundle].append(s)
    reports = []
    for (ts, broker), bundles in groups.items():
        data = LocalBrokerData()
        data.last_stats = {
            bundle: NamespaceBundleStats(
                msg_rate_in=sum(t.msg_rate_in for t in topics),
                msg_throughput_in=sum(t.msg_throughput_in for t in topics),
                msg_rate_out=sum(t.msg_rate_out for t in topics),
                msg_throughput_out=sum(t.msg_throughput_out for t in topics),
                consumer_count=sum(t.consumer_count for t in topics),
                producer_count=sum(t.producer_count for t in topics),
                topics=len(topics),
            )
            for bundle, topics in bundles.items()
            if bundle is not None
        }
        reports.append(BrokerSample(ts, broker, data))
    return reports


def test_topic_level_history_equals_what_brokers_would_report(spark, history):
    from brokerlb.pipeline.loaddata import load_data

    samples = history.topic_samples + [
        record_from_json("topic-samples", json.loads(line)) for line in ODD_GOOD_LINES["topic-samples"]
    ]
    result = load_data(spark, str(history.warehouse), source="topics")
    assert_equal_to_replay(spark, result, replay_load_data(topic_reports(samples, history.layouts)))
    assert result.counts["unmappedTopicSamples"] == 0 and result.counts["bundleMismatches"] == 0
    split = [
        r
        for r in result.table(spark, "bundle_load_data").collect()
        if r["bundle"].startswith("t/ns/0x00000000_0x")
    ]
    assert {r["bundle"] for r in split} == {"t/ns/0x00000000_0x40000000", "t/ns/0x00000000_0x20000000"}


def test_topic_source_stops_counting_a_broker_the_leader_removed(spark, tmp_path):
    """A broker's last topic dump is not current for ever: the leader's removal ends it, as in the model."""
    from brokerlb.history import BundleBoundaries
    from brokerlb.pipeline.ingest import ingest
    from brokerlb.pipeline.loaddata import load_data

    t0, ns = 1_700_000_000_000, "t/gone"
    layout = BundleBoundaries.of(t0 - 1, NamespaceBundles.create(ns, 4))
    topics = [f"persistent://{ns}/t{i}" for i in range(6)]
    samples, removals = [], [BrokerSample.removed(t0 + 3_500, "b2:8080")]
    for step in range(6):
        ts = t0 + step * 1_000
        for i, topic in enumerate(topics):
            broker = "b1:8080" if i % 2 == 0 or step >= 4 else "b2:8080"  # b2's topics move to b1
            if step >= 4 or broker == "b1:8080" or step < 3:
                samples.append(TopicSample(ts, broker, topic, msg_rate_in=10.0 + i))
    with HistoryWriter(tmp_path / "h", "w") as writer:
        writer.write_all([layout, *samples, *removals])
    ingest(spark, str(tmp_path / "h"), str(tmp_path / "wh"))
    result = load_data(spark, str(tmp_path / "wh"), source="topics")
    reports = topic_reports(samples, [layout])
    ref = replay_load_data(sorted(reports + removals, key=lambda r: (r.timestamp, r.broker_id)))
    assert_equal_to_replay(spark, result, ref)
    assert set(ref.time_average_data) == {"b1:8080"}


def test_topic_to_bundle_uses_crc32_and_the_layout_valid_at_the_time(spark, history):
    from pyspark.sql import functions as F

    from brokerlb.pipeline.topic_bundles import assign_bundles, boundary_index

    samples = spark.read.parquet(str(history.warehouse / "topic_samples"))
    layouts = spark.read.parquet(str(history.warehouse / "bundle_boundaries"))
    extra = spark.createDataFrame(
        [
            (1_700_000_000_000, "b", "persistent://nolayout/ns/a", "nolayout/ns", None),
            (
                1_700_000_000_000,
                "b",
                "persistent://nolayout/ns/b",
                "nolayout/ns",
                "nolayout/ns/0x00000000_0xffffffff",
            ),
        ],
        "timestamp long, broker string, topic string, namespace string, bundle string",
    )
    mapped = assign_bundles(
        spark,
        samples.select("timestamp", "broker", "topic", "namespace", "bundle").unionByName(extra),
        boundary_index(layouts),
    )
    rows = mapped.select("timestamp", "topic", "topicHash", "bundle", "bundleSource").collect()
    reference = {(s.timestamp, s.topic): s for s in history.topic_samples}
    expected = {s.timestamp: s for s in history.layouts}
    checked = 0
    for r in rows:
        if r["topic"].startswith("persistent://nolayout"):
            continue
        assert r["topicHash"] == topic_hash(r["topic"])
        if (r["timestamp"], r["topic"]) in reference:
            ns = reference[(r["timestamp"], r["topic"])].namespace
            valid = max(
                (lay for lay in history.layouts if lay.namespace == ns and lay.timestamp <= r["timestamp"]),
                key=lambda lay: lay.timestamp,
            )
            assert (
                r["bundle"] == str(valid.bundles().find_bundle(r["topic"])) and r["bundleSource"] == "layout"
            )
            checked += 1
    assert checked == len(history.topic_samples) and expected
    by_topic = {
        r["topic"]: (r["bundle"], r["bundleSource"])
        for r in rows
        if r["topic"].startswith("persistent://nolayout")
    }
    assert by_topic == {
        "persistent://nolayout/ns/a": (None, None),
        "persistent://nolayout/ns/b": ("nolayout/ns/0x00000000_0xffffffff", "recorded"),
    }
    assert mapped.where(F.col("bundleMismatch")).count() == 0


def test_load_data_json_is_pulsars_and_reads_back_through_the_model(spark, history):
    from brokerlb.pipeline.loaddata import LoadDataResult, load_data_json

    result = LoadDataResult(str(history.warehouse / "loaddata" / "reports-leader"), "reports", "leader")
    doc = load_data_json(spark, result)
    ref = replay_load_data(history.broker_samples)
    for bundle, data in ref.bundle_data.items():
        back = BundleData.from_json(doc["bundleData"][bundle])
        assert back.short_term_data.num_samples == data.short_term_data.num_samples
        assert back.long_term_data.msg_rate_in == pytest.approx(data.long_term_data.msg_rate_in, rel=REL)
    assert set(doc["timeAverageData"]) == set(ref.time_average_data)


def test_window_and_bad_arguments(spark, history):
    from brokerlb.errors import InvalidInputError
    from brokerlb.pipeline.loaddata import load_data

    until = sorted(s.timestamp for s in history.broker_samples)[50]
    result = load_data(
        spark,
        str(history.warehouse),
        cycles="report",
        until=until,
        output=str(history.warehouse / "windowed"),
    )
    inside = [s for s in history.broker_samples if s.timestamp <= until]
    assert_equal_to_replay(spark, result, replay_load_data(inside, cycles="report"))
    with pytest.raises(InvalidInputError, match="source"):
        load_data(spark, str(history.warehouse), source="metrics")
    with pytest.raises(InvalidInputError, match="No broker samples in warehouse .*No ingest has run"):
        load_data(spark, str(history.warehouse / "nowhere"))


def test_bundle_join_edges_equal_the_numpy_index(spark):
    """Hashes on boundaries, at 0 and at 0xffffffff (the last bundle includes it), bundles spanning
    many hash buckets and several inside one: the JVM join agrees with BoundaryIndex.bundle_of."""
    import numpy as np

    from brokerlb.pipeline.bundle_index import BoundaryIndex
    from brokerlb.pipeline.topic_bundles import assign_bundles

    bounds = [0, 0x00000010, 0x00000011, 0x01000000, 0x7FFFFFFF, 0xF0000000, 0xFFFFFFFF]
    index = BoundaryIndex([("t/e", 100, bounds), ("t/e", 200, [0, 0x80000000, 0xFFFFFFFF])])
    hashes = sorted(
        {
            0,
            1,
            0xF,
            0x10,
            0x11,
            0x12,
            0xFFFFFF,
            0x1000000,
            0x7FFFFFFE,
            0x7FFFFFFF,
            0x80000000,
            0xEFFFFFFF,
            0xF0000000,
            0xFFFFFFFE,
            0xFFFFFFFF,
        }
    )
    rows = [(ts, "b", f"persistent://t/e/h{h}", "t/e", None, h) for ts in (50, 100, 199, 200) for h in hashes]
    samples = spark.createDataFrame(
        rows, "timestamp long, broker string, topic string, namespace string, bundle string, topicHash long"
    )
    got = {
        (r["timestamp"], r["topicHash"]): (r["bundleLower"], r["bundleUpper"])
        for r in assign_bundles(spark, samples, index).collect()
    }
    assert len(got) == len(rows)
    for (ts, h), (lower, upper) in got.items():
        (version,) = index.version_at(np.asarray([index.namespace_id("t/e")]), np.asarray([ts]))
        want_lower, want_upper = index.bundle_of(np.asarray([version]), np.asarray([h]))
        expected = (None, None) if version < 0 else (int(want_lower[0]), int(want_upper[0]))
        assert (lower, upper) == expected, (ts, hex(h))


def test_topic_samples_without_a_bundle_are_written_out_with_a_reason_and_counted(spark, tmp_path):
    """A namespace with no layout and samples that name no bundle: kept aside, counted, never dropped."""
    from brokerlb.pipeline.ingest import ingest
    from brokerlb.pipeline.loaddata import load_data

    samples = []
    for ts in (1_700_000_000_000, 1_700_000_060_000):
        for name in ("a", "b", "c"):
            samples.append(
                {
                    "timestamp": ts,
                    "broker": "b1",
                    "topic": f"persistent://nolayout/ns/{name}",
                    "msgRateIn": 1.0,
                }
            )
        samples.append(
            {
                "timestamp": ts,
                "broker": "b1",
                "topic": "persistent://nolayout/ns/d",
                "bundle": "nolayout/ns/0x00000000_0xffffffff",
                "msgRateIn": 2.0,
            }
        )
    root = tmp_path / "history"
    with HistoryWriter(root, "broker-1:8080") as writer:
        writer.write_all(record_from_json(TOPIC_SAMPLES, s) for s in samples)
    warehouse = str(tmp_path / "warehouse")
    ingest(spark, str(root), warehouse)
    result = load_data(spark, warehouse, source="topics")
    assert result.counts["unmappedTopicSamples"] == 6
    unmapped = result.table(spark, "unmapped_topic_samples").collect()
    assert len(unmapped) == 6 and {r["topic"] for r in unmapped} == {
        f"persistent://nolayout/ns/{n}" for n in "abc"
    }
    assert all("has no bundle-boundaries record" in r["reason"] for r in unmapped)
    final = result.table(spark, "bundle_load_data").collect()
    assert [r["bundle"] for r in final] == ["nolayout/ns/0x00000000_0xffffffff"] and result.counts[
        "bundles"
    ] == 1
