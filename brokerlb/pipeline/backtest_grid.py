"""Backtest grids: which configurations a backtest runs, checked before any Spark work.

A grid is a set of axes, each a key with a list of values; every combination is one
configuration (axes in the order given, the last one varying fastest). Keys are what
``brokerlb simulate --set`` takes -- broker.conf keys (Pulsar names), ``seed``, ``duration``,
``tick``, ``timing.*``, ``resources.*`` -- and ``loadBalancerLoadSheddingStrategy`` (alias
``strategy``), whose values are the simulator's strategy labels ``SHEDDER[+PLACEMENT]``
(``ThresholdShedder``, ``AvgShedder``, ``TransferShedder``, Pulsar class names too). A grid
file (YAML or JSON)::

    scenario: cluster.yaml        # optional: brokers, duration, timing (default: from the history)
    base:                         # optional: applied to every configuration
      loadBalancerSheddingIntervalMinutes: 1
    grid:
      loadBalancerLoadSheddingStrategy: [ThresholdShedder, AvgShedder]
      loadBalancerBrokerOverloadedThresholdPercentage: [75, 85]
      loadBalancerSheddingGracePeriodMinutes: [10, 30]

gives 2 x 2 x 2 = 8 configurations, ``c01`` .. ``c08``. On the command line,
``--set KEY=V1,V2`` adds an axis (or replaces the file's axis of that key).

>>> grid = BacktestGrid({"strategy": ["ThresholdShedder", "AvgShedder"], "seed": [1, 2]})
>>> [c.label for c in grid.configurations()]
['ThresholdShedder seed=1', 'ThresholdShedder seed=2', 'AvgShedder seed=1', 'AvgShedder seed=2']

:func:`check_configurations` runs the simulator's own set-up of every configuration (scenario
settings, broker.conf validation, strategy registry), so an unknown key or strategy fails
with a :class:`~brokerlb.errors.InvalidInputError` naming the configuration and the key.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brokerlb.errors import BrokerLBError, InvalidInputError

__all__ = [
    "STRATEGY_KEY",
    "BacktestConfig",
    "BacktestGrid",
    "check_configurations",
    "parse_axis",
    "short_key",
]

#: The grid key whose values are strategy labels (``strategy`` is accepted as an alias).
STRATEGY_KEY = "loadBalancerLoadSheddingStrategy"
_STRATEGY_ALIASES = (STRATEGY_KEY, "strategy")
#: Grid-file keys.
_FILE_KEYS = ("scenario", "base", "grid")
#: A grid this large is almost certainly a mistake (each configuration is a full simulation).
MAX_CONFIGURATIONS = 10_000


@dataclass(frozen=True)
class BacktestConfig:
    """One configuration of a grid: a strategy label (or ``None``: the scenario's) and settings."""

    name: str
    strategy: str | None
    settings: Mapping[str, Any] = field(default_factory=dict)
    #: the values of the grid's axes only (what distinguishes it from its siblings)
    axes: Mapping[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        parts = [] if self.strategy is None else [self.strategy]
        parts += [f"{short_key(k)}={_text(v)}" for k, v in self.axes.items() if k not in _STRATEGY_ALIASES]
        return " ".join(parts) or self.name

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "strategy": self.strategy,
            "settings": dict(self.settings),
            "axes": dict(self.axes),
        }


@dataclass(frozen=True)
class BacktestGrid:
    """Axes (key -> values) and ``base`` settings shared by every configuration."""

    axes: Mapping[str, Sequence[Any]]
    base: Mapping[str, Any] = field(default_factory=dict)
    #: the grid file's ``scenario`` (a path relative to the file is resolved), if any
    scenario: str | None = None
    source: str | None = None

    @classmethod
    def from_data(cls, data: Any, *, source: str | None = None, base_dir: str | None = None) -> BacktestGrid:
        """A grid from parsed YAML/JSON (the module docstring's format)."""
        where = f"backtest grid {source}" if source else "backtest grid"
        if not isinstance(data, Mapping):
            raise InvalidInputError(f"{where}: expected a mapping with {', '.join(_FILE_KEYS)}, got {data!r}")
        unknown = sorted(set(data) - set(_FILE_KEYS))
        if unknown:
            raise InvalidInputError(
                f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; known: {', '.join(_FILE_KEYS)}"
            )
        axes = data.get("grid") or {}
        base = data.get("base") or {}
        for name, value in (("grid", axes), ("base", base)):
            if not isinstance(value, Mapping):
                raise InvalidInputError(
                    f"{where}: {name}: expected a mapping of key -> values, got {value!r}"
                )
        scenario = data.get("scenario")
        if scenario is not None:
            if not isinstance(scenario, str) or not scenario.strip():
                raise InvalidInputError(
                    f"{where}: scenario: expected a file path or library name, got {scenario!r}"
                )
            candidate = (
                os.path.join(base_dir, scenario) if base_dir and not os.path.isabs(scenario) else scenario
            )
            scenario = candidate if os.path.exists(candidate) else scenario
        out_axes: dict[str, list[Any]] = {}
        for key, values in axes.items():
            if isinstance(values, str) or not isinstance(values, Sequence):
                values = [values]
            out_axes[str(key)] = list(values)
        return cls(out_axes, {str(k): v for k, v in base.items()}, scenario, source)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> BacktestGrid:
        """Read a grid file (``.json`` as JSON, anything else as YAML)."""
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise InvalidInputError(
                f"backtest grid {p}: cannot read the file: {exc.strerror or exc}"
            ) from exc
        try:
            if p.suffix == ".json":
                data = json.loads(text)
            else:
                import yaml

                data = yaml.safe_load(text)
        except (ValueError, ImportError) as exc:  # JSONDecodeError is a ValueError
            raise InvalidInputError(
                f"backtest grid {p}: not valid {p.suffix.lstrip('.') or 'YAML'}: {exc}"
            ) from exc
        except Exception as exc:  # yaml.YAMLError (yaml is imported lazily)
            raise InvalidInputError(f"backtest grid {p}: not valid YAML: {exc}") from exc
        return cls.from_data(data, source=str(p), base_dir=str(p.parent))

    def with_axes(self, pairs: Iterable[str]) -> BacktestGrid:
        """This grid with ``--set KEY=V1,V2`` axes added (an axis of the same key is replaced)."""
        axes = {k: list(v) for k, v in self.axes.items()}
        for pair in pairs:
            key, values = parse_axis(pair)
            for alias in _STRATEGY_ALIASES if key in _STRATEGY_ALIASES else (key,):
                axes.pop(alias, None)
            axes[key] = values
        return BacktestGrid(axes, self.base, self.scenario, self.source)

    def configurations(self) -> list[BacktestConfig]:
        """Every combination of the axes (module docstring); an empty grid is an error."""
        where = f"backtest grid {self.source}" if self.source else "backtest grid"
        if not self.axes:
            raise InvalidInputError(
                f"{where}: empty: give at least one axis (grid: {{KEY: [values]}} or --set KEY=V1,V2)"
            )
        strategy_keys = [k for k in self.axes if k in _STRATEGY_ALIASES]
        if len(strategy_keys) > 1:
            raise InvalidInputError(f"{where}: both {' and '.join(strategy_keys)} are given; use one")
        if any(k in _STRATEGY_ALIASES for k in self.base):
            raise InvalidInputError(f"{where}: base: the strategy is an axis of the grid, not a base setting")
        for key, values in self.axes.items():
            if not values:
                raise InvalidInputError(f"{where}: grid.{key}: no values")
            if len({_text(v) for v in values}) != len(values):
                raise InvalidInputError(f"{where}: grid.{key}: repeated value in {list(values)!r}")
        total = 1
        for values in self.axes.values():
            total *= len(values)
        if total > MAX_CONFIGURATIONS:
            raise InvalidInputError(f"{where}: {total:,} configurations (at most {MAX_CONFIGURATIONS:,})")
        keys = list(self.axes)
        width = len(str(total))
        out = []
        for i, combo in enumerate(itertools.product(*(self.axes[k] for k in keys)), start=1):
            chosen = dict(zip(keys, combo, strict=True))
            strategy = next((str(chosen[k]) for k in keys if k in _STRATEGY_ALIASES), None)
            settings = {**self.base, **{k: v for k, v in chosen.items() if k not in _STRATEGY_ALIASES}}
            out.append(BacktestConfig(f"c{i:0{max(2, width)}d}", strategy, settings, chosen))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario,
            "base": dict(self.base),
            "grid": {k: list(v) for k, v in self.axes.items()},
        }


def parse_axis(pair: str) -> tuple[str, list[Any]]:
    """``"KEY=V1,V2"`` -> ``("KEY", ["V1", "V2"])`` (values stay text; the simulator parses them)."""
    key, sep, text = pair.partition("=")
    key = key.strip()
    values = [v.strip() for v in text.split(",")]
    if not sep or not key or not any(values):
        raise InvalidInputError(f"Invalid --set {pair!r}: expected KEY=VALUE[,VALUE...]")
    if any(not v for v in values):
        raise InvalidInputError(f"Invalid --set {pair!r}: an empty value between commas")
    return key, values


def check_configurations(scenario: Any, configs: Sequence[BacktestConfig]) -> list[BacktestConfig]:
    """Set every configuration up as the simulator will (no simulation runs); returns them
    with canonical strategy labels. A bad key, value or strategy raises
    :class:`~brokerlb.errors.InvalidInputError` naming the configuration."""
    from brokerlb.sim.runner import prepare
    from brokerlb.sim.strategies import strategy_label

    checked = []
    for config in configs:
        try:
            prepare(scenario, config.strategy, config.settings)
            strategy = None if config.strategy is None else strategy_label(config.strategy)
        except BrokerLBError as exc:
            raise InvalidInputError(f"backtest configuration {config.name} ({config.label}): {exc}") from exc
        checked.append(BacktestConfig(config.name, strategy, config.settings, config.axes))
    return checked


def short_key(key: str) -> str:
    """``loadBalancerBrokerOverloadedThresholdPercentage`` -> ``BrokerOverloadedThresholdPercentage``."""
    for prefix in ("loadBalancer", "loadManager"):
        if key.startswith(prefix) and len(key) > len(prefix):
            return key[len(prefix) :]
    return key


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
