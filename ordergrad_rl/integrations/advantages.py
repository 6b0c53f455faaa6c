"""OrderGrad advantages of grouped completions, the way a GRPO trainer uses them (torch or NumPy, no TRL needed).

A GRPO rollout holds ``n_prompts`` groups of ``G`` completions, each scored by one or more reward functions:
``rewards[B, F]`` with ``B = n_prompts * G``, the completions of a prompt contiguous (TRL's layout). Each group is
ranked on its own, in one core call on ``[n_prompts, G]``:

* a plain objective (``"top2@4"``, ``"max@4"``, ``"cvar0.25@4"``, ``"mean"`` = GRPO's baseline) ranks the weighted
  sum of the reward functions (TRL's ``sum_then_normalize``): completion ``i`` of a group gets ``k * a_i``;
* a channel objective (``"correct=top2@4 + 0.4*length=bot2@4"``, channel names = reward function names) ranks each
  reward function on its own and sums the weighted advantages (the paper's correctness Top-2@4 + length Bot-2@4).

``scale``: ``"group"`` divides each group's advantages by their standard deviation (TRL's ``scale_rewards="group"``,
with its conventions: ``ddof=1``, ``+1e-4``), ``"batch"`` by the whole batch's, ``"channel"`` each channel's by its
own group std before the channel weights (for one channel the same as ``"group"``), ``"none"`` keeps the unbiased
weights. With ``objective="mean"`` and ``"group"`` this is TRL's own GRPO advantage up to the ``+1e-4``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ordergrad_rl.core import ChannelObjective, Objective, lstat_advantage
from ordergrad_rl.core.channels import parse_agent_objective

SCALES = ("group", "batch", "channel", "none")
#: TRL's epsilon in ``(R - mean) / (std + eps)``.
EPS = 1e-4


def std(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """TRL's ``nanstd``: the standard deviation with ``ddof=1`` (0 for a single value)."""
    count = values.size if axis is None else values.shape[axis]
    if count < 2:
        return np.zeros_like(values.mean(axis=axis, keepdims=axis is not None))
    return values.std(axis=axis, ddof=1, keepdims=axis is not None)


def parse_group_objective(spec: Any, group_size: int, channels: Sequence[str] = ()) -> Objective | ChannelObjective:
    """The objective of ``spec`` bound to ``k = group_size // 2`` when it has none, checked before any generation.

    :param channels: the reward functions' names (a channel objective may only name these).
    :raises ValueError: an invalid spec, ``gcvar`` (not an L-statistic of the group), ``k >= group_size``
        (the leave-one-out advantage needs ``k < G``), or a channel that is no reward function.
    """
    parsed, gcvar = parse_agent_objective(spec)
    if gcvar is not None:
        raise ValueError(f"objective {spec!r}: GCVaR's weights are not available here; use 'cvar{gcvar}'")
    if not parsed.is_bound:
        parsed = parsed.bind(group_size // 2) if isinstance(parsed, Objective) else parsed.bind_default(group_size // 2)
    parts = parsed.channels if isinstance(parsed, ChannelObjective) else ()
    for k in [c.objective.k for c in parts] or [parsed.k]:
        if k >= group_size:
            raise ValueError(
                f"objective {str(parsed)!r} has k={k}, but the leave-one-out advantage needs k < G = num_generations "
                f"= {group_size}: raise num_generations or lower k"
            )
    unknown = [c.name for c in parts if c.name not in channels]
    if unknown:
        raise ValueError(f"objective channels {unknown} are not reward functions; reward functions: {list(channels)}")
    return parsed


def group_advantages(
    objective: Objective | ChannelObjective,
    rewards: np.ndarray,
    group_size: int,
    names: Sequence[str],
    weights: Sequence[float] | None = None,
    scale: str = "group",
) -> np.ndarray:
    """Per-completion OrderGrad advantages of a rollout.

    :param objective: the bound objective (:func:`parse_group_objective`).
    :param rewards: ``[B, F]`` rewards of the ``F`` reward functions, groups of ``group_size`` contiguous; NaN
        (a function that did not score a completion) counts as 0, as in TRL's weighted sum.
    :param names: the reward functions' names (channels).
    :param weights: the reward functions' weights in the plain objective's sum (default 1 each).
    :param scale: ``"group"``, ``"batch"``, ``"channel"`` or ``"none"``.
    :return: ``[B]`` float64 advantages.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    rewards = np.nan_to_num(np.asarray(rewards, dtype=np.float64), nan=0.0)
    if rewards.ndim != 2 or rewards.shape[1] != len(names) or rewards.shape[0] % group_size:
        raise ValueError(
            f"rewards must be [B, {len(names)}] with B a multiple of G = {group_size}, got shape {rewards.shape}"
        )
    grouped = rewards.reshape(-1, group_size, len(names))

    def normalize(values: np.ndarray) -> np.ndarray:
        return values / (std(values, axis=-1) + EPS)

    if isinstance(objective, ChannelObjective):
        values = {name: grouped[..., i] for i, name in enumerate(names)}
        out = objective.advantage_weights(values, normalize=normalize if scale == "channel" else None)
    else:
        total = grouped @ np.asarray(weights if weights is not None else np.ones(len(names)), dtype=np.float64)
        out = objective.k * lstat_advantage(total, objective)
    if scale in ("group", "channel") and not (scale == "channel" and isinstance(objective, ChannelObjective)):
        out = normalize(out)
    elif scale == "batch":
        out = out / (std(out.reshape(-1)) + EPS)
    return np.asarray(out, dtype=np.float64).reshape(-1)
