import random

import pytest
from kafka.partitioner.default import murmur2 as kp_murmur2

from brokerlb.kafka.hashing import (
    INT_MAX,
    java_string_hash,
    murmur2,
    murmur3_32,
    sign_safe_mod,
    to_int32,
    to_positive,
)

# Kafka's UtilsTest.testMurmur2 vectors (signed Java ints).
KAFKA_VECTORS = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


@pytest.mark.parametrize("key, expected", sorted(KAFKA_VECTORS.items()))
def test_murmur2_matches_kafka_vectors(key, expected):
    assert murmur2(key.encode()) == expected


def test_murmur2_matches_kafka_python_on_random_keys():
    rng = random.Random(20240801)
    for _ in range(5000):
        key = rng.randbytes(rng.randrange(0, 64))
        assert murmur2(key) & 0xFFFFFFFF == kp_murmur2(key), key.hex()


def test_murmur2_is_signed_java_int():
    values = [murmur2(str(i).encode()) for i in range(2000)]
    assert min(values) < 0 < max(values)
    assert all(-(2**31) <= v <= 2**31 - 1 for v in values)


@pytest.mark.parametrize(
    "data, expected",
    [  # MurmurHash3 x86_32, seed 0 (SMHasher / Guava murmur3_32 reference values)
        (b"", 0x00000000),
        (b"hello", 0x248BFA47),
        (b"The quick brown fox jumps over the lazy dog", 0x2E4FF723),
    ],
)
def test_murmur3_reference_values(data, expected):
    assert murmur3_32(data) & 0xFFFFFFFF == expected


def test_murmur3_seed_and_tail_lengths_differ():
    seen = {murmur3_32(b"abcdefg"[:n]) for n in range(8)}
    assert len(seen) == 8
    assert murmur3_32(b"x", seed=1) != murmur3_32(b"x")


@pytest.mark.parametrize(
    "text, expected",
    [("", 0), ("a", 97), ("key1", 3288498), ("hello", 99162322), ("polygenelubricants", -2147483648)],
)
def test_java_string_hash(text, expected):
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE is a well-known Java curiosity
    assert java_string_hash(text) == expected


def test_java_string_hash_uses_utf16_code_units():
    # U+1F600 is the surrogate pair D83D DE00 in Java: 31 * 0xD83D + 0xDE00
    assert java_string_hash("\U0001f600") == 31 * 0xD83D + 0xDE00


def test_to_positive_and_int32():
    assert to_positive(-1) == INT_MAX
    assert to_positive(-(2**31)) == 0
    assert to_int32(2**31) == -(2**31)
    assert to_int32(2**32 + 5) == 5


@pytest.mark.parametrize("dividend, divisor, expected", [(7, 3, 1), (-7, 3, 2), (-6, 3, 0), (0, 5, 0)])
def test_sign_safe_mod(dividend, divisor, expected):
    assert sign_safe_mod(dividend, divisor) == expected


def test_sign_safe_mod_rejects_non_positive_divisor():
    with pytest.raises(ValueError, match="divisor"):
        sign_safe_mod(3, 0)
