"""Monte-Carlo unbiasedness of the OrderGrad estimators (paper Thm G.1, App. E), with tolerances from the
estimated standard errors and fixed seeds (a correct estimator fails with probability ~1e-5 per check)."""

import numpy as np
import torch
from scipy import integrate, special, stats

from ordergrad_rl import Objective, known_lstat_advantage, known_lstat_value, lstat_advantage, lstat_value

Z = 4.5  # standard errors allowed per check


def _assert_within_se(samples: np.ndarray, exact: np.ndarray) -> None:
    """``samples``: ``[draws, ...]`` i.i.d. estimates; their mean must be within Z standard errors of ``exact``."""
    mean = samples.mean(0)
    se = samples.std(0, ddof=1) / np.sqrt(samples.shape[0])
    assert np.all(np.abs(mean - exact) <= Z * se + 1e-12), (mean, exact, se)


def test_batch_advantage_is_unbiased_for_known_advantage():
    """E[a_I | A^(I) = b] = abar_b (Thm G.1), with two tied arms."""
    rng = np.random.default_rng(0)
    r = np.array([-1.0, 0.5, 0.5, 2.0])
    p = np.array([0.3, 0.2, 0.1, 0.4])
    alpha = np.array([0.7, -0.4, 1.1])  # any rank weights, k = 3
    n, groups = 6, 200_000
    arms = rng.choice(4, size=(groups, n), p=p)
    adv = lstat_advantage(r[arms], alpha)
    exact = known_lstat_advantage(r, p, alpha)
    for b in range(4):
        _assert_within_se(adv[arms == b], exact[b])


def test_lr_estimator_is_unbiased_on_softmax_bandit():
    """(k/N) sum_i a_i grad log p(x_i) averages to grad vbar^alpha, the exact known-regime gradient (autograd)."""
    rng = np.random.default_rng(1)
    r = np.array([0.0, 1.0, -2.0, 3.0, 0.5])
    theta = torch.tensor([0.2, -0.5, 0.1, 0.4, 0.0], dtype=torch.float64, requires_grad=True)
    objective = Objective.parse("top2@3")
    known_lstat_value(torch.tensor(r), torch.softmax(theta, 0), objective).backward()
    exact = theta.grad.numpy()

    p = torch.softmax(theta, 0).detach().numpy()
    n, groups = 8, 100_000
    arms = rng.choice(5, size=(groups, n), p=p)
    adv = lstat_advantage(r[arms], objective)
    score = np.eye(5)[arms] - p  # grad_theta log softmax(theta)[x] = onehot(x) - p
    grads = (objective.k / n) * np.einsum("gn,gnm->gm", adv, score)
    _assert_within_se(grads, exact)


def _exact_orderstat_mean(mu: float, j: int, k: int) -> float:
    """E[R_(j:k)] for R = -x^2, x ~ N(mu, 1): the order-statistic density integrated over x."""

    def integrand(x: float) -> float:
        cdf = stats.norm.cdf(-abs(x) - mu) + stats.norm.cdf(mu - abs(x))  # P(R <= -x^2)
        weight = k * special.comb(k - 1, j - 1) * cdf ** (j - 1) * (1 - cdf) ** (k - j)
        return -(x**2) * weight * stats.norm.pdf(x - mu)

    value, _ = integrate.quad(integrand, mu - 12, mu + 12, epsabs=1e-13, epsrel=1e-13, limit=400)
    return value


def test_rp_estimator_is_unbiased_for_finite_k_objective():
    """grad_mu of lstat_value through the sort averages to d/dmu E[sum_j alpha_j R_(j:k)] (App. E.2)."""
    objective = Objective.parse("cvar0.2@10")  # mean of the 2 worst of 10
    mu, h = 0.5, 1e-3

    def objective_value(m: float) -> float:
        return sum(a * _exact_orderstat_mean(m, j + 1, 10) for j, a in enumerate(objective.weights) if a)

    exact = (objective_value(mu + h) - objective_value(mu - h)) / (2 * h)

    gen = torch.Generator().manual_seed(2)
    groups, n = 100_000, 20
    mus = torch.full((groups,), mu, dtype=torch.float64, requires_grad=True)
    x = mus[:, None] + torch.randn(groups, n, generator=gen, dtype=torch.float64)
    lstat_value(-(x**2), objective).sum().backward()
    _assert_within_se(mus.grad.numpy(), exact)
