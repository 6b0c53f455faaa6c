"""MinAtar (Young & Tian 2019) games as Gymnasium / SB3 envs with float observations, for the Q-critic PPO.

Needs the ``minatar`` package (``pip install "ordergrad-rl[minatar]"``); imported only when a factory is called.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.common.arguments import check_int

#: Game key -> MinAtar's Gymnasium name.
GAMES: dict[str, str] = {
    "breakout": "Breakout",
    "asterix": "Asterix",
    "space_invaders": "SpaceInvaders",
    "freeway": "Freeway",
    "seaquest": "Seaquest",
}
#: Safety net for evaluation and training: MinAtar's games have no time limit of their own (except Freeway).
MAX_EPISODE_STEPS = 10_000


def minatar_env_id(game: str) -> str:
    """``MinAtar/<Game>-v1`` (minimal action set) for a game key of :data:`GAMES`."""
    if game not in GAMES:
        raise ValueError(f"unknown MinAtar game {game!r}; expected one of {sorted(GAMES)}")
    return f"MinAtar/{GAMES[game]}-v1"


class MinAtarFloatObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """MinAtar's ``BaseEnv`` as Gymnasium's checks expect it, with float32 observations ``Box(0, 1, (10, 10, C))``.

    MinAtar's own env (1.0.15) has three gaps this wrapper closes without touching its observations, rewards or
    random numbers:

    * ``reset(seed=...)`` seeds MinAtar's game but never calls ``gymnasium.Env.reset``, so ``env.np_random`` is left
      unseeded (``check_env`` fails), and it keeps the last action of the previous episode, which the sticky-action
      rule may repeat on the first step: the same seed gave different episodes after different histories. A seeded
      reset here seeds ``np_random`` and forgets the last action, as a fresh env starts; unseeded resets are
      MinAtar's own.
    * ``render()`` in ``"rgb_array"`` mode returns float64 colours in ``[0, 1]``; here ``uint8`` frames, as
      Gymnasium's ``RecordVideo`` and ``check_env`` expect.
    * Gymnasium's ``DtypeObservation`` holds a lambda, so the env could not be pickled; this class can.

    :param env: a MinAtar env from ``gym.make("MinAtar/<Game>-v1")`` (possibly wrapped, e.g. in a ``TimeLimit``).
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        self.observation_space = spaces.Box(0.0, 1.0, env.observation_space.shape, np.float32)
        self.metadata = {**env.metadata, "render_fps": 1000 / env.unwrapped.display_time}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            minatar_env = self.unwrapped
            gym.Env.reset(minatar_env, seed=seed)  # what MinAtar's reset leaves out: seeds env.np_random
            minatar_env.game.last_action = 0  # MinAtar's initial (sticky) action
        return super().reset(seed=seed, options=options)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation.astype(np.float32)

    def render(self) -> Any:
        frame = self.env.render()
        if self.render_mode == "rgb_array":
            return np.round(frame * 255).astype(np.uint8)
        return frame


def make_minatar_env(game: str, max_episode_steps: int | None = MAX_EPISODE_STEPS, **kwargs: Any):
    """One MinAtar game as a Gymnasium env with float32 observations ``Box(0, 1, (10, 10, C))``, wrapped in
    :class:`MinAtarFloatObservation` (Gymnasium's ``check_env`` passes, the env pickles, a seeded reset gives the
    same episode whatever came before, ``rgb_array`` frames are ``uint8``).

    :param game: key of :data:`GAMES` (``"breakout"``, ``"asterix"``, ``"space_invaders"``, ...).
    :param max_episode_steps: ``TimeLimit`` (truncation) or ``None``.
    :param kwargs: forwarded to ``gym.make``: MinAtar's ``Environment`` arguments (``sticky_action_prob``,
        ``difficulty_ramping``), ``render_mode``, and ``disable_env_checker`` (default here ``True``: Gymnasium's
        passive checker sits under the wrapper, so it would check MinAtar's raw frames, float64 without a
        ``render_fps``, and warn on the first ``render()`` about frames the wrapper returns as ``uint8``).
    :raises ImportError: MinAtar is not installed.
    :raises ValueError: ``max_episode_steps`` is not ``None`` or an integer >= 1.
    """
    if max_episode_steps is not None:
        check_int("max_episode_steps", max_episode_steps, 1)
    try:
        import minatar.gym as minatar_gym
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError('MinAtar is not installed: pip install "ordergrad-rl[minatar]"') from error
    env_id = minatar_env_id(game)
    if env_id not in gym.registry:
        minatar_gym.register_envs()  # MinAtar registers its ids only when asked
    env = gym.make(env_id, max_episode_steps=max_episode_steps, **{"disable_env_checker": True, **kwargs})
    return MinAtarFloatObservation(env)


def make_minatar_vec_env(game: str, n_envs: int, seed: int | None = None, **kwargs: Any):
    """SB3 ``DummyVecEnv`` of ``n_envs`` monitored :func:`make_minatar_env` copies (env ``i`` seeded ``seed + i``)."""
    from stable_baselines3.common.env_util import make_vec_env

    check_int("n_envs", n_envs, 1)
    return make_vec_env(make_minatar_env, n_envs=n_envs, seed=seed, env_kwargs=dict(game=game, **kwargs))
