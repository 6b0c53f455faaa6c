"""rl-zoo3 habits in ``ordergrad-rl train``, ``evaluate`` and ``compare``: the user's modules, time limits and
hyperparameter keys of rl-zoo3's files."""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import re
import signal
import sys
from collections.abc import Iterator

import numpy as np
import pytest

from ordergrad_rl import cli
from ordergrad_rl.agents.common.env_util import episode_limit
from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.zoo.models import FRAME_STACK, VEC_ENVS, load_model, make_env, saved_env_wrapper

#: A module of the user's: an env of its own, registered on import, and a wrapper that ends its episodes.
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


class EndsAfter3(gym.Wrapper):
    """Truncates every episode after 3 steps (a limit of the user's own, outside the Monitor)."""

    def reset(self, **kwargs):
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        self.steps += 1
        return observation, reward, terminated, truncated or self.steps >= 3, info


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


TIME_LIMIT = "gymnasium.wrappers.TimeLimit"


@pytest.mark.parametrize("vec_env", VEC_ENVS)
def test_an_env_wrappers_time_limit_ends_the_monitors_episodes(vec_env):
    """An entry's ``env_wrapper: [{gymnasium.wrappers.TimeLimit: {max_episode_steps: 5}}]`` was put outside the
    ``Monitor`` (as rl-zoo3 puts it), which never saw the truncation: no episode was recorded, and ``evaluate`` of a
    model on CliffWalking-v1 (no limit of its own) waited forever for SB3's ``evaluate_policy`` to count one. The
    limit is ``gym.make``'s now, inside the ``Monitor``."""
    env_wrapper = ((TIME_LIMIT, {"max_episode_steps": 5}),)
    venv = make_env("CliffWalking-v1", 2, 0, None, vec_env=vec_env, env_wrapper=env_wrapper)
    venv.reset()
    for _ in range(5):
        _, _, dones, infos = venv.step(np.zeros(2, dtype=np.int64))  # up, into the wall: never at the goal
    venv.close()
    assert dones.all() and [info["episode"]["l"] for info in infos] == [5, 5]


@pytest.mark.parametrize(("limit", "expected"), [(1000, 500), (20, 20)])
def test_the_episode_limit_of_a_subproc_env_is_the_one_that_applies(limit, expected):
    """Under ``--vec-env subproc`` the agents read an env's episode limit from its spec, which the worker reports
    (:func:`~ordergrad_rl.agents.common.env_util.episode_limit`; they size rollouts and the endless-episode bound with
    it): an ``env_wrapper`` ``TimeLimit`` of 1000 around CartPole-v1 (500) gave 1000 where the ``DummyVecEnv``, whose
    wrappers it sees, gives 500. Both give the limit that applies now."""
    env_wrapper = ((TIME_LIMIT, {"max_episode_steps": limit}),)
    limits = []
    for vec_env in VEC_ENVS:
        venv = make_env("CartPole-v1", 1, 0, None, vec_env=vec_env, env_wrapper=env_wrapper)
        limits.append(episode_limit(venv))
        venv.close()
    assert limits == [expected, expected]


def test_a_time_limit_the_wrapper_refuses_stays_its_usage_error():
    """Only a ``TimeLimit`` with a positive ``max_episode_steps`` becomes ``gym.make``'s: the others keep the
    wrapper's own refusal, naming the entry's wrapper."""
    with pytest.raises(CommandError, match=r"TimeLimit\(max_episode_steps=-3\) cannot wrap"):
        make_env("CliffWalking-v1", 1, 0, None, env_wrapper=((TIME_LIMIT, {"max_episode_steps": -3}),))


def test_an_entrys_frame_stack_and_vec_env_wrapper_make_every_env_of_the_run(tmp_path, capsys):
    """rl-zoo3's ``frame_stack: N`` and ``vec_env_wrapper`` in a ``--conf-file`` entry were refused ("not supported
    by ordergrad-rl; remove it"). As rl-zoo3 applies them, the ``VecEnv`` is wrapped in the ``vec_env_wrapper``,
    then in SB3's ``VecFrameStack`` (over the ``VecNormalize`` of ``normalize``, as in rl-zoo3: its statistics are of
    one frame); ``--save`` remembers them in
    ``env_wrapper.yml`` with the others, and ``evaluate``, ``compare`` and ``-i`` (here on ``--vec-env subproc``)
    make their envs in them: the model acts on 4 stacked CartPole observations."""
    conf = tmp_path / "conf.yml"
    conf.write_text(
        "CartPole-v1:\n  n_timesteps: 64\n  n_episodes: 4\n  frame_stack: 4\n  normalize: true\n"
        "  vec_env_wrapper: stable_baselines3.common.vec_env.VecCheckNan\n"
    )
    save = str(tmp_path / "models" / "stacked")
    argv = ["train", "--algo", "reinforce", "--env", "CartPole-v1", "--objective", "cvar0.25", "--quiet"]
    assert cli.main([*argv, "--conf-file", str(conf), "--save", save]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "frame_stack=4" in out and "vec_env_wrapper=['stable_baselines3.common.vec_env.VecCheckNan']" in out
    normalized = "VecNormalize(norm_obs=True, norm_reward=False)"
    assert f"CartPole-v1 in VecCheckNan() in {normalized} in VecFrameStack(n_stack=4):" in out
    model, _ = load_model(save)
    assert model.observation_space.shape == (16,)
    with open(tmp_path / "models" / "stacked" / "vecnormalize.pkl", "rb") as file:
        assert pickle.load(file).obs_rms.mean.shape == (4,)  # one frame's statistics
    assert saved_env_wrapper(save) == (
        ("stable_baselines3.common.vec_env.VecCheckNan", {}),
        (FRAME_STACK, {"n_stack": 4}),
    )
    evaluate = ["evaluate", f"{save}.zip", "--env", "CartPole-v1", "--episodes", "2", "--quiet"]
    assert cli.main(evaluate) == 0, capsys.readouterr().err
    assert cli.main(["compare", f"{save}.zip", "--env", "CartPole-v1", "--episodes", "2", "--quiet"]) == 0
    more = ["-i", f"{save}.zip", "--timesteps", "32", "--vec-env", "subproc", "--n-envs", "2"]
    assert cli.main([*argv[:-3], "--quiet", *more]) == 0, capsys.readouterr().err


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ("frame_stack: four", "frame_stack: expected the number of frames VecFrameStack stacks (a positive integer"),
        (
            "vec_env_wrapper: gymnasium.wrappers.FlattenObservation",
            "vec_env_wrapper: gymnasium.wrappers.FlattenObservation is not a VecEnvWrapper: put it in env_wrapper",
        ),
        (
            "env_wrapper: stable_baselines3.common.vec_env.VecFrameStack",
            "env_wrapper: stable_baselines3.common.vec_env.VecFrameStack is a VecEnvWrapper: put it in vec_env_wrapper",
        ),
        (
            "callback: gymnasium.wrappers.FlattenObservation",
            "callback: gymnasium.wrappers.FlattenObservation is not an SB3 callback (a subclass of BaseCallback)",
        ),
        (
            "callback: {stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes: {max_episode: 3}}",
            "callback: stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes: got an unexpected keyword",
        ),
    ],
)
def test_rl_zoos_vec_env_keys_are_checked_naming_the_entry(lines, message, tmp_path, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text(f"CartPole-v1:\n  n_timesteps: 64\n  {lines}\n")
    argv = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--conf-file", str(conf)]
    assert cli.main(argv) == 2
    assert f"conf.yml: CartPole-v1: {message}" in capsys.readouterr().err


def test_a_frame_stack_the_env_cannot_stack_is_a_usage_error(tmp_path, capsys):
    conf = tmp_path / "conf.yml"
    conf.write_text("CliffWalking-v1:\n  n_timesteps: 64\n  frame_stack: 2\n")
    argv = ["train", "--algo", "ppo", "--env", "CliffWalking-v1", "--objective", "mean", "--conf-file", str(conf)]
    assert cli.main(argv) == 2
    assert "VecFrameStack(n_stack=2) cannot wrap the envs: VecFrameStack only works with" in capsys.readouterr().err


def test_an_entrys_callback_trains_with_the_runs_callbacks(tmp_path, capsys):
    """rl-zoo3's ``callback`` in a ``--conf-file`` entry was refused ("not supported by ordergrad-rl; remove it").
    Its SB3 callbacks are made with their keywords, as rl-zoo3's ``get_callback_list`` makes them, and train with
    the run's own: ``StopTrainingOnMaxEpisodes`` ends training after 8 episodes, long before ``n_timesteps``."""
    conf = tmp_path / "conf.yml"
    conf.write_text(
        "CartPole-v1:\n  n_timesteps: 100000\n  n_episodes: 4\n  callback:\n"
        "    - stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes: {max_episodes: 8}\n"
    )
    argv = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--objective", "mean", "--conf-file", str(conf)]
    assert cli.main([*argv, "--quiet", "--eval-env", "CartPole-v1", "--eval-episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert "callback=[{'stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes': {'max_episodes': 8}}]" in out
    steps = int(re.search(r"trained in [\d.]+ s \((\d+) timesteps\)", out)[1])
    assert steps < 8 * 500  # 8 CartPole episodes at most


def test_a_sweep_trial_trains_with_its_entrys_callback(tmp_path):
    """A sweep's trial reads the env's entry as ``train`` does: its ``callback`` trains with the trial's evaluation
    (it was refused when the file was read)."""
    from ordergrad_rl.sweep import grid
    from ordergrad_rl.sweep.trial import run_trial

    conf = tmp_path / "conf.yml"
    conf.write_text(
        "CartPole-v1:\n  n_episodes: 4\n  callback:\n"
        "    - stable_baselines3.common.callbacks.StopTrainingOnMaxEpisodes: {max_episodes: 8}\n"
    )
    fixed = {"env": "CartPole-v1", "timesteps": 100_000, "objective": "mean", "eval_episodes": 2}
    (trial,) = grid.SweepConfig("x", fixed=fixed | {"conf_file": str(conf), "n_epochs": 1}).trials()
    row = run_trial(trial, "m_seed0", "m", tmp_path)
    assert row["timesteps"] < 8 * 500 and row["profile"] is not None


def test_a_model_of_an_rl_zoo_run_is_evaluated_in_the_wrappers_of_its_config(tmp_path, capsys):
    """A model rl-zoo3 saved in its run folder (``logs/ppo/CartPole-v1_1/``) acts on the envs of the run's
    ``<env id>/config.yml``, which ``yaml.dump`` wrote from an ``OrderedDict``: its ``env_wrapper`` and
    ``frame_stack`` were not read, so ``evaluate`` and ``compare`` refused the model ("does not fit": 2 stacked
    frames of 4 against CartPole's 4), and its ``vecnormalize.pkl`` of one frame's observations would not fit a
    ``VecNormalize`` over the stacked frames. They make their envs in them now, as rl-zoo3's ``enjoy`` does."""
    import collections

    import yaml
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

    run = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    config = collections.OrderedDict(
        [("env_wrapper", [{TIME_LIMIT: {"max_episode_steps": 20}}]), ("frame_stack", 2), ("n_envs", 1)]
    )
    (run / "CartPole-v1" / "config.yml").write_text(yaml.dump(config))  # as rl-zoo3's ExperimentManager saves it
    normalize = VecNormalize(make_vec_env("CartPole-v1", 1, seed=0))  # rl-zoo3's order: stacked normalized frames
    PPO("MlpPolicy", VecFrameStack(normalize, 2), n_steps=8).save(run / "CartPole-v1")
    normalize.save(run / "CartPole-v1" / "vecnormalize.pkl")
    argv = [str(run / "CartPole-v1.zip"), "--env", "CartPole-v1", "--episodes", "3", "--quiet", "--json"]
    assert cli.main(["evaluate", *argv, str(tmp_path / "eval.json")]) == 0, capsys.readouterr().err
    assert max(json.loads((tmp_path / "eval.json").read_text())["lengths"]) <= 20
    assert cli.main(["compare", *argv[:-1]]) == 0, capsys.readouterr().err


def _rl_zoo_file(path, values: dict) -> None:
    """``values`` as rl-zoo3's ``ExperimentManager`` writes ``config.yml`` and ``args.yml``: ``yaml.dump`` of an
    ``OrderedDict``."""
    import collections

    import yaml

    path.write_text(yaml.dump(collections.OrderedDict(values)))


def test_a_model_of_an_rl_zoo_run_is_evaluated_on_the_env_of_its_args(tmp_path, monkeypatch, capsys):
    """rl-zoo3 writes the run's command line to ``<env>/args.yml`` beside ``config.yml``, and its ``enjoy`` makes the
    env with the ``env_kwargs`` of ``config.yml`` replaced by those of ``args.yml`` (its ``train --env-kwargs``).
    Neither was read: ``evaluate`` and ``compare`` of a run's model needed ``--env``, the env's module in
    ``--gym-packages`` and every ``--env-kwargs`` again, and ran it on the env without them (here: an env without a
    time limit of its own, trained under ``max_episode_steps: 4``). They are read now, as ``enjoy`` reads them; a
    key of ``--env-kwargs`` wins."""
    import gymnasium as gym
    from stable_baselines3 import PPO

    from ordergrad_rl.zoo.models import load_rl_zoo_config

    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_c")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tmp_path / "logs" / "ppo" / "ZooUserEndless-v0_1"
    (run / "ZooUserEndless-v0").mkdir(parents=True)
    _rl_zoo_file(run / "ZooUserEndless-v0" / "config.yml", {"env_kwargs": {"max_episode_steps": 50}, "n_envs": 1})
    arguments = {"algo": "ppo", "env": "ZooUserEndless-v0", "env_kwargs": {"max_episode_steps": 4}}
    _rl_zoo_file(run / "ZooUserEndless-v0" / "args.yml", arguments | {"gym_packages": ["zoo_user_envs_c"], "seed": 0})
    venv = make_env("zoo_user_envs_c:ZooUserEndless-v0", 1, 0, {"max_episode_steps": 4})
    PPO("MlpPolicy", venv, n_steps=8, batch_size=8).save(run / "best_model")
    # As in a fresh process: the env registers when args.yml's gym_packages are imported.
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0")
    monkeypatch.delitem(sys.modules, "zoo_user_envs_c")

    model = str(run / "best_model.zip")
    for given, length in [([], 4), (["--env-kwargs", "max_episode_steps=6"], 6)]:
        argv = ["evaluate", model, "--episodes", "3", "--quiet", "--json", str(tmp_path / "eval.json"), *given]
        assert cli.main(argv) == 0, capsys.readouterr().err
        evaluation = json.loads((tmp_path / "eval.json").read_text())
        assert evaluation["env"] == "ZooUserEndless-v0"
        assert evaluation["env_kwargs"] == {"max_episode_steps": length}
        assert evaluation["lengths"] == [length] * 3
    capsys.readouterr()
    assert cli.main(["compare", model, "--episodes", "2", "--quiet", "--out", str(tmp_path / "compare")]) == 0
    assert "2 deterministic episodes on ZooUserEndless-v0 (max_episode_steps=4)" in capsys.readouterr().out

    (run / "ZooUserEndless-v0" / "args.yml").unlink()  # without it, the env is the user's to name
    assert cli.main(["evaluate", model, "--quiet"]) == 2
    assert "give --env ID, the env to evaluate" in capsys.readouterr().err
    # An --env-kwargs value rl-zoo3 evaluated to a tuple is written with PyYAML's Python tag.
    assert load_rl_zoo_config("env_kwargs: {shape: !!python/tuple [3, 3]}") == {"env_kwargs": {"shape": (3, 3)}}


def test_a_saved_model_keeps_its_env_for_evaluate_compare_and_trained_agent(tmp_path, monkeypatch, capsys):
    """``train --save`` recorded the env's wrappers and statistics beside the model, but not the env: ``evaluate`` and
    ``compare`` needed ``--env``, ``--gym-packages`` and ``--env-kwargs`` again, and ``-i`` without ``--env-kwargs``
    went on training on the env made without them (CliffWalking-v1 without its time limit ran into the 100,000-step
    bound). The save writes them to ``args.yml`` (rl-zoo3's file), for its checkpoints too, which all three read: the
    env's arguments on that env id only, under those given."""
    import dataclasses

    import gymnasium as gym
    import yaml

    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_d")
    save = tmp_path / "models" / "endless"
    argv = ["train", "--algo", "reinforce", "--gym-packages", "zoo_user_envs_d", "--env", "ZooUserEndless-v0"]
    argv += ["--objective", "mean", "--n-episodes", "2", "--env-kwargs", "max_episode_steps=4", "--timesteps", "16"]
    assert cli.main([*argv, "--save", str(save), "--save-freq", "8", "--conf-file", "none", "--quiet"]) == 0
    assert yaml.safe_load((save / "args.yml").read_text()) == {
        "algo": "reinforce",
        "env": "ZooUserEndless-v0",
        "env_kwargs": {"max_episode_steps": 4},
        "eval_env": None,
        "eval_env_kwargs": None,
        "eval_episodes": 100,
        "eval_freq": None,  # no --eval-env: the default, which an -i --eval-env derives from its episode limit
        "gym_packages": ["zoo_user_envs_d"],
        "run_name": None,
        "seed": 0,
        "vec_env": "dummy",
    }
    # As in a fresh process: the env registers when the save's gym_packages are imported.
    monkeypatch.delitem(gym.registry, "ZooUserEndless-v0")
    monkeypatch.delitem(sys.modules, "zoo_user_envs_d")

    def evaluated(model: str, *given: str) -> dict:
        argv = ["evaluate", model, "--episodes", "2", "--quiet", "--json", str(tmp_path / "eval.json"), *given]
        assert cli.main(argv) == 0, capsys.readouterr().err
        return json.loads((tmp_path / "eval.json").read_text())

    for model in (str(save), str(tmp_path / "models" / "endless_8_steps.zip")):
        evaluation = evaluated(model)
        assert (evaluation["env"], evaluation["env_kwargs"], evaluation["lengths"]) == (
            "ZooUserEndless-v0",
            {"max_episode_steps": 4},
            [4, 4],
        )
    assert evaluated(str(save), "--env-kwargs", "max_episode_steps=6")["lengths"] == [6, 6]
    # Another id is made with its own arguments: the save's are those of the env it trained on.
    short = dataclasses.replace(gym.spec("ZooUserEndless-v0"), id="ZooUserShort-v0", max_episode_steps=3)
    monkeypatch.setitem(gym.registry, "ZooUserShort-v0", short)
    assert evaluated(str(save), "--env", "ZooUserShort-v0")["lengths"] == [3, 3]
    capsys.readouterr()
    argv = ["compare", str(save), "--episodes", "2", "--quiet", "--out", str(tmp_path / "compare")]
    assert cli.main(argv) == 0
    assert "2 deterministic episodes on ZooUserEndless-v0 (max_episode_steps=4)" in capsys.readouterr().out
    assert cli.main([*argv, "--env-kwargs", "max_episode_steps=6"]) == 0  # over the save's, without --env too
    assert "2 deterministic episodes on ZooUserEndless-v0 (max_episode_steps=6)" in capsys.readouterr().out

    more = tmp_path / "models" / "more"
    argv = ["train", "--algo", "reinforce", "--env", "ZooUserEndless-v0", "-i", str(save), "--timesteps", "8"]
    assert cli.main([*argv, "--save", str(more), "--quiet"]) == 0, capsys.readouterr().err
    assert "OrderGradREINFORCE on ZooUserEndless-v0 (max_episode_steps=4)" in capsys.readouterr().out
    assert (more / "args.yml").read_text() == (save / "args.yml").read_text()


def test_env_arguments_of_a_saved_run_that_the_env_refuses_name_its_args_yml(tmp_path, capsys):
    """A key or value of a save's args.yml that the env refuses (an older env's argument, a hand edit) was reported
    by evaluate, compare and train -i as "--env-kwargs: ...", an option the user had not given; the file is named,
    and what --env-kwargs gives is still named as its own."""
    argv = ["train", "--algo", "ppo", "--env", "FrozenLake-v1", "--env-kwargs", "map_name=4x4", "--objective", "mean"]
    save = tmp_path / "lake"
    assert cli.main([*argv, "--timesteps", "8", "--save", str(save), "--conf-file", "none", "--quiet"]) == 0
    arguments = save / "args.yml"
    refusals = [
        ("map_nam: 4x4", "FrozenLake-v1 takes no argument 'map_nam' (did you mean map_name?)"),
        ("map_name: 9x9", "cannot make FrozenLake-v1 with env arguments {'map_name': '9x9'"),
    ]
    for bad, refusal in refusals:
        arguments.write_text(arguments.read_text().replace("map_name: 4x4", bad).replace("map_nam: 4x4", bad))
        for command in (["evaluate", str(save), "--episodes", "1"], ["compare", str(save), "--episodes", "1"],
                        ["train", "-i", str(save), "--timesteps", "8"]):  # fmt: skip
            assert cli.main([*command, "--quiet"]) == 2
            assert f"error: {arguments}: env_kwargs: {refusal}" in capsys.readouterr().err
        assert cli.main(["evaluate", str(save), "--quiet", "--env-kwargs", "is_slippery=False"]) == 2
        assert f"error: {arguments}: env_kwargs under --env-kwargs: {refusal}" in capsys.readouterr().err
    assert cli.main(["evaluate", str(save), "--quiet", "--episodes", "1", "--env-kwargs", "map_name=4x4"]) == 0
    assert cli.main(["evaluate", str(save), "--quiet", "--env-kwargs", "map_name=7x7"]) == 2
    assert "error: --env-kwargs: cannot make FrozenLake-v1 with env arguments {'map_name': '7x7'}" in (
        capsys.readouterr().err
    )


def test_train_on_an_env_without_a_time_limit_names_the_option_that_gives_one(tmp_path, monkeypatch, capsys):
    """An episode past the bound on an episode's length (100,000 steps; 20 here) ended ``train`` with the buffer's
    ``ValueError`` and its traceback, naming ``TimeLimit`` but not the option: a usage error now, naming
    ``--env-kwargs max_episode_steps``."""
    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_e")
    argv = ["train", "--algo", "reinforce", "--env", "zoo_user_envs_e:ZooUserEndless-v0", "--objective", "mean"]
    argv += ["--hparams", "rollout_buffer_kwargs={'max_episode_steps': 20}", "--timesteps", "40", "--quiet"]
    assert cli.main([*argv, "--conf-file", "none"]) == 2
    err = capsys.readouterr().err
    assert "episode has run 20 steps without terminating or being truncated" in err
    assert "the time limit is --env-kwargs max_episode_steps=N" in err


@pytest.mark.parametrize(
    ("normalize", "refused"),
    [(True, True), ("{'norm_obs': True, 'norm_reward': False}", True), ("dict(norm_obs=False)", False), (False, False)],
)
def test_an_rl_zoo_model_whose_run_normalized_its_observations_needs_their_statistics(
    normalize, refused, tmp_path, capsys
):
    """An SB3 save records no ``VecNormalize``; its rl-zoo3 run's ``config.yml`` does (``normalize``). Without the
    run's ``vecnormalize.pkl``, ``evaluate`` ran the policy on raw observations, as rl-zoo3's ``enjoy`` does, and
    printed a table of a policy that never acts so; it is refused now, as an OrderGrad save recording one is."""
    from stable_baselines3 import PPO

    run = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    _rl_zoo_file(run / "CartPole-v1" / "config.yml", {"normalize": normalize, "n_envs": 1})
    PPO("MlpPolicy", "CartPole-v1", n_steps=8, batch_size=8).save(run / "best_model")
    status = cli.main(["evaluate", str(run / "best_model.zip"), "--env", "CartPole-v1", "--episodes", "1", "--quiet"])
    err = capsys.readouterr().err
    assert status == (2 if refused else 0), err
    if refused:
        assert f"was trained in VecNormalize (normalize: {normalize!r} in {run / 'CartPole-v1' / 'config.yml'})" in err
        assert f"they are not at {run / 'CartPole-v1' / 'vecnormalize.pkl'}, where rl-zoo3 saves them" in err


def test_the_folders_of_a_namespaced_env_are_found_by_rl_zoos_name():
    """rl-zoo3 names the folders of ``ALE/Pong-v5`` ``ALE-Pong-v5`` (``huggingface_sb3``'s ``EnvironmentName``):
    a model of ``logs/ppo/ALE-Pong-v5_1`` was not taken for a run's model (its ``vecnormalize.pkl``, ``config.yml``
    and ``args.yml`` were looked for in ``logs/ppo/ALE-Pong-v5_1/ALE/Pong-v5``, for a run folder ``Pong-v5_1``)."""
    from pathlib import Path

    from ordergrad_rl.zoo.models import rl_zoo_env_folder

    run = Path("logs/ppo/ALE-Pong-v5_1")
    assert rl_zoo_env_folder(run / "best_model.zip", "ALE/Pong-v5") == run / "ALE-Pong-v5"
    assert rl_zoo_env_folder(run / "best_model.zip", "my_envs:ALE/Pong-v5") == run / "ALE-Pong-v5"
    assert rl_zoo_env_folder(Path("logs/ppo/Pong-v5_1/best_model.zip"), "ALE/Pong-v5") is None


def test_evaluate_names_a_wrapper_that_ends_episodes_outside_the_monitor(tmp_path, monkeypatch):
    """A wrapper of a model's ``env_wrapper`` that ends episodes (not a ``TimeLimit``: a wrapper of the user's) sits
    outside the ``Monitor``, as in rl-zoo3, and SB3's ``evaluate_policy`` counts the ``Monitor``'s episodes only:
    ``evaluate`` waited forever. Past the bound on an episode's length without an end the ``Monitor`` recorded, it
    stops with a usage error naming the wrapper (the bound lowered here from 100,000 to 50)."""
    from stable_baselines3 import PPO

    from ordergrad_rl.agents.common import buffers
    from ordergrad_rl.zoo.models import evaluate_model

    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_b")
    sys.path.append(str(tmp_path))
    monkeypatch.setattr(buffers, "MAX_EPISODE_STEPS", 50)
    env_wrapper = (("zoo_user_envs_b.EndsAfter3", {}),)
    model = PPO("MlpPolicy", make_env("zoo_user_envs_b:ZooUserEndless-v0", 1, 0, None, env_wrapper=env_wrapper))

    with pytest.raises(
        CommandError, match=r"a wrapper outside it ends them \(env_wrapper: zoo_user_envs_b\.EndsAfter3"
    ):
        with _stops_within(30):
            evaluate_model(model, "zoo_user_envs_b:ZooUserEndless-v0", 2, True, quiet=True, env_wrapper=env_wrapper)


@contextlib.contextmanager
def _stops_within(seconds: int) -> Iterator[None]:
    """Fail the test, not hang it, where an evaluation still waits after ``seconds`` for an episode the Monitor
    never records."""

    def stuck(*_: object) -> None:
        raise TimeoutError("still waiting for an episode the Monitor never records")

    previous = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_train_names_an_eval_env_wrapper_that_ends_episodes_outside_the_monitor(tmp_path, monkeypatch, capsys):
    """The same wrapper in a ``--conf-file`` entry's ``env_wrapper`` makes the ``--eval-env`` too: its periodic
    evaluation (``RiskEvalCallback``) waited forever; it ends ``train`` with a usage error now."""
    from ordergrad_rl.agents.common import buffers

    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_c")
    monkeypatch.setattr(buffers, "MAX_EPISODE_STEPS", 50)
    (tmp_path / "conf.yml").write_text(
        "ZooUserEndless-v0:\n  n_episodes: 4\n  env_wrapper: zoo_user_envs_c.EndsAfter3\n"
    )
    argv = ["train", "--algo", "reinforce", "--env", "ZooUserEndless-v0", "--gym-packages", "zoo_user_envs_c"]
    argv += ["--objective", "mean", "--conf-file", "conf.yml", "--timesteps", "24", "--quiet"]
    with _stops_within(30):
        assert cli.main([*argv, "--eval-env", "ZooUserEndless-v0", "--eval-freq", "12", "--eval-episodes", "2"]) == 2
    assert "--eval-env: the Monitor of eval env 0 has recorded no episode's end in 50 steps" in capsys.readouterr().err


def test_an_rl_zoo_command_line_runs_as_pasted(capsys):
    """rl-zoo3's ``--env-kwargs key:value``, ``-params/--hyperparams key:value``, ``-n/--n-timesteps``, ``-tb`` and
    ``-conf`` were refused ("expects key=value items", "unrecognized arguments"); they are train's options now."""
    argv = ["train", "--algo", "reinforce", "--env", "CliffWalking-v1", "--objective", "mean", "--quiet"]
    argv += ["--env-kwargs", "max_episode_steps:5", "is_slippery:True", "-n", "40", "-conf", "none"]
    argv += ["-params", "learning_rate:0.01", "policy_kwargs:dict(net_arch=[8])"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "CliffWalking-v1 (max_episode_steps=5 is_slippery=True)" in capsys.readouterr().out


def test_key_value_items_end_the_key_at_the_first_equals_sign_or_colon():
    from ordergrad_rl.common.options import key_value_items

    items = ["policy_kwargs:dict(net_arch=[64])", "desc=a:b", "gamma:0.9", "map_name:4x4"]
    assert [(key, value) for key, value, _ in key_value_items(items, "--hparams")] == [
        ("policy_kwargs", "dict(net_arch=[64])"),
        ("desc", "a:b"),
        ("gamma", 0.9),
        ("map_name", "4x4"),
    ]
    with pytest.raises(CommandError, match=r"--hparams expects key=value items \(or rl-zoo3's key:value\), got ':3'"):
        list(key_value_items([":3"], "--hparams"))


#: Entries of the ``args.yml`` rl-zoo3's ``train`` writes (its argparse namespace, keys sorted), with its defaults.
RL_ZOO_ARGS = {
    "algo": "ppo", "conf_file": None, "device": "auto", "env": "CartPole-v1", "env_kwargs": None,
    "eval_env_kwargs": None, "eval_episodes": 5, "eval_freq": 25000, "gym_packages": [], "hyperparams": None,
    "log_folder": "logs", "n_eval_envs": 1, "n_timesteps": -1, "save_freq": -1, "seed": 2081930462,
    "tensorboard_log": "", "trained_agent": "", "uuid": False, "vec_env": "dummy", "verbose": 1,
}  # fmt: skip


def test_trained_agent_of_an_rl_zoo_run_evaluates_as_that_run_did(tmp_path, monkeypatch, capsys):
    """rl-zoo3's ``args.yml`` has no ``eval_env``: its runs evaluate on their env every ``eval_freq`` steps, made with
    ``eval_env_kwargs`` (else ``env_kwargs``), and ``--eval-freq -1`` is none. ``-i`` of a model in such a run refused
    its ``eval_freq: -1`` ("expected an integer >= 1, got -1"), and with ``--eval-env`` of the run's env made it
    without the run's ``eval_env_kwargs``. It goes on evaluating as the run did now, with them."""
    from ordergrad_rl.agents import OrderGradREINFORCE

    _user_folder(tmp_path, monkeypatch, "zoo_user_envs_k")
    monkeypatch.syspath_prepend(str(tmp_path))
    run = tmp_path / "logs" / "reinforce" / "ZooUserEndless-v0_1"
    (run / "ZooUserEndless-v0").mkdir(parents=True)
    model = run / "ZooUserEndless-v0.zip"
    venv = make_env("zoo_user_envs_k:ZooUserEndless-v0", 1, 0, {"max_episode_steps": 2})
    OrderGradREINFORCE("MlpPolicy", venv, objective="mean", n_episodes=2).save(model)
    arguments = RL_ZOO_ARGS | {"env": "ZooUserEndless-v0", "gym_packages": ["zoo_user_envs_k"], "eval_episodes": 2}
    arguments |= {"env_kwargs": {"max_episode_steps": 2}, "eval_env_kwargs": {"max_episode_steps": 3}}

    def went_on(eval_freq: int, *given: str) -> str:
        _rl_zoo_file(run / "ZooUserEndless-v0" / "args.yml", arguments | {"eval_freq": eval_freq})
        assert cli.main(["train", "-i", str(model), "--timesteps", "8", *given]) == 0, capsys.readouterr().err
        return capsys.readouterr().out

    out = went_on(-1)
    assert "with its run's --seed 2081930462\n" in out and "last evaluation" not in out
    out = went_on(4)
    assert "--eval-env ZooUserEndless-v0 --eval-freq 4 --eval-episodes 2" in out
    assert re.search(r"\|\s+mean \|\s+2 \|\s+3 \|", out), out  # trained on 2 steps an episode, evaluated on 3
    assert re.search(r"\|\s+mean \|\s+2 \|\s+5 \|", went_on(4, "--eval-env-kwargs", "max_episode_steps=5"))
    assert "last evaluation" not in went_on(4, "--eval-env", "none")
    # A value PyYAML wrote with a Python tag is named as not read (PythonObject), not passed on as a placeholder.
    arguments["eval_env_kwargs"] = {"max_episode_steps": np.int64(3)}
    _rl_zoo_file(run / "ZooUserEndless-v0" / "args.yml", arguments | {"eval_freq": 4})
    assert cli.main(["train", "-i", str(model), "--timesteps", "8"]) == 2
    assert "args.yml: eval_env_kwargs: max_episode_steps: a Python object (!!python/object/apply:numpy" in (
        capsys.readouterr().err
    )


def test_an_env_argument_rl_zoo_wrote_as_a_python_object_is_named_not_read_as_none(tmp_path, capsys):
    """PyYAML writes an ``env_kwargs`` value that is a Python object (a NumPy scalar an ``--env-kwargs`` expression
    or a Python ``-conf`` file gave) with a Python tag, which rl-zoo3's ``enjoy`` reads with the unsafe loader. Read
    safely, it was ``None``: the model was evaluated on ``FrozenLake-v1 (is_slippery=None)``, a lake that does not
    slip. The value is named as not read, with the option that gives it, which wins over the file."""
    from stable_baselines3 import PPO

    run = tmp_path / "logs" / "ppo" / "FrozenLake-v1_1"
    (run / "FrozenLake-v1").mkdir(parents=True)
    arguments = RL_ZOO_ARGS | {"env": "FrozenLake-v1", "env_kwargs": {"map_name": "4x4", "is_slippery": np.True_}}
    _rl_zoo_file(run / "FrozenLake-v1" / "args.yml", arguments)
    PPO("MlpPolicy", make_env("FrozenLake-v1", 1, 0, {"map_name": "4x4"}), n_steps=8, batch_size=8).save(run / "m")
    model = str(run / "m.zip")
    assert cli.main(["evaluate", model, "--episodes", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"error: {run / 'FrozenLake-v1' / 'args.yml'}: env_kwargs: is_slippery: a Python object" in err
    assert "(!!python/object/apply:numpy" in err and "give its value with --env-kwargs is_slippery=VALUE" in err
    argv = ["evaluate", model, "--episodes", "1", "--quiet", "--json", str(tmp_path / "e.json")]
    assert cli.main([*argv, "--env-kwargs", "is_slippery=True"]) == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "e.json").read_text())["env_kwargs"] == {"map_name": "4x4", "is_slippery": True}


def test_a_model_of_an_rl_zoo_run_evaluated_on_another_env_keeps_its_runs_wrappers_and_statistics(
    tmp_path, monkeypatch, capsys
):
    """The files of an rl-zoo3 run (``logs/ppo/CartPole-v1_1/CartPole-v1/``: ``config.yml``, ``vecnormalize.pkl``,
    ``args.yml``) were looked up under the env the model is evaluated on: ``evaluate best_model.zip --env`` of another
    id (a variant of the env, as a deployment check) found none, so the model was refused as not fitting the env (its
    ``frame_stack`` not applied) or, an SB3 model recording no ``VecNormalize``, run on raw observations. They are
    the run's, whatever the env: its folder is the one whose name the run folder's starts with."""
    import dataclasses

    import gymnasium as gym
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack, VecNormalize

    short = dataclasses.replace(gym.spec("CartPole-v1"), id="ZooCartPoleShort-v0", max_episode_steps=7)
    monkeypatch.setitem(gym.registry, "ZooCartPoleShort-v0", short)
    run = tmp_path / "logs" / "ppo" / "CartPole-v1_1"
    (run / "CartPole-v1").mkdir(parents=True)
    _rl_zoo_file(run / "CartPole-v1" / "config.yml", {"frame_stack": 2, "n_envs": 1, "normalize": True})
    _rl_zoo_file(run / "CartPole-v1" / "args.yml", RL_ZOO_ARGS)
    normalize = VecNormalize(make_vec_env("CartPole-v1", 1, seed=0))
    PPO("MlpPolicy", VecFrameStack(normalize, 2), n_steps=8).save(run / "best_model")
    normalize.save(run / "CartPole-v1" / "vecnormalize.pkl")
    argv = ["evaluate", str(run / "best_model.zip"), "--env", "ZooCartPoleShort-v0", "--episodes", "2", "--quiet"]
    assert cli.main([*argv, "--json", str(tmp_path / "e.json")]) == 0, capsys.readouterr().err
    assert max(json.loads((tmp_path / "e.json").read_text())["lengths"]) <= 7
    (run / "CartPole-v1" / "vecnormalize.pkl").unlink()
    assert cli.main(argv) == 2
    assert "was trained in VecNormalize (normalize: True in" in capsys.readouterr().err
