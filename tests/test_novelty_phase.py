"""``novelty_phase``: the rollouts of a first share of training train on their episodes' standardized novelty instead
of their advantages; every other rollout is trained exactly as without it."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from conftest import SpaceSampleEnv, collect_one_rollout
from gymnasium import spaces

from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE
from ordergrad_rl.agents.common.novelty import episode_novelty, novelty_weights

N = 8


def agent(phase: Any, cls: type = OrderGradPPO, env: Any = "CartPole-v1", seed: int = 0, **kwargs: Any) -> Any:
    if cls is OrderGradPPO:
        kwargs.setdefault("n_epochs", 1)
    return cls("MlpPolicy", env, objective="cvar0.25", n_episodes=N, seed=seed, novelty_phase=phase, **kwargs)


def spy_on_phase(model: Any) -> list[dict[str, Any]]:
    """Record, at each rollout, the steps taken, the advantages before and after the phase's step, what the phase
    logged and the episodes' novelty weights computed here from the buffer."""
    seen: list[dict[str, Any]] = []
    own = model._explore_in_novelty_phase

    def spy() -> None:
        buffer = model.rollout_buffer
        before = np.array(buffer.advantages)
        own()
        scores = episode_novelty(buffer.observations, model.observation_space, buffer.episode_index, N)
        seen.append({
            "steps": model.num_timesteps,
            "total": model._total_timesteps,
            "before": before,
            "after": np.array(buffer.advantages),
            "novelty": novelty_weights(scores)[buffer.episode_index],
            "logged": model.logger.name_to_value.get("train/novelty_phase"),
        })  # fmt: skip

    model._explore_in_novelty_phase = spy
    return seen


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
def test_rollouts_train_on_novelty_during_the_phase_and_as_without_it_after(cls):
    model = agent(0.5, cls)
    seen = spy_on_phase(model)
    model.learn(1_500)
    phase = [r for r in seen if r["steps"] < 0.5 * 1_500]
    after = [r for r in seen if r["steps"] >= 0.5 * 1_500]
    assert phase and after
    for rollout in phase:
        assert rollout["logged"] == 1.0
        assert np.allclose(rollout["after"], rollout["novelty"], atol=1e-6)
        assert not np.allclose(rollout["before"], rollout["after"])  # CartPole's CVaR weights are not the novelty's
    for rollout in after:
        assert rollout["logged"] == 0.0
        assert np.array_equal(rollout["after"], rollout["before"])


def test_the_option_trains_what_the_navigation_probe_measured_bit_for_bit():
    # The probe's first version (docs/measurements/nav_v2_novelty_phase_probe.json's runs) patched the agent: after the
    # rollout's blind-rollout step, until num_timesteps >= fraction * total, the advantages became the novelty weights.
    def probe_patch(model: Any, fraction: float, total: int) -> None:
        own = model._explore_if_blind

        def explore() -> None:
            own()
            if model.num_timesteps >= fraction * total:
                return
            buffer = model.rollout_buffer
            scores = episode_novelty(buffer.observations, model.observation_space, buffer.episode_index, 32)
            buffer.advantages = novelty_weights(scores)[buffer.episode_index].astype(np.float32)

        model._explore_if_blind = explore

    th.set_num_threads(1)
    # The probe's 32 episodes (a budget this small would halve the default: arguments.budget_n_episodes).
    kwargs = {"objective": "cvar0.2", "risk_schedule": "none", "seed": 3, "n_episodes": 32}
    probe = OrderGradPPO("MlpPolicy", "RiskyShortcutNav-v2", **kwargs)
    probe_patch(probe, 0.5, 4_000)
    probe.learn(4_000)
    option = OrderGradPPO("MlpPolicy", "RiskyShortcutNav-v2", novelty_phase=0.5, **kwargs)
    option.learn(4_000)
    assert option.n_episodes == 32 and option.num_timesteps == probe.num_timesteps
    for a, b in zip(probe.policy.parameters(), option.policy.parameters(), strict=True):
        assert th.equal(a, b)


@pytest.mark.parametrize("normalize_images", [True, False])
def test_image_observations_rank_as_the_policy_sees_them(normalize_images):
    """The novelty of uint8 images is that of what the policy sees (SB3's ``preprocess_obs`` with the policy's
    ``normalize_images``): they were divided by 255 whatever ``policy_kwargs=dict(normalize_images=False)`` said."""
    env = SpaceSampleEnv(spaces.Box(0, 255, (6, 5, 3), np.uint8), length=3)
    model = agent(1.0, env=env, policy_kwargs=dict(normalize_images=normalize_images))
    collect_one_rollout(model)
    buffer = model.rollout_buffer
    novelty = episode_novelty(buffer.observations, model.observation_space, buffer.episode_index, N, normalize_images)
    np.testing.assert_array_equal(buffer.advantages, novelty_weights(novelty)[buffer.episode_index].astype(np.float32))


def test_constant_observations_rank_nothing_and_train_as_without_the_phase():
    # The heavy-tail bandit's one observation: every episode is as novel as the others, so the phase does nothing.
    models = []
    for phase in (0.0, 1.0):  # each built, then trained, before the next (construction seeds the global generators)
        models.append(agent(phase, env="HeavyTailBandit-v0", seed=1))
        models[-1].learn(2_000)
    for a, b in zip(models[0].policy.parameters(), models[1].policy.parameters(), strict=True):
        assert th.equal(a, b)


@pytest.mark.parametrize("cls", [OrderGradPPO, OrderGradREINFORCE])
@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.1", float("nan"), None])
def test_a_bad_phase_is_refused_by_name(cls, bad):
    with pytest.raises(ValueError, match=r"novelty_phase must be a number in \[0.0, 1.0\], got"):
        agent(bad, cls)


def test_the_phase_is_saved_logged_and_absent_from_older_saves(tmp_path):
    model = agent(0.25)
    assert model.hparams()["novelty_phase"] == 0.25
    model.save(tmp_path / "phase")
    assert OrderGradPPO.load(tmp_path / "phase").novelty_phase == 0.25
    assert OrderGradPPO.saved_before["novelty_phase"] == 0.0 == OrderGradREINFORCE.saved_before["novelty_phase"]
    without = agent(0.0)
    seen = spy_on_phase(without)
    without.learn(300)
    assert without.novelty_phase == 0.0 and seen and all(r["logged"] is None for r in seen)  # no phase, no log


def test_a_resumed_run_goes_on_with_the_phase_by_training_progress(tmp_path):
    # SB3's convention, as the risk schedule's: learn(n, reset_num_timesteps=False) counts progress over the steps
    # taken and the n to come, so the phase (0.75 here) still acts where the steps so far are under 75% of that total.
    model = agent(0.75)
    model.learn(600)
    model.save(tmp_path / "first")
    resumed = OrderGradPPO.load(tmp_path / "first", env=gym.make("CartPole-v1"))
    seen = spy_on_phase(resumed)
    resumed.learn(600, reset_num_timesteps=False)
    assert seen[0]["total"] == model.num_timesteps + 600
    flags = [rollout["logged"] for rollout in seen]
    assert flags == [float(r["steps"] < 0.75 * r["total"]) for r in seen]
    assert 1.0 in flags
