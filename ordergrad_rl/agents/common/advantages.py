"""The advantage step of the episodic agents: from the episodes of one rollout to per-step advantages.

One rollout = ``n_episodes`` complete i.i.d. episodes (see :mod:`ordergrad_rl.agents.common.buffers` for which
episodes are kept). Episode ``i``'s return ``G_i`` becomes the weight ``w_i = k * a_i`` with ``a_i`` the core's
:func:`~ordergrad_rl.core.lstat_advantage` (paper eq. og-batch-estimator), given to every step of the episode; the
algorithms' losses then give the unbiased likelihood-ratio gradient ``(k/N) sum_i a_i grad log p(tau_i)``.

:func:`compute_episodic_advantages` is the whole step (the counterpart of SB3's
``RolloutBuffer.compute_returns_and_advantage``), built from :func:`episode_weights` (one weight per episode:
OrderGrad, multi-channel or GCVaR, grouped or pooled, normalized or not) and :func:`reward_to_go_advantages` (the
mean objective, per step). Pure functions of arrays: no algorithm, buffer or env.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from scipy.signal import lfilter

from ordergrad_rl.agents.common.groups import group_normalize
from ordergrad_rl.core import ChannelObjective, Objective, lstat_advantage
from ordergrad_rl.core.channels import REWARD
from ordergrad_rl.core.gcvar import gcvar_weights
from ordergrad_rl.core.weighted import weighted_lstat_advantage

#: What ``normalize_advantage`` may be in episodic mode.
#: ``normalize_advantage="running"``: the episodic agents divide by a running scale across rollouts (not here).
RUNNING = "running"
NORMALIZE_MODES: tuple[bool | str, ...] = (True, False, "group", "channel", RUNNING)


def channel_values(
    episode_returns: np.ndarray,
    channels: Mapping[str, np.ndarray] | None,
    info_channels: tuple[str, ...] = (),
    group_size: int | None = None,
) -> dict[str, np.ndarray]:
    """Every channel's episode values, ``{"reward": returns, **channels}``, shaped ``[n_groups, G]`` with groups.

    :param episode_returns: ``[N]`` episode returns.
    :param channels: ``{name: [N]}`` episode sums of the objective's info channels.
    :param info_channels: the info channels the objective needs.
    :param group_size: ``G``; ``None``: one pooled batch, each value ``[N]``.
    :raises ValueError: a needed channel is missing, a channel has another number of episodes than the returns, or
        the number of episodes is not a multiple of ``group_size``.
    """
    values = {REWARD: np.asarray(episode_returns, dtype=np.float64), **(channels or {})}
    missing = [name for name in info_channels if name not in values]
    if missing:
        raise ValueError(f"episode values of the channels {missing} are needed; got {sorted(values)}")
    sizes = {name: int(np.size(value)) for name, value in values.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"every channel needs one value per episode, got these numbers of values: {sizes}")
    if group_size is not None and sizes[REWARD] % group_size:
        raise ValueError(f"{sizes[REWARD]} episodes do not make groups of group_size={group_size}")
    shape = (-1,) if group_size is None else (-1, group_size)
    return {name: np.asarray(value, dtype=np.float64).reshape(shape) for name, value in values.items()}


#: An objective, or one per group (each group's own, the agents' ``untie_tail``).
Objectives = Objective | ChannelObjective | Sequence[Objective | ChannelObjective]
#: GCVaR's level (``None``: OrderGrad's weights), or one per group.
GCVaRLevels = float | None | Sequence[float | None]


def episode_weights(
    objective: Objectives,
    values: Mapping[str, np.ndarray],
    normalize: bool | str = True,
    gcvar_alpha: GCVaRLevels = None,
    importance_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Per-episode policy-gradient weights ``w_i = k * a_i``, normalized as ``normalize`` says.

    Groups are the leading axis of ``values`` (:func:`channel_values`): each episode is compared with its own group
    only, in one core call. A multi-channel objective gives ``w_i = sum_c w_c k_c a_ic``
    (:class:`~ordergrad_rl.core.channels.ChannelObjective`). ``normalize``: ``True`` divides by the std of all
    weights, ``"group"`` each group's weights by that group's std (``ddof=0``; with ``objective="mean"``: GRPO's
    ``(R_i - group mean) / group std``, which TRL's ``GRPOTrainer`` computes with the ``ddof=1`` std + ``1e-4``),
    ``"channel"`` each channel's ``k_c a_c`` by its own group std before the channel weights are applied (the same
    as ``"group"`` for a one-channel objective), ``False`` keeps the unbiased estimator's weights. With
    ``gcvar_alpha``: GCVaR's ``(R_i - VaR_hat) 1{R_i <= VaR_hat} / a``
    (:func:`~ordergrad_rl.core.gcvar.gcvar_weights`, per group) instead of OrderGrad's. With ``importance_weights``
    (episodes drawn by a noise sampler; one pooled batch, one channel, no GCVaR): ``w_i = k rho_i a_i`` of the
    weighted batch (:func:`~ordergrad_rl.core.weighted.weighted_lstat_advantage`).

    With groups, ``objective`` and ``gcvar_alpha`` may each be a sequence of one per group: each group is then
    ranked by its own (the groups that share one in one core call), and ``normalize=True`` divides by the std of
    all the groups' weights together.

    :param objective: the bound objective, or one per group.
    :param values: ``{channel: [N] or [n_groups, G]}`` episode values, ``"reward"`` included.
    :param normalize: ``True``, ``False``, ``"group"`` or ``"channel"`` (``"running"``: as ``False``, the agents
        scale across rollouts).
    :param gcvar_alpha: GCVaR's level, or ``None`` for OrderGrad's weights; or one per group.
    :param importance_weights: ``[N]`` the episodes' likelihood ratios ``rho_i``, or ``None``.
    :return: ``[N]`` float64 weights.
    :raises ValueError: per-group objectives or levels without groups, with ``importance_weights``, or not one per
        group.
    """
    if isinstance(objective, Objective | ChannelObjective) and not isinstance(gcvar_alpha, Sequence):
        weights = _ranked_weights(objective, values, normalize, gcvar_alpha, importance_weights)
    else:
        weights = _weights_by_group(objective, values, normalize, gcvar_alpha, importance_weights)
    if normalize is True:
        # Scale only: the weights already sum to zero, and a rescaling keeps the targeted objective.
        weights = weights / (weights.std() + 1e-8)
    return weights.reshape(-1)


def _ranked_weights(
    objective: Objective | ChannelObjective,
    values: Mapping[str, np.ndarray],
    normalize: bool | str,
    gcvar_alpha: float | None,
    importance_weights: np.ndarray | None,
) -> np.ndarray:
    """:func:`episode_weights` of one objective, shaped as ``values``, before ``normalize=True``'s scaling."""
    # "channel" normalizes each channel inside the channel sum; with one channel that is "group".
    per_channel = normalize == "channel" and isinstance(objective, ChannelObjective)
    if isinstance(objective, ChannelObjective):
        weights = objective.advantage_weights(values, normalize=group_normalize if per_channel else None)
    elif gcvar_alpha is not None:
        weights = gcvar_weights(values[REWARD], gcvar_alpha)  # each row is one batch
    elif importance_weights is not None:
        rho = importance_weights
        weights = rho * objective.k * weighted_lstat_advantage(values[REWARD], rho, objective)
    else:
        weights = objective.k * lstat_advantage(values[REWARD], objective)
    if normalize in ("group", "channel") and not per_channel:
        weights = group_normalize(weights)
    return weights


def _weights_by_group(
    objective: Objectives,
    values: Mapping[str, np.ndarray],
    normalize: bool | str,
    gcvar_alpha: GCVaRLevels,
    importance_weights: np.ndarray | None,
) -> np.ndarray:
    """:func:`_ranked_weights` of one objective and level per group: one call per distinct pair, on its groups."""
    returns = values[REWARD]
    if returns.ndim != 2 or importance_weights is not None:
        raise ValueError("an objective per group needs groups (values shaped [n_groups, G]) and no importance weights")
    risks = group_risks(objective, gcvar_alpha, returns.shape[0])
    weights = np.empty_like(returns)
    for risk in dict.fromkeys(risks):  # each distinct (objective, level) once, in the groups' order
        rows = np.array([group_risk == risk for group_risk in risks])
        shared = {name: value[rows] for name, value in values.items()}
        weights[rows] = _ranked_weights(risk[0], shared, normalize, risk[1], None)
    return weights


def group_risks(
    objective: Objectives, gcvar_alpha: GCVaRLevels, n_groups: int
) -> list[tuple[Objective | ChannelObjective, float | None]]:
    """One ``(objective, gcvar_alpha)`` per group, from one objective (level) for all or one per group.

    :raises ValueError: a sequence that does not hold one per group.
    """
    objectives = [objective] * n_groups if isinstance(objective, Objective | ChannelObjective) else list(objective)
    levels = list(gcvar_alpha) if isinstance(gcvar_alpha, Sequence) else [gcvar_alpha] * n_groups
    if len(objectives) != n_groups or len(levels) != n_groups:
        raise ValueError(
            f"{len(objectives)} objectives and {len(levels)} GCVaR levels for {n_groups} groups: give one per group"
        )
    return list(zip(objectives, levels, strict=True))


def _info_channels(objective: Objectives) -> tuple[str, ...]:
    """The info channels that ``objective`` (or any of the groups' objectives) ranks."""
    objectives = [objective] if isinstance(objective, Objective | ChannelObjective) else objective
    names = (name for each in objectives if isinstance(each, ChannelObjective) for name in each.info_channels)
    return tuple(dict.fromkeys(names))


def discounted_rewards(rewards: np.ndarray, episode_step: np.ndarray, gamma: float = 1.0) -> np.ndarray:
    """``[T]`` float64 ``gamma^t r_t``: each stored step's term of its episode's return."""
    discounted = np.asarray(rewards, dtype=np.float64)
    return discounted * gamma ** np.asarray(episode_step) if gamma != 1.0 else discounted


def returns_before(rewards: np.ndarray, episode_index: np.ndarray) -> np.ndarray:
    """``G_<t = sum_{u<t} r_u``: each step's return collected before it, within its own episode.

    :param rewards: ``[T]`` rewards of the stored steps (:func:`discounted_rewards` where the return is discounted).
    :param episode_index: ``[T]`` episode of each step; each episode's steps in time order.
    :return: ``[T]`` float64, 0 at each episode's first step.
    """
    episode_index = np.asarray(episode_index)
    # Steps of an episode are stored in time order, so a stable sort by episode gives each episode's steps
    # contiguously, in order.
    order = np.argsort(episode_index, kind="stable")
    ordered = np.asarray(rewards, dtype=np.float64)[order]
    before = np.cumsum(ordered) - ordered  # everything stored before this step ...
    starts = np.flatnonzero(np.r_[True, np.diff(episode_index[order]) != 0])
    before -= np.repeat(before[starts], np.diff(np.r_[starts, ordered.size]))  # ... minus the earlier episodes
    result = np.empty_like(before)
    result[order] = before
    return result


def episode_order(episode_index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(order, last)``: the permutation that puts each episode's steps contiguously, in time order (a stable sort by
    episode: steps of an episode are stored in time order), and ``[T]`` bools marking each episode's last step in
    that order.

    :param episode_index: ``[T]`` episode of each step.
    """
    episode_index = np.asarray(episode_index)
    order = np.argsort(episode_index, kind="stable")
    ordered = episode_index[order]
    return order, np.r_[ordered[1:] != ordered[:-1], True]


def lambda_advantages(
    weights: np.ndarray, baseline: np.ndarray, episode_index: np.ndarray, lam: float = 1.0
) -> np.ndarray:
    """Per-step advantages ``A_t = G^lambda_t - b_t`` of an episode weight paid at the episode's end, over a
    per-step baseline ``b`` (GAE, Schulman et al. 2016, with the weight as the only reward, undiscounted).

    The episode's weight ``w`` is its last step's reward, 0 the others', so the TD errors are
    ``delta_t = b_{t+1} - b_t`` and ``delta_T = w - b_T`` at the last step ``T``, and
    ``A_t = sum_{u=t..T} lambda^(u-t) delta_u``. ``lambda = 1`` telescopes to ``w - b_t``: the unbiased estimator
    (any baseline of what is known before ``a_t``). ``lambda < 1`` trusts the baseline's later predictions in place
    of the episode's own outcome: lower variance, biased by the baseline's error (as PPO's GAE is by its critic's).

    :param weights: ``[T]`` the weight of each step's episode.
    :param baseline: ``[T]`` each step's baseline.
    :param episode_index: ``[T]`` episode of each step; each episode's steps in time order.
    :param lam: ``lambda`` in ``[0, 1]``.
    :return: ``[T]`` float64.
    """
    weights, baseline = np.asarray(weights, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if lam == 1.0:
        return weights - baseline
    order, last = episode_order(episode_index)
    w, b = weights[order], baseline[order]
    ends = np.flatnonzero(last)
    to_end = np.repeat(ends, np.diff(np.r_[-1, ends])) - np.arange(w.size)  # 0 at each episode's last step
    # G^lambda_T = w, G^lambda_t = (1 - lambda) b_{t+1} + lambda G^lambda_{t+1}: one vector step per distance from
    # the end, all episodes at once (as many steps as the longest episode, not as the rollout).
    by_distance = np.argsort(to_end, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(to_end))]
    target = np.empty_like(w)
    target[last] = w[last]
    for distance in range(1, len(bounds) - 1):
        steps = by_distance[bounds[distance] : bounds[distance + 1]]
        target[steps] = (1.0 - lam) * b[steps + 1] + lam * target[steps + 1]
    result = np.empty_like(target)
    result[order] = target - b
    return result


def gae_advantages(
    rewards: np.ndarray,
    values: np.ndarray,
    episode_index: np.ndarray,
    bootstrap: np.ndarray,
    gamma: float,
    lam: float,
) -> np.ndarray:
    """GAE (Schulman et al. 2016) of per-step rewards over a critic's values, as SB3's ``RolloutBuffer`` computes it,
    for a rollout of whole episodes: ``delta_t = r_t + gamma V_{t+1} - V_t``, where ``V`` after an episode's last step
    is its ``bootstrap`` value, and ``A_t = sum_{u>=t} (gamma lambda)^(u-t) delta_u`` within the episode.

    :param rewards: ``[T]`` rewards of the stored steps.
    :param values: ``[T]`` the critic's value of each step's state.
    :param episode_index: ``[T]`` episode of each step (``0..E-1``); each episode's steps in time order.
    :param bootstrap: ``[E]`` the value after each episode's last step: 0 where it terminated, an estimate of the
        next state's value where a time limit cut it.
    :param gamma: the critic's discount.
    :param lam: GAE's ``lambda`` in ``[0, 1]``.
    :return: ``[T]`` float64 advantages (the critic's targets are ``advantages + values``).
    """
    rewards, values = np.asarray(rewards, dtype=np.float64), np.asarray(values, dtype=np.float64)
    order, last = episode_order(episode_index)
    following = np.r_[values[order][1:], 0.0]
    following[last] = np.asarray(bootstrap, dtype=np.float64)[np.asarray(episode_index)[order][last]]
    delta = rewards[order] + gamma * following - values[order]
    advantages = np.empty_like(delta)
    starts = np.flatnonzero(np.r_[True, last[:-1]])
    for start, stop in zip(starts, np.r_[starts[1:], delta.size], strict=True):
        # A_t = delta_t + gamma lambda A_{t+1}: a first-order filter run backwards over the episode.
        advantages[start:stop] = lfilter([1.0], [1.0, -gamma * lam], delta[start:stop][::-1])[::-1]
    result = np.empty_like(advantages)
    result[order] = advantages
    return result


def reward_to_go_advantages(
    rewards: np.ndarray, episode_index: np.ndarray, episode_step: np.ndarray, n_episodes: int, gamma: float = 1.0
) -> np.ndarray:
    """Per-step advantages of the mean objective from reward-to-go and a leave-one-out baseline per time step.

    The mean return is a sum over steps, and the action at step ``t`` cannot change the rewards before it, so the
    likelihood-ratio gradient of ``E[R]`` may credit step ``t`` of episode ``i`` with its reward-to-go
    ``G_it = sum_{u >= t} gamma^u r_iu`` only (Williams' REINFORCE with causality), minus a baseline that does not
    depend on episode ``i``: the mean reward-to-go of the other ``N - 1`` episodes at the same step ``t`` (an
    episode that ended before ``t`` has ``G = 0`` there). Unbiased, like the trajectory-level leave-one-out
    advantage ``R_i - mean_{j != i} R_j``, which is the value at ``t = 0``; lower variance on long episodes.

    ``A_it = G_it - (S_t - G_it) / (N - 1) = (N G_it - S_t) / (N - 1)`` with ``S_t = sum_j G_jt``.

    :param rewards: ``[T]`` rewards of the stored steps.
    :param episode_index: ``[T]`` episode of each step, ``0..N-1``; each episode's steps in time order.
    :param episode_step: ``[T]`` step ``t`` within its episode.
    :param n_episodes: ``N`` (>= 2).
    :param gamma: discount, as in the episode return ``sum_t gamma^t r_t``.
    :return: ``[T]`` float64 advantages.
    """
    discounted = discounted_rewards(rewards, episode_step, gamma)
    # Reward-to-go: the episode's return minus what it collected before t.
    totals = np.bincount(episode_index, weights=discounted, minlength=n_episodes)
    to_go = totals[episode_index] - returns_before(discounted, episode_index)
    step_totals = np.bincount(episode_step, weights=to_go)
    return (n_episodes * to_go - step_totals[episode_step]) / (n_episodes - 1)


def compute_episodic_advantages(
    objective: Objectives,
    episode_returns: np.ndarray,
    episode_index: np.ndarray,
    episode_channels: Mapping[str, np.ndarray] | None = None,
    group_size: int | None = None,
    normalize: bool | str = True,
    gcvar_alpha: GCVaRLevels = None,
    reward_to_go: bool = False,
    rewards: np.ndarray | None = None,
    episode_step: np.ndarray | None = None,
    gamma: float = 1.0,
    importance_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Per-step advantages of one episodic rollout: :func:`episode_weights` given to every step of each episode, or
    with ``reward_to_go`` (the pooled mean) :func:`reward_to_go_advantages`, divided by their standard deviation over
    the steps if ``normalize``.

    :param objective: the bound objective, or with groups one per group (see :func:`episode_weights`).
    :param episode_returns: ``[N]`` episode returns.
    :param episode_index: ``[T]`` episode of each stored step.
    :param episode_channels: ``{name: [N]}`` episode sums of the objective's info channels.
    :param group_size: ``G`` (episode ``j`` is in group ``j // G``), ``None`` for one pooled batch.
    :param normalize: ``normalize_advantage`` (see :func:`episode_weights`).
    :param gcvar_alpha: GCVaR's level, or ``None``; or with groups one per group.
    :param reward_to_go: credit each step with its reward-to-go (needs ``rewards``, ``episode_step``).
    :param rewards: ``[T]`` rewards of the stored steps.
    :param episode_step: ``[T]`` step of each stored step within its episode.
    :param gamma: discount of the returns.
    :param importance_weights: ``[N]`` likelihood ratios of episodes drawn by a noise sampler (see
        :func:`episode_weights`).
    :return: ``[T]`` float32 advantages.
    """
    episode_index = np.asarray(episode_index)
    if not reward_to_go:
        values = channel_values(episode_returns, episode_channels, _info_channels(objective), group_size)
        weights = episode_weights(objective, values, normalize, gcvar_alpha, importance_weights)
        return np.asarray(weights, dtype=np.float32)[episode_index]
    if rewards is None or episode_step is None:
        raise ValueError("reward_to_go needs the steps' rewards and episode_step")
    advantages = reward_to_go_advantages(rewards, episode_index, episode_step, len(episode_returns), gamma)
    if normalize:
        advantages = advantages / (advantages.std() + 1e-8)
    return advantages.astype(np.float32)
