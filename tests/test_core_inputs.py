"""Inputs that used to slip through the estimator core and the portfolio env (issue 22's audit): half-precision
rewards, complex actions, huge k in the known regime, probabilities whose sum overflows."""

from __future__ import annotations

import time

import gymnasium as gym
import numpy as np
import pytest
import torch

from ordergrad_rl.core import known_lstat_advantage, known_lstat_value, lstat_advantage, lstat_value
from ordergrad_rl.envs import make_sb3_vec_env


@pytest.mark.parametrize("spec", ["cvar0.2", "top3", "gmd"])
def test_float16_rewards_are_computed_in_float32_and_returned_in_float16(spec):
    rewards = np.random.default_rng(0).normal(size=2000).astype(np.float16)
    exact = lstat_advantage(rewards.astype(np.float64), spec, k=1000)  # the same (rounded) rewards, in float64
    half = lstat_advantage(rewards, spec, k=1000)
    assert half.dtype == np.float16
    # float16 keeps 11 bits: the result is exact to its own rounding (it was 2% off when computed in float16)
    assert np.abs(half.astype(np.float64) - exact).max() <= 2e-3 * np.abs(exact).max()
    value = lstat_value(rewards, spec, k=1000)
    assert value.dtype == np.float16
    assert float(value) == pytest.approx(
        float(lstat_value(rewards.astype(np.float64), spec, k=1000)), rel=2e-3, abs=2e-3
    )


@pytest.mark.parametrize("spec", ["mean", "cvar0.2", "gmd"])
def test_numpy_float32_rewards_at_large_n_are_accurate_to_float32(spec):
    """NumPy adds a cumulative sum's terms one after another in the array's own precision: float32 NumPy rewards at
    N = 65536 got advantages 4.5e-4 (mean), 2.7e-5 (cvar0.2) off the largest, where torch's float32 keeps 1e-7."""
    from ordergrad_rl import OrderStatTransform

    rewards = np.random.default_rng(0).normal(size=65536).astype(np.float32)
    exact = OrderStatTransform(65536, spec, k=None if spec == "mean" else 32768)
    for quantity in ("advantage", "inclusion", "leave_one_out"):
        reference = getattr(exact, quantity)(rewards.astype(np.float64))
        result = getattr(exact, quantity)(rewards)
        assert result.dtype == np.float32
        assert np.abs(result - reference).max() <= 1e-6 * np.abs(reference).max(), quantity
    assert lstat_value(rewards, spec, k=None if spec == "mean" else 32768).dtype == np.float32


@pytest.mark.parametrize(
    "rewards", [np.array([-3e38, 3e38, 0.0, 1.0], np.float32), np.array([-6e4, 6e4, 0, 1], np.float16)]
)
def test_results_that_overflow_the_input_dtype_are_refused(rewards):
    """Computed in a wider dtype, a result beyond the input's range was returned as inf (float16) or refused naming
    float64 (float32)."""
    with pytest.raises(ValueError, match=f"overflow {rewards.dtype} for these rewards"):
        lstat_advantage(rewards, "mean")
    with pytest.raises(ValueError, match="overflow torch.float16"):
        lstat_advantage(torch.tensor([-6e4, 6e4, 0.0, 1.0], dtype=torch.float16), "mean")


def test_bfloat16_tensors_keep_their_dtype_and_gradient():
    rewards = torch.randn(64, dtype=torch.bfloat16, requires_grad=True)
    value = lstat_value(rewards, "cvar0.25", k=16)
    assert value.dtype == torch.bfloat16
    value.backward()
    assert rewards.grad is not None and rewards.grad.dtype == torch.bfloat16
    assert lstat_advantage(rewards, "cvar0.25", k=16).dtype == torch.bfloat16


def test_tailrisk_refuses_complex_logits():
    env = gym.make("SyntheticTailRisk-v0")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="real logits .* complex"):
        env.step(np.array([1.0, 2.0, 3.0, 4j]))
    venv = make_sb3_vec_env("SyntheticTailRisk-v0", 4)
    venv.reset()
    with pytest.raises(ValueError, match="complex"):
        venv.step(np.ones((4, 4)) + 1j)


@pytest.mark.parametrize(("spec", "k"), [("max", 1e8), ("min", 10**9), ("top2", 10**12), ("rank3", 1e7)])
def test_anchored_objectives_at_huge_k_cost_nothing(spec, k):
    start = time.perf_counter()
    value = known_lstat_value(np.array([0.0, 1.0]), np.array([0.5, 0.5]), spec, k=k)
    assert time.perf_counter() - start < 1.0
    assert float(value) == pytest.approx(0.0 if spec == "min" else 1.0)


@pytest.mark.parametrize("spec", ["max", "top2", "rank3", "min", "bot2"])
def test_anchored_shortcut_agrees_with_the_full_weights(spec):
    """Integer k through the anchor (few ranks tabulated) equals the same objective as a full weight vector."""
    from ordergrad_rl.core import Objective

    r, p = np.array([-1.0, 0.5, 2.0, 3.0]), np.array([0.1, 0.4, 0.3, 0.2])
    alpha = Objective.parse(spec, k=9).weights
    np.testing.assert_allclose(known_lstat_value(r, p, spec, k=9), known_lstat_value(r, p, alpha), atol=1e-12)
    np.testing.assert_allclose(known_lstat_advantage(r, p, spec, k=9), known_lstat_advantage(r, p, alpha), atol=1e-12)
    # and the closed form of the max: sum_b r_b (F_b^k - F_{b-1}^k)
    if spec == "max":
        cdf = np.cumsum(p)
        expected = np.sum(r * (cdf**9 - np.r_[0.0, cdf[:-1]] ** 9))
        assert float(known_lstat_value(r, p, "max", k=9)) == pytest.approx(expected)


def test_huge_k_of_other_objectives_is_refused_before_allocating():
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"GiB, above the 1 GiB limit .*RANKWISE_MAX_BYTES"):
        known_lstat_value([0.0, 1.0], [0.5, 0.5], "cvar0.2", k=1e8)
    assert time.perf_counter() - start < 1.0


def test_probabilities_whose_sum_overflows_are_normalized():
    r = np.array([0.0, 1.0])
    huge = known_lstat_value(r, np.array([1e308, 1e308]), "max", k=2)
    assert float(huge) == pytest.approx(0.75) == float(known_lstat_value(r, np.array([1.0, 1.0]), "max", k=2))
    np.testing.assert_allclose(
        known_lstat_advantage(r, np.array([1e308, 1e308]), "cvar0.5", k=4),
        known_lstat_advantage(r, np.array([0.5, 0.5]), "cvar0.5", k=4),
    )


@pytest.mark.parametrize("dtype", [np.float16, torch.float16, torch.bfloat16])
def test_known_regime_half_precision_is_computed_in_float32(dtype):
    """The known regime computed its binomial tables in the input's dtype: float16 values and advantages of
    cvar0.2@100 were NaN, bfloat16 ones off by up to 4x at median@1000."""
    rng = np.random.default_rng(0)
    r, p = rng.normal(size=(3, 10)), rng.random((3, 10))
    if isinstance(dtype, torch.dtype):
        r_half, p_half = torch.tensor(r, dtype=dtype), torch.tensor(p, dtype=dtype)
        r, p = r_half.double().numpy(), p_half.double().numpy()  # the same (rounded) inputs in float64
    else:
        r_half, p_half = r.astype(dtype), p.astype(dtype)
        r, p = r_half.astype(np.float64), p_half.astype(np.float64)
    for spec in ("cvar0.2@100", "median@1000", "gmd@1000", "max@8"):
        for fn in (known_lstat_value, known_lstat_advantage):
            exact, half = fn(r, p, spec), fn(r_half, p_half, spec)
            assert half.dtype == dtype
            half = half.double().numpy() if isinstance(half, torch.Tensor) else half.astype(np.float64)
            assert np.abs(half - exact).max() <= 1e-2 * np.abs(exact).max(), (spec, fn.__name__)


def test_masked_arrays_with_masked_entries_are_refused():
    """A masked reward was neither skipped nor refused: lstat_advantage(np.ma.array([1, 5, 3], mask=[0, 1, 0]),
    "max@2") returned [0, 0, 0] and lstat_value 1.0 (the max of [1, 3] is 3)."""
    masked = np.ma.array([1.0, 5.0, 3.0], mask=[False, True, False])
    for call in (
        lambda: lstat_advantage(masked, "max@2"),
        lambda: lstat_value(masked, "max@2"),
        lambda: known_lstat_value(masked, np.ones(3), "max@2"),
    ):
        with pytest.raises(ValueError, match=r"masked array with masked entries.*compressed\(\)"):
            call()
    unmasked = np.ma.array([1.0, 5.0, 3.0])  # nothing masked: computed as the plain array
    np.testing.assert_array_equal(lstat_advantage(unmasked, "max@2"), lstat_advantage(unmasked.data, "max@2"))
