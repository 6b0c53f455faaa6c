"""OrderGradREINFORCE: one likelihood-ratio gradient step per batch of complete episodes."""

from ordergrad_rl.agents.common.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from ordergrad_rl.agents.reinforce.reinforce import OrderGradREINFORCE

__all__ = ["CnnPolicy", "MlpPolicy", "MultiInputPolicy", "OrderGradREINFORCE"]
