"""Torch threads for small policies: SB3 PPO (CartPole-v1, ``--steps`` 4096, default MLP) with 1 thread against torch's
default (one per core), timed in the same run; each setting in a fresh process (torch fixes its pool at start).

    python scripts/bench_threads.py [--repeats 3] [--steps 4096] [--quick]

Prints the best wall time of each setting and the ratio default / 1 thread. On a 2-core machine with another job
holding a core, torch's threads busy-wait for the core they do not get (issue 22: 2.6 s against 57.7 s).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

from ordergrad_rl.common.options import parse_quick_args, positive_int

CHILD = """
import sys, time, torch
from stable_baselines3 import PPO
steps = int(sys.argv[1])
model = PPO("MlpPolicy", "CartPole-v1", seed=0, n_steps=min(1024, steps), device="cpu")
start = time.perf_counter()
model.learn(steps)
print(time.perf_counter() - start, torch.get_num_threads())
"""


def timed(threads: int | None, steps: int) -> tuple[float, int]:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(steps)], env=env, capture_output=True, text=True, check=True
    ).stdout
    seconds, used = out.split()
    return float(seconds), int(used)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument(
        "--steps", type=positive_int, default=4096, help="env steps of each timed learn (rollouts of 1024, fewer below)"
    )
    args = parse_quick_args(parser, argv, {"repeats": 1, "steps": 64})
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeats):  # interleaved, so a change in the machine's load hits both settings
        for name, threads in (("1 thread", 1), ("torch default", None)):
            seconds, used = timed(threads, args.steps)
            if name not in best or seconds < best[name][0]:
                best[name] = (seconds, used)
    for name, (seconds, used) in best.items():
        print(f"{name:14s} ({used} threads): {seconds:6.2f} s")
    print(f"ratio default / 1 thread: {best['torch default'][0] / best['1 thread'][0]:.2f}")


if __name__ == "__main__":
    main()
