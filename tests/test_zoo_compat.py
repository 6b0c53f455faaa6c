"""rl-zoo3 habits in ``ordergrad-rl train``, ``evaluate`` and ``compare``: the user's modules, time limits and
hyperparameter keys of rl-zoo3's files."""

from __future__ import annotations

import os
import sys

from ordergrad_rl import cli

#: A module of the user's: an env of its own, registered on import, and a wrapper.
USER_MODULE = '''
import gymnasium as gym
import numpy as np


class Endless(gym.Env):
    """Never ends by itself: reward 1 a step."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.zeros(2, np.float32), 1.0, False, False, {}


class Same(gym.ObservationWrapper):
    def observation(self, observation):
        return observation


gym.register("ZooUserEndless-v0", entry_point=f"{__name__}:Endless")
'''


def _user_folder(tmp_path, monkeypatch, name: str) -> None:
    """``tmp_path`` as the folder the command runs in, holding module ``name``, on a ``sys.path`` without it (as the
    installed ``ordergrad-rl`` script starts)."""
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if os.path.abspath(p or os.curdir) != str(tmp_path)])
    monkeypatch.delitem(sys.modules, name, raising=False)


def test_the_console_script_imports_the_users_modules_from_the_current_folder(tmp_path, monkeypatch, capsys):
    """The ``ordergrad-rl`` script put only its own folder on ``sys.path``: ``--env my_module:MyEnv-v0`` failed with
    "cannot import 'my_module'" where ``python -m ordergrad_rl`` (and rl-zoo3's ``python -m rl_zoo3.train``) import
    it. The current folder is on ``sys.path`` now, after the installed packages."""
    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_a")
    argv = ["train", "--algo", "reinforce", "--env", "zoo_user_envs_a:ZooUserEndless-v0", "--objective", "mean"]
    argv += ["--env-kwargs", "max_episode_steps=5", "--timesteps", "40", "--conf-file", "none", "--quiet"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert sys.path[-1] == str(tmp_path)
