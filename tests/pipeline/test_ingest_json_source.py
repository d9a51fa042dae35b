"""The JSON file source path of ``ingest`` gives the same tables and rejects as the text path.

Topic samples of *plain* files (ASCII, no ``[``, no tab) are parsed by Spark's JSON file source;
other files, and every reject, by the text source + ``from_json``. The lines below are the
cases where the two readers could differ; both runs must agree row for row.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from brokerlb.history import TOPIC_SAMPLES
from brokerlb.pipeline.plain_files import is_plain_json_lines, local_path, split_plain_files

pytestmark = pytest.mark.spark

GOOD = '{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/%s", "msgRateIn": %d}'

#: file name -> lines (bytes, so a file can hold invalid UTF-8)
FILES: dict[str, list[bytes]] = {
    "plain.jsonl": [
        *(GOOD.encode() % (b"p%d" % i, i) for i in range(5)),
        b"not json at all",
        b"5",
        b"null",
        b'"a string"',
        b"{}",
        b'{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/trailing"} and more',
        b'{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "msgRateOut": "fast"}',
        b'{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/x", "msgRateIn": NaN}',
        b"   ",
        b"",
        b'{"timestamp": 1700000000000, "broker": "b", "topic": "persistent://t/ns/crlf", "msgRateIn": 1}\r',
    ],
    "arrays.jsonl": [
        GOOD.encode() % (b"a0", 1),
        b"[" + GOOD.encode() % (b"in-array", 1) + b"]",
        b"[]",
        b"[1, 2]",
    ],
    "tabs.jsonl": [GOOD.encode() % (b"t0", 1), b"\t", b"\t" + GOOD.encode() % (b"t1", 1)],
    "glob [1] {a,b} 100%20 *.jsonl": [GOOD.encode() % (b"odd-name", 1), b"not json either"],
    "utf8.jsonl": [
        GOOD.encode() % ("ü".encode(), 1),
        GOOD.encode() % (b"bad\xff\xfe", 1),
        b"\xef\xbb\xbf" + GOOD.encode() % (b"bom", 1),
    ],
}


PLAIN = ("plain.jsonl", "glob [1] {a,b} 100%20 *.jsonl")


def write_history(root: Path, names: tuple[str, ...] = tuple(FILES)) -> None:
    folder = root / TOPIC_SAMPLES
    folder.mkdir(parents=True)
    for name in names:
        (folder / name).write_bytes(b"\n".join(FILES[name]) + b"\n")


def test_plain_files_are_ascii_without_brackets_or_tabs(tmp_path):
    write_history(tmp_path)
    folder = tmp_path / TOPIC_SAMPLES
    verdicts = {name: is_plain_json_lines(str(folder / name)) for name in FILES}
    assert verdicts == {
        "plain.jsonl": True,
        "arrays.jsonl": False,
        "tabs.jsonl": False,
        "utf8.jsonl": False,
        "glob [1] {a,b} 100%20 *.jsonl": True,
    }
    uris = [f"file:{folder / name}" for name in FILES]  # as Spark's file listing prints them
    assert split_plain_files(uris) == ([uris[0], uris[3]], [uris[1], uris[2], uris[4]])
    assert not is_plain_json_lines(str(folder / "missing.jsonl"))
    assert not is_plain_json_lines("hdfs://nn:8020/history/topic-samples/a.jsonl")
    assert local_path("file:///tmp/a b.jsonl") == local_path("file:/tmp/a b.jsonl") == "/tmp/a b.jsonl"
    assert local_path("s3a://b/k") is None and local_path("file://otherhost/tmp/a") is None


def rows(spark, path: Path, name: str, drop: tuple[str, ...]) -> list[dict]:
    df = spark.read.parquet(str(path / name)).drop(*drop)
    return sorted((r.asDict() for r in df.collect()), key=lambda r: repr(sorted(r.items())))


def test_plain_files_only_take_the_json_path_alone(spark, tmp_path):
    """A batch of plain files only: no text read for the good rows, same tables as the text path."""
    from brokerlb.pipeline.ingest import ingest

    write_history(tmp_path / "history", PLAIN)
    fast = ingest(spark, str(tmp_path / "history"), str(tmp_path / "fast"))
    text = ingest(spark, str(tmp_path / "history"), str(tmp_path / "text"), json_file_source=False)
    assert (
        fast.json_source_files == {TOPIC_SAMPLES: 2}
        and fast.rows == text.rows
        and fast.rejects == text.rejects
    )
    for name, drop in (("topic_samples", ("ingestBatch",)), ("rejects", ("ingestBatch", "ingestedAt"))):
        assert rows(spark, tmp_path / "fast", name, drop) == rows(spark, tmp_path / "text", name, drop)


def test_json_file_source_and_text_path_give_the_same_tables_and_rejects(spark, tmp_path):
    """A mixed batch: plain files through the JSON file source, the others as text, one union."""
    from brokerlb.pipeline.ingest import ingest

    write_history(tmp_path / "history")
    fast = ingest(spark, str(tmp_path / "history"), str(tmp_path / "fast"))
    text = ingest(spark, str(tmp_path / "history"), str(tmp_path / "text"), json_file_source=False)
    assert fast.json_source_files == {TOPIC_SAMPLES: 2} and text.json_source_files == {}
    assert fast.rows == text.rows and fast.rejects == text.rejects
    good = rows(spark, tmp_path / "fast", "topic_samples", ("ingestBatch",))
    assert good == rows(spark, tmp_path / "text", "topic_samples", ("ingestBatch",))
    rejected = rows(spark, tmp_path / "fast", "rejects", ("ingestBatch", "ingestedAt"))
    assert rejected == rows(spark, tmp_path / "text", "rejects", ("ingestBatch", "ingestedAt"))
    # every rejected line is in the table once, and the observed count says so
    assert len(rejected) == fast.rejects[TOPIC_SAMPLES]
    lines = {r["line"] for r in rejected}
    for line in ("not json at all", "5", "null", "{}", "[]", "[1, 2]", "\t"):
        assert line in lines, line
    assert "[" + GOOD % ("in-array", 1) + "]" in lines
    topics = {r["topic"] for r in good}
    assert "persistent://t/ns/in-array" not in topics  # an array line is one malformed line, not its elements
    assert {
        "persistent://t/ns/p0",
        "persistent://t/ns/crlf",
        "persistent://t/ns/trailing",
        "persistent://t/ns/ü",
        "persistent://t/ns/odd-name",
    } <= topics
    assert "not json either" in lines
