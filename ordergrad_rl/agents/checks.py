"""Argument and environment checks of the OrderGrad agents: clear errors at construction or at the step where an env
misbehaves, instead of a failure deep inside SB3 or torch later.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvObs, VecEnvStepReturn


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an int, or a ``ValueError`` naming ``name`` if it is not an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_schedule(name: str, value: Any, minimum: float = 0.0) -> None:
    """A finite number ``>= minimum``, or a schedule (a callable of the remaining progress), as SB3 accepts.

    :raises ValueError: anything else, e.g. the string ``"1e-2x"`` from a mistyped command line.
    """
    if callable(value):
        return
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ValueError(f"{name} must be a number or a schedule (callable), got {value!r}")
    if not (math.isfinite(value) and value >= minimum):
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value!r}")


def check_number(name: str, value: Any, minimum: float = -math.inf, allow_inf: bool = False) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a real number ``>= minimum``, finite unless ``allow_inf``."""
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating | np.integer):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or (math.isinf(value) and not allow_inf) or value < minimum:
        finite = "" if allow_inf else "finite "
        raise ValueError(f"{name} must be a {finite}number >= {minimum}, got {value!r}")


def check_policy_kwargs(policy_kwargs: Any) -> None:
    """``policy_kwargs`` must be ``None`` or a dict with string keys; ``net_arch`` a list of layer sizes or a dict
    ``pi=[...], vf=[...]`` (or SB3's older ``[dict(pi=..., vf=...)]``).

    :raises ValueError: the first problem found, naming the key.
    """
    if policy_kwargs is None:
        return
    if not isinstance(policy_kwargs, Mapping):
        raise ValueError(f"policy_kwargs must be a dict of policy arguments, got {type(policy_kwargs).__name__}")
    for key in policy_kwargs:
        if not isinstance(key, str):
            raise ValueError(f"policy_kwargs keys must be argument names (str), got {key!r}")
    if "net_arch" in policy_kwargs:
        _check_net_arch(policy_kwargs["net_arch"])


def _check_net_arch(net_arch: Any) -> None:
    def layers(value: Any, where: str) -> None:
        if not isinstance(value, list | tuple) or not all(
            isinstance(size, int | np.integer) and not isinstance(size, bool) and size > 0 for size in value
        ):
            raise ValueError(f"policy_kwargs['net_arch']{where} must be a list of positive layer sizes, got {value!r}")

    if net_arch is None:
        return
    if isinstance(net_arch, list | tuple) and len(net_arch) == 1 and isinstance(net_arch[0], Mapping):
        net_arch = net_arch[0]  # SB3's older format [dict(pi=..., vf=...)]
    if isinstance(net_arch, Mapping):
        for key, value in net_arch.items():
            if key not in ("pi", "vf", "qf"):
                raise ValueError(f"policy_kwargs['net_arch'] keys are 'pi' and 'vf', got {key!r}")
            layers(value, f"[{key!r}]")
        return
    layers(net_arch, "")


def _all_finite(obs: Any) -> bool:
    arrays = obs.values() if isinstance(obs, Mapping) else (obs,)
    return all(np.asarray(a).dtype.kind not in "fc" or np.isfinite(a).all() for a in arrays)


def finite_step_error(obs: Any, rewards: np.ndarray, where: str) -> str | None:
    """A message naming the first env whose observation or reward is NaN or infinite, or ``None``.

    :param obs: ``[n_envs, ...]`` observations (or a dict of them), as a VecEnv returns them.
    :param rewards: ``[n_envs]`` rewards, or ``None`` at a reset.
    :param where: when it happened, e.g. ``"at num_timesteps=1024"``.
    """
    if _all_finite(obs) and (rewards is None or np.isfinite(rewards).all()):
        return None  # the common case, one vectorized test per array
    if rewards is not None:
        bad = np.flatnonzero(~np.isfinite(np.asarray(rewards, dtype=np.float64)))
        if bad.size:
            i = int(bad[0])
            return f"env {i} returned the reward {float(rewards[i])} {where}: rewards must be finite"
    for key, array in obs.items() if isinstance(obs, Mapping) else [(None, obs)]:
        array = np.asarray(array)
        if array.dtype.kind not in "fc":
            continue
        flat = array.reshape(array.shape[0], -1)
        bad_env = np.flatnonzero(~np.isfinite(flat).all(axis=1))
        if bad_env.size:
            i = int(bad_env[0])
            j = int(np.flatnonzero(~np.isfinite(flat[i]))[0])
            name = "observation" if key is None else f"observation[{key!r}]"
            return (
                f"env {i} returned an {name} with {flat[i, j].item()} at flat index {j} {where}: "
                "observations must be finite (check the env, or wrap it in a normalization that cannot divide by 0)"
            )
    return None


def check_finite_step(obs: Any, rewards: np.ndarray | None, where: str) -> None:
    """``ValueError`` from :func:`finite_step_error` if an observation or reward is not finite."""
    message = finite_step_error(obs, rewards, where)
    if message is not None:
        raise ValueError(message)


class FiniteStepCheckVecEnv(VecEnvWrapper):
    """Passes every step of ``venv`` through :func:`check_finite_step` before the collector (and the policy) sees it.

    Used around SB3's own collection loop (Q-critic mode); the episodic collector calls the check directly.

    :param venv: the training env.
    :param timesteps: the algorithm's ``num_timesteps`` now (named in the error message).
    """

    def __init__(self, venv: VecEnv, timesteps: Callable[[], int]) -> None:
        super().__init__(venv)
        self._timesteps = timesteps

    def reset(self) -> VecEnvObs:
        obs = self.venv.reset()
        check_finite_step(obs, None, "at a reset")
        return obs

    def step_wait(self) -> VecEnvStepReturn:
        obs, rewards, dones, infos = self.venv.step_wait()
        check_finite_step(obs, rewards, f"at num_timesteps={self._timesteps() + self.num_envs}")
        return obs, rewards, dones, infos


def check_common_arguments(
    learning_rate: Any, gamma: Any, ent_coef: Any, max_grad_norm: Any, policy_kwargs: Any
) -> None:
    """The constructor arguments every OrderGrad algorithm shares, checked before SB3 uses them.

    :raises ValueError: naming the first bad argument.
    """
    check_schedule("learning_rate", learning_rate)
    if gamma is not None:
        check_number("gamma", gamma)
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")
    check_number("ent_coef", ent_coef)
    check_number("max_grad_norm", max_grad_norm, allow_inf=True)  # inf: no clipping
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be > 0, got {max_grad_norm}")
    check_policy_kwargs(policy_kwargs)
