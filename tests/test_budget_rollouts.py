"""OrderGradPPO halves its default rollout when the first ``learn`` call's budget is small (long and short episodes)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import StopAtOnce

from ordergrad_rl.agents import OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.arguments import (
    LONG_RANKED_N_EPISODES,
    SHORT_BUDGET_ROLLOUTS,
    SMALL_BUDGET_N_EPISODES,
    SMALL_BUDGET_ROLLOUTS,
    budget_n_episodes,
)


def usage_line(**kwargs) -> OrderGradPPO:
    return OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", seed=0, n_epochs=1, **kwargs)


def test_the_budget_threshold_is_the_default_rollouts_at_the_episode_limit():
    n, limit = LONG_RANKED_N_EPISODES, 500
    edge = SMALL_BUDGET_ROLLOUTS * n * limit  # 128k steps on CartPole-v1 and Acrobot-v1
    assert budget_n_episodes(n, edge - 1, limit) == SMALL_BUDGET_N_EPISODES
    assert budget_n_episodes(n, edge, limit) == n
    assert budget_n_episodes(n, 100_000, 500) == 16 and budget_n_episodes(n, 300_000, 500) == 32
    assert budget_n_episodes(n, 100_000, 1000) == 16 and budget_n_episodes(n, 300_000, 1000) == 32
    assert budget_n_episodes(n, 1, None) == n  # no known limit: nothing to size by
    assert budget_n_episodes(8, 1, 500) == 8  # never more episodes than the default


def test_short_episodes_halve_until_the_budget_holds_the_rollouts_at_the_limit():
    # lava grid (30 steps, 256 episodes), guarded maze (40, 128), a 100-step CliffWalking (64)
    assert [budget_n_episodes(n, 100_000, limit) for n, limit in ((256, 30), (128, 40), (64, 100))] == [64, 64, 16]
    assert [budget_n_episodes(n, 300_000, limit) for n, limit in ((256, 30), (128, 40), (64, 100))] == [256, 128, 64]
    n, limit = 256, 30
    edge = SHORT_BUDGET_ROLLOUTS * n * limit
    assert budget_n_episodes(n, edge, limit) == n and budget_n_episodes(n, edge - 1, limit) == n // 2
    assert budget_n_episodes(n, 1, limit) == SMALL_BUDGET_N_EPISODES  # never below it
    assert budget_n_episodes(n, 1, 1) == SMALL_BUDGET_N_EPISODES and budget_n_episodes(n, 10**6, 1) == n  # a bandit
    assert budget_n_episodes(8, 1, 30) == 8  # never more episodes than the default


@pytest.mark.parametrize(("env_id", "before", "after"), [("RiskyLavaGrid-v0", 256, 64), ("GuardedMaze-v0", 128, 64)])
def test_a_short_task_at_a_small_budget_takes_the_halved_rollout(env_id, before, after):
    model = OrderGradPPO("MlpPolicy", env_id, objective="cvar0.2", seed=0)
    assert model.n_episodes == before and model.n_episodes_by_budget
    model.learn(100_000, callback=StopAtOnce())
    assert (model.n_episodes, model.k, model.rollout_buffer.n_episodes) == (after, after // 2, after)
    mean = OrderGradPPO("MlpPolicy", env_id, objective="mean", seed=0)  # the mean's 16 is not sized
    assert not mean.n_episodes_by_budget


@pytest.mark.parametrize(("env_id", "budget"), [("RiskyLavaGrid-v0", 100_000), ("GuardedMaze-v0", 300_000)])
def test_budget_rollout_tells_the_size_learn_takes_and_changes_nothing(env_id, budget):
    """``ordergrad-rl train`` announces ``budget_rollout``'s size before training (it printed the constructor's)."""
    model = OrderGradPPO("MlpPolicy", env_id, objective="cvar0.2", seed=0)
    before = (model.n_episodes, str(model.objective), model.n_episodes_by_budget)
    n_episodes, objective = model.budget_rollout(budget)
    assert (model.n_episodes, str(model.objective), model.n_episodes_by_budget) == before
    model.learn(budget, callback=StopAtOnce())
    assert (model.n_episodes, str(model.objective)) == (n_episodes, str(objective))
    assert model.budget_rollout(1) == (model.n_episodes, model.objective)  # decided: later calls keep it


def test_a_small_budget_trains_exactly_as_sixteen_episodes_given():
    sized = usage_line()  # each built and trained in turn: both draw from torch's global generator
    assert sized.n_episodes == 32 and sized.n_episodes_by_budget
    sized.learn(1_500)
    given = usage_line(n_episodes=16)
    given.learn(1_500)
    assert (sized.n_episodes, sized.k, str(sized.objective)) == (16, 8, "cvar0.2@8")
    assert sized.rollout_buffer.n_episodes == 16 and not sized.n_episodes_by_budget
    assert sized.num_timesteps == given.num_timesteps
    for a, b in zip(sized.policy.parameters(), given.policy.parameters(), strict=True):
        assert th_equal(a, b)
    assert sized.hparams()["n_episodes"] == 16


def test_a_short_task_at_a_small_budget_trains_exactly_as_the_halved_size_given():
    # The lava grid: 256 episodes and 256-step minibatches by default, its noise sampler on. 3,000 steps hold fewer
    # than 32 rollouts of 16 at its 30-step limit, so the size falls to the floor, and the minibatch with it.
    kwargs = {"objective": "cvar0.2", "seed": 0, "n_epochs": 2}
    sized = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", **kwargs)
    assert (sized.n_episodes, sized.batch_size, sized.batch_size_by_budget) == (256, 256, True)
    sized.learn(3_000)
    given = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", n_episodes=16, **kwargs)
    given.learn(3_000)
    assert (sized.n_episodes, sized.batch_size) == (given.n_episodes, given.batch_size) == (16, 64)
    assert sized.num_timesteps == given.num_timesteps
    for a, b in zip(sized.policy.parameters(), given.policy.parameters(), strict=True):
        assert th_equal(a, b)
    pinned = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", batch_size=128, **kwargs)  # a given minibatch stays
    pinned.learn(100_000, callback=StopAtOnce())
    assert (pinned.n_episodes, pinned.batch_size) == (64, 128)


def th_equal(a, b) -> bool:
    return np.array_equal(a.detach().cpu().numpy(), b.detach().cpu().numpy())


def test_a_large_budget_keeps_the_default_and_the_decision_is_taken_once():
    model = usage_line()
    model.learn(10**6, callback=StopAtOnce())
    assert model.n_episodes == 32 and model.k == 16 and not model.n_episodes_by_budget
    model.learn(1_000)  # a later small call does not resize a model that has decided
    assert model.n_episodes == 32 and model.rollout_buffer.n_episodes == 32


@pytest.mark.parametrize(
    "make",
    [
        lambda: usage_line(n_episodes=32),  # given
        lambda: usage_line(k=10),  # k given
        lambda: OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2@10", seed=0),  # @K given
        lambda: OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean", seed=0),  # the mean: 16 already
        lambda: OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.2", seed=0),  # no time limit
        lambda: OrderGradREINFORCE("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", seed=0),  # not measured
        lambda: OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=32),  # given
    ],
)
def test_only_the_ranked_default_of_the_ppo_family_with_a_time_limit_waits_for_the_budget(make):
    model = make()
    n = model.n_episodes
    assert not model.n_episodes_by_budget
    model.learn(1, callback=StopAtOnce())
    assert model.n_episodes == n


def test_learn_zero_decides_no_size():
    # SB3 users call learn(0) to set up the logger and callbacks; it trains nothing, but it decided the size at the
    # smallest budget: the 1e6-step call after it trained CartPole-v1 on 16 episodes instead of 32.
    model = usage_line()
    model.learn(0)
    assert (model.n_episodes, model.k, model.n_episodes_by_budget) == (32, 16, True)
    model.learn(10**6, callback=StopAtOnce())
    assert (model.n_episodes, model.k, model.rollout_buffer.n_episodes) == (32, 16, 32)


def test_save_load_and_resume_keep_the_size(tmp_path):
    model = usage_line()
    model.learn(1_000)
    model.save(tmp_path / "m")
    loaded = OrderGradPPO.load(tmp_path / "m", env=model.get_env())
    assert (loaded.n_episodes, loaded.k, loaded.n_episodes_by_budget) == (16, 8, False)
    with pytest.warns(UserWarning, match="reset_num_timesteps=False"):  # the schedules' note on a finished call
        loaded.learn(10**6, reset_num_timesteps=False, callback=StopAtOnce())
    assert loaded.n_episodes == 16
    fresh = usage_line()
    fresh.save(tmp_path / "fresh")  # saved before any learn call: the first one still decides
    loaded = OrderGradPPO.load(tmp_path / "fresh", env=fresh.get_env())
    assert loaded.n_episodes_by_budget
    loaded.learn(1_000)
    assert loaded.n_episodes == 16 and loaded.rollout_buffer.n_episodes == 16


def test_a_save_from_before_the_rule_keeps_its_size(tmp_path):
    model = usage_line()
    del model.n_episodes_by_budget  # as a save of an earlier release holds none
    model.save(tmp_path / "old")
    loaded = OrderGradPPO.load(tmp_path / "old", env=model.get_env())
    assert not loaded.n_episodes_by_budget
    loaded.learn(1_000)
    assert loaded.n_episodes == 32


def test_a_minibatch_given_at_load_stays_when_the_first_learn_sizes_the_rollout(tmp_path):
    # SB3's load(path, env, batch_size=...) sets the minibatch; a save made before its first learn call still waits
    # for the budget, and that call reset the given 100 to the halved rollout's default (64) without a word.
    usage_line().save(tmp_path / "fresh")
    model = OrderGradPPO.load(tmp_path / "fresh", env=usage_line().env, batch_size=100)
    model.learn(1_500, callback=StopAtOnce())
    assert (model.n_episodes, model.batch_size) == (16, 100)
    default = OrderGradPPO.load(tmp_path / "fresh", env=usage_line().env)  # none given: the size's default
    default.learn(1_500, callback=StopAtOnce())
    assert (default.n_episodes, default.batch_size) == (16, 64)


def test_the_halving_stops_at_the_number_of_envs():
    # Every env steps until the rollout's last episode ends: 16 episodes on 32 envs take 32 episodes' steps and keep 16.
    assert budget_n_episodes(32, 100_000, 500, n_envs=32) == 32
    assert budget_n_episodes(32, 100_000, 500, n_envs=24) == 24
    assert budget_n_episodes(256, 100_000, 30, n_envs=100) == 100  # 64 without the envs
    assert budget_n_episodes(32, 100_000, 500, n_envs=8) == SMALL_BUDGET_N_EPISODES  # below the floor: unchanged
    from stable_baselines3.common.env_util import make_vec_env

    model = OrderGradPPO("MlpPolicy", make_vec_env("CartPole-v1", n_envs=32, seed=0), objective="cvar0.2", seed=0)
    model.learn(100_000, callback=StopAtOnce())
    assert model.n_episodes == model.rollout_buffer.n_episodes == 32
