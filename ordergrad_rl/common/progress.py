"""Progress bars (tqdm, on stderr) for long work, and the cores a process may use.

tqdm is imported inside the functions, so building the command-line parser (and ``--help``) stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def available_cores() -> int:
    """Cores this process may run on (the affinity mask where the OS has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


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
