"""Clear errors for what new users get wrong: bad arguments, envs that never end or return NaN, foreign saves."""

from __future__ import annotations

import inspect
import json
import math
import warnings
import zipfile
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from gymnasium.wrappers import NormalizeReward
from stable_baselines3 import PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnvWrapper, VecNormalize

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.agents import OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE, QRDQNCVaR, RiskEvalCallback
from ordergrad_rl.agents.common import episodic
from ordergrad_rl.agents.common.buffers import MAX_EPISODE_STEPS, EndlessEpisodeError, EpisodicRolloutBuffer


class LongEpisodeEnv(gym.Env):
    """Terminates after ``length`` steps; no time limit registered."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, length: float = 200) -> None:
        self.length, self.t = length, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        return np.zeros(2, np.float32), 1.0, self.t >= self.length, False, {}


class EndlessEnv(LongEpisodeEnv):
    """Never terminates or truncates."""

    def __init__(self) -> None:
        super().__init__(length=math.inf)


class StopAt(BaseCallback):
    """Stops training once ``num_timesteps`` reaches ``steps``."""

    def __init__(self, steps: int) -> None:
        super().__init__()
        self.steps = steps

    def _on_step(self) -> bool:
        return self.num_timesteps < self.steps


def rollout_warnings(records: list) -> list[str]:
    return [str(r.message) for r in records if "rollout" in str(r.message)]


class BadValueEnv(gym.Env):
    """Returns ``bad`` as the observation's second entry or as the reward at step ``at``; episodes of 5 steps."""

    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, where: str, bad: float = np.nan, at: int = 3) -> None:
        self.where, self.bad, self.at, self.t = where, bad, at, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        obs = np.zeros(2, np.float32)
        reward = 0.0
        if self.t == self.at:
            if self.where == "obs":
                obs[1] = self.bad
            elif self.where == "reward":
                reward = self.bad
        return obs, reward, self.t >= 5, False, {}


# ---------------------------------------------------------------------------------------------- arguments
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"advantage": "qcritic"}, r"advantage 'qcritic' \(did you mean 'q_critic'\?\).*'episodic', 'q_critic'"),
        ({"learning_rate": "1e-2x"}, "learning_rate must be a number or a schedule"),
        ({"learning_rate": -1.0}, "learning_rate must be a finite number >= 0"),
        ({"clip_range": float("nan")}, "clip_range must be a finite number"),
        ({"clip_range": 0}, "clip_range must be a finite number >= 1e-12"),
        ({"n_epochs": 0}, "n_epochs must be an integer >= 1"),
        ({"batch_size": 1}, "batch_size must be an integer >= 2"),
        ({"n_episodes": 2.5}, "n_episodes must be an integer >= 2"),
        ({"objective": "alpha[0,0,0]"}, "all-zero rank weights"),
        ({"n_envs": 0}, "n_envs must be a positive integer"),
        ({"gamma": 1.5}, r"gamma must be in \(0, 1\]"),
        ({"max_grad_norm": 0.0}, "max_grad_norm must be > 0"),
        ({"policy_kwargs": "net_arch=[64]"}, "policy_kwargs must be a dict"),
        ({"policy_kwargs": {"net_arch": [64, "x"]}}, r"policy_kwargs\['net_arch'\] must be a list of positive"),
        ({"policy_kwargs": {"net_arch": {"pi": [8], "critic": [8]}}}, r"net_arch'\] keys are 'pi' and 'vf'"),
        # read as True: learn_log_std="False" learned the log-std
        ({"policy_kwargs": {"learn_log_std": "False"}}, r"policy_kwargs\['learn_log_std'\] must be True or False"),
        ({"policy_kwargs": {"zero_init_action_net": 1}}, r"policy_kwargs\['zero_init_action_net'\] must be True or"),
        # Passed on to SB3 unchecked, these failed deep in its update (a str), stopped every epoch after one
        # minibatch (target_kl <= 0) or never (NaN), or made the policy NaN (vf_coef with a value baseline).
        ({"target_kl": "0.01"}, "target_kl must be a number in"),
        ({"target_kl": -1.0}, "target_kl must be a number in"),
        ({"target_kl": float("nan")}, "target_kl must be a number in"),
        ({"vf_coef": float("nan")}, r"vf_coef must be a number in \[0.0, inf\]"),
        ({"vf_coef": "0.5"}, "vf_coef must be a number in"),
        ({"gae_lambda": 1.5}, r"gae_lambda must be a number in \[0.0, 1.0\]"),
        ({"clip_range_vf": "0.2"}, "clip_range_vf must be a number or a schedule"),
        ({"clip_range_vf": -0.2}, "clip_range_vf must be a finite number >= 1e-12"),
        ({"advantage": "q_critic", "n_steps": 64, "gae_lambda": float("nan")}, "gae_lambda must be a number in"),
        # Gymnasium's "Seed must be a python integer" / "greater or equal to zero" from inside SB3's env building
        ({"seed": -1}, r"seed must be None or an integer in \[0, 2\*\*32 - 1\]"),
        ({"seed": 2.5}, "seed must be None or an integer"),
        ({"advantage": "q_critic", "n_steps": 64, "seed": "0"}, "seed must be None or an integer"),
    ],
)
def test_ppo_refuses_bad_arguments_at_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OrderGradPPO("MlpPolicy", "CartPole-v1", **kwargs)


@pytest.mark.parametrize("kwargs", [{"objective": "mean", "n_episodes": 4}, {"advantage": "q_critic", "n_steps": 16}])
def test_a_numpy_integer_seed_is_the_seed(kwargs: dict) -> None:
    """``seed=np.int64(3)`` (as ``np.arange`` gives seeds) failed in Gymnasium ("Seed must be a python integer")."""
    kwargs = {"objective": "top2@4"} | kwargs
    models = [OrderGradPPO("MlpPolicy", "CartPole-v1", seed=seed, **kwargs).learn(40) for seed in (np.int64(3), 3)]
    assert models[0].seed == 3 and type(models[0].seed) is int
    for a, b in zip(models[0].policy.parameters(), models[1].policy.parameters(), strict=True):
        assert th.equal(a, b)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"learning_rate": "fast"}, "learning_rate must be a number or a schedule"),
        ({"objective": [0.0, 0.0, 0.0], "n_episodes": 8}, "all-zero rank weights"),
        ({"objective": "alpha[0,0]", "n_episodes": 8}, "all-zero rank weights"),
        ({"ent_coef": float("inf")}, "ent_coef must be a finite number"),
        ({"policy_kwargs": ["net_arch"]}, "policy_kwargs must be a dict"),
    ],
)
def test_reinforce_refuses_bad_arguments_at_construction(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OrderGradREINFORCE("MlpPolicy", "CartPole-v1", **kwargs)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "q_critic"])
def test_sde_sample_freq_is_an_integer_as_sb3_reads_it(algorithm: str) -> None:
    # Unchecked, 2.5 and True resampled gSDE's matrix at steps SB3's counter never meant (n % 2.5, every step) and "4"
    # failed in the first rollout ('>' not supported between 'str' and 'int'); the CLI refused them. SB3 resamples
    # every n > 0 steps and reads -1 (its default) and 0 alike as never.
    _, make = _saved_models()[algorithm]
    for value in (2.5, "4", True, -2):
        with pytest.raises(ValueError, match=rf"sde_sample_freq must be an integer >= -1, got {value!r}"):
            make(sde_sample_freq=value)
    assert [make(sde_sample_freq=value).sde_sample_freq for value in (-1, 0, 4, np.int64(8))] == [-1, 0, 4, 8]


@pytest.mark.parametrize(
    ("cls", "policy"),
    [(OrderGradPPO, "MlpPolicy"), (OrderGradREINFORCE, "MlpPolicy"), (OrderGradRecurrentPPO, "MlpLstmPolicy")],
)
def test_squash_output_without_gsde_is_refused_naming_use_sde(cls: type, policy: str) -> None:
    # SB3 squashes only gSDE's actions; its policy asserted it deep inside _setup_model, which `ordergrad-rl train
    # --hparams "policy_kwargs=dict(squash_output=True)"` printed as an AssertionError traceback.
    with pytest.raises(ValueError, match=r"squash_output=True needs use_sde=True"):
        cls(policy, "Pendulum-v1", n_episodes=4, policy_kwargs={"squash_output": True})
    model = cls(policy, "Pendulum-v1", n_episodes=4, use_sde=True, policy_kwargs={"squash_output": True})
    assert model.policy.squash_output  # with gSDE, as in SB3


@pytest.mark.parametrize(
    ("policy_kwargs", "match"),
    [
        # torch's "only integer tensors of a single element can be converted to an index"
        ({"log_std_init": "-2"}, r"policy_kwargs\['log_std_init'\] must be a number, got '-2'"),
        ({"log_std_init": float("nan")}, r"policy_kwargs\['log_std_init'\] must be a finite number"),
        # "'str' object is not callable": a YAML mapping's activation_fn: nn.ReLU is the text "nn.ReLU"
        ({"activation_fn": "nn.ReLU"}, r"policy_kwargs\['activation_fn'\] must be a class or function.*'nn.ReLU'"),
        ({"optimizer_class": "Adam"}, r"policy_kwargs\['optimizer_class'\] must be a class or function"),
    ],
)
def test_policy_kwargs_that_fail_inside_torch_are_refused_naming_the_key(policy_kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        OrderGradPPO("MlpPolicy", "Pendulum-v1", n_episodes=4, use_sde=True, policy_kwargs=policy_kwargs)
    with pytest.raises(ValueError, match=match):
        OrderGradRecurrentPPO("MlpLstmPolicy", "Pendulum-v1", n_episodes=4, policy_kwargs=policy_kwargs)


def test_policy_kwargs_of_the_right_kinds_are_taken() -> None:
    import functools

    kwargs = {"log_std_init": np.float32(-2), "activation_fn": functools.partial(th.nn.LeakyReLU, 0.1)}
    model = OrderGradPPO("MlpPolicy", "Pendulum-v1", n_episodes=4, policy_kwargs=kwargs)
    assert model.policy.log_std.detach().tolist() == [-2.0]


@pytest.mark.parametrize("mode", ["vector_entry_point", "sync"])
def test_a_gymnasium_vector_env_is_refused_with_the_sb3_alternative_named(mode: str) -> None:
    # SB3 refused it with "we expect OpenAI Gym to be installed", which named neither the problem nor the fix.
    envs = gym.make_vec("CartPole-v1", num_envs=2, vectorization_mode=mode)
    match = r"Gymnasium vector env \((CartPoleVectorEnv|SyncVectorEnv)\).*make_vec_env\(env_id, n_envs"
    with pytest.raises(ValueError, match=match):
        OrderGradPPO("MlpPolicy", envs)
    with pytest.raises(ValueError, match=match):
        OrderGradPPO("MlpPolicy", envs, advantage="q_critic", objective="top2@4")
    with pytest.raises(ValueError, match=match):
        RiskEvalCallback(envs)


def test_q_critic_on_a_box_env_names_the_problem() -> None:
    with pytest.raises(ValueError, match="q_critic' needs a Discrete action space"):
        OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", advantage="q_critic", objective="top2@4")


def test_q_critic_mode_names_the_episodic_arguments_it_does_not_take() -> None:
    with pytest.raises(
        ValueError, match="drift_when_blind, noise_sampler: an argument of OrderGradPPO's episodic mode"
    ):
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", noise_sampler=True, drift_when_blind=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'drift_when_blnd'"):  # a typo: not ours
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", drift_when_blnd=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eval_freq": 0}, "eval_freq must be an integer >= 1"),
        ({"eval_freq": -5}, "eval_freq must be an integer >= 1"),
        ({"n_eval_episodes": 0}, "n_eval_episodes must be an integer >= 1"),
        # a string is a sequence of its letters: the callback aggregated none of the infos, silently
        ({"info_keys": "is_success"}, r"info_keys must be a sequence of info key names, e.g. \['is_success'\]"),
        ({"info_keys": [1]}, "info_keys must be a sequence of info key names"),
    ],
)
def test_risk_eval_callback_refuses_bad_arguments(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        RiskEvalCallback("CartPole-v1", **kwargs)


def test_evaluate_before_the_callback_has_a_model_says_so() -> None:
    """callback.evaluate() before learn raised AttributeError: 'RiskEvalCallback' object has no attribute 'model'."""
    with pytest.raises(RuntimeError, match=r"evaluate\(\) evaluates the model the callback belongs to"):
        RiskEvalCallback("CartPole-v1", eval_freq=None).evaluate()


@pytest.mark.parametrize("kwargs", [{"n_eval_envs": 4}, {"seed": 0}])
def test_risk_eval_callback_refuses_id_options_for_an_env_passed(kwargs: dict) -> None:
    """n_eval_envs and seed build the env of an id: RiskEvalCallback(gym.make(...), n_eval_envs=4, seed=0) evaluated
    one unseeded env, silently."""
    with pytest.raises(ValueError, match="n_eval_envs and seed build the eval env of an id; the TimeLimit passed"):
        RiskEvalCallback(gym.make("CartPole-v1"), **kwargs)


# ---------------------------------------------------------------------------------------------- envs
def test_endless_episode_stops_with_the_fix_named() -> None:
    model = OrderGradPPO(
        "MlpPolicy", DummyVecEnv([EndlessEnv]), n_episodes=4, rollout_buffer_kwargs={"max_episode_steps": 300}
    )
    with pytest.raises(ValueError, match=r"env 0's episode has run 300 steps.*TimeLimit"):
        model.learn(1000)
    assert model.num_timesteps == 300  # stopped at the bound, not later


@pytest.mark.parametrize("algo", [OrderGradPPO, OrderGradREINFORCE])
@pytest.mark.parametrize(
    ("buffer_kwargs", "match"),
    [
        ("max_episode_steps=300", "rollout_buffer_kwargs must be a dict"),  # AttributeError: no .items()
        ({"max_episode_steps": 0}, "max_episode_steps must be an integer >= 1"),  # "has run 0 steps" at the 1st step
        ({"max_episode_steps": "300"}, "max_episode_steps must be an integer >= 1"),  # numpy's UFuncTypeError in learn
        ({"max_episode_steps": None}, "max_episode_steps must be an integer >= 1"),  # TypeError in learn
    ],
)
def test_bad_rollout_buffer_kwargs_are_refused_at_construction(algo: type, buffer_kwargs: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        algo("MlpPolicy", "CartPole-v1", n_episodes=4, rollout_buffer_kwargs=buffer_kwargs)


@pytest.mark.parametrize("algo", [OrderGradPPO, OrderGradREINFORCE])
def test_an_env_whose_time_limit_exceeds_the_bound_gets_its_whole_episodes(algo: type, tmp_path: Path) -> None:
    """An env with a TimeLimit of 150,000 steps stopped at 100,000 (MAX_EPISODE_STEPS) with an error telling the user
    to give it a time limit: the bound now gives way to the env's own limit (saved with the model); a bound the
    user passes still wins."""
    limited = gym.wrappers.TimeLimit(EndlessEnv(), 150_000)
    model = algo("MlpPolicy", limited, n_episodes=4)
    assert model.rollout_buffer.max_episode_steps == 150_000
    model.save(tmp_path / "model")
    assert algo.load(tmp_path / "model", env=limited).rollout_buffer.max_episode_steps == 150_000
    chosen = algo("MlpPolicy", limited, n_episodes=4, rollout_buffer_kwargs={"max_episode_steps": 300})
    assert chosen.rollout_buffer.max_episode_steps == 300
    assert algo(
        "MlpPolicy", gym.wrappers.TimeLimit(EndlessEnv(), 500), n_episodes=4
    ).rollout_buffer.max_episode_steps == (MAX_EPISODE_STEPS)


@pytest.mark.parametrize(
    ("n_episodes", "ends", "raises_at"),
    [
        (2, {0: [2]}, 4),  # env 0's episode ends at step 2 (its next is not kept), env 1's reaches the bound at 4
        (3, {0: [1, 2, 3], 1: [4]}, None),  # env 1's kept episode ends on its 4th step: at the bound, not past it
        (1, {0: [4]}, None),  # env 1's episode is not kept (one episode per rollout): not bounded
    ],
)
def test_buffer_bounds_each_kept_episode_exactly(n_episodes: int, ends: dict, raises_at: int | None) -> None:
    """The bound on an episode's length (4 steps here) holds for the kept episodes only, at the step it is reached,
    across steps where other envs' episodes end and start (add() tracks the longest kept episode between them)."""
    buffer = EpisodicRolloutBuffer(
        1, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", n_envs=2, n_episodes=n_episodes, max_episode_steps=4
    )
    zeros = np.zeros(2)
    for step in range(1, 9):
        dones = np.array([step in ends.get(env, []) for env in (0, 1)])
        if step == raises_at:
            with pytest.raises(EndlessEpisodeError, match="env 1's episode has run 4 steps"):
                buffer.add(zeros[:, None], zeros, zeros, np.ones(2), dones)
            return
        buffer.add(zeros[:, None], zeros, zeros, np.ones(2), dones)
        if buffer.full:
            break
    assert raises_at is None


def test_buffer_counts_the_ended_episodes_and_their_steps() -> None:
    buffer = EpisodicRolloutBuffer(8, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), "cpu", n_envs=2)
    assert buffer.ended_episodes == (0, 0)
    for dones in ([False, False], [False, True], [True, False]):  # env 1 ends after 2 steps, env 0 after 3
        zeros = np.zeros(2)
        buffer.add(zeros[:, None], zeros, zeros, np.ones(2), np.array(dones))
    assert buffer.ended_episodes == (2, 5)  # env 1's third episode is running (1 step stored)
    assert buffer.pos == 6


@pytest.mark.parametrize("algo", [OrderGradPPO, OrderGradREINFORCE])
def test_a_rollout_that_outgrows_the_budget_warns_while_it_runs(algo: type, monkeypatch) -> None:
    """A first rollout past the steps its learn call had left (and past OUTGROWN_ROLLOUT_STEPS) warns at that step,
    with what it knows so far and the fix; the few-updates warning after it is not repeated."""
    monkeypatch.setattr(episodic, "OUTGROWN_ROLLOUT_STEPS", 300)
    model = algo("MlpPolicy", DummyVecEnv([LongEpisodeEnv]), n_episodes=4, k=2)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        model.learn(100)
    (message,) = rollout_warnings(records)
    assert message.startswith(f"{algo.__name__}: the first rollout has taken 300 env steps (total_timesteps left 100")
    assert "1 of its 4 episodes have ended; they lasted 200 steps on average, so the rollout will take about 800" in (
        message
    )
    assert message.endswith("the env has no time limit: give it one (gymnasium.wrappers.TimeLimit(env, "
                            "max_episode_steps=...)) or lower n_episodes (k < n_episodes)")  # fmt: skip
    assert model.num_timesteps == 800  # the rollout went on to its end

    # An env with a time limit gets the other fix; a fresh learn call counts its own budget, and a call that goes on
    # from earlier steps (training in pieces) is not told again.
    limited = algo(
        "MlpPolicy", DummyVecEnv([lambda: gym.wrappers.TimeLimit(LongEpisodeEnv(), 1000)]), n_episodes=4, k=2
    )
    with pytest.warns(UserWarning, match=r"taken 300 env steps \(total_timesteps left 50 .*raise total_timesteps$"):
        limited.learn(50)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        limited.learn(200, reset_num_timesteps=False)
    assert not rollout_warnings(records)
    with pytest.warns(UserWarning, match=r"taken 300 env steps \(total_timesteps left 200 "):
        limited.learn(200)


@pytest.mark.parametrize("algo", [OrderGradPPO, OrderGradREINFORCE])
def test_the_budget_warnings_point_at_the_learn_call(algo: type, monkeypatch) -> None:
    """The warnings about learn's budget (a first rollout outgrowing it, too few updates, envs that store no step) are
    about the user's learn call and are shown at it, as SB3's are: they were shown at the library's collect_rollouts
    line (SB3's learn calls it back), which told a user nothing about which call to change."""
    monkeypatch.setattr(episodic, "OUTGROWN_ROLLOUT_STEPS", 300)
    model = algo("MlpPolicy", DummyVecEnv([LongEpisodeEnv] * 4), objective="mean", n_episodes=2)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        model.learn(100)
    assert len(records) == 2  # the rollout outgrew the budget, and two of the four envs stored nothing
    assert {(record.filename, record.lineno) for record in records} == {(__file__, line)}
    with pytest.warns(UserWarning, match=r"updates \(fewer than 5\)") as records:
        algo("MlpPolicy", "CartPole-v1", n_episodes=4, k=2).learn(200)
    # UserWarnings only: a ResourceWarning of an object another test left open can come out of any line here (the GC)
    assert [record.filename for record in records if issubclass(record.category, UserWarning)] == [__file__]


def test_a_rollout_within_the_budget_does_not_warn_while_it_runs(monkeypatch) -> None:
    monkeypatch.setattr(episodic, "OUTGROWN_ROLLOUT_STEPS", 300)
    model = OrderGradPPO("MlpPolicy", DummyVecEnv([LongEpisodeEnv]), n_episodes=4, k=2)
    with warnings.catch_warnings(record=True) as records:
        warnings.simplefilter("always")
        model.learn(2000)  # rollouts of 800 steps: 3 updates
    (message,) = rollout_warnings(records)
    assert "the first rollout took 800 env steps" in message  # the few-updates warning, after the rollout


def test_the_few_updates_warning_counts_the_updates_learn_runs() -> None:
    """SB3's learn collects rollouts while num_timesteps < total_timesteps, the last one whole: a budget of 4.5
    rollouts trains 5 times. The warning divided the budget by the first rollout's steps and said "about 4.5 updates
    (fewer than 5)" (the README's TargetSum-v0 command: 4.9 of 4,096-step rollouts, for 5 updates)."""

    def learned(total_timesteps: int) -> tuple[OrderGradPPO, list[str]]:
        model = OrderGradPPO("MlpPolicy", DummyVecEnv([lambda: LongEpisodeEnv(100)]), n_episodes=2, k=1, n_epochs=1)
        with warnings.catch_warnings(record=True) as records:
            warnings.simplefilter("always")
            model.learn(total_timesteps)  # rollouts of 200 steps
        return model, rollout_warnings(records)

    model, messages = learned(900)
    assert model.num_timesteps == 1000 and not messages  # 5 updates
    model, (message,) = learned(800)
    assert model.num_timesteps == 800 and "leaves about 4 updates (fewer than 5)" in message
    model, (message,) = learned(100)  # one rollout: "about 1 updates" read as a typo
    assert model.num_timesteps == 200 and "leaves about 1 update (fewer than 5)" in message


def test_an_env_without_a_time_limit_is_named_within_the_floor_of_steps() -> None:
    """CliffWalking-v1 has no time limit and its episodes under a near-uniform policy last thousands of steps: a user's
    learn(3_000) hears at 10,000 steps (OUTGROWN_ROLLOUT_STEPS) that the first rollout of 256 episodes is that long."""
    model = OrderGradPPO("MlpPolicy", "CliffWalking-v1", objective="cvar0.2", seed=0)
    with pytest.warns(UserWarning, match=r"has taken 10,000 env steps \(total_timesteps left 3,000.*has no time lim"):
        model.learn(3_000, callback=StopAt(10_001))
    assert model.num_timesteps == 10_001


class NeverEnds(gym.Env):
    """An env with no time limit whose episodes never end: a misconfiguration the collection can only see by waiting."""

    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(2, np.float32), 1.0, False, False, {}


def test_an_endless_env_is_named_at_the_floor_of_steps_whatever_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a budget far above the floor (learn(1_000_000)), an env without a time limit none of whose episodes has
    ended hears so at OUTGROWN_ROLLOUT_STEPS, not only at the error's MAX_EPISODE_STEPS (100,000 steps: minutes on a
    slow env). A rollout whose episodes do end is not warned about before its budget (no warning for long episodes)."""
    monkeypatch.setattr(episodic, "OUTGROWN_ROLLOUT_STEPS", 300)
    model = OrderGradPPO("MlpPolicy", NeverEnds(), objective="cvar0.2", n_episodes=4, seed=0)
    with pytest.warns(UserWarning, match=r"has taken 300 env steps.*0 of its 4 episodes have ended; none has ended"):
        model.learn(1_000_000, callback=StopAt(301))
    assert model.num_timesteps == 301


def test_endless_episode_default_bound_is_documented() -> None:
    assert MAX_EPISODE_STEPS == 100_000
    assert "max_episode_steps" in OrderGradPPO.__doc__ and "max_episode_steps" in OrderGradREINFORCE.__doc__


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_a_default_k_of_one_warns_at_the_constructor_call(cls: type) -> None:
    """objective="cvar0.2" with n_episodes=2 binds k = 2 // 2 = 1, where every rank-weighted objective is the mean.
    The warning about the user's arguments is shown at the user's constructor call: it was shown inside the
    library (ordergrad_rl/agents/ppo/ppo.py, .../reinforce/reinforce.py)."""
    with pytest.warns(UserWarning, match=r"binds the default k = n_episodes // 2 = 1, .* trains the mean") as records:
        cls("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=2)
    assert [record.filename for record in records] == [__file__]


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_a_ranked_objective_on_normalized_rewards_warns_that_ranks_change(cls: type) -> None:
    # The objective ranks the rewards the agent steps on: a running reward scale ranked episodes by when they ran.
    vec_normalize = VecNormalize(DummyVecEnv([LongEpisodeEnv]))
    normalize_reward = DummyVecEnv([lambda: NormalizeReward(LongEpisodeEnv())])
    for env, wrapper in ((vec_normalize, r"VecNormalize\(norm_reward=True\)"), (normalize_reward, "NormalizeReward")):
        with pytest.warns(UserWarning, match=rf"objective 'cvar0.2@4' ranks .* with .*{wrapper}.*not ranked by"):
            cls("MlpPolicy", env, objective="cvar0.2", n_episodes=8)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not ranked by their returns")
        cls("MlpPolicy", vec_normalize, objective="mean", n_episodes=8)  # linear in the rewards, as in SB3
        cls("MlpPolicy", VecNormalize(DummyVecEnv([LongEpisodeEnv]), norm_reward=False), n_episodes=8)


def test_load_and_set_env_check_normalized_rewards_for_the_models_objective(tmp_path: Path) -> None:
    """Model.load(path, env=VecNormalize(...)) warned about the constructor's default objective ('cvar0.2@16'),
    which SB3's load builds the model with before it sets the save's, so a saved mean model was told its ranks
    change; set_env with such an env said nothing. Both check the model's own objective, at the user's line."""
    normalized = VecNormalize(DummyVecEnv([LongEpisodeEnv]))
    OrderGradPPO("MlpPolicy", DummyVecEnv([LongEpisodeEnv]), objective="mean", n_episodes=8).save(tmp_path / "mean")
    OrderGradPPO("MlpPolicy", DummyVecEnv([LongEpisodeEnv]), objective="cvar0.5", n_episodes=8).save(tmp_path / "cvar")
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*not ranked by their returns")
        mean = OrderGradPPO.load(tmp_path / "mean", env=normalized)
        mean.set_env(normalized)
    with pytest.warns(UserWarning, match=r"objective 'cvar0.5@4' ranks .*not ranked by") as records:
        ranked = OrderGradPPO.load(tmp_path / "cvar", env=normalized)
    assert [(record.filename, str(record.message)[:20]) for record in records] == [(__file__, "objective 'cvar0.5@4")]
    ranked.set_env(DummyVecEnv([LongEpisodeEnv]))
    with pytest.warns(UserWarning, match=r"objective 'cvar0.5@4' ranks .*not ranked by") as records:
        ranked.set_env(normalized)
    assert [record.filename for record in records] == [__file__]


def test_a_save_records_the_vecnormalize_its_policy_acts_on(tmp_path: Path) -> None:
    """SB3 saves VecNormalize's statistics apart; a model whose env has one records it (``vec_normalize``), so
    ``evaluate`` can refuse to run its policy on raw observations. A model loaded on another env records its own."""
    from ordergrad_rl.agents.common.saving import read_saved_data, saved_vec_normalize

    normalized = VecNormalize(DummyVecEnv([LongEpisodeEnv]), norm_reward=False)
    model = OrderGradPPO("MlpPolicy", normalized, objective="cvar0.5", n_episodes=8)
    model.save(tmp_path / "normalized")
    assert saved_vec_normalize(read_saved_data(tmp_path / "normalized.zip")) == {"norm_obs": True, "norm_reward": False}
    assert "vec_normalize" not in vars(model)
    with pytest.warns(UserWarning, match="raw observations"):
        loaded = OrderGradPPO.load(tmp_path / "normalized", env=DummyVecEnv([LongEpisodeEnv]))
    assert "vec_normalize" not in vars(loaded)
    loaded.save(tmp_path / "raw")
    assert saved_vec_normalize(read_saved_data(tmp_path / "raw.zip")) is None


@pytest.mark.parametrize(
    "sizes", [dict(objective="cvar0.5", n_episodes=8), dict(objective="top2@4", advantage="q_critic", n_steps=8)]
)
def test_load_or_set_env_without_the_saved_vecnormalize_warns(sizes: dict[str, Any], tmp_path: Path) -> None:
    """A model saved acting on VecNormalize's observations, loaded (or given with set_env after a load without an
    env) an env without VecNormalize acted and trained on raw observations without a word, as in SB3; its save
    records the VecNormalize, so it warns at the user's line, naming VecNormalize.load. With the statistics, or for
    a VecNormalize of the rewards only, nothing is said. The Q-critic PPO's save did not record it."""
    normalized = VecNormalize(DummyVecEnv([LongEpisodeEnv]), norm_reward=False)
    model = OrderGradPPO("MlpPolicy", normalized, **sizes)
    cls = type(model)
    model.save(tmp_path / "normalized")
    normalized.save(tmp_path / "vecnormalize.pkl")
    rewards_only = VecNormalize(DummyVecEnv([LongEpisodeEnv]), norm_obs=False, norm_reward=False)
    OrderGradPPO("MlpPolicy", rewards_only, **sizes).save(tmp_path / "rewards_only")
    message = r"normalized by VecNormalize.* raw observations.*VecNormalize\.load"
    with pytest.warns(UserWarning, match=message) as records:
        cls.load(tmp_path / "normalized", env=DummyVecEnv([LongEpisodeEnv]))
    assert [record.filename for record in records] == [__file__]
    unset = cls.load(tmp_path / "normalized")
    with pytest.warns(UserWarning, match=message) as records:
        unset.set_env(DummyVecEnv([LongEpisodeEnv]))
    assert [record.filename for record in records] == [__file__]
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*raw observations")
        statistics = VecNormalize.load(str(tmp_path / "vecnormalize.pkl"), DummyVecEnv([LongEpisodeEnv]))
        cls.load(tmp_path / "normalized", env=statistics).set_env(statistics)
        cls.load(tmp_path / "normalized")  # no env yet: set_env checks it
        cls.load(tmp_path / "rewards_only", env=DummyVecEnv([LongEpisodeEnv]))


@pytest.mark.parametrize("where", ["obs", "reward"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_env_output_names_env_and_step(where: str, bad: float) -> None:
    envs = [lambda: BadValueEnv("none"), lambda: BadValueEnv(where, bad, at=3)]
    model = OrderGradREINFORCE("MlpPolicy", DummyVecEnv(envs), n_episodes=4)
    what = "an observation with" if where == "obs" else "the reward"
    with pytest.raises(ValueError, match=rf"env 1 returned {what} .*at num_timesteps=6"):
        model.learn(100)


def test_a_reward_beyond_float32_names_the_float32_rewards_of_sb3s_vec_env() -> None:
    """A finite reward of 1e39 reached the agent as inf (SB3's DummyVecEnv holds rewards as float32), and the error
    said the env returned inf, which it never did."""
    model = OrderGradREINFORCE("MlpPolicy", BadValueEnv("reward", 1e39, at=2), n_episodes=4)
    with pytest.raises(
        ValueError,
        match=r"env 0 returned the reward inf .*finite and within \+-3\.4e\+38 \(float32, as SB3's DummyVecEnv",
    ):
        model.learn(100)


def test_non_finite_env_output_in_q_critic_mode() -> None:
    envs = [lambda: BadValueEnv("none"), lambda: BadValueEnv("obs", np.nan, at=2)]
    model = OrderGradPPO("MlpPolicy", DummyVecEnv(envs), advantage="q_critic", objective="top2@4", n_steps=8)
    with pytest.raises(ValueError, match=r"env 1 returned an observation with nan .*at num_timesteps=4"):
        model.learn(100)


@pytest.mark.parametrize("where", ["obs", "reward"])
def test_non_finite_env_output_in_qrdqn_cvar(where: str) -> None:
    """QRDQNCVaR (as sb3-contrib's QR-DQN) trained on a NaN or infinite reward or observation without a word: its
    weights became NaN, and the greedy action of NaN quantiles was action 0 from then on."""
    envs = [lambda: BadValueEnv("none"), lambda: BadValueEnv(where, np.inf, at=3)]
    model = QRDQNCVaR("MlpPolicy", DummyVecEnv(envs), learning_starts=2, seed=0)
    what = "an observation with" if where == "obs" else "the reward"
    with pytest.raises(ValueError, match=rf"env 1 returned {what} .*at num_timesteps=6"):
        model.learn(100)
    assert all(th.isfinite(parameter).all() for parameter in model.policy.parameters())


class MisshapenStepVecEnv(VecEnvWrapper):
    """A custom VecEnv breaking the VecEnv contract in one of its step's returns."""

    def __init__(self, venv: DummyVecEnv, fault: str) -> None:
        super().__init__(venv)
        self.fault = fault

    def reset(self):
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        if self.fault == "column rewards":
            rewards = rewards[:, None]
        elif self.fault == "complex rewards":
            rewards = rewards.astype(np.complex64)
        elif self.fault == "float dones":
            dones = dones.astype(np.float32)
        elif self.fault == "short infos":
            infos = infos[:1]
        return obs, rewards, dones, infos


@pytest.mark.parametrize("advantage", ["episodic", "q_critic"])
@pytest.mark.parametrize(
    ("fault", "problem"),
    [
        # NumPy's "object too deep for desired array" in the buffer; the imaginary part dropped silently; NumPy's
        # "ufunc 'bitwise_and' not supported"; an IndexError
        ("column rewards", r"rewards of shape \(2, 1\)"),
        ("complex rewards", "rewards of dtype complex64"),
        ("float dones", "dones of shape \\(2,\\) and dtype float32"),
        ("short infos", "1 infos"),
    ],
)
def test_a_vec_env_step_breaking_the_contract_is_named(advantage: str, fault: str, problem: str) -> None:
    env = MisshapenStepVecEnv(DummyVecEnv([lambda: BadValueEnv("none")] * 2), fault)
    kwargs = {"n_steps": 8, "objective": "top2@4"} if advantage == "q_critic" else {"n_episodes": 4}
    model = OrderGradPPO("MlpPolicy", env, advantage=advantage, **kwargs)
    with pytest.raises(ValueError, match=rf"the VecEnv's step returned {problem} for 2 envs at num_timesteps=2"):
        model.learn(100)


# ---------------------------------------------------------------------------------------------- saved models
def _rewrite_data(path: Path, **changes) -> None:
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(entries["data"])
    data.update(changes)
    entries["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)


def test_load_refuses_another_algorithms_file(tmp_path: Path) -> None:
    OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4).save(tmp_path / "reinforce")
    with pytest.raises(ValueError, match="saved by OrderGradREINFORCE, not OrderGradPPO"):
        OrderGradPPO.load(tmp_path / "reinforce")
    OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=4).save(tmp_path / "ppo.zip")
    with pytest.raises(ValueError, match="saved by OrderGradPPO, not OrderGradREINFORCE"):
        OrderGradREINFORCE.load(tmp_path / "ppo.zip")
    PPO("MlpPolicy", "CartPole-v1", n_steps=64).save(tmp_path / "sb3")
    with pytest.raises(ValueError, match="not saved by an OrderGrad algorithm"):
        OrderGradPPO.load(tmp_path / "sb3.zip")


@pytest.mark.parametrize("garbage", ["garbage", 5, "cvar0.2@99"])
def test_load_refuses_a_damaged_objective(tmp_path: Path, garbage) -> None:
    path = tmp_path / "model.zip"
    OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8).save(path)
    _rewrite_data(path, objective_spec=garbage)
    with pytest.raises(ValueError, match="the model's objective"):
        OrderGradPPO.load(path)


def test_saved_objective_is_a_readable_spec(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    OrderGradPPO("MlpPolicy", "CartPole-v1", objective="top2@4", n_episodes=8).save(path)
    with zipfile.ZipFile(path) as archive:
        data = json.loads(archive.read("data"))
    assert data["objective_spec"] == "top2@4" and data["ordergrad_algorithm"] == "OrderGradPPO"
    assert "objective" not in data
    assert str(OrderGradPPO.load(path).objective) == "top2@4"


@pytest.mark.parametrize(
    "change", [{"objective": "cvar0.1"}, {"k": 2}, {"objective_spec": "max@4"}, {"gcvar_alpha": 0.3}]
)
def test_load_refuses_to_change_the_objective(tmp_path: Path, change) -> None:
    # SB3's load sets its kwargs on the model; the saved objective_spec then won over objective= (cvar0.2@4 trained
    # on, silently), and k= failed as a damaged file ("the model's objective ... has k=4, but its k is 2). The saved
    # entries objective_spec="max@4" and gcvar_alpha=0.3 (GCVaR's weights on a CVaR model) loaded and trained.
    path = tmp_path / "model.zip"
    OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8).save(path)
    with pytest.raises(ValueError, match=f"keeps the objective and the advantage mode .*; {next(iter(change))} "):
        OrderGradPPO.load(path, **change)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
@pytest.mark.parametrize("advantage", ["bogus", "q_critic", "episodic"])
def test_load_refuses_to_change_the_advantage_mode(tmp_path: Path, algorithm: str, advantage: str) -> None:
    # SB3's load set the string as it was: advantage="bogus" loaded, and "q_critic" on an episodic model trained on
    # episodic and made its next save load as OrderGradQCriticPPO.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make().save(path)
    with pytest.raises(ValueError, match="keeps the objective and the advantage mode .*; advantage cannot change"):
        cls.load(path, advantage=advantage)


def test_load_checks_a_new_rollout_size_as_the_constructor_does(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2@4", n_episodes=8).save(path)
    # It failed in the estimator core at the first rollout ("batch values need k <= N ... got k=4, N=4").
    with pytest.raises(ValueError, match=r"has k=4, but the leave-one-out advantage needs k < n_episodes=4"):
        OrderGradPPO.load(path, n_episodes=4)
    with pytest.raises(ValueError, match="n_episodes=8 is not a multiple of group_size=3"):
        OrderGradPPO.load(path, group_size=3)
    model = OrderGradPPO.load(path, env=DummyVecEnv([lambda: gym.make("CartPole-v1")]), n_episodes=6)
    assert (model.n_episodes, model.rollout_buffer.n_episodes, str(model.objective)) == (6, 6, "cvar0.2@4")


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_a_ranked_objective_whose_default_k_is_1_warns_that_it_trains_the_mean(cls) -> None:
    with pytest.warns(UserWarning, match=r"default k = n_episodes // 2 = 1.*trains the mean"):
        cls("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        cls("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=3)  # the mean asked for: nothing to say
        cls("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=4)


def _saved_models() -> dict[str, tuple[type, Any]]:
    """One save of every OrderGrad algorithm that ``load`` checks: the class and a factory of its constructor."""
    from sb3_contrib.common.wrappers import ActionMasker

    from ordergrad_rl.agents import OrderGradMaskablePPO, OrderGradQCriticPPO, OrderGradRecurrentPPO

    def masked() -> gym.Env:
        return ActionMasker(gym.make("CartPole-v1"), lambda env: np.ones(2, dtype=bool))

    return {
        "ppo": (OrderGradPPO, lambda **kw: OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=4, **kw)),
        "reinforce": (
            OrderGradREINFORCE,
            lambda **kw: OrderGradREINFORCE("MlpPolicy", "CartPole-v1", n_episodes=4, **kw),
        ),
        "recurrent": (
            OrderGradRecurrentPPO,
            lambda **kw: OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", n_episodes=4, **kw),
        ),
        "mask": (OrderGradMaskablePPO, lambda **kw: OrderGradMaskablePPO("MlpPolicy", masked(), n_episodes=4, **kw)),
        "q_critic": (
            OrderGradQCriticPPO,
            lambda **kw: OrderGradQCriticPPO("MlpPolicy", "CartPole-v1", objective="top2@4", n_steps=32, **kw),
        ),
    }


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask"])
def test_gamma_none_is_the_episodic_default(algorithm: str) -> None:
    # check_gamma takes None as the algorithm's default: OrderGradREINFORCE, OrderGradRecurrentPPO and
    # OrderGradMaskablePPO built with gamma=None and failed at the first rollout (None ** int, a TypeError).
    _, make = _saved_models()[algorithm]
    model = make(gamma=None)
    assert model.gamma == make().gamma == 1.0
    model.learn(64)


#: Values every constructor refuses with a ValueError naming the argument (the Q-critic mode takes no ent_coef
#: schedule and no normalize_advantage mode of episodes: refused too).
BAD_OVERRIDES = [
    ("gamma", 2.0),
    ("target_kl", -1),
    ("ent_coef", float("nan")),
    ("normalize_advantage", "False"),
    ("learning_rate", "1e-3x"),
    ("n_epochs", 0),
    ("clip_range", 0.0),
    ("clip_range_vf", -1.0),
    ("max_grad_norm", -1),
    ("vf_coef", -1.0),
    ("gae_lambda", 2.0),
    ("batch_size", 1),
    ("seed", -1),
    ("untie_tail", "yes"),
    ("drift_when_blind", 1),
    ("novelty_phase", 2.0),
    ("value_baseline", "x"),
    ("policy_kwargs", "net_arch"),
    ("rollout_buffer_kwargs", "x"),  # load failed in _setup_model ("'str' object has no attribute 'items'")
    ("sde_sample_freq", 2.5),
]


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_checks_each_override_as_the_constructor_does(tmp_path: Path, algorithm: str) -> None:
    # SB3's load sets its kwargs on the model: load(path, gamma=2.0), target_kl=-1, ent_coef=nan or
    # normalize_advantage="False" (read as true) loaded without a word and trained on them.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make().save(path)
    accepted = inspect.signature(cls).parameters
    checked = [(name, value) for name, value in BAD_OVERRIDES if name in accepted]
    assert len(checked) >= 10
    for name, value in checked:
        _assert_load_refuses_as_the_constructor(cls, make, path, {}, {name: value}, match=name)


def _assert_load_refuses_as_the_constructor(
    cls: type, make: Any, path: Path, saved: dict, given: dict, match: str | None = None
) -> None:
    """``cls.load(path, **given)`` of a save made with ``saved`` raises the ``ValueError`` the constructor raises
    for ``saved`` and ``given`` together, word for word."""
    with pytest.raises(ValueError, match=match) as constructor_error:
        make(**saved, **given)
    with pytest.raises(ValueError, match=match) as load_error:
        cls.load(path, **given)
    assert str(load_error.value) == str(constructor_error.value)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_sets_a_good_override_as_given(tmp_path: Path, algorithm: str) -> None:
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make().save(path)
    schedule = lambda progress: 1e-3 * progress  # noqa: E731
    model = cls.load(path, gamma=0.9, learning_rate=schedule, max_grad_norm=0.3, seed=3)
    assert (model.gamma, model.learning_rate, model.max_grad_norm, model.seed) == (0.9, schedule, 0.3, 3)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask"])
def test_load_takes_risk_schedule_and_entropy_plateau_as_the_constructor_does(tmp_path: Path, algorithm: str) -> None:
    # SB3's load set the string "level" and the flag True as they were: the first rollout failed deep inside
    # ("'str' object has no attribute 'share'", "'bool' object has no attribute 'update'").
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make(objective="cvar0.5", seed=0).save(path)
    given = {"risk_schedule": "level:0.5"}
    if "entropy_plateau" in inspect.signature(cls).parameters:  # OrderGradPPO's
        given["entropy_plateau"] = {"p_value": 0.1}
    built = make(objective="cvar0.5", **given)
    model = cls.load(path, env=built.get_env(), **given)
    assert model.risk_schedule == built.risk_schedule
    assert repr(model.entropy_plateau) == repr(built.entropy_plateau)
    assert cls.load(path, risk_schedule="none").risk_schedule is None
    model.learn(100)
    with pytest.raises(ValueError, match="risk_schedule"):
        cls.load(path, risk_schedule="bogus")
    mean = tmp_path / "mean.zip"
    make(objective="mean").save(mean)
    _assert_load_refuses_as_the_constructor(cls, make, mean, {"objective": "mean"}, {"risk_schedule": "level"}, "mean")


#: Arguments whose valid values depend on the model's others: the arguments of the save, and those given to the
#: constructor and to load. OrderGradQCriticPPO refuses episodic mode's arguments.
CROSS_OVERRIDES: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = {
    "episodic": [
        ({"objective": "cvar0.5"}, {"reward_to_go": True}),
        ({"objective": "cvar0.5"}, {"drift_when_blind": True, "novelty_when_blind": True}),
        ({"objective": "cvar0.5"}, {"normalize_advantage": "group"}),
        ({"objective": "mean"}, {"group_size": 2, "reward_to_go": True}),
        ({"objective": "mean"}, {"noise_sampler": True}),
        ({"objective": "cvar0.5", "policy_kwargs": {"critic": "none"}}, {"value_baseline": True}),
    ],
    "q_critic": [({}, {"n_episodes": 8}), ({}, {"reward_to_go": True})],
}


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_checks_an_override_against_the_models_other_arguments(tmp_path: Path, algorithm: str) -> None:
    # The constructors' checks of one argument against the others were not run at load: load(path, reward_to_go=True)
    # of a CVaR model, drift_when_blind with novelty_when_blind, normalize_advantage="group" without groups,
    # noise_sampler=True on the mean, value_baseline=True without the value head, and the Q-critic mode's
    # n_episodes or reward_to_go loaded without a word.
    cls, make = _saved_models()[algorithm]
    accepted = inspect.signature(cls).parameters
    cases = CROSS_OVERRIDES["q_critic" if algorithm == "q_critic" else "episodic"]
    checked = [(saved, given) for saved, given in cases if set(given) <= set(accepted)]
    assert len(checked) >= 2
    for i, (saved, given) in enumerate(checked):
        path = tmp_path / f"model{i}.zip"
        make(**saved).save(path)
        _assert_load_refuses_as_the_constructor(cls, make, path, saved, given)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_refuses_none_where_the_constructor_reads_it_as_its_default(tmp_path: Path, algorithm: str) -> None:
    # SB3's load set None as given: ent_coef=None and n_episodes=None failed deep inside at the first rollout
    # (TypeError), risk_schedule=None and entropy_plateau=None turned them off, never the constructor's default.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make().save(path)
    accepted = inspect.signature(cls).parameters
    names = [name for name in cls.default_when_none if name in accepted]
    assert "ent_coef" in names and "gamma" in names
    for name in names:
        with pytest.raises(ValueError, match=rf"load\(path, {name}=None\).*leave {name} out"):
            cls.load(path, **{name: None})
    model = cls.load(path, seed=None, target_kl=None, tensorboard_log=None)  # None as SB3's constructor reads it
    assert (model.seed, model.target_kl, model.tensorboard_log) == (None, None, None)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask"])
def test_load_refuses_a_saved_flag_the_class_takes_no_argument_for(tmp_path: Path, algorithm: str) -> None:
    # saved_before names the flags of saves from earlier releases, which load reads as the model's arguments:
    # OrderGradREINFORCE.load(path, drift_when_blind=1) (an OrderGradPPO argument) set it unchecked, and training ran
    # the drift REINFORCE does not offer; custom_objects={"drift_when_blind": 1} likewise.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make().save(path)
    accepted = inspect.signature(cls).parameters
    foreign = [name for name in cls.saved_before if name not in accepted]
    assert "sb3_default_net_arch" in foreign and ("drift_when_blind" in foreign) == (algorithm != "ppo")
    for name in foreign:
        message = rf"{cls.__name__}.load\(path, {name}=1\): {cls.__name__} takes no argument {name}"
        with pytest.raises(ValueError, match=message):
            cls.load(path, **{name: 1})
        with pytest.raises(ValueError, match=message):
            cls.load(path, custom_objects={name: 1})
    assert cls.load(path, untie_tail=False).untie_tail is False  # one it takes loads as before


def test_load_resolves_baseline_lambda_with_the_models_baseline(tmp_path: Path) -> None:
    path = tmp_path / "model.zip"
    OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=4, value_baseline=False).save(path)
    with pytest.raises(ValueError, match="baseline_lambda=0.9 needs a per-step baseline"):
        OrderGradPPO.load(path, baseline_lambda=0.9)
    with pytest.raises(ValueError, match="baseline_lambda must be in"):
        OrderGradPPO.load(path, baseline_lambda=3.0, value_baseline="history")
    assert OrderGradPPO.load(path, baseline_lambda=0.9, value_baseline="history").baseline_lambda == 0.9


#: Values given to load in ``custom_objects`` that it refuses as the same arguments: the objective and the advantage
#: mode, SB3's n_steps in episodic mode, None for a constructor default, and BAD_OVERRIDES (except policy_kwargs, which
#: custom_objects replaces as in SB3).
BAD_CUSTOM_OBJECTS = [
    ("objective", "max@4"),
    ("objective_spec", "max@4"),
    ("k", 3),
    ("advantage", "episodic"),
    ("n_steps", 4),
    ("n_episodes", 2),
    ("ent_coef", None),
    *[(name, value) for name, value in BAD_OVERRIDES if name != "policy_kwargs"],
]


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_checks_custom_objects_as_the_same_arguments(tmp_path: Path, algorithm: str) -> None:
    # SB3's load puts custom_objects in place of the saved entries unchecked: custom_objects={"gamma": 2.0} loaded,
    # {"n_episodes": 2} loaded with k=4, and {"objective": "max@4"} was ignored without a word (the save holds
    # objective_spec), while load(path, gamma=2.0), n_episodes=2 and objective="max@4" are refused.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    (make() if algorithm == "q_critic" else make(objective="cvar0.5")).save(path)  # k = 2: n_episodes=2 is refused
    refused = {*inspect.signature(cls).parameters, "objective_spec", "advantage", "n_steps"}
    refused -= {"n_steps"} if algorithm == "q_critic" else set()  # its rollout size
    checked = [(name, value) for name, value in BAD_CUSTOM_OBJECTS if name in refused]
    assert len(checked) >= 12
    for name, value in checked:
        with pytest.raises(ValueError) as given_error:
            cls.load(path, **{name: value})
        with pytest.raises(ValueError) as custom_error:
            cls.load(path, custom_objects={name: value})
        assert str(custom_error.value) == str(given_error.value)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask"])
def test_load_converts_custom_objects_as_the_same_arguments(tmp_path: Path, algorithm: str) -> None:
    # SB3's load set the string and the flag as they were: the first rollout failed deep inside ("'str' object has no
    # attribute 'share'", "'bool' object has no attribute 'update'").
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make(objective="cvar0.5", seed=0).save(path)
    custom = {"risk_schedule": "level:0.5", "gamma": 0.9}
    if "entropy_plateau" in inspect.signature(cls).parameters:  # OrderGradPPO's
        custom["entropy_plateau"] = {"p_value": 0.1}
    given = cls.load(path, **custom)
    model = cls.load(path, env=make().get_env(), custom_objects=custom)
    assert (model.risk_schedule, model.gamma) == (given.risk_schedule, 0.9)
    assert repr(getattr(model, "entropy_plateau", None)) == repr(getattr(given, "entropy_plateau", None))
    assert cls.load(path, gamma=0.8, custom_objects={"gamma": 0.9}).gamma == 0.8  # the argument wins, as in SB3
    model.learn(100)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_checks_policy_kwargs_in_custom_objects_as_the_constructor_does(tmp_path: Path, algorithm: str) -> None:
    # SB3's load built the policy with them: net_arch="x" failed deep in torch ("empty(): argument 'size' ...").
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    made = make(policy_kwargs={"activation_fn": th.nn.ReLU})
    made.save(path)
    with pytest.raises(ValueError, match=r"policy_kwargs\['net_arch'\] must be a list of positive layer sizes"):
        cls.load(path, custom_objects={"policy_kwargs": {"net_arch": "x"}})
    model = cls.load(path, custom_objects={"policy_kwargs": made.policy_kwargs})  # SB3's use: replace what won't load
    assert model.policy_kwargs == made.policy_kwargs


def _inference_only_load(cls: type, path: Path, env: Any) -> Any:
    """``cls.load`` with SB3's (and rl-zoo3's) ``custom_objects`` for a save whose schedules do not unpickle."""
    custom = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}
    return cls.load(path, env=env, custom_objects=custom)


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "mask", "q_critic"])
def test_load_takes_sb3s_inference_only_custom_objects_as_sb3_does(tmp_path: Path, algorithm: str) -> None:
    # The constructor refuses clip_range=0 (it would freeze the policy): with a zero learning rate nothing trains, and
    # SB3's usual custom_objects for a save from another Python load and train a few steps as with SB3's PPO.
    PPO("MlpPolicy", "CartPole-v1", n_steps=32, batch_size=32).save(tmp_path / "sb3.zip")
    cls, make = _saved_models()[algorithm]
    made = make(seed=0)
    made.save(tmp_path / "model.zip")
    for algorithm_class, path, env in [(PPO, "sb3.zip", made.get_env()), (cls, "model.zip", made.get_env())]:
        model = _inference_only_load(algorithm_class, tmp_path / path, env)
        before = [p.detach().clone() for p in model.policy.parameters()]
        model.learn(64)
        clip_range = getattr(model, "clip_range", lambda _: 0.0)  # OrderGradREINFORCE has none
        assert (model.learning_rate, model.lr_schedule(1.0), clip_range(1.0)) == (0.0, 0.0, 0.0)
        assert all(th.equal(a, b) for a, b in zip(before, model.policy.parameters(), strict=True))


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "q_critic"])
def test_load_builds_an_env_id_with_the_saves_envs(tmp_path: Path, algorithm: str) -> None:
    # As the constructors take one; SB3's load failed on it ("not a Gymnasium environment ... OpenAI Gym").
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make(n_envs=2, seed=1).save(path)
    model = cls.load(path, env="CartPole-v1")
    assert (model.env.num_envs, model.n_envs, model.seed) == (2, 2, 1)
    model.learn(64)
    assert cls.load(path, env="CartPole-v1", seed=5).seed == 5


@pytest.mark.parametrize("algorithm", ["ppo", "reinforce", "recurrent", "q_critic"])
def test_load_takes_n_envs_as_the_constructor_does(tmp_path: Path, algorithm: str) -> None:
    # load(path, env="CartPole-v1", n_envs=2) built the save's one env and then set n_envs=2 on the model: the first
    # rollout failed deep in NumPy ("cannot reshape array of size 1 into shape (2,newaxis)"), as with a gym.Env.
    cls, make = _saved_models()[algorithm]
    path = tmp_path / "model.zip"
    make(seed=1).save(path)
    model = cls.load(path, env="CartPole-v1", n_envs=2)
    assert (model.env.num_envs, model.n_envs) == (2, 2)
    model.learn(64)
    with pytest.raises(ValueError, match=r"n_envs=2 only builds envs from an env id; the env passed has num_envs=1"):
        cls.load(path, env=gym.make("CartPole-v1"), n_envs=2)
    with pytest.raises(ValueError, match=r"load\(path, n_envs=2\) needs env="):
        cls.load(path, n_envs=2)
    with pytest.raises(ValueError, match=r"load\(path, n_envs=None\)"):  # None: the constructor's default for the env
        cls.load(path, n_envs=None)
    assert cls.load(path, env=gym.make("CartPole-v1"), n_envs=1).n_envs == 1


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_load_refuses_a_use_sde_the_saved_policy_was_not_built_with(tmp_path: Path, cls: type) -> None:
    # SB3's load built the policy with the use_sde given and failed deep inside: a size mismatch of log_std on
    # continuous actions (RuntimeError), gSDE's full_std on a categorical policy (TypeError).
    for env_id, use_sde in (("Pendulum-v1", False), ("Pendulum-v1", True), ("CartPole-v1", False)):
        path = tmp_path / f"{env_id}_{use_sde}.zip"
        cls("MlpPolicy", env_id, objective="mean", n_episodes=2, use_sde=use_sde).save(path)
        with pytest.raises(ValueError, match=rf"load\(path, use_sde={not use_sde}\): the model was saved with use_sde"):
            cls.load(path, env=gym.make(env_id), use_sde=not use_sde)
        assert cls.load(path, env=gym.make(env_id), use_sde=use_sde).use_sde == use_sde  # the saved one: as before


def test_an_eval_env_that_does_not_fit_the_model_is_named_when_training_starts() -> None:
    """An eval env of other spaces, or a plain eval env of a VecNormalize training env, failed at the first evaluation,
    eval_freq steps into training, deep in SB3 ("Unexpected observation shape (1, 1) for Box environment"; the sync's
    AssertionError). Both are named when learn starts; an image env SB3 transposes itself still fits."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.envs import FakeImageEnv

    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean", n_episodes=4, seed=0)
    callback = RiskEvalCallback("RiskyBandit-v0", n_eval_episodes=2, eval_freq=10_000)
    with pytest.raises(
        ValueError,
        match=r"the eval env's observation_space Box\(0.0, 1.0, \(1,\), float32\) does not fit the model's Box\(\[-4.8",
    ):
        model.learn(100, callback=callback)
    assert model.num_timesteps == 0
    normalized = OrderGradPPO("MlpPolicy", VecNormalize(make_vec_env("CartPole-v1", 2)), objective="mean", n_episodes=4)
    with pytest.raises(ValueError, match=r"training env is wrapped in VecNormalize and the eval env is not"):
        normalized.learn(100, callback=RiskEvalCallback("CartPole-v1", n_eval_episodes=2, eval_freq=10_000))
    eval_env = VecNormalize(make_vec_env("CartPole-v1", 1), training=False, norm_reward=False)
    normalized.learn(100, callback=RiskEvalCallback(eval_env, n_eval_episodes=2, eval_freq=10_000))
    image = FakeImageEnv(screen_height=36, screen_width=36, n_channels=1)
    cnn = OrderGradPPO(
        "CnnPolicy",
        image,
        objective="mean",
        n_episodes=2,
        policy_kwargs={"features_extractor_kwargs": {"features_dim": 8}},
    )
    assert cnn.observation_space.shape == (1, 36, 36)  # transposed by SB3; the eval env is not
    callback = RiskEvalCallback(FakeImageEnv(screen_height=36, screen_width=36, n_channels=1), n_eval_episodes=1)
    cnn.learn(20, callback=callback)
    assert callback.last_returns.size == 1


@pytest.mark.parametrize("mode", [dict(n_episodes=2), dict(advantage="q_critic", objective="top2@4", n_steps=8)])
@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_cnn_policy_names_a_grid_too_small_for_nature_cnn(mode: dict[str, Any], dtype: type) -> None:
    """CnnPolicy on a 10x10xC grid (MinAtar's) failed inside SB3 (float: NatureCNN's assertion that it is no image)
    or torch (uint8: "kernel size can't be greater than actual input size"), naming neither the 36x36 minimum nor
    GridCNN."""
    from stable_baselines3.common.envs import FakeImageEnv

    env = FakeImageEnv(action_dim=3, screen_height=10, screen_width=10, n_channels=4, discrete=True)
    if dtype is np.float32:
        env = gym.wrappers.TransformObservation(
            env, lambda obs: (obs / 255).astype(np.float32), spaces.Box(0, 1, (10, 10, 4), np.float32)
        )
    with pytest.raises(
        ValueError, match=r"CnnPolicy's NatureCNN \(SB3's\) needs images of at least 36x36, got .*GridCNN"
    ):
        OrderGradPPO("CnnPolicy", env, **mode)


@pytest.mark.parametrize(
    ("cls", "policy"),
    [
        (ordergrad_rl.OrderGradRecurrentPPO, "CnnLstmPolicy"),
        (ordergrad_rl.OrderGradMaskablePPO, "CnnPolicy"),
        (OrderGradPPO, "MlpPolicy"),
        (QRDQNCVaR, "CnnPolicy"),
    ],
)
def test_a_grid_too_small_for_nature_cnn_names_the_policy_chosen(cls: type, policy: str) -> None:
    """The error said "CnnPolicy's NatureCNN" for every policy, CnnLstmPolicy's too; QRDQNCVaR failed inside torch
    ("Kernel size can't be greater than actual input size")."""
    from stable_baselines3.common.envs import FakeImageEnv
    from stable_baselines3.common.torch_layers import NatureCNN

    env = FakeImageEnv(action_dim=3, screen_height=10, screen_width=10, n_channels=4, discrete=True)
    policy_kwargs = dict(features_extractor_class=NatureCNN) if policy == "MlpPolicy" else None
    sizes = {} if cls is QRDQNCVaR else {"n_episodes": 2}
    with pytest.raises(ValueError, match=rf"^{policy}'s NatureCNN \(SB3's\) needs images of at least 36x36"):
        cls(policy, env, policy_kwargs=policy_kwargs, **sizes)


@pytest.mark.parametrize(
    ("cls", "policy"),
    [(OrderGradPPO, "CnnPolicy"), (ordergrad_rl.OrderGradRecurrentPPO, "CnnLstmPolicy"), (QRDQNCVaR, "CnnPolicy")],
)
def test_channel_last_float_images_name_the_transposition_nature_cnn_needs(cls: type, policy: str) -> None:
    """Float images of shape (36, 36, 3) with normalize_images=False (SB3's advice for images already scaled) are not
    transposed by SB3 (its VecTransposeImage takes uint8 images only), and NatureCNN read 36 channels of 36x3 images:
    torch's "Kernel size can't be greater than actual input size", as in SB3's PPO. Channel-first ones train."""
    from stable_baselines3.common.envs import FakeImageEnv

    def scaled(channel_first: bool) -> gym.Env:
        env = FakeImageEnv(action_dim=2, screen_height=36, screen_width=36, n_channels=3, discrete=True)
        shape = (3, 36, 36) if channel_first else (36, 36, 3)
        order = (2, 0, 1) if channel_first else (0, 1, 2)
        space = spaces.Box(0.0, 1.0, shape, np.float32)
        return gym.wrappers.TransformObservation(
            env, lambda obs: (obs / 255).astype(np.float32).transpose(order), space
        )

    sizes = {} if cls is QRDQNCVaR else {"n_episodes": 2}
    kwargs = dict(policy_kwargs=dict(normalize_images=False), **sizes)
    with pytest.raises(
        ValueError,
        match=rf"^{policy}'s NatureCNN \(SB3's\) reads the first axis as the channels .*\(36, 36, 3\) .*channel-last"
        r".*transpose them to \(3, 36, 36\)",
    ):
        cls(policy, scaled(channel_first=False), **kwargs)
    cls(policy, scaled(channel_first=True), **kwargs)


#: Every agent class with its policy names' family infix (``"Lstm"``: ``MlpLstmPolicy`` ...), for the tests of
#: what every constructor refuses.
AGENTS = [
    (OrderGradPPO, ""),
    (OrderGradREINFORCE, ""),
    (ordergrad_rl.OrderGradRecurrentPPO, "Lstm"),
    (ordergrad_rl.OrderGradMaskablePPO, ""),
    (ordergrad_rl.agents.OrderGradQCriticPPO, ""),
    (QRDQNCVaR, ""),
]


@pytest.mark.parametrize(
    ("cls", "policy"),
    [(cls, f"MultiInput{infix}Policy") for cls, infix in AGENTS if cls is not ordergrad_rl.agents.OrderGradQCriticPPO],
)
def test_multi_input_policy_on_observations_without_a_dict_names_the_policy_to_use(cls: type, policy: str) -> None:
    """MultiInputPolicy on a Box observation space failed inside SB3's CombinedExtractor with "'Box' object has no
    attribute 'spaces'" (as SB3's PPO does), naming neither the Dict it needs nor the policy that fits."""
    first = next(iter(cls.policy_aliases))
    with pytest.raises(
        ValueError, match=rf"^{policy}'s CombinedExtractor \(SB3's\) needs Dict observations, got Box\(.*use {first}"
    ):
        cls(policy, LongEpisodeEnv(3), **({} if cls is QRDQNCVaR else {"n_episodes": 2}))


class DictObservationEnv(LongEpisodeEnv):
    """LongEpisodeEnv observing a Dict."""

    observation_space = spaces.Dict({"pos": spaces.Box(-1.0, 1.0, (2,), np.float32), "flag": spaces.Discrete(2)})

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return {"pos": np.zeros(2, np.float32), "flag": 0}, {}

    def step(self, action):
        _, reward, terminated, truncated, info = super().step(action)
        return {"pos": np.zeros(2, np.float32), "flag": 1}, reward, terminated, truncated, info


@pytest.mark.parametrize(
    ("cls", "policy", "name", "fix"),
    [
        (ordergrad_rl.OrderGradRecurrentPPO, "MlpLstmPolicy", "MlpLstmPolicy", "MultiInputLstmPolicy"),
        (OrderGradPPO, ordergrad_rl.agents.OrderGradActorCriticPolicy, "MlpPolicy", "MultiInputPolicy"),
    ],
)
def test_a_policy_that_flattens_a_dict_observation_names_the_multi_input_one(cls, policy, name, fix) -> None:
    """SB3 refuses the names "MlpPolicy" and "CnnPolicy" on a Dict space; OrderGradRecurrentPPO("MlpLstmPolicy", env)
    (as sb3-contrib's RecurrentPPO) or a policy class was built, and learn failed inside torch's Flatten at the first
    step with "'dict' object has no attribute 'flatten'"."""
    with pytest.raises(
        ValueError,
        match=rf"^{name}'s FlattenExtractor \(SB3's\) does not read Dict observations, got Dict\(.*use {fix}$",
    ):
        cls(policy, DictObservationEnv(3), n_episodes=2)


@pytest.mark.parametrize(("cls", "policy"), [(cls, f"Mlp{infix}Policy") for cls, infix in AGENTS])
def test_a_constructor_without_an_env_names_load_and_set_env(cls: type, policy: str, tmp_path: Path) -> None:
    """cls(policy, env=None) failed inside with "'OrderGradPPO' object has no attribute 'n_envs'" (SB3's PPO: "...
    no attribute 'observation_space'"). A model without an env comes from load, which still builds one without."""
    name = cls.__name__
    with pytest.raises(ValueError, match=rf"^{name}\(policy, env=None\): .*needs an env .*{name}\.load\(path\)"):
        cls(policy, None)
    cls(policy, LongEpisodeEnv(3)).save(tmp_path / "model")
    loaded = cls.load(tmp_path / "model")
    assert loaded.get_env() is None
    loaded.set_env(LongEpisodeEnv(3))


@pytest.mark.parametrize("log_interval", [0, 2.5, True])
def test_learn_refuses_a_log_interval_that_is_no_count_of_rollouts_before_collecting(log_interval) -> None:
    # SB3's learn divides the iteration by it after the first rollout: log_interval=0 (meaning "no logs", which is
    # None) collected a whole rollout, then failed with "integer modulo by zero".
    model = OrderGradREINFORCE("MlpPolicy", LongEpisodeEnv(3), objective="mean", n_episodes=2)
    with pytest.raises(ValueError, match=rf"log_interval must be None or a nonzero integer, got {log_interval!r}"):
        model.learn(6, log_interval=log_interval)
    assert model.num_timesteps == 0
    model.learn(6, log_interval=None)
    model.learn(6, log_interval=-1)  # SB3's PPO takes it (every rollout's count divides by -1): a PPO script runs
