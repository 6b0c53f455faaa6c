"""Drop-in use by SB3 users (issue 10): SB3's arguments, policies, models and saves, through the public API only."""

from __future__ import annotations

import typing
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import SpaceSampleEnv  # tests/ is on sys.path under pytest
from gymnasium import spaces
from sb3_contrib import RecurrentPPO
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy, MultiInputActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import (
    OrderGradActorCriticPolicy,
    OrderGradMaskablePPO,
    OrderGradPPO,
    OrderGradQCriticPPO,
    OrderGradRecurrentPPO,
    OrderGradREINFORCE,
)
from ordergrad_rl.agents.common.policies import act_without_critic, forward_observed

ALGORITHMS = [OrderGradREINFORCE, OrderGradPPO]


class FixedLengthEnv(gym.Env):
    """Episodes of exactly ``length`` steps; counts the steps taken on this object."""

    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)

    def __init__(self, length: int = 10, action_space: spaces.Space | None = None) -> None:
        self.length = length
        self.action_space = action_space or spaces.Discrete(2)
        self.steps_taken = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(3, np.float32), {}

    def step(self, action):
        assert np.shape(action) == self.action_space.shape  # the space's shape, as SB3 sends it
        self.t += 1
        self.steps_taken += 1
        reward = float(np.sum(action)) if isinstance(self.action_space, spaces.Box) else float(action)
        return np.full(3, self.t / self.length, np.float32), reward, self.t >= self.length, False, {}


def same_actions(a, b, obs: np.ndarray) -> bool:
    return np.array_equal(a.predict(obs, deterministic=True)[0], b.predict(obs, deterministic=True)[0])


OBS = np.random.default_rng(0).uniform(-0.05, 0.05, size=(16, 4)).astype(np.float32)


# ---------------------------------------------------------------------------------------------- issue 10 bugs
@pytest.mark.parametrize("cls", ALGORITHMS)
def test_bug1_sb3s_older_net_arch_format_trains(cls) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SB3's own deprecation warning for this format
        model = cls(
            "MlpPolicy",
            "CartPole-v1",
            objective="mean",
            n_episodes=4,
            policy_kwargs=dict(net_arch=[dict(pi=[8], vf=[8])]),
        )
        model.learn(100)
    assert [
        layer.out_features for layer in model.policy.mlp_extractor.policy_net if hasattr(layer, "out_features")
    ] == [8]


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_bug2_box_actions_with_a_multidimensional_shape(cls) -> None:
    env = FixedLengthEnv(5, spaces.Box(-1.0, 1.0, (2, 2), np.float32))
    model = cls("MlpPolicy", env, objective="mean", n_episodes=4)
    model.learn(40)  # FixedLengthEnv.step asserts the (2, 2) shape
    assert model.rollout_buffer.actions.shape == (20, 4) and env.steps_taken >= 20
    assert model.predict(np.zeros(3, np.float32))[0].shape == (2, 2)


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_bug3_load_accepts_the_policy_kwargs_the_model_was_built_with(cls, tmp_path) -> None:
    policy_kwargs = dict(net_arch=[16], ortho_init=False)
    model = cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4, policy_kwargs=policy_kwargs)
    assert model.policy_kwargs == policy_kwargs  # nothing injected
    model.save(tmp_path / "model")
    loaded = cls.load(tmp_path / "model", policy_kwargs=dict(net_arch=[16], ortho_init=False))
    assert same_actions(model, loaded, OBS)
    with pytest.raises(ValueError, match="policy kwargs do not equal"):  # SB3's own check still applies
        cls.load(tmp_path / "model", policy_kwargs=dict(net_arch=[32]))


@pytest.mark.parametrize("advantage", ["episodic_reinforce", "episodic", "q_critic"])
def test_load_takes_sb3s_own_options_by_position_as_sb3s_load(advantage: str, tmp_path) -> None:
    # SB3's load(path, env, device, custom_objects, print_system_info, force_reset): the OrderGrad loads named only
    # (path, env, device), so SB3's positional call failed with "takes from 2 to 4 positional arguments".
    if advantage == "episodic_reinforce":
        model = OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4)
    elif advantage == "episodic":
        model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4)
    else:
        model = OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", n_steps=16)
    model.save(tmp_path / "model")
    loaded = type(model).load(tmp_path / "model", None, "cpu", {"gamma": 0.9}, False, True)
    assert type(loaded) is type(model) and loaded.gamma == 0.9 and same_actions(model, loaded, OBS)


def test_bug3_q_critic_mode_keeps_the_users_policy_kwargs(tmp_path) -> None:
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", n_steps=16)
    assert model.policy_kwargs == {} and model.policy.critic == "q" and model.policy.value_net.out_features == 2
    model.save(tmp_path / "q")
    loaded = OrderGradPPO.load(tmp_path / "q", policy_kwargs={})
    assert loaded.policy.critic == "q" and same_actions(model, loaded, OBS)


def test_bug5_a_q_critic_save_loads_into_sb3s_ppo_with_its_q_head(tmp_path) -> None:
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="mean", n_steps=32, seed=0)
    model.learn(64)
    model.save(tmp_path / "q")
    ppo = PPO.load(tmp_path / "q", env=make_vec_env("CartPole-v1", n_envs=1, seed=1))
    assert ppo.policy.value_net.out_features == 2 and same_actions(model, ppo, OBS)
    q_before = ppo.policy.value_net.weight.detach().clone()
    ppo.learn(2 * ppo.n_steps)  # SB3's own PPO update, its value loss on Q(s, a)
    assert not th.equal(q_before, ppo.policy.value_net.weight)


@pytest.mark.parametrize(("cls", "sb3_cls"), [(OrderGradPPO, PPO), (OrderGradREINFORCE, A2C)])
def test_bug5_episodic_buffer_options_stay_out_of_sb3s_buffer(cls, sb3_cls, tmp_path) -> None:
    options = {"max_episode_steps": 600}
    model = cls("MlpPolicy", "CartPole-v1", n_episodes=4, rollout_buffer_kwargs=options, seed=0)
    assert model.rollout_buffer.max_episode_steps == 600 and options == {"max_episode_steps": 600}
    model.save(tmp_path / "og")
    loaded = cls.load(tmp_path / "og", env=make_vec_env("CartPole-v1", n_envs=1))
    assert loaded.rollout_buffer.max_episode_steps == 600  # kept through save/load
    short = dict(n_steps=32, n_epochs=1) if sb3_cls is PPO else {}
    sb3_model = sb3_cls.load(tmp_path / "og", env=make_vec_env("CartPole-v1", n_envs=1), **short)
    assert type(sb3_model.rollout_buffer) is RolloutBuffer
    sb3_model.learn(sb3_model.n_steps)


@pytest.mark.parametrize(
    ("cls", "sb3_cls", "env_id"), [(OrderGradPPO, PPO, "RiskyLavaGrid-v0"), (OrderGradREINFORCE, A2C, "CartPole-v1")]
)
def test_a_scheduled_ent_coef_saves_as_a_number_sb3_can_train_with(cls, sb3_cls, env_id, tmp_path) -> None:
    # The ranked defaults here schedule the bonus (a held-then-decayed one on short categorical episodes, a linear
    # one for OrderGradREINFORCE): SB3's update multiplies by ent_coef, and a schedule there crashed it.
    model = cls("MlpPolicy", env_id, objective="cvar0.2", n_episodes=4, seed=0)
    schedule = model.ent_coef
    assert callable(schedule)
    model.learn(200)
    model.save(tmp_path / "og")
    assert model.ent_coef is schedule and not hasattr(model, "ent_coef_schedule")  # save leaves the model as it was
    short = dict(n_steps=32, n_epochs=1) if sb3_cls is PPO else {}
    sb3_model = sb3_cls.load(tmp_path / "og", env=make_vec_env(env_id, n_envs=1), **short)
    assert sb3_model.ent_coef == pytest.approx(schedule(model._current_progress_remaining))  # the one in force
    sb3_model.learn(64)
    loaded = cls.load(tmp_path / "og")
    assert repr(loaded.ent_coef) == repr(schedule) and not hasattr(loaded, "ent_coef_schedule")
    assert cls.load(tmp_path / "og", ent_coef=0.0).ent_coef == 0.0  # the caller's value wins


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_bug4_rollout_buffer_holds_numpy_arrays(cls) -> None:
    model = cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4).learn(50)
    buffer = model.rollout_buffer
    for name in ("observations", "actions", "log_probs", "advantages", "values", "returns"):
        assert isinstance(getattr(buffer, name), np.ndarray), name


@pytest.mark.parametrize(("cls", "sb3_cls"), [(OrderGradPPO, PPO), (OrderGradREINFORCE, A2C)])
def test_bug5_an_ordergrad_save_loads_into_sb3_as_a_working_sb3_model(cls, sb3_cls, tmp_path) -> None:
    model = cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4, seed=0).learn(100)
    model.save(tmp_path / "og")
    sb3_model = sb3_cls.load(tmp_path / "og")
    assert same_actions(model, sb3_model, OBS)  # the policy's weights
    assert sb3_model.n_steps == (2048 if sb3_cls is PPO else 5)  # SB3's own rollout length
    if sb3_cls is A2C:
        assert sb3_model.vf_coef == 0.5  # A2C's own, not REINFORCE's constant 0
        # The save's optimizer, whose state the file holds (A2C's RMSprop could not load it), as the README says.
        assert type(sb3_model.policy.optimizer) is th.optim.Adam
        readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
        assert "`A2C.load` of an `OrderGradREINFORCE` save trains with its Adam, not A2C's RMSprop" in readme
    short = dict(n_steps=32, n_epochs=1) if sb3_cls is PPO else {}  # a short rollout keeps the test fast
    sb3_model = sb3_cls.load(tmp_path / "og", env=make_vec_env("CartPole-v1", n_envs=2, seed=1), **short)
    assert type(sb3_model.rollout_buffer) is RolloutBuffer  # SB3's own buffer
    values_before = sb3_model.policy.value_net.weight.detach().clone()
    sb3_model.learn(sb3_model.n_steps * 2 * 2)
    assert not th.equal(values_before, sb3_model.policy.value_net.weight)  # SB3 trains the critic


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_bug6_sb3_rollout_arguments_get_a_clear_error(cls) -> None:
    envs = [FixedLengthEnv(10), FixedLengthEnv(10)]
    venv = DummyVecEnv([lambda env=env: env for env in envs])
    with pytest.raises(ValueError, match=r"set n_episodes .*not n_steps.*n_episodes=13 gives about as many"):
        cls("MlpPolicy", venv, n_steps=64)  # 64 x 2 steps / 10-step episodes = 12.8 -> 13
    assert [env.steps_taken for env in envs] == [0, 0]  # measured on a copy: the user's envs are untouched
    with pytest.raises(ValueError, match=r"n_steps=64 x 1 env\(s\) = 64 steps per rollout; the first \d+ episodes"):
        cls("MlpPolicy", "CartPole-v1", n_steps=64)  # an id: measured on a new env


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_the_n_steps_error_measures_a_monitored_env(cls) -> None:
    # SB3's make_vec_env wraps each env in a Monitor, which gym.make cannot build again from the env's spec: the
    # error for n_steps fell back to "about n_steps * n_envs / mean episode length", measuring nothing.
    with pytest.raises(ValueError, match=r"n_steps=64 x 2 env\(s\) = 128 steps per rollout; the first \d+ episodes"):
        cls("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2), n_steps=64)
    with pytest.raises(ValueError, match=r"n_steps=64 x 1 env\(s\) = 64 steps per rollout; the first \d+ episodes"):
        cls("MlpPolicy", Monitor(gym.make("CartPole-v1")), n_steps=64)


@pytest.mark.parametrize("name", ["gae_lambda", "vf_coef"])
def test_bug6_reinforce_refuses_critic_arguments(name: str) -> None:
    with pytest.raises(ValueError, match=f"OrderGradREINFORCE has no critic.*remove {name}"):
        OrderGradREINFORCE("MlpPolicy", "CartPole-v1", **{name: 0.9})


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_load_refuses_sb3s_n_steps_as_the_constructor_does(cls, tmp_path) -> None:
    # PPO.load(path, env, n_steps=...) sets SB3's rollout length; the episodic load ignored it without a word (the
    # rollout stayed n_episodes episodes), where the constructor names the n_episodes to use instead.
    cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match=r"set n_episodes .*not n_steps.*n_steps=64 x 1 env\(s\)"):
        cls.load(tmp_path / "og", env=gym.make("CartPole-v1"), n_steps=64)
    with pytest.raises(ValueError, match=r"set n_episodes .*not n_steps"):
        cls.load(tmp_path / "og", n_steps=64)


@pytest.mark.parametrize("name", ["gae_lambda", "vf_coef"])
def test_reinforce_load_refuses_critic_arguments_as_the_constructor_does(name: str, tmp_path) -> None:
    # A2C.load(path, vf_coef=...) sets A2C's critic weight; OrderGradREINFORCE.load took it and trained without it.
    OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match=f"OrderGradREINFORCE has no critic.*remove {name}"):
        OrderGradREINFORCE.load(tmp_path / "og", **{name: 0.9})


@pytest.mark.parametrize(("name", "value"), [("use_rms_prop", True), ("use_rms_prop", False), ("rms_prop_eps", 1e-5)])
def test_reinforce_refuses_a2c_optimizer_arguments_with_the_reason(name: str, value: object, tmp_path) -> None:
    # A2C(..., use_rms_prop=False) ported to OrderGradREINFORCE got a bare TypeError ("unexpected keyword argument"),
    # and OrderGradREINFORCE.load(path, use_rms_prop=True) set it and trained on with Adam without a word.
    with pytest.raises(ValueError, match=f"OrderGradREINFORCE has no {name}: .*Adam.*optimizer_class=torch.optim.RMSp"):
        OrderGradREINFORCE("MlpPolicy", "CartPole-v1", **{name: value})
    OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match=f"OrderGradREINFORCE has no {name}: "):
        OrderGradREINFORCE.load(tmp_path / "og", **{name: value})


# ---------------------------------------------------------------------------------------------- SB3 workflows
@pytest.fixture(scope="module")
def ppo_model() -> PPO:
    th.manual_seed(0)
    model = PPO(
        "MlpPolicy", "CartPole-v1", n_steps=64, batch_size=32, n_epochs=1, seed=0, policy_kwargs=dict(net_arch=[32])
    )
    return model.learn(128)


def test_fine_tuning_from_an_sb3_model(ppo_model) -> None:
    model = OrderGradPPO.from_sb3(ppo_model, objective="cvar0.25", n_episodes=8, value_baseline=False)
    assert isinstance(model.policy, OrderGradActorCriticPolicy) and model.policy_kwargs == dict(net_arch=[32])
    assert same_actions(model, ppo_model, OBS)
    assert th.equal(model.policy.value_net.weight, ppo_model.policy.value_net.weight)  # kept
    assert model.policy.value_net.weight is not ppo_model.policy.value_net.weight  # a copy
    model.learn(200)
    # Fitted as critic_when_tied's discounted critic (a warm start from SB3's); without it, not trained.
    assert not th.equal(model.policy.value_net.weight, ppo_model.policy.value_net.weight)
    frozen = OrderGradPPO.from_sb3(ppo_model, objective="cvar0.25", n_episodes=8, value_baseline=False,
                                   critic_when_tied=False).learn(200)  # fmt: skip
    assert th.equal(frozen.policy.value_net.weight, ppo_model.policy.value_net.weight)
    # CartPole's 500-step limit: by default a ranked objective gets the history baseline; SB3's value head is kept.
    model = OrderGradPPO.from_sb3(ppo_model, objective="cvar0.25", n_episodes=8)
    assert model.value_baseline == "history"
    assert th.equal(model.policy.value_net.weight, ppo_model.policy.value_net.weight)
    # value_baseline=True starts the state baseline from SB3's value head.
    model = OrderGradPPO.from_sb3(ppo_model, objective="cvar0.25", n_episodes=8, value_baseline=True)
    assert model.value_baseline is True


def test_fine_tuning_from_an_sb3_save(ppo_model, tmp_path) -> None:
    ppo_model.save(tmp_path / "ppo")
    with pytest.raises(ValueError, match=r"OrderGradPPO.from_sb3\(path, env\)"):
        OrderGradPPO.load(tmp_path / "ppo")
    with pytest.raises(ValueError, match="needs env="):
        OrderGradPPO.from_sb3(tmp_path / "ppo.zip")
    model = OrderGradPPO.from_sb3(tmp_path / "ppo.zip", "CartPole-v1", objective="mean")
    assert same_actions(model, ppo_model, OBS)
    reinforce = OrderGradREINFORCE.from_sb3(tmp_path / "ppo.zip", "CartPole-v1", n_episodes=4)
    assert same_actions(reinforce, ppo_model, OBS)


def test_fine_tuning_from_a2c_keeps_the_layout_not_its_rmsprop() -> None:
    a2c = A2C("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[16]), seed=0)
    assert a2c.policy_kwargs["optimizer_class"] is th.optim.RMSprop
    model = OrderGradREINFORCE.from_sb3(a2c, n_episodes=4)
    assert type(model.policy.optimizer) is th.optim.Adam and same_actions(model, a2c, OBS)
    assert model.policy_kwargs["net_arch"] == [16]


def test_fine_tuning_into_q_critic_mode_starts_a_fresh_q_head(ppo_model) -> None:
    model = OrderGradPPO.from_sb3(ppo_model, advantage="q_critic", objective="top2@4", n_steps=16)
    assert model.policy.value_net.out_features == 2 and same_actions(model, ppo_model, OBS)


def test_set_parameters_of_an_sb3_model_names_the_critic_that_differs(ppo_model, tmp_path) -> None:
    # SB3's set_parameters of a PPO model's parameters into a Q-critic policy (one Q-value per action) or an episodic
    # recurrent one (no critic LSTM) failed inside torch ("size mismatch for value_net.weight"), exact_match or not.
    model = OrderGradPPO(
        "MlpPolicy",
        "CartPole-v1",
        advantage="q_critic",
        objective="top2@4",
        n_steps=16,
        policy_kwargs=dict(net_arch=[32]),
    )
    ppo_model.save(tmp_path / "ppo")
    for exact_match in (True, False):
        with pytest.raises(ValueError, match=r"value_net.weight.*per-action Q head.*from_sb3\(.*advantage='q_critic'"):
            model.set_parameters(tmp_path / "ppo.zip", exact_match=exact_match)
    recurrent_ppo = RecurrentPPO("MlpLstmPolicy", "CartPole-v1", n_steps=16, policy_kwargs=dict(lstm_hidden_size=8))
    recurrent = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "CartPole-v1", n_episodes=4, policy_kwargs=dict(lstm_hidden_size=8)
    )
    for exact_match in (True, False):
        with pytest.raises(ValueError, match=r"no critic \(episodic mode trains none\).*from_sb3"):
            recurrent.set_parameters(recurrent_ppo.get_parameters(), exact_match=exact_match)
    # Parameters that fit still load, and an actor that differs keeps torch's own error.
    model.set_parameters(model.get_parameters())
    with pytest.raises(RuntimeError, match="size mismatch for mlp_extractor.policy_net"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", n_steps=16).set_parameters(
            tmp_path / "ppo.zip"
        )


def test_fine_tuning_refuses_a_different_actor(ppo_model) -> None:
    with pytest.raises(
        ValueError, match=r"actor does not fit.*mlp_extractor.policy_net.0.weight \(64, 4\) vs \(32, 4\)"
    ):
        OrderGradPPO.from_sb3(ppo_model, objective="mean", policy_kwargs=dict(net_arch=[64]))


def image_env() -> FakeImageEnv:
    """36x36 grey images, the smallest NatureCNN reads, 10-step episodes."""
    return FakeImageEnv(action_dim=3, screen_height=36, screen_width=36, n_channels=1)


IMAGES = np.random.default_rng(0).integers(0, 256, size=(4, 36, 36, 1), dtype=np.uint8)


@pytest.mark.parametrize(
    ("sb3_cls", "policy", "cls"),
    [
        (PPO, "CnnPolicy", OrderGradPPO),
        (PPO, "CnnPolicy", OrderGradREINFORCE),
        (RecurrentPPO, "CnnLstmPolicy", OrderGradRecurrentPPO),
    ],
)
def test_fine_tuning_from_an_sb3_image_model(sb3_cls, policy: str, cls) -> None:
    """SB3 puts no hidden layers after NatureCNN (net_arch=[]); the recurrent agent's policy, which has no critic,
    put an actor of [64, 64] there, so from_sb3 of a RecurrentPPO CnnLstmPolicy model failed with "the SB3 policy's
    actor does not fit this policy ... build it with the SB3 model's policy_kwargs", which it was."""
    source = sb3_cls(policy, image_env(), n_steps=16, batch_size=16, seed=0)
    model = cls.from_sb3(source, image_env(), objective="cvar0.5", n_episodes=2)
    assert len(model.policy.mlp_extractor.policy_net) == 0 and model.policy_kwargs == {}
    assert same_actions(model, source, IMAGES)
    model.learn(20)


def test_fine_tuning_from_a_recurrent_model_with_separate_features_extractors() -> None:
    """With share_features_extractor=False the episodic recurrent policy has sb3-contrib's feed-forward critic
    (``critic.``, never trained) where RecurrentPPO's has a critic LSTM: from_sb3 refused the model with "the SB3
    policy's actor does not fit this policy (critic.weight ... vs absent)", though the actors are the same."""
    policy_kwargs = dict(share_features_extractor=False, lstm_hidden_size=8)
    source = RecurrentPPO("MlpLstmPolicy", FixedLengthEnv(4), n_steps=16, batch_size=16, policy_kwargs=policy_kwargs)
    model = OrderGradRecurrentPPO.from_sb3(source, FixedLengthEnv(4), objective="mean", n_episodes=2)
    observations = np.random.default_rng(0).uniform(-1, 1, size=(8, 3)).astype(np.float32)
    assert same_actions(model, source, observations)
    model.learn(16)


def test_an_actor_without_a_critic_has_sb3s_default_network_for_its_features_extractor() -> None:
    """After NatureCNN none (SB3's net_arch=[]); after the other extractors (MLP, MultiInputPolicy's
    CombinedExtractor, also of images) [64, 64] as before, the benchmarks' MLP networks unchanged."""
    recurrent = OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", objective="mean", n_episodes=2)
    assert recurrent.policy.critic_kind == "none" and recurrent.policy.net_arch == dict(pi=[64, 64], vf=[])
    recurrent = OrderGradRecurrentPPO("CnnLstmPolicy", image_env(), objective="mean", n_episodes=2)
    assert recurrent.policy.net_arch == dict(pi=[], vf=[])
    ppo = OrderGradPPO("CnnPolicy", image_env(), objective="mean", n_episodes=2, policy_kwargs=dict(critic="none"))
    assert ppo.policy.net_arch == dict(pi=[], vf=[])
    images = spaces.Dict({"image": image_env().observation_space, "x": FixedLengthEnv.observation_space})
    multi = OrderGradRecurrentPPO("MultiInputLstmPolicy", SpaceSampleEnv(images), objective="mean", n_episodes=2)
    assert multi.policy.net_arch == dict(pi=[64, 64], vf=[])  # SB3's [64, 64] after CombinedExtractor
    assert PPO("MultiInputPolicy", SpaceSampleEnv(images)).policy.net_arch == dict(pi=[64, 64], vf=[64, 64])


@pytest.mark.parametrize(
    ("cls", "policy", "policy_kwargs"),
    [(OrderGradRecurrentPPO, "CnnLstmPolicy", {}), (OrderGradPPO, "CnnPolicy", dict(critic="none"))],
)
def test_image_saves_from_before_sb3s_default_network_still_load(cls, policy: str, policy_kwargs, tmp_path) -> None:
    """A save made while an actor without a critic got [64, 64] after NatureCNN too (policy_kwargs without net_arch,
    data without sb3_default_net_arch) loads with that actor, predicts as it did, and keeps it when saved again."""
    assert cls.saved_before["sb3_default_net_arch"] is False
    legacy = dict(pi=[64, 64], vf=[])
    kwargs = dict(objective="mean", n_episodes=2, seed=0)
    model = cls(policy, image_env(), **kwargs, policy_kwargs={**policy_kwargs, "net_arch": legacy})
    model.policy_kwargs = policy_kwargs  # what such a save holds
    del model.sb3_default_net_arch
    model.save(tmp_path / "old")
    for path in ("old", "again"):
        loaded = cls.load(tmp_path / path, env=image_env())
        assert loaded.policy.net_arch == legacy and loaded.policy_kwargs == policy_kwargs
        assert loaded.sb3_default_net_arch is False and same_actions(model, loaded, IMAGES)
        loaded.learn(20)
        loaded.save(tmp_path / "again")
        model = loaded


class DictObsEnv(FixedLengthEnv):
    observation_space = spaces.Dict({"x": spaces.Box(-1.0, 1.0, (3,), np.float32)})

    def reset(self, **kwargs):
        obs, info = super().reset(**kwargs)
        return {"x": obs}, info

    def step(self, action):
        obs, *rest = super().step(action)
        return {"x": obs}, *rest


@pytest.mark.parametrize("cls", ALGORITHMS)
@pytest.mark.parametrize(
    ("policy", "env"), [(ActorCriticPolicy, FixedLengthEnv), (MultiInputActorCriticPolicy, DictObsEnv)]
)
def test_sb3s_own_policy_classes_train_in_episodic_mode(cls, policy, env) -> None:
    model = cls(policy, env(4), objective="mean", n_episodes=4, seed=0)
    before = model.policy.action_net.weight.detach().clone()
    model.learn(32)
    assert type(model.policy) is policy and not th.equal(before, model.policy.action_net.weight)


def annotation(function: typing.Callable, name: str) -> typing.Any:
    """The annotation of ``function``'s parameter (or ``"return"``) ``name``, evaluated in its module."""
    return eval(function.__annotations__[name], function.__globals__)


@pytest.mark.parametrize("cls", ALGORITHMS)
@pytest.mark.parametrize("policy", [ActorCriticPolicy, MultiInputActorCriticPolicy])
def test_sb3s_policy_classes_type_check_as_a_policy(cls, policy) -> None:
    """As above they train, and SB3's PPO annotates ``policy: str | type[ActorCriticPolicy]``; ours said
    ``type[OrderGradActorCriticPolicy]``, so users' type checkers refused ``OrderGradPPO(ActorCriticPolicy, env)``."""
    members = typing.get_args(annotation(cls.__init__, "policy"))  # str | type[...]
    classes = [typing.get_args(member)[0] for member in members if typing.get_origin(member) is type]
    assert any(issubclass(policy, allowed) for allowed in classes)


def test_older_episodic_saves_without_value_layers_still_load(tmp_path) -> None:
    # Saves made before the value head was kept hold policy_kwargs["critic"] = "none" (no value layers).
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4, policy_kwargs=dict(critic="none"))
    assert model.policy.net_arch == dict(pi=[64, 64], vf=[])
    model.save(tmp_path / "old")
    loaded = OrderGradPPO.load(tmp_path / "old")
    assert loaded.policy.critic == "none" and same_actions(model, loaded, OBS)
    loaded.set_env(make_vec_env("CartPole-v1"))
    loaded.learn(50)


class UnregisteredSpecEnv(FixedLengthEnv):
    """Carries a spec whose id is in no registry, like SB3's BitFlippingEnv."""

    spec = gym.envs.registration.EnvSpec("NotRegistered-v0", "no-entry-point")


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_an_env_with_an_unregistered_spec_trains(cls) -> None:
    model = cls("MlpPolicy", UnregisteredSpecEnv(4), objective="mean", n_episodes=4).learn(16)
    assert model.num_timesteps >= 16
    with pytest.raises(ValueError, match="n_episodes=16 gives about as many"):  # 64 steps / 4-step episodes
        cls("MlpPolicy", UnregisteredSpecEnv(4), n_steps=64)


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_loading_a_file_that_is_no_zip_fails_as_in_sb3(cls, tmp_path) -> None:
    (tmp_path / "bad.zip").write_text("this is not a zip file")
    with pytest.raises(ValueError, match="wasn't a zip-file"):  # SB3's test_load_bad_zip matches this wording
        cls.load(tmp_path / "bad.zip")


@pytest.mark.parametrize(
    "cls", [OrderGradREINFORCE, OrderGradPPO, OrderGradRecurrentPPO, OrderGradMaskablePPO, OrderGradQCriticPPO]
)
def test_load_is_typed_as_sb3s_an_instance_of_the_class_it_is_called_on(cls) -> None:
    """SB3 types ``PPO.load(path)`` as a ``PPO``; ours returned ``Any``, so users' type checkers let
    ``OrderGradPPO.load(path).lern(...)`` pass (``OrderGradPPO.load`` may also give the Q-critic algorithm saved)."""
    (self_type,) = typing.get_args(annotation(cls.load, "cls"))  # cls: type[Self]
    returned = annotation(cls.load, "return")
    assert self_type in (typing.get_args(returned) or (returned,))


class AttributeVecEnv(DummyVecEnv):
    """A user's VecEnv whose ``get_attr`` reads its own attributes (SB3's test_vec_extract_dict_obs has one): it has no
    ``spec``."""

    def get_attr(self, attr_name: str, indices=None) -> list:
        return [getattr(self, attr_name) for _ in range(self.num_envs)]


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_a_vec_env_without_spec_trains_and_logs(cls, tmp_path) -> None:
    env = AttributeVecEnv([lambda: FixedLengthEnv(5)])
    model = cls("MlpPolicy", env, n_episodes=2, tensorboard_log=str(tmp_path)).learn(20)
    assert model.hparams()["env"] is None and model.num_timesteps >= 10


class _LocalsKinds(BaseCallback):
    """The type and shape of each of SB3's per-step ``self.locals`` at the first step."""

    NAMES = ("actions", "clipped_actions", "log_probs", "obs_tensor", "new_obs", "rewards", "dones", "n_steps")

    def __init__(self) -> None:
        super().__init__()
        self.kinds: dict[str, tuple[type, tuple[int, ...] | None]] = {}

    def _on_step(self) -> bool:
        self.kinds = {name: (type(self.locals[name]), getattr(self.locals[name], "shape", None)) for name in self.NAMES}
        self.kinds["infos"] = (type(self.locals["infos"]), (len(self.locals["infos"]),))
        return False


@pytest.mark.parametrize("cls", [*ALGORITHMS, OrderGradRecurrentPPO])
def test_a_callbacks_step_locals_have_sb3_ppos_types_and_shapes(cls) -> None:
    # log_probs was a NumPy array where SB3's PPO gives the tensor of its policy: log_probs.cpu() or th.exp(log_probs)
    # in a callback written for PPO failed.
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    expected, seen = _LocalsKinds(), _LocalsKinds()
    PPO("MlpPolicy", env, n_steps=8, batch_size=16).learn(1, callback=expected)
    policy = "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy"
    cls(policy, env, objective="mean", n_episodes=2, seed=0).learn(1, callback=seen)
    assert seen.kinds == expected.kinds


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_a_callbacks_step_actions_have_the_action_spaces_shape_as_in_sb3(cls) -> None:
    # A Box(2, 2) action gave a callback self.locals["actions"] of shape (n_envs, 4), SB3's PPO (n_envs, 2, 2).
    env = DummyVecEnv([lambda: FixedLengthEnv(3, spaces.Box(-1.0, 1.0, (2, 2), np.float32))] * 2)
    expected, seen = _LocalsKinds(), _LocalsKinds()
    PPO("MlpPolicy", env, n_steps=8, batch_size=16).learn(1, callback=expected)
    cls("MlpPolicy", env, objective="mean", n_episodes=2, seed=0).learn(1, callback=seen)
    assert seen.kinds == expected.kinds and seen.kinds["actions"][1] == (2, 2, 2)


class _RecurrentLocals(BaseCallback):
    """sb3-contrib's recurrent step locals at the first three steps: their kinds, the starts and the actor's state."""

    def __init__(self) -> None:
        super().__init__()
        self.kinds: list[tuple] = []
        self.starts: list[np.ndarray] = []
        self.states: list[np.ndarray] = []

    def _on_step(self) -> bool:
        states, starts = self.locals["lstm_states"], self.locals["episode_starts"]
        tensors = [(t.dtype, t.shape) for t in (*states.pi, *states.vf)]
        self.kinds.append((type(states), tensors, type(starts), starts.dtype, starts.shape))
        self.starts.append(starts.cpu().numpy().copy())
        self.states.append(states.pi[0].cpu().numpy().copy())
        return len(self.starts) < 3


def test_a_callbacks_step_locals_have_sb3_contribs_recurrent_lstm_states_and_episode_starts() -> None:
    # A callback written for RecurrentPPO (self.locals["lstm_states"], ["episode_starts"]) got a KeyError.
    env = DummyVecEnv([lambda: FixedLengthEnv(2)] * 2)
    policy_kwargs = dict(lstm_hidden_size=8)
    expected, seen = _RecurrentLocals(), _RecurrentLocals()
    RecurrentPPO("MlpLstmPolicy", env, n_steps=4, batch_size=8, policy_kwargs=policy_kwargs).learn(1, callback=expected)
    model = OrderGradRecurrentPPO("MlpLstmPolicy", env, objective="mean", n_episodes=4, policy_kwargs=policy_kwargs)
    model.learn(1, callback=seen)
    assert seen.kinds == expected.kinds
    # Episodes of 2 steps: the third step starts the next ones, from the first step's observation and a reset state.
    assert [starts.tolist() for starts in seen.starts] == [[1.0, 1.0], [0.0, 0.0], [1.0, 1.0]]
    assert np.array_equal(seen.states[2], seen.states[0]) and not np.array_equal(seen.states[1], seen.states[0])


class _RunName(BaseCallback):
    """The ``tb_log_name`` of ``self.locals`` at the training's start and at its first step."""

    def _on_training_start(self) -> None:
        self.names = [self.locals["tb_log_name"]]

    def _on_step(self) -> bool:
        self.names.append(self.locals["tb_log_name"])
        return False


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_a_callback_reads_the_run_name_in_tb_log_name_as_in_sb3(cls, tmp_path) -> None:
    # self.locals["tb_log_name"] was None (SB3 gives learn's argument, default "PPO"), where the run is named by default
    # after the first learn call has sized the rollout (OrderGradPPO, n_episodes=None: fewer episodes for a small
    # budget, and so another k).
    env = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    callback = _RunName()
    model = cls("MlpPolicy", env, objective="cvar0.5", tensorboard_log=str(tmp_path))
    unsized = model.run_name()
    model.learn(300, callback=callback)
    assert callback.names == [model.run_name()] * 2 and (model.run_name() != unsized) == cls.budget_sized_rollouts
    assert [path.name for path in tmp_path.iterdir()] == [f"{model.run_name()}_1"]
    callback = _RunName()
    model.learn(8, callback=callback, tb_log_name="method/seed0")  # a name given is learn's argument, as SB3's
    assert callback.names == ["method/seed0"] * 2


class _StepLocals(BaseCallback):
    """Keeps what ``self.locals`` holds at each step: the env actions SB3 exposes as ``clipped_actions``."""

    def __init__(self) -> None:
        super().__init__()
        self.actions: list[np.ndarray] = []
        self.clipped: list[np.ndarray] = []

    def _on_step(self) -> bool:
        self.actions.append(np.array(self.locals["actions"]))
        self.clipped.append(np.array(self.locals["clipped_actions"]))
        return True


@pytest.mark.parametrize("cls", ALGORITHMS)
def test_a_callback_sees_the_clipped_actions_the_env_received_as_in_sb3(cls) -> None:
    # A callback reading self.locals["clipped_actions"] (what SB3's collection sends to the env) got a KeyError.
    space = spaces.Box(-0.05, 0.05, (2,), np.float32)
    callback = _StepLocals()
    cls("MlpPolicy", FixedLengthEnv(3, space), objective="mean", n_episodes=2, seed=0).learn(6, callback=callback)
    actions, clipped = np.concatenate(callback.actions), np.concatenate(callback.clipped)
    assert np.array_equal(clipped, np.clip(actions, space.low, space.high))
    assert np.abs(actions).max() > 0.05  # the policy's own draws leave the box: the env got them clipped


class _StepCount(BaseCallback):
    """Counts the collection's vectorized steps."""

    def __init__(self) -> None:
        super().__init__()
        self.steps = 0

    def _on_step(self) -> bool:
        self.steps += 1
        return True


@pytest.mark.parametrize(
    ("cls", "policy", "kwargs"),
    [
        (PPO, "MlpPolicy", dict(n_steps=8, batch_size=16)),
        (OrderGradREINFORCE, "MlpPolicy", dict(n_episodes=4)),
        (OrderGradPPO, "MlpPolicy", dict(n_episodes=4)),
        (OrderGradPPO, "MlpPolicy", dict(n_episodes=4, policy_kwargs=dict(critic="none"))),
        (OrderGradRecurrentPPO, "MlpLstmPolicy", dict(n_episodes=4, policy_kwargs=dict(lstm_hidden_size=8))),
        (OrderGradMaskablePPO, "MlpPolicy", dict(n_episodes=4)),
    ],
)
def test_forward_hooks_on_the_policy_fire_once_per_collection_step_as_in_sb3(cls, policy: str, kwargs) -> None:
    # SB3's collection acts with self.policy(obs) (sb3-contrib's too), so hooks on model.policy (W&B's WandbCallback
    # gradient_save_freq, activation statistics, quantization observers) fire at every step; the episodic agents
    # called policy.get_distribution and no hook fired during their collection.
    env = DummyVecEnv([lambda: ActionMasker(FixedLengthEnv(3), lambda env: np.array([True, False]))] * 2)
    model = cls(policy, env, seed=0, **kwargs)
    outputs: list[tuple] = []
    inputs: list[tuple] = []
    model.policy.register_forward_pre_hook(lambda module, args: inputs.append(args))
    model.policy.register_forward_hook(lambda module, args, output: outputs.append(output))
    callback = _StepCount()
    model.learn(12, callback=callback)
    assert callback.steps > 0 and len(inputs) == len(outputs) == callback.steps
    assert th.is_tensor(inputs[0][0]) and inputs[0][0].shape == (2, 3)
    actions, values, log_probs = outputs[0][:3]  # sb3-contrib's recurrent forward adds the LSTM states
    assert actions.shape == log_probs.shape == (2,) and values.shape == (2, 1)


def test_fine_tuning_from_a_file_that_is_no_model_save_names_it(ppo_model, tmp_path) -> None:
    # A torch.save'd policy is a zip without SB3's "data": from_sb3 failed with "'NoneType' object is not
    # subscriptable" (SB3's load_from_zip_file returns no data for it).
    th.save(ppo_model.policy.state_dict(), tmp_path / "policy.zip")
    with pytest.raises(ValueError, match=r"is no SB3 model's save \(it holds no data\).*model.save\(path\)"):
        OrderGradPPO.from_sb3(tmp_path / "policy.zip", "CartPole-v1")


class ActionSpaceEnv(gym.Env):
    """Five-step episodes of Box(3) observations under any action space, rewarded by the action's sum."""

    observation_space = spaces.Box(-1.0, 1.0, (3,), np.float32)

    def __init__(self, action_space: spaces.Space) -> None:
        self.action_space = action_space
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self._observation(), {}

    def step(self, action):
        self.t += 1
        return self._observation(), float(np.sum(action)), self.t >= 5, False, {}

    def _observation(self) -> np.ndarray:
        return self.np_random.uniform(-1.0, 1.0, 3).astype(np.float32)  # seeded with the env, unlike space.sample()


class ForwardPolicy(ActorCriticPolicy):
    """A user's policy with a forward of its own (which the collection must call)."""

    def forward(self, obs, deterministic=False):
        self.calls = getattr(self, "calls", 0) + 1
        return super().forward(obs, deterministic)


def trained_with_and_without_a_hook(make_model) -> OrderGradPPO:
    """``make_model()`` trained for 40 steps without and with a no-op forward hook on its policy, which puts the
    episodic collection back on ``policy(obs)``: both must draw the same actions from the same random stream, so
    train the same parameters bit for bit. Returns the run without the hook."""
    plain = make_model().learn(40)  # each built just before it learns: the seed sets torch's global generator
    hooked = make_model()
    hooked.policy.register_forward_hook(lambda module, args, output: None)
    hooked.learn(40)
    assert plain._forward_observed is False and hooked._forward_observed is True
    state, hooked_state = plain.policy.state_dict(), hooked.policy.state_dict()
    assert all(th.equal(state[name], hooked_state[name]) for name in state)
    return plain


@pytest.mark.parametrize(
    ("action_space", "kwargs"),
    [
        (spaces.Discrete(3), {}),
        (spaces.Box(-1.0, 1.0, (2,), np.float32), {}),
        (spaces.Box(-1.0, 1.0, (2,), np.float32), dict(use_sde=True)),
        (spaces.MultiDiscrete([2, 3]), {}),
        (spaces.MultiBinary(3), {}),
    ],
)
def test_collection_acts_through_the_actor_alone_bit_for_bit_unless_forward_is_observed(action_space, kwargs) -> None:
    # Without a hook, the episodic collection skips the value head (act_without_critic).
    def make_model() -> OrderGradPPO:
        env = DummyVecEnv([lambda: ActionSpaceEnv(action_space)] * 2)
        return OrderGradPPO("MlpPolicy", env, objective="cvar0.5", n_episodes=4, n_epochs=2, seed=0, **kwargs)

    plain = trained_with_and_without_a_hook(make_model)
    assert not th.equal(plain.policy.action_net.weight, make_model().policy.action_net.weight)  # it trained


def test_act_without_critic_gives_forwards_actions_and_log_probs() -> None:
    model = OrderGradPPO(
        "MultiInputPolicy", SpaceSampleEnv(spaces.Dict(a=spaces.Box(-1, 1, (2,)), b=spaces.Discrete(3)))
    )
    obs, _ = model.policy.obs_to_tensor(model.observation_space.sample())
    th.manual_seed(3)
    actions, _, log_probs = model.policy(obs)
    th.manual_seed(3)
    fast_actions, fast_log_probs = act_without_critic(model.policy, obs)
    assert th.equal(actions, fast_actions) and th.equal(log_probs, fast_log_probs)
    assert fast_actions.shape == (1,) and fast_log_probs.shape == (1,)


def test_forward_observed_by_hooks_anywhere_a_forward_of_its_own_or_the_q_critic() -> None:
    policy = OrderGradPPO("MlpPolicy", "CartPole-v1").policy
    assert not forward_observed(policy)
    handle = policy.mlp_extractor.policy_net.register_forward_pre_hook(lambda module, args: None)
    assert forward_observed(policy)  # on a submodule too (wandb.watch hooks every module)
    handle.remove()
    handle = th.nn.modules.module.register_module_forward_hook(lambda module, args, output: None)
    assert forward_observed(policy)  # a global hook
    handle.remove()
    assert not forward_observed(policy)
    assert forward_observed(OrderGradPPO(ForwardPolicy, "CartPole-v1").policy)
    assert forward_observed(OrderGradPPO("MlpPolicy", "CartPole-v1", objective="top5@10", advantage="q_critic").policy)


def test_a_policy_with_a_forward_of_its_own_is_called_at_every_collection_step() -> None:
    model = OrderGradPPO(ForwardPolicy, "CartPole-v1", n_episodes=2, seed=0).learn(10)
    assert model.policy.calls == model.num_timesteps


@pytest.mark.parametrize(
    ("action_space", "mask", "masked"),
    [
        (spaces.Discrete(3), [True, False, True], (0, 1)),
        (spaces.MultiDiscrete([2, 3]), [True, True, False, True, True], (1, 0)),
    ],
)
def test_maskable_collection_acts_through_the_masked_actor_alone_bit_for_bit(action_space, mask, masked) -> None:
    # sb3-contrib's maskable forward is plain too: without a hook the collector draws from the masked actor alone.
    def make_model() -> OrderGradMaskablePPO:
        env = DummyVecEnv([lambda: ActionMasker(ActionSpaceEnv(action_space), lambda env: np.array(mask))] * 2)
        return OrderGradMaskablePPO("MlpPolicy", env, objective="cvar0.5", n_episodes=4, n_epochs=2, seed=0)

    plain = trained_with_and_without_a_hook(make_model)
    column, value = masked  # the (sub-)action the mask forbids is never drawn
    assert (plain.rollout_buffer.actions[:, column] != value).all()
