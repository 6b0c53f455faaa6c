"""TargetSum as text for language-model RL: a word-level tokenizer, a tiny causal transformer pre-trained in code on
the same imperfect demonstrations as the GRU base model, reward functions and pass@k by sampling (the ``[trl]``
extra: transformers and tokenizers).

A problem is the prompt ``"2 3 5 7 9 target =12 answer"`` and an answer the completion ``"5 =5 7 =12"`` then
``<eos>``. The vocabulary puts every TargetSum token at its env id (``<eos>`` 0, the numbers ``1`` .. ``12``, the
totals ``=1`` .. ``=60``), then ``<pad>``, ``target`` and ``answer``; so a completion's token ids are TargetSum
answers as they are, checked by :func:`~ordergrad_rl.envs.target_sum.verify_answers`.

    from ordergrad_rl.reasoning.text import TextBaseConfig, build_text_base_model
    model, tokenizer, report = build_text_base_model(TextBaseConfig(), seed=0)   # minutes the first time, then cached

The base model is a :class:`transformers.LlamaForCausalLM` (:class:`TextBaseConfig`: 2 layers, width 64 by
default) trained by cross-entropy on the answer tokens of ``demos_per_problem`` student demonstrations
(:mod:`ordergrad_rl.reasoning.demonstrations`, the same student as the GRU) of every train problem.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from ordergrad_rl.common.extras import require_extra
from ordergrad_rl.envs.target_sum import (
    EOS,
    MAX_TOTAL,
    MAX_VALUE,
    N_TOKENS,
    TargetSumProblems,
    number_token,
    total_token,
    verify_answers,
)
from ordergrad_rl.reasoning.base_model import cache_key, default_cache_dir, one_thread
from ordergrad_rl.reasoning.demonstrations import StudentConfig, demonstrations

#: The words of the vocabulary, at their token ids: TargetSum's tokens first (at their env ids), then the rest.
WORDS: tuple[str, ...] = (
    "<eos>",
    *(str(v) for v in range(1, MAX_VALUE + 1)),
    *(f"={t}" for t in range(1, MAX_TOTAL + 1)),
    "<pad>",
    "target",
    "answer",
)
PAD = WORDS.index("<pad>")
assert len(WORDS) == N_TOKENS + 3 and WORDS[total_token(1)] == "=1"


@dataclasses.dataclass(frozen=True)
class TextBaseConfig:
    """How the text base model is built (deterministic for a seed).

    The defaults mirror the GRU base model's data (:class:`~ordergrad_rl.reasoning.BaseModelConfig`: 2000 train
    problems, 20 demonstrations each, answers of at most 16 tokens); the model size and training were chosen once,
    before any RL run, not tuned. Measured with them: test pass@1 0.235, pass@256 0.950, wrong answers 2.5x longer
    than right ones; built in 227 s on one thread of this machine while other jobs held the cores.

    :param problem_seed: seed of the TargetSum problem set.
    :param n_train: train problems.
    :param n_test: test problems.
    :param max_answer_length: answer tokens, ``<eos>`` included (the completion length of the RL runs).
    :param student: the simulated student writing the demonstrations.
    :param demos_per_problem: demonstrations per train problem.
    :param hidden_size: transformer width.
    :param layers: transformer layers.
    :param heads: attention heads.
    :param epochs: passes over the demonstrations.
    :param batch_size: demonstrations per gradient step.
    :param learning_rate: peak learning rate of the one-cycle AdamW schedule.
    """

    problem_seed: int = 0
    n_train: int = 2000
    n_test: int = 100
    max_answer_length: int = 16
    student: StudentConfig = dataclasses.field(default_factory=StudentConfig)
    demos_per_problem: int = 20
    hidden_size: int = 64
    layers: int = 2
    heads: int = 4
    epochs: int = 4
    batch_size: int = 256
    learning_rate: float = 3e-3


def make_tokenizer() -> Any:
    """The word-level tokenizer of :data:`WORDS` (a ``PreTrainedTokenizerFast``, built in code)."""
    require_extra("trl", ("transformers", "tokenizers"), "the TargetSum text model")
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.WordLevel({word: i for i, word in enumerate(WORDS)}, unk_token="<pad>"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="<pad>", eos_token="<eos>")


def make_model(config: TextBaseConfig, seed: int) -> Any:
    """A freshly initialized ``LlamaForCausalLM`` of the config's size."""
    require_extra("trl", ("transformers",), "the TargetSum text model")
    from transformers import LlamaConfig, LlamaForCausalLM

    th.manual_seed(seed)
    llama = LlamaConfig(
        vocab_size=len(WORDS), hidden_size=config.hidden_size, intermediate_size=2 * config.hidden_size,
        num_hidden_layers=config.layers, num_attention_heads=config.heads, num_key_value_heads=config.heads,
        max_position_embeddings=64, pad_token_id=PAD, eos_token_id=EOS, bos_token_id=EOS, tie_word_embeddings=True,
    )  # fmt: skip
    return LlamaForCausalLM(llama)


def prompt_words(problems: TargetSumProblems, index: int) -> list[str]:
    """``["2", "3", "5", "7", "9", "target", "=12", "answer"]``."""
    numbers = [WORDS[number_token(int(v))] for v in problems.numbers[index] if v]
    return [*numbers, "target", WORDS[total_token(int(problems.targets[index]))], "answer"]


def prompt_ids(problems: TargetSumProblems, index: int) -> list[int]:
    """The prompt's token ids (:func:`prompt_words` in the vocabulary)."""
    return [WORDS.index(word) for word in prompt_words(problems, index)]


def prompt_text(problems: TargetSumProblems, index: int) -> str:
    """The prompt of a problem: ``"2 3 5 7 9 target =12 answer"``."""
    return " ".join(prompt_words(problems, index))


def answers_from_ids(completion_ids: Sequence[Sequence[int]], max_answer_length: int) -> tuple[np.ndarray, np.ndarray]:
    """Completions (token ids, as generated) as TargetSum answers.

    A completion ends at its first ``<eos>``; one without ``<eos>`` in ``max_answer_length`` tokens is truncated
    (wrong); tokens that are not TargetSum tokens (``<pad>``, ``target``, ``answer``) make it wrong.

    :return: ``answers [B, max_answer_length]`` (``<eos>``-padded) and ``lengths [B]`` (tokens, ``<eos>``
        included; ``max_answer_length`` for a truncated one, whose last token is then not ``<eos>``).
    """
    answers = np.full((len(completion_ids), max_answer_length), EOS, dtype=np.int64)
    lengths = np.full(len(completion_ids), max_answer_length, dtype=np.int64)
    for row, ids in enumerate(completion_ids):
        ids = [int(i) for i in ids][:max_answer_length]
        if EOS in ids:
            ids = ids[: ids.index(EOS) + 1]
            lengths[row] = len(ids)
        else:
            ids = ids + [N_TOKENS] * (max_answer_length - len(ids))  # no <eos>: never correct
        # Words that are no TargetSum token become N_TOKENS, outside every token class: the verifier rejects it.
        answers[row, : len(ids)] = np.minimum(ids, N_TOKENS)
    return answers, lengths


def check_answers(
    problems: TargetSumProblems, problem_ids: Sequence[int], completion_ids: Sequence[Sequence[int]], length: int
) -> tuple[np.ndarray, np.ndarray]:
    """``(correct [B] bool, answer lengths [B])`` of completions."""
    answers, lengths = answers_from_ids(completion_ids, length)
    return verify_answers(problems, np.asarray(problem_ids), answers, lengths), lengths


def reward_functions(problems: TargetSumProblems, max_answer_length: int) -> dict[str, Callable[..., list[float]]]:
    """TRL reward functions over the dataset column ``problem_id``: ``correct`` (1.0 or 0.0) and ``length``
    (``-L / L_max``, the answer's tokens; the paper's length reward)."""

    def correct(completions: list, completion_ids: list, problem_id: list, **kwargs: Any) -> list[float]:
        ok, _ = check_answers(problems, problem_id, completion_ids, max_answer_length)
        return ok.astype(float).tolist()

    def length(completions: list, completion_ids: list, problem_id: list, **kwargs: Any) -> list[float]:
        _, lengths = answers_from_ids(completion_ids, max_answer_length)
        return (-lengths / max_answer_length).tolist()

    return {"correct": correct, "length": length}


# ---------------------------------------------------------------------------------------------------- pre-training
def _sequences(problems: TargetSumProblems, ids: np.ndarray, answers: np.ndarray, lengths: np.ndarray):
    """``input_ids [N, T]`` (left-padded prompts, then the answer, then padding) and ``labels [N, T]`` (the
    answer's tokens, ``-100`` elsewhere)."""
    prompts = [prompt_ids(problems, i) for i in range(len(problems))]
    width = max(len(p) for p in prompts)
    total = width + answers.shape[1]
    input_ids = np.full((len(ids), total), PAD, dtype=np.int64)
    labels = np.full((len(ids), total), -100, dtype=np.int64)
    for row, (problem, answer, n) in enumerate(zip(ids, answers, lengths, strict=True)):
        prompt = prompts[problem]
        input_ids[row, width - len(prompt) : width] = prompt
        input_ids[row, width : width + n] = answer[:n]
        labels[row, width : width + n] = answer[:n]
    return th.as_tensor(input_ids), th.as_tensor(labels)


def build_text_base_model(
    config: TextBaseConfig | None = None, seed: int = 0, cache_dir: Path | None = None
) -> tuple[Any, Any, dict[str, Any]]:
    """The text base model pre-trained on student demonstrations, built on one thread, deterministically for
    ``seed`` (like the GRU base model; torch's thread count and global generator are restored afterwards), or read
    from the cache (:func:`~ordergrad_rl.reasoning.base_model.default_cache_dir`, keyed like the GRU base model).

    :return: ``(model, tokenizer, report)``; the report has the loss per epoch and the build seconds.
    """
    from transformers import LlamaForCausalLM

    config = config or TextBaseConfig()
    path = text_base_path(config, seed, cache_dir)
    if not (path / "report.json").exists():
        with one_thread(), th.random.fork_rng(devices=[]):
            model, tokenizer, report = _build(config, seed)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        (tmp / "report.json").write_text(json.dumps(report))
        shutil.rmtree(path, ignore_errors=True)
        tmp.rename(path)  # whole or not at all: a build cut short leaves no cache entry
    model = LlamaForCausalLM.from_pretrained(path)
    model.eval()
    return model, make_tokenizer(), json.loads((path / "report.json").read_text())


def text_base_path(config: TextBaseConfig, seed: int, cache_dir: Path | None = None) -> Path:
    """Where the text base model of ``config`` and ``seed`` is cached."""
    return Path(cache_dir or default_cache_dir()) / f"text_base_{cache_key(config, seed)}"


def _build(config: TextBaseConfig, seed: int) -> tuple[Any, Any, dict[str, Any]]:
    from ordergrad_rl.envs.target_sum import target_sum_problems

    start = time.perf_counter()
    tokenizer = make_tokenizer()
    model = make_model(config, seed)
    problems = target_sum_problems("train", config.problem_seed, config.n_train, config.n_test)
    rng = np.random.default_rng(seed)
    ids, answers, lengths = demonstrations(problems, config.demos_per_problem, config.max_answer_length, rng,
                                           config.student)  # fmt: skip
    input_ids, labels = _sequences(problems, ids, answers, lengths)
    attention = (input_ids != PAD).long()
    steps = config.epochs * int(np.ceil(len(ids) / config.batch_size))
    optimizer = th.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    schedule = th.optim.lr_scheduler.OneCycleLR(optimizer, config.learning_rate, total_steps=steps)
    generator = th.Generator().manual_seed(seed)
    losses = []
    model.train()
    for _ in range(config.epochs):
        order = th.randperm(len(ids), generator=generator)
        total, count = 0.0, 0
        for batch in order.split(config.batch_size):
            loss = model(input_ids=input_ids[batch], attention_mask=attention[batch], labels=labels[batch]).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            total, count = total + loss.item() * len(batch), count + len(batch)
        losses.append(total / count)
    model.eval()
    return model, tokenizer, {"loss_per_epoch": losses, "build_seconds": time.perf_counter() - start}


# ---------------------------------------------------------------------------------------------------- sampling
@th.no_grad()
def sample_correct(
    model: Any,
    problems: TargetSumProblems,
    problem_ids: Sequence[int],
    n_samples: int,
    max_answer_length: int,
    seed: int,
    batch: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n_samples`` answers per problem (temperature 1) and check them.

    ``seed`` seeds the sampling in a forked torch generator: the caller's global generator, like the model's
    train/eval mode, is as it was afterwards.

    :return: ``correct [P, n_samples]`` bool and ``lengths [P, n_samples]`` (answer tokens).
    """
    correct = np.zeros((len(problem_ids), n_samples), dtype=bool)
    lengths = np.zeros((len(problem_ids), n_samples), dtype=np.int64)
    training = model.training
    try:
        with th.random.fork_rng():
            th.manual_seed(seed)
            model.eval()
            for row, problem in enumerate(problem_ids):
                prompt = th.tensor([prompt_ids(problems, int(problem))])
                done = 0
                while done < n_samples:
                    size = min(batch, n_samples - done)
                    out = model.generate(
                        prompt.expand(size, -1), attention_mask=th.ones(size, prompt.shape[1], dtype=th.long),
                        do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=max_answer_length,
                        eos_token_id=EOS, pad_token_id=PAD,
                    )  # fmt: skip
                    completions = out[:, prompt.shape[1] :].tolist()
                    ok, n = check_answers(problems, [int(problem)] * size, completions, max_answer_length)
                    correct[row, done : done + size], lengths[row, done : done + size] = ok, n
                    done += size
    finally:
        model.train(training)
    return correct, lengths


__all__ = [
    "PAD",
    "WORDS",
    "TextBaseConfig",
    "answers_from_ids",
    "build_text_base_model",
    "check_answers",
    "make_model",
    "make_tokenizer",
    "prompt_text",
    "reward_functions",
    "sample_correct",
    "text_base_path",
]
