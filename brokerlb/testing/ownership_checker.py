"""The fault campaign's checker: ownership invariants proved over every broker's recorded history.

Input (:class:`CampaignFacts`): the brokers' :class:`~brokerlb.testing.history.HistoryEvent` lines,
and what the campaign itself knows -- when it killed or stopped each broker process (``deaths``),
when it froze one (``frozen``, SIGSTOP to SIGCONT), the topics its clients use, the split
boundaries it saw committed and the namespaces' final boundaries. Output
(:class:`CampaignVerdict`): counts and the violations, each with the events behind it.

What is proved (times on the machine's monotonic clock, in ns):

1. **No double serving**: no instant at which two broker processes accept publishes for one topic.
   A process accepts publishes for a bundle from ``serve-start`` to ``serve-stop`` -- except while
   it is frozen and after it died. Two such spans of different processes whose bundle ranges
   overlap (same namespace) and whose times overlap are one *double-serving instant* (counted once
   per pair of spans).
2. **Re-ownership**: every campaign topic is served by some process at the end; and when a process dies (SIGKILL) or is frozen longer than the session timeout,
   every bundle it was serving that a campaign topic hashes into is served again by another
   process; the time from the death to the first such ``serve-start`` is a re-ownership time, and
   one above ``session timeout + reown_slack`` is reported (``slow_reownership``). While the
   metadata store is down (``store_outages``: ZooKeeper restarted) no bundle can change owner, and
   a restarted ZooKeeper gives every session it restores a fresh timeout, so the time is counted
   from the later of the death and the end of the last outage before the bundle was served again
   (``reownership_from_death_ns`` keeps the raw times). A bundle never served again before the end
   is ``not_reowned``. A re-ownership is *alone* when no other fault touched the cluster from a
   session timeout (plus the slack) before the death until the bundle was served again: no other
   process killed or frozen (a frozen or dead leader cannot clean up; a broker that died just
   before may still be registered and be chosen as the new owner) and the store not down. The
   bound is Pulsar's promise for such a death; ``slow_reownership_alone`` lists the ones over it,
   and every slow message names the other faults of its window.
3. **No stuck transition**: a bundle ``disable``-d by its owner is released or lost within
   ``watchdog_ns`` (Pulsar's ``loadBalancerInFlightServiceUnitStateWaitingTimeInMillis`` plus one
   tick of the ownership watchdog, which resolves what stayed in flight that long).
4. **No split boundary lost**: every boundary a committed split created is among the namespace's
   final boundaries (no merges run in a campaign).
5. **Stale leader actions refused**: a ``leader-action`` accepted with epoch *E* at *t* while a
   leader of a higher epoch had already started (``lead-start`` before *t*) is a violation; refused
   ones are counted.

Pure: no I/O; the campaign shell reads the files.

>>> from brokerlb.testing.history import HistoryEvent as E
>>> b = "t/ns/0x00000000_0xffffffff"
>>> facts = CampaignFacts(events=[E(0, "a", 1, "serve-start", b), E(10, "b", 2, "serve-start", b)],
...                       end_ns=20, topics={"persistent://t/ns/x"})
>>> check_campaign(facts).double_serving
1
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from brokerlb.naming import TopicName
from brokerlb.ring.bundles import NamespaceBundle
from brokerlb.ring.hashing import FULL_UPPER_BOUND, topic_hash
from brokerlb.testing.history import HistoryEvent

__all__ = ["CampaignFacts", "CampaignVerdict", "ServingSpan", "check_campaign", "percentile"]

SECOND_NS = 1_000_000_000


@dataclass(frozen=True, slots=True)
class ServingSpan:
    """A process accepting publishes for a bundle over ``[start_ns, end_ns)``."""

    pid: int
    broker: str
    bundle: str
    start_ns: int
    end_ns: int

    @property
    def namespace(self) -> str:
        return self.bundle.rsplit("/", 1)[0]


@dataclass(slots=True)
class CampaignFacts:
    """What the checker reads (module docstring). Times are monotonic nanoseconds."""

    events: list[HistoryEvent]
    end_ns: int
    #: process id -> when it was killed (SIGKILL) or stopped
    deaths: Mapping[int, int] = field(default_factory=dict)
    #: process id -> [(SIGSTOP, SIGCONT)] spans
    frozen: Mapping[int, list[tuple[int, int]]] = field(default_factory=dict)
    #: [(down, up)] spans in which the metadata store was not serving (ZooKeeper killed and restarted)
    store_outages: list[tuple[int, int]] = field(default_factory=list)
    #: full names of the topics the campaign's clients use
    topics: set[str] = field(default_factory=set)
    session_timeout_ns: int = 5 * SECOND_NS
    reown_slack_ns: int = 2 * SECOND_NS
    watchdog_ns: int = 30 * SECOND_NS
    #: namespace -> boundaries created by committed splits
    split_boundaries: Mapping[str, set[int]] = field(default_factory=dict)
    #: namespace -> its boundaries at the end of the campaign
    final_boundaries: Mapping[str, list[int]] = field(default_factory=dict)


@dataclass(slots=True)
class CampaignVerdict:
    double_serving: int = 0
    double_serving_ns: int = 0
    #: re-ownership times (ns), one per (death, bundle) re-owned
    reownership_ns: list[int] = field(default_factory=list)
    #: the same, counted from the death even when the store was down meanwhile
    reownership_from_death_ns: list[int] = field(default_factory=list)
    slow_reownership: list[str] = field(default_factory=list)
    #: re-ownership times (ns) of deaths with no other fault in their window (module docstring)
    reownership_alone_ns: list[int] = field(default_factory=list)
    slow_reownership_alone: list[str] = field(default_factory=list)
    not_reowned: list[str] = field(default_factory=list)
    #: campaign topics no process served at the end (after the campaign let the cluster heal)
    unserved_at_end: list[str] = field(default_factory=list)
    stuck_transitions: list[str] = field(default_factory=list)
    lost_boundaries: list[str] = field(default_factory=list)
    stale_actions_accepted: list[str] = field(default_factory=list)
    stale_actions_refused: int = 0
    leader_actions_accepted: int = 0
    overlaps: list[str] = field(default_factory=list)
    spans: int = 0

    @property
    def safe(self) -> bool:
        """The safety properties hold: no double serving, no boundary lost, no stale action accepted."""
        return not (self.double_serving or self.lost_boundaries or self.stale_actions_accepted)

    def summary(self) -> dict[str, object]:
        ms = sorted(n / 1e6 for n in self.reownership_ns)
        raw = sorted(n / 1e6 for n in self.reownership_from_death_ns)
        alone = sorted(n / 1e6 for n in self.reownership_alone_ns)
        return {
            "double_serving_instants": self.double_serving,
            "double_serving_ms": round(self.double_serving_ns / 1e6, 1),
            "reownership_count": len(ms),
            "reownership_ms_p50": round(percentile(ms, 50), 1) if ms else None,
            "reownership_ms_p99": round(percentile(ms, 99), 1) if ms else None,
            "reownership_ms_max": round(ms[-1], 1) if ms else None,
            "reownership_from_death_ms_p99": round(percentile(raw, 99), 1) if raw else None,
            "reownership_from_death_ms_max": round(raw[-1], 1) if raw else None,
            "slow_reownership": len(self.slow_reownership),
            "reownership_alone_count": len(alone),
            "reownership_alone_ms_p50": round(percentile(alone, 50), 1) if alone else None,
            "reownership_alone_ms_p99": round(percentile(alone, 99), 1) if alone else None,
            "reownership_alone_ms_max": round(alone[-1], 1) if alone else None,
            "slow_reownership_alone": len(self.slow_reownership_alone),
            "not_reowned": len(self.not_reowned),
            "unserved_at_end": len(self.unserved_at_end),
            "stuck_transitions": len(self.stuck_transitions),
            "lost_split_boundaries": len(self.lost_boundaries),
            "stale_leader_actions_refused": self.stale_actions_refused,
            "stale_leader_actions_accepted": len(self.stale_actions_accepted),
            "leader_actions_accepted": self.leader_actions_accepted,
            "serving_spans": self.spans,
        }


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (not empty)."""
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[int(min(rank, len(sorted_values))) - 1]


def check_campaign(facts: CampaignFacts) -> CampaignVerdict:
    verdict = CampaignVerdict()
    events = sorted(facts.events, key=lambda e: e.at_ns)
    spans = serving_spans(events, facts)
    verdict.spans = len(spans)
    _check_double_serving(spans, verdict)
    _check_reownership(spans, facts, verdict)
    _check_served_at_end(spans, facts, verdict)
    _check_stuck(events, facts, verdict)
    _check_boundaries(facts, verdict)
    _check_leader_actions(events, verdict)
    return verdict


# --------------------------------------------------------------------------- spans


def serving_spans(events: Iterable[HistoryEvent], facts: CampaignFacts) -> list[ServingSpan]:
    """The spans during which each process accepted publishes for each bundle (frozen time cut out)."""
    open_at: dict[tuple[int, str], tuple[int, str]] = {}
    raw: list[ServingSpan] = []
    for e in events:
        key = (e.pid, e.bundle)
        if e.kind == "serve-start":
            open_at.setdefault(key, (e.at_ns, e.broker))
        elif e.kind in ("serve-stop", "lost", "release"):
            started = open_at.pop(key, None)
            if started is not None:
                raw.append(ServingSpan(e.pid, started[1], e.bundle, started[0], max(started[0], e.at_ns)))
    for (pid, bundle), (start, broker) in open_at.items():
        raw.append(ServingSpan(pid, broker, bundle, start, facts.end_ns))
    leases = _lease_windows(events, facts)
    out: list[ServingSpan] = []
    for span in raw:
        end = min(span.end_ns, facts.deaths.get(span.pid, span.end_ns))
        pieces = [(span.start_ns, end)]
        for f0, f1 in facts.frozen.get(span.pid, []):
            pieces = [p for a, b in pieces for p in _cut(a, b, f0, f1)]
        for f0, f1 in leases.get(span.pid, []):
            pieces = [p for a, b in pieces for p in _cut(a, b, f0, f1)]
        out.extend(ServingSpan(span.pid, span.broker, span.bundle, a, b) for a, b in pieces if a < b)
    return out


def _lease_windows(events: Iterable[HistoryEvent], facts: CampaignFacts) -> dict[int, list[tuple[int, int]]]:
    """Per process, the spans in which it could *not* accept publishes by its own session rule: from
    the last ``lease`` horizon (+ a quarter of the session timeout, the most it may have moved unwritten)
    to the next ``lease`` line."""
    quarter = facts.session_timeout_ns // 4
    lines: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for e in events:
        if e.kind == "lease" and e.until_ns is not None:
            lines[e.pid].append((e.at_ns, e.until_ns))
    out: dict[int, list[tuple[int, int]]] = {}
    for pid, written in lines.items():
        written.sort()
        gaps = []
        for (at, until), nxt in zip(written, [*written[1:], (facts.end_ns + 1, 0)], strict=True):
            blind_from = until + quarter
            if blind_from < nxt[0]:
                gaps.append((max(blind_from, at), nxt[0]))
        out[pid] = gaps
    return out


def _cut(a: int, b: int, f0: int, f1: int) -> list[tuple[int, int]]:
    if f1 <= a or f0 >= b:
        return [(a, b)]
    return [(x, y) for x, y in ((a, f0), (f1, b)) if x < y]


@lru_cache(maxsize=65536)
def _range(bundle: str) -> tuple[int, int]:
    """``[lower, upper)`` of a bundle, the full upper bound included (upper + 1)."""
    b = NamespaceBundle.parse(bundle)
    return b.lower, b.upper + (1 if b.upper == FULL_UPPER_BOUND else 0)


def _ranges_overlap(x: str, y: str) -> bool:
    (l1, u1), (l2, u2) = _range(x), _range(y)
    return max(l1, l2) < min(u1, u2)


def _check_double_serving(spans: list[ServingSpan], verdict: CampaignVerdict) -> None:
    by_namespace: dict[str, list[ServingSpan]] = defaultdict(list)
    for s in spans:
        by_namespace[s.namespace].append(s)
    for group in by_namespace.values():
        group.sort(key=lambda s: s.start_ns)
        active: list[ServingSpan] = []
        for span in group:
            active = [a for a in active if a.end_ns > span.start_ns]
            for other in active:
                if other.pid != span.pid and _ranges_overlap(other.bundle, span.bundle):
                    overlap = min(other.end_ns, span.end_ns) - span.start_ns
                    verdict.double_serving += 1
                    verdict.double_serving_ns += overlap
                    verdict.overlaps.append(
                        f"{other.broker} (pid {other.pid}) served {other.bundle} "
                        f"[{other.start_ns}, {other.end_ns}) while {span.broker} (pid {span.pid}) "
                        f"served {span.bundle} from {span.start_ns}: {overlap / 1e6:.1f} ms"
                    )
            active.append(span)


# --------------------------------------------------------------------------- liveness


def _deaths(facts: CampaignFacts) -> list[tuple[int, int, str]]:
    """(pid, when the cluster lost it, how): kills, and freezes longer than the session timeout."""
    out = [(pid, at, "killed") for pid, at in facts.deaths.items()]
    for pid, spans in facts.frozen.items():
        for f0, f1 in spans:
            if f1 - f0 > facts.session_timeout_ns:
                out.append((pid, f0, "frozen"))
    return sorted(out, key=lambda d: d[1])


def _clock_start(died: int, again: int, outages: list[tuple[int, int]]) -> int:
    """When the re-ownership clock starts: the death, or the end of the last store outage that ran
    after it and began before the bundle was served again.

    >>> _clock_start(100, 900, [(50, 120), (300, 400), (950, 990)])
    400
    """
    start = died
    for down, up in outages:
        if down < again and up > start:
            start = max(start, up)
    return start


def _wanted(bundle: str, hashes: Mapping[str, list[int]]) -> bool:
    lower, upper = _range(bundle)
    return any(lower <= h < upper for h in hashes.get(bundle.rsplit("/", 1)[0], []))


def _check_reownership(spans: list[ServingSpan], facts: CampaignFacts, verdict: CampaignVerdict) -> None:
    hashes: dict[str, list[int]] = defaultdict(list)
    for t in facts.topics:
        hashes[str(TopicName.parse(t).namespace)].append(topic_hash(t))
    bound = facts.session_timeout_ns + facts.reown_slack_ns
    starts = sorted(spans, key=lambda s: s.start_ns)
    start_times = [s.start_ns for s in starts]
    by_pid: dict[int, list[ServingSpan]] = defaultdict(list)
    for s in spans:
        by_pid[s.pid].append(s)
    outages = sorted(facts.store_outages)
    for pid, died, how in _deaths(facts):
        # bundles it was serving when it died (a span ending at the death or running across it)
        held = {s.bundle for s in by_pid.get(pid, []) if s.start_ns <= died <= s.end_ns}
        for bundle in sorted(held):
            if not _wanted(bundle, hashes):
                continue
            again = next(
                (
                    s.start_ns
                    for s in starts[bisect.bisect_left(start_times, died) :]
                    if s.pid != pid and _ranges_overlap(s.bundle, bundle)
                ),
                None,
            )
            if again is None:
                verdict.not_reowned.append(f"{bundle} of pid {pid} (died at {died})")
                continue
            took = max(0, again - _clock_start(died, again, outages))
            verdict.reownership_ns.append(took)
            verdict.reownership_from_death_ns.append(again - died)
            meanwhile = _other_faults(pid, died - bound, again, facts)
            if not meanwhile:
                verdict.reownership_alone_ns.append(took)
            if took > bound:
                slow = (
                    f"{bundle} of pid {pid} ({how}): served again {took / 1e6:.0f} ms after its death "
                    f"or the store's return (bound {bound / 1e6:.0f} ms); "
                    f"meanwhile: {', '.join(meanwhile) if meanwhile else 'no other fault'}"
                )
                verdict.slow_reownership.append(slow)
                if not meanwhile:
                    verdict.slow_reownership_alone.append(slow)


def _other_faults(pid: int, start: int, end: int, facts: CampaignFacts) -> list[str]:
    """The faults other than process ``pid``'s own between ``start`` and ``end`` (ns): other processes
    killed or frozen, the store down.

    >>> f = CampaignFacts(events=[], end_ns=0, deaths={1: 10, 2: 50}, frozen={3: [(0, 20)]},
    ...                   store_outages=[(90, 95)])
    >>> _other_faults(1, 5, 60, f), _other_faults(2, 30, 80, f)
    (['pid 2 killed', 'pid 3 frozen'], [])
    """
    out = [
        f"pid {other} killed"
        for other, at in sorted(facts.deaths.items())
        if other != pid and start < at < end
    ]
    out += [
        f"pid {other} frozen"
        for other, spans in sorted(facts.frozen.items())
        if other != pid and any(f0 < end and f1 > start for f0, f1 in spans)
    ]
    if any(down < end and up > start for down, up in facts.store_outages):
        out.append("store down")
    return out


def _check_served_at_end(spans: list[ServingSpan], facts: CampaignFacts, verdict: CampaignVerdict) -> None:
    open_at_end = [s for s in spans if s.end_ns >= facts.end_ns]
    for topic in sorted(facts.topics):
        namespace, h = str(TopicName.parse(topic).namespace), topic_hash(topic)
        if not any(
            s.namespace == namespace and _range(s.bundle)[0] <= h < _range(s.bundle)[1] for s in open_at_end
        ):
            verdict.unserved_at_end.append(topic)


def _check_stuck(events: list[HistoryEvent], facts: CampaignFacts, verdict: CampaignVerdict) -> None:
    disabled: dict[tuple[int, str], int] = {}
    for e in events:
        key = (e.pid, e.bundle)
        if e.kind == "disable":
            disabled.setdefault(key, e.at_ns)
        elif e.kind in ("release", "lost", "acquire") and key in disabled:
            began = disabled.pop(key)
            if e.at_ns - began > facts.watchdog_ns:
                verdict.stuck_transitions.append(
                    f"{e.bundle} disabled by pid {e.pid} for {(e.at_ns - began) / 1e6:.0f} ms"
                )
    for (pid, bundle), began in disabled.items():
        end = min(facts.end_ns, facts.deaths.get(pid, facts.end_ns) + facts.session_timeout_ns)
        if end - began > facts.watchdog_ns:
            verdict.stuck_transitions.append(
                f"{bundle} disabled by pid {pid} at {began} and never released ({(end - began) / 1e6:.0f} ms)"
            )


def _check_boundaries(facts: CampaignFacts, verdict: CampaignVerdict) -> None:
    for namespace, created in facts.split_boundaries.items():
        final = set(facts.final_boundaries.get(namespace, []))
        for boundary in sorted(created - final):
            verdict.lost_boundaries.append(f"{namespace}: split boundary 0x{boundary:08x} is gone")


def _check_leader_actions(events: list[HistoryEvent], verdict: CampaignVerdict) -> None:
    highest = -1
    for e in events:
        if e.kind == "lead-start" and e.epoch is not None:
            highest = max(highest, e.epoch)
        elif e.kind == "leader-action":
            if e.reason.startswith("refused"):
                if e.epoch is not None and e.epoch < highest:
                    verdict.stale_actions_refused += 1
                continue
            verdict.leader_actions_accepted += 1
            if e.epoch is not None and e.epoch < highest:
                verdict.stale_actions_accepted.append(
                    f"{e.broker} (pid {e.pid}) accepted {e.bundle} from leader epoch {e.epoch} "
                    f"after epoch {highest} had started"
                )
