"""OrderGradRecurrentPPO: sb3-contrib's RecurrentPPO (LSTM policies) on OrderGrad episode weights.

The episodic collection of :class:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin`, with the LSTM state
carried from step to step and reset where an episode starts (sb3-contrib's ``episode_starts``); the buffer replays
whole episodes from zero states (:class:`~ordergrad_rl.agents.ppo_recurrent.buffers.RecurrentEpisodicRolloutBuffer`)
and sb3-contrib's own ``train`` runs the clipped-surrogate update on them (no critic).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
import torch as th
from sb3_contrib import RecurrentPPO
from sb3_contrib.common.recurrent.policies import RecurrentActorCriticPolicy
from sb3_contrib.common.recurrent.type_aliases import RNNStates
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.vec_env import VecEnv

from ordergrad_rl.agents.common.arguments import check_buffer_class, check_buffer_kwargs, check_ppo_arguments
from ordergrad_rl.agents.common.env_util import AgentEnv, check_env_given
from ordergrad_rl.agents.common.episodic import EPISODIC_PPO_PARAMS, train_on_episode_weights
from ordergrad_rl.agents.common.per_step_baseline import PerStepBaselineMixin
from ordergrad_rl.agents.common.risk_schedules import RiskScheduleLike
from ordergrad_rl.agents.common.sb3_compat import PPO_CRITIC_ARGUMENTS
from ordergrad_rl.agents.common.utils import lent_attributes
from ordergrad_rl.agents.ppo_recurrent.buffers import RecurrentEpisodicRolloutBuffer
from ordergrad_rl.agents.ppo_recurrent.policies import RECURRENT_POLICY_ALIASES, OrderGradRecurrentPolicy
from ordergrad_rl.core.channels import AnyObjective


# ignore[misc]: the episodic mixin's normalize_advantage (also "group", "channel", "running") is wider than
# sb3-contrib's bool, which train_on_episode_weights lends its update, and its batch_size an int (PPO's type),
# sb3-contrib's int | None.
class OrderGradRecurrentPPO(PerStepBaselineMixin, RecurrentPPO):  # type: ignore[misc]
    """sb3-contrib's RecurrentPPO (LSTM policies) on OrderGrad episode weights of an order-statistic objective.

    Episodic mode of :class:`~ordergrad_rl.agents.OrderGradPPO` with a recurrent policy, for partially observed
    tasks: every rollout collects ``n_episodes`` complete episodes, the LSTM state carried across the steps of each
    env and reset wherever an episode starts (also where an env starts its next episode within the rollout).
    Episode ``i``'s return becomes the weight ``w_i = k * a_i`` on each of its steps, and sb3-contrib's
    ``RecurrentPPO.train`` runs the clipped-surrogate update with minibatches of *whole episodes* (about
    ``batch_size`` steps each, at least one episode) replayed from zero LSTM states, so at ratio 1 the gradient of a
    minibatch holding the whole rollout is ``(1/T) sum_t w_t grad log pi(a_t | h_t)``, as OrderGradPPO's. There is no
    critic: the policy has only the actor LSTM and ``train/value_loss`` is not logged. Since 2026-12-05 a ranked
    objective of one pooled batch gives each step its episode's weight over the history baseline instead, as
    OrderGradPPO's default (``value_baseline``).

    :param policy: ``"MlpLstmPolicy"``, ``"CnnLstmPolicy"``, ``"MultiInputLstmPolicy"`` or a subclass of
        :class:`~ordergrad_rl.agents.ppo_recurrent.policies.OrderGradRecurrentPolicy` (``policy_kwargs`` as
        sb3-contrib's: ``lstm_hidden_size``, ``n_lstm_layers``, ``net_arch`` ... plus ``learn_log_std``,
        ``zero_init_action_net``). Without ``net_arch`` the actor is sb3-contrib's default: no hidden layers after
        ``NatureCNN`` (``"CnnLstmPolicy"``), ``[64, 64]`` after the other extractors. ``share_features_extractor=False``
        changes no training (there is no critic): it builds a second features extractor and sb3-contrib's
        feed-forward ``critic`` layer, which each rollout step runs (sb3-contrib's ``forward``) and nothing trains;
        it is kept so that a RecurrentPPO model built with it fine-tunes through ``from_sb3``, and is best left out
        otherwise (with a ``"CnnLstmPolicy"`` the second extractor is a whole ``NatureCNN``). Every policy also holds
        SB3's ``value_net``, unused too, kept so that the parameter initialization, and so the default training, and
        the saves stay as they were.
    :param env: env id, ``gym.Env`` or ``VecEnv`` with episodes that end.
    :param batch_size: steps per minibatch (of whole episodes), default ``max(64, n_episodes)``.
    :param use_sde: gSDE exploration, as in SB3.
    :param sde_sample_freq: every episode starts with a new gSDE matrix (SB3 keeps one for the whole rollout), so
        that a rollout's episodes are independent draws of the policy, as the estimator needs; ``n > 0`` also
        resamples every env's matrix every ``n`` steps counted from the rollout's start, as SB3 counts them (not from
        each episode's start), -1 never.
    :param value_baseline: per-step credit for a ranked objective, as OrderGradMaskablePPO's: ``"history"`` gives
        each step its episode's weight over the history baseline ``b(s_t, t, G_<t)``
        (:class:`~ordergrad_rl.agents.common.history_baseline.HistoryBaseline`, a feed-forward network of its own on
        the current observation, the step and the return so far, fitted to each rollout's weights after they are
        used, saved with the model). It sees less than the LSTM policy does, so it removes less variance on a
        partially observed task, but it is a function of what is known before ``a_t`` is drawn, so the estimator
        stays unbiased at ``baseline_lambda=1``. ``True`` (the value head's ``V(s)``) is refused: this class trains
        no critic. ``None`` (default since 2026-12-05; whole-episode weights before): OrderGradPPO's rule,
        ``"history"`` for a ranked objective of one pooled batch
        (:func:`~ordergrad_rl.agents.common.arguments.default_value_baseline`; its ``V(s)`` case, continuous actions
        without a time limit, keeps whole-episode weights here). Measured (``reproduce benchmarks``,
        ``og-recurrent-cvar``, 300k steps, seeds 0-4, greedy / sampled CVaR_0.2, the same seeds): the guarded maze
        -3.22 / -4.93 against -8.20 / -16.30, higher on all five seeds, within 1 of the optimum in 4 of 5 against 1
        of 5 (both upper counts: scored by Monte Carlo moved into the tree's bracket); the lava grid (exact) -9.82 /
        -9.91 against -10.01 / -11.10, 2 of 5 at the optimum against 0 (three seeds still end in the lava either
        way). A save from before it keeps whole-episode weights.
    :param baseline_lambda: with the history baseline, the ``lambda`` of the weight's lambda-returns over it (as
        OrderGradPPO's); default 0.95 with a baseline, ``1.0`` (``w - b_t``) gives the unbiased estimator.
    :param rollout_buffer_class: a subclass of
        :class:`~ordergrad_rl.agents.ppo_recurrent.buffers.RecurrentEpisodicRolloutBuffer`.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer (``max_episode_steps``).
    :param policy_kwargs: keyword arguments of the policy.
    :param n_steps: RecurrentPPO's rollout length, refused: a rollout is ``n_episodes`` episodes (the error names the
        ``n_episodes`` that gives about as many steps on the env).
    :param gae_lambda: refused (no critic).
    :param vf_coef: refused (no critic).
    :param clip_range_vf: refused (no critic).
    """

    __doc__ = (__doc__ or "") + EPISODIC_PPO_PARAMS
    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = RECURRENT_POLICY_ALIASES
    policy: RecurrentActorCriticPolicy  # what sb3-contrib builds (SB3's OnPolicyAlgorithm types ActorCriticPolicy)
    # sb3-contrib's own policy classes have no critic="none" (they build and run the critic episodic mode never trains)
    episodic_policy_classes = (OrderGradRecurrentPolicy,)
    # OrderGradPPO's rollouts halved for small budgets (budget_n_episodes), measured on this class with the history
    # baseline (value_baseline): at 100k steps no lava seed of five ends in the lava against four, and no maze seed
    # times out against four. Not 64 episodes at every budget (og-recurrent-cvar-n64, 300k steps, seeds 0-4): lava
    # gains (3 of 5 at the optimum, none in the lava, against 2 of 5 and three in it at 256) but the maze loses
    # (1 of 5 within 1 of the optimum against 4 of 5 at 128; docs/benchmarks.md), so the sizes stay OrderGradPPO's.
    budget_sized_rollouts = True
    trains_critic = False
    critic_arguments = PPO_CRITIC_ARGUMENTS  # RecurrentPPO's, refused (no critic)
    rollout_buffer: RecurrentEpisodicRolloutBuffer  # type: ignore[assignment]

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
        buffer_class = check_buffer_class(rollout_buffer_class, RecurrentEpisodicRolloutBuffer)
        check_buffer_kwargs(rollout_buffer_kwargs)
        long, limit = self._init_episodic_algorithm(
            super().__init__, policy, env, objective, k, n_episodes, n_envs, seed, normalize_advantage, reward_to_go,
            group_size, risk_schedule=risk_schedule, untie_tail=untie_tail, entropy_when_tied=entropy_when_tied,
            noise_sampler=noise_sampler, long_episode_defaults=True, batch_size=batch_size,
            learning_rate=learning_rate, n_epochs=n_epochs,
            gamma=gamma, gae_lambda=1.0, clip_range=clip_range, ent_coef=ent_coef,
            vf_coef=0.0, max_grad_norm=max_grad_norm, use_sde=use_sde, sde_sample_freq=sde_sample_freq,
            target_kl=target_kl, stats_window_size=stats_window_size, tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs, verbose=verbose, device=device,
        )  # fmt: skip
        default = self._default_value_baseline(long, policy_kwargs, limit)
        self._init_value_baseline(value_baseline, baseline_lambda, default)
        # RecurrentPPO's constructor takes no buffer arguments; OnPolicyAlgorithm's attributes hold them.
        self.rollout_buffer_class = buffer_class
        self.rollout_buffer_kwargs = dict(rollout_buffer_kwargs or {})
        if _init_setup_model:
            self._setup_model()

    def _setup_model(self) -> None:
        # The mixin's checks, then RecurrentPPO's setup: the policy, zero LSTM states for the collector, the clip
        # schedules, and a step-based buffer, replaced here by the episodic one (which needs the LSTM's shape).
        # The policy is built without a critic LSTM (critic="none", unless the user asks for "value"); the stored
        # policy_kwargs stay the user's (SB3's load compares them with the saved ones).
        with lent_attributes(self, policy_kwargs={"critic": "none", **self.policy_kwargs}):
            super()._setup_model()
        self._build_episodic_buffer()

    def _build_episodic_buffer(self, **kwargs: Any) -> None:
        """The mixin's buffer with the zero states of the policy's LSTM, here and wherever the mixin rebuilds it (a
        rollout resized for the budget)."""
        lstm = self.policy.lstm_actor
        super()._build_episodic_buffer(lstm_shape=(lstm.num_layers, lstm.hidden_size), **kwargs)

    def _policy_step(self, obs: Any, env: VecEnv) -> tuple[th.Tensor, th.Tensor, dict[str, np.ndarray]]:
        """sb3-contrib's ``self.policy(obs, lstm_states, episode_starts)`` step: the actor LSTM's state is reset where
        an episode starts and carried otherwise."""
        starts = self._episode_starts_tensor()
        actions, _, log_probs, states = self.policy(obs, self._last_lstm_states, starts)
        # No critic LSTM in episodic mode. (sb3-contrib's RecurrentPPO sets None first, which mypy takes as the type.)
        self._last_lstm_states = RNNStates(states.pi, states.pi)  # type: ignore[assignment]
        return actions, log_probs, {}

    def _step_locals(self) -> dict[str, Any]:
        """sb3-contrib's ``lstm_states`` (the ``RNNStates`` after the step's action, whose ``vf`` is its ``pi``: there
        is no critic LSTM) and ``episode_starts`` (the float tensor of the envs whose LSTM state the step reset)."""
        return {"lstm_states": self._last_lstm_states, "episode_starts": self._episode_starts_tensor()}

    def _episode_starts_tensor(self) -> th.Tensor:
        """``[n_envs]`` float32 tensor, 1 where the step acting on ``_last_obs`` starts an episode (sb3-contrib's)."""
        return th.tensor(self._last_episode_starts, dtype=th.float32, device=self.device)

    def train(self) -> None:
        """sb3-contrib's RecurrentPPO update on the episode weights (see :func:`train_on_episode_weights`)."""
        train_on_episode_weights(self, super().train)
