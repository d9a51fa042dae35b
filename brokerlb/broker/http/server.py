"""Serve an ASGI app with uvicorn inside the caller's event loop, on a socket bound up front.

Binding first lets a broker configured with ``webServicePort=0`` learn its port before
it registers (its id is ``host:port``). uvicorn's own signal handling is turned off:
the process that runs brokers (``brokerlb broker`` / ``standalone``) decides when to
stop them, and stops them gracefully (bundles released first).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

__all__ = ["HttpServer", "bind_socket"]

logger = logging.getLogger(__name__)


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port=0``: a free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto=IPPROTO_TCP: asyncio then sets TCP_NODELAY on accepted connections (else 40 ms delayed ACKs)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(2048)
    sock.setblocking(False)
    return sock


class HttpServer:
    """uvicorn on a pre-bound socket; :meth:`start` returns once it accepts connections."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        import uvicorn

        self.sock = sock
        http = "httptools"
        try:
            import httptools  # noqa: F401
        except ImportError:  # pragma: no cover - the server extra installs it
            http = "h11"
        config = uvicorn.Config(
            app,
            lifespan="off",
            access_log=False,
            log_level="warning",
            http=http,
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
        )

        class _Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        self._server = _Server(config)
        self._task: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    async def start(self) -> None:
        self._task = asyncio.create_task(self._server.serve(sockets=[self.sock]), name=f"http :{self.port}")
        while not self._server.started:
            if self._task.done():
                self._task.result()  # raises the startup error
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self._task is None:
            self.sock.close()
            return
        self._server.should_exit = True
        try:
            await asyncio.wait_for(asyncio.shield(self._task), 5)
        except TimeoutError:
            self._server.force_exit = True
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        self._task = None
        self.sock.close()
