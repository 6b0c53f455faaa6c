"""Which episodes an episodic rollout keeps: exactly i.i.d. (brute-force enumeration), and few steps wasted."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import EpisodicRolloutBuffer, OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE

# Episode lengths and their probabilities: a short and a long episode, so that a length-biased rule shows.
LENGTHS, PROBS = (1, 3), (0.7, 0.3)


def run_buffer(sequences: list[tuple[int, ...]], buffer_size: int) -> tuple[EpisodicRolloutBuffer, int]:
    """Fill a buffer from envs whose successive episodes have the given lengths; return it and the vector steps."""
    n_envs = len(sequences)
    buffer = EpisodicRolloutBuffer(buffer_size, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", n_envs=n_envs)
    episode, t, steps = [0] * n_envs, [0] * n_envs, 0
    while not buffer.full:
        dones = np.array([t[e] + 1 == sequences[e][episode[e]] for e in range(n_envs)])
        zeros = np.zeros(n_envs)
        buffer.add(zeros[:, None], zeros, zeros, np.ones(n_envs), dones)
        steps += 1
        for e in range(n_envs):
            t[e] = 0 if dones[e] else t[e] + 1
            episode[e] += bool(dones[e])
    buffer.finalize()
    return buffer, steps


def first_finished(sequences: list[tuple[int, ...]], n_episodes: int) -> tuple[int, ...]:
    """The naive rule: the first ``n_episodes`` episodes to end (ties in env order)."""
    ends = sorted((sum(seq[: i + 1]), e, seq[i]) for e, seq in enumerate(sequences) for i in range(len(seq)))
    return tuple(sorted(length for _, _, length in ends[:n_episodes]))


def iid_distribution(n_episodes: int) -> dict[tuple[int, ...], float]:
    """Distribution of the sorted lengths of ``n_episodes`` i.i.d. episodes."""
    out: Counter = Counter()
    for draw in itertools.product(range(len(LENGTHS)), repeat=n_episodes):
        out[tuple(sorted(LENGTHS[i] for i in draw))] += math.prod(PROBS[i] for i in draw)
    return dict(out)


@pytest.mark.parametrize(("n_envs", "buffer_size"), [(2, 2), (3, 1), (2, 3)])
def test_kept_episodes_are_exactly_iid(n_envs: int, buffer_size: int) -> None:
    n_episodes = n_envs * buffer_size
    kept: Counter = Counter()
    naive: Counter = Counter()
    # Every env's first n_episodes episode lengths (enough for any rule), with their probability.
    for draw in itertools.product(range(len(LENGTHS)), repeat=n_envs * n_episodes):
        sequences = [tuple(LENGTHS[i] for i in draw[e * n_episodes : (e + 1) * n_episodes]) for e in range(n_envs)]
        p = math.prod(PROBS[i] for i in draw)
        buffer, _ = run_buffer(sequences, buffer_size)
        assert buffer.size() == buffer.episode_lengths.sum()  # every kept episode complete, nothing else stored
        kept[tuple(sorted(buffer.episode_lengths.tolist()))] += p
        naive[first_finished(sequences, n_episodes)] += p
    expected = iid_distribution(n_episodes)
    assert kept.keys() == expected.keys()
    for lengths, p in expected.items():
        assert kept[lengths] == pytest.approx(p, abs=1e-12), lengths
    # The comparison has power: the first-finished rule over-samples short episodes.
    assert naive[(1,) * n_episodes] > expected[(1,) * n_episodes] + 0.05


def test_an_env_with_short_episodes_does_not_wait_for_its_quota() -> None:
    # Env 0's episodes last 1 step, env 1's 10 steps, 4 episodes per rollout: the first 4 episodes started are env
    # 0's first three and env 1's first, all ended after 10 vector steps (a per-env quota of 2 episodes took 20).
    buffer, steps = run_buffer([(1,) * 10, (10,) * 2], buffer_size=2)
    assert steps == 10 and sorted(buffer.episode_lengths.tolist()) == [1, 1, 1, 10]
    assert buffer.size() == 13  # of 2 x 10 env steps: env 0 idles 7 steps after its third episode


class ConstantStep(gym.Env):
    """One-step episodes from one observation (not 0: gSDE's noise is linear in the policy's features, all 0 there
    at SB3's zero-initialized biases); the reward is the action's first coordinate."""

    observation_space = spaces.Box(0.0, 1.0, (1,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.ones(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.ones(1, np.float32), float(np.clip(action[0], -1.0, 1.0)), True, False, {}


@pytest.mark.parametrize(
    ("algo", "policy"),
    [(OrderGradPPO, "MlpPolicy"), (OrderGradREINFORCE, "MlpPolicy"), (OrderGradRecurrentPPO, "MlpLstmPolicy")],
)
@pytest.mark.parametrize("n_envs", [1, 3])
def test_gsde_episodes_are_independent_draws(algo: type, policy: str, n_envs: int) -> None:
    # gSDE's noise is a function of the state while its matrix is kept; SB3 keeps one per env for the whole rollout
    # (sde_sample_freq=-1), which would make every episode from this one observation repeat the env's first.
    env = DummyVecEnv([ConstantStep] * n_envs)
    model = algo(policy, env, objective="cvar0.2", n_episodes=64, use_sde=True, seed=0)
    model.collect_rollouts(model.env, model._setup_learn(10**9, None)[1], model.rollout_buffer, 0)
    actions = model.rollout_buffer.actions[:, 0]
    assert len(np.unique(actions)) == 64
    # And they are draws of one normal distribution, the policy's at that observation (read off the stored log-probs,
    # a quadratic in the action): standardized, mean 0 and var 1 (64 draws: the mean's sd is 1/8, the var's ~0.18).
    quadratic, linear, _ = np.polyfit(actions, model.rollout_buffer.log_probs, 2)
    var = -0.5 / quadratic
    z = (actions - linear * var) / np.sqrt(var)
    assert abs(z.mean()) < 0.5
    assert 0.5 < z.var() < 1.6


class ThreeSteps(gym.Env):
    """Episodes of exactly 3 steps, one continuous action."""

    observation_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.ones(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.ones(1, np.float32), 0.0, self.t >= 3, False, {}


def test_gsde_sample_freq_counts_the_rollouts_steps_as_sb3() -> None:
    # The docstrings said "every n steps within an episode"; the matrix is redrawn at every episode start and, as SB3
    # counts, every n steps from the rollout's start: with 3-step episodes and n = 4, inside the 2nd and 3rd episodes.
    model = OrderGradPPO("MlpPolicy", ThreeSteps(), objective="mean", n_episodes=4, use_sde=True, sde_sample_freq=4)
    matrices: list[object] = []
    collect = model._env_actions

    def recording(actions: np.ndarray) -> np.ndarray:
        matrices.append(model.policy.action_dist.exploration_mat)
        return collect(actions)

    model._env_actions = recording  # type: ignore[method-assign]
    model.collect_rollouts(model.env, model._setup_learn(10**9, None)[1], model.rollout_buffer, 0)
    fresh = [step for step in range(1, len(matrices)) if matrices[step] is not matrices[step - 1]]
    assert fresh == [3, 4, 6, 8, 9]  # episode starts 3, 6, 9; rollout steps 4 and 8


class _FirstStepPays(gym.Env):
    """Three-step episodes whose first step alone pays 1: every whole episode returns 1."""

    observation_space = spaces.Box(0.0, 3.0, (1,), dtype=np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        return np.full(1, self.t, dtype=np.float32), float(self.t == 1), self.t >= 3, False, {}


@pytest.mark.parametrize("algo", [OrderGradREINFORCE, OrderGradPPO])
@pytest.mark.parametrize("stop_at", [1, 4])  # the first step of the first episode and of the second
def test_a_rollout_after_a_callback_stop_holds_whole_episodes(algo: type, stop_at: int) -> None:
    # A callback that returns False stops training after the envs took a step no rollout stores. Stopped at an
    # episode's first step, a resumed learn(..., reset_num_timesteps=False) went on from the observation before it
    # and counted the episode's last two steps as a whole episode: its return was 0, never a possible one.

    class StopAt(BaseCallback):
        def _on_step(self) -> bool:
            return self.n_calls != stop_at

    class Returns(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.returns: list[np.ndarray] = []

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            self.returns.append(self.model.rollout_buffer.episode_returns.copy())

    model = algo("MlpPolicy", _FirstStepPays(), objective="mean", n_episodes=4, seed=0)
    model.learn(100, callback=StopAt())
    assert model.num_timesteps == stop_at
    returns = Returns()
    model.learn(24, callback=returns, reset_num_timesteps=False)
    assert returns.returns and all(np.array_equal(r, np.ones(4)) for r in returns.returns)
