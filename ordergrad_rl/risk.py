"""The risk profile of a set of episode returns: one function for the logger, the callbacks and the scripts.

CVaR here is the paper's lower-tail mean ``L_a(Z) = mean of the worst ceil(a n) returns`` (portfolio appendix),
and quantiles use the Hazen plotting position ``(j - 0.5) / n`` like the ``quantile<q>`` objective, so a
profile and an objective of the same name measure the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ordergrad_rl.core._xp import host_float64

CVAR_LEVELS: tuple[float, ...] = (0.05, 0.1, 0.2)
QUANTILE_LEVELS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)


def lower_tail_mean(returns: np.ndarray, level: float) -> float:
    """Mean of the worst ``ceil(level * n)`` values (the empirical CVaR at ``level``).

    :param returns: ``(n,)`` finite returns, ``n >= 1`` (any shape is flattened), of any array library as in
        :func:`risk_profile`.
    :param level: in ``(0, 1]``.
    :raises ValueError: no returns, a NaN or inf among them (``np.sort`` puts NaN last, where the tail skipped it), or
        ``level`` outside ``(0, 1]``.
    :raises TypeError: complex returns.
    """
    values = host_float64(returns, "returns", "lower_tail_mean").ravel()
    if values.size == 0 or not np.all(np.isfinite(values)):
        raise ValueError(f"returns must be finite numbers, at least one; got {values.size} with NaN or inf")
    if not 0.0 < level <= 1.0:
        raise ValueError(f"level must be in (0, 1], got {level}")
    return _sorted_tail_mean(np.sort(values), level)


def _sorted_tail_mean(values: np.ndarray, level: float) -> float:
    """:func:`lower_tail_mean` of checked, sorted ``values``: one sort serves every level of a profile."""
    count = max(1, math.ceil(round(level * values.size, 9)))
    return float(values[:count].mean())


def risk_profile(
    returns: Sequence[float] | np.ndarray,
    cvar_levels: Sequence[float] = CVAR_LEVELS,
    quantile_levels: Sequence[float] = QUANTILE_LEVELS,
    weights: Sequence[float] | np.ndarray | None = None,
) -> dict[str, float]:
    """Summary statistics of a batch of returns (higher is better).

    :param returns: shape ``(n,)`` (any shape is flattened), finite, ``n >= 1``: a sequence, or an array of NumPy,
        PyTorch (gradients and devices allowed), JAX or CuPy.
    :param cvar_levels: lower-tail levels ``a`` in (0, 1] for ``cvar_<a>``.
    :param quantile_levels: levels ``q`` in [0, 1] for ``quantile_<q>`` (Hazen).
    :param weights: ``(n,)`` positive likelihood ratios of a batch drawn by a sampler (the noise sampler's): the
        profile is then that of the weighted empirical distribution, which describes the policy's own returns, not
        the sampler's draws (``cvar_<a>`` the mean of its lower ``a`` of mass, ``quantile_<q>`` Hazen's positions
        at the cumulative weights); ``None``: every return weighs the same, as above. Equal weights give the same
        profile but for ``cvar_<a>`` where ``a * n`` is not a whole number: the weighted one takes a share of the
        return at the split, the unweighted one the worst ``ceil(a n)`` whole (``a = 0.3`` of 5 returns: the worst
        and half the second worst, against the worst two).
    :return: ``{"mean", "std" (population), "min", "max", "cvar_0.05", ..., "quantile_0.05", ...}`` as floats,
        the keys TensorBoard logs under ``risk/`` and ``eval_risk/``.
    """
    values = host_float64(returns, "returns", "risk_profile").ravel()
    if values.size == 0:
        raise ValueError("risk_profile needs at least one return")
    if not np.all(np.isfinite(values)):
        raise ValueError("returns contain NaN or inf")
    if any(not 0.0 < level <= 1.0 for level in cvar_levels):
        raise ValueError(f"CVaR levels must be in (0, 1], got {list(cvar_levels)}")
    if any(not 0.0 <= level <= 1.0 for level in quantile_levels):  # the weighted profile would clamp them silently
        raise ValueError(f"quantile levels must be in [0, 1], got {list(quantile_levels)}")
    if weights is not None:
        return _weighted_profile(values, weights, cvar_levels, quantile_levels)
    profile = {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "min": float(values.min()),
        "max": float(values.max()),
    }
    ordered = np.sort(values)
    for level in cvar_levels:
        profile[f"cvar_{level:g}"] = _sorted_tail_mean(ordered, level)
    quantiles = np.quantile(values, list(quantile_levels), method="hazen") if len(quantile_levels) else []
    for level, value in zip(quantile_levels, quantiles, strict=True):
        profile[f"quantile_{level:g}"] = float(value)
    return profile


def _weighted_profile(
    values: np.ndarray,
    weights: Sequence[float] | np.ndarray,
    cvar_levels: Sequence[float],
    quantile_levels: Sequence[float],
) -> dict[str, float]:
    """:func:`risk_profile` of the weighted empirical distribution of ``values``."""
    from ordergrad_rl.core.weighted import check_weighted_batch

    values, weights = check_weighted_batch(values, host_float64(weights, "weights", "risk_profile").ravel())
    with np.errstate(over="ignore"):
        total = weights.sum()
    if not np.isfinite(total):  # weights near the float limit (1e308 each): their sum overflowed, every mass was 0
        weights = weights / float(weights.max())
        total = weights.sum()
    order = np.argsort(values, kind="stable")
    values, mass = values[order], weights[order] / total
    mean = float(mass @ values)
    profile = {
        "mean": mean,
        "std": float(np.sqrt(mass @ (values - mean) ** 2)),
        "min": float(values[0]),
        "max": float(values[-1]),
    }
    below = np.concatenate([[0.0], np.cumsum(mass)[:-1]])  # the mass below each sorted value
    for level in cvar_levels:
        taken = np.clip(level - below, 0.0, mass)  # each value's share of the lower `level` of mass
        profile[f"cvar_{level:g}"] = float(taken @ values / level)
    positions = below + mass / 2  # Hazen's (j - 0.5) / n with equal weights
    for level in quantile_levels:
        profile[f"quantile_{level:g}"] = float(np.interp(level, positions, values))
    return profile
