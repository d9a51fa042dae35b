"""Java's ``String.hashCode``, which Pulsar and the Kafka clients build on.

One implementation for every part that must agree with Java bit for bit: the ``HashMap``
iteration order Pulsar's tie-breaks follow (:mod:`brokerlb.loadbalance.java_order`) and
Pulsar's ``JavaStringHash`` message routing (:mod:`brokerlb.kafka.hashing`).

``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units (a lone surrogate counts as the
unit it is), modulo ``2**32``; :func:`java_string_hash` returns it unsigned, callers that
need Java's signed ``int`` convert it.

>>> java_string_hash("hello")  # "hello".hashCode() in Java
99162322
>>> java_string_hash("\\U0001F600") == (31 * 0xD83D + 0xDE00)
True
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

__all__ = ["java_string_hash"]

_POWERS: list[int] = [1]


def _powers(n: int) -> list[int]:
    """``31**k mod 2**32`` for ``k < n``."""
    while len(_POWERS) < n:
        _POWERS.append(_POWERS[-1] * 31 & 0xFFFFFFFF)
    return _POWERS


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` of ``text`` as an unsigned 32-bit int."""
    if text.isascii():
        units: Sequence[int] = text.encode("ascii")
    else:
        raw = text.encode("utf-16-le", "surrogatepass")
        units = [raw[i] | raw[i + 1] << 8 for i in range(0, len(raw), 2)]
    n = len(units)
    powers = _powers(n)
    return sum(map(operator.mul, units, reversed(powers[:n]))) & 0xFFFFFFFF
