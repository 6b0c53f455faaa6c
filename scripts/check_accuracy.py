"""Accuracy of the batch advantages against a 50-digit mpmath reference (slow: minutes; not a test).

    python scripts/check_accuracy.py [--n 100000] [--k 50000] [--objectives cvar0.2 gmd ...] [--dps 50]
                                     [--rewards normal|lognormal|offset]

For every objective: the worst entry ``max_i |a_i - a_i^ref| / max_i |a_i^ref|`` and the median relative error of
``lstat_advantage`` on N rewards (standard normal; ``lognormal``: ``exp(2 Z)``, a heavy right tail; ``offset``:
``10^6 + Z``), and the time of its first call (tables built inside the call).
Goal (issue 15): worst <= 1e-9 and first call <= 5 s at N = 10^5, k = 5 * 10^4.

The reference is the paper's prefix/diagonal/suffix formula (App. F.4, ``a_t = q_t - v^(-t)`` from the tables
A, B, C and W-), in mpmath at ``--dps`` digits, with each collapsed table ``E[alpha[X_n]]`` evaluated exactly by:

* polynomial weights (gmd, L-moments): the hypergeometric factorial moments ``E[(X)_i] = (d)_i (n)_i / (M)_i``
  with the exact rational coefficients of the weights;
* piecewise-constant weights: Abel summation over the ranks where alpha changes, each hypergeometric CDF
  ``P(X_n <= x)`` summed term by term from ``h(x; M, x, d) = C(M-x, d-x) / C(M, d)`` (mpmath's binomial)
  and the exact ratio ``h(n+1)/h(n)``;
* other weights (Harrell-Davis): every row ``h(.; M, n, d)`` summed from its mode outwards until its terms fall
  below ``10^-45`` of the mode. These rows are the expensive part, so for them the reference uses the one-table
  gap form ``a_t = [sum_{l<t} l K_l D_l - sum_{l>=t} (N-l) K_l D_l] / (N-1)`` (the formula the implementation
  uses; it is checked against brute-force enumeration in the tests) — only its floating-point evaluation is
  under test there.
"""

from __future__ import annotations

import argparse
import math
import time

import mpmath  # type: ignore[import-untyped]  # no type information
import numpy as np
from mpmath import mp, mpf

from ordergrad_rl import Objective, OrderStatTransform
from ordergrad_rl.core import weights
from ordergrad_rl.core.objectives import _lmoment_coefficients

OBJECTIVES = [
    "cvar0.2", "uppertail0.2", "quantile0.1", "quantileweibull0.1", "quantileblom0.1", "topquantile0.1", "median",
    "top2", "bot2", "max", "min", "rank3", "trim10000", "winsor10000", "topbot10000", "midrangem1",
    "rangelowertail0.1:0.3", "rangeuppertail0.1:0.3", "trimfrac0.1:0.2",
    "gmd", "lmoment2", "lmoment3", "lmoment4", "harrelldavis0.5", "harrelldavis0.1",
]  # fmt: skip


REWARDS = {"normal": lambda z: z, "lognormal": lambda z: np.exp(2.0 * z), "offset": lambda z: 1e6 + z}


def bound_k(obj: Objective) -> int:
    """``obj.k``, which every objective here has (``--k`` binds it)."""
    assert obj.k is not None, f"{obj} is not bound to a k"
    return obj.k


def falling(a: int, i: int) -> int:
    return math.perm(a, i) if a >= 0 else 0


# ------------------------------------------------------------------------------------------ exact kernels (mpmath)
def poly_coefficients(obj: Objective) -> list[mpf]:
    """Exact falling-factorial coefficients of alpha in x = j - 1 for gmd and the L-moments."""
    k = bound_k(obj)
    if obj.name == "gmd":
        r, factor = 2, 2
    else:
        r, factor = int(obj.params[0]), 1
    return [mpf(factor * p) / (k * falling(k - 1, i)) for i, p in enumerate(_lmoment_coefficients(r))]


def shifted(coefficients: list[mpf], shift: int) -> list[mpf]:
    out = [mpf(0)] * len(coefficients)
    for i, c in enumerate(coefficients):
        for l in range(i + 1):
            out[l] += c * math.comb(i, l) * math.perm(shift, i - l)
    return out


def kernel_poly(coefficients: list[mpf], M: int, d: int) -> list[mpf]:
    out = []
    for n in range(M + 1):
        total, ratio = mpf(0), mpf(1)
        for i, c in enumerate(coefficients):
            if i > 0:
                if i > d or i > n:
                    break
                ratio = ratio * (d - i + 1) * (n - i + 1) / (M - i + 1)
            total += c * ratio
        out.append(total)
    return out


def cdf_column(x: int, M: int, d: int) -> list[mpf]:
    """``P(X_n <= x)`` for every n, X_n ~ Hypergeom(M, n, d), summed term by term."""
    if x < 0:
        return [mpf(0)] * (M + 1)
    if x >= d:
        return [mpf(1)] * (M + 1)
    out = [mpf(1)] * (x + 1)
    h = mpmath.binomial(M - x, d - x) / mpmath.binomial(M, d)  # h(x; M, n = x, d)
    head = mpf(0)
    for n in range(x, M):
        head += h * (d - x) / (M - n)  # P(X_n <= x) - P(X_{n+1} <= x)
        out.append(1 - head)
        h = h * (n + 1) * (M - n - d + x) / ((n + 1 - x) * (M - n)) if n + 1 - x > 0 else h
    return out


def kernel_runs(alpha: list[mpf], M: int, d: int) -> list[mpf]:
    a = alpha[: d + 1]
    out = [a[d]] * (M + 1)
    for x in range(d):
        if a[x] != a[x + 1]:
            jump = a[x] - a[x + 1]
            out = [o + jump * c for o, c in zip(out, cdf_column(x, M, d), strict=True)]
    return out


def kernel_rows(alpha: list[mpf], M: int, d: int, cut: float = 1e-45) -> list[mpf]:
    """``sum_x alpha[x] h(x; M, n, d)`` row by row from the mode outwards (alpha below 1e-40 of its max is 0)."""
    a = alpha[: d + 1]
    big = max(abs(v) for v in a)
    support = [x for x, v in enumerate(a) if abs(v) > big * mpf(10) ** -40]
    lo_s, hi_s = support[0], support[-1]
    log_total = mpmath.log(mpmath.binomial(M, d))
    out = []
    for n in range(M + 1):
        x_lo, x_hi = max(0, d - (M - n)), min(n, d)
        mode = min(max((n + 1) * (d + 1) // (M + 2), x_lo), x_hi)
        sd = math.sqrt(max(d * (n / M) * (1 - n / M) * (M - d) / max(M - 1, 1), 1.0))
        if mode + 20 * sd + 10 < lo_s or mode - 20 * sd - 10 > hi_s:
            out.append(mpf(0))  # the row's mass beyond 20 sd is below 1e-80
            continue
        peak = mpmath.exp(
            mpmath.log(mpmath.binomial(n, mode)) + mpmath.log(mpmath.binomial(M - n, d - mode)) - log_total
        )
        total = a[mode] * peak
        h, x = peak, mode
        while x < x_hi:  # upwards: h(x+1)/h(x) = (n-x)(d-x) / ((x+1)(M-n-d+x+1))
            h = h * (n - x) * (d - x) / ((x + 1) * (M - n - d + x + 1))
            x += 1
            total += a[x] * h
            if h < peak * cut:
                break
        h, x = peak, mode
        while x > x_lo:
            h = h * x * (M - n - d + x) / ((n - x + 1) * (d - x + 1))
            x -= 1
            total += a[x] * h
            if h < peak * cut:
                break
        out.append(total)
    return out


def kernel(obj: Objective, alpha: list[mpf], M: int, d: int, shift: int) -> list[mpf]:
    if d < 0:
        return [mpf(0)] * (M + 1)
    if obj.polynomial is not None:
        return kernel_poly(shifted(poly_coefficients(obj), shift), M, d)
    a = alpha[shift:]
    changes = sum(a[x] != a[x + 1] for x in range(min(d, len(a) - 1)))
    return kernel_runs(a, M, d) if changes <= 8 else kernel_rows(a, M, d)


# ------------------------------------------------------------------------------------------ reference advantages
def reference_paper(obj: Objective, rewards: np.ndarray) -> list[mpf]:
    """``a_t = sum_{m<t} R_m L_m + R_t B_t + sum_{m>t} R_m U_m`` in sorted order (App. F.4)."""
    n, k = rewards.size, bound_k(obj)
    r = [mpf(float(v)) for v in np.sort(rewards)]
    alpha = [mpf(float(v)) for v in obj.weights]
    scale = mpf(k - 1) / (n - 1)
    a_tab = [scale * v for v in kernel(obj, alpha, n - 2, k - 2, 0)]  # A[m], m = 1..N-1
    c_tab = [scale * v for v in kernel(obj, alpha, n - 2, k - 2, 1)]  # C[m], m = 2..N
    b_tab = kernel(obj, alpha, n - 1, k - 1, 0)  # B[t]
    loo = [mpf(k) / (n - 1) * v for v in kernel(obj, alpha, n - 2, k - 1, 0)]  # W-[l], l = 1..N-1
    lower = [a_tab[m] - loo[m] for m in range(n - 1)]  # 0-based m = 0..N-2
    upper = [c_tab[m - 1] - loo[m - 1] for m in range(1, n)]  # 0-based m = 1..N-1
    suffix = [mpf(0)] * (n + 1)
    for m in range(n - 1, 0, -1):
        suffix[m] = suffix[m + 1] + r[m] * upper[m - 1]
    out, prefix = [], mpf(0)
    for t in range(n):
        out.append(prefix + r[t] * b_tab[t] + suffix[t + 1])
        if t < n - 1:
            prefix += r[t] * lower[t]
    return out


def reference_gap(obj: Objective, rewards: np.ndarray) -> list[mpf]:
    """The gap form with one kernel ``K_l = E[alpha[X]]``, ``X ~ Hypergeom(N-2, l-1, k-1)``."""
    n, k = rewards.size, bound_k(obj)
    r = [mpf(float(v)) for v in np.sort(rewards)]
    gap_kernel = kernel(obj, [mpf(float(v)) for v in obj.weights], n - 2, k - 1, 0)
    g = [gap_kernel[i] * (r[i + 1] - r[i]) for i in range(n - 1)]
    total = mpmath.fsum((n - 1 - i) * g[i] for i in range(n - 1))
    out, prefix = [], mpf(0)
    for t in range(n):
        out.append((n * prefix - total) / (n - 1))
        if t < n - 1:
            prefix += g[t]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=50_000)
    parser.add_argument("--objectives", nargs="*", default=OBJECTIVES)
    parser.add_argument("--dps", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rewards", choices=sorted(REWARDS), default="normal")
    args = parser.parse_args()
    mp.dps = args.dps
    rewards = REWARDS[args.rewards](np.random.default_rng(args.seed).normal(size=args.n))
    order = np.argsort(rewards, kind="stable")
    print(f"N = {args.n}, k = {args.k}, {args.dps}-digit mpmath reference, {args.rewards} rewards\n")
    print(f"{'objective':<26} {'route':<6} {'worst rel. err':>15} {'median':>10} {'first call':>11}  reference")
    for spec in args.objectives:
        obj = Objective.parse(spec, k=1 if spec == "mean" else args.k)
        weights.clear_caches()
        start = time.perf_counter()
        transform = OrderStatTransform(args.n, obj)
        advantage = transform.advantage(rewards)
        first = time.perf_counter() - start
        alpha = obj.weights
        changes = int(np.count_nonzero(alpha[:-1] != alpha[1:]))
        dense = obj.polynomial is None and changes > 8  # the reference's route: rows for many changes
        # the route the implementation took for the advantages' table (M = N-2, d = k-1)
        route = weights.choose_method(alpha, args.n - 2, bound_k(obj) - 1, "auto", obj.polynomial)
        start = time.perf_counter()
        reference = reference_gap(obj, rewards) if dense else reference_paper(obj, rewards)
        ref_time = time.perf_counter() - start
        ref = np.array([float(v) for v in reference])
        err = np.abs(advantage[order] - ref) / np.abs(ref).max()
        form = "gap form" if dense else "paper A/B/C/W-"
        print(
            f"{str(obj):<26} {route:<6} {err.max():15.2e} {np.median(err):10.1e} {first:9.3f} s  "
            f"{form}, {ref_time:.0f} s",
            flush=True,
        )


if __name__ == "__main__":
    main()
