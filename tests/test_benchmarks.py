"""``reproduce benchmarks``: exact scoring against sampled episodes, the summaries, the grid and the command."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from conftest import load_script

from ordergrad_rl.agents.common.entropy_plateau import EntropyPlateau
from ordergrad_rl.agents.common.evaluation import policy_table
from ordergrad_rl.cli import main
from ordergrad_rl.envs.lava_grid import CVAR_POLICY, SHORTCUT_POLICY
from ordergrad_rl.experiments import benchmarks as bench
from ordergrad_rl.experiments import peers


class _TablePolicy:
    """A stand-in model acting from a state -> action table (what exact_score reads through predict)."""

    def __init__(self, table: np.ndarray, n_actions: int = 4) -> None:
        self.table = np.asarray(table)
        self.action_space = gym.spaces.Discrete(n_actions)
        self.policy = object()  # no get_distribution: deployed greedily

    def predict(self, observation, deterministic=True):
        return self.table[np.asarray(observation).reshape(-1)], None


@pytest.mark.parametrize(("policy", "cvar"), [(CVAR_POLICY, 1.124), (SHORTCUT_POLICY, -4.446)])
def test_exact_score_is_the_docstring_value_and_matches_sampled_episodes(policy, cvar):
    env = gym.make("RiskyLavaGrid-v0")
    mdp = env.unwrapped.tabular()
    exact_cvar, exact_mean = bench.exact_score(_TablePolicy(policy), env.unwrapped, mdp, deterministic=True)
    assert exact_cvar == pytest.approx(cvar, abs=5e-4)
    returns = []
    for episode in range(4000):
        obs, _ = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(policy[obs]))
            total, done = total + reward, terminated or truncated
        returns.append(total)
    returns = np.asarray(returns)
    assert abs(returns.mean() - exact_mean) < 4 * returns.std() / np.sqrt(returns.size)
    tail = np.sort(returns)[: int(0.2 * returns.size)].mean()
    assert tail == pytest.approx(exact_cvar, abs=0.6)


def test_stochastic_score_uses_the_policy_probabilities():
    from ordergrad_rl.agents import OrderGradPPO

    model = OrderGradPPO("MlpPolicy", "HeavyTailBandit-v0", objective="cvar0.2", n_episodes=8, seed=0)
    env = gym.make("HeavyTailBandit-v0").unwrapped
    probs = policy_table(model, np.zeros((1, 1), dtype=np.float32))
    assert probs.shape == (1, 3) and probs.sum() == pytest.approx(1.0) and probs.min() > 0.1  # near uniform
    law_cvar, _ = bench.exact_score(model, env, env.tabular(), deterministic=False)
    greedy_cvar, _ = bench.exact_score(model, env, env.tabular(), deterministic=True)
    assert law_cvar < greedy_cvar or greedy_cvar < 1.0  # a mixture of arms is not the safe arm's sure 1.0


class _StraightAhead:
    """A stand-in model whose greedy action is full speed to the right: the navigation's shortcut."""

    def predict(self, observation, deterministic=True):
        assert deterministic
        return np.array([1.0, 0.0], dtype=np.float32), None


def test_nav_greedy_score_is_exact_and_a_run_records_it():
    env = gym.make("RiskyShortcutNav-v2").unwrapped
    cvar, mean = bench.deterministic_score(_StraightAhead(), env)
    assert cvar == pytest.approx(-4.620, abs=5e-4) and mean == pytest.approx(10.276, abs=5e-4)  # the docstring's
    run = bench.run_one("nav", "og-cvar", 0, timesteps=1_000, checkpoints=2, eval_episodes=5)
    assert run["greedy_exact"] and len(run["curve"]) >= 1 and run["curve"][-1][1] == run["greedy"]["cvar"]
    assert run["greedy"]["cvar"] <= bench.TASKS["nav"].optimum + 1e-9
    assert run["eval_seed"] == bench.eval_seed(0)  # the sampled score's evaluation envs


def test_each_seed_evaluates_on_its_own_env_seeds(monkeypatch):
    """Adjacent seeds used to share 7 of their 8 evaluation envs, so their crash draws were nearly common."""
    from ordergrad_rl.zoo.models import eval_n_envs

    n_envs = max(eval_n_envs(bench.TASKS[name].env_id, 100) for name in ("nav", "cartpole", "lunarlander"))
    blocks = [set(range(bench.eval_seed(seed), bench.eval_seed(seed) + n_envs)) for seed in range(20)]
    assert all(not a & b for i, a in enumerate(blocks) for b in blocks[i + 1 :])
    assert min(map(min, blocks)) > 20 + 16  # above every training env seed (seed + rank)
    seen = []
    monkeypatch.setattr(bench, "evaluate_model", lambda *args, seed, **kwargs: seen.append(seed) or _Profile())
    bench.sampled_score(None, "RiskyShortcutNav-v2", 100, 3, deterministic=False)
    assert seen == [bench.eval_seed(3)]


class _Profile:
    def profile(self):
        return {"cvar_0.2": 0.0, "mean": 0.0}


def test_nav_runs_scored_by_monte_carlo_get_their_own_row():
    """Runs stored before the navigation's greedy scores were exact are not pooled with the exact ones."""
    exact = [{**_run("nav", "og-cvar", seed, 7.0, [(100, 7.0)]), "greedy_exact": True} for seed in range(2)]
    sampled = _run("nav", "og-cvar", 2, -11.45)  # no greedy_exact: stored before
    rows = bench.summarize([*exact, sampled])
    assert [(bench.method_label(row), row["seeds"], row["at_optimum"]) for row in rows] == [
        ("og-cvar", 2, 2),
        ("og-cvar greedy-MC", 1, 0),
    ]
    assert rows[0]["steps_to_optimum"] == 100.0 and "steps_to_optimum" not in rows[1]
    assert bench.greedy_exact(_run("lava", "og-cvar", 0, 1.1))  # tabular runs were always exact


def test_runs_from_before_the_tie_at_the_var_get_their_own_row_where_it_fires():
    """Maze and lava runs stored before untie_tail untied a tie at the value at risk are labelled and not pooled;
    elsewhere, and for the other algorithms, the rule changed nothing and the runs pool."""
    new = [{**_run("maze", "og-cvar", seed, -2.0), "untie_at_var": True} for seed in range(2)]
    old = _run("maze", "og-cvar", 2, -40.0)
    rows = bench.summarize([*new, old, _run("maze", "ppo", 0, -9.3), _run("maze", "ppo", 1, -9.3)])
    assert [(bench.method_label(row), row["seeds"]) for row in rows] == [
        ("og-cvar", 2),
        ("og-cvar untie-min", 1),
        ("ppo", 2),
    ]
    unchanged = ("og-cvar-tied", "gcvar-level", "og-cvar-meanshare", "og-mean", "ppo", "qrdqn-cvar")
    assert [bench.ties_at_var(name) for name in ("og-cvar", "og-cvar-mixture", "og-reinforce-cvar", *unchanged)] == [
        True, True, True, *[False] * len(unchanged)
    ]  # fmt: skip
    bandit = [_run("bandit", "og-cvar", 0, 1.0), {**_run("bandit", "og-cvar", 1, 1.0), "untie_at_var": True}]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(bandit)] == [("og-cvar", 2)]
    run = bench.run_one("bandit", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=5)
    assert run["untie_at_var"] is True


def test_runs_from_before_the_running_scale_get_their_own_row():
    """Runs stored before OrderGradPPO's (then OrderGradREINFORCE's) weights were scaled by a running scale by default
    are labelled std-scale where the default changed them (OrderGrad objectives without an explicit
    normalize_advantage)."""
    new = [_run("bandit", "og-cvar", seed, 1.1) for seed in range(2)]
    old = {key: value for key, value in _run("bandit", "og-cvar", 2, 1.0).items() if key != "normalize_advantage"}
    peer = {key: value for key, value in _run("bandit", "gcvar-level", 0, 0.9).items() if key != "normalize_advantage"}
    # OrderGradREINFORCE's default changed later: its runs recorded True then.
    reinforce = [{**_run("lava", "og-reinforce-level", seed, -6.8), "untie_at_var": True} for seed in range(2)]
    reinforce[0]["normalize_advantage"] = True
    rows = bench.summarize([*new, old, peer, *reinforce])
    assert [(bench.method_label(row), row["seeds"]) for row in rows] == [
        ("og-cvar", 2),
        ("og-cvar std-scale", 1),
        ("gcvar-level", 1),
        ("og-reinforce-level std-scale", 1),
        ("og-reinforce-level", 1),
    ]
    unchanged = ("og-cvar-running", "gcvar-level", "og-mean", "ppo", "qrdqn-cvar", "og-reinforce-running")
    assert bench.running_by_default("og-cvar", "maze") and bench.running_by_default("og-cvar-level", "bandit")
    assert bench.running_by_default("og-reinforce-cvar", "lava")
    assert not any(bench.running_by_default(name, "maze") for name in unchanged)
    assert not bench.running_by_default("og-cvar", "lunarlander")  # long episodes keep each rollout's std
    run = bench.run_one("bandit", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=5)
    assert run["normalize_advantage"] == "running"


def test_runs_from_before_the_untied_share_rule_get_their_own_row():
    """CartPole and Acrobot runs stored before the bonus on long episodes was scaled by a rollout's untied share (no
    ``entropy_by_untied_share`` recorded) are labelled full-ent where the rule acts: OrderGradPPO, a ranked objective,
    a bonus, ``entropy_when_tied`` off; Acrobot's runs too. LunarLander, no bonus and other algorithms pool."""

    def stored(task, method, seed, **extra):
        return {**_run(task, method, seed, 1.0), "normalize_advantage": True, "best_tie_zeroed": True, **extra}

    runs = [stored("cartpole", "og-cvar", seed, entropy_by_untied_share=True) for seed in range(2)]
    runs += [stored("cartpole", "og-cvar", 2), stored("cartpole", "og-cvar-noent", 0), stored("cartpole", "ppo", 0)]
    runs += [stored("acrobot", "og-cvar", 0), stored("acrobot", "og-cvar", 1, entropy_by_untied_share=True)]
    runs += [stored("lunarlander", "og-cvar", 0), stored("lunarlander", "og-cvar", 1, entropy_by_untied_share=True)]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-cvar", 2),
        ("og-cvar full-ent", 1),
        ("og-cvar-noent", 1),  # ent_coef=0.0
        ("ppo", 1),
        ("og-cvar full-ent", 1),  # Acrobot's integer returns tie too
        ("og-cvar", 1),
        ("og-cvar", 2),  # LunarLander's returns never tie
    ]
    scaled = ("og-cvar", "og-cvar-level-ent", "og-cvar-running", "og-cvar-entlin")
    assert all(bench.bonus_scaled_near_best_tie(name, "cartpole") for name in scaled)
    fixed = ("og-cvar-noent", "og-cvar-tiedent", "gcvar-level", "og-mean", "ppo", "qrdqn-cvar", "og-reinforce-cvar")
    assert not any(bench.bonus_scaled_near_best_tie(name, "cartpole") for name in fixed)
    assert not bench.bonus_scaled_near_best_tie("og-cvar", "lava")  # short episodes
    run = bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert run["entropy_by_untied_share"] is True


def test_runs_from_before_the_schedule_default_get_their_own_row():
    """Runs of the usage line on long episodes stored before the level schedule became its default there (no
    ``risk_schedule`` recorded, or ``"none"``) are labelled no-sched; methods that set a schedule (or pin none), other
    algorithms and short episodes pool."""

    def stored(task, method, seed):
        run = {**_run(task, method, seed, 1.0), "normalize_advantage": True, "best_tie_zeroed": True}
        return {**run, "entropy_by_untied_share": True}

    def before(task, method, seed):
        return _without(stored(task, method, seed), "risk_schedule")

    runs = [stored("lunarlander", "og-cvar", 0), before("lunarlander", "og-cvar", 1)]
    runs += [before("lunarlander", "og-cvar-level-ent", 0), before("lunarlander", "og-cvar-nosched", 0)]
    runs += [
        before("lunarlander", "ppo", 0),
        {**before("lava", "og-cvar", 0), "normalize_advantage": "running", "untie_at_var": True},
    ]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-cvar", 1),
        ("og-cvar no-sched", 1),
        ("og-cvar-level-ent", 1),  # sets its schedule
        ("og-cvar-nosched", 1),  # pins none
        ("ppo", 1),
        ("og-cvar", 1),  # short episodes: no schedule by default
    ]
    scheduled = [name for name in bench.METHODS if bench.scheduled_by_default(name, "cartpole")]
    assert scheduled == [
        "og-cvar",
        "og-cvar-sched-noent",
        "og-cvar-entdecay",
        "og-cvar-ent005",
        "og-cvar-entrel",
        "og-cvar-entlate",
        "og-cvar-noplateau",
        "og-cvar-plateau-p01",
        "og-cvar-plateau-fast",
        "og-cvar-plateau-quarter",
        "og-cvar-n16",
        "og-cvar-n64-sched",
        "og-cvar-net256",
        "og-cvar-mb256",
        "og-cvar-n32-sched",
        "og-cvar-n16-drift",
        "og-cvar-drift",
        "og-cvar-novelty",
        "og-cvar-nonovelty",
        "og-cvar-novphase",
        "og-cvar-stdfit",
        "og-mask-cvar",  # the sb3-contrib variants take the long-episode defaults too
        "og-mask-cvar-entlate",
        "og-recurrent-cvar",
        "og-recurrent-cvar-n64",
        "og-recurrent-cvar-entlate",
    ]
    # Their runs stored before that recorded no schedule ("none"), where the usage line's recorded nothing.
    contrib = {**_run("cartpole", "og-recurrent-cvar", 0, 1.0), "risk_schedule": "none"}
    assert bench.unscheduled_before_default(contrib)
    assert not bench.unscheduled_before_default({**contrib, "risk_schedule": "level:0.6"})
    assert not bench.scheduled_by_default("og-cvar", "maze")
    # Continuous actions with a time limit take it on short episodes too (the navigation), not without a limit.
    assert bench.scheduled_by_default("og-cvar", "nav") and bench.scheduled_by_default("og-reinforce-cvar", "nav")
    assert not bench.scheduled_by_default("og-reinforce-cvar", "cartpole")  # no long-episode defaults
    assert not bench.scheduled_by_default("og-reinforce-n32", "nav")  # the defaults of before 2026-12-01, pinned
    nav_before = {**_run("nav", "og-cvar", 0, -40.0), "risk_schedule": "none", "greedy_exact": True}
    assert bench.method_label(bench.summarize([nav_before])[0]) == "og-cvar no-sched"
    assert bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["risk_schedule"] == (
        "level:0.6"
    )
    assert bench.run_one("lava", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["risk_schedule"] == "none"


def test_runs_whose_sampler_fitted_the_target_under_a_level_schedule_get_their_own_row():
    """A run with the noise sampler and a level schedule stored before the sampler fitted the level in force is
    labelled sampler-at-target; one without a schedule, without the sampler or recording the rule pools."""
    exact = {"greedy_exact": True}
    runs = [
        _run("nav", "og-cvar", 0, -4.6) | exact,
        _without(_run("nav", "og-cvar", 1, -43.0) | exact, "noise_follows_schedule"),
    ]
    runs += [
        _without(
            {**_run("maze", "og-cvar", 0, -2.0), "risk_schedule": "none", "untie_at_var": True},
            "noise_follows_schedule",
        )
    ]
    runs += [
        _without({**_run("nav", "og-cvar-level", 0, -4.6) | exact, "noise_sampler": False}, "noise_follows_schedule")
    ]
    assert [bench.method_label(row) for row in bench.summarize(runs)] == [
        "og-cvar",
        "og-cvar sampler-at-target",
        "og-cvar",
        "og-cvar-level no-sampler",
    ]
    assert bench.run_one("nav", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["noise_follows_schedule"]


def test_acrobot_runs_from_before_the_novelty_default_get_their_own_row():
    """Acrobot-v1 runs of a ranked OrderGradPPO method left to the default, stored before ``novelty_when_blind``
    became the default (not recorded), are labelled no-novelty; methods that set it or drift_when_blind, the mean,
    other algorithms and other tasks (whose rollouts are never blind) pool."""

    def run(task, method, seed, cvar):  # as runs of the long-episode defaults record them
        return _run(task, method, seed, cvar) | {"entropy_by_untied_share": True, "best_tie_zeroed": True}

    runs = [run("acrobot", "og-cvar", 0, -100.0), _without(run("acrobot", "og-cvar", 1, -500.0), "novelty_when_blind")]
    others = ("og-cvar-novelty", "og-cvar-drift", "og-mean", "ppo")
    runs += [_without(run("acrobot", name, 0, -100.0), "novelty_when_blind") for name in others]
    runs += [_without(run("cartpole", "og-cvar", 0, 500.0), "novelty_when_blind")]
    labels = [bench.method_label(row) for row in bench.summarize(runs)]
    assert labels == ["og-cvar", "og-cvar no-novelty", "og-cvar-novelty", "og-cvar-drift", "og-mean", "ppo", "og-cvar"]
    stored = bench.run_one("acrobot", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert stored["novelty_when_blind"] and stored["novelty_phase"] == 0.0  # recorded, for a default that may change


def test_acrobot_runs_that_took_novelty_at_once_get_their_own_row():
    """Acrobot-v1 runs with ``novelty_when_blind`` stored before it waited for chance (no ``blind_patience``) are
    labelled novelty-at-once, whichever method set it; runs without novelty and other tasks pool."""

    def run(task, method, seed, cvar):
        return _run(task, method, seed, cvar) | {"entropy_by_untied_share": True, "best_tie_zeroed": True}

    runs = [run("acrobot", "og-cvar", 0, -100.0), _without(run("acrobot", "og-cvar", 1, -120.0), "blind_patience")]
    runs += [_without(run("acrobot", "og-cvar-novelty", 0, -100.0), "blind_patience", "novelty_when_blind")]
    runs += [_without(run("acrobot", "og-cvar-nonovelty", 0, -100.0) | {"novelty_when_blind": False}, "blind_patience")]
    runs += [_without(run("cartpole", "og-cvar", 0, 500.0), "blind_patience")]
    labels = [bench.method_label(row) for row in bench.summarize(runs)]
    assert labels == [
        "og-cvar",
        "og-cvar novelty-at-once",
        "og-cvar-novelty novelty-at-once",
        "og-cvar-nonovelty",
        "og-cvar",
    ]
    assert bench.run_one("acrobot", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["blind_patience"] == 96


def test_runs_from_before_the_short_episode_history_default_get_their_own_row():
    """Runs on short episodes stored before the history baseline became OrderGradPPO's default there (categorical
    actions; then continuous actions with a time limit, the navigation, where the value head's V(s) was the default;
    ``value_baseline`` not recorded, or recorded False or True) are labelled no-hist where the default gives it: a
    ranked objective left to the default. Methods that set a baseline, the mean, other algorithms and long episodes
    pool."""

    def before(task, method, seed):
        run = {**_run(task, method, seed, 1.0), "untie_at_var": True, "best_tie_zeroed": True}
        run["entropy_by_untied_share"] = True
        return _without(run, "value_baseline")

    runs = [_run("maze", "og-cvar", 0, 1.0) | {"untie_at_var": True}, before("maze", "og-cvar", 1)]
    runs += [before("maze", "og-cvar", 2) | {"value_baseline": False}, before("maze", "og-cvar-history", 0)]
    runs += [before("maze", "og-cvar-n256", 0), before("maze", "og-mean", 0), before("maze", "ppo", 0)]
    runs += [before("nav", "og-cvar", 0) | {"greedy_exact": True, "value_baseline": True}]
    runs += [_run("nav", "og-cvar", 1, 1.0) | {"greedy_exact": True, "value_baseline": "history"}]
    runs += [before("cartpole", "og-cvar", 0)]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-cvar", 1),
        ("og-cvar no-hist", 2),
        ("og-cvar-history", 1),  # sets it
        ("og-cvar-n256", 1),  # value_baseline=False (runs without n_episodes recorded: no N= label)
        ("og-mean", 1),  # the mean has rewards-to-go
        ("ppo", 1),
        ("og-cvar no-hist", 1),  # continuous actions with a time limit: the value head's V(s) before
        ("og-cvar", 1),
        ("og-cvar", 1),  # long episodes had the history baseline already
    ]
    assert bench.history_by_default("gcvar-level", "lava") and bench.history_by_default("og-cvar-level", "bandit")
    assert bench.history_by_default("og-cvar", "nav") and bench.history_by_default("gcvar-level", "nav")
    assert not any(bench.history_by_default("og-cvar", task) for task in ("cartpole", "acrobot"))
    # The sb3-contrib variants had no baseline before, on any episode length (theirs since 2026-12-05).
    assert all(bench.history_by_default(m, t) for m in ("og-mask-cvar", "og-recurrent-cvar") for t in ("lava", "maze"))
    assert bench.history_by_default("og-recurrent-cvar", "cartpole")
    assert bench.default_baseline_on_task("og-recurrent-cvar", "nav") == "history"
    run = bench.run_one("maze", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert run["value_baseline"] == "history"


def test_runs_from_before_the_noise_sampler_default_get_their_own_row():
    """Runs on a task whose env exposes its noise (the maze, the navigation) stored before OrderGradPPO's noise sampler
    became the default there (``noise_sampler`` not recorded, or recorded False) are labelled no-sampler where the
    default gives it: a lower-tail objective with a level, left to the default. Methods that set it, GCVaR, the mean,
    other algorithms and tasks without the noise API pool."""

    def before(task, method, seed):
        run = {**_run(task, method, seed, 1.0), "untie_at_var": True}  # (runs without it: untie-min on the maze)
        return _without(run, "noise_sampler")

    runs = [_run("maze", "og-cvar", 0, 1.0) | {"untie_at_var": True}, before("maze", "og-cvar", 1)]
    runs += [before("maze", "og-cvar", 2), before("maze", "og-cvar", 3) | {"noise_sampler": False}]
    runs += [before("maze", "og-cvar-noise", 0)]
    runs += [before("maze", "gcvar-level", 0), before("maze", "og-mean", 0)]
    runs += [_without(before("maze", "og-reinforce-cvar", 0), "ent_coef")]
    runs += [before("maze", "og-reinforce-n32", 0) | {"ent_coef": 0.0}]
    runs += [before("nav", "og-cvar", 0) | {"greedy_exact": True}, before("lava", "og-cvar", 0)]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-cvar", 1),
        ("og-cvar no-sampler", 3),
        ("og-cvar-noise", 1),  # sets it
        ("gcvar-level", 1),
        ("og-mean", 1),
        ("og-reinforce-cvar no-sampler no-ent", 1),  # its defaults since 2026-12-01: the sampler and the bonus
        ("og-reinforce-n32", 1),  # pins the defaults of before
        ("og-cvar no-sampler", 1),  # the navigation exposes its crash
        ("og-cvar", 1),  # the lava grid exposes no noise
    ]
    assert bench.run_one("maze", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["noise_sampler"] is True
    assert bench.run_one("lava", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["noise_sampler"] is False


def test_runs_from_before_the_reinforce_entropy_default_get_their_own_row():
    """OrderGradREINFORCE runs stored before its decayed entropy bonus became the default (no ``ent_coef`` recorded;
    it was 0.0) are labelled no-ent where the default gives the bonus: a ranked objective on categorical actions, the
    bonus left to the default. Runs recording it, methods that set it, continuous actions and the PPO family pool."""
    done = {"untie_at_var": True, "noise_sampler": False, "n_episodes": 32, "normalize_advantage": "running"}
    runs = [_run("lava", "og-reinforce-cvar", 0, 1.0) | done | {"ent_coef": "0.3 -> 0"}]
    runs += [_without(_run("lava", "og-reinforce-cvar", seed, 1.0) | done, "ent_coef") for seed in (1, 2)]
    runs += [_run("lava", "og-reinforce-n32-ent", 0, 1.0) | done]  # sets it
    runs += [_run("nav", "og-reinforce-cvar", 0, 1.0) | done | {"greedy_exact": True}]  # Box actions: no bonus
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-reinforce-cvar", 1),
        ("og-reinforce-cvar no-ent", 2),
        ("og-reinforce-n32-ent", 1),
        ("og-reinforce-cvar no-sampler", 1),
    ]
    run = bench.run_one("lava", "og-reinforce-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert (run["ent_coef"], run["n_episodes"]) == ("0.3 -> 0", 32)
    assert bench.run_one("lava", "og-reinforce-n32", 0, timesteps=64, checkpoints=1, eval_episodes=2)["ent_coef"] == 0


def test_runs_from_before_the_held_bonus_default_get_their_own_row():
    """OrderGradPPO and OrderGradMaskablePPO runs on short categorical episodes stored before their bonus there was
    held and then decayed (no ``ent_coef`` recorded, or the constant 0.01) are labelled const-ent where the default
    gives the schedule: a ranked objective, the bonus and its relative form left to the default. Long episodes,
    continuous actions, methods that set the bonus, the mean, OrderGradRecurrentPPO and OrderGradREINFORCE pool."""

    def run(task, method, seed):  # (runs without untie_at_var: untie-min on the maze)
        return _run(task, method, seed, -2.0) | {"untie_at_var": True}

    runs = [run("maze", "og-cvar", 0)]  # records "0.01 -> 0"
    runs += [_without(run("maze", "og-cvar", 1), "ent_coef"), run("maze", "og-cvar", 2) | {"ent_coef": 0.01}]
    runs += [_without(run(task, method, 0), "ent_coef") for task, method in [
        ("cartpole", "og-cvar"),  # long episodes: the constant
        ("nav", "og-cvar"),  # Box actions: no bonus
        ("maze", "og-cvar-noent"),  # sets it
        ("maze", "og-cvar-entrel"),  # relative: its own constant
        ("maze", "og-mean"),  # the mean: no bonus
        ("maze", "og-recurrent-cvar"),  # OrderGradRecurrentPPO keeps the constant
    ]]  # fmt: skip
    runs += [_without(run("maze", "og-mask-cvar", 0), "ent_coef"), run("maze", "og-mask-cvar", 1)]
    labels = [bench.method_label(row) for row in bench.summarize(runs)]
    assert labels[:2] == ["og-cvar", "og-cvar const-ent"]
    assert sorted(label for label in labels if "mask" in label) == ["og-mask-cvar", "og-mask-cvar const-ent"]
    assert [label for label in labels if "const-ent" in label] == ["og-cvar const-ent", "og-mask-cvar const-ent"]
    assert [row["seeds"] for row in bench.summarize(runs)][:2] == [1, 2]
    assert bench.held_bonus_by_default("og-cvar", "lava") and bench.held_bonus_by_default("og-cvar", "bandit")
    assert bench.held_bonus_by_default("og-mask-cvar", "lava")
    assert not bench.held_bonus_by_default("og-mask-cvar", "cartpole")  # long episodes
    run = bench.run_one("maze", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert run["ent_coef"] == "0.01 -> 0"  # what marks a run at the default
    assert bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["ent_coef"] == 0.01


def test_runs_from_before_the_plateau_default_get_their_own_row():
    """OrderGradPPO runs on long categorical episodes stored before ``entropy_plateau`` became the default there (no
    ``entropy_plateau`` recorded) are labelled no-plateau where the default gives it: a ranked objective, the bonus
    and the plateau left to their defaults. Short episodes, methods that set the bonus or the plateau, the mean and
    other algorithms pool."""

    def run(task, method, seed):
        return _run(task, method, seed, -100.0) | {"ent_coef": 0.01, "entropy_by_untied_share": True}

    runs = [run("acrobot", "og-cvar", 0), _without(run("acrobot", "og-cvar", 1), "entropy_plateau")]
    runs += [_without(run(task, method, 0), "entropy_plateau") for task, method in [
        ("lava", "og-cvar"),  # short episodes: the held bonus
        ("acrobot", "og-cvar-noplateau"),  # sets it off
        ("acrobot", "og-cvar-entdecay"),  # sets the bonus
        ("acrobot", "og-mean"),  # the mean: no bonus
        ("acrobot", "og-mask-cvar"),  # OrderGradMaskablePPO: not its default
    ]]  # fmt: skip
    labels = [bench.method_label(row) for row in bench.summarize(runs)]
    assert labels[:2] == ["og-cvar", "og-cvar no-plateau"]
    assert [label for label in labels if "no-plateau" in label] == ["og-cvar no-plateau"]
    assert bench.plateau_by_default("og-cvar", "acrobot") and bench.plateau_by_default("og-cvar-n16", "cartpole")
    assert not bench.plateau_by_default("og-cvar", "maze") and not bench.plateau_by_default("og-cvar-level", "cartpole")
    record = bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert record["entropy_plateau"] == "EntropyPlateau(window=3, p_value=0.5, decay_share=0.1)"
    assert (
        bench.run_one("lava", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["entropy_plateau"] == "none"
    )


def test_runs_from_before_the_faster_plateau_decay_get_their_own_row():
    """Runs whose plateau decay took a quarter of the budget (``entropy_plateau``'s default until 2026-12-06) are
    labelled quarter-plateau where the method leaves the rule to its default; methods that set it (to a quarter or
    otherwise) pool with their own runs."""

    def run(method, seed, plateau):
        record = _run("acrobot", method, seed, -100.0) | {"ent_coef": 0.01, "entropy_by_untied_share": True}
        return record | {"entropy_plateau": repr(EntropyPlateau(p_value=plateau[0], decay_share=plateau[1]))}

    runs = [run("og-cvar", 0, (0.5, 0.1)), run("og-cvar", 1, (0.5, 0.25)), run("og-cvar", 2, (0.5, 0.25))]
    runs += [run("og-cvar-plateau-p01", 0, (0.1, 0.5)), run("og-cvar-plateau-fast", 0, (0.5, 0.1))]
    runs += [run("og-cvar-noplateau", 0, (0.5, 0.25)) | {"entropy_plateau": "none"}]
    rows = bench.summarize(runs)
    assert [(bench.method_label(row), row["seeds"]) for row in rows] == [
        ("og-cvar", 1),
        ("og-cvar quarter-plateau", 2),
        ("og-cvar-plateau-p01", 1),
        ("og-cvar-plateau-fast", 1),
        ("og-cvar-noplateau", 1),
    ]
    assert bench.quarter_plateau_before_default(run("og-cvar", 1, (0.5, 0.25)))
    assert not bench.quarter_plateau_before_default(run("og-cvar-plateau-p01", 1, (0.5, 0.25)))  # sets its rule


def test_cartpole_runs_from_before_the_tied_critic_default_get_their_own_row():
    """CartPole-v1 runs stored before ``critic_when_tied`` (OrderGradPPO's default since 2026-12-07) trained their
    rollouts tied at the best on zero advantages: labelled zero-tie where the method leaves it to the default; the
    other tasks never tie a whole rollout at the best, and methods that set it or take no critic pool as before."""

    def now(task, method, seed):  # CartPole's earlier rules recorded (best_tie_zeroed, entropy_by_untied_share)
        return _run(task, method, seed, 480.0) | {"best_tie_zeroed": True, "entropy_by_untied_share": True}

    def before(task, seed):
        return {key: value for key, value in now(task, "og-cvar", seed).items() if key != "critic_when_tied"}

    runs = [now("cartpole", "og-cvar", 0), before("cartpole", 1), now("cartpole", "ppo", 0)]
    labels = sorted(bench.method_label(row) for row in bench.summarize(runs))
    assert labels == ["og-cvar", "og-cvar zero-tie", "ppo"]
    assert not any(bench.zero_tie_before_default(before(task, 0)) for task in ("acrobot", "lava", "lunarlander"))
    assert bench.tie_critic_by_default("og-cvar", "cartpole") and bench.tie_critic_by_default("gcvar-level", "cartpole")
    assert not bench.tie_critic_by_default("og-mean", "cartpole")  # the mean keeps its reward-to-go
    assert not bench.tie_critic_by_default("og-reinforce-cvar", "cartpole")  # no critic
    assert not bench.tie_critic_by_default("og-cvar-state", "cartpole")  # value_baseline=True takes the value head
    assert bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["critic_when_tied"]


def test_cartpole_runs_of_the_critic_fitted_apart_get_their_own_row():
    """CartPole-v1 runs stored before the tied critic was fitted in the update's minibatches (session 80) fitted it in
    a pass of their own: labelled critic-apart; the other tasks' actors are the same either way."""
    now = _run("cartpole", "og-cvar", 0, 500.0) | {"best_tie_zeroed": True, "entropy_by_untied_share": True}
    apart = {key: value for key, value in now.items() if key != "critic_in_update"}
    labels = sorted(bench.method_label(row) for row in bench.summarize([now, apart]))
    assert labels == ["og-cvar", "og-cvar critic-apart"]
    assert not bench.critic_fitted_apart(apart | {"task": "acrobot"})
    assert not bench.critic_fitted_apart(apart | {"critic_when_tied": False})
    assert bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)["critic_in_update"]


def test_long_episode_runs_at_a_small_budget_are_labelled_by_the_size_they_took():
    """OrderGradPPO's long-episode rollout is 16 below the budget of 8 rollouts of 32 at the limit since 2026-12-05:
    runs at 100k steps stored at 32 read ``N=32``, the runs at 16 and at 300k with 32 read as the usage line."""

    def run(budget, n_episodes, seed):
        run = _run("acrobot", "og-cvar", seed, -100.0) | {"ent_coef": 0.01, "entropy_by_untied_share": True}
        return run | {"budget": budget, "n_episodes": n_episodes}

    runs = [run(100_000, 32, 0), run(100_000, 16, 0), run(300_000, 32, 0)]
    labels = sorted(bench.method_label(row) for row in bench.summarize(runs))
    assert labels == ["og-cvar", "og-cvar", "og-cvar N=32"]


def test_the_late_decay_probe_is_the_short_episode_default():
    """``late_linear_ent_coef`` (the harness cannot import the agents' torch-bound defaults) is the schedule of
    OrderGradPPO's default bonus on short categorical episodes, whose stored runs it made."""
    from ordergrad_rl.agents.common.arguments import SHORT_RANKED_ENT_COEF

    assert bench._HELD_BONUS == SHORT_RANKED_ENT_COEF


def test_task_action_kinds_match_their_envs():
    """``Task.discrete`` (known without building an env whose extra may be absent) is the env's action space."""
    for name, task in bench.TASKS.items():
        try:
            env = gym.make(task.env_id)
        except gym.error.DependencyNotInstalled:
            continue  # LunarLander-v3 without box2d
        assert task.discrete == isinstance(env.action_space, gym.spaces.Discrete), name


def test_runs_from_before_the_best_tie_rule_get_their_own_row_on_cartpole(tmp_path):
    """CartPole runs with a per-step baseline stored before a rollout tied at the best return trained on zero
    advantages are labelled tie-baseline; runs without a baseline, other algorithms and other tasks pool."""

    def old(task, method, seed):  # the bonus rule of now (see the previous test)
        return {**_run(task, method, seed, 400.0), "normalize_advantage": True, "entropy_by_untied_share": True}

    new = [{**old("cartpole", "og-cvar", seed), "best_tie_zeroed": True} for seed in range(2)]
    runs = [*new, old("cartpole", "og-cvar", 2), old("cartpole", "og-cvar-n256", 0), old("cartpole", "ppo", 0)]
    runs += [old("acrobot", "og-cvar", 0), {**old("acrobot", "og-cvar", 1), "best_tie_zeroed": True}]
    assert [(bench.method_label(row), row["seeds"]) for row in bench.summarize(runs)] == [
        ("og-cvar", 2),
        ("og-cvar tie-baseline", 1),
        ("og-cvar-n256", 1),  # value_baseline=False
        ("ppo", 1),
        ("og-cvar", 2),  # Acrobot never ties a rollout at the best
    ]
    names = ("gcvar-level", "og-cvar-state", "og-mean", "qrdqn-cvar")
    assert [bench.baseline_by_default(name, "cartpole") for name in names] == [True, True, False, False]
    assert bench.baseline_by_default("og-cvar", "lava")  # short episodes, categorical actions: the history baseline
    assert not bench.baseline_by_default("og-cvar-n256", "lava")  # value_baseline=False
    before, now = tmp_path / "before.json", tmp_path / "now.json"
    before.write_text(json.dumps({"runs": [old("cartpole", "og-cvar", 0)]}))
    now.write_text(json.dumps({"runs": [new[0]]}))
    assert len(bench.read_runs([before, now])) == 2  # the same seed and steps, kept side by side
    run = bench.run_one("cartpole", "og-cvar", 0, timesteps=64, checkpoints=1, eval_episodes=2)
    assert run["best_tie_zeroed"] is True


def test_steps_to_optimum_needs_the_optimum_kept_to_the_end():
    curve = [(10, -5.0), (20, 1.0), (30, -1.0), (40, 0.95), (50, 1.1)]
    assert bench.steps_to_optimum(curve, 0.9) == 40
    assert bench.steps_to_optimum(curve[:3], 0.9) is None
    assert bench.steps_to_optimum([], 0.9) is None


def test_interval_is_a_bootstrap_interval_of_the_mean():
    mean, low, high = bench.interval([1.0, 2.0, 3.0, 4.0, 10.0])
    assert mean == 4.0 and low < mean < high and 1.0 <= low and high <= 10.0
    assert bench.interval([2.0]) == (2.0, 2.0, 2.0)
    assert bench.interval([3.0, 3.0]) == (3.0, 3.0, 3.0)


def test_a_single_seed_prints_no_interval():
    # One seed has no interval, but its row printed "-201.266 [-201.266, -201.266]" under "[95% CI]": read as an
    # interval of width 0, like that of ten seeds that all scored the same (which stays).
    def cells(runs):
        row = bench.format_table(bench.summarize(runs)).splitlines()[-1]
        return [cell.strip() for cell in row.strip("|").split("|")][5:7]  # greedy, stochastic

    assert cells([_run("cartpole", "ppo", 0, 300.0)]) == ["300.000", "299.000"]
    same = cells([_run("cartpole", "ppo", seed, 300.0) for seed in range(3)])
    assert same == ["300.000 [300.000, 300.000]", "299.000 [299.000, 299.000]"]
    stat = {"mean": 1.0, "low": 1.0, "high": 1.0, "per_seed": np.array([1.0])}
    assert peers._ci(stat, "{:.1f}".format) == "1.0"  # reproduce peers --seeds 1 likewise


def _without(run, *keys):
    """``run`` as stored before ``keys`` were recorded."""
    return {name: value for name, value in run.items() if name not in keys}


def _run(task, method, seed, cvar, curve=()):
    # (runs without normalize_advantage are labelled std-scale where the running default changed them, runs without
    # risk_schedule no-sched where the long-episode default gives one, runs without value_baseline no-hist where the
    # short categorical episodes' default gives the history baseline, runs without noise_sampler no-sampler where the
    # env exposes its noise, runs without a scheduled ent_coef const-ent where OrderGradPPO's default schedules it,
    # runs without entropy_plateau no-plateau where the long-episode default decays the bonus on plateaus, CartPole runs
    # without critic_when_tied zero-tie where OrderGradPPO's default trains a rollout tied at the best on a critic,
    # and those without critic_in_update critic-apart where it was fitted in a pass of its own)
    return {"task": task, "method": method, "seed": seed, "timesteps": 100, "seconds": 1.0,
            "greedy": {"cvar": cvar, "mean": cvar + 1}, "stochastic": {"cvar": cvar - 1, "mean": cvar},
            "curve": list(curve), "normalize_advantage": "running", "risk_schedule": "level:0.6",
            "value_baseline": "history", "noise_sampler": True, "noise_follows_schedule": True,
            "novelty_when_blind": True, "blind_patience": 96, "ent_coef": "0.01 -> 0",
            "entropy_plateau": "EntropyPlateau(window=3, p_value=0.5, decay_share=0.1)",
            "critic_when_tied": True, "critic_in_update": True}  # fmt: skip


def test_summary_counts_seeds_at_the_optimum():
    runs = [
        _run("lava", "og-cvar", 0, 1.1, [(50, 1.0), (100, 1.1)]),
        _run("lava", "og-cvar", 1, -3.5, [(50, 1.0), (100, -3.5)]),
        _run("lava", "og-cvar", 2, 0.95, [(50, -1.0), (100, 0.95)]),
        _run("cartpole", "ppo", 0, 300.0),
    ]
    rows = {(row["task"], row["method"]): row for row in bench.summarize(runs)}
    lava = rows["lava", "og-cvar"]
    assert lava["seeds"] == 3 and lava["at_optimum"] == 2 and lava["steps_to_optimum"] == 75.0
    assert lava["greedy"][0] == pytest.approx((1.1 - 3.5 + 0.95) / 3)
    assert "at_optimum" not in rows["cartpole", "ppo"]
    table = bench.format_table(bench.summarize(runs))
    assert "2/3" in table and "1.124 (eps 0.224)" in table


def test_summary_keeps_budgets_apart():
    runs = [{**_run("cartpole", "ppo", seed, 300.0), "budget": 100_000} for seed in range(2)]
    runs += [{**_run("cartpole", "ppo", seed, 500.0), "budget": 300_000, "timesteps": 300_000} for seed in range(3)]
    rows = bench.summarize(runs)
    assert [(row["seeds"], row["greedy"][0]) for row in rows] == [(2, 300.0), (3, 500.0)]
    assert rows[1]["timesteps"] == 300_000


def test_grid_leaves_qrdqn_out_of_continuous_tasks_and_gsde_out_of_discrete_ones():
    config = bench.Config(tasks=("bandit", "nav"), methods=("og-cvar", "qrdqn-cvar", "og-cvar-sde"), seeds=2)
    runs = bench.runs_of(config)
    assert ("nav", "qrdqn-cvar", 0, 300_000) not in runs and ("bandit", "qrdqn-cvar", 1, 300_000) in runs
    assert ("bandit", "og-cvar-sde", 0, 300_000) not in runs and ("nav", "og-cvar-sde", 1, 300_000) in runs
    assert len(runs) == 8


def test_contrib_variants_run_as_a_user_runs_them_and_the_lstm_is_scored_by_its_histories():
    """OrderGradMaskablePPO on the tabular tasks only (every action valid; scored from its probabilities, where a
    Monte-Carlo score would need masks from the evaluation env), OrderGradRecurrentPPO everywhere; the LSTM acts on
    its history, so on a tabular task its greedy policy is scored from the tree of its histories."""
    config = bench.Config(tasks=("bandit", "nav", "cartpole"), methods=("og-mask-cvar", "og-recurrent-cvar"), seeds=1)
    assert {(task, method) for task, method, _, _ in bench.runs_of(config)} == {
        ("bandit", "og-mask-cvar"),
        ("bandit", "og-recurrent-cvar"),
        ("nav", "og-recurrent-cvar"),
        ("cartpole", "og-recurrent-cvar"),
    }
    masked = bench.build_model(bench.METHODS["og-mask-cvar"], "lava", 0)
    assert type(masked).__name__ == "OrderGradMaskablePPO" and masked.env.env_method("action_masks")[0].all()
    for method in ("og-mask-cvar", "og-recurrent-cvar"):
        run = bench.run_one("bandit", method, 0, 256, 1, 10)
        assert run["greedy_exact"] and run["n_episodes"] == bench.default_n_episodes_now(method, "bandit", 256)
        assert "greedy-MC" not in bench.method_label(run)
    assert run["greedy_bounds"] == [run["greedy"]["cvar"]] * 2 and run["greedy_cut"] == 0.0


def test_the_q_critic_mode_runs_on_discrete_actions_as_a_step_based_method():
    """OrderGradPPO(advantage="q_critic") is built by OrderGradPPO, runs on categorical actions only (a per-action Q
    head), and is no episodic method: no rollout size in its runs and none of the episodic defaults' row marks (the
    runner read its rollout size, None, and failed after the training)."""
    config = bench.Config(tasks=("bandit", "nav"), methods=("og-q-cvar",), seeds=1)
    assert [task for task, *_ in bench.runs_of(config)] == ["bandit"]
    method = bench.METHODS["og-q-cvar"]
    assert not method.episodic and type(bench.build_model(method, "cartpole", 0)).__name__ == "OrderGradQCriticPPO"
    run = bench.run_one("cartpole", "og-q-cvar", 0, 64, 1, 2)
    assert "n_episodes" not in run and not any(bench.stored_before(run))
    assert bench.method_label(run) == "og-q-cvar"


def test_a_wide_history_bracket_leaves_the_lstm_to_monte_carlo_inside_it(monkeypatch):
    monkeypatch.setattr(bench, "TREE_TOLERANCE", -1.0)  # every bracket too wide
    run = bench.run_one("bandit", "og-recurrent-cvar", 0, 256, 1, 10)
    assert not run["greedy_exact"] and "greedy_mc" in run and "eval_seed" in run
    low, high = run["greedy_bounds"]
    assert low <= run["greedy"]["cvar"] <= high


class SumOfStatesMemory:
    """A stand-in for a recurrent model, with ``RecurrentPPO.predict``'s conventions (``state`` a tuple of
    ``[layers, n, hidden]`` arrays, reset where ``episode_start``): it remembers the sum of the states it has seen
    and acts on it, so two histories through the same state act differently."""

    def __init__(self, n_actions: int) -> None:
        self.n_actions = n_actions

    def action(self, memory: float) -> int:
        return int(memory * 7 + 3) % self.n_actions

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        memory = np.zeros((1, len(obs), 1)) if state is None else state[0].copy()
        memory[0, np.asarray(episode_start, bool), 0] = 0.0
        memory[0, :, 0] += np.asarray(obs, dtype=float)
        return np.array([self.action(m) for m in memory[0, :, 0]]), (memory, memory)


def test_the_history_tree_follows_a_recurrent_models_memory():
    """:func:`bench.history_greedy_score` (the model's batched ``predict``, each history's memory taken from its
    parent's) against a plain recursion over the histories of the same memory policy, on a small MDP with nothing
    cut: the same CVaR_0.2 and mean."""
    from test_envs_tabular_history import random_mdp

    from ordergrad_rl.envs.tabular import ReturnDistribution

    mdp = random_mdp(3, n_states=5, n_actions=3, horizon=5)
    model = SumOfStatesMemory(mdp.n_actions)
    masses: dict[float, float] = {}

    def walk(state: int, memory: float, prob: float, ret: float, t: int) -> None:
        if t == mdp.horizon:
            masses[round(ret, 9)] = masses.get(round(ret, 9), 0.0) + prob
            return
        memory += state
        a = model.action(memory)
        for q, s2, r, term in zip(
            mdp.prob[state, a], mdp.next_state[state, a], mdp.reward[state, a], mdp.terminated[state, a], strict=True
        ):
            if q > 0 and term:
                masses[round(ret + r, 9)] = masses.get(round(ret + r, 9), 0.0) + prob * q
            elif q > 0:
                walk(int(s2), memory, prob * q, ret + r, t + 1)

    for s in np.flatnonzero(mdp.start):
        walk(int(s), 0.0, mdp.start[s], 0.0, 0)
    law = ReturnDistribution.from_dict(masses)

    class Env:
        observation_space = gym.spaces.Discrete(mdp.n_states)

        def tabular(self):
            return mdp

    record = bench.history_greedy_score(model, Env())
    assert record["greedy_cut"] == 0.0
    np.testing.assert_allclose(record["greedy_bounds"], [law.cvar(0.2)] * 2)
    np.testing.assert_allclose(record["greedy_mean_bounds"], [law.mean()] * 2)
    assert bench.tree_exact(bench.TASKS["lava"], {"greedy_bounds": [1.0, 1.05]})
    assert not bench.tree_exact(bench.TASKS["lava"], {"greedy_bounds": [1.0, 1.1]})
    run = {"greedy": {"cvar": -4.65, "mean": -0.7}, "greedy_bounds": [-41.3, -7.3], "greedy_mean_bounds": [-3, 2]}
    bench.clamp_to_tree(run)
    assert run["greedy"] == {"cvar": -7.3, "mean": -0.7} and run["greedy_mc"] == {"cvar": -4.65, "mean": -0.7}


def test_a_method_tuned_per_task_runs_only_there_with_its_settings():
    config = bench.Config(tasks=("bandit", "cartpole", "acrobot"), methods=("qrdqn-cvar", "qrdqn-cvar-zoo"), seeds=1)
    assert {(task, method) for task, method, _, _ in bench.runs_of(config)} == {
        ("bandit", "qrdqn-cvar"),
        ("cartpole", "qrdqn-cvar"),
        ("acrobot", "qrdqn-cvar"),
        ("cartpole", "qrdqn-cvar-zoo"),
        ("acrobot", "qrdqn-cvar-zoo"),
    }
    model = bench.build_model(bench.METHODS["qrdqn-cvar-zoo"], "cartpole", 0)
    assert (model.n_quantiles, model.train_freq.frequency, model.gradient_steps, model.alpha) == (10, 256, 128, 0.2)
    assert model.policy.net_args["net_arch"] == [256, 256]
    lunar = bench.METHODS["qrdqn-cvar-zoo"].kwargs_for("lunarlander")["learning_rate"]
    assert (lunar(1.0), lunar(0.5)) == (1.5e-3, 0.75e-3)  # rl-zoo3's "lin_1.5e-3"


def test_first_seed_shifts_the_seeds_of_every_run():
    config = bench.Config(tasks=("bandit",), methods=("og-cvar", "ppo"), seeds=3, first_seed=2)
    assert sorted({seed for _, _, seed, _ in bench.runs_of(config)}) == [2, 3, 4]


def test_unknown_names_and_missing_extras_fail_before_the_work(capsys, monkeypatch, tmp_path):
    assert main(["reproduce", "benchmarks", "--tasks", "lava", "pong", "--out", str(tmp_path)]) == 2
    assert "unknown task 'pong'" in capsys.readouterr().err
    assert main(["reproduce", "benchmarks", "--methods", "ppo", "cesor", "--out", str(tmp_path)]) == 2
    assert "unknown method 'cesor'" in capsys.readouterr().err
    monkeypatch.setitem(__import__("sys").modules, "Box2D", None)
    assert main(["reproduce", "benchmarks", "--tasks", "lunarlander", "--out", str(tmp_path)]) == 2
    assert "[box2d] extra" in capsys.readouterr().err


def test_quick_run_end_to_end_and_pooled_from_json(tmp_path, capsys):
    path = tmp_path / "runs.json"
    args = ["reproduce", "benchmarks", "--quick", "--workers", "1", "--quiet", "--out", str(tmp_path)]
    assert main([*args, "--json", str(path)]) == 0
    runs = json.loads(path.read_text())["runs"]
    assert {(r["task"], r["method"]) for r in runs} == {
        (task, method) for task in ("lava", "bandit") for method in ("og-cvar", "og-cvar-level", "ppo")
    }
    for run in runs:
        assert run["timesteps"] >= 1000 and len(run["curve"]) >= 2
        assert run["env_id"] == bench.TASKS[run["task"]].env_id
        optimum = bench.TASKS[run["task"]].optimum
        assert run["greedy"]["cvar"] <= optimum + 1e-9 and run["stochastic"]["cvar"] <= optimum + 1e-9
    capsys.readouterr()
    assert main(["reproduce", "benchmarks", "--from-json", str(path), str(path), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "| bandit |" in out and "|   lava |" in out and (tmp_path / "benchmarks.png").exists()
    (tmp_path / "bad.json").write_text("{}")
    assert main(["reproduce", "benchmarks", "--from-json", str(tmp_path / "bad.json"), "--out", str(tmp_path)]) == 2


def test_runs_on_an_earlier_env_version_are_not_pooled(tmp_path, capsys):
    run = {"task": "nav", "method": "ppo", "seed": 0, "timesteps": 300_000, "budget": 300_000, "seconds": 1.0}
    run.update(greedy={"cvar": -50.0, "mean": -50.0}, stochastic={"cvar": -50.0, "mean": -50.0}, curve=[])
    before = tmp_path / "before.json"  # stored before runs recorded their env: nav was RiskyShortcutNav-v0
    before.write_text(json.dumps({"runs": [run]}))
    assert main(["reproduce", "benchmarks", "--from-json", str(before), "--out", str(tmp_path)]) == 2
    assert "RiskyShortcutNav-v0, but the task is RiskyShortcutNav-v2" in capsys.readouterr().err
    v1 = tmp_path / "v1.json"  # the lower wall's gap at the arena's edge (the env's v2 entry)
    v1.write_text(json.dumps({"runs": [{**run, "env_id": "RiskyShortcutNav-v1"}]}))
    assert main(["reproduce", "benchmarks", "--from-json", str(v1), "--out", str(tmp_path)]) == 2
    assert "RiskyShortcutNav-v1, but the task is RiskyShortcutNav-v2" in capsys.readouterr().err
    now = tmp_path / "now.json"
    now.write_text(json.dumps({"runs": [{**run, "env_id": "RiskyShortcutNav-v2"}]}))
    assert main(["reproduce", "benchmarks", "--from-json", str(now), "--out", str(tmp_path)]) == 0
    assert "| nav | ppo greedy-MC | 1 |" in " ".join(capsys.readouterr().out.split())  # scored before exact scores


def test_runs_at_an_earlier_rollout_size_get_their_own_row(tmp_path, capsys):
    """Runs record the episodes per update they trained with; where that is not the method's default now (runs
    stored before a default changed), the row says so instead of pooling them with the runs at the default."""
    run = {"task": "maze", "method": "og-cvar", "seed": 0, "timesteps": 300_000, "budget": 300_000, "seconds": 1.0}
    run["untie_at_var"] = True  # (runs without it are labelled untie-min on the maze)
    run["normalize_advantage"] = "running"  # (runs without it, std-scale)
    run["value_baseline"] = "history"  # (runs without it, no-hist)
    run["noise_sampler"] = True  # (runs without it, no-sampler)
    run["ent_coef"] = "0.01 -> 0"  # (runs without it, const-ent)
    run.update(greedy={"cvar": -2.0, "mean": 1.0}, stochastic={"cvar": -3.0, "mean": 0.5}, curve=[[300_000, -2.0]])
    runs = [{**run, "n_episodes": 256}, {**run, "n_episodes": 128}, {**run, "seed": 1, "n_episodes": 128}]
    runs.append({**run, "method": "ppo"})  # SB3's PPO has no episodes per update
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))
    assert main(["reproduce", "benchmarks", "--from-json", str(path), "--out", str(tmp_path)]) == 0
    table = " ".join(capsys.readouterr().out.split())
    assert "| maze | og-cvar N=256 | 1 |" in table and "| maze | og-cvar | 2 |" in table  # the maze's default: 128
    assert "| maze | ppo | 1 |" in table
    now = bench.default_n_episodes_now
    assert now("og-cvar", "maze") == 128 and now("og-cvar", "lava") == 256 and now("og-cvar-n32", "nav") == 32
    # Continuous actions with a time limit (the PPO family): 2048 steps at the limit; GCVaR takes CVaR's size.
    assert now("og-cvar", "nav") == now("gcvar-level", "nav") == now("og-mask-cvar", "nav") == 32
    assert now("og-reinforce-cvar", "nav") == 32  # its own budget, 1024 steps at the limit
    assert now("og-reinforce-cvar", "lava") == 32 and now("og-reinforce-running", "lava") == 256  # pinned
    assert now("ppo", "lava") is None
    # Long episodes: OrderGradPPO and OrderGradMaskablePPO halve their 32 for a small first budget (GCVaR too);
    # pinned sizes, the mean and the other agents keep theirs.
    assert now("og-cvar", "acrobot") == now("og-cvar", "acrobot", 300_000) == 32
    assert now("og-cvar", "acrobot", 100_000) == now("gcvar-level", "cartpole", 100_000) == 16
    assert now("og-mask-cvar", "acrobot", 100_000) == 16 and now("og-mask-cvar", "lava", 100_000) == 64
    assert now("og-cvar-n32-sched", "acrobot", 100_000) == 32 and now("og-recurrent-cvar", "acrobot", 100_000) == 16
    assert now("og-recurrent-cvar", "maze", 100_000) == 64 and now("og-recurrent-cvar", "maze", 300_000) == 128
    assert now("og-mean", "cartpole", 100_000) == 16
    # Short episodes: halved until the budget holds 32 rollouts at the limit; the suite's 300k keep their sizes.
    assert now("og-cvar", "maze", 100_000) == now("og-cvar", "lava", 100_000) == 64
    assert now("og-cvar", "maze", 300_000) == 128 and now("og-cvar", "lava", 300_000) == 256
    assert now("og-cvar", "nav", 300_000) == 32 and now("og-reinforce-cvar", "lava", 100_000) == 32


def test_from_json_keeps_the_tasks_and_methods_asked_for_and_current_keeps_the_defaults_now(tmp_path, capsys):
    """The README's table: ``--methods`` picks and orders the pooled rows, ``--current`` drops rows of runs stored
    before a default changed (a label beside the method's name)."""
    run = {"task": "maze", "method": "og-cvar", "seed": 0, "timesteps": 300_000, "budget": 300_000, "seconds": 1.0}
    run.update(untie_at_var=True, normalize_advantage="running", value_baseline="history", noise_sampler=True)
    run["ent_coef"] = "0.01 -> 0"
    run.update(n_episodes=128, greedy={"cvar": -2.0, "mean": 1.0}, stochastic={"cvar": -3.0, "mean": 0.5})
    run["curve"] = [[300_000, -2.0]]
    runs = [run, {**run, "seed": 1, "noise_sampler": False}, {**run, "method": "ppo", "n_episodes": None}]
    runs.append({**run, "task": "lava", "method": "ppo", "n_episodes": None, "greedy": {"cvar": -4.4, "mean": 1.0}})
    path = tmp_path / "runs.json"
    path.write_text(json.dumps({"runs": runs}))

    def table(*options: str) -> list[str]:
        assert main(["reproduce", "benchmarks", "--from-json", str(path), *options, "--out", str(tmp_path)]) == 0
        lines = capsys.readouterr().out.split("\n")
        return [" ".join(line.split()) for line in lines if line.startswith("|") and "---" not in line][1:]

    everything = table()
    assert len(everything) == 4 and any("og-cvar no-sampler | 1 |" in line for line in everything)
    picked = table("--methods", "ppo", "og-cvar", "--current")
    assert [line.split(" | ")[:3] for line in picked] == [  # TASKS' order, then the order asked for
        ["| lava", "ppo", "1"],
        ["| maze", "ppo", "1"],
        ["| maze", "og-cvar", "1"],
    ]
    assert [line.split(" | ")[:2] for line in table("--tasks", "lava")] == [["| lava", "ppo"]]
    assert main(["reproduce", "benchmarks", "--from-json", str(path), "--methods", "cesor"]) == 2
    assert "unknown method 'cesor'" in capsys.readouterr().err
    assert main(["reproduce", "benchmarks", "--from-json", str(path), "--tasks", "bandit", "--out", str(tmp_path)]) == 2
    assert "no runs to tabulate" in capsys.readouterr().err


def test_json_is_saved_run_by_run_and_resume_runs_only_the_rest(tmp_path, capsys, monkeypatch):
    """A protocol cut short keeps its finished runs in ``--json``; ``--resume`` runs only the others."""
    calls: list[int] = []

    def fake_run_one(task_name, method_name, seed, timesteps, checkpoints, eval_episodes):
        calls.append(seed)
        if seed == 1 and calls.count(1) == 1:
            raise RuntimeError("machine lost")  # the first command fails at its second run
        score = {"cvar": 1.0, "mean": 1.0}
        return {"task": task_name, "env_id": bench.TASKS[task_name].env_id, "method": method_name, "seed": seed,
                "seconds": 0.0, "budget": timesteps, "timesteps": timesteps, "greedy": score,
                "stochastic": score, "curve": [[timesteps, 1.0]]}  # fmt: skip

    monkeypatch.setattr(bench, "run_one", fake_run_one)
    path = tmp_path / "runs.json"
    args = ["reproduce", "benchmarks", "--tasks", "bandit", "--methods", "ppo", "--seeds", "3", "--timesteps", "100"]
    args += ["--workers", "1", "--quiet", "--out", str(tmp_path), "--json", str(path)]
    with pytest.raises(RuntimeError, match="machine lost"):
        main(args)
    saved = [run["seed"] for run in json.loads(path.read_text())["runs"]]
    assert 0 in saved and 1 not in saved  # (seed 2 may have finished before the failure was seen)
    capsys.readouterr()
    assert main([*args, "--resume"]) == 0
    assert calls.count(0) == 1 and calls.count(1) == 2  # what was saved is not run again
    assert f"{3 - len(saved)} runs in" in capsys.readouterr().out
    assert sorted(run["seed"] for run in json.loads(path.read_text())["runs"]) == [0, 1, 2]
    assert main([*args[:-2], "--resume"]) == 2
    assert "--resume continues the runs of a --json file" in capsys.readouterr().err


def test_options_that_would_be_ignored_or_overwrite_runs_are_refused(tmp_path, capsys, monkeypatch):
    out = ["--out", str(tmp_path)]
    refused = {
        ("--quick", "--tasks", "bogus"): "--quick sets its own grid and sizes",
        ("--quick", "--seeds", "2"): "drop --seeds 2",
        ("--tasks", "Lava"): "did you mean 'lava'",
        ("--from-json", "x.json", "--timesteps", "5"): "--from-json trains nothing: drop --timesteps 5",
        ("--tasks", "nav", "--methods", "qrdqn-cvar"): "QR-DQN runs only on discrete actions",
    }
    for args, message in refused.items():
        assert main(["reproduce", "benchmarks", *args, *out]) == 2, args
        assert message in capsys.readouterr().err, args
    stored = tmp_path / "runs.json"
    stored.write_text(json.dumps({"runs": []}))
    assert main(["reproduce", "benchmarks", "--tasks", "bandit", "--json", str(stored), *out]) == 2
    assert "exists: --resume keeps its runs" in capsys.readouterr().err
    assert main(["reproduce", "benchmarks", "--from-json", str(stored), "--json", str(stored), *out]) == 2
    assert "is one of the --from-json files" in capsys.readouterr().err
    probe = tmp_path / "probe.json"
    score = {"cvar": 1.0, "mean": 1.0}
    run = {"task": "bandit", "method": "og-cvar-patience32", "seed": 0, "timesteps": 1, "greedy": score,
           "stochastic": score}  # fmt: skip
    probe.write_text(json.dumps({"runs": [run]}))
    assert main(["reproduce", "benchmarks", "--from-json", str(probe), *out]) == 2
    assert "['og-cvar-patience32'] are not this release's" in capsys.readouterr().err
    probe.write_text(json.dumps({"runs": [{"foo": 1}]}))
    assert main(["reproduce", "benchmarks", "--from-json", str(probe), *out]) == 2
    assert "a run lacks 'task'" in capsys.readouterr().err

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "run_one", interrupted)
    fresh = tmp_path / "fresh.json"
    args = ["--tasks", "bandit", "--methods", "ppo", "--seeds", "1", "--workers", "1", "--quiet", "--json", str(fresh)]
    assert main(["reproduce", "benchmarks", *args, *out]) == 130
    assert "interrupted: 0 runs are in" in capsys.readouterr().err and "--resume" not in str(fresh)


def test_checkpoints_cap_the_greedy_scores_of_a_tiny_budget():
    result = bench.run_one("bandit", "og-cvar", 0, 1, 2, 8)  # every = 1 env step; a rollout is many more
    assert len(result["curve"]) == 3  # the two checkpoints and the final policy (it scored every step before)


def test_greedy_trace_counts_the_late_rollouts_at_the_optimum_and_the_states_that_flip(tmp_path, capsys):
    script = load_script("greedy_trace")
    steady, flip = [[0.1, 0.9], [0.8, 0.2]], [[0.1, 0.9], [0.4, 0.6]]
    rows = [{"greedy": g, "probabilities": p} for g, p in [(-9, steady)] * 4 + [(-2, steady), (-5, flip)]]
    share, changing = script.late_summary(rows, optimum=-2.0, epsilon=1.0)
    assert share == 0.5  # the last third: rollouts 5 and 6, one within epsilon
    assert changing == [[1, "0:1 1:1", "0.60 0.40"]]  # state 0 keeps action 1; state 1 flips
    assert script.late_summary(rows, -2.0, 1.0, states=[0])[1] == []
    cells = gym.make("GuardedMaze-v0").unwrapped.cells
    floor = script.acting_states(gym.make("GuardedMaze-v0").unwrapped.tabular())  # no wall, not the goal
    assert floor == [i for i, cell in enumerate(cells) if cell in ".SX"]
    path = tmp_path / "trace.json"
    assert script.main(["--task", "lava", "--quick", "--quiet", "--json", str(path)]) == 0
    assert "last third" in capsys.readouterr().out
    rows = json.loads(path.read_text())["rows"]
    assert len(rows) >= 2 and np.allclose(np.sum(rows[0]["probabilities"], axis=1), 1.0, atol=1e-3)
    assert all(row["greedy"] <= bench.TASKS["lava"].optimum + 1e-9 for row in rows)
    assert script.main(["--from-json", str(path)]) == 0  # the same summary, without training
    out = capsys.readouterr().out
    assert "last third" in out and "final greedy policy's CVaR_0.2" in out


def test_greedy_trace_names_the_state_a_trapped_policy_is_stuck_at():
    from ordergrad_rl.envs.lava_grid import CVAR_POLICY

    script = load_script("greedy_trace")
    mdp = gym.make("RiskyLavaGrid-v0").unwrapped.tabular()
    probabilities = np.full((mdp.n_states, 4), 0.01)
    probabilities[np.arange(mdp.n_states), CVAR_POLICY] = 0.97
    assert script.switch_rows(mdp, probabilities) == []  # at the stationary optimum
    probabilities[10] = [0.004, 0.996, 0.0, 0.0]  # lava seed 6 of 2026-12-05: right, into the lava, below the start
    [row] = script.switch_rows(mdp, probabilities)
    assert row[:3] == [10, "1 (0.996)", "0 (0.004)"]
    assert 0.0 < row[3] < 0.05  # reached by a slip only
    assert row[4] == pytest.approx(bench.TASKS["lava"].optimum, abs=1e-3)


def test_run_seeds_rewrites_the_json_after_each_run_and_prints_its_scores(tmp_path, capsys):
    path, seen = tmp_path / "runs.json", []

    def job(seed):
        if seed == 2:  # the file holds the runs finished before this one
            seen.append(json.loads(path.read_text())["runs"])
        return {"seed": seed, "greedy": {"cvar": -1.5}, "stochastic": {"cvar": -2.25}, "seconds": 3.0}

    runs = bench.run_seeds(job, [1, 2], path, "lava")
    assert [run["seed"] for run in runs] == [1, 2] and [run["seed"] for run in seen[0]] == [1]
    assert json.loads(path.read_text())["runs"] == runs
    assert "lava seed 2: greedy CVaR_0.2 -1.50, sampled -2.25 (3 s)" in capsys.readouterr().out
    assert bench.run_seeds(job, [3], None, "lava")[0]["seed"] == 3  # no file asked for


def test_run_with_agent_builds_the_probes_class_for_its_run_only(monkeypatch):
    from ordergrad_rl.agents import OrderGradPPO

    class Probe(OrderGradPPO):
        pass

    built = []

    def run_one(task, name, seed, timesteps, checkpoints, episodes):
        built.append((bench.episodic_algorithm("ordergrad_ppo"), bench.episodic_algorithm("ordergrad_reinforce")))
        if seed == 1:
            raise RuntimeError("the run failed")
        return {"task": task, "method": name, "seed": seed}

    monkeypatch.setattr(bench, "run_one", run_one)
    monkeypatch.setattr(bench, "METHODS", dict(bench.METHODS))
    method = bench.METHODS["og-cvar"]
    assert bench.run_with_agent("cartpole", method, "og-probe", Probe, 0, 2_000, 20)["method"] == "og-probe"
    assert built[0][0] is Probe and built[0][1].__name__ == "OrderGradREINFORCE"  # only its algo is replaced
    assert bench.METHODS["og-probe"] is method
    with pytest.raises(RuntimeError, match="the run failed"):
        bench.run_with_agent("cartpole", method, "og-probe", Probe, 1, 2_000, 20)
    assert bench.episodic_algorithm("ordergrad_ppo") is OrderGradPPO  # the override is gone, even after a failure


def test_a_seed_run_again_counts_once_whatever_its_env_steps(tmp_path):
    """A rerun of a seed on another machine trains elsewhere (another arithmetic path) and ends at other env steps;
    pooled, it replaces the run before it instead of counting as an eleventh seed. Runs stored before the budget
    was recorded key on their env steps."""
    first = [{**_run("lava", "og-cvar", seed, 1.0), "budget": 300_000, "timesteps": 300_100} for seed in range(2)]
    again = {**_run("lava", "og-cvar", 0, 0.5), "budget": 300_000, "timesteps": 300_040}
    other_budget = {**_run("lava", "og-cvar", 0, 0.7), "budget": 100_000, "timesteps": 100_020}
    no_budget = [{**_run("lava", "og-cvar", 0, 0.2), "timesteps": steps} for steps in (290_000, 310_000)]
    paths = []
    for name, runs in (("first", first), ("again", [again, other_budget, *no_budget])):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps({"runs": runs}))
    runs = bench.read_runs(paths)
    assert len(runs) == 5
    at_300k = [run for run in runs if run.get("budget") == 300_000]
    assert sorted((run["seed"], run["greedy"]["cvar"]) for run in at_300k) == [(0, 0.5), (1, 1.0)]  # the later run
    assert [row["seeds"] for row in bench.summarize(at_300k)] == [2]


def test_a_benchmark_run_records_where_it_ran():
    run = bench.run_one("bandit", "ppo", 0, timesteps=64, checkpoints=1, eval_episodes=5)
    provenance = run["provenance"]
    for key in ("Stable-Baselines3", "PyTorch", "Numpy", "Gymnasium", "cpu", "cpu_flags", "cpu_capability"):
        assert isinstance(provenance[key], str), key
    json.dumps(run)  # stored as it is


def test_runs_on_ray_keep_their_state_under_out(tmp_path, monkeypatch):
    """With ``--address`` the jobs' state and results go to ``<out>/ray``, as the other reproductions' do (they went
    to the system's temporary directory, which the other nodes of a cluster do not read)."""
    seen = {}

    class Stop(Exception):
        pass

    def run_jobs(jobs, workers, address, storage, **kwargs):
        seen.update(address=address, storage=storage)
        raise Stop

    monkeypatch.setattr(bench, "run_jobs", run_jobs)
    argv = ["reproduce", "benchmarks", "--tasks", "bandit", "--methods", "og-cvar", "--seeds", "1", "--timesteps",
            "1000", "--address", "local", "--out", str(tmp_path), "--quiet"]  # fmt: skip
    with pytest.raises(Stop):
        main(argv)
    assert seen == {"address": "local", "storage": tmp_path / "ray"}
