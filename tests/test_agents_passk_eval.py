"""PassAtKEvalCallback / sample_successes: known success rates, lengths, contexts, tags; ``evaluate --pass-at-k``."""

from __future__ import annotations

import json
import shlex
import warnings

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.callbacks import StopTrainingOnNoModelImprovement, StopTrainingOnRewardThreshold
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
from test_agents_channels import Capture  # tests/ is on sys.path under pytest
from test_readme import command_lines, smoke_learn  # noqa: F401  (a fixture)

from ordergrad_rl import pass_at_k
from ordergrad_rl.agents import (
    OrderGradMaskablePPO,
    OrderGradREINFORCE,
    PassAtKEvalCallback,
    RiskEvalCallback,
    sample_successes,
)
from ordergrad_rl.cli import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")

#: Success probability of each problem, whatever the policy does.
RATES = np.array([0.05, 0.5, 0.9])


class SeededCoins(gym.Env):
    """Problem ``c`` is solved with probability ``RATES[c]`` at the first step (then the episode ends); otherwise the
    episode goes on for two more steps and fails. Correct episodes last 1 step, incorrect ones 3. The problem is
    drawn at reset with ``np_random`` (so the seed rule poses it with a reset seed)."""

    observation_space = gym.spaces.Box(0.0, 1.0, (3,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.problem = int(self.np_random.integers(3)) if options is None else int(options["problem"])
        self.t = 0
        return np.eye(3, dtype=np.float32)[self.problem], {}

    def step(self, action):
        self.t += 1
        if self.t == 1 and self.np_random.random() < RATES[self.problem]:
            return np.eye(3, dtype=np.float32)[self.problem], 1.0, True, False, {"is_success": True}
        done = self.t >= 3
        return np.eye(3, dtype=np.float32)[self.problem], 0.0, done, False, ({"is_success": False} if done else {})


class Coins(SeededCoins):
    """The same, declaring its contexts (the options rule)."""

    context_key = "problem"
    n_contexts = len(RATES)


def model_on(env_class) -> OrderGradREINFORCE:
    return OrderGradREINFORCE("MlpPolicy", DummyVecEnv([env_class] * 4), objective="mean", n_episodes=8, seed=0)


def test_callback_logs_the_unbiased_curve_and_lengths() -> None:
    model = model_on(Coins)
    capture = Capture()
    model.set_logger(Logger(folder=None, output_formats=[capture]))
    eval_env = DummyVecEnv([Coins] * 5)
    eval_env.seed(0)
    callback = PassAtKEvalCallback(eval_env, n_samples=400, ks=[1, 2, 4], eval_freq=None)
    callback.init_callback(model)
    curve = callback.evaluate()
    result = callback.last_result
    assert result is not None and list(result.contexts) == [0, 1, 2] and result.success.shape == (3, 400)
    # Each problem's success rate is its coin's, within 4 standard errors.
    rates = result.success.mean(1)
    assert np.all(np.abs(rates - RATES) < 4 * np.sqrt(RATES * (1 - RATES) / 400) + 1e-9), rates
    # The curve is the unbiased estimator of the sampled counts, and near 1 - (1 - p)^k.
    for k in (1, 2, 4):
        assert curve[k] == pytest.approx(pass_at_k(result.n_correct, 400, k).mean())
        assert curve[k] == pytest.approx(np.mean(1 - (1 - RATES) ** k), abs=0.06)
    assert np.all(result.lengths[result.success] == 1) and np.all(result.lengths[~result.success] == 3)
    logged = capture.rows[-1]
    assert logged["eval_pass@k/k=4"] == curve[4]
    assert (logged["eval_pass@k/length_correct"], logged["eval_pass@k/length_incorrect"]) == (1.0, 3.0)


def test_seed_rule_contexts_and_periodic_evaluation() -> None:
    with pytest.raises(ValueError, match="does not declare its contexts"):
        PassAtKEvalCallback(DummyVecEnv([SeededCoins]), n_samples=4)
    callback = PassAtKEvalCallback(DummyVecEnv([SeededCoins] * 3), contexts=[11, 12], n_samples=8, eval_freq=2)
    model = model_on(SeededCoins)
    model.learn(40, callback=callback)
    assert len(callback.evaluations_curves) >= 2 and set(callback.last_curve) == {1, 2, 4, 8}
    # A seed poses one problem to all its samples: the success rates are those of the seeds' problems (random
    # problems would give about the average rate, 0.48, for both).
    seeds = {}
    for seed in range(50):
        problem = int(np.random.default_rng(seed).integers(3))  # what SeededCoins.reset(seed=seed) draws
        seeds.setdefault(problem, seed)
    result = sample_successes(model, DummyVecEnv([SeededCoins] * 2), [seeds[0], seeds[2]], 60)
    rates = result.success.mean(1)
    assert rates[0] < 0.25 and rates[1] > 0.7, rates


def test_a_vec_normalize_eval_env_gets_the_training_statistics() -> None:
    # SB3's EvalCallback syncs a VecNormalize eval env with the training env before each evaluation; the policy acted
    # on observations normalized by the eval env's own statistics (never updated with training=False) instead.
    model = OrderGradREINFORCE("MlpPolicy", VecNormalize(DummyVecEnv([Coins] * 4)), objective="mean", n_episodes=8)
    eval_env = VecNormalize(DummyVecEnv([Coins] * 2), training=False)
    model.learn(40, callback=PassAtKEvalCallback(eval_env, n_samples=2, eval_freq=2))
    assert np.array_equal(eval_env.obs_rms.mean, model.get_vec_normalize_env().obs_rms.mean)
    assert np.any(eval_env.obs_rms.mean != 0)


def test_a_vec_normalize_eval_env_of_a_plain_training_env_warns() -> None:
    """SB3's EvalCallback warns when the training and eval envs differ in type; ours said nothing when the eval env
    alone was a VecNormalize, whose own running statistics then normalized the policy's observations."""
    model = OrderGradREINFORCE("MlpPolicy", DummyVecEnv([Coins] * 4), objective="mean", n_episodes=8)
    for callback_class in (PassAtKEvalCallback, RiskEvalCallback):
        callback = callback_class(VecNormalize(DummyVecEnv([Coins] * 2)), eval_freq=None)
        with pytest.warns(UserWarning, match="the eval env is wrapped in VecNormalize and the training env is not"):
            callback.init_callback(model)
    # Shown at the user's learn call (SB3's learn initializes the callback), not in the library's _init_callback.
    with pytest.warns(UserWarning, match="the eval env is wrapped in VecNormalize") as records:
        model.learn(8, callback=RiskEvalCallback(VecNormalize(DummyVecEnv([Coins])), eval_freq=None))
    assert {record.filename for record in records if "VecNormalize" in str(record.message)} == {__file__}
    normalized = OrderGradREINFORCE("MlpPolicy", VecNormalize(DummyVecEnv([Coins] * 4)), objective="mean", n_episodes=8)
    for callback, trained in (
        (RiskEvalCallback(VecNormalize(DummyVecEnv([Coins]))), normalized),
        (RiskEvalCallback(Coins()), model),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            callback.init_callback(trained)


class MaskedCoins(Coins):
    """Action 1 is always masked and fails the episode: every episode of a policy that respects the masks is a
    success."""

    def action_masks(self) -> np.ndarray:
        return np.array([True, False])

    def step(self, action):
        self.t += 1
        done = int(action) == 1 or self.t >= 3
        return np.eye(3, dtype=np.float32)[self.problem], 0.0, done, False, {"is_success": int(action) == 0}


def test_maskable_model_acts_with_the_masks() -> None:
    model = OrderGradMaskablePPO("MlpPolicy", DummyVecEnv([MaskedCoins]), objective="mean", n_episodes=4, seed=0)
    result = sample_successes(model, DummyVecEnv([MaskedCoins] * 2), [0, 1], 20)
    assert result.success.all() and np.all(result.lengths == 3)  # a sampled, unmasked action 1 fails (p = 7/8)
    with pytest.raises(ValueError, match="action_masks().*ActionMasker"):
        sample_successes(model, DummyVecEnv([Coins]), [0], 2)


class Alternate(Coins):
    """The same observation at every step of problem ``c``'s ``c + 1`` steps; success needs actions 0, 1, 0, ...
    (a policy with memory)."""

    def step(self, action):
        right = int(action) == self.t % 2
        self.t += 1
        done = not right or self.t > self.problem
        info = {"is_success": right and self.t > self.problem}
        return np.eye(3, dtype=np.float32)[self.problem], 0.0, done, False, info


class CountingModel:
    """A stand-in for a recurrent model: its state counts the steps of each env's episode (reset at
    ``episode_start``, as an LSTM's), and it plays the count's parity."""

    def predict(self, obs, state=None, episode_start=None, deterministic=False):
        state = np.zeros(len(obs), dtype=np.int64) if state is None else np.where(episode_start, 0, state)
        return state % 2, state + 1


def test_recurrent_model_carries_its_state_and_resets_it() -> None:
    # Two envs, episodes of 1 to 3 steps: the envs start episodes at different steps.
    result = sample_successes(CountingModel(), DummyVecEnv([Alternate] * 2), [0, 1, 2], 5)
    assert result.success.all() and np.all(result.lengths == np.array([[1], [2], [3]]))


def test_seed_is_deprecated_and_changes_nothing() -> None:
    # seed once seeded fresh dynamics streams of the seed rule; the rule now keeps each env's own stream, so the
    # generator drew nothing: the same envs sample the same episodes with any seed, and passing one warns.
    model = model_on(SeededCoins)

    def seeded_envs() -> DummyVecEnv:
        venv = DummyVecEnv([SeededCoins] * 2)
        venv.seed(0)  # the dynamics streams, which the seed rule keeps
        return venv

    plain = sample_successes(model, seeded_envs(), [3, 4], 20, deterministic=True)
    with pytest.warns(DeprecationWarning, match="seed=.*no effect"):
        seeded = sample_successes(model, seeded_envs(), [3, 4], 20, deterministic=True, seed=7)
    np.testing.assert_array_equal(plain.success, seeded.success)
    np.testing.assert_array_equal(plain.lengths, seeded.lengths)


def test_errors() -> None:
    class NoSuccess(Coins):
        def step(self, action):
            obs, reward, terminated, truncated, info = super().step(action)
            info.pop("is_success", None)
            return obs, reward, terminated, truncated, {"score": reward}

    model = model_on(Coins)
    with pytest.raises(ValueError, match=r"info\['is_success'\].*'score'"):
        sample_successes(model, DummyVecEnv([NoSuccess]), [0], 2)
    with pytest.raises(ValueError, match="contexts must be in \\[0, 3\\)"):
        sample_successes(model, DummyVecEnv([Coins]), [3], 2)
    with pytest.raises(ValueError, match="ks must be"):
        PassAtKEvalCallback(DummyVecEnv([Coins]), n_samples=4, ks=[8])


def test_an_episode_that_never_ends_is_an_error(monkeypatch) -> None:
    """Problem 2 never ends (no time limit): sample_successes waited forever; training's bound stops it."""
    import ordergrad_rl.agents.common.buffers

    class Endless(Coins):
        def step(self, action):
            if self.problem != 2:
                return super().step(action)
            self.t += 1
            if self.t > 1_000:
                raise RuntimeError("still waiting for the episode to end")
            return np.eye(3, dtype=np.float32)[2], 0.0, False, False, {}

    monkeypatch.setattr(ordergrad_rl.agents.common.buffers, "MAX_EPISODE_STEPS", 50)
    with pytest.raises(ValueError, match=r"the episode of eval env \d has not ended after 50 steps"):
        sample_successes(model_on(Coins), DummyVecEnv([Endless] * 2), [0, 2], 2)


def test_evaluate_command_pass_at_k(tmp_path, capsys) -> None:
    model = OrderGradREINFORCE("MlpPolicy", "TargetSum-v0", objective="top2@4", n_episodes=16, group_size=8, seed=0)
    model.save(tmp_path / "m.zip")
    argv = ["evaluate", str(tmp_path / "m.zip"), "--env", "TargetSum-v0", "--env-kwargs", "split=test", "n_test=12"]
    argv += ["--pass-at-k", "8", "--contexts", "5", "--quiet", "--json", str(tmp_path / "p.json")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "8 samples per context, 5 contexts" in out and "| k " in out
    payload = json.loads((tmp_path / "p.json").read_text())
    assert list(payload["pass_at_k"]) == ["1", "2", "4", "8"] and len(payload["n_correct"]) == 5
    assert payload["env_kwargs"] == {"split": "test", "n_test": 12}
    assert main([*argv[:-2], "--contexts", "13"]) == 2
    assert "has 12 contexts" in capsys.readouterr().err


README_SECTION = "Groups (GRPO, MaxPO, prompt-conditional OrderGrad), reward channels and pass@k"


def test_readme_group_commands_run_as_pasted(tmp_path, monkeypatch, smoke_learn) -> None:  # noqa: F811
    monkeypatch.chdir(tmp_path)
    commands = command_lines(README_SECTION)
    assert [c.split()[1] for c in commands] == ["train", "evaluate"]
    for command in commands:
        assert main(shlex.split(command)[1:]) == 0, command
    payload = json.loads((tmp_path / "passk.json").read_text())
    assert len(payload["n_correct"]) == 100 and payload["n_samples"] == 64


class Tunable(Coins):
    """Every problem is solved at the first step with probability ``rate`` (a class attribute the test sets between
    evaluations), with reward 1; otherwise the episode fails after 3 steps, reward 0."""

    rate = 0.0

    def step(self, action):
        self.t += 1
        if self.t == 1 and self.np_random.random() < self.rate:
            return np.eye(3, dtype=np.float32)[self.problem], 1.0, True, False, {"is_success": True}
        done = self.t >= 3
        return np.eye(3, dtype=np.float32)[self.problem], 0.0, done, False, ({"is_success": False} if done else {})


def tunable_env() -> DummyVecEnv:
    env = DummyVecEnv([Tunable] * 2)
    env.seed(0)
    return env


def test_the_best_model_by_pass_at_k_is_saved(tmp_path, monkeypatch) -> None:
    """best_model_save_path and best_metric="pass@<k>" as SB3's EvalCallback selects by mean reward (a TypeError
    before): the model is saved when the pass@k improves, and only then."""
    model = model_on(Coins)
    model.set_logger(Logger(folder=None, output_formats=[]))
    callback = PassAtKEvalCallback(
        tunable_env(), n_samples=8, eval_freq=None, best_metric="pass@2", best_model_save_path=str(tmp_path)
    )
    callback.init_callback(model)
    best = tmp_path / "best_model.zip"
    for rate, saved in ((0.25, True), (0.0, False), (1.0, True)):
        monkeypatch.setattr(Tunable, "rate", rate)
        best.unlink(missing_ok=True)
        curve = callback.evaluate()
        pass_at_2 = pass_at_k(callback.last_result.n_correct, 8, 2).mean()
        assert callback.last_mean_reward == pytest.approx(pass_at_2) == pytest.approx(curve[2])
        assert best.exists() == saved, rate
    assert callback.best_mean_reward == 1.0
    assert OrderGradREINFORCE.load(best).objective == model.objective
    for bad in ("pass@0", "pass@9", "mean", "pass@2.5", 2):
        with pytest.raises(ValueError, match=r"best_metric must be 'pass@<k>' with k in \[1, n_samples=8\]"):
            PassAtKEvalCallback(tunable_env(), n_samples=8, best_metric=bad)


def test_evaluations_npz_has_sb3s_keys_and_the_curve(tmp_path) -> None:
    """log_path writes evaluations.npz as SB3's EvalCallback (a TypeError before): one row per evaluation of the
    episodes' returns, lengths and successes, plus the pass@k curve."""
    model = model_on(Coins)
    model.set_logger(Logger(folder=None, output_formats=[]))
    callback = PassAtKEvalCallback(
        tunable_env(), contexts=[0, 2], n_samples=4, ks=[1, 4], eval_freq=None, log_path=str(tmp_path / "logs")
    )
    callback.init_callback(model)
    Tunable.rate = 0.5
    try:
        callback.evaluate()
        callback.num_timesteps = 16  # as after some training
        callback.evaluate()
    finally:
        Tunable.rate = 0.0
    with np.load(tmp_path / "logs" / "evaluations.npz") as saved:
        data = dict(saved)
    assert set(data) == {"timesteps", "results", "ep_lengths", "successes", "ks", "pass_at_k"}
    assert list(data["timesteps"]) == [0, 16] and list(data["ks"]) == [1, 4]
    assert data["results"].shape == data["ep_lengths"].shape == data["successes"].shape == (2, 8)
    result = callback.last_result
    assert np.array_equal(data["successes"][-1], result.success.ravel())
    assert np.array_equal(data["results"][-1], result.success.ravel().astype(float))  # reward 1 for a success
    assert np.array_equal(data["ep_lengths"][-1], np.where(result.success.ravel(), 1, 3))
    assert list(data["pass_at_k"][-1]) == [callback.last_curve[1], callback.last_curve[4]]
    assert data["pass_at_k"].shape == (2, 2)


def test_sb3s_stop_callbacks_act_on_the_pass_at_k(monkeypatch) -> None:
    """StopTrainingOnRewardThreshold (callback_on_new_best) and StopTrainingOnNoModelImprovement (callback_after_eval)
    read last_mean_reward / best_mean_reward: they now hold the selection score, pass@k."""
    monkeypatch.setattr(Tunable, "rate", 1.0)
    model = model_on(Coins)
    threshold = StopTrainingOnRewardThreshold(reward_threshold=0.99)
    callback = PassAtKEvalCallback(
        tunable_env(), n_samples=4, eval_freq=1, best_metric="pass@4", callback_on_new_best=threshold
    )
    model.learn(10_000, callback=callback)
    assert len(callback.evaluations_timesteps) == 1 and callback.best_mean_reward == 1.0
    assert model.num_timesteps < 100  # stopped at the first evaluation
    monkeypatch.setattr(Tunable, "rate", 0.0)
    no_improvement = StopTrainingOnNoModelImprovement(max_no_improvement_evals=2)
    callback = PassAtKEvalCallback(tunable_env(), n_samples=4, eval_freq=1, callback_after_eval=no_improvement)
    model.learn(10_000, callback=callback)
    # as SB3's: the first evaluation improves on -inf, training stops at the third without improvement
    assert len(callback.evaluations_timesteps) == 4 and callback.best_mean_reward == 0.0


def test_id_options_with_an_env_passed_are_refused() -> None:
    """n_eval_envs and seed build the env of an id: PassAtKEvalCallback(DummyVecEnv(...), n_eval_envs=8, seed=0)
    sampled on the env as it was, both ignored silently (n_eval_envs defaulted to 64, so a user's value could not be
    told from the default)."""
    for kwargs in ({"n_eval_envs": 8}, {"seed": 0}):
        with pytest.raises(ValueError, match="n_eval_envs and seed build the eval env of an id; the DummyVecEnv"):
            PassAtKEvalCallback(DummyVecEnv([Coins] * 2), **kwargs)
    assert PassAtKEvalCallback(DummyVecEnv([Coins] * 2), n_eval_envs=2).eval_env.num_envs == 2  # nothing ignored
    assert PassAtKEvalCallback("TargetSum-v0").eval_env.num_envs == 64
    assert PassAtKEvalCallback("TargetSum-v0", n_eval_envs=3, seed=1).eval_env.num_envs == 3
    assert RiskEvalCallback(Coins(), n_eval_envs=1).eval_env.num_envs == 1


class FixedStartSteps(gym.Env):
    """Five steps from one start, whatever the seed; each step pays the action: a return is a function of the
    actions alone (with gSDE's noise, of the exploration matrix alone). Solved when the return is positive."""

    observation_space = gym.spaces.Box(0.0, 5.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t, self.total = 0, 0.0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        self.t += 1
        self.total += float(action[0])
        done = self.t >= 5
        return (
            np.full(1, self.t, np.float32),
            float(action[0]),
            done,
            False,
            ({"is_success": self.total > 0} if done else {}),
        )


def gsde_model(use_sde: bool = True):
    from ordergrad_rl import OrderGradPPO

    kwargs = {"log_std_init": -2.0}  # actions inside the bounds: each noise draw gives its own return
    env = DummyVecEnv([FixedStartSteps] * 2)
    return OrderGradPPO("MlpPolicy", env, "mean", n_episodes=4, use_sde=use_sde, policy_kwargs=kwargs, seed=0)


@pytest.mark.parametrize("n_envs", [1, 3])
def test_sampled_evaluation_of_a_gsde_policy_draws_each_episodes_noise(n_envs: int) -> None:
    # SB3's evaluate_policy keeps one exploration matrix for every episode: from one start, all the sampled episodes
    # of a gSDE policy returned the same value (std 0), which a risk profile took for independent draws.
    import torch as th

    from ordergrad_rl.agents.common.evaluation import evaluate_episodes

    model = gsde_model()
    dist = model.policy.action_dist
    kept = dist.exploration_mat, dist.exploration_matrices
    rng = th.get_rng_state()
    venv = DummyVecEnv([FixedStartSteps] * n_envs)
    returns, _ = evaluate_episodes(model, venv, n_eval_episodes=6, deterministic=False, return_episode_rewards=True)
    assert len(set(returns)) == 6
    # The policy's matrices are put back; the matrices are drawn from torch's random state, as SB3 samples actions
    # (the callbacks put it back: test_a_sampled_gsde_eval_callback_leaves_training_as_it_was).
    assert dist.exploration_mat is kept[0] and dist.exploration_matrices is kept[1]
    assert not th.equal(th.get_rng_state(), rng)
    result = sample_successes(model, DummyVecEnv([FixedStartSteps] * n_envs), [0], 6)
    assert len(set(result.returns[0])) == 6
    assert dist.exploration_mat is kept[0]


def test_two_sampled_gsde_evaluations_in_a_row_draw_their_own_matrices() -> None:
    # Each evaluation put torch's random state back at its end, so the next one drew the same matrices: from a fixed
    # start, a second evaluate_episodes (or sample_successes) repeated the first's returns, and pooling them counted
    # each noise draw twice. Seeding torch before each still repeats an evaluation, as SB3's sampling does.
    import torch as th

    from ordergrad_rl.agents.common.evaluation import evaluate_episodes

    model = gsde_model()
    kwargs = {"n_eval_episodes": 4, "deterministic": False, "return_episode_rewards": True}

    def evaluate() -> list[float]:
        return evaluate_episodes(model, DummyVecEnv([FixedStartSteps] * 2), **kwargs)[0]

    def successes() -> list[float]:
        return list(sample_successes(model, DummyVecEnv([FixedStartSteps] * 2), [0], 4).returns[0])

    for run in (evaluate, successes):
        first, second = run(), run()
        assert not set(first) & set(second)
        th.manual_seed(1)
        seeded = run()
        th.manual_seed(1)
        assert run() == seeded


def test_greedy_and_non_gsde_evaluations_are_sb3s() -> None:
    import torch as th
    from stable_baselines3.common.evaluation import evaluate_policy

    from ordergrad_rl.agents.common.evaluation import evaluate_episodes

    for model, deterministic in ((gsde_model(), True), (gsde_model(use_sde=False), False)):
        scores = []
        for evaluate in (evaluate_episodes, evaluate_policy):
            th.manual_seed(3)
            venv = DummyVecEnv([FixedStartSteps] * 2)
            kwargs = {"n_eval_episodes": 4, "deterministic": deterministic, "return_episode_rewards": True}
            scores.append(evaluate(model, venv, **kwargs)[0])
        assert scores[0] == scores[1]


def test_a_gsde_policy_samples_inside_a_policy_actor_block() -> None:
    from ordergrad_rl.agents.common.evaluation import PolicyActor

    venv = DummyVecEnv([FixedStartSteps])
    obs = venv.reset()
    with pytest.raises(RuntimeError, match=r"with PolicyActor\(...\) as actor"):
        PolicyActor(gsde_model(), venv, deterministic=False).act(obs)
    PolicyActor(gsde_model(), venv, deterministic=True).act(obs)  # greedy: nothing to draw


def test_a_sampled_gsde_eval_callback_leaves_training_as_it_was() -> None:
    import torch as th

    params = []
    callback = RiskEvalCallback(DummyVecEnv([FixedStartSteps]), eval_freq=10, n_eval_episodes=3, deterministic=False)
    for with_callback in (None, callback):
        model = gsde_model()
        model.learn(60, callback=with_callback)
        params.append(th.nn.utils.parameters_to_vector(model.policy.parameters()))
    assert th.equal(params[0], params[1])
    assert len(set(callback.last_returns)) == 3


def test_ks_in_any_order_label_the_curve_in_evaluations_npz(tmp_path) -> None:
    """ks=[4, 1] was stored as given in evaluations.npz while each row of pass_at_k ran over the sorted k (pass@1
    under the label 4); and ks of no integers (1.5, '2') were taken, to fail at the first evaluation, mid-training."""
    model = model_on(Coins)
    model.set_logger(Logger(folder=None, output_formats=[]))
    callback = PassAtKEvalCallback(
        tunable_env(), contexts=[0, 2], n_samples=4, ks=[4, 1, 4], eval_freq=None, log_path=str(tmp_path / "logs")
    )
    callback.init_callback(model)
    Tunable.rate = 0.5
    try:
        curve = callback.evaluate()
    finally:
        Tunable.rate = 0.0
    with np.load(tmp_path / "logs" / "evaluations.npz") as saved:
        labelled = dict(zip(saved["ks"].tolist(), saved["pass_at_k"][-1].tolist(), strict=True))
    assert labelled == curve and curve[1] < curve[4]
    for bad, error, message in [
        ([1.5], ValueError, "ks must be integers, got non-integer values"),
        (["2"], TypeError, "ks must be integers, got dtype"),
        ([], ValueError, "ks is empty"),
        ([[1, 2]], ValueError, r"ks must be a 1-D sequence"),
        ([8], ValueError, r"ks must be in \[1, n_samples=4\]"),
    ]:
        with pytest.raises(error, match=message):
            PassAtKEvalCallback(DummyVecEnv([Coins]), n_samples=4, ks=bad)
