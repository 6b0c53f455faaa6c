"""The issue-13 measurement scripts: scripts/recurrent_vs_mlp.py and scripts/lava_diagnosis.py."""

import json

import numpy as np
import pytest
from conftest import load_script as load


def test_recurrent_vs_mlp_quick(tmp_path, capsys):
    path = tmp_path / "rvm.json"
    assert load("recurrent_vs_mlp").main(["--quick", "--quiet", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "recurrent - MLP (paired)" in out and "ratio" in out
    per_seed = json.loads(path.read_text())["per_seed"]
    for agent in ("mlp", "recurrent"):
        assert len(per_seed[agent]["profitable"]) == 2
        assert per_seed[agent]["cvar_log_wealth"][0] <= np.log1p(per_seed[agent]["mean_return"][0]) + 1e-9


def test_batch_tail_classifies_by_return_and_length():
    script = load("lava_diagnosis")
    # goal in 4 (6), lava in 2 (-17), timeout (-30), goal in 29 (-19), lava in 20 (-35): the lowest ceil(0.2 * 5) = 1.
    returns, lengths = np.array([6.0, -17.0, -30.0, -19.0, -35.0]), np.array([4.0, 2.0, 30.0, 29.0, 20.0])
    assert script.batch_tail(returns, lengths)["tail_lava"] == 1.0
    tail = script.batch_tail(np.concatenate([returns] * 2), np.concatenate([lengths] * 2))  # lowest 2: -35, -35
    assert tail["tail_lava"] == 1.0 and tail["tail_mean_length"] == 20.0
    returns[4] = -40.0  # now the timeout (-30) and the late goal (-19) are above it, the lava in 25 below
    lengths[4] = 25.0
    ten = script.batch_tail(np.r_[returns, [-30.0] * 5], np.r_[lengths, [30.0] * 5])  # lowest 2 of 10
    assert ten == pytest.approx({"tail_goal": 0.0, "tail_lava": 0.5, "tail_timeout": 0.5, "tail_mean_length": 27.5})


def test_lava_diagnosis_quick(tmp_path, capsys):
    path = tmp_path / "lava.json"
    argv = ["--quick", "--quiet", "--seeds", "1", "--settings", "base", "ent0.01", "--json", str(path)]
    assert load("lava_diagnosis").main(argv) == 0
    runs = json.loads(path.read_text())["runs"]
    assert [(r["setting"], r["method"]) for r in runs] == [
        ("base", "gcvar"),
        ("base", "ordergrad_cvar"),
        ("ent0.01", "gcvar"),
        ("ent0.01", "ordergrad_cvar"),
    ]
    for run in runs:
        for entry in run["trace"]:
            assert entry["goal"] + entry["lava"] + entry["timeout"] == pytest.approx(1.0)
            assert entry["tail_goal"] + entry["tail_lava"] + entry["tail_timeout"] == pytest.approx(1.0)
        assert run["trace"][0]["start_entropy"] == pytest.approx(np.log(4), abs=1e-3)  # the zero-initialized policy
    out = capsys.readouterr().out
    assert "P(timeout)" in out and "up (safe path)" in out
    # The table and the figure again from the JSON, without training.
    figure = tmp_path / "lava.png"
    assert load("lava_diagnosis").main(["--from-json", str(path), "--figure", str(figure)]) == 0
    assert out.split("total time")[0] == capsys.readouterr().out.split("total time")[0]
    assert figure.stat().st_size > 0


def test_first_move_rows_rank_the_safe_move_last_under_cvar():
    """The measured mechanism: at the uniform policy, CVaR_0.2 prefers diving into the lava to the safe first move."""
    rows = {row[0]: float(row[-1]) for row in load("lava_diagnosis").first_move_rows()}
    assert rows["down"] > rows["right (shortcut)"] > rows["up (safe path)"]


def test_recurrent_vs_mlp_intervals_of_probabilities_stay_in_their_range():
    script = load("recurrent_vs_mlp")
    per_seed = {agent: {key: [0.0, 0.0] for key, _, _ in script.ROWS} for agent in script.AGENTS}
    per_seed["mlp"]["profitable"] = [0.4, 1.0]  # mean 70%: its t-interval of two seeds reaches far past 100%
    per_seed["recurrent"]["profitable"] = [0.0, 1.0]
    row = next(line for line in script.format_table(per_seed).splitlines() if "profitable" in line)
    assert [cell.strip() for cell in row.strip("|").split("|")][1:] == [
        "70.0% [0.0%, 100.0%]",
        "50.0% [0.0%, 100.0%]",
        "-20.0% [-100.0%, 100.0%]",
    ]
    assert script.t_interval(np.array([1.0, 3.0]))[1] < 0  # unbounded metrics keep the t-interval
