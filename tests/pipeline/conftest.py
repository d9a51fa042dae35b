"""Spark fixtures: one local[2] session per test process, and history ingested once per session.

The history (``history_root``) holds broker samples, topic samples and bundle layouts from the
seeded generators of :mod:`tests.history_data`, plus one file per kind of lines that do not
fit. It is ingested in two steps (a second file per kind arrives after the first run) to
exercise the incremental path; ``warehouse`` is the result.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from brokerlb.history import BROKER_SAMPLES, BUNDLE_BOUNDARIES, TOPIC_SAMPLES, HistoryWriter
from tests.history_data import broker_samples, topic_history

#: A topic carrying 5 000 msg/s in namespace t/other (recommend isolates it).
HOT_TOPIC = "persistent://t/other/hot"

#: Lines that must be rejected, per kind: (line, words the reason must contain).
BAD_LINES = {
    BROKER_SAMPLES: [
        (
            '{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"cpu": {"usage": NaN, "limit": 100}}}',
            "localData.cpu.usage = NaN",
        ),
        (
            '{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"lastStats": {"t/ns/x": {"msgRateIn": -1}}}}',
            "localData.lastStats[t/ns/x].msgRateIn = -1.0",
        ),
        (
            '{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"lastStats": {"t/ns/x": {"topics": 2.5}}}}',
            "lastStats[t/ns/x].topics = 2.5",
        ),
        ('{"timestamp": 1700000000000, "brokerId": "b9"}', "localData: missing"),
        ('{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"underLoaded": true}}', "LoadReport"),
        ('{"timestamp": 1700000000000, "brokerId": "", "localData": null}', "brokerId"),
        ('{"timestamp": "yesterday", "brokerId": "b9", "localData": null}', "malformed"),
        (
            '{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"numTopics": -3}}',
            "numTopics = -3.0",
        ),
        (
            '{"timestamp": 1700000000000, "brokerId": "b9", "localData": {"bandwidthIn": {"usage": -5, "limit": 10}}}',
            "negative usage",
        ),
    ],
    TOPIC_SAMPLES: [
        (
            '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "msgRateIn": NaN}',
            "msgRateIn = NaN",
        ),
        ("not json at all", "malformed"),
        ('{"timestamp": 1.5, "broker": "b", "topic": "persistent://t/ns/x"}', "timestamp = 1.5"),
        ('{"broker": "b", "topic": "persistent://t/ns/x"}', "timestamp = null: missing"),
        ('{"timestamp": 1700000000000, "broker": "b", "topic": "t/ns/x"}', "not a full topic name"),
        (
            '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "producerCount": 2.5}',
            "producerCount = 2.5",
        ),
        (
            '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "msgRateOut": "fast"}',
            "malformed",
        ),
        (
            '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "bundle": "t/other/0x00000000_0xffffffff"}',
            "not a bundle of the topic's namespace",
        ),
        (
            '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "bundle": "t/ns/0x00000000_0x00000001"}',
            "does not hash into this range",
        ),
        ('{"timestamp": 1700000000000, "topic": "persistent://t/ns/x"}', "broker"),
    ],
    BUNDLE_BOUNDARIES: [
        (
            '{"timestamp": 1700000000000, "namespace": "t/ns", "boundaries": ["0x00000000", "0x80000000"]}',
            "cover the whole",
        ),
        (
            '{"timestamp": 1700000000000, "namespace": "t/ns", "boundaries": ["0x00000000", "zz", "0xffffffff"]}',
            "boundaries = zz",
        ),
        (
            '{"timestamp": 1700000000000, "namespace": "bad name", "boundaries": ["0x0", "0xffffffff"]}',
            "namespace",
        ),
        (
            '{"timestamp": 1700000000000, "namespace": "t/ns", "boundaries": ["0x0", "0xffffffff"], "numBundles": 3}',
            "numBundles = 3.0",
        ),
    ],
}
#: Lines that must be accepted although they look odd (integral floats, Long.decode forms, unsorted).
ODD_GOOD_LINES = {
    TOPIC_SAMPLES: [
        '{"timestamp": 1700000000000.0, "broker": "b", "topic": "persistent://t/ns/odd", "producerCount": 2.0}'
    ],
    BUNDLE_BOUNDARIES: [
        '{"timestamp": 1699999999999, "namespace": "t/odd", "boundaries": ["0xffffffff", "#80000000", "0"]}'
    ],
}


@pytest.fixture(scope="session")
def spark():
    from brokerlb.pipeline.session import spark_session

    session = spark_session(
        "local[2]",
        app_name="brokerlb-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
        },
    )
    yield session
    session.stop()


@dataclass
class History:
    root: Path
    warehouse: Path
    broker_samples: list
    topic_samples: list
    layouts: list
    first: object = None  # IngestResult of the first run
    second: object = None  # ... after a second file per kind arrived
    third: object = None  # ... with nothing new
    late_lines: dict = field(default_factory=dict)


def _write_lines(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name("." + path.name)
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    os.replace(tmp, path)


@pytest.fixture(scope="session")
def history(spark, tmp_path_factory) -> History:
    from brokerlb.pipeline.ingest import ingest

    root = tmp_path_factory.mktemp("history")
    warehouse = tmp_path_factory.mktemp("warehouse")
    reports = broker_samples(11, cycles=160, brokers=4, bundles=8)
    topics, layouts = topic_history(
        5, namespaces={"t/ns": 4, "t/other": 2}, topics=30, snapshots=6, hot={HOT_TOPIC: 5_000.0}
    )
    first, late = reports[:100], reports[100:]
    with HistoryWriter(root, "leader") as writer:
        writer.write_all(first)
        writer.write_all(layouts)
    with HistoryWriter(root, "broker-1:8080") as writer:
        writer.write_all(topics[: len(topics) // 2])
    for kind, lines in BAD_LINES.items():
        _write_lines(root / kind / "bad.jsonl", [line for line, _ in lines] + ODD_GOOD_LINES.get(kind, []))
    result = History(root, warehouse, reports, topics, layouts)
    result.first = ingest(spark, str(root), str(warehouse))
    with HistoryWriter(root, "leader") as writer:
        writer.write_all(late)
    with HistoryWriter(root, "broker-1:8080") as writer:
        writer.write_all(topics[len(topics) // 2 :])
    late_boundary = '{"timestamp": 1700000000000, "namespace": "t/late", "boundaries": ["0x0", "0xffffffff"]}'
    _write_lines(root / BUNDLE_BOUNDARIES / "late.jsonl", [late_boundary])
    result.late_lines = {
        BROKER_SAMPLES: len(late),
        TOPIC_SAMPLES: len(topics) - len(topics) // 2,
        BUNDLE_BOUNDARIES: 1,
    }
    result.second = ingest(spark, str(root), str(warehouse))
    result.third = ingest(spark, str(root), str(warehouse))
    return result


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
