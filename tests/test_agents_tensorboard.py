"""TensorBoard risk dashboards: tags read back with EventAccumulator, custom-scalars layout, eval-callback infos."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.logger import HumanOutputFormat, Logger, configure
from stable_baselines3.common.vec_env import DummyVecEnv
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2
from test_agents_channels import Capture  # tests/ is on sys.path under pytest
from test_agents_estimator import LONG, SHORT, RandomLengthEnv

from ordergrad_rl.agents import EpisodeInfoAggregator, OrderGradPPO, OrderGradREINFORCE, RiskEvalCallback
from ordergrad_rl.agents.common.hparams import hparam_value
from ordergrad_rl.core import lstat_value
from ordergrad_rl.risk import risk_profile

PROFILE_KEYS = sorted(risk_profile([0.0, 1.0]))


def read_run(run_dir: Path) -> EventAccumulator:
    accumulator = EventAccumulator(str(run_dir), size_guidance={"tensors": 0, "scalars": 0, "histograms": 0})
    accumulator.Reload()
    return accumulator


def read_layout(accumulator: EventAccumulator) -> layout_pb2.Layout:
    layout = layout_pb2.Layout()
    layout.ParseFromString(accumulator.Tensors("custom_scalars__config__")[0].tensor_proto.string_val[0])
    return layout


def test_risk_tags_histograms_and_layout(tmp_path: Path) -> None:
    eval_callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=20, eval_freq=4, n_eval_envs=4, seed=1)
    model = OrderGradREINFORCE(
        "MlpPolicy",
        "RiskyBandit-v0",
        objective="cvar0.25",
        n_episodes=16,
        n_envs=4,
        seed=0,
        tensorboard_log=str(tmp_path),
    )
    model.learn(16 * 3, callback=eval_callback, tb_log_name="cvar")
    (run_dir,) = tmp_path.iterdir()
    assert run_dir.name == "cvar_1"
    run = read_run(run_dir)
    tags = run.Tags()

    expected_scalars = {f"risk/{key}" for key in PROFILE_KEYS} | {"risk/objective"}
    expected_scalars |= {f"eval_risk/{key}" for key in PROFILE_KEYS} | {"eval/mean_reward", "eval/mean_ep_length"}
    expected_scalars |= {"rollout/ep_rew_mean", "train/policy_gradient_loss", "time/fps"}
    assert expected_scalars <= set(tags["scalars"])
    assert {"risk/episode_returns", "eval_risk/episode_returns"} <= set(tags["histograms"])
    assert not any("value_loss" in tag for tag in tags["scalars"])

    # The last logged training batch is the one still in the buffer.
    returns = model.rollout_buffer.episode_returns
    assert len(run.Scalars("risk/mean")) == 3
    np.testing.assert_allclose(run.Scalars("risk/mean")[-1].value, returns.mean(), rtol=1e-5)
    np.testing.assert_allclose(run.Scalars("risk/cvar_0.2")[-1].value, risk_profile(returns)["cvar_0.2"], rtol=1e-5)
    np.testing.assert_allclose(
        run.Scalars("risk/objective")[-1].value, lstat_value(returns, model.objective), rtol=1e-5
    )
    assert run.Histograms("risk/episode_returns")[-1].histogram_value.num == 16
    np.testing.assert_allclose(
        run.Scalars("eval_risk/quantile_0.5")[-1].value, eval_callback.last_profile["quantile_0.5"], rtol=1e-5
    )

    layout = read_layout(run)
    categories = {category.title: category for category in layout.category}
    assert set(categories) == {"risk (training batches)", "eval_risk (evaluation)"}
    for prefix, category in zip(("risk", "eval_risk"), categories.values(), strict=True):
        bands = sorted(
            (s.value, s.lower, s.upper)
            for chart in category.chart
            if chart.HasField("margin")
            for s in chart.margin.series
        )
        assert bands == [
            (f"{prefix}/quantile_0.5", f"{prefix}/quantile_0.05", f"{prefix}/quantile_0.95"),
            (f"{prefix}/quantile_0.5", f"{prefix}/quantile_0.25", f"{prefix}/quantile_0.75"),
        ]
        multiline = [tag for chart in category.chart if chart.HasField("multiline") for tag in chart.multiline.tag]
        assert rf"^{prefix}/cvar_" in multiline
        # every tag of the layout is a tag that was written
        for tag in (t for band in bands for t in band):
            assert tag in tags["scalars"]


def test_runs_in_one_log_dir_and_no_histogram_outside_tensorboard(tmp_path: Path) -> None:
    for objective in ("mean", "cvar0.25", "top2"):
        model = OrderGradPPO(
            "MlpPolicy",
            "RiskyBandit-v0",
            objective=objective,
            n_episodes=8,
            n_envs=2,
            seed=0,
            tensorboard_log=str(tmp_path),
            n_epochs=1,
            batch_size=8,
        )
        model.learn(8, tb_log_name=objective)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cvar0.25_1", "mean_1", "top2_1"]
    for run_dir in tmp_path.iterdir():
        assert read_layout(read_run(run_dir)).category[0].title == "risk (training batches)"

    model.set_logger(configure(str(tmp_path / "csv"), ["csv", "tensorboard"]))
    model.learn(8)
    with open(tmp_path / "csv" / "progress.csv") as handle:
        header = next(csv.reader(handle))
    assert "risk/cvar_0.1" in header and "risk/episode_returns" not in header


class NamedPairEnv(RandomLengthEnv):
    """RandomLengthEnv whose vector info entry ``pair`` has named components."""

    info_names = {"pair": ("one", "step_again")}


def test_eval_callback_info_aggregation(tmp_path: Path) -> None:
    # Episode lengths are 1 or 10; info["step"] counts steps, info["pair"] = [1, step].
    venv = DummyVecEnv([RandomLengthEnv] * 3)
    venv.seed(0)
    model = OrderGradREINFORCE("MlpPolicy", venv, n_episodes=6, seed=0, tensorboard_log=str(tmp_path))
    named = RiskEvalCallback(DummyVecEnv([NamedPairEnv] * 3), n_eval_episodes=30, eval_freq=None, warn=False)
    unnamed = RiskEvalCallback(
        DummyVecEnv([RandomLengthEnv] * 3), n_eval_episodes=30, eval_freq=None, warn=False, log_name="plain"
    )
    model.learn(1, callback=[named, unnamed], tb_log_name="info")
    named.evaluate()
    lengths = named.last_returns  # reward 1 per step: the return is the length
    assert lengths.size == 30 and set(np.unique(lengths)) <= {SHORT, LONG}
    info = named.last_info
    assert sorted(info) == sorted(f"{k}_{s}" for k in ("step", "one", "step_again") for s in ("mean", "final"))
    np.testing.assert_allclose(info["step_final"], lengths.mean())
    np.testing.assert_allclose(info["step_mean"], np.mean((lengths + 1) / 2))
    np.testing.assert_allclose(info["one_mean"], 1.0)
    np.testing.assert_allclose(info["step_again_final"], lengths.mean())
    assert named.evaluations_timesteps == [model.num_timesteps]

    # Without names, the vector is one histogram of its values over all steps (no pair_0_mean, pair_1_final ...).
    unnamed.evaluate()
    assert sorted(unnamed.last_info) == ["step_final", "step_mean"]
    run = read_run(tmp_path / "info_1")
    assert "plain_info/pair" in run.Tags()["histograms"] and "eval_info/pair" not in run.Tags()["histograms"]
    assert {"eval_info/one_mean", "eval_info/step_again_final"} <= set(run.Tags()["scalars"])
    assert not any(tag.startswith("plain_info/pair") for tag in run.Tags()["scalars"])
    histogram = run.Histograms("plain_info/pair")[-1].histogram_value
    steps = unnamed.last_returns.sum()  # one info per step: its two values 1 and t
    assert histogram.num == 2 * steps and histogram.min == 1.0 and histogram.max == unnamed.last_returns.max()


class LongInfoEnv(RandomLengthEnv):
    """RandomLengthEnv that also reports ``info["constraint_violation_cost_total"]`` (31 characters)."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward, terminated, truncated, {**info, "constraint_violation_cost_total": 1.0}


def test_eval_info_with_a_long_name_does_not_break_sb3s_stdout_table() -> None:
    # eval_info/constraint_violation_cost_total_mean and _final cut to the same text in the stdout/log table, which
    # raised "Key ... truncated to ... that already exists" at the evaluation's dump: they now skip that table only.
    model = OrderGradREINFORCE("MlpPolicy", RandomLengthEnv(), n_episodes=4, seed=0)
    stdout, capture = io.StringIO(), Capture()
    model.set_logger(Logger(folder=None, output_formats=[HumanOutputFormat(stdout), capture]))
    callback = RiskEvalCallback(LongInfoEnv(), n_eval_episodes=2, eval_freq=None, warn=False)
    callback.init_callback(model)
    callback.evaluate()
    assert capture.rows[-1]["eval_info/constraint_violation_cost_total_final"] == 1.0
    assert capture.rows[-1]["eval_info/constraint_violation_cost_total_mean"] == 1.0
    assert "step_final" in stdout.getvalue() and "constraint_violation" not in stdout.getvalue()


def test_info_aggregator_skips_wrapper_and_non_numeric_entries() -> None:
    aggregator = EpisodeInfoAggregator(n_envs=1)
    info = {
        "episode": {"r": 1.0},
        "terminal_observation": np.zeros(3),
        "arm": "safe",
        "weights": np.ones(30),
        "drawdown": -0.5,
        "TimeLimit.truncated": False,
    }
    aggregator({"i": 0, "info": info, "done": True}, {})
    assert aggregator.summary() == {"drawdown_mean": -0.5, "drawdown_final": -0.5}
    assert list(aggregator.histograms()) == ["weights"] and aggregator.histograms()["weights"].shape == (30,)
    names = [f"w{j}" for j in range(30)]
    chosen = EpisodeInfoAggregator(n_envs=1, keys=["weights"], names={"weights": names})
    chosen({"i": 0, "info": info, "done": True}, {})
    assert len(chosen.summary()) == 60 and chosen.summary()["w29_final"] == 1.0
    assert chosen.histograms() == {}
    # Names that do not match the vector's size are not used (the components cannot be told apart).
    wrong = EpisodeInfoAggregator(n_envs=1, names={"weights": ["a", "b"]})
    wrong({"i": 0, "info": info, "done": True}, {})
    assert "weights" in wrong.histograms()


def test_an_entry_of_the_last_step_only_has_its_value_as_its_step_mean() -> None:
    aggregator = EpisodeInfoAggregator(n_envs=1)
    for step in range(4):  # is_success only at the episode's last step (TargetSum-v0's), cost at every step
        info = {"cost": float(step)} | ({"is_success": True} if step == 3 else {})
        aggregator({"i": 0, "info": info, "done": step == 3}, {})
    summary = aggregator.summary()
    assert summary["is_success_mean"] == summary["is_success_final"] == 1.0  # not 1 / 4
    assert summary["cost_mean"] == 1.5 and summary["cost_final"] == 3.0


def test_eval_callback_writes_its_layout_for_plain_sb3_models(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=4, eval_freq=8, log_name="deploy")
    PPO("MlpPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, n_epochs=1, tensorboard_log=str(tmp_path)).learn(
        16, callback=callback, tb_log_name="sb3"
    )
    run = read_run(tmp_path / "sb3_1")
    assert [category.title for category in read_layout(run).category] == ["deploy_risk"]
    assert {"deploy_risk/cvar_0.1", "deploy/mean_reward"} <= set(run.Tags()["scalars"])


def read_hparams(accumulator: EventAccumulator) -> tuple[dict, list[str], list[str]]:
    """The run's hparams (name -> value, in column order), the metric tags of its HParams experiment and the
    hparams flagged ``differs`` (the columns TensorBoard ticks by default)."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    content = accumulator.PluginTagToContent("hparams")
    start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"])
    experiment = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/experiment"])
    values = {}  # in the experiment's column order (the session's map has none)
    for info in experiment.experiment.hparam_infos:
        value = start.session_start_info.hparams[info.name]
        values[info.name] = value.string_value if value.WhichOneof("kind") == "string_value" else value.number_value
    flagged = [info.name for info in experiment.experiment.hparam_infos if info.differs]
    return values, [info.name.tag for info in experiment.experiment.metric_infos], flagged


def test_default_run_name_is_algorithm_and_objective_and_slashes_group_runs(tmp_path: Path) -> None:
    kwargs = dict(n_episodes=8, n_envs=2, seed=0, tensorboard_log=str(tmp_path), n_epochs=1, batch_size=8)
    cvar = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", **kwargs)
    cvar.learn(8)
    cvar.learn(8)
    OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=8, tensorboard_log=str(tmp_path)).learn(8)
    cvar.learn(8, tb_log_name="mine")  # an explicit name wins
    cvar.learn(8, tb_log_name=7)  # formatted as SB3 formats it (it raised AttributeError: no 'rpartition')
    for _ in range(2):
        cvar.learn(8, tb_log_name="OrderGradPPO_cvar/seed0")
    runs = sorted(str(p.parent.relative_to(tmp_path)) for p in tmp_path.rglob("events.out.tfevents.*"))
    assert runs == [
        "7_1",
        "OrderGradPPO_cvar/seed0_1",
        "OrderGradPPO_cvar/seed0_2",
        "OrderGradPPO_cvar0.25@4_1",
        "OrderGradPPO_cvar0.25@4_2",
        "OrderGradREINFORCE_mean_1",
        "mine_1",
    ]
    assert cvar.tensorboard_log == str(tmp_path)  # the parent directory was only used for that run
    # GCVaR trains at objective_spec cvar0.25@k: its name says gcvar, or it reads as the OrderGrad CVaR run
    gcvar = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="gcvar0.25", n_episodes=8)
    assert gcvar.run_name() == "OrderGradPPO_gcvar0.25" and gcvar.hparams()["objective"] == "gcvar0.25"
    long = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", objective=list(np.linspace(0, 1, 30) / 15), n_episodes=32)
    assert len(long.run_name()) <= len("OrderGradREINFORCE_") + 40 and "[" not in long.run_name()


def test_hparams_carry_the_objective_and_the_final_risk_values_as_metrics(tmp_path: Path) -> None:
    eval_callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=8, eval_freq=4, n_eval_envs=4, seed=1)
    model = OrderGradPPO(
        "MlpPolicy",
        "RiskyBandit-v0",
        objective="cvar0.25",
        n_episodes=16,
        n_envs=4,
        seed=3,
        learning_rate=0.01,
        tensorboard_log=str(tmp_path),
        n_epochs=1,
    )
    model.learn(32, callback=eval_callback)
    run = read_run(tmp_path / "OrderGradPPO_cvar0.25@8_1")
    hparams, metrics, flagged = read_hparams(run)
    expected = {"algorithm": "OrderGradPPO", "env": "RiskyBandit-v0", "objective": "cvar0.25@8", "k": 8.0}
    expected |= {"n_episodes": 16.0, "n_envs": 4.0, "learning_rate": 0.01, "seed": 3.0, "batch_size": 64.0}
    expected |= {"normalize_advantage": "running", "reward_to_go": "False", "advantage": "episodic"}
    assert expected.items() <= hparams.items()
    # TensorBoard ticks the (first five) columns flagged "differs", else the first five by name (advantage, ...).
    assert sorted(flagged) == ["algorithm", "k", "n_episodes", "objective", "risk_schedule"]
    keys = ("mean", "std", "min", "cvar_0.05", "cvar_0.1", "cvar_0.2", "quantile_0.5")
    assert metrics == [f"eval_risk/{key}" for key in keys] + [f"risk/{key}" for key in keys] + ["risk/objective"]
    # Every metric is a scalar of the run: the dashboard shows its last value, the final risk profile.
    scalars = set(run.Tags()["scalars"])
    assert set(metrics) <= scalars
    final = run.Scalars("eval_risk/cvar_0.1")[-1].value
    assert final == np.float32(eval_callback.last_profile["cvar_0.1"])
    # TensorBoard takes the metric columns of the whole table from one run, chosen anew at every start: a run
    # without evaluations lists the same columns (its eval_risk cells stay empty), else it could hide them all.
    without_eval = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=8, tensorboard_log=str(tmp_path))
    without_eval.learn(8, tb_log_name="plain")
    assert read_hparams(read_run(tmp_path / "plain_1"))[1] == metrics


def session_starts(run_dir: Path) -> list[dict]:
    """The argument values of every HParams session start in the event files of ``run_dir``, oldest file first."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    starts = []
    for path in sorted(run_dir.glob("*tfevents*")):
        for event in EventFileLoader(str(path)).Load():
            for value in event.summary.value:
                if value.tag == metadata.SESSION_START_INFO_TAG:
                    data = plugin_data_pb2.HParamsPluginData.FromString(value.metadata.plugin_data.content)
                    starts.append({name: v.number_value for name, v in data.session_start_info.hparams.items()})
    return starts


def test_a_continued_run_keeps_the_hparams_record_of_its_first_learn_call(tmp_path: Path) -> None:
    """TensorBoard keeps a run's first session start: a continued run (``reset_num_timesteps=False``, in this process or
    after ``load``) writes no other, and a new run (``_2``) its own."""
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
    from tensorboard.context import RequestContext
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", n_episodes=8, learning_rate=0.01, tensorboard_log=str(tmp_path)
    )
    model.learn(8, tb_log_name="run")
    model.learn(8, tb_log_name="run", reset_num_timesteps=False)
    model.save(tmp_path / "model")
    loaded = OrderGradREINFORCE.load(
        tmp_path / "model", "RiskyBandit-v0", learning_rate=0.5, tensorboard_log=str(tmp_path)
    )
    loaded.learn(8, tb_log_name="run", reset_num_timesteps=False)
    assert [start["learning_rate"] for start in session_starts(tmp_path / "run_1")] == [0.01]
    # What TensorBoard's HParams dashboard reads: its data provider's metadata of the run, the first record.
    multiplexer = plugin_event_multiplexer.EventMultiplexer()
    multiplexer.AddRunsFromDirectory(str(tmp_path))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(tmp_path))
    shown = provider.list_tensors(RequestContext(), experiment_id="", plugin_name="hparams")
    content = shown["run_1"][metadata.SESSION_START_INFO_TAG].plugin_content
    assert (
        plugin_data_pb2.HParamsPluginData.FromString(content).session_start_info.hparams["learning_rate"].number_value
        == 0.01
    )
    loaded.learn(8, tb_log_name="run")  # a new run
    assert [start["learning_rate"] for start in session_starts(tmp_path / "run_2")] == [0.5]
    # A logger of one's own is one run directory, whichever reset_num_timesteps: one record in it.
    custom = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=8)
    custom.set_logger(configure(str(tmp_path / "custom"), ["tensorboard"]))
    custom.learn(8)
    custom.learn(8)
    assert len(session_starts(tmp_path / "custom")) == 1


def test_hparams_record_gsde_and_ppos_clipping(tmp_path: Path) -> None:
    """``use_sde``, ``sde_sample_freq``, ``clip_range`` (a schedule, as SB3 keeps it) and ``target_kl`` are columns
    of the HParams table where the algorithm has them: runs differing only in these were not told apart there."""
    kwargs = dict(objective="cvar0.5", n_episodes=2, tensorboard_log=str(tmp_path), use_sde=True, sde_sample_freq=4)
    ppo = OrderGradPPO("MlpPolicy", "Pendulum-v1", n_epochs=1, clip_range=lambda p: 0.3 * p, target_kl=0.02, **kwargs)
    ppo.learn(1, tb_log_name="ppo")
    hparams = read_hparams(read_run(tmp_path / "ppo_1"))[0]
    expected = {"use_sde": "True", "sde_sample_freq": 4.0, "clip_range": "0.3 -> 0", "target_kl": 0.02}
    assert expected.items() <= hparams.items()
    # None has no TensorBoard form: left out of the table (an empty cell), as seed=None and group_size=None
    assert hparam_value(OrderGradPPO("MlpPolicy", "Pendulum-v1", n_episodes=2).hparams()["target_kl"]) is None
    reinforce = OrderGradREINFORCE("MlpPolicy", "Pendulum-v1", n_episodes=2).hparams()
    assert (reinforce["use_sde"], reinforce["sde_sample_freq"]) == (False, -1)
    assert "clip_range" not in reinforce and "target_kl" not in reinforce  # not REINFORCE's


def test_hparams_show_a_schedule_by_its_values_at_the_start_and_the_end(tmp_path: Path) -> None:
    """A decayed ``ent_coef`` or ``learning_rate`` (SB3's callable of ``progress_remaining``) is a column of the
    HParams table, not left out: runs with and without the decay are told apart."""
    model = OrderGradPPO(
        "MlpPolicy",
        "RiskyBandit-v0",
        objective="cvar0.25",
        n_episodes=8,
        learning_rate=lambda progress: 3e-4 * progress,
        ent_coef=lambda progress: 0.01,
        tensorboard_log=str(tmp_path),
        n_epochs=1,
    )
    model.learn(8, tb_log_name="decayed")
    hparams = read_hparams(read_run(tmp_path / "decayed_1"))[0]
    assert hparams["learning_rate"] == "0.0003 -> 0" and hparams["ent_coef"] == "0.01"
    assert hparam_value(lambda progress: {"lr": progress}) is None  # returns no number: not a schedule
    assert hparam_value(lambda: 1.0) is None and hparam_value(len) is None  # takes no progress / no float
    assert hparam_value(lambda progress: True) is None
    # NumPy scalars (a sweep's grid, a value computed with NumPy) as Python's: np.bool_ is "True", not 1.0.
    assert hparam_value(np.bool_(True)) == "True" and hparam_value(np.int64(3)) == 3


def test_periodic_evaluation_also_evaluates_the_final_policy() -> None:
    """A run shorter than one evaluation period still logs its final policy's eval_risk/* (issue 22: the demo's
    OrderGradPPO runs made 49 updates against a 50-update period and logged none)."""
    model = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4, seed=0)
    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=5, eval_freq=10_000)
    model.learn(8, callback=callback)
    assert callback.evaluations_timesteps == [model.num_timesteps] and callback.last_returns.size == 5
    periodic = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=5, eval_freq=4)
    model.learn(8, callback=periodic)
    assert periodic.evaluations_timesteps[-1] == model.num_timesteps
    assert len(set(periodic.evaluations_timesteps)) == len(periodic.evaluations_timesteps)  # never twice at the end


def test_sb3s_stop_callbacks_work_after_a_risk_evaluation() -> None:
    """``callback_after_eval`` with SB3's stoppers, which read ``parent.best_mean_reward`` (AttributeError before)."""
    from stable_baselines3.common.callbacks import StopTrainingOnNoModelImprovement, StopTrainingOnRewardThreshold

    model = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4, seed=0)
    stop = StopTrainingOnRewardThreshold(reward_threshold=-np.inf)  # met at the first evaluation
    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=5, eval_freq=4, callback_after_eval=stop)
    model.learn(400, callback=callback)
    assert model.num_timesteps < 400 and len(callback.evaluations_timesteps) == 1
    assert callback.last_mean_reward == callback.best_mean_reward == callback.last_returns.mean()
    patience = StopTrainingOnNoModelImprovement(max_no_improvement_evals=1)
    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=5, eval_freq=4, callback_after_eval=patience)
    model.learn(400, callback=callback)
    assert callback.best_mean_reward == max(returns.mean() for returns in callback.evaluations_returns)


def test_the_run_name_has_the_k_the_first_learn_call_sized(tmp_path: Path) -> None:
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", tensorboard_log=str(tmp_path), n_epochs=1, seed=0)
    assert model.n_episodes == 32 and str(model.objective) == "cvar0.2@16"
    model.learn(1_000)  # a small budget halves the rollout to 16 episodes: k = 8
    assert model.n_episodes == 16
    assert [p.name for p in tmp_path.iterdir()] == ["OrderGradPPO_cvar0.2@8_1"]


class SuccessEnv(gym.Env):
    """Three steps; the last one succeeds (reward 1, ``info["is_success"]`` True) if its action is 1."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        done = self.t == 3
        success = done and action == 1
        return np.zeros(1, np.float32), float(success), done, False, {"is_success": success} if done else {}


@pytest.mark.parametrize("info_keys", [None, ()])
def test_eval_callback_logs_the_success_rate_as_sb3(tmp_path: Path, info_keys: tuple | None) -> None:
    """eval/success_rate from the episodes' final info["is_success"], as SB3's EvalCallback logs it (it was not
    written: only eval_info/is_success_*, and nothing with info_keys=())."""
    from stable_baselines3 import PPO

    model = PPO("MlpPolicy", SuccessEnv(), n_steps=16, batch_size=16, seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    callback = RiskEvalCallback(SuccessEnv(), n_eval_episodes=8, eval_freq=16, deterministic=False, info_keys=info_keys)
    model.learn(16, callback=callback)
    model.logger.close()
    rates = [row["eval/success_rate"] for row in csv.DictReader((tmp_path / "progress.csv").read_text().splitlines())]
    assert len(callback.last_successes) == 8
    assert [float(rate) for rate in rates if rate] == [np.mean(callback.last_successes)]
    assert callback.last_successes == list(callback.last_returns == 1)


def test_eval_callback_writes_sb3s_evaluations_npz_and_best_model(tmp_path: Path) -> None:
    """best_model_save_path, log_path and callback_on_new_best as SB3's EvalCallback (a TypeError before): on the
    same training and eval envs, the same evaluations.npz and the same best_model.zip saves."""
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import EvalCallback
    from stable_baselines3.common.env_util import make_vec_env

    def run(callback_class: type, path: Path) -> None:
        model = PPO("MlpPolicy", make_vec_env("CartPole-v1", 2, seed=0), n_steps=16, batch_size=32, seed=0)
        eval_env = make_vec_env("CartPole-v1", 2, seed=1)
        callback = callback_class(
            eval_env, n_eval_episodes=3, eval_freq=8, log_path=str(path), best_model_save_path=str(path)
        )
        model.learn(64, callback=callback)

    run(EvalCallback, tmp_path / "sb3")
    run(RiskEvalCallback, tmp_path / "ours")
    sb3, ours = np.load(tmp_path / "sb3" / "evaluations.npz"), np.load(tmp_path / "ours" / "evaluations.npz")
    assert sorted(ours) == sorted(sb3) == ["ep_lengths", "results", "timesteps"]
    for key in sb3:
        np.testing.assert_array_equal(ours[key], sb3[key])
    assert (tmp_path / "ours" / "best_model.zip").read_bytes()[:4] == b"PK\x03\x04"


def test_eval_callback_selects_the_best_model_by_a_risk_metric(tmp_path: Path) -> None:
    """best_metric="cvar_0.2": a new best is a better CVaR; SB3's StopTrainingOnRewardThreshold reads it."""
    from stable_baselines3.common.callbacks import BaseCallback, StopTrainingOnRewardThreshold

    with pytest.raises(ValueError, match="best_metric must be a key of the risk profile"):
        RiskEvalCallback("RiskyBandit-v0", best_metric="cvar0.2")

    class RecordNewBest(BaseCallback):
        def _on_step(self) -> bool:
            self.seen.append((self.num_timesteps, self.parent.best_mean_reward))
            return True

    new_best = RecordNewBest()
    new_best.seen = []
    model = OrderGradREINFORCE("MlpPolicy", "RiskyBandit-v0", n_episodes=4, seed=0)
    callback = RiskEvalCallback(
        "RiskyBandit-v0",
        n_eval_episodes=10,
        eval_freq=4,
        deterministic=False,
        seed=0,
        best_metric="cvar_0.2",
        best_model_save_path=str(tmp_path),
        log_path=str(tmp_path),
        callback_on_new_best=new_best,
    )
    model.learn(40, callback=callback)
    cvars = [risk_profile(returns)["cvar_0.2"] for returns in callback.evaluations_returns]
    improved = [i for i, value in enumerate(cvars) if value > max(cvars[:i], default=-np.inf)]
    assert new_best.seen == [(callback.evaluations_timesteps[i], cvars[i]) for i in improved]
    assert callback.best_mean_reward == max(cvars) and callback.last_mean_reward == cvars[-1]
    assert (tmp_path / "best_model.zip").exists()
    np.testing.assert_array_equal(np.load(tmp_path / "evaluations.npz")["results"], callback.evaluations_returns)

    stop = StopTrainingOnRewardThreshold(reward_threshold=-np.inf)  # met at the first new best
    callback = RiskEvalCallback(
        "RiskyBandit-v0", n_eval_episodes=5, eval_freq=4, best_metric="min", callback_on_new_best=stop
    )
    model.learn(400, callback=callback)
    assert model.num_timesteps < 400 and len(callback.evaluations_timesteps) == 1


class EndlessEnv(SuccessEnv):
    """Never ends (no time limit); a RuntimeError after 1,000 steps stands for waiting forever."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        if self.t > 1_000:
            raise RuntimeError("the evaluation is still waiting for the episode to end")
        return np.zeros(1, np.float32), 0.0, False, False, {}


def test_an_eval_episode_that_never_ends_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """An eval env without a time limit made the evaluation (and training) wait forever, silently, as SB3's
    evaluate_policy does; training's bound on an episode now stops it with an error that says so."""
    import ordergrad_rl.agents.common.buffers

    monkeypatch.setattr(ordergrad_rl.agents.common.buffers, "MAX_EPISODE_STEPS", 50)
    model = OrderGradREINFORCE("MlpPolicy", DummyVecEnv([SuccessEnv]), n_episodes=4, seed=0)  # the eval env's spaces
    callback = RiskEvalCallback(DummyVecEnv([EndlessEnv] * 2), n_eval_episodes=4, eval_freq=4, warn=False)
    with pytest.raises(ValueError, match="the episode of eval env 0 has not ended after 50 steps"):
        model.learn(8, callback=callback)


class NaNRewardEnv(SuccessEnv):
    """The second step's reward is NaN."""

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, float("nan") if self.t == 2 else reward, terminated, truncated, info


def test_a_nan_eval_return_is_named_as_the_eval_envs() -> None:
    """A NaN reward of the eval env stopped training with risk_profile's bare 'returns contain NaN or inf'."""
    model = OrderGradREINFORCE("MlpPolicy", DummyVecEnv([SuccessEnv]), n_episodes=4, seed=0)  # the eval env's spaces
    callback = RiskEvalCallback(NaNRewardEnv(), n_eval_episodes=3, eval_freq=4)
    with pytest.raises(ValueError, match="3 of the 3 evaluation episodes have a NaN or infinite return .*eval env"):
        model.learn(8, callback=callback)


def test_an_unseeded_eval_id_with_a_native_batch_runs_its_episodes_as_one_batch() -> None:
    """``RiskEvalCallback("SyntheticTailRiskDeploy-v0")`` ran its episodes one after another on one env; without a
    seed it now builds ``n_eval_episodes`` envs, one NumPy batch. A seed keeps one env, whose episodes it fixes (env
    ``i`` of a batch is seeded ``seed + i``), and an id without a native batch, or ``n_eval_envs``, keeps its size."""
    model = OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.2", n_episodes=8, seed=0)
    model.set_logger(configure(None, []))
    batch = RiskEvalCallback("SyntheticTailRiskDeploy-v0", n_eval_episodes=10, eval_freq=None)
    assert batch.eval_env.num_envs == 10
    batch.init_callback(model)
    assert batch.evaluate() and batch.last_returns.size == 10
    seeded = [RiskEvalCallback("SyntheticTailRiskDeploy-v0", n_eval_episodes=10, eval_freq=None, seed=3)]
    seeded.append(RiskEvalCallback("SyntheticTailRiskDeploy-v0", n_eval_episodes=10, eval_freq=None, seed=3))
    assert [callback.eval_env.num_envs for callback in seeded] == [1, 1]
    for callback in seeded:
        callback.init_callback(model)
        callback.evaluate()
    np.testing.assert_array_equal(seeded[0].last_returns, seeded[1].last_returns)
    assert RiskEvalCallback("SyntheticTailRiskDeploy-v0", n_eval_episodes=10, n_eval_envs=3).eval_env.num_envs == 3
    assert RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=10).eval_env.num_envs == 1


def test_evaluate_on_a_model_without_a_logger_names_set_logger() -> None:
    """``init_callback(model)`` then ``evaluate()``, as the callback's own error advises, on a model that has not
    learned: SB3's logger property raised AttributeError: 'OrderGradPPO' object has no attribute '_logger'."""
    model = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", objective="cvar0.25", n_episodes=8, seed=0)
    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=4, eval_freq=None)
    callback.init_callback(model)
    with pytest.raises(RuntimeError, match=r"model.set_logger"):
        callback.evaluate()
    model.set_logger(configure(None, []))
    assert callback.evaluate() and callback.last_returns.size == 4


@pytest.mark.parametrize("value_baseline", ["history", False, True])
def test_train_loss_is_the_loss_the_update_minimizes(tmp_path: Path, value_baseline: str | bool) -> None:
    # One minibatch per update (16 one-step episodes, batch_size=16, one epoch): SB3's train/loss, the last
    # minibatch's, is then its policy loss plus the entropy and value terms, which train/ logs as means. The history
    # baseline leaves the value head to the tied critic (critic_when_tied, fitted in the update: its value term) or
    # untrained: train/loss once held 0.5 * mean(weight^2) of a value loss against the untrained head.
    model = OrderGradPPO(
        "MlpPolicy",
        "RiskyBandit-v0",
        objective="cvar0.25",
        n_episodes=16,
        batch_size=16,
        n_epochs=1,
        seed=0,
        value_baseline=value_baseline,
    )
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(16 * 3)
    rows = [row for row in csv.DictReader((tmp_path / "progress.csv").read_text().splitlines()) if row["train/loss"]]
    assert len(rows) == 2
    for row in rows:
        critic = value_baseline is True or model.critic_when_tied
        value_term = model.vf_coef * float(row["train/value_loss"]) if critic else 0.0
        expected = float(row["train/policy_gradient_loss"]) + float(row["train/ent_coef"]) * float(
            row["train/entropy_loss"]
        )
        np.testing.assert_allclose(float(row["train/loss"]), expected + value_term, atol=1e-6)
