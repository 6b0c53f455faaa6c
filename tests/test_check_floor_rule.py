"""scripts/check_floor_rule.py: counting the rollouts that untie_tail's floor rule changes."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import load_script as load

from ordergrad_rl.agents.common import episodic
from ordergrad_rl.agents.common.risk_schedules import TIE_AT_MINIMUM
from ordergrad_rl.core import Objective


def test_counted_sees_a_change_only_where_terminated_ties_sit_at_the_floor():
    script = load("check_floor_rule")
    stats = {"rollouts": 0, "rollouts_at_floor": 0, "rollouts_changed": 0}
    target = Objective.parse("cvar0.2", 16)
    binary = np.concatenate([np.zeros(48), np.ones(16)])  # FrozenLake's failures and successes, all terminated
    terminated = np.zeros(64, bool)
    original = episodic.untie_case
    with script.counted(stats):
        assert episodic.untie_case(target, None, binary, terminated, True, True) == TIE_AT_MINIMUM
        assert episodic.untie_case(target, None, binary, terminated, True, False) is None  # not the floor
        assert episodic.untie_case(target, None, binary, ~terminated, True, True) == TIE_AT_MINIMUM  # time-outs
    assert episodic.untie_case is original
    # Only the first changes: the time-outs are untied with or without the rule.
    assert stats == {"rollouts": 3, "rollouts_at_floor": 2, "rollouts_changed": 1}


def test_quick_run_counts_its_rollouts(tmp_path, one_torch_thread):
    path = tmp_path / "floor.json"
    (run,) = load("check_floor_rule").main(["--task", "bandit", "--quick", "--json", str(path)])
    assert json.loads(path.read_text()) == {"runs": [json.loads(json.dumps(run))]}
    # 2,000 one-step episodes, 32 per rollout at this budget (the first at the floor: nothing seen before it); the
    # bandit's worse arms lie below its safe arm's ties, so nothing changes.
    assert run["rollouts"] == 63 and 1 <= run["rollouts_at_floor"] < 63 and run["rollouts_changed"] == 0
    assert episodic.untie_case.__module__ == "ordergrad_rl.agents.common.risk_schedules"


@pytest.mark.parametrize(
    ("argv", "option"),
    [(["--json", "."], "--json"), (["--timesteps", "0"], "--timesteps"), (["--seeds", "-1"], "--seeds")],
)
def test_bad_arguments_are_refused_before_training(argv, option, monkeypatch, capsys):
    script = load("check_floor_rule")

    def no_training(*args, **kwargs):
        raise AssertionError("trained despite a bad argument")

    monkeypatch.setattr(script.bench, "run_one", no_training)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--task", "bandit", *argv])
    assert exit_info.value.code == 2
    assert option in capsys.readouterr().err


def test_timesteps_given_is_the_budget_trained(monkeypatch):
    script = load("check_floor_rule")
    budgets = []

    def check(task, method, seed, timesteps, episodes):
        budgets.append(timesteps)
        return {"rollouts": 0, "rollouts_at_floor": 0, "rollouts_changed": 0}

    monkeypatch.setattr(script, "check", check)
    script.main(["--task", "bandit", "--timesteps", "64"])
    script.main(["--task", "bandit"])
    assert budgets == [64, script.bench.TASKS["bandit"].timesteps]
