"""'The same balance for fewer bytes': what a run had moved when it was as near the lower bound as
another run ended (brokerlb.sim.reach), the balancer-only moved throughput it reads, and the
summary table's rows built on it."""

import math

import numpy as np
import pytest

from brokerlb.sim import compare, run_scenario
from brokerlb.sim.metrics import FORCED_CAUSES
from brokerlb.sim.reach import moved_to_reach
from brokerlb.sim.report import summary_table
from tests.sim.conftest import small_scenario


def series(distance, moved):
    return {"distance": np.asarray(distance, dtype=float), "balancer_moved_throughput": np.asarray(moved)}


def test_counts_the_moves_up_to_the_cycle_from_which_the_target_holds():
    s = series([0.30, 0.10, 0.02, 0.20, 0.03, 0.02], [0.0, 5.0, 3.0, 0.0, 4.0, 1.0])
    # first below at cycle 2, above again at 3 (a restart), held from 4: that cycle's moves count
    assert moved_to_reach(s, 0.05) == 12.0
    assert moved_to_reach(s, 0.25) == 5.0  # only 0.30 at the start is above: held from cycle 1
    assert moved_to_reach(s, 0.35) == 0.0  # held from the first cycle: nothing had to move
    assert moved_to_reach(s, 0.02) == 13.0  # 0.03 at 4 is above; exactly at the target counts


def test_never_when_the_run_ends_above_the_target():
    s = series([0.3, 0.01, 0.2], [0.0, 9.0, 0.0])
    assert moved_to_reach(s, 0.05) is None
    assert moved_to_reach(s, math.nan) is None
    assert moved_to_reach(series([], []), 0.1) is None


def test_cycles_without_live_brokers_do_not_count_as_above():
    s = series([0.3, math.nan, 0.01], [1.0, 0.0, 2.0])
    assert moved_to_reach(s, 0.05) == 3.0


def test_balancer_moved_throughput_leaves_out_forced_moves():
    scenario = small_scenario([{"at": "3m", "type": "fail_broker", "broker": "b2"}], minutes=10)
    result = run_scenario(scenario, "ThresholdShedder")
    forced = [m for m in result.moves if m["cause"] in FORCED_CAUSES]
    chosen = [m for m in result.moves if m["cause"] not in FORCED_CAUSES]
    assert forced, "the failure forced moves"
    s = result.series
    assert s["balancer_moved_throughput"].sum() == pytest.approx(sum(m["throughput"] for m in chosen))
    assert (s["moved_throughput"] - s["balancer_moved_throughput"]).sum() == pytest.approx(
        sum(m["throughput"] for m in forced)
    )
    assert result.summary["balancer_moved_throughput"] == pytest.approx(s["balancer_moved_throughput"].sum())


def test_summary_table_rows_against_the_others_and_threshold_shedder():
    scenario = small_scenario(
        [{"at": "2m", "type": "add_broker", "broker": {"name": "b5", "cores": 4}}], minutes=12
    )
    labels = ["brokerlb", "ThresholdShedder", "UniformLoadShedder"]
    results = compare(scenario, labels)
    rows = {row.key: values for row, values, _ in summary_table(results)}
    ends = [r.summary["distance_final"] for r in results]
    threshold = results[1]
    for i, r in enumerate(results):
        best_other = min(e for j, e in enumerate(ends) if j != i)
        want = moved_to_reach(r.series, best_other)
        assert rows["moved_to_best_end"][i] == ("never" if want is None else rows_format(want))
        at_threshold = moved_to_reach(r.series, threshold.summary["distance_final"])
        assert rows["moved_to_threshold_end"][i] == (
            "never" if at_threshold is None else rows_format(at_threshold)
        )
    # ThresholdShedder reaches its own end distance, with at most what it moved in all
    own = moved_to_reach(threshold.series, threshold.summary["distance_final"])
    assert own is not None and own <= threshold.summary["balancer_moved_throughput"] + 1e-6
    # without ThresholdShedder among the runs that row is left out; one run has no "others"
    rows_without = {row.key for row, _, _ in summary_table([results[0], results[2]])}
    assert "moved_to_threshold_end" not in rows_without and "moved_to_best_end" in rows_without
    assert {"moved_to_threshold_end", "moved_to_best_end"}.isdisjoint(
        row.key for row, _, _ in summary_table(results[:1])
    )


def rows_format(value):
    from brokerlb.sim.report.table import _bytes

    return _bytes(value)
