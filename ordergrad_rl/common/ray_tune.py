"""Run functions as Ray Tune trials: on a local Ray instance sized to the machine, or on an existing cluster.

The one place that imports Ray (the ``[ray]`` extra). Ray Tune schedules the trials on the cluster's CPUs/GPUs
(``resources`` per trial), keeps the experiment state under ``<storage>/tune`` so that an interrupted run
(Ctrl-C, a lost node) continues with :func:`run_tune` ``(resume=True)`` without redoing finished trials, and on
Ctrl-C stops the running trials and saves that state.

A trial is a *spec*: a dict with a ``"trial_id"`` (its name) and the keyword arguments of the function it runs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.extras import require_extra
from ordergrad_rl.common.progress import available_cores

#: Tune's experiment directory under the storage path.
EXPERIMENT = "tune"
#: Metric naming the spec of a finished trial (Tune fills its own ``trial_id`` into every result).
FINISHED = "spec_trial_id"


def require_ray(command: str) -> None:
    """Import Ray Tune or raise a ``CommandError`` saying which extra to install."""

    require_extra("ray", ("ray.tune",), command)


def init_ray(
    address: str | None = None, num_cpus: int | None = None, quiet: bool = False, py_modules: Sequence[str] = ()
) -> Any:
    """Connect to the cluster at ``address`` (``"auto"``: the one ``ray start`` made on this machine;
    ``HOST:PORT``: a head node), or start a new local Ray instance with ``num_cpus`` CPUs (default: the cores this
    process may use).

    :param py_modules: paths of modules (a ``.py`` file or a package's folder) that Ray ships to every worker and
        puts on its ``sys.path`` (the job's ``runtime_env``, Ray's ``py_modules``): :func:`shipped_modules`.
    :return: Ray's context (call ``ray.shutdown()`` when done).
    :raises CommandError: no cluster at ``address``.
    """
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no usage reports to Ray's servers
    if quiet:
        # Tune's newer console output prints its configuration box whatever RunConfig's verbose; the classic one
        # honours verbose=0 (run_tune).
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
        logging.getLogger("ray.tune").setLevel(logging.WARNING)  # its "Wrote the latest version ..." INFO line
    import ray

    level = logging.WARNING if quiet else logging.INFO  # ray.init's own default is INFO ("Started a local Ray ...")
    runtime_env = {"py_modules": list(py_modules)} if py_modules else None
    try:
        if address is None:
            # "local": a new instance even if `ray start` runs on this machine (that one is used with --address).
            return ray.init(
                address="local",
                num_cpus=num_cpus or available_cores(),
                include_dashboard=False,
                log_to_driver=not quiet,
                logging_level=level,
                runtime_env=runtime_env,
            )
        return ray.init(address=address, log_to_driver=not quiet, logging_level=level, runtime_env=runtime_env)
    except ConnectionError as err:
        raise CommandError(f"no Ray cluster at --address {address}: {err}") from err


def shipped_modules(names: Sequence[str]) -> list[str]:
    """The paths of the modules ``names`` (dotted names: a submodule's top-level package) that Ray's workers may
    lack: those outside the installed packages and the standard library (a ``my_envs.py`` of the user's folder, a
    folder on ``PYTHONPATH``), for :func:`init_ray`'s ``py_modules``. Ray puts the driver's current folder on its
    workers' ``sys.path``, a path that the other nodes of a cluster lack, and nothing else of the driver's.

    A name that does not import is left to the import that reports it (``--gym-packages``'s), and a module that is
    neither a ``.py`` file nor a package's folder (a compiled extension), which Ray does not ship, to the nodes' own
    installation.
    """
    import importlib.util
    import site
    import sysconfig

    roots = {sysconfig.get_paths()[key] for key in ("purelib", "platlib", "stdlib", "platstdlib")}
    roots |= {*site.getsitepackages(), site.getusersitepackages()}
    installed = [Path(root).resolve() for root in roots]
    paths: list[str] = []
    for top in dict.fromkeys(name.partition(".")[0] for name in names):
        try:
            spec = importlib.util.find_spec(top)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        # A package's folder (a namespace package's one folder too: Ray ships a folder or a single .py file), else
        # the module's file; none for a built-in or frozen module, or a package of several folders.
        locations = list(dict.fromkeys(os.path.realpath(folder) for folder in spec.submodule_search_locations or []))
        if len(locations) == 1:
            path = Path(locations[0])
        elif not locations and spec.has_location and spec.origin is not None:
            path = Path(os.path.realpath(spec.origin))
        else:
            continue
        # Ray ships a folder or a .py file and refuses anything else in ray.init (a compiled my_envs.so, a sourceless
        # .pyc): such a module, like an installed one, must be on every node.
        shippable = path.is_dir() or path.suffix == ".py"
        if shippable and not any(path.is_relative_to(root) for root in installed):
            paths.append(str(path))
    return paths


def check_trials_fit(resources: dict[str, float], where: str) -> None:
    """Check that a trial's ``{"cpu": c, "gpu": g}`` fits in the Ray instance ``ray.init`` started or joined: Tune
    leaves a trial that asks for more pending forever (it warns every minute, for a cluster that may grow).

    :param where: the instance, in the error message (``"the local Ray instance"``).
    :raises CommandError: the trial asks for more CPUs or GPUs than the instance has.
    """
    import ray

    total = ray.cluster_resources()
    has = {"cpu": total.get("CPU", 0.0), "gpu": total.get("GPU", 0.0)}
    if any(resources[key] > has[key] for key in has):
        raise CommandError(
            f"a trial asks for {resources['cpu']:g} CPUs and {resources['gpu']:g} GPUs, {where} has "
            f"{has['cpu']:g} CPUs and {has['gpu']:g} GPUs: no trial could start"
        )


def _scalars(result: Any) -> dict[str, Any]:
    """The scalar entries of a function's result (one level of nested dicts as ``key/sub``): Tune's metrics."""
    if not isinstance(result, dict):
        return {}
    out = {}
    for key, value in result.items():
        for name, item in value.items() if isinstance(value, dict) else [(None, value)]:
            if isinstance(item, (bool, int, float, str)):
                out[str(key) if name is None else f"{key}/{name}"] = item
    return out


def _trainable(config: dict[str, Any]) -> dict[str, Any]:
    """Tune's function trainable: call the spec's function with its arguments; its scalars are the metrics."""
    import importlib

    spec = config["spec"]
    module, _, name = spec["function"].rpartition(".")
    function = getattr(importlib.import_module(module), name)
    return {**_scalars(function(**spec["kwargs"])), FINISHED: spec["trial_id"]}


@dataclass
class TuneOutcome:
    """What a Tune run did.

    :param finished: trial ids that finished (now or in an earlier, resumed run).
    :param errors: trial id -> error message of the trials that failed (the last line of the error, and the file that
        holds its traceback).
    :param interrupted: the run stopped early (Ctrl-C): resume it to run the rest.
    """

    finished: list[str]
    errors: dict[str, str]
    interrupted: bool


def experiment_dir(storage: Path) -> Path:
    """Tune's experiment directory of a sweep whose state is kept under ``storage``."""
    return Path(storage).resolve() / EXPERIMENT


def run_tune(
    function: Callable[..., Any],
    specs: list[dict[str, Any]],
    storage: Path,
    resources: dict[str, float],
    resume: bool = False,
    quiet: bool = False,
) -> TuneOutcome:
    """Run ``function(**spec["kwargs"])`` for every spec as a Ray Tune trial (Ray must be initialized).

    :param function: a module-level function (workers import it by name).
    :param specs: ``{"trial_id": ..., "kwargs": {...}}`` per trial.
    :param storage: directory of Tune's experiment state (``<storage>/tune``).
    :param resources: per trial: ``{"cpu": c, "gpu": g}``.
    :param resume: continue the experiment saved under ``storage`` (its finished trials are not run again;
        failed and unfinished ones are).
    :raises CommandError: ``resume`` without a saved experiment, or a saved one without ``resume``.
    """
    from ray import tune

    path = experiment_dir(storage)
    trainable = tune.with_resources(_trainable, {"cpu": resources["cpu"], "gpu": resources["gpu"]})
    if resume:
        if not tune.Tuner.can_restore(str(path)):
            raise CommandError(f"nothing to resume: no sweep state under {path}")
        tuner = tune.Tuner.restore(str(path), trainable, resume_unfinished=True, resume_errored=True)
    else:
        if path.exists():
            raise CommandError(f"a sweep already ran with its state in {path}: use --resume, or another --out")
        name = f"{function.__module__}.{function.__qualname__}"
        described = [{"trial_id": spec["trial_id"], "function": name, "kwargs": spec["kwargs"]} for spec in specs]

        def trial_name(trial: Any) -> str:
            return trial.config["spec"]["trial_id"]

        def trial_dirname(trial: Any) -> str:
            # Tune refuses a "/" in a trial's directory (a benchmark run is "task/method/seed0"); escaped so that
            # distinct ids keep distinct directories.
            return trial_name(trial).replace("%", "%25").replace("/", "%2F")

        tuner = tune.Tuner(
            trainable,
            param_space={"spec": tune.grid_search(described)},
            # Reused actors: a trial does not pay the import of torch and SB3 again in a fresh worker.
            tune_config=tune.TuneConfig(
                trial_name_creator=trial_name, trial_dirname_creator=trial_dirname, reuse_actors=True
            ),
            run_config=tune.RunConfig(name=EXPERIMENT, storage_path=str(path.parent), verbose=0 if quiet else 1),
        )
    results = tuner.fit()
    finished, errors = [], {}
    # A ResultGrid iterates through __getitem__ and __len__ (Ray's annotations declare no __iter__).
    for result in results:  # type: ignore[attr-defined]
        spec = (result.config or {}).get("spec", {})  # a trial that never started has no config
        if result.error is not None:
            message = str(result.error).strip().splitlines()[-1]
            log = Path(result.path or ".") / "error.txt"  # Tune's copy of the trial's traceback
            if log.exists():
                message += f" (traceback: {log})"
            errors[spec.get("trial_id", str(result.path))] = message
        elif result.metrics and FINISHED in result.metrics:  # the trainable's return value: it finished
            finished.append(result.metrics[FINISHED])
    return TuneOutcome(finished, errors, interrupted=len(finished) + len(errors) < len(specs))
