"""Reading scenario data with paths: the node reader and value parsers of the scenario loader.

:class:`Node` wraps one mapping of the YAML document, knows its path (``namespaces[1].workload``)
and its file, refuses unknown keys (suggesting close ones) and turns every parse error into an
:class:`~brokerlb.errors.InvalidScenarioError` naming the field.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from brokerlb.errors import InvalidInputError, InvalidScenarioError
from brokerlb.naming import NamespaceName
from brokerlb.sim.units import parse_quantity

__all__ = [
    "Node",
    "shown",
    "integer",
    "count",
    "positive",
    "fraction",
    "text",
    "namespace",
    "strategies",
    "config",
    "expand_names",
]

T = TypeVar("T")


class Node:
    """A mapping being read, with its path for error messages and a check for unknown keys."""

    def __init__(self, data: Any, path: str, source: str | None, allowed: tuple[str, ...]) -> None:
        self.path = path
        self.source = source
        if not isinstance(data, Mapping):
            raise self.error(f"expected a mapping, got {shown(data)}")
        self.data = data
        for key in data:
            if key not in allowed:
                close = difflib.get_close_matches(str(key), allowed, n=2)
                hint = f" (did you mean {' or '.join(close)}?)" if close else ""
                raise self.error(f"unknown key {key!r}{hint}; known keys: {', '.join(allowed)}", key)

    def sub(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def error(self, why: str, key: Any = None) -> InvalidScenarioError:
        where = self.sub(str(key)) if key is not None else (self.path or None)
        return InvalidScenarioError(why, field=where, source=self.source)

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def get(self, key: str, parse: Callable[[Any], T], default: T, *, required: bool = False) -> T:
        if key not in self.data or self.data[key] is None:
            if required:
                raise self.error("required", key)
            return default
        try:
            return parse(self.data[key])
        except (ValueError, TypeError) as exc:
            raise self.error(str(exc), key) from None


def shown(value: Any) -> str:
    return f"{type(value).__name__} {value!r}" if not isinstance(value, str) else repr(value)


def integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ValueError(f"{shown(value)} is not an integer")
    return value


def count(minimum: int) -> Callable[[Any], int]:
    def parse(value: Any) -> int:
        number = integer(value) if not isinstance(value, str) else int(parse_quantity(value))
        if number < minimum:
            raise ValueError(f"{number} is below the minimum {minimum}")
        return number

    return parse


def positive(parse: Callable[[Any], float]) -> Callable[[Any], float]:
    def checked(value: Any) -> float:
        number = parse(value)
        if number <= 0:
            raise ValueError(f"{value!r} must be > 0")
        return number

    return checked


def fraction(value: Any) -> float:
    number = parse_quantity(value)
    if number > 1:
        raise ValueError(f"{value!r} must be between 0 and 1")
    return number


def text(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{shown(value)} is not a string")
    text = str(value).strip()
    if not text:
        raise ValueError("empty string")
    return text


def namespace(value: Any) -> str:
    name = text(value)
    try:
        ns = NamespaceName.parse(name)
    except InvalidInputError as exc:
        raise ValueError(str(exc)) from None
    if not ns.is_v2:
        raise ValueError(f"{name!r}: use a tenant/namespace name (v2)")
    return str(ns)


def strategies(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [part.strip() for part in value.split(",")]
    elif isinstance(value, list | tuple):
        items = [text(item) for item in value]
    else:
        raise ValueError(f"{shown(value)} is not a list of strategy names")
    items = [item for item in items if item]
    if not items:
        raise ValueError("no strategy named")
    return tuple(items)


def config(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of broker.conf keys, got {shown(value)}")
    return {str(k): v for k, v in value.items()}


def expand_names(template: str, count: int) -> list[str]:
    if count == 1 and "{i}" not in template:
        return [template]
    if "{i}" not in template:
        raise ValueError(f"name {template!r} repeats {count} times: put {{i}} in it")
    return [template.replace("{i}", str(i)) for i in range(1, count + 1)]
