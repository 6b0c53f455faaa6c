"""OrderGradMaskablePPO's ``critic_when_tied`` on CartPole-v1, every action allowed: with it against without it.

    python scripts/measure_mask_tied_critic.py [--seeds 0 1 2 3 4] [--timesteps 100000] [--json out.json] [--quick]

The usage line of ``reproduce benchmarks``' ``og-mask-cvar`` (OrderGradMaskablePPO, ``objective="cvar0.2"``, its
defaults, the env in sb3-contrib's ``ActionMasker`` with every action valid,
:func:`~ordergrad_rl.experiments.benchmarks.build_model`) trained with ``critic_when_tied=True`` and ``False`` on
the same seeds, one run after the other, and scored as the harness scores CartPole-v1 for OrderGradPPO: the worst
20% (20) of 100 greedy and of 100 sampled evaluation returns, on envs seeded apart from training's
(:func:`~ordergrad_rl.experiments.benchmarks.eval_seed`). The harness runs this class on the tabular tasks only (its
Monte Carlo scoring builds the evaluation env without masks); here the evaluation env is wrapped in the same
``ActionMasker``. The results are in docs/measurements/mask_tied_critic_probe.json and the class's docstring.
``--quick`` (CI): 2,000 steps, 20 episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from typing import Any

import torch as th
from tqdm.auto import tqdm

from ordergrad_rl.common.options import parser_check_outputs
from ordergrad_rl.common.progress import rollout_progress
from ordergrad_rl.experiments import benchmarks as bench
from ordergrad_rl.zoo.models import evaluate_model

TASK = "cartpole"
#: Every action valid in the evaluation envs too: sb3-contrib's ActionMasker, as build_model wraps the training env.
MASKER = (("sb3_contrib.common.wrappers.ActionMasker", {"action_mask_fn": bench.all_actions_valid}),)


def run(seed: int, critic_when_tied: bool, timesteps: int, episodes: int, bar: Any) -> dict[str, Any]:
    """Train and score one seed of the usage line with ``critic_when_tied``."""
    th.set_num_threads(1)
    base = bench.METHODS["og-mask-cvar"]
    method = dataclasses.replace(base, kwargs={**base.kwargs, "critic_when_tied": critic_when_tied})
    model = bench.build_model(method, TASK, seed)
    ties: list[bool] = []  # per rollout: tied at the best return seen (the rollouts the critic trains)
    compute = model._compute_advantages

    def counted() -> None:
        compute()
        ties.append(bool(model._rollout_tied_at_best and not model._rollout_blind))

    model._compute_advantages = counted
    start = time.perf_counter()
    model.learn(timesteps, callback=rollout_progress(timesteps, bar.update))
    result: dict[str, Any] = {
        "task": TASK,
        "method": "og-mask-cvar",
        "critic_when_tied": critic_when_tied,
        "seed": seed,
        "timesteps": int(model.num_timesteps),
        "seconds": time.perf_counter() - start,
        "n_episodes": int(model.n_episodes),
        "rollouts": len(ties),
        "tied_at_best": sum(ties),
        "eval_seed": bench.eval_seed(seed),
    }
    env_id = bench.TASKS[TASK].env_id
    for mode, deterministic in (("greedy", True), ("stochastic", False)):
        evaluation = evaluate_model(
            model, env_id, episodes, deterministic, seed=bench.eval_seed(seed), quiet=True, env_wrapper=MASKER
        )
        profile = evaluation.profile()
        result[mode] = {"cvar": float(profile["cvar_0.2"]), "mean": float(profile["mean"])}
    return result


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    bench.add_probe_arguments(parser, timesteps=100_000)
    parser.set_defaults(seeds=list(range(5)))
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    timesteps, episodes = bench.probe_budget(args)
    runs: list[dict[str, Any]] = []
    jobs = [(seed, flag) for seed in args.seeds for flag in (True, False)]
    with tqdm(total=len(jobs) * timesteps, unit="step", desc="critic_when_tied on CartPole-v1", mininterval=10) as bar:
        for seed, flag in jobs:
            runs.append(run(seed, flag, timesteps, episodes, bar))
            last = runs[-1]
            bar.write(
                f"seed {seed} critic_when_tied={flag}: greedy {last['greedy']['cvar']:.1f}, sampled "
                f"{last['stochastic']['cvar']:.1f}, {last['tied_at_best']} of {last['rollouts']} rollouts tied at the "
                f"best ({last['seconds']:.0f} s)"
            )
            if args.json is not None:
                args.json.write_text(json.dumps(runs, indent=1) + "\n")
    for flag in (True, False):
        mine = [run for run in runs if run["critic_when_tied"] is flag]
        greedy = sum(run["greedy"]["cvar"] for run in mine) / len(mine)
        sampled = sum(run["stochastic"]["cvar"] for run in mine) / len(mine)
        print(f"critic_when_tied={flag}: worst-20% mean greedy {greedy:.1f}, sampled {sampled:.1f} ({len(mine)} seeds)")
    return runs


if __name__ == "__main__":
    main()
