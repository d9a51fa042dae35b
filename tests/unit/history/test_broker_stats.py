"""Flattening ``broker-stats/topics`` into topic samples."""

from __future__ import annotations

import pytest

from brokerlb.errors import InvalidLoadDataError
from brokerlb.history import topic_samples_from_broker_stats
from brokerlb.ring import NamespaceBundles

TOPIC = "persistent://public/default/orders"
BUNDLE = NamespaceBundles.create("public/default", 4).find_bundle(TOPIC)


def document(stats):
    return {"public/default": {BUNDLE.range: {"persistent": {TOPIC: stats}}}}


def test_scalars_copied_and_consumers_subscriptions_backlog_derived():
    stats = {
        "publishers": [{}, {}],
        "subscriptions": {
            "s1": {"consumers": [{}, {}], "msgBacklog": 5, "msgRateOut": 1.0},
            "s2": {"consumers": [{}], "msgBacklog": 7},
        },
        "producerCount": 2,
        "averageMsgSize": 100.0,
        "msgRateIn": 10.0,
        "msgRateOut": 20.0,
        "msgThroughputIn": 1000.0,
        "msgThroughputOut": 2000.0,
        "msgInCount": 3,
        "storageSize": 4096,
    }
    (sample,) = topic_samples_from_broker_stats(document(stats), 1_700_000_000_000, "broker-1:8080")
    assert (sample.topic, sample.bundle, sample.broker) == (TOPIC, str(BUNDLE), "broker-1:8080")
    assert (sample.consumer_count, sample.subscription_count, sample.msg_backlog) == (3, 2, 12)
    assert (sample.producer_count, sample.msg_rate_out, sample.storage_size, sample.msg_in_count) == (
        2,
        20.0,
        4096,
        3,
    )


def test_bad_values_name_the_path():
    with pytest.raises(InvalidLoadDataError):
        topic_samples_from_broker_stats(document({"msgRateIn": "NaN"}), 1, "b")
    with pytest.raises(InvalidLoadDataError, match="consumers"):
        topic_samples_from_broker_stats(document({"subscriptions": {"s": {"consumers": 3}}}), 1, "b")
