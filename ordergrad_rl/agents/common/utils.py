"""Small helpers of the agents that have no better home."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from stable_baselines3.common.logger import Logger


@contextmanager
def lent_attributes(obj: Any, **values: Any) -> Iterator[None]:
    """Within the block, ``obj``'s attributes hold ``values``; afterwards (also on an error) their own values again.

    The one way the agents give SB3 a value that only one of its methods should see, where SB3 reads an attribute
    and takes no argument for it (the policy's build-time ``critic``, the episodic buffer's sizes, the run
    directory, the per-minibatch normalization): the attribute that is saved keeps the user's value.
    """
    saved = {name: getattr(obj, name) for name in values}
    for name, value in values.items():
        setattr(obj, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(obj, name, value)


def pop_record(logger: Logger, key: str) -> Any | None:
    """Withdraw ``key`` from what SB3's ``logger`` writes at its next ``dump``; return its value (``None`` if absent).

    SB3's updates record tags that describe no network of an OrderGrad agent (``train/value_loss`` without a critic)
    or that mean something else (the Q loss). SB3's ``Logger`` has no public way to withdraw a record, so this is the
    one place that edits its tables (``name_to_value``, ``name_to_count``, ``name_to_excluded``).
    """
    if key not in logger.name_to_value:
        return None
    logger.name_to_count.pop(key, None)
    logger.name_to_excluded.pop(key, None)
    return logger.name_to_value.pop(key)
