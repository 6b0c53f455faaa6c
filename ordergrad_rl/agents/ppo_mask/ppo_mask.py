"""OrderGradMaskablePPO: sb3-contrib's MaskablePPO (invalid-action masks) on OrderGrad episode weights.

The episodic collection of :class:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin`, reading the env's
``action_masks()`` at every step, sampling from the masked distribution and storing the masks
(:class:`~ordergrad_rl.agents.ppo_mask.buffers.MaskableEpisodicRolloutBuffer`), which sb3-contrib's own ``train``
applies again (also to the critic's update of ``critic_when_tied``,
:mod:`~ordergrad_rl.agents.common.tied_critic`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal, TypeVar

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import MaybeCallback, Schedule
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.arguments import SHORT_RANKED_ENT_COEF, check_buffer_class, check_ppo_arguments
from ordergrad_rl.agents.common.env_util import AgentEnv, check_env_given
from ordergrad_rl.agents.common.episodic import EPISODIC_PPO_PARAMS
from ordergrad_rl.agents.common.risk_schedules import RiskScheduleLike
from ordergrad_rl.agents.common.sb3_compat import PPO_CRITIC_ARGUMENTS, tied_critic_argument_error
from ordergrad_rl.agents.common.tied_critic import TIED_CRITIC_GAE_LAMBDA, TIED_CRITIC_VF_COEF, TiedCriticMixin
from ordergrad_rl.agents.ppo_mask.buffers import ACTION_MASKS, MaskableEpisodicRolloutBuffer
from ordergrad_rl.agents.ppo_mask.policies import MASKABLE_POLICY_ALIASES, OrderGradMaskablePolicy
from ordergrad_rl.core.channels import AnyObjective

SelfOrderGradMaskablePPO = TypeVar("SelfOrderGradMaskablePPO", bound="OrderGradMaskablePPO")


def mask_width(action_space: spaces.Space) -> int:
    """The number of mask entries sb3-contrib's masked distributions take per env: one per action of a ``Discrete``
    space, one per choice of each ``MultiDiscrete`` dimension, two (0 and 1) per ``MultiBinary`` entry."""
    if isinstance(action_space, spaces.Discrete):
        return int(action_space.n)
    if isinstance(action_space, spaces.MultiDiscrete):
        return int(np.sum(action_space.nvec))
    if isinstance(action_space, spaces.MultiBinary):
        return 2 * int(np.prod(action_space.shape))
    raise ValueError(f"action masks need a Discrete, MultiDiscrete or MultiBinary action space, got {action_space}")


# ignore[misc]: the episodic mixin's normalize_advantage (also "group", "channel", "running") is wider than
# sb3-contrib's bool, which train_on_episode_weights lends its update, and its batch_size an int (PPO's type),
# sb3-contrib's int | None.
class OrderGradMaskablePPO(TiedCriticMixin, MaskablePPO):  # type: ignore[misc]
    """sb3-contrib's MaskablePPO (invalid-action masking) on OrderGrad episode weights of an order-statistic objective.

    Episodic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` for envs with a method ``action_masks()`` (``[n]``
    bool for ``Discrete(n)``; see sb3-contrib's ``ActionMasker`` wrapper): at every step the collector reads the masks,
    samples from the masked distribution (a masked action has probability 0) and stores the masks, and
    sb3-contrib's ``MaskablePPO.train`` evaluates the log-likelihoods under the same masks.
    ``learn(..., use_masking=False)`` is not offered (the mixin's ``learn``); ``predict(obs, action_masks=...)`` is
    sb3-contrib's. As OrderGradPPO's (since 2026-12-05), a default ranked rollout on an env with a time limit is
    halved for a small first ``learn`` budget (``n_episodes`` below), and a ranked objective of one pooled batch
    takes the history baseline (``value_baseline``).

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` (sb3-contrib's maskable policies with
        the OrderGrad options) or a subclass of :class:`~ordergrad_rl.agents.ppo_mask.policies.OrderGradMaskablePolicy`.
    :param env: env id, ``gym.Env`` or ``VecEnv`` whose envs have ``action_masks()`` and episodes that end.
    :param batch_size: steps per minibatch, default ``max(64, n_episodes)``.
    :param value_baseline: per-step credit for a ranked objective: ``"history"`` gives each step its episode's
        weight over the history baseline ``b(s_t, t, G_<t)``
        (:class:`~ordergrad_rl.agents.common.history_baseline.HistoryBaseline`, its own small network fitted to each
        rollout's weights after they are used, saved with the model; unbiased, see
        :class:`~ordergrad_rl.agents.OrderGradPPO`). ``True`` (the value head's ``V(s)``) is refused: this class
        fits no critic to the episode weights (the value head is ``critic_when_tied``'s). ``None`` (default since
        2026-12-05; whole-episode weights before): OrderGradPPO's, ``"history"`` for a ranked objective of one pooled
        batch
        (:func:`~ordergrad_rl.agents.common.arguments.default_value_baseline`). Measured (``reproduce benchmarks``,
        ``og-mask-cvar``, exact greedy CVaR_0.2, the same seeds): at 100k steps, with the rollouts halved for the
        budget (below), the lava grid 10 of 10 seeds at the CVaR optimum against 9 of 10 with neither and 6 of 10
        with the halved rollouts alone, the guarded maze 8 of 10 against 1 of 10 and 8 of 10 (greedy -9.72 against
        -36.23; sampled -11.93 against -36.66 and -16.24); at 300k steps: docs/benchmarks.md. A save from before
        it keeps whole-episode weights.
    :param baseline_lambda: with the history baseline, the ``lambda`` of the weight's lambda-returns over it (as
        OrderGradPPO's); default 0.95 with a baseline, ``1.0`` (``w - b_t``) gives the unbiased estimator.
    :param rollout_buffer_class: a subclass of
        :class:`~ordergrad_rl.agents.ppo_mask.buffers.MaskableEpisodicRolloutBuffer`.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer (``max_episode_steps``).
    :param policy_kwargs: keyword arguments of the policy.
    :param n_steps: MaskablePPO's rollout length, refused: a rollout is ``n_episodes`` episodes (the error names the
        ``n_episodes`` that gives about as many steps on the env).
    :param critic_when_tied: on a rollout whose episodes all return the best return seen (every weight of a ranked
        objective zero, so no gradient: every CartPole-v1 episode at its 500-step limit), train on the standardized
        GAE advantages of a discounted critic, the policy's value head fitted in every rollout's update under the
        steps' action masks; every other rollout trains as without it. OrderGradPPO's option
        (:mod:`~ordergrad_rl.agents.common.tied_critic`; its critic's ``gae_lambda`` and ``vf_coef`` are
        OrderGradPPO's defaults, 0.95 and 0.5). ``train/tied_critic`` logs 1 on the rollouts it trains,
        ``train/value_loss`` and ``train/explained_variance`` the critic. Default ``None``: OrderGradPPO's rule, on
        for a ranked objective (:func:`~ordergrad_rl.agents.common.arguments.default_critic_when_tied`); measured on
        CartPole-v1 at 100k steps, every action valid, seeds 0-19 (``scripts/measure_mask_tied_critic.py``, worst
        20% of 100 returns): even, sampled 478.4 against 480.4 without (paired -2.0 [-15.6, 6.7]), greedy 497.0
        against 498.0; on by the family's rule, as in OrderGradPPO, where it was measured to help.
        A save from before it loads with ``False``, as it trained.
    :param gae_lambda: refused: the ``critic_when_tied`` critic's is OrderGradPPO's default, 0.95.
    :param vf_coef: refused: the ``critic_when_tied`` critic's is OrderGradPPO's default, 0.5.
    :param clip_range_vf: refused (the ``critic_when_tied`` critic is not clipped).
    """

    __doc__ = (__doc__ or "") + EPISODIC_PPO_PARAMS
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = MASKABLE_POLICY_ALIASES
    # sb3-contrib's own policy classes have no critic="none" (they build and run the critic episodic mode never trains)
    episodic_policy_classes = (OrderGradMaskablePolicy,)
    # OrderGradPPO's held-then-decayed bonus on short categorical episodes: measured on this class too (lava 5 of 5
    # seeds at the optimum against 4, the maze 8 of 10 against 7; SHORT_RANKED_ENT_COEF).
    default_short_ranked_ent_coef = SHORT_RANKED_ENT_COEF
    # OrderGradPPO's rollouts halved for small budgets (budget_n_episodes), measured on this class with the history
    # baseline (value_baseline): at 100k steps lava 10 of 10 seeds at the optimum against 9, the maze 8 against 1.
    budget_sized_rollouts = True
    trains_critic = False
    # Without critic_when_tied sb3-contrib's update runs the value branch at vf_coef=0: zero gradients in the clip.
    critic_held_as_zeros = True
    critic_arguments = PPO_CRITIC_ARGUMENTS  # MaskablePPO's, refused (the tied critic's are OrderGradPPO's defaults)
    supported_action_spaces = (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)  # MaskablePPO's
    # sb3-contrib's maskable forward computes nothing but the actions, values and log-likelihoods: the collector may
    # act through the actor alone where nothing observes it.
    _plain_forwards = (MaskableActorCriticPolicy.forward,)
    rollout_buffer: MaskableEpisodicRolloutBuffer  # type: ignore[assignment]

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: AgentEnv | str,
        objective: AnyObjective = "cvar0.2",
        k: int | None = None,
        n_episodes: int | None = None,
        n_envs: int | None = None,
        learning_rate: float | Schedule = 3e-4,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float = 1.0,
        clip_range: float | Schedule = 0.2,
        normalize_advantage: bool | str | None = None,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        risk_schedule: RiskScheduleLike = None,
        untie_tail: bool = True,
        ent_coef: float | Schedule | None = None,
        entropy_when_tied: bool = False,
        noise_sampler: bool | None = None,
        value_baseline: bool | Literal["history"] | None = None,
        baseline_lambda: float | None = None,
        critic_when_tied: bool | None = None,
        max_grad_norm: float = 0.5,
        rollout_buffer_class: type[MaskableEpisodicRolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        n_steps: None = None,
        gae_lambda: None = None,
        vf_coef: None = None,
        clip_range_vf: None = None,
        _init_setup_model: bool = True,
    ) -> None:
        check_env_given(type(self).__name__, env, _init_setup_model)
        self._refuse_sb3_arguments(env, n_envs, n_steps, (gae_lambda, vf_coef, clip_range_vf))
        check_ppo_arguments(
            learning_rate, gamma, ent_coef, max_grad_norm, policy_kwargs, n_epochs, clip_range, target_kl
        )
        self._check_value_baseline(value_baseline)
        long, limit = self._init_episodic_algorithm(
            super().__init__, policy, env, objective, k, n_episodes, n_envs, seed, normalize_advantage, reward_to_go,
            group_size, risk_schedule=risk_schedule, untie_tail=untie_tail, entropy_when_tied=entropy_when_tied,
            noise_sampler=noise_sampler, long_episode_defaults=True, batch_size=batch_size,
            learning_rate=learning_rate, n_epochs=n_epochs,
            gamma=gamma, gae_lambda=TIED_CRITIC_GAE_LAMBDA, clip_range=clip_range, ent_coef=ent_coef,
            vf_coef=TIED_CRITIC_VF_COEF, max_grad_norm=max_grad_norm,
            rollout_buffer_class=check_buffer_class(rollout_buffer_class, MaskableEpisodicRolloutBuffer),
            rollout_buffer_kwargs=rollout_buffer_kwargs, target_kl=target_kl, stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log, policy_kwargs=policy_kwargs, verbose=verbose, device=device,
        )  # fmt: skip
        default = self._default_value_baseline(long, policy_kwargs, limit)
        self._init_value_baseline(value_baseline, baseline_lambda, default)
        self._init_critic_when_tied(critic_when_tied, policy_kwargs)
        self._use_masking = True
        if _init_setup_model:
            self._setup_model()

    @classmethod
    def critic_argument_error(cls, name: str) -> ValueError:
        return tied_critic_argument_error(cls.__name__, name)

    def _excluded_save_params(self) -> list[str]:
        excluded = [*super()._excluded_save_params(), "_use_masking"]
        # The class default is set again by the constructor load calls; left out, sb3-contrib's MaskablePPO.load of
        # the save builds its own masking buffer and trains (a saved episodic buffer failed its masking check).
        if self.rollout_buffer_class is MaskableEpisodicRolloutBuffer:
            excluded.append("rollout_buffer_class")
        return excluded

    def _default_at_load(self, replaced: Mapping[str, Any]) -> None:
        """... and the critic's ``gae_lambda`` and ``vf_coef``, which this class does not take: a save from before
        ``critic_when_tied`` holds 1 and 0, which a class without a critic passed SB3 (and nothing read), so that
        ``load(path, critic_when_tied=True)`` fits its critic as a new model would."""
        super()._default_at_load(replaced)
        self.gae_lambda, self.vf_coef = TIED_CRITIC_GAE_LAMBDA, TIED_CRITIC_VF_COEF

    def learn(  # type: ignore[override]
        self: SelfOrderGradMaskablePPO,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = 1,
        tb_log_name: str | None = None,
        reset_num_timesteps: bool = True,
        use_masking: bool = True,
        progress_bar: bool = False,
    ) -> SelfOrderGradMaskablePPO:
        """The OrderGrad ``learn`` (:meth:`~ordergrad_rl.agents.common.base_class.OrderGradAlgorithmMixin.learn`) with
        MaskablePPO's ``use_masking`` (in its place among the arguments): ``False`` trains without action masks."""
        return super().learn(
            total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar,
            use_masking=use_masking,
        )  # fmt: skip

    def collect_rollouts(  # type: ignore[override]
        self,
        env: VecEnv,
        callback: BaseCallback,
        rollout_buffer: MaskableEpisodicRolloutBuffer,
        n_rollout_steps: int,
        use_masking: bool = True,
    ) -> bool:
        """The mixin's episodic collection with masked actions (MaskablePPO's ``learn`` passes ``use_masking``).

        :raises ValueError: ``use_masking`` and an env without ``action_masks()``.
        """
        if use_masking and not is_masking_supported(env):
            raise ValueError(
                "OrderGradMaskablePPO needs envs with an action_masks() method (wrap the env in "
                "sb3_contrib.common.wrappers.ActionMasker(env, mask_fn))"
            )
        self._use_masking = use_masking
        return super().collect_rollouts(env, callback, rollout_buffer, n_rollout_steps)

    def _policy_step(self, obs: Any, env: VecEnv) -> tuple[th.Tensor, th.Tensor, dict[str, np.ndarray]]:
        """sb3-contrib's ``self.policy(obs, action_masks=masks)`` step (``masks`` ``None`` without masking): masked
        actions in the current observations, and the masks (stored with the step)."""
        masks = self._step_action_masks(env) if self._use_masking else None
        actions, log_probs = self._act(obs, action_masks=masks)
        return actions, log_probs, {} if masks is None else {ACTION_MASKS: masks}

    def _step_action_masks(self, env: VecEnv) -> np.ndarray:
        """The envs' ``action_masks()``, ``[n_envs, mask width]`` bools.

        :raises ValueError: masks of the wrong size, or an env whose ``Discrete`` mask allows no action.
        """
        masks = np.asarray(get_action_masks(env), dtype=bool)
        width = mask_width(self.action_space)
        if masks.size != env.num_envs * width:  # sb3-contrib's distribution failed on it in torch's reshape
            raise ValueError(
                f"the envs' action_masks() returned {masks.size} entries for {env.num_envs} envs at num_timesteps="
                f"{self.num_timesteps}: the action space {self.action_space} needs {width} per env"
            )
        masks = masks.reshape(env.num_envs, width)
        if self.action_space.shape == () and not masks.any(axis=1).all():  # Discrete: one row of n per env
            env_index = int(np.flatnonzero(~masks.any(axis=1))[0])
            raise ValueError(f"env {env_index}'s action_masks() allows no action at num_timesteps={self.num_timesteps}")
        return masks

    def train(self) -> None:
        """sb3-contrib's MaskablePPO update on the episode weights (see :func:`train_on_episode_weights`), which also
        fits the ``critic_when_tied`` critic under the steps' action masks."""
        self._train_on_weights(super().train)
