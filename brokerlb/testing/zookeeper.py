"""Start a real ZooKeeper server for tests, benchmarks and demos.

Uses Debian's ``zookeeper`` package (``/usr/share/java/zookeeper.jar``; installed by
``scripts/setup.sh``) and runs the Java main class directly, as the set-up notes
recommend (Debian's ``zkServer.sh`` hard-codes ``/etc/zookeeper``). The server
listens on a free ``127.0.0.1`` port with its data in a temporary directory:

* ``tickTime=500``, ``minSessionTimeout=1000``, ``maxSessionTimeout=20000`` -- short
  sessions, so expiry tests take ~2 s;
* the admin server is off (it would take :8080); the four-letter-word whitelist
  allows ``ruok`` (the readiness probe), ``srvr``, ``stat``, ``mntr``.

>>> with ZooKeeperServer() as zk:            # doctest: +SKIP
...     store = open_store(zk.url, session_timeout=2.0)

The server is stopped by PID (SIGTERM, then SIGKILL after a grace period), never by name.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

__all__ = [
    "ZooKeeperServer",
    "ZooKeeperUnavailableError",
    "free_port",
    "four_letter_word",
    "zookeeper_available",
]

JAVA_DIR = Path("/usr/share/java")
ZOOKEEPER_JAR = JAVA_DIR / "zookeeper.jar"
_LOG_JARS = ("slf4j-log4j12.jar", "log4j-1.2.jar")


class ZooKeeperUnavailableError(RuntimeError):
    """Java or the ZooKeeper jar is missing, or the server did not come up."""


def zookeeper_available() -> bool:
    """Java and Debian's ZooKeeper jar are installed."""
    return shutil.which("java") is not None and ZOOKEEPER_JAR.exists()


def free_port(host: str = "127.0.0.1", count: int = 1) -> int:
    """A TCP port that is free on ``host`` right now -- the first of ``count`` consecutive free
    ports (a standalone cluster's brokers take consecutive web ports)."""
    for _ in range(100):
        socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM)]
        try:
            socks[0].bind((host, 0))
            first = int(socks[0].getsockname()[1])
            for i in range(1, count):
                socks.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                socks[-1].bind((host, first + i))
            return first
        except OSError:
            continue
        finally:
            for sock in socks:
                sock.close()
    raise OSError(f"no {count} consecutive free ports on {host}")


def four_letter_word(host: str, port: int, word: str = "ruok", timeout: float = 1.0) -> str:
    """Send a ZooKeeper four-letter command and return the answer ("" when unreachable)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(word.encode("ascii"))
            chunks = []
            while True:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                chunks.append(chunk)
            return b"".join(chunks).decode("utf-8", "replace")
    except OSError:
        return ""


class ZooKeeperServer:
    """A standalone ZooKeeper server process on a loopback port."""

    def __init__(
        self,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        data_dir: str | Path | None = None,
        tick_time_ms: int = 500,
        min_session_timeout_ms: int = 1000,
        max_session_timeout_ms: int = 20000,
        heap: str = "256m",
        java: str = "java",
    ) -> None:
        self.host = host
        self.port = port
        self.tick_time_ms = tick_time_ms
        self.min_session_timeout_ms = min_session_timeout_ms
        self.max_session_timeout_ms = max_session_timeout_ms
        self.heap = heap
        self.java = java
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._workdir: Path | None = None
        self._own_workdir = False
        self._process: subprocess.Popen[bytes] | None = None
        self._log: Path | None = None

    # ------------------------------------------------------------------ views
    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def hosts(self) -> str:
        """``127.0.0.1:port`` (kazoo's host string)."""
        if self.port is None:
            raise ZooKeeperUnavailableError("the server has not been started")
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """``zk:127.0.0.1:port`` for :func:`brokerlb.coordination.open_store`."""
        return f"zk:{self.hosts}"

    @property
    def is_running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        if self._log is None or not self._log.exists():
            return ""
        return "\n".join(self._log.read_text(errors="replace").splitlines()[-lines:])

    # ------------------------------------------------------------------ life cycle
    def start(self, timeout: float = 30.0) -> ZooKeeperServer:
        """Launch the JVM and wait until it answers ``ruok`` with ``imok``."""
        if self.is_running:
            return self
        if not zookeeper_available():
            raise ZooKeeperUnavailableError(
                f"ZooKeeper needs `java` on PATH and {ZOOKEEPER_JAR} (Debian package zookeeper; "
                "scripts/setup.sh installs it)"
            )
        if self.port is None:
            self.port = free_port(self.host)
        workdir = self._prepare_workdir()
        cmd = [
            self.java,
            f"-Xmx{self.heap}",
            "-cp",
            self._classpath(workdir),
            f"-Dlog4j.configuration=file:{workdir / 'log4j.properties'}",
            "-Dzookeeper.admin.enableServer=false",
            "org.apache.zookeeper.server.ZooKeeperServerMain",
            str(workdir / "zoo.cfg"),
        ]
        self._log = workdir / "zookeeper.log"
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir
            )
        try:
            self._wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server by PID (SIGTERM, then SIGKILL) and remove its temporary files."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        if self._own_workdir and self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def crash(self) -> None:
        """SIGKILL the server by PID and keep its data: :meth:`start` brings it back on the same port
        with every session and node it had (sessions get a fresh timeout from the restart)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait(10)

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals
    def _prepare_workdir(self) -> Path:
        if self._workdir is None:
            self._workdir = Path(tempfile.mkdtemp(prefix="brokerlb-zk-"))
            self._own_workdir = True
        data_dir = self._data_dir or (self._workdir / "data")
        data_dir.mkdir(parents=True, exist_ok=True)
        (self._workdir / "zoo.cfg").write_text(
            f"tickTime={self.tick_time_ms}\n"
            f"dataDir={data_dir}\n"
            f"clientPort={self.port}\n"
            f"clientPortAddress={self.host}\n"
            f"minSessionTimeout={self.min_session_timeout_ms}\n"
            f"maxSessionTimeout={self.max_session_timeout_ms}\n"
            "admin.enableServer=false\n"
            "4lw.commands.whitelist=ruok,srvr,stat,mntr\n"
            "maxClientCnxns=0\n"
            "forceSync=no\n"
        )
        (self._workdir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, CONSOLE\n"
            "log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\n"
            "log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p %c{1}: %m%n\n"
        )
        return self._workdir

    def _classpath(self, workdir: Path) -> str:
        jars = [str(ZOOKEEPER_JAR)] + [str(JAVA_DIR / j) for j in _LOG_JARS if (JAVA_DIR / j).exists()]
        return os.pathsep.join([str(workdir), *jars])

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self.port is not None
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise ZooKeeperUnavailableError(f"ZooKeeper exited during start-up:\n{self.log_tail()}")
            if four_letter_word(self.host, self.port, "ruok", timeout=0.5) == "imok":
                return
            time.sleep(0.05)
        raise ZooKeeperUnavailableError(
            f"ZooKeeper did not answer ruok within {timeout} s:\n{self.log_tail()}"
        )

    def __repr__(self) -> str:
        state = "running" if self.is_running else "stopped"
        return f"ZooKeeperServer({self.host}:{self.port}, pid={self.pid}, {state})"
