"""scripts/probe_level_sized_rollouts.py: rollouts sized by the CVaR level in force on long episodes."""

from __future__ import annotations

import json

import pytest
from conftest import load_script as load
from stable_baselines3.common.callbacks import CallbackList

from ordergrad_rl.experiments import benchmarks as bench


@pytest.mark.parametrize(("level", "episodes"), [(1.0, 16), (0.4, 16), (0.3, 21), (0.25, 26), (0.2, 32), (None, 32)])
def test_rollout_episodes_hold_the_targets_tail_count_within_16_and_32(level, episodes):
    assert load("probe_level_sized_rollouts").rollout_episodes(level, 0.2) == episodes


def test_rollouts_and_k_follow_the_level_and_the_patch_is_undone(tmp_path, one_torch_thread):
    probe = load("probe_level_sized_rollouts")
    model = probe.LevelSizedPPO("MlpPolicy", "CartPole-v1", objective="cvar0.2", seed=0)
    sizes = []
    model.learn(3_000, callback=lambda *_: sizes.append((model.n_episodes, model.k)) or True)
    assert sizes[0] == (16, 8)  # the level schedule starts at the mean
    model._total_timesteps = model.num_timesteps  # the schedule's end: the target's level, 32 episodes, k = 16
    model._update_risk()
    callback = CallbackList([])  # SB3's callback that does nothing
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, 0)
    assert (model.n_episodes, model.k, model.rollout_buffer.n_episodes) == (32, 16, 32)
    assert len(model.rollout_buffer.episode_returns) == 32

    path = tmp_path / "runs.json"
    runs = probe.main(["--task", "cartpole", "--quick", "--seeds", "0", "--json", str(path)])
    assert json.loads(path.read_text())["runs"] == json.loads(json.dumps(runs))
    assert runs[0]["method"] == probe.METHOD and runs[0]["timesteps"] >= 2_000
    assert bench.episodic_algorithm("ordergrad_ppo").__name__ == "OrderGradPPO"
