"""scripts/nav_greedy_path.py: a benchmark agent's greedy path on the point navigation, step by step."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
from conftest import load_script as load

import ordergrad_rl  # noqa: F401  (registers the envs)


def test_a_saturated_diagonal_moves_a_step_over_root_two_per_axis_and_slides_along_the_edge():
    script = load("nav_greedy_path")
    rows = script.follow_greedy(lambda obs: np.array([-5.0, 5.0]), gym.make("RiskyShortcutNav-v2"))
    summary = script.path_summary(rows)
    assert summary["saturated_share"] == 1.0 and summary["steps"] == 50  # never reaches the goal: a time-out
    assert np.allclose(rows[0]["move"], [-(2**-0.5), 2**-0.5], atol=1e-3)  # up and left from (0.1, 0) ...
    assert [row["edge"] for row in rows[:2]] == [False, True]  # ... to the left edge on the second step ...
    assert np.allclose(rows[2]["move"], [0.0, 2**-0.5], atol=1e-3)  # ... then up along it, x held at 0 ...
    assert rows[-1]["position"] == [0.0, 1.0] and rows[-1]["move"] == [0.0, 0.0]  # ... into the corner
    assert summary["edge_steps"] == 49
    # A time-out returns -50 plus the potential where it ends: 10 * (1.7 - |(0, 1) - (1.8, 0)|).
    assert abs(summary["return"] - (-50 + 10 * (1.7 - np.hypot(1.8, 1.0)))) < 1e-2


def test_the_straight_shortcut_without_crashes_takes_sixteen_unsaturated_steps_and_returns_fourteen():
    script = load("nav_greedy_path")
    env = gym.make("RiskyShortcutNav-v2", crash_prob=0.0)
    summary = script.path_summary(script.follow_greedy(lambda obs: np.array([1.0, 0.0]), env))
    # The env's docstring: the shortcut takes 16 steps and scores 14 when it does not crash.
    assert summary == {"steps": 16, "return": 14.0, "saturated_share": 0.0, "edge_steps": 0}


def test_main_quick_prints_the_checkpoints_and_writes_the_paths(tmp_path, capsys):
    path = tmp_path / "paths.json"
    assert load("nav_greedy_path").main(["--quick", "--quiet", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "greedy CVaR_0.2" in out and "the greedy path at" in out
    checkpoints = json.loads(path.read_text())["checkpoints"]
    assert len(checkpoints) >= 2 and all(len(c["path"]) == c["steps"] for c in checkpoints)
    assert checkpoints[-1]["timesteps"] >= 3_000
