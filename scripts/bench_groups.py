"""Benchmark: grouped episodic rollouts (``group_size=G``) against pooled ones at the same episode count.

    python scripts/bench_groups.py [--rollouts 20] [--repeats 5] [--threads 1]

Times ``collect_rollouts`` (collection and advantages; the update is the same in both modes and not timed) of
OrderGradPPO with ``MlpPolicy``, for each env and rule a group can share its context by (see
:mod:`ordergrad_rl.agents.groups`):

* ``TargetSum-v0``, native batch of 256 envs, options rule (``reset(options={"problem": c})``), 32 groups of 8;
* ``SyntheticTailRisk-v0``, native batch of 256 envs, seed rule (shared reset seed, then fresh streams), 32 x 8;
* ``CartPole-v1``, ``DummyVecEnv`` of 8 envs, seed rule, 8 groups of 8 per 64-episode rollout.

The grouped and the pooled model alternate, best of ``--repeats`` runs of ``--rollouts`` rollouts each. Target:
ratio grouped / pooled <= 1.05.
"""

from __future__ import annotations

import argparse
import time

import torch

from ordergrad_rl.agents import OrderGradPPO

CASES = (
    # (env id, n_envs, n_episodes, objective, group size)
    ("TargetSum-v0", 256, 256, "top2@4", 8),
    ("SyntheticTailRisk-v0", 256, 256, "top2@4", 8),
    ("CartPole-v1", 8, 64, "top2@4", 8),
)


def rollout_timer(env_id: str, n_envs: int, n_episodes: int, objective: str, group_size: int | None, seed: int):
    """A function timing ``rollouts`` calls of ``collect_rollouts`` of a fresh model's (construction not timed)."""
    model = OrderGradPPO(
        "MlpPolicy", env_id, objective=objective, n_episodes=n_episodes, n_envs=n_envs, group_size=group_size,
        seed=seed, device="cpu",
    )  # fmt: skip
    _, callback = model._setup_learn(10**9, None)
    callback.on_training_start(locals(), globals())

    def run(rollouts: int) -> float:
        start = time.perf_counter()
        for _ in range(rollouts):
            model.collect_rollouts(model.env, callback, model.rollout_buffer, 0)
        return time.perf_counter() - start

    run(1)  # warm-up (first reset, caches)
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rollouts", type=int, default=20, help="rollouts per timed run")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per mode (best kept)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"{'env':<22} {'envs':>5} {'episodes':>8} {'G':>3} {'pooled s':>9} {'grouped s':>10} {'ratio':>6}")
    for env_id, n_envs, n_episodes, objective, group_size in CASES:
        pooled = rollout_timer(env_id, n_envs, n_episodes, objective, None, seed=0)
        grouped = rollout_timer(env_id, n_envs, n_episodes, objective, group_size, seed=0)
        times: dict[str, list[float]] = {"pooled": [], "grouped": []}
        for _ in range(args.repeats):  # alternate, so that load changes hit both
            times["pooled"].append(pooled(args.rollouts))
            times["grouped"].append(grouped(args.rollouts))
        best_pooled, best_grouped = min(times["pooled"]), min(times["grouped"])
        print(
            f"{env_id:<22} {n_envs:>5} {n_episodes:>8} {group_size:>3} {best_pooled:>9.3f} {best_grouped:>10.3f} "
            f"{best_grouped / best_pooled:>6.3f}"
        )


if __name__ == "__main__":
    main()
