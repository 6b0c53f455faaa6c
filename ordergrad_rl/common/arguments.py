"""Argument checks shared by the envs and the agents: a bad value raises ``ValueError`` naming the argument.

The bottom layer of the package: it imports nothing from ``ordergrad_rl``.
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import Any


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool; NumPy integers included) ``>= minimum``.

    :raises ValueError: naming ``name`` otherwise.
    """
    if isinstance(value, bool) or not isinstance(value, Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_seed(seed: Any) -> int | None:
    """``seed`` as an ``int`` (NumPy integers included, as ``np.arange`` gives them), or ``None``.

    :raises ValueError: anything else, or an integer outside NumPy's seed range ``[0, 2**32 - 1]`` (SB3 and
        Gymnasium failed on these with their own errors, ``np.int64`` seeds among them).
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= int(seed) < 2**32:
        raise ValueError(f"seed must be None or an integer in [0, 2**32 - 1], got {seed!r}")
    return int(seed)


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


def check_number(name: str, value: Any, minimum: float = -math.inf, allow_inf: bool = False) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is a real number ``>= minimum``, finite unless ``allow_inf``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if math.isnan(value) or (math.isinf(value) and not allow_inf) or value < minimum:
        finite = "" if allow_inf else "finite "
        raise ValueError(f"{name} must be a {finite}number >= {minimum}, got {value!r}")


def check_schedule(name: str, value: Any, minimum: float = 0.0) -> None:
    """A finite number ``>= minimum``, or a schedule (a callable of the remaining progress), as SB3 accepts, whose
    value at the start of training (remaining progress 1) is such a number when it is a number at all.

    :raises ValueError: anything else, e.g. the string ``"1e-2x"`` from a mistyped command line, or rl-zoo3's
        ``clip_range=lin_-0.2`` (a schedule from -0.2 to 0).
    """
    if callable(value):
        try:
            start = value(1.0)  # as SB3 calls it when it builds the optimizer; a schedule decays from here
        except Exception:
            return  # not callable like a schedule: left to SB3, which calls it
        if isinstance(start, Real) and not isinstance(start, bool) and (not math.isfinite(start) or start < minimum):
            raise ValueError(f"{name} must start at a finite number >= {minimum}, got a schedule starting at {start!r}")
        return
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number or a schedule (callable), got {value!r}")
    if not math.isfinite(value) or value < minimum:
        raise ValueError(f"{name} must be a finite number >= {minimum}, got {value!r}")
