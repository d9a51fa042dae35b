"""Dynamic configuration on a broker: Pulsar's ``pulsar-admin brokers update-dynamic-config``.

``POST /admin/v2/brokers/configuration/{key}/{value}`` (any broker) checks the key and the value
and writes them into ``/admin/configuration`` (:class:`~brokerlb.coordination.dynamic_config.
DynamicConfigStore`); every broker watches that node and applies the map over the configuration
it started with (:class:`DynamicConfiguration`), in place, so every part of the broker reads the
new value at its next use -- the leader at its next cycle (its shedding interval, thresholds,
strategy names are read per cycle).

Rules (Pulsar's ``BrokersBase``; status in brackets): a key that is unknown or not dynamic
(Pulsar's ``@FieldContext(dynamic = true)``, the registry's ``dynamic`` flag) [412 "Cannot update
non-dynamic configuration"]; a value the key does not accept [412 "Invalid dynamic-config value"
with why]. Values are checked as strictly as at start-up -- their kind, bounds (intervals have
sane minimums, ``min_seconds``: ``loadBalancerSheddingIntervalMinutes=1e-9`` is refused), the
cross-key rules, ``loadManagerClassName`` one of the two load managers -- and a strategy name must
resolve (at start-up an unknown one falls back to Pulsar's default, as in Pulsar; at run time it is
refused, so a running cluster never switches strategy by a typo). A refused value changes nothing.
A stored value a broker cannot apply (written by another version) is logged and skipped; the others
still apply.

Deviation: deleting a key (``DELETE /admin/v2/brokers/configuration/{key}``) puts the broker.conf
value back at once; Pulsar keeps the last dynamic value until the broker restarts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from brokerlb.config import REGISTRY, ServiceConfig
from brokerlb.coordination.dynamic_config import DynamicConfigStore, parse_dynamic_config
from brokerlb.coordination.store import MetadataStore
from brokerlb.coordination.watches import DataWatch
from brokerlb.errors import BrokerLBError, InvalidConfigError, PreconditionFailedError, UnknownStrategyError
from brokerlb.loadbalance.registry import StrategyKind, resolve

__all__ = ["DynamicConfiguration", "dynamic_config_names"]

logger = logging.getLogger(__name__)

#: Called with ``{key: (old, new)}`` after values changed.
ChangeListener = Callable[[dict[str, tuple[Any, Any]]], None]


def dynamic_config_names() -> list[str]:
    """Every key that can change at run time (``GET /admin/v2/brokers/configuration``)."""
    return sorted(REGISTRY.dynamic_keys())


class DynamicConfiguration:
    """Applies ``/admin/configuration`` to this broker's config; checks and writes updates."""

    def __init__(self, conf: ServiceConfig, store: MetadataStore) -> None:
        self.conf = conf
        #: The configuration the broker started with (broker.conf and command line): the map applies over it.
        self.base = conf.with_overrides({})
        self.store = DynamicConfigStore(store)
        self.applied: dict[str, str] = {}
        self._watch: DataWatch | None = None
        self._listeners: list[ChangeListener] = []

    def add_listener(self, listener: ChangeListener) -> None:
        self._listeners.append(listener)

    async def start(self) -> DynamicConfiguration:
        self._watch = self.store.watch(self._on_change)
        await self._watch.start()
        return self

    def close(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None

    # ------------------------------------------------------------------ admin
    async def update(self, key: str, value: str) -> None:
        """Check ``key=value`` against this broker's rules, then store it for every broker."""
        stored = await self.store.read()
        self._check(key, value, stored)
        await self.store.set(key, value)
        logger.info("Dynamic configuration %s=%s stored", key, value)

    async def delete(self, key: str) -> None:
        _dynamic_key(key)
        await self.store.delete(key)
        logger.info("Dynamic configuration %s removed (back to the broker.conf value)", key)

    async def stored_values(self) -> dict[str, str]:
        return await self.store.read()

    def runtime_values(self) -> dict[str, str]:
        """Every key's current value as broker.conf text (``GET .../configuration/runtime``)."""
        return {k.name: k.to_text(self.conf.get(k.name)) for k in REGISTRY}

    def _check(self, key: str, value: str, stored: Mapping[str, str]) -> None:
        """The key must be dynamic; the value must parse and agree with the other keys (cross-key rules)."""
        _dynamic_key(key)
        others = {k: v for k, v in stored.items() if k != key and self._usable(k, v)}
        try:
            REGISTRY.keys[key].read(value)
            self.base.with_overrides({**others, key: value}, dynamic_only=True, strict=True)
            _check_strategy(key, value)
        except InvalidConfigError as exc:
            raise PreconditionFailedError(f"Invalid dynamic-config value {key}={value}: {exc}") from exc

    # ------------------------------------------------------------------ watch
    def _on_change(self, raw: bytes | None) -> None:
        try:
            values = parse_dynamic_config(raw)
        except BrokerLBError as exc:
            logger.error("Ignoring the unreadable dynamic configuration: %s", exc)
            return
        usable = {k: v for k, v in values.items() if self._usable(k, v)}
        try:
            updated = self.base.with_overrides(usable, dynamic_only=True, strict=True)
        except InvalidConfigError as exc:
            logger.error("Ignoring the dynamic configuration %s: %s", usable, exc)
            return
        changed = self.conf.adopt_dynamic_values(updated)
        self.applied = usable
        if changed:
            logger.info(
                "Dynamic configuration applied: %s",
                ", ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(changed.items())),
            )
            for listener in list(self._listeners):
                try:
                    listener(changed)
                except Exception:
                    logger.exception("Dynamic configuration listener failed")

    def _usable(self, key: str, value: str) -> bool:
        config_key = REGISTRY.keys.get(key)
        if config_key is None or not config_key.dynamic:
            logger.warning("Dynamic configuration: %s is not a dynamic key of this broker; ignored", key)
            return False
        try:
            config_key.read(value)
        except InvalidConfigError as exc:
            logger.warning("Dynamic configuration: %s=%r ignored (%s)", key, value, exc.why)
            return False
        return True


#: dynamic keys naming a strategy, and its kind in the strategy registry
_STRATEGY_KEYS = {"loadBalancerLoadSheddingStrategy": StrategyKind.SHEDDING}


def _check_strategy(key: str, value: str) -> None:
    """A strategy named at run time must exist: at start-up Pulsar falls back to its default for an
    unknown class (so does brokerlb), but a running cluster would silently switch strategy."""
    kind = _STRATEGY_KEYS.get(key)
    if kind is None:
        return
    try:
        resolve(kind, value)
    except UnknownStrategyError as exc:
        raise InvalidConfigError(key, value, str(exc)) from None


def _dynamic_key(key: str) -> None:
    config_key = REGISTRY.keys.get(key)
    if config_key is None or not config_key.dynamic:
        raise PreconditionFailedError(f"Cannot update non-dynamic configuration {key}")
