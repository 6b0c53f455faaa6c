"""A probe of rollout sizes that follow the CVaR level in force, on the long-episode tasks.

    python scripts/probe_level_sized_rollouts.py --task acrobot [--seeds 0 1 ...] [--timesteps 100000]
                                                 [--json out.json] [--quick]

The usage line (``reproduce benchmarks``' ``og-cvar``) on long episodes ranks 32 episodes per update, and its level
schedule moves the CVaR level from 1 (the mean) to 0.2 over the first 60% of training. The mean's own default is 16
episodes (every episode carries signal), the target's 32 (its signal sits in the worst fifth). 16 episodes throughout
(``og-cvar-n16``) gave Acrobot-v1 the better sampled tail at 100k steps and CartPole-v1 the worse one at 300k. This
probe sizes each rollout for the level in force instead: ``N = clip(round(0.2 * 32 / level), 16, 32)``, the same
number of tail episodes as the target's 32 once that is more than the mean's 16 (16 while the level is 0.4 or more,
the first 45% of training; 32 from 60% on). Not a library default: a patched OrderGradPPO whose runs are reported in
docs/benchmarks.md.

Scored as ``reproduce benchmarks`` scores the task (:func:`~ordergrad_rl.experiments.benchmarks.run_one`, under a
method name of its own): the worst 20% of 100 greedy and 100 sampled evaluation returns. ``--quick`` (CI): 2,000
steps, 20 episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, cast

import numpy as np

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common.arguments import LONG_RANKED_N_EPISODES, MEAN_N_EPISODES
from ordergrad_rl.agents.common.risk_schedules import level_in_force
from ordergrad_rl.common.options import parser_check_outputs
from ordergrad_rl.core import Objective
from ordergrad_rl.experiments import benchmarks as bench

#: The probe's method name, registered for its runs.
METHOD = "og-cvar-levelsized"


def rollout_episodes(level: float | None, target: float | None) -> int:
    """Episodes of a rollout at the CVaR ``level`` in force for the ``target`` level: as many tail episodes as the
    target's 32 hold, within [16, 32] (32 where either level is unknown)."""
    if level is None or target is None:
        return LONG_RANKED_N_EPISODES
    return int(np.clip(round(target * LONG_RANKED_N_EPISODES / level), MEAN_N_EPISODES, LONG_RANKED_N_EPISODES))


class LevelSizedPPO(OrderGradPPO):
    """OrderGradPPO whose rollout holds ``clip(round(target * 32 / level), 16, 32)`` episodes at the level in force,
    its objective bound to ``k = N // 2`` as the constructor binds it (``cvar0.2@16`` at 32 episodes, ``@8`` at 16)."""

    def collect_rollouts(self, env: Any, callback: Any, rollout_buffer: Any, n_rollout_steps: int) -> bool:
        self._update_risk()
        level = level_in_force(self._objective_in_force, self._gcvar_in_force)
        n = rollout_episodes(level, level_in_force(self.objective, getattr(self, "gcvar_alpha", None)))
        self.n_episodes = rollout_buffer.n_episodes = n
        self._set_objective(cast(Objective, self.objective).bind(n // 2))  # Objective.bind rebinds a bound objective
        self.logger.record("rollout/n_episodes", n)
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)


def run(task: str, seed: int, timesteps: int, episodes: int) -> dict:
    """Train and score one seed as ``reproduce benchmarks`` does, OrderGradPPO patched to :class:`LevelSizedPPO`."""
    method = dataclasses.replace(bench.METHODS["og-cvar"], label="rollouts sized by level")
    return bench.run_with_agent(task, method, METHOD, LevelSizedPPO, seed, timesteps, episodes)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("cartpole", "acrobot", "lunarlander"), default="acrobot")
    bench.add_probe_arguments(parser, timesteps=100_000)
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    timesteps, episodes = bench.probe_budget(args)
    return bench.run_seeds(lambda seed: run(args.task, seed, timesteps, episodes), args.seeds, args.json, args.task)


if __name__ == "__main__":
    main()
