"""Env steps discarded by episodic collection with several envs, per env: the current rule against the earlier one.

    python scripts/measure_discarded.py [--env CartPole-v1] [--n-envs 8] [--rollouts 20] [--cases mean:16 cvar0.2:256]
                                        [--fixed-policy] [--seed 0]

A ``VecEnv`` steps all its envs together, so an env whose kept episodes have ended steps on, unstored, until the
rollout's last kept episode ends (and the next rollout restarts it). Per env, the discarded fraction is
``1 - stored steps / vector steps`` over a run of OrderGradPPO at its defaults (``--fixed-policy``: learning rate 0,
so both rules see the same episode-length distribution, the untrained policy's). Two rules, same seeds:

* ``first-N-started`` (the buffer's rule): the first ``N`` episodes started, in step order;
* ``per-env quota`` (the earlier rule, :class:`PerEnvQuotaBuffer` below): each env's first ``N / n_envs`` episodes.

Prints a table: objective, ``N``, rule, discarded fraction over all envs, and the per-env mean / min / max.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from ordergrad_rl.agents import EpisodicRolloutBuffer, OrderGradPPO
from ordergrad_rl.common.options import positive_int, seed_int
from ordergrad_rl.core import Objective


class CountingBuffer(EpisodicRolloutBuffer):
    """The buffer, counting vector steps and stored steps per env over its lifetime."""

    vector_steps = 0
    stored: np.ndarray | None = None

    def add(self, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[override]  # as EpisodicRolloutBuffer's
        # The collector passes the optional arrays (time_outs, channels, extras) by keyword.
        keep = super().add(*args, **kwargs)
        self.vector_steps += 1
        self.stored = keep.astype(np.int64) if self.stored is None else self.stored + keep
        return keep


class PerEnvQuotaBuffer(CountingBuffer):
    """The earlier rule: env ``e`` keeps the first ``N / n_envs`` episodes it starts (every env waits for the env
    with the longest sum of episodes)."""

    def reset(self) -> None:
        self._count = np.zeros(self.n_envs, dtype=np.int64)
        super().reset()

    def _start_episodes(self, starting: np.ndarray) -> None:
        quota = self.n_episodes // self.n_envs
        envs = np.flatnonzero(starting)
        self._episode_id[envs] = -1
        kept = envs[self._count[envs] < quota]
        self._episode_id[kept] = kept * quota + self._count[kept]
        self._count[kept] += 1
        self._n_started += kept.size


class StopAfter(BaseCallback):
    def __init__(self, rollouts: int) -> None:
        super().__init__()
        self.rollouts = rollouts
        self.done = 0

    def _on_rollout_end(self) -> None:
        self.done += 1

    def _on_step(self) -> bool:
        return self.done < self.rollouts


def measure(
    env_id: str, n_envs: int, objective: str, n_episodes: int, buffer: type, rollouts: int, fixed: bool, seed: int
) -> dict[str, float]:
    venv = make_vec_env(env_id, n_envs=n_envs, seed=seed)
    fixed_kwargs: dict[str, Any] = dict(learning_rate=0.0, n_epochs=1) if fixed else {}
    model = OrderGradPPO(
        "MlpPolicy", venv, objective, n_episodes=n_episodes, rollout_buffer_class=buffer, seed=seed, **fixed_kwargs
    )
    start = time.perf_counter()
    model.learn(10**9, callback=StopAfter(rollouts))
    seconds = time.perf_counter() - start
    rb = cast(CountingBuffer, model.rollout_buffer)  # buffer is one of the CountingBuffer classes
    assert rb.stored is not None  # it counted the rollouts' steps
    per_env = 1 - rb.stored / rb.vector_steps
    return {
        "N": model.n_episodes,
        "all": 1 - rb.stored.sum() / (rb.vector_steps * n_envs),
        "mean": per_env.mean(),
        "min": per_env.min(),
        "max": per_env.max(),
        "steps": rb.vector_steps * n_envs,
        "seconds": seconds,
    }


def case(text: str) -> tuple[str, int]:
    """argparse type of ``--cases``: ``objective:N``, an objective spec and a number of episodes >= 1."""
    objective, sep, n_episodes = text.rpartition(":")
    if not sep or not objective:
        raise argparse.ArgumentTypeError(f"expected objective:N (e.g. cvar0.2:256), got {text!r}")
    try:
        Objective.parse(objective)
    except (TypeError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"{text!r}: {err}") from err
    try:
        return objective, positive_int(n_episodes)
    except (argparse.ArgumentTypeError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"{text!r}: N must be an integer >= 1, got {n_episodes!r}") from err


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--n-envs", type=positive_int, default=8)
    parser.add_argument("--rollouts", type=positive_int, default=20)
    parser.add_argument(
        "--cases", nargs="+", type=case, default=[("mean", 16), ("mean", 64), ("cvar0.2", 256)], help="objective:N"
    )
    parser.add_argument("--fixed-policy", action="store_true", help="learning rate 0 (the untrained policy)")
    parser.add_argument("--seed", type=seed_int, default=0)
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    for objective, n_episodes in args.cases:
        # The agent's own checks (e.g. k < N), on a throwaway model: a bad case fails now, not after the others ran.
        try:
            OrderGradPPO("MlpPolicy", make_vec_env(args.env, n_envs=1), objective, n_episodes=n_episodes)
        except ValueError as err:
            parser.error(f"argument --cases: '{objective}:{n_episodes}': {err}")
    policy = "fixed untrained policy" if args.fixed_policy else "training"
    print(f"{args.env}, {args.n_envs} envs, OrderGradPPO, {policy}, {args.rollouts} rollouts, seed {args.seed}\n")
    print("| objective | N | rule | discarded (all envs) | per env: mean | min | max | env steps | time ratio |")
    print("|---|---|---|---|---|---|---|---|---|")
    for objective, n_episodes in args.cases:
        rows = {
            rule: measure(
                args.env, args.n_envs, objective, n_episodes, buffer, args.rollouts, args.fixed_policy, args.seed
            )
            for rule, buffer in (("per-env quota", PerEnvQuotaBuffer), ("first-N-started", CountingBuffer))
        }
        base = rows["per-env quota"]["seconds"]
        for rule, r in rows.items():
            print(
                f"| {objective} | {r['N']} | {rule} | {r['all']:.1%} | {r['mean']:.1%} | {r['min']:.1%} | "
                f"{r['max']:.1%} | {r['steps']:,} | {r['seconds'] / base:.2f} |"
            )


if __name__ == "__main__":
    main()
