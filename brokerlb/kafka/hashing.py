"""Hash functions of the Kafka and Pulsar clients, bit-for-bit as in Java.

Java ints are signed 32-bit and wrap on overflow; Python ints do not, so every
step is masked to 32 bits and the result is turned back into a signed value
where Java returns one.

* :func:`murmur2` -- Kafka's ``Utils.murmur2`` (seed ``0x9747b28c``), the keyed
  partitioner's hash. Returns Java's signed ``int``.
* :func:`murmur3_32` -- MurmurHash3 x86_32 with seed 0, as Pulsar's
  ``Murmur3_32Hash.makeHash0`` (and Guava's ``murmur3_32(0)``). Signed ``int``.
* :func:`java_string_hash` -- ``String.hashCode()`` over UTF-16 code units.
* :func:`to_positive` -- Kafka's ``Utils.toPositive``: ``n & 0x7fffffff``.
* :func:`sign_safe_mod` -- Pulsar's ``MathUtils.signSafeMod``.

>>> murmur2(b"21"), murmur2(b"abc")
(-973932308, 479470107)
>>> to_positive(murmur2(b"foobar")) % 6
0
>>> java_string_hash("key1")
3288498
>>> murmur3_32(b"hello") & 0xFFFFFFFF == 0x248BFA47
True
"""

from __future__ import annotations

from brokerlb.java_hash import java_string_hash as _unsigned_java_string_hash

__all__ = [
    "MASK32",
    "INT_MAX",
    "to_int32",
    "to_positive",
    "murmur2",
    "murmur3_32",
    "java_string_hash",
    "sign_safe_mod",
]

MASK32 = 0xFFFFFFFF
#: Java's ``Integer.MAX_VALUE``.
INT_MAX = 0x7FFFFFFF

_M2_SEED = 0x9747B28C
_M2_M = 0x5BD1E995
_M3_C1 = 0xCC9E2D51
_M3_C2 = 0x1B873593


def to_int32(value: int) -> int:
    """The Java ``int`` that has the low 32 bits of ``value``."""
    value &= MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def to_positive(number: int) -> int:
    """Kafka's ``Utils.toPositive``: clear the sign bit (not ``abs``: ``MIN_VALUE`` maps to 0)."""
    return number & INT_MAX


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` of ``data``: a signed 32-bit Java ``int``."""
    length = len(data)
    h = (_M2_SEED ^ length) & MASK32
    full = length - (length & 3)
    for i in range(0, full, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M2_M) & MASK32
        k ^= k >> 24
        k = (k * _M2_M) & MASK32
        h = ((h * _M2_M) & MASK32) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[full + 2] << 16
    if tail >= 2:
        h ^= data[full + 1] << 8
    if tail >= 1:
        h ^= data[full]
        h = (h * _M2_M) & MASK32
    h ^= h >> 13
    h = (h * _M2_M) & MASK32
    h ^= h >> 15
    return to_int32(h)


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & MASK32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _M3_C1) & MASK32
    k1 = _rotl32(k1, 15)
    return (k1 * _M3_C2) & MASK32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of ``data`` (Pulsar's ``Murmur3_32Hash.makeHash0``): a signed ``int``.

    Pulsar's public ``makeHash`` clears the sign bit: ``murmur3_32(b) & INT_MAX``.
    """
    length = len(data)
    h1 = seed & MASK32
    full = length - (length & 3)
    for i in range(0, full, 4):
        k1 = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        h1 ^= _mix_k1(k1)
        h1 = _rotl32(h1, 13)
        h1 = (h1 * 5 + 0xE6546B64) & MASK32
    k1 = 0
    for i in range(length & 3):
        k1 ^= data[full + i] << (i * 8)
    h1 ^= _mix_k1(k1)
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & MASK32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & MASK32
    h1 ^= h1 >> 16
    return to_int32(h1)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode()``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code units (signed)."""
    return to_int32(_unsigned_java_string_hash(text))


def sign_safe_mod(dividend: int, divisor: int) -> int:
    """Pulsar's ``MathUtils.signSafeMod``: Java's ``%`` (truncating), shifted into ``[0, divisor)``."""
    if divisor <= 0:
        raise ValueError(f"divisor must be positive, got {divisor}")
    # Java: mod = dividend % divisor (truncating); if (mod < 0) mod += divisor.
    # Python's floored % with a positive divisor gives exactly that.
    return dividend % divisor
