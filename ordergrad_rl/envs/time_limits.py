"""The ``TimeLimit`` wrappers of an env's wrapper chain, read where the wrappers are: :func:`time_limits` in this
process (a ``gym.Env``, a ``DummyVecEnv``'s env), :class:`TimeLimitAtMost` in a ``SubprocVecEnv``'s worker.

Imports Gymnasium only: a ``SubprocVecEnv``'s worker imports this module to answer a :class:`TimeLimitAtMost`.
"""

from __future__ import annotations

import gymnasium as gym
from gymnasium.wrappers import TimeLimit


def time_limits(env: gym.Env) -> list[int]:
    """``max_episode_steps`` of every ``TimeLimit`` (or subclass) in ``env``'s wrapper chain, outermost first.
    Gymnasium truncates an episode at the smallest: the env's spec names the outermost."""
    limits = []
    while isinstance(env, gym.Wrapper):
        if isinstance(env, TimeLimit):
            limits.append(env._max_episode_steps)
        env = env.env
    return limits


class TimeLimitAtMost:
    """Stands for a wrapper class in SB3's ``VecEnv.env_is_wrapped(TimeLimitAtMost(steps))``, which then answers
    whether the env is wrapped in a ``TimeLimit`` (or a subclass) of at most ``steps`` steps.

    SB3's ``is_wrapped`` tests every wrapper of the chain with ``isinstance(wrapper, wrapper_class)``, which calls
    ``wrapper_class.__instancecheck__``, and a ``SubprocVecEnv`` runs it in its worker: of SB3's ``VecEnv`` calls, the
    one that sees the wrappers below the outermost (``get_attr`` and ``env_method`` read the attribute or method of
    the outermost wrapper that has it, with Gymnasium's ``get_wrapper_attr``: an inner ``TimeLimit``'s
    ``_max_episode_steps`` is hidden by the outer one's).

    :param steps: the largest limit that answers yes.
    """

    def __init__(self, steps: int) -> None:
        self.steps = steps

    def __instancecheck__(self, env: object) -> bool:
        return isinstance(env, TimeLimit) and env._max_episode_steps <= self.steps

    def __repr__(self) -> str:
        return f"TimeLimitAtMost({self.steps})"
