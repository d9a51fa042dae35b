"""``brokerlb ring``: offline hash-ring tools (no cluster needed)."""

from __future__ import annotations

import typer
from rich.table import Table

from brokerlb.cli.common import cli_errors, console, print_json
from brokerlb.naming import TopicName
from brokerlb.ring import (
    BundleSplitOption,
    NamespaceBundles,
    get_split_algorithm,
    parse_boundary,
    topic_hash,
)

app = typer.Typer(no_args_is_help=True)

_NS = typer.Option(..., "--namespace", "-n", help="tenant/namespace")
_NUM = typer.Option(4, "--num-bundles", help="number of equal bundles (defaultNumberOfNamespaceBundles = 4)")
_BOUNDS = typer.Option(None, "--boundaries", help="comma-separated boundaries (0x…); overrides --num-bundles")
_JSON = typer.Option(False, "--json", help="machine-readable JSON output")


def _bundles(namespace: str, num_bundles: int, boundaries: str | None) -> NamespaceBundles:
    if boundaries:
        return NamespaceBundles.from_boundaries(namespace, [b.strip() for b in boundaries.split(",")])
    return NamespaceBundles.create(namespace, num_bundles)


@app.command("bundles")
def bundles_cmd(
    namespace: str = _NS, num_bundles: int = _NUM, boundaries: str | None = _BOUNDS, as_json: bool = _JSON
) -> None:
    """Print a namespace's bundles (BundlesData)."""
    with cli_errors():
        nb = _bundles(namespace, num_bundles, boundaries)
        if as_json:
            print_json(nb.to_json())
            return
        table = Table(title=f"{namespace}: {len(nb)} bundles")
        table.add_column("bundle")
        table.add_column("hash values", justify="right")
        for b in nb:
            table.add_row(str(b), f"{b.size:,}")
        console.print(table)


@app.command("find")
def find_cmd(
    topics: list[str],
    namespace: str | None = typer.Option(None, "--namespace", "-n"),
    num_bundles: int = _NUM,
    boundaries: str | None = _BOUNDS,
    as_json: bool = _JSON,
) -> None:
    """Map topics to bundles (CRC-32 of the full name, as Pulsar's `topics bundle-range`)."""
    with cli_errors():
        rows = []
        for t in topics:
            name = TopicName.parse(t)
            nb = _bundles(namespace or str(name.namespace), num_bundles, boundaries)
            rows.append(
                {
                    "topic": str(name),
                    "hash": f"0x{topic_hash(str(name)):08x}",
                    "bundle": nb.find_bundle(name).range,
                }
            )
        if as_json:
            print_json(rows)
            return
        table = Table()
        for col in ("topic", "hash", "bundle"):
            table.add_column(col)
        for r in rows:
            table.add_row(r["topic"], r["hash"], r["bundle"])
        console.print(table)


@app.command("split")
def split_cmd(
    bundle: str = typer.Argument(..., help="range 0x…_0x…"),
    namespace: str = _NS,
    num_bundles: int = _NUM,
    boundaries: str | None = _BOUNDS,
    algorithm: str = typer.Option("range_equally_divide", "--algorithm", "-a"),
    topics: str | None = typer.Option(None, "--topics", help="comma-separated topics in the bundle"),
    positions: str | None = typer.Option(None, "--positions", help="comma-separated split positions"),
) -> None:
    """Split a bundle with one of Pulsar's algorithms and print the new BundlesData."""
    with cli_errors():
        nb = _bundles(namespace, num_bundles, boundaries)
        target = nb.get_bundle(bundle)
        option = BundleSplitOption(
            target,
            topics=[t.strip() for t in topics.split(",")] if topics else (),
            positions=[parse_boundary(p.strip()) for p in positions.split(",")] if positions else (),
        )
        cuts = get_split_algorithm(algorithm).split_boundaries(option)
        if not cuts:
            console.print(f"no valid boundary found for {target}: nothing to split")
            print_json(nb.to_json())
            return
        print_json(nb.split(target, cuts).to_json())


@app.command("merge")
def merge_cmd(
    bundles: list[str], namespace: str = _NS, num_bundles: int = _NUM, boundaries: str | None = _BOUNDS
) -> None:
    """Merge adjacent bundles (beyond Pulsar) and print the new BundlesData."""
    with cli_errors():
        print_json(_bundles(namespace, num_bundles, boundaries).merge(bundles).to_json())
