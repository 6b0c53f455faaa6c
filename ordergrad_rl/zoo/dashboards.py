"""Dashboards that compare many runs: one aggregated TensorBoard run per method, charts per method, and an HParams
table that shows the comparison's arguments first (the layer under ``ordergrad-rl dashboard``; ``reproduce
tailrisk --tensorboard`` and ``sweep`` call it on the runs they write).

    ordergrad-rl dashboard runs/tailrisk          # then: tensorboard --logdir runs/tailrisk, and open the URL it prints

The runs of a log dir are grouped by method: a run's path below the log dir without its seed and SB3's run counter
(``og-cvar/seed3_1`` -> ``og-cvar``; ``OrderGradPPO_cvar0.2@128_2`` -> ``OrderGradPPO_cvar0.2@128``), as
``ordergrad-rl compare`` groups them; seeds right in the log dir are one method named after it (``seed0_1`` and
``seed1_1`` in ``runs/og-cvar`` -> ``og-cvar``, as below ``runs``). For every method with two or more runs this
writes the run ``<method>/mean_over_seeds`` (``<log dir>/mean_over_seeds`` for seeds right in it), on the env-step
grid of its seeds (a seed that ended earlier holds its last value):

* ``<tag>``, for the HParams metric tags of the seeds (:func:`aggregate_tags`: ``eval_risk/*`` and ``risk/*``
  mean, std, min, CVaR_0.05, CVaR_0.1, CVaR_0.2, median): the mean over seeds under the seeds' own tag, so the
  Time Series cards overlay it on the seeds and the HParams table fills its row;
* for the charted tags (:data:`CHART_TAGS`: CVaR_0.2 and the mean of evaluation and training),
  ``<method>/<tag>`` with ``<method>/<tag>/min`` and ``.../max``: the mean and the range over seeds, under tags
  of this method only, so each method has its own charts and x-axis; and ``methods/<tag>`` with its ``min`` and
  ``max``: the same with the x-axis in % of the method's training steps (0 to 100), under tags every aggregated
  run has, so one chart holds one line (in Custom Scalars one band) per method and runs of 200k and of 3M steps
  end together instead of the short ones being squeezed against 0.

The aggregated run is a row of the HParams table too: the arguments its seeds share, ``seeds``, and the metric
columns of the seeds (their mean). At the log dir's root, one event file (``*.dashboards``, rewritten on every
call) holds the Custom Scalars layout: a category comparing the methods (a margin chart per key: the mean over
seeds with the range as a band, one per method), then one per method (TensorBoard orders layouts by run name, so
the root's comes first).

TensorBoard cannot be told run colours in the logs, but its URL can group them: :func:`tensorboard_url` gives the
Time Series address with ``runColorGroup=regex:`` capturing the method, so the seeds and the mean of one method
share a colour, and methods differ.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.zoo.compare import AGGREGATE_RUN, DASHBOARD_SUFFIX, group_of, is_run, method_dir, runs_below

#: The tags charted per method and across methods (the comparison at a glance: more would bury it in charts).
CHART_TAGS: tuple[str, ...] = ("eval_risk/cvar_0.2", "eval_risk/mean", "risk/cvar_0.2", "risk/mean")
#: The top-level tag of the charts across methods (x: % of each method's training steps).
METHODS_ROOT = "methods"
#: Most points per aggregated curve.
GRID_POINTS = 400


@dataclass
class RunData:
    """What the dashboards read of one run.

    :param group: its method (see the module docstring).
    :param directory: its method's directory below the log dir, where the aggregated run goes (:func:`method_dir`:
        ``""`` for seeds right in the log dir).
    :param scalars: tag -> ``(steps [n], values [n])`` of the aggregated tags, sorted by step.
    :param hparams: its HParams arguments (empty when it logged none).
    """

    group: str
    directory: str
    scalars: dict[str, tuple[np.ndarray, np.ndarray]]
    hparams: dict[str, Any]


@dataclass
class Dashboards:
    """What :func:`write_dashboards` wrote.

    :param groups: method -> its runs (the seeds).
    :param aggregates: method -> its ``mean_over_seeds`` run (methods with two or more runs).
    :param url: the Time Series address with one colour per method (TensorBoard's default port).
    """

    groups: dict[str, list[Path]]
    aggregates: dict[str, Path]
    url: str


@functools.cache
def aggregate_tags() -> tuple[str, ...]:
    """The aggregated tags: the HParams metrics of the seeds (so the aggregated row fills their columns), evaluation
    first. (The agents are imported here, not at the top: they bring torch, which ``--help`` of the commands that
    use this module must not load.)"""
    from ordergrad_rl.agents.common.risk_logging import EVAL_PREFIX, TRAIN_PREFIX, hparam_metrics

    return tuple(hparam_metrics((EVAL_PREFIX, TRAIN_PREFIX)))


# ---------------------------------------------------------------------------------------------------- reading
def read_run_data(run: Path, logdir: Path) -> RunData:
    """The aggregated tags and the HParams arguments of ``run``."""
    from tensorboard.backend.event_processing import event_accumulator as ea
    from tensorboard.plugins.hparams import metadata

    accumulator = ea.EventAccumulator(str(run), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    accumulator.Reload()
    available = set(accumulator.Tags()[ea.SCALARS])
    scalars = {}
    for tag in aggregate_tags():
        if tag in available:
            events = sorted(accumulator.Scalars(tag), key=lambda e: (e.step, e.wall_time))
            # One value per step (the last written): a resumed run may have logged a step twice.
            last = {event.step: event.value for event in events}
            scalars[tag] = (np.fromiter(last, float), np.fromiter(last.values(), float))
    hparams: dict[str, Any] = {}
    try:
        content = accumulator.PluginTagToContent(metadata.PLUGIN_NAME)
    except KeyError:  # the run logged no HParams
        content = {}
    if metadata.SESSION_START_INFO_TAG in content:
        info = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
        hparams = {name: _from_value(value) for name, value in info.hparams.items()}
    return RunData(group_of(run, logdir), method_dir(run, logdir), scalars, hparams)


def _from_value(value: Any) -> Any:
    kind = value.WhichOneof("kind")
    return {"string_value": value.string_value, "number_value": value.number_value, "bool_value": value.bool_value}.get(
        kind
    )


def aggregates_below(logdir: Path) -> set[Path]:
    """The ``mean_over_seeds`` runs below ``logdir`` (what :func:`write_dashboards` wrote there)."""
    return {event.parent for event in logdir.rglob(f"{AGGREGATE_RUN}/events.out.tfevents.*")}


def find_runs(logdir: Path) -> dict[str, list[Path]]:
    """Method -> its runs below ``logdir`` (not the aggregated ones), sorted.

    :raises CommandError: ``logdir`` is not a directory, is itself a run, or has no runs below it.
    """
    if not logdir.is_dir():
        raise CommandError(f"{logdir} is not a directory")
    if is_run(logdir):
        raise CommandError(f"{logdir} is a run: give the log dir above the runs to compare")
    groups: dict[str, list[Path]] = {}
    for run in runs_below(logdir):
        groups.setdefault(group_of(run, logdir), []).append(run)
    return groups


# ---------------------------------------------------------------------------------------------------- numbers
def mean_and_band(
    series: Sequence[tuple[np.ndarray, np.ndarray]], points: int = GRID_POINTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The mean and the range over seeds of curves logged at different steps.

    The grid is the seeds' steps from the latest first step to the last step of all (at most ``points`` of them,
    evenly picked, the last one kept); each seed is linearly interpolated on it and holds its last value after
    it ended (episodic agents end a few steps apart).

    :param series: per seed ``(steps [n_i], values [n_i])``, steps increasing.
    :return: ``(steps [g], mean [g], min [g], max [g])``.
    """
    start = max(steps[0] for steps, _ in series)
    grid = np.unique(np.concatenate([steps for steps, _ in series]))
    grid = grid[grid >= start]
    if grid.size > points:
        grid = grid[np.unique(np.linspace(0, grid.size - 1, points).round().astype(int))]
    values = np.stack([np.interp(grid, steps, vals) for steps, vals in series])
    return grid, values.mean(axis=0), values.min(axis=0), values.max(axis=0)


def common_tags(runs: Sequence[RunData]) -> list[str]:
    """The aggregated tags every run of a method logged (a run still writing may lack some: no mean to show)."""
    return [tag for tag in aggregate_tags() if all(tag in run.scalars for run in runs)]


def shared_hparams(runs: Sequence[RunData]) -> dict[str, Any]:
    """The arguments every run of a method logged with the same value (the seed differs), plus ``seeds``."""
    common = dict(runs[0].hparams)
    for run in runs[1:]:
        common = {name: value for name, value in common.items() if run.hparams.get(name) == value}
    common.pop("seed", None)
    common["seeds"] = len(runs)
    return common


# ---------------------------------------------------------------------------------------------------- writing
def _writer(path: Path, suffix: str = "") -> Any:
    from torch.utils.tensorboard import SummaryWriter

    return SummaryWriter(str(path), filename_suffix=suffix)


def write_aggregate(runs: Sequence[RunData], logdir: Path) -> Path:
    """Write ``<logdir>/<method dir>/mean_over_seeds`` for the runs of one method (replacing an earlier one)."""
    from ordergrad_rl.agents.common.hparams import write_hparams

    group = runs[0].group
    path = logdir / runs[0].directory / AGGREGATE_RUN
    if path.exists():
        shutil.rmtree(path)
    writer = _writer(path)
    for tag in common_tags(runs):
        steps, mean, low, high = mean_and_band([run.scalars[tag] for run in runs])
        for i, step in enumerate(steps.tolist()):
            writer.add_scalar(tag, mean[i], step)
        if tag not in CHART_TAGS:
            continue
        write_band(writer, f"{group}/{tag}", steps, (mean, low, high))
        # Across methods the x-axis is the share of training: methods of 200k and of 3M steps end together.
        # (Runs whose only point is at step 0, an evaluation before any training step: one point, at 100%.)
        percent = np.arange(np.ceil(100 * steps[0] / steps[-1]) if steps[-1] > 0 else 100, 101)
        at = percent / 100 * steps[-1]
        band = tuple(np.interp(at, steps, values) for values in (mean, low, high))
        write_band(writer, f"{METHODS_ROOT}/{tag}", percent.astype(int), band)
    # A row of the HParams table beside its seeds' rows, with their columns (their seed, their metrics whichever they
    # logged: TensorBoard takes one run's columns for the whole table). Seeds without rows (SB3's PPO with
    # RiskEvalCallback) get none: its columns would be 'seeds' alone.
    if any(run.hparams for run in runs):
        columns = {name: value for run in runs for name, value in run.hparams.items()}
        name = path.relative_to(logdir).as_posix()  # as TensorBoard names the run
        write_hparams(writer, shared_hparams(runs), aggregate_tags(), group_name=name, columns=columns)
    writer.close()
    return path


def write_band(writer: Any, tag: str, steps: np.ndarray, band: tuple[np.ndarray, ...]) -> None:
    """Write ``tag``, ``tag/min`` and ``tag/max`` from ``band = (mean, min, max)`` at ``steps``."""
    for suffix, values in zip(("", "/min", "/max"), band, strict=True):
        for step, value in zip(steps.tolist(), values.tolist(), strict=True):
            writer.add_scalar(f"{tag}{suffix}", value, step)


def layout(groups: Sequence[str], tags: set[str]) -> dict[str, dict[str, list]]:
    """The Custom Scalars layout: a category comparing the methods, then one per method (margin charts: the mean
    over seeds with the range as a band), for those of :data:`CHART_TAGS` among ``tags``."""

    def chart(root: str, tag: str) -> list:
        return ["Margin", [f"{root}/{tag}", f"{root}/{tag}/min", f"{root}/{tag}/max"]]

    # TensorBoard's Custom Scalars lays a category's charts out last first (seen in Chromium, TensorBoard 2.21):
    # written in reverse, evaluation CVaR_0.2 comes first on the screen.
    present = [tag for tag in reversed(CHART_TAGS) if tag in tags]
    categories = {
        "methods: mean over seeds, band = range of the seeds, x = % of training": {
            f"{tag}, one band per method": chart(METHODS_ROOT, tag) for tag in present
        }
    }
    for group in groups:
        categories[f"method {group}: mean over seeds, band = range"] = {
            f"{group}: {tag}": chart(group, tag) for tag in present
        }
    return categories


def write_layout(logdir: Path, groups: Sequence[str], tags: set[str]) -> None:
    """Write :func:`layout` to the root event file of ``logdir`` (replacing an earlier one; none without
    ``groups``)."""
    for stale in logdir.glob(f"events.out.tfevents.*{DASHBOARD_SUFFIX}"):
        stale.unlink()
    if not groups:
        return
    writer = _writer(logdir, DASHBOARD_SUFFIX)
    writer.add_custom_scalars(layout(groups, tags))
    writer.close()


def write_dashboards(logdir: Path) -> Dashboards:
    """Aggregated runs (with their HParams rows) and the layout for the runs below ``logdir`` (see the module
    docstring): for the methods of two or more runs that share risk scalars. What an earlier call wrote is
    replaced, or removed where a method gets no aggregate now.

    :raises CommandError: no runs below ``logdir``, or ``logdir`` is a run.
    """
    groups = find_runs(logdir)
    data = {group: [read_run_data(run, logdir) for run in runs] for group, runs in groups.items() if len(runs) >= 2}
    # Runs without risk scalars (SB3's PPO_1 and PPO_2 beside OrderGrad's) have no mean to show: their aggregate
    # would be an HParams experiment without metrics, which TensorBoard may take for the whole table's columns.
    aggregates = {group: runs for group, runs in data.items() if common_tags(runs)}
    paths = {group: write_aggregate(runs, logdir) for group, runs in aggregates.items()}
    # What an earlier call wrote for a method that gets no aggregate now (a seed deleted, runs renamed) would show
    # the mean of runs that are gone. (One right in the log dir is of the seeds there: a call on the dir above groups
    # them alike and writes the same run.)
    for stale in aggregates_below(logdir) - set(paths.values()):
        shutil.rmtree(stale)
    tags = {tag for runs in aggregates.values() for run in runs for tag in run.scalars}
    write_layout(logdir, sorted(aggregates), tags)
    return Dashboards(groups, paths, tensorboard_url(run_prefixes(groups, logdir)))


def run_prefixes(groups: Mapping[str, Sequence[Path]], logdir: Path) -> list[str]:
    """The :func:`method_dir` of the runs of ``groups`` below ``logdir``, sorted: how TensorBoard's names of each
    method's runs start (``""`` for the seeds right in the log dir)."""
    return sorted({method_dir(run, logdir) for runs in groups.values() for run in runs})


def color_regex(prefixes: Sequence[str]) -> str:
    """A run-name regex whose capture group is the method, from the :func:`run_prefixes` of the methods (longest
    first, so ``ppo-cvar`` is not read as ``ppo``; ``""`` last, capturing nothing: the seeds right in the log dir
    share a colour)."""
    names = sorted(prefixes, key=lambda name: (-len(name), name))
    # Escaped for JavaScript's RegExp, which TensorBoard uses (Python's re.escape would also escape "-" and "@").
    return "^(" + "|".join(re.sub(r"[.*+?^${}()|[\]\\]", r"\\\g<0>", name) for name in names) + ")"


#: Where ``tensorboard --logdir DIR`` serves without ``--host`` and ``--port``: this machine, port 6006.
TENSORBOARD_HOSTS = ("localhost", "127.0.0.1")
TENSORBOARD_PORT = 6006


def tensorboard_command(logdir: str | Path, address: str = "http://localhost:6006") -> str:
    """The ``tensorboard`` command, quoted to paste in a shell, that serves ``logdir`` at ``address``: with
    ``--host`` for a host other than this machine, ``--port`` for a port other than 6006 and ``--path_prefix`` for a
    path (``http://host:6007/tb``: ``--host host --port 6007 --path_prefix /tb``).

    :raises ValueError: an ``address`` whose port is not a number in [0, 65535].
    """
    parts = urllib.parse.urlsplit(address)
    command = ["tensorboard", "--logdir", str(logdir)]
    if parts.hostname and parts.hostname not in TENSORBOARD_HOSTS:
        command += ["--host", parts.hostname]
    if parts.port not in (None, TENSORBOARD_PORT):
        command += ["--port", str(parts.port)]
    if parts.path.rstrip("/"):
        command += ["--path_prefix", parts.path.rstrip("/")]
    return shlex.join(command)


def tensorboard_url(prefixes: Sequence[str], address: str = "http://localhost:6006") -> str:
    """The Time Series address with the runs coloured by method (``prefixes``: the methods' :func:`run_prefixes`)."""
    query = urllib.parse.urlencode({"runColorGroup": f"regex:{color_regex(prefixes)}"})
    return f"{address}/?{query}#timeseries"
