"""Risk dashboards: the risk profile of a batch of returns in SB3's logger, and a TensorBoard custom-scalars layout.

Tags (``<prefix>`` is ``risk`` for training batches, ``eval_risk`` for :class:`~ordergrad_rl.agents.RiskEvalCallback`):

* ``<prefix>/<key>`` for every key of :func:`ordergrad_rl.risk.risk_profile`: ``mean``, ``std``, ``min``, ``max``,
  ``cvar_0.05``, ``cvar_0.1``, ``cvar_0.2``, ``quantile_0.05`` ... ``quantile_0.95``;
* ``<prefix>/episode_returns``: histogram of the returns (TensorBoard only; not written to stdout/csv/json);
* ``risk/objective``: the batch L-statistic value ``v^alpha`` of the training objective (training only).

Tags named after the user's channels and info entries (``risk/<channel>/quantile_0.05``, ``eval_info/<key>_mean``)
can be longer than SB3's stdout/log table shows: :func:`record_scalar` keeps such a tag out of that table (which would
raise a ``ValueError`` on two tags cut to the same text) and writes it to the other outputs.

Run names and hparams (TensorBoard's "HParams" tab): :func:`default_run_name` is the algorithm and the objective
(``OrderGradPPO_cvar0.2@128``, then SB3 appends ``_1``, ``_2`` ...; the Q-critic estimator's runs end in
``_qcritic``), and :func:`record_hparams` logs a run's
arguments (objective, k, n_episodes, learning rate, ...) with the risk tags as its metrics (TensorBoard shows
their last values), with objective, k, algorithm, risk_schedule and n_episodes the columns shown by default.

The layout (TensorBoard's "Custom Scalars" tab) has one category per prefix with four charts: the quantile bands
5/50/95 and 25/50/75 (margin charts: the median with a shaded band), the CVaRs, and the mean with min/max (and
the objective). Several runs written to one log dir merge into the same charts, so mean vs CVaR vs top-M runs
sit side by side.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.logger import HumanOutputFormat, Logger, TensorBoardOutputFormat

from ordergrad_rl.agents.common.hparams import has_session_start, write_hparams
from ordergrad_rl.risk import risk_profile

TRAIN_PREFIX = "risk"
EVAL_PREFIX = "eval_risk"
#: Histogram values are tensors: only TensorBoard can show them.
HISTOGRAM_EXCLUDE: tuple[str, ...] = ("stdout", "log", "json", "csv")
#: Longest objective part of a run name; longer specs (numeric alpha vectors) are cut and end in a hash.
MAX_NAME_OBJECTIVE = 40
#: Risk-profile keys given to the HParams dashboard as metrics (all 13 would bury the comparison in columns).
HPARAM_METRIC_KEYS: tuple[str, ...] = ("mean", "std", "min", "cvar_0.05", "cvar_0.1", "cvar_0.2", "quantile_0.5")

_CATEGORY_TITLES = {TRAIN_PREFIX: "risk (training batches)", EVAL_PREFIX: "eval_risk (evaluation)"}


def human_exclude(logger: Logger, key: str) -> tuple[str, ...] | None:
    """``("stdout", "log")`` if SB3's stdout/log table (a ``HumanOutputFormat`` of ``logger``) would cut ``key``,
    else ``None``.

    The table shows ``<tag>/<name>`` as ``"   <name>"`` under its tag, cut to ``max_length`` (36 by default), and
    raises a ``ValueError`` when two keys of a dump cut to the same text (``risk/constraint_violation/quantile_0.05``
    and ``.../quantile_0.25``): a key it would cut is kept out of it, as SB3 keeps out what it cannot show.
    """
    lengths = [output.max_length for output in logger.output_formats if isinstance(output, HumanOutputFormat)]
    slash = key.find("/")
    shown = f"   {key[slash + 1 :]}" if slash > 0 else key  # as HumanOutputFormat.write shows it
    return ("stdout", "log") if lengths and len(shown) > min(lengths) else None


def record_scalar(logger: Logger, key: str, value: float) -> None:
    """``logger.record(key, value)`` for a key named after a channel or an info entry: out of the stdout/log table
    where that would cut it (:func:`human_exclude`), in every other output."""
    logger.record(key, value, exclude=human_exclude(logger, key))


def record_risk_profile(
    logger: Logger, prefix: str, returns: np.ndarray, weights: np.ndarray | None = None
) -> dict[str, float]:
    """Record ``<prefix>/<key>`` for the risk profile of ``returns`` and the histogram ``<prefix>/episode_returns``.

    :param logger: SB3 logger (values are written at its next ``dump``).
    :param prefix: tag prefix, ``"risk"`` or ``"eval_risk"``.
    :param returns: ``[n]`` episode returns.
    :param weights: ``[n]`` likelihood ratios of a batch drawn by the noise sampler: the profile is the policy's
        (:func:`~ordergrad_rl.risk.risk_profile`); the histogram still shows the draws (TensorBoard's histograms
        take no weights).
    :return: the profile.
    """
    profile = risk_profile(returns, weights=weights)
    for key, value in profile.items():
        record_scalar(logger, f"{prefix}/{key}", value)
    logger.record(
        f"{prefix}/episode_returns", th.as_tensor(np.asarray(returns, dtype=np.float64)), exclude=HISTOGRAM_EXCLUDE
    )
    return profile


def risk_layout(prefixes: Iterable[str] = (TRAIN_PREFIX, EVAL_PREFIX)) -> dict[str, dict[str, list]]:
    """The custom-scalars layout (``SummaryWriter.add_custom_scalars`` format) for the given tag prefixes.

    Multiline entries are regular expressions; margin entries are ``[value, lower, upper]`` tags.
    """
    layout = {}
    for prefix in prefixes:
        # Only training batches have an objective value.
        mean_chart = "mean, min, max, objective" if prefix == TRAIN_PREFIX else "mean, min, max"
        layout[_CATEGORY_TITLES.get(prefix, prefix)] = {
            f"{prefix}: return quantiles 5% / 50% / 95%": [
                "Margin",
                [f"{prefix}/quantile_0.5", f"{prefix}/quantile_0.05", f"{prefix}/quantile_0.95"],
            ],
            f"{prefix}: return quantiles 25% / 50% / 75%": [
                "Margin",
                [f"{prefix}/quantile_0.5", f"{prefix}/quantile_0.25", f"{prefix}/quantile_0.75"],
            ],
            f"{prefix}: CVaR (lower-tail means)": ["Multiline", [rf"^{prefix}/cvar_"]],
            f"{prefix}: {mean_chart}": ["Multiline", [rf"^{prefix}/(mean|min|max|objective)$"]],
        }
    return layout


def write_risk_layout(logger: Logger, prefixes: Iterable[str] = (TRAIN_PREFIX, EVAL_PREFIX)) -> bool:
    """Write :func:`risk_layout` to every TensorBoard output of ``logger``.

    :return: whether the logger had a TensorBoard output.
    """
    written = False
    layout = risk_layout(prefixes)
    for output in logger.output_formats:
        if isinstance(output, TensorBoardOutputFormat):
            output.writer.add_custom_scalars(layout)
            written = True
    return written


def default_run_name(algorithm: str, objective: str, estimator: str | None = None) -> str:
    """``<algorithm>_<objective>`` as a file name: ``OrderGradPPO_cvar0.2@128``; with an ``estimator``,
    ``<algorithm>_<objective>_<estimator>``: ``OrderGradPPO_top5@10_qcritic``.

    Characters other than letters, digits and ``.@-`` become ``-`` (``alpha[0.1,0.9]`` -> ``alpha-0.1-0.9-``);
    objectives longer than :data:`MAX_NAME_OBJECTIVE` are cut and end in a hash of the whole spec.
    """
    text = _name_part(objective)
    if len(text) > MAX_NAME_OBJECTIVE:
        text = f"{text[: MAX_NAME_OBJECTIVE - 9]}-{hashlib.sha1(objective.encode()).hexdigest()[:8]}"
    return f"{algorithm}_{text}" + (f"_{_name_part(estimator)}" if estimator else "")


def _name_part(text: str) -> str:
    """``text`` as part of a file name: characters other than letters, digits and ``.@-`` become ``-``."""
    return re.sub(r"[^\w.@-]+", "-", text)


def hparam_metrics(prefixes: Iterable[str]) -> list[str]:
    """The HParams metric tags of a run logging ``prefixes``: :data:`HPARAM_METRIC_KEYS` of each prefix, evaluation
    prefixes first (deployment is what the comparison is about), then ``risk/objective``."""
    ordered = sorted(dict.fromkeys(prefixes), key=lambda prefix: prefix == TRAIN_PREFIX)
    metrics = [f"{prefix}/{key}" for prefix in ordered for key in HPARAM_METRIC_KEYS]
    return metrics + ([f"{TRAIN_PREFIX}/objective"] if TRAIN_PREFIX in ordered else [])


def record_hparams(logger: Logger, hparams: Mapping[str, Any], prefixes: Iterable[str] = (TRAIN_PREFIX,)) -> None:
    """Write ``hparams`` for TensorBoard's HParams dashboard, with the risk tags of ``eval_risk``, ``risk`` and
    ``prefixes`` as metrics (:func:`hparam_metrics`), to every TensorBoard output of ``logger``
    (:func:`~ordergrad_rl.agents.common.hparams.write_hparams`: objective, k, algorithm, risk_schedule and n_episodes
    are the columns shown by default).

    TensorBoard reads a metric's value from the run's scalars, so the dashboard shows the last logged values: the
    run's final risk profile. It takes the metric columns of the whole table from one run, chosen anew at every
    start: every run lists the evaluation columns, evaluating or not (its cells stay empty), so that a run without
    an evaluation callback does not hide the ``eval_risk/*`` columns of the runs beside it.

    The record is written once per run directory: TensorBoard shows a run's first, so an output whose directory
    already holds one (a run continued with ``reset_num_timesteps=False``, a logger of one's own reused) gets none
    (:func:`~ordergrad_rl.agents.common.hparams.has_session_start`).

    :param hparams: argument name -> value; values without a TensorBoard form (see
        :func:`~ordergrad_rl.agents.common.hparams.hparam_value`) are left out.
    :param prefixes: tag prefixes of the metrics (``risk``, ``eval_risk``).
    """
    for output in logger.output_formats:
        if isinstance(output, TensorBoardOutputFormat) and not has_session_start(output.writer):
            write_hparams(output.writer, hparams, hparam_metrics((EVAL_PREFIX, TRAIN_PREFIX, *prefixes)))
