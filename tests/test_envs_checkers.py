"""Every registered environment passes the Gymnasium and Stable-Baselines3 env checkers."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
import warnings

import gymnasium as gym
import pytest
from gymnasium.envs.registration import load_env_creator
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env
from stable_baselines3.common.env_util import make_vec_env

from ordergrad_rl.envs import register_envs

ENV_IDS = [
    "SyntheticTailRisk-v0",
    "SyntheticTailRiskDeploy-v0",
    "RiskyBandit-v0",
    "RiskyLavaGrid-v0",
    "TargetSum-v0",
    "GuardedMaze-v0",
    "HeavyTailBandit-v0",
    "RiskyShortcutNav-v0",
    "RiskyShortcutNav-v1",
    "RiskyShortcutNav-v2",
]


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.filterwarnings("ignore:.*symmetric and normalized")  # the paper's logits live in [-10, 10]
def test_env_checkers(env_id: str) -> None:
    check_env(gym.make(env_id).unwrapped)
    sb3_check_env(gym.make(env_id))


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # RiskyShortcutNav-v0 and -v1
def test_sb3_make_vec_env_builds_every_env(env_id: str) -> None:
    """SB3's own ``make_vec_env(id)`` asks for ``render_mode="rgb_array"`` and falls back only on a ``TypeError``
    (TargetSum, a text env, raised a bare ``ValueError``, so SB3's ``PPO("MlpPolicy", "TargetSum-v0")`` failed)."""
    venv = make_vec_env(env_id, n_envs=2, seed=0)
    assert venv.reset().shape[0] == 2


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_docstring_snippets_run_as_pasted(env_id: str) -> None:
    """The Arguments section's ``python`` block of each env's docstring runs without a warning (RiskyShortcutNav's
    made the deprecated -v0, and Gymnasium warned that it is out of date)."""
    env_class = load_env_creator(gym.spec(env_id).entry_point)
    blocks = re.findall(r"```python\n(.*?)```", inspect.getdoc(env_class), re.DOTALL)
    assert blocks
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for block in blocks:
            exec(block, {})


def test_registration_is_idempotent() -> None:
    spec = gym.spec("SyntheticTailRisk-v0")
    register_envs()
    register_envs()
    assert gym.spec("SyntheticTailRisk-v0") is spec
    assert spec.vector_entry_point == "ordergrad_rl.envs.tailrisk_gym:SyntheticTailRiskVectorEnv"
    assert gym.spec("RiskyLavaGrid-v0").max_episode_steps == 30


def test_import_stays_light() -> None:
    code = (
        "import sys, gymnasium as gym, ordergrad_rl; gym.spec('SyntheticTailRisk-v0'); "
        "heavy = [m for m in ('stable_baselines3', 'torch', 'ordergrad_rl.envs.sb3_vec_env') if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
