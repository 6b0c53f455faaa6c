"""Saves written by earlier releases load with today's code and predict exactly what they predicted when saved.

SB3 zips pickle class paths (policy, buffer and schedule classes), so moving a module can break every user's saves.
Each release's fixtures are written once by ``scripts/make_saved_fixtures.py`` of that release and kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch as th

import ordergrad_rl

FIXTURES = sorted((Path(__file__).parent / "fixtures").glob("saved_*"))
CASES = [
    (release, name) for release in FIXTURES
    for name in json.loads((release / "expected.json").read_text())["models"]
]  # fmt: skip


def predictions(model, observations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    obs = th.as_tensor(observations)
    with th.no_grad():
        if isinstance(model, ordergrad_rl.OrderGradRecurrentPPO):
            actions, _ = model.predict(observations, episode_start=np.ones(len(observations), bool), deterministic=True)
            lstm = model.policy.lstm_actor
            zeros = th.zeros(lstm.num_layers, len(obs), lstm.hidden_size)
            dist, _ = model.policy.get_distribution(obs, (zeros, zeros.clone()), th.ones(len(obs)))
        else:
            actions, _ = model.predict(observations, deterministic=True)
            dist = model.policy.get_distribution(obs)
    return np.asarray(actions), dist.distribution.probs.numpy()


def test_there_are_fixtures() -> None:
    assert FIXTURES and CASES


@pytest.mark.parametrize(("release", "name"), CASES, ids=[f"{r.name}-{n}" for r, n in CASES])
def test_saved_model_loads_and_predicts_identically(release: Path, name: str) -> None:
    expected = json.loads((release / "expected.json").read_text())
    spec = expected["models"][name]
    cls = getattr(ordergrad_rl, spec["class"])
    model = cls.load(release / f"{name}.zip", device="cpu")
    observations = np.asarray(expected["observations"], np.float32)
    actions, probs = predictions(model, observations)
    np.testing.assert_array_equal(actions, spec["actions"])
    np.testing.assert_allclose(probs, spec["probs"], rtol=1e-6, atol=1e-7)
    if hasattr(model, "untie_tail"):  # episodic agents: saved before untie_tail existed, they train as they did
        assert model.untie_tail is False
        assert model.entropy_when_tied is True
        assert model.untie_at_var is False
        assert getattr(model, "relative_ent_coef", False) is False  # the fixed coefficient it trained with
        assert getattr(model, "novelty_when_blind", False) is False  # blind rollouts kept the baseline's terms
