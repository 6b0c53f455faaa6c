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
own group std before the channel weights (for one channel the same as ``"group"``; refused for a plain objective of
several reward functions), ``"none"`` keeps the unbiased weights. With ``objective="mean"`` and ``"group"`` this is
TRL's own GRPO advantage up to the ``+1e-4``; with ``"none"`` it is ``G/(G-1)`` times TRL's (the leave-one-out
baseline: the mean of the group's other completions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import array_api_compat
import numpy as np

from ordergrad_rl.core import ChannelObjective, Objective, lstat_advantage
from ordergrad_rl.core.channels import Channel, parse_agent_objective

SCALES = ("group", "batch", "channel", "none")
#: TRL's epsilon in ``(R - mean) / (std + eps)``.
EPS = 1e-4


def std(values: np.ndarray, axis: int | None = None) -> np.ndarray:
    """TRL's ``nanstd``: the standard deviation with ``ddof=1`` (0 for a single value)."""
    count = values.size if axis is None else values.shape[axis]
    if count < 2:
        return np.zeros_like(values.mean(axis=axis, keepdims=axis is not None))
    return values.std(axis=axis, ddof=1, keepdims=axis is not None)


def objective_ks(objective: Objective | ChannelObjective) -> list[int]:
    """The order-statistic sizes of a bound objective: one per channel of a channel objective."""
    parts = objective.channels if isinstance(objective, ChannelObjective) else ()
    return [int(c.objective.k) for c in parts] or [int(objective.k)]  # type: ignore[arg-type]


def scored_completions(rewards: np.ndarray, group_size: int) -> np.ndarray:
    """``[n_groups, group_size]`` bool: the completions of ``rewards`` (``[B, F]``) that some reward function scored
    (TRL 1.16 calls one that every function returned ``None`` for, all NaN, unscorable)."""
    return ~np.isnan(rewards).all(axis=1).reshape(-1, group_size)


def check_group_size(group_size: Any, minimum: int = 1) -> int:
    """``group_size`` as an ``int``, refused unless it is an integer ``>= minimum``.

    :raises ValueError: a group size that is no integer or is below ``minimum``.
    """
    if isinstance(group_size, bool) or not isinstance(group_size, (int, np.integer)) or group_size < minimum:
        raise ValueError(f"the group size (num_generations) must be an integer >= {minimum}, got {group_size!r}")
    return int(group_size)


def parse_group_objective(
    spec: Any, group_size: int, channels: Sequence[str] | None = ()
) -> Objective | ChannelObjective:
    """The objective of ``spec`` bound to ``k = group_size // 2`` when it has none, checked before any generation.

    :param channels: the reward functions' names (a channel objective may only name these); ``None``: not known yet,
        a channel objective's names are not checked.
    :raises ValueError: an invalid spec, ``gcvar`` (not an L-statistic of the group), a group size below 2,
        ``k >= group_size`` (the leave-one-out advantage needs ``k < G``), or a channel that is no reward function or
        the name of several.
    """
    group_size = check_group_size(group_size, minimum=2)
    parsed, gcvar = parse_agent_objective(spec)
    if gcvar is not None:
        raise ValueError(f"objective {spec!r}: GCVaR's weights are not available here; use 'cvar{gcvar}'")
    names_reward = isinstance(spec, Mapping) or (isinstance(spec, str) and "=" in spec)
    several = channels is not None and len(channels) > 1 and "reward" in channels
    if isinstance(parsed, Objective) and names_reward and several:
        # The agents read a lone "reward=" channel as the plain objective of the env's reward (and so does this
        # with no reward function named so); here "reward" names one of several functions: its channel alone, not
        # their weighted sum.
        parsed = ChannelObjective((Channel("reward", parsed),))
    if not parsed.is_bound:
        parsed = parsed.bind(group_size // 2) if isinstance(parsed, Objective) else parsed.bind_default(group_size // 2)
    for k in objective_ks(parsed):
        if k >= group_size:
            raise ValueError(
                f"objective {str(parsed)!r} has k={k}, but the leave-one-out advantage needs k < G = num_generations "
                f"= {group_size}: raise num_generations or lower k"
            )
    if isinstance(parsed, ChannelObjective) and channels is not None:
        unknown = [c.name for c in parsed.channels if c.name not in channels]
        if unknown:
            raise ValueError(
                f"objective channels {unknown} are not reward functions; reward functions: {list(channels)}"
            )
        for c in parsed.channels:  # a channel is told by name: one shared by several functions is ambiguous
            same = [i for i, name in enumerate(channels) if name == c.name]
            if len(same) > 1:
                raise ValueError(
                    f"reward functions {' and '.join(map(str, same))} are both named {c.name!r}, which the channel "
                    f"objective {str(parsed)!r} names: give each a name of its own (TRL names a function by its "
                    "__name__, a functools.partial by the function it wraps: a def per function, or a callable "
                    "object with a __name__ attribute)"
                )
    return parsed


def check_weights(
    objective: Objective | ChannelObjective,
    weights: Sequence[float] | None,
    names: Sequence[str],
    option: str = "weights",
) -> None:
    """Refuse weights of the plain objective's sum that are not one per reward function, or that a channel
    objective, which weighs each reward function in its spec, would ignore (any weight but 1).

    :param option: the weights' name in the error (the trainer's ``reward_weights``).
    :raises ValueError: as above.
    """
    if weights is None:
        return
    weights = [float(w) for w in weights]
    if len(weights) != len(names):
        raise ValueError(f"{option}: {len(weights)} weights for {len(names)} reward functions {list(names)}")
    if isinstance(objective, ChannelObjective) and any(w != 1.0 for w in weights):
        raise ValueError(
            f"{option}={weights} weigh the plain objective's sum of the reward functions; a channel objective weighs "
            f"each reward function in its spec ({str(objective)!r}): put the weights there and leave {option} unset"
        )


def check_scale(objective: Objective | ChannelObjective, scale: str, names: Sequence[str]) -> None:
    """Refuse a ``scale`` that is not one of :data:`SCALES`, or ``"channel"`` for a plain objective of several reward
    functions (it ranks their weighted sum: there is no reward function's advantage to scale on its own).

    :raises ValueError: as above.
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if scale == "channel" and not isinstance(objective, ChannelObjective) and len(names) > 1:
        raise ValueError(
            f"scale='channel' divides each reward function's advantages by their group std, but the plain objective "
            f"{str(objective)!r} ranks the weighted sum of {list(names)}: give a channel objective "
            f"('{names[0]}=top2@4 + {names[1]}=bot2@4') to rank each reward function on its own, or scale='group'"
        )


def group_advantages(
    objective: Objective | ChannelObjective,
    rewards: Any,
    group_size: int,
    names: Sequence[str],
    weights: Sequence[float] | None = None,
    scale: str = "group",
) -> np.ndarray:
    """Per-completion OrderGrad advantages of a rollout.

    :param objective: the bound objective (:func:`parse_group_objective`).
    :param rewards: ``[B, F]`` rewards of the ``F`` reward functions, groups of ``group_size`` contiguous (NumPy, a
        torch tensor of any float dtype and device, or a nested list; computed in float64). NaN is a
        function that did not score a completion (it returned ``None``), as in TRL 1.16: it counts as 0 in the plain
        objective's sum when another function scored the completion; a channel objective ranks each channel on the
        completions its function scored, with advantage 0 from that channel for the others (TRL's
        ``normalize_then_sum``); a completion no function scored is unscorable, left out of its group's ranking and
        std, with advantage 0. A group with ``k`` or fewer scored completions (an evaluation
        group of ``num_generations_eval <= k`` among them) has no leave-one-out advantage: all 0.
    :param names: the reward functions' names (channels).
    :param weights: the reward functions' weights in the plain objective's sum (default 1 each; a channel
        objective takes its weights from its spec and refuses any other than 1).
    :param scale: ``"group"``, ``"batch"``, ``"channel"`` (a channel objective, or a single reward function) or
        ``"none"``.
    :return: ``[B]`` float64 advantages.
    :raises ValueError: a reward of ``+-inf`` (naming the reward function and the completion), a bad shape, group
        size, number of weights or scale (:func:`check_scale`).
    :raises TypeError: an objective that is no bound :class:`Objective` or :class:`ChannelObjective`.
    """
    if not isinstance(objective, (Objective, ChannelObjective)) or not objective.is_bound:
        raise TypeError(
            f"objective must be an Objective or ChannelObjective bound to its k, got {objective!r}: "
            "parse it once with parse_group_objective(spec, group_size, names)"
        )
    group_size = check_group_size(group_size)
    check_scale(objective, scale, names)
    check_weights(objective, weights, names)
    if array_api_compat.is_torch_array(rewards):  # any dtype (bfloat16 too), device or autograd state
        rewards = rewards.detach().cpu().double()
    rewards = np.asarray(rewards, dtype=np.float64)
    if rewards.ndim != 2 or rewards.shape[1] != len(names) or rewards.shape[0] % group_size:
        raise ValueError(
            f"rewards must be [B, {len(names)}] with B a multiple of G = {group_size}, got shape {rewards.shape}"
        )
    infinite = np.argwhere(np.isinf(rewards))
    if infinite.size:  # ranked, an infinite reward turns its whole group's weights into inf - inf = NaN
        row, column = infinite[0]
        raise ValueError(
            f"reward function {names[column]!r} returned {rewards[row, column]} for completion {row} of the batch: "
            "OrderGrad ranks finite rewards (return None for a completion it cannot score)"
        )
    k = max(objective_ks(objective))
    if group_size <= k:  # evaluation groups may be smaller than training's
        return np.zeros(rewards.shape[0])
    scored = scored_completions(rewards, group_size)
    unscored_by_some = np.isnan(rewards).any(axis=1).reshape(scored.shape) & scored
    grouped = np.nan_to_num(rewards, nan=0.0).reshape(-1, group_size, len(names))
    if isinstance(objective, ChannelObjective) and unscored_by_some.any():
        out = _channels_apart(objective, rewards, group_size, names, scale, scored)
    elif scored.all():
        out = _ranked(objective, grouped, names, weights, scale)
    else:  # unscorable completions: each group ranked on its scored ones
        out = np.zeros(scored.shape)
        for group, keep in enumerate(scored):
            if keep.sum() > k:
                out[group, keep] = _ranked(objective, grouped[group, keep][None], names, weights, scale)[0]
    if scale == "batch":
        out = out / (std(out[scored]) + EPS)
    return np.asarray(out, dtype=np.float64).reshape(-1)


def _channels_apart(
    objective: ChannelObjective,
    rewards: np.ndarray,
    group_size: int,
    names: Sequence[str],
    scale: str,
    scored: np.ndarray,
) -> np.ndarray:
    """``[n_groups, G]`` advantages of a channel objective whose reward functions scored different completions of a
    group: each channel ranked (and, with ``scale="channel"``, scaled) on the completions its function scored, 0 on
    the others (TRL's ``normalize_then_sum`` of a ``None``), the weighted channels summed, then scaled by group as
    :func:`_ranked` does (``scored``: the completions some function scored)."""
    parts = [
        group_advantages(
            ChannelObjective((channel,)),
            rewards[:, [names.index(channel.name)]],
            group_size,
            [channel.name],
            scale="channel" if scale == "channel" else "none",
        ).reshape(scored.shape)
        for channel in objective.channels
    ]
    out = np.sum(parts, axis=0)
    if scale == "group":
        for group, keep in enumerate(scored):
            out[group, keep] = _scaled_by_group(out[group, keep])
    return out


def _scaled_by_group(values: np.ndarray) -> np.ndarray:
    """``values`` (``[..., n]``, a group of advantages on the last axis) divided by its group's std (TRL's)."""
    return values / (std(values, axis=-1) + EPS)


def _ranked(
    objective: Objective | ChannelObjective,
    grouped: np.ndarray,
    names: Sequence[str],
    weights: Sequence[float] | None,
    scale: str,
) -> np.ndarray:
    """``[n_groups, n]`` advantages of ``[n_groups, n, F]`` scored rewards, each group ranked (and, with
    ``scale`` ``"group"`` or ``"channel"``, scaled) on its own."""
    if isinstance(objective, ChannelObjective):
        values = {name: grouped[..., i] for i, name in enumerate(names)}
        out = objective.advantage_weights(values, normalize=_scaled_by_group if scale == "channel" else None)
    else:
        total = grouped @ np.asarray(weights if weights is not None else np.ones(len(names)), dtype=np.float64)
        out = objective.k * lstat_advantage(total, objective)
    if scale in ("group", "channel") and not (scale == "channel" and isinstance(objective, ChannelObjective)):
        out = _scaled_by_group(out)
    return out
