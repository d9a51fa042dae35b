"""Pulsar's WebSocket API frames, the data-path URLs, message ids and the close convention."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brokerlb.errors import DataPathProtocolError, InvalidInputError, InvalidTopicNameError
from brokerlb.messaging import (
    MAX_CLOSE_REASON_BYTES,
    CloseCode,
    CloseReason,
    ConsumerCommand,
    ProducerAck,
    ProducerMessage,
    WebSocketError,
    consumer_frames,
    consumer_path,
    decode_message_id,
    encode_message_id,
    format_publish_time,
    parse_endpoint,
    producer_path,
    publish_section,
)
from brokerlb.messaging.frames import payload_section
from brokerlb.messaging.wire import KeyValue, MessageMetadata, SingleMessageMetadata
from brokerlb.naming import is_blank

# ------------------------------------------------------------------ URLs


def test_producer_and_consumer_urls_parse_with_pulsars_shape() -> None:
    p = parse_endpoint("/ws/v2/producer/persistent/public/default/orders")
    assert (p.kind, str(p.topic), p.subscription) == ("producer", "persistent://public/default/orders", None)
    c = parse_endpoint(
        "/ws/v2/consumer/non-persistent/t/ns/orders/audit",
        b"subscriptionType=Shared&receiverQueueSize=5000&consumerName=c1&priorityLevel=2",
    )
    assert (c.kind, str(c.topic), c.subscription) == ("consumer", "non-persistent://t/ns/orders", "audit")
    assert c.subscription_type == "Shared"
    assert c.receiver_queue_size == 1000  # Pulsar caps it at 1000
    assert (c.consumer_name, c.priority_level) == ("c1", 2)
    assert parse_endpoint("/ws/v2/consumer/persistent/t/ns/x/s").subscription_type == "Exclusive"


@pytest.mark.parametrize(
    "path, query, match",
    [
        ("/ws/v2/producer/persistent/t/ns", b"", "Invalid topic name format"),
        ("/ws/v2/consumer/persistent/t/ns/topic", b"", "Invalid topic name format"),
        ("/ws/v2/consumer/persistent/t/ns/topic/", b"", "Invalid topic name format"),
        ("/ws/v2/reader/persistent/t/ns/topic", b"messageId=nope", "Invalid message id"),
        ("/ws/v2/watcher/persistent/t/ns/topic", b"", "Unknown data-path endpoint"),
        ("/ws/v2/consumer/persistent/t/ns/topic/s", b"pullMode=maybe", "true or false"),
        ("/ws/v2/producer/durable/t/ns/topic", b"", "Invalid domain"),
        ("/ws/v2/consumer/persistent/t/ns/topic/s", b"subscriptionType=Fancy", "Invalid subscriptionType"),
        ("/ws/v2/consumer/persistent/t/ns/topic/s", b"receiverQueueSize=many", "must be an integer"),
        ("/ws/v2/consumer/persistent/t/ns/topic/s", b"receiverQueueSize=0", "must be >= 1"),
        ("/admin/v2/namespaces", b"", "Not a data-path URL"),
    ],
)
def test_bad_urls_are_refused_naming_the_problem(path: str, query: bytes, match: str) -> None:
    with pytest.raises(InvalidInputError, match=match):
        parse_endpoint(path, query)


def test_a_bad_namespace_in_the_url_is_a_topic_name_error() -> None:
    with pytest.raises(InvalidTopicNameError):
        parse_endpoint("/ws/v2/producer/persistent/t/n$s/topic")


@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
        lambda s: s.strip("/") == s and "/" not in s and not is_blank(s)  # a blank name is invalid
    ),
    st.text(alphabet="abcXYZ-_. é%#?&", min_size=1, max_size=20),
)
def test_built_paths_parse_back_to_the_same_topic_and_subscription(local: str, sub: str) -> None:
    topic = f"persistent://tenant/ns/{local}"
    from urllib.parse import urlsplit

    p = parse_endpoint(producer_path(topic))
    assert str(p.topic) == topic
    parts = urlsplit(consumer_path(topic, sub, subscriptionType="Key_Shared"))
    c = parse_endpoint(parts.path, parts.query)
    assert (str(c.topic), c.subscription, c.subscription_type) == (topic, sub, "Key_Shared")


# ------------------------------------------------------------------ frames


def test_send_request_and_acks_have_pulsars_json() -> None:
    payload = base64.b64encode(b"hello").decode()
    text = json.dumps({"payload": payload, "properties": {"a": "1"}, "context": "c-7", "key": "k"})
    m = ProducerMessage.parse(text)
    assert (m.payload, m.size, m.context, m.key, m.properties) == (payload, 5, "c-7", "k", {"a": "1"})
    assert ProducerMessage.parse(m.encode()) == m
    ok = ProducerAck.success("CAEQAg==", "c-7")
    assert json.loads(ok.encode()) == {"result": "ok", "messageId": "CAEQAg==", "context": "c-7"}
    err = ProducerAck.error(WebSocketError.PAYLOAD_ENCODING_ERROR, "bad", "c-8")
    assert json.loads(err.encode()) == {"result": "send-error:7", "errorMsg": "bad", "context": "c-8"}
    assert ProducerAck.parse(err.encode()) == err and not err.ok and ProducerAck.parse(ok.encode()).ok


@pytest.mark.parametrize(
    "text, code, context",
    [
        ("not json", WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, None),
        ("[1, 2]", WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON, None),
        ('{"context": "c1"}', WebSocketError.PAYLOAD_ENCODING_ERROR, "c1"),
        ('{"payload": "***", "context": "c2"}', WebSocketError.PAYLOAD_ENCODING_ERROR, "c2"),
        (
            '{"payload": "aGk=", "properties": {"a": 1}, "context": 3}',
            WebSocketError.FAILED_TO_DESERIALIZE_FROM_JSON,
            "3",
        ),
    ],
)
def test_bad_send_requests_carry_pulsars_error_code_and_the_context(
    text: str, code: int, context: str | None
) -> None:
    with pytest.raises(DataPathProtocolError) as info:
        ProducerMessage.parse(text)
    assert info.value.code == code and info.value.context == context


def test_consumer_commands() -> None:
    assert ConsumerCommand.parse('{"messageId": "CAEQAg=="}') == ConsumerCommand("ack", "CAEQAg==")
    assert (
        ConsumerCommand.parse('{"type": "negativeAcknowledge", "messageId": "x"}').type
        == "negativeAcknowledge"
    )
    assert ConsumerCommand.parse('{"type": "permit", "permitMessages": 10}').permits == 10
    for bad in (
        '{"type": "permit", "permitMessages": 0}',
        '{"type": "x"}',
        '{"messageId": ""}',
        "[]",
        "nope",
    ):
        with pytest.raises(DataPathProtocolError):
            ConsumerCommand.parse(bad)


def test_consumer_frames_are_pulsars_consumer_messages() -> None:
    m = ProducerMessage("aGk=", 2, "c", "key-1", {"p": "v"})
    section = publish_section(m, producer_name="p", sequence_id=0, publish_time=1_700_000_000_123)
    [(message_id, frame)] = consumer_frames(
        section, ledger_id=1, entry_id=2, partition=-1, redelivery_count=3
    )
    assert json.loads(frame) == {
        "messageId": message_id,
        "payload": "aGk=",
        "properties": {"p": "v"},
        "publishTime": format_publish_time(1_700_000_000_123),
        "redeliveryCount": 3,
        "key": "key-1",
    }
    assert decode_message_id(message_id) == (1, 2, -1)


def test_a_batch_gives_one_frame_per_message_and_skips_acknowledged_indexes() -> None:
    payload = b""
    for i, data in enumerate([b"a", b"bb", b"ccc"]):
        single = SingleMessageMetadata(
            [KeyValue("i", str(i))], partition_key=f"k{i}", payload_size=len(data)
        ).encode()
        payload += len(single).to_bytes(4, "big") + single + data
    section = payload_section(MessageMetadata("p", 0, 1, num_messages_in_batch=3), payload)
    frames = consumer_frames(section, ledger_id=1, entry_id=0, partition=-1)
    bodies = [json.loads(f) for _, f in frames]
    assert [base64.b64decode(b["payload"]) for b in bodies] == [b"a", b"bb", b"ccc"]
    assert [b["key"] for b in bodies] == ["k0", "k1", "k2"]
    left = consumer_frames(section, ledger_id=1, entry_id=0, partition=-1, unacked_mask=0b100)
    assert [base64.b64decode(json.loads(f)["payload"]) for _, f in left] == [b"ccc"]


# ------------------------------------------------------------------ message ids


def test_message_id_is_the_base64_of_pulsars_message_id_data() -> None:
    # MessageIdData{ledgerId: 1, entryId: 2} = 08 01 10 02
    assert encode_message_id(1, 2) == base64.b64encode(bytes([0x08, 0x01, 0x10, 0x02])).decode()
    assert decode_message_id(encode_message_id(1, 2)) == (1, 2, -1)
    assert decode_message_id(encode_message_id(300, 5, 3)) == (300, 5, 3)


@given(st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1), st.integers(-1, 2**31 - 1))
def test_message_ids_round_trip(ledger: int, entry: int, partition: int) -> None:
    assert decode_message_id(encode_message_id(ledger, entry, partition)) == (ledger, entry, partition)


@pytest.mark.parametrize(
    "text",
    [
        "***",
        base64.b64encode(b"\x08").decode(),
        base64.b64encode(b"\x08\x01").decode(),
        base64.b64encode(b"\x0a\x01x").decode(),
    ],
)
def test_malformed_message_ids_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError, match="Invalid message id"):
        decode_message_id(text)


# ------------------------------------------------------------------ close convention


def test_close_reasons_tell_the_client_what_to_do() -> None:
    unloaded = CloseReason.decode(CloseCode.TOPIC_UNLOADED, CloseReason.unloaded().encode())
    assert unloaded.lookup and unloaded.reason == "TopicUnloaded"
    t = CloseReason.transferred("http://127.0.0.1:8081", "pulsar://127.0.0.1:6651")
    assert json.loads(t.encode()) == {
        "reason": "TopicTransferred",
        "httpUrl": "http://127.0.0.1:8081",
        "brokerUrl": "pulsar://127.0.0.1:6651",
    }
    back = CloseReason.decode(t.code, t.encode())
    assert (back.http_url, back.broker_url, back.lookup) == (
        "http://127.0.0.1:8081",
        "pulsar://127.0.0.1:6651",
        False,
    )
    refused = CloseReason.decode(4002, CloseReason.not_ready("not owned").encode())
    assert refused.lookup and refused.code is CloseCode.SERVICE_NOT_READY
    redirected = CloseReason.decode(4003, CloseReason.redirected("http://h:8082").encode())
    assert (redirected.reason, redirected.http_url, redirected.lookup) == (
        "TopicRedirected",
        "http://h:8082",
        False,
    )
    assert CloseReason.decode(
        4002, '{"reason": "x", "httpUrl": "http://h:1"}'
    ).lookup  # only 4001/4003 carry a URL


@pytest.mark.parametrize(
    "code, text", [(1006, None), (1001, ""), (4999, "garbage"), (4001, '{"reason": "x"}'), (4001, "[1]")]
)
def test_unexpected_closes_mean_look_it_up_again(code: int, text: str | None) -> None:
    assert CloseReason.decode(code, text).lookup


@given(st.text(min_size=1, max_size=300), st.text(max_size=300), st.text(max_size=300))
def test_encoded_close_reasons_fit_a_close_frame(host: str, broker: str, message: str) -> None:
    for reason in (
        CloseReason.transferred(f"http://{host}:8080", broker or None),
        CloseReason.redirected(f"http://{host}:8080", broker or None),
        CloseReason.unloaded(message),
        CloseReason.not_ready(message),
    ):
        text = reason.encode()
        assert len(text.encode()) <= MAX_CLOSE_REASON_BYTES
        back = CloseReason.decode(reason.code, text)
        assert back.reason == reason.reason
        if back.http_url is not None:
            assert back.http_url == reason.http_url


def test_a_transfer_url_too_long_for_a_close_frame_degrades_to_a_lookup() -> None:
    long = CloseReason.transferred("http://" + "h" * 120 + ":8080", "pulsar://x:6650")
    back = CloseReason.decode(long.code, long.encode())
    assert back.lookup
    medium = CloseReason.transferred("http://" + "h" * 60 + ":8080", "pulsar://" + "h" * 60 + ":6650")
    kept = CloseReason.decode(medium.code, medium.encode())
    assert kept.http_url == medium.http_url and kept.broker_url is None  # brokerUrl dropped to fit
