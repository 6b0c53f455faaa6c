"""OrderGradPPO: SB3's clipped-surrogate PPO update on OrderGrad episode weights."""

from ordergrad_rl.agents.common.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from ordergrad_rl.agents.ppo.ppo import OrderGradPPO

__all__ = ["CnnPolicy", "MlpPolicy", "MultiInputPolicy", "OrderGradPPO"]
