"""One trial of a sweep: ``train`` and a final evaluation, written as a model, a TensorBoard run and a JSON row.

Runs inside a Ray worker (or any process); it imports no Ray. Outputs under the sweep's directory ``out``:

* ``models/<trial id>.zip``: the trained model;
* ``tensorboard/<method>/seed<s>_1``: the TensorBoard run (runs of a method share the parent ``<method>``), whose
  last ``eval_risk/*`` values are the final evaluation (the HParams tab shows them beside the arguments);
* ``trials/<trial id>.json``: the row (:func:`run_trial`'s return value, plus the evaluation returns), written
  last and atomically: a trial whose row exists with the same settings is finished, and running it again returns
  the row without training (so a resumed sweep redoes nothing finished, even a trial that ended just as the sweep
  was interrupted, before Ray Tune recorded it).
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ordergrad_rl.common.options import import_gym_packages
from ordergrad_rl.common.reports import write_json
from ordergrad_rl.sweep.grid import hyperparameters, train_settings
from ordergrad_rl.zoo.algorithms import algorithm_class, check_hparam
from ordergrad_rl.zoo.models import make_callbacks
from ordergrad_rl.zoo.training import (
    build_model,
    eval_callback,
    learn,
    remove_runs,
    run_arguments,
    save_model,
    with_entry_env,
    zoo_hyperparams,
)

#: The sweep's plan (its trials, resources and ``--gym-packages``), written in its directory before the trials run
#: and read by ``--resume`` and by each trial (:func:`planned_gym_packages`).
PLAN_FILE = "sweep.json"


def planned_gym_packages(out: Path) -> list[str]:
    """The ``--gym-packages`` of the plan in the sweep's directory ``out`` (:data:`PLAN_FILE`), ``[]`` where there is
    none (a trial run on its own). A trial reads them there because Ray Tune resumes a trial with the arguments it
    was first given: modules a ``--resume --gym-packages`` adds reach its trials through the plan only."""
    path = out / PLAN_FILE
    return list(json.loads(path.read_text()).get("gym_packages", [])) if path.is_file() else []


def row_path(out: Path, trial_id: str) -> Path:
    """Where the JSON row of a trial goes."""
    return out / "trials" / f"{trial_id}.json"


def run_trial(
    trial: dict[str, Any],
    trial_id: str,
    method: str,
    out: Path | str,
    threads: int = 1,
    gym_packages: Sequence[str] = (),
) -> dict[str, Any]:
    """Train the trial, evaluate the final policy, save the model and write the JSON row.

    The evaluation runs ``eval_episodes`` episodes of ``eval_env`` (default: the training env), deterministic
    unless ``deterministic: false``, on envs seeded from the trial's seed (``train``'s evaluation seeds).

    :param trial: the trial's keys (see :mod:`ordergrad_rl.sweep.grid`).
    :param trial_id: the trial's name (file names).
    :param method: the trial's method (TensorBoard parent directory).
    :param out: the sweep's directory.
    :param threads: torch threads (the trial's CPUs).
    :param gym_packages: modules imported first, whose import registers the envs (the sweep's ``--gym-packages``:
        imported in the trial's process, a Ray worker, which has not imported the driver's), with those of the plan
        in ``out`` (:func:`planned_gym_packages`), recorded in the model's ``args.yml`` for ``evaluate``.
    :return: the row: ``trial_id``, ``method``, ``trial``, ``profile`` (risk profile of the evaluation returns),
        ``timesteps``, ``train_seconds``, ``host``, ``node`` (the Ray node id when run by Ray), ``model``, ``run``.
    """
    import torch

    out = Path(out)
    finished = finished_row(out, trial_id, trial)
    if finished is not None:
        return finished
    torch.set_num_threads(max(1, int(threads)))
    gym_packages = list(dict.fromkeys([*gym_packages, *planned_gym_packages(out)]))
    import_gym_packages(gym_packages)
    tensorboard = out / "tensorboard" / method
    name = f"seed{trial['seed']}"
    remove_runs(tensorboard, name)  # an interrupted attempt of this trial: start its run afresh
    settings = train_settings(trial, out / "tensorboard")
    cls = algorithm_class(trial["algo"])
    # Checked again (the grid was checked before any trial ran) for the values the check makes: lin_<x> schedules.
    hparams = {key: check_hparam(key, value, cls, f"sweep key {key}") for key, value in hyperparameters(trial).items()}
    entry = zoo_hyperparams(settings.algo, settings.env, settings.conf_file)
    settings = with_entry_env(settings, entry)
    model = build_model(settings, hparams, entry=entry)
    callback = eval_callback(settings, model)
    start = time.perf_counter()
    extra = make_callbacks(entry.callback) if entry is not None else []  # the entry's rl-zoo3 callback
    run_name = f"{method}/{name}"
    learn(model, trial["timesteps"], callback=[callback, *extra] if extra else callback, tb_log_name=run_name)
    train_seconds = time.perf_counter() - start
    # The final evaluation (the callback evaluates at the end of training): the run's last eval_risk/* values.
    profile = callback.last_profile
    run = Path(model.logger.dir)
    model.logger.close()
    model_file = out / "models" / f"{trial_id}.zip"
    model_file.parent.mkdir(parents=True, exist_ok=True)
    # With its VecNormalize statistics and env_wrapper, if any, and its env's arguments (evaluate reads them).
    save_model(model, model_file, settings.env_wrapper, run_arguments(settings, gym_packages, run_name))
    row = {
        "trial_id": trial_id,
        "method": method,
        "trial": trial,
        "profile": profile,
        "eval": {"env": settings.eval_env, "episodes": settings.eval_episodes, "deterministic": settings.deterministic},
        "info": callback.last_info,
        "timesteps": int(model.num_timesteps),
        "train_seconds": train_seconds,
        "host": platform.node(),
        "pid": os.getpid(),
        "node": _ray_node_id(),
        "model": str(model_file),
        "run": str(run),
    }
    write_json(row_path(out, trial_id), row | {"returns": callback.last_returns})  # atomic: whole or absent
    return row


def finished_row(out: Path, trial_id: str, trial: dict[str, Any]) -> dict[str, Any] | None:
    """The saved row of a trial that finished with these settings (without its returns), else ``None``."""
    path = row_path(out, trial_id)
    if not path.exists():
        return None
    row = json.loads(path.read_text())
    if row.get("trial") != json.loads(json.dumps(trial)):
        return None
    row.pop("returns", None)
    return row


def _ray_node_id() -> str | None:
    """The Ray node this process runs on, or ``None`` outside Ray."""
    import sys

    if "ray" not in sys.modules:
        return None
    import ray

    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
