"""Small builders for shedding tests (views from brokerlb.testing builders)."""

from __future__ import annotations

from typing import Any

from brokerlb.config import ServiceConfig
from brokerlb.loadbalance import ClusterView, SheddingResult, StrategyState, new_rng
from brokerlb.loadbalance.registry import StrategyKind, create
from brokerlb.testing import broker, bundle_stats, load_data

MB = 1024 * 1024
NOW = 1_700_000_000_000


def view(
    brokers: list[Any], *, recently: dict[str, int] | None = None, now: int = NOW, **conf: Any
) -> ClusterView:
    return ClusterView(
        config=ServiceConfig(**conf), now_ms=now, load_data=load_data(brokers, recently_unloaded=recently)
    )


def heavy(name: str, cpu: float, bundles: dict[str, float], **kwargs: Any) -> Any:
    """A broker whose bundles carry ``MB/s`` of throughput each (in = out = half)."""
    stats = {
        b: bundle_stats(
            msg_throughput_in=v * MB / 2,
            msg_throughput_out=v * MB / 2,
            msg_rate_in=v * 100,
            msg_rate_out=v * 100,
        )
        for b, v in bundles.items()
    }
    return broker(name, cpu=cpu, bundles=stats, **kwargs)


def shed(strategy: str, v: ClusterView, state: StrategyState | None = None, seed: int = 0) -> SheddingResult:
    return create(StrategyKind.SHEDDING, strategy).find_bundles_for_unloading(
        v, state if state is not None else StrategyState(), new_rng(seed)
    )


def unloads(result: SheddingResult) -> list[tuple[str | None, str | None]]:
    return [(d.broker, d.bundle) for d in result.unloads]


def skip_reason(result: SheddingResult) -> str:
    (skip,) = [d for d in result.decisions if not d.is_unload]
    return skip.reason.value
