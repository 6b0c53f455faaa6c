"""Imperfect TargetSum demonstrations: the answers of a simulated student, the base model's training data.

The student is a noisy version of a correct solver, with three human-like weaknesses, so that a model imitating it
gets the coverage the paper's base models have: low pass@1, much higher pass@256, and wrong answers longer than right
ones (the paper's Fig. length_dist):

1. **Search.** With probability ``skill`` it picks a number that keeps the target reachable from the numbers it has
   left (any of them, uniformly), otherwise any number it has left.
2. **Arithmetic.** It writes the running total, and slips with probability
   ``min(max_slip, slip_base + slip_growth * (total / MAX_TOTAL) ** 2)`` (large totals are harder), writing the
   total off by -10, -2, -1, +1, +1, +2 or +10 (clipped to the writable totals). It then goes on from what it wrote,
   so a slip is never repaired.
3. **Rambling.** When its (written) total reaches the target it stops with probability ``stop``; once it has
   overshot, run out of numbers or not stopped, it rambles: it keeps adding numbers (one it has left or any number,
   even or odds) with their totals, ``ramble`` being the probability of each further pair, until it writes
   ``<eos>`` or runs out of room (truncation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ordergrad_rl.envs.target_sum import EOS, MAX_TOTAL, MAX_VALUE, TargetSumProblems, number_token, total_token

#: Slip offsets of a running total (+1 twice as likely as the others).
SLIPS: tuple[int, ...] = (-10, -2, -1, 1, 1, 2, 10)


@dataclass(frozen=True)
class StudentConfig:
    """The simulated student's weaknesses (see the module docstring).

    The defaults were chosen, before any RL run, so that the base model imitating the student on the default problem
    set has the paper's base-model profile on the test split (measured: pass@1 0.139, pass@256 0.882, wrong answers
    2.7x longer than right ones; ``scripts/measure_base_model.py``, 2026-12-07).

    :param skill: probability of a search step that keeps the target reachable.
    :param slip_base: slip probability of a running total near 0.
    :param slip_growth: added slip probability at ``total = MAX_TOTAL`` (quadratic in the total).
    :param max_slip: cap of the slip probability.
    :param stop: probability of ``<eos>`` when the written total equals the target.
    :param ramble: probability of one more pair per pair once off track.
    """

    skill: float = 0.6
    slip_base: float = 0.02
    slip_growth: float = 2.0
    max_slip: float = 0.8
    stop: float = 0.9
    ramble: float = 0.8

    def __post_init__(self) -> None:
        for name in ("skill", "slip_base", "slip_growth", "max_slip", "stop", "ramble"):
            value = getattr(self, name)
            high = np.inf if name == "slip_growth" else 1.0
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= high:
                raise ValueError(f"StudentConfig.{name} must be a number in [0, {high}], got {value!r}")

    def slip_probability(self, total: int) -> float:
        """Probability of miswriting the running total ``total``."""
        return min(self.max_slip, self.slip_base + self.slip_growth * (total / MAX_TOTAL) ** 2)


def _reachable(values: list[int]) -> int:
    """Bit set of the sums of the sub-multisets of ``values`` (bit ``s`` set iff ``s`` is reachable)."""
    bits = 1
    for value in values:
        bits |= bits << value
    return bits


def _answer(
    numbers: list[int], target: int, student: StudentConfig, length: int, rng: np.random.Generator
) -> list[int]:
    """One demonstration: the student's tokens for the problem, ``<eos>`` included unless truncated."""
    left = list(numbers)
    written = 0  # the running total as the student wrote it
    tokens: list[int] = []
    on_track = True
    while len(tokens) < length:
        if on_track and written == target:
            if rng.random() < student.stop:
                tokens.append(EOS)
                return tokens
            on_track = False
        if on_track and (written > target or not left):
            on_track = False
        if on_track:
            feasible = [
                i
                for i, value in enumerate(left)
                if value <= target - written and _reachable(left[:i] + left[i + 1 :]) >> (target - written - value) & 1
            ]
            pick = feasible[rng.integers(len(feasible))] if feasible and rng.random() < student.skill else None
            value = left.pop(int(rng.integers(len(left))) if pick is None else pick)
        else:
            if rng.random() >= student.ramble:
                tokens.append(EOS)
                return tokens
            from_list = left and rng.random() < 0.5
            value = left.pop(int(rng.integers(len(left)))) if from_list else int(rng.integers(1, MAX_VALUE + 1))
        written += value
        if rng.random() < student.slip_probability(written):
            written += SLIPS[rng.integers(len(SLIPS))]
        written = min(max(written, 1), MAX_TOTAL)
        tokens.append(number_token(value))
        if len(tokens) < length:
            tokens.append(total_token(written))
    return tokens


def demonstrations(
    problems: TargetSumProblems,
    per_problem: int,
    max_answer_length: int,
    rng: np.random.Generator,
    student: StudentConfig | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``per_problem`` student answers to every problem.

    :return: ``problem_ids [N]``, ``answers [N, max_answer_length]`` token ids (``<eos>``-padded) and
        ``lengths [N]`` (tokens written, ``<eos>`` included), with ``N = len(problems) * per_problem``, problem by
        problem.
    """
    student = student or StudentConfig()
    ids = np.repeat(np.arange(len(problems)), per_problem)
    answers = np.full((len(ids), max_answer_length), EOS, dtype=np.int64)
    lengths = np.zeros(len(ids), dtype=np.int64)
    rows = [[int(v) for v in row if v] for row in problems.numbers]
    for n, problem in enumerate(ids):
        tokens = _answer(rows[problem], int(problems.targets[problem]), student, max_answer_length, rng)
        answers[n, : len(tokens)] = tokens
        lengths[n] = len(tokens)
    return ids, answers, lengths
