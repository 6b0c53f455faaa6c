"""Exporting models as SB3's "Exporting models" guide does: a ``torch.nn.Module`` calling ``policy(obs,
deterministic=True)``, traced by TorchScript or exported to ONNX, and ``policy.save`` / ``PolicyClass.load``. The
exported action must be ``model.predict(obs, deterministic=True)`` on a batch of observations, in every agent family.
ONNX needs ``onnx`` and ``onnxruntime``, which are no dependencies: those tests are skipped without them."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from sb3_contrib.common.wrappers import ActionMasker

from ordergrad_rl.agents import (
    OrderGradMaskablePPO,
    OrderGradPPO,
    OrderGradRecurrentPPO,
    OrderGradREINFORCE,
    QRDQNCVaR,
)
from ordergrad_rl.agents.qrdqn_cvar.qrdqn_cvar import quantile_cvar

BATCH = 8


class DeterministicPolicy(th.nn.Module):
    """SB3's ``OnnxableSB3Policy``: the policy's ``forward`` with ``deterministic=True`` (preprocessing included)."""

    def __init__(self, policy: th.nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, observation: th.Tensor) -> Any:
        return self.policy(observation, deterministic=True)


class MaskedPolicy(DeterministicPolicy):
    def forward(self, observation: th.Tensor, action_masks: th.Tensor) -> Any:  # type: ignore[override]
        return self.policy(observation, deterministic=True, action_masks=action_masks)


class RecurrentPolicy(DeterministicPolicy):
    """Observations, the LSTM's ``(h, c)`` and episode starts in; actions and the next ``(h, c)`` out. Episodic mode
    has no critic LSTM, so the critic's states are the actor's."""

    def forward(  # type: ignore[override]
        self, observation: th.Tensor, h: th.Tensor, c: th.Tensor, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        actions, _, _, states = self.policy(observation, RNNStates((h, c), (h, c)), episode_starts, deterministic=True)
        return actions, *states.pi


def feed_forward_models() -> dict[str, Callable[[], Any]]:
    cartpole = dict(objective="cvar0.5", n_episodes=4)
    return {
        "ppo": lambda: OrderGradPPO("MlpPolicy", "CartPole-v1", **cartpole),
        "ppo-actor-only": lambda: OrderGradPPO(
            "MlpPolicy", "CartPole-v1", policy_kwargs=dict(critic="none"), **cartpole
        ),
        "ppo-box": lambda: OrderGradPPO("MlpPolicy", "Pendulum-v1", **cartpole),
        "reinforce": lambda: OrderGradREINFORCE("MlpPolicy", "CartPole-v1", **cartpole),
        "q-critic": lambda: OrderGradPPO(
            "MlpPolicy", "CartPole-v1", advantage="q_critic", objective="cvar0.5@4", n_steps=32, batch_size=32
        ),
        "qrdqn-cvar": lambda: QRDQNCVaR("MlpPolicy", "CartPole-v1", alpha=0.1, learning_starts=0),
    }


FEED_FORWARD = feed_forward_models()


def observations(model: Any) -> np.ndarray:
    model.observation_space.seed(0)
    return np.stack([model.observation_space.sample() for _ in range(BATCH)])


def env_actions(model: Any, outputs: Any) -> np.ndarray:
    """The exported module's actions as ``model.predict`` gives them: Gaussian means clipped to the box, as SB3."""
    actions = np.asarray(outputs[0] if isinstance(outputs, tuple | list) else outputs)
    if isinstance(model.action_space, gym.spaces.Box):
        actions = np.clip(actions, model.action_space.low, model.action_space.high)
    return actions


def trace(module: th.nn.Module, *inputs: th.Tensor) -> th.jit.ScriptModule:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's deprecation of jit and tracer warnings inside SB3's distributions
        return th.jit.trace(module.eval(), inputs)


def onnx_session(tmp_path: Any, module: th.nn.Module, inputs: dict[str, th.Tensor]) -> Any:
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "policy.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        th.onnx.export(
            module.eval(),
            tuple(inputs.values()),
            path,
            input_names=list(inputs),
            dynamic_axes={
                name: {1 if name in ("h", "c") else 0: "batch"} for name in inputs
            },  # LSTM states: [layers, batch, size]
            opset_version=17,
            dynamo=False,
        )
    return ort.InferenceSession(str(path))


@pytest.mark.parametrize("name", list(FEED_FORWARD))
def test_traced_and_reloaded_policies_act_as_predict(name: str, tmp_path) -> None:
    model = FEED_FORWARD[name]()
    obs = observations(model)
    expected, _ = model.predict(obs, deterministic=True)
    model.policy.to("cpu")
    traced = trace(DeterministicPolicy(model.policy), th.as_tensor(obs[:1]))
    th.jit.save(traced, tmp_path / "policy.pt")
    with th.no_grad():
        np.testing.assert_array_equal(
            env_actions(model, th.jit.load(tmp_path / "policy.pt")(th.as_tensor(obs))), expected
        )
    model.policy.save(tmp_path / "policy.pth")
    policy = type(model.policy).load(tmp_path / "policy.pth")
    np.testing.assert_array_equal(policy.predict(obs, deterministic=True)[0], expected)
    for key, value in model.policy.state_dict().items():
        th.testing.assert_close(policy.state_dict()[key], value)


@pytest.mark.parametrize("name", list(FEED_FORWARD))
def test_onnx_policies_act_as_predict(name: str, tmp_path) -> None:
    model = FEED_FORWARD[name]()
    obs = observations(model).astype(np.float32)
    expected, _ = model.predict(obs, deterministic=True)
    model.policy.to("cpu")
    session = onnx_session(tmp_path, DeterministicPolicy(model.policy), {"input": th.as_tensor(obs[:1])})
    # ONNX Runtime computes in its own order: Gaussian means agree to float32 rounding, discrete actions exactly.
    np.testing.assert_allclose(env_actions(model, session.run(None, {"input": obs})), expected, rtol=1e-5, atol=1e-6)


def test_qrdqn_cvar_exports_its_cvar_greedy_action_not_the_mean_greedy_one() -> None:
    model = QRDQNCVaR("MlpPolicy", "CartPole-v1", alpha=0.1, learning_starts=0, seed=0)
    obs = th.as_tensor(np.random.default_rng(0).normal(0, 3, (256, 4)).astype(np.float32))
    with th.no_grad():
        quantiles = model.quantile_net(obs)
        exported = trace(DeterministicPolicy(model.policy), obs[:1])(obs)
    cvar_greedy = quantile_cvar(quantiles, model.alpha).argmax(dim=1)
    th.testing.assert_close(exported, cvar_greedy)
    assert not th.equal(cvar_greedy, quantiles.mean(dim=1).argmax(dim=1))  # the two rules differ on these states


def masked_model() -> OrderGradMaskablePPO:
    env = ActionMasker(gym.make("CartPole-v1"), lambda env: np.array([True, True]))
    return OrderGradMaskablePPO("MlpPolicy", env, objective="cvar0.5", n_episodes=4)


def masks() -> np.ndarray:
    allowed = np.ones((BATCH, 2), dtype=bool)
    allowed[::2, 0] = False  # every other row allows action 1 only
    return allowed


@pytest.mark.parametrize("runtime", ["torchscript", "onnx"])
def test_maskable_policy_exports_with_its_masks(runtime: str, tmp_path) -> None:
    model = masked_model()
    obs, allowed = observations(model).astype(np.float32), masks()
    expected, _ = model.predict(obs, deterministic=True, action_masks=allowed)
    assert (expected[::2] == 1).all()
    model.policy.to("cpu")
    module = MaskedPolicy(model.policy)
    if runtime == "torchscript":
        actions = trace(module, th.as_tensor(obs[:1]), th.as_tensor(allowed[:1]))(
            th.as_tensor(obs), th.as_tensor(allowed)
        )
    else:
        session = onnx_session(tmp_path, module, {"input": th.as_tensor(obs[:1]), "masks": th.as_tensor(allowed[:1])})
        actions = session.run(None, {"input": obs, "masks": allowed})
    np.testing.assert_array_equal(env_actions(model, actions), expected)


@pytest.mark.parametrize("runtime", ["torchscript", "onnx"])
def test_recurrent_policy_exports_with_its_lstm_states(runtime: str, tmp_path) -> None:
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "CartPole-v1", objective="cvar0.5", n_episodes=4, policy_kwargs=dict(lstm_hidden_size=8)
    )
    model.policy.to("cpu")
    layers, _, size = model.policy.lstm_hidden_state_shape
    first, second = observations(model).astype(np.float32), observations(model)[::-1].astype(np.float32).copy()
    starts, carried = np.ones(BATCH, dtype=np.float32), np.zeros(BATCH, dtype=np.float32)
    zeros = np.zeros((layers, BATCH, size), dtype=np.float32)
    expected_first, state = model.predict(first, episode_start=starts.astype(bool), deterministic=True)
    expected_second, _ = model.predict(second, state=state, episode_start=carried.astype(bool), deterministic=True)
    module = RecurrentPolicy(model.policy)
    if runtime == "torchscript":
        traced = trace(module, *(th.as_tensor(x) for x in (first, zeros, zeros, starts)))

        def step(*inputs: np.ndarray) -> list[np.ndarray]:
            with th.no_grad():
                return [out.numpy() for out in traced(*(th.as_tensor(x) for x in inputs))]
    else:
        names = ("input", "h", "c", "episode_starts")
        session = onnx_session(
            tmp_path, module, dict(zip(names, (th.as_tensor(x) for x in (first, zeros, zeros, starts)), strict=True))
        )

        def step(*inputs: np.ndarray) -> list[np.ndarray]:
            return session.run(None, dict(zip(names, inputs, strict=True)))

    actions, h, c = step(first, zeros, zeros, starts)
    np.testing.assert_array_equal(actions, expected_first)
    np.testing.assert_allclose(h, state[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(step(second, h, c, carried)[0], expected_second)
