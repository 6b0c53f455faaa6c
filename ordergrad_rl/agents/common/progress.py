"""Training progress as the schedules read it: SB3's ``progress_remaining``, held in ``[0, 1]``, and a warning when a
``learn`` call would start the schedules again.

SB3 computes ``progress_remaining = 1 - num_timesteps / total_timesteps`` of the current ``learn`` call
(``reset_num_timesteps=False`` adds the steps before it to ``total_timesteps``). Two things follow that matter more
here than in SB3:

- An episodic rollout ends with whole episodes, so the last one overshoots the budget by up to a rollout and the
  last update reads a *negative* progress. SB3's ``LinearSchedule`` holds its end value there; a callable such as
  ``lambda p: 0.01 * p`` does not, and an entropy coefficient read there is negative, an entropy penalty.
  :func:`clamped_progress_remaining` holds the progress at 0 once the budget is spent.
- ``learn`` called again after a call that ran to its end (training in pieces, ``for _ in range(10):
  model.learn(10_000, reset_num_timesteps=False)``) starts every schedule again from
  ``1 - n / (n + total_timesteps)``: a learning-rate decay, the default entropy bonus of short categorical episodes
  or a soft risk schedule goes round once per call. Resuming an interrupted call with the steps that remain is exact.
  :func:`warn_if_schedules_restart` says so when a schedule is in force.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ordergrad_rl.common.warning_util import user_stacklevel

#: The progress values at which a schedule is read to tell whether it moves with training.
_PROBES = (1.0, 0.75, 0.5, 0.25, 0.0)


def clamped_progress_remaining(num_timesteps: int, total_timesteps: int) -> float:
    """SB3's ``1 - num_timesteps / total_timesteps``, held at 0 once ``num_timesteps`` passes the budget (the
    overshoot of a rollout of whole episodes)."""
    return max(0.0, 1.0 - float(num_timesteps) / float(total_timesteps))


def _moves(schedule: Callable[[float], Any]) -> bool:
    return len({round(float(schedule(p)), 12) for p in _PROBES}) > 1


def schedules_in_force(model: Any) -> list[str]:
    """The names of ``model``'s schedules whose value changes with ``progress_remaining``: ``learning_rate``,
    ``clip_range``, ``clip_range_vf``, ``ent_coef``, ``risk_schedule`` and ``novelty_phase``, those it has."""
    names = []
    lr_schedule = getattr(model, "lr_schedule", None)
    if callable(lr_schedule) and _moves(lr_schedule):
        names.append("learning_rate")
    for name in ("clip_range", "clip_range_vf", "ent_coef"):
        value = getattr(model, name, None)
        if callable(value) and _moves(value):
            names.append(name)
    risk_schedule = getattr(model, "risk_schedule", None)
    if risk_schedule is not None and _moves(risk_schedule.share):
        names.append("risk_schedule")
    if getattr(model, "novelty_phase", 0.0):
        names.append("novelty_phase")
    return names


class ScheduleRestartWarning(UserWarning):
    """:func:`warn_if_schedules_restart`'s: a category of its own, which a caller that says it its own way (``train
    --trained-agent``) filters."""


def restarting_schedules(model: Any, reset_num_timesteps: bool) -> list[str]:
    """The schedules in force (:func:`schedules_in_force`) that ``model.learn(..., reset_num_timesteps)`` starts
    again: all of them after a ``learn`` call that ran to its end, with ``reset_num_timesteps=False``; none otherwise
    (a model whose last call stopped early, a callback's ``False``, resumes its schedules where they were, and a fresh
    model has nothing to restart). Read before SB3's ``learn`` updates ``_total_timesteps``."""
    num_timesteps = getattr(model, "num_timesteps", 0)
    if reset_num_timesteps or num_timesteps == 0 or num_timesteps < getattr(model, "_total_timesteps", 0):
        return []
    return schedules_in_force(model)


def warn_if_schedules_restart(model: Any, reset_num_timesteps: bool) -> None:
    """Warn (:class:`ScheduleRestartWarning`) when ``model.learn(..., reset_num_timesteps=False)`` follows a
    ``learn`` call that ran to its end while a schedule is in force (:func:`restarting_schedules`): the schedules
    start again instead of going on. Call it before SB3's ``learn`` updates ``_total_timesteps``.
    """
    names = restarting_schedules(model, reset_num_timesteps)
    if not names:
        return
    # The text is the same on every call of a loop, so that Python's warning filter shows it once.
    warnings.warn(
        f"{type(model).__name__}.learn(reset_num_timesteps=False) after a learn call that ran to its end: the "
        f"schedules of training progress in force ({', '.join(names)}) start again from progress_remaining "
        "1 - num_timesteps / (num_timesteps + total_timesteps) instead of going on from 0, as SB3's do. To train in "
        "pieces under one schedule, make one learn call with the whole budget and run what comes between the "
        "pieces in a callback (EvalCallback, CheckpointCallback, a callback whose _on_step returns False to stop); "
        "to resume an interrupted call, pass the steps that remain",
        ScheduleRestartWarning,
        stacklevel=user_stacklevel(),
    )
