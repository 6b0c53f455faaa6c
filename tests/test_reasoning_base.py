"""The TargetSum base model: demonstrations, the token GRU, the deterministic cached build, loading into agents,
and pass@k sampling checked against a direct Monte-Carlo estimate."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from ordergrad_rl.envs.target_sum import MAX_NUMBERS, N_TOKENS, PROMPT_LENGTH, target_sum_problems, verify_answers
from ordergrad_rl.reasoning import (
    BaseModelConfig,
    StudentConfig,
    TokenGRUExtractor,
    build_base_model,
    demonstrations,
    evaluate_pass_at_k,
    load_base_policy,
    sample_answers,
)
from ordergrad_rl.reasoning import base_model as base_model_module
from ordergrad_rl.reasoning import sampling as sampling_module

#: Builds in a fraction of a second; learns next to nothing (for determinism and plumbing).
TINY = BaseModelConfig(n_train=100, demos_per_problem=2, epochs=1, embed_dim=8, hidden_dim=8, pi_dim=8)
#: Builds in a few seconds and solves a few percent of the test problems per sample (for the sampling checks).
SMALL = BaseModelConfig(
    n_train=1000,
    demos_per_problem=6,
    epochs=4,
    batch_size=64,
    embed_dim=16,
    hidden_dim=24,
    pi_dim=24,
    learning_rate=1e-2,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def small_base(tmp_path_factory: pytest.TempPathFactory):
    return build_base_model(SMALL, cache_dir=tmp_path_factory.mktemp("cache"))


# ---------------------------------------------------------------------------------------------------- demonstrations
def test_flawless_student_always_solves_and_default_student_is_imperfect() -> None:
    problems = target_sum_problems("train")
    flawless = StudentConfig(skill=1.0, slip_base=0.0, slip_growth=0.0, stop=1.0)
    length = 2 * MAX_NUMBERS + 1  # room for a solution that uses every number
    ids, answers, lengths = demonstrations(problems, 2, length, np.random.default_rng(0), flawless)
    assert verify_answers(problems, ids, answers, lengths).all()

    ids, answers, lengths = demonstrations(problems, 4, 16, np.random.default_rng(0))
    again = demonstrations(problems, 4, 16, np.random.default_rng(0))
    np.testing.assert_array_equal(answers, again[1])
    right = verify_answers(problems, ids, answers, lengths)
    assert 0.25 < right.mean() < 0.6  # imperfect, but far from hopeless
    assert lengths[~right].mean() > 2 * lengths[right].mean()  # wrong attempts ramble
    assert np.all((lengths >= 1) & (lengths <= 16)) and np.any(lengths == 16)  # some rambles are truncated
    with pytest.raises(ValueError, match="skill"):
        StudentConfig(skill=1.5)


# ---------------------------------------------------------------------------------------------------- extractor
def test_token_gru_forward_equals_teacher_forcing_and_incremental_decoding() -> None:
    th.manual_seed(0)
    space = spaces.Box(0, 2 * N_TOKENS - 1, shape=(PROMPT_LENGTH + 6,), dtype=np.int64)
    extractor = TokenGRUExtractor(space, embed_dim=8, hidden_dim=12)
    assert extractor.features_dim == 24
    rng = np.random.default_rng(0)
    prompts = np.c_[np.zeros((5, 3), dtype=np.int64), rng.integers(1, 13, size=(5, 5)), rng.integers(13, 73, size=5)]
    answer = rng.integers(N_TOKENS, 2 * N_TOKENS, size=(5, 6))
    full = th.as_tensor(np.c_[prompts, answer])
    sequence = extractor.sequence_features(full)
    features, state = extractor.decode_start(th.as_tensor(prompts))
    for t in range(7):  # the observation with t answer tokens written, padded with 0 as the env pads it
        observation = full.clone()
        observation[:, PROMPT_LENGTH + t :] = 0
        direct = extractor(observation.float())
        th.testing.assert_close(direct, sequence[:, PROMPT_LENGTH - 1 + t])
        th.testing.assert_close(direct, features, rtol=1e-5, atol=1e-6)
        if t < 6:
            features, state = extractor.decode_step(state, full[:, PROMPT_LENGTH + t])
    with pytest.raises(ValueError, match="1-D Box"):
        TokenGRUExtractor(spaces.Box(0, 1, shape=(2, 2)))
    with pytest.raises(ValueError, match="integer codes"):
        TokenGRUExtractor(spaces.Box(-1.0, 1.5, shape=(4,)))


# ---------------------------------------------------------------------------------------------------- build
def test_build_is_deterministic_and_cached(tmp_path, monkeypatch) -> None:
    first = build_base_model(TINY, seed=3, use_cache=False)
    second = build_base_model(TINY, seed=3, use_cache=False)
    other = build_base_model(TINY, seed=4, use_cache=False)
    for (name, a), b in zip(
        first.policy.state_dict().items(),
        second.policy.state_dict().values(),
        strict=True,
    ):
        assert th.equal(a, b), name
    assert not all(
        th.equal(a, c)
        for a, c in zip(first.policy.state_dict().values(), other.policy.state_dict().values(), strict=True)
    )
    assert first.history == second.history and len(first.history) == TINY.epochs
    th.set_num_threads(2)
    build_base_model(TINY, seed=3, use_cache=False)
    assert th.get_num_threads() == 2  # the build runs on one thread and restores the caller's setting

    built = build_base_model(TINY, seed=3, cache_dir=tmp_path)
    assert built.cache_path is not None and built.cache_path.exists() and built.cache_path.parent == tmp_path

    def no_training(*args, **kwargs):
        raise AssertionError("a cached model must not be retrained")

    monkeypatch.setattr(base_model_module, "_train", no_training)
    cached = build_base_model(TINY, seed=3, cache_dir=tmp_path)
    assert cached.cache_path == built.cache_path and cached.build_seconds == built.build_seconds
    for a, b in zip(first.policy.state_dict().values(), cached.policy.state_dict().values(), strict=True):
        assert th.equal(a, b)
    with pytest.raises(AssertionError, match="retrained"):  # another config or seed is another cache entry
        build_base_model(TINY, seed=5, cache_dir=tmp_path)
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path))
    assert build_base_model(TINY, seed=3).cache_path == built.cache_path
    with pytest.raises(ValueError, match="seed"):
        build_base_model(TINY, seed=-1)


def test_load_base_policy_into_an_agent(small_base) -> None:
    from ordergrad_rl import OrderGradPPO

    model = OrderGradPPO(
        "MlpPolicy",
        "TargetSum-v0",
        objective="top2@4",
        policy_kwargs=small_base.policy_kwargs,
        n_envs=8,
        n_episodes=16,
        n_epochs=1,
        seed=0,
        device="cpu",
    )
    value_before = {k: v.clone() for k, v in model.policy.value_net.state_dict().items()}
    load_base_policy(model, small_base)
    base_state = small_base.policy.state_dict()
    for name, tensor in model.policy.state_dict().items():
        if name.startswith(
            ("features_extractor.", "pi_features_extractor.", "mlp_extractor.policy_net.", "action_net.")
        ):
            assert th.equal(tensor, base_state[name]), name
    for name, tensor in model.policy.value_net.state_dict().items():
        assert th.equal(tensor, value_before[name])  # the value head is left alone
    obs = th.as_tensor(target_sum_problems("test").prompts[:4].copy())
    obs = th.cat([obs, th.zeros(4, 16, dtype=obs.dtype)], dim=1).float()
    with th.no_grad():
        th.testing.assert_close(
            model.policy.get_distribution(obs).distribution.logits,
            small_base.policy.get_distribution(obs).distribution.logits,
        )
    model.learn(64)  # the episodic agent trains from the loaded policy on the native batch
    assert model.num_timesteps >= 64
    other = OrderGradPPO("MlpPolicy", "TargetSum-v0", n_episodes=4, device="cpu")
    with pytest.raises(ValueError, match="policy_kwargs=base.policy_kwargs"):
        load_base_policy(other, small_base)


# ---------------------------------------------------------------------------------------------------- sampling
def test_incremental_sampler_equals_rereading_the_observation(small_base, monkeypatch) -> None:
    ids = np.arange(0, 100, 10)
    fast = sample_answers(small_base.policy, ids, 64, seed=1)
    monkeypatch.setattr(sampling_module, "TokenGRUExtractor", type("NotAGru", (), {}))
    slow = sample_answers(small_base.policy, ids, 64, seed=1)
    np.testing.assert_array_equal(fast[0], slow[0])
    np.testing.assert_array_equal(fast[1], slow[1])
    assert fast[0].shape == (10, 64) and fast[0].any()


@pytest.mark.parametrize("n_samples", [0, 2.0])
def test_sampling_refuses_a_bad_number_of_samples(tmp_path, n_samples) -> None:
    # 0 was numpy's "cannot reshape array of size 0 into shape (0)", 2.0 a TypeError inside np.repeat
    policy = build_base_model(TINY, cache_dir=tmp_path).policy
    with pytest.raises(ValueError, match=f"n_samples must be an integer >= 1, got {n_samples}"):
        sample_answers(policy, [0, 1], n_samples)
    with pytest.raises(ValueError, match="n_samples must be an integer >= 1"):
        evaluate_pass_at_k(policy, n_samples, problem_ids=[0])


def test_base_model_pass_at_k_is_monotone_and_matches_monte_carlo(small_base) -> None:
    report = evaluate_pass_at_k(small_base.policy, 256, seed=0)
    curve = report["pass_at_k"]
    assert list(curve) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    values = np.array(list(curve.values()))
    assert np.all(np.diff(values) >= 0) and 0 < values[0] < values[-1]
    n_problems = len(report["n_correct"])
    assert sum(report["length_counts_correct"]) + sum(report["length_counts_incorrect"]) == 256 * n_problems
    assert report["mean_length_incorrect"] > report["mean_length_correct"]

    # Direct estimate: the fraction of fresh, independent groups of k answers that hold a correct one. Its variance
    # is sum_p q_p (1 - q_p) / groups / P^2; the pass@k U-statistic's is at most k / n times the same sum.
    groups = 32
    for k in (1, 8):
        success, _ = sample_answers(small_base.policy, np.arange(n_problems), k * groups, seed=100 + k)
        hit = success.reshape(n_problems, groups, k).any(axis=2)  # [problems, groups]
        q = hit.mean(axis=1)
        se = math.sqrt(np.sum(q * (1 - q)) * (1 / groups + k / 256)) / n_problems
        assert 0 < hit.mean() and abs(hit.mean() - curve[k]) < 4 * se, (k, hit.mean(), curve[k], se)
