"""The binary-protocol listener: an asyncio server on a socket bound before the broker registers.

``BinaryServer(context, sock)`` serves :class:`~brokerlb.broker.binary.connection.BinaryConnection`
s on ``sock`` (bound by :func:`bind_binary_socket` to ``brokerServicePort``; 0 = a free port,
whose real number the broker then advertises as ``pulsarServiceUrl``). :meth:`BinaryServer.stop`
closes every connection (after a graceful unload they have nothing left but their TCP state).

With ``tls=(sock, ssl_context)`` the same connections are also served over TLS on a second
socket (``brokerServicePortTls``, ``pulsar+ssl://``); ``sock`` may then be ``None`` (TLS only).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl

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
    def __init__(
        self,
        context: BinaryContext,
        sock: socket.socket | None,
        tls: tuple[socket.socket, ssl.SSLContext] | None = None,
    ) -> None:
        self.context = context
        self.sock = sock
        self.tls = tls
        #: the plain and TLS ports (None when not served)
        self.port: int | None = sock.getsockname()[1] if sock is not None else None
        self.tls_port: int | None = tls[0].getsockname()[1] if tls is not None else None
        self.connections: set[BinaryConnection] = set()
        self._servers: list[asyncio.Server] = []
        #: connections accepted since start (for tests and operators)
        self.accepted = 0

    def _new_connection(self) -> BinaryConnection:
        self.accepted += 1
        conn = BinaryConnection(self.context, self.connections.discard)
        self.connections.add(conn)
        return conn

    async def start(self) -> BinaryServer:
        loop = asyncio.get_running_loop()
        if self.sock is not None:
            self._servers.append(await loop.create_server(self._new_connection, sock=self.sock))
        if self.tls is not None:
            tls_sock, context = self.tls
            self._servers.append(await loop.create_server(self._new_connection, sock=tls_sock, ssl=context))
        return self

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.close()
        for server in self._servers:
            try:
                await asyncio.wait_for(server.wait_closed(), 5)
            except TimeoutError:
                logger.warning(
                    "Binary listener on ports %s/%s did not close within 5 s", self.port, self.tls_port
                )
        self._servers = []
