"""Human units in scenario files: durations, byte sizes and plain quantities.

>>> parse_duration("90s"), parse_duration("5m"), parse_duration("1h30m"), parse_duration(2.5)
(90.0, 300.0, 5400.0, 2.5)
>>> parse_size("1KB"), parse_size("1 MiB"), parse_size(512)
(1000.0, 1048576.0, 512.0)
>>> parse_quantity("120k"), parse_quantity("1.5M"), parse_quantity(7)
(120000.0, 1500000.0, 7.0)
>>> format_duration(5400)
'1h30m'

Each parser raises :class:`ValueError` with a short explanation; the scenario
reader turns it into an :class:`~brokerlb.errors.InvalidScenarioError` naming the field.
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["parse_duration", "parse_size", "parse_quantity", "format_duration"]

_DURATION_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PLAIN_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|min|s|m|h|d)")
_SIZE_UNITS = {
    "": 1.0,
    "b": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 1024.0,
    "mib": 1024.0**2,
    "gib": 1024.0**3,
}
_SIZE = re.compile(r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([kmg]i?b|b)?", re.IGNORECASE)
_QUANTITY_UNITS = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9}
_QUANTITY = re.compile(r"(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*([kmg])?", re.IGNORECASE)


def _number(value: Any, what: str) -> float | None:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not {what}")
    if isinstance(value, int | float):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{value!r} is not {what} (must be finite and >= 0)")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not {what}")
    return None


def parse_duration(value: Any) -> float:
    """Seconds from a number or plain numeric text (seconds), or text such as ``500ms``, ``90s``,
    ``5m``, ``2h``, ``1d``, ``1h30m``."""
    number = _number(value, "a duration")
    if number is not None:
        return number
    text = value.strip().lower().replace(" ", "")
    if not text:
        raise ValueError("empty duration")
    if _PLAIN_NUMBER.fullmatch(text):
        return float(text)
    pos, total = 0, 0.0
    while pos < len(text):
        match = _DURATION_PART.match(text, pos)
        if match is None:
            raise ValueError(f"{value!r} is not a duration (e.g. 500ms, 90s, 5m, 2h, 1d, 1h30m)")
        total += float(match.group(1)) * _DURATION_UNITS[match.group(2)]
        pos = match.end()
    return total


def parse_size(value: Any) -> float:
    """Bytes from a number or text such as ``512``, ``1KB`` (1000), ``1KiB`` (1024), ``2MB``."""
    number = _number(value, "a size in bytes")
    if number is not None:
        return number
    match = _SIZE.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a size (e.g. 512, 1KB, 1KiB, 2MB)")
    return float(match.group(1)) * _SIZE_UNITS[(match.group(2) or "").lower()]


def parse_quantity(value: Any) -> float:
    """A plain non-negative number, optionally with ``k``/``M``/``G`` (``120k`` = 120 000)."""
    number = _number(value, "a number")
    if number is not None:
        return number
    match = _QUANTITY.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a number (e.g. 1500, 120k, 1.5M)")
    return float(match.group(1)) * _QUANTITY_UNITS[(match.group(2) or "").lower()]


def format_duration(seconds: float) -> str:
    """Compact text for a duration: ``90`` -> ``1m30s``, ``0.5`` -> ``500ms``."""
    if seconds < 1:
        return f"{round(seconds * 1000)}ms"
    rest = round(seconds)
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, rest = divmod(rest, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"
