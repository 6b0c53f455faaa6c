"""Benchmark of the advantage weights beyond the plain batch, each against a baseline timed in the same run.

    python scripts/bench_advantages.py [--repeats 200] [--quick]

At the agents' sizes (a rollout of 256 episodes, or 32 groups of 8; TRL: 64 prompts x 8 completions, two reward
functions), one thread:

* the noise sampler's weighted batch (:func:`~ordergrad_rl.core.weighted.weighted_lstat_advantage`, ``cvar0.2@128``)
  against the plain estimator of the same returns (:func:`~ordergrad_rl.core.lstat_advantage`), what the sampler's
  likelihood ratios cost, and the same for the value the agents log (``weighted_lstat_value``, ``lstat_value``);
* a channel objective (``reward=top2@4 + 0.4*length=bot2@4``, the agents' ``episode_weights``) against the same sum
  written by hand, one core call per channel;
* GCVaR's weights (``gcvar0.2`` through ``episode_weights``), pooled and grouped, against one vectorized
  ``np.partition`` of the same returns;
* TRL's group advantages (:func:`~ordergrad_rl.integrations.advantages.group_advantages`, ``top2@4``) against
  TRL's GRPO advantage of the same rewards in torch, ``(r - group mean) / (group std + 1e-4)``.

Where a baseline computes the same quantity, the script checks that it agrees. Machines are noisy: the ratios are
the figures to compare.
"""

from __future__ import annotations

import argparse
import math
from functools import partial

import numpy as np
import torch

from ordergrad_rl.agents.common.advantages import episode_weights
from ordergrad_rl.common.options import parse_quick_args, positive_int
from ordergrad_rl.common.reports import best_time, ratio_header, ratio_row
from ordergrad_rl.core import Objective, lstat_advantage, lstat_value, parse_objective
from ordergrad_rl.core.weighted import weighted_lstat_advantage, weighted_lstat_value
from ordergrad_rl.integrations.advantages import group_advantages, parse_group_objective

N_EPISODES = 256
GROUPS, G = 32, 8
PROMPTS = 64
CHANNELS = {"reward": "top2@4", "length": ("bot2@4", 0.4)}
GCVAR_LEVEL = 0.2


def gcvar_by_hand(returns: np.ndarray, level: float) -> np.ndarray:
    """GCVaR's weights of each row of ``returns`` in one vectorized call: the ``ceil(level n)``-th smallest return
    of the row is its VaR."""
    m = math.ceil(level * returns.shape[-1] - 1e-12)
    var = np.partition(returns, m - 1, axis=-1)[..., m - 1 : m]
    return (np.where(returns <= var, returns - var, 0.0) / level).reshape(-1)


def grpo_advantages(rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """TRL's GRPO advantage: the reward functions' sum, minus its group's mean, over its group's std + 1e-4."""
    total = rewards.sum(dim=1).view(-1, group_size)
    mean, std = total.mean(dim=1, keepdim=True), total.std(dim=1, keepdim=True)
    return ((total - mean) / (std + 1e-4)).view(-1)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=positive_int, default=200)
    args = parse_quick_args(parser, argv, {"repeats": 3})
    torch.set_num_threads(1)  # one core, like bench_core.py
    rng = np.random.default_rng(0)
    repeats = args.repeats
    ratio_header()

    returns, rho = rng.normal(size=N_EPISODES), rng.lognormal(size=N_EPISODES)
    cvar = Objective.parse("cvar0.2@128")
    plain = best_time(lambda: lstat_advantage(returns, cvar), repeats)
    weighted = best_time(lambda: weighted_lstat_advantage(returns, rho, cvar), repeats)
    base = f"lstat_advantage {N_EPISODES}"
    ratio_row(f"lstat_advantage cvar0.2@128, N={N_EPISODES} (baseline)", plain, plain, base)
    ratio_row(f"weighted_lstat_advantage (noise sampler), N={N_EPISODES}", weighted, plain, base)
    plain = best_time(lambda: lstat_value(returns, cvar), repeats)  # the value the agents log every rollout
    weighted = best_time(lambda: weighted_lstat_value(returns, rho, cvar), repeats)
    base = f"lstat_value {N_EPISODES}"
    ratio_row(f"lstat_value cvar0.2@128, N={N_EPISODES} (baseline)", plain, plain, base)
    ratio_row(f"weighted_lstat_value (noise sampler), N={N_EPISODES}", weighted, plain, base)

    values = {"reward": rng.normal(size=(GROUPS, G)), "length": rng.integers(1, 20, size=(GROUPS, G)).astype(float)}
    channels = parse_objective(CHANNELS)
    top2, bot2 = Objective.parse("top2@4"), Objective.parse("bot2@4")
    k_top, k_bot = top2.k, bot2.k
    assert k_top is not None and k_bot is not None  # both @4

    def by_hand() -> np.ndarray:
        reward = k_top * lstat_advantage(values["reward"], top2)
        return (reward + 0.4 * k_bot * lstat_advantage(values["length"], bot2)).reshape(-1)

    np.testing.assert_allclose(episode_weights(channels, values, False), by_hand(), rtol=1e-12, atol=1e-12)
    hand = best_time(by_hand, repeats)
    ours = best_time(lambda: episode_weights(channels, values, False), repeats)
    base = f"two core calls {GROUPS}x{G}"
    ratio_row(f"two channels by hand, {GROUPS} groups x {G} (baseline)", hand, hand, base)
    ratio_row(f"episode_weights reward+length channels, {GROUPS}x{G}", ours, hand, base)

    for label, batch in (("pooled", returns), ("grouped", rng.normal(size=(GROUPS, G)))):
        reward = {"reward": batch}
        weights = episode_weights(cvar, reward, False, GCVAR_LEVEL)
        np.testing.assert_allclose(weights, gcvar_by_hand(batch, GCVAR_LEVEL), rtol=0, atol=1e-12)
        shape = "x".join(map(str, batch.shape))
        vectorized = best_time(partial(gcvar_by_hand, batch, GCVAR_LEVEL), repeats)
        gcvar = best_time(partial(episode_weights, cvar, reward, False, GCVAR_LEVEL), repeats)
        base = f"np.partition {shape}"
        ratio_row(f"GCVaR weights np.partition, {label} {shape} (baseline)", vectorized, vectorized, base)
        ratio_row(f"episode_weights gcvar{GCVAR_LEVEL}, {label} {shape}", gcvar, vectorized, base)

    names = ["correct", "format"]
    rewards = rng.integers(0, 2, size=(PROMPTS * G, len(names))).astype(np.float64)
    rewards_t = torch.as_tensor(rewards, dtype=torch.float32)
    objective = parse_group_objective("top2@4", G)
    grpo = best_time(lambda: grpo_advantages(rewards_t, G), repeats)
    ours = best_time(lambda: group_advantages(objective, rewards, G, names), repeats)
    base = f"GRPO {PROMPTS}x{G}"
    ratio_row(f"TRL GRPO advantage, {PROMPTS} prompts x {G} (baseline)", grpo, grpo, base)
    ratio_row(f"group_advantages top2@4, {PROMPTS} prompts x {G}", ours, grpo, base)


if __name__ == "__main__":
    main()
