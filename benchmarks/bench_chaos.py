"""Benchmark: a long fault campaign -- at least ``--faults`` faults on broker processes on a real ZooKeeper.

Runs :class:`~brokerlb.testing.chaos.Campaign` rounds (each a fresh ZooKeeper and ``--brokers``
``brokerlb broker`` processes, official-client producers and consumers, a lookup prober, and a
seeded schedule of faults: SIGKILL and restart, SIGSTOP shorter and longer than the session
timeout, ZooKeeper restarted, the leader killed, an owner killed mid-split, session expiry during a
transfer, concurrent admin unload and split, wall-clock jumps) until the faults reach ``--faults``.
Each round is bounded by ``--round-time-limit`` seconds; the whole run by the number of rounds
that can take.

Reported (JSON, totals over the rounds, and each round's own line): faults by kind, double-serving
instants (and their total length), re-ownership times of the bundles of dead brokers p50 / p99 /
max (from the death, or from ZooKeeper's return when it was restarted meanwhile; and from the death
alone), re-ownerships slower than session timeout + 2 s, bundles never served again, stuck
transitions, lost split boundaries, leader actions accepted, stale leader actions refused and
accepted, the clients' messages acknowledged, delivered and lost (``acknowledged_lost``: acknowledged
to a producer and never received by the durable subscription), in all and per fault kind, and the
machine's load average at start and end (the box is shared: figures are meaningful with their load).
Exit status 1 on double serving, a stale leader action accepted or an acknowledged message lost.

    nice .venv/bin/python benchmarks/bench_chaos.py --faults 1000 --per-round 250 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sys
import time

from brokerlb.testing.chaos import Campaign, CampaignConfig
from brokerlb.testing.ownership_checker import percentile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from verdict import verdict  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=1000)
    parser.add_argument("--per-round", type=int, default=250)
    parser.add_argument("--brokers", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--session-timeout-ms", type=int, default=3000)
    parser.add_argument("--round-time-limit", type=float, default=900.0)
    parser.add_argument("--no-clients", action="store_true", help="lookup prober only, no official client")
    parser.add_argument("--keep", action="store_true", help="keep each round's logs and histories")
    args = parser.parse_args()

    load_start = os.getloadavg()
    began = time.monotonic()
    totals: collections.Counter[str] = collections.Counter()
    faults: collections.Counter[str] = collections.Counter()
    reown_ms: list[float] = []
    from_death_ms: list[float] = []
    refused = accepted_stale = leader_actions = 0
    messages: collections.Counter[str] = collections.Counter()
    by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    rounds = []
    seed = args.seed
    while sum(faults.values()) < args.faults:
        want = min(args.per_round, args.faults - sum(faults.values()))
        config = CampaignConfig(
            brokers=args.brokers,
            faults=want,
            seed=seed,
            time_limit=args.round_time_limit,
            session_timeout_ms=args.session_timeout_ms,
            clients=not args.no_clients,
            keep_workdir=args.keep,
        )
        result = asyncio.run(Campaign(config).run())
        summary = result.summary()
        print(
            json.dumps(
                {
                    "round": len(rounds) + 1,
                    "workdir": result.workdir if args.keep else "",
                    **summary,
                    "slow_examples": result.verdict.slow_reownership[:8],
                }
            ),
            flush=True,
        )
        rounds.append(summary)
        faults.update(result.faults)
        v = result.verdict
        reown_ms.extend(n / 1e6 for n in v.reownership_ns)
        from_death_ms.extend(n / 1e6 for n in v.reownership_from_death_ns)
        totals["double_serving_instants"] += v.double_serving
        totals["double_serving_ms"] += round(v.double_serving_ns / 1e6)
        totals["slow_reownership"] += len(v.slow_reownership)
        totals["not_reowned"] += len(v.not_reowned)
        totals["unserved_at_end"] += len(v.unserved_at_end)
        totals["stuck_transitions"] += len(v.stuck_transitions)
        totals["lost_split_boundaries"] += len(v.lost_boundaries)
        totals["history_events"] += result.history_events
        totals["fault_errors"] += len(result.errors)
        refused += v.stale_actions_refused
        leader_actions += v.leader_actions_accepted
        if result.traffic is not None:
            messages.update(result.traffic["messages"])
            for kind, counts in result.traffic["messages_by_fault_kind"].items():
                by_kind[kind].update(counts)
        accepted_stale += len(v.stale_actions_accepted)
        seed += 1
        if result.faults.total() == 0:
            print("a round injected no fault; stopping", file=sys.stderr)
            break
    reown_ms.sort()
    from_death_ms.sort()
    report = {
        "faults": sum(faults.values()),
        "faults_by_kind": dict(sorted(faults.items())),
        "rounds": len(rounds),
        "brokers": args.brokers,
        "session_timeout_ms": args.session_timeout_ms,
        "duration_s": round(time.monotonic() - began, 1),
        **dict(totals),
        "reownership_count": len(reown_ms),
        "reownership_ms_p50": round(percentile(reown_ms, 50), 1) if reown_ms else None,
        "reownership_ms_p99": round(percentile(reown_ms, 99), 1) if reown_ms else None,
        "reownership_ms_max": round(reown_ms[-1], 1) if reown_ms else None,
        "reownership_from_death_ms_p50": round(percentile(from_death_ms, 50), 1) if from_death_ms else None,
        "reownership_from_death_ms_p99": round(percentile(from_death_ms, 99), 1) if from_death_ms else None,
        "reownership_from_death_ms_max": round(from_death_ms[-1], 1) if from_death_ms else None,
        "stale_leader_actions_refused": refused,
        "stale_leader_actions_accepted": accepted_stale,
        "leader_actions_accepted": leader_actions,
        "acknowledged_lost": messages["acknowledged_lost"],
        "messages": dict(messages),
        "messages_by_fault_kind": {kind: dict(counts) for kind, counts in sorted(by_kind.items())},
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }
    print(json.dumps(report, indent=1))
    safe = totals["double_serving_instants"] == 0 and not accepted_stale
    ok = safe and not messages["acknowledged_lost"]
    verdict(
        f"{args.faults} faults with no double serving, no stale leader action accepted, no acknowledged "
        "message lost",
        f"{report['faults']} faults, {totals['double_serving_instants']} double-serving instants, "
        f"{accepted_stale} stale actions accepted, {messages['acknowledged_lost']} acknowledged lost",
        ok and report["faults"] >= args.faults,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
