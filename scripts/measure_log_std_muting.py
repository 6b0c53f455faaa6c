"""How much of the log-std's gradient PPO's clipped update passes on: the usage line on a continuous task, per update.

    python scripts/measure_log_std_muting.py [--env MountainCarContinuous-v0] [--seed 0] [--steps 100000]
                                             [--log-std-step DELTA] [--json out.json] [--quick]

At the start of every update (the rollout collected, its advantages set) this records, per action dimension:

- ``gradient``: the exact likelihood-ratio gradient of the rollout's surrogate ``mean_t A_t pi(a_t|s_t) /
  pi_old(a_t|s_t)`` with respect to ``log sigma`` at ratio 1, ``mean_t A_t d log pi(a_t|s_t) / d log sigma`` over all
  of the rollout's ``T`` steps (the advantages the update reads);
- ``change``: the change of ``log sigma`` the update then makes (SB3's clipped update, or with ``--log-std-step`` the
  fit outside the clip, OrderGradPPO's ``log_std_step``).

The usage line is ``OrderGradPPO("MlpPolicy", env, objective="cvar0.2", seed=seed)``; ``--log-std-step`` adds the
option. docs/benchmarks.md ("The log-std fitted outside the clip") tabulates the output. One torch thread.
``--quick`` (CI): 2,000 steps.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from tqdm.auto import tqdm

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.common.options import parser_check_outputs, positive_int, seed_int
from ordergrad_rl.common.progress import rollout_progress
from ordergrad_rl.common.reports import write_json


class MutingProbe(OrderGradPPO):
    """The usage line, recording the log-std's gradient and change at every update."""

    records: list[dict[str, Any]]

    def train(self) -> None:
        buffer = self.rollout_buffer
        policy = self.policy
        obs, _ = policy.obs_to_tensor(buffer.observations)
        actions = th.as_tensor(buffer.actions).reshape(len(buffer.advantages), -1)
        advantages = th.as_tensor(buffer.advantages)
        log_prob = policy.get_distribution(obs).log_prob(actions)
        (gradient,) = th.autograd.grad((advantages * log_prob).mean(), policy.log_std)
        start = policy.log_std.detach().clone()
        super().train()
        change = policy.log_std.detach() - start
        self.records.append(
            {
                "num_timesteps": self.num_timesteps,
                "steps": len(advantages),
                "std": np.exp(start.numpy()).round(4).tolist(),
                "gradient": gradient.numpy().round(6).tolist(),
                "change": change.numpy().round(6).tolist(),
                "clip_fraction": float(self.logger.name_to_value.get("train/clip_fraction", float("nan"))),
            }
        )


def main(argv: Sequence[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="MountainCarContinuous-v0")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--steps", type=positive_int, default=100_000)
    parser.add_argument("--log-std-step", type=float, default=None)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="2,000 steps (CI)")
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    steps = 2_000 if args.quick else args.steps
    th.set_num_threads(1)
    model = MutingProbe(
        "MlpPolicy", gym.make(args.env), objective="cvar0.2", seed=args.seed, log_std_step=args.log_std_step
    )
    model.records = []
    with tqdm(total=steps, unit="step", desc=f"{args.env}, seed {args.seed}") as bar:
        model.learn(steps, callback=rollout_progress(steps, bar.update))
    for record in model.records:
        print(
            f"{record['num_timesteps']:>8} std {record['std']} gradient {record['gradient']} change "
            f"{record['change']} clip_fraction {record['clip_fraction']:.3f}",
            flush=True,
        )
    if args.json:
        write_json(args.json, {**vars(args), "json": str(args.json), "records": model.records})
    return model.records


if __name__ == "__main__":
    main()
