"""A "null broker" for benchmarks: Pulsar's binary protocol answered without storing anything.

It speaks just enough of the protocol for a producer of the official client -- CONNECT,
PING, PARTITIONED_METADATA (never partitioned), LOOKUP (itself), PRODUCER, SEND (a receipt at
once), CLOSE_PRODUCER -- with brokerlb's own codec and the same asyncio transport handling as
the real listener, but no topic, no dispatch, no stats. A benchmark runs it in its own process
and compares the real broker against it: the ratio is the cost of brokerlb's own work beyond
the protocol.

    python -m brokerlb.testing.null_broker      # prints "null broker ready at pulsar://127.0.0.1:PORT"
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any

from brokerlb.messaging.frames import FrameDecoder, send_receipt_frame, simple_frame
from brokerlb.messaging.wire import (
    CommandCloseProducer,
    CommandConnect,
    CommandConnected,
    CommandLookupTopic,
    CommandLookupTopicResponse,
    CommandPartitionedTopicMetadata,
    CommandPartitionedTopicMetadataResponse,
    CommandPing,
    CommandPong,
    CommandProducer,
    CommandProducerSuccess,
    CommandSend,
    CommandSuccess,
)

__all__ = ["NullBroker", "main"]


class _NullConnection(asyncio.Protocol):
    def __init__(self, url: str) -> None:
        self.url = url
        self.decoder = FrameDecoder()
        self.transport: Any = None
        self.entry = 0

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def data_received(self, data: bytes) -> None:
        out: list[bytes] = []
        for frame in self.decoder.feed(data):
            cmd = frame.command
            if isinstance(cmd, CommandSend):
                out.append(send_receipt_frame(cmd.producer_id, cmd.sequence_id, 1, self.entry, -1))
                self.entry += 1
            elif isinstance(cmd, CommandConnect):
                out.append(simple_frame(CommandConnected("null-broker", min(cmd.protocol_version or 0, 21))))
            elif isinstance(cmd, CommandPing):
                out.append(simple_frame(CommandPong()))
            elif isinstance(cmd, CommandPartitionedTopicMetadata):
                out.append(simple_frame(CommandPartitionedTopicMetadataResponse(0, cmd.request_id, 0)))
            elif isinstance(cmd, CommandLookupTopic):
                out.append(
                    simple_frame(CommandLookupTopicResponse(self.url, response=1, request_id=cmd.request_id))
                )
            elif isinstance(cmd, CommandProducer):
                name = cmd.producer_name or f"null-{cmd.producer_id}"
                out.append(
                    simple_frame(CommandProducerSuccess(cmd.request_id, name, -1, producer_ready=True))
                )
            elif isinstance(cmd, CommandCloseProducer):
                out.append(simple_frame(CommandSuccess(cmd.request_id)))
        if out:
            self.transport.write(b"".join(out))


class NullBroker:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host = host
        self.port = port
        self.server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"pulsar://{self.host}:{self.port}"

    async def start(self) -> NullBroker:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(lambda: _NullConnection(self.url), self.host, self.port)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


def main() -> None:
    async def run() -> None:
        broker = await NullBroker().start()
        print(f"null broker ready at {broker.url}", flush=True)
        await asyncio.Event().wait()

    try:
        import uvloop

        uvloop.run(run())
    except ImportError:  # pragma: no cover - the server extra installs uvloop
        asyncio.run(run())


if __name__ == "__main__":
    main()
