"""Prompt-conditional groups: grouped advantages, GRPO, exact gradients, unbiasedness, how groups share contexts."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack, VecNormalize
from test_agents_estimator import assert_loss_gradient  # tests/ is on sys.path under pytest

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.advantages import episode_weights
from ordergrad_rl.agents.common.groups import GroupResetter
from ordergrad_rl.core import Objective, known_lstat_value, lstat_advantage
from ordergrad_rl.core.gcvar import gcvar_weights

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def grouped_model(cls=OrderGradREINFORCE, env: Any = "CartPole-v1", **kwargs: Any):
    options = dict(objective="top2@3", n_episodes=12, group_size=4, n_envs=1, seed=0)
    return cls("MlpPolicy", env, **{**options, **kwargs})


# ---------------------------------------------------------------------------------------------- advantages
def test_grouped_weights_are_lstat_advantage_per_group() -> None:
    returns = np.random.default_rng(0).normal(size=12)
    model = grouped_model(normalize_advantage=False)
    by_hand = np.concatenate([3 * lstat_advantage(returns[g : g + 4], "top2@3") for g in range(0, 12, 4)])
    np.testing.assert_allclose(model.episode_weights(returns), by_hand, atol=1e-12)
    # Pooled over the 12 episodes instead, the weights differ: each episode is compared with its own group only.
    assert not np.allclose(by_hand, 3 * lstat_advantage(returns, "top2@3"))

    model.normalize_advantage = "group"
    per_group = by_hand.reshape(3, 4)
    np.testing.assert_allclose(
        model.episode_weights(returns), (per_group / (per_group.std(1, keepdims=True) + 1e-8)).ravel(), atol=1e-12
    )
    model.normalize_advantage = True
    np.testing.assert_allclose(model.episode_weights(returns), by_hand / (by_hand.std() + 1e-8), atol=1e-12)


def test_episode_weights_take_an_objective_per_group() -> None:
    """Each group ranked by its own objective (or GCVaR level), as if alone; ``True`` scales all groups together."""
    returns = np.random.default_rng(2).normal(size=(3, 4))
    values = {"reward": returns}
    objectives = [Objective.parse(spec, 2) for spec in ("cvar0.5", "cvar1", "cvar0.5")]
    alone = np.concatenate(
        [2 * lstat_advantage(row, objective) for row, objective in zip(returns, objectives, strict=True)]
    )
    np.testing.assert_array_equal(episode_weights(objectives, values, False), alone)
    np.testing.assert_array_equal(episode_weights(objectives[0], values, False)[8:], alone[8:])
    np.testing.assert_allclose(episode_weights(objectives, values, True), alone / (alone.std() + 1e-8), atol=1e-12)
    by_group = alone.reshape(3, 4) / (alone.reshape(3, 4).std(1, keepdims=True) + 1e-8)
    np.testing.assert_allclose(episode_weights(objectives, values, "group"), by_group.ravel(), atol=1e-12)
    levels = episode_weights(objectives[0], values, False, gcvar_alpha=(0.5, None, 0.25))
    np.testing.assert_array_equal(levels[:4], gcvar_weights(returns[0], 0.5))
    np.testing.assert_array_equal(levels[4:8], 2 * lstat_advantage(returns[1], objectives[0]))
    np.testing.assert_array_equal(levels[8:], gcvar_weights(returns[2], 0.25))
    with pytest.raises(ValueError, match="one per group"):
        episode_weights(objectives[:2], values, False)
    with pytest.raises(ValueError, match="needs groups"):
        episode_weights(objectives[:1], {"reward": returns[0]}, False)


def test_mean_with_group_normalization_is_grpo() -> None:
    model = grouped_model(objective="mean", n_episodes=24, group_size=8, normalize_advantage="group")
    assert not model.reward_to_go  # whole-episode weights by default with groups
    rng = np.random.default_rng(1)
    for returns in (rng.normal(size=24), rng.integers(0, 2, size=24).astype(float)):
        returns[:8] = 1.0  # a group where every rollout got the same reward: GRPO gives it no signal
        groups = returns.reshape(3, 8)
        grpo = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, keepdims=True) + 1e-8)
        np.testing.assert_allclose(model.episode_weights(returns), grpo.ravel(), atol=1e-9)
        assert np.all(model.episode_weights(returns)[:8] == 0)
        # TRL's GRPOTrainer (scale_rewards="group") divides by the ddof=1 std + 1e-4: sqrt((G-1)/G) times these.
        trl = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, ddof=1, keepdims=True) + 1e-4)
        np.testing.assert_allclose(model.episode_weights(returns) * np.sqrt(7 / 8), trl.ravel(), atol=1e-3)


def test_grouped_reinforce_gradient_on_a_fixed_batch() -> None:
    # lr = 0: the gradient of the update is kept at the parameters that collected the batch.
    model = grouped_model(
        objective="top2@3", n_episodes=8, group_size=4, n_envs=2, learning_rate=0.0, normalize_advantage=False,
        max_grad_norm=float("inf"), seed=4,
    )  # fmt: skip
    model.learn(1)
    buffer = model.rollout_buffer
    k, g = 3, 4
    observations, actions = th.as_tensor(buffer.observations), th.as_tensor(buffer.actions).long().flatten()
    log_prob = model.policy.get_distribution(observations).log_prob(actions)
    index = th.as_tensor(buffer.episode_index)
    per_group = []
    for group in range(2):  # (k/G) sum_{i in group} a_i grad log p(tau_i), a_i from the group's returns only
        members = range(group * g, (group + 1) * g)
        returns = np.array([buffer.rewards[buffer.episode_index == i].sum() for i in members])
        advantages = lstat_advantage(returns, "top2@3")
        terms = [float(a) * log_prob[index == i].sum() for a, i in zip(advantages, members, strict=True)]
        per_group.append(sum(terms) * k / g)
    objective = sum(per_group) / 2  # averaged over the groups
    ascent = th.autograd.grad(objective, list(model.policy.parameters()), allow_unused=True)
    assert_loss_gradient(model, list(ascent))


# ---------------------------------------------------------------------------------------------- contexts
class NoisyStart(gym.Env):
    """The start state is a random integer (the context); three steps of rewards ~ N(0, 1) from ``np_random``."""

    observation_space = gym.spaces.Box(0.0, 1e6, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.start = float(self.np_random.integers(1_000_000))
        return np.array([self.start], np.float32), {}

    def step(self, action):
        self.t += 1
        return np.array([self.start], np.float32), float(self.np_random.normal()), self.t >= 3, False, {}


def starts_and_returns(model) -> tuple[np.ndarray, np.ndarray]:
    """``[n_groups, G]`` start observations and returns of the model's last rollout."""
    buffer = model.rollout_buffer
    first = buffer.episode_step == 0
    starts = np.empty(buffer.n_episodes)
    starts[buffer.episode_index[first]] = np.asarray(buffer.observations)[first, 0]
    shape = (-1, model.group_size)
    return starts.reshape(shape), buffer.episode_returns.reshape(shape)


@pytest.mark.parametrize("n_envs", [1, 2, 3, 12])
def test_seed_rule_shares_the_start_and_nothing_else(n_envs: int) -> None:
    venv = DummyVecEnv([NoisyStart] * n_envs)
    model = grouped_model(env=venv, objective="mean", learning_rate=0.0)  # 3 groups of 4 per rollout
    assert GroupResetter(venv, np.random.default_rng(0)).rule == "seed"
    first, second, all_starts = [], [], []
    for _ in range(25):
        model.learn(1, reset_num_timesteps=False)
        starts, returns = starts_and_returns(model)
        assert np.all(starts == starts[:, :1])  # members share the start state ...
        assert len(np.unique(starts[:, 0])) == 3  # ... and groups do not
        all_starts.append(starts[:, 0])
        first.append(returns[:, 0])
        second.append(returns[:, 1])
    # Their futures are independent: one shared stream would make the returns equal (correlation 1).
    correlation = np.corrcoef(np.concatenate(first), np.concatenate(second))[0, 1]
    assert abs(correlation) < 0.3, correlation  # 75 pairs: standard error ~0.12
    assert len(np.unique(np.concatenate(all_starts))) == 75  # fresh contexts every rollout


class UnseededStart(NoisyStart):
    """Draws its start from a generator of its own, not ``np_random``: a shared reset seed does not repeat it."""

    starts = np.random.default_rng(0)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.start = float(self.starts.integers(1_000_000))
        return np.array([self.start], np.float32), {}


def test_seed_rule_warns_when_a_start_does_not_repeat(recwarn) -> None:
    # The members of its groups started apart, and the groups were ranked as if they shared a start, silently.
    model = grouped_model(env=DummyVecEnv([UnseededStart] * 2), objective="mean", learning_rate=0.0)
    with pytest.warns(UserWarning, match="did not start with the observation that seed gave another member"):
        model.learn(1)
    starts, _ = starts_and_returns(model)
    assert not np.all(starts == starts[:, :1])
    # An env whose start follows its reset seed does not warn.
    grouped_model(env=DummyVecEnv([NoisyStart] * 2), objective="mean").learn(1)
    assert not [w for w in recwarn if "did not start" in str(w.message)]


def test_seed_rule_with_subprocesses() -> None:
    venv = SubprocVecEnv([NoisyStart] * 3, start_method="fork")
    try:
        model = grouped_model(env=venv, objective="mean", learning_rate=0.0)
        first, second = [], []
        for _ in range(10):
            model.learn(1, reset_num_timesteps=False)
            starts, returns = starts_and_returns(model)
            assert np.all(starts == starts[:, :1]) and len(np.unique(starts[:, 0])) == 3
            first.append(returns[:, 0])
            second.append(returns[:, 1])
        assert abs(np.corrcoef(np.concatenate(first), np.concatenate(second))[0, 1]) < 0.45  # 30 pairs
    finally:
        venv.close()


def test_options_rule_on_the_native_batch() -> None:
    # TargetSum declares context_key = "problem": a group's members are posed the same problem.
    model = grouped_model(OrderGradPPO, "TargetSum-v0", objective="top2@4", n_episodes=40, group_size=8, n_envs=None)
    assert model.n_envs == 40 and GroupResetter(model.env, np.random.default_rng(0)).rule == "options"
    model.learn(1)
    buffer = model.rollout_buffer
    first = buffer.episode_step == 0
    prompts = np.empty((40, 9), dtype=np.int64)
    prompts[buffer.episode_index[first]] = buffer.observations[first, :9]
    groups = prompts.reshape(5, 8, 9)
    assert np.all(groups == groups[:, :1])
    assert len({tuple(p) for p in groups[:, 0]}) == 5


def test_options_rule_with_fewer_envs_than_members() -> None:
    model = grouped_model(OrderGradPPO, "TargetSum-v0", objective="top2@4", n_episodes=16, group_size=8, n_envs=4)
    model.learn(1)
    buffer = model.rollout_buffer
    first = buffer.episode_step == 0
    prompts = np.empty((16, 9), dtype=np.int64)
    prompts[buffer.episode_index[first]] = buffer.observations[first, :9]
    assert np.all(prompts.reshape(2, 8, 9) == prompts.reshape(2, 8, 9)[:, :1])


def test_set_random_seed_after_construction_repeats_the_groups() -> None:
    # As SB3's: a model built without a seed and seeded by set_random_seed trains the same twice. The group contexts
    # came from a generator the constructor seeded with seed=None, which set_random_seed left alone.
    models = []
    for _ in "ab":
        th.manual_seed(0)  # the policy's initial weights (drawn at construction)
        model = grouped_model(seed=None)
        model.set_random_seed(3)
        models.append(model.learn(200))
    first, second = models
    np.testing.assert_array_equal(first._episode_contexts, second._episode_contexts)
    np.testing.assert_array_equal(first.rollout_buffer.episode_returns, second.rollout_buffer.episode_returns)
    for p, q in zip(first.policy.parameters(), second.policy.parameters(), strict=True):
        assert th.equal(p, q)


def test_seed_rule_on_a_native_batch() -> None:
    # TargetSum declares its contexts; with the seed rule forced, a shared seed poses a shared problem too (the reset
    # draws it), and each env gets its own generator back for the rest of the episode.
    from ordergrad_rl.envs import make_sb3_vec_env

    venv = make_sb3_vec_env("TargetSum-v0", 6, seed=3)
    obs = venv.reset()
    resetter = GroupResetter(venv, np.random.default_rng(0))
    resetter.rule = "seed"
    own = list(venv.unwrapped.vector_env.env_rngs)
    contexts = np.repeat(resetter.draw_contexts(2), 3)
    obs = resetter.reset(np.arange(6), contexts, obs)
    prompts = obs[:, :9].reshape(2, 3, 9)
    assert np.all(prompts == prompts[:, :1]) and not np.all(prompts[0] == prompts[1])
    assert all(a is b for a, b in zip(venv.unwrapped.vector_env.env_rngs, own, strict=True))


def test_vec_normalize_is_applied_and_observation_wrappers_are_refused() -> None:
    venv = VecNormalize(DummyVecEnv([NoisyStart] * 2), norm_reward=False)
    model = grouped_model(env=venv, objective="mean", n_episodes=8)
    model.learn(1)
    starts, _ = starts_and_returns(model)
    assert np.all(np.abs(starts) <= 10.0)  # normalized, not raw integers up to 1e6
    stacked = VecFrameStack(DummyVecEnv([NoisyStart]), 2)
    with pytest.raises(ValueError, match="VecFrameStack transforms observations"):
        grouped_model(env=stacked, objective="mean").learn(1)


class NoisyImage(gym.Env):
    """A channel-last uint8 image drawn from ``np_random`` at reset and kept for three steps: SB3 wraps it in
    ``VecTransposeImage`` itself."""

    observation_space = gym.spaces.Box(0, 255, (6, 5, 1), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        self.image = self.np_random.integers(0, 256, (6, 5, 1), dtype=np.uint8)
        return self.image, {}

    def step(self, action):
        self.t += 1
        return self.image, float(self.np_random.normal()), self.t >= 3, False, {}


def test_image_observations_are_transposed_as_sb3s_own_wrapper_does() -> None:
    # SB3 wraps a channel-last image env in VecTransposeImage without being asked; groups refused it, naming a
    # wrapper the user never applied.
    model = grouped_model(env=DummyVecEnv([NoisyImage] * 2), objective="mean")
    model.learn(1)
    buffer = model.rollout_buffer
    assert buffer.observations.shape[1:] == (1, 6, 5)
    for episode in range(buffer.n_episodes):  # the reset's image, transposed, is the one the steps show
        images = buffer.observations[buffer.episode_index == episode]
        assert np.all(images == images[:1])
    starts = buffer.observations[buffer.episode_step == 0][np.argsort(buffer.episode_index[buffer.episode_step == 0])]
    groups = starts.reshape(3, 4, -1)
    assert np.all(groups == groups[:, :1]) and len(np.unique(groups[:, 0], axis=0)) == 3


# ---------------------------------------------------------------------------------------------- unbiasedness
#: Per context and arm, a reward distribution (values, probabilities): the arms differ in spread, and context 1 pays
#: more, so ranking the pooled batch (context 1 fills the top ranks) is not ranking within each context.
ARMS = {
    0: [([0.0, 1.0], [0.5, 0.5]), ([0.2, 0.6, 3.0], [0.3, 0.6, 0.1])],
    1: [([4.0, 5.0], [0.9, 0.1]), ([2.0, 7.0], [0.6, 0.4])],
}
CONTEXT_PROBS = np.array([0.3, 0.7])


class ContextBandit(gym.Env):
    """A one-step bandit whose context (one-hot observation) is drawn at reset with :data:`CONTEXT_PROBS`."""

    observation_space = gym.spaces.Box(0.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.context = int(self.np_random.random() < CONTEXT_PROBS[1])
        return np.eye(2, dtype=np.float32)[self.context], {}

    def step(self, action):
        values, probs = ARMS[self.context][int(action)]
        reward = float(self.np_random.choice(values, p=probs))
        return np.eye(2, dtype=np.float32)[self.context], reward, True, False, {}


class PosedContextBandit(ContextBandit):
    """The same bandit opting in to the options rule: contexts are posed, uniformly over the two."""

    context_key = "context"
    n_contexts = 2

    def reset(self, *, seed=None, options=None):
        obs, info = super().reset(seed=seed)
        if options is not None:
            self.context = int(options["context"])
        return np.eye(2, dtype=np.float32)[self.context], info


def exact_gradient(logits: np.ndarray, objective: str, k: int, context_probs: np.ndarray, pooled: bool = False):
    """Gradient of ``sum_c P(c) v_c`` (or, ``pooled``, of the value of the context mixture) w.r.t. the logits."""
    table = th.tensor(logits, dtype=th.float64, requires_grad=True)
    policy = th.softmax(table, dim=1)
    outcomes, masses = [], []
    for c in range(2):
        values = np.concatenate([ARMS[c][a][0] for a in range(2)])
        mass = th.cat([policy[c, a] * th.tensor(ARMS[c][a][1], dtype=th.float64) for a in range(2)])
        outcomes.append(th.tensor(values, dtype=th.float64))
        masses.append(mass)
    if pooled:
        mixture = th.cat([float(context_probs[c]) * masses[c] for c in range(2)])
        value = known_lstat_value(th.cat(outcomes), mixture, objective, k=k)
    else:
        value = sum(
            float(context_probs[c]) * known_lstat_value(outcomes[c], masses[c], objective, k=k) for c in range(2)
        )
    (grad,) = th.autograd.grad(value, table)
    return grad.numpy()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("env_class", "context_probs"), [(ContextBandit, CONTEXT_PROBS), (PosedContextBandit, [0.5] * 2)]
)
def test_grouped_gradient_is_unbiased_for_the_context_averaged_objective(env_class, context_probs) -> None:
    venv = DummyVecEnv([env_class] * 64)
    venv.seed(0)
    model = OrderGradREINFORCE(
        "MlpPolicy", venv, objective="top2@3", n_episodes=64, group_size=4, learning_rate=0.0,
        normalize_advantage=False, max_grad_norm=float("inf"), seed=0,
        policy_kwargs=dict(net_arch=[], zero_init_action_net=True),
    )  # fmt: skip
    logits = np.array([[0.4, -0.3], [-0.5, 0.2]])  # logits[c, a] = W[a, c] + b[a], with b = 0
    with th.no_grad():
        model.policy.action_net.weight.copy_(th.tensor(logits.T))
    grads = []
    for _ in range(400):
        model.learn(1, reset_num_timesteps=False)
        grads.append(-model.policy.action_net.weight.grad.numpy().T.copy())  # ascent direction, [c, a]
    grads = np.array(grads)
    mean, se = grads.mean(0), grads.std(0) / np.sqrt(len(grads))
    exact = exact_gradient(logits, "top2", 3, np.asarray(context_probs))
    assert np.all(np.abs(mean - exact) < 4 * se), (mean, exact, se)
    # The test can tell: ranking the pooled batch would estimate the mixture's gradient, over 5 standard errors away.
    pooled = exact_gradient(logits, "top2", 3, np.asarray(context_probs), pooled=True)
    assert np.max(np.abs(pooled - exact) / se) > 5, (pooled, exact, se)


# ---------------------------------------------------------------------------------------------- arguments
def test_group_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="k < group_size=4"):
        grouped_model(objective="top2@4")
    with pytest.raises(ValueError, match="not a multiple of group_size=5"):
        grouped_model(group_size=5)
    with pytest.raises(ValueError, match="group_size must be"):
        grouped_model(group_size=1)
    with pytest.raises(ValueError, match="set group_size"):
        grouped_model(group_size=None, normalize_advantage="group")
    with pytest.raises(ValueError, match="normalize_advantage must be True, False, 'group', 'channel' or 'running'"):
        grouped_model(normalize_advantage="groups")
    with pytest.raises(ValueError, match="normalize_advantage='channel' divides each group's weights.*set group_size"):
        grouped_model(group_size=None, normalize_advantage="channel")
    with pytest.raises(ValueError, match="reward_to_go is not defined with group_size"):
        grouped_model(objective="mean", reward_to_go=True)
    with pytest.raises(ValueError, match="Q-critic mode"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", objective="top2@4", group_size=4)
    for mode in ("channel", "running"):
        with pytest.raises(ValueError, match="'group', 'channel' or 'running' are for advantage='episodic'"):
            OrderGradPPO("MlpPolicy", "CartPole-v1", advantage="q_critic", k=4, normalize_advantage=mode)
    # Unbound objectives take k = G // 2; PPO's default episode count is rounded up to a multiple of G.
    assert grouped_model(objective="cvar0.5", group_size=6).k == 3
    assert OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="max@6", group_size=24).n_episodes == 264
    assert OrderGradPPO("MlpPolicy", "CartPole-v1", objective="mean", group_size=6).n_episodes == 18


class HalfDeclaredContexts(ContextBandit):
    """Opts in to the options rule by its reset option but does not say how many contexts there are."""

    context_key = "context"


def test_context_key_without_n_contexts_is_refused() -> None:
    # It was grouped by the seed rule instead, silently: its groups never used the context option it declares.
    model = grouped_model(env=DummyVecEnv([HalfDeclaredContexts] * 2), objective="top2@3")
    with pytest.raises(ValueError, match="declares context_key='context' but no n_contexts"):
        model.learn(1)


def test_group_settings_survive_save_and_load(tmp_path) -> None:
    model = grouped_model(OrderGradPPO, normalize_advantage="group")
    model.save(tmp_path / "m.zip")
    loaded = OrderGradPPO.load(tmp_path / "m.zip")
    assert (loaded.group_size, loaded.normalize_advantage, str(loaded.objective)) == (4, "group", "top2@3")
    loaded.set_env(model.env)
    loaded.learn(1)
