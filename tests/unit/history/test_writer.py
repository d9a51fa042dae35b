"""The JSON Lines day-file writer: UTC day rotation, atomic publication, restarts, reading back."""

from __future__ import annotations

import threading

import pytest

from brokerlb.errors import InvalidInputError, InvalidLoadDataError
from brokerlb.history import (
    BROKER_SAMPLES,
    TOPIC_SAMPLES,
    BrokerSample,
    HistoryWriter,
    TopicSample,
    history_files,
    read_history,
    safe_writer_id,
    utc_day,
)

DAY = 86_400_000
T0 = 19_700 * DAY  # 2023-12-09T00:00:00Z


def topic(ts, i=0):
    return TopicSample(ts, "b1", f"persistent://t/ns/topic-{i}", msg_rate_in=float(i))


def test_utc_day_and_writer_ids():
    assert utc_day(T0) == "2023-12-09" and utc_day(T0 - 1) == "2023-12-08"
    assert safe_writer_id("broker-1:8080") == "broker-1_8080"
    with pytest.raises(InvalidInputError):
        safe_writer_id("")


def test_one_file_per_utc_day_and_nothing_visible_until_published(tmp_path):
    writer = HistoryWriter(tmp_path, "broker-1:8080")
    writer.write(topic(T0 - 10, 1))
    assert history_files(tmp_path, TOPIC_SAMPLES) == []  # in progress: hidden
    hidden = list((tmp_path / TOPIC_SAMPLES).iterdir())
    assert len(hidden) == 1 and hidden[0].name.startswith(".") and hidden[0].name.endswith(".inprogress")
    writer.write(topic(T0 + 10, 2))  # next UTC day: the first file is published
    assert [p.name for p in history_files(tmp_path, TOPIC_SAMPLES)] == [
        "topic-samples-2023-12-08-broker-1_8080-00000.jsonl"
    ]
    published = writer.close()
    assert [p.name for p in published] == ["topic-samples-2023-12-09-broker-1_8080-00000.jsonl"]
    assert [s.topic for s in read_history(tmp_path, TOPIC_SAMPLES)] == [
        "persistent://t/ns/topic-1",
        "persistent://t/ns/topic-2",
    ]
    with pytest.raises(InvalidInputError, match="closed"):
        writer.write(topic(T0))


def test_roll_and_max_records_publish_new_parts(tmp_path):
    with HistoryWriter(tmp_path, "w", max_records_per_file=2) as writer:
        for i in range(5):
            writer.write(topic(T0 + i, i))
        assert len(history_files(tmp_path, TOPIC_SAMPLES)) == 2
        writer.write(BrokerSample.removed(T0, "b1"))
        assert [p.name for p in writer.roll()] == [
            "topic-samples-2023-12-09-w-00002.jsonl",
            "broker-samples-2023-12-09-w-00000.jsonl",
        ]
    assert len(read_history(tmp_path, TOPIC_SAMPLES)) == 5
    assert read_history(tmp_path, BROKER_SAMPLES)[0].is_removal


def test_restart_continues_parts_and_publishes_a_crashed_writers_leftover(tmp_path):
    with HistoryWriter(tmp_path, "w") as writer:
        writer.write(topic(T0, 0))
    crashed = HistoryWriter(tmp_path, "w")
    crashed.write(topic(T0, 1))
    leftover = next(p for p in (tmp_path / TOPIC_SAMPLES).iterdir() if p.name.endswith(".inprogress"))
    with open(leftover, "a", encoding="utf-8") as f:
        f.write('{"timestamp": 1, "broker"')  # a line cut off by the crash
    del crashed  # never closed
    restarted = HistoryWriter(tmp_path, "w")
    restarted.write(topic(T0, 2))
    restarted.close()
    names = [p.name for p in history_files(tmp_path, TOPIC_SAMPLES)]
    assert names == [f"topic-samples-2023-12-09-w-0000{i}.jsonl" for i in range(3)]
    assert (tmp_path / TOPIC_SAMPLES / names[1]).read_text().endswith('"broker"\n')
    with pytest.raises(InvalidLoadDataError, match="00001.jsonl:2"):
        read_history(tmp_path, TOPIC_SAMPLES)


def test_other_writers_files_are_left_alone(tmp_path):
    with HistoryWriter(tmp_path, "a") as a:
        a.write(topic(T0, 0))
    other = HistoryWriter(tmp_path, "b")
    other.write(topic(T0, 1))
    assert len(history_files(tmp_path, TOPIC_SAMPLES)) == 1
    other.close()
    assert len(history_files(tmp_path, TOPIC_SAMPLES)) == 2


def test_concurrent_writes_lose_nothing(tmp_path):
    writer = HistoryWriter(tmp_path, "w", max_records_per_file=7)

    def work(k):
        for i in range(50):
            writer.write(topic(T0 + i, k * 100 + i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    writer.close()
    assert len(read_history(tmp_path, TOPIC_SAMPLES)) == 200


def test_write_refuses_what_is_not_a_record(tmp_path):
    with HistoryWriter(tmp_path, "w") as writer, pytest.raises(InvalidInputError):
        writer.write({"timestamp": 1})  # type: ignore[arg-type]
