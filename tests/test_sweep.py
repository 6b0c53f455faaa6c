"""``ordergrad-rl sweep`` without Ray: the config and its checks, one trial's outputs, the risk table over seeds.

The Ray Tune runs themselves are in ``test_sweep_ray.py`` (skipped without the ``[ray]`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from ordergrad_rl.cli import main
from ordergrad_rl.cli import sweep as sweep_command
from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.reports import format_cell
from ordergrad_rl.risk import risk_profile
from ordergrad_rl.sweep import grid, table
from ordergrad_rl.sweep.trial import run_trial

pytest.importorskip("yaml", reason="sweep configs are YAML (PyYAML comes with the [ray] extra)")

CONFIG = """
name: demo
grid:
  objective: [mean, cvar0.25]
  seed: [0, 1, 2]
  learning_rate: [3e-4, 1.0e-3]
fixed:
  env: RiskyBandit-v0
  algo: reinforce
  n_episodes: 16
  timesteps: 32
resources: {cpu: 2}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    return path


def test_config_is_the_cross_product_of_the_grid(tmp_path):
    config = grid.load_config(write(tmp_path, CONFIG))
    assert config.name == "demo" and config.resources == {"cpu": 2, "gpu": 0}
    trials = config.trials()
    assert len(trials) == 2 * 3 * 2
    assert {t["learning_rate"] for t in trials} == {3e-4, 1e-3}  # YAML 1.1 reads 3e-4 as text: it is a number
    assert {(t["objective"], t["seed"], t["learning_rate"]) for t in trials} == {
        (o, s, lr) for o in ("mean", "cvar0.25") for s in (0, 1, 2) for lr in (3e-4, 1e-3)
    }
    assert all(t["env"] == "RiskyBandit-v0" and t["eval_episodes"] == 100 and t["k"] is None for t in trials)
    assert config.varying() == ["objective", "learning_rate"]
    grid.check_trials(trials)
    varying = config.varying()
    assert grid.method_name(trials[0], varying) == "OrderGradREINFORCE_mean_learning_rate=0.0003"
    assert grid.trial_id(trials[-1], varying) == "OrderGradREINFORCE_cvar0.25_learning_rate=0.001_seed2"
    # --grid replaces a grid key, or a fixed one (which then varies)
    config = grid.load_config(write(tmp_path, CONFIG), ["seed=5", "n_episodes=8,32", "objective=max@4"])
    assert len(config.trials()) == 1 * 1 * 2 * 2 and "n_episodes" not in config.fixed
    assert config.varying() == ["learning_rate", "n_episodes"]  # a single objective and seed are not varying


def test_grid_option_reads_yaml_lists():
    assert grid.parse_grid_option("objective=mean,cvar0.2") == ("objective", ["mean", "cvar0.2"])
    assert grid.parse_grid_option("learning_rate=3e-4,1e-3") == ("learning_rate", [3e-4, 1e-3])
    assert grid.parse_grid_option("policy_kwargs={net_arch: [64, 64]},{net_arch: []}") == (
        "policy_kwargs",
        [{"net_arch": [64, 64]}, {"net_arch": []}],
    )
    assert grid.parse_grid_option("normalize_advantage=true") == ("normalize_advantage", [True])
    for bad in ("objective", "=mean", "seed=", "x=[1,"):
        with pytest.raises(CommandError, match="--grid"):
            grid.parse_grid_option(bad)


@pytest.mark.parametrize(
    "fixed, message",
    [
        ({"env": "RiskyBandit-v0"}, "every trial needs timesteps"),
        ({"env": "NoSuchEnv-v0", "timesteps": 8}, "unknown env id 'NoSuchEnv-v0'"),
        (
            {"env": "RiskyBandit-v0", "timesteps": 8, "algo": "dqn"},
            "algo must be one of ['maskable_ppo', 'ppo', 'recurrent_ppo', 'reinforce']",
        ),
        ({"env": "RiskyBandit-v0", "timesteps": 0}, "timesteps must be an integer >= 1, got 0"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "seed": -1}, "seed must be an integer >= 0"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "objective": "cvar2"}, "objective 'cvar2'"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "objective": "max@8", "n_episodes": 8}, "needs k < n_episodes"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "learning_rat": 0.1}, "has no hyperparameter 'learning_rat'"),
        # A trial key misspelt was named as a hyperparameter, among valid keys that left the trial keys out:
        ({"env": "RiskyBandit-v0", "timesteps": 8, "seeds": 1}, "'seeds' (did you mean seed?); valid keys: "),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "timestep": 8}, "'timestep' (did you mean timesteps?)"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "env_kwargs": 5}, "env_kwargs must be a mapping"),
        (
            {"env": "CliffWalking-v1", "timesteps": 8, "env_kwargs": {"is_slipery": True}},
            "env_kwargs: CliffWalking-v1 takes no argument 'is_slipery' (did you mean is_slippery?)",
        ),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "n_epochs": "four"}, "sweep key n_epochs: OrderGradPPO's n_epochs"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "vec_env": "forkserver"}, "vec_env must be one of dummy, subproc"),
        # --grid "env_kwargs={max_episode_steps:5}": YAML's key 'max_episode_steps:5', without a value
        (
            {"env": "RiskyBandit-v0", "timesteps": 8, "env_kwargs": {"max_episode_steps:5": None}},
            "(YAML reads {max_episode_steps:5} as that key: write {max_episode_steps: 5}, a space after the colon)",
        ),
        (
            {"env": "RiskyBandit-v0", "timesteps": 8, "eval_env_kwargs": {"max_episode_step": 3}},
            "eval_env_kwargs: RiskyBandit-v0 takes no argument 'max_episode_step' (did you mean max_episode_steps?)",
        ),
        # What train refuses before training, not only once a Ray worker builds the model:
        (
            {"env": "RiskyBandit-v0", "timesteps": 8, "policy": "MlpPolcy"},
            "sweep key policy: OrderGradPPO has no policy 'MlpPolcy' (did you mean MlpPolicy?); its policies: ",
        ),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "deterministic": "maybe"}, "deterministic must be true or false"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "device": "bogus"}, "'bogus' is not a torch device"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "eval_env": "CartPole-v1"}, "does not fit --eval-env CartPole-v1"),
        ({"env": "RiskyBandit-v0", "timesteps": 8, "algo": "maskable_ppo"}, "needs an env with an action_masks()"),
        (
            {"env": "RiskyBandit-v0", "timesteps": 8, "n_episodes": 16, "group_size": 3},
            "n_episodes=16 is not a multiple of group_size=3",
        ),
    ],
)
def test_trials_are_checked_before_any_run(fixed, message):
    trials = grid.SweepConfig("x", fixed=fixed).trials()
    with pytest.raises(CommandError) as err:
        grid.check_trials(trials)
    assert message in str(err.value)


def test_an_env_of_ones_own_in_gymnasiums_module_form_is_swept(tmp_path, monkeypatch):
    """``"module:EnvId-v0"`` (``gym.make`` imports the module, which registers the env) is how an env of one's own
    reaches a Ray worker, where the driver's registrations do not exist: the sweep's checks and the agents read the
    id as ``gym.make`` does (they refused it as an unknown id, and ``OrderGradPPO`` raised ``NameNotFound``)."""
    import gymnasium as gym

    (tmp_path / "my_sweep_envs.py").write_text(
        "import gymnasium as gym\n"
        "gym.register('MySweepBandit-v0', entry_point='ordergrad_rl.envs.bandit:RiskyBanditEnv', max_episode_steps=7)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "my_sweep_envs", raising=False)
    env_id = "my_sweep_envs:MySweepBandit-v0"
    try:
        trials = grid.SweepConfig("x", fixed={"env": env_id, "timesteps": 8, "eval_env": env_id}).trials()
        grid.check_trials(trials)  # builds the model and its evaluation env
        from ordergrad_rl.agents.common.env_util import episode_limit

        assert episode_limit(env_id) == 7
        with pytest.raises(CommandError, match="cannot import 'no_such_module' to register 'X-v0'"):
            grid.check_trials(grid.SweepConfig("x", fixed={"env": "no_such_module:X-v0", "timesteps": 8}).trials())
    finally:
        gym.registry.pop("MySweepBandit-v0", None)


@pytest.mark.parametrize(
    "text, message",
    [
        ("grid: [1, 2]", "grid must be a mapping"),
        ("grids: {seed: [1]}", "unknown sections ['grids']"),
        ("grid: {seed: [0]}\nfixed: {seed: 1}", "keys both in grid and fixed: ['seed']"),
        ("grid: {seed: []}", "grid key 'seed' has no values"),
        ("resources: {cpu: 0}", "resources: cpu must be a number > 0"),
        ("resources: {tpu: 1}", "resources: unknown keys ['tpu']"),
        ("grid: {seed: [0", "cannot read the sweep config"),
    ],
)
def test_config_errors_name_the_problem(tmp_path, text, message):
    with pytest.raises(CommandError) as err:
        grid.load_config(write(tmp_path, text))
    assert message in str(err.value)


def test_plan_refuses_repeated_trials_and_an_empty_command(tmp_path):
    grid_items = ["seed=0,0", "env=RiskyBandit-v0", "timesteps=8"]
    args = argparse.Namespace(config=None, grid=grid_items, name=None, cpus_per_trial=None, gpus_per_trial=None)
    with pytest.raises(CommandError, match="the grid repeats trials: OrderGradPPO_mean_seed0"):
        sweep_command.plan(args)
    args.grid = []
    with pytest.raises(CommandError, match="give a sweep config file, --grid key=values, or --resume"):
        sweep_command.plan(args)


def test_sweep_without_ray_names_the_extra_before_any_work(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray.tune", None)  # import fails as if Ray were not installed
    argv = ["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ordergrad-rl sweep: error: sweep needs the [ray] extra (ray.tune does not import")
    assert err.rstrip().endswith('install it with: pip install "ordergrad-rl[ray]"')
    assert not (tmp_path / "out").exists()


def test_resume_needs_a_sweep_and_a_new_sweep_an_empty_out(tmp_path, capsys):
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    assert main(["sweep", "--resume", "--out", str(tmp_path)]) == 2
    assert f"nothing to resume: {tmp_path / 'sweep.json'} does not exist" in capsys.readouterr().err
    (tmp_path / "sweep.json").write_text(json.dumps({"name": "x", "resources": {}, "trials": []}))
    (tmp_path / "ray" / "tune").mkdir(parents=True)  # Tune's state: the sweep started its trials
    assert main(["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path)]) == 2
    assert "already holds a sweep: --resume it, or choose another --out" in capsys.readouterr().err
    argv = ["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path), "--resume"]
    assert main(argv) == 2
    assert "--resume: the trials differ from those of the sweep" in capsys.readouterr().err


def test_a_sweep_that_failed_before_tune_started_can_be_rerun_or_resumed(tmp_path, monkeypatch, capsys):
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    from ordergrad_rl.common.ray_tune import TuneOutcome

    def no_cluster(address, *args, **kwargs):
        raise CommandError(f"no Ray cluster at --address {address}")

    tune_runs = []

    def fake_tune(function, specs, storage, resources, resume=False, quiet=False):
        tune_runs.append(resume)
        return TuneOutcome([], {}, interrupted=False)

    monkeypatch.setattr(sweep_command, "init_ray", no_cluster)
    monkeypatch.setattr(sweep_command, "check_trials_fit", lambda *args: None)  # no Ray instance to ask
    monkeypatch.setattr(sweep_command, "run_tune", fake_tune)
    argv = ["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path), "--quiet"]
    assert main([*argv, "--address", "127.0.0.1:1"]) == 2
    assert (tmp_path / "sweep.json").exists() and not tune_runs
    capsys.readouterr()
    monkeypatch.setattr(sweep_command, "init_ray", lambda *args, **kwargs: None)
    assert main(argv) == 0  # a rerun: no trial ran, so the plan is replaced
    assert "holds the plan of a sweep that never started its trials: replacing it" in capsys.readouterr().out
    (tmp_path / "ray").mkdir(exist_ok=True)  # the fake Tune wrote no state: --resume runs every trial afresh
    assert main(["sweep", "--resume", "--out", str(tmp_path), "--quiet"]) == 0
    assert tune_runs == [False, False]


def test_resume_keeps_the_resources_the_sweep_started_with(tmp_path, monkeypatch, capsys):
    """Tune restores each trial with the resources it was planned with: --resume refuses other ones instead of
    ignoring them (it printed the old "4 CPUs ... per trial" and waited on a trial no node could hold)."""
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    from ordergrad_rl.common.ray_tune import TuneOutcome

    monkeypatch.setattr(sweep_command, "init_ray", lambda *args, **kwargs: None)
    monkeypatch.setattr(sweep_command, "check_trials_fit", lambda *args: None)  # no Ray instance to ask
    monkeypatch.setattr(sweep_command, "run_tune", lambda *args, **kwargs: TuneOutcome([], {}, interrupted=False))
    items = ["env=RiskyBandit-v0", "timesteps=8"]
    out = ["--out", str(tmp_path), "--quiet"]
    assert main(["sweep", "--grid", *items, "--cpus-per-trial", "4", *out]) == 0
    capsys.readouterr()
    for resumed in (["--cpus-per-trial", "1"], ["--grid", *items, "--gpus-per-trial", "1"], ["--grid", *items]):
        assert main(["sweep", "--resume", *resumed, *out]) == 2
        err = capsys.readouterr().err
        assert "--resume: the sweep in" in err and "runs its trials with 4 CPUs and 0 GPUs per trial" in err
        assert "they cannot change when it resumes" in err
    assert main(["sweep", "--resume", "--cpus-per-trial", "4", *out]) == 0
    assert "4 CPUs and 0 GPUs per trial" in capsys.readouterr().out


def test_resume_takes_a_plan_saved_before_a_trial_key_was_added(tmp_path, monkeypatch, capsys):
    """A sweep planned before ``env_kwargs`` became a trial key has trials without it: ``--resume`` with its config
    refused them ("the trials differ"), though they are the same trials."""
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    from ordergrad_rl.common.ray_tune import TuneOutcome

    monkeypatch.setattr(sweep_command, "init_ray", lambda *args, **kwargs: None)
    monkeypatch.setattr(sweep_command, "check_trials_fit", lambda *args: None)  # no Ray instance to ask
    monkeypatch.setattr(sweep_command, "run_tune", lambda *args, **kwargs: TuneOutcome([], {}, interrupted=False))
    argv = ["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 0
    assert "sweep sweep: 1 trial, 1 method, 1 CPU and 0 GPUs per trial" in capsys.readouterr().out  # "1 trials"
    plan = tmp_path / "sweep.json"
    saved = json.loads(plan.read_text())
    for entry in saved["trials"]:
        del entry["trial"]["env_kwargs"]
    plan.write_text(json.dumps(saved))
    assert main([*argv, "--resume"]) == 0, capsys.readouterr().err
    assert main([*argv[:2], "env=CartPole-v1", *argv[3:], "--resume"]) == 2  # another sweep: refused as before
    assert "--resume: the trials differ" in capsys.readouterr().err


def test_a_trials_policy_defaults_to_trains_and_an_earlier_plan_resumes(tmp_path):
    """A trial's policy defaulted to MlpPolicy, not train's (the entry's, else the algorithm's first): a sweep of
    recurrent_ppo failed on every trial ("Policy MlpPolicy unknown") unless it named MlpLstmPolicy, and an entry's
    policy gave way to MlpPolicy. A plan saved with the old default is still the same sweep for --resume."""
    from ordergrad_rl.agents import OrderGradRecurrentPPO

    fixed = {"env": "RiskyBandit-v0", "timesteps": 1, "algo": "recurrent_ppo", "n_episodes": 4, "eval_episodes": 1}
    (trial,) = grid.SweepConfig("x", fixed=fixed).trials()
    grid.check_trials([trial])
    run_trial(trial, "m_seed0", "m", tmp_path)
    model = OrderGradRecurrentPPO.load(tmp_path / "models" / "m_seed0.zip")
    assert model.policy_class is OrderGradRecurrentPPO.policy_aliases["MlpLstmPolicy"]
    # rl-zoo3's name of the algorithm, as train --algo takes it (it was "algo must be one of ...").
    assert grid.SweepConfig("x", fixed=fixed | {"algo": "ppo_lstm"}).trials() == [trial]
    new = {"trial_id": "a", "method": "a", "trial": {"env": "RiskyBandit-v0", "policy": None}}
    old = {"trial_id": "a", "method": "a", "trial": {"env": "RiskyBandit-v0", "policy": "MlpPolicy"}}
    assert sweep_command.with_defaults([new]) == sweep_command.with_defaults([old])
    cnn = {"trial_id": "a", "method": "a", "trial": {"env": "RiskyBandit-v0", "policy": "CnnPolicy"}}
    assert sweep_command.with_defaults([new]) != sweep_command.with_defaults([cnn])


def test_num_cpus_with_an_address_is_refused_before_any_work(tmp_path, capsys):
    """ray.init refuses num_cpus for an existing cluster; the sweep ignored --num-cpus there."""
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    argv = ["sweep", "--grid", "env=RiskyBandit-v0", "timesteps=8", "--out", str(tmp_path / "out")]
    assert main([*argv, "--address", "127.0.0.1:1", "--num-cpus", "2"]) == 2
    err = capsys.readouterr().err
    assert "--num-cpus sizes a local Ray instance; the cluster at --address 127.0.0.1:1 has the CPUs" in err
    assert not (tmp_path / "out" / "sweep.json").exists()


def test_one_trial_writes_its_model_run_and_row(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from test_agents_tensorboard import read_hparams  # tests/ is on sys.path under pytest

    from ordergrad_rl.agents import OrderGradPPO

    trial = grid.SweepConfig("x", fixed={"env": "RiskyBandit-v0", "timesteps": 32, "objective": "cvar0.25"}).trials()
    trial = trial[0] | {"n_episodes": 16, "eval_episodes": 24, "seed": 3, "n_epochs": 1}
    stale = tmp_path / "tensorboard" / "m" / "seed3_1"
    stale.mkdir(parents=True)  # an interrupted attempt of the trial
    (stale / "events.out.tfevents.0.old").write_bytes(b"")
    row = run_trial(trial, "m_seed3", "m", tmp_path)

    saved = json.loads((tmp_path / "trials" / "m_seed3.json").read_text())
    assert len(saved["returns"]) == 24 and saved["profile"] == pytest.approx(risk_profile(saved["returns"]))
    assert saved["profile"] == pytest.approx(row["profile"]) and saved["trial"]["seed"] == 3
    assert saved["timesteps"] >= 32 and saved["node"] is None  # not run by Ray
    model = OrderGradPPO.load(tmp_path / "models" / "m_seed3.zip")
    assert model.objective_spec == "cvar0.25@8" and model.n_epochs == 1
    runs = sorted(p.name for p in (tmp_path / "tensorboard" / "m").iterdir())
    assert runs == ["seed3_1"] and not (stale / "events.out.tfevents.0.old").exists()
    run = EventAccumulator(str(stale))
    run.Reload()
    # The run's last eval_risk values are the row's: the HParams dashboard shows the trial's final risk profile.
    assert run.Scalars("eval_risk/cvar_0.1")[-1].value == pytest.approx(row["profile"]["cvar_0.1"], rel=1e-6)
    hparams, metrics, _ = read_hparams(run)
    assert hparams["objective"] == "cvar0.25@8" and hparams["seed"] == 3 and "eval_risk/cvar_0.1" in metrics

    # Run again (a resumed sweep whose Tune state missed the end of this trial): the row, no training.
    stamps = {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*") if path.is_file()}
    assert run_trial(trial, "m_seed3", "m", tmp_path) == row
    assert {path: path.stat().st_mtime_ns for path in tmp_path.rglob("*") if path.is_file()} == stamps
    # Other settings under the same id are not that trial: it trains again.
    again = run_trial(trial | {"eval_episodes": 8}, "m_seed3", "m", tmp_path)
    assert len(json.loads((tmp_path / "trials" / "m_seed3.json").read_text())["returns"]) == 8
    assert again["eval"]["episodes"] == 8 and not list((tmp_path / "trials").glob(".*"))  # no partial rows left


def test_a_trials_env_kwargs_make_its_envs_and_name_its_method(tmp_path):
    """A sweep had no way to give the env's arguments but a conf_file entry: ``env_kwargs`` was refused ("rl-zoo3's
    env_kwargs is not a hyperparameter; give the env's arguments with train --env-kwargs", an option a sweep does
    not have). It is a trial key, a mapping as ``train --env-kwargs`` gives it (``gym.make``'s ``max_episode_steps``
    too), making the training and the evaluation envs and recorded beside the model; varied, it names the methods
    by its items."""
    import yaml

    config = grid.load_config(None, ["env_kwargs={max_episode_steps: 5},{max_episode_steps: 7}"])
    config.fixed = {"env": "CartPole-v1", "timesteps": 16, "algo": "reinforce", "n_episodes": 2, "eval_episodes": 3}
    trials, varying = config.trials(), config.varying()
    grid.check_trials(trials, varying)
    assert [grid.method_name(trial, varying) for trial in trials] == [
        "OrderGradREINFORCE_mean_max_episode_steps=5",
        "OrderGradREINFORCE_mean_max_episode_steps=7",
    ]
    row = run_trial(trials[0], "m_seed0", "m", tmp_path)
    returns = json.loads((tmp_path / "trials" / "m_seed0.json").read_text())["returns"]
    assert row["profile"]["max"] <= 5 and max(returns) <= 5  # CartPole's reward of 1 a step, for 5 steps at most
    saved = yaml.safe_load((tmp_path / "models" / "m_seed0" / "args.yml").read_text())
    assert saved["env_kwargs"] == {"max_episode_steps": 5}
    assert saved["run_name"] == "m/seed0"  # its TensorBoard run, which train -i goes on logging into


def test_a_trials_vec_env_and_eval_env_kwargs_are_trains(tmp_path):
    """vec_env and eval_env_kwargs, train's --vec-env and --eval-env-kwargs, were refused as hyperparameters the
    algorithm lacks ("did you mean eval_env?"), though the sweep's keys are train's options."""
    import yaml

    fixed = {"env": "CartPole-v1", "timesteps": 16, "algo": "reinforce", "n_episodes": 2, "n_envs": 1}
    fixed |= {"eval_episodes": 3, "vec_env": "subproc", "eval_env_kwargs": {"max_episode_steps": 4}}
    (trial,) = grid.SweepConfig("x", fixed=fixed).trials()
    run_trial(trial, "m_seed0", "m", tmp_path)
    returns = json.loads((tmp_path / "trials" / "m_seed0.json").read_text())["returns"]
    assert len(returns) == 3 and max(returns) <= 4  # CartPole's reward of 1 a step, for 4 steps at most
    saved = yaml.safe_load((tmp_path / "models" / "m_seed0" / "args.yml").read_text())
    assert (saved["vec_env"], saved["eval_env_kwargs"]) == ("subproc", {"max_episode_steps": 4})


def test_risk_table_is_the_mean_and_t_interval_over_seeds():
    rng = np.random.default_rng(0)
    rows = []
    for method, shift in (("a", 0.0), ("b", 1.0)):
        for seed in range(4 if method == "a" else 1):
            returns = rng.normal(shift, 1.0, 50)
            rows.append({"method": method, "trial": {"seed": seed}, "profile": risk_profile(returns)})
    summary = table.summarize(rows)
    cvar = np.array([row["profile"]["cvar_0.1"] for row in rows[:4]])
    low, high = stats.t.interval(0.95, 3, loc=cvar.mean(), scale=stats.sem(cvar))
    mean, half = summary["a"]["cvar_0.1"]
    assert mean == pytest.approx(cvar.mean()) and half == pytest.approx((high - low) / 2)
    assert summary["a"]["seeds"] == [0, 1, 2, 3] and np.isnan(summary["b"]["mean"][1])  # one seed: no interval
    lines = table.format_risk_table(summary).splitlines()
    assert [cell.strip() for cell in lines[0].split("|")[1:-1]] == ["method", "seeds", *table.TABLE_KEYS]
    a_row = [cell.strip() for cell in lines[2].split("|")[1:-1]]
    key = table.TABLE_KEYS.index("cvar_0.1") + 2
    assert a_row[:2] == ["a", "4"] and a_row[key] == f"{format_cell(mean)} ± {format_cell(half)}"
    assert [cell.strip() for cell in lines[3].split("|")[1:3]] == ["b", "1"] and " ± " not in lines[3]


def test_reproduction_on_ray_without_ray_names_the_extra_before_training(tmp_path, monkeypatch, capsys):
    from ordergrad_rl.experiments import tailrisk

    def no_training(*args, **kwargs):
        raise AssertionError("training started")

    monkeypatch.setitem(sys.modules, "ray.tune", None)  # import fails as if Ray were not installed
    monkeypatch.setattr(tailrisk, "run_job", no_training)
    argv = ["reproduce", "tailrisk", "--address", "local", "--seeds", "1", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--address local needs the [ray] extra (ray.tune does not import" in err
    assert err.rstrip().endswith('install it with: pip install "ordergrad-rl[ray]"')


@pytest.mark.parametrize("name", ["tailrisk", "benchmarks", "minatar"])
def test_reproduction_on_ray_without_ray_names_the_extra_before_any_output(name, tmp_path, monkeypatch, capsys):
    """Without Ray, ``reproduce tailrisk --address local`` drew a progress bar at 0% and left an empty
    ``<out>/ray/jobs_*`` directory before the error: the extra is checked with the arguments now."""
    monkeypatch.setitem(sys.modules, "ray.tune", None)  # import fails as if Ray were not installed
    out = tmp_path / "out"
    assert main(["reproduce", name, "--address", "local", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ordergrad-rl reproduce {name}: error: --address local needs the [ray] extra")
    assert not out.exists()


@pytest.mark.parametrize("name", ["tailrisk", "benchmarks", "minatar"])
def test_reproduction_on_ray_refuses_workers(name, tmp_path, monkeypatch, capsys):
    """``reproduce tailrisk --address local --workers 2`` ran the runs as Ray trials, as many at once as Ray had CPUs,
    and dropped --workers without a word (so did benchmarks and minatar): refused now, before any work."""
    import importlib

    from ordergrad_rl.cli import REPRODUCTIONS

    module = importlib.import_module(REPRODUCTIONS[name].module)
    monkeypatch.setattr(module, "run_experiment", lambda *args, **kwargs: pytest.fail("ran"))
    argv = ["reproduce", name, "--address", "local", "--workers", "2", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "--workers 2 sizes the local worker processes, and --address local runs the runs as Ray Tune trials" in (
        " ".join(capsys.readouterr().err.split())
    )


def test_a_trial_applies_the_envs_hyperparameter_entry_as_train_does(tmp_path):
    """A trial on an env with an entry in the shipped file trains the model ``train`` trains (it trained the class
    defaults: the README's own sweep, on SyntheticTailRisk-v0, ran another model than ``train``); the trial's keys
    win over the entry, and ``conf_file: none`` leaves the class defaults."""
    from ordergrad_rl.agents import OrderGradPPO

    fixed = {"env": "SyntheticTailRisk-v0", "timesteps": 1, "objective": "mean", "n_episodes": 8, "eval_episodes": 2}
    for conf_file, learning_rate, learns_log_std in ((None, 1e-3, False), ("none", 3e-4, True)):
        (trial,) = grid.SweepConfig("x", fixed=fixed | {"conf_file": conf_file, "n_epochs": 1}).trials()
        run_trial(trial, f"m{conf_file}_seed0", "m", tmp_path)
        model = OrderGradPPO.load(tmp_path / "models" / f"m{conf_file}_seed0.zip")
        assert model.learning_rate == learning_rate and model.policy.learn_log_std is learns_log_std
        assert model.n_epochs == 1  # the trial's own key over the entry's
    (trial,) = grid.SweepConfig("x", fixed=fixed | {"conf_file": "missing.yml"}).trials()
    assert trial["conf_file"] == str(Path("missing.yml").resolve())  # read where the sweep starts, not in a worker
    with pytest.raises(CommandError, match="--conf-file"):
        grid.check_trials([trial])


def test_a_sweeps_gym_packages_go_to_its_trials_and_their_ray_workers(tmp_path, monkeypatch, capsys):
    """``sweep --gym-packages`` (rl-zoo3's option, which ``train`` takes) was refused: each trial imports them (in
    its Ray worker), those that are not installed packages are shipped to the workers as Ray's ``py_modules``, with
    a ``module:EnvId-v0``'s module, and the plan keeps them for ``--resume``."""
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    import gymnasium as gym
    from test_zoo_compat import USER_MODULE  # tests/ is on sys.path under pytest

    from ordergrad_rl.common.ray_tune import TuneOutcome

    folder = tmp_path / "src"
    folder.mkdir()
    for name in ("sweep_user_envs_h", "sweep_user_envs_i"):
        (folder / f"{name}.py").write_text(USER_MODULE)
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0", raising=False)
    shipped, specs = [], []
    monkeypatch.setattr(sweep_command, "init_ray", lambda *args, py_modules=(), **kwargs: shipped.append(py_modules))
    monkeypatch.setattr(sweep_command, "check_trials_fit", lambda *args: None)  # no Ray instance to ask
    monkeypatch.setattr(
        sweep_command, "run_tune", lambda _, given, *args, **kwargs: specs.extend(given) or TuneOutcome([], {}, False)
    )
    grid = ["env=ZooUserEndless-v0", "eval_env=sweep_user_envs_i:ZooUserEndless-v0", "timesteps=8", "algo=reinforce"]
    out = ["--out", str(tmp_path / "sweep"), "--quiet"]
    # json: installed (the standard library), imported in the workers but not shipped.
    assert main(["sweep", "--gym-packages", "sweep_user_envs_h", "json", "--grid", *grid, *out]) == 0
    (spec,) = specs
    assert spec["kwargs"]["gym_packages"] == ["sweep_user_envs_h", "json"]
    assert shipped == [[str(folder / "sweep_user_envs_h.py"), str(folder / "sweep_user_envs_i.py")]]
    (tmp_path / "sweep" / "ray").mkdir()  # the fake Tune wrote no state: --resume runs every trial afresh
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0")
    monkeypatch.delitem(sys.modules, "sweep_user_envs_h")
    assert main(["sweep", "--resume", *out]) == 0  # the plan's modules imported again: the env is known
    assert specs[1]["kwargs"]["gym_packages"] == ["sweep_user_envs_h", "json"] and shipped[1] == shipped[0]
    assert main(["sweep", "--resume", "--gym-packages", "csv", *out]) == 0  # more modules: the plan keeps them
    assert json.loads((tmp_path / "sweep" / "sweep.json").read_text())["gym_packages"] == [
        "sweep_user_envs_h",
        "json",
        "csv",
    ]
    assert main(["sweep", "--gym-packages", "no_such_module", "--grid", *grid, "--out", str(tmp_path / "x")]) == 2
    assert "--gym-packages: cannot import 'no_such_module'" in capsys.readouterr().err
    # ordergrad_rl itself is not shipped: every worker has it, to run its trials.
    planned = {
        "trials": [{"trial": {"env": "ordergrad_rl:RiskyBandit-v0"}}],
        "gym_packages": ["ordergrad_rl.envs", "m"],
    }
    assert sweep_command.worker_modules(planned) == ["m"]


def test_a_trial_imports_its_gym_packages_and_its_save_names_them(tmp_path, monkeypatch):
    """A trial runs in a Ray worker, which has not imported the driver's ``--gym-packages``: it imports them, and
    records them in its model's ``args.yml``, whose env ``evaluate`` then makes without ``--gym-packages``."""
    import gymnasium as gym
    import yaml
    from test_zoo_compat import USER_MODULE

    (tmp_path / "sweep_user_envs_j.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sweep_user_envs_j", raising=False)
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0", raising=False)
    fixed = {"env": "ZooUserEndless-v0", "env_kwargs": {"max_episode_steps": 2}, "timesteps": 8, "algo": "reinforce"}
    (trial,) = grid.SweepConfig("x", fixed=fixed | {"n_episodes": 4, "eval_episodes": 2}).trials()
    row = run_trial(trial, "t", "m", tmp_path / "out", gym_packages=["sweep_user_envs_j"])
    assert row["profile"]["mean"] == 2.0
    saved = yaml.safe_load((tmp_path / "out" / "models" / "t" / "args.yml").read_text())
    assert saved["gym_packages"] == ["sweep_user_envs_j"]


def test_a_trial_imports_the_gym_packages_its_plan_gained_on_resume(tmp_path, monkeypatch):
    """Ray Tune resumes a trial with the arguments it was first given, so the modules that ``sweep --resume
    --gym-packages M`` adds to the plan never reached the resumed trials (shipped to their workers, imported in the
    driver, not in the trial: its env unknown there). A trial imports the plan's modules too."""
    import gymnasium as gym
    from test_zoo_compat import USER_MODULE  # tests/ is on sys.path under pytest

    (tmp_path / "sweep_user_envs_k.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sweep_user_envs_k", raising=False)
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0", raising=False)
    out = tmp_path / "out"
    out.mkdir()
    (out / sweep_command.PLAN_FILE).write_text(json.dumps({"trials": [], "gym_packages": ["sweep_user_envs_k"]}))
    fixed = {"env": "ZooUserEndless-v0", "env_kwargs": {"max_episode_steps": 2}, "timesteps": 8, "algo": "reinforce"}
    (trial,) = grid.SweepConfig("x", fixed=fixed | {"n_episodes": 4, "eval_episodes": 2}).trials()
    row = run_trial(trial, "t", "m", out, gym_packages=["json"])  # the arguments Tune kept from the first run
    assert row["profile"]["mean"] == 2.0
    import yaml

    saved = yaml.safe_load((out / "models" / "t" / "args.yml").read_text())
    assert saved["gym_packages"] == ["json", "sweep_user_envs_k"]


def test_sweep_resume_names_the_plans_gym_packages_that_do_not_import(tmp_path, capsys):
    """--resume imports the plan's --gym-packages: where one does not import (resumed from another folder), the error
    said "--gym-packages: cannot import ..." of an option not given; it names the plan and where to resume."""
    pytest.importorskip("ray.tune", reason="needs the [ray] extra")
    out = tmp_path / "sweep"
    out.mkdir()
    plan = {"name": "x", "resources": {"cpu": 1, "gpu": 0}, "trials": [], "gym_packages": ["sweep_gone_envs"]}
    (out / sweep_command.PLAN_FILE).write_text(json.dumps(plan))
    assert main(["sweep", "--resume", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--resume: --gym-packages: cannot import 'sweep_gone_envs'" in err
    assert f"the sweep in {out} was planned with --gym-packages sweep_gone_envs, which its trials import" in err


def test_the_modules_shipped_to_ray_workers_are_those_not_installed(tmp_path, monkeypatch):
    """Ray's ``py_modules`` takes a ``.py`` file or a package's folder: a module of the user's (a namespace package's
    one folder too, found once though ``sys.path`` names it twice), not an installed or built-in one, nor a name that
    does not import (its import reports it)."""
    from ordergrad_rl.common.ray_tune import shipped_modules

    (tmp_path / "ship_module.py").write_text("")
    (tmp_path / "ship_package").mkdir()
    (tmp_path / "ship_package" / "__init__.py").write_text("")
    (tmp_path / "ship_namespace").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path / "." / "ship_package" / ".."))
    names = ["ship_module", "ship_package.sub", "ship_namespace.sub", "ship_package", "json", "sys", "yaml", "nope"]
    assert shipped_modules(names) == [
        str(tmp_path / name) for name in ("ship_module.py", "ship_package", "ship_namespace")
    ]


def test_a_compiled_module_of_the_users_is_not_shipped_to_ray_workers(tmp_path, monkeypatch):
    """Ray's ``py_modules`` refuses, in ``ray.init``, anything but a folder, a ``.py`` file or a wheel ("py_modules
    entry must be a .py file, a directory, or a .whl file"): sweep --gym-packages of a compiled module of the user's
    (``my_envs.cpython-311-x86_64-linux-gnu.so``, a sourceless ``.pyc``) stopped there, with Ray's traceback. Such a
    module is left to the nodes, as an installed one is."""
    import importlib.machinery

    from ordergrad_rl.common.ray_tune import shipped_modules

    (tmp_path / f"ship_compiled{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"")
    (tmp_path / "ship_sourceless.pyc").write_bytes(b"")
    (tmp_path / "ship_source.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert shipped_modules(["ship_compiled", "ship_sourceless", "ship_source"]) == [str(tmp_path / "ship_source.py")]
