"""Schedules of SB3's ``progress_remaining`` (1 at the start of training, 0 at its end) that SB3 does not provide.

SB3's :class:`~stable_baselines3.common.utils.LinearSchedule` moves from the start first and then holds the end; a
:class:`HeldLinearSchedule` holds the start first and then moves to the end. Both are classes rather than closures so
that a model saved with one pickles it by name and shows what it is.
"""

from __future__ import annotations

from ordergrad_rl.common.arguments import check_float


class HeldLinearSchedule:
    """A value held at ``start`` for the first ``hold_fraction`` of training, then moved linearly to ``end`` at the
    end of training.

    :param start: the value while held (at ``progress_remaining >= 1 - hold_fraction``).
    :param end: the value at the end of training (``progress_remaining = 0``).
    :param hold_fraction: the share of training (in ``[0, 1)``) over which ``start`` is held; 0 is SB3's
        ``LinearSchedule(start, end, 1.0)``.

    Like every SB3 schedule, it reads the progress of the current ``learn`` call's ``total_timesteps``
    (``reset_num_timesteps=False`` counts the steps before it): train in one call, or resume a saved model with the
    steps that remain.
    """

    def __init__(self, start: float, end: float, hold_fraction: float) -> None:
        self.start = check_float("start", start)
        self.end = check_float("end", end)
        self.hold_fraction = check_float("hold_fraction", hold_fraction, 0, 1, open_high=True)

    def __call__(self, progress_remaining: float) -> float:
        decay = 1.0 - self.hold_fraction  # the remaining progress at which the decay begins
        # Held in [0, 1] as SB3's LinearSchedule holds its end: a rollout of whole episodes overshoots the budget,
        # and SB3's own progress then turns negative.
        return self.end + (self.start - self.end) * min(1.0, max(0.0, progress_remaining / decay))

    def __repr__(self) -> str:
        return f"HeldLinearSchedule(start={self.start:g}, end={self.end:g}, hold_fraction={self.hold_fraction:g})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HeldLinearSchedule):
            return NotImplemented
        return (self.start, self.end, self.hold_fraction) == (other.start, other.end, other.hold_fraction)

    def __hash__(self) -> int:
        return hash((self.start, self.end, self.hold_fraction))
