"""Clones of the project's envs (``copy.deepcopy``, ``pickle``) continue exactly like the original and reseed like
a fresh env, for every face: ``gym.Env``, the native Gymnasium ``VectorEnv`` and the SB3 ``VecEnv`` (issue 9,
defect 5).

The SB3 face is the bare ``TailRiskVecEnv`` and the monitored one ``make_sb3_vec_env`` gives the agents: SB3's own
``VecMonitor`` keeps the class's members, a ``mappingproxy``, in every instance and cannot be copied or pickled
whatever the env underneath (``DummyVecEnv`` included, stable-baselines3 2.9), so the native batch's is one that can.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl import OrderGradPPO
from ordergrad_rl.envs import TailRiskVecEnv, make_sb3_vec_env

SHORT = {"traded_days": 20}  # 4 decisions per episode: a rollout of 13 steps crosses several resets
N_ENVS = 3
CLONES: dict[str, Callable[[Any], Any]] = {
    "deepcopy": copy.deepcopy,
    "pickle": lambda env: pickle.loads(pickle.dumps(env)),
}


class Face:
    """One way of driving an env: ``make``, ``reset(seed)``, ``step(action) -> (obs, reward)`` (auto-resetting)."""

    def __init__(self, make: Callable[[], Any], action_space: Callable[[Any], gym.Space]) -> None:
        self.make = make
        self.action_space = action_space

    def actions(self, env: Any, n: int) -> list[Any]:
        space = self.action_space(env)
        space.seed(123)
        return [space.sample() for _ in range(n)]


def single(env_id: str, **kwargs: Any) -> Face:
    return Face(lambda: gym.make(env_id, **kwargs), lambda env: env.action_space)


FACES: dict[str, Face] = {
    "tailrisk-env": single("SyntheticTailRisk-v0", **SHORT),
    "bandit-env": single("RiskyBandit-v0"),
    "lava-env": single("RiskyLavaGrid-v0", slip=0.5),
    "maze-env": single("GuardedMaze-v0", slip=0.5, guard_prob=0.5),
    "heavy-bandit-env": single("HeavyTailBandit-v0"),
    "nav-env": single("RiskyShortcutNav-v0", crash_prob=0.5),
    "tailrisk-vector": Face(
        lambda: gym.make_vec("SyntheticTailRisk-v0", num_envs=N_ENVS, **SHORT), lambda env: env.action_space
    ),
    "tailrisk-sb3": Face(
        lambda: TailRiskVecEnv(N_ENVS, **SHORT),
        lambda env: gym.vector.utils.batch_space(env.action_space, N_ENVS),
    ),
    "tailrisk-sb3-monitored": Face(
        lambda: make_sb3_vec_env("SyntheticTailRisk-v0", N_ENVS, env_kwargs=SHORT),
        lambda env: gym.vector.utils.batch_space(env.action_space, N_ENVS),
    ),
}


def reset(env: Any, seed: int) -> Any:
    if isinstance(env, (gym.Env, gym.vector.VectorEnv)):
        return env.reset(seed=seed)[0]
    env.seed(seed)  # SB3 VecEnv
    return env.reset()


def step(env: Any, action: Any) -> tuple[Any, Any]:
    if isinstance(env, gym.Env):
        obs, reward, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs = env.reset()[0]  # unseeded: the env's own generator continues
        return obs, reward
    if isinstance(env, gym.vector.VectorEnv):
        return env.step(action)[:2]  # NEXT_STEP autoreset
    return env.step(action)[:2]  # SB3: resets within the step


def assert_same(a: list[tuple[Any, Any]], b: list[tuple[Any, Any]]) -> None:
    assert len(a) == len(b)
    for t, ((obs_a, rew_a), (obs_b, rew_b)) in enumerate(zip(a, b, strict=True)):
        np.testing.assert_array_equal(obs_a, obs_b, err_msg=f"observation at step {t}")
        np.testing.assert_array_equal(rew_a, rew_b, err_msg=f"reward at step {t}")


EVERY_FACE_AND_CLONE = pytest.mark.parametrize(("face", "clone"), [(f, c) for f in FACES for c in CLONES])


def two_envs(face: str, n_actions: int) -> tuple[Any, Any, list[Any]]:
    """Two fresh envs of ``face`` and a fixed sequence of ``n_actions`` actions."""
    spec = FACES[face]
    first, second = spec.make(), spec.make()
    return first, second, spec.actions(first, n_actions)


@EVERY_FACE_AND_CLONE
def test_clone_taken_mid_episode_continues_like_the_original(face: str, clone: str) -> None:
    """Original and clone, stepped alternately after the copy, both replay an uncopied reference run."""
    reference, env, actions = two_envs(face, 15)
    reset(reference, 0)
    reset(env, 0)
    expected = [step(reference, action) for action in actions]
    head = [step(env, action) for action in actions[:2]]  # mid-episode for every env of the batch
    twin = CLONES[clone](env)
    tail_env, tail_twin = [], []
    for action in actions[2:]:  # interleaved: shared state between the two would show here
        tail_env.append(step(env, action))
        tail_twin.append(step(twin, action))
    assert_same(head + tail_env, expected)
    assert_same(head + tail_twin, expected)


@EVERY_FACE_AND_CLONE
def test_reseeded_clone_replays_a_fresh_env(face: str, clone: str) -> None:
    """``reset(seed=s)`` on a clone starts the episode that a fresh env seeded ``s`` starts, not the old one."""
    fresh, env, actions = two_envs(face, 13)
    reset(env, 0)
    for action in actions[:2]:
        step(env, action)
    twin = CLONES[clone](env)
    first = reset(twin, 1)
    np.testing.assert_array_equal(first, reset(fresh, 1))
    assert_same([step(twin, a) for a in actions], [step(fresh, a) for a in actions])


@pytest.mark.parametrize("env_id", ["SyntheticTailRisk-v0", "TargetSum-v0"])
def test_a_model_on_a_native_batch_deep_copies_as_sb3s_on_a_dummy_vec_env(env_id: str, tmp_path: Any) -> None:
    """``copy.deepcopy(model)`` of an agent built from a native-batch id (``VecMonitor(NativeVecEnv)``) and of the same
    agent loaded from its save, as SB3's ``PPO`` on the id's ``DummyVecEnv`` copies: it raised ``TypeError: cannot
    pickle 'mappingproxy' object`` from SB3's ``VecMonitor``."""
    model = OrderGradPPO("MlpPolicy", env_id, objective="top2@4", n_episodes=8, n_envs=2, seed=0)
    model.save(tmp_path / "model")
    loaded = OrderGradPPO.load(tmp_path / "model", env=model.get_env())
    for original in (model, loaded):
        twin = copy.deepcopy(original)
        assert twin.env is not original.env and twin.env.num_envs == 2
        obs = original.env.reset()
        actions = [m.predict(obs, deterministic=True)[0] for m in (original, twin)]
        np.testing.assert_array_equal(*actions)
