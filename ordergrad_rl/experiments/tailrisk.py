"""High-yield tail-risk portfolio: REINFORCE vs OrderGrad-CVaR (paper App. portfolio example, Fig. tailrisk-toy,
Table tailrisk-toy-metrics), and the same comparison with OrderGradPPO at its defaults (--algo ppo or both).

Training: OrderGradREINFORCE on SyntheticTailRisk-v0 (disaster probability p = 0.10, 80 traded days, 16 decisions),
N = 256 episodes per update (256 batched envs, one episode each), 750 updates, Adam lr 0.003, gradient-norm clip
1.0, a linear policy (14 features -> 4 logits) whose output layer starts at zero, fixed Gaussian logit noise
sigma = 0.35. Score of an episode: terminal log wealth log W_T.
  * REINFORCE: objective "mean", the episode weights standardized within the batch;
  * OrderGrad-CVaR: objective LowerTailMean:0.2 with K = 128 (the mean of the worst 20% of 128 of the 256 returns,
    in expectation over subsets), the OrderGrad advantages divided by their batch standard deviation.
With --algo ppo (or both): OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective=...) with every other
argument at its default, learn(200_000) (--ppo-timesteps): the usage line of the README, objectives "mean" and
"cvar0.2".
Deployment: SyntheticTailRiskDeploy-v0 (p = 0.35, 160 traded days) with the deterministic (mean-logit) policy,
256 paths per seed; both methods of a seed see the same 256 paths. --stress also deploys at the disaster
probabilities p in {0, 0.1, 0.2, 0.35, 0.5, 0.65} (the same paths: a path's disaster switches on as p grows).

Metrics (over the 256 x seeds paths of a method): mean return = mean(W_T - 1); profitable = P(W_T > 1); P(W_T < 0.9);
P(MDD > 20%) and mean MDD (maximum daily drawdown, <= 0); the average applied weight of each asset over decisions
and paths; the 10th percentile (Hazen) of log W_T; daily 5% CVaR = the mean of the worst 5% of all daily portfolio
returns (net of costs).

Seeds: seed s trains with model/env seed s * 10^6 (env i of the batch is seeded s * 10^6 + i, SB3's convention),
evaluates during training on s * 10^6 + 700000 + i and deploys on s * 10^6 + 500000 + i, so different seeds never
share episodes. The (method, seed) runs are independent jobs spread over the available cores (one torch thread
each), or over a Ray cluster with --address (ordergrad_rl.common.jobs); the results do not depend on the number of
workers nor on where the jobs run.

Outputs: the table beside the paper's numbers, tailrisk.png (the 4-panel figure), tailrisk_stress.png (--stress),
the trained models (<out>/models/<method>_seed<s>.zip, for ordergrad-rl evaluate / compare), TensorBoard runs
<tensorboard>/<method>/seed<s>_1 (one parent directory per method; risk/* of the training batches, eval_risk/*
and eval_info/* of 64 deterministic deployment episodes every 50 updates and at the end) with --tensorboard, with
the dashboards of `ordergrad-rl dashboard` (<method>/mean_over_seeds: the mean and range over seeds; HParams with
objective and k first), and the numbers with --json. Each finished (method, seed) run is stored in <out>/runs
(its settings, training time and deployment paths, exact; ordergrad_rl.common.jobs.RunCache): with --resume, a
reproduction cut short (Ctrl-C, a crash, a killed job) trains only the runs not stored there and prints the same
tables and JSON as one that ran through (--resume refuses runs stored with other settings: other sizes, --stress or
--tensorboard; it trains again, naming them, the runs stored by another ordergrad-rl version or run format, or by a
release that did not record them: RUN_FORMAT). Without --resume, a rerun trains every run again, replacing its
model, stored run and TensorBoard run.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.jobs import (
    Job,
    RunCache,
    code_release,
    other_code,
    report_interrupted,
    report_other_code,
    report_progress,
)
from ordergrad_rl.common.jobs import run_jobs as run_grid
from ordergrad_rl.common.options import (
    add_address_argument,
    add_output_arguments,
    add_quick_argument,
    apply_quick,
    check_address_arguments,
    positive_int,
)
from ordergrad_rl.common.progress import available_cores, rollout_progress
from ordergrad_rl.common.reports import markdown_table, print_checks, pyplot, save_figure, write_json
from ordergrad_rl.envs.tailrisk import ASSET_NAMES
from ordergrad_rl.risk import risk_profile
from ordergrad_rl.zoo.dashboards import tensorboard_command, write_dashboards
from ordergrad_rl.zoo.training import remove_runs

if TYPE_CHECKING:  # pragma: no cover
    from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE


TRAIN_ENV = "SyntheticTailRisk-v0"
DEPLOY_ENV = "SyntheticTailRiskDeploy-v0"
STRESS_P: tuple[float, ...] = (0.0, 0.10, 0.20, 0.35, 0.50, 0.65)
#: Seed s uses the seed block [s * SEED_STRIDE, (s + 1) * SEED_STRIDE): training, deployment and evaluation envs.
SEED_STRIDE = 1_000_000


def block_seed(seed: int, offset: int = 0) -> int:
    """Seed ``offset`` of seed ``seed``'s block: ``seed * SEED_STRIDE + offset`` (``0 <= offset < SEED_STRIDE``)."""
    return seed * SEED_STRIDE + offset


DEPLOY_OFFSET = 500_000
EVAL_OFFSET = 700_000


@dataclass(frozen=True)
class Method:
    """A training objective and algorithm of the comparison."""

    label: str
    objective: str
    color: str
    #: ``"reinforce"``: OrderGradREINFORCE with the paper's protocol; ``"ppo"``: OrderGradPPO at its defaults.
    algo: str = "reinforce"


METHODS: dict[str, Method] = {
    "reinforce": Method("REINFORCE", "mean", "tab:red"),
    "ordergrad_cvar": Method("OrderGrad-CVaR", "LowerTailMean:0.2", "tab:blue"),
    "ppo_mean": Method("PPO mean", "mean", "tab:orange", "ppo"),
    "ppo_cvar": Method("OrderGradPPO-CVaR", "cvar0.2", "tab:cyan", "ppo"),
}
#: ``--algo`` choices: the methods each one runs.
ALGO_METHODS: dict[str, tuple[str, ...]] = {
    "reinforce": ("reinforce", "ordergrad_cvar"),
    "ppo": ("ppo_mean", "ppo_cvar"),
    "both": tuple(METHODS),
}

#: The paper's numbers (Table tailrisk-toy-metrics and the "Result" paragraph), as fractions. The paper does not
#: state the balanced weight.
PAPER: dict[str, dict[str, Any]] = {
    "reinforce": {
        "mean_return": 0.146,
        "profitable": 0.647,
        "below_0.9": 0.342,
        "mdd_over_20": 0.354,
        "mean_mdd": -0.189,
        "p10_log_return": -0.429,
        "daily_cvar_5": -0.0321,
        "weights": {"high_yield_tailrisk": 0.702, "defensive_hedge": 0.151, "cash": 0.016},
    },
    "ordergrad_cvar": {
        "mean_return": 0.107,
        "profitable": 0.995,
        "below_0.9": 0.0,
        "mdd_over_20": 0.0,
        "mean_mdd": -0.022,
        "p10_log_return": 0.046,
        "daily_cvar_5": -0.0057,
        "weights": {"high_yield_tailrisk": 0.160, "defensive_hedge": 0.592, "cash": 0.022},
    },
}

#: Scalar metrics of a deployment, in table order.
METRICS: tuple[str, ...] = (
    "mean_return",
    "profitable",
    "below_0.9",
    "mdd_over_20",
    "mean_mdd",
    "p10_log_return",
    "daily_cvar_5",
)


@dataclass(frozen=True)
class Config:
    """Settings of one reproduction (defaults: the paper's protocol)."""

    seeds: int = 5
    #: Methods to run (keys of METHODS).
    methods: tuple[str, ...] = ALGO_METHODS["reinforce"]
    updates: int = 750
    #: Env steps of each OrderGradPPO run (the README's usage line).
    ppo_timesteps: int = 200_000
    n_episodes: int = 256
    k: int = 128
    learning_rate: float = 3e-3
    max_grad_norm: float = 1.0
    sigma: float = 0.35
    deploy_paths: int = 256
    stress: bool = False
    #: Evaluation on the deployment env during training (TensorBoard eval_risk/*), every this many updates.
    eval_every: int = 50
    eval_episodes: int = 64
    #: Parallel jobs; None = the cores this process may use.
    workers: int | None = None
    #: Run the jobs as Ray Tune trials: "local" (a new local Ray instance), "auto" or "HOST:PORT" (a cluster).
    address: str | None = None

    def objective_kwargs(self, method: str) -> dict[str, Any]:
        """``objective`` (and ``k``) of a method for :class:`~ordergrad_rl.agents.OrderGradREINFORCE`."""
        objective = METHODS[method].objective
        return {"objective": objective} if objective == "mean" else {"objective": objective, "k": self.k}

    def reinforce_kwargs(self) -> dict[str, Any]:
        """The paper's REINFORCE protocol as :class:`~ordergrad_rl.agents.OrderGradREINFORCE` arguments (all but the
        objective, the env and the seed)."""
        return dict(
            n_episodes=self.n_episodes,
            # One episode per env per update: the whole batch of N episodes is one NumPy step.
            n_envs=self.n_episodes,
            learning_rate=self.learning_rate,
            max_grad_norm=self.max_grad_norm,
            normalize_advantage=True,
            reward_to_go=False,  # the paper's REINFORCE weights whole episodes by their standardized return
            ent_coef=0.0,  # and has no entropy bonus (the class's default on categorical actions, the peers' lava grid)
            value_baseline=False,  # nor a per-step baseline (the class's default there too)
            policy_kwargs=self.policy_kwargs(),
            device="cpu",
        )

    def policy_kwargs(self) -> dict[str, Any]:
        """Linear policy, zero-initialized output layer, fixed logit noise ``sigma``."""
        return dict(
            net_arch=dict(pi=[], vf=[]),
            zero_init_action_net=True,
            log_std_init=math.log(self.sigma),
            learn_log_std=False,
        )


# ---------------------------------------------------------------------------------------------------- deployment
@dataclass(frozen=True)
class Deployment:
    """Deterministic deployment paths of a policy (``n`` paths of ``D`` traded days).

    :param wealth: ``[n, D + 1]`` daily wealth, ``W_0 = 1``.
    :param max_drawdown: ``[n]`` maximum daily drawdown of each path (<= 0).
    :param weights: ``[n, 4]`` average applied weights of each path over its decisions (columns: ``ASSET_NAMES``).
    :param daily_returns: ``[n, D]`` daily portfolio returns, net of costs.
    """

    wealth: np.ndarray
    max_drawdown: np.ndarray
    weights: np.ndarray
    daily_returns: np.ndarray

    @staticmethod
    def concat(deployments: list[Deployment]) -> Deployment:
        """The paths of several deployments as one."""
        return Deployment(
            *(np.concatenate([getattr(d, f.name) for d in deployments]) for f in dataclasses.fields(Deployment))
        )


def deploy(model: Any, n_paths: int, seed: int, p: float | None = None, env_id: str = DEPLOY_ENV) -> Deployment:
    """Run ``n_paths`` episodes of ``env_id`` (disaster probability ``p``, default the env's) with the deterministic
    policy of ``model`` on the batched simulator (``make_sb3_vec_env``); env ``i`` is seeded ``seed + i``.

    ``model`` acts through a :class:`~ordergrad_rl.agents.common.evaluation.PolicyActor` (a recurrent model carries
    its LSTM state along each path).
    """
    from ordergrad_rl.agents.common.evaluation import PolicyActor
    from ordergrad_rl.envs import make_sb3_vec_env

    venv = make_sb3_vec_env(env_id, n_paths, seed=seed, env_kwargs=None if p is None else {"p": p})
    actor = PolicyActor(model, venv, deterministic=True)
    obs = venv.reset()
    weights, daily = [], []
    while True:
        obs, _, dones, infos = venv.step(actor.act(obs))
        actor.observe(dones)
        weights.append(np.stack([info["weights"] for info in infos]))
        daily.append(np.stack([info["daily_returns"] for info in infos]))
        if dones.any():
            # Every path has the same horizon, so all of them end on this step.
            assert dones.all(), "tail-risk episodes have a fixed horizon"
            break
    venv.close()
    daily_returns = np.concatenate(daily, axis=1)
    wealth = np.exp(np.cumsum(np.log1p(daily_returns), axis=1))  # the simulator's own accumulation
    return Deployment(
        wealth=np.concatenate([np.ones((n_paths, 1)), wealth], axis=1),
        max_drawdown=np.array([info["max_drawdown"] for info in infos]),
        weights=np.mean(weights, axis=0),
        daily_returns=daily_returns,
    )


def deployment_metrics(deployment: Deployment) -> dict[str, Any]:
    """The paper's deployment metrics of a set of paths (all fractions; see the module docstring)."""
    terminal = deployment.wealth[:, -1]
    log_profile = risk_profile(np.log(terminal), cvar_levels=(), quantile_levels=(0.1,))
    daily_profile = risk_profile(deployment.daily_returns, cvar_levels=(0.05,), quantile_levels=())
    return {
        "mean_return": float(np.mean(terminal - 1.0)),
        "profitable": float(np.mean(terminal > 1.0)),
        "below_0.9": float(np.mean(terminal < 0.9)),
        "mdd_over_20": float(np.mean(deployment.max_drawdown < -0.2)),
        "mean_mdd": float(np.mean(deployment.max_drawdown)),
        "p10_log_return": log_profile["quantile_0.1"],
        "daily_cvar_5": daily_profile["cvar_0.05"],
        "weights": dict(zip(ASSET_NAMES, np.mean(deployment.weights, axis=0).tolist(), strict=True)),
    }


# ---------------------------------------------------------------------------------------------------- training
def train_method(
    method: str,
    seed: int,
    config: Config,
    tensorboard: Path | None = None,
    on_update: Callable[[int], None] | None = None,
) -> OrderGradREINFORCE | OrderGradPPO:
    """Train one method on one seed: the paper's protocol (REINFORCE methods) or OrderGradPPO's defaults.

    :param tensorboard: log dir of the run ``<method>/seed<seed>_1`` (replacing the runs of an earlier call); also
        evaluates on the deployment env every ``config.eval_every`` updates (``eval_risk/*``).
    :param on_update: called after every collected batch with the env steps done since the last call, up to
        :func:`planned_steps` in all (progress reporting).
    """
    from stable_baselines3.common.callbacks import BaseCallback

    from ordergrad_rl.agents import OrderGradPPO, OrderGradREINFORCE, RiskEvalCallback
    from ordergrad_rl.envs import make_sb3_vec_env

    planned = planned_steps(method, config)
    base = block_seed(seed)
    tensorboard_log = None if tensorboard is None else str(tensorboard)
    if METHODS[method].algo == "ppo":
        # The usage line: every argument but the objective at its default.
        model: Any = OrderGradPPO(
            "MlpPolicy", TRAIN_ENV, objective=METHODS[method].objective, tensorboard_log=tensorboard_log, seed=base
        )
    else:
        model = OrderGradREINFORCE(
            "MlpPolicy",
            TRAIN_ENV,
            tensorboard_log=tensorboard_log,
            seed=base,
            **config.reinforce_kwargs(),
            **config.objective_kwargs(method),
        )
    timesteps = planned
    decisions = int(model.get_env().get_attr("num_decisions")[0])
    callbacks: list[BaseCallback] = [rollout_progress(planned, on_update or (lambda steps: None))]
    if tensorboard is not None:
        callbacks.append(
            RiskEvalCallback(
                make_sb3_vec_env(DEPLOY_ENV, config.eval_episodes, seed=base + EVAL_OFFSET),
                n_eval_episodes=config.eval_episodes,
                # The callback counts vectorized steps: one update is `decisions` of them.
                eval_freq=config.eval_every * decisions,
                deterministic=True,
            )
        )
    remove_runs(tensorboard, f"{method}/seed{seed}")
    model.learn(timesteps, callback=callbacks, tb_log_name=f"{method}/seed{seed}")
    return model


def planned_steps(method: str, config: Config) -> int:
    """Env steps a method trains for: ``ppo_timesteps``, or ``updates`` batches of ``n_episodes`` episodes."""
    if METHODS[method].algo == "ppo":
        return config.ppo_timesteps
    from ordergrad_rl.envs import TailRiskSimulator

    decisions = TailRiskSimulator(1, **gym.spec(TRAIN_ENV).kwargs).num_decisions
    return config.updates * config.n_episodes * decisions


def run_id(method: str, seed: int) -> str:
    """The name of the (method, seed) run: its job, its stored run and its model ``<models>/<id>.zip``."""
    return f"{method}_seed{seed}"


def run_settings(method: str, config: Config, tensorboard: Path | None) -> dict[str, Any]:
    """What a run of ``method`` depends on, its key in the stored runs (``--resume``): the fields of ``config`` but
    the grid's (seeds, methods), where the runs go (workers, address) and the other protocol's options, and the
    TensorBoard directory it logs to."""
    ignored = {"seeds", "methods", "workers", "address", *_OTHER_PROTOCOL_OPTIONS[METHODS[method].algo]}
    settings = {key: value for key, value in dataclasses.asdict(config).items() if key not in ignored}
    return settings | {"tensorboard": None if tensorboard is None else str(tensorboard.resolve())}


#: The layout of a stored run (``<out>/runs/<id>.json`` and ``.npz``): raise it when what a stored run holds, or how
#: :func:`load_run` reads it, changes. A stored run records it and the package version that trained it
#: (:func:`~ordergrad_rl.common.jobs.code_release`); ``--resume`` reuses only the runs stored by this layout and
#: version, and trains the others again, naming them on stderr: runs stored by another release, and runs stored
#: without either (before they were recorded), whose release is unknown.
RUN_FORMAT = 1


def _deployment_arrays(deployment: Deployment, prefix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}_{f.name}": getattr(deployment, f.name) for f in dataclasses.fields(Deployment)}


def _stored_deployment(arrays: dict[str, np.ndarray], prefix: str) -> Deployment:
    return Deployment(*(arrays[f"{prefix}_{f.name}"] for f in dataclasses.fields(Deployment)))


def store_run(cache: RunCache, result: dict[str, Any], settings: dict[str, Any]) -> None:
    """Store a :func:`run_job` result in ``cache`` (its deployments as exact arrays)."""
    arrays = _deployment_arrays(result["deployment"], "deployment")
    for p, deployment in result["stress"].items():
        arrays |= _deployment_arrays(deployment, f"stress{p!r}")
    record = {key: result[key] for key in ("method", "seed", "train_seconds")} | code_release(RUN_FORMAT)
    cache.save(run_id(result["method"], result["seed"]), record | {"config": settings}, arrays)


def load_run(
    cache: RunCache, method: str, seed: int, settings: dict[str, Any], models: Path | None
) -> dict[str, Any] | None:
    """The :func:`run_job` result of ``method`` on ``seed`` stored in ``cache`` with ``settings``, its model in
    ``models`` (``None``: none is stored, it was stored by other code
    (:func:`~ordergrad_rl.common.jobs.other_code`), or its model is not there)."""
    name = run_id(method, seed)
    record = cache.load(name, settings)
    model = None if models is None else models / f"{name}.zip"
    if record is None or other_code(record, RUN_FORMAT) is not None or (model is not None and not model.exists()):
        return None
    arrays = cache.arrays(name)
    return {
        **{key: record[key] for key in ("method", "seed", "train_seconds")},
        "deployment": _stored_deployment(arrays, "deployment"),
        "stress": {p: _stored_deployment(arrays, f"stress{p!r}") for p in STRESS_P} if settings["stress"] else {},
        "model": model,
    }


def run_job(
    method: str,
    seed: int,
    config: Config,
    tensorboard: Path | None,
    models: Path | None,
    runs: Path | None = None,
) -> dict[str, Any]:
    """Train ``method`` on ``seed``, deploy it (and stress it), save the model (and the run, in a
    :class:`~ordergrad_rl.common.jobs.RunCache` under ``runs``); the unit of parallel work.

    :return: ``{"method", "seed", "train_seconds", "deployment": Deployment, "stress": {p: Deployment}, "model"}``.
    """

    start = time.perf_counter()
    model = train_method(method, seed, config, tensorboard, on_update=report_progress)
    train_seconds = time.perf_counter() - start
    deploy_seed = block_seed(seed, DEPLOY_OFFSET)
    stress = {p: deploy(model, config.deploy_paths, deploy_seed, p=p) for p in STRESS_P} if config.stress else {}
    path = None
    if models is not None:
        models.mkdir(parents=True, exist_ok=True)
        path = models / f"{run_id(method, seed)}.zip"
        model.save(path)
    result = {
        "method": method,
        "seed": seed,
        "train_seconds": train_seconds,
        "deployment": deploy(model, config.deploy_paths, deploy_seed),
        "stress": stress,
        "model": path,
    }
    if runs is not None:
        store_run(RunCache(runs), result, run_settings(method, config, tensorboard))
    return result


def run_jobs(
    config: Config,
    tensorboard: Path | None,
    models: Path | None,
    quiet: bool,
    storage: Path | None = None,
    runs: Path | None = None,
    resume: bool = False,
) -> list[dict[str, Any]]:
    """Every (method, seed) job through :func:`ordergrad_rl.common.jobs.run_jobs`: ``config.workers`` local
    processes (default: the available cores), or Ray Tune trials with ``config.address``.

    :param runs: where each finished run is stored (:class:`~ordergrad_rl.common.jobs.RunCache`).
    :param resume: reuse the runs stored in ``runs`` (with these settings, by this code: :data:`RUN_FORMAT`): only
        the others are trained; those stored by other code are named on stderr.
    :raises CommandError: with ``resume``, a run stored by this code with other settings (naming them).
    """
    cache = None if runs is None else RunCache(runs)
    done, jobs, outdated = {}, [], []
    for seed in range(config.seeds):
        for method in config.methods:
            name, settings = run_id(method, seed), run_settings(method, config, tensorboard)
            if cache is not None and resume:
                stored = load_run(cache, method, seed, settings, models)
                if stored is not None:
                    done[name] = stored
                    continue
                record = cache.record(name)
                release = None if record is None else other_code(record, RUN_FORMAT)
                if release is not None:
                    outdated.append(f"{name} by {release}")
                else:
                    _check_stored_settings(cache, name, settings)  # not stored, stored without its model, or refused
            kwargs = {"method": method, "seed": seed, "config": config, "tensorboard": tensorboard, "models": models}
            jobs.append(Job(name, run_job, kwargs | {"runs": runs}, weight=planned_steps(method, config)))
    if cache is not None:
        report_other_code(outdated, cache.directory, RUN_FORMAT, "--resume")
        for job in jobs:
            cache.discard(job.id)  # trained again: stored again once it has finished
    desc = f"training {len(jobs)} runs" + (f" ({len(done)} stored earlier)" if done else "")
    results = dict(done)
    if jobs:
        results |= run_grid(jobs, config.workers, config.address, storage, desc=desc, unit="step", quiet=quiet)
    return [results[run_id(method, seed)] for seed in range(config.seeds) for method in config.methods]


def _check_stored_settings(cache: RunCache, name: str, settings: dict[str, Any]) -> None:
    """Refuse to resume a grid whose run ``name`` is stored with other settings (another experiment).

    :raises CommandError: naming the options that differ.
    """
    stored = cache.stored_settings(name)
    if stored is None or cache.load(name, settings) is not None:
        return
    differ = ", ".join(
        f"--{key.replace('_', '-')} {stored.get(key)} (now {settings.get(key)})"
        for key in sorted(settings.keys() | stored.keys())
        if stored.get(key) != settings.get(key)
    )
    raise CommandError(
        f"--resume: the run {name} in {cache.directory} was trained with {differ}: resume with its options, "
        "or drop --resume to train every run again (or give another --out)"
    )


# ---------------------------------------------------------------------------------------------------- experiment
def _summarize(deployments: list[Deployment]) -> dict[str, Any]:
    """Pooled metrics over the seeds' deployments, and the per-seed values."""
    per_seed = [deployment_metrics(d) for d in deployments]
    summary = deployment_metrics(Deployment.concat(deployments))
    summary["per_seed"] = {key: [m[key] for m in per_seed] for key in (*METRICS, "weights")}
    summary["n_paths"] = sum(len(d.max_drawdown) for d in deployments)
    return summary


def run_experiment(
    config: Config,
    tensorboard: Path | None = None,
    models: Path | None = None,
    quiet: bool = False,
    storage: Path | None = None,
    runs: Path | None = None,
    resume: bool = False,
) -> dict[str, Any]:
    """Train, deploy and summarize both methods on ``config.seeds`` seeds.

    :param storage: with ``config.address``: where Ray keeps the jobs' state and results (see
        :func:`ordergrad_rl.common.jobs.run_jobs`).
    :param runs: where each finished run is stored; ``resume``: train only the runs not stored there (the others
        are read back exactly, so the results are those of an uninterrupted call). See :func:`run_jobs`.

    :return: ``{"config", "methods": {method: metrics + "per_seed", "n_paths"}, "stress": {"p": [...], method:
        [metrics per p]}, "train_seconds": {method: [...]}, "models", "deployments": {method: Deployment}}``.
    """
    results = run_jobs(config, tensorboard, models, quiet, storage, runs, resume)
    by_method = {method: [r for r in results if r["method"] == method] for method in config.methods}
    out: dict[str, Any] = {
        "config": dataclasses.asdict(config),
        "methods": {m: _summarize([r["deployment"] for r in runs]) for m, runs in by_method.items()},
        "train_seconds": {m: [r["train_seconds"] for r in runs] for m, runs in by_method.items()},
        "models": [r["model"] for r in results if r["model"] is not None],
        "deployments": {m: Deployment.concat([r["deployment"] for r in runs]) for m, runs in by_method.items()},
    }
    if config.stress:
        out["stress"] = {"p": list(STRESS_P)}
        for method, method_runs in by_method.items():
            out["stress"][method] = [
                deployment_metrics(Deployment.concat([r["stress"][p] for r in method_runs])) for p in STRESS_P
            ]
    return out


def checks(results: dict[str, Any]) -> dict[str, bool]:
    """The effect the reproduction must show (issue 5 for the paper's protocol, issue 9 for OrderGradPPO's
    defaults), for the methods that ran."""
    methods = results["methods"]
    out: dict[str, bool] = {}
    for cvar_key, mean_key in (("ordergrad_cvar", "reinforce"), ("ppo_cvar", "ppo_mean")):
        if cvar_key in methods:
            cvar, label = methods[cvar_key], METHODS[cvar_key].label
            out[f"{label} profitable >= 95%"] = cvar["profitable"] >= 0.95
            out[f"{label} W_T < 0.9 <= 2%"] = cvar["below_0.9"] <= 0.02
            out[f"{label} MDD > 20% <= 2%"] = cvar["mdd_over_20"] <= 0.02
            out[f"{label} high-yield weight <= 25%"] = cvar["weights"]["high_yield_tailrisk"] <= 0.25
            if cvar_key == "ordergrad_cvar":
                out[f"{label} hedge weight >= 45%"] = cvar["weights"]["defensive_hedge"] >= 0.45
        if mean_key in methods:
            mean, label = methods[mean_key], METHODS[mean_key].label
            out[f"{label} high-yield weight >= 55%"] = mean["weights"]["high_yield_tailrisk"] >= 0.55
            if mean_key == "reinforce":
                out[f"{label} W_T < 0.9 >= 20%"] = mean["below_0.9"] >= 0.20
    return out


# ---------------------------------------------------------------------------------------------------- reporting
def _pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def _weight_of(asset: str) -> Callable[[dict[str, Any]], float | None]:
    """The getter of ``asset``'s weight in a method's metrics (a function per asset: a lambda in the loop would
    read the last asset)."""
    return lambda metrics: metrics["weights"].get(asset)


#: (row label, getter, formatter) of the main table.
_ROWS: tuple[tuple[str, Callable[[dict[str, Any]], float | None], Callable[[float | None], str]], ...] = (
    ("mean return E[W_T - 1]", lambda m: m["mean_return"], _pct),
    ("profitable P(W_T > 1)", lambda m: m["profitable"], _pct),
    ("P(W_T < 0.9)", lambda m: m["below_0.9"], _pct),
    ("P(MDD > 20%)", lambda m: m["mdd_over_20"], _pct),
    ("mean MDD", lambda m: m["mean_mdd"], _pct),
    *((f"weight {asset}", _weight_of(asset), _pct) for asset in ASSET_NAMES),
    ("p10 of log W_T", lambda m: m["p10_log_return"], lambda v: "-" if v is None else f"{v:.3f}"),
    ("daily 5% CVaR", lambda m: m["daily_cvar_5"], lambda v: _pct(v, 2)),
)


def format_table(results: dict[str, Any]) -> str:
    """Rows: the metrics; columns: each method's measured value, then the paper's where the paper has the method."""
    methods = list(results["methods"])
    headers = ["metric"]
    for key in methods:
        headers += [METHODS[key].label] + (["paper"] if key in PAPER else [])
    rows = []
    for label, get, fmt in _ROWS:
        row = [label]
        for key in methods:
            row += [fmt(get(results["methods"][key]))] + ([fmt(get(PAPER[key]))] if key in PAPER else [])
        rows.append(row)
    return markdown_table(headers, rows)


def deployment_table(models: dict[str, Any], n_paths: int = 256, seed: int = 0, env_id: str = DEPLOY_ENV) -> str:
    """The deployment metrics of each model (the rows of the reproduction's table) on the same ``n_paths``
    deterministic paths of ``env_id``, as a markdown table with one column per model.

    >>> from ordergrad_rl import OrderGradPPO
    >>> models = {o: OrderGradPPO("MlpPolicy", "SyntheticTailRisk-v0", objective=o) for o in ("mean", "cvar0.2")}
    >>> print(deployment_table(models, n_paths=8).splitlines()[0])  # untrained here; train them with .learn first
    | SyntheticTailRiskDeploy-v0, 8 paths | mean   | cvar0.2 |

    :param models: column label -> a model with SB3's ``predict`` (trained on a tail-risk env).
    :param seed: env ``i`` of the deployment batch is seeded ``seed + i``.
    """
    metrics = {
        label: deployment_metrics(deploy(model, n_paths, seed, env_id=env_id)) for label, model in models.items()
    }
    rows = [[label, *(fmt(get(m)) for m in metrics.values())] for label, get, fmt in _ROWS]
    return markdown_table([f"{env_id}, {n_paths} paths", *metrics], rows)


def format_per_seed(results: dict[str, Any]) -> str:
    """One row per (method, seed): the headline metrics of its deployment paths."""
    rows = []
    for key, summary in results["methods"].items():
        per_seed = summary["per_seed"]
        for seed in range(len(per_seed["mean_return"])):
            weights = per_seed["weights"][seed]
            rows.append(
                [METHODS[key].label, seed]
                + [_pct(per_seed[name][seed]) for name in ("mean_return", "profitable", "below_0.9", "mdd_over_20")]
                + [_pct(weights["high_yield_tailrisk"]), _pct(weights["defensive_hedge"])]
            )
    headers = ["method", "seed", "mean return", "profitable", "W_T < 0.9", "MDD > 20%", "high-yield", "hedge"]
    return markdown_table(headers, rows)


def format_stress(results: dict[str, Any]) -> str:
    """Rows: disaster probability p; columns: the bad-outcome metrics of each method."""
    stress = results["stress"]
    methods = [key for key in stress if key != "p"]
    headers = ["p"]
    for key in methods:
        headers += [f"{METHODS[key].label}: {name}" for name in ("mean return", "profitable", "W_T < 0.9", "MDD > 20%")]
    rows = []
    for i, p in enumerate(stress["p"]):
        row: list[Any] = [f"{p:g}"]
        for key in methods:
            m = stress[key][i]
            row += [_pct(m[name]) for name in ("mean_return", "profitable", "below_0.9", "mdd_over_20")]
        rows.append(row)
    return markdown_table(headers, rows)


def plot(results: dict[str, Any], path: Path, n_sample_paths: int = 6) -> Path:
    """The paper's 4-panel figure: bad-outcome probabilities, weights, log-return distribution, wealth paths."""
    plt = pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(13, 9.5))
    (ax_bad, ax_weights), (ax_dist, ax_wealth) = axes
    present = {key: METHODS[key] for key in results["methods"]}
    width = 0.76 / len(present)
    offsets = {key: (i - (len(present) - 1) / 2) * width for i, key in enumerate(present)}
    label_size = 8 if len(present) <= 2 else 6

    outcomes = ("loses money\nW_T < 1", "W_T < 0.9", "max drawdown\n> 20%")
    for key, method in present.items():
        m = results["methods"][key]
        values = [1.0 - m["profitable"], m["below_0.9"], m["mdd_over_20"]]
        bars = ax_bad.bar(np.arange(3) + offsets[key], values, width, color=method.color, label=method.label)
        ax_bad.bar_label(bars, labels=[_pct(v) for v in values], fontsize=label_size, padding=2)
    ax_bad.set_xticks(np.arange(3), list(outcomes))
    ax_bad.set(ylabel="fraction of deployment paths", title="(a) Bad deployment outcomes")
    ax_bad.set_ylim(0, max(0.1, ax_bad.get_ylim()[1] * 1.35))  # room for the legend above the bars
    ax_bad.legend(loc="upper center", ncols=2)

    for key, method in present.items():
        values = [results["methods"][key]["weights"][asset] for asset in ASSET_NAMES]
        bars = ax_weights.bar(np.arange(4) + offsets[key], values, width, color=method.color, label=method.label)
        ax_weights.bar_label(bars, labels=[_pct(v) for v in values], fontsize=label_size, padding=2)
    ax_weights.set_xticks(np.arange(4), ["high-yield\ntail-risk", "defensive\nhedge", "balanced", "cash"])
    ax_weights.set(ylabel="average weight", title="(b) Average deployment weights")
    ax_weights.set_ylim(0, 1)
    ax_weights.legend()

    deployments: dict[str, Deployment] = results["deployments"]
    log_returns = {key: np.log(d.wealth[:, -1]) for key, d in deployments.items()}
    edges = np.histogram_bin_edges(np.concatenate(list(log_returns.values())), bins=60)
    for key, method in present.items():
        ax_dist.hist(log_returns[key], bins=edges, color=method.color, alpha=0.45, label=method.label)
        p10 = results["methods"][key]["p10_log_return"]
        ax_dist.axvline(p10, color=method.color, ls="--", lw=1.2, label=f"{method.label} 10th pct: {p10:.3f}")
    ax_dist.axvline(0.0, color="k", lw=0.8)
    ax_dist.set(xlabel="terminal log return log W_T", ylabel="paths", title="(c) Terminal log-return distribution")
    ax_dist.legend(fontsize=8)

    rng = np.random.default_rng(0)
    for key, method in present.items():
        wealth = deployments[key].wealth
        days = np.arange(wealth.shape[1])
        low, high = np.quantile(wealth, [0.1, 0.9], axis=0)
        ax_wealth.fill_between(days, low, high, color=method.color, alpha=0.18, lw=0)
        ax_wealth.plot(days, wealth.mean(axis=0), color=method.color, lw=2.2, label=f"{method.label} mean, 10-90%")
        for i in rng.choice(len(wealth), size=min(n_sample_paths, len(wealth)), replace=False):
            ax_wealth.plot(days, wealth[i], color=method.color, lw=0.6, alpha=0.55)
    ax_wealth.axhline(1.0, color="k", lw=0.8)
    ax_wealth.set(xlabel="traded day", ylabel="wealth W_t", title="(d) Deployment wealth (thin: sample paths)")
    ax_wealth.legend(fontsize=8, loc="upper left")

    n = next(iter(results["methods"].values()))["n_paths"]
    seeds = results["config"]["seeds"]
    fig.suptitle(
        f"High-yield tail-risk portfolio: deployment at p = 0.35, {n} deterministic paths per method "
        f"({seeds} seed{'s' if seeds != 1 else ''})"
    )
    fig.tight_layout()
    return save_figure(fig, path)


def plot_stress(results: dict[str, Any], path: Path) -> Path:
    """Deployment metrics against the disaster probability p, one line per method."""
    plt = pyplot()
    stress = results["stress"]
    panels = (
        ("mean_return", "mean return E[W_T - 1]"),
        ("profitable", "profitable P(W_T > 1)"),
        ("below_0.9", "P(W_T < 0.9)"),
        ("mdd_over_20", "P(max drawdown > 20%)"),
    )
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    for ax, (name, title) in zip(axes, panels, strict=True):
        for key in (key for key in stress if key != "p"):
            method = METHODS[key]
            ax.plot(stress["p"], [m[name] for m in stress[key]], "o-", color=method.color, label=method.label)
        ax.axvline(0.10, color="0.6", ls=":", lw=1)
        ax.axvline(0.35, color="0.6", ls="--", lw=1)
        ax.set(xlabel="disaster probability p", title=title)
    axes[0].legend(fontsize=8)
    fig.suptitle("Stress grid (dotted: training p = 0.10, dashed: deployment p = 0.35)")
    fig.tight_layout()
    return save_figure(fig, path)


# ---------------------------------------------------------------------------------------------------- command
#: ``--quick``: the same code path on tiny sizes (CI's smoke run; its numbers mean nothing, and its checks fail).
QUICK: dict[str, object] = dict(seeds=1, updates=2, ppo_timesteps=2_000, n_episodes=16, k=8, deploy_paths=16)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``ordergrad-rl reproduce tailrisk``."""
    default = Config()
    parser.add_argument(
        "--seeds", type=positive_int, default=default.seeds, metavar="S", help="training seeds (default: %(default)s)"
    )
    parser.add_argument(
        "--algo",
        choices=sorted(ALGO_METHODS),
        default="both",
        help="reinforce: the paper's REINFORCE protocol (REINFORCE vs OrderGrad-CVaR); ppo: OrderGradPPO at its "
        "defaults (objectives mean and cvar0.2); both (default)",
    )
    parser.add_argument(
        "--updates", type=positive_int, default=default.updates, help="REINFORCE updates (default: %(default)s)"
    )
    parser.add_argument(
        "--ppo-timesteps",
        type=positive_int,
        default=default.ppo_timesteps,
        metavar="T",
        help="env steps of each OrderGradPPO run (default: %(default)s)",
    )
    parser.add_argument(
        "--n-episodes",
        type=positive_int,
        default=default.n_episodes,
        metavar="N",
        help="REINFORCE episodes per update (default: %(default)s)",
    )
    parser.add_argument(
        "--k", type=positive_int, default=default.k, help="K of REINFORCE's OrderGrad-CVaR, < N (default: %(default)s)"
    )
    parser.add_argument(
        "--deploy-paths",
        type=positive_int,
        default=default.deploy_paths,
        metavar="P",
        help="deployment paths per seed (default: %(default)s)",
    )
    parser.add_argument(
        "--stress",
        action="store_true",
        help=f"also deploy at the disaster probabilities p in {list(STRESS_P)} (table and tailrisk_stress.png)",
    )
    parser.add_argument(
        "--tensorboard",
        type=Path,
        default=None,
        metavar="DIR",
        help="write the TensorBoard runs of both methods to DIR (tensorboard --logdir DIR)",
    )
    parser.add_argument(
        "--eval-every",
        type=positive_int,
        default=None,
        metavar="U",
        help=f"with --tensorboard: evaluate on the deployment env every U updates (default: {default.eval_every})",
    )
    parser.add_argument(
        "--eval-episodes",
        type=positive_int,
        default=None,
        metavar="E",
        help=f"with --tensorboard: deterministic episodes per evaluation (default: {default.eval_episodes})",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help=f"parallel training runs (default: the available cores, here {available_cores()})",
    )
    add_address_argument(parser)
    add_quick_argument(parser, QUICK)
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep the runs stored in OUT/runs (each run is stored as it finishes) and train only the others: a "
        "reproduction cut short continues where it stopped, with the same results (runs stored by another ordergrad-rl "
        "version are trained again)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "tailrisk")


#: The options of one protocol only: ``--algo`` -> the options its runs ignore.
_OTHER_PROTOCOL_OPTIONS: dict[str, tuple[str, ...]] = {
    "ppo": ("updates", "n_episodes", "k"),  # REINFORCE's protocol: OrderGradPPO runs at its defaults
    "reinforce": ("ppo_timesteps",),
}


def check_algo_options(args: argparse.Namespace, default: Config) -> None:
    """Refuse the options of the protocol that ``--algo`` leaves out (they would be ignored).

    :raises CommandError: naming them.
    """
    ignored = _OTHER_PROTOCOL_OPTIONS.get(args.algo, ())
    given = ["--" + dest.replace("_", "-") for dest in ignored if getattr(args, dest) != getattr(default, dest)]
    if given:
        runs = "OrderGradPPO at its defaults" if args.algo == "ppo" else "the REINFORCE protocol only"
        ignored_text = " ".join(given)
        raise CommandError(f"--algo {args.algo} trains {runs}, which ignores {ignored_text}: drop it, or --algo both")


def run(args: argparse.Namespace) -> int:
    """Train, deploy, print the table beside the paper's, write the figures, models (and JSON)."""
    default = Config()
    check_algo_options(args, default)
    check_address_arguments(args)
    apply_quick(args, QUICK, {dest: getattr(default, dest) for dest in QUICK})
    if args.k >= args.n_episodes:  # checked here: inside the workers it would fail only after they started
        raise CommandError(f"--k ({args.k}) must be < --n-episodes ({args.n_episodes}): K episodes of the N are ranked")
    evaluation = {"eval_every": args.eval_every, "eval_episodes": args.eval_episodes}
    if args.tensorboard is None:
        given = [f"--{key.replace('_', '-')}" for key, value in evaluation.items() if value is not None]
        if given:  # the evaluations are logged to TensorBoard only: without it they would be silently dropped
            raise CommandError(f"{' and '.join(given)} set the TensorBoard evaluations: give --tensorboard DIR too")
    start = time.perf_counter()
    config = Config(
        seeds=args.seeds,
        methods=ALGO_METHODS[args.algo],
        updates=args.updates,
        ppo_timesteps=args.ppo_timesteps,
        n_episodes=args.n_episodes,
        k=args.k,
        deploy_paths=args.deploy_paths,
        stress=args.stress,
        workers=args.workers,
        address=args.address,
        **{key: value for key, value in evaluation.items() if value is not None},
    )
    runs = args.out / "runs"
    try:
        results = run_experiment(
            config,
            tensorboard=args.tensorboard,
            models=args.out / "models",
            quiet=args.quiet,
            storage=args.out / "ray",
            runs=runs,
            resume=args.resume,
        )
    except KeyboardInterrupt:
        cache = RunCache(runs)
        stored = sum(
            cache.load(run_id(method, seed), run_settings(method, config, args.tensorboard)) is not None
            for seed in range(config.seeds)
            for method in config.methods
        )
        return report_interrupted(stored, runs)
    train = results["train_seconds"]
    protocols = []
    if "reinforce" in args.algo or args.algo == "both":
        protocols.append(
            f"REINFORCE protocol: {config.updates} updates of {config.n_episodes} episodes, OrderGrad-CVaR = "
            f"LowerTailMean:0.2 with K = {config.k}"
        )
    if args.algo in ("ppo", "both"):
        protocols.append(
            f'OrderGradPPO("MlpPolicy", "{TRAIN_ENV}", objective=...) at its defaults, learn({config.ppo_timesteps})'
        )
    print(
        f"High-yield tail-risk portfolio, {config.seeds} seeds, trained on {TRAIN_ENV} (p = 0.10), deployed on "
        f"{DEPLOY_ENV} (p = 0.35), {config.deploy_paths} deterministic paths per seed.\n"
        + "\n".join(f"  {line}." for line in protocols)
    )
    print("Measured value first, the paper's value after it.\n")
    print(format_table(results))
    print("\nPer seed:\n")
    print(format_per_seed(results))
    if config.stress:
        print("\nStress grid (deployment paths at each disaster probability p):\n")
        print(format_stress(results))
    results["checks"] = checks(results)
    print_checks(results["checks"])
    results["figures"] = {"tailrisk": plot(results, args.out / "tailrisk.png")}
    if config.stress:
        results["figures"]["stress"] = plot_stress(results, args.out / "tailrisk_stress.png")
    results["wall_seconds"] = time.perf_counter() - start
    runs = [t for times in train.values() for t in times]
    print(f"\ntime: {results['wall_seconds']:.0f} s in total; training runs {min(runs):.1f}-{max(runs):.1f} s each")
    print("figures:\n" + "\n".join(f"  {path}" for path in results["figures"].values()))
    print(f"models: {args.out / 'models'}")
    if args.tensorboard is not None:
        # One aggregated run per method beside the seeds, HParams with objective and k first.
        dashboards = write_dashboards(args.tensorboard)
        print(f"TensorBoard: {tensorboard_command(args.tensorboard)}\n  then open {dashboards.url}")
    if args.json is not None:
        payload = {key: value for key, value in results.items() if key != "deployments"}
        payload["paper"] = PAPER
        print(f"json: {write_json(args.json, payload)}")
    return 0
