"""How wide does a benchmark agent's policy stay? Its entropy and returns, rollout by rollout, and its final tails.

    python scripts/trace_policy_entropy.py --task acrobot [--method og-cvar] [--seed 0] [--timesteps 300000]
                                           [--every 1] [--json PATH] [--quick] [--quiet]

Trains one ``reproduce benchmarks`` run (any task with categorical actions, any method) and prints, for each rollout
(or every ``--every``-th), the env steps, the mean entropy of the policy over the rollout's states (in nats, before
the rollout's update; a uniform policy's is ``ln |A|``), the mean return of the episodes that ended in it and the
entropy coefficient of the rollout's update (the episodic agents' rule in force, as ``train/ent_coef`` logs it;
SB3's PPO's constant).
Then the final greedy and sampled CVaR_0.2 of ``--eval-episodes`` evaluation episodes, scored as ``reproduce
benchmarks`` scores the task's Monte Carlo cells (the same evaluation env seeds).

Why: a sampled tail below SB3 PPO's with a greedy tail level with it (Acrobot-v1) is a policy that stays wide. The
trace tells whether the width is there from the start (a blind start: every rollout tied, the policy near uniform),
comes back late (an entropy bonus outweighing a weak tail gradient), or is held throughout.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from ordergrad_rl.common.options import positive_int, seed_int
from ordergrad_rl.common.progress import progress_bar
from ordergrad_rl.common.reports import markdown_table, write_json
from ordergrad_rl.experiments import benchmarks as bench


class EntropyTrace(BaseCallback):
    """Keeps each rollout's observations (SB3's ``obs_tensor`` at every step, in both SB3's and the episodic
    agents' loops) and finished episodes' returns; at the rollout's end, before its update, records the policy's
    mean entropy over those observations. Reports env steps to ``bar``."""

    def __init__(self, bar: Any) -> None:
        super().__init__()
        self.bar = bar
        self.rows: list[dict[str, Any]] = []
        self._observations: list[th.Tensor] = []
        self._returns: list[float] = []

    def _on_rollout_start(self) -> None:
        self._observations, self._returns = [], []

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)
        self._observations.append(self.locals["obs_tensor"])
        for info in self.locals["infos"]:
            if "episode" in info:  # SB3's Monitor, at an episode's end
                self._returns.append(float(info["episode"]["r"]))
        return True

    def _on_rollout_end(self) -> None:
        if not self._observations:
            return
        model: Any = self.model  # SB3's PPO or an OrderGrad agent: an actor-critic policy and ent_coef
        with th.no_grad():
            entropy = model.policy.get_distribution(th.cat(self._observations)).entropy()
        # The coefficient this rollout's update takes: the episodic agents' rule (a schedule, tied rollouts), SB3's
        # constant otherwise.
        in_force = getattr(model, "_ent_coef_in_force", None)
        coef = in_force() if in_force is not None else model.ent_coef
        self.rows.append({"timesteps": int(model.num_timesteps), "entropy": float(entropy.mean()),
                          "mean_return": float(np.mean(self._returns)) if self._returns else None,
                          "episodes": len(self._returns), "ent_coef": float(coef)})  # fmt: skip


def trace(task_name: str, method_name: str, seed: int, timesteps: int, eval_episodes: int, quiet: bool) -> dict:
    """Train one run with :class:`EntropyTrace` and score its final policy.

    :return: ``rows`` (one per rollout), ``greedy`` and ``stochastic`` ``(cvar, mean)``, ``max_entropy`` (``ln |A|``).
    :raises ValueError: on a task whose actions are not ``Discrete``.
    """
    task = bench.TASKS[task_name]
    if not task.discrete:  # known without building the env (whose extra may be absent)
        raise ValueError(f"--task {task_name}: the trace needs Discrete actions, and {task.env_id}'s are continuous")
    model = bench.build_model(bench.METHODS[method_name], task_name, seed)
    with progress_bar(f"{task_name}/{method_name}/seed{seed}", timesteps, "step", quiet) as bar:
        callback = EntropyTrace(bar)
        model.learn(timesteps, callback=callback)
    scores = {mode: bench.sampled_score(model, task.env_id, eval_episodes, seed, deterministic)
              for mode, deterministic in (("greedy", True), ("stochastic", False))}  # fmt: skip
    return {"task": task_name, "method": method_name, "seed": seed, "timesteps": int(model.num_timesteps),
            "max_entropy": math.log(int(model.action_space.n)), "rows": callback.rows, **scores}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=[n for n, t in bench.TASKS.items() if t.discrete], default="acrobot")
    parser.add_argument("--method", choices=list(bench.METHODS), default="og-cvar")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--timesteps", type=positive_int, default=None, help="default: the task's budget")
    parser.add_argument("--eval-episodes", type=positive_int, default=100)
    parser.add_argument("--every", type=positive_int, default=1, help="print every n-th rollout (all in --json)")
    parser.add_argument("--quick", action="store_true", help="3,000 steps, 10 evaluation episodes (CI)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", type=Path, default=None, help="write every rollout's row and the scores")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    timesteps = 3_000 if args.quick else (args.timesteps or bench.TASKS[args.task].timesteps)
    episodes = 10 if args.quick else args.eval_episodes
    result = trace(args.task, args.method, args.seed, timesteps, episodes, args.quiet)
    rows = result["rows"]
    shown = [r for i, r in enumerate(rows) if i % args.every == 0 or i == len(rows) - 1]
    print(f"entropy in nats; a uniform policy's is {result['max_entropy']:.4f}")
    print(markdown_table(["env steps", "entropy", "mean return", "episodes", "ent_coef"],
                         [[r["timesteps"], f"{r['entropy']:.3f}",
                           "-" if r["mean_return"] is None else f"{r['mean_return']:.1f}", r["episodes"],
                           f"{r['ent_coef']:.4f}"] for r in shown]))  # fmt: skip
    for mode in ("greedy", "stochastic"):
        cvar, mean = result[mode]
        print(f"{mode}: CVaR_0.2 {cvar:.1f}, mean {mean:.1f} ({episodes} evaluation episodes)")
    if args.json is not None:
        print(f"json: {write_json(args.json, result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
