"""The episodic rollout buffer: a fixed number of complete, i.i.d. episodes per rollout.

SB3's ``RolloutBuffer`` holds ``n_steps`` steps of every env. OrderGrad's trajectory-level estimator (paper
Sec. 3, eq. og-batch-estimator) needs something else: ``N`` complete episodes drawn i.i.d. from the current
policy, so that their returns can be ranked. The buffer keeps the first ``N`` episodes *started* after the
rollout begins (every env is at an episode start then), in the order they start (envs starting at the same step
in env order), and waits until they have all ended. Whether an episode is kept is decided when it starts, from
what happened before, never from its own outcome, so the ``N``-th kept episode is a fresh draw independent of the
others and, by induction, the ``N`` kept episodes are i.i.d. draws of the policy (the exact test enumerates every
sequence of episode lengths). Keeping "whichever episodes finish first" instead would over-sample short episodes.

A ``VecEnv`` steps all its envs, so an env whose kept episode has ended steps on, unstored, until the last kept
episode ends (the next rollout restarts it). Fewer steps are discarded than with the earlier per-env quota
(each env's first ``N / n_envs`` episodes, which made every env wait for the slowest env's sum of episodes):
measured with ``scripts/measure_discarded.py``.

Episodes must end. An episode still running after ``max_episode_steps`` steps (default
:data:`MAX_EPISODE_STEPS`) stops the rollout with a ``ValueError`` naming the fix (a ``TimeLimit``), instead of
collecting forever.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, overload

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import BaseBuffer
from stable_baselines3.common.type_aliases import DictRolloutBufferSamples, RolloutBufferSamples
from stable_baselines3.common.vec_env import VecNormalize

from ordergrad_rl.agents.common.advantages import discounted_rewards
from ordergrad_rl.common.arguments import check_int

Obs = np.ndarray | dict[str, np.ndarray]

#: Default bound on an episode's length in an episodic rollout: far above the episodes an episodic estimator is
#: used with (Atari's 108k-frame limit is 27k agent steps), low enough to stop an env that never ends within seconds.
MAX_EPISODE_STEPS = 100_000
#: Keyword arguments of :class:`EpisodicRolloutBuffer` that SB3's ``RolloutBuffer`` does not take.
EPISODIC_BUFFER_KEYS = ("max_episode_steps",)


class EndlessEpisodeError(ValueError):
    """An episode (of a rollout: :meth:`EpisodicRolloutBuffer.add`, or of an evaluation:
    :func:`~ordergrad_rl.agents.common.evaluation.check_episode_length`) has run past the bound on an episode's length
    without ending: the env has no time limit, or a longer one."""


@overload
def _rows(obs: np.ndarray, keep: np.ndarray | None, dtype: type | None = None) -> np.ndarray: ...
@overload
def _rows(obs: dict[str, np.ndarray], keep: np.ndarray | None, dtype: type | None = None) -> dict[str, np.ndarray]: ...
def _rows(obs: Obs, keep: np.ndarray | None, dtype: type | None = None) -> Obs:
    """A copy of the kept rows (all rows if ``keep`` is None), as ``dtype`` if given: VecEnvs may reuse their
    observation arrays. One NumPy call for the copy and the conversion together (:meth:`EpisodicRolloutBuffer.add`
    runs at every step)."""
    if isinstance(obs, dict):
        return {key: _rows(value, keep, dtype) for key, value in obs.items()}
    return np.array(obs, dtype=dtype) if keep is None else np.asarray(obs, dtype=dtype)[keep]


def _concat(chunks: list[Obs]) -> Obs:
    if isinstance(chunks[0], dict):
        return {key: np.concatenate([chunk[key] for chunk in chunks]) for key in chunks[0]}
    return np.concatenate(chunks)  # type: ignore[arg-type]


class EpisodicRolloutBuffer(BaseBuffer):
    """Steps of ``N`` complete episodes (``n_episodes``, default ``buffer_size * n_envs``), with per-episode returns
    and per-step advantages.

    Filled by :meth:`add` once per vectorized step (every array has a leading ``n_envs`` axis; the buffer keeps
    the rows of envs inside a kept episode), closed by :meth:`finalize`. Like SB3's ``RolloutBuffer`` it holds NumPy
    arrays and converts minibatches to tensors in :meth:`get`. After :meth:`finalize` (``T`` stored steps, ``N``
    episodes):

    * ``observations`` ``[T, *obs_shape]`` (or a dict of such), ``actions`` ``[T, action_dim]`` (float32,
      unclipped, as SB3 stores them), ``log_probs`` ``[T]`` float32;
    * ``episode_index`` ``[T]`` in ``0..N-1``, the order the episodes started in,
      ``episode_step`` ``[T]`` (``t`` within the episode), ``rewards`` ``[T]`` float64;
    * ``episode_returns`` ``[N]`` = ``sum_t gamma^t r_t`` (float64), ``episode_lengths`` ``[N]``,
      ``episode_time_outs`` ``[N]`` bool (truncated, not terminated; from :meth:`add`'s ``time_outs``);
    * ``episode_channels`` ``{name: [N]}``: the undiscounted episode sums of the per-step values passed to :meth:`add`
      as ``channels`` (the info channels of a multi-channel objective, :mod:`ordergrad_rl.core.channels`);
    * ``advantages``, ``values``, ``returns`` ``[T]`` float32 (zeros until set: with no critic, ``values`` and
      ``returns`` stay zero, which makes SB3's PPO value loss a constant 0);
    * ``extras`` ``{name: [T, ...]}``: per-step arrays a collector passed to :meth:`add` by keyword (action masks for
      MaskablePPO), stored like the others.

    :param buffer_size: SB3's per-env size: the episode count is ``buffer_size * n_envs`` unless ``n_episodes``
        is given.
    :param observation_space: observation space.
    :param action_space: action space.
    :param device: torch device of the minibatches.
    :param gae_lambda: unused by episodic weights (kept for SB3's buffer signature).
    :param gamma: discount of the episode return, 1.0 = undiscounted.
    :param n_envs: number of parallel envs.
    :param max_episode_steps: an episode longer than this raises a ``ValueError`` (an env that never ends would
        make the rollout run forever).
    :param n_episodes: the episode count ``N`` of a rollout, any number of envs (more envs than ``N`` included: the
        extra envs step unstored).
    """

    observations: Obs
    actions: np.ndarray
    log_probs: np.ndarray
    advantages: np.ndarray
    values: np.ndarray
    returns: np.ndarray

    def __init__(
        self,
        buffer_size: int,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        device: th.device | str = "auto",
        gae_lambda: float = 1.0,
        gamma: float = 1.0,
        n_envs: int = 1,
        max_episode_steps: int = MAX_EPISODE_STEPS,
        n_episodes: int | None = None,
    ) -> None:
        super().__init__(buffer_size, observation_space, action_space, device, n_envs=n_envs)
        self.max_episode_steps = check_int("max_episode_steps", max_episode_steps, 1)
        self.gae_lambda = gae_lambda
        self.gamma = gamma
        self.n_episodes = buffer_size * n_envs if n_episodes is None else int(n_episodes)
        self.reset()

    def reset(self) -> None:
        super().reset()
        self._chunks: dict[str, list] = {
            name: [] for name in ("obs", "actions", "log_probs", "rewards", "episode", "t")
        }
        self._extras: dict[str, list[np.ndarray]] = {}
        self._channel_chunks: dict[str, list] = {}
        self._episode_step = np.zeros(self.n_envs, dtype=np.int64)
        # The kept episode each env is in (-1: none), and the number of episodes started so far. Every env starts
        # an episode with the rollout.
        self._episode_id = np.full(self.n_envs, -1, dtype=np.int64)
        self._n_started = 0
        self._time_outs = np.zeros(self.n_episodes, dtype=bool)
        self._start_episodes(np.ones(self.n_envs, dtype=bool))
        self._kept_changed()
        self.generator_ready = False

    def _start_episodes(self, starting: np.ndarray) -> None:
        """Envs starting an episode now (``[n_envs]`` bool) take the next episode ids, in env order, while fewer than
        ``N`` episodes have started; the others are not kept."""
        envs = np.flatnonzero(starting)
        kept = envs[: self.n_episodes - self._n_started]
        self._episode_id[envs] = -1
        self._episode_id[kept] = self._n_started + np.arange(kept.size)
        self._n_started += kept.size

    def _kept_changed(self) -> None:
        """Recompute what :meth:`add` reads at every step, after episodes started (:meth:`_start_episodes`, which a
        subclass may replace): the envs in a kept episode, how many, and the longest of their episodes so far (for
        the bound on an episode's length)."""
        self._keep = self._episode_id >= 0
        self._n_keep = int(np.count_nonzero(self._keep))
        self._longest = max(self._episode_step[self._keep].tolist(), default=0)

    @property
    def full(self) -> bool:
        """True once ``N`` episodes have started and all of them have ended."""
        return self._n_started == self.n_episodes and not self._n_keep

    @full.setter
    def full(self, value: bool) -> None:
        # BaseBuffer.reset() assigns ``full``; the state is derived from the episode counts instead.
        pass

    @property
    def ended_episodes(self) -> tuple[int, int]:
        """``(n, steps)``: how many kept episodes have ended so far in this rollout, and how many steps they hold."""
        running = self._episode_id >= 0
        ended = self._n_started - int(running.sum())
        return ended, self.pos - int(self._episode_step[running].sum())

    @property
    def pending_episodes(self) -> np.ndarray:
        """``[n_envs]``: the index of the kept episode each env is in (it was assigned when the episode started, in
        the order episodes start), ``-1`` for an env whose current episode is not kept."""
        return self._episode_id.copy()

    def add(  # type: ignore[override]
        self,
        obs: Obs,
        actions: np.ndarray,
        log_probs: np.ndarray,
        rewards: np.ndarray,
        dones: np.ndarray,
        channels: dict[str, np.ndarray] | None = None,
        time_outs: np.ndarray | None = None,
        **extras: np.ndarray,
    ) -> np.ndarray:
        """Store one vectorized step; return the mask of envs whose step was stored.

        :param obs: observations the actions were taken in, ``[n_envs, ...]`` (or a dict of such).
        :param actions: the policy's (unclipped) actions, ``[n_envs, ...]``.
        :param log_probs: their log-likelihoods, ``[n_envs]``.
        :param rewards: rewards of the step, ``[n_envs]``.
        :param dones: episode ends (termination or truncation), ``[n_envs]``.
        :param extras: other per-env arrays ``[n_envs, ...]`` to store with the step (``extras[name]`` after
            :meth:`finalize`).
        :param channels: extra per-step values summed per episode into ``episode_channels``, name -> ``[n_envs]``.
        :param time_outs: the ``dones`` that are truncations, not terminations (SB3's ``TimeLimit.truncated``),
            ``[n_envs]``: the ended episodes are marked in ``episode_time_outs``.
        :return: ``keep`` ``[n_envs]`` bool (the step was part of a kept episode); an env whose stored step ended an
            episode has ``keep & dones``.
        :raises ValueError: an env's episode ran past ``max_episode_steps``.
        """
        # Few NumPy calls per step and no reductions (.sum(), .all()): inside a collection loop each costs several
        # times what it does alone (scripts/bench_agents.py's section 0 measures the loop against SB3's).
        keep, n_keep = self._keep, self._n_keep
        if n_keep:
            rows = None if n_keep == self.n_envs else keep  # every env in a kept episode: no masking
            chunks = self._chunks
            chunks["obs"].append(_rows(obs, rows))
            chunks["actions"].append(_rows(np.asarray(actions).reshape(self.n_envs, -1), rows, np.float32))
            chunks["log_probs"].append(_rows(np.asarray(log_probs).reshape(self.n_envs), rows, np.float32))
            chunks["rewards"].append(_rows(rewards, rows, np.float64))
            chunks["episode"].append(_rows(self._episode_id, rows))
            chunks["t"].append(_rows(self._episode_step, rows))
            for name, value in extras.items():
                self._extras.setdefault(name, []).append(_rows(np.asarray(value), rows))
            for name, values in (channels or {}).items():
                values = np.asarray(values, dtype=np.float64)
                self._channel_chunks.setdefault(name, []).append(_rows(values, rows))
            self.pos += n_keep
        dones = np.asarray(dones, dtype=bool)
        if np.count_nonzero(dones):
            if time_outs is not None:
                timed_out = keep & dones & np.asarray(time_outs, dtype=bool)
                self._time_outs[self._episode_id[timed_out]] = True
            self._episode_step = np.where(dones, 0, self._episode_step + 1)
        else:  # most steps: no episode starts or ends, every one is a step longer
            self._episode_step += 1
            self._longest += 1
            if self._longest < self.max_episode_steps:
                return keep
        endless = np.flatnonzero(keep & (self._episode_step >= self.max_episode_steps))
        if endless.size:
            raise EndlessEpisodeError(
                f"env {int(endless[0])}'s episode has run {self.max_episode_steps:,} steps without terminating or "
                "being truncated: episodic OrderGrad needs complete episodes. Give the env a time limit "
                "(gymnasium.wrappers.TimeLimit(env, max_episode_steps=...), or max_episode_steps= when registering "
                "it); if its episodes really are longer, raise rollout_buffer_kwargs['max_episode_steps']"
            )
        self._start_episodes(dones)  # the envs whose episode ended start their next one
        self._kept_changed()
        return keep

    def finalize(self) -> None:
        """Concatenate the stored steps and compute the episode returns and lengths (call when :attr:`full`)."""
        if not self.full:
            raise RuntimeError(
                f"episodic rollout incomplete: {self._n_started} of {self.n_episodes} episodes started, envs still "
                f"in a kept episode: {np.flatnonzero(self._episode_id >= 0).tolist()}"
            )
        chunks = self._chunks
        self.observations = _concat(chunks["obs"])
        self.actions = np.concatenate(chunks["actions"])
        self.log_probs = np.concatenate(chunks["log_probs"])
        self.rewards = np.concatenate(chunks["rewards"])
        self.episode_index = np.concatenate(chunks["episode"])
        self.episode_step = np.concatenate(chunks["t"])
        self._chunks = {name: [] for name in chunks}
        self.extras = {name: np.concatenate(parts) for name, parts in self._extras.items()}
        self._extras = {}
        self.episode_channels = {
            name: np.bincount(self.episode_index, weights=np.concatenate(parts), minlength=self.n_episodes)
            for name, parts in self._channel_chunks.items()
        }
        self._channel_chunks = {}
        discounted = discounted_rewards(self.rewards, self.episode_step, self.gamma)
        self.episode_returns = np.bincount(self.episode_index, weights=discounted, minlength=self.n_episodes)
        self.episode_lengths = np.bincount(self.episode_index, minlength=self.n_episodes)
        self.episode_time_outs = self._time_outs
        n_steps = self.rewards.shape[0]
        self.advantages = np.zeros(n_steps, dtype=np.float32)
        self.values = np.zeros(n_steps, dtype=np.float32)
        self.returns = np.zeros(n_steps, dtype=np.float32)
        self.generator_ready = True

    def set_episode_weights(self, weights: np.ndarray) -> None:
        """Give every step of episode ``i`` the weight ``weights[i]`` (its policy-gradient advantage).

        :param weights: ``[N]`` per-episode weights.
        """
        self.advantages = np.asarray(weights, dtype=np.float32)[self.episode_index]

    def size(self) -> int:
        """Number of stored steps."""
        return self.pos

    def get(
        self, batch_size: int | None = None
    ) -> Generator[RolloutBufferSamples | DictRolloutBufferSamples, None, None]:
        """Shuffled minibatches of ``batch_size`` steps (the last one may be smaller), like SB3's ``RolloutBuffer``.

        :param batch_size: steps per minibatch; ``None`` yields the whole rollout once, in storage order.
        """
        for rows in self.minibatch_indices(batch_size):
            yield self._get_samples(rows)

    def minibatch_indices(self, batch_size: int | None = None) -> Generator[np.ndarray, None, None]:
        """The step indices of :meth:`get`'s minibatches (``[batch_size]`` each, the last one may be smaller), for an
        update that reads per-step arrays of its own beside the buffer's (OrderGradPPO's ``log_std_step`` fit).

        :param batch_size: steps per minibatch; ``None`` yields every step once, in storage order.
        """
        if not self.generator_ready:
            raise RuntimeError("call finalize() before get()")
        n_steps = self.pos
        if batch_size is None or batch_size >= n_steps:
            yield np.arange(n_steps)
            return
        # NumPy's global generator, as SB3's RolloutBuffer: seeded by the algorithm's set_random_seed.
        indices = np.random.permutation(n_steps)  # noqa: NPY002
        for start in range(0, n_steps, batch_size):
            yield indices[start : start + batch_size]

    def _get_samples(  # type: ignore[override]
        self, batch_inds: np.ndarray, env: VecNormalize | None = None
    ) -> RolloutBufferSamples | DictRolloutBufferSamples:
        if isinstance(self.observations, dict):
            observations: Any = {key: self.to_torch(value[batch_inds]) for key, value in self.observations.items()}
            samples_class: type = DictRolloutBufferSamples
        else:
            observations = self.to_torch(self.observations[batch_inds])
            samples_class = RolloutBufferSamples
        return samples_class(
            observations,
            *(
                self.to_torch(array[batch_inds])
                for array in (self.actions, self.values, self.log_probs, self.advantages, self.returns)
            ),
        )
