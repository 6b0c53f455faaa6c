"""OrderGrad PPO on MinAtar (paper appendix "RL Experiments": Figs. minatar_main, minatar_m_ablation, minatar_entropy).

Methods, all with the pgx MinAtar network (shared trunk :class:`~ordergrad_rl.agents.GridCNN`: 2x2 conv, ReLU, 2x2
average pooling, dense 64 + ReLU; actor and critic heads of two hidden layers of 64, Tanh):

* PPO-V (``ppo_v``): SB3's ``PPO`` with a scalar value head, GAE lambda 0.95;
* PPO-Q (``ppo_q``): ``OrderGradPPO(advantage="q_critic", objective="mean")``, a per-action Q head, lambda 0.95;
* PPO-V + ent, PPO-Q + ent (``ppo_v_ent``, ``ppo_q_ent``): the same with entropy coefficient 0.01;
* OrderGrad PPO Top-M@K (``top<M>@<K>``): ``OrderGradPPO(advantage="q_critic", objective="topM@K")``, lambda 0.8.

The paper's tables: rollout 128 steps, learning rate 3e-4, 3 epochs, gamma 0.99, clip 0.2, max grad norm 0.5, value
coefficient 0.5, entropy coefficient from the grid (0, 0.01) — 0 for OrderGrad (it modulates exploration through M,
without an entropy bonus) and both values for the baselines (Fig. minatar_main) — with 1024 envs, minibatches of
1024 and 1e7 steps over 10 seeds. A CPU runs a few thousand steps per second, so the env count, minibatch, steps
and seeds are scaled down (``--n-envs``, ``--batch-size``, ``--steps``, ``--seeds``; the defaults are stated in
``--help``): with 16 envs a rollout is 2048 steps and a minibatch of 256 gives 8 updates per epoch. ``--methods``
runs a subset of the methods.

Games are MinAtar's own Gymnasium envs (``MinAtar/<Game>-v1``: minimal action sets as in pgx, sticky actions 0.1),
observations converted from bool to float32 (10x10xC, channels last). Scores are normalized by the paper's
maxima (Breakout 251.15, Asterix 64.95, SpaceInvaders 880.91); Freeway and Seaquest can be trained but have no
maximum there, so they are reported raw and left out of the aggregates.

Measures: the final score of a run is the mean return of ``--eval-episodes`` episodes of the final stochastic
policy (the policy as trained, with its exploration); curves use the returns of the training episodes, binned over
the steps. Aggregates over games and seeds with rliable (Agarwal et al. 2021): median, interquartile mean (IQM)
and mean of the normalized scores with stratified-bootstrap 95% CIs. Entropy is the mean entropy of the policy over
the states of each rollout.

Figures (``--out``): ``minatar_aggregate.png`` (IQM normalized score over steps, and the final median/IQM/mean
with CIs), ``minatar_effect_of_m.png`` (final IQM vs M, the baselines run as lines; skipped without a Top-M@K
method), ``minatar_entropy.png`` (policy entropy over steps for each method, per game). Each run is cached as JSON
under ``<out>/runs`` and reused by a later invocation with the same settings (the method's own entropy coefficient
included), so an interrupted reproduction resumes and ``--methods`` subsets run one after another share one ``--out``.
A run stored by another ordergrad-rl version or run format (:data:`RUN_FORMAT`), or by a release that did not record
them, is trained again, named on stderr: its training code may differ from this one's.

Needs the extra ``pip install "ordergrad-rl[minatar]"`` (MinAtar and rliable).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ordergrad_rl.common.errors import CommandError
from ordergrad_rl.common.extras import require_extra
from ordergrad_rl.common.jobs import Job, RunCache, code_release, other_code, report_other_code, run_jobs
from ordergrad_rl.common.options import (
    add_address_argument,
    add_output_arguments,
    add_quick_argument,
    apply_quick,
    check_address_arguments,
    positive_int,
)
from ordergrad_rl.common.reports import interval_cell, markdown_table, pyplot, save_figure, write_json
from ordergrad_rl.envs.minatar import GAMES, make_minatar_vec_env
from ordergrad_rl.experiments.tailrisk import block_seed
from ordergrad_rl.zoo.training import remove_runs

#: The evaluation envs of seed ``s`` start at ``eval_seed(s)``, in ``s``'s own block of ``SEED_STRIDE`` seeds.
EVAL_SEED_OFFSET = 10_000

#: Normalization maxima of the paper (from Nishimori et al. 2026).
MAX_SCORES: dict[str, float] = {"breakout": 251.15, "asterix": 64.95, "space_invaders": 880.91}
DEFAULT_GAMES: tuple[str, ...] = ("breakout", "asterix", "space_invaders")
#: The baselines, in table order (the Top-M@K methods follow, one per M).
BASELINES: tuple[str, ...] = ("ppo_v", "ppo_v_ent", "ppo_q", "ppo_q_ent")
PAPER_CLAIMS = (
    "paper (1e7 steps, 10 seeds, 1024 envs): OrderGrad PPO Top-9@10 (entropy coefficient 0) beats PPO-V and PPO-Q, "
    "with and without entropy bonus, in normalized score; "
    "the best aggregate is around M = 9; smaller M slows the entropy decay (more exploration), larger M decays faster"
)


# ---------------------------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class Config:
    """Settings of one reproduction (defaults: the paper's hyperparameters, scaled to a CPU)."""

    games: tuple[str, ...] = DEFAULT_GAMES
    steps: int = 300_000
    seeds: int = 2
    m: tuple[int, ...] = (1, 5, 9)
    k: int = 10
    n_envs: int = 16
    n_steps: int = 128
    batch_size: int = 256
    n_epochs: int = 3
    learning_rate: float = 3e-4
    gamma: float = 0.99
    gae_lambda_ppo: float = 0.95
    gae_lambda_ordergrad: float = 0.8
    clip_range: float = 0.2
    max_grad_norm: float = 0.5
    vf_coef: float = 0.5
    #: Entropy coefficient of PPO-V, PPO-Q and OrderGrad (paper: 0 for OrderGrad, 0 and 0.01 for the baselines).
    ent_coef: float = 0.0
    #: Entropy coefficient of the ``*_ent`` baselines: the paper's nonzero grid value.
    ent_coef_baselines: float = 0.01
    #: The methods run (a subset of :meth:`all_methods`, kept in table order); ``None``: all of them.
    method_subset: tuple[str, ...] | None = None
    eval_episodes: int = 32
    curve_bins: int = 20
    reps: int = 2000

    def __post_init__(self) -> None:
        if self.method_subset is None:
            return
        valid = ", ".join(self.all_methods())
        unknown = [m for m in self.method_subset if m not in self.all_methods()]
        if unknown:
            raise ValueError(
                f"unknown methods {unknown} (the Top-M@K methods are top<M>@{self.k} for the M values {list(self.m)}); "
                f"valid methods: {valid}"
            )
        if not self.method_subset:
            raise ValueError(f"no methods chosen; valid methods: {valid}")

    def all_methods(self) -> list[str]:
        """Every method key: the baselines (:data:`BASELINES`) and ``top<M>@<K>`` for each M of ``m``."""
        return [*BASELINES, *(f"top{m}@{self.k}" for m in self.m)]

    def methods(self) -> list[str]:
        """The method keys run: ``method_subset`` (all if ``None``) in the order of :meth:`all_methods`."""
        chosen = self.all_methods() if self.method_subset is None else self.method_subset
        return [m for m in self.all_methods() if m in chosen]

    def top_ms(self) -> list[int]:
        """The M values of the Top-M@K methods run."""
        return [m for m in self.m if f"top{m}@{self.k}" in self.methods()]

    def method_ent_coef(self, method: str) -> float:
        """The entropy coefficient ``method`` trains with."""
        return self.ent_coef_baselines if method.endswith("_ent") else self.ent_coef

    def run_key(self, method: str) -> dict[str, Any]:
        """The settings a cached run of ``method`` depends on. ``ent_coef`` is the coefficient the method trains with,
        so a run without the bonus is never reused for a ``*_ent`` method, and runs cached before the ``*_ent``
        methods existed (same keys, ``ent_coef`` 0) stay valid."""
        skip = {"games", "seeds", "m", "method_subset", "ent_coef_baselines", "eval_episodes", "curve_bins", "reps"}
        return {k: v for k, v in dataclasses.asdict(self).items() if k not in skip} | {
            "ent_coef": self.method_ent_coef(method),
            "eval_episodes": self.eval_episodes,
        }


def method_label(method: str, config: Config | None = None) -> str:
    """Display name of a method key (the ``*_ent`` labels state ``config.ent_coef_baselines``)."""
    if method in BASELINES:
        base = "PPO-V" if method.startswith("ppo_v") else "PPO-Q"
        return f"{base} + ent {(config or Config()).ent_coef_baselines:g}" if method.endswith("_ent") else base
    m, k = method[3:].split("@")
    return f"OrderGrad Top-{m}@{k}"


def policy_kwargs() -> dict[str, Any]:
    """The pgx MinAtar network for SB3's actor-critic policies (the same for all methods)."""
    from ordergrad_rl.agents import GridCNN

    return dict(features_extractor_class=GridCNN, net_arch=dict(pi=[64, 64], vf=[64, 64]))


def build_model(method: str, env, config: Config, seed: int, tensorboard_log: str | None = None):
    """PPO-V (SB3 ``PPO``), PPO-Q (each with or without the entropy bonus) or OrderGrad Top-M@K
    (``OrderGradPPO(advantage="q_critic")``) on ``env``."""
    common: dict[str, Any] = dict(
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        learning_rate=config.learning_rate,
        gamma=config.gamma,
        clip_range=config.clip_range,
        max_grad_norm=config.max_grad_norm,
        vf_coef=config.vf_coef,
        ent_coef=config.method_ent_coef(method),
        policy_kwargs=policy_kwargs(),
        seed=seed,
        device="cpu",
        tensorboard_log=tensorboard_log,
    )
    if method.startswith("ppo_v"):
        from stable_baselines3 import PPO

        return PPO("MlpPolicy", env, gae_lambda=config.gae_lambda_ppo, **common)
    from ordergrad_rl.agents import OrderGradPPO

    ppo_q = method.startswith("ppo_q")
    objective = "mean" if ppo_q else method
    lam = config.gae_lambda_ppo if ppo_q else config.gae_lambda_ordergrad
    return OrderGradPPO("MlpPolicy", env, advantage="q_critic", objective=objective, gae_lambda=lam, **common)


# ---------------------------------------------------------------------------------------------------------- one run
def _recorder(max_states: int = 2048):
    """A callback recording (step, return) of finished training episodes and the policy entropy of each rollout."""
    import torch as th
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
    from stable_baselines3.common.policies import ActorCriticPolicy

    class CurveRecorder(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.episodes: list[tuple[int, float]] = []
            self.entropy: list[tuple[int, float]] = []

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.episodes.append((self.num_timesteps, float(info["episode"]["r"])))
            return True

        def _on_rollout_end(self) -> None:
            # build_model's PPO and OrderGradPPO, whose categorical distribution has an entropy
            model, policy = self.model, self.model.policy
            assert isinstance(model, OnPolicyAlgorithm) and isinstance(policy, ActorCriticPolicy)
            obs = model.rollout_buffer.observations
            obs = obs.reshape(-1, *obs.shape[2:])
            if obs.shape[0] > max_states:
                obs = obs[np.linspace(0, obs.shape[0] - 1, max_states).astype(np.int64)]
            with th.no_grad():
                entropy = policy.get_distribution(th.as_tensor(obs)).entropy()
                assert entropy is not None
                entropy = entropy.mean()
            self.entropy.append((self.num_timesteps, float(entropy)))

    return CurveRecorder()


def eval_seed(seed: int) -> int:
    """The first evaluation env seed of training seed ``seed`` (env ``i`` of the evaluation VecEnv gets
    ``eval_seed(seed) + i``): ``seed * SEED_STRIDE + EVAL_SEED_OFFSET``, the block convention of ``reproduce
    tailrisk`` and ``reproduce benchmarks``.

    Disjoint blocks make the seeds' final scores independent draws, which the bootstrap intervals over seeds assume.
    Runs cached without ``eval_seed`` in their record (before it, on 2026-12-02) were evaluated on envs seeded
    ``10_000 + seed + i``: seeds 0, 1 and 2 of the README's tables shared 14 or 15 of their 16 evaluation envs. Seed 0
    keeps its envs; a cached run stays valid (each is still an unbiased draw of its own seed's score).
    """
    return block_seed(seed, EVAL_SEED_OFFSET)


def train_run(game: str, method: str, seed: int, config: Config, tensorboard_log: str | None = None) -> dict[str, Any]:
    """Train one method on one game with one seed; return its curves and final evaluation (JSON-able)."""
    import torch as th

    from ordergrad_rl.agents.common.evaluation import evaluate_episodes

    th.set_num_threads(1)  # one core per run; runs go in parallel processes
    env = make_minatar_vec_env(game, config.n_envs, seed=seed)
    # The runs of a (game, method) share a parent directory, so TensorBoard groups the seeds of a method.
    method_log = None if tensorboard_log is None else str(Path(tensorboard_log) / f"{game}_{method}")
    model = build_model(method, env, config, seed, method_log)
    recorder = _recorder()
    start = time.perf_counter()
    remove_runs(method_log, f"seed{seed}")  # a run trained again replaces its TensorBoard run, as its JSON
    model.learn(config.steps, callback=recorder, tb_log_name=f"seed{seed}")
    train_seconds = time.perf_counter() - start
    eval_env = make_minatar_vec_env(game, min(config.n_envs, config.eval_episodes), seed=eval_seed(seed))
    returns, _ = evaluate_episodes(
        model, eval_env, n_eval_episodes=config.eval_episodes, deterministic=False, return_episode_rewards=True
    )
    env.close()
    eval_env.close()
    return dict(
        game=game,
        method=method,
        seed=seed,
        steps=int(model.num_timesteps),
        train_seconds=train_seconds,
        steps_per_second=model.num_timesteps / train_seconds,
        eval_returns=[float(r) for r in returns],
        eval_seed=eval_seed(seed),
        episodes=recorder.episodes,
        entropy=recorder.entropy,
        config=config.run_key(method),
    )


#: The layout of a stored run (``<out>/runs/<id>.json``): raise it when what a stored run holds, or how
#: :func:`aggregate` reads it, changes. A stored run records it and the package version that trained it
#: (:func:`~ordergrad_rl.common.jobs.code_release`); only the runs stored by this layout and version are reused.
RUN_FORMAT = 1


def _run_id(game: str, method: str, seed: int) -> str:
    """The name of a run in the cache (``<out>/runs/<id>.json``)."""
    return f"{game}_{method.replace('@', 'at')}_s{seed}"


def _run_job(game: str, method: str, seed: int, config: Config, runs: Path, tensorboard_log: str | None) -> dict:
    """Train one run and cache it under ``runs`` (a job of :func:`ordergrad_rl.common.jobs.run_jobs`)."""
    run = train_run(game, method, seed, config, tensorboard_log) | code_release(RUN_FORMAT)
    RunCache(runs).save(_run_id(game, method, seed), run)
    return run


def run_experiment(
    config: Config,
    out: Path,
    workers: int = 1,
    tensorboard_log: str | None = None,
    quiet: bool = False,
    address: str | None = None,
) -> list[dict[str, Any]]:
    """All (game, method, seed) runs, cached under ``out/runs``, through :func:`ordergrad_rl.common.jobs.run_jobs`:
    ``workers`` local processes, or Ray Tune trials on the cluster at ``address``. A run stored with these
    settings by other code (:func:`~ordergrad_rl.common.jobs.other_code`) is trained again, named on stderr."""

    cache = RunCache(out / "runs")
    runs, jobs, outdated = [], [], []
    for seed in range(config.seeds):
        for game in config.games:
            for method in config.methods():
                run_id = _run_id(game, method, seed)
                cached = cache.load(run_id, config.run_key(method))
                release = None if cached is None else other_code(cached, RUN_FORMAT)
                if release is not None:
                    outdated.append(f"{run_id} by {release}")
                if cached is None or release is not None:
                    kwargs = dict(game=game, method=method, seed=seed, config=config, tensorboard_log=tensorboard_log)
                    jobs.append(Job(run_id, _run_job, {**kwargs, "runs": cache.directory}))
                else:
                    runs.append(cached)
    report_other_code(outdated, cache.directory, RUN_FORMAT, "reproduce minatar")
    if not jobs:
        return runs
    results = run_jobs(jobs, workers, address, out / "ray", desc=f"MinAtar runs ({len(runs)} cached)", quiet=quiet)
    return runs + list(results.values())


# ---------------------------------------------------------------------------------------------------------- analysis
def _normalize(game: str, value: np.ndarray | float) -> np.ndarray | float:
    return np.asarray(value) / MAX_SCORES[game]


def _binned(points: list[list[float]] | list[tuple[int, float]], steps: int, bins: int) -> np.ndarray:
    """Mean of the values whose step falls in each of ``bins`` equal windows of ``[0, steps]`` (carried forward
    into empty windows; NaN before the first value)."""
    out = np.full(bins, np.nan)
    if len(points):
        arr = np.asarray(points, dtype=np.float64)
        index = np.minimum((arr[:, 0] - 1) * bins // steps, bins - 1).astype(np.int64)
        sums = np.bincount(index, weights=arr[:, 1], minlength=bins)
        counts = np.bincount(index, minlength=bins)
        out = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        for i in range(1, bins):
            if np.isnan(out[i]):
                out[i] = out[i - 1]
    return out


def _score_matrix(runs: list[dict[str, Any]], method: str, games: list[str], seeds: int, value) -> np.ndarray:
    """``[seeds, games, ...]`` of ``value(run)`` (normalized) for one method."""
    table = {(r["seed"], r["game"]): r for r in runs if r["method"] == method}
    return np.stack([np.stack([_normalize(g, value(table[(s, g)])) for g in games]) for s in range(seeds)]).astype(
        np.float64
    )


def aggregate(runs: list[dict[str, Any]], config: Config) -> dict[str, Any]:
    """Per-method rliable aggregates of the final normalized scores, IQM curves, entropy curves, raw per-game."""
    from rliable import library as rly
    from rliable import metrics

    games = [g for g in config.games if g in MAX_SCORES]
    methods = config.methods()
    rng = np.random.RandomState(0)
    with warnings.catch_warnings():
        # arch (rliable's bootstrap) deprecates the RandomState that rliable passes; empty early bins are NaN.
        warnings.filterwarnings("ignore", category=FutureWarning, module="arch")
        warnings.filterwarnings("ignore", message="Mean of empty slice", category=RuntimeWarning)
        return _aggregate(runs, config, games, methods, rng, rly, metrics)


def _aggregate(runs, config, games, methods, rng, rly, metrics) -> dict[str, Any]:

    def final(run):
        return np.mean(run["eval_returns"])

    def curve(run):
        return _binned(run["episodes"], config.steps, config.curve_bins)

    summary: dict[str, Any] = {"methods": {}, "games": games, "steps": config.steps, "seeds": config.seeds}
    if games:
        finals = {m: _score_matrix(runs, m, games, config.seeds, final) for m in methods}
        point, ci = rly.get_interval_estimates(
            finals,
            lambda x: np.array([metrics.aggregate_median(x), metrics.aggregate_iqm(x), metrics.aggregate_mean(x)]),
            reps=config.reps,
            random_state=rng,
        )
        curves = {m: _score_matrix(runs, m, games, config.seeds, curve) for m in methods}
        curve_point, curve_ci = rly.get_interval_estimates(
            {m: np.nan_to_num(c, nan=0.0) for m, c in curves.items()},
            lambda x: np.array([metrics.aggregate_iqm(x[..., i]) for i in range(x.shape[-1])]),
            reps=max(config.reps // 4, 200),
            random_state=rng,
        )
        for m in methods:
            summary["methods"][m] = dict(
                label=method_label(m, config),
                median=point[m][0],
                iqm=point[m][1],
                mean=point[m][2],
                median_ci=ci[m][:, 0],
                iqm_ci=ci[m][:, 1],
                mean_ci=ci[m][:, 2],
                iqm_curve=curve_point[m],
                iqm_curve_ci=curve_ci[m],
            )
    summary["curve_steps"] = (np.arange(config.curve_bins) + 1) * config.steps / config.curve_bins
    per_game: dict[str, Any] = {}
    for game in config.games:
        per_game[game] = {}
        for m in methods:
            game_runs = [r for r in runs if r["method"] == m and r["game"] == game]
            finals_raw = [float(np.mean(r["eval_returns"])) for r in game_runs]
            entropy = np.stack([_binned(r["entropy"], config.steps, config.curve_bins) for r in game_runs])
            per_game[game][m] = dict(
                final_returns=finals_raw,
                final_mean=float(np.mean(finals_raw)),
                entropy_curve=np.nanmean(entropy, axis=0),
                steps_per_second=float(np.mean([r["steps_per_second"] for r in game_runs])),
            )
    summary["per_game"] = per_game
    return summary


# ---------------------------------------------------------------------------------------------------------- output
_COLORS = {"ppo_v": "tab:gray", "ppo_v_ent": "tab:orange", "ppo_q": "black", "ppo_q_ent": "tab:red"}


def _color(method: str, ms: tuple[int, ...], k: int):
    if method in _COLORS:
        return _COLORS[method]
    cmap = pyplot().get_cmap("viridis")
    m = int(method[3:].split("@")[0])
    return cmap(0.1 + 0.8 * (m - 1) / max(k - 1, 1))


def plot_aggregate(summary: dict[str, Any], config: Config, path: Path) -> Path:
    plt = pyplot()
    fig, (ax_curve, ax_bar) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw=dict(width_ratios=[1.3, 1]))
    steps = np.asarray(summary["curve_steps"])
    methods = config.methods()
    for m in methods:
        agg = summary["methods"][m]
        color = _color(m, config.m, config.k)
        ax_curve.plot(steps, agg["iqm_curve"], color=color, label=agg["label"])
        ax_curve.fill_between(steps, *np.asarray(agg["iqm_curve_ci"]), color=color, alpha=0.15)
    ax_curve.set(xlabel="environment steps", ylabel="IQM normalized training return", title="Aggregate curves")
    ax_curve.legend(fontsize=8)
    width = 0.8 / len(methods)
    for i, m in enumerate(methods):
        agg = summary["methods"][m]
        values = np.array([agg["median"], agg["iqm"], agg["mean"]])
        cis = np.array([agg["median_ci"], agg["iqm_ci"], agg["mean_ci"]]).T
        x = np.arange(3) + (i - (len(methods) - 1) / 2) * width
        ax_bar.bar(x, values, width, color=_color(m, config.m, config.k), label=agg["label"])
        ax_bar.errorbar(x, values, yerr=[values - cis[0], cis[1] - values], fmt="none", ecolor="k", capsize=2)
    ax_bar.set_xticks(range(3), ["median", "IQM", "mean"])
    ax_bar.set(ylabel="final normalized score (95% CI)", title="Final score")
    fig.suptitle(
        f"MinAtar {', '.join(GAMES[g] for g in summary['games'])}: "
        f"{config.steps:,} steps x {config.seeds} seeds, {config.n_envs} envs"
    )
    fig.tight_layout()
    return save_figure(fig, path)


def plot_effect_of_m(summary: dict[str, Any], config: Config, path: Path) -> Path:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    ms = config.top_ms()
    iqm = [summary["methods"][f"top{m}@{config.k}"]["iqm"] for m in ms]
    ci = np.array([summary["methods"][f"top{m}@{config.k}"]["iqm_ci"] for m in ms]).T
    ax.errorbar(
        ms,
        iqm,
        yerr=[np.asarray(iqm) - ci[0], ci[1] - np.asarray(iqm)],
        marker="o",
        capsize=3,
        label=f"OrderGrad Top-M@{config.k}",
    )
    for m in config.methods():
        if m in BASELINES:
            ax.axhline(summary["methods"][m]["iqm"], color=_COLORS[m], ls="--", label=method_label(m, config))
    ax.set(
        xlabel="M",
        ylabel="final IQM normalized score (95% CI)",
        title=f"Effect of M (OrderGrad entropy coefficient {config.ent_coef:g})",
    )
    ax.set_xticks(ms)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, path)


def plot_entropy(summary: dict[str, Any], config: Config, path: Path) -> Path:
    plt = pyplot()
    games = list(config.games)
    fig, axes = plt.subplots(1, len(games), figsize=(4.2 * len(games), 3.6), squeeze=False)
    steps = np.asarray(summary["curve_steps"])
    for ax, game in zip(axes[0], games, strict=True):
        for m in config.methods():
            ax.plot(
                steps,
                summary["per_game"][game][m]["entropy_curve"],
                color=_color(m, config.m, config.k),
                label=method_label(m, config),
            )
        ax.set(title=GAMES[game], xlabel="environment steps", ylabel="policy entropy (nats)")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(
        f"Policy entropy (entropy coefficient {config.ent_coef:g}, + ent: {config.ent_coef_baselines:g}; "
        f"mean of {config.seeds} seeds)"
    )
    fig.tight_layout()
    return save_figure(fig, path)


def format_table(summary: dict[str, Any], config: Config) -> str:
    headers = ["method", "median", "IQM", "IQM 95% CI", "mean", *(f"{GAMES[g]} return" for g in config.games)]
    rows = []
    for m in config.methods():
        agg = summary["methods"].get(m, {})
        lo, hi = agg.get("iqm_ci", (float("nan"), float("nan")))
        rows.append(
            [
                method_label(m, config),
                float(agg.get("median", np.nan)),
                float(agg.get("iqm", np.nan)),
                interval_cell(lo, hi, config.seeds),
                float(agg.get("mean", np.nan)),
                *(float(summary["per_game"][g][m]["final_mean"]) for g in config.games),
            ]
        )
    return markdown_table(headers, rows)


# ---------------------------------------------------------------------------------------------------------- CLI
#: Integer options: (flag, Config field or None, help). Defaults come from :class:`Config`.
_INT_OPTIONS: tuple[tuple[str, str | None, str], ...] = (
    ("--steps", "steps", "environment steps per run (paper: 1e7)"),
    ("--seeds", "seeds", "seeds per (game, method) (paper: 10)"),
    ("--k", "k", "K of Top-M@K"),
    ("--n-envs", "n_envs", "parallel envs per run (paper: 1024)"),
    ("--batch-size", "batch_size", "minibatch size (paper: 1024 of 131072-step rollouts)"),
    ("--eval-episodes", "eval_episodes", "final-evaluation episodes per run"),
    ("--workers", None, "runs trained in parallel processes, one torch thread each"),
)


#: ``--quick``: the same code path on tiny sizes (CI's smoke run; its numbers mean nothing).
QUICK: dict[str, object] = dict(steps=256, seeds=1, n_envs=2, batch_size=64, eval_episodes=2)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    default = Config()
    parser.add_argument(
        "--games",
        nargs="+",
        choices=sorted(GAMES),
        default=list(default.games),
        help="MinAtar games (default: %(default)s)",
    )
    parser.add_argument(
        "--m",
        type=positive_int,
        nargs="+",
        default=list(default.m),
        help="M values of OrderGrad Top-M@K: each M defines the method top<M>@<K> (paper: 1 3 5 7 8 9 10; "
        "default: %(default)s)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        metavar="METHOD",
        help=f"the methods to run, from {', '.join(BASELINES)} (+ ent: entropy coefficient "
        f"{default.ent_coef_baselines:g}, the others {default.ent_coef:g}) and top<M>@<K> for the M of --m "
        "(e.g. top9@10); --m and --k define which Top-M@K methods exist, --methods picks among them "
        "(default: all)",
    )
    for flag, field, text in _INT_OPTIONS:
        value = 1 if field is None else getattr(default, field)
        parser.add_argument(flag, type=positive_int, default=value, help=f"{text} (default: %(default)s)")
    parser.add_argument(
        "--tensorboard",
        type=str,
        default=None,
        metavar="DIR",
        help="TensorBoard log dir: <game>_<method>/seed<s>_1 per run (a run trained again replaces it)",
    )
    add_address_argument(parser)
    add_quick_argument(parser, QUICK)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_output_arguments(parser, "minatar")


def run(args: argparse.Namespace) -> int:
    default = Config()
    check_address_arguments(args, default_workers=1)
    apply_quick(args, QUICK, {dest: getattr(default, dest) for dest in QUICK})
    bad = [m for m in args.m if m > args.k]
    if bad:
        raise CommandError(f"--m values must be <= --k={args.k}, got {bad}")
    try:
        config = Config(
            games=tuple(dict.fromkeys(args.games)),
            steps=args.steps,
            seeds=args.seeds,
            m=tuple(sorted(set(args.m))),
            k=args.k,
            method_subset=None if args.methods is None else tuple(dict.fromkeys(args.methods)),
            n_envs=args.n_envs,
            batch_size=args.batch_size,
            eval_episodes=args.eval_episodes,
        )
    except ValueError as error:
        raise CommandError(f"--methods: {error}") from None
    # Before any training: the games (MinAtar) and the aggregates (rliable) come with the extra.
    require_extra("minatar", ("minatar", "rliable.library"), "reproduce minatar")
    start = time.perf_counter()
    runs = run_experiment(
        config,
        args.out,
        workers=args.workers,
        tensorboard_log=args.tensorboard,
        quiet=args.quiet,
        address=args.address,
    )
    summary = aggregate(runs, config)
    print(
        f"MinAtar ({', '.join(GAMES[g] for g in config.games)}): {config.steps:,} steps x {config.seeds} seeds per "
        f"method, {config.n_envs} envs x {config.n_steps} steps per rollout, minibatch {config.batch_size}, "
        f"{config.n_epochs} epochs, entropy coefficient {config.ent_coef:g} (+ ent baselines: "
        f"{config.ent_coef_baselines:g})"
    )
    print(format_table(summary, config))
    print(PAPER_CLAIMS)
    if summary["games"]:
        print(f"figure: {plot_aggregate(summary, config, args.out / 'minatar_aggregate.png')}")
        if config.top_ms():
            print(f"figure: {plot_effect_of_m(summary, config, args.out / 'minatar_effect_of_m.png')}")
        else:
            print("no OrderGrad Top-M@K method among --methods: the effect-of-M figure is skipped")
    print(f"figure: {plot_entropy(summary, config, args.out / 'minatar_entropy.png')}")
    if args.json is not None:
        payload = dict(
            config=dataclasses.asdict(config),
            wall_seconds=time.perf_counter() - start,  # this invocation (cached runs cost nothing)
            train_seconds_total=sum(r["train_seconds"] for r in runs),  # all runs, one process each
            **summary,
        )
        print(f"json: {write_json(args.json, payload)}")
    return 0
