"""Compare the return distributions of saved models and TensorBoard runs side by side.

    ordergrad-rl compare results/tailrisk/models/reinforce_seed0.zip results/tailrisk/models/ordergrad_cvar_seed0.zip \\
        --env SyntheticTailRiskDeploy-v0 --episodes 1000 --out results/compare
    ordergrad-rl compare runs/tailrisk            # every run of a TensorBoard log dir

Each argument is either
  * a saved model (.zip, or its path without .zip as evaluate takes it; every ordergrad-rl agent,
    Stable-Baselines3's PPO, A2C, DQN, SAC, TD3 and DDPG, and sb3-contrib's RecurrentPPO, MaskablePPO, QRDQN, TQC,
    CrossQ, ARS and TRPO): --episodes deterministic episodes on --env, the risk profile of their returns, exact
    quantile function and histogram; or
  * a TensorBoard run directory written by the OrderGrad agents: the last logged eval_risk/* scalars (the
    evaluation callback), or risk/* (training batches) if the run has no evaluations, and the last
    <same prefix>/episode_returns histogram (quantile function interpolated from its buckets). A log dir
    stands for every run below it (runs of one method may share a parent: runs/tailrisk/ordergrad_cvar/seed0_1),
    each named by its path below it, as TensorBoard lists it.
Entries of one method share a colour: the method of an entry is its name without the seed and SB3's run counter
(ordergrad_cvar_seed3.zip and ordergrad_cvar/seed0_1 -> ordergrad_cvar, OrderGradPPO_cvar0.2@128_2 ->
OrderGradPPO_cvar0.2@128, env1/cvar/seed0_1 below a log dir -> env1/cvar, as `dashboard` groups runs); several
seeds of a method are thin lines of its colour.
Prints one risk table (a row per entry) and writes a figure of the quantile functions (return against probability
level) and the return histograms: --figure PATH, else <--out>/compare_<inputs>.png named after the arguments
(compare_reinforce_seed0_vs_ordergrad_cvar_seed0.png, compare_tailrisk.png), so comparisons of different inputs
do not overwrite each other.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ordergrad_rl.common.options import (
    add_gym_packages_argument,
    add_output_arguments,
    file_path,
    import_gym_packages,
    parse_env_kwargs,
    positive_int,
    seed_int,
)
from ordergrad_rl.common.reports import write_json
from ordergrad_rl.zoo.compare import figure_name, format_table, load_entries, plot


def figure_path(args: argparse.Namespace) -> Path:
    """``--figure``, else ``<--out>/`` :func:`figure_name` of the arguments."""
    return args.figure if args.figure is not None else args.out / figure_name(args.entries)


# ---------------------------------------------------------------------------------------------------- command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl compare``."""
    parser.add_argument(
        "entries", type=Path, nargs="+", metavar="MODEL_OR_RUN", help="saved models and/or TensorBoard run dirs"
    )
    parser.add_argument(
        "--env",
        default=None,
        metavar="ID",
        help="env id to evaluate the saved models on (default: each one's, from the args.yml beside it, which train "
        "--save and rl-zoo3 write)",
    )
    add_gym_packages_argument(parser)
    parser.add_argument(
        "--env-kwargs",
        nargs="+",
        default=[],
        metavar="KEY=VALUE",
        help="arguments of the models' env (Python literals or text), and gym.make's max_episode_steps, as evaluate "
        "takes them, over those of each model's args.yml",
    )
    parser.add_argument(
        "--episodes",
        type=positive_int,
        default=256,
        metavar="E",
        help="evaluation episodes per saved model (default: %(default)s)",
    )
    parser.add_argument("--seed", type=seed_int, default=0, help="seed of the evaluation envs (default: 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "compare")
    parser.add_argument(
        "--figure",
        type=file_path,
        default=None,
        metavar="PATH",
        help="write the figure to PATH (default: <--out>/compare_<inputs>.png, named after the arguments)",
    )


def run(args: argparse.Namespace) -> int:
    """Read/evaluate every entry, print the table, write the figure (and JSON)."""
    import_gym_packages(args.gym_packages)
    env_kwargs = parse_env_kwargs(args.env_kwargs)
    entries = load_entries(args.entries, args.env, args.episodes, args.seed, args.quiet, env_kwargs)
    for entry in entries:
        print(f"{entry.label}: {entry.source}")
    print()
    print(format_table(entries))
    figure = plot(entries, figure_path(args))
    print(f"\nfigure: {figure}")
    if args.json is not None:
        payload = {
            "entries": [
                {"label": e.label, "path": e.path, "source": e.source, "profile": e.profile}
                | ({} if e.returns is None else {"returns": e.returns})
                for e in entries
            ]
        }
        print(f"json: {write_json(args.json, payload)}")
    return 0
