"""A broker's ownership machine shell: which instructions it carries out, the watchdog, refusals."""

from __future__ import annotations

import pytest

from brokerlb.broker.bundle_ownership import BundleOwnership, transition_json
from brokerlb.clock import ManualClock
from brokerlb.errors import ServiceUnavailableError
from brokerlb.ownership import (
    AcquireOwnership,
    Assign,
    AssignmentDone,
    CloseBundle,
    DisconnectClients,
    ForceRelease,
    OwnerChanged,
    OwnershipMachine,
    ReleaseDone,
    Tick,
    Unload,
)

B = "t/ns/0x00000000_0xffffffff"


class Executor:
    """Carries out what it is told; ``stuck`` instructions never report their outcome."""

    def __init__(self, stuck: tuple[type, ...] = ()) -> None:
        self.done: list = []
        self.stuck = stuck
        self.at = 1_000  # outcomes come later than the events the tests feed

    def _later(self) -> int:
        self.at += 1
        return self.at

    async def execute(self, instruction):
        self.done.append(instruction)
        if isinstance(instruction, self.stuck):
            return []
        if isinstance(instruction, AcquireOwnership):
            return [
                AssignmentDone(
                    bundle=instruction.bundle, broker=instruction.broker, stimulus_id="x", at_ms=self._later()
                )
            ]
        if isinstance(instruction, CloseBundle):
            return [ReleaseDone(bundle=instruction.bundle, stimulus_id="x", at_ms=self._later())]
        return []


def states(executor: Executor, clock: ManualClock | None = None) -> BundleOwnership:
    s = BundleOwnership("b1", OwnershipMachine(in_flight_timeout_ms=30_000), clock or ManualClock())
    s.bind(executor)
    return s


async def test_a_transfer_runs_to_its_end_through_the_executor() -> None:
    executor = Executor()
    own = states(executor)
    await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-1", at_ms=0))
    await own.handle(Unload(bundle=B, to="b2", stimulus_id="transfer-1", at_ms=10))
    kinds = [type(i).__name__ for i in executor.done]
    # the source closes, hands over to b2 (the destination's take is the source's job), then
    # disconnects its clients towards b2; OwnerChanged is nobody's instruction here
    assert kinds == ["AcquireOwnership", "CloseBundle", "AcquireOwnership", "DisconnectClients"]
    assert executor.done[2].broker == "b2" and executor.done[3] == DisconnectClients(
        bundle=B, broker="b1", redirect_to="b2", stimulus_id="x"
    )
    assert own.machine.owner(B) == "b2"
    assert not any(isinstance(i, OwnerChanged) for i in executor.done)
    lines = [transition_json(t, "b1") for t in own.story(B)]
    assert [(t["from"], t["to"]) for t in lines][-2:] == [("Releasing", "Assigning"), ("Assigning", "Owned")]
    assert all(t["recordedBy"] == "b1" for t in lines)


async def test_the_watchdog_forces_a_release_that_never_finished() -> None:
    clock = ManualClock(0)
    executor = Executor(stuck=(CloseBundle,))
    own = states(executor, clock)
    await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-1", at_ms=0))
    await own.handle(Unload(bundle=B, stimulus_id="unload-1", at_ms=0))
    await own.handle(Tick(stimulus_id="tick-1", at_ms=29_999))
    assert not any(isinstance(i, ForceRelease) for i in executor.done)
    await own.handle(Tick(stimulus_id="tick-2", at_ms=30_000))
    assert isinstance(executor.done[-1], ForceRelease) and executor.done[-1].broker == "b1"
    assert str(own.machine.state(B)) == "Free" and own.story(B)[-1].who == "watchdog"


async def test_an_event_the_machine_refuses_is_a_retriable_error_and_changes_nothing() -> None:
    own = states(Executor(stuck=(CloseBundle,)))
    await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-1", at_ms=0))
    await own.handle(Unload(bundle=B, stimulus_id="unload-1", at_ms=1))
    before = own.machine.records()
    with pytest.raises(ServiceUnavailableError, match="Releasing") as error:
        await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-2", at_ms=2))
    assert error.value.retriable and own.machine.records() == before


async def test_the_watchdog_ticks_on_the_clock() -> None:
    clock = ManualClock(0)
    own = states(Executor(stuck=(CloseBundle,)), clock)
    await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-1", at_ms=0))
    await own.handle(Unload(bundle=B, stimulus_id="unload-1", at_ms=0))
    import asyncio

    task = asyncio.create_task(own.run_watchdog())
    try:
        await clock.run_until(lambda: str(own.machine.state(B)) == "Free", within=60)
        assert clock.now_ms() >= 30_000
    finally:
        task.cancel()


class SteppingClock(ManualClock):
    """A ManualClock whose wall clock can be stepped (an NTP correction); monotonic time is not."""

    def __init__(self, start_ms: int = 0) -> None:
        super().__init__(start_ms)
        self.step_ms = 0

    def now_ms(self) -> int:
        return super().now_ms() + self.step_ms


async def test_a_wall_clock_step_back_does_not_hold_a_release_past_the_watchdog_bound() -> None:
    # the fault campaign's finding: a broker whose wall clock stepped back 710 s kept a transfer's
    # bundle Releasing for 56 s (bound 30 s) -- the machine's time now runs on the monotonic clock
    clock = SteppingClock(1_000_000)
    own = states(Executor(stuck=(CloseBundle,)), clock)
    await own.handle(Assign(bundle=B, broker="b1", stimulus_id="lookup-1", at_ms=own.now_ms()))
    await own.handle(Unload(bundle=B, to="b2", stimulus_id="transfer-1", at_ms=own.now_ms()))
    clock.step_ms = -710_000
    assert own.now_ms() == 1_000_000  # reads as wall time, untouched by the step
    import asyncio

    task = asyncio.create_task(own.run_watchdog())
    try:
        await clock.run_until(lambda: str(own.machine.state(B)) == "Free", within=60)
        assert clock.monotonic() >= 30.0
        assert own.now_ms() == 1_000_000 + round(clock.monotonic() * 1000)
    finally:
        task.cancel()
