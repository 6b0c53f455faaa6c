"""Soft risk schedules: parsing, the objective in force at each share, the agents' use of them (saved, resumed,
logged), the value baseline, and the few-updates warning."""

from __future__ import annotations

import csv
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure

from ordergrad_rl import OrderGradMaskablePPO, OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.arguments import default_value_baseline
from ordergrad_rl.agents.common.risk_schedules import (
    TIE_AT_MINIMUM,
    RiskSchedule,
    level_in_force,
    objective_in_force,
    parse_risk_schedule,
    share_tied_at_best,
    tie_holds_var,
    tied_at_best,
    tied_share,
    untie_case,
    untied,
)
from ordergrad_rl.core import Objective, lstat_advantage, lstat_value
from ordergrad_rl.core.channels import ChannelObjective, parse_agent_objective


# ---------------------------------------------------------------------------------------------------- parsing
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("none", None),
        (" None", None),
        (False, None),
        ("level", RiskSchedule("level", 0.6)),
        ("mixture", RiskSchedule("mixture", 0.6)),
        ("level:0.5", RiskSchedule("level", 0.5)),
        ("Level", RiskSchedule("level", 0.6)),  # case-insensitive, as objective specs are
        (" MIXTURE:0.5 ", RiskSchedule("mixture", 0.5)),
        ({"kind": "mixture", "fraction": 0.25}, RiskSchedule("mixture", 0.25)),
        (RiskSchedule("level", 0.0), RiskSchedule("level", 0.0)),
        ("mixture:0:0.1", RiskSchedule("mixture", 0.0, mean_share=0.1)),
        ({"kind": "mixture", "fraction": 0, "mean_share": 0.25}, RiskSchedule("mixture", 0.0, mean_share=0.25)),
    ],
)
def test_parse(value, expected):
    assert parse_risk_schedule(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("levels", "kind must be 'level' or 'mixture'"),
        ("level:1.5", r"fraction must be a number in \[0, 1\]"),
        ("level:-0.1", r"fraction must be a number in \[0, 1\]"),
        ("level:soon", "expected 'level', 'mixture'"),
        ({"kind": "level", "speed": 2}, "has no field"),
        ("level:0:0.1", "needs kind 'mixture'"),
        ("mixture:0:1", r"mean_share must be a number in \[0, 1\)"),
        ({"kind": "mixture", "mean_share": True}, r"mean_share must be a number in \[0, 1\)"),
        ("mixture:0:0.1:0.2", "'mixture:<fraction>:<mean_share>'"),
        (0.5, "risk_schedule must be None"),
        (True, "risk_schedule must be None, 'none'"),
    ],
)
def test_bad_schedules_name_the_argument(value, message):
    with pytest.raises(ValueError, match=message) as info:
        parse_risk_schedule(value)
    assert "risk_schedule" in str(info.value)


def test_share_follows_the_fraction_and_callables():
    schedule = RiskSchedule("level", 0.6)
    shares = [schedule.share(p) for p in (1.0, 0.7, 0.4, 0.1, 0.0)]
    assert shares == pytest.approx([0.0, 0.5, 1.0, 1.0, 1.0])
    assert RiskSchedule("level", 0.0).share(1.0) == 1.0
    assert RiskSchedule("mixture", schedule=lambda p: 1 - p).share(0.25) == pytest.approx(0.75)
    with pytest.raises(ValueError, match=r"a share must be in \[0, 1\]"):
        RiskSchedule("mixture", schedule=lambda p: 2.0).share(0.5)


def test_mean_share_scales_the_share_and_round_trips_as_a_string():
    schedule = RiskSchedule("mixture", 0.5, mean_share=0.25)
    assert [schedule.share(p) for p in (1.0, 0.8, 0.5, 0.0)] == pytest.approx([0.0, 0.3, 0.75, 0.75])
    assert RiskSchedule("mixture", 0.0, mean_share=0.1).share(1.0) == pytest.approx(0.9)
    assert RiskSchedule("mixture", schedule=lambda p: 1 - p, mean_share=0.5).share(0.0) == pytest.approx(0.5)
    for text in ("mixture:0:0.1", "mixture:0.5:0.25", "level:0.6", "mixture:0.6"):
        assert str(parse_risk_schedule(text)) == text and parse_risk_schedule(str(parse_risk_schedule(text)))


def test_a_tail_is_blind_to_success_above_a_tied_var_and_a_mean_share_ranks_it():
    """The premise of ``mean_share``, by the estimator: CVaR_0.2@16 of 2 costly episodes, 50 time-outs tied at the
    VaR and 12 successes gives every success exactly a time-out's advantage; with 10% of the mean's weights the
    successes get more than the time-outs, the better success more, and the costly episodes stay the worst."""
    target = Objective.parse("cvar0.2", 16)
    returns = np.concatenate([np.full(2, -100.0), np.full(50, -40.0), -2.0 - 0.1 * np.arange(12)])
    blind = lstat_advantage(returns, target)
    assert np.all(blind[2:] == blind[2]) and blind[0] < 0 < blind[2]
    schedule = parse_risk_schedule("mixture:0:0.1")
    mixed, _ = objective_in_force(target, schedule, schedule.share(0.5))
    np.testing.assert_allclose(mixed.weights, 0.1 / 16 + 0.9 * target.weights, atol=1e-12)
    ranked = lstat_advantage(returns, mixed)
    assert ranked[0] < 0 < ranked[2] < ranked[-1] < ranked[52]
    assert np.all(np.diff(ranked[52:]) < 0)  # -2.0 first, then ever lower successes


# ---------------------------------------------------------------------------------------------------- in force
@pytest.mark.parametrize(
    ("target", "share", "expected"),
    [
        ("cvar0.2@16", 0.0, "mean"),
        ("cvar0.2@16", 0.5, "cvar0.6@16"),
        ("cvar0.2@16", 0.9, "cvar0.28@16"),
        ("cvar0.2@16", 1.0, "cvar0.2@16"),
        ("uppertail0.1@10", 0.5, "uppertail0.55@10"),
        ("top2@8", 0.5, "top5@8"),
        ("bot1@8", 0.0, "mean"),
        ("max@8", 0.5, "top5@8"),
        ("quantile0.1@32", 0.0, "quantile0.5@32"),
        ("quantile0.1@32", 0.5, "quantile0.3@32"),
        ("median@9", 0.3, "quantile0.5@9"),
    ],
)
def test_level_schedule(target, share, expected):
    objective, gcvar = objective_in_force(Objective.parse(target), RiskSchedule("level"), share)
    assert gcvar is None and objective == Objective.parse(expected)


def test_level_of_gcvar_moves_its_own_level_and_starts_at_the_mean():
    target = Objective.parse("cvar0.2@16")
    assert objective_in_force(target, RiskSchedule("level"), 0.5, gcvar_alpha=0.2) == (target, 0.6)
    objective, gcvar = objective_in_force(target, RiskSchedule("level"), 0.0, gcvar_alpha=0.2)
    assert (str(objective), gcvar) == ("mean", None)
    assert level_in_force(target, 0.6) == 0.6


@pytest.mark.parametrize(
    ("objective", "level"),
    [("min@8", 0.125), ("max@8", 0.125), ("bot1@8", 0.125), ("median@9", 0.5), ("quantile0.5@9", 0.5), ("mean", 1.0)],
)
def test_level_in_force_of_every_family_the_level_schedule_moves(objective, level):
    # The schedule ends at the target itself: min, max and the median had no level there (risk/level went missing).
    assert level_in_force(Objective.parse(objective), None) == level


@pytest.mark.parametrize("target", ["min@8", "max@8", "median@9"])
def test_agent_logs_the_level_once_the_schedule_reaches_a_min_max_or_median_target(target, tmp_path):
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", objective=target, n_episodes=16, risk_schedule="level:0.5", seed=0
    )
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(16 * 6)
    rows = list(csv.DictReader((tmp_path / "progress.csv").read_text().splitlines()))
    assert [float(row["risk/schedule"]) for row in rows][-2:] == [1.0, 1.0]
    assert [row["risk/level"] for row in rows][-2:] == [str(level_in_force(model.objective, None))] * 2


@pytest.mark.parametrize("target", ["cvar0.2@8", "top2@8", "trim2@8", "gmd@6", "alpha[0.5,0,0.5]", "rank2@5"])
@pytest.mark.parametrize("share", [0.0, 0.3, 0.75])
def test_mixture_is_the_mixed_l_statistic(target, share):
    """The mixture's weights are (1 - s) mean + s alpha, and its batch value and advantages are the same mixture
    of the sample mean's (the U-statistic of uniform weights is the sample mean, whatever k) and the target's."""
    objective = Objective.parse(target)
    mixed, _ = objective_in_force(objective, RiskSchedule("mixture"), share)
    k = objective.k
    np.testing.assert_allclose(mixed.weights, (1 - share) / k + share * objective.weights, atol=1e-12)
    rewards = np.random.default_rng(0).normal(size=(5, 12))
    np.testing.assert_allclose(
        lstat_value(rewards, mixed),
        (1 - share) * rewards.mean(axis=-1) + share * lstat_value(rewards, objective),
        atol=1e-10,
    )
    leave_one_out = rewards - (rewards.sum(axis=-1, keepdims=True) - rewards) / (rewards.shape[-1] - 1)
    np.testing.assert_allclose(
        k * lstat_advantage(rewards, mixed),
        (1 - share) * leave_one_out + share * k * lstat_advantage(rewards, objective),
        atol=1e-9,
    )


def test_mixture_applies_to_every_channel():
    target = ChannelObjective.parse("reward=top2@4 + 0.5*length=bot2@4")
    mixed, _ = objective_in_force(target, RiskSchedule("mixture"), 0.5)
    for before, after in zip(target.channels, mixed.channels, strict=True):
        assert (before.name, before.weight) == (after.name, after.weight)
        np.testing.assert_allclose(after.objective.weights, 0.5 / 4 + 0.5 * before.objective.weights)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"objective": "mean", "risk_schedule": "level"}, "objective='mean' has no risk"),
        ({"objective": "trim2@8", "risk_schedule": "level"}, "use risk_schedule='mixture'"),
        ({"objective": "gcvar0.2", "risk_schedule": "mixture"}, "GCVaR's are not rank weights"),
        ({"objective": "cvar0.2", "risk_schedule": "level:2"}, r"fraction must be a number in \[0, 1\]"),
    ],
)
def test_agents_refuse_bad_schedules_before_building_the_env(kwargs, message):
    for cls in (OrderGradPPO, OrderGradREINFORCE):
        with pytest.raises(ValueError, match=message):
            cls("MlpPolicy", "NoSuchEnv-v0", n_episodes=16, **kwargs)  # the schedule fails first


# ---------------------------------------------------------------------------------------------------- agents
class _Levels(BaseCallback):
    def __init__(self) -> None:
        super().__init__()
        self.shares: list[float] = []
        self.objectives: list[str] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.shares.append(self.model._risk_share)
        self.objectives.append(str(self.model._risk_in_force()[0]))


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_agent_moves_from_the_mean_to_the_target_and_logs_it(cls, tmp_path):
    model = cls("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, risk_schedule="level:0.5", seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    levels = _Levels()
    model.learn(80, callback=levels)  # one-step episodes: 10 rollouts
    assert levels.shares[0] == 0.0 and levels.objectives[0] == "mean"
    assert levels.shares == sorted(levels.shares) and levels.shares[-1] == 1.0
    assert levels.objectives[-1] == "cvar0.25@4"
    log = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert "risk/schedule" in log and "risk/level" in log
    assert model.hparams()["risk_schedule"] == "level:0.5"


def test_schedule_is_saved_and_a_resumed_learn_goes_on(tmp_path):
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="top1@4", n_episodes=8, risk_schedule="mixture:1")
    model.learn(40)
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = OrderGradPPO.load(path, env=model.get_env())
    assert loaded.risk_schedule == RiskSchedule("mixture", 1.0)
    levels = _Levels()
    loaded.learn(40, reset_num_timesteps=False, callback=levels)  # progress from 40 of 80 steps on
    assert 0.45 <= levels.shares[0] <= 0.55 and levels.shares[-1] < 1.0


def test_mean_share_is_in_force_saved_and_older_schedules_load_without_it(tmp_path):
    schedule = "mixture:0:0.1"
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, risk_schedule=schedule)
    model.learn(16)
    target = model.objective
    np.testing.assert_allclose(model._risk_in_force()[0].weights, 0.1 / target.k + 0.9 * target.weights, atol=1e-12)
    assert model.hparams()["risk_schedule"] == "mixture:0:0.1"
    model.save(tmp_path / "model.zip")
    loaded = OrderGradPPO.load(tmp_path / "model.zip", env=model.get_env())
    assert loaded.risk_schedule == RiskSchedule("mixture", 0.0, mean_share=0.1)
    older = RiskSchedule("mixture", 0.5)
    object.__delattr__(older, "mean_share")  # a schedule pickled before the field existed
    assert older.share(0.0) == 1.0 and str(older) == "mixture:0.5"


@pytest.mark.parametrize(
    ("env", "kwargs", "expected"),
    [
        ("CartPole-v1", {}, RiskSchedule("level")),  # a lower tail on long episodes (500 steps)
        ("CartPole-v1", {"objective": "quantile0.1"}, RiskSchedule("level")),
        ("CartPole-v1", {"objective": "bot2@16"}, RiskSchedule("level")),
        # Without "@k" the level m / k is read once k is bound to the rollout's size (a crash before 2026-12-06).
        ("CartPole-v1", {"objective": "bot2"}, RiskSchedule("level")),
        ("CartPole-v1", {"objective": "min"}, RiskSchedule("level")),
        ("RiskyShortcutNav-v2", {"objective": "min"}, RiskSchedule("level")),
        ("CartPole-v1", {"risk_schedule": "none"}, None),  # asked for explicitly
        ("CartPole-v1", {"risk_schedule": False}, None),
        ("CartPole-v1", {"risk_schedule": "mixture"}, RiskSchedule("mixture")),
        ("CartPole-v1", {"objective": "gcvar0.2"}, None),  # a peer method: the schedule it is given
        ("CartPole-v1", {"objective": "top4@32"}, None),  # an upper tail: not measured
        ("CartPole-v1", {"objective": "trim2@32"}, None),  # no level
        ("CartPole-v1", {"objective": "mean"}, None),
        ("GuardedMaze-v0", {}, None),  # short episodes (40 steps), categorical actions
        ("RiskyShortcutNav-v2", {}, RiskSchedule("level")),  # short episodes (50 steps), continuous actions
        ("RiskyShortcutNav-v2", {"objective": "gcvar0.2"}, None),
        ("SyntheticTailRisk-v0", {}, None),  # continuous actions, no time limit
    ],
)
def test_long_episodes_get_the_level_schedule_by_default(env, kwargs, expected):
    model = OrderGradPPO("MlpPolicy", env, **{"objective": "cvar0.2", **kwargs})
    assert model.risk_schedule == expected
    assert model.hparams()["risk_schedule"] == (str(expected) if expected else "none")


def test_reinforce_takes_no_long_episode_schedule_and_saves_keep_the_schedule(tmp_path):
    assert OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective="cvar0.2").risk_schedule is None
    assert OrderGradREINFORCE("MlpPolicy", "GuardedMaze-v0", objective="cvar0.2").risk_schedule is None
    # Continuous actions with a time limit: every episodic agent (since 2026-12-02), at any length.
    for env in ("RiskyShortcutNav-v2", "Pendulum-v1"):
        assert OrderGradREINFORCE("MlpPolicy", env, objective="cvar0.2").risk_schedule == RiskSchedule("level")
    assert OrderGradREINFORCE("MlpPolicy", "RiskyShortcutNav-v2", objective="gcvar0.2").risk_schedule is None
    assert OrderGradREINFORCE("MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.2").risk_schedule is None
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2")
    model.save(path := tmp_path / "model.zip")
    assert OrderGradPPO.load(path).risk_schedule == RiskSchedule("level")
    # A save from before risk_schedule existed trained without one, with or without an env at hand.
    model.save(old := tmp_path / "old.zip", exclude=["risk_schedule"])
    assert OrderGradPPO.load(old, env=model.get_env()).risk_schedule is None
    unscheduled = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", risk_schedule="none")
    unscheduled.save(path)
    assert OrderGradPPO.load(path, env=model.get_env()).risk_schedule is None


@pytest.mark.parametrize("cls", [OrderGradRecurrentPPO, OrderGradMaskablePPO])
def test_contrib_variants_take_a_schedule(cls):
    policy = "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy"
    env = "RiskyBandit-v0"
    if cls is OrderGradMaskablePPO:
        from sb3_contrib.common.envs import InvalidActionEnvDiscrete

        env = InvalidActionEnvDiscrete(dim=4, n_invalid_actions=1)
    model = cls(policy, env, objective="cvar0.5", n_episodes=4, risk_schedule="level", seed=0)
    assert model.risk_schedule == RiskSchedule("level") and model.untie_tail is True
    assert cls(policy, env, objective="cvar0.5", n_episodes=4, untie_tail=False).untie_tail is False
    model._update_risk()
    assert str(model._risk_in_force()[0]) == "mean"


# ---------------------------------------------------------------------------------------------------- tied tails
#: Every episode of a 64-episode batch timed out (the tests of the level moves; time-outs alone: below).
ALL_TIMED_OUT = np.ones(64, bool)


def _tied(n: int, ties: int, value: float = -40.0) -> np.ndarray:
    """``ties`` time-outs at ``value`` and ``n - ties`` distinct better returns."""
    return np.concatenate([np.full(ties, value), value + 1.0 + np.arange(n - ties)])


def test_a_tied_tail_is_blind_and_the_untied_level_sees_past_it():
    """The premise, by the estimator: CVaR_0.2@16 of 64 episodes whose worst 81% tie (time-outs) gives every episode
    an exactly zero advantage, and whose worst 41% tie a 26 times weaker one (few 16-subsets have an untied
    tail); at the untied level the better episodes are ranked (the best gets the largest advantage)."""
    target = Objective.parse("cvar0.2", 16)
    returns = _tied(64, 52)
    assert np.all(lstat_advantage(returns, target) == 0.0)
    moved = untied(target, None, returns, ALL_TIMED_OUT)[0]
    assert str(moved) == "mean" and lstat_advantage(returns, moved)[-1] > 0
    returns = _tied(64, 26)
    moved, gcvar = untied(target, None, returns, ALL_TIMED_OUT)
    assert str(moved) == "cvar0.61@16" and gcvar is None  # f + l = 26/64 + 0.2 = 0.606, rounded up
    weak, ranked = lstat_advantage(returns, target), lstat_advantage(returns, moved)
    assert np.abs(ranked).max() > 20 * np.abs(weak).max()
    assert np.all(ranked[:26] < 0) and ranked[-1] == ranked.max() > 0


@pytest.mark.parametrize(
    ("target", "ties", "expected"),
    [
        ("cvar0.2@16", 12, "cvar0.2@16"),  # 12/64 < 0.2: the tail holds untied episodes, nothing moves
        ("cvar0.2@16", 13, "cvar0.41@16"),  # 13/64 + 0.2
        ("cvar0.2@16", 58, "mean"),  # f + l >= 1: the mean
        ("cvar0.2@16", 64, "mean"),  # all tied: every objective is blind; the mean is the schedule's start
        ("bot2@16", 32, "bot10@16"),  # l = 2/16: ceil((0.5 + 0.125) * 16)
        ("min@16", 16, "bot5@16"),  # l = 1/16: (0.25 + 0.0625) * 16 = 5
        ("quantile0.1@16", 16, "quantile0.35@16"),  # toward the median
        ("quantile0.1@16", 40, "quantile0.5@16"),  # the median, the level schedule's start
        ("top2@16", 60, "top2@16"),  # upper tails, no level, mixtures: as given
        ("max@16", 60, "max@16"),
        ("gmd@16", 60, "gmd@16"),
        ("mean", 60, "mean"),
    ],
)
def test_untied_moves_lower_tails_along_the_level_schedule(target, ties, expected):
    objective = Objective.parse(target)
    assert str(untied(objective, None, _tied(64, ties), ALL_TIMED_OUT)[0]) == expected


def test_untied_moves_gcvar_and_leaves_channels():
    cvar = Objective.parse("cvar0.2", 16)
    assert untied(cvar, 0.2, _tied(64, 32), ALL_TIMED_OUT) == (cvar, 0.7)  # GCVaR's own level: 0.5 + 0.2
    assert untied(cvar, 0.2, _tied(64, 8), ALL_TIMED_OUT) == (cvar, 0.2)
    assert untied(cvar, 0.2, _tied(64, 60), ALL_TIMED_OUT)[1] is None  # the mean
    channels = ChannelObjective.parse("reward=cvar0.2@16 + 0.5*length=bot2@16")
    assert untied(channels, None, _tied(64, 60), ALL_TIMED_OUT) == (channels, None)
    assert tied_share(np.array([3.0, 1.0, 1.0, 2.0]), np.ones(4, bool)) == 0.5
    assert tied_share(np.array([3.0, 1.0, 1.0, 2.0]), np.array([True, False, True, True])) == 0.25


def test_only_time_outs_are_untied():
    """Ties of terminated episodes are outcomes (a sure payoff); only the tied time-outs count toward ``f``, unless
    the tie is the lowest return seen in training (``floor``: the next test)."""
    target, returns = Objective.parse("cvar0.2", 16), _tied(64, 32)
    time_outs = np.zeros(64, bool)
    assert untied(target, None, returns, time_outs) == (target, None)
    time_outs[:20] = True  # 20 of the 32 tied episodes timed out: f = 20/64
    assert str(untied(target, None, returns, time_outs)[0]) == "cvar0.52@16"
    time_outs[:] = False
    time_outs[40:] = True  # time-outs, but not at the lowest return
    assert untied(target, None, returns, time_outs) == (target, None)


def test_terminated_ties_at_the_floor_are_untied():
    """A binary success (FrozenLake: every failure returns 0, terminated) at a success rate below 0.8: CVaR_0.2 is 0
    for the batch and every weight is zero. At the floor (nothing worse seen) the terminated ties count as the
    time-outs do, and the level moves past them; a tie that is not the batch's minimum never counts."""
    target = Objective.parse("cvar0.2", 16)
    returns = np.concatenate([np.zeros(48), np.ones(16)])  # 25% successes
    terminated = np.zeros(64, bool)
    blind = np.abs(lstat_advantage(returns, target)).max()
    assert blind < 1e-7  # nonzero only for the 16-subsets with 13 successes or more
    assert untied(target, None, returns, terminated) == (target, None)
    assert tied_share(returns, terminated) == 0.0 and tied_share(returns, terminated, terminated=True) == 0.75
    moved = untied(target, None, returns, terminated, floor=True)[0]
    assert str(moved) == "cvar0.95@16"  # f + l = 0.75 + 0.2
    advantages = lstat_advantage(returns, moved)
    assert np.all(advantages[48:] > 0) and np.all(advantages[:48] < 0)  # the successes are ranked above
    assert np.abs(advantages).min() > 1e5 * blind
    assert untie_case(target, None, returns, terminated, floor=True) == TIE_AT_MINIMUM
    assert untie_case(target, None, returns, terminated) is None
    costly = np.concatenate([[-5.0], returns[1:]])  # a worse episode below the tie: no tie at the minimum
    assert untied(target, None, costly, terminated, floor=True) == (target, None)
    assert untied(target, None, _tied(64, 12), terminated, floor=True) == (target, None)  # 12/64 < 0.2


def test_a_tie_at_the_var_above_a_costly_event_is_untied_with_a_mean_share():
    """The maze's early batches: 2 costly episodes below 50 time-outs tied at the VaR and 12 successes. The tie is not
    the minimum, so the level does not move; the rollout trains 0.9 * CVaR + 0.1 * mean, which ranks the successes
    above the time-outs and keeps the costly episodes the worst."""
    target = Objective.parse("cvar0.2", 16)
    returns = np.concatenate([np.full(2, -100.0), np.full(50, -40.0), -2.0 - 0.1 * np.arange(12)])
    time_outs = np.arange(64) < 52
    time_outs[:2] = False  # the costly episodes terminated
    assert tied_share(returns, time_outs) == 0.0 and tie_holds_var(returns, time_outs, 0.2)
    moved, gcvar = untied(target, None, returns, time_outs)
    assert gcvar is None
    np.testing.assert_allclose(moved.weights, 0.1 / 16 + 0.9 * target.weights, atol=1e-12)
    ranked = lstat_advantage(returns, moved)
    assert ranked[0] < ranked[2] < ranked[-1] and np.all(ranked[2:52] == ranked[2])
    assert untied(target, 0.2, returns, time_outs) == (target, 0.2)  # GCVaR's weights do not mix


@pytest.mark.parametrize(
    ("case", "held"),
    [
        ("tie below the level", False),  # 12 of 64 tied: the tail ranks untied episodes
        ("nothing above", False),  # the tie is the best return (CartPole's 500): nothing is blind
        ("terminated tie", False),  # a tie of outcomes is ranked as it is
        ("var above the tie", False),  # 40 costly episodes: the VaR is theirs
        ("held", True),
    ],
)
def test_tie_holds_var_only_for_time_outs_tied_at_the_var_with_better_episodes(case, held):
    returns = np.concatenate([np.full(4, -100.0), np.full(40, -40.0), np.arange(20.0)])
    time_outs = np.zeros(64, bool)
    time_outs[4:44] = case != "terminated tie"
    if case == "tie below the level":
        time_outs[16:44] = False
    elif case == "nothing above":
        returns[4:], time_outs[4:] = 500.0, True
    elif case == "var above the tie":
        returns[:40] = -100.0 - np.arange(40)
    assert tie_holds_var(returns, time_outs, 0.2) is held


class _TimeOutOrPay(gym.Env):
    """One step: actions 0-2 time out (truncated, exactly -10: a tie), action 3 pays a distinct uniform amount in
    (0, 1) and terminates. ``terminate=True``: actions 0-2 terminate too (an outcome, not a time-out). The first
    ``worse_first`` episodes end at -20 (terminated) whatever the action: a worse return seen before the ties."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, terminate: bool = False, worse_first: int = 0) -> None:
        self.terminate, self.worse_first, self.episodes = terminate, worse_first, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.episodes += 1
        if self.episodes <= self.worse_first:
            return np.zeros(1, np.float32), -20.0, True, False, {}
        pays = int(action) == 3
        reward = float(self.np_random.uniform()) if pays else -10.0
        ends = pays or self.terminate
        return np.zeros(1, np.float32), reward, ends, not ends, {}


class _Trained(BaseCallback):
    """The objective each rollout was trained at."""

    def __init__(self) -> None:
        super().__init__()
        self.objectives: list[str] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.objectives.append(str(self.model._rollout_risk[0]))


def _pay_probability(model) -> float:
    obs, _ = model.policy.obs_to_tensor(np.zeros((1, 1), np.float32))
    with th.no_grad():
        return float(model.policy.get_distribution(obs).distribution.probs[0, 3])


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_agents_untie_a_tied_tail_by_default_and_log_it(cls, tmp_path):
    """Three quarters of a uniform policy's episodes time out at -10: every 32-subset of 64 has a tied CVaR_0.2
    tail, so the target's weights are all zero and the policy stays where it is; untied (the default), the rollout
    trains near the mean and learns to pay. The same ties from terminated episodes are untied too while nothing
    worse has been seen (a floor: FrozenLake's failures), and left as they are above a worse return seen before."""
    kwargs = {"objective": "cvar0.2", "n_episodes": 64, "seed": 0, "ent_coef": 0.0}  # only the weights move it
    kwargs["value_baseline"] = False  # nor a baseline's terms
    model = cls("MlpPolicy", _TimeOutOrPay(), **kwargs)
    assert model.untie_tail is True and model.hparams()["untie_tail"] is True
    model.set_logger(configure(str(tmp_path), ["csv"]))
    trained = _Trained()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(64 * 5, callback=trained)
        off = cls("MlpPolicy", _TimeOutOrPay(), untie_tail=False, **kwargs)
        before = _pay_probability(off)
        off.learn(64 * 5, callback=(trained_off := _Trained()))
    assert trained.objectives[0].startswith("cvar0.") and float(trained.objectives[0][4:8]) >= 0.5
    assert trained_off.objectives == ["cvar0.2@32"] * 5
    assert _pay_probability(model) > before + 0.01 and _pay_probability(off) == pytest.approx(before, abs=1e-6)
    log = (tmp_path / "progress.csv").read_text().splitlines()[0].split(",")
    assert "risk/tied" in log and "risk/level" in log
    floor = cls("MlpPolicy", _TimeOutOrPay(terminate=True), **kwargs)  # terminated ties, nothing worse seen
    before = _pay_probability(floor)
    # One -20 in the first rollout: the terminated ties above it are outcomes, ranked as they are.
    outcomes = cls("MlpPolicy", _TimeOutOrPay(terminate=True, worse_first=1), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        floor.learn(64 * 5, callback=(trained_floor := _Trained()))
        outcomes.learn(64 * 2, callback=(trained_outcomes := _Trained()))
    assert trained_floor.objectives[0].startswith("cvar0.") and float(trained_floor.objectives[0][4:8]) >= 0.5
    assert _pay_probability(floor) > before + 0.01
    assert trained_outcomes.objectives == ["cvar0.2@32"] * 2


class _CostlyTimeOutOrPay(gym.Env):
    """One step of 8 actions: action 0 costs -100 (terminated), actions 1-6 time out (truncated, exactly -10), action
    7 pays a distinct uniform amount in (0, 1) (terminated): the guarded maze's early batches in one step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(8)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        action = int(action)
        reward = -100.0 if action == 0 else float(self.np_random.uniform()) if action == 7 else -10.0
        ends = action in (0, 7)
        return np.zeros(1, np.float32), reward, ends, not ends, {}


def _probabilities(model) -> np.ndarray:
    obs, _ = model.policy.obs_to_tensor(np.zeros((1, 1), np.float32))
    with th.no_grad():
        return model.policy.get_distribution(obs).distribution.probs[0].numpy()


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_agents_rank_success_above_a_tie_at_the_var(cls, tmp_path):
    """A uniform policy's batch: 1/8 costly, 3/4 time-outs tied at the VaR, 1/8 paying. CVaR_0.2 alone only learns to
    avoid the cost (paying and timing out keep their ratio); untied (the default), the mean's share makes paying
    grow against timing out."""
    lr = 3e-3 if cls is OrderGradPPO else 1e-2  # REINFORCE takes one step per rollout, PPO ten epochs
    kwargs = {"objective": "cvar0.2", "n_episodes": 64, "seed": 0, "ent_coef": 0.0, "learning_rate": lr}
    pays = {}
    for untie in (True, False):
        model = cls("MlpPolicy", _CostlyTimeOutOrPay(), untie_tail=untie, **kwargs)
        model.set_logger(configure(str(tmp_path / str(untie)), ["csv"]))
        model.learn(64 * 20, callback=(trained := _Trained()))
        if untie:  # logged: 1 while the tie holds the VaR (at first), 0 once the cost is avoided (a tie at the minimum)
            assert _logged(tmp_path / str(untie), "risk/tie_at_var") == {0.0, 1.0}
        probs = _probabilities(model)
        assert probs[0] < 0.05  # both learn to avoid the cost
        pays[untie] = probs[7]
        assert (trained.objectives[0] == "cvar0.2@32") is not untie
    assert pays[True] > 0.5 and pays[False] < 0.3


def _with_rollout(model, returns: np.ndarray, time_outs: np.ndarray) -> None:
    """Put a finalized rollout of one-step episodes with these returns and time-outs in ``model``'s buffer."""
    buffer = model.rollout_buffer
    buffer.episode_returns = buffer.rewards = np.asarray(returns, dtype=np.float64)
    buffer.episode_time_outs = np.asarray(time_outs, dtype=bool)
    buffer.episode_index, buffer.episode_step = np.arange(len(returns)), np.zeros(len(returns), dtype=np.int64)
    buffer.episode_channels = {}


def test_groups_untie_their_own_tails(tmp_path):
    """With ``group_size`` a group's objective is its own, and so is its tie. Group 0's lower half times out at -10:
    it trains at cvar0.75@4; group 1 has no tie and trains at the target, exactly as if alone (read from the pooled
    rollout, whose lowest quarter is group 0's tie, both trained at cvar0.5@4). A tie that a worse return of another
    group hides from the pooled rollout is untied in its group too; groups untied alike train one objective."""
    kwargs = {"n_episodes": 16, "group_size": 8, "normalize_advantage": False, "value_baseline": False}
    model = OrderGradREINFORCE("MlpPolicy", _TimeOutOrPay(), objective="cvar0.25", **kwargs)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    target = model.objective
    tied, other = np.r_[np.full(4, -10.0), 0.1, 0.2, 0.3, 0.4], np.arange(-5.0, 3.0)
    time_outs = np.arange(16) < 4
    _with_rollout(model, np.r_[tied, other], time_outs)
    model._compute_advantages()
    moved = untied(target, None, tied, time_outs[:8])[0]
    assert str(target) == "cvar0.25@4" and str(moved) == "cvar0.75@4"
    assert model._rollout_risk == ((moved, target), (None, None))
    advantages = model.rollout_buffer.advantages
    np.testing.assert_array_equal(advantages[:8], (4 * lstat_advantage(tied, moved)).astype(np.float32))
    np.testing.assert_array_equal(advantages[8:], (4 * lstat_advantage(other, target)).astype(np.float32))
    model._record_rollout_logs()  # the mean level over the groups, the share of episodes tied in their group
    logged = model.logger.name_to_value
    assert (logged["risk/level"], logged["risk/tied"], logged["risk/tie_at_var"]) == (0.5, 0.25, 0.0)
    _with_rollout(model, np.r_[tied, -20.0, other[1:]], time_outs)  # pooled, the lowest return is not a tie
    model._compute_advantages()
    assert model._rollout_risk == ((moved, target), (None, None))
    _with_rollout(model, np.r_[tied, tied], np.arange(16) % 8 < 4)
    model._compute_advantages()
    assert model._rollout_risk == (moved, None)


def test_saves_from_before_the_tie_at_the_var_train_as_they_did(tmp_path):
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8)
    model.save(path := tmp_path / "model.zip")
    assert model.untie_at_var is True and OrderGradPPO.load(path).untie_at_var is True
    model.save(old := tmp_path / "old.zip", exclude=["untie_at_var"])
    assert OrderGradPPO.load(old).untie_at_var is False
    returns = np.concatenate([np.full(2, -100.0), np.full(50, -40.0), -2.0 - 0.1 * np.arange(12)])
    target = Objective.parse("cvar0.2", 16)
    assert untied(target, None, returns, np.arange(64) < 52, at_var=False) == (target, None)


def test_saves_from_before_the_floor_rule_keep_terminated_ties(tmp_path):
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8)
    model.save(path := tmp_path / "model.zip")
    assert model.untie_terminated is True and OrderGradPPO.load(path).untie_terminated is True
    model.save(old := tmp_path / "old.zip", exclude=["untie_terminated"])
    loaded = OrderGradPPO.load(old)
    assert loaded.untie_terminated is False and loaded._at_floor() is False  # before any rollout: no floor either


@pytest.mark.parametrize("untie", [True, False])
def test_untie_tail_is_saved_and_a_bad_value_is_named(untie, tmp_path):
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, untie_tail=untie)
    path = tmp_path / "model.zip"
    model.save(path)
    with path.open("rb") as file:  # a file object too: the load reads it twice
        assert OrderGradPPO.load(file).untie_tail is untie
    with pytest.raises(ValueError, match="untie_tail must be True or False"):
        OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, untie_tail="yes")


class _SameReturn(gym.Env):
    """One step, whatever the action: reward 1, terminated; from episode ``worse_first`` on (before it: a distinct
    worse amount in (-1, 0)). Every rollout after those first episodes ties."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self, worse_first: int = 0) -> None:
        self.worse_first, self.episodes = worse_first, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.episodes += 1
        worse = self.episodes <= self.worse_first
        return np.zeros(1, np.float32), -float(self.np_random.uniform()) if worse else 1.0, True, False, {}


def test_tied_at_best_is_a_tie_at_the_top_after_worse_returns():
    assert tied_at_best(np.full(4, 500.0), (9.0, 500.0))  # CartPole solved: every episode at the limit
    assert tied_at_best(np.full(4, 500.0), (9.0, 480.0))  # a new best
    assert not tied_at_best(np.full(4, -500.0), None)  # the first rollout: nothing seen
    assert not tied_at_best(np.full(4, -500.0), (-500.0, -500.0))  # Acrobot at the start: nothing better or worse
    assert not tied_at_best(np.full(4, -500.0), (-500.0, -90.0))  # a tie at the bottom
    assert not tied_at_best(np.array([500.0, 500.0, 499.0, 500.0]), (9.0, 500.0))  # not a tie


def test_share_tied_at_best_counts_the_tie_at_the_top_after_worse_returns():
    assert share_tied_at_best(np.array([500.0, 500.0, 310.0, 500.0]), (9.0, 500.0)) == 0.75  # one failure
    assert share_tied_at_best(np.array([500.0, 500.0, 310.0, 500.0]), (9.0, 480.0)) == 0.75  # a new best
    assert share_tied_at_best(np.array([480.0, 480.0, 310.0, 500.0]), (9.0, 480.0)) == 0.0  # one episode at the top
    assert share_tied_at_best(np.array([470.0, 470.0, 310.0]), (9.0, 480.0)) == 0.0  # below the best seen
    assert share_tied_at_best(np.full(4, -500.0), (-500.0, -500.0)) == 0.0  # nothing worse seen
    assert share_tied_at_best(np.full(4, 500.0), None) == 0.0  # the first rollout
    rng = np.random.default_rng(0)  # brute force: a share of 1 is exactly tied_at_best
    for _ in range(2000):
        returns = rng.integers(0, 4, size=int(rng.integers(2, 6))).astype(float)
        seen = None if rng.random() < 0.1 else tuple(sorted(rng.integers(0, 4, size=2).astype(float)))
        share = share_tied_at_best(returns, seen)
        assert (share == 1.0) == tied_at_best(returns, seen)
        top = returns.max()
        if share > 0:
            assert share == np.mean(returns == top) and seen[0] < top >= seen[1]


class _PartlyTied(gym.Env):
    """One step: reward 1 in 3 of every 4 episodes, else a distinct amount in (-1, 0); registered with a 200-step
    limit, so that OrderGradPPO's long-episode defaults apply."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(4)

    def __init__(self) -> None:
        self.episodes = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.episodes += 1
        reward = -float(self.np_random.uniform()) if self.episodes % 4 == 0 else 1.0
        return np.zeros(1, np.float32), reward, True, False, {}


gym.register("ordergrad-test/PartlyTied-v0", entry_point=_PartlyTied, max_episode_steps=200)


@pytest.mark.parametrize("when_tied", [False, True])
def test_on_long_episodes_a_partly_tied_rollout_gets_the_bonus_of_its_untied_share(when_tied, tmp_path):
    """6 of 8 episodes at the best return seen: the bonus times 2/8 (entropy_when_tied keeps it whole)."""
    model = OrderGradPPO(
        "MlpPolicy", "ordergrad-test/PartlyTied-v0", objective="cvar0.25", n_episodes=8, seed=0,
        entropy_when_tied=when_tied,
    )  # fmt: skip
    assert model.entropy_by_untied_share
    model.set_logger(configure(str(tmp_path), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(8 * 4)
    # The first rollout has nothing seen before it: the whole bonus.
    assert _logged(tmp_path, "train/ent_coef") == ({0.01} if when_tied else {0.01, 0.0025})
    model.save(path := tmp_path / "model.zip")
    assert OrderGradPPO.load(path).entropy_by_untied_share
    # A save from before the rule trained with the whole bonus on such rollouts and resumes so.
    model.save(old := tmp_path / "old.zip", exclude=["entropy_by_untied_share"])
    assert not OrderGradPPO.load(old).entropy_by_untied_share


def test_short_episodes_keep_the_whole_bonus_on_a_partly_tied_rollout():
    """The share rule is a long-episode default: below 128 steps (here, no limit) it is off."""
    model = OrderGradPPO("MlpPolicy", _PartlyTied(), objective="cvar0.25", n_episodes=8)
    assert not model.entropy_by_untied_share


def _logged(log_dir, key: str) -> set[float]:
    """The values of ``key`` in the rows of a run's ``progress.csv`` that have one (SB3 dumps a rollout's train/*
    logs with the next rollout's)."""
    with (log_dir / "progress.csv").open() as file:
        return {float(row[key]) for row in csv.DictReader(file) if row.get(key)}


def _peaked(model) -> None:
    """Make the policy prefer action 0 (a converged policy's shape)."""
    with th.no_grad():
        model.policy.action_net.bias.copy_(th.tensor([3.0, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_a_rollout_tied_at_the_best_return_is_trained_without_the_entropy_bonus(cls, tmp_path):
    """The first rollout's returns differ; every later one ties at 1, above them, so every weight is zero: with the
    bonus off (the default) only the optimizer's momentum from the first update moves the policy;
    ``entropy_when_tied=True`` keeps the bonus, which flattens the peaked policy further."""
    kwargs = {"objective": "cvar0.25", "n_episodes": 8, "seed": 0, "ent_coef": 0.1}
    model = cls("MlpPolicy", _SameReturn(worse_first=8), **kwargs)
    assert model.entropy_when_tied is False and model.hparams()["entropy_when_tied"] is False
    kept = cls("MlpPolicy", _SameReturn(worse_first=8), entropy_when_tied=True, **kwargs)
    for run, agent in (("off", model), ("on", kept)):
        _peaked(agent)
        agent.set_logger(configure(str(tmp_path / run), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(8 * 3)
        kept.learn(8 * 3)
    assert _pay_probability(kept) > _pay_probability(model) + 1e-4  # action 3, one of the three the peak starves
    assert _logged(tmp_path / "off", "train/ent_coef") == {0.1, 0.0}
    assert _logged(tmp_path / "on", "train/ent_coef") == {0.1}
    assert model.ent_coef == 0.1  # the saved coefficient is the user's


@pytest.mark.parametrize("baseline", [True, "history"])
def test_a_rollout_tied_at_the_best_return_trains_on_zero_advantages_over_a_baseline(baseline):
    """Every weight of a rollout tied at the best return is zero, and so are its advantages: the baseline's terms,
    zero only in expectation, do not become its update. A rollout tied with nothing better seen keeps them (there the
    noise explores: Acrobot-v1, ``value_baseline``'s docstring)."""
    kwargs = {"objective": "cvar0.25", "n_episodes": 8, "seed": 0, "value_baseline": baseline}
    at_best = OrderGradPPO("MlpPolicy", _SameReturn(worse_first=8), **kwargs)
    at_bottom = OrderGradPPO("MlpPolicy", _SameReturn(), **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        at_best.learn(8 * 3)
        at_bottom.learn(8 * 3)
    assert at_best._rollout_tied_at_best and not np.any(at_best.rollout_buffer.advantages)
    assert not at_bottom._rollout_tied_at_best
    assert not np.any(at_bottom.rollout_buffer.returns)  # every weight zero there too ...
    if baseline == "history":  # ... but not the baseline's prediction (V of the constant zero observation is 0)
        assert np.all(at_bottom.rollout_buffer.advantages != 0)


def test_a_rollout_tied_with_nothing_better_seen_keeps_the_entropy_bonus(tmp_path):
    """Every episode ties from the start (every Acrobot episode at -500): the bonus is all that explores."""
    # A constant bonus (the default decays over the last 40% of training on short episodes like these).
    model = OrderGradPPO("MlpPolicy", _SameReturn(), objective="cvar0.25", n_episodes=8, seed=0, ent_coef=0.01)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(8 * 3)
    assert _logged(tmp_path, "train/ent_coef") == {0.01}


def test_a_rollout_that_ranks_something_keeps_the_entropy_bonus(tmp_path):
    """Returns that differ keep the bonus, also where the CVaR tail is a tie of terminated outcomes (zero weights:
    there the bonus is what keeps the unrewarded moves alive)."""
    model = OrderGradPPO(
        "MlpPolicy", _TimeOutOrPay(terminate=True), objective="cvar0.25", n_episodes=8, seed=0, ent_coef=0.01
    )  # a constant bonus, as above
    model.set_logger(configure(str(tmp_path), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(8 * 3)
    assert _logged(tmp_path, "train/ent_coef") == {0.01}


@pytest.mark.parametrize("kept", [True, False])
def test_entropy_when_tied_is_saved_and_older_saves_keep_the_bonus(kept, tmp_path):
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, entropy_when_tied=kept)
    path = tmp_path / "model.zip"
    model.save(path)
    assert OrderGradPPO.load(path).entropy_when_tied is kept
    # A save from before the argument existed: its rollouts were all trained with the bonus.
    model.save(old := tmp_path / "old.zip", exclude=["entropy_when_tied"])
    assert OrderGradPPO.load(old).entropy_when_tied is True
    assert OrderGradPPO.load(old, entropy_when_tied=False).entropy_when_tied is False
    with pytest.raises(ValueError, match="entropy_when_tied must be True or False"):
        OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, entropy_when_tied=1)


# ---------------------------------------------------------------------------------------------------- value baseline
def test_value_baseline_subtracts_the_state_value_and_trains_it(tmp_path):
    model = OrderGradPPO(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline=True, baseline_lambda=1.0
    )
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(200)
    buffer = model.rollout_buffer
    np.testing.assert_allclose(buffer.advantages, buffer.returns - buffer.values, atol=1e-6)
    weights = model.episode_weights(buffer.episode_returns)
    np.testing.assert_allclose(buffer.returns, weights[buffer.episode_index], rtol=1e-5, atol=1e-6)
    assert "train/value_loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]
    with pytest.raises(ValueError, match="value_baseline=True needs the value head"):
        OrderGradPPO("MlpPolicy", "RiskyBandit-v0", value_baseline=True, policy_kwargs={"critic": "none"})
    with pytest.raises(ValueError, match="value_baseline must be True, False, 'history' or None"):
        OrderGradPPO("MlpPolicy", "RiskyBandit-v0", value_baseline="yes")


@pytest.mark.parametrize(
    ("objective", "space", "long", "policy_kwargs", "expected"),
    [
        ("cvar0.2", gym.spaces.Box(-1, 1, (2,)), False, None, True),  # a Gaussian policy without a time limit
        ("cvar0.2", gym.spaces.Box(-1, 1, (2,)), False, {"critic": "none"}, False),  # no value head to learn V(s)
        ("cvar0.2", gym.spaces.Box(-1, 1, (2,)), False, {"learn_log_std": False}, False),  # a fixed noise scale
        ("cvar0.2", gym.spaces.Box(-1, 1, (2,)), False, {"net_arch": [8]}, True),
        ("cvar0.2", gym.spaces.Box(-1, 1, (2,)), True, None, "history"),  # long episodes: the history baseline
        ("cvar0.2", gym.spaces.Discrete(3), False, None, "history"),  # categorical: the history baseline
        ("cvar0.2", gym.spaces.MultiDiscrete([2, 3]), False, None, "history"),
        ("cvar0.2", gym.spaces.Discrete(3), False, {"critic": "none"}, "history"),  # its own network
        ("mean", gym.spaces.Discrete(3), False, None, False),
        ("mean", gym.spaces.Box(-1, 1, (2,)), False, None, False),  # the mean ranks nothing
        ("median@8", gym.spaces.Box(-1, 1, (2,)), False, None, True),
    ],
)
def test_default_value_baseline(objective, space, long, policy_kwargs, expected):
    parsed, _ = parse_agent_objective(objective, None)
    assert default_value_baseline(parsed, space, long, policy_kwargs) == expected


@pytest.mark.parametrize(
    ("objective", "policy_kwargs", "group_size", "limit", "expected"),
    [
        ("cvar0.2", None, None, 50, "history"),  # continuous actions with a time limit: the history baseline
        ("cvar0.2", {"critic": "none"}, None, 100, "history"),  # its own network: no value head needed
        ("cvar0.2", {"learn_log_std": False}, None, 100, "history"),
        ("median@8", None, None, 128, "history"),
        ("cvar0.2", None, None, None, True),  # no time limit (the portfolio): V(s), as before
        ("cvar0.2", None, 4, 50, True),  # groups keep what they had
        ("mean", None, None, 50, False),
    ],
)
def test_default_value_baseline_on_continuous_actions_with_a_time_limit(
    objective, policy_kwargs, group_size, limit, expected
):
    parsed, _ = parse_agent_objective(objective, None)
    box = gym.spaces.Box(-1, 1, (2,))
    assert default_value_baseline(parsed, box, False, policy_kwargs, group_size, limit) == expected
    # Categorical actions read no limit.
    ranked = objective != "mean" and group_size is None
    assert default_value_baseline(parsed, gym.spaces.Discrete(3), False, None, group_size, limit) == (
        "history" if ranked else False
    )


def test_groups_keep_whole_episode_weights_on_short_categorical_episodes():
    """Groups (GRPO-style, e.g. TargetSum-v0) were not measured with the history baseline: off by default."""
    parsed, _ = parse_agent_objective("top2@4", None)
    assert default_value_baseline(parsed, gym.spaces.Discrete(3), False, None, group_size=8) is False
    assert default_value_baseline(parsed, gym.spaces.Discrete(3), True, None, group_size=8) == "history"


def test_value_baseline_default_is_saved_and_older_saves_keep_none(tmp_path):
    model = OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.25", n_episodes=8)
    assert model.value_baseline is True  # continuous actions without a time limit
    model.save(path := tmp_path / "model.zip")
    assert OrderGradPPO.load(path).value_baseline is True
    # A save from before the argument existed trained without a baseline, with or without an env at hand.
    model.save(old := tmp_path / "old.zip", exclude=["value_baseline"])
    assert OrderGradPPO.load(old).value_baseline is False
    assert OrderGradPPO.load(old, env=model.get_env()).value_baseline is False
    assert OrderGradPPO.load(old, value_baseline=True).value_baseline is True
    model = OrderGradPPO("MlpPolicy", "RiskyShortcutNav-v2", objective="cvar0.25", n_episodes=8, value_baseline=False)
    model.save(path)
    assert OrderGradPPO.load(path, env=model.get_env()).value_baseline is False
    # Continuous actions with a time limit: the history baseline since 2026-12-02; a save from before keeps V(s).
    nav = OrderGradPPO("MlpPolicy", "RiskyShortcutNav-v2", objective="cvar0.25", n_episodes=8)
    assert nav.value_baseline == "history"
    before = OrderGradPPO("MlpPolicy", "RiskyShortcutNav-v2", objective="cvar0.25", n_episodes=8, value_baseline=True)
    before.save(path)
    loaded = OrderGradPPO.load(path, env=before.get_env())
    assert loaded.value_baseline is True and getattr(loaded, "history_baseline", None) is None
    loaded.learn(100, reset_num_timesteps=False)


def test_value_baseline_term_has_zero_expected_gradient():
    """Unbiasedness: sum_t grad log pi(a_t | s_t) V(s_t), the term the baseline removes, averages to 0 over rollouts
    (Monte Carlo, 400 rollouts of the slippery lava grid from a random policy and a random value head)."""
    th.manual_seed(0)
    model = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=2, seed=0)
    model._setup_learn(10**9, None)
    policy = model.policy
    actor = [p for name, p in policy.named_parameters() if "value" not in name]
    samples = []
    for _ in range(400):
        model.collect_rollouts(model.env, model._setup_learn(10**9, None)[1], model.rollout_buffer, 0)
        buffer = model.rollout_buffer
        obs, _ = policy.obs_to_tensor(buffer.observations)
        actions = th.as_tensor(buffer.actions).long().flatten()
        with th.no_grad():
            values = policy.predict_values(obs).flatten()
        _, log_prob, _ = policy.evaluate_actions(obs, actions)
        grads = th.autograd.grad((log_prob * values).sum(), actor)
        samples.append(th.cat([g.flatten() for g in grads]).numpy())
    samples = np.asarray(samples)
    mean, error = samples.mean(axis=0), samples.std(axis=0) / np.sqrt(len(samples)) + 1e-12
    assert np.mean(np.abs(mean) / error < 3.5) > 0.99


# ---------------------------------------------------------------------------------------------------- few updates
def test_few_updates_warn_after_the_first_rollout():
    model = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=16, seed=0)
    with pytest.warns(UserWarning, match=r"leaves about \d+ updates? \(fewer than 5\)"):
        model.learn(100)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.2", n_episodes=8).learn(200)  # 25 updates
    assert not [r for r in records if "updates" in str(r.message)]


def test_few_updates_count_the_env_steps_of_every_env():
    """The estimate counts the env steps the first rollout took, those of envs outside a kept episode included: 8
    one-step bandits for 2 episodes take 8 env steps per rollout and store 2, so learn(30) trains 4 updates, where
    the estimate from the stored steps said 12 and did not warn (64 CartPole envs for 32 episodes: 3 updates)."""
    from stable_baselines3.common.env_util import make_vec_env

    model = OrderGradPPO("MlpPolicy", make_vec_env("RiskyBandit-v0", n_envs=8, seed=0), objective="mean", n_episodes=2)
    with pytest.warns(UserWarning, match=r"took 8 env steps .*6 of them \(75%\) unstored.*n_envs=8 for n_episodes=2"):
        model.learn(30)
    assert model._n_updates // model.n_epochs == 4


def test_few_updates_with_as_many_envs_as_episodes_name_fewer_envs_as_the_fix():
    """32 HalfCheetah-v5 envs (1000-step episodes) for the default 32 episodes, halved to 16 by a learn(200_000): each
    rollout took 32 x 1000 env steps, and the warnings told the user to lower n_episodes, which cannot shorten a
    rollout whose envs all step until its last episode ends; fewer envs can. More episodes than envs keep the advice."""
    from stable_baselines3.common.env_util import make_vec_env

    def few_updates(n_envs: int, n_episodes: int) -> str:
        env = make_vec_env("Pendulum-v1", n_envs=n_envs, seed=0)  # 200-step episodes, truncated only
        with pytest.warns(UserWarning, match=r"leaves about \d+ updates? \(fewer than 5\)") as records:
            OrderGradPPO("MlpPolicy", env, objective="cvar0.2", n_episodes=n_episodes, n_epochs=1).learn(400)
        (message,) = [str(r.message) for r in records if "leaves about" in str(r.message)]
        return message

    for n_envs, n_episodes in [(4, 4), (4, 2)]:
        message = few_updates(n_envs, n_episodes)
        assert message.endswith(
            f"use fewer envs (all {n_envs} step until the rollout's last episode ends: fewer episodes would not "
            "shorten it) or raise total_timesteps"
        ), message
    assert few_updates(2, 4).endswith("lower n_episodes (k < n_episodes) or raise total_timesteps")


def test_more_envs_than_episodes_warn_that_the_extra_envs_store_nothing():
    """SB3's make_vec_env(n_envs=64) with a default of 16 episodes per rollout (CartPole-v1 below 128k steps): the 48
    envs beyond the first 16 start no kept episode, and 89% of the env steps of a learn(30_000) went unstored, in
    silence. The first rollout says so; n_envs <= n_episodes does not."""
    from stable_baselines3.common.env_util import make_vec_env

    model = OrderGradPPO("MlpPolicy", make_vec_env("RiskyBandit-v0", n_envs=8), objective="mean", n_episodes=2)
    with pytest.warns(UserWarning, match=r"n_envs=8 for n_episodes=2: .*the other 6 envs store no step.*\(75% of"):
        model.learn(400)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        model.learn(400, reset_num_timesteps=False)  # a piece of the same run: told once
        OrderGradPPO("MlpPolicy", make_vec_env("RiskyBandit-v0", n_envs=2), objective="mean", n_episodes=2).learn(400)
    assert not [r for r in records if "store no step" in str(r.message)]


def test_budget_warnings_come_once_when_learning_in_pieces():
    """A loop of learn calls that go on from earlier steps is one run in pieces: its first call warns that its budget
    leaves few updates or that its rollout outgrew it; the pieces after it, each a rollout or so, do not repeat that
    (they warned at every piece before, with a different message each time, so Python's filter showed them all)."""
    model = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=16, seed=0)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        for _ in range(3):
            model.learn(100, reset_num_timesteps=False)
    assert len([r for r in records if "leaves about" in str(r.message)]) == 1
    with pytest.warns(UserWarning, match=r"leaves about \d+ updates? \(fewer than 5\)"):  # a fresh run warns again
        model.learn(100)


# ---------------------------------------------------------------------------------------------------- CLI and sweeps
def test_train_takes_a_schedule_and_names_a_bad_one(tmp_path, capsys):
    from ordergrad_rl.cli import main

    base = ["train", "--algo", "ppo", "--env", "RiskyBandit-v0", "--objective", "cvar0.25", "--n-episodes", "8",
            "--timesteps", "40", "--quiet", "--conf-file", "none"]  # fmt: skip
    assert main([*base, "--hparams", "risk_schedule=level:0.5"]) == 0
    assert main([*base, "--hparams", "risk_schedule=mixture:0:0.1"]) == 0
    assert main([*base, "--hparams", "risk_schedule=none"]) == 0
    assert main([*base, "--hparams", "risk_schedule=False"]) == 0
    assert main([*base, "--hparams", "risk_schedule=levels"]) == 2
    assert "risk_schedule kind must be 'level' or 'mixture'" in capsys.readouterr().err


def test_sweep_checks_schedules_before_any_trial():
    from ordergrad_rl.common.errors import CommandError
    from ordergrad_rl.sweep.grid import RUN_KEYS, check_trials

    trial = {**RUN_KEYS, "env": "RiskyBandit-v0", "timesteps": 100, "objective": "cvar0.2", "n_episodes": 16}
    check_trials([{**trial, "risk_schedule": "mixture"}])
    with pytest.raises(CommandError, match="sweep key risk_schedule: .*has no risk"):
        check_trials([{**trial, "objective": "mean", "risk_schedule": "level"}])
