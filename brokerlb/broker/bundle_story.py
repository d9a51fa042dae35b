"""Why a bundle is where it is: its ownership story, gathered from every broker's state machine.

Each broker's ownership machine (:mod:`brokerlb.broker.bundle_ownership`) records the
transitions it took part in -- a lookup that took the bundle, an unload, a transfer it started
or received, a split, a watchdog decision, a session loss -- and the broker that leads records
*why* it moved a bundle: its decisions with their reasons and numbers (the leader's
:class:`~brokerlb.loadbalance.cycle.CycleRecord` s). ``GET
/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/story`` (a brokerlb extension) answers with
what every registered broker recorded, merged in time order, each entry saying which broker
recorded it; ``?local=true`` answers with this broker's alone. A bundle that no longer exists
(split or merged away) still has its story, for as long as the brokers keep it.

    {"bundle": "public/default/0x00000000_0x40000000", "owner": "127.0.0.1:8081",
     "transitions": [{"kind": "transition", "from": "Init", "to": "Assigning", "atMs": ...,
                      "by": "127.0.0.1:8080", "reason": "lookup", "stimulusId": "lookup-3",
                      "forced": false, "destination": "127.0.0.1:8080",
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
from brokerlb.broker.bundle_ownership import BundleOwnership, transition_json
from brokerlb.coordination import BrokerRegistry, OwnershipCache
from brokerlb.errors import BrokerLBError
from brokerlb.loadbalance.cycle import CycleRecord
from brokerlb.naming import NamespaceName
from brokerlb.ring import NamespaceBundle

__all__ = ["BundleStories"]

logger = logging.getLogger(__name__)


class BundleStories:
    """Answers the story endpoint (module docstring)."""

    def __init__(
        self,
        states: BundleOwnership,
        *,
        registry: BrokerRegistry,
        owners: OwnershipCache,
        admin: AsyncAdminClient,
        leader_records: Callable[[], Iterable[CycleRecord]] = tuple,
    ) -> None:
        self._states = states
        self._leader_records = leader_records
        self._registry = registry
        self._owners = owners
        self._admin = admin

    async def story(self, namespace: str, bundle_range: str, *, local: bool = False) -> dict[str, Any]:
        bundle = NamespaceBundle.parse(f"{NamespaceName.parse(namespace)}/{bundle_range}")
        name = str(bundle)
        me = self._states.broker_id
        transitions = [transition_json(t, me) for t in self._states.story(name)]
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
        transitions.sort(
            key=lambda t: (t["atMs"], t["kind"] != "decision", t["recordedBy"], t.get("version", 0))
        )
        owner = await self._owners.read_owner(bundle)
        return {
            "bundle": name,
            "owner": owner.broker_id if owner is not None else None,
            "transitions": transitions,
            "unreachable": unreachable,
        }

    async def _local_story_of(self, broker: str, bundle: NamespaceBundle) -> list[dict[str, Any]] | None:
        report = self._registry.broker_json(broker)
        url = report.get("webServiceUrl") if isinstance(report, dict) else None
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
