"""Every script in ``benchmarks/`` runs as shipped, at a small size, so none can rot.

Each benchmark is started as a user starts it (``python benchmarks/<name>.py ...``) with
arguments that make it small; it must exit 0 and its last line must be its verdict:
``goal: <what> : <measured> ... -> met`` or ``-> NOT met`` (``benchmarks/verdict.py``). Whether the
goal is met at this size says nothing (the goals are for the default sizes): only that the
benchmark ran to its verdict. A new benchmark must be added here (the last test checks it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"

#: name -> arguments that make it small (and which parts it starts)
SMALL: dict[str, list[str]] = {
    "bench_assignors": ["--members", "20", "--partitions", "200", "--topics", "4", "--repeat", "1"],
    "bench_decision_engine": ["--brokers", "20", "--bundles", "500", "--cycles", "1"],
    "bench_leader_cycle": ["--brokers", "20", "--bundles", "500", "--cycles", "3", "--new-namespaces", "2"],
    "bench_model": ["--bundles", "200"],
    "bench_placement": ["--brokers", "20", "--bundles", "500", "--placements", "50"],
    "bench_plan_optimize": ["--brokers", "20", "--bundles", "500"],
    "bench_ring": ["--topics", "500", "--rounds", "2"],
    "bench_server_assignors": ["--members", "20", "--topics", "10", "--partitions", "200", "--repeat", "1"],
    "bench_simulator": ["--hours", "0.1"],
    "bench_zk_ownership": ["--bundles", "20"],  # also starts a ZooKeeper server
    "bench_group_protocols": ["--store", "memory", "--consumers", "2", "--rounds", "1"],
    "bench_lookup": ["--store", "memory", "--seconds", "0.5", "--rounds", "1", "--connections", "2"],
    "bench_moves": ["--moves", "1", "--scenario-runs", "0"],
    "bench_datapath": ["--seconds", "0.5", "--rounds", "1"],
    "bench_binary_protocol": ["--seconds", "0.5", "--moves", "1", "--rounds", "1", "--backlog-mb", "1"],
    "bench_storage": ["--seconds", "0.5", "--entries", "2000", "--rounds", "1", "--bundle-topics", "100"],
    "bench_chaos": ["--faults", "1", "--per-round", "1", "--no-clients"],
    "bench_pipeline": [
        "--rows",
        "2000",
        "--topics",
        "20",
        "--masters",
        "local[2]",
        "--pairs",
        "1",
        "--sink-reports",
        "10",
    ],
    "bench_balancer": ["--only", "anti-affinity", "--pulsar-only"],
    "bench_balancer_live": ["--cycles", "1", "--strategies", "ThresholdShedder"],
    "bench_shutdown": ["--runs", "1", "--brokers", "1", "--topics", "2"],  # starts a standalone process
}

VERDICT = re.compile(r"^goal: .+ -> (met|NOT met)$")


def test_every_benchmark_is_run_here() -> None:
    shipped = {p.stem for p in BENCHMARKS.glob("bench_*.py")}
    assert shipped == set(SMALL), (
        f"add to SMALL: {sorted(shipped - set(SMALL))}; gone: {sorted(set(SMALL) - shipped)}"
    )


@pytest.mark.slow
@pytest.mark.timeout(900)  # above the run's own 600 s guard: the suite's 300 s cut a loaded Spark run short
@pytest.mark.parametrize("name", sorted(SMALL))
def test_benchmark_runs_to_its_verdict(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / f"{name}.py"), *SMALL[name]],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=600,  # a guard against a hang, not a speed check
    )
    tail = "\n".join(proc.stdout.splitlines()[-15:]) + "\n--- stderr ---\n" + proc.stderr[-3000:]
    assert proc.returncode == 0, tail
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert lines, tail
    assert VERDICT.match(lines[-1]), tail
