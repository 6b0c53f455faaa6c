"""The history baseline b(s_t, t, G_<t) of OrderGradPPO's ``value_baseline="history"``."""

from __future__ import annotations

import copy
import io
import warnings

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import SpaceSampleEnv, check_history_advantages, collect_one_rollout, save_from_before
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.logger import configure
from stable_baselines3.common.save_util import load_from_zip_file

from ordergrad_rl.agents import OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.advantages import discounted_rewards, lambda_advantages, returns_before
from ordergrad_rl.agents.common.arguments import BASELINE_LAMBDA
from ordergrad_rl.agents.common.history_baseline import HistoryBaseline


def test_returns_before_is_each_episodes_running_sum_of_the_steps_before():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 9, size=12)
    # Episodes interleaved as parallel envs store them: each episode's steps in time order.
    episode_index = np.concatenate([np.full(n, i) for i, n in enumerate(lengths)])
    episode_index = episode_index[np.argsort(rng.random(episode_index.size) + episode_index % 3, kind="stable")]
    order_in_episode = np.zeros_like(episode_index)
    for i in range(len(lengths)):
        order_in_episode[episode_index == i] = np.arange(lengths[i])
    rewards = rng.normal(size=episode_index.size)
    expected = np.empty_like(rewards)
    for i in range(len(lengths)):
        steps = np.flatnonzero(episode_index == i)
        expected[steps] = np.concatenate([[0.0], np.cumsum(rewards[steps])[:-1]])
    np.testing.assert_allclose(returns_before(rewards, episode_index), expected, atol=1e-12)
    # Causal: changing a step's reward changes no step's feature up to and including its own.
    changed = rewards.copy()
    changed[5] += 10.0
    same = episode_index != episode_index[5]
    same |= order_in_episode <= order_in_episode[5]
    np.testing.assert_allclose(returns_before(changed, episode_index)[same], expected[same], atol=1e-12)
    np.testing.assert_allclose(discounted_rewards(rewards, order_in_episode, 0.5), rewards * 0.5**order_in_episode)


@pytest.mark.parametrize(
    ("space", "width"),
    [
        (spaces.Discrete(5), 5),  # one-hot
        (spaces.Box(-1, 1, (2, 3)), 6),
        (spaces.MultiDiscrete([2, 3]), 5),
        (spaces.Dict({"a": spaces.Discrete(3), "b": spaces.Box(-1, 1, (2,))}), 5),
    ],
)
def test_features_are_the_flat_observation_then_step_and_return_so_far(space, width):
    baseline = HistoryBaseline(space)
    observations = [space.sample() for _ in range(4)]
    if isinstance(space, spaces.Dict):
        observations = {key: np.stack([o[key] for o in observations]) for key in space.spaces}
    features = baseline.features(np.stack(observations) if isinstance(observations, list) else observations,
                                 np.arange(4), np.arange(4.0) * 10, update=True)  # fmt: skip
    assert features.shape == (4, width + 2)
    history = features[:, -2:].numpy()
    np.testing.assert_allclose(history.mean(axis=0), 0.0, atol=1e-4)  # standardized by the running statistics
    assert baseline.history_rms.count == pytest.approx(4, abs=1e-3)


def test_features_of_image_observations_flatten_a_chunk_at_a_time(monkeypatch):
    """A long rollout of images (the default on long episodes) is flattened to float32 a chunk of steps at a time into
    the features, and ``updated`` rewrites their (t, G_<t) columns in place: the float32 rollout, four times the uint8
    frames, was held twice (1.3 GB at its peak for 646 MB of features, 8000 steps of 84 x 84 x 3 frames)."""
    import ordergrad_rl.agents.common.history_baseline as history_baseline

    space = spaces.Box(0, 255, (6, 5, 3), np.uint8)
    observations = np.random.default_rng(0).integers(0, 256, (50, 6, 5, 3), dtype=np.uint8)
    steps, so_far = np.arange(50) % 9, np.random.default_rng(1).normal(size=50)
    baseline = HistoryBaseline(space)
    whole = baseline.features(observations, steps, so_far)
    flattened_rows = []
    flatten = history_baseline.flat_observations

    def flat_observations(obs, observation_space, normalize_images):
        flattened_rows.append(len(obs))
        return flatten(obs, observation_space, normalize_images)

    monkeypatch.setattr(history_baseline, "CHUNK_STEPS", 16, raising=False)
    monkeypatch.setattr(history_baseline, "flat_observations", flat_observations)
    features = baseline.features(observations, steps, so_far)
    assert max(flattened_rows) == 16 and sum(flattened_rows) == 50
    assert th.equal(features, whole)  # the same values, bit for bit
    np.testing.assert_allclose(features[:, :-2].numpy(), observations.reshape(50, -1) / 255.0, rtol=1e-6)
    updated = baseline.updated(features, steps, so_far)
    assert updated.data_ptr() == features.data_ptr()
    assert sum(flattened_rows) == 50  # not flattened again
    assert th.equal(updated[:, :-2], whole[:, :-2]) and not th.equal(updated[:, -2:], whole[:, -2:])


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
@pytest.mark.parametrize("normalize_images", [True, False])
def test_the_baseline_sees_image_observations_as_the_policy_does(cls, normalize_images, tmp_path):
    """SB3's ``preprocess_obs`` scales uint8 images to [0, 1] where the policy's ``normalize_images`` is ``True``
    only: the baseline divided them by 255 whatever the policy's ``policy_kwargs=dict(normalize_images=False)``."""
    kwargs = {"n_epochs": 1} if cls is OrderGradPPO else {}
    env = SpaceSampleEnv(spaces.Box(0, 255, (6, 5, 3), np.uint8), length=3)
    model = cls("MlpPolicy", env, objective="cvar0.5", n_episodes=8, value_baseline="history", seed=0,
                policy_kwargs=dict(normalize_images=normalize_images), **kwargs)  # fmt: skip
    collect_one_rollout(model)
    buffer = model.rollout_buffer
    features = model.history_baseline.features(buffer.observations, buffer.episode_step, buffer.rewards)
    with th.no_grad():
        seen = model.policy.extract_features(th.as_tensor(buffer.observations))  # MlpPolicy: flattened preprocessed
    assert th.equal(features[:, :-2], seen)
    raw = buffer.observations.reshape(len(seen), -1).astype(np.float64)
    np.testing.assert_allclose(features[:, :-2].numpy(), raw / 255.0 if normalize_images else raw, rtol=1e-6)
    model.save(tmp_path / "model")
    assert cls.load(tmp_path / "model").history_baseline.normalize_images is normalize_images


def test_fit_learns_a_weight_that_depends_on_the_return_so_far():
    """What V(s) cannot: the same state, a weight decided by what the episode has collected."""
    th.manual_seed(0)
    baseline = HistoryBaseline(spaces.Discrete(1))
    so_far = np.random.default_rng(0).uniform(-5, 5, size=2000)
    targets = np.where(so_far < 0, -1.0, 0.0)  # in the tail iff it has collected little so far
    features = baseline.features(np.zeros(2000, dtype=np.int64), np.zeros(2000), so_far, update=True)
    untrained = float(np.mean((baseline.predict(features) - targets) ** 2))
    for _ in range(6):
        last = baseline.fit(features, targets)
    assert last < 0.1 * untrained and last < 0.02
    clear = np.abs(so_far) > 1  # a smooth fit of a step: away from the step
    np.testing.assert_allclose(baseline.predict(features)[clear], targets[clear], atol=0.3)


def test_ppo_subtracts_the_baseline_predicted_before_the_rollout_and_then_fits_it(tmp_path):
    # No schedule: the weights recomputed below are the target objective's, not the level in force.
    model = OrderGradPPO(
        "MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, value_baseline="history", risk_schedule="none"
    )
    model.set_logger(configure(str(tmp_path), ["csv"]))
    assert model.hparams()["value_baseline"] == "history"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few updates
        model.learn(400)  # a trained baseline, with nonzero running statistics
    before = copy.deepcopy(model.history_baseline)
    buffer = model.rollout_buffer
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        collect_one_rollout(model)
    # The default baseline_lambda's lambda-returns of the weights over that baseline, fitted after.
    assert model.baseline_lambda == BASELINE_LAMBDA < 1.0
    check_history_advantages(model, before, BASELINE_LAMBDA)
    assert not np.allclose(buffer.advantages, buffer.returns - buffer.values, atol=1e-3)
    # Then fitted on this rollout: its weights moved.
    assert not th.equal(model.history_baseline.net[0].weight, before.net[0].weight)
    assert "train/baseline_loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]
    # The fit's quality is logged out of sample: the prediction made before this rollout against its weights.
    logged = model.logger.name_to_value["train/baseline_explained_variance"]
    assert logged == pytest.approx(1 - np.var(buffer.returns - buffer.values) / np.var(buffer.returns), rel=1e-4)
    # The policy's value head is not the baseline: the update's value loss is 0, and what train/value_loss logs is
    # the head's own fit as critic_when_tied's discounted critic (tests/test_tied_critic.py).
    assert model.critic_when_tied and "train/tied_critic" in (tmp_path / "progress.csv").read_text().splitlines()[0]


def _interleaved_episodes(rng: np.random.Generator, n_episodes: int, max_length: int) -> np.ndarray:
    """``[T]`` episode index of episodes stored as parallel envs store them: interleaved, each in time order."""
    lengths = rng.integers(1, max_length + 1, size=n_episodes)
    episode_index = np.concatenate([np.full(n, i) for i, n in enumerate(lengths)])
    return episode_index[np.argsort(rng.random(episode_index.size), kind="stable")]


@pytest.mark.parametrize("lam", [0.0, 0.3, 0.95, 1.0])
def test_lambda_advantages_match_the_per_episode_recursion(lam):
    rng = np.random.default_rng(1)
    episode_index = _interleaved_episodes(rng, 9, 12)
    weights = rng.normal(size=9)[episode_index]
    baseline = rng.normal(size=episode_index.size)
    expected = np.empty(episode_index.size)
    for i in range(9):  # G^lambda_T = w, G^lambda_t = (1 - lambda) b_{t+1} + lambda G^lambda_{t+1}
        steps = np.flatnonzero(episode_index == i)
        target = weights[steps[-1]]
        expected[steps[-1]] = target - baseline[steps[-1]]
        for now, later in zip(steps[-2::-1], steps[:0:-1], strict=True):
            target = (1 - lam) * baseline[later] + lam * target
            expected[now] = target - baseline[now]
    # Bit for bit: the same arithmetic, vectorized over the episodes.
    np.testing.assert_array_equal(lambda_advantages(weights, baseline, episode_index, lam), expected)


def test_lambda_advantages_at_the_ends_of_lambda():
    rng = np.random.default_rng(2)
    episode_index = _interleaved_episodes(rng, 6, 20)
    weights, baseline = rng.normal(size=6)[episode_index], rng.normal(size=episode_index.size)
    # lambda = 1: the weight minus the baseline (the unbiased estimator), whatever the baseline.
    np.testing.assert_array_equal(lambda_advantages(weights, baseline, episode_index, 1.0), weights - baseline)
    # lambda = 0: one-step TD errors, the next step's baseline minus this one's (the weight at the last step).
    td = lambda_advantages(weights, baseline, episode_index, 0.0)
    for i in range(6):
        steps = np.flatnonzero(episode_index == i)
        np.testing.assert_allclose(td[steps[:-1]], baseline[steps[1:]] - baseline[steps[:-1]], atol=1e-12)
        np.testing.assert_allclose(td[steps[-1]], weights[steps[-1]] - baseline[steps[-1]], atol=1e-12)
    # A perfect baseline (b_t = w) leaves nothing to credit at any lambda.
    np.testing.assert_allclose(lambda_advantages(weights, weights, episode_index, 0.7), 0.0, atol=1e-12)


def test_baseline_lambda_defaults_and_bad_values_are_named(tmp_path):
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8)  # long: history baseline
    assert (model.value_baseline, model.baseline_lambda) == ("history", BASELINE_LAMBDA)
    assert model.hparams()["baseline_lambda"] == BASELINE_LAMBDA
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, baseline_lambda=1)
    assert model.baseline_lambda == 1.0
    assert OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", n_episodes=8).baseline_lambda == BASELINE_LAMBDA  # history
    assert OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="mean").baseline_lambda == 1.0  # no baseline
    for bad, match in ((1.5, r"baseline_lambda must be in \[0, 1\], got 1.5"), (float("nan"), "baseline_lambda"),
                       ("0.9", "baseline_lambda must be a number")):  # fmt: skip
        with pytest.raises(ValueError, match=match):
            OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=8, baseline_lambda=bad)
    with pytest.raises(ValueError, match="baseline_lambda=0.9 needs a per-step baseline"):
        OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="mean", baseline_lambda=0.9)
    with pytest.raises(ValueError, match="baseline_lambda=0.9 needs a per-step baseline"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", n_episodes=8, value_baseline=False, baseline_lambda=0.9)


def test_baseline_lambda_is_saved_and_older_saves_keep_lambda_one(tmp_path):
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, baseline_lambda=0.8)
    model.save(tmp_path / "model.zip")
    assert OrderGradPPO.load(tmp_path / "model.zip", env=model.get_env()).baseline_lambda == 0.8
    # A save from before baseline_lambda existed (its data has no such entry) trained on w - b_t and still does,
    # also when loaded with a long-episode env, whose default would be BASELINE_LAMBDA.
    save_from_before(tmp_path / "model.zip", tmp_path / "old.zip", "baseline_lambda")
    assert OrderGradPPO.load(tmp_path / "old.zip", env=model.get_env()).baseline_lambda == 1.0
    assert OrderGradPPO.load(tmp_path / "old.zip", baseline_lambda=0.5).baseline_lambda == 0.5


def test_history_baseline_is_saved_loaded_and_resumed(tmp_path):
    model = OrderGradPPO(
        "MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, value_baseline="history", seed=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(400)
        model.save(tmp_path / "model.zip")
        loaded = OrderGradPPO.load(tmp_path / "model.zip", env=model.get_env())
        assert loaded.value_baseline == "history"
        for name, value in model.history_baseline.state_dict().items():
            assert th.equal(loaded.history_baseline.state_dict()[name], value) if name != "_extra_state" else True
        rms, loaded_rms = model.history_baseline.history_rms, loaded.history_baseline.history_rms
        np.testing.assert_array_equal(rms.mean, loaded_rms.mean)
        np.testing.assert_array_equal(rms.var, loaded_rms.var)
        assert rms.count == loaded_rms.count
        assert loaded.history_baseline.optimizer.state_dict()["state"]  # Adam's moments came along
        loaded.learn(200, reset_num_timesteps=False)
        # SB3's PPO loads the save too (it has no history baseline; the save's data carries it aside).
        assert PPO.load(tmp_path / "model.zip").policy is not None
    assert loaded.num_timesteps > model.num_timesteps


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_set_parameters_of_a_save_restores_the_history_baseline(cls, tmp_path):
    # SB3's set_parameters(path) restores every network an algorithm trains (PPO's critic with its policy); the history
    # baseline travels in the save's data, and set_parameters left it fresh, untrained, in the model it loaded into.
    def make():
        return cls("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, value_baseline="history", seed=0)

    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(300)
    model.save(tmp_path / "model.zip")
    saved = model.history_baseline
    for source in (tmp_path / "model.zip", str(tmp_path / "model"), io.BytesIO((tmp_path / "model.zip").read_bytes())):
        other = make()
        other.set_parameters(source)
        baseline = other.history_baseline
        for name, value in saved.state_dict().items():
            assert name == "_extra_state" or th.equal(baseline.state_dict()[name], value), name
        np.testing.assert_array_equal(baseline.history_rms.mean, saved.history_rms.mean)
        assert baseline.history_rms.count == saved.history_rms.count
        moments = [state["exp_avg"] for state in baseline.optimizer.state_dict()["state"].values()]
        expected = [state["exp_avg"] for state in saved.optimizer.state_dict()["state"].values()]
        assert moments and all(th.equal(a, b) for a, b in zip(moments, expected, strict=True))
        for name, value in model.policy.state_dict().items():
            assert th.equal(other.policy.state_dict()[name], value), name
    # A model without the baseline takes the policy alone at exact_match=False (SB3's "update only specific
    # parameters"); at exact_match=True, the default, it refuses, as SB3's does for a name the model lacks: the
    # trained baseline was dropped silently.
    plain = cls("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, value_baseline=False, seed=0)
    for source in (tmp_path / "model.zip", model.get_parameters()):
        with pytest.raises(ValueError, match="history baseline.*exact_match=False"):
            plain.set_parameters(source)
        plain.set_parameters(source, exact_match=False)
        assert getattr(plain, "history_baseline", None) is None
        for name, value in model.policy.state_dict().items():
            assert th.equal(plain.policy.state_dict()[name], value), name


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE, OrderGradRecurrentPPO])
def test_get_parameters_round_trip_keeps_the_history_baseline(cls, tmp_path):
    # SB3's get_parameters holds every network an algorithm trains, so set_parameters of it gives the same model and
    # the same next update; the history baseline was left out, and the model it was set into kept a fresh one.
    kwargs = dict(policy_kwargs=dict(lstm_hidden_size=8)) if cls is OrderGradRecurrentPPO else {}
    policy = "MlpLstmPolicy" if cls is OrderGradRecurrentPPO else "MlpPolicy"

    def make():
        return cls(policy, "CartPole-v1", n_episodes=8, value_baseline="history", seed=0, **kwargs)

    model = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(300)
    params = model.get_parameters()
    other = make()
    other.set_parameters(params)
    saved, baseline = model.history_baseline, other.history_baseline
    for name, value in saved.state_dict().items():
        assert name == "_extra_state" or th.equal(baseline.state_dict()[name], value), name
    np.testing.assert_array_equal(baseline.history_rms.mean, saved.history_rms.mean)
    np.testing.assert_array_equal(baseline.history_rms.var, saved.history_rms.var)
    assert baseline.history_rms.count == saved.history_rms.count
    moments = [state["exp_avg"] for state in baseline.optimizer.state_dict()["state"].values()]
    expected = [state["exp_avg"] for state in saved.optimizer.state_dict()["state"].values()]
    assert moments and all(th.equal(a, b) for a, b in zip(moments, expected, strict=True))
    features = th.randn(5, saved.net[0].in_features)
    np.testing.assert_array_equal(baseline.predict(features), saved.predict(features))
    # SB3's own entries alone (an SB3 model's get_parameters) still set the policy; a save still holds them only,
    # with the baseline in its data, so that SB3's loaders of the file have nothing they cannot restore.
    make().set_parameters({name: params[name] for name in ("policy", "policy.optimizer")})
    model.save(tmp_path / "model.zip")
    _, saved_params, _ = load_from_zip_file(tmp_path / "model.zip")
    assert set(saved_params) == {"policy", "policy.optimizer"}
    assert cls.load(tmp_path / "model.zip").history_baseline.history_rms.count == saved.history_rms.count


def test_a_gpu_save_of_the_history_baseline_loads_on_a_cpu(tmp_path, monkeypatch):
    # A model trained on a GPU saves its tensors tagged "cuda:0" (what the tagger below makes torch write here). SB3
    # maps its own state dicts to the load's device, but the baseline travelled pickled in the save's data: on a
    # machine without a GPU SB3 only warned "Could not deserialize object history_baseline_state" and the model
    # went on with a fresh baseline.
    model = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, value_baseline="history")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.learn(200)
    with monkeypatch.context() as patch:
        gpu_tag = (0, lambda storage: "cuda:0", lambda storage, location: None)
        patch.setattr(th.serialization, "_package_registry", [gpu_tag, *th.serialization._package_registry])
        model.save(tmp_path / "model.zip")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        loaded = OrderGradPPO.load(tmp_path / "model.zip", device="cpu")
    for name, value in model.history_baseline.state_dict().items():
        assert th.equal(loaded.history_baseline.state_dict()[name], value) if name != "_extra_state" else True
    assert loaded.history_baseline.optimizer.state_dict()["state"]


def test_history_baseline_needs_no_value_head_and_bad_values_are_named():
    model = OrderGradPPO(
        "MlpPolicy", "CartPole-v1", objective="cvar0.2", value_baseline="history", policy_kwargs={"critic": "none"}
    )
    assert model.value_baseline == "history"
    with pytest.raises(ValueError, match="value_baseline must be True, False, 'history' or None, got 'state'"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", value_baseline="state")


def _z_squared(samples: np.ndarray) -> float:
    """Mean over coordinates of (sample mean / its standard error)^2: about 1 for an unbiased zero-mean term."""
    return float(np.mean((samples.mean(axis=0) / (samples.std(axis=0) / np.sqrt(len(samples)) + 1e-12)) ** 2))


def test_history_baseline_term_has_zero_expected_gradient():
    """Unbiasedness: sum_t grad log pi(a_t | s_t) b(s_t, t, G_<t), the term the baseline removes, averages to 0 over
    rollouts (Monte Carlo, 400 rollouts of the slippery lava grid, a random policy, a random frozen baseline with a
    fixed standardization, as the baseline is for the rollout it is applied to). The same baseline fed G_<=t (the
    step's own reward, which its action decides) is visibly biased on the same rollouts: the test has power."""
    th.manual_seed(0)
    model = OrderGradPPO(
        "MlpPolicy", gym.make("RiskyLavaGrid-v0"), objective="cvar0.2", n_episodes=2, seed=0, value_baseline="history"
    )
    baseline = copy.deepcopy(model.history_baseline)  # the model's own is fitted after every rollout
    baseline.history_rms.mean, baseline.history_rms.var = np.array([5.0, -2.0]), np.array([9.0, 4.0])
    policy = model.policy
    # Layers every step's gradient reaches (the one-hot input layer's rows are sparse, and their z-scores skewed).
    dense = [p for name, p in policy.named_parameters() if "action_net" in name or "policy_net.2" in name]
    samples: dict[str, list[np.ndarray]] = {"history": [], "own reward": []}
    model._setup_learn(10**9, None)
    for _ in range(400):
        model.collect_rollouts(model.env, model._setup_learn(10**9, None)[1], model.rollout_buffer, 0)
        buffer = model.rollout_buffer
        obs, _ = policy.obs_to_tensor(buffer.observations)
        _, log_prob, _ = policy.evaluate_actions(obs, th.as_tensor(buffer.actions).long().flatten())
        so_far = returns_before(buffer.rewards, buffer.episode_index)
        for name, history in (("history", so_far), ("own reward", so_far + buffer.rewards)):
            features = baseline.features(buffer.observations, buffer.episode_step, history)
            values = th.as_tensor(baseline.predict(features))
            grads = th.autograd.grad((log_prob * values).sum(), dense, retain_graph=True)
            samples[name].append(th.cat([g.flatten() for g in grads]).numpy())
    assert _z_squared(np.asarray(samples["history"], dtype=np.float64)) < 2.0
    assert _z_squared(np.asarray(samples["own reward"], dtype=np.float64)) > 4.0


def test_short_categorical_episodes_save_the_default_and_saves_from_before_keep_whole_episode_weights(tmp_path):
    """The history baseline, the default on short categorical episodes since it measured better there, travels with a
    save; a save made before (``value_baseline=False`` recorded, the default then) resumes without one."""
    now = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, seed=0)
    assert now.value_baseline == "history"
    now.learn(64)
    now.save(tmp_path / "now")
    loaded = OrderGradPPO.load(tmp_path / "now", env=gym.make("RiskyLavaGrid-v0"))
    assert loaded.value_baseline == "history"
    for mine, theirs in zip(now.history_baseline.parameters(), loaded.history_baseline.parameters(), strict=True):
        assert th.equal(mine, theirs)
    before = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline=False)
    before.save(tmp_path / "before")
    loaded = OrderGradPPO.load(tmp_path / "before", env=gym.make("RiskyLavaGrid-v0"))
    assert loaded.value_baseline is False and getattr(loaded, "history_baseline", None) is None
    loaded.learn(64, reset_num_timesteps=False)
    assert loaded.num_timesteps >= 64
    # A save of a release before the argument: SB3's load sets the model up at the constructor's default (the
    # history baseline, for the default objective) before the save's value applies; none is kept.
    save_from_before(tmp_path / "before.zip", tmp_path / "older.zip", "value_baseline", "baseline_lambda")
    older = OrderGradPPO.load(tmp_path / "older.zip", env=gym.make("RiskyLavaGrid-v0"))
    assert older.value_baseline is False and getattr(older, "history_baseline", None) is None


def test_reinforce_steps_on_the_weights_over_the_history_baseline(tmp_path):
    """OrderGradREINFORCE's ``value_baseline="history"``: each step's advantage is the lambda-return of its episode's
    weight over the baseline predicted before the rollout, the gradient step is on those, and the baseline is fitted
    after."""
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=16, value_baseline="history",
        risk_schedule="none", normalize_advantage=False, seed=0,
    )  # fmt: skip
    model.set_logger(configure(str(tmp_path), ["csv"]))
    assert (model.value_baseline, model.baseline_lambda) == ("history", BASELINE_LAMBDA)
    assert model.hparams()["value_baseline"] == "history"
    model.learn(2000)
    before = copy.deepcopy(model.history_baseline)
    collect_one_rollout(model)
    check_history_advantages(model, before, BASELINE_LAMBDA)
    buffer = model.rollout_buffer
    # The update's gradient is -(1/N) sum_t A_t grad log pi(a_t | s_t): the advantages over the baseline.
    policy = model.policy
    obs, _ = policy.obs_to_tensor(buffer.observations)
    _, log_prob, _ = policy.evaluate_actions(obs, th.as_tensor(buffer.actions).long().flatten())
    advantages = th.as_tensor(buffer.advantages).flatten()
    expected_grads = th.autograd.grad(-(advantages * log_prob).sum() / model.n_episodes, policy.action_net.weight)
    model.ent_coef, model.max_grad_norm = 0.0, 1e9
    captured = {}
    hook = policy.action_net.weight.register_hook(lambda grad: captured.setdefault("grad", grad.clone()))
    model.train()
    hook.remove()
    th.testing.assert_close(captured["grad"], expected_grads[0], rtol=1e-4, atol=1e-6)
    assert "train/baseline_loss" in (tmp_path / "progress.csv").read_text().splitlines()[0]


def test_reinforce_history_baseline_is_saved_loaded_and_resumed_and_older_saves_have_none(tmp_path):
    model = OrderGradREINFORCE(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline="history", seed=0
    )
    assert model.baseline_lambda == BASELINE_LAMBDA
    model.learn(200)
    model.save(tmp_path / "model.zip")
    loaded = OrderGradREINFORCE.load(tmp_path / "model.zip", env=gym.make("RiskyLavaGrid-v0"))
    assert (loaded.value_baseline, loaded.baseline_lambda) == ("history", BASELINE_LAMBDA)
    for mine, theirs in zip(model.history_baseline.parameters(), loaded.history_baseline.parameters(), strict=True):
        assert th.equal(mine, theirs)
    assert loaded.history_baseline.history_rms.count == model.history_baseline.history_rms.count
    assert loaded.history_baseline.optimizer.state_dict()["state"]  # Adam's moments came along
    loaded.learn(100, reset_num_timesteps=False)
    assert loaded.num_timesteps > model.num_timesteps
    # A save from before the argument existed (no value_baseline in its data) trained without a baseline and resumes so.
    plain = OrderGradREINFORCE("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline=False)
    assert (plain.value_baseline, plain.baseline_lambda) == (False, 1.0)
    plain.save(tmp_path / "plain.zip")
    save_from_before(tmp_path / "plain.zip", tmp_path / "old.zip", "value_baseline", "baseline_lambda")
    old = OrderGradREINFORCE.load(tmp_path / "old.zip", env=gym.make("RiskyLavaGrid-v0"))
    assert (old.value_baseline, old.baseline_lambda) == (False, 1.0)
    assert getattr(old, "history_baseline", None) is None
    old.learn(50, reset_num_timesteps=False)


def test_reinforce_refuses_the_state_baseline_and_bad_values():
    with pytest.raises(ValueError, match="value_baseline=True regresses the policy's value head.*'history'"):
        OrderGradREINFORCE("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", value_baseline=True)
    with pytest.raises(ValueError, match="value_baseline must be True, False, 'history' or None, got 'state'"):
        OrderGradREINFORCE("MlpPolicy", "RiskyLavaGrid-v0", value_baseline="state")
    with pytest.raises(ValueError, match="baseline_lambda=0.9 needs a per-step baseline"):
        OrderGradREINFORCE(
            "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", value_baseline=False, baseline_lambda=0.9
        )


@pytest.mark.parametrize(
    ("env_id", "kwargs", "expected"),
    [
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2"}, "history"),  # a ranked objective on categorical actions
        ("GuardedMaze-v0", {"objective": "cvar0.2"}, "history"),
        ("CartPole-v1", {"objective": "cvar0.2"}, "history"),  # long episodes too: the rule reads the actions only
        ("RiskyLavaGrid-v0", {"objective": "mean"}, False),  # the mean: its reward-to-go is its per-step credit
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2", "group_size": 4, "n_episodes": 16}, False),  # groups
        ("RiskyShortcutNav-v2", {"objective": "cvar0.2"}, "history"),  # continuous actions with a time limit
        ("SyntheticTailRisk-v0", {"objective": "cvar0.2"}, False),  # ... and without one: whole-episode weights
        ("RiskyLavaGrid-v0", {"objective": "cvar0.2", "value_baseline": False}, False),  # the user's value
    ],
)
def test_reinforce_default_baseline_is_history_for_a_ranked_objective_on_categorical_actions(env_id, kwargs, expected):
    model = OrderGradREINFORCE("MlpPolicy", env_id, **kwargs)
    assert model.value_baseline == expected
    assert model.baseline_lambda == (BASELINE_LAMBDA if expected else 1.0)
    assert (getattr(model, "history_baseline", None) is not None) == bool(expected)


def test_reinforce_saves_from_before_the_default_keep_whole_episode_weights(tmp_path):
    """A save made before the history baseline became OrderGradREINFORCE's default on categorical actions
    (``value_baseline=False`` recorded, the default then) loads and resumes without one."""
    before = OrderGradREINFORCE(
        "MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2", n_episodes=8, value_baseline=False
    )
    before.save(tmp_path / "before")
    loaded = OrderGradREINFORCE.load(tmp_path / "before", env=gym.make("RiskyLavaGrid-v0"))
    assert (loaded.value_baseline, loaded.baseline_lambda) == (False, 1.0)
    assert getattr(loaded, "history_baseline", None) is None
    loaded.learn(64, reset_num_timesteps=False)
    assert loaded.num_timesteps >= 64


def test_load_changing_value_baseline_gives_baseline_lambda_the_new_models_default(tmp_path):
    """``load(path, value_baseline=...)`` without ``baseline_lambda``: a saved lambda that no baseline forced to 1
    (the save had none) or that the new value rules out (it has none) becomes the default a new model gets for the
    new value; between two baselines the saved lambda is kept; a plain load keeps everything."""
    mean = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="mean", n_episodes=8)
    mean.save(tmp_path / "none")
    assert (mean.value_baseline, mean.baseline_lambda) == (False, 1.0)
    new = OrderGradPPO("MlpPolicy", "RiskyLavaGrid-v0", objective="mean", n_episodes=8, value_baseline="history")
    loaded = OrderGradPPO.load(tmp_path / "none", value_baseline="history")
    assert (loaded.value_baseline, loaded.baseline_lambda) == ("history", new.baseline_lambda) == ("history", 0.95)
    assert OrderGradPPO.load(tmp_path / "none", value_baseline="history", baseline_lambda=0.5).baseline_lambda == 0.5
    assert OrderGradPPO.load(tmp_path / "none").baseline_lambda == 1.0
    ranked = OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", n_episodes=8, baseline_lambda=0.8)
    ranked.save(tmp_path / "history")
    loaded = OrderGradPPO.load(tmp_path / "history", value_baseline=False)
    assert (loaded.value_baseline, loaded.baseline_lambda) == (False, 1.0)  # as a new model's: it refuses another
    assert OrderGradPPO.load(tmp_path / "history", value_baseline=True).baseline_lambda == 0.8  # the user's lambda
    assert OrderGradPPO.load(tmp_path / "history").baseline_lambda == 0.8
    # A save from before the argument (no baseline, no lambda) takes the new baseline's default too.
    save_from_before(tmp_path / "none.zip", tmp_path / "old.zip", "value_baseline", "baseline_lambda")
    assert OrderGradPPO.load(tmp_path / "old.zip").baseline_lambda == 1.0
    assert OrderGradPPO.load(tmp_path / "old.zip", value_baseline="history").baseline_lambda == BASELINE_LAMBDA
