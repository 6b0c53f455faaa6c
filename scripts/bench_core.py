"""Benchmark of the estimator core's hot paths, each against a baseline timed in the same run.

    python scripts/bench_core.py [--repeats 200]

Targets (issue "Core"): per-call ``lstat_advantage`` at N = 10^4 <= 1.5x a stable ``np.argsort``; table build
for N = 10^4, k = 100 <= 100 ms; N = 10^5, k = 5*10^4 cvar <= 5 s and <= 1 GB; torch 4096 groups of N = 16,
``top2@4`` <= 3 ms per call on the CPU. Machines are noisy: the ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable

import numpy as np
import torch

from ordergrad_rl import OrderStatTransform, known_lstat_advantage, lstat_advantage
from ordergrad_rl.core import weights
from ordergrad_rl.experiments._common import best_time


def fresh_build(n: int, spec: str, x: np.ndarray) -> Callable[[], object]:
    """A first call: new transform, empty log-factorial cache, tables built inside the timed call."""

    def run() -> object:
        weights._log_factorials.cache_clear()
        return OrderStatTransform(n, spec).advantage(x)

    return run


def row(label: str, seconds: float, baseline: float, base_label: str, target: str) -> None:
    print(f"{label:<46} {seconds * 1e3:10.3f} ms  {seconds / baseline:8.2f}x {base_label:<22} {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one core, like the targets
    rng = np.random.default_rng(0)

    print(f"{'measurement':<46} {'time':>13}  {'ratio':>9} {'baseline':<22} target")
    x = rng.normal(size=10_000)
    sort_1e4 = best_time(lambda: np.argsort(x, kind="stable"), args.repeats)
    row("np.argsort stable, N=1e4 (baseline)", sort_1e4, sort_1e4, "argsort N=1e4", "")
    lstat_advantage(x, "cvar0.2", k=100)
    row(
        "lstat_advantage cvar0.2@100, N=1e4, cached",
        best_time(lambda: lstat_advantage(x, "cvar0.2", k=100), args.repeats),
        sort_1e4,
        "argsort N=1e4",
        "<= 1.5x",
    )
    t = OrderStatTransform(10_000, "gmd@100")
    t.advantage(x)
    row("OrderStatTransform.advantage gmd@100, cached", best_time(lambda: t.advantage(x), args.repeats), sort_1e4,
        "argsort N=1e4", "<= 1.5x")  # fmt: skip

    for spec in ("cvar0.2@100", "top2@100", "quantile0.1@100", "gmd@100"):
        build = best_time(fresh_build(10_000, spec, x), 5)
        row(f"first call (tables) {spec}, N=1e4", build, sort_1e4, "argsort N=1e4", "<= 100 ms")

    big = rng.normal(size=100_000)
    sort_1e5 = best_time(lambda: np.argsort(big, kind="stable"), 20)
    tracemalloc.start()
    start = time.perf_counter()
    fresh_build(100_000, "cvar0.2@50000", big)()
    build_big = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    row("first call cvar0.2@50000, N=1e5", build_big, sort_1e5, "argsort N=1e5", "<= 5 s, <= 1 GB")
    print(f"{'  peak memory of that call':<46} {peak / 2**20:10.1f} MB")

    xt = torch.randn(4096, 16)
    sort_t = best_time(lambda: torch.sort(xt, dim=-1, stable=True), args.repeats)
    row("torch.sort 4096x16 (baseline)", sort_t, sort_t, "torch.sort 4096x16", "")
    lstat_advantage(xt, "top2@4")
    row("lstat_advantage torch 4096x16 top2@4", best_time(lambda: lstat_advantage(xt, "top2@4"), args.repeats),
        sort_t, "torch.sort 4096x16", "<= 3 ms")  # fmt: skip

    q = torch.randn(4096, 18)
    pi = torch.softmax(torch.randn(4096, 18), -1)
    sort_q = best_time(lambda: torch.sort(q, dim=-1, stable=True), args.repeats)
    known_time = best_time(lambda: known_lstat_advantage(q, pi, "top5@10"), args.repeats)
    row("known_lstat_advantage 4096 states x 18, top5@10", known_time, sort_q, "torch.sort 4096x18", "")


if __name__ == "__main__":
    main()
