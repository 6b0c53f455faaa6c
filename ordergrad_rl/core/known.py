"""The known-distribution regime: exact order-statistic values and advantages for finite arms (paper App. D).

Arm ``b`` has reward ``r_b`` and probability ``p_b``; draw ``A_1..A_k`` i.i.d. from ``p``. With the arms in
stable sorted order, ``F_t`` the probability of the first ``t`` of them and ``S_t = 1 - F_t``, count ranks
from the top: the ``i``-th largest draw is at most ``r_(t)`` iff fewer than ``i`` draws land above it,

* ``P(top_i <= r_(t)) = P(Bin(k, S_t) <= i - 1)`` (Lemma D.1), so ``vbar`` sums ``r_(t)`` against the
  increments of that table over ``t``;
* conditioning on ``A_1 = b`` pins one draw: ``P(top_i <= r_(t) | A_1 = b) = H_{t, i-1-[rho(b) > t]}`` with
  ``H_{t,s} = P(Bin(k-1, S_t) <= s)`` (eq. app-bin-tail-cond), and Pascal's rule on the pinned draw gives the
  unconditional table ``S_t H_{t,i-2} + F_t H_{t,i-1}``;
* ``abar_b = qbar_b - vbar`` and ``sum_b p_b abar_b = 0`` (mixture identity, Prop. D.2).

Only the ranks an objective weights are tabulated: ``top5@10`` needs ``H`` for 5 counts, ``bot2@64`` is
computed as ``-top2@64`` of ``-r``. For arm ``b`` at sorted position ``rho``, ``qbar_b`` has the
prefix/diagonal/suffix form of the batch regime, so all arms take one scan (:mod:`ordergrad_rl.core.scan`).

**Fractional k.** For real ``k >= 1`` the binomial tables use generalized binomial coefficients
``C(k-1, c) = Gamma(k) / (Gamma(c+1) Gamma(k-c))``: ``P(Bin(k, S) <= i-1) := I_F(k-i+1, i)``, the regularized
incomplete beta — the i-th largest of ``k`` draws is ``Q(U)``, ``U ~ Beta(k-i+1, i)``, ``Q`` the arms' quantile
function (for integer ``k`` the usual order statistic). This needs the weights at a fixed number of ranks from
one end: ``max``, ``top<m>``, ``rank<r>`` (from the top; ``k >= m``) and ``min``, ``bot<m>`` (from the bottom).
Pascal's rule and the mixture identity hold for real ``k`` (they are incomplete-beta recurrences), and so does
``grad vbar = k sum_b p_b abar_b grad log p_b``.

``r`` and ``p`` have shape ``[..., m]``; leading dimensions are independent groups (e.g. the thousands of states
of a Q-critic rollout), computed together. Any array-API library, CPU or GPU; outputs follow ``r``. Half-precision
inputs are computed in float32; other dtypes in their own, and the binomial tables (logs of binomial coefficients
of size ~k) lose digits with k in float32: about 1e-7 k relative error (1e-3 at k = 10^4), so pass float64 for a
large k, as the Q-critic agent does. ``p`` may be unnormalized; it is divided by its sum. Live rank weights (torch
``requires_grad``, JAX tracers) give gradients with respect to ``alpha``.
"""

from __future__ import annotations

import math
from typing import Any

import array_api_compat as compat
import numpy as np
from scipy.special import gammaln

from ordergrad_rl.core import _xp, weights
from ordergrad_rl.core._xp import Array
from ordergrad_rl.core.batch import check_live_alpha, is_live
from ordergrad_rl.core.objectives import Objective, ObjectiveLike, check_k, resolve_objective, split_spec
from ordergrad_rl.core.scan import scan, scan_tables

_LOG_ZERO = -1e4  # log(0) stand-in: 0 * log 0 = 0, and exp(c log 0 + moderate) = 0 for any c > 0


def _prepare(r, p):
    """Validate, normalize ``p`` and sort arms: ``(xp, r_sorted, p_sorted, perm, result dtype or None)``, each
    ``[..., m]``. Half-precision ``r`` and ``p`` are computed in float32 (:func:`~._xp.widen`): in float16 the binomial
    tables overflow (NaN values from k = 100 on), in bfloat16 they lose every digit."""
    xp, r = _xp.real_floating(r, "r")
    xp_p, p = _xp.real_floating(p, "p")
    if xp_p is not xp:
        raise ValueError(
            f"r and p must come from the same array library (both NumPy arrays or both torch tensors, ...), "
            f"got {type(r).__name__} and {type(p).__name__}"
        )
    if tuple(r.shape) != tuple(p.shape):
        raise ValueError(f"r and p must have the same shape [..., m], got r {tuple(r.shape)} and p {tuple(p.shape)}")
    if r.ndim == 0 or r.shape[-1] == 0:
        raise ValueError(f"r and p need a last (arm) dimension of size >= 1, got shape {tuple(r.shape)}")
    _xp.check_finite(r, xp, "rewards r")
    _xp.check_finite(p, xp, "probabilities p")
    r, result_dtype = _xp.widen(r, xp, numpy_float64=False)
    p, _ = _xp.widen(p, xp, numpy_float64=False)
    # Divided by the largest entry first: the sum of huge unnormalized weights (p = [1e308, 1e308]) would overflow.
    largest = xp.max(p, axis=-1, keepdims=True)
    p = p / xp.where(largest > 0, largest, xp.ones_like(largest))
    total = xp.sum(p, axis=-1, keepdims=True)
    if not _xp.is_traced(p):
        if bool(xp.any(p < 0)):
            raise ValueError("probabilities p must be non-negative")
        if not bool(xp.all(total > 0)):
            raise ValueError("probabilities p must have a positive sum in every group (cannot normalize an all-zero p)")
    p /= total  # in place on the array made above (the tables below are cheap; their temporaries are not)
    r_sorted, perm = _xp.stable_sort(r, xp)
    return xp, r_sorted, _xp.take_sorted(xp.astype(p, r.dtype, copy=False), perm, xp), perm, result_dtype


def _log(x, xp):
    positive = x > 0
    return xp.where(positive, xp.log(xp.where(positive, x, xp.ones_like(x))), xp.full_like(x, _LOG_ZERO))


def _count_pmf(p_sorted, draws: float, counts: int, xp):
    """``C(draws, c) S_t^c F_t^(draws-c)`` for the grid ``t = 0..m`` and ``c = 0..counts-1``, shape
    ``[..., m+1, counts]``, with ``(F, S)`` (each ``[..., m+1]``); ``S`` is a suffix sum, accurate near ``F = 1``."""
    zero = xp.zeros_like(p_sorted[..., :1])
    cdf = xp.concat([zero, xp.cumulative_sum(p_sorted, axis=-1)], axis=-1)
    survival = xp.concat([xp.flip(xp.cumulative_sum(xp.flip(p_sorted, axis=-1), axis=-1), axis=-1), zero], axis=-1)
    c = np.arange(counts, dtype=np.float64)
    log_comb = gammaln(draws + 1) - gammaln(c + 1) - gammaln(draws - c + 1)
    log_f, log_s = _log(cdf, xp), _log(survival, xp)
    c_arr = xp.asarray(c, dtype=cdf.dtype, device=compat.device(cdf))
    comb = xp.asarray(log_comb, dtype=cdf.dtype, device=compat.device(cdf))
    log_s -= log_f
    exponent = log_s[..., None] * c_arr  # comb + c (log S - log F) + draws log F, one table updated in place
    exponent += comb
    exponent += draws * log_f[..., None]
    return _xp.exp_(exponent, xp), cdf, survival


def _weights(objective: ObjectiveLike, k: Any, rows: int = 1) -> tuple[str, Any, float]:
    """``(end, beta, k)``: rank weights counted from ``end`` ("top" or "bottom") outwards as a NumPy
    vector, or a live alpha array (low to high, every rank). ``rows``: (groups x thresholds) of the tables, for the
    memory check of a large ``k``."""
    if is_live(objective):
        return "top", objective, float(check_live_alpha(objective, k))
    family = _family_k(objective, k)
    if family is not None and (family[0].anchored() is not None or not family[1].is_integer()):
        # Weights at a fixed number of ranks from one end (max, top<m>, ...): only those ranks are tabulated,
        # whatever k (max@1e8 costs what max@8 does); a fractional k needs them.
        obj, real_k = family
        anchored = obj.anchored()
        if anchored is None:
            raise ValueError(
                f"a fractional k (k={real_k}) is defined for objectives whose weights sit at a fixed number of ranks "
                f"from one end (max, min, top<m>, bot<m>, rank<r>); got {str(obj)!r}"
            )
        end, beta = anchored
        if real_k < beta.size:
            raise ValueError(
                f"objective {str(obj)!r} weights {beta.size} ranks: it needs k >= {beta.size}, got {real_k}"
            )
        return end, beta, real_k
    if family is not None:  # up to k ranks tabulated for each of the rows, checked before alpha is built
        _check_memory(
            8 * family[1] * (1 + 4 * rows), f"the rank weights and tables of {str(family[0])!r} at k={family[1]:.0f}"
        )
    alpha = resolve_objective(objective, k).weights
    nonzero = np.flatnonzero(alpha)
    if nonzero.size == 0:
        return "top", np.zeros(1), float(alpha.size)
    from_top, from_bottom = alpha.size - nonzero[0], nonzero[-1] + 1
    if from_bottom < from_top:
        return "bottom", alpha[:from_bottom].copy(), float(alpha.size)  # not a view: torch.compile fails on those
    return "top", alpha[::-1][:from_top].copy(), float(alpha.size)


def _check_memory(needed: float, what: str) -> None:
    """Refuse, before allocating, what would need more than :data:`~ordergrad_rl.core.weights.RANKWISE_MAX_BYTES`."""
    limit = weights.RANKWISE_MAX_BYTES  # read at each call: users may change it
    if needed > limit:
        raise ValueError(
            f"{what} need {needed / 2**30:.1f} GiB, above the {limit / 2**30:.3g} GiB limit "
            "(ordergrad_rl.core.weights.RANKWISE_MAX_BYTES): lower k, or use an objective weighting a fixed number "
            "of ranks from one end (max, min, top<m>, bot<m>, rank<r>), whose cost does not grow with k"
        )


def _family_k(objective: ObjectiveLike, k: Any) -> tuple[Objective, float] | None:
    """``(unbound family objective, real k)`` when ``objective`` is an unbound family (a spec or an ``Objective``)
    and ``k`` is given (the argument or the spec's ``@K``); ``None`` otherwise (bound objectives, numeric alpha)."""
    if isinstance(objective, str):
        body, k_text = split_spec(objective)
        if k_text is not None:
            try:
                spec_k = float(k_text)
            except ValueError:
                return None  # let the parser report the malformed spec
            if k is not None and float(k) != spec_k:
                raise ValueError(f"objective {objective!r} fixes k={k_text} but k={k} was also passed")
            k, objective = spec_k, body
    if k is None or isinstance(k, bool) or not isinstance(k, (int, float, np.integer, np.floating)):
        return None
    k = float(k)
    if not math.isfinite(k) or k < 1:
        raise ValueError(f"k must be a finite number >= 1 in the known regime, got {k!r}")
    try:
        obj = Objective.parse(objective) if isinstance(objective, str) else objective
    except ValueError:
        if k.is_integer():
            return None  # let the parser report it with k
        raise
    if not isinstance(obj, Objective) or obj.is_bound or obj.name in ("mean", "alpha"):
        if k.is_integer():
            return None
        raise ValueError(f"a fractional k (k={k}) needs an objective family such as 'top2' or 'max', got {objective!r}")
    return obj, k


def _known(r, p, objective: ObjectiveLike, k: Any, quantity: str, rankwise: bool = False):
    """``quantity`` in {value, inclusion, advantage}; collapsed by the objective's weights, or rankwise."""
    if rankwise:
        obj = resolve_objective(objective, k)
        assert obj.k is not None  # resolve_objective binds k
        end, beta, real_k = "top", None, float(obj.k)
    else:
        shape = tuple(getattr(r, "shape", np.shape(r)))
        rows = math.prod(shape[:-1]) * (shape[-1] + 1) if shape else 1
        end, beta, real_k = _weights(objective, k, rows)
    if end == "bottom":  # sum_j alpha_j R_(j) = -sum_i alpha_i (-R)_(top i): mirror, compute, negate
        return -_known_top(-_xp.real_floating(r, "r")[1], p, beta, real_k, quantity)
    return _known_top(r, p, beta, real_k, quantity)


def _known_top(r, p, beta, k: float, quantity: str):
    """The regime with ``beta[i]`` weighting the (i+1)-th largest draw; ``beta is None``: every rank (rankwise,
    output ranks low to high)."""
    xp, r_sorted, p_sorted, perm, dtype = _prepare(r, p)
    scale = _xp.scale_rows(r_sorted, xp)  # rewards near the float limits: rescaled by a power of two (exact)
    if scale is not None:
        r_sorted = r_sorted * scale
    counts = int(k) if beta is None else int(beta.shape[0])
    rows = math.prod(r_sorted.shape[:-1]) * (r_sorted.shape[-1] + 1)
    # The count tables (and about three temporaries of their size) hold one float per (group, threshold, count).
    _check_memory(4 * 8 * rows * counts, f"the binomial tables of {counts} ranks for {rows} thresholds")
    pmf, cdf, survival = _count_pmf(p_sorted, k - 1.0, counts, xp)
    rankwise = beta is None
    if rankwise:
        g1 = xp.cumulative_sum(pmf, axis=-1)  # H_{i-1} for i = 1..counts
        g2 = xp.concat([xp.zeros_like(g1[..., :1]), g1[..., :-1]], axis=-1)  # H_{i-2}
        cdf, survival = cdf[..., None], survival[..., None]
    else:
        if compat.is_array_api_obj(beta) and not isinstance(beta, np.ndarray):  # live alpha, low to high
            # suffix[c] = sum_{i >= c} beta[i] with beta = flip(alpha): the prefix sums of alpha, reversed
            suffix = xp.flip(xp.cumulative_sum(xp.astype(beta, r_sorted.dtype), axis=0), axis=0)
        else:
            suffix = _xp.constant(np.cumsum(np.asarray(beta)[::-1])[::-1].copy(), r_sorted, xp, {})
        g1 = pmf @ suffix  # sum_i beta_i H_{i-1} = sum_c pmf_c sum_{i > c} beta_i
        g2 = pmf[..., :-1] @ suffix[1:] if counts > 1 else xp.zeros_like(g1)  # sum_i beta_i H_{i-2}
    table = survival * g2  # P(top_i <= r_(t)) = S H_{i-2} + F H_{i-1}, collapsed or per rank
    table += cdf * g1

    def diff(t):  # mass of sorted arm t: t[t] - t[t-1], t = 1..m
        return t[..., 1:, :] - t[..., :-1, :] if rankwise else t[..., 1:] - t[..., :-1]

    weights_v = diff(table)
    if quantity == "value":
        r_ = r_sorted[..., :, None] if rankwise else r_sorted
        out = xp.sum(r_ * weights_v, axis=-2 if rankwise else -1)
        out = xp.flip(out, axis=-1) if rankwise else out
        if scale is not None:
            out = _xp.unscale(out, scale if rankwise else scale[..., 0], xp, "values")
        return _xp.narrow(out, dtype, xp, "values")
    # qbar for the arm at sorted position rho: thresholds t < rho use g2 (pinned draw above), t >= rho use g1.
    head = g2[..., :-1, :] if rankwise else g2[..., :-1]
    tail = g1[..., 1:, :] if rankwise else g1[..., 1:]
    lower, diag, upper = diff(g2), tail - head, diff(g1)
    if quantity == "advantage":
        # abar_b = qbar_b - vbar: subtract vbar's weights from all three parts of the scan.
        lower -= weights_v
        diag -= weights_v
        upper -= weights_v
    out = scan(r_sorted, *scan_tables(lower, diag, upper), xp, rankwise=rankwise)
    out = _xp.unsort(_xp.tie_equalize(r_sorted, out, xp), perm, xp)
    out = xp.flip(out, axis=-1) if rankwise else out
    what = f"{quantity} values"
    if scale is not None:
        out = _xp.unscale(out, scale[..., None] if rankwise else scale, xp, what)
    return _xp.narrow(out, dtype, xp, what)


def known_orderstats(r: Array, p: Array, k: int) -> Array:
    """Exact ``vbar_j = E[R_(j:k)]``, ``j = 1..k`` low to high (eq. app-vbar), shape ``[..., k]``; integer ``k``."""
    k = check_k(k)
    return _known_top(r, p, None, float(k), "value")


def known_lstat_value(r: Array, p: Array, objective: ObjectiveLike, k: float | None = None) -> Array:
    """Exact ``vbar^alpha = E[sum_j alpha_j R_(j:k)]`` for arms ``r`` drawn with probabilities ``p``, shape ``[...]``.

    :param r: arm rewards ``[..., m]``.
    :param p: arm probabilities ``[..., m]`` (non-negative; normalized here).
    :param objective: an :class:`Objective`, a spec (``"max@4"``) or a low-to-high alpha vector (live weights give
        gradients with respect to alpha).
    :param k: order-statistic size if the objective does not fix it: an integer ``>= 1``, or a real ``k >= 1`` for
        ``max``/``min``/``top<m>``/``bot<m>``/``rank<r>`` (module docstring: the Beta representation).
    """
    return _known(r, p, objective, k, "value")


def known_lstat_inclusion(
    r: Array, p: Array, objective: ObjectiveLike, k: float | None = None, *, rankwise: bool = False
) -> Array:
    """Exact conditional values ``qbar_b^alpha = E[sum_j alpha_j R_(j:k) | A_1 = b]`` for every arm, ``[..., m]``
    (``qbar_{b,j}``, shape ``[..., m, k]``, when ``rankwise``). ``k`` as in :func:`known_lstat_value`."""
    return _known(r, p, objective, k, "inclusion", rankwise)


def known_lstat_advantage(
    r: Array, p: Array, objective: ObjectiveLike, k: float | None = None, *, rankwise: bool = False
) -> Array:
    """Exact arm advantages ``abar_b^alpha = qbar_b^alpha - vbar^alpha`` (eq. app-adv-known), shape ``[..., m]``.

    ``grad vbar^alpha = k sum_b p_b abar_b grad log p_b`` (eq. app-known-lr-gradient) and ``sum_b p_b abar_b = 0``.
    With ``rankwise``, ``abar_{b,j}`` for every rank, shape ``[..., m, k]``. ``k`` as in :func:`known_lstat_value`.
    """
    return _known(r, p, objective, k, "advantage", rankwise)
