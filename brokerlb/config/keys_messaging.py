"""Keys of the data path: the binary protocol's limits, retention and backlog quotas of topics.

Names, types and defaults are Pulsar's ``ServiceConfiguration``; the doc lines are our own
wording.
"""

from __future__ import annotations

from brokerlb.config.kinds import BOOL, INT, LONG, choice
from brokerlb.config.registry import KeyGroup, key

__all__ = ["MessagingKeys", "BACKLOG_QUOTA_POLICIES"]

#: ``BacklogQuota.RetentionPolicy`` as broker.conf spells it.
BACKLOG_QUOTA_POLICIES = ("producer_request_hold", "producer_exception", "consumer_backlog_eviction")


class MessagingKeys(KeyGroup):
    __slots__ = ()
    CATEGORY = "Messaging"
    INTRO = (
        "The binary protocol on brokerServicePort and the topic engine behind it and the WebSocket "
        "API: frame limits, keep-alive, how long acknowledged messages are kept and what happens "
        "when a subscription's backlog grows beyond its quota."
    )

    maxMessageSize: int = key(
        INT,
        5 * 1024 * 1024,
        "Largest message (payload and metadata) the broker accepts, announced to clients in "
        "CONNECTED; a frame beyond it plus 10 KB of padding closes the connection.",
        ge=1024,
        unit="bytes",
    )
    keepAliveIntervalSeconds: int = key(
        INT,
        30,
        "How often the broker pings a quiet binary connection; one unanswered ping closes it.",
        ge=1,
        unit="seconds",
    )
    brokerMaxConnections: int = key(
        INT,
        0,
        "Most binary-protocol connections (plain and TLS) the broker keeps; one more is answered "
        "ERROR{NotAllowedError} and closed. 0 = no limit.",
        ge=0,
    )
    brokerMaxConnectionsPerIp: int = key(
        INT,
        0,
        "Most binary-protocol connections from one client address; 0 = no limit.",
        ge=0,
        deviation="Pulsar counts IPv4 clients only (IPv6 ones are never limited); brokerlb counts every "
        "client address.",
    )
    pulsarChannelWriteBufferHighWaterMark: int = key(
        INT,
        64 * 1024,
        "Bytes queued for a binary connection above which it is unwritable: its consumers get nothing "
        "more until the queue drains below pulsarChannelWriteBufferLowWaterMark (Netty's writability).",
        ge=1024,
        unit="bytes",
    )
    pulsarChannelWriteBufferLowWaterMark: int = key(
        INT,
        32 * 1024,
        "Bytes queued below which an unwritable binary connection is writable again.",
        ge=0,
        unit="bytes",
    )
    pulsarChannelPauseReceivingRequestsIfUnwritable: bool = key(
        BOOL,
        True,
        "Stop reading a binary connection's requests while it is unwritable (a client that sends "
        "without reading the answers cannot make the broker queue more).",
        deviation="Pulsar's default is false; brokerlb stops reading by default, so one client cannot "
        "make the broker buffer answers without bound.",
    )
    defaultRetentionTimeInMinutes: int = key(
        INT,
        0,
        "How long acknowledged messages are kept (0 = not at all, -1 = for ever).",
        ge=-1,
        unit="minutes",
    )
    defaultRetentionSizeInMB: int = key(
        INT,
        0,
        "How much acknowledged data a topic keeps (0 = none, -1 = no limit).",
        ge=-1,
    )
    backlogQuotaDefaultLimitBytes: int = key(
        LONG,
        -1,
        "Backlog quota of a subscription in bytes (-1 = no quota).",
        ge=-1,
        unit="bytes",
    )
    backlogQuotaDefaultRetentionPolicy: str = key(
        choice(*BACKLOG_QUOTA_POLICIES),
        "producer_request_hold",
        "What happens beyond the backlog quota: producer_request_hold (publishes wait until "
        "acknowledgements make room), producer_exception (publishes and new producers fail with "
        "ProducerBlockedQuotaExceededException), consumer_backlog_eviction (the oldest unacknowledged "
        "messages of the slowest subscriptions are dropped).",
    )
