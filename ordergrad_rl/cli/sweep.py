"""Run a grid of train + evaluate trials (envs x algorithms x objectives x seeds x hyperparameters) on Ray Tune.

    ordergrad-rl sweep sweep.yaml --out results/sweep
    ordergrad-rl sweep --grid env=RiskyBandit-v0 objective=mean,cvar0.2 seed=0,1,2 timesteps=20000 --out results/bandit
    ordergrad-rl sweep sweep.yaml --out results/sweep --address auto        # an existing Ray cluster (ray start)
    ordergrad-rl sweep --resume --out results/sweep                         # continue an interrupted sweep

The config (YAML) has a grid (every combination is a trial), fixed values and per-trial resources:

    grid: {objective: [mean, cvar0.2], seed: [0, 1, 2], learning_rate: [3.0e-4, 1.0e-3]}
    fixed: {env: SyntheticTailRisk-v0, algo: ppo, timesteps: 100000, eval_env: SyntheticTailRiskDeploy-v0}
    resources: {cpu: 1, gpu: 0}

Trial keys: the options of `ordergrad-rl train` (env, env_kwargs, algo, objective, k, n_episodes, n_envs, seed,
timesteps, policy, device, eval_env, eval_episodes, eval_freq, deterministic, conf_file, vec_env, eval_env_kwargs;
env_kwargs is a mapping of the env's arguments, fixed: {env_kwargs: {max_episode_steps: 100}}, or --grid
"env_kwargs={max_episode_steps: 100}")
and any other constructor argument of the algorithm (checked like train --hparams). Every trial is checked before
any runs: each distinct model is built once, as train builds it. --grid key=v1,v2 adds or replaces a grid key.
An env of your own: --gym-packages MODULE ... (rl-zoo3's option, kept for --resume) are imported first, and again
in each trial (a Ray worker), whose import registers it; or give it as env=module:EnvId-v0, which gym.make imports.
These modules, where they are not installed packages (my_envs.py in your folder), are shipped to every Ray worker
(Ray's runtime_env py_modules).

Each trial trains, then evaluates its final policy on eval_env (default: env; eval_episodes deterministic
episodes), and writes under --out: models/<trial>.zip, tensorboard/<method>/seed<s>_1 (the run's HParams carry its
arguments and final risk values) and trials/<trial>.json. The sweep ends with the risk table (mean and 95%
confidence interval over the seeds of each method: trials that differ only in their seed) in risk_table.md and a
compare figure of the final evaluation returns, compare_<name>.png, and the dashboards of `ordergrad-rl dashboard`
(tensorboard/<method>/mean_over_seeds: the mean and range over seeds of each method; HParams columns).

Ray Tune runs the trials: a local Ray instance with --num-cpus CPUs (default: this machine's) unless --address
names a cluster (then --out must be on storage every node sees). Ctrl-C stops the running trials and keeps the
sweep's state; --resume runs the failed and unfinished trials only (all of them if the sweep stopped before Ray
Tune started, which a plain rerun does too), with the resources per trial it started with. --num-cpus sizes the local
instance only: a cluster's nodes have the CPUs `ray start` gave them. Needs the [ray] extra:
pip install "ordergrad-rl[ray]".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import (
    add_gym_packages_argument,
    add_output_arguments,
    import_gym_packages,
    non_negative_float,
    positive_float,
    positive_int,
)
from ordergrad_rl.common.ray_tune import (
    check_trials_fit,
    experiment_dir,
    init_ray,
    require_ray,
    run_tune,
    shipped_modules,
)
from ordergrad_rl.common.reports import write_json
from ordergrad_rl.sweep.grid import RUN_KEYS, check_resources, check_trials, load_config, method_name, trial_id
from ordergrad_rl.sweep.table import format_risk_table, plot_sweep, read_rows, summarize
from ordergrad_rl.sweep.trial import PLAN_FILE, run_trial
from ordergrad_rl.zoo.dashboards import tensorboard_command, write_dashboards


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl sweep``."""
    parser.add_argument("config", type=Path, nargs="?", default=None, metavar="CONFIG", help="sweep config (YAML)")
    parser.add_argument(
        "--grid",
        nargs="+",
        default=[],
        metavar="KEY=V1,V2",
        help="grid keys to add or replace, e.g. objective=mean,cvar0.2 seed=0,1,2",
    )
    parser.add_argument("--name", default=None, help="the sweep's name (default: the config's name or file name)")
    parser.add_argument(
        "--address",
        default=None,
        metavar="auto|HOST:PORT",
        help="run on an existing Ray cluster (default: a local Ray instance)",
    )
    parser.add_argument(
        "--num-cpus", type=positive_int, default=None, metavar="C", help="CPUs of the local Ray instance"
    )
    parser.add_argument(
        "--cpus-per-trial", type=positive_float, default=None, metavar="C", help="override resources: cpu"
    )
    parser.add_argument(
        "--gpus-per-trial", type=non_negative_float, default=None, metavar="G", help="override resources: gpu (>= 0)"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the sweep in --out: run its failed and unfinished trials"
    )
    parser.add_argument("--quiet", action="store_true", help="no Tune status tables")
    add_gym_packages_argument(parser)
    add_output_arguments(parser, "sweep")


def plan(args: argparse.Namespace) -> dict[str, Any]:
    """The trials of the command line (config, --grid, resource overrides), checked: ``{"name", "resources",
    "trials": [{"trial_id", "method", "trial"}]}``.

    :raises CommandError: no config and no --grid, or a problem in a trial (see :func:`check_trials`).
    """

    if args.config is None and not args.grid:
        raise CommandError("give a sweep config file, --grid key=values, or --resume")
    config = load_config(args.config, args.grid, args.name)
    config.resources = resources_of(args, config.resources)
    trials = config.trials()
    varying = config.varying()
    check_trials(trials, varying)
    ids = [trial_id(t, varying) for t in trials]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CommandError(f"the grid repeats trials: {', '.join(duplicates)} (a value listed twice?)")
    planned = [{"trial_id": i, "method": method_name(t, varying), "trial": t} for i, t in zip(ids, trials, strict=True)]
    return {"name": config.name, "resources": config.resources, "trials": planned, "gym_packages": args.gym_packages}


def resumed_plan(args: argparse.Namespace) -> dict[str, Any]:
    """The plan saved in ``--out``; with a config or --grid, it must be the same.

    :raises CommandError: no saved plan, or a different one.
    """
    path = args.out / PLAN_FILE
    if not path.exists():
        raise CommandError(f"nothing to resume: {path} does not exist")
    saved = json.loads(path.read_text())
    # Its --gym-packages (a plan saved before they were kept has none), with those given now: they register the envs.
    planned = saved.get("gym_packages", [])
    try:
        import_gym_packages(planned)
    except CommandError as err:  # not given now: say where they come from
        raise CommandError(
            f"--resume: {err}; the sweep in {args.out} was planned with --gym-packages {' '.join(planned)}, which its "
            "trials import: resume it where they import (the folder it ran in, or with their folder on PYTHONPATH)"
        ) from err
    saved["gym_packages"] = list(dict.fromkeys([*planned, *args.gym_packages]))
    if args.config is not None or args.grid:
        given = json.loads(json.dumps(plan(args)))
        if with_defaults(given["trials"]) != with_defaults(saved["trials"]):
            raise CommandError(f"--resume: the trials differ from those of the sweep in {args.out}")
        resources = given["resources"]
    else:
        resources = resources_of(args, saved["resources"])
    if resources != saved["resources"]:
        # Tune keeps each trial's resource request in its saved state: a resumed trial would run with the old one.
        raise CommandError(
            f"--resume: the sweep in {args.out} runs its trials with {describe_resources(saved['resources'])}; "
            f"they cannot change when it resumes (asked: {describe_resources(resources)}): run the sweep again "
            "in another --out"
        )
    return saved


#: A trial's ``policy`` in the plans saved before its default became ``train``'s (``None``: the entry's, else the
#: algorithm's first): ``MlpPolicy``, which the algorithms of those sweeps had first.
SAVED_POLICY_DEFAULT = "MlpPolicy"


def with_defaults(planned: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The planned trials with every trial key's default where they lack it, and the ``policy`` of the saved plans
    where it is the default: a plan saved before a key was added (``env_kwargs``), or before the policy's default
    became ``train``'s (:data:`SAVED_POLICY_DEFAULT`), is the same sweep as today's of the same config."""
    trials = [RUN_KEYS | entry["trial"] for entry in planned]
    trials = [trial | {"policy": trial["policy"] or SAVED_POLICY_DEFAULT} for trial in trials]
    return [entry | {"trial": trial} for entry, trial in zip(planned, trials, strict=True)]


def resources_of(args: argparse.Namespace, resources: dict[str, float]) -> dict[str, float]:
    """``resources`` with ``--cpus-per-trial`` and ``--gpus-per-trial`` applied, checked.

    :raises CommandError: a bad value (see :func:`check_resources`).
    """
    overrides = {"cpu": args.cpus_per_trial, "gpu": args.gpus_per_trial}
    resources = resources | {key: value for key, value in overrides.items() if value is not None}
    check_resources(resources)
    return resources


def counted(number: int, noun: str) -> str:
    """``"1 trial"``, ``"4 trials"``."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def describe_resources(resources: dict[str, float]) -> str:
    """``"2 CPUs and 0 GPUs per trial"``."""
    return f"{resources['cpu']:g} CPU{'s' if resources['cpu'] != 1 else ''} and {resources['gpu']:g} GPUs per trial"


def worker_modules(sweep: dict[str, Any]) -> list[str]:
    """The modules a sweep's trials import in their Ray workers: its ``--gym-packages``, and the module of each
    ``module:EnvId-v0`` env id (``env``, ``eval_env``), which ``gym.make`` imports; not this package's
    (``ordergrad_rl:RiskyBandit-v0``), which every worker has to run its trials."""
    ids = [trial["trial"].get(key) for trial in sweep["trials"] for key in ("env", "eval_env")]
    modules = [
        *sweep.get("gym_packages", []),
        *(env.partition(":")[0] for env in ids if isinstance(env, str) and ":" in env),
    ]
    return [module for module in modules if module.partition(".")[0] != __name__.partition(".")[0]]


def run(args: argparse.Namespace) -> int:
    """Plan, run the trials on Ray Tune, print the risk table, write the figure (and JSON)."""

    require_ray("sweep")  # before any work: say which extra to install
    if args.address is not None and args.num_cpus is not None:
        # ray.init refuses num_cpus with an address too: a cluster's nodes have the CPUs `ray start` gave them.
        raise CommandError(
            f"--num-cpus sizes a local Ray instance; the cluster at --address {args.address} has the CPUs its "
            "nodes were started with (ray start --num-cpus): drop --num-cpus"
        )
    import_gym_packages(args.gym_packages)  # the trials are checked here, on the envs they register
    out = args.out.resolve()
    # The plan is written before Ray starts, so a sweep that failed before Tune ran (a bad --address, Ctrl-C during
    # Ray's start-up) leaves a plan without Tune state: no trial ran, so it may be run again, or resumed from the top.
    started = experiment_dir(out / "ray").exists()
    if args.resume:
        sweep = resumed_plan(args)
        if args.gym_packages:  # kept with the plan's, for the next --resume
            write_json(out / PLAN_FILE, sweep)
    else:
        sweep = plan(args)
        if (out / PLAN_FILE).exists():
            if started:
                raise CommandError(f"{out} already holds a sweep: --resume it, or choose another --out")
            print(f"{out} holds the plan of a sweep that never started its trials: replacing it")
        write_json(out / PLAN_FILE, sweep)
    trials = sweep["trials"]
    resources = sweep["resources"]
    packages = sweep.get("gym_packages", [])
    print(
        f"sweep {sweep['name']}: {counted(len(trials), 'trial')}, "
        f"{counted(len(dict.fromkeys(t['method'] for t in trials)), 'method')}, "
        f"{describe_resources(resources)}"
        f"{'' if args.address is None else f', Ray cluster {args.address}'}; output in {out}"
    )
    specs = [
        {
            "trial_id": t["trial_id"],
            "kwargs": {**t, "out": str(out), "threads": max(1, int(resources["cpu"])), "gym_packages": packages},
        }
        for t in trials
    ]
    import ray

    init_ray(args.address, args.num_cpus, quiet=args.quiet, py_modules=shipped_modules(worker_modules(sweep)))
    start = time.perf_counter()
    try:
        if args.address is None:  # (a cluster may add nodes: there Tune warns and waits)
            check_trials_fit(resources, "the local Ray instance (--num-cpus, default: this machine's cores)")
        outcome = run_tune(run_trial, specs, out / "ray", resources, resume=args.resume and started, quiet=args.quiet)
    finally:
        ray.shutdown()
    wall = time.perf_counter() - start

    ids = {t["trial_id"] for t in trials}
    rows = [row for row in read_rows(out) if row["trial_id"] in ids]
    print(f"\n{len(rows)} of {len(trials)} trials finished ({wall:.0f} s in this run)")
    status = 0
    for trial, error in outcome.errors.items():
        print(f"[FAILED] {trial}: {error}", file=sys.stderr)
        status = 1
    if outcome.interrupted:
        print("interrupted", file=sys.stderr)
        status = 130
    if status:
        print(f"run the rest with:  ordergrad-rl sweep --resume --out {args.out}", file=sys.stderr)
    if rows:
        summary = summarize(rows)
        table = format_risk_table(summary)
        print(f"\nfinal evaluation returns, mean ± 95% CI over seeds:\n\n{table}\n")
        (out / "risk_table.md").write_text(table + "\n")
        figure = plot_sweep(rows, out / f"compare_{sweep['name']}.png")
        print(f"table: {out / 'risk_table.md'}\nfigure: {figure}")
        if (out / "tensorboard").is_dir():  # (runs of a resumed sweep may have been moved away)
            dashboards = write_dashboards(out / "tensorboard")
            print(f"TensorBoard: {tensorboard_command(out / 'tensorboard')}\n  then open {dashboards.url}")
        if args.json is not None:
            payload = {"name": sweep["name"], "summary": summary, "trials": rows, "wall_seconds": wall}
            print(f"json: {write_json(args.json, payload)}")
    return status
