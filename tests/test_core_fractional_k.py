"""Fractional (real) k in the known-(r,p) regime: the i-th largest of k draws is Q(U), U ~ Beta(k - i + 1, i).

Checked against the integer k it interpolates, against Monte-Carlo sampling of that definition, and against the
identities that make it an objective with an unbiased LR gradient (mixture identity, autograd = k sum p abar grad log
p)."""

import numpy as np
import pytest
import torch
from scipy import stats

from ordergrad_rl import known_lstat_advantage, known_lstat_inclusion, known_lstat_value

R = np.array([0.0, 1.0, -2.0, 5.0, 0.5, 1.0])  # with a tie
P = np.array([0.1, 0.25, 0.05, 0.3, 0.2, 0.1])
SPECS = ["max", "top2", "rank3", "min", "bot2"]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("k", [3, 4, 7])
def test_agrees_with_the_integer_k_it_interpolates(spec, k):
    for fn in (known_lstat_value, known_lstat_inclusion, known_lstat_advantage):
        exact = fn(R, P, spec, k=k)
        for near in (k - 1e-9, k + 1e-9)[k == 3 :]:  # the fractional path a hair away (rank3 needs k >= 3)
            np.testing.assert_allclose(fn(R, P, spec, k=near), exact, atol=1e-7)
    assert known_lstat_value(R, P, f"{spec}@{k}") == pytest.approx(known_lstat_value(R, P, spec, k=float(k)))


def test_monotone_in_k():
    ks = np.linspace(3, 9, 25)
    best = [known_lstat_value(R, P, "max", k=k) for k in ks]
    worst = [known_lstat_value(R, P, "min", k=k) for k in ks]
    assert np.all(np.diff(best) > 0) and np.all(np.diff(worst) < 0)
    # the spec form with a real @K is the same objective
    assert known_lstat_value(R, P, "TopM:2 @ 4.6") == known_lstat_value(R, P, "top2", k=4.6)


def _quantile(u: np.ndarray) -> np.ndarray:
    order = np.argsort(R, kind="stable")
    cdf = np.cumsum(P[order])
    return R[order][np.minimum(np.searchsorted(cdf, u), R.size - 1)]


@pytest.mark.parametrize("spec,ranks,top", [("max", [1], True), ("top2", [1, 2], True), ("rank3", [3], True),
                                            ("bot2", [1, 2], False), ("min", [1], False)])  # fmt: skip
def test_value_matches_monte_carlo_of_the_beta_definition(spec, ranks, top):
    rng = np.random.default_rng(0)
    k, draws = 4.6, 400_000
    weights = {"rank3": [1.0]}.get(spec, [1.0 / len(ranks)] * len(ranks))
    samples = np.zeros(draws)
    for w, i in zip(weights, ranks, strict=True):
        u = (
            stats.beta(k - i + 1, i).rvs(draws, random_state=rng)
            if top
            else stats.beta(i, k - i + 1).rvs(draws, random_state=rng)
        )
        samples += w * _quantile(u)
    se = samples.std() / np.sqrt(draws)
    assert abs(samples.mean() - known_lstat_value(R, P, spec, k=k)) < 4.5 * se


@pytest.mark.parametrize("spec", SPECS)
def test_mixture_identity_and_lr_gradient(spec):
    k = 5.3
    np.testing.assert_allclose(P @ known_lstat_inclusion(R, P, spec, k=k), known_lstat_value(R, P, spec, k=k),
                               atol=1e-13)  # fmt: skip
    logits = torch.tensor(np.log(P), requires_grad=True)
    known_lstat_value(torch.tensor(R), torch.softmax(logits, 0), spec, k=k).backward()
    adv = known_lstat_advantage(R, P, spec, k=k)
    # d/dlogits sum_b p_b c_b = p (c - sum p c); with c = k abar and sum_b p_b abar_b = 0: k p abar
    np.testing.assert_allclose(logits.grad.numpy(), k * P * adv, atol=1e-12)
