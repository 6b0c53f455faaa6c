"""Gymnasium environments of ordergrad-rl. Importing ``ordergrad_rl`` registers them.

=============================== ===========================================================
id                              environment
=============================== ===========================================================
``SyntheticTailRisk-v0``        the paper's tail-risk portfolio, p=0.10, 80 traded days
``SyntheticTailRiskDeploy-v0``  its deployment setting, p=0.35, 160 traded days
``RiskyBandit-v0``              one-step bandit: mean, CVaR and max@K prefer different arms
``RiskyLavaGrid-v0``            slippery gridworld: shortcut along lava vs. safe path
``GuardedMaze-v0``              8x8 maze: short path past a guard (CeSoR's Guarded Maze)
``HeavyTailBandit-v0``          one-step bandit: the best-mean arm has a rare large loss
``RiskyShortcutNav-v0``         2-D point navigation (continuous): a risky gap vs. a detour
``RiskyShortcutNav-v1``         the same, with potential-based progress shaping
``RiskyShortcutNav-v2``         the same, the gap under the lower wall closed (the suite's)
``TargetSum-v0``                verifiable reasoning: pick numbers adding up to a target,
                                token by token, with running totals (train/test splits)
=============================== ===========================================================

The known-answer benchmark envs (lava grid, guarded maze, heavy-tail bandit, shortcut navigation) print their
exact mean- and CVaR-optimal values in their docstrings; ``ordergrad_rl.envs.tabular`` computes them, and
``ordergrad_rl.envs.tabular_history`` brackets the return law of a policy with memory (a recurrent policy) there.

The classes are imported on first access, so ``import ordergrad_rl`` stays light (no SB3).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

import gymnasium as gym

from ordergrad_rl.envs.own_horizon import own_horizon

if TYPE_CHECKING:  # pragma: no cover
    from ordergrad_rl.envs.bandit import RiskyBanditEnv
    from ordergrad_rl.envs.guarded_maze import GuardedMazeEnv
    from ordergrad_rl.envs.heavy_tail_bandit import HeavyTailBanditEnv
    from ordergrad_rl.envs.lava_grid import RiskyLavaGridEnv
    from ordergrad_rl.envs.sb3_vec_env import NativeVecEnv, TailRiskVecEnv, make_sb3_vec_env
    from ordergrad_rl.envs.shortcut_nav import RiskyShortcutNavEnv
    from ordergrad_rl.envs.tailrisk import TailRiskSimulator, cash_capped_weights, default_event_window
    from ordergrad_rl.envs.tailrisk_gym import SyntheticTailRiskEnv, SyntheticTailRiskVectorEnv
    from ordergrad_rl.envs.target_sum import TargetSumEnv, TargetSumVectorEnv, target_sum_problems, verify_answers

_TAILRISK = "ordergrad_rl.envs.tailrisk_gym"
_REASONING = "ordergrad_rl.envs.target_sum"

# name -> module that defines it (PEP 562 lazy attributes).
_LAZY = {
    "TailRiskSimulator": "ordergrad_rl.envs.tailrisk",
    "cash_capped_weights": "ordergrad_rl.envs.tailrisk",
    "default_event_window": "ordergrad_rl.envs.tailrisk",
    "SyntheticTailRiskEnv": _TAILRISK,
    "SyntheticTailRiskVectorEnv": _TAILRISK,
    "TailRiskVecEnv": "ordergrad_rl.envs.sb3_vec_env",
    "NativeVecEnv": "ordergrad_rl.envs.sb3_vec_env",
    "make_sb3_vec_env": "ordergrad_rl.envs.sb3_vec_env",
    "RiskyBanditEnv": "ordergrad_rl.envs.bandit",
    "RiskyLavaGridEnv": "ordergrad_rl.envs.lava_grid",
    "GuardedMazeEnv": "ordergrad_rl.envs.guarded_maze",
    "HeavyTailBanditEnv": "ordergrad_rl.envs.heavy_tail_bandit",
    "RiskyShortcutNavEnv": "ordergrad_rl.envs.shortcut_nav",
    "TargetSumEnv": _REASONING,
    "TargetSumVectorEnv": _REASONING,
    "target_sum_problems": _REASONING,
    "verify_answers": _REASONING,
}

#: RiskyShortcutNav's time limit: the env truncates at 50 steps itself (its observation carries t / 50), so a longer
#: ``max_episode_steps`` is refused (:class:`~ordergrad_rl.envs.own_horizon.OwnHorizon`).
_NAV_LIMIT: dict[str, Any] = {"max_episode_steps": 50, "additional_wrappers": own_horizon(50)}

_SPECS: tuple[dict[str, Any], ...] = (
    {
        "id": "SyntheticTailRisk-v0",
        "entry_point": f"{_TAILRISK}:SyntheticTailRiskEnv",
        "vector_entry_point": f"{_TAILRISK}:SyntheticTailRiskVectorEnv",
        "kwargs": {"p": 0.10, "traded_days": 80},
    },
    {
        "id": "SyntheticTailRiskDeploy-v0",
        "entry_point": f"{_TAILRISK}:SyntheticTailRiskEnv",
        "vector_entry_point": f"{_TAILRISK}:SyntheticTailRiskVectorEnv",
        "kwargs": {"p": 0.35, "traded_days": 160},
    },
    {"id": "RiskyBandit-v0", "entry_point": "ordergrad_rl.envs.bandit:RiskyBanditEnv"},
    {
        "id": "RiskyLavaGrid-v0",
        "entry_point": "ordergrad_rl.envs.lava_grid:RiskyLavaGridEnv",
        "max_episode_steps": 30,
    },
    {"id": "GuardedMaze-v0", "entry_point": "ordergrad_rl.envs.guarded_maze:GuardedMazeEnv", "max_episode_steps": 40},
    {
        "id": "HeavyTailBandit-v0",
        "entry_point": "ordergrad_rl.envs.heavy_tail_bandit:HeavyTailBanditEnv",
        "max_episode_steps": 1,
        # Outside the one-step TimeLimit, which would report each (terminating) step as truncated too.
        "additional_wrappers": own_horizon(1),
    },
    {
        "id": "RiskyShortcutNav-v0",
        "entry_point": "ordergrad_rl.envs.shortcut_nav:RiskyShortcutNavEnv",
        **_NAV_LIMIT,
        "kwargs": {"sealed_edge": False},
    },
    {
        "id": "RiskyShortcutNav-v1",
        "entry_point": "ordergrad_rl.envs.shortcut_nav:RiskyShortcutNavEnv",
        **_NAV_LIMIT,
        "kwargs": {"progress_reward": 10.0, "sealed_edge": False},
    },
    {
        "id": "RiskyShortcutNav-v2",
        "entry_point": "ordergrad_rl.envs.shortcut_nav:RiskyShortcutNavEnv",
        **_NAV_LIMIT,
        "kwargs": {"progress_reward": 10.0},
    },
    {
        "id": "TargetSum-v0",
        "entry_point": f"{_REASONING}:TargetSumEnv",
        "vector_entry_point": f"{_REASONING}:TargetSumVectorEnv",
    },
)


def register_envs() -> None:
    """Register the ordergrad-rl environments with Gymnasium (idempotent)."""
    for spec in _SPECS:
        if spec["id"] not in gym.registry:
            gym.register(**spec)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ordergrad_rl.envs' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + list(_LAZY))


__all__ = [
    "register_envs",
    "TailRiskSimulator",
    "cash_capped_weights",
    "default_event_window",
    "SyntheticTailRiskEnv",
    "SyntheticTailRiskVectorEnv",
    "TailRiskVecEnv",
    "NativeVecEnv",
    "make_sb3_vec_env",
    "RiskyBanditEnv",
    "RiskyLavaGridEnv",
    "GuardedMazeEnv",
    "HeavyTailBanditEnv",
    "RiskyShortcutNavEnv",
    "TargetSumEnv",
    "TargetSumVectorEnv",
    "target_sum_problems",
    "verify_answers",
]
assert sorted(__all__[1:]) == sorted(_LAZY)
