"""Broker clusters for end-to-end tests: in-process (embedded store) or separate processes (ZooKeeper).

Both expose the same small surface, so one test suite runs on both:

* ``urls`` / ``broker_ids`` -- the brokers' web URLs and ids, in start order;
* ``store_url`` -- the metadata store the brokers use (tests open their own client on it);
* ``await kill(i)`` -- crash broker ``i`` (no release, no deregistration: its session
  expires after ``metadataStoreSessionTimeoutMillis``);
* ``await restart(i)`` (processes only) -- start a crashed broker ``i`` again at its addresses
  (its web and binary ports: the same broker id, and clients' service URLs stay valid);
* ``await stop()`` -- stop every broker gracefully.

:class:`InProcessCluster` runs :class:`~brokerlb.broker.standalone.StandaloneCluster` on a
fresh ``memory:`` store; its brokers are reachable as objects (``cluster.services``).
:class:`ProcessCluster` starts ``brokerlb broker`` processes (one per broker, free
loopback ports) and kills them by PID. Nothing here imports pytest.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from brokerlb.testing.zookeeper import free_port

__all__ = ["InProcessCluster", "ProcessCluster", "TEST_OVERRIDES", "zookeeper_process_cluster"]

#: Settings for fast, deterministic tests: 5 s sessions (a loaded CI box must not lapse leases),
#: reports every 200 ms, modelled host usage, no shedding unless asked.
TEST_OVERRIDES: dict[str, Any] = {
    "metadataStoreSessionTimeoutMillis": 5000,
    "loadBalancerReportUpdateMinIntervalMillis": 200,
    "brokerlbHostUsage": "traffic",
    "loadBalancerSheddingIntervalMinutes": 10,  # no shedding unless a test asks for it
}

_READY = re.compile(r"ready at (http://\S+)(?: (pulsar://\S+))?")


class InProcessCluster:
    """N brokers in this process on a fresh embedded store (or ``store_url``), on free ports."""

    def __init__(
        self, brokers: int = 3, overrides: Mapping[str, Any] | None = None, *, store_url: str | None = None
    ) -> None:
        from brokerlb.broker.standalone import StandaloneCluster

        #: a fresh embedded store unless given (e.g. ``zk:host:port/chroot``: real ZooKeeper)
        self.store_url = store_url or f"memory:e2e-{uuid.uuid4().hex[:10]}"
        self.cluster = StandaloneCluster(
            brokers,
            metadata_store=self.store_url,
            web_port=0,
            broker_port=None,
            overrides={"clusterName": "e2e", **TEST_OVERRIDES, **(overrides or {})},
        )
        self.session_timeout = self.cluster.configs[0].duration_seconds("metadataStoreSessionTimeoutMillis")

    async def start(self) -> InProcessCluster:
        await self.cluster.start()
        await self.cluster.wait_for_leader()
        return self

    @property
    def services(self) -> list[Any]:
        return self.cluster.brokers

    @property
    def urls(self) -> list[str]:
        return self.cluster.urls

    @property
    def broker_ids(self) -> list[str]:
        return [b.broker_id for b in self.cluster.brokers]

    @property
    def binary_urls(self) -> list[str]:
        """The brokers' ``pulsar://`` URLs (binary protocol), in start order."""
        return [b.identity.pulsar_service_url or "" for b in self.cluster.brokers]

    async def kill(self, index: int) -> None:
        await self.cluster.brokers[index].kill()

    async def stop(self) -> None:
        await self.cluster.stop()


class ProcessCluster:
    """N ``brokerlb broker`` processes on one metadata store (typically ZooKeeper), killed by PID."""

    def __init__(
        self,
        store_url: str,
        brokers: int = 3,
        overrides: Mapping[str, Any] | None = None,
        *,
        python: str = sys.executable,
        start_timeout: float = 60.0,
    ) -> None:
        self.store_url = store_url
        self.count = brokers
        self.overrides = {
            "clusterName": "e2e",
            **TEST_OVERRIDES,
            **(overrides or {}),
            "metadataStoreUrl": store_url,
            "advertisedAddress": "127.0.0.1",
            "bindAddress": "127.0.0.1",
        }
        self.session_timeout = float(self.overrides["metadataStoreSessionTimeoutMillis"]) / 1000
        self.python = python
        self.start_timeout = start_timeout
        self.processes: list[subprocess.Popen[bytes]] = []
        self.urls: list[str] = []
        #: the brokers' ``pulsar://`` URLs (binary protocol), in start order
        self.binary_urls: list[str] = []
        self._logs: list[Path] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="brokerlb-e2e-")
        # the brokers' shared storage tier: the embedded directory, unless the test names one
        self.overrides.setdefault("brokerlbStorageUrl", f"sqlite:{self._tmp.name}/storage")

    @property
    def broker_ids(self) -> list[str]:
        return [u.split("://", 1)[1] for u in self.urls]

    async def start(self) -> ProcessCluster:
        try:
            for i in range(self.count):
                await self._start_one(i)
        except BaseException:
            await self.stop()
            raise
        return self

    async def add_broker(self) -> str:
        """Start one more broker process (a scale-out); returns its id once it is ready."""
        self.count += 1
        await self._start_one(len(self.processes))
        return self.broker_ids[-1]

    async def restart(self, index: int) -> str:
        """Start broker ``index`` again (after :meth:`kill`) at its web and binary ports, as a supervisor
        restarts a crashed broker in place: the same broker id, and every service URL naming it stays
        valid. The new process waits for the old session's registration to expire (up to the session
        timeout) before it registers; returns the id once it is ready."""
        proc = self.processes[index]
        if proc.poll() is None:
            raise RuntimeError(f"broker {index} is still running (pid {proc.pid})")
        web = int(self.urls[index].rsplit(":", 1)[1])
        binary = int(self.binary_urls[index].rsplit(":", 1)[1])
        await self._start_one(index, web_port=web, broker_port=binary)
        return self.broker_ids[index]

    async def _start_one(self, index: int, *, web_port: int = 0, broker_port: int = 0) -> None:
        restart = index < len(self.processes)
        web = web_port or free_port()
        # broker port 0: the broker picks one and prints it
        settings = {**self.overrides, "webServicePort": web, "brokerServicePort": broker_port}
        args = [self.python, "-m", "brokerlb.cli.main", "broker", "--log-level", "info"]
        for key, value in settings.items():
            args += ["--set", f"{key}={value}"]
        log = Path(self._tmp.name) / f"broker-{index}.log"
        if not restart:
            self._logs.append(log)
        with open(log, "ab") as out:  # a restart appends to the broker's log
            out.write(b"--- restarted ---\n" if restart else b"")
            proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        if restart:
            self.processes[index] = proc
        else:
            self.processes.append(proc)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            match = _READY.search(text, text.rfind("--- restarted ---") + 1 if restart else 0)
            if match:
                if not restart:
                    self.urls.append(match.group(1))
                    self.binary_urls.append(match.group(2) or "")
                return
            if proc.poll() is not None:
                raise RuntimeError(f"broker {index} exited with {proc.returncode}:\n{self.log_tail(index)}")
            await asyncio.sleep(0.1)
        raise TimeoutError(f"broker {index} not ready within {self.start_timeout} s:\n{self.log_tail(index)}")

    def log_path(self, index: int) -> Path:
        """Broker ``index``'s log file (deleted by :meth:`stop`)."""
        return self._logs[index]

    def log_tail(self, index: int, lines: int = 40) -> str:
        try:
            return "\n".join(self._logs[index].read_text(errors="replace").splitlines()[-lines:])
        except (OSError, IndexError):
            return ""

    async def kill(self, index: int) -> None:
        """SIGKILL: the broker neither releases its bundles nor deregisters."""
        proc = self.processes[index]
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 10)

    async def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM every broker (graceful), SIGKILL what is left after ``timeout``."""
        for proc in self.processes:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for proc in self.processes:
            remaining = max(0.1, deadline - time.monotonic())
            try:
                await asyncio.to_thread(proc.wait, remaining)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 10)
        self._tmp.cleanup()

    def returncodes(self) -> list[int | None]:
        return [p.poll() for p in self.processes]


async def zookeeper_process_cluster(
    zk: Any, brokers: int, overrides: Mapping[str, Any] | None = None, *, prefix: str = "cluster"
) -> ProcessCluster:
    """``brokers`` ``brokerlb broker`` processes on the ZooKeeper server ``zk`` (a
    :class:`~brokerlb.testing.zookeeper.ZooKeeperServer`), in a fresh chroot ``/{prefix}-<random>``
    of their own, started."""
    from brokerlb.coordination import open_store

    chroot = f"/{prefix}-{uuid.uuid4().hex[:10]}"
    root = open_store(zk.url, session_timeout=10.0)
    await root.start()
    try:
        await root.ensure_path(chroot)
    finally:
        await root.close()
    return await ProcessCluster(f"zk:{zk.hosts}{chroot}", brokers, dict(overrides or {})).start()
