"""What the owner of a bundle does to take it, give it up, hand it over or split it.

Every move goes through this broker's ownership state machine
(:class:`~brokerlb.broker.bundle_ownership.BundleOwnership`): a flow below feeds it the event
that starts the move, and :class:`OwnerActions` -- its executor -- carries out each instruction
it returns and reports the outcome as the next event, until the move is done.

* **take** (a lookup or a transfer's destination): ``Assign`` → *acquire the ownership node*
  (:meth:`OwnershipManager.try_acquire`) → ``AssignmentDone``, or ``AssignmentFailed`` when
  another broker holds it (the lookup answers with that owner);
* **unload** (Pulsar's ``OwnedBundle.handleUnloadRequest``): ``Unload`` → *close*: mark the
  ownership node ``disabled`` (lookups answer "is being unloaded"), close the bundle's topics
  (``namespaceBundleUnloadingTimeoutMs``; a timeout is not an error), delete the node, force a
  load report (the loss shows in ``lastBundleLosses``) → ``ReleaseDone`` → Free;
* **transfer** (unload with a destination, Pulsar's PIP-192 transfer with PIP-307's close):
  ``Unload(to)`` → *close for a transfer*: mark the node ``disabled``, *fence* the topics
  (connections stay, publishes are ignored), delete the node → ``ReleaseDone`` → *hand over*:
  the destination takes the bundle at once (``PUT .../{bundle}/acquire``) → ``AssignmentDone``
  → *disconnect* the clients, telling them the new owner
  (:class:`~brokerlb.broker.topics.CloseCause` ``transfer``), so they reconnect there without a
  lookup and re-send what was not acknowledged. If the destination cannot take it,
  ``AssignmentFailed``: the clients are disconnected plainly and look the topic up;
* **topic state** (lossless planned moves, when the broker has a data path): before the bundle
  is released, its topics' retained messages and cursors go to the next owner
  (:class:`~brokerlb.broker.handoff.TopicHandOff`): the transfer's destination, or for an
  unload of a bundle with state, the broker the leader's placement chooses at that moment (as
  Pulsar 3.x unloads with a destination) -- which then takes the bundle at once, as in a
  transfer; the clients of an unload are still told only to look the topic up again (no URL).
  The topics are fenced first, so nothing acknowledged to a producer is missing from the state.
  When placement chooses this broker itself, the bundle is released and taken again here, its
  topics' state kept;
* **split** (``NamespaceService.splitAndOwnBundle``): boundaries from the algorithm (none →
  nothing to do) → ``Split(children)`` → *split*: own the children, compare-and-set the
  boundaries, release the parent (:func:`~brokerlb.coordination.split_and_own`), force a load
  report → ``SplitDone`` (children Owned here), or ``SplitFailed`` (rolled back); the children
  are unloaded in the background only if asked;
* **lost** (the node went with the session and another broker took the bundle):
  ``OwnershipLost`` → *disconnect* the clients at once;
* **watchdog**: a release that never finished is forced (the node deleted), a half-taken bundle
  or the children of a split that never committed are dropped.

Unload, transfer and split of one bundle run one at a time (a lock per bundle name): a leader's
split and a shedding transfer of the same bundle may reach its owner together, and the second
must see what the first did. After waiting, an unload of a bundle no longer owned answers
``False``; a split of a bundle no longer owned (unloaded, transferred or split meanwhile) raises
:class:`~brokerlb.errors.StaleBundleError` (503) -- the caller looks the bundle up again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.bundle_ownership import BundleOwnership
from brokerlb.broker.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.topics import LOST, UNLOAD, CloseCause, TopicRegistry
from brokerlb.config import ServiceConfig
from brokerlb.coordination import (
    AcquireResult,
    BrokerRegistry,
    BundleMetadata,
    OwnershipManager,
    split_and_own,
)
from brokerlb.errors import (
    BrokerLBError,
    ConflictError,
    InvalidBundlesError,
    InvalidSplitError,
    NoBrokerAvailableError,
    StaleBundleError,
)
from brokerlb.ownership import (
    AbortAssignment,
    AbortSplit,
    AcquireOwnership,
    Assign,
    AssignmentDone,
    AssignmentFailed,
    BrokerLost,
    BundleState,
    CloseBundle,
    DisconnectClients,
    Event,
    ForceRelease,
    Instruction,
    OwnershipLost,
    ReleaseDone,
    RingUpdated,
    Split,
    SplitBundle,
    SplitDone,
    SplitFailed,
    Unload,
)
from brokerlb.ring import (
    BundleSplitOption,
    NamespaceBundle,
    TopicRates,
    parse_boundary,
    resolve_split_algorithm,
)

if TYPE_CHECKING:
    from brokerlb.broker.handoff import HandOffTarget

__all__ = ["OwnerActions", "SplitOutcome", "StateHandOff", "parse_split_boundaries"]

logger = logging.getLogger(__name__)

#: Attempts (and the first pause, doubling) to make the next owner take a bundle after the release.
HAND_OVER_ATTEMPTS = 6
HAND_OVER_FIRST_RETRY = 0.02


class StateHandOff(Protocol):
    """Moves a bundle's topic state to the next owner (:class:`~brokerlb.broker.handoff.TopicHandOff`)."""

    #: this broker's id (a destination equal to it means "this broker re-owns the bundle")
    self_id: str

    def has_state(self, bundle: str) -> bool: ...

    async def choose_destination(self, bundle: NamespaceBundle) -> HandOffTarget | None: ...

    async def send(self, bundle: NamespaceBundle, destination: str) -> bool: ...

    async def follow_owner(self, bundle: NamespaceBundle) -> None: ...


@dataclass(frozen=True, slots=True)
class SplitOutcome:
    parent: str
    children: tuple[str, ...]
    boundaries: tuple[int, ...]

    @property
    def split(self) -> bool:
        return bool(self.children)


def parse_split_boundaries(body: object) -> list[int]:
    """The split body: a JSON list of boundaries (numbers, or ``"0x..."`` strings)."""
    if body is None:
        return []
    if not isinstance(body, list):
        raise InvalidSplitError(f"Split boundaries must be a JSON list of positions, got {body!r}")
    try:
        return [parse_boundary(b) for b in body]
    except InvalidBundlesError as exc:
        raise InvalidSplitError(f"Split bundle failed due to invalid request: {exc}") from exc


class OwnerActions:
    """Take, unload, transfer and split bundles; the executor of this broker's ownership machine."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        states: BundleOwnership,
        ownership: OwnershipManager,
        metadata: BundleMetadata,
        bundles: NamespaceBundlesCache,
        topics: TopicRegistry,
        registry: BrokerRegistry,
        admin: AsyncAdminClient,
        report_changed: Callable[[], None],
    ) -> None:
        self.conf = conf
        self.states = states
        self.broker_id = states.broker_id
        self.ownership = ownership
        self.metadata = metadata
        self.bundles = bundles
        self.topics = topics
        self.registry = registry
        self.admin = admin
        self._report_changed = report_changed
        #: the topic-state hand-off of planned moves (set when the broker has a data path)
        self.state_hand_off: StateHandOff | None = None
        #: bundle -> where its topic state goes in the unload under way (this broker included)
        self._targets: dict[str, str] = {}
        #: bundles of the unload under way whose clients are told the new owner (a transfer)
        self._announced: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        #: bundle -> what this broker's last acquisition found (for the lookup that asked)
        self._acquired: dict[str, AcquireResult] = {}
        #: bundle -> why a split step failed (re-raised to the caller)
        self._split_errors: dict[str, BaseException] = {}
        states.bind(self)

    @asynccontextmanager
    async def _exclusive(self, name: str) -> AsyncIterator[None]:
        """Hold the bundle's lock; the entry is dropped when nobody holds or waits for it."""
        lock, users = self._locks.get(name, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[name] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[name]
            if users == 1:
                del self._locks[name]
            else:
                self._locks[name] = (lock, users - 1)

    def busy(self, bundle: NamespaceBundle | str) -> bool:
        """Whether an unload, transfer or split of ``bundle`` is running or waiting here."""
        return str(bundle) in self._locks

    def owns(self, bundle: NamespaceBundle | str) -> bool:
        return self.ownership.is_owned(bundle) or self.ownership.is_disabled(bundle)

    def _event(
        self, kind: type[Event], bundle: str, stimulus: str, reason: str = "", **fields: object
    ) -> Event:
        return kind(  # type: ignore[call-arg]
            bundle=bundle,
            stimulus_id=self.states.stimulus(stimulus),
            at_ms=self.states.now_ms(),
            by=self.broker_id,
            reason=reason,
            **fields,
        )

    # ------------------------------------------------------------------ flows
    async def acquire(self, bundle: NamespaceBundle, reason: str = "lookup") -> AcquireResult:
        """Take an unowned bundle (``Assign``); the answer names its owner, us or the winner."""
        name = str(bundle)
        await self._clear_stale(bundle)
        await self.states.handle(self._event(Assign, name, "lookup", reason, broker=self.broker_id))
        result = self._acquired.pop(name, None)
        if result is None:  # the machine already had it taken here: the store says by whom
            result = await self.ownership.try_acquire(bundle)
        return result

    async def hand_over(self, bundle: NamespaceBundle, destination: str) -> None:
        """Have ``destination`` take ``bundle`` now: this broker takes it itself, another broker is
        asked to (``PUT .../{bundle}/acquire``, a brokerlb extension)."""
        if destination == self.broker_id:
            await self.acquire(bundle, reason="assigned here")
            return
        report = self.registry.broker_json(destination)
        url = report.get("webServiceUrl") if isinstance(report, dict) else None
        if not url:
            raise NoBrokerAvailableError(f"Broker {destination} is not active")
        await self.admin.at(str(url).rstrip("/")).acquire_bundle(str(bundle.namespace), bundle.range)

    async def unload(self, bundle: NamespaceBundle, destination: str | None = None) -> bool:
        """Give ``bundle`` up (to ``destination`` when given); ``False`` if we did not own it."""
        if not self.owns(bundle):
            return False
        name = str(bundle)
        async with self._exclusive(name):
            if not self.owns(bundle):  # unloaded, transferred or split while we waited
                return False
            await self._adopt(bundle)
            started = self.states.clock.monotonic()
            target = destination
            hand_over = True
            hand_off = self.state_hand_off
            if not target and hand_off is not None and hand_off.has_state(name):
                chosen = await hand_off.choose_destination(bundle)
                if chosen is not None:
                    target, hand_over = chosen.broker, chosen.hand_over
            if target:
                self._targets[name] = target
            if destination:
                self._announced.add(name)
            try:
                to = target if target != self.broker_id and hand_over else None
                reason = f"transfer to {destination}" if destination else "unload"
                if target and not destination:
                    how = "as placed" if hand_over else "which takes the merged bundle"
                    reason += f" (its topics' state to {target}, {how})"
                await self.states.handle(self._event(Unload, name, "unload", reason, to=to))
                if target == self.broker_id and hand_over:  # placed back here: take it again, its state kept
                    await self.acquire(bundle, reason="placed back here with its topics' state")
                    await self.topics.close_bundle(name, self._unload_timeout(), UNLOAD)
            finally:
                self._targets.pop(name, None)
                self._announced.discard(name)
            record = self.states.machine.record(name)
            logger.info(
                "Unloaded bundle %s in %.0f ms: %s",
                name,
                (self.states.clock.monotonic() - started) * 1e3,
                f"now owned by {record.dst}"
                if record.state is BundleState.OWNED
                else "clients look it up again",
            )
            return True

    async def _clear_stale(self, bundle: NamespaceBundle) -> None:
        """Forget what this machine last saw of a bundle that has since left it: another broker it
        was handed to (that broker gave it up or lost it; the store's node decides who takes it now),
        or a split or merge that took its range out of the ring (merged back into the same range)."""
        name = str(bundle)
        record = self.states.machine.record(name)
        if record.state is BundleState.OWNED and record.dst != self.broker_id:
            reason = f"{record.dst} no longer holds it (taken anew here)"
            await self.states.handle(self._event(OwnershipLost, name, "lookup", reason, broker=record.dst))
        elif record.state is BundleState.DELETED:
            ring = await self.bundles.current(bundle.namespace)
            await self.states.handle(
                RingUpdated(
                    namespace=str(bundle.namespace),
                    bundles=tuple(str(b) for b in ring.bundles),
                    stimulus_id=self.states.stimulus("lookup"),
                    at_ms=self.states.now_ms(),
                    by=self.broker_id,
                )
            )

    async def _adopt(self, bundle: NamespaceBundle) -> None:
        """A bundle the store says we own but the machine has not seen taken here (or sees Free):
        take it in the machine first (the acquisition finds the node already ours)."""
        state = self.states.machine.state(str(bundle))
        if state in (BundleState.INIT, BundleState.FREE):
            await self.acquire(bundle, reason="owned here in the metadata store")

    async def close_lost(self, bundle: str) -> None:
        """The bundle's node went with the session and another broker took it: stop serving it."""
        await self.states.handle(self._event(OwnershipLost, bundle, "session", broker=self.broker_id))

    async def broker_lost(self, broker: str) -> None:
        """Another broker left the registry: moves that waited on it end."""
        await self.states.handle(
            BrokerLost(
                broker=broker,
                stimulus_id=self.states.stimulus("broker-lost"),
                at_ms=self.states.now_ms(),
                by="registry",
                reason=f"{broker} left the broker registry",
            )
        )

    async def split(
        self,
        bundle: NamespaceBundle,
        *,
        algorithm: str | None,
        positions: Sequence[int] = (),
        unload: bool = False,
    ) -> SplitOutcome:
        """Split an owned bundle (rules in the module docstring)."""
        algo = resolve_split_algorithm(algorithm, self.conf.defaultNamespaceBundleSplitAlgorithm)
        name = str(bundle)
        async with self._exclusive(name):
            if not self.ownership.is_owned(bundle):
                raise StaleBundleError(
                    f"Bundle {bundle} is no longer owned by this broker "
                    "(unloaded, transferred or split meanwhile); look it up again"
                )
            boundaries = algo.split_boundaries(self._split_option(bundle, positions)) or []
            if not boundaries:
                logger.info("No valid boundary found to split %s with %s", bundle, algo.name)
                return SplitOutcome(name, (), ())
            await self._adopt(bundle)
            children = _children(bundle, boundaries)
            self._split_errors.pop(name, None)
            await self.states.handle(
                self._event(Split, name, "split", f"split with {algo.name}", children=children)
            )
            error = self._split_errors.pop(name, None)
            if error is not None:
                raise error
        logger.info(
            "Split %s at %s into %s",
            bundle,
            [f"0x{b:08x}" for b in boundaries],
            ", ".join(c.rpartition("/")[2] for c in children),
        )
        if unload:
            self._spawn(self._unload_all([NamespaceBundle.parse(c) for c in children]))
        return SplitOutcome(name, children, tuple(boundaries))

    def _split_option(self, bundle: NamespaceBundle, positions: Sequence[int]) -> BundleSplitOption:
        topics = self.topics.topics_in(str(bundle))
        rates = {}
        for topic in topics:
            stats = self.topics.stats_of(topic)
            if stats is not None:
                rates[topic] = TopicRates(
                    stats.msg_rate_in + stats.msg_rate_out, stats.msg_throughput_in + stats.msg_throughput_out
                )
        return BundleSplitOption(
            bundle,
            topics=topics,
            positions=list(positions),
            topic_rates=rates,
            max_msg_rate=self.conf.loadBalancerNamespaceBundleMaxMsgRate,
            max_bandwidth_mbytes=self.conf.loadBalancerNamespaceBundleMaxBandwidthMbytes,
            flow_or_qps_difference_threshold_percentage=self.conf.flowOrQpsDifferenceThresholdPercentage,
        )

    async def _unload_all(self, bundles: Sequence[NamespaceBundle]) -> None:
        for child in bundles:
            try:
                await self.unload(child)
            except BrokerLBError as exc:
                logger.warning("Could not unload split child %s: %s", child, exc)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def close(self) -> None:
        """Wait for background work (children unloads) to finish."""
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)

    # ------------------------------------------------------------------ the executor
    async def execute(self, instruction: Instruction) -> list[Event]:
        """Carry out one instruction of this broker's machine; the events that follow."""
        name = instruction.bundle
        bundle = NamespaceBundle.parse(name)
        sid = instruction.stimulus_id
        if isinstance(instruction, AcquireOwnership):
            if instruction.broker == self.broker_id:
                return await self._take(bundle, sid)
            return await self._give(bundle, instruction.broker, sid)
        if isinstance(instruction, CloseBundle):
            return await self._close(bundle, instruction.transfer_to, sid)
        if isinstance(instruction, DisconnectClients):
            await self._disconnect(name, instruction)
            return []
        if isinstance(instruction, SplitBundle):
            return await self._split(bundle, instruction.children, sid)
        if isinstance(instruction, ForceRelease | AbortAssignment):
            await self._drop(bundle, f"{type(instruction).__name__} [{sid}]")
            return []
        if isinstance(instruction, AbortSplit):
            for child in instruction.children:
                await self._drop(NamespaceBundle.parse(child), f"AbortSplit of {name} [{sid}]")
            return []
        return []  # OwnerChanged: lookups read the ownership cache

    async def _take(self, bundle: NamespaceBundle, sid: str) -> list[Event]:
        result = await self.ownership.try_acquire(bundle)
        self._acquired[str(bundle)] = result
        if result.acquired:
            self._report_changed()
            return [
                AssignmentDone(
                    bundle=str(bundle),
                    broker=self.broker_id,
                    stimulus_id=sid,
                    at_ms=self._now(),
                    by=self.broker_id,
                )
            ]
        return [
            AssignmentFailed(
                bundle=str(bundle),
                broker=self.broker_id,
                stimulus_id=sid,
                at_ms=self._now(),
                by=self.broker_id,
                reason=f"owned by {result.owner.broker_id}",
            )
        ]

    async def _give(self, bundle: NamespaceBundle, destination: str, sid: str) -> list[Event]:
        """The transfer's second half: the destination takes the bundle now."""
        try:
            await self._hand_over_retrying(bundle, destination)
        except BrokerLBError as exc:
            logger.warning(
                "Destination %s did not take %s (%s); the next lookup will place it", destination, bundle, exc
            )
            if self.state_hand_off is not None:
                await self.state_hand_off.follow_owner(bundle)
            return [
                AssignmentFailed(
                    bundle=str(bundle),
                    broker=destination,
                    stimulus_id=sid,
                    at_ms=self._now(),
                    by=self.broker_id,
                    reason=str(exc),
                )
            ]
        return [
            AssignmentDone(
                bundle=str(bundle),
                broker=destination,
                stimulus_id=sid,
                at_ms=self._now(),
                by=self.broker_id,
                reason=f"handed over to {destination}",
            )
        ]

    async def _hand_over_retrying(self, bundle: NamespaceBundle, target: str) -> None:
        """Make ``target`` take the released bundle, retried a few times (doubling from 20 ms, about
        1 s in all) while the refusal is retriable or a conflict -- the target's cache may still show
        the node being unloaded, or still show us as the owner, and giving up then would strand the
        topic state handed to it."""
        delay = HAND_OVER_FIRST_RETRY
        for attempt in range(HAND_OVER_ATTEMPTS):
            try:
                await self.hand_over(bundle, target)
                return
            except BrokerLBError as exc:
                conflict = isinstance(exc, ConflictError) or getattr(exc, "status", None) == 409
                if not (exc.retriable or conflict) or attempt == HAND_OVER_ATTEMPTS - 1:
                    raise
            await self.states.clock.sleep(delay)
            delay *= 2

    async def _close(self, bundle: NamespaceBundle, transfer_to: str | None, sid: str) -> list[Event]:
        name = str(bundle)
        if self.ownership.is_owned(bundle):
            await self.ownership.disable(bundle)
        target = self._targets.get(name, transfer_to)
        if target:
            self.topics.fence_bundle(name)  # clients stay connected until the next owner has the bundle
            if self.state_hand_off is not None:
                await self.state_hand_off.send(bundle, target)
            if transfer_to is None and target != self.broker_id:  # the state only (a part of a merge):
                # nobody takes this bundle; its clients look the topics up
                await self.topics.close_bundle(name, self._unload_timeout(), UNLOAD)
        else:
            await self.topics.close_bundle(name, self._unload_timeout(), UNLOAD)
        await self.ownership.release(bundle)
        self._report_changed()
        return [ReleaseDone(bundle=name, stimulus_id=sid, at_ms=self._now(), by=self.broker_id)]

    async def _disconnect(self, name: str, instruction: DisconnectClients) -> None:
        if instruction.redirect_to and name in self._announced:
            cause = CloseCause.transfer(instruction.redirect_to)
        else:  # an unload (its state may have gone to the next owner): clients look the topic up
            cause = LOST if instruction.lost else UNLOAD
        closed = await self.topics.close_bundle(name, self._unload_timeout(), cause)
        if instruction.lost:
            self._report_changed()
        logger.debug("Closed %d topics of %s (%s)", closed, name, cause)

    async def _split(self, bundle: NamespaceBundle, children: tuple[str, ...], sid: str) -> list[Event]:
        boundaries = [NamespaceBundle.parse(c).lower for c in children[1:]]
        try:
            await split_and_own(self.metadata, self.ownership, bundle, boundaries)
        except BaseException as exc:
            self._split_errors[str(bundle)] = exc
            if not isinstance(exc, BrokerLBError):
                raise
            return [
                SplitFailed(
                    bundle=str(bundle), stimulus_id=sid, at_ms=self._now(), by=self.broker_id, reason=str(exc)
                )
            ]
        await self.bundles.refresh(bundle.namespace)
        self._report_changed()
        return [SplitDone(bundle=str(bundle), stimulus_id=sid, at_ms=self._now(), by=self.broker_id)]

    async def _drop(self, bundle: NamespaceBundle, why: str) -> None:
        """The watchdog gave up on a move: delete this broker's node of the bundle if it is there --
        held, or created by an acquisition the store did not answer and so never held."""
        if self.owns(bundle):
            logger.warning("Dropping %s: %s", bundle, why)
            await self.topics.close_bundle(str(bundle), self._unload_timeout(), UNLOAD)
            await self.ownership.release(bundle)
            self._report_changed()
        elif await self.ownership.delete_unheld(bundle):
            logger.warning("Dropped %s (never held here): %s", bundle, why)

    def _unload_timeout(self) -> float:
        return self.conf.namespaceBundleUnloadingTimeoutMs / 1000

    def _now(self) -> int:
        return self.states.now_ms()


def _children(bundle: NamespaceBundle, boundaries: Sequence[int]) -> tuple[str, ...]:
    """The child bundles' names of a split at ``boundaries`` (inside the bundle's range)."""
    edges = [bundle.lower, *sorted(boundaries), bundle.upper]
    return tuple(
        str(NamespaceBundle(bundle.namespace, lo, hi)) for lo, hi in zip(edges, edges[1:], strict=False)
    )
