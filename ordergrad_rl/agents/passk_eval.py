"""pass@k of a policy: ``n`` sampled episodes per context, success from ``info["is_success"]``.

:func:`sample_successes` runs the episodes (contexts posed as in grouped rollouts, see
:mod:`ordergrad_rl.agents.groups`: ``reset(options={context_key: c})`` for envs that declare ``context_key``, else
``c`` is a reset seed with fresh dynamics streams); :class:`PassAtKEvalCallback` logs the curve during training,
and ``ordergrad-rl evaluate --pass-at-k N`` prints it. Success is read at each episode's last step, the
Gymnasium/SB3 convention.

Tags (``log_name="eval_pass@k"``, the default): ``eval_pass@k/k=<k>`` (mean over contexts of the unbiased pass@k,
:func:`ordergrad_rl.pass_at_k`), ``eval_pass@k/length_correct`` and ``eval_pass@k/length_incorrect`` (mean episode
length of the correct and of the incorrect episodes; not written when there are none).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EventCallback
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from ordergrad_rl.agents.checks import check_int
from ordergrad_rl.agents.groups import N_CONTEXTS, OPTIONS_RULE, GroupResetter
from ordergrad_rl.passk import default_ks, pass_at_k_curve

SUCCESS_KEY = "is_success"


@dataclass
class PassAtK:
    """Sampled episodes of ``P`` contexts, ``n`` each.

    :param contexts: ``[P]`` the contexts.
    :param success: ``[P, n]`` bool, ``info["is_success"]`` at each episode's last step.
    :param lengths: ``[P, n]`` episode lengths.
    """

    contexts: np.ndarray
    success: np.ndarray
    lengths: np.ndarray

    @property
    def n_samples(self) -> int:
        return int(self.success.shape[1])

    @property
    def n_correct(self) -> np.ndarray:
        """``[P]`` correct episodes per context."""
        return self.success.sum(axis=1)

    def curve(self, ks: Sequence[int] | None = None) -> dict[int, float]:
        """``{k: mean over contexts of pass@k}`` (default ``k = 1, 2, 4, ... <= n``)."""
        return pass_at_k_curve(self.n_correct, self.n_samples, ks)

    def mean_lengths(self) -> dict[str, float]:
        """``{"length_correct": ..., "length_incorrect": ...}``, each only if such episodes exist."""
        out = {}
        for name, mask in (("length_correct", self.success), ("length_incorrect", ~self.success)):
            if mask.any():
                out[name] = float(self.lengths[mask].mean())
        return out


def _as_vec_env(env: gym.Env | VecEnv | str, n_envs: int, seed: int | None) -> VecEnv:
    if isinstance(env, str):
        from ordergrad_rl.envs import make_sb3_vec_env

        return make_sb3_vec_env(env, n_envs, seed=seed)
    if isinstance(env, VecEnv):
        return env
    monitored = env if isinstance(env, Monitor) else Monitor(env)
    return DummyVecEnv([lambda: monitored])


def all_contexts(venv: VecEnv) -> np.ndarray:
    """``0 .. n_contexts - 1`` of an env that declares its contexts (the options rule).

    :raises ValueError: the env does not (pass the contexts, e.g. reset seeds, explicitly).
    """
    if not venv.has_attr(N_CONTEXTS):
        raise ValueError(
            "the env does not declare its contexts (attributes context_key and n_contexts): pass contexts explicitly "
            "(with the seed rule they are reset seeds, e.g. range(100))"
        )
    return np.arange(int(venv.get_attr(N_CONTEXTS, indices=[0])[0]))


def sample_successes(
    model: Any,
    venv: VecEnv,
    contexts: Sequence[int] | np.ndarray,
    n_samples: int,
    deterministic: bool = False,
    seed: int | None = None,
    on_episode: Callable[[], None] | None = None,
) -> PassAtK:
    """Run ``n_samples`` episodes of ``model`` from each context and record their success and length.

    Every env of ``venv`` takes the next (context, sample) job when its episode ends; episodes are independent
    samples of the policy given the context (see :mod:`ordergrad_rl.agents.groups`).

    :param model: anything with SB3's ``predict(obs, deterministic=...)``.
    :param venv: the env (``VecMonitor`` / ``VecNormalize`` wrappers only).
    :param contexts: ``[P]`` context indices (options rule) or reset seeds (seed rule).
    :param n_samples: episodes per context.
    :param deterministic: act with the most likely action (pass@k usually samples: ``False``).
    :param seed: seed of the fresh dynamics streams (seed rule).
    :param on_episode: called after each finished episode (progress bars).
    :raises ValueError: an episode ends without ``info["is_success"]``, or bad arguments.
    """
    n_samples = check_int("n_samples", n_samples, 1)
    contexts = np.asarray(contexts)
    if contexts.ndim != 1 or contexts.size == 0 or not np.issubdtype(contexts.dtype, np.integer):
        raise ValueError(f"contexts must be a non-empty 1-D sequence of integers, got {contexts!r}")
    resetter = GroupResetter(venv, np.random.default_rng(seed))
    if resetter.rule == OPTIONS_RULE and np.any((contexts < 0) | (contexts >= resetter.n_contexts)):
        raise ValueError(f"contexts must be in [0, {resetter.n_contexts}) for this env")
    jobs = np.repeat(np.arange(contexts.size), n_samples)  # job j: context jobs[j]
    success = np.zeros(jobs.size, dtype=bool)
    lengths = np.zeros(jobs.size, dtype=np.int64)
    n_envs = venv.num_envs
    job = np.full(n_envs, -1)  # the job each env runs (-1: none)
    steps = np.zeros(n_envs, dtype=np.int64)
    next_job = 0

    obs = venv.reset()
    first = np.arange(min(n_envs, jobs.size))
    job[first] = first
    next_job = first.size
    obs = resetter.reset(first, contexts[jobs[first]], obs)
    while np.any(job >= 0):
        actions, _ = model.predict(obs, deterministic=deterministic)
        obs, _, dones, infos = venv.step(actions)
        running = job >= 0
        steps[running] += 1
        ended = np.flatnonzero(dones & running)
        if ended.size == 0:
            continue
        for i in ended:
            if SUCCESS_KEY not in infos[i]:
                raise ValueError(
                    f"pass@k needs info['{SUCCESS_KEY}'] at the last step of each episode; the env's final info has "
                    f"{sorted(infos[i])}"
                )
            success[job[i]] = bool(infos[i][SUCCESS_KEY])
            lengths[job[i]] = steps[i]
            steps[i] = 0
            if on_episode is not None:
                on_episode()
        n_next = min(ended.size, jobs.size - next_job)
        job[ended] = -1
        if n_next:
            restart = ended[:n_next]
            job[restart] = np.arange(next_job, next_job + n_next)
            next_job += n_next
            obs = resetter.reset(restart, contexts[jobs[job[restart]]], obs)
    shape = (contexts.size, n_samples)
    return PassAtK(contexts, success.reshape(shape), lengths.reshape(shape))


class PassAtKEvalCallback(EventCallback):
    """Every ``eval_freq`` calls, sample ``n_samples`` episodes per context and log the pass@k curve.

    :param eval_env: env id (built with ``make_sb3_vec_env(eval_env, n_eval_envs, seed)``), ``gym.Env`` or
        ``VecEnv``; episodes must end with ``info["is_success"]``.
    :param contexts: context indices (envs with ``context_key``/``n_contexts``, e.g. TargetSum's problems) or reset
        seeds (other envs); ``None``: every context the env declares.
    :param n_samples: episodes per context (the paper uses 1024).
    :param ks: the ``k`` of the curve; default ``1, 2, 4, ... <= n_samples``.
    :param eval_freq: evaluate every ``eval_freq`` calls (vectorized steps, as SB3's ``EvalCallback``); ``None``:
        only when :meth:`evaluate` is called.
    :param n_eval_envs: envs built when ``eval_env`` is an id.
    :param deterministic: act with the most likely action (default: sample, as pass@k intends).
    :param log_name: tag stem (``eval_pass@k/k=<k>``, ``eval_pass@k/length_correct``, ...).
    :param callback_after_eval: callback triggered after every evaluation.
    :param seed: seed of the eval env built from an id, and of the fresh dynamics streams.
    :param verbose: 1 prints a line per evaluation.
    """

    def __init__(
        self,
        eval_env: gym.Env | VecEnv | str,
        contexts: Sequence[int] | np.ndarray | None = None,
        n_samples: int = 64,
        ks: Sequence[int] | None = None,
        eval_freq: int | None = 10_000,
        n_eval_envs: int = 64,
        deterministic: bool = False,
        log_name: str = "eval_pass@k",
        callback_after_eval: BaseCallback | None = None,
        seed: int | None = None,
        verbose: int = 0,
    ) -> None:
        super().__init__(callback_after_eval, verbose=verbose)
        self.n_samples = check_int("n_samples", n_samples, 1)
        if eval_freq is not None:
            check_int("eval_freq", eval_freq, 1)
        self.ks = default_ks(self.n_samples) if ks is None else np.asarray(ks)
        if self.ks.ndim != 1 or self.ks.size == 0 or np.any(self.ks < 1) or np.any(self.ks > self.n_samples):
            raise ValueError(f"ks must be a non-empty sequence of integers in [1, n_samples={n_samples}], got {ks!r}")
        self.eval_env = _as_vec_env(eval_env, check_int("n_eval_envs", n_eval_envs, 1), seed)
        self.contexts = all_contexts(self.eval_env) if contexts is None else np.asarray(contexts)
        self.eval_freq = eval_freq
        self.deterministic = deterministic
        self.log_name = log_name
        self.seed = seed
        self.last_result: PassAtK | None = None
        self.last_curve: dict[int, float] = {}
        self.evaluations_timesteps: list[int] = []
        self.evaluations_curves: list[dict[int, float]] = []

    def _on_step(self) -> bool:
        if self.eval_freq is not None and self.n_calls % self.eval_freq == 0:
            self.evaluate()
            return self._on_event()
        return True

    def evaluate(self) -> dict[int, float]:
        """Run one evaluation now, record the tags and dump the logger; return the curve ``{k: pass@k}``."""
        result = sample_successes(
            self.model, self.eval_env, self.contexts, self.n_samples, self.deterministic, self.seed
        )
        self.last_result = result
        self.last_curve = result.curve(self.ks)
        for k, value in self.last_curve.items():
            self.logger.record(f"{self.log_name}/k={k}", value)
        for name, value in result.mean_lengths().items():
            self.logger.record(f"{self.log_name}/{name}", value)
        self.evaluations_timesteps.append(self.num_timesteps)
        self.evaluations_curves.append(self.last_curve)
        if self.verbose >= 1:
            text = ", ".join(f"pass@{k}={v:.3f}" for k, v in self.last_curve.items())
            print(f"Eval num_timesteps={self.num_timesteps}: {text}")
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        self.logger.dump(self.num_timesteps)
        return self.last_curve
