"""The info channels of a multi-channel objective during a rollout: per-step ``info[name]`` values, summed per
episode by the buffer (the objective itself, RL-free, is :mod:`ordergrad_rl.core.channels`)."""

from __future__ import annotations

from typing import Any

import numpy as np


class InfoChannelError(ValueError):
    """The env's step infos do not fit the objective's info channels: a channel that never appears, or a value that
    is not a real scalar. A ``ValueError`` (what the agents raise for bad input) of its own type, so that a command
    can report it as the user's error without mistaking another ``ValueError`` of training for one."""


def _not_scalar(name: str, raw: list[Any], err: Exception | None = None) -> str:
    """The message for a step's ``info[name]`` values ``raw`` (one per env) of which some is not a real scalar."""
    shaped = next((i for i, item in enumerate(raw) if isinstance(item, list | tuple) or np.ndim(item) != 0), None)
    if shaped is None:
        return f"objective channel {name!r}: info[{name!r}] must be a real scalar ({err})"
    item = raw[shaped]
    return (
        f"objective channel {name!r}: info[{name!r}] must be a real scalar, got {item!r} of shape {np.shape(item)} "
        f"from env {shaped}"
    )


class InfoChannels:
    """Per-step values of the info channels during a rollout (``info[name]``, 0 at steps without the entry), and
    the check that each channel appeared at all.

    :param names: the info channels (:attr:`ChannelObjective.info_channels`; empty: :meth:`step` returns ``None``).
    """

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self.keys: set[str] = set()

    def step(self, infos: list[dict[str, Any]]) -> dict[str, np.ndarray] | None:
        """``{name: [n_envs] float64}`` of one vectorized step's infos (``None`` without channels).

        :raises InfoChannelError: a value that is not a real scalar (an array of one element included), or that is
            not finite (``None`` included: a step without a value leaves the key out).
        """
        if not self.names:
            return None
        self.keys.update(*(info.keys() for info in infos))
        values = {}
        for name in self.names:
            raw = [info.get(name, 0.0) for info in infos]
            try:
                value = np.array(raw, dtype=np.float64)
            except (TypeError, ValueError) as err:
                raise InfoChannelError(_not_scalar(name, raw, err)) from err
            if value.shape != (len(infos),):
                raise InfoChannelError(_not_scalar(name, raw))
            if not np.isfinite(value).all():
                i = int(np.flatnonzero(~np.isfinite(value))[0])
                raise InfoChannelError(
                    f"objective channel {name!r}: env {i} reported info[{name!r}] = {raw[i]!r}; a channel's values "
                    "must be finite (a step without a value leaves the key out, which counts as 0)"
                )
            values[name] = value
        return values

    def check(self) -> None:
        """:class:`InfoChannelError` naming the info keys present if some channel never appeared (a misspelt key)."""
        missing = [name for name in self.names if name not in self.keys]
        if missing:
            raise InfoChannelError(
                f"objective channels {missing} never appeared in the env's step info during a rollout; info keys "
                f"present: {sorted(self.keys)} (a channel is 'reward' or an info key summed over the episode)"
            )
