"""A scripted stand-in for the decision engine, to test the simulator's own mechanics
(ownership moves, delays, failures, conservation) independently of any strategy.

It places bundles round-robin over the brokers whose reports it has read, and sheds,
splits or merges only what a test scripts (merges come with the shedding result, as a
balancing strategy returns them). Scenario-level behaviour is tested with the real engine
in tests/sim/.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Decision:
    label: str = "Success"
    reason: str = "Selected"
    broker: str | None = None
    bundle: str | None = None
    destination: str | None = None
    detail: str = ""
    boundaries: tuple[int, ...] = ()


@dataclass
class Merge:
    bundles: tuple[str, ...]
    label: str = "Success"
    reason: str = "ColdBundles"
    detail: str = ""


@dataclass
class Result:
    decisions: list[Decision] = field(default_factory=list)
    split_decisions: list[Decision] = field(default_factory=list)
    merge_decisions: list[Merge] = field(default_factory=list)

    @property
    def unloads(self) -> list[Decision]:
        return [d for d in self.decisions if d.label == "Success"]

    @property
    def splits(self) -> list[Decision]:
        return [d for d in self.decisions if d.label == "Success"]

    @property
    def merges(self) -> list[Merge]:
        return [d for d in self.merge_decisions if d.label == "Success"]


class ScriptedLeader:
    #: cycle time (ms) -> decisions; shared by every leader a test creates
    sheds: dict[int, list[Decision]] = {}
    splits: dict[int, list[Decision]] = {}
    merges: dict[int, list[Merge]] = {}
    extensible = False
    created: list[str] = []

    def __init__(self, broker_id, config, rng, stored):
        self.config = config
        self.brokers: list[str] = []
        self.next = 0
        self.refreshes = 0
        type(self).created.append(broker_id)

    @classmethod
    def reset(cls, extensible=False):
        cls.sheds, cls.splits, cls.merges, cls.created, cls.extensible = {}, {}, {}, [], extensible

    def refresh(self, now_ms, inputs):
        self.refreshes += 1
        self.brokers = sorted(b for b, report in inputs.reports.items() if report is not None)

    def shed(self, now_ms, inputs):
        return Result(
            self.sheds.pop(now_ms, [Decision("Skip", "Balanced")]),
            merge_decisions=self.merges.pop(now_ms, []),
        )

    def split(self, now_ms, inputs):
        return Result(self.splits.pop(now_ms, []))

    def place(self, now_ms, bundle, inputs):
        if not self.brokers:
            return Decision("Failure", "NoBrokers", bundle=bundle)
        broker = self.brokers[self.next % len(self.brokers)]
        self.next += 1
        return Decision(broker=broker, bundle=bundle)

    def bundle_split(self, parent, children):
        pass

    def bundle_merged(self, parts, merged):
        pass

    def persisted_bundle_data(self):
        return {}
