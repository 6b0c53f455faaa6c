"""The unbiased pass@k estimator (paper eq. passk) over problems, and its curve over k.

For a problem with ``n`` sampled answers of which ``c`` are correct, pass@k is estimated by

    pass@k = 1 - C(n - c, k) / C(n, k),

the probability that a uniformly random ``k``-subset of the ``n`` samples contains a correct one. That is the
survival function ``P(X >= 1)`` of the hypergeometric count ``X`` of correct samples in the subset, which
:func:`scipy.stats.hypergeom.sf` evaluates in floating point to machine precision (Boost's implementation) with no
binomial coefficient ever formed: exact for ``n = 1024`` and every ``k <= n``, where ``C(1024, 512)`` has 307
digits. The estimator is unbiased for the probability that at least one of ``k`` fresh samples is correct.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import hypergeom


def _as_counts(name: str, value: Any, minimum: int) -> np.ndarray:
    """``value`` as an int64 array of integers ``>= minimum``, or a clear error."""
    array = np.asarray(value)
    numeric = np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    if array.dtype == np.bool_ or not numeric:
        raise TypeError(f"{name} must be integers, got dtype {array.dtype}")
    if np.issubdtype(array.dtype, np.floating):
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name} contains NaN or inf")
        if np.any(array != np.round(array)):
            raise ValueError(f"{name} must be integers, got non-integer values in {array!r}")
    counts = array.astype(np.int64)
    if np.any(counts < minimum):
        raise ValueError(f"{name} must be >= {minimum}, got min {counts.min()}")
    return counts


def pass_at_k(n_correct: Any, n: Any, k: Any) -> np.ndarray:
    """Unbiased pass@k of each problem, ``1 - C(n - c, k) / C(n, k)`` (paper eq. passk).

    The arguments broadcast against each other (NumPy rules), so ``pass_at_k(c[:, None], n, ks[None, :])``
    gives a ``[problems, len(ks)]`` table.

    :param n_correct: number ``c`` of correct samples per problem, integers in ``[0, n]``.
    :param n: number of samples per problem, integers ``>= 1``.
    :param k: subset size, integers in ``[1, n]``.
    :return: float64 array of the broadcast shape, values in ``[0, 1]`` (0 when ``c = 0``, 1 when ``k > n - c``).
    :raises TypeError: non-integer dtypes (bool, object, strings).
    :raises ValueError: negative or non-integer values, ``c > n``, ``k > n``, ``k < 1``, shapes that do not broadcast.
    """
    c = _as_counts("n_correct", n_correct, 0)
    n_ = _as_counts("n", n, 1)
    k_ = _as_counts("k", k, 1)
    try:
        c, n_, k_ = np.broadcast_arrays(c, n_, k_)
    except ValueError as err:
        raise ValueError(f"n_correct, n and k do not broadcast: shapes {c.shape}, {n_.shape}, {k_.shape}") from err
    if np.any(c > n_):
        raise ValueError("n_correct must be <= n (more correct samples than samples)")
    if np.any(k_ > n_):
        raise ValueError("k must be <= n (pass@k needs at least k samples per problem)")
    # X ~ Hypergeom(population n, c marked, k drawn): pass@k = P(X >= 1) = sf(0).
    return np.asarray(hypergeom.sf(0, n_, c, k_), dtype=np.float64)


def default_ks(n: int) -> np.ndarray:
    """The powers of two ``1, 2, 4, ...`` up to ``n`` (the paper's grid; ``k <= 256`` for ``n = 1024``)."""
    return 2 ** np.arange(int(np.log2(n)) + 1)


def checked_ks(ks: Any, n: int) -> np.ndarray:
    """The ``k`` of a curve of ``n`` samples per problem, checked when an evaluation is set up rather than at its
    first run (mid-training): ``ks`` sorted and without repeats, as :func:`pass_at_k_curve` orders its curve, or
    :func:`default_ks` of ``n`` for ``None``.

    :param ks: subset sizes, integers in ``[1, n]`` (a sequence, or one), or ``None``.
    :param n: samples per problem.
    :return: int64 ``[len(ks)]``.
    :raises TypeError: non-integer dtypes (bool, object, strings).
    :raises ValueError: non-integer values, an empty ``ks``, one of more than one dimension, a ``k`` outside
        ``[1, n]``.
    """
    if ks is not None and np.ndim(ks) > 1:
        raise ValueError(f"ks must be a 1-D sequence of integers, got shape {np.shape(ks)}")
    counts = _curve_ks(ks, n)
    if np.any(counts > n):
        raise ValueError(f"ks must be in [1, n_samples={n}], got {counts.tolist()}")
    return counts


def _curve_ks(ks: Any, n: int) -> np.ndarray:
    """``ks`` (one ``k`` or any array of them) in the order of the curve, sorted and without repeats, or
    :func:`default_ks` of ``n`` for ``None``.

    :raises TypeError: non-integer dtypes.
    :raises ValueError: non-integer values, a ``k`` below 1, an empty ``ks``.
    """
    if ks is None:
        return default_ks(n)
    counts = np.unique(_as_counts("ks", ks, 1))  # flattened
    if counts.size == 0:
        raise ValueError("ks is empty")
    return counts


def pass_at_k_curve(n_correct: Any, n: Any, ks: Any = None) -> dict[int, float]:
    """Mean pass@k over problems for each ``k`` of ``ks`` (the paper's task-average pass@k curve).

    :param n_correct: correct-sample counts, shape ``[problems]``.
    :param n: samples per problem, an int or shape ``[problems]``.
    :param ks: subset sizes; default :func:`default_ks` of the smallest ``n`` (``1, 2, 4, ..., <= n``).
    :return: ``{k: mean over problems of pass@k}``, ordered by increasing ``k``.
    :raises ValueError: see :func:`pass_at_k`; also an empty problem set or ``ks``.
    """
    c = _as_counts("n_correct", n_correct, 0)
    if c.ndim != 1 or c.size == 0:
        raise ValueError(f"n_correct must be a non-empty 1-D array (one count per problem), got shape {c.shape}")
    n_ = _as_counts("n", n, 1)
    ks_ = _curve_ks(ks, int(n_.min()))
    table = pass_at_k(c[:, None], n_[..., None] if n_.ndim else n_, ks_[None, :])
    return {int(k): float(value) for k, value in zip(ks_, table.mean(axis=0), strict=True)}
