"""Benchmark: grouped episodic rollouts (``group_size=G``) against pooled ones at the same episode count.

    python scripts/bench_groups.py [--rollouts 20] [--repeats 5] [--threads 1] [--quick]

Times ``collect_rollouts`` per env step (collection and advantages; the update is the same in both modes and not
timed; per step, because the steps a rollout takes vary with its episodes' lengths) of
OrderGradPPO with ``MlpPolicy``, for each env and rule a group can share its context by (see
:mod:`ordergrad_rl.agents.common.groups`):

* ``TargetSum-v0``, native batch of 256 envs, options rule (``reset(options={"problem": c})``), 32 groups of 8;
* ``CartPole-v1``, ``DummyVecEnv`` of 8 envs, seed rule (shared reset seed, then each env's own stream), 8 groups of
  8 per 64-episode rollout (short episodes under the untrained policy: many resets);
* ``CartPole-v1``, ``DummyVecEnv`` of 64 envs, seed rule, one episode per env.

Both modes use the grouped model's per-step baseline and advantage scaling: their defaults differ where groups are
a baseline themselves (pooled TargetSum fits the history baseline, grouped needs none), and the ratio is the cost of
grouping, not of a baseline's fit. The grouped and the pooled model alternate, best of ``--repeats`` runs of
``--rollouts`` rollouts each. Target: ratio grouped / pooled <= 1.05. On a loaded machine that ratio is noisy, so
the time spent in the grouping hooks (``_start_groups``, ``_repose_groups``: drawing contexts and resetting envs
into them) is also timed inside the grouped rollouts and printed as a share of their wall time ("hooks"), which the
load affects far less.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.common.options import parse_quick_args, positive_int

CASES = (
    # (env id, n_envs, n_episodes, objective, group size)
    ("TargetSum-v0", 256, 256, "top2@4", 8),
    ("CartPole-v1", 8, 64, "top2@4", 8),
    ("CartPole-v1", 64, 64, "top2@4", 8),
)


def timed(method, spent: list[float]):
    """``method``, adding its wall time to ``spent[0]``."""

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - start

    return wrapper


def rollout_timer(model: OrderGradPPO):
    """A function timing ``rollouts`` calls of ``collect_rollouts`` of a fresh ``model`` (construction not timed); it
    returns ``(wall time per env step in microseconds, share of the wall time in the grouping hooks)``."""
    _, callback = model._setup_learn(10**9, None)
    callback.on_training_start(locals(), globals())
    spent = [0.0]
    model._start_groups = timed(model._start_groups, spent)  # type: ignore[method-assign]  # timed on purpose
    model._repose_groups = timed(model._repose_groups, spent)  # type: ignore[method-assign]
    env = model.env
    assert env is not None  # built from an env id

    def run(rollouts: int) -> tuple[float, float]:
        spent[0] = 0.0
        steps = model.num_timesteps
        start = time.perf_counter()
        for _ in range(rollouts):
            model.collect_rollouts(env, callback, model.rollout_buffer, 0)
        wall = time.perf_counter() - start
        return wall / (model.num_timesteps - steps) * 1e6, spent[0] / wall

    run(1)  # warm-up (first reset, caches)
    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=positive_int, default=20, help="rollouts per timed run")
    parser.add_argument("--repeats", type=positive_int, default=5, help="timed runs per mode (best kept)")
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads")
    args = parse_quick_args(parser, argv, {"rollouts": 1, "repeats": 1})
    torch.set_num_threads(args.threads)
    header = f"{'env':<22} {'envs':>5} {'episodes':>8} {'G':>3} {'pooled us':>9} {'grouped us':>10} {'ratio':>6}"
    print(header + f" {'hooks':>6}", flush=True)
    for env_id, n_envs, n_episodes, objective, group_size in CASES:
        settings: dict[str, Any] = dict(objective=objective, n_episodes=n_episodes, n_envs=n_envs, seed=0, device="cpu")
        grouped_model = OrderGradPPO("MlpPolicy", env_id, group_size=group_size, **settings)
        same: dict[str, Any] = dict(
            value_baseline=grouped_model.value_baseline, normalize_advantage=grouped_model.normalize_advantage
        )
        grouped = rollout_timer(grouped_model)
        pooled = rollout_timer(OrderGradPPO("MlpPolicy", env_id, **same, **settings))
        times: dict[str, list[float]] = {"pooled": [], "grouped": []}
        shares = []
        for _ in range(args.repeats):  # alternate, so that load changes hit both
            times["pooled"].append(pooled(args.rollouts)[0])
            per_step, share = grouped(args.rollouts)
            times["grouped"].append(per_step)
            shares.append(share)
        best_pooled, best_grouped = min(times["pooled"]), min(times["grouped"])
        print(
            f"{env_id:<22} {n_envs:>5} {n_episodes:>8} {group_size:>3} {best_pooled:>9.3f} {best_grouped:>10.3f} "
            f"{best_grouped / best_pooled:>6.3f} {sorted(shares)[len(shares) // 2]:>6.1%}",
            flush=True,
        )


if __name__ == "__main__":
    main()
