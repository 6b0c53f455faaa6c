"""Novelty weights for a rollout blind to success: the episodes that went furthest from the rollout's average state.

A rollout whose returns all tie, nothing else seen in training (every Acrobot-v1 episode timed out at -500, every
episode of a sparse-reward task at 0), ranks nothing: every objective's weights are zero. The uniform policy it
starts from explores such a task poorly (Acrobot-v1 swings up in about 2% of its episodes, a random policy linear in
the observation at the same entropy in about 27%: it pumps energy where the uniform one dithers), and the entropy
bonus holds it there. Novelty search (Lehman and Stanley 2011) ranks the episodes by how new their states are
instead, so the policy moves towards the behaviours that reach new states until one of them ends differently.

An episode's novelty is the mean over its steps of the squared standardized distance of the (flattened,
preprocessed) observation from the rollout's mean observation, ``||(x_t - m) / s||^2`` with ``m``, ``s`` the per
feature mean and standard deviation over the rollout's steps. On one-hot observations (SB3's preprocessing of a
``Discrete`` space) a step's term is, up to a constant, ``(1 - p)/p - p/(1 - p)`` for a state visited on a share
``p`` of the rollout's steps: decreasing in ``p``, a count-based novelty. On continuous ones it is the (diagonal)
Mahalanobis distance. Pure functions of arrays.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces

from ordergrad_rl.agents.common.history_baseline import CHUNK_STEPS, flat_observations, observation_rows

#: Episodes of blind rollouts a run trains as they are (the rollouts tied, nothing else seen) before their novelty
#: weights act: OrderGradPPO's ``novelty_when_blind`` waits for chance first. After 96 tied episodes the rule of three
#: bounds the policy's chance of another outcome per episode below 3.1% (95% confidence), a task where waiting for
#: chance costs more than steering; sooner, a blind start is usually luck. Measured (``reproduce benchmarks``,
#: Acrobot-v1, the usage line with ``novelty_when_blind=False`` on the same seeds and evaluation envs): seeds 4-9
#: swung up by chance after 1-3 blind rollouts of 32 episodes, seed 3 after 6, and novelty from the first blind
#: rollout cost the seeds it acted on at 300k steps (-117.9 / -141.7 worst-20% greedy / sampled over seeds 0-9
#: against -106.9 / -134.3; seeds 3-9 lower greedy in 5 of 7, by 15.8 on average over the seven) while its 100k gain
#: came from seed 3 alone (-500 without it). With the wait seeds 4-9 train bit for bit as without novelty and seed 3
#: swings up (:func:`~ordergrad_rl.agents.common.arguments.default_novelty_when_blind`).
BLIND_PATIENCE_EPISODES = 96


def episode_novelty(
    observations: Any,
    observation_space: spaces.Space,
    episode_index: np.ndarray,
    n_episodes: int,
    normalize_images: bool = True,
) -> np.ndarray:
    """Each episode's novelty: the mean over its steps of ``||(x_t - m) / s||^2`` (module docstring).

    :param observations: ``[T, ...]`` the rollout's observations (a dict of such for a ``Dict`` space).
    :param observation_space: their space (SB3's ``preprocess_obs`` flattens them: one-hot, images scaled to
        [0, 1] with ``normalize_images``).
    :param episode_index: ``[T]`` the episode of each step, in ``[0, n_episodes)``.
    :param n_episodes: ``N``; every episode has at least one step.
    :param normalize_images: scale image observations as the policy does (its ``normalize_images``); the
        standardized distance does not depend on the scale, but for rounding.
    :return: ``[N]`` float64, each ``>= 0``; a feature constant over the rollout adds nothing.
    """
    index = np.asarray(episode_index)
    n_steps = len(index)
    total: np.ndarray | None = None
    square: np.ndarray | None = None
    flattened = (observations, observation_space, n_steps, normalize_images)
    for chunk in _chunks(*flattened):  # pass 1: the per-feature moments
        total = chunk.sum(0) if total is None else total + chunk.sum(0)
        square = (chunk**2).sum(0) if square is None else square + (chunk**2).sum(0)
    mean = total / n_steps  # type: ignore[operator]
    variance = np.maximum(square / n_steps - mean**2, 0.0)  # type: ignore[operator]
    varying = variance > 1e-12 * np.maximum(mean**2, 1.0)
    distance = np.concatenate(
        [
            (((chunk - mean)[:, varying] ** 2) / variance[varying]).sum(1)
            for chunk in _chunks(*flattened)  # pass 2: each step's distance
        ]
    )
    steps = np.bincount(index, minlength=n_episodes)
    return np.bincount(index, weights=distance, minlength=n_episodes) / np.maximum(steps, 1)


def novelty_weights(novelty: np.ndarray) -> np.ndarray:
    """``[N]`` episode weights from ``[N]`` novelties: standardized to mean 0 and standard deviation 1 over the
    rollout (the mean objective's weights of the novelty, as SB3's normalized advantages); all zero where every
    episode is as novel as the others."""
    novelty = np.asarray(novelty, dtype=np.float64)
    spread = novelty.std()
    if spread <= 1e-12 * max(abs(float(novelty.mean())), 1.0):
        return np.zeros_like(novelty)
    return (novelty - novelty.mean()) / spread


def _chunks(observations: Any, observation_space: spaces.Space, n_steps: int, normalize_images: bool):
    """``[<=CHUNK_STEPS, D]`` float64 blocks of the flattened, preprocessed observations, in step order."""
    for start in range(0, n_steps, CHUNK_STEPS):
        block = observation_rows(observations, slice(start, min(start + CHUNK_STEPS, n_steps)))
        with th.no_grad():
            yield flat_observations(block, observation_space, normalize_images).double().numpy()
