"""GCVaR, the sampling CVaR policy gradient of Tamar, Glassner and Mannor (2015), as per-sample weights.

For ``N`` i.i.d. returns ``R_i`` and level ``alpha``, the estimator of ``grad CVaR_alpha(R)`` is

    (1 / (alpha N)) sum_i (R_i - VaR_hat) 1{R_i <= VaR_hat} grad log p(tau_i),

with ``VaR_hat`` the batch's empirical alpha-quantile, here the ``ceil(alpha N)``-th smallest return. As a
likelihood-ratio gradient ``(1/N) sum_i w_i grad log p(tau_i)`` its per-sample weights are

    w_i = (R_i - VaR_hat) 1{R_i <= VaR_hat} / alpha.

Only the ``ceil(alpha N)`` tail samples get a weight (the others are 0), and the estimator is consistent but biased
at finite ``N``; OrderGrad's ``cvar<a>@k`` weights every sample of the batch and is unbiased for the CVaR of a
``k``-subset. ``objective="gcvar<a>"`` selects these weights in the agents' episodic mode
(:class:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ordergrad_rl.core._xp import host, host_float64

_GCVAR_RE = re.compile(r"^gcvar(?P<level>\d*\.?\d+(?:e-?\d+)?)$")


def gcvar_level(spec: object) -> float | None:
    """The level ``alpha`` of a ``"gcvar<alpha>"`` spec (case-insensitive, spaces ignored), ``None`` for any other.

    :raises ValueError: a ``gcvar`` spec whose level is not in ``(0, 1]``, or with ``@K`` (GCVaR has no ``k``).
    """
    if not isinstance(spec, str):
        return None
    text = "".join(spec.split()).lower()
    if not text.startswith("gcvar"):
        return None
    match = _GCVAR_RE.match(text)
    if match is None:
        raise ValueError(f"GCVaR spec {spec!r}: expected 'gcvar<level>' with a level in (0, 1], e.g. 'gcvar0.2'")
    level = float(match["level"])
    if not 0.0 < level <= 1.0:
        raise ValueError(f"GCVaR spec {spec!r}: the level must be in (0, 1], got {level}")
    return level


@host
def gcvar_weights(returns: np.ndarray, alpha: float) -> np.ndarray:
    """Per-sample GCVaR weights ``w_i = (R_i - VaR_hat) 1{R_i <= VaR_hat} / alpha`` (module docstring).

    :param returns: ``[N]`` returns of one batch (higher is better), or ``[..., N]``: batches along the last axis,
        each with its own ``VaR_hat`` (the agents' groups).
    :param alpha: CVaR level in ``(0, 1]``.
    :return: float64 weights of ``returns``' shape, ``<= 0``; the policy-gradient estimate is
        ``(1/N) sum_i w_i grad log p_i``.
    :raises ValueError: ``returns`` not an array of finite numbers with at least one axis and a non-empty last axis,
        or ``alpha`` outside ``(0, 1]``.
    :raises TypeError: complex ``returns``, or ``returns`` traced by a function transform (the weights are computed
        in NumPy).
    """
    returns = host_float64(returns, "returns", "gcvar_weights")
    if returns.ndim == 0 or returns.shape[-1] == 0 or not np.isfinite(returns).all():
        raise ValueError(
            f"returns must be an array of finite numbers with a non-empty last axis, got shape {returns.shape}"
        )
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must be in (0, 1], got {alpha}")
    # The tail count per batch, at least 1 (a level below 1e-12 / N gave 0); the tolerance keeps 0.2 * 10 at 2.
    m = max(1, math.ceil(alpha * returns.shape[-1] - 1e-12))
    var_hat = np.partition(returns, m - 1, axis=-1)[..., m - 1 : m]
    return np.where(returns <= var_hat, returns - var_hat, 0.0) / alpha
