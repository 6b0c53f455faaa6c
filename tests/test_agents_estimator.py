"""The agents implement the paper's estimator: exact gradients on a fixed batch, i.i.d. episodes (no length bias)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.core import lstat_advantage

SHORT, LONG = 1, 10


class RandomLengthEnv(gym.Env):
    """Episodes last SHORT or LONG steps with probability 1/2 each (long ones end by truncation); reward 1 a step."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.length = SHORT if self.np_random.random() < 0.5 else LONG
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        done = self.t >= self.length
        terminated, truncated = done and self.length == SHORT, done and self.length == LONG
        return np.zeros(1, np.float32), 1.0, terminated, truncated, {"step": self.t, "pair": np.array([1.0, self.t])}


def random_length_venv(n_envs: int, seed: int) -> DummyVecEnv:
    venv = DummyVecEnv([RandomLengthEnv] * n_envs)
    venv.seed(seed)
    return venv


# ---------------------------------------------------------------------------------------------- exact gradients
def hand_gradient(model, scale: float) -> list[th.Tensor | None]:
    """``scale * sum_i a_i grad log p(tau_i)`` on the model's current batch, computed episode by episode."""
    buffer = model.rollout_buffer
    n = buffer.n_episodes
    returns = np.array([buffer.rewards[buffer.episode_index == i].sum() for i in range(n)])
    np.testing.assert_allclose(returns, buffer.episode_returns)
    advantages = lstat_advantage(returns, model.objective)
    observations, actions = th.as_tensor(buffer.observations), th.as_tensor(buffer.actions).long().flatten()
    log_prob = model.policy.get_distribution(observations).log_prob(actions)
    episode_index = th.as_tensor(buffer.episode_index)
    objective = sum(float(advantages[i]) * log_prob[episode_index == i].sum() for i in range(n))
    params = list(model.policy.parameters())
    return list(th.autograd.grad(scale * objective, params, allow_unused=True))


def assert_loss_gradient(model, expected_ascent: list[th.Tensor | None]) -> None:
    """The gradient of the loss the update minimized is minus the ascent direction."""
    n_checked = 0
    for param, ascent in zip(model.policy.parameters(), expected_ascent, strict=True):
        if ascent is None:  # the (unused) value branch
            assert param.grad is None or not param.grad.any()
            continue
        th.testing.assert_close(param.grad, -ascent, rtol=1e-4, atol=1e-6)
        n_checked += 1
    assert n_checked >= 4  # the actor's weights and biases


# ent_coef=0: the loss is the estimator alone (a ranked objective's default entropy bonus would add a term).
COMMON = dict(
    n_episodes=8, n_envs=2, learning_rate=0.0, normalize_advantage=False, max_grad_norm=float("inf"), seed=5,
    ent_coef=0.0, value_baseline=False,
)  # fmt: skip


@pytest.mark.parametrize("objective", ["cvar0.25@4", "mean", "top2@5"])
def test_reinforce_gradient_is_the_unbiased_estimator(objective: str) -> None:
    # learning_rate=0: Adam leaves the parameters where the batch was collected and keeps the gradient.
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective=objective, reward_to_go=False, **COMMON)
    model.learn(1)  # one rollout, one update
    k, n = model.k, model.n_episodes
    assert_loss_gradient(model, hand_gradient(model, k / n))


def test_ppo_first_minibatch_gradient_is_the_estimator_per_step() -> None:
    model = OrderGradPPO(
        "MlpPolicy",
        "CartPole-v1",
        objective="cvar0.25@4",
        n_epochs=1,
        batch_size=100_000,
        risk_schedule="none",  # the target's weights from the first rollout (long episodes get "level" by default)
        critic_when_tied=False,  # the value branch free of gradients (the tied critic's fit: tests/test_tied_critic)
        **COMMON,
    )
    model.learn(1)
    k, n, n_steps = model.k, model.n_episodes, model.rollout_buffer.size()
    # At ratio 1 the clipped surrogate's gradient is (1/T) sum_t w_t grad log pi = (N/T) (k/N) sum_i a_i grad log p.
    assert_loss_gradient(model, hand_gradient(model, (n / n_steps) * (k / n)))


def test_reinforce_reward_to_go_gradient_on_a_fixed_batch() -> None:
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective="mean", **COMMON)
    model.learn(1)
    buffer = model.rollout_buffer
    n = buffer.n_episodes
    # By hand: step t of episode i gets sum_{u>=t} r_iu minus the other episodes' mean of the same at t.
    to_go = np.array([buffer.rewards[(buffer.episode_index == i) & (buffer.episode_step >= t)].sum()
                      for i, t in zip(buffer.episode_index, buffer.episode_step, strict=True)])  # fmt: skip
    totals_at = {t: to_go[buffer.episode_step == t].sum() for t in np.unique(buffer.episode_step)}
    weights = to_go - (np.array([totals_at[t] for t in buffer.episode_step]) - to_go) / (n - 1)
    observations, actions = th.as_tensor(buffer.observations), th.as_tensor(buffer.actions).long().flatten()
    log_prob = model.policy.get_distribution(observations).log_prob(actions)
    ascent = th.autograd.grad(
        (th.as_tensor(weights, dtype=th.float32) * log_prob).sum() / n, list(model.policy.parameters()),
        allow_unused=True,
    )  # fmt: skip
    assert_loss_gradient(model, list(ascent))


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_normalized_weights(cls) -> None:
    model = cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=16, n_envs=2, seed=2, reward_to_go=False)
    model.learn(1)
    buffer = model.rollout_buffer
    returns = buffer.episode_returns
    # With objective "mean" the normalized weights are the paper's REINFORCE baseline (Z - mean) / std.
    expected = (returns - returns.mean()) / returns.std()
    np.testing.assert_allclose(model.episode_weights(returns), expected, rtol=1e-6)
    np.testing.assert_allclose(buffer.advantages, expected[buffer.episode_index], rtol=1e-5)


# ---------------------------------------------------------------------------------------------- no length bias
class EpisodeLengths(BaseCallback):
    def __init__(self, n_rollouts: int) -> None:
        super().__init__()
        self.n_rollouts = n_rollouts
        self.lengths: list[np.ndarray] = []

    def _on_rollout_end(self) -> None:
        self.lengths.append(self.model.rollout_buffer.episode_lengths.copy())

    def _on_step(self) -> bool:
        return len(self.lengths) < self.n_rollouts


def first_finished_lengths(venv: DummyVecEnv, n_episodes: int, n_rollouts: int) -> np.ndarray:
    """The naive collector: per rollout, keep the first ``n_episodes`` episodes to *finish*, whichever env."""
    lengths = []
    for _ in range(n_rollouts):
        venv.reset()
        steps = np.zeros(venv.num_envs, dtype=int)
        batch: list[int] = []
        while len(batch) < n_episodes:
            _, _, dones, _ = venv.step(np.zeros(venv.num_envs, dtype=int))
            steps += 1
            batch.extend(steps[dones][: n_episodes - len(batch)])
            steps[dones] = 0
        lengths.extend(batch)
    return np.array(lengths)


TRUE_MEAN, TRUE_STD = (SHORT + LONG) / 2, (LONG - SHORT) / 2


@pytest.mark.parametrize(("n_envs", "n_episodes", "n_rollouts"), [(16, 16, 40), (8, 32, 20)])
def test_collected_lengths_follow_the_env_distribution(n_envs: int, n_episodes: int, n_rollouts: int) -> None:
    se = TRUE_STD / np.sqrt(n_episodes * n_rollouts)
    callback = EpisodeLengths(n_rollouts)
    model = OrderGradREINFORCE("MlpPolicy", random_length_venv(n_envs, seed=0), n_episodes=n_episodes, seed=0)
    model.learn(10**7, callback=callback)
    lengths = np.concatenate(callback.lengths[:n_rollouts])
    assert lengths.size == n_episodes * n_rollouts and set(np.unique(lengths)) == {SHORT, LONG}
    assert abs(lengths.mean() - TRUE_MEAN) < 4 * se, (lengths.mean(), TRUE_MEAN, se)


def test_first_finished_collection_would_be_length_biased() -> None:
    # Same setting as the first case above: the naive rule mostly keeps the short episodes.
    n_envs = n_episodes = 16
    naive = first_finished_lengths(random_length_venv(n_envs, seed=0), n_episodes, n_rollouts=40)
    se = TRUE_STD / np.sqrt(naive.size)
    assert naive.mean() < TRUE_MEAN - 10 * se, naive.mean()
