"""OrderGradPPO's ``log_std_step``: the Gaussian log-std fitted outside PPO's clipped surrogate."""

from __future__ import annotations

import math
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import save_from_before

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE

# One rollout per learn call, on purpose.
pytestmark = pytest.mark.filterwarnings("ignore:OrderGradPPO. the first rollout took:UserWarning")

DELTA = math.log(1.2)


class OneStepBox(gym.Env):
    """One-step episodes of a constant observation, ``Box`` actions rewarded by their first coordinate."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, action_dim: int = 2) -> None:
        self.action_space = gym.spaces.Box(-10.0, 10.0, (action_dim,), np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(1, np.float32), float(action[0]), True, False, {}


def model_on_box(**kwargs: Any) -> OrderGradPPO:
    # A learning rate at which Adam's 40 steps of an update (256 steps in minibatches of 64, 10 epochs) can reach the
    # bound: at SB3's 3e-4 they move a log-std by at most about 0.012.
    kwargs = {"n_episodes": 256, "batch_size": 64, "seed": 0, "learning_rate": 0.01, **kwargs}
    return OrderGradPPO("MlpPolicy", OneStepBox(), objective="cvar0.2", **kwargs)


def constructed_update(model: OrderGradPPO) -> np.ndarray:
    """One update on a constructed rollout: the model's first rollout with advantages ``30 z_0 - (z_1^2 - 1)`` for the
    standardized draws ``z = (a - mu) / sigma`` (the mean pulled hard along the first axis; the second std pulled
    down, the exact gradient w.r.t. its log-std ``-E[(z_1^2 - 1)^2] = -2`` at ratio 1, the first's 0), and the
    log-probabilities of the policy the update starts from. Returns the change of the log-std the update made."""
    model.learn(model.n_episodes)  # fills the buffer
    buffer = model.rollout_buffer
    policy = model.policy
    obs = th.as_tensor(buffer.observations)
    actions = th.as_tensor(buffer.actions)
    with th.no_grad():
        distribution = policy.get_distribution(obs)
        z = ((actions - distribution.mode()) / th.exp(policy.log_std)).numpy()
        buffer.log_probs = distribution.log_prob(actions).numpy()
    buffer.advantages = (30.0 * z[:, 0] - (z[:, 1] ** 2 - 1.0)).astype(np.float32)
    start = policy.log_std.detach().clone()
    model.train()
    return (policy.log_std.detach() - start).numpy()


def test_the_fit_moves_the_log_std_where_the_clipped_update_does_not() -> None:
    """The mean's pull takes the ratios of the draws far from the mean out of the clip range, and with them the second
    std's signal: SB3's clipped update moves that log-std by a fraction of the move the fit makes, the bound."""
    clipped = constructed_update(model_on_box())
    fitted = constructed_update(model_on_box(log_std_step=DELTA))
    assert clipped[1] > -0.5 * DELTA, clipped
    assert fitted[1] == pytest.approx(-DELTA, rel=1e-4), fitted


@pytest.mark.parametrize("delta", [1e-3, 0.05])
def test_the_log_std_stays_within_the_bound_of_the_update_start(delta: float) -> None:
    model = model_on_box(log_std_step=delta, learning_rate=0.05)
    change = constructed_update(model)
    assert np.all(np.abs(change) <= delta * (1 + 1e-5)), change
    assert model.logger.name_to_value["train/log_std_at_bound"] == 1.0
    np.testing.assert_allclose(model.logger.name_to_value["train/log_std_change"], change.mean(), atol=1e-6)
    # SB3's train/std, logged after the fit (SB3 logs it before).
    assert model.logger.name_to_value["train/std"] == pytest.approx(float(th.exp(model.policy.log_std.detach()).mean()))


def test_the_mean_trains_in_the_clipped_pass_and_the_log_std_outside_it() -> None:
    """With the option the mean network still moves in SB3's update, and the log-std's gradient is left ``None``
    after the fit (a stale one would step it in the next clipped pass)."""
    model = model_on_box(log_std_step=DELTA)
    before = [p.detach().clone() for p in model.policy.action_net.parameters()]
    constructed_update(model)
    after = list(model.policy.action_net.parameters())
    assert any(not th.equal(a, b) for a, b in zip(after, before, strict=True))
    assert model.policy.log_std.grad is None and model.policy.log_std.requires_grad


def test_off_the_model_trains_as_without_the_argument() -> None:
    """``log_std_step=None`` is SB3's update: the log-std moves in the clipped pass, as without the argument, bit for
    bit; and a model built with the option draws the same first rollout (nothing random at construction)."""
    # Each built and trained in turn: the minibatches draw from NumPy's global generator, which construction seeds.
    default, off, on = (
        model_on_box(**kwargs).learn(256) for kwargs in ({}, {"log_std_step": None}, {"log_std_step": DELTA})
    )
    for a, b in zip(default.policy.parameters(), off.policy.parameters(), strict=True):
        assert th.equal(a, b)
    np.testing.assert_array_equal(default.rollout_buffer.actions, on.rollout_buffer.actions)
    assert not th.equal(default.policy.log_std, on.policy.log_std)


@pytest.mark.parametrize("value", [0, 0.0, -0.1, float("nan"), float("inf"), "0.1", True])
def test_a_bad_log_std_step_is_refused_by_name(value: Any) -> None:
    with pytest.raises(ValueError, match=r"log_std_step must be None \(off\) or a finite number > 0"):
        model_on_box(log_std_step=value)


def test_non_gaussian_policies_are_refused() -> None:
    with pytest.raises(ValueError, match=r"log_std_step .*Box actions only.*Discrete"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", log_std_step=DELTA)
    with pytest.raises(ValueError, match=r"log_std_step .*use_sde=True"):
        model_on_box(log_std_step=DELTA, use_sde=True)
    with pytest.raises(ValueError, match=r"log_std_step.*episodic mode only"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", k=4, log_std_step=DELTA)


def test_saved_and_loaded(tmp_path) -> None:
    model = model_on_box(log_std_step=DELTA)
    model.save(tmp_path / "on")
    assert OrderGradPPO.load(tmp_path / "on").log_std_step == DELTA
    assert OrderGradPPO.load(tmp_path / "on", log_std_step=None).log_std_step is None
    with pytest.raises(ValueError, match="log_std_step"):
        OrderGradPPO.load(tmp_path / "on", log_std_step=-1.0)
    gsde = model_on_box(use_sde=True)
    gsde.save(tmp_path / "gsde")
    with pytest.raises(ValueError, match=r"log_std_step .*DiagGaussianDistribution"):
        OrderGradPPO.load(tmp_path / "gsde", log_std_step=DELTA)
    reinforce = OrderGradREINFORCE("MlpPolicy", OneStepBox(), n_episodes=16)
    reinforce.save(tmp_path / "reinforce")
    with pytest.raises(ValueError, match="log_std_step"):
        OrderGradREINFORCE.load(tmp_path / "reinforce", log_std_step=DELTA)


def test_a_save_from_before_loads_with_it_off(tmp_path) -> None:
    model_on_box(log_std_step=DELTA).save(tmp_path / "model.zip")
    old = save_from_before(tmp_path / "model.zip", tmp_path / "old.zip", "log_std_step")
    assert OrderGradPPO.load(old).log_std_step is None


def test_hparams_record_it() -> None:
    assert model_on_box(log_std_step=DELTA).hparams()["log_std_step"] == DELTA
    assert model_on_box().hparams()["log_std_step"] == "none"


def test_a_frozen_log_std_is_refused_not_trained() -> None:
    # learn_log_std=False keeps the noise at log_std_init: the fit would train it (and its requires_grad was switched
    # back on after the clipped pass), so the two are refused together, by name.
    with pytest.raises(ValueError, match="learn_log_std"):
        model_on_box(log_std_step=DELTA, policy_kwargs={"learn_log_std": False})
