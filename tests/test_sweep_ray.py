"""``ordergrad-rl sweep`` on a local Ray instance: a 2x2 sweep interrupted by Ctrl-C, then resumed.

Skipped without the ``[ray]`` extra. The sweep runs in subprocesses (as a user runs it), with at most 2 CPUs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("ray.tune", reason='needs the [ray] extra: pip install "ordergrad-rl[ray]"')
# One pytest-xdist worker runs these: each starts a local Ray instance with 2 CPUs, and two at once would share them.
pytestmark = pytest.mark.xdist_group("ray")

GRID = ["objective=mean,cvar0.25", "seed=0,1", "env=RiskyBandit-v0", "algo=reinforce", "n_episodes=16"]
# About a second of training per trial: the Ctrl-C lands while a later trial runs (one CPU runs them one after
# another, and the test signals within 0.2 s of the first row), and the test stays short (3200 steps took 84 s).
FIXED = ["timesteps=800", "eval_episodes=16"]


def sweep(*args: str) -> list[str]:
    return [sys.executable, "-m", "ordergrad_rl.cli", "sweep", *args, "--quiet"]


def rows(out: Path) -> dict[str, bytes]:
    return {path.stem: path.read_bytes() for path in sorted((out / "trials").glob("*.json"))}


@pytest.mark.slow
def test_sweep_interrupted_by_ctrl_c_resumes_without_redoing_finished_trials(tmp_path):
    out = tmp_path / "sweep"
    # One CPU: the trials run one after another, so the first finishes while the others wait.
    first = subprocess.Popen(
        sweep("--grid", *GRID, *FIXED, "--out", str(out), "--num-cpus", "1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 240
    while not rows(out) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert first.poll() is None, f"the sweep ended before the interruption: {first.communicate()}"
    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == 130, err
    assert f"run the rest with:  ordergrad-rl sweep --resume --out {out}" in err
    done = rows(out)
    assert 1 <= len(done) < 4
    stamps = {name: (out / "trials" / f"{name}.json").stat().st_mtime_ns for name in done}

    resumed = subprocess.run(
        sweep("--resume", "--out", str(out), "--num-cpus", "2", "--json", str(tmp_path / "sweep.json")),
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert "4 of 4 trials finished" in resumed.stdout
    # --quiet: no Tune configuration box or status tables, no Ray INFO lines
    assert "Configuration for experiment" not in resumed.stdout + resumed.stderr
    assert " INFO " not in resumed.stdout + resumed.stderr
    final = rows(out)
    methods = ("OrderGradREINFORCE_mean", "OrderGradREINFORCE_cvar0.25")
    assert sorted(final) == sorted(f"{method}_seed{seed}" for method in methods for seed in (0, 1))
    for name, content in done.items():  # finished before the interruption: not run again
        assert final[name] == content
        assert (out / "trials" / f"{name}.json").stat().st_mtime_ns == stamps[name]
    for name, content in final.items():
        row = json.loads(content)
        assert row["node"] is not None and len(row["returns"]) == 16  # ran as a Ray trial
        assert (out / "models" / f"{name}.zip").exists()
    # One TensorBoard run per trial, grouped by method (the interrupted attempt's partial run was replaced).
    tensorboard = out / "tensorboard"
    runs = sorted(str(p.parent.relative_to(tensorboard)) for p in tensorboard.rglob("events.out.tfevents.*"))
    seeds = [run for run in runs if "/seed" in run]
    assert seeds == sorted(f"{method}/seed{seed}_1" for method in methods for seed in (0, 1))
    # and the dashboards: a mean over the two seeds of each method, the layout at the root
    assert sorted(set(runs) - set(seeds)) == sorted([".", *(f"{method}/mean_over_seeds" for method in methods)])

    summary = json.loads((tmp_path / "sweep.json").read_text())["summary"]
    assert {method: summary[method]["seeds"] for method in methods} == {method: [0, 1] for method in methods}
    table = (out / "risk_table.md").read_text().splitlines()
    assert len(table) == 2 + 2 and all(" ± " in line for line in table[2:])
    assert (out / "compare_sweep.png").stat().st_size > 20_000


@pytest.mark.slow
def test_tailrisk_grid_on_ray_gives_the_local_results(tmp_path):
    """The reproduction's jobs as Ray Tune trials (what --address runs) reproduce the local workers' numbers."""
    import dataclasses

    import numpy as np

    from ordergrad_rl.experiments import tailrisk as tr

    config = tr.Config(seeds=1, updates=2, n_episodes=16, k=8, deploy_paths=16)
    local = tr.run_experiment(dataclasses.replace(config, workers=1), quiet=True)
    on_ray = tr.run_experiment(dataclasses.replace(config, address="local"), quiet=True, storage=tmp_path / "ray")
    for method in config.methods:
        for name in ("wealth", "max_drawdown", "weights"):
            np.testing.assert_array_equal(
                getattr(on_ray["deployments"][method], name), getattr(local["deployments"][method], name)
            )
    assert on_ray["methods"] == local["methods"]
    (state,) = (tmp_path / "ray").iterdir()  # one fresh directory per run: a rerun never meets an old state
    assert len(list((state / "results").glob("*.pkl"))) == len(config.methods)


@pytest.mark.slow
def test_a_trial_larger_than_the_local_instance_is_refused_instead_of_pending_forever(tmp_path):
    """Tune leaves a trial that asks for more CPUs than any node has pending, and the sweep waited forever."""
    out = tmp_path / "sweep"
    argv = ["--grid", *GRID, *FIXED, "--out", str(out), "--num-cpus", "1", "--cpus-per-trial", "2"]
    result = subprocess.run(sweep(*argv), capture_output=True, text=True, timeout=180)
    assert result.returncode == 2, result.stderr
    assert "a trial asks for 2 CPUs and 0 GPUs, the local Ray instance (--num-cpus" in result.stderr
    assert "has 1 CPUs and 0 GPUs: no trial could start" in result.stderr
    assert not (out / "ray").exists()  # Tune never started: a plain rerun with other resources replaces the plan


@pytest.mark.slow
def test_a_failed_ray_job_names_the_file_with_its_traceback(tmp_path):
    """The last line of an error says what failed, not where: the report names Tune's copy of the traceback (it
    scrolled by among the other trials' output)."""
    import re

    from ordergrad_rl.common.errors import CommandError
    from ordergrad_rl.common.jobs import Job, run_jobs

    with pytest.raises(CommandError) as err:
        run_jobs([Job("bad", json.loads, {"s": "{"})], address="local", storage=tmp_path, quiet=True)
    message = str(err.value)
    assert "1 of 1 Ray jobs did not finish. bad: json.decoder.JSONDecodeError: Expecting property name" in message
    log = Path(re.search(r"\(traceback: (.+error\.txt)\)", message).group(1))
    assert log.is_relative_to(tmp_path) and "in call_and_save" in log.read_text()


@pytest.mark.slow
def test_job_ids_with_a_slash_run_as_ray_trials(tmp_path):
    """``reproduce benchmarks --address`` names its runs ``task/method/seed0``: Tune refused the trial directory
    (ValueError: Trial dirname must not contain '/') before any run started."""
    from ordergrad_rl.common.jobs import Job, run_jobs

    jobs = [
        Job("bandit/og-cvar/seed0", json.loads, {"s": "1"}),
        Job("bandit%2Fog-cvar%2Fseed0", json.loads, {"s": "2"}),
    ]
    assert run_jobs(jobs, address="local", storage=tmp_path, quiet=True) == {jobs[0].id: 1, jobs[1].id: 2}


@pytest.mark.slow
def test_ray_jobs_read_and_write_relative_paths_in_the_callers_directory(tmp_path, monkeypatch):
    """``reproduce tailrisk --address local --out results/x`` failed with FileNotFoundError on
    ``results/x/ray/jobs_*/results/reinforce_seed0.pkl``: Tune runs a trial in its own directory, where the relative
    paths (the results, and the job's models and stored runs) went or were looked for."""
    import shutil

    from ordergrad_rl.common.jobs import Job, run_jobs

    monkeypatch.chdir(tmp_path)
    Path("a.txt").write_text("a")
    jobs = [Job("copy", shutil.copyfile, {"src": "a.txt", "dst": "b.txt"})]
    assert run_jobs(jobs, address="local", storage=Path("out") / "ray", quiet=True) == {"copy": "b.txt"}
    assert (tmp_path / "b.txt").read_text() == "a"


#: The installed ``ordergrad-rl`` console script: its own folder on ``sys.path``, not the one it runs in.
CONSOLE_SCRIPT = "import sys\nfrom ordergrad_rl.cli import main\nsys.exit(main())\n"


@pytest.mark.slow
def test_a_sweep_trains_an_env_of_a_module_in_the_folder_it_runs_in(tmp_path):
    """``env: my_envs:MyEnv-v0`` with ``my_envs.py`` in the folder the sweep runs in, from the console script (whose
    ``sys.path`` holds its own folder, and the current one only as ``main`` appends it): the trial's Ray worker,
    another process started in Tune's trial directory, imports the module too (Ray's driver gives its workers its
    current folder, as for ``python my_script.py``), trains and evaluates the env, made with the trial's
    ``env_kwargs``."""

    from test_zoo_compat import USER_MODULE  # tests/ is on sys.path under pytest

    import ordergrad_rl

    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "sweep_user_envs.py").write_text(USER_MODULE)  # ZooUserEndless-v0: reward 1 a step, no end
    script = tmp_path / "bin" / "ordergrad-rl"
    script.parent.mkdir()
    script.write_text(CONSOLE_SCRIPT)
    package_root = str(Path(ordergrad_rl.__file__).resolve().parents[1])  # this checkout, not another install
    environ = os.environ | {"PYTHONPATH": os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))}
    grid = ["env=sweep_user_envs:ZooUserEndless-v0", "env_kwargs={max_episode_steps: 2}", "algo=reinforce"]
    grid += ["objective=mean", "n_episodes=4"]
    out = tmp_path / "sweep"
    argv = [sys.executable, str(script), "sweep", "--grid", *grid, "timesteps=16", "eval_episodes=2"]
    driver = subprocess.Popen(
        [*argv, "--out", str(out), "--num-cpus", "1", "--quiet"],
        cwd=folder,
        env=environ,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    stdout, stderr = driver.communicate(timeout=300)
    assert driver.returncode == 0, stderr
    assert "1 of 1 trials finished" in stdout
    (row,) = (json.loads(content) for content in rows(out).values())
    assert row["node"] is not None and row["pid"] != driver.pid  # trained in a Ray worker
    assert row["returns"] == [2.0, 2.0]


@pytest.mark.slow
def test_a_sweeps_gym_packages_register_its_env_in_every_ray_worker(tmp_path, monkeypatch, capsys):
    """rl-zoo3's ``--gym-packages my_envs`` (``train``, ``evaluate`` and ``compare`` take it) was refused by ``sweep``
    ("unrecognized arguments"); imported in the driver only, the trials' Ray workers (other processes, in Tune's trial
    directories) would not have the env registered. The modules are imported in every trial, and those that are no
    installed package are shipped to the workers (Ray's ``runtime_env`` ``py_modules``): here the module is on the
    driver's ``sys.path`` only (as on a cluster's other nodes, neither the current folder nor ``PYTHONPATH`` has it),
    on a real local Ray instance (not Ray's local mode)."""
    import gymnasium as gym
    import yaml
    from test_zoo_compat import USER_MODULE  # tests/ is on sys.path under pytest

    from ordergrad_rl import cli

    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "sweep_user_envs_g.py").write_text(USER_MODULE)  # ZooUserEndless-v0: reward 1 a step, no end
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.chdir(tmp_path)  # not the module's folder
    package_root = str(Path(cli.__file__).resolve().parents[2])  # the workers' ordergrad_rl: this checkout's
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0", raising=False)
    monkeypatch.delitem(sys.modules, "sweep_user_envs_g", raising=False)
    grid = ["env=ZooUserEndless-v0", "env_kwargs={max_episode_steps: 2}", "algo=reinforce", "objective=mean"]
    grid += ["n_episodes=4", "timesteps=16", "eval_episodes=2"]
    out = tmp_path / "sweep"
    argv = ["sweep", "--gym-packages", "sweep_user_envs_g", "--grid", *grid, "--out", str(out), "--num-cpus", "1"]
    assert cli.main([*argv, "--quiet"]) == 0, capsys.readouterr().err
    assert "1 of 1 trials finished" in capsys.readouterr().out
    (name,) = rows(out)
    row = json.loads(rows(out)[name])
    assert row["node"] is not None and row["pid"] != os.getpid()  # trained in a Ray worker
    assert row["returns"] == [2.0, 2.0]
    # The model's args.yml names the module, which evaluate imports.
    assert yaml.safe_load((out / "models" / name / "args.yml").read_text())["gym_packages"] == ["sweep_user_envs_g"]
    assert json.loads((out / "sweep.json").read_text())["gym_packages"] == ["sweep_user_envs_g"]
