"""Episodic collection for an SB3 on-policy algorithm: ``n_episodes`` complete i.i.d. episodes per rollout, turned
into per-step advantages by :func:`~ordergrad_rl.agents.common.advantages.compute_episodic_advantages`.

Shared by :class:`~ordergrad_rl.agents.OrderGradREINFORCE`, :class:`~ordergrad_rl.agents.OrderGradPPO` and the
sb3-contrib variants (:class:`~ordergrad_rl.agents.OrderGradRecurrentPPO`,
:class:`~ordergrad_rl.agents.OrderGradMaskablePPO`), which supply what differs through the hooks of
:class:`EpisodicAlgorithmMixin`.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Collection, Mapping
from types import EllipsisType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.buffers import RolloutBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.advantages import (
    RUNNING,
    GCVaRLevels,
    Objectives,
    channel_values,
    compute_episodic_advantages,
    group_risks,
)
from ordergrad_rl.agents.common.advantages import episode_weights as _episode_weights
from ordergrad_rl.agents.common.arguments import (
    RANKED_ENT_COEF,
    RANKED_ROLLOUT_STEPS,
    budget_n_episodes,
    check_advantage,
    check_arguments,
    check_buffer_kwargs,
    check_n_episodes,
    check_normalize_advantage,
    check_squash_output,
    default_batch_size,
    default_ent_coef,
    default_entropy_plateau,
    default_n_episodes,
    default_normalize_advantage,
    default_novelty_when_blind,
    default_reward_to_go,
    episodic_sizes,
    long_episodes,
    sized_by_budget,
    timed_box,
    timed_box_rollout_steps,
)
from ordergrad_rl.agents.common.base_class import OrderGradAlgorithmMixin, sb3_load_options
from ordergrad_rl.agents.common.buffers import EPISODIC_BUFFER_KEYS, MAX_EPISODE_STEPS, EpisodicRolloutBuffer
from ordergrad_rl.agents.common.channels import InfoChannels
from ordergrad_rl.agents.common.checks import (
    POLICY_ACTION_SPACES,
    REWARDS_NORMALIZED_WARNING,
    check_algorithm_action_space,
    check_finite_step,
    check_step_returns,
    warn_if_rewards_normalized,
)
from ordergrad_rl.agents.common.entropy_plateau import EntropyPlateau, make_entropy_plateau
from ordergrad_rl.agents.common.env_util import AgentEnv, build_env, episode_limit, rebuilt_env
from ordergrad_rl.agents.common.groups import GroupResetter, check_group_size
from ordergrad_rl.agents.common.noise_sampler import NoiseSampler, sampled_events
from ordergrad_rl.agents.common.novelty import BLIND_PATIENCE_EPISODES, episode_novelty, novelty_weights
from ordergrad_rl.agents.common.policies import (
    LEGACY_DEFAULT_ACTOR,
    POLICY_ALIASES,
    OrderGradPolicyMixin,
    act_without_critic,
    forward_observed,
    resample_episode_noise,
)
from ordergrad_rl.agents.common.risk_logging import TRAIN_PREFIX, record_risk_profile, record_scalar
from ordergrad_rl.agents.common.risk_schedules import (
    TIE_AT_VAR,
    RiskSchedule,
    RiskScheduleLike,
    can_untie,
    check_risk_schedule,
    default_risk_schedule,
    level_in_force,
    lower_level,
    objective_in_force,
    parse_risk_schedule,
    share_tied_at_best,
    tied_share,
    untie_case,
    untied_at,
)
from ordergrad_rl.agents.common.saving import read_saved_data
from ordergrad_rl.agents.common.sb3_compat import critic_argument_error, n_steps_error
from ordergrad_rl.agents.common.utils import lent_attributes, pop_record
from ordergrad_rl.common.arguments import check_float, check_seed
from ordergrad_rl.common.warning_util import user_stacklevel
from ordergrad_rl.core import ChannelObjective, Objective, lstat_value
from ordergrad_rl.core.channels import REWARD, AnyObjective, parse_agent_objective
from ordergrad_rl.core.weighted import weighted_lstat_value
from ordergrad_rl.envs.noise import NOISE_INFO_KEY, check_noise_report, check_nominal_noise_probs

SelfEpisodic = TypeVar("SelfEpisodic", bound="EpisodicAlgorithmMixin")

#: The episodic advantage mode: trajectory-level OrderGrad weights from complete episodes (no critic).
EPISODIC = "episodic"
#: Logged by SB3's PPO update although there is no critic in episodic mode.
CRITIC_LOG_KEYS: tuple[str, ...] = ("train/value_loss", "train/explained_variance", "train/clip_range_vf")

#: Fewer updates than this in a ``learn`` call draw a warning after its first rollout: a ranked objective's
#: whole-episode rollouts can exhaust a budget in a handful of updates (LunarLander-v3: 5 updates of 256 episodes in
#: 100k steps), and nothing else would tell the user why the policy barely moved.
FEW_UPDATES = 5
#: A ``learn`` call's first rollout that has taken all the steps its budget had left, and at least this many, while
#: its episodes have not all ended draws a warning at once rather than after the rollout: on an env without a time
#: limit whose episodes wander (CliffWalking-v1 under a uniform random policy: 6,264 steps each on average over 20
#: episodes), 256 episodes are about 1.6M steps, and ``learn(3_000)`` would otherwise say nothing for more than ten
#: minutes (about 2,000 steps a second here). Below it a rollout takes seconds, and the few-updates warning after it
#: says the same.
OUTGROWN_ROLLOUT_STEPS = 10_000

#: ``normalize_advantage="running"``: the decay per rollout of the running mean square of the episode weights
#: (about 20 rollouts; not tuned). A rollout's own std would scale a rare costly episode's weight down to the size of
#: the rollouts without one, so that the many rollouts without it outweigh the few with it.
RUNNING_DECAY = 0.95

#: The ``:param:`` lines the sb3-contrib PPO variants share (appended to their class docstrings).
EPISODIC_PPO_PARAMS = """
    :param objective: order-statistic objective spec (``"cvar0.2"``, ``"mean"``, ``"max@8"`` ...) or one per reward
        channel (:mod:`ordergrad_rl.core.channels`); ``model.objective`` is the parsed, bound
        :class:`~ordergrad_rl.core.Objective` (:class:`~ordergrad_rl.core.ChannelObjective`).
    :param k: order-statistic size if the spec has no ``@K`` (default ``n_episodes // 2``); ``mean`` has k = 1.
    :param n_episodes: episodes per rollout ``N`` (``k < N``; any number of envs). Default as
        OrderGradPPO: 16 for ``"mean"``; for ranked objectives (at least ``2 k``) the largest power of two from 32
        to 256 whose episodes hold at most 8192 steps at the env's episode limit, 256 without one
        (:func:`~ordergrad_rl.agents.common.arguments.ranked_n_episodes`), halved with a time limit for a small first
        ``learn`` budget (:func:`~ordergrad_rl.agents.common.arguments.budget_n_episodes`; since 2026-12-05).
    :param n_envs: number of envs; ``None``: as OrderGradPPO (a native NumPy batch of ``n_episodes`` envs for the
        tail-risk ids, else 1 env from an id, env objects as they are).
    :param learning_rate: Adam learning rate (or schedule).
    :param n_epochs: passes over the rollout per update.
    :param gamma: discount of the episode return ``sum_t gamma^t r_t`` (from its first step) that the objective
        ranks, 1.0 (undiscounted) by default.
    :param clip_range: surrogate clipping parameter (or schedule).
    :param normalize_advantage: divide the per-episode weights by their standard deviation (+1e-8), once per
        rollout (sb3-contrib's per-minibatch normalization is off); ``"running"``: by a running scale over the
        rollouts. ``None`` (default): as OrderGradPPO, ``"running"`` for a ranked objective of one pooled batch on
        episodes of at most 128 steps, else ``True``
        (:func:`~ordergrad_rl.agents.common.arguments.default_normalize_advantage`, which gives the measurements;
        each variant ends on the safe action of tests/test_noise_sampler.py's rare-crash task with it and on the
        risky one with ``True``).
    :param noise_sampler: CeSoR's cross-entropy sampler of the env's noise; ``None`` (default): as OrderGradPPO, on
        where the env exposes its noise and the objective admits the sampler.
    :param reward_to_go: mean objective: per-step reward-to-go advantages (default on for ``"mean"``, refused for ranked
        objectives), see :func:`~ordergrad_rl.agents.common.advantages.reward_to_go_advantages`.
    :param group_size: episodes per group sharing a start context (GRPO-style groups, see
        :class:`~ordergrad_rl.agents.OrderGradPPO`); ``None``: one pooled batch.
    :param risk_schedule: soft risk: ``None`` (the default, as OrderGradPPO: ``"level"`` for a lower tail on long
        episodes and, for every episodic agent, on continuous actions with a time limit, else none,
        :func:`~ordergrad_rl.agents.common.risk_schedules.default_risk_schedule`; on long
        episodes a rollout partly tied at the best return also gets the entropy bonus of its untied share),
        ``"none"`` or ``False`` (the target objective from the start), ``"level"``, ``"mixture"``,
        ``"<kind>:<fraction>"``, ``"mixture:<fraction>:<mean_share>"`` (the mean's share kept to the end) or a
        :class:`~ordergrad_rl.agents.common.risk_schedules.RiskSchedule` (see
        :mod:`ordergrad_rl.agents.common.risk_schedules`).
    :param untie_tail: train a rollout whose lower tail is one tie (time-outs, or any episodes at the lowest return
        seen in training) at the level that reaches past it
        (:func:`~ordergrad_rl.agents.common.risk_schedules.untied`; with ``group_size``, each group by its own
        returns); default on, as OrderGradPPO.
    :param ent_coef: entropy coefficient, or a schedule of ``progress_remaining`` (SB3's convention for
        ``learning_rate``); ``None`` (default): 0.01 for a ranked objective on categorical actions
        (OrderGradPPO's and OrderGradMaskablePPO's is held, then decays over the last 40% of training on short
        episodes: :data:`~ordergrad_rl.agents.common.arguments.SHORT_RANKED_ENT_COEF`), else 0.0
        (:func:`~ordergrad_rl.agents.common.arguments.default_ent_coef`).
    :param entropy_when_tied: keep the entropy bonus on a rollout whose returns all tie at the best return seen so
        far (nothing ranked); default off, as OrderGradPPO.
    :param max_grad_norm: gradient-norm clipping threshold.
    :param target_kl: early-stop an update when the approximate KL exceeds 1.5 x this.
    :param stats_window_size: episodes averaged by ``rollout/ep_rew_mean``.
    :param tensorboard_log: TensorBoard log dir (``risk/*`` of every rollout).
    :param verbose: 0 silent, 1 info, 2 debug.
    :param seed: random seed. Unlike SB3's algorithms, which reset an env id's env unseeded, an id without a native
        batch becomes SB3's ``make_vec_env(id, n_envs, seed)``: with ``seed=None`` it draws the envs' seeds from
        NumPy's global generator (one draw at construction).
    :param device: torch device.
    :param _init_setup_model: build the networks at construction.
"""


def check_leave_one_out(objective: Objective | ChannelObjective, n_episodes: int, group_size: int | None) -> None:
    """``ValueError`` unless the bound ``objective``'s ``k`` is below the ``N`` its leave-one-out advantage ranks
    against: ``n_episodes``, or ``group_size`` with groups (paper Sec. 3.2)."""
    compared = n_episodes if group_size is None else group_size
    if objective.k >= compared:  # type: ignore[operator]
        size = "n_episodes" if group_size is None else "group_size"
        raise ValueError(
            f"objective {str(objective)!r} has k={objective.k}, but the leave-one-out advantage needs "
            f"k < {size}={compared} (paper Sec. 3.2): raise {size} or lower k"
        )


def check_blind_exploration(drift_when_blind: bool, novelty_when_blind: bool | None) -> None:
    """``ValueError`` where a blind rollout would take both random weights and novelty
    (:meth:`EpisodicAlgorithmMixin._explore_if_blind`)."""
    if novelty_when_blind and drift_when_blind:
        raise ValueError("drift_when_blind and novelty_when_blind: a blind rollout takes one of them, not both")


def check_group_normalization(normalize_advantage: bool | str, group_size: int | None) -> None:
    """``ValueError`` for ``normalize_advantage="group"`` or ``"channel"`` without groups (each group's std)."""
    if normalize_advantage in ("group", "channel") and group_size is None:
        raise ValueError(
            f"normalize_advantage={normalize_advantage!r} divides each group's weights by its std: set group_size"
        )


def check_reward_to_go(
    reward_to_go: bool | None, objective: Objective | ChannelObjective, group_size: int | None
) -> None:
    """``ValueError`` for ``reward_to_go`` with a ranked or multi-channel (bound) ``objective``, or with groups."""
    if reward_to_go and (isinstance(objective, ChannelObjective) or objective.k != 1):
        raise ValueError(
            f"reward_to_go needs the mean objective (k = 1) of the reward; {str(objective)!r} ranks whole-episode "
            "returns, a nonlinear function of every reward of the episode, so each step gets the episode's weight"
        )
    if reward_to_go and group_size is not None:
        raise ValueError(
            "reward_to_go is not defined with group_size: grouped weights are whole-episode advantages (with "
            "objective='mean' and normalize_advantage='group', exactly GRPO's (R_i - group mean) / group std)"
        )


def check_noise_sampler(
    noise_sampler: bool | None,
    objective: Objective | ChannelObjective,
    gcvar_alpha: float | None,
    group_size: int | None,
    reward_to_go: bool,
) -> str | None:
    """:func:`noise_sampler_error` of these arguments, raised where ``noise_sampler`` is on (returned otherwise: the
    constructor's default reads it).

    :raises ValueError: ``noise_sampler`` is on and its estimate is not defined for these arguments.
    """
    error = noise_sampler_error(objective, gcvar_alpha, group_size, reward_to_go)
    if noise_sampler and error is not None:
        raise ValueError(error)
    return error


def env_noise_probs(env: VecEnv | None) -> dict[str, float] | None:
    """The nominal probabilities of the noise events that ``env``'s envs expose (``noise_probs``,
    :mod:`ordergrad_rl.envs.noise`), or ``None`` where they expose none (or there is no env).

    :raises ValueError: its ``noise_probs`` is not ``{name: probability in [0, 1]}``
        (:func:`~ordergrad_rl.envs.noise.check_nominal_noise_probs`), or its envs expose different ones.
    """
    if env is None or not env.has_attr("noise_probs"):  # asked first: see first_env_attr
        return None
    first, *others = env.get_attr("noise_probs")
    for i, other in enumerate(others, start=1):
        if other != first:  # the sampler takes every env's likelihood ratios to one set of probabilities
            raise ValueError(
                f"the envs expose different noise_probs (env 0: {first!r}, env {i}: {other!r}); the noise sampler "
                "weighs every env's episodes by one set of nominal probabilities: give the envs the same, or pass "
                "noise_sampler=False"
            )
    return None if first is None else check_nominal_noise_probs(first)


def rollout_episode_weights(buffer: EpisodicRolloutBuffer, value_baseline: bool) -> np.ndarray:
    """``[n_steps, n_envs]``: each step's episode weight in a filled rollout: ``buffer.advantages``, or with a
    per-step baseline the baseline's targets ``buffer.returns``, where
    :class:`~ordergrad_rl.agents.common.per_step_baseline.PerStepBaselineMixin` moves the weights before it takes
    the lambda-returns' advantages."""
    return buffer.returns if value_baseline else buffer.advantages


def root_mean_square(values: np.ndarray) -> float:
    """The root mean square of ``values`` (any shape), in float64."""
    return float(np.sqrt(np.mean(np.square(values, dtype=np.float64))))


def noise_sampler_error(
    objective: Objective | ChannelObjective, gcvar_alpha: float | None, group_size: int | None, reward_to_go: bool
) -> str | None:
    """Why the noise sampler's weighted estimate is not defined for an agent with these arguments (no lower-tail
    level, the tail the sampler fits; GCVaR; info channels; groups or reward-to-go), or ``None`` where it is."""
    ranked_tail = not isinstance(objective, ChannelObjective) and lower_level(objective) is not None
    if gcvar_alpha is not None or not ranked_tail:
        return (
            f"noise_sampler=True needs a lower-tail objective with a level (cvar, bot, min, a quantile below the "
            f"median), got {'gcvar' + str(gcvar_alpha) if gcvar_alpha is not None else str(objective)!r}"
        )
    if group_size is not None or reward_to_go:
        return "noise_sampler=True weights one pooled batch of whole episodes: drop group_size and reward_to_go"
    return None


if TYPE_CHECKING:  # what the mixin is mixed in front of, for type checkers (at run time the MRO puts it there)
    from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm as _MixedInto
else:
    _MixedInto = object


class EpisodicAlgorithmMixin(OrderGradAlgorithmMixin, _MixedInto):
    """Collection of whole episodes, OrderGrad weights and risk logging for an SB3 on-policy algorithm.

    Mix in front of ``OnPolicyAlgorithm`` (or ``PPO``, ``RecurrentPPO``, ``MaskablePPO``) and construct with
    :meth:`_init_episodic_algorithm`. Overridable hooks: :meth:`_policy_step` (how the collector acts, and what it
    stores with a step), :meth:`_step_locals` (what else a step's callbacks see),
    :meth:`_compute_advantages` and :meth:`_record_rollout_logs`.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES
    #: What a policy given as a class must subclass: any SB3 actor-critic policy (its value head unused) or OrderGrad
    #: policy; the sb3-contrib variants need their own OrderGrad policies, which build without the critic episodic
    #: mode never trains.
    episodic_policy_classes: tuple[type, ...] = (ActorCriticPolicy, OrderGradPolicyMixin)
    #: Policy ``forward`` functions besides SB3's that the collector may replace by the actor alone when nothing
    #: observes them (:func:`~ordergrad_rl.agents.common.policies.forward_observed`; OrderGradMaskablePPO's is
    #: sb3-contrib's maskable one).
    _plain_forwards: ClassVar[tuple[Any, ...]] = ()
    #: Advantage modes of the algorithm.
    advantages: tuple[str, ...] = (EPISODIC,)
    #: The action spaces the algorithm acts in, refused by name at construction
    #: (:func:`~ordergrad_rl.agents.common.checks.check_algorithm_action_space`; OrderGradMaskablePPO's are
    #: MaskablePPO's), where SB3's constructor asserted them.
    supported_action_spaces: tuple[type[spaces.Space], ...] = POLICY_ACTION_SPACES
    #: The most steps a ranked rollout holds at the env's episode limit when ``n_episodes`` is ``None``
    #: (:func:`~.arguments.ranked_n_episodes`): the PPO family's :data:`~.arguments.RANKED_ROLLOUT_STEPS` (OrderGradPPO
    #: and the sb3-contrib variants), OrderGradREINFORCE's :data:`~.arguments.REINFORCE_RANKED_ROLLOUT_STEPS`.
    ranked_rollout_steps: int = RANKED_ROLLOUT_STEPS
    #: ``ent_coef`` for a ranked objective on categorical actions when it is ``None``
    #: (:func:`~.arguments.default_ent_coef`; OrderGradREINFORCE's is its own).
    default_ranked_ent_coef: float | Schedule = RANKED_ENT_COEF
    #: ... on short episodes (the long-episode defaults off: :data:`~.arguments.LONG_EPISODE_STEPS`; OrderGradPPO's and
    #: OrderGradMaskablePPO's is :data:`~.arguments.SHORT_RANKED_ENT_COEF`).
    default_short_ranked_ent_coef: float | Schedule = RANKED_ENT_COEF
    #: Whether ``n_episodes=None`` with a time limit lets the first ``learn`` call halve the rollout for a small budget
    #: (:func:`~.arguments.budget_n_episodes`; OrderGradPPO's, OrderGradMaskablePPO's and OrderGradRecurrentPPO's,
    #: measured on each; OrderGradREINFORCE keeps its size).
    budget_sized_rollouts: bool = False
    #: Blind episodes trained as they are before ``novelty_when_blind`` acts
    #: (:data:`~ordergrad_rl.agents.common.novelty.BLIND_PATIENCE_EPISODES`; a class attribute so that a probe can
    #: measure another wait, ``scripts/probe_blind_patience.py``).
    blind_patience_episodes: int = BLIND_PATIENCE_EPISODES
    #: The SB3 critic arguments of an algorithm that trains no critic, which its constructor and :meth:`load` refuse
    #: (OrderGradREINFORCE: A2C's; OrderGradRecurrentPPO and OrderGradMaskablePPO: RecurrentPPO's and MaskablePPO's).
    critic_arguments: tuple[str, ...] = ()
    #: Arguments added after the first release, with the value a save without them was trained with (:meth:`load`).
    saved_before: dict[str, Any] = {
        "untie_tail": False,
        "entropy_when_tied": True,
        "untie_at_var": False,
        "untie_terminated": False,
        "noise_sampler": False,
        "entropy_by_untied_share": False,
        "risk_schedule": None,
        "drift_when_blind": False,
        "noise_follows_schedule": False,
        "relative_ent_coef": False,
        # OrderGradPPO's: a save from before it trained the log-std in the clipped surrogate.
        "log_std_step": None,
        "novelty_when_blind": False,
        "novelty_phase": 0.0,
        "entropy_plateau": None,
        "n_episodes_by_budget": False,
        "batch_size_by_budget": False,
        "sb3_default_net_arch": False,
    }

    # Whole episodes, not SB3's RolloutBuffer (SB3's update reads it through get(), as its own).
    rollout_buffer: EpisodicRolloutBuffer  # type: ignore[assignment]
    rollout_buffer_class: type[EpisodicRolloutBuffer] | None  # type: ignore[assignment]
    # Wider than SB3's float: a schedule of progress_remaining too (SB3's update multiplies by ent_coef:
    # train_on_episode_weights lends it the float in force). None only inside the constructor, until the default
    # for the action space is set.
    ent_coef: float | Schedule  # type: ignore[assignment]
    # "group", "channel" or "running" too (SB3's bool is lent to its update by train_on_episode_weights).
    normalize_advantage: bool | str

    # ------------------------------------------------------------------ construction
    def _init_episodic_algorithm(
        self,
        sb3_init: Callable[..., None],
        policy: Any,
        env: AgentEnv | str,
        objective: AnyObjective,
        k: int | None,
        n_episodes: int | None,
        n_envs: int | None,
        seed: int | None,
        normalize_advantage: bool | str | None,
        reward_to_go: bool | None,
        group_size: int | None,
        batch_size: int | None | EllipsisType = Ellipsis,
        risk_schedule: RiskScheduleLike = None,
        long_episode_defaults: bool = False,
        untie_tail: bool = True,
        entropy_when_tied: bool = False,
        noise_sampler: bool | None = False,
        drift_when_blind: bool = False,
        relative_ent_coef: bool = False,
        novelty_when_blind: bool | None = False,
        novelty_phase: float = 0.0,
        entropy_plateau: bool | EntropyPlateau | dict[str, Any] | None = False,
        **sb3_kwargs: Any,
    ) -> tuple[bool, int | None]:
        """The constructor of every episodic algorithm, after its own argument checks: parse the objective (once),
        size the rollout, build the env, run the SB3 constructor ``sb3_init`` without building the model, then set
        the OrderGrad arguments (:meth:`_init_episodic`). The caller builds the model (``_setup_model``).

        :param sb3_init: the SB3 class's ``__init__`` (``super().__init__``).
        :param batch_size: the PPO family's minibatch size (default :func:`~.arguments.default_batch_size`); left
            out by algorithms without minibatches (REINFORCE), which then get no ``normalize_advantage`` either.
        :param risk_schedule: the soft risk schedule (checked against the objective before the env is built).
        :param untie_tail: move the level past a tied lower tail in each rollout (:meth:`_compute_advantages`).
        :param entropy_when_tied: keep the entropy bonus on a rollout that ranks nothing
            (:meth:`_ent_coef_in_force`).
        :param noise_sampler: draw the env's noise events with CeSoR's cross-entropy sampler and weight each episode
            by its likelihood ratio (:mod:`~ordergrad_rl.agents.common.noise_sampler`; the env must expose its noise,
            :mod:`ordergrad_rl.envs.noise`). ``None``: on where the env exposes its noise (an event of probability
            strictly between 0 and 1) and the objective admits the sampler (the default of every episodic agent),
            else off.
        :param drift_when_blind: a rollout blind to success gets random episode weights (:meth:`_explore_if_blind`).
        :param novelty_when_blind: a rollout blind to success gets its episodes' novelty as their weights
            (:meth:`_explore_if_blind`); ``None``: :func:`~.arguments.default_novelty_when_blind`.
        :param novelty_phase: the share of training, in ``[0, 1]``, whose rollouts train on their episodes' novelty
            instead of their advantages (:meth:`_explore_in_novelty_phase`); 0: none.
        :param relative_ent_coef: OrderGradPPO's flag (checked here with the others; the caller sets it).
        :param entropy_plateau: decay the entropy bonus while the returns stop improving
            (:mod:`~ordergrad_rl.agents.common.entropy_plateau`): ``True`` (its default settings), a dict of settings
            or an :class:`~ordergrad_rl.agents.common.entropy_plateau.EntropyPlateau` (its settings; copied),
            ``False``, or ``None``: :func:`~.arguments.default_entropy_plateau`.
        :param long_episode_defaults: the algorithm takes the long-episode defaults (the PPO family: OrderGradPPO
            and the sb3-contrib variants) on an env whose limit exceeds :data:`~.arguments.LONG_EPISODE_STEPS`.
        :param sb3_kwargs: the SB3 constructor's other arguments.
        :return: whether the long-episode defaults apply (:func:`~.arguments.long_episodes`), and the env's episode
            limit (:func:`~.env_util.episode_limit`; ``None``: none known), which the agents' other defaults read.
        :raises ValueError: an invalid objective, ``n_episodes``, ``batch_size``, ``risk_schedule``, ``untie_tail``
            or ``entropy_when_tied``, or ``squash_output`` without ``use_sde``
            (:func:`~.arguments.check_squash_output`).
        """
        check_arguments(
            untie_tail=untie_tail,
            entropy_when_tied=entropy_when_tied,
            drift_when_blind=drift_when_blind,
            relative_ent_coef=relative_ent_coef,
            noise_sampler=noise_sampler,
            novelty_when_blind=novelty_when_blind,
            reward_to_go=reward_to_go,
            sde_sample_freq=sb3_kwargs.get("sde_sample_freq", -1),  # absent where the SB3 class has no gSDE
        )
        check_blind_exploration(drift_when_blind, novelty_when_blind)
        check_squash_output(sb3_kwargs.get("policy_kwargs"), sb3_kwargs.get("use_sde", False))
        novelty_phase = check_float("novelty_phase", novelty_phase, 0.0, 1.0)
        seed = check_seed(seed)
        parsed, gcvar_alpha = parse_agent_objective(objective, k)
        env_limit = episode_limit(env)
        long = long_episodes(parsed, env_limit if long_episode_defaults else None)
        if risk_schedule is not None:
            schedule = parse_risk_schedule(risk_schedule)
            check_risk_schedule(schedule, parsed, gcvar_alpha)
        if normalize_advantage is None:
            # The scale's default follows the episode limit in every algorithm, whatever its other defaults.
            scaled_long = long_episodes(parsed, env_limit)
            normalize_advantage = default_normalize_advantage(parsed, group_size, gcvar_alpha, scaled_long)
        rollout_steps = self.ranked_rollout_steps
        n_episodes_given = n_episodes is not None
        # Built before the rollout's size: its default reads the action space. n_episodes only sizes a native batch
        # (the tail-risk ids), which has no time limit, so the first guess is the final size there.
        if n_episodes is not None:
            n_episodes = check_n_episodes(n_episodes)
        first_guess = n_episodes or default_n_episodes(parsed, group_size, env_limit, rollout_steps)
        training_env = build_env(env, n_envs, seed, first_guess)
        action_space = getattr(training_env, "action_space", None)  # None in SB3's load without an env
        check_algorithm_action_space(action_space, self.supported_action_spaces, type(self).__name__)
        if long_episode_defaults:  # the PPO family
            rollout_steps = timed_box_rollout_steps(rollout_steps, action_space, env_limit)
        if isinstance(batch_size, EllipsisType):
            if n_episodes is None:
                n_episodes = default_n_episodes(parsed, group_size, env_limit, rollout_steps)
            n_episodes = check_n_episodes(n_episodes)
        else:
            n_episodes, sb3_kwargs["batch_size"] = episodic_sizes(
                parsed, n_episodes, batch_size, group_size, env_limit, rollout_steps
            )
            # The PPO family's per-minibatch normalization: on or off as asked (the mixin keeps "group", "channel");
            # the update runs with it off, the weights being normalized per episode (train_on_episode_weights).
            sb3_kwargs["normalize_advantage"] = bool(normalize_advantage)
        if "gamma" in sb3_kwargs and sb3_kwargs["gamma"] is None:  # check_gamma's None: the undiscounted return
            sb3_kwargs["gamma"] = 1.0
        buffer_kwargs = sb3_kwargs.get("rollout_buffer_kwargs") or {}
        check_buffer_kwargs(buffer_kwargs)
        # The env's own TimeLimit ends its episodes: the bound on an endless episode gives way to it (the algorithms
        # that take buffer options: sb3-contrib's RecurrentPPO takes none).
        if "rollout_buffer_kwargs" in sb3_kwargs and "max_episode_steps" not in buffer_kwargs:
            if env_limit is not None and env_limit > MAX_EPISODE_STEPS:
                sb3_kwargs["rollout_buffer_kwargs"] = {**buffer_kwargs, "max_episode_steps": env_limit}
        with warnings.catch_warnings():
            # PPO compares batch_size with n_steps * n_envs; an episodic rollout's step count varies instead.
            warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
            sb3_init(
                policy,
                training_env,
                n_steps=n_episodes,  # replaced by episodes per env in _setup_model
                seed=seed,
                _init_setup_model=False,
                **sb3_kwargs,
            )
        default_bonus = False
        if self.ent_coef is None and hasattr(self, "action_space"):  # SB3's load builds without an env (no action
            # space), then sets the save's ent_coef
            ranked = self.default_ranked_ent_coef if long else self.default_short_ranked_ent_coef
            self.ent_coef = default_ent_coef(parsed, self.action_space, ranked)
            default_bonus = self.ent_coef == RANKED_ENT_COEF
        self._init_episodic(parsed, gcvar_alpha, n_episodes, normalize_advantage, reward_to_go, group_size)
        self._warn_if_rewards_normalized()
        if risk_schedule is None:  # the default reads the env's action space (SB3's load builds without an env, then
            # sets the save's schedule)
            schedule = default_risk_schedule(self.objective, gcvar_alpha, long, timed_box(action_space, env_limit))
        self.risk_schedule = schedule
        self.untie_tail = untie_tail
        # untie_tail's tie at the value at risk (risk_schedules.tie_holds_var); False in saves from before it.
        self.untie_at_var = True
        # untie_tail's terminated episodes tied at the lowest return seen (_at_floor); False in saves from before it.
        self.untie_terminated = True
        self.entropy_when_tied = entropy_when_tied
        # On long episodes a rollout partly tied at the best return gets the bonus in proportion to its other
        # episodes (_ent_coef_in_force); False in saves from before it.
        self.entropy_by_untied_share = long
        vec_env: VecEnv | None = getattr(self, "env", None)
        error = check_noise_sampler(noise_sampler, self.objective, gcvar_alpha, self.group_size, self.reward_to_go)
        if noise_sampler is None:  # SB3's load builds without an env: the save's value follows
            # On where the env has an event to sample: not one whose every event is certain or impossible.
            noise_sampler = error is None and bool(sampled_events(env_noise_probs(vec_env) or {}))
        self.noise_sampler = noise_sampler
        # The sampler fits the level the risk schedule has in force (_noise_level); False in saves from before it.
        self.noise_follows_schedule = True
        self.drift_when_blind = drift_when_blind
        if novelty_when_blind is None:
            novelty_when_blind = default_novelty_when_blind(parsed, drift_when_blind)
        self.novelty_when_blind = novelty_when_blind
        self.novelty_phase = novelty_phase
        if entropy_plateau is None:  # SB3's load builds without an env: the save's value follows
            entropy_plateau = default_entropy_plateau(long, default_bonus)
        self.entropy_plateau = make_entropy_plateau(entropy_plateau)
        # The first learn call sizes the rollout from its budget (_size_rollout_by_budget); False in saves from
        # before the rule, and once a learn call has decided.
        self.n_episodes_by_budget = (
            self.budget_sized_rollouts and not n_episodes_given and sized_by_budget(parsed, env_limit, group_size)
        )
        # ... and the default minibatch (default_batch_size) follows the size decided (absent from saves before it:
        # there the minibatch stays, as the long-episode rule's 32 and 16 share theirs, 64).
        self.batch_size_by_budget = self.n_episodes_by_budget and batch_size is None
        # A policy without a critic and without net_arch takes SB3's default actor for its features extractor (none
        # after NatureCNN); False in saves from before, built with LEGACY_DEFAULT_ACTOR (_policy_build_kwargs).
        self.sb3_default_net_arch = True
        self._noise: NoiseSampler | None = None
        if noise_sampler and vec_env is not None:
            self._noise = self._make_noise_sampler(vec_env)
        return long, env_limit

    def _noise_level(self) -> float | None:
        """The lower-tail share the noise sampler fits this rollout's events to: the level the risk schedule has in
        force (``noise_follows_schedule``; the target's once the schedule ends), ``None`` (the target's) without a
        level schedule or in saves from before the rule.

        Why: early in a level schedule the objective ranks nearly the whole batch, and a sampler fitted to the
        target's tail draws its costly events up to :data:`~.noise_sampler.PROB_CAP` per draw, so the batch the mean
        phase learns from holds few successes (on the point navigation the target's fit reached the 50% cap within
        25k steps, in a probe of seed 1 without a schedule), where at the level in force the sampler draws the events
        as the env does until the tail narrows.
        """
        if not getattr(self, "noise_follows_schedule", False) or getattr(self, "risk_schedule", None) is None:
            return None
        level = level_in_force(*self._risk_in_force())
        target = self._noise.level  # type: ignore[union-attr]
        return None if level is None else min(1.0, max(target, level))

    def _make_noise_sampler(self, env: VecEnv) -> NoiseSampler:
        """The sampler of ``env``'s noise events (from its first env's ``noise_probs``).

        :raises ValueError: the env does not expose its noise (:mod:`ordergrad_rl.envs.noise`), or exposes it
            malformed.
        """
        nominal = env_noise_probs(env)
        if nominal is None:
            raise ValueError(
                "noise_sampler=True needs an env that exposes its noise (noise_probs, set_noise_probs and "
                "info['noise'], see ordergrad_rl.envs.noise); this env has no noise_probs. To train this model "
                "without the sampler, set model.noise_sampler = False before set_env, or load(..., "
                "noise_sampler=False)"
            )
        # Asked here, once: the sampler calls it at every episode's end, and would fail only in the first rollout.
        if not env.has_attr("set_noise_probs"):
            raise ValueError(
                "the noise sampler (noise_sampler=True, or the default where the env has noise_probs) needs an env "
                "with a set_noise_probs(probs) method, which this one lacks (ordergrad_rl.envs.noise; "
                "BernoulliNoiseMixin provides it); pass noise_sampler=False to train without the sampler"
            )
        return NoiseSampler(nominal, lower_level(self.objective), seed=self.seed)  # type: ignore[arg-type]

    def _noise_sampler_for(self, env: VecEnv) -> NoiseSampler | None:
        """The sampler a model that samples its env's noise uses on ``env`` where it gets another env (``set_env``,
        ``load`` with an env): its own (``q`` included) where the env's events and nominal probabilities are those it
        samples, else a new one from the env's own (the model's own would take its likelihood ratios to the
        probabilities of the env it was built with, and weigh the new env's episodes wrong).

        :raises ValueError: the env does not expose its noise (:meth:`_make_noise_sampler`).
        """
        kept = getattr(self, "_noise", None)
        if not getattr(self, "noise_sampler", False):  # absent from saves before the sampler
            return kept
        fresh = self._make_noise_sampler(env)
        return kept if kept is not None and kept.nominal == fresh.nominal else fresh

    def _init_episodic(
        self,
        objective: Objective | ChannelObjective,
        gcvar_alpha: float | None,
        n_episodes: int,
        normalize_advantage: bool | str,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        advantage: str = EPISODIC,
    ) -> None:
        """Check the OrderGrad arguments; set ``objective``, ``k``, ``gcvar_alpha``, ``n_episodes``, ``group_size``,
        ``normalize_advantage``, ``advantage``, ``reward_to_go``.

        :param objective: the parsed objective (:func:`~ordergrad_rl.core.channels.parse_agent_objective`), bound
            here to ``n_episodes // 2`` (``group_size // 2``) if it has no ``k``.
        :param gcvar_alpha: GCVaR's level for ``objective="gcvar<a>"``, else ``None``.
        :raises ValueError: unknown advantage, ``n_episodes < 2``, ``k >= n_episodes`` (``k >= group_size`` with
            groups), ``n_episodes`` not a multiple of ``group_size``, ``normalize_advantage="group"`` or ``"channel"``
            without groups, ``reward_to_go=True`` with a ranked or multi-channel objective or with groups, or
            ``policy_kwargs["critic"]`` inconsistent with the advantage mode (episodic mode builds SB3's value head
            and never trains it: ``"q"`` is refused).
        """
        check_advantage(advantage, self.advantages)
        n_episodes = check_n_episodes(n_episodes)
        group_size = check_group_size(group_size, n_episodes)
        check_normalize_advantage(normalize_advantage)
        check_group_normalization(normalize_advantage, group_size)
        compared = n_episodes if group_size is None else group_size  # the N of the leave-one-out advantage
        # "gcvar<a>": Tamar et al.'s GCVaR weights (episode_weights) for CVaR_a; the objective logged as
        # risk/objective (and checked below) is OrderGrad's cvar<a> at the same k.
        self.gcvar_alpha = gcvar_alpha
        size = f"n_episodes={n_episodes}" if group_size is None else f"group_size={group_size}"
        parsed = objective
        if not parsed.is_bound:
            parsed = parsed.bind(compared // 2) if isinstance(parsed, Objective) else parsed.bind_default(compared // 2)
            if compared // 2 == 1 and isinstance(parsed, Objective) and parsed.name != "mean":
                warnings.warn(
                    f"objective {str(objective)!r} binds the default k = {size.split('=')[0]} // 2 = 1, where every "
                    f"rank-weighted objective is the mean: with {size} it trains the mean; use at least 4",
                    stacklevel=user_stacklevel(),
                )
        check_leave_one_out(parsed, n_episodes, group_size)
        if isinstance(parsed, Objective) and not np.any(parsed.weights):  # e.g. alpha[0,0,0]: a valid L-statistic
            raise ValueError(f"objective {str(parsed)!r} has all-zero rank weights: its gradient is 0, nothing trains")
        check_reward_to_go(reward_to_go, parsed, group_size)
        self._check_policy_critic(advantage, ("value", "none"))
        self._set_objective(parsed)
        self.n_episodes = n_episodes
        self.group_size = group_size
        self.normalize_advantage = (
            normalize_advantage if normalize_advantage in ("group", "channel", RUNNING) else bool(normalize_advantage)
        )
        self.advantage = advantage
        # Default: reward-to-go for the pooled mean; groups keep whole-episode weights (GRPO exactly, see above).
        self.reward_to_go = default_reward_to_go(parsed, group_size) if reward_to_go is None else bool(reward_to_go)

    @classmethod
    def critic_argument_error(cls, name: str) -> ValueError:
        """The refusal of ``name``, one of the :attr:`critic_arguments` (:func:`~.sb3_compat.critic_argument_error`)."""
        return critic_argument_error(cls.__name__, name)

    @classmethod
    def _refuse_sb3_arguments(cls, env: Any, n_envs: int | None, n_steps: Any, critic_values: tuple[Any, ...]) -> None:
        """The constructor's refusals of its SB3 parent's arguments that episodic mode has no use for: ``n_steps``
        (the error names the ``n_episodes`` to use) and the :attr:`critic_arguments` given (not ``None``).

        :param critic_values: the values of the :attr:`critic_arguments`, in their order.
        :raises ValueError: one of them is given.
        """
        if n_steps is not None:
            raise n_steps_error(cls.__name__, n_steps, env, n_envs)
        for name, value in zip(cls.critic_arguments, critic_values, strict=True):
            if value is not None:
                raise cls.critic_argument_error(name)

    @classmethod
    def _refuse_at_load(cls, kwargs: dict[str, Any], env: Any) -> None:
        """The arguments :meth:`load` refuses among the caller's ``kwargs``: SB3's ``n_steps`` (SB3's load sets it,
        and ``_setup_model`` would size it from ``n_episodes`` without a word), the :attr:`critic_arguments` (SB3's
        load sets them, and nothing reads them), the flags of :attr:`saved_before` that the constructor does not take
        (SB3's load set them unchecked: ``OrderGradREINFORCE.load(path, drift_when_blind=1)`` trained with
        OrderGradPPO's drift) and ``None`` defaults (:meth:`refuse_none_defaults`); a class refusing more extends it.

        :raises ValueError: as the constructor for the same argument, or naming the flag it does not take.
        """
        if "n_steps" in kwargs:
            raise n_steps_error(cls.__name__, kwargs["n_steps"], env, None)
        for name in cls.critic_arguments:
            if name in kwargs:
                raise cls.critic_argument_error(name)
        accepted = inspect.signature(cls).parameters
        for name in cls.saved_before:
            if name in kwargs and name not in accepted:
                raise ValueError(
                    f"{cls.__name__}.load(path, {name}={kwargs[name]!r}): {cls.__name__} takes no argument {name} "
                    "(the model sets it, and a save from before it loads with the value it trained with); load takes "
                    "the constructor's arguments"
                )
        cls.refuse_none_defaults(kwargs)

    @classmethod
    def load_arguments(cls) -> set[str]:
        # SB3's n_steps, refused as the constructor refuses it, and the arguments of saves from before them.
        return super().load_arguments() | {"n_steps", *cls.saved_before}

    @classmethod
    def load(
        cls: type[SelfEpisodic],
        path: Any,
        env: AgentEnv | str | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfEpisodic:
        """SB3's ``load`` (see :meth:`OrderGradAlgorithmMixin.load`); a save from before an argument of
        :attr:`saved_before` existed goes on training as it was saved, with the value it trained with (unless
        ``kwargs`` sets it). A ``gym.Env`` ``env`` of an id with a native batch becomes that batch of ``n_envs`` envs
        (the save's, or the one given), as in the constructor
        (:func:`~ordergrad_rl.agents.common.env_util.rebuilt_env`).

        Every other argument keeps its saved value, as in SB3, also where the constructor's default for it depends on
        one of ``kwargs`` (``batch_size`` on ``n_episodes``; ``n_episodes``, ``normalize_advantage`` and
        ``value_baseline`` on ``group_size``; ``entropy_plateau`` on ``ent_coef``: pass them too to have a new
        model's), except an argument whose saved value the one changed forced or now rules out: it takes the
        constructor's default for the new value (:meth:`_default_at_load`).

        The entries of ``custom_objects`` that name the model's arguments are read as the same arguments
        (:meth:`~ordergrad_rl.agents.common.base_class.OrderGradAlgorithmMixin.load_kwargs`).

        :raises ValueError: SB3's ``n_steps`` among ``kwargs``, as the constructor refuses it (a rollout is
            ``n_episodes`` episodes).
        """
        kwargs = {**kwargs, **sb3_load_options(custom_objects, print_system_info, force_reset)}
        kwargs = cls.load_kwargs(kwargs)
        cls._refuse_at_load(kwargs, env)  # the caller's, before the saved_before values and the conversions below
        saved = read_saved_data(path)  # before SB3 reads a file object to its end
        replaced = {name: saved.get(name, cls.saved_before.get(name)) for name in kwargs}
        # Passed on as SB3's load kwargs, which it sets before _setup_model: the model is built with the value the
        # save trained with (a save from before value_baseline builds no history baseline), not the constructor's
        # default for the env at hand.
        before = {name: value for name, value in cls.saved_before.items() if name not in saved and name not in kwargs}
        if "ent_coef" in kwargs:  # the caller's ent_coef wins over the save's schedule (see save)
            kwargs["ent_coef_schedule"] = None
        n_envs = kwargs.get("n_envs", saved.get("n_envs"))  # the caller's, checked by the mixin's load
        if env is not None and isinstance(n_envs, int):
            env = rebuilt_env(env, n_envs)
        if "n_episodes" in kwargs:  # the caller's size, not one the first learn call would choose
            kwargs.setdefault("n_episodes_by_budget", False)
        if "n_episodes" in kwargs or "batch_size" in kwargs:  # and the caller's minibatch
            kwargs.setdefault("batch_size_by_budget", False)
        # The constructor's forms of the arguments it converts: SB3's load set the string "level" as it was, and the
        # first rollout failed on it ('str' object has no attribute 'share').
        for name, convert in (("risk_schedule", parse_risk_schedule), ("entropy_plateau", make_entropy_plateau)):
            if name in kwargs:
                kwargs[name] = convert(kwargs[name])
        with warnings.catch_warnings():
            # SB3's load constructs the model with the default objective, then sets the save's: checked on it below.
            warnings.filterwarnings("ignore", message=REWARDS_NORMALIZED_WARNING)
            model = super().load(path, env=env, device=device, **before, **kwargs)
        model._default_at_load(replaced)
        model._check_loaded_arguments(kwargs.keys())
        model._warn_if_rewards_normalized()
        if model.env is not None:
            model._noise = model._noise_sampler_for(model.env)
        return model

    def _default_at_load(self, replaced: Mapping[str, Any]) -> None:
        """After ``load``, before :meth:`_check_loaded_arguments`: an argument left out of ``load`` whose constructor
        default depends on one given there takes that default for the given value where its saved value is no choice
        of the user's: forced by the saved value of the argument given (``replaced``: the saved values of the
        arguments given, :attr:`saved_before`'s where the save has none), or ruled out by its new value. Others keep
        their saved values (:meth:`load`). Here ``novelty_when_blind`` (:func:`~.arguments.default_novelty_when_blind`)
        against ``drift_when_blind``, and ``reward_to_go`` (:func:`~.arguments.default_reward_to_go`) against
        ``group_size``."""
        if "drift_when_blind" in replaced and "novelty_when_blind" not in replaced:
            # One of them at most is on: the saved novelty was forced off, or the new drift rules it out.
            if replaced["drift_when_blind"] or (self.novelty_when_blind and self.drift_when_blind):
                self.novelty_when_blind = default_novelty_when_blind(self.objective, self.drift_when_blind)
        if "group_size" in replaced and "reward_to_go" not in replaced:
            # Off in groups: forced off in the saved ones, or ruled out by the new ones.
            if replaced["group_size"] is not None or (self.reward_to_go and self.group_size is not None):
                self.reward_to_go = default_reward_to_go(self.objective, self.group_size)

    def _check_loaded_arguments(self, names: Collection[str]) -> None:
        """After ``load``: the constructor's checks of the arguments among ``names`` (given to ``load``) whose valid
        values depend on the model's other arguments, saved or given (those that do not were checked before, see
        :meth:`~ordergrad_rl.agents.common.base_class.OrderGradAlgorithmMixin.argument_checks`): one copy of each,
        which the constructor runs too (:func:`check_leave_one_out`, :func:`check_blind_exploration`,
        :func:`check_group_normalization`, :func:`check_reward_to_go`, :func:`check_noise_sampler`).

        :raises ValueError: as the constructor.
        """
        given = set(names)
        if given & {"n_episodes", "group_size"}:
            n_episodes = check_n_episodes(self.n_episodes)
            check_leave_one_out(self.objective, n_episodes, check_group_size(self.group_size, n_episodes))
        gcvar_alpha = getattr(self, "gcvar_alpha", None)  # absent from saves before GCVaR
        if "risk_schedule" in given:
            check_risk_schedule(self.risk_schedule, self.objective, gcvar_alpha)
        if given & {"drift_when_blind", "novelty_when_blind"}:
            # One of them may be absent from a save before it.
            drift, novelty = (getattr(self, name, False) for name in ("drift_when_blind", "novelty_when_blind"))
            check_blind_exploration(drift, novelty)
        if given & {"normalize_advantage", "group_size"}:
            check_group_normalization(self.normalize_advantage, self.group_size)
        if given & {"reward_to_go", "group_size"}:
            check_reward_to_go(self.reward_to_go, self.objective, self.group_size)
        if given & {"noise_sampler", "group_size", "reward_to_go"}:
            noise_sampler = getattr(self, "noise_sampler", False)  # absent from saves before the sampler
            check_noise_sampler(noise_sampler, self.objective, gcvar_alpha, self.group_size, self.reward_to_go)

    def set_env(self, env: AgentEnv, force_reset: bool = True) -> None:
        """SB3's ``set_env``; a ``gym.Env`` made from an id with a native batch becomes that batch of the model's
        ``n_envs`` envs, as in the constructor (:func:`~ordergrad_rl.agents.common.env_util.rebuilt_env`). A model
        that samples its env's noise keeps its sampler for an env with the same noise events and nominal
        probabilities, and starts a new one for an env with others (:meth:`_noise_sampler_for`).

        :raises ValueError: as SB3's, or the model samples its env's noise and ``env`` does not expose it.
        """
        venv = self._wrap_env(rebuilt_env(env, self.n_envs), self.verbose)
        sampler = self._noise_sampler_for(venv)  # refused before the model changes
        super().set_env(venv, force_reset)
        self._noise = sampler
        self._warn_if_rewards_normalized()

    @property
    def ranks_returns(self) -> bool:
        """Whether the objective ranks the episode returns (a channel objective or ``k != 1``; the mean, linear in the
        rewards, does not): a running reward scale then changes what it trains (:meth:`_warn_if_rewards_normalized`).
        """
        return isinstance(self.objective, ChannelObjective) or self.k != 1

    def _warn_if_rewards_normalized(self) -> None:
        """:func:`~ordergrad_rl.agents.common.checks.warn_if_rewards_normalized` for the model's env where its
        objective ranks the returns (:attr:`ranks_returns`)."""
        env = getattr(self, "env", None)
        if env is not None and self.ranks_returns:
            warn_if_rewards_normalized(env, self.objective_label())

    def save(self, path: Any, exclude: Any = None, include: Any = None) -> None:
        """SB3's ``save``. A scheduled ``ent_coef`` (a callable of ``progress_remaining``, as the defaults on short
        categorical episodes and OrderGradREINFORCE's are) is saved as ``ent_coef_schedule``, and ``ent_coef`` as
        the coefficient in force: SB3's ``PPO.load`` / ``A2C.load`` of the save multiply their loss by
        ``ent_coef``, so a callable there crashed their first update. ``load`` puts the schedule back.
        The model's ``VecNormalize`` is recorded as every OrderGrad algorithm records it
        (:meth:`~ordergrad_rl.agents.common.base_class.OrderGradAlgorithmMixin.save`).
        """
        coef = self.ent_coef
        if callable(coef):
            self.ent_coef_schedule = coef
            self.ent_coef = float(coef(self._current_progress_remaining))
        try:
            super().save(path, exclude, include)
        finally:
            self.ent_coef = coef
            self.__dict__.pop("ent_coef_schedule", None)

    def objective_label(self) -> str:
        # GCVaR trains at objective_spec cvar<a>@k (what risk/objective logs): its run name and hparams say gcvar<a>,
        # or it could not be told from the OrderGrad CVaR run beside it.
        alpha = getattr(self, "gcvar_alpha", None)  # absent from saves before GCVaR
        return super().objective_label() if alpha is None else f"gcvar{alpha:g}"

    @property
    def n_groups(self) -> int:
        """Groups per rollout (``n_episodes // group_size``; 1 without groups)."""
        return 1 if self.group_size is None else self.n_episodes // self.group_size

    def _excluded_save_params(self) -> list[str]:
        excluded = [*super()._excluded_save_params(), "_group_rng", "_group_resetter", "_episode_contexts"]
        excluded += ["_drift_seed"]  # load seeds the drift with the saved seed, as it does the group contexts
        # Set again at every rollout / learn call.
        excluded += ["_objective_in_force", "_gcvar_in_force", "_risk_share", "_rollouts_this_learn", "_rollout_risk"]
        excluded += ["_rollout_outgrown", "_learn_continues"]
        excluded += ["_rollout_tied_at_best", "_rollout_tied_share", "_rollout_untie_cases", "_noise_counts"]
        excluded += ["_rollout_floors"]
        excluded += ["_rollout_blind"]
        excluded += ["_noise_running"]
        excluded += ["_rollout_noise_weights", "_rollout_noise_probs"]
        # Derived in _setup_model (episodes per env) or the class default: left out, SB3's PPO.load of the file gets
        # its own n_steps and RolloutBuffer and trains (see ordergrad_rl.agents.common.sb3_compat).
        excluded.append("n_steps")
        if self.rollout_buffer_class is EpisodicRolloutBuffer:
            excluded.append("rollout_buffer_class")
        return excluded

    def _setup_model(self) -> None:
        self._restore_objective()
        schedule = self.__dict__.pop("ent_coef_schedule", None)  # SB3's load put the save's data here (save)
        if schedule is not None:
            self.ent_coef = schedule
        # Buffer options SB3's RolloutBuffer does not take are kept apart (and saved apart), so that SB3's PPO.load
        # of a save gives its own buffer the rest; saves of earlier versions hold them in rollout_buffer_kwargs.
        kwargs = self.rollout_buffer_kwargs
        self.rollout_buffer_kwargs = {key: value for key, value in kwargs.items() if key not in EPISODIC_BUFFER_KEYS}
        self.episodic_buffer_kwargs: dict[str, Any] = {
            **getattr(self, "episodic_buffer_kwargs", {}),
            **{key: value for key, value in kwargs.items() if key in EPISODIC_BUFFER_KEYS},
        }
        episodic_policies = self.episodic_policy_classes
        if not (isinstance(self.policy_class, type) and issubclass(self.policy_class, episodic_policies)):
            aliases = ", ".join(repr(name) for name in self.policy_aliases)
            bases = " or ".join(f"{base.__module__}.{base.__qualname__}" for base in episodic_policies)
            raise ValueError(
                f"policy {self.policy_class!r} has no episodic mode in {type(self).__name__}: use {aliases} or a "
                f"subclass of {bases}"
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
        lent = dict(rollout_buffer_kwargs=self._episodic_buffer_kwargs(), policy_kwargs=self._policy_build_kwargs())
        with lent_attributes(self, **lent):
            super()._setup_model()
        # Contexts of the groups and the members' fresh dynamics streams (see ordergrad_rl.agents.common.groups).
        self._group_rng = np.random.default_rng(self.seed)
        self._group_resetter: GroupResetter | None = None

    def _policy_build_kwargs(self) -> dict[str, Any]:
        """The ``policy_kwargs`` the policy is built with: the model's, except in a save from before
        ``sb3_default_net_arch`` (:attr:`saved_before`), where a policy without a critic (``critic="none"``) and
        without ``net_arch`` gets the actor it was saved with, :data:`~.policies.LEGACY_DEFAULT_ACTOR` after every
        features extractor (now SB3's default: none after ``NatureCNN``)."""
        kwargs = self.policy_kwargs
        if self.sb3_default_net_arch or kwargs.get("critic") != "none" or kwargs.get("net_arch") is not None:
            return kwargs
        return {**kwargs, "net_arch": dict(pi=list(LEGACY_DEFAULT_ACTOR), vf=[])}

    def set_random_seed(self, seed: int | None = None) -> None:
        """SB3's ``set_random_seed`` (Python, NumPy, torch, the action space, the env), and the generators of this
        model's own draws that the constructor seeds with ``seed``: the group contexts' and the noise sampler's, and
        the seed of the blind rollouts' drift (``drift_when_blind``, :meth:`_explore_if_blind`). So a model seeded
        after construction trains the same twice, as SB3's do. SB3's ``_setup_model`` calls it before those
        generators exist (the constructor then seeds them; ``load`` keeps the sampler's saved state, and seeds the
        group contexts and the drift with the saved seed).

        :param seed: the seed; ``None`` changes nothing (SB3's convention).
        """
        super().set_random_seed(seed)
        if seed is None or "_group_rng" not in self.__dict__:  # inside _setup_model
            return
        sampler = getattr(self, "_noise", None)  # absent from saves before the sampler
        generators = [self._group_rng] + ([sampler.rng] if sampler is not None else [])
        for generator in generators:  # in place: the group resetter holds the same generator
            generator.bit_generator.state = np.random.default_rng(seed).bit_generator.state
        self._drift_seed = seed  # the drift draws from a generator of its own at each blind rollout

    def _episodic_buffer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the episodic rollout buffer: the user's ``rollout_buffer_kwargs`` (the episodic-only
        ones are kept in ``episodic_buffer_kwargs``) and the episode count ``n_episodes``."""
        return {**self.rollout_buffer_kwargs, **self.episodic_buffer_kwargs, "n_episodes": self.n_episodes}

    # ------------------------------------------------------------------ collection
    def _env_actions(self, actions: np.ndarray) -> np.ndarray:
        """What the env receives, as in SB3: actions in the space's shape; Gaussian ones unscaled (squashed policies)
        or clipped to the box."""
        actions = actions.reshape((-1, *(self.action_space.shape or ())))  # None: spaces SB3 refuses
        if isinstance(self.action_space, spaces.Box):
            if self.policy.squash_output:
                return self.policy.unscale_action(actions)
            return np.clip(actions, self.action_space.low, self.action_space.high)
        return actions

    def collect_rollouts(
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: RolloutBuffer | EpisodicRolloutBuffer,  # SB3 passes the model's rollout_buffer
        n_rollout_steps: int,
    ) -> bool:
        """Collect ``n_episodes`` complete episodes with the current policy into ``rollout_buffer``.

        Episodes must end (terminate or be truncated, e.g. by a ``TimeLimit``). If some env is mid-episode when
        the rollout starts, the VecEnv is reset, so ``Monitor(allow_early_resets=False)`` wrappers cannot be used.
        With ``group_size``, one context is drawn per group and every env starting a counted episode is reset into
        its group's context (:mod:`ordergrad_rl.agents.common.groups`). A multi-channel objective's info channels are
        summed per episode from the step infos.

        :param env: the training VecEnv.
        :param callback: called at every vectorized step, like SB3, whose ``self.locals`` hold SB3's ``actions``,
            ``clipped_actions`` (what the env received), ``log_probs`` (a tensor, as SB3's), ``obs_tensor``,
            ``new_obs``, ``rewards``, ``dones``, ``infos`` and ``n_steps``, and the algorithm's own as sb3-contrib's
            (``action_masks``, ``lstm_states`` and ``episode_starts``; :meth:`_step_locals`); not ``values``, since
            episodic collection uses none (the policy's ``forward`` computes them, as in SB3, and they are dropped).
        :param rollout_buffer: the episodic buffer to fill (the model's ``rollout_buffer``).
        :param n_rollout_steps: ignored (SB3's signature): a rollout lasts until its ``n_episodes`` episodes ended.
        :return: False if a callback stopped training (the envs are then restarted when the next rollout starts).
        :raises TypeError: ``rollout_buffer`` is not an :class:`EpisodicRolloutBuffer`.
        """
        if not isinstance(rollout_buffer, EpisodicRolloutBuffer):
            raise TypeError(
                f"{type(self).__name__} collects whole episodes into an EpisodicRolloutBuffer (its rollout_buffer), "
                f"got a {type(rollout_buffer).__name__}"
            )
        assert self._last_obs is not None, "No previous observation was provided"
        self.policy.set_training_mode(False)
        if not np.all(self._last_episode_starts):
            # Some env is inside an episode that began before this rollout: restart all envs so that each
            # env's counted episodes are the first ones it starts under the current policy.
            self._last_obs = env.reset()  # type: ignore[assignment]  # SB3's VecEnvObs admits tuples, as SB3 ignores
            self._last_episode_starts = np.ones(env.num_envs, dtype=bool)
        rollout_buffer.reset()
        self._update_risk()
        self._start_groups(env, rollout_buffer)
        check_finite_step(self._last_obs, None, "at the start of a rollout (the reset observation)")
        channels = InfoChannels(self._info_channels)
        self._start_noise(env)
        if self.use_sde:
            self.policy.reset_noise(env.num_envs)
        callback.on_rollout_start()
        # After the callbacks' start, which may add hooks.
        self._forward_observed = forward_observed(self.policy, self._plain_forwards)

        n_steps = 0
        rollout_start, outgrown_at = self.num_timesteps, self._outgrown_rollout_at()
        endless_at = self._endless_rollout_at(outgrown_at)
        while not rollout_buffer.full:
            if self.use_sde and self.sde_sample_freq > 0 and n_steps % self.sde_sample_freq == 0:
                self.policy.reset_noise(env.num_envs)
            obs = self._last_obs
            assert obs is not None  # the reset's, then each step's (below)
            with th.no_grad():
                obs_tensor = obs_as_tensor(obs, self.device)
                actions_t, log_probs, extras = self._policy_step(obs_tensor, env)  # log_probs: a tensor, as SB3's
            actions = actions_t.cpu().numpy()
            clipped_actions = self._env_actions(actions)  # SB3's name: callbacks read it from self.locals
            new_obs, rewards, dones, infos = env.step(clipped_actions)
            self.num_timesteps += env.num_envs
            check_step_returns(rewards, dones, infos, env.num_envs, f"at num_timesteps={self.num_timesteps}")
            check_finite_step(new_obs, rewards, f"at num_timesteps={self.num_timesteps}")

            # The hook's per-env arrays by name too, as the collection loops of sb3-contrib have them (action_masks).
            callback.update_locals({**extras, **self._step_locals(), **locals()})
            if not callback.on_step():
                self._end_noise(env)
                # The envs have taken this step, which is dropped with the unfinished rollout (as SB3 drops it):
                # a later rollout (learn(..., reset_num_timesteps=False)) restarts them, instead of counting an
                # episode whose first step it did not see.
                self._last_episode_starts = np.zeros(env.num_envs, dtype=bool)
                return False

            channel_values = channels.step(infos)
            # Truncated, not terminated (SB3's info key); read only where an episode ended, not per env and step.
            ended = np.flatnonzero(dones)
            time_outs = None
            if ended.size:
                time_outs = np.zeros(len(dones), dtype=bool)
                for i in ended:
                    time_outs[i] = bool(infos[i].get("TimeLimit.truncated", False))
            if self._noise_counts is not None:
                self._count_noise(env, infos, dones, rollout_buffer.pending_episodes)
            kept = rollout_buffer.add(
                obs,
                actions,
                log_probs.cpu().numpy(),
                rewards,
                dones,
                channel_values,
                time_outs=time_outs,
                **extras,
            )
            if self.num_timesteps >= outgrown_at:
                self._warn_rollout_outgrown(rollout_buffer, rollout_start)
                outgrown_at = endless_at = np.inf
            elif self.num_timesteps >= endless_at:
                if rollout_buffer.ended_episodes[0] == 0:
                    self._warn_rollout_outgrown(rollout_buffer, rollout_start)
                    outgrown_at = np.inf
                endless_at = np.inf
            finished = np.flatnonzero(kept & dones) if ended.size else ended
            if finished.size:
                # rollout/ep_rew_mean and ep_len_mean describe the collected episodes only.
                self._update_info_buffer([infos[i] for i in finished], dones[finished])
            new_obs = self._repose_groups(rollout_buffer, dones, new_obs)
            n_steps += 1
            self._last_obs = new_obs
            self._last_episode_starts = dones
            if self.use_sde and dones.any():  # each episode with its own exploration matrix
                resample_episode_noise(self.policy, dones)

        rollout_buffer.finalize()
        self._end_noise(env)
        self._warn_after_first_rollout(rollout_buffer, self.num_timesteps - rollout_start)
        channels.check()
        self._compute_advantages()
        self._explore_if_blind()
        self._explore_in_novelty_phase()
        self._update_entropy_plateau()
        self._record_rollout_logs()
        callback.update_locals(locals())
        callback.on_rollout_end()
        return True

    # ------------------------------------------------------------------ noise sampler
    def _start_noise(self, env: VecEnv) -> None:
        """At a rollout's start: draw the noise probabilities of every env's first counted episode (the sampler's
        ``q`` or the env's own) and zero the episodes' noise counts. No-op without ``noise_sampler``."""
        self._noise_counts: np.ndarray | None = None
        if not getattr(self, "noise_sampler", False):  # absent from saves before the sampler
            return
        if self._noise is None:
            self._noise = self._make_noise_sampler(env)
        nominal = env_noise_probs(env)
        if nominal is None or sampled_events(nominal) != self._noise.nominal:
            raise ValueError(
                f"the env's noise_probs changed during training, from {self._noise.nominal} to {nominal}: the "
                "sampler's likelihood ratios are taken to the nominal probabilities it was built with. Keep them "
                "fixed, or pass the changed env to model.set_env to start a sampler for its probabilities"
            )
        names = len(self._noise.names)
        self._noise_counts = np.zeros((self.n_episodes, names, 2))
        self._noise_running = np.zeros((env.num_envs, names, 2))
        self._rollout_noise_probs = dict(self._noise.probs)
        for i in range(env.num_envs):
            env.env_method("set_noise_probs", self._noise.episode_probs(), indices=[i])

    def _end_noise(self, env: VecEnv) -> None:
        """At a rollout's end: every env draws its noise with its own probabilities again, so that the training env
        (``model.get_env()``, SB3's way to evaluate) does not go on drawing the sampler's ``q`` outside the
        rollouts. No-op without the sampler; the next rollout sets the sampler's probabilities again."""
        if getattr(self, "_noise_counts", None) is not None:
            env.env_method("set_noise_probs", None)

    def _count_noise(self, env: VecEnv, infos: list[dict[str, Any]], dones: np.ndarray, pending: np.ndarray) -> None:
        """Add one vectorized step's noise reports to each env's episode; an episode that ended is stored under its
        buffer index (``pending``, before the step is added) and the env draws the probabilities of its next one."""
        sampler, running, counts = self._noise, self._noise_running, self._noise_counts
        assert sampler is not None and counts is not None  # counted only with the sampler on (_start_noise)
        names = getattr(sampler, "events", None)  # absent from samplers saved before the check
        for i, info in enumerate(infos):
            report = info.get(NOISE_INFO_KEY)
            if report is None:
                continue
            for name, (draws, events) in check_noise_report(report, names).items():
                if name in sampler.names:
                    running[i, sampler.names.index(name)] += (draws, events)
        for ended in np.flatnonzero(dones):
            if pending[ended] >= 0:
                counts[pending[ended]] = running[ended]
            running[ended] = 0.0
            env.env_method("set_noise_probs", sampler.episode_probs(), indices=[int(ended)])

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
    def _policy_step(self, obs: Any, env: VecEnv) -> tuple[th.Tensor, th.Tensor, dict[str, np.ndarray]]:
        """The policy's actions in the envs' current observations and their log-likelihoods, from ``self.policy(obs)``
        as SB3's collection acts where a hook or the policy's class could tell (so forward hooks on the policy fire
        once per step, as in SB3; the values it returns are not used), else the same actions from the actor alone
        (:func:`~ordergrad_rl.agents.common.policies.act_without_critic`); and per-env arrays the buffer stores with
        the step (hook: sb3-contrib's algorithms add action masks, or carry LSTM states).

        :param obs: ``[n_envs, ...]`` observation tensor (or a dict of such).
        :param env: the training VecEnv.
        :return: actions ``[n_envs, *action_shape]``, log-likelihoods ``[n_envs]``, the arrays to store.
        """
        return (*self._act(obs), {})

    def _act(self, obs: Any, **policy_kwargs: Any) -> tuple[th.Tensor, th.Tensor]:
        """Actions ``[n_envs, *action_shape]`` and log-likelihoods ``[n_envs]``: ``self.policy(obs, **policy_kwargs)``
        where something observes it (:func:`~ordergrad_rl.agents.common.policies.forward_observed`, read at the
        rollout's start), else the same draws from the actor alone (``policy_kwargs``: sb3-contrib's
        ``action_masks``)."""
        if getattr(self, "_forward_observed", True):
            actions, _, log_probs = self.policy(obs, **policy_kwargs)
            return actions, log_probs
        return act_without_critic(self.policy, obs, **policy_kwargs)

    def _step_locals(self) -> dict[str, Any]:
        """What a step's callbacks see in ``self.locals`` besides the collector's variables and the arrays stored
        with the step, read after the env step (hook: the LSTM states of sb3-contrib's recurrent collection). Not
        stored in the buffer."""
        return {}

    def _channel_values(
        self, episode_returns: np.ndarray, channels: dict[str, np.ndarray] | None
    ) -> dict[str, np.ndarray]:
        """Every channel's ``[N]`` episode values, shaped ``[n_groups, G]`` with groups (``[N]`` without)."""
        return channel_values(episode_returns, channels, self._info_channels, self.group_size)

    def episode_weights(self, episode_returns: np.ndarray, channels: dict[str, np.ndarray] | None = None) -> np.ndarray:
        """Per-episode policy-gradient weights ``w_i = k * a_i`` of this model's objective, groups and
        ``normalize_advantage`` (:func:`~ordergrad_rl.agents.common.advantages.episode_weights`; ``"running"``: over
        the running scale of the last rollout).

        :param episode_returns: ``[N]`` returns of one rollout.
        :param channels: ``{name: [N]}`` episode sums of the objective's info channels.
        :return: ``[N]`` float64 weights.
        """
        values = self._channel_values(episode_returns, channels)
        gcvar_alpha = getattr(self, "gcvar_alpha", None)  # absent from models saved before GCVaR existed
        weights = _episode_weights(self.objective, values, self.normalize_advantage, gcvar_alpha)
        if self.normalize_advantage == RUNNING and getattr(self, "_weight_square", None) is not None:
            weights = weights / self._running_scale()  # the scale the last rollout was trained with
        return weights

    def _compute_advantages(self) -> None:
        """Fill ``rollout_buffer.advantages`` once the rollout is finalized
        (:func:`~ordergrad_rl.agents.common.advantages.compute_episodic_advantages`), with the objective in force
        (``risk_schedule``) moved past a tied lower tail of this rollout's returns, or of each group's own
        (``untie_tail``, :meth:`_untie`)."""
        buffer = self.rollout_buffer
        in_force, level = self._risk_in_force()
        objective, gcvar_alpha = self._untie(in_force, level) if self.untie_tail else (in_force, level)
        self._rollout_risk = (objective, gcvar_alpha)
        counts = getattr(self, "_noise_counts", None)
        weights = None if counts is None else self._noise.weights(counts)  # type: ignore[union-attr]
        self._rollout_noise_weights = weights
        running = self.normalize_advantage == RUNNING
        buffer.advantages = compute_episodic_advantages(
            objective,
            buffer.episode_returns,
            buffer.episode_index,
            buffer.episode_channels,
            group_size=self.group_size,
            normalize=False if running else self.normalize_advantage,
            gcvar_alpha=gcvar_alpha,
            reward_to_go=self.reward_to_go,
            rewards=buffer.rewards,
            episode_step=buffer.episode_step,
            gamma=self.gamma,
            importance_weights=weights,
        )
        if weights is not None:
            self._noise.update(buffer.episode_returns, weights, counts, self._noise_level())  # type: ignore[union-attr, arg-type]
        if running:
            self._update_running_scale(buffer.advantages, buffer.episode_index)
            buffer.advantages = buffer.advantages / self._running_scale()
        # A rollout that ranks nothing: tied at the best seen (tied_at_best), so every weight is zero. Not "every
        # weight zero" alone: a tail of tied outcomes (lava dives) zeroes the CVaR weights too, and there the bonus
        # is what keeps unrewarded moves alive.
        returns = buffer.episode_returns
        seen = getattr(self, "_returns_seen", None)  # (lowest, highest) episode return of the earlier rollouts
        self._rollout_blind = bool(np.all(returns == returns[0])) and (seen is None or seen[0] == seen[1] == returns[0])
        self._rollout_tied_share = share_tied_at_best(returns, seen)
        self._rollout_tied_at_best = self._rollout_tied_share == 1.0 and not np.any(buffer.advantages)
        low, high = float(np.min(returns)), float(np.max(returns))
        self._returns_seen = (low, high) if seen is None else (min(seen[0], low), max(seen[1], high))

    def _group_ties(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """``(returns, time_outs)`` of each group's episodes in the rollout (one pair, every episode, without
        groups): what :func:`~.risk_schedules.untie_case` reads."""
        buffer = self.rollout_buffer
        shape = (1, -1) if self.group_size is None else (-1, self.group_size)
        returns, time_outs = np.reshape(buffer.episode_returns, shape), np.reshape(buffer.episode_time_outs, shape)
        return list(zip(returns, time_outs, strict=True))

    def _untie(
        self, objective: Objective | ChannelObjective, gcvar_alpha: float | None
    ) -> tuple[Objectives, GCVaRLevels]:
        """``(objective, gcvar_alpha)`` moved past a tied lower tail of the rollout's returns
        (:func:`~.risk_schedules.untie_case`, :func:`~.risk_schedules.untied_at`). With ``group_size`` each group is
        untied by its own returns, since a group's objective is its own: a tie in one group neither moves the level
        of the others nor is hidden by them; where the groups end at different objectives, one of each per group
        (:func:`~ordergrad_rl.agents.common.advantages.episode_weights`). Keeps each group's tie and floor for the
        logs (:meth:`_record_rollout_logs`)."""
        groups = self._group_ties()
        self._rollout_floors = [self._at_floor(returns) for returns, _ in groups]
        self._rollout_untie_cases = [
            untie_case(objective, gcvar_alpha, *ties, self.untie_at_var, floor)
            for ties, floor in zip(groups, self._rollout_floors, strict=True)
        ]
        risks = [
            untied_at(case, objective, gcvar_alpha, *ties, floor)
            for case, ties, floor in zip(self._rollout_untie_cases, groups, self._rollout_floors, strict=True)
        ]
        if all(risk == risks[0] for risk in risks):
            return risks[0]
        return tuple(risk[0] for risk in risks), tuple(risk[1] for risk in risks)

    def _at_floor(self, returns: np.ndarray | None = None) -> bool:
        """Whether the lowest of ``returns`` (a group's; by default the rollout's) is the lowest return seen in
        training, this rollout's included (``untie_terminated``): terminated episodes tied there then count as a
        tied tail (:func:`~.risk_schedules.untie_case`)."""
        if not getattr(self, "untie_terminated", False):
            return False
        rollout = self.rollout_buffer.episode_returns
        lowest = float(np.min(rollout))
        seen = getattr(self, "_returns_seen", None)  # of the earlier rollouts
        if seen is not None:
            lowest = min(seen[0], lowest)
        return float(np.min(rollout if returns is None else returns)) <= lowest

    def _explore_if_blind(self) -> None:
        """A rollout blind to success (every return the same, and no other return seen in training: every Acrobot-v1
        episode timed out at -500 so far) ranks nothing, so its gradient estimate is zero and, but for the entropy
        bonus and a per-step baseline's noise, the policy does not move. Such a rollout gets other episode weights
        (the same weight on every step of an episode; no baseline), standardized to mean 0 and std 1 over the
        rollout:

        - ``novelty_when_blind``: the episodes' novelty (:mod:`~ordergrad_rl.agents.common.novelty`: how far their
          states went from the rollout's average state), a step towards the behaviours that reach new states. The
          uniform policy a run starts from dithers (Acrobot-v1 swings up in 2% of its episodes, a random policy
          linear in the observation at about the same entropy in 27%); on one seed that never swung up in 100k
          steps, held blind by a wrapper, the sampled policy swung up in 48% of episodes after one such rollout and
          96% after two, at entropy 1.07 of 1.10 (0-6% after each of four rollouts without it). Chance first: the
          rollouts stay as they are until :attr:`blind_patience_episodes` blind episodes have been trained (a count
          saved with the model, so a resumed run waits as an uninterrupted one would). ``train/blind_novelty`` logs
          1 on a rollout it acts on, else 0.
        - ``drift_when_blind``: random weights, standard normal, a random step in policy space, zero in expectation
          like the estimate it replaces. It measured worse on Acrobot-v1 (OrderGradPPO's ``drift_when_blind``):
          steps of random directions move the policy little (entropy 1.099 -> 1.02 over 13 blind rollouts on one
          seed). The draws are a function of ``seed`` (or the last :meth:`set_random_seed`'s) and
          ``num_timesteps``, so a resumed run draws what an uninterrupted one would. ``train/blind_drift`` logs 1 on
          such a rollout, else 0.

        Where every episode is as novel as the others (observations constant over the rollout) the novelty ranks
        nothing either, and the rollout keeps the advantages it had. Either weight is a function of the rollout (and
        the seed). With ``group_size`` a group is blind exactly when the whole rollout is (another group's return is
        a return seen in training), so the rule reads the rollout.
        """
        novelty = getattr(self, "novelty_when_blind", False)  # absent from saves before it
        drift = getattr(self, "drift_when_blind", False)
        if not (novelty or drift):
            return
        acts = getattr(self, "_rollout_blind", False)
        if acts and novelty:  # chance first: the blind episodes trained before this rollout (absent from older saves)
            waited = getattr(self, "_blind_episodes", 0)
            self._blind_episodes = waited + self.n_episodes
            acts = waited >= self.blind_patience_episodes
        self.logger.record("train/blind_novelty" if novelty else "train/blind_drift", float(acts))
        if not acts:
            return
        if novelty:
            self._train_on_novelty()
            return
        seed = getattr(self, "_drift_seed", getattr(self, "seed", None))  # set_random_seed's, else the constructor's
        rng = np.random.default_rng(None if seed is None else (seed, self.num_timesteps))
        weights = rng.standard_normal(self.n_episodes)
        weights = (weights - weights.mean()) / (weights.std() + 1e-8)
        buffer = self.rollout_buffer
        buffer.advantages = weights[buffer.episode_index].astype(np.float32)

    def _update_entropy_plateau(self) -> None:
        """``entropy_plateau``: the bonus's scale after this rollout (the test of its returns against the rollouts'
        before, :class:`~ordergrad_rl.agents.common.entropy_plateau.EntropyPlateau`), which
        :meth:`_ent_coef_in_force` applies; the update logs it (:meth:`_record_ent_coef`)."""
        plateau = getattr(self, "entropy_plateau", None)  # absent from saves before it
        if plateau is None:
            return
        blind = getattr(self, "_rollout_blind", False)
        total = getattr(self, "_total_timesteps", self.num_timesteps)
        plateau.update(self.rollout_buffer.episode_returns, blind, self.num_timesteps, total)

    def _record_ent_coef(self, ent_coef: float) -> None:
        """Log the update's entropy coefficient ``ent_coef`` (``train/ent_coef``) and, with ``entropy_plateau``, the
        scale in it (``train/entropy_scale``), from the update, so that both land in the row of its other ``train/*``
        values (SB3 dumps the logs between a rollout and its update: a value recorded with the rollout would land in
        the row before)."""
        self.logger.record("train/ent_coef", ent_coef)
        plateau = getattr(self, "entropy_plateau", None)  # absent from saves before it
        if plateau is not None:
            self.logger.record("train/entropy_scale", plateau.scale)

    def _explore_in_novelty_phase(self) -> None:
        """``novelty_phase``: while the env steps taken are under that share of training's total (the progress the
        risk schedule reads, so a ``learn(..., reset_num_timesteps=False)`` goes on where the phase was), each
        rollout trains on its episodes' standardized novelty (:meth:`_train_on_novelty`) instead of its advantages,
        whatever they rank. ``train/novelty_phase`` logs 1 on such a rollout, else 0 (not logged without a phase).

        Why: a tail objective from scratch learns from its worst episodes what to avoid, and where every early
        episode fails (the point navigation's time-outs at the wall beside the risky gap) it can settle before any
        episode has seen the goal. Directed exploration first (Lehman and Stanley's novelty search) spreads the
        policy's states over the task before the objective ranks them. Measured in docs/benchmarks.md ("The novelty
        phase as an option").
        """
        phase = getattr(self, "novelty_phase", 0.0)  # absent from saves before it
        if not phase:
            return
        total = getattr(self, "_total_timesteps", 0)
        acts = total > 0 and self.num_timesteps < phase * total
        self.logger.record("train/novelty_phase", float(acts))
        if acts:
            self._train_on_novelty()

    def _train_on_novelty(self) -> None:
        """Replace the rollout's advantages with its episodes' standardized novelty
        (:mod:`~ordergrad_rl.agents.common.novelty`), the same weight on every step of an episode; where every
        episode is as novel as the others (observations constant over the rollout) nothing ranks, and the rollout
        keeps the advantages it had (a per-step baseline's terms)."""
        buffer = self.rollout_buffer
        space = self.observation_space
        normalize_images = self.policy.normalize_images  # as the policy sees them
        novelty = episode_novelty(buffer.observations, space, buffer.episode_index, self.n_episodes, normalize_images)
        weights = novelty_weights(novelty)
        if np.any(weights):
            buffer.advantages = weights[buffer.episode_index].astype(np.float32)

    def _update_running_scale(self, advantages: np.ndarray, episode_index: np.ndarray) -> None:
        """``normalize_advantage="running"``: add this rollout's unscaled episode weights (``[T]`` per step) to the
        running mean square ``_weight_square`` (:data:`RUNNING_DECAY`; the first rollout starts it)."""
        weights = np.zeros(self.n_episodes)
        weights[episode_index] = advantages  # every step of an episode has the episode's weight
        square = float(np.mean(weights**2))
        before = getattr(self, "_weight_square", None)
        self._weight_square = square if before is None else RUNNING_DECAY * before + (1.0 - RUNNING_DECAY) * square

    def _running_scale(self) -> float:
        """The divisor of ``normalize_advantage="running"``: the root of the running mean square (+1e-8)."""
        return float(np.sqrt(self._weight_square) + 1e-8)

    def _setup_learn(self, total_timesteps: int, *args: Any, **kwargs: Any) -> tuple[int, BaseCallback]:
        self._size_for_learn(total_timesteps)  # done already in learn; here too for loops that call _setup_learn
        self._rollouts_this_learn = 0
        self._rollout_outgrown = False
        setup = super()._setup_learn(total_timesteps, *args, **kwargs)
        # SB3 zeroes num_timesteps unless reset_num_timesteps=False: a call that goes on from earlier steps is a
        # piece of a longer run (training in pieces, a resumed interruption), whose own budget says nothing about the
        # run's, so the budget warnings (_warn_rollout_outgrown, _warn_after_first_rollout) are told at the first call
        # only, not at every piece of a learn(1) loop.
        self._learn_continues = self.num_timesteps > 0
        return setup

    def _size_for_learn(self, total_timesteps: int) -> None:
        if getattr(self, "n_episodes_by_budget", False) and total_timesteps > 0:  # learn(0) trains nothing to size
            self._size_rollout_by_budget(total_timesteps)

    def budget_rollout(self, total_timesteps: int) -> tuple[int, Objective | ChannelObjective]:
        """The episodes per rollout and the objective that ``learn(total_timesteps)`` trains with: where the rollout
        size waits for the first ``learn`` call's budget (``n_episodes_by_budget``),
        :func:`~.arguments.budget_n_episodes` of ``total_timesteps`` and, for a smaller size, the objective's default
        ``k`` rebound to ``n_episodes // 2``; else ``n_episodes`` and ``objective`` as they are. Changes nothing."""
        if not getattr(self, "n_episodes_by_budget", False):
            return self.n_episodes, self.objective
        limit = episode_limit(self.env)
        n_episodes = budget_n_episodes(self.n_episodes, total_timesteps, limit, self.n_envs)
        if n_episodes == self.n_episodes:
            return n_episodes, self.objective
        return n_episodes, self.objective.bind(n_episodes // 2)  # type: ignore[union-attr]

    def _size_rollout_by_budget(self, total_timesteps: int) -> None:
        """At the first ``learn`` call with steps to take (``learn(0)``, which SB3 users call to set up the logger
        and callbacks, decides nothing) of a model whose rollout size waits for the budget (``n_episodes_by_budget``):
        the size of :meth:`budget_rollout`; a smaller size rebinds the objective's default ``k``, sets a default
        minibatch to the size's (:func:`~.arguments.default_batch_size`: 256 episodes had 256-step minibatches, 64
        have 64) and rebuilds the rollout buffer (the policy is untouched). Decided once: later calls, and saves, keep
        the size."""
        n_episodes, objective = self.budget_rollout(total_timesteps)
        self.n_episodes_by_budget = False
        if n_episodes == self.n_episodes:
            return
        self._set_objective(objective)
        self.n_episodes = n_episodes
        self.n_steps = -(-n_episodes // self.n_envs)
        if getattr(self, "batch_size_by_budget", False):
            self.batch_size = default_batch_size(n_episodes)
        self._build_episodic_buffer()

    def _build_episodic_buffer(self, **kwargs: Any) -> None:
        """(Re)build ``rollout_buffer`` for the current ``n_episodes`` and ``n_steps``, as SB3's ``_setup_model``
        builds it, with the episodic options (:meth:`_episodic_buffer_kwargs`) and the class's own ``kwargs``."""
        self.rollout_buffer = self.rollout_buffer_class(  # type: ignore[misc]
            self.n_steps,
            self.observation_space,
            self.action_space,
            device=self.device,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            n_envs=self.n_envs,
            **kwargs,
            **self._episodic_buffer_kwargs(),
        )

    def _outgrown_rollout_at(self) -> float:
        """The ``num_timesteps`` at which the rollout starting now has outgrown its ``learn`` call's budget
        (:data:`OUTGROWN_ROLLOUT_STEPS`): the first rollout of the call only, ``inf`` for the others."""
        if getattr(self, "_rollouts_this_learn", 0) != 0 or getattr(self, "_learn_continues", False):
            return np.inf
        left = getattr(self, "_total_timesteps", 0) - self.num_timesteps
        return self.num_timesteps + max(left, OUTGROWN_ROLLOUT_STEPS)

    def _endless_rollout_at(self, outgrown_at: float) -> float:
        """The ``num_timesteps`` at which the rollout starting now, the first of its ``learn`` call, on an env without a
        time limit, is told that none of its episodes has ended (:data:`OUTGROWN_ROLLOUT_STEPS` in): an endless env,
        which a large budget would otherwise leave silent until ``EndlessEpisodeError`` at 100,000 steps (minutes on
        a slow env). ``inf`` otherwise: an env with a limit ends its episodes, and long episodes that end are the
        budget warning's.

        :param outgrown_at: the rollout's :meth:`_outgrown_rollout_at` (``inf``: not the first rollout of the call).
        """
        if outgrown_at == np.inf or episode_limit(self.env) is not None:
            return np.inf
        return self.num_timesteps + OUTGROWN_ROLLOUT_STEPS

    def _warn_rollout_outgrown(self, buffer: EpisodicRolloutBuffer, rollout_start: int) -> None:
        """Warn, while the first rollout (begun at ``num_timesteps == rollout_start``) is still collecting, that it
        has outgrown the budget: how many of its episodes have ended, how long they were, and the fix (a
        ``TimeLimit`` where the env has none)."""
        self._rollout_outgrown = True
        steps, left = self.num_timesteps - rollout_start, getattr(self, "_total_timesteps", 0) - rollout_start
        ended, ended_steps = buffer.ended_episodes
        pace = (
            f"; they lasted {ended_steps / ended:,.0f} steps on average, so the rollout will take about "
            f"{self.n_episodes * ended_steps / ended:,.0f} steps"
            if ended
            else "; none has ended yet"
        )
        if episode_limit(self.env) is None:
            fix = (
                "the env has no time limit: give it one (gymnasium.wrappers.TimeLimit(env, max_episode_steps=...)) "
                f"or {self._shorter_rollout()}"
            )
        else:
            fix = f"{self._shorter_rollout()} or raise total_timesteps"
        warnings.warn(
            f"{type(self).__name__}: the first rollout has taken {steps:,} env steps (total_timesteps left "
            f"{left:,} to this learn call), and {ended} of its {self.n_episodes} episodes have ended{pace}. "
            f"A rollout lasts until all {self.n_episodes} episodes end: {fix}",
            UserWarning,
            stacklevel=user_stacklevel(),
        )

    def _shorter_rollout(self) -> str:
        """How the budget warnings tell the user to make a rollout take fewer env steps: fewer episodes while there are
        more episodes than envs; else fewer envs, since every env steps until the rollout's last episode ends, so that
        a rollout of ``n_episodes <= n_envs`` episodes of equal length takes ``n_envs`` times that length whatever
        ``n_episodes`` is (64 CartPole-v1 envs for 16 or for 32 episodes)."""
        if self.n_envs < self.n_episodes:
            return "lower n_episodes (k < n_episodes)"
        return (
            f"use fewer envs (all {self.n_envs} step until the rollout's last episode ends: fewer episodes would not "
            "shorten it)"
        )

    def _warn_after_first_rollout(self, buffer: EpisodicRolloutBuffer, taken: int) -> None:
        """After the first rollout of a ``learn`` call (not in a call that goes on from earlier steps:
        ``_setup_learn``): warn if more envs step than the rollout keeps episodes of (the envs beyond the first
        ``n_episodes`` start no kept episode, and their steps count in ``num_timesteps``), and if the ``taken`` env
        steps it took (every env's) leave fewer than :data:`FEW_UPDATES` updates in the budget."""
        self._rollouts_this_learn = getattr(self, "_rollouts_this_learn", 0) + 1
        # A piece of a longer run (_learn_continues, _setup_learn) was told at its first call.
        if self._rollouts_this_learn != 1 or getattr(self, "_learn_continues", False):
            return
        stored = int(buffer.episode_lengths.sum())
        if self.n_envs > self.n_episodes:
            idle = self.n_envs - self.n_episodes
            warnings.warn(
                f"{type(self).__name__}: n_envs={self.n_envs} for n_episodes={self.n_episodes}: a rollout keeps the "
                f"first episode of each of the first {self.n_episodes} envs, so the other {idle} envs store no step, "
                f"while num_timesteps counts theirs ({1 - stored / max(taken, 1):.0%} of the first rollout's {taken} "
                "env steps went unstored): pass n_episodes >= n_envs or use fewer envs",
                UserWarning,
                stacklevel=user_stacklevel(),
            )
        if getattr(self, "_rollout_outgrown", False):  # told while the rollout ran
            return
        steps = max(1, taken, stored)
        budget = getattr(self, "_total_timesteps", 0) - self.num_timesteps + steps
        # SB3's learn collects rollouts while num_timesteps < total_timesteps, the last one whole: a budget of 4.9
        # such rollouts trains 5 times (it said "about 4.9 updates (fewer than 5)" of the README's TargetSum-v0
        # command, whose 20,000 steps train 5 rollouts of 4,096). The first rollout is always trained on.
        updates = max(1, -(-budget // steps))
        if budget > 0 and updates < FEW_UPDATES:
            unstored = steps - stored
            more = (
                f"; {unstored} of them ({unstored / steps:.0%}) unstored, by envs outside a kept episode: "
                f"n_envs={self.n_envs} for n_episodes={self.n_episodes}, and fewer envs waste fewer"
                if unstored
                else ""
            )
            warnings.warn(
                f"{type(self).__name__}: the first rollout took {steps} env steps ({self.n_episodes} episodes of "
                f"{buffer.episode_lengths.mean():.0f} steps on average{more}), so total_timesteps leaves about "
                f"{updates} update{'s' if updates != 1 else ''} (fewer than {FEW_UPDATES}): "
                f"{self._shorter_rollout()} or raise total_timesteps",
                UserWarning,
                stacklevel=user_stacklevel(),
            )

    # ------------------------------------------------------------------ soft risk
    def _update_risk(self) -> None:
        """Set the objective in force for the coming rollout from ``risk_schedule`` and the progress of training
        (``progress_remaining = 1 - num_timesteps / total``, so a ``learn(..., reset_num_timesteps=False)`` goes on
        where the schedule was)."""
        schedule: RiskSchedule | None = getattr(self, "risk_schedule", None)  # absent from saves before 0.2
        gcvar_alpha = getattr(self, "gcvar_alpha", None)  # absent from models saved before GCVaR existed
        if schedule is None:
            self._objective_in_force, self._gcvar_in_force, self._risk_share = self.objective, gcvar_alpha, 1.0
            return
        total = getattr(self, "_total_timesteps", 0)
        progress_remaining = 1.0 - self.num_timesteps / total if total > 0 else 1.0
        share = schedule.share(min(1.0, max(0.0, progress_remaining)))
        # Built afresh for every rollout (family objectives are cached): the target may have been replaced (load).
        self._objective_in_force, self._gcvar_in_force = objective_in_force(
            self.objective, schedule, share, gcvar_alpha
        )
        self._risk_share = share

    def hparams(self) -> dict[str, Any]:
        values = super().hparams()
        schedule = getattr(self, "risk_schedule", None)
        values["risk_schedule"] = "none" if schedule is None else str(schedule)
        values["untie_tail"] = self.untie_tail
        values["entropy_when_tied"] = self.entropy_when_tied
        values["noise_sampler"] = getattr(self, "noise_sampler", False)  # on by default where the env exposes noise
        values["novelty_phase"] = getattr(self, "novelty_phase", 0.0)
        values["entropy_plateau"] = str(getattr(self, "entropy_plateau", None) or "none")
        return values

    def _ent_coef_in_force(self) -> float:
        """The entropy coefficient of this rollout's update: ``ent_coef`` (a schedule's value at SB3's
        ``_current_progress_remaining``, as the learning rate's), or 0.0 where ``entropy_when_tied`` is off
        and the rollout's returns all tie at the best return of training so far, some earlier episode having done
        worse (every weight is then zero: nothing is ranked). On long episodes (``entropy_by_untied_share``, the
        long-episode defaults' rule) a rollout of which a share ``s`` ties at the best that way gets ``(1 - s)``
        times the coefficient. With ``relative_ent_coef`` (OrderGradPPO) the coefficient is first multiplied by
        the rollout's advantage scale (:meth:`_advantage_scale`), so that it weighs against the policy gradient as
        SB3's does against its unit-scale advantages. With ``entropy_plateau`` it is then multiplied by the scale
        the returns' plateaus have left (:meth:`_update_entropy_plateau`).

        The bonus is there against the tail's gradient, which drives an unrewarded move's probability to zero
        (exploration collapse, :data:`~ordergrad_rl.agents.common.arguments.RANKED_ENT_COEF`). A rollout tied at the
        top has no tail gradient, and the bonus alone would be the whole policy update: on CartPole-v1, once every
        episode reaches the 500-step limit, it flattened the converged policy until failures came back. A rollout
        tied at the bottom (every Acrobot-v1 episode at -500, nothing better seen yet) keeps it: there the bonus is
        all that explores (without it seed 4 never left -500 in 100k steps; with it, -123.4).

        Why the share: where 31 of 32 episodes reach the limit, the tail's gradient comes from one episode and the
        full bonus, on every step of all 32, still holds the solved policy stochastic (CartPole-v1 at 300k steps:
        entropy 0.55 nats of a uniform policy's 0.69, sampled worst-20% mean 466.4 against SB3 PPO's 500). See
        :func:`~ordergrad_rl.agents.common.risk_schedules.share_tied_at_best` and ``reproduce benchmarks``
        (docs/benchmarks.md, "The entropy bonus on rollouts partly tied at the best").
        """
        coef = self.ent_coef
        coef = float(coef(self._current_progress_remaining) if callable(coef) else coef)
        plateau = getattr(self, "entropy_plateau", None)  # absent from other algorithms and from saves before it
        if plateau is not None:
            coef *= plateau.scale
        if getattr(self, "relative_ent_coef", False):  # absent from other algorithms and from saves before it
            coef *= self._advantage_scale()
        if self.entropy_when_tied:
            return coef
        if getattr(self, "_rollout_tied_at_best", False):
            return 0.0
        if getattr(self, "entropy_by_untied_share", False):
            return coef * (1.0 - getattr(self, "_rollout_tied_share", 0.0))
        return coef

    def _advantage_scale(self) -> float:
        """The root mean square of this rollout's per-step advantages (``relative_ent_coef``), or 1.0 where every
        episode weight is zero (nothing is ranked: the bonus keeps its unit-scale size, as where it is all that
        explores)."""
        buffer = self.rollout_buffer
        if not np.any(rollout_episode_weights(buffer, getattr(self, "value_baseline", False))):
            return 1.0
        return root_mean_square(buffer.advantages)

    def _risk_in_force(self) -> tuple[Objective | ChannelObjective, float | None]:
        """``(objective, gcvar_alpha)`` of the current rollout (the target's before the first rollout)."""
        if getattr(self, "_objective_in_force", None) is None:
            self._update_risk()
        return self._objective_in_force, self._gcvar_in_force

    def _record_rollout_logs(self) -> None:
        """``risk/*`` of the rollout's episode returns and ``risk/objective`` (the batch value ``v^alpha``, averaged
        over the groups); with info channels, ``risk/<channel>/*`` of their episode sums and
        ``risk/<channel>/objective`` of every channel (``risk/objective`` is then the weighted sum). A rollout
        drawn by the noise sampler is weighed by its likelihood ratios, so that these describe the policy's own
        returns, not the sampler's draws (``risk/objective`` is then the plug-in value of the weighted batch)."""
        buffer = self.rollout_buffer
        logger = self.logger
        weights = getattr(self, "_rollout_noise_weights", None)
        record_risk_profile(logger, TRAIN_PREFIX, buffer.episode_returns, weights)
        scheduled = getattr(self, "risk_schedule", None) is not None
        untie = self.untie_tail and can_untie(self.objective, getattr(self, "gcvar_alpha", None))
        if scheduled:
            # The share of the target's risk in force (0: the mean, 1: the target).
            logger.record(f"{TRAIN_PREFIX}/schedule", self._risk_share)
        if untie:
            # With groups, each group's tie (_untie): the share of the episodes tied at their group's lowest return.
            groups = self._group_ties()
            floors = getattr(self, "_rollout_floors", None) or [False] * len(groups)
            tied = [tied_share(*ties, floor) for ties, floor in zip(groups, floors, strict=True)]
            logger.record(f"{TRAIN_PREFIX}/tied", float(np.mean(tied)))
            # 1 where time-outs tied at the value at risk made the rollout train the mean share's mixture (with
            # groups: the share of the groups that did).
            cases = getattr(self, "_rollout_untie_cases", None) or [None]
            logger.record(f"{TRAIN_PREFIX}/tie_at_var", float(np.mean([case == TIE_AT_VAR for case in cases])))
        if weights is not None:
            for name, prob in self._rollout_noise_probs.items():
                record_scalar(logger, f"{TRAIN_PREFIX}/noise/{name}", prob)  # the sampler's q of this rollout
            # Kish's effective sample size of the weighted batch, as a share of the episodes.
            logger.record(f"{TRAIN_PREFIX}/noise_ess", float(weights.sum() ** 2 / (weights.size * (weights**2).sum())))
        if scheduled or untie:
            # The level this rollout was trained at (the schedule's, moved past a tied tail); with groups untied to
            # different objectives, the mean over the groups trained at a level (a mixture has none).
            objective, gcvar_alpha = getattr(self, "_rollout_risk", None) or self._risk_in_force()
            in_force = [level_in_force(*risk) for risk in group_risks(objective, gcvar_alpha, self.n_groups)]
            levels = [level for level in in_force if level is not None]
            if levels:
                logger.record(f"{TRAIN_PREFIX}/level", levels[0] if len(set(levels)) == 1 else float(np.mean(levels)))
        values = self._channel_values(buffer.episode_returns, buffer.episode_channels)
        if not isinstance(self.objective, ChannelObjective):
            if weights is None:
                value = float(np.mean(lstat_value(values[REWARD], self.objective)))
            else:  # the sampler pools one batch (no groups, no channels: noise_sampler_error)
                value = weighted_lstat_value(np.ravel(values[REWARD]), weights, self.objective)
            logger.record(f"{TRAIN_PREFIX}/objective", value)
            return
        total = 0.0
        for channel in self.objective.channels:
            if channel.name != REWARD:
                record_risk_profile(logger, f"{TRAIN_PREFIX}/{channel.name}", buffer.episode_channels[channel.name])
            value = float(np.mean(lstat_value(values[channel.name], channel.objective)))
            record_scalar(logger, f"{TRAIN_PREFIX}/{channel.name}/objective", value)
            total += channel.weight * value
        logger.record(f"{TRAIN_PREFIX}/objective", total)


def train_on_episode_weights(model: Any, update: Callable[[], None], critic: bool = False) -> None:
    """Run a PPO-family ``update`` (SB3's or sb3-contrib's ``train``) on the episodic advantages of ``model``.

    The update would centre and rescale each minibatch of steps; the weights are already normalized per episode
    (see ``episode_weights``), so its normalization is off for the duration of the update, and its entropy
    coefficient is the rollout's (:meth:`EpisodicAlgorithmMixin._ent_coef_in_force`, logged as ``train/ent_coef``).
    Without a ``critic`` (the value baseline) its critic logs (``train/value_loss`` ...) describe nothing and are
    dropped, and the update runs with ``vf_coef=0``: its value loss, a constant without a gradient there (zero values
    against the history baseline's targets), would otherwise be added to the logged ``train/loss``.
    """
    ent_coef = model._ent_coef_in_force()
    lent = {} if critic else {"vf_coef": 0.0}
    with lent_attributes(model, normalize_advantage=False, ent_coef=ent_coef, **lent):
        update()
    model._record_ent_coef(ent_coef)
    if not critic:
        for key in CRITIC_LOG_KEYS:
            pop_record(model.logger, key)
