"""MinAtar wrapper, the pgx network and a short Q-critic run on Breakout (the reproduction's tests:
test_experiments_minatar.py)."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest

from ordergrad_rl.envs import minatar as envs
from ordergrad_rl.experiments import minatar as exp

pytest.importorskip("minatar", reason="MinAtar is not installed (pip install 'ordergrad-rl[minatar]')")
pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@pytest.mark.parametrize(("game", "channels", "actions"), [("breakout", 4, 3), ("space_invaders", 6, 4)])
def test_env_has_float_grid_observations(game: str, channels: int, actions: int) -> None:
    env = envs.make_minatar_env(game)
    assert env.spec.id == f"MinAtar/{envs.GAMES[game]}-v1" and env.action_space.n == actions
    assert env.observation_space.shape == (10, 10, channels) and env.observation_space.dtype == np.float32
    obs, _ = env.reset(seed=0)
    assert obs.dtype == np.float32 and set(np.unique(obs)) <= {0.0, 1.0} and obs.sum() > 0
    obs, reward, terminated, truncated, _ = env.step(0)
    assert env.observation_space.contains(obs) and isinstance(terminated, bool)
    with pytest.raises(ValueError, match="unknown MinAtar game"):
        envs.make_minatar_env("pong")


def test_seeded_vec_env_is_reproducible() -> None:
    first, second = (envs.make_minatar_vec_env("asterix", 2, seed=5) for _ in range(2))
    a, b = first.reset(), second.reset()
    for _ in range(20):
        actions = np.array([1, 3])
        a, *_ = first.step(actions)
        b, *_ = second.step(actions)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("method", ["ppo_v", "ppo_q", "top9@10"])
def test_methods_train_on_breakout(method: str) -> None:
    config = exp.Config(n_envs=2, n_steps=16, batch_size=16)
    model = exp.build_model(method, envs.make_minatar_vec_env("breakout", 2, seed=0), config, seed=0)
    assert isinstance(model.policy.features_extractor, exp.policy_kwargs()["features_extractor_class"])
    model.learn(64)
    if method != "ppo_v":
        assert model.advantage == "q_critic" and model.policy.value_net.out_features == 3
        assert model.gae_lambda == (0.95 if method == "ppo_q" else 0.8)
        assert str(model.objective) == ("mean" if method == "ppo_q" else "top9@10")


def test_env_passes_gymnasiums_check_env_and_pickles() -> None:
    """check_env failed (MinAtar's reset(seed=...) never seeds env.np_random) and pickle.dumps failed on the lambda
    of Gymnasium's DtypeObservation."""
    import pickle

    from gymnasium.utils.env_checker import check_env

    env = envs.make_minatar_env("breakout")
    with pytest.warns(UserWarning, match="different from the unwrapped"):
        check_env(env, skip_render_check=True)
    copy = pickle.loads(pickle.dumps(env))
    np.testing.assert_array_equal(copy.reset(seed=3)[0], env.reset(seed=3)[0])
    assert copy.spec == env.spec and isinstance(gym.make(env.spec), envs.MinAtarFloatObservation)


@pytest.mark.parametrize("game", ["breakout", "asterix", "space_invaders"])
def test_seeded_reset_gives_the_same_episode_after_any_history(game: str) -> None:
    """MinAtar kept the previous episode's last action across reset(seed=...), and the sticky-action rule repeated
    it: the same seed gave a different episode after a different history (9 of 40 seeds on Breakout)."""
    rng = np.random.default_rng(0)

    def episode(env, seed: int, actions: np.ndarray) -> list:
        steps = [env.reset(seed=seed)[0]]
        for action in actions:
            obs, reward, terminated, truncated, _ = env.step(int(action))
            steps += [obs, reward]
            if terminated or truncated:
                break
        return steps

    for seed in range(12):
        actions = rng.integers(0, 3, 100)
        used = envs.make_minatar_env(game)
        used.reset(seed=999)
        for _ in range(20):
            used.step(2)
        fresh = episode(envs.make_minatar_env(game), seed, actions)
        again = episode(used, seed, actions)
        assert len(fresh) == len(again) and all(np.array_equal(a, b) for a, b in zip(fresh, again, strict=True))


def test_rgb_array_frames_are_uint8() -> None:
    """MinAtar's rgb_array frames were float64 colours in [0, 1]; Gymnasium (RecordVideo, check_env) wants uint8."""
    env = envs.make_minatar_env("breakout", render_mode="rgb_array")
    env.reset(seed=0)
    with warnings.catch_warnings():
        # Gymnasium's passive checker under the wrapper warned "got float64" about the frames it returns as uint8.
        warnings.simplefilter("error")
        frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == (10, 10, 3)
    np.testing.assert_array_equal(frame, np.round(env.unwrapped.render() * 255))
    assert env.metadata["render_fps"] == 20


def _forget_minatar_ids() -> None:
    for env_id in [env_id for env_id in gym.registry if env_id.startswith("MinAtar/")]:
        del gym.registry[env_id]


@pytest.mark.usefixtures("minatar_registry")  # tests/conftest.py
def test_minatar_ids_are_registered_with_the_wrapper_once() -> None:
    """MinAtar's ids are registered (by the commands, through env_spec) as make_minatar_env makes its envs, the
    wrapper once; an id MinAtar registered itself stays MinAtar's, and make_minatar_env still wraps once then."""
    import minatar.gym

    from ordergrad_rl.envs.sb3_vec_env import env_spec

    chain = "<MinAtarFloatObservation<TimeLimit<OrderEnforcing<BaseEnv<MinAtar/Breakout-v1>>>>>"
    _forget_minatar_ids()
    assert env_spec("MinAtar/Breakout-v1").additional_wrappers == envs.minatar_spec("breakout").additional_wrappers
    env, made = gym.make("MinAtar/Breakout-v1"), envs.make_minatar_env("breakout")
    assert repr(env) == repr(made) == chain and env.spec == made.spec
    assert env.observation_space == made.observation_space and env.observation_space.dtype == np.float32
    np.testing.assert_array_equal(env.reset(seed=4)[0], made.reset(seed=4)[0])
    assert gym.spec("MinAtar/SpaceInvaders-v0").kwargs == {"game": "space_invaders", "use_minimal_action_set": False}
    assert repr(envs.make_minatar_env("breakout", max_episode_steps=None)) == chain.replace("TimeLimit<", "")[:-1]

    _forget_minatar_ids()
    minatar.gym.register_envs()  # a user's own registration: MinAtar's bool frames, left alone
    assert env_spec("MinAtar/Breakout-v1").additional_wrappers == ()
    assert gym.make("MinAtar/Breakout-v1").observation_space.dtype == bool
    assert repr(envs.make_minatar_env("breakout")) == chain


@pytest.mark.usefixtures("minatar_registry")
def test_the_commands_train_and_evaluate_on_minatar_ids(tmp_path, capsys) -> None:
    """``train --env MinAtar/Breakout-v1`` (also --eval-env, evaluate, compare) refused MinAtar's ids (MinAtar
    registers them only when asked); they are now make_minatar_env's float-frame envs, so a model of ``train`` and
    one trained on make_minatar_vec_env (``reproduce minatar``'s envs) evaluate and compare on the same id."""
    from ordergrad_rl.agents import OrderGradPPO
    from ordergrad_rl.cli import main

    _forget_minatar_ids()
    minatar_id = "MinAtar/Breakout-v1"
    train = ["train", "--algo", "ppo", "--env", minatar_id, "--objective", "mean", "--timesteps", "256"]
    train += ["--n-envs", "2", "--n-episodes", "2", "--seed", "0", "--quiet"]
    assert main([*train, "--eval-env", minatar_id, "--eval-freq", "32", "--eval-episodes", "1"]) == 0
    assert main([*train, "--save", str(tmp_path / "cli")]) == 0
    script = OrderGradPPO("MlpPolicy", envs.make_minatar_vec_env("breakout", 2, seed=0), n_episodes=2, objective="mean")
    script.save(tmp_path / "script")
    assert OrderGradPPO.load(tmp_path / "cli.zip").observation_space == script.observation_space
    assert main(["evaluate", str(tmp_path / "script.zip"), "--env", minatar_id, "--episodes", "2", "--quiet"]) == 0
    models = [str(tmp_path / "cli.zip"), str(tmp_path / "script.zip")]
    assert main(["compare", *models, "--env", minatar_id, "--episodes", "2", "--out", str(tmp_path), "--quiet"]) == 0
    capsys.readouterr()
