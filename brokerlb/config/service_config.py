"""``ServiceConfig``: the immutable, typed broker configuration, keys named as in Pulsar.

>>> conf = ServiceConfig()
>>> conf.loadBalancerBrokerOverloadedThresholdPercentage
85
>>> conf.defaultNumberOfNamespaceBundles
4
>>> fast = conf.with_overrides({"loadBalancerSheddingIntervalMinutes": "0.05"})
>>> fast.duration_seconds("loadBalancerSheddingIntervalMinutes")
3.0
>>> ServiceConfig.from_mapping(fast.to_dict()) == fast
True

Building a config reads every value with its key's kind (text as broker.conf writes it,
or a typed value), resolves deprecated aliases as Pulsar does, then runs the cross-key
checks; any bad value raises :class:`~brokerlb.errors.InvalidConfigError` naming the key.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

from brokerlb.config.aliases import ALIASES, KNOWN_IGNORED_KEYS, REFUSED_WHEN_SET
from brokerlb.config.keys_balancer import BalancerKeys
from brokerlb.config.keys_brokerlb import BrokerlbKeys
from brokerlb.config.keys_extensible import ExtensibleLoadManagerKeys
from brokerlb.config.keys_load_balancer import (
    BundleSplitKeys,
    LoadBalancerKeys,
    LoadReportKeys,
    PlacementKeys,
    ResourceUsageKeys,
    SheddingKeys,
)
from brokerlb.config.keys_messaging import MessagingKeys
from brokerlb.config.keys_security import SecurityKeys, TlsKeys
from brokerlb.config.keys_server import MetadataStoreKeys, MetricsKeys, PolicyKeys, ServerKeys
from brokerlb.config.keys_storage import StorageKeys
from brokerlb.config.properties import format_properties
from brokerlb.config.registry import Alias, ConfigKey, KeyGroup, KeyRegistry
from brokerlb.config.validation import check_cross_key
from brokerlb.errors import (
    DeprecatedConfigKeyWarning,
    InvalidConfigError,
    UnknownConfigKeyError,
    UnknownConfigKeyWarning,
)

__all__ = ["ServiceConfig", "REGISTRY", "KEY_GROUPS"]

#: The key groups, in documentation order.
KEY_GROUPS: tuple[type[KeyGroup], ...] = (
    ServerKeys,
    MetadataStoreKeys,
    PolicyKeys,
    MetricsKeys,
    SecurityKeys,
    TlsKeys,
    MessagingKeys,
    StorageKeys,
    LoadBalancerKeys,
    LoadReportKeys,
    ResourceUsageKeys,
    SheddingKeys,
    PlacementKeys,
    BundleSplitKeys,
    ExtensibleLoadManagerKeys,
    BrokerlbKeys,
    BalancerKeys,
)

#: Every key brokerlb models, its aliases and the Pulsar keys it ignores.
REGISTRY = KeyRegistry.from_groups(KEY_GROUPS, ALIASES, KNOWN_IGNORED_KEYS)

_SECONDS_PER_UNIT = {"minutes": 60.0, "seconds": 1.0, "millis": 0.001}


class ServiceConfig(
    ServerKeys,
    MetadataStoreKeys,
    PolicyKeys,
    MetricsKeys,
    SecurityKeys,
    TlsKeys,
    MessagingKeys,
    StorageKeys,
    LoadBalancerKeys,
    LoadReportKeys,
    ResourceUsageKeys,
    SheddingKeys,
    PlacementKeys,
    BundleSplitKeys,
    ExtensibleLoadManagerKeys,
    BrokerlbKeys,
    BalancerKeys,
):
    """The broker configuration: one read-only attribute per key, named like Pulsar's key.

    ``ServiceConfig()`` has every default; ``ServiceConfig(key=value, ...)`` sets some
    (an unknown name raises, since it is a typo in code). Files and JSON go through
    :meth:`from_mapping`, which warns about unknown keys instead.
    """

    __slots__ = ("_values", "_explicit")
    registry: ClassVar[KeyRegistry] = REGISTRY

    _values: dict[str, Any]
    _explicit: frozenset[str]

    def __init__(self, **values: Any) -> None:
        merged, explicit = _merge(
            REGISTRY.defaults(), frozenset(), values, unknown="error", accept_ignored=False
        )
        self._set_state(merged, explicit)

    def _set_state(self, values: dict[str, Any], explicit: frozenset[str]) -> None:
        object.__setattr__(self, "_values", values)
        object.__setattr__(self, "_explicit", explicit)

    @classmethod
    def _create(cls, values: dict[str, Any], explicit: frozenset[str]) -> ServiceConfig:
        conf = cls.__new__(cls)
        conf._set_state(values, explicit)
        return conf

    # ------------------------------------------------------------------ building

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any], *, strict: bool = False, source: str | None = None
    ) -> ServiceConfig:
        """A config with ``mapping`` applied over the defaults.

        Values may be broker.conf text (``"0.05"``, ``"true"``, ``"a,b"``) or typed values
        (as :meth:`to_dict` writes them). Unknown keys warn
        (:class:`~brokerlb.errors.UnknownConfigKeyWarning`) or, with ``strict``, raise
        :class:`~brokerlb.errors.UnknownConfigKeyError`; keys of Pulsar that brokerlb does
        not model are skipped silently. ``source`` (e.g. a file name) prefixes warnings.
        """
        merged, explicit = _merge(
            REGISTRY.defaults(), frozenset(), mapping, unknown="error" if strict else "warn", source=source
        )
        return cls._create(merged, explicit)

    def with_overrides(
        self,
        overrides: Mapping[str, Any],
        *,
        dynamic_only: bool = False,
        strict: bool = False,
        source: str | None = None,
    ) -> ServiceConfig:
        """A new config with ``overrides`` applied over this one (this one is unchanged).

        With ``dynamic_only`` a key Pulsar cannot change at run time raises
        :class:`~brokerlb.errors.InvalidConfigError` (like Pulsar's dynamic-config update).
        """
        merged, explicit = _merge(
            self._values,
            self._explicit,
            overrides,
            unknown="error" if strict else "warn",
            dynamic_only=dynamic_only,
            source=source,
        )
        return type(self)._create(merged, explicit)

    def adopt_dynamic_values(self, updated: ServiceConfig) -> dict[str, tuple[Any, Any]]:
        """Take ``updated``'s values of the dynamic keys, **in place**; returns ``{key: (old, new)}``.

        The one mutation of a config, for Pulsar's dynamic configuration: every part of a running
        broker holds this same object, so each reads the new value at its next use (the leader at
        its next cycle). Only keys Pulsar can change at run time are taken; the others must be
        equal (``updated`` is normally ``base.with_overrides(map, dynamic_only=True)``).
        """
        changed: dict[str, tuple[Any, Any]] = {}
        for name, value in updated._values.items():
            old = self._values[name]
            if value == old and type(value) is type(old):
                continue
            if not REGISTRY.keys[name].dynamic:
                raise InvalidConfigError(
                    name, value, "not a dynamic configuration; it can only be set in broker.conf"
                )
            changed[name] = (old, value)
        values = dict(self._values)
        values.update({name: new for name, (_old, new) in changed.items()})
        self._set_state(values, self._explicit | frozenset(changed))
        return changed

    # ------------------------------------------------------------------ reading

    def get(self, name: str) -> Any:
        """The value of key ``name`` (an alias gives the key it stands for)."""
        return self._values[REGISTRY.get(name).name]

    def to_dict(self, *, changed_only: bool = False) -> dict[str, Any]:
        """JSON-friendly ``{key: value}`` that :meth:`from_mapping` reads back unchanged."""
        return {
            name: REGISTRY.keys[name].to_json(value)
            for name, value in self._values.items()
            if not changed_only or value != REGISTRY.keys[name].default
        }

    def changed(self) -> dict[str, Any]:
        """Keys whose value differs from the default (typed values)."""
        return {name: value for name, value in self._values.items() if value != REGISTRY.keys[name].default}

    @property
    def explicit_keys(self) -> frozenset[str]:
        """Keys that were set (by a file, a mapping, an override or an alias), even to the default."""
        return self._explicit

    def duration_seconds(self, name: str) -> float:
        """The value of an interval key in seconds (``...Minutes`` × 60, ``...Millis`` / 1000)."""
        config_key = REGISTRY.get(name)
        value = self._values[config_key.name]
        factor = _SECONDS_PER_UNIT.get(config_key.unit or "")
        if factor is None:
            raise InvalidConfigError(config_key.name, value, "not a time interval key")
        return float(value) * factor

    def check_complete(self) -> None:
        """Raise :class:`InvalidConfigError` for a required key that is unset (Pulsar's isComplete)."""
        for config_key in REGISTRY:
            if config_key.required and self._values[config_key.name] is None:
                raise InvalidConfigError(config_key.name, None, "required, but not set")

    def to_broker_conf(self, *, changed_only: bool = True) -> str:
        """broker.conf text that :func:`~brokerlb.config.load_broker_conf` reads back to this config."""
        pairs = [
            (name, REGISTRY.keys[name].to_text(value))
            for name, value in self._values.items()
            if not changed_only or value != REGISTRY.keys[name].default
        ]
        return format_properties(pairs, header="brokerlb broker configuration (Pulsar broker.conf format)")

    # ------------------------------------------------------------------ value semantics

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ServiceConfig is immutable; use with_overrides()")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ServiceConfig is immutable")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ServiceConfig):
            return NotImplemented
        return self._values == other._values

    def __hash__(self) -> int:
        return hash(tuple(self._values.values()))

    def __repr__(self) -> str:
        changed = ", ".join(f"{name}={value!r}" for name, value in self.changed().items())
        return f"ServiceConfig({changed})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (dict(self._values), self._explicit))


def _restore(values: dict[str, Any], explicit: frozenset[str]) -> ServiceConfig:
    return ServiceConfig._create(values, explicit)


def _merge(
    base: Mapping[str, Any],
    base_explicit: frozenset[str],
    mapping: Mapping[str, Any],
    *,
    unknown: str,
    accept_ignored: bool = True,
    dynamic_only: bool = False,
    source: str | None = None,
) -> tuple[dict[str, Any], frozenset[str]]:
    """Apply ``mapping`` over ``base``: read values, resolve aliases, check across keys."""
    parsed: dict[str, Any] = {}
    alias_values: list[tuple[Alias, Any, Any]] = []
    for raw_name, raw in mapping.items():
        name = str(raw_name).strip()
        config_key = REGISTRY.keys.get(name)
        alias = REGISTRY.aliases.get(name)
        if config_key is not None:
            _check_dynamic(config_key, name, raw, dynamic_only)
            parsed[name] = config_key.read(raw)
            if config_key.deprecated and parsed[name] != config_key.default:
                _warn(
                    DeprecatedConfigKeyWarning,
                    f"config key '{name}' is deprecated: {config_key.deprecated}",
                    source,
                )
        elif alias is not None:
            target = REGISTRY.keys[alias.new]
            _check_dynamic(target, name, raw, dynamic_only)
            alias_values.append((alias, alias.read(raw, target), raw))
            _warn(
                DeprecatedConfigKeyWarning,
                f"config key '{name}' is deprecated; use '{alias.new}' ({alias.explanation})",
                source,
            )
        elif accept_ignored and name in REGISTRY.ignored:
            _refuse_if_set(name, raw)
            continue
        elif unknown == "error":
            raise UnknownConfigKeyError(name, REGISTRY.suggest(name))
        else:
            suggestions = REGISTRY.suggest(name)
            hint = f" (did you mean {', '.join(suggestions)}?)" if suggestions else ""
            _warn(UnknownConfigKeyWarning, f"unknown config key '{name}' ignored{hint}", source)

    values = dict(base)
    values.update(parsed)
    explicit = set(base_explicit) | parsed.keys()
    for alias, old_value, raw in alias_values:
        _apply_alias(alias, old_value, raw, values, explicit)
    check_cross_key(values)
    return values, frozenset(explicit)


def _apply_alias(alias: Alias, old_value: Any, raw: Any, values: dict[str, Any], explicit: set[str]) -> None:
    target: ConfigKey = REGISTRY.keys[alias.new]
    current = values[alias.new]
    resolved = alias.rule(old_value, current, alias.new in explicit, target)
    if resolved == current and type(resolved) is type(current):
        return
    try:
        target.validate(resolved)
    except InvalidConfigError as exc:
        raise InvalidConfigError(alias.old, raw, exc.why) from None
    values[alias.new] = resolved
    explicit.add(alias.new)


def _refuse_if_set(name: str, raw: Any) -> None:
    """A security-relevant Pulsar key brokerlb does not implement must not be silently ignored."""
    refused = REFUSED_WHEN_SET.get(name)
    if refused is None:
        return
    off, why = refused
    text = raw if isinstance(raw, str) else ("" if raw is None else str(raw))
    if text.strip().lower() not in off:
        raise InvalidConfigError(
            name, raw, f"not implemented by brokerlb ({why}); refusing to start without it"
        )


def _check_dynamic(config_key: ConfigKey, name: str, raw: Any, dynamic_only: bool) -> None:
    if dynamic_only and not config_key.dynamic:
        raise InvalidConfigError(name, raw, "not a dynamic configuration; it can only be set in broker.conf")


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _warn(category: type[Warning], message: str, source: str | None) -> None:
    # point the warning at the first caller outside brokerlb.config (the user's code)
    level, frame = 1, sys._getframe(0)
    while frame is not None and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    warnings.warn(f"{source}: {message}" if source else message, category, stacklevel=level)
