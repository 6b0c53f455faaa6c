"""Risk profiles and return distributions of saved models and TensorBoard runs, side by side (the layer under
``ordergrad-rl compare`` and the sweep's figure).

A saved model is evaluated on an env (exact returns); a run directory gives its last logged ``eval_risk/*``
scalars, or ``risk/*`` when it has no evaluations, and the matching ``episode_returns`` histogram.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.reports import markdown_table, pyplot, save_figure
from ordergrad_rl.zoo.models import (
    env_label,
    evaluate_model,
    fitted_env,
    load_model,
    make_env,
    model_env,
    model_path,
    saved_env_wrapper,
    saved_statistics,
)


@dataclass
class Entry:
    """One compared distribution of returns.

    :param path: the model file or run directory.
    :param label: legend / table name.
    :param source: where the numbers come from.
    :param profile: risk profile (``risk_profile`` keys).
    :param returns: the episode returns when known exactly (models), else ``None``.
    :param edges: histogram bin edges ``[B + 1]`` (TensorBoard runs; models use shared bins).
    :param counts: histogram counts ``[B]``.
    :param group: the method the entry belongs to (one colour per group); default :func:`method_of` the path.
    """

    path: Path
    label: str
    source: str
    profile: dict[str, float]
    returns: np.ndarray | None = None
    edges: np.ndarray | None = None
    counts: np.ndarray | None = None
    group: str = ""

    def __post_init__(self) -> None:
        self.group = self.group or method_of(self.path)

    @property
    def has_distribution(self) -> bool:
        """Whether the returns or a histogram of them are known (a run may have logged scalars only)."""
        return self.returns is not None or self.edges is not None

    def cdf(self, x: np.ndarray) -> np.ndarray:
        """``P(return <= x)``: the empirical CDF of the returns, or the histogram's piecewise-linear one."""
        if self.returns is not None:
            return np.searchsorted(np.sort(self.returns), x, side="right") / self.returns.size
        levels, edges = self.quantile_function()
        return np.interp(x, edges, levels)

    def quantile_function(self) -> tuple[np.ndarray, np.ndarray]:
        """``(levels u, Q(u))``: the sorted returns at the Hazen levels ``(j - 0.5) / n``, or the histogram's
        piecewise-linear inverse CDF."""
        if self.returns is not None:
            n = self.returns.size
            return (np.arange(n) + 0.5) / n, np.sort(self.returns)
        assert self.edges is not None and self.counts is not None
        cdf = np.concatenate([[0.0], np.cumsum(self.counts)]) / self.counts.sum()
        return cdf, self.edges


def method_of(path: Path) -> str:
    """The method of a model or run: its name without a seed and SB3's run counter, else its parent's name.

    ``ordergrad_cvar_seed3.zip`` -> ``ordergrad_cvar``; ``OrderGradPPO_cvar0.2@128_2`` -> ``OrderGradPPO_cvar0.2@128``;
    ``runs/OrderGradPPO_cvar0.2@128/seed0_1`` -> ``OrderGradPPO_cvar0.2@128``.
    """
    name = entry_name(path)
    return strip_seed(name) or name_of(path.parent) or name


def entry_name(path: Path) -> str:
    """The name of a model file without ``.zip``, or of a run or log dir: ``cvar0.2.zip`` and ``cvar0.2`` (SB3's
    ``save`` adds no ``.zip`` to a name with a dot) -> ``cvar0.2``."""
    return name_of(path).removesuffix(".zip")


def name_of(path: Path) -> str:
    """``path``'s name, or for ``.`` and ``..`` that of the directory they stand for (``compare .`` in a log dir)."""
    return path.resolve().name if path.name in ("", "..") else path.name


def group_of(run: Path, logdir: Path) -> str:
    """The method of a run found below ``logdir``: its :func:`method_dir` (``og-cvar/seed3_1`` -> ``og-cvar``,
    ``env1/cvar/seed0_1`` -> ``env1/cvar``), or for a seed right in the log dir, :func:`method_of` it (``seed0_1`` in
    ``runs/og-cvar`` -> ``og-cvar``, as below ``runs``)."""
    return method_dir(run, logdir) or method_of(run)


def method_dir(run: Path, logdir: Path) -> str:
    """The directory below ``logdir`` of the method of a run found below it: the run's path below ``logdir`` without
    the seed and run counter, ``""`` for a seed right in the log dir (``og-cvar/seed3_1`` -> ``og-cvar``,
    ``OrderGradPPO_cvar0.2@128_2`` -> ``OrderGradPPO_cvar0.2@128``, ``seed0_1`` -> ``""``). TensorBoard's names of
    the method's runs start with it."""
    relative = PurePosixPath(run.relative_to(logdir).as_posix())
    directory = str(relative.parent / strip_seed(relative.name))
    return "" if directory == "." else directory


def strip_seed(name: str) -> str:
    """``name`` without a trailing seed and SB3's run counter: ``seed0_1`` -> ``""``, ``ppo_seed3`` -> ``ppo``,
    ``OrderGradPPO_cvar0.2@128_2`` -> ``OrderGradPPO_cvar0.2@128``."""
    return re.sub(r"(^|[_-])(seed|s)\d+(_\d+)?$|_\d+$", "", name)


# ---------------------------------------------------------------------------------------------------- TensorBoard
#: The run :mod:`ordergrad_rl.zoo.dashboards` writes beside the seeds of a method: ``<method>/mean_over_seeds``.
AGGREGATE_RUN = "mean_over_seeds"
#: Suffix of the event file holding the dashboards' Custom Scalars layout at the root of a log dir.
DASHBOARD_SUFFIX = ".dashboards"


def is_run(path: Path) -> bool:
    """Whether ``path`` is a directory holding TensorBoard event files (other than the dashboards' root file)."""
    return path.is_dir() and any(not e.name.endswith(DASHBOARD_SUFFIX) for e in path.glob("events.out.tfevents.*"))


def is_aggregate(path: Path) -> bool:
    """Whether ``path`` is an aggregated run of :mod:`ordergrad_rl.zoo.dashboards` (a mean over seeds)."""
    return path.name == AGGREGATE_RUN


def histogram_arrays(histogram: Any) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous ``(edges [B + 1], counts [B])`` of a TensorBoard ``HistogramValue``.

    TensorBoard stores right bucket limits only: bucket ``i`` covers ``(limit[i-1], limit[i]]`` and the first one
    everything up to ``limit[0]``. The edges are clamped to the histogram's [min, max]: SB3's histograms use
    TensorBoard's fixed exponential buckets (10% wide), which would otherwise stretch the support.
    """
    limits = np.asarray(histogram.bucket_limit, dtype=np.float64)
    counts = np.asarray(histogram.bucket, dtype=np.float64)
    edges = np.concatenate([[histogram.min], limits])
    return np.clip(edges, histogram.min, histogram.max), counts


def read_run(path: Path, logdir: Path | None = None) -> Entry:
    """The last ``eval_risk/*`` (else ``risk/*``) profile and ``episode_returns`` histogram of a run, all of one step.

    :param logdir: the log dir the run was found below: the entry is named and grouped as TensorBoard lists it
        there, by its path below it (``env1/cvar/seed0_1``, method ``env1/cvar``); ``None``: by the run's name.
    :raises CommandError: the run has no risk scalars.
    """
    from tensorboard.backend.event_processing import event_accumulator as ea

    from ordergrad_rl.risk import risk_profile

    accumulator = ea.EventAccumulator(str(path), size_guidance={ea.SCALARS: 0, ea.HISTOGRAMS: 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    scalars, histograms = set(tags[ea.SCALARS]), set(tags[ea.HISTOGRAMS])
    keys = list(risk_profile([0.0]))
    for prefix in ("eval_risk", "risk"):
        if f"{prefix}/mean" in scalars:
            break
    else:
        raise CommandError(f"{path} has no eval_risk/* or risk/* scalars (not a run of an OrderGrad agent?)")

    def last(events: list, step: int) -> Any:  # the last written at ``step`` (a resumed run may log a step twice)
        return max((e for e in events if e.step == step), key=lambda e: e.wall_time, default=None)

    series = {key: accumulator.Scalars(f"{prefix}/{key}") for key in keys if f"{prefix}/{key}" in scalars}
    # The last step of the whole profile: a run that crashed while writing one has that step for some keys only,
    # and their last values would mix two evaluations (a CVaR_0.05 above the CVaR_0.1).
    step = max(set.intersection(*({e.step for e in events} for events in series.values())), default=None)
    if step is None:
        raise CommandError(f"{path} never logged its {prefix}/* scalars at one step")
    profile = {key: last(events, step).value for key, events in series.items()}
    # A run without evaluations gives its training batches' returns: labelled so, since they are not deployment
    # returns (stochastic actions, an earlier policy) and compare would put them beside others' evaluations.
    name = path.name if logdir is None else path.relative_to(logdir).as_posix()
    label = name if prefix == "eval_risk" else f"{name} (training)"
    group = "" if logdir is None else group_of(path, logdir)
    entry = Entry(path, label, f"TensorBoard {prefix}/* at step {step}", profile, group=group)
    histogram_tag = f"{prefix}/episode_returns"
    if histogram_tag in histograms:
        histogram = last(accumulator.Histograms(histogram_tag), step)
        if histogram is not None:
            entry.edges, entry.counts = histogram_arrays(histogram.histogram_value)
    return entry


# ---------------------------------------------------------------------------------------------------- entries
def expand(paths: list[Path]) -> dict[Path, Path | None]:
    """Arguments -> entries, each with the log dir it was found below (``None``: an argument itself): a log dir
    stands for every run below it (sorted), but what :mod:`ordergrad_rl.zoo.dashboards` writes is left out."""
    out: dict[Path, Path | None] = {}
    for path in paths:
        if written_by_dashboards(path):  # compare runs/* after dashboard runs
            continue
        if path.is_dir() and not is_run(path) and not names_a_model(path):
            out.update(dict.fromkeys(runs_below(path), path))
        else:
            out[path] = None
    return out


def names_a_model(path: Path) -> bool:
    """Whether the directory ``path`` names the model saved beside it, as ``evaluate`` reads it: ``models/cliff`` of
    ``models/cliff.zip``, whose ``VecNormalize`` statistics ``train --save models/cliff`` writes in ``models/cliff/``
    (rl-zoo3's layout), when there is no TensorBoard run below it."""
    return Path(f"{path}.zip").is_file() and not any(path.rglob("events.out.tfevents.*"))


def written_by_dashboards(path: Path) -> bool:
    """Whether ``path`` is only what :mod:`ordergrad_rl.zoo.dashboards` writes beside the runs: the layout file at a
    log dir's root, or a directory of aggregated runs (``top/mean_over_seeds`` of the runs ``top_1`` and ``top_2``)."""
    if path.is_file():
        return path.name.startswith("events.out.tfevents.") and path.name.endswith(DASHBOARD_SUFFIX)
    runs = {event.parent for event in path.rglob("events.out.tfevents.*") if is_run(event.parent)}
    return bool(runs) and all(is_aggregate(run) for run in runs)


def runs_below(logdir: Path) -> list[Path]:
    """The runs below ``logdir``, sorted, but the aggregated ones (means of the seeds' profiles, not distributions
    of returns).

    :raises CommandError: there is none.
    """
    runs = sorted({e.parent for e in logdir.rglob("events.out.tfevents.*") if is_run(e.parent)})
    runs = [run for run in runs if not is_aggregate(run)]
    if not runs:
        raise CommandError(f"{logdir} is a directory without TensorBoard runs")
    return runs


def load_entries(
    arguments: list[Path],
    env: str | None,
    episodes: int,
    seed: int | None = 0,
    quiet: bool = False,
    env_kwargs: dict[str, Any] | None = None,
) -> list[Entry]:
    """Evaluate the models and read the runs among ``arguments`` (model files, run directories, log dirs).

    Every model is loaded and checked against ``env`` before the first evaluation, so a bad argument fails
    before the work.

    :param env: the env id the models are evaluated on (``--env``), each in the ``env_wrapper`` it trained in
        (:func:`~ordergrad_rl.zoo.models.saved_env_wrapper`); needed only when there are models, but for models in
        run folders of rl-zoo3, each evaluated on the env of its run's ``args.yml``, with the ``env_kwargs`` of its
        run (:func:`~ordergrad_rl.zoo.models.model_env`).
    :param episodes: deterministic evaluation episodes per model, on envs seeded from ``seed``.
    :param env_kwargs: the arguments of ``env`` (``--env-kwargs``: ``gym.make``'s ``max_episode_steps`` too), over
        those of an rl-zoo3 run.

    A run found below a log dir that is not an OrderGrad agent's (no ``eval_risk/*`` or ``risk/*`` scalars, e.g.
    an SB3 ``PPO_2`` beside them) is skipped with a note; one given as an argument is an error.

    :raises CommandError: a model without --env (nor the env of its run's ``args.yml``), one that does not fit its
        env, --env or --env-kwargs without a model, an argument
        that is neither a model nor a run, or nothing left to compare.
    """
    paths = expand(arguments)
    models = {}
    for path in paths:
        if is_run(path):
            continue
        file = model_path(path)  # raises if there is no such file
        made = model_env(file, env, env_kwargs or {})  # its run's env and env_kwargs, as rl-zoo3's enjoy reads them
        statistics, env_wrapper = saved_statistics(file, made.env), saved_env_wrapper(file, made.env)
        models[path] = (file, *load_model(file), statistics, env_wrapper, made)
    if env is not None and not models:  # a run's numbers are those it logged: --env would change nothing
        raise CommandError(f"--env {env} is the env the saved models are evaluated on, and no argument is a model")
    if env_kwargs and not models:
        raise CommandError(
            "--env-kwargs are the arguments of the env the saved models are evaluated on, and no argument is a model"
        )
    for file, model, *_, env_wrapper, made in models.values():  # unknown ids, bad arguments fail here
        venv = make_env(made.env, 1, None, made.env_kwargs, made.option, env_wrapper=env_wrapper)
        fitted_env(model, venv, f"{made.env} ({file})").close()
    entries = []
    for path in paths:
        if path not in models:
            try:
                entries.append(read_run(path, paths[path]))
            except CommandError as err:
                if path in arguments:
                    raise
                print(f"note: skipping {err}")
            continue
        file, model, algorithm, statistics, env_wrapper, made = models[path]
        evaluation = evaluate_model(
            model, made.env, episodes, True, seed, quiet, made.env_kwargs, statistics, env_wrapper, made.option
        )
        source = f"{algorithm.name}, {episodes} deterministic episodes on {env_label(made.env, made.env_kwargs)}"
        entries.append(Entry(file, entry_name(file), source, evaluation.profile(), returns=evaluation.returns))
    if not entries:
        raise CommandError("nothing to compare: no run below the arguments has eval_risk/* or risk/* scalars")
    training = [e.label for e in entries if e.label.endswith(" (training)")]
    if training and len(training) < len(entries):
        print(
            f"note: {len(training)} of {len(entries)} entries have no evaluation returns; their rows, marked "
            "'(training)', describe training batches (stochastic actions, policies along the run), not deployment"
        )
    # Runs called PPO_1 in two log dirs: rows a/PPO_1 and b/PPO_1.
    labels = distinct_names([entry.label for entry in entries], [entry.path for entry in entries])
    for entry, label in zip(entries, labels, strict=True):
        entry.label = label
    return entries


def distinct_names(names: list[str], paths: list[Path]) -> list[str]:
    """``names`` (each naming the last parts of its path: ``PPO_1``, ``cvar/seed0_1``) with those that several paths
    share preceded by the names of the directories above them, as few as tell them apart: ``a/PPO_1`` and
    ``b/PPO_1``; ``exp1/runs/PPO_1`` and ``exp2/runs/PPO_1``."""
    out = list(names)
    for name in dict.fromkeys(name for name in names if names.count(name) > 1):
        same = [i for i, other in enumerate(names) if other == name]
        size = name.count("/") + 1
        named = [name] * len(same)  # paths without more parts to tell them apart
        for more in range(1, max(len(paths[i].parts) for i in same) - size + 1):
            named = ["/".join((*paths[i].parts[-size - more : -size], name)) for i in same]
            if len(set(named)) == len(named):
                break
        for i, label in zip(same, named, strict=True):
            out[i] = label
    return out


# ---------------------------------------------------------------------------------------------------- output
#: Longest figure file name built from the inputs; longer ones are cut and end in a hash of all inputs.
MAX_FIGURE_NAME = 120


def figure_name(paths: list[Path]) -> str:
    """``compare_<a>_vs_<b>....png`` from the command-line arguments (but what :func:`expand` leaves out): their
    :func:`entry_name`, made :func:`distinct_names` (``a-PPO_1_vs_b-PPO_1``); characters other than letters, digits
    and ``._-`` become ``-``."""
    paths = [path for path in paths if not written_by_dashboards(path)]
    names = distinct_names([entry_name(path) for path in paths], paths)
    stem = re.sub(r"[^\w.-]+", "-", "compare_" + "_vs_".join(names))
    if len(stem) > MAX_FIGURE_NAME:
        digest = hashlib.sha1("\0".join(map(str, paths)).encode()).hexdigest()[:8]
        stem = f"{stem[: MAX_FIGURE_NAME - 9]}-{digest}"
    return stem + ".png"


TABLE_KEYS: tuple[str, ...] = (
    "mean",
    "std",
    "cvar_0.05",
    "cvar_0.1",
    "cvar_0.2",
    "quantile_0.05",
    "quantile_0.25",
    "quantile_0.5",
    "quantile_0.75",
    "quantile_0.95",
    "min",
    "max",
)


#: Probability levels marked on the quantile plot (the CVaR levels of the risk tables).
REFERENCE_LEVELS: tuple[float, ...] = (0.05, 0.2)


def format_table(entries: list[Entry]) -> str:
    """One row per entry; ``-`` where a run did not log a statistic."""
    rows = [[e.label, *(e.profile.get(key, "-") for key in TABLE_KEYS)] for e in entries]
    return markdown_table(["entry", *TABLE_KEYS], rows)


def plot(entries: list[Entry], path: Path, bins: int = 40) -> Path:
    """Quantile functions (left) and return densities on shared bins (right), one colour per method.

    The entries of a method with several members (seeds) are thin lines of its colour, with one legend entry.
    Densities come from each entry's CDF at the shared bin edges, so a TensorBoard histogram (whose buckets are
    10% wide, hence tiny near 0) is re-binned like the exact returns of a model.
    """
    plt = pyplot()
    fig, (ax_q, ax_h) = plt.subplots(1, 2, figsize=(14, 5.2))
    shown = [e for e in entries if e.has_distribution]
    groups = list(dict.fromkeys(e.group for e in shown))
    sizes = {group: sum(e.group == group for e in shown) for group in groups}
    if shown:
        low = min(e.quantile_function()[1][0] for e in shown)
        high = max(e.quantile_function()[1][-1] for e in shown)
        edges = np.linspace(low, high, bins + 1) if high > low else np.array([low - 0.5, low + 0.5])
    labelled: set[str] = set()
    for entry in shown:
        color, size = f"C{groups.index(entry.group) % 10}", sizes[entry.group]
        style = "-" if entry.returns is not None else "--"  # dashed: reconstructed from a TensorBoard histogram
        label = None
        if entry.group not in labelled:
            labelled.add(entry.group)
            label = entry.label if size == 1 else f"{entry.group} ({size} runs)"
        width, alpha = (1.6, 1.0) if size == 1 else (0.9, 0.7)
        levels, quantiles = entry.quantile_function()
        ax_q.plot(levels, quantiles, style, color=color, lw=width, alpha=alpha, label=label)
        cdf = entry.cdf(edges)
        cdf[0] = 0.0  # the first bin includes the minimum
        density = np.diff(cdf) / np.diff(edges)
        ax_h.stairs(density, edges, color=color, lw=width, alpha=alpha, ls=style, label=label)
    for level in REFERENCE_LEVELS:
        ax_q.axvline(level, color="0.6", lw=0.8, ls=":")
    if shown:
        levels_text = " and ".join(f"{level:g}" for level in REFERENCE_LEVELS)
        ax_q.plot([], [], color="0.6", lw=0.8, ls=":", label=f"u = {levels_text}: CVaR_u = mean of Q below u")
    ax_q.set(xlabel="probability level u", ylabel="return quantile Q(u)", title="Quantile functions of the return")
    from_runs = any(entry.returns is None for entry in shown)
    title = "Return distributions" + (" (dashed: TensorBoard histograms)" if from_runs else "")
    ax_h.set(xlabel="episode return", ylabel="density", title=title)
    for ax in (ax_q, ax_h):
        if shown:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)
