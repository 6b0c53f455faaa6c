"""scripts/probe_nav_novelty_phase.py: novelty weights for a first phase of training on the point navigation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import load_script as load


def test_the_phase_trains_on_novelty_weights_then_on_the_objective():
    script = load("probe_nav_novelty_phase")
    from ordergrad_rl.experiments import benchmarks as bench

    model = bench.build_model(bench.METHODS[script.METHOD], "nav", 0)
    script.novelty_phase(model, 0.5, 4_000)
    seen: list[np.ndarray] = []
    train = model.train

    def record() -> None:
        seen.append(np.array(model.rollout_buffer.advantages))
        train()

    model.train = record
    model.learn(4_000)
    index = model.rollout_buffer.episode_index
    first, last = seen[0], seen[-1]
    per_episode = np.array([first[index == e][0] for e in range(model.n_episodes)])
    assert np.allclose(first, per_episode[index])  # one weight per episode: the novelty's, standardized
    assert per_episode.mean() == pytest.approx(0.0, abs=1e-5) and per_episode.std() == pytest.approx(1.0, abs=1e-4)
    assert not np.allclose(last, np.array([last[index == e][0] for e in range(model.n_episodes)])[index])


def test_quick_run_writes_scored_runs(tmp_path):
    path = tmp_path / "runs.json"
    runs = load("probe_nav_novelty_phase").main(["--quick", "--seeds", "0", "--json", str(path)])
    assert json.loads(path.read_text())["runs"] == json.loads(json.dumps(runs))
    assert runs[0]["greedy"]["cvar"] <= 7.0 + 1e-9 and runs[0]["timesteps"] >= 2_000 and runs[0]["curve"]
    with pytest.raises(SystemExit):
        load("probe_nav_novelty_phase").main(["--fraction", "1.5"])
