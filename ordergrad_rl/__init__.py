"""ordergrad-rl: risk-sensitive reinforcement learning with OrderGrad.

Importing the package registers the Gymnasium environments and exposes the estimator core.
The agents (which need Stable-Baselines3, torch and TensorBoard) are imported on first use, so
``import ordergrad_rl`` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ordergrad_rl.core import (
    Objective,
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_inclusion,
    known_lstat_value,
    known_orderstats,
    lstat_advantage,
    lstat_value,
)
from ordergrad_rl.envs import register_envs
from ordergrad_rl.version import __version__

register_envs()

# name -> module that defines it; resolved on first attribute access (PEP 562).
_LAZY = {
    "OrderGradPPO": "ordergrad_rl.agents",
    "OrderGradREINFORCE": "ordergrad_rl.agents",
    "OrderGradRecurrentPPO": "ordergrad_rl.agents",
    "OrderGradMaskablePPO": "ordergrad_rl.agents",
    "RiskEvalCallback": "ordergrad_rl.agents",
    "PassAtKEvalCallback": "ordergrad_rl.agents",
    "ChannelObjective": "ordergrad_rl.agents",
    "risk_profile": "ordergrad_rl.risk",
    "pass_at_k": "ordergrad_rl.passk",
    "pass_at_k_curve": "ordergrad_rl.passk",
}

if TYPE_CHECKING:  # pragma: no cover
    from ordergrad_rl.agents import (
        ChannelObjective,
        OrderGradMaskablePPO,
        OrderGradPPO,
        OrderGradRecurrentPPO,
        OrderGradREINFORCE,
        PassAtKEvalCallback,
        RiskEvalCallback,
    )
    from ordergrad_rl.passk import pass_at_k, pass_at_k_curve
    from ordergrad_rl.risk import risk_profile


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ordergrad_rl' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))


__all__ = [
    "Objective",
    "OrderStatTransform",
    "lstat_value",
    "lstat_advantage",
    "known_lstat_value",
    "known_lstat_advantage",
    "known_lstat_inclusion",
    "known_orderstats",
    "OrderGradPPO",
    "OrderGradREINFORCE",
    "OrderGradRecurrentPPO",
    "OrderGradMaskablePPO",
    "RiskEvalCallback",
    "PassAtKEvalCallback",
    "ChannelObjective",
    "risk_profile",
    "pass_at_k",
    "pass_at_k_curve",
    "register_envs",
    "__version__",
]
