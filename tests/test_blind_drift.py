"""``drift_when_blind``: a rollout blind to success (every return the same, no other ever seen) gets random
zero-mean episode weights; every other rollout is trained exactly as without the flag."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import OrderGradPPO

N = 8


class TimeOutEnv(gym.Env):
    """Every episode times out after 3 steps with reward -1 a step: return -3 whatever the policy does."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), {}

    def step(self, action):
        self.t += 1
        return self.np_random.uniform(-1, 1, 2).astype(np.float32), -1.0, False, self.t >= 3, {}


def model(drift: bool, env: Any = None, seed: int = 0) -> OrderGradPPO:
    env = DummyVecEnv([TimeOutEnv]) if env is None else env
    # Whole-episode weights (no per-step baseline, whose terms a blind rollout would keep): the weights are the test.
    return OrderGradPPO("MlpPolicy", env, objective="cvar0.25", n_episodes=N, seed=seed, n_epochs=1,
                        drift_when_blind=drift, value_baseline=False)  # fmt: skip


def episode_weights(agent: OrderGradPPO) -> np.ndarray:
    buffer = agent.rollout_buffer
    weights = np.array([buffer.advantages[buffer.episode_index == i] for i in range(N)])
    assert np.all(weights == weights[:, :1])  # one weight per episode, on each of its steps
    return weights[:, 0]


def test_a_blind_rollout_gets_standardized_random_weights():
    off = model(drift=False)
    off.learn(3 * N)
    assert not np.any(off.rollout_buffer.advantages)  # nothing ranked: no update but the entropy bonus
    on = model(drift=True)
    on.learn(3 * N)
    weights = episode_weights(on)
    assert weights.mean() == pytest.approx(0.0, abs=1e-6) and weights.std() == pytest.approx(1.0, abs=1e-5)
    assert on._rollout_blind
    again = model(drift=True)
    again.learn(3 * N)
    np.testing.assert_array_equal(episode_weights(again), weights)  # a function of the seed and the step count
    on.learn(3 * N, reset_num_timesteps=False)
    assert not np.allclose(episode_weights(on), weights)  # a new step at each rollout


def test_not_blind_once_another_return_was_seen():
    agent = model(drift=True)
    agent.learn(3 * N)
    agent._returns_seen = (-5.0, -3.0)  # an earlier rollout had an episode at -5: a tie at -3 is no longer blind
    agent.learn(3 * N, reset_num_timesteps=False)
    assert not np.any(agent.rollout_buffer.advantages) and not agent._rollout_blind


def test_rollouts_that_rank_are_trained_as_without_the_flag():
    runs = []
    for drift in (False, True):
        agent = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=16, seed=1, n_epochs=1,
                             drift_when_blind=drift)  # fmt: skip
        agent.learn(48)
        runs.append((agent.rollout_buffer.advantages.copy(), agent.policy.state_dict()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    assert all(np.array_equal(runs[0][1][key], runs[1][1][key]) for key in runs[0][1])


def test_the_flag_is_checked_saved_and_absent_from_older_saves(tmp_path):
    with pytest.raises(ValueError, match="drift_when_blind must be True or False, got 'yes'"):
        model(drift="yes")  # type: ignore[arg-type]
    agent = model(drift=True)
    agent.save(tmp_path / "drift")
    assert OrderGradPPO.load(tmp_path / "drift").drift_when_blind is True
    assert OrderGradPPO.saved_before["drift_when_blind"] is False  # a save from before the flag loads without it
