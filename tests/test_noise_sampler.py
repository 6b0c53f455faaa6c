"""The noise contract of envs (ordergrad_rl.envs.noise), CeSoR's cross-entropy sampler
(ordergrad_rl.agents.common.noise_sampler) and normalize_advantage="running", on a task with a known answer."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import save_from_before
from gymnasium import spaces
from sb3_contrib.common.wrappers import ActionMasker
from stable_baselines3.common.vec_env import DummyVecEnv

from ordergrad_rl.agents import OrderGradMaskablePPO, OrderGradPPO, OrderGradRecurrentPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.noise_sampler import NOMINAL_SHARE, PROB_CAP, NoiseSampler
from ordergrad_rl.envs.noise import BernoulliNoiseMixin


class RareCrash(BernoulliNoiseMixin, gym.Env):
    """One step: action 0 returns 0.5; action 1 returns 1, or -30 when it crashes (probability 0.02).

    Known answer: the safe action is optimal for the mean (0.5 against 0.98 - 0.6 = 0.38) and for CVaR_0.2 (0.5
    against (0.02 * -30 + 0.18 * 1) / 0.2 = -2.1). A batch of 32 episodes holds a crash in about 28% of the rollouts
    while both actions are drawn, so most rollouts rank the risky action above the safe one.
    """

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)

    def __init__(self, crash_prob: float = 0.02) -> None:
        self.crash_prob = crash_prob

    @property
    def noise_probs(self) -> dict[str, float]:
        return {"crash": self.crash_prob}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        if int(action) == 0:
            return 0, 0.5, True, False, {}
        crash = bool(self.np_random.random() < self.noise_prob("crash"))
        return 0, -30.0 if crash else 1.0, True, False, self.noise_info("crash", crash)


def p_risky(model: Any) -> float:
    obs = model.policy.obs_to_tensor(np.array([0]))[0]
    with th.no_grad():
        return float(model.policy.get_distribution(obs).distribution.probs[0, 1])


@pytest.mark.parametrize(
    ("cls", "lr", "kwargs", "safe"),
    [
        # Each rollout's std shrinks the rare crash's weight: the risky action wins.
        (OrderGradPPO, 3e-3, {"normalize_advantage": True, "noise_sampler": False}, False),
        (OrderGradPPO, 3e-3, {"normalize_advantage": True, "noise_sampler": True}, True),
        (OrderGradPPO, 3e-3, {"noise_sampler": False}, True),  # the default scale alone: running across rollouts
        (OrderGradPPO, 3e-3, {}, True),  # the defaults: that scale and, this env exposing its noise, the sampler
        (OrderGradREINFORCE, 1e-2, {"normalize_advantage": True, "noise_sampler": False}, False),
        (OrderGradREINFORCE, 1e-2, {"normalize_advantage": True, "noise_sampler": True}, True),
        (OrderGradREINFORCE, 3e-3, {"noise_sampler": False}, True),  # its default scale too
        (OrderGradREINFORCE, 3e-3, {}, True),  # and its defaults, the sampler on as OrderGradPPO's
    ],
)
def test_rare_costly_event_known_answer(cls: type, lr: float, kwargs: dict, safe: bool) -> None:
    th.set_num_threads(1)
    model = cls("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, learning_rate=lr, seed=0, **kwargs)
    model.learn(4000)
    assert (p_risky(model) < 0.1) if safe else (p_risky(model) > 0.9)
    assert model.noise_sampler is kwargs.get("noise_sampler", True)  # the default: the env exposes its noise
    if model.noise_sampler:
        # The sampler moved to the crash (the tail's only event), up to its cap.
        assert model._noise.probs["crash"] == pytest.approx(PROB_CAP)


def contrib_p_risky(model: Any) -> float:
    """P(risky) of a recurrent policy at an episode start, or of a maskable one with both actions allowed."""
    obs = model.policy.obs_to_tensor(np.array([0]))[0]
    with th.no_grad():
        if isinstance(model, OrderGradRecurrentPPO):
            lstm = model.policy.lstm_actor
            zeros = th.zeros(lstm.num_layers, 1, lstm.hidden_size)
            distribution, _ = model.policy.get_distribution(obs, (zeros, zeros.clone()), th.ones(1))
        else:
            distribution = model.policy.get_distribution(obs, action_masks=np.ones((1, 2), dtype=bool))
    return float(distribution.distribution.probs[0, 1])


@pytest.mark.parametrize("variant", ["recurrent", "maskable"])
def test_contrib_variants_rare_costly_event(variant: str) -> None:
    """The sb3-contrib variants share OrderGradPPO's default scale, and end where it ends on the known answer (with
    ``normalize_advantage=True`` they end on the risky action as OrderGradPPO does: measured, 4000 steps, P(risky)
    above 0.99 in both; not a test, to keep the suite's time)."""
    th.set_num_threads(1)
    if variant == "recurrent":
        model = OrderGradRecurrentPPO("MlpLstmPolicy", RareCrash(), objective="cvar0.2", n_episodes=32,
                                      learning_rate=3e-3, seed=0)  # fmt: skip
    else:
        env = ActionMasker(RareCrash(), lambda env: np.ones(2, dtype=bool))
        model = OrderGradMaskablePPO("MlpPolicy", env, objective="cvar0.2", n_episodes=32, learning_rate=3e-3,
                                     seed=0)  # fmt: skip
    assert model.normalize_advantage == "running"
    model.learn(4000)
    assert contrib_p_risky(model) < 0.1


def test_contrib_variants_take_the_sampler() -> None:
    th.set_num_threads(1)
    env = ActionMasker(RareCrash(), lambda env: np.ones(2, dtype=bool))
    model = OrderGradMaskablePPO("MlpPolicy", env, objective="cvar0.2", n_episodes=32, noise_sampler=True, seed=0)
    recurrent = OrderGradRecurrentPPO("MlpLstmPolicy", RareCrash(), n_episodes=32, noise_sampler=True, seed=0)
    for agent in (model, recurrent):
        agent.learn(640)
        assert agent._noise.probs["crash"] > 0.02  # the tail's crashes moved q up from the env's p


def test_sampler_state_saved_and_resumed(tmp_path: Any) -> None:
    th.set_num_threads(1)
    model = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, noise_sampler=True, seed=0)
    model.learn(640)
    model.save(tmp_path / "m")
    loaded = OrderGradPPO.load(tmp_path / "m", env=RareCrash())
    assert loaded.noise_sampler is True
    assert loaded._noise.probs == model._noise.probs
    loaded.learn(320, reset_num_timesteps=False)
    assert loaded.num_timesteps == 960


def test_set_random_seed_after_construction_repeats_the_samplers_draws(tmp_path: Any) -> None:
    # As SB3's: a model built without a seed and seeded by set_random_seed trains the same twice. The sampler drew
    # each episode's probabilities from a generator the constructor seeded with seed=None, which set_random_seed
    # left alone.
    th.set_num_threads(1)
    models = []
    for _ in "ab":
        th.manual_seed(0)  # the policy's initial weights (drawn at construction)
        model = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, noise_sampler=True)
        model.set_random_seed(3)
        models.append(model.learn(96))
    first, second = models
    np.testing.assert_array_equal(first.rollout_buffer.episode_returns, second.rollout_buffer.episode_returns)
    assert first._noise.probs == second._noise.probs
    for p, q in zip(first.policy.parameters(), second.policy.parameters(), strict=True):
        assert th.equal(p, q)
    # load (whose setup seeds the generators with the saved seed) continues the saved sampler's draws
    first.save(tmp_path / "m")
    loaded = OrderGradPPO.load(tmp_path / "m", env=RareCrash())
    assert loaded._noise.rng.random() == first._noise.rng.random()


def test_training_env_draws_its_own_noise_outside_the_rollouts() -> None:
    """After learn (or a callback's stop inside a rollout) the training env draws the env's own probabilities: it
    went on drawing the sampler's q, so an evaluation on model.get_env() (SB3's way) saw crashes 25 times as
    often as the env has them."""
    from stable_baselines3.common.callbacks import BaseCallback

    class StopAt(BaseCallback):
        def _on_step(self) -> bool:
            return self.num_timesteps < 100

    th.set_num_threads(1)
    env = DummyVecEnv([RareCrash, RareCrash])
    model = OrderGradPPO("MlpPolicy", env, objective="cvar0.2", n_episodes=32, n_epochs=1, seed=0)
    model.learn(320)
    assert model._noise.probs["crash"] == PROB_CAP
    assert model.get_env().env_method("noise_prob", "crash") == [0.02, 0.02]
    model.learn(320, callback=StopAt(), reset_num_timesteps=False)
    assert model.num_timesteps < 640  # stopped inside a rollout
    assert model.get_env().env_method("noise_prob", "crash") == [0.02, 0.02]


def test_envs_must_keep_one_set_of_nominal_noise_probabilities() -> None:
    """The sampler weighs every episode by one set of nominal probabilities: envs of one VecEnv with different
    ones, or an env whose noise_probs changes during training, are refused with the problem named (their episodes
    were weighed by the first env's probabilities, or by those the sampler was built with)."""
    th.set_num_threads(1)
    mixed = DummyVecEnv([RareCrash, lambda: RareCrash(crash_prob=0.1)])
    for noise_sampler in (True, None):
        with pytest.raises(
            ValueError, match=r"the envs expose different noise_probs \(env 0: \{'crash': 0.02\}, env 1"
        ):
            OrderGradPPO("MlpPolicy", mixed, objective="cvar0.2", n_episodes=8, noise_sampler=noise_sampler)
    model = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=8, n_epochs=1, seed=0)
    model.learn(16)
    model.get_env().envs[0].unwrapped.crash_prob = 0.1
    with pytest.raises(
        ValueError, match=r"noise_probs changed during training, from \{'crash': 0.02\} to \{'crash': 0.1\}"
    ):
        model.learn(16)
    model.set_env(model.get_env())  # the remedy named: a sampler of the new probabilities
    model.learn(16)
    assert model._noise.nominal == {"crash": 0.1}


class Silent(gym.Env):
    """RareCrash's spaces, no noise API."""

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[int, dict]:
        super().reset(seed=seed)
        return 0, {}

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, float(action), True, False, {}


def test_set_env_and_load_fit_the_sampler_to_the_new_envs_noise(tmp_path: Any) -> None:
    """The sampler's likelihood ratios are taken to the nominal probabilities of the env it samples: another env
    with the same noise keeps the sampler and its q; one with other probabilities gets a sampler of its own (the
    model kept the old env's, and weighed the new env's episodes with the wrong ratios); one without the noise API
    is refused with the fix named (it failed in the first rollout with gymnasium's AttributeError)."""
    th.set_num_threads(1)
    model = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, n_epochs=1, seed=0)
    model.learn(320)
    q = dict(model._noise.probs)
    assert q["crash"] > 0.02
    model.save(tmp_path / "m")
    model.set_env(RareCrash())
    assert model._noise.probs == q  # the same noise: the sampler goes on where it was
    model.set_env(RareCrash(crash_prob=0.1))
    assert model._noise.nominal == {"crash": 0.1} and model._noise.probs == {"crash": 0.1}
    loaded = OrderGradPPO.load(tmp_path / "m", env=RareCrash(crash_prob=0.1))
    assert loaded._noise.nominal == {"crash": 0.1}
    assert OrderGradPPO.load(tmp_path / "m", env=RareCrash())._noise.probs == q
    env = model.env
    with pytest.raises(ValueError, match=r"this env has no noise_probs.*model.noise_sampler = False before set_env"):
        model.set_env(Silent())
    assert model.env is env and model._noise.nominal == {"crash": 0.1}  # refused before anything changed
    with pytest.raises(ValueError, match=r"load\(\.\.\., noise_sampler=False\)"):
        OrderGradPPO.load(tmp_path / "m", env=Silent())
    model.noise_sampler = False
    model.set_env(Silent())
    model.learn(64)
    loaded = OrderGradPPO.load(tmp_path / "m", env=Silent(), noise_sampler=False)
    loaded.learn(64, reset_num_timesteps=False)


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_saves_keep_the_sampler_they_trained_with_under_the_default(cls: type, tmp_path: Any) -> None:
    """A save trained without the sampler (``noise_sampler=False`` recorded, or nothing recorded: from before the
    argument) resumes without it on an env that exposes its noise, where the default would turn it on; one trained
    with the default's sampler resumes with it."""
    th.set_num_threads(1)
    off = cls("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, noise_sampler=False, seed=0)
    off.learn(64)
    off.save(tmp_path / "off")
    save_from_before(tmp_path / "off.zip", tmp_path / "older.zip", "noise_sampler")
    for name in ("off", "older"):
        loaded = cls.load(tmp_path / name, env=RareCrash())
        assert loaded.noise_sampler is False, name
        loaded.learn(64, reset_num_timesteps=False)
        assert getattr(loaded, "_noise_counts", None) is None, name  # no episode was drawn with the sampler
    on = cls("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, seed=0)  # the default: on
    on.learn(64)
    on.save(tmp_path / "on")
    assert cls.load(tmp_path / "on", env=RareCrash()).noise_sampler is True


def test_running_scale_saved_and_used(tmp_path: Any) -> None:
    model = OrderGradPPO(
        "MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, value_baseline=False, noise_sampler=False
    )  # the scale alone: the sampler's likelihood ratios would weight the episodes too
    assert model.normalize_advantage == "running"  # the default for a ranked objective of one pooled batch
    assert OrderGradPPO("MlpPolicy", RareCrash(), objective="mean").normalize_advantage is True
    assert OrderGradPPO("MlpPolicy", RareCrash(), objective="gcvar0.2").normalize_advantage is True  # a peer's scale
    assert OrderGradREINFORCE("MlpPolicy", RareCrash(), objective="cvar0.2").normalize_advantage == "running"
    assert OrderGradREINFORCE("MlpPolicy", RareCrash(), objective="mean").normalize_advantage is True
    model.learn(320)
    buffer = model.rollout_buffer
    weights = model.episode_weights(buffer.episode_returns)  # the scale training used
    np.testing.assert_allclose(buffer.advantages, weights[buffer.episode_index], rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "m")
    assert OrderGradPPO.load(tmp_path / "m")._weight_square == model._weight_square > 0


def test_guarded_maze_exposes_its_guard() -> None:
    env = gym.make("GuardedMaze-v0")
    maze = env.unwrapped
    assert maze.noise_probs == {"guard": 0.05}

    def walk(probs: dict | None, episodes: int) -> tuple[list, int, int]:
        maze.set_noise_probs(probs)
        env.reset(seed=3)
        trace, draws, events = [], 0, 0
        for _ in range(episodes):
            env.reset()
            for _ in range(6):  # straight down the short path, into X on the 4th move
                obs, reward, terminated, truncated, info = env.step(2)
                trace.append((obs, reward))
                if "noise" in info:
                    d, e = info["noise"]["guard"]
                    draws, events = draws + d, events + e
                if terminated or truncated:
                    break
        return trace, draws, events

    nominal, draws, events = walk(None, 400)
    assert draws > 300 and 0.02 < events / draws < 0.09
    _, draws, events = walk({"guard": 0.5}, 400)
    assert 0.4 < events / draws < 0.6
    # Back to the env's own probability: the same draws as an env the sampler never touched.
    assert walk(None, 400)[0] == nominal
    assert maze.tabular().n_states > 0  # the exact model keeps guard_prob
    with pytest.raises(ValueError, match="unknown noise event 'crash'"):
        maze.set_noise_probs({"crash": 0.1})
    with pytest.raises(ValueError, match=r"must be a number in \[0, 1\]"):
        maze.set_noise_probs({"guard": 1.5})


def test_mixture_weights_are_unbiased() -> None:
    # Episodes of 3 draws of one event: the deterministic-mixture weights make E_mixture[rho f] = E_p[f].
    rng = np.random.default_rng(0)
    sampler = NoiseSampler({"e": 0.05}, level=0.2, seed=1)
    sampler.probs["e"] = 0.4
    n = 200_000
    nominal = rng.random(n) < NOMINAL_SHARE
    probs = np.where(nominal, 0.05, 0.4)
    events = (rng.random((n, 3)) < probs[:, None]).sum(axis=1)
    counts = np.stack([np.full(n, 3.0), events], axis=-1)[:, None, :]
    rho = sampler.weights(counts)
    assert rho.max() <= 1 / NOMINAL_SHARE + 1e-12
    f = events.astype(float) ** 2
    exact = sum(x**2 * [1, 3, 3, 1][x] * 0.05**x * 0.95 ** (3 - x) for x in range(4))
    assert np.mean(rho * f) == pytest.approx(exact, rel=0.05)
    assert np.mean(rho) == pytest.approx(1.0, abs=0.01)


def test_cross_entropy_step() -> None:
    sampler = NoiseSampler({"e": 0.05, "never": 0.0}, level=0.25, seed=0)
    assert sampler.names == ("e",)  # an event the env never draws is left alone
    returns = np.array([-10.0, -10.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    counts = np.zeros((8, 1, 2))
    counts[:, 0, 0] = 1
    counts[0, 0, 1] = 1  # one of the two lowest returns (the tail, tied at the value at risk) drew the event
    sampler.update(returns, np.ones(8), counts)
    assert sampler.probs["e"] == pytest.approx(0.5 * 0.05 + 0.5 * 0.5)  # half-way to the tail's rate 1/2
    counts[1, 0, 1] = 1
    sampler.update(returns, np.ones(8), counts)
    assert sampler.probs["e"] == PROB_CAP  # the tail's rate 1, capped
    # A tail without the event: back down, never below the env's own probability.
    counts[:, 0, 1] = 0
    for _ in range(20):
        sampler.update(returns, np.ones(8), counts)
    assert sampler.probs["e"] == 0.05


def test_cross_entropy_step_at_a_wider_level() -> None:
    # The same batch fitted at the target (the two lowest returns, both with the event) and at level 1 (every
    # episode below the best return: 2 events in 4 draws), as a level schedule in its mean phase asks.
    returns = np.array([-10.0, -9.0, 0.0, 0.0, 1.0])
    counts = np.zeros((5, 1, 2))
    counts[:, 0, 0] = 1
    counts[:2, 0, 1] = 1
    at_target = NoiseSampler({"e": 0.05}, level=0.4, seed=0)
    at_target.update(returns, np.ones(5), counts)
    assert at_target.probs["e"] == PROB_CAP  # half-way to 1, capped
    wide = NoiseSampler({"e": 0.05}, level=0.4, seed=0)
    wide.update(returns, np.ones(5), counts, level=1.0)
    assert wide.probs["e"] == pytest.approx(0.5 * 0.05 + 0.5 * 2 / 4)
    for level in (0.2, 1.5):
        with pytest.raises(ValueError, match=r"fitted level must be in \[0.4, 1\]"):
            wide.update(returns, np.ones(5), counts, level=level)


def test_sampler_fits_the_level_the_schedule_has_in_force(tmp_path: Any) -> None:
    """With a level schedule the sampler fits the tail the objective ranks now (the mean's whole batch at first, the
    target's once the schedule ends); without one, or in a save from before the rule, the target's."""
    model = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, risk_schedule="level", seed=0)
    assert model.noise_follows_schedule is True
    assert model._noise_level() == 1.0  # the schedule starts at the mean
    model.learn(32 * 4)  # the level falls over the first 60% of the 4 rollouts and reaches the target
    assert model._noise_level() == pytest.approx(0.2)
    assert OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32)._noise_level() is None
    mixture = OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32, risk_schedule="mixture")
    assert mixture._noise_level() is None  # a mixture has no level: the target's
    model.save(path := tmp_path / "model.zip")
    assert OrderGradPPO.load(path).noise_follows_schedule is True
    old = save_from_before(path, tmp_path / "old.zip", "noise_follows_schedule")
    assert OrderGradPPO.load(old).noise_follows_schedule is False


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_samples_the_noise_by_default_where_the_env_exposes_it_and_the_objective_admits_it(cls: type) -> None:
    """``noise_sampler=None`` (the default of every episodic agent): on for a lower-tail objective with a level on an
    env that exposes its noise (the sampler built, its events the env's), off where either is missing, without an
    error, in the sb3-contrib variants too; the HParams dashboard shows it."""
    model = cls("MlpPolicy", RareCrash(), objective="cvar0.2", n_episodes=32)
    assert model.noise_sampler is True and model.hparams()["noise_sampler"] is True
    assert model._noise is not None and model._noise.names == ("crash",)
    for env, objective in (("CartPole-v1", "cvar0.2"), (RareCrash(), "mean"), (RareCrash(), "gcvar0.2"),
                           (RareCrash(), "top2"), ("GuardedMaze-v0", "max@8")):  # fmt: skip
        off = cls("MlpPolicy", env, objective=objective, n_episodes=16)
        assert off.noise_sampler is False and off._noise is None, (env, objective)
    assert cls("MlpPolicy", RareCrash(), objective="cvar0.5", group_size=8).noise_sampler is False
    # No event to sample (the crash switched off): off, where the default raised the sampler's ValueError.
    assert cls("MlpPolicy", RareCrash(crash_prob=0.0), objective="cvar0.2", n_episodes=8).noise_sampler is False
    assert cls("MlpPolicy", "GuardedMaze-v0", objective="cvar0.2").noise_sampler is True
    assert cls("MlpPolicy", "RiskyLavaGrid-v0", objective="cvar0.2").noise_sampler is False  # no noise API
    assert OrderGradRecurrentPPO("MlpLstmPolicy", RareCrash(), objective="cvar0.2").noise_sampler is True
    assert OrderGradRecurrentPPO("MlpLstmPolicy", "RiskyLavaGrid-v0", objective="cvar0.2").noise_sampler is False
    masked = ActionMasker(RareCrash(), lambda env: np.ones(2, dtype=bool))
    assert OrderGradMaskablePPO("MlpPolicy", masked, objective="cvar0.2").noise_sampler is True  # through the wrapper
    assert OrderGradMaskablePPO("MlpPolicy", masked, objective="mean").noise_sampler is False


def test_errors() -> None:
    with pytest.raises(ValueError, match="exposes its noise"):
        OrderGradPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", noise_sampler=True)
    for objective in ("mean", "gcvar0.2", "top2"):
        with pytest.raises(ValueError, match="lower-tail objective with a level"):
            OrderGradPPO("MlpPolicy", RareCrash(), objective=objective, noise_sampler=True)
    with pytest.raises(ValueError, match="drop group_size"):
        OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.5", group_size=8, noise_sampler=True)
    with pytest.raises(ValueError, match="noise_sampler must be True, False or None, got 'yes'"):
        OrderGradPPO("MlpPolicy", RareCrash(), objective="cvar0.2", noise_sampler="yes")
    with pytest.raises(ValueError, match="no probability strictly inside"):
        NoiseSampler({"e": 0.0}, level=0.2)
    with pytest.raises(ValueError, match="level must be in"):
        NoiseSampler({"e": 0.1}, level=0.0)


class Malformed(RareCrash):
    """RareCrash with its nominal probabilities, or its step's noise report, replaced."""

    def __init__(self, probs: Any = None, report: Any = None) -> None:
        super().__init__()
        self.probs, self.report = probs, report

    @property
    def noise_probs(self) -> Any:
        return super().noise_probs if self.probs is None else self.probs

    def step(self, action: Any) -> tuple[int, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(1)
        return obs, reward, terminated, truncated, info if self.report is None else {"noise": self.report}


class NoSetter(gym.Env):
    """Nominal probabilities and no ``set_noise_probs``."""

    observation_space = spaces.Discrete(1)
    action_space = spaces.Discrete(2)
    noise_probs = {"crash": 0.02}


@pytest.mark.parametrize("noise_sampler", [True, None])
def test_malformed_noise_probs_and_setter_are_refused_at_construction(noise_sampler: bool | None) -> None:
    def build(env: gym.Env) -> OrderGradPPO:
        return OrderGradPPO("MlpPolicy", env, objective="cvar0.2", n_episodes=4, noise_sampler=noise_sampler)

    for bad in (1.5, -0.2, float("nan"), "0.05"):
        # An invalid event beside a valid one was dropped, a string failed in a comparison.
        with pytest.raises(ValueError, match=r"noise_probs\['bad'\] must be a number in \[0, 1\]"):
            build(Malformed({"crash": 0.02, "bad": bad}))
    with pytest.raises(ValueError, match="noise_probs must be a dict .* got a list"):  # was "has no noise_probs"
        build(Malformed([0.02]))
    with pytest.raises(ValueError, match=r"needs an env with a set_noise_probs\(probs\) method"):  # was at learn
        build(NoSetter())
    with pytest.raises(ValueError, match=r"noise_probs\['e'\] must be a number in \[0, 1\], got '0.1'"):
        NoiseSampler({"e": "0.1"}, level=0.2)


@pytest.mark.parametrize(
    ("report", "match"),
    [
        ({"crash": 1}, r"info\['noise'\]\['crash'\] must be a pair \(draws, events\).* got 1$"),
        ({"crash": (1, 3)}, r"0 <= events <= draws .* got \(1, 3\)"),  # more events than draws
        ({"crash": (-1, 0)}, r"got \(-1, 0\)"),
        ({"crash": ("1", "0")}, r"got \('1', '0'\)"),
        ({"crash": (1, 0.02)}, r"got \(1, 0.02\)"),  # a probability, not a count: taken as 0.02 events
        ({"crash": (float("inf"), 0)}, r"got \(inf, 0\)"),  # NaN likelihood ratios, refused deep in the batch
        ([1, 0], r"info\['noise'\] must be a dict \{event name: \(draws, events\)\}.* got a list"),
        # Its draws went uncounted: every weight 1 while the env drew the crash with the sampler's q.
        ({"crsh": (1, 1)}, r"reports event 'crsh', which is not one of the env's noise_probs \['crash'\]"),
    ],
)
def test_malformed_noise_report_is_refused(report: Any, match: str) -> None:
    model = OrderGradPPO("MlpPolicy", Malformed(report=report), objective="cvar0.2", n_episodes=4, n_epochs=1)
    with pytest.raises(ValueError, match=match):
        model.learn(4)


def test_report_of_an_event_the_sampler_leaves_alone_is_taken() -> None:
    env = Malformed(probs={"crash": 0.02, "never": 0.0}, report={"crash": (1, 0), "never": (1, 0)})
    model = OrderGradPPO("MlpPolicy", env, objective="cvar0.2", n_episodes=4, n_epochs=1)
    assert model._noise.names == ("crash",)
    model.learn(8)


def test_shortcut_nav_exposes_its_crash() -> None:
    env = gym.make("RiskyShortcutNav-v0")
    nav = env.unwrapped
    assert nav.noise_probs == {"crash": 0.015}
    nav.set_noise_probs({"crash": 1.0})
    env.reset(seed=0)
    for _ in range(50):  # straight at the goal, through the zone: the first zone step crashes
        _, reward, terminated, truncated, info = env.step(np.array([1.0, 0.0], dtype=np.float32))
        if info["zone"]:
            assert info["noise"] == {"crash": (1, 1)} and info["crashed"] and terminated
            break
        assert "noise" not in info
    else:
        pytest.fail("the straight line never entered the zone")


def test_risk_logs_weigh_the_samplers_draws_back_to_the_policys_returns() -> None:
    """risk/* and risk/objective of a rollout drawn by the sampler describe the policy's returns (the weighted
    batch), not the sampler's draws, which oversample the crash."""
    from stable_baselines3.common.callbacks import BaseCallback

    from ordergrad_rl.core.weighted import weighted_lstat_value
    from ordergrad_rl.risk import risk_profile

    class Logged(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:  # after the rollout's logs, before the next rollout replaces them
            model = self.model
            weights = model._rollout_noise_weights
            if weights is not None and not np.allclose(weights, weights[0]):
                self.seen = (dict(model.logger.name_to_value), model.rollout_buffer.episode_returns.copy(), weights)

    model = OrderGradREINFORCE("MlpPolicy", RareCrash(crash_prob=0.05), objective="cvar0.2", n_episodes=32,
                               learning_rate=0.0, seed=1, noise_sampler=True)  # fmt: skip
    callback = Logged()
    model.learn(32 * 30, callback=callback)
    logged, returns, weights = callback.seen  # a rollout the sampler drew with q != p
    expected = risk_profile(returns, weights=weights)
    for key in ("mean", "cvar_0.2", "quantile_0.5"):
        assert logged[f"risk/{key}"] == pytest.approx(expected[key])
    assert logged["risk/mean"] != pytest.approx(returns.mean())  # not the draws' own
    assert logged["risk/objective"] == pytest.approx(weighted_lstat_value(returns, weights, model.objective))
