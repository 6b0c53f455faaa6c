"""TargetSum as text (ordergrad_rl.reasoning.text) and ``reproduce reasoning-lm``: the tokenizer puts TargetSum's
tokens at their env ids, completions are checked by the env's verifier, the base model is cached and deterministic,
and the reproduction runs end to end through TRL (``--quick``)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("trl", reason="the [trl] extra is not installed")

from ordergrad_rl.cli import main  # noqa: E402
from ordergrad_rl.envs.target_sum import EOS, MAX_VALUE, target_sum_problems, verify_answers  # noqa: E402
from ordergrad_rl.experiments import reasoning_lm  # noqa: E402
from ordergrad_rl.reasoning import text  # noqa: E402


def test_tokenizer_puts_targetsum_tokens_at_their_env_ids() -> None:
    tokenizer = text.make_tokenizer()
    assert tokenizer("5 =5 7 =12")["input_ids"] == [5, MAX_VALUE + 5, 7, MAX_VALUE + 12]
    assert tokenizer.eos_token_id == EOS and tokenizer.pad_token_id == text.PAD
    problems = target_sum_problems("test")
    prompt = text.prompt_text(problems, 0)
    numbers = [str(v) for v in problems.numbers[0] if v]
    assert prompt == " ".join([*numbers, "target", f"={problems.targets[0]}", "answer"])
    assert tokenizer.decode(tokenizer(prompt)["input_ids"]) == prompt


def test_completions_are_checked_by_the_envs_verifier() -> None:
    problems = target_sum_problems("test")
    i = int(np.argmax([len(problems.solutions(j)[0]) == 2 for j in range(len(problems))]))
    a, b = problems.solutions(i)[0]
    right = [a, MAX_VALUE + a, b, MAX_VALUE + a + b, EOS]
    cases = {
        "right": (right, True),
        "right, padded after <eos>": (right + [text.PAD, text.PAD], True),
        "no <eos> (truncated)": (right[:-1], False),
        "a word that is no TargetSum token": ([a, text.WORDS.index("target"), b, MAX_VALUE + a + b, EOS], False),
        "wrong total": ([a, MAX_VALUE + a, b, MAX_VALUE + a + b + 1, EOS], False),
        "<eos> first": ([EOS], False),
    }
    ids = [ids for ids, _ in cases.values()]
    correct, lengths = text.check_answers(problems, [i] * len(ids), ids, 16)
    assert correct.tolist() == [expected for _, expected in cases.values()], list(cases)
    assert lengths.tolist() == [5, 5, 16, 5, 5, 1]
    answers, n = text.answers_from_ids([right], 16)  # the verifier itself agrees on the converted answer
    assert verify_answers(problems, [i], answers, n).tolist() == [True]
    rewards = text.reward_functions(problems, 16)
    assert rewards["correct"](None, completion_ids=ids, problem_id=[i] * len(ids)) == [1.0, 1.0, 0, 0, 0, 0]
    assert rewards["length"](None, completion_ids=[right], problem_id=[i]) == [-5 / 16]


TINY = text.TextBaseConfig(n_train=50, n_test=10, demos_per_problem=2, epochs=1, hidden_size=16, layers=1, heads=2)


def test_base_model_is_cached_and_deterministic(tmp_path: Path) -> None:
    import torch

    model, tokenizer, report = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path)
    path = text.text_base_path(TINY, 0, tmp_path)
    assert (path / "report.json").exists() and len(report["loss_per_epoch"]) == 1
    again, _, report_again = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path)  # read back
    assert report_again == report
    fresh, _, _ = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path / "other")  # built again
    for a, b, c in zip(model.parameters(), again.parameters(), fresh.parameters(), strict=True):
        assert torch.equal(a, b) and torch.equal(a, c)
    problems = target_sum_problems("test", 0, TINY.n_train, TINY.n_test)
    correct, lengths = text.sample_correct(model, problems, [0, 1, 2], 5, 16, seed=0, batch=4)
    assert correct.shape == lengths.shape == (3, 5) and lengths.min() >= 1 and lengths.max() <= 16


def test_base_model_build_is_the_same_on_any_thread_count_and_leaves_torchs_state(tmp_path: Path) -> None:
    # The cache key holds no thread count, and the reproduction builds on the command line's one thread: a build in
    # a Python session (torch's default, a thread per core) came out other bits and cached them for everyone.
    import torch

    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        torch.manual_seed(123)
        state = torch.get_rng_state()
        two, _, _ = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path / "two")
        assert torch.get_num_threads() == 2 and torch.equal(torch.get_rng_state(), state)
        torch.set_num_threads(1)
        one, _, _ = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path / "one")
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(one.parameters(), two.parameters(), strict=True):
        assert torch.equal(a, b)


def test_sampling_leaves_the_global_generator_and_the_models_mode(tmp_path: Path) -> None:
    # it reseeded the global torch generator (an evaluation inside one's own training loop made every later draw
    # repeat after each evaluation) and left a training model in eval mode
    import torch

    model, _, _ = text.build_text_base_model(TINY, seed=0, cache_dir=tmp_path)
    problems = target_sum_problems("test", 0, TINY.n_train, TINY.n_test)
    first = text.sample_correct(model, problems, [0, 1], 6, 16, seed=3)
    model.train()
    torch.manual_seed(123)
    state = torch.get_rng_state()
    again = text.sample_correct(model, problems, [0, 1], 6, 16, seed=3)
    assert torch.equal(torch.get_rng_state(), state) and model.training
    np.testing.assert_array_equal(first[1], again[1])  # the same answers for the same seed


def test_verdicts_read_the_paired_intervals() -> None:
    ks = [1, 2, 4]

    def diff(low: float, high: float) -> dict:
        return {"pass_at_k": [(low + high) / 2] * 3, "ci_low": [low] * 3, "ci_high": [high] * 3}

    summary = {
        "ks": ks,
        "differences": {
            "top2at4 - grpo": diff(0.01, 0.05),
            "top2at4 - maxpo4": diff(-0.02, 0.03),
            "maxpo2 - maxpo6": diff(-0.06, -0.01),
            "top2_bot2_length - top2at4": diff(-0.01, 0.02),
        },
        "methods": {"top2at4": {"mean_length_correct": 6.0}, "top2_bot2_length": {"mean_length_correct": 5.0}},
    }
    lines = reasoning_lm.verdicts(summary)
    assert lines[0].startswith("claim 1: top2at4 - grpo at pass@4") and lines[0].endswith(": reproduced")
    assert lines[1].startswith("claim 2") and lines[1].endswith("not resolved (interval contains 0)")
    assert lines[2].startswith("claim 3: maxpo2 - maxpo6 at pass@1") and lines[2].endswith("contradicted")
    assert lines[3].startswith("claim 3: maxpo2 - maxpo6 at pass@4") and lines[3].endswith(": reproduced")
    assert lines[4].startswith("claim 4") and "6.00 -> 5.00" in lines[4] and lines[4].endswith(": reproduced")


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ({"steps": 0}, "steps must be an integer >= 1, got 0"),  # TRL reads max_steps=0 as unset: 3 whole epochs
        ({"workers": 0}, "workers must be an integer >= 1, got 0"),
        ({"n_prompts": -4}, "n_prompts must be an integer >= 1, got -4"),
    ],
)
def test_the_python_api_refuses_what_the_command_line_refuses(sizes, message) -> None:
    with pytest.raises(ValueError, match=message):
        reasoning_lm.Config(**sizes)


def test_more_test_problems_than_the_split_are_refused_before_the_base_model_is_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path))
    config = reasoning_lm.Config(quick=True, test_problems=101, methods=("grpo",))
    with pytest.raises(ValueError, match="test_problems=101, but the test split has 100 problems"):
        reasoning_lm.run_experiment(config, quiet=True)
    assert not any(tmp_path.iterdir())


def test_quick_reproduction_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("ORDERGRAD_RL_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        status = main(["reproduce", "reasoning-lm", "--quick", "--quiet", "--workers", "1", "--out", str(out),
                       "--json", str(tmp_path / "lm.json")])  # fmt: skip
    assert status == 0
    # TRL 1.16's deprecated transformers names: ten FutureWarnings a run that the command's user cannot act on
    assert [str(w.message) for w in caught if "gradient_checkpointing" in str(w.message)] == []
    printed = capsys.readouterr().out
    assert "verdicts at this scale" in printed and "claim 1: top2at4 - grpo" in printed
    summary = json.loads((tmp_path / "lm.json").read_text())
    assert set(summary["methods"]) == {"grpo", "top2at4", "top2_bot2_length"}
    run = summary["methods"]["top2at4"]["runs"][0]
    assert len(run["train_curve"]) == 2 and len(run["n_correct"]) == 5
    assert summary["methods"]["top2_bot2_length"]["objective"] == "correct=top2@4 + 0.4*length=bot2@4"
    assert (out / "reasoning_lm_passk.png").exists() and (out / "reasoning_lm_training.png").exists()
    assert main(["reproduce", "reasoning-lm", "--quick", "--steps", "5"]) == 2
    assert "--quick sets its own sizes" in capsys.readouterr().err
