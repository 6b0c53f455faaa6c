"""Subset-counting weight tables of the batch regime (paper Sec. 3.3, App. F), in log space, float64.

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

Collapsing a table with ``alpha`` (App. F.1) is therefore a hypergeometric expectation
``E[alpha[X]]`` evaluated for every success count ``n`` (:func:`hypergeom_expectation`). Two exact
routes compute it:

* **dense**: sum ``alpha[x] h(x; M, n, d)`` over the support of ``alpha``, with ``log h`` from a
  log-factorial table, in row chunks — cost ``O(M * |support|)``;
* **runs**: by Abel summation ``E[alpha[X]] = alpha[d] + sum_x (alpha[x] - alpha[x+1]) P(X <= x)``,
  only the ``x`` where ``alpha`` changes contribute, and each CDF ``P(X_n <= x)`` for *all* ``n`` is
  one O(M) scan: adding one success to the population lowers it by ``h(x; M, n, d) (d - x) / (M - n)``
  (the added item is drawn while exactly ``x`` earlier successes are). Objectives with long constant
  runs (cvar, trimmed means, top-M, quantiles) cost ``O(M * #changes)`` instead of ``O(M * k)``:
  N = 10^5, k = 5 * 10^4 cvar tables take well under a second.

No table larger than ``N x k`` is ever built, and ``N x k`` only for the rankwise API.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy.special import gammaln

# Rows per chunk of the dense route: bounds peak memory at ~ _CHUNK_ELEMENTS * 8 bytes per temporary.
_CHUNK_ELEMENTS = 1 << 22


@lru_cache(maxsize=8)
def _log_factorials(n_max: int) -> np.ndarray:
    """``log(i!)`` for ``i = 0..n_max``, shape ``(n_max + 1,)``."""
    table = gammaln(np.arange(n_max + 1, dtype=np.float64) + 1.0)
    table.flags.writeable = False
    return table


def _masked(values_at, index: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``values_at(index)`` where ``lo <= index <= hi``, ``-inf`` elsewhere (log of a zero probability)."""
    out = np.full(index.shape, -np.inf)
    valid = (index >= lo) & (index <= hi)
    out[valid] = values_at(index[valid])
    return out


def hypergeom_log_pmf(M: int, d: int, rows: range, cols: range) -> np.ndarray:
    """``log h(x; M, n, d)`` for ``n`` in ``rows``, ``x`` in ``cols`` (contiguous), shape ``(len(rows), len(cols))``.

    ``log h = [lf(n) + lf(M-n)] + [-lf(x) - lf(d-x)] + [-lf(n-x) - lf(M-d-(n-x))] - log C(M, d)`` with ``lf``
    the log-factorial table: a row term, a column term and a term of ``n - x`` only. The last makes the table
    Toeplitz, so it is a strided sliding-window view of one vector: no 2-D gathers. Impossible ``(n, x)``
    (``x > n``, ``d - x > M - n``, ``x < 0``, ``x > d``) get ``-inf``.
    """
    lf = _log_factorials(M)
    n = np.arange(rows.start, rows.stop)
    x_desc = np.arange(cols.stop - 1, cols.start - 1, -1)  # descending x makes n - x ascend along a row
    row_term = lf[n] + lf[M - n] - (lf[M] - lf[d] - lf[M - d])
    col_term = _masked(lambda x: -lf[x] - lf[d - x], x_desc, 0, d)
    u = np.arange(rows.start - cols.stop + 1, rows.stop - cols.start)  # every n - x on the grid
    diff_term = _masked(lambda v: -lf[v] - lf[M - d - v], u, 0, M - d)
    windows = sliding_window_view(diff_term, len(cols))  # windows[i] = diff_term[i : i + len(cols)]
    return (windows + col_term + row_term[:, None])[:, ::-1]


def hypergeom_pmf_table(M: int, d: int, rows: range, cols: range) -> np.ndarray:
    """``h(x; M, n, d)`` for ``n`` in ``rows``, ``x`` in ``cols``; shape ``(len(rows), len(cols))``, float64."""
    return np.exp(hypergeom_log_pmf(M, d, rows, cols))


def _expectation_dense(a: np.ndarray, M: int, d: int) -> np.ndarray:
    support = np.flatnonzero(a[: d + 1])
    out = np.zeros(M + 1)
    if support.size == 0:
        return out
    cols = range(int(support[0]), int(support[-1]) + 1)
    weights = a[cols.start : cols.stop]
    step = max(1, _CHUNK_ELEMENTS // len(cols))
    for start in range(0, M + 1, step):
        rows = range(start, min(M + 1, start + step))
        out[start : rows.stop] = hypergeom_pmf_table(M, d, rows, cols) @ weights
    return out


def hypergeom_cdf_all_n(x: int, M: int, d: int) -> np.ndarray:
    """``P(X_n <= x)`` for ``X_n ~ Hypergeom(M, n, d)`` and every ``n = 0..M``, shape ``(M + 1,)``, in O(M).

    ``P(X_{n+1} <= x) = P(X_n <= x) - h(x; M, n, d) (d - x) / (M - n)``. The partial sums are taken from
    whichever end is closer (``1 - head`` or ``tail``), so both tails keep their relative accuracy.
    """
    if x < 0:
        return np.zeros(M + 1)
    if x >= d:
        return np.ones(M + 1)
    n = np.arange(M)  # steps n -> n + 1 for n = 0..M-1
    step = hypergeom_pmf_table(M, d, range(M), range(x, x + 1))[:, 0] * ((d - x) / (M - n))
    head = np.concatenate(([0.0], np.cumsum(step)))  # sum_{n' < n} step
    tail = np.concatenate((np.cumsum(step[::-1])[::-1], [0.0]))  # sum_{n' >= n} step
    return np.where(head <= 0.5, 1.0 - head, tail)


def hypergeom_expectation(a: np.ndarray, M: int, d: int, method: str = "auto") -> np.ndarray:
    """``E[a[X_n]]`` for ``X_n ~ Hypergeom(M total, n successes, d draws)`` and every ``n = 0..M``.

    :param a: weights indexed by the success count ``x``; only ``a[0..d]`` is used (shape ``(>= d+1,)``).
    :param M: population size (``>= d``).
    :param d: number of draws; ``d < 0`` gives zeros (an empty order statistic, e.g. k = 1 include-one tables).
    :param method: ``"dense"``, ``"runs"`` or ``"auto"`` (runs when ``alpha`` has few changes for its support).
    :return: shape ``(M + 1,)``, float64.
    """
    if d < 0:
        return np.zeros(M + 1)
    a = np.asarray(a, dtype=np.float64)[: d + 1]
    changes = np.flatnonzero(a[:-1] != a[1:])
    if method == "auto":
        # A CDF scan costs about twice a dense column: prefer runs when alpha changes rarely.
        method = "runs" if 2 * changes.size < np.count_nonzero(a) else "dense"
    if method == "dense":
        return _expectation_dense(a, M, d)
    if method != "runs":
        raise ValueError(f"method must be 'auto', 'dense' or 'runs', got {method!r}")
    out = np.full(M + 1, a[d])
    for x in changes:
        out += (a[x] - a[x + 1]) * hypergeom_cdf_all_n(int(x), M, d)
    return out


def check_sizes(n: int, k: int, *, advantage: bool) -> None:
    """Raise a ``ValueError`` naming the problem unless ``1 <= k <= N`` (values) or ``1 <= k < N`` (advantages)."""
    if k < 1:
        raise ValueError(f"order-statistic size k must be >= 1, got k={k}")
    if advantage and k >= n:
        raise ValueError(
            f"leave-one-out advantages need k < N (after removing one sample, k of the other N-1 must remain); "
            f"got k={k}, N={n}"
        )
    if k > n:
        raise ValueError(f"batch values need k <= N (a size-k subset of N samples); got k={k}, N={n}")


Kernel = Callable[[int, int, int], np.ndarray]


def collapsed_kernel(alpha: np.ndarray, method: str = "auto") -> Kernel:
    """``kernel(M, d, shift)[n] = E[alpha[X_n + shift]]``, ``X_n ~ Hypergeom(M, n, d)``: tables collapsed by alpha."""
    alpha = np.asarray(alpha, dtype=np.float64)
    return lambda M, d, shift: hypergeom_expectation(alpha[shift:], M, d, method)


def rankwise_kernel(k: int) -> Kernel:
    """``kernel(M, d, shift)[n, j-1] = h(j - 1 - shift; M, n, d)`` for every rank j: the full ``(M+1, k)`` tables."""

    def kernel(M: int, d: int, shift: int) -> np.ndarray:
        if d < 0:
            return np.zeros((M + 1, k))
        return hypergeom_pmf_table(M, d, range(M + 1), range(-shift, k - shift))

    return kernel


def value_table(n: int, k: int, kernel: Kernel) -> np.ndarray:
    """``W`` (paper eq. method-W-batch) in sorted-rank order: ``v = sum_m R_(m) W[m]``.

    Shape ``(N,)`` collapsed (``w = W alpha``) or ``(N, k)`` rankwise.
    """
    check_sizes(n, k, advantage=False)
    return (k / n) * kernel(n - 1, k - 1, 0)


_QUANTITIES = ("inclusion", "leave_one_out", "advantage")


def psum_tables(n: int, k: int, quantity: str, kernel: Kernel) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """``(L, D, U)`` in sorted-rank order with ``out_t = sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m`` (App. F.4).

    :param quantity: ``"inclusion"`` (``L, D, U = A, B, C``: the include-one value ``q_t``),
        ``"leave_one_out"`` (``W-_m``, none, ``W-_{m-1}``: ``v^(-t)``), or ``"advantage"``
        (their difference: ``a_t = q_t - v^(-t)``).
    :return: arrays of shape ``(N,)`` (collapsed kernel) or ``(N, k)`` (rankwise kernel); ``D`` is ``None``
        for the leave-one-out value, which never contains rank t itself.
    """
    if quantity not in _QUANTITIES:
        raise ValueError(f"quantity must be one of {_QUANTITIES}, got {quantity!r}")
    check_sizes(n, k, advantage=True)
    diag = None
    lower = upper = None
    if quantity != "leave_one_out":
        scale = (k - 1) / (n - 1)
        below = scale * kernel(n - 2, k - 2, 0)  # A[m], m = 1..N-1
        above = scale * kernel(n - 2, k - 2, 1)  # C[m] for m = 2..N: the forced rank is one of the lower ones
        lower = np.concatenate((below, np.zeros_like(below[:1])))
        upper = np.concatenate((np.zeros_like(above[:1]), above))
        diag = kernel(n - 1, k - 1, 0)  # B[t]
    if quantity != "inclusion":
        loo = (k / (n - 1)) * kernel(n - 2, k - 1, 0)  # W-[l], l = 1..N-1
        pad = np.zeros_like(loo[:1])
        loo_lower, loo_upper = np.concatenate((loo, pad)), np.concatenate((pad, loo))
        if lower is None:
            lower, upper = loo_lower, loo_upper
        else:
            lower -= loo_lower
            upper -= loo_upper
    return lower, diag, upper
