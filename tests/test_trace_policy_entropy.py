"""scripts/trace_policy_entropy.py: a benchmark agent's policy entropy and returns, rollout by rollout."""

from __future__ import annotations

import json
import math

import pytest
from conftest import load_script as load


def test_sb3_ppo_starts_near_uniform_and_each_rollout_is_a_row(tmp_path, capsys):
    path = tmp_path / "trace.json"
    assert load("trace_policy_entropy").main(["--task", "cartpole", "--method", "ppo", "--quick", "--quiet",
                                              "--json", str(path)]) == 0  # fmt: skip
    result = json.loads(path.read_text())
    rows = result["rows"]
    assert result["max_entropy"] == pytest.approx(math.log(2))
    assert [r["timesteps"] for r in rows] == [2048, 4096]  # SB3's 2048-step rollouts, 3,000 steps asked
    # SB3 initializes the action layer at a small gain: the first rollout's policy is close to uniform.
    assert abs(rows[0]["entropy"] - math.log(2)) < 0.01
    assert all(0.0 < r["entropy"] <= math.log(2) + 1e-6 for r in rows)
    assert all(r["ent_coef"] == 0.0 and r["episodes"] > 0 for r in rows)  # SB3 PPO's default bonus
    assert sum(r["episodes"] for r in rows) >= 4096 // 500  # every episode ends by CartPole's 500-step limit
    out = capsys.readouterr().out
    assert "a uniform policy's is 0.6931" in out and "greedy: CVaR_0.2" in out


def test_the_usage_line_records_the_bonus_its_update_takes():
    result = load("trace_policy_entropy").trace("cartpole", "og-cvar", 0, 3_000, 5, quiet=True)
    rows = result["rows"]
    # 32 episodes per rollout on long episodes, halved for a budget this small (arguments.budget_n_episodes)
    assert len(rows) >= 3 and all(r["episodes"] == 16 for r in rows)
    # CartPole's 500-step limit makes its episodes long: the constant 0.01 (no rollout ties at the best yet).
    assert all(r["ent_coef"] == pytest.approx(0.01) for r in rows)
    greedy_cvar, greedy_mean = result["greedy"]
    assert greedy_cvar <= greedy_mean


def test_a_task_with_continuous_actions_is_refused_by_name():
    with pytest.raises(SystemExit):  # argparse: nav is not among the choices
        load("trace_policy_entropy").main(["--task", "nav", "--quick", "--quiet"])
    with pytest.raises(ValueError, match="--task nav: the trace needs Discrete actions"):
        load("trace_policy_entropy").trace("nav", "og-cvar", 0, 100, 1, quiet=True)
