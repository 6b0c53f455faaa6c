"""MinAtar (Young & Tian 2019) games as Gymnasium / SB3 envs with float observations, for the Q-critic PPO.

Needs the ``minatar`` package (``pip install "ordergrad-rl[minatar]"``); imported only when a factory is called.

MinAtar (1.0.15) registers its ids ``MinAtar/<Game>-v0`` (full action set) and ``-v1`` (minimal action set) only
when ``minatar.gym.register_envs()`` is called (Gymnasium 1.x no longer loads its plugin entry point), and its envs
observe ``bool`` frames. :func:`register_minatar_envs` registers the same ids as :func:`make_minatar_env` makes them,
with :class:`MinAtarFloatObservation` in the spec's ``additional_wrappers``; the commands and the agents call it for
a ``MinAtar/...`` id that is not registered, and leave ids that are (MinAtar's own, after its ``register_envs()``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec, WrapperSpec

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
#: The namespace of MinAtar's Gymnasium ids.
NAMESPACE = "MinAtar"


def minatar_env_id(game: str) -> str:
    """``MinAtar/<Game>-v1`` (minimal action set) for a game key of :data:`GAMES`."""
    if game not in GAMES:
        raise ValueError(f"unknown MinAtar game {game!r}; expected one of {sorted(GAMES)}")
    return f"{NAMESPACE}/{GAMES[game]}-v1"


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
        minatar_env: Any = env.unwrapped  # MinAtar's BaseEnv: MinAtar has no type information
        self.metadata = {**env.metadata, "render_fps": 1000 / minatar_env.display_time}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        if seed is not None:
            minatar_env: Any = self.unwrapped
            gym.Env.reset(minatar_env, seed=seed)  # what MinAtar's reset leaves out: seeds env.np_random
            minatar_env.game.last_action = 0  # MinAtar's initial (sticky) action
        return super().reset(seed=seed, options=options)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return observation.astype(np.float32)

    def render(self) -> Any:
        frame = self.env.render()
        if self.render_mode == "rgb_array":
            return np.round(np.asarray(frame) * 255).astype(np.uint8)
        return frame


def minatar_spec(game: str, minimal_action_set: bool = True) -> EnvSpec:
    """The spec of one MinAtar game as :func:`make_minatar_env` makes it: MinAtar's ``BaseEnv`` (entry point
    ``minatar.gym:BaseEnv``, its kwargs) in a ``TimeLimit`` of :data:`MAX_EPISODE_STEPS` steps, without Gymnasium's
    env checker, then :class:`MinAtarFloatObservation` (``additional_wrappers``).

    :param game: key of :data:`GAMES`.
    :param minimal_action_set: ``MinAtar/<Game>-v1`` (the game's minimal action set) or ``-v0`` (all six actions).
    """
    env_id = minatar_env_id(game)
    float_frames = WrapperSpec(MinAtarFloatObservation.__name__, f"{__name__}:{MinAtarFloatObservation.__name__}", {})
    return EnvSpec(
        id=env_id if minimal_action_set else env_id.replace("-v1", "-v0"),
        entry_point="minatar.gym:BaseEnv",
        max_episode_steps=MAX_EPISODE_STEPS,
        disable_env_checker=True,
        kwargs=dict(game=game, use_minimal_action_set=minimal_action_set),
        additional_wrappers=(float_frames,),
    )


def register_minatar_envs() -> None:
    """Register MinAtar's ids, ``MinAtar/<Game>-v1`` (minimal action set) and ``-v0`` (all actions), as
    :func:`make_minatar_env` makes them (:func:`minatar_spec`: float32 frames, seeded resets, a ``TimeLimit`` of
    :data:`MAX_EPISODE_STEPS`), so that ``gym.make("MinAtar/Breakout-v1")`` and the commands give the env that
    ``reproduce minatar`` trains on. Ids already registered (MinAtar's own ``bool`` frames, after
    ``minatar.gym.register_envs()``) are left as they are. Imports nothing: ``gym.make`` imports MinAtar.
    """
    for game in GAMES:
        for minimal_action_set in (True, False):
            spec = minatar_spec(game, minimal_action_set)
            if spec.id not in gym.registry:
                gym.register(
                    spec.id,
                    spec.entry_point,
                    max_episode_steps=spec.max_episode_steps,
                    disable_env_checker=spec.disable_env_checker,
                    kwargs=spec.kwargs,
                    additional_wrappers=spec.additional_wrappers,
                )


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
    spec = minatar_spec(game)
    try:
        import minatar.gym  # noqa: F401
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError('MinAtar is not installed: pip install "ordergrad-rl[minatar]"') from error
    # From the spec, not the registry: the wrapper once, whoever registered the id.
    return gym.make(dataclasses.replace(spec, max_episode_steps=max_episode_steps), **kwargs)


def make_minatar_vec_env(game: str, n_envs: int, seed: int | None = None, **kwargs: Any):
    """SB3 ``DummyVecEnv`` of ``n_envs`` monitored :func:`make_minatar_env` copies (env ``i`` seeded ``seed + i``)."""
    from stable_baselines3.common.env_util import make_vec_env

    check_int("n_envs", n_envs, 1)
    return make_vec_env(make_minatar_env, n_envs=n_envs, seed=seed, env_kwargs=dict(game=game, **kwargs))
