"""History record types: JSON round trips, validation with the field named."""

from __future__ import annotations

import json

import pytest

from brokerlb.errors import InvalidBundlesError, InvalidLoadDataError
from brokerlb.history import BrokerSample, BundleBoundaries, TopicSample, record_from_json
from brokerlb.ring import NamespaceBundles
from brokerlb.testing import broker, bundle_stats

TS = 1_700_000_000_000


def roundtrip(record):
    text = json.dumps(record.to_json(), allow_nan=False)
    return record_from_json(record.kind, json.loads(text))


def test_broker_sample_roundtrip_and_removal():
    report = broker(
        "b1", cpu=50, bundles={"t/ns/0x00000000_0x40000000": bundle_stats(msg_rate_in=5, topics=2)}
    )
    sample = BrokerSample(TS, "b1:8080", report)
    assert roundtrip(sample) == sample
    assert sample.to_json()["localData"]["lastStats"]["t/ns/0x00000000_0x40000000"]["topics"] == 2
    gone = BrokerSample.removed(TS, "b1:8080")
    assert gone.is_removal and gone.to_json() == {"timestamp": TS, "brokerId": "b1:8080", "localData": None}
    assert roundtrip(gone) == gone


def test_broker_sample_needs_local_data_key_and_valid_report():
    with pytest.raises(InvalidLoadDataError, match="localData"):
        BrokerSample.from_json({"timestamp": TS, "brokerId": "b"})
    with pytest.raises(InvalidLoadDataError) as err:
        BrokerSample.from_json(
            {"timestamp": TS, "brokerId": "b", "localData": {"cpu": {"usage": "NaN", "limit": 100}}}
        )
    assert err.value.field == "localData.cpu.usage"
    with pytest.raises(InvalidLoadDataError, match="timestamp"):
        BrokerSample(-1, "b", None)
    with pytest.raises(InvalidLoadDataError, match="brokerId"):
        BrokerSample(TS, "", None)


def test_topic_sample_roundtrip_defaults_and_bundle_normalised():
    sample = TopicSample(TS, "b1", "persistent://t/ns/x", msg_rate_in=1.5, producer_count=2)
    assert roundtrip(sample) == sample
    read = TopicSample.from_json(
        {"timestamp": TS, "broker": "b1", "topic": "persistent://t/ns/x", "unknown": 1}
    )
    assert read.msg_rate_out == 0.0 and read.bundle is None
    bundle = str(NamespaceBundles.create("t/ns", 1).find_bundle("persistent://t/ns/x"))
    with_bundle = TopicSample(TS, "b1", "persistent://t/ns/x", "t/ns/0x0_0xFFFFFFFF")
    assert with_bundle.bundle == bundle == "t/ns/0x00000000_0xffffffff"


@pytest.mark.parametrize(
    "change, field",
    [
        ({"topic": "t/ns/x"}, "topic"),  # not a full name
        ({"topic": "Persistent://t/ns/x"}, "topic"),  # not canonical
        ({"msgRateIn": float("nan")}, "msgRateIn"),
        ({"msgRateOut": -1.0}, "msgRateOut"),
        ({"producerCount": 2.5}, "producerCount"),
        ({"bundle": "other/ns/0x00000000_0xffffffff"}, "bundle"),
        ({"bundle": "t/ns/0x00000000_0x00000001"}, "bundle"),  # the topic does not hash there
        ({"timestamp": 1.5}, "timestamp"),
        ({"broker": ""}, "broker"),
    ],
)
def test_topic_sample_rejects_bad_values(change, field):
    doc = {"timestamp": TS, "broker": "b1", "topic": "persistent://t/ns/x", **change}
    with pytest.raises(InvalidLoadDataError) as err:
        TopicSample.from_json(doc)
    assert err.value.field == field


def test_bundle_boundaries_roundtrip_normalises_like_pulsar():
    record = BundleBoundaries.of(TS, NamespaceBundles.create("public/default", 4))
    assert record.to_json()["boundaries"][1] == "0x40000000" and record.num_bundles == 4
    assert roundtrip(record) == record
    unsorted = BundleBoundaries.from_json(
        {
            "timestamp": TS,
            "namespace": "t/ns",
            "boundaries": ["0xffffffff", "0x80000000", "0x0", "0x80000000"],
        }
    )
    assert unsorted.boundaries == (0, 0x80000000, 0xFFFFFFFF)
    with pytest.raises(InvalidBundlesError, match="cover the whole hash range"):
        BundleBoundaries(TS, "t/ns", (0, 0x80000000))
    with pytest.raises(InvalidLoadDataError, match="numBundles"):
        BundleBoundaries.from_json(
            {"timestamp": TS, "namespace": "t/ns", "boundaries": ["0x0", "0xffffffff"], "numBundles": 4}
        )
