"""How long a standalone cluster takes to stop on Ctrl-C, with clients connected.

    .venv/bin/python benchmarks/bench_shutdown.py [--runs 5] [--brokers 3] [--topics 16] [--json]

Each run starts ``brokerlb standalone --brokers N`` in its own process, creates a namespace of 8
bundles and connects the official Pulsar client here: a consumer (durable subscription) on every
topic, and producers until 100 messages are acknowledged (then the producers close: the consumers
stay connected). Then SIGINT, and the time from the signal to the process's exit is measured,
with the number of ERROR and WARNING lines it printed. The goal is under 3 s with no such line.

Figures move with the load on the machine (2-core VM shared with other work).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verdict import verdict  # noqa: E402

GOAL_S = 3.0


async def one_run(brokers: int, topics: int) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient
    from brokerlb.perf.binary import native_logger
    from brokerlb.testing.official_client import OfficialTraffic
    from brokerlb.testing.standalone_process import StandaloneProcess

    standalone = StandaloneProcess(brokers)
    await standalone.start()
    traffic = None
    try:
        async with AsyncAdminClient(standalone.urls[0]) as admin:
            await admin.create_namespace("public/bench-stop", num_bundles=8)
        names = [f"persistent://public/bench-stop/t-{i}" for i in range(topics)]
        traffic = OfficialTraffic(
            standalone.binary_urls[0], dict.fromkeys(names, 20.0), timeout=20, logger=native_logger()
        )
        await asyncio.to_thread(traffic.start)
        while traffic.acked() < 100:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(traffic.stop_producing)
        assert standalone.process is not None
        sent = time.monotonic()
        standalone.process.send_signal(signal.SIGINT)
        code = await asyncio.to_thread(standalone.process.wait, 300)
        seconds = time.monotonic() - sent
        lines = standalone.log.read_text(errors="replace").splitlines()
        return {
            "seconds": round(seconds, 3),
            "exit_code": code,
            "errors": sum(" ERROR " in line for line in lines),
            "warnings": sum(" WARNING " in line for line in lines),
        }
    finally:
        if traffic is not None:
            await asyncio.to_thread(traffic.close)
        await standalone.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--topics", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = [asyncio.run(one_run(args.brokers, args.topics)) for _ in range(args.runs)]
    seconds = sorted(r["seconds"] for r in runs)
    summary = {
        "runs": runs,
        "median_s": round(statistics.median(seconds), 3),
        "max_s": seconds[-1],
        "error_lines": sum(r["errors"] for r in runs),
        "warning_lines": sum(r["warnings"] for r in runs),
        "goal": f"Ctrl-C to exit under {GOAL_S:g} s, no ERROR/WARNING line",
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for i, r in enumerate(runs, 1):
            print(
                f"run {i}: {r['seconds']:.2f} s, exit {r['exit_code']}, {r['errors']} ERROR, {r['warnings']} WARNING"
            )
        print(
            f"Ctrl-C to exit: median {summary['median_s']:.2f} s, max {summary['max_s']:.2f} s over {len(runs)} "
            f"runs ({args.brokers} brokers, {args.topics} topics with consumers)"
        )
    verdict(
        f"Ctrl-C to exit under {GOAL_S:g} s in every run, no ERROR/WARNING line",
        f"max {summary['max_s']:.2f} s over {len(runs)} runs, {summary['error_lines']} ERROR and "
        f"{summary['warning_lines']} WARNING lines",
        summary["max_s"] < GOAL_S and summary["error_lines"] == 0 and summary["warning_lines"] == 0,
    )


if __name__ == "__main__":
    main()
