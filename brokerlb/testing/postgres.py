"""Start a real PostgreSQL server for tests, benchmarks and demos.

Uses Debian's ``postgresql`` package (``/usr/lib/postgresql/<version>/bin``; installed by
``scripts/setup.sh``). The cluster is created once (``initdb``, about 2 s) in a temporary
directory owned by the unprivileged ``postgres`` user (initdb refuses to run as root; as
another user the server runs as that user), and the server listens on a free ``127.0.0.1``
port with its socket in that directory. Tests ask for a database each
(:meth:`PostgresServer.new_database_url`). :meth:`PostgresServer.stop` stops the server by the
PID in ``postmaster.pid`` (SIGINT: a fast shutdown), never by name; :meth:`PostgresServer.restart`
stops and starts it on the same port and data (a storage fault under traffic).

>>> with PostgresServer() as pg:             # doctest: +SKIP
...     url = pg.new_database_url()          # postgresql://postgres@127.0.0.1:PORT/t1
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from brokerlb.testing.zookeeper import free_port

__all__ = ["PostgresServer", "PostgresUnavailableError", "postgres_bin", "postgres_available"]


class PostgresUnavailableError(RuntimeError):
    """PostgreSQL is not installed, or the server did not come up."""


def postgres_bin() -> Path | None:
    """The newest installed ``/usr/lib/postgresql/<version>/bin`` with ``initdb``."""
    root = Path("/usr/lib/postgresql")
    if not root.is_dir():
        return None
    versions = sorted((p for p in root.iterdir() if (p / "bin" / "initdb").exists()), key=lambda p: p.name)
    return versions[-1] / "bin" if versions else None


def postgres_available() -> bool:
    return postgres_bin() is not None


class PostgresServer:
    """One PostgreSQL server on a free loopback port (module docstring)."""

    def __init__(self, *, start_timeout: float = 60.0) -> None:
        self.bin = postgres_bin()
        if self.bin is None:
            raise PostgresUnavailableError("PostgreSQL is not installed (apt-get install postgresql)")
        self.start_timeout = start_timeout
        self.port = 0
        self.dir: Path | None = None
        self._names = itertools.count(1)
        self._as_postgres = os.geteuid() == 0

    @property
    def data(self) -> Path:
        assert self.dir is not None
        return self.dir / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *args: str, check: bool = True, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self._as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=check, timeout=timeout)

    def start(self) -> PostgresServer:
        """initdb (once), then start the server and wait until it answers."""
        assert self.bin is not None
        if self.dir is None:
            self.dir = Path(tempfile.mkdtemp(prefix="brokerlb-pg-"))
            if self._as_postgres:
                shutil.chown(self.dir, "postgres", "postgres")
            self._run(
                str(self.bin / "initdb"),
                "-D",
                str(self.data),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-instructions",
            )
            with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
                conf.write(
                    "\nfsync = on\nsynchronous_commit = on\nmax_connections = 200\nshared_buffers = 64MB\n"
                )
            self.port = free_port()
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir}"
        self._run(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.dir / "server.log"), "-w",
            "-t", str(int(self.start_timeout)), "-o", options, "start",
            timeout=self.start_timeout + 10,
        )  # fmt: skip
        return self

    @property
    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def stop(self, *, timeout: float = 30.0) -> None:
        """Fast shutdown by PID (SIGINT), SIGKILL after ``timeout``."""
        pid = self.pid
        if pid is None:
            return
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def restart(self) -> None:
        """Stop and start again on the same port and data."""
        self.stop()
        self.start()

    def new_database_url(self) -> str:
        """A fresh database on this server (one per test)."""
        assert self.bin is not None
        name = f"t{os.getpid()}_{next(self._names)}"
        self._run(str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres", name)
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def close(self) -> None:
        """Stop the server and delete its data."""
        self.stop()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
