"""The wrapper that the registrations of envs whose episodes end within a fixed number of steps by their own dynamics
put outside Gymnasium's ``TimeLimit`` (``additional_wrappers``)."""

from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium as gym
from gymnasium.envs.registration import WrapperSpec
from gymnasium.utils import RecordConstructorArgs

from ordergrad_rl.envs.time_limits import time_limits


class OwnHorizon(gym.Wrapper, RecordConstructorArgs):
    """An env that ends every episode within ``horizon`` steps itself (``HeavyTailBandit-v0`` after its one step,
    ``RiskyShortcutNav-*`` truncating at 50 steps, the time ``t / 50`` being part of its observation), outside the
    ``TimeLimit`` that ``gym.make`` gives it, so that the limit stays readable (``env.spec.max_episode_steps``, from
    which the agents size their rollouts):

    * a step that terminates is not truncated: ``TimeLimit`` reports ``truncated=True`` at its limit even on a step
      that terminated, which, at the bandit's registered limit of 1, was every step;
    * a ``TimeLimit`` longer than ``horizon`` (``gym.make(id, max_episode_steps=100)``) raises a ``ValueError``
      naming the horizon: the env ends its episodes first, so the limit asked for was silently never reached.

    :param horizon: the most steps an episode of the env lasts, >= 1.
    :raises ValueError: a ``TimeLimit`` inside ``env`` longer than ``horizon``.
    """

    def __init__(self, env: gym.Env, horizon: int) -> None:
        RecordConstructorArgs.__init__(self, horizon=horizon)
        gym.Wrapper.__init__(self, env)
        longer = [steps for steps in time_limits(env) if steps > horizon]
        if longer:
            name = env.spec.id if env.spec is not None else type(env.unwrapped).__name__
            raise ValueError(
                f"{name} ends every episode by step {horizon} itself, so max_episode_steps="
                f"{longer[0]} would never be reached: pass max_episode_steps of at most {horizon} "
                "(or -1 for the env's own end)"
            )

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward, terminated, truncated and not terminated, info


def own_horizon(horizon: int) -> tuple[WrapperSpec, ...]:
    """The ``additional_wrappers`` of a registration whose env ends every episode within ``horizon`` steps:
    :class:`OwnHorizon`."""
    return (WrapperSpec("OwnHorizon", f"{__name__}:OwnHorizon", {"horizon": horizon}),)
