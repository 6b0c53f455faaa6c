"""``ordergrad_rl.common.jobs.run_jobs`` on local workers: results by id, errors, progress in the caller's unit."""

from __future__ import annotations

import sys

import pytest

from ordergrad_rl.common import jobs
from ordergrad_rl.common.errors import CommandError


def square(x: int, report: int = 0) -> int:
    """A job: reports ``report`` progress units, returns ``x * x``; ``x < 0`` fails."""
    if x < 0:
        raise ArithmeticError(f"negative {x}")
    jobs.report_progress(report)
    return x * x


class RecordingBar:
    def __init__(self, desc: str, total: int, **kwargs) -> None:
        self.desc, self.total, self.n = desc, total, 0
        BARS.append(self)

    def update(self, n: int) -> None:
        assert n >= 0
        self.n += n

    def __enter__(self) -> RecordingBar:
        return self

    def __exit__(self, *exc) -> None:
        pass


BARS: list[RecordingBar] = []


@pytest.mark.parametrize("workers", [1, 2])
def test_results_by_id_and_progress_in_the_callers_unit(workers, monkeypatch):
    monkeypatch.setattr(jobs, "progress_bar", RecordingBar)
    BARS.clear()
    # Job 0 reports part of its weight, job 1 all of it, job 2 nothing: the bar still ends at the total.
    grid = [jobs.Job(f"j{x}", square, {"x": x, "report": r}, weight=10) for x, r in ((0, 4), (1, 10), (2, 0))]
    assert jobs.run_jobs(grid, workers=workers, desc="squares") == {"j0": 0, "j1": 1, "j2": 4}
    (bar,) = BARS
    assert bar.total == 30 and bar.n == 30
    assert bar.desc == f"squares on {workers} worker{'s' if workers > 1 else ''}"
    assert jobs._COUNTER is None  # no counter left behind in this process


def test_a_failing_job_raises_and_ids_must_be_unique():
    with pytest.raises(ArithmeticError, match="negative -1"):
        jobs.run_jobs([jobs.Job("a", square, {"x": 1}), jobs.Job("b", square, {"x": -1})], workers=1, quiet=True)
    with pytest.raises(ValueError, match="job ids must be unique"):
        jobs.run_jobs([jobs.Job("a", square, {"x": 1}), jobs.Job("a", square, {"x": 2})], quiet=True)


@pytest.mark.parametrize("workers", [1, 2])
def test_each_finished_result_is_handed_over_before_a_failure_is_raised(workers):
    seen: list[tuple[str, int]] = []
    grid = [jobs.Job("a", square, {"x": 2}), jobs.Job("b", square, {"x": 3})]
    assert jobs.run_jobs(grid, workers=workers, quiet=True, on_result=lambda i, r: seen.append((i, r))) == {
        "a": 4,
        "b": 9,
    }
    assert sorted(seen) == [("a", 4), ("b", 9)]
    seen.clear()
    with pytest.raises(ArithmeticError, match="negative -1"):
        grid = [jobs.Job("a", square, {"x": 2}), jobs.Job("b", square, {"x": -1})]
        jobs.run_jobs(grid, workers=1, quiet=True, on_result=lambda i, r: seen.append((i, r)))
    assert seen == [("a", 4)]  # what finished before the failure was handed over


def slow_square(x: int, seconds: float = 2.0) -> int:
    """A job that takes a while."""
    import time

    time.sleep(seconds)
    return x * x


def die(x: int) -> int:
    """A job whose worker process dies without raising (as one killed, or out of memory, would)."""
    import os

    os._exit(3)


def test_a_failure_names_its_job():
    """A job's exception names the job (a note on Python 3.11+); a worker process that dies abruptly gives a
    CommandError naming the job it ran, not concurrent.futures' bare BrokenProcessPool."""
    grid = [jobs.Job("a", square, {"x": 1}), jobs.Job("task/b/seed1", square, {"x": -1})]
    with pytest.raises(ArithmeticError, match="negative -1") as raised:
        jobs.run_jobs(grid, workers=2, quiet=True)
    if sys.version_info >= (3, 11):
        assert raised.value.__notes__ == ["in job 'task/b/seed1'"]
    grid = [jobs.Job("task/d/seed0", die, {"x": 0}), jobs.Job("e", square, {"x": 1})]
    with pytest.raises(
        CommandError, match=r"worker process died abruptly .* while running (job|one of the jobs) .*task/d/seed0"
    ):
        jobs.run_jobs(grid, workers=2, quiet=True)


def test_the_jobs_under_way_when_one_fails_are_handed_over():
    """A failing job no longer throws away the results of the jobs running beside it (which the pool's shutdown
    waited for anyway): they are handed over before the failure is raised; jobs not started are cancelled."""
    seen: list[tuple[str, int]] = []
    grid = [jobs.Job("slow", slow_square, {"x": 3}), jobs.Job("bad", square, {"x": -1})]
    grid += [jobs.Job(f"later{i}", slow_square, {"x": i, "seconds": 0.5}) for i in range(8)]
    with pytest.raises(ArithmeticError, match="negative -1"):
        jobs.run_jobs(grid, workers=2, quiet=True, on_result=lambda i, r: seen.append((i, r)))
    assert ("slow", 9) in seen and len(seen) < 1 + 8  # the jobs queued in the pool when "bad" failed ran too


# Run in a process of its own: Ctrl-C reaches a process's main thread, and pytest-xdist's workers run tests in
# another thread (the command line runs them in its main thread).
_ONE_WORKER_JOB = """
import signal
import time
from ordergrad_rl.common import jobs

signal.signal(signal.SIGINT, signal.default_int_handler)  # a parent run in the background passes SIGINT ignored

def long(seconds: float) -> int:
    print("started", flush=True)
    time.sleep(seconds)
    return 0

try:
    jobs.run_jobs([jobs.Job("long", long, {"seconds": 30.0})], workers=1, quiet=True)
except KeyboardInterrupt:
    print("interrupted", jobs._COUNTER is None, flush=True)
"""


def test_ctrl_c_stops_a_job_of_one_worker_at_once():
    """With one worker (also any grid of one job) the job ran in a worker thread, which Ctrl-C does not reach: the
    command waited for the job under way to end (minutes for a reproduction's run) before it could stop."""
    import signal
    import subprocess
    import time

    process = subprocess.Popen([sys.executable, "-c", _ONE_WORKER_JOB], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "started"
    time.sleep(0.5)  # the job is under way
    start = time.perf_counter()
    process.send_signal(signal.SIGINT)
    out, _ = process.communicate(timeout=20)
    assert time.perf_counter() - start < 5.0, "Ctrl-C waited for the job to end"
    assert out.strip() == "interrupted True"  # the progress counter is cleared too


def test_run_cache_reuses_a_run_only_with_its_settings(tmp_path):
    """The per-run store of the reproductions' grids (minatar's and tailrisk's ``<out>/runs``)."""
    import numpy as np

    cache = jobs.RunCache(tmp_path / "runs")
    assert cache.stored_settings("a") is None and cache.load("a", {"steps": 1}) is None
    wealth = np.random.default_rng(0).normal(size=(3, 4))
    cache.save("a", {"score": 0.1 + 0.2, "config": {"steps": 1, "games": ("x",)}}, {"wealth": wealth})
    assert cache.stored_settings("a") == {"steps": 1, "games": ["x"]}
    assert cache.load("a", {"steps": 1, "games": ("x",)})["score"] == 0.1 + 0.2  # settings compared as JSON
    assert cache.load("a", {"steps": 2, "games": ("x",)}) is None
    assert np.array_equal(cache.arrays("a")["wealth"], wealth)  # exactly
    assert sorted(path.name for path in cache.directory.iterdir()) == ["a.json", "a.npz"]  # no partial file left
    cache.discard("a")
    assert cache.load("a", {"steps": 1, "games": ("x",)}) is None
    cache.discard("a")  # nothing stored: nothing to do


def test_ray_jobs_without_ray_name_the_extra_before_any_output(tmp_path, monkeypatch):
    """Without the [ray] extra, ``run_jobs(..., address=...)`` made its storage directory and a progress bar before
    saying that Ray is missing: it says so first now."""
    monkeypatch.setitem(sys.modules, "ray.tune", None)  # import fails as if Ray were not installed
    monkeypatch.setattr(jobs, "progress_bar", RecordingBar)
    BARS.clear()
    with pytest.raises(CommandError, match=r'--address local needs the \[ray\] extra .*"ordergrad-rl\[ray\]"'):
        jobs.run_jobs([jobs.Job("a", square, {"x": 2})], address="local", storage=tmp_path / "ray")
    assert not (tmp_path / "ray").exists() and not BARS
