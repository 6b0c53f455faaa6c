"""pass@k against brute-force enumeration, exact rationals at n = 1024, and Monte-Carlo sampling."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

import ordergrad_rl
from ordergrad_rl.passk import default_ks, pass_at_k, pass_at_k_curve


@pytest.mark.parametrize("n", range(1, 8))
def test_brute_force_enumeration_of_subsets(n: int) -> None:
    for c in range(n + 1):
        correct = set(range(c))  # which samples are correct does not matter, only how many
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(range(n), k))
            hits = sum(bool(correct.intersection(subset)) for subset in subsets)
            assert pass_at_k(c, n, k) == pytest.approx(hits / len(subsets), abs=1e-15)


def test_exact_rationals_at_n_1024() -> None:
    n = 1024
    cs = [0, 1, 2, 3, 10, 100, 511, 512, 900, 1000, 1020, 1023, 1024]
    ks = [1, 2, 3, 4, 16, 64, 256, 512, 768, 1000, 1021, 1022, 1024]
    table = pass_at_k(np.array(cs)[:, None], n, np.array(ks)[None, :])
    assert table.shape == (len(cs), len(ks)) and table.dtype == np.float64
    for i, c in enumerate(cs):
        for j, k in enumerate(ks):
            exact = float(1 - Fraction(math.comb(n - c, k), math.comb(n, k)))
            assert table[i, j] == pytest.approx(exact, rel=1e-13, abs=1e-300), (c, k)
    assert np.all(table[0] == 0.0)  # no correct sample: pass@k is exactly 0
    assert pass_at_k(3, n, 1022) == 1.0  # every 1022-subset of 1024 meets one of 3 correct samples


def test_monotone_in_k_and_in_c() -> None:
    n = 1024
    cs = np.r_[0:40, 40 : n + 1 : 16, n - 3 : n + 1]  # every small count, a stride elsewhere (keeps the test fast)
    table = pass_at_k(cs[:, None], n, np.arange(1, n + 1)[None, :])
    assert np.all(np.diff(table, axis=1) >= 0) and np.all(np.diff(table, axis=0) >= 0)
    assert np.all((table >= 0) & (table <= 1))
    np.testing.assert_allclose(table[:, 0], cs / n, rtol=1e-14)  # pass@1 = c / n


def test_matches_random_subsets_monte_carlo() -> None:
    """For a fixed sample set, pass@k is the chance that a random k-subset holds a correct sample."""
    rng = np.random.default_rng(0)
    n, c, draws = 64, 5, 40_000
    correct = np.zeros(n, dtype=bool)
    correct[rng.choice(n, c, replace=False)] = True
    for k in (1, 4, 16):
        keys = rng.random((draws, n))
        subsets = np.argpartition(keys, k, axis=1)[:, :k]  # uniform k-subsets
        freq = correct[subsets].any(axis=1).mean()
        value = float(pass_at_k(c, n, k))
        assert abs(freq - value) < 4 * math.sqrt(value * (1 - value) / draws), (k, freq, value)


def test_unbiased_for_fresh_samples() -> None:
    """E[pass@k estimate] = 1 - (1 - p)^k when each of the n samples is correct with probability p."""
    rng = np.random.default_rng(1)
    p = np.array([0.002, 0.02, 0.2])
    n, reps = 128, 20_000
    counts = rng.binomial(n, p[:, None], size=(3, reps))
    for k in (1, 8, 64):
        estimates = pass_at_k(counts, n, k)
        truth = 1 - (1 - p) ** k
        se = estimates.std(axis=1) / math.sqrt(reps)
        assert np.all(np.abs(estimates.mean(axis=1) - truth) < 4 * se + 1e-12), k


def test_curve() -> None:
    np.testing.assert_array_equal(default_ks(1024), 2 ** np.arange(11))
    np.testing.assert_array_equal(default_ks(300), [1, 2, 4, 8, 16, 32, 64, 128, 256])
    counts = np.array([0, 1, 512, 1024])
    curve = pass_at_k_curve(counts, 1024)
    assert list(curve) == [2**i for i in range(11)]
    assert curve[1] == pytest.approx((0 + 1 + 512 + 1024) / 1024 / 4)
    assert curve[1024] == pytest.approx(0.75)
    for k, value in curve.items():
        assert value == pytest.approx(pass_at_k(counts, 1024, k).mean())
    assert pass_at_k_curve([3, 4], [8, 16], ks=[4, 2]) == {
        2: pytest.approx(np.mean(pass_at_k([3, 4], [8, 16], 2))),
        4: pytest.approx(np.mean(pass_at_k([3, 4], [8, 16], 4))),
    }
    assert ordergrad_rl.pass_at_k is pass_at_k and ordergrad_rl.pass_at_k_curve is pass_at_k_curve


@pytest.mark.parametrize(
    ("args", "error", "match"),
    [
        ((5, 4, 1), ValueError, "n_correct must be <= n"),
        ((1, 4, 5), ValueError, "k must be <= n"),
        ((-1, 4, 1), ValueError, "n_correct must be >= 0"),
        ((1, 4, 0), ValueError, "k must be >= 1"),
        ((1, 0, 1), ValueError, "n must be >= 1"),
        ((1.5, 4, 1), ValueError, "n_correct must be integers"),
        ((1, 4, np.nan), ValueError, "k contains NaN"),
        ((np.array([True]), 4, 1), TypeError, "n_correct must be integers"),
        (("3", 4, 1), TypeError, "n_correct must be integers"),
        (([1, 2], 4, [1, 2, 3]), ValueError, "do not broadcast"),
    ],
)
def test_bad_input(args: tuple, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        pass_at_k(*args)


def test_curve_bad_input() -> None:
    with pytest.raises(ValueError, match="non-empty 1-D"):
        pass_at_k_curve([], 4)
    with pytest.raises(ValueError, match="k must be <= n"):
        pass_at_k_curve([1, 2], 4, ks=[8])
    assert pass_at_k(2.0, 4.0, 1) == pytest.approx(0.5)  # integral floats are counts too
