"""Environment throughput: SyntheticTailRisk and TargetSum faces vs. Gymnasium's CartPole-v1, in one run.

Every face is stepped the same way (fixed pre-drawn actions, reset on episode end) and timed with
``time.perf_counter`` after a warmup, best of several repeats. Single-threaded by construction.

    python scripts/bench_envs.py [--repeats 5] [--num-envs 256] [--quick]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one core, as the targets are stated
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402
from collections.abc import Callable  # noqa: E402

import gymnasium as gym  # noqa: E402
import numpy as np  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import ordergrad_rl  # noqa: E402, F401  (registers the envs)
from ordergrad_rl.common.options import parse_quick_args, positive_int  # noqa: E402
from ordergrad_rl.envs.sb3_vec_env import TailRiskVecEnv, make_sb3_vec_env  # noqa: E402

TAILRISK = "SyntheticTailRisk-v0"
TARGETSUM = "TargetSum-v0"


def answer_like_tokens(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """TargetSum actions shaped like answers: <eos> 15%, a number 45%, a running total 40% (mean length ~6)."""
    kind = rng.choice(3, size=shape, p=[0.15, 0.45, 0.40])
    numbers = rng.integers(1, 13, size=shape)
    totals = rng.integers(13, 73, size=shape)
    return np.where(kind == 0, 0, np.where(kind == 1, numbers, totals))


def best_rate(run: Callable[[], int], repeats: int) -> float:
    """Best steps/s over ``repeats`` timed calls of ``run`` (which returns its step count)."""
    run()  # warmup
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        steps = run()
        rates.append(steps / (time.perf_counter() - start))
    return max(rates)


def single_env_runner(env: gym.Env, actions: np.ndarray) -> Callable[[], int]:
    """Step one env through ``actions``, resetting at episode ends."""
    env.reset(seed=0)

    def run() -> int:
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()
        return len(actions)

    return run


def gym_vector_runner(
    envs: gym.vector.VectorEnv, actions: np.ndarray, step_key: str | None = None
) -> Callable[[], int]:
    """Step a Gymnasium vector env (NEXT_STEP autoreset).

    With ``step_key``, only env steps whose info carries it count (the tail-risk envs restarting
    in a call carry no step info); without, every env of every call counts (CartPole: this
    counts its reset steps too, a small advantage to the baseline).
    """
    envs.reset(seed=0)

    def run() -> int:
        steps = 0
        for action in actions:
            *_, info = envs.step(action)
            steps += len(action) if step_key is None else int(info.get(f"_{step_key}", np.zeros(1)).sum())
        return steps

    return run


def sb3_vec_runner(venv, actions: np.ndarray) -> Callable[[], int]:
    """Step an SB3 VecEnv (same-step autoreset: every call is a decision step of every env)."""
    venv.reset()

    def run() -> int:
        for action in actions:
            venv.step(action)
        return len(actions) * venv.num_envs

    return run


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=positive_int, default=5)
    parser.add_argument("--num-envs", type=positive_int, default=256)
    args = parse_quick_args(parser, argv, {"repeats": 1, "num_envs": 8})
    n, rng = args.num_envs, np.random.default_rng(0)

    vec_logits = rng.normal(0, 1, size=(17 * 20, n, 4)).astype(np.float32)  # 20 episodes + resets
    single_logits = rng.normal(0, 1, size=(16 * 300, 4)).astype(np.float32)
    cartpole_single = rng.integers(0, 2, size=16 * 300)
    cartpole_vec = rng.integers(0, 2, size=(17 * 20, n))
    dummy_logits = vec_logits[: 16 * 2]  # DummyVecEnv of 256 python envs is slow: 2 episodes
    tokens_vec = answer_like_tokens(rng, (300, n))
    tokens_single = answer_like_tokens(rng, (5000,))

    rates = {
        "tailrisk gym.make_vec native": best_rate(
            gym_vector_runner(gym.make_vec(TAILRISK, num_envs=n), vec_logits, step_key="weights"), args.repeats
        ),
        "tailrisk gym.make (single)": best_rate(single_env_runner(gym.make(TAILRISK), single_logits), args.repeats),
        "tailrisk SB3 TailRiskVecEnv": best_rate(sb3_vec_runner(TailRiskVecEnv(n), vec_logits), args.repeats),
        "tailrisk make_sb3_vec_env (VecMonitor)": best_rate(
            sb3_vec_runner(make_sb3_vec_env(TAILRISK, n, seed=0), vec_logits), args.repeats
        ),
        "tailrisk SB3 DummyVecEnv (python loop)": best_rate(
            sb3_vec_runner(DummyVecEnv([lambda: gym.make(TAILRISK)] * n), dummy_logits), max(1, args.repeats // 2)
        ),
        "targetsum gym.make_vec native": best_rate(
            gym_vector_runner(gym.make_vec(TARGETSUM, num_envs=n), tokens_vec, step_key="length"), args.repeats
        ),
        "targetsum gym.make (single)": best_rate(single_env_runner(gym.make(TARGETSUM), tokens_single), args.repeats),
        "targetsum make_sb3_vec_env (VecMonitor)": best_rate(
            sb3_vec_runner(make_sb3_vec_env(TARGETSUM, n, seed=0), tokens_vec), args.repeats
        ),
        "targetsum SB3 DummyVecEnv (python loop)": best_rate(
            sb3_vec_runner(DummyVecEnv([lambda: gym.make(TARGETSUM)] * n), tokens_vec[:60]), max(1, args.repeats // 2)
        ),
        "CartPole-v1 gym.make (single)": best_rate(
            single_env_runner(gym.make("CartPole-v1"), cartpole_single), args.repeats
        ),
        "CartPole-v1 gym.make_vec sync": best_rate(
            gym_vector_runner(gym.make_vec("CartPole-v1", num_envs=n, vectorization_mode="sync"), cartpole_vec),
            args.repeats,
        ),
        "CartPole-v1 gym.make_vec native": best_rate(
            gym_vector_runner(gym.make_vec("CartPole-v1", num_envs=n), cartpole_vec), args.repeats
        ),
    }
    width = max(map(len, rates))
    print(f"env steps per second (best of {args.repeats}, num_envs={n}, one thread)")
    for name, rate in rates.items():
        print(f"  {name:<{width}}  {rate:>12,.0f}")
    print("ratios")
    ratios = {
        "tailrisk native vector / CartPole sync vector": (
            "tailrisk gym.make_vec native",
            "CartPole-v1 gym.make_vec sync",
        ),
        "tailrisk native vector / CartPole native vector": (
            "tailrisk gym.make_vec native",
            "CartPole-v1 gym.make_vec native",
        ),
        "tailrisk single / CartPole single": ("tailrisk gym.make (single)", "CartPole-v1 gym.make (single)"),
        "targetsum native vector / CartPole native vector": (
            "targetsum gym.make_vec native",
            "CartPole-v1 gym.make_vec native",
        ),
        "targetsum native vector / CartPole sync vector": (
            "targetsum gym.make_vec native",
            "CartPole-v1 gym.make_vec sync",
        ),
        "targetsum single / CartPole single": ("targetsum gym.make (single)", "CartPole-v1 gym.make (single)"),
        "tailrisk native vector / tailrisk single": ("tailrisk gym.make_vec native", "tailrisk gym.make (single)"),
        "SB3 TailRiskVecEnv / SB3 DummyVecEnv": (
            "tailrisk SB3 TailRiskVecEnv",
            "tailrisk SB3 DummyVecEnv (python loop)",
        ),
        "targetsum make_sb3_vec_env / SB3 DummyVecEnv": (
            "targetsum make_sb3_vec_env (VecMonitor)",
            "targetsum SB3 DummyVecEnv (python loop)",
        ),
    }
    for name, (num, den) in ratios.items():
        print(f"  {name:<{width + 10}}  {rates[num] / rates[den]:>8.1f}x")
    targets = {"tailrisk gym.make_vec native": 200_000, "tailrisk gym.make (single)": 5_000}
    for name, target in targets.items():
        status = "ok" if rates[name] >= target else "BELOW TARGET"
        print(f"target {name}: >= {target:,}/s  {status}")


if __name__ == "__main__":
    main()
