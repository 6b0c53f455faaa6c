"""Does the soft risk schedule keep the portfolio result? The README's usage line on SyntheticTailRisk-v0
(OrderGradPPO, objective="cvar0.2", 200k steps) with and without ``risk_schedule``, deployed like ``reproduce
tailrisk`` (256 deterministic paths of SyntheticTailRiskDeploy-v0 on the reproduction's deployment seeds).
``--agent reinforce`` measures OrderGradREINFORCE's usage line the same way.

    python scripts/measure_schedule_portfolio.py [--agent {ppo,reinforce}] [--seeds 8] [--first-seed 0]
        [--schedules none level] [--n-episodes N] [--value-baseline [{state,history,none}]] [--baseline-lambda L]
        [--normalize-advantage {true,false,running}] [--novelty-phase F] [--log-std-step DELTA]

Prints the profitable share P(W_T > 1) per seed and pooled over seeds, for each schedule (the same seeds).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.common.options import positive_int, seed_int
from ordergrad_rl.experiments.tailrisk import DEPLOY_OFFSET, SEED_STRIDE, TRAIN_ENV, deploy, deployment_metrics


def build(args: argparse.Namespace, schedule: str, seed: int) -> Any:
    """The agent of ``args.agent`` with the settings of ``args``, the risk schedule ``schedule``, seed ``seed``."""
    agent = {"ppo": OrderGradPPO, "reinforce": OrderGradREINFORCE}[args.agent]
    normalize = {"true": True, "false": False, "default": None}.get(args.normalize_advantage, args.normalize_advantage)
    return agent(
        "MlpPolicy", TRAIN_ENV, objective="cvar0.2", seed=seed * SEED_STRIDE,
        risk_schedule=None if schedule == "none" else schedule, n_episodes=args.n_episodes,
        value_baseline={None: None, "state": True, "none": False}.get(args.value_baseline, args.value_baseline),
        baseline_lambda=args.baseline_lambda, normalize_advantage=normalize, novelty_phase=args.novelty_phase,
        **({} if args.log_std_step is None else {"log_std_step": args.log_std_step}),
    )  # fmt: skip


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", choices=["ppo", "reinforce"], default="ppo", help="default: %(default)s")
    parser.add_argument("--seeds", type=positive_int, default=8)
    parser.add_argument("--first-seed", type=seed_int, default=0, help="seeds F, F+1, ... (default: %(default)s)")
    parser.add_argument("--schedules", nargs="+", default=["none", "level"])
    parser.add_argument("--timesteps", type=positive_int, default=200_000)
    parser.add_argument(
        "--n-episodes", type=positive_int, default=None, help="episodes per update (default: the agent's)"
    )
    parser.add_argument(
        "--value-baseline", nargs="?", const="state", choices=["state", "history", "none"], default=None,
        help="per-step credit: the value baseline V(s) ('state', the flag alone; the agent's default here), the "
        "history baseline or 'none' (whole-episode weights)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline-lambda", type=float, default=None,
        help="lambda of the weights' lambda-returns over the baseline (default: the agent's; 1: w - b_t, as measured "
        "before the default)",
    )  # fmt: skip
    parser.add_argument(
        "--normalize-advantage", choices=["true", "false", "running", "default"], default="true",
        help="the episode weights' scale: each rollout's std (the scale of the README's measurements with this script "
        "before the running scale became the agents' default), none, a running scale, or the agent's default",
    )  # fmt: skip
    parser.add_argument(
        "--novelty-phase", type=float, default=0.0,
        help="the share of training whose rollouts train on their episodes' novelty (default: %(default)s, none)",
    )  # fmt: skip
    parser.add_argument(
        "--log-std-step", type=float, default=None,
        help="OrderGradPPO's log_std_step: fit the Gaussian's log-std outside the clip, within this bound per update "
        "(default: off)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    for schedule in args.schedules:
        # The agent's own checks of the settings (a schedule's name, n_episodes >= 2, ...), before any training.
        try:
            build(args, schedule, args.first_seed)
        except ValueError as err:
            parser.error(f"schedule {schedule!r} with these settings: {err}")
    for schedule in args.schedules:
        shares = []
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            model = build(args, schedule, seed)
            model.learn(args.timesteps)
            metrics = deployment_metrics(deploy(model, 256, seed * SEED_STRIDE + DEPLOY_OFFSET))
            shares.append(metrics["profitable"])
            print(f"{schedule:8s} seed {seed}: profitable {metrics['profitable']:.1%}", flush=True)
        print(f"{schedule:8s} pooled over {args.seeds} seeds: {np.mean(shares):.1%} (min {np.min(shares):.1%})\n")


if __name__ == "__main__":
    main()
