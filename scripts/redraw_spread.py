"""How far one seed's run moves when the same code runs on another CPU arithmetic path, next to its seed-to-seed spread.

    python scripts/redraw_spread.py [--methods og-cvar ppo]

A run of one seed on two arithmetic paths is two independent draws of the method's outcome (docs/benchmarks.md,
"Stored runs and the machine they ran on"). This prints, per task, budget, method and evaluation mode, from the runs of
seeds made on both machines (the machine before: ``docs/measurements/machine_redraw.json``'s ``replaced``; today's:
the runs with a ``provenance`` in ``docs/measurements/benchmarks/<task>.json``), for the worst 20% of 100 returns:

- the seed-to-seed standard deviation on each machine;
- the standard deviation of the per-seed redraw (today's run minus the run before, same seed);
- the move of the seeds' mean, and the standard deviation that move has if the two machines' runs are independent
  draws (``sqrt(sd_before^2 / n + sd_today^2 / n)``), with the move in those units;
- the correlation of the two machines' scores over the seeds (``r``: 0 for independent draws, 1 for runs the
  arithmetic path does not move).

If a method's runs were stable across machines, its per-seed redraw would be much smaller than its seed-to-seed
spread; for independent draws it is about ``sqrt(2)`` times that spread.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import statistics
from pathlib import Path
from typing import Any

from ordergrad_rl.common.reports import markdown_table

ROOT = Path(__file__).resolve().parents[1]
MEASUREMENTS = ROOT / "docs" / "measurements"
MODES = ("greedy", "stochastic")


def by_seed(runs: list[dict[str, Any]], method: str, budget: int) -> dict[int, dict[str, Any]]:
    """The runs of ``method`` at ``budget``, keyed by seed."""
    return {run["seed"]: run for run in runs if run["method"] == method and run["budget"] == budget}


def spread_row(before: list[float], today: list[float]) -> dict[str, float]:
    """The spreads of one cell from the paired per-seed scores ``[n]`` of the two machines."""
    n = len(before)
    sd_before, sd_today = statistics.stdev(before), statistics.stdev(today)
    move = statistics.fmean(today) - statistics.fmean(before)
    expected = (sd_before**2 / n + sd_today**2 / n) ** 0.5
    # Pearson's r of the paired seeds: 0 for independent draws, 1 for a run that the arithmetic path does not move;
    # undefined (NaN) where either machine's scores are all equal.
    correlation = statistics.correlation(before, today) if sd_before > 0 and sd_today > 0 else float("nan")
    return {
        "seeds": n,
        "sd_before": sd_before,
        "sd_today": sd_today,
        "sd_redraw": statistics.stdev([b - a for a, b in zip(before, today, strict=True)]),
        "mean_move": move,
        "expected_sd_of_move": expected,
        "move_in_sd": move / expected if expected > 0 else 0.0,
        "correlation": correlation,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+", default=["og-cvar", "ppo"], help="methods of the redrawn runs")
    args = parser.parse_args(argv)

    replaced = json.loads((MEASUREMENTS / "machine_redraw.json").read_text())["replaced"]
    redrawn = sorted({run["method"] for run in replaced})
    unknown = [method for method in args.methods if method not in redrawn]
    if unknown:  # a typo would print an empty table
        parser.error(f"argument --methods: no redrawn runs of {', '.join(unknown)}; choose from {', '.join(redrawn)}")
    columns = ["task", "budget", "method", "mode", "seeds", "sd before", "sd today", "sd of the redraw", "mean moved"]
    columns += ["expected sd", "in sd", "r"]
    rows = []
    for task in sorted({run["task"] for run in replaced}):
        stored = json.loads((MEASUREMENTS / "benchmarks" / f"{task}.json").read_text())["runs"]
        today_runs = [run for run in stored if "provenance" in run]
        before_runs = [run for run in replaced if run["task"] == task]
        for budget, method in itertools.product(sorted({run["budget"] for run in before_runs}), args.methods):
            before, today = by_seed(before_runs, method, budget), by_seed(today_runs, method, budget)
            seeds = sorted(set(before) & set(today))
            if len(seeds) < 2:
                continue
            for mode in MODES:
                row = spread_row([before[s][mode]["cvar"] for s in seeds], [today[s][mode]["cvar"] for s in seeds])
                cells = [task, budget, method, mode, row["seeds"]]
                cells += [f"{row[key]:.2f}" for key in ("sd_before", "sd_today", "sd_redraw")]
                cells += [f"{row['mean_move']:+.2f}", f"{row['expected_sd_of_move']:.2f}", f"{row['move_in_sd']:+.2f}"]
                cells += ["-" if math.isnan(row["correlation"]) else f"{row['correlation']:.2f}"]
                rows.append(cells)
    print(markdown_table(columns, rows))


if __name__ == "__main__":
    main()
