"""TensorBoard's HParams records (the hparams plugin's protos), written to a TensorBoard ``SummaryWriter``.

A run writes its HParams experiment (the columns: arguments and metric tags), its session start (the argument
values) and its session end, once: TensorBoard keeps the first record of a run directory (the first value of each
tag, over the directory's event files), so a continued run has nothing to add (:func:`has_session_start`).

The HParams tab ticks five argument columns by default: the first five whose ``differs`` flag is set, else the
first five by name (advantage, algorithm, batch_size, ...). A run cannot know which arguments differ between the
runs it will be compared with, so the flag marks the arguments a risk comparison is about, :data:`SHOWN_HPARAMS`,
and those are the columns a user sees without ticking anything.
(SB3's ``HParam`` output, through torch's ``hparams``, sets no flag: it could not do this.)
"""

from __future__ import annotations

import glob
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.compat.proto import summary_pb2
from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

#: The arguments the HParams tab shows by default (at most five: the tab ticks five).
SHOWN_HPARAMS: tuple[str, ...] = ("objective", "k", "algorithm", "risk_schedule", "n_episodes")


def hparam_value(value: Any) -> str | float | int | None:
    """A value TensorBoard's HParams dashboard can show: numbers and strings as they are, booleans as ``"True"`` /
    ``"False"`` (TensorBoard would show 1 / 0), an SB3 schedule (a callable of ``progress_remaining`` returning a
    number, e.g. a decayed ``ent_coef`` or ``learning_rate``) as its values at the start and the end of training,
    ``"0.01 -> 0"``; other values (dicts, callables that are not schedules) ``None`` (not logged)."""
    if isinstance(value, np.generic):  # a NumPy scalar as the Python one (np.bool_ as a boolean)
        value = value.item()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, (int, float, str)):
        return value
    if callable(value):
        return _schedule_value(value)
    return None


def _schedule_value(schedule: Any) -> str | None:
    """``"<value at the start> -> <value at the end>"`` of an SB3 schedule, ``None`` if it is not one (a callable that
    takes no float or returns no number: a class, a policy constructor)."""
    try:
        ends = [schedule(1.0), schedule(0.0)]
    except Exception:  # any callable may reach here: one that is not a schedule is left out, as before
        return None
    if not all(isinstance(end, (int, float, np.number)) and not isinstance(end, bool) for end in ends):
        return None
    start, end = (float(value) for value in ends)
    return f"{start:g}" if start == end else f"{start:g} -> {end:g}"


def _struct_value(value: str | float | int) -> struct_pb2.Value:
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value)
    return struct_pb2.Value(number_value=float(value))


def _summary(tag: str, data: plugin_data_pb2.HParamsPluginData) -> summary_pb2.Summary:
    value = summary_pb2.Summary.Value(
        tag=tag, metadata=metadata.create_summary_metadata(data), tensor=metadata.NULL_TENSOR
    )
    return summary_pb2.Summary(value=[value])


def experiment_summary(hparams: Mapping[str, str | float | int], metrics: Sequence[str]) -> summary_pb2.Summary:
    """The HParams experiment: one column per argument (``differs`` on :data:`SHOWN_HPARAMS`), one per metric tag.

    :param hparams: argument name -> value (as :func:`hparam_value` gives it).
    :param metrics: scalar tags whose last values the table shows.
    """
    infos = [
        api_pb2.HParamInfo(
            name=name,
            type=api_pb2.DATA_TYPE_STRING if isinstance(value, str) else api_pb2.DATA_TYPE_FLOAT64,
            differs=name in SHOWN_HPARAMS,
        )
        for name, value in hparams.items()
    ]
    experiment = api_pb2.Experiment(
        hparam_infos=infos,
        metric_infos=[api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag)) for tag in metrics],
        time_created_secs=time.time(),
    )
    return _summary(metadata.EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=experiment))


def session_start_summary(hparams: Mapping[str, str | float | int], group_name: str = "") -> summary_pb2.Summary:
    """The session start: the run's argument values (``group_name``: the HParams table's row name, else the
    run's)."""
    info = plugin_data_pb2.SessionStartInfo(group_name=group_name, start_time_secs=time.time())
    for name, value in hparams.items():
        info.hparams[name].CopyFrom(_struct_value(value))
    return _summary(metadata.SESSION_START_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_start_info=info))


def session_end_summary() -> summary_pb2.Summary:
    """The session end (status success: the table shows the run's metrics as they are when it is opened)."""
    info = plugin_data_pb2.SessionEndInfo(status=api_pb2.Status.STATUS_SUCCESS, end_time_secs=time.time())
    return _summary(metadata.SESSION_END_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_end_info=info))


def write_hparams(
    writer: Any,
    hparams: Mapping[str, Any],
    metrics: Sequence[str],
    group_name: str = "",
    columns: Mapping[str, Any] | None = None,
) -> None:
    """Write a run's experiment, session start and end to ``writer`` (a ``torch.utils.tensorboard.SummaryWriter``).

    :param hparams: argument name -> value; values without a TensorBoard form (:func:`hparam_value`) are left out.
    :param metrics: scalar tags whose last values the HParams table shows.
    :param columns: more argument columns of the experiment, without a value in this run (name -> a value of their
        type, from the runs that have them): TensorBoard takes the whole table's columns from one run's experiment.
    """
    values, others = (_loggable(mapping) for mapping in (hparams, columns or {}))
    for summary in (experiment_summary(others | values, metrics), session_start_summary(values, group_name)):
        writer.file_writer.add_summary(summary)
    writer.file_writer.add_summary(session_end_summary())


def has_session_start(writer: Any) -> bool:
    """Whether the run directory of ``writer`` (a ``torch.utils.tensorboard.SummaryWriter``) already holds an HParams
    session start, in its event files or in ``writer``'s queue (flushed here): TensorBoard would show that one, not
    another written now."""
    writer.flush()
    for path in sorted(glob.glob(os.path.join(writer.get_logdir(), "*tfevents*"))):  # TensorBoard's order
        for event in EventFileLoader(path).Load():
            if any(value.tag == metadata.SESSION_START_INFO_TAG for value in event.summary.value):
                return True
    return False


def _loggable(hparams: Mapping[str, Any]) -> dict[str, str | float | int]:
    """The values of ``hparams`` that have a TensorBoard form (:func:`hparam_value`), in it."""
    values = {name: hparam_value(value) for name, value in hparams.items()}
    return {name: value for name, value in values.items() if value is not None}
