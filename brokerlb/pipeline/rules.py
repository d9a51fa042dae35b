"""Validation rules as Spark column expressions, mirroring :mod:`brokerlb.model` and :mod:`brokerlb.history`.

A :class:`Rules` list holds ``(bad, message)`` pairs in order; :meth:`Rules.reason` is the
message of the first rule a row breaks (``null`` for a good row). Messages name the field
with Pulsar's JSON path and show the value, like
:class:`~brokerlb.errors.InvalidLoadDataError`: ``localData.cpu.usage = NaN: not a finite
number``. Every expression is safe under ANSI mode (``try_*`` functions, no unguarded casts).
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column
from pyspark.sql import functions as F

from brokerlb.history.records import MAX_TIMESTAMP_MS

__all__ = [
    "Rules",
    "finite",
    "describe",
    "check_rate",
    "check_count",
    "check_timestamp",
    "rate_ok",
    "count_ok",
    "decode_long",
    "first_map_key",
    "NAMED_ENTITY",
    "NAMESPACE_PATTERN",
    "TOPIC_PATTERN",
    "FLOAT32_MAX",
]

#: Java regex of a tenant / cluster / namespace part (``brokerlb.naming``: letters, digits, ``-=:._``).
NAMED_ENTITY = r"[-=:.\w]+"
NAMESPACE_PATTERN = rf"^{NAMED_ENTITY}/{NAMED_ENTITY}(/{NAMED_ENTITY})?$"
#: Full topic names as ``TopicName.parse`` reads them and ``str()`` writes them back.
#: Group 1 is the namespace: ``tenant/cluster/ns`` when a fourth part follows (as ``split("/", 3)``
#: gives four parts), else ``tenant/ns`` with a local name free of ``/``.
TOPIC_PATTERN = (
    rf"^(?s)(?:persistent|non-persistent)://"
    rf"({NAMED_ENTITY}/{NAMED_ENTITY}/{NAMED_ENTITY}(?=/.)|{NAMED_ENTITY}/{NAMED_ENTITY}(?=/[^/]+$))/"
)
FLOAT32_MAX = 3.4028234663852886e38
_FLOAT32_MIN_ROUNDING_UP = (
    7.006492321624085e-46  # half the smallest float32 subnormal: below it, (float) x == 0
)
_INTEGRAL_MAX = float(2**53)


class Rules:
    """An ordered list of ``(bad, message)`` checks (a ``null`` ``bad`` counts as good).

    Messages are built for bad rows only (``CASE WHEN`` evaluates a branch's value lazily).
    """

    def __init__(self) -> None:
        self._items: list[tuple[Column, Column]] = []

    def add(self, bad: Column, message: Column | str) -> None:
        self._items.append((bad, message if isinstance(message, Column) else F.lit(message)))

    def reason(self) -> Column:
        """The first broken rule's message, or ``null``."""
        if not self._items:
            return F.lit(None).cast("string")
        return F.coalesce(*[F.when(bad, message) for bad, message in self._items])


def finite(c: Column) -> Column:
    """Not null, not NaN, not ±infinity."""
    return c.isNotNull() & ~F.isnan(c) & (F.abs(c) != F.lit(float("inf")))


def describe(field: str | Column, value: Column, why: str | Column) -> Column:
    """``"<field> = <value>: <why>"``."""
    name = field if isinstance(field, Column) else F.lit(field)
    because = why if isinstance(why, Column) else F.lit(why)
    return F.format_string("%s = %s: %s", name, F.coalesce(value.cast("string"), F.lit("null")), because)


_INFINITY = float("inf")


def rate_ok(c: Column) -> Column:
    """Finite and ``>= 0`` (Spark orders NaN above +inf, so two comparisons suffice); null for null."""
    return (c >= 0) & (c < _INFINITY)


def count_ok(c: Column) -> Column:
    """An integral value in ``[0, 2**53]``; null for null."""
    return (c >= 0) & (c <= _INTEGRAL_MAX) & ((c % 1) == 0)


def check_rate(rules: Rules, c: Column, field: str | Column) -> None:
    """An optional rate/throughput (missing = 0): finite and ``>= 0``."""
    why = F.when((c < 0) & (c > -_INFINITY), "must not be negative").otherwise("not a finite number")
    rules.add(~rate_ok(c), describe(field, c, why))


def check_count(rules: Rules, c: Column, field: str | Column, *, required: bool = False) -> None:
    """An integer ``>= 0`` read as a double (``2.0`` passes, ``2.5`` does not)."""
    if required:
        rules.add(c.isNull(), describe(field, c, "missing"))
    why = (
        F.when((c < 0) & ((c % 1) == 0), "must not be negative")
        .when((c > _INTEGRAL_MAX) & (c < _INFINITY), "too large")
        .otherwise("expected an integer")
    )
    rules.add(~count_ok(c), describe(field, c, why))


def check_timestamp(rules: Rules, c: Column, field: str = "timestamp") -> None:
    """Required milliseconds since the epoch below ``2**42``."""
    check_count(rules, c, field, required=True)
    rules.add(c > MAX_TIMESTAMP_MS, describe(field, c, f"must be below {MAX_TIMESTAMP_MS + 1}"))


def as_long(c: Column) -> Column:
    return c.try_cast("long")


_HEX = r"^\s*\+?(?:0[xX]|#)0*([0-9a-fA-F]{1,8})\s*$"
_OCTAL = r"^\s*\+?0+([0-7]{1,11})\s*$"
_DECIMAL = r"^\s*\+?([1-9][0-9]{0,9}|0)\s*$"
_NEGATIVE_ZERO = r"^\s*-(?:0[xX]|#)?0+\s*$"


def decode_long(text: Column) -> Column:
    """Java's ``Long.decode`` for a boundary in ``[0, 0xffffffff]`` (``brokerlb.ring.parse_boundary``); else null.

    ``0x40000000``, ``#40000000``, ``1073741824``, octal ``010``; surrounding whitespace ignored.
    (Written as flat alternatives: Catalyst expands shared sub-expressions into trees, so nesting
    them multiplies the size of the plan.)
    """
    value = (
        F.when(text.rlike(_HEX), F.conv(F.regexp_extract(text, _HEX, 1), 16, 10))
        .when(text.rlike(_OCTAL), F.conv(F.regexp_extract(text, _OCTAL, 1), 8, 10))
        .when(text.rlike(_DECIMAL), F.regexp_extract(text, _DECIMAL, 1))
        .when(text.rlike(_NEGATIVE_ZERO), F.lit("0"))
        .try_cast("long")
    )
    return F.when(value <= 0xFFFFFFFF, value)


def first_map_key(m: Column, bad: Callable[[Column], Column]) -> Column:
    """The first key of map ``m`` whose value is ``bad`` (``null`` if none)."""
    return F.try_element_at(F.map_keys(F.map_filter(m, lambda _k, v: bad(v))), F.lit(1))


def float32_percent_overflows(usage: Column, limit: Column) -> Column:
    """``(float) usage / (float) limit * 100`` is not finite in Java (for ``limit > 0``, ``usage >= 0``)."""
    return (
        (usage > FLOAT32_MAX)
        | (limit < _FLOAT32_MIN_ROUNDING_UP)
        | (F.try_divide(usage, limit) * 100 > FLOAT32_MAX)
    )
