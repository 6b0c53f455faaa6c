"""The prefix/diagonal/suffix scan shared by the batch and known-distribution regimes.

Include-one values, leave-one-out values and advantages all have the form (sorted rank ``t``)::

    out_t = sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m

with tables ``L, D, U`` that depend on the regime (App. D.2 and App. F.4). One cumulative sum evaluates it
for every ``t`` at once.
"""

from __future__ import annotations

from ordergrad_rl.core import _backend as B


def scan_tables(lower, diag, upper) -> tuple:
    """``(E, F, U)`` such that ``scan(R, E, F, U)`` equals ``sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m``.

    ``sum_{m<t} R_m L_m + R_t D_t + sum_{m>t} R_m U_m = cumsum(R (L - U))_t + R_t (D_t - L_t) + sum_m R_m U_m``.
    """
    return lower - upper, (0.0 if diag is None else diag) - lower, upper


def scan(r, e, f, u, *, rankwise: bool):
    """``cumsum(r e) + r f + sum(r u)`` along the sorted axis: every prefix/suffix quantity in one pass.

    :param r: sorted values ``[..., N]``.
    :param e, f, u: tables ``[N]`` / ``[..., N]`` (collapsed) or ``[N, k]`` / ``[..., N, k]`` (``rankwise``).
    :return: ``[..., N]`` or ``[..., N, k]``.
    """
    if rankwise:
        r = r[..., :, None]
    out = B.cumsum(r * e, axis=-2 if rankwise else -1)
    out += r * f
    total = (r * u).sum(-2 if rankwise else -1)
    out += total[..., None, :] if rankwise else total[..., None]
    return out
