"""scripts/redraw_spread.py: a seed's redraw across CPU arithmetic paths next to the seed-to-seed spread."""

import math

import pytest
from conftest import load_script as load


def test_spread_row_by_hand():
    row = load("redraw_spread").spread_row([0.0, 2.0, 4.0], [1.0, 1.0, 7.0])
    # before: mean 2, sd 2; today: mean 3, sd sqrt(12); per-seed differences 1, -1, 3: sd 2.
    assert row["seeds"] == 3
    assert row["sd_before"] == pytest.approx(2.0)
    assert row["sd_today"] == pytest.approx(math.sqrt(12.0))
    assert row["sd_redraw"] == pytest.approx(2.0)
    assert row["mean_move"] == pytest.approx(1.0)
    expected = math.sqrt(4.0 / 3 + 12.0 / 3)
    assert row["expected_sd_of_move"] == pytest.approx(expected)
    assert row["move_in_sd"] == pytest.approx(1.0 / expected)


def test_spread_row_of_constant_cells_is_zero():
    row = load("redraw_spread").spread_row([500.0] * 4, [500.0] * 4)
    assert row["sd_redraw"] == 0.0 and row["move_in_sd"] == 0.0


def test_spread_row_of_independent_and_unmoved_runs():
    script = load("redraw_spread")
    before = [1.0, 2.0, 3.0, 4.0]
    assert script.spread_row(before, before)["correlation"] == pytest.approx(1.0)
    assert script.spread_row(before, [2.0, 1.0, 1.0, 2.0])["correlation"] == pytest.approx(0.0)


def test_stored_runs_give_a_row_per_task_budget_method_and_mode(capsys):
    load("redraw_spread").main([])
    lines = capsys.readouterr().out.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    rows = [dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True)) for line in lines[2:]]
    cells = {(row["task"], row["budget"], row["method"], row["mode"]) for row in rows}
    # The Gymnasium cells redrawn for both methods at 100k steps, greedy and sampled, ten seeds each.
    for task in ("cartpole", "acrobot", "lunarlander"):
        for method in ("og-cvar", "ppo"):
            assert {(task, "100000", method, mode) for mode in ("greedy", "stochastic")} <= cells
    assert all(row["seeds"] == "10" for row in rows if row["budget"] == "100000")
    assert all(int(row["seeds"]) >= 2 for row in rows)
    assert len(rows) == len(cells)


def test_unknown_methods_are_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("redraw_spread").main(["--methods", "og-cvar", "foo"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--methods" in err and "foo" in err and "og-cvar" in err.split("choose from")[1]
