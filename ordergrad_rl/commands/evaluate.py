"""Evaluate a saved model: run episodes and print the risk profile of their returns.

    ordergrad-rl evaluate results/tailrisk/models/ordergrad_cvar_seed0.zip --env SyntheticTailRiskDeploy-v0 \\
        --episodes 1000 --deterministic --json eval.json

The algorithm that saved the model (OrderGradPPO, OrderGradREINFORCE, or Stable-Baselines3's PPO / A2C) is read
from the file. The table has the risk profile of the episode returns (mean, std, min, max, CVaR = mean of the
worst a-fraction, Hazen quantiles) and, when the env reports numeric step info, its per-episode summaries: the
mean over an episode's steps and the value at its last step, averaged over the episodes (on the tail-risk envs:
the portfolio weights of each asset, the wealth, the maximum drawdown, ...).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ordergrad_rl.commands._models import Evaluation, evaluate_model, load_model
from ordergrad_rl.experiments._common import markdown_table, positive_int, seed_int, write_json


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl evaluate``."""
    parser.add_argument("model", type=Path, metavar="MODEL", help="a model saved with model.save (.zip)")
    parser.add_argument("--env", required=True, metavar="ID", help="Gymnasium env id to evaluate on")
    parser.add_argument(
        "--episodes", type=positive_int, default=100, metavar="E", help="episodes (default: %(default)s)"
    )
    parser.add_argument(
        "--deterministic", action="store_true", help="act with the mean / most likely action (default: sample)"
    )
    parser.add_argument(
        "--seed", type=seed_int, default=0, help="seed of the env and the policy's sampling (default: 0)"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the results to PATH")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def format_evaluation(evaluation: Evaluation) -> str:
    """The risk-profile table, and the step-info table when the env reports numeric info."""
    text = markdown_table(["return statistic", "value"], list(evaluation.profile().items()))
    rows = evaluation.info_rows()
    if rows:
        headers = ["step info", "mean over steps", "at episode end"]
        text += "\n\n" + markdown_table(headers, [[name, *("-" if v is None else v for v in vs)] for name, *vs in rows])
    return text


def run(args: argparse.Namespace) -> int:
    """Load, evaluate, print the tables (and write the JSON)."""
    model, algorithm = load_model(args.model)
    evaluation = evaluate_model(model, args.env, args.episodes, args.deterministic, args.seed, args.quiet)
    policy = "deterministic" if args.deterministic else "stochastic"
    print(f"{algorithm.name} model {args.model} on {args.env}: {args.episodes} episodes, {policy} policy\n")
    print(format_evaluation(evaluation))
    if args.json is not None:
        payload: dict[str, Any] = {
            "model": args.model,
            "algorithm": algorithm.name,
            "env": args.env,
            "episodes": args.episodes,
            "deterministic": args.deterministic,
            "seed": args.seed,
            "profile": evaluation.profile(),
            "info": evaluation.info,
            "returns": evaluation.returns,
            "lengths": evaluation.lengths,
        }
        print(f"\njson: {write_json(args.json, payload)}")
    return 0
