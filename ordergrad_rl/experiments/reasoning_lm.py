"""The paper's LLM-reasoning comparison with a transformer trained by TRL (``[trl]`` extra): the same methods and
verdicts as ``reproduce reasoning`` (the GRU miniature), at the next scale and in the trainer people use.

From one base model (:func:`ordergrad_rl.reasoning.text.build_text_base_model`: a 2-layer Llama, width 64, pre-trained
in code on the GRU base model's imperfect demonstrations, TargetSum written as text), every method fine-tunes with
:class:`~ordergrad_rl.integrations.trl.OrderGradGRPOTrainer`, TRL's ``GRPOTrainer`` with OrderGrad advantages:

* GRPO: ``objective="mean"`` (TRL's own GRPO advantage with ``scale_rewards="group"``);
* MaxPO K = 2, 4, 6: ``max@K``; Top-M@K, (M, K) = (2, 4), (2, 6), (3, 6): ``topM@K``;
* GRPO on ``r - 0.2 L / L_max`` (``correct=mean + 0.2*length=mean``, the reward functions ``correct`` (0/1) and
  ``length`` (``-L / L_max``)) against Top-2@4 correctness + Bottom-2@4 length, weight 0.4
  (``correct=top2@4 + 0.4*length=bot2@4``).

Fairness: the base model and these settings were fixed before any method was compared and are the same for every
method (tuning budget: none): TRL's ``GRPOConfig`` defaults but ``num_generations`` 8 (G), 16 prompts (128
completions) per step, ``--steps`` steps, learning rate 3e-4 (the GRU miniature's), temperature 1, completions of
at most 16 tokens, ``scale_rewards="group"`` (the paper's), seeds ``0 .. --seeds - 1``. Evaluation: pass@k for k = 1,
2, 4, ..., ``--samples`` from ``--samples`` answers (temperature 1) per test problem, unbiased estimator, 95%
bootstrap intervals over seeds and problems, paired differences for the paper's comparisons (the GRU
miniature's :func:`~ordergrad_rl.experiments.reasoning.summarize_methods`).

Outputs (``--out``): the same figures as ``reproduce reasoning`` with ``reasoning_lm_`` names, the table, the
differences and the four claims each marked by what the run measured. ``--quick``: a tiny base model, 2 steps, 1
seed, 3 methods, 5 test problems (the same code path; numbers meaningless).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
import warnings
from dataclasses import dataclass
from typing import Any

from ordergrad_rl.common.extras import require_extra
from ordergrad_rl.common.jobs import Job, report_progress, run_jobs
from ordergrad_rl.common.options import add_output_arguments, positive_int
from ordergrad_rl.common.reports import write_json
from ordergrad_rl.experiments.reasoning import (
    DEFAULT_METHODS,
    PAPER_CLAIMS,
    base_config_for,
    check_config,
    config_from_arguments,
    format_differences,
    format_table,
    summarize_methods,
    write_figures,
)

#: method -> the trainer's objective over the reward functions ``correct`` and ``length`` (= -L / L_max).
OBJECTIVES: dict[str, str] = {
    "grpo": "mean",
    "maxpo2": "max@2",
    "maxpo4": "max@4",
    "maxpo6": "max@6",
    "top2at4": "top2@4",
    "top2at6": "top2@6",
    "top3at6": "top3@6",
    "grpo_length": "correct=mean + 0.2*length=mean",
    "top2_bot2_length": "correct=top2@4 + 0.4*length=bot2@4",
}
#: The verdict of each paper claim: ``(claim, difference, k, expected sign)``; a claim is reproduced when the
#: paired difference's 95% interval excludes 0 with the paper's sign (claim 4: the length term costs no pass@k
#: at any k, reproduced when every interval reaches 0 or above, and shortens correct answers).
CLAIMS: tuple[tuple[int, str, str, int], ...] = (
    (1, "top2at4 - grpo", "max", +1),
    (2, "top2at4 - maxpo4", "1", +1),
    (3, "maxpo2 - maxpo6", "1", +1),
    (3, "maxpo2 - maxpo6", "max", -1),
)


#: Per-step training curves in the figure (TRL's logged metrics).
TRAINING_PANELS: tuple[tuple[str, str], ...] = (
    ("success", "success rate"),
    ("length", "mean completion length"),
    ("frac_reward_zero_std", "groups with one reward value"),
)


@dataclass(frozen=True)
class Config:
    """What a reproduction runs (``--quick`` shrinks every size; the code path is the same)."""

    seeds: int = 3
    steps: int = 60
    group_size: int = 8
    n_prompts: int = 16
    learning_rate: float = 3e-4
    test_problems: int = 100
    samples: int = 256
    methods: tuple[str, ...] = tuple(m for m in DEFAULT_METHODS if m in OBJECTIVES)
    workers: int | None = None
    quick: bool = False

    def __post_init__(self) -> None:
        workers = () if self.workers is None else ("workers",)
        check_config(self, OBJECTIVES, ("seeds", "steps", "group_size", "n_prompts", *workers))

    def base_config(self) -> Any:
        from ordergrad_rl.reasoning.text import TextBaseConfig

        if not self.quick:
            return TextBaseConfig()
        return TextBaseConfig(n_train=200, demos_per_problem=4, epochs=1, hidden_size=16, layers=1, heads=2)


def quick_config() -> Config:
    return Config(seeds=1, steps=2, n_prompts=4, test_problems=5, samples=8, quick=True,
                  methods=("grpo", "top2at4", "top2_bot2_length"))  # fmt: skip


def evaluate(model: Any, config: Config, seed: int) -> dict[str, Any]:
    """pass@k and answer lengths of ``model`` on the first ``config.test_problems`` test problems."""
    from ordergrad_rl.envs.target_sum import target_sum_problems
    from ordergrad_rl.reasoning.sampling import pass_at_k_report
    from ordergrad_rl.reasoning.text import sample_correct

    base = config.base_config()
    test = target_sum_problems("test", base.problem_seed, base.n_train, base.n_test)
    correct, lengths = sample_correct(
        model, test, range(config.test_problems), config.samples, base.max_answer_length, seed=seed
    )
    return pass_at_k_report(correct, lengths)


def train_run(method: str, seed: int, config: Config) -> dict[str, Any]:
    """Fine-tune the base model with ``method`` through TRL for ``config.steps`` steps, then evaluate it (a job)."""
    import torch as th
    from datasets import Dataset
    from transformers import PrinterCallback, TrainerCallback
    from transformers.utils import logging as transformers_logging
    from trl import GRPOConfig

    from ordergrad_rl.envs.target_sum import target_sum_problems
    from ordergrad_rl.integrations.trl import OrderGradGRPOTrainer
    from ordergrad_rl.reasoning.text import build_text_base_model, prompt_text, reward_functions

    th.set_num_threads(1)
    transformers_logging.disable_progress_bar()
    start = time.perf_counter()
    base = config.base_config()
    model, tokenizer, _ = build_text_base_model(base, seed=0)  # from the cache the caller filled
    train = target_sum_problems("train", base.problem_seed, base.n_train, base.n_test)
    dataset = Dataset.from_dict(
        {"prompt": [prompt_text(train, i) for i in range(len(train))], "problem_id": list(range(len(train)))}
    )
    functions = reward_functions(train, base.max_answer_length)
    names = ["correct", "length"] if "length" in OBJECTIVES[method] else ["correct"]

    class Progress(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            report_progress(1)

    with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
        # TRL 1.16 uses transformers' gradient-checkpointing API by its deprecated names, in its config and at every
        # step: ten FutureWarnings a run that no option of this command acts on (TRL's to update)
        warnings.filterwarnings(
            "ignore", message=r"`(is_)?gradient_checkpointing\w*` is deprecated", category=FutureWarning
        )
        args = GRPOConfig(
            output_dir=out, per_device_train_batch_size=config.n_prompts * config.group_size,
            num_generations=config.group_size, max_steps=config.steps, max_completion_length=base.max_answer_length,
            learning_rate=config.learning_rate, temperature=1.0, top_k=0, scale_rewards="group", seed=seed,
            logging_steps=1, report_to=[], use_cpu=True, save_strategy="no", disable_tqdm=True,
        )  # fmt: skip
        trainer = OrderGradGRPOTrainer(
            model, reward_funcs=[functions[name] for name in names], args=args, train_dataset=dataset,
            processing_class=tokenizer, objective=OBJECTIVES[method], callbacks=[Progress()],
        )  # fmt: skip
        trainer.remove_callback(PrinterCallback)  # the progress bar of the jobs stands for TRL's log lines
        trainer.train()
    curve = [
        {
            "success": entry["rewards/correct/mean"],
            "length": entry["completions/mean_length"],
            "frac_reward_zero_std": entry["frac_reward_zero_std"],
        }
        for entry in trainer.state.log_history
        if "rewards/correct/mean" in entry
    ]
    train_seconds = time.perf_counter() - start
    result = evaluate(trainer.model, config, seed=10_000 + seed)
    result.update(train_seconds=train_seconds, train_curve=curve)
    return result


def verdicts(summary: dict[str, Any]) -> list[str]:
    """Each paper claim marked reproduced or not by the paired differences' 95% intervals (and, for claim 4, the
    lengths), with the numbers."""
    ks = summary["ks"]
    lines = []
    for claim, name, at, sign in CLAIMS:
        if name not in summary["differences"]:
            continue
        d = summary["differences"][name]
        i = ks.index(1) if at == "1" else len(ks) - 1
        low, high, mean = d["ci_low"][i], d["ci_high"][i], d["pass_at_k"][i]
        held = (low > 0) if sign > 0 else (high < 0)
        opposite = (high < 0) if sign > 0 else (low > 0)
        verdict = "reproduced" if held else ("contradicted" if opposite else "not resolved (interval contains 0)")
        lines.append(f"claim {claim}: {name} at pass@{ks[i]} = {mean:+.3f} [{low:+.3f}, {high:+.3f}]: {verdict}")
    name = "top2_bot2_length - top2at4"
    if name in summary["differences"] and "top2at4" in summary["methods"]:
        d = summary["differences"][name]
        no_loss = all(high >= 0 for high in d["ci_high"])
        longer, shorter = (summary["methods"][m]["mean_length_correct"] for m in ("top2at4", "top2_bot2_length"))
        shortens = longer is not None and shorter is not None and shorter < longer
        verdict = "reproduced" if no_loss and shortens else "not reproduced"
        lengths = "no correct answers" if longer is None or shorter is None else f"{longer:.2f} -> {shorter:.2f}"
        lines.append(
            f"claim 4: length term, pass@k difference intervals all reach >= 0: {no_loss}; correct answers "
            f"(tokens, Top-2@4 -> with the length term): {lengths}: {verdict}"
        )
    return lines


def run_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Build (or read) the base model, train and evaluate every method on every seed as jobs; the summary."""
    from ordergrad_rl.passk import default_ks
    from ordergrad_rl.reasoning.text import build_text_base_model

    start = time.perf_counter()
    model, _, report = build_text_base_model(base_config_for(config), seed=0)  # fills the cache the jobs read
    summary: dict[str, Any] = {"config": dataclasses.asdict(config), "base_report": report}
    summary["ks"] = default_ks(config.samples).tolist()
    summary["base"] = evaluate(model, config, seed=10_000)
    jobs = [
        Job(f"{method}/seed{seed}", train_run, {"method": method, "seed": seed, "config": config}, config.steps)
        for method in config.methods
        for seed in range(config.seeds)
    ]
    results = run_jobs(jobs, config.workers, desc="TRL runs", unit="step", quiet=quiet)
    runs = {method: [results[f"{method}/seed{seed}"] for seed in range(config.seeds)] for method in config.methods}
    summary["methods"], summary["differences"] = summarize_methods(runs, config.samples, summary["ks"])
    for method, entry in summary["methods"].items():
        entry["objective"] = OBJECTIVES[method]
    summary["verdicts"] = verdicts(summary)
    summary["wall_seconds"] = time.perf_counter() - start
    return summary


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = Config()
    parser.add_argument("--seeds", type=positive_int, default=None, help=f"seeds (default: {default.seeds})")
    parser.add_argument(
        "--steps", type=positive_int, default=None, help=f"TRL steps per run (default: {default.steps})"
    )
    parser.add_argument(
        "--samples", type=positive_int, default=None, help=f"answers per test problem (default: {default.samples})"
    )
    parser.add_argument(
        "--methods", nargs="+", choices=list(OBJECTIVES), default=None, metavar="METHOD",
        help="methods to run, of: %(choices)s (default: all; --quick: grpo, top2at4, top2_bot2_length)",
    )  # fmt: skip
    parser.add_argument("--workers", type=positive_int, default=None, help="parallel runs (default: the cores)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, same code path (CI)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "reasoning_lm")


def run(args: argparse.Namespace) -> int:
    require_extra("trl", ("trl", "transformers", "datasets"), "reproduce reasoning-lm")
    variant: dict[str, Any] = {"workers": args.workers}
    if args.methods is not None:
        variant["methods"] = tuple(dict.fromkeys(args.methods))
    config = config_from_arguments(args, ("seeds", "steps", "samples"), Config(), quick_config(), **variant)
    from ordergrad_rl.reasoning.text import text_base_path

    path = text_base_path(config.base_config(), seed=0)
    if not args.quiet and not (path / "report.json").exists():
        print(f"building the base model (a few minutes on one thread; cached in {path})", flush=True)
    summary = run_experiment(config, quiet=args.quiet)
    print(
        f"TargetSum with a transformer through TRL: {len(config.methods)} methods x {config.seeds} seeds, "
        f"{config.steps} steps of {config.n_prompts} prompts x {config.group_size} completions, lr "
        f"{config.learning_rate}; pass@k from {config.samples} answers on {config.test_problems} test problems; base "
        f"model built in {summary['base_report']['build_seconds']:.0f} s\n"
    )
    print(format_table(summary))
    if summary["differences"]:
        print("\npaired differences (95% bootstrap over seeds and problems):\n")
        print(format_differences(summary))
    print("\n" + PAPER_CLAIMS + "\n\nverdicts at this scale:")
    print("\n".join(f"  {line}" for line in summary["verdicts"]))
    for path in write_figures(summary, args.out, prefix="reasoning_lm", training_panels=TRAINING_PANELS):
        print(f"figure: {path}")
    if args.json is not None:
        print(f"json: {write_json(args.json, summary)}")
    seconds = [r["train_seconds"] for e in summary["methods"].values() for r in e["runs"]]
    print(f"total time: {summary['wall_seconds']:.0f} s; training runs {min(seconds):.0f}-{max(seconds):.0f} s each")
    return 0
