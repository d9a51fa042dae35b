"""``brokerlb metadata``: look at a metadata store in Pulsar's layout; run a local ZooKeeper.

Every command but ``zookeeper`` takes ``--store`` (``zk:host:port[/chroot]``; a
``memory:`` store lives only inside one process, so it is empty here).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from brokerlb.cli.common import cli_errors, console, print_json

app = typer.Typer(no_args_is_help=True)

T = TypeVar("T")
_STORE = typer.Option(..., "--store", "-s", help="metadata store URL, e.g. zk:127.0.0.1:2181")
_JSON = typer.Option(False, "--json", help="machine-readable JSON output")


def _with_store(url: str, body: Callable[[Any], Awaitable[T]]) -> T:
    from brokerlb.coordination import open_store

    async def run() -> T:
        async with open_store(url, session_timeout=10, operation_timeout=10) as store:
            return await body(store)

    with cli_errors():
        return asyncio.run(run())


@app.command("tree")
def tree_cmd(
    store: str = _STORE,
    path: str = typer.Argument("/", help="where to start"),
    depth: int = typer.Option(8, help="levels to show"),
) -> None:
    """Print the nodes under PATH with their data (ephemerals show their session)."""

    async def walk(s: Any) -> None:
        async def visit(p: str, level: int) -> None:
            node = await s.get_or_none(p)
            if node is None:
                return
            owner = (
                f"  [dim](ephemeral 0x{node.stat.ephemeral_owner:x})[/dim]"
                if node.stat.ephemeral_owner
                else ""
            )
            data = node.data.decode("utf-8", "replace")
            shown = escape((data[:100] + "…") if len(data) > 100 else data)
            name = escape(p.rsplit("/", 1)[-1] or "/")
            console.print(f"{'  ' * level}{name}{owner}  {shown}", highlight=False, soft_wrap=True)
            if level < depth:
                for child in await s.children(p):
                    await visit(f"{p.rstrip('/')}/{child}", level + 1)

        await visit(path, 0)

    _with_store(store, walk)


@app.command("brokers")
def brokers_cmd(store: str = _STORE, as_json: bool = _JSON) -> None:
    """Registered brokers (children of /loadbalance/brokers) and the leader."""
    from brokerlb.coordination import BrokerRegistry, LeaderBroker
    from brokerlb.coordination.paths import LEADER_PATH

    async def read(s: Any) -> dict[str, Any]:
        registry = await BrokerRegistry(s).start()
        leader = await s.get_or_none(LEADER_PATH)
        out = {
            "brokers": registry.available_brokers(),
            "leader": LeaderBroker.from_bytes(leader.data, LEADER_PATH).to_json() if leader else None,
        }
        await registry.close(unregister=False)
        return out

    result = _with_store(store, read)
    if as_json:
        print_json(result)
        return
    leader = (result["leader"] or {}).get("brokerId")
    for broker in result["brokers"]:
        console.print(f"{broker}{'  (leader)' if broker == leader else ''}", highlight=False)
    if not result["brokers"]:
        console.print("no broker registered")


@app.command("owners")
def owners_cmd(
    store: str = _STORE,
    namespace: str | None = typer.Option(None, "--namespace", "-n"),
    as_json: bool = _JSON,
) -> None:
    """Bundle → its ownership record (state, owner, source), from /service_unit_state."""
    from brokerlb.coordination import OwnershipTable

    async def read(s: Any) -> dict[str, dict[str, Any]]:
        table = await OwnershipTable(s).start()
        prefix = f"{namespace.strip('/')}/" if namespace else ""
        records = {r.bundle: r.record for r in table if r.bundle.startswith(prefix)}
        table.close()
        return {
            b: {
                "state": str(r.state),
                "broker": r.holder()[0],
                "source": r.src,
                "session": r.holder()[1],
                "versionId": r.version,
            }
            for b, r in sorted(records.items())
        }

    result = _with_store(store, read)
    if as_json:
        print_json(result)
        return
    table = Table(title=f"{len(result)} ownership records")
    for column in ("bundle", "state", "owner", "source"):
        table.add_column(column)
    for bundle, owner in result.items():
        table.add_row(bundle, owner["state"], str(owner["broker"] or ""), str(owner["source"] or ""))
    console.print(table)


@app.command("bundles")
def bundles_cmd(
    store: str = _STORE, namespace: str = typer.Option(..., "--namespace", "-n"), as_json: bool = _JSON
) -> None:
    """A namespace's bundles as brokers read them (local policies, else global policies)."""
    from brokerlb.coordination import BundleMetadata

    async def read(s: Any) -> dict[str, Any]:
        return (await BundleMetadata(s).get_bundles(namespace)).to_json()

    result = _with_store(store, read)
    if as_json:
        print_json(result)
        return
    console.print(f"{namespace}: {result['numBundles']} bundles")
    for lower, upper in zip(result["boundaries"], result["boundaries"][1:], strict=False):
        console.print(f"  {lower}_{upper}", highlight=False)


@app.command("zookeeper")
def zookeeper_cmd(port: int = typer.Option(0, help="port on 127.0.0.1 (0: a free one)")) -> None:
    """Run a local ZooKeeper (Debian's package) until Ctrl-C, for development."""
    from brokerlb.testing.zookeeper import ZooKeeperServer, ZooKeeperUnavailableError

    try:
        server = ZooKeeperServer(port=port or None).start()
    except ZooKeeperUnavailableError as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(1) from None
    console.print(f"ZooKeeper pid {server.pid} at {server.url} (Ctrl-C stops it)", highlight=False)
    try:
        while server.is_running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
