"""The topics a broker serves, their stats, and what to close when a bundle leaves.

This is the seam between ownership and the data path. Whatever serves a topic
(the WebSocket produce/consume path, a synthetic load generator, a test) attaches
it with :meth:`TopicRegistry.attach`, passing a ``close`` callback, and keeps its
:class:`TopicStats` up to date with :meth:`TopicRegistry.update_stats`. The broker then:

* rolls the topics' stats up per bundle into Pulsar's
  :class:`~brokerlb.model.NamespaceBundleStats` for the load report
  (:meth:`TopicRegistry.bundle_stats`) and ``broker-stats/topics``
  (:meth:`TopicRegistry.topics_report`);
* on unload, transfer or loss of a bundle calls every ``close`` callback of its topics
  with the :class:`CloseCause` (unload, transfer to a named broker, loss) --
  :meth:`TopicRegistry.close_bundle`, bounded by ``namespaceBundleUnloadingTimeoutMs``
  (a timeout is logged, not an error, as in Pulsar) -- and forgets them;
* before a transfer hands the bundle over, fences its topics
  (:meth:`TopicRegistry.fence_bundle`, PIP-307): they keep their connections but ignore
  publishes until the close tells the clients where the bundle went.

Topics are grouped by the bundle their name hashes into *now*: the registry asks a
``bundle_of(topic)`` function (the namespace bundle cache), so after a split the
topics of the parent are counted under the children without any re-keying (Pulsar's
``refreshTopicToStatsMaps``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from brokerlb.clock import SYSTEM_CLOCK, Clock
from brokerlb.errors import InvalidLoadDataError
from brokerlb.model import NamespaceBundleStats
from brokerlb.naming import TopicName

__all__ = ["TopicStats", "TopicRegistry", "CloseHook", "FenceHook", "CloseCause", "UNLOAD", "LOST"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CloseCause:
    """Why a bundle's topics stop being served here: ``unload``, ``transfer`` (to ``destination``) or ``lost``."""

    kind: str = "unload"
    #: The broker id that owns the bundle now (transfer only).
    destination: str | None = None

    @classmethod
    def transfer(cls, destination: str) -> CloseCause:
        return cls("transfer", destination)


UNLOAD = CloseCause("unload")
LOST = CloseCause("lost")

#: Called when the topic (or bundle) must stop being served here.
CloseHook = Callable[[CloseCause], Awaitable[None]]
#: Called (synchronously) when the topic must stop accepting messages but keep its connections.
FenceHook = Callable[[], None]


@dataclass(frozen=True, slots=True)
class TopicStats:
    """A topic's current rates and connections (Pulsar's topic stats names in :meth:`to_json`)."""

    msg_rate_in: float = 0.0
    msg_throughput_in: float = 0.0
    msg_rate_out: float = 0.0
    msg_throughput_out: float = 0.0
    producer_count: int = 0
    consumer_count: int = 0

    def __post_init__(self) -> None:
        # NamespaceBundleStats validates the same fields (finite, >= 0); reuse its rules.
        self.as_bundle_stats()

    def as_bundle_stats(self) -> NamespaceBundleStats:
        """This topic alone as a bundle sample (``topics=1``)."""
        return NamespaceBundleStats(
            msg_rate_in=self.msg_rate_in,
            msg_throughput_in=self.msg_throughput_in,
            msg_rate_out=self.msg_rate_out,
            msg_throughput_out=self.msg_throughput_out,
            consumer_count=self.consumer_count,
            producer_count=self.producer_count,
            topics=1,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "msgRateIn": self.msg_rate_in,
            "msgThroughputIn": self.msg_throughput_in,
            "msgRateOut": self.msg_rate_out,
            "msgThroughputOut": self.msg_throughput_out,
            "producerCount": self.producer_count,
            "consumerCount": self.consumer_count,
        }


@dataclass(slots=True)
class _Topic:
    name: TopicName
    stats: TopicStats
    close: CloseHook | None
    fence: FenceHook | None = None


def _sum(stats: Iterable[TopicStats]) -> NamespaceBundleStats:
    rate_in = tput_in = rate_out = tput_out = 0.0
    producers = consumers = topics = 0
    for s in stats:
        rate_in += s.msg_rate_in
        tput_in += s.msg_throughput_in
        rate_out += s.msg_rate_out
        tput_out += s.msg_throughput_out
        producers += s.producer_count
        consumers += s.consumer_count
        topics += 1
    return NamespaceBundleStats(
        msg_rate_in=rate_in,
        msg_throughput_in=tput_in,
        msg_rate_out=rate_out,
        msg_throughput_out=tput_out,
        consumer_count=consumers,
        producer_count=producers,
        topics=topics,
    )


class TopicRegistry:
    """Topics served by this broker, grouped by their current bundle (``bundle_of``)."""

    def __init__(self, bundle_of: Callable[[TopicName], str], *, clock: Clock = SYSTEM_CLOCK) -> None:
        self._bundle_of = bundle_of
        #: Times the close of a bundle (its ``timeout``).
        self._clock = clock
        self._topics: dict[str, _Topic] = {}
        #: ``listener(bundle, why)`` when a bundle's topics stop accepting publishes (fenced or closing)
        self._stop_listeners: list[Callable[[str, str], None]] = []

    # ------------------------------------------------------------------ serving
    def attach(
        self,
        topic: TopicName | str,
        close: CloseHook | None = None,
        stats: TopicStats | None = None,
        fence: FenceHook | None = None,
    ) -> str:
        """Start serving ``topic`` here; returns its bundle. ``close`` runs when the bundle leaves,
        ``fence`` when a transfer starts."""
        name = TopicName.parse(topic)
        self._topics[str(name)] = _Topic(name, stats or TopicStats(), close, fence)
        return self._bundle_of(name)

    def detach(self, topic: TopicName | str) -> None:
        """Stop serving ``topic`` (no close callback is run). No error if unknown."""
        self._topics.pop(str(TopicName.parse(topic)), None)

    def update_stats(self, topic: TopicName | str, stats: TopicStats) -> None:
        """Replace a served topic's stats; an unknown topic is an error (attach it first)."""
        entry = self._topics.get(str(TopicName.parse(topic)))
        if entry is None:
            raise InvalidLoadDataError(
                f"Topic {topic} is not served by this broker", field="topic", value=str(topic)
            )
        entry.stats = stats

    def add_stop_listener(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(bundle, why)`` whenever a bundle's topics stop accepting publishes here
        (``fenced`` for a transfer, ``closed: <cause>`` for an unload or a loss)."""
        self._stop_listeners.append(listener)

    def _stopped(self, bundle: str, why: str) -> None:
        for listener in list(self._stop_listeners):
            try:
                listener(bundle, why)
            except Exception:
                logger.exception("Stop listener failed for %s", bundle)

    # ------------------------------------------------------------------ reading
    def __contains__(self, topic: object) -> bool:
        return isinstance(topic, str | TopicName) and str(topic) in self._topics

    def __len__(self) -> int:
        return len(self._topics)

    def stats_of(self, topic: TopicName | str) -> TopicStats | None:
        entry = self._topics.get(str(TopicName.parse(topic)))
        return None if entry is None else entry.stats

    def by_bundle(self) -> dict[str, list[str]]:
        """Bundle name → full names of its topics served here (sorted)."""
        out: dict[str, list[str]] = defaultdict(list)
        for full, entry in self._topics.items():
            out[self._bundle_of(entry.name)].append(full)
        return {bundle: sorted(names) for bundle, names in out.items()}

    def topics_in(self, bundle: str) -> list[str]:
        return self.by_bundle().get(bundle, [])

    def bundle_stats(self, owned: Iterable[str] = ()) -> dict[str, NamespaceBundleStats]:
        """Per-bundle sums of the topics' stats; each bundle in ``owned`` appears, idle or not."""
        grouped: dict[str, list[TopicStats]] = {bundle: [] for bundle in owned}
        for entry in self._topics.values():
            grouped.setdefault(self._bundle_of(entry.name), []).append(entry.stats)
        return {bundle: _sum(stats) for bundle, stats in grouped.items()}

    def topics_report(self) -> dict[str, dict[str, dict[str, dict[str, Any]]]]:
        """Pulsar's ``broker-stats/topics`` shape: namespace → bundle range → domain → topic → stats."""
        out: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        for full, entry in sorted(self._topics.items()):
            bundle = self._bundle_of(entry.name)
            namespace, _, rng = bundle.rpartition("/")
            domain = out.setdefault(namespace, {}).setdefault(rng, {}).setdefault(entry.name.domain, {})
            domain[full] = entry.stats.to_json()
        return out

    # ------------------------------------------------------------------ closing
    def fence_bundle(self, bundle: str) -> int:
        """Fence every topic of ``bundle`` (its ``fence`` callback); returns how many topics it has."""
        names = self.topics_in(bundle)
        self._stopped(bundle, "fenced")
        for name in names:
            fence = self._topics[name].fence
            if fence is not None:
                try:
                    fence()
                except Exception:
                    logger.exception("Fencing topic %s failed", name)
        return len(names)

    async def close_bundle(self, bundle: str, timeout: float, cause: CloseCause = UNLOAD) -> int:
        """Close every topic of ``bundle`` (their close callbacks), within ``timeout`` s on the clock;
        returns the topics closed. Callbacks still running at the timeout are cancelled (logged, not
        an error)."""
        names = self.topics_in(bundle)
        self._stopped(bundle, f"closed: {cause.kind}")
        entries = [self._topics.pop(name) for name in names]
        hooks = [e.close for e in entries if e.close is not None]
        if hooks:
            tasks = [asyncio.ensure_future(_run(h, bundle, cause)) for h in hooks]
            with contextlib.suppress(TimeoutError):  # cancelling asyncio.wait leaves the tasks running
                await self._clock.wait_for(asyncio.wait(tasks), timeout)
            pending = [task for task in tasks if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                logger.warning(
                    "Closing bundle %s: %d of %d close callbacks did not finish within %.1f s",
                    bundle,
                    len(pending),
                    len(hooks),
                    timeout,
                )
        return len(entries)


async def _run(hook: CloseHook, bundle: str, cause: CloseCause) -> None:
    try:
        await hook(cause)
    except Exception:
        logger.exception("A close callback of bundle %s failed", bundle)
