"""Every numeric constructor argument of the project's envs is checked: NaN, infinities, bools, strings and
out-of-range values raise ``ValueError`` naming the argument (issue 9, defect 10)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.envs import make_sb3_vec_env
from ordergrad_rl.envs.minatar import make_minatar_env, make_minatar_vec_env

NAN, INF = float("nan"), float("inf")

LAVA_CASES = [
    {"step_reward": NAN},
    {"step_reward": -INF},
    {"goal_reward": INF},
    {"goal_reward": NAN},
    {"lava_reward": -INF},
    {"lava_reward": "-15"},
    {"step_reward": True},
    {"slip": NAN},
    {"slip": INF},
    {"slip": -0.1},
    {"slip": "0.1"},
]
TAILRISK_CASES = [
    {"p": INF},
    {"p": True},
    {"cost": NAN},
    {"cost": INF},
    {"cash_cap": NAN},
    {"cash_cap": "0.1"},
    {"ema_rate": NAN},
    {"ema_rate": -INF},
    {"traded_days": NAN},
    {"traded_days": 80.0},
    {"rebalance_every": INF},
    {"lookback": NAN},
]


@pytest.mark.parametrize("kwargs", LAVA_CASES, ids=repr)
def test_lava_grid_refuses_bad_numbers(kwargs: dict) -> None:
    (name,) = kwargs
    with pytest.raises(ValueError, match=name):
        gym.make("RiskyLavaGrid-v0", **kwargs)


def test_lava_grid_refuses_overflowing_rewards() -> None:
    with pytest.raises(ValueError, match="step_reward \\+ goal_reward overflows"):
        gym.make("RiskyLavaGrid-v0", step_reward=1e308, goal_reward=1e308)
    env = gym.make("RiskyLavaGrid-v0", step_reward=-2, goal_reward=5, lava_reward=-20)  # ints are fine
    outcomes = {state: reward for _, state, reward, _ in env.unwrapped.P[8][1]}  # right, from G's left neighbour
    assert (outcomes[9], outcomes[3], outcomes[13]) == (3.0, -2.0, -22.0)


@pytest.mark.parametrize("kwargs", TAILRISK_CASES, ids=repr)
@pytest.mark.parametrize("face", ["env", "vector", "sb3"])
def test_tailrisk_refuses_bad_numbers(kwargs: dict, face: str) -> None:
    (name,) = kwargs
    with pytest.raises(ValueError, match=name):
        if face == "env":
            gym.make("SyntheticTailRisk-v0", **kwargs)
        elif face == "vector":
            gym.make_vec("SyntheticTailRisk-v0", num_envs=2, **kwargs)
        else:
            make_sb3_vec_env("SyntheticTailRisk-v0", 2, env_kwargs=kwargs)


@pytest.mark.parametrize("n", [0, 2.0, NAN, True])
def test_batch_sizes_are_checked(n: object) -> None:
    with pytest.raises(ValueError, match="num_envs"):
        gym.make_vec("SyntheticTailRisk-v0", num_envs=n)
    for env_id in ("SyntheticTailRisk-v0", "CartPole-v1"):
        with pytest.raises(ValueError, match="n_envs"):
            make_sb3_vec_env(env_id, n)
    with pytest.raises(ValueError, match="n_envs"):
        make_minatar_vec_env("breakout", n)


@pytest.mark.parametrize("steps", [0, -5, 2.5, INF])
def test_minatar_time_limit_is_checked(steps: object) -> None:
    with pytest.raises(ValueError, match="max_episode_steps"):
        make_minatar_env("breakout", max_episode_steps=steps)
