"""A probe of directed exploration on the point navigation: novelty weights for a first phase of training.

    python scripts/probe_nav_novelty_phase.py [--seeds 0 1 ...] [--fraction 0.3] [--timesteps 300000]
                                              [--json out.json] [--quick]

The usage line without its risk schedule (``reproduce benchmarks``' ``og-cvar-nosched``) on ``RiskyShortcutNav-v2``,
except that for the first ``--fraction`` of training each rollout trains on its episodes' novelty weights
(:func:`~ordergrad_rl.agents.common.novelty.episode_novelty`, standardized: how far an episode's states went from the
rollout's average state) instead of its CVaR_0.2 advantages: OrderGradPPO's ``novelty_phase=<fraction>`` (the probe's
first version patched the agent to the same effect, bit for bit: ``tests/test_novelty_phase.py``). Without the schedule
4 of 10 seeds stop at the wall beside the risky gap, where a move into the wall is cancelled and the time-outs' shaped
returns punish climbing towards the safe detour; the novelty phase asks whether steering towards new states frees them.
Not a library default: a probe whose runs are in ``docs/measurements/nav_v2_novelty_phase_probe.json``
(docs/benchmarks.md).

Scored as ``reproduce benchmarks`` scores the navigation: the greedy policy exactly
(:func:`~ordergrad_rl.experiments.benchmarks.deterministic_score`, with a curve every 15k steps), the stochastic
one on 100 evaluation episodes (:func:`~ordergrad_rl.experiments.benchmarks.sampled_score`). ``--quick`` (CI): 2,000
steps, 20 episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from ordergrad_rl.common.options import parser_check_outputs
from ordergrad_rl.experiments import benchmarks as bench

#: The usage line without its schedule, as ``reproduce benchmarks`` builds it.
METHOD = "og-cvar-nosched"
#: Env steps between two exact greedy scores of the curve.
CURVE_EVERY = 15_000


def build(seed: int, fraction: float) -> Any:
    """The no-schedule usage line on the navigation with ``novelty_phase=fraction``."""
    return bench.build_model(method(fraction), "nav", seed)


def method(fraction: float) -> bench.Method:
    """``og-cvar-nosched`` with ``novelty_phase=fraction``."""
    unscheduled = bench.METHODS[METHOD]
    return dataclasses.replace(unscheduled, kwargs={**unscheduled.kwargs, "novelty_phase": fraction})


def run(seed: int, fraction: float, timesteps: int, episodes: int) -> dict:
    """Train and score one seed as ``reproduce benchmarks`` does (:func:`~ordergrad_rl.experiments.benchmarks.run_one`,
    under a method name of its own registered for the run)."""
    name = f"{METHOD}-novphase{fraction:g}"
    bench.METHODS.setdefault(name, method(fraction))
    checkpoints = max(1, timesteps // CURVE_EVERY)
    return {**bench.run_one("nav", name, seed, timesteps, checkpoints, episodes), "fraction": fraction}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fraction", type=float, default=0.3, help="the novelty phase's share of training")
    bench.add_probe_arguments(parser, timesteps=300_000)
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    if not 0.0 <= args.fraction <= 1.0:
        parser.error(f"--fraction must be in [0, 1], got {args.fraction}")
    timesteps, episodes = bench.probe_budget(args)
    return bench.run_seeds(lambda seed: run(seed, args.fraction, timesteps, episodes), args.seeds, args.json, "nav")


if __name__ == "__main__":
    main()
