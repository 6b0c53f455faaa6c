"""Episodic collection and OrderGrad episode weights, shared by :class:`OrderGradREINFORCE` and :class:`OrderGradPPO`.

One rollout = ``n_episodes`` complete i.i.d. episodes (see :mod:`ordergrad_rl.agents.buffers` for which episodes
are kept). Episode ``i``'s return ``G_i`` becomes the weight ``w_i = k * a_i`` with ``a_i`` the core's
:func:`~ordergrad_rl.core.lstat_advantage` (paper eq. og-batch-estimator), given to every step of the episode; the
algorithms' losses then give the unbiased likelihood-ratio gradient ``(k/N) sum_i a_i grad log p(tau_i)``.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterator
from typing import Any, TypeVar

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.buffers import EPISODIC_BUFFER_KEYS, EpisodicRolloutBuffer
from ordergrad_rl.agents.callbacks import RiskEvalCallback
from ordergrad_rl.agents.channels import REWARD, AnyObjective, ChannelObjective, InfoChannels, parse_objective
from ordergrad_rl.agents.checks import check_finite_step, check_int
from ordergrad_rl.agents.groups import GroupResetter, check_group_size, group_normalize
from ordergrad_rl.agents.policies import POLICY_ALIASES, OrderGradPolicyMixin
from ordergrad_rl.agents.risk_logging import (
    TRAIN_PREFIX,
    default_run_name,
    record_hparams,
    record_risk_profile,
    write_risk_layout,
)
from ordergrad_rl.agents.saving import algorithm_family, check_saved_algorithm
from ordergrad_rl.agents.sb3_compat import from_sb3
from ordergrad_rl.core import Objective, lstat_advantage, lstat_value
from ordergrad_rl.core.gcvar import gcvar_level, gcvar_weights

SelfEpisodic = TypeVar("SelfEpisodic", bound="EpisodicAlgorithmMixin")

#: The episodic advantage mode: trajectory-level OrderGrad weights from complete episodes (no critic).
EPISODIC = "episodic"
#: Attributes logged as TensorBoard hparams when the algorithm has them (with algorithm, env and objective);
#: schedules and other non-scalar values are left out.
HPARAM_NAMES: tuple[str, ...] = (
    "k",
    "n_episodes",
    "group_size",
    "learning_rate",
    "seed",
    "n_envs",
    "batch_size",
    "n_epochs",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "vf_coef",
    "max_grad_norm",
    "normalize_advantage",
    "reward_to_go",
    "advantage",
)


def build_env(env: GymEnv | str, n_envs: int | None, seed: int | None, n_episodes: int | None = None) -> GymEnv:
    """The training env of an algorithm.

    * An env id becomes ``make_sb3_vec_env(env, n_envs, seed)``. ``n_envs=None``: ``n_episodes`` envs if the id has
      a native batch (the tail-risk ids: one NumPy batch steps all episodes of a rollout at once), else 1.
    * A ``gym.Env`` made by ``gym.make`` from an id with a native batch, with no wrapper added, and ``n_envs=None``
      becomes that batch of ``n_episodes`` envs with the same kwargs (the same episode distribution, about
      ``n_episodes`` times fewer Python steps). Pass ``n_envs=1`` to train on the env object itself.
    * Any other env is returned as is (SB3 wraps it).

    :param n_episodes: episodes per rollout (episodic mode), ``None`` in step-based modes.
    :raises ValueError: ``n_envs`` not a positive integer, or given for an env object with a different number of
        envs.
    """
    if n_envs is not None and (isinstance(n_envs, bool) or not isinstance(n_envs, int | np.integer) or n_envs < 1):
        raise ValueError(f"n_envs must be a positive integer or None, got {n_envs!r}")
    # Imported here: the SB3 glue of the envs is only needed once an env is built.
    from ordergrad_rl.envs.sb3_vec_env import has_native_batch, make_sb3_vec_env, native_batch_spec

    if isinstance(env, str):
        if n_envs is None:
            n_envs = n_episodes if n_episodes is not None and has_native_batch(env) else 1
        return make_sb3_vec_env(env, int(n_envs), seed=seed)
    if n_envs is None:
        spec = native_batch_spec(env) if isinstance(env, gym.Env) and n_episodes is not None else None
        if spec is not None:
            return make_sb3_vec_env(spec.id, n_episodes, seed=seed, env_kwargs=spec.kwargs)  # type: ignore[arg-type]
        return env
    if n_envs != 1 and getattr(env, "num_envs", 1) != n_envs:
        raise ValueError(
            f"n_envs={n_envs} only builds envs from an env id; the env passed has num_envs="
            f"{getattr(env, 'num_envs', 1)}"
        )
    return env


#: Default episodes per rollout for the mean (measured): the mean ranks nothing, so every episode carries signal and
#: frequent updates win. OrderGradPPO (issue 9): CartPole-v1 solved in about SB3 PPO's steps at 16, several times
#: more steps at 64. OrderGradREINFORCE (scripts/measure_reinforce_defaults.py, 3 seeds, equal env steps): CartPole
#: 499 / 468 / 141 and RiskyLavaGrid 4.00 / 3.83 / 3.45 at N = 16 / 64 / 256, ties on the bandit and tail-risk.
MEAN_N_EPISODES = 16
#: ... and for a ranked objective: its signal sits in part of the batch (cvar0.2@128: the worst ~26 of each
#: 128-subset), which must hold enough episodes: the paper's tail-risk batch (measured: 87% profitable deployments
#: at 64 episodes, 95-96% at 256).
RANKED_N_EPISODES = 256
#: Smallest default minibatch, SB3's PPO default.
MIN_BATCH_SIZE = 64


def default_n_episodes(objective: AnyObjective, k: int | None = None, group_size: int | None = None) -> int:
    """The episodic agents' episodes per rollout when ``n_episodes`` is not given: :data:`MEAN_N_EPISODES` for the mean,
    :data:`RANKED_N_EPISODES` (at least ``2 k`` if the objective fixes ``k``) for any ranked objective; with
    ``group_size``, rounded up to a multiple of it.

    :raises ValueError: an invalid objective.
    """
    level = gcvar_level(objective)
    # GCVaR targets the CVaR of its level: it gets that objective's default.
    parsed = parse_objective(objective if level is None else f"cvar{level}", k)
    if parsed.k == 1:  # the mean (k = 1 ranks nothing)
        n = MEAN_N_EPISODES
    else:
        n = max(RANKED_N_EPISODES, 2 * parsed.k) if parsed.is_bound else RANKED_N_EPISODES  # type: ignore[operator]
    if group_size is not None and not isinstance(group_size, bool) and isinstance(group_size, int) and group_size > 0:
        n = -(-n // group_size) * group_size
    return n


def default_batch_size(n_episodes: int) -> int:
    """``max(64, n_episodes)``: SB3's 64, raised so that a minibatch of random steps spans about as many episodes as
    the rollout holds (each episode's weight is one unit of signal in episodic mode; measured on the tail-risk task:
    at 128 episodes, 87% profitable deployments with 64-step minibatches, 95% with 128)."""
    return max(MIN_BATCH_SIZE, n_episodes)


def episodic_sizes(
    objective: Any, k: int | None, n_episodes: int | None, batch_size: int | None, group_size: int | None = None
) -> tuple[int, int]:
    """Checked ``(n_episodes, batch_size)`` of a PPO-family algorithm in episodic mode, with the defaults
    :func:`default_n_episodes` and :func:`default_batch_size`.

    :raises ValueError: ``n_episodes < 2``, a ``batch_size`` below 2, or an invalid objective.
    """
    n_episodes = check_n_episodes(default_n_episodes(objective, k, group_size) if n_episodes is None else n_episodes)
    batch_size = default_batch_size(n_episodes) if batch_size is None else batch_size
    check_int("batch_size", batch_size, 2)  # a 1-step minibatch has no spread to normalize or clip against
    return n_episodes, batch_size


def check_n_episodes(n_episodes: int) -> int:
    """``n_episodes`` as an int, or a ``ValueError`` if it is not an integer >= 2 (episodes ranked per update)."""
    return check_int("n_episodes", n_episodes, 2)


def check_advantage(advantage: str, supported: tuple[str, ...]) -> None:
    """``ValueError`` naming the supported modes (and the closest one) if ``advantage`` is not one of them."""
    if advantage in supported:
        return
    close = difflib.get_close_matches(str(advantage), supported, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown advantage {advantage!r}{hint}; expected one of {supported}")


def _walk(callback: BaseCallback | None) -> Iterator[BaseCallback]:
    """The callback and all callbacks nested in it (``CallbackList``, ``EventCallback``)."""
    if callback is None:
        return
    yield callback
    for child in getattr(callback, "callbacks", []):
        yield from _walk(child)
    yield from _walk(getattr(callback, "callback", None))


def reward_to_go_advantages(
    rewards: np.ndarray, episode_index: np.ndarray, episode_step: np.ndarray, n_episodes: int, gamma: float = 1.0
) -> np.ndarray:
    """Per-step advantages of the mean objective from reward-to-go and a leave-one-out baseline per time step.

    The mean return is a sum over steps, and the action at step ``t`` cannot change the rewards before it, so the
    likelihood-ratio gradient of ``E[R]`` may credit step ``t`` of episode ``i`` with its reward-to-go
    ``G_it = sum_{u >= t} gamma^u r_iu`` only (Williams' REINFORCE with causality), minus a baseline that does not
    depend on episode ``i``: the mean reward-to-go of the other ``N - 1`` episodes at the same step ``t`` (an
    episode that ended before ``t`` has ``G = 0`` there). Unbiased, like the trajectory-level leave-one-out
    advantage ``R_i - mean_{j != i} R_j``, which is the value at ``t = 0``; lower variance on long episodes.

    ``A_it = G_it - (S_t - G_it) / (N - 1) = (N G_it - S_t) / (N - 1)`` with ``S_t = sum_j G_jt``.

    :param rewards: ``[T]`` rewards of the stored steps.
    :param episode_index: ``[T]`` episode of each step, ``0..N-1``; each episode's steps in time order.
    :param episode_step: ``[T]`` step ``t`` within its episode.
    :param n_episodes: ``N`` (>= 2).
    :param gamma: discount, as in the episode return ``sum_t gamma^t r_t``.
    :return: ``[T]`` float64 advantages.
    """
    discounted = np.asarray(rewards, dtype=np.float64)
    if gamma != 1.0:
        discounted = discounted * gamma**episode_step
    # Reward-to-go: the episode's return minus what it collected before t. Steps of an episode are stored in time
    # order, so a stable sort by episode gives each episode's steps contiguously, in order.
    order = np.argsort(episode_index, kind="stable")
    ordered = discounted[order]
    before = np.cumsum(ordered) - ordered  # everything stored before this step ...
    starts = np.flatnonzero(np.r_[True, np.diff(episode_index[order]) != 0])
    before -= np.repeat(before[starts], np.diff(np.r_[starts, ordered.size]))  # ... minus the earlier episodes
    totals = np.bincount(episode_index, weights=discounted, minlength=n_episodes)
    to_go = np.empty_like(discounted)
    to_go[order] = totals[episode_index[order]] - before
    step_totals = np.bincount(episode_step, weights=to_go)
    return (n_episodes * to_go - step_totals[episode_step]) / (n_episodes - 1)


def _env_id(env: VecEnv | None) -> str | None:
    """The registered id of a VecEnv's first env; ``None`` without one (a user's VecEnv need not expose ``spec``)."""
    try:
        spec = env.get_attr("spec", [0])[0] if env is not None else None
    except AttributeError:
        return None
    return getattr(spec, "id", None)


class EpisodicAlgorithmMixin:
    """Collection of whole episodes, OrderGrad weights and risk logging for an SB3 on-policy algorithm.

    Mix in front of ``OnPolicyAlgorithm`` (or ``PPO``); call :meth:`_init_episodic` in ``__init__`` after the SB3
    constructor and before ``_setup_model``. Overridable hooks: :meth:`_compute_advantages` (per-step advantages
    from the finished buffer) and :meth:`_record_rollout_logs`.
    """

    policy_aliases = POLICY_ALIASES
    #: Advantage modes of the algorithm (:class:`~ordergrad_rl.agents.qcritic.QCriticMixin` adds ``"q_critic"``).
    advantages: tuple[str, ...] = (EPISODIC,)

    # Provided by SB3's OnPolicyAlgorithm.
    n_envs: int
    num_timesteps: int
    rollout_buffer: EpisodicRolloutBuffer
    rollout_buffer_class: type | None
    policy_class: type
    policy_kwargs: dict[str, Any]
    use_sde: bool
    sde_sample_freq: int
    action_space: spaces.Space
    gamma: float

    def _init_episodic(
        self,
        objective: AnyObjective,
        k: int | None,
        n_episodes: int,
        normalize_advantage: bool | str,
        advantage: str = "episodic",
        reward_to_go: bool | None = None,
        group_size: int | None = None,
    ) -> None:
        """Parse and check the OrderGrad arguments; set ``objective``, ``k``, ``n_episodes``, ``group_size``,
        ``normalize_advantage``, ``advantage``, ``reward_to_go``.

        :raises ValueError: unknown objective or advantage, ``n_episodes < 2``, ``k >= n_episodes`` (``k >=
            group_size`` with groups), ``n_episodes`` not a multiple of ``group_size``, ``normalize_advantage="group"``
            or ``"channel"`` without groups, ``reward_to_go=True`` with a ranked or multi-channel objective or with
            groups, or ``policy_kwargs["critic"]`` inconsistent with the advantage mode
            (episodic mode builds SB3's value head and never runs it: ``"q"`` is refused).
        """
        check_advantage(advantage, self.advantages)
        n_episodes = check_n_episodes(n_episodes)
        group_size = check_group_size(group_size, n_episodes)
        if normalize_advantage not in (True, False, "group", "channel"):
            raise ValueError(
                f"normalize_advantage must be True, False, 'group' or 'channel', got {normalize_advantage!r}"
            )
        if normalize_advantage in ("group", "channel") and group_size is None:
            raise ValueError(
                f"normalize_advantage={normalize_advantage!r} divides each group's weights by its std: set group_size"
            )
        compared = n_episodes if group_size is None else group_size  # the N of the leave-one-out advantage
        # "gcvar<a>": Tamar et al.'s GCVaR weights (episode_weights) for CVaR_a; the objective logged as
        # risk/objective (and checked below) is OrderGrad's cvar<a> at the same k.
        self.gcvar_alpha = gcvar_level(objective)
        if self.gcvar_alpha is not None:
            objective = f"cvar{self.gcvar_alpha}"
        parsed = parse_objective(objective, k)
        if not parsed.is_bound:
            parsed = parsed.bind(compared // 2) if isinstance(parsed, Objective) else parsed.bind_default(compared // 2)
        if parsed.k >= compared:  # type: ignore[operator]
            size = f"n_episodes={n_episodes}" if group_size is None else f"group_size={group_size}"
            raise ValueError(
                f"objective {str(parsed)!r} has k={parsed.k}, but the leave-one-out advantage needs "
                f"k < {size} (paper Sec. 3.2): raise {size.split('=')[0]} or lower k"
            )
        whole_episodes = isinstance(parsed, ChannelObjective) or parsed.k != 1
        if reward_to_go and whole_episodes:
            raise ValueError(
                f"reward_to_go needs the mean objective (k = 1) of the reward; {str(parsed)!r} ranks whole-episode "
                "returns, a nonlinear function of every reward of the episode, so each step gets the episode's weight"
            )
        if reward_to_go and group_size is not None:
            raise ValueError(
                "reward_to_go is not defined with group_size: grouped weights are whole-episode advantages (with "
                "objective='mean' and normalize_advantage='group', exactly GRPO's (R_i - group mean) / group std)"
            )
        self._check_policy_critic(advantage, ("value", "none"))
        self._set_objective(parsed)
        self.n_episodes = n_episodes
        self.group_size = group_size
        self.normalize_advantage = (
            normalize_advantage if normalize_advantage in ("group", "channel") else bool(normalize_advantage)
        )
        self.advantage = advantage
        # Default: reward-to-go for the pooled mean; groups keep whole-episode weights (GRPO exactly, see above).
        self.reward_to_go = (not whole_episodes and group_size is None) if reward_to_go is None else bool(reward_to_go)

    @property
    def n_groups(self) -> int:
        """Groups per rollout (``n_episodes // group_size``; 1 without groups)."""
        return 1 if self.group_size is None else self.n_episodes // self.group_size

    def _set_objective(self, objective: Objective | ChannelObjective) -> None:
        """Set ``objective`` (bound), ``k`` and ``objective_spec`` (what ``save`` stores) and the algorithm's name."""
        self.objective: Objective | ChannelObjective = objective
        self.k: int = int(objective.k)  # type: ignore[arg-type]
        self.objective_spec = str(objective)
        self.ordergrad_algorithm = algorithm_family(type(self))

    def _restore_objective(self) -> None:
        """Parse ``objective_spec`` strictly (after ``load``, it is the saved one; older saves hold the objective
        itself), so a damaged file fails here instead of training the default objective.

        :raises ValueError: not a valid objective spec, or inconsistent with the saved ``k``.
        """
        spec = getattr(self, "objective_spec", None) or self.objective
        try:
            objective = parse_objective(spec)
        except (TypeError, ValueError) as err:
            raise ValueError(f"the model's objective {spec!r} is not a valid objective: {err}") from err
        if objective.k != self.k:
            raise ValueError(f"the model's objective {str(objective)!r} has k={objective.k}, but its k is {self.k}")
        self._set_objective(objective)

    @classmethod
    def load(cls, path: Any, env: GymEnv | None = None, device: th.device | str = "auto", **kwargs: Any) -> Any:
        """SB3's ``load``, after checking that ``path`` was saved by this algorithm (see
        :mod:`ordergrad_rl.agents.saving`); the saved objective is re-parsed strictly.

        :raises ValueError: a file of another algorithm, or a saved objective that is not a valid spec.
        """
        check_saved_algorithm(path, cls)
        return super().load(path, env=env, device=device, **kwargs)  # type: ignore[misc]

    @classmethod
    def from_sb3(
        cls: type[SelfEpisodic],
        source: Any,
        env: GymEnv | str | None = None,
        device: th.device | str = "auto",
        **kwargs: Any,
    ) -> SelfEpisodic:
        """Risk fine-tuning of an SB3 model: an agent of this class whose policy starts from ``source``'s weights.

        ``OrderGradPPO.from_sb3(ppo_model, objective="cvar0.2")`` or ``OrderGradPPO.from_sb3("ppo.zip", env,
        objective="cvar0.2")``. The agent is built with the SB3 model's policy class (SB3's ``MlpPolicy`` ...
        become the OrderGrad ones, same layout), ``policy_kwargs`` and ``use_sde``, and the whole policy is copied:
        features extractor and actor, and the value head, which episodic mode never runs (it stays the SB3 model's,
        a warm start if the fine-tuned model goes back to PPO); in Q-critic mode the Q head starts fresh. The
        optimizer starts fresh. SB3's own ``set_parameters`` also works when the layouts match.

        :param source: an SB3 on-policy model with an actor-critic policy (``PPO``, ``A2C`` ...) or its save's path.
        :param env: the training env; default: the SB3 model's env (required with a path).
        :param device: torch device.
        :param kwargs: this class's arguments (``objective``, ``n_episodes`` ...).
        :raises ValueError: no env, a policy that is not an actor-critic, or ``policy_kwargs`` that change the actor.
        """
        return from_sb3(cls, source, env, device=device, **kwargs)

    def _excluded_save_params(self) -> list[str]:
        # The objective is saved as its spec string (objective_spec): readable, and independent of the class layout.
        excluded = [
            *super()._excluded_save_params(),  # type: ignore[misc]
            "objective",
            "_group_rng",
            "_group_resetter",
            "_episode_contexts",
        ]
        if self.advantage == EPISODIC:
            # Derived in _setup_model (episodes per env) or the class default: left out, SB3's PPO.load of the file
            # gets its own n_steps and RolloutBuffer and trains (see ordergrad_rl.agents.sb3_compat).
            excluded.append("n_steps")
            if self.rollout_buffer_class is EpisodicRolloutBuffer:
                excluded.append("rollout_buffer_class")
        return excluded

    def _check_policy_critic(self, advantage: str, allowed: tuple[str, ...]) -> None:
        """Refuse a ``policy_kwargs["critic"]`` that ``advantage`` cannot use. The algorithm passes the critic it
        needs when it builds the policy; ``policy_kwargs`` stay the user's (SB3's ``load`` compares them with the
        saved ones), except in files saved by earlier versions, which hold the critic they were built with."""
        critic = self.policy_kwargs.get("critic", allowed[0])
        if critic not in allowed:
            raise ValueError(f"advantage={advantage!r} needs policy critic={allowed[0]!r}, got {critic!r}")

    def _setup_model(self) -> None:
        self._restore_objective()
        # Buffer options SB3's RolloutBuffer does not take are kept apart (and saved apart), so that SB3's PPO.load
        # of a save gives its own buffer the rest; saves of earlier versions hold them in rollout_buffer_kwargs.
        kwargs = self.rollout_buffer_kwargs
        self.rollout_buffer_kwargs = {key: value for key, value in kwargs.items() if key not in EPISODIC_BUFFER_KEYS}
        self.episodic_buffer_kwargs: dict[str, Any] = {
            **getattr(self, "episodic_buffer_kwargs", {}),
            **{key: value for key, value in kwargs.items() if key in EPISODIC_BUFFER_KEYS},
        }
        # Any SB3 actor-critic policy (its value head unused), or an OrderGrad policy of the sb3-contrib algorithms
        # (MaskablePPO's policies do not subclass ActorCriticPolicy).
        episodic_policies = (ActorCriticPolicy, OrderGradPolicyMixin)
        if not (isinstance(self.policy_class, type) and issubclass(self.policy_class, episodic_policies)):
            raise ValueError(
                f"policy {self.policy_class!r} has no episodic mode: use 'MlpPolicy', 'CnnPolicy', "
                "'MultiInputPolicy' or a subclass of stable_baselines3's ActorCriticPolicy"
            )
        if self.rollout_buffer_class is None:
            self.rollout_buffer_class = EpisodicRolloutBuffer
        elif not issubclass(self.rollout_buffer_class, EpisodicRolloutBuffer):
            raise ValueError(
                f"rollout_buffer_class must subclass EpisodicRolloutBuffer, got {self.rollout_buffer_class}"
            )
        # SB3 sizes buffers by n_steps per env; the episodic buffer counts n_episodes in all, whatever the number of
        # envs (the first N episodes started are kept), so n_steps is only SB3's nominal size.
        self.n_steps = -(-self.n_episodes // self.n_envs)
        user_kwargs = self.rollout_buffer_kwargs
        self.rollout_buffer_kwargs = self._episodic_buffer_kwargs()
        try:
            super()._setup_model()  # type: ignore[misc]
        finally:
            self.rollout_buffer_kwargs = user_kwargs
        # Contexts of the groups and the members' fresh dynamics streams (see ordergrad_rl.agents.groups).
        self._group_rng = np.random.default_rng(self.seed)  # type: ignore[attr-defined]
        self._group_resetter: GroupResetter | None = None

    def _episodic_buffer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the episodic rollout buffer: the user's ``rollout_buffer_kwargs`` (the episodic-only
        ones are kept in ``episodic_buffer_kwargs``) and the episode count ``n_episodes``."""
        return {**self.rollout_buffer_kwargs, **self.episodic_buffer_kwargs, "n_episodes": self.n_episodes}

    def learn(
        self: SelfEpisodic,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfEpisodic:
        """SB3's ``learn``; ``tb_log_name`` defaults to :meth:`run_name` (``OrderGradPPO_cvar0.2@128_1``, ...).

        A ``tb_log_name`` with slashes, ``"OrderGradPPO_cvar0.2@128/seed0"``, puts the run under the subdirectory
        ``OrderGradPPO_cvar0.2@128`` of ``tensorboard_log`` (as ``seed0_1``), so the runs of one method are one
        group in TensorBoard's run list and its run filter.

        ``total_timesteps`` counts env steps, like SB3: a rollout of ``n_episodes`` episodes of length ``L`` costs at
        least ``n_episodes * L`` of them (e.g. 750 updates of 256 tail-risk episodes = 750 * 256 * 16 steps).
        """
        return super().learn(  # type: ignore[misc]
            total_timesteps=total_timesteps,
            callback=callback,
            log_interval=log_interval,
            tb_log_name=tb_log_name or self.run_name(),
            reset_num_timesteps=reset_num_timesteps,
            progress_bar=progress_bar,
        )

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        parent, _, name = tb_log_name.rpartition("/")
        log_dir = self.tensorboard_log
        if parent and log_dir is not None:
            self.tensorboard_log = os.path.join(log_dir, parent)  # SB3 numbers runs within one directory
        try:
            total_timesteps, callback = super()._setup_learn(  # type: ignore[misc]
                total_timesteps, callback, reset_num_timesteps, name, progress_bar
            )
        finally:
            self.tensorboard_log = log_dir
        prefixes = [TRAIN_PREFIX] + [f"{TRAIN_PREFIX}/{name}" for name in self._info_channels]
        prefixes += [cb.risk_prefix for cb in _walk(callback) if isinstance(cb, RiskEvalCallback)]
        write_risk_layout(self.logger, prefixes)  # type: ignore[attr-defined]
        record_hparams(self.logger, self.hparams(), prefixes)  # type: ignore[attr-defined]
        return total_timesteps, callback

    def run_name(self) -> str:
        """Default TensorBoard run name: the algorithm and the objective, ``OrderGradPPO_cvar0.2@128``."""
        return default_run_name(type(self).__name__, self.objective_spec)

    def hparams(self) -> dict[str, Any]:
        """The arguments logged to TensorBoard's HParams dashboard: objective, algorithm, k, n_episodes, the
        constructor's other scalar arguments (:data:`HPARAM_NAMES` that the algorithm has) and the env id; in this
        order, since TensorBoard shows the first few columns."""
        values = {"objective": self.objective_spec, "algorithm": type(self).__name__}
        values.update({name: getattr(self, name) for name in HPARAM_NAMES if hasattr(self, name)})
        values["env"] = _env_id(self.env)  # type: ignore[attr-defined]
        return values

    # ------------------------------------------------------------------ collection
    def _env_actions(self, actions: np.ndarray) -> np.ndarray:
        """What the env receives, as in SB3: actions in the space's shape; Gaussian ones unscaled (squashed policies)
        or clipped to the box."""
        actions = actions.reshape((-1, *self.action_space.shape))
        if isinstance(self.action_space, spaces.Box):
            if self.policy.squash_output:  # type: ignore[attr-defined]
                return self.policy.unscale_action(actions)  # type: ignore[attr-defined]
            return np.clip(actions, self.action_space.low, self.action_space.high)
        return actions

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: EpisodicRolloutBuffer,  # type: ignore[override]
        n_rollout_steps: int,
    ) -> bool:
        """Collect ``n_episodes`` complete episodes with the current policy into ``rollout_buffer``.

        Episodes must end (terminate or be truncated, e.g. by a ``TimeLimit``). If some env is mid-episode when
        the rollout starts, the VecEnv is reset, so ``Monitor(allow_early_resets=False)`` wrappers cannot be used.
        With ``group_size``, one context is drawn per group and every env starting a counted episode is reset into
        its group's context (:mod:`ordergrad_rl.agents.groups`). A multi-channel objective's info channels are
        summed per episode from the step infos.

        :param env: the training VecEnv.
        :param callback: called at every vectorized step, like SB3.
        :param rollout_buffer: the episodic buffer to fill.
        :param n_rollout_steps: ignored (SB3's signature): a rollout lasts until its ``n_episodes`` episodes ended.
        :return: False if a callback stopped training.
        """
        assert self._last_obs is not None, "No previous observation was provided"  # type: ignore[has-type]
        self.policy.set_training_mode(False)  # type: ignore[attr-defined]
        if not np.all(self._last_episode_starts):  # type: ignore[has-type]
            # Some env is inside an episode that began before this rollout: restart all envs so that each
            # env's counted episodes are the first ones it starts under the current policy.
            self._last_obs = env.reset()
            self._last_episode_starts = np.ones(env.num_envs, dtype=bool)
        rollout_buffer.reset()
        self._start_groups(env, rollout_buffer)
        check_finite_step(self._last_obs, None, "at the start of a rollout (the reset observation)")
        channels = InfoChannels(self._info_channels)
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)  # type: ignore[attr-defined]
        callback.on_rollout_start()

        n_steps = 0
        while not rollout_buffer.full:
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)  # type: ignore[attr-defined]
            with th.no_grad():
                obs_tensor = obs_as_tensor(self._last_obs, self.device)  # type: ignore[arg-type, attr-defined]
                distribution, extras = self._action_distribution(obs_tensor, env)
                actions_t = distribution.get_actions()
                log_probs = distribution.log_prob(actions_t).cpu().numpy()
            actions = actions_t.cpu().numpy()
            new_obs, rewards, dones, infos = env.step(self._env_actions(actions))
            self.num_timesteps += env.num_envs
            check_finite_step(new_obs, rewards, f"at num_timesteps={self.num_timesteps}")

            callback.update_locals(locals())
            if not callback.on_step():
                return False

            channel_values = channels.step(infos)
            kept = rollout_buffer.add(  # type: ignore[has-type]
                self._last_obs, actions, log_probs, rewards, dones, channel_values, **extras
            )
            finished = np.flatnonzero(kept & dones)
            if finished.size:
                # rollout/ep_rew_mean and ep_len_mean describe the collected episodes only.
                self._update_info_buffer([infos[i] for i in finished], dones[finished])  # type: ignore[attr-defined]
            new_obs = self._repose_groups(rollout_buffer, dones, new_obs)
            n_steps += 1
            self._last_obs = new_obs
            self._last_episode_starts = dones

        rollout_buffer.finalize()
        channels.check()
        self._compute_advantages()
        self._record_rollout_logs()
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    # ------------------------------------------------------------------ groups (shared by every collection loop)
    def _start_groups(self, env: VecEnv, buffer: EpisodicRolloutBuffer) -> None:
        """At a rollout's start (buffer reset, every env at an episode start): draw one context per group and reset
        every env into the context of its first counted episode. No-op without ``group_size``."""
        self._episode_contexts: np.ndarray | None = None
        if self.group_size is None:
            return
        if self._group_resetter is None or self._group_resetter.venv is not env:
            self._group_resetter = GroupResetter(env, self._group_rng)
        # _episode_contexts[j]: the context of episode j, whose group is j // group_size.
        self._episode_contexts = np.repeat(self._group_resetter.draw_contexts(self.n_groups), self.group_size)
        first = self._episode_contexts[buffer.pending_episodes]
        self._last_obs = self._group_resetter.reset(np.arange(env.num_envs), first, self._last_obs)

    def _repose_groups(self, buffer: EpisodicRolloutBuffer, dones: np.ndarray, new_obs: Any) -> Any:
        """After a step (stored with ``buffer.add``): reset the envs that finished an episode and start another
        counted one into that episode's group context; return the observations to act on."""
        if self._episode_contexts is None:
            return new_obs
        pending = buffer.pending_episodes
        starting = np.flatnonzero(np.asarray(dones, dtype=bool) & (pending >= 0))
        if not starting.size:
            return new_obs
        return self._group_resetter.reset(starting, self._episode_contexts[pending[starting]], new_obs)  # type: ignore

    # ------------------------------------------------------------------ hooks
    def _action_distribution(self, obs: Any, env: VecEnv) -> tuple[Distribution, dict[str, np.ndarray]]:
        """The policy's action distribution in the envs' current observations (no value head is evaluated while
        collecting), and per-env arrays the buffer stores with the step (hook: sb3-contrib's algorithms add
        action masks, or carry LSTM states).

        :param obs: ``[n_envs, ...]`` observation tensor (or a dict of such).
        :param env: the training VecEnv.
        """
        return self.policy.get_distribution(obs), {}  # type: ignore[attr-defined]

    @property
    def _info_channels(self) -> tuple[str, ...]:
        """The objective's channels read from step infos (none for a plain objective)."""
        return self.objective.info_channels if isinstance(self.objective, ChannelObjective) else ()

    def _channel_values(
        self, episode_returns: np.ndarray, channels: dict[str, np.ndarray] | None
    ) -> dict[str, np.ndarray]:
        """Every channel's ``[N]`` episode values, shaped ``[n_groups, G]`` with groups (``[N]`` without)."""
        values = {REWARD: np.asarray(episode_returns, dtype=np.float64), **(channels or {})}
        missing = [name for name in self._info_channels if name not in values]
        if missing:
            raise ValueError(f"episode values of the channels {missing} are needed; got {sorted(values)}")
        shape = (-1,) if self.group_size is None else (-1, self.group_size)
        return {name: np.asarray(value, dtype=np.float64).reshape(shape) for name, value in values.items()}

    def episode_weights(self, episode_returns: np.ndarray, channels: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Per-episode policy-gradient weights ``w_i = k * a_i``, normalized as ``normalize_advantage`` says.

        With ``group_size=G`` the advantages come from one core call on the returns as ``[n_groups, G]`` (episode
        ``j`` is in group ``j // G``): each episode is compared with its own group only. A multi-channel objective
        gives ``w_i = sum_c w_c k_c a_ic`` (:class:`~ordergrad_rl.agents.channels.ChannelObjective`).
        ``normalize_advantage``: ``True`` divides by the std of all weights, ``"group"`` each group's weights by
        that group's std (with ``objective="mean"``: GRPO's ``(R_i - group mean) / group std``), ``"channel"`` each
        channel's ``k_c a_c`` by its own group std before the channel weights are applied (the same as ``"group"`` for
        a one-channel objective), ``False`` keeps the unbiased estimator's weights.
        With ``objective="gcvar<a>"``: GCVaR's ``(R_i - VaR_hat) 1{R_i <= VaR_hat} / a``
        (:func:`~ordergrad_rl.core.gcvar.gcvar_weights`; per group with ``group_size``) instead of OrderGrad's.

        :param episode_returns: ``[N]`` returns of one rollout.
        :param channels: ``{name: [N]}`` episode sums of the objective's info channels.
        :return: ``[N]`` float64 weights.
        """
        values = self._channel_values(episode_returns, channels)
        gcvar_alpha = getattr(self, "gcvar_alpha", None)  # absent from models saved before GCVaR existed
        # "channel" normalizes each channel inside the channel sum; with one channel that is "group".
        per_channel = self.normalize_advantage == "channel" and isinstance(self.objective, ChannelObjective)
        if isinstance(self.objective, ChannelObjective):
            weights = self.objective.advantage_weights(values, normalize=group_normalize if per_channel else None)
        elif gcvar_alpha is not None:
            weights = np.apply_along_axis(gcvar_weights, -1, values[REWARD], gcvar_alpha)  # each row is one batch
        else:
            weights = self.k * lstat_advantage(values[REWARD], self.objective)
        if self.normalize_advantage in ("group", "channel") and not per_channel:
            weights = group_normalize(weights)
        elif self.normalize_advantage is True:
            # Scale only: the weights already sum to zero, and a rescaling keeps the targeted objective.
            weights = weights / (weights.std() + 1e-8)
        return weights.reshape(-1)

    def _compute_advantages(self) -> None:
        """Fill ``rollout_buffer.advantages`` once the rollout is finalized (hook for other advantage modes):
        :meth:`episode_weights` for every step of each episode, or :func:`reward_to_go_advantages` (the mean with
        ``reward_to_go``), divided by their standard deviation over the steps if ``normalize_advantage``."""
        buffer = self.rollout_buffer
        if not self.reward_to_go:
            buffer.set_episode_weights(self.episode_weights(buffer.episode_returns, buffer.episode_channels))
            return
        advantages = reward_to_go_advantages(
            buffer.rewards, buffer.episode_index, buffer.episode_step, buffer.n_episodes, self.gamma
        )
        if self.normalize_advantage:
            advantages = advantages / (advantages.std() + 1e-8)
        buffer.advantages = advantages.astype(np.float32)

    def _record_rollout_logs(self) -> None:
        """``risk/*`` of the rollout's episode returns and ``risk/objective`` (the batch value ``v^alpha``, averaged
        over the groups); with info channels, ``risk/<channel>/*`` of their episode sums and
        ``risk/<channel>/objective`` of every channel (``risk/objective`` is then the weighted sum)."""
        buffer = self.rollout_buffer
        logger = self.logger  # type: ignore[attr-defined]
        record_risk_profile(logger, TRAIN_PREFIX, buffer.episode_returns)
        values = self._channel_values(buffer.episode_returns, buffer.episode_channels)
        if not isinstance(self.objective, ChannelObjective):
            logger.record(f"{TRAIN_PREFIX}/objective", float(np.mean(lstat_value(values[REWARD], self.objective))))
            return
        total = 0.0
        for channel in self.objective.channels:
            if channel.name != REWARD:
                record_risk_profile(logger, f"{TRAIN_PREFIX}/{channel.name}", buffer.episode_channels[channel.name])
            value = float(np.mean(lstat_value(values[channel.name], channel.objective)))
            logger.record(f"{TRAIN_PREFIX}/{channel.name}/objective", value)
            total += channel.weight * value
        logger.record(f"{TRAIN_PREFIX}/objective", total)
