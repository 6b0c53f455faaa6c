"""OrderGradRecurrentPPO / OrderGradMaskablePPO: the objectives' arms, exact gradients, LSTM state handling, masks,
save/load and detection by evaluate/compare."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import SpaceSampleEnv  # tests/ is on sys.path under pytest
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv

import ordergrad_rl
from ordergrad_rl.agents import OrderGradMaskablePPO, OrderGradPPO, OrderGradRecurrentPPO
from ordergrad_rl.agents.ppo_mask.policies import OrderGradMaskablePolicy
from ordergrad_rl.agents.ppo_recurrent.buffers import RecurrentEpisodicRolloutBuffer
from ordergrad_rl.agents.ppo_recurrent.policies import OrderGradRecurrentPolicy
from ordergrad_rl.core import lstat_advantage
from ordergrad_rl.zoo.models import detect_algorithm

SAFE, RISKY, LOTTERY = 0, 1, 2
PREFERRED_ARM = {"mean": RISKY, "cvar0.1": SAFE, "max@8": LOTTERY}
LSTM = dict(lstm_hidden_size=8)


def zero_states(model, n: int = 1) -> tuple[th.Tensor, th.Tensor]:
    lstm = model.policy.lstm_actor
    zeros = th.zeros(lstm.num_layers, n, lstm.hidden_size)
    return zeros, zeros.clone()


def recurrent_probs(model) -> np.ndarray:
    with th.no_grad():
        distribution, _ = model.policy.get_distribution(th.zeros(1, 1), zero_states(model), th.ones(1))
    return distribution.distribution.probs.numpy()[0]


def masked_bandit(allowed: tuple[bool, ...] = (True, True, True), n_envs: int = 16, seed: int = 1):
    mask = np.array(allowed)
    return make_vec_env(
        "RiskyBandit-v0", n_envs=n_envs, seed=seed, wrapper_class=ActionMasker,
        wrapper_kwargs=dict(action_mask_fn=lambda env: mask),
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------- the objectives' arms
@pytest.mark.parametrize("objective", list(PREFERRED_ARM))
def test_recurrent_ppo_learns_the_objectives_arm(objective: str) -> None:
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "RiskyBandit-v0", objective=objective, n_episodes=256, n_envs=16, learning_rate=0.003,
        n_epochs=4, batch_size=256, seed=1, policy_kwargs=LSTM,
    )  # fmt: skip
    model.learn(256 * 12)
    probs = recurrent_probs(model)
    assert probs.argmax() == PREFERRED_ARM[objective] and probs.max() > 0.8, probs


@pytest.mark.parametrize("objective", list(PREFERRED_ARM))
def test_maskable_ppo_learns_the_objectives_arm(objective: str) -> None:
    model = OrderGradMaskablePPO(
        "MlpPolicy", masked_bandit(), objective=objective, n_episodes=256, learning_rate=0.002, n_epochs=5, seed=1
    )
    model.learn(256 * 15)
    with th.no_grad():
        probs = model.policy.get_distribution(th.zeros(1, 1)).distribution.probs.numpy()[0]
    assert probs.argmax() == PREFERRED_ARM[objective] and probs.max() > 0.8, probs


# ---------------------------------------------------------------------------------------------- masks
class RolloutActions(BaseCallback):
    """Keeps the actions of every collected rollout."""

    def __init__(self) -> None:
        super().__init__()
        self.actions: list[np.ndarray] = []

    def _on_rollout_end(self) -> None:
        self.actions.append(self.model.rollout_buffer.actions.ravel().copy())

    def _on_step(self) -> bool:
        return True


def test_a_masked_arm_is_never_chosen() -> None:
    # The mean prefers the risky arm; masked, it must never be sampled, in training or by predict.
    model = OrderGradMaskablePPO(
        "MlpPolicy", masked_bandit((True, False, True)), objective="mean", n_episodes=64, learning_rate=0.01, seed=0
    )
    callback = RolloutActions()
    model.learn(64 * 5, callback=callback)
    actions = np.concatenate(callback.actions)
    assert actions.size == 64 * 5 and not np.any(actions == RISKY)
    assert np.all(model.rollout_buffer.extras["action_masks"] == [True, False, True])
    masks = np.tile([True, False, True], (500, 1))
    predicted, _ = model.predict(np.zeros((500, 1), np.float32), action_masks=masks)
    assert not np.any(predicted == RISKY)
    with th.no_grad():
        unmasked = model.policy.get_distribution(th.zeros(1, 1)).distribution.probs.numpy()[0]
        masked = model.policy.get_distribution(th.zeros(1, 1), masks[:1]).distribution.probs.numpy()[0]
    assert masked[RISKY] == 0.0 and unmasked[RISKY] > 0.0


class StepMasks(BaseCallback):
    """Keeps the ``action_masks`` of every step's callback locals, as sb3-contrib's MaskablePPO gives them."""

    def __init__(self) -> None:
        super().__init__()
        self.masks: list[np.ndarray] = []

    def _on_step(self) -> bool:
        self.masks.append(np.array(self.locals["action_masks"]))
        return True


def test_callbacks_see_the_steps_action_masks_as_in_maskable_ppo() -> None:
    # sb3-contrib's collection has the step's masks among the callback's locals; here they were a KeyError.
    model = OrderGradMaskablePPO("MlpPolicy", masked_bandit((True, False, True), n_envs=2), n_episodes=8, seed=0)
    callback = StepMasks()
    model.learn(8, callback=callback)
    assert callback.masks and all(np.array_equal(masks, [[True, False, True]] * 2) for masks in callback.masks)


def test_learn_takes_maskable_ppos_use_masking() -> None:
    # MaskablePPO.learn(..., use_masking=False) trains without masks (on an env without action_masks() too); the
    # collector and buffer handled it, but learn refused the argument with a TypeError.
    model = OrderGradMaskablePPO("MlpPolicy", "RiskyBandit-v0", n_episodes=8, seed=0)
    model.learn(16, use_masking=False)
    assert model.num_timesteps >= 16 and "action_masks" not in model.rollout_buffer.extras
    # sb3-contrib's positional order: use_masking before progress_bar.
    masked = OrderGradMaskablePPO("MlpPolicy", masked_bandit((True, False, True), n_envs=2), n_episodes=8, seed=0)
    masked.learn(16, None, 1, None, True, False)
    assert "action_masks" not in masked.rollout_buffer.extras
    masked.learn(16)
    assert np.all(masked.rollout_buffer.extras["action_masks"] == [True, False, True])


def test_masks_are_required_and_must_allow_an_action() -> None:
    model = OrderGradMaskablePPO("MlpPolicy", "RiskyBandit-v0", objective="mean", n_episodes=8, seed=0)
    with pytest.raises(ValueError, match="action_masks"):
        model.learn(8)
    model = OrderGradMaskablePPO("MlpPolicy", masked_bandit((False, False, False), n_envs=2), n_episodes=8, seed=0)
    with pytest.raises(ValueError, match="allows no action"):
        model.learn(8)
    # a mask of another width failed in torch's reshape inside sb3-contrib's distribution
    for mask in ((True, False), (True, False, True, True)):
        model = OrderGradMaskablePPO("MlpPolicy", masked_bandit(mask, n_envs=2), n_episodes=8, seed=0)
        with pytest.raises(ValueError, match=rf"returned {2 * len(mask)} entries for 2 envs .* needs 3 per env"):
            model.learn(8)


# ---------------------------------------------------------------------------------------------- exact gradients
# ent_coef=0: the loss is the estimator alone (a ranked objective's default entropy bonus would add a term).
COMMON = dict(
    n_episodes=8, n_envs=2, learning_rate=0.0, normalize_advantage=False, max_grad_norm=float("inf"), seed=5,
    ent_coef=0.0, risk_schedule="none",  # the target objective from the first rollout (CartPole's are long episodes)
)  # fmt: skip


def assert_loss_gradient(model, ascent: list[th.Tensor | None]) -> None:
    n_checked = 0
    for param, expected in zip(model.policy.parameters(), ascent, strict=True):
        if expected is None:  # parameters the actor does not use
            assert param.grad is None or not param.grad.any()
            continue
        th.testing.assert_close(param.grad, -expected, rtol=1e-4, atol=1e-6)
        n_checked += 1
    assert n_checked >= 4


def episode_log_probs(model, replay: bool) -> list[th.Tensor]:
    """log pi(a_t | h_t) of each stored episode's steps, replayed through the LSTM from its zero state one episode
    at a time (recurrent) or evaluated step by step (feed-forward)."""
    buffer = model.rollout_buffer
    out = []
    for i in range(buffer.n_episodes):
        steps = np.flatnonzero(buffer.episode_index == i)  # stored in time order
        obs, actions = th.as_tensor(buffer.observations[steps]), th.as_tensor(buffer.actions[steps]).long().flatten()
        if replay:
            starts = th.zeros(len(steps))
            starts[0] = 1.0
            distribution, _ = model.policy.get_distribution(obs, zero_states(model), starts)
        else:
            masks = buffer.extras["action_masks"][steps]
            distribution = model.policy.get_distribution(obs, masks)
        out.append(distribution.log_prob(actions))
    return out


def hand_ascent(model, log_probs: list[th.Tensor]) -> list[th.Tensor | None]:
    """(1/T) sum_i k a_i sum_t grad log pi: the clipped surrogate's gradient at ratio 1 over the whole rollout."""
    buffer = model.rollout_buffer
    advantages = lstat_advantage(buffer.episode_returns, model.objective)
    objective = sum(model.k * float(a) * lp.sum() for a, lp in zip(advantages, log_probs, strict=True))
    return list(th.autograd.grad(objective / buffer.size(), list(model.policy.parameters()), allow_unused=True))


def test_recurrent_gradient_is_the_estimator_on_a_fixed_batch() -> None:
    # Whole-episode weights (the history baseline's per-step terms: tests/test_contrib_defaults.py).
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "CartPole-v1", objective="cvar0.25@4", n_epochs=1, batch_size=100_000, policy_kwargs=LSTM,
        value_baseline=False, **COMMON,
    )  # fmt: skip
    model.learn(1)
    assert_loss_gradient(model, hand_ascent(model, episode_log_probs(model, replay=True)))


def test_maskable_gradient_is_the_estimator_on_a_fixed_batch() -> None:
    venv = make_vec_env(
        "CartPole-v1", n_envs=2, seed=5, wrapper_class=ActionMasker,
        wrapper_kwargs=dict(action_mask_fn=lambda env: np.array([True, True])),
    )  # fmt: skip
    # Whole-episode weights (the history baseline's per-step terms: tests/test_contrib_defaults.py), the value branch
    # free of gradients (the tied critic's fit: tests/test_tied_critic.py).
    model = OrderGradMaskablePPO(
        "MlpPolicy", venv, objective="top2@5", n_epochs=1, batch_size=100_000, value_baseline=False,
        critic_when_tied=False, **COMMON,
    )  # fmt: skip
    model.learn(1)
    assert_loss_gradient(model, hand_ascent(model, episode_log_probs(model, replay=False)))


# ---------------------------------------------------------------------------------------------- LSTM states
class CueEnv(gym.Env):
    """Memory task: the first observation shows a cue (+1 or -1), later ones are 0; episodes last 1-4 steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.cue = 1.0 if self.np_random.random() < 0.5 else -1.0
        self.length, self.t = int(self.np_random.integers(1, 5)), 0
        return np.array([self.cue], np.float32), {}

    def step(self, action):
        self.t += 1
        reward = float((action == 1) == (self.cue > 0))
        return np.zeros(1, np.float32), reward, self.t >= self.length, False, {}


def test_lstm_state_is_carried_within_episodes_and_reset_at_their_starts() -> None:
    # Several episodes per env, of different lengths, so envs start new episodes mid-rollout and some envs keep
    # stepping after their quota. learning_rate=0 keeps the collecting parameters through the update.
    venv = DummyVecEnv([CueEnv] * 3)
    venv.seed(3)
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", venv, objective="mean", n_episodes=12, learning_rate=0.0, seed=3, policy_kwargs=LSTM
    )
    model.learn(1)
    buffer = model.rollout_buffer
    assert len(set(buffer.episode_lengths.tolist())) > 1
    with th.no_grad():
        # The collected log-likelihoods are those of each episode replayed alone from the zero state ...
        replayed = th.cat(episode_log_probs(model, replay=True)).numpy()
        order = np.argsort(buffer.episode_index, kind="stable")
        np.testing.assert_allclose(buffer.log_probs[order], replayed, rtol=1e-5, atol=1e-6)
        # ... and not those of one sequence per env carried across its episodes (the cue of the previous episode
        # would leak into the next one).
        carried = []
        for env in range(3):
            steps = order[np.isin(buffer.episode_index[order], np.arange(4 * env, 4 * env + 4))]
            obs = th.as_tensor(buffer.observations[steps])
            distribution, _ = model.policy.get_distribution(obs, zero_states(model), th.zeros(len(steps)))
            carried.append(distribution.log_prob(th.as_tensor(buffer.actions[steps]).long().flatten()))
        assert not np.allclose(buffer.log_probs[order], th.cat(carried).numpy(), atol=1e-4)
        # The update's minibatches (whole episodes, padded) give back the collected log-likelihoods: ratio 1.
        n_steps = 0
        for batch in buffer.get(batch_size=5):
            mask = batch.mask > 0
            _, log_prob, _ = model.policy.evaluate_actions(
                batch.observations, batch.actions.long().flatten(), batch.lstm_states, batch.episode_starts
            )
            th.testing.assert_close(log_prob[mask], batch.old_log_prob[mask], rtol=1e-5, atol=1e-6)
            n_steps += int(mask.sum())
        assert n_steps == buffer.size()


def test_recurrent_update_trains_after_torchs_default_dtype_changes() -> None:
    # sb3-contrib's RecurrentPPO trains after torch.set_default_dtype(torch.float64) (a user's estimator code, say):
    # its minibatches hold float32 states. Ours made the zero states in the default dtype, and the float32 LSTM
    # failed with "get_mkldnn_dtype: unsupported data type".
    model = OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", n_episodes=4, n_epochs=1, seed=0, policy_kwargs=LSTM)
    default = th.get_default_dtype()
    th.set_default_dtype(th.float64)
    try:
        model.learn(1)
        batch = next(model.rollout_buffer.get(batch_size=8))
    finally:
        th.set_default_dtype(default)
    assert {batch.lstm_states.pi[0].dtype, batch.episode_starts.dtype} == {th.float32}


# ---------------------------------------------------------------------------------------------- save / load / detection
@pytest.mark.parametrize("cls", [OrderGradRecurrentPPO, OrderGradMaskablePPO])
def test_save_load_keeps_the_ordergrad_arguments(cls, tmp_path) -> None:
    env = "RiskyBandit-v0" if cls is OrderGradRecurrentPPO else masked_bandit(n_envs=2)
    policy = "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy"
    kwargs = dict(policy_kwargs=LSTM) if cls is OrderGradRecurrentPPO else {}
    model = cls(policy, env, objective="cvar0.2@6", n_episodes=16, n_envs=2 if isinstance(env, str) else None,
                normalize_advantage=False, seed=0, **kwargs)  # fmt: skip
    model.learn(16)
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = cls.load(path)
    assert (str(loaded.objective), loaded.k, loaded.n_episodes) == ("cvar0.2@6", 6, 16)
    critic = loaded.policy.critic_kind if cls is OrderGradRecurrentPPO else loaded.policy.critic
    # No critic LSTM for the recurrent policy; the maskable one builds SB3's value head and never trains it.
    assert loaded.normalize_advantage is False and critic == ("none" if cls is OrderGradRecurrentPPO else "value")
    for a, b in zip(model.policy.state_dict().values(), loaded.policy.state_dict().values(), strict=True):
        th.testing.assert_close(a, b)
    assert detect_algorithm(path).name == cls.__name__
    with pytest.raises(ValueError, match=f"saved by {cls.__name__}"):
        OrderGradPPO.load(path)


def test_recurrent_policy_save_load_keeps_the_lstm(tmp_path) -> None:
    # SB3's BasePolicy.save / load: sb3-contrib's recurrent policy saves no LSTM options, so the load rebuilt a
    # 256-unit, 1-layer LSTM and failed in torch's load_state_dict (a size mismatch) for any other size.
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "CartPole-v1", n_episodes=4, policy_kwargs=dict(lstm_hidden_size=8, n_lstm_layers=2)
    )
    model.policy.save(tmp_path / "policy.pth")
    loaded = OrderGradRecurrentPolicy.load(tmp_path / "policy.pth")
    assert loaded.lstm_hidden_state_shape == (2, 1, 8) and loaded.critic_kind == "none" and loaded.lstm_critic is None
    for a, b in zip(model.policy.state_dict().values(), loaded.state_dict().values(), strict=True):
        th.testing.assert_close(a, b)
    obs = np.stack([model.observation_space.sample() for _ in range(5)])
    starts = np.ones(5, dtype=bool)
    actions, states = model.predict(obs, episode_start=starts, deterministic=True)
    loaded_actions, loaded_states = loaded.predict(obs, episode_start=starts, deterministic=True)
    np.testing.assert_array_equal(loaded_actions, actions)
    np.testing.assert_array_equal(loaded_states[0], states[0])


def test_a_maskable_save_loads_into_sb3_contribs_maskable_ppo_and_trains(tmp_path) -> None:
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer

    from ordergrad_rl.agents.ppo_mask.buffers import MaskableEpisodicRolloutBuffer

    model = OrderGradMaskablePPO("MlpPolicy", masked_bandit(n_envs=2), objective="cvar0.2", n_episodes=8, seed=0)
    model.learn(16)
    model.save(tmp_path / "model.zip")
    contrib = MaskablePPO.load(tmp_path / "model.zip", env=masked_bandit(n_envs=2), n_steps=16, n_epochs=1)
    contrib.learn(32)  # its own masking buffer: the saved episodic one failed MaskablePPO's masking check
    assert type(contrib.rollout_buffer) is MaskableRolloutBuffer
    # It fits its critic as a new MaskablePPO does: the save held vf_coef=0 and gae_lambda=1, the values a class
    # without a critic passed sb3-contrib, and MaskablePPO trained on an unfitted critic's advantages.
    assert (contrib.vf_coef, contrib.gae_lambda) == (0.5, 0.95)
    assert OrderGradMaskablePPO.load(tmp_path / "model.zip").rollout_buffer_class is MaskableEpisodicRolloutBuffer


def test_a_recurrent_save_refused_by_sb3_contribs_recurrent_ppo_names_the_cause(tmp_path) -> None:
    # The policy has no critic LSTM, so RecurrentPPO.load failed deep in torch's load_state_dict (missing keys).
    from sb3_contrib import RecurrentPPO
    from stable_baselines3 import PPO

    model = OrderGradRecurrentPPO("MlpLstmPolicy", "RiskyBandit-v0", n_episodes=8, seed=0, policy_kwargs=LSTM)
    model.save(tmp_path / "model.zip")
    for loader in (RecurrentPPO, PPO):
        with pytest.raises(ValueError, match=r"no critic .*OrderGradRecurrentPPO\.load"):
            loader.load(tmp_path / "model.zip")
    assert OrderGradRecurrentPPO.load(tmp_path / "model.zip").policy.critic_kind == "none"


def test_risk_fine_tuning_from_sb3_contribs_recurrent_and_maskable_ppo(tmp_path) -> None:
    # from_sb3, which the load of an sb3-contrib save names, built the agent with sb3-contrib's own policy class:
    # a TypeError for the recurrent one (no OrderGrad "critic" option), "needs an actor-critic policy" for the maskable.
    from sb3_contrib import MaskablePPO, RecurrentPPO

    from ordergrad_rl.agents.ppo_mask.policies import OrderGradMaskablePolicy
    from ordergrad_rl.agents.ppo_recurrent.policies import OrderGradRecurrentPolicy

    contrib = RecurrentPPO("MlpLstmPolicy", "RiskyBandit-v0", n_steps=16, seed=0, policy_kwargs=LSTM)
    contrib.save(tmp_path / "recurrent.zip")
    for source in (contrib, tmp_path / "recurrent.zip"):
        model = OrderGradRecurrentPPO.from_sb3(source, "RiskyBandit-v0", n_episodes=8)
        assert type(model.policy) is OrderGradRecurrentPolicy and model.policy.critic_kind == "none"
        for name, value in model.policy.state_dict().items():
            assert name.startswith("value_net.") or th.equal(value, contrib.policy.state_dict()[name]), name
        model.learn(16)
    with pytest.raises(ValueError, match=r"sb3_contrib.RecurrentPPO.load\), or .* OrderGradRecurrentPPO.from_sb3"):
        OrderGradRecurrentPPO.load(tmp_path / "recurrent.zip")  # the class to load it with, not SB3's PPO

    masked = MaskablePPO("MlpPolicy", masked_bandit(n_envs=2), n_steps=16, seed=0)
    masked.save(tmp_path / "maskable.zip")
    for source in (masked, tmp_path / "maskable.zip"):
        model = OrderGradMaskablePPO.from_sb3(source, masked_bandit(n_envs=2), n_episodes=8)
        assert type(model.policy) is OrderGradMaskablePolicy
        for name, value in model.policy.state_dict().items():
            assert th.equal(value, masked.policy.state_dict()[name]), name
        model.learn(16)
    with pytest.raises(ValueError, match=r"sb3_contrib.MaskablePPO.load\), or .* OrderGradMaskablePPO.from_sb3"):
        OrderGradMaskablePPO.load(tmp_path / "maskable.zip")
    with pytest.raises(ValueError, match=r"OrderGradMaskablePPO.from_sb3 needs a model with a policy of .*Maskable"):
        OrderGradMaskablePPO.from_sb3(contrib, masked_bandit(n_envs=2))


@pytest.mark.parametrize(
    ("env_id", "objective", "expected"),
    [("GuardedMaze-v0", "cvar0.2", 128), ("CartPole-v1", "cvar0.2", 32), ("RiskyLavaGrid-v0", "cvar0.2", 256)]
    + [("CartPole-v1", "mean", 16), ("CartPole-v1", "max@20", 40)],
)
def test_contrib_variants_take_ordergrad_ppos_episodic_defaults(env_id: str, objective: str, expected: int) -> None:
    """At most 8192 steps per ranked rollout at the episode limit (128 episodes of the maze's 40 steps, 32 of
    CartPole's 500, at least ``2 k``: 256 episodes of 500 steps would leave about one update in 100k steps), and on
    long episodes the level schedule and the entropy bonus of the untied share, as OrderGradPPO."""
    masker = ActionMasker(gym.make(env_id), lambda env: np.ones(env.action_space.n, dtype=bool))
    masked = OrderGradMaskablePPO("MlpPolicy", masker, objective=objective)
    recurrent = OrderGradRecurrentPPO("MlpLstmPolicy", env_id, objective=objective, policy_kwargs=LSTM)
    ppo = OrderGradPPO("MlpPolicy", env_id, objective=objective)
    assert masked.n_episodes == recurrent.n_episodes == ppo.n_episodes == expected
    for model in (masked, recurrent):
        assert model.risk_schedule == ppo.risk_schedule, (env_id, objective)
        assert (
            model.entropy_by_untied_share
            == ppo.entropy_by_untied_share
            == (env_id == "CartPole-v1" and objective != "mean")
        )


def test_recurrent_policy_has_no_critic_lstm_in_episodic_mode() -> None:
    model = OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", objective="mean", n_episodes=4, policy_kwargs=LSTM)
    assert model.policy.lstm_critic is None and model.policy.critic is None and model.policy.critic_kind == "none"
    assert model.policy.net_arch == dict(pi=[64, 64], vf=[])


@pytest.mark.parametrize(
    ("cls", "kwargs", "message"),
    [
        (OrderGradRecurrentPPO, dict(rollout_buffer_class=RecurrentEpisodicRolloutBuffer.__mro__[1]), "subclass"),
        (OrderGradRecurrentPPO, dict(policy="MlpPolicy"), "MlpPolicy"),
        (OrderGradRecurrentPPO, dict(n_episodes=1), "n_episodes"),
        (OrderGradMaskablePPO, dict(batch_size=1), "batch_size"),
        (OrderGradMaskablePPO, dict(policy_kwargs=dict(critic="q")), "critic"),
        (OrderGradRecurrentPPO, dict(target_kl=-0.01), "target_kl must be a number"),
        (OrderGradMaskablePPO, dict(target_kl="0.01"), "target_kl must be a number"),
    ],
)
def test_construction_errors(cls, kwargs: dict, message: str) -> None:
    policy = kwargs.pop("policy", "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy")
    with pytest.raises((ValueError, KeyError), match=message):
        cls(policy, "CartPole-v1", objective="mean", n_episodes=kwargs.pop("n_episodes", 4), **kwargs)


@pytest.mark.parametrize(("name", "value"), [("gae_lambda", 0.95), ("vf_coef", 0.5), ("clip_range_vf", 0.2)])
def test_recurrent_ppo_refuses_recurrent_ppos_critic_arguments_at_construction_and_load(
    name: str, value: float, tmp_path
) -> None:
    # sb3-contrib's RecurrentPPO takes them; a RecurrentPPO script ported to OrderGradRecurrentPPO got Python's bare
    # "unexpected keyword argument", and OrderGradRecurrentPPO.load(path, vf_coef=0.5) set a critic coefficient that
    # nothing reads (this class trains no critic) and trained on without a word.
    with pytest.raises(ValueError, match=f"OrderGradRecurrentPPO has no critic.*remove {name}"):
        OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", objective="mean", n_episodes=4, **{name: value})
    OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", objective="mean", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match=f"OrderGradRecurrentPPO has no critic.*remove {name}"):
        OrderGradRecurrentPPO.load(tmp_path / "og", **{name: value})


def test_recurrent_ppo_names_the_n_episodes_for_recurrent_ppos_n_steps() -> None:
    # RecurrentPPO(..., n_steps=128) ported got a bare TypeError, where OrderGradPPO and OrderGradREINFORCE (and this
    # class's load) name the n_episodes that gives about as many steps.
    with pytest.raises(ValueError, match=r"set n_episodes .*not n_steps.*n_steps=64 x 1 env\(s\)"):
        OrderGradRecurrentPPO("MlpLstmPolicy", "CartPole-v1", n_steps=64)


@pytest.mark.parametrize(("name", "value"), [("gae_lambda", 0.95), ("vf_coef", 0.5), ("clip_range_vf", 0.2)])
def test_maskable_ppo_refuses_maskable_ppos_critic_arguments_at_construction_and_load(
    name: str, value: float, tmp_path
) -> None:
    # sb3-contrib's MaskablePPO takes them; a MaskablePPO script ported to OrderGradMaskablePPO got Python's bare
    # "unexpected keyword argument", and OrderGradMaskablePPO.load(path, vf_coef=0.5) set a critic coefficient that
    # nothing reads and trained on without a word. The only critic, critic_when_tied's, has OrderGradPPO's defaults.
    refused = f"OrderGradMaskablePPO takes no {name}: .*critic_when_tied.*OrderGradPPO's defaults.*remove {name}"
    with pytest.raises(ValueError, match=refused):
        OrderGradMaskablePPO("MlpPolicy", masked_bandit(n_envs=1), objective="mean", n_episodes=4, **{name: value})
    OrderGradMaskablePPO("MlpPolicy", masked_bandit(n_envs=1), objective="mean", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match=refused):
        OrderGradMaskablePPO.load(tmp_path / "og", **{name: value})


def test_maskable_ppo_names_the_n_episodes_for_maskable_ppos_n_steps(tmp_path) -> None:
    # MaskablePPO(..., n_steps=128) ported got a bare TypeError, where OrderGradPPO and OrderGradREINFORCE (and this
    # class's load) name the n_episodes that gives about as many steps.
    with pytest.raises(ValueError, match=r"set n_episodes .*not n_steps.*n_steps=64 x 2 env\(s\)"):
        OrderGradMaskablePPO("MlpPolicy", masked_bandit(n_envs=2), n_steps=64)
    OrderGradMaskablePPO("MlpPolicy", masked_bandit(n_envs=1), objective="mean", n_episodes=4).save(tmp_path / "og")
    with pytest.raises(ValueError, match="set n_episodes .*not n_steps"):
        OrderGradMaskablePPO.load(tmp_path / "og", n_steps=64)


def test_recurrent_ppo_takes_multidiscrete_observations() -> None:
    # SB3's PPO takes them (one-hot per component); the LSTM failed inside torch on SB3's NumPy-integer feature size.
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", SpaceSampleEnv(gym.spaces.MultiDiscrete([3, 4]), length=2), n_episodes=4, policy_kwargs=LSTM
    )
    model.learn(8)
    assert model.policy.lstm_actor.input_size == 7
    action, _ = model.predict(np.array([2, 3]), deterministic=True)
    assert action in (0, 1)


@pytest.mark.parametrize(
    ("cls", "sb3_contrib_policy", "ordergrad_policy"),
    [
        (OrderGradRecurrentPPO, RecurrentActorCriticPolicy, OrderGradRecurrentPolicy),
        (OrderGradMaskablePPO, MaskableActorCriticPolicy, OrderGradMaskablePolicy),
    ],
)
def test_sb3_contribs_own_policy_class_is_refused_naming_the_ordergrad_one(
    cls, sb3_contrib_policy, ordergrad_policy
) -> None:
    # sb3-contrib's class takes no critic="none": the recurrent one failed inside sb3-contrib on an unexpected keyword
    # argument, and the maskable one's error advised SB3's ActorCriticPolicy, which MaskablePPO refuses.
    with pytest.raises(ValueError, match=f"{cls.__name__}: .* subclass of .*{ordergrad_policy.__name__}"):
        cls(sb3_contrib_policy, masked_bandit(n_envs=1), objective="mean", n_episodes=4)

    class UsersPolicy(ordergrad_policy):
        pass

    model = cls(UsersPolicy, masked_bandit(n_envs=1), objective="mean", n_episodes=4, n_epochs=1, batch_size=64)
    model.learn(8)
    assert type(model.policy) is UsersPolicy


def test_package_exports() -> None:
    assert ordergrad_rl.OrderGradRecurrentPPO is OrderGradRecurrentPPO
    assert ordergrad_rl.OrderGradMaskablePPO is OrderGradMaskablePPO


def test_recurrent_groups_normalize_each_group():
    """``group_size`` and ``normalize_advantage="group"`` carry over to the sb3-contrib algorithms."""
    model = OrderGradRecurrentPPO(
        "MlpLstmPolicy", "RiskyBandit-v0", objective="mean", group_size=4, n_episodes=16,
        normalize_advantage="group", n_epochs=1, policy_kwargs=dict(lstm_hidden_size=8),
    )  # fmt: skip
    assert model.group_size == 4 and model.n_episodes == 16
    returns = np.random.default_rng(1).normal(size=16)
    weights = model.episode_weights(returns).reshape(4, 4)
    centred = returns.reshape(4, 4) - returns.reshape(4, 4).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(weights, centred / (centred.std(axis=1, keepdims=True) + 1e-8), rtol=1e-6)


@pytest.mark.parametrize("cls", [OrderGradMaskablePPO, OrderGradRecurrentPPO])
def test_the_contrib_variants_bonus_on_short_episodes(cls) -> None:
    """OrderGradMaskablePPO takes OrderGradPPO's held-then-decayed bonus on short categorical episodes (measured with
    it); OrderGradRecurrentPPO was not and keeps the constant. Long episodes keep the constant on both."""
    from ordergrad_rl.agents.common.arguments import RANKED_ENT_COEF, SHORT_RANKED_ENT_COEF

    policy = "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy"
    model = cls(policy, "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=4)
    assert model.ent_coef == (SHORT_RANKED_ENT_COEF if cls is OrderGradMaskablePPO else RANKED_ENT_COEF)
    long_env = ActionMasker(gym.make("CartPole-v1"), lambda env: np.ones(env.action_space.n, dtype=bool))
    long = cls(policy, long_env, objective="cvar0.2", n_episodes=4)
    assert long.ent_coef == RANKED_ENT_COEF


def test_maskable_ppo_refuses_box_actions_at_construction_naming_the_spaces_it_acts_in() -> None:
    """sb3-contrib's MaskablePPO asserted its action spaces inside SB3's constructor (a bare ``AssertionError``,
    "The algorithm only supports (<class ...>, ...)"): a ``ValueError`` names the space, those MaskablePPO acts in and
    the agents that act in a ``Box``; from an id and a ``VecEnv`` alike (``train --algo maskable_ppo``:
    test_cli_errors)."""
    message = (
        r"action space Box\(-2\.0, 2\.0, \(1,\), float32\) is a Box, which OrderGradMaskablePPO does not act in: it "
        r"acts in Discrete, MultiDiscrete or MultiBinary action spaces only\. OrderGradPPO, OrderGradREINFORCE and "
        r"OrderGradRecurrentPPO act in Box"
    )
    for env in ("Pendulum-v1", make_vec_env("Pendulum-v1", n_envs=2)):
        with pytest.raises(ValueError, match=message):
            OrderGradMaskablePPO("MlpPolicy", env)
