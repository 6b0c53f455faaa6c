"""OrderGradQCriticPPO: PPO on per-state OrderGrad advantages with a per-action Q critic (paper Algorithm 1)."""

from ordergrad_rl.agents.ppo_q_critic.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from ordergrad_rl.agents.ppo_q_critic.ppo_q_critic import (
    Q_CRITIC,
    OrderGradQCriticPPO,
    QCriticMixin,
    q_critic_advantages,
)

__all__ = [
    "CnnPolicy",
    "MlpPolicy",
    "MultiInputPolicy",
    "OrderGradQCriticPPO",
    "QCriticMixin",
    "Q_CRITIC",
    "q_critic_advantages",
]
