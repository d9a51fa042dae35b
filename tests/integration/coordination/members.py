"""Broker members to kill and freeze: child processes on ZooKeeper, in-process members on the embedded store.

Both kinds expose the same interface, so a failure scenario is written once:
``start()``, ``events``, ``wait_event(kind, ...)``, ``kill()`` (SIGKILL / crash),
``pause()`` / ``resume()`` (SIGSTOP / SIGCONT, or the store's pause), ``stop()``
and ``cleanup()`` (never leaves a process behind).

Events are stamped with ``t`` on the member's clock: ``time.monotonic()`` for child
processes (one system-wide clock on Linux), the server's :class:`ManualClock` for
in-process members, whose ``wait_event`` moves that clock from timer to timer until
the event is there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import brokerlb
from brokerlb.clock import SYSTEM_CLOCK, Clock, ManualClock
from brokerlb.coordination import MemoryMetadataStore, MemoryServer
from brokerlb.coordination.tools.member import Member

_REPO = str(Path(brokerlb.__file__).resolve().parents[1])


class _Events:
    def __init__(self, clock: Clock = SYSTEM_CLOCK) -> None:
        self.clock = clock
        self.events: list[dict[str, Any]] = []
        self.log: list[str] = []
        self._changed = asyncio.Event()

    def record(self, event: dict[str, Any]) -> None:
        event.setdefault("t", self.clock.monotonic())
        self.events.append(event)
        self._changed.set()

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == kind]

    async def wait_event(
        self, kind: str, timeout: float = 10.0, after: float = float("-inf"), **match: Any
    ) -> dict[str, Any]:
        """The first event of ``kind`` stamped after ``after`` whose fields match."""
        matching = await self.wait_events(kind, 1, timeout, after, **match)
        return matching[0]

    async def wait_events(
        self, kind: str, count: int, timeout: float = 10.0, after: float = float("-inf"), **match: Any
    ) -> list[dict[str, Any]]:
        """The first ``count`` events of ``kind`` stamped after ``after`` whose fields match, once there are."""

        def found() -> list[dict[str, Any]] | None:
            events = [
                e
                for e in self.events
                if e["event"] == kind and e["t"] >= after and all(e.get(k) == v for k, v in match.items())
            ]
            return events[:count] if len(events) >= count else None

        what = f"{count} x {kind} {match}"
        if isinstance(self.clock, ManualClock):
            return await self.clock.run_until(found, within=timeout, message=f"{self}: {what}")
        deadline = time.monotonic() + timeout
        while (events := found()) is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"{self} did not report {what} within {timeout} s; "
                    f"events: {[e['event'] for e in self.events][-30:]}"
                )
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)
        return events


class ProcessMember(_Events):
    """``python -m brokerlb.coordination.tools.member`` as a child process."""

    def __init__(
        self, url: str, broker_id: str, session_timeout: float, namespace: str | None = None, bundles: int = 0
    ) -> None:
        super().__init__()
        self.broker_id = broker_id
        self.args = [
            sys.executable,
            "-m",
            "brokerlb.coordination.tools.member",
            "--store",
            url,
            "--broker-id",
            broker_id,
            "--session-timeout",
            str(session_timeout),
        ]
        if namespace:
            self.args += ["--namespace", namespace, "--bundles", str(bundles)]
        self.proc: asyncio.subprocess.Process | None = None
        self._readers: list[asyncio.Task[None]] = []

    def __repr__(self) -> str:
        return f"ProcessMember({self.broker_id}, pid={self.proc.pid if self.proc else None})"

    async def start(self) -> ProcessMember:
        env = dict(os.environ, PYTHONPATH=_REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = await asyncio.create_subprocess_exec(
            *self.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
        )
        self._readers = [asyncio.create_task(self._read_events()), asyncio.create_task(self._read_log())]
        await self.wait_event("ready", timeout=30)
        return self

    async def _read_events(self) -> None:
        import json

        assert self.proc is not None and self.proc.stdout is not None
        async for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.record(json.loads(line))

    async def _read_log(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        async for line in self.proc.stderr:
            self.log.append(line.decode(errors="replace").rstrip())

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, sig)

    def kill(self) -> None:
        self._signal(signal.SIGKILL)

    def pause(self) -> None:
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    async def stop(self) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.close()
        await asyncio.wait_for(self.proc.wait(), 15)

    async def cleanup(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGCONT)
                os.kill(self.proc.pid, signal.SIGKILL)
            await asyncio.wait_for(self.proc.wait(), 15)
        for task in self._readers:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, 5)


class _LogCapture(logging.Handler):
    def __init__(self, broker_id: str, sink: list[str]) -> None:
        super().__init__()
        self.broker_id, self.sink = broker_id, sink

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith(self.broker_id):
            self.sink.append(f"{record.levelname} {record.name}: {message}")


class InProcessMember(_Events):
    """A :class:`Member` on its own session of an in-process server; kill = crash, pause = the store's pause."""

    def __init__(
        self,
        server: MemoryServer,
        broker_id: str,
        session_timeout: float,
        namespace: str | None = None,
        bundles: int = 0,
    ) -> None:
        super().__init__(server.clock)
        self.broker_id = broker_id
        self.store = MemoryMetadataStore(server, session_timeout=session_timeout, operation_timeout=10)
        self.member = Member(self.store, broker_id, self.record, namespace=namespace, bundles=bundles)
        self._handler = _LogCapture(broker_id, self.log)
        logging.getLogger("brokerlb").addHandler(self._handler)

    def __repr__(self) -> str:
        return f"InProcessMember({self.broker_id})"

    async def start(self) -> InProcessMember:
        await self.store.start()
        await self.member.start()
        return self

    def kill(self) -> None:
        self.store.crash()
        self.member.abandon()

    def pause(self) -> None:
        self.store.pause()

    def resume(self) -> None:
        self.store.resume()

    async def stop(self) -> None:
        await self.member.stop()
        await self.store.close()

    async def cleanup(self) -> None:
        self.member.abandon()
        self.store.resume()
        await self.store.close()
        logging.getLogger("brokerlb").removeHandler(self._handler)
