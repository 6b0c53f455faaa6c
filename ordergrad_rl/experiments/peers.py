"""OrderGrad-CVaR against the risk-sensitive peers: REINFORCE (mean), GCVaR (Tamar, Glassner and Mannor, 2015) and,
on the discrete lava grid, QR-DQN acting greedily on the CVaR of its quantiles (issue 13).

SyntheticTailRisk-v0: REINFORCE (``mean``), GCVaR_0.2 (``gcvar0.2``) and OrderGrad-CVaR_0.2 (``LowerTailMean:0.2``,
K = 128) with the protocol of ``reproduce tailrisk`` (tailrisk.Config: N = 256 episodes per update, 750 updates,
linear policy with zero-initialized output, fixed logit noise sigma = 0.35, Adam 0.003, clip 1.0, episode weights
divided by their batch standard deviation). Evaluated on SyntheticTailRiskDeploy-v0 (p = 0.35) with the
deterministic policy; the score of a path is its terminal log wealth log W_T (the training return).

RiskyLavaGrid-v0: the same three with the same protocol except the step size (Adam 0.03: the tabular softmax needs a
larger one, see Config.lava_learning_rate) and 16 envs, plus QRDQNCVaR (alpha = 0.2, 50 quantiles), every method
trained for the same number of env steps. Evaluated with the deterministic (greedy) policy; the slip keeps the
returns random.

Curves: the mean and CVaR_0.2 of the evaluation returns (``eval_episodes`` episodes on the same seeds for every
method) at ``evaluations`` points of training; the line is the mean over seeds, the band a 95% percentile bootstrap
over seeds (scipy). Final table: the same statistics on ``final_episodes`` other episodes per seed (and for the
portfolio the share of profitable paths and of paths below W_T = 0.9).

Gradient variance: at the initial policy of the portfolio protocol, ``variance_batches`` independent batches of N
episodes (the agent's own collector, learning rate 0), and on each batch the GCVaR estimate
``(1/N) sum_i w_i grad log p(tau_i)`` and OrderGrad-CVaR's (``k a_i`` as weights), unnormalized. Reported per
estimator: the share of episodes with a nonzero weight, the relative variance ``tr Cov(g) / |E g|^2`` and the
mean cosine between a batch's estimate and the mean estimate; and the cosine between the two mean directions.
``--variance-n`` repeats it at other N (K = N / 2), ``--variance-trained U`` also at the policy after U updates of
OrderGrad-CVaR training (``--variance-only``: no training runs); the grid's table also gives ``tr Cov(g)`` and the
ratio against the unbiased ``|E g|^2`` (see unbiased_relative_variance).

Seeds: seed s uses the seed block of ``reproduce tailrisk`` (training s * 10^6, evaluation + 700000, final
evaluation + 500000). The (env, method, seed) runs are independent jobs over the available cores (one torch thread
each). ``--quick``: the same code path with tiny budgets (CI, under a minute); its numbers mean nothing.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.jobs import Job, report_progress, run_jobs
from ordergrad_rl.common.options import add_output_arguments, positive_int
from ordergrad_rl.common.progress import available_cores
from ordergrad_rl.common.reports import interval_cell, markdown_table, pyplot, save_figure, write_json
from ordergrad_rl.experiments import tailrisk
from ordergrad_rl.experiments.tailrisk import DEPLOY_OFFSET, EVAL_OFFSET, Method, block_seed

LAVA_ENV = "RiskyLavaGrid-v0"
ALPHA = 0.2
#: The smallest N of the gradient-variance grid: GCVaR's tail is the ceil(ALPHA N) lowest returns, and at smaller N
#: it is one episode, the VaR itself, whose weight R - VaR is 0, so every GCVaR estimate is 0 (no direction).
MIN_VARIANCE_N = math.floor(1 / ALPHA) + 1

METHODS: dict[str, Method] = {
    "reinforce": Method("REINFORCE (mean)", "mean", "tab:red"),
    "gcvar": Method("GCVaR_0.2", "gcvar0.2", "tab:green"),
    "ordergrad_cvar": Method("OrderGrad-CVaR_0.2", "LowerTailMean:0.2", "tab:blue"),
    "qrdqn_cvar": Method("QR-DQN-CVaR_0.2", "cvar0.2", "tab:purple", "qrdqn"),
}
#: The methods of each env.
ENV_METHODS: dict[str, tuple[str, ...]] = {
    "tailrisk": ("reinforce", "gcvar", "ordergrad_cvar"),
    "lava": ("reinforce", "gcvar", "ordergrad_cvar", "qrdqn_cvar"),
}
ENV_TITLES = {
    "tailrisk": f"{tailrisk.TRAIN_ENV} -> {tailrisk.DEPLOY_ENV}, log W_T",
    "lava": f"{LAVA_ENV}, episode return",
}


@dataclass(frozen=True)
class Config:
    """Settings of one run (defaults: the full comparison)."""

    seeds: int = 5
    #: Portfolio: the paper's REINFORCE protocol (N, K and the number of updates as in ``reproduce tailrisk``).
    tailrisk_updates: int = 750
    n_episodes: int = 256
    k: int = 128
    #: Lava grid: env steps of every method.
    lava_steps: int = 100_000
    #: Adam step size on the lava grid. At the portfolio's 0.003 the tabular policy barely moves in 100k steps
    #: (measured: row-1 action probabilities still 0.6-0.9 after 200k steps at 0.01); 0.03 converges.
    lava_learning_rate: float = 0.03
    lava_n_envs: int = 16
    #: QR-DQN's steps before learning (its replay warm-up).
    qrdqn_learning_starts: int = 1000
    #: Evaluation points of a learning curve (plus the initial policy).
    evaluations: int = 20
    eval_episodes: int = 256
    final_episodes: int = 1024
    variance_batches: int = 200
    #: N of the gradient-variance grid (``--variance-n``); empty: no grid, only the measurement at ``n_episodes``.
    variance_n: tuple[int, ...] = ()
    #: OrderGrad-CVaR updates of the grid's trained policy (``--variance-trained``); 0: the initial policy only.
    variance_trained_updates: int = 0
    envs: tuple[str, ...] = tuple(ENV_METHODS)
    workers: int | None = None

    @staticmethod
    def quick() -> Config:
        """Tiny budgets on the same code path (a smoke test)."""
        return Config(
            seeds=2,
            tailrisk_updates=3,
            n_episodes=32,
            k=16,
            lava_steps=1500,
            qrdqn_learning_starts=200,
            evaluations=2,
            eval_episodes=16,
            final_episodes=32,
            variance_batches=4,
        )

    def protocol(self) -> tailrisk.Config:
        """The portfolio's REINFORCE protocol (``reproduce tailrisk``'s Config) at this run's budget."""
        return tailrisk.Config(updates=self.tailrisk_updates, n_episodes=self.n_episodes, k=self.k)

    def steps(self, env: str) -> int:
        """Env steps every method of ``env`` trains for."""
        if env == "tailrisk":
            return tailrisk.planned_steps("reinforce", self.protocol())
        return self.lava_steps


# ---------------------------------------------------------------------------------------------------- training
def make_model(env: str, method: str, seed: int, config: Config) -> Any:
    """The untrained model of ``method`` on ``env`` (seed block of ``seed``)."""
    from ordergrad_rl.agents import OrderGradREINFORCE, QRDQNCVaR

    base = block_seed(seed)
    if METHODS[method].algo == "qrdqn":
        return QRDQNCVaR(
            "MlpPolicy",
            LAVA_ENV,
            alpha=ALPHA,
            learning_starts=config.qrdqn_learning_starts,
            exploration_fraction=0.2,
            target_update_interval=1000,
            gamma=1.0,  # the episodic return, as the policy-gradient methods
            policy_kwargs=dict(n_quantiles=50, net_arch=[64, 64]),
            seed=base,
            device="cpu",
        )
    objective = METHODS[method].objective
    kwargs = config.protocol().reinforce_kwargs()
    if env == "lava":
        kwargs.update(n_envs=config.lava_n_envs, learning_rate=config.lava_learning_rate)
    if objective.startswith("LowerTailMean"):
        kwargs["k"] = config.k
    env_id = tailrisk.TRAIN_ENV if env == "tailrisk" else LAVA_ENV
    return OrderGradREINFORCE("MlpPolicy", env_id, objective=objective, seed=base, **kwargs)


def evaluation_returns(env: str, model: Any, n: int, seed: int) -> dict[str, Any]:
    """``n`` deterministic episodes of ``model`` (env ``i`` seeded ``seed + i``): ``{"returns": [n]}``, and for the
    portfolio the deployment metrics of ``reproduce tailrisk`` too."""
    if env == "tailrisk":
        deployment = tailrisk.deploy(model, n, seed)
        metrics = tailrisk.deployment_metrics(deployment)
        return {
            "returns": np.log(deployment.wealth[:, -1]),
            "profitable": metrics["profitable"],
            "below_0.9": metrics["below_0.9"],
        }
    from stable_baselines3.common.env_util import make_vec_env

    from ordergrad_rl.agents.common.evaluation import evaluate_episodes

    venv = make_vec_env(LAVA_ENV, n_envs=min(n, 16), seed=seed)
    returns, _ = evaluate_episodes(model, venv, n_eval_episodes=n, deterministic=True, return_episode_rewards=True)
    venv.close()
    return {"returns": np.asarray(returns, dtype=np.float64)}


def cvar(returns: np.ndarray, alpha: float = ALPHA) -> float:
    """Empirical CVaR_alpha: the mean of the lowest ``ceil(alpha n)`` returns (``ordergrad_rl.risk``'s)."""
    from ordergrad_rl.risk import risk_profile

    return risk_profile(returns, cvar_levels=(alpha,), quantile_levels=())[f"cvar_{alpha:g}"]


def train_run(env: str, method: str, seed: int, config: Config) -> dict[str, Any]:
    """Train one (env, method, seed) with evaluations along the way; the unit of parallel work.

    :return: ``{"env", "method", "seed", "curve": {"steps", "mean", "cvar"}, "final": {...}, "train_seconds"}``.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    base = block_seed(seed)
    total = config.steps(env)
    grid = np.linspace(0, total, config.evaluations + 1).round().astype(int)
    curve: dict[str, list[float]] = {"steps": [], "mean": [], "cvar": []}

    report = report_progress

    def evaluate(model: Any, at: int) -> None:
        returns = evaluation_returns(env, model, config.eval_episodes, base + EVAL_OFFSET)["returns"]
        curve["steps"].append(int(at))
        curve["mean"].append(float(np.mean(returns)))
        curve["cvar"].append(cvar(returns))

    class Curve(BaseCallback):
        """Evaluates at the start of the first rollout past each grid point (the policy trained on that many
        steps), and reports the env steps to the progress bar."""

        point, reported = 0, 0

        def _on_rollout_start(self) -> None:
            while self.point < len(grid) and self.num_timesteps >= grid[self.point]:
                evaluate(self.model, grid[self.point])
                self.point += 1

        def _on_step(self) -> bool:
            done = min(self.num_timesteps, total)
            if report is not None and done > self.reported:
                report(done - self.reported)
                self.reported = done
            return True

    start = time.perf_counter()
    model = make_model(env, method, seed, config)
    callback = Curve()
    model.learn(total, callback=callback)
    train_seconds = time.perf_counter() - start
    for at in grid[callback.point :]:  # the points the last rollout went past, and the end
        evaluate(model, at)
    final = evaluation_returns(env, model, config.final_episodes, base + DEPLOY_OFFSET)
    returns = final.pop("returns")
    final.update(mean=float(np.mean(returns)), cvar=cvar(returns))
    return {"env": env, "method": method, "seed": seed, "curve": curve, "final": final, "train_seconds": train_seconds}


def lava_outcomes(probs: np.ndarray, alpha: float = ALPHA) -> dict[str, float]:
    """Exact outcome distribution of a stationary policy on RiskyLavaGrid-v0 (defaults, 30-step limit), by forward
    propagation of the state distribution through ``env.P``.

    :param probs: ``[15, 4]`` action probabilities per cell (a one-hot table for a deterministic policy).
    :return: ``{"goal", "lava", "timeout"}`` probabilities, the exact ``mean`` and ``cvar`` (level ``alpha``) of the
        return. A return is fixed by the outcome and the length L: goal 10 - L, lava -15 - L, timeout -30.
    """
    from ordergrad_rl.envs.grid import MOVES
    from ordergrad_rl.envs.lava_grid import RiskyLavaGridEnv

    env = RiskyLavaGridEnv()  # LAVA_ENV's defaults, and its registered time limit
    horizon = env.max_episode_steps
    probs = np.asarray(probs, dtype=np.float64)
    n = len(env.cells)
    shape = (n, len(MOVES))
    if probs.shape != shape:
        raise ValueError(f"probs must have shape {shape}, got {probs.shape}")
    if not (np.all(probs >= 0) and np.allclose(probs.sum(axis=1), 1.0)):
        raise ValueError("probs must hold a probability distribution over the actions in every row")
    # move[s, a, s2]: transition probability; reward[s, a, s2] and terminal[s2] are fixed by the target cell.
    move, ends = np.zeros((n, shape[1], n)), np.zeros(n, dtype=bool)
    for state, actions in env.P.items():
        for action, outcomes in actions.items():
            for prob, nxt, _, terminated in outcomes:
                move[state, action, nxt] += prob
                ends[nxt] |= terminated
    step = np.einsum("sa,sat->st", probs, move)
    goal = np.array([cell == "G" for cell in env.cells])
    occupancy = np.zeros(n)
    occupancy[env.start_state] = 1.0
    values, masses = [], []
    for length in range(1, horizon + 1):
        occupancy = occupancy @ step
        for cells, value in ((goal, 10.0 - length), (ends & ~goal, -15.0 - length)):
            values.append(value)
            masses.append(occupancy[cells].sum())
        occupancy = np.where(ends, 0.0, occupancy)
    values.append(-float(horizon))
    masses.append(occupancy.sum())
    values_arr, masses_arr = np.array(values), np.array(masses)
    order = np.argsort(values_arr, kind="stable")
    values_arr, masses_arr = values_arr[order], masses_arr[order]
    # CVaR_alpha of a discrete distribution: the mean of the lowest alpha probability mass.
    below = np.minimum(masses_arr, np.maximum(alpha - (np.cumsum(masses_arr) - masses_arr), 0.0))
    return {
        "goal": float(np.sum(masses[0:-1:2])),
        "lava": float(np.sum(masses[1:-1:2])),
        "timeout": float(masses[-1]),
        "mean": float(values_arr @ masses_arr),
        "cvar": float(values_arr @ below / alpha),
    }


# ---------------------------------------------------------------------------------------------------- variance
def gradient_variance(
    config: Config, n_episodes: int | None = None, policy_state: dict[str, Any] | None = None, seed: int = 0
) -> dict[str, Any]:
    """GCVaR vs OrderGrad-CVaR gradient estimates on the same batches of ``n_episodes`` (default ``config``'s N;
    OrderGrad's K = N / 2, the protocol's ratio) at a fixed portfolio policy: the initial one, or the policy
    ``policy_state`` (a ``state_dict`` of the protocol's policy). See the module docstring. ``{"n_episodes", "k",
    "batches", "cos_between_means", method: {"nonzero", "relative_variance", "mean_cosine", "mean_norm",
    "mean_direction"}}``, ``mean_direction`` the unit mean estimate."""
    import torch as th
    from stable_baselines3.common.callbacks import BaseCallback

    from ordergrad_rl.agents import OrderGradREINFORCE
    from ordergrad_rl.core.gcvar import gcvar_weights

    n = config.n_episodes if n_episodes is None else n_episodes
    k = config.k if n == config.n_episodes else n // 2
    # Step size 0: the policy stays the given one; the raw (unnormalized) weights are the estimators.
    kwargs = {
        **dataclasses.replace(config, n_episodes=n, k=k).protocol().reinforce_kwargs(),
        "learning_rate": 0.0,
        "normalize_advantage": False,
    }
    model = OrderGradREINFORCE(
        "MlpPolicy",
        tailrisk.TRAIN_ENV,
        objective=METHODS["ordergrad_cvar"].objective,
        k=k,
        seed=block_seed(seed, 900_000),
        **kwargs,
    )
    policy = model.policy
    if policy_state is not None:
        policy.load_state_dict(policy_state)
    params = [p for p in policy.parameters() if p.requires_grad]
    estimates: dict[str, list[np.ndarray]] = {"gcvar": [], "ordergrad_cvar": []}
    nonzero: dict[str, list[float]] = {"gcvar": [], "ordergrad_cvar": []}

    class Estimates(BaseCallback):
        def _on_step(self) -> bool:
            return True

        def _on_rollout_end(self) -> None:
            buffer = model.rollout_buffer
            returns = buffer.episode_returns
            obs = th.as_tensor(buffer.observations)
            actions = th.as_tensor(buffer.actions)
            log_prob = policy.get_distribution(obs).log_prob(actions)
            per_episode = th.zeros(len(returns), dtype=log_prob.dtype).index_add(
                0, th.as_tensor(buffer.episode_index), log_prob
            )
            weights = {"gcvar": gcvar_weights(returns, ALPHA), "ordergrad_cvar": model.episode_weights(returns)}
            for name, w in weights.items():
                loss = (th.as_tensor(w, dtype=per_episode.dtype) * per_episode).mean()
                grads = th.autograd.grad(loss, params, retain_graph=True, allow_unused=True)
                flat = [g.reshape(-1) for g in grads if g is not None]
                estimates[name].append(th.cat(flat).detach().numpy().astype(np.float64))
                nonzero[name].append(float(np.mean(w != 0)))

    venv = model.get_env()
    assert venv is not None  # the model built it from TRAIN_ENV
    decisions = int(venv.get_attr("num_decisions")[0])
    model.learn(config.variance_batches * n * decisions, callback=Estimates())
    out: dict[str, Any] = {"n_episodes": n, "k": k, "batches": len(estimates["gcvar"])}
    means = {}
    for name, values in estimates.items():
        g = np.stack(values)
        mean = g.mean(axis=0)
        means[name] = mean
        cosines = g @ mean / (np.linalg.norm(g, axis=1) * np.linalg.norm(mean) + 1e-300)
        out[name] = {
            "nonzero": float(np.mean(nonzero[name])),
            "relative_variance": float(np.trace(np.atleast_2d(np.cov(g.T))) / (mean @ mean)),
            "mean_cosine": float(np.mean(cosines)),
            "mean_norm": float(np.linalg.norm(mean)),
            "mean_direction": mean / np.linalg.norm(mean),
        }
    a, b = means["gcvar"], means["ordergrad_cvar"]
    out["cos_between_means"] = float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    return out


def trained_policy(config: Config, updates: int, seed: int = 0) -> tuple[dict[str, Any], dict[str, float]]:
    """The portfolio protocol's OrderGrad-CVaR policy after ``updates`` updates (the first ``updates`` of seed
    ``seed``'s training run), and its deployment (``tailrisk.deploy``, ``eval_episodes`` paths): ``(state_dict,
    {"profitable", "below_0.9", "cvar"})``."""
    config = dataclasses.replace(config, tailrisk_updates=updates)
    model = make_model("tailrisk", "ordergrad_cvar", seed, config)
    model.learn(config.steps("tailrisk"))
    final = evaluation_returns("tailrisk", model, config.eval_episodes, block_seed(seed, DEPLOY_OFFSET))
    deployment = {"profitable": final["profitable"], "below_0.9": final["below_0.9"], "cvar": cvar(final["returns"])}
    return model.policy.state_dict(), deployment


def variance_grid(config: Config, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """:func:`gradient_variance` at every N of ``config.variance_n`` on the initial policy and, with
    ``config.variance_trained_updates``, on the trained policy (:func:`trained_policy`). Each result also gets
    ``cos_to_reference`` per estimator: the cosine of its mean to the reference direction of its policy, the
    normalized sum of both estimators' unit means at the largest N (the best available stand-in for the exact CVaR
    gradient, which neither estimator targets exactly at finite N).

    :param initial: an already measured result at the initial policy and ``config.n_episodes``, reused.
    :return: ``{"policies": {"initial": {str(N): result}, "trained": {...}}, "trained_deployment": {...}}``.
    """
    out: dict[str, Any] = {"policies": {}}
    states: dict[str, dict[str, Any] | None] = {"initial": None}
    if config.variance_trained_updates:
        states["trained"], out["trained_deployment"] = trained_policy(config, config.variance_trained_updates)
        out["trained_updates"] = config.variance_trained_updates
    for name, state in states.items():
        results: dict[str, dict[str, Any]] = {}
        for n in sorted(config.variance_n or (config.n_episodes,)):
            if name == "initial" and initial is not None and n == initial["n_episodes"]:
                results[str(n)] = initial  # reused
            else:
                results[str(n)] = gradient_variance(config, n, state)
        largest = results[str(max(config.variance_n or (config.n_episodes,)))]
        reference = largest["gcvar"]["mean_direction"] + largest["ordergrad_cvar"]["mean_direction"]
        reference = reference / np.linalg.norm(reference)
        for result in results.values():
            for method in ("gcvar", "ordergrad_cvar"):
                result[method]["cos_to_reference"] = float(result[method]["mean_direction"] @ reference)
        out["policies"][name] = results
    return out


# ---------------------------------------------------------------------------------------------------- experiment
def bootstrap_ci(values: np.ndarray, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """95% percentile-bootstrap CI of the mean over axis 0 (the seeds); the mean itself with fewer than 2 seeds."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) < 2 or np.all(values == values[0]):
        mean = values.mean(axis=0)
        return mean, mean
    from scipy.stats import bootstrap

    ci = bootstrap(
        (values,), np.mean, axis=0, vectorized=True, n_resamples=2000, method="percentile", random_state=seed
    ).confidence_interval
    return ci.low, ci.high


def summarize(runs: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    """Per env and method: the curves (mean over seeds and CI) and the final statistics (per seed, mean, CI)."""
    out: dict[str, Any] = {}
    for env in config.envs:
        out[env] = {"steps": config.steps(env)}
        for method in ENV_METHODS[env]:
            mine = sorted((r for r in runs if r["env"] == env and r["method"] == method), key=lambda r: r["seed"])
            summary: dict[str, Any] = {"curve": {"steps": mine[0]["curve"]["steps"]}, "final": {}}
            for stat in ("mean", "cvar"):
                values = np.array([r["curve"][stat] for r in mine])
                low, high = bootstrap_ci(values)
                summary["curve"][stat] = {"mean": values.mean(axis=0), "low": low, "high": high, "per_seed": values}
            for stat in mine[0]["final"]:
                values = np.array([r["final"][stat] for r in mine])
                low, high = bootstrap_ci(values)
                summary["final"][stat] = {
                    "mean": float(values.mean()),
                    "low": float(low),
                    "high": float(high),
                    "per_seed": values,
                }
            summary["train_seconds"] = [r["train_seconds"] for r in mine]
            out[env][method] = summary
    return out


def run_experiment(config: Config, quiet: bool = False) -> dict[str, Any]:
    """Every (env, method, seed) run in parallel, then the gradient-variance measurement (with the portfolio or no
    env at all), and its grid over N and policies if ``config.variance_n`` or ``config.variance_trained_updates``."""

    jobs = [
        Job(
            f"{env}_{method}_seed{seed}",
            train_run,
            {"env": env, "method": method, "seed": seed, "config": config},
            weight=config.steps(env),
        )
        for env in config.envs
        for seed in range(config.seeds)
        for method in ENV_METHODS[env]
    ]
    results_by_id = (
        run_jobs(jobs, config.workers, desc=f"training {len(jobs)} runs", unit="step", quiet=quiet) if jobs else {}
    )
    runs = [results_by_id[job.id] for job in jobs]
    results: dict[str, Any] = {"config": dataclasses.asdict(config), "envs": summarize(runs, config)}
    if "tailrisk" in config.envs or not config.envs:
        start = time.perf_counter()
        results["gradient_variance"] = gradient_variance(config)
        results["gradient_variance"]["seconds"] = time.perf_counter() - start
        if config.variance_n or config.variance_trained_updates:
            results["variance_grid"] = variance_grid(config, results["gradient_variance"])
            results["variance_grid"]["seconds"] = time.perf_counter() - start
    return results


# ---------------------------------------------------------------------------------------------------- reporting
def _ci(stat: dict[str, Any], fmt: Callable[[float], str]) -> str:
    return interval_cell(stat["low"], stat["high"], len(stat["per_seed"]), stat["mean"], fmt)


def format_table(results: dict[str, Any]) -> str:
    """One row per (env, method): final mean and CVaR_0.2 (mean over seeds [95% CI]); portfolio shares."""
    rows = []
    for env, summary in results["envs"].items():
        for method in ENV_METHODS[env]:
            final = summary[method]["final"]
            number = "{:.3f}".format
            share = "{:.1%}".format
            rows.append(
                [env, METHODS[method].label, _ci(final["mean"], number), _ci(final["cvar"], number)]
                + [_ci(final[s], share) if s in final else "-" for s in ("profitable", "below_0.9")]
            )
    headers = ["env", "method", "mean return", "CVaR_0.2", "profitable W_T > 1", "W_T < 0.9"]
    return markdown_table(headers, rows)


def format_variance(variance: dict[str, Any]) -> str:
    """The gradient-variance comparison as a table."""
    rows = [
        [
            METHODS[name].label,
            f"{variance[name]['nonzero']:.1%}",
            variance[name]["relative_variance"],
            variance[name]["mean_cosine"],
        ]
        for name in ("gcvar", "ordergrad_cvar")
    ]
    headers = ["estimator", "episodes with a nonzero weight", "tr Cov(g) / norm(E g)^2", "mean cos(g, E g)"]
    return markdown_table(headers, rows)


def unbiased_relative_variance(result: dict[str, Any], name: str) -> tuple[float | None, float]:
    """``(tr Cov(g) / |E g|^2, noise share)`` of estimator ``name`` in a :func:`gradient_variance` result, with
    ``|E g|^2`` estimated without bias as ``|mean|^2 - tr Cov / B`` over the B batches (the plain ratio divides by
    ``|mean|^2``, which noise inflates). The noise share is ``tr Cov / (B |mean|^2)``; at 1 or more the mean is not
    resolved and the ratio is ``None``."""
    stats = result[name]
    squared = stats["mean_norm"] ** 2
    trace = stats["relative_variance"] * squared
    noise = trace / result["batches"]
    return (trace / (squared - noise) if squared > noise else None), noise / squared


def format_variance_grid(grid: dict[str, Any]) -> str:
    """The grid over policies and N as a table, one row per (policy, N, estimator)."""
    rows = []
    for policy, results in grid["policies"].items():
        for n, result in results.items():
            for name in ("gcvar", "ordergrad_cvar"):
                relative, noise = unbiased_relative_variance(result, name)
                stats = result[name]
                trace = stats["relative_variance"] * stats["mean_norm"] ** 2
                rows.append(
                    [policy, n, METHODS[name].label, f"{stats['nonzero']:.1%}", f"{trace:.3g}"]
                    + ["not resolved" if relative is None else f"{relative:.3g}", f"{noise:.2f}"]
                    + [stats["mean_cosine"], stats["cos_to_reference"], result["cos_between_means"]]
                )
    headers = [
        "policy",
        "N",
        "estimator",
        "nonzero weights",
        "tr Cov(g)",
        "tr Cov(g) / norm(E g)^2",
        "noise share of norm(mean)^2",
        "mean cos(g, mean)",
        "cos(mean, reference)",
        "cos between the means",
    ]
    return markdown_table(headers, rows)


def plot(results: dict[str, Any], path: Path) -> Path:
    """Learning curves: rows = envs, columns = mean and CVaR_0.2 of the evaluation returns; bands = 95% CIs."""
    plt = pyplot()
    envs = list(results["envs"])
    fig, axes = plt.subplots(len(envs), 2, figsize=(12, 3.8 * len(envs)), squeeze=False)
    for row, env in zip(axes, envs, strict=True):
        summary = results["envs"][env]
        for ax, stat, name in ((row[0], "mean", "mean"), (row[1], "cvar", "CVaR_0.2")):
            for method in ENV_METHODS[env]:
                curve = summary[method]["curve"]
                x = np.asarray(curve["steps"], dtype=float)
                if env == "tailrisk":  # every portfolio episode has the same number of decisions
                    x = x * results["config"]["n_episodes"] * results["config"]["tailrisk_updates"] / summary["steps"]
                color, label = METHODS[method].color, METHODS[method].label
                ax.plot(x, curve[stat]["mean"], color=color, label=label)
                ax.fill_between(x, curve[stat]["low"], curve[stat]["high"], color=color, alpha=0.2, lw=0)
            ax.set(
                xlabel="training episodes" if env == "tailrisk" else "env steps",
                ylabel=f"{name} of the return",
                title=f"{ENV_TITLES[env]}: {name}",
            )
        row[0].legend(fontsize=8)
    seeds = results["config"]["seeds"]
    fig.suptitle(f"Deterministic evaluation during training, mean over {seeds} seeds, 95% bootstrap CI")
    fig.tight_layout()
    return save_figure(fig, path)


# ---------------------------------------------------------------------------------------------------- command
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl reproduce peers``."""
    default = Config()
    parser.add_argument(
        "--seeds", type=positive_int, default=default.seeds, metavar="S", help="training seeds (default: %(default)s)"
    )
    parser.add_argument(
        "--envs", nargs="+", choices=list(ENV_METHODS), default=list(default.envs), help="envs (default: both)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny budgets on the same code path, at most 2 seeds (a smoke test; numbers mean nothing)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help=f"parallel training runs (default: the available cores, here {available_cores()})",
    )
    parser.add_argument(
        "--variance-n",
        nargs="+",
        type=positive_int,
        default=[],
        metavar="N",
        help=f"also measure the gradient variance at these N >= {MIN_VARIANCE_N} (K = N / 2), e.g. 32 64 256 1024",
    )
    parser.add_argument(
        "--variance-trained",
        type=positive_int,
        default=0,
        metavar="U",
        help="also measure it at the portfolio policy after U updates of OrderGrad-CVaR training",
    )
    parser.add_argument(
        "--variance-only", action="store_true", help="no training runs: only the gradient-variance measurements"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "peers")


def check_options(args: argparse.Namespace) -> None:
    """Refuse options that would be ignored: the training runs' with ``--variance-only`` (it trains none), and the
    gradient-variance grid's without the portfolio (it is measured there).

    :raises CommandError: naming them.
    """
    default = Config()
    if args.variance_only:
        given = {"--seeds": args.seeds != default.seeds, "--envs": args.envs != list(default.envs)}
        given["--workers"] = args.workers is not None
        named = " ".join(flag for flag, is_given in given.items() if is_given)
        if named:
            raise CommandError(f"--variance-only trains no runs, which {named} would set: drop it or --variance-only")
    elif "tailrisk" not in args.envs and (args.variance_n or args.variance_trained):
        raise CommandError(
            "--variance-n and --variance-trained measure the gradient variance on the portfolio: add tailrisk to "
            "--envs, or give --variance-only"
        )


def run(args: argparse.Namespace) -> int:
    """Train, evaluate, print the tables, write the figure (and JSON)."""
    check_options(args)
    start = time.perf_counter()
    base = Config.quick() if args.quick else Config()
    config = dataclasses.replace(
        base,
        seeds=args.seeds if not args.quick else min(args.seeds, base.seeds),
        envs=() if args.variance_only else tuple(args.envs),
        workers=args.workers,
        variance_n=tuple(args.variance_n),
        variance_trained_updates=args.variance_trained,
    )
    if any(n < MIN_VARIANCE_N for n in config.variance_n):
        raise CommandError(
            f"--variance-n needs N >= {MIN_VARIANCE_N} (below it GCVaR_{ALPHA}'s tail is one episode, the VaR itself, "
            f"and all its weights are 0), got {list(config.variance_n)}"
        )
    results = run_experiment(config, quiet=args.quiet)
    if config.envs:
        print(
            f"Risk-sensitive peers, {config.seeds} seeds. Portfolio: the tailrisk protocol, {config.tailrisk_updates} "
            f"updates of {config.n_episodes} episodes, K = {config.k}. Lava grid: {config.lava_steps} env steps per "
            f"method. Final evaluation: {config.final_episodes} deterministic episodes per seed; mean over seeds "
            "[95% bootstrap CI].\n"
        )
        print(format_table(results))
    if "gradient_variance" in results:
        variance = results["gradient_variance"]
        print(
            f"\nGradient estimates at the initial portfolio policy, {variance['batches']} batches of "
            f"N = {variance['n_episodes']} episodes (the same batches for both); cosine between the two mean "
            f"directions: {variance['cos_between_means']:.3f}\n"
        )
        print(format_variance(variance))
    if "variance_grid" in results:
        grid = results["variance_grid"]
        trained = ""
        if "trained" in grid["policies"]:
            deployed = grid["trained_deployment"]
            trained = (
                f"; trained: after {grid['trained_updates']} OrderGrad-CVaR updates (deployed: "
                f"{deployed['profitable']:.1%} profitable, CVaR_0.2 of log W_T {deployed['cvar']:.3f})"
            )
        print(
            f"\nGradient estimates over N and policies ({config.variance_batches} batches each; policies: initial"
            f"{trained}); tr Cov / norm(E g)^2 with norm(E g)^2 estimated without bias (peers.unbiased_relative_"
            "variance); reference: the normalized sum of both unit mean directions at the largest N\n"
        )
        print(format_variance_grid(grid))
    results["figures"] = {"curves": plot(results, args.out / "peers_curves.png")} if config.envs else {}
    results["wall_seconds"] = time.perf_counter() - start
    print(f"\ntime: {results['wall_seconds']:.0f} s")
    for path in results["figures"].values():
        print(f"figure: {path}")
    if args.json is not None:
        print(f"json: {write_json(args.json, results)}")
    return 0
