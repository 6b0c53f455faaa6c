"""Dashboards of many runs (ordergrad_rl.zoo.dashboards, ``ordergrad-rl dashboard``): the aggregated run per method
read back with EventAccumulator and checked against the seeds' numbers, the layout, the HParams rows, the colours."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.hparams import metadata
from torch.utils.tensorboard import SummaryWriter

from ordergrad_rl.agents import OrderGradPPO, RiskEvalCallback
from ordergrad_rl.agents.common.hparams import write_hparams
from ordergrad_rl.cli import main
from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.zoo import compare as zoo_compare
from ordergrad_rl.zoo import dashboards


def read(run: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(run), size_guidance={"tensors": 0, "scalars": 0})
    accumulator.Reload()
    return accumulator


def curve(accumulator: EventAccumulator, tag: str) -> tuple[list[int], list[float]]:
    events = accumulator.Scalars(tag)
    return [e.step for e in events], [e.value for e in events]


def fake_run(path: Path, steps: list[int], cvar: list[float], objective: str, seed: int) -> None:
    """A run as the agents write it: eval_risk/cvar_0.2 and eval_risk/mean (= cvar + 1), and its HParams."""
    writer = SummaryWriter(str(path))
    for step, value in zip(steps, cvar, strict=True):
        writer.add_scalar("eval_risk/cvar_0.2", value, step)
        writer.add_scalar("eval_risk/mean", value + 1.0, step)
    write_hparams(writer, {"objective": objective, "k": 4, "seed": seed, "learning_rate": 3e-4}, ["eval_risk/mean"])
    writer.close()


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    fake_run(tmp_path / "cvar" / "seed0_1", [10, 20, 30], [1.0, 2.0, 3.0], "cvar0.2", 0)
    fake_run(tmp_path / "cvar" / "seed1_1", [10, 20, 40], [3.0, 4.0, 5.0], "cvar0.2", 1)
    fake_run(tmp_path / "cvar-level" / "seed0_1", [5, 15], [0.0, 1.0], "cvar0.2", 0)
    fake_run(tmp_path / "cvar-level" / "seed1_1", [5, 15], [2.0, 5.0], "cvar0.2", 1)
    fake_run(tmp_path / "alone" / "seed0_1", [1], [0.0], "mean", 0)
    return tmp_path


def test_mean_and_band_interpolates_on_the_seeds_steps_and_holds_a_finished_seed() -> None:
    a = (np.array([0.0, 10.0, 20.0]), np.array([0.0, 10.0, 20.0]))
    b = (np.array([5.0, 15.0, 30.0]), np.array([1.0, 1.0, 4.0]))
    steps, mean, low, high = dashboards.mean_and_band([a, b])
    np.testing.assert_array_equal(steps, [5, 10, 15, 20, 30])  # from the latest first step to the last of all
    seed_a = np.array([5.0, 10.0, 15.0, 20.0, 20.0])  # holds 20 after it ended
    seed_b = np.array([1.0, 1.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(mean, (seed_a + seed_b) / 2)
    np.testing.assert_allclose(low, np.minimum(seed_a, seed_b))
    np.testing.assert_allclose(high, np.maximum(seed_a, seed_b))
    many = [(np.arange(1000.0), np.arange(1000.0))] * 2
    steps, mean, _, _ = dashboards.mean_and_band(many, points=50)
    assert steps.size == 50 and steps[0] == 0 and steps[-1] == 999
    np.testing.assert_allclose(mean, steps)


@pytest.mark.parametrize(
    ("run", "group"),
    [
        ("og-cvar/seed3_1", "og-cvar"),
        ("OrderGradPPO_cvar0.2@128_2", "OrderGradPPO_cvar0.2@128"),
        ("OrderGradPPO_top5@10_qcritic_1", "OrderGradPPO_top5@10_qcritic"),  # OrderGradPPO(advantage="q_critic")
        ("sweep/ppo/seed0_1", "sweep/ppo"),
        ("ppo_seed4", "ppo"),
        ("seed0_1", "logs"),  # a seed right in the log dir: the log dir's
    ],
)
def test_group_of_drops_the_seed_and_the_run_counter_but_keeps_the_path(tmp_path: Path, run: str, group: str) -> None:
    assert dashboards.group_of(tmp_path / "logs" / run, tmp_path / "logs") == group


def test_seeds_right_in_the_log_dir_are_one_method_as_compare_groups_them(tmp_path: Path, capsys) -> None:
    """dashboard runs/cvar, of the seeds runs/cvar/seed0_1 and seed1_1: each seed was a method of its own (no mean
    over seeds), where compare (and dashboard runs) took them for the seeds of cvar."""
    logdir = tmp_path / "cvar"
    fake_run(logdir / "seed0_1", [10, 20], [1.0, 2.0], "cvar0.2", 0)
    fake_run(logdir / "seed1_1", [10, 20], [3.0, 6.0], "cvar0.2", 1)
    fake_run(logdir / "OrderGradPPO_mean@4_1", [10], [0.0], "mean", 0)
    fake_run(logdir / "OrderGradPPO_mean@4_2", [10], [1.0], "mean", 1)
    result = dashboards.write_dashboards(logdir)
    entries = zoo_compare.load_entries([logdir], None, 1)
    assert {group: len(runs) for group, runs in result.groups.items()} == {"cvar": 2, "OrderGradPPO_mean@4": 2}
    assert {entry.group for entry in entries} == set(result.groups)
    assert result.aggregates == {
        "cvar": logdir / "mean_over_seeds",  # where dashboard runs writes it
        "OrderGradPPO_mean@4": logdir / "OrderGradPPO_mean@4" / "mean_over_seeds",
    }
    run = read(logdir / "mean_over_seeds")
    assert curve(run, "eval_risk/cvar_0.2") == ([10, 20], [2.0, 4.0])
    assert curve(run, "cvar/eval_risk/cvar_0.2/max") == ([10, 20], [3.0, 6.0])
    start = metadata.parse_session_start_info_plugin_data(
        run.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    )
    assert start.group_name == "mean_over_seeds"  # as TensorBoard names the run
    # Colours as TensorBoard names the runs of runs/cvar: the seeds and their mean share one.
    pattern = re.compile(dashboards.color_regex(dashboards.run_prefixes(result.groups, logdir)))
    for name, method in [("seed0_1", ""), ("mean_over_seeds", ""), ("OrderGradPPO_mean@4_2", "OrderGradPPO_mean@4")]:
        assert pattern.match(name).group(1) == method
    assert main(["dashboard", str(logdir)]) == 0
    assert re.search(rf"\|\s+cvar \|\s+2 \|\s+{re.escape(str(logdir / 'mean_over_seeds'))} \|", capsys.readouterr().out)
    # The same run as dashboard on the dir above; and gone once a seed is.
    assert dashboards.write_dashboards(tmp_path).aggregates["cvar"] == logdir / "mean_over_seeds"
    shutil.rmtree(logdir / "seed1_1")
    assert "cvar" not in dashboards.write_dashboards(logdir).aggregates
    assert not (logdir / "mean_over_seeds").exists()


def test_aggregated_runs_hold_the_mean_and_range_of_the_seeds(logdir: Path) -> None:
    result = dashboards.write_dashboards(logdir)
    assert set(result.groups) == {"cvar", "cvar-level", "alone"}
    assert set(result.aggregates) == {"cvar", "cvar-level"}  # one run: nothing to aggregate
    run = read(logdir / "cvar" / "mean_over_seeds")
    assert curve(run, "eval_risk/cvar_0.2") == ([10, 20, 30, 40], [2.0, 3.0, 3.75, 4.0])
    assert curve(run, "cvar/eval_risk/cvar_0.2/min") == ([10, 20, 30, 40], [1.0, 2.0, 3.0, 3.0])
    assert curve(run, "cvar/eval_risk/cvar_0.2/max")[1] == [3.0, 4.0, 4.5, 5.0]
    assert curve(run, "cvar/eval_risk/mean")[1] == [3.0, 4.0, 4.75, 5.0]
    # Across methods, x is the % of the method's training steps: from its first point (10 of 40 steps) to 100.
    steps, values = curve(run, "methods/eval_risk/cvar_0.2")
    assert steps == list(range(25, 101))
    assert values[::25] == [2.0, 3.0, 3.75, 4.0]
    assert curve(run, "methods/eval_risk/cvar_0.2/max")[1][-1] == 5.0
    assert curve(read(logdir / "cvar-level" / "mean_over_seeds"), "methods/eval_risk/mean")[0][0] == 34  # 5 of 15
    assert not any(tag.startswith("cvar-level/") for tag in run.Tags()["scalars"])
    level = read(logdir / "cvar-level" / "mean_over_seeds")
    assert curve(level, "eval_risk/cvar_0.2") == ([5, 15], [1.0, 3.0])
    # Its HParams row: the arguments the seeds share, the number of seeds, its own name, the seeds' metrics.
    content = level.PluginTagToContent(metadata.PLUGIN_NAME)
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert start.group_name == "cvar-level/mean_over_seeds"
    assert {name: value.WhichOneof("kind") for name, value in start.hparams.items()}.keys() == {
        "objective",
        "k",
        "learning_rate",
        "seeds",
    }
    assert start.hparams["seeds"].number_value == 2 and start.hparams["objective"].string_value == "cvar0.2"
    experiment = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    # The columns of every agent's run (TensorBoard takes one run's for the whole table), whichever the seeds logged.
    assert [m.name.tag for m in experiment.metric_infos] == list(dashboards.aggregate_tags())
    assert {info.name for info in experiment.hparam_infos if info.differs} == {"objective", "k"}
    # Its columns are its seeds' too: were TensorBoard to take the table's columns from it, the seeds keep theirs.
    assert {info.name for info in experiment.hparam_infos} == {"objective", "k", "learning_rate", "seed", "seeds"}


def test_layout_compares_the_methods_first_then_charts_each(logdir: Path) -> None:
    dashboards.write_dashboards(logdir)
    (root,) = logdir.glob("events.out.tfevents.*.dashboards")
    layout = layout_pb2.Layout()
    layout.ParseFromString(read(logdir).Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    titles = [category.title for category in layout.category]
    assert titles[0].startswith("methods:") and titles[1:] == [
        "method cvar: mean over seeds, band = range",
        "method cvar-level: mean over seeds, band = range",
    ]
    charts = {chart.title: chart for chart in layout.category[0].chart}
    # written last first: TensorBoard shows a category's charts in reverse
    assert list(charts) == ["eval_risk/mean, one band per method", "eval_risk/cvar_0.2, one band per method"]
    margin = charts["eval_risk/cvar_0.2, one band per method"].margin.series[0]
    assert (margin.value, margin.lower, margin.upper) == (
        "methods/eval_risk/cvar_0.2",
        "methods/eval_risk/cvar_0.2/min",
        "methods/eval_risk/cvar_0.2/max",
    )
    for tags in [[s.value, s.lower, s.upper] for c in layout.category[1].chart for s in c.margin.series]:
        assert all(tag in read(logdir / "cvar" / "mean_over_seeds").Tags()["scalars"] for tag in tags)
    # Again after another seed: the aggregate and the root file are replaced, not added to.
    fake_run(logdir / "cvar" / "seed2_1", [10, 20, 30], [2.0, 3.0, 4.0], "cvar0.2", 2)
    dashboards.write_dashboards(logdir)
    assert len(list(logdir.glob("events.out.tfevents.*"))) == 1 and root not in logdir.iterdir()
    assert len(list((logdir / "cvar" / "mean_over_seeds").iterdir())) == 1
    assert curve(read(logdir / "cvar" / "mean_over_seeds"), "eval_risk/cvar_0.2")[1][0] == 2.0  # (1 + 3 + 2) / 3


def test_compare_and_the_dashboards_skip_what_the_dashboards_wrote(logdir: Path) -> None:
    dashboards.write_dashboards(logdir)
    assert not zoo_compare.is_run(logdir)  # the root file holds a layout, not a run
    runs = zoo_compare.expand([logdir])
    assert len(runs) == 5 and not any(zoo_compare.is_aggregate(run) for run in runs)
    assert sum(len(runs) for runs in dashboards.find_runs(logdir).values()) == 5


def test_compare_of_every_entry_of_a_log_dir_skips_what_the_dashboards_wrote(logdir: Path) -> None:
    """compare runs/* after dashboard runs: the root's layout file was taken for a saved model ("give --env") and
    top/, holding only the mean_over_seeds of top_1 and top_2, was "a directory without TensorBoard runs"."""
    for seed in (0, 1):
        fake_run(logdir / f"top_{seed + 1}", [10], [1.0], "mean", seed)
    dashboards.write_dashboards(logdir)
    assert (logdir / "top" / "mean_over_seeds").is_dir() and list(logdir.glob("events.out.tfevents.*"))
    runs = zoo_compare.expand(sorted(logdir.iterdir()))
    assert len(runs) == 7 and not any(zoo_compare.is_aggregate(run) for run in runs)
    assert zoo_compare.expand([logdir / "top"]) == {}
    # The figure is named after the entries, not the layout file's name (which changes with every dashboard call).
    names = "compare_alone_vs_cvar_vs_cvar-level_vs_top_1_vs_top_2.png"
    assert zoo_compare.figure_name(sorted(logdir.iterdir())) == names


def test_colour_regex_captures_each_method_longest_first(logdir: Path) -> None:
    result = dashboards.write_dashboards(logdir)
    assert "runColorGroup=regex%3A%5E%28cvar-level%7Calone%7Ccvar%29" in result.url
    pattern = re.compile(dashboards.color_regex(list(result.groups)))
    for name in ["cvar/seed0_1", "cvar/mean_over_seeds", "cvar-level/seed1_1", "cvar-level/mean_over_seeds"]:
        assert pattern.match(name).group(1) == name.split("/")[0]


def test_dashboards_of_agent_runs(tmp_path: Path) -> None:
    """Real runs: two seeds of OrderGradPPO with the evaluation callback, in the layout the demo writes."""
    for seed in (0, 1):
        model = OrderGradPPO(
            "MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, n_epochs=1, batch_size=8, seed=seed
        )
        model.tensorboard_log = str(tmp_path)
        callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=8, eval_freq=2, seed=seed)
        model.learn(32, callback=callback, tb_log_name=f"og-cvar/seed{seed}")
    result = dashboards.write_dashboards(tmp_path)
    run = read(result.aggregates["og-cvar"])
    seeds = [read(tmp_path / "og-cvar" / f"seed{seed}_1") for seed in (0, 1)]
    for tag in dashboards.aggregate_tags():
        last = np.mean([seed.Scalars(tag)[-1].value for seed in seeds])
        assert run.Scalars(tag)[-1].value == pytest.approx(last, rel=1e-6), tag


def test_dashboard_command(logdir: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["dashboard", str(logdir)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"\|\s+cvar-level \|\s+2 \|.*cvar-level/mean_over_seeds", out)
    assert "mean_over_seeds" in out and "http://localhost:6006/?runColorGroup=" in out
    assert "- (one run)" in out
    for bad, message in [
        (logdir / "nothing", "is not a directory"),
        (logdir / "cvar" / "seed0_1", "is a run: give the log dir above the runs"),
    ]:
        assert main(["dashboard", str(bad)]) == 2
        assert message in capsys.readouterr().err
    empty = logdir / "empty"
    empty.mkdir()
    with pytest.raises(CommandError, match="without TensorBoard runs"):
        dashboards.write_dashboards(empty)


def test_dashboard_prints_a_tensorboard_command_that_runs_as_pasted(tmp_path: Path, capsys) -> None:
    """A log dir with a space: the printed ``tensorboard --logdir my runs`` gave TensorBoard two arguments."""
    for seed in (0, 1):
        fake_run(tmp_path / "my runs" / "cvar" / f"seed{seed}_1", [10], [1.0], "cvar0.2", seed)
    assert main(["dashboard", str(tmp_path / "my runs")]) == 0
    assert f"TensorBoard: tensorboard --logdir '{tmp_path / 'my runs'}'\n" in capsys.readouterr().out


def test_dashboard_prints_a_tensorboard_command_that_serves_at_the_address(tmp_path: Path, capsys) -> None:
    """``--address http://host:6007`` printed ``tensorboard --logdir runs``, which serves at localhost:6006."""
    for seed in (0, 1):
        fake_run(tmp_path / "runs" / "cvar" / f"seed{seed}_1", [10], [1.0], "cvar0.2", seed)
    assert main(["dashboard", str(tmp_path / "runs"), "--address", "http://host:6007/tb/"]) == 0
    out = capsys.readouterr().out
    assert f"TensorBoard: tensorboard --logdir {tmp_path / 'runs'} --host host --port 6007 --path_prefix /tb\n" in out
    assert "open: http://host:6007/tb/?runColorGroup=" in out
    assert dashboards.tensorboard_command("runs", "http://127.0.0.1:6006/") == "tensorboard --logdir runs"
    assert main(["dashboard", str(tmp_path / "runs"), "--address", "http://host:x"]) == 2
    assert "--address http://host:x: Port could not be cast to integer value" in capsys.readouterr().err


def test_runs_without_risk_scalars_get_no_aggregate(logdir: Path, capsys: pytest.CaptureFixture) -> None:
    """SB3's own PPO_1 and PPO_2 beside OrderGrad's runs: no mean_over_seeds run of them (it would hold an HParams
    experiment without metrics, which TensorBoard may take for the columns of the whole table)."""
    for name in ("PPO_1", "PPO_2"):
        writer = SummaryWriter(str(logdir / name))
        writer.add_scalar("rollout/ep_rew_mean", 1.0, 64)
        writer.close()
    result = dashboards.write_dashboards(logdir)
    assert len(result.groups["PPO"]) == 2 and "PPO" not in result.aggregates
    assert not (logdir / "PPO").exists()
    assert main(["dashboard", str(logdir)]) == 0
    assert re.search(r"\|\s+PPO \|\s+2 \|\s+- \(no eval_risk/\* or risk/\* scalars\)", capsys.readouterr().out)


def test_runs_logged_at_step_0_only(tmp_path: Path) -> None:
    """Runs whose only point is at step 0 (an evaluation before any training step): their share of training is
    100%, not a ValueError from numpy (0 / 0 steps)."""
    for seed in (0, 1):
        fake_run(tmp_path / "cvar" / f"seed{seed}_1", [0], [float(seed)], "cvar0.2", seed)
    run = read(dashboards.write_dashboards(tmp_path).aggregates["cvar"])
    assert curve(run, "eval_risk/cvar_0.2") == ([0], [0.5])
    assert curve(run, "methods/eval_risk/cvar_0.2") == ([100], [0.5])
    assert curve(run, "methods/eval_risk/cvar_0.2/max") == ([100], [1.0])


def test_an_aggregate_whose_method_lost_its_seeds_is_removed(logdir: Path) -> None:
    """A seed deleted after a first call: the method's mean_over_seeds (2 seeds, one of them gone) and the layout
    charting it do not stay behind as if current."""
    dashboards.write_dashboards(logdir)
    shutil.rmtree(logdir / "cvar-level" / "seed1_1")
    assert set(dashboards.write_dashboards(logdir).aggregates) == {"cvar"}
    assert not (logdir / "cvar-level" / "mean_over_seeds").exists() and (logdir / "cvar" / "mean_over_seeds").exists()
    shutil.rmtree(logdir / "cvar" / "seed1_1")
    assert dashboards.write_dashboards(logdir).aggregates == {} and not list(logdir.rglob("mean_over_seeds"))
    assert not list(logdir.glob("events.out.tfevents.*"))  # no layout charting methods without aggregates


def test_dashboards_of_a_method_dir_keep_the_aggregate_the_log_dir_above_has_there(logdir: Path) -> None:
    """dashboard runs, then dashboard runs/cvar: the second call deleted runs/cvar/mean_over_seeds as stale."""
    dashboards.write_dashboards(logdir)
    dashboards.write_dashboards(logdir / "cvar")
    assert (logdir / "cvar" / "mean_over_seeds").is_dir()


def test_seeds_without_hparams_give_an_aggregate_without_hparams(tmp_path: Path) -> None:
    """SB3's PPO with RiskEvalCallback logs eval_risk/* but no HParams: its mean_over_seeds gets the mean but no
    HParams record, whose only column would be 'seeds' (TensorBoard may take one run's columns for the table)."""
    for seed in (0, 1):
        writer = SummaryWriter(str(tmp_path / f"PPO_{seed + 1}"))
        writer.add_scalar("eval_risk/cvar_0.2", float(seed), 64)
        writer.close()
    run = read(dashboards.write_dashboards(tmp_path).aggregates["PPO"])
    assert curve(run, "eval_risk/cvar_0.2") == ([64], [0.5])
    assert not run.Tags()["tensors"]  # no _hparams_/experiment nor session
