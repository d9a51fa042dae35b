"""A scripted stand-in for the strategies, to test the simulator's own mechanics
(ownership moves, delays, failures, conservation) independently of any strategy.

It is the real :class:`~brokerlb.loadbalance.leader.Leader` -- so moves, transfers, splits and
merges go through the same cycle and the same transfer rule as the live broker's -- with its
decisions scripted: it places bundles round-robin over the brokers whose reports it has read,
and sheds, splits or merges only what a test scripts (merges come with the shedding result, as
a balancing strategy returns them). Scenario-level behaviour is tested with the real
strategies in tests/sim/.
"""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.loadbalance.decisions import (
    Label,
    MergeDecision,
    PlacementDecision,
    Reason,
    SheddingResult,
    SplitDecision,
    SplitResult,
    UnloadDecision,
)
from brokerlb.loadbalance.leader import Leader, Move


@dataclass
class Decision:
    label: str = "Success"
    reason: str = "Selected"
    broker: str | None = None
    bundle: str | None = None
    destination: str | None = None
    detail: str = ""
    boundaries: tuple[int, ...] = ()

    def unload(self) -> UnloadDecision:
        return UnloadDecision(
            self.broker, self.bundle, self.destination, Label(self.label), Reason(self.reason), self.detail
        )

    def split(self) -> SplitDecision:
        return SplitDecision(self.bundle or "", self.boundaries, Label(self.label), Reason(self.reason))


@dataclass
class Merge:
    bundles: tuple[str, ...]
    label: str = "Success"
    reason: str = "ColdBundles"
    detail: str = ""

    def merge(self) -> MergeDecision:
        return MergeDecision(self.bundles, Label(self.label), Reason(self.reason), self.detail)


class ScriptedLeader(Leader):
    #: cycle time (ms) -> decisions; shared by every leader a test creates
    sheds: dict[int, list[Decision]] = {}
    splits: dict[int, list[Decision]] = {}
    merges: dict[int, list[Merge]] = {}
    created: list[str] = []

    def __init__(self, broker_id, config, rng, stored):
        super().__init__(broker_id, config, rng=rng, stored_bundle_data=stored)
        self.brokers: list[str] = []
        self.next = 0
        type(self).created.append(broker_id)

    @classmethod
    def reset(cls, extensible=False):
        cls.sheds, cls.splits, cls.merges, cls.created = {}, {}, {}, []

    def refresh(self, now_ms, inputs, *, stored=None):
        self.refreshes += 1
        self.brokers = sorted(b for b, report in inputs.reports.items() if report is not None)

    def shed(self, now_ms, inputs):
        scripted = self.sheds.pop(now_ms, [Decision("Skip", "Balanced")])
        result = SheddingResult.of(
            (d.unload() for d in scripted), merges=(m.merge() for m in self.merges.pop(now_ms, []))
        )
        moves = [
            Move(d.bundle or "", d.broker or "", d.destination, self.transfers(d.destination), d)
            for d in result.unloads
        ]
        return result, moves

    def moves_executed(self, result, executed, now_ms):
        return len(executed)

    def split_check(self, now_ms, inputs):
        return SplitResult.of(d.split() for d in self.splits.pop(now_ms, []))

    def place(self, now_ms, bundle, inputs, *, non_persistent=False):
        if not self.brokers:
            return PlacementDecision(bundle, None, (), Reason.NO_BROKERS)
        broker = self.brokers[self.next % len(self.brokers)]
        self.next += 1
        return PlacementDecision(bundle, broker, (broker,))
