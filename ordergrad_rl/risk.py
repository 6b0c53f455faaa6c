"""The risk profile of a set of episode returns: one function for the logger, the callbacks and the scripts.

CVaR here is the paper's lower-tail mean ``L_a(Z) = mean of the worst ceil(a n) returns`` (portfolio appendix),
and quantiles use the Hazen plotting position ``(j - 0.5) / n`` like the ``quantile<q>`` objective, so a
profile and an objective of the same name measure the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

CVAR_LEVELS: tuple[float, ...] = (0.05, 0.1, 0.2)
QUANTILE_LEVELS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 0.95)


def lower_tail_mean(returns: np.ndarray, level: float) -> float:
    """Mean of the worst ``ceil(level * n)`` values (the empirical CVaR at ``level``)."""
    values = np.sort(np.asarray(returns, dtype=np.float64).ravel())
    count = max(1, math.ceil(round(level * values.size, 9)))
    return float(values[:count].mean())


def risk_profile(
    returns: Sequence[float] | np.ndarray,
    cvar_levels: Sequence[float] = CVAR_LEVELS,
    quantile_levels: Sequence[float] = QUANTILE_LEVELS,
) -> dict[str, float]:
    """Summary statistics of a batch of returns (higher is better).

    :param returns: shape ``(n,)`` (any shape is flattened), finite, ``n >= 1``.
    :param cvar_levels: lower-tail levels ``a`` in (0, 1] for ``cvar_<a>``.
    :param quantile_levels: levels ``q`` in [0, 1] for ``quantile_<q>`` (Hazen).
    :return: ``{"mean", "std" (population), "min", "max", "cvar_0.05", ..., "quantile_0.05", ...}`` as floats,
        the keys TensorBoard logs under ``risk/`` and ``eval_risk/``.
    """
    values = np.asarray(returns, dtype=np.float64).ravel()
    if values.size == 0:
        raise ValueError("risk_profile needs at least one return")
    if not np.all(np.isfinite(values)):
        raise ValueError("returns contain NaN or inf")
    profile = {
        "mean": float(values.mean()),
        "std": float(values.std()),
        "min": float(values.min()),
        "max": float(values.max()),
    }
    for level in cvar_levels:
        if not 0.0 < level <= 1.0:
            raise ValueError(f"CVaR levels must be in (0, 1], got {level}")
        profile[f"cvar_{level:g}"] = lower_tail_mean(values, level)
    quantiles = np.quantile(values, list(quantile_levels), method="hazen") if len(quantile_levels) else []
    for level, value in zip(quantile_levels, quantiles, strict=True):
        profile[f"quantile_{level:g}"] = float(value)
    return profile
