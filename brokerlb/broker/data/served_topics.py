"""The topics this broker serves, as the topic admin API sees them: one adapter over the data path.

:class:`ServedTopics` is the only place the admin API reads the data path's internals (served
topics, their subscriptions and consumers), so a new topic engine changes this module alone:

* :meth:`ServedTopics.view` -- a served topic's :class:`~brokerlb.broker.data.topic_stats.TopicView`
  (rates from the topic registry, publishers and subscriptions from the engine);
* :meth:`ServedTopics.internal_stats` -- a served persistent topic's managed ledger as Pulsar's
  ``PersistentTopicInternalStats`` (ledgers, entries, sizes, cursors, ``lastConfirmedEntry``);
* :meth:`ServedTopics.create` -- load a topic here (the admin create of a non-persistent topic);
* :meth:`ServedTopics.close` -- disconnect a topic's clients and forget it (forced delete).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from brokerlb.broker.data.topic_stats import ConsumerView, PublisherView, SubscriptionView, TopicView
from brokerlb.broker.data.topics import TopicRegistry
from brokerlb.messaging import CloseReason
from brokerlb.mledger import CursorInfo, LedgerInfo, LedgerList
from brokerlb.mledger.stats import CursorView, internal_stats_json
from brokerlb.naming import TopicName

if TYPE_CHECKING:
    from brokerlb.broker.data.data_path import DataPath

__all__ = ["ServedTopics"]

#: managed ledger states as Pulsar names them
_STATES = {"open": "LedgerOpened", "rolling": "CreatingLedger", "failed": "Fenced", "closed": "Closed"}


class ServedTopics:
    """Topics served by this broker (module docstring)."""

    def __init__(self, registry: TopicRegistry, data_path: DataPath | None, broker_id: str) -> None:
        self.registry = registry
        self.data_path = data_path
        self.broker_id = broker_id

    def names(self) -> list[str]:
        return sorted(name for names in self.registry.by_bundle().values() for name in names)

    def __contains__(self, topic: object) -> bool:
        return topic in self.registry

    def view(self, topic: TopicName | str) -> TopicView | None:
        name = str(TopicName.parse(topic))
        stats = self.registry.stats_of(name)
        if stats is None:
            return None
        served = self.data_path.topics.get(name) if self.data_path is not None else None
        if served is None:
            return TopicView(
                name,
                stats,
                publishers=tuple(PublisherView(i) for i in range(stats.producer_count)),
                owner_broker=self.broker_id,
            )
        engine = served.topic
        subscriptions = tuple(
            SubscriptionView(
                sub.name,
                sub.type,
                tuple(
                    ConsumerView(
                        c.consumer_name, available_permits=c.permits, unacked_messages=sub.unacked_of(c)
                    )
                    for c in sub.consumers
                ),
                msg_backlog=engine.backlog(sub.name),
                durable=sub.durable,
                msg_drop_rate=None if engine.name.is_persistent else 0.0,
            )
            for sub in engine.subscriptions.values()
        )
        load = engine.load()
        return TopicView(
            name,
            stats,
            publishers=tuple(
                PublisherView(i, producer_name=n) for i, n in enumerate(sorted(engine.producers))
            ),
            subscriptions=subscriptions,
            msg_drop_rate=None if engine.name.is_persistent else load.msg_drop_rate,
            backlog_size=engine.backlog_bytes(),
            storage_size=served.ledger.ledgers.total_size if served.ledger is not None else 0,
            owner_broker=self.broker_id,
        )

    def internal_stats(self, topic: TopicName | str) -> dict[str, Any] | None:
        """Pulsar's ``PersistentTopicInternalStats`` of a served topic (``None`` when not served here)."""
        name = str(TopicName.parse(topic))
        served = self.data_path.topics.get(name) if self.data_path is not None else None
        if served is None:
            return None
        engine = served.topic
        ledger = served.ledger
        if ledger is not None:
            ledgers, state = ledger.ledgers, _STATES.get(ledger.state, ledger.state)
            added, pending, created = ledger.entries_added, ledger.pending_adds, ledger.last_ledger_created_ms
        else:  # the in-memory log: one ledger, never closed
            log = engine.log
            first, end = log.first_seq, log.next_seq
            ledger_id = log.position_of(0)[0]
            ledgers = LedgerList(
                [LedgerInfo(ledger_id, end, log.written, 0, 0, 0, False)] if end else [LedgerInfo(ledger_id)]
            )
            state, added, pending, created = "LedgerOpened", end - first, 0, 0
        views = {}
        for sub in engine.subscriptions.values():
            if not sub.durable:
                continue
            info = CursorInfo.of(sub.name, sub.type, sub.cursor(), ledgers)
            read = ledgers.position_of(max(sub.read_position, ledgers.first_seq))
            views[sub.name] = CursorView(
                info,
                str(read),
                active=bool(sub.attached),
                messages_consumed=sub.delivered,
                entries_since_first_not_acked=max(
                    0, ledgers.next_seq - max(sub.mark_delete + 1, ledgers.first_seq)
                ),
            )
        return internal_stats_json(
            ledgers,
            views,
            entries_added=added,
            pending_adds=pending,
            state=state,
            last_ledger_created_ms=created,
        )

    def subscriptions(self, topic: TopicName | str) -> list[str]:
        view = self.view(topic)
        return [] if view is None else sorted(s.name for s in view.subscriptions)

    def connections(self, topic: TopicName | str) -> int:
        """Producers and consumers connected to the topic (0 when not served)."""
        stats = self.registry.stats_of(TopicName.parse(topic))
        return 0 if stats is None else stats.producer_count + stats.consumer_count

    async def create(self, topic: TopicName) -> None:
        """Load the topic here (this broker owns its bundle)."""
        if self.data_path is not None:
            await self.data_path.open(topic)
        else:
            self.registry.attach(topic)

    async def close(self, topic: TopicName | str) -> bool:
        """Disconnect the topic's clients (they look it up again) and forget it; False if not served."""
        name = str(TopicName.parse(topic))
        if name not in self.registry:
            return False
        served = self.data_path.topics.pop(name, None) if self.data_path is not None else None
        self.registry.detach(name)
        if served is not None:
            await served.close(CloseReason.unloaded("topic deleted"))
        return True
