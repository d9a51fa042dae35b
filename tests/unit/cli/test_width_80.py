"""Help and tables at 80 columns: nothing wider than the terminal, no name broken across lines.

Rich's help panels gave option texts a column of twenty characters or less at 80 columns, and the
simulator's comparison broke strategy names ("ThresholdS" / "hedder") and metric names over lines.
"""

from __future__ import annotations

from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from brokerlb.cli.main import build_app
from tests.sim.conftest import small_scenario


def _commands(command: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    found = [path]
    for name, sub in getattr(command, "commands", {}).items():  # a group (typer's own click)
        found += _commands(sub, (*path, name))
    return found


def test_every_help_page_fits_80_columns() -> None:
    app = build_app()
    paths = _commands(typer.main.get_command(app))
    assert len(paths) > 100
    runner = CliRunner()
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "80"}, terminal_width=80)
        assert result.exit_code == 0, (path, result.output)
        too_wide = [line for line in result.output.splitlines() if len(line) > 80]
        assert too_wide == [], (path, too_wide)
        assert "╭" not in result.output  # plain help, wrapped to the width (no rich panels)
        assert "Options:" in result.output or "Commands:" in result.output


def test_a_wide_comparison_fits_80_columns_with_every_name_whole(tmp_path) -> None:
    import yaml

    from brokerlb.sim import scenario_to_dict

    path = tmp_path / "small.yaml"
    path.write_text(yaml.safe_dump(scenario_to_dict(small_scenario(minutes=3))))
    strategies = ["ThresholdShedder", "UniformLoadShedder", "AvgShedder", "TransferShedder", "brokerlb"]
    result = CliRunner().invoke(
        build_app(),
        ["simulate", str(path), "--compare", ",".join(strategies)],
        env={"COLUMNS": "80"},
        terminal_width=80,
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= 80, result.output
    for name in strategies:
        assert any(name in line for line in lines), (name, result.output)
    assert any("distance from lower bound (mean)" in line for line in lines)


@pytest.fixture(autouse=True)
def _wide_enough_for_nothing_else(monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
