"""A Gymnasium ``VectorEnv`` base for environments whose whole batch steps as NumPy arrays.

A subclass implements two hooks over the batch, :meth:`NativeVectorEnv._reset_envs` and
:meth:`NativeVectorEnv._step_envs`; this base adds Gymnasium's vector-env contract on top: the three autoreset modes,
``options["reset_mask"]`` partial resets, and infos laid out exactly as ``SyncVectorEnv`` lays them out (every key
``k`` with its boolean mask ``_k``). The Stable-Baselines3 face of the same hooks is
:class:`ordergrad_rl.envs.sb3_vec_env.NativeVecEnv`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from ordergrad_rl.envs.rendering import RenderModeError

#: Per-env arrays, one row per env: ``(obs, reward, terminated, truncated, info)`` of a batch step.
BatchStep = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]


def reseed(rngs: list[Any], seed: int | Sequence[int | None] | None, env_ids: Sequence[int] | np.ndarray) -> None:
    """Re-seed the per-env generators ``rngs[i]`` of ``env_ids`` with Gymnasium's vector conventions.

    :param seed: ``None`` keeps the generators; an int gives env ``i`` the seed ``seed + i`` (as ``SyncVectorEnv``
        and SB3's ``VecEnv.seed`` do); a sequence of one seed per env gives env ``i`` the seed ``seed[i]`` (``None``
        entries keep the generator).
    :raises ValueError: a sequence whose length is not the number of envs.
    """
    if seed is None:
        return
    if isinstance(seed, (int, np.integer)):
        seeds: Sequence[int | None] = [int(seed) + i for i in range(len(rngs))]
    else:
        seeds = list(seed)
        if len(seeds) != len(rngs):
            raise ValueError(f"expected {len(rngs)} seeds (one per env), got {len(seeds)}")
    for i in env_ids:
        if seeds[i] is not None:
            rngs[i] = np_random(seeds[i])[0]


def add_masked_info(infos: dict[str, Any], values: dict[str, np.ndarray], mask: np.ndarray) -> dict[str, Any]:
    """Add the rows ``mask`` of ``values`` to a Gymnasium vector info, as ``SyncVectorEnv._add_info`` would.

    A key new to ``infos`` gets a zero array of the value's dtype and a False mask ``_key``; the masked rows are
    copied in and flagged. Keys no env carries (empty mask) are not created.

    :param infos: vector info to update (modified and returned).
    :param values: per-env arrays ``[n, ...]``.
    :param mask: bool ``[n]``, the envs whose info holds these keys.
    """
    if not mask.any():
        return infos
    for key, value in values.items():
        if key not in infos and mask.all():  # the common case: every env reports the key, no copy needed
            infos[key], infos[f"_{key}"] = value, mask.copy()
            continue
        if key not in infos:
            infos[key] = np.zeros_like(value)
            infos[f"_{key}"] = np.zeros(len(mask), dtype=bool)
        infos[key][mask] = value[mask]
        infos[f"_{key}"] = infos[f"_{key}"] | mask
    return infos


class NativeVectorEnv(VectorEnv):
    """``num_envs`` episodes of one environment stepped as a NumPy batch.

    Subclasses set ``single_observation_space`` and ``single_action_space``, call :meth:`_init_vector`, and
    implement :meth:`_reset_envs` and :meth:`_step_envs`. Results then equal ``SyncVectorEnv`` over the single env
    when the hooks equal the single env row by row.

    Autoreset modes (``gymnasium.vector.AutoresetMode``):

    * ``NEXT_STEP`` (default, as Gymnasium's own vector envs): the step after an episode ends resets that env,
      ignores its action and returns reward 0, ``terminated=truncated=False`` and the reset info.
    * ``SAME_STEP``: finished envs are reset within the step that ends them; the returned observation is the new
      episode's first one, ``info["final_obs"]`` (object array) and ``info["final_info"]`` hold the last
      observation and step info (masks ``_final_obs``, ``_final_info``).
    * ``DISABLED``: finished envs must be reset with ``reset(options={"reset_mask": mask})``.
    """

    #: Step-info keys an env reports only at the last step of an episode (e.g. ``is_success``); the other step-info
    #: keys are reported at every step.
    final_step_info_keys: tuple[str, ...] = ()

    if TYPE_CHECKING:
        # The constructor each subclass defines: gym.make_vec calls a vector entry point with num_envs and the
        # env's keyword arguments.
        def __init__(self, num_envs: int, **kwargs: Any) -> None: ...

    def _init_vector(
        self,
        num_envs: int,
        autoreset_mode: AutoresetMode | str,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
    ) -> None:
        """Batch spaces, metadata and autoreset bookkeeping (after the single spaces are set).

        ``render_mode`` and ``max_episode_steps`` are the arguments ``gym.make_vec`` passes on to a vector entry point
        (``max_episode_steps`` also from the spec): the batch neither renders nor has a ``TimeLimit``, so only
        ``None`` is accepted, and anything else is refused by name rather than dropped.

        :raises ValueError: an unknown ``autoreset_mode``, a ``render_mode`` or a ``max_episode_steps``.
        """
        try:
            mode = AutoresetMode(autoreset_mode)
        except ValueError as err:
            valid = [m.value for m in AutoresetMode]
            raise ValueError(f"autoreset_mode must be one of {valid}, got {autoreset_mode!r}") from err
        name = type(self).__name__
        if render_mode is not None:
            raise RenderModeError(
                f"render_mode must be None: the native batch {name} does not render, got {render_mode!r} (render "
                "a single env, gym.make(env_id, render_mode=...))"
            )
        if max_episode_steps is not None:
            raise ValueError(
                f"max_episode_steps must be None: the native batch {name} has no TimeLimit, got "
                f"{max_episode_steps!r}; gym.make_vec(env_id, num_envs, vectorization_mode='sync', "
                "max_episode_steps=...) puts one around each env"
            )
        self.num_envs = num_envs
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.metadata = {"render_modes": [], "autoreset_mode": mode}
        self.render_mode = render_mode
        self._needs_reset = np.zeros(num_envs, dtype=bool)

    # ------------------------------------------------------------------ hooks
    def _reset_envs(
        self, seed: int | list[int | None] | None, env_ids: np.ndarray | None, options: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        """Start new episodes in ``env_ids`` (all envs if ``None``).

        :param seed: ``None``, an int (env ``i`` seeded ``seed + i``) or one seed per env (``None`` entries keep
            the env's generator).
        :param options: the reset options other than ``reset_mask``.
        :return: observations of all envs ``[n, ...]`` and reset-info arrays ``[n]`` (rows of ``env_ids`` hold the
            values).
        """
        raise NotImplementedError

    def _step_envs(self, actions: Any, env_ids: np.ndarray | None) -> BatchStep:
        """Step ``env_ids`` (all envs if ``None``), none of them finished.

        :return: ``obs [n, ...]`` (rows not stepped unchanged), ``reward [n]`` float64, ``terminated [n]``,
            ``truncated [n]`` and step-info arrays ``[n, ...]`` (rows not stepped are ignored).
        """
        raise NotImplementedError

    @property
    def env_rngs(self) -> list[np.random.Generator | None]:
        """The per-env generators (``env_rngs[i]`` plays the role of env ``i``'s ``np_random``; assigning an entry
        gives the env a new stream, as grouped rollouts do after a shared-seed reset)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ Gymnasium API
    def reset(
        self,
        *,
        seed: int | list[int | None] | None = None,
        options: dict[str, Any] | None = None,
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset all envs, or those of ``options["reset_mask"]`` (bool array ``[n]``)."""
        options = dict(options or {})
        mask = options.pop("reset_mask", None)
        if mask is None:
            mask = np.ones(self.num_envs, dtype=bool)
            env_ids = None
        else:
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (self.num_envs,):
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
            if not mask.any():
                raise ValueError("options['reset_mask'] must select at least one env")
            env_ids = np.flatnonzero(mask)
        obs, reset_info = self._reset_envs(seed, env_ids, options or None)
        self._needs_reset[mask] = False
        return obs, add_masked_info({}, reset_info, mask)

    def step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step all envs; see the class docstring for autoreset."""
        mode = self.metadata["autoreset_mode"]
        if mode is AutoresetMode.SAME_STEP:
            return self._same_step(actions)
        waiting = self._needs_reset
        if waiting.any() and mode is AutoresetMode.DISABLED:
            raise RuntimeError(
                f"envs {np.flatnonzero(waiting).tolist()} finished their episode; with autoreset_mode DISABLED reset "
                "them with reset(options={'reset_mask': mask}) before stepping"
            )
        infos: dict[str, Any] = {}
        if waiting.any():  # NEXT_STEP: the finished envs restart now, the others take their step.
            obs, reset_info = self._reset_envs(None, np.flatnonzero(waiting), None)
            add_masked_info(infos, reset_info, waiting)
        active = ~waiting
        if active.any():
            everyone = active.all()
            obs, reward, terminated, truncated, info = self._step_envs(
                actions, None if everyone else np.flatnonzero(active)
            )
            if not everyone:  # the restarted envs get reward 0 and are not done
                reward, terminated, truncated = (
                    np.where(active, x, 0).astype(x.dtype) for x in (reward, terminated, truncated)
                )
            self._add_step_info(infos, info, active, terminated | truncated)
        else:
            reward = np.zeros(self.num_envs)
            terminated, truncated = np.zeros(self.num_envs, dtype=bool), np.zeros(self.num_envs, dtype=bool)
        self._needs_reset = terminated | truncated
        return obs, reward, terminated, truncated, infos

    def _add_step_info(
        self, infos: dict[str, Any], info: dict[str, np.ndarray], stepped: np.ndarray, done: np.ndarray
    ) -> dict[str, Any]:
        """Add a step's info: final-step keys for the envs that ended, the other keys for every stepped env."""
        final = set(self.final_step_info_keys)
        add_masked_info(infos, {k: v for k, v in info.items() if k not in final}, stepped)
        return add_masked_info(infos, {k: v for k, v in info.items() if k in final}, stepped & done)

    def _same_step(self, actions: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """SAME_STEP autoreset, with the info layout of ``SyncVectorEnv``."""
        obs, reward, terminated, truncated, info = self._step_envs(actions, None)
        done = terminated | truncated
        infos: dict[str, Any] = {}
        self._add_step_info(infos, info, ~done, done)  # the reset envs carry their reset info instead
        if done.any():
            final_obs = np.full(self.num_envs, None, dtype=object)
            for i in np.flatnonzero(done):  # once per episode end
                final_obs[i] = obs[i]
            infos.update(
                final_obs=final_obs,
                _final_obs=done.copy(),
                final_info=self._add_step_info({}, info, done, done),
                _final_info=done.copy(),
            )
            obs, reset_info = self._reset_envs(None, np.flatnonzero(done), None)
            add_masked_info(infos, reset_info, done)
        return obs, reward, terminated, truncated, infos
