"""The Q-critic algorithm's policies: the OrderGrad actor-critic policies with the per-action Q head by default.

:class:`~ordergrad_rl.agents.OrderGradQCriticPPO` builds these classes (its ``"MlpPolicy"`` ...), so a save names a
class that carries its critic (``critic="q"``, see :class:`~ordergrad_rl.agents.common.policies.OrderGradPolicyMixin`).
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.policies import BasePolicy

from ordergrad_rl.agents.common.policies import (
    OrderGradActorCriticCnnPolicy,
    OrderGradActorCriticPolicy,
    OrderGradMultiInputPolicy,
)


class _QCriticByDefault:
    """``critic="q"`` by default. Q-critic mode builds these classes, so a save names a class that carries its
    critic: SB3's ``PPO.load`` of the file (which builds the policy from the saved class and ``policy_kwargs``, the
    user's) gets the Q head the weights have, and trains it as PPO with a Q critic (values ``Q(s, a)`` regressed to
    the returns, ``V(s) = sum_a pi(a|s) Q(s, a)`` for GAE)."""

    def __init__(self, *args: Any, critic: str = "q", **kwargs: Any) -> None:
        super().__init__(*args, critic=critic, **kwargs)  # type: ignore[call-arg]


class OrderGradQActorCriticPolicy(_QCriticByDefault, OrderGradActorCriticPolicy):
    """:class:`OrderGradActorCriticPolicy` with the per-action Q head by default (Q-critic mode's ``"MlpPolicy"``)."""


class OrderGradQActorCriticCnnPolicy(_QCriticByDefault, OrderGradActorCriticCnnPolicy):
    """:class:`OrderGradActorCriticCnnPolicy` with the per-action Q head by default (Q-critic ``"CnnPolicy"``)."""


class OrderGradQMultiInputPolicy(_QCriticByDefault, OrderGradMultiInputPolicy):
    """:class:`OrderGradMultiInputPolicy` with the per-action Q head by default (Q-critic ``"MultiInputPolicy"``)."""


#: The class Q-critic mode builds for each alias class (a user's own policy class is built with ``critic="q"``).
Q_CRITIC_POLICIES: dict[type, type] = {
    OrderGradActorCriticPolicy: OrderGradQActorCriticPolicy,
    OrderGradActorCriticCnnPolicy: OrderGradQActorCriticCnnPolicy,
    OrderGradMultiInputPolicy: OrderGradQMultiInputPolicy,
}

MlpPolicy = OrderGradQActorCriticPolicy
CnnPolicy = OrderGradQActorCriticCnnPolicy
MultiInputPolicy = OrderGradQMultiInputPolicy

Q_CRITIC_POLICY_ALIASES: dict[str, type[BasePolicy]] = {
    "MlpPolicy": OrderGradQActorCriticPolicy,
    "CnnPolicy": OrderGradQActorCriticCnnPolicy,
    "MultiInputPolicy": OrderGradQMultiInputPolicy,
}
