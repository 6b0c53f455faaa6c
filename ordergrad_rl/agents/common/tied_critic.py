"""A discounted critic for the rollouts that rank nothing: ``critic_when_tied`` of OrderGradPPO and
OrderGradMaskablePPO.

A rollout whose episodes all return the best return seen ties every rank, so every weight of an L-statistic is
zero and the episodic update has no gradient there. A policy that reaches a task's best return (CartPole-v1's
500-step limit) then stops moving at whatever width it had, and a later rollout with a rare failure flips many of
its actions (docs/benchmarks.md, "CartPole-v1 at 100k: rollouts tied at the limit"). SB3's PPO keeps sharpening
there on its critic's per-step advantages, which are not zero: the states from which earlier rollouts failed have
lower values. With ``critic_when_tied`` the episodic PPO does the same: the policy's value head is fitted in every
rollout's update, in its minibatches, to the GAE returns of the per-step rewards (:data:`TIED_CRITIC_GAMMA`, the
model's ``gae_lambda``), and a rollout tied at the best return seen trains on the critic's GAE advantages,
standardized, in place of its zero weights. Every other rollout trains exactly as without it: the fit moves the
critic's own parameters only (the value head, its hidden layers and, where it is not shared, its features
extractor), and its gradients are kept out of the actor's clipping (:func:`critic_fitted_in_update`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, ClassVar

import numpy as np
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy

from ordergrad_rl.agents.common.advantages import episode_order, gae_advantages
from ordergrad_rl.agents.common.arguments import check_critic_when_tied, default_critic_when_tied
from ordergrad_rl.agents.common.episodic import train_on_episode_weights
from ordergrad_rl.agents.common.per_step_baseline import PerStepBaselineMixin
from ordergrad_rl.agents.common.policies import predict_values
from ordergrad_rl.agents.common.utils import lent_attributes

#: The critic's discount: SB3 PPO's default. The episode return's own ``gamma`` (1 by default) would make the value of
#: a state on a time-limited task depend on the time left, which the observation does not show.
TIED_CRITIC_GAMMA = 0.99
#: The critic's GAE lambda and value-loss coefficient in OrderGradMaskablePPO, which takes neither (they are
#: OrderGradPPO's defaults for its ``gae_lambda`` and ``vf_coef``, SB3's).
TIED_CRITIC_GAE_LAMBDA = 0.95
TIED_CRITIC_VF_COEF = 0.5


def critic_parameters(policy: ActorCriticPolicy) -> list[th.nn.Parameter]:
    """The parameters only the critic uses: the value head, the value branch of SB3's ``MlpExtractor``
    (``mlp_extractor.value_net``) and, where the features extractor is not shared, the critic's own
    (``vf_features_extractor``). A shared extractor stays the actor's (the fit reads its features without
    gradients)."""
    modules = [policy.value_net, getattr(policy.mlp_extractor, "value_net", None)]
    if not policy.share_features_extractor:
        modules.append(policy.vf_features_extractor)
    return [parameter for module in modules if module is not None for parameter in module.parameters()]


def evaluate_actions_with_critic(
    policy: ActorCriticPolicy,
    obs: th.Tensor | dict[str, th.Tensor],
    actions: th.Tensor,
    action_masks: th.Tensor | None = None,
) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
    """``evaluate_actions`` of the episodic update with the critic fitted in the same minibatches: the actor's terms
    as :func:`~ordergrad_rl.agents.common.policies.evaluate_actions_without_value` gives them (SB3's
    ``get_distribution``), and the critic's values ``V(s)``, with gradients to :func:`critic_parameters` only.

    A shared features extractor runs once, as in SB3's ``evaluate_actions``: the actor's terms backpropagate into it,
    and the critic reads its features detached, the values (and every gradient) bit for bit those of a second pass
    without gradients, which cost a second forward of the extractor (a CNN's) per minibatch (an extractor with
    dropout or batch norm now draws its masks, or updates its statistics, once per minibatch, as in SB3's update).
    Separate extractors (``share_features_extractor=False``, which failed here at the first update until 2026-12-07)
    each read the observations once: the actor's, and the critic's own (``vf_features_extractor``, one of
    :func:`critic_parameters`).

    :param obs: observations ``[batch, *obs_shape]`` (or a dict of such), as tensors.
    :param actions: actions ``[batch, *action_shape]``.
    :param action_masks: ``[batch, mask width]`` of sb3-contrib's MaskablePPO update (``None``: no masking), applied
        as its maskable policies' ``get_distribution`` applies them: a masked action keeps probability 0 in the update.
    :return: values ``[batch, 1]``, log-likelihoods ``[batch]``, entropies ``[batch]`` (or None).
    """
    if policy.share_features_extractor:
        features = policy.extract_features(obs, policy.features_extractor)
        assert isinstance(features, th.Tensor)  # the shared extractor's (SB3 types the pair of separate ones too)
        distribution = policy._get_action_dist_from_latent(policy.mlp_extractor.forward_actor(features))
        if action_masks is not None:  # sb3-contrib's MaskableDistribution (SB3's policies take no masks)
            distribution.apply_masking(action_masks)  # type: ignore[attr-defined]
        values = policy.value_net(policy.mlp_extractor.forward_critic(features.detach()))
    else:
        masks = {} if action_masks is None else {"action_masks": action_masks}
        distribution = policy.get_distribution(obs, **masks)
        values = policy.predict_values(obs)  # SB3's: the critic's own extractor, value branch and head
    return values, distribution.log_prob(actions), distribution.entropy()


@contextmanager
def critic_fitted_in_update(
    policy: ActorCriticPolicy, buffer: Any, values: np.ndarray, targets: np.ndarray, held_as_zeros: bool = False
) -> Iterator[None]:
    """Within the block, SB3's PPO ``train`` fits the critic to ``targets`` (``[T]``) in its own minibatches, on
    top of the episodic update, and leaves that update as it was.

    Its value loss is the critic's (:func:`evaluate_actions_with_critic` against ``targets``, lent to the buffer's
    ``returns`` with ``values``, ``[T]``, the values the critic predicted for the rollout before its update, as its
    ``values`` for SB3's explained variance and ``clip_range_vf``). The critic's gradients are taken out of the
    parameters as the backward pass accumulates them and put back just before the optimizer's step: SB3's
    ``clip_grad_norm_`` between the two sees the actor's alone, so the actor's step is bit for bit the one without a
    critic, and the critic's is unclipped (as a fit of its own would be). One backward pass and one optimizer step
    per minibatch serve both, which spares a second pass's own overhead (on CartPole-v1 the update with the critic
    takes 1.27 s more per 20k steps than without it, against 1.73 s with a pass of its own).

    :param held_as_zeros: the critic's parameters hold zero gradients while theirs are out, not ``None``: where the
        update without the critic runs the value branch at ``vf_coef=0`` (OrderGradMaskablePPO: sb3-contrib's
        ``evaluate_actions``), its ``clip_grad_norm_`` takes the norm over their zero gradients too, and a norm over
        another list of tensors can differ in the last bit (the order of the sum), which the actor's step then
        carries (``None`` where the value branch does not run without the critic: OrderGradPPO's
        ``value_head_unused``).
    """
    held: dict[th.nn.Parameter, th.Tensor | None] = {}

    def hold(parameter: th.Tensor) -> None:
        held[parameter] = parameter.grad  # type: ignore[index]  # registered on Parameters only
        parameter.grad = th.zeros_like(parameter) if held_as_zeros else None

    def put_back(*_: Any) -> None:
        for parameter, gradient in held.items():
            parameter.grad = gradient  # type: ignore[assignment]  # the gradient the backward pass accumulated
        held.clear()

    handles = [parameter.register_post_accumulate_grad_hook(hold) for parameter in critic_parameters(policy)]
    handles.append(policy.optimizer.register_step_pre_hook(put_back))
    policy.evaluate_actions = functools.partial(evaluate_actions_with_critic, policy)  # type: ignore[method-assign]
    try:
        with lent_attributes(buffer, values=values, returns=targets):
            yield
    finally:
        del policy.evaluate_actions
        for handle in handles:
            handle.remove()


class TiedCriticMixin(PerStepBaselineMixin):
    """``critic_when_tied`` of an episodic PPO (module docstring; OrderGradPPO and OrderGradMaskablePPO mix it in front
    of their SB3 class): :meth:`_tied_critic_advantages` runs at the end of the rollout's ``_compute_advantages``, and
    :meth:`_train_on_weights` runs the update in the block of :meth:`_critic_fitted_in_update`. The class sets
    ``critic_when_tied`` in its constructor (:meth:`_init_critic_when_tied`)."""

    # A save from before critic_when_tied trained tied rollouts on zero advantages.
    saved_before = {**PerStepBaselineMixin.saved_before, "critic_when_tied": False}

    #: Whether the class's update without the critic runs the value branch at ``vf_coef=0`` (zero gradients), so
    #: that the critic's are held out as zeros (:func:`critic_fitted_in_update`): OrderGradMaskablePPO's does.
    critic_held_as_zeros: ClassVar[bool] = False

    critic_when_tied: bool
    gae_lambda: float
    policy: ActorCriticPolicy
    rollout_buffer: Any

    def _init_critic_when_tied(self, critic_when_tied: bool | None, policy_kwargs: dict[str, Any] | None) -> None:
        """Set ``critic_when_tied`` after ``value_baseline`` (``None``: :func:`default_critic_when_tied`).

        :raises ValueError: as :func:`check_critic_when_tied`.
        """
        check_critic_when_tied(critic_when_tied, self.value_baseline, policy_kwargs)
        if critic_when_tied is None:
            critic_when_tied = default_critic_when_tied(self.objective, self.value_baseline, policy_kwargs)
        self.critic_when_tied = critic_when_tied

    def _excluded_save_params(self) -> list[str]:
        # Set at every rollout (the critic's targets are the rollout's size).
        tied_critic = ["_critic_targets", "_critic_values", "_rollout_critic_trained"]
        return [*super()._excluded_save_params(), *tied_critic]

    def _default_at_load(self, replaced: Mapping[str, Any]) -> None:
        """... and ``critic_when_tied`` against ``value_baseline``: a saved critic that the new ``value_baseline=True``
        takes over is the default for it (off)."""
        super()._default_at_load(replaced)
        if "value_baseline" in replaced and "critic_when_tied" not in replaced and self.value_baseline is True:
            self.critic_when_tied = False

    def _check_loaded_arguments(self, names: Collection[str]) -> None:
        super()._check_loaded_arguments(names)
        if {"critic_when_tied", "value_baseline", "policy_kwargs"} & set(names):
            check_critic_when_tied(self.critic_when_tied, self.value_baseline, self.policy_kwargs)

    def hparams(self) -> dict[str, Any]:
        return {**super().hparams(), "critic_when_tied": self.critic_when_tied}

    def _compute_advantages(self) -> None:
        super()._compute_advantages()
        self._tied_critic_advantages()

    def _train_on_weights(
        self, update: Callable[[], None], without_critic: AbstractContextManager[None] | None = None
    ) -> None:
        """The SB3 (sb3-contrib) PPO ``update`` on the episode weights (:func:`train_on_episode_weights`), in the
        block of :meth:`_critic_fitted_in_update` where the critic is fitted, else in ``without_critic`` (none:
        the update as it is)."""
        critic_fit = self._critic_fitted_in_update()
        block = critic_fit if critic_fit is not None else without_critic or nullcontext()

        def episodic_update() -> None:
            with block:
                update()

        train_on_episode_weights(self, episodic_update, critic=critic_fit is not None)

    def _tied_critic_advantages(self) -> None:
        """The critic's GAE targets of this rollout (its values predicted before the rollout is fitted, as SB3's
        are at collection); on a rollout tied at the best return seen, not blind to success (where
        ``novelty_when_blind`` acts) and not drawn by the noise sampler (its GAE would need the draws' likelihood
        ratios), the standardized GAE advantages replace the zero weights."""
        self._critic_targets = None
        if not self.critic_when_tied:
            return
        buffer = self.rollout_buffer
        values = predict_values(self.policy, buffer.observations)
        order, last = episode_order(buffer.episode_index)
        last_step = np.zeros(len(buffer.episode_time_outs), dtype=np.float64)
        last_step[buffer.episode_index[order][last]] = values[order][last]
        # A time-out's next state is not stored: the value of its last state stands in for it, one step apart.
        bootstrap = np.where(buffer.episode_time_outs, last_step, 0.0)
        advantages = gae_advantages(
            buffer.rewards, values, buffer.episode_index, bootstrap, TIED_CRITIC_GAMMA, self.gae_lambda
        )
        self._critic_values = values
        self._critic_targets = (advantages + values).astype(np.float32)
        tied = getattr(self, "_rollout_tied_at_best", False) and not getattr(self, "_rollout_blind", False)
        self._rollout_critic_trained = bool(tied and getattr(self, "_rollout_noise_weights", None) is None)
        if self._rollout_critic_trained:
            buffer.advantages = ((advantages - advantages.mean()) / (advantages.std() + 1e-8)).astype(np.float32)

    def _critic_fitted_in_update(self) -> AbstractContextManager[None] | None:
        """The block in which the rollout's update also fits the critic (:func:`critic_fitted_in_update`), where
        ``critic_when_tied`` is on; it logs ``train/tied_critic`` (1 where the rollout trained on the critic's
        advantages), and SB3's update ``train/value_loss`` and ``train/explained_variance`` (of the values the
        critic predicted for the rollout)."""
        targets = getattr(self, "_critic_targets", None)
        if targets is None:
            return None
        self.logger.record("train/tied_critic", float(self._rollout_critic_trained))
        self._critic_targets = None
        return critic_fitted_in_update(
            self.policy, self.rollout_buffer, self._critic_values, targets, self.critic_held_as_zeros
        )
