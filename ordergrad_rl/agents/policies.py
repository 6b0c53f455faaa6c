"""Actor-critic policies for the OrderGrad agents: SB3's policies plus the options the paper's protocols need.

``"MlpPolicy"``, ``"CnnPolicy"`` and ``"MultiInputPolicy"`` of :class:`~ordergrad_rl.agents.OrderGradPPO` and
:class:`~ordergrad_rl.agents.OrderGradREINFORCE` resolve to the classes below. Everything SB3's
``ActorCriticPolicy`` accepts still works (``net_arch``, ``activation_fn``, ``ortho_init``, ``log_std_init``,
``features_extractor_class``, ``optimizer_class`` ...); the extra keyword options are:

* ``learn_log_std=False`` freezes the Gaussian log-std at ``log_std_init`` (fixed exploration noise);
* ``zero_init_action_net=True`` initializes the last (action) layer at zero, so training starts from equal
  logits / zero means instead of a random corner;
* ``critic`` is set by the algorithm, not by users: ``"none"`` in episodic mode, where the policy is trained on
  whole-episode weights and has no use for a value function.

The paper's portfolio protocol (linear policy, zero-initialized output, fixed logit noise sigma = 0.35)::

    policy_kwargs = dict(net_arch=dict(pi=[], vf=[]), zero_init_action_net=True,
                         log_std_init=math.log(0.35), learn_log_std=False)
"""

from __future__ import annotations

from typing import Any

import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import (
    ActorCriticCnnPolicy,
    ActorCriticPolicy,
    MultiInputActorCriticPolicy,
)
from stable_baselines3.common.type_aliases import Schedule

#: Critic kinds a policy can carry. ``"none"``: episodic mode, the value branch is minimal and never evaluated;
#: ``"value"``: SB3's state-value head (plain SB3 behaviour).
CRITICS: tuple[str, ...] = ("none", "value")

#: SB3's default actor when ``net_arch`` is not given.
_DEFAULT_PI: list[int] = [64, 64]


def actor_only_net_arch(net_arch: list[int] | dict[str, list[int]] | None) -> dict[str, list[int]]:
    """``net_arch`` with an empty value branch (``vf=[]``): without a critic, hidden value layers are dead weight.

    :param net_arch: SB3 ``net_arch``: ``None`` (default actor ``[64, 64]``), a list (the actor's hidden layers)
        or ``dict(pi=[...], vf=[...])`` (``vf`` is dropped).
    """
    if net_arch is None:
        return dict(pi=list(_DEFAULT_PI), vf=[])
    if isinstance(net_arch, dict):
        return dict(pi=list(net_arch.get("pi", [])), vf=[])
    return dict(pi=list(net_arch), vf=[])


class OrderGradPolicyMixin:
    """Adds ``learn_log_std``, ``zero_init_action_net`` and ``critic`` to an SB3 actor-critic policy.

    Mixed in front of ``ActorCriticPolicy`` or one of its subclasses; all other arguments pass through unchanged.

    :param critic: ``"none"`` (episodic mode: ``evaluate_actions`` returns zero values and never runs the value
        branch, whose ``net_arch`` is forced to ``vf=[]``) or ``"value"`` (SB3's value head).
    :param learn_log_std: if False, the Gaussian log-std stays at ``log_std_init`` (it gets no gradient, so the
        optimizer never moves it). Only meaningful for ``Box`` action spaces.
    :param zero_init_action_net: initialize the action layer's weights and bias at zero (applied after SB3's
        orthogonal initialization).
    """

    action_net: th.nn.Module
    log_std: th.nn.Parameter

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Schedule,
        *args: Any,
        critic: str = "value",
        learn_log_std: bool = True,
        zero_init_action_net: bool = False,
        **kwargs: Any,
    ) -> None:
        if critic not in CRITICS:
            raise ValueError(f"unknown critic {critic!r}; expected one of {CRITICS}")
        if args:
            raise TypeError("pass the policy options by keyword (as SB3's policy_kwargs do)")
        # Set before super().__init__, which calls _build().
        self.critic = critic
        self.learn_log_std = learn_log_std
        self.zero_init_action_net = zero_init_action_net
        if critic == "none":
            kwargs["net_arch"] = actor_only_net_arch(kwargs.get("net_arch"))
        super().__init__(observation_space, action_space, lr_schedule, **kwargs)  # type: ignore[call-arg]

    def _build(self, lr_schedule: Schedule) -> None:
        super()._build(lr_schedule)  # type: ignore[misc]
        if self.zero_init_action_net:
            with th.no_grad():
                for param in self.action_net.parameters():
                    param.zero_()
        if not self.learn_log_std and isinstance(getattr(self, "log_std", None), th.nn.Parameter):
            # No gradient -> Adam and clip_grad_norm_ skip it: the noise level stays exactly log_std_init.
            self.log_std.requires_grad_(False)

    def evaluate_actions(self, obs: th.Tensor, actions: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor | None]:
        """Values, log-likelihood and entropy of ``actions`` (SB3's contract).

        Without a critic the values are zeros of shape ``(batch, 1)`` and the value branch is not run, so SB3's
        PPO update can be reused as is: its value loss is a constant 0 with no gradient.
        """
        if self.critic != "none":
            return super().evaluate_actions(obs, actions)  # type: ignore[misc]
        distribution = self.get_distribution(obs)  # type: ignore[attr-defined]
        log_prob = distribution.log_prob(actions)
        return log_prob.new_zeros((log_prob.shape[0], 1)), log_prob, distribution.entropy()

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()  # type: ignore[misc]
        data.update(
            critic=self.critic,
            learn_log_std=self.learn_log_std,
            zero_init_action_net=self.zero_init_action_net,
        )
        return data


class OrderGradActorCriticPolicy(OrderGradPolicyMixin, ActorCriticPolicy):
    """SB3's ``ActorCriticPolicy`` (``"MlpPolicy"``) with the OrderGrad options of :class:`OrderGradPolicyMixin`."""


class OrderGradActorCriticCnnPolicy(OrderGradPolicyMixin, ActorCriticCnnPolicy):
    """SB3's ``ActorCriticCnnPolicy`` (``"CnnPolicy"``) with the OrderGrad options of :class:`OrderGradPolicyMixin`."""


class OrderGradMultiInputPolicy(OrderGradPolicyMixin, MultiInputActorCriticPolicy):
    """SB3's ``MultiInputActorCriticPolicy`` (``"MultiInputPolicy"``) with the OrderGrad options."""


MlpPolicy = OrderGradActorCriticPolicy
CnnPolicy = OrderGradActorCriticCnnPolicy
MultiInputPolicy = OrderGradMultiInputPolicy

POLICY_ALIASES: dict[str, type[ActorCriticPolicy]] = {
    "MlpPolicy": OrderGradActorCriticPolicy,
    "CnnPolicy": OrderGradActorCriticCnnPolicy,
    "MultiInputPolicy": OrderGradMultiInputPolicy,
}
