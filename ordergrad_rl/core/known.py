"""The known-distribution regime: exact order-statistic values and advantages for finite arms (paper App. D).

Arm ``b`` has reward ``r_b`` and probability ``p_b``; draw ``A_1..A_k`` i.i.d. from ``p``. With the arms in
stable sorted order and ``F_t`` the probability of the first ``t`` of them:

* ``P(stable rank of R_(j:k) <= t) = P(Bin(k, F_t) >= j)`` (Lemma D.1), so
  ``vbar_j = sum_t r_(t) [T_{t,j} - T_{t-1,j}]`` with ``T_{t,j} = P(Bin(k, F_t) >= j)``;
* conditioning on ``A_1 = b`` pins one draw: ``P(... <= t | A_1 = b) = P(Bin(k-1, F_t) >= j - [rho(b) <= t])``
  (eq. app-bin-tail-cond), from one shared table ``G_{t,s} = P(Bin(k-1, F_t) >= s)``;
* ``abar_b = qbar_b - vbar`` and ``sum_b p_b abar_b = 0`` (mixture identity, Prop. D.2).

For arm ``b`` at sorted position ``rho``, ``qbar_b`` sums ``r_(t)`` against ``G``'s differences with the
threshold shifted for ``t >= rho``: the same prefix/diagonal/suffix form as the batch regime, so all arms
take one scan (:mod:`ordergrad_rl.core.scan`). ``r`` and ``p`` have shape ``[..., m]``; leading dimensions
are independent groups (e.g. the thousands of states of a Q-critic rollout), computed together. NumPy or
torch, CPU or CUDA; outputs follow ``r``. ``p`` may be unnormalized; it is divided by its sum.
"""

from __future__ import annotations

import math

import numpy as np

from ordergrad_rl.core import _backend as B
from ordergrad_rl.core.objectives import ObjectiveLike, resolve_objective
from ordergrad_rl.core.scan import scan, scan_tables
from ordergrad_rl.core.weights import check_sizes


def _prepare(r, p):
    """Validate, normalize ``p`` and sort arms: ``(r_sorted, p_sorted, perm)``, each ``[..., m]``."""
    r = B.as_float_array(r, "r")
    p = B.as_float_array(p, "p")
    if B.is_torch(r) != B.is_torch(p):
        raise ValueError("r and p must both be NumPy arrays or both torch tensors")
    if tuple(r.shape) != tuple(p.shape):
        raise ValueError(f"r and p must have the same shape [..., m], got r {tuple(r.shape)} and p {tuple(p.shape)}")
    if r.ndim == 0 or r.shape[-1] == 0:
        raise ValueError(f"r and p need a last (arm) dimension of size >= 1, got shape {tuple(r.shape)}")
    B.check_finite(r, "rewards r")
    B.check_finite(p, "probabilities p")
    if bool((p < 0).any()):
        raise ValueError("probabilities p must be non-negative")
    total = p.sum(-1)[..., None]
    if not bool((total > 0).all()):
        raise ValueError("probabilities p must have a positive sum in every group (cannot normalize an all-zero p)")
    p = (p / total).to(r.dtype) if B.is_torch(p) else (p / total).astype(r.dtype, copy=False)
    r_sorted, perm = B.sort(r)
    return r_sorted, B.take_last(p, perm), perm


def _cdf_grid(p_sorted):
    """Stable-rank CDF ``F_t`` and ``1 - F_t`` on the grid ``t = 0..m``, each ``[..., m + 1]``.

    ``1 - F_t`` is taken as a suffix sum, so it keeps its relative accuracy when ``F_t`` is close to 1.
    """
    zero = B.zeros_like(p_sorted[..., :1])
    cdf = B.concat([zero, B.cumsum(p_sorted, axis=-1)], axis=-1)
    survival = B.concat([B.flip_cumsum(p_sorted, axis=-1), zero], axis=-1)
    return cdf, survival


def _binomial_tails(cdf, survival, draws: int):
    """``P(Bin(draws, F_t) >= s)`` for every grid point ``t`` and ``s = 0..draws``, shape ``[..., m + 1, draws + 1]``.

    The pmf is ``C(draws, s) F^s (1-F)^(draws-s)`` in log space; ``log F`` is taken once per grid point, and
    ``log 0`` becomes a large negative number so that ``0 * log 0 = 0`` and ``exp`` of a positive power of 0 is 0.
    """
    s = B.arange_like(draws + 1, cdf)
    log_comb = math.lgamma(draws + 1) - B.lgamma(s + 1) - B.lgamma(draws - s + 1)
    log_pmf = log_comb + s * B.log_clamped(cdf)[..., None] + (draws - s) * B.log_clamped(survival)[..., None]
    return B.flip_cumsum(B.exp(log_pmf), axis=-1)


def _orderstat_tables(p_sorted, k: int):
    """Tables of App. D for ranks ``j = 1..k`` over the grid ``t = 0..m``.

    :return: ``(F, 1 - F, G0, G1)``: the CDF grid ``[..., m + 1]`` and the conditional tails ``[..., m + 1, k]``,
        ``G0_{t,j} = P(Bin(k-1, F_t) >= j)`` and ``G1_{t,j} = P(Bin(k-1, F_t) >= j - 1)`` (the pinned draw lies
        above / at-or-below threshold ``t``). The unconditional ``T_{t,j} = P(Bin(k, F_t) >= j)`` follows from
        Pascal's rule on the last draw: ``T = F G1 + (1 - F) G0``.
    """
    cdf, survival = _cdf_grid(p_sorted)
    g1 = _binomial_tails(cdf, survival, k - 1)  # s = 0..k-1 <-> j = 1..k
    g0 = B.concat([g1[..., 1:], B.zeros_like(g1[..., :1])], axis=-1)  # P(Bin(k-1) >= k) = 0
    return cdf, survival, g0, g1


def _known(r, p, k: int, alpha: np.ndarray | None, quantity: str):
    """``quantity`` in {value, inclusion, advantage}; collapsed by ``alpha``, or rankwise when ``alpha`` is None."""
    r_sorted, p_sorted, perm = _prepare(r, p)
    cdf, survival, g0, g1 = _orderstat_tables(p_sorted, k)
    rankwise = alpha is None
    if rankwise:
        cdf, survival = cdf[..., None], survival[..., None]
    else:
        alpha = B.constant(alpha, r_sorted, {})
        g0, g1 = g0 @ alpha, g1 @ alpha  # collapse first: Pascal's rule is linear in the tables
    t_k = cdf * g1 + survival * g0
    axis = -2 if rankwise else -1

    def diff(table):  # mass of sorted arm t: table[t] - table[t-1], t = 1..m
        return table[..., 1:, :] - table[..., :-1, :] if rankwise else table[..., 1:] - table[..., :-1]

    weights_v = diff(t_k)
    if quantity == "value":
        r_ = r_sorted[..., :, None] if rankwise else r_sorted
        return (r_ * weights_v).sum(axis)
    # qbar for the arm at sorted position rho: thresholds t < rho use G0, t >= rho use G1.
    head = g0[..., :-1, :] if rankwise else g0[..., :-1]
    tail = g1[..., 1:, :] if rankwise else g1[..., 1:]
    lower, diag, upper = diff(g0), tail - head, diff(g1)
    if quantity == "advantage":
        # abar_b = qbar_b - vbar: subtract vbar's weights from all three parts of the scan.
        lower, diag, upper = lower - weights_v, diag - weights_v, upper - weights_v
    out = scan(r_sorted, *scan_tables(lower, diag, upper), rankwise=rankwise)
    return B.unsort(B.tie_average(r_sorted, out), perm)


def _collapsed(objective: ObjectiveLike, k: int | None, rankwise: bool) -> tuple[int, np.ndarray | None]:
    obj = resolve_objective(objective, k)
    return obj.k, None if rankwise else obj.weights


def known_orderstats(r, p, k: int):
    """Exact ``vbar_j = E[R_(j:k)]``, ``j = 1..k`` low to high (eq. app-vbar), shape ``[..., k]``."""
    check_sizes(np.inf, int(k), advantage=False)
    return _known(r, p, int(k), None, "value")


def known_lstat_value(r, p, objective: ObjectiveLike, k: int | None = None):
    """Exact ``vbar^alpha = E[sum_j alpha_j R_(j:k)]`` for arms ``r`` drawn with probabilities ``p``, shape ``[...]``.

    :param r: arm rewards ``[..., m]``.
    :param p: arm probabilities ``[..., m]`` (non-negative; normalized here).
    :param objective: an :class:`Objective`, a spec (``"max@4"``) or a low-to-high alpha vector.
    :param k: order-statistic size if the objective does not fix it (any ``k >= 1``).
    """
    return _known(r, p, *_collapsed(objective, k, False), "value")


def known_lstat_inclusion(r, p, objective: ObjectiveLike, k: int | None = None, *, rankwise: bool = False):
    """Exact conditional values ``qbar_b^alpha = E[sum_j alpha_j R_(j:k) | A_1 = b]`` for every arm, ``[..., m]``
    (``qbar_{b,j}``, shape ``[..., m, k]``, when ``rankwise``)."""
    return _known(r, p, *_collapsed(objective, k, rankwise), "inclusion")


def known_lstat_advantage(r, p, objective: ObjectiveLike, k: int | None = None, *, rankwise: bool = False):
    """Exact arm advantages ``abar_b^alpha = qbar_b^alpha - vbar^alpha`` (eq. app-adv-known), shape ``[..., m]``.

    ``grad vbar^alpha = k sum_b p_b abar_b grad log p_b`` (eq. app-known-lr-gradient) and ``sum_b p_b abar_b = 0``.
    With ``rankwise``, ``abar_{b,j}`` for every rank, shape ``[..., m, k]``.
    """
    return _known(r, p, *_collapsed(objective, k, rankwise), "advantage")
