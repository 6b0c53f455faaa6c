"""scripts/probe_blind_patience.py: the usage line with another wait before novelty acts on blind rollouts."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import load_script as load
from stable_baselines3.common.vec_env import DummyVecEnv
from test_blind_drift import TimeOutEnv  # every episode times out at -3: every rollout is blind

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common.novelty import BLIND_PATIENCE_EPISODES
from ordergrad_rl.experiments import benchmarks as bench


def blind_rollouts_acted_on(agent_class: type[OrderGradPPO], rollouts: int) -> list[bool]:
    """Whether novelty acted on each of ``rollouts`` blind rollouts of 8 episodes."""
    agent = agent_class("MlpPolicy", DummyVecEnv([TimeOutEnv]), objective="cvar0.25", n_episodes=8, seed=0, n_epochs=1,
                        value_baseline=False, novelty_when_blind=True)  # fmt: skip
    acted = []
    for _ in range(rollouts):
        agent.learn(24, reset_num_timesteps=False)  # one rollout of 8 episodes of 3 steps
        assert agent._rollout_blind
        acted.append(bool(np.any(agent.rollout_buffer.advantages)))
    return acted


def test_the_class_waits_its_patience_and_the_library_default_is_untouched():
    probe = load("probe_blind_patience")
    assert blind_rollouts_acted_on(probe.agent_class(16), 4) == [False, False, True, True]
    assert OrderGradPPO.blind_patience_episodes == BLIND_PATIENCE_EPISODES
    assert blind_rollouts_acted_on(OrderGradPPO, 4) == [False] * 4  # 96 episodes: twelve rollouts of 8
    with pytest.raises(ValueError, match="patience must be a count of episodes >= 0, got -1"):
        probe.agent_class(-1)


def test_quick_run_is_scored_records_its_wait_and_the_patch_is_undone(tmp_path, one_torch_thread):
    probe = load("probe_blind_patience")
    path = tmp_path / "runs.json"
    runs = probe.main(["--quick", "--seeds", "0", "--patience", "32", "--json", str(path)])
    assert json.loads(path.read_text())["runs"] == json.loads(json.dumps(runs))
    assert runs[0]["method"] == "og-cvar-patience32" and runs[0]["task"] == "acrobot"
    assert runs[0]["blind_patience"] == 32 and runs[0]["timesteps"] >= 2_000
    assert bench.episodic_algorithm("ordergrad_ppo") is OrderGradPPO
