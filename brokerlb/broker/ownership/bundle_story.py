"""Why a bundle is where it is: its ownership story, gathered from every broker's state machine.

Every broker's ownership machine sees every change of every bundle's record (the table view) and
keeps each bundle's last transitions; the broker that made a change also knows who asked and why
(a lookup, an unload, a transfer, a split, the leader's override of an orphan or a stuck state),
and the broker that leads records *why* it moved a bundle: its decisions with their reasons and
numbers (the leader's :class:`~brokerlb.loadbalance.cycle.CycleRecord` s). ``GET
/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/story`` (a brokerlb extension) answers with
what every registered broker recorded, merged in time order, each entry saying which broker
recorded it; ``?local=true`` answers with this broker's alone. A bundle that no longer exists
(split or merged away) still has its story, for as long as the brokers keep it.

    {"bundle": "public/default/0x00000000_0x40000000", "owner": "127.0.0.1:8081",
     "transitions": [{"kind": "transition", "from": "Init", "to": "Assigning", "atMs": ...,
                      "by": "127.0.0.1:8080", "reason": "lookup", "version": 1,
                      "forced": false, "destination": "127.0.0.1:8081",
                      "recordedBy": "127.0.0.1:8080"},
                     {"kind": "decision", "decision": "transfer", "atMs": ..., "reason": "Overloaded",
                      "detail": "...", "source": "...", "destination": "...", "executed": true,
                      "recordedBy": "<the leader>"}, ...],
     "unreachable": []}
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Any

from brokerlb.admin.client import AsyncAdminClient
from brokerlb.broker.ownership.ownership_channel import OwnershipChannel
from brokerlb.coordination import BrokerRegistry
from brokerlb.errors import BrokerLBError
from brokerlb.loadbalance.cycle import CycleRecord
from brokerlb.naming import NamespaceName
from brokerlb.ownership.machine import Transition, owner_of
from brokerlb.ring import NamespaceBundle

__all__ = ["BundleStories", "transition_json"]

logger = logging.getLogger(__name__)


class BundleStories:
    """Answers the story endpoint (module docstring)."""

    def __init__(
        self,
        channel: OwnershipChannel,
        *,
        registry: BrokerRegistry,
        admin: AsyncAdminClient,
        leader_records: Callable[[], Iterable[CycleRecord]] = tuple,
    ) -> None:
        self._channel = channel
        self._leader_records = leader_records
        self._registry = registry
        self._admin = admin

    async def story(self, namespace: str, bundle_range: str, *, local: bool = False) -> dict[str, Any]:
        bundle = NamespaceBundle.parse(f"{NamespaceName.parse(namespace)}/{bundle_range}")
        name = str(bundle)
        me = self._channel.broker_id
        transitions = [transition_json(t, me) for t in self._channel.story(name)]
        transitions += decisions_about(name, self._leader_records(), me)
        unreachable: list[str] = []
        if not local:
            others = [b for b in self._registry.available_brokers() if b != me]
            answers = await asyncio.gather(*(self._local_story_of(b, bundle) for b in others))
            for broker, answer in zip(others, answers, strict=True):
                if answer is None:
                    unreachable.append(broker)
                else:
                    transitions.extend(answer)
        transitions = _merged(transitions)
        stored = await self._channel.table.read(name)
        return {
            "bundle": name,
            "owner": owner_of(None if stored is None else stored.record).broker,
            "transitions": transitions,
            "unreachable": unreachable,
        }

    async def _local_story_of(self, broker: str, bundle: NamespaceBundle) -> list[dict[str, Any]] | None:
        registered = self._registry.broker(broker)
        url = None if registered is None else registered.web_service_url
        if not url:
            return None
        try:
            answer = await self._admin.at(str(url).rstrip("/")).bundle_story(
                str(bundle.namespace), bundle.range, local=True
            )
        except BrokerLBError as exc:
            logger.info("No story of %s from %s: %s", bundle, broker, exc)
            return None
        transitions = answer.get("transitions") if isinstance(answer, dict) else None
        return list(transitions) if isinstance(transitions, list) else None


def _merged(transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every broker saw the same record changes: one line per change (the one of the broker that
    made it, which knows who asked and why), the leader's decisions beside them, in time order.
    A change is dated by the first broker that saw it (a broker's watch may deliver a record a
    change or two late: it then dates the changes it skipped late)."""
    best: dict[tuple[str, int], dict[str, Any]] = {}
    first_seen: dict[tuple[str, int], int] = {}
    out: list[dict[str, Any]] = []
    for t in transitions:
        if t["kind"] != "transition":
            out.append(t)
            continue
        key = (t["bundle"], t["version"])
        first_seen[key] = min(first_seen.get(key, t["atMs"]), t["atMs"])
        kept = best.get(key)
        if kept is None or (not kept.get("reason") and t.get("reason")):
            best[key] = t
    out.extend({**t, "atMs": first_seen[key]} for key, t in best.items())
    out.sort(key=lambda t: (t["atMs"], t["kind"] != "decision", t.get("version", 0), t["recordedBy"]))
    return out


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
        "forced": t.forced,
        "version": t.version,
        "recordedBy": broker,
    }
    if t.src:
        out["source"] = t.src
    if t.dst:
        out["destination"] = t.dst
    return out


def decisions_about(bundle: str, records: Iterable[CycleRecord], broker: str) -> list[dict[str, Any]]:
    """The leader's decisions that moved, split or merged ``bundle``, with their reasons."""
    out: list[dict[str, Any]] = []
    for record in records:
        for move, done in zip(record.moves, record.moves_done, strict=True):
            if move.bundle == bundle:
                out.append(
                    {
                        "kind": "decision",
                        "decision": "transfer" if move.transfer else "unload",
                        "atMs": record.at_ms,
                        "reason": move.reason,
                        "detail": move.detail,
                        "source": move.source,
                        "destination": move.destination,
                        "executed": done,
                        "recordedBy": broker,
                    }
                )
        for split, done in zip(record.splits, record.splits_done, strict=True):
            if split.bundle == bundle:
                out.append(_ring_decision("split", record, split.reason, split.detail, done, broker))
        for merge, done in zip(record.merges, record.merges_done, strict=True):
            if bundle in merge.bundles or merge.merged == bundle:
                out.append(_ring_decision("merge", record, merge.reason, merge.detail, done, broker))
    return out


def _ring_decision(
    kind: str, record: CycleRecord, reason: object, detail: str, done: bool, broker: str
) -> dict[str, Any]:
    return {
        "kind": "decision",
        "decision": kind,
        "atMs": record.at_ms,
        "reason": str(reason),
        "detail": detail,
        "executed": done,
        "recordedBy": broker,
    }
