"""Small diagnostic experiments (paper Sec. 4, Figs. diagnostic-runtime and diagnostic-gradient).

Runtime (figure diagnostics_runtime.png): rank weights W alpha of a few objectives; the time of one
lstat_advantage call against the batch size N (tables cached, best of repeats, np.argsort as the floor); and at
N = 5000 against k, the collapsed advantage (one O(N) scan) against the rankwise one (O(Nk)).

Gradients (figure diagnostics_gradient.png), for x ~ N(mu = 0.5, 1) and reward R = -x^2:
  * the exact gradient d/dmu of the 20% CVaR of R (the mean of the worst 20% of R; closed form), and of the
    finite-k objective J_k = E[cvar0.2@k] (1-D quadrature over the order-statistic density);
  * LR estimates (k/N) sum_i a_i (x_i - mu) (a_i = lstat_advantage, Gaussian score) and RP estimates (autograd of
    lstat_value(-(mu + eps)^2, "cvar0.2", k)), repeated: LR variance against N for several k (RP dashed), and
    the bias against the CVaR gradient as k grows. Both estimators are unbiased for J_k; J_k -> CVaR as k grows,
    so the bias shrinks while the LR variance grows.
  * the SNR |grad J| / sd(estimate) of Top-M@K estimators (LR and RP) as M goes from 1 (Max@K) to K (the mean),
    in the same setting with N = 64 samples per estimate and K in {8, 16, 32}.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from scipy import integrate, optimize, stats

from ordergrad_rl.common.options import (
    add_output_arguments,
    refuse_option,
    sample_size_int,
    seed_int,
)
from ordergrad_rl.common.progress import progress
from ordergrad_rl.common.reports import best_time, markdown_table, pyplot, save_figure, write_json
from ordergrad_rl.core import Objective, OrderStatTransform, lstat_advantage, lstat_value
from ordergrad_rl.experiments.weight_profiles import Scheme, plot_profiles

MU = 0.5
LEVEL = 0.2
#: Schemes of the weight panel (N = 100).
WEIGHT_PANEL = (
    Scheme("Mean", "mean", 1),
    Scheme("LowerTailMean:0.2, k=20", "cvar0.2", 20),
    Scheme("Median, k=20", "median", 20),
    Scheme("TopM:2, k=20", "TopM:2", 20),
    Scheme("ReMax, k=8", "ReMax", 8),
    Scheme("GiniMeanDifference, k=20", "gmd", 20),
)


@dataclass(frozen=True)
class Config:
    """Grids and repeat counts (defaults: a couple of minutes on 2 cores; :meth:`quick`: seconds)."""

    seed: int = 0
    runtime_ns: tuple[int, ...] = (100, 300, 1_000, 3_000, 10_000, 30_000, 100_000)
    runtime_specs: tuple[str, ...] = ("cvar0.2@50", "median@50", "gmd@50")
    runtime_n_for_k: int = 5_000
    runtime_ks: tuple[int, ...] = (2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000)
    time_budget: float = 0.25  # seconds of repeats per timing (at least 3 repeats)
    variance_ns: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1_024, 2_048)
    variance_ks: tuple[int, ...] = (2, 5, 10, 20, 50)
    variance_reps: int = 4_000
    bias_n: int = 256
    bias_ks: tuple[int, ...] = (1, 2, 5, 10, 20, 50, 100, 200)
    bias_reps: int = 20_000
    snr_n: int = 64
    snr_ks: tuple[int, ...] = (8, 16, 32)
    snr_reps: int = 4_000

    @classmethod
    def quick(cls, seed: int = 0) -> Config:
        """Tiny grids for smoke tests (a few seconds)."""
        return cls(
            seed=seed,
            runtime_ns=(100, 1_000),
            runtime_n_for_k=500,
            runtime_ks=(2, 20),
            time_budget=0.005,
            variance_ns=(16, 64),
            variance_ks=(2, 5),
            variance_reps=300,
            bias_n=64,
            bias_ks=(1, 5, 20),
            bias_reps=600,
            snr_n=32,
            snr_ks=(8,),
            snr_reps=300,
        )


# ---------------------------------------------------------------------------------------------------- exact values
@overload
def tail_probability(s: float, mu: float) -> float: ...
@overload
def tail_probability(s: np.ndarray, mu: float) -> np.ndarray: ...
def tail_probability(s: float | np.ndarray, mu: float) -> float | np.ndarray:
    """``P(|X| >= s)`` for ``X ~ N(mu, 1)``: the chance that a sample's reward ``-X^2`` is at most ``-s^2``."""
    return stats.norm.cdf(-s - mu) + stats.norm.sf(s - mu)


def cvar_threshold(mu: float, level: float) -> float:
    """``s`` with ``P(|X| >= s) = level``: the worst ``level`` fraction of ``R = -X^2`` is ``|X| >= s``."""
    return float(optimize.brentq(lambda s: tail_probability(s, mu) - level, 0.0, abs(mu) + 40.0, xtol=1e-14))


def cvar_value(mu: float, level: float = LEVEL) -> float:
    """The population CVaR of ``R = -X^2``: ``-E[X^2 | |X| >= s] = -E[X^2 1{|X| >= s}] / level``, closed form."""
    s = cvar_threshold(mu, level)
    right = (mu * mu + 1.0) * stats.norm.sf(s - mu) + (s + mu) * stats.norm.pdf(s - mu)
    left = (mu * mu + 1.0) * stats.norm.cdf(-s - mu) + (s - mu) * stats.norm.pdf(s + mu)
    return float(-(right + left) / level)


def cvar_gradient(mu: float, level: float = LEVEL) -> float:
    """``d/dmu`` of :func:`cvar_value`: ``-(2/level) E[X 1{|X| >= s}]`` (the threshold's own derivative cancels).

    With ``E[X 1{X >= s}] = mu P(X >= s) + phi(s - mu)`` and ``E[X 1{X <= -s}] = mu P(X <= -s) - phi(s + mu)``:
    ``-2 mu - (2/level) (phi(s - mu) - phi(s + mu))``.
    """
    s = cvar_threshold(mu, level)
    return float(-2.0 * mu - 2.0 / level * (stats.norm.pdf(s - mu) - stats.norm.pdf(s + mu)))


def _rank_density(alpha: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """``k sum_j alpha_j P(Bin(k-1, F) = j-1)``: the weight a sample whose reward beats a fraction ``F`` gets.

    Abel summation keeps it to the ranks where ``alpha`` changes: ``alpha_k + sum_j (alpha_j - alpha_{j+1})
    P(Bin(k-1, F) <= j-1)``.
    """
    k = alpha.size
    steps = alpha[:-1] - alpha[1:]
    out = np.full_like(worse, alpha[-1])
    for i in np.flatnonzero(steps):
        out += steps[i] * stats.binom.cdf(i, k - 1, worse)
    return k * out


def _orderstat_expectation(objective: Objective, mu: float, h: Callable[[np.ndarray], np.ndarray]) -> float:
    """``E[sum_j alpha_j h(X_[j])]`` where ``X_[j]`` is the sample holding the ``j``-th lowest reward of ``k``.

    Simpson's rule on 2^16 intervals, split at 0 where ``F(x) = P(|X| >= |x|)`` has its kink.
    """
    alpha = objective.weights
    half = abs(mu) + 12.0  # phi(12) ~ 1e-32
    total = 0.0
    for lo, hi in ((-half, 0.0), (0.0, half)):
        x = np.linspace(lo, hi, 2**16 + 1)
        density = stats.norm.pdf(x - mu) * _rank_density(alpha, tail_probability(np.abs(x), mu))
        total += integrate.simpson(h(x) * density, x=x)
    return float(total)


def finite_k_value(objective: Objective, mu: float = MU) -> float:
    """``J(mu) = E[sum_j alpha_j R_(j:k)]`` for ``R = -X^2``, ``X ~ N(mu, 1)`` (the objective the estimators target)."""
    return _orderstat_expectation(objective, mu, lambda x: -x * x)


def finite_k_gradient(objective: Objective, mu: float = MU) -> float:
    """``dJ/dmu = E[sum_j alpha_j dR_(j:k)/dmu]`` with ``dR/dmu = -2x`` (pathwise: the sort is locally constant)."""
    return _orderstat_expectation(objective, mu, lambda x: -2.0 * x)


# ---------------------------------------------------------------------------------------------------- estimators
def lr_estimates(objective: Objective, n: int, reps: int, rng: np.random.Generator, mu: float = MU) -> np.ndarray:
    """``reps`` independent LR estimates ``(k/N) sum_i a_i (x_i - mu)`` from batches of ``n``; shape ``(reps,)``."""
    k = objective.weights.size  # an objective without k raises here, saying how to give it
    out = np.empty(reps)
    chunk = max(1, 4_000_000 // n)  # bounds the [chunk, n] temporaries to ~32 MB each
    for start in range(0, reps, chunk):
        x = mu + rng.standard_normal((min(chunk, reps - start), n))
        a = lstat_advantage(-(x**2), objective)
        out[start : start + x.shape[0]] = k / n * np.sum(a * (x - mu), axis=-1)
    return out


def rp_estimates(objective: Objective, n: int, reps: int, rng: np.random.Generator, mu: float = MU) -> np.ndarray:
    """``reps`` independent RP estimates: autograd of ``lstat_value(-(mu + eps)^2, objective)``; shape ``(reps,)``.

    Each group has its own copy of ``mu``, so one backward pass gives every group's gradient.
    """
    import torch

    out = np.empty(reps)
    chunk = max(1, 4_000_000 // n)
    for start in range(0, reps, chunk):
        eps = torch.from_numpy(rng.standard_normal((min(chunk, reps - start), n)))
        m = torch.full((eps.shape[0], 1), mu, dtype=torch.float64, requires_grad=True)
        (grad,) = torch.autograd.grad(lstat_value(-((m + eps) ** 2), objective).sum(), m)
        out[start : start + eps.shape[0]] = grad[:, 0].numpy()
    return out


# ---------------------------------------------------------------------------------------------------- experiments
def _first_call(n: int, objective: Objective, x: np.ndarray, rankwise: bool) -> float:
    """Time of a first advantage call on a fresh transform: table build included."""
    start = time.perf_counter()
    transform = OrderStatTransform(n, objective)
    (transform.rank_advantage if rankwise else transform.advantage)(x)
    return time.perf_counter() - start


def runtime_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Seconds per call against N (per objective, plus ``np.argsort``) and against k (collapsed vs rankwise)."""
    rng = np.random.default_rng(config.seed)
    by_n: dict[str, Any] = {"n": list(config.runtime_ns), "argsort": [], "calls": {s: [] for s in config.runtime_specs}}
    by_n["first_call"] = {s: [] for s in config.runtime_specs}
    for n in progress(config.runtime_ns, "runtime vs N", quiet=quiet):
        x = rng.standard_normal(n)
        by_n["argsort"].append(best_time(functools.partial(np.argsort, x, kind="stable"), budget=config.time_budget))
        for spec in config.runtime_specs:
            objective = Objective.parse(spec)
            by_n["first_call"][spec].append(_first_call(n, objective, x, rankwise=False))
            by_n["calls"][spec].append(
                best_time(functools.partial(lstat_advantage, x, objective), budget=config.time_budget)
            )
    n = config.runtime_n_for_k
    x = rng.standard_normal(n)
    by_k: dict[str, Any] = {"n": n, "k": list(config.runtime_ks), "collapsed": [], "rankwise": []}
    by_k |= {"first_call_collapsed": [], "first_call_rankwise": []}
    for k in progress(config.runtime_ks, f"runtime vs k (N={n})", quiet=quiet):
        objective = Objective.parse("cvar0.2", k)
        transform = OrderStatTransform(n, objective)
        by_k["first_call_collapsed"].append(_first_call(n, objective, x, rankwise=False))
        by_k["first_call_rankwise"].append(_first_call(n, objective, x, rankwise=True))
        by_k["collapsed"].append(best_time(functools.partial(transform.advantage, x), budget=config.time_budget))
        by_k["rankwise"].append(best_time(functools.partial(transform.rank_advantage, x), budget=config.time_budget))
    return {"vs_n": by_n, "vs_k": by_k}


def gradient_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Variance of LR/RP against N, bias against k, and Top-M@K SNR (see the module docstring)."""
    rng = np.random.default_rng([config.seed, 1])
    exact_cvar = cvar_gradient(MU, LEVEL)
    variance = []
    jobs = [(k, n) for k in config.variance_ks for n in config.variance_ns if k < n]
    for k, n in progress(jobs, "LR/RP variance vs N", quiet=quiet):
        objective = Objective.parse("cvar0.2", k)
        lr, rp = (f(objective, n, config.variance_reps, rng) for f in (lr_estimates, rp_estimates))
        variance.append(
            {
                "k": k,
                "n": n,
                "lr_var": float(lr.var(ddof=1)),
                "rp_var": float(rp.var(ddof=1)),
                "lr_mean": float(lr.mean()),
                "rp_mean": float(rp.mean()),
            }
        )
    bias = []
    for k in progress(config.bias_ks, "bias vs k", quiet=quiet):
        objective = Objective.parse("cvar0.2", k)
        exact_k = finite_k_gradient(objective)
        row: dict[str, Any] = {
            "k": k,
            "objective": str(objective),
            "exact_grad": exact_k,
            "exact_bias": exact_k - exact_cvar,
        }
        for name, f in (("lr", lr_estimates), ("rp", rp_estimates)):
            est = f(objective, config.bias_n, config.bias_reps, rng)
            se = float(est.std(ddof=1) / math.sqrt(est.size))
            row |= {
                f"{name}_mean": float(est.mean()),
                f"{name}_se": se,
                f"{name}_bias": float(est.mean()) - exact_cvar,
                f"{name}_z_vs_exact_k": (float(est.mean()) - exact_k) / se,
            }
        bias.append(row)
    snr = []
    jobs = [(big_k, m) for big_k in config.snr_ks for m in (2**i for i in range(int(math.log2(big_k)) + 1))]
    for big_k, m in progress(jobs, "Top-M@K SNR", quiet=quiet):
        objective = Objective.parse(f"TopM:{m}", big_k)
        exact = finite_k_gradient(objective)
        row = {"K": big_k, "M": m, "exact_grad": exact}
        for name, f in (("lr", lr_estimates), ("rp", rp_estimates)):
            est = f(objective, config.snr_n, config.snr_reps, rng)
            row |= {
                f"{name}_mean": float(est.mean()),
                f"{name}_sd": float(est.std(ddof=1)),
                f"{name}_snr": abs(exact) / float(est.std(ddof=1)),
            }
        snr.append(row)
    return {
        "mu": MU,
        "level": LEVEL,
        "cvar_value": cvar_value(MU, LEVEL),
        "cvar_gradient": exact_cvar,
        "variance": variance,
        "bias": bias,
        "snr": snr,
    }


def run_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Both diagnostics: ``{"config", "runtime", "gradient"}``."""
    return {
        "config": dataclasses.asdict(config),
        "runtime": runtime_experiment(config, quiet),
        "gradient": gradient_experiment(config, quiet),
    }


# ---------------------------------------------------------------------------------------------------- reporting
def plot_runtime(results: dict[str, Any], path: Path) -> Path:
    """Weight panel, runtime against N, runtime against k."""
    plt = pyplot()
    fig, (ax_w, ax_n, ax_k) = plt.subplots(1, 3, figsize=(17, 4.6))
    plot_profiles(ax_w, 100, WEIGHT_PANEL, "Rank weights of v^alpha, N=100")
    by_n = results["vs_n"]
    # The curves of different objectives coincide (same scans, cached tables): markers tell them apart.
    for (spec, times), marker in zip(by_n["calls"].items(), "osd^v<>", strict=False):
        ax_n.plot(by_n["n"], np.asarray(times) * 1e3, marker=marker, mfc="none", label=f"lstat_advantage {spec}")
    ax_n.plot(by_n["n"], np.asarray(by_n["argsort"]) * 1e3, "k--", label="np.argsort (floor)")
    ax_n.set(
        xscale="log",
        yscale="log",
        xlabel="batch size N",
        ylabel="ms per call (best of repeats)",
        title="Advantage runtime vs N (tables cached)",
    )
    ax_n.legend(fontsize=8)
    by_k = results["vs_k"]
    ax_k.plot(by_k["k"], np.asarray(by_k["collapsed"]) * 1e3, "o-", label="collapsed a_i (advantage)")
    ax_k.plot(by_k["k"], np.asarray(by_k["rankwise"]) * 1e3, "s-", label="rankwise a_ij (rank_advantage)")
    ax_k.set(
        xscale="log",
        yscale="log",
        xlabel="order-statistic size k",
        ylabel="ms per call (best of repeats)",
        title=f"cvar0.2@k advantage runtime vs k, N={by_k['n']}",
    )
    ax_k.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_gradient(results: dict[str, Any], path: Path) -> Path:
    """LR (and RP) variance vs N per k, bias vs k, Top-M@K SNR vs M (``results`` of :func:`run_experiment`)."""
    plt = pyplot()
    config, results = results["config"], results["gradient"]
    fig, (ax_v, ax_b, ax_s) = plt.subplots(1, 3, figsize=(17, 4.6))
    colors = plt.cm.viridis(np.linspace(0.0, 0.9, len({r["k"] for r in results["variance"]})))
    for color, k in zip(colors, sorted({r["k"] for r in results["variance"]}), strict=True):
        rows = [r for r in results["variance"] if r["k"] == k]
        ns = [r["n"] for r in rows]
        ax_v.plot(ns, [r["lr_var"] for r in rows], "o-", color=color, label=f"LR, k={k}")
        ax_v.plot(ns, [r["rp_var"] for r in rows], "--", color=color, lw=1, alpha=0.8)
    ax_v.plot([], [], "k--", lw=1, label="RP (dashed)")
    ax_v.set(
        xscale="log",
        yscale="log",
        xlabel="batch size N",
        ylabel="variance of the gradient estimate",
        title="cvar0.2@k gradient: estimator variance vs N",
    )
    ax_v.legend(fontsize=8)
    bias = results["bias"]
    ks = np.array([r["k"] for r in bias])
    ax_b.plot(ks, [r["exact_bias"] for r in bias], "k-", lw=1.5, label="exact: dJ_k/dmu - dCVaR/dmu")
    for name, marker, shift in (("lr", "o", 0.94), ("rp", "s", 1.06)):
        ax_b.errorbar(
            ks * shift,
            [r[f"{name}_bias"] for r in bias],
            yerr=[2 * r[f"{name}_se"] for r in bias],
            fmt=marker,
            ms=5,
            capsize=3,
            label=f"{name.upper()} mean - dCVaR/dmu (2 SE)",
        )
    # Log scale: the bias decays like 1/k. (An estimate <= 0, possible for large k, would not be drawn.)
    ax_b.set(
        xscale="log",
        yscale="log",
        xlabel="order-statistic size k",
        ylabel="bias w.r.t. the 20% CVaR gradient",
        title=f"Bias vs k (N={config['bias_n']}, exact CVaR grad {results['cvar_gradient']:.4f})",
    )
    ax_b.legend(fontsize=8)
    for big_k in sorted({r["K"] for r in results["snr"]}):
        rows = [r for r in results["snr"] if r["K"] == big_k]
        line = ax_s.plot([r["M"] for r in rows], [r["lr_snr"] for r in rows], "o-", label=f"LR, K={big_k}")[0]
        ax_s.plot(
            [r["M"] for r in rows],
            [r["rp_snr"] for r in rows],
            "s--",
            color=line.get_color(),
            alpha=0.8,
            label=f"RP, K={big_k}",
        )
    ax_s.set(
        xscale="log",
        yscale="log",
        xlabel="M (Top-M@K; M = K is the mean)",
        ylabel="SNR |dJ/dmu| / sd",
        title=f"Top-M@K estimator SNR (N={config['snr_n']})",
    )
    ms = sorted({r["M"] for r in results["snr"]})
    ax_s.set_xticks(ms, [str(m) for m in ms])
    ax_s.set_xticks([], minor=True)
    ax_s.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    return save_figure(fig, path)


def format_tables(results: dict[str, Any]) -> str:
    """Runtime, bias and SNR tables (the variance table is in the JSON)."""
    rt, grad, config = results["runtime"], results["gradient"], results["config"]
    by_n, by_k = rt["vs_n"], rt["vs_k"]
    specs = list(by_n["calls"])
    n_rows = [
        [n, by_n["argsort"][i] * 1e3, *(by_n["calls"][s][i] * 1e3 for s in specs)] for i, n in enumerate(by_n["n"])
    ]
    k_rows = [
        [k, by_k["collapsed"][i] * 1e3, by_k["rankwise"][i] * 1e3, by_k["first_call_rankwise"][i] * 1e3]
        for i, k in enumerate(by_k["k"])
    ]
    bias_rows = [
        [r["objective"], r["exact_grad"], r["exact_bias"], r["lr_bias"], r["lr_se"], r["rp_bias"], r["rp_se"]]
        for r in grad["bias"]
    ]
    snr_rows = [
        [r["K"], r["M"], r["exact_grad"], r["lr_sd"], r["lr_snr"], r["rp_sd"], r["rp_snr"]] for r in grad["snr"]
    ]
    return "\n\n".join(
        [
            "Runtime of lstat_advantage vs N (ms per call, tables cached, best of repeats):",
            markdown_table(["N", "np.argsort", *specs], n_rows),
            f"Runtime vs k at N={by_k['n']}, cvar0.2@k (ms):",
            markdown_table(["k", "collapsed", "rankwise", "rankwise 1st call (tables)"], k_rows),
            f"x ~ N({grad['mu']}, 1), R = -x^2: exact d/dmu CVaR_0.2 = {grad['cvar_gradient']:.6f}. Bias w.r.t. it "
            f"(N={config['bias_n']}, {config['bias_reps']} estimates each; SE = standard error):",
            markdown_table(
                ["objective", "exact dJ_k", "exact bias", "LR bias", "LR SE", "RP bias", "RP SE"], bias_rows
            ),
            f"Top-M@K SNR = |exact dJ/dmu| / sd (N={config['snr_n']}, {config['snr_reps']} estimates):",
            markdown_table(["K", "M", "exact dJ", "LR sd", "LR SNR", "RP sd", "RP SNR"], snr_rows),
        ]
    )


# ---------------------------------------------------------------------------------------------------- command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl reproduce diagnostics``."""
    parser.add_argument("--quick", action="store_true", help="tiny grids and repeat counts (a smoke test, seconds)")
    parser.add_argument("--seed", type=seed_int, default=0, help="random seed (default: %(default)s)")
    refuse_option(parser, "--seeds", "diagnostics is one Monte-Carlo run: its seed is --seed, its repeats --reps")
    parser.add_argument(
        "--reps",
        type=sample_size_int,  # the panels' standard deviations and errors need two estimates
        default=None,
        help="repeated estimates per variance/SNR point, >= 2 (default: 4000; the bias panel uses 5x)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "diagnostics")


def run(args: argparse.Namespace) -> int:
    """Time, estimate, print the tables, write the two figures (and JSON)."""
    config = Config.quick(args.seed) if args.quick else Config(seed=args.seed)
    if args.reps is not None:
        config = dataclasses.replace(config, variance_reps=args.reps, snr_reps=args.reps, bias_reps=5 * args.reps)
    results = run_experiment(config, quiet=args.quiet)
    print(format_tables(results))
    results["figures"] = {
        "runtime": plot_runtime(results["runtime"], args.out / "diagnostics_runtime.png"),
        "gradient": plot_gradient(results, args.out / "diagnostics_gradient.png"),
    }
    print("\nfigures:\n" + "\n".join(f"  {path}" for path in results["figures"].values()))
    if args.json is not None:
        print(f"json: {write_json(args.json, results)}")
    return 0
