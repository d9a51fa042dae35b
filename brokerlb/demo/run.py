"""``brokerlb demo``: a standalone cluster balancing real, skewed traffic, watched live; ends by itself.

Timeline (``--duration 55``; with start and stop the run takes about a minute):

* **0 s** -- 3 brokers start on the embedded store with the WebSocket data path on; namespace
  ``public/demo`` with 8 bundles; 160 topics get a real producer and a Shared consumer each
  (:mod:`brokerlb.client`: lookup, then a WebSocket to the owner) and carry Zipf-skewed traffic;
* **6 s after the clients connected** -- *surge*: the producers of the busiest broker's topics send 4x faster. That broker's
  topic rates -- measured on the data path, rolled up into its load report -- climb, and its CPU
  (modelled from its traffic, ``brokerlbHostUsage=traffic``) with them. The leader's
  ThresholdShedder (Pulsar's default; short intervals for the demo) sees it above the average
  and transfers bundles to the least loaded brokers; producers and consumers of those bundles
  are closed with the new owner's URL and reconnect there (PIP-307), re-sending what was not
  acknowledged;
* **60 % of the run** -- *growth*: 160 more topics with producers and consumers; bundles pass
  ``loadBalancerNamespaceBundleMaxTopics`` and the leader splits them (children unloaded and
  placed again: the clients look their topics up again);
* **end** -- a before/after summary: each broker's load at the worst moment after the surge
  and at the end, the spread, moves, splits, and what the clients felt: every send accounted
  for (acked or errored), reconnections, publish latency and the longest publish pause.

What is modelled: each broker's CPU, from the message rates of the topics it serves (three
brokers share this process and its CPU, so measured usage would not tell them apart). The
traffic, the rates, lookups, ownership, load reports, the leader's decisions, transfers and
splits are real.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from brokerlb.demo.traffic import TrafficModel
from brokerlb.loadbalance.cycle import CycleRecord

__all__ = ["DemoOptions", "run_demo", "DEMO_CONFIG"]

#: Pulsar's keys, shortened for a one-minute demo (everything else stays at Pulsar's defaults).
DEMO_CONFIG: dict[str, Any] = {
    "webSocketServiceEnabled": True,
    "statsUpdateFrequencyInSecs": 3,  # topic rates over 3 s (Pulsar: 60 s)
    "loadBalancerSheddingIntervalMinutes": 0.04,  # 2.4 s (Pulsar: 1 min)
    "loadBalancerSheddingGracePeriodMinutes": 0.25,  # 15 s (Pulsar: 30 min)
    "loadBalancerHistoryResourcePercentage": 0.5,  # ThresholdShedder's memory, for 2.4-s cycles (Pulsar: 0.9)
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerReportUpdateThresholdPercentage": 5,  # Pulsar: 10 (new topics alone never trigger a report)
    "loadBalancerHostUsageCheckIntervalMinutes": 0.005,  # 0.3 s
    "loadBalancerResourceQuotaUpdateIntervalMinutes": 0.25,
    "loadBalancerNamespaceBundleMaxTopics": 40,
    "loadBalancerBundleUnloadMinThroughputThreshold": 0,  # the demo's traffic is a few hundred KB/s
    "brokerlbHostUsage": "traffic",
    "brokerlbModelCores": 8,  # usage must stay under 100%: ThresholdShedder ignores terms above it
    "brokerlbModelMsgRatePerCore": 150,  # a few hundred real messages/s look like a loaded cluster
}


@dataclass
class DemoOptions:
    brokers: int = 3
    duration: float = 55.0
    web_port: int = 0
    bundles: int = 8
    topics: int = 160
    seed: int = 42
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Sample:
    at: float
    usage: dict[str, float]
    rate: dict[str, float]
    bundles: dict[str, int]


@dataclass
class _State:
    started: float
    events: list[tuple[float, str]] = field(default_factory=list)
    samples: list[_Sample] = field(default_factory=list)
    phase: str = "starting"
    surge_at: float | None = None
    hot: str | None = None
    moves: int = 0
    splits: int = 0
    clients: str = ""

    def now(self) -> float:
        return time.monotonic() - self.started


async def run_demo(options: DemoOptions, console: Console) -> dict[str, Any]:
    """Run the demo (module docstring); returns the summary."""
    from brokerlb.broker.standalone import StandaloneCluster

    state = _State(time.monotonic())
    # topics on the embedded storage tier (a SQLite directory, as brokerlb standalone), for this run
    data = tempfile.TemporaryDirectory(prefix="brokerlb-demo-")
    cluster = StandaloneCluster(
        options.brokers,
        metadata_store="memory:demo",
        web_port=options.web_port,
        overrides={"brokerlbStorageUrl": f"sqlite:{data.name}", **DEMO_CONFIG, **options.overrides},
    )
    try:
        await cluster.start()

        def on_record(record: CycleRecord) -> None:
            _on_record(state, record)

        for service in cluster.brokers:
            service.leader_tasks.add_listener(on_record)
        await cluster.wait_for_leader()
        return await _scenario(options, console, cluster, TrafficModel(seed=options.seed), state)
    finally:
        await cluster.stop()
        data.cleanup()


class _Traffic:
    """Real producers and consumers of the demo's topics, with the rates of the traffic model."""

    def __init__(self, url: str, model: TrafficModel, seed: int) -> None:
        from brokerlb.client import Client
        from brokerlb.perf.runner import ConsumeOptions, ConsumeRun, ProduceOptions, ProduceRun

        self.model = model
        self.client = Client(url)
        self.rates: dict[str, float] = {}
        self._produce_options = ProduceOptions(
            url, "unused", size=model.message_size, seed=seed, max_pending=1000
        )
        self._consume_options = ConsumeOptions(url, "unused", subscription="demo", subscription_type="Shared")
        self._ProduceRun, self._ConsumeRun = ProduceRun, ConsumeRun
        self.produce: Any = None
        self.consume: Any = None
        self._tasks: list[asyncio.Task[Any]] = []

    async def start(self, rates: dict[str, float]) -> None:
        topics = list(rates)
        self.rates = dict(rates)
        self._produce_options.rate = sum(rates.values())
        self.consume = self._ConsumeRun(self._consume_options, client=self.client, topics=topics)
        self.produce = self._ProduceRun(
            self._produce_options, client=self.client, topics=topics, weights=[rates[t] for t in topics]
        )
        await self.consume.start()
        await self.produce.start()
        self._tasks = [asyncio.create_task(self.produce.run()), asyncio.create_task(self.consume.run())]

    def set_rates(self, rates: dict[str, float]) -> None:
        self.rates = dict(rates)
        self.produce.set_weights([rates[t] for t in self.produce.topics], sum(rates.values()))

    async def add(self, rates: dict[str, float]) -> None:
        topics = list(rates)
        await self.consume.add_topics(topics)
        self.rates.update(rates)
        await self.produce.add_topics(
            topics, [self.rates[t] for t in self.produce.topics + topics], sum(self.rates.values())
        )

    def brokers(self) -> dict[str, str | None]:
        """Topic → web URL of the broker its producer is connected to now."""
        return {t: self.produce.broker_of(t) for t in self.produce.topics}

    def line(self) -> str:
        p = self.produce
        if p is None:
            return "clients: connecting"
        reconnects = sum(x.stats.reconnects for x in p.producers) + sum(
            c.stats.reconnects for c in self.consume.consumers
        )
        lat = p.latency.summary_ms()
        return (
            f"clients: {len(p.producers)} producers + {len(self.consume.consumers)} consumers, "
            f"{p.acked:,} acked / {p.errored} errored of {p.sent:,} sent, publish p50 {lat['p50']:.1f} ms "
            f"p99 {lat['p99']:.1f} ms, {reconnects} reconnects, longest publish pause "
            f"{p.pauses.longest.seconds * 1e3:.0f} ms"
        )

    async def stop(self) -> tuple[Any, Any]:
        self.produce.stop()
        self.consume.stop()
        produced, consumed = await asyncio.gather(*self._tasks)
        await self.client.close()
        return produced, consumed


async def _scenario(
    options: DemoOptions, console: Console, cluster: Any, model: TrafficModel, state: _State
) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient

    ns = "public/demo"
    async with AsyncAdminClient(cluster.brokers[0].url) as admin:
        await admin.create_namespace(ns, num_bundles=options.bundles)
    topics = [f"persistent://{ns}/orders-{i}" for i in range(options.topics)]
    rates = model.rates(topics)
    traffic = _Traffic(cluster.brokers[0].url, model, options.seed)
    state.phase = "connecting"
    await traffic.start(rates)
    state.events.append(
        (
            state.now(),
            f"{len(topics)} topics: producers and consumers connected to their owners; "
            f"{model.total_rate:g} msg/s of real traffic",
        )
    )
    state.phase = "steady"
    surge_at = state.now() + 6.0
    growth_at = max(surge_at + 12.0, options.duration * 0.6)
    live = console.is_terminal
    last_print = 0.0
    summary: dict[str, Any] = {}
    growing: asyncio.Task[None] | None = None
    try:
        with Live(console=console, refresh_per_second=4, transient=False) if live else _NoLive() as view:
            while (t := state.now()) < options.duration:
                if state.surge_at is None and t >= surge_at:
                    _surge(state, cluster, traffic, model)
                if state.phase == "surge" and t >= growth_at:
                    growing = asyncio.create_task(_growth(state, traffic, model, ns, options.topics))
                sample = _sample(cluster, state)
                state.samples.append(sample)
                state.clients = traffic.line()
                if live:
                    view.update(_render(cluster, state, sample, options))
                elif t - last_print >= 5 or t < 0.6:
                    last_print = t
                    _print_line(console, state, sample)
                await asyncio.sleep(0.5)
    finally:
        if growing is not None:
            await growing
        produced, consumed = await traffic.stop()
        summary = _summary(cluster, state, produced, consumed)
    _print_summary(console, summary)
    return summary


def _on_record(state: _State, record: CycleRecord) -> None:
    """The leader's moves and splits as they happen (what the record says was carried out)."""
    for move, done in zip(record.moves, record.moves_done, strict=True):
        kind = "transfer" if move.transfer else "unload"
        where = f"{move.source} -> {move.destination}" if move.destination else f"from {move.source}"
        if done:
            state.moves += 1
            state.events.append((state.now(), f"{kind} {move.bundle} {where} ({move.reason})"))
        else:
            state.events.append((state.now(), f"failed {kind} of {move.bundle} {where}"))
    for decision, done in zip(record.splits, record.splits_done, strict=True):
        if done:
            state.splits += 1
        # the detail names the threshold the bundle passed
        what = "split" if done else "failed split of"
        state.events.append((state.now(), f"{what} {decision.bundle} ({decision.detail})"))
    for merge, done in zip(record.merges, record.merges_done, strict=True):
        what = "merge" if done else "failed merge of"
        state.events.append((state.now(), f"{what} {', '.join(merge.bundles)} ({merge.reason})"))


def _surge(state: _State, cluster: Any, traffic: _Traffic, model: TrafficModel) -> None:
    ids = {b.url: b.broker_id for b in cluster.brokers}
    placement = {t: ids.get(url or "") for t, url in traffic.brokers().items()}
    load: dict[str, float] = {}
    for topic, broker in placement.items():
        if broker is not None:
            load[broker] = load.get(broker, 0.0) + traffic.rates.get(topic, 0.0)
    hot = max(sorted(load), key=lambda b: load[b])
    traffic.set_rates(model.surge(traffic.rates, {t for t, b in placement.items() if b == hot}))
    state.hot, state.surge_at, state.phase = hot, state.now(), "surge"
    state.events.append(
        (state.now(), f"SURGE: the producers of every topic on {hot} send {model.surge_factor:g}x faster")
    )


#: The growth phase adds its topics in batches (clients arriving over a few seconds, not all at once).
GROWTH_BATCH = 16
GROWTH_PAUSE = 0.5


async def _growth(state: _State, traffic: _Traffic, model: TrafficModel, ns: str, count: int) -> None:
    state.phase = "growth"
    state.events.append(
        (
            state.now(),
            f"GROWTH: {count} new topics with producers and consumers, "
            f"{GROWTH_BATCH} every {GROWTH_PAUSE:g} s (bundles pass "
            f"loadBalancerNamespaceBundleMaxTopics)",
        )
    )
    for start in range(0, count, GROWTH_BATCH):
        batch = range(start, min(count, start + GROWTH_BATCH))
        await traffic.add({f"persistent://{ns}/events-{i}": model.new_topic_rate for i in batch})
        await asyncio.sleep(GROWTH_PAUSE)


def _sample(cluster: Any, state: _State) -> _Sample:
    usage, rate, bundles = {}, {}, {}
    for b in cluster.brokers:
        data = b.reporter.local_data
        usage[b.broker_id] = data.max_resource_usage()
        rate[b.broker_id] = data.msg_rate_in + data.msg_rate_out
        bundles[b.broker_id] = sum(1 for name in b.channel.owned() if name.startswith("public/"))
    return _Sample(state.now(), usage, rate, bundles)


def _render(cluster: Any, state: _State, sample: _Sample, options: DemoOptions) -> Group:
    leader = cluster.leader()
    table = Table(
        title=f"brokerlb demo -- {len(cluster.brokers)} brokers, "
        f"{leader.conf.loadBalancerLoadSheddingStrategy.rsplit('.', 1)[-1] if leader else '?'}, "
        f"t={sample.at:5.1f}/{options.duration:.0f} s, phase: {state.phase}"
    )
    for col, justify in (
        ("broker", "left"),
        ("bundles", "right"),
        ("msg/s in+out (measured)", "right"),
        ("cpu (modelled)", "left"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for b in cluster.brokers:
        bid = b.broker_id
        mark = " (leader)" if leader is b else ""
        hot = " HOT" if bid == state.hot else ""
        pct = sample.usage[bid] * 100
        bar = "#" * min(40, int(pct / 2.5))
        table.add_row(
            f"{bid}{mark}{hot}", str(sample.bundles[bid]), f"{sample.rate[bid]:,.0f}", f"{pct:5.1f}% {bar}"
        )
    events = Text("\n".join(f"  {t:5.1f} s  {what}" for t, what in state.events[-8:]) or "  (none yet)")
    note = Text(
        "real traffic over the WebSocket data path; each broker's CPU is modelled from the rates it "
        "measures (three brokers share this process)",
        style="dim",
    )
    return Group(table, Text(state.clients), Text("recent events:", style="bold"), events, note)


def _print_line(console: Console, state: _State, sample: _Sample) -> None:
    loads = "  ".join(
        f"{b}: {u * 100:5.1f}% ({sample.bundles[b]} bundles)" for b, u in sorted(sample.usage.items())
    )
    console.print(f"t={sample.at:5.1f}s [{state.phase}] {loads}", highlight=False)
    if state.clients:
        console.print(f"          {state.clients}", highlight=False)
    for at, what in state.events:
        if at > sample.at - 5:
            console.print(f"          {at:5.1f}s {what}", highlight=False)


def _summary(cluster: Any, state: _State, produced: Any, consumed: Any) -> dict[str, Any]:
    after_surge = [s for s in state.samples if state.surge_at is not None and s.at >= state.surge_at]
    worst = max(after_surge or state.samples, key=lambda s: max(s.usage.values()) - min(s.usage.values()))
    final = _average(state.samples[-6:])  # the last ~3 s: one sample may catch clients mid-reconnect
    leader = cluster.leader()

    def spread(sample: _Sample) -> float:
        return statistics.pstdev(sample.usage.values()) if len(sample.usage) > 1 else 0.0

    return {
        "brokers": sorted(final.usage),
        "hot_broker": state.hot,
        "before": {
            "at": round(worst.at, 1),
            "usage": {b: round(u, 3) for b, u in worst.usage.items()},
            "bundles": worst.bundles,
            "stddev": round(spread(worst), 3),
        },
        "after": {
            "at": round(final.at, 1),
            "usage": {b: round(u, 3) for b, u in final.usage.items()},
            "bundles": final.bundles,
            "stddev": round(spread(final), 3),
        },
        "transfers": state.moves,
        "splits": state.splits,
        "client_reconnects": produced.reconnects + consumed.reconnects,
        "produce": produced.to_json(),
        "consume": consumed.to_json(),
        "leader": leader.broker_id if leader else None,
        "synthetic_traffic": False,
    }


def _print_summary(console: Console, summary: dict[str, Any]) -> None:
    table = Table(title="before (worst moment after the surge) / after (mean of the last 3 s)")
    for col in ("broker", "cpu before", "cpu after", "bundles before", "bundles after"):
        table.add_column(col, justify="right" if col != "broker" else "left")
    before, after = summary["before"], summary["after"]
    for b in summary["brokers"]:
        mark = " (surged)" if b == summary["hot_broker"] else ""
        table.add_row(
            f"{b}{mark}",
            f"{before['usage'][b] * 100:.1f}%",
            f"{after['usage'][b] * 100:.1f}%",
            str(before["bundles"][b]),
            str(after["bundles"][b]),
        )
    console.print(table)
    console.print(
        f"load spread (std-dev of max usage): {before['stddev'] * 100:.1f} points at t={before['at']} s "
        f"-> {after['stddev'] * 100:.1f} points at t={after['at']} s",
        highlight=False,
    )
    console.print(
        f"transfers: {summary['transfers']}, splits: {summary['splits']}, "
        f"client reconnections: {summary['client_reconnects']}, leader: {summary['leader']}",
        highlight=False,
    )
    p, c = summary["produce"], summary["consume"]
    lat = p["latencyMs"]
    lost = "" if p["unaccounted"] == 0 else f" ({p['unaccounted']} UNACCOUNTED)"
    console.print(
        f"clients: {p['sent']:,} sent = {p['acked']:,} acked + {p['errored']} errored{lost}; "
        f"publish latency p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms; longest publish pause "
        f"{p['longestPauseMs']:.0f} ms; closes {p['closes']}; consumers received {c['received']:,}",
        highlight=False,
    )
    console.print(
        "(real traffic over the data path; each broker's CPU modelled from its measured rates)", style="dim"
    )


def _average(samples: list[_Sample]) -> _Sample:
    brokers = samples[-1].usage.keys()
    return _Sample(
        samples[-1].at,
        {b: statistics.fmean(s.usage.get(b, 0.0) for s in samples) for b in brokers},
        {b: statistics.fmean(s.rate.get(b, 0.0) for s in samples) for b in brokers},
        dict(samples[-1].bundles),
    )


class _NoLive:
    def __enter__(self) -> _NoLive:
        return self

    def update(self, renderable: Any) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
