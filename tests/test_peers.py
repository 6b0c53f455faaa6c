"""The risk-sensitive peers: GCVaR weights (Tamar et al. 2015) in the episodic agents, and QR-DQN acting on CVaR."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE, QRDQNCVaR
from ordergrad_rl.agents.qrdqn_cvar import CVaRQRDQNPolicy, quantile_cvar
from ordergrad_rl.core.gcvar import gcvar_level, gcvar_weights
from ordergrad_rl.zoo.models import detect_algorithm

SAFE, RISKY = 0, 1


# ---------------------------------------------------------------------------------------------- GCVaR weights
@pytest.mark.parametrize(
    ("alpha", "expected"),
    [
        # returns 3, -1, 5, 0, 2; sorted -1, 0, 2, 3, 5. VaR_hat = the ceil(alpha N)-th smallest.
        (0.4, [0.0, -1.0 / 0.4, 0.0, 0.0, 0.0]),  # m = 2, VaR = 0: only -1 is below it
        (0.6, [0.0, -3.0 / 0.6, 0.0, -2.0 / 0.6, 0.0]),  # m = 3, VaR = 2
        (0.2, [0.0] * 5),  # m = 1, VaR = -1: the single tail sample sits on VaR, weight 0
        (1.0, [-2.0, -6.0, 0.0, -5.0, -3.0]),  # m = 5, VaR = 5 (the max)
    ],
)
def test_gcvar_weights_by_hand(alpha: float, expected: list[float]) -> None:
    np.testing.assert_allclose(gcvar_weights(np.array([3.0, -1.0, 5.0, 0.0, 2.0]), alpha), expected)


def test_gcvar_weights_against_brute_force() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        n, alpha = int(rng.integers(1, 40)), float(rng.uniform(0.01, 1.0))
        returns = rng.integers(-3, 4, size=n).astype(float)  # many ties
        var = sorted(returns)[int(np.ceil(alpha * n)) - 1]
        brute = [(r - var) / alpha if r <= var else 0.0 for r in returns]
        np.testing.assert_allclose(gcvar_weights(returns, alpha), brute, atol=1e-12)


@pytest.mark.parametrize(
    ("spec", "level"), [("gcvar0.2", 0.2), ("GCVaR 0.05", 0.05), ("gcvar1", 1.0), ("cvar0.2", None), (None, None)]
)
def test_gcvar_level(spec, level) -> None:
    assert gcvar_level(spec) == level


@pytest.mark.parametrize("spec", ["gcvar", "gcvar1.5", "gcvar0", "gcvar0.2@8", "gcvarx"])
def test_gcvar_bad_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="GCVaR"):
        gcvar_level(spec)
    with pytest.raises(ValueError, match="GCVaR"):
        OrderGradREINFORCE("MlpPolicy", "CartPole-v1", objective=spec, n_episodes=8)


def test_gcvar_weights_of_batches_are_each_rows_weights_exactly() -> None:
    # Groups: each row is its own batch with its own VaR_hat, bit for bit the row-by-row weights.
    rng = np.random.default_rng(1)
    for shape, alpha in [((4, 8), 0.25), ((3, 5), 0.2), ((2, 3, 7), 0.5), ((6, 1), 1.0)]:
        returns = rng.integers(-3, 4, size=shape).astype(float)  # ties
        rows = returns.reshape(-1, shape[-1])
        expected = np.stack([gcvar_weights(row, alpha) for row in rows]).reshape(shape)
        np.testing.assert_array_equal(gcvar_weights(returns, alpha), expected)


def test_gcvar_weights_at_a_tiny_level_weight_the_single_tail_sample() -> None:
    """A valid level below 1e-12 / N gave a tail count of 0 and "operands could not be broadcast together with shapes
    (5,) (0,)"; the tail is at least the minimum, as for any level up to 1/N."""
    returns = np.array([3.0, -1.0, 5.0, 0.0, 2.0])
    np.testing.assert_array_equal(gcvar_weights(returns, 1e-13), np.zeros(5))
    np.testing.assert_array_equal(gcvar_weights(returns[None], 1e-300), np.zeros((1, 5)))


@pytest.mark.parametrize("bad", [np.array([]), np.array([1.0, np.nan]), np.ones((2, 0)), np.float64(1.0)])
def test_gcvar_weights_refuse_bad_returns(bad) -> None:
    with pytest.raises(ValueError, match="returns"):
        gcvar_weights(bad, 0.2)


# ---------------------------------------------------------------------------------------------- GCVaR in the agents
def test_reinforce_gcvar_gradient_on_a_fixed_batch() -> None:
    model = OrderGradREINFORCE(
        "MlpPolicy", "CartPole-v1", objective="gcvar0.5", n_episodes=8, n_envs=2, learning_rate=0.0,
        normalize_advantage=False, value_baseline=False, max_grad_norm=float("inf"), seed=5,
    )  # fmt: skip
    assert model.gcvar_alpha == 0.5 and not model.reward_to_go
    model.learn(1)
    buffer = model.rollout_buffer
    returns = buffer.episode_returns
    var = np.sort(returns)[3]  # ceil(0.5 * 8) = 4th smallest
    weights = np.where(returns <= var, returns - var, 0.0) / 0.5
    observations, actions = th.as_tensor(buffer.observations), th.as_tensor(buffer.actions).long().flatten()
    log_prob = model.policy.get_distribution(observations).log_prob(actions)
    episode = th.as_tensor(buffer.episode_index)
    ascent = sum(float(weights[i]) * log_prob[episode == i].sum() for i in range(8)) / 8  # (1/N) sum_i w_i grad log p
    expected = th.autograd.grad(ascent, list(model.policy.parameters()), allow_unused=True)
    checked = 0
    for param, grad in zip(model.policy.parameters(), expected, strict=True):
        if grad is not None:
            th.testing.assert_close(param.grad, -grad, rtol=1e-4, atol=1e-6)
            checked += 1
    assert checked >= 4


def test_reinforce_gcvar_learns_the_safe_arm() -> None:
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", objective="gcvar0.1", n_episodes=128, n_envs=8, learning_rate=0.02, seed=1
    )
    model.learn(128 * 30)
    with th.no_grad():
        probs = model.policy.get_distribution(th.zeros(1, 1)).distribution.probs.numpy()[0]
    assert probs.argmax() == SAFE and probs.max() > 0.8, probs


def test_ppo_gcvar_save_load(tmp_path) -> None:
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="gcvar0.2", n_episodes=8, seed=0)
    assert model.n_episodes == 8 and model.gcvar_alpha == 0.2
    assert OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="gcvar0.2").n_episodes == 256  # the ranked default
    assert OrderGradPPO("MlpPolicy", "CartPole-v1", objective="gcvar0.2").n_episodes == 32  # ... on long episodes
    model.learn(50)
    model.save(tmp_path / "gcvar.zip")
    loaded = OrderGradPPO.load(tmp_path / "gcvar.zip")
    assert loaded.gcvar_alpha == 0.2
    returns = np.array([3.0, -1.0, 5.0, 0.0, 2.0, 1.0, 1.0, 4.0])
    loaded.normalize_advantage = False
    np.testing.assert_allclose(loaded.episode_weights(returns), gcvar_weights(returns, 0.2))


# ---------------------------------------------------------------------------------------------- QR-DQN-CVaR
def test_quantile_cvar_by_hand() -> None:
    quantiles = th.tensor([[[1.0, 0.0], [5.0, 0.0], [3.0, 9.0], [2.0, 9.0]]])  # [batch 1, 4 quantiles, 2 actions]
    th.testing.assert_close(quantile_cvar(quantiles, 0.5), th.tensor([[1.5, 0.0]]))  # mean of the lowest 2
    th.testing.assert_close(quantile_cvar(quantiles, 1.0), th.tensor([[2.75, 4.5]]))  # the mean
    th.testing.assert_close(quantile_cvar(quantiles, 0.01), th.tensor([[1.0, 0.0]]))  # at least one quantile


def test_quantile_cvar_rounds_the_level_up_to_whole_quantiles_as_documented() -> None:
    # The exact CVaR of the uniform distribution on the quantiles when alpha n is whole; at ceil(alpha n) / n
    # otherwise, not interpolated (module docstring and README): 0.25 of 50 quantiles averages the lowest 13.
    quantiles = th.arange(50.0).flip(0)[None, :, None]
    assert quantile_cvar(quantiles, 0.2).item() == 4.5  # the lowest 10 of 0..49: the exact CVaR_0.2
    assert quantile_cvar(quantiles, 0.25).item() == 6.0  # the lowest 13; the exact CVaR_0.25 is 5.76
    assert quantile_cvar(quantiles, 0.99).item() == 24.5  # the mean


@pytest.mark.parametrize(("alpha", "arm"), [(0.1, SAFE), (1.0, RISKY)])
def test_qrdqn_cvar_acts_on_the_cvar(alpha: float, arm: int, tmp_path) -> None:
    model = QRDQNCVaR(
        "MlpPolicy", "RiskyBandit-v0", alpha=alpha, learning_starts=100, buffer_size=5000, exploration_fraction=0.5,
        target_update_interval=100, seed=0, policy_kwargs=dict(n_quantiles=50, net_arch=[32]),
    )  # fmt: skip
    model.learn(3000)
    action, _ = model.predict(np.zeros((1, 1), np.float32), deterministic=True)
    assert int(action[0]) == arm
    model.save(tmp_path / "qr.zip")
    assert detect_algorithm(tmp_path / "qr.zip").name == "QRDQNCVaR"
    loaded = QRDQNCVaR.load(tmp_path / "qr.zip")
    assert loaded.alpha == alpha and loaded.policy.quantile_net.cvar_alpha == alpha


def test_qrdqn_cvar_tensorboard_runs_are_named_after_it(tmp_path) -> None:
    # As each SB3 algorithm names its runs: under QR-DQN's default "QRDQN", a QR-DQN baseline logged beside it took
    # QRDQN_1 and QRDQNCVaR QRDQN_2.
    from sb3_contrib import QRDQN

    for cls in (QRDQN, QRDQNCVaR):
        cls("MlpPolicy", "RiskyBandit-v0", learning_starts=0, tensorboard_log=str(tmp_path)).learn(4)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["QRDQNCVaR_1", "QRDQN_1"]


def test_qrdqn_cvar_load_with_another_alpha_acts_at_it(tmp_path) -> None:
    # SB3's load(path, **kwargs) changes the model: alpha=0.5 moved the Bellman target's level, but the policy was
    # built from the saved policy_kwargs and kept acting at the saved one.
    QRDQNCVaR("MlpPolicy", "RiskyBandit-v0", alpha=0.1, policy_kwargs=dict(n_quantiles=10)).save(tmp_path / "qr.zip")
    loaded = QRDQNCVaR.load(tmp_path / "qr.zip", alpha=0.5)
    assert loaded.alpha == loaded.policy.quantile_net.cvar_alpha == loaded.policy.quantile_net_target.cvar_alpha == 0.5
    # The level given to load was named as the policy option: "cvar_alpha must be in (0, 1], got 2.0".
    with pytest.raises(ValueError, match=r"^alpha must be in \(0, 1\], got 2.0"):
        QRDQNCVaR.load(tmp_path / "qr.zip", alpha=2.0)
    with pytest.raises(ValueError, match=r"^alpha must be in \(0, 1\], got 0"):
        QRDQNCVaR.load(tmp_path / "qr.zip", custom_objects={"alpha": 0})
    assert QRDQNCVaR.load(tmp_path / "qr.zip").policy.quantile_net.cvar_alpha == 0.1


def test_qrdqn_cvar_load_takes_the_policy_kwargs_it_was_built_with(tmp_path) -> None:
    # SB3's load refuses policy_kwargs other than the saved ones, and the saved ones hold cvar_alpha, which the
    # constructor adds: QRDQN.load of the same call passed, QRDQNCVaR.load refused the dict the model was built with.
    from sb3_contrib import QRDQN

    policy_kwargs = dict(n_quantiles=10, net_arch=[16], optimizer_class=th.optim.Adam, optimizer_kwargs=dict(eps=1e-4))
    QRDQN("MlpPolicy", "RiskyBandit-v0", policy_kwargs=policy_kwargs).save(tmp_path / "qrdqn.zip")
    assert QRDQN.load(tmp_path / "qrdqn.zip", policy_kwargs=policy_kwargs).policy_kwargs == policy_kwargs
    assert QRDQNCVaR.load(tmp_path / "qrdqn.zip", policy_kwargs=policy_kwargs).policy.quantile_net.cvar_alpha == 0.2
    QRDQNCVaR("MlpPolicy", "RiskyBandit-v0", alpha=0.1, policy_kwargs=policy_kwargs).save(tmp_path / "qr.zip")
    assert QRDQNCVaR.load(tmp_path / "qr.zip", policy_kwargs=policy_kwargs).alpha == 0.1
    loaded = QRDQNCVaR.load(tmp_path / "qr.zip", alpha=0.5, policy_kwargs={**policy_kwargs, "cvar_alpha": 0.5})
    assert loaded.policy.quantile_net.cvar_alpha == 0.5
    with pytest.raises(ValueError, match="do not equal the stored policy kwargs"):
        QRDQNCVaR.load(tmp_path / "qr.zip", policy_kwargs={**policy_kwargs, "net_arch": [32]})
    with pytest.raises(ValueError, match="differ"):
        QRDQNCVaR.load(tmp_path / "qr.zip", policy_kwargs={**policy_kwargs, "cvar_alpha": 0.3})


def test_a_qrdqn_save_loads_into_qrdqn_cvar_acting_on_the_cvar(tmp_path) -> None:
    # The QR-DQN policy class of the save was built as it is: QRDQNCVaR.load gave a model acting greedily on the
    # mean while its target used the CVaR.
    from sb3_contrib import QRDQN

    qrdqn = QRDQN("MlpPolicy", "RiskyBandit-v0", seed=0, policy_kwargs=dict(n_quantiles=10))
    qrdqn.save(tmp_path / "qrdqn.zip")
    loaded = QRDQNCVaR.load(tmp_path / "qrdqn.zip", alpha=0.1)
    assert type(loaded.policy) is CVaRQRDQNPolicy and loaded.policy.quantile_net.cvar_alpha == 0.1
    for name, value in qrdqn.policy.state_dict().items():
        assert th.equal(loaded.policy.state_dict()[name], value), name
    obs = th.zeros((1, 1))
    expected = quantile_cvar(qrdqn.policy.quantile_net(obs), 0.1).argmax(dim=1)
    assert th.equal(loaded.policy.quantile_net._predict(obs), expected)
    assert QRDQNCVaR.load(tmp_path / "qrdqn.zip").policy.quantile_net.cvar_alpha == 0.2


def test_setting_qrdqn_cvar_alpha_sets_the_level_it_acts_at(tmp_path) -> None:
    # model.alpha = 0.5 changed only the target's next action: the policy went on acting at the level it was built
    # with, and policy.save kept that one.
    model = QRDQNCVaR("MlpPolicy", "RiskyBandit-v0", alpha=0.1, policy_kwargs=dict(n_quantiles=10))
    model.alpha = 0.5
    policy = model.policy
    assert policy.cvar_alpha == policy.quantile_net.cvar_alpha == policy.quantile_net_target.cvar_alpha == 0.5
    assert model.policy_kwargs["cvar_alpha"] == 0.5
    model.save(tmp_path / "qr.zip")
    assert QRDQNCVaR.load(tmp_path / "qr.zip").policy.quantile_net.cvar_alpha == 0.5
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        model.alpha = 1.5
    assert model.alpha == policy.quantile_net.cvar_alpha == 0.5


def test_qrdqn_cvar_refuses_a_qrdqn_policy_subclass_by_name() -> None:
    # A user's subclass of sb3-contrib's QRDQNPolicy failed inside SB3's _setup_model with "QRDQNPolicy.__init__()
    # got an unexpected keyword argument 'cvar_alpha'". A subclass of the CVaR policy works.
    from sb3_contrib.qrdqn.policies import QRDQNPolicy

    class MyPolicy(QRDQNPolicy):
        pass

    with pytest.raises(ValueError, match="MyPolicy.*does not act on the CVaR.*subclass CVaRQRDQNPolicy"):
        QRDQNCVaR(MyPolicy, "RiskyBandit-v0")

    class MyCVaRPolicy(CVaRQRDQNPolicy):
        pass

    model = QRDQNCVaR(MyCVaRPolicy, "RiskyBandit-v0", alpha=0.3, policy_kwargs=dict(n_quantiles=10))
    assert type(model.policy) is MyCVaRPolicy and model.policy.quantile_net.cvar_alpha == 0.3


def test_qrdqn_cvar_alpha_is_checked() -> None:
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\], got 1.5"):
        QRDQNCVaR("MlpPolicy", "CartPole-v1", alpha=1.5)


def test_qrdqn_cvar_third_positional_argument_is_not_taken_as_alpha() -> None:
    # QRDQN("MlpPolicy", env, 1e-4) sets the learning rate; QRDQNCVaR took the same call's 1e-4 as its CVaR level, and
    # trained at QR-DQN's default learning rate on the lowest quantile alone. alpha is keyword-only now.
    with pytest.raises(TypeError, match="positional argument"):
        QRDQNCVaR("MlpPolicy", "CartPole-v1", 1e-4)
    model = QRDQNCVaR("MlpPolicy", "CartPole-v1", alpha=0.5, learning_rate=1e-4)
    assert model.alpha == 0.5 and model.learning_rate == 1e-4


@pytest.mark.parametrize("alpha", [0.0, -0.5, 1.5, float("nan")])
def test_quantile_cvar_refuses_a_level_outside_0_1(alpha: float) -> None:
    # quantile_cvar is public: a level <= 0 gave the minimum quantile, as a tiny level does, 1.5 failed in torch's
    # narrow ("start (0) + length (8) exceeds dimension size (5)") and NaN in math.ceil.
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\]"):
        quantile_cvar(th.zeros(2, 5, 3), alpha)


def test_qrdqn_cvar_nan_alpha_is_named_with_its_bounds() -> None:
    # It said "cvar_alpha must be a finite number >= -inf, got nan".
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\], got nan"):
        QRDQNCVaR("MlpPolicy", "CartPole-v1", alpha=float("nan"))


@pytest.mark.parametrize("n_quantiles", [0, -3, 2.5, "8"])
def test_qrdqn_cvar_n_quantiles_is_checked(n_quantiles: object) -> None:
    # As in sb3-contrib's QRDQN, 0 built and failed at the first forward pass ("shape '[-1, 0, 2]' is invalid"),
    # 2.5 and "8" failed inside torch's nn.Linear and SB3's create_mlp.
    with pytest.raises(ValueError, match="n_quantiles must be an integer >= 1"):
        QRDQNCVaR("MlpPolicy", "CartPole-v1", policy_kwargs=dict(n_quantiles=n_quantiles))


def test_gcvar_with_groups_weights_each_group_as_its_own_batch():
    """GCVaR with ``group_size``: each group's VaR and tail come from that group only."""
    from ordergrad_rl.agents import OrderGradREINFORCE
    from ordergrad_rl.core.gcvar import gcvar_weights

    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyBandit-v0", objective="gcvar0.25", group_size=8, n_episodes=32, normalize_advantage=False
    )
    returns = np.random.default_rng(0).normal(size=32)
    expected = np.concatenate([gcvar_weights(group, 0.25) for group in returns.reshape(4, 8)])
    np.testing.assert_array_equal(model.episode_weights(returns), expected)


def test_qrdqn_cvar_takes_gym_make_vec_as_the_ordergrad_agents_do() -> None:
    # SB3's own check refused a Gymnasium vector env with a message about OpenAI Gym; a native batch trains.
    import gymnasium as gym

    import ordergrad_rl  # noqa: F401  (registers the envs)

    with pytest.raises(ValueError, match=r"Gymnasium vector env \(CartPoleVectorEnv\).*make_vec_env"):
        QRDQNCVaR("MlpPolicy", gym.make_vec("CartPole-v1", num_envs=2))
    model = QRDQNCVaR("MlpPolicy", gym.make_vec("TargetSum-v0", num_envs=4), learning_starts=0, seed=0)
    assert model.n_envs == 4
    model.learn(64)


def test_qrdqn_cvar_load_and_set_env_take_a_native_make_vec(tmp_path) -> None:
    # The constructor took one, but load(path, env=...) and set_env wrap their env with SB3's _wrap_env, which
    # refused it with a message about OpenAI Gym.
    import gymnasium as gym

    import ordergrad_rl  # noqa: F401  (registers the envs)

    QRDQNCVaR("MlpPolicy", gym.make_vec("TargetSum-v0", num_envs=4), seed=0).save(tmp_path / "qr.zip")
    model = QRDQNCVaR.load(tmp_path / "qr.zip", env=gym.make_vec("TargetSum-v0", num_envs=4), learning_starts=0)
    assert model.n_envs == 4
    model.learn(64)
    model.set_env(gym.make_vec("TargetSum-v0", num_envs=4))
    with pytest.raises(ValueError, match=r"Gymnasium vector env \(CartPoleVectorEnv\).*make_vec_env"):
        model.set_env(gym.make_vec("CartPole-v1", num_envs=4))


@pytest.mark.parametrize("action_space", [spaces.Box(-1, 1, (2,)), spaces.MultiDiscrete([2, 3])], ids=str)
def test_qrdqn_cvar_refuses_actions_other_than_discrete_naming_them(action_space) -> None:
    """sb3-contrib's QRDQN asserted its ``Discrete`` actions inside SB3's constructor (a bare ``AssertionError``):
    a ``ValueError`` names the space, QR-DQN's and the agents that act in it; from a ``VecEnv`` and an id too."""
    import re

    import gymnasium as gym
    from stable_baselines3.common.vec_env import DummyVecEnv

    class Env(gym.Env):
        def __init__(self) -> None:
            self.observation_space, self.action_space = spaces.Box(-1, 1, (2,)), action_space

    name = type(action_space).__name__
    message = (
        rf"action space {re.escape(str(action_space))} is a {name}, which QRDQNCVaR \(QR-DQN\) does not act in: it "
        r"acts in Discrete action spaces only\. OrderGradPPO, OrderGradREINFORCE and OrderGradRecurrentPPO act in"
    )
    for env in (Env(), DummyVecEnv([Env])):
        with pytest.raises(ValueError, match=message):
            QRDQNCVaR("MlpPolicy", env)
    with pytest.raises(ValueError, match="Box.*which QRDQNCVaR"):
        QRDQNCVaR("MlpPolicy", "Pendulum-v1")


@pytest.mark.parametrize(
    ("observation_space", "action_space", "message"),
    [
        (spaces.Box(-1, 1, (2,)), spaces.Discrete(3, start=-1), "action space Discrete.*starts at -1"),
        (spaces.Discrete(5, start=1), spaces.Discrete(2), "observation space Discrete.*starts at 1"),
    ],
)
def test_qrdqn_cvar_refuses_spaces_that_do_not_start_at_0(observation_space, action_space, message) -> None:
    # As sb3-contrib's QRDQN, it sent the env actions 0 .. 2 for Discrete(3, start=-1), and trained on
    # Discrete(5, start=1) observations until the first 5 failed in torch ("Class values must be smaller than
    # num_classes"). The OrderGrad agents refuse both before the first step.
    import gymnasium as gym

    class Env(gym.Env):
        def __init__(self) -> None:
            self.observation_space, self.action_space = observation_space, action_space

    with pytest.raises(ValueError, match=message):
        QRDQNCVaR("MlpPolicy", Env())
