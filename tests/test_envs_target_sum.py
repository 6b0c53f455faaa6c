"""TargetSum: the verifier on hand-made answers, the problem set, episodes, and the batched faces vs. single envs."""

from __future__ import annotations

import itertools
from collections import Counter

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecMonitor
from test_envs_vector import assert_tree_equal  # tests/ is on sys.path under pytest

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.envs.sb3_vec_env import NativeVecEnv, make_sb3_vec_env
from ordergrad_rl.envs.target_sum import (
    EOS,
    MAX_VALUE,
    N_TOKENS,
    PROMPT_LENGTH,
    TargetSumEnv,
    TargetSumProblems,
    TargetSumVectorEnv,
    answer_tokens,
    describe_tokens,
    target_sum_problems,
    total_token,
    verify_answers,
)

PROBLEMS = TargetSumProblems(
    numbers=np.array([[0, 0, 0, 2, 3, 5, 7, 9], [0, 0, 0, 0, 0, 4, 4, 6], [0, 0, 0, 0, 0, 4, 6, 12]]),
    targets=np.array([12, 8, 8]),
)


def tokens(text: str) -> list[int]:
    """``"5 =5 7 =12 <eos>"`` -> token ids (the inverse of ``describe_tokens``)."""
    out = []
    for word in text.split():
        out.append(EOS if word == "<eos>" else total_token(int(word[1:])) if word[0] == "=" else int(word))
    return out


def verdicts(problem: int, answers: list[str], width: int = 16) -> list[bool]:
    """Verify answers written as text, padded with junk after their end (which must be ignored)."""
    rows = [tokens(answer) for answer in answers]
    table = np.full((len(rows), width), 7)
    for i, row in enumerate(rows):
        table[i, : len(row)] = row
    lengths = [len(row) for row in rows]
    return verify_answers(PROBLEMS, [problem] * len(rows), table, lengths).tolist()


def reference_verdict(numbers: list[int], target: int, answer: list[int]) -> bool:
    """A plain loop over the tokens: the rules of the docstring, written independently of the vectorized verifier."""
    if not answer or answer[-1] != EOS:
        return False
    body = answer[:-1]
    if len(body) < 2 or len(body) % 2:
        return False
    total, used = 0, Counter()
    for number, written in zip(body[0::2], body[1::2], strict=True):
        if not 1 <= number <= MAX_VALUE or not MAX_VALUE < written < N_TOKENS:
            return False
        total += number
        used[number] += 1
        if written - MAX_VALUE != total:
            return False
    available = Counter(numbers)
    return total == target and all(used[v] <= available[v] for v in used)


# ---------------------------------------------------------------------------------------------------- verifier
def test_hand_made_answers() -> None:
    correct = ["5 =5 7 =12 <eos>", "7 =7 5 =12 <eos>", "3 =3 9 =12 <eos>", "2 =2 3 =5 7 =12 <eos>"]
    assert verdicts(0, correct) == [True] * 4
    wrong = [
        "5 =5 7 =13 <eos>",  # slip in the last running total
        "5 =6 7 =12 <eos>",  # slip in the first one, the last is right
        "5 =5 9 =14 <eos>",  # right totals, wrong sum
        "6 =6 6 =12 <eos>",  # numbers that are not listed
        "12 =12 <eos>",  # the target itself is not a listed number
        "5 7 <eos>",  # no running totals
        "=5 5 =12 7 <eos>",  # totals and numbers swapped
        "5 =5 7 <eos>",  # the last total missing
        "<eos>",  # empty answer
        "5 =5 <eos> 7 =12 <eos>",  # stops early: the tokens after the first <eos> are not part of it
        "5 =5 7 =12 2",  # truncated before <eos>
    ]
    assert verdicts(0, wrong) == [False] * len(wrong)
    # multiplicity: 4 is listed twice in problem 1, once in problem 2
    assert verdicts(1, ["4 =4 4 =8 <eos>"]) == [True]
    assert verdicts(2, ["4 =4 4 =8 <eos>"]) == [False]
    assert describe_tokens(tokens("5 =5 7 =12 <eos>")) == "5 =5 7 =12 <eos>"


def test_every_solution_in_every_order_verifies() -> None:
    assert PROBLEMS.solutions(0) == [(3, 9), (5, 7), (2, 3, 7)]
    assert PROBLEMS.solutions(1) == [(4, 4)] and PROBLEMS.solutions(2) == []
    problems = target_sum_problems("test")
    for index in range(len(problems)):
        solutions = problems.solutions(index)
        assert solutions, "every problem has a planted solution"
        assert min(map(len, solutions)) <= 5  # the planted one fits in max_answer_length = 16 tokens
        orders = [order for combo in solutions for order in itertools.islice(itertools.permutations(combo), 24)]
        table = np.zeros((len(orders), 2 * 8 + 1), dtype=np.int64)
        lengths = np.array([2 * len(order) + 1 for order in orders])
        for i, order in enumerate(orders):
            table[i, : lengths[i]] = answer_tokens(order)
        assert verify_answers(problems, [index] * len(orders), table, lengths).all()


def test_verifier_matches_reference_on_near_miss_answers() -> None:
    """Random answers built to fail in every way (or not), against a plain-loop reference of the rules."""
    rng = np.random.default_rng(0)
    problems = target_sum_problems("train")
    n, width = 3000, 16
    ids = rng.integers(len(problems), size=n)
    table = rng.integers(N_TOKENS, size=(n, width))
    lengths = rng.integers(1, width + 1, size=n)
    for i in range(n):
        kind = i % 4
        if kind == 3:
            continue  # uniformly random tokens
        listed = [int(v) for v in problems.numbers[ids[i]] if v]
        picks = list(problems.solutions(ids[i])[0]) if kind == 0 else list(rng.choice(listed, rng.integers(1, 4)))
        answer = answer_tokens(rng.permutation(picks))
        if kind == 2:  # one slipped total or number
            answer[rng.integers(len(answer) - 1)] += rng.choice([-1, 1])
        table[i, : len(answer)] = answer
        lengths[i] = len(answer)
    got = verify_answers(problems, ids, table, lengths)
    want = [
        reference_verdict(
            [int(v) for v in problems.numbers[ids[i]] if v],
            int(problems.targets[ids[i]]),
            table[i, : lengths[i]].tolist(),
        )
        for i in range(n)
    ]
    np.testing.assert_array_equal(got, want)
    assert 0.2 < got.mean() < 0.5  # both verdicts are well represented


def test_verifier_bad_input() -> None:
    with pytest.raises(ValueError, match="expected problem_ids"):
        verify_answers(PROBLEMS, [0], np.zeros((2, 4)), [1, 1])
    with pytest.raises(ValueError, match="lengths must be in"):
        verify_answers(PROBLEMS, [0], np.zeros((1, 4)), [5])
    with pytest.raises(ValueError, match="problem_ids must be in"):
        verify_answers(PROBLEMS, [3], np.zeros((1, 4)), [1])


# ---------------------------------------------------------------------------------------------------- problems
def test_problem_set() -> None:
    train, test = target_sum_problems("train"), target_sum_problems("test")
    assert (len(train), len(test)) == (2000, 100)
    assert target_sum_problems("test") is test  # cached
    keys = {tuple(row) for row in np.c_[train.numbers, train.targets]}
    assert len(keys) == len(train) and keys.isdisjoint(tuple(row) for row in np.c_[test.numbers, test.targets])
    np.testing.assert_array_equal(target_sum_problems("test", n_train=10).targets, test.targets)
    assert not np.array_equal(target_sum_problems("test", seed=1).targets, test.targets)
    counts = np.bincount(train.min_terms, minlength=6)[1:]
    assert np.all(counts > 100), counts  # every difficulty tier, 1 to 5 terms, is well represented
    assert 0.3 < np.mean(train.n_solutions > 1) < 0.7  # many problems have several subsets that work
    assert np.all(np.diff(train.numbers, axis=1)[train.numbers[:, :-1] > 0] >= 0)  # sorted, left-padded
    assert train.prompts.shape == (2000, PROMPT_LENGTH) and not train.prompts.flags.writeable
    with pytest.raises(ValueError, match="split"):
        target_sum_problems("validation")
    with pytest.raises(ValueError, match="n_test"):
        target_sum_problems("test", n_test=0)


def test_docstring_statistics_of_the_train_split() -> None:
    """The shares the env's docstring gives, recounted on the train split by brute force: the distinct valid
    answers of a problem are the distinct orders (token sequences) of its subsets that hit the target."""
    train = target_sum_problems("train")
    answers, subsets = [], []
    for i in range(len(train)):
        values = [int(v) for v in train.numbers[i] if v]
        found = {
            tuple(sorted(combo))
            for size in range(1, len(values) + 1)
            for combo in itertools.combinations(values, size)
            if sum(combo) == train.targets[i]
        }
        subsets.append(len(found))
        answers.append(len({order for combo in found for order in itertools.permutations(combo)}))
    subsets, answers = np.array(subsets), np.array(answers)
    tiers = np.bincount(train.min_terms, minlength=6)[1:] / len(train)
    doc = " ".join(TargetSumEnv.__doc__.split())
    several, multiple = np.mean(answers > 1), np.mean(subsets > 1)
    assert (
        f"{several:.0%} of the train split's problems have several valid answers ({multiple:.0%} have two or more "
        f"subsets that work, on average {subsets.mean():.1f}," in doc
    )
    assert f"train split: {', '.join(f'{share:.0%}' for share in tiers)})" in doc


# ---------------------------------------------------------------------------------------------------- episodes
def play(env: gym.Env, answer: list[int]) -> tuple[float, bool, bool, dict, float]:
    """Write ``answer``; return the last reward, terminated, truncated, info, and the summed ``info["length"]``."""
    total_length = 0.0
    for token in answer:
        _, reward, terminated, truncated, info = env.step(token)
        total_length += info["length"]
    return reward, terminated, truncated, info, total_length


def test_episode_rewards_lengths_and_options() -> None:
    env = gym.make("TargetSum-v0", split="test", render_mode="ansi")
    problems = env.unwrapped.problems
    obs, info = env.reset(seed=0, options={"problem": 5})
    assert info == {"problem": 5}
    np.testing.assert_array_equal(obs[:PROMPT_LENGTH], problems.prompts[5])
    assert not obs[PROMPT_LENGTH:].any()
    answer = answer_tokens(problems.solutions(5)[-1]).tolist()
    reward, terminated, truncated, info, length = play(env, answer)
    assert (reward, terminated, truncated, info["is_success"], length) == (1.0, True, False, True, len(answer))
    assert env.render().endswith(describe_tokens(answer))

    env.reset(options={"problem": 5})
    wrong = answer[:-2] + [answer[-2] + 1, EOS]
    reward, terminated, _, info, _ = play(env, wrong)
    assert (reward, terminated, info["is_success"]) == (0.0, True, False)

    obs, _ = env.reset(options={"problem": 5})
    reward, terminated, truncated, info, length = play(env, [3] * 16)  # never ends: truncated at 16 tokens
    assert (reward, terminated, truncated, info["is_success"], length) == (0.0, False, True, False, 16.0)
    with pytest.raises(RuntimeError, match="reset"):
        env.unwrapped.step(3)


def test_reset_draws_problems_with_the_env_generator() -> None:
    env = TargetSumEnv(split="test")
    first = [env.reset(seed=3)[1]["problem"]] + [env.reset()[1]["problem"] for _ in range(20)]
    again = [env.reset(seed=3)[1]["problem"]] + [env.reset()[1]["problem"] for _ in range(20)]
    assert first == again and len(set(first)) > 10
    env.reset(seed=3, options={"problem": 7})
    assert env.reset()[1]["problem"] == first[0]  # a posed problem draws nothing from the generator


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda env: env.step(N_TOKENS), ValueError, "token id"),
        (lambda env: env.step(-1), ValueError, "token id"),
        (lambda env: env.step(2.0), ValueError, "token id"),
        (lambda env: env.step(np.array([1, 2])), ValueError, "token id"),
        (lambda env: env.reset(options={"problem": 100}), ValueError, r"in \[0, 100\)"),
        (lambda env: env.reset(options={"problem": 1.5}), ValueError, "integer problem index"),
        (lambda env: env.reset(options={"problme": 1}), ValueError, "unknown reset options"),
        (lambda env: TargetSumEnv(max_answer_length=2), ValueError, "max_answer_length"),
        (lambda env: TargetSumEnv(problem_seed=-1), ValueError, "problem_seed must be"),  # named as the argument
        (lambda env: TargetSumEnv(split="dev"), ValueError, "split"),
        (lambda env: TargetSumEnv(render_mode="human"), ValueError, "render_mode"),
        # An unknown argument's TypeError named a private helper (_batch_from_kwargs), not the env
        (lambda env: TargetSumEnv(splitt="test"), TypeError, r"TargetSumEnv.*\['splitt'\].*max_answer_length"),
        (lambda env: gym.make("TargetSum-v0", num_envs=2), TypeError, r"TargetSumEnv.*\['num_envs'\]"),
        (lambda env: gym.make_vec("TargetSum-v0", 2, splitt="test"), TypeError, r"TargetSumVectorEnv.*\['splitt'\]"),
    ],
)
def test_bad_input(call, error: type[Exception], match: str) -> None:
    env = TargetSumEnv(split="test")
    env.reset(seed=0)
    with pytest.raises(error, match=match):
        call(env)


# ---------------------------------------------------------------------------------------------------- batched faces
class ScriptedAnswers:
    """Per env: the tokens of a correct, slipped or rambling answer to its current problem, chosen at random."""

    def __init__(self, problems: TargetSumProblems, n: int, seed: int) -> None:
        self.problems, self.rng = problems, np.random.default_rng(seed)
        self.plans: list[list[int]] = [[] for _ in range(n)]

    def start(self, i: int, problem: int) -> None:
        kind = self.rng.integers(3)
        if kind == 2:
            self.plans[i] = self.rng.integers(1, MAX_VALUE + 1, size=20).tolist()  # rambles into truncation
            return
        plan = answer_tokens(self.problems.solutions(problem)[0]).tolist()
        if kind == 1:
            plan[-2] += 1
        self.plans[i] = plan

    def actions(self) -> np.ndarray:
        return np.array([plan.pop(0) if plan else EOS for plan in self.plans], dtype=np.int64)


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_native_vector_env_equals_sync_vector_env(mode: AutoresetMode) -> None:
    n = 4
    native = gym.make_vec("TargetSum-v0", num_envs=n, autoreset_mode=mode, split="test")
    sync = gym.make_vec(
        "TargetSum-v0", num_envs=n, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, split="test"
    )
    assert isinstance(native.unwrapped, TargetSumVectorEnv)
    (obs, info), (sync_obs, sync_info) = native.reset(seed=9), sync.reset(seed=9)
    np.testing.assert_array_equal(obs, sync_obs)
    assert_tree_equal(info, sync_info)
    script = ScriptedAnswers(native.unwrapped.problems, n, seed=0)
    for i, problem in enumerate(info["problem"]):
        script.start(i, problem)
    outcomes = Counter()
    for _ in range(120):
        actions = script.actions()
        a, b = native.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
        assert_tree_equal(a[4], b[4])
        _, reward, terminated, truncated, info = a
        new_problems = info.get("problem") if mode is AutoresetMode.SAME_STEP else None
        for i in np.flatnonzero(terminated | truncated):
            outcomes["success" if reward[i] else "truncated" if truncated[i] else "wrong"] += 1
            if new_problems is not None:
                script.start(i, new_problems[i])
        if mode is AutoresetMode.NEXT_STEP and "problem" in info:  # the reset step of NEXT_STEP
            for i in np.flatnonzero(info["_problem"]):
                script.start(i, info["problem"][i])
    assert min(outcomes.values()) >= 3 and len(outcomes) == 3, outcomes


def test_vector_env_poses_problems_per_env_and_partial_resets_match_sync() -> None:
    kwargs = {"split": "test", "autoreset_mode": AutoresetMode.DISABLED}
    native = TargetSumVectorEnv(3, **kwargs)
    obs, info = native.reset(seed=1, options={"problem": np.array([4, 4, 7])})
    np.testing.assert_array_equal(info["problem"], [4, 4, 7])
    np.testing.assert_array_equal(obs[:, :PROMPT_LENGTH], native.problems.prompts[[4, 4, 7]])
    sync = gym.make_vec(
        "TargetSum-v0",
        num_envs=3,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.DISABLED},
        split="test",
    )
    for env in (native, sync):
        env.reset(seed=2)
    for step in range(3):
        actions = np.array([EOS if step == 0 else 5, 5, 5])
        a, b = native.step(actions), sync.step(actions)
        for x, y in zip(a[:4], b[:4], strict=True):
            np.testing.assert_array_equal(x, y)
        assert_tree_equal(a[4], b[4])
        if step == 0:
            with pytest.raises(RuntimeError, match="reset_mask"):
                native.step(actions)
            mask = np.array([True, False, False])
            outs = [
                env.reset(seed=[50, None, None], options={"reset_mask": mask.copy(), "problem": 3})
                for env in (native, sync)
            ]
            np.testing.assert_array_equal(outs[0][0], outs[1][0])
            assert_tree_equal(outs[0][1], outs[1][1])
            assert outs[0][1]["problem"][0] == 3 and not outs[0][1]["_problem"][1:].any()
    with pytest.raises(ValueError, match="shape"):
        native.step(np.zeros(2, dtype=np.int64))


def test_sb3_vec_env_equals_dummy_vec_env_and_takes_options() -> None:
    n = 4
    native = make_sb3_vec_env("TargetSum-v0", n, seed=5, env_kwargs={"split": "test"})
    assert isinstance(native, VecMonitor) and isinstance(native.unwrapped, NativeVecEnv)
    dummy = DummyVecEnv([lambda: gym.make("TargetSum-v0", split="test") for _ in range(n)])
    dummy.seed(5)
    np.testing.assert_array_equal(native.reset(), dummy.reset())
    assert native.unwrapped.reset_infos == dummy.reset_infos
    script = ScriptedAnswers(native.get_attr("problems")[0], n, seed=1)
    for i, reset_info in enumerate(dummy.reset_infos):
        script.start(i, reset_info["problem"])
    successes = 0
    for _ in range(60):
        actions = script.actions()
        obs, reward, done, infos = native.step(actions)
        d_obs, d_reward, d_done, d_infos = dummy.step(actions)
        np.testing.assert_array_equal(obs, d_obs)
        np.testing.assert_array_equal(done, d_done)
        np.testing.assert_array_equal(reward.astype(np.float32), d_reward)
        for info, d_info in zip(infos, d_infos, strict=True):
            info.pop("episode", None)  # VecMonitor's (the dummy env has no Monitor)
            assert_tree_equal(info, d_info)
        assert native.unwrapped.reset_infos == dummy.reset_infos
        for i in np.flatnonzero(done):
            successes += infos[i]["is_success"]
            script.start(i, dummy.reset_infos[i]["problem"])
    assert successes >= 3
    native.set_options([{"problem": p} for p in (0, 0, 9, 9)])
    obs = native.reset()
    np.testing.assert_array_equal(obs[:, :PROMPT_LENGTH], target_sum_problems("test").prompts[[0, 0, 9, 9]])
    native.set_options([{"problem": 1}, {}, {}, {}])
    with pytest.raises(ValueError, match="same option keys"):
        native.reset()


def test_make_sb3_vec_env_shows_the_reset_infos_sb3s_make_vec_env_shows() -> None:
    # The native batch's VecMonitor kept SB3's VecEnvWrapper list of its own, which no reset filled: the problem of
    # each episode, in SB3's make_vec_env's reset_infos, was always {} there.
    native = make_sb3_vec_env("TargetSum-v0", 3, seed=0)
    reference = make_vec_env("TargetSum-v0", 3, seed=0)
    native.reset(), reference.reset()
    assert native.reset_infos == reference.reset_infos and native.reset_infos[0]["problem"] >= 0
    eos = np.full(3, EOS)
    native.step(eos), reference.step(eos)  # every answer ends: each env starts a new problem within the step
    assert native.reset_infos == reference.reset_infos
