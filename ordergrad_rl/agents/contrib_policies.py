"""Old path of the sb3-contrib policies (:mod:`ordergrad_rl.agents.ppo_recurrent.policies`,
:mod:`ordergrad_rl.agents.ppo_mask.policies`); it exists for saves of release 0.1.0, which pickle
``ordergrad_rl.agents.contrib_policies.<class>`` as their ``policy_class``. Re-exports only."""

from ordergrad_rl.agents.ppo_mask.policies import (
    MASKABLE_POLICY_ALIASES,
    OrderGradMaskableCnnPolicy,
    OrderGradMaskableMultiInputPolicy,
    OrderGradMaskablePolicy,
)
from ordergrad_rl.agents.ppo_recurrent.policies import (
    RECURRENT_POLICY_ALIASES,
    OrderGradRecurrentCnnPolicy,
    OrderGradRecurrentMultiInputPolicy,
    OrderGradRecurrentPolicy,
)

__all__ = [
    "MASKABLE_POLICY_ALIASES",
    "RECURRENT_POLICY_ALIASES",
    "OrderGradMaskableCnnPolicy",
    "OrderGradMaskableMultiInputPolicy",
    "OrderGradMaskablePolicy",
    "OrderGradRecurrentCnnPolicy",
    "OrderGradRecurrentMultiInputPolicy",
    "OrderGradRecurrentPolicy",
]
