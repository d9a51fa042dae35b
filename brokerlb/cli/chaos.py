"""``brokerlb chaos``: a fault campaign on broker processes and a real ZooKeeper, with its verdict.

Starts a ZooKeeper server and ``--brokers`` ``brokerlb broker`` processes on free loopback
ports, runs clients and a seeded schedule of ``--faults`` faults (at most ``--time-limit``
seconds in all), stops everything by PID and prints what the ownership-history checker found:
faults by kind, double-serving instants, re-ownership times, stuck transitions, lost split
boundaries, leader actions accepted and stale ones refused -- and what the clients saw: messages
acknowledged, delivered and lost, in all and per fault kind. Exit status 1 when a safety property
failed (double serving, a lost split boundary, a stale leader action accepted) or a message
acknowledged to a producer never reached its durable subscription (``acknowledged_lost`` > 0). Needs ``java`` and the ZooKeeper
jar (``scripts/setup.sh``), and ``pulsar-client`` unless ``--no-clients``.
"""

from __future__ import annotations

import json

import typer

from brokerlb.cli.common import cli_errors, console

__all__ = ["chaos"]

_KINDS = typer.Option(
    None, "--kinds", help="comma-separated fault kinds (default: all of them; see the module docs)"
)


def chaos(
    faults: int = typer.Option(20, "--faults", "-f", min=1, help="number of faults to inject"),
    seed: int = typer.Option(1, "--seed", help="seed of the fault schedule"),
    brokers: int = typer.Option(3, "--brokers", "-n", min=2, help="broker processes"),
    time_limit: float = typer.Option(170.0, "--time-limit", help="bound on the whole run, seconds"),
    session_timeout_ms: int = typer.Option(
        3000, "--session-timeout-ms", help="metadataStoreSessionTimeoutMillis"
    ),
    kinds: str | None = _KINDS,
    clients: bool = typer.Option(
        True, "--clients/--no-clients", help="official-client producers and consumers"
    ),
    every_kind: bool = typer.Option(
        False,
        "--every-kind",
        help="a scripted schedule in which every chosen kind occurs (each fault retried until injectable; "
        "--time-limit then bounds only the warm-up)",
    ),
    keep: bool = typer.Option(False, "--keep", help="keep the brokers' logs and histories (path printed)"),
    show: int = typer.Option(5, "--show", help="violations of each kind to print"),
) -> None:
    """Run a seeded fault campaign and check every broker's ownership history."""
    import asyncio

    from brokerlb.errors import InvalidInputError
    from brokerlb.testing.chaos import FAULT_KINDS, Campaign, CampaignConfig, every_kind_schedule

    with cli_errors():
        chosen = tuple(k.strip() for k in kinds.split(",") if k.strip()) if kinds else FAULT_KINDS
        unknown = sorted(set(chosen) - set(FAULT_KINDS))
        if unknown:
            raise InvalidInputError(f"Unknown fault kinds {unknown}; known: {', '.join(FAULT_KINDS)}")
        config = CampaignConfig(
            brokers=brokers,
            faults=faults,
            seed=seed,
            time_limit=time_limit,
            session_timeout_ms=session_timeout_ms,
            kinds=chosen,
            clients=clients,
            keep_workdir=keep,
        )
        script = every_kind_schedule(seed, faults, chosen) if every_kind else None
        result = asyncio.run(Campaign(config).run(script=script))
        console.print_json(json.dumps(result.summary()))
        v = result.verdict
        for title, items in (
            ("double serving", v.overlaps),
            ("slow re-ownership, no other fault meanwhile", v.slow_reownership_alone),
            ("slow re-ownership", v.slow_reownership),
            ("never served again", v.not_reowned),
            ("stuck transitions", v.stuck_transitions),
            ("lost split boundaries", v.lost_boundaries),
            ("stale leader actions accepted", v.stale_actions_accepted),
        ):
            for item in items[:show]:
                console.print(f"{title}: {item}", highlight=False)
        if result.acknowledged_lost:
            console.print(
                f"acknowledged and lost: {result.acknowledged_lost} messages "
                f"(first: {', '.join((result.traffic or {}).get('lost_examples', [])[:show])})",
                highlight=False,
            )
        if keep:
            console.print(f"logs and histories in {result.workdir}", highlight=False)
        if not v.safe or result.acknowledged_lost:
            raise typer.Exit(1)
