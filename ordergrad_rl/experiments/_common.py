"""Plumbing shared by the reproductions: standard options, progress bars, figures, JSON and tables.

Heavy imports (matplotlib) happen inside the functions that need them, so building the command-line parser
(and ``--help``) stays fast.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

T = TypeVar("T")


def add_output_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """Add ``--out DIR`` (figures, default ``results/<name>``) and ``--json PATH`` (numbers) to ``parser``."""
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("results") / name,
        metavar="DIR",
        help="directory for the figures (created if missing; default: %(default)s)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        default=None,
        metavar="PATH",
        help="also write the measured numbers to this JSON file",
    )


def add_address_argument(parser: argparse.ArgumentParser) -> None:
    """Add ``--address``: run the experiment's independent runs as Ray Tune trials (the ``[ray]`` extra)."""
    parser.add_argument(
        "--address",
        default=None,
        metavar="local|auto|HOST:PORT",
        help="run the training runs as Ray Tune trials: on a new local Ray instance (local), or on a Ray cluster "
        '(auto: the one `ray start` made here; HOST:PORT: its head node); needs pip install "ordergrad-rl[ray]". '
        "Default: local worker processes",
    )


def refuse_option(parser: argparse.ArgumentParser, flag: str, reason: str) -> None:
    """Declare ``flag`` (an option other commands take, e.g. ``--seeds``) as one this command refuses with
    ``reason``: hidden from ``--help``, and a usage error that says why instead of "unrecognized arguments"."""

    class Refuse(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None) -> None:
            parser.error(f"{option_string} does not apply here: {reason}")

    parser.add_argument(flag, nargs="?", action=Refuse, help=argparse.SUPPRESS)


def available_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


def seed_int(text: str) -> int:
    """argparse type of ``--seed``: an integer >= 0 (NumPy and Gymnasium refuse negative seeds)."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a seed >= 0, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0 (learning rates)."""
    value = float(text)
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text}")
    return value


def progress(iterable: Iterable[T], desc: str, total: int | None = None, quiet: bool = False) -> Iterator[T]:
    """``iterable`` with a tqdm progress bar on stderr (none when ``quiet``)."""
    with progress_bar(desc, total, quiet=quiet) as bar:
        for item in iterable:
            yield item
            bar.update(1)


def progress_bar(desc: str, total: int | None, unit: str = "it", quiet: bool = False) -> Any:
    """A tqdm bar on stderr to ``update(n)`` by hand (disabled when ``quiet``); large counts get SI prefixes."""
    from tqdm.auto import tqdm

    return tqdm(
        desc=desc, total=total, unit=unit, unit_scale=unit != "it", disable=quiet, dynamic_ncols=True, leave=False
    )


def rollout_progress(total: int, on_update: Callable[[int], object]) -> Any:
    """An SB3 callback that reports, at each rollout's end, the env steps done since its last report (counted up to
    ``total``; a rollout may overshoot the budget), e.g. ``rollout_progress(steps, bar.update)``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class RolloutProgress(BaseCallback):
        reported = 0

        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            done = min(self.num_timesteps, total)
            if done > self.reported:
                on_update(done - self.reported)
                self.reported = done

    return RolloutProgress()


def pyplot():
    """matplotlib's pyplot on the Agg backend (files only: the reproductions never open a window)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Figure, path: Path) -> Path:
    """Write ``fig`` to ``path`` (parent directories created), close it, and return the path."""
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
    """Write ``payload`` as indented JSON to ``path`` (parent directories created) and return the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(_jsonable(payload), indent=2) + "\n")
    return path


def format_cell(value: Any) -> str:
    """A table cell: floats with 3 significant digits, positional down to 1e-5 (``0.0000526``, like the paper's
    tables), scientific below; other values as ``str``."""
    if isinstance(value, (float, np.floating)):
        if value != 0 and abs(value) < 1e-5 or not math.isfinite(value):
            return f"{value:.2e}"
        return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")
    return str(value)


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


def print_checks(checks: dict[str, bool]) -> None:
    """Print each acceptance check of a reproduction as ``[ok] name`` or ``[FAILED] name``."""
    print()
    for name, ok in checks.items():
        print(f"[{'ok' if ok else 'FAILED'}] {name}")
