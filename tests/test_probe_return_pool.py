"""scripts/probe_return_pool.py: each rollout's episodes ranked among the previous rollouts' returns."""

from __future__ import annotations

import json

import numpy as np
from conftest import load_script as load
from stable_baselines3.common.callbacks import CallbackList

from ordergrad_rl.agents.common.advantages import episode_weights
from ordergrad_rl.experiments import benchmarks as bench


def test_pooled_keeps_the_rollouts_episodes_first():
    probe = load("probe_return_pool")
    assert probe.pooled(np.array([3.0, 1.0]), np.array([7.0])).tolist() == [3.0, 1.0, 7.0]
    assert probe.pooled(np.array([True]), np.zeros(0)).dtype == bool


def test_new_episodes_take_their_weights_in_the_pooled_batch_and_the_pool_rolls(one_torch_thread):
    probe = load("probe_return_pool")
    model = probe.agent_class(8)(
        "MlpPolicy",
        "CartPole-v1",
        objective="cvar0.2",
        n_episodes=8,
        value_baseline=False,
        normalize_advantage=False,
        seed=0,
    )
    ks = []
    model.learn(1_000, callback=lambda *_: ks.append(model.k) or True)
    assert ks[0] == 4 and ks[-1] == 8  # half of 8 new episodes, then of 8 new + 8 pooled
    pool = model._pool_returns.copy()
    assert len(pool) == 8 and len(model._pool_time_outs) == 8

    callback = CallbackList([])  # SB3's callback that does nothing
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, 0)
    buffer = model.rollout_buffer
    objective, _ = model._rollout_risk
    expected = episode_weights(objective, {"reward": np.concatenate([buffer.episode_returns, pool])}, False)
    assert len(buffer.episode_returns) == 8  # the buffer's own returns are restored after ranking
    np.testing.assert_allclose(buffer.advantages, expected[buffer.episode_index], rtol=1e-6)
    alone = episode_weights(objective.bind(4), {"reward": buffer.episode_returns}, False)
    assert not np.allclose(expected[:8], alone)  # the pool changed the weights
    np.testing.assert_array_equal(model._pool_returns, buffer.episode_returns)  # the newest returns replace the pool


def test_quick_run_is_scored_and_the_patch_is_undone(tmp_path, one_torch_thread):
    probe = load("probe_return_pool")
    path = tmp_path / "runs.json"
    runs = probe.main(["--task", "cartpole", "--quick", "--seeds", "0", "--pool", "8", "--json", str(path)])
    assert json.loads(path.read_text())["runs"] == json.loads(json.dumps(runs))
    assert runs[0]["method"] == "og-cvar-pool8" and runs[0]["timesteps"] >= 2_000
    assert bench.episodic_algorithm("ordergrad_ppo").__name__ == "OrderGradPPO"


def test_centred_weights_average_zero_over_episodes_not_steps():
    probe = load("probe_return_pool")
    index = np.array([0, 0, 0, 1, 2, 2])  # episodes of 3, 1 and 2 steps with weights 1, 4 and -2
    out = probe.centered(np.array([1.0, 1.0, 1.0, 4.0, -2.0, -2.0]), index)
    np.testing.assert_allclose(out, [0.0, 0.0, 0.0, 3.0, -3.0, -3.0])


def test_a_rollout_above_the_whole_pool_trains_on_nothing_when_centred(one_torch_thread):
    probe = load("probe_return_pool")
    kwargs = dict(objective="cvar0.2", n_episodes=8, value_baseline=False, seed=0)
    model = probe.agent_class(8, center=True)("MlpPolicy", "CartPole-v1", **kwargs)
    model.learn(600)
    model._pool_returns = np.full(8, -1.0)  # every pooled return below every CartPole return (>= 8)
    callback = CallbackList([])
    callback.init_callback(model)
    model.collect_rollouts(model.env, callback, model.rollout_buffer, 0)
    weights = model.rollout_buffer.advantages
    per_episode = (
        np.bincount(model.rollout_buffer.episode_index, weights=weights) / model.rollout_buffer.episode_lengths
    )
    assert abs(per_episode.mean()) < 1e-5 and probe.episodic.compute_episodic_advantages.__name__ == (
        "compute_episodic_advantages"
    )
