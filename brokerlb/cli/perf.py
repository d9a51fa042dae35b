"""``brokerlb perf produce|consume``: load over the data path, like ``pulsar-perf``.

::

    brokerlb perf produce persistent://public/default/perf -t 200 -r 2000 -s 512 -d 60 \\
        --topic-skew zipf --key-skew zipf --num-keys 1000
    brokerlb perf consume persistent://public/default/perf -t 200 -st Shared -d 60

With ``-t N`` the topics are ``TOPIC-0 .. TOPIC-(N-1)`` (``pulsar-perf``'s naming). A
live view shows, per interval, the throughput, the publish (or end-to-end) latency
percentiles, the pending sends, the reconnects and the longest publish pause so far;
the summary at the end accounts for every send (``sent = acked + errored``) and names
the longest pause. ``--json`` prints the summary as JSON instead (for scripts).
"""

from __future__ import annotations

import asyncio
import signal
from typing import Any

import typer
from rich.live import Live
from rich.table import Table

from brokerlb.admin.client import DEFAULT_URL
from brokerlb.cli.common import cli_errors, console, print_json

app = typer.Typer(no_args_is_help=True, help="Load generation over the data path (pulsar-perf style).")

_URL = typer.Option(
    DEFAULT_URL,
    "--service-url",
    "-u",
    envvar="BROKERLB_URL",
    help="a broker's web URL (WebSocket data path), or pulsar://host:port as pulsar-perf takes "
    "(Pulsar's binary protocol, through the official client)",
)
_TOPICS = typer.Option(1, "--num-topics", "-t", help="number of topics: TOPIC-0 .. TOPIC-(N-1)")
_DURATION = typer.Option(0.0, "--test-duration", "-d", help="seconds to run (0 = until Ctrl-C)")
_INTERVAL = typer.Option(1.0, "--stats-interval", "-i", help="seconds between live-view rows")
_JSON = typer.Option(False, "--json", help="print only the summary, as JSON")


def _run_with_view(run: Any, interval: float, as_json: bool, title: str, latency_label: str) -> Any:
    """Run ``run.run()`` with a live table (or log lines when not on a terminal) until it ends."""

    async def main() -> Any:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, run.stop)
        await run.start()
        task = asyncio.create_task(run.run())
        rows: list[Any] = []
        live = (
            Live(_table(title, latency_label, rows), console=console, refresh_per_second=4, transient=False)
            if console.is_terminal and not as_json
            else None
        )
        try:
            if live is not None:
                live.start()
            while not task.done():
                await asyncio.wait([task], timeout=interval)
                if task.done():
                    break
                row = run.snapshot()
                rows.append(row)
                if live is not None:
                    live.update(_table(title, latency_label, rows[-20:]))
                elif not as_json:
                    console.print(_line(row, latency_label), highlight=False)
            return task.result()
        finally:
            if live is not None:
                live.stop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)

    try:
        import uvloop

        runner = asyncio.Runner(loop_factory=uvloop.new_event_loop)
    except ImportError:  # pragma: no cover - the server extra installs uvloop
        runner = asyncio.Runner()
    with runner:
        return runner.run(main())


def _producing(latency_label: str) -> bool:
    return latency_label == "publish"


def _table(title: str, latency_label: str, rows: list[Any]) -> Table:
    table = Table(title=title)
    producing = _producing(latency_label)
    names = ["msg/s", "MB/s", f"{latency_label} ms p50", "p99", "p99.9", "max", "reconnects"]
    if producing:
        names.insert(2, "errors")
        names += ["pending", "longest pause ms"]
    for name in names:
        table.add_column(name, justify="right")
    for r in rows:
        lat = r.latency_ms
        cells = [f"{r.rate:,.0f}", f"{r.mbytes_per_s:.2f}"] + ([str(r.errors)] if producing else [])
        cells += [
            f"{lat['p50']:.2f}",
            f"{lat['p99']:.2f}",
            f"{lat['p999']:.2f}",
            f"{lat['max']:.2f}",
            str(r.reconnects),
        ]
        if producing:
            cells += [str(r.outstanding), f"{r.longest_pause_ms:.0f}"]
        table.add_row(*cells)
    return table


def _line(r: Any, latency_label: str) -> str:
    lat = r.latency_ms
    text = (
        f"{r.rate:10,.0f} msg/s {r.mbytes_per_s:7.2f} MB/s | {latency_label} ms p50 {lat['p50']:.2f} "
        f"p99 {lat['p99']:.2f} p99.9 {lat['p999']:.2f} max {lat['max']:.2f} | reconnects {r.reconnects}"
    )
    if _producing(latency_label):
        text += f" | errors {r.errors} | pending {r.outstanding} | longest pause {r.longest_pause_ms:.0f} ms"
    return text


@app.command("produce")
def produce(
    topic: str = typer.Argument(..., help="topic name (with -t N: the base of TOPIC-0 .. TOPIC-(N-1))"),
    service_url: str = _URL,
    num_topics: int = _TOPICS,
    rate: float = typer.Option(
        100.0, "--rate", "-r", help="total messages per second (0 = as fast as possible)"
    ),
    size: int = typer.Option(1024, "--size", "-s", help="message size in bytes"),
    duration: float = _DURATION,
    topic_skew: str = typer.Option(
        "uniform", "--topic-skew", help="uniform or zipf: how the rate spreads over topics"
    ),
    topic_zipf: float = typer.Option(1.0, "--topic-zipf-exponent", help="Zipf exponent s of the topic skew"),
    key_skew: str = typer.Option("none", "--key-skew", help="none (no key), uniform or zipf"),
    num_keys: int = typer.Option(1000, "--num-keys", help="distinct keys when --key-skew is set"),
    key_zipf: float = typer.Option(1.0, "--key-zipf-exponent", help="Zipf exponent s of the key skew"),
    max_pending: int = typer.Option(
        1000, "--max-outstanding", "-o", help="pending sends per producer (maxPendingMessages)"
    ),
    send_timeout: float = typer.Option(
        30.0, "--send-timeout", help="seconds before an unacknowledged send fails"
    ),
    seed: int | None = typer.Option(
        None, "--seed", help="seed of the topic and key choice (repeatable runs)"
    ),
    num_messages: int = typer.Option(
        0, "--num-messages", "-m", help="messages to publish in total (0 = until the duration ends)"
    ),
    interval: float = _INTERVAL,
    as_json: bool = _JSON,
) -> None:
    """Publish at a rate over N topics with uniform or Zipf skew; report latency, reconnects, pauses."""
    from brokerlb.perf.runner import ProduceOptions, ProduceRun

    with cli_errors():
        run = ProduceRun(
            ProduceOptions(
                service_url=service_url,
                topic=topic,
                num_topics=num_topics,
                rate=rate,
                size=size,
                duration=duration,
                topic_skew=topic_skew,
                topic_zipf=topic_zipf,
                key_skew=key_skew,
                num_keys=num_keys,
                key_zipf=key_zipf,
                max_pending=max_pending,
                send_timeout=send_timeout,
                seed=seed,
                num_messages=num_messages,
            )
        )
        summary = _run_with_view(
            run, interval, as_json, f"perf produce: {num_topics} topic(s), {rate:g} msg/s", "publish"
        )
    if as_json:
        print_json(summary.to_json())
        return
    s = summary
    lat = s.latency_ms
    console.print(
        f"[bold]produce summary[/bold]: {s.sent:,} sent = {s.acked:,} acked + {s.errored:,} errored"
        f"{'' if s.unaccounted == 0 else f' ([red]{s.unaccounted} unaccounted[/red])'} in {s.seconds:.1f} s "
        f"({s.rate:,.0f} msg/s)\n"
        f"  publish latency ms: p50 {lat['p50']:.2f}  p95 {lat['p95']:.2f}  p99 {lat['p99']:.2f}  "
        f"p99.9 {lat['p999']:.2f}  max {lat['max']:.2f}\n"
        f"  reconnects {s.reconnects} ({s.direct_reconnects} straight to a new owner, {s.lookups} lookups), "
        f"closes {s.closes or '{}'}\n"
        f"  longest publish pause {s.longest_pause.seconds * 1e3:.0f} ms"
        f"{f' on {s.longest_pause.topic}' if s.longest_pause.topic else ''}"
        f"{f'; errors {s.errors}' if s.errors else ''}",
        highlight=False,
    )
    if s.unaccounted:
        raise typer.Exit(1)


@app.command("consume")
def consume(
    topic: str = typer.Argument(..., help="topic name (with -t N: the base of TOPIC-0 .. TOPIC-(N-1))"),
    service_url: str = _URL,
    num_topics: int = _TOPICS,
    subscription: str = typer.Option("sub", "--subscriptions", "-ss", help="subscription name"),
    subscription_type: str = typer.Option(
        "Exclusive", "--subscription-type", "-st", help="Exclusive, Shared, Failover or Key_Shared"
    ),
    receiver_queue_size: int = typer.Option(1000, "--receiver-queue-size", "-q", help="permits per consumer"),
    num_messages: int = typer.Option(
        0, "--num-messages", "-m", help="messages to consume in total (0 = until the duration ends)"
    ),
    duration: float = _DURATION,
    interval: float = _INTERVAL,
    as_json: bool = _JSON,
) -> None:
    """Subscribe to N topics, ack everything; report the rate, end-to-end latency and reconnects."""
    from brokerlb.perf.runner import ConsumeOptions, ConsumeRun

    with cli_errors():
        run = ConsumeRun(
            ConsumeOptions(
                service_url=service_url,
                topic=topic,
                num_topics=num_topics,
                subscription=subscription,
                subscription_type=subscription_type,
                receiver_queue_size=receiver_queue_size,
                duration=duration,
                num_messages=num_messages,
            )
        )
        summary = _run_with_view(
            run, interval, as_json, f"perf consume: {num_topics} topic(s), {subscription_type}", "end-to-end"
        )
    if as_json:
        print_json(summary.to_json())
        return
    s = summary
    lat = s.latency_ms
    console.print(
        f"[bold]consume summary[/bold]: {s.received:,} received in {s.seconds:.1f} s ({s.rate:,.0f} msg/s, "
        f"{s.bytes / 1e6:.1f} MB)\n"
        f"  end-to-end latency ms: p50 {lat['p50']:.2f}  p99 {lat['p99']:.2f}  max {lat['max']:.2f}\n"
        f"  reconnects {s.reconnects}, closes {s.closes or '{}'}",
        highlight=False,
    )
