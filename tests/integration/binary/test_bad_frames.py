"""Bad input on the binary port: the offending connection gets Pulsar's error (and is closed when the
byte stream cannot be trusted any more); every other connection keeps being served."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest

from brokerlb.admin import AsyncAdminClient
from brokerlb.messaging.frames import FrameDecoder, payload_frame, payload_section, simple_frame
from brokerlb.messaging.wire import (
    CommandConnect,
    CommandConnected,
    CommandError,
    CommandPing,
    CommandPong,
    CommandProducer,
    CommandProducerSuccess,
    CommandSend,
    CommandSendError,
    CommandSendReceipt,
    CommandType,
    MessageMetadata,
    ServerError,
    varint,
)
from brokerlb.testing.clusters import InProcessCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")

GUARD = 30.0


class Raw:
    """A hand-driven binary-protocol connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.decoder = FrameDecoder()
        self.frames: list[Any] = []

    @classmethod
    async def open(cls, cluster: InProcessCluster, connect: bool = True) -> Raw:
        port = cluster.services[0].binary.port
        raw = cls(*await asyncio.open_connection("127.0.0.1", port))
        if connect:
            raw.send(simple_frame(CommandConnect("raw-test", protocol_version=21)))
            assert isinstance(await raw.next(), CommandConnected)
        return raw

    def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def next(self) -> Any:
        """The next command the broker sends, or ``None`` once it closed the connection."""
        while not self.frames:
            data = await asyncio.wait_for(self.reader.read(65536), GUARD)
            if not data:
                return None
            self.frames += self.decoder.feed(data)
        return self.frames.pop(0).command

    async def closed(self) -> bool:
        while (await self.next()) is not None:
            pass
        return True

    def close(self) -> None:
        self.writer.close()


def frame(total: int, command_size: int, body: bytes) -> bytes:
    return struct.pack(">II", total, command_size) + body


async def test_frames_that_cannot_be_read_get_an_error_and_close_only_that_connection(
    cluster: InProcessCluster,
) -> None:
    bystander = await Raw.open(cluster)
    cases = [
        struct.pack(">I", 64 * 1024 * 1024) + b"x" * 8,  # beyond maxMessageSize
        frame(8, 100, b"\x00" * 4),  # commandSize does not fit
        frame(8, 4, b"\xff\xff\xff\xff"),  # not a protocol buffer
        frame(6, 2, b"\x10\x01"),  # a BaseCommand without its type
    ]
    for bad in cases:
        raw = await Raw.open(cluster)
        raw.send(bad)
        error = await raw.next()
        assert isinstance(error, CommandError), bad
        assert error.error in (ServerError.UnknownError, ServerError.NotAllowedError) and error.message
        assert await raw.closed()
    bystander.send(simple_frame(CommandPing()))
    assert isinstance(await bystander.next(), CommandPong)  # still served
    bystander.close()


async def test_commands_before_connect_are_refused(cluster: InProcessCluster) -> None:
    raw = await Raw.open(cluster, connect=False)
    raw.send(simple_frame(CommandPing()))
    error = await raw.next()
    assert isinstance(error, CommandError) and "CONNECT" in error.message
    assert await raw.closed()


async def test_a_bad_checksum_fails_that_send_with_checksum_error(
    cluster: InProcessCluster, namespace: str
) -> None:
    topic = f"persistent://{namespace}/checked"
    async with AsyncAdminClient(cluster.urls[0]) as admin:
        owner_url = (await admin.lookup_topic(topic))["httpUrl"]
    owner = next(s for s in cluster.services if s.url == owner_url)
    raw = Raw(*await asyncio.open_connection("127.0.0.1", owner.binary.port))
    raw.send(simple_frame(CommandConnect("raw-test", protocol_version=21)))
    assert isinstance(await raw.next(), CommandConnected)
    raw.send(simple_frame(CommandProducer(topic, 1, 1)))
    assert isinstance(await raw.next(), CommandProducerSuccess)
    section = bytearray(payload_section(MessageMetadata("raw", 0, 1), b"payload"))
    section[-1] ^= 0xFF  # corrupt the payload: the CRC-32C no longer matches
    raw.send(payload_frame(CommandSend(1, 0), bytes(section)))
    error = await raw.next()
    assert isinstance(error, CommandSendError) and error.error == ServerError.ChecksumError
    raw.send(payload_frame(CommandSend(1, 1), payload_section(MessageMetadata("raw", 1, 1), b"payload")))
    receipt = await raw.next()
    assert isinstance(receipt, CommandSendReceipt) and receipt.sequence_id == 1  # the connection goes on
    raw.close()


async def test_a_command_brokerlb_does_not_serve_is_refused_by_name(cluster: InProcessCluster) -> None:
    raw = await Raw.open(cluster)
    body = b"\x08" + varint(7)  # CommandGetSchema{request_id: 7}
    command = (
        b"\x08"
        + varint(CommandType.GET_SCHEMA)
        + varint((CommandType.GET_SCHEMA << 3) | 2)
        + varint(len(body))
        + body
    )
    raw.send(struct.pack(">II", len(command) + 4, len(command)) + command)
    error = await raw.next()
    assert isinstance(error, CommandError) and error.request_id == 7
    assert error.error == ServerError.NotAllowedError and "GET_SCHEMA" in error.message
    raw.send(simple_frame(CommandPing()))
    assert isinstance(await raw.next(), CommandPong)
    raw.close()
