"""Robust regression with an order-statistic objective (paper App. "Robust regression", Table tab:robust-regression).

Clean data y = 2x - 1 + N(0, 0.25^2), x ~ U[-3, 3]; a fraction 0.12 of the training labels comes from the wrong
line y = -1.4x + 4.2 + N(0, 0.45^2). A linear model y_hat = w x + b is trained with Adam on minibatches of 256,
per-example reward -(y_hat - y)^2, by the reparameterization (RP) estimator: the gradient of the batch
L-statistic value lstat_value(rewards, objective) through the sort. Objectives: Mean, Median@15, TrimM:4@16.

Why these k: once the model fits the clean line the outliers are the worst-rewarded examples, so an objective
whose lowest weighted rank in a k-subset is j ignores them unless the k-subset holds >= j outliers. With 12%
contamination that chance is 1.2e-4 for Median@15 (j = 8) and 3.4% for TrimM:4@16 (j = 5: the middle half of each
16-subset). It grows fast with k for the trimmed mean (15% at k = 24, 70% at k = 48), and for the median a small
k lets the tails in (4% at k = 3), while a large k concentrates the weight on fewer examples (noisier steps).
The --sweep table measures this trade-off.

Adam: learning rate 0.05 (the robust fits reach the clean line in ~60 of the 180 steps), zero initialisation
(w, b) = (0, 0). Training sets of 2000 examples (240 outliers), minibatches drawn without replacement each step;
the same data and minibatch sequence for every method of a seed. Clean MSE is on 10^6 clean test points
(label noise included, so 0.0625 is the floor).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
from scipy import stats

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import add_output_arguments, positive_float, positive_int
from ordergrad_rl.common.progress import progress
from ordergrad_rl.common.reports import markdown_table, print_checks, pyplot, save_figure, write_json
from ordergrad_rl.core import Objective

#: (slope, intercept, noise sd) of the clean and the outlier populations.
CLEAN_LINE = (2.0, -1.0, 0.25)
OUTLIER_LINE = (-1.4, 4.2, 0.45)
X_HALF_WIDTH = 3.0
#: Seed of the shared clean test set (distinct from the training seeds' streams).
TEST_SEED = 987_654_321

#: The paper's Table tab:robust-regression: clean MSE, its SE over seeds, |w - w*|, |b - b*|.
PAPER_TABLE: dict[str, tuple[float, float, float, float]] = {
    "median": (0.0641, 0.00112, 0.0139, 0.0189),
    "trimmed": (0.0656, 0.00107, 0.0237, 0.0226),
    "mean": (1.1, 0.101, 0.433, 0.667),
}
LABELS = {"median": "Median", "trimmed": "Trimmed (m=4)", "mean": "Mean"}
COLORS = {"median": "tab:blue", "trimmed": "tab:green", "mean": "tab:red"}
STYLES = {"median": "--", "trimmed": "-.", "mean": "--"}


@dataclass(frozen=True)
class Config:
    """Settings of one reproduction (defaults: the paper's protocol and the choices stated in the module doc)."""

    seeds: int = 10
    steps: int = 180
    batch_size: int = 256
    lr: float = 0.05
    n_train: int = 2000
    outlier_fraction: float = 0.12
    n_test: int = 1_000_000
    median_k: int = 15
    trim_k: int = 16
    sweep: bool = False
    median_sweep_k: tuple[int, ...] = (3, 5, 9, 15, 31, 63)
    trim_sweep_k: tuple[int, ...] = (9, 12, 16, 20, 32, 48)

    def objectives(self) -> dict[str, Objective]:
        """Method key -> bound objective."""
        return {
            "median": Objective.parse("median", self.median_k),
            "trimmed": Objective.parse("TrimM:4", self.trim_k),
            "mean": Objective.parse("mean"),
        }

    @property
    def n_outliers(self) -> int:
        return round(self.outlier_fraction * self.n_train)


# ---------------------------------------------------------------------------------------------------- data
@dataclass(frozen=True)
class Dataset:
    """A training set: inputs ``x``, labels ``y`` and which labels are outliers, each shape ``(n,)``."""

    x: np.ndarray
    y: np.ndarray
    outlier: np.ndarray


def make_training_set(seed: int, n: int, n_outliers: int) -> Dataset:
    """Clean data with exactly ``n_outliers`` labels (chosen uniformly) replaced by the outlier line."""
    rng = np.random.default_rng([seed, 0])
    x = rng.uniform(-X_HALF_WIDTH, X_HALF_WIDTH, n)
    w, b, sd = CLEAN_LINE
    y = w * x + b + rng.normal(0.0, sd, n)
    outlier = np.zeros(n, dtype=bool)
    outlier[rng.permutation(n)[:n_outliers]] = True
    w_out, b_out, sd_out = OUTLIER_LINE
    y[outlier] = w_out * x[outlier] + b_out + rng.normal(0.0, sd_out, n_outliers)
    return Dataset(x, y, outlier)


@dataclass(frozen=True)
class CleanTestSet:
    """A clean test set kept as its second moments: the MSE of any line ``(w, b)`` is then exact and O(1)."""

    mean_xx: float
    mean_x: float
    mean_xy: float
    mean_y: float
    mean_yy: float

    @classmethod
    def from_arrays(cls, x: np.ndarray, y: np.ndarray) -> CleanTestSet:
        """The moments of test inputs ``x`` and labels ``y``."""
        return cls(*(float(np.mean(v)) for v in (x * x, x, x * y, y, y * y)))

    @classmethod
    def sample(cls, n: int, seed: int = TEST_SEED) -> CleanTestSet:
        """``n`` fresh clean examples."""
        rng = np.random.default_rng(seed)
        x = rng.uniform(-X_HALF_WIDTH, X_HALF_WIDTH, n)
        w, b, sd = CLEAN_LINE
        return cls.from_arrays(x, w * x + b + rng.normal(0.0, sd, n))

    @overload
    def mse(self, w: float, b: float) -> float: ...
    @overload
    def mse(self, w: np.ndarray, b: np.ndarray | float) -> np.ndarray: ...
    @overload
    def mse(self, w: float, b: np.ndarray) -> np.ndarray: ...
    def mse(self, w: np.ndarray | float, b: np.ndarray | float) -> np.ndarray | float:
        """``mean((w x + b - y)^2)`` over the test set, expanded in its moments (broadcasts over ``w``, ``b``)."""
        return (
            w * w * self.mean_xx
            + 2 * w * b * self.mean_x
            + b * b
            - 2 * w * self.mean_xy
            - 2 * b * self.mean_y
            + self.mean_yy
        )


def outlier_leak_probability(objective: Objective, n_train: int, n_outliers: int) -> float:
    """Chance that a uniform k-subset of the training set lets an outlier into the objective's weighted ranks.

    Near the clean fit the outliers have the lowest rewards, so they fill a k-subset's lowest ranks. The
    objective's lowest rank with non-zero weight is ``j`` (1-based, low to high); an outlier gets weight only when
    the subset holds at least ``j`` outliers: a hypergeometric tail. (A k-subset of a uniform minibatch is a
    uniform k-subset of the training set, so the minibatch size does not enter.)
    """
    j = int(np.flatnonzero(objective.weights)[0]) + 1
    return float(stats.hypergeom(n_train, n_outliers, objective.k).sf(j - 1))


# ---------------------------------------------------------------------------------------------------- training
def fit_line(data: Dataset, objective: Objective, config: Config, seed: int) -> np.ndarray:
    """Train ``y_hat = w x + b`` by Adam on ``-lstat_value(-(y_hat - y)^2, objective)``; the RP estimator.

    :return: the parameters after every step, shape ``(steps + 1, 2)`` (row 0 is the initialisation (0, 0)).
    """
    import torch

    from ordergrad_rl.core import lstat_value

    # Common random numbers: every method of a seed sees the same minibatch sequence.
    batches = np.random.default_rng([seed, 1])
    x, y = torch.from_numpy(data.x), torch.from_numpy(data.y)
    params = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.Adam([params], lr=config.lr)
    path = np.zeros((config.steps + 1, 2))
    for step in range(config.steps):
        index = torch.from_numpy(batches.choice(data.x.size, config.batch_size, replace=False))
        rewards = -((params[0] * x[index] + params[1] - y[index]) ** 2)
        loss = -lstat_value(rewards, objective)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        path[step + 1] = params.detach().numpy()
    return path


def _train_all(
    objectives: dict[str, Objective], config: Config, test: CleanTestSet, desc: str, quiet: bool
) -> dict[str, dict[str, np.ndarray]]:
    """Fit every objective on every seed.

    :return: per method ``w``, ``b``, ``clean_mse`` of shape ``(seeds,)`` and ``curve`` of shape ``(seeds, steps + 1)``.
    """
    out: dict[str, dict[str, list[Any]]] = {key: {"w": [], "b": [], "clean_mse": [], "curve": []} for key in objectives}
    jobs = [(seed, key) for seed in range(config.seeds) for key in objectives]
    data = None
    for seed, key in progress(jobs, desc, quiet=quiet):
        if data is None or data[0] != seed:
            data = (seed, make_training_set(seed, config.n_train, config.n_outliers))
        path = fit_line(data[1], objectives[key], config, seed)
        curve = test.mse(path[:, 0], path[:, 1])
        for name, value in (("w", path[-1, 0]), ("b", path[-1, 1]), ("clean_mse", curve[-1]), ("curve", curve)):
            out[key][name].append(value)
    return {key: {name: np.asarray(v) for name, v in d.items()} for key, d in out.items()}


def _summary(runs: dict[str, np.ndarray]) -> dict[str, float]:
    mse = runs["clean_mse"]
    w_star, b_star, _ = CLEAN_LINE
    return {
        "clean_mse": float(mse.mean()),
        "clean_mse_se": float(mse.std(ddof=1) / math.sqrt(mse.size)) if mse.size > 1 else float("nan"),
        "abs_w_error": float(np.abs(runs["w"] - w_star).mean()),
        "abs_b_error": float(np.abs(runs["b"] - b_star).mean()),
    }


def run_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Train Mean, Median and TrimM:4 on ``config.seeds`` seeds (and the k sweep if ``config.sweep``).

    :return: ``{"config", "methods": {key: {"objective", "k", "leak_probability", "clean_mse", "clean_mse_se",
        "abs_w_error", "abs_b_error", "per_seed": {"w", "b", "clean_mse"}}}, "representative_seed", "curves",
        "k_sweep"}``; ``curves[key]`` is the clean MSE after each step, shape ``(seeds, steps + 1)``.
    """
    test = CleanTestSet.sample(config.n_test)
    objectives = config.objectives()
    runs = _train_all(objectives, config, test, "robust-regression fits", quiet)
    methods = {}
    for key, objective in objectives.items():
        methods[key] = {
            "objective": str(objective),
            "k": objective.k,
            "leak_probability": outlier_leak_probability(objective, config.n_train, config.n_outliers),
            **_summary(runs[key]),
            "per_seed": {name: runs[key][name] for name in ("w", "b", "clean_mse")},
        }
    # The seed whose trimmed-mean fit has the median clean MSE: typical, not the best case.
    order = np.argsort(runs["trimmed"]["clean_mse"], kind="stable")
    representative = int(order[(order.size - 1) // 2])
    sweep = _k_sweep(config, test, quiet) if config.sweep else []
    return {
        "config": dataclasses.asdict(config),
        "methods": methods,
        "representative_seed": representative,
        "curves": {key: runs[key]["curve"] for key in objectives},
        "k_sweep": sweep,
    }


def _k_sweep(config: Config, test: CleanTestSet, quiet: bool) -> list[dict[str, Any]]:
    """Final clean MSE and leak probability for Median@k and TrimM:4@k over the sweep grids."""
    objectives = {f"median@{k}": Objective.parse("median", k) for k in config.median_sweep_k}
    objectives |= {f"trim4@{k}": Objective.parse("TrimM:4", k) for k in config.trim_sweep_k}
    runs = _train_all(objectives, config, test, "k sweep", quiet)
    return [
        {
            "objective": name,
            "k": objectives[name].k,
            "leak_probability": outlier_leak_probability(objectives[name], config.n_train, config.n_outliers),
            **_summary(runs[name]),
        }
        for name in objectives
    ]


# ---------------------------------------------------------------------------------------------------- reporting
def format_table(results: dict[str, Any]) -> str:
    """The paper's table with the measured value before each of the paper's numbers."""
    headers = ["Method", "objective", "clean MSE", "paper", "SE", "paper", "|w-w*|", "paper", "|b-b*|", "paper"]
    rows = []
    for key, m in results["methods"].items():
        paper = PAPER_TABLE[key]
        ours = (m["clean_mse"], m["clean_mse_se"], m["abs_w_error"], m["abs_b_error"])
        rows.append([LABELS[key], m["objective"], *(v for pair in zip(ours, paper, strict=True) for v in pair)])
    return markdown_table(headers, rows)


def format_sweep(sweep: list[dict[str, Any]]) -> str:
    """The k-sweep table: leak probability against the final clean MSE."""
    rows = [[s["objective"], s["leak_probability"], s["clean_mse"], s["clean_mse_se"], s["abs_w_error"]] for s in sweep]
    return markdown_table(["objective", "P(outlier weighted)", "clean MSE", "SE", "|w-w*|"], rows)


def checks(results: dict[str, Any]) -> dict[str, bool]:
    """The effect the reproduction must show (issue 5)."""
    m = results["methods"]
    return {
        "median clean MSE <= 0.08": m["median"]["clean_mse"] <= 0.08,
        "trimmed clean MSE <= 0.08": m["trimmed"]["clean_mse"] <= 0.08,
        "mean clean MSE >= 0.5": m["mean"]["clean_mse"] >= 0.5,
    }


def plot(results: dict[str, Any], path: Path) -> Path:
    """Fit panel (data, true lines, fitted lines of the representative seed) and clean-MSE-vs-step panel."""
    plt = pyplot()
    config = Config(**results["config"])
    seed = results["representative_seed"]
    data = make_training_set(seed, config.n_train, config.n_outliers)
    fig, (ax, ax_curve) = plt.subplots(1, 2, figsize=(12, 4.8), gridspec_kw={"width_ratios": [1.35, 1]})
    ax.scatter(data.x[~data.outlier], data.y[~data.outlier], s=5, c="0.6", alpha=0.5, label="clean data")
    ax.scatter(data.x[data.outlier], data.y[data.outlier], s=7, c="tab:orange", alpha=0.6, label="outliers (12%)")
    grid = np.linspace(-X_HALF_WIDTH, X_HALF_WIDTH, 2)
    ax.plot(grid, CLEAN_LINE[0] * grid + CLEAN_LINE[1], "k-", lw=2.5, label="clean line 2x - 1")
    ax.plot(grid, OUTLIER_LINE[0] * grid + OUTLIER_LINE[1], ":", c="tab:orange", lw=2, label="outlier line")
    for key, m in results["methods"].items():
        w, b = m["per_seed"]["w"][seed], m["per_seed"]["b"][seed]
        ax.plot(
            grid,
            w * grid + b,
            STYLES[key],
            c=COLORS[key],
            lw=1.8,
            label=f"{LABELS[key]}, {m['objective']}: w={w:.3f}, b={b:.3f}",
        )
    ax.set(xlabel="x", ylabel="y", title=f"Fitted lines, seed {seed} (median-MSE seed of the trimmed fit)")
    ax.legend(fontsize=7.5, loc="lower right")
    steps = np.arange(config.steps + 1)
    for key, curves in results["curves"].items():
        curves = np.asarray(curves)
        ax_curve.plot(steps, np.median(curves, axis=0), c=COLORS[key], label=LABELS[key])
        ax_curve.fill_between(steps, curves.min(axis=0), curves.max(axis=0), color=COLORS[key], alpha=0.2, lw=0)
    ax_curve.axhline(CLEAN_LINE[2] ** 2, c="k", lw=0.8, ls=":", label="noise floor 0.0625")
    ax_curve.set(
        xlabel="Adam step",
        ylabel="clean test MSE",
        yscale="log",
        title=f"Clean MSE while training (median, min-max over {config.seeds} seeds)",
    )
    ax_curve.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


# ---------------------------------------------------------------------------------------------------- command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl reproduce robust-regression``."""
    default = Config()
    parser.add_argument(
        "--seeds", type=positive_int, default=default.seeds, metavar="S", help="number of seeds (default: %(default)s)"
    )
    parser.add_argument("--steps", type=positive_int, default=default.steps, help="Adam steps (default: %(default)s)")
    parser.add_argument(
        "--lr", type=positive_float, default=default.lr, help="Adam learning rate (default: %(default)s)"
    )
    parser.add_argument(
        "--batch-size", type=positive_int, default=default.batch_size, help="minibatch size N (default: %(default)s)"
    )
    parser.add_argument(
        "--n-train", type=positive_int, default=default.n_train, help="training-set size (default: %(default)s)"
    )
    parser.add_argument(
        "--median-k",
        type=positive_int,
        default=default.median_k,
        help="k of the Median objective (default: %(default)s)",
    )
    parser.add_argument(
        "--trim-k",
        type=positive_int,
        default=default.trim_k,
        help="k of the TrimM:4 objective, > 8 (default: %(default)s)",
    )
    parser.add_argument(
        "--sweep",
        action="store_true",
        help=f"also train Median@k for k in {default.median_sweep_k} and TrimM:4@k for k in "
        f"{default.trim_sweep_k} and print the chance an outlier is weighted beside the clean MSE",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "robust_regression")


def check_config(config: Config) -> None:
    """Refuse settings that cannot run, before any training, naming the option.

    :raises CommandError: a minibatch larger than the training set, an objective that does not exist at its k
        (``TrimM:4`` needs k > 8), or a k above the minibatch size (the batch value needs k <= N).
    """

    if config.batch_size > config.n_train:
        raise CommandError(f"--batch-size ({config.batch_size}) must be <= --n-train ({config.n_train})")
    ks = {"--median-k": ("median", [config.median_k]), "--trim-k": ("TrimM:4", [config.trim_k])}
    if config.sweep:
        ks["--median-k"][1].extend(config.median_sweep_k)
        ks["--trim-k"][1].extend(config.trim_sweep_k)
    for flag, (spec, values) in ks.items():
        for i, k in enumerate(values):
            where = flag if i == 0 else f"--sweep (its grid of {flag})"
            try:
                Objective.parse(spec, k)
            except ValueError as err:
                raise CommandError(f"{where}, k = {k}: {err}") from err
            if k > config.batch_size:
                raise CommandError(f"{where}: k = {k} must be <= --batch-size ({config.batch_size})")


def run(args: argparse.Namespace) -> int:
    """Train, print the table beside the paper's, write the figure (and JSON)."""
    config = Config(
        seeds=args.seeds,
        steps=args.steps,
        lr=args.lr,
        batch_size=args.batch_size,
        n_train=args.n_train,
        median_k=args.median_k,
        trim_k=args.trim_k,
        sweep=args.sweep,
    )
    check_config(config)
    results = run_experiment(config, quiet=args.quiet)
    print(
        f"Robust regression: {config.seeds} seeds, {config.steps} Adam steps (lr {config.lr}, init w = b = 0), "
        f"minibatch {config.batch_size}, {config.n_train} training points with {config.n_outliers} outliers."
    )
    print("Measured value first, the paper's value after it.\n")
    print(format_table(results))
    if results["k_sweep"]:
        print("\nk sweep (P = chance a k-subset holds enough outliers for one to be weighted):\n")
        print(format_sweep(results["k_sweep"]))
    results["checks"] = checks(results)
    print_checks(results["checks"])
    results["figure"] = plot(results, args.out / "robust_regression_fit.png")
    print(f"\nfigure: {results['figure']}")
    if args.json is not None:
        payload = {key: value for key, value in results.items() if key != "curves"}
        payload["paper"] = {
            key: dict(zip(("clean_mse", "clean_mse_se", "abs_w_error", "abs_b_error"), v, strict=True))
            for key, v in PAPER_TABLE.items()
        }
        print(f"json: {write_json(args.json, payload)}")
    return 0
