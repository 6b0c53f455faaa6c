"""Run the independent jobs of an experiment's grid (method x seed x game ...): locally, or as Ray Tune trials.

The reproductions hand their grids to :func:`run_jobs` instead of keeping process pools of their own:

* ``address=None``: local worker processes (spawned, one torch thread each; one job at a time runs in this
  process), no Ray needed;
* ``address="local"``, ``"auto"`` or ``"HOST:PORT"``: Ray Tune trials (:mod:`ordergrad_rl.common.ray_tune`) on a new
  local Ray instance or on a cluster, one CPU per job. Results travel as pickles under ``storage``, which every
  node must see.

A job is a module-level function and its keyword arguments; it may report progress in the caller's unit (env
steps, say) with :func:`report_progress`. The progress bar counts ``Job.weight`` units in all; a finished job
accounts for whatever it did not report (Ray jobs report only when they finish).

A grid that may be cut short keeps each finished job's result in a :class:`RunCache` (``<out>/runs``, one file per
job, written by the job itself), and a later invocation with the same settings runs only the jobs without one;
:func:`report_interrupted` tells the user after Ctrl-C what was kept.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import sys
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_EXCEPTION, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.progress import available_cores, progress_bar
from ordergrad_rl.common.ray_tune import init_ray, require_ray, run_tune
from ordergrad_rl.common.reports import write_json
from ordergrad_rl.version import __version__

# Progress counter shared by the local workers (set by _init_worker); None when there is no one to tell.
_COUNTER: Any = None
# Units the running job of this worker reported so far (a worker runs one job at a time).
_REPORTED = 0


@dataclass(frozen=True)
class Job:
    """``function(**kwargs)``, named ``id`` (unique in a grid), worth ``weight`` progress units."""

    id: str
    function: Callable[..., Any]
    kwargs: dict[str, Any] = field(default_factory=dict)
    weight: int = 1


def report_progress(units: int) -> None:
    """Called by a job: ``units`` more progress units are done (no-op where nobody counts)."""
    global _REPORTED
    _REPORTED += units
    if _COUNTER is not None:
        with _COUNTER.get_lock():
            _COUNTER.value += units


def _call(function: Callable[..., Any], kwargs: dict[str, Any], weight: int) -> Any:
    """Run a job in a local worker; when it returns, count the units of its weight it did not report."""
    global _REPORTED
    _REPORTED = 0
    result = function(**kwargs)
    report_progress(max(0, weight - _REPORTED))
    return result


def _init_worker(counter: Any) -> None:
    global _COUNTER
    _COUNTER = counter
    import torch

    # One core per job: the experiments' models are small, and threads of concurrent jobs would only contend.
    torch.set_num_threads(1)


def _result(future: Future, job_id: str, running: list[str]) -> Any:
    """The job's result, or its exception raised with the job named (``running``: the jobs under way, one of which
    was on a worker process that died abruptly, if that is what broke the pool)."""
    try:
        return future.result()
    except BrokenProcessPool as err:
        under_way = running or [job_id]
        which = f"job {under_way[0]}" if len(under_way) == 1 else f"one of the jobs {', '.join(under_way)}"
        raise CommandError(
            f"a worker process died abruptly (killed, out of memory, or a crash in native code) while running {which}"
        ) from err
    except Exception as err:
        _name_job(err, job_id)
        raise


def _name_job(err: Exception, job_id: str) -> None:
    """Name the job that raised ``err`` under its traceback (a note, Python 3.11+)."""
    if hasattr(err, "add_note"):
        err.add_note(f"in job {job_id!r}")


def _run_here(
    jobs: list[Job], bar: Any, counter: Any, on_result: Callable[[str, Any], None] | None = None
) -> dict[str, Any]:
    """One job after another in this thread, the progress bar updated by a helper thread. In this thread, Ctrl-C
    stops the job under way at once; a job in a worker thread would run to its end (minutes) before the command
    could stop."""
    _init_worker(counter)
    done = threading.Event()

    def update_bar() -> None:
        seen = 0
        while not done.wait(0.25):
            now = counter.value
            bar.update(now - seen)
            seen = now
        bar.update(counter.value - seen)

    updater = threading.Thread(target=update_bar, daemon=True)
    updater.start()
    results = {}
    try:
        for job in jobs:
            try:
                results[job.id] = _call(job.function, job.kwargs, job.weight)
            except Exception as err:
                _name_job(err, job.id)
                raise
            if on_result is not None:
                on_result(job.id, results[job.id])
    finally:
        done.set()
        updater.join()
    return results


def _run_local(
    jobs: list[Job], workers: int, bar: Any, on_result: Callable[[str, Any], None] | None = None
) -> dict[str, Any]:
    """The jobs on ``workers`` spawned processes (no inherited torch/threads state), or with one worker in this
    process (:func:`_run_here`)."""
    global _COUNTER
    import torch

    counter = multiprocessing.get_context("spawn").Value("q", 0)
    threads = torch.get_num_threads()
    if workers == 1:
        try:
            return _run_here(jobs, bar, counter, on_result)
        finally:
            torch.set_num_threads(threads)  # _init_worker set it for this process
            _COUNTER = None
    context = multiprocessing.get_context("spawn")
    executor = ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker, initargs=(counter,))
    try:
        futures = {executor.submit(_call, job.function, job.kwargs, job.weight): job for job in jobs}
        pending, seen = set(futures), 0
        failure: Exception | None = None
        while pending:
            running = [futures[future].id for future in futures if future.running()]
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_EXCEPTION)
            for future in done:
                if future.cancelled():
                    continue
                try:
                    result = _result(future, futures[future].id, running)
                except Exception as err:
                    # The first failure is raised once the jobs under way (which the workers finish anyway) have
                    # been handed over; the jobs not started yet are cancelled.
                    if failure is None:
                        failure = err
                        for other in pending:
                            other.cancel()
                    continue
                if on_result is not None:
                    on_result(futures[future].id, result)
            now = counter.value
            bar.update(now - seen)
            seen = now
        if failure is not None:
            raise failure
        return {futures[future].id: future.result() for future in futures}
    finally:
        executor.shutdown(wait=True, cancel_futures=True)
        _COUNTER = None


def call_and_save(function: str, kwargs: dict[str, Any], result_path: str, cwd: str) -> dict[str, Any]:
    """A Ray job: call ``function`` (``module.name``) with ``kwargs`` and pickle its result to ``result_path``.

    :param cwd: the caller's working directory, where the job runs if this node has it: Tune starts a trial in its
        own directory, where the relative paths of ``kwargs`` (a reproduction's ``--out results/x``) would put files.
    """
    import importlib

    import torch

    torch.set_num_threads(1)
    if Path(cwd).is_dir():
        os.chdir(cwd)
    module, _, name = function.rpartition(".")
    result = getattr(importlib.import_module(module), name)(**kwargs)
    path = Path(result_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(result))
    return {}


def _run_ray(
    jobs: list[Job],
    address: str,
    storage: Path,
    bar: Any,
    quiet: bool,
    on_result: Callable[[str, Any], None] | None = None,
) -> dict[str, Any]:
    import ray

    result_dir = storage / "results"
    specs = [
        {
            "trial_id": job.id,
            "kwargs": {
                "function": f"{job.function.__module__}.{job.function.__qualname__}",
                "kwargs": job.kwargs,
                "result_path": str(result_dir / f"{job.id}.pkl"),
                "cwd": os.getcwd(),
            },
        }
        for job in jobs
    ]
    init_ray(None if address == "local" else address, quiet=quiet)
    try:
        outcome = run_tune(call_and_save, specs, storage, {"cpu": 1, "gpu": 0}, quiet=True)
    finally:
        ray.shutdown()
    results = {job_id: pickle.loads((result_dir / f"{job_id}.pkl").read_bytes()) for job_id in outcome.finished}
    if on_result is not None:
        for job_id, result in results.items():
            on_result(job_id, result)
    if outcome.errors or outcome.interrupted:
        failed = "; ".join(f"{trial}: {error}" for trial, error in outcome.errors.items())
        raise CommandError(f"{len(jobs) - len(outcome.finished)} of {len(jobs)} Ray jobs did not finish. {failed}")
    bar.update(sum(job.weight for job in jobs))
    return {job.id: results[job.id] for job in jobs}


def run_jobs(
    jobs: list[Job],
    workers: int | None = None,
    address: str | None = None,
    storage: Path | None = None,
    desc: str = "jobs",
    unit: str = "it",
    quiet: bool = False,
    on_result: Callable[[str, Any], None] | None = None,
) -> dict[str, Any]:
    """Run every job; return ``{job.id: result}``. The results do not depend on where the jobs ran.

    :param workers: local worker processes (default: the available cores, at most one per job); 1 runs the
        jobs one after another in this process.
    :param address: ``None`` for local workers; ``"local"`` (a new local Ray instance), ``"auto"`` or
        ``"HOST:PORT"`` (a Ray cluster) for Ray Tune trials.
    :param storage: where a fresh directory for Ray's experiment state and the pickled results is made (default:
        the system's temporary directory; give one that all nodes share for a multi-node cluster).
    :param desc: progress-bar text; ``unit``: what ``Job.weight`` and :func:`report_progress` count.
    :param on_result: called in this process with ``(job.id, result)`` as each job finishes (local workers), or for
        every job once all have finished (Ray), before any failure is raised: a caller saves what is done. After a
        local failure the jobs not started yet are cancelled, and the ones under way finish and are handed over.
    :raises CommandError: a Ray job failed or was interrupted, or a local worker process died abruptly (local
        jobs raise their own exceptions, with a note naming the job on Python 3.11+).
    """
    ids = [job.id for job in jobs]
    if len(set(ids)) != len(ids):
        raise ValueError(f"job ids must be unique, got {ids}")
    total = sum(job.weight for job in jobs)
    if address is not None:
        require_ray(f"--address {address}")  # before any output: without Ray, the error names the extra
        if storage is not None:
            Path(storage).mkdir(parents=True, exist_ok=True)
        storage = Path(tempfile.mkdtemp(prefix="jobs_", dir=storage)).resolve()
        with progress_bar(f"{desc} on Ray ({address})", total, unit=unit, quiet=quiet) as bar:
            return _run_ray(jobs, address, storage, bar, quiet, on_result)
    workers = max(1, min(workers or available_cores(), len(jobs)))
    with progress_bar(f"{desc} on {workers} worker{'s' if workers > 1 else ''}", total, unit=unit, quiet=quiet) as bar:
        return _run_local(jobs, workers, bar, on_result)


@dataclass(frozen=True)
class RunCache:
    """Finished runs of a grid under ``directory`` (a reproduction's ``<out>/runs``): a JSON record ``<id>.json`` per
    run, holding the settings it ran with under ``"config"``, and NumPy arrays beside it in ``<id>.npz`` (exact)
    where it has some. A later invocation reuses the runs stored with its own settings, so an interrupted grid goes
    on with the runs it has not finished. Both files are written atomically, the record last: a run has a record
    only once it is whole.
    """

    directory: Path

    def path(self, run_id: str) -> Path:
        """The record of run ``run_id``."""
        return self.directory / f"{run_id}.json"

    def record(self, run_id: str) -> dict[str, Any] | None:
        """The record of run ``run_id``, whatever its settings (``None``: no run is stored)."""
        path = self.path(run_id)
        return json.loads(path.read_text()) if path.exists() else None

    def stored_settings(self, run_id: str) -> Any:
        """The settings run ``run_id`` is stored with (``None``: no run is stored)."""
        record = self.record(run_id)
        return None if record is None else record.get("config")

    def load(self, run_id: str, settings: Any) -> dict[str, Any] | None:
        """The record of run ``run_id`` if it is stored with ``settings`` (compared as JSON), else ``None``."""
        record = self.record(run_id)
        if record is None:
            return None
        return record if record.get("config") == json.loads(json.dumps(settings)) else None

    def arrays(self, run_id: str) -> dict[str, np.ndarray]:
        """The arrays stored with run ``run_id``."""
        with np.load(self.directory / f"{run_id}.npz") as stored:
            return dict(stored)

    def save(self, run_id: str, record: dict[str, Any], arrays: dict[str, np.ndarray] | None = None) -> Path:
        """Store run ``run_id``: ``record`` (JSON-able, with its settings under ``"config"``) and ``arrays``."""
        if arrays is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            partial = self.directory / f".{run_id}.{os.getpid()}.partial.npz"
            # numpy's stub lets a name in **arrays stand for its allow_pickle flag; the names are the run's arrays.
            np.savez(partial, **arrays)  # type: ignore[arg-type]
            partial.replace(self.directory / f"{run_id}.npz")
        return write_json(self.path(run_id), record)

    def discard(self, run_id: str) -> None:
        """Forget run ``run_id`` (it is being trained again)."""
        self.path(run_id).unlink(missing_ok=True)


def code_release(run_format: int) -> dict[str, Any]:
    """What a stored run records of the code that stored it: ``{"format": run_format, "version": __version__}``.

    :param run_format: the layout of the experiment's stored runs, raised when what a run holds, or how it is read,
        changes without a version change.
    """
    return {"format": run_format, "version": __version__}


def other_code(record: dict[str, Any], run_format: int) -> str | None:
    """The code that stored ``record``, named, where it is not this one (:func:`code_release` of ``run_format``;
    ``None``: stored by this code). A record without a release was stored before releases were recorded."""
    release = code_release(run_format)
    if {key: record.get(key) for key in release} == release:
        return None
    if "format" not in record:
        return "a release that did not record its version"
    return f"ordergrad-rl {record.get('version')} (run format {record['format']})"


def report_other_code(outdated: list[str], where: Path, run_format: int, flag: str) -> None:
    """Say on stderr that the runs ``outdated`` (``"<id> by <code>"``, :func:`other_code`) stored in ``where`` were
    stored by other code and are trained again (``flag``: the option that reuses stored runs); nothing if none."""
    if outdated:
        print(
            f"{flag}: these runs in {where} were stored by other code than this ordergrad-rl {__version__} (run format "
            f"{run_format}) and are trained again: {'; '.join(outdated)}",
            file=sys.stderr,
        )


def report_interrupted(kept: int, where: Path) -> int:
    """After Ctrl-C stopped a grid: say that ``kept`` finished runs are stored in ``where`` and how to run the rest;
    return 130, the exit status of a command stopped by SIGINT."""
    print(f"interrupted: {kept} runs are in {where}; rerun with --resume to run only the rest", file=sys.stderr)
    return 130
