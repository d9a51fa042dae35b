"""This broker's ownership channel: the one ownership machine, fed by the table view, carried out here.

Pulsar's ``ServiceUnitStateChannel`` with the metadata-store table view. :class:`OwnershipChannel`
is the shell around the broker's :class:`~brokerlb.ownership.machine.OwnershipMachine` -- the only
ownership state a broker has:

* **fed** -- every record the ownership table's watches deliver
  (:class:`~brokerlb.coordination.ownership_table.OwnershipTable`); this broker's session
  (its id while the session is known alive and the broker is registered under it, else ``None``:
  the moment the confirmation deadline passes, a timer says so); the registry's sessions (when they
  change); the election (the leader's monitor runs while this broker leads) and, while leading,
  a tick every :func:`watchdog_interval`;
* **carried out** -- each instruction goes to the :class:`Executor` (the owner's actions,
  :class:`~brokerlb.broker.ownership.owner_actions.OwnerActions`), in order per bundle. Two take effect at
  once, before any await: a :class:`~brokerlb.ownership.events.StopServing` makes
  :meth:`OwnershipChannel.serving` false for the bundle, and
  :class:`~brokerlb.ownership.events.OwnerChanged` wakes the lookups waiting on it;
* **serving** -- :meth:`OwnershipChannel.serving` (asked before a topic opens and before every
  publish) is true while the machine says this broker serves the bundle, the executor has started
  serving it (:meth:`OwnershipChannel.started`), and the session is known alive now. A split or a
  merge hands the range to bundles this broker serves as well: the old bundle counts as served
  until they have started, so the topics in it never see a gap;
* **proposals** -- :meth:`assign`, :meth:`unload`, :meth:`split`, :meth:`override` and the commits
  ask the machine for the compare-and-set and write it, with the guards given (the leader's epoch,
  the namespace's bundles);
* **waits** -- :meth:`settled` waits until a bundle is out of flight (a lookup waits for an
  assignment to be taken, an unload or transfer to finish), bounded by the in-flight timeout.

Time: the machine's milliseconds are the wall clock at start, advanced on the monotonic clock
(:meth:`OwnershipChannel.now_ms`), so a wall-clock step neither ages nor freezes an in-flight state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from brokerlb.clock import Clock
from brokerlb.coordination import BrokerRegistry, LeaderElection, LeadershipChange, RegistryEvent
from brokerlb.coordination.ownership_table import Guard, OwnershipTable, StoredRecord
from brokerlb.coordination.store import MetadataStore, SessionEvent
from brokerlb.errors import (
    BrokerLBError,
    InvalidTransitionError,
    OperationTimeoutError,
    RecordConflictError,
    ServiceUnavailableError,
)
from brokerlb.ownership import BundleState
from brokerlb.ownership.events import (
    BrokersChanged,
    LeadershipChanged,
    OwnerChanged,
    RecordChanged,
    SessionChanged,
    StopServing,
    TableEvent,
    TableInstruction,
    Tick,
    Write,
)
from brokerlb.ownership.machine import Owner, OwnershipMachine, Transition
from brokerlb.ownership.record import OwnershipRecord
from brokerlb.ring import NamespaceBundle

__all__ = ["OwnershipChannel", "BundleOwner", "Executor", "watchdog_interval", "bundle_owner"]

logger = logging.getLogger(__name__)

#: Seconds a bundle handed to split or merge successors counts as served at most, waiting for them.
RETIRE_GRACE = 10.0


def watchdog_interval(in_flight_timeout_ms: int) -> float:
    """Seconds between two ticks of the leader's monitor: a sixth of the in-flight timeout, between
    0.5 and 5 s. An in-flight state is overridden between the timeout and the timeout plus one
    interval after this broker first saw it.

    >>> watchdog_interval(30_000), watchdog_interval(1_000)
    (5.0, 0.5)
    """
    return min(5.0, max(0.5, in_flight_timeout_ms / 6000))


@dataclass(frozen=True, slots=True)
class BundleOwner:
    """A bundle's owner as dashboards and logs show it: the broker that serves it (Owned, a split's
    source) or gives it up (Releasing: ``disabled``, lookups wait for the move to settle)."""

    bundle: str
    broker_id: str
    disabled: bool = False


def bundle_owner(bundle: str, record: OwnershipRecord | None) -> BundleOwner | None:
    """The :class:`BundleOwner` a record shows (``None``: no owner -- Init, Free, Assigning, Deleted)."""
    if record is None:
        return None
    if record.state in (BundleState.OWNED, BundleState.SPLITTING):
        holder = record.holder()[0]
        return None if holder is None else BundleOwner(bundle, holder)
    if record.state is BundleState.RELEASING and record.src is not None:
        return BundleOwner(bundle, record.src, disabled=True)
    return None


class Executor(Protocol):
    """Carries out one instruction of this broker's machine (the owner's actions)."""

    async def execute(self, instruction: TableInstruction) -> None: ...


class OwnershipChannel:
    """This broker's ownership machine and its shell (module docstring)."""

    def __init__(
        self,
        broker_id: str,
        machine: OwnershipMachine,
        *,
        table: OwnershipTable,
        store: MetadataStore,
        registry: BrokerRegistry,
        clock: Clock,
    ) -> None:
        self.broker_id = broker_id
        self.machine = machine
        self.table = table
        self.store = store
        self.registry = registry
        self.clock = clock
        self._executor: Executor | None = None
        self._started_wall_ms = clock.now_ms()
        self._started_monotonic_ms = round(clock.monotonic() * 1000)
        #: bundles whose serving the executor started (the data path was told)
        self._started: set[str] = set()
        #: bundles stopped for a split or merge: served until their successors started (deadline)
        self._retiring: dict[str, float] = {}
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        #: lookups' clients waiting for this broker to finish starting a bundle (:meth:`serving_soon`)
        self._start_waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._removers: list[Callable[[], None]] = []
        self._sessions: dict[str, int] = {}
        self._liveness: asyncio.Task[None] | None = None
        self._session: int | None = None
        self._record_listeners: list[
            Callable[[str, OwnershipRecord | None, OwnershipRecord | None], None]
        ] = []
        self._serving_listeners: list[Callable[[str, bool, str], None]] = []
        self._closed = False

    # ------------------------------------------------------------------ life cycle
    async def start(self, election: LeaderElection, executor: Executor) -> OwnershipChannel:
        """Feed the machine from the table, the session, the registry and the election; its
        instructions for this broker go to ``executor`` (the owner's actions)."""
        self._executor = executor
        for stored in self.table:
            self._feed(self._changed(stored.bundle, stored))
        self._removers += [
            self.table.add_listener(lambda bundle, stored: self._feed(self._changed(bundle, stored))),
            self.registry.add_listener(self._on_registry),
            self.store.add_session_listener(self._on_session),
            self.store.add_confirmation_listener(self._on_confirmed),
            self.store.add_liveness_listener(lambda _lapsed, _confirmed: self.check_session()),
            election.add_listener(self._on_leadership),
        ]
        self._on_registry(None)
        self.check_session()
        if election.is_leader:
            self._feed(LeadershipChanged(leading=True, at_ms=self.now_ms()))
        return self

    async def close(self) -> None:
        self._closed = True
        for remove in self._removers:
            remove()
        self._removers.clear()
        if self._liveness is not None:
            self._liveness.cancel()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for waiters in self._waiters.values():
            for future in waiters:
                if not future.done():
                    future.cancel()
        self._waiters.clear()
        for waiters in self._start_waiters.values():
            for future in waiters:
                if not future.done():
                    future.cancel()
        self._start_waiters.clear()

    async def drain(self) -> None:
        """Wait until every instruction given so far has been carried out."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def now_ms(self) -> int:
        return self._started_wall_ms + round(self.clock.monotonic() * 1000) - self._started_monotonic_ms

    # ------------------------------------------------------------------ reading
    def serving(self, bundle: NamespaceBundle | str) -> bool:
        """Whether this broker serves ``bundle`` now (module docstring): asked before every publish."""
        name = bundle if isinstance(bundle, str) else str(bundle)
        if name in self._started:
            return self.store.session_known_alive()
        if self._retiring and self._covered_by_retiring(name):
            return self._session is not None and self.store.session_known_alive()
        return False

    def started(self, bundle: str) -> bool:
        return bundle in self._started

    async def serving_soon(self, bundle: str, timeout: float | None = None) -> bool:
        """:meth:`serving`, waiting while this broker is taking ``bundle`` (:meth:`_taking`: its take
        not seen back yet, or the executor still starting it -- the storage fence): a client a
        lookup sent here may arrive before that is done. At most ``timeout`` s (default: the
        in-flight timeout)."""
        limit = self.machine.in_flight_timeout_ms / 1000 if timeout is None else timeout
        deadline = self.clock.monotonic() + limit
        while not self.serving(bundle):
            remaining = deadline - self.clock.monotonic()
            if bundle in self._started or not self._taking(bundle) or remaining <= 0:
                return self.serving(bundle)
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._start_waiters.setdefault(bundle, []).append(future)
            try:
                await self.clock.wait_for(asyncio.shield(future), remaining)
            except (TimeoutError, OperationTimeoutError):
                pass
            finally:
                waiters = self._start_waiters.get(bundle)
                if waiters is not None and future in waiters:
                    waiters.remove(future)
                    if not waiters:
                        del self._start_waiters[bundle]
        return True

    def owner(self, bundle: NamespaceBundle | str) -> Owner:
        return self.machine.owner(str(bundle))

    def record(self, bundle: NamespaceBundle | str) -> OwnershipRecord | None:
        return self.machine.record(str(bundle))

    def owners(self) -> dict[str, BundleOwner]:
        """Every bundle with an owner → :class:`BundleOwner` (a bundle being released is ``disabled``)."""
        out: dict[str, BundleOwner] = {}
        for bundle, record in self.machine.records().items():
            owner = bundle_owner(bundle, record)
            if owner is not None:
                out[bundle] = owner
        return out

    def moving(self) -> list[str]:
        """Bundles with a move in flight (Assigning, Releasing, Splitting)."""
        return [bundle for bundle, _record, _since in self.machine.in_flight()]

    def served(self) -> list[str]:
        """The bundles this broker serves, sorted."""
        return sorted(self._started)

    def owned(self) -> list[str]:
        """The bundles the records give this broker under its session now (Owned, or Splitting from
        it) -- Pulsar's ``ownedServiceUnits`` -- sorted."""
        return self.machine.served()

    def owns(self, bundle: NamespaceBundle | str) -> bool:
        """Whether the records give ``bundle`` to this broker under its session now."""
        return self.machine.serving(str(bundle))

    def owned_by(self, broker: str) -> list[str]:
        return self.machine.owned_by(broker)

    def story(self, bundle: str) -> list[Transition]:
        return self.machine.story(bundle)

    @property
    def session(self) -> int | None:
        """This broker's session as the machine acts under it (``None``: not known alive or registered)."""
        return self._session

    @property
    def leading(self) -> bool:
        return self.machine.leading

    def add_record_listener(
        self, listener: Callable[[str, OwnershipRecord | None, OwnershipRecord | None], None]
    ) -> Callable[[], None]:
        """``listener(bundle, before, after)`` on every change of a record this broker sees."""
        self._record_listeners.append(listener)
        return lambda: self._record_listeners.remove(listener) if listener in self._record_listeners else None

    def add_serving_listener(self, listener: Callable[[str, bool, str], None]) -> Callable[[], None]:
        """``listener(bundle, serving, why)`` the moment this broker starts (once the executor started
        it) or stops serving a bundle (when the machine says so, before anything else)."""
        self._serving_listeners.append(listener)
        return lambda: (
            self._serving_listeners.remove(listener) if listener in self._serving_listeners else None
        )

    def _serving_changed(self, bundle: str, serving: bool, why: str) -> None:
        for listener in list(self._serving_listeners):
            try:
                listener(bundle, serving, why)
            except Exception:
                logger.exception("Serving listener failed for %s", bundle)

    # ------------------------------------------------------------------ waiting
    async def settled(self, bundle: NamespaceBundle | str, timeout: float | None = None) -> Owner:
        """The bundle's owner view once no move of it is in flight (Assigning, Releasing), waiting up to
        ``timeout`` s (default: the in-flight timeout); :class:`ServiceUnavailableError` when it stays
        in flight."""
        name = str(bundle)
        limit = self.machine.in_flight_timeout_ms / 1000 if timeout is None else timeout
        deadline = self.clock.monotonic() + limit
        while True:
            view = self.machine.owner(name)
            if not view.in_flight:
                return view
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                raise ServiceUnavailableError(
                    f"Bundle {name} is still {view.state} after {limit:.1f} s; try again"
                )
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.setdefault(name, []).append(future)
            try:
                await self.clock.wait_for(asyncio.shield(future), remaining)
            except (TimeoutError, OperationTimeoutError):
                pass
            finally:
                waiters = self._waiters.get(name)
                if waiters is not None and future in waiters:
                    waiters.remove(future)
                    if not waiters:
                        del self._waiters[name]

    async def changed(self, bundle: str, timeout: float) -> None:
        """Wait until the bundle's record changes (or ``timeout`` s)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(bundle, []).append(future)
        try:
            await self.clock.wait_for(asyncio.shield(future), timeout)
        except (TimeoutError, OperationTimeoutError):
            pass

    # ------------------------------------------------------------------ proposals
    async def write(self, write: Write, guards: Sequence[Guard] = ()) -> None:
        """Write one of the machine's proposals (a lost race: :class:`RecordConflictError`)."""
        await self.table.write(write, guards=guards)

    async def assign(
        self, bundle: str, broker: str, *, by: str, reason: str, guards: Sequence[Guard] = ()
    ) -> OwnershipRecord:
        """Write Assigning(``broker``); the record written."""
        w = self.machine.assign(bundle, broker, at_ms=self.now_ms(), by=by, reason=reason)
        await self.write(w, guards)
        assert w.record is not None
        return w.record

    async def seen(self, bundle: str, version: int, timeout: float | None = None) -> None:
        """Wait until this broker's view of the record reached ``version`` (a write of its own, seen
        back through the table view), at most ``timeout`` s (default: the in-flight timeout)."""
        limit = self.machine.in_flight_timeout_ms / 1000 if timeout is None else timeout
        deadline = self.clock.monotonic() + limit
        while True:
            record = self.machine.record(bundle)
            if record is not None and record.version >= version:
                return
            remaining = deadline - self.clock.monotonic()
            if remaining <= 0:
                raise ServiceUnavailableError(
                    f"The ownership record of {bundle} was not seen at v{version}; try again"
                )
            await self.changed(bundle, remaining)

    async def unload(
        self, bundle: str, to: str | None, *, by: str, reason: str = "", guards: Sequence[Guard] = ()
    ) -> OwnershipRecord:
        """Write Releasing (an unload, a transfer with ``to``); the record written."""
        w = self.machine.unload(bundle, to, at_ms=self.now_ms(), by=by, reason=reason)
        await self.write(w, guards)
        assert w.record is not None
        return w.record

    async def split(
        self, bundle: str, children: Sequence[str], *, by: str, reason: str, guards: Sequence[Guard] = ()
    ) -> OwnershipRecord:
        w = self.machine.split(bundle, children, at_ms=self.now_ms(), by=by, reason=reason)
        await self.write(w, guards)
        assert w.record is not None
        return w.record

    # ------------------------------------------------------------------ feeding
    def feed(self, *events: TableEvent) -> None:
        """Hand events to the machine (the executor reports outcomes this way)."""
        self._feed(*events)

    def _changed(self, bundle: str, stored: StoredRecord | None) -> RecordChanged:
        if stored is None:
            return RecordChanged(bundle=bundle, record=None, at_ms=self.now_ms())
        return RecordChanged(
            bundle=bundle,
            record=stored.record,
            stat_version=stored.stat_version,
            zxid=stored.zxid,
            at_ms=self.now_ms(),
        )

    def _feed(self, *events: TableEvent) -> None:
        if self._closed:
            return
        before = {e.bundle: self.machine.record(e.bundle) for e in events if isinstance(e, RecordChanged)}
        try:
            instructions = self.machine.handle(*events)
        except InvalidTransitionError:
            logger.exception("%s: the ownership machine refused %s", self.broker_id, events)
            return
        for bundle, old in before.items():
            new = self.machine.record(bundle)
            if new != old:
                self._wake(bundle)
                self._wake_starters(bundle)
                for listener in list(self._record_listeners):
                    try:
                        listener(bundle, old, new)
                    except Exception:
                        logger.exception("Ownership record listener failed for %s", bundle)
        for instruction in instructions:
            self._at_once(instruction)
            self._schedule(instruction)
        if self._retiring:
            self._retire()

    def _at_once(self, instruction: TableInstruction) -> None:
        """What takes effect before any await (module docstring)."""
        bundle = instruction.bundle
        if isinstance(instruction, StopServing):
            self._wake_starters(bundle)
            was = bundle in self._started
            self._started.discard(bundle)
            if instruction.cause.kind in ("split", "merge"):
                self._retiring[bundle] = self.clock.monotonic() + RETIRE_GRACE
            elif was:
                self._serving_changed(bundle, False, str(instruction.cause))
        elif isinstance(instruction, OwnerChanged):
            self._wake(bundle)

    def _taking(self, bundle: str) -> bool:
        """This broker is taking ``bundle``: its start is in progress, or the record (as this broker's
        view has it yet) assigns the bundle to it -- its take, written, not seen back yet."""
        if self.machine.serving(bundle):
            return True
        record = self.machine.record(bundle)
        return (
            record is not None
            and record.state is BundleState.ASSIGNING
            and record.dst == self.broker_id
            and self._session is not None
        )

    def _wake_starters(self, bundle: str) -> None:
        for future in self._start_waiters.pop(bundle, []):
            if not future.done():
                future.set_result(None)

    def _wake(self, bundle: str) -> None:
        for future in self._waiters.pop(bundle, []):
            if not future.done():
                future.set_result(None)

    def mark_started(self, bundle: str) -> None:
        """The executor started serving ``bundle`` (if the machine still says so)."""
        self._wake_starters(bundle)
        if self.machine.serving(bundle) and bundle not in self._started:
            self._started.add(bundle)
            if not self._covered_by_retiring(bundle):
                self._serving_changed(bundle, True, "owned")
        if self._retiring:
            self._retire()

    def _retire(self) -> None:
        """End the serving of split or merged bundles whose successors took over: at once when any
        part of the range is no longer this broker's (a successor's record names another broker or a
        move of it started, or this broker's session is not live), else once the successors that
        cover the whole range have started (or after :data:`RETIRE_GRACE`)."""
        now = self.clock.monotonic()
        records = self.machine.records()
        for old, deadline in list(self._retiring.items()):
            overlapping = [
                b
                for b, r in records.items()
                if b != old and r.state is not BundleState.DELETED and _overlaps(b, old)
            ]
            successors = [b for b in overlapping if self.machine.serving(b)]
            given_away = self._session is None or len(successors) < len(overlapping)
            covered = _covers(successors, old) and all(b in self._started for b in successors)
            if not (given_away or covered or now >= deadline):
                continue
            del self._retiring[old]
            self._serving_changed(
                old, False, "handed to " + ", ".join(successors) if covered else "split or merged"
            )
            for successor in successors:
                if successor in self._started and not self._covered_by_retiring(successor):
                    self._serving_changed(successor, True, f"takes over from {old}")

    def _covered_by_retiring(self, bundle: str) -> bool:
        """A bundle of this broker (its record names it) inside a range it is handing to itself."""
        if bundle in self._retiring:
            return True
        if not self.machine.serving(bundle):
            return False
        return any(_overlaps(bundle, old) for old in self._retiring)

    def _schedule(self, instruction: TableInstruction) -> None:
        if isinstance(instruction, OwnerChanged) or self._executor is None:
            return
        task = asyncio.ensure_future(self._run(instruction))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, instruction: TableInstruction) -> None:
        assert self._executor is not None
        name = instruction.bundle
        lock, users = self._locks.get(name, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[name] = (lock, users + 1)
        try:
            async with lock:
                try:
                    await self._executor.execute(instruction)
                except RecordConflictError as exc:
                    logger.debug("%s: %s lost a race: %s", self.broker_id, instruction, exc)
                except BrokerLBError as exc:
                    logger.warning(
                        "%s: could not carry out %s: %s", self.broker_id, type(instruction).__name__, exc
                    )
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("%s: %s failed", self.broker_id, instruction)
        finally:
            lock, users = self._locks[name]
            if users == 1:
                del self._locks[name]
            else:
                self._locks[name] = (lock, users - 1)

    # ------------------------------------------------------------------ the session and the registry
    def check_session(self) -> None:
        """Feed the session as it is now: its id while known alive and registered under it, else ``None``;
        and arm a timer for the moment it stops being known alive."""
        if self._closed:
            return
        registered = (
            self.store.session_id is not None and self.registry.registered_session() == self.store.session_id
        )
        session = self.store.session_id if registered and self.store.session_known_alive() else None
        if session != self._session:
            self._session = session
            logger.info("%s: ownership acts under session %s", self.broker_id, _hex(session))
            self._feed(SessionChanged(session=session, at_ms=self.now_ms()))
        self._arm_liveness()

    def _arm_liveness(self) -> None:
        if self._liveness is not None and not self._liveness.done():
            return
        until = self.store.session_confirmed_until()
        if self._session is None or until == float("inf"):
            return

        async def lapse() -> None:
            while not self._closed:
                wait = self.store.session_confirmed_until() - self.clock.monotonic()
                if wait <= 0:
                    break
                await self.clock.sleep(wait + 0.001)
            self._liveness = None
            self.check_session()

        self._liveness = asyncio.ensure_future(lapse())

    def _on_confirmed(self, _deadline: float) -> None:
        if self._session is None:
            self.check_session()

    def _on_session(self, _event: SessionEvent) -> None:
        self.check_session()

    def _on_registry(self, _event: RegistryEvent | None) -> None:
        sessions = self.registry.sessions()
        if sessions != self._sessions:
            self._sessions = sessions
            self._feed(BrokersChanged(sessions=sessions, at_ms=self.now_ms()))
        self.check_session()

    def _on_leadership(self, change: LeadershipChange) -> None:
        self._feed(LeadershipChanged(leading=change.leading, at_ms=self.now_ms()))

    # ------------------------------------------------------------------ the leader's monitor
    def watchdog_interval(self) -> float:
        return watchdog_interval(self.machine.in_flight_timeout_ms)

    async def run_monitor(self) -> None:
        """Tick the machine while this broker leads (cancelled when the broker stops)."""
        while True:
            await self.clock.sleep(self.watchdog_interval())
            if self.machine.leading:
                self._feed(Tick(at_ms=self.now_ms()))
            if self._retiring:
                self._retire()


def _bounds(bundle: str) -> tuple[int, int]:
    lo, _, hi = bundle.rpartition("/")[2].partition("_")
    return int(lo, 16), int(hi, 16)


def _overlaps(a: str, b: str) -> bool:
    if a.rpartition("/")[0] != b.rpartition("/")[0]:
        return False
    (a0, a1), (b0, b1) = _bounds(a), _bounds(b)
    return a0 < b1 and b0 < a1


def _covers(bundles: Sequence[str], whole: str) -> bool:
    """Whether ``bundles`` (disjoint, each inside ``whole``) cover the whole range of ``whole``."""
    lo, hi = _bounds(whole)
    return bool(bundles) and sum(b1 - b0 for b0, b1 in map(_bounds, bundles)) == hi - lo


def _hex(session: int | None) -> str:
    return "none" if session is None else f"0x{session:x}"
