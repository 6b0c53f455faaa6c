"""The episodic rollout buffer of sb3-contrib's RecurrentPPO update: minibatches of whole episodes.

:class:`~ordergrad_rl.agents.common.buffers.EpisodicRolloutBuffer` (the same episode quota, returns and weights) whose
minibatches are *whole episodes*, padded to sequences, as ``RecurrentRolloutBufferSamples``. Every stored episode
starts at a reset, where the collector's LSTM state is zero, so each sequence is replayed from zero states: the
recomputed log-likelihoods are exactly the collected ones (no stored hidden states, no sequence cut inside an
episode).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.recurrent.buffers import pad, pad_and_flatten
from sb3_contrib.common.recurrent.type_aliases import (
    RecurrentDictRolloutBufferSamples,
    RecurrentRolloutBufferSamples,
    RNNStates,
)

from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer


class RecurrentEpisodicRolloutBuffer(EpisodicRolloutBuffer):
    """:class:`EpisodicRolloutBuffer` whose minibatches are whole episodes, padded to sequences for an LSTM policy.

    :param lstm_shape: ``(num_layers, hidden_size)`` of the policy's LSTM (the zero initial states).
    Other parameters: see :class:`EpisodicRolloutBuffer`.
    """

    def __init__(self, *args: Any, lstm_shape: tuple[int, int] = (1, 256), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lstm_shape = tuple(lstm_shape)

    def get(  # type: ignore[override]
        self, batch_size: int | None = None
    ) -> Generator[RecurrentRolloutBufferSamples | RecurrentDictRolloutBufferSamples, None, None]:
        """Minibatches of whole episodes in random order, each about ``batch_size`` steps: an episode joins the
        minibatch in which its first step falls (so a minibatch overshoots by less than one episode, and holds at
        least one). ``None``: all episodes once, in episode order.
        """
        if not self.generator_ready:
            raise RuntimeError("call finalize() before get()")
        # The stored steps of each episode, in time order (steps are stored in time order within an episode).
        order = np.argsort(self.episode_index, kind="stable")
        first = np.r_[0, np.cumsum(self.episode_lengths)[:-1]]
        if batch_size is None:
            yield self._sequences(np.arange(self.n_episodes), order, first)
            return
        episodes = np.random.permutation(self.n_episodes)  # noqa: NPY002 (seeded by SB3, as its buffers)
        lengths = self.episode_lengths[episodes]
        group = (np.cumsum(lengths) - lengths) // batch_size
        for g in np.unique(group):
            yield self._sequences(episodes[group == g], order, first)

    def _sequences(
        self, episodes: np.ndarray, order: np.ndarray, first: np.ndarray
    ) -> RecurrentRolloutBufferSamples | RecurrentDictRolloutBufferSamples:
        lengths = self.episode_lengths[episodes]
        inds = np.concatenate([order[first[e] : first[e] + n] for e, n in zip(episodes, lengths, strict=True)])
        starts = np.r_[0, np.cumsum(lengths)[:-1]]
        ends = starts + lengths - 1
        n_seq, max_len = len(episodes), int(lengths.max())
        padded = n_seq * max_len

        def seq(array: np.ndarray) -> th.Tensor:  # [len(inds), ...] -> [n_seq * max_len, ...]
            return pad(starts, ends, self.device, array[inds]).reshape((padded, *array.shape[1:]))

        def flat(array: np.ndarray) -> th.Tensor:  # [len(inds)] -> [n_seq * max_len]
            return pad_and_flatten(starts, ends, self.device, array[inds])

        if isinstance(self.observations, dict):
            observations: th.Tensor | dict[str, th.Tensor] = {key: seq(v) for key, v in self.observations.items()}
            cls: type = RecurrentDictRolloutBufferSamples
        else:
            observations = seq(self.observations)
            cls = RecurrentRolloutBufferSamples
        # float32 as the buffer's arrays (sb3-contrib's stored states), not torch's default dtype
        zeros = th.zeros((self.lstm_shape[0], n_seq, self.lstm_shape[1]), dtype=th.float32, device=self.device)
        states = (zeros, zeros.clone())
        return cls(
            observations=observations,
            actions=seq(self.actions),
            old_values=flat(self.values),
            old_log_prob=flat(self.log_probs),
            advantages=flat(self.advantages),
            returns=flat(self.returns),
            lstm_states=RNNStates(states, states),
            # Every sequence is an episode from its first step, replayed from zero states: no reset inside.
            episode_starts=th.zeros(padded, dtype=th.float32, device=self.device),
            mask=pad_and_flatten(starts, ends, self.device, np.ones(len(inds), dtype=np.float32)),
        )
