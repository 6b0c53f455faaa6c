"""Benchmark of the agents, each against a baseline timed in the same run.

    python scripts/bench_agents.py [--cartpole-steps 20000] [--contrib-steps 2048] [--updates 10] [--repeats 3]
                                   [--image-steps 4096] [--image-n-steps 2048] [--threads 1]
                                   [--sections 0 1 2 3 4] [--quick]

0. CartPole-v1, both at their defaults: SB3's ``PPO("MlpPolicy", "CartPole-v1")`` vs
   ``OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean")`` and the usage line ``objective="cvar0.2"``, each
   ``learn`` of the same budget (one env each).
   Target: wall time per env step taken <= 1.10 x SB3's (each rounds the budget up: SB3 to whole rollouts, the
   episodic agent to whole episodes; the per-call ratio is printed too).
1. sb3-contrib's algorithms against their OrderGrad variants, each at its defaults on CartPole-v1 for
   ``--contrib-steps`` env steps (one env): ``RecurrentPPO`` vs ``OrderGradRecurrentPPO`` and ``MaskablePPO`` vs
   ``OrderGradMaskablePPO`` (``objective="cvar0.2"``; every action allowed), ``QRDQN`` vs ``QRDQNCVaR``. Wall time
   per env step, as in 0 (no target yet).
2. OrderGradPPO vs SB3's PPO with the same rollout size (256 envs x 16 steps: one 16-decision episode per env),
   ``n_epochs``, ``batch_size`` and number of timesteps, both on ``make_sb3_vec_env`` with SB3's default
   ``MlpPolicy`` (both train a value head: OrderGradPPO's value baseline, on by default here). Target: wall-time ratio
   <= 1.10.
3. One OrderGradREINFORCE update at the paper's portfolio size (256 episodes x 16 decisions, linear policy with
   fixed noise) and the projection to 750 updates and to the reproduction (5 seeds x 2 methods x 750 updates,
   target <= 10 minutes), against the cost of the 4096 environment steps alone (random actions).
4. Image observations, ``CnnPolicy`` (SB3's ``NatureCNN``): SB3's ``PPO("CnnPolicy", env)`` vs the usage line
   ``OrderGradPPO("CnnPolicy", env, objective="cvar0.2")``, each ``learn`` of ``--image-steps`` env steps on one env at
   its defaults (SB3's rollout ``--image-n-steps``, its default 2048), on ``RiskyLavaGrid-v0`` seen as its rendered
   48x80 RGB frames (:func:`image_env`, Gymnasium's ``AddRenderObservation``). Wall time per env step, as in 0: the
   usage line fits its tied critic in the update's minibatches, where a shared extractor's second forward (for the
   critic's values) cost a second CNN pass per minibatch until 2026-12-07 (no target yet).

Best of ``--repeats`` runs (the least noisy location statistic), the runs compared taking turns; machines are noisy,
the ratios are the figures.
"""

from __future__ import annotations

import argparse
import math
import time
import warnings
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar, cast

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from gymnasium.wrappers import AddRenderObservation
from sb3_contrib import QRDQN, MaskablePPO, RecurrentPPO
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3 import PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.type_aliases import GymEnv

from ordergrad_rl.agents import (
    OrderGradMaskablePPO,
    OrderGradPPO,
    OrderGradRecurrentPPO,
    OrderGradREINFORCE,
    QRDQNCVaR,
)
from ordergrad_rl.common.options import parse_quick_args, positive_int
from ordergrad_rl.envs import make_sb3_vec_env

ENV_ID = "SyntheticTailRisk-v0"
N_ENVS = 256  # one episode per env per rollout
EPISODE_STEPS = 16  # 80 traded days, rebalanced every 5
ROLLOUT_STEPS = N_ENVS * EPISODE_STEPS
PAPER_POLICY = dict(
    net_arch=dict(pi=[], vf=[]), zero_init_action_net=True, log_std_init=math.log(0.35), learn_log_std=False
)

#: What a timed run returns.
Result = TypeVar("Result")


def best_runs(makes: Sequence[Callable[[], Callable[[], Result]]], repeats: int) -> list[tuple[float, Result]]:
    """Each run's best wall time of ``repeats``, each on a freshly built model (construction is not timed), and what
    that run returned. The runs take turns (round ``r`` times every run once): a machine that slows down for a while
    slows all of them, not only the ones timed then, so their ratios hold (timed one after the other, the usage
    line's ratio to SB3 PPO moved between 0.84 and 1.25 on one busy machine)."""
    runs: list[list[tuple[float, Result]]] = [[] for _ in makes]
    for _ in range(repeats):
        for timed, make in zip(runs, makes, strict=True):
            run = make()
            start = time.perf_counter()
            result = run()
            timed.append((time.perf_counter() - start, result))
    return [min(timed, key=lambda run: run[0]) for timed in runs]


def best_run(make: Callable[[], Callable[[], Result]], repeats: int) -> tuple[float, Result]:
    """Best wall time of ``repeats`` runs of one kind, and what that run returned (:func:`best_runs`)."""
    return best_runs([make], repeats)[0]


def best_time(make: Callable[[], Callable[[], object]], repeats: int) -> float:
    """Best wall time of ``repeats`` runs (:func:`best_run`)."""
    return best_run(make, repeats)[0]


#: Section 1: (baseline label, baseline class, OrderGrad class, policy, OrderGrad's arguments, action masks).
CONTRIB: tuple[tuple[str, type[BaseAlgorithm], type[BaseAlgorithm], str, dict[str, object], bool], ...] = (
    ("RecurrentPPO", RecurrentPPO, OrderGradRecurrentPPO, "MlpLstmPolicy", {"objective": "cvar0.2"}, False),
    ("MaskablePPO", MaskablePPO, OrderGradMaskablePPO, "MlpPolicy", {"objective": "cvar0.2"}, True),
    ("QRDQN", QRDQN, QRDQNCVaR, "MlpPolicy", {}, False),
)


#: The timed runs train with budgets of a few rollouts on purpose (--quick: one): the agents' warning that a learn
#: call leaves fewer than 5 updates is expected there, and is silenced when the script runs (it printed between the
#: table rows).
FEW_UPDATES_WARNING = r"OrderGrad\w+: the first rollout took .* \(fewer than 5\)"


def every_action(env: gym.Env) -> np.ndarray:
    """The action mask that allows every action (the maskable algorithms need one)."""
    return np.ones(cast(spaces.Discrete, env.action_space).n, dtype=bool)  # CartPole-v1's


def cartpole_run(
    cls: type, steps: int, seed: int, policy: str = "MlpPolicy", masked: bool = False, **kwargs: object
) -> Callable[[], int]:
    """``learn(steps)`` on a fresh model; the run returns the env steps it took (``num_timesteps``): SB3's PPO
    rounds ``steps`` up to whole rollouts of 2048 steps, the episodic agents to whole episodes. ``masked``: one
    CartPole-v1 env with an :class:`ActionMasker` that allows every action."""
    env: GymEnv | str = "CartPole-v1"
    if masked:
        env = make_vec_env("CartPole-v1", seed=seed, wrapper_class=partial(ActionMasker, action_mask_fn=every_action))
    model = cls(policy, env, seed=seed, device="cpu", **kwargs)
    return lambda: model.learn(steps).num_timesteps


#: The header of sections 0 and 1's tables (:func:`steps_row`).
HEADER = f"{'':<52} {'time':>10}  {'ratio':>7}  {'env steps':>9}  {'per step':>8}"


def steps_row(label: str, run: tuple[float, int], baseline: tuple[float, int], target: str = "") -> None:
    """One line of sections 0 and 1: the wall time of ``run`` (``(seconds, env steps)``), its ratio to
    ``baseline``'s and the ratio per env step taken (each algorithm rounds the budget up differently)."""
    (seconds, steps), (base_seconds, base_steps) = run, baseline
    per_step = (seconds / steps) / (base_seconds / base_steps)
    print(f"{label:<52} {seconds:9.3f}s  {seconds / base_seconds:7.2f}  {steps:>9}  {per_step:8.2f}   {target}")


def ppo_run(cls: type, updates: int, seed: int, **kwargs: object) -> Callable[[], object]:
    model = cls("MlpPolicy", make_sb3_vec_env(ENV_ID, N_ENVS, seed=seed), seed=seed, device="cpu", **kwargs)
    return lambda: model.learn(updates * ROLLOUT_STEPS)


def env_steps_only(updates: int, seed: int) -> Callable[[], object]:
    """The environment's share: ``updates`` rollouts of random actions, no policy."""
    venv = make_sb3_vec_env(ENV_ID, N_ENVS, seed=seed)
    rng = np.random.default_rng(seed)

    def run() -> None:
        for _ in range(updates):
            venv.reset()
            for _ in range(EPISODE_STEPS):
                venv.step(rng.normal(size=(N_ENVS, 4)).astype(np.float32))

    return run


def cartpole_section(args: argparse.Namespace) -> None:
    """Section 0: SB3 PPO vs OrderGradPPO's mean and the usage line on CartPole-v1."""
    steps = args.cartpole_steps
    print(f"CartPole-v1, defaults, {steps} env steps on one env, torch threads={args.threads}, best of {args.repeats}")
    # The mean at its defaults, and the usage line: cvar0.2 at its long-episode defaults (32 episodes per update,
    # the history baseline and its network, the level schedule), what a user who writes only the objective runs.
    labels = ("OrderGradPPO mean", "OrderGradPPO cvar0.2 (the usage line)")
    sb3, *ours = best_runs(
        [partial(cartpole_run, PPO, steps, 0)]
        + [partial(cartpole_run, OrderGradPPO, steps, 0, objective=objective) for objective in ("mean", "cvar0.2")],
        args.repeats,
    )
    print(HEADER)
    steps_row("SB3 PPO (baseline)", sb3, sb3)
    for label, run in zip(labels, ours, strict=True):
        steps_row(label, run, sb3, "target <= 1.10")  # per env step


def contrib_section(args: argparse.Namespace) -> None:
    """Section 1: sb3-contrib's algorithms vs their OrderGrad variants on CartPole-v1."""
    steps = args.contrib_steps
    print(f"sb3-contrib on CartPole-v1, defaults, {steps} env steps on one env, best of {args.repeats}")
    print(HEADER)
    for name, base_cls, cls, policy, kwargs, masked in CONTRIB:
        base, ours = best_runs(
            [
                partial(cartpole_run, base_cls, steps, 0, policy, masked),
                partial(cartpole_run, cls, steps, 0, policy, masked, **kwargs),
            ],
            args.repeats,
        )
        steps_row(f"{name} (baseline)", base, base)
        steps_row(f"{cls.__name__} {kwargs.get('objective', '')}".rstrip(), ours, base)


def portfolio_ppo_section(args: argparse.Namespace) -> None:
    """Section 2: OrderGradPPO vs SB3 PPO with the same rollout on the portfolio."""
    ppo_kwargs = dict(n_epochs=args.n_epochs, batch_size=args.batch_size)
    print(
        f"{ENV_ID}: {N_ENVS} envs x {EPISODE_STEPS} steps = {ROLLOUT_STEPS} steps per rollout, "
        f"n_epochs={args.n_epochs}, batch_size={args.batch_size}, torch threads={args.threads}, "
        f"best of {args.repeats}"
    )

    (sb3, _), (ours, _) = best_runs(
        [
            partial(ppo_run, PPO, args.updates, 0, n_steps=EPISODE_STEPS, **ppo_kwargs),
            partial(ppo_run, OrderGradPPO, args.updates, 0, objective="cvar0.2", n_episodes=N_ENVS, **ppo_kwargs),
        ],
        args.repeats,
    )
    print(f"\n{'measurement':<52} {'time':>10}  {'ratio':>7}")
    print(f"{'SB3 PPO, ' + str(args.updates) + ' updates (baseline)':<52} {sb3:9.3f}s  {1.0:7.2f}")
    print(f"{'OrderGradPPO cvar0.2, same':<52} {ours:9.3f}s  {ours / sb3:7.2f}   target <= 1.10")


def reinforce_section(args: argparse.Namespace) -> None:
    """Section 3: OrderGradREINFORCE's update at the paper's size against the env steps alone."""
    n = args.reinforce_updates
    env_only = best_time(lambda: env_steps_only(n, 1), args.repeats) / n

    def reinforce(objective: str) -> Callable[[], object]:
        model = OrderGradREINFORCE(
            "MlpPolicy",
            make_sb3_vec_env(ENV_ID, N_ENVS, seed=1),
            objective=objective,
            n_episodes=N_ENVS,
            learning_rate=3e-3,
            max_grad_norm=1.0,
            policy_kwargs=PAPER_POLICY,
            seed=1,
            device="cpu",
        )
        return lambda: model.learn(n * ROLLOUT_STEPS)

    print(f"OrderGradREINFORCE at the paper's size ({N_ENVS} episodes x {EPISODE_STEPS} decisions, linear policy)")
    print(f"{'env steps alone, per rollout (baseline)':<52} {env_only * 1e3:9.2f}ms  {1.0:7.2f}")
    per_update = {}
    for objective in ("mean", "cvar0.2@128"):
        per_update[objective] = best_time(partial(reinforce, objective), args.repeats) / n
        label = f"one update, {objective}"
        print(f"{label:<52} {per_update[objective] * 1e3:9.2f}ms  {per_update[objective] / env_only:7.2f}")
    worst = max(per_update.values())
    print(f"{'750 updates (projected, slower objective)':<52} {750 * worst:9.1f}s")
    total = 5 * sum(750 * t for t in per_update.values())
    print(f"{'5 seeds x 2 methods x 750 updates (projected)':<52} {total:9.1f}s   target <= 600 s")


#: Section 4's env: rendered frames of the lava grid (``uint8 [48, 80, 3]``, 16-pixel cells), small images that SB3's
#: ``NatureCNN`` reads (its smallest side is 36), with the grid's 30-step time limit.
IMAGE_ENV_ID = "RiskyLavaGrid-v0"


def image_env() -> gym.Env:
    """:data:`IMAGE_ENV_ID` observed as its ``rgb_array`` frames alone (Gymnasium's ``AddRenderObservation``)."""
    return AddRenderObservation(gym.make(IMAGE_ENV_ID, render_mode="rgb_array"), render_only=True)


def image_run(cls: type, steps: int, seed: int, **kwargs: object) -> Callable[[], int]:
    """``learn(steps)`` of a fresh ``CnnPolicy`` model on one :func:`image_env`; the run returns the env steps it took
    (each algorithm rounds ``steps`` up, as in :func:`cartpole_run`)."""
    model = cls("CnnPolicy", image_env(), seed=seed, device="cpu", **kwargs)
    return lambda: model.learn(steps).num_timesteps


def image_section(args: argparse.Namespace) -> None:
    """Section 4: SB3 PPO vs the usage line with ``CnnPolicy`` on image observations."""
    steps = args.image_steps
    print(
        f"{IMAGE_ENV_ID} as 48x80 RGB frames, CnnPolicy, defaults (SB3 n_steps={args.image_n_steps}), {steps} env "
        f"steps on one env, torch threads={args.threads}, best of {args.repeats}"
    )
    sb3, ours = best_runs(
        [
            partial(image_run, PPO, steps, 0, n_steps=args.image_n_steps),
            partial(image_run, OrderGradPPO, steps, 0, objective="cvar0.2"),
        ],
        args.repeats,
    )
    print(HEADER)
    steps_row("SB3 PPO CnnPolicy (baseline)", sb3, sb3)
    steps_row("OrderGradPPO CnnPolicy cvar0.2 (the usage line)", ours, sb3)


#: The sections, by number (``--sections``).
SECTIONS = (cartpole_section, contrib_section, portfolio_ppo_section, reinforce_section, image_section)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cartpole-steps", type=positive_int, default=20_000, help="env steps per timed CartPole run")
    parser.add_argument(
        "--contrib-steps", type=positive_int, default=2048, help="env steps per timed sb3-contrib CartPole run"
    )
    parser.add_argument("--updates", type=positive_int, default=10, help="rollouts + updates per timed PPO run")
    parser.add_argument("--reinforce-updates", type=positive_int, default=50, help="updates per timed REINFORCE run")
    parser.add_argument("--image-steps", type=positive_int, default=4096, help="env steps per timed image run")
    parser.add_argument(
        "--image-n-steps", type=positive_int, default=2048, help="SB3 PPO's rollout in the image runs (its default)"
    )
    parser.add_argument("--repeats", type=positive_int, default=3)
    parser.add_argument("--n-epochs", type=positive_int, default=10)
    parser.add_argument("--batch-size", type=positive_int, default=256)
    parser.add_argument("--threads", type=positive_int, default=1, help="torch threads (1: one core per run)")
    parser.add_argument(
        "--sections",
        type=int,
        nargs="+",
        choices=range(len(SECTIONS)),
        default=list(range(len(SECTIONS))),
        help=f"the sections to run (0-{len(SECTIONS) - 1})",
    )
    quick = {
        "cartpole_steps": 500,
        "contrib_steps": 128,
        "updates": 1,
        "reinforce_updates": 1,
        "repeats": 1,
        "n_epochs": 1,
        "image_steps": 64,
        "image_n_steps": 64,
    }
    args = parse_quick_args(parser, argv, quick)
    torch.set_num_threads(args.threads)
    for i, section in enumerate(SECTIONS):
        if i in args.sections:
            section(args)
            print()


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message=FEW_UPDATES_WARNING)
    main()
