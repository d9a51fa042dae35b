"""ingest: Parquet tables by date, every bad line in ``rejects`` with its reason, incremental runs."""

from __future__ import annotations

import json

import pytest

from brokerlb.errors import InvalidInputError
from brokerlb.history import BROKER_SAMPLES, BUNDLE_BOUNDARIES, RECORD_KINDS, TOPIC_SAMPLES, record_from_json
from tests.pipeline.conftest import BAD_LINES, ODD_GOOD_LINES

pytestmark = pytest.mark.spark


def table(spark, history, name):
    return spark.read.parquet(str(history.warehouse / name))


def test_every_good_record_lands_once_in_its_table(spark, history):
    reports = [s for s in history.broker_samples]
    assert table(spark, history, "broker_samples").count() == len(reports)
    stats = sum(len(s.local_data.last_stats) for s in reports if s.local_data is not None)
    assert table(spark, history, "bundle_samples").count() == stats
    odd = len(ODD_GOOD_LINES[TOPIC_SAMPLES])
    assert table(spark, history, "topic_samples").count() == len(history.topic_samples) + odd
    assert table(spark, history, "bundle_boundaries").count() == len(history.layouts) + 2  # + odd + late
    removed = table(spark, history, "broker_samples").where("removed").count()
    assert removed == sum(1 for s in reports if s.local_data is None)


def test_columns_dates_and_normalised_values(spark, history):
    row = table(spark, history, "topic_samples").where("topic = 'persistent://t/ns/odd'").first()
    assert (row["timestamp"], row["producerCount"], str(row["date"])) == (1_700_000_000_000, 2, "2023-11-14")
    odd = table(spark, history, "bundle_boundaries").where("namespace = 't/odd'").first()
    assert odd["boundaries"] == [0, 0x80000000, 0xFFFFFFFF] and odd["numBundles"] == 2
    partitions = {
        p.name.split("=")[0] for p in (history.warehouse / "topic_samples").iterdir() if "=" in p.name
    }
    assert partitions == {"date"}
    sample = history.broker_samples[0]
    got = (
        table(spark, history, "bundle_samples")
        .where(f"timestamp = {sample.timestamp} and brokerId = '{sample.broker_id}'")
        .collect()
    )
    assert {r["bundle"]: r["msgRateIn"] for r in got} == {
        b: s.msg_rate_in for b, s in sample.local_data.last_stats.items()
    }


def test_every_bad_line_is_rejected_with_a_reason_naming_the_field(spark, history):
    rejects = table(spark, history, "rejects").collect()
    by_line = {(r["kind"], r["line"]): r["reason"] for r in rejects}
    assert len(by_line) == len(rejects) == sum(len(v) for v in BAD_LINES.values())
    for kind, lines in BAD_LINES.items():
        for line, words in lines:
            assert words in by_line[(kind, line)], (line, by_line[(kind, line)])
    assert all(r["file"].endswith("bad.jsonl") and r["ingestedAt"] > 0 for r in rejects)


@pytest.mark.parametrize("kind", RECORD_KINDS)
def test_spark_and_python_readers_agree_on_every_test_line(kind):
    """The reject rules mirror brokerlb.history / brokerlb.model: the Python reader refuses exactly these lines."""
    for line, _ in BAD_LINES[kind]:
        with pytest.raises((ValueError, InvalidInputError)):
            record_from_json(kind, json.loads(line))
    for line in ODD_GOOD_LINES.get(kind, []):
        record_from_json(kind, json.loads(line))


def test_incremental_runs_read_only_new_files(history):
    first, second, third = history.first, history.second, history.third
    assert first.batches == {k: 1 for k in RECORD_KINDS} and not first.skipped
    assert first.rejects == {k: len(v) for k, v in BAD_LINES.items()}
    assert second.batches == {k: 1 for k in RECORD_KINDS}
    assert second.rows["broker_samples"] == history.late_lines[BROKER_SAMPLES]
    assert second.rows["topic_samples"] == history.late_lines[TOPIC_SAMPLES]
    assert second.rows["bundle_boundaries"] == history.late_lines[BUNDLE_BOUNDARIES]
    assert second.rejects == {k: 0 for k in RECORD_KINDS}
    assert third.batches == {k: 0 for k in RECORD_KINDS} and third.rows == {}


def test_a_replayed_batch_replaces_its_output(spark, history, tmp_path):
    """A micro-batch Spark runs again after a crash overwrites its own partitions (no duplicates)."""
    from brokerlb.pipeline.ingest import IngestResult, _BatchWriter
    from brokerlb.pipeline.tables import Warehouse

    files = [(history.root / TOPIC_SAMPLES / "bad.jsonl").as_uri()]
    writer = _BatchWriter(TOPIC_SAMPLES, Warehouse(str(tmp_path)), IngestResult())
    writer.write_files(spark, files, 7)
    writer.write_files(spark, files, 7)
    assert spark.read.parquet(str(tmp_path / "topic_samples")).count() == len(ODD_GOOD_LINES[TOPIC_SAMPLES])
    assert spark.read.parquet(str(tmp_path / "rejects")).count() == len(BAD_LINES[TOPIC_SAMPLES])


def test_missing_kind_directories_are_skipped_and_unknown_kinds_refused(spark, tmp_path):
    from brokerlb.pipeline.ingest import ingest

    result = ingest(spark, str(tmp_path / "empty"), str(tmp_path / "wh"))
    assert result.skipped == list(RECORD_KINDS) and result.batches == {}
    assert [n.split(":")[0] for n in result.notes] == list(RECORD_KINDS)
    assert f"no directory {tmp_path / 'empty' / TOPIC_SAMPLES}" in result.notes[1]
    from brokerlb.pipeline.loaddata import load_data

    with pytest.raises(InvalidInputError) as missing:
        load_data(spark, str(tmp_path / "wh"), source="topics")
    message = str(missing.value)
    for words in (
        "No topic samples in warehouse",  # the kind
        f"there is no directory {tmp_path / 'empty' / TOPIC_SAMPLES}",  # where the last ingest looked
        "every broker writes its topics every statsUpdateFrequencyInSecs when brokerlbLoadHistoryDir",  # who
    ):
        assert words in message, message
    with pytest.raises(InvalidInputError, match="Unknown history kinds"):
        ingest(spark, str(tmp_path), str(tmp_path / "wh"), kinds=["reports"])
