"""The OrderGrad estimator mathematics: objectives, weight tables, batch and known-distribution regimes.

No RL in here; :mod:`~ordergrad_rl.core.channels` adds objectives over several reward channels. One algorithm for
every array library of the Python array API standard — NumPy, PyTorch, JAX, CuPy — with outputs on the input's
library, dtype and device (see :mod:`ordergrad_rl.core._xp`).
"""

from ordergrad_rl.core.batch import OrderStatTransform, get_transform, lstat_advantage, lstat_value
from ordergrad_rl.core.channels import Channel, ChannelObjective, parse_objective
from ordergrad_rl.core.known import (
    known_lstat_advantage,
    known_lstat_inclusion,
    known_lstat_value,
    known_orderstats,
)
from ordergrad_rl.core.objectives import Objective, resolve_objective, valid_names

__all__ = [
    "Channel",
    "ChannelObjective",
    "Objective",
    "OrderStatTransform",
    "get_transform",
    "known_lstat_advantage",
    "known_lstat_inclusion",
    "known_lstat_value",
    "known_orderstats",
    "lstat_advantage",
    "lstat_value",
    "parse_objective",
    "resolve_objective",
    "valid_names",
]
