"""Serve an ASGI app with uvicorn inside the caller's event loop, on sockets bound up front.

Binding first lets a broker configured with ``webServicePort=0`` learn its port before
it registers (its id is ``host:port``). uvicorn's own signal handling is turned off:
the process that runs brokers (``brokerlb broker`` / ``standalone``) decides when to
stop them, and stops them gracefully (bundles released first).

:class:`WebServers` is a broker's web service: the plain port (``webServicePort``) and, with
``webServicePortTls``, the TLS port beside it (:mod:`brokerlb.security.tls`), one app on both.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Iterator
from typing import Any

from brokerlb.errors import InvalidConfigError
from brokerlb.security.tls import server_context

__all__ = ["HttpServer", "WebServers", "bind_socket"]

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
    """uvicorn on a pre-bound socket; :meth:`start` returns once it accepts connections.

    ``ssl_context``: serve TLS on the socket (uvicorn then tells the app ``scheme`` ``https``).
    """

    def __init__(self, app: Any, sock: socket.socket, ssl_context: ssl.SSLContext | None = None) -> None:
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

        if ssl_context is not None:
            config.load()
            config.ssl = ssl_context  # our context (its checks named the keys), not one from file names
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


class WebServers:
    """A broker's web service: the plain port and, with ``webServicePortTls``, the TLS port.

    :meth:`bind` binds both sockets (port 0: a free one; :attr:`port` / :attr:`tls_port` are the
    real ones) and checks the TLS files; :meth:`serving` gives the app; :meth:`start` /
    :meth:`stop` run both servers.
    """

    def __init__(
        self, plain: socket.socket, tls: socket.socket | None, context: ssl.SSLContext | None
    ) -> None:
        self._plain, self._tls, self._context = plain, tls, context
        self._servers: list[HttpServer] = []

    @classmethod
    def bind(cls, conf: Any) -> WebServers:
        context = server_context(conf)
        if context is not None and conf.webServicePort is None:
            raise InvalidConfigError(
                "webServicePort",
                conf.webServicePort,
                "brokerlb brokers call each other on the plain web port: set it beside webServicePortTls "
                "(a bindAddress or firewall can keep it internal)",
            )
        plain = bind_socket(conf.bindAddress, conf.webServicePort or 0)
        tls = None
        if context is not None:
            try:
                tls = bind_socket(conf.bindAddress, conf.webServicePortTls)
            except BaseException:
                plain.close()
                raise
        return cls(plain, tls, context)

    @property
    def port(self) -> int:
        return int(self._plain.getsockname()[1])

    @property
    def tls_port(self) -> int | None:
        return int(self._tls.getsockname()[1]) if self._tls is not None else None

    def serving(self, app: Any) -> WebServers:
        self._servers = [HttpServer(app, self._plain)]
        if self._tls is not None:
            self._servers.append(HttpServer(app, self._tls, self._context))
        return self

    async def start(self) -> None:
        for server in self._servers:
            await server.start()

    async def stop(self) -> None:
        if not self._servers:
            self.close()
        for server in self._servers:
            await server.stop()

    def close(self) -> None:
        """Close the sockets of servers never started."""
        for sock in (self._plain, self._tls):
            if sock is not None:
                sock.close()
