"""Benchmark of the scoring paths (risk profiles, pass@k, the exact tabular scores), each against a baseline timed
in the same run.

    python scripts/bench_scoring.py [--repeats 20] [--quick]

One thread:

* the risk profile of a rollout's 256 returns (:func:`~ordergrad_rl.risk.risk_profile`, plain and with the noise
  sampler's likelihood ratios) against one ``np.sort`` of them, and its logging
  (:func:`~ordergrad_rl.agents.common.risk_logging.record_risk_profile`) against what SB3 logs of the same rollout
  (``rollout/ep_rew_mean``, ``safe_mean`` of the returns);
* the pass@k curve of 100 problems with ``n = 1024`` samples (:func:`~ordergrad_rl.passk.pass_at_k_curve`, ``k = 1,
  2, 4, ..., 1024``) against the Codex estimator ``1 - C(n - c, k) / C(n, k)`` written in NumPy with ``gammaln``
  (the script checks that they agree);
* the exact score of a policy on a tabular benchmark env (:func:`~ordergrad_rl.envs.tabular.propagate`, the uniform
  policy; ``RiskyLavaGrid-v0``, and ``GuardedMaze-v0`` without ``--quick``) and the CVaR-optimal DP
  (:func:`~ordergrad_rl.envs.tabular.cvar_optimum`, the lava grid) against the mean's value iteration on the same
  MDP (:func:`~ordergrad_rl.envs.tabular.mean_optimum`).

Machines are noisy: the ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
from functools import partial

import gymnasium as gym
import numpy as np
from scipy.special import gammaln
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import safe_mean

import ordergrad_rl  # noqa: F401  (registers the envs)
from ordergrad_rl.agents.common.risk_logging import record_risk_profile
from ordergrad_rl.common.options import parse_quick_args, positive_int
from ordergrad_rl.common.reports import best_time, ratio_header, ratio_row
from ordergrad_rl.envs.tabular import cvar_optimum, mean_optimum, propagate
from ordergrad_rl.experiments.benchmarks import tabular_model
from ordergrad_rl.passk import default_ks, pass_at_k_curve
from ordergrad_rl.risk import risk_profile

N_EPISODES = 256
PROBLEMS, SAMPLES = 100, 1024
TABULAR_ENVS = ("RiskyLavaGrid-v0", "GuardedMaze-v0")


def codex_pass_at_k(n_correct: np.ndarray, n: int, ks: np.ndarray) -> np.ndarray:
    """``[len(ks)]`` mean over problems of ``1 - C(n - c, k) / C(n, k)``, in log space (1 where ``k > n - c``)."""
    c, k = n_correct[:, None], ks[None, :]
    failing = np.maximum(n - c - k, 0)  # n - c - k, where the ratio is not 0
    log_ratio = gammaln(n - c + 1) - gammaln(failing + 1) - gammaln(n + 1) + gammaln(n - k + 1)
    return np.where(n - c >= k, 1.0 - np.exp(log_ratio), 1.0).mean(axis=0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=positive_int, default=20)
    parser.add_argument("--skip-maze", action="store_true", help="skip GuardedMaze-v0's exact score (about 1 s)")
    args = parse_quick_args(parser, argv, {"repeats": 1, "skip_maze": True})
    rng = np.random.default_rng(0)
    repeats = args.repeats
    ratio_header()

    returns, rho = rng.normal(size=N_EPISODES), rng.lognormal(size=N_EPISODES)
    many = 50 * repeats  # microseconds each: more calls for a stable best
    sort = best_time(lambda: np.sort(returns), many)
    base = f"np.sort {N_EPISODES}"
    ratio_row(f"np.sort of {N_EPISODES} returns (baseline)", sort, sort, base)
    ratio_row(f"risk_profile, {N_EPISODES} returns", best_time(lambda: risk_profile(returns), many), sort, base)
    weighted = best_time(lambda: risk_profile(returns, weights=rho), many)
    ratio_row(f"risk_profile, {N_EPISODES} returns, likelihood ratios", weighted, sort, base)
    logger = Logger(folder=None, output_formats=[])
    sb3 = best_time(lambda: logger.record("rollout/ep_rew_mean", safe_mean(returns)), many)
    ours = best_time(lambda: record_risk_profile(logger, "risk", returns), many)
    base = "SB3 ep_rew_mean"
    ratio_row(f"SB3 rollout/ep_rew_mean, {N_EPISODES} returns (baseline)", sb3, sb3, base)
    ratio_row(f"record_risk_profile, {N_EPISODES} returns", ours, sb3, base)

    n_correct, ks = rng.integers(0, SAMPLES + 1, size=PROBLEMS), default_ks(SAMPLES)
    curve = pass_at_k_curve(n_correct, SAMPLES, ks)
    np.testing.assert_allclose(list(curve.values()), codex_pass_at_k(n_correct, SAMPLES, ks), rtol=0, atol=1e-9)
    codex = best_time(lambda: codex_pass_at_k(n_correct, SAMPLES, ks), repeats)
    ours = best_time(lambda: pass_at_k_curve(n_correct, SAMPLES, ks), repeats)
    base = "Codex gammaln"
    ratio_row(f"Codex pass@k, {PROBLEMS} problems, n={SAMPLES} (baseline)", codex, codex, base)
    ratio_row(f"pass_at_k_curve, {PROBLEMS} problems, n={SAMPLES}", ours, codex, base)

    for env_id in TABULAR_ENVS[:1] if args.skip_maze else TABULAR_ENVS:
        mdp = tabular_model(gym.make(env_id).unwrapped)
        uniform = np.full((mdp.n_states, mdp.n_actions), 1.0 / mdp.n_actions)
        mean_dp = best_time(partial(mean_optimum, mdp), repeats)
        base = "value iteration"
        ratio_row(f"mean_optimum, {env_id} (baseline)", mean_dp, mean_dp, base)
        exact = best_time(partial(propagate, mdp, uniform), max(1, repeats // 10))
        ratio_row(f"propagate uniform policy, {env_id}", exact, mean_dp, base)
        if env_id == TABULAR_ENVS[0]:
            optimum = best_time(partial(cvar_optimum, mdp, 0.2), max(1, repeats // 10))
            ratio_row(f"cvar_optimum 0.2, {env_id}", optimum, mean_dp, base)


if __name__ == "__main__":
    main()
