"""This broker's ownership state machine: events in, instructions carried out, a story per bundle.

Every broker runs one :class:`~brokerlb.ownership.OwnershipMachine` (Pulsar's ServiceUnitState
machine, pure) over the bundles it takes part in -- the bundles it owns, takes, gives up,
transfers or splits. Who holds a bundle is decided by the metadata store (one ephemeral
ownership node per bundle); the machine sequences this broker's side of every move and keeps
the transition log that :meth:`BundleOwnership.story` answers from.

* **Events** come from the lookups (``Assign`` before taking a bundle), the owner's actions
  (``Unload``, ``Split``), the outcomes the executor reports (``AssignmentDone`` /
  ``AssignmentFailed``, ``ReleaseDone``, ``SplitDone`` / ``SplitFailed``), the session
  (``OwnershipLost`` for a bundle whose node went with the session), the broker registry
  (``BrokerLost`` when another broker leaves) and the clock (``Tick``: the watchdog).
* **Instructions** meant for this broker are carried out by the executor
  (:class:`~brokerlb.broker.owner_actions.OwnerActions`), which answers with the events that
  follow; those are handled in turn until nothing is left. Instructions for other brokers are
  theirs -- except taking the bundle on a transfer this broker started, which it drives by
  handing the bundle over.
* **Watchdog**: every few seconds a ``Tick`` resolves what stayed in flight longer than
  ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` (a release that never finished is
  forced, a half-taken bundle dropped, a split that never committed rolled back), and
  records that stayed Free or Deleted for
  ``loadBalancerServiceUnitStateTombstoneDelayTimeInSeconds`` are dropped.
* **Time**: the machine's timestamps are wall-clock milliseconds as of the broker's start,
  advanced on the monotonic clock (:meth:`BundleOwnership.now_ms`). They read as wall time in the
  story, and a wall-clock step (an NTP correction) neither ages an in-flight state nor holds it
  past the watchdog bound -- with the wall clock itself, a broker whose clock stepped back ten
  minutes kept a transfer's bundle Releasing for 56 s (bound 30 s) in a fault campaign.

An event the machine refuses (a lookup that wants to take a bundle this broker is releasing,
say) raises :class:`~brokerlb.errors.ServiceUnavailableError` (503, retriable) with the
bundle's story, and changes nothing.
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from typing import Any, Protocol

from brokerlb.clock import Clock
from brokerlb.errors import InvalidTransitionError, ServiceUnavailableError
from brokerlb.ownership import (
    AcquireOwnership,
    Event,
    Instruction,
    OwnershipMachine,
    Tick,
    Transition,
)

__all__ = ["BundleOwnership", "InstructionExecutor", "transition_json", "watchdog_interval"]

logger = logging.getLogger(__name__)


def watchdog_interval(in_flight_timeout_ms: int) -> float:
    """Seconds between two watchdog ticks: a sixth of the in-flight timeout, between 0.5 and 5 s.
    An in-flight state is resolved between the timeout and the timeout plus one interval after it began.

    >>> watchdog_interval(30_000), watchdog_interval(1_000)
    (5.0, 0.5)
    """
    return min(5.0, max(0.5, in_flight_timeout_ms / 6000))


class InstructionExecutor(Protocol):
    """Carries out one instruction for this broker; returns the events that follow from it."""

    async def execute(self, instruction: Instruction) -> list[Event]: ...


class BundleOwnership:
    """One broker's ownership machine and its instruction loop (module docstring)."""

    def __init__(self, broker_id: str, machine: OwnershipMachine, clock: Clock) -> None:
        self.broker_id = broker_id
        self.machine = machine
        self.clock = clock
        self._executor: InstructionExecutor | None = None
        self._ids = itertools.count(1)
        self._started_wall_ms = clock.now_ms()
        self._started_monotonic_ms = round(clock.monotonic() * 1000)

    def bind(self, executor: InstructionExecutor) -> None:
        """Set the executor (the owner's actions, built after this object)."""
        self._executor = executor

    def stimulus(self, kind: str) -> str:
        """A readable, unique stimulus id: ``lookup-17``, ``unload-3`` ..."""
        return f"{kind}-{next(self._ids)}"

    def now_ms(self) -> int:
        """The machine's time: the wall clock at this object's creation, advanced on the monotonic clock."""
        return self._started_wall_ms + round(self.clock.monotonic() * 1000) - self._started_monotonic_ms

    # ------------------------------------------------------------------ handling
    async def handle(self, *events: Event) -> None:
        """Apply ``events``; carry out this broker's instructions and handle what follows."""
        queue: deque[Instruction] = deque(self._apply(events))
        while queue:
            instruction = queue.popleft()
            if not self._ours(instruction):
                continue
            assert self._executor is not None, "BundleOwnership.bind() was not called"
            follow = await self._executor.execute(instruction)
            if follow:
                queue.extend(self._apply(follow))

    def _apply(self, events: Any) -> list[Instruction]:
        try:
            return self.machine.handle(*events)
        except InvalidTransitionError as exc:
            story = "; ".join(str(t) for t in exc.story[-4:]) if exc.story else "no transitions yet"
            logger.info("%s refused: %s (story: %s)", self.broker_id, exc, story)
            raise ServiceUnavailableError(f"{exc}; try again") from exc

    def _ours(self, instruction: Instruction) -> bool:
        broker = getattr(instruction, "broker", None)
        if broker == self.broker_id:
            return True
        # a transfer this broker started: it hands the bundle to the destination itself
        return (
            isinstance(instruction, AcquireOwnership)
            and self.machine.record(instruction.bundle).src == self.broker_id
        )

    # ------------------------------------------------------------------ watchdog
    def watchdog_interval(self) -> float:
        """Seconds between two ticks (:func:`watchdog_interval`)."""
        return watchdog_interval(self.machine.in_flight_timeout_ms)

    async def run_watchdog(self) -> None:
        """Tick on the clock until cancelled."""
        while True:
            await self.clock.sleep(self.watchdog_interval())
            try:
                await self.handle(Tick(stimulus_id=self.stimulus("watchdog"), at_ms=self.now_ms()))
            except ServiceUnavailableError:
                logger.exception("Ownership watchdog tick failed")

    # ------------------------------------------------------------------ reading
    def story(self, bundle: str) -> list[Transition]:
        """The bundle's transitions on this broker, oldest first."""
        return self.machine.story(bundle)

    def state_of(self, bundle: str) -> str:
        return str(self.machine.state(bundle))


def transition_json(t: Transition, broker: str) -> dict[str, Any]:
    """One line of a story as JSON; ``broker`` is the broker whose machine recorded it."""
    out: dict[str, Any] = {
        "kind": "transition",
        "bundle": t.bundle,
        "from": str(t.start),
        "to": str(t.finish),
        "atMs": t.at_ms,
        "by": t.who,
        "reason": t.reason,
        "stimulusId": t.stimulus_id,
        "forced": t.forced,
        "version": t.version,
        "recordedBy": broker,
    }
    if t.src:
        out["source"] = t.src
    if t.dst:
        out["destination"] = t.dst
    return out
