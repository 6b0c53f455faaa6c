"""``critic_when_tied`` of OrderGradPPO and OrderGradMaskablePPO: GAE against enumeration and SB3's buffer, the critic
fitted in the update's minibatches without moving the actor (under the steps' action masks), tied rollouts trained on
the critic's advantages, everything else as without it, saves and bad values."""

from __future__ import annotations

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.preprocessing import preprocess_obs

from ordergrad_rl import OrderGradMaskablePPO, OrderGradPPO
from ordergrad_rl.agents.common.advantages import gae_advantages
from ordergrad_rl.agents.common.policies import CnnPolicy, MlpPolicy, MultiInputPolicy, predict_values
from ordergrad_rl.agents.common.tied_critic import (
    TIED_CRITIC_GAE_LAMBDA,
    TIED_CRITIC_GAMMA,
    TIED_CRITIC_VF_COEF,
    critic_fitted_in_update,
    critic_parameters,
    evaluate_actions_with_critic,
)


def enumerated_gae(rewards, values, episode_index, bootstrap, gamma, lam):
    """``A_t = sum_{u>=t} (gamma lam)^(u-t) delta_u`` term by term, the textbook sum."""
    result = np.zeros(len(rewards))
    for episode in np.unique(episode_index):
        steps = np.flatnonzero(episode_index == episode)
        for j, t in enumerate(steps):
            for k, u in enumerate(steps[j:]):
                following = values[steps[j + k + 1]] if j + k + 1 < len(steps) else bootstrap[episode]
                result[t] += (gamma * lam) ** k * (rewards[u] + gamma * following - values[u])
    return result


@pytest.mark.parametrize("seed", range(4))
def test_gae_matches_the_enumerated_sum_with_episodes_interleaved(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, size=5)
    # Steps of several envs' episodes interleave in a rollout; each episode's own steps stay in time order.
    keys = np.concatenate([np.sort(rng.random(n)) for n in lengths])
    episode_index = np.repeat(np.arange(5), lengths)[np.argsort(keys, kind="stable")]
    rewards, values, bootstrap = rng.normal(size=len(keys)), rng.normal(size=len(keys)), rng.normal(size=5)
    expected = enumerated_gae(rewards, values, episode_index, bootstrap, 0.9, 0.8)
    mine = gae_advantages(rewards, values, episode_index, bootstrap, 0.9, 0.8)
    np.testing.assert_allclose(mine, expected, atol=1e-12)


def test_gae_of_terminated_episodes_is_sb3s():
    rng = np.random.default_rng(0)
    lengths = [3, 5, 2]
    rewards, values = rng.normal(size=10).astype(np.float32), rng.normal(size=10).astype(np.float32)
    episode_index = np.repeat(np.arange(3), lengths)
    buffer = RolloutBuffer(10, spaces.Box(-1, 1, (1,)), spaces.Discrete(2), gamma=0.97, gae_lambda=0.9)
    starts = np.r_[True, episode_index[1:] != episode_index[:-1]]
    for t in range(10):
        buffer.add(np.zeros((1, 1)), np.zeros((1, 1)), rewards[t : t + 1], starts[t : t + 1], th.tensor([values[t]]),
                   th.zeros(1))  # fmt: skip
    buffer.compute_returns_and_advantage(th.zeros(1), dones=np.ones(1))  # the last episode terminated
    mine = gae_advantages(rewards, values, episode_index, np.zeros(3), 0.97, 0.9)
    np.testing.assert_allclose(mine, buffer.advantages.ravel(), rtol=1e-5, atol=1e-5)


def model(**kwargs):
    return OrderGradPPO("MlpPolicy", "CartPole-v1", **{"n_episodes": 4, "n_epochs": 2, "seed": 0, **kwargs})


#: Targets of the critic for a test: a linear function of CartPole's observation, their gradients large enough
#: that, clipped with the actor's to ``max_grad_norm``, they would shrink the actor's step.
WEIGHTS = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)


def linear_targets(agent):
    """Replace the critic's targets of each rollout by :data:`WEIGHTS` of its observations."""
    compute = agent._tied_critic_advantages

    def replaced():
        compute()
        if agent._critic_targets is not None:
            agent._critic_targets = agent.rollout_buffer.observations @ WEIGHTS

    agent._tied_critic_advantages = replaced
    return agent


def test_the_update_fits_the_critic_and_steps_the_actor_as_without_it():
    fitted = linear_targets(model(n_epochs=10)).learn(400)
    observations = fitted.rollout_buffer.observations
    targets = observations @ WEIGHTS
    before = np.mean((predict_values(model().policy, observations) - targets) ** 2)  # the same initial critic
    after = np.mean((predict_values(fitted.policy, observations) - targets) ** 2)
    assert after < 0.5 * before
    assert fitted.logger.name_to_value["train/value_loss"] > 0.0
    unfitted = model(n_epochs=10, critic_when_tied=False).learn(400)
    critic = {id(p) for p in critic_parameters(fitted.policy)}
    assert critic and len(critic) < len(list(fitted.policy.parameters()))
    for (name, mine), theirs in zip(fitted.policy.named_parameters(), unfitted.policy.parameters(), strict=True):
        if id(mine) not in critic:  # the critic's gradients were not clipped with the actor's
            assert th.equal(mine, theirs), name
            assert th.equal(mine.grad, theirs.grad), name
        else:
            assert theirs not in unfitted.policy.optimizer.state or not unfitted.policy.optimizer.state[theirs], name


#: Images NatureCNN reads (its smallest side), channel-first as SB3's VecTransposeImage gives them.
IMAGE = spaces.Box(0, 255, (1, 36, 36), np.uint8)


class Frames(gym.Env):
    """:class:`ReachTwo` seen as frames of :data:`IMAGE` (every pixel ``100 t``): ``CnnPolicy``'s NatureCNN."""

    observation_space = IMAGE
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(IMAGE.shape, np.uint8), {}

    def step(self, action):
        self.t += 1
        return np.full(IMAGE.shape, 100 * self.t, np.uint8), 1.0, int(action) == 0, False, {}


def test_an_unshared_critic_fits_its_own_features_extractor():
    """``share_features_extractor=False`` failed at the first update (an ``AssertionError``: SB3's ``extract_features``
    returns both extractors' features there, with a warning that the extractor passed is ignored)."""
    env = gym.wrappers.TimeLimit(Frames(), max_episode_steps=2)
    agent = OrderGradPPO(
        "CnnPolicy", env, n_episodes=4, n_epochs=1, seed=1, policy_kwargs={"share_features_extractor": False}
    )
    assert agent.critic_when_tied
    extractor = {id(p) for p in agent.policy.vf_features_extractor.parameters()}
    assert extractor and extractor <= {id(p) for p in critic_parameters(agent.policy)}
    before = [p.detach().clone() for p in agent.policy.vf_features_extractor.parameters()]
    agent.learn(40)
    after = list(agent.policy.vf_features_extractor.parameters())
    assert not all(th.equal(a, b) for a, b in zip(before, after, strict=True))  # the fit moved the critic's own


def reference_evaluate_actions(policy, obs, actions):
    """What the critic's ``evaluate_actions`` computed before it read a shared extractor's features once: SB3's
    ``get_distribution``, and the critic's values from a second pass of the shared extractor without gradients (from
    the critic's own extractor where it is not shared)."""
    distribution = policy.get_distribution(obs)
    preprocessed = preprocess_obs(obs, policy.observation_space, normalize_images=policy.normalize_images)
    if policy.share_features_extractor:
        with th.no_grad():
            features = policy.features_extractor(preprocessed)
    else:
        features = policy.vf_features_extractor(preprocessed)
    values = policy.value_net(policy.mlp_extractor.forward_critic(features))
    return values, distribution.log_prob(actions), distribution.entropy()


#: (policy class, observation space, policy_kwargs) of the critic's evaluate_actions tests.
CRITIC_POLICIES = {
    "shared CNN": (CnnPolicy, IMAGE, {}),
    "separate CNNs": (CnnPolicy, IMAGE, {"share_features_extractor": False}),
    "Dict, image and vector": (
        MultiInputPolicy,
        spaces.Dict({"image": IMAGE, "vector": spaces.Box(-1, 1, (3,))}),
        {},
    ),
    "shared MLP, Gaussian": (MlpPolicy, spaces.Box(-1, 1, (3,)), {"net_arch": [8]}),
}


def critic_policy(name: str, seed: int = 0):
    """The policy of :data:`CRITIC_POLICIES` ``name`` (``Discrete(3)`` actions, ``Box(2)`` for the Gaussian), built
    from ``seed`` (a twin of the same seed has the same parameters), and a batch of 6 observations (tensors, a dict
    of them for ``Dict``) and actions drawn from the spaces."""
    cls, observation_space, kwargs = CRITIC_POLICIES[name]
    action_space = spaces.Box(-1, 1, (2,)) if "Gaussian" in name else spaces.Discrete(3)
    th.manual_seed(seed)
    policy = cls(observation_space, action_space, lambda _: 3e-4, **kwargs)
    observation_space.seed(seed)
    action_space.seed(seed)
    samples = [observation_space.sample() for _ in range(6)]
    if isinstance(observation_space, spaces.Dict):
        obs = {key: th.as_tensor(np.stack([sample[key] for sample in samples])) for key in observation_space.spaces}
    else:
        obs = th.as_tensor(np.stack(samples))
    actions = th.as_tensor(np.stack([action_space.sample() for _ in range(6)]))
    return policy, obs, actions


def ppo_loss(values, log_prob, entropy):
    """A loss of the three outputs with SB3's PPO terms: the weighted log-likelihoods, the entropy bonus and the
    value loss (targets 1), so that every parameter that takes a gradient there takes one here."""
    weights = th.linspace(-1.0, 1.0, len(log_prob))
    return -(weights * log_prob).mean() - 0.01 * entropy.mean() + 0.5 * (values.flatten() - 1.0).square().mean()


@pytest.mark.parametrize("name", list(CRITIC_POLICIES))
def test_the_critics_evaluate_actions_is_the_reference_to_the_bit(name, one_torch_thread):
    """Values, log-likelihoods, entropies and every parameter's gradient exactly (``torch.equal``) those of
    :func:`reference_evaluate_actions` on a twin policy."""
    policy, obs, actions = critic_policy(name)
    twin, _, _ = critic_policy(name)
    policy.set_training_mode(True)
    twin.set_training_mode(True)
    mine = evaluate_actions_with_critic(policy, obs, actions)
    reference = reference_evaluate_actions(twin, obs, actions)
    assert mine[0].shape == (6, 1)
    for output, expected in zip(mine, reference, strict=True):
        assert th.equal(output, expected)
    ppo_loss(*mine).backward()
    ppo_loss(*reference).backward()
    for (label, parameter), expected in zip(policy.named_parameters(), twin.parameters(), strict=True):
        if parameter.grad is None:
            assert expected.grad is None, label
        else:
            assert th.equal(parameter.grad, expected.grad), label
    if name != "shared MLP, Gaussian":  # the extractors took gradients (MLP's Flatten has no parameters)
        assert all(p.grad is not None for p in policy.features_extractor.parameters())


@pytest.mark.parametrize("name", ["shared CNN", "separate CNNs", "Dict, image and vector"])
def test_the_critics_evaluate_actions_runs_each_extractor_once(name, one_torch_thread):
    """A shared extractor ran twice per minibatch (again without gradients, for the critic's values): a second CNN
    forward. Now each extractor reads the batch once, as in SB3's ``evaluate_actions``."""
    policy, obs, actions = critic_policy(name)
    calls = []
    extractors = {policy.pi_features_extractor, policy.vf_features_extractor}
    handles = [extractor.register_forward_hook(lambda module, *_: calls.append(module)) for extractor in extractors]
    evaluate_actions_with_critic(policy, obs, actions)
    for handle in handles:
        handle.remove()
    assert sorted(map(id, calls)) == sorted(map(id, extractors))


class ReachTwo(gym.Env):
    """Reward 1 a step; action 0 ends the episode, a 2-step limit cuts it: returns 1 or 2, so a rollout of episodes
    that all reach the limit ties at the best return seen."""

    observation_space = spaces.Box(0.0, 2.0, (1,))
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.t += 1
        return np.full(1, self.t, dtype=np.float32), 1.0, int(action) == 0, False, {}


def reach_two_model(critic_when_tied):
    env = gym.wrappers.TimeLimit(ReachTwo(), max_episode_steps=2)
    return OrderGradPPO("MlpPolicy", env, n_episodes=4, n_epochs=2, seed=1, critic_when_tied=critic_when_tied)


def tied_rollouts(critic_when_tied, build=reach_two_model):
    """``(tied, advantages, expected)`` of each rollout of a short run on :class:`ReachTwo` (the model ``build``
    gives): whether it trained on the critic, its advantages, and the standardized GAE of the critic's values before
    the rollout's fit."""
    agent = build(critic_when_tied)
    seen = []
    compute = agent._compute_advantages

    def recorded():
        compute()
        buffer = agent.rollout_buffer
        values = predict_values(agent.policy, buffer.observations)
        episodes = range(len(buffer.episode_time_outs))
        last = [values[np.flatnonzero(buffer.episode_index == e)[-1]] for e in episodes]
        bootstrap = np.where(buffer.episode_time_outs, last, 0.0)  # a time-out's last value stands in for its next
        gae = gae_advantages(buffer.rewards, values, buffer.episode_index, bootstrap, TIED_CRITIC_GAMMA, 0.95)
        tied = agent._rollout_tied_at_best and not agent._rollout_blind
        seen.append((tied, buffer.advantages.copy(), (gae - gae.mean()) / (gae.std() + 1e-8)))

    agent._compute_advantages = recorded
    agent.learn(400)
    return seen


def test_a_rollout_tied_at_the_best_trains_on_the_critics_advantages():
    rollouts = tied_rollouts(None)
    tied = [(advantages, expected) for is_tied, advantages, expected in rollouts if is_tied]
    assert tied and len(tied) < len(rollouts)
    for advantages, expected in tied:
        np.testing.assert_allclose(advantages, expected, atol=1e-5)
        assert np.any(advantages)


def test_without_it_a_tied_rollout_trains_on_zero_advantages():
    tied = [advantages for is_tied, advantages, _ in tied_rollouts(False) if is_tied]
    assert tied and not any(np.any(advantages) for advantages in tied)


def test_rollouts_that_rank_something_train_as_without_it():
    actors = []
    for flag in (True, False):
        agent = model(critic_when_tied=flag).learn(1_000)
        critic = {id(p) for p in critic_parameters(agent.policy)}
        actors.append([p.detach().clone() for p in agent.policy.parameters() if id(p) not in critic])
        assert agent.logger.name_to_value.get("train/tied_critic", 0.0) == 0.0
    assert all(th.equal(a, b) for a, b in zip(*actors, strict=True))


def test_it_logs_the_critic_and_a_loaded_model_fits_it_as_the_saved_one_would(tmp_path):
    agent = model().learn(700)
    assert {"train/value_loss", "train/explained_variance", "train/tied_critic"} <= set(agent.logger.name_to_value)
    agent.save(tmp_path / "m")
    loaded = OrderGradPPO.load(tmp_path / "m")
    assert loaded.critic_when_tied and loaded.num_timesteps == agent.num_timesteps
    # The save kept the critic and its Adam moments: a resumed run fits it on from where it was.
    for mine, theirs in zip(critic_parameters(agent.policy), critic_parameters(loaded.policy), strict=True):
        assert th.equal(mine, theirs)
        mine_state, their_state = agent.policy.optimizer.state[mine], loaded.policy.optimizer.state[theirs]
        assert mine_state and all(th.equal(mine_state[k], their_state[k]) for k in ("exp_avg", "exp_avg_sq"))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"critic_when_tied": 1}, "critic_when_tied must be True, False or None"),
        ({"critic_when_tied": True, "value_baseline": True}, "value_baseline=True regresses"),
        ({"critic_when_tied": True, "policy_kwargs": {"critic": "none"}}, "needs the value head"),
    ],
)
def test_bad_values_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        model(**kwargs)


def test_defaults_saves_and_hparams(tmp_path):
    assert model().critic_when_tied is True  # a ranked objective
    assert model(objective="mean").critic_when_tied is False  # its reward-to-go keeps per-step credit
    assert model(value_baseline=True).critic_when_tied is False  # the value head is the baseline's
    assert model().hparams()["critic_when_tied"] is True
    agent = model()
    agent.save(tmp_path / "m")
    # value_baseline=True at load takes the value head: the saved critic is switched off, not refused.
    assert OrderGradPPO.load(tmp_path / "m", value_baseline=True).critic_when_tied is False
    with pytest.raises(ValueError, match="value_baseline=True regresses"):
        OrderGradPPO.load(tmp_path / "m", value_baseline=True, critic_when_tied=True)
    del agent.critic_when_tied  # as a save of an earlier release holds none
    agent.save(tmp_path / "old")
    assert OrderGradPPO.load(tmp_path / "old").critic_when_tied is False  # it trained tied rollouts on zeros


class ReachTwoDict(gym.ObservationWrapper):
    """:class:`ReachTwo` observed through a ``Dict`` (``MultiInputPolicy``)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = spaces.Dict({"t": env.observation_space})

    def observation(self, observation):
        return {"t": observation}


def test_dict_observations_fit_and_train_the_critic():
    env = ReachTwoDict(gym.wrappers.TimeLimit(ReachTwo(), max_episode_steps=2))
    agent = OrderGradPPO("MultiInputPolicy", env, n_episodes=4, n_epochs=2, seed=1)
    trained = []
    fit = agent._critic_fitted_in_update

    def recorded():
        trained.append(agent._rollout_critic_trained)
        return fit()

    agent._critic_fitted_in_update = recorded
    agent.learn(400)
    assert any(trained) and "train/value_loss" in agent.logger.name_to_value


# ------------------------------------------------------------------------------------------- OrderGradMaskablePPO
class MaskedReachTwo(ReachTwo):
    """:class:`ReachTwo` with a third action that its mask never allows (it would end the episode at 0)."""

    action_space = spaces.Discrete(3)

    def step(self, action):
        if int(action) == 2:
            raise AssertionError("a masked action was taken")
        return super().step(action)

    def action_masks(self):
        return np.array([True, True, False])


def masked_reach_two():
    return gym.wrappers.TimeLimit(MaskedReachTwo(), max_episode_steps=2)


def masked_model(critic_when_tied=None, env=None, **kwargs):
    env = masked_reach_two() if env is None else env
    return OrderGradMaskablePPO(
        "MlpPolicy", env, n_episodes=4, n_epochs=2, seed=1, critic_when_tied=critic_when_tied, **kwargs
    )


def test_a_masked_rollout_tied_at_the_best_trains_on_the_critics_advantages():
    # OrderGradMaskablePPO had no critic_when_tied: a rollout whose episodes all reached the limit trained on zero
    # advantages (no gradient), as OrderGradPPO's did before the option.
    rollouts = tied_rollouts(None, masked_model)
    tied = [(advantages, expected) for is_tied, advantages, expected in rollouts if is_tied]
    assert tied and len(tied) < len(rollouts)
    for advantages, expected in tied:
        np.testing.assert_allclose(advantages, expected, atol=1e-5)
        assert np.any(advantages)
    assert not any(np.any(a) for is_tied, a, _ in tied_rollouts(False, masked_model) if is_tied)


def test_the_critics_update_evaluates_the_actions_under_their_masks():
    agent = masked_model(critic_when_tied=True)
    policy = agent.policy
    obs = th.tensor([[0.0], [1.0], [1.0]])
    actions = th.tensor([0, 1, 0])
    masks = th.tensor([[True, True, False], [True, True, False], [True, False, True]])
    theirs = MaskableActorCriticPolicy.evaluate_actions(policy, obs, actions, action_masks=masks)
    unmasked = MaskableActorCriticPolicy.evaluate_actions(policy, obs, actions)
    buffer = SimpleNamespace(values=None, returns=None)
    with critic_fitted_in_update(policy, buffer, np.zeros(3), np.ones(3)):
        mine = policy.evaluate_actions(obs, actions, action_masks=masks)
    for name, a, b, c in zip(("values", "log_prob", "entropy"), mine, theirs, unmasked, strict=True):
        assert th.allclose(a, b, atol=1e-6), name
        if name != "values":  # the masks change the distribution: a masked action gets probability 0
            assert not th.allclose(a, c, atol=1e-3), name


def test_masked_rollouts_that_rank_something_train_as_without_it():
    actors = []
    for flag in (True, False):
        bandit = ActionMasker(gym.make("RiskyBandit-v0"), lambda env: np.array([True, True, False]))
        # Every step clipped (max_grad_norm): its norm over the gradients, the critic's held out, is the actor's.
        agent = OrderGradMaskablePPO("MlpPolicy", bandit, n_episodes=8, n_epochs=4, seed=0, max_grad_norm=1e-3,
                                     critic_when_tied=flag).learn(40)  # fmt: skip
        critic = {id(p) for p in critic_parameters(agent.policy)}
        actors.append([p.detach().clone() for p in agent.policy.parameters() if id(p) not in critic])
        assert agent.logger.name_to_value.get("train/tied_critic", 0.0) == 0.0
        assert ("train/value_loss" in agent.logger.name_to_value) is flag  # the critic is fitted with the option
    assert all(th.equal(a, b) for a, b in zip(*actors, strict=True))


def test_the_masked_models_critic_is_saved_logged_and_off_in_saves_from_before_it(tmp_path):
    agent = masked_model(critic_when_tied=True).learn(300)
    assert agent.logger.name_to_value["train/tied_critic"] in (0.0, 1.0)
    assert agent.hparams()["critic_when_tied"] is True
    agent.save(tmp_path / "m")
    loaded = OrderGradMaskablePPO.load(tmp_path / "m", env=masked_reach_two())
    assert loaded.critic_when_tied is True
    for mine, theirs in zip(critic_parameters(agent.policy), critic_parameters(loaded.policy), strict=True):
        assert th.equal(mine, theirs)
    with pytest.raises(ValueError, match="critic_when_tied must be True, False or None"):
        masked_model(critic_when_tied="yes")
    # A save of an earlier release has no critic_when_tied, and the gae_lambda=1 and vf_coef=0 of a class without a
    # critic: it trains on as it did, and load(..., critic_when_tied=True) fits the critic as a new model would.
    del agent.critic_when_tied
    agent.gae_lambda, agent.vf_coef = 1.0, 0.0
    agent.save(tmp_path / "old")
    assert OrderGradMaskablePPO.load(tmp_path / "old").critic_when_tied is False
    resumed = OrderGradMaskablePPO.load(tmp_path / "old", env=masked_reach_two(), critic_when_tied=True)
    assert (resumed.gae_lambda, resumed.vf_coef) == (TIED_CRITIC_GAE_LAMBDA, TIED_CRITIC_VF_COEF)
    before = [p.detach().clone() for p in critic_parameters(resumed.policy)]
    resumed.learn(100, reset_num_timesteps=False)
    assert not all(th.equal(a, b) for a, b in zip(before, critic_parameters(resumed.policy), strict=True))
