"""``brokerlb simulate`` shows a progress bar per strategy on a terminal, and nothing with ``--json``."""

from __future__ import annotations

import json

from brokerlb.testing.terminal import run_with_terminal_stderr

ARGS = ["-m", "brokerlb.cli.main", "simulate", "hot-topic", "--set", "duration=10m",
        "--compare", "ThresholdShedder,UniformLoadShedder"]  # fmt: skip


def test_a_terminal_sees_one_bar_per_strategy() -> None:
    code, out, terminal = run_with_terminal_stderr(ARGS)
    assert code == 0, terminal
    assert "ThresholdShedder" in terminal and "UniformLoadShedder" in terminal and "cycles" in terminal
    assert "━" in terminal  # rich's bar
    assert "ThresholdShedder" in out  # the summary table on stdout


def test_json_mode_stays_quiet_on_the_terminal() -> None:
    code, out, terminal = run_with_terminal_stderr([*ARGS, "--json"])
    assert code == 0, terminal
    assert terminal.strip() == ""
    assert set(json.loads(out)) == {"ThresholdShedder", "UniformLoadShedder"}
