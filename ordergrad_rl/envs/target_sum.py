"""TargetSum: a verifiable-reasoning task answered token by token, the paper's LLM setting in miniature.

A problem is a short list of numbers and a target; an answer picks numbers from the list that add up to the target
and writes the running total after each pick, like a chain of thought whose every step can be checked::

    numbers 2 3 5 7 9, target 12      answer  5 =5 7 =12 <eos>      (or 3 =3 9 =12 <eos>, 2 =2 3 =5 7 =12 <eos>, ...)

Most problems have several valid answers of different lengths, so pass@k rewards diverse sampling; a wrong step
(a number not in the list, a slip in a running total) cannot be repaired later, so hard problems need many steps to
go right at once. The module holds the problem set (:class:`TargetSumProblems`, :func:`target_sum_problems`), the
verifier (:func:`verify_answers`), the batch that both Gymnasium faces run on (:class:`TargetSumBatch`), the
single env (:class:`TargetSumEnv`) and the native vector env (:class:`TargetSumVectorEnv`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
from dataclasses import dataclass
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.utils.seeding import np_random
from gymnasium.vector import AutoresetMode

from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.envs.native_vector import BatchStep, NativeVectorEnv, reseed
from ordergrad_rl.envs.rendering import check_render_mode

#: Numbers of a problem are integers in ``1 .. MAX_VALUE``.
MAX_VALUE = 12
#: A problem lists ``MIN_NUMBERS .. MAX_NUMBERS`` numbers.
MIN_NUMBERS, MAX_NUMBERS = 3, 8
#: A target is the sum of ``1 .. MAX_TERMS`` of its numbers.
MAX_TERMS = 5
#: Running totals (and targets) are integers in ``1 .. MAX_TOTAL``.
MAX_TOTAL = MAX_VALUE * MAX_TERMS
#: Token ids (= actions): ``EOS``; ``v`` for the number ``v``; ``MAX_VALUE + t`` for the running total ``t``.
EOS = 0
N_TOKENS = 1 + MAX_VALUE + MAX_TOTAL
#: The prompt is ``MAX_NUMBERS`` number slots then the target slot.
PROMPT_LENGTH = MAX_NUMBERS + 1
#: Observation codes: prompt slots hold token ids (0 = empty), answer slots ``N_TOKENS + token`` (0 = not written).
N_CODES = 2 * N_TOKENS

#: One token (an int) or an array of them: the token functions return the type they are given.
_Tokens = TypeVar("_Tokens", int, np.ndarray)


def number_token(value: _Tokens) -> _Tokens:
    """Token id of the number ``value`` (``1 .. MAX_VALUE``)."""
    return value


def total_token(total: _Tokens) -> _Tokens:
    """Token id of the running total ``total`` (``1 .. MAX_TOTAL``)."""
    return MAX_VALUE + total


def answer_tokens(picks: Any) -> np.ndarray:
    """Tokens of the answer that picks the numbers ``picks`` in this order, with correct running totals and
    ``<eos>``: ``answer_tokens([5, 7])`` is ``5 =5 7 =12 <eos>``.

    :return: int64 array of ``2 * len(picks) + 1`` token ids.
    """
    values = np.asarray(picks, dtype=np.int64).ravel()
    tokens = np.empty(2 * len(values) + 1, dtype=np.int64)
    tokens[0:-1:2] = number_token(values)
    tokens[1:-1:2] = total_token(np.cumsum(values))
    tokens[-1] = EOS
    return tokens


def describe_tokens(tokens: Any) -> str:
    """Human-readable answer tokens, e.g. ``"5 =5 7 =12 <eos>"``."""
    words = []
    for token in np.asarray(tokens, dtype=np.int64).ravel().tolist():
        if token == EOS:
            words.append("<eos>")
        elif token <= MAX_VALUE:
            words.append(str(token))
        else:
            words.append(f"={token - MAX_VALUE}")
    return " ".join(words)


# ---------------------------------------------------------------------------------------------------- problems
@dataclass(frozen=True, eq=False)
class TargetSumProblems:
    """A set of TargetSum problems (read-only arrays, one row per problem).

    :param numbers: ``[P, MAX_NUMBERS]`` int64, each row sorted ascending and left-padded with 0.
    :param targets: ``[P]`` int64 targets.
    """

    numbers: np.ndarray
    targets: np.ndarray

    def __post_init__(self) -> None:
        for array in (self.numbers, self.targets):
            array.setflags(write=False)

    def __len__(self) -> int:
        return len(self.targets)

    @functools.cached_property
    def counts(self) -> np.ndarray:
        """``[P, MAX_VALUE + 1]`` multiplicity of each value in each problem (column 0 counts the padding)."""
        counts = np.zeros((len(self), MAX_VALUE + 1), dtype=np.int64)
        np.add.at(counts, (np.arange(len(self))[:, None], self.numbers), 1)
        counts.setflags(write=False)
        return counts

    @functools.cached_property
    def prompts(self) -> np.ndarray:
        """``[P, PROMPT_LENGTH]`` prompt token ids: the numbers (left-padded with 0), then the target's total token."""
        prompts = np.concatenate([self.numbers, total_token(self.targets)[:, None]], axis=1)
        prompts.setflags(write=False)
        return prompts

    def solutions(self, index: int) -> list[tuple[int, ...]]:
        """Every valid answer of problem ``index`` up to order: the sub-multisets of its numbers summing to the
        target, each as a sorted tuple."""
        values = [int(v) for v in self.numbers[index] if v]
        target = int(self.targets[index])
        found = {
            combo
            for size in range(1, len(values) + 1)
            for combo in itertools.combinations(values, size)
            if sum(combo) == target
        }
        return sorted(found, key=lambda combo: (len(combo), combo))

    @functools.cached_property
    def min_terms(self) -> np.ndarray:
        """``[P]`` fewest numbers of a valid answer: the difficulty tier of each problem."""
        return np.array([len(self.solutions(i)[0]) for i in range(len(self))], dtype=np.int64)

    @functools.cached_property
    def n_solutions(self) -> np.ndarray:
        """``[P]`` number of distinct valid answers up to order (:meth:`solutions`)."""
        return np.array([len(self.solutions(i)) for i in range(len(self))], dtype=np.int64)

    def describe(self, index: int) -> str:
        """``"numbers 2 3 5 7 9, target 12"``."""
        values = " ".join(str(int(v)) for v in self.numbers[index] if v)
        return f"numbers {values}, target {int(self.targets[index])}"


SPLITS: tuple[str, ...] = ("train", "test")


@functools.lru_cache(maxsize=8)
def _problem_splits(seed: int, n_train: int, n_test: int) -> dict[str, TargetSumProblems]:
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, ...]] = set()
    rows: list[tuple[int, ...]] = []
    while len(rows) < n_train + n_test:
        size = int(rng.integers(MIN_NUMBERS, MAX_NUMBERS + 1))
        values = np.sort(rng.integers(1, MAX_VALUE + 1, size=size))
        terms = int(rng.integers(1, min(MAX_TERMS, size) + 1))
        target = int(values[rng.choice(size, terms, replace=False)].sum())
        key = (*[0] * (MAX_NUMBERS - size), *values.tolist(), target)
        if key not in seen:  # every problem appears once, in one split
            seen.add(key)
            rows.append(key)
    table = np.array(rows, dtype=np.int64)
    parts = {"test": table[:n_test], "train": table[n_test:]}
    return {
        name: TargetSumProblems(part[:, :MAX_NUMBERS].copy(), part[:, MAX_NUMBERS].copy())
        for name, part in parts.items()
    }


def target_sum_problems(
    split: str = "train", seed: int = 0, n_train: int = 2000, n_test: int = 100
) -> TargetSumProblems:
    """The ``split`` of the TargetSum problem set drawn with ``seed`` (cached: the same object for the same
    arguments).

    Problem generator: ``m ~ U{3..8}`` numbers i.i.d. ``U{1..12}`` (sorted), then a number of terms
    ``s ~ U{1..min(5, m)}`` and the target = the sum of ``s`` of the numbers picked at random. The mixed difficulty
    comes from ``s`` and ``m``: one-term problems (the target is in the list) are easy, five-term ones with many
    numbers are hard. Duplicates are dropped, so the splits are disjoint; the test split is drawn first, so it does
    not depend on ``n_train``.

    :param split: ``"train"`` or ``"test"``.
    :param seed: seed of the problem set.
    :param n_train: problems in the train split.
    :param n_test: problems in the test split.
    """
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    for name, value, minimum in (("seed", seed, 0), ("n_train", n_train, 1), ("n_test", n_test, 1)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
            raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return _problem_splits(int(seed), int(n_train), int(n_test))[split]


# ---------------------------------------------------------------------------------------------------- verifier
def verify_answers(problems: TargetSumProblems, problem_ids: Any, answers: Any, lengths: Any) -> np.ndarray:
    """Whether each answer solves its problem.

    An answer is correct iff its tokens are ``n_1 =t_1 n_2 =t_2 ... n_j =t_j <eos>`` with ``j >= 1``, every
    ``n_i`` a number token, every ``t_i`` the total token of ``n_1 + ... + n_i``, ``t_j`` the target, and the
    ``n_i`` a sub-multiset of the problem's numbers (each listed number used at most as often as it appears). An
    answer that never reached ``<eos>`` (truncated) is wrong.

    :param problems: the problem set.
    :param problem_ids: ``[B]`` problem index of each answer.
    :param answers: ``[B, L]`` token ids; entries at or after ``lengths`` are ignored.
    :param lengths: ``[B]`` number of tokens of each answer, ``<eos>`` included (``1 .. L``).
    :return: ``[B]`` bool.
    """
    ids = np.asarray(problem_ids, dtype=np.int64)
    tokens = np.asarray(answers, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    if tokens.ndim != 2 or ids.shape != (len(tokens),) or lengths.shape != (len(tokens),):
        raise ValueError(
            f"expected problem_ids [B], answers [B, L], lengths [B]; got {ids.shape}, {tokens.shape}, {lengths.shape}"
        )
    if np.any((lengths < 1) | (lengths > tokens.shape[1])):
        raise ValueError(f"lengths must be in [1, {tokens.shape[1]}]")
    if np.any((ids < 0) | (ids >= len(problems))):
        raise ValueError(f"problem_ids must be in [0, {len(problems)})")
    position = np.arange(tokens.shape[1])
    body = lengths - 1  # tokens before <eos>
    in_body = position < body[:, None]
    number_slot = in_body & (position % 2 == 0)
    total_slot = in_body & (position % 2 == 1)
    is_number = (tokens >= 1) & (tokens <= MAX_VALUE)
    is_total = (tokens > MAX_VALUE) & (tokens < N_TOKENS)
    well_formed = (
        (tokens[np.arange(len(tokens)), body] == EOS)
        & (body >= 2)
        & (body % 2 == 0)
        & np.all(is_number | ~number_slot, axis=1)
        & np.all(is_total | ~total_slot, axis=1)
    )
    picked = np.where(number_slot & is_number, tokens, 0)
    running = np.cumsum(picked, axis=1)  # at a total slot: the sum of the numbers picked so far
    totals_right = np.all((tokens - MAX_VALUE == running) | ~total_slot, axis=1)
    hits_target = running[:, -1] == problems.targets[ids]
    used = np.zeros((len(tokens), MAX_VALUE + 1), dtype=np.int64)
    np.add.at(used, (np.arange(len(tokens))[:, None], picked), 1)
    available = np.all(used[:, 1:] <= problems.counts[ids, 1:], axis=1)
    return well_formed & totals_right & hits_target & available


# ---------------------------------------------------------------------------------------------------- batch
def _check_problem_index(value: Any, n_problems: int, shape: tuple[int, ...]) -> np.ndarray:
    """``options["problem"]`` as an int64 array broadcast to ``shape``, or a ``ValueError``."""
    array = np.asarray(value)
    if array.dtype == np.bool_ or not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"options['problem'] must be an integer problem index, got {value!r}")
    if array.ndim not in (0, len(shape)) or (array.ndim and array.shape != shape):
        raise ValueError(f"options['problem'] must be an int or an array of shape {shape}, got shape {array.shape}")
    if np.any((array < 0) | (array >= n_problems)):
        raise ValueError(f"options['problem'] must be in [0, {n_problems}), got {value!r}")
    return np.broadcast_to(array.astype(np.int64), shape)


class TargetSumBatch:
    """``num_envs`` TargetSum episodes, the state and dynamics shared by :class:`TargetSumEnv` (one env) and
    :class:`TargetSumVectorEnv`.

    Each env owns a generator (env ``i`` of a batch seeded ``s`` replays a single env seeded ``s + i``); a reset
    draws one integer from it (the problem) unless the problem is given.

    :param num_envs: batch size ``B``.
    :param problems: the problem set episodes are drawn from.
    :param max_answer_length: answer tokens before truncation, ``<eos>`` included.
    """

    def __init__(self, num_envs: int, problems: TargetSumProblems, max_answer_length: int) -> None:
        self.num_envs = num_envs
        self.problems = problems
        self.max_answer_length = max_answer_length
        # Created on first use: a batch whose problems are always posed never pays for num_envs generators.
        self.rngs: list[np.random.Generator | None] = [None] * num_envs
        self.problem = np.zeros(num_envs, dtype=np.int64)
        self.length = np.zeros(num_envs, dtype=np.int64)
        self.answers = np.zeros((num_envs, max_answer_length), dtype=np.int64)
        self.obs = np.zeros((num_envs, PROMPT_LENGTH + max_answer_length), dtype=np.int64)
        self.finished = np.ones(num_envs, dtype=bool)  # until the first reset

    def _rng(self, i: int) -> np.random.Generator:
        """Env ``i``'s generator (an unseeded one if it has none yet)."""
        if self.rngs[i] is None:
            self.rngs[i] = np_random(None)[0]
        return self.rngs[i]  # type: ignore[return-value]

    def reset(self, env_ids: np.ndarray, problem: Any = None) -> np.ndarray:
        """Start new episodes in ``env_ids`` on ``problem`` (an index or ``[B]`` indices; ``None``: each env draws
        one with its generator). Returns the observations ``[B, obs]`` (a copy)."""
        if problem is None:
            chosen = np.array([self._rng(i).integers(len(self.problems)) for i in env_ids], dtype=np.int64)
        else:
            chosen = _check_problem_index(problem, len(self.problems), (self.num_envs,))[env_ids]
        self.problem[env_ids] = chosen
        self.length[env_ids] = 0
        self.answers[env_ids] = EOS
        self.obs[env_ids] = 0
        self.obs[env_ids, :PROMPT_LENGTH] = self.problems.prompts[chosen]
        self.finished[env_ids] = False
        return self.obs.copy()

    def step(self, actions: Any, env_ids: np.ndarray | None) -> BatchStep:
        """Append one token to the answers of ``env_ids`` (all if ``None``). See :class:`TargetSumEnv`."""
        tokens = np.asarray(actions)
        if tokens.shape != (self.num_envs,) or not np.issubdtype(tokens.dtype, np.integer):
            raise ValueError(f"actions must be integer token ids of shape ({self.num_envs},), got {actions!r}")
        rows = np.arange(self.num_envs) if env_ids is None else env_ids
        tokens = tokens[rows].astype(np.int64)
        if np.any((tokens < 0) | (tokens >= N_TOKENS)):
            raise ValueError(f"actions must be token ids in [0, {N_TOKENS}), got {tokens}")
        if self.finished[rows].any():
            raise RuntimeError("step() called on a finished episode: reset the env first")
        position = self.length[rows]
        self.answers[rows, position] = tokens
        self.obs[rows, PROMPT_LENGTH + position] = N_TOKENS + tokens
        self.length[rows] = length = position + 1
        ended = tokens == EOS
        cut = ~ended & (length == self.max_answer_length)
        reward = np.zeros(self.num_envs)
        terminated = np.zeros(self.num_envs, dtype=bool)
        truncated = np.zeros(self.num_envs, dtype=bool)
        success = np.zeros(self.num_envs, dtype=bool)
        if ended.any():
            done_rows = rows[ended]
            success[done_rows] = verify_answers(
                self.problems, self.problem[done_rows], self.answers[done_rows], self.length[done_rows]
            )
        terminated[rows] = ended
        truncated[rows] = cut
        reward[success] = 1.0
        self.finished[rows] = ended | cut
        info = {"length": np.ones(self.num_envs), "is_success": success}
        return self.obs.copy(), reward, terminated, truncated, info


def _batch_from_kwargs(
    num_envs: int,
    split: str = "train",
    problem_seed: int = 0,
    n_train: int = 2000,
    n_test: int = 100,
    max_answer_length: int = 16,
) -> TargetSumBatch:
    """The batch of the env arguments (see :class:`TargetSumEnv`), validated."""
    check_int("num_envs", num_envs, 1)
    check_int("problem_seed", problem_seed, 0)  # named as the env's argument, not target_sum_problems' seed
    try:
        check_int("max_answer_length", max_answer_length, 3)
    except ValueError as err:
        raise ValueError(f"{err} (3 is the shortest answer)") from None
    problems = target_sum_problems(split, problem_seed, n_train, n_test)
    return TargetSumBatch(int(num_envs), problems, int(max_answer_length))


def _check_env_arguments(env: object, kwargs: dict[str, Any]) -> None:
    """Refuse an argument the TargetSum envs do not take, naming ``env``'s class (an unknown keyword reached
    :func:`_batch_from_kwargs`, whose ``TypeError`` named that private helper).

    :raises TypeError: an argument other than those of :func:`_batch_from_kwargs` after ``num_envs``.
    """
    accepted = list(inspect.signature(_batch_from_kwargs).parameters)[1:]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(
            f"{type(env).__name__}.__init__() got unexpected keyword arguments {unknown}; it takes render_mode and "
            f"{accepted}"
        )


def target_sum_spaces(batch: TargetSumBatch) -> tuple[spaces.Box, spaces.Discrete]:
    """Single-env ``(observation_space, action_space)``."""
    length = PROMPT_LENGTH + batch.max_answer_length
    return spaces.Box(0, N_CODES - 1, shape=(length,), dtype=np.int64), spaces.Discrete(N_TOKENS)


_OPTION_KEYS = ("problem",)


def _problem_option(options: dict[str, Any] | None) -> Any:
    """``options["problem"]`` (or ``None``), rejecting unknown option keys."""
    options = options or {}
    unknown = sorted(set(options) - set(_OPTION_KEYS))
    if unknown:
        raise ValueError(f"unknown reset options {unknown}; TargetSum accepts {list(_OPTION_KEYS)} (and reset_mask)")
    return options.get("problem")


# ---------------------------------------------------------------------------------------------------- Gymnasium
class TargetSumEnv(gym.Env[np.ndarray, np.int64]):
    """Pick numbers that add up to a target, showing the running total: a verifiable-reasoning task.

    ## Description

    A problem lists 3 to 8 numbers in ``1 .. 12`` and a target; the agent writes an answer token by token, like a
    language model, and a verifier checks it at the end. A correct answer is ``n_1 =t_1 n_2 =t_2 ... n_j =t_j
    <eos>``: numbers from the list (each used at most as often as it is listed), each followed by the running total
    ``t_i = n_1 + ... + n_i``, the last total equal to the target::

        numbers 2 3 5 7 9, target 12      right: 5 =5 7 =12 <eos>,  3 =3 9 =12 <eos>,  2 =2 3 =5 7 =12 <eos>
                                          wrong: 2 =2 3 =6 7 =13 <eos> (slip),  12 =12 <eos> (12 is not listed)

    81% of the train split's problems have several valid answers (44% have two or more subsets that work, on average
    2.0, and any order of a subset is valid), often of different lengths, so sampling diversity pays off in pass@k;
    one wrong step sinks an answer, so long answers are hard: the paper's LLM math setting in miniature. Problems
    come from a fixed set with a train and a test split (:func:`target_sum_problems`), of mixed difficulty (the
    fewest numbers a valid answer needs ranges from 1 to 5; train split: 27%, 28%, 23%, 15%, 8%).

    ## Action Space

    ``Discrete(73)``: the next token. ``0`` = ``<eos>`` (end of answer), ``v`` in ``1 .. 12`` = the number ``v``,
    ``12 + t`` for ``t`` in ``1 .. 60`` = the running total ``=t``. Anything outside raises ``ValueError``.

    ## Observation Space

    ``Box(0, 145, (9 + max_answer_length,), int64)``: the prompt then the answer so far, as integer codes (0 =
    empty). Slots ``0 .. 7``: the problem's numbers in ascending order, left-padded with 0 (code = the number's
    token id ``v``). Slot ``8``: the target (code = the token id of the total ``=target``, ``12 + target``). Slots
    ``9 ..``: the answer tokens written so far, code ``73 + token`` (so that prompt and answer tokens have
    distinct codes), then 0.

    ## Rewards

    1 at the last step if the answer is correct, 0 otherwise (every other step gives 0).

    ## Starting State

    A problem of the split, drawn uniformly with the env's generator; ``reset(options={"problem": i})`` poses
    problem ``i`` instead (no random draw). The answer is empty.

    ## Episode End

    The episode terminates when the agent writes ``<eos>`` (correct or not) and is truncated after
    ``max_answer_length`` tokens without ``<eos>`` (a wrong answer).

    ## Information

    Every step: ``length = 1.0``, one generated token, so the episode sum of ``info["length"]`` is the answer length
    ``L`` in tokens (``<eos>`` included), the quantity of the paper's length reward ``L / L_max`` with
    ``L_max = max_answer_length``. Last step: ``is_success`` (the verifier's verdict, the Gymnasium/SB3 success
    key). Reset: ``problem`` (the problem index).

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl  # registers the envs

    env = gym.make("TargetSum-v0")                   # the train split
    env = gym.make("TargetSum-v0", split="test")     # held-out problems
    obs, info = env.reset(options={"problem": 3})    # pose problem 3 (e.g. to all members of a group)
    envs = gym.make_vec("TargetSum-v0", num_envs=1024)  # native batch; options={"problem": array of n indices}
    ```

    * ``split="train"``: ``"train"`` or ``"test"``.
    * ``problem_seed=0``: seed of the problem set (the splits are disjoint for a seed).
    * ``n_train=2000``, ``n_test=100``: problems per split.
    * ``max_answer_length=16``: answer tokens before truncation (``<eos>`` included); the longest answer of a
      5-term solution has 11 tokens.
    * ``render_mode=None`` or ``"ansi"`` (the problem and the answer so far, as text).

    ## Version History

    * v0: Initial version.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}
    #: Grouped rollouts pose a context with ``reset(options={"problem": c})``
    #: (see :mod:`ordergrad_rl.agents.common.groups`).
    context_key = "problem"

    def __init__(self, render_mode: str | None = None, **kwargs: Any) -> None:
        check_render_mode(render_mode, self.metadata)
        self.render_mode = render_mode
        _check_env_arguments(self, kwargs)
        self.batch = _batch_from_kwargs(1, **kwargs)
        self.problems = self.batch.problems
        self.observation_space, self.action_space = target_sum_spaces(self.batch)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        problem = _problem_option(options)
        self.batch.rngs[0] = self.np_random  # the batch draws from the env's own generator (gym seeding)
        obs = self.batch.reset(np.zeros(1, dtype=np.int64), problem)
        return obs[0], {"problem": int(self.batch.problem[0])}

    @property
    def n_contexts(self) -> int:
        """Number of problems: grouped rollouts pose ``options={"problem": c}``, ``c < n_contexts``."""
        return len(self.problems)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        token = np.asarray(action)
        if token.shape != () or not np.issubdtype(token.dtype, np.integer) or not self.action_space.contains(token):
            raise ValueError(f"action must be a token id in [0, {N_TOKENS}), got {action!r}")
        obs, reward, terminated, truncated, info = self.batch.step(token.reshape(1), None)
        step_info: dict[str, Any] = {"length": 1.0}
        if terminated[0] or truncated[0]:
            step_info["is_success"] = bool(info["is_success"][0])
        # Python scalars (not NumPy ones) so that SyncVectorEnv batches them with the right dtype.
        return obs[0], float(reward[0]), bool(terminated[0]), bool(truncated[0]), step_info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        problem, length = int(self.batch.problem[0]), int(self.batch.length[0])
        return f"{self.problems.describe(problem)}\nanswer: {describe_tokens(self.batch.answers[0, :length])}"


class TargetSumVectorEnv(NativeVectorEnv):
    """``num_envs`` TargetSum episodes stepped as one NumPy batch.

    The ``vector_entry_point`` of ``TargetSum-v0``: ``gym.make_vec("TargetSum-v0", num_envs=n)`` builds it (see
    :class:`~ordergrad_rl.envs.native_vector.NativeVectorEnv` for the autoreset modes). Spaces, rewards and infos
    are those of :class:`TargetSumEnv`, batched; results equal ``SyncVectorEnv`` over single envs, env ``i`` reset
    with seed ``s`` being seeded ``s + i``. ``reset(options={"problem": p})`` takes an int (every reset env) or an
    int array ``[n]`` (one problem per env; with ``reset_mask``, only the masked entries are used), so that
    ``n_groups * G`` envs can pose ``n_groups`` problems to ``G`` envs each. Autoresets draw problems at random.
    The :class:`TargetSumBatch` it steps is its ``batch`` attribute (it can step a subset of the envs).

    :param num_envs: number of parallel episodes.
    :param autoreset_mode: an ``AutoresetMode`` or its string value.
    :param render_mode: only ``None`` (the batch does not render).
    :param max_episode_steps: only ``None`` (the batch has no ``TimeLimit``; answers are truncated at
        ``max_answer_length`` tokens).
    :param env_kwargs: the other arguments of :class:`TargetSumEnv`.
    """

    final_step_info_keys = ("is_success",)
    #: Grouped rollouts pose a context with ``reset(options={"problem": c})``
    #: (see :mod:`ordergrad_rl.agents.common.groups`).
    context_key = "problem"

    def __init__(
        self,
        num_envs: int = 1,
        *,
        autoreset_mode: AutoresetMode | str = AutoresetMode.NEXT_STEP,
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        **env_kwargs: Any,
    ) -> None:
        _check_env_arguments(self, env_kwargs)
        self.batch = _batch_from_kwargs(num_envs, **env_kwargs)
        self.problems = self.batch.problems
        self.single_observation_space, self.single_action_space = target_sum_spaces(self.batch)
        self._init_vector(self.batch.num_envs, autoreset_mode, render_mode, max_episode_steps)

    @property
    def env_rngs(self) -> list[np.random.Generator | None]:
        return self.batch.rngs

    @property
    def n_contexts(self) -> int:
        """Number of problems: grouped rollouts pose ``options={"problem": c}``, ``c < n_contexts``."""
        return len(self.problems)

    def _reset_envs(
        self, seed: int | list[int | None] | None, env_ids: np.ndarray | None, options: dict[str, Any] | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        problem = _problem_option(options)
        ids = np.arange(self.num_envs) if env_ids is None else env_ids
        reseed(self.batch.rngs, seed, ids)
        obs = self.batch.reset(ids, problem)
        return obs, {"problem": self.batch.problem.copy()}

    def _step_envs(self, actions: Any, env_ids: np.ndarray | None) -> BatchStep:
        return self.batch.step(actions, env_ids)
