"""Rank-weight profiles of the objective families (paper App. "Additional Order-Statistic Weight Schemes").

For a batch of N rewards the value estimate is v = sum_m R_(m:N) (W alpha)_m: the profile W alpha is the weight of
the m-th smallest sample (also its reparameterization gradient). One figure per paper figure:

  quantiles  Quantile:q, q in {0.03, 0.06, 0.10, 0.25, 0.5}, N = 400, k = 100
  remax      ReMax (Max@k), N = 8, k = 1..7 (k = 1 is the mean)
  ranks      Rank r (r-th largest of k; Rank 1 = max), r = 1..10, k = 10, N = 100
  topm       TopM:M for several (M, k), N = 100
  tails      TopM, BotM, TopBot, Quantile, N = 100, k = 20
  robust     Median, TrimM, WinsorizedM, GiniMeanDifference, N = 100, k = 20

plus weights_overview.png with all six panels. The printed table gives each profile's total weight, peak rank
and effective sample size (sum |w|)^2 / sum w^2 (how many batch samples the value effectively averages).

The profiles are exact (no sampling), so this reproduction takes no --seeds.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ordergrad_rl.common.options import add_output_arguments, refuse_option
from ordergrad_rl.common.reports import markdown_table, pyplot, save_figure, write_json
from ordergrad_rl.core import Objective, OrderStatTransform

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.axes import Axes


@dataclass(frozen=True)
class Scheme:
    """One curve: the paper's plot ``label`` and the objective ``spec`` with its ``k``."""

    label: str
    spec: str
    k: int

    @property
    def objective(self) -> Objective:
        return Objective.parse(self.spec, self.k)


@dataclass(frozen=True)
class WeightFigure:
    """One paper figure: the batch size ``n`` and the schemes drawn over its sorted ranks."""

    name: str
    title: str
    n: int
    schemes: tuple[Scheme, ...]


def _topm_schemes() -> tuple[Scheme, ...]:
    pairs = [(1, 10), (2, 10), (5, 10), (10, 10), (2, 20), (5, 20), (10, 20)]
    return tuple(Scheme(f"TopM:{m}, k={k}" + (" (mean)" if m == k else ""), f"TopM:{m}", k) for m, k in pairs)


FIGURES: tuple[WeightFigure, ...] = (
    WeightFigure(
        "quantiles",
        "Quantile profiles, N=400, k=100",
        400,
        tuple(Scheme(f"Quantile:{q:g}", f"Quantile:{q}", 100) for q in (0.03, 0.06, 0.10, 0.25, 0.5)),
    ),
    WeightFigure(
        "remax",
        "ReMax (max of k) profiles, N=8",
        8,
        tuple(Scheme(f"ReMax, k={k}" + (" (mean)" if k == 1 else ""), "ReMax", k) for k in range(1, 8)),
    ),
    WeightFigure(
        "ranks",
        "Rank r of k=10 (Rank 1 = max), N=100",
        100,
        tuple(Scheme(f"Rank {r}", f"Rank:{r}", 10) for r in range(1, 11)),
    ),
    WeightFigure("topm", "TopM profiles, N=100", 100, _topm_schemes()),
    WeightFigure(
        "tails",
        "Tail and quantile schemes, N=100, k=20",
        100,
        (
            Scheme("TopM:4", "TopM:4", 20),
            Scheme("BotM:4", "BotM:4", 20),
            Scheme("TopBot:4", "TopBot:4", 20),
            Scheme("Quantile:0.1", "Quantile:0.1", 20),
        ),
    ),
    WeightFigure(
        "robust",
        "Robust and signed schemes, N=100, k=20",
        100,
        (
            Scheme("Median", "Median", 20),
            Scheme("TrimM:4", "TrimM:4", 20),
            Scheme("WinsorizedM:4", "WinsorizedM:4", 20),
            Scheme("GiniMeanDifference", "GiniMeanDifference", 20),
        ),
    ),
)


def profile(n: int, scheme: Scheme) -> np.ndarray:
    """``W alpha`` over the ``n`` sorted batch ranks (low to high), shape ``(n,)``."""
    return OrderStatTransform(n, scheme.objective).value_weights


def profile_summary(weights: np.ndarray, alpha: np.ndarray) -> dict[str, float]:
    """Total weight, 1-based peak rank (of the largest ``|w|``) and effective sample size of a profile.

    The total is ``sum_j alpha_j`` (each order statistic's weights over the ranks sum to 1), summed exactly: 1
    for the location schemes and exactly 0 for the Gini mean difference, whose float sum of ``W alpha`` is only
    dust of either sign. The effective sample size ``(sum |w|)^2 / sum w^2`` (Kish's, with absolute weights so
    that it is defined for signed profiles) is ``n`` for the mean and 1 for a single rank.

    :param weights: ``W alpha``, shape ``(n,)``.
    :param alpha: the rank weights ``alpha``, shape ``(k,)``.
    """
    magnitude = np.abs(weights)
    return {
        "total": math.fsum(alpha),
        "peak_rank": int(np.argmax(magnitude)) + 1,
        "effective_n": float(magnitude.sum() ** 2 / np.sum(weights**2)),
    }


def plot_profiles(ax: Axes, n: int, schemes: tuple[Scheme, ...], title: str) -> None:
    """Draw ``W alpha`` of each scheme against the sorted rank ``m = 1..n`` on ``ax``."""
    ranks = np.arange(1, n + 1)
    colors = pyplot().cm.viridis(np.linspace(0.0, 0.92, len(schemes)))
    for scheme, color in zip(schemes, colors, strict=True):
        ax.plot(
            ranks, profile(n, scheme), marker="o" if n <= 20 else None, ms=4, lw=1.6, color=color, label=scheme.label
        )
    ax.axhline(0.0, color="0.6", lw=0.6)
    ax.set(
        xlabel=f"sorted batch rank m (1 = lowest reward, {n} = highest)", ylabel=r"weight $(W\alpha)_m$", title=title
    )
    ax.legend(fontsize=7, ncol=2 if len(schemes) > 5 else 1)


def run_experiment() -> dict[str, Any]:
    """Every profile and its summary: ``{figure name: {"n", "title", "schemes": {label: {...}}}}``."""
    results: dict[str, Any] = {}
    for figure in FIGURES:
        schemes = {}
        for scheme in figure.schemes:
            weights = profile(figure.n, scheme)
            summary = profile_summary(weights, scheme.objective.weights)
            schemes[scheme.label] = {"objective": str(scheme.objective), "weights": weights, **summary}
        results[figure.name] = {"n": figure.n, "title": figure.title, "schemes": schemes}
    return results


def plot(out: Path) -> dict[str, Path]:
    """One PNG per paper figure plus ``weights_overview.png``; returns name -> path."""
    plt = pyplot()
    paths = {}
    for figure in FIGURES:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        plot_profiles(ax, figure.n, figure.schemes, figure.title)
        fig.tight_layout()
        paths[figure.name] = save_figure(fig, out / f"weights_{figure.name}.png")
    fig, axes = plt.subplots(2, 3, figsize=(18, 8.5))
    for ax, figure in zip(axes.flat, FIGURES, strict=True):
        plot_profiles(ax, figure.n, figure.schemes, figure.title)
    fig.tight_layout()
    paths["overview"] = save_figure(fig, out / "weights_overview.png")
    return paths


def format_table(results: dict[str, Any]) -> str:
    """One row per profile: figure, label, objective, N, total weight, peak rank, effective sample size."""
    rows = [
        [name, label, s["objective"], fig["n"], s["total"], s["peak_rank"], s["effective_n"]]
        for name, fig in results.items()
        for label, s in fig["schemes"].items()
    ]
    return markdown_table(["figure", "label", "objective", "N", "sum W alpha", "peak rank", "effective n"], rows)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl reproduce weights``."""
    add_output_arguments(parser, "weights")
    refuse_option(parser, "--seeds", "the weight profiles are exact, nothing is random")


def run(args: argparse.Namespace) -> int:
    """Compute the profiles, print the summary table, write the figures (and JSON)."""
    results = run_experiment()
    print(format_table(results))
    paths = plot(args.out)
    print("\nfigures:\n" + "\n".join(f"  {path}" for path in paths.values()))
    if args.json is not None:
        print(f"json: {write_json(args.json, {'figures': results, 'paths': paths})}")
    return 0
