"""``reproduce tailrisk``: deployment rollouts, the metrics, the checks, and a tiny end-to-end run."""

import dataclasses
import json
import re

import numpy as np
import pytest

from ordergrad_rl.cli import main
from ordergrad_rl.envs.tailrisk import ASSET_NAMES, TailRiskSimulator, cash_capped_weights
from ordergrad_rl.experiments import tailrisk as tr
from ordergrad_rl.version import __version__


class ConstantPolicy:
    """A stand-in for a model: the same logits for every observation."""

    def __init__(self, logits):
        self.logits = np.asarray(logits, dtype=np.float32)

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        assert deterministic
        return np.tile(self.logits, (len(obs), 1)), None


class AlternatingPolicy:
    """A stand-in for a recurrent model: its state counts each path's decisions (reset at ``episode_start``, as an
    LSTM's), and it plays ``logits[0]`` at even decisions, ``logits[1]`` at odd ones."""

    def __init__(self, logits):
        self.logits = np.asarray(logits, dtype=np.float32)

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        assert deterministic
        state = np.zeros(len(obs), dtype=np.int64) if state is None else np.where(episode_start, 0, state)
        return self.logits[state % 2], state + 1


def test_deploy_replays_the_simulator():
    logits = [2.0, -1.0, 0.0, 0.5]
    deployment = tr.deploy(ConstantPolicy(logits), n_paths=8, seed=123)
    sim = TailRiskSimulator(8, p=0.35, traded_days=160)
    sim.reset(seed=123)
    max_drawdown = None
    for _ in range(sim.num_decisions):
        _, _, _, info = sim.step(np.tile(logits, (8, 1)))
        max_drawdown = info["max_drawdown"]
    assert deployment.wealth.shape == (8, 161) and deployment.daily_returns.shape == (8, 160)
    assert np.all(deployment.wealth[:, 0] == 1.0)
    np.testing.assert_allclose(deployment.wealth[:, -1], sim.wealth, rtol=1e-12)
    np.testing.assert_allclose(deployment.max_drawdown, max_drawdown)
    # Constant logits: after the first decision the weights never change.
    np.testing.assert_allclose(deployment.weights, np.tile(cash_capped_weights(np.array(logits), 0.1), (8, 1)))


def test_deploy_carries_the_state_of_a_recurrent_model():
    logits = np.array([[2.0, -1.0, 0.0, 0.5], [-1.0, 2.0, 0.0, 0.5]])
    deployment = tr.deploy(AlternatingPolicy(logits), n_paths=4, seed=0)
    decisions = TailRiskSimulator(1, p=0.35, traded_days=160).num_decisions
    expected = np.mean([cash_capped_weights(logits[t % 2], 0.1) for t in range(decisions)], axis=0)
    # Without the state (each call a first decision) every decision would play logits[0].
    np.testing.assert_allclose(deployment.weights, np.tile(expected, (4, 1)), rtol=1e-6)


def test_deploy_p_switches_disasters_on_the_same_paths():
    policy = ConstantPolicy([0.0, 0.0, 0.0, 0.0])
    calm, stormy = (tr.deploy(policy, n_paths=64, seed=5, p=p) for p in (0.0, 1.0))
    # Same normal-period draws; every path of p = 1 has a disaster, which costs the balanced/tail assets.
    assert np.all(stormy.wealth[:, -1] < calm.wealth[:, -1])
    assert stormy.max_drawdown.min() < -0.1 < calm.max_drawdown.min()


def test_deployment_metrics_by_hand():
    wealth = np.array([[1.0, 1.2, 1.1], [1.0, 0.8, 0.85], [1.0, 1.0, 0.95], [1.0, 1.05, 1.3]])
    daily = wealth[:, 1:] / wealth[:, :-1] - 1.0
    weights = np.array([[0.5, 0.2, 0.2, 0.1], [0.3, 0.3, 0.3, 0.1], [0.4, 0.4, 0.2, 0.0], [0.2, 0.2, 0.6, 0.0]])
    deployment = tr.Deployment(wealth, np.array([-0.0833, -0.2, -0.05, 0.0]), weights, daily)
    m = tr.deployment_metrics(deployment)
    assert m["mean_return"] == pytest.approx(np.mean([0.1, -0.15, -0.05, 0.3]))
    assert m["profitable"] == 0.5 and m["below_0.9"] == 0.25 and m["mdd_over_20"] == 0.0  # -0.2 is not > 20%
    assert m["mean_mdd"] == pytest.approx(-0.3333 / 4)
    # Hazen 10th percentile of 4 values: position 0.1 * 4 + 0.5 = 0.9 -> the minimum.
    assert m["p10_log_return"] == pytest.approx(np.log(0.85))
    assert m["daily_cvar_5"] == pytest.approx(daily.min())  # ceil(0.05 * 8) = 1 worst day
    assert m["weights"] == pytest.approx(dict(zip(ASSET_NAMES, weights.mean(0), strict=True)))


def test_checks_accept_the_papers_numbers_and_reject_swapped_methods():
    paper = {key: {**value, "weights": {**value["weights"]}} for key, value in tr.PAPER.items()}
    assert all(tr.checks({"methods": paper}).values())
    swapped = {"reinforce": paper["ordergrad_cvar"], "ordergrad_cvar": paper["reinforce"]}
    assert not any(tr.checks({"methods": swapped}).values())


def test_cli_smoke_run(tmp_path, capsys):
    out, tb, out_json = tmp_path / "results", tmp_path / "runs", tmp_path / "tailrisk.json"
    argv = ["reproduce", "tailrisk", "--algo", "reinforce", "--seeds", "1", "--updates", "3", "--n-episodes", "16",
            "--k", "8", "--deploy-paths", "16", "--stress", "--eval-every", "1", "--eval-episodes", "4",
            "--workers", "1", "--out", str(out), "--tensorboard", str(tb), "--json", str(out_json),
            "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    for label, _, _ in tr._ROWS:
        assert label in printed
    assert "70.2%" in printed and "-0.429" in printed and "Stress grid" in printed  # the paper's numbers
    assert (out / "tailrisk.png").stat().st_size > 20_000 and (out / "tailrisk_stress.png").stat().st_size > 10_000
    assert sorted(p.name for p in (out / "models").iterdir()) == ["ordergrad_cvar_seed0.zip", "reinforce_seed0.zip"]
    runs = sorted(str(p.parent.relative_to(tb)) for p in tb.rglob("events.out.tfevents.*"))
    assert runs == ["ordergrad_cvar/seed0_1", "reinforce/seed0_1"]  # one parent directory per method

    results = json.loads(out_json.read_text())
    assert set(results["methods"]) == {"reinforce", "ordergrad_cvar"}
    for method in results["methods"].values():
        assert set(tr.METRICS) | {"weights", "per_seed", "n_paths"} == set(method)
        assert set(method["weights"]) == set(ASSET_NAMES)
        assert sum(method["weights"].values()) == pytest.approx(1.0)
        assert 0.0 <= method["profitable"] <= 1.0 and method["n_paths"] == 16
        assert len(method["per_seed"]["mean_return"]) == 1
    assert results["stress"]["p"] == list(tr.STRESS_P)
    assert len(results["stress"]["reinforce"]) == len(tr.STRESS_P)
    assert set(results["checks"]) == set(tr.checks({"methods": tr.PAPER}))
    assert results["paper"]["reinforce"]["profitable"] == 0.647


def test_cli_both_algorithms_smoke_run(tmp_path, capsys):
    out_json = tmp_path / "tailrisk.json"
    # --quick: 1 seed, 2 updates of 16 episodes at K = 8, 2,000 PPO steps, 16 deployment paths.
    argv = ["reproduce", "tailrisk", "--algo", "both", "--quick", "--workers", "1",
            "--out", str(tmp_path / "results"), "--json", str(out_json), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "OrderGradPPO-CVaR" in printed and "PPO mean" in printed and 'OrderGradPPO("MlpPolicy"' in printed
    results = json.loads(out_json.read_text())
    assert set(results["methods"]) == {"reinforce", "ordergrad_cvar", "ppo_mean", "ppo_cvar"}
    assert "OrderGradPPO-CVaR profitable >= 95%" in results["checks"]
    models = sorted(p.name for p in (tmp_path / "results" / "models").iterdir())
    assert models == ["ordergrad_cvar_seed0.zip", "ppo_cvar_seed0.zip", "ppo_mean_seed0.zip", "reinforce_seed0.zip"]
    # The PPO runs are the usage line: every argument at its default but the objective.
    from ordergrad_rl.agents import OrderGradPPO

    model = OrderGradPPO.load(tmp_path / "results" / "models" / "ppo_cvar_seed0.zip")
    reference = OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.2")
    for name in ("n_episodes", "batch_size", "n_epochs", "learning_rate", "objective_spec", "n_envs"):
        assert getattr(model, name) == getattr(reference, name), name


def test_quick_refuses_the_sizes_it_sets(tmp_path, capsys):
    argv = ["reproduce", "tailrisk", "--quick", "--updates", "5", "--out", str(tmp_path), "--quiet"]
    assert main(argv) == 2
    assert "--quick sets its own sizes (a smoke run); drop --updates, or drop --quick" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("algo", "options", "named"),
    [
        ("ppo", ["--updates", "5", "--k", "4"], "--updates --k"),
        ("ppo", ["--n-episodes", "32"], "--n-episodes"),
        ("reinforce", ["--ppo-timesteps", "100"], "--ppo-timesteps"),
    ],
)
def test_algo_refuses_the_options_of_the_protocol_it_leaves_out(algo, options, named, tmp_path, capsys, monkeypatch):
    """``--algo ppo --updates 5`` trained OrderGradPPO at its defaults and dropped the REINFORCE sizes without a
    word (``--algo reinforce --ppo-timesteps`` likewise): they are refused before any training."""
    monkeypatch.setattr(tr, "run_experiment", lambda *args, **kwargs: pytest.fail("trained"))
    assert main(["reproduce", "tailrisk", "--algo", algo, *options, "--out", str(tmp_path), "--quiet"]) == 2
    assert f"which ignores {named}: drop it, or --algo both" in capsys.readouterr().err


def test_tensorboard_run_has_deployment_evaluations(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config = tr.Config(seeds=1, updates=2, n_episodes=16, k=8, eval_every=1, eval_episodes=4)
    tr.train_method("ordergrad_cvar", 0, config, tensorboard=tmp_path)
    run = tmp_path / "ordergrad_cvar" / "seed0_1"
    accumulator = EventAccumulator(str(run))
    accumulator.Reload()
    scalars = accumulator.Tags()["scalars"]
    named = {
        f"eval_info/weight_{asset}_mean" for asset in ("high_yield_tailrisk", "defensive_hedge", "balanced", "cash")
    }
    assert {"risk/cvar_0.2", "risk/objective", "eval_risk/cvar_0.2", *named} <= set(scalars)
    assert not any("weights_" in tag or "daily_returns" in tag for tag in scalars)  # positions, not names
    assert "eval_info/daily_returns" in accumulator.Tags()["histograms"]  # 5 days per block: one histogram
    assert len(accumulator.Scalars("eval_risk/mean")) == 2  # one evaluation per update
    assert len(accumulator.Scalars("eval/mean_ep_length")) == 2
    assert accumulator.Scalars("eval/mean_ep_length")[0].value == 32  # deployment episodes: 160 days / 5


def test_a_rerun_replaces_the_tensorboard_run_of_its_method_and_seed(tmp_path):
    """A rerun into the same --tensorboard logged seed0_2 beside seed0_1 (an interrupted run's too), and the mean over
    seeds of the dashboards counted both; now it logs seed0_1 afresh and leaves other seeds and methods alone."""
    config = tr.Config(seeds=1, updates=1, n_episodes=8, k=4)
    others = [
        tmp_path / "ordergrad_cvar" / "seed00_1",
        tmp_path / "ordergrad_cvar" / "seed0_x",
        tmp_path / "reinforce" / "seed0_1",
    ]
    for other in others:
        other.mkdir(parents=True)
    tr.train_method("ordergrad_cvar", 0, config, tensorboard=tmp_path)
    first = sorted((tmp_path / "ordergrad_cvar" / "seed0_1").iterdir())
    tr.train_method("ordergrad_cvar", 0, config, tensorboard=tmp_path)
    runs = sorted(path.name for path in (tmp_path / "ordergrad_cvar").iterdir())
    assert runs == ["seed00_1", "seed0_1", "seed0_x"] and all(other.is_dir() for other in others)
    assert sorted((tmp_path / "ordergrad_cvar" / "seed0_1").iterdir()) != first  # the new run's events only
    assert len(list((tmp_path / "ordergrad_cvar" / "seed0_1").iterdir())) == 1


@pytest.mark.slow
def test_results_do_not_depend_on_the_number_of_workers():
    config = tr.Config(seeds=1, updates=4, n_episodes=16, k=8, deploy_paths=16)
    one = tr.run_experiment(dataclasses.replace(config, workers=1), quiet=True)
    two = tr.run_experiment(dataclasses.replace(config, workers=2), quiet=True)
    assert one["methods"] == two["methods"]


def test_deployment_table_has_a_column_per_model():
    models = {"cash-heavy": ConstantPolicy([0.0, 0.0, 0.0, 5.0]), "tail-heavy": ConstantPolicy([5.0, 0.0, 0.0, 0.0])}
    table = tr.deployment_table(models, n_paths=32, seed=7)
    header, _, *rows = table.splitlines()
    assert "cash-heavy" in header and "tail-heavy" in header and "32 paths" in header
    assert len(rows) == len(tr._ROWS)
    heavy = tr.deployment_metrics(tr.deploy(models["tail-heavy"], 32, 7))
    assert tr._pct(heavy["below_0.9"]) in next(row for row in rows if "P(W_T < 0.9)" in row)


def _comparable(path):
    """A --json file less what differs between two invocations of the same reproduction: timings and paths."""
    payload = json.loads(path.read_text())
    for key in ("wall_seconds", "train_seconds", "figures", "models"):
        payload.pop(key)
    return payload


def test_resume_after_an_interruption_gives_the_results_of_an_uninterrupted_run(tmp_path, capsys, monkeypatch):
    """An interrupted reproduction (Ctrl-C, a crash, a killed job) had to start over: there was no --resume. Each
    finished run is now stored in <out>/runs, and --resume trains only the others, with the same tables and JSON."""
    argv = ["reproduce", "tailrisk", "--algo", "reinforce", "--seeds", "2", "--updates", "2", "--n-episodes", "16",
            "--k", "8", "--deploy-paths", "16", "--stress", "--workers", "1", "--quiet"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "through"), "--json", str(tmp_path / "through.json")]) == 0
    through = capsys.readouterr().out

    trained: list[tuple[str, int]] = []
    run_job = tr.run_job

    def cut_short(method, seed, *args, **kwargs):
        if len(trained) == 2:
            raise KeyboardInterrupt
        trained.append((method, seed))
        return run_job(method, seed, *args, **kwargs)

    monkeypatch.setattr(tr, "run_job", cut_short)
    out, out_json = tmp_path / "resumed", tmp_path / "resumed.json"
    resumed = [*argv, "--out", str(out), "--json", str(out_json)]
    assert main(resumed) == 130
    assert f"interrupted: 2 runs are in {out / 'runs'}; rerun with --resume" in capsys.readouterr().err
    assert not out_json.exists()
    trained.clear()
    assert main([*resumed, "--resume"]) == 0
    assert trained == [("reinforce", 1), ("ordergrad_cvar", 1)]  # seed 0's runs are not trained again
    assert _comparable(out_json) == _comparable(tmp_path / "through.json")
    timing = re.compile(r"^time: .*$|\S*through\S*|\S*resumed\S*", re.MULTILINE)
    assert timing.sub("", capsys.readouterr().out) == timing.sub("", through)
    # Every run stored: nothing trains, and the results are those of the run that went through.
    monkeypatch.setattr(tr, "run_job", lambda *args, **kwargs: pytest.fail("trained"))
    assert main([*resumed, "--resume"]) == 0
    assert _comparable(out_json) == _comparable(tmp_path / "through.json")
    # A stored run whose model is gone is trained again.
    (out / "models" / "reinforce_seed1.zip").unlink()
    monkeypatch.setattr(tr, "run_job", cut_short)
    trained.clear()
    assert main([*resumed, "--resume"]) == 0
    assert trained == [("reinforce", 1)] and (out / "models" / "reinforce_seed1.zip").exists()


def test_resume_refuses_runs_stored_with_other_settings(tmp_path, capsys, monkeypatch):
    argv = ["reproduce", "tailrisk", "--algo", "reinforce", "--seeds", "1", "--updates", "1", "--n-episodes", "8",
            "--k", "4", "--deploy-paths", "8", "--workers", "1", "--quiet", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    refused = {
        ("--updates", "2"): "--updates 1 (now 2)",
        ("--stress",): "--stress False (now True)",
        ("--tensorboard", str(tmp_path / "tb")): f"--tensorboard None (now {(tmp_path / 'tb').resolve()})",
    }
    for options, named in refused.items():
        with monkeypatch.context() as patch:
            patch.setattr(tr, "run_job", lambda *args, **kwargs: pytest.fail("trained"))
            assert main([*replaced(argv, options), "--resume"]) == 2, options
        error = capsys.readouterr().err
        assert f"--resume: the run reinforce_seed0 in {tmp_path / 'runs'} was trained with {named}" in error, error
        assert "drop --resume to train every run again" in error
    # A PPO-only option does not make a REINFORCE run another experiment: more seeds or methods only add runs.
    trained = record_trained(monkeypatch)
    assert main([*argv[:3], "both", *argv[4:], "--ppo-timesteps", "1000", "--resume"]) == 0
    assert trained == ["ppo_mean", "ppo_cvar"]
    stored = json.loads((tmp_path / "runs" / "ppo_mean_seed0.json").read_text())["config"]
    assert stored["ppo_timesteps"] == 1000 and "updates" not in stored
    # Without --resume every run trains again, and is stored with its new settings.
    assert main(replaced(argv, ("--updates", "2"))) == 0
    assert json.loads((tmp_path / "runs" / "reinforce_seed0.json").read_text())["config"]["updates"] == 2


def record_trained(monkeypatch) -> list[str]:
    """The methods that ``run_job`` trains from here on, in order; each job still runs."""
    trained: list[str] = []
    run_job = tr.run_job

    def recorded(method, *args, **kwargs):
        trained.append(method)
        return run_job(method, *args, **kwargs)

    monkeypatch.setattr(tr, "run_job", recorded)
    return trained


def replaced(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` with ``options`` (a flag and its value, or a switch) set."""
    flag = options[0]
    if flag in argv and len(options) == 2:
        argv = list(argv)
        argv[argv.index(flag) + 1] = options[1]
        return argv
    return [*argv, *options]


def test_resume_trains_again_the_runs_stored_by_other_code(tmp_path, capsys, monkeypatch):
    """A stored run recorded neither the code that trained it nor its layout: --resume reused a run stored by an
    earlier release (other numbers, or another layout) silently. A run now records its run format and the package
    version; --resume trains again, naming them, the runs stored by another version or format, or without them."""
    argv = ["reproduce", "tailrisk", "--algo", "reinforce", "--seeds", "1", "--updates", "1", "--n-episodes", "8",
            "--k", "4", "--deploy-paths", "8", "--workers", "1", "--quiet", "--out", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    path = tmp_path / "runs" / "reinforce_seed0.json"
    record = json.loads(path.read_text())
    assert {key: record[key] for key in ("format", "version")} == {"format": tr.RUN_FORMAT, "version": __version__}
    trained = record_trained(monkeypatch)
    without = {key: value for key, value in record.items() if key not in ("format", "version")}
    stored_by = {
        "a release that did not record its version": without,
        "ordergrad-rl 0.0.1 (run format 1)": record | {"version": "0.0.1"},
        f"ordergrad-rl {__version__} (run format 0)": record | {"format": 0},
    }
    for named, stored in stored_by.items():
        path.write_text(json.dumps(stored | {"config": stored["config"] | {"updates": 7}}))  # its settings: not asked
        trained.clear()
        assert main([*argv, "--resume"]) == 0
        assert trained == ["reinforce"], named  # ordergrad_cvar, stored by this code, is reused
        error = capsys.readouterr().err
        assert f"--resume: these runs in {tmp_path / 'runs'} were stored by other code than this ordergrad-rl" in error
        assert f"trained again: reinforce_seed0 by {named}" in error, error
        assert json.loads(path.read_text()) == record | {"train_seconds": json.loads(path.read_text())["train_seconds"]}
    trained.clear()
    assert main([*argv, "--resume"]) == 0  # stored by this code again: reused
    assert trained == [] and "stored by other code" not in capsys.readouterr().err
