"""OrderGradPPO(advantage="q_critic"): advantages, lambda-returns, Q policy, errors, save/load, learning, logging."""

from __future__ import annotations

import csv

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.agents import (
    EpisodicRolloutBuffer,
    GridCNN,
    OrderGradActorCriticPolicy,
    OrderGradPPO,
    q_critic_advantages,
)
from ordergrad_rl.core import Objective, known_lstat_advantage
from ordergrad_rl.risk import risk_profile
from ordergrad_rl.zoo.compare import group_of

pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


class CounterEnv(gym.Env):
    """Observation ``[t / 10, env_id]``, reward ``1 + t``; terminates after ``terminate_after`` steps (if given)."""

    observation_space = spaces.Box(-1.0, 10.0, (2,), np.float32)
    action_space = spaces.Discrete(3)

    def __init__(self, env_id: float, terminate_after: int | None = None) -> None:
        self.env_id, self.terminate_after, self.t = env_id, terminate_after, 0

    def _obs(self) -> np.ndarray:
        return np.array([self.t / 10, self.env_id], dtype=np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        reward = 1.0 + self.t
        self.t += 1
        return self._obs(), reward, self.t == self.terminate_after, False, {}


def counter_vec_env() -> DummyVecEnv:
    """Env 0 terminates every 3 steps; env 1 never terminates but is truncated by a TimeLimit every 4 steps."""
    return DummyVecEnv([lambda: CounterEnv(0.0, terminate_after=3), lambda: gym.wrappers.TimeLimit(CounterEnv(1.0), 4)])


def collect_one_rollout(model: OrderGradPPO) -> RolloutBuffer:
    """One rollout with the freshly built policy, as ``learn`` collects it (no update)."""
    _, callback = model._setup_learn(10**6, None)
    callback.on_training_start(locals(), globals())
    assert model.collect_rollouts(model.env, callback, model.rollout_buffer, model.n_steps)
    return model.rollout_buffer


def q_model(objective: str = "top3@4", **kwargs) -> OrderGradPPO:
    kwargs = dict(n_steps=7, batch_size=14, gamma=0.9, gae_lambda=0.7, seed=3) | kwargs
    return OrderGradPPO("MlpPolicy", counter_vec_env(), advantage="q_critic", objective=objective, **kwargs)


def q_and_probs(model: OrderGradPPO, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with th.no_grad():
        q, distribution = model.policy.q_values(th.as_tensor(obs))
    return q.double().numpy(), distribution.distribution.probs.double().numpy()


def test_lambda_returns_terminal_truncated_and_rollout_end() -> None:
    model = q_model()
    buffer = collect_one_rollout(model)
    gamma, lam = 0.9, 0.7

    def value(t: int, env_id: float) -> float:
        # V(s) = sum_a pi(a|s) Q(s, a), evaluated independently of the policy's predict_values.
        q, p = q_and_probs(model, np.array([[t / 10, env_id]], dtype=np.float32))
        return float((q * p).sum())

    # Env 0: t = 0 1 2 | 0 1 2 | 0 (terminal after t = 2, the rollout ends inside an episode at t = 1).
    # Env 1: t = 0 1 2 3 | 0 1 2 (truncated after t = 3 with final observation t = 4, the rollout ends at t = 3).
    paths = {0: [0, 1, 2, 0, 1, 2, 0], 1: [0, 1, 2, 3, 0, 1, 2]}
    ends = {0: {2: "terminal"}, 1: {3: "truncated"}}
    for env_index, ts in paths.items():
        env_id = float(env_index)
        expected = np.zeros(len(ts))
        next_return = None
        for i in reversed(range(len(ts))):
            t = ts[i]
            reward = 1.0 + t
            kind = ends[env_index].get(t)
            if kind == "terminal":
                expected[i] = reward
            elif kind == "truncated":
                expected[i] = reward + gamma * value(t + 1, env_id)
            elif next_return is None:  # last step of the rollout
                expected[i] = reward + gamma * value(t + 1, env_id)
            else:
                expected[i] = reward + gamma * ((1 - lam) * value(t + 1, env_id) + lam * next_return)
            next_return = expected[i]
        np.testing.assert_allclose(buffer.returns[:, env_index], expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(buffer.observations[:, env_index, 0], np.array(ts) / 10, atol=1e-6)


@pytest.mark.parametrize("objective", ["top3@4", "cvar0.3@5", "max@10", "mean"])
def test_advantage_is_known_lstat_advantage_of_q_with_the_return_substituted(objective: str) -> None:
    model = q_model(objective)
    buffer = collect_one_rollout(model)
    obs = buffer.observations.reshape(-1, 2)
    actions = buffer.actions.reshape(-1).astype(np.int64)
    returns = buffer.returns.reshape(-1).astype(np.float64)
    q, probs = q_and_probs(model, obs)
    rows = np.arange(len(actions))
    q_tilde = q.copy()
    q_tilde[rows, actions] = returns
    parsed = Objective.parse(objective)
    expected = parsed.k * known_lstat_advantage(q_tilde, probs, parsed)[rows, actions]
    np.testing.assert_allclose(buffer.advantages.reshape(-1), expected, rtol=1e-4, atol=1e-5)
    # The buffer's values are Q(s_t, a_t) of the collecting policy: what the Q loss regresses to R^lambda.
    np.testing.assert_allclose(buffer.values.reshape(-1), q[rows, actions], rtol=1e-5, atol=1e-6)
    # Without the collector's records (the hook called on its own), one pass over the buffer gives the same.
    recorded = buffer.advantages.copy()
    model._compute_advantages()
    np.testing.assert_allclose(buffer.advantages, recorded, rtol=1e-5, atol=1e-6)
    if objective == "mean":
        # PPO-Q: q~_t(a_t) - sum_b pi_t(b) q~_t(b).
        np.testing.assert_allclose(
            buffer.advantages.reshape(-1), returns - (probs * q_tilde).sum(-1), rtol=1e-4, atol=1e-5
        )


def test_q_critic_advantages_mean_reduces_to_ppo_q() -> None:
    gen = th.Generator().manual_seed(0)
    q = th.randn(50, 6, generator=gen)
    probs = th.softmax(th.randn(50, 6, generator=gen), -1)
    actions = th.randint(0, 6, (50,), generator=gen)
    returns = th.randn(50, generator=gen)
    q_tilde = q.clone()
    q_tilde[th.arange(50), actions] = returns
    expected = returns - (probs * q_tilde).sum(-1)
    got = q_critic_advantages(q, probs, actions, returns, Objective.parse("mean"))
    th.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    # Under pi the OrderGrad advantages of all arms average to zero (mixture identity), for any objective.
    abar = known_lstat_advantage(q_tilde.double(), probs.double(), "top9@10")
    th.testing.assert_close((probs.double() * abar).sum(-1), th.zeros(50, dtype=th.float64), atol=1e-9, rtol=0)


def test_q_policy_values() -> None:
    model = q_model()
    policy = model.policy
    assert policy.critic == "q" and policy.value_net.out_features == 3
    obs = th.tensor([[0.1, 0.0], [0.3, 1.0]])
    with th.no_grad():
        q, distribution = policy.q_values(obs)
        v = (q * distribution.distribution.probs).sum(-1, keepdim=True)
        th.testing.assert_close(policy.predict_values(obs), v)
        _, values, _ = policy(obs)
        th.testing.assert_close(values, v)
        actions = th.tensor([2, 0])
        q_taken, log_prob, entropy = policy.evaluate_actions(obs, actions)
    th.testing.assert_close(q_taken[:, 0], q[th.arange(2), actions])
    th.testing.assert_close(log_prob, distribution.log_prob(actions))
    # The widened Q layer is in the optimizer.
    optimized = {id(p) for group in policy.optimizer.param_groups for p in group["params"]}
    assert all(id(p) in optimized for p in policy.value_net.parameters())


def test_invalid_action_spaces_and_combinations_are_refused() -> None:
    with pytest.raises(ValueError, match="Discrete action space"):
        OrderGradPPO("MlpPolicy", "Pendulum-v1", advantage="q_critic", objective="top9@10")
    with pytest.raises(ValueError, match="Discrete action space"):
        OrderGradActorCriticPolicy(spaces.Box(-1, 1, (2,)), spaces.Box(-1, 1, (1,)), lambda _: 3e-4, critic="q")
    with pytest.raises(ValueError, match="number of action draws"):
        q_model("cvar0.2")
    with pytest.raises(ValueError, match="n_episodes"):
        q_model(n_episodes=8)
    with pytest.raises(ValueError, match="critic='q'"):
        q_model(policy_kwargs=dict(critic="value"))
    with pytest.raises(ValueError, match="RolloutBuffer"):
        q_model(rollout_buffer_class=EpisodicRolloutBuffer)
    with pytest.raises(ValueError, match="no Q critic"):
        OrderGradPPO(ActorCriticPolicy, counter_vec_env(), advantage="q_critic", objective="mean")
    with pytest.raises(ValueError, match="unknown advantage"):
        OrderGradPPO("MlpPolicy", counter_vec_env(), advantage="q")
    with pytest.raises(ValueError, match="not n_steps"):
        OrderGradPPO("MlpPolicy", counter_vec_env(), n_steps=8)
    with pytest.raises(ValueError, match="ent_coef must be a number"):  # SB3's update multiplies by it
        q_model(ent_coef=lambda progress_remaining: 0.01 * progress_remaining)
    # bool("False") turned the normalization on; n_steps went to SB3 unchecked (its assertion, or a TypeError)
    for flag in ("False", 0, "group "):
        with pytest.raises(ValueError, match="normalize_advantage must be True or False in Q-critic mode"):
            q_model(normalize_advantage=flag)
    for n_steps in ("64", 2.5, 0):
        with pytest.raises(ValueError, match="n_steps must be an integer >= 1"):
            q_model(n_steps=n_steps)
    # Reward channels were "TypeError: alpha must contain real numbers" (a dict) or "malformed objective spec" (a
    # channel string); a reward channel alone at weight 1 is its plain objective.
    for channels in ({"reward": "top9@10", "cost": "mean"}, "reward=top9@10 + -0.5*cost=mean"):
        with pytest.raises(ValueError, match="has reward channels, which are for advantage='episodic'"):
            q_model(channels)
    assert str(q_model({"reward": "top9@10"}).objective) == "top9@10"


def test_defaults_of_the_mode() -> None:
    model = q_model(n_steps=None, gamma=None, batch_size=64)
    assert (model.n_steps, model.gamma, model.ent_coef, model.n_episodes) == (2048, 0.99, 0.0, None)
    assert model.normalize_advantage and model.k == 4 and model.rollout_buffer.__class__ is RolloutBuffer


def test_save_load_round_trip(tmp_path) -> None:
    model = q_model("top2@5", n_steps=16, batch_size=16)
    model.learn(64)
    model.save(tmp_path / "q.zip")
    loaded = OrderGradPPO.load(tmp_path / "q.zip", env=counter_vec_env(), device="cpu")
    assert loaded.advantage == "q_critic" and str(loaded.objective) == "top2@5" and loaded.k == 5
    assert (loaded.n_steps, loaded.n_episodes, loaded.gamma) == (16, None, 0.9)
    assert loaded.policy.critic == "q" and loaded.policy.value_net.out_features == 3
    obs = th.tensor([[0.2, 1.0]])
    with th.no_grad():
        th.testing.assert_close(loaded.policy.q_values(obs)[0], model.policy.q_values(obs)[0])
    loaded.learn(64, reset_num_timesteps=False)
    assert loaded.num_timesteps >= 128 and isinstance(loaded.rollout_buffer, RolloutBuffer)


def test_top1_keeps_exploring_where_mean_commits() -> None:
    """RiskyBandit-v0 (arm means 1.0 / 1.3 / 1.0): with the same budget the mean (PPO-Q) commits to the best-mean
    arm, while Top-1@10 (best of 10 draws) stops pushing once the good arms are likely among 10 draws."""
    entropy = {}
    for objective in ("mean", "top1@10"):
        model = OrderGradPPO(
            "MlpPolicy",
            "RiskyBandit-v0",
            advantage="q_critic",
            objective=objective,
            n_steps=32,
            n_envs=8,
            batch_size=128,
            n_epochs=4,
            learning_rate=3e-3,
            seed=0,
        )
        model.learn(6000)
        with th.no_grad():
            q, distribution = model.policy.q_values(th.zeros(1, 1))
        probs = distribution.distribution.probs[0].numpy()
        entropy[objective] = float(distribution.entropy())
        if objective == "mean":
            assert probs.argmax() == 1 and probs[1] > 0.95, probs
            assert 0.5 < float(q[0, 1]) < 2.5  # Q of the risky arm tracks its mean 1.3 (a noisy target)
    assert entropy["top1@10"] > 0.5 > entropy["mean"], entropy


def test_logs_q_loss_entropy_and_risk_profile() -> None:
    model = OrderGradPPO(
        "MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top9@10", n_envs=2, n_steps=64, batch_size=64
    )
    model.learn(256, log_interval=10**6)  # no dump: the last rollout's and update's values stay in the logger
    logged = model.logger.name_to_value
    assert "train/q_loss" in logged and "train/value_loss" not in logged and "train/explained_variance" in logged
    assert 0.0 < logged["rollout/entropy"] <= np.log(2) + 1e-6
    assert logged["risk/mean"] > 0 and "risk/cvar_0.1" in logged


class _EndedReturns(BaseCallback):
    """The Monitor returns of the episodes that end during each rollout."""

    def __init__(self) -> None:
        super().__init__()
        self.rollouts: list[list[float]] = []

    def _on_rollout_start(self) -> None:
        self.rollouts.append([])

    def _on_step(self) -> bool:
        self.rollouts[-1].extend(info["episode"]["r"] for info in self.locals["infos"] if "episode" in info)
        return True


def test_risk_profile_is_of_the_monitor_returns_of_the_episodes_ended_in_the_rollout(tmp_path) -> None:
    # As the README's dashboards section says: undiscounted (gamma=0.99 here), and no risk/objective.
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", n_envs=2, n_steps=64)
    model.set_logger(configure(str(tmp_path), ["csv"]))
    ended = _EndedReturns()
    model.learn(256, callback=ended)
    rows = list(csv.DictReader((tmp_path / "progress.csv").read_text().splitlines()))
    assert len(rows) == len(ended.rollouts) == 2 and "risk/objective" not in rows[0]
    for row, returns in zip(rows, ended.rollouts, strict=True):
        for key, value in risk_profile(returns).items():
            np.testing.assert_allclose(float(row[f"risk/{key}"]), value, rtol=1e-6)


@pytest.mark.filterwarnings("ignore:.*fewer than 5")  # the 1-step bandit
def test_default_run_name_says_q_critic_beside_the_episodic_runs_of_the_objective(tmp_path) -> None:
    # Both were OrderGradPPO_top2@4_1/_2: compare and the dashboards took the two estimators for seeds of one method.
    kwargs = dict(objective="top2@4", n_envs=2, seed=0, tensorboard_log=str(tmp_path))
    episodic = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", n_episodes=8, batch_size=8, n_epochs=1, **kwargs)
    episodic.learn(8)
    q = OrderGradPPO("MlpPolicy", "RiskyBandit-v0", advantage="q_critic", n_steps=8, batch_size=16, **kwargs)
    q.learn(16)
    assert q.run_name() == "OrderGradPPO_top2@4_qcritic" and episodic.run_name() == "OrderGradPPO_top2@4"
    runs = sorted(path for path in tmp_path.iterdir())
    assert [run.name for run in runs] == ["OrderGradPPO_top2@4_1", "OrderGradPPO_top2@4_qcritic_1"]
    assert [group_of(run, tmp_path) for run in runs] == ["OrderGradPPO_top2@4", "OrderGradPPO_top2@4_qcritic"]


class _AtRolloutEnd(BaseCallback):
    """What a callback sees at each rollout's end: the buffer's advantages and the logger's ``risk/mean``."""

    def __init__(self) -> None:
        super().__init__()
        self.advantages: list[np.ndarray] = []
        self.risk_means: list[float | None] = []

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.advantages.append(self.model.rollout_buffer.advantages.copy())
        self.risk_means.append(self.logger.name_to_value.get("risk/mean"))


def test_on_rollout_end_sees_the_advantages_the_update_trains_on_and_the_rollouts_logs() -> None:
    # As in SB3's PPO and the episodic agents. The callback was called inside SB3's collection, before the Q-critic
    # advantages replaced SB3's GAE ones and before risk/* was recorded: it read other advantages and no risk/mean.
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", n_steps=64, seed=0)
    model.set_logger(configure(None, []))
    seen = _AtRolloutEnd()
    model.learn(64, callback=seen, log_interval=10**6)  # no dump: the rollout's records stay in the logger
    assert len(seen.advantages) == 1 and seen.risk_means[0] == model.logger.name_to_value["risk/mean"]
    np.testing.assert_array_equal(seen.advantages[0].ravel(), model.rollout_buffer.advantages.ravel())


def test_grid_cnn() -> None:
    space = spaces.Box(0, 1, (10, 10, 4), np.float32)
    net = GridCNN(space)
    assert net(th.zeros(5, 10, 10, 4)).shape == (5, 64)
    first = GridCNN(spaces.Box(0, 1, (6, 10, 10), np.float32), features_dim=32, channels_last=False)
    assert first(th.zeros(2, 6, 10, 10)).shape == (2, 32)
    with pytest.raises(ValueError, match="3-D Box"):
        GridCNN(spaces.Box(0, 1, (4,), np.float32))
    # A grid under 2x2 pooled to nothing: torch's "Output size is too small" at the first forward pass.
    with pytest.raises(ValueError, match=r"at least 2x2, got 1x10 .*\(H, W, C\)"):
        GridCNN(spaces.Box(0, 1, (1, 10, 4), np.float32))
    with pytest.raises(ValueError, match=r"at least 2x2, got 10x1 .*\(C, H, W\)"):
        GridCNN(spaces.Box(0, 1, (4, 10, 1), np.float32), channels_last=False)
