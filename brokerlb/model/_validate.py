"""Checks shared by the load-data classes (private).

Every number that enters the model passes through one of these functions, so a
NaN, an infinity, a negative rate or a string where a number belongs is stopped
at the door with an :class:`InvalidLoadDataError` naming the field and the
value, instead of surfacing later as a wrong decision or a crash inside a
strategy.

The JSON readers follow Jackson as Pulsar configures it where that is safe:
unknown keys are ignored, a missing key (or an explicit ``null``) takes the
value Pulsar's no-argument constructor gives the field, an integral float is
accepted for an integer field (``2.0`` for ``consumerCount``). They are stricter
than Jackson where Jackson would let garbage through: booleans and strings are
not numbers (Jackson writes NaN as the string ``"NaN"``; that is rejected as
non-finite), and a fractional value for a count is an error, not truncated.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from brokerlb.errors import InvalidLoadDataError

__all__ = [
    "JsonObject",
    "check_count",
    "check_finite",
    "check_non_negative",
    "check_str",
    "invalid",
]

_NON_FINITE_NAMES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def invalid(field: str, value: Any, why: str) -> InvalidLoadDataError:
    """The error for ``field`` holding ``value``."""
    return InvalidLoadDataError(f"Invalid load data: {field} = {value!r}: {why}", field=field, value=value)


def check_finite(value: Any, field: str) -> float:
    """``value`` as a float; it must be an int or float (not bool) and finite."""
    if isinstance(value, str) and value in _NON_FINITE_NAMES:
        raise invalid(field, value, "not a finite number")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise invalid(field, value, "expected a number")
    number = float(value)
    if not math.isfinite(number):
        raise invalid(field, value, "not a finite number")
    return number


def check_non_negative(value: Any, field: str) -> float:
    """A finite float ``>= 0`` (rates, throughputs)."""
    number = check_finite(value, field)
    if number < 0:
        raise invalid(field, value, "must not be negative")
    return number + 0.0  # normalise -0.0


def check_count(value: Any, field: str) -> int:
    """An integer ``>= 0``; an integral float (``2.0``) is accepted, ``2.5`` is not."""
    if isinstance(value, bool):
        raise invalid(field, value, "expected an integer")
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            raise invalid(field, value, "expected an integer")
        value = int(value)
    if not isinstance(value, int):
        raise invalid(field, value, "expected an integer")
    if value < 0:
        raise invalid(field, value, "must not be negative")
    return value


def check_str(value: Any, field: str, *, optional: bool = True) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise invalid(field, value, "expected a string")
    return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


class JsonObject:
    """One JSON object being read, with the path that leads to it (for error messages)."""

    __slots__ = ("data", "path")

    def __init__(self, data: Any, path: str = "") -> None:
        if not isinstance(data, Mapping):
            raise invalid(path or "<document>", data, "expected a JSON object")
        self.data = data
        self.path = path

    def field(self, key: str) -> str:
        return _join(self.path, key)

    def raw(self, key: str) -> Any:
        """The value at ``key``; ``None`` when missing or null."""
        return self.data.get(key)

    def rate(self, key: str, default: float = 0.0) -> float:
        """A finite, non-negative float (rates, throughputs)."""
        value = self.data.get(key)
        if value is None:
            return default
        if type(value) is float and 0.0 <= value < math.inf:  # fast path (NaN fails the comparison)
            return value + 0.0
        return check_non_negative(value, self.field(key))

    def count(self, key: str, default: int = 0) -> int:
        value = self.data.get(key)
        if value is None:
            return default
        if type(value) is int and value >= 0:  # fast path
            return value
        return check_count(value, self.field(key))

    def timestamp(self, key: str, default: int = 0) -> int:
        """Milliseconds since the epoch: an integer ``>= 0``."""
        return self.count(key, default)

    def text(self, key: str, default: str | None = None) -> str | None:
        value = self.data.get(key)
        return default if value is None else check_str(value, self.field(key))

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise invalid(self.field(key), value, "expected true or false")
        return value

    def obj(self, key: str) -> JsonObject | None:
        value = self.data.get(key)
        return None if value is None else JsonObject(value, self.field(key))

    def str_list(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if not isinstance(value, list | tuple):
            raise invalid(self.field(key), value, "expected a list of strings")
        for item in value:
            if not isinstance(item, str):
                break
        else:
            return list(value)
        return [check_str(item, f"{self.field(key)}[{i}]", optional=False) for i, item in enumerate(value)]  # type: ignore[misc]

    def entries(self, key: str) -> Iterator[tuple[str, Any, str]]:
        """``(name, value, path)`` for each entry of the JSON object at ``key`` (none if missing)."""
        value = self.data.get(key)
        if value is None:
            return
        if not isinstance(value, Mapping):
            raise invalid(self.field(key), value, "expected a JSON object")
        for name, item in value.items():
            if not isinstance(name, str):
                raise invalid(self.field(key), name, "keys must be strings")
            yield name, item, f"{self.field(key)}[{name}]"

    def str_map(self, key: str) -> dict[str, str]:
        return {
            name: check_str(item, path, optional=False)  # type: ignore[misc]
            for name, item, path in self.entries(key)
        }
