"""The binary-protocol listener: an asyncio server on a socket bound before the broker registers.

``BinaryServer(context, sock)`` serves :class:`~brokerlb.broker.binary.connection.BinaryConnection`
s on ``sock`` (bound by :func:`bind_binary_socket` to ``brokerServicePort``; 0 = a free port,
whose real number the broker then advertises as ``pulsarServiceUrl``). :meth:`BinaryServer.stop`
closes every connection (after a graceful unload they have nothing left but their TCP state).
"""

from __future__ import annotations

import asyncio
import logging
import socket

from brokerlb.broker.binary.connection import BinaryConnection
from brokerlb.broker.binary.context import BinaryContext

__all__ = ["BinaryServer", "bind_binary_socket"]

logger = logging.getLogger(__name__)


def bind_binary_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``SO_REUSEADDR``, non-blocking)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


class BinaryServer:
    def __init__(self, context: BinaryContext, sock: socket.socket) -> None:
        self.context = context
        self.sock = sock
        self.port: int = sock.getsockname()[1]
        self.connections: set[BinaryConnection] = set()
        self._server: asyncio.Server | None = None
        #: connections accepted since start (for tests and operators)
        self.accepted = 0

    def _new_connection(self) -> BinaryConnection:
        self.accepted += 1
        conn = BinaryConnection(self.context, self.connections.discard)
        self.connections.add(conn)
        return conn

    async def start(self) -> BinaryServer:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._new_connection, sock=self.sock)
        return self

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for conn in list(self.connections):
            conn.close()
        if self._server is not None:
            try:
                await asyncio.wait_for(self._server.wait_closed(), 5)
            except TimeoutError:
                logger.warning("Binary listener on port %d did not close within 5 s", self.port)
            self._server = None
