"""RiskEvalCallback: periodic evaluation that logs the risk profile of the evaluation returns.

Tags, for ``log_name="eval"`` (the default):

* ``eval_risk/<key>`` for every key of :func:`ordergrad_rl.risk.risk_profile` (``mean``, ``std``, ``min``, ``max``,
  ``cvar_0.05`` ... ``quantile_0.95``) and the histogram ``eval_risk/episode_returns``;
* ``eval/mean_reward``, ``eval/mean_ep_length`` (as SB3's ``EvalCallback``);
* ``eval_info/<key>_mean`` and ``eval_info/<key>_final`` for every numeric scalar entry ``<key>`` of the env's step
  ``info``: ``_mean`` is the mean over an episode's steps, ``_final`` the value at its last step, each averaged
  over the evaluation episodes. A vector entry whose components the env names (its ``info_names`` attribute, see
  :func:`info_component_names`) gives one such pair per component under the component's name; on
  ``SyntheticTailRiskDeploy-v0``, ``eval_info/weight_high_yield_tailrisk_mean`` is the average weight of the
  high-yield asset and ``eval_info/max_drawdown_final`` the mean maximum drawdown of the deployment paths.
  Vector entries without names (``daily_returns``: the days of a rebalancing block) are one histogram each,
  ``eval_info/<key>``, of their values over all steps: per-position scalars of them would only add clutter.

Another ``log_name`` (e.g. ``"deploy"``) gives ``deploy_risk/``, ``deploy/`` and ``deploy_info/``, so several
evaluation envs can be logged side by side.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback, EventCallback
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, sync_envs_normalization

from ordergrad_rl.agents.checks import check_int
from ordergrad_rl.agents.risk_logging import HISTOGRAM_EXCLUDE, record_risk_profile, write_risk_layout


def evaluate_episodes(model: Any, env: VecEnv, **kwargs: Any) -> Any:
    """SB3's ``evaluate_policy(model, env, **kwargs)``; for a MaskablePPO model (``OrderGradMaskablePPO``)
    sb3-contrib's, which acts with the env's ``action_masks()`` (without them, masked actions could be picked)."""
    from sb3_contrib import MaskablePPO

    if isinstance(model, MaskablePPO):
        from sb3_contrib.common.maskable.evaluation import evaluate_policy as evaluate_masked

        return evaluate_masked(model, env, **kwargs)
    return evaluate_policy(model, env, **kwargs)


#: Info entries written by SB3 / Gymnasium wrappers, not by the env.
_WRAPPER_INFO_KEYS = frozenset(
    {"episode", "terminal_observation", "TimeLimit.truncated", "final_observation", "final_info", "_final_info"}
)


def info_component_names(venv: VecEnv) -> dict[str, tuple[str, ...]]:
    """Names of the components of an env's vector ``info`` entries: its ``info_names`` attribute, ``{}`` if none.

    An env declares ``info_names = {"weights": ("weight_high_yield_tailrisk", ...)}`` (one name per component) so
    that logs and tables show ``weight_high_yield_tailrisk`` instead of a position ``weights_0``.
    """
    try:
        names = venv.get_attr("info_names", [0])[0]
    except AttributeError:
        return {}
    return {key: tuple(value) for key, value in dict(names).items()}


class EpisodeInfoAggregator:
    """Per-episode step means and final values of numeric ``info`` entries (an ``evaluate_policy`` callback).

    Scalar entries and vector entries with component ``names`` are summarized per component (:meth:`summary`);
    the values of other vector entries are pooled over all steps (:meth:`histograms`).

    :param n_envs: number of envs of the evaluated VecEnv.
    :param keys: entries to aggregate; ``None``: every numeric scalar or vector entry except the wrappers' own.
    :param names: component names of vector entries (``{key: (name_0, name_1, ...)}``, see
        :func:`info_component_names`).
    """

    def __init__(
        self, n_envs: int, keys: Sequence[str] | None = None, names: dict[str, Sequence[str]] | None = None
    ) -> None:
        self.keys = None if keys is None else frozenset(keys)
        self.names = {key: tuple(value) for key, value in (names or {}).items()}
        self._sums: list[dict[str, np.ndarray]] = [{} for _ in range(n_envs)]
        self._steps = np.zeros(n_envs, dtype=np.int64)
        self.episode_means: dict[str, list[np.ndarray]] = {}
        self.episode_finals: dict[str, list[np.ndarray]] = {}
        self.pooled: dict[str, list[np.ndarray]] = {}

    def _numeric(self, info: dict[str, Any]) -> dict[str, np.ndarray]:
        values = {}
        for key, value in info.items():
            if key in _WRAPPER_INFO_KEYS or (self.keys is not None and key not in self.keys):
                continue
            array = np.asarray(value)
            if array.dtype.kind in "biuf" and array.ndim <= 1:
                values[key] = array.astype(np.float64)
        return values

    def _summarized(self, key: str, value: np.ndarray) -> bool:
        """Whether an entry gets per-component scalars: a scalar, or a vector with one name per component."""
        return value.ndim == 0 or len(self.names.get(key, ())) == value.size

    def __call__(self, locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        env_index, info, done = locals_["i"], locals_["info"], locals_["done"]
        values = self._numeric(info)
        sums = self._sums[env_index]
        for key, value in values.items():
            if self._summarized(key, value):
                sums[key] = sums[key] + value if key in sums else value
            else:
                self.pooled.setdefault(key, []).append(value.ravel())
        self._steps[env_index] += 1
        if done:
            for key, total in sums.items():
                self.episode_means.setdefault(key, []).append(total / self._steps[env_index])
            for key, value in values.items():
                if key in sums:
                    self.episode_finals.setdefault(key, []).append(value)
            self._sums[env_index] = {}
            self._steps[env_index] = 0

    def summary(self) -> dict[str, float]:
        """``{"<key>_mean": ..., "<key>_final": ...}``; for named vector entries ``<name>_mean``, ``<name>_final``
        per component."""
        out: dict[str, float] = {}
        for suffix, table in (("mean", self.episode_means), ("final", self.episode_finals)):
            for key, episodes in table.items():
                if len({np.shape(e) for e in episodes}) != 1:
                    continue  # an entry whose shape changes between episodes has no per-component meaning
                average = np.mean(episodes, axis=0)
                if average.ndim == 0:
                    out[f"{key}_{suffix}"] = float(average)
                else:
                    out.update({f"{name}_{suffix}": float(v) for name, v in zip(self.names[key], average, strict=True)})
        return out

    def histograms(self) -> dict[str, np.ndarray]:
        """``{key: [n] values}`` of the vector entries without component names, pooled over all steps."""
        return {key: np.concatenate(parts) for key, parts in self.pooled.items()}


class RiskEvalCallback(EventCallback):
    """Evaluate the agent every ``eval_freq`` calls and log the risk profile of the evaluation returns.

    Built on SB3's ``evaluate_policy`` (sb3-contrib's masked one for MaskablePPO models; it spreads the episodes
    evenly over the eval envs, so long episodes are not under-sampled); returns are the ``Monitor`` episode returns
    (undiscounted). See the module docstring for the tags. After each evaluation ``last_returns``, ``last_profile``
    and ``last_info`` hold the results, and ``evaluations_timesteps`` / ``evaluations_returns`` the history.

    :param eval_env: env id (built with ``make_sb3_vec_env(eval_env, n_eval_envs, seed)``), ``gym.Env`` (wrapped
        in ``Monitor`` and a ``DummyVecEnv``) or ``VecEnv``.
    :param n_eval_episodes: episodes per evaluation.
    :param eval_freq: evaluate every ``eval_freq`` calls of the callback (vectorized steps, as ``EvalCallback``);
        ``None`` disables periodic evaluation (call :meth:`evaluate` yourself).
    :param deterministic: act with the mean action / most likely action (the paper's deployment protocol).
    :param n_eval_envs: number of envs built when ``eval_env`` is an id.
    :param log_name: tag stem: ``<log_name>_risk/``, ``<log_name>/``, ``<log_name>_info/``.
    :param info_keys: info entries to aggregate; ``None``: all numeric ones; ``()``: none.
    :param callback_after_eval: callback triggered after every evaluation (``EventCallback`` semantics).
    :param seed: seed of the eval env built from an id.
    :param verbose: 1 prints a line per evaluation.
    :param warn: pass ``evaluate_policy``'s warning about missing ``Monitor`` wrappers through.
    """

    def __init__(
        self,
        eval_env: gym.Env | VecEnv | str,
        n_eval_episodes: int = 100,
        eval_freq: int | None = 10_000,
        deterministic: bool = True,
        n_eval_envs: int = 1,
        log_name: str = "eval",
        info_keys: Sequence[str] | None = None,
        callback_after_eval: BaseCallback | None = None,
        seed: int | None = None,
        verbose: int = 0,
        warn: bool = True,
    ) -> None:
        super().__init__(callback_after_eval, verbose=verbose)
        check_int("n_eval_episodes", n_eval_episodes, 1)
        if eval_freq is not None:
            check_int("eval_freq", eval_freq, 1)
        if isinstance(eval_env, str):
            from ordergrad_rl.envs import make_sb3_vec_env

            eval_env = make_sb3_vec_env(eval_env, n_eval_envs, seed=seed)
        elif not isinstance(eval_env, VecEnv):
            env = eval_env if isinstance(eval_env, Monitor) else Monitor(eval_env)
            eval_env = DummyVecEnv([lambda: env])
        self.eval_env: VecEnv = eval_env
        self.n_eval_episodes = n_eval_episodes
        self.eval_freq = eval_freq
        self.deterministic = deterministic
        self.log_name = log_name
        self.info_keys = None if info_keys is None else tuple(info_keys)
        self.warn = warn
        self.last_returns: np.ndarray | None = None
        self.last_profile: dict[str, float] = {}
        self.last_info: dict[str, float] = {}
        self.evaluations_timesteps: list[int] = []
        self.evaluations_returns: list[np.ndarray] = []

    @property
    def risk_prefix(self) -> str:
        """Prefix of the risk-profile tags (``eval_risk`` by default)."""
        return f"{self.log_name}_risk"

    def _init_callback(self) -> None:
        from ordergrad_rl.agents.episodic import EpisodicAlgorithmMixin  # (episodic imports this module)

        # OrderGrad agents write one layout for all their risk tags; for other SB3 models (baselines) write ours.
        if not isinstance(self.model, EpisodicAlgorithmMixin):
            write_risk_layout(self.logger, [self.risk_prefix])

    def _on_step(self) -> bool:
        if self.eval_freq is not None and self.n_calls % self.eval_freq == 0:
            self.evaluate()
            return self._on_event()
        return True

    def evaluate(self) -> dict[str, float]:
        """Run one evaluation now, record its tags and dump the logger; return the risk profile."""
        if self.model.get_vec_normalize_env() is not None:
            sync_envs_normalization(self.training_env, self.eval_env)
        infos = EpisodeInfoAggregator(self.eval_env.num_envs, self.info_keys, info_component_names(self.eval_env))
        episode_returns, episode_lengths = evaluate_episodes(
            self.model,
            self.eval_env,
            n_eval_episodes=self.n_eval_episodes,
            deterministic=self.deterministic,
            return_episode_rewards=True,
            warn=self.warn,
            callback=None if self.info_keys == () else infos,
        )
        returns = np.asarray(episode_returns, dtype=np.float64)
        self.last_returns = returns
        self.last_profile = record_risk_profile(self.logger, self.risk_prefix, returns)
        self.last_info = infos.summary()
        for key, value in self.last_info.items():
            self.logger.record(f"{self.log_name}_info/{key}", value)
        for key, values in infos.histograms().items():
            self.logger.record(f"{self.log_name}_info/{key}", th.as_tensor(values), exclude=HISTOGRAM_EXCLUDE)
        self.logger.record(f"{self.log_name}/mean_reward", float(returns.mean()))
        self.logger.record(f"{self.log_name}/mean_ep_length", float(np.mean(episode_lengths)))
        self.evaluations_timesteps.append(self.num_timesteps)
        self.evaluations_returns.append(returns)
        if self.verbose >= 1:
            profile = self.last_profile
            print(
                f"Eval num_timesteps={self.num_timesteps}: mean={profile['mean']:.3f} "
                f"cvar_0.1={profile['cvar_0.1']:.3f} median={profile['quantile_0.5']:.3f}"
            )
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)
        return self.last_profile
