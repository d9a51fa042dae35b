"""``brokerlb standalone`` as a separate process: N brokers on free loopback ports, stopped by PID.

The data-path end-to-end scenario and benchmark run their load generators in the test
process and the brokers here, so the two do not share one CPU (and one event loop).

    async with StandaloneProcess(3, {"loadBalancerSheddingIntervalMinutes": 0.05}) as cluster:
        cluster.urls        # the brokers' web URLs, in start order
        cluster.binary_urls # their pulsar:// URLs
        cluster.broker_ids  # host:port ids

``stop()`` sends SIGTERM (graceful: bundles released, brokers deregistered) and SIGKILL
after a timeout; the log is kept in a temporary directory until then (``log_tail()``).
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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["StandaloneProcess"]

_READY = re.compile(r"broker (\S+) ready at (http://\S+)(?: (pulsar://\S+))?")
_STARTED = re.compile(r"standalone cluster '.*' of (\d+) brokers")


class StandaloneProcess:
    def __init__(
        self,
        brokers: int = 3,
        overrides: Mapping[str, Any] | None = None,
        *,
        python: str = sys.executable,
        start_timeout: float = 60.0,
        log_level: str = "warning",
        data_dir: str | Path | None = None,
    ) -> None:
        self.count = brokers
        self.overrides = dict(overrides or {})
        self.python = python
        self.start_timeout = start_timeout
        self.log_level = log_level
        self.process: subprocess.Popen[bytes] | None = None
        self.urls: list[str] = []
        #: the brokers' ``pulsar://`` URLs (binary protocol), in start order
        self.binary_urls: list[str] = []
        self.broker_ids: list[str] = []
        self._tmp = tempfile.TemporaryDirectory(prefix="brokerlb-standalone-")
        self.log = Path(self._tmp.name) / "standalone.log"
        #: metadata and topics (``--data-dir``): kept across a stop and start of this object
        self.data_dir = Path(data_dir) if data_dir is not None else Path(self._tmp.name) / "data"

    async def start(self) -> StandaloneProcess:
        args = [
            self.python,
            "-m",
            "brokerlb.cli.main",
            "standalone",
            "--brokers",
            str(self.count),
            "--web-port",
            "0",
            "--broker-port",
            "0",
            "--log-level",
            self.log_level,
            "--data-dir",
            str(self.data_dir),
        ]
        for key, value in self.overrides.items():
            args += ["--set", f"{key}={value}"]
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
            )
        deadline = time.monotonic() + self.start_timeout
        try:
            while time.monotonic() < deadline:
                text = self.log.read_text(errors="replace")
                if _STARTED.search(text):
                    found = _READY.findall(text)
                    self.broker_ids = [b for b, _, _ in found]
                    self.urls = [u for _, u, _ in found]
                    self.binary_urls = [p for _, _, p in found]
                    return self
                if self.process.poll() is not None:
                    raise RuntimeError(
                        f"brokerlb standalone exited with {self.process.returncode}:\n{self.log_tail()}"
                    )
                await asyncio.sleep(0.1)
            raise TimeoutError(
                f"brokerlb standalone not ready within {self.start_timeout} s:\n{self.log_tail()}"
            )
        except BaseException:
            await self.stop()
            raise

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def stop(self, timeout: float = 20.0) -> None:
        proc = self.process
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.to_thread(proc.wait, timeout)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                await asyncio.to_thread(proc.wait, 10)
        self._tmp.cleanup()

    async def kill(self) -> None:
        """SIGKILL the process by PID (a crash: nothing is flushed or released)."""
        proc = self.process
        if proc is not None and proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            await asyncio.to_thread(proc.wait, 10)

    async def __aenter__(self) -> StandaloneProcess:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
