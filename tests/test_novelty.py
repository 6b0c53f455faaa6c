"""Novelty of a blind rollout's episodes (:mod:`ordergrad_rl.agents.common.novelty`), checked against direct
computations: per-step standardized distances by loops, count-based novelty on one-hot observations."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium import spaces

from ordergrad_rl.agents.common import novelty
from ordergrad_rl.agents.common.novelty import episode_novelty, novelty_weights


def _direct(features: np.ndarray, episode_index: np.ndarray, n_episodes: int) -> np.ndarray:
    """The definition, step by step: each step's sum over varying features of ((x - mean) / std)^2, averaged per
    episode."""
    mean = features.mean(0)
    std = features.std(0)
    out = []
    for episode in range(n_episodes):
        steps = [t for t in range(len(features)) if episode_index[t] == episode]
        distances = [sum(((features[t, j] - mean[j]) / std[j]) ** 2 for j in range(features.shape[1]) if std[j] > 0)
                     for t in steps]  # fmt: skip
        out.append(np.mean(distances))
    return np.array(out)


def test_box_observations_match_the_definition():
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(40, 2, 3)).astype(np.float32) * [1.0, 10.0, 0.1]
    index = np.sort(rng.integers(0, 5, 40))
    index[:5] = np.arange(5)  # every episode has a step
    space = spaces.Box(-np.inf, np.inf, (2, 3), np.float32)
    got = episode_novelty(obs, space, index, 5)
    np.testing.assert_allclose(got, _direct(obs.reshape(40, -1).astype(np.float64), index, 5), rtol=1e-6)


def test_a_constant_feature_adds_nothing_and_gives_no_nan():
    obs = np.array([[0.0, 5.0], [1.0, 5.0], [3.0, 5.0], [4.0, 5.0]], dtype=np.float32)
    got = episode_novelty(obs, spaces.Box(-10, 10, (2,), np.float32), np.array([0, 0, 1, 1]), 2)
    np.testing.assert_allclose(got, _direct(obs[:, :1].astype(np.float64), np.array([0, 0, 1, 1]), 2), rtol=1e-6)
    assert np.isfinite(got).all()
    box = spaces.Box(-10, 10, (2,), np.float32)
    same = episode_novelty(np.ones((4, 2), np.float32), box, np.array([0, 0, 1, 1]), 2)
    np.testing.assert_array_equal(same, [0.0, 0.0])


def test_one_hot_observations_give_count_based_novelty():
    # Discrete observations are one-hot (SB3's preprocessing): a step in a state visited on a share p of the steps
    # scores (1 - p)/p - p/(1 - p) + C, C the sum over all states of p/(1 - p); rarer states score higher.
    states = np.array([0, 0, 0, 0, 1, 1, 2, 0, 0, 3])
    index = np.array([0, 0, 0, 0, 0, 1, 1, 2, 2, 2])
    n_states = 5  # state 4 is never visited: a constant feature
    got = episode_novelty(states, spaces.Discrete(n_states), index, 3)
    share = np.bincount(states, minlength=n_states) / len(states)
    visited = share > 0
    constant = float(np.sum(share[visited] / (1 - share[visited])))
    per_step = (1 - share[states]) / share[states] - share[states] / (1 - share[states]) + constant
    expected = np.bincount(index, weights=per_step) / np.bincount(index)
    np.testing.assert_allclose(got, expected, rtol=1e-9)
    assert got[1] > got[0] and got[2] > got[0]  # the episodes through the rare states 1, 2 and 3


def test_dict_observations_are_flattened_key_by_key():
    rng = np.random.default_rng(1)
    space = spaces.Dict({"pos": spaces.Box(-5, 5, (2,), np.float32), "cell": spaces.Discrete(3)})
    obs = {"pos": rng.normal(size=(12, 2)).astype(np.float32), "cell": rng.integers(0, 3, 12)}
    index = np.repeat(np.arange(4), 3)
    features = np.concatenate([obs["pos"].astype(np.float64), np.eye(3)[obs["cell"]]], axis=1)
    np.testing.assert_allclose(episode_novelty(obs, space, index, 4), _direct(features, index, 4), rtol=1e-6)


def test_images_are_scaled_as_the_policy_scales_them():
    """``normalize_images=False`` (the policy's, as SB3's ``preprocess_obs`` takes it): the novelty of the raw pixel
    values; it was always that of the pixels divided by 255 (the standardized distance is the same but for rounding)."""
    rng = np.random.default_rng(3)
    space = spaces.Box(0, 255, (4, 3, 2), np.uint8)
    obs = rng.integers(0, 256, (12, 4, 3, 2), dtype=np.uint8)
    index = np.repeat(np.arange(4), 3)
    raw = obs.reshape(12, -1).astype(np.float64)
    for normalize_images, features in ((True, raw / 255.0), (False, raw)):
        got = episode_novelty(obs, space, index, 4, normalize_images=normalize_images)
        np.testing.assert_allclose(got, _direct(features, index, 4), rtol=1e-6)


def test_chunks_give_the_whole_rollout(monkeypatch):
    rng = np.random.default_rng(2)
    obs = rng.normal(size=(50, 4)).astype(np.float32)
    index = np.repeat(np.arange(10), 5)
    space = spaces.Box(-np.inf, np.inf, (4,), np.float32)
    whole = episode_novelty(obs, space, index, 10)
    monkeypatch.setattr(novelty, "CHUNK_STEPS", 7)
    np.testing.assert_allclose(episode_novelty(obs, space, index, 10), whole, rtol=1e-12)


def test_weights_are_standardized_or_zero():
    weights = novelty_weights(np.array([1.0, 2.0, 3.0, 6.0]))
    assert weights.mean() == pytest.approx(0.0, abs=1e-12) and weights.std() == pytest.approx(1.0)
    assert np.all(np.diff(weights) > 0)
    np.testing.assert_array_equal(novelty_weights(np.full(4, 2.5)), np.zeros(4))
