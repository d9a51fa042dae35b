"""The key registry: one declaration per key, read from the key-group classes.

A key is declared once, as an annotated class attribute of a key group, named exactly
like Pulsar's ``ServiceConfiguration`` field::

    class SheddingKeys(KeyGroup):
        CATEGORY = "Load shedding"
        loadBalancerSheddingEnabled: bool = key(BOOL, True, "Shed load from busy brokers.", dynamic=True)

The attribute name is the key name, so ``conf.loadBalancerSheddingEnabled`` is typed
for mypy and an IDE jumps from a use to the declaration. :class:`KeyRegistry` collects
the declarations of all groups into :class:`ConfigKey` records (kind, default, doc,
dynamic flag, category, deprecation, constraints) for the loader, the docs and the CLI.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from brokerlb.config.kinds import DurationKind, Kind, OptionalKind
from brokerlb.errors import InvalidConfigError, UnknownConfigKeyError

__all__ = [
    "BROKERLB_PREFIX",
    "ConfigKey",
    "KeyGroup",
    "KeyDescriptor",
    "KeyRegistry",
    "Alias",
    "key",
]

#: brokerlb's own keys (deviations and options Pulsar does not have) start with this.
BROKERLB_PREFIX = "brokerlb"

#: A per-key check on the parsed value: returns why the value is wrong, or None.
ValueCheck = Callable[[Any], str | None]


@dataclass(frozen=True)
class ConfigKey:
    """Everything known about one config key."""

    name: str
    kind: Kind
    default: Any
    doc: str
    category: str
    #: Pulsar can change it at run time (``pulsar-admin brokers update-dynamic-config``)
    dynamic: bool = False
    #: Pulsar's ``required = true``: :meth:`ServiceConfig.check_complete` insists on a value
    required: bool = False
    #: why the key is deprecated and what to use instead; None when it is current
    deprecated: str | None = None
    #: numeric bounds (``ge``: ≥, ``gt``: >, ``le``: ≤), checked on every value
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    #: extra check on the parsed value
    check: ValueCheck | None = None
    #: time unit of the value (``minutes``, ``seconds``, ``millis``) when it is an interval
    unit: str | None = None
    #: the shortest interval accepted, in seconds whatever the key's unit (a periodic task with a
    #: shorter one would run without pause: ``loadBalancerSheddingIntervalMinutes=1e-9``)
    min_seconds: float | None = None
    #: how brokerlb's behaviour or default differs from Pulsar's (shown in the docs)
    deviation: str | None = None

    @property
    def is_brokerlb_extension(self) -> bool:
        return self.name.startswith(BROKERLB_PREFIX)

    def read(self, raw: Any) -> Any:
        """Parse and check one raw value (text or typed) for this key."""
        value = self.kind.read(self.name, raw, self.default)
        self.validate(value, raw)
        return value

    def validate(self, value: Any, raw: Any = None) -> None:
        shown = value if raw is None else raw
        if value is None:
            return
        if self.ge is not None and value < self.ge:
            raise InvalidConfigError(self.name, shown, f"must be >= {_num(self.ge)}")
        if self.gt is not None and value <= self.gt:
            raise InvalidConfigError(self.name, shown, f"must be > {_num(self.gt)}")
        if self.le is not None and value > self.le:
            raise InvalidConfigError(self.name, shown, f"must be <= {_num(self.le)}")
        if self.min_seconds is not None and value * _SECONDS_PER[self.time_unit] < self.min_seconds:
            raise InvalidConfigError(
                self.name, shown, f"must be at least {_num(self.min_seconds)} s (a shorter interval spins)"
            )
        if self.check is not None:
            why = self.check(value)
            if why:
                raise InvalidConfigError(self.name, shown, why)

    @property
    def time_unit(self) -> str:
        """``minutes``, ``seconds`` or ``millis`` (interval kinds carry their unit)."""
        return self.unit or "seconds"

    def to_json(self, value: Any) -> Any:
        return self.kind.to_json(value)

    def to_text(self, value: Any) -> str:
        return self.kind.to_text(value)

    def describe_constraints(self) -> str:
        parts = []
        if self.ge is not None:
            parts.append(f">= {_num(self.ge)}")
        if self.gt is not None:
            parts.append(f"> {_num(self.gt)}")
        if self.le is not None:
            parts.append(f"<= {_num(self.le)}")
        if self.min_seconds is not None:
            parts.append(f">= {_num(self.min_seconds)} s")
        return ", ".join(parts)


_SECONDS_PER = {"minutes": 60.0, "seconds": 1.0, "millis": 0.001}


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


class KeyDescriptor:
    """What :func:`key` puts in a key group; becomes a :class:`ConfigKey` once named.

    On a :class:`ServiceConfig` instance it reads the key's value; values are immutable.
    """

    def __init__(self, kind: Kind, default: Any, doc: str, options: dict[str, Any]) -> None:
        self.kind = kind
        self.default = default
        self.doc = doc
        self.options = options
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def build(self, category: str) -> ConfigKey:
        options = dict(self.options)
        category = options.pop("category", None) or category
        unit = options.pop("unit", None)
        if unit is None and isinstance(self.kind, DurationKind):
            unit = self.kind.unit
        # the declared default is read like any value, so it must itself be valid
        default = self.kind.read(self.name, self.default, self.default)
        config_key = ConfigKey(
            name=self.name,
            kind=self.kind,
            default=default,
            doc=self.doc,
            category=category,
            unit=unit,
            **options,
        )
        if config_key.min_seconds is not None and config_key.unit not in _SECONDS_PER:
            raise ValueError(f"config key {self.name!r}: min_seconds needs a unit (minutes, seconds, millis)")
        config_key.validate(default)
        return config_key

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj._values[self.name]

    def __set__(self, obj: Any, value: Any) -> None:
        raise AttributeError(f"config key '{self.name}' is read-only; use with_overrides()")


def key(
    kind: Kind,
    default: Any,
    doc: str,
    *,
    dynamic: bool = False,
    required: bool = False,
    deprecated: str | None = None,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    check: ValueCheck | None = None,
    unit: str | None = None,
    deviation: str | None = None,
    category: str | None = None,
    min_seconds: float | None = None,
) -> Any:
    """Declare a config key in a :class:`KeyGroup` (the attribute name is the key name).

    Returns ``Any`` so that the attribute's annotation (``bool``, ``int | None`` ...) is
    what type checkers see.
    """
    options: dict[str, Any] = {
        "dynamic": dynamic,
        "required": required,
        "deprecated": deprecated,
        "ge": ge,
        "gt": gt,
        "le": le,
        "check": check,
        "unit": unit,
        "deviation": deviation,
        "min_seconds": min_seconds,
    }
    if category is not None:
        options["category"] = category
    return KeyDescriptor(kind, default, doc, options)


class KeyGroup:
    """Base of the classes that declare keys; ``CATEGORY`` names the group in the docs."""

    __slots__ = ()
    CATEGORY: ClassVar[str] = ""
    #: one-paragraph introduction of the group for the docs
    INTRO: ClassVar[str] = ""
    #: True for groups of brokerlb's own keys: their names must start with ``brokerlb``
    #: (and no other key may), so they can never clash with a Pulsar key
    EXTENSION: ClassVar[bool] = False


#: How an alias value combines with the current value of the key it stands for:
#: ``rule(alias_value, current_value, key_was_set_explicitly, config_key) -> new value``.
AliasRule = Callable[[Any, Any, bool, ConfigKey], Any]


@dataclass(frozen=True)
class Alias:
    """A deprecated spelling of a key, resolved the way Pulsar's getters resolve it."""

    old: str
    new: str
    rule: AliasRule
    #: kind of the old key's value; None = the new key's kind
    kind: Kind | None = None
    #: how the two combine, for the docs
    explanation: str = ""

    def read(self, raw: Any, target: ConfigKey) -> Any:
        kind = self.kind or target.kind
        default = None if isinstance(kind, OptionalKind) else target.default
        return kind.read(self.old, raw, default)


@dataclass
class KeyRegistry:
    """All keys, aliases and the Pulsar keys that are known but deliberately ignored."""

    keys: dict[str, ConfigKey] = field(default_factory=dict)
    groups: list[type[KeyGroup]] = field(default_factory=list)
    aliases: dict[str, Alias] = field(default_factory=dict)
    ignored: frozenset[str] = frozenset()

    @classmethod
    def from_groups(
        cls, groups: Iterable[type[KeyGroup]], aliases: Iterable[Alias] = (), ignored: Iterable[str] = ()
    ) -> KeyRegistry:
        registry = cls(ignored=frozenset(ignored))
        for group in groups:
            registry.groups.append(group)
            for value in vars(group).values():
                if isinstance(value, KeyDescriptor):
                    config_key = value.build(group.CATEGORY)
                    if config_key.is_brokerlb_extension != group.EXTENSION:
                        raise ValueError(
                            f"config key '{config_key.name}' in {group.__name__}: brokerlb's own "
                            f"keys, and only they, start with '{BROKERLB_PREFIX}'"
                        )
                    registry._add(config_key)
        for alias in aliases:
            registry._add_alias(alias)
        return registry

    def _add(self, config_key: ConfigKey) -> None:
        if config_key.name in self.keys:
            raise ValueError(f"config key '{config_key.name}' declared twice")
        self.keys[config_key.name] = config_key

    def _add_alias(self, alias: Alias) -> None:
        if alias.new not in self.keys:
            raise ValueError(f"alias '{alias.old}' stands for unknown key '{alias.new}'")
        if alias.old in self.keys or alias.old in self.aliases:
            raise ValueError(f"alias '{alias.old}' clashes with a key or another alias")
        self.aliases[alias.old] = alias

    # ------------------------------------------------------------------ lookup

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self.keys.values())

    def __len__(self) -> int:
        return len(self.keys)

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def get(self, name: str) -> ConfigKey:
        """The key called ``name`` (an alias gives the key it stands for)."""
        canonical = self.canonical_name(name)
        if canonical is None:
            raise UnknownConfigKeyError(name, self.suggest(name))
        return self.keys[canonical]

    def canonical_name(self, name: str) -> str | None:
        if name in self.keys:
            return name
        alias = self.aliases.get(name)
        return alias.new if alias is not None else None

    def suggest(self, name: str, n: int = 3) -> list[str]:
        """Known key names close to ``name`` (for "did you mean ...?")."""
        names = list(self.keys) + list(self.aliases)
        by_lower = {k.lower(): k for k in names}
        if name.lower() in by_lower:
            return [by_lower[name.lower()]]
        return difflib.get_close_matches(name, names, n=n, cutoff=0.8)

    def by_category(self) -> dict[str, list[ConfigKey]]:
        table: dict[str, list[ConfigKey]] = {}
        for config_key in self.keys.values():
            table.setdefault(config_key.category, []).append(config_key)
        return table

    def defaults(self) -> dict[str, Any]:
        return {name: k.default for name, k in self.keys.items()}

    def dynamic_keys(self) -> list[str]:
        return [name for name, k in self.keys.items() if k.dynamic]

    def aliases_of(self, name: str) -> list[Alias]:
        return [a for a in self.aliases.values() if a.new == name]
