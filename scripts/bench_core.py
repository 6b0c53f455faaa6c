"""Benchmark of the estimator core's hot paths, each against a baseline timed in the same run.

    python scripts/bench_core.py [--repeats 200] [--big-objectives ...] [--skip-big] [--quick]

Targets (issue 15): per-call ``lstat_advantage`` at N = 10^4 with cached tables <= 1.5x a stable ``np.argsort``;
first call (tables built inside it) at N = 10^4, k = 100 <= 5 ms for every objective; at N = 10^5, k = 5*10^4
<= 5 s (and <= 1 GB) for every objective; known regime, 4096 states x 18 arms, top5@10 <= 5x ``torch.sort`` of
the same data; torch 4096 groups of N = 16, ``top2@4`` <= 3 ms. With no target: ``lstat_value`` (NumPy, and torch
with its backward pass, the RP estimator). Machines are noisy: the ratios are the figures to compare. Accuracy is
checked separately by ``scripts/check_accuracy.py``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from functools import partial

import numpy as np
import torch

from ordergrad_rl import OrderStatTransform, known_lstat_advantage, lstat_advantage, lstat_value
from ordergrad_rl.common.options import parse_quick_args, positive_int
from ordergrad_rl.common.reports import best_time, ratio_header, ratio_row
from ordergrad_rl.core import batch, weights

OBJECTIVES = [
    "mean", "cvar0.2", "uppertail0.2", "quantile0.1", "quantileweibull0.1", "quantileblom0.1", "topquantile0.1",
    "median", "top2", "bot2", "max", "min", "rank3", "trim10", "winsor10", "topbot10", "gmd", "lmoment2", "lmoment4",
    "harrelldavis0.5", "harrelldavis0.1", "rangelowertail0.1:0.3", "rangeuppertail0.1:0.3", "trimfrac0.1:0.2",
]  # fmt: skip
# At k = 5*10^4 the count objectives keep the fractions of k they have at k = 100.
BIG = {"trim10": "trim5000", "winsor10": "winsor5000", "topbot10": "topbot5000"}


def clear_caches() -> None:
    """Forget every cached table and objective (works on older versions of the core, too)."""
    clear = getattr(batch, "clear_caches", None)
    if clear is not None:
        clear()
    else:  # the core before issue 15
        weights._log_factorials.cache_clear()  # type: ignore[attr-defined]  # gone since issue 15
        batch._cached_transform.cache_clear()


def first_call(n: int, spec: str, k: int, x: np.ndarray) -> Callable[[], object]:
    """A first call: empty caches, new transform, tables built inside the timed call."""

    def run() -> object:
        clear_caches()
        return OrderStatTransform(n, spec, k=None if spec == "mean" else k).advantage(x)

    return run


def unsupported(err: ValueError) -> bool:
    """An objective this (older) version of the core does not know."""
    return "unknown objective" in str(err) or "malformed objective" in str(err)


def timed_or_none(fn: Callable[[], object], repeats: int) -> float | None:
    try:
        return best_time(fn, repeats)
    except ValueError as err:
        if unsupported(err):
            return None
        raise


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=positive_int, default=200)
    parser.add_argument(
        "--big-objectives",
        nargs="*",
        choices=OBJECTIVES,  # a typo is an error, not an "unsupported" row
        default=OBJECTIVES,
        metavar="SPEC",
        help="objectives of the N = 10^5 first calls, among those of the N = 10^4 ones (default: all)",
    )
    parser.add_argument("--skip-big", action="store_true", help="skip the N = 10^5, k = 5*10^4 first calls")
    args = parse_quick_args(parser, argv, {"repeats": 3, "skip_big": True})
    if args.skip_big and args.big_objectives != OBJECTIVES:
        parser.error("--big-objectives picks the N = 10^5 first calls, which --skip-big (and --quick) skip")
    torch.set_num_threads(1)  # one core, like the targets
    rng = np.random.default_rng(0)

    ratio_header()
    x = rng.normal(size=10_000)
    sort_1e4 = best_time(lambda: np.argsort(x, kind="stable"), args.repeats)
    ratio_row("np.argsort stable, N=1e4 (baseline)", sort_1e4, sort_1e4, "argsort N=1e4", "", None)
    for spec in ("cvar0.2", "gmd"):
        lstat_advantage(x, spec, k=100)
        cached = best_time(partial(lstat_advantage, x, spec, k=100), args.repeats)
        ratio_row(f"lstat_advantage {spec}@100, N=1e4, cached", cached, sort_1e4, "argsort N=1e4", "<= 1.5x",
            cached <= 1.5 * sort_1e4)  # fmt: skip
    groups = rng.normal(size=(256, 64))
    sort_groups = best_time(lambda: np.argsort(groups, axis=-1, kind="stable"), args.repeats)
    lstat_advantage(groups, "cvar0.25@16")
    grouped = best_time(lambda: lstat_advantage(groups, "cvar0.25@16"), args.repeats)
    ratio_row("np.argsort stable, 256 groups x 64 (baseline)", sort_groups, sort_groups, "argsort 256x64", "", None)
    ratio_row("lstat_advantage cvar0.25@16, 256 groups x 64", grouped, sort_groups, "argsort 256x64", "", None)
    # The value v^alpha: the agents log it every rollout; on torch it is the differentiable RP estimator.
    value = best_time(lambda: lstat_value(x, "cvar0.2@100"), args.repeats)
    ratio_row("lstat_value cvar0.2@100, N=1e4, cached", value, sort_1e4, "argsort N=1e4", "", None)
    xg = torch.randn(4096, 16, requires_grad=True)
    sort_grad = best_time(lambda: torch.sort(xg, dim=-1, stable=True).values.sum().backward(), args.repeats)
    value_grad = best_time(lambda: lstat_value(xg, "top2@4").sum().backward(), args.repeats)
    ratio_row("torch.sort + backward 4096x16 (baseline)", sort_grad, sort_grad, "sort+backward", "", None)
    ratio_row("lstat_value torch + backward 4096x16 top2@4", value_grad, sort_grad, "sort+backward", "", None)

    worst = 0.0
    for spec in OBJECTIVES:
        seconds: float | None = timed_or_none(first_call(10_000, spec, 100, x), 5)
        worst = max(worst, seconds or 0.0)
        ratio_row(f"first call {spec}@100, N=1e4", seconds, sort_1e4, "argsort N=1e4", "<= 5 ms",
            None if seconds is None else seconds <= 5e-3)  # fmt: skip

    if not args.skip_big:
        big = rng.normal(size=100_000)
        sort_1e5 = best_time(lambda: np.argsort(big, kind="stable"), 20)
        ratio_row("np.argsort stable, N=1e5 (baseline)", sort_1e5, sort_1e5, "argsort N=1e5", "", None)
        for spec in args.big_objectives:
            spec = BIG.get(spec, spec)
            tracemalloc.start()
            start = time.perf_counter()
            try:
                first_call(100_000, spec, 50_000, big)()
                seconds = time.perf_counter() - start
            except ValueError as err:
                if not unsupported(err):
                    raise
                seconds = None
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            label = f"first call {spec}@50000, N=1e5 (peak {peak / 2**20:.0f} MB)"
            ratio_row(label, seconds, sort_1e5, "argsort N=1e5", "<= 5 s, <= 1 GB",
                None if seconds is None else seconds <= 5.0 and peak <= 2**30)  # fmt: skip

    xt = torch.randn(4096, 16)
    sort_t = best_time(lambda: torch.sort(xt, dim=-1, stable=True), args.repeats)
    ratio_row("torch.sort 4096x16 (baseline)", sort_t, sort_t, "torch.sort 4096x16", "", None)
    lstat_advantage(xt, "top2@4")
    torch_time = best_time(lambda: lstat_advantage(xt, "top2@4"), args.repeats)
    ratio_row("lstat_advantage torch 4096x16 top2@4", torch_time, sort_t, "torch.sort 4096x16", "<= 3 ms",
        torch_time <= 3e-3)  # fmt: skip

    q = torch.randn(4096, 18)
    pi = torch.softmax(torch.randn(4096, 18), -1)
    sort_q = best_time(lambda: torch.sort(q, dim=-1, stable=True), args.repeats)
    known_time = best_time(lambda: known_lstat_advantage(q, pi, "top5@10"), args.repeats)
    ratio_row("torch.sort 4096x18 (baseline)", sort_q, sort_q, "torch.sort 4096x18", "", None)
    ratio_row("known_lstat_advantage 4096 states x 18, top5@10", known_time, sort_q, "torch.sort 4096x18", "<= 5x",
        known_time <= 5 * sort_q)  # fmt: skip

    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return
    xj = jnp.asarray(x)
    sort_j = jax.jit(lambda z: jnp.argsort(z, stable=True))
    adv_j = jax.jit(lambda z: lstat_advantage(z, "cvar0.2@100"))
    try:
        adv_j(xj).block_until_ready()
    except (TypeError, ValueError):  # an older core without JAX support
        ratio_row("lstat_advantage JAX jit cvar0.2@100, N=1e4", None, 1.0, "", "", None)
        return
    base = best_time(lambda: sort_j(xj).block_until_ready(), args.repeats)
    ratio_row("jnp.argsort stable jit, N=1e4 (baseline)", base, base, "jnp.argsort N=1e4", "", None)
    ratio_row("lstat_advantage JAX jit cvar0.2@100, N=1e4 (float32)", best_time(lambda: adv_j(xj).block_until_ready(),
        args.repeats), base, "jnp.argsort N=1e4", "", None)  # fmt: skip


if __name__ == "__main__":
    main()
