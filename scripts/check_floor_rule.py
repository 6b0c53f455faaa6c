"""Whether ``untie_tail``'s floor rule changes a run: each rollout's untie decision with and without it.

    python scripts/check_floor_rule.py --task lava [--method og-cvar] [--seeds 0 1 ...] [--timesteps 300000]
                                       [--json out.json] [--quick]

Since 2026-12-05 terminated episodes tied at a rollout's lowest return count as tied time-outs when that return is
the lowest seen in training (``floor`` in :func:`~ordergrad_rl.agents.common.risk_schedules.untie_case`). This
script trains a method of ``reproduce benchmarks`` (:func:`~ordergrad_rl.experiments.benchmarks.run_one`, with the
rule) and, at every rollout, also decides the untie case and the level without the rule. ``rollouts_changed`` counts
the rollouts whose level would differ: where it is 0 the run trains bit for bit as it did before the rule, so its
stored runs stand. ``rollouts_at_floor`` counts the rollouts whose lowest return was the lowest seen. ``--quick``
(CI): 2,000 steps, 20 evaluation episodes.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest.mock import patch

from ordergrad_rl.agents.common import episodic
from ordergrad_rl.agents.common.risk_schedules import level_in_force, untied
from ordergrad_rl.agents.common.risk_schedules import untie_case as case_of
from ordergrad_rl.common.options import parser_check_outputs, positive_int, seed_int
from ordergrad_rl.experiments import benchmarks as bench


@contextmanager
def counted(stats: dict[str, int]) -> Iterator[None]:
    """Count, in ``stats``, the rollouts that decide a tie, those at the floor and those the floor changes, while
    the agents decide as usual (with the rule)."""

    def untie_case(
        objective: Any, gcvar_alpha: Any, returns: Any, time_outs: Any, at_var: bool = True, floor: bool = False
    ) -> str | None:
        stats["rollouts"] += 1
        stats["rollouts_at_floor"] += bool(floor)
        ties = (objective, gcvar_alpha, returns, time_outs, at_var)
        with_rule = case_of(*ties, floor)
        levels = [level_in_force(*untied(*ties, at_floor)) for at_floor in (floor, False)]
        stats["rollouts_changed"] += with_rule != case_of(*ties, False) or levels[0] != levels[1]
        return with_rule

    with patch.object(episodic, "untie_case", untie_case):
        yield


def check(task: str, method: str, seed: int, timesteps: int, episodes: int) -> dict[str, Any]:
    """Train ``method`` on ``task`` (one seed) and count its rollouts (:func:`counted`)."""
    stats = {"rollouts": 0, "rollouts_at_floor": 0, "rollouts_changed": 0}
    with counted(stats):
        run = bench.run_one(task, method, seed, timesteps, 2, episodes)
    return {"task": task, "method": method, "seed": seed, "timesteps": timesteps, **stats, "greedy": run["greedy"]}


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", required=True, choices=list(bench.TASKS))
    parser.add_argument("--method", default="og-cvar", choices=list(bench.METHODS))
    parser.add_argument("--seeds", nargs="+", type=seed_int, default=[0])
    parser.add_argument("--timesteps", type=positive_int, help="default: the task's budget")
    parser.add_argument("--json", help="write the counts here")
    parser.add_argument("--quick", action="store_true", help="2,000 steps, 20 evaluation episodes (CI)")
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    if args.quick:
        timesteps = 2_000
    else:
        timesteps = bench.TASKS[args.task].timesteps if args.timesteps is None else args.timesteps
    episodes = 20 if args.quick else 100
    results = []
    for seed in args.seeds:
        results.append(result := check(args.task, args.method, seed, timesteps, episodes))
        print(
            f"{args.task} {args.method} seed {seed}: {result['rollouts']} rollouts, {result['rollouts_at_floor']} at "
            f"the floor, {result['rollouts_changed']} changed by the rule"
        )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"runs": results}, f, indent=1)
    return results


if __name__ == "__main__":
    main()
