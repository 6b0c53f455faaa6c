"""The paper's LLM-reasoning experiment in miniature (Sec. "LLM Reasoning Experiments", App. "LLM Experiments").

From one base policy (:func:`ordergrad_rl.reasoning.build_base_model`, a GRU imitating an imperfect student on
``TargetSum-v0``'s train split), every method fine-tunes with ``OrderGradPPO`` in the paper's LLM setting, scaled
down: 8 rollouts per problem (``group_size=8``), advantages divided by each group's std
(``normalize_advantage="group"``), PPO clipping 0.2. Methods:

* GRPO: ``objective="mean"`` (with group normalization exactly GRPO's ``(R_i - group mean) / group std``);
* MaxPO K = 2, 4, 6: ``max@K`` (MaxPO K=2 is also the paper's Top-1@2);
* OrderGrad Top-M@K, (M, K) = (2, 4), (2, 6), (3, 6): ``topM@K``;
* multi-reward: GRPO on ``r - 0.2 L / L_max`` (``{"reward": "mean", "length": ("mean", -0.2 / L_max)}``: mean
  advantages are linear, so this is GRPO on the scalarized reward exactly) against Top-2@4 on correctness plus
  Bottom-2@4 on the length reward ``-L / L_max`` with weight 0.4 (the two *longest* of each 4-subset penalized:
  ``{"reward": "top2@4", "length": ("top2@4", -0.4 / L_max)}``, the ``length`` channel being the answer length in
  tokens, ``info["length"]`` summed over the episode).

Fairness: the env, the base model (its report: ``scripts/measure_base_model.py``) and these hyperparameters were
fixed before any method was compared, and are the same for every method (tuning budget: none, for every method):
learning rate 3e-4, ``n_epochs`` 4, minibatches of 256 steps, 256 episodes (32 problems x 8) per update, ``--updates``
updates, from the same base weights, seeds ``0 .. --seeds - 1``. All methods are reported as they come out.

What group normalization leaves of the objectives here: rewards are 0/1, and rank-based advantages are equal for
tied rewards and sum to zero over a group, so each group's weights take two values whose ratio is fixed by the number
``c`` of correct answers; dividing by the group's std then gives exactly GRPO's weights, or zeros. Top-M@K (Max@K is
M = 1) is GRPO on the groups with ``8 - c > K - M`` wrong answers and ignores the others (too easy for the objective:
every K-subset already has M correct). So MaxPO K=4 and Top-3@6 train identically (K - M = 3), and the methods
differ only by that threshold (tested in ``tests/test_reasoning_reproduction.py``).

Variants (each one command): ``--methods`` runs a subset, ``--updates`` a longer budget, and ``--normalize`` sets
every method's ``normalize_advantage``: ``group`` (default, the paper's: each group's weights divided by their
std), ``channel`` (each channel's advantage divided by its own group std before the channel weights; the paper does
not say which of the two it uses; ``top2_bot2_length_w04`` and ``grpo_length_w02`` carry the paper's 0.4 and 0.2 as
relative strengths of normalized channels), ``batch`` (the std of the whole rollout's weights) and ``none`` (the
unbiased weights). Every run's JSON has ``train_curve``, one :func:`weight_diagnostics` per update (what the
weights of that update were made of), and ``differences`` holds the paired pass@k differences of
:data:`COMPARISONS`.

Evaluation: pass@k for k = 1, 2, 4, ..., 256 from n = ``--samples`` (1024) answers per test problem (unbiased
estimator, :func:`ordergrad_rl.pass_at_k`), averaged over the test problems; 95% bootstrap intervals resample seeds
and problems. Lengths of correct and incorrect answers before (base model) and after training.

Figures (``--out``): ``reasoning_passk.png`` (average pass@k, every method without a length reward),
``reasoning_effect_of_m.png`` (K = 6, M = 1, 2, 3), ``reasoning_effect_of_k.png`` (M = 2, K = 4, 6),
``reasoning_length_passk.png`` (pass@k of GRPO, Top-2@4 and the multi-reward methods), ``reasoning_length.png``
(length distributions of correct and incorrect answers, base model and the multi-reward methods),
``reasoning_training.png`` (success rate, answer length and share of groups without a correct answer per update); a
figure none of whose methods ran is skipped. ``--quick`` runs the same code path with a small base model, 2 updates,
10 test problems and 32 samples (under a minute; numbers meaningless).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.options import add_output_arguments, positive_int
from ordergrad_rl.common.progress import progress_bar
from ordergrad_rl.common.reports import markdown_table, pyplot, save_figure, write_json

if TYPE_CHECKING:
    from ordergrad_rl.agents import OrderGradPPO

#: Answer tokens before truncation (``TargetSum-v0``'s default): ``L_max`` of the length reward.
L_MAX = 16

#: method -> (label, objective spec); the spec's channels are "reward" (correct = 1) and "length" (tokens).
METHODS: dict[str, tuple[str, Any]] = {
    "grpo": ("GRPO", "mean"),
    "maxpo2": ("MaxPO K=2 (Top-1@2)", "max@2"),
    "maxpo4": ("MaxPO K=4", "max@4"),
    "maxpo6": ("MaxPO K=6", "max@6"),
    "top2at4": ("Top-2@4", "top2@4"),
    "top2at6": ("Top-2@6", "top2@6"),
    "top3at6": ("Top-3@6", "top3@6"),
    "grpo_length": ("GRPO, r - 0.2 L/Lmax", {"reward": "mean", "length": ("mean", -0.2 / L_MAX)}),
    "top2_bot2_length": ("Top-2@4 + Bottom-2@4 length", {"reward": "top2@4", "length": ("top2@4", -0.4 / L_MAX)}),
    # For --normalize channel, where each channel's advantage is divided by its own group std (the length unit
    # 1/L_max cancels) and the weights are relative strengths: the paper's 0.4 (0.2 for GRPO's penalty) on the
    # normalized length advantage. (GRPO + per-channel normalization is no longer GRPO on one scalarized reward.)
    "top2_bot2_length_w04": (
        "Top-2@4 + Bottom-2@4 length, 0.4 per channel",
        {"reward": "top2@4", "length": ("top2@4", -0.4)},
    ),
    "grpo_length_w02": ("GRPO, 0.2 length per channel", {"reward": "mean", "length": ("mean", -0.2)}),
}

#: The variants whose weights are meant for ``--normalize channel`` (relative strengths of normalized channels).
PER_CHANNEL_METHODS = ("top2_bot2_length_w04", "grpo_length_w02")

#: What ``--methods`` runs by default: every method but the per-channel variants.
DEFAULT_METHODS: tuple[str, ...] = tuple(m for m in METHODS if m not in PER_CHANNEL_METHODS)

#: ``--normalize`` -> the agents' ``normalize_advantage``.
NORMALIZE: dict[str, bool | Literal["group", "channel"]] = {
    "group": "group",
    "channel": "channel",
    "batch": True,
    "none": False,
}

PAPER_CLAIMS = """The paper's claims (Qwen2.5-Math / Llama models on math benchmarks) to compare with:
1. Top-2@4 beats GRPO at large k (pass@256 +0.092 on one model) and avoids GRPO's diversity collapse.
2. Top-2@4 beats MaxPO (Max@4) at pass@1.
3. Raising K trades pass@1 for pass@256.
4. Top-2@4 correctness + Bottom-2@4 length shortens answers without losing pass@k; GRPO's scalarized length
   penalty collapses."""


@dataclass(frozen=True)
class Config:
    """What a reproduction runs (``--quick`` shrinks every size; the code path is the same)."""

    seeds: int = 3
    updates: int = 60
    group_size: int = 8
    n_groups: int = 32
    learning_rate: float = 3e-4
    n_epochs: int = 4
    batch_size: int = 256
    test_problems: int = 100
    samples: int = 1024
    methods: tuple[str, ...] = DEFAULT_METHODS
    normalize: str = "group"
    quick: bool = False

    def __post_init__(self) -> None:
        # updates=0 is allowed: train_run then builds the agent from the base model without training it
        check_config(self, METHODS, ("seeds", "group_size", "n_groups", "n_epochs", "batch_size"))
        if self.normalize not in NORMALIZE:
            raise ValueError(f"normalize must be one of {list(NORMALIZE)}, got {self.normalize!r}")

    @property
    def n_episodes(self) -> int:
        return self.group_size * self.n_groups

    def base_config(self) -> Any:
        from ordergrad_rl.reasoning import BaseModelConfig

        if not self.quick:
            return BaseModelConfig()
        return BaseModelConfig(n_train=600, demos_per_problem=4, epochs=2, embed_dim=16, hidden_dim=16, pi_dim=16)


def check_config(config: Any, methods: Any, sizes: tuple[str, ...]) -> None:
    """What the command line refuses, refused in the Python API too: ``sizes``, ``test_problems`` and ``samples``
    that are no integers >= 1 (``seeds=0`` ran nothing, a step count of 0 made TRL train whole epochs), and
    ``methods`` that are no non-empty sequence of ``methods``' names."""
    for name in (*sizes, "test_problems", "samples"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    chosen = [config.methods] if isinstance(config.methods, str) else list(config.methods)
    unknown = [m for m in chosen if m not in methods]
    if unknown or not chosen or isinstance(config.methods, str):
        raise ValueError(f"methods must be a non-empty subset of {list(methods)}, got {config.methods!r}")


def quick_config() -> Config:
    return Config(seeds=1, updates=2, n_groups=8, batch_size=64, test_problems=10, samples=32, quick=True)


def train_run(
    method: str, seed: int, config: Config, base: Any, on_update: Any = None
) -> tuple[OrderGradPPO, list[dict[str, float]]]:
    """Fine-tune the base model with ``method`` for ``config.updates`` updates.

    :return: the trained agent and its training curve, one :func:`weight_diagnostics` per update.
    """
    import torch as th

    from ordergrad_rl.agents import OrderGradPPO
    from ordergrad_rl.envs import make_sb3_vec_env
    from ordergrad_rl.reasoning import load_base_policy

    th.set_num_threads(1)
    venv = make_sb3_vec_env("TargetSum-v0", config.n_episodes, seed=seed, env_kwargs=base.env_kwargs)
    model = OrderGradPPO(
        "MlpPolicy", venv, objective=METHODS[method][1], n_episodes=config.n_episodes, group_size=config.group_size,
        normalize_advantage=NORMALIZE[config.normalize], learning_rate=config.learning_rate, n_epochs=config.n_epochs,
        batch_size=config.batch_size, clip_range=0.2, seed=seed, policy_kwargs=base.policy_kwargs, device="cpu",
        ent_coef=0.0, novelty_when_blind=False,
    )  # fmt: skip
    # ent_coef and novelty_when_blind are pinned to the agent's defaults when the table was measured (2026-11-25),
    # the same for every method: the ranked methods' defaults have moved since (an entropy bonus, novelty on blind
    # rollouts) and the mean's have not, which would make the comparison unequal.
    load_base_policy(model, base)
    curve = []
    with warnings.catch_warnings():
        # learn(1) is one update by design: the agent's few-updates warning at the first call would tell every run
        # to raise a total_timesteps that no option of the command sets.
        warnings.filterwarnings("ignore", message=r".* so total_timesteps leaves about", category=UserWarning)
        for _ in range(config.updates):
            model.learn(1, reset_num_timesteps=False)  # one rollout of n_episodes and one update
            curve.append(weight_diagnostics(model))
            if on_update is not None:
                on_update()
    return model, curve


def weight_parts(model: Any) -> dict[str, np.ndarray]:
    """The normalized weights of the rollout in ``model``'s buffer, split by channel: ``{channel: [n_groups, G]}``
    summing to ``model.episode_weights`` (with ``normalize_advantage="group"`` or ``True`` each part is divided by
    the std of the *sum*, with ``"channel"`` by its own)."""
    from ordergrad_rl.agents.common.groups import group_normalize
    from ordergrad_rl.core.channels import ChannelObjective

    buffer, group = model.rollout_buffer, model.group_size
    if not isinstance(model.objective, ChannelObjective):
        return {"reward": model.episode_weights(buffer.episode_returns).reshape(-1, group)}
    values = {"reward": buffer.episode_returns, **buffer.episode_channels}
    values = {name: np.asarray(v, np.float64).reshape(-1, group) for name, v in values.items()}
    mode = model.normalize_advantage
    parts = model.objective.channel_weights(values, group_normalize if mode == "channel" else None)
    total = np.sum(list(parts.values()), axis=0)
    if mode == "group":
        scale = total.std(axis=-1, keepdims=True) + 1e-8
    elif mode is True:
        scale = total.std() + 1e-8
    else:
        scale = 1.0
    return {name: part / scale for name, part in parts.items()}


def weight_diagnostics(model: Any) -> dict[str, float]:
    """What the last update trained on: success rate, mean answer length, the share of groups with no correct
    answer, the RMS weight in those groups and in the others, and the share of ``sum |w|`` carried by each channel
    other than the reward (``"<channel>_share"``)."""
    buffer, group = model.rollout_buffer, model.group_size
    correct = np.asarray(buffer.episode_returns).reshape(-1, group) > 0.5
    parts = weight_parts(model)
    total = np.sum(list(parts.values()), axis=0)
    zero = ~correct.any(axis=1)
    out = {
        "success": float(correct.mean()),
        "length": float(np.mean(buffer.episode_lengths)),
        "zero_correct_groups": float(zero.mean()),
        "rms_weight_zero_groups": float(np.sqrt(np.mean(total[zero] ** 2))) if zero.any() else 0.0,
        "rms_weight_other_groups": float(np.sqrt(np.mean(total[~zero] ** 2))) if (~zero).any() else 0.0,
    }
    mass = sum(float(np.abs(p).sum()) for p in parts.values())
    for name, part in parts.items():
        if name != "reward":
            out[f"{name}_share"] = float(np.abs(part).sum()) / mass if mass > 0 else 0.0
    return out


def evaluate(policy: Any, config: Config, base: Any, seed: int) -> dict[str, Any]:
    """pass@k and answer lengths of ``policy`` on the first ``config.test_problems`` test problems."""
    from ordergrad_rl.reasoning import evaluate_pass_at_k

    return evaluate_pass_at_k(
        policy, config.samples, split="test", problem_ids=np.arange(config.test_problems), env_kwargs=base.env_kwargs,
        seed=seed,
    )  # fmt: skip


def bootstrap_curves(n_correct: np.ndarray, n: int, ks: np.ndarray, rng: np.random.Generator, reps: int = 1000):
    """Mean pass@k and its 95% bootstrap interval, resampling seeds and problems.

    :param n_correct: ``[seeds, problems]`` correct answers out of ``n``; ``[2, seeds, problems]`` gives the paired
        difference (first minus second method, the same seeds and problems resampled for both).
    :return: ``(mean [K], low [K], high [K])``.
    """
    from ordergrad_rl.passk import pass_at_k

    table = pass_at_k(n_correct[..., None], n, ks)  # [(2,) S, P, K]
    if table.ndim == 4:
        table = table[0] - table[1]
    s, p = table.shape[:2]
    means = np.empty((reps, len(ks)))
    for r in range(reps):
        rows = rng.integers(s, size=s)
        cols = rng.integers(p, size=p)
        means[r] = table[rows][:, cols].mean(axis=(0, 1))
    low, high = np.percentile(means, [2.5, 97.5], axis=0)
    return table.mean(axis=(0, 1)), low, high


#: The paper's comparisons, as paired pass@k differences (first minus second) when both methods ran.
COMPARISONS: tuple[tuple[str, str], ...] = (
    ("top2at4", "grpo"),  # claim 1, at large k
    ("top2at4", "maxpo4"),  # claim 2, at pass@1
    ("maxpo2", "maxpo6"),  # claim 3, pass@1 (and the opposite sign at pass@256)
    ("top2_bot2_length", "top2at4"),  # claim 4: no loss from the length term
    ("top2_bot2_length_w04", "top2at4"),
    ("top2_bot2_length", "grpo_length"),  # claim 4: GRPO's scalarized penalty does worse
    ("top2_bot2_length_w04", "grpo_length_w02"),
)


def run_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Build the base model, train and evaluate every method on every seed; return the JSON-ready summary."""
    from ordergrad_rl.passk import default_ks
    from ordergrad_rl.reasoning import build_base_model

    start = time.perf_counter()
    base = build_base_model(base_config_for(config), seed=0)
    summary: dict[str, Any] = {
        "config": dataclasses.asdict(config),
        "base_build_seconds": base.build_seconds,
        "ks": default_ks(config.samples).tolist(),
        "normalize_advantage": NORMALIZE[config.normalize],
    }
    summary["base"] = evaluate(base.policy, config, base, seed=10_000)
    runs: dict[str, list[dict[str, Any]]] = {}
    total = len(config.methods) * config.seeds * config.updates
    with progress_bar("updates", total, quiet=quiet) as bar:
        for method in config.methods:
            for seed in range(config.seeds):
                t0 = time.perf_counter()
                model, curve = train_run(method, seed, config, base, on_update=lambda: bar.update(1))
                result = evaluate(model.policy, config, base, seed=10_000 + seed)
                result["train_seconds"] = time.perf_counter() - t0
                result["train_curve"] = curve
                runs.setdefault(method, []).append(result)
    summary["methods"], summary["differences"] = summarize_methods(runs, config.samples, summary["ks"])
    summary["wall_seconds"] = time.perf_counter() - start
    return summary


def summarize_methods(
    runs: dict[str, list[dict[str, Any]]], samples: int, ks: list[int]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Per method, pass@k with 95% bootstrap intervals (seeds and problems resampled) and answer lengths; and the
    paired differences of :data:`COMPARISONS` whose two methods ran.

    :param runs: method -> one evaluation per seed (``n_correct`` per problem out of ``samples``, lengths).
    :return: ``(methods, differences)`` as the summary's JSON holds them.
    """
    rng = np.random.default_rng(0)
    grid = np.asarray(ks)
    methods = {}
    for method, results in runs.items():
        n_correct = np.array([r["n_correct"] for r in results])
        mean, low, high = bootstrap_curves(n_correct, samples, grid, rng)
        methods[method] = {
            "label": METHODS[method][0],
            "objective": str(METHODS[method][1]),
            "pass_at_k": mean.tolist(),
            "ci_low": low.tolist(),
            "ci_high": high.tolist(),
            "mean_length_correct": _mean([r["mean_length_correct"] for r in results]),
            "mean_length_incorrect": _mean([r["mean_length_incorrect"] for r in results]),
            "length_counts_correct": np.sum([_pad(r["length_counts_correct"]) for r in results], axis=0).tolist(),
            "length_counts_incorrect": np.sum([_pad(r["length_counts_incorrect"]) for r in results], axis=0).tolist(),
            "runs": results,
        }
    differences = {}
    for first, second in COMPARISONS:
        if first in runs and second in runs:
            paired = np.array([[r["n_correct"] for r in runs[m]] for m in (first, second)])
            mean, low, high = bootstrap_curves(paired, samples, grid, rng)
            differences[f"{first} - {second}"] = {
                "pass_at_k": mean.tolist(), "ci_low": low.tolist(), "ci_high": high.tolist()
            }  # fmt: skip
    return methods, differences


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def _pad(counts: list[int]) -> np.ndarray:
    out = np.zeros(L_MAX + 1, dtype=np.int64)
    out[: len(counts)] = counts
    return out


# ---------------------------------------------------------------------------------------------------- output
def format_table(summary: dict[str, Any]) -> str:
    """pass@k (selected k) and mean lengths per method, base model first."""
    ks = summary["ks"]
    shown = [k for k in (1, 4, 16, 64, 256) if k in ks] or ks
    index = [ks.index(k) for k in shown]
    headers = ["method", *(f"pass@{k}" for k in shown), "len correct", "len incorrect"]
    base = summary["base"]
    rows = [["base model", *(f"{base['pass_at_k'][k]:.3f}" for k in shown), base["mean_length_correct"] or "-",
             base["mean_length_incorrect"] or "-"]]  # fmt: skip
    for entry in summary["methods"].values():
        cells = [f"{entry['pass_at_k'][i]:.3f} [{entry['ci_low'][i]:.3f}, {entry['ci_high'][i]:.3f}]" for i in index]
        lengths = [entry["mean_length_correct"] or "-", entry["mean_length_incorrect"] or "-"]
        rows.append([entry["label"], *cells, *lengths])
    return markdown_table(headers, rows)


def format_differences(summary: dict[str, Any]) -> str:
    """The paired pass@k differences of :data:`COMPARISONS` at k = 1 and the largest k."""
    ks = summary["ks"]
    shown = sorted({ks.index(k) for k in (1, 16, ks[-1]) if k in ks})
    rows = [
        [name, *(f"{d['pass_at_k'][i]:+.3f} [{d['ci_low'][i]:+.3f}, {d['ci_high'][i]:+.3f}]" for i in shown)]
        for name, d in summary["differences"].items()
    ]
    return markdown_table(["difference", *(f"pass@{ks[i]}" for i in shown)], rows)


def _plot_curves(summary: dict[str, Any], methods: list[str], title: str, path: Any) -> Any:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ks = summary["ks"]
    ax.plot(ks, [summary["base"]["pass_at_k"][k] for k in ks], color="gray", ls="--", label="base model")
    for method in methods:
        entry = summary["methods"][method]
        ax.plot(ks, entry["pass_at_k"], marker="o", ms=3, label=entry["label"])
        ax.fill_between(ks, entry["ci_low"], entry["ci_high"], alpha=0.15)
    ax.set(xscale="log", xlabel="k", ylabel="average pass@k", title=title)
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def _plot_lengths(summary: dict[str, Any], methods: list[str], path: Any) -> Any:
    plt = pyplot()
    entries = [("base model", summary["base"])] + [
        (summary["methods"][m]["label"], summary["methods"][m]) for m in methods
    ]
    fig, axes = plt.subplots(1, len(entries), figsize=(4 * len(entries), 3), sharey=True)
    for ax, (label, entry) in zip(axes, entries, strict=True):
        for kind, color in (("correct", "tab:green"), ("incorrect", "tab:red")):
            counts = _pad(entry[f"length_counts_{kind}"])
            ax.bar(np.arange(len(counts)), counts / max(counts.sum(), 1), alpha=0.5, color=color, label=kind)
        ax.set_title(label, fontsize=8)
        ax.set_xlabel("answer length (tokens)")
    axes[0].set_ylabel("share of answers")
    axes[0].legend()
    return save_figure(fig, path)


#: Per-update training curves in the figure: ``(key of train_curve, title)``.
TRAINING_PANELS: tuple[tuple[str, str], ...] = (
    ("success", "success rate"),
    ("length", "mean answer length"),
    ("zero_correct_groups", "groups, 0 correct"),
)


def _plot_training(summary: dict[str, Any], methods: list[str], path: Any, panels: Any = TRAINING_PANELS) -> Any:
    """Per update, mean over seeds, the ``panels`` of the runs' ``train_curve``."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3))
    for method in methods:
        runs = summary["methods"][method]["runs"]
        for ax, (key, _) in zip(axes, panels, strict=True):
            curve = np.mean([[u[key] for u in run["train_curve"]] for run in runs], axis=0)
            ax.plot(np.arange(1, len(curve) + 1), curve, label=summary["methods"][method]["label"])
    for ax, (_, title) in zip(axes, panels, strict=True):
        ax.set(title=title, xlabel="update")
    axes[0].legend(title=f"normalize {summary['config'].get('normalize', 'group')}", fontsize=7, title_fontsize=7)
    return save_figure(fig, path)


def write_figures(
    summary: dict[str, Any], out: Any, prefix: str = "reasoning", training_panels: Any = TRAINING_PANELS
) -> list[Any]:
    """The figures whose methods were run (a figure with none of its methods is skipped), ``<prefix>_*.png``."""
    ran = list(summary["methods"])
    length = [m for m in ran if "length" in m]
    figures = [
        ([m for m in ran if m not in length], "pass@k", f"{prefix}_passk.png"),
        (["maxpo6", "top2at6", "top3at6"], "effect of M at K = 6", f"{prefix}_effect_of_m.png"),
        (["top2at4", "top2at6"], "effect of K at M = 2", f"{prefix}_effect_of_k.png"),
        (["grpo", "top2at4", *length], "length reward", f"{prefix}_length_passk.png"),
    ]
    paths = []
    for methods, title, name in figures:
        present = [m for m in methods if m in ran]
        if present:
            paths.append(_plot_curves(summary, present, title, out / name))
    if length:
        paths.append(_plot_lengths(summary, length, out / f"{prefix}_length.png"))
    paths.append(_plot_training(summary, ran, out / f"{prefix}_training.png", training_panels))
    return paths


def config_from_arguments(
    args: argparse.Namespace, sizes: tuple[str, ...], default: Any, quick: Any, **variant: Any
) -> Any:
    """``default`` with the size options ``sizes`` that were given (``None`` when not), or with ``--quick`` the
    ``quick`` config, refusing given sizes (it would drop them); ``variant`` replaced in either.

    :raises CommandError: ``--quick`` with a size option.
    """
    given = {key: getattr(args, key) for key in sizes if getattr(args, key) is not None}
    if not args.quick:
        return dataclasses.replace(default, **given, **variant)
    if given:
        options = " ".join(f"--{key} {value}" for key, value in given.items())
        raise CommandError(f"--quick sets its own sizes (a smoke test); drop {options}, or drop --quick")
    return dataclasses.replace(quick, **variant)


def base_config_for(config: Any) -> Any:
    """``config.base_config()``, refused before anything is built when ``config.test_problems`` exceeds its test
    split."""
    base = config.base_config()
    if config.test_problems > base.n_test:
        raise ValueError(f"test_problems={config.test_problems}, but the test split has {base.n_test} problems")
    return base


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = Config()
    # None when not given, so that --quick (its own sizes) can refuse them instead of dropping them silently.
    parser.add_argument("--seeds", type=positive_int, default=None, help=f"seeds (default: {default.seeds})")
    parser.add_argument(
        "--updates", type=positive_int, default=None, help=f"updates per run (default: {default.updates})"
    )
    parser.add_argument(
        "--samples", type=positive_int, default=None, help=f"answers per test problem (default: {default.samples})"
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        choices=list(METHODS),
        default=list(DEFAULT_METHODS),
        metavar="METHOD",
        help="methods to run, of: %(choices)s (default: all but top2_bot2_length_w04 and grpo_length_w02, the "
        "paper's weights for --normalize channel)",
    )
    parser.add_argument(
        "--normalize",
        choices=list(NORMALIZE),
        default=default.normalize,
        help="advantage normalization (the agents' normalize_advantage): group = each group's std (the paper's), "
        "channel = each channel's std in each group (= group for one-channel objectives), batch = the std of the "
        "whole rollout, none = the unbiased weights (default: %(default)s)",
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes, same code path (CI; under a minute)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "reasoning")


def run(args: argparse.Namespace) -> int:
    variant = dict(methods=tuple(dict.fromkeys(args.methods)), normalize=args.normalize)
    config = config_from_arguments(args, ("seeds", "updates", "samples"), Config(), quick_config(), **variant)
    summary = run_experiment(config, quiet=args.quiet)
    print(
        f"TargetSum reasoning: {len(config.methods)} methods x {config.seeds} seeds, {config.updates} updates of "
        f"{config.n_groups} problems x {config.group_size} rollouts, lr {config.learning_rate}, {config.n_epochs} "
        f"epochs, normalize {config.normalize}; pass@k from {config.samples} answers on {config.test_problems} test "
        "problems\n"
    )
    print(format_table(summary))
    if summary["differences"]:
        print("\npaired differences (95% bootstrap over seeds and problems):\n")
        print(format_differences(summary))
    print("\n" + PAPER_CLAIMS)
    for path in write_figures(summary, args.out):
        print(f"figure: {path}")
    if args.json is not None:
        print(f"json: {write_json(args.json, summary)}")
    print(f"total time: {summary['wall_seconds']:.0f} s")
    return 0
