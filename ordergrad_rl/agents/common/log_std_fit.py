"""The Gaussian log-std fitted outside PPO's clipped surrogate (OrderGradPPO's ``log_std_step``).

A diagonal Gaussian policy learns its spread from the steps whose action lies far from the mean: the likelihood-ratio
gradient of ``log N(a; mu, sigma)`` with respect to ``log sigma`` is ``(a - mu)^2 / sigma^2 - 1`` per dimension, large
only where ``|a - mu|`` is. Those are the steps whose ratios ``pi / pi_old`` leave PPO's clip range first when the
mean moves, and a clipped step gives no gradient at all, so the clipped surrogate can mute the std's update: on the
portfolio the exact gradient w.r.t. ``log sigma`` at the trained policy was -0.0107 +- 0.0048 per update and the change
PPO's update made -0.0003 +- 0.0008 (issue 9). At the usage line's settings on MountainCarContinuous-v0 and the point
navigation it is not muted (every update moves the log-std the gradient's way there, or Adam's step count bounds the
move): docs/benchmarks.md, "The log-std fitted outside the clip".

:func:`fit_log_std` fits the log-std on its own after the clipped pass: ``n_epochs`` passes over the rollout's
minibatches of the unclipped importance-weighted surrogate ``-A_t exp(l_sigma - l_old)``, where ``l_sigma = log N(a_t;
mu_old(s_t), sigma)`` keeps the rollout's means ``mu_old`` (computed before the update, detached) so that the std is
fitted to the noise the rollout was drawn with, not to the mean's new position, and after each step every dimension is
projected back within ``+-delta`` of its value at the update's start. The projection is the trust region the clip
gave the std nominally: a ratio of a single dimension's density moves by at most a factor ``exp(delta)`` at ``a = mu``,
so ``delta = log(1 + clip_range)`` is the move the clip allows at the mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.distributions import DiagGaussianDistribution, StateDependentNoiseDistribution
from stable_baselines3.common.policies import ActorCriticPolicy

from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer
from ordergrad_rl.agents.common.policies import forward_in_chunks


def check_log_std_policy(log_std_step: float | None, policy: Any) -> None:
    """``ValueError`` where ``log_std_step`` is on and the built ``policy`` has no state-independent diagonal Gaussian
    to fit: actions other than ``Box``, gSDE (whose log-std scales a noise matrix of the features), a custom
    distribution, or a log-std kept fixed (``learn_log_std=False``). Run where the policy is built, at construction and
    at SB3's load alike.
    """
    if log_std_step is None:
        return
    distribution = getattr(policy, "action_dist", None)
    if isinstance(distribution, StateDependentNoiseDistribution):
        raise ValueError(
            "log_std_step needs SB3's diagonal Gaussian (DiagGaussianDistribution); with use_sde=True the log-std "
            "scales gSDE's noise matrix: pass use_sde=False or log_std_step=None"
        )
    if not isinstance(policy.action_space, spaces.Box):
        raise ValueError(
            f"log_std_step fits a Gaussian policy's log-std, on Box actions only; this env's actions are "
            f"{type(policy.action_space).__name__}: pass log_std_step=None"
        )
    if not isinstance(distribution, DiagGaussianDistribution) or not isinstance(
        getattr(policy, "log_std", None), th.nn.Parameter
    ):
        raise ValueError(
            f"log_std_step needs a policy with SB3's DiagGaussianDistribution and its log_std parameter; this policy's "
            f"distribution is {type(distribution).__name__}: pass log_std_step=None"
        )
    if not policy.log_std.requires_grad:
        # learn_log_std=False: the noise stays at log_std_init by the user's choice, and the fit would train it.
        raise ValueError(
            "log_std_step fits the log-std, which policy_kwargs['learn_log_std']=False keeps fixed at log_std_init: "
            "pass one of them, not both"
        )


def rollout_means(policy: ActorCriticPolicy, buffer: EpisodicRolloutBuffer) -> th.Tensor:
    """The Gaussian's means at every stored step of the rollout, without gradients.

    :return: ``[T, action_dim]``.
    """
    return forward_in_chunks(policy, buffer.observations, lambda obs: policy.get_distribution(obs).mode())


def fit_log_std(
    policy: ActorCriticPolicy,
    buffer: EpisodicRolloutBuffer,
    means: th.Tensor,
    start: th.Tensor,
    delta: float,
    n_epochs: int,
    batch_size: int,
    ent_coef: float,
    max_grad_norm: float,
) -> None:
    """Fit ``policy.log_std`` on the rollout (module docstring) with the policy's optimizer, which updates no other
    parameter here (their gradients are ``None``). Leaves ``log_std.grad`` ``None``, so that the next clipped pass,
    which runs with the log-std frozen, does not step it with a stale gradient.

    :param means: ``[T, action_dim]`` the rollout's means (:func:`rollout_means`, before the update).
    :param start: ``[action_dim]`` the log-std at the update's start (also the rollout's: the log-probabilities the
        ratios start from).
    :param delta: the bound on each dimension's change from ``start``.
    :param n_epochs: passes over the rollout.
    :param batch_size: steps per minibatch (the buffer's shuffled minibatches,
        :meth:`~ordergrad_rl.agents.common.buffers.EpisodicRolloutBuffer.minibatch_indices`).
    :param ent_coef: the entropy bonus of the update in force (the Gaussian's entropy is ``sum log_std`` plus a
        constant, so the bonus acts on the std here, as in SB3's update).
    :param max_grad_norm: clipping of the log-std's gradient norm, as SB3 clips the policy's.
    """
    log_std = policy.log_std
    distribution: DiagGaussianDistribution = policy.action_dist  # type: ignore[assignment]
    device = log_std.device
    actions = th.as_tensor(buffer.actions, device=device).reshape(means.shape)
    advantages = th.as_tensor(buffer.advantages, device=device)
    with th.no_grad():
        old_log_prob = distribution.proba_distribution(means, start).log_prob(actions)
    low, high = start - delta, start + delta
    optimizer = policy.optimizer
    for _ in range(n_epochs):
        for rows in buffer.minibatch_indices(batch_size):
            index = th.as_tensor(rows, device=device)
            fitted = distribution.proba_distribution(means[index], log_std)
            ratio = th.exp(fitted.log_prob(actions[index]) - old_log_prob[index])
            loss = -(advantages[index] * ratio).mean() - ent_coef * fitted.entropy().mean()  # type: ignore[union-attr]
            optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_([log_std], max_grad_norm)
            optimizer.step()
            with th.no_grad():
                log_std.copy_(th.minimum(th.maximum(log_std, low), high))
    log_std.grad = None


def log_std_bound_share(log_std: th.Tensor, start: th.Tensor, delta: float) -> float:
    """The share of the log-std's dimensions at the bound ``start +- delta`` (within float32 rounding)."""
    change = (log_std.detach() - start).abs().cpu().numpy()
    return float(np.mean(change >= delta * (1.0 - 1e-5)))
