"""Views for the balancer's tests: brokers whose cpu is exactly their bundles' share."""

from __future__ import annotations

from typing import Any

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, SheddingResult, StrategyState, new_rng
from brokerlb.loadbalance.shedding.loop import record_unloads, run_shedding_cycle
from brokerlb.model import ResourceUsage
from brokerlb.testing import broker, bundle_stats, load_data

MB = 1024 * 1024
NOW = 1_700_000_000_000


def node(name: str, bundles: dict[str, float], *, cores: float = 1.0, topics: int = 10, **kwargs: Any) -> Any:
    """A broker whose cpu (percent of ``cores`` x 100) is the sum of its bundles' points; a
    bundle of ``v`` points carries ``v`` MB/s (half in, half out) and ``v x 100`` msg/s."""
    stats = {
        b: bundle_stats(
            msg_throughput_in=v * MB / 2,
            msg_throughput_out=v * MB / 2,
            msg_rate_in=v * 50,
            msg_rate_out=v * 50,
            topics=topics,
        )
        for b, v in bundles.items()
    }
    data = broker(name, bundles=stats, **kwargs)
    data.cpu = ResourceUsage(sum(bundles.values()), 100.0 * cores)
    return data


def cluster(
    brokers: list[Any], *, now: int = NOW, recently: dict[str, int] | None = None, **conf: Any
) -> ClusterView:
    return ClusterView(
        config=ServiceConfig(**conf), now_ms=now, load_data=load_data(brokers, recently_unloaded=recently)
    )


def watched(since: int = NOW - 3_600_000) -> StrategyState:
    """A balancer state whose leadership has watched the ring since ``since`` (an hour before
    ``NOW``): past the new leader's wait before merges."""
    from brokerlb.loadbalance.balancer.memory import MEMORY_KEY, BalancerMemory

    state = StrategyState()
    state.get(MEMORY_KEY, BalancerMemory).started_ms = since
    return state


def cycle(
    view: ClusterView, state: StrategyState | None = None, seed: int = 0, *, carried_out: bool = True
) -> SheddingResult:
    """One shedding cycle; ``carried_out``: its moves are recorded in the view's load data as the
    leader records the moves it carried out (``recentlyUnloadedBundles``)."""
    result = run_shedding_cycle(
        view, state if state is not None else StrategyState(), new_rng(seed), strategy="brokerlb"
    )
    if carried_out:
        record_unloads(result, view.now_ms, view.load_data.recently_unloaded_bundles)
    return result


def moves(result: SheddingResult) -> list[tuple[str | None, str | None, str | None]]:
    return [(d.broker, d.bundle, d.destination) for d in result.unloads]
