"""Subset-counting weight tables of the batch regime (paper Sec. 3.3, App. F), float64 NumPy, built once and cached.

Every table of the paper is a scaled hypergeometric probability. Write ``h(x; M, n, d)`` for the
probability of ``x`` successes when ``d`` items are drawn without replacement from ``M`` items of which
``n`` are successes. With sorted ranks ``m`` (1-based) and order-statistic ranks ``j``:

====================  =================================================  ============================
table                 paper                                              hypergeometric form
====================  =================================================  ============================
``W[m, j]``           C(m-1,j-1) C(N-m,k-j) / C(N,k)                    (k/N) h(j-1; N-1, m-1, k-1)
``B[m, j]``           C(m-1,j-1) C(N-m,k-j) / C(N-1,k-1)                h(j-1; N-1, m-1, k-1)
``A[m, j]``, m < N    C(m-1,j-1) C(N-m-1,k-j-1) / C(N-1,k-1)            ((k-1)/(N-1)) h(j-1; N-2, m-1, k-2)
``C[m, j]``, m > 1    C(m-2,j-2) C(N-m,k-j) / C(N-1,k-1)                ((k-1)/(N-1)) h(j-2; N-2, m-2, k-2)
``W-[l, j]``, l < N   C(l-1,j-1) C(N-1-l,k-j) / C(N-1,k)                (k/(N-1)) h(j-1; N-2, l-1, k-1)
====================  =================================================  ============================

Collapsing a table with ``alpha`` (App. F.1) is a hypergeometric expectation ``E[alpha[X_n]]`` for every
success count ``n`` (:func:`hypergeom_expectation`). Three exact routes compute it:

* **poly** — polynomial weights (``gmd``, L-moments): ``alpha[x] = sum_i c_i (x)_i`` in falling factorials, and
  the factorial moments of the hypergeometric are closed-form, ``E[(X)_i] = (d)_i (n)_i / (M)_i``: O(M deg).
* **runs** — by Abel summation ``E[alpha[X]] = alpha[d] + sum_x (alpha[x] - alpha[x+1]) P(X <= x)`` only the
  ``x`` where ``alpha`` changes contribute, and each CDF ``P(X_n <= x)`` for *all* ``n`` is one O(M) scan
  (adding one success lowers it by ``h(x; M, n, d) (d - x) / (M - n)``): O(M #changes) for cvar, trimmed means,
  top-M, quantiles, range means.
* **dense** — any weights: each row ``h(.; M, n, d)`` is summed over the window outside which a Bernstein /
  Serfling tail bound leaves less than ``e^-43`` of its mass (O(sqrt(M)) wide), and only for the rows whose
  window meets the support of ``alpha``: O(M sqrt(M)) at worst instead of the O(M k) full table.

Both the dense rows (products of two tilted 1-D factors) and the CDF scans accumulate exact log-ratios of
binomial coefficients outwards from a mode and are divided by their exact total (1), so no large log-factorial
is ever differenced against another (``scripts/check_accuracy.py`` compares the
advantages at N = 10^5, k = 5 * 10^4 with a 50-digit reference).

Advantages use one table only (:func:`advantage_tables`). Write the sorted rewards through their gaps
``D_l = R_(l+1) - R_(l)``. Raising every reward above gap ``l`` by ``eps`` raises ``q_t - v^(-t)`` by ``eps``
times ``E[A(X + [t <= l])] - E[A(X')]`` where ``A(c) = sum_{j>c} alpha_j``, ``X`` (``X'``) counts the other
``k-1`` (``k``) members of the subset below the gap; coupling the two subsets and the size-biasing identity
``E[f(Y)(n - Y)] = n (M-d)/M E[f(Y')]`` reduce this to ``l K_l/(N-1)`` for ``l < t`` and ``-(N-l) K_l/(N-1)``
for ``l >= t`` with ``K_l = E[alpha[X]]``, ``X ~ Hypergeom(N-2, l-1, k-1)`` (the leave-one-out kernel):
``a_t = [sum_{l<t} l K_l D_l - sum_{l>=t} (N-l) K_l D_l] / (N-1)``. Only non-negative gaps are summed, the result
is exactly invariant to a shift of the rewards, and tied rewards (zero gaps) get bit-identical advantages.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

# Elements per temporary block of the dense route (~32 MB of float64).
_CHUNK_ELEMENTS = 1 << 22
# log(1 / tail mass) cut from each side of a pmf row: e^-43 = 2e-19, far below float64 resolution of the row sum.
_TAIL_LOG = 43.0
# The rankwise API (N x k tables) refuses to build more than this many bytes of tables; see check_table_memory.
RANKWISE_MAX_BYTES = 1 << 30


def clear_caches() -> None:
    """Forget every cached table (benchmarks time first calls with this)."""
    rankwise_table.cache_clear()


def log_binomial_profile(top: int, values: np.ndarray, centre: int) -> np.ndarray:
    """``log C(top, v) - log C(top, centre)`` for the contiguous ascending ``values`` (``-inf`` outside ``[0, top]``).

    Accumulated outwards from ``centre`` (which must lie in ``values`` and in ``[0, top]``) over the exact ratios
    ``C(top, v+1) / C(top, v) = (top - v) / (v + 1)``: no large log-factorials are differenced, so the profile is
    accurate to a few ulps of its own (moderate) size near the centre.
    """
    out = np.full(values.shape, -np.inf)
    inside = (values >= 0) & (values <= top)
    v = values[inside].astype(np.float64)
    steps = np.log((top - v[:-1]) / (v[:-1] + 1.0))  # log C(top, v+1) - log C(top, v)
    i = int(centre - v[0]) if v.size else 0
    profile = np.empty(v.size)
    profile[i] = 0.0
    profile[i + 1 :] = np.cumsum(steps[i:])
    profile[:i] = -np.cumsum(steps[:i][::-1])[::-1]
    out[inside] = profile
    return out


# ---------------------------------------------------------------------------------------------- dense rows
def row_windows(M: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``n = 0..M``: the inclusive range ``[lo_n, hi_n]`` of ``x`` outside which ``h(.; M, n, d)`` has less
    than ``2 e^-43`` of its mass.

    Two bounds on ``P(|X - nd/M| >= t)``, each valid for the hypergeometric and symmetric in ``(n, d)``: Bernstein's
    with the binomial variance (the hypergeometric is a convex contraction of the binomial, Hoeffding 1963) and
    Serfling's (1974) finite-population bound; the smaller ``t`` is used.
    """
    n = np.arange(M + 1, dtype=np.float64)
    support_lo = np.maximum(0, d - (M - n)).astype(np.int64)
    support_hi = np.minimum(n, d).astype(np.int64)
    if M == 0 or d == 0:
        return support_lo, support_hi
    big_l = _TAIL_LOG

    def bernstein(v: np.ndarray) -> np.ndarray:
        return big_l / 3 + np.sqrt((big_l / 3) ** 2 + 2 * big_l * v)

    def serfling(draws: np.ndarray | float) -> np.ndarray:
        return np.sqrt(big_l * draws * np.maximum(1.0 - (draws - 1.0) / M, 0.0) / 2.0)

    p, q = n / M, d / M
    t = np.minimum.reduce(
        [bernstein(d * p * (1 - p)), bernstein(n * q * (1 - q)), serfling(float(d)) + 0 * n, serfling(n)]
    )
    mean = n * q
    lo = np.maximum(np.floor(mean - t - 1).astype(np.int64), support_lo)
    hi = np.minimum(np.ceil(mean + t + 1).astype(np.int64), support_hi)
    return lo, hi


# Largest drop (in nats) of the tilted row term across one block: every row total stays above e^-250, so factors
# below _FACTOR_FLOOR (e^-300) are dropped (each contributes < 1e-21 of its row) and the products of the kept ones
# stay normal numbers (subnormal arithmetic is ~100x slower on x86).
_BLOCK_NATS = 250.0
_FACTOR_FLOOR = math.exp(-300.0)
# Weights below this fraction of max|alpha| are dropped by the dense route (their effect is below 1e-30).
_WEIGHT_FLOOR = 1e-30


def _tilted_blocks(M: int, d: int, rows: range) -> Iterator[tuple[range, range, np.ndarray, np.ndarray]]:
    """For ``0 < d < M``, yield ``(rows, cols, c, e)`` with ``h(x; M, n, d) = c[x - cols.start] e[n - x - u0] / Z_n``
    on each block, ``u0 = rows.start - (cols.stop - 1)`` and ``Z_n = sum_x c[.] e[.]`` over the block's columns.

    As ``h = C(n, x) C(M-n, d-x) / C(M, d) = C(d, x) C(M-d, n-x) / C(M, n)``, ``log h = row(n) + col(x) +
    diff(n - x)`` with ``col = log C(d, x)``, ``diff = log C(M-d, n-x)`` and ``row = -log C(M, n)``. On a block
    of rows the factors are tilted by ``theta x``, ``theta (n - x)``, ``-theta n`` so that the column and
    difference terms are flat at the block's centre mode (their maxima are ~1, and each row's leading products stay
    above e^-250); both are :func:`log_binomial_profile` s relative to that mode. The row term then cancels in the
    division by ``Z_n`` (the exact row total is 1) and only the 1-D vectors ``c`` and ``e`` are exponentiated.
    Blocks are as long as the row term's curvature ``1/n + 1/(M-n)`` allows within :data:`_BLOCK_NATS`; the
    columns cover every row's :func:`row_windows`.
    """
    lo, hi = row_windows(M, d)
    start = rows.start
    while start < rows.stop:
        curvature = 1.0 / (start + 1) + 1.0 / (M - start + 1)
        size = max(1, int(2.0 * math.sqrt(2.0 * _BLOCK_NATS / curvature)))
        stop = min(rows.stop, start + size)
        end_curvature = 1.0 / stop + 1.0 / max(M - stop + 2, 1)
        if end_curvature > curvature:  # the curvature grows towards n = M: size the block for its end
            stop = min(stop, start + max(1, int(2.0 * math.sqrt(2.0 * _BLOCK_NATS / end_curvature))))
        width = int(hi[start:stop].max() - lo[start:stop].min()) + 1
        stop = min(stop, start + max(1, _CHUNK_ELEMENTS // width))
        block = range(start, stop)
        cols = range(int(lo[start:stop].min()), int(hi[start:stop].max()) + 1)
        centre = (start + stop - 1) // 2
        x_c = min(max((centre + 1) * (d + 1) // (M + 2), max(0, d - M + centre)), min(centre, d))
        u_c = centre - x_c
        x = np.arange(cols.start, cols.stop)
        u = np.arange(start - (cols.stop - 1), stop - cols.start)
        # theta flattens the term with the longer range (the other one is flat too when the mode is interior).
        if M - d >= d:
            u_s = min(u_c, M - d - 1)
            theta = -math.log((M - d - u_s) / (u_s + 1))
        else:
            x_s = min(x_c, d - 1)
            theta = -math.log((d - x_s) / (x_s + 1))
        c = np.exp(log_binomial_profile(d, x, x_c) + theta * (x - x_c))
        e = np.exp(log_binomial_profile(M - d, u, u_c) + theta * (u - u_c))
        c[c < _FACTOR_FLOOR] = 0.0
        e[e < _FACTOR_FLOOR] = 0.0
        yield block, cols, c, e
        start = stop


def _expectation_dense(a: np.ndarray, M: int, d: int) -> np.ndarray:
    """``E[a[X_n]]`` by windowed rows as two correlations per block; rows whose window misses the support of ``a``
    are 0."""
    out = np.zeros(M + 1)
    a = np.where(np.abs(a) < _WEIGHT_FLOOR * np.abs(a).max(initial=0.0), 0.0, a)
    support = np.flatnonzero(a)
    if support.size == 0:
        return out
    lo, hi = row_windows(M, d)
    needed = np.flatnonzero((hi >= support[0]) & (lo <= support[-1]))
    if needed.size == 0:
        return out
    for rows, cols, c, e in _tilted_blocks(M, d, range(int(needed[0]), int(needed[-1]) + 1)):
        weighted = np.convolve(c * a[cols.start : cols.stop], e, mode="valid")
        out[rows.start : rows.stop] = weighted / np.convolve(c, e, mode="valid")
    return out


def _dense_cost(a: np.ndarray, M: int, d: int) -> float:
    """Entries the dense route evaluates (its rectangles are about twice the summed windows)."""
    support = np.flatnonzero(a)
    if support.size == 0:
        return 0.0
    lo, hi = row_windows(M, d)
    needed = (hi >= support[0]) & (lo <= support[-1])
    return 2.0 * float((hi - lo + 1)[needed].sum())


# ---------------------------------------------------------------------------------------------- runs (CDF scans)
def hypergeom_cdf_all_n(x: int, M: int, d: int) -> np.ndarray:
    """``P(X_n <= x)`` for ``X_n ~ Hypergeom(M, n, d)`` and every ``n = 0..M``, shape ``(M + 1,)``, in O(M).

    ``P(X_{n+1} <= x) = P(X_n <= x) - h(x; M, n, d) (d - x) / (M - n)``, and these steps sum to exactly 1 (from
    ``P(X_x <= x) = 1`` to ``P(X_{M-d+x+1} <= x) = 0``). ``h(x; M, n, d)`` along ``n`` is accumulated in log space
    from its mode outwards with the exact ratio ``h(n+1)/h(n) = (n+1)(M-n-d+x) / ((n+1-x)(M-n))`` (no large
    log-factorials, so ~1e-15 relative accuracy near the mode), and the steps are divided by their sum. The partial
    sums are taken from whichever end is closer (``1 - head`` or ``tail``), so both tails keep relative accuracy.
    """
    if x < 0:
        return np.zeros(M + 1)
    if x >= d:
        return np.ones(M + 1)
    n = np.arange(x, M - d + x + 1, dtype=np.float64)  # only these n have h(x) > 0
    step_n = n[:-1]
    log_ratio = np.log((step_n + 1) * (M - step_n - d + x) / ((step_n + 1 - x) * (M - step_n)))
    mode = int(np.searchsorted(-log_ratio, 0.0))  # log h increases while the ratio exceeds 1
    log_h = np.empty(n.size)
    log_h[mode] = 0.0
    log_h[mode + 1 :] = np.cumsum(log_ratio[mode:])
    log_h[:mode] = -np.cumsum(log_ratio[:mode][::-1])[::-1]
    step = np.exp(log_h) * ((d - x) / (M - n))
    step /= step.sum()
    out = np.empty(M + 1)
    out[: x + 1] = 1.0
    out[M - d + x + 1 :] = 0.0
    head = np.cumsum(step)[:-1]  # sum of steps before n + 1, for n + 1 in [x + 1, M - d + x]
    tail = np.cumsum(step[::-1])[::-1][1:]
    out[x + 1 : M - d + x + 1] = np.where(head <= 0.5, 1.0 - head, tail)
    return out


def _expectation_runs(a: np.ndarray, M: int, d: int, changes: np.ndarray) -> np.ndarray:
    out = np.full(M + 1, a[d])
    for x in changes:
        out += (a[x] - a[x + 1]) * hypergeom_cdf_all_n(int(x), M, d)
    return out


# ---------------------------------------------------------------------------------------------- polynomial
def _expectation_poly(coefficients: np.ndarray, M: int, d: int) -> np.ndarray:
    """``E[sum_i c_i (X_n)_i] = sum_i c_i (d)_i (n)_i / (M)_i`` for every ``n`` (factorial moments)."""
    n = np.arange(M + 1, dtype=np.float64)
    out = np.full(M + 1, float(coefficients[0]))
    ratio = np.ones(M + 1)  # (d)_i (n)_i / (M)_i, one factor at a time
    for i, c in enumerate(coefficients[1:], start=1):
        if i > d:
            break
        ratio = ratio * (d - i + 1) * (n - i + 1) / (M - i + 1)
        out += c * ratio
    return out


def shift_polynomial(coefficients: np.ndarray, shift: int) -> np.ndarray:
    """Coefficients of ``x -> p(x + shift)`` in falling factorials: ``(x+s)_i = sum_l C(i,l) (s)_(i-l) (x)_l``."""
    out = np.zeros(len(coefficients))
    for i, c in enumerate(coefficients):
        for l in range(i + 1):
            out[l] += c * math.comb(i, l) * math.perm(shift, i - l)
    return out


# A polynomial is evaluated in falling factorials when the sum of |terms| loses at most this factor (x eps) of
# accuracy; above it (L-moments of order >= 8) the dense route is used instead.
_POLY_MAX_CONDITION = 1e4


def _poly_condition(coefficients: np.ndarray, d: int) -> float:
    scale = [abs(c) * math.perm(d, i) for i, c in enumerate(coefficients)]
    return sum(scale) / max(abs(sum(c * math.perm(d, i) for i, c in enumerate(coefficients))), max(scale) * 1e-300)


# ---------------------------------------------------------------------------------------------- dispatch
# One CDF scan (runs route, per change of alpha) costs as much as ~20 M entries of the dense route: measured
# 17x at N = 10^5, k = N/2 and 19x at N = 10^4, k = 100 (67x at N = 10^5, k = 10^3, where dense windows are short).
_RUNS_PER_DENSE_ENTRY = 20.0


def choose_method(a: np.ndarray, M: int, d: int, method: str = "auto", poly: np.ndarray | None = None) -> str:
    """The route :func:`hypergeom_expectation` takes: ``"exact"`` (d = 0 or d = M), ``"poly"``, ``"runs"`` or
    ``"dense"``. ``"auto"`` takes ``poly`` when given and well conditioned, else the cheaper of runs and dense."""
    if method not in ("auto", "poly", "runs", "dense"):
        raise ValueError(f"method must be 'auto', 'poly', 'runs' or 'dense', got {method!r}")
    if d <= 0 or d == M:
        return "exact"
    if method == "poly" and poly is None:
        raise ValueError("method='poly' needs the polynomial coefficients of the weights")
    if poly is not None and method in ("auto", "poly"):
        if method == "poly" or _poly_condition(poly, d) <= _POLY_MAX_CONDITION:
            return "poly"
    if method != "auto":
        return method
    changes = int(np.count_nonzero(a[:d] != a[1 : d + 1]))
    return "runs" if _RUNS_PER_DENSE_ENTRY * (M + 1) * changes <= _dense_cost(a[: d + 1], M, d) else "dense"


def hypergeom_expectation(
    a: np.ndarray, M: int, d: int, method: str = "auto", poly: np.ndarray | None = None
) -> np.ndarray:
    """``E[a[X_n]]`` for ``X_n ~ Hypergeom(M total, n successes, d draws)`` and every ``n = 0..M``.

    :param a: weights indexed by the success count ``x``; only ``a[0..d]`` is used (shape ``(>= d+1,)``).
    :param M: population size (``>= d``).
    :param d: number of draws; ``d < 0`` gives zeros (an empty order statistic, e.g. k = 1 include-one tables).
    :param method: ``"auto"``, ``"poly"`` (needs ``poly``), ``"runs"`` or ``"dense"``; all are exact (see
        :func:`choose_method`).
    :param poly: falling-factorial coefficients of ``a`` (``a[x] = sum_i poly[i] (x)_i``), if it is a polynomial.
    :return: shape ``(M + 1,)``, float64.
    """
    a = np.asarray(a, dtype=np.float64)[: max(d + 1, 0)]
    route = choose_method(a, M, d, method, poly)
    if d < 0:
        return np.zeros(M + 1)
    if route == "exact":  # X_n is deterministic: 0, or n when every item is drawn
        return np.full(M + 1, a[0]) if d == 0 else a.copy()
    if route == "poly":
        assert poly is not None  # choose_method takes this route only with poly
        return _expectation_poly(poly, M, d)
    if route == "runs":
        return _expectation_runs(a, M, d, np.flatnonzero(a[:-1] != a[1:]))
    return _expectation_dense(a, M, d)


def check_sizes(n: int, k: int, *, quantity: str = "value") -> None:
    """Raise a ``ValueError`` naming the problem unless ``1 <= k <= N`` (values, include-one values) or
    ``1 <= k < N`` (leave-one-out values and advantages)."""
    if k < 1:
        raise ValueError(f"order-statistic size k must be >= 1, got k={k}")
    if quantity in ("advantage", "leave_one_out") and k >= n:
        raise ValueError(
            f"leave-one-out {'advantages' if quantity == 'advantage' else 'values'} need k < N (after removing one "
            f"sample, k of the other N-1 must remain); got k={k}, N={n}"
        )
    if k > n:
        raise ValueError(f"batch values need k <= N (a size-k subset of N samples); got k={k}, N={n}")


def check_table_memory(n: int, k: int, tables: float, what: str) -> None:
    """Refuse a rankwise computation whose peak memory, ``tables`` float64 ``N x k`` tables (its temporaries
    included), exceeds :data:`RANKWISE_MAX_BYTES`."""
    needed = 8 * tables * n * k
    if needed > RANKWISE_MAX_BYTES:
        raise ValueError(
            f"{what} needs {tables:g} N x k float64 tables (N={n}, k={k}): {needed / 2**30:.1f} GiB, above the "
            f"{RANKWISE_MAX_BYTES / 2**30:.3g} GiB limit (ordergrad_rl.core.weights.RANKWISE_MAX_BYTES). Use the "
            f"collapsed quantity (rankwise=False), which needs O(N) memory."
        )


Kernel = Callable[[int, int, int], np.ndarray]


def collapsed_kernel(alpha: np.ndarray, method: str = "auto", poly: np.ndarray | None = None) -> Kernel:
    """``kernel(M, d, shift)[n] = E[alpha[X_n + shift]]``, ``X_n ~ Hypergeom(M, n, d)``: tables collapsed by alpha."""
    alpha = np.asarray(alpha, dtype=np.float64)

    def kernel(M: int, d: int, shift: int) -> np.ndarray:
        shifted = None if poly is None else shift_polynomial(poly, shift)
        return hypergeom_expectation(alpha[shift:], M, d, method, shifted)

    return kernel


@lru_cache(maxsize=8)
def rankwise_table(M: int, d: int, shift: int, k: int) -> np.ndarray:
    """``T[n, j-1] = h(j - 1 - shift; M, n, d)`` for ``n = 0..M`` and every rank ``j = 1..k``: shape ``(M+1, k)``,
    read-only, built from the windowed rows (zero outside them)."""
    table = np.zeros((M + 1, k))
    if d in (0, M):  # X_n is deterministic: 0, or n when every item is drawn
        n = np.arange(M + 1)
        x = np.zeros_like(n) if d == 0 else n
        keep = x + shift < k
        table[n[keep], x[keep] + shift] = 1.0
    elif d > 0:
        for rows, cols, c, e in _tilted_blocks(M, d, range(M + 1)):
            block = sliding_window_view(e, len(cols))[:, ::-1] * c  # block[r, i] = c[i] e[r + W - 1 - i]
            block /= block.sum(axis=1, keepdims=True)
            first, last = max(cols.start + shift, 0), min(cols.stop + shift, k)  # rank columns j - 1
            if last > first:
                table[rows.start : rows.stop, first:last] = block[
                    :, first - shift - cols.start : last - shift - cols.start
                ]
    table.flags.writeable = False
    return table


def rankwise_kernel(k: int) -> Kernel:
    """``kernel(M, d, shift)[n, j-1] = h(j - 1 - shift; M, n, d)`` for every rank j: the full ``(M+1, k)`` tables."""
    return lambda M, d, shift: rankwise_table(M, d, shift, k)


def value_table(n: int, k: int, kernel: Kernel) -> np.ndarray:
    """``W`` (paper eq. method-W-batch) in sorted-rank order: ``v = sum_m R_(m) W[m]``.

    Shape ``(N,)`` collapsed (``w = W alpha``) or ``(N, k)`` rankwise.
    """
    check_sizes(n, k)
    return (k / n) * kernel(n - 1, k - 1, 0)


_QUANTITIES = ("inclusion", "leave_one_out")


def psum_tables(n: int, k: int, quantity: str, kernel: Kernel) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(L, D, U)`` in sorted-rank order with ``out_t = sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m`` (App. F.4).

    :param quantity: ``"inclusion"`` (``L, D, U = A, B, C``: the include-one value ``q_t``, defined for
        ``k <= N``) or ``"leave_one_out"`` (``W-_m``, none, ``W-_{m-1}``: ``v^(-t)``, needs ``k < N``).
    :return: arrays of shape ``(N,)`` (collapsed kernel) or ``(N, k)`` (rankwise kernel); ``D`` is ``None``
        for the leave-one-out value, which never contains rank t itself.
    """
    if quantity not in _QUANTITIES:
        raise ValueError(f"quantity must be one of {_QUANTITIES}, got {quantity!r}")
    check_sizes(n, k, quantity=quantity)
    if quantity == "inclusion":
        diag = kernel(n - 1, k - 1, 0)  # B[t]
        if n == 1:
            return np.zeros_like(diag), diag, np.zeros_like(diag)
        scale = (k - 1) / (n - 1)
        below = scale * kernel(n - 2, k - 2, 0)  # A[m], m = 1..N-1
        above = scale * kernel(n - 2, k - 2, 1)  # C[m] for m = 2..N: the forced rank is one of the lower ones
        zero = np.zeros_like(below[:1])
        return np.concatenate((below, zero)), diag, np.concatenate((zero, above))
    loo = (k / (n - 1)) * kernel(n - 2, k - 1, 0)  # W-[l], l = 1..N-1
    pad = np.zeros_like(loo[:1])
    return np.concatenate((loo, pad)), None, np.concatenate((pad, loo))


def advantage_tables(n: int, k: int, kernel: Kernel) -> tuple[np.ndarray, np.ndarray]:
    """``(E, U)`` over the ``N - 1`` gaps with ``a = cumsum0(D E) - sum(D U)`` (see the module docstring).

    ``K_g = kernel(N-2, k-1, 0)[g]`` for gap ``g = 0..N-2`` (between sorted positions ``g`` and ``g+1``),
    ``E_g = N K_g / (N-1)`` and ``U_g = (N-1-g) K_g / (N-1)``; shapes ``(N-1,)`` or ``(N-1, k)`` (rankwise).
    """
    check_sizes(n, k, quantity="advantage")
    gap_kernel = kernel(n - 2, k - 1, 0)
    above = (n - 1 - np.arange(n - 1, dtype=np.float64)) / (n - 1)
    if gap_kernel.ndim == 2:
        above = above[:, None]
    return (n / (n - 1)) * gap_kernel, above * gap_kernel
