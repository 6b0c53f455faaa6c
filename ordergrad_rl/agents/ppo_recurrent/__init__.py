"""OrderGradRecurrentPPO: sb3-contrib's RecurrentPPO (LSTM policies) on OrderGrad episode weights."""

from ordergrad_rl.agents.ppo_recurrent.policies import CnnLstmPolicy, MlpLstmPolicy, MultiInputLstmPolicy
from ordergrad_rl.agents.ppo_recurrent.ppo_recurrent import OrderGradRecurrentPPO

__all__ = ["CnnLstmPolicy", "MlpLstmPolicy", "MultiInputLstmPolicy", "OrderGradRecurrentPPO"]
