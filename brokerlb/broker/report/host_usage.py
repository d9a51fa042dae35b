"""Host usage of a broker: Pulsar's ``LinuxBrokerHostUsageImpl`` on psutil and ``/sys``.

Each :meth:`HostUsageCollector.sample` returns a
:class:`~brokerlb.model.SystemResourceUsage` in Pulsar's units:

==============  ===========================================  ==========================================
resource        usage                                        limit
==============  ===========================================  ==========================================
cpu             percent summed over cores since the last     ``100 ×`` CPUs: the cgroup quota
                sample (cgroup CPU time when a cgroup        (``quota / period``, v1 ``cpu.cfs_*`` or
                is found, else the host's busy share)        v2 ``cpu.max``) if set, else the CPUs this
                                                             process may run on (``sched_getaffinity``)
memory          this process's resident memory, MB           the cgroup memory limit if set, else the
                                                             host's physical memory, MB
directMemory    unknown (-1/-1): Python has no JVM direct memory; its Pulsar weight defaults to 0
bandwidthIn/Out Kbit/s received / sent on the usable         sum of the NICs' ``/sys/class/net/*/speed``
                physical NICs since the last sample          (Mbit/s × 1000), or
                                                             ``loadBalancerOverrideBrokerNicSpeedGbps``
                                                             × 10⁶
==============  ===========================================  ==========================================

NICs are chosen as Pulsar's ``LinuxInfoUtils.getUsablePhysicalNICs``: not under
``/virtual/`` (so not ``lo``, bridges, veth), ``type`` 1 (Ethernet), ``operstate``
up, unknown or dormant. A NIC whose speed cannot be read (``-1`` on virtio, an error)
counts 0 towards the limit, as in Pulsar; with no usable NIC and no override the
bandwidth limit is 0, so its percentage is 0 (Pulsar: "nic speed unknown").

Cgroup detection (Pulsar issues #7475, #16601, #17815 -- containers read the host's
numbers): cgroup v2 when ``{root}/cgroup.controllers`` exists, else v1 when
``{root}/cpu/cpu.cfs_quota_us`` or ``{root}/cpuacct/cpuacct.usage`` exists. The
process's own cgroup (``/proc/self/cgroup``) is used when that directory is visible,
else the mount root (inside a container the two are the same). ``root``, ``proc`` and
``sys_net`` are parameters, so tests run on fake trees.

Percentages beyond 100 are kept (Pulsar #17815: CPU can exceed the limit briefly).
The collector never raises while sampling: an unreadable file gives "unknown" for
that resource and a warning once.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from brokerlb.model import ResourceUsage, SystemResourceUsage

__all__ = [
    "HostUsageCollector",
    "CgroupInfo",
    "detect_cgroup",
    "usable_physical_nics",
    "nic_speed_limit_kbps",
]

logger = logging.getLogger(__name__)

_ARPHRD_ETHER = 1
_USABLE_OPERSTATES = frozenset({"up", "unknown", "dormant"})
_MB = 1024 * 1024
#: cgroup v1 writes a "no limit" memory value near 2^63.
_NO_MEMORY_LIMIT = 1 << 62


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return None if text is None else int(text)
    except ValueError:
        return None


# --------------------------------------------------------------------------- cgroups


@dataclass(frozen=True)
class CgroupInfo:
    """Where this process's cgroup CPU and memory accounting lives."""

    version: int  # 1 or 2
    cpu_dir: Path
    cpuacct_dir: Path
    memory_dir: Path

    def cpu_quota_cores(self) -> float | None:
        """CPUs granted by the quota (``quota / period``), ``None`` when unlimited or unreadable."""
        if self.version == 2:
            text = _read(self.cpu_dir / "cpu.max")
            if not text:
                return None
            parts = text.split()
            if parts[0] == "max" or len(parts) < 2:
                return None
            try:
                quota, period = int(parts[0]), int(parts[1])
            except ValueError:
                return None
        else:
            v1_quota = _read_int(self.cpu_dir / "cpu.cfs_quota_us")
            v1_period = _read_int(self.cpu_dir / "cpu.cfs_period_us")
            if v1_quota is None or v1_period is None:
                return None
            quota, period = v1_quota, v1_period
        if quota <= 0 or period <= 0:
            return None
        return quota / period

    def cpu_usage_ns(self) -> int | None:
        """CPU time used by the cgroup so far, in nanoseconds."""
        if self.version == 2:
            text = _read(self.cpu_dir / "cpu.stat")
            for line in (text or "").splitlines():
                name, _, value = line.partition(" ")
                if name == "usage_usec":
                    try:
                        return int(value) * 1000
                    except ValueError:
                        return None
            return None
        return _read_int(self.cpuacct_dir / "cpuacct.usage")

    def memory_limit_bytes(self) -> int | None:
        if self.version == 2:
            text = _read(self.memory_dir / "memory.max")
            if text is None or text == "max":
                return None
            try:
                value = int(text)
            except ValueError:
                return None
        else:
            v1_value = _read_int(self.memory_dir / "memory.limit_in_bytes")
            if v1_value is None:
                return None
            value = v1_value
        return None if value <= 0 or value >= _NO_MEMORY_LIMIT else value


def _own_cgroup_paths(proc: Path) -> dict[str, str]:
    """``controller -> relative path`` from ``/proc/self/cgroup`` (``""`` is the v2 entry)."""
    out: dict[str, str] = {}
    for line in (_read(proc / "self" / "cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            out[controller] = parts[2]
    return out


def _under(root: Path, relative: str | None) -> Path:
    """``root/relative`` when that directory exists, else ``root`` (namespaced containers)."""
    if relative and relative != "/":
        candidate = root / relative.lstrip("/")
        if candidate.is_dir():
            return candidate
    return root


def detect_cgroup(root: Path | str = "/sys/fs/cgroup", proc: Path | str = "/proc") -> CgroupInfo | None:
    """The cgroup accounting of this process, or ``None`` when there is none to read."""
    root, proc = Path(root), Path(proc)
    own = _own_cgroup_paths(proc)
    if (root / "cgroup.controllers").exists():
        unified = _under(root, own.get(""))
        return CgroupInfo(2, unified, unified, unified)
    if (root / "cpu" / "cpu.cfs_quota_us").exists() or (root / "cpuacct" / "cpuacct.usage").exists():
        cpu = _under(root / "cpu", own.get("cpu"))
        cpuacct_root = root / "cpuacct" if (root / "cpuacct").is_dir() else root / "cpu"
        cpuacct = _under(cpuacct_root, own.get("cpuacct"))
        memory = _under(root / "memory", own.get("memory"))
        return CgroupInfo(1, cpu, cpuacct, memory)
    return None


# --------------------------------------------------------------------------- NICs


def usable_physical_nics(sys_net: Path | str = "/sys/class/net") -> list[str]:
    """Names of the usable physical NICs (rules in the module docstring), sorted."""
    base = Path(sys_net)
    try:
        entries = sorted(base.iterdir())
    except OSError:
        return []
    nics = []
    for entry in entries:
        try:
            real = entry.resolve()
        except OSError:
            continue
        if "/virtual/" in str(real):
            continue
        if _read_int(entry / "type") != _ARPHRD_ETHER:
            continue
        if (_read(entry / "operstate") or "").lower() not in _USABLE_OPERSTATES:
            continue
        nics.append(entry.name)
    return nics


def nic_speed_limit_kbps(
    nics: list[str], sys_net: Path | str = "/sys/class/net", override_gbps: float | None = None
) -> float:
    """Total NIC speed in Kbit/s: the override × 10⁶, else the sum of ``speed`` (Mbit/s) × 1000."""
    if override_gbps is not None:
        return float(override_gbps) * 1_000_000.0
    total = 0.0
    for nic in nics:
        speed = _read_int(Path(sys_net) / nic / "speed")
        if speed is not None and speed > 0:
            total += speed * 1000.0
    return total


# --------------------------------------------------------------------------- the collector


@dataclass
class _CpuSample:
    at_ns: int
    used_ns: int | None  # cgroup CPU time
    busy: float | None  # host busy share from psutil, 0..1


class HostUsageCollector:
    """Samples this host's usage; each :meth:`sample` reports the rates since the previous one.

    ``override_nic_speed_gbps`` is ``loadBalancerOverrideBrokerNicSpeedGbps``. The clock
    ``monotonic_ns`` is injectable for tests.
    """

    def __init__(
        self,
        *,
        override_nic_speed_gbps: float | None = None,
        cgroup_root: Path | str = "/sys/fs/cgroup",
        proc: Path | str = "/proc",
        sys_net: Path | str = "/sys/class/net",
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        import psutil

        self._psutil = psutil
        self._process = psutil.Process()
        self._override_gbps = override_nic_speed_gbps
        self._sys_net = Path(sys_net)
        self._now = monotonic_ns
        self.cgroup = detect_cgroup(cgroup_root, proc)
        self.nics = usable_physical_nics(self._sys_net)
        self._cpu = self._cpu_sample()
        self._net_at = self._now()
        self._net = self._net_bytes()
        self._warned: set[str] = set()
        logger.info(
            "Host usage: cgroup %s, %.2f CPUs, NICs %s (%.0f Kbit/s)",
            f"v{self.cgroup.version}" if self.cgroup else "none",
            self.cpu_limit() / 100,
            self.nics or "none",
            self.nic_limit_kbps(),
        )

    # ------------------------------------------------------------------ limits
    def cpu_limit(self) -> float:
        """``100 ×`` the CPUs available: the cgroup quota if any, else this process's affinity."""
        quota = self.cgroup.cpu_quota_cores() if self.cgroup else None
        cores = quota if quota is not None else _available_cpus(self._psutil)
        return 100.0 * cores

    def nic_limit_kbps(self) -> float:
        return nic_speed_limit_kbps(self.nics, self._sys_net, self._override_gbps)

    # ------------------------------------------------------------------ sampling
    def sample(self) -> SystemResourceUsage:
        """Usage since the previous call (the first call covers the time since construction)."""
        bandwidth_in, bandwidth_out = self._sample_network()
        return SystemResourceUsage(
            cpu=self._guard("cpu", self._sample_cpu),
            memory=self._guard("memory", self._sample_memory),
            direct_memory=ResourceUsage.unknown(),
            bandwidth_in=bandwidth_in,
            bandwidth_out=bandwidth_out,
        )

    def _guard(self, what: str, read: Callable[[], ResourceUsage]) -> ResourceUsage:
        try:
            return read()
        except Exception as exc:  # a broken collector must not stop the load report
            if what not in self._warned:
                self._warned.add(what)
                logger.warning("Cannot measure %s usage (%s); reporting it as unknown", what, exc)
            return ResourceUsage.unknown()

    def _cpu_sample(self) -> _CpuSample:
        used = self.cgroup.cpu_usage_ns() if self.cgroup else None
        busy = None
        if used is None:
            busy = self._psutil.cpu_percent(interval=None) / 100.0
        return _CpuSample(self._now(), used, busy)

    def _sample_cpu(self) -> ResourceUsage:
        previous, current = self._cpu, self._cpu_sample()
        self._cpu = current
        limit = self.cpu_limit()
        elapsed = current.at_ns - previous.at_ns
        if current.used_ns is not None and previous.used_ns is not None and elapsed > 0:
            usage = max(0, current.used_ns - previous.used_ns) / elapsed * 100.0
        else:
            # psutil's share is over all host CPUs since its previous call
            usage = (current.busy or 0.0) * limit
        return ResourceUsage(usage, limit)

    def _sample_memory(self) -> ResourceUsage:
        rss = self._process.memory_info().rss
        limit = self.cgroup.memory_limit_bytes() if self.cgroup else None
        if limit is None:
            limit = self._psutil.virtual_memory().total
        return ResourceUsage(rss / _MB, limit / _MB)

    def _net_bytes(self) -> tuple[int, int]:
        counters = self._psutil.net_io_counters(pernic=True)
        rx = sum(counters[n].bytes_recv for n in self.nics if n in counters)
        tx = sum(counters[n].bytes_sent for n in self.nics if n in counters)
        return rx, tx

    def _sample_network(self) -> tuple[ResourceUsage, ResourceUsage]:
        try:
            now, (rx, tx) = self._now(), self._net_bytes()
        except Exception as exc:
            if "network" not in self._warned:
                self._warned.add("network")
                logger.warning("Cannot measure NIC usage (%s); reporting bandwidth as unknown", exc)
            return ResourceUsage.unknown(), ResourceUsage.unknown()
        elapsed = (now - self._net_at) / 1e9
        prev_rx, prev_tx = self._net
        self._net_at, self._net = now, (rx, tx)
        limit = self.nic_limit_kbps()
        if elapsed <= 0:
            return ResourceUsage(0.0, limit), ResourceUsage(0.0, limit)
        # bytes -> Kbit (1000 bits, Pulsar's BitRateUnit)
        in_kbps = max(0, rx - prev_rx) * 8 / 1000 / elapsed
        out_kbps = max(0, tx - prev_tx) * 8 / 1000 / elapsed
        return ResourceUsage(in_kbps, limit), ResourceUsage(out_kbps, limit)


def _available_cpus(psutil_module: object) -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, psutil_module.cpu_count() or 1)  # type: ignore[attr-defined]
