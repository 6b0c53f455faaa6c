"""The trials of a sweep: a YAML config (and ``--grid`` overrides) expanded into the cross product of its values.

A config file::

    name: tailrisk-cvar            # optional; default: the file's name
    grid:                          # every combination of these values is one trial
      algo: [ppo]
      objective: [mean, cvar0.2]
      seed: [0, 1, 2]
      learning_rate: [3.0e-4, 1.0e-3]
    fixed:                         # the same for every trial
      env: SyntheticTailRisk-v0
      timesteps: 100000
      eval_env: SyntheticTailRiskDeploy-v0
      eval_episodes: 256
    resources: {cpu: 1, gpu: 0}    # per trial (Ray Tune's resource request)

Trial keys are the options of ``ordergrad-rl train`` (:data:`RUN_KEYS`: ``env``, ``env_kwargs``, ``algo``,
``objective``, ``k``, ``n_episodes``, ``n_envs``, ``seed``, ``timesteps``, ``policy``, ``device``, ``eval_env``,
``eval_episodes``, ``eval_freq``, ``deterministic``, ``conf_file``, ``vec_env``, ``eval_env_kwargs``; ``env_kwargs``
is a mapping, the env's arguments as ``train --env-kwargs`` gives them, ``gym.make``'s ``max_episode_steps`` too, and
makes an ``eval_env`` of the same id too, unless ``eval_env_kwargs`` gives its own); every other key is a
constructor argument of the algorithm, checked like ``train --hparams``. As in ``train``, the env's entry of the
per-env hyperparameter file is applied under the trial's own keys: the file shipped for ``algo`` unless ``conf_file``
names another (a path, read from the directory the sweep starts in, with an entry for the trial's env) or ``none``.
A grid value may be a single value (not a list). Numbers written ``3e-4`` (which YAML 1.1 reads as text) are numbers.

The *method* of a trial is everything but its seed: trials that differ only in their seed are the seeds of one
method, summarized together (mean and confidence interval over seeds) and drawn in one colour.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import check_device
from ordergrad_rl.zoo.algorithms import ALGOS, algo_name, algorithm_class, check_hparam, check_policy_name, number
from ordergrad_rl.zoo.models import VEC_ENVS, check_env_id, check_env_kwargs
from ordergrad_rl.zoo.training import (
    TrainSettings,
    build_model,
    eval_callback,
    with_entry_env,
    zoo_hyperparams,
)

#: Options of a trial that are not constructor arguments, with their defaults (``None``: the algorithm's default
#: or, for ``eval_env``, the training env; for ``policy``, as ``train``'s: the conf-file entry's, else the algorithm's
#: first, MlpLstmPolicy for recurrent_ppo).
RUN_KEYS: dict[str, Any] = {
    "env": None,
    "env_kwargs": None,
    "algo": "ppo",
    "objective": "mean",
    "k": None,
    "n_episodes": None,
    "n_envs": None,
    "seed": 0,
    "timesteps": None,
    "policy": None,
    "device": "cpu",
    "eval_env": None,
    "eval_episodes": 100,
    "eval_freq": None,
    "deterministic": True,
    "conf_file": None,
    "vec_env": "dummy",
    "eval_env_kwargs": None,
}
#: Keys every trial must have.
REQUIRED_KEYS: tuple[str, ...] = ("env", "timesteps")
#: Per-trial resources (Ray Tune's request) when the config has none: one CPU, no GPU.
DEFAULT_RESOURCES: dict[str, float] = {"cpu": 1, "gpu": 0}
#: Longest method name; longer ones are cut and end in a hash.
MAX_METHOD_NAME = 80


@dataclass
class SweepConfig:
    """A sweep: the grid, the values shared by every trial, and the resources of a trial.

    :param name: the sweep's name (figure and table names).
    :param grid: key -> values; the trials are their cross product.
    :param fixed: key -> value shared by every trial.
    :param resources: per-trial ``{"cpu": c, "gpu": g}``.
    """

    name: str
    grid: dict[str, list[Any]] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    resources: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_RESOURCES))

    def trials(self) -> list[dict[str, Any]]:
        """Every combination of the grid's values, with the fixed values and the defaults of :data:`RUN_KEYS`
        (grid order: the last key varies fastest)."""
        keys = list(self.grid)
        trials = []
        for values in itertools.product(*(self.grid[key] for key in keys)):
            trial = RUN_KEYS | self.fixed | dict(zip(keys, values, strict=True))
            if isinstance(trial["algo"], str):  # rl-zoo3's ppo_lstm is recurrent_ppo, as in train --algo
                trial["algo"] = algo_name(trial["algo"])
            conf_file = trial["conf_file"]
            if conf_file is not None and str(conf_file).lower() != "none":
                trial["conf_file"] = str(Path(conf_file).resolve())  # a Ray worker runs in another directory
            trials.append(trial)
        return trials

    def varying(self) -> list[str]:
        """Grid keys with more than one value, except the seed: the keys that tell methods apart."""
        return [key for key, values in self.grid.items() if key != "seed" and len(values) > 1]


def _values(key: str, value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise CommandError(f"grid key {key!r} has no values")
    return [number(v) for v in values]


def parse_grid_option(item: str) -> tuple[str, list[Any]]:
    """``--grid key=v1,v2`` -> ``(key, [v1, v2])``; values are read as a YAML flow list (``[v1, v2]``), so
    ``net_arch=[64,64],[32]`` gives two lists.

    :raises CommandError: no ``=``, an empty key, or values YAML cannot read.
    """
    import yaml

    key, sep, text = item.partition("=")
    key = key.strip()
    if not sep or not key or not text.strip():
        raise CommandError(f"--grid expects key=value1,value2,..., got {item!r}")
    try:
        values = yaml.safe_load(f"[{text}]")
    except yaml.YAMLError as err:
        raise CommandError(f"--grid {item}: cannot read the values ({err})") from err
    return key, _values(key, values)


def load_config(path: Path | None, grid: Sequence[str] = (), name: str | None = None) -> SweepConfig:
    """Read a sweep config (see the module docstring); ``--grid`` items replace or add grid keys.

    :param path: YAML file, or ``None`` for a sweep given by ``grid`` only.
    :param grid: ``key=v1,v2`` items.
    :param name: the sweep's name; default: the config's ``name``, else the file's stem, else ``"sweep"``.
    :raises CommandError: unreadable file, unknown sections, a key both in ``grid`` and ``fixed``, or bad values.
    """
    import yaml

    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as err:
            raise CommandError(f"cannot read the sweep config {path}: {err}") from err
        if not isinstance(data, dict):
            raise CommandError(f"{path}: a sweep config is a mapping with grid, fixed, resources (and name)")
        unknown = set(data) - {"name", "grid", "fixed", "resources"}
        if unknown:
            raise CommandError(f"{path}: unknown sections {sorted(unknown)}; expected grid, fixed, resources, name")
    sections = {}
    for section in ("grid", "fixed", "resources"):
        value = data.get(section) or {}
        if not isinstance(value, dict):
            raise CommandError(f"{path}: {section} must be a mapping of keys to values, got {value!r}")
        sections[section] = value
    config = SweepConfig(
        name=name or str(data.get("name") or (Path(path).stem if path is not None else "sweep")),
        grid={key: _values(key, value) for key, value in sections["grid"].items()},
        fixed={key: number(value) for key, value in sections["fixed"].items()},
        resources=DEFAULT_RESOURCES | {key: number(value) for key, value in sections["resources"].items()},
    )
    for item in grid:
        key, values = parse_grid_option(item)
        config.fixed.pop(key, None)
        config.grid[key] = values
    both = set(config.grid) & set(config.fixed)
    if both:
        raise CommandError(f"keys both in grid and fixed: {sorted(both)}")
    check_resources(config.resources)
    return config


def check_resources(resources: dict[str, Any]) -> None:
    """``cpu`` > 0 and ``gpu`` >= 0 numbers, no other keys.

    :raises CommandError: otherwise.
    """
    unknown = set(resources) - set(DEFAULT_RESOURCES)
    if unknown:
        raise CommandError(f"resources: unknown keys {sorted(unknown)}; expected cpu and gpu")
    for key, low in (("cpu", 0.0), ("gpu", 0.0)):
        value = resources[key]
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or value < low
            or (key == "cpu" and not value)
        ):
            raise CommandError(f"resources: {key} must be a number {'>' if key == 'cpu' else '>='} 0, got {value!r}")


def check_trials(trials: list[dict[str, Any]], varying: Sequence[str] = ()) -> None:
    """Check every trial before any runs: required keys, the algorithm, env ids, objectives, ``k < n_episodes``,
    integer counts and the hyperparameters' types (the checks of ``train --hparams``), then what ``train`` checks
    before training (the policy, the device, eval_env's spaces, action masks, the algorithm's own checks such as
    ``group_size`` against ``n_episodes``) by building each distinct model once (:func:`check_models`).

    :param varying: the grid keys that tell methods apart (:meth:`SweepConfig.varying`), to name a failing trial.
    :raises CommandError: the first problem, naming the key.
    """
    from ordergrad_rl.core import Objective

    checked_envs: set[str] = set()
    for trial in trials:
        missing = [key for key in REQUIRED_KEYS if trial.get(key) is None]
        if missing:
            raise CommandError(f"every trial needs {', '.join(missing)} (in grid or fixed)")
        if trial["algo"] not in ALGOS:
            raise CommandError(f"algo must be one of {sorted(ALGOS)}, got {trial['algo']!r}")
        for key in ("timesteps", "eval_episodes", "n_episodes", "n_envs", "k", "eval_freq"):
            value = trial[key]
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise CommandError(f"{key} must be an integer >= 1, got {value!r}")
        if isinstance(trial["seed"], bool) or not isinstance(trial["seed"], int) or trial["seed"] < 0:
            raise CommandError(f"seed must be an integer >= 0, got {trial['seed']!r}")
        if not isinstance(trial["deterministic"], bool):
            raise CommandError(f"deterministic must be true or false, got {trial['deterministic']!r}")
        check_device(str(trial["device"]), here=False)  # a trial may run on another node's GPU
        for key in ("env", "eval_env"):
            env_id = trial[key]
            if env_id is not None and env_id not in checked_envs:
                check_env_id(str(env_id))  # unknown ids and missing packages fail here
                checked_envs.add(env_id)
        if trial["vec_env"] not in VEC_ENVS:
            raise CommandError(f"vec_env must be one of {', '.join(VEC_ENVS)}, got {trial['vec_env']!r}")
        for key, env_id in (("env_kwargs", trial["env"]), ("eval_env_kwargs", trial["eval_env"] or trial["env"])):
            env_kwargs = trial[key]
            if env_kwargs is not None and (
                not isinstance(env_kwargs, dict) or not all(isinstance(name, str) for name in env_kwargs)
            ):
                raise CommandError(
                    f"{key} must be a mapping of the env's arguments ({{max_episode_steps: 100}}), got {env_kwargs!r}"
                )
            if env_kwargs:
                check_env_kwargs(str(env_id), env_kwargs, key)
        try:
            objective = Objective.parse(trial["objective"], trial["k"])
        except (TypeError, ValueError) as err:
            raise CommandError(f"objective {trial['objective']!r}: {err}") from err
        n_episodes = trial["n_episodes"]
        if n_episodes is not None and objective.k is not None and objective.k >= n_episodes:
            raise CommandError(f"objective {str(objective)!r} needs k < n_episodes, got n_episodes={n_episodes}")
        cls = algorithm_class(trial["algo"])
        if trial.get("policy") is not None:
            check_policy_name(cls, trial["policy"], "sweep key policy")
        for key, value in hyperparameters(trial).items():
            check_hparam(key, value, cls, f"sweep key {key}", options=tuple(RUN_KEYS))
        if trial.get("risk_schedule") is not None:
            # Imported here: the agents package pulls in torch, which the sweep's parser does not need.
            from ordergrad_rl.agents.common.risk_schedules import check_risk_schedule, parse_risk_schedule

            try:
                check_risk_schedule(parse_risk_schedule(trial["risk_schedule"]), objective)
            except ValueError as err:
                raise CommandError(f"sweep key risk_schedule: {err}") from err
    check_models(trials, varying)


def train_settings(trial: dict[str, Any], tensorboard: Path | None) -> TrainSettings:
    """The training run of a trial (built and evaluated exactly like ``ordergrad-rl train``'s)."""
    options = {key: trial.get(key, default) for key, default in RUN_KEYS.items()}
    timesteps = options.pop("timesteps")
    # No periodic evaluation unless asked for: the final one is always made.
    options["eval_freq"] = options["eval_freq"] or timesteps + 1
    options["eval_env"] = options["eval_env"] or options["env"]
    return TrainSettings(**options, tensorboard=tensorboard)


def check_models(trials: list[dict[str, Any]], varying: Sequence[str] = ()) -> None:
    """Build the model and the evaluation callback of every distinct configuration of ``trials`` (trials that
    differ only in their seed or timesteps share one) as ``train`` and the trial do, on the CPU: whatever ``train``
    refuses before training fails here, not in a Ray worker.

    :raises CommandError: the first configuration refused, naming its method.
    """
    seen: set[str] = set()
    for trial in trials:
        config = json.dumps({k: v for k, v in trial.items() if k not in ("seed", "timesteps")}, sort_keys=True)
        if config in seen:
            continue
        seen.add(config)
        settings = train_settings(trial | {"device": "cpu"}, None)  # the device was checked; a GPU may be elsewhere
        cls = algorithm_class(trial["algo"])
        hparams = {
            key: check_hparam(key, value, cls, f"sweep key {key}") for key, value in hyperparameters(trial).items()
        }
        try:
            entry = zoo_hyperparams(settings.algo, settings.env, settings.conf_file)
            settings = with_entry_env(settings, entry)
            model = build_model(settings, hparams, entry=entry)
            eval_callback(settings, model)
        except CommandError as err:
            raise CommandError(f"trial {method_name(trial, varying)}: {err}") from err
        model.get_env().close()


def hyperparameters(trial: dict[str, Any]) -> dict[str, Any]:
    """The trial's constructor arguments other than those of :data:`RUN_KEYS`."""
    return {key: value for key, value in trial.items() if key not in RUN_KEYS}


def _slug(text: str) -> str:
    return re.sub(r"[^\w.@=-]+", "-", text).strip("-")


def method_name(trial: dict[str, Any], varying: Sequence[str]) -> str:
    """The method of a trial as a file name: the algorithm, the objective (with ``k`` when given), then
    ``key=value`` for every other ``varying`` key (``OrderGradPPO_cvar0.2_learning_rate=0.001``), the items of a
    mapping each (``env_kwargs``'s: ``OrderGradPPO_mean_max_episode_steps=100``)."""

    objective = str(trial["objective"]) + (f"@{trial['k']}" if trial["k"] is not None else "")
    parts = [ALGOS[trial["algo"]], objective]
    for key in varying:
        if key not in ("algo", "objective", "k"):
            value = trial[key]
            items = value.items() if isinstance(value, dict) and value else [(key, value)]
            parts += [f"{name}={item}" for name, item in items]
    name = _slug("_".join(map(str, parts)))
    if len(name) > MAX_METHOD_NAME:
        name = f"{name[: MAX_METHOD_NAME - 9]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}"
    return name


def trial_id(trial: dict[str, Any], varying: Sequence[str]) -> str:
    """``<method>_seed<s>``: unique within a sweep (trials that share a method differ in their seed)."""
    return f"{method_name(trial, varying)}_seed{trial['seed']}"
