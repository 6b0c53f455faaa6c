"""Benchmark of OrderGradPPO(advantage="q_critic") against SB3's PPO with the same network, in one run.

    python scripts/bench_qcritic.py [--updates 5] [--repeats 3] [--n-envs 16] [--batch-size 256] [--threads 1] [--quick]

Both on MinAtar Breakout with the pgx network of ``ordergrad-rl reproduce minatar`` (GridCNN trunk, two 64-unit heads;
PPO has a scalar value head, OrderGrad PPO a per-action Q head), the same ``n_envs``, ``n_steps`` (128),
``n_epochs`` (3), ``batch_size`` and number of timesteps. Reported: env steps per second of each (best of
``--repeats``, the two alternated so that machine noise hits both), their ratio (target <= 1.3), and where the
Q-critic mode's extra time goes: the per-rollout advantage step (stacking the ``Q(s, .)`` and ``pi(.|s)`` the
collector recorded, then one :func:`~ordergrad_rl.core.known_lstat_advantage` call) and the known-regime call alone,
also at 4096 states x 18 actions.

Needs MinAtar (``pip install "ordergrad-rl[minatar]"``).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from typing import Any

import torch

from ordergrad_rl.agents import q_critic_advantages
from ordergrad_rl.common.options import parse_quick_args, positive_int
from ordergrad_rl.common.reports import best_time
from ordergrad_rl.core import Objective, known_lstat_advantage
from ordergrad_rl.envs.minatar import make_minatar_vec_env
from ordergrad_rl.experiments.minatar import Config, build_model

OBJECTIVE = "top9@10"


def time_advantage_step(model) -> None:
    """Have ``model`` accumulate the wall time of its per-rollout advantage step in ``model.advantage_seconds``.

    The hook wraps the instance's bound method rather than swapping its class: ``build_model`` returns an
    ``OrderGradQCriticPPO`` (what ``OrderGradPPO(advantage="q_critic")`` builds), and a class swap to a subclass of
    another class left the model without that class's attributes.
    """
    compute = model._compute_advantages
    model.advantage_seconds = 0.0

    def timed() -> None:
        start = time.perf_counter()
        compute()
        model.advantage_seconds += time.perf_counter() - start

    model._compute_advantages = timed


def timed_learn(method: str, config: Config, updates: int, seed: int) -> tuple[float, Any]:
    """Wall time of ``updates`` rollouts + updates on a freshly built model (one warm-up update not timed)."""
    model = build_model(method, make_minatar_vec_env("breakout", config.n_envs, seed=seed), config, seed)
    if method != "ppo_v":
        time_advantage_step(model)
    rollout = config.n_envs * config.n_steps
    model.learn(rollout)  # warm-up: first-call allocations, env resets
    model.advantage_seconds = 0.0
    start = time.perf_counter()
    model.learn(updates * rollout, reset_num_timesteps=False)
    return time.perf_counter() - start, model


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--updates", type=positive_int, default=5, help="timed rollouts + updates per run")
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--n-envs", type=positive_int, default=16)
    parser.add_argument("--batch-size", type=positive_int, default=256)
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (1: one core per run)")
    args = parse_quick_args(parser, argv, {"updates": 1, "repeats": 1, "n_envs": 1, "batch_size": 64})
    torch.set_num_threads(args.threads)
    config = Config(n_envs=args.n_envs, batch_size=args.batch_size)
    rollout = config.n_envs * config.n_steps
    steps = args.updates * rollout
    print(
        f"MinAtar Breakout: {config.n_envs} envs x {config.n_steps} steps = {rollout} steps per rollout, "
        f"n_epochs={config.n_epochs}, batch_size={config.batch_size}, {args.updates} timed updates, "
        f"torch threads={args.threads}, best of {args.repeats}"
    )
    sb3_times, ours_times, advantage_times = [], [], []
    for repeat in range(args.repeats):
        sb3_times.append(timed_learn("ppo_v", config, args.updates, repeat)[0])
        seconds, model = timed_learn(OBJECTIVE, config, args.updates, repeat)
        ours_times.append(seconds)
        advantage_times.append(model.advantage_seconds / args.updates)
    sb3, ours = min(sb3_times), min(ours_times)
    print(f"\n{'measurement':<58} {'steps/s':>9}  {'ratio':>6}")
    print(f"{'SB3 PPO (scalar value head), baseline':<58} {steps / sb3:9.0f}  {1.0:6.2f}")
    print(f"{'OrderGradPPO q_critic ' + OBJECTIVE:<58} {steps / ours:9.0f}  {ours / sb3:6.2f}   target <= 1.30")

    # Where the mode's extra work goes, per rollout.
    objective = Objective.parse(OBJECTIVE)
    gen = torch.Generator().manual_seed(0)

    def known_call(states: int, actions: int) -> float:
        q = torch.randn(states, actions, generator=gen)
        probs = torch.softmax(torch.randn(states, actions, generator=gen), -1)
        a = torch.randint(0, actions, (states,), generator=gen)
        r = torch.randn(states, generator=gen)
        return best_time(lambda: q_critic_advantages(q, probs, a, r, objective), 5)

    per_rollout = ours / args.updates
    advantage = min(advantage_times)
    known = known_call(rollout, 3)
    print(f"\nper rollout of {rollout} states ({per_rollout * 1e3:.0f} ms in total):")
    rows = [
        ("advantage step (recorded Q, pi + known-regime call)", advantage),
        (f"of which q_critic_advantages ({rollout} x 3 actions)", known),
    ]
    for label, seconds in rows:
        print(f"  {label:<52} {seconds * 1e3:8.1f} ms  {seconds / per_rollout:6.1%}")
    q = torch.randn(4096, 18, dtype=torch.float64, generator=gen)
    p = torch.softmax(torch.randn(4096, 18, dtype=torch.float64, generator=gen), -1)
    big = best_time(lambda: known_lstat_advantage(q, p, objective), 5)
    print(f"  {'known_lstat_advantage at 4096 states x 18 actions':<52} {big * 1e3:8.1f} ms  (float64)")


if __name__ == "__main__":
    main()
