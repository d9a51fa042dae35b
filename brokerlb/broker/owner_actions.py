"""What the owner of a bundle does to give it up, hand it over or split it.

* **unload** (Pulsar's ``OwnedBundle.handleUnloadRequest``): mark the ownership node
  ``disabled`` (lookups now answer "is being unloaded"), close the bundle's topics
  (``namespaceBundleUnloadingTimeoutMs``; a timeout is not an error), delete the
  ownership node, force a load report (the loss shows in ``lastBundleLosses``);
* **transfer** (unload with a destination, Pulsar's PIP-192 transfer with PIP-307's
  close): mark the node ``disabled``, *fence* the bundle's topics (connections stay,
  publishes are ignored), delete the ownership node, let the destination take the
  bundle at once (``PUT .../{bundle}/acquire``), and only then close the topics,
  telling the clients the new owner (:class:`~brokerlb.broker.topics.CloseCause`
  ``transfer``), so they reconnect there without a lookup and re-send what was not
  acknowledged. If the destination cannot take the bundle, the close is a plain unload
  (clients look up; the next lookup places the bundle, the leader still prefers the
  destination);
* **topic state** (lossless planned moves, when the broker has a data path): before the bundle
  is released, its topics' retained messages and cursors go to the next owner
  (:class:`~brokerlb.broker.handoff.TopicHandOff`): the transfer's destination, or for an
  unload of a bundle with state, the broker the leader's placement chooses at that moment
  (as Pulsar 3.x unloads with a destination) -- which then takes the bundle at once; the
  clients of an unload are still told only to look the topic up again (no URL). The topics
  are fenced first, so nothing acknowledged to a producer is missing from the state;
* **split** (``NamespaceService.splitAndOwnBundle``): boundaries from the algorithm
  (none → nothing to do) → own the children → compare-and-set the boundaries →
  release the parent (:func:`~brokerlb.coordination.split_and_own`) → force a load
  report → unload the children in the background only if asked.

Actions on one bundle run one at a time (a lock per bundle name): a leader's split
and a shedding transfer of the same bundle may reach its owner together, and the
second must see what the first did. After waiting, an unload of a bundle no longer
owned answers ``False``; a split of a bundle no longer owned (unloaded, transferred
or split meanwhile) raises :class:`~brokerlb.errors.StaleBundleError` (503) -- the
caller looks the bundle up again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Protocol

from brokerlb.broker.bundles_cache import NamespaceBundlesCache
from brokerlb.broker.topics import LOST, UNLOAD, CloseCause, TopicRegistry
from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.config import ServiceConfig
from brokerlb.coordination import BundleMetadata, OwnershipManager, split_and_own
from brokerlb.errors import (
    BrokerLBError,
    ConflictError,
    InvalidBundlesError,
    InvalidSplitError,
    StaleBundleError,
)
from brokerlb.ring import (
    BundleSplitOption,
    NamespaceBundle,
    TopicRates,
    parse_boundary,
    resolve_split_algorithm,
)

__all__ = ["OwnerActions", "SplitOutcome", "parse_split_boundaries"]

logger = logging.getLogger(__name__)

#: Attempts (and the first pause, doubling) to make the next owner take a bundle after the release.
HAND_OVER_ATTEMPTS = 6
HAND_OVER_FIRST_RETRY = 0.02

#: ``hand_over(bundle, destination)``: ask the destination broker to take the bundle.
HandOver = Callable[[NamespaceBundle, str], Awaitable[None]]


class StateHandOff(Protocol):
    """Moves a bundle's topic state to the next owner (:class:`~brokerlb.broker.handoff.TopicHandOff`)."""

    #: this broker's id (a destination equal to it means "this broker re-owns the bundle")
    self_id: str

    def has_state(self, bundle: str) -> bool: ...

    async def choose_destination(self, bundle: NamespaceBundle) -> str | None: ...

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
    """Unload, transfer and split of bundles this broker owns."""

    def __init__(
        self,
        conf: ServiceConfig,
        *,
        ownership: OwnershipManager,
        metadata: BundleMetadata,
        bundles: NamespaceBundlesCache,
        topics: TopicRegistry,
        hand_over: HandOver,
        report_changed: Callable[[], None],
        clock: Clock = SYSTEM_CLOCK,
        state_hand_off: StateHandOff | None = None,
    ) -> None:
        self.conf = conf
        #: Times the steps of an unload (for the log).
        self.clock = clock
        self.ownership = ownership
        self.metadata = metadata
        self.bundles = bundles
        self.topics = topics
        self._hand_over = hand_over
        self._report_changed = report_changed
        self.state_hand_off = state_hand_off
        self._background: set[asyncio.Task[None]] = set()
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

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

    async def unload(self, bundle: NamespaceBundle, destination: str | None = None) -> bool:
        """Give ``bundle`` up (to ``destination`` when given); ``False`` if we did not own it."""
        if not self.owns(bundle):
            return False
        async with self._exclusive(str(bundle)):
            if not self.owns(bundle):  # unloaded, transferred or split while we waited
                return False
            return await self._unload(bundle, destination)

    async def _unload(self, bundle: NamespaceBundle, destination: str | None) -> bool:
        name = str(bundle)
        started = self.clock.monotonic()
        if self.ownership.is_owned(bundle):
            await self.ownership.disable(bundle)
        timeout = self.conf.namespaceBundleUnloadingTimeoutMs / 1000
        target = destination
        hand_off = self.state_hand_off
        if not target and hand_off is not None and hand_off.has_state(name):
            target = await hand_off.choose_destination(bundle)
        if not target:
            closed = await self.topics.close_bundle(name, timeout, UNLOAD)
            await self.ownership.release(bundle)
            self._report_changed()
            logger.info(
                "Unloaded bundle %s in %.0f ms (%d topics closed)",
                name,
                (self.clock.monotonic() - started) * 1e3,
                closed,
            )
            return True
        self.topics.fence_bundle(name)
        if hand_off is not None:
            await hand_off.send(bundle, target)
        fenced = self.clock.monotonic()
        cause = UNLOAD
        try:
            await self.ownership.release(bundle)
            released = self.clock.monotonic()
            self._report_changed()
            try:
                await self._hand_over_retrying(bundle, target)
                if destination:
                    cause = CloseCause.transfer(destination)
            except BrokerLBError as exc:
                logger.warning(
                    "Destination %s did not take %s (%s); the next lookup will place it",
                    target,
                    name,
                    exc,
                )
                if hand_off is not None:
                    await hand_off.follow_owner(bundle)
        finally:
            handed = self.clock.monotonic()
            closed = await self.topics.close_bundle(name, timeout, cause)
        logger.info(
            "Unloaded bundle %s in %.0f ms (disable and hand off %.0f, release %.0f, hand over %.0f, "
            "close %.0f; %d topics closed), %s",
            name,
            (self.clock.monotonic() - started) * 1e3,
            (fenced - started) * 1e3,
            (released - fenced) * 1e3,
            (handed - released) * 1e3,
            (self.clock.monotonic() - handed) * 1e3,
            closed,
            f"transferred to {destination}"
            if cause.destination
            else f"placed on {target}, clients look it up",
        )
        return True

    async def _hand_over_retrying(self, bundle: NamespaceBundle, target: str) -> None:
        """Make ``target`` take the released bundle.

        To this broker itself: acquire the ownership node directly (the lookup path reads the
        ownership cache, which right after the release may still show our own node). To another
        broker: ``hand_over``, retried a few times (doubling from 20 ms, about 1 s in all) while the
        refusal is retriable or a conflict -- the target's cache may still show the node being
        unloaded, or still show us as the owner, and giving up then would strand the topic state
        handed to it.
        """
        if self.state_hand_off is not None and target == self.state_hand_off.self_id:
            result = await self.ownership.try_acquire(bundle)
            if not result.acquired:
                raise ConflictError(
                    f"Bundle {bundle} was taken by another broker before this one re-owned it"
                )
            self._report_changed()
            return
        delay = HAND_OVER_FIRST_RETRY
        for attempt in range(HAND_OVER_ATTEMPTS):
            try:
                await self._hand_over(bundle, target)
                return
            except BrokerLBError as exc:
                conflict = isinstance(exc, ConflictError) or getattr(exc, "status", None) == 409
                if not (exc.retriable or conflict) or attempt == HAND_OVER_ATTEMPTS - 1:
                    raise
            await asyncio.sleep(delay)
            delay *= 2

    async def close_lost(self, bundle: str) -> None:
        """The bundle was lost with the session: stop serving its topics."""
        await self.topics.close_bundle(bundle, self.conf.namespaceBundleUnloadingTimeoutMs / 1000, LOST)
        self._report_changed()

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
        async with self._exclusive(str(bundle)):
            if not self.ownership.is_owned(bundle):
                raise StaleBundleError(
                    f"Bundle {bundle} is no longer owned by this broker "
                    "(unloaded, transferred or split meanwhile); look it up again"
                )
            boundaries = algo.split_boundaries(self._split_option(bundle, positions)) or []
            return await self._split(bundle, algo.name, boundaries, unload)

    async def _split(
        self, bundle: NamespaceBundle, algorithm: str, boundaries: list[int], unload: bool
    ) -> SplitOutcome:
        if not boundaries:
            logger.info("No valid boundary found to split %s with %s", bundle, algorithm)
            return SplitOutcome(str(bundle), (), ())
        children = await split_and_own(self.metadata, self.ownership, bundle, boundaries)
        await self.bundles.refresh(bundle.namespace)
        self.topics.forget_bundle_hooks([str(bundle)])
        self._report_changed()
        logger.info(
            "Split %s at %s into %s",
            bundle,
            [f"0x{b:08x}" for b in boundaries],
            ", ".join(c.range for c in children),
        )
        if unload:
            self._spawn(self._unload_all(children))
        return SplitOutcome(str(bundle), tuple(str(c) for c in children), tuple(boundaries))

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
