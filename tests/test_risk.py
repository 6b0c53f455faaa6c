import numpy as np
import pytest

from ordergrad_rl import Objective, lstat_value
from ordergrad_rl.risk import lower_tail_mean, risk_profile


def test_profile_keys_and_values():
    returns = np.arange(1.0, 21.0)  # 1..20
    profile = risk_profile(returns)
    assert set(profile) == {
        "mean", "std", "min", "max", "cvar_0.05", "cvar_0.1", "cvar_0.2",
        "quantile_0.05", "quantile_0.25", "quantile_0.5", "quantile_0.75", "quantile_0.95",
    }  # fmt: skip
    assert profile["mean"] == 10.5 and profile["min"] == 1.0 and profile["max"] == 20.0
    assert profile["cvar_0.05"] == 1.0  # worst ceil(1) = 1 value
    assert profile["cvar_0.2"] == 2.5  # worst 4 values: 1, 2, 3, 4
    assert profile["quantile_0.5"] == 10.5
    assert profile["quantile_0.05"] == 1.5  # Hazen position 0.05 * 20 + 0.5 = 1.5: halfway between 1 and 2
    np.testing.assert_allclose(profile["std"], np.std(returns))


def test_cvar_matches_the_objective_with_k_equal_n():
    # The batch value of cvar<a>@n on n samples is the lower-tail mean of all n: the two definitions agree.
    x = np.random.default_rng(0).normal(size=50)
    for level in (0.05, 0.1, 0.2, 0.33):
        np.testing.assert_allclose(lower_tail_mean(x, level), lstat_value(x, Objective.parse(f"cvar{level}", k=50)))
    np.testing.assert_allclose(
        risk_profile(x, quantile_levels=[0.3])["quantile_0.3"], lstat_value(x, Objective.parse("quantile0.3", k=50))
    )


def test_bad_returns():
    with pytest.raises(ValueError, match="at least one"):
        risk_profile([])
    with pytest.raises(ValueError, match="NaN or inf"):
        risk_profile([1.0, np.nan])
    with pytest.raises(ValueError, match=r"\(0, 1\]"):
        risk_profile([1.0], cvar_levels=[0.0])


def test_lower_tail_mean_refuses_what_it_cannot_rank():
    # np.sort puts NaN last, so the tail mean of [nan, 1, 2] at 0.5 was 1.5 with the NaN skipped; a level of 0 or 2
    # gave the worst value or the mean without a word, and no returns gave NumPy's "mean of empty slice" NaN.
    with pytest.raises(ValueError, match="NaN or inf"):
        lower_tail_mean([np.nan, 1.0, 2.0], 0.5)
    with pytest.raises(ValueError, match="at least one"):
        lower_tail_mean([], 0.5)
    for level in (0.0, 2.0, -0.1):
        with pytest.raises(ValueError, match=r"level must be in \(0, 1\]"):
            lower_tail_mean([1.0, 2.0], level)
    assert lower_tail_mean([[3.0, 1.0], [2.0, 4.0]], 0.5) == 1.5  # any shape, flattened


def test_returns_of_other_array_libraries_and_bad_levels():
    """A torch tensor that requires grad is profiled like its values (it raised torch's RuntimeError), complex returns
    are refused as the estimator core refuses them (their imaginary part was dropped with a warning), and quantile
    levels outside [0, 1] are refused with or without weights (the weighted profile clamped them silently)."""
    torch = pytest.importorskip("torch")
    x = np.arange(10.0)
    assert risk_profile(torch.tensor(x, requires_grad=True)) == risk_profile(x)
    with pytest.raises(TypeError, match="complex"):
        risk_profile(x.astype(complex))
    for weights in (None, np.ones(10)):
        with pytest.raises(ValueError, match=r"quantile levels must be in \[0, 1\]"):
            risk_profile(x, quantile_levels=[1.5], weights=weights)
        with pytest.raises(ValueError, match="quantile levels"):
            risk_profile(x, quantile_levels=[np.nan], weights=weights)


def test_lower_tail_mean_and_weights_of_other_array_libraries():
    """lower_tail_mean and a profile's weights take what risk_profile's returns take: a torch tensor that requires grad
    (both raised torch's RuntimeError "Can't call numpy() on Tensor that requires grad"); complex returns are refused
    (lower_tail_mean dropped their imaginary part with a warning)."""
    torch = pytest.importorskip("torch")
    x = np.arange(10.0)
    assert lower_tail_mean(torch.tensor(x, requires_grad=True), 0.2) == lower_tail_mean(x, 0.2) == 0.5
    weights = np.linspace(1.0, 2.0, 10)
    assert risk_profile(x, weights=torch.tensor(weights, requires_grad=True)) == risk_profile(x, weights=weights)
    with pytest.raises(TypeError, match="returns must be real numbers, got dtype complex128"):
        lower_tail_mean(x + 1j, 0.2)
    with pytest.raises(TypeError, match="weights must be real numbers, got dtype complex128"):
        risk_profile(x, weights=weights + 0j)


def test_a_weighted_profile_is_the_profile_of_the_weighted_distribution():
    rng = np.random.default_rng(0)
    returns = rng.normal(size=20)
    counts = rng.integers(1, 4, size=20)
    replicated = risk_profile(np.repeat(returns, counts))
    weighted = risk_profile(returns, cvar_levels=(0.1, 0.25, 1.0), weights=counts * 0.5)  # any scale
    assert weighted["mean"] == pytest.approx(replicated["mean"])
    assert weighted["std"] == pytest.approx(replicated["std"])
    assert (weighted["min"], weighted["max"]) == (replicated["min"], replicated["max"])
    # the lower tail by mass: the worst values' weights until the level, a share of the last one
    order = np.argsort(returns)
    mass = counts[order] / counts.sum()
    for level in (0.1, 0.25, 1.0):
        taken = np.clip(level - np.concatenate([[0.0], np.cumsum(mass)[:-1]]), 0, mass)
        assert weighted[f"cvar_{level:g}"] == pytest.approx(taken @ returns[order] / level)
    assert weighted["cvar_1"] == pytest.approx(weighted["mean"])
    # equal weights: the unweighted profile (where a * n is a whole number of returns)
    equal = risk_profile(returns, weights=np.ones(20))
    plain = risk_profile(returns)
    assert equal == pytest.approx(plain)
    with pytest.raises(ValueError, match="positive"):
        risk_profile(returns, weights=np.zeros(20))


def test_a_weighted_profile_of_weights_near_the_float_limit():
    # Three likelihood ratios of 1e308 sum past the float limit: every mass was 1e308 / inf = 0, so the profile read
    # mean 0, std 0, CVaR 0 and every quantile the largest return, without a word. Only their ratios matter.
    returns = np.array([1.0, 2.0, 3.0])
    huge = risk_profile(returns, cvar_levels=(0.5, 1.0), weights=np.full(3, 1e308))
    assert huge == pytest.approx(risk_profile(returns, cvar_levels=(0.5, 1.0), weights=np.ones(3)))
    assert huge["mean"] == 2.0 and huge["cvar_0.5"] == pytest.approx(4 / 3)
