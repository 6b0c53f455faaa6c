"""The scale of the usage line's per-step advantages on each task: what its entropy bonus is weighed against.

    python scripts/measure_advantage_scale.py [--envs RiskyLavaGrid-v0 GuardedMaze-v0 CartPole-v1 Acrobot-v1
                                              LunarLander-v3 cliffwalking] [--steps 60000] [--seed 0]

Trains ``OrderGradPPO("MlpPolicy", env, objective="cvar0.2")`` at its defaults and records, at each update, the root
mean square of the rollout's episode weights (after the running scale) and of its per-step advantages (after the
history baseline's lambda-returns, where the baseline is on). PPO's loss adds ``ent_coef`` times the entropy to the
mean of ``advantage * ratio`` over the steps, so the bonus's weight against the gradient is ``ent_coef`` over the
advantages' scale; SB3's PPO normalizes each minibatch's advantages to unit scale, so its ``ent_coef`` weighs the same
on every task. Prints each env's advantage scale over the updates (median, 10% and 90% quantiles) and the bonus
it makes of the fixed default, ``RANKED_ENT_COEF / scale``. ``cliffwalking`` is Gymnasium's slippery CliffWalking-v1
with a 100-step limit (``scripts/outside_probe.py``). ``--quick`` (CI) trains 2,000 steps on the lava grid.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import torch as th

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common.arguments import RANKED_ENT_COEF
from ordergrad_rl.agents.common.episodic import rollout_episode_weights, root_mean_square

DEFAULT_ENVS = ("RiskyLavaGrid-v0", "GuardedMaze-v0", "CartPole-v1", "Acrobot-v1", "LunarLander-v3", "cliffwalking")


def make_env(name: str) -> gym.Env | str:
    """An env id as it is; ``cliffwalking``: slippery CliffWalking-v1 with a 100-step limit."""
    if name == "cliffwalking":
        return gym.make("CliffWalking-v1", is_slippery=True, max_episode_steps=100)
    return name


def advantage_scales(env: str, steps: int, seed: int) -> np.ndarray:
    """``[updates, 2]``: the root mean square of each rollout's episode weights (per step) and per-step advantages."""
    model = OrderGradPPO("MlpPolicy", make_env(env), objective="cvar0.2", seed=seed, device="cpu")
    rows: list[tuple[float, float]] = []
    train = model.train

    def train_and_record() -> None:
        buffer = model.rollout_buffer
        weights = rollout_episode_weights(buffer, bool(model.value_baseline))  # "history" is a baseline too
        rows.append((root_mean_square(weights), root_mean_square(buffer.advantages)))
        train()

    model.train = train_and_record  # type: ignore[method-assign]
    model.learn(steps)
    return np.asarray(rows)


def main(argv: list[str] | None = None) -> dict[str, np.ndarray]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=list(DEFAULT_ENVS))
    parser.add_argument("--steps", type=int, default=60_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="CI: 2,000 steps on the lava grid")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    envs, steps = (["RiskyLavaGrid-v0"], 2_000) if args.quick else (args.envs, args.steps)
    print(f"{'env':<18} {'updates':>7}  {'weights rms':>11}  {'advantages rms (10%, median, 90%)':>34}  bonus / scale")
    results = {}
    for env in envs:
        rows = advantage_scales(env, steps, args.seed)
        results[env] = rows
        low, mid, high = np.quantile(rows[:, 1], [0.1, 0.5, 0.9])
        print(
            f"{env:<18} {len(rows):>7}  {np.median(rows[:, 0]):>11.3f}  {low:>10.3f} {mid:>10.3f} {high:>10.3f}  "
            f"{RANKED_ENT_COEF / mid:>13.3f}"
        )
    return results


if __name__ == "__main__":
    main()
