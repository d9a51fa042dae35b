"""Pulsar's protocol buffers and framing: field numbers, round trips, CRC-32C, malformed input (fuzzed)."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brokerlb.errors import BinaryProtocolError
from brokerlb.messaging.frames import (
    FRAME_PADDING,
    FrameDecoder,
    checksum_ok,
    crc32c,
    message_frame,
    payload_frame,
    payload_section,
    read_payload,
    send_receipt_frame,
    simple_frame,
)
from brokerlb.messaging.wire import (
    CommandAck,
    CommandCloseProducer,
    CommandConnect,
    CommandLookupTopicResponse,
    CommandMessage,
    CommandSend,
    CommandSendReceipt,
    CommandSubscribe,
    CommandType,
    KeyValue,
    MessageIdData,
    MessageMetadata,
    decode,
    decode_command,
    encode,
    encode_command,
    varint,
)


def test_field_numbers_are_pulsars() -> None:
    # CommandLookupTopicResponse{brokerServiceUrl=1 "a", response=3 Redirect(0), request_id=4 7, authoritative=5 true}
    data = encode(CommandLookupTopicResponse("a", response=0, request_id=7, authoritative=True))
    assert data == b"\x0a\x01a\x18\x00\x20\x07\x28\x01"
    # CommandCloseProducer{producer_id=1, request_id=2, assignedBrokerServiceUrl=3}
    assert encode(CommandCloseProducer(5, 6, "pulsar://h:1")) == b"\x08\x05\x10\x06\x1a\x0cpulsar://h:1"
    # MessageMetadata{producer_name=1, sequence_id=2, publish_time=3, properties=4, partition_key=6}
    meta = MessageMetadata("p", 1, 2, [KeyValue("k", "v")], partition_key="key")
    assert encode(meta) == b"\x0a\x01p\x10\x01\x18\x02\x22\x06\x0a\x01k\x12\x01v\x32\x03key"
    # BaseCommand{type=6 SEND, send=6 {producer_id=1, sequence_id=2}}
    assert encode_command(CommandSend(1, 2)) == b"\x08\x06\x32\x04\x08\x01\x10\x02"


def test_negative_ids_are_tens_byte_varints_as_java_writes_them() -> None:
    earliest = MessageIdData(-1, -1)
    data = encode(earliest)
    assert len(data) == 22 and decode(MessageIdData, data) == earliest


@pytest.mark.parametrize(
    "message",
    [
        CommandConnect("Pulsar-CPP-v3", protocol_version=20, auth_method_name="none"),
        CommandSubscribe("persistent://t/n/x", "s", 3, 1, 2, start_message_id=MessageIdData(5, 6, 0, 1)),
        CommandAck(1, 0, [MessageIdData(1, 2, ack_set=[-1, 5]), MessageIdData(1, 3)]),
        CommandMessage(7, MessageIdData(1, 2), redelivery_count=3),
    ],
)
def test_commands_round_trip(message: object) -> None:
    command_type, decoded = decode_command(encode_command(message))  # type: ignore[arg-type]
    assert decoded == message


def test_unknown_fields_are_skipped_and_required_ones_are_checked() -> None:
    data = encode(CommandSend(1, 2)) + b"\xf8\x07\x01" + b"\x82\x08\x02ab"  # fields 127 (varint), 128 (bytes)
    assert decode(CommandSend, data) == CommandSend(1, 2)
    with pytest.raises(BinaryProtocolError, match="required sequence_id missing"):
        decode(CommandSend, b"\x08\x01")


def test_frames_are_cut_from_any_split_of_the_stream() -> None:
    section = payload_section(MessageMetadata("p", 0, 1), b"hello")
    stream = simple_frame(CommandSend(1, 0)) + payload_frame(CommandSend(1, 1), section)
    for cut in range(len(stream) + 1):
        decoder = FrameDecoder()
        frames = decoder.feed(stream[:cut]) + decoder.feed(stream[cut:])
        assert [f.type for f in frames] == [CommandType.SEND, CommandType.SEND]
        assert frames[1].payload == section and decoder.buffered == 0


def test_the_checksum_is_crc32c_of_what_follows_it() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the CRC-32C check value
    section = payload_section(MessageMetadata("p", 0, 1), b"hello")
    assert checksum_ok(section) and read_payload(section)[1] == b"hello"
    corrupt = section[:-1] + bytes([section[-1] ^ 1])
    assert not checksum_ok(corrupt)


def test_hot_path_encoders_match_the_generic_codec() -> None:
    receipt = send_receipt_frame(3, 9, 123456789, 1000, 2)
    assert receipt == simple_frame(CommandSendReceipt(3, 9, MessageIdData(123456789, 1000, 2)))
    section = payload_section(MessageMetadata("p", 0, 1), b"x")
    message = message_frame(4, 1, 2, -1, section, redelivery_count=2, ack_set=(-5,))
    assert message == payload_frame(CommandMessage(4, MessageIdData(1, 2), 2, [-5]), section)


def test_oversized_frames_are_refused_before_they_are_buffered() -> None:
    decoder = FrameDecoder(max_message_size=1024)
    with pytest.raises(BinaryProtocolError, match="exceeds the maximum") as error:
        decoder.feed(struct.pack(">I", 1024 + FRAME_PADDING + 1))
    assert error.value.fatal and error.value.server_error == "NotAllowedError"


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_fuzzed_bytes_give_frames_or_a_protocol_error(data: bytes) -> None:
    decoder = FrameDecoder(max_message_size=1024)
    try:
        decoder.feed(data)
    except BinaryProtocolError as exc:
        assert exc.fatal and str(exc)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=120), st.sampled_from([2, 4, 5, 6, 10, 20, 23, 28, 34, 99]))
def test_fuzzed_commands_inside_valid_frames(body: bytes, command_type: int) -> None:
    command = b"\x08" + varint(command_type) + varint((command_type << 3) | 2) + varint(len(body)) + body
    frame = struct.pack(">II", len(command) + 4, len(command)) + command
    try:
        FrameDecoder().feed(frame)
    except BinaryProtocolError as exc:
        assert exc.fatal and str(exc)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_fuzzed_payload_sections_never_crash_the_readers(section: bytes) -> None:
    checksum_ok(section)
    try:
        read_payload(section)
    except BinaryProtocolError:
        pass
