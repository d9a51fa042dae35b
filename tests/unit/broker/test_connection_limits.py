"""brokerMaxConnections / brokerMaxConnectionsPerIp: Pulsar's connection controller."""

from __future__ import annotations

from dataclasses import dataclass

from brokerlb.broker.binary.limits import ConnectionLimits


@dataclass(eq=False)
class Conn:
    peer: str


def test_no_limits_count_nothing() -> None:
    limits = ConnectionLimits()
    assert all(limits.admit(Conn(f"10.0.0.1:{p}")) is None for p in range(1000))
    assert limits.total == 0


def test_the_per_address_limit_counts_each_address_and_names_it() -> None:
    limits = ConnectionLimits(max_per_ip=2)
    a, b, c = Conn("10.0.0.1:1"), Conn("10.0.0.1:2"), Conn("10.0.0.1:3")
    assert limits.admit(a) is None and limits.admit(b) is None
    assert limits.admit(c) == "Reached the maximum number of connections on address 10.0.0.1:3"
    assert limits.admit(Conn("10.0.0.2:1")) is None  # another address
    assert limits.admit(Conn("[::1]:5")) is None  # IPv6 counts too (a deviation: Pulsar skips it)
    limits.release(c)  # a refused connection counts until it is closed, as in Pulsar
    limits.release(a)
    assert limits.admit(Conn("10.0.0.1:4")) is None
    assert limits.refused == 1


def test_the_total_limit_and_release_once() -> None:
    limits = ConnectionLimits(max_connections=2)
    a, b = Conn("10.0.0.1:1"), Conn("10.0.0.2:1")
    assert limits.admit(a) is None and limits.admit(b) is None
    c = Conn("10.0.0.3:1")
    assert limits.admit(c) == "Reached the maximum number of connections"
    for conn in (a, a, c):  # releasing twice (close, then connection_lost) counts once
        limits.release(conn)
    assert limits.total == 1 and dict(limits.per_ip) == {"10.0.0.2": 1}
