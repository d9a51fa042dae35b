"""``brokerlb demo``: a standalone cluster balancing skewed traffic, watched live; ends by itself.

Timeline (``--duration 55``; with start and stop the run takes about a minute):

* **0 s** -- 3 brokers start on the embedded store; namespace ``public/demo`` with 8 bundles;
  160 topics are looked up over HTTP and carry Zipf-skewed traffic;
* **8 s** -- *surge*: the topics of the busiest broker get 6x their traffic. The leader's
  ThresholdShedder (Pulsar's default; short intervals for the demo) sees that broker above
  the average and transfers bundles to the least loaded ones (unload with a destination);
  the clients follow their bundles;
* **60 % of the run** -- *growth*: 160 more topics appear; bundles pass
  ``loadBalancerNamespaceBundleMaxTopics`` and the leader splits them (children unloaded and
  placed again);
* **end** -- a before/after summary: each broker's load at the worst moment after the surge
  and at the end, the spread, moves, splits, client reconnections.

Traffic is **synthetic**: until the data path (WebSocket produce/consume and its perf tool)
exists, message rates are injected into the brokers' topic stats, and each broker's CPU is
modelled from its traffic (``brokerlbHostUsage=traffic``). Everything else -- lookups,
ownership, load reports, the leader's decisions, transfers, splits -- is the real system.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from brokerlb.demo.traffic import TrafficModel

__all__ = ["DemoOptions", "run_demo", "DEMO_CONFIG"]

#: Pulsar's keys, shortened for a one-minute demo (everything else stays at Pulsar's defaults).
DEMO_CONFIG: dict[str, Any] = {
    "loadBalancerSheddingIntervalMinutes": 0.04,         # 2.4 s (Pulsar: 1 min)
    "loadBalancerSheddingGracePeriodMinutes": 0.25,      # 15 s (Pulsar: 30 min)
    "loadBalancerReportUpdateMinIntervalMillis": 500,
    "loadBalancerReportUpdateThresholdPercentage": 5,  # Pulsar: 10 (new topics alone never trigger a report)
    "loadBalancerHostUsageCheckIntervalMinutes": 0.005,  # 0.3 s
    "loadBalancerResourceQuotaUpdateIntervalMinutes": 0.25,
    "loadBalancerNamespaceBundleMaxTopics": 40,
    "loadBalancerBundleUnloadMinThroughputThreshold": 1,
    "brokerlbHostUsage": "traffic",
    "brokerlbModelCores": 8,  # usage must stay under 100%: ThresholdShedder ignores terms above it
    "brokerlbModelMsgRatePerCore": 20_000,
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

    def now(self) -> float:
        return time.monotonic() - self.started


async def run_demo(options: DemoOptions, console: Console) -> dict[str, Any]:
    """Run the demo (module docstring); returns the summary."""
    from brokerlb.broker.standalone import StandaloneCluster
    from brokerlb.broker.synthetic import SyntheticClients

    state = _State(time.monotonic())
    cluster = StandaloneCluster(options.brokers, metadata_store="memory:demo", web_port=options.web_port,
                                overrides={**DEMO_CONFIG, **options.overrides})
    traffic = TrafficModel(seed=options.seed)
    await cluster.start()
    clients = SyntheticClients(cluster.brokers)
    try:
        for service in cluster.brokers:
            service.leader_tasks.add_listener(lambda event, s=state: _on_event(s, event))
        await cluster.wait_for_leader()
        return await _scenario(options, console, cluster, clients, traffic, state)
    finally:
        await clients.close()
        await cluster.stop()


async def _scenario(options: DemoOptions, console: Console, cluster: Any, clients: Any,
                    traffic: TrafficModel, state: _State) -> dict[str, Any]:
    from brokerlb.admin import AsyncAdminClient

    ns = "public/demo"
    async with AsyncAdminClient(cluster.brokers[0].url) as admin:
        await admin.create_namespace(ns, num_bundles=options.bundles)
    topics = [f"persistent://{ns}/orders-{i}" for i in range(options.topics)]
    rates = traffic.rates(topics)
    state.phase = "lookups"
    await clients.add_many({t: traffic.stats(r) for t, r in rates.items()})
    state.events.append((state.now(), f"{len(topics)} topics looked up and attached; synthetic traffic on"))
    state.phase = "steady"
    surge_at, growth_at = 8.0, max(20.0, options.duration * 0.6)
    live = console.is_terminal
    last_print = 0.0
    with Live(console=console, refresh_per_second=4, transient=False) if live else _NoLive() as view:
        while (t := state.now()) < options.duration:
            if state.surge_at is None and t >= surge_at:
                _surge(state, clients, traffic, rates)
            if state.phase == "surge" and t >= growth_at:
                await _growth(state, clients, traffic, ns, options.topics)
            sample = _sample(cluster, state)
            state.samples.append(sample)
            if live:
                view.update(_render(cluster, state, sample, options))
            elif t - last_print >= 5 or t < 0.6:
                last_print = t
                _print_line(console, state, sample)
            await asyncio.sleep(0.5)
    summary = _summary(cluster, clients, state)
    _print_summary(console, summary)
    return summary


def _on_event(state: _State, event: Any) -> None:
    if event.kind == "unload":
        state.moves += 1
        what = f"transfer {event.bundle} {event.source} -> {event.destination} ({event.reason})"
    elif event.kind == "split":
        state.splits += 1
        what = f"split {event.bundle} on {event.source} ({event.reason}: {event.detail})"
    elif event.kind == "failed":
        what = f"failed {event.reason} of {event.bundle}: {event.detail}"
    else:
        return
    state.events.append((state.now(), what))


def _surge(state: _State, clients: Any, traffic: TrafficModel, rates: dict[str, float]) -> None:
    placement = clients.placement()
    load: dict[str, float] = {}
    for topic, broker in placement.items():
        if broker is not None:
            load[broker] = load.get(broker, 0.0) + rates.get(topic, 0.0)
    hot = max(sorted(load), key=lambda b: load[b])
    for topic, broker in placement.items():
        if broker == hot and topic in rates:
            clients.set_stats(topic, traffic.stats(rates[topic] * traffic.surge_factor))
    state.hot, state.surge_at, state.phase = hot, state.now(), "surge"
    state.events.append((state.now(), f"SURGE: traffic of every topic on {hot} x{traffic.surge_factor:g}"))


async def _growth(state: _State, clients: Any, traffic: TrafficModel, ns: str, count: int) -> None:
    state.phase = "growth"
    new = {f"persistent://{ns}/events-{i}": traffic.stats(40.0) for i in range(count)}
    state.events.append((state.now(), f"GROWTH: {count} new topics (bundles pass "
                                      f"loadBalancerNamespaceBundleMaxTopics)"))
    await clients.add_many(new)


def _sample(cluster: Any, state: _State) -> _Sample:
    usage, rate, bundles = {}, {}, {}
    for b in cluster.brokers:
        data = b.reporter.local_data
        usage[b.broker_id] = data.max_resource_usage()
        rate[b.broker_id] = data.msg_rate_in + data.msg_rate_out
        bundles[b.broker_id] = sum(1 for name in b.ownership.owned_bundles() if name.startswith("public/"))
    return _Sample(state.now(), usage, rate, bundles)


def _render(cluster: Any, state: _State, sample: _Sample, options: DemoOptions) -> Group:
    leader = cluster.leader()
    table = Table(title=f"brokerlb demo -- {len(cluster.brokers)} brokers, "
                        f"{leader.conf.loadBalancerLoadSheddingStrategy.rsplit('.', 1)[-1] if leader else '?'}, "
                        f"t={sample.at:5.1f}/{options.duration:.0f} s, phase: {state.phase}")
    for col, justify in (("broker", "left"), ("bundles", "right"), ("msg/s in+out", "right"),
                         ("cpu (modelled)", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for b in cluster.brokers:
        bid = b.broker_id
        mark = " (leader)" if leader is b else ""
        hot = " HOT" if bid == state.hot else ""
        pct = sample.usage[bid] * 100
        bar = "#" * min(40, int(pct / 2.5))
        table.add_row(f"{bid}{mark}{hot}", str(sample.bundles[bid]), f"{sample.rate[bid]:,.0f}",
                      f"{pct:5.1f}% {bar}")
    events = Text("\n".join(f"  {t:5.1f} s  {what}" for t, what in state.events[-8:]) or "  (none yet)")
    note = Text("traffic is synthetic (injected into the brokers' topic stats; the data path is not "
                "built yet) -- lookups, ownership, reports and the leader's decisions are real", style="dim")
    return Group(table, Text("recent events:", style="bold"), events, note)


def _print_line(console: Console, state: _State, sample: _Sample) -> None:
    loads = "  ".join(f"{b}: {u * 100:5.1f}% ({sample.bundles[b]} bundles)" for b, u in sorted(sample.usage.items()))
    console.print(f"t={sample.at:5.1f}s [{state.phase}] {loads}", highlight=False)
    for at, what in state.events:
        if at > sample.at - 5:
            console.print(f"          {at:5.1f}s {what}", highlight=False)


def _summary(cluster: Any, clients: Any, state: _State) -> dict[str, Any]:
    after_surge = [s for s in state.samples if state.surge_at is not None and s.at >= state.surge_at]
    worst = max(after_surge or state.samples, key=lambda s: max(s.usage.values()) - min(s.usage.values()))
    final = _average(state.samples[-6:])  # the last ~3 s: one sample may catch clients mid-reconnect
    leader = cluster.leader()

    def spread(sample: _Sample) -> float:
        return statistics.pstdev(sample.usage.values()) if len(sample.usage) > 1 else 0.0

    return {
        "brokers": sorted(final.usage),
        "hot_broker": state.hot,
        "before": {"at": round(worst.at, 1), "usage": {b: round(u, 3) for b, u in worst.usage.items()},
                   "bundles": worst.bundles, "stddev": round(spread(worst), 3)},
        "after": {"at": round(final.at, 1), "usage": {b: round(u, 3) for b, u in final.usage.items()},
                  "bundles": final.bundles, "stddev": round(spread(final), 3)},
        "transfers": state.moves,
        "splits": state.splits,
        "client_reconnects": clients.reconnects,
        "leader": leader.broker_id if leader else None,
        "synthetic_traffic": True,
    }


def _print_summary(console: Console, summary: dict[str, Any]) -> None:
    table = Table(title="before (worst moment after the surge) / after (mean of the last 3 s)")
    for col in ("broker", "cpu before", "cpu after", "bundles before", "bundles after"):
        table.add_column(col, justify="right" if col != "broker" else "left")
    before, after = summary["before"], summary["after"]
    for b in summary["brokers"]:
        mark = " (surged)" if b == summary["hot_broker"] else ""
        table.add_row(f"{b}{mark}", f"{before['usage'][b] * 100:.1f}%", f"{after['usage'][b] * 100:.1f}%",
                      str(before["bundles"][b]), str(after["bundles"][b]))
    console.print(table)
    console.print(f"load spread (std-dev of max usage): {before['stddev'] * 100:.1f} points at t={before['at']} s "
                  f"-> {after['stddev'] * 100:.1f} points at t={after['at']} s", highlight=False)
    console.print(f"transfers: {summary['transfers']}, splits: {summary['splits']}, "
                  f"client reconnections: {summary['client_reconnects']}, leader: {summary['leader']}",
                  highlight=False)
    console.print("(traffic was synthetic: injected into the brokers' topic stats; host usage modelled from it)",
                  style="dim")


def _average(samples: list[_Sample]) -> _Sample:
    brokers = samples[-1].usage.keys()
    return _Sample(samples[-1].at, {b: statistics.fmean(s.usage.get(b, 0.0) for s in samples) for b in brokers},
                   {b: statistics.fmean(s.rate.get(b, 0.0) for s in samples) for b in brokers},
                   dict(samples[-1].bundles))


class _NoLive:
    def __enter__(self) -> _NoLive:
        return self

    def __exit__(self, *exc: object) -> None:
        return None
