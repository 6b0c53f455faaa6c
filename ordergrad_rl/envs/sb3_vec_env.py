"""Stable-Baselines3 face of the tail-risk simulator, and the VecEnv factory used by the agents.

Imports SB3, so :mod:`ordergrad_rl.envs` loads this module only on first use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecMonitor
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvObs, VecEnvStepReturn

from ordergrad_rl.envs._checks import check_int
from ordergrad_rl.envs.tailrisk import TailRiskSimulator
from ordergrad_rl.envs.tailrisk_gym import tailrisk_spaces

#: Entry point of the ids that :func:`make_sb3_vec_env` runs on the native batch.
TAILRISK_ENTRY_POINT = "ordergrad_rl.envs.tailrisk_gym:SyntheticTailRiskEnv"


class TailRiskVecEnv(VecEnv):
    """SB3 ``VecEnv`` running ``num_envs`` SyntheticTailRisk episodes as one NumPy batch.

    Same results as ``DummyVecEnv`` over :class:`~ordergrad_rl.envs.tailrisk_gym.SyntheticTailRiskEnv`
    instances (env ``i`` seeded ``seed + i`` by :meth:`seed`), without a Python loop per env in
    the dynamics. SB3 semantics: a finished env is reset within the step that ends it; its info
    then carries ``terminal_observation``. Every info has the env's keys (``weights``,
    ``wealth``, ``drawdown``, ``max_drawdown``, ``disaster``, ``daily_returns``) and
    ``TimeLimit.truncated`` (always False: the fixed horizon is a termination). Rewards are
    float64 (``DummyVecEnv`` uses float32) so that they sum to ``log W_T`` exactly.

    Wrap it in ``VecMonitor`` for SB3's ``episode`` info (:func:`make_sb3_vec_env` does).

    :param num_envs: number of parallel episodes.
    :param simulator_kwargs: the arguments of ``SyntheticTailRiskEnv``.
    """

    render_mode = None

    def __init__(self, num_envs: int, **simulator_kwargs: Any) -> None:
        self.simulator = TailRiskSimulator(num_envs, **simulator_kwargs)
        observation_space, action_space = tailrisk_spaces(self.simulator)
        super().__init__(self.simulator.num_envs, observation_space, action_space)
        self.spec: gym.envs.registration.EnvSpec | None = None
        self._actions: np.ndarray | None = None
        self._not_truncated = [False] * self.num_envs

    def reset(self) -> VecEnvObs:
        obs = self.simulator.reset(seed=self._seeds)
        self._reset_seeds()
        self._reset_options()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_wait() called without step_async()")
        obs, reward, done, info, final_obs = self.simulator.step_autoreset(self._actions)
        self._actions = None
        # SB3 wants one dict per env: transpose the columns with C-level tolist()/list() calls.
        keys = [*info, "TimeLimit.truncated"]
        columns = [value.tolist() if value.ndim == 1 else list(value) for value in info.values()]
        infos = [dict(zip(keys, row, strict=True)) for row in zip(*columns, self._not_truncated, strict=True)]
        if final_obs is not None:
            for i in np.flatnonzero(done):  # once per episode end
                infos[i]["terminal_observation"] = final_obs[i]
        return obs, reward, done, infos

    def close(self) -> None:
        pass

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """The attribute, looked up on this adapter then on the simulator, once per index."""
        value = getattr(self, attr_name) if hasattr(self, attr_name) else getattr(self.simulator, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        """Set an attribute of the adapter; the batch shares it, so ``indices`` must cover all envs.

        Simulator parameters are fixed at construction: make a new env to change them.
        """
        if sorted(self._get_indices(indices)) != list(range(self.num_envs)):
            raise ValueError("TailRiskVecEnv is one batch: set_attr must address all envs")
        if hasattr(self.simulator, attr_name):
            raise ValueError(f"{attr_name!r} is a simulator parameter; create a new env to change it")
        setattr(self, attr_name, value)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Call a method of the adapter once and return its result for each index."""
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._get_indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def make_sb3_vec_env(
    env_id: str, n_envs: int, seed: int | None = None, env_kwargs: dict[str, Any] | None = None
) -> VecEnv:
    """An SB3 ``VecEnv`` of ``n_envs`` copies of a registered Gymnasium env, monitored.

    Ids whose entry point is ``SyntheticTailRiskEnv`` (``SyntheticTailRisk-v0``,
    ``SyntheticTailRiskDeploy-v0``, user variants) get the native batch
    ``VecMonitor(TailRiskVecEnv(...))``; any other id gets SB3's
    ``make_vec_env(env_id, n_envs, seed, env_kwargs=env_kwargs)`` (a ``DummyVecEnv`` of
    ``Monitor``-wrapped envs). Either way env ``i`` is seeded ``seed + i`` at the first reset and
    finished episodes carry ``info["episode"]``.

    :param env_id: registered Gymnasium id.
    :param n_envs: number of parallel envs.
    :param seed: base seed, or ``None`` for random seeds.
    :param env_kwargs: keyword arguments of the env (override the registered ones).
    :return: the vectorized env.
    """
    check_int("n_envs", n_envs, 1)
    spec = gym.spec(env_id)
    if spec.entry_point != TAILRISK_ENTRY_POINT:
        return make_vec_env(env_id, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)
    venv = TailRiskVecEnv(n_envs, **{**spec.kwargs, **(env_kwargs or {})})
    venv.spec = spec
    if seed is not None:
        venv.seed(seed)
    return VecMonitor(venv)


def has_native_batch(env_id: str) -> bool:
    """Whether :func:`make_sb3_vec_env` runs ``env_id`` as one NumPy batch (the tail-risk ids), so that many envs
    cost about as much as one.

    :raises gymnasium.error.Error: unknown env id.
    """
    return gym.spec(env_id).entry_point == TAILRISK_ENTRY_POINT


def native_batch_spec(env: gym.Env) -> gym.envs.registration.EnvSpec | None:
    """The spec of ``env`` if it can be rebuilt as a native batch: made by ``gym.make(id, **kwargs)`` from an id with
    a native batch (:func:`has_native_batch`), with no wrapper added after ``gym.make``; else ``None``.

    ``make_sb3_vec_env(spec.id, n, env_kwargs=spec.kwargs)`` then gives ``n`` envs with the same episode
    distribution as ``env``.
    """
    try:
        spec = env.spec
    except Exception:  # noqa: BLE001 - a user wrapper whose kwargs cannot be recorded: not rebuildable
        return None
    if spec is None or spec.additional_wrappers or not has_native_batch(spec.id):
        return None
    return spec
