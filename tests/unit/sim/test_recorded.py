import json
import pickle

import numpy as np
import pytest

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.recorded import RecordedWorkload

RECORDS = [
    {
        "timestamp": 1_000_000,
        "topic": "persistent://t/a/x",
        "msgRateIn": 10,
        "msgThroughputIn": 100,
        "producerCount": 1,
        "consumerCount": 2,
    },
    {"timestamp": 1_060_000, "topic": "t/a/x", "msgRateIn": 20},
    {"ts": 1_030_000, "topic": "persistent://t/b/y", "msgRateIn": 5, "msgRateOut": 15},
    {"time": 1_060_000, "topic": "t/a/x", "msgRateIn": 30},
]


def test_sample_and_hold_with_latest_sample_winning():
    rec = RecordedWorkload.from_records(RECORDS)
    assert rec.start_ms == 1_000_000 and rec.span_seconds == 60 and rec.namespaces == ("t/a", "t/b")
    p = rec.player()
    assert p.topics == {"t/a": ["persistent://t/a/x"], "t/b": ["persistent://t/b/y"]}
    t0 = p.traffic(0)
    assert list(t0.msg_rate_in) == [10, 0] and list(t0.active) == [True, False] and t0.consumers[0] == 2
    t1 = p.traffic(45)
    assert list(t1.msg_rate_in) == [10, 5] and t1.msg_rate_out[1] == 15
    t2 = p.traffic(60)
    assert list(t2.msg_rate_in) == [30, 5] and t2.producers[0] == 0
    with pytest.raises(ValueError, match="backwards"):
        p.traffic(10)


def test_jsonl_roundtrip_and_pickle(tmp_path):
    path = tmp_path / "stats.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n\n")
    rec = RecordedWorkload.from_jsonl(path)
    again = pickle.loads(pickle.dumps(rec))
    assert again.topics == rec.topics and np.array_equal(again.msg_rate_in, rec.msg_rate_in)


@pytest.mark.parametrize(
    "record, message",
    [
        ({"topic": "t/a/x"}, "missing timestamp"),
        ({"timestamp": 1, "topic": 5}, "non-string topic"),
        ({"timestamp": 1, "topic": "a//b"}, "Invalid topic name"),
        ({"timestamp": 1, "topic": "t/a/x", "msgRateIn": float("nan")}, "msgRateIn"),
        ({"timestamp": 1, "topic": "t/a/x", "producerCount": 1.5}, "producerCount"),
        ({"timestamp": -5, "topic": "t/a/x"}, "timestamp"),
    ],
)
def test_bad_records_are_named(record, message):
    with pytest.raises(InvalidScenarioError, match=message):
        RecordedWorkload.from_records([record], source="x.jsonl")


def test_broken_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"timestamp": 1, "topic": "t/a/x"}\n{nope\n')
    with pytest.raises(InvalidScenarioError, match="line 2 is not JSON"):
        RecordedWorkload.from_jsonl(path)
    with pytest.raises(InvalidScenarioError, match="no topic samples"):
        RecordedWorkload.from_records([])
