"""The two linear scans that turn sorted rewards and weight tables into every include-one, leave-one-out and
advantage value at once (one cumulative sum each), shared by the batch and known-distribution regimes.

* prefix/diagonal/suffix form (App. D.2 and App. F.4), for each sorted rank ``t``::

      out_t = sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m

* gap form, when the coefficients of each ``out_t`` sum to zero (advantages), with ``D_g = R_(g+1) - R_(g)``::

      out_t = sum_{g<t} D_g E_g - sum_g D_g U_g

  Only differences of neighbouring rewards enter: exactly shift-invariant, and zero gaps (ties) add exact zeros.
"""

from __future__ import annotations

from typing import Any


def scan_tables(lower, diag, upper) -> tuple[Any, Any, Any]:
    """``(E, F, U)`` such that ``scan(R, E, F, U)`` equals ``sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m``.

    ``sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m = cumsum(R (L - U))_t + R_t (D_t - L_t) + sum_m R_m U_m``.
    """
    return lower - upper, (0.0 if diag is None else diag) - lower, upper


def scan(r, e, f, u, xp: Any, *, rankwise: bool):
    """``cumsum(r e) + r f + sum(r u)`` along the sorted axis: every prefix/suffix quantity in one pass.

    :param r: sorted values ``[..., N]``.
    :param e, f, u: tables ``[N]`` / ``[..., N]`` (collapsed) or ``[N, k]`` / ``[..., N, k]`` (``rankwise``).
    :return: ``[..., N]`` or ``[..., N, k]``.
    """
    if rankwise:
        r = r[..., :, None]
    axis = -2 if rankwise else -1
    out = xp.cumulative_sum(r * e, axis=axis)
    out += r * f  # in place on the new array: the same sums, one temporary fewer
    out += xp.sum(r * u, axis=axis, keepdims=True)
    return out


def gap_scan(r, e, u, xp: Any, *, rankwise: bool):
    """``out_t = sum_{g<t} D_g E_g - sum_g D_g U_g`` with gaps ``D = diff(r)``.

    :param r: sorted values ``[..., N]``.
    :param e, u: tables over the ``N - 1`` gaps: ``[N-1]`` / ``[..., N-1]``, or with a trailing ``k`` (``rankwise``).
    :return: ``[..., N]`` or ``[..., N, k]``.
    """
    gaps = r[..., 1:] - r[..., :-1]
    if rankwise:
        gaps = gaps[..., :, None]
    axis = -2 if rankwise else -1
    return xp.cumulative_sum(gaps * e, axis=axis, include_initial=True) - xp.sum(gaps * u, axis=axis, keepdims=True)
