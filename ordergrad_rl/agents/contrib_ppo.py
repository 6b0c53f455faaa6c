"""sb3-contrib's PPO variants on OrderGrad episode weights: OrderGradRecurrentPPO (LSTM) and OrderGradMaskablePPO.

Both are the episodic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` on another PPO: the same mixin collects
``n_episodes`` complete i.i.d. episodes per rollout (:class:`~ordergrad_rl.agents.episodic.EpisodicAlgorithmMixin`),
turns their returns into OrderGrad weights, and sb3-contrib's own ``train`` runs the clipped-surrogate update on
them (advantage normalization per episode, no critic). What differs is supplied through the mixin's hooks:

* RecurrentPPO: the collector carries the LSTM state from step to step and resets it where an episode starts
  (sb3-contrib's ``episode_starts``); the buffer replays whole episodes from zero states
  (:class:`~ordergrad_rl.agents.contrib_buffers.RecurrentEpisodicRolloutBuffer`).
* MaskablePPO: the collector reads the env's ``action_masks()`` at every step, samples from the masked distribution
  and stores the masks, which the update applies again
  (:class:`~ordergrad_rl.agents.contrib_buffers.MaskableEpisodicRolloutBuffer`).
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

import numpy as np
import torch as th
from sb3_contrib import MaskablePPO, RecurrentPPO
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.distributions import Distribution
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv, Schedule
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.checks import check_common_arguments, check_int, check_schedule
from ordergrad_rl.agents.contrib_buffers import (
    ACTION_MASKS,
    MaskableEpisodicRolloutBuffer,
    RecurrentEpisodicRolloutBuffer,
)
from ordergrad_rl.agents.contrib_policies import MASKABLE_POLICY_ALIASES, RECURRENT_POLICY_ALIASES
from ordergrad_rl.agents.episodic import EpisodicAlgorithmMixin, build_env, episodic_sizes
from ordergrad_rl.agents.ppo import train_on_episode_weights
from ordergrad_rl.core.objectives import ObjectiveLike


def _episodic_ppo_arguments(
    objective: ObjectiveLike,
    k: int | None,
    n_episodes: int | None,
    batch_size: int | None,
    buffer_class: type | None,
    expected_buffer: type,
    group_size: int | None = None,
    **common: Any,
) -> tuple[int, int, type]:
    """Checked ``(n_episodes, batch_size, rollout_buffer_class)`` with OrderGradPPO's episodic defaults (see
    :func:`~ordergrad_rl.agents.episodic.default_n_episodes` and ``default_batch_size``).

    :param common: ``learning_rate, gamma, ent_coef, max_grad_norm, policy_kwargs, n_epochs, clip_range``.
    :raises ValueError: naming the first bad argument.
    """
    n_epochs, clip_range = common.pop("n_epochs"), common.pop("clip_range")
    check_common_arguments(**common)
    check_int("n_epochs", n_epochs, 1)
    check_schedule("clip_range", clip_range, minimum=1e-12)  # 0 would freeze the policy
    n_episodes, batch_size = episodic_sizes(objective, k, n_episodes, batch_size, group_size)
    if buffer_class is None:
        buffer_class = expected_buffer
    elif not (isinstance(buffer_class, type) and issubclass(buffer_class, expected_buffer)):
        raise ValueError(f"rollout_buffer_class must subclass {expected_buffer.__name__}, got {buffer_class!r}")
    return n_episodes, batch_size, buffer_class


_PARAMS = """
    :param objective: order-statistic objective spec (``"cvar0.2"``, ``"mean"``, ``"max@8"`` ...); ``model.objective``
        is the parsed, bound :class:`~ordergrad_rl.core.Objective`.
    :param k: order-statistic size if the spec has no ``@K`` (default ``n_episodes // 2``); ``mean`` has k = 1.
    :param n_episodes: episodes per rollout ``N`` (``k < N``; any number of envs). Default as
        OrderGradPPO: 16 for ``"mean"``, 256 (at least ``2 k``) for ranked objectives.
    :param n_envs: number of envs; ``None``: as OrderGradPPO (a native NumPy batch of ``n_episodes`` envs for the
        tail-risk ids, else 1 env from an id, env objects as they are).
    :param learning_rate: Adam learning rate (or schedule).
    :param n_epochs: passes over the rollout per update.
    :param gamma: discount of the episode return, 1.0 (undiscounted) by default.
    :param clip_range: surrogate clipping parameter (or schedule).
    :param normalize_advantage: divide the per-episode weights by their standard deviation (+1e-8), once per
        rollout (sb3-contrib's per-minibatch normalization is off).
    :param reward_to_go: mean objective: per-step reward-to-go advantages (default on for ``"mean"``, refused for ranked
        objectives), see :func:`~ordergrad_rl.agents.episodic.reward_to_go_advantages`.
    :param group_size: episodes per group sharing a start context (GRPO-style groups, see
        :class:`~ordergrad_rl.agents.OrderGradPPO`); ``None``: one pooled batch.
    :param ent_coef: entropy coefficient.
    :param max_grad_norm: gradient-norm clipping threshold.
    :param target_kl: early-stop an update when the approximate KL exceeds 1.5 x this.
    :param stats_window_size: episodes averaged by ``rollout/ep_rew_mean``.
    :param tensorboard_log: TensorBoard log dir (``risk/*`` of every rollout).
    :param verbose: 0 silent, 1 info, 2 debug.
    :param seed: random seed.
    :param device: torch device.
    :param _init_setup_model: build the networks at construction.
"""


class OrderGradRecurrentPPO(EpisodicAlgorithmMixin, RecurrentPPO):
    """sb3-contrib's RecurrentPPO (LSTM policies) on OrderGrad episode weights of an order-statistic objective.

    Episodic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` with a recurrent policy, for partially observed
    tasks: every rollout collects ``n_episodes`` complete episodes, the LSTM state carried across the steps of each
    env and reset wherever an episode starts (also where an env starts its next episode within the rollout).
    Episode ``i``'s return becomes the weight ``w_i = k * a_i`` on each of its steps, and sb3-contrib's
    ``RecurrentPPO.train`` runs the clipped-surrogate update with minibatches of *whole episodes* (about
    ``batch_size`` steps each, at least one episode) replayed from zero LSTM states, so at ratio 1 the gradient of a
    minibatch holding the whole rollout is ``(1/T) sum_t w_t grad log pi(a_t | h_t)``, as OrderGradPPO's. There is no
    critic: the policy has only the actor LSTM and ``train/value_loss`` is not logged.

    :param policy: ``"MlpLstmPolicy"``, ``"CnnLstmPolicy"``, ``"MultiInputLstmPolicy"`` or a subclass of
        :class:`~ordergrad_rl.agents.contrib_policies.OrderGradRecurrentPolicy` (``policy_kwargs`` as
        sb3-contrib's: ``lstm_hidden_size``, ``n_lstm_layers``, ``net_arch`` ... plus ``learn_log_std``,
        ``zero_init_action_net``).
    :param env: env id, ``gym.Env`` or ``VecEnv`` with episodes that end.
    :param batch_size: steps per minibatch (of whole episodes), default ``max(64, n_episodes)``.
    :param use_sde: gSDE exploration, as in SB3.
    :param sde_sample_freq: resample the gSDE noise every n steps (-1: once per rollout).
    :param rollout_buffer_class: a subclass of
        :class:`~ordergrad_rl.agents.contrib_buffers.RecurrentEpisodicRolloutBuffer`.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer (``max_episode_steps``).
    :param policy_kwargs: keyword arguments of the policy.
    """

    __doc__ = (__doc__ or "") + _PARAMS
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = RECURRENT_POLICY_ALIASES  # type: ignore[assignment]
    rollout_buffer: RecurrentEpisodicRolloutBuffer  # type: ignore[assignment]

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: GymEnv | str,
        objective: ObjectiveLike = "cvar0.2",
        k: int | None = None,
        n_episodes: int | None = None,
        n_envs: int | None = None,
        learning_rate: float | Schedule = 3e-4,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float = 1.0,
        clip_range: float | Schedule = 0.2,
        normalize_advantage: bool | str = True,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        ent_coef: float = 0.0,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[RecurrentEpisodicRolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        target_kl: float | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        _init_setup_model: bool = True,
    ) -> None:
        n_episodes, batch_size, buffer_class = _episodic_ppo_arguments(
            objective, k, n_episodes, batch_size, rollout_buffer_class, RecurrentEpisodicRolloutBuffer,
            group_size=group_size, learning_rate=learning_rate, gamma=gamma, ent_coef=ent_coef,
            max_grad_norm=max_grad_norm,
            policy_kwargs=policy_kwargs, n_epochs=n_epochs, clip_range=clip_range,
        )  # fmt: skip
        super().__init__(
            policy,
            build_env(env, n_envs, seed, n_episodes),
            learning_rate=learning_rate,
            n_steps=n_episodes,  # replaced by episodes per env in _setup_model
            batch_size=batch_size,
            n_epochs=n_epochs,
            gamma=gamma,
            gae_lambda=1.0,
            clip_range=clip_range,
            normalize_advantage=bool(normalize_advantage),  # the mixin keeps "group"
            ent_coef=ent_coef,
            vf_coef=0.0,
            max_grad_norm=max_grad_norm,
            use_sde=use_sde,
            sde_sample_freq=sde_sample_freq,
            target_kl=target_kl,
            stats_window_size=stats_window_size,
            tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs,
            verbose=verbose,
            seed=seed,
            device=device,
            _init_setup_model=False,
        )
        # RecurrentPPO's constructor takes no buffer arguments; OnPolicyAlgorithm's attributes hold them.
        self.rollout_buffer_class = buffer_class
        self.rollout_buffer_kwargs = dict(rollout_buffer_kwargs or {})
        self._init_episodic(
            objective, k, n_episodes, normalize_advantage, reward_to_go=reward_to_go, group_size=group_size
        )
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        # The mixin's checks, then RecurrentPPO's setup: the policy, zero LSTM states for the collector, the clip
        # schedules, and a step-based buffer, replaced here by the episodic one (which needs the LSTM's shape).
        # The policy is built without a critic LSTM (critic="none", unless the user asks for "value"); the stored
        # policy_kwargs stay the user's (SB3's load compares them with the saved ones).
        user_kwargs = self.policy_kwargs
        self.policy_kwargs = {"critic": "none", **user_kwargs}
        try:
            super()._setup_model()
        finally:
            self.policy_kwargs = user_kwargs
        lstm = self.policy.lstm_actor  # type: ignore[attr-defined]
        self.rollout_buffer = self.rollout_buffer_class(  # type: ignore[misc]
            self.n_steps,
            self.observation_space,
            self.action_space,
            device=self.device,
            gamma=self.gamma,
            gae_lambda=self.gae_lambda,
            n_envs=self.n_envs,
            lstm_shape=(lstm.num_layers, lstm.hidden_size),
            **self._episodic_buffer_kwargs(),
        )

    def _action_distribution(self, obs: Any, env: VecEnv) -> tuple[Distribution, dict[str, np.ndarray]]:
        """The actor LSTM's step: its state is reset where an episode starts and carried otherwise."""
        starts = th.tensor(self._last_episode_starts, dtype=th.float32, device=self.device)  # type: ignore[has-type]
        distribution, states = self.policy.get_distribution(obs, self._last_lstm_states.pi, starts)  # type: ignore
        self._last_lstm_states = RNNStates(states, states)  # no critic LSTM in episodic mode
        return distribution, {}

    def train(self) -> None:
        """sb3-contrib's RecurrentPPO update on the episode weights (see :func:`train_on_episode_weights`)."""
        train_on_episode_weights(self, super().train)


class OrderGradMaskablePPO(EpisodicAlgorithmMixin, MaskablePPO):
    """sb3-contrib's MaskablePPO (invalid-action masking) on OrderGrad episode weights of an order-statistic objective.

    Episodic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` for envs with a method ``action_masks()`` (``[n]``
    bool for ``Discrete(n)``; see sb3-contrib's ``ActionMasker`` wrapper): at every step the collector reads the masks,
    samples from the masked distribution (a masked action has probability 0) and stores the masks, and
    sb3-contrib's ``MaskablePPO.train`` evaluates the log-likelihoods under the same masks.
    ``learn(..., use_masking=False)`` is not offered (the mixin's ``learn``); ``predict(obs, action_masks=...)`` is
    sb3-contrib's.

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` (sb3-contrib's maskable policies with
        the OrderGrad options) or a subclass of :class:`~ordergrad_rl.agents.contrib_policies.OrderGradMaskablePolicy`.
    :param env: env id, ``gym.Env`` or ``VecEnv`` whose envs have ``action_masks()`` and episodes that end.
    :param batch_size: steps per minibatch, default ``max(64, n_episodes)``.
    :param rollout_buffer_class: a subclass of
        :class:`~ordergrad_rl.agents.contrib_buffers.MaskableEpisodicRolloutBuffer`.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer (``max_episode_steps``).
    :param policy_kwargs: keyword arguments of the policy.
    """

    __doc__ = (__doc__ or "") + _PARAMS
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = MASKABLE_POLICY_ALIASES  # type: ignore[assignment]
    rollout_buffer: MaskableEpisodicRolloutBuffer  # type: ignore[assignment]

    def __init__(
        self,
        policy: str | type[BasePolicy],
        env: GymEnv | str,
        objective: ObjectiveLike = "cvar0.2",
        k: int | None = None,
        n_episodes: int | None = None,
        n_envs: int | None = None,
        learning_rate: float | Schedule = 3e-4,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float = 1.0,
        clip_range: float | Schedule = 0.2,
        normalize_advantage: bool | str = True,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        ent_coef: float = 0.0,
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
        _init_setup_model: bool = True,
    ) -> None:
        n_episodes, batch_size, buffer_class = _episodic_ppo_arguments(
            objective, k, n_episodes, batch_size, rollout_buffer_class, MaskableEpisodicRolloutBuffer,
            group_size=group_size, learning_rate=learning_rate, gamma=gamma, ent_coef=ent_coef,
            max_grad_norm=max_grad_norm,
            policy_kwargs=policy_kwargs, n_epochs=n_epochs, clip_range=clip_range,
        )  # fmt: skip
        with warnings.catch_warnings():
            # MaskablePPO compares batch_size with n_steps * n_envs; an episodic rollout's step count varies instead.
            warnings.filterwarnings("ignore", message="You have specified a mini-batch size")
            super().__init__(
                policy,
                build_env(env, n_envs, seed, n_episodes),
                learning_rate=learning_rate,
                n_steps=n_episodes,  # replaced by episodes per env in _setup_model
                batch_size=batch_size,
                n_epochs=n_epochs,
                gamma=gamma,
                gae_lambda=1.0,
                clip_range=clip_range,
                normalize_advantage=bool(normalize_advantage),  # the mixin keeps "group"
                ent_coef=ent_coef,
                vf_coef=0.0,
                max_grad_norm=max_grad_norm,
                rollout_buffer_class=buffer_class,
                rollout_buffer_kwargs=rollout_buffer_kwargs,
                target_kl=target_kl,
                stats_window_size=stats_window_size,
                tensorboard_log=tensorboard_log,
                policy_kwargs=policy_kwargs,
                verbose=verbose,
                seed=seed,
                device=device,
                _init_setup_model=False,
            )
        self._init_episodic(
            objective, k, n_episodes, normalize_advantage, reward_to_go=reward_to_go, group_size=group_size
        )
        self._use_masking = True
        if _init_setup_model:
            self._setup_model()

    def _excluded_save_params(self) -> list[str]:
        return [*super()._excluded_save_params(), "_use_masking"]

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

    def _action_distribution(self, obs: Any, env: VecEnv) -> tuple[Distribution, dict[str, np.ndarray]]:
        """The masked distribution in the current observations, and the masks (stored with the step)."""
        if not self._use_masking:
            return self.policy.get_distribution(obs), {}
        masks = np.asarray(get_action_masks(env), dtype=bool).reshape(env.num_envs, -1)
        if self.action_space.shape == () and not masks.any(axis=1).all():  # Discrete: one row of n per env
            env_index = int(np.flatnonzero(~masks.any(axis=1))[0])
            raise ValueError(f"env {env_index}'s action_masks() allows no action at num_timesteps={self.num_timesteps}")
        return self.policy.get_distribution(obs, masks), {ACTION_MASKS: masks}

    def train(self) -> None:
        """sb3-contrib's MaskablePPO update on the episode weights (see :func:`train_on_episode_weights`)."""
        train_on_episode_weights(self, super().train)
