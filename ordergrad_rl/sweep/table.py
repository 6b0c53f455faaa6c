"""The sweep's summary: a risk table over trials (mean and confidence interval over seeds, per method) and a
``compare`` figure of the final evaluation returns (one colour per method, seeds as thin lines)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ordergrad_rl.common.reports import format_cell, markdown_table
from ordergrad_rl.zoo.compare import Entry, plot

#: Risk-profile keys of the table, in column order.
TABLE_KEYS: tuple[str, ...] = ("mean", "std", "cvar_0.05", "cvar_0.1", "cvar_0.2", "quantile_0.05", "quantile_0.5")
#: Confidence level of the intervals over seeds.
CONFIDENCE = 0.95


def read_rows(out: Path) -> list[dict[str, Any]]:
    """The JSON rows of the finished trials under ``out/trials`` (sorted by trial id)."""
    return [json.loads(path.read_text()) for path in sorted((out / "trials").glob("*.json"))]


def mean_interval(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """Mean of ``values`` (one per seed) and the half-width of its Student-t confidence interval (``nan`` for
    fewer than two values: one seed says nothing about the spread between seeds)."""
    from scipy import stats

    values = np.asarray(values, dtype=np.float64)
    if values.size < 2:
        return float(values.mean()), float("nan")
    half = stats.t.ppf(0.5 + confidence / 2, values.size - 1) * values.std(ddof=1) / np.sqrt(values.size)
    return float(values.mean()), float(half)


def summarize(rows: list[dict[str, Any]], keys: tuple[str, ...] = TABLE_KEYS) -> dict[str, dict[str, Any]]:
    """Per method (in order of first appearance): ``seeds`` and ``{key: (mean, half-width)}`` over its trials."""
    methods: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        methods.setdefault(row["method"], []).append(row)
    return {
        method: {
            "seeds": [row["trial"]["seed"] for row in members],
            **{key: mean_interval(np.array([row["profile"][key] for row in members])) for key in keys},
        }
        for method, members in methods.items()
    }


def format_risk_table(summary: dict[str, dict[str, Any]], keys: tuple[str, ...] = TABLE_KEYS) -> str:
    """Markdown: a row per method, ``mean ± half-width`` over seeds per risk key."""

    def cell(mean: float, half: float) -> str:
        return format_cell(mean) if np.isnan(half) else f"{format_cell(mean)} ± {format_cell(half)}"

    rows = [[method, len(s["seeds"]), *(cell(*s[key]) for key in keys)] for method, s in summary.items()]
    return markdown_table(["method", "seeds", *keys], rows)


def plot_sweep(rows: list[dict[str, Any]], path: Path) -> Path:
    """``compare``'s figure of the trials' final evaluation returns: one colour per method, seeds as thin lines."""

    entries = [
        Entry(
            Path(row["model"]),
            row["trial_id"],
            "sweep",
            row["profile"],
            returns=np.asarray(row["returns"], dtype=np.float64),
            group=row["method"],
        )
        for row in rows
    ]
    return plot(entries, path)
