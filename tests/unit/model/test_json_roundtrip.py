"""Property tests: every load-data document survives to_json -> JSON text -> from_json unchanged."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb.model import (
    AdvertisedListener,
    BrokerLoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    ResourceUsage,
    TopBundlesLoadData,
)

finite = st.floats(min_value=0, max_value=1e15, allow_nan=False, allow_infinity=False)
counts = st.integers(min_value=0, max_value=2**31 - 1)
timestamps = st.integers(min_value=0, max_value=2**53)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)
bundle_names = st.builds(
    lambda ns, lo: f"t/{ns}/0x{lo:08x}_0x{lo + 1:08x}",
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 2**31),
)

resources = st.one_of(
    st.builds(ResourceUsage, finite, st.floats(min_value=1e-3, max_value=1e15)),
    st.builds(ResourceUsage, st.floats(-1e6, 1e6), st.floats(-1e6, 0)),  # unmeasured: any usage
)
stats = st.builds(
    NamespaceBundleStats,
    msg_rate_in=finite,
    msg_throughput_in=finite,
    msg_rate_out=finite,
    msg_throughput_out=finite,
    consumer_count=counts,
    producer_count=counts,
    topics=counts,
    cache_size=counts,
)
listeners = st.builds(AdvertisedListener, st.none() | text, st.none() | text)

local_broker_data = st.builds(
    LocalBrokerData,
    web_service_url=st.none() | text,
    web_service_url_tls=st.none() | text,
    pulsar_service_url=st.none() | text,
    pulsar_service_url_tls=st.none() | text,
    persistent_topics_enabled=st.booleans(),
    non_persistent_topics_enabled=st.booleans(),
    cpu=resources,
    memory=resources,
    direct_memory=resources,
    bandwidth_in=resources,
    bandwidth_out=resources,
    msg_throughput_in=finite,
    msg_throughput_out=finite,
    msg_rate_in=finite,
    msg_rate_out=finite,
    last_update=timestamps,
    last_stats=st.dictionaries(bundle_names, stats, max_size=4),
    num_topics=counts,
    num_bundles=counts,
    num_consumers=counts,
    num_producers=counts,
    bundles=st.sets(bundle_names, max_size=4),
    last_bundle_gains=st.sets(bundle_names, max_size=3),
    last_bundle_losses=st.sets(bundle_names, max_size=3),
    broker_version_string=st.none() | text,
    protocols=st.dictionaries(text, text, max_size=3),
    advertised_listeners=st.dictionaries(text, listeners, max_size=3),
    load_manager_class_name=st.none() | text,
    start_timestamp=timestamps,
)

broker_load_data = st.builds(
    BrokerLoadData,
    cpu=resources,
    memory=resources,
    direct_memory=resources,
    bandwidth_in=resources,
    bandwidth_out=resources,
    msg_throughput_in=finite,
    msg_throughput_out=finite,
    msg_rate_in=finite,
    msg_rate_out=finite,
    bundle_count=counts,
    topics=counts,
    max_resource_usage=finite,
    weighted_max_ema=finite,
    msg_throughput_ema=finite,
    updated_at=timestamps,
    reported_at=timestamps,
)


def through_text(doc):
    return json.loads(json.dumps(doc, allow_nan=False))  # strict JSON: no NaN/Infinity tokens


@settings(max_examples=150)
@given(local_broker_data)
def test_local_broker_data_round_trip(data):
    doc = data.to_json()
    assert LocalBrokerData.from_json(through_text(doc)) == data
    assert through_text(doc) == doc
    assert all(value is not None for value in doc.values())


@given(broker_load_data)
def test_broker_load_data_round_trip(data):
    assert BrokerLoadData.from_json(through_text(data.to_json())) == data


@given(st.dictionaries(bundle_names, stats, max_size=15), st.integers(-1, 12))
def test_top_bundles_round_trip(bundle_stats, k):
    report = TopBundlesLoadData.of(bundle_stats, k)
    assert TopBundlesLoadData.from_json(through_text(report.to_json())) == report
    expected = len(bundle_stats) if k < 0 else min(k, len(bundle_stats))
    assert len(report.top_bundles_load_data) == expected
    keys = [entry.stats.sort_key() for entry in report.top_bundles_load_data]
    assert keys == sorted(keys)  # lightest first, heaviest last
    chosen = set(report.bundle_names())
    left_out = [s.sort_key() for name, s in bundle_stats.items() if name not in chosen]
    assert not keys or all(k2 <= keys[0] for k2 in left_out)  # nothing left out is heavier
