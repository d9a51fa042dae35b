"""The library of named scenarios shipped with brokerlb (``brokerlb/sim/scenarios/*.yaml``).

Each file is a scenario (see :mod:`brokerlb.sim.loader`); its file name is its name.
``brokerlb simulate --list`` prints them; ``brokerlb simulate NAME`` runs one.

>>> "ten-busy-one-idle" in [s.name for s in list_scenarios()]
True
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from brokerlb.errors import InvalidScenarioError
from brokerlb.sim.loader import load_scenario
from brokerlb.sim.spec import Scenario

__all__ = ["SCENARIO_DIR", "ScenarioInfo", "list_scenarios", "find_scenario", "resolve_scenario"]

#: where the named scenarios live
SCENARIO_DIR = Path(__file__).with_name("scenarios")


@dataclass(frozen=True, slots=True)
class ScenarioInfo:
    name: str
    description: str
    path: Path
    duration: float
    brokers: int
    bundles: int


def list_scenarios() -> list[ScenarioInfo]:
    """Every named scenario, sorted by name."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        s = load_scenario(path)
        out.append(
            ScenarioInfo(
                path.stem,
                s.description,
                path,
                s.duration,
                len(s.brokers),
                sum(ns.bundles for ns in s.namespaces),
            )
        )
    return out


def find_scenario(name: str) -> Path | None:
    """The file of the named scenario, or ``None``."""
    path = SCENARIO_DIR / f"{name}.yaml"
    return path if path.is_file() else None


def resolve_scenario(name_or_path: str | os.PathLike[str] | Scenario) -> Scenario:
    """A scenario from a file path, a library name, or a :class:`Scenario` (returned as is)."""
    if isinstance(name_or_path, Scenario):
        return name_or_path
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml", ".json") or path.exists():
        return load_scenario(path)
    found = find_scenario(str(name_or_path))
    if found is None:
        known = ", ".join(p.stem for p in sorted(SCENARIO_DIR.glob("*.yaml")))
        raise InvalidScenarioError(
            f"no scenario file or library scenario named {str(name_or_path)!r}; library: {known}"
        )
    return load_scenario(found)
