"""Properties of the batch estimators (hypothesis): equivariance, shift and scale laws, the mean special case,
ties, and torch batched == NumPy per group."""

import numpy as np
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from ordergrad_rl import Objective, OrderStatTransform, lstat_advantage, lstat_value

SPECS = [
    "mean",
    "cvar0.3",
    "uppertail0.4",
    "quantile0.2",
    "median",
    "top2",
    "bot1",
    "max",
    "min",
    "gmd",
    "trim1",
]


@st.composite
def batches(draw, max_n: int = 12):
    """A reward batch (often with ties), a bound objective with k < N, and a permutation."""
    n = draw(st.integers(2, max_n))
    grid = draw(st.booleans())
    element = st.integers(-3, 3).map(float) if grid else st.floats(-50, 50, allow_nan=False, width=64)
    rewards = np.array(draw(st.lists(element, min_size=n, max_size=n)))
    k = draw(st.integers(1, n - 1))
    if draw(st.booleans()):
        alpha = draw(st.lists(st.floats(-2, 2, allow_nan=False), min_size=k, max_size=k))
        obj = Objective.from_weights(alpha)
    else:
        spec = draw(st.sampled_from(SPECS))
        try:
            obj = Objective.parse(spec, k=k)
        except ValueError:
            obj = Objective.parse("max", k=k)
    perm = np.array(draw(st.permutations(range(n))))
    return rewards, obj, perm


def _tol(x: np.ndarray) -> float:
    return 1e-9 * (1.0 + np.abs(x).max())


@settings(max_examples=150, deadline=None)
@given(batches())
def test_permutation_equivariance(case):
    rewards, obj, perm = case
    np.testing.assert_allclose(
        lstat_advantage(rewards[perm], obj), lstat_advantage(rewards, obj)[perm], atol=_tol(rewards)
    )
    np.testing.assert_allclose(lstat_value(rewards[perm], obj), lstat_value(rewards, obj), atol=_tol(rewards))


@settings(max_examples=150, deadline=None)
@given(batches(), st.floats(-100, 100), st.floats(0.01, 100))
def test_shift_and_scale(case, shift, scale):
    rewards, obj, _ = case
    alpha_sum = obj.weights.sum()
    adv = lstat_advantage(rewards, obj)
    val = lstat_value(rewards, obj)
    tol = _tol(rewards) + 1e-9 * abs(shift) * (1 + np.abs(obj.weights).sum())
    np.testing.assert_allclose(lstat_value(rewards + shift, obj), val + shift * alpha_sum, atol=tol)
    np.testing.assert_allclose(lstat_advantage(rewards + shift, obj), adv, atol=tol)
    np.testing.assert_allclose(lstat_value(scale * rewards, obj), scale * val, atol=scale * tol)
    np.testing.assert_allclose(lstat_advantage(scale * rewards, obj), scale * adv, atol=scale * tol)


@settings(max_examples=100, deadline=None)
@given(batches())
def test_mean_is_reward_minus_mean_of_others(case):
    rewards, _, _ = case
    n = rewards.size
    expected = rewards - (rewards.sum() - rewards) / (n - 1)
    np.testing.assert_allclose(lstat_advantage(rewards, "mean"), expected, atol=_tol(rewards))
    np.testing.assert_allclose(lstat_value(rewards, "mean"), rewards.mean(), atol=_tol(rewards))


@settings(max_examples=100, deadline=None)
@given(batches())
def test_tied_rewards_get_equal_advantages(case):
    rewards, obj, _ = case
    adv = lstat_advantage(rewards, obj)
    for value in np.unique(rewards):
        tied = adv[rewards == value]
        assert np.all(tied == tied[0])


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 10), st.integers(1, 6), st.sampled_from(SPECS), st.integers(0, 2**31 - 1))
def test_torch_batched_equals_numpy_per_group(n, groups, spec, seed):
    k = max(1, n // 2)
    try:
        obj = Objective.parse(spec, k=k)
    except ValueError:
        return
    rewards = np.random.default_rng(seed).integers(-2, 3, size=(groups, 3, n)).astype(float)
    t = OrderStatTransform(n, obj)
    torch_adv = t.advantage(torch.from_numpy(rewards)).numpy()
    torch_rank = t.rank_advantage(torch.from_numpy(rewards)).numpy()
    torch_val = t.value(torch.from_numpy(rewards)).numpy()
    for idx in np.ndindex(groups, 3):
        np.testing.assert_allclose(torch_adv[idx], t.advantage(rewards[idx]), atol=1e-12)
        np.testing.assert_allclose(torch_rank[idx], t.rank_advantage(rewards[idx]), atol=1e-12)
        np.testing.assert_allclose(torch_val[idx], t.value(rewards[idx]), atol=1e-12)
