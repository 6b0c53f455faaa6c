"""Old path of :mod:`ordergrad_rl.agents.common.policies` (and of the Q-critic policies); it exists for saves of
release 0.1.0, which pickle ``ordergrad_rl.agents.policies.<class>`` as their ``policy_class``. Re-exports only."""

from ordergrad_rl.agents.common.policies import (
    POLICY_ALIASES,
    CnnPolicy,
    MlpPolicy,
    MultiInputPolicy,
    OrderGradActorCriticCnnPolicy,
    OrderGradActorCriticPolicy,
    OrderGradMultiInputPolicy,
    OrderGradPolicyMixin,
)
from ordergrad_rl.agents.ppo_q_critic.policies import (
    Q_CRITIC_POLICIES,
    OrderGradQActorCriticCnnPolicy,
    OrderGradQActorCriticPolicy,
    OrderGradQMultiInputPolicy,
)

__all__ = [
    "POLICY_ALIASES",
    "Q_CRITIC_POLICIES",
    "CnnPolicy",
    "MlpPolicy",
    "MultiInputPolicy",
    "OrderGradActorCriticCnnPolicy",
    "OrderGradActorCriticPolicy",
    "OrderGradMultiInputPolicy",
    "OrderGradPolicyMixin",
    "OrderGradQActorCriticCnnPolicy",
    "OrderGradQActorCriticPolicy",
    "OrderGradQMultiInputPolicy",
]
