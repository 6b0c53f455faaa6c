"""The maintenance and measurement scripts of ``scripts/``: argument checks before any work, and a run of each
fixed script at its smallest setting."""

from __future__ import annotations

import json
import math
import sys
import warnings

import pytest
from conftest import SCRIPTS
from conftest import load_script as load

import ordergrad_rl
from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.experiments import benchmarks as bench

SCRIPT_NAMES = sorted(path.stem for path in SCRIPTS.glob("*.py"))
#: The package's optional dependencies (its extras): a script importing one at load is skipped without it.
OPTIONAL_MODULES = {"minatar", "rliable", "pandas", "jax", "mpmath", "ray", "yaml", "trl", "transformers", "Box2D"}


def load_or_skip(name: str):
    """``scripts/<name>.py`` as a module; the test is skipped where the script imports a missing optional dependency."""
    try:
        return load(name)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] not in OPTIONAL_MODULES:
            raise
        pytest.skip(f"needs {err.name}")


@pytest.mark.parametrize("name", SCRIPT_NAMES)
def test_every_script_prints_help_and_does_nothing_else(name, monkeypatch, capsys):
    # In-process, with the command line a user types: a help string with a bare % (argparse formats help with %),
    # an optional dependency imported before parsing, or work done before parsing fail here.
    monkeypatch.setattr(sys, "argv", [f"{name}.py", "--help"])
    script = load_or_skip(name)
    with pytest.raises(SystemExit) as exit_info:
        script.main()
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage:")


# ------------------------------------------------------------------------------------------- make_saved_fixtures
def test_make_saved_fixtures_refuses_an_existing_release_directory(tmp_path, capsys):
    script = load("make_saved_fixtures")
    release = script.release_directory(tmp_path)
    assert release.name == f"saved_{ordergrad_rl.__version__.replace('.', '_')}"
    release.mkdir()
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--out", str(tmp_path)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err
    assert list(release.iterdir()) == []  # nothing trained, nothing written
    assert script.parse_args(["--out", str(tmp_path), "--force"]).force


def test_make_saved_fixtures_writes_into_out_only(tmp_path):
    script = load("make_saved_fixtures")
    args = script.parse_args(["--out", str(tmp_path / "new")])
    assert args.out == tmp_path / "new" and not args.force
    assert script.parse_args([]).out == script.ROOT  # default: the tests' fixtures, as documented


def test_make_saved_fixtures_refuses_an_out_that_is_a_file(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        load("make_saved_fixtures").parse_args(["--out", str(tmp_path / "file")])
    assert "--out" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------- bench_qcritic
def test_bench_qcritic_times_the_q_critic_model_against_ppo(capsys, one_torch_thread):
    pytest.importorskip("minatar")
    load("bench_qcritic").main(["--quick"])
    out = capsys.readouterr().out
    assert "SB3 PPO (scalar value head), baseline" in out
    ratio_line = next(line for line in out.splitlines() if line.startswith("OrderGradPPO q_critic"))
    assert float(ratio_line.split()[-4]) > 0  # the ratio against the baseline timed in the same run
    assert "advantage step" in out


def test_bench_qcritic_hook_times_the_advantage_step():
    pytest.importorskip("minatar")
    from ordergrad_rl.agents import OrderGradQCriticPPO
    from ordergrad_rl.envs.minatar import make_minatar_vec_env
    from ordergrad_rl.experiments.minatar import Config, build_model

    script = load("bench_qcritic")
    config = Config(n_envs=1, n_steps=16, batch_size=16, n_epochs=1)
    model = build_model(script.OBJECTIVE, make_minatar_vec_env("breakout", 1, seed=0), config, 0)
    script.time_advantage_step(model)
    assert type(model) is OrderGradQCriticPPO  # the model keeps its class and attributes
    model.learn(16)
    assert model.advantage_seconds > 0


# ------------------------------------------------------------------------------------------------ measure_discarded
def test_measure_discarded_runs_both_rules(capsys, one_torch_thread):
    load("measure_discarded").main(["--n-envs", "2", "--rollouts", "1", "--cases", "mean:4"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| mean | 4 |")]
    assert [row.split("|")[3].strip() for row in rows] == ["per-env quota", "first-N-started"]


@pytest.mark.parametrize("case", ["foo", "foo:4", "mean:0", "mean:x", ":4", "top2@4:2"])
def test_measure_discarded_refuses_a_bad_case(case, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("measure_discarded").main(["--cases", case])
    assert exit_info.value.code == 2
    assert "--cases" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------- measure_base_model
def test_measure_base_model_reports_pass_at_k_with_k_at_most_n():
    largest_k = load("measure_base_model").largest_k
    assert [largest_k(n) for n in (1, 8, 100, 256, 1024)] == [1, 8, 64, 256, 256]


@pytest.mark.parametrize("argv", [["--n", "0"], ["--json", "."]])
def test_measure_base_model_refuses_bad_arguments_before_building(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("measure_base_model").main(argv)
    assert exit_info.value.code == 2
    assert argv[0] in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--samples", "8"], ["--json", "."], ["--seeds", "0"]])
def test_measure_base_model_finetune_refuses_bad_arguments_before_training(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("measure_base_model_finetune").main(argv)
    assert exit_info.value.code == 2
    assert argv[0] in capsys.readouterr().err


# ------------------------------------------------------------------------------------------------------ the benches
@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("bench_envs", ["--repeats", "0"]),
        ("bench_envs", ["--num-envs", "-5"]),
        ("bench_threads", ["--repeats", "0"]),
        ("bench_agents", ["--repeats", "0"]),
        ("bench_core", ["--repeats", "0"]),
        ("bench_core", ["--big-objectives", "cvar0.2", "foo"]),  # a typo, once printed as "unsupported"
        ("bench_groups", ["--rollouts", "0"]),
        ("bench_qcritic", ["--n-envs", "0"]),
    ],
)
def test_bench_arguments_are_checked(name, argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load(name).main(argv)
    assert exit_info.value.code == 2
    assert f"argument {argv[0]}:" in capsys.readouterr().err


@pytest.mark.parametrize("skip", ["--skip-big", "--quick"])
def test_bench_core_refuses_big_objectives_it_would_skip(skip, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("bench_core").main(["--big-objectives", "cvar0.2", skip])
    assert exit_info.value.code == 2
    assert "--big-objectives picks the N = 10^5 first calls" in capsys.readouterr().err


BENCH_NAMES = [name for name in SCRIPT_NAMES if name.startswith("bench_")]


@pytest.mark.parametrize("name", [name for name in BENCH_NAMES if name != "bench_qcritic"])  # its own test below
def test_every_bench_runs_quick_and_prints_ratios_against_its_baseline(name, capsys, one_torch_thread):
    """``--quick``, CI's smoke run of each benchmark: it runs, and prints ratios against a baseline of the same run."""
    script = load_or_skip(name)
    script.main(["--quick"])
    assert "ratio" in capsys.readouterr().out


@pytest.mark.parametrize("name", BENCH_NAMES)
def test_bench_quick_refuses_a_size_it_would_override(name, capsys):
    script = load_or_skip(name)
    with pytest.raises(SystemExit) as exit_info:
        script.main(["--quick", "--repeats", "2"])
    assert exit_info.value.code == 2
    assert "--quick sets its own sizes" in capsys.readouterr().err


def test_bench_agents_times_each_contrib_algorithm_against_its_sb3_contrib_baseline(monkeypatch, capsys):
    script = load("bench_agents")
    runs = []

    def best_runs(makes, repeats):
        runs.extend(makes)
        return [(1.0, 100)] * len(makes)  # nothing built or trained

    monkeypatch.setattr(script, "best_runs", best_runs)
    script.main(["--quick"])
    # Section 1's runs: cartpole_run(cls, steps, seed, policy, masked, ...); section 0 passes no policy.
    contrib = [run for run in runs if getattr(run, "func", None) is script.cartpole_run and len(run.args) == 5]
    timed = [(run.args[0].__name__, run.args[4]) for run in contrib]
    assert timed == [
        ("RecurrentPPO", False),
        ("OrderGradRecurrentPPO", False),
        ("MaskablePPO", True),
        ("OrderGradMaskablePPO", True),
        ("QRDQN", False),
        ("QRDQNCVaR", False),
    ]
    out = capsys.readouterr().out
    assert "MaskablePPO (baseline)" in out and "OrderGradMaskablePPO cvar0.2" in out


def test_bench_agents_times_the_runs_it_compares_in_turns():
    """A machine that slows down for a while slows every run compared, not the ones timed then: runs take turns."""
    script = load("bench_agents")
    order: list[str] = []

    def make(name: str):
        order.append(f"build {name}")
        return lambda: order.append(f"run {name}") or name

    best = script.best_runs([lambda: make("sb3"), lambda: make("ours")], repeats=2)
    assert order == ["build sb3", "run sb3", "build ours", "run ours"] * 2
    assert [result for _, result in best] == ["sb3", "ours"]


def test_bench_agents_silences_only_the_expected_few_updates_warnings():
    """The script's tiny budgets printed "fewer than 5 updates" warnings between its table rows; its filter drops
    those and no other warning."""
    script = load("bench_agents")
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", message=script.FEW_UPDATES_WARNING)
        OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=4, k=2).learn(200)  # about 2 updates
        OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=2)
    assert [str(record.message)[:31] for record in records] == ["objective 'cvar0.2' binds the d"]


def test_bench_envs_times_each_native_batch_against_a_python_loop_of_single_envs(monkeypatch, capsys):
    script = load("bench_envs")
    monkeypatch.setattr(script, "best_rate", lambda run, repeats: 1.0)  # nothing stepped
    script.main(["--quick"])
    out = capsys.readouterr().out
    assert "SB3 TailRiskVecEnv / SB3 DummyVecEnv" in out
    assert "targetsum make_sb3_vec_env / SB3 DummyVecEnv" in out


@pytest.mark.parametrize(
    ("name", "rows"),
    [
        ("bench_core", ["lstat_value cvar0.2@100, N=1e4", "lstat_value torch + backward"]),
        ("bench_advantages", ["lstat_value cvar0.2@128, N=256 (baseline)", "weighted_lstat_value (noise sampler)"]),
    ],
)
def test_bench_core_and_advantages_time_the_values_the_agents_log(name, rows, monkeypatch, capsys):
    script = load(name)
    monkeypatch.setattr(script, "best_time", lambda fn, repeats=3: 1.0)  # nothing timed
    script.main(["--quick"])
    out = capsys.readouterr().out
    assert all(row in out for row in rows)


def test_bench_groups_times_both_modes_with_the_same_baseline(monkeypatch):
    """Pooled TargetSum fits the history baseline by default and grouped needs none: timed at their defaults, the
    ratio measured that fit (0.2), not grouping."""
    script = load("bench_groups")
    monkeypatch.setattr(script, "CASES", (("TargetSum-v0", 16, 16, "top2@4", 8),))
    models = []

    def rollout_timer(model):
        models.append(model)
        return lambda rollouts: (1.0, 0.0)

    monkeypatch.setattr(script, "rollout_timer", rollout_timer)
    script.main(["--quick"])
    grouped, pooled = models
    assert grouped.group_size == 8 and pooled.group_size is None
    assert pooled.value_baseline == grouped.value_baseline and grouped.value_baseline is False
    assert pooled.normalize_advantage == grouped.normalize_advantage


@pytest.mark.parametrize(("seconds", "baseline"), [(math.inf, math.inf), (math.nan, 1.0), (math.inf, 1.0)])
def test_bench_rows_never_mark_an_unmeasured_row_ok(seconds, baseline, capsys):
    from ordergrad_rl.common.reports import ratio_row

    ratio_row("label", seconds, baseline, "baseline", "<= 1.5x", True)
    assert capsys.readouterr().out.rstrip().endswith("MISSED")


# ------------------------------------------------------------------------------------------------------ greedy_trace
def _lava_trace(mass: float = 1.0, **changes):
    import gymnasium as gym

    mdp = gym.make(bench.TASKS["lava"].env_id).unwrapped.tabular()
    uniform = [[mass / mdp.n_actions] * mdp.n_actions] * mdp.n_states
    row = {"timesteps": 100, "greedy": -1.0, "stochastic": -2.0, "probabilities": uniform}
    return {"task": "lava", "method": "og-cvar", "seed": 0, "rows": [row, row, row], **changes}


def test_greedy_trace_summarizes_a_trace_without_training(tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_lava_trace()))
    assert load("greedy_trace").main(["--from-json", str(path)]) == 0
    assert "last third" in capsys.readouterr().out


@pytest.mark.parametrize(
    "content",
    [
        None,  # no such file
        "not json",
        json.dumps({"runs": []}),  # another script's JSON
        json.dumps(_lava_trace(task="cartpole")),
        json.dumps(_lava_trace(rows=[])),
        json.dumps(_lava_trace(rows=[{"greedy": 1.0}])),
        json.dumps(_lava_trace(rows=[{"timesteps": 1, "greedy": 1.0, "stochastic": 1.0, "probabilities": [[1.0]]}])),
        json.dumps(_lava_trace(mass=0.0)),  # rows of probabilities that do not sum to 1
    ],
)
def test_greedy_trace_refuses_a_file_that_is_not_its_trace(content, tmp_path, capsys):
    path = tmp_path / "trace.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(SystemExit) as exit_info:
        load("greedy_trace").main(["--from-json", str(path)])
    assert exit_info.value.code == 2
    assert "argument --from-json:" in capsys.readouterr().err


def test_greedy_trace_checks_json_before_training(tmp_path, capsys):
    with pytest.raises(SystemExit):
        load("greedy_trace").main(["--task", "lava", "--json", str(tmp_path)])
    assert "--json" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------- probe_* (benchmarks' probes)
PROBES = [
    "probe_blind_patience", "probe_level_sized_rollouts", "probe_nav_novelty_phase", "probe_return_pool",
    "measure_mask_tied_critic",
]  # fmt: skip


@pytest.mark.parametrize("name", PROBES)
@pytest.mark.parametrize(
    ("argv", "option"),
    [(["--seeds", "-1"], "--seeds"), (["--timesteps", "0"], "--timesteps"), (["--json", "{tmp}"], "--json")],
)
def test_probes_refuse_bad_arguments_before_training(name, argv, option, tmp_path, monkeypatch, capsys):
    """A negative seed failed with NumPy's traceback after the setup, 0 steps scored the untrained policy as a run,
    and a --json that is a directory failed only after the first seed's training."""
    monkeypatch.setattr(bench, "run_one", lambda *args: pytest.fail("trained despite a bad argument"))
    with pytest.raises(SystemExit) as exit_info:
        load(name).main(["--seeds", "0", "--timesteps", "1", *(arg.format(tmp=tmp_path) for arg in argv)])
    assert exit_info.value.code == 2
    assert option in capsys.readouterr().err


def test_measure_mask_tied_critic_scores_a_masked_model_on_masked_evaluation_envs():
    from tqdm.auto import tqdm

    with tqdm(disable=True) as bar:
        run = load("measure_mask_tied_critic").run(0, True, 200, 2, bar)
    assert run["critic_when_tied"] is True and run["timesteps"] >= 200
    assert 0 <= run["tied_at_best"] <= run["rollouts"] and run["rollouts"] >= 1
    assert {mode: sorted(run[mode]) for mode in ("greedy", "stochastic")} == {
        "greedy": ["cvar", "mean"], "stochastic": ["cvar", "mean"]
    }  # fmt: skip


def test_measure_log_std_muting_records_every_update(tmp_path):
    out = tmp_path / "muting.json"
    records = load("measure_log_std_muting").main(["--env", "RiskyShortcutNav-v2", "--quick", "--json", str(out)])
    assert records and all(len(record["gradient"]) == len(record["change"]) == 2 for record in records)
    assert json.loads(out.read_text())["records"] == records


# ----------------------------------------------------------------------------------------- measure_schedule_portfolio
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seeds", "0"], "--seeds"),
        (["--timesteps", "0"], "--timesteps"),
        (["--schedules", "none", "foo"], "'foo'"),
        (["--n-episodes", "1"], "n_episodes"),
    ],
)
def test_measure_schedule_portfolio_refuses_bad_settings_before_training(argv, message, monkeypatch, capsys):
    script = load("measure_schedule_portfolio")
    monkeypatch.setattr(script, "deploy", lambda *args: pytest.fail("trained despite a bad argument"))
    with pytest.raises(SystemExit) as exit_info:
        script.main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err


# ----------------------------------------------------------------------------------------- measure_reinforce_defaults
def test_measure_reinforce_defaults_prints_no_sd_for_one_seed():
    mean_sd = load("measure_reinforce_defaults").mean_sd
    assert mean_sd([0.5]) == "0.500 (-)"
    assert mean_sd([1.0, 3.0]) == "2.000 (1.414)"


@pytest.mark.parametrize(("argv", "option"), [(["--seeds", "0"], "--seeds"), (["--json", "."], "--json")])
def test_measure_reinforce_defaults_refuses_bad_arguments(argv, option, capsys):
    with pytest.raises(SystemExit) as exit_info:
        load("measure_reinforce_defaults").main(argv)
    assert exit_info.value.code == 2
    assert option in capsys.readouterr().err


def test_screenshot_tensorboard_waits_for_the_runs_that_exist(tmp_path):
    """It waited for a mean_over_seeds run per method of two runs, written or not: on a log dir where `ordergrad-rl
    dashboard` had not run, or beside SB3's PPO_1 and PPO_2 (no risk scalars, no aggregate), it waited 300 s for
    runs that never come, then said TensorBoard 'did not load' them."""
    from torch.utils.tensorboard import SummaryWriter

    from ordergrad_rl.zoo.dashboards import write_dashboards

    script = load("screenshot_tensorboard")
    for run, tag in [("cvar/seed0_1", "eval_risk/mean"), ("cvar/seed1_1", "eval_risk/mean")] + [
        ("PPO_1", "rollout/ep_rew_mean"),
        ("PPO_2", "rollout/ep_rew_mean"),
    ]:
        writer = SummaryWriter(str(tmp_path / run))
        writer.add_scalar(tag, 1.0, 8)
        writer.close()
    assert script.expected_runs(tmp_path) == 4  # before the dashboards
    write_dashboards(tmp_path)
    assert script.expected_runs(tmp_path) == 5  # and cvar/mean_over_seeds, no PPO one
