"""Reward-to-go advantages of the mean objective: the formula by brute force, and an unbiased gradient."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.advantages import reward_to_go_advantages
from ordergrad_rl.core import lstat_advantage


def random_rollout(rng: np.random.Generator, n_episodes: int) -> tuple[np.ndarray, ...]:
    """Episodes of random lengths, stored interleaved (as several envs step together), each in time order."""
    lengths = rng.integers(1, 8, size=n_episodes)
    steps = [(i, t) for i in range(n_episodes) for t in range(lengths[i])]
    # Interleave: sort by a random key per step that keeps each episode's steps in order.
    keys = [t + rng.random() for _, t in steps]
    order = np.argsort(keys, kind="stable")
    episode = np.array([steps[j][0] for j in order])
    t = np.array([steps[j][1] for j in order])
    return rng.normal(size=episode.size), episode, t


@pytest.mark.parametrize("gamma", [1.0, 0.9])
def test_reward_to_go_advantages_by_brute_force(gamma: float) -> None:
    rng = np.random.default_rng(0)
    n = 7
    rewards, episode, t = random_rollout(rng, n)
    got = reward_to_go_advantages(rewards, episode, t, n, gamma)

    def to_go(i: int, step: int) -> float:
        mine = (episode == i) & (t >= step)
        return float(np.sum(rewards[mine] * gamma ** t[mine]))

    for s in range(rewards.size):
        i, step = episode[s], t[s]
        baseline = np.mean([to_go(j, step) for j in range(n) if j != i])  # an ended episode contributes 0
        assert got[s] == pytest.approx(to_go(i, step) - baseline, abs=1e-12)


def test_first_step_is_the_leave_one_out_advantage() -> None:
    rewards, episode, t = random_rollout(np.random.default_rng(1), 9)
    returns = np.bincount(episode, weights=rewards)
    first = reward_to_go_advantages(rewards, episode, t, 9)[t == 0]
    np.testing.assert_allclose(first, lstat_advantage(returns, "mean")[episode[t == 0]], atol=1e-12)


class ThreeStepBandit(gym.Env):
    """Three steps of a two-armed bandit with a constant observation: reward ~ N(MEANS[a], 1)."""

    MEANS = np.array([0.0, 1.0])
    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        reward = self.MEANS[int(action)] + self.np_random.normal()
        return np.zeros(1, np.float32), float(reward), self.t >= 3, False, {}


def bias_gradients(reward_to_go: bool, n_rollouts: int) -> np.ndarray:
    """The ascent direction of the action bias from ``n_rollouts`` rollouts at fixed parameters (lr = 0)."""
    venv = DummyVecEnv([ThreeStepBandit] * 4)
    venv.seed(3)
    model = OrderGradREINFORCE(
        "MlpPolicy", venv, objective="mean", n_episodes=16, learning_rate=0.0, normalize_advantage=False,
        max_grad_norm=float("inf"), reward_to_go=reward_to_go, seed=3,
        policy_kwargs=dict(net_arch=[], zero_init_action_net=True),
    )  # fmt: skip
    with th.no_grad():
        model.policy.action_net.bias.copy_(th.tensor([0.3, -0.2]))
    grads = []
    for _ in range(n_rollouts):
        model.learn(1, reset_num_timesteps=False)
        grads.append(-model.policy.action_net.bias.grad.numpy().copy())
    return np.array(grads)


@pytest.mark.slow
def test_reward_to_go_gradient_is_unbiased_and_less_noisy() -> None:
    probs = th.softmax(th.tensor([0.3, -0.2]), 0).numpy()
    # J = E[R] = 3 sum_a pi_a mu_a  ->  dJ/db = 3 pi (mu - pi . mu).
    exact = 3 * probs * (ThreeStepBandit.MEANS - probs @ ThreeStepBandit.MEANS)
    rtg, whole = bias_gradients(True, 400), bias_gradients(False, 400)
    for grads in (rtg, whole):
        se = grads.std(0) / np.sqrt(len(grads))
        assert np.all(np.abs(grads.mean(0) - exact) < 4 * se), (grads.mean(0), exact, se)
    # Rewards before step t are noise for step t's action: dropping them lowers the variance.
    assert np.all(rtg.var(0) < 0.8 * whole.var(0)), (rtg.var(0), whole.var(0))


def test_defaults_and_refusal() -> None:
    assert OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean").reward_to_go
    assert not OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2").reward_to_go
    assert not OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective="mean", reward_to_go=False).reward_to_go
    with pytest.raises(ValueError, match="reward_to_go needs the mean objective"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", reward_to_go=True)


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
@pytest.mark.parametrize("flag", ["False", 0, np.True_])
def test_reward_to_go_refuses_what_is_not_a_bool(cls: type, flag: object) -> None:
    """``reward_to_go="False"`` turned reward-to-go on (any truthy value did), where the agents' other flags refuse
    anything but True, False (or None)."""
    with pytest.raises(ValueError, match="reward_to_go must be True, False or None"):
        cls("MlpPolicy", "CartPole-v1", objective="mean", reward_to_go=flag)


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_load_into_or_out_of_groups_gives_reward_to_go_the_new_models_default(cls: type, tmp_path) -> None:
    """``load(path, group_size=...)`` of the mean without ``reward_to_go``: the pooled mean's reward-to-go, ruled out
    in groups, becomes the grouped model's default (off; the load raised "reward_to_go is not defined with
    group_size"), and a grouped save's (forced off) the pooled model's on leaving them; the user's choice is kept."""
    cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=8).save(tmp_path / "pooled")
    grouped = cls.load(tmp_path / "pooled", group_size=4)
    assert (grouped.group_size, grouped.reward_to_go) == (4, False)
    assert cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=8, group_size=4).reward_to_go is False
    grouped.save(tmp_path / "grouped")
    assert cls.load(tmp_path / "grouped").reward_to_go is False
    assert cls.load(tmp_path / "grouped", group_size=None).reward_to_go is True
    cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=8, reward_to_go=False).save(tmp_path / "whole")
    assert cls.load(tmp_path / "whole", group_size=None).reward_to_go is False
    with pytest.raises(ValueError, match="reward_to_go is not defined with group_size"):
        cls.load(tmp_path / "pooled", group_size=4, reward_to_go=True)
