"""scripts/outside_probe.py: the usage line on tasks outside the suite (slippery CliffWalking-v1, Pendulum-v1,
MountainCar-v0)."""

import json

import numpy as np
import pytest
import torch as th
from conftest import load_script as load

from ordergrad_rl.envs.tabular import mean_optimum, return_distribution


def test_exact_values_match_an_independent_dp():
    # Computed by a separate vectorized backward DP (mean: over (s, t); CVaR: Bauerle-Ott over (s, t, accumulated
    # return) for every integer threshold b in [-250, -20]), not by ordergrad_rl.envs.tabular. At a 30-step limit the
    # CVaR_0.2 optimum is to stay clear of the cliff and time out; the mean optimum risks the walk to the goal.
    values = load("outside_probe").exact(30)
    assert values["mean_optimum"] == pytest.approx(-29.930922934602968, abs=1e-9)
    assert values["cvar_optimum"] == pytest.approx(-30.0, abs=1e-9)


def test_tail_is_the_mean_of_the_worst_fifth():
    script = load("outside_probe")
    assert script.tail([-100.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -300.0]) == {
        "cvar": -200.0,
        "mean": -43.6,
        "min": -300.0,
    }


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")  # 1,000 steps: a few updates
def test_quick(tmp_path, capsys):
    path = tmp_path / "cliff.json"
    out = load("outside_probe").main(["--quick", "--methods", "ppo", "og-cvar", "--json", str(path)])
    assert json.loads(path.read_text()) == json.loads(json.dumps(out))
    assert [(r["method"], r["seed"]) for r in out["runs"]] == [("ppo", 0), ("og-cvar", 0)]
    for run in out["runs"]:
        assert run["steps"] == 1_000 and run["timesteps"] >= 1_000
        for score in (run["greedy"], run["sampled"]):
            # 20 episodes of at most 30 steps, each at least -1 per step; a cliff step costs 100 more.
            assert -30 - 100 * 30 <= score["min"] <= score["cvar"] <= score["mean"] <= -1
        assert run["provenance"]["PyTorch"] == th.__version__  # where it ran
    assert "og-cvar" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")
def test_quick_pendulum_scores_continuous_actions(tmp_path):
    out = load("outside_probe").main(["--task", "pendulum", "--quick", "--methods", "og-cvar", "og-cvar-state"])
    assert (out["env"], out["limit"]) == ("Pendulum-v1", 30)
    assert [r["method"] for r in out["runs"]] == ["og-cvar", "og-cvar-state"]
    for run in out["runs"]:
        for score in (run["greedy"], run["sampled"]):
            # 30 steps, each paying between -16.3 (upside down, fastest, full torque) and 0.
            assert -16.3 * 30 <= score["min"] <= score["cvar"] <= score["mean"] <= 0.0


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")
def test_quick_mountaincar_is_blind_at_first():
    out = load("outside_probe").main(["--task", "mountaincar", "--quick", "--methods", "og-cvar", "og-cvar-nonovelty"])
    assert (out["env"], out["limit"]) == ("MountainCar-v0", 30)
    assert [r["method"] for r in out["runs"]] == ["og-cvar", "og-cvar-nonovelty"]
    for run in out["runs"]:  # 30 steps cannot reach the flag: every episode times out at -30
        assert run["greedy"] == run["sampled"] == {"cvar": -30.0, "mean": -30.0, "min": -30.0}


def test_exact_is_for_tabular_tasks_only():
    with pytest.raises(SystemExit):
        load("outside_probe").main(["--task", "pendulum", "--exact", "--quick"])


def test_frozenlake_table_matches_monte_carlo():
    """The table the exact scores propagate on (start, holes, slips, the 200-step limit) against Monte Carlo on the
    env itself: the mean-optimal first step of every state, held as a stationary policy, 4,000 episodes."""
    script = load("outside_probe")
    mdp = script.tabular_mdp(200, "frozenlake8x8")
    actions = mean_optimum(mdp)[1][0]  # [S]: the mean-optimal action of each state at time 0
    law = return_distribution(mdp, actions)
    env = script.make_env(200, "frozenlake8x8")
    successes = []
    for episode in range(4000):
        state, _ = env.reset(seed=episode)
        done, total = False, 0.0
        while not done:
            state, reward, terminated, truncated, _ = env.step(int(actions[state]))
            total, done = total + reward, terminated or truncated
        successes.append(total)
    p, se = np.mean(successes), np.std(successes) / np.sqrt(4000)
    assert abs(law.mean() - p) < 4 * se
    assert law.cvar(0.2) == pytest.approx(max(0.0, (law.mean() - 0.8) / 0.2))
    assert law.mean() > 0.85


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")
def test_quick_frozenlake_runs_are_scored_exactly():
    out = load("outside_probe").main(["--task", "frozenlake8x8", "--quick", "--methods", "ppo", "--exact"])
    assert out["cvar_optimum"] == 0.0  # 30 steps: no policy succeeds 80% of the time
    (run,) = out["runs"]
    for key in ("greedy_exact", "sampled_exact", "greedy_exact_mean"):
        assert 0.0 <= run[key] <= 1.0


@pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took")
def test_a_scheduled_bonus_is_recorded_by_its_name(tmp_path):
    path = tmp_path / "cliff.json"
    load("outside_probe").main(["--quick", "--methods", "og-cvar-entlate", "--json", str(path)])
    (run,) = json.loads(path.read_text())["runs"]
    assert run["kwargs"] == {"objective": "cvar0.2", "ent_coef": "late_linear_ent_coef"}


def test_quick_refuses_the_sizes_it_sets():
    with pytest.raises(SystemExit):
        load("outside_probe").main(["--quick", "--episodes", "50"])


def test_rare_event_grid_table_by_hand():
    """A few entries of the probe's own gridworld, written out by hand from its description."""
    grid = load("outside_probe").RareEventGrid()

    def state(row, col):
        return row * 8 + col

    # From the start, right: on its way with 0.9, slipping up or down with 0.05 each; every step pays -0.5.
    assert sorted(grid.P[state(2, 0)][1]) == sorted(
        [(0.9, state(2, 1), -0.5, False), (0.05, state(1, 0), -0.5, False), (0.05, state(3, 0), -0.5, False)]
    )
    # Into the band (column 3): the event with probability 0.03 of each entry, -20 more and terminal.
    into_band = [o for o in grid.P[state(2, 2)][1] if o[1] == state(2, 3)]
    assert into_band == [(pytest.approx(0.9 * 0.03), state(2, 3), -20.5, True), (0.9 * 0.97, state(2, 3), -0.5, False)]
    # A move off the grid stays and draws no event; the goal pays 10 and ends the episode.
    assert (0.9, state(0, 0), -0.5, False) in grid.P[state(0, 0)][0]
    assert (0.9, state(2, 7), 9.5, True) in grid.P[state(2, 6)][1]
    for rows in grid.P.values():
        for outcomes in rows.values():
            assert sum(prob for prob, *_ in outcomes) == pytest.approx(1.0)


def test_rare_event_grid_straight_path_is_mean_optimal_and_risky():
    """The exact optima: the mean-optimal policy takes the band (a worse CVaR_0.2 than going round by row 0)."""
    script = load("outside_probe")
    mdp = script.tabular_mdp(50, "rareevent")
    value, policy = mean_optimum(mdp)
    straight = return_distribution(mdp, policy[0])
    assert straight.mean() == pytest.approx(value)
    assert straight.cvar(0.2) < 0 < script.exact(50, "rareevent")["cvar_optimum"]
