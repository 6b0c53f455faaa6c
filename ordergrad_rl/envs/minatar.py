"""MinAtar (Young & Tian 2019) games as Gymnasium / SB3 envs with float observations, for the Q-critic PPO.

Needs the ``minatar`` package (``pip install "ordergrad-rl[minatar]"``); imported only when a factory is called.
"""

from __future__ import annotations

from typing import Any

import numpy as np

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


def make_minatar_env(game: str, max_episode_steps: int | None = MAX_EPISODE_STEPS, **kwargs: Any):
    """One MinAtar game as a Gymnasium env with float32 observations ``Box(0, 1, (10, 10, C))``.

    :param game: key of :data:`GAMES` (``"breakout"``, ``"asterix"``, ``"space_invaders"``, ...).
    :param max_episode_steps: ``TimeLimit`` (truncation) or ``None``.
    :param kwargs: forwarded to MinAtar's ``Environment`` (``sticky_action_prob``, ``difficulty_ramping``).
    :raises ImportError: MinAtar is not installed.
    :raises ValueError: ``max_episode_steps`` is not ``None`` or an integer >= 1.
    """
    import gymnasium as gym

    if max_episode_steps is not None:
        check_int("max_episode_steps", max_episode_steps, 1)
    try:
        import minatar.gym as minatar_gym
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError('MinAtar is not installed: pip install "ordergrad-rl[minatar]"') from error
    env_id = minatar_env_id(game)
    if env_id not in gym.registry:
        minatar_gym.register_envs()  # MinAtar registers its ids only when asked
    env = gym.make(env_id, max_episode_steps=max_episode_steps, **kwargs)
    return gym.wrappers.DtypeObservation(env, np.float32)


def make_minatar_vec_env(game: str, n_envs: int, seed: int | None = None, **kwargs: Any):
    """SB3 ``DummyVecEnv`` of ``n_envs`` monitored :func:`make_minatar_env` copies (env ``i`` seeded ``seed + i``)."""
    from stable_baselines3.common.env_util import make_vec_env

    check_int("n_envs", n_envs, 1)
    return make_vec_env(make_minatar_env, n_envs=n_envs, seed=seed, env_kwargs=dict(game=game, **kwargs))
