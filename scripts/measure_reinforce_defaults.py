"""OrderGradREINFORCE's episodes per update for the mean objective, measured across the project's envs.

    python scripts/measure_reinforce_defaults.py [--n 16 64 256] [--seeds 3] [--quick] [--json PATH]

Every run is ``OrderGradREINFORCE("MlpPolicy", env_id, objective="mean", n_episodes=N, seed=s)`` with every other
argument at its default, trained for the env's fixed budget of env steps (so a smaller ``N`` takes more, noisier
gradient steps), then scored:

* ``CartPole-v1`` (100k steps): mean return of 20 deterministic episodes (max 500);
* ``RiskyBandit-v0`` (20k steps): the policy's probability of the mean-optimal ``risky`` arm;
* ``RiskyLavaGrid-v0`` (100k steps): mean return of 500 deterministic-policy episodes;
* ``SyntheticTailRisk-v0`` (200k steps): mean return (log-wealth) of 512 deterministic-policy episodes.

Prints, per env, the mean and standard deviation over seeds of each ``N``, and the total time.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np
import torch as th
from tqdm import tqdm

from ordergrad_rl.common.options import parser_check_outputs, positive_int

#: env id -> (env steps per run, evaluation episodes); the budgets are the ones the project's tests and README use.
BUDGETS: dict[str, tuple[int, int]] = {
    "CartPole-v1": (100_000, 20),
    "RiskyBandit-v0": (20_000, 0),
    "RiskyLavaGrid-v0": (100_000, 500),
    "SyntheticTailRisk-v0": (200_000, 512),
}


def score(model: Any, env_id: str, episodes: int, seed: int) -> float:
    """The run's score (see the module docstring)."""
    if env_id == "RiskyBandit-v0":
        obs = th.zeros((1, 1), dtype=th.float32)
        probs = model.policy.get_distribution(obs).distribution.probs
        return float(probs[0, 1])  # the risky arm (mean 1.3; the others 1.0)
    from stable_baselines3.common.evaluation import evaluate_policy

    from ordergrad_rl.envs import make_sb3_vec_env

    env = make_sb3_vec_env(env_id, 1, seed=10_000 + seed)
    returns, _ = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True, return_episode_rewards=True)
    return float(np.mean(returns))


def run(env_id: str, n_episodes: int, seed: int, scale: float) -> float:
    from ordergrad_rl.agents import OrderGradREINFORCE

    steps, episodes = BUDGETS[env_id]
    model = OrderGradREINFORCE("MlpPolicy", env_id, objective="mean", n_episodes=n_episodes, seed=seed)
    model.learn(int(steps * scale))
    return score(model, env_id, max(2, int(episodes * scale)) if episodes else 0, seed)


def mean_sd(values: list[float]) -> str:
    """``mean (sd)`` of a cell's seeds; ``mean (-)`` for one seed, which has no standard deviation."""
    sd = f"{np.std(values, ddof=1):.3f}" if len(values) > 1 else "-"
    return f"{np.mean(values):.3f} ({sd})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=positive_int, nargs="+", default=[16, 64, 256], help="n_episodes values")
    parser.add_argument("--seeds", type=positive_int, default=3)
    parser.add_argument("--envs", nargs="+", default=list(BUDGETS), choices=list(BUDGETS))
    parser.add_argument("--quick", action="store_true", help="2%% budgets, 1 seed (CI)")
    parser.add_argument("--json", type=str, default=None)
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the runs, not after them
    th.set_num_threads(1)
    import ordergrad_rl  # noqa: F401  (registers the envs)

    seeds = 1 if args.quick else args.seeds
    scale = 0.02 if args.quick else 1.0
    jobs = [(env, n, s) for env in args.envs for n in args.n for s in range(seeds)]
    start = time.perf_counter()
    scores: dict[str, dict[int, list[float]]] = {env: {n: [] for n in args.n} for env in args.envs}
    for env, n, s in tqdm(jobs, desc="REINFORCE runs"):
        scores[env][n].append(run(env, n, s, scale))
    print(f"OrderGradREINFORCE, objective='mean', defaults otherwise; mean (sd) over {seeds} seed(s)")
    print("| env | " + " | ".join(f"N = {n}" for n in args.n) + " |")
    print("|---|" + "---|" * len(args.n))
    for env in args.envs:
        cells = [mean_sd(values) for values in scores[env].values()]
        print(f"| {env} ({BUDGETS[env][0] * scale:,.0f} steps) | " + " | ".join(cells) + " |")
    print(f"total time {time.perf_counter() - start:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"budgets": BUDGETS, "scale": scale, "scores": scores}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
