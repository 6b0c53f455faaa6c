"""Reports of the commands and reproductions: markdown tables, JSON files, figures, timings and checks.

Heavy imports (matplotlib) happen inside the functions that need them, so building the command-line parser
(and ``--help``) stays fast.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ordergrad_rl.common.options import figure_file

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only: the reproductions never open a window)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (``.png`` appended without a suffix; parent directories created), close it, and
    return the path written."""
    path = figure_file(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight")
    pyplot().close(fig)
    return path


def _jsonable(value: Any) -> Any:
    """NumPy scalars/arrays and paths -> plain JSON types; non-finite floats -> ``None`` (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def write_json(path: Path, payload: dict[str, Any]) -> Path:
    """Write ``payload`` as indented JSON to ``path`` (parent directories created) and return the path.

    The text goes to a sibling file of this process first, then replaces ``path`` (atomic): a write cut short
    (Ctrl-C while a long experiment saves its runs so far) leaves the earlier file whole, and a reader never sees
    half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.partial")
    partial.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
    partial.replace(path)
    return path


def format_cell(value: Any) -> str:
    """A table cell: floats with 3 significant digits, positional down to 1e-5 (``0.0000526``, like the paper's
    tables), scientific below; other values as ``str``."""
    if isinstance(value, (float, np.floating)):
        # numpy's stubs type abs() of a floating[Any] as object.
        if value != 0 and abs(value) < 1e-5 or not math.isfinite(value):  # type: ignore[operator]
            return f"{value:.2e}"
        return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")
    return str(value)


def interval_cell(
    low: float, high: float, seeds: int, mean: float | None = None, fmt: Callable[[float], str] = "{:.3f}".format
) -> str:
    """``mean [low, high]`` (``[low, high]`` without ``mean``): a table's 95% interval over ``seeds``; for one seed,
    which has no interval, the mean alone (``-`` without it). A bootstrap over one seed gives ``[m, m]``, which read as
    an interval of width 0 like that of seeds that all scored the same (as the sweep's table, no half-width there)."""
    if seeds < 2:
        return "-" if mean is None else fmt(mean)
    bounds = f"[{fmt(low)}, {fmt(high)}]"
    return bounds if mean is None else f"{fmt(mean)} {bounds}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A GitHub-markdown table (readable in a terminal, pasteable into the README); numbers by :func:`format_cell`."""
    cells = [[format_cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
    ]
    lines += ["| " + " | ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) + " |" for row in cells]
    return "\n".join(lines)


def best_time(fn: Callable[[], object], repeats: int = 3, budget: float = 0.0) -> float:
    """Best wall time of ``fn`` after one warm-up call: at least ``repeats`` calls, and more until ``budget`` seconds
    of timed calls are spent. The minimum is the least noisy statistic on a shared machine."""
    fn()
    best, spent, calls = math.inf, 0.0, 0
    while calls < repeats or spent < budget:
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best, spent, calls = min(best, elapsed), spent + elapsed, calls + 1
    return best


def ratio_header() -> None:
    """The header of a benchmark's :func:`ratio_row` lines."""
    print(f"{'measurement':<52} {'time':>13}  {'ratio':>9} {'baseline':<20} target")


def ratio_row(
    label: str, seconds: float | None, baseline: float, base_label: str, target: str = "", ok: bool | None = None
) -> None:
    """Print one benchmark line: ``seconds`` and its ratio to ``baseline`` (timed in the same run), the target and
    whether ``ok`` met it (``None``: no target); ``seconds=None``: a measurement this version does not support."""
    if seconds is None:
        print(f"{label:<52} {'unsupported':>13}")
        return
    if ok is not None and not (math.isfinite(seconds) and math.isfinite(seconds / baseline)):
        ok = False  # an infinite or NaN time or ratio (nothing measured) never meets a target
    mark = "" if ok is None else ("  ok" if ok else "  MISSED")
    print(f"{label:<52} {seconds * 1e3:10.3f} ms  {seconds / baseline:8.2f}x {base_label:<20} {target}{mark}")


def print_checks(checks: dict[str, bool]) -> None:
    """Print each acceptance check of a reproduction as ``[ok] name`` or ``[FAILED] name``."""
    print()
    for name, ok in checks.items():
        print(f"[{'ok' if ok else 'FAILED'}] {name}")
