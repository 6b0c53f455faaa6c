"""The batched faces of SyntheticTailRisk agree with the single env, episode for episode."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.envs.sb3_vec_env import NativeVecEnv, TailRiskVecEnv, make_sb3_vec_env
from ordergrad_rl.envs.tailrisk_gym import SyntheticTailRiskVectorEnv

N_ENVS = 4
SHORT = {"traded_days": 20}  # 4 decisions per episode keeps the comparisons short


def assert_tree_equal(a: Any, b: Any, path: str = "info") -> None:
    """Recursive exact equality of (nested) info dicts, arrays and scalars."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            assert_tree_equal(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, np.ndarray) and a.dtype == object:
        assert b.dtype == object and a.shape == b.shape, path
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_tree_equal(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, f"{path}: {a.dtype} vs {getattr(b, 'dtype', b)}"
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def random_logits(rng: np.random.Generator, n: int) -> np.ndarray:
    # Wide enough that some logits leave the Box and get clipped.
    return rng.normal(0, 6, size=(n, 4)).astype(np.float32)


def test_make_vec_uses_native_vector_env() -> None:
    envs = gym.make_vec("SyntheticTailRisk-v0", num_envs=256)
    assert isinstance(envs.unwrapped, SyntheticTailRiskVectorEnv)
    assert envs.unwrapped.simulator.num_envs == 256 and envs.unwrapped.simulator.p == 0.10
    assert envs.metadata["autoreset_mode"] is AutoresetMode.NEXT_STEP
    deploy = gym.make_vec("SyntheticTailRiskDeploy-v0", num_envs=2, p=0.5).unwrapped
    assert (deploy.simulator.p, deploy.simulator.num_decisions) == (0.5, 32)
    assert deploy.single_observation_space == gym.make("SyntheticTailRisk-v0").observation_space
    obs, info = envs.reset(seed=0)
    assert obs.shape == (256, 14) and obs.dtype == np.float32 and info == {}
    assert envs.observation_space.contains(obs)


@pytest.mark.parametrize("env_id", ["SyntheticTailRisk-v0", "TargetSum-v0"])
def test_make_vec_refuses_a_time_limit_or_render_mode_the_native_batch_does_not_have(env_id: str) -> None:
    # Both reached the batch's own arguments, whose TypeError named TailRiskSimulator or a private TargetSum helper;
    # gym.make and the sync mode take them.
    with pytest.raises(ValueError, match=r"max_episode_steps must be None: the native batch .* has no TimeLimit"):
        gym.make_vec(env_id, num_envs=2, max_episode_steps=3)
    with pytest.raises(ValueError, match=r"render_mode must be None: the native batch .* does not render"):
        gym.make_vec(env_id, num_envs=2, render_mode="rgb_array")
    envs = gym.make_vec(env_id, num_envs=2, vectorization_mode="sync", max_episode_steps=3)  # the remedy named
    envs.reset(seed=0)
    action = np.full(envs.action_space.shape, 3, dtype=envs.action_space.dtype)  # TargetSum: the number 3, no <eos>
    truncated = [envs.step(action)[3].tolist() for _ in range(3)]
    assert truncated == [[False, False], [False, False], [True, True]]


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_native_vector_env_equals_sync_vector_env(mode: AutoresetMode) -> None:
    native = gym.make_vec("SyntheticTailRisk-v0", num_envs=N_ENVS, autoreset_mode=mode, **SHORT)
    sync = gym.make_vec(
        "SyntheticTailRisk-v0",
        num_envs=N_ENVS,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": mode},
        **SHORT,
    )
    rng = np.random.default_rng(0)
    (obs, info), (sync_obs, sync_info) = native.reset(seed=123), sync.reset(seed=123)
    np.testing.assert_array_equal(obs, sync_obs)
    assert info == sync_info == {}
    for _ in range(3 * 5):  # three episodes of 4 decisions (+1 reset step each in NEXT_STEP)
        actions = random_logits(rng, N_ENVS)
        a, b = native.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        assert_tree_equal(a[4], b[4])


def test_env_i_of_vector_env_replays_single_env_seeded_s_plus_i() -> None:
    vec = SyntheticTailRiskVectorEnv(N_ENVS, autoreset_mode="SameStep")
    singles = [gym.make("SyntheticTailRisk-v0") for _ in range(N_ENVS)]
    obs, _ = vec.reset(seed=10)
    for i, env in enumerate(singles):
        np.testing.assert_array_equal(obs[i], env.reset(seed=10 + i)[0])
    rng = np.random.default_rng(1)
    for step in range(2 * 16):  # two episodes: the second starts from unseeded resets
        actions = random_logits(rng, N_ENVS)
        obs, reward, done, _, info = vec.step(actions)
        for i, env in enumerate(singles):
            single_obs, single_reward, single_done, _, single_info = env.step(actions[i])
            assert reward[i] == single_reward and done[i] == single_done
            if single_done:
                np.testing.assert_array_equal(info["final_obs"][i], single_obs)
                np.testing.assert_array_equal(info["final_info"]["weights"][i], single_info["weights"])
                single_obs, _ = env.reset()
            else:
                assert info["wealth"][i] == single_info["wealth"]
            np.testing.assert_array_equal(obs[i], single_obs)
        assert done.all() == (step % 16 == 15)


def test_next_step_autoreset_semantics() -> None:
    envs = SyntheticTailRiskVectorEnv(2, **SHORT)
    envs.reset(seed=0)
    for _ in range(3):
        *_, info = envs.step(np.zeros((2, 4)))
        assert info["_weights"].all()
    obs, reward, terminated, truncated, info = envs.step(np.zeros((2, 4)))
    assert terminated.all() and not truncated.any() and (obs[:, 13] == 1.0).all()
    obs, reward, terminated, truncated, info = envs.step(np.full((2, 4), np.nan))  # ignored: reset step
    assert info == {} and (reward == 0).all() and not terminated.any() and (obs[:, 13] == 0).all()


def test_partial_reset_and_disabled_mode_match_sync() -> None:
    kwargs = {"autoreset_mode": AutoresetMode.DISABLED, **SHORT}
    native = gym.make_vec("SyntheticTailRisk-v0", num_envs=3, **kwargs)
    sync = gym.make_vec(
        "SyntheticTailRisk-v0",
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
        **SHORT,
    )
    for env in (native, sync):
        env.reset(seed=4)
    rng = np.random.default_rng(2)
    mask = np.array([True, False, True])
    for step in range(12):
        if step == 1:  # put env 1 out of phase with the others
            outs = [env.reset(seed=[None, 99, None], options={"reset_mask": ~mask}) for env in (native, sync)]
            np.testing.assert_array_equal(outs[0][0], outs[1][0])
        actions = random_logits(rng, 3)
        a, b = native.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        assert_tree_equal(a[4], b[4])
        done = a[2]
        if done.any():
            with pytest.raises(RuntimeError, match="reset_mask"):
                native.step(actions)
            outs = [env.reset(options={"reset_mask": done.copy()}) for env in (native, sync)]
            np.testing.assert_array_equal(outs[0][0], outs[1][0])


def test_next_step_with_out_of_phase_envs_matches_sync() -> None:
    native = gym.make_vec("SyntheticTailRisk-v0", num_envs=3, **SHORT)
    sync = gym.make_vec("SyntheticTailRisk-v0", num_envs=3, vectorization_mode="sync", **SHORT)
    for env in (native, sync):
        env.reset(seed=8)
    rng = np.random.default_rng(3)
    for step in range(14):
        if step == 2:
            for env in (native, sync):
                env.reset(options={"reset_mask": np.array([False, True, False])})
        actions = random_logits(rng, 3)
        a, b = native.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        assert_tree_equal(a[4], b[4])


def test_vector_env_bad_input() -> None:
    envs = SyntheticTailRiskVectorEnv(2)
    envs.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        envs.step(np.zeros(4))
    with pytest.raises(ValueError, match="NaN"):
        envs.step(np.array([[0, 0, 0, 0], [0, np.nan, 0, 0]]))
    with pytest.raises(ValueError, match="reset_mask"):
        envs.reset(options={"reset_mask": np.array([1, 0])})
    with pytest.raises(ValueError, match="autoreset_mode"):
        SyntheticTailRiskVectorEnv(2, autoreset_mode="sometimes")


# ---------------------------------------------------------------------------- Stable-Baselines3
def test_sb3_vec_env_equals_dummy_vec_env() -> None:
    native = TailRiskVecEnv(N_ENVS, **SHORT)
    dummy = DummyVecEnv([lambda: gym.make("SyntheticTailRisk-v0", **SHORT) for _ in range(N_ENVS)])
    for venv in (native, dummy):
        venv.seed(21)
    np.testing.assert_array_equal(native.reset(), dummy.reset())
    rng = np.random.default_rng(4)
    for step in range(2 * 4):
        actions = random_logits(rng, N_ENVS)
        obs, reward, done, infos = native.step(actions)
        d_obs, d_reward, d_done, d_infos = dummy.step(actions)
        np.testing.assert_array_equal(obs, d_obs)
        np.testing.assert_array_equal(done, d_done)
        assert reward.dtype == np.float64
        np.testing.assert_array_equal(reward.astype(np.float32), d_reward)
        for info, d_info in zip(infos, d_infos, strict=True):
            assert_tree_equal(info, d_info)
        assert done.all() == (step % 4 == 3)
        if done.all():
            assert all(info["TimeLimit.truncated"] is False and "terminal_observation" in info for info in infos)


def test_make_sb3_vec_env() -> None:
    venv = make_sb3_vec_env("SyntheticTailRisk-v0", n_envs=8, seed=3, env_kwargs={"p": 0.5})
    assert isinstance(venv, VecMonitor) and isinstance(venv.unwrapped, TailRiskVecEnv)
    assert venv.get_attr("p") == [0.5] * 8 and venv.get_attr("num_decisions", indices=[0]) == [16]
    assert venv.unwrapped.spec.id == "SyntheticTailRisk-v0"
    obs = venv.reset()
    twin = make_sb3_vec_env("SyntheticTailRisk-v0", n_envs=8, seed=3, env_kwargs={"p": 0.5})
    np.testing.assert_array_equal(obs, twin.reset())
    totals = np.zeros(8)
    for _ in range(16):
        obs, reward, done, infos = venv.step(np.zeros((8, 4), dtype=np.float32))
        totals += reward
    assert done.all()
    for total, info in zip(totals, infos, strict=True):
        assert info["episode"]["l"] == 16 and info["episode"]["r"] == pytest.approx(total, rel=1e-5)
        assert total == pytest.approx(np.log(info["wealth"]), abs=1e-9)
    deploy = make_sb3_vec_env("SyntheticTailRiskDeploy-v0", n_envs=2).unwrapped
    assert (deploy.simulator.p, deploy.simulator.num_decisions) == (0.35, 32)
    with pytest.raises(ValueError, match="simulator parameter"):
        venv.set_attr("p", 0.1)
    for env_id in ("RiskyBandit-v0", "CartPole-v1"):
        other = make_sb3_vec_env(env_id, n_envs=2, seed=0)
        assert isinstance(other, DummyVecEnv)
    reference = make_vec_env("CartPole-v1", n_envs=2, seed=0)
    np.testing.assert_array_equal(make_sb3_vec_env("CartPole-v1", n_envs=2, seed=0).reset(), reference.reset())


def test_make_sb3_vec_env_with_a_render_mode_renders_as_sb3s_make_vec_env_does() -> None:
    # The native batch does not render: a render_mode reached it and was refused, where SB3's make_vec_env(id,
    # env_kwargs={"render_mode": ...}) builds envs that render. Like max_episode_steps, it now gets SB3's.
    venv = make_sb3_vec_env("TargetSum-v0", 2, seed=0, env_kwargs={"render_mode": "ansi"})
    assert isinstance(venv, DummyVecEnv) and venv.get_attr("render_mode") == ["ansi", "ansi"]
    venv.reset()
    assert venv.env_method("render", indices=0)[0].startswith("numbers ")
    assert isinstance(make_sb3_vec_env("TargetSum-v0", 2, env_kwargs={"render_mode": None}).unwrapped, NativeVecEnv)


def test_make_sb3_vec_env_takes_gym_makes_disable_env_checker_as_sb3s_make_vec_env_does() -> None:
    # It reached the native batch's arguments (TypeError naming TailRiskSimulator), where SB3's make_vec_env passes it
    # to gym.make; the commands' --env-kwargs take it, so evaluate --env SyntheticTailRisk-v0 failed with it.
    venv = make_sb3_vec_env("SyntheticTailRisk-v0", 2, seed=0, env_kwargs={"disable_env_checker": True, "p": 0.5})
    assert isinstance(venv.unwrapped, TailRiskVecEnv) and venv.get_attr("p") == [0.5, 0.5]
    spec = venv.get_attr("spec", [0])[0]
    assert spec.disable_env_checker is True and spec.kwargs == {"p": 0.5, "traded_days": 80}
    assert gym.make(spec).spec.disable_env_checker is True
    np.testing.assert_array_equal(venv.reset(), make_sb3_vec_env("SyntheticTailRisk-v0", 2, seed=0).reset())
    target_sum = make_sb3_vec_env("TargetSum-v0", 2, env_kwargs={"disable_env_checker": False})
    assert isinstance(target_sum.unwrapped, NativeVecEnv)


def test_a_native_batch_registered_as_a_class_is_used() -> None:
    # gym.register takes the vector entry point as a class too; only a "module:Class" string was recognized, so a
    # user's native batch registered that way ran as a DummyVecEnv of single envs.
    from ordergrad_rl.envs.sb3_vec_env import has_native_batch
    from ordergrad_rl.envs.tailrisk_gym import SyntheticTailRiskEnv

    gym.register("ClassEntryTailRisk-v0", SyntheticTailRiskEnv, vector_entry_point=SyntheticTailRiskVectorEnv)
    try:
        assert has_native_batch("ClassEntryTailRisk-v0")
        assert isinstance(make_sb3_vec_env("ClassEntryTailRisk-v0", 4, seed=0).unwrapped, TailRiskVecEnv)
    finally:
        del gym.registry["ClassEntryTailRisk-v0"]


def test_sb3_ppo_runs_on_native_vec_env() -> None:
    from stable_baselines3 import PPO

    venv = make_sb3_vec_env("SyntheticTailRisk-v0", n_envs=16, seed=0)
    model = PPO("MlpPolicy", venv, n_steps=16, batch_size=128, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=2 * 16 * 16)
    assert len(model.ep_info_buffer) == 2 * 16


@pytest.mark.parametrize("mode", ["NextStep", "SameStep"])
def test_agents_train_on_a_native_make_vec_as_on_the_id(mode: str) -> None:
    # gym.make_vec of a native id failed in SB3's env patching ("we expect OpenAI Gym to be installed"); it is the
    # batch its id builds, so training on it is training on the id, whatever its autoreset mode.
    from ordergrad_rl.agents import OrderGradPPO, RiskEvalCallback

    kwargs = {"n_episodes": 8, "n_epochs": 1, "seed": 0, "device": "cpu"}
    on_id = OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", **kwargs).learn(8 * 16)
    envs = gym.make_vec("SyntheticTailRisk-v0", num_envs=8, autoreset_mode=mode)
    on_vec = OrderGradPPO("MlpPolicy", envs, **kwargs)
    assert on_vec.n_envs == 8 and on_vec.hparams()["env"] == "SyntheticTailRisk-v0"
    on_vec.learn(8 * 16)
    np.testing.assert_array_equal(on_vec.rollout_buffer.episode_returns, on_id.rollout_buffer.episode_returns)
    for a, b in zip(on_vec.policy.parameters(), on_id.policy.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # make_vec's own keys are not arguments of the env: the spec the agent reads rebuilds a single env.
    gym.make(on_vec.get_env().get_attr("spec", [0])[0])
    callback = RiskEvalCallback(gym.make_vec("SyntheticTailRisk-v0", num_envs=2), n_eval_episodes=2, eval_freq=None)
    assert callback.eval_env.num_envs == 2


def test_load_and_set_env_take_a_native_make_vec(tmp_path) -> None:
    # They wrap their env with SB3's _wrap_env, which failed on a Gymnasium vector env as the constructor did.
    from ordergrad_rl.agents import OrderGradPPO

    OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", n_episodes=8, device="cpu").save(tmp_path / "model.zip")
    model = OrderGradPPO.load(tmp_path / "model.zip", env=gym.make_vec("SyntheticTailRisk-v0", num_envs=8))
    assert model.n_envs == 8 and model.get_env().get_attr("spec", [0])[0].id == "SyntheticTailRisk-v0"
    model.set_env(gym.make_vec("SyntheticTailRisk-v0", num_envs=8))
    with pytest.raises(ValueError, match=r"Gymnasium vector env \(CartPoleVectorEnv\).*make_vec_env"):
        model.set_env(gym.make_vec("CartPole-v1", num_envs=8))
