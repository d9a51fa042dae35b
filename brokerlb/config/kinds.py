"""Value kinds of config keys: how a value is read from broker.conf text or a typed mapping.

Each kind turns one raw value into the typed value, or raises
:class:`~brokerlb.errors.InvalidConfigError` naming the key and the value.

Text (a value read from broker.conf or ``--set``) follows Pulsar's ``FieldParser``
(read at apache/pulsar, the version with ``setEmptyValue`` and the Jackson enum
resolver), with brokerlb's stricter checks:

======================  ====================================================  =========================
kind                    text accepted                                         Pulsar difference
======================  ====================================================  =========================
``BOOL``                ``true`` / ``false``, any case                        Java reads *anything*
                                                                              other than "true" as
                                                                              false; we reject it
``INT`` / ``LONG``      decimal digits with an optional sign, in the Java     same
                        32/64-bit range
``DOUBLE``              decimal number, optional exponent; finite only        Java also takes NaN,
                                                                              Infinity, hex, ``1d``
``STRING``              the text                                              same
``CLASSNAME``           a non-empty class name or short name                  same
``MINUTES``/``SECONDS`` an integer **or a fractional** number ≥ 0             Pulsar: integers only
                                                                              (brokerlb allows
                                                                              sub-minute intervals)
``choice(...)``         one of the choices, any case                          Pulsar matches exactly
``list_of(...)``        comma-separated items, each trimmed; empty items      Java keeps inner empty
                        are dropped                                           items
``set_of(...)``         as a list, duplicates dropped                         same
``optional(k)``         as ``k``                                              same
======================  ====================================================  =========================

Blank text means what it means in Pulsar (``FieldParser.update`` / ``setEmptyValue``):
a scalar key keeps its default, a list or set key becomes empty, an optional key
becomes unset (``None``) -- e.g. ``webServicePortTls=`` leaves TLS off.

Typed values (from a JSON snapshot or Python code) must already have the right
Python type: ``bool`` for BOOL (``1`` is not a boolean), ``int`` for INT/LONG
(an integral float such as ``5.0`` is accepted), ``int``/``float`` for DOUBLE and
durations, ``str`` for strings, a list/tuple/set of strings (or one comma-separated
string) for lists and sets, ``None`` for an unset optional. A ``str`` value is always
read as text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from brokerlb.errors import InvalidConfigError

__all__ = [
    "Kind",
    "BoolKind",
    "IntKind",
    "DoubleKind",
    "StringKind",
    "DurationKind",
    "ChoiceKind",
    "ListKind",
    "OptionalKind",
    "BOOL",
    "INT",
    "LONG",
    "DOUBLE",
    "STRING",
    "CLASSNAME",
    "MINUTES",
    "SECONDS",
    "OPTIONAL_INT",
    "OPTIONAL_DOUBLE",
    "OPTIONAL_STRING",
    "STRING_LIST",
    "STRING_SET",
    "choice",
    "list_of",
    "set_of",
    "optional",
]

_INT_TEXT = re.compile(r"[+-]?\d+")
_DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _bad(key: str, value: object, why: str) -> InvalidConfigError:
    return InvalidConfigError(key, value, why)


class Kind:
    """How values of one type are read, checked and written back."""

    #: short name shown in docs (``bool``, ``int``, ``list<string>`` ...)
    name: str = "?"

    def parse_text(self, key: str, text: str) -> Any:
        """Read stripped, non-blank broker.conf text."""
        raise NotImplementedError

    def coerce(self, key: str, value: Any) -> Any:
        """Check a typed (non-``str``) value and normalise it."""
        raise NotImplementedError

    def blank(self, default: Any) -> Any:
        """The value a blank text gives (Pulsar: scalars keep their default)."""
        return default

    def to_json(self, value: Any) -> Any:
        """A JSON-friendly form that :meth:`coerce` reads back unchanged."""
        return value

    def to_text(self, value: Any) -> str:
        """The broker.conf form that :meth:`parse_text` reads back unchanged."""
        return str(value)

    def read(self, key: str, raw: Any, default: Any) -> Any:
        """Read a raw value: text (``str``) or typed."""
        if isinstance(raw, str):
            text = raw.strip()
            return self.blank(default) if not text else self.parse_text(key, text)
        return self.coerce(key, raw)

    def __repr__(self) -> str:
        return f"<kind {self.name}>"


@dataclass(frozen=True, repr=False)
class BoolKind(Kind):
    name: str = "bool"

    def parse_text(self, key: str, text: str) -> bool:
        lowered = text.lower()
        if lowered == "true":
            return True
        if lowered == "false":
            return False
        raise _bad(key, text, "expected true or false")

    def coerce(self, key: str, value: Any) -> bool:
        if isinstance(value, bool):
            return value
        raise _bad(key, value, "expected a boolean (true or false)")

    def to_text(self, value: Any) -> str:
        return "true" if value else "false"


@dataclass(frozen=True, repr=False)
class IntKind(Kind):
    """Java ``int`` (32 bits) or ``long`` (64 bits)."""

    name: str = "int"
    bits: int = 32

    def _in_range(self, key: str, raw: object, value: int) -> int:
        limit = 1 << (self.bits - 1)
        if not -limit <= value < limit:
            raise _bad(key, raw, f"out of range for a {self.bits}-bit integer")
        return value

    def parse_text(self, key: str, text: str) -> int:
        if not _INT_TEXT.fullmatch(text):
            raise _bad(key, text, "expected an integer")
        return self._in_range(key, text, int(text))

    def coerce(self, key: str, value: Any) -> int:
        if isinstance(value, bool):
            raise _bad(key, value, "expected an integer, not a boolean")
        if isinstance(value, int):
            return self._in_range(key, value, value)
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return self._in_range(key, value, int(value))
        raise _bad(key, value, "expected an integer")


def _finite(key: str, raw: object, value: float) -> float:
    if not math.isfinite(value):
        raise _bad(key, raw, "expected a finite number")
    return value


def _number(key: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(key, value, "expected a number")
    if isinstance(value, float):
        _finite(key, value, value)
    return value


@dataclass(frozen=True, repr=False)
class DoubleKind(Kind):
    name: str = "double"

    def parse_text(self, key: str, text: str) -> float:
        lowered = text.lower().lstrip("+-")
        if lowered in ("nan", "inf", "infinity"):
            raise _bad(key, text, "expected a finite number")
        if not _DECIMAL_TEXT.fullmatch(text):
            raise _bad(key, text, "expected a number")
        return _finite(key, text, float(text))

    def coerce(self, key: str, value: Any) -> float:
        return float(_number(key, value))

    def to_text(self, value: Any) -> str:
        return repr(float(value))


@dataclass(frozen=True, repr=False)
class DurationKind(Kind):
    """A time interval in ``unit``; Pulsar's keys are integers, brokerlb also takes fractions.

    Integral values stay ``int`` (``1`` not ``1.0``), so defaults print as Pulsar's.
    """

    name: str = "minutes"
    unit: str = "minutes"

    def parse_text(self, key: str, text: str) -> int | float:
        if _INT_TEXT.fullmatch(text):
            return int(text)
        return self._normalise(DoubleKind().parse_text(key, text))

    def coerce(self, key: str, value: Any) -> int | float:
        return self._normalise(_number(key, value))

    @staticmethod
    def _normalise(value: int | float) -> int | float:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value


@dataclass(frozen=True, repr=False)
class StringKind(Kind):
    """A string, trimmed. Blank means "keep the default", as in Pulsar (never an empty string)."""

    name: str = "string"

    def parse_text(self, key: str, text: str) -> str:
        return text

    def coerce(self, key: str, value: Any) -> str:
        raise _bad(key, value, "expected a string")


@dataclass(frozen=True, repr=False)
class ChoiceKind(Kind):
    """One of fixed names, matched case-insensitively and stored in canonical spelling."""

    choices: tuple[str, ...] = ()
    #: other accepted spellings → canonical choice (e.g. Java enum constant names)
    aliases: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:  # type: ignore[override]
        return "choice"

    def _lookup(self) -> dict[str, str]:
        table = {c.lower(): c for c in self.choices}
        table.update({alias.lower(): canonical for alias, canonical in self.aliases})
        return table

    def parse_text(self, key: str, text: str) -> str:
        found = self._lookup().get(text.lower())
        if found is None:
            raise _bad(key, text, f"expected one of {', '.join(self.choices)}")
        return found

    def coerce(self, key: str, value: Any) -> str:
        raise _bad(key, value, f"expected one of {', '.join(self.choices)}")


@dataclass(frozen=True, repr=False)
class ListKind(Kind):
    """Comma-separated strings (Pulsar ``List<String>``, or ``Set<String>`` with ``unique``)."""

    unique: bool = False
    #: when set, every item must be one of these names
    item_choices: tuple[str, ...] | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return "set<string>" if self.unique else "list<string>"

    def blank(self, default: Any) -> Any:
        return frozenset() if self.unique else ()

    def parse_text(self, key: str, text: str) -> tuple[str, ...] | frozenset[str]:
        return self._finish(key, text, [item.strip() for item in text.split(",")])

    def coerce(self, key: str, value: Any) -> tuple[str, ...] | frozenset[str]:
        if not isinstance(value, list | tuple | set | frozenset):
            raise _bad(key, value, "expected a list of strings")
        items = list(value)
        for item in items:
            if not isinstance(item, str):
                raise _bad(key, value, f"list item {item!r} is not a string")
        if isinstance(value, set | frozenset):
            items.sort()
        return self._finish(key, value, [item.strip() for item in items])

    def _finish(self, key: str, raw: object, items: Iterable[str]) -> tuple[str, ...] | frozenset[str]:
        kept = [item for item in items if item]
        if self.item_choices is not None:
            for item in kept:
                if item not in self.item_choices:
                    raise _bad(
                        key, raw, f"unknown item '{item}'; expected items from {', '.join(self.item_choices)}"
                    )
        if self.unique:
            return frozenset(kept)
        return tuple(kept)

    def to_json(self, value: Any) -> list[str]:
        return sorted(value) if self.unique else list(value)

    def to_text(self, value: Any) -> str:
        return ",".join(self.to_json(value))


@dataclass(frozen=True, repr=False)
class OptionalKind(Kind):
    """A value that may be unset (``None``): Pulsar ``Optional<T>`` or a nullable field."""

    inner: Kind = StringKind()

    @property
    def name(self) -> str:  # type: ignore[override]
        return f"optional<{self.inner.name}>"

    def blank(self, default: Any) -> Any:
        return None

    def parse_text(self, key: str, text: str) -> Any:
        return self.inner.parse_text(key, text)

    def coerce(self, key: str, value: Any) -> Any:
        if value is None:
            return None
        return self.inner.coerce(key, value)

    def to_json(self, value: Any) -> Any:
        return None if value is None else self.inner.to_json(value)

    def to_text(self, value: Any) -> str:
        return "" if value is None else self.inner.to_text(value)


BOOL = BoolKind()
INT = IntKind()
LONG = IntKind(name="long", bits=64)
DOUBLE = DoubleKind()
STRING = StringKind()
#: a class name (``org.apache.pulsar....ThresholdShedder``) or a short name; the decision
#: engine owns the strategy registry, so only non-emptiness is checked here
CLASSNAME = StringKind(name="classname")
MINUTES = DurationKind(name="minutes", unit="minutes")
SECONDS = DurationKind(name="seconds", unit="seconds")
OPTIONAL_INT = OptionalKind(INT)
OPTIONAL_DOUBLE = OptionalKind(DOUBLE)
OPTIONAL_STRING = OptionalKind(STRING)
STRING_LIST = ListKind()
STRING_SET = ListKind(unique=True)


def choice(*choices: str, aliases: Sequence[tuple[str, str]] = ()) -> ChoiceKind:
    return ChoiceKind(choices=tuple(choices), aliases=tuple(aliases))


def list_of(item_choices: Sequence[str] | None = None) -> ListKind:
    return ListKind(item_choices=None if item_choices is None else tuple(item_choices))


def set_of(item_choices: Sequence[str] | None = None) -> ListKind:
    return ListKind(unique=True, item_choices=None if item_choices is None else tuple(item_choices))


def optional(inner: Kind) -> OptionalKind:
    return OptionalKind(inner)
