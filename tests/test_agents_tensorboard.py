"""TensorBoard risk dashboards: tags read back with EventAccumulator, custom-scalars layout, eval-callback infos."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.custom_scalar import layout_pb2
from test_agents_estimator import LONG, SHORT, RandomLengthEnv  # tests/ is on sys.path under pytest

from ordergrad_rl.agents import EpisodeInfoAggregator, OrderGradPPO, OrderGradREINFORCE, RiskEvalCallback
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


def test_eval_callback_info_aggregation() -> None:
    # Episode lengths are 1 or 10; info["step"] counts steps, info["pair"] = [1, step].
    venv = DummyVecEnv([RandomLengthEnv] * 3)
    venv.seed(0)
    model = OrderGradREINFORCE("MlpPolicy", venv, n_episodes=6, seed=0)
    callback = RiskEvalCallback(DummyVecEnv([RandomLengthEnv] * 3), n_eval_episodes=30, eval_freq=None, warn=False)
    model.learn(1, callback=callback)
    callback.evaluate()
    lengths = callback.last_returns  # reward 1 per step: the return is the length
    assert lengths.size == 30 and set(np.unique(lengths)) <= {SHORT, LONG}
    info = callback.last_info
    np.testing.assert_allclose(info["step_final"], lengths.mean())
    np.testing.assert_allclose(info["step_mean"], np.mean((lengths + 1) / 2))
    np.testing.assert_allclose(info["pair_0_mean"], 1.0)
    np.testing.assert_allclose(info["pair_1_final"], lengths.mean())
    assert callback.evaluations_timesteps == [model.num_timesteps]


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
    chosen = EpisodeInfoAggregator(n_envs=1, keys=["weights"])
    chosen({"i": 0, "info": info, "done": True}, {})
    assert len(chosen.summary()) == 60  # explicitly requested vectors are kept whatever their size


def test_eval_callback_writes_its_layout_for_plain_sb3_models(tmp_path: Path) -> None:
    from stable_baselines3 import PPO

    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=4, eval_freq=8, log_name="deploy")
    PPO("MlpPolicy", "RiskyBandit-v0", n_steps=8, batch_size=8, n_epochs=1, tensorboard_log=str(tmp_path)).learn(
        16, callback=callback, tb_log_name="sb3"
    )
    run = read_run(tmp_path / "sb3_1")
    assert [category.title for category in read_layout(run).category] == ["deploy_risk"]
    assert {"deploy_risk/cvar_0.1", "deploy/mean_reward"} <= set(run.Tags()["scalars"])
