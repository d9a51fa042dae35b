"""A fault campaign: broker processes on a real ZooKeeper, clients, a seeded schedule of faults, a verdict.

:class:`Campaign` starts a ZooKeeper server and N ``brokerlb broker`` processes (each on a fixed
loopback web port, so a restarted broker keeps its id, each recording its ownership history in a
file -- ``brokerlbOwnershipHistoryFile`` -- and reading its wall-clock offset from another --
``brokerlbClockOffsetFile``). Clients use the cluster the whole time: a lookup prober resolves
every campaign topic in turn through a random live broker (that is what brings the bundles of a
dead broker back), and, with ``clients=True``, producers and consumers of Apache Pulsar's official
client publish and consume on some of the topics, retrying as applications do
(:mod:`brokerlb.testing.chaos_traffic`). The brokers shed load every 3 s with Pulsar's
``UniformLoadShedder`` and minimums of 1, so the leader keeps moving bundles (its commands carry
its epoch, and the stale-leader check has commands to judge). Then a bounded, seeded random schedule of faults
(:data:`FAULT_KINDS`) runs one fault after another:

``kill``               SIGKILL a broker, restart it after a moment (same port, new process);
``pause-short``        SIGSTOP a broker for 20-60 % of the session timeout, then SIGCONT;
``pause-long``         SIGSTOP it for 120-180 % of the session timeout (its session expires);
``zk-restart``         SIGKILL ZooKeeper and start it again on its data (sessions survive);
``kill-leader``        SIGKILL the leader (shedding runs every few seconds: often mid-cycle);
``pause-leader``       SIGSTOP the leader past its session, then SIGCONT: a former leader resuming
                       mid-cycle, whose commands the owners must refuse;
``stale-leader-command`` send an owner an unload of one of its bundles carrying a superseded leader
                       epoch (read from the brokers' histories), as a former leader that resumed
                       mid-task does: the owner must refuse it;
``kill-in-split``      ask a bundle's owner to split it and SIGKILL the owner a few ms later;
``expire-in-transfer`` transfer a bundle to another broker and freeze its owner past its session;
``unload-split``       an admin unload and an admin split of the same bundle at the same moment;
``clock-jump``         move a broker's wall clock by up to ±10 minutes (monotonic time untouched);
``zk-restart-pause``   freeze a broker, restart ZooKeeper, keep the broker frozen until its session
                       expired after the restart (one broker's session lost across a ZooKeeper restart);
``kill-transfer-destination`` transfer a bundle and SIGKILL the destination at once, restart it.

At the end the producers stop, the consumers get a bounded time to receive what was
acknowledged, the brokers are stopped, their history files read and
:func:`~brokerlb.testing.ownership_checker.check_campaign` proves the invariants; the
:class:`CampaignResult` carries its verdict, the faults injected by kind, the seed, and the
messages acknowledged, delivered and lost, in all and per fault kind
(:func:`~brokerlb.testing.chaos_traffic.account`; ``acknowledged_lost`` is what a durable storage
tier must keep at 0). Every
process is stopped by its PID. A random run is bounded by ``time_limit`` seconds and ``faults``
faults; a scripted run (a regression scenario) injects its whole script, each fault retried a few
times, and only its warm-up is bounded by ``time_limit``. The same seed gives the same schedule
(kinds, targets, durations); what the cluster does in response is real and varies.

Used by ``brokerlb chaos``, the CI campaign test and ``benchmarks/bench_chaos.py``.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerlb.errors import InvalidInputError
from brokerlb.testing.chaos_traffic import ChaosTraffic
from brokerlb.testing.history import HistoryEvent, parse_history_line
from brokerlb.testing.ownership_checker import SECOND_NS, CampaignFacts, CampaignVerdict, check_campaign
from brokerlb.testing.zookeeper import ZooKeeperServer, free_port

__all__ = ["Campaign", "CampaignConfig", "CampaignResult", "FAULT_KINDS", "every_kind_schedule"]

logger = logging.getLogger(__name__)

FAULT_KINDS = (
    "kill",
    "pause-short",
    "pause-long",
    "zk-restart",
    "kill-leader",
    "pause-leader",
    "stale-leader-command",
    "kill-in-split",
    "expire-in-transfer",
    "unload-split",
    "clock-jump",
    "zk-restart-pause",
    "kill-transfer-destination",
)

_READY = re.compile(r"ready at (http://\S+)(?: (pulsar://\S+))?")
TENANT = "chaos"
#: seconds the end of a campaign waits for every topic to be resolved again (a guard against hanging)
HEAL_TIMEOUT = 120.0
#: seconds a scripted fault is tried until it can be injected (a guard against hanging)
SCRIPT_FAULT_GUARD = 180.0
#: Pulsar's key for how long a bundle may stay in flight before the ownership watchdog resolves it
IN_FLIGHT_TIMEOUT_KEY = "loadBalancerInFlightServiceUnitStateWaitingTimeInMillis"
NAMESPACE = "chaos/faults"


def every_kind_schedule(seed: int, faults: int, kinds: tuple[str, ...]) -> list[str]:
    """The seed's script of ``faults`` fault kinds in which every one of ``kinds`` occurs: a leader change
    first when ``kill-leader`` is among them (a stale leader command needs a superseded leader), then every
    kind once and random draws, shuffled. Run as a script (:meth:`Campaign.run`), each fault is retried
    until it can be injected, so which kinds happen never depends on timing -- a random run draws a kind
    and skips it when it is not injectable at that instant (a slow run once saw only 9 of 13 kinds)."""
    kinds = tuple(dict.fromkeys(kinds))
    first = ["kill-leader"] if "kill-leader" in kinds else []
    if faults < len(kinds) + len(first):
        raise InvalidInputError(
            f"{faults} faults cannot hold every one of the {len(kinds)} kinds"
            + (" after the first leader change" if first else "")
            + f": at least {len(kinds) + len(first)} are needed"
        )
    rng = random.Random(seed)
    rest = list(kinds) + [rng.choice(kinds) for _ in range(faults - len(first) - len(kinds))]
    rng.shuffle(rest)
    return [*first, *rest]


@dataclass
class CampaignConfig:
    brokers: int = 3
    faults: int = 20
    seed: int = 1
    #: bound on a random run (start-up included), seconds; a scripted run's faults are not cut short
    time_limit: float = 170.0
    session_timeout_ms: int = 3000
    bundles: int = 8
    topics: int = 24
    #: Official-client producers and consumers (on the first ``client_topics`` topics)
    clients: bool = True
    client_topics: int = 4
    produce_rate: float = 20.0
    #: pause between two faults, seconds (uniform)
    gap: tuple[float, float] = (0.3, 1.5)
    kinds: tuple[str, ...] = FAULT_KINDS
    overrides: Mapping[str, Any] = field(default_factory=dict)
    python: str = sys.executable
    #: keep the brokers' logs and history files (the path is in the result) instead of deleting them
    keep_workdir: bool = False


@dataclass
class CampaignResult:
    seed: int
    verdict: CampaignVerdict
    faults: collections.Counter[str]
    duration_s: float
    history_events: int
    boundaries_seen: int
    errors: list[str] = field(default_factory=list)
    workdir: str = ""
    #: the clients' account (:meth:`ChaosTraffic.summary`); ``None`` without clients
    traffic: dict[str, Any] | None = None

    @property
    def acknowledged_lost(self) -> int:
        """Messages acknowledged to a producer that no durable subscription received."""
        return int(self.traffic["acknowledged_lost"]) if self.traffic is not None else 0

    def summary(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "faults": sum(self.faults.values()),
            "faults_by_kind": dict(sorted(self.faults.items())),
            "duration_s": round(self.duration_s, 1),
            "history_events": self.history_events,
            "split_boundaries_seen": self.boundaries_seen,
            **self.verdict.summary(),
            "acknowledged_lost": self.acknowledged_lost,
            **({k: v for k, v in self.traffic.items() if k != "acknowledged_lost"} if self.traffic else {}),
            "errors": self.errors[:10],
        }


class _Slot:
    """One broker position: fixed web port, history and clock files; its processes over time."""

    def __init__(self, index: int, workdir: Path) -> None:
        self.index = index
        self.web_port = free_port()
        self.history = workdir / f"history-{index}.jsonl"
        self.clock_file = workdir / f"clock-{index}.txt"
        self.clock_file.write_text("0")
        self.log = workdir / f"broker-{index}.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.web_port}"
        self.frozen_since: int | None = None
        #: started and announced ready (a process still starting is not a fault target)
        self.ready = False
        #: a restart is in progress
        self.starting = False

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None and self.ready

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


class Campaign:
    """One fault campaign (module docstring)."""

    def __init__(self, config: CampaignConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.workdir = Path(tempfile.mkdtemp(prefix="brokerlb-chaos-"))
        self.zk = ZooKeeperServer(max_session_timeout_ms=60_000)
        self.slots = [_Slot(i, self.workdir) for i in range(config.brokers)]
        self.deaths: dict[int, int] = {}
        self.frozen: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
        #: [(killed, answering again)] spans of ZooKeeper's restarts
        self.store_outages: list[tuple[int, int]] = []
        self.faults: collections.Counter[str] = collections.Counter()
        #: (monotonic ns, kind) of every fault injected, in order; when the schedule ended
        self.fault_log: list[tuple[int, str]] = []
        self.schedule_end_ns: int | None = None
        self.errors: list[str] = []
        self.topics = [f"persistent://{NAMESPACE}/topic-{i}" for i in range(config.topics)]
        self.boundaries_seen: set[int] = set()
        #: the namespace's interior boundaries as last read
        self.final_boundaries: list[int] = []
        self.session_timeout = config.session_timeout_ms / 1000
        self._background: set[asyncio.Task[Any]] = set()
        self._stopping = False
        self._admin: Any = None
        #: topics the prober resolved at least once (the warm-up waits for all of them)
        self._resolved: set[str] = set()

    # ------------------------------------------------------------------ processes
    def _settings(self, slot: _Slot) -> dict[str, Any]:
        return {
            "clusterName": "chaos",
            "metadataStoreSessionTimeoutMillis": self.config.session_timeout_ms,
            "loadBalancerReportUpdateMinIntervalMillis": 200,
            "brokerlbHostUsage": "traffic",
            "loadBalancerSheddingIntervalMinutes": 0.05,
            "loadBalancerSheddingGracePeriodMinutes": 0,
            "loadBalancerNamespaceMaximumBundles": 64,
            # the leader keeps moving bundles (module docstring): any traffic difference is shed
            "loadBalancerLoadSheddingStrategy": "UniformLoadShedder",
            "minUnloadMessage": 1,
            "minUnloadMessageThroughput": 1,
            # the brokers' shared storage tier: the embedded SQLite directory (override for PostgreSQL)
            "brokerlbStorageUrl": f"sqlite:{self.workdir / 'storage'}",
            **self.config.overrides,
            "metadataStoreUrl": self.zk.url,
            "advertisedAddress": "127.0.0.1",
            "bindAddress": "127.0.0.1",
            "webServicePort": slot.web_port,
            "brokerServicePort": 0,
            "brokerlbOwnershipHistoryFile": str(slot.history),
            "brokerlbClockOffsetFile": str(slot.clock_file),
        }

    async def _start_broker(self, slot: _Slot, timeout: float = 60.0) -> None:
        args = [self.config.python, "-m", "brokerlb.cli.main", "broker", "--log-level", "info"]
        for key, value in self._settings(slot).items():
            args += ["--set", f"{key}={value}"]
        slot.ready = False
        offset = slot.log.stat().st_size if slot.log.exists() else 0
        with open(slot.log, "ab") as out:
            slot.process = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(slot.log, "rb") as f:
                f.seek(offset)
                if _READY.search(f.read().decode(errors="replace")):
                    slot.ready = True
                    self._log_fault("ready", slot=slot.index, pid=slot.process.pid)
                    return
            if slot.process.poll() is not None:
                self._record_exit(slot)
                raise RuntimeError(f"broker {slot.index} exited with {slot.process.returncode}")
            await asyncio.sleep(0.05)
        raise TimeoutError(f"broker {slot.index} not ready within {timeout} s")

    async def _kill(self, slot: _Slot) -> None:
        proc = slot.process
        if proc is None or proc.poll() is not None:
            return
        now = time.monotonic_ns()
        if slot.frozen_since is not None:  # frozen until it dies: it never runs again
            self.frozen[proc.pid].append((slot.frozen_since, now))
            slot.frozen_since = None
        os.kill(proc.pid, signal.SIGKILL)
        self.deaths[proc.pid] = now
        self._log_fault("SIGKILL", slot=slot.index, pid=proc.pid)
        await asyncio.to_thread(proc.wait, 10)

    def _record_exit(self, slot: _Slot) -> None:
        """A process that ended on its own (a broker that could not start while ZooKeeper was down
        exits with 1): it serves nothing from now on (noticed within the reaper's period)."""
        proc = slot.process
        if proc is not None and proc.poll() is not None and proc.pid not in self.deaths:
            self.deaths[proc.pid] = time.monotonic_ns()
            slot.ready = False
            self._log_fault("exited", slot=slot.index, pid=proc.pid, code=proc.returncode)

    async def _reaper(self) -> None:
        """Notice brokers that exited on their own; record the death and start them again."""
        while not self._stopping:
            for slot in self.slots:
                proc = slot.process
                if proc is not None and proc.poll() is not None and proc.pid not in self.deaths:
                    self._record_exit(slot)
                    if not slot.starting:
                        self._spawn(self._restart_later(slot, 0.2))
            await asyncio.sleep(0.05)

    def _freeze(self, slot: _Slot) -> bool:
        if not slot.alive or slot.frozen_since is not None:
            return False
        assert slot.process is not None
        slot.frozen_since = time.monotonic_ns()
        os.kill(slot.process.pid, signal.SIGSTOP)
        self._log_fault("SIGSTOP", slot=slot.index, pid=slot.process.pid)
        return True

    def _thaw_record(self, slot: _Slot) -> None:
        assert slot.process is not None and slot.frozen_since is not None
        self.frozen[slot.process.pid].append((slot.frozen_since, time.monotonic_ns()))
        slot.frozen_since = None

    def _thaw(self, slot: _Slot) -> None:
        if slot.frozen_since is None or not slot.alive:
            return
        assert slot.process is not None
        os.kill(slot.process.pid, signal.SIGCONT)
        self._log_fault("SIGCONT", slot=slot.index, pid=slot.process.pid)
        self._thaw_record(slot)

    async def _restart_later(self, slot: _Slot, delay: float) -> None:
        """Start the slot's broker again after ``delay``; a start that fails (ZooKeeper down at that
        moment) is tried again, up to 5 times."""
        if slot.starting:
            return
        slot.starting = True
        try:
            await asyncio.sleep(delay)
            for attempt in range(5):
                if self._stopping:
                    return
                try:
                    await self._start_broker(slot)
                    return
                except (RuntimeError, TimeoutError) as exc:
                    self.errors.append(f"restart of broker {slot.index} (attempt {attempt + 1}): {exc}")
                    if isinstance(exc, TimeoutError):
                        return  # running but never ready: it stays as it is
                await asyncio.sleep(1.0)
        finally:
            slot.starting = False

    async def _thaw_later(self, slot: _Slot, delay: float) -> None:
        await asyncio.sleep(delay)
        self._thaw(slot)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ------------------------------------------------------------------ cluster views
    def _live(self) -> list[_Slot]:
        return [s for s in self.slots if s.alive and s.frozen_since is None]

    async def _get(self, path: str) -> Any:
        for slot in self.rng.sample(self._live(), k=len(self._live())):
            try:
                answer = await self._admin.get(slot.url + path)
            except Exception:
                continue
            if answer.status_code == 200:
                return answer.json()
        return None

    async def _leader(self) -> _Slot | None:
        data = await self._get("/admin/v2/brokers/leaderBroker")
        url = (data or {}).get("serviceUrl", "") if isinstance(data, dict) else ""
        return next((s for s in self.slots if url.rstrip("/") == s.url), None)

    async def _bundles(self) -> list[str]:
        data = await self._get(f"/admin/v2/namespaces/{NAMESPACE}/bundles")
        if not isinstance(data, dict):
            return []
        bounds = [int(b, 16) for b in data.get("boundaries", [])]
        self.boundaries_seen.update(bounds[1:-1])
        self.final_boundaries = bounds[1:-1]
        return [f"0x{a:08x}_0x{b:08x}" for a, b in zip(bounds, bounds[1:], strict=False)]

    async def _owner_of(self, bundle_range: str) -> _Slot | None:
        """The slot owning a bundle (a lookup of a topic in it tells; ``None`` if unknown)."""
        for topic in self.topics:
            if _in_range(topic, bundle_range):
                data = await self._get(f"/lookup/v2/topic/persistent/{NAMESPACE}/{topic.rsplit('/', 1)[1]}")
                url = (data or {}).get("httpUrl", "") if isinstance(data, dict) else ""
                return next((s for s in self.slots if url.rstrip("/") == s.url), None)
        return None

    async def _put(self, url: str, **kwargs: Any) -> int:
        try:
            answer = await self._admin.put(url, **kwargs)
            return int(answer.status_code)
        except Exception:
            return -1

    # ------------------------------------------------------------------ clients
    async def _prober(self) -> None:
        """Look every topic up, round and round, through a random live broker."""
        while not self._stopping:
            for topic in self.topics:
                live = self._live()
                if self._stopping:
                    return
                if not live:
                    await asyncio.sleep(0.05)
                    continue
                slot = self.rng.choice(live)
                with contextlib.suppress(Exception):
                    answer = await self._admin.get(
                        f"{slot.url}/lookup/v2/topic/persistent/{NAMESPACE}/{topic.rsplit('/', 1)[1]}"
                    )
                    if answer.status_code == 200:
                        self._resolved.add(topic)
            await asyncio.sleep(0.05)

    def _start_clients(self) -> ChaosTraffic:
        urls = ",".join(s.url.removeprefix("http://") for s in self.slots)
        quiet = logging.getLogger("brokerlb.testing.chaos.pulsar-client")
        quiet.setLevel(logging.CRITICAL)  # every fault makes the client log reconnection errors
        return ChaosTraffic(
            f"http://{urls}", self.topics[: self.config.client_topics], self.config.produce_rate, quiet
        ).start()

    # ------------------------------------------------------------------ faults
    async def _fault(self, kind: str) -> bool:
        """Inject one fault of ``kind``; ``False`` when it could not be (no target now)."""
        live = self._live()
        rng = self.rng
        timeout = self.session_timeout
        if kind in ("kill", "pause-short", "pause-long", "clock-jump") and not live:
            return False
        if kind == "kill":
            if len(live) < 2:
                return False
            slot = rng.choice(live)
            await self._kill(slot)
            self._spawn(self._restart_later(slot, rng.uniform(0.2, 2.0)))
        elif kind == "pause-short":
            slot = rng.choice(live)
            self._freeze(slot)
            self._spawn(self._thaw_later(slot, timeout * rng.uniform(0.2, 0.6)))
        elif kind == "pause-long":
            if len(live) < 2:
                return False
            slot = rng.choice(live)
            self._freeze(slot)
            self._spawn(self._thaw_later(slot, timeout * rng.uniform(1.2, 1.8)))
        elif kind == "zk-restart":
            await self._restart_zookeeper(rng.uniform(0.1, timeout * 0.5))
        elif kind == "kill-leader":
            leader = await self._leader()
            if leader is None or not leader.alive or len(live) < 2:
                return False
            await asyncio.sleep(rng.uniform(0, 1.0))
            await self._kill(leader)
            self._spawn(self._restart_later(leader, rng.uniform(0.2, 2.0)))
        elif kind == "pause-leader":
            leader = await self._leader()
            if leader is None or not leader.alive or len(live) < 2:
                return False
            await asyncio.sleep(rng.uniform(0, 1.0))
            if not self._freeze(leader):
                return False
            self._spawn(self._thaw_later(leader, timeout * rng.uniform(1.3, 2.0)))
        elif kind == "stale-leader-command":
            epochs = sorted(self._leader_epochs())
            bundles = await self._bundles()
            if len(epochs) < 2 or not bundles:
                return False  # no leader was superseded yet
            target = rng.choice(bundles)
            owner = await self._owner_of(target)
            if owner is None or not owner.alive:
                return False
            stale = rng.choice(epochs[:-1])
            status = await self._put(
                f"{owner.url}/admin/v2/namespaces/{NAMESPACE}/{target}/unload",
                params={"leaderEpoch": str(stale)},
            )
            self._log_fault(kind, slot=owner.index, bundle=target, epoch=stale, status=status)
            if status != 409:  # not refused by an owner (none now, or it moved): not injected
                return False
        elif kind == "kill-in-split":
            bundles = await self._bundles()
            if not bundles or len(bundles) >= 48:
                return False
            target = rng.choice(bundles)
            owner = await self._owner_of(target)
            if owner is None or not owner.alive or len(live) < 2:
                return False
            split = asyncio.ensure_future(
                self._put(f"{owner.url}/admin/v2/namespaces/{NAMESPACE}/{target}/split?unload=false")
            )
            await asyncio.sleep(rng.uniform(0, 0.05))
            await self._kill(owner)
            await split
            self._spawn(self._restart_later(owner, rng.uniform(0.2, 2.0)))
        elif kind == "expire-in-transfer":
            bundles = await self._bundles()
            if not bundles:
                return False
            target = rng.choice(bundles)
            owner = await self._owner_of(target)
            others = [s for s in live if s is not owner]
            if owner is None or not owner.alive or not others:
                return False
            destination = rng.choice(others).url.removeprefix("http://")
            unload = asyncio.ensure_future(
                self._put(
                    f"{owner.url}/admin/v2/namespaces/{NAMESPACE}/{target}/unload",
                    params={"destinationBroker": destination},
                )
            )
            await asyncio.sleep(rng.uniform(0, 0.03))
            if self._freeze(owner):
                self._spawn(self._thaw_later(owner, timeout * rng.uniform(1.2, 1.6)))
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(unload), timeout=0.1)
            self._spawn(unload)
        elif kind == "unload-split":
            bundles = await self._bundles()
            if not bundles or not live:
                return False
            target = rng.choice(bundles)
            base = f"{rng.choice(live).url}/admin/v2/namespaces/{NAMESPACE}/{target}"
            calls = [self._put(f"{base}/unload")]
            if len(bundles) < 48:
                calls.append(
                    self._put(f"{rng.choice(live).url}/admin/v2/namespaces/{NAMESPACE}/{target}/split")
                )
            await asyncio.gather(*calls)
        elif kind == "zk-restart-pause":
            if len(live) < 2:
                return False
            slot = rng.choice(live)
            self._freeze(slot)
            await self._restart_zookeeper(rng.uniform(0.1, timeout * 0.5))
            self._spawn(self._thaw_later(slot, timeout * rng.uniform(1.3, 1.8)))
        elif kind == "kill-transfer-destination":
            bundles = await self._bundles()
            if not bundles or len(live) < 2:
                return False
            target = rng.choice(bundles)
            owner = await self._owner_of(target)
            others = [s for s in live if s is not owner]
            if owner is None or not owner.alive or not others:
                return False
            receiver = rng.choice(others)
            unload = asyncio.ensure_future(
                self._put(
                    f"{owner.url}/admin/v2/namespaces/{NAMESPACE}/{target}/unload",
                    params={"destinationBroker": receiver.url.removeprefix("http://")},
                )
            )
            await asyncio.sleep(rng.uniform(0, 0.03))
            await self._kill(receiver)
            self._spawn(unload)
            self._spawn(self._restart_later(receiver, rng.uniform(0.2, 2.0)))
        elif kind == "clock-jump":
            slot = rng.choice(live)
            offset = rng.choice((-1, 1)) * rng.randint(30_000, 600_000)
            slot.clock_file.write_text(str(offset))
            assert slot.process is not None
            os.kill(slot.process.pid, signal.SIGUSR1)
            self._log_fault("SIGUSR1", slot=slot.index, pid=slot.process.pid, offset_ms=offset)
        else:
            raise ValueError(f"unknown fault kind {kind!r}")
        self.faults[kind] += 1
        self._log_fault(kind)
        await self._bundles()
        return True

    def _leader_epochs(self) -> set[int]:
        """The leader epochs the brokers' histories have recorded so far."""
        epochs: set[int] = set()
        for slot in self.slots:
            if slot.history.exists():
                for line in slot.history.read_text(errors="replace").splitlines():
                    event = parse_history_line(line)
                    if event is not None and event.kind == "lead-start" and event.epoch is not None:
                        epochs.add(event.epoch)
        return epochs

    async def _restart_zookeeper(self, down_for: float) -> None:
        """SIGKILL ZooKeeper, wait ``down_for`` s, start it on its data; the outage is recorded."""
        down = time.monotonic_ns()
        try:
            await asyncio.to_thread(self.zk.crash)
            await asyncio.sleep(down_for)
            await asyncio.to_thread(self.zk.start)
        finally:
            self.store_outages.append((down, time.monotonic_ns()))
            self._log_fault("zk-outage", down=down, up=self.store_outages[-1][1])

    def _log_fault(self, kind: str, **details: Any) -> None:
        import json

        line = {"at": time.monotonic_ns(), "kind": kind, **details}
        with open(self.workdir / "faults.jsonl", "a") as out:
            out.write(json.dumps(line) + "\n")

    # ------------------------------------------------------------------ the run
    async def run(self, script: list[str] | None = None) -> CampaignResult:
        """Run the campaign: the seeded random schedule, or ``script``'s fault kinds in order (a
        regression scenario: each fault is retried until it could be injected, a few times)."""
        import httpx

        cfg = self.config
        began = time.monotonic()
        deadline = began + cfg.time_limit
        traffic: ChaosTraffic | None = None
        account: dict[str, Any] | None = None
        self._admin = httpx.AsyncClient(timeout=3.0, follow_redirects=True)
        try:
            await asyncio.to_thread(self.zk.start)
            for slot in self.slots:
                await self._start_broker(slot)
            await self._setup_namespace()
            prober = asyncio.ensure_future(self._prober())
            reaper = asyncio.ensure_future(self._reaper())
            await self._warm_up(deadline)
            if cfg.clients:
                traffic = await asyncio.to_thread(self._start_clients)
            if script is not None:
                # a script is the scenario: it runs whole, however slow the machine, and the drain
                # after it keeps its own margin
                await self._run_script(script)
                deadline = max(deadline, time.monotonic() + self._drain_margin())
            else:
                await self._run_random(deadline)
            self.schedule_end_ns = time.monotonic_ns()
            await self._drain(deadline)
            if traffic is not None:
                account = await self._settle(traffic)
            self._stopping = True
            prober.cancel()
            reaper.cancel()
            await self._bundles()
        finally:
            self._stopping = True
            end_ns = time.monotonic_ns()
            await self._stop_all(traffic)
        result = self._verdict(end_ns, time.monotonic() - began)
        result.traffic = account
        if not cfg.keep_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return result

    async def _warm_up(self, deadline: float) -> None:
        """Wait until every topic was resolved once (every bundle a topic uses has an owner)."""
        limit = min(deadline, time.monotonic() + 60)
        while len(self._resolved) < len(self.topics) and time.monotonic() < limit:
            await asyncio.sleep(0.05)

    def _drain_margin(self) -> float:
        # the drain's time: the last pause ends, the last restart completes, sessions settle
        return 3 * self.session_timeout + 15

    def _time_left(self, deadline: float) -> bool:
        return time.monotonic() < deadline - self._drain_margin()

    async def _inject(self, kind: str) -> bool:
        began = time.monotonic_ns()
        try:
            injected = await self._fault(kind)
        except Exception as exc:  # a fault's own trouble is recorded, never the end of the run
            self.errors.append(f"{kind}: {exc!r}")
            return False
        if injected:
            self.fault_log.append((began, kind))
        return injected

    async def _run_random(self, deadline: float) -> None:
        cfg = self.config
        attempts = 0
        while sum(self.faults.values()) < cfg.faults and self._time_left(deadline):
            attempts += 1
            if attempts > cfg.faults * 20:
                break
            await self._inject(self.rng.choice(list(cfg.kinds)))
            await asyncio.sleep(self.rng.uniform(*cfg.gap))

    async def _run_script(self, script: list[str]) -> None:
        """Inject every fault of ``script`` in order; one that cannot be injected now (its target is
        still restarting, say) is tried again until it is, however slow the machine (a guard of
        :data:`SCRIPT_FAULT_GUARD` seconds only keeps a broken cluster from hanging the run)."""
        for kind in script:
            guard = time.monotonic() + SCRIPT_FAULT_GUARD
            while not await self._inject(kind):
                if time.monotonic() > guard:
                    self.errors.append(f"{kind}: not injectable within {SCRIPT_FAULT_GUARD:.0f} s")
                    break
                await asyncio.sleep(0.2)
            await asyncio.sleep(self.rng.uniform(*self.config.gap))

    async def _setup_namespace(self) -> None:
        url = self.slots[0].url
        await self._put(
            f"{url}/admin/v2/tenants/{TENANT}", json={"allowedClusters": ["chaos"], "adminRoles": []}
        )
        status = await self._put(
            f"{url}/admin/v2/namespaces/{NAMESPACE}", json={"bundles": {"numBundles": self.config.bundles}}
        )
        if status not in (204, 409):
            raise RuntimeError(f"could not create {NAMESPACE}: HTTP {status}")
        await self._bundles()

    async def _drain(self, deadline: float) -> None:
        """Let pending thaws and restarts finish, let the sessions of the frozen and killed brokers settle
        (a session timeout and 2 s), then wait until the prober has resolved every topic again."""
        pending = list(self._background)
        if pending:
            await asyncio.wait(pending, timeout=max(1.0, deadline - time.monotonic() - 10))
        for slot in self.slots:
            self._thaw(slot)
        for slot in self.slots:
            if (slot.process is None or slot.process.poll() is not None) and time.monotonic() < deadline - 10:
                with contextlib.suppress(RuntimeError, TimeoutError):
                    await self._start_broker(slot)
        await asyncio.sleep(min(self.session_timeout + 2.0, max(0.0, deadline - time.monotonic() - 5)))
        # healing is waited for on its own bound (it only guards against hanging), not on the time
        # limit of the faults: a topic not served at the end must mean the cluster did not heal
        self._resolved = set()
        limit = time.monotonic() + HEAL_TIMEOUT
        while len(self._resolved) < len(self.topics) and time.monotonic() < limit:
            await asyncio.sleep(0.05)

    async def _settle(self, traffic: ChaosTraffic) -> dict[str, Any]:
        """Stop producing, give the consumers a bounded time to receive what was acknowledged, and
        account for every message (the brokers still run)."""
        await asyncio.to_thread(traffic.stop_producing)
        await asyncio.to_thread(traffic.wait_delivered)
        return traffic.summary(self.fault_log, self.schedule_end_ns)

    async def _stop_all(self, traffic: ChaosTraffic | None) -> None:
        for task in list(self._background):
            task.cancel()
        if traffic is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.to_thread(traffic.close), 30)
        for slot in self.slots:
            self._thaw(slot)
        for slot in self.slots:
            proc = slot.process
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for slot in self.slots:
            proc = slot.process
            if proc is None:
                continue
            try:
                await asyncio.to_thread(proc.wait, 15)
            except subprocess.TimeoutExpired:
                proc.kill()
                await asyncio.to_thread(proc.wait, 10)
            self.deaths.setdefault(proc.pid, time.monotonic_ns())
        if self._admin is not None:
            await self._admin.aclose()
        await asyncio.to_thread(self.zk.stop)

    def _watchdog_bound_ns(self) -> int:
        """How long an in-flight state may last: the brokers' in-flight timeout plus one watchdog tick
        (the tick that finds it past the timeout comes up to one interval later)."""
        from brokerlb.broker.ownership.ownership_channel import watchdog_interval

        timeout_ms = int(self.config.overrides.get(IN_FLIGHT_TIMEOUT_KEY, 30_000))
        return (timeout_ms + round(watchdog_interval(timeout_ms) * 1000)) * 1_000_000

    def _verdict(self, end_ns: int, duration: float) -> CampaignResult:
        events: list[HistoryEvent] = []
        for slot in self.slots:
            if slot.history.exists():
                for line in slot.history.read_text(errors="replace").splitlines():
                    event = parse_history_line(line)
                    if event is not None:
                        events.append(event)
        # the graceful stops at the end come after end_ns: the spans end there, nothing to re-own
        facts = CampaignFacts(
            events=events,
            end_ns=end_ns,
            deaths=dict(self.deaths),
            frozen=dict(self.frozen),
            store_outages=list(self.store_outages),
            topics=set(self.topics),
            session_timeout_ns=int(self.session_timeout * SECOND_NS),
            watchdog_ns=self._watchdog_bound_ns(),
            split_boundaries={NAMESPACE: set(self.boundaries_seen)},
            final_boundaries={NAMESPACE: list(self.final_boundaries)},
        )
        verdict = check_campaign(facts)
        return CampaignResult(
            self.config.seed,
            verdict,
            self.faults,
            duration,
            len(events),
            len(self.boundaries_seen),
            self.errors,
            str(self.workdir),
        )


def _in_range(topic: str, bundle_range: str) -> bool:
    from brokerlb.ring.hashing import topic_hash

    lower, upper = (int(x, 16) for x in bundle_range.split("_"))
    h = topic_hash(topic)
    return lower <= h < upper or (upper == 0xFFFFFFFF and h == upper)
