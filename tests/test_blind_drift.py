"""``drift_when_blind`` and ``novelty_when_blind``: a rollout blind to success (every return the same, no other ever
seen) gets random zero-mean episode weights, or its episodes' standardized novelty; every other rollout is trained
exactly as without the flag."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common.novelty import BLIND_PATIENCE_EPISODES, episode_novelty, novelty_weights

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


class ChainEnv(gym.Env):
    """A walk on 0..10 from 0 (action 1 right, 0 left): every episode times out after 10 steps at -10, so every
    rollout is blind; the episodes that walk right reach the rarely visited far end."""

    observation_space = gym.spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.t = self.x = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        self.x = min(max(self.x + (1 if action == 1 else -1), 0), 10)
        return np.array([self.x / 10], np.float32), -1.0, False, self.t >= 10, {}


def model(drift: bool, env: Any = None, seed: int | None = 0, novelty: bool | None = False) -> OrderGradPPO:
    env = DummyVecEnv([TimeOutEnv]) if env is None else env
    # Whole-episode weights (no per-step baseline, whose terms a blind rollout would keep): the weights are the test.
    return OrderGradPPO("MlpPolicy", env, objective="cvar0.25", n_episodes=N, seed=seed, n_epochs=1,
                        drift_when_blind=drift, novelty_when_blind=novelty, value_baseline=False)  # fmt: skip


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
    # No drift: a tie at the best return seen, which trains on the discounted critic's advantages (critic_when_tied).
    assert not agent._rollout_blind and agent._rollout_critic_trained


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


def test_a_blind_rollout_gets_its_episodes_standardized_novelty(monkeypatch):
    monkeypatch.setattr(OrderGradPPO, "blind_patience_episodes", 0)  # no wait: the first rollout is the one checked
    agent = model(drift=False, novelty=True)
    agent.learn(3 * N)
    buffer = agent.rollout_buffer
    expected = novelty_weights(episode_novelty(buffer.observations, agent.observation_space, buffer.episode_index, N))
    assert agent._rollout_blind and np.any(expected)
    np.testing.assert_allclose(episode_weights(agent), expected, rtol=1e-6)


def test_novelty_waits_for_chance_then_acts_and_a_resumed_run_waits_as_an_uninterrupted_one(tmp_path):
    wait = BLIND_PATIENCE_EPISODES // N  # blind rollouts trained as they are (no baseline: zero advantages)
    assert wait * N == BLIND_PATIENCE_EPISODES and wait > 1
    assert OrderGradPPO.blind_patience_episodes == BLIND_PATIENCE_EPISODES  # the default wait
    agent = model(drift=False, novelty=True)
    for _ in range(wait):
        agent.learn(3 * N, reset_num_timesteps=False)
        assert agent._rollout_blind and not np.any(agent.rollout_buffer.advantages)
    agent.learn(3 * N, reset_num_timesteps=False)
    acted = episode_weights(agent)
    assert acted.std() == pytest.approx(1.0, abs=1e-5)  # the first rollout after the wait takes its novelty
    resumed = model(drift=False, novelty=True)
    resumed.learn(3 * N * (wait - 1))
    resumed.save(tmp_path / "waiting")
    resumed = OrderGradPPO.load(tmp_path / "waiting", env=DummyVecEnv([TimeOutEnv]))
    resumed.learn(3 * N, reset_num_timesteps=False)  # the last rollout of the wait, after the load
    assert not np.any(resumed.rollout_buffer.advantages)
    resumed.learn(3 * N, reset_num_timesteps=False)
    assert np.any(resumed.rollout_buffer.advantages)


def test_novelty_walks_a_blind_policy_towards_new_states():
    # Blind throughout (every return -10): without a remedy only the entropy bonus acts, and it holds P(right) at
    # one half; the novelty steps towards the walks that reach the far end once the wait is over.
    p_right = {}
    wait = BLIND_PATIENCE_EPISODES // 16
    for novelty in (False, True):
        agent = OrderGradPPO("MlpPolicy", DummyVecEnv([ChainEnv]), objective="cvar0.25", n_episodes=16, seed=0,
                             novelty_when_blind=novelty, value_baseline=False)  # fmt: skip
        agent.learn((wait + 6) * 160)
        with th.no_grad():
            probs = agent.policy.get_distribution(th.linspace(0, 1, 11).reshape(-1, 1)).distribution.probs
        p_right[novelty] = float(probs[:, 1].mean())
    assert abs(p_right[False] - 0.5) < 0.05
    assert p_right[True] > 0.7


def test_novelty_is_checked_saved_and_absent_from_older_saves(tmp_path):
    with pytest.raises(ValueError, match="novelty_when_blind must be True, False or None, got 'yes'"):
        model(drift=False, novelty="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="drift_when_blind and novelty_when_blind"):
        model(drift=True, novelty=True)
    assert model(drift=False, novelty=None).novelty_when_blind is True  # None: on for a ranked objective
    assert model(drift=True, novelty=None).novelty_when_blind is False  # unless drift_when_blind takes the rollouts
    mean = OrderGradPPO("MlpPolicy", DummyVecEnv([TimeOutEnv]), objective="mean", n_episodes=N)
    assert mean.novelty_when_blind is False  # the mean's reward-to-go has a direction on a tied rollout
    agent = model(drift=False, novelty=True)
    assert agent.hparams()["novelty_when_blind"] is True
    agent.save(tmp_path / "novelty")
    assert OrderGradPPO.load(tmp_path / "novelty").novelty_when_blind is True
    assert OrderGradPPO.saved_before["novelty_when_blind"] is False


def test_load_switching_drift_when_blind_gives_novelty_the_new_models_default(tmp_path):
    """``load(path, drift_when_blind=...)`` without ``novelty_when_blind``: a saved novelty ruled out by the new drift
    (one of them at most) or forced off by the saved one becomes the default a new model gets (it raised before:
    "drift_when_blind and novelty_when_blind")."""
    model(drift=False, novelty=None).save(tmp_path / "novelty")
    loaded = OrderGradPPO.load(tmp_path / "novelty", drift_when_blind=True)
    assert (loaded.drift_when_blind, loaded.novelty_when_blind) == (True, False)
    assert model(drift=True, novelty=None).novelty_when_blind is False  # a new model's
    loaded.save(tmp_path / "drift")
    back = OrderGradPPO.load(tmp_path / "drift", drift_when_blind=False)
    assert (back.drift_when_blind, back.novelty_when_blind) == (False, True)
    assert OrderGradPPO.load(tmp_path / "drift").novelty_when_blind is False  # a plain load keeps the save's
    model(drift=False, novelty=False).save(tmp_path / "neither")  # the user's choice, which drift=False keeps
    assert OrderGradPPO.load(tmp_path / "neither", drift_when_blind=False).novelty_when_blind is False
    with pytest.raises(ValueError, match="drift_when_blind and novelty_when_blind"):
        OrderGradPPO.load(tmp_path / "novelty", drift_when_blind=True, novelty_when_blind=True)


def test_set_random_seed_after_construction_repeats_the_drift(tmp_path):
    """As SB3's: a model built without a seed and seeded by ``set_random_seed`` trains the same twice. The drift drew
    from a generator seeded with the constructor's seed (``None``), which ``set_random_seed`` left alone."""
    weights = []
    for _ in "ab":
        th.manual_seed(0)  # the policy's initial weights (drawn at construction)
        agent = model(drift=True, seed=None)
        agent.set_random_seed(3)
        agent.learn(3 * N)
        assert agent._rollout_blind
        weights.append(episode_weights(agent))
    np.testing.assert_array_equal(weights[0], weights[1])
    np.testing.assert_array_equal(weights[0], episode_weights(model(drift=True, seed=3).learn(3 * N)))  # as seed=3
    # load seeds the drift with the saved seed, as it does the group contexts (constructor and load: unchanged)
    seeded = model(drift=True, seed=0)
    seeded.set_random_seed(3)
    seeded.save(tmp_path / "drift")
    loaded = OrderGradPPO.load(tmp_path / "drift", env=DummyVecEnv([TimeOutEnv]))
    np.testing.assert_array_equal(episode_weights(loaded.learn(3 * N)), episode_weights(model(True).learn(3 * N)))
