"""The importance-weighted plug-in weights (ordergrad_rl.core.weighted), checked against brute-force enumeration."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ordergrad_rl import Objective, lstat_advantage
from ordergrad_rl.core.weighted import binomial_kernel, weighted_lstat_advantage, weighted_lstat_value


def brute_value(support: np.ndarray, probs: np.ndarray, alpha: np.ndarray) -> float:
    """``E[sum_j alpha_j Y_(j:k)]`` by enumerating every k-tuple of the support (i.i.d. draws)."""
    k = alpha.size
    value = 0.0
    for tup in itertools.product(range(support.size), repeat=k):
        value += np.prod(probs[list(tup)]) * float(np.sort(support[list(tup)]) @ alpha)
    return value


@pytest.mark.parametrize("spec", ["cvar0.34@3", "median@3", "max@3", "alpha[0.5,-1,2]"])
def test_influence_function_matches_brute_force_derivative(spec: str) -> None:
    # A discrete distribution is its own weighted batch: the weights are then the exact influence function,
    # d/de V((1 - e) F + e delta_x) at e = 0, which a central difference of the enumerated V recovers.
    objective = Objective.parse(spec)
    support = np.array([-3.0, -1.0, 0.5, 2.0])
    probs = np.array([0.1, 0.4, 0.3, 0.2])
    advantages = objective.k * weighted_lstat_advantage(support, probs, objective)
    eps = 1e-5
    for t in range(support.size):
        point = np.eye(support.size)[t]
        up = brute_value(support, (1 - eps) * probs + eps * point, objective.weights)
        down = brute_value(support, (1 + eps) * probs - eps * point, objective.weights)
        assert advantages[t] == pytest.approx((up - down) / (2 * eps), abs=1e-7)


def test_integer_weights_are_replicated_samples() -> None:
    rng = np.random.default_rng(0)
    returns = rng.normal(size=7)
    counts = np.array([1, 3, 2, 1, 4, 1, 2])
    objective = Objective.parse("cvar0.2@8")
    weighted = weighted_lstat_advantage(returns, counts, objective)
    replicated = weighted_lstat_advantage(np.repeat(returns, counts), np.ones(counts.sum()), objective)
    np.testing.assert_allclose(np.repeat(weighted, counts), replicated, atol=1e-12)


def test_weights_centre_and_ties() -> None:
    returns = np.array([3.0, -1.0, 3.0, 0.0, 5.0, -1.0])
    rho = np.array([0.5, 2.0, 1.0, 0.25, 1.0, 3.0])
    a = weighted_lstat_advantage(returns, rho, Objective.parse("cvar0.3@4"))
    assert float(rho @ a) == pytest.approx(0.0, abs=1e-12)
    assert a[0] == a[2] and a[1] == a[5]  # tied returns, tied weights
    # The scale of the likelihood ratios does not matter.
    np.testing.assert_allclose(weighted_lstat_advantage(returns, 7 * rho, Objective.parse("cvar0.3@4")), a)


def test_weights_whose_sum_overflows_are_normalized() -> None:
    """Likelihood ratios are "any scale", but 1e308 each overflowed their cumulative sum: the value was NaN and the
    advantages NaN, with only a RuntimeWarning."""
    returns = np.array([3.0, -1.0, 3.0, 0.0, 5.0, -1.0])
    rho = np.array([0.5, 2.0, 1.0, 0.25, 1.0, 3.0])
    objective = Objective.parse("cvar0.3@4")
    huge = rho / rho.max() * 1.7e308
    np.testing.assert_allclose(
        weighted_lstat_advantage(returns, huge, objective), weighted_lstat_advantage(returns, rho, objective)
    )
    assert weighted_lstat_value(returns, huge, objective) == pytest.approx(
        weighted_lstat_value(returns, rho, objective)
    )


def test_equal_weights_approach_the_unbiased_estimator() -> None:
    # The plug-in (binomial kernel, 1/N) and OrderGrad's leave-one-out U-statistic (hypergeometric, 1/(N-1)) agree
    # to O(1/N) on one batch.
    rng = np.random.default_rng(1)
    returns = rng.normal(size=2000)
    objective = Objective.parse("cvar0.2@64")
    plug_in = weighted_lstat_advantage(returns, np.ones_like(returns), objective)
    unbiased = lstat_advantage(returns, objective)
    assert np.abs(plug_in - unbiased).max() < 0.02 * np.abs(unbiased).max()


def test_kernel_is_the_bernstein_polynomial() -> None:
    alpha = np.array([0.2, -0.5, 1.0, 0.3])
    u = np.array([0.0, 0.25, 1.0])
    expected = [sum(alpha[j] * math.comb(3, j) * x**j * (1 - x) ** (3 - j) for j in range(4)) for x in u]
    np.testing.assert_allclose(binomial_kernel(alpha, u), expected)


@pytest.mark.parametrize(
    ("returns", "weights", "match"),
    [
        ([1.0, 2.0], [1.0], "one length"),
        ([1.0], [1.0], "at least 2"),
        ([1.0, np.nan], [1.0, 1.0], "NaN"),
        ([1.0, 2.0], [1.0, 0.0], "positive"),
        ([1.0, 2.0], [1.0, np.inf], "positive"),
    ],
)
def test_bad_input(returns: list, weights: list, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        weighted_lstat_advantage(np.array(returns), np.array(weights), Objective.parse("cvar0.2@4"))


def test_unbound_objective() -> None:
    with pytest.raises(ValueError, match="no k"):
        weighted_lstat_advantage(np.zeros(3), np.ones(3), Objective.parse("cvar0.2"))


def test_spec_strings_and_numeric_alpha_are_accepted_as_everywhere_in_the_core() -> None:
    """A spec string raised AttributeError: 'str' object has no attribute 'weights' (lstat_advantage takes one)."""
    returns, rho = np.array([3.0, -1.0, 0.0, 5.0]), np.array([0.5, 2.0, 1.0, 0.25])
    objective = Objective.parse("cvar0.5@2")
    for spec in ("cvar0.5@2", [1.0, 0.0]):
        np.testing.assert_array_equal(
            weighted_lstat_advantage(returns, rho, spec), weighted_lstat_advantage(returns, rho, objective)
        )
        assert weighted_lstat_value(returns, rho, spec) == weighted_lstat_value(returns, rho, objective)
    with pytest.raises(ValueError, match="no k"):
        weighted_lstat_value(returns, rho, "cvar0.5")


@pytest.mark.parametrize("spec", ["cvar0.34@3", "median@3", "max@3", "mean", "alpha[0.5,-1,2]"])
def test_the_weighted_value_is_the_enumerated_value_of_the_weighted_distribution(spec: str) -> None:
    objective = Objective.parse(spec)
    support = np.array([-3.0, -1.0, 0.5, 0.5, 2.0])  # a tie included
    weights = np.array([0.2, 0.8, 0.5, 0.1, 0.4])  # any scale
    expected = brute_value(support, weights / weights.sum(), objective.weights)
    assert weighted_lstat_value(support, weights, objective) == pytest.approx(expected, abs=1e-12)
    assert weighted_lstat_value(support[:1], weights[:1], objective) == pytest.approx(-3.0 * objective.weights.sum())
