"""Evaluation of a trained policy, apart from the callbacks that run it during training (as SB3's
``common/evaluation.py``):

* :func:`evaluate_episodes`: SB3's ``evaluate_policy`` (sb3-contrib's masked one for MaskablePPO models), each
  sampled episode of a gSDE policy with its own exploration matrix (:func:`episode_noise`);
* :class:`PolicyActor`: the same calls of ``predict``, step by step, for the other rollouts of a model (action masks
  of a MaskablePPO model, the LSTM state of a recurrent one);
* :func:`policy_table`: a model's ``[S, A]`` action probabilities in each state of a tabular env, for its exact
  return distribution (:func:`~ordergrad_rl.envs.tabular.return_distribution`);
* :class:`EpisodeInfoAggregator` and :func:`info_component_names`: per-episode summaries of numeric ``info`` entries;
* :func:`sample_successes` and :class:`PassAtK`: pass@k of a policy, ``n`` sampled episodes per context, success from
  ``info["is_success"]`` (contexts posed as in grouped rollouts, see :mod:`ordergrad_rl.agents.common.groups`:
  ``reset(options={context_key: c})`` for envs that declare ``context_key``, else ``c`` is a reset seed, each env's
  dynamics going on with its own stream). Success is read at each episode's last step, the Gymnasium/SB3 convention.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.evaluation import evaluate_policy as evaluate_masked
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common import buffers
from ordergrad_rl.agents.common.buffers import EndlessEpisodeError
from ordergrad_rl.agents.common.env_util import first_env_attr
from ordergrad_rl.agents.common.groups import N_CONTEXTS, OPTIONS_RULE, GroupResetter
from ordergrad_rl.agents.common.policies import gsde_distribution, resample_episode_noise
from ordergrad_rl.common.arguments import check_int
from ordergrad_rl.passk import pass_at_k_curve

__all__ = [
    "SUCCESS_KEY",
    "EndlessEpisodeError",
    "EpisodeEndCheck",
    "EpisodeInfoAggregator",
    "PassAtK",
    "PolicyActor",
    "all_contexts",
    "check_episode_ends",
    "check_episode_length",
    "evaluate_episodes",
    "info_component_names",
    "check_action_masks",
    "episode_noise",
    "gsde_random_state_kept",
    "policy_table",
    "sample_successes",
    "uses_action_masks",
    "UnrecordedEpisodeError",
]


def uses_action_masks(model: Any) -> bool:
    """Whether ``model`` acts with its env's ``action_masks()`` (a MaskablePPO model, ``OrderGradMaskablePPO``):
    without them, masked actions could be picked."""
    return isinstance(model, MaskablePPO)


def check_action_masks(model: Any, venv: VecEnv) -> None:
    """:raises ValueError: ``model`` :func:`uses_action_masks` and ``venv``'s envs have no ``action_masks()``."""
    if uses_action_masks(model) and not is_masking_supported(venv):
        raise ValueError(
            f"{type(model).__name__} acts with the env's action_masks(), which the env passed does not have: "
            "give it an action_masks() method or wrap it in sb3_contrib's ActionMasker"
        )


@contextmanager
def episode_noise(model: Any, n_envs: int, deterministic: bool) -> Iterator[Callable[[np.ndarray], None] | None]:
    """Evaluation episodes of a gSDE policy, each with its own exploration matrix, as in training.

    SB3's ``evaluate_policy`` keeps the policy's matrices for the whole evaluation, so that its sampled episodes all
    share one noise draw (from the same start, they repeat each other: the spread of their returns is not the
    policy's). Inside the block, call the function yielded with the ``[n_envs]`` bools of the envs that start an
    episode before acting in them: each gets a fresh matrix (all of them are drawn on entry). Training's
    ``sde_sample_freq`` does not apply, as in SB3's ``evaluate_policy``. The matrices are drawn from torch's random
    state, as SB3 samples any other policy's actions, so that two evaluations in a row draw different ones (seed
    torch, e.g. ``set_random_seed``, to repeat one); the policy's matrices are put back at exit. The evaluation
    callbacks put torch's random state back too (:func:`gsde_random_state_kept`), so that training goes on as
    without them.

    :param model: an SB3 / sb3-contrib / ordergrad-rl model.
    :param n_envs: the number of envs evaluated in one batch.
    :param deterministic: the greedy action is evaluated: nothing to draw.
    :return: the redrawing function, or ``None`` (nothing to do) for a deterministic evaluation or a policy without
        gSDE.
    """
    policy = getattr(model, "policy", None)
    distribution = None if deterministic else gsde_distribution(policy)
    if distribution is None:
        yield None
        return
    kept = distribution.exploration_mat, distribution.exploration_matrices, distribution.weights_dist
    try:
        policy.reset_noise(n_envs)  # type: ignore[union-attr]
        yield lambda starts: resample_episode_noise(policy, starts)
    finally:
        distribution.exploration_mat, distribution.exploration_matrices, distribution.weights_dist = kept


@contextmanager
def gsde_random_state_kept(model: Any) -> Iterator[None]:
    """Torch's random state (CPU, and the policy's GPU) put back at exit where ``model``'s policy uses gSDE: the
    evaluation callbacks evaluate inside, so that the exploration matrices a sampled evaluation draws
    (:func:`episode_noise`), which SB3's ``evaluate_policy`` does not draw, leave training as it was. Other policies
    sample from training's random state, as in SB3's ``EvalCallback``.
    """
    policy = getattr(model, "policy", None)
    if gsde_distribution(policy) is None:
        yield
        return
    device = th.device(policy.device)  # type: ignore[union-attr]
    devices = [device.index if device.index is not None else th.cuda.current_device()] if device.type == "cuda" else []
    with th.random.fork_rng(devices=devices):
        yield


def evaluate_episodes(model: Any, env: VecEnv, **kwargs: Any) -> Any:
    """SB3's ``evaluate_policy(model, env, **kwargs)``; for a model that :func:`uses_action_masks`, sb3-contrib's,
    which acts with the env's ``action_masks()``. Sampled episodes (``deterministic=False``) of a gSDE policy each
    get their own exploration matrix (:func:`episode_noise`), where ``evaluate_policy`` keeps one for all; two
    evaluations in a row draw different ones."""
    check_action_masks(model, env)
    evaluate = evaluate_masked if uses_action_masks(model) else evaluate_policy
    with episode_noise(model, env.num_envs, kwargs.get("deterministic", True)) as redraw:
        if redraw is not None:
            kwargs["callback"] = _redrawing_callback(kwargs.get("callback"), redraw, env.num_envs)
        return evaluate(model, env, **kwargs)


def _redrawing_callback(
    callback: Callable[[dict[str, Any], dict[str, Any]], None] | None,
    redraw: Callable[[np.ndarray], None],
    n_envs: int,
) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    """An ``evaluate_policy`` callback: ``callback``'s, then ``redraw`` for the env whose episode just ended (it
    starts the next one at the next step)."""

    def on_step(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        if callback is not None:
            callback(locals_, globals_)
        if locals_["done"]:
            starts = np.zeros(n_envs, dtype=bool)
            starts[locals_["i"]] = True
            redraw(starts)

    return on_step


def policy_table(
    model: Any, observations: Any, deterministic: bool = False, action_masks: np.ndarray | None = None
) -> np.ndarray:
    """``[S, A]`` action probabilities of ``model`` (a ``Discrete`` action space) in each state of a tabular env:
    ``return_distribution(mdp, policy_table(model, obs))`` is the exact return law of the policy
    (:func:`~ordergrad_rl.envs.tabular.return_distribution`).

    :param model: an SB3 / sb3-contrib / ordergrad-rl model without memory (a recurrent policy's action depends on
        its history: :func:`~ordergrad_rl.envs.tabular_history.history_return_distribution` takes it).
    :param observations: ``[S, *obs_shape]``, the observation of each state (``np.arange(S)`` for a ``Discrete``
        observation space).
    :param deterministic: the one-hot of the greedy action (``predict(deterministic=True)``) instead of the policy's
        probabilities. A model without a policy distribution (DQN, QR-DQN) deploys its greedy action either way.
    :param action_masks: ``[S, A]`` for a model that :func:`uses_action_masks`: masked actions get probability 0.
    :return: ``[S, A]`` float64, rows summing to 1.
    :raises ValueError: a recurrent model, an action space other than ``Discrete``, or a masked model without
        ``action_masks``.
    """
    name = type(model).__name__
    if getattr(model.policy, "lstm_actor", None) is not None:
        raise ValueError(f"{name}'s actions depend on its LSTM state, not on the state alone: score it on the tree of "
                         "its histories (ordergrad_rl.envs.tabular_history.history_return_distribution)")  # fmt: skip
    if not isinstance(model.action_space, spaces.Discrete):
        raise ValueError(f"policy_table needs a Discrete action space, got {model.action_space}")
    if uses_action_masks(model) and action_masks is None:
        raise ValueError(f"{name} acts with action masks: pass action_masks, [S, A] booleans of each state")
    masked = {} if action_masks is None else {"action_masks": np.asarray(action_masks, dtype=bool)}
    greedy, _ = model.predict(observations, deterministic=True, **masked)
    n_actions = int(model.action_space.n)
    if deterministic or not hasattr(model.policy, "get_distribution"):
        return np.eye(n_actions)[np.asarray(greedy).reshape(-1)]
    obs, _ = model.policy.obs_to_tensor(observations)
    with th.no_grad():
        distribution = model.policy.get_distribution(obs, **masked)
    return distribution.distribution.probs.cpu().numpy().astype(np.float64)


def check_episode_ends(locals_: dict[str, Any], max_episode_steps: int) -> None:
    """Part of an ``evaluate_policy`` callback: the episode of the env stepped (``locals_["i"]``) has ended or is
    shorter than ``max_episode_steps`` (``evaluate_policy`` has no bound: an env that never ends would be waited
    for forever).

    :raises EndlessEpisodeError: it has run ``max_episode_steps`` steps without ending.
    """
    env_index = locals_["i"]
    if not locals_["done"]:
        check_episode_length(env_index, locals_["current_lengths"][env_index], max_episode_steps)


class UnrecordedEpisodeError(ValueError):
    """An eval env's ``Monitor`` has recorded no episode's end in the bound on an episode's length, while episodes
    ended: a wrapper outside it ends them (rl-zoo3's ``env_wrapper`` sits there), and ``evaluate_policy``, which counts
    the ``Monitor``'s episodes, would wait forever."""


class EpisodeEndCheck:
    """Part of an ``evaluate_policy`` callback, over one evaluation: :func:`check_episode_ends`, and that each eval
    env's ``Monitor`` records an episode's end at least every ``max_episode_steps`` steps.

    :param n_envs: the eval envs.
    :param max_episode_steps: the bound on an episode's length.
    """

    def __init__(self, n_envs: int, max_episode_steps: int) -> None:
        self.max_episode_steps = max_episode_steps
        #: ``[n_envs]`` steps of each env since its ``Monitor`` recorded an end.
        self.unrecorded = np.zeros(n_envs, dtype=np.int64)

    def __call__(self, locals_: dict[str, Any]) -> None:
        """:raises EndlessEpisodeError: an episode without an end (:func:`check_episode_ends`).
        :raises UnrecordedEpisodeError: ends the ``Monitor`` did not record, for ``max_episode_steps`` steps."""
        check_episode_ends(locals_, self.max_episode_steps)
        i = locals_["i"]
        recorded = "episode" in locals_["info"] or not locals_["is_monitor_wrapped"]
        self.unrecorded[i] = 0 if recorded else self.unrecorded[i] + 1
        if self.unrecorded[i] >= self.max_episode_steps:
            raise UnrecordedEpisodeError(
                f"the Monitor of eval env {i} has recorded no episode's end in {self.max_episode_steps:,} steps, while "
                "episodes ended: a wrapper outside it ends them, and evaluation counts the Monitor's episodes only; "
                "end them inside the Monitor (a time limit: gym.make(env_id, max_episode_steps=...))"
            )


def check_episode_length(env_index: int, length: int, max_episode_steps: int) -> None:
    """:raises EndlessEpisodeError: the running episode of eval env ``env_index`` has ``length >= max_episode_steps``
    steps."""
    if length >= max_episode_steps:
        raise EndlessEpisodeError(
            f"the episode of eval env {env_index} has not ended after {max_episode_steps:,} steps (the env has no "
            "time limit, or a longer one): give it one, e.g. gym.make(env_id, max_episode_steps=...)"
        )


class PolicyActor:
    """The actions of ``model`` along a rollout of ``venv``, with ``predict`` called as :func:`evaluate_episodes`
    calls it: with the env's ``action_masks()`` for a model that :func:`uses_action_masks`, and with the state the
    previous call returned and ``episode_start`` set where an episode began since (a recurrent model's LSTM state,
    reset at each new episode; a model without memory ignores both). Every rollout of a model outside
    :func:`evaluate_episodes` acts through one, so that it scores the policy that was trained.

    Call :meth:`act` with each batch observation and :meth:`observe` with the ``dones`` of the step taken. A gSDE
    policy that samples (``deterministic=False``) acts inside ``with PolicyActor(...) as actor:``, where each episode
    gets its own exploration matrix, drawn from torch's random state, and the policy's are put back at the end
    (:func:`episode_noise`).

    :param model: anything with SB3's ``predict(obs, state=..., episode_start=..., deterministic=...)``.
    :param venv: the env rolled out.
    :param deterministic: act with the most likely action.
    :raises ValueError: ``model`` uses action masks and ``venv``'s envs have no ``action_masks()``.
    """

    def __init__(self, model: Any, venv: VecEnv, deterministic: bool) -> None:
        self.model = model
        self.venv = venv
        self.deterministic = deterministic
        check_action_masks(model, venv)
        self.use_masking = uses_action_masks(model)
        self.state: Any = None
        self.episode_start = np.ones(venv.num_envs, dtype=bool)
        self._noise = ExitStack()
        self._redraw: Callable[[np.ndarray], None] | None = None
        self._samples_noise = not deterministic and gsde_distribution(getattr(model, "policy", None)) is not None

    def __enter__(self) -> PolicyActor:
        self._redraw = self._noise.enter_context(episode_noise(self.model, self.venv.num_envs, self.deterministic))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._noise.close()
        self._redraw = None

    def act(self, obs: Any) -> np.ndarray:
        """``[n_envs, ...]`` actions for the batch observation ``obs`` (``[n_envs, ...]``, or a dict of such).

        :raises RuntimeError: a gSDE policy samples outside a ``with`` block (its episodes would share one
            exploration matrix).
        """
        if self._samples_noise:
            if self._redraw is None:
                raise RuntimeError(
                    f"{type(self.model).__name__}'s gSDE policy samples its actions: act inside "
                    "`with PolicyActor(...) as actor:`, which gives each episode its own exploration matrix"
                )
            if self.episode_start.any():
                self._redraw(self.episode_start)
        masks = {"action_masks": get_action_masks(self.venv)} if self.use_masking else {}
        actions, self.state = self.model.predict(
            obs, state=self.state, episode_start=self.episode_start, deterministic=self.deterministic, **masks
        )
        return actions

    def observe(self, dones: np.ndarray) -> None:
        """Record the ``[n_envs]`` ``dones`` of the step taken: those envs start a new episode (the VecEnv resets
        them; so does any later reset of the same envs, e.g. into a context, before the next :meth:`act`)."""
        self.episode_start = np.array(dones, dtype=bool)


#: Info entries written by SB3 / Gymnasium wrappers, not by the env.
_WRAPPER_INFO_KEYS = frozenset(
    {"episode", "terminal_observation", "TimeLimit.truncated", "final_observation", "final_info", "_final_info"}
)


def info_component_names(venv: VecEnv) -> dict[str, tuple[str, ...]]:
    """Names of the components of an env's vector ``info`` entries: its ``info_names`` attribute, ``{}`` if none.

    An env declares ``info_names = {"weights": ("weight_high_yield_tailrisk", ...)}`` (one name per component) so
    that logs and tables show ``weight_high_yield_tailrisk`` instead of a position ``weights_0``.
    """
    names = first_env_attr(venv, "info_names")
    return {} if names is None else {key: tuple(value) for key, value in dict(names).items()}


class EpisodeInfoAggregator:
    """Per-episode step means and final values of numeric ``info`` entries (an ``evaluate_policy`` callback).

    A step mean is over the steps that report the entry: one an env reports only at an episode's last step
    (``is_success``) has its final value as its mean, not that value divided by the episode's length.

    Scalar entries and vector entries with component ``names`` are summarized per component (:meth:`summary`);
    the values of other vector entries are pooled over all steps (:meth:`histograms`).

    :param n_envs: number of envs of the evaluated VecEnv.
    :param keys: entries to aggregate; ``None``: every numeric scalar or vector entry except the wrappers' own.
    :param names: component names of vector entries (``{key: (name_0, name_1, ...)}``, see
        :func:`info_component_names`).
    """

    def __init__(
        self, n_envs: int, keys: Sequence[str] | None = None, names: Mapping[str, Sequence[str]] | None = None
    ) -> None:
        self.keys = None if keys is None else frozenset(keys)
        self.names = {key: tuple(value) for key, value in (names or {}).items()}
        self._sums: list[dict[str, np.ndarray]] = [{} for _ in range(n_envs)]
        self._counts: list[dict[str, int]] = [{} for _ in range(n_envs)]  # the steps that reported each entry
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
        sums, counts = self._sums[env_index], self._counts[env_index]
        for key, value in values.items():
            if self._summarized(key, value):
                sums[key] = sums[key] + value if key in sums else value
                counts[key] = counts.get(key, 0) + 1
            else:
                self.pooled.setdefault(key, []).append(value.ravel())
        if done:
            for key, total in sums.items():
                self.episode_means.setdefault(key, []).append(total / counts[key])
            for key, value in values.items():
                if key in sums:
                    self.episode_finals.setdefault(key, []).append(value)
            self._sums[env_index] = {}
            self._counts[env_index] = {}

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


SUCCESS_KEY = "is_success"


@dataclass
class PassAtK:
    """Sampled episodes of ``P`` contexts, ``n`` each.

    :param contexts: ``[P]`` the contexts.
    :param success: ``[P, n]`` bool, ``info["is_success"]`` at each episode's last step.
    :param lengths: ``[P, n]`` episode lengths.
    :param returns: ``[P, n]`` episode returns (undiscounted: a ``Monitor``'s ``info["episode"]["r"]`` where the env
        has one, as SB3's ``evaluate_policy`` reads them, else the sum of the step rewards); ``None``: not recorded.
    """

    contexts: np.ndarray
    success: np.ndarray
    lengths: np.ndarray
    returns: np.ndarray | None = None

    @property
    def n_samples(self) -> int:
        return int(self.success.shape[1])

    @property
    def n_correct(self) -> np.ndarray:
        """``[P]`` correct episodes per context."""
        return self.success.sum(axis=1)

    def curve(self, ks: Sequence[int] | np.ndarray | None = None) -> dict[int, float]:
        """``{k: mean over contexts of pass@k}`` (default ``k = 1, 2, 4, ... <= n``)."""
        return pass_at_k_curve(self.n_correct, self.n_samples, ks)

    def mean_lengths(self) -> dict[str, float]:
        """``{"length_correct": ..., "length_incorrect": ...}``, each only if such episodes exist."""
        out = {}
        for name, mask in (("length_correct", self.success), ("length_incorrect", ~self.success)):
            if mask.any():
                out[name] = float(self.lengths[mask].mean())
        return out


def all_contexts(venv: VecEnv) -> np.ndarray:
    """``0 .. n_contexts - 1`` of an env that declares its contexts (the options rule).

    :raises ValueError: the env does not (pass the contexts, e.g. reset seeds, explicitly).
    """
    n_contexts = first_env_attr(venv, N_CONTEXTS)
    if n_contexts is None:
        raise ValueError(
            "the env does not declare its contexts (attributes context_key and n_contexts): pass contexts explicitly "
            "(with the seed rule they are reset seeds, e.g. range(100))"
        )
    return np.arange(int(n_contexts))


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
    samples of the policy given the context (see :mod:`ordergrad_rl.agents.common.groups`).

    :param model: anything with SB3's ``predict(obs, state=..., episode_start=..., deterministic=...)``; it acts
        through a :class:`PolicyActor` (action masks, LSTM state).
    :param venv: the env (``VecMonitor`` / ``VecNormalize`` wrappers only).
    :param contexts: ``[P]`` context indices (options rule) or reset seeds (seed rule).
    :param n_samples: episodes per context.
    :param deterministic: act with the most likely action (pass@k usually samples: ``False``).
    :param seed: deprecated, has no effect (a ``DeprecationWarning`` says so). It seeded the fresh dynamics
        streams that the seed rule once gave each env after its shared-seed reset; since the rule hands every env
        its own stream back (:class:`~ordergrad_rl.agents.common.groups.GroupResetter`), nothing is drawn from it.
        Seed the envs (``make_vec_env(..., seed=s)``) and the policy (``set_random_seed``) instead.
    :param on_episode: called after each finished episode (progress bars).
    :raises ValueError: an episode ends without ``info["is_success"]``, or bad arguments.
    :raises EndlessEpisodeError: an episode has not ended after training's bound (``MAX_EPISODE_STEPS``).
    """
    if seed is not None:
        warnings.warn(
            "sample_successes(seed=...) has no effect and is deprecated: seed the envs (make_vec_env(..., seed=s)) "
            "and the policy (set_random_seed) instead",
            DeprecationWarning,
            stacklevel=2,
        )
    n_samples = check_int("n_samples", n_samples, 1)
    contexts = np.asarray(contexts)
    if contexts.ndim != 1 or contexts.size == 0 or not np.issubdtype(contexts.dtype, np.integer):
        raise ValueError(f"contexts must be a non-empty 1-D sequence of integers, got {contexts!r}")
    resetter = GroupResetter(venv, np.random.default_rng())  # contexts are given: it draws nothing
    if resetter.rule == OPTIONS_RULE and np.any((contexts < 0) | (contexts >= resetter.n_contexts)):
        raise ValueError(f"contexts must be in [0, {resetter.n_contexts}) for this env")
    jobs = np.repeat(np.arange(contexts.size), n_samples)  # job j: context jobs[j]
    success = np.zeros(jobs.size, dtype=bool)
    lengths = np.zeros(jobs.size, dtype=np.int64)
    returns = np.zeros(jobs.size, dtype=np.float64)
    n_envs = venv.num_envs
    job = np.full(n_envs, -1)  # the job each env runs (-1: none)
    steps = np.zeros(n_envs, dtype=np.int64)
    rewards = np.zeros(n_envs, dtype=np.float64)  # the return so far of each env's episode
    next_job = 0
    with PolicyActor(model, venv, deterministic) as actor:
        obs = venv.reset()
        first = np.arange(min(n_envs, jobs.size))
        job[first] = first
        next_job = first.size
        obs = resetter.reset(first, contexts[jobs[first]], obs)
        while np.any(job >= 0):
            obs, step_rewards, dones, infos = venv.step(actor.act(obs))
            actor.observe(dones)
            running = job >= 0
            steps[running] += 1
            rewards[running] += step_rewards[running]
            endless = np.flatnonzero(running & ~dones & (steps >= buffers.MAX_EPISODE_STEPS))
            if endless.size:
                check_episode_length(int(endless[0]), int(steps[endless[0]]), buffers.MAX_EPISODE_STEPS)
            ended = np.flatnonzero(dones & running)
            if ended.size == 0:
                continue
            for i in ended:
                if SUCCESS_KEY not in infos[i]:
                    raise ValueError(
                        f"pass@k needs info['{SUCCESS_KEY}'] at the last step of each episode; the env's final info "
                        f"has {sorted(infos[i])}"
                    )
                success[job[i]] = bool(infos[i][SUCCESS_KEY])
                lengths[job[i]] = steps[i]
                returns[job[i]] = infos[i]["episode"]["r"] if "episode" in infos[i] else rewards[i]
                steps[i] = 0
                rewards[i] = 0.0
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
    return PassAtK(contexts, success.reshape(shape), lengths.reshape(shape), returns.reshape(shape))
