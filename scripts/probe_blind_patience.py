"""A probe of how long the usage line waits on blind rollouts before ``novelty_when_blind`` acts.

    python scripts/probe_blind_patience.py --patience 32 [--task acrobot] [--seeds 0 1 ...] [--timesteps 100000]
                                           [--json out.json] [--quick]

A rollout whose every return ties, with nothing else seen in training (Acrobot-v1's uniform start: every episode
times out at -500), ranks nothing. The usage line trains such rollouts as they are until
:data:`~ordergrad_rl.agents.common.novelty.BLIND_PATIENCE_EPISODES` (96) blind episodes have passed, then on their
episodes' novelty. The wait was measured with 32-episode rollouts (three rollouts). Since 2026-12-05 a 100k-step
budget halves Acrobot's rollout to 16 episodes, so the same wait is six rollouts, 48k of the 100k steps at the
500-step limit. This probe trains the usage line (``reproduce benchmarks``' ``og-cvar``) with another wait,
``--patience`` episodes, through the class attribute
:attr:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin.blind_patience_episodes`. A seed that swings up
by chance within the shorter wait trains bit for bit as the usage line does. Not a library option: the runs are
reported in docs/benchmarks.md.

Scored as ``reproduce benchmarks`` scores the task (:func:`~ordergrad_rl.experiments.benchmarks.run_one`, under a
method name of its own, ``og-cvar-patience<N>``): the worst 20% of 100 greedy and 100 sampled evaluation returns.
``--quick`` (CI): 2,000 steps, 20 episodes.
"""

from __future__ import annotations

import argparse
import dataclasses

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common.novelty import BLIND_PATIENCE_EPISODES
from ordergrad_rl.common.options import parser_check_outputs
from ordergrad_rl.experiments import benchmarks as bench


def agent_class(patience: int) -> type[OrderGradPPO]:
    """OrderGradPPO waiting ``patience`` blind episodes before novelty acts: a class, as ``reproduce benchmarks``
    builds its runs from one."""
    if patience < 0:
        raise ValueError(f"patience must be a count of episodes >= 0, got {patience}")
    return type(OrderGradPPO.__name__, (OrderGradPPO,), {"blind_patience_episodes": patience})


def method_name(patience: int) -> str:
    """The probe's method name for a wait of ``patience`` episodes, registered for its runs."""
    return f"og-cvar-patience{patience}"


def run(task: str, seed: int, timesteps: int, episodes: int, patience: int) -> dict:
    """Train and score one seed as ``reproduce benchmarks`` does, OrderGradPPO waiting ``patience`` episodes."""
    base = bench.METHODS["og-cvar"]
    method = dataclasses.replace(base, label=f"the usage line, novelty after {patience} blind episodes")
    return bench.run_with_agent(task, method, method_name(patience), agent_class(patience), seed, timesteps, episodes)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=bench.BLIND_TASKS, default=bench.BLIND_TASKS[0])
    parser.add_argument(
        "--patience", type=int, default=BLIND_PATIENCE_EPISODES, help="blind episodes trained before novelty acts"
    )
    bench.add_probe_arguments(parser, timesteps=100_000)
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    timesteps, episodes = bench.probe_budget(args)
    return bench.run_seeds(
        lambda seed: run(args.task, seed, timesteps, episodes, args.patience), args.seeds, args.json, args.task
    )


if __name__ == "__main__":
    main()
