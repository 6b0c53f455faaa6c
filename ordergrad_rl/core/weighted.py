"""Order-statistic objectives of an importance-weighted batch: the plug-in influence function as per-sample weights.

OrderGrad's batch estimator (:func:`~ordergrad_rl.core.lstat_advantage`) is a U-statistic of ``N`` i.i.d. draws of
the return's own distribution ``F``. When the batch is drawn from another distribution instead (a cross-entropy
sampler that oversamples rare costly events, CeSoR), each sample carries a likelihood ratio ``rho_i = dF/dQ`` and
the batch describes ``F`` only through its weighted empirical distribution ``F_w(y) = sum_i rho_i 1{R_i <= y} /
sum_i rho_i``. This module gives the policy-gradient weights of that plug-in estimate.

The objective is the expected L-statistic of ``k`` i.i.d. draws, ``V(F) = E[sum_j alpha_j Y_(j:k)]``. Writing each
order statistic through its survival function, ``V(F) = c + int A(F(y)) dy`` with ``A(u) = sum_j alpha_j
P(Bin(k, u) < j)``, so ``A'(u) = -k K(u)`` with the binomial kernel

    K(u) = E[alpha_{X+1}],   X ~ Bin(k - 1, u)      (the Bernstein polynomial of alpha),

and the influence function of ``V`` at ``F`` (its derivative towards a point mass at ``x``) is

    IF(x) = k int K(F(y)) (F(y) - 1{x <= y}) dy.

For a distribution with finitely many atoms (a weighted batch, sorted ``R_(1) <= ... <= R_(N)``, gaps ``D_l =
R_(l+1) - R_(l)`` and cumulative weights ``F_l``) the integral is the finite sum

    IF(R_(t)) = k sum_{l=1}^{N-1} D_l K(F_l) (F_l - 1{t <= l}).

By the likelihood-ratio identity, ``grad V = E_F[IF(R) grad log p(tau)] = E_Q[rho IF(R) grad log p(tau)]``, so the
per-sample weight is ``rho_i IF(R_i)``, with ``F_w`` in place of ``F`` (consistent, not unbiased at finite ``N``).
With equal weights, ``F_l = l / N`` and this is the plug-in twin of OrderGrad's leave-one-out advantage
(module docstring of :mod:`ordergrad_rl.core.weights`: ``(N - 1)`` for ``N`` and a hypergeometric ``K_l`` for
the binomial one). Tied returns (zero gaps) get identical weights; ``sum_i rho_i IF(R_i) = 0``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import stats

from ordergrad_rl.core._xp import host, host_float64
from ordergrad_rl.core.objectives import Objective, ObjectiveLike


def check_weighted_batch(returns: Any, weights: Any, minimum: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """``(returns, weights)`` as float64 arrays if they are one weighted batch.

    :raises ValueError: shapes that differ or are not 1-D, fewer than ``minimum`` samples, non-finite returns, or
        weights that are not positive and finite.
    :raises TypeError: complex arrays, or arrays traced by a function transform (the weighted batch is computed in
        NumPy).
    """
    what = "weighted_lstat_advantage / weighted_lstat_value"
    returns = host_float64(returns, "returns", what)
    weights = host_float64(weights, "weights", what)
    if returns.ndim != 1 or weights.shape != returns.shape:
        raise ValueError(
            f"returns and weights must be 1-D arrays of one length, got shapes {returns.shape} and {weights.shape}"
        )
    if returns.size < minimum:
        raise ValueError(f"a weighted batch needs at least {minimum} samples, got {returns.size}")
    if not np.isfinite(returns).all():
        raise ValueError("returns contain NaN or inf")
    if not (np.isfinite(weights).all() and (weights > 0).all()):
        raise ValueError("importance weights must be positive and finite")
    return returns, weights


def _sorted_levels(returns: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(order, sorted returns, F_l)``: the stable sort of a weighted batch and its cumulative weights ``F_l``,
    ``l = 1 .. N-1`` (module docstring)."""
    order = np.argsort(returns, kind="stable")
    with np.errstate(over="ignore"):
        cumulative = np.cumsum(weights[order])
    if not np.isfinite(cumulative[-1]):  # weights near the float limit (e.g. 1e308 each): their sum overflowed
        cumulative = np.cumsum(weights[order] / weights.max())
    return order, returns[order], cumulative[:-1] / cumulative[-1]


def binomial_kernel(alpha: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``K(u) = sum_j alpha_j C(k-1, j-1) u^(j-1) (1-u)^(k-j)`` for each ``u`` (module docstring).

    :param alpha: ``[k]`` rank weights, low to high.
    :param u: ``[M]`` probabilities in ``[0, 1]``.
    :return: ``[M]`` float64.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    u = np.clip(np.asarray(u, dtype=np.float64), 0.0, 1.0)
    ranks = np.arange(alpha.size)  # j - 1
    pmf = stats.binom.pmf(ranks[None, :], alpha.size - 1, u[:, None])  # [M, k]
    return pmf @ alpha


@host
def weighted_lstat_advantage(returns: np.ndarray, weights: np.ndarray, objective: ObjectiveLike) -> np.ndarray:
    """Per-sample weights ``IF(R_i) / k`` of ``objective`` under the weighted empirical distribution of ``returns``.

    The policy-gradient weight of sample ``i`` is ``k * rho_i * a_i`` (this returns ``a``, the scale of
    :func:`~ordergrad_rl.core.lstat_advantage`; the caller multiplies by ``k`` and the likelihood ratio).

    :param returns: ``[N]`` finite returns (higher is better).
    :param weights: ``[N]`` positive finite likelihood ratios ``rho_i`` (any scale: they are normalized).
    :param objective: a bound :class:`~ordergrad_rl.core.Objective`, a spec with ``@K`` or a numeric alpha vector.
    :return: ``[N]`` float64 advantages, ``sum_i rho_i a_i = 0``.
    :raises ValueError: shapes that differ or are not 1-D, ``N < 2``, non-finite returns, weights that are not
        positive and finite, or an unbound objective.
    """
    returns, weights = check_weighted_batch(returns, weights, 2)
    alpha = Objective.parse(objective).weights  # raises for an unbound objective
    order, sorted_returns, level = _sorted_levels(returns, weights)
    gaps = np.diff(sorted_returns)  # D_l
    terms = gaps * binomial_kernel(alpha, level)  # D_l K(F_l)
    # IF(R_(t)) / k = sum_l terms_l F_l - sum_{l >= t} terms_l.
    above = np.concatenate([np.cumsum(terms[::-1])[::-1], [0.0]])  # sum_{l >= t}, t = 1 .. N
    advantages = np.empty_like(returns)
    advantages[order] = np.dot(terms, level) - above
    return advantages


@host
def weighted_lstat_value(returns: np.ndarray, weights: np.ndarray, objective: ObjectiveLike) -> float:
    """The plug-in value ``V(F_w) = E[sum_j alpha_j Y_(j:k)]`` of ``k`` i.i.d. draws ``Y`` of the weighted
    empirical distribution ``F_w`` of ``returns`` (module docstring): with the returns sorted, gaps ``D_l`` and
    cumulative weights ``F_l``, ``V = R_(1) sum_j alpha_j + sum_l D_l sum_j alpha_j P(Bin(k, F_l) < j)``, since
    ``Y_(j:k) > y`` exactly when fewer than ``j`` of the ``k`` draws are ``<= y``.

    What a batch drawn by a sampler says about the objective's value under ``F`` (consistent, as the weights of
    :func:`weighted_lstat_advantage`); with equal weights, the V-statistic (draws with replacement), not
    :func:`~ordergrad_rl.core.lstat_value`'s U-statistic.

    :param returns: ``[N]`` finite returns.
    :param weights: ``[N]`` positive finite likelihood ratios (any scale).
    :param objective: a bound :class:`~ordergrad_rl.core.Objective`, a spec with ``@K`` or a numeric alpha vector.
    :raises ValueError: as :func:`check_weighted_batch`, or an unbound objective.
    """
    returns, weights = check_weighted_batch(returns, weights)
    alpha = Objective.parse(objective).weights
    _, sorted_returns, level = _sorted_levels(returns, weights)
    # P(Bin(k, F_l) < j) = P(Bin(k, F_l) <= j - 1), j = 1 .. k: [N-1, k]
    below = stats.binom.cdf(np.arange(alpha.size)[None, :], alpha.size, level[:, None])
    return float(sorted_returns[0] * alpha.sum() + np.diff(sorted_returns) @ (below @ alpha))
