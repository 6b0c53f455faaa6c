"""QRDQNCVaR: sb3-contrib's QR-DQN acting greedily on the CVaR of its predicted return quantiles (a peer baseline)."""

from ordergrad_rl.agents.qrdqn_cvar.qrdqn_cvar import (
    CVaRQRDQNCnnPolicy,
    CVaRQRDQNMultiInputPolicy,
    CVaRQRDQNPolicy,
    CVaRQuantileNetwork,
    QRDQNCVaR,
    quantile_cvar,
)

# The policies under SB3's alias names, as in sb3-contrib's qrdqn/__init__.py.
MlpPolicy = CVaRQRDQNPolicy
CnnPolicy = CVaRQRDQNCnnPolicy
MultiInputPolicy = CVaRQRDQNMultiInputPolicy

__all__ = [
    "CVaRQRDQNCnnPolicy",
    "CVaRQRDQNMultiInputPolicy",
    "CVaRQRDQNPolicy",
    "CVaRQuantileNetwork",
    "CnnPolicy",
    "MlpPolicy",
    "MultiInputPolicy",
    "QRDQNCVaR",
    "quantile_cvar",
]
