"""``brokerlb kafka``: producer partitioning and consumer-group assignment, offline."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from brokerlb.cli.common import cli_errors, print_json
from brokerlb.errors import InvalidInputError

app = typer.Typer(no_args_is_help=True)

_SCHEMES = ("murmur2", "JavaStringHash", "Murmur3_32Hash")


@app.command("partition")
def partition_cmd(
    key: str = typer.Option(..., "--key", help="record key (UTF-8)"),
    partitions: int = typer.Option(..., "--partitions", help="number of partitions of the topic"),
    scheme: str = typer.Option(
        "murmur2",
        "--scheme",
        help="murmur2 (Kafka producer) or a Pulsar HashingScheme: JavaStringHash, Murmur3_32Hash",
    ),
) -> None:
    """Print the partition a keyed record goes to (Kafka: toPositive(murmur2(key)) % N)."""
    with cli_errors():
        if partitions < 1:
            raise InvalidInputError(f"--partitions must be >= 1, got {partitions}")
        if scheme == "murmur2":
            from brokerlb.kafka.partitioner import partition_for_key

            typer.echo(partition_for_key(key.encode("utf-8"), partitions))
            return
        if scheme not in _SCHEMES:
            raise InvalidInputError(f"unknown --scheme {scheme!r}; known: {', '.join(_SCHEMES)}")
        from brokerlb.kafka.hashing import sign_safe_mod
        from brokerlb.kafka.pulsar_routing import HashingScheme, make_hash

        typer.echo(sign_safe_mod(make_hash(key, HashingScheme.parse(scheme)), partitions))


def _read_group(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidInputError(f"cannot read group file {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"group file {path} is not valid JSON: {exc}") from exc


@app.command("assign")
def assign_cmd(
    assignor: str = typer.Option(
        ...,
        "--assignor",
        help="classic: range | roundrobin | sticky | cooperative-sticky | load-aware; "
        "KIP-848 server-side: uniform | range-server",
    ),
    group: str = typer.Option(..., "--group", help="group JSON file ('-' for stdin)"),
    legacy_sticky: bool = typer.Option(
        False,
        "--legacy-sticky",
        help="sticky assignors: general algorithm for every group "
        "(Kafka < 2.8, kafka-python) instead of Java's fast path",
    ),
    tolerance_ratio: float = typer.Option(
        0.05, "--tolerance-ratio", help="load-aware: hysteresis as a fraction of the mean member load"
    ),
    check: bool = typer.Option(
        True, "--check/--no-check", help="validate the answer with the shared checker"
    ),
) -> None:
    """Run an assignor on a group and print {"assignment", "moved", "revoked", "pending"}."""
    with cli_errors():
        from brokerlb.kafka.assignors import GroupSnapshot, get_assignor

        snapshot = GroupSnapshot.from_json(_read_group(group))
        options: dict[str, Any] = {}
        if assignor in ("sticky", "cooperative-sticky"):
            options["constrained"] = not legacy_sticky
        elif assignor == "load-aware":
            options["tolerance_ratio"] = tolerance_ratio
        chosen = get_assignor(assignor, **options)
        result = chosen.assign(snapshot)
        if check:
            from brokerlb.kafka.checker import check_assignor_result

            check_assignor_result(chosen, snapshot, result)
        print_json(result.to_json())
