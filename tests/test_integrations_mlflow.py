"""MLflowOutputFormat: SB3's MLflow recipe with the agents' keys renamed to names MLflow takes (a fake ``mlflow``)."""

from __future__ import annotations

import re
import sys
import types

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv
from test_agents_passk_eval import Coins  # tests/ is on sys.path under pytest

from ordergrad_rl.agents import OrderGradREINFORCE, PassAtKEvalCallback
from ordergrad_rl.integrations.mlflow import MLflowOutputFormat, mlflow_key

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: The metric names of older MLflow releases (``mlflow.utils.validation``), the strictest: recent ones take colons too.
MLFLOW_NAME = re.compile(r"^[/\w.\- ]*$", re.ASCII)


@pytest.fixture
def logged(monkeypatch) -> list[tuple[dict[str, float], int]]:
    """A stand-in ``mlflow`` module recording each ``log_metrics(metrics, step)`` call, refusing names as MLflow."""
    calls: list[tuple[dict[str, float], int]] = []

    def log_metrics(metrics: dict[str, float], step: int | None = None) -> None:
        bad = [name for name in metrics if not MLFLOW_NAME.match(name)]
        if bad:
            raise ValueError(f"Invalid metric name: {bad[0]!r}")  # MLflow's MlflowException
        calls.append((dict(metrics), step))

    fake = types.ModuleType("mlflow")
    fake.log_metrics = log_metrics  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "mlflow", fake)
    return calls


def test_the_agents_keys_reach_mlflow_under_names_it_takes(logged) -> None:
    """PassAtKEvalCallback logs ``eval_pass@k/k=1``, which MLflow refuses (``@`` and ``=``): SB3's recipe, a KVWriter
    calling ``mlflow.log_metric(key, ...)``, stopped training there. Every scalar arrives, renamed where needed, at
    the logger's step; histograms do not."""
    model = OrderGradREINFORCE("MlpPolicy", DummyVecEnv([Coins] * 4), objective="mean", n_episodes=8, seed=0)
    model.set_logger(Logger(folder=None, output_formats=[MLflowOutputFormat()]))
    model.learn(40, callback=PassAtKEvalCallback(DummyVecEnv([Coins] * 2), n_samples=2, ks=[1, 2], eval_freq=2))
    names = set().union(*(metrics for metrics, _ in logged))
    assert {"eval_pass_k/k_1", "eval_pass_k/k_2", "risk/cvar_0.2", "time/total_timesteps"} <= names
    assert "risk/episode_returns" not in names  # a histogram
    assert [step for _, step in logged] == sorted(step for _, step in logged) and logged[-1][1] == model.num_timesteps


def test_keys_are_renamed_skipped_or_refused_as_documented(logged) -> None:
    assert mlflow_key("eval_pass@k/k=5") == "eval_pass_k/k_5" and mlflow_key("risk/cvar_0.2 x-y") == "risk/cvar_0.2 x-y"
    writer = MLflowOutputFormat()
    values = {"a@b": np.float32(1.5), "n": 3, "flag": True, "text": "x", "hist": th.ones(3), "hidden": 2.0}
    writer.write(values, {key: None for key in values} | {"hidden": ("mlflow",)}, step=7)
    assert logged == [({"a_b": 1.5, "n": 3.0}, 7)]
    with pytest.raises(ValueError, match=r"the logger keys 'k=1' and 'k@1' are both 'k_1' in MLflow"):
        writer.write({"k=1": 1.0, "k@1": 2.0}, {"k=1": None, "k@1": None})


def test_without_mlflow_the_writer_names_the_package(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "mlflow", None)  # an import of it raises ImportError
    with pytest.raises(ImportError, match="MLflowOutputFormat needs MLflow: pip install mlflow"):
        MLflowOutputFormat()
