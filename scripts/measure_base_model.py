"""Build the TargetSum base model and measure its coverage on the test split (the numbers quoted in the README).

Builds with the default configuration (no cache unless ``--cache``), then samples ``--n`` answers per test problem
with the batched sampler and prints: the build time, the pass@k curve (k = 1, 2, 4, ..., 256), pass@1 and pass@256 by
difficulty tier, the mean length of right and wrong answers, and the sampler's speed against re-reading every
observation (a baseline timed in the same run, on a subset). One thread. With ``--n`` below 256 (pass@k needs
k <= n), the curve and the tiers stop at the largest power of two <= ``--n``.

    python scripts/measure_base_model.py [--n 1024] [--cache] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from contextlib import nullcontext
from unittest.mock import patch

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch as th  # noqa: E402

from ordergrad_rl.common.options import parser_check_outputs, positive_int  # noqa: E402
from ordergrad_rl.envs.target_sum import target_sum_problems  # noqa: E402
from ordergrad_rl.passk import default_ks, pass_at_k  # noqa: E402
from ordergrad_rl.reasoning import build_base_model, evaluate_pass_at_k, sample_answers, sampling  # noqa: E402


def sampler_speed(policy, n_problems: int = 20, n: int = 256) -> dict[str, float]:
    """Answers per second of the incremental sampler and of the re-reading one (same policy, same problems)."""
    ids = np.arange(n_problems)
    rates = {}
    for name in ("incremental", "re-reading"):
        # The class is swapped on purpose for the re-reading run: sample_answers then takes its generic path.
        swap = patch.object(sampling, "TokenGRUExtractor", type("NotAGru", (), {}))
        with swap if name == "re-reading" else nullcontext():
            start = time.perf_counter()
            sample_answers(policy, ids, n, seed=1)
            rates[name] = n_problems * n / (time.perf_counter() - start)
    return rates


#: The largest k of the printed pass@k curve and of the per-tier pass@k (the README's numbers, at --n 1024).
MAX_K = 256


def largest_k(n: int) -> int:
    """The largest k reported with ``n`` answers per problem: the largest power of two <= ``min(n, MAX_K)``
    (pass@k needs k <= n)."""
    return int(default_ks(min(n, MAX_K))[-1])


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=positive_int, default=1024, help="answers per test problem (default: %(default)s)")
    parser.add_argument("--cache", action="store_true", help="read/write the default cache instead of rebuilding")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the build and the sampling, not after them
    th.set_num_threads(1)
    top = largest_k(args.n)

    start = time.perf_counter()
    base = build_base_model(use_cache=args.cache)
    build = time.perf_counter() - start
    print(f"build: {base.build_seconds:.1f} s (this call {build:.1f} s), load average {os.getloadavg()[0]:.1f}")
    print("imitation loss per epoch:", " ".join(f"{loss:.3f}" for loss in base.history))

    start = time.perf_counter()
    report = evaluate_pass_at_k(base.policy, args.n, seed=0)
    evaluation = time.perf_counter() - start
    config = base.config
    problems = target_sum_problems("test", config.problem_seed, config.n_train, config.n_test)
    print(f"evaluation: {len(problems)} test problems x {args.n} answers in {evaluation:.1f} s")
    curve = {k: v for k, v in report["pass_at_k"].items() if k <= top}
    print("pass@k:", "  ".join(f"{k}: {v:.3f}" for k, v in curve.items()))
    right, wrong = report["mean_length_correct"], report["mean_length_incorrect"]
    print(f"mean answer length: right {right:.2f} tokens, wrong {wrong:.2f} tokens (x{wrong / right:.2f})")
    counts = np.array(report["n_correct"])
    tiers = {}
    for terms in range(1, 6):
        rows = problems.min_terms == terms
        p1, p_top = pass_at_k(counts[rows], args.n, 1).mean(), pass_at_k(counts[rows], args.n, top).mean()
        tiers[terms] = {"problems": int(rows.sum()), "pass@1": float(p1), f"pass@{top}": float(p_top)}
        print(f"  fewest terms {terms}: {rows.sum():3d} problems, pass@1 {p1:.3f}, pass@{top} {p_top:.3f}")
    print(f"problems never solved in {args.n} answers: {(counts == 0).sum()} of {len(counts)}")
    rates = sampler_speed(base.policy)
    ratio = rates["incremental"] / rates["re-reading"]
    fast, slow = rates["incremental"], rates["re-reading"]
    print(f"sampler: {fast:,.0f} answers/s incremental, {slow:,.0f} re-reading (x{ratio:.1f})")
    if args.json:
        report.update(build_seconds=base.build_seconds, history=base.history, tiers=tiers, sampler=rates)
        with open(args.json, "w") as handle:
            json.dump(report, handle, indent=1)


if __name__ == "__main__":
    main()
