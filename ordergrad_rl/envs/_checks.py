"""Validation of the envs' constructor arguments: a bad value raises ``ValueError`` naming the argument."""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) ``>= minimum``.

    :raises ValueError: naming ``name`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_float(
    name: str, value: Any, low: float = -math.inf, high: float = math.inf, *, open_high: bool = False
) -> float:
    """``value`` as a ``float`` if it is a finite real number (not a bool) in ``[low, high]`` (``[low, high)``).

    :raises ValueError: naming ``name`` otherwise (NaN and infinities included).
    """
    ok = isinstance(value, Real) and not isinstance(value, bool)
    if ok:
        value = float(value)
        ok = math.isfinite(value) and (low <= value < high if open_high else low <= value <= high)
    if not ok:
        if math.isinf(low) and math.isinf(high):
            expected = "a finite number"
        else:
            expected = f"a number in [{low}, {high})" if open_high else f"a number in [{low}, {high}]"
        raise ValueError(f"{name} must be {expected}, got {value!r}")
    return value
