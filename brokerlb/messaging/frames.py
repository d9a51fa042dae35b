"""Pulsar's binary framing: simple and payload frames, CRC-32C checksums, batches.

A **simple frame** is ``[totalSize: u32][commandSize: u32][BaseCommand]`` (big endian;
``totalSize`` counts everything after itself). A **payload frame** (SEND, MESSAGE) appends the
*payload section*::

    [magic 0x0e01: u16][checksum: u32][metadataSize: u32][MessageMetadata][payload]

where the checksum is the CRC-32C (Castagnoli) of everything after it. The magic and checksum
are optional (protocol versions before 6 leave them out). The broker keeps a SEND's payload
section as it came and forwards it unchanged in MESSAGE frames, so the producer's checksum,
metadata and batch reach the consumer byte for byte.

:class:`FrameDecoder` cuts a byte stream into frames and checks them: a ``totalSize`` beyond
the limit (``maxMessageSize`` plus Pulsar's 10 KB frame padding), a ``commandSize`` that does
not fit, or a command that does not decode is a fatal
:class:`~brokerlb.errors.BinaryProtocolError` -- the stream is no longer trustworthy and the
connection is closed, as Pulsar's frame decoder does. A bad checksum is not fatal: the
connection answers that one SEND with ``ChecksumError`` (:func:`checksum_ok`).

>>> from brokerlb.messaging.wire import CommandPing, MessageMetadata, CommandSend
>>> decoder = FrameDecoder()
>>> frame = simple_frame(CommandPing())
>>> frame.hex()  # totalSize 9, commandSize 5, BaseCommand{type: PING, ping: {}}
'00000009000000050812920100'
>>> [f.type for f in decoder.feed(frame[:5]) + decoder.feed(frame[5:])]
[18]
>>> section = payload_section(MessageMetadata("p", 0, 1700000000000), b"hello")
>>> checksum_ok(section), read_payload(section)[1]
(True, b'hello')
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

from brokerlb.errors import BinaryProtocolError
from brokerlb.messaging.wire import (
    CommandType,
    Message,
    MessageMetadata,
    SingleMessageMetadata,
    decode,
    decode_command,
    encode,
    encode_command,
    unknown_request_id,
    varint,
)

__all__ = [
    "MAGIC_CRC32C",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "FRAME_PADDING",
    "Frame",
    "FrameDecoder",
    "simple_frame",
    "payload_frame",
    "payload_section",
    "checksum_ok",
    "read_metadata",
    "read_payload",
    "send_receipt_frame",
    "message_frame",
    "unpack_batch",
    "crc32c",
]

MAGIC_CRC32C = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
#: ``maxMessageSize`` default (5 MB), announced in CONNECTED.
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
#: ``Commands.MESSAGE_SIZE_FRAME_PADDING``: room for the command around a message of the maximum size.
FRAME_PADDING = 10 * 1024

_U32 = struct.Struct(">I")
_U32X2 = struct.Struct(">II")
_MAGIC = b"\x0e\x01"


_crc: list[Callable[[bytes | memoryview], int]] = []


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli), the checksum Pulsar puts in payload frames.

    Computed by the ``crc32c`` package (C, ~0.1 µs per KB), imported on first use: its package
    init reads its own version through ``importlib.metadata``, which pulls in ``socket``, and the
    pure core must not import that.
    """
    if not _crc:
        import crc32c as package

        _crc.append(package.crc32c)
    return int(_crc[0](data))


@dataclass(slots=True)
class Frame:
    """One decoded frame: the command type, its message (``None`` if brokerlb does not read that
    type) and, for payload frames, the payload section as received."""

    type: int
    command: Message | None
    payload: bytes | None = None
    #: for a command type brokerlb does not read: its request id, if it has one
    request_id: int | None = None


class FrameDecoder:
    """Cuts a byte stream into :class:`Frame` s (module docstring). Feed it whatever the socket gives."""

    __slots__ = ("max_frame_size", "_buf", "frames_seen")

    def __init__(self, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.max_frame_size = max_message_size + FRAME_PADDING
        self._buf = bytearray()
        #: frames cut so far (a caller timing a partial frame tells a new frame from the old one)
        self.frames_seen = 0

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def clear(self) -> None:
        """Drop what is buffered (a closed connection's partial frame)."""
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        buf = self._buf
        buf += data
        frames: list[Frame] = []
        pos = 0
        size = len(buf)
        try:
            while size - pos >= 4:
                (total,) = _U32.unpack_from(buf, pos)
                if total > self.max_frame_size:
                    raise BinaryProtocolError(
                        "NotAllowedError",
                        f"Frame of {total} bytes exceeds the maximum of {self.max_frame_size} "
                        f"(maxMessageSize {self.max_frame_size - FRAME_PADDING} plus {FRAME_PADDING})",
                        fatal=True,
                    )
                if total < 4:
                    raise BinaryProtocolError(
                        "UnknownError",
                        f"Malformed frame: totalSize {total} leaves no room for a command",
                        fatal=True,
                    )
                if size - pos - 4 < total:
                    break
                frames.append(_frame(buf, pos + 4, pos + 4 + total))
                pos += 4 + total
        except BinaryProtocolError as exc:
            exc.fatal = True
            self._buf = bytearray()
            raise
        if pos:
            del buf[:pos]
        self.frames_seen += len(frames)
        return frames


def _frame(buf: bytearray, start: int, end: int) -> Frame:
    (command_size,) = _U32.unpack_from(buf, start)
    body = start + 4
    if command_size == 0 or body + command_size > end:
        raise BinaryProtocolError(
            "UnknownError",
            f"Malformed frame: commandSize {command_size} does not fit in a frame of {end - start} bytes",
        )
    command_type, command = decode_command(buf, body, body + command_size)
    payload = bytes(buf[body + command_size : end]) if body + command_size < end else None
    if command is None:
        return Frame(command_type, None, payload, unknown_request_id(buf, body, body + command_size))
    return Frame(command_type, command, payload)


# --------------------------------------------------------------------------- encoding


def simple_frame(msg: Message) -> bytes:
    """``[totalSize][commandSize][BaseCommand]``."""
    cmd = encode_command(msg)
    return _U32X2.pack(len(cmd) + 4, len(cmd)) + cmd


def payload_frame(msg: Message, section: bytes) -> bytes:
    """A simple frame followed by a payload section (as made by :func:`payload_section` or received)."""
    cmd = encode_command(msg)
    return _U32X2.pack(len(cmd) + 4 + len(section), len(cmd)) + cmd + section


def payload_section(metadata: MessageMetadata | bytes, payload: bytes) -> bytes:
    """``[magic][crc32c][metadataSize][metadata][payload]`` for a message built by the broker (WebSocket)."""
    meta = metadata if isinstance(metadata, bytes) else encode(metadata)
    body = _U32.pack(len(meta)) + meta + payload
    return _MAGIC + _U32.pack(crc32c(body)) + body


def _metadata_bounds(section: bytes) -> tuple[int, int]:
    """``(start, end)`` of the MessageMetadata in a payload section."""
    pos = 0
    if section[:2] == b"\x0e\x02":  # broker entry metadata, then the rest
        if len(section) < 6:
            raise BinaryProtocolError("UnknownError", "Malformed payload: truncated broker entry metadata")
        (size,) = _U32.unpack_from(section, 2)
        pos = 6 + size
    if section[pos : pos + 2] == _MAGIC:
        pos += 6
    if len(section) < pos + 4:
        raise BinaryProtocolError("UnknownError", "Malformed payload: no metadata size")
    (meta_size,) = _U32.unpack_from(section, pos)
    start = pos + 4
    if start + meta_size > len(section):
        raise BinaryProtocolError(
            "UnknownError", f"Malformed payload: metadata of {meta_size} bytes past the end of the frame"
        )
    return start, start + meta_size


def checksum_ok(section: bytes) -> bool:
    """Whether the section's CRC-32C matches (a section without the magic has no checksum: ``True``)."""
    if len(section) < 2 or section[:2] != _MAGIC:
        return True
    if len(section) < 6:
        return False
    (expected,) = _U32.unpack_from(section, 2)
    return bool(crc32c(memoryview(section)[6:]) == expected)


def read_metadata(section: bytes) -> MessageMetadata:
    """The section's MessageMetadata (a malformed one raises :class:`BinaryProtocolError`)."""
    start, end = _metadata_bounds(section)
    return decode(MessageMetadata, section, start, end)


def read_payload(section: bytes) -> tuple[MessageMetadata, bytes]:
    start, end = _metadata_bounds(section)
    return decode(MessageMetadata, section, start, end), section[end:]


def unpack_batch(
    metadata: MessageMetadata, payload: bytes
) -> list[tuple[SingleMessageMetadata | None, bytes]]:
    """The messages of an entry: ``[(None, payload)]`` for a single message, else each batched
    message with its ``SingleMessageMetadata``. Compression NONE and ZLIB are read; LZ4, ZSTD
    and SNAPPY raise :class:`BinaryProtocolError` (brokerlb does not ship those codecs)."""
    compression = metadata.compression or 0
    if compression == 2:
        try:
            payload = zlib.decompress(payload)
        except zlib.error as exc:
            raise BinaryProtocolError("UnknownError", f"Malformed ZLIB payload: {exc}") from None
    elif compression != 0:
        names = {1: "LZ4", 3: "ZSTD", 4: "SNAPPY"}
        raise BinaryProtocolError(
            "NotAllowedError",
            f"{names.get(compression, compression)} compressed messages cannot be read by the broker",
        )
    if metadata.num_messages_in_batch is None:
        return [(None, payload)]
    out: list[tuple[SingleMessageMetadata | None, bytes]] = []
    pos = 0
    for _ in range(metadata.num_messages_in_batch):
        if pos + 4 > len(payload):
            raise BinaryProtocolError("UnknownError", "Malformed batch: truncated")
        (size,) = _U32.unpack_from(payload, pos)
        pos += 4
        if pos + size > len(payload):
            raise BinaryProtocolError("UnknownError", "Malformed batch: message metadata past the end")
        single = decode(SingleMessageMetadata, payload, pos, pos + size)
        pos += size
        if single.payload_size < 0 or pos + single.payload_size > len(payload):
            raise BinaryProtocolError("UnknownError", "Malformed batch: message payload past the end")
        out.append((single, payload[pos : pos + single.payload_size]))
        pos += single.payload_size
    return out


# --------------------------------------------------------------------------- hot-path encoders

_RECEIPT_TYPE = b"\x08" + varint(CommandType.SEND_RECEIPT) + varint((CommandType.SEND_RECEIPT << 3) | 2)
_MESSAGE_TYPE = b"\x08" + varint(CommandType.MESSAGE) + varint((CommandType.MESSAGE << 3) | 2)


def _message_id(ledger: int, entry: int, partition: int, batch_index: int = -1, batch_size: int = 0) -> bytes:
    data = b"\x08" + varint(ledger) + b"\x10" + varint(entry)
    if partition >= 0:
        data += b"\x18" + varint(partition)
    if batch_index >= 0:
        data += b"\x20" + varint(batch_index)
        if batch_size:
            data += b"\x30" + varint(batch_size)
    return data


def send_receipt_frame(
    producer_id: int, sequence_id: int, ledger: int, entry: int, partition: int, highest_sequence_id: int = 0
) -> bytes:
    """``SEND_RECEIPT{producer_id, sequence_id, message_id, highest_sequence_id}`` as a frame."""
    mid = _message_id(ledger, entry, partition)
    body = b"\x08" + varint(producer_id) + b"\x10" + varint(sequence_id) + b"\x1a" + varint(len(mid)) + mid
    if highest_sequence_id:
        body += b"\x20" + varint(highest_sequence_id)
    cmd = _RECEIPT_TYPE + varint(len(body)) + body
    return _U32X2.pack(len(cmd) + 4, len(cmd)) + cmd


def message_frame(
    consumer_id: int,
    ledger: int,
    entry: int,
    partition: int,
    section: bytes,
    redelivery_count: int = 0,
    ack_set: tuple[int, ...] = (),
) -> bytes:
    """``MESSAGE{consumer_id, message_id, redelivery_count, ack_set}`` plus the payload section as received."""
    mid = _message_id(ledger, entry, partition)
    body = b"\x08" + varint(consumer_id) + b"\x12" + varint(len(mid)) + mid
    if redelivery_count:
        body += b"\x18" + varint(redelivery_count)
    for word in ack_set:
        body += b"\x20" + varint(word)
    cmd = _MESSAGE_TYPE + varint(len(body)) + body
    return _U32X2.pack(len(cmd) + 4 + len(section), len(cmd)) + cmd + section
