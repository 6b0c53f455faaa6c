"""OrderGradMaskablePPO: sb3-contrib's MaskablePPO (invalid-action masks) on OrderGrad episode weights."""

from ordergrad_rl.agents.ppo_mask.policies import CnnPolicy, MlpPolicy, MultiInputPolicy
from ordergrad_rl.agents.ppo_mask.ppo_mask import OrderGradMaskablePPO

__all__ = ["CnnPolicy", "MlpPolicy", "MultiInputPolicy", "OrderGradMaskablePPO"]
