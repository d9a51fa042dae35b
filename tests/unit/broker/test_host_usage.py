"""Host usage on fake /sys and /proc trees: cgroup v1 and v2 quotas, CPU time, memory limits, NICs."""

from __future__ import annotations

from pathlib import Path

import pytest

from brokerlb.broker.report.host_usage import (
    HostUsageCollector,
    detect_cgroup,
    nic_speed_limit_kbps,
    usable_physical_nics,
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def proc(tmp_path: Path) -> Path:
    root = tmp_path / "proc"
    write(root / "self" / "cgroup", "0::/\n")
    return root


def cgroup_v2(root: Path, quota: str = "200000 100000", usage_usec: int = 0, memory: str = "max") -> Path:
    write(root / "cgroup.controllers", "cpu memory\n")
    write(root / "cpu.max", quota + "\n")
    write(root / "cpu.stat", f"usage_usec {usage_usec}\nuser_usec 0\nsystem_usec 0\n")
    write(root / "memory.max", memory + "\n")
    return root


def cgroup_v1(
    root: Path, quota: int = -1, period: int = 100000, usage_ns: int = 0, memory: int = 9223372036854771712
) -> Path:
    write(root / "cpu" / "cpu.cfs_quota_us", f"{quota}\n")
    write(root / "cpu" / "cpu.cfs_period_us", f"{period}\n")
    write(root / "cpuacct" / "cpuacct.usage", f"{usage_ns}\n")
    write(root / "memory" / "memory.limit_in_bytes", f"{memory}\n")
    return root


def test_v2_quota_usage_and_memory_limit(tmp_path: Path, proc: Path) -> None:
    cg = detect_cgroup(cgroup_v2(tmp_path / "cg", "150000 100000", 5_000_000, "1073741824"), proc)
    assert cg is not None and cg.version == 2
    assert cg.cpu_quota_cores() == 1.5
    assert cg.cpu_usage_ns() == 5_000_000_000
    assert cg.memory_limit_bytes() == 1 << 30


def test_v2_without_quota_is_unlimited(tmp_path: Path, proc: Path) -> None:
    cg = detect_cgroup(cgroup_v2(tmp_path / "cg", "max 100000"), proc)
    assert cg is not None and cg.cpu_quota_cores() is None and cg.memory_limit_bytes() is None


def test_v1_quota_and_no_memory_limit(tmp_path: Path, proc: Path) -> None:
    cg = detect_cgroup(cgroup_v1(tmp_path / "cg", quota=300000, usage_ns=42), proc)
    assert cg is not None and cg.version == 1
    assert cg.cpu_quota_cores() == 3.0
    assert cg.cpu_usage_ns() == 42
    assert cg.memory_limit_bytes() is None  # the v1 "no limit" value near 2^63


def test_v1_own_cgroup_path_is_followed(tmp_path: Path) -> None:
    root = cgroup_v1(tmp_path / "cg", quota=-1)
    write(root / "cpu" / "docker" / "abc" / "cpu.cfs_quota_us", "50000\n")
    write(root / "cpu" / "docker" / "abc" / "cpu.cfs_period_us", "100000\n")
    proc = tmp_path / "proc"
    write(proc / "self" / "cgroup", "4:cpu:/docker/abc\n3:cpuacct:/docker/abc\n")
    cg = detect_cgroup(root, proc)
    assert cg is not None and cg.cpu_quota_cores() == 0.5


def test_no_cgroup(tmp_path: Path, proc: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert detect_cgroup(tmp_path / "empty", proc) is None


def fake_nic(
    net: Path,
    devices: Path,
    name: str,
    *,
    virtual: bool = False,
    type_: int = 1,
    operstate: str = "up",
    speed: str = "10000",
) -> None:
    target = devices / ("virtual/net" if virtual else "pci0000:00/net") / name
    write(target / "type", f"{type_}\n")
    write(target / "operstate", f"{operstate}\n")
    write(target / "speed", f"{speed}\n")
    net.mkdir(parents=True, exist_ok=True)
    (net / name).symlink_to(target)


def test_nics_follow_pulsar_rules(tmp_path: Path) -> None:
    net, devices = tmp_path / "class" / "net", tmp_path / "devices"
    fake_nic(net, devices, "eth0", speed="10000")
    fake_nic(net, devices, "eth1", speed="1000", operstate="unknown")
    fake_nic(net, devices, "eth2", operstate="down")
    fake_nic(net, devices, "lo", virtual=True)
    fake_nic(net, devices, "wlan0", type_=801)
    fake_nic(net, devices, "eth3", speed="-1")  # virtio: speed unknown
    nics = usable_physical_nics(net)
    assert nics == ["eth0", "eth1", "eth3"]
    assert nic_speed_limit_kbps(nics, net) == 11_000_000.0  # Mbit/s x 1000, unknown counts 0
    assert (
        nic_speed_limit_kbps(nics, net, override_gbps=2.5) == 2_500_000.0
    )  # loadBalancerOverrideBrokerNicSpeedGbps


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def test_collector_cpu_from_cgroup_time(tmp_path: Path, proc: Path) -> None:
    root = cgroup_v2(tmp_path / "cg", "200000 100000", usage_usec=1_000_000)
    clock = Clock()
    collector = HostUsageCollector(
        cgroup_root=root, proc=proc, sys_net=tmp_path / "no-net", monotonic_ns=clock
    )
    assert collector.cpu_limit() == 200.0  # 2 CPUs granted by the quota
    clock.ns += 2_000_000_000  # 2 s later the cgroup used 1.5 s of CPU: 75% of one core
    write(root / "cpu.stat", "usage_usec 2500000\n")
    usage = collector.sample()
    assert usage.cpu.usage == pytest.approx(75.0)
    assert usage.cpu.limit == 200.0
    assert usage.memory.limit > 0 and usage.memory.usage > 0  # RSS of this process, host memory limit
    assert usage.direct_memory.limit == -1  # no JVM direct memory: unknown, as Pulsar's reset()
    assert usage.bandwidth_in.limit == 0.0 and usage.bandwidth_in.usage == 0.0  # no NIC: limit 0, 0%


def test_collector_memory_limit_from_cgroup(tmp_path: Path, proc: Path) -> None:
    root = cgroup_v2(tmp_path / "cg", memory=str(512 * 1024 * 1024))
    usage = HostUsageCollector(cgroup_root=root, proc=proc, sys_net=tmp_path / "no-net").sample()
    assert usage.memory.limit == 512.0


def test_collector_bandwidth_limit_from_override(tmp_path: Path, proc: Path) -> None:
    (tmp_path / "empty").mkdir()
    collector = HostUsageCollector(
        override_nic_speed_gbps=10, cgroup_root=tmp_path / "empty", proc=proc, sys_net=tmp_path / "no-net"
    )
    usage = collector.sample()
    assert usage.bandwidth_out.limit == 1e7  # 10 Gbit/s in Kbit/s, as Pulsar's sample reports
    assert 0 <= usage.cpu.usage and usage.cpu.limit >= 100


def test_collector_survives_a_broken_cgroup_file(tmp_path: Path, proc: Path) -> None:
    root = cgroup_v2(tmp_path / "cg")
    collector = HostUsageCollector(cgroup_root=root, proc=proc, sys_net=tmp_path / "no-net")
    (root / "cpu.stat").write_text("garbage\n")
    usage = collector.sample()  # falls back to the host's busy share; never raises
    assert usage.cpu.limit == 200.0 and usage.cpu.usage >= 0
