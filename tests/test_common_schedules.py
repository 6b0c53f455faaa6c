"""HeldLinearSchedule: values by hand, SB3's LinearSchedule as its special case, bad arguments, pickling."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from stable_baselines3.common.utils import LinearSchedule

from ordergrad_rl.common.schedules import HeldLinearSchedule


def test_the_value_is_held_then_moves_linearly_to_the_end() -> None:
    schedule = HeldLinearSchedule(0.01, 0.0, 0.6)
    # Held while progress_remaining >= 0.4 (the first 60% of training), then 0.01 * p / 0.4.
    for progress, expected in [(1.0, 0.01), (0.7, 0.01), (0.4, 0.01), (0.3, 0.0075), (0.2, 0.005), (0.0, 0.0)]:
        assert schedule(progress) == pytest.approx(expected, abs=1e-15)
    rising = HeldLinearSchedule(1.0, 3.0, 0.5)  # towards a larger end
    assert [rising(p) for p in (1.0, 0.5, 0.25, 0.0)] == pytest.approx([1.0, 1.0, 2.0, 3.0])


def test_no_hold_is_sb3s_linear_schedule() -> None:
    ours, sb3 = HeldLinearSchedule(0.3, 0.05, 0.0), LinearSchedule(0.3, 0.05, 1.0)
    for progress in np.linspace(0.0, 1.0, 41):
        assert ours(float(progress)) == pytest.approx(sb3(float(progress)), abs=1e-12)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0.01, 0.0, 1.0), "hold_fraction must be a number in \\[0, 1\\)"),  # never decays: a constant
        ((0.01, 0.0, -0.1), "hold_fraction"),
        ((0.01, 0.0, True), "hold_fraction"),
        ((float("nan"), 0.0, 0.5), "start must be a finite number"),
        ((0.01, "0", 0.5), "end must be a finite number"),
    ],
)
def test_bad_arguments_are_refused_by_name(args, match) -> None:
    with pytest.raises(ValueError, match=match):
        HeldLinearSchedule(*args)


def test_it_pickles_compares_and_shows_its_arguments() -> None:
    schedule = HeldLinearSchedule(0.01, 0.0, 0.6)
    copy = pickle.loads(pickle.dumps(schedule))
    assert copy == schedule and hash(copy) == hash(schedule) and copy(0.2) == schedule(0.2)
    assert schedule != HeldLinearSchedule(0.01, 0.0, 0.5) and schedule != 0.01
    assert repr(schedule) == "HeldLinearSchedule(start=0.01, end=0, hold_fraction=0.6)"


def test_progress_past_either_end_holds_the_end_values() -> None:
    # SB3's progress turns negative when a rollout of whole episodes overshoots the budget: the end value, never past.
    schedule = HeldLinearSchedule(0.01, 0.0, 0.6)
    assert schedule(-0.25) == 0.0 and schedule(1.5) == 0.01
