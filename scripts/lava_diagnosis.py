"""Why the episodic CVaR agents of ``reproduce peers`` fail on RiskyLavaGrid-v0: a small, pre-declared grid.

    python scripts/lava_diagnosis.py [--seeds 3] [--settings base steps300k ...] [--methods gcvar ordergrad_cvar]
                                     [--quick] [--json PATH]

Every run is ``reproduce peers``' lava protocol (``peers.make_model``: OrderGradREINFORCE, 16 envs, Adam 0.03,
N = 256 episodes per update, K = 128 for OrderGrad-CVaR, weights divided by their batch std, 100k env steps) with
one change per setting (the grid was fixed before running):

* ``base``: the protocol itself; ``steps300k``: 300k env steps;
* ``lr0.01`` / ``lr0.09``: the step size x0.3 / x3;
* ``ent0.01``: an entropy bonus ``ent_coef = 0.01`` (on the std-normalized weights' scale);
* ``n64`` / ``n1024``: N = 64 / 1024 episodes per update (K = N / 2).

Measured after every update, exactly (``peers.lava_outcomes``: the policy's outcome distribution by forward
propagation, no sampling): the training (stochastic) policy's P(goal), P(lava), P(timeout), mean and CVaR_0.2, its
entropy at the start cell and its probability of the safe move there (up); and from the batch itself the outcomes of
the episodes in its lower 20% (the episodes GCVaR's weights are nonzero on). At the end: the same exact numbers for
the greedy (deterministic) policy, which is what ``reproduce peers`` evaluates; "safe" means its exact CVaR_0.2 is
within 0.05 of the safe path's 0.951.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from ordergrad_rl.experiments._common import markdown_table, positive_int, progress_bar, write_json
from ordergrad_rl.experiments.peers import ALPHA, METHODS, Config, lava_outcomes, make_model

SAFE_CVAR = 0.951
#: setting -> (Config changes, ent_coef).
SETTINGS: dict[str, tuple[dict[str, Any], float]] = {
    "base": ({}, 0.0),
    "steps300k": ({"lava_steps": 300_000}, 0.0),
    "lr0.01": ({"lava_learning_rate": 0.01}, 0.0),
    "lr0.09": ({"lava_learning_rate": 0.09}, 0.0),
    "ent0.01": ({}, 0.01),
    "n64": ({"n_episodes": 64, "k": 32}, 0.0),
    "n1024": ({"n_episodes": 1024, "k": 512}, 0.0),
}
START_CELL, UP = 5, 0


def policy_table(model: Any) -> np.ndarray:
    """``[15, 4]`` action probabilities of the model's policy in every cell."""
    obs, _ = model.policy.obs_to_tensor(np.arange(15))
    with th.no_grad():
        return model.policy.get_distribution(obs).distribution.probs.numpy().astype(np.float64)


def batch_tail(returns: np.ndarray, lengths: np.ndarray) -> dict[str, float]:
    """Outcome shares among the batch's ``ceil(alpha N)`` lowest returns (goal: R + L = 10, lava: R + L = -15)."""
    tail = np.argsort(returns, kind="stable")[: math.ceil(ALPHA * len(returns))]
    total = returns[tail] + lengths[tail]
    return {
        "tail_goal": float(np.mean(np.isclose(total, 10.0))),
        "tail_lava": float(np.mean(np.isclose(total, -15.0))),
        "tail_timeout": float(np.mean(~np.isclose(total, 10.0) & ~np.isclose(total, -15.0))),
        "tail_mean_length": float(np.mean(lengths[tail])),
    }


def setting_config(setting: str, quick: bool = False) -> Config:
    """The peers Config of a setting (``quick``: 2000 env steps)."""
    config = dataclasses.replace(Config(), **SETTINGS[setting][0])
    return dataclasses.replace(config, lava_steps=2000) if quick else config


def run(setting: str, method: str, seed: int, config: Config, bar: Any) -> dict[str, Any]:
    """One run: the trace after every update and the greedy policy's exact outcomes at the end."""
    from stable_baselines3.common.callbacks import BaseCallback

    ent_coef = SETTINGS[setting][1]
    model = make_model("lava", method, seed, config)
    model.ent_coef = ent_coef
    trace: list[dict[str, float]] = []

    def record(steps: int, batch: dict[str, float]) -> None:
        probs = policy_table(model)
        start = probs[START_CELL]
        entry = {"steps": steps, **lava_outcomes(probs), **batch}
        entry.update(start_entropy=float(-(start * np.log(start + 1e-300)).sum()), start_up=float(start[UP]))
        trace.append(entry)

    class Trace(BaseCallback):
        reported = 0

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            buffer = model.rollout_buffer
            # The batch was collected by the policy before this update: record it with that policy's numbers.
            record(self.num_timesteps, batch_tail(buffer.episode_returns, buffer.episode_lengths.astype(float)))
            done = min(self.num_timesteps, config.lava_steps)
            bar.update(done - self.reported)
            self.reported = done

    start = time.perf_counter()
    model.learn(config.lava_steps, callback=Trace())
    seconds = time.perf_counter() - start
    greedy = lava_outcomes(np.eye(4)[policy_table(model).argmax(axis=1)])
    return {
        "setting": setting,
        "method": method,
        "seed": seed,
        "updates": len(trace),
        "trace": trace,
        "final_stochastic": lava_outcomes(policy_table(model)),
        "greedy": greedy,
        "safe": greedy["cvar"] >= SAFE_CVAR - 0.05,
        "seconds": seconds,
    }


def summary_rows(runs: list[dict[str, Any]], settings: list[str], methods: list[str]) -> list[list[Any]]:
    """One row per (setting, method): safe seeds, the greedy policy's exact numbers (mean over seeds), and the
    trace's first-update tail composition and lava probability."""
    rows = []
    for setting in settings:
        for method in methods:
            mine = [r for r in runs if r["setting"] == setting and r["method"] == method]
            greedy = {key: np.mean([r["greedy"][key] for r in mine]) for key in ("mean", "cvar", "lava", "timeout")}
            rows.append(
                [
                    setting,
                    METHODS[method].label,
                    f"{sum(r['safe'] for r in mine)}/{len(mine)}",
                    " ".join(f"{r['greedy']['cvar']:.1f}" for r in mine),
                    f"{greedy['mean']:.2f}",
                    f"{greedy['lava']:.1%}",
                    f"{np.mean([r['final_stochastic']['lava'] for r in mine]):.1%}",
                    f"{np.mean([r['trace'][-1]['start_entropy'] for r in mine]):.2f}",
                    f"{np.mean([r['updates'] for r in mine]):.0f}",
                    f"{np.mean([r['seconds'] for r in mine]):.0f}",
                ]
            )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=positive_int, default=3, help="seeds per cell (default: %(default)s)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument(
        "--methods", nargs="+", choices=["gcvar", "ordergrad_cvar"], default=["gcvar", "ordergrad_cvar"]
    )
    parser.add_argument("--quick", action="store_true", help="2000 steps per run (a smoke test)")
    parser.add_argument("--json", type=Path, default=None, help="write every run's trace to this JSON file")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    configs = {setting: setting_config(setting, args.quick) for setting in args.settings}

    start = time.perf_counter()
    runs = []
    total = args.seeds * len(args.methods) * sum(config.lava_steps for config in configs.values())
    with progress_bar(f"{args.seeds * len(args.methods) * len(args.settings)} runs", total, "step", args.quiet) as bar:
        for setting in args.settings:
            for method in args.methods:
                for seed in range(args.seeds):
                    runs.append(run(setting, method, seed, configs[setting], bar))
    wall = time.perf_counter() - start
    initial = lava_outcomes(np.full((15, 4), 0.25))
    print(
        "RiskyLavaGrid-v0, the peers lava protocol with one change per setting; exact outcome numbers. Initial "
        f"(uniform) policy: P(goal) {initial['goal']:.1%}, P(lava) {initial['lava']:.1%}, P(timeout) "
        f"{initial['timeout']:.1%}, mean {initial['mean']:.2f}, CVaR_0.2 {initial['cvar']:.2f}, start entropy "
        f"{math.log(4):.3f}.\n"
    )
    headers = [
        "setting",
        "method",
        "safe greedy policy",
        "greedy CVaR_0.2 per seed",
        "greedy mean",
        "greedy P(lava)",
        "training policy P(lava), end",
        "start entropy, end",
        "updates",
        "s/run",
    ]
    print(markdown_table(headers, summary_rows(runs, args.settings, args.methods)))
    print(f"\ntotal time {wall:.0f} s")
    if args.json is not None:
        print(f"json: {write_json(args.json, {'args': vars(args), 'initial': initial, 'runs': runs, 'wall': wall})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
