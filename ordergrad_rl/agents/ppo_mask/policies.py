"""sb3-contrib's maskable actor-critic policies with the OrderGrad policy options.

``OrderGradMaskablePPO``'s ``"MlpPolicy"`` / ``"CnnPolicy"`` / ``"MultiInputPolicy"`` resolve to the classes below.
They accept everything sb3-contrib's policies accept plus ``learn_log_std`` and ``zero_init_action_net`` (see
:mod:`ordergrad_rl.agents.common.policies`). ``critic`` is set by the algorithm: ``"none"`` in episodic mode, where
``evaluate_actions`` returns zero values without running a value branch; ``"value"`` gives sb3-contrib's behaviour.
"""

from __future__ import annotations

import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import (
    MaskableActorCriticCnnPolicy,
    MaskableActorCriticPolicy,
    MaskableMultiInputActorCriticPolicy,
)
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import PyTorchObs, Schedule

from ordergrad_rl.agents.common.policies import OrderGradPolicyMixin, refuse_q_critic


class OrderGradMaskablePolicy(OrderGradPolicyMixin, MaskableActorCriticPolicy):
    """sb3-contrib's ``MaskableActorCriticPolicy`` (MaskablePPO's ``"MlpPolicy"``) with the OrderGrad options."""

    policy_alias = "MlpPolicy"

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space, lr_schedule: Schedule, **kwargs):
        refuse_q_critic(kwargs, type(self).__name__)
        kwargs.pop("use_sde", None)  # SB3's OnPolicyAlgorithm passes it; masked distributions are never gSDE
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)

    forward = MaskableActorCriticPolicy.forward
    predict_values = MaskableActorCriticPolicy.predict_values

    def evaluate_actions(
        self, obs: PyTorchObs, actions: th.Tensor, action_masks: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """Values, log-likelihoods and entropies of ``actions`` under the masked distribution (sb3-contrib's
        contract); with ``critic="none"`` the values are zeros ``[batch, 1]`` and the value branch is not run."""
        if self.critic != "none":
            # sb3-contrib types obs a Tensor; its MultiInput policy evaluates dicts of them.
            return MaskableActorCriticPolicy.evaluate_actions(self, obs, actions, action_masks)  # type: ignore[arg-type]
        distribution = self.get_distribution(obs)
        if action_masks is not None:  # as sb3-contrib's evaluate_actions masks (its get_distribution types NumPy masks)
            distribution.apply_masking(action_masks)
        log_prob = distribution.log_prob(actions)
        return log_prob.new_zeros((log_prob.shape[0], 1)), log_prob, distribution.entropy()


class OrderGradMaskableCnnPolicy(OrderGradMaskablePolicy, MaskableActorCriticCnnPolicy):
    """sb3-contrib's ``MaskableActorCriticCnnPolicy`` (``"CnnPolicy"``) with the OrderGrad options."""

    policy_alias = "CnnPolicy"


class OrderGradMaskableMultiInputPolicy(OrderGradMaskablePolicy, MaskableMultiInputActorCriticPolicy):
    """sb3-contrib's ``MaskableMultiInputActorCriticPolicy`` (``"MultiInputPolicy"``) with the OrderGrad options."""

    policy_alias = "MultiInputPolicy"


MASKABLE_POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": OrderGradMaskablePolicy,
    "CnnPolicy": OrderGradMaskableCnnPolicy,
    "MultiInputPolicy": OrderGradMaskableMultiInputPolicy,
}

MlpPolicy = OrderGradMaskablePolicy
CnnPolicy = OrderGradMaskableCnnPolicy
MultiInputPolicy = OrderGradMaskableMultiInputPolicy
