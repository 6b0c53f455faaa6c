"""Shared fixtures and helpers."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

import gymnasium as gym
import pytest
from stable_baselines3.common.callbacks import BaseCallback

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``make test`` runs one worker per core), one torch thread per worker.

    Torch's default of one thread per core would have the workers' threads busy-wait on each other; the tests'
    networks are small, so one thread loses nothing. Subprocesses (the CLI and Ray tests) inherit the variable.
    """
    if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
        import torch as th

        os.environ["OMP_NUM_THREADS"] = "1"
        th.set_num_threads(1)


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module (the scripts are not a package)."""
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def one_torch_thread():
    """Tiny networks: one thread is faster, and immune to OpenMP spinning when other processes load the cores."""
    import torch as th

    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


@pytest.fixture
def minatar_registry():
    """Gymnasium's registry of ``MinAtar/...`` ids as it was before the test (which may register them, MinAtar's
    way or ordergrad-rl's)."""
    before = {env_id: spec for env_id, spec in gym.registry.items() if env_id.startswith("MinAtar/")}
    yield
    for env_id in [env_id for env_id in gym.registry if env_id.startswith("MinAtar/")]:
        del gym.registry[env_id]
    gym.registry.update(before)


def save_from_before(path: Path, old_path: Path, *keys: str) -> Path:
    """A copy of the SB3 save ``path`` at ``old_path`` whose data lacks ``keys``: a save made before those arguments
    existed."""
    import json
    import zipfile

    with zipfile.ZipFile(path) as source, zipfile.ZipFile(old_path, "w") as old:
        for item in source.infolist():
            content = source.read(item.filename)
            if item.filename == "data":
                data = json.loads(content)
                for key in keys:
                    del data[key]
                content = json.dumps(data).encode()
            old.writestr(item, content)
    return old_path


def collect_one_rollout(model) -> None:
    """One rollout of an episodic ``model`` into its buffer, advantages computed, without an update."""
    model._setup_learn(10**9, None)
    model.collect_rollouts(model.env, model._setup_learn(10**9, None)[1], model.rollout_buffer, 10**9)


def check_history_advantages(model, before, lam: float) -> None:
    """The rollout in ``model``'s buffer was credited by the history baseline ``before`` it was fitted to it: each
    step's baseline is ``before``'s prediction, its return its episode's weight, its advantage the ``lam``-return of
    the weight over the baseline, and the baseline saw the rollout after predicting."""
    import numpy as np

    from ordergrad_rl.agents.common.advantages import lambda_advantages, returns_before

    buffer = model.rollout_buffer
    so_far = returns_before(buffer.rewards, buffer.episode_index)
    predicted = before.predict(before.features(buffer.observations, buffer.episode_step, so_far))
    np.testing.assert_allclose(buffer.values, predicted, atol=1e-6)
    weights = model.episode_weights(buffer.episode_returns)
    np.testing.assert_allclose(buffer.returns, weights[buffer.episode_index], rtol=1e-5, atol=1e-6)
    expected = lambda_advantages(buffer.returns, buffer.values, buffer.episode_index, lam)
    np.testing.assert_allclose(buffer.advantages, expected, atol=1e-5)
    assert model.history_baseline.history_rms.count > before.history_rms.count


class StopAtOnce(BaseCallback):
    """Ends ``learn`` at its first step: decisions taken at the start of ``learn`` are made, nothing is trained."""

    def _on_step(self) -> bool:
        return False


class SpaceSampleEnv(gym.Env):
    """Observations drawn from ``observation_space`` (any space), ``Discrete(2)`` actions rewarded by their value,
    episodes of ``length`` steps: a user's env with an unusual observation space."""

    action_space = gym.spaces.Discrete(2)

    def __init__(self, observation_space: gym.spaces.Space, length: int = 10) -> None:
        self.observation_space = observation_space
        self.length = length
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action):
        self.t += 1
        return self.observation_space.sample(), float(action), self.t >= self.length, False, {}
