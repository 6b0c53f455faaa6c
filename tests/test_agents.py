"""OrderGradREINFORCE / OrderGradPPO: learning on RiskyBandit, SB3 conventions, policy options, construction errors."""

from __future__ import annotations

import math
import re
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import save_from_before
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv
from stable_baselines3.dqn.policies import DQNPolicy

import ordergrad_rl
from ordergrad_rl.agents import (
    EpisodicRolloutBuffer,
    OrderGradActorCriticPolicy,
    OrderGradMultiInputPolicy,
    OrderGradPPO,
    OrderGradREINFORCE,
)
from ordergrad_rl.agents.common.arguments import (
    RANKED_ENT_COEF,
    RANKED_ROLLOUT_STEPS,
    REINFORCE_RANKED_ENT_COEF,
    REINFORCE_RANKED_ROLLOUT_STEPS,
    RELATIVE_RANKED_ENT_COEF,
    SHORT_RANKED_ENT_COEF,
    TIMED_BOX_ROLLOUT_STEPS,
    ranked_n_episodes,
    timed_box_rollout_steps,
)
from ordergrad_rl.agents.common.hparams import hparam_value
from ordergrad_rl.core import Objective
from ordergrad_rl.envs import make_sb3_vec_env

SAFE, RISKY, LOTTERY = 0, 1, 2
# Each objective prefers a different arm of RiskyBandit-v0 (see its docstring).
PREFERRED_ARM = {"mean": RISKY, "cvar0.1": SAFE, "max@8": LOTTERY}


def arm_probabilities(model) -> np.ndarray:
    with th.no_grad():
        return model.policy.get_distribution(th.zeros(1, 1)).distribution.probs.numpy()[0]


@pytest.mark.parametrize("objective", list(PREFERRED_ARM))
def test_reinforce_learns_the_objectives_arm(objective: str) -> None:
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", objective=objective, n_episodes=128, n_envs=8, learning_rate=0.02, seed=1
    )
    model.learn(128 * 40)
    probs = arm_probabilities(model)
    assert probs.argmax() == PREFERRED_ARM[objective] and probs.max() > 0.8, probs


@pytest.mark.parametrize("objective", list(PREFERRED_ARM))
def test_ppo_learns_the_objectives_arm(objective: str) -> None:
    model = OrderGradPPO(
        "MlpPolicy",
        "RiskyBandit-v0",
        objective=objective,
        n_episodes=256,
        n_envs=16,
        learning_rate=0.002,
        n_epochs=5,
        seed=1,
    )
    model.learn(256 * 15)
    probs = arm_probabilities(model)
    assert probs.argmax() == PREFERRED_ARM[objective] and probs.max() > 0.8, probs


# ---------------------------------------------------------------------------------------------- objective and k
@pytest.mark.parametrize(
    ("objective", "k", "n_episodes", "expected"),
    [
        ("cvar0.2", None, 256, "cvar0.2@128"),  # default k = n_episodes // 2 (the paper's 128 of 256)
        ("cvar0.2", 100, 256, "cvar0.2@100"),
        ("cvar0.2@16", None, 64, "cvar0.2@16"),
        ("mean", None, 64, "mean"),
        ("mean", 10, 64, "mean"),  # mean always has k = 1
        ("TopM:2", 4, 16, "top2@4"),
    ],
)
def test_objective_binding(objective: str, k: int | None, n_episodes: int, expected: str) -> None:
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective=objective, k=k, n_episodes=n_episodes)
    assert isinstance(model.objective, Objective)
    assert str(model.objective) == expected
    assert model.k == model.objective.k == (1 if expected == "mean" else int(expected.split("@")[1]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(objective="max@8", n_episodes=8), "k < n_episodes"),
        (dict(objective="cvar0.2", k=64, n_episodes=64), "k < n_episodes"),
        (dict(objective="cvarr0.2"), "unknown objective"),
        (dict(objective="cvar0.2@8", k=4), "fixes k=8"),
        (dict(n_episodes=1), "n_episodes must be an integer >= 2"),
        (dict(gamma=0.0), "gamma must be in"),
        (dict(policy=DQNPolicy), "no episodic mode"),
        (dict(policy_kwargs=dict(critic="q")), "needs policy critic='value'"),
        (dict(rollout_buffer_class=object), "EpisodicRolloutBuffer"),
    ],
)
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_construction_errors(cls, kwargs: dict, message: str) -> None:
    kwargs = {"policy": "MlpPolicy", "env": "CartPole-v1", "n_episodes": 16, **kwargs}
    with pytest.raises(ValueError, match=message):
        cls(**kwargs)


class _ShiftedActions(gym.Env):
    """Actions -1, 0 and 1 (``Discrete(3, start=-1)``), or with ``multi`` a ``MultiDiscrete`` starting at 1."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)

    def __init__(self, multi: bool = False) -> None:
        shifted = gym.spaces.MultiDiscrete([2, 3], start=[0, 1]) if multi else gym.spaces.Discrete(3, start=-1)
        self.action_space = shifted

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(2, np.float32), 0.0, True, False, {}


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_an_action_space_not_starting_at_0_is_refused(cls, multi: bool) -> None:
    """SB3's policies draw 0 .. n-1 whatever the start: the env would get actions it does not have."""
    with pytest.raises(ValueError, match=r"starts at .*draw actions from 0"):
        cls("MlpPolicy", _ShiftedActions(multi), objective="cvar0.2")


class _ShiftedObservations(_ShiftedActions):
    """Observations 1 .. 5 (``Discrete(5, start=1)``), or with ``multi`` a ``MultiDiscrete`` in a ``Dict``."""

    def __init__(self, multi: bool = False) -> None:
        super().__init__()
        self.action_space = gym.spaces.Discrete(2)
        shifted = gym.spaces.Discrete(5, start=1)
        if multi:
            shifted = gym.spaces.Dict({"cell": gym.spaces.MultiDiscrete([2, 3], start=[0, -1])})
        self.observation_space = shifted

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, True, False, {}


@pytest.mark.parametrize("multi", [False, True])
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_an_observation_space_not_starting_at_0_is_refused(cls, multi: bool) -> None:
    """SB3 one-hot encodes 0 .. n-1 whatever the start: training failed inside torch at the first observation
    outside them ("Class values must be smaller than num_classes")."""
    policy = "MultiInputPolicy" if multi else "MlpPolicy"
    with pytest.raises(ValueError, match=r"observation space.* starts at .*one-hot encodes observations from 0"):
        cls(policy, _ShiftedObservations(multi), objective="cvar0.2")


_POINT = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
#: Observation spaces without one fixed shape, on which SB3's DummyVecEnv failed inside while wrapping the env.
_UNBATCHED = {
    "text": gym.spaces.Text(5),
    "sequence": gym.spaces.Sequence(_POINT),
    "graph": gym.spaces.Graph(_POINT, None),
    "oneof": gym.spaces.OneOf((_POINT, gym.spaces.Discrete(2))),
    "dict-sequence": gym.spaces.Dict({"point": _POINT, "trail": gym.spaces.Sequence(_POINT)}),
}


class _UnflattenedSpaces(_ShiftedActions):
    """Actions or observations of a space SB3 cannot build a policy for, as ``case`` names it."""

    def __init__(self, case: str) -> None:
        super().__init__()
        grid = gym.spaces.MultiDiscrete([[2, 3], [2, 2]])
        self.action_space = grid if case == "actions" else gym.spaces.Discrete(2)
        if case == "observations":
            self.observation_space = grid
        elif case == "dict":
            self.observation_space = gym.spaces.Dict({"cells": grid})
        elif case == "scalar":
            self.observation_space = gym.spaces.Box(-1.0, 1.0, (), np.float32)
        elif case in _UNBATCHED:
            self.observation_space = _UNBATCHED[case]

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, True, False, {}


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("actions", r"action space is a MultiDiscrete with nvec \[\[2, 3\], \[2, 2\]\] .*one-dimensional nvec only"),
        ("observations", r"observation space is a MultiDiscrete .*one-dimensional nvec only.*FlattenObservation"),
        ("dict", r"observation space\['cells'\] is a MultiDiscrete .*one-dimensional nvec only"),
        ("scalar", r"observation space Box.* has shape \(\).*FlattenObservation"),
        ("text", r"observation space Text\(1, 5, .* is a Text, .*no fixed shape.*FlattenObservation"),
        ("sequence", r"observation space Sequence\(Box.* is a Sequence, .*no fixed shape.*pad or summarize"),
        ("graph", r"observation space Graph\(Box.* is a Graph, .*no fixed shape.*pad or summarize"),
        ("oneof", r"observation space OneOf\(Box.* is a OneOf, .*no fixed shape.*FlattenObservation"),
        ("dict-sequence", r"observation space\['trail'\] Sequence\(Box.* is a Sequence"),
    ],
)
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_a_space_sb3_cannot_build_a_policy_for_is_refused(cls, case: str, message: str) -> None:
    """SB3 (and so the agents) failed inside torch on these: a two-dimensional ``MultiDiscrete`` while building the
    policy ("empty(): argument 'size' ... must be tuple of ints", or "The truth value of an array ... is ambiguous"),
    a ``Box`` of shape ``()`` in torch's ``Flatten`` at the first step; inside SB3's ``DummyVecEnv`` on a space
    without a fixed shape ("'NoneType' object is not iterable", "Unsupported structured space"). Refused at
    construction, naming the space and the way to a fixed shape; the wrapper that flattens it then trains."""
    policy = "MultiInputPolicy" if case in ("dict", "dict-sequence") else "MlpPolicy"
    with pytest.raises(ValueError, match=message):
        cls(policy, _UnflattenedSpaces(case), objective="cvar0.2")
    if case in ("observations", "scalar", "text", "oneof"):
        model = cls("MlpPolicy", gym.wrappers.FlattenObservation(_UnflattenedSpaces(case)), n_episodes=4)
        model.learn(8)


class _UnsupportedActions(_ShiftedActions):
    """Actions of a space no SB3 policy acts in (one step episodes)."""

    def __init__(self, action_space: gym.spaces.Space) -> None:
        super().__init__()
        self.action_space = action_space


@pytest.mark.parametrize(
    "action_space",
    [
        gym.spaces.Text(5),
        gym.spaces.Sequence(gym.spaces.Discrete(2)),
        gym.spaces.Graph(_POINT, None),
        gym.spaces.OneOf((gym.spaces.Discrete(2), _POINT)),
        gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))),
        gym.spaces.Dict({"move": gym.spaces.Discrete(2)}),
    ],
    ids=lambda space: type(space).__name__,
)
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_an_action_space_no_policy_acts_in_is_refused_naming_it(cls, action_space) -> None:
    """SB3's constructor refused these with a bare ``AssertionError`` ("The algorithm only supports (<class
    'gymnasium.spaces.box.Box'>, ...) as action spaces"), as the observation spaces of these kinds are refused with
    a ``ValueError``: the action spaces are too now, naming the space, the ones SB3 acts in and the way there; from a
    ``VecEnv`` too."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    name = type(action_space).__name__
    message = (
        rf"action space {re.escape(str(action_space))} is a {name}, which SB3's policies cannot act in: they act in "
        r"Box, Discrete, MultiDiscrete or MultiBinary action spaces\. .*gymnasium\.ActionWrapper"
    )
    with pytest.raises(ValueError, match=message):
        cls("MlpPolicy", _UnsupportedActions(action_space), objective="cvar0.2")
    with pytest.raises(ValueError, match=message):
        cls("MlpPolicy", DummyVecEnv([lambda: _UnsupportedActions(action_space)]), objective="cvar0.2")


@pytest.mark.parametrize("case", ["text", "dict-sequence"])
def test_an_env_id_without_a_fixed_shape_is_refused_naming_the_space(case: str, monkeypatch) -> None:
    """From an env id (the commands' path) SB3's ``make_vec_env`` failed inside its ``DummyVecEnv`` ("'NoneType'
    object is not iterable") before any check of the agents ran: ``make_sb3_vec_env`` names the space instead."""
    env_id = f"OrdergradUnbatched{case.title().replace('-', '')}-v0"
    monkeypatch.setitem(gym.registry, env_id, gym.envs.registration.EnvSpec(env_id, lambda: _UnflattenedSpaces(case)))
    with pytest.raises(
        ValueError, match=r"observation space.* is a (Text|Sequence), whose samples have no fixed shape"
    ):
        OrderGradPPO("MultiInputPolicy" if case.startswith("dict") else "MlpPolicy", env_id, objective="cvar0.2")
    if case == "text":
        assert make_sb3_vec_env(env_id, 2, wrapper_class=gym.wrappers.FlattenObservation).reset().shape == (2, 5)


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_a_tuple_observation_space_is_refused_with_the_wrapper_that_flattens_it(cls) -> None:
    """Blackjack-v1's ``Tuple`` observations: SB3's ``NotImplementedError`` and message, from inside its rollout
    buffer, named the space but not the way out; the wrapper it names trains."""
    with pytest.raises(
        NotImplementedError,
        match=r"Tuple\(Discrete\(32\).* observation space is not supported: .*"
        r"FlattenObservation",
    ):
        cls("MlpPolicy", gym.make("Blackjack-v1"), objective="cvar0.2")
    cls("MlpPolicy", gym.wrappers.FlattenObservation(gym.make("Blackjack-v1")), n_episodes=4).learn(8)


@pytest.mark.parametrize(
    ("inner", "kind"),
    [
        (gym.spaces.Tuple((gym.spaces.Discrete(2), gym.spaces.Discrete(3))), "Tuple"),
        (gym.spaces.Dict({"speed": _POINT}), "Dict"),
    ],
)
def test_a_space_nested_in_a_dict_is_refused_naming_its_key(inner: gym.spaces.Space, kind: str) -> None:
    """A Tuple inside a Dict got the message of a Tuple observation space, without its key or the word that it is
    nested; a Dict inside a Dict SB3's "Nested observation spaces are not supported", without its key either."""
    env = _UnflattenedSpaces("none")
    env.observation_space = gym.spaces.Dict({"point": _POINT, "inner": inner})
    message = (
        rf"^the env's observation space\['inner'\] {re.escape(str(inner))} is a {kind} inside a Dict: SB3 does not "
        r"support nested observation spaces\. .*FlattenObservation"
    )
    with pytest.raises(NotImplementedError, match=message):
        OrderGradPPO("MultiInputPolicy", env, objective="cvar0.2")


def test_ppo_specific_construction_errors() -> None:
    with pytest.raises(ValueError, match="not n_steps"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", n_steps=128)
    with pytest.raises(ValueError, match="unknown advantage"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="gae")
    with pytest.raises(ValueError, match="n_envs=4 only builds envs from an env id"):
        OrderGradPPO("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")]), n_envs=4)


@pytest.mark.parametrize(("n_episodes", "n_envs"), [(5, 2), (3, 4)])
@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_n_episodes_need_not_be_a_multiple_of_n_envs(cls, n_episodes: int, n_envs: int) -> None:
    model = cls("MlpPolicy", make_vec_env("CartPole-v1", n_envs=n_envs, seed=0), n_episodes=n_episodes, seed=0)
    model.learn(1)
    buffer = model.rollout_buffer
    assert buffer.n_episodes == n_episodes
    assert np.array_equal(np.bincount(buffer.episode_index, minlength=n_episodes), buffer.episode_lengths)
    assert buffer.episode_lengths.min() >= 8  # complete CartPole episodes (none ends in fewer than 8 steps)


def test_a_save_loads_with_another_number_of_envs(tmp_path) -> None:
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=8, n_envs=2)
    model.save(tmp_path / "model")
    loaded = OrderGradREINFORCE.load(tmp_path / "model", env=make_vec_env("CartPole-v1", n_envs=3))
    loaded.learn(1)
    assert loaded.n_episodes == loaded.rollout_buffer.n_episodes == 8


# ---------------------------------------------------------------------------------------------- SB3 conventions
def test_package_exports_the_agents_lazily() -> None:
    assert ordergrad_rl.OrderGradPPO is OrderGradPPO
    assert ordergrad_rl.OrderGradREINFORCE is OrderGradREINFORCE


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_save_load_round_trip(cls, tmp_path) -> None:
    policy_kwargs = dict(net_arch=[16], log_std_init=math.log(0.35), learn_log_std=False, zero_init_action_net=True)
    model = cls(
        "MlpPolicy", "Pendulum-v1", objective="quantile0.1", n_episodes=8, n_envs=2, seed=3, policy_kwargs=policy_kwargs
    )
    model.learn(8 * 200)  # one update (Pendulum episodes are 200 steps)
    model.save(tmp_path / "agent.zip")
    loaded = cls.load(tmp_path / "agent.zip", device="cpu")
    assert loaded.objective == model.objective and str(loaded.objective) == "quantile0.1@4"
    # (OrderGradPPO's "running" default is for short episodes; Pendulum's are 200 steps.)
    assert (loaded.k, loaded.n_episodes, loaded.normalize_advantage) == (4, 8, True)
    assert not loaded.policy.log_std.requires_grad
    assert th.allclose(loaded.policy.log_std, th.full((1,), math.log(0.35)))
    obs = np.random.default_rng(0).uniform(-1, 1, size=(5, 3)).astype(np.float32)
    np.testing.assert_array_equal(model.predict(obs, deterministic=True)[0], loaded.predict(obs, deterministic=True)[0])
    # The loaded model trains on a new env.
    loaded.set_env(make_vec_env("Pendulum-v1", n_envs=2, seed=4))
    loaded.learn(8 * 200, reset_num_timesteps=False)
    assert loaded.num_timesteps >= 2 * 8 * 200


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
def test_vecenv_with_several_envs_collects_n_episodes(cls) -> None:
    venv = make_sb3_vec_env("RiskyBandit-v0", n_envs=4, seed=0)
    model = cls("MlpPolicy", venv, objective="cvar0.25", n_episodes=12, seed=0)
    model.learn(12 * 3)
    buffer = model.rollout_buffer
    assert model.n_envs == 4 and buffer.n_episodes == 12
    np.testing.assert_array_equal(buffer.episode_lengths, np.ones(12))  # one-step episodes, all 12 present
    np.testing.assert_array_equal(buffer.episode_index, np.arange(12))  # numbered in the order they started
    assert buffer.size() == 12 and model.num_timesteps == 36


def test_episodes_of_a_multistep_env_are_complete_and_ordered() -> None:
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=8, n_envs=2, seed=0, batch_size=32, n_epochs=1)
    model.learn(1)
    buffer: EpisodicRolloutBuffer = model.rollout_buffer
    assert buffer.size() == buffer.episode_lengths.sum()
    for episode in range(8):
        steps = buffer.episode_step[buffer.episode_index == episode]
        np.testing.assert_array_equal(steps, np.arange(buffer.episode_lengths[episode]))
    # CartPole gives +1 per step: the undiscounted return is the length.
    np.testing.assert_array_equal(buffer.episode_returns, buffer.episode_lengths)
    # Every env step is counted, including those of envs that had met their quota.
    assert model.num_timesteps >= buffer.size() and model.num_timesteps % 2 == 0


def test_discounted_returns() -> None:
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4, gamma=0.9, seed=0)
    model.learn(1)
    buffer = model.rollout_buffer
    expected = (1 - 0.9**buffer.episode_lengths) / (1 - 0.9)
    np.testing.assert_allclose(buffer.episode_returns, expected)


def test_dict_observations_and_multi_input_policy() -> None:
    class DictObs(gym.ObservationWrapper):
        def __init__(self, env: gym.Env) -> None:
            super().__init__(env)
            self.observation_space = gym.spaces.Dict({"x": env.observation_space, "bias": gym.spaces.Box(0, 1, (2,))})

        def observation(self, observation):
            return {"x": observation, "bias": np.ones(2, dtype=np.float32)}

    venv = DummyVecEnv([lambda: DictObs(gym.make("CartPole-v1"))] * 2)
    model = OrderGradPPO("MultiInputPolicy", venv, n_episodes=4, batch_size=16, n_epochs=2, seed=0)
    assert isinstance(model.policy, OrderGradMultiInputPolicy)
    model.learn(1)
    assert set(model.rollout_buffer.observations) == {"x", "bias"}


def test_progress_bar_and_predict() -> None:
    model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.learn(50, progress_bar=True)
    action, state = model.predict(np.zeros(4, dtype=np.float32), deterministic=True)
    assert action in (0, 1) and state is None


# ---------------------------------------------------------------------------------------------- policies
class PlainPolicy(ActorCriticPolicy):
    """A user's subclass of SB3's policy, with nothing of the OrderGrad mixin."""


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
@pytest.mark.parametrize("policy", ["MlpPolicy", PlainPolicy])
def test_episodic_mode_never_trains_the_value_head(cls, policy) -> None:
    model = cls(policy, "CartPole-v1", objective="mean", n_episodes=4, seed=0, policy_kwargs=dict(net_arch=[32, 32]))
    assert isinstance(model.policy, policy if isinstance(policy, type) else OrderGradActorCriticPolicy)
    assert model.policy.net_arch == [32, 32] and model.policy_kwargs == dict(net_arch=[32, 32])  # SB3's layout
    value_branch = [*model.policy.value_net.parameters(), *model.policy.mlp_extractor.value_net.parameters()]
    before = [p.detach().clone() for p in value_branch]
    actor_before = model.policy.action_net.weight.detach().clone()
    calls = []
    model.policy.value_net.register_forward_hook(lambda *args: calls.append(1))
    model.learn(200)
    # With a hook on it, collection acts through policy(obs), as SB3's does (forward hooks fire), which runs the value
    # head once per step; its values are dropped, and the update neither evaluates ...
    assert len(calls) == model.num_timesteps
    assert all(th.equal(a, b) for a, b in zip(before, value_branch, strict=True))  # ... nor trains it
    assert not th.equal(actor_before, model.policy.action_net.weight)  # while the actor trains
    assert "evaluate_actions" not in vars(model.policy)  # the class's method is back after the update


def test_paper_portfolio_policy_options() -> None:
    policy_kwargs = dict(
        net_arch=dict(pi=[], vf=[]), zero_init_action_net=True, log_std_init=math.log(0.35), learn_log_std=False
    )
    model = OrderGradREINFORCE(
        "MlpPolicy",
        "SyntheticTailRisk-v0",
        objective="cvar0.2@8",
        n_episodes=16,
        n_envs=16,
        seed=0,
        policy_kwargs=policy_kwargs,
    )
    policy = model.policy
    assert isinstance(policy.action_net, th.nn.Linear) and policy.action_net.in_features == 14
    assert not policy.action_net.weight.any() and not policy.action_net.bias.any()  # equal logits at start
    model.learn(16 * 16 * 2)
    assert policy.action_net.weight.any()  # the linear policy trains ...
    np.testing.assert_allclose(th.exp(policy.log_std).detach().numpy(), 0.35, rtol=1e-6)  # ... the noise does not


def test_seed_makes_training_reproducible() -> None:
    first, second = (
        OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=4, n_epochs=2, seed=7).learn(300) for _ in "ab"
    )
    np.testing.assert_array_equal(first.rollout_buffer.episode_returns, second.rollout_buffer.episode_returns)
    for p, q in zip(first.policy.parameters(), second.policy.parameters(), strict=True):
        assert th.equal(p, q)


def test_an_unseeded_env_id_takes_its_env_seeds_from_numpys_global_generator() -> None:
    # The documented difference from SB3 (the seed parameter): an env id is SB3's make_vec_env(id, n_envs, seed),
    # which with seed=None draws the envs' seeds from NumPy's global generator; SB3's PPO resets its env unseeded.
    seeds = []
    for _ in "ab":
        np.random.seed(0)  # noqa: NPY002
        seeds.append(OrderGradPPO("MlpPolicy", "CartPole-v1", n_envs=2, n_episodes=4).get_env()._seeds)
    assert seeds[0] == seeds[1] and seeds[0][1] == seeds[0][0] + 1


def test_a_gym_make_env_trains_as_its_native_batch_like_the_env_id() -> None:
    """Issue 9, goal 3: ``gym.make("SyntheticTailRisk-v0")`` is stepped as the same native batch of ``n_episodes``
    envs as the env id (not one env, ~N times slower), so both usage-line forms train identically."""
    kwargs = dict(objective="cvar0.2", n_episodes=8, n_epochs=1, seed=3)
    # Built and trained one after the other: SB3 seeds torch's global generator at construction.
    from_env = OrderGradPPO("MlpPolicy", gym.make("SyntheticTailRisk-v0"), **kwargs).learn(1)
    from_id = OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", **kwargs).learn(1)
    assert from_env.n_envs == from_id.n_envs == 8
    np.testing.assert_array_equal(from_env.rollout_buffer.episode_returns, from_id.rollout_buffer.episode_returns)
    for p, q in zip(from_env.policy.parameters(), from_id.policy.parameters(), strict=True):
        assert th.equal(p, q)
    wrapped = gym.wrappers.RecordEpisodeStatistics(gym.make("SyntheticTailRisk-v0"))  # a user's wrapper is kept
    assert OrderGradPPO("MlpPolicy", wrapped, **kwargs).n_envs == 1


def test_a_gym_make_env_with_a_render_mode_trains_on_the_env_itself() -> None:
    # The batch does not render: it was rebuilt with the render_mode among its kwargs, a TypeError deep in TargetSum.
    env = gym.make("TargetSum-v0", render_mode="ansi")
    model = OrderGradPPO("MlpPolicy", env, objective="max@4", n_episodes=8, n_epochs=1, seed=0)
    assert model.n_envs == 1 and model.get_env().render_mode == "ansi"
    model.learn(1)


def test_a_gym_make_env_with_a_time_limit_trains_on_the_env_itself() -> None:
    # The batch has no TimeLimit: rebuilt from the spec's kwargs, it trained on 16-step episodes, the limit dropped.
    env = gym.make("SyntheticTailRisk-v0", max_episode_steps=5)
    model = OrderGradPPO("MlpPolicy", env, objective="cvar0.5", n_episodes=8, n_epochs=1, seed=0).learn(1)
    assert model.n_envs == 1 and set(model.rollout_buffer.episode_lengths) == {5}


def test_set_env_and_load_take_the_gym_make_env_the_model_was_built_from(tmp_path) -> None:
    # set_env(gym.make(...)) failed SB3's assertion "(1 != 8)", and load(path, env=gym.make(...)) went on with one
    # env (n_envs 1, eight times the Python steps) instead of the native batch the model was built on.
    model = OrderGradPPO("MlpPolicy", gym.make("SyntheticTailRisk-v0"), objective="cvar0.2", n_episodes=8, seed=3)
    model.set_env(gym.make("SyntheticTailRisk-v0", p=0.35))
    assert model.n_envs == model.get_env().num_envs == 8 and model.get_env().get_attr("p", [0]) == [0.35]
    model.save(tmp_path / "model")
    loaded = OrderGradPPO.load(tmp_path / "model", env=gym.make("SyntheticTailRisk-v0"))
    assert loaded.n_envs == loaded.get_env().num_envs == 8
    loaded.learn(1, reset_num_timesteps=False)
    one_env = OrderGradPPO("MlpPolicy", gym.make("SyntheticTailRisk-v0"), n_episodes=8, n_envs=1)
    one_env.set_env(gym.make("SyntheticTailRisk-v0"))  # a model of one env keeps the env object
    assert one_env.n_envs == 1


def test_cnn_policy_on_image_observations() -> None:
    class ImageEnv(gym.Env):
        observation_space = gym.spaces.Box(0, 255, (36, 36, 3), np.uint8)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.t = 0
            return np.zeros((36, 36, 3), np.uint8), {}

        def step(self, action):
            self.t += 1
            return np.full((36, 36, 3), 10 * self.t, np.uint8), float(action), self.t >= 3, False, {}

    model = OrderGradREINFORCE("CnnPolicy", ImageEnv(), n_episodes=4, seed=0)
    assert type(model.policy).__name__ == "OrderGradActorCriticCnnPolicy"
    model.learn(12)
    observations = model.rollout_buffer.observations
    assert observations.shape == (12, 3, 36, 36) and observations.dtype == np.uint8  # stored raw, as SB3 does


@pytest.mark.parametrize("cls", [OrderGradREINFORCE, OrderGradPPO])
@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (dict(objective="mean"), 16),  # measured: frequent updates win for the mean
        (dict(objective="cvar0.2"), 256),  # ranked: enough episodes in the tail
        (dict(objective="max@200"), 400),  # at least 2k
        (dict(objective="top2@4", group_size=6), 258),  # a multiple of the group size
    ],
)
def test_both_agents_share_the_n_episodes_defaults(cls, kwargs: dict, expected: int) -> None:
    assert cls("MlpPolicy", "RiskyBandit-v0", n_envs=1, **kwargs).n_episodes == expected  # no episode limit


@pytest.mark.parametrize(
    ("limit", "expected"),
    [(None, 256), (1, 256), (16, 256), (30, 256), (32, 256), (33, 128), (40, 128), (64, 128), (65, 64), (128, 64)]
    + [(129, 32), (500, 32), (8192, 32), (10**6, 32)],
)
def test_ranked_rollouts_hold_at_most_8192_steps_at_the_episode_limit(limit: int | None, expected: int) -> None:
    """The largest power of two with ``n * limit <= 8192``, within [32, 256]: 32 exactly past the long-episode
    boundary (128 steps)."""
    assert ranked_n_episodes(limit) == expected
    if limit is not None and 32 < expected < 256:
        assert expected * limit <= RANKED_ROLLOUT_STEPS < 2 * expected * limit


@pytest.mark.parametrize(
    ("env", "kwargs", "expected"),
    [
        ("CartPole-v1", dict(objective="cvar0.2"), (32, "history")),  # 500-step limit: long episodes
        (lambda: gym.make("Acrobot-v1"), dict(objective="cvar0.2"), (32, "history")),  # an env object's limit
        (lambda: make_vec_env("CartPole-v1", 2), dict(objective="cvar0.2"), (32, "history")),  # a VecEnv's
        ("CartPole-v1", dict(objective="max@20"), (40, "history")),  # at least 2k
        ("CartPole-v1", dict(objective="top2@4", group_size=6), (36, "history")),  # a multiple of the group size
        ("CartPole-v1", dict(objective="cvar0.2", policy_kwargs=dict(critic="none")), (32, "history")),  # no V head
        ("CartPole-v1", dict(objective="cvar0.2", value_baseline=False), (32, False)),
        ("CartPole-v1", dict(objective="cvar0.2", value_baseline=True), (32, True)),  # the state baseline V(s)
        ("CartPole-v1", dict(objective="cvar0.2", n_episodes=256), (256, "history")),
        ("CartPole-v1", dict(objective="mean"), (16, False)),  # the mean keeps reward-to-go
        # Not long: 64 episodes, and the history baseline of short categorical episodes.
        (lambda: gym.make("CartPole-v1", max_episode_steps=100), dict(objective="cvar0.2"), (64, "history")),
        # Short episodes: the state baseline for a ranked objective on continuous actions ...
        ("SyntheticTailRisk-v0", dict(objective="cvar0.2"), (256, True)),  # a fixed horizon, no limit
        ("SyntheticTailRisk-v0", dict(objective="mean"), (16, False)),
        ("SyntheticTailRisk-v0", dict(objective="cvar0.2", policy_kwargs=dict(critic="none")), (256, False)),
        ("SyntheticTailRisk-v0", dict(objective="cvar0.2", policy_kwargs=dict(learn_log_std=False)), (256, False)),
        ("SyntheticTailRisk-v0", dict(objective="cvar0.2", value_baseline="history"), (256, "history")),
        # Continuous actions with a time limit: at most 2048 steps at the limit (SB3 PPO's rollout), 32 episodes of
        # 50 steps (128 on categorical actions), and the history baseline (since 2026-12-02; V(s) before) ...
        ("RiskyShortcutNav-v2", dict(objective="cvar0.2"), (32, "history")),
        (lambda: gym.make("RiskyShortcutNav-v2"), dict(objective="gcvar0.2"), (32, "history")),  # CVaR's defaults
        (lambda: gym.make("Pendulum-v1", max_episode_steps=20), dict(objective="cvar0.2"), (64, "history")),  # 64*20
        (lambda: gym.make("Pendulum-v1", max_episode_steps=100), dict(objective="cvar0.2"), (32, "history")),
        (lambda: gym.make("CartPole-v1", max_episode_steps=50), dict(objective="cvar0.2"), (128, "history")),
        # ... and the history baseline for a ranked objective of one pooled batch on categorical ones.
        ("RiskyLavaGrid-v0", dict(objective="cvar0.2"), (256, "history")),  # Discrete; 30 steps: 256 * 30 <= 8192
        ("GuardedMaze-v0", dict(objective="cvar0.2"), (128, "history")),  # 40 steps
        ("HeavyTailBandit-v0", dict(objective="cvar0.2"), (256, "history")),  # one step: at most 256
        ("GuardedMaze-v0", dict(objective="max@200"), (400, "history")),  # at least 2k
        ("GuardedMaze-v0", dict(objective="top2@4", group_size=6), (132, False)),  # groups: whole-episode weights
        ("GuardedMaze-v0", dict(objective="cvar0.2", value_baseline=False), (128, False)),
        ("RiskyLavaGrid-v0", dict(objective="mean"), (16, False)),
        ("Pendulum-v1", dict(objective="cvar0.2"), (32, "history")),  # long episodes: the history baseline
    ],
)
def test_ppo_long_episode_defaults(env, kwargs: dict, expected: tuple[int, bool | str]) -> None:
    model = OrderGradPPO("MlpPolicy", env if isinstance(env, str) else env(), **kwargs)
    assert (model.n_episodes, model.value_baseline) == expected


def test_timed_box_rollout_budget_is_sb3_ppos_rollout_on_continuous_actions_with_a_time_limit() -> None:
    box, discrete = gym.spaces.Box(-1, 1, (2,)), gym.spaces.Discrete(3)
    assert timed_box_rollout_steps(RANKED_ROLLOUT_STEPS, box, 50) == TIMED_BOX_ROLLOUT_STEPS == 2048
    assert timed_box_rollout_steps(RANKED_ROLLOUT_STEPS, discrete, 50) == RANKED_ROLLOUT_STEPS  # categorical
    assert timed_box_rollout_steps(RANKED_ROLLOUT_STEPS, box, None) == RANKED_ROLLOUT_STEPS  # no time limit
    assert timed_box_rollout_steps(REINFORCE_RANKED_ROLLOUT_STEPS, box, 50) == REINFORCE_RANKED_ROLLOUT_STEPS  # below
    # Long episodes take the floor of 32 episodes either way.
    assert ranked_n_episodes(129, TIMED_BOX_ROLLOUT_STEPS) == ranked_n_episodes(129) == 32
    # OrderGradREINFORCE keeps its own budget; the sb3-contrib variants take the PPO family's.
    assert OrderGradREINFORCE("MlpPolicy", "RiskyShortcutNav-v2", objective="cvar0.2").n_episodes == 32


@pytest.mark.parametrize(
    ("env", "expected"),
    [("CartPole-v1", 32), ("RiskyLavaGrid-v0", 32), ("GuardedMaze-v0", 32), ("HeavyTailBandit-v0", 256)]
    + [("SyntheticTailRisk-v0", 256)],  # no episode limit
)
def test_long_episode_defaults_are_ordergrad_ppo_only(env: str, expected: int) -> None:
    """OrderGradREINFORCE sizes its ranked rollout by the episode limit at its own step budget (at most 1024 steps
    at the limit: 32 episodes of 30 steps or more, 256 of one step; at least ``2 k``, a multiple of the group size),
    16 episodes for the mean, and gets the history baseline on categorical actions at any episode length (its own
    rule, :func:`default_reinforce_value_baseline`, not the long-episode one; the portfolio's ``Box`` actions keep
    whole-episode weights)."""
    assert ranked_n_episodes(30, REINFORCE_RANKED_ROLLOUT_STEPS) == 32 and ranked_n_episodes(8, 1024) == 128
    model = OrderGradREINFORCE("MlpPolicy", env, objective="cvar0.2", n_envs=1)
    baseline = False if env == "SyntheticTailRisk-v0" else "history"
    assert (model.n_episodes, model.value_baseline) == (expected, baseline)
    assert OrderGradREINFORCE("MlpPolicy", env, objective="cvar0.2@200", n_envs=1).n_episodes == max(400, expected)
    assert OrderGradREINFORCE("MlpPolicy", env, objective="top2@4", group_size=6, n_envs=1).n_episodes == (
        expected + 4 if expected == 32 else 258
    )
    assert OrderGradREINFORCE("MlpPolicy", env, objective="mean", n_envs=1).n_episodes == 16


@pytest.mark.parametrize(
    ("cls", "env", "kwargs", "expected"),
    [
        # Discrete actions, short episodes: the bonus held, then decayed over the last 40% of training.
        (OrderGradPPO, "RiskyLavaGrid-v0", dict(objective="cvar0.2"), SHORT_RANKED_ENT_COEF),
        (OrderGradPPO, "CartPole-v1", dict(objective="gcvar0.2"), RANKED_ENT_COEF),  # long episodes: held throughout
        (OrderGradPPO, "CartPole-v1", dict(objective="mean"), 0.0),
        (OrderGradPPO, lambda: MultiDiscreteBandit(), dict(objective="top2@4"), SHORT_RANKED_ENT_COEF),  # no limit
        (OrderGradPPO, "RiskyLavaGrid-v0", dict(objective="mean"), 0.0),  # SB3's, for the mean
        (OrderGradPPO, "SyntheticTailRisk-v0", dict(objective="cvar0.2"), 0.0),  # Box actions: a Gaussian's entropy
        (OrderGradPPO, "RiskyLavaGrid-v0", dict(objective="cvar0.2", ent_coef=0.0), 0.0),  # as given
        (OrderGradPPO, "RiskyLavaGrid-v0", dict(objective="cvar0.2", ent_coef=0.05), 0.05),
        # OrderGradREINFORCE's own bonus, decayed to 0 over training (its policy term sums each episode's steps).
        (OrderGradREINFORCE, "RiskyLavaGrid-v0", dict(objective="cvar0.2"), REINFORCE_RANKED_ENT_COEF),
        (OrderGradREINFORCE, "GuardedMaze-v0", dict(objective="top2@4", ent_coef=None), REINFORCE_RANKED_ENT_COEF),
        (OrderGradREINFORCE, "RiskyLavaGrid-v0", dict(objective="mean"), 0.0),
        (OrderGradREINFORCE, "SyntheticTailRisk-v0", dict(objective="cvar0.2"), 0.0),
        (OrderGradREINFORCE, "RiskyLavaGrid-v0", dict(objective="cvar0.2", ent_coef=0.0), 0.0),
    ],
)
def test_ranked_objectives_on_categorical_actions_get_an_entropy_bonus(cls, env, kwargs, expected, tmp_path) -> None:
    model = cls("MlpPolicy", env if isinstance(env, str) else env(), n_episodes=8, **kwargs)
    assert _schedule_values(model.ent_coef) == _schedule_values(expected)
    assert hparam_value(model.hparams()["ent_coef"]) == hparam_value(expected)
    model.save(tmp_path / "model.zip")
    assert _schedule_values(cls.load(tmp_path / "model.zip").ent_coef) == _schedule_values(expected)


def _schedule_values(value: Any) -> Any:
    """A schedule's values at the start, the middle and the end of training (SB3's schedules define no equality); a
    number as it is."""
    return tuple(value(p) for p in (1.0, 0.5, 0.0)) if callable(value) else value


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_an_entropy_schedule_is_evaluated_at_each_update(cls, tmp_path) -> None:
    """A callable ``ent_coef`` (SB3's schedule convention) gives each update its value at the progress of training;
    ``train/ent_coef`` logs it; a save keeps the schedule."""
    from stable_baselines3.common.logger import configure

    model = cls("MlpPolicy", "CartPole-v1", objective="cvar0.25", n_episodes=4, seed=0, ent_coef=_halving)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(400)
    logged = _logged_ent_coefs(tmp_path)
    assert len(logged) >= 2 and len({coef for _, coef in logged}) == len(logged)  # a new value at each update
    for _, coef in logged:
        assert 0.0 < coef <= 0.5
    model.save(tmp_path / "model.zip")
    assert cls.load(tmp_path / "model.zip").ent_coef is _halving


def _logged_ent_coefs(log_dir) -> list[tuple[float, float]]:
    """``(total timesteps, train/ent_coef)`` of each update in a CSV log's ``progress.csv``."""
    rows = (log_dir / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    return [
        (float(cells[header.index("time/total_timesteps")]), float(cells[header.index("train/ent_coef")]))
        for cells in (row.split(",") for row in rows[1:])
        if cells[header.index("train/ent_coef")]
    ]


def _halving(progress_remaining: float) -> float:
    return 0.5 * progress_remaining


@pytest.mark.parametrize("bad", ["0.01x", float("nan"), [0.01]])
def test_a_bad_entropy_coefficient_is_refused_by_name(bad) -> None:
    with pytest.raises(ValueError, match="ent_coef must be"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", ent_coef=bad)


class MultiDiscreteBandit(gym.Env):
    """One step, ``MultiDiscrete([3, 2])`` actions, reward ``a_0 - a_1``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.MultiDiscrete([3, 2])

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), float(action[0] - action[1]), True, False, {}


class ConstantBandit(gym.Env):
    """One step, three arms that all pay exactly 1: every ranked objective's weights are zero."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        return np.zeros(1, np.float32), 1.0, True, False, {}


def test_default_entropy_bonus_reaches_the_update() -> None:
    """All weights are zero (and no baseline's terms): with ``ent_coef=0.0`` the update leaves a skewed policy exactly
    as it is, with the default bonus its entropy rises (kept on these tied rollouts by ``entropy_when_tied``; its
    default leaves them alone, tests/test_risk_schedules.py)."""
    entropies = {}
    for ent_coef in (None, 0.0):
        model = OrderGradPPO("MlpPolicy", ConstantBandit(), objective="cvar0.2", n_episodes=16, seed=0,
                             ent_coef=ent_coef, entropy_when_tied=True, value_baseline=False)  # fmt: skip
        with th.no_grad():
            model.policy.action_net.bias.copy_(th.tensor([4.0, 0.0, 0.0]))  # P(arm 0) about 0.96
        before = model.policy.get_distribution(th.zeros(1, 1)).entropy().item()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # few updates
            model.learn(16 * 3)
        entropies[ent_coef] = (before, model.policy.get_distribution(th.zeros(1, 1)).entropy().item())
    assert entropies[None][1] > entropies[None][0] + 1e-3
    assert entropies[0.0][1] == pytest.approx(entropies[0.0][0], abs=1e-6)


@pytest.mark.parametrize(
    ("env", "kwargs", "relative", "coef"),
    [
        ("RiskyLavaGrid-v0", dict(objective="cvar0.2"), False, SHORT_RANKED_ENT_COEF),  # the default: not relative
        ("RiskyLavaGrid-v0", dict(objective="cvar0.2", relative_ent_coef=True), True, RELATIVE_RANKED_ENT_COEF),
        ("CartPole-v1", dict(objective="top2@4", relative_ent_coef=True), True, RELATIVE_RANKED_ENT_COEF),
        ("RiskyLavaGrid-v0", dict(objective="cvar0.2", ent_coef=0.05, relative_ent_coef=True), True, 0.05),  # as given
        ("RiskyLavaGrid-v0", dict(objective="mean", relative_ent_coef=True), True, 0.0),  # no bonus to scale
        ("SyntheticTailRisk-v0", dict(objective="cvar0.2", relative_ent_coef=True), True, 0.0),  # Box: no bonus
    ],
)
def test_a_relative_bonus_takes_its_own_default_coefficient(env, kwargs, relative, coef, tmp_path) -> None:
    model = OrderGradPPO("MlpPolicy", env, n_episodes=8, **kwargs)
    assert model.relative_ent_coef is relative and model.ent_coef == coef
    assert model.hparams()["relative_ent_coef"] is relative
    model.save(tmp_path / "model.zip")
    loaded = OrderGradPPO.load(tmp_path / "model.zip")
    assert loaded.relative_ent_coef is relative and loaded.ent_coef == coef
    old = save_from_before(tmp_path / "model.zip", tmp_path / "old.zip", "relative_ent_coef")
    assert OrderGradPPO.load(old).relative_ent_coef is False  # a save from before trained with a fixed coefficient


def test_a_relative_bonus_is_the_coefficient_times_the_rollouts_advantage_rms(tmp_path) -> None:
    """Each update's ``train/ent_coef`` is ``ent_coef`` times the root mean square of that rollout's per-step
    advantages (after the history baseline); OrderGradREINFORCE's coefficient stays fixed."""
    from stable_baselines3.common.logger import configure

    model = OrderGradPPO(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=16, seed=0, relative_ent_coef=True
    )
    assert model.value_baseline == "history"
    model.set_logger(configure(str(tmp_path), ["csv"]))
    scales = []
    train = model.train

    def train_and_record() -> None:
        scales.append(float(np.sqrt(np.mean(np.square(model.rollout_buffer.advantages, dtype=np.float64)))))
        train()

    model.train = train_and_record  # type: ignore[method-assign]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(16 * 30 * 3)
    rows = (tmp_path / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    column = header.index("train/ent_coef")
    logged = [float(cells[column]) for cells in (row.split(",") for row in rows[1:]) if cells[column]]
    # The logger writes an update's values at the next rollout's end: the last update's may not be written yet.
    assert len(scales) - 1 <= len(logged) <= len(scales) and len(logged) >= 3 and len(set(logged)) == len(logged)
    expected = [RELATIVE_RANKED_ENT_COEF * scale for scale in scales[: len(logged)]]
    np.testing.assert_allclose(logged, expected, rtol=1e-6)
    assert 0.0 < min(scales) and max(scales) < 10.0
    assert not hasattr(OrderGradREINFORCE("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2"), "relative_ent_coef")


def test_a_relative_bonus_keeps_its_unit_scale_where_nothing_is_ranked(tmp_path) -> None:
    """Every weight zero (a constant payoff, no baseline): the bonus is the coefficient itself, not zero."""
    from stable_baselines3.common.logger import configure

    model = OrderGradPPO("MlpPolicy", ConstantBandit(), objective="cvar0.2", n_episodes=16, seed=0,
                         entropy_when_tied=True, value_baseline=False, relative_ent_coef=True)  # fmt: skip
    assert model.relative_ent_coef is True
    model.set_logger(configure(str(tmp_path), ["csv"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(16 * 2)
    rows = (tmp_path / "progress.csv").read_text().splitlines()
    header = rows[0].split(",")
    column = header.index("train/ent_coef")
    logged = {float(cells[column]) for cells in (row.split(",") for row in rows[1:]) if cells[column]}
    assert logged == {RELATIVE_RANKED_ENT_COEF}


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_a_bad_relative_ent_coef_is_refused_by_name(bad) -> None:
    with pytest.raises(ValueError, match="relative_ent_coef must be True or False"):
        OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", relative_ent_coef=bad)


def test_episode_limit_reads_the_time_limit_of_every_env_form() -> None:
    from ordergrad_rl.agents.common.env_util import episode_limit

    assert episode_limit("CartPole-v1") == 500 and episode_limit(gym.make("Acrobot-v1")) == 500
    assert episode_limit(make_vec_env("CartPole-v1", 2)) == 500
    assert episode_limit(gym.make("CartPole-v1", max_episode_steps=40)) == 40
    assert episode_limit("SyntheticTailRisk-v0") is None  # a fixed horizon, no TimeLimit
    assert episode_limit(make_sb3_vec_env("SyntheticTailRisk-v0", 4, seed=0)) is None
    assert episode_limit("NoSuchEnv-v0") is None  # left to build_env to refuse


def test_episode_limit_of_nested_time_limits_is_the_one_that_truncates_first() -> None:
    """Gymnasium truncates at the smaller of two TimeLimits; the spec names the outermost one."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

    from ordergrad_rl.agents.common.env_util import episode_limit

    def nested(outer: int) -> gym.Env:
        return gym.wrappers.TimeLimit(gym.make("CartPole-v1"), outer)  # CartPole-v1's own limit: 500

    assert nested(1000).spec.max_episode_steps == 1000  # what was read before
    assert episode_limit(nested(1000)) == 500 and episode_limit(nested(100)) == 100
    assert episode_limit(Monitor(nested(1000))) == 500
    assert episode_limit(VecMonitor(DummyVecEnv([lambda: nested(1000)]))) == 500
    # A long-episode env (> 128 steps) by the outer limit, a short one by the limit that truncates: short defaults.
    short = gym.make("CartPole-v1", max_episode_steps=50)
    model = OrderGradPPO("MlpPolicy", gym.wrappers.TimeLimit(short, 1000), objective="cvar0.2")
    expected = OrderGradPPO("MlpPolicy", gym.make("CartPole-v1", max_episode_steps=50), objective="cvar0.2")
    assert model.n_episodes == expected.n_episodes == 128  # 32 with the outer limit's long-episode defaults
    assert repr(model.ent_coef) == repr(expected.ent_coef)  # held, then decayed (a constant 0.01 on long ones)


class _SubclassedTimeLimit(gym.wrappers.TimeLimit):
    """A TimeLimit of another class (``train --env-wrapper`` keeps such one outside the Monitor)."""


def test_a_subprocess_vec_env_reads_the_nested_time_limit_that_a_dummy_vec_env_reads() -> None:
    """A SubprocVecEnv's wrappers are in its workers: the spec it reports names the outermost TimeLimit (1000 around
    CartPole-v1's 500), which was read as the limit, where a DummyVecEnv of the same envs gave 500."""
    from functools import partial

    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from ordergrad_rl.agents.common.env_util import episode_limit
    from ordergrad_rl.envs.bandit import RiskyBanditEnv

    def limits(env_id, wrapper_class) -> list[int | None]:
        read = []
        for vec_env_cls in (DummyVecEnv, SubprocVecEnv):
            kwargs = {"start_method": "fork"} if vec_env_cls is SubprocVecEnv else None
            venv = make_vec_env(env_id, 2, vec_env_cls=vec_env_cls, vec_env_kwargs=kwargs, wrapper_class=wrapper_class)
            try:
                read.append(episode_limit(venv))
                venv.reset()  # the workers are alive
            finally:
                venv.close()
        return read

    assert limits("CartPole-v1", partial(gym.wrappers.TimeLimit, max_episode_steps=1000)) == [500, 500]
    assert limits("CartPole-v1", partial(_SubclassedTimeLimit, max_episode_steps=1000)) == [500, 500]
    assert limits("CartPole-v1", partial(gym.wrappers.TimeLimit, max_episode_steps=77)) == [77, 77]  # the outer one
    assert limits("CartPole-v1", None) == [500, 500]
    # An unregistered env (no spec): the outermost TimeLimit's _max_episode_steps, then the workers' smallest.
    unregistered = lambda: gym.wrappers.TimeLimit(gym.wrappers.TimeLimit(RiskyBanditEnv(), 3), 300)  # noqa: E731
    assert limits(unregistered, None) == [3, 3]
    # The defaults read it: 50-step episodes in a TimeLimit of 1000 take the short-episode defaults (128 episodes).
    venv = make_vec_env(
        "CartPole-v1",
        2,
        vec_env_cls=SubprocVecEnv,
        vec_env_kwargs={"start_method": "fork"},
        env_kwargs={"max_episode_steps": 50},
        wrapper_class=partial(gym.wrappers.TimeLimit, max_episode_steps=1000),
    )
    try:
        assert OrderGradPPO("MlpPolicy", venv, objective="cvar0.2").n_episodes == 128  # 32 by the outer limit
    finally:
        venv.close()


def test_a_vec_env_whose_env_is_wrapped_does_not_answer_keeps_its_specs_limit() -> None:
    """A VecEnv of one's own may refuse anything but a wrapper class, or say yes to every class: the spec's limit."""
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from ordergrad_rl.agents.common.env_util import episode_limit

    class Refusing(SubprocVecEnv):
        def env_is_wrapped(self, wrapper_class, indices=None):
            if not isinstance(wrapper_class, type):
                raise TypeError("a wrapper class")
            return super().env_is_wrapped(wrapper_class, indices)

    class YesToAll(SubprocVecEnv):
        def env_is_wrapped(self, wrapper_class, indices=None):
            return [True] * len(self._get_indices(indices))

    for cls in (Refusing, YesToAll):
        venv = cls([lambda: gym.wrappers.TimeLimit(gym.make("CartPole-v1"), 1000)] * 2, start_method="fork")
        try:
            assert episode_limit(venv) == 1000  # not 1 (yes to every TimeLimitAtMost)
            venv.reset()  # the workers are alive
        finally:
            venv.close()


def test_episode_limit_reads_a_time_limit_wrapped_around_an_unregistered_env() -> None:
    """gymnasium.wrappers.TimeLimit(env, n) around an env made without gym.make has no spec to read it from."""
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    from ordergrad_rl.agents.common.env_util import episode_limit
    from ordergrad_rl.envs.bandit import RiskyBanditEnv

    assert RiskyBanditEnv().spec is None and episode_limit(RiskyBanditEnv()) is None
    assert episode_limit(gym.wrappers.TimeLimit(RiskyBanditEnv(), 300)) == 300
    assert episode_limit(Monitor(gym.wrappers.TimeLimit(RiskyBanditEnv(), 300))) == 300
    assert episode_limit(DummyVecEnv([lambda: Monitor(gym.wrappers.TimeLimit(RiskyBanditEnv(), 300))])) == 300
    assert episode_limit(DummyVecEnv([lambda: Monitor(RiskyBanditEnv())])) is None
    # A subprocess worker dies on a get_attr of an attribute its env lacks: the wrapper is asked about first.
    subproc = SubprocVecEnv([lambda: Monitor(RiskyBanditEnv())] * 2, start_method="fork")
    try:
        assert episode_limit(subproc) is None
        subproc.reset()  # the workers are alive
    finally:
        subproc.close()
    subproc = SubprocVecEnv([lambda: gym.wrappers.TimeLimit(RiskyBanditEnv(), 300)] * 2, start_method="fork")
    try:
        assert episode_limit(subproc) == 300
    finally:
        subproc.close()
    # The defaults read it: 300 steps are long episodes (32 per rollout for a ranked objective).
    model = OrderGradPPO("MlpPolicy", gym.wrappers.TimeLimit(RiskyBanditEnv(), 300), objective="cvar0.2")
    assert model.n_episodes == 32 and model.value_baseline == "history"


@pytest.mark.parametrize("algorithm", [OrderGradPPO, OrderGradREINFORCE])
def test_a_subprocess_vec_env_trains_and_evaluates(algorithm) -> None:
    """A SubprocVecEnv's worker dies on a get_attr of an attribute its env lacks (CartPole-v1 has no noise_probs or
    info_names), so the agents ask with has_attr first; an env that has them is read through the workers."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from ordergrad_rl.agents.common.episodic import env_noise_probs
    from ordergrad_rl.agents.common.evaluation import info_component_names

    venv = make_vec_env("CartPole-v1", 2, seed=0, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "fork"})
    try:
        assert env_noise_probs(venv) is None and info_component_names(venv) == {}
        model = algorithm("MlpPolicy", venv, objective="cvar0.2", n_episodes=4, seed=0)
        model.learn(600)
        assert model.num_timesteps >= 600
        venv.reset()  # the workers are alive
    finally:
        venv.close()
    maze = make_vec_env("GuardedMaze-v0", 2, seed=0, vec_env_cls=SubprocVecEnv, vec_env_kwargs={"start_method": "fork"})
    try:
        assert env_noise_probs(maze) == gym.make("GuardedMaze-v0").unwrapped.noise_probs
        model = algorithm("MlpPolicy", maze, objective="cvar0.2", n_episodes=4, noise_sampler=True, seed=0)
        model.learn(400)
    finally:
        maze.close()


def test_a_spawned_subprocess_worker_makes_the_envs_from_their_module_qualified_ids() -> None:
    """A spawned worker has imported only the main script (here pytest's), not ordergrad_rl: the README's
    ``"ordergrad_rl:<id>"`` form has gym.make import the module that registers the id."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    venv = make_vec_env(
        "ordergrad_rl:SyntheticTailRisk-v0",
        1,
        seed=0,
        vec_env_cls=SubprocVecEnv,
        vec_env_kwargs={"start_method": "spawn"},
    )
    try:
        assert venv.reset().shape == (1, *gym.make("SyntheticTailRisk-v0").observation_space.shape)
        venv.step(np.zeros((1, *venv.action_space.shape), dtype=np.float32))
    finally:
        venv.close()


def test_the_short_episode_bonus_is_held_then_decays_over_training(tmp_path) -> None:
    """OrderGradPPO's default bonus on short categorical episodes, as the updates see it (``train/ent_coef``): 0.01
    over the first 60% of training, then lower at each update to the end; a save resumes with the same schedule."""
    from stable_baselines3.common.logger import configure

    model = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=4, seed=0)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    model.learn(2_000)
    logged = _logged_ent_coefs(tmp_path)
    held = [coef for steps, coef in logged if steps <= 0.6 * 2_000]
    # Past the update that straddles 60%; 0.0 is a rollout tied at the best return (entropy_when_tied off).
    decayed = [coef for steps, coef in logged if steps > 0.6 * 2_000 + 200 and coef > 0.0]
    assert held and set(held) <= {RANKED_ENT_COEF, 0.0} and RANKED_ENT_COEF in held
    assert len(decayed) >= 2 and decayed == sorted(decayed, reverse=True) and len(set(decayed)) == len(decayed)
    assert decayed[-1] < RANKED_ENT_COEF / 2
    model.save(tmp_path / "model.zip")
    assert OrderGradPPO.load(tmp_path / "model.zip").ent_coef == SHORT_RANKED_ENT_COEF
