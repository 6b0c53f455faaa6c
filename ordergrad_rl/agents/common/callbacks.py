"""Periodic evaluation callbacks: :class:`RiskEvalCallback` (the risk profile of the evaluation returns) and
:class:`PassAtKEvalCallback` (the pass@k curve of sampled episodes per context), both on
:class:`PeriodicEvalCallback`. What they run lives in :mod:`ordergrad_rl.agents.common.evaluation`.

Tags of :class:`RiskEvalCallback`, for ``log_name="eval"`` (the default):

* ``eval_risk/<key>`` for every key of :func:`ordergrad_rl.risk.risk_profile` (``mean``, ``std``, ``min``, ``max``,
  ``cvar_0.05`` ... ``quantile_0.95``) and the histogram ``eval_risk/episode_returns``;
* ``eval/mean_reward``, ``eval/mean_ep_length`` and, when the episodes end with ``info["is_success"]``,
  ``eval/success_rate`` (as SB3's ``EvalCallback``);
* ``eval_info/<key>_mean`` and ``eval_info/<key>_final`` for every numeric scalar entry ``<key>`` of the env's step
  ``info``: ``_mean`` is the mean over an episode's steps, ``_final`` the value at its last step, each averaged
  over the evaluation episodes. A vector entry whose components the env names (its ``info_names`` attribute, see
  :func:`~ordergrad_rl.agents.common.evaluation.info_component_names`) gives one such pair per component under the
  component's name; on ``SyntheticTailRiskDeploy-v0``, ``eval_info/weight_high_yield_tailrisk_mean`` is the average
  weight of the high-yield asset and ``eval_info/max_drawdown_final`` the mean maximum drawdown of the deployment
  paths. Vector entries without names (``daily_returns``: the days of a rebalancing block) are one histogram each,
  ``eval_info/<key>``, of their values over all steps: per-position scalars of them would only add clutter.

Another ``log_name`` (e.g. ``"deploy"``) gives ``deploy_risk/``, ``deploy/`` and ``deploy_info/``, so several
evaluation envs can be logged side by side.

Tags of :class:`PassAtKEvalCallback` (``log_name="eval_pass@k"``, the default): ``eval_pass@k/k=<k>`` (mean over
contexts of the unbiased pass@k, :func:`ordergrad_rl.pass_at_k`), ``eval_pass@k/length_correct`` and
``eval_pass@k/length_incorrect`` (mean episode length of the correct and of the incorrect episodes; not written when
there are none). ``ordergrad-rl evaluate --pass-at-k N`` prints the same curve.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback, EventCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, sync_envs_normalization, unwrap_vec_normalize

from ordergrad_rl.agents.common import buffers
from ordergrad_rl.agents.common.base_class import OrderGradAlgorithmMixin
from ordergrad_rl.agents.common.env_util import AgentEnv, sb3_vec_env_of
from ordergrad_rl.agents.common.evaluation import (
    SUCCESS_KEY,
    EpisodeEndCheck,
    EpisodeInfoAggregator,
    PassAtK,
    all_contexts,
    evaluate_episodes,
    gsde_random_state_kept,
    info_component_names,
    sample_successes,
)
from ordergrad_rl.agents.common.risk_logging import (
    HISTOGRAM_EXCLUDE,
    record_risk_profile,
    record_scalar,
    write_risk_layout,
)
from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.common.warning_util import user_stacklevel
from ordergrad_rl.envs.sb3_vec_env import has_native_batch, make_sb3_vec_env
from ordergrad_rl.passk import checked_ks
from ordergrad_rl.risk import risk_profile


def as_eval_vec_env(env: AgentEnv | str, n_envs: int, seed: int | None) -> VecEnv:
    """An evaluation env as a VecEnv: an id is built with ``make_sb3_vec_env(env, n_envs, seed)``, a VecEnv kept, a
    ``gym.Env`` wrapped in ``Monitor`` (unless it is one) and a ``DummyVecEnv``, a Gymnasium vector env as the agents
    take one (:func:`~ordergrad_rl.agents.common.env_util.sb3_vec_env_of`: a native batch, others refused)."""
    if isinstance(env, str):
        return make_sb3_vec_env(env, n_envs, seed=seed)
    if isinstance(env, gym.vector.VectorEnv):
        return sb3_vec_env_of(env)
    if isinstance(env, VecEnv):
        return env
    monitored = env if isinstance(env, Monitor) else Monitor(env)
    return DummyVecEnv([lambda: monitored])


def space_fits(space: spaces.Space, expected: spaces.Space) -> bool:
    """Whether observations or actions of ``space`` fit a policy built for ``expected``: a space of the same kind
    and shape (per key of a ``Dict``) and, for discrete ones, of the same ``n`` / ``nvec``. ``Box`` bounds may
    differ, as SB3's ``predict`` takes them."""
    if isinstance(expected, spaces.Dict):
        return (
            isinstance(space, spaces.Dict)
            and space.keys() == expected.keys()
            and all(space_fits(space[key], expected[key]) for key in expected.keys())
        )
    size, expected_size = (np.asarray(getattr(each, "nvec", getattr(each, "n", None))) for each in (space, expected))
    return type(space) is type(expected) and space.shape == expected.shape and np.array_equal(size, expected_size)


def check_eval_env_fits(model: BaseAlgorithm, eval_env: VecEnv) -> None:
    """The spaces of ``eval_env`` as the model would wrap it (images transposed as SB3 transposes them) against the
    model's (:func:`space_fits`), and a ``VecNormalize`` around ``eval_env`` where the training env has one.

    :raises ValueError: naming the eval env's mismatch.
    """
    wrapped = BaseAlgorithm._wrap_env(eval_env)
    for name in ("observation_space", "action_space"):
        space, expected = getattr(wrapped, name), getattr(model, name)
        if not space_fits(space, expected):
            raise ValueError(
                f"the eval env's {name} {space} does not fit the model's {expected}: evaluate on the training env's "
                "kind"
            )
    if model.get_vec_normalize_env() is not None and unwrap_vec_normalize(eval_env) is None:
        raise ValueError(
            "the training env is wrapped in VecNormalize and the eval env is not: the policy acts on normalized "
            "observations, and evaluation syncs the training statistics into the eval env's VecNormalize; wrap it "
            "as VecNormalize(eval_env, training=False, norm_reward=False)"
        )


class PeriodicEvalCallback(EventCallback):
    """Evaluate the agent every ``eval_freq`` calls: :meth:`evaluate` runs :meth:`_evaluate` (the subclass's
    evaluation, which records its tags, sets ``last_mean_reward`` to its score and returns its result), keeps the
    history, prints a line if ``verbose``, dumps the logger, writes ``evaluations.npz`` and, on a new best score,
    saves the model and triggers ``callback_on_new_best``, as SB3's ``EvalCallback``.

    ``last_mean_reward`` and ``best_mean_reward`` hold the last and the best score (``-inf`` before the first
    evaluation), under the names SB3's ``StopTrainingOnRewardThreshold`` (as ``callback_on_new_best``) and
    ``StopTrainingOnNoModelImprovement`` (as ``callback_after_eval``) read.

    :param eval_env: the evaluation env (see :func:`as_eval_vec_env`).
    :param eval_freq: evaluate every ``eval_freq`` calls of the callback (vectorized steps, as SB3's
        ``EvalCallback``), and once more at the end of training (the final policy); ``None``: only when
        :meth:`evaluate` is called.
    :param n_eval_envs: envs built when ``eval_env`` is an id; ``None``: ``default_n_eval_envs``. With an env passed
        it must be ``None`` or the env's own number of envs (it cannot change it).
    :param default_n_eval_envs: envs built for an id when ``n_eval_envs`` is ``None``.
    :param log_name: tag stem.
    :param callback_after_eval: callback triggered after every evaluation (``EventCallback`` semantics).
    :param seed: seed of the eval env built from an id (seed an env passed yourself).
    :param verbose: 1 prints a line per evaluation.
    :param best_model_save_path: folder where the model with the best score so far is saved as ``best_model.zip``;
        ``None``: not saved.
    :param log_path: folder of ``evaluations.npz``, rewritten after each evaluation (``timesteps`` and the
        subclass's :meth:`_evaluations`); ``None``: not written.
    :param callback_on_new_best: callback triggered when the score improves.
    :param best_metric: the score's name (the verbose "New best" line).
    :raises ValueError: ``n_eval_envs`` or ``seed`` given with an env passed (they build the env of an id).
    """

    def __init__(
        self,
        eval_env: AgentEnv | str,
        eval_freq: int | None,
        n_eval_envs: int | None,
        default_n_eval_envs: int,
        log_name: str,
        callback_after_eval: BaseCallback | None = None,
        seed: int | None = None,
        verbose: int = 0,
        best_model_save_path: str | None = None,
        log_path: str | None = None,
        callback_on_new_best: BaseCallback | None = None,
        best_metric: str = "mean",
    ) -> None:
        super().__init__(callback_after_eval, verbose=verbose)
        if eval_freq is not None:
            check_int("eval_freq", eval_freq, 1)
        if n_eval_envs is not None:
            check_int("n_eval_envs", n_eval_envs, 1)
        if isinstance(eval_env, str):
            self.eval_env: VecEnv = as_eval_vec_env(eval_env, n_eval_envs or default_n_eval_envs, seed)
        else:
            self.eval_env = as_eval_vec_env(eval_env, 1, None)
            if n_eval_envs not in (None, self.eval_env.num_envs) or seed is not None:
                # both build the env of an id: on an env passed they were ignored, silently
                raise ValueError(
                    f"n_eval_envs and seed build the eval env of an id; the {type(eval_env).__name__} passed is used "
                    f"as it is (got n_eval_envs={n_eval_envs}, seed={seed}): make it with its number of envs and its "
                    "seed, e.g. make_vec_env(env_id, n_envs, seed=seed), or pass the id"
                )
        self.eval_freq = eval_freq
        self.log_name = log_name
        self.best_model_save_path = best_model_save_path
        self.log_path = None if log_path is None else os.path.join(log_path, "evaluations")
        self.callback_on_new_best = callback_on_new_best
        if callback_on_new_best is not None:
            callback_on_new_best.parent = self
        self.best_metric = best_metric
        self.evaluations_timesteps: list[int] = []
        self.last_mean_reward = -np.inf
        self.best_mean_reward = -np.inf
        self._continue_training = True

    def _init_callback(self) -> None:
        # SB3's EvalCallback warns when the training and eval envs are of different types, then fails at the first
        # evaluation, eval_freq steps into training, on those that cannot work: an env of other spaces (deep in
        # predict: "Unexpected observation shape") and a plain eval env of a VecNormalize training env (in the sync).
        check_eval_env_fits(self.model, self.eval_env)
        # ... and the difference that changes the numbers silently:
        if self.model.get_vec_normalize_env() is None and unwrap_vec_normalize(self.eval_env) is not None:
            warnings.warn(
                "the eval env is wrapped in VecNormalize and the training env is not: the policy is evaluated on "
                "observations normalized by the eval env's own running statistics, not on observations as it was "
                "trained on them; wrap the eval env as the training env is",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        if self.best_model_save_path is not None:
            os.makedirs(self.best_model_save_path, exist_ok=True)
        if self.log_path is not None:
            os.makedirs(os.path.dirname(self.log_path), exist_ok=True)
        if self.callback_on_new_best is not None:
            self.callback_on_new_best.init_callback(self.model)

    def _on_step(self) -> bool:
        if self.eval_freq is not None and self.n_calls % self.eval_freq == 0:
            self.evaluate()
            return self._on_event()
        return True

    def _on_training_end(self) -> None:
        # Periodic evaluation also evaluates the final policy, whatever the frequency: a run shorter than one
        # period (49 updates of OrderGradPPO against a 50-update period) would otherwise log no evaluation at all.
        if self.eval_freq is not None and (
            not self.evaluations_timesteps or self.evaluations_timesteps[-1] != self.num_timesteps
        ):
            self.evaluate()

    def evaluate(self) -> Any:
        """Run one evaluation now, record its tags and dump the logger, write ``evaluations.npz`` and, on a new
        best score, save the model and trigger ``callback_on_new_best``; return the evaluation's result. A
        ``VecNormalize`` eval env first gets the training env's statistics, as in SB3's ``EvalCallback``.

        :raises RuntimeError: the callback has no model yet (it gets one from ``learn`` or ``init_callback``), or
            the model no logger (SB3's ``learn`` or ``set_logger`` gives it one)."""
        if getattr(self, "model", None) is None:
            raise RuntimeError(
                f"{type(self).__name__}.evaluate() evaluates the model the callback belongs to: pass the callback to "
                "model.learn(callback=...) or call its init_callback(model) first"
            )
        if getattr(self.model, "_logger", None) is None:  # SB3's logger property failed with an AttributeError
            raise RuntimeError(
                f"{type(self).__name__}.evaluate() records its tags in the model's logger, which SB3 sets in learn: "
                "give a model that has not learned one first, e.g. model.set_logger(stable_baselines3.common.logger."
                "configure(folder, ['stdout', 'tensorboard']))"
            )
        if self.model.get_vec_normalize_env() is not None:
            sync_envs_normalization(self.training_env, self.eval_env)
        with gsde_random_state_kept(self.model):  # a gSDE policy's sampled episodes draw their matrices
            result = self._evaluate()
        self.evaluations_timesteps.append(self.num_timesteps)
        if self.verbose >= 1:
            print(f"Eval num_timesteps={self.num_timesteps}: {self._summary()}")
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)
        if self.log_path is not None:
            np.savez(self.log_path, timesteps=self.evaluations_timesteps, **self._evaluations())
        self._continue_training = True
        if self.last_mean_reward > self.best_mean_reward:
            if self.verbose >= 1:
                print(f"New best {self.best_metric}!")
            if self.best_model_save_path is not None:
                self.model.save(os.path.join(self.best_model_save_path, "best_model"))
            self.best_mean_reward = self.last_mean_reward
            if self.callback_on_new_best is not None:
                self._continue_training = self.callback_on_new_best.on_step()
        return result

    def _on_event(self) -> bool:
        # as SB3's EvalCallback: callback_on_new_best stopping training skips callback_after_eval
        return self._continue_training and super()._on_event()

    def _evaluate(self) -> Any:
        """One evaluation: run it, record its tags, keep its result; return it."""
        raise NotImplementedError

    def _summary(self) -> str:
        """The verbose line's text for the last evaluation."""
        raise NotImplementedError

    def _evaluations(self) -> dict[str, Any]:
        """The history written to ``evaluations.npz`` beside ``timesteps``: ``{key: one entry per evaluation}``."""
        raise NotImplementedError


class RiskEvalCallback(PeriodicEvalCallback):
    """Evaluate the agent every ``eval_freq`` calls and log the risk profile of the evaluation returns.

    Built on SB3's ``evaluate_policy`` (sb3-contrib's masked one for MaskablePPO models; it spreads the episodes
    evenly over the eval envs, so long episodes are not under-sampled); returns are the ``Monitor`` episode returns
    (undiscounted). An episode that has not ended after training's bound (``MAX_EPISODE_STEPS``, 100,000 steps)
    raises an :class:`~ordergrad_rl.agents.common.evaluation.EndlessEpisodeError`, and as many steps of an eval env
    whose ``Monitor`` recorded no end while its episodes ended (a wrapper outside the ``Monitor`` ends them) an
    :class:`~ordergrad_rl.agents.common.evaluation.UnrecordedEpisodeError` (``evaluate_policy`` would wait for them
    forever). See the module docstring for the tags. After each evaluation ``last_returns``, ``last_profile``,
    ``last_info`` and ``last_successes`` (the episodes' final ``info["is_success"]``, if any) hold the results,
    and ``evaluations_timesteps`` / ``evaluations_returns`` / ``evaluations_lengths`` the history.

    Models are selected as SB3's ``EvalCallback`` selects them, by a score that is the mean return by default and
    any key of :func:`~ordergrad_rl.risk.risk_profile` with ``best_metric`` (``"cvar_0.1"``: the best model by its
    lower tail). ``last_mean_reward`` and ``best_mean_reward`` hold the last and the best score (the mean return
    unless ``best_metric`` says otherwise), so that SB3's ``StopTrainingOnRewardThreshold`` (as
    ``callback_on_new_best``) and ``StopTrainingOnNoModelImprovement`` (as ``callback_after_eval``) act on it.

    :param eval_env: env id (built with ``make_sb3_vec_env(eval_env, n_eval_envs, seed)``), ``gym.Env`` (wrapped
        in ``Monitor`` and a ``DummyVecEnv``), ``VecEnv`` or a native batch's ``gym.make_vec`` (see
        :func:`as_eval_vec_env`).
    :param n_eval_episodes: episodes per evaluation.
    :param eval_freq: evaluate every ``eval_freq`` calls of the callback (vectorized steps, as ``EvalCallback``);
        ``None`` disables periodic evaluation (call :meth:`evaluate` yourself). The default, 10,000, is
        ``EvalCallback``'s, which this callback replaces as it is; at it, 100 episodes of 1,000 steps take 10 eval env
        steps per training step, so on long episodes give a larger one (``ordergrad-rl train`` evaluates every
        ``n_eval_episodes`` times the episode limit steps where that is more).
    :param deterministic: act with the mean action / most likely action (the paper's deployment protocol).
    :param n_eval_envs: number of envs built when ``eval_env`` is an id; an env passed has its own (a different
        number is refused). ``None``: on an id with a native batch (the tail-risk and TargetSum ids,
        :func:`~ordergrad_rl.envs.sb3_vec_env.has_native_batch`) and no ``seed``, ``n_eval_episodes`` envs, one
        episode each in a single batch (about 25 times faster than one env on ``SyntheticTailRiskDeploy-v0`` at 100
        episodes; unseeded, the episodes are i.i.d. draws either way); else 1. With a ``seed`` it stays 1, whose
        episodes the seed fixes: env ``i`` of a batch is seeded ``seed + i`` (SB3's convention), so a batch evaluates
        other episodes than one env under the same seed. Pass ``n_eval_envs=n_eval_episodes`` to have the batch with
        a seed too.
    :param log_name: tag stem: ``<log_name>_risk/``, ``<log_name>/``, ``<log_name>_info/``.
    :param info_keys: info entries to aggregate; ``None``: all numeric ones; ``()``: none.
    :param callback_after_eval: callback triggered after every evaluation (``EventCallback`` semantics).
    :param seed: seed of the eval env built from an id (seed an env passed yourself).
    :param verbose: 1 prints a line per evaluation.
    :param warn: pass ``evaluate_policy``'s warning about missing ``Monitor`` wrappers through.
    :param best_model_save_path: folder where the model with the best score so far is saved as ``best_model.zip``
        (as SB3's ``EvalCallback``); ``None``: not saved.
    :param log_path: folder of ``evaluations.npz``, rewritten after each evaluation with SB3's keys: ``timesteps``,
        ``results`` (the episode returns), ``ep_lengths`` and, for envs that report ``info["is_success"]``,
        ``successes``; ``None``: not written.
    :param callback_on_new_best: callback triggered when the score improves (SB3's ``callback_on_new_best``).
    :param best_metric: the score: ``"mean"`` (SB3's) or another key of :func:`~ordergrad_rl.risk.risk_profile`
        (``"cvar_0.1"``, ``"quantile_0.05"``, ``"min"``, ...).
    :param render: render the eval env during evaluation.
    """

    def __init__(
        self,
        eval_env: AgentEnv | str,
        n_eval_episodes: int = 100,
        eval_freq: int | None = 10_000,
        deterministic: bool = True,
        n_eval_envs: int | None = None,
        log_name: str = "eval",
        info_keys: Sequence[str] | None = None,
        callback_after_eval: BaseCallback | None = None,
        seed: int | None = None,
        verbose: int = 0,
        warn: bool = True,
        best_model_save_path: str | None = None,
        log_path: str | None = None,
        callback_on_new_best: BaseCallback | None = None,
        best_metric: str = "mean",
        render: bool = False,
    ) -> None:
        check_int("n_eval_episodes", n_eval_episodes, 1)
        metrics = list(risk_profile([0.0]))
        if best_metric not in metrics:
            raise ValueError(f"best_metric must be a key of the risk profile, one of {metrics}, got {best_metric!r}")
        if isinstance(info_keys, str) or not all(isinstance(key, str) for key in info_keys or ()):
            # a string is a sequence of its letters: info_keys="is_success" aggregated none of the infos
            raise ValueError(f"info_keys must be a sequence of info key names, e.g. ['is_success'], got {info_keys!r}")
        # A native batch runs its envs as one NumPy step; a seed keeps one env, whose episodes it fixes.
        one_batch = isinstance(eval_env, str) and seed is None and has_native_batch(eval_env)
        super().__init__(
            eval_env,
            eval_freq,
            n_eval_envs,
            n_eval_episodes if one_batch else 1,
            log_name,
            callback_after_eval,
            seed,
            verbose,
            best_model_save_path,
            log_path,
            callback_on_new_best,
            best_metric,
        )
        self.n_eval_episodes = n_eval_episodes
        self.deterministic = deterministic
        self.info_keys = None if info_keys is None else tuple(info_keys)
        self.warn = warn
        self.render = render
        self.last_returns: np.ndarray | None = None
        self.last_profile: dict[str, float] = {}
        self.last_info: dict[str, float] = {}
        self.evaluations_returns: list[np.ndarray] = []
        self.evaluations_lengths: list[np.ndarray] = []
        self.evaluations_successes: list[list[bool]] = []
        self.last_successes: list[bool] = []

    @property
    def risk_prefix(self) -> str:
        """Prefix of the risk-profile tags (``eval_risk`` by default); an OrderGrad agent puts it in its layout."""
        return f"{self.log_name}_risk"

    def _init_callback(self) -> None:
        super()._init_callback()
        # OrderGrad agents write one layout for all their risk tags; for other SB3 models (baselines) write ours.
        if not isinstance(self.model, OrderGradAlgorithmMixin):
            write_risk_layout(self.logger, [self.risk_prefix])

    def evaluate(self) -> dict[str, float]:
        """Run one evaluation now, record its tags and dump the logger, write ``evaluations.npz`` and, on a new
        best score, save the model and trigger ``callback_on_new_best``; return the risk profile."""
        return super().evaluate()

    def _evaluations(self) -> dict[str, Any]:
        successes = {"successes": self.evaluations_successes} if self.evaluations_successes else {}
        return {"results": self.evaluations_returns, "ep_lengths": self.evaluations_lengths, **successes}

    def _evaluate(self) -> dict[str, float]:
        infos = EpisodeInfoAggregator(self.eval_env.num_envs, self.info_keys, info_component_names(self.eval_env))
        self.last_successes = []

        ends = EpisodeEndCheck(self.eval_env.num_envs, buffers.MAX_EPISODE_STEPS)  # training's bound on an episode

        def on_step(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
            ends(locals_)
            # info["is_success"] at an episode's end, as SB3's EvalCallback reads it for eval/success_rate
            if locals_["done"] and locals_["info"].get(SUCCESS_KEY) is not None:
                self.last_successes.append(bool(locals_["info"][SUCCESS_KEY]))
            if self.info_keys != ():
                infos(locals_, globals_)

        episode_returns, episode_lengths = evaluate_episodes(
            self.model,
            self.eval_env,
            n_eval_episodes=self.n_eval_episodes,
            deterministic=self.deterministic,
            render=self.render,
            return_episode_rewards=True,
            warn=self.warn,
            callback=on_step,
        )
        returns = np.asarray(episode_returns, dtype=np.float64)
        not_finite = np.flatnonzero(~np.isfinite(returns))
        if not_finite.size:
            raise ValueError(
                f"{not_finite.size} of the {returns.size} evaluation episodes have a NaN or infinite return "
                f"({returns[not_finite[0]]} for episode {not_finite[0]}): the eval env's rewards must be finite for a "
                "risk profile"
            )
        self.last_returns = returns
        self.last_profile = record_risk_profile(self.logger, self.risk_prefix, returns)
        self.last_info = infos.summary()
        for key, value in self.last_info.items():
            record_scalar(self.logger, f"{self.log_name}_info/{key}", value)
        for key, values in infos.histograms().items():
            self.logger.record(f"{self.log_name}_info/{key}", th.as_tensor(values), exclude=HISTOGRAM_EXCLUDE)
        self.last_mean_reward = self.last_profile[self.best_metric]
        self.logger.record(f"{self.log_name}/mean_reward", self.last_profile["mean"])
        self.logger.record(f"{self.log_name}/mean_ep_length", float(np.mean(episode_lengths)))
        if self.last_successes:
            self.logger.record(f"{self.log_name}/success_rate", float(np.mean(self.last_successes)))
        self.evaluations_returns.append(returns)
        self.evaluations_lengths.append(np.asarray(episode_lengths))
        if self.last_successes:
            self.evaluations_successes.append(self.last_successes)
        return self.last_profile

    def _summary(self) -> str:
        profile = self.last_profile
        summary = f"mean={profile['mean']:.3f} cvar_0.1={profile['cvar_0.1']:.3f} median={profile['quantile_0.5']:.3f}"
        if self.last_successes:
            summary += f" success_rate={np.mean(self.last_successes):.2%}"
        return summary


class PassAtKEvalCallback(PeriodicEvalCallback):
    """Every ``eval_freq`` calls, sample ``n_samples`` episodes per context and log the pass@k curve.

    Models are selected as SB3's ``EvalCallback`` selects them, by a score: the pass@k that ``best_metric`` names
    (``"pass@1"``, the mean success rate, by default; any ``k`` up to ``n_samples``, in ``ks`` or not).
    ``last_mean_reward`` and ``best_mean_reward`` hold the last and the best score, so that SB3's
    ``StopTrainingOnRewardThreshold`` (as ``callback_on_new_best``) and ``StopTrainingOnNoModelImprovement`` (as
    ``callback_after_eval``) act on it. After each evaluation ``last_result`` (the sampled episodes) and
    ``last_curve`` hold the results, and ``evaluations_timesteps`` / ``evaluations_curves`` the history.

    :param eval_env: env id (built with ``make_sb3_vec_env(eval_env, n_eval_envs, seed)``), ``gym.Env`` or
        ``VecEnv``; episodes must end with ``info["is_success"]``.
    :param contexts: context indices (envs with ``context_key``/``n_contexts``, e.g. TargetSum's problems) or reset
        seeds (other envs); ``None``: every context the env declares.
    :param n_samples: episodes per context (the paper uses 1024).
    :param ks: the ``k`` of the curve, integers in ``[1, n_samples]`` (kept sorted); default ``1, 2, 4, ... <=
        n_samples``.
    :param eval_freq: evaluate every ``eval_freq`` calls (vectorized steps, as SB3's ``EvalCallback``); ``None``:
        only when :meth:`evaluate` is called.
    :param n_eval_envs: envs built when ``eval_env`` is an id (``None``: 64); an env passed has its own (a different
        number is refused).
    :param deterministic: act with the most likely action (default: sample, as pass@k intends).
    :param log_name: tag stem (``eval_pass@k/k=<k>``, ``eval_pass@k/length_correct``, ...).
    :param callback_after_eval: callback triggered after every evaluation.
    :param seed: seed of the eval env built from an id (seed an env passed yourself).
    :param verbose: 1 prints a line per evaluation.
    :param best_model_save_path: folder where the model with the best score so far is saved as ``best_model.zip``
        (as SB3's ``EvalCallback``); ``None``: not saved.
    :param log_path: folder of ``evaluations.npz``, rewritten after each evaluation with SB3's keys, one row per
        evaluation and one column per episode (context by context, ``n_samples`` each): ``timesteps``, ``results``
        (the episode returns), ``ep_lengths`` and ``successes`` (``info["is_success"]``); and ``ks`` with
        ``pass_at_k`` (``[evaluations, len(ks)]``, the curve); ``None``: not written.
    :param callback_on_new_best: callback triggered when the score improves (SB3's ``callback_on_new_best``).
    :param best_metric: the score, ``"pass@<k>"`` with ``1 <= k <= n_samples``.
    """

    def __init__(
        self,
        eval_env: AgentEnv | str,
        contexts: Sequence[int] | np.ndarray | None = None,
        n_samples: int = 64,
        ks: Sequence[int] | np.ndarray | None = None,
        eval_freq: int | None = 10_000,
        n_eval_envs: int | None = None,
        deterministic: bool = False,
        log_name: str = "eval_pass@k",
        callback_after_eval: BaseCallback | None = None,
        seed: int | None = None,
        verbose: int = 0,
        best_model_save_path: str | None = None,
        log_path: str | None = None,
        callback_on_new_best: BaseCallback | None = None,
        best_metric: str = "pass@1",
    ) -> None:
        self.n_samples = check_int("n_samples", n_samples, 1)
        # sorted, as the curve: evaluations.npz labels each pass_at_k column with them
        self.ks = checked_ks(ks, self.n_samples)
        match = re.fullmatch(r"pass@([1-9][0-9]*)", best_metric) if isinstance(best_metric, str) else None
        if match is None or int(match[1]) > self.n_samples:
            raise ValueError(
                f"best_metric must be 'pass@<k>' with k in [1, n_samples={n_samples}], e.g. 'pass@1', got "
                f"{best_metric!r}"
            )
        self.best_k = int(match[1])
        super().__init__(
            eval_env,
            eval_freq,
            n_eval_envs,
            64,
            log_name,
            callback_after_eval,
            seed,
            verbose,
            best_model_save_path,
            log_path,
            callback_on_new_best,
            best_metric,
        )
        self.contexts = all_contexts(self.eval_env) if contexts is None else np.asarray(contexts)
        self.deterministic = deterministic
        self.last_result: PassAtK | None = None
        self.last_curve: dict[int, float] = {}
        self.evaluations_curves: list[dict[int, float]] = []
        self.evaluations_results: list[PassAtK] = []

    def evaluate(self) -> dict[int, float]:
        """Run one evaluation now, record the tags and dump the logger, write ``evaluations.npz`` and, on a new
        best score, save the model and trigger ``callback_on_new_best``; return the curve ``{k: pass@k}``."""
        return super().evaluate()

    def _evaluate(self) -> dict[int, float]:
        result = sample_successes(self.model, self.eval_env, self.contexts, self.n_samples, self.deterministic)
        self.last_result = result
        self.last_curve = result.curve(self.ks)
        for k, value in self.last_curve.items():
            self.logger.record(f"{self.log_name}/k={k}", value)
        for name, value in result.mean_lengths().items():
            self.logger.record(f"{self.log_name}/{name}", value)
        self.last_mean_reward = result.curve([self.best_k])[self.best_k]
        self.evaluations_curves.append(self.last_curve)
        self.evaluations_results.append(result)
        return self.last_curve

    def _evaluations(self) -> dict[str, Any]:
        results = self.evaluations_results
        return {
            # sample_successes records every return (PassAtK.returns is None only in a PassAtK built by hand)
            "results": [result.returns.ravel() for result in results if result.returns is not None],
            "ep_lengths": [result.lengths.ravel() for result in results],
            "successes": [result.success.ravel() for result in results],
            "ks": self.ks,
            "pass_at_k": [list(curve.values()) for curve in self.evaluations_curves],
        }

    def _summary(self) -> str:
        return ", ".join(f"pass@{k}={v:.3f}" for k, v in self.last_curve.items())
