"""What Stable-Baselines3 users bring to the OrderGrad agents: SB3 arguments, SB3 models and SB3 saves.

* ``n_steps`` (steps per env per rollout) has no meaning in episodic mode, where a rollout is ``n_episodes``
  complete episodes (the unbiased estimator needs whole, i.i.d. episodes). :func:`n_steps_error` answers it with the
  ``n_episodes`` that gives about as many steps on the user's env, measured from its first episodes
  (:func:`suggest_n_episodes`).
* :func:`critic_argument_error`: ``OrderGradREINFORCE`` has no critic, so A2C's ``gae_lambda`` / ``vf_coef`` are
  refused with the reason instead of a bare ``TypeError`` (:func:`tied_critic_argument_error`: OrderGradMaskablePPO's
  only critic is ``critic_when_tied``'s); :func:`optimizer_argument_error` does the same for A2C's
  ``use_rms_prop`` / ``rms_prop_eps`` (its optimizer is the policy's, Adam by default).
* :func:`from_sb3` (``OrderGradPPO.from_sb3``): risk fine-tuning of an SB3 model or save. The OrderGrad agent is
  built with the SB3 model's policy class and ``policy_kwargs``, so the whole policy (features extractor, actor,
  value head) has the same layout and its weights are copied; episodic mode's update never trains the value head
  (``critic_when_tied`` fits it apart).
* The other direction needs nothing here: an episodic OrderGrad save holds SB3's own policy layout and leaves out
  its episodic buffer class and ``n_steps``, so ``stable_baselines3.PPO.load(path, env=env)`` gives a working PPO
  (the OrderGrad policy's weights, SB3's ``RolloutBuffer``; the value head starts from the weights it was built or
  copied with, or ``critic_when_tied`` fitted it to).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium.envs.registration import EnvSpec
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import VecEnv

#: Episodes measured at least, and steps at most, when measuring the episode length of an env for a suggestion.
MEASURE_EPISODES = 5
MEASURE_MAX_STEPS = 20_000
#: Parameter-name prefixes of the value branch of SB3's actor-critic policies (not copied when shapes differ, e.g.
#: into a Q head).
VALUE_BRANCH = ("value_net.", "mlp_extractor.value_net.", "vf_features_extractor.")
#: Parameter-name prefixes of a policy's critic: SB3's value branch and sb3-contrib's recurrent critic modules.
CRITIC_PARAMETERS: tuple[str, ...] = (*VALUE_BRANCH, "lstm_critic.", "critic.")


def ordergrad_policies(cls: type[BaseAlgorithm]) -> dict[type, type]:
    """The SB3 / sb3-contrib policy classes that ``cls``'s policy aliases extend -> those OrderGrad classes (same
    layout, plus the OrderGrad options): SB3's ``ActorCriticPolicy`` -> ``OrderGradActorCriticPolicy`` for
    OrderGradPPO, sb3-contrib's ``RecurrentActorCriticPolicy`` -> ``OrderGradRecurrentPolicy`` for
    OrderGradRecurrentPPO, ..."""
    return {policy.__bases__[-1]: policy for policy in cls.policy_aliases.values()}


def _remade(spec: EnvSpec) -> gym.Env:
    """``gym.make(spec)`` less the wrappers gym cannot build again (SB3's ``Monitor``, which records episodes and
    does not end them): without this, gym refuses every env of SB3's ``make_vec_env``."""
    wrappers = tuple(wrapper for wrapper in spec.additional_wrappers if wrapper.kwargs is not None)
    return gym.make(dataclasses.replace(spec, additional_wrappers=wrappers))


def _measurable_copy(env: Any) -> gym.Env | None:
    """A fresh env like ``env`` (an id, ``gym.Env`` or ``VecEnv``) to measure episodes on, leaving ``env`` itself
    untouched; ``None`` if none can be made (e.g. a ``SubprocVecEnv`` of an unregistered env)."""
    try:
        if isinstance(env, str):
            return gym.make(env)
        if isinstance(env, VecEnv):
            spec = env.get_attr("spec", [0])[0]
            if spec is not None and spec.id in gym.registry:
                return _remade(spec)
            envs = getattr(env.unwrapped, "envs", None)  # DummyVecEnv
            return copy.deepcopy(envs[0]) if envs else None
        if isinstance(env, gym.Env):
            # An unregistered spec (SB3's BitFlippingEnv has one) cannot be made again: copy the env instead.
            return _remade(env.spec) if env.spec is not None and env.spec.id in gym.registry else copy.deepcopy(env)
    except Exception:  # noqa: BLE001 -- a suggestion is best effort: any failure means "no measurement"
        return None
    return None


def random_episode_lengths(env: gym.Env, min_steps: int, seed: int = 0) -> np.ndarray:
    """Lengths of the first episodes of ``env`` under uniformly random actions (an untrained policy's behaviour).

    Runs at least :data:`MEASURE_EPISODES` episodes and ``min_steps`` steps, at most :data:`MEASURE_MAX_STEPS`
    steps (an unfinished episode is not counted).

    :return: ``[n]`` episode lengths (possibly empty if no episode ended).
    """
    env.action_space.seed(seed)
    env.reset(seed=seed)
    lengths: list[int] = []
    length = steps = 0
    while steps < MEASURE_MAX_STEPS and (len(lengths) < MEASURE_EPISODES or steps < min_steps):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        length += 1
        steps += 1
        if terminated or truncated:
            lengths.append(length)
            length = 0
            env.reset()
    return np.asarray(lengths, dtype=np.int64)


def suggest_n_episodes(env: Any, n_steps: int, n_envs: int = 1) -> tuple[int, np.ndarray] | None:
    """The ``n_episodes`` whose rollout has about ``n_steps * n_envs`` steps on ``env``, measured from its first
    episodes (:func:`random_episode_lengths` on a fresh copy); at least 2.

    :param env: env id, ``gym.Env`` or ``VecEnv`` (not stepped itself).
    :param n_steps: SB3's steps per env per rollout.
    :param n_envs: number of envs.
    :return: ``(n_episodes, measured lengths)``, or ``None`` if no copy of the env could be made or no episode
        ended within :data:`MEASURE_MAX_STEPS` steps.
    """
    fresh = _measurable_copy(env)
    if fresh is None:
        return None
    try:
        lengths = random_episode_lengths(fresh, n_steps * n_envs)
    finally:
        fresh.close()
    if lengths.size == 0:
        return None
    return max(2, math.ceil(n_steps * n_envs / lengths.mean())), lengths


def n_steps_error(algorithm: str, n_steps: Any, env: Any, n_envs: int | None) -> ValueError:
    """The error for SB3's ``n_steps`` given in episodic mode, naming the ``n_episodes`` to use instead.

    :param algorithm: the class name, for the message.
    :param n_steps: the value given.
    :param env: the env argument (id, ``gym.Env`` or ``VecEnv``).
    :param n_envs: the algorithm's ``n_envs`` argument (``None``: the env's own number of envs, 1 for an id).
    """
    message = f"episodic {algorithm} collects whole episodes: set n_episodes (episodes per rollout), not n_steps"
    if isinstance(n_steps, bool) or not isinstance(n_steps, int | np.integer) or n_steps < 1:
        return ValueError(message)
    n_envs = n_envs or int(getattr(env, "num_envs", 1))
    suggestion = suggest_n_episodes(env, int(n_steps), n_envs)
    if suggestion is None:
        return ValueError(f"{message} (about n_steps * n_envs / mean episode length)")
    n_episodes, lengths = suggestion
    return ValueError(
        f"{message}. n_steps={n_steps} x {n_envs} env(s) = {n_steps * n_envs} steps per rollout; the first "
        f"{lengths.size} episodes of this env (random actions) last {lengths.mean():.1f} steps on average, so "
        f"n_episodes={n_episodes} gives about as many (a trained policy's episodes may be longer). Ranked objectives "
        "need more episodes per update than the mean: their signal sits in part of the batch"
    )


#: The critic arguments of SB3's PPO family (sb3-contrib's RecurrentPPO and MaskablePPO), which the episodic variants
#: of those algorithms, training no critic, refuse in the constructor and at ``load``.
PPO_CRITIC_ARGUMENTS: tuple[str, ...] = ("gae_lambda", "vf_coef", "clip_range_vf")


def critic_argument_error(algorithm: str, name: str) -> ValueError:
    """The error for an SB3 critic argument (``gae_lambda``, ``vf_coef``) given to an algorithm without a critic."""
    return ValueError(
        f"{algorithm} has no critic: its advantages are OrderGrad weights of whole-episode returns, so there is no "
        f"value function for {name} to act on; remove {name} (episodic mode: set n_episodes, the episodes per update)"
    )


def tied_critic_argument_error(algorithm: str, name: str) -> ValueError:
    """The error for an SB3 critic argument given to an algorithm whose only critic is ``critic_when_tied``'s, fitted
    with OrderGradPPO's defaults (OrderGradMaskablePPO)."""
    return ValueError(
        f"{algorithm} takes no {name}: its advantages are OrderGrad weights of whole-episode returns, and the critic "
        "that critic_when_tied fits for the rollouts tied at the best return uses OrderGradPPO's defaults "
        f"(gae_lambda=0.95, vf_coef=0.5, no clip_range_vf); remove {name} (OrderGradPPO takes it)"
    )


def optimizer_argument_error(algorithm: str, name: str) -> ValueError:
    """The error for an A2C optimizer argument (``use_rms_prop``, ``rms_prop_eps``) given to an algorithm whose
    optimizer is the policy's (``policy_kwargs["optimizer_class"]``, Adam by default)."""
    return ValueError(
        f"{algorithm} has no {name}: it trains with the policy's optimizer, Adam by default (A2C with "
        "use_rms_prop=False); remove it, or for A2C's RMSprop pass policy_kwargs=dict(optimizer_class="
        "torch.optim.RMSprop, optimizer_kwargs=dict(alpha=0.99, eps=1e-5, weight_decay=0)) (eps: A2C's rms_prop_eps)"
    )


def copy_policy_weights(state: Mapping[str, th.Tensor], policy: BasePolicy) -> None:
    """Load an SB3 policy's ``state_dict`` into ``policy``: every entry with the same name and shape.

    :raises ValueError: an entry outside the critic (:data:`CRITIC_PARAMETERS`) is missing or has another shape: the
        actor's layout differs (e.g. other ``policy_kwargs``).
    """
    target = policy.state_dict()
    loadable = {name: value for name, value in state.items() if name in target and target[name].shape == value.shape}
    missing = [name for name in target if name not in loadable and not name.startswith(CRITIC_PARAMETERS)]
    if missing:
        shapes = ", ".join(
            f"{name} {tuple(target[name].shape)} vs {tuple(state[name].shape) if name in state else 'absent'}"
            for name in missing[:4]
        )
        raise ValueError(
            f"the SB3 policy's actor does not fit this policy ({shapes}): build it with the SB3 model's "
            "policy_kwargs (the default of from_sb3)"
        )
    policy.load_state_dict(loadable, strict=False)


def from_sb3(
    cls: type[BaseAlgorithm],
    source: BaseAlgorithm | str | pathlib.Path,
    env: Any = None,
    device: th.device | str = "auto",
    **kwargs: Any,
) -> Any:
    """A ``cls`` agent whose policy starts from an SB3 model's weights (see ``OrderGradPPO.from_sb3``).

    :param cls: the OrderGrad algorithm.
    :param source: an SB3 on-policy model with an actor-critic policy (``PPO``, ``A2C`` ...; sb3-contrib's
        ``RecurrentPPO`` / ``MaskablePPO`` for ``cls``'s recurrent / maskable variant) or the path of its save.
    :param env: the training env; default: the model's env (required for a path).
    :param device: torch device of the new agent.
    :param kwargs: the OrderGrad agent's arguments (``objective``, ``n_episodes`` ...). ``policy_kwargs`` and
        ``use_sde`` default to the SB3 model's (the layouts must match), less its optimizer (A2C's RMSprop): the
        agent's own is used.
    :raises ValueError: no env, a policy of another kind than ``cls``'s, or an actor layout that differs.
    """
    state: dict[str, th.Tensor]
    if isinstance(source, BaseAlgorithm):
        policy_class, policy_kwargs, use_sde = source.policy_class, source.policy_kwargs, source.use_sde
        state = source.policy.state_dict()
        env = source.get_env() if env is None else env
    else:
        data, params, _ = load_from_zip_file(source, device="cpu")
        if data is None or "policy" not in params:
            # A zip without SB3's "data" and "policy" entries (a torch.save'd policy is a zip too): SB3 returns
            # None or leaves the parameters out, which failed here with "'NoneType' object is not subscriptable".
            raise ValueError(
                f"{cls.__name__}.from_sb3: {str(source)!r} is no SB3 model's save (it holds no "
                f"{'data' if data is None else 'policy parameters'}): pass the file that model.save(path) writes"
            )
        policy_class, policy_kwargs = data["policy_class"], data.get("policy_kwargs", {})
        # SB3 types the loaded parameters dict[str, Tensor]: each is a module's state_dict.
        use_sde, state = data.get("use_sde", False), params["policy"]  # type: ignore[assignment]
    if env is None:
        raise ValueError(f"{cls.__name__}.from_sb3 needs env=: the SB3 model has no env (a save holds none)")
    policies = ordergrad_policies(cls)
    if not (isinstance(policy_class, type) and issubclass(policy_class, tuple(policies))):
        kinds = ", ".join(sorted({base.__name__ for base in policies}))
        raise ValueError(f"{cls.__name__}.from_sb3 needs a model with a policy of {kinds}, it has {policy_class!r}")
    # The layout, not the optimizer: A2C puts its RMSprop in policy_kwargs, and the OrderGrad agent trains with its
    # own (Adam, as its defaults were measured with).
    layout = {key: value for key, value in policy_kwargs.items() if key not in ("optimizer_class", "optimizer_kwargs")}
    kwargs.setdefault("policy_kwargs", copy.deepcopy(layout))
    if use_sde:  # only where set: MaskablePPO (and so OrderGradMaskablePPO) has no use_sde argument
        kwargs.setdefault("use_sde", use_sde)
    model = cls(policies.get(policy_class, policy_class), env, device=device, **kwargs)
    copy_policy_weights(state, model.policy)
    return model
