"""Where does the point navigation's greedy path spend its steps? A benchmark agent's greedy path, step by step.

    python scripts/nav_greedy_path.py [--method og-cvar-nosched-novphase] [--seed 0] [--timesteps 300000]
                                      [--checkpoints 6] [--json PATH] [--quick] [--quiet]

Trains one ``reproduce benchmarks`` run on ``nav`` (``RiskyShortcutNav-v2``) and, at ``--checkpoints`` even points
of training, follows its greedy policy from the start: per step the position, the Gaussian's mean action before
clipping, the move made. Printed per checkpoint: the steps to the goal (50: a time-out), the greedy policy's exact
CVaR_0.2 (as ``reproduce benchmarks`` scores it), the Gaussian's std per axis, the share of steps whose mean action
lies outside the action box on both axes, and the steps that end on the arena's edge. Then the last path.

A mean outside the box on both axes is a saturated diagonal: SB3 clips the sampled action to the box and the env
clips it to norm 1, so every draw near that mean makes the same move, ``0.1 / sqrt(2)`` per axis, whatever the
noise. Pushed into an edge, the same action slides along it. A path made of such moves is noise-free at a cost in
steps; the shortest detour (23 steps) needs unsaturated moves, whose noise only a small std makes cheap.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from ordergrad_rl.common.options import positive_int, seed_int
from ordergrad_rl.common.progress import progress_bar
from ordergrad_rl.common.reports import markdown_table, write_json
from ordergrad_rl.envs.shortcut_nav import ARENA, STEP_SIZE
from ordergrad_rl.experiments import benchmarks as bench

TASK = "nav"
#: The arena's low and high corners, ``[[x_low, y_low], [x_high, y_high]]``: a position on either coordinate's bound
#: lies on its edge.
CORNERS = np.array(ARENA).T


def follow_greedy(mean_action: Callable[[np.ndarray], np.ndarray], env: Any) -> list[dict[str, Any]]:
    """One episode of the greedy policy whose mean action is ``mean_action(obs)`` (``[2]``), acting as SB3's
    ``predict(deterministic=True)`` does on a ``Box``: the mean clipped to the action box.

    :return: a row per step: ``position`` before it, ``mean`` (unclipped), ``move`` (in step sizes), ``reward``,
        ``saturated`` (the mean outside the box on both axes) and ``edge`` (the step ends on the arena's edge).
    """
    obs, _ = env.reset(seed=0)
    low, high = env.action_space.low, env.action_space.high
    rows: list[dict[str, Any]] = []
    done = False
    while not done:
        mean = np.asarray(mean_action(obs), dtype=np.float64)
        before = np.array(obs[:2], dtype=np.float64)
        obs, reward, terminated, truncated, _ = env.step(np.clip(mean, low, high).astype(np.float32))
        after = np.array(obs[:2], dtype=np.float64)
        on_edge = bool(np.any(np.isclose(after, CORNERS[0]) | np.isclose(after, CORNERS[1])))
        rows.append({"position": before.round(4).tolist(), "mean": mean.round(4).tolist(),
                     "move": ((after - before) / STEP_SIZE).round(4).tolist(), "reward": float(reward),
                     "saturated": bool(np.all((mean < low) | (mean > high))), "edge": on_edge})  # fmt: skip
        done = terminated or truncated
    return rows


def path_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Steps, return, the share of saturated steps and the number of steps ending on the edge of one greedy path."""
    return {"steps": len(rows), "return": float(sum(r["reward"] for r in rows)),
            "saturated_share": float(np.mean([r["saturated"] for r in rows])),
            "edge_steps": int(sum(r["edge"] for r in rows))}  # fmt: skip


def model_mean_action(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """The Gaussian policy's mean action (before clipping) of ``model`` at an observation."""

    def mean_action(obs: np.ndarray) -> np.ndarray:
        with th.no_grad():
            tensor, _ = model.policy.obs_to_tensor(obs)
            return model.policy.get_distribution(tensor).distribution.mean.cpu().numpy()[0]

    return mean_action


def checkpoint(model: Any, env: Any, score: Callable[[Any], tuple[float, float]]) -> dict[str, Any]:
    """The greedy path of ``model`` now, its summary, its exact greedy CVaR_0.2 and the Gaussian's std."""
    rows = follow_greedy(model_mean_action(model), env)
    std = model.policy.log_std.detach().exp().cpu().numpy()
    return {"timesteps": int(model.num_timesteps), **path_summary(rows), "greedy_cvar": score(model)[0],
            "std": std.round(4).tolist(), "path": rows}  # fmt: skip


class Checkpoints(BaseCallback):
    """Follows the greedy path every ``every`` env steps (and reports progress to ``bar``)."""

    def __init__(self, env: Any, score: Callable[[Any], tuple[float, float]], every: int, bar: Any) -> None:
        super().__init__()
        self.env, self.score, self.every, self.bar = env, score, every, bar
        self.rows: list[dict[str, Any]] = []

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)
        if self.num_timesteps >= (len(self.rows) + 1) * self.every:
            self.rows.append(checkpoint(self.model, self.env, self.score))
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--method", choices=list(bench.METHODS), default="og-cvar-nosched-novphase")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--timesteps", type=positive_int, default=None, help="default: the task's budget")
    parser.add_argument("--checkpoints", type=positive_int, default=6)
    parser.add_argument("--quick", action="store_true", help="3,000 steps, 2 checkpoints (CI; numbers mean nothing)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", type=Path, default=None, help="write every checkpoint's path")
    args = parser.parse_args(argv)
    th.set_num_threads(1)
    import gymnasium as gym

    task = bench.TASKS[TASK]
    timesteps, count = (3_000, 2) if args.quick else (args.timesteps or task.timesteps, args.checkpoints)
    env = gym.make(task.env_id)
    score = functools.partial(bench.deterministic_score, env=gym.make(task.env_id).unwrapped)
    model = bench.build_model(bench.METHODS[args.method], TASK, args.seed)
    with progress_bar(f"{TASK}/{args.method}/seed{args.seed}", timesteps, "step", args.quiet) as bar:
        callback = Checkpoints(env, score, max(1, timesteps // count), bar)
        model.learn(timesteps, callback=callback)
    rows = callback.rows
    if not rows or rows[-1]["timesteps"] != model.num_timesteps:
        rows.append(checkpoint(model, env, score))
    columns = ["env steps", "steps", "greedy CVaR_0.2", "std", "saturated", "edge steps"]
    table = [[r["timesteps"], r["steps"], r["greedy_cvar"], " ".join(f"{s:.2f}" for s in r["std"]),
              f"{r['saturated_share']:.0%}", r["edge_steps"]] for r in rows]  # fmt: skip
    print(markdown_table(columns, table))
    print(f"\nthe greedy path at {rows[-1]['timesteps']} env steps:")
    print(markdown_table(["step", "position", "mean action", "move", "saturated", "edge"],
                         [[i, r["position"], r["mean"], r["move"], r["saturated"], r["edge"]]
                          for i, r in enumerate(rows[-1]["path"])]))  # fmt: skip
    if args.json is not None:
        payload = {"task": TASK, "method": args.method, "seed": args.seed, "checkpoints": rows}
        print(f"json: {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
