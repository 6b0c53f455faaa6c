"""The training env of an OrderGrad algorithm, from an env id, a ``gym.Env`` or a ``VecEnv``, and its episode limit."""

from __future__ import annotations

from typing import Any, overload

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.checks import check_observation_space, check_policy_action_space
from ordergrad_rl.envs.native_vector import NativeVectorEnv
from ordergrad_rl.envs.sb3_vec_env import (
    env_spec,
    has_native_batch,
    make_sb3_vec_env,
    native_batch_spec,
    native_sb3_vec_env,
)
from ordergrad_rl.envs.time_limits import TimeLimitAtMost, time_limits

#: An env object the agents train and evaluate on: SB3's ``GymEnv`` (a ``gym.Env`` or a ``VecEnv``) or a Gymnasium
#: vector env, a native batch's ``gym.make_vec`` (others are refused: :func:`sb3_vec_env_of`). An env id is ``str``.
AgentEnv = GymEnv | gym.vector.VectorEnv


def build_env(env: AgentEnv | str, n_envs: int | None, seed: int | None, n_episodes: int | None = None) -> GymEnv:
    """The training env of an algorithm.

    * An env id becomes ``make_sb3_vec_env(env, n_envs, seed)``. ``n_envs=None``: ``n_episodes`` envs if the id has
      a native batch (the tail-risk ids: one NumPy batch steps all episodes of a rollout at once), else 1.
    * A ``gym.Env`` made by ``gym.make`` from an id with a native batch, with no wrapper added and no
      ``render_mode``, and ``n_envs=None``
      becomes that batch of ``n_episodes`` envs with the same kwargs (the same episode distribution, about
      ``n_episodes`` times fewer Python steps). Pass ``n_envs=1`` to train on the env object itself.
    * A Gymnasium vector env: see :func:`sb3_vec_env_of` (a native batch gets its SB3 face, others are refused).
    * Any other env is returned as is (SB3 wraps it).

    :param n_episodes: episodes per rollout (episodic mode), ``None`` in step-based modes.
    :raises ValueError: ``n_envs`` not a positive integer, or given for an env object with a different number of
        envs; a Gymnasium vector env other than a native batch.
    """
    if n_envs is not None and (isinstance(n_envs, bool) or not isinstance(n_envs, int | np.integer) or n_envs < 1):
        raise ValueError(f"n_envs must be a positive integer or None, got {n_envs!r}")
    if isinstance(env, gym.vector.VectorEnv):
        env = sb3_vec_env_of(env)
    if isinstance(env, str):
        if n_envs is None:
            n_envs = n_episodes if n_episodes is not None and has_native_batch(env) else 1
        return make_sb3_vec_env(env, int(n_envs), seed=seed)
    if n_envs is None:
        spec = native_batch_spec(env) if isinstance(env, gym.Env) and n_episodes is not None else None
        if spec is not None:
            return make_sb3_vec_env(spec.id, n_episodes, seed=seed, env_kwargs=spec.kwargs)  # type: ignore[arg-type]
        return env
    if n_envs != 1 and getattr(env, "num_envs", 1) != n_envs:
        raise ValueError(
            f"n_envs={n_envs} only builds envs from an env id; the env passed has num_envs="
            f"{getattr(env, 'num_envs', 1)}"
        )
    return env


def check_env_given(algorithm: str, env: Any, init_setup_model: bool) -> None:
    """``ValueError`` for a constructor given ``env=None`` that builds its model (``_init_setup_model``): the policy
    is built for the env's spaces, and SB3's constructor failed later inside on an attribute of the missing env
    (``'PPO' object has no attribute 'observation_space'``; the OrderGrad defaults on ``n_envs`` or
    ``action_space``). SB3's ``load`` builds without an env and without the model, which stays allowed.

    :param algorithm: the class name, in the message.
    """
    if env is None and init_setup_model:
        raise ValueError(
            f"{algorithm}(policy, env=None): the policy is built for the env's spaces, so the constructor needs an env "
            "(an env id, a gymnasium.Env or a VecEnv); a model without one comes from "
            f"{algorithm}.load(path), and set_env(env) gives it one"
        )


def sb3_vec_env_of(env: gym.vector.VectorEnv) -> VecEnv:
    """The SB3 ``VecEnv`` that trains on a Gymnasium vector env: a native batch (``gym.make_vec`` of the tail-risk and
    TargetSum ids, unwrapped) gets its SB3 face (:func:`~ordergrad_rl.envs.sb3_vec_env.native_sb3_vec_env`).

    :raises ValueError: any other Gymnasium vector env (``SyncVectorEnv``, ``AsyncVectorEnv``, a vector wrapper):
        SB3's algorithms step SB3 ``VecEnv`` objects, whose autoreset and info layout differ; SB3 refuses them with a
        message about OpenAI Gym.
    """
    if isinstance(env, NativeVectorEnv):
        return native_sb3_vec_env(env)
    raise ValueError(
        f"the env is a Gymnasium vector env ({type(env).__name__}), which SB3's algorithms do not step: pass the env "
        "id (with n_envs=...), a gym.Env, or an SB3 VecEnv, e.g. stable_baselines3.common.env_util.make_vec_env("
        "env_id, n_envs, env_kwargs=..., vec_env_cls=SubprocVecEnv) in place of gym.make_vec"
    )


def wrap_env(env: AgentEnv, verbose: int = 0, monitor_wrapper: bool = True) -> VecEnv:
    """SB3's ``_wrap_env`` (of the constructor, ``load(path, env)`` and ``set_env``), after a Gymnasium vector env
    is made the SB3 ``VecEnv`` the agents train on (:func:`sb3_vec_env_of`: a native batch's face, any other refused
    with a ``ValueError`` naming SB3's ``make_vec_env``). A ``gym.Env``'s observation space is checked first
    (:func:`~ordergrad_rl.agents.common.checks.check_observation_space`): SB3's ``DummyVecEnv`` fails inside on one
    without a fixed shape (``Text``, ``Sequence``, ``Graph``, ``OneOf``), before the constructor's checks run. An action
    space no SB3 policy acts in is refused too (:func:`~ordergrad_rl.agents.common.checks.check_policy_action_space`),
    before SB3's constructor asserts it."""
    if isinstance(env, gym.vector.VectorEnv):
        env = sb3_vec_env_of(env)
    if isinstance(env, gym.Env):
        check_observation_space(env.observation_space)
    check_policy_action_space(env.action_space)  # before SB3's constructor asserts it (an AssertionError)
    return BaseAlgorithm._wrap_env(env, verbose, monitor_wrapper)


@overload
def rebuilt_env(env: AgentEnv, n_envs: int) -> AgentEnv: ...
@overload
def rebuilt_env(env: str, n_envs: int) -> str: ...
def rebuilt_env(env: AgentEnv | str, n_envs: int) -> AgentEnv | str:
    """The env that ``set_env`` and ``load`` give a model of ``n_envs`` envs: a ``gym.Env`` that :func:`build_env`
    rebuilds as a native batch becomes that batch of ``n_envs`` envs (what the constructor trained on), so the
    object the model was built from can be passed again; anything else is returned as is (SB3 wraps it and checks
    its number of envs)."""
    if n_envs > 1 and isinstance(env, gym.Env):
        return build_env(env, None, None, n_envs)
    return env


def first_env_attr(venv: VecEnv, name: str) -> Any:
    """The attribute ``name`` of ``venv``'s first env, or ``None`` where its envs lack it. Asked with ``has_attr``
    first: a ``SubprocVecEnv``'s worker dies on a ``get_attr`` of a missing attribute."""
    return venv.get_attr(name, [0])[0] if venv.has_attr(name) else None


def episode_limit(env: AgentEnv | str | None) -> int | None:
    """The ``TimeLimit`` of ``env``'s episodes (``max_episode_steps`` of its spec, else of a ``TimeLimit`` wrapper
    around an env without a registered spec; a ``VecEnv``'s first env), or ``None`` when it has none or it cannot be
    read (an unknown id is left to :func:`build_env` to refuse), or there is no env (``None``).

    Several ``TimeLimit`` wrappers give the smallest limit: Gymnasium truncates at whichever comes first, while the
    spec names the outermost. A ``gym.Env``'s or a ``DummyVecEnv``'s wrappers are read here, a ``SubprocVecEnv``'s
    in its worker (:func:`_worker_time_limit`), so both read the same limit.
    """
    spec: EnvSpec | None
    try:
        if isinstance(env, str):
            spec = env_spec(env)
        elif isinstance(env, gym.Env):
            spec = env.spec
        elif isinstance(env, VecEnv):
            spec = env.get_attr("spec", [0])[0]
        else:  # no env, or a Gymnasium vector env: a native batch has no TimeLimit (build_env refuses the others)
            return None
    except Exception:  # noqa: BLE001 - any env that does not expose its spec simply has no known limit
        return None
    limit = getattr(spec, "max_episode_steps", None)
    first = env if isinstance(env, gym.Env) else _first_local_env(env) if isinstance(env, VecEnv) else None
    if first is not None:
        limits = time_limits(first)
        if limits:
            limit = min(limits)
    elif isinstance(env, VecEnv):
        if limit is None:
            # gymnasium.wrappers.TimeLimit(env, n) around an unregistered env leaves its spec None.
            try:
                if env.env_is_wrapped(TimeLimit, [0])[0]:
                    # Asked first: a SubprocVecEnv's worker dies on a get_attr of a missing attribute.
                    limit = env.get_attr("_max_episode_steps", [0])[0]
            except Exception:  # noqa: BLE001 - no TimeLimit in the wrapper chain
                return None
        if isinstance(limit, int | np.integer) and limit > 1:
            limit = _worker_time_limit(env, int(limit))
    return int(limit) if isinstance(limit, int | np.integer) and limit > 0 else None


def _worker_time_limit(venv: VecEnv, outermost: int) -> int:
    """The smallest ``TimeLimit`` of ``venv``'s first env whose outermost one (its spec's) is ``outermost``, asked
    where the wrappers are (a ``SubprocVecEnv``'s worker) with ``env_is_wrapped(TimeLimitAtMost(n))``: one call where
    the outermost truncates first, a bisection (about ``log2(outermost)`` calls) where one inside it is smaller
    (``TimeLimit(gym.make("CartPole-v1"), 1000)``: 500). ``outermost`` where ``env_is_wrapped`` does not answer (a
    native batch has no wrappers, a ``VecEnv`` of one's own may not take it, or say yes to every class)."""

    def at_most(steps: int) -> bool:
        # ignore[arg-type]: SB3 types a wrapper class; is_wrapped asks it with isinstance (TimeLimitAtMost's doc).
        return bool(venv.env_is_wrapped(TimeLimitAtMost(steps), [0])[0])  # type: ignore[arg-type]

    try:
        if not at_most(outermost - 1) or at_most(0):  # no TimeLimit has 0 steps: a yes to anything is no answer
            return outermost
        low, high = 1, outermost - 1  # the smallest limit is in [low, high]
        while low < high:
            middle = (low + high) // 2
            low, high = (low, middle) if at_most(middle) else (middle + 1, high)
        return low
    except Exception:  # noqa: BLE001 - an env_is_wrapped that takes wrapper classes only: the spec's limit
        return outermost


def _first_local_env(venv: VecEnv) -> gym.Env | None:
    """The first env of a ``VecEnv`` that steps its envs in this process (SB3's ``DummyVecEnv``, under any
    ``VecEnvWrapper``), or ``None`` (a ``SubprocVecEnv``, a native batch)."""
    envs = getattr(venv.unwrapped, "envs", None)
    return envs[0] if isinstance(envs, list | tuple) and envs and isinstance(envs[0], gym.Env) else None


def env_arguments(env: GymEnv | None) -> dict[str, Any]:
    """The arguments ``env`` was made with beyond its registration (a ``VecEnv``'s first env): the ``gym.make``
    kwargs whose values differ from the registered spec's (but ``render_mode``, which SB3's ``make_vec_env`` sets
    itself, and which changes no episode), and ``max_episode_steps`` where its limit
    (:func:`episode_limit`) is not the registered one (``-1``: none, as ``gym.make`` takes it). What
    ``make_sb3_vec_env(id, n, env_kwargs=...)`` (and the commands' ``--env-kwargs``) takes to make it again; empty
    for an env as registered, one without a registered spec, or no env (``None``)."""
    if env is None:
        return {}
    try:
        spec = env.spec if isinstance(env, gym.Env) else env.get_attr("spec", [0])[0]
    except Exception:  # noqa: BLE001 - an env that does not expose its spec: nothing known
        return {}
    if not isinstance(spec, EnvSpec) or spec.id not in gym.registry:
        return {}
    registered = gym.registry[spec.id]
    missing = object()
    arguments = {
        key: value
        for key, value in spec.kwargs.items()
        if key != "render_mode" and registered.kwargs.get(key, missing) != value
    }
    limit = episode_limit(env)
    if limit != registered.max_episode_steps:
        arguments["max_episode_steps"] = -1 if limit is None else limit
    return arguments
