"""A probe of ranking each rollout's episodes against a pool of the previous rollouts' returns, on long episodes.

    python scripts/probe_return_pool.py --task acrobot [--seeds 0 1 ...] [--timesteps 100000] [--pool 16]
                                        [--center] [--json out.json] [--quick]

The usage line (``reproduce benchmarks``' ``og-cvar``) on long episodes ranks 32 episodes per update: few updates per
budget (7 in Acrobot-v1's 100k steps against SB3 PPO's 49). 16 episodes per update (``og-cvar-n16``) gave more
updates and a noisier tail: three episodes of 16 in the worst fifth. This probe collects 16 episodes per update and
ranks them among the last ``pool`` returns of the rollouts before (16 + 16 = 32 by default), the objective bound to
half the pooled batch (``cvar0.2@16``, the usage line's), and only the new episodes get gradient. Episode ``i``'s
OrderGrad advantage ``a_i`` is a symmetric function of the other returns of its batch, so where the pooled returns
come from the current policy, ``sum_{i new} a_i grad log p(tau_i)`` is unbiased for ``16 / 32`` of the 32-episode
estimator's expectation (exchangeability); the pool's returns come from the policy before the last update, a bias
the probe measures rather than removes. While the policy improves, that bias has a plain form: a rollout above every
pooled return gets the same positive weight on each of its episodes, which ranks nothing. ``--center`` subtracts the
mean weight of the rollout's own episodes (:func:`centered`), before the history baseline sees them. A rollout tied
at the best return seen trains on nothing and gets no entropy bonus, as in the usage line (the tie rules see the
rollout's own returns). Not a library option: a patched OrderGradPPO whose runs are reported in docs/benchmarks.md.

Scored as ``reproduce benchmarks`` scores the task (:func:`~ordergrad_rl.experiments.benchmarks.run_one`, under a
method name of its own): the worst 20% of 100 greedy and 100 sampled evaluation returns. ``--quick`` (CI): 2,000
steps, 20 episodes.
"""

from __future__ import annotations

import argparse
import dataclasses
from contextlib import nullcontext
from typing import Any, cast
from unittest.mock import patch

import numpy as np

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.agents.common import episodic
from ordergrad_rl.agents.common.advantages import compute_episodic_advantages
from ordergrad_rl.agents.common.arguments import MEAN_N_EPISODES
from ordergrad_rl.agents.common.risk_schedules import share_tied_at_best
from ordergrad_rl.common.options import parser_check_outputs
from ordergrad_rl.core import Objective
from ordergrad_rl.experiments import benchmarks as bench

#: Returns of earlier rollouts each rollout is ranked against, by default: with 16 new episodes, the usage line's
#: 32-episode batch.
POOL = 16


def pooled(new: np.ndarray, pool: np.ndarray) -> np.ndarray:
    """``[N + P]``: the rollout's ``[N]`` values first (episode ``i`` keeps index ``i``), then the pool's ``[P]``."""
    return np.concatenate([np.asarray(new), np.asarray(pool, dtype=np.asarray(new).dtype)])


def centered(advantages: np.ndarray, episode_index: np.ndarray) -> np.ndarray:
    """``[T]`` per-step episode weights minus the mean weight of the episodes (each counted once, not per step).

    A rollout better than every pooled return gives each of its episodes the same positive weight (the pool is the
    tail): no ranking among them, only ``c * sum_i grad log p(tau_i)``, noise around zero. Centred, that is 0, and the
    pool still sets where the rollout's episodes stand between them.
    """
    index = np.asarray(episode_index)
    counts = np.bincount(index)
    per_episode = np.bincount(index, weights=advantages)[counts > 0] / counts[counts > 0]
    return (advantages - per_episode.mean()).astype(np.float32)


class ReturnPoolPPO(OrderGradPPO):
    """OrderGradPPO whose rollout's episodes are ranked among themselves and the last ``pool_size`` returns of the
    rollouts before; the objective is bound to half the pooled batch, and only the rollout's own episodes are
    trained on. The entropy bonus's tie rules see the rollout's own returns, as the usage line's do: a rollout tied at
    the best return seen trains on nothing and gets no bonus, whatever the pool holds."""

    #: Returns of earlier rollouts ranked with each rollout's episodes (:func:`agent_class` sets it).
    pool_size: int = POOL
    #: Subtract the mean weight of the rollout's own episodes (:func:`agent_class` sets it).
    center: bool = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._pool_returns = np.zeros(0)
        self._pool_time_outs = np.zeros(0, dtype=bool)
        super().__init__(*args, **kwargs)

    def collect_rollouts(self, env: Any, callback: Any, rollout_buffer: Any, n_rollout_steps: int) -> bool:
        # Bound before the rollout: the schedule's objective in force is built from the bound target.
        self._set_objective(cast(Objective, self.objective).bind((self.n_episodes + len(self._pool_returns)) // 2))
        self.logger.record("rollout/pooled_returns", len(self._pool_returns))
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _compute_advantages(self) -> None:
        buffer = self.rollout_buffer
        returns, time_outs = buffer.episode_returns, buffer.episode_time_outs
        seen = getattr(self, "_returns_seen", None)
        # The weights are computed on the pooled batch and read at each stored step's episode_index, which only
        # holds the rollout's own episodes (0..N-1): the pool's episodes rank but get no gradient.
        buffer.episode_returns = pooled(returns, self._pool_returns)
        buffer.episode_time_outs = pooled(time_outs, self._pool_time_outs)
        # Centred before the per-step baseline sees them (the library's step is patched for this call only).
        centring = patch.object(
            episodic,
            "compute_episodic_advantages",
            lambda *a, **kw: centered(compute_episodic_advantages(*a, **kw), buffer.episode_index),
        )
        try:
            with centring if self.center else nullcontext():
                super()._compute_advantages()
        finally:
            buffer.episode_returns, buffer.episode_time_outs = returns, time_outs
        # Ranked in the pool, a rollout of 16 episodes at CartPole-v1's 500-step limit gets equal nonzero weights
        # (noise around a zero-mean score) and, with a failure pooled, the bonus that flattens a solved policy.
        self._rollout_tied_share = share_tied_at_best(returns, seen)
        if self._rollout_tied_share == 1.0:
            self._rollout_tied_at_best = True
            buffer.advantages = np.zeros_like(buffer.advantages)
        self._pool_returns = pooled(returns, self._pool_returns)[: self.pool_size]
        self._pool_time_outs = pooled(time_outs, self._pool_time_outs)[: self.pool_size]


def agent_class(pool: int = POOL, center: bool = False) -> type[ReturnPoolPPO]:
    """:class:`ReturnPoolPPO` ranking against ``pool`` returns, its weights centred or not: a class, as
    ``reproduce benchmarks`` builds its runs from one."""
    return type(ReturnPoolPPO.__name__, (ReturnPoolPPO,), {"pool_size": pool, "center": center})


def method_name(pool: int, center: bool = False) -> str:
    """The probe's method name for a pool of ``pool`` returns (``c``: centred), registered for its runs."""
    return f"og-cvar-pool{pool}{'c' if center else ''}"


def run(task: str, seed: int, timesteps: int, episodes: int, pool: int = POOL, center: bool = False) -> dict:
    """Train and score one seed as ``reproduce benchmarks`` does, OrderGradPPO patched to :class:`ReturnPoolPPO`
    with ``MEAN_N_EPISODES`` (16) episodes per rollout."""
    base = bench.METHODS["og-cvar"]
    kwargs = {**base.kwargs, "n_episodes": MEAN_N_EPISODES}
    label = f"16 new + {pool} pooled returns{', centred' if center else ''}"
    method = dataclasses.replace(base, label=label, kwargs=kwargs)
    return bench.run_with_agent(
        task, method, method_name(pool, center), agent_class(pool, center), seed, timesteps, episodes
    )


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=("cartpole", "acrobot", "lunarlander"), default="acrobot")
    parser.add_argument("--pool", type=int, default=POOL, help="returns of earlier rollouts to rank against")
    parser.add_argument("--center", action="store_true", help="centre the new episodes' weights")
    bench.add_probe_arguments(parser, timesteps=100_000)
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    timesteps, episodes = bench.probe_budget(args)
    return bench.run_seeds(
        lambda seed: run(args.task, seed, timesteps, episodes, args.pool, args.center), args.seeds, args.json, args.task
    )


if __name__ == "__main__":
    main()
