"""The sb3-contrib variants' defaults taken from OrderGradPPO: the history baseline and the rollout sized by the
budget (OrderGradMaskablePPO and OrderGradRecurrentPPO)."""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import StopAtOnce, check_history_advantages, collect_one_rollout, save_from_before
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.logger import configure

from ordergrad_rl.agents import OrderGradMaskablePPO, OrderGradRecurrentPPO
from ordergrad_rl.agents.common.arguments import BASELINE_LAMBDA

CONTRIB = [OrderGradMaskablePPO, OrderGradRecurrentPPO]


def masked(env_id: str) -> gym.Env:
    """``env_id`` with a mask that allows every action (sb3-contrib's ``ActionMasker``)."""
    return ActionMasker(gym.make(env_id), lambda env: np.ones(env.action_space.n, dtype=bool))


def contrib_model(cls: type, env_id: str, **kwargs):
    """``cls`` on ``env_id`` with its MLP policy: every action allowed for the maskable one, a small LSTM for the
    recurrent one."""
    if cls is OrderGradMaskablePPO:
        return cls("MlpPolicy", masked(env_id), **kwargs)
    return cls("MlpLstmPolicy", env_id, policy_kwargs={"lstm_hidden_size": 8}, **kwargs)


@pytest.mark.parametrize(
    ("env_id", "kwargs", "expected"),
    [
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2"}, "history"),  # short categorical episodes
        ("GuardedMaze-v0", {"objective": "cvar0.2"}, "history"),
        ("CartPole-v1", {"objective": "cvar0.2"}, "history"),  # long episodes, as OrderGradPPO's
        ("RiskyLavaGrid-v0", {"objective": "mean"}, False),  # the mean: its reward-to-go is its per-step credit
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2", "group_size": 4, "n_episodes": 16}, False),  # groups
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2", "value_baseline": False}, False),  # the user's value
    ],
)
@pytest.mark.parametrize("cls", CONTRIB)
def test_the_default_baseline_is_ordergrad_ppos(cls, env_id, kwargs, expected):
    model = contrib_model(cls, env_id, **kwargs)
    assert model.value_baseline == expected
    assert model.baseline_lambda == (BASELINE_LAMBDA if expected else 1.0)
    assert (getattr(model, "history_baseline", None) is not None) == bool(expected)
    assert model.hparams()["value_baseline"] == (expected or "none")


@pytest.mark.parametrize("cls", CONTRIB)
def test_the_state_baseline_and_bad_values_are_refused(cls):
    with pytest.raises(
        ValueError, match=f"value_baseline=True regresses the policy's value head, which {cls.__name__}"
    ):
        contrib_model(cls, "RiskyLavaGrid-v0", value_baseline=True)
    with pytest.raises(ValueError, match="value_baseline must be True, False, 'history' or None, got 'state'"):
        contrib_model(cls, "RiskyLavaGrid-v0", value_baseline="state")
    with pytest.raises(ValueError, match="baseline_lambda=0.9 needs a per-step baseline"):
        contrib_model(cls, "RiskyLavaGrid-v0", value_baseline=False, baseline_lambda=0.9)


def test_the_recurrent_default_takes_no_value_head_on_continuous_actions():
    """OrderGradPPO's rule gives ``V(s)`` on continuous actions without a time limit; the recurrent variant trains no
    critic, so there it keeps whole-episode weights, even with the critic LSTM asked for."""
    for policy_kwargs in ({"lstm_hidden_size": 8}, {"lstm_hidden_size": 8, "critic": "value"}):
        assert (
            OrderGradRecurrentPPO("MlpLstmPolicy", "SyntheticTailRisk-v0", policy_kwargs=policy_kwargs).value_baseline
            is False
        )


@pytest.mark.parametrize("cls", CONTRIB)
def test_advantages_are_the_weights_over_the_baseline_predicted_before_the_rollout(cls, tmp_path):
    model = contrib_model(
        cls, "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=16, normalize_advantage=False, seed=0
    )
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2_000)  # a fitted baseline, with nonzero running statistics
    before = copy.deepcopy(model.history_baseline)
    collect_one_rollout(model)
    check_history_advantages(model, before, BASELINE_LAMBDA)
    assert "train/baseline_loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]


@pytest.mark.parametrize("cls", CONTRIB)
def test_the_baseline_is_saved_loaded_and_resumed_and_older_saves_have_none(cls, tmp_path):
    model = contrib_model(cls, "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, seed=0)
    env = model.get_env()
    model.learn(200)
    model.save(tmp_path / "model.zip")
    loaded = cls.load(tmp_path / "model.zip", env=env)
    assert (loaded.value_baseline, loaded.baseline_lambda) == ("history", BASELINE_LAMBDA)
    for mine, theirs in zip(model.history_baseline.parameters(), loaded.history_baseline.parameters(), strict=True):
        assert th.equal(mine, theirs)
    assert loaded.history_baseline.optimizer.state_dict()["state"]  # Adam's moments came along
    loaded.learn(100, reset_num_timesteps=False)
    # A save of an earlier release (no value_baseline in its data) trained on whole-episode weights and resumes so.
    plain = contrib_model(cls, "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline=False)
    plain.save(tmp_path / "plain.zip")
    save_from_before(tmp_path / "plain.zip", tmp_path / "old.zip", "value_baseline", "baseline_lambda")
    old = cls.load(tmp_path / "old.zip", env=env)
    assert (old.value_baseline, old.baseline_lambda) == (False, 1.0)
    assert getattr(old, "history_baseline", None) is None
    old.learn(50, reset_num_timesteps=False)


@pytest.mark.parametrize("cls", CONTRIB)
@pytest.mark.parametrize(("env_id", "before", "after"), [("RiskyLavaGrid-v0", 256, 64), ("GuardedMaze-v0", 128, 64)])
def test_a_small_budget_halves_the_rollout_as_ordergrad_ppos(cls, env_id, before, after):
    model = contrib_model(cls, env_id, objective="cvar0.2", seed=0)
    assert model.n_episodes == before and model.n_episodes_by_budget
    model.learn(100_000, callback=StopAtOnce())
    assert (model.n_episodes, model.k, model.rollout_buffer.n_episodes) == (after, after // 2, after)
    assert model.batch_size == 64
    model.learn(10**6, callback=StopAtOnce())  # decided once
    assert model.n_episodes == after
    given = contrib_model(cls, env_id, objective="cvar0.2", n_episodes=before)
    assert not given.n_episodes_by_budget


@pytest.mark.parametrize("cls", CONTRIB)
def test_a_small_budget_trains_exactly_as_the_halved_size_given(cls):
    kwargs = {"objective": "cvar0.2", "seed": 0, "n_epochs": 2}
    sized = contrib_model(cls, "RiskyLavaGrid-v0", **kwargs)
    sized.learn(3_000)  # fewer than 32 rollouts of 16 at the 30-step limit: the floor
    given = contrib_model(cls, "RiskyLavaGrid-v0", n_episodes=16, **kwargs)
    given.learn(3_000)
    assert (sized.n_episodes, sized.batch_size) == (given.n_episodes, given.batch_size) == (16, 64)
    assert sized.num_timesteps == given.num_timesteps
    for a, b in zip(sized.policy.parameters(), given.policy.parameters(), strict=True):
        assert th.equal(a, b)
