"""``brokerMaxConnections`` and ``brokerMaxConnectionsPerIp``: Pulsar's connection controller.

Pulsar's ``ConnectionController.DefaultConnectionController`` counts a broker's binary-protocol
connections (plain and TLS together) in all and per client IP; 0 = no limit (both default to 0).
A connection beyond a limit is answered ``ERROR{NotAllowedError, "Reached the maximum number of
connections"}`` (or ``... on address <peer>``) and closed at once, before it can send anything
(``ServerCnx.channelActive``). As in Pulsar, the refused connection counts until it is closed.

Deviation: Pulsar counts only IPv4 peers (its address pattern skips IPv6 ones, which are never
limited); brokerlb counts every peer by its address.
"""

from __future__ import annotations

import collections
import logging
from typing import Protocol

__all__ = ["ConnectionLimits", "Peer"]

logger = logging.getLogger(__name__)


class Peer(Protocol):
    """A connection as the limits see it: its transport's peer address."""

    @property
    def peer(self) -> str: ...


class ConnectionLimits:
    """Counts connections and refuses those beyond the limits (module docstring)."""

    def __init__(self, max_connections: int = 0, max_per_ip: int = 0) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.total = 0
        self.per_ip: collections.Counter[str] = collections.Counter()
        self._counted: dict[int, str] = {}
        #: connections refused since start (for tests and operators)
        self.refused = 0

    def admit(self, conn: Peer) -> str | None:
        """Count ``conn``; the reason it is refused, or ``None`` when it may go on."""
        if self.max_connections <= 0 and self.max_per_ip <= 0:
            return None
        ip = _ip_of(conn.peer)
        self._counted[id(conn)] = ip
        self.total += 1
        self.per_ip[ip] += 1
        if 0 < self.max_connections < self.total:
            self.refused += 1
            return "Reached the maximum number of connections"
        if 0 < self.max_per_ip < self.per_ip[ip]:
            self.refused += 1
            return f"Reached the maximum number of connections on address {conn.peer}"
        return None

    def release(self, conn: Peer) -> None:
        """``conn`` closed (once per connection; a connection never counted is ignored)."""
        ip = self._counted.pop(id(conn), None)
        if ip is None:
            return
        self.total -= 1
        self.per_ip[ip] -= 1
        if self.per_ip[ip] <= 0:
            del self.per_ip[ip]


def _ip_of(peer: str) -> str:
    """``host`` of ``host:port`` (IPv6 hosts keep their colons)."""
    host, sep, _port = peer.rpartition(":")
    return host if sep else peer
