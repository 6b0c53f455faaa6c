"""Evaluate a saved model: run episodes and print the risk profile of their returns (or the pass@k curve).

    ordergrad-rl evaluate results/tailrisk/models/ordergrad_cvar_seed0.zip --env SyntheticTailRiskDeploy-v0 \\
        --episodes 1000 --deterministic --json eval.json
    ordergrad-rl evaluate model.zip --env TargetSum-v0 --env-kwargs split=test --pass-at-k 1024 --json passk.json

With --pass-at-k N the model samples N episodes per context and the table is the unbiased pass@k (paper eq.
passk; success is info["is_success"] at an episode's last step) for k = 1, 2, 4, ... <= N, averaged over the
contexts, with the mean length of correct and of incorrect episodes. Contexts are the env's own (context_key /
n_contexts, e.g. TargetSum's problems: all of them, or the first --contexts M), or for other envs the reset
seeds 0 .. M-1 (default M = 100).

The algorithm that saved the model is read from the file: every ordergrad-rl agent, Stable-Baselines3's PPO, A2C,
DQN, SAC, TD3 and DDPG, and sb3-contrib's RecurrentPPO, MaskablePPO, QRDQN, TQC, CrossQ, ARS and TRPO. The table
has the risk profile of the episode returns (mean, std, min, max, CVaR = mean of the worst a-fraction, Hazen
quantiles) and, when the env reports numeric step info, its per-episode summaries: the
mean over an episode's steps and the value at its last step, averaged over the episodes (on the tail-risk envs:
the portfolio weights of each asset, the wealth, the maximum drawdown, ...).

A model trained in VecNormalize (an entry's normalize in train's --conf-file) acts on normalized observations: its
statistics are loaded from beside it, as rl-zoo3's enjoy does (MODEL without .zip /vecnormalize.pkl, or a
checkpoint's NAME_vecnormalize_<steps>_steps.pkl), frozen, with raw rewards; a model that records a VecNormalize
whose statistics are missing is refused. A model trained in an entry's env_wrapper (and vec_env_wrapper,
frame_stack) acts in those wrappers (a FlattenObservation's flat observations, stacked frames): train --save writes
them beside it (MODEL without .zip /env_wrapper.yml, for its checkpoints too), and evaluate makes the env in them;
for a model in a run folder of rl-zoo3 (logs/ppo/CartPole-v1_1/best_model.zip --env CartPole-v1), those of the
run's CartPole-v1/config.yml, as rl-zoo3's enjoy does.

A model is evaluated on the env its run trained on, as rl-zoo3's enjoy makes it, from the args.yml that train --save
writes beside it (MODEL without .zip /args.yml; a checkpoint's run's), or for a model in a run folder of rl-zoo3 its
run's CartPole-v1/args.yml: its env where --env is not given (ordergrad-rl evaluate models/cliff), with the modules
of its gym_packages imported, and on that env id (not another, such as a deployment variant) its env_kwargs (an
rl-zoo3 run's config.yml's, replaced by its args.yml's), under --env-kwargs (a key given wins).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import (
    add_gym_packages_argument,
    file_path,
    import_gym_packages,
    parse_env_kwargs,
    positive_int,
    seed_int,
)
from ordergrad_rl.common.reports import markdown_table, write_json
from ordergrad_rl.zoo.models import (
    EnvWrappers,
    Evaluation,
    env_label,
    evaluate_model,
    load_model,
    model_env,
    pass_at_k_evaluation,
    saved_env_wrapper,
    saved_statistics,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl evaluate``."""
    parser.add_argument("model", type=Path, metavar="MODEL", help="a model saved with model.save (.zip)")
    parser.add_argument(
        "--env",
        default=None,
        metavar="ID",
        help="Gymnasium env id to evaluate on (default: the env of the args.yml beside the model, which train --save "
        "and rl-zoo3 write)",
    )
    add_gym_packages_argument(parser)
    parser.add_argument(
        "--episodes", type=positive_int, default=100, metavar="E", help="episodes (default: %(default)s)"
    )
    parser.add_argument(
        "--deterministic", action="store_true", help="act with the mean / most likely action (default: sample)"
    )
    parser.add_argument(
        "--seed", type=seed_int, default=0, help="seed of the env and the policy's sampling (default: 0)"
    )
    parser.add_argument(
        "--env-kwargs",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="env arguments (Python literals or text), and gym.make's max_episode_steps (a TimeLimit; -1: none), "
        "over those of the model's args.yml",
    )
    parser.add_argument(
        "--pass-at-k", type=positive_int, default=None, metavar="N", help="pass@k curve of N samples per context"
    )
    parser.add_argument(
        "--contexts", type=positive_int, default=None, metavar="M", help="pass@k: the first M contexts (see above)"
    )
    parser.add_argument("--json", type=file_path, default=None, metavar="PATH", help="also write the results to PATH")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def format_evaluation(evaluation: Evaluation) -> str:
    """The risk-profile table, and the step-info table when the env reports numeric info."""
    text = markdown_table(["return statistic", "value"], list(evaluation.profile().items()))
    rows = evaluation.info_rows()
    if rows:
        headers = ["step info", "mean over steps", "at episode end"]
        text += "\n\n" + markdown_table(headers, [[name, *("-" if v is None else v for v in vs)] for name, *vs in rows])
    return text


def run_pass_at_k(
    args: argparse.Namespace,
    model: Any,
    algorithm: Any,
    env_kwargs: dict[str, Any],
    statistics: Path | None,
    env_wrapper: EnvWrappers = (),
    option: str = "--env-kwargs",
) -> int:
    """``--pass-at-k``: sample, print the curve and the lengths (and write the JSON); ``option`` names where
    ``env_kwargs`` come from in the errors about them (:attr:`~ordergrad_rl.zoo.models.ModelEnv.option`)."""
    result = pass_at_k_evaluation(
        model, args.env, args.pass_at_k, args.contexts, args.deterministic, args.seed, args.quiet, env_kwargs,
        statistics, env_wrapper, option,
    )  # fmt: skip
    policy = "deterministic" if args.deterministic else "stochastic"
    print(
        f"{algorithm.name} model {args.model} on {env_label(args.env, env_kwargs)}: {result.n_samples} samples per "
        f"context, {len(result.contexts)} contexts, {policy} policy\n"
    )
    curve = result.curve()
    print(markdown_table(["k", "pass@k"], [[k, v] for k, v in curve.items()]))
    lengths = result.mean_lengths()
    if lengths:
        print("\n" + markdown_table(["episodes", "mean length"], [[n.split("_")[1], v] for n, v in lengths.items()]))
    if args.json is not None:
        payload: dict[str, Any] = {
            "model": args.model,
            "algorithm": algorithm.name,
            "env": args.env,
            "env_kwargs": env_kwargs,
            "n_samples": result.n_samples,
            "deterministic": args.deterministic,
            "seed": args.seed,
            "pass_at_k": {str(k): v for k, v in curve.items()},
            **lengths,
            "contexts": result.contexts,
            "n_correct": result.n_correct,
        }
        print(f"\njson: {write_json(args.json, payload)}")
    return 0


def run(args: argparse.Namespace) -> int:
    """Load, evaluate, print the tables (and write the JSON)."""
    import_gym_packages(args.gym_packages)
    model, algorithm = load_model(args.model)
    # Its run's env, gym_packages and env_kwargs (args.yml; an rl-zoo3 run's config.yml too), as rl-zoo3's enjoy.
    made = model_env(args.model, args.env, parse_env_kwargs(args.env_kwargs))
    args.env, env_kwargs = made.env, made.env_kwargs
    statistics = saved_statistics(args.model, args.env)  # VecNormalize's, as rl-zoo3's enjoy loads them
    env_wrapper = saved_env_wrapper(args.model, args.env)  # the wrappers it trained in, as enjoy reads config.yml
    if args.pass_at_k is not None:
        return run_pass_at_k(args, model, algorithm, env_kwargs, statistics, env_wrapper, made.option)
    if args.contexts is not None:
        raise CommandError("--contexts is for --pass-at-k")
    evaluation = evaluate_model(
        model, args.env, args.episodes, args.deterministic, args.seed, args.quiet, env_kwargs, statistics, env_wrapper,
        made.option,
    )  # fmt: skip
    policy = "deterministic" if args.deterministic else "stochastic"
    episodes = f"{args.episodes} episodes, {policy} policy"
    print(f"{algorithm.name} model {args.model} on {env_label(args.env, env_kwargs)}: {episodes}\n")
    print(format_evaluation(evaluation))
    if args.json is not None:
        payload: dict[str, Any] = {
            "model": args.model,
            "algorithm": algorithm.name,
            "env": args.env,
            "env_kwargs": env_kwargs,
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
