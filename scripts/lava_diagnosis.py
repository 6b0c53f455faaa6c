"""Why the episodic CVaR agents of ``reproduce peers`` fail on RiskyLavaGrid-v0: a small, pre-declared grid.

    python scripts/lava_diagnosis.py [--seeds 3] [--settings base steps300k ...] [--methods gcvar ordergrad_cvar]
                                     [--quick] [--json PATH]

Every run is ``reproduce peers``' lava protocol (``peers.make_model``: OrderGradREINFORCE, 16 envs, Adam 0.03,
N = 256 episodes per update, K = 128 for OrderGrad-CVaR, weights divided by their batch std, 100k env steps) with
one change per setting (the grid was fixed before running):

* ``base``: the protocol itself; ``steps300k``: 300k env steps;
* ``lr0.01`` / ``lr0.09``: the step size x0.3 / x3;
* ``ent0.01``: an entropy bonus ``ent_coef = 0.01`` (on the std-normalized weights' scale);
* ``n64`` / ``n1024``: N = 64 / 1024 episodes per update (K = N / 2);
* ``ent0.1`` (added after the others had run, not pre-declared): ``ent_coef = 0.1``.

Measured after every update, exactly (``peers.lava_outcomes``: the policy's outcome distribution by forward
propagation, no sampling): the training (stochastic) policy's P(goal), P(lava), P(timeout), mean and CVaR_0.2, its
entropy at the start cell and its probability of the safe move there (up); and from the batch itself the outcomes of
the episodes in its lower 20% (the episodes GCVaR's weights are nonzero on). At the end: the same exact numbers for
the greedy (deterministic) policy, which is what ``reproduce peers`` evaluates; "safe" means its exact CVaR_0.2 is
within 0.05 of the safe path's 0.951. ``--figure PATH`` draws the traces (mean over seeds) per setting and method;
``--from-json`` rebuilds the table and the figure from earlier ``--json`` files instead of training.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from ordergrad_rl.common.options import positive_int
from ordergrad_rl.common.progress import progress_bar
from ordergrad_rl.common.reports import markdown_table, write_json
from ordergrad_rl.experiments.peers import ALPHA, METHODS, Config, lava_outcomes, make_model

SAFE_CVAR = 0.951
#: setting -> (Config changes, ent_coef).
SETTINGS: dict[str, tuple[dict[str, Any], float]] = {
    "base": ({}, 0.0),
    "steps300k": ({"lava_steps": 300_000}, 0.0),
    "lr0.01": ({"lava_learning_rate": 0.01}, 0.0),
    "lr0.09": ({"lava_learning_rate": 0.09}, 0.0),
    "ent0.01": ({}, 0.01),
    "n64": ({"n_episodes": 64, "k": 32}, 0.0),
    "n1024": ({"n_episodes": 1024, "k": 512}, 0.0),
    # Added after the grid above had run (ent_coef 0.01 had barely moved the entropy): a 10x larger bonus.
    "ent0.1": ({}, 0.1),
}
START_CELL, UP = 5, 0


def policy_table(model: Any) -> np.ndarray:
    """``[15, 4]`` action probabilities of the model's policy in every cell."""
    obs, _ = model.policy.obs_to_tensor(np.arange(15))
    with th.no_grad():
        return model.policy.get_distribution(obs).distribution.probs.numpy().astype(np.float64)


def batch_tail(returns: np.ndarray, lengths: np.ndarray) -> dict[str, float]:
    """Outcome shares among the batch's ``ceil(alpha N)`` lowest returns (goal: R + L = 10, lava: R + L = -15)."""
    tail = np.argsort(returns, kind="stable")[: math.ceil(ALPHA * len(returns))]
    total = returns[tail] + lengths[tail]
    return {
        "tail_goal": float(np.mean(np.isclose(total, 10.0))),
        "tail_lava": float(np.mean(np.isclose(total, -15.0))),
        "tail_timeout": float(np.mean(~np.isclose(total, 10.0) & ~np.isclose(total, -15.0))),
        "tail_mean_length": float(np.mean(lengths[tail])),
    }


def setting_config(setting: str, quick: bool = False) -> Config:
    """The peers Config of a setting (``quick``: 2000 env steps)."""
    config = dataclasses.replace(Config(), **SETTINGS[setting][0])
    return dataclasses.replace(config, lava_steps=2000) if quick else config


def run(setting: str, method: str, seed: int, config: Config, bar: Any) -> dict[str, Any]:
    """One run: the trace after every update and the greedy policy's exact outcomes at the end."""
    from stable_baselines3.common.callbacks import BaseCallback

    ent_coef = SETTINGS[setting][1]
    model = make_model("lava", method, seed, config)
    model.ent_coef = ent_coef
    trace: list[dict[str, float]] = []

    def record(steps: int, batch: dict[str, float]) -> None:
        probs = policy_table(model)
        start = probs[START_CELL]
        entry = {"steps": steps, **lava_outcomes(probs), **batch}
        entry.update(start_entropy=float(-(start * np.log(start + 1e-300)).sum()), start_up=float(start[UP]))
        trace.append(entry)

    class Trace(BaseCallback):
        reported = 0

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            buffer = model.rollout_buffer
            # The batch was collected by the policy before this update: record it with that policy's numbers.
            record(self.num_timesteps, batch_tail(buffer.episode_returns, buffer.episode_lengths.astype(float)))
            done = min(self.num_timesteps, config.lava_steps)
            bar.update(done - self.reported)
            self.reported = done

    start = time.perf_counter()
    model.learn(config.lava_steps, callback=Trace())
    seconds = time.perf_counter() - start
    greedy = lava_outcomes(np.eye(4)[policy_table(model).argmax(axis=1)])
    return {
        "setting": setting,
        "method": method,
        "seed": seed,
        "updates": len(trace),
        "trace": trace,
        "final_stochastic": lava_outcomes(policy_table(model)),
        "greedy": greedy,
        "safe": greedy["cvar"] >= SAFE_CVAR - 0.05,
        "seconds": seconds,
    }


def first_move_rows() -> list[list[str]]:
    """The uniform policy with the start cell's action fixed to each move: its exact outcomes, as table rows."""
    rows = []
    for move, name in enumerate(("up (safe path)", "right (shortcut)", "down", "left")):
        probs = np.full((15, 4), 0.25)
        probs[START_CELL] = np.eye(4)[move]
        out = lava_outcomes(probs)
        rows.append([name, *(f"{out[k]:.1%}" for k in ("goal", "lava", "timeout")), f"{out['mean']:.2f}"])
        rows[-1].append(f"{out['cvar']:.2f}")
    return rows


def summary_rows(runs: list[dict[str, Any]], settings: list[str], methods: list[str]) -> list[list[Any]]:
    """One row per (setting, method): safe seeds, the greedy policy's exact numbers (mean over seeds), and the
    trace's first-update tail composition and lava probability."""
    rows = []
    for setting in settings:
        for method in methods:
            mine = [r for r in runs if r["setting"] == setting and r["method"] == method]
            greedy = {key: np.mean([r["greedy"][key] for r in mine]) for key in ("mean", "cvar", "lava", "timeout")}
            rows.append(
                [
                    setting,
                    METHODS[method].label,
                    f"{sum(r['safe'] for r in mine)}/{len(mine)}",
                    " ".join(f"{r['greedy']['cvar']:.1f}" for r in mine),
                    f"{greedy['mean']:.2f}",
                    f"{greedy['lava']:.1%}",
                    f"{np.mean([r['final_stochastic']['lava'] for r in mine]):.1%}",
                    f"{np.mean([r['trace'][-1]['start_entropy'] for r in mine]):.2f}",
                    f"{np.mean([r['updates'] for r in mine]):.0f}",
                    f"{np.mean([r['seconds'] for r in mine]):.0f}",
                ]
            )
    return rows


#: (trace key, panel title) of the figure.
PANELS: tuple[tuple[str, str], ...] = (
    ("start_up", "P(safe first move: up) at the start cell"),
    ("tail_mean_length", "mean length of the batch's lowest 20%"),
    ("lava", "P(lava) of the training policy (exact)"),
    ("cvar", "CVaR_0.2 of the training policy (exact)"),
)


def plot(runs: list[dict[str, Any]], path: Path) -> Path:
    """The traces against env steps, mean over seeds: one colour per setting, solid GCVaR, dashed OrderGrad."""
    from ordergrad_rl.common.reports import pyplot, save_figure

    plt = pyplot()
    fig, grid = plt.subplots(2, 2, figsize=(12, 8))
    settings = list(dict.fromkeys(r["setting"] for r in runs))
    colors = dict(zip(settings, plt.rcParams["axes.prop_cycle"].by_key()["color"], strict=False))
    for (setting, method), style in (
        ((s, m), ls) for s in settings for m, ls in (("gcvar", "-"), ("ordergrad_cvar", "--"))
    ):
        mine = [r for r in runs if r["setting"] == setting and r["method"] == method]
        if not mine:
            continue
        length = min(len(r["trace"]) for r in mine)
        steps = np.mean([[e["steps"] for e in r["trace"][:length]] for r in mine], axis=0)
        for ax, (key, title) in zip(grid.flat, PANELS, strict=True):
            values = np.mean([[e[key] for e in r["trace"][:length]] for r in mine], axis=0)
            label = f"{setting}, {METHODS[method].label}"
            ax.plot(steps, values, ls=style, color=colors[setting], lw=1.3, label=label)
            ax.set(title=title, xlabel="env steps")
    grid[1, 1].axhline(SAFE_CVAR, color="k", lw=0.8, ls=":")
    grid[0, 0].legend(fontsize=6, ncols=2)
    fig.suptitle(f"RiskyLavaGrid-v0: episodic CVaR_0.2 training from the uniform policy ({len(runs)} runs)")
    fig.tight_layout()
    return save_figure(fig, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=positive_int, default=3, help="seeds per cell (default: %(default)s)")
    parser.add_argument("--settings", nargs="+", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument(
        "--methods", nargs="+", choices=["gcvar", "ordergrad_cvar"], default=["gcvar", "ordergrad_cvar"]
    )
    parser.add_argument("--quick", action="store_true", help="2000 steps per run (a smoke test)")
    parser.add_argument("--json", type=Path, default=None, help="write every run's trace to this JSON file")
    parser.add_argument("--figure", type=Path, default=None, help="draw the traces to this image file")
    parser.add_argument(
        "--from-json", type=Path, nargs="+", default=None, metavar="PATH", help="read the runs of earlier --json files"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    th.set_num_threads(1)

    start = time.perf_counter()
    runs: list[dict[str, Any]] = []
    if args.from_json:
        import json

        runs = [r for path in args.from_json for r in json.loads(path.read_text())["runs"]]
        args.settings = list(dict.fromkeys(r["setting"] for r in runs))
        args.methods = list(dict.fromkeys(r["method"] for r in runs))
    else:
        configs = {setting: setting_config(setting, args.quick) for setting in args.settings}
        total = args.seeds * len(args.methods) * sum(config.lava_steps for config in configs.values())
        runs_text = f"{args.seeds * len(args.methods) * len(args.settings)} runs"
        with progress_bar(runs_text, total, "step", args.quiet) as bar:
            for setting in args.settings:
                for method in args.methods:
                    for seed in range(args.seeds):
                        runs.append(run(setting, method, seed, configs[setting], bar))
    wall = time.perf_counter() - start
    initial = lava_outcomes(np.full((15, 4), 0.25))
    print(
        "RiskyLavaGrid-v0, the peers lava protocol with one change per setting; exact outcome numbers. Initial "
        f"(uniform) policy: P(goal) {initial['goal']:.1%}, P(lava) {initial['lava']:.1%}, P(timeout) "
        f"{initial['timeout']:.1%}, mean {initial['mean']:.2f}, CVaR_0.2 {initial['cvar']:.2f}, start entropy "
        f"{math.log(4):.3f}.\n"
    )
    print("The uniform policy with its first move at the start cell fixed (exact):\n")
    print(markdown_table(["first move", "P(goal)", "P(lava)", "P(timeout)", "mean", "CVaR_0.2"], first_move_rows()))
    print()
    headers = [
        "setting",
        "method",
        "safe greedy policy",
        "greedy CVaR_0.2 per seed",
        "greedy mean",
        "greedy P(lava)",
        "training policy P(lava), end",
        "start entropy, end",
        "updates",
        "s/run",
    ]
    print(markdown_table(headers, summary_rows(runs, args.settings, args.methods)))
    print(f"\ntotal time {wall:.0f} s")
    if args.figure is not None:
        print(f"figure: {plot(runs, args.figure)}")
    if args.json is not None:
        print(f"json: {write_json(args.json, {'args': vars(args), 'initial': initial, 'runs': runs, 'wall': wall})}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
