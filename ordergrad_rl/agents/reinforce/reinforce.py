"""OrderGradREINFORCE: one likelihood-ratio gradient step per batch of complete episodes."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import torch as th
from gymnasium import spaces
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import Schedule

from ordergrad_rl.agents.common.arguments import (
    REINFORCE_RANKED_ENT_COEF,
    REINFORCE_RANKED_ROLLOUT_STEPS,
    check_common_arguments,
    default_reinforce_value_baseline,
)
from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer
from ordergrad_rl.agents.common.env_util import AgentEnv, check_env_given
from ordergrad_rl.agents.common.per_step_baseline import PerStepBaselineMixin
from ordergrad_rl.agents.common.policies import POLICY_ALIASES, evaluate_actions_without_value
from ordergrad_rl.agents.common.risk_schedules import RiskScheduleLike
from ordergrad_rl.agents.common.sb3_compat import optimizer_argument_error
from ordergrad_rl.core.channels import AnyObjective

#: A2C's critic arguments, which this class refuses (in the constructor and at ``load``) and leaves out of its saves.
CRITIC_ARGUMENTS: tuple[str, ...] = ("gae_lambda", "vf_coef")
#: A2C's optimizer arguments, which this class refuses (in the constructor and at ``load``): it trains with the
#: policy's optimizer (``policy_kwargs["optimizer_class"]``, Adam by default).
OPTIMIZER_ARGUMENTS: tuple[str, ...] = ("use_rms_prop", "rms_prop_eps")


class OrderGradREINFORCE(PerStepBaselineMixin, OnPolicyAlgorithm):
    """REINFORCE on an order-statistic objective of the episode return (paper Sec. 3, eq. og-batch-estimator).

    Every update collects ``n_episodes`` complete episodes, turns their returns ``G_i`` into the OrderGrad weights
    ``w_i = k * a_i`` and takes one gradient step on

        loss = -(1/N) sum_i w_i sum_t log pi(a_t | s_t)  -  ent_coef * mean_t H(pi(. | s_t)),

    with the gradient norm clipped at ``max_grad_norm``. With ``normalize_advantage=False`` the gradient is exactly
    the unbiased estimator ``(k/N) sum_i a_i grad log p(tau_i)``; ``True`` divides the weights by their
    standard deviation over the episodes (the paper's practice; a positive rescaling per batch), and the default
    (``None``) by a running scale across rollouts for a ranked objective on short episodes. With
    ``objective="mean"`` this is REINFORCE with a leave-one-out baseline, and by default (``reward_to_go``) each step
    ``t`` is weighted by its reward-to-go minus the other episodes' mean reward-to-go at ``t`` instead of the whole
    episode's weight. No value function is used.

    The paper's portfolio protocol::

        model = OrderGradREINFORCE(
            "MlpPolicy", "SyntheticTailRisk-v0", objective="cvar0.2@128", n_episodes=256, n_envs=256,
            learning_rate=3e-3, max_grad_norm=1.0, normalize_advantage=True,
            policy_kwargs=dict(net_arch=dict(pi=[], vf=[]), zero_init_action_net=True,
                               log_std_init=math.log(0.35), learn_log_std=False))
        model.learn(750 * 256 * 16)   # 750 updates of 256 episodes x 16 decisions

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` (see
        :mod:`ordergrad_rl.agents.common.policies` for ``learn_log_std``, ``zero_init_action_net``) or any subclass
        of SB3's ``ActorCriticPolicy`` (its value head is built but never trained, its values never used).
    :param env: env id (built with ``make_sb3_vec_env(env, n_envs, seed)``), ``gym.Env`` or ``VecEnv``. Episodes
        must end: one running past ``rollout_buffer_kwargs["max_episode_steps"]`` (default 100,000, or the env's own
        ``TimeLimit`` where that is longer) steps raises a ``ValueError`` (give the env a ``TimeLimit``).
    :param objective: order-statistic objective spec (``"mean"``, ``"cvar0.2"``, ``"max@8"``, ``"top2@4"`` ...,
        see :class:`~ordergrad_rl.core.Objective`), or one per reward channel (see
        :class:`~ordergrad_rl.agents.OrderGradPPO`). ``model.objective`` is the parsed, bound objective.
    :param k: order-statistic size if the spec has no ``@K``; default ``n_episodes // 2``. ``mean`` has k = 1.
    :param n_episodes: episodes per update ``N`` (needs ``k < N``; any number of envs). Default as OrderGradPPO's
        (:func:`~ordergrad_rl.agents.common.arguments.default_n_episodes`): 16 for ``"mean"``, measured across the
        project's envs by ``scripts/measure_reinforce_defaults.py`` (at equal env steps, N = 16 beats 64 and 256 on
        CartPole-v1 and RiskyLavaGrid-v0 and ties on RiskyBandit-v0 and SyntheticTailRisk-v0: one gradient step
        per rollout makes small batches pay). For ranked objectives (at least ``2 k``), since 2026-12-01, as many
        episodes as hold at most 1024 steps at the env's episode limit, from 32 to 256
        (:data:`~ordergrad_rl.agents.common.arguments.REINFORCE_RANKED_ROLLOUT_STEPS`, which gives the measurement):
        32 on the lava grid, the guarded maze, the point navigation and long episodes, 256 on the one-step bandit and
        on an env without a limit (the paper's 256 on the portfolio, where 32 measured worse). 256 everywhere before.
    :param learning_rate: Adam learning rate (or schedule); the paper's 3e-3 by default.
    :param gamma: discount of the episode return ``sum_t gamma^t r_t`` (from its first step) that the objective
        ranks; 1.0 (undiscounted) by default.
    :param normalize_advantage: divide the per-episode weights by their standard deviation (+1e-8; ``"running"``: by a
        running scale over the rollouts, see :class:`~ordergrad_rl.agents.OrderGradPPO`). ``None`` (default): as
        OrderGradPPO's (:func:`~ordergrad_rl.agents.common.arguments.default_normalize_advantage`), ``"running"`` for a
        ranked objective of one pooled batch on episodes of at most 128 steps, else ``True``. The per-rollout std lets
        the many rollouts without a rare costly episode outweigh the few with it: on the one-step rare-crash task
        (tests/test_noise_sampler.py; the safe action is optimal for the mean and CVaR_0.2) this class ends on the risky
        action with ``True`` (P(risky) > 0.999 in seeds 0-2, 32 episodes per rollout, 8000 steps) and on the safe one by
        default (P(risky) < 0.01 in seeds 0-2; at a learning rate of 1e-2, in 2 of 3). On the suite it changes nothing
        this class reaches (``reproduce benchmarks``, ``og-reinforce-cvar``, seeds 0-1, 300k steps, greedy CVaR_0.2 with
        either scale): the lava grid -17.4 and -6.8, the guarded maze -40 (a time-out), the heavy-tail bandit 1.0 (its
        optimum); OrderGradPPO's measurement is in
        :func:`~ordergrad_rl.agents.common.arguments.default_normalize_advantage`. The paper's protocol (``reproduce
        tailrisk``, the example above) passes ``True``.
    :param reward_to_go: mean objective: each step is credited with the rewards from it on, minus the other
        episodes' mean reward-to-go at the same step (unbiased, lower variance; see
        :func:`~ordergrad_rl.agents.common.advantages.reward_to_go_advantages`). ``None`` (default): on for ``"mean"``,
        off for ranked objectives, which weight whole episodes. The paper's REINFORCE (``reproduce tailrisk``) uses
        ``False``.
    :param group_size: episodes per group sharing a start context (see :class:`~ordergrad_rl.agents.OrderGradPPO`).
    :param risk_schedule: soft risk (see :class:`~ordergrad_rl.agents.OrderGradPPO` and
        :mod:`ordergrad_rl.agents.common.risk_schedules`). ``None`` (default): ``"level"`` for a lower tail with a
        level on continuous actions with a time limit (since 2026-12-02: the point navigation from the wall in 10 of 10
        seeds, -43.2, to the goal in 7 of 10, -18.6), else none (this class takes no long-episode defaults;
        :func:`~ordergrad_rl.agents.common.risk_schedules.default_risk_schedule`).
    :param untie_tail: train a rollout whose lower tail is one tie at the level that reaches past it (with
        ``group_size``, each group by its own returns; see :class:`~ordergrad_rl.agents.OrderGradPPO`); default on.
    :param noise_sampler: CeSoR's cross-entropy sampler of the env's noise (see
        :class:`~ordergrad_rl.agents.OrderGradPPO`). ``None`` (default since 2026-12-01, OrderGradPPO's): on where the
        env exposes its noise and the objective admits the sampler. With 32 episodes per update it takes the guarded
        maze from the short path (-9.29, 2 of 2 at 300k steps) to the long one (7 of 10 at the optimum without the
        entropy bonus; with the default bonus all 10 on the long path, 6 within 1 of the optimum); at 256 episodes
        it stays at the time-out (-40, 2 of 2), so it came with the 32-episode default.
    :param novelty_phase: the share of training, in ``[0, 1]``, whose rollouts train on their episodes' standardized
        novelty (how far each episode's states went from the rollout's average state,
        :mod:`~ordergrad_rl.agents.common.novelty`) instead of their advantages, whatever they rank: directed
        exploration first, the objective after (``train/novelty_phase`` logs 1 while it acts). It counts training's
        progress as ``risk_schedule`` does, so a resumed ``learn(..., reset_num_timesteps=False)`` goes on where it was,
        and a risk schedule runs on through it. Default 0.0 (none), as OrderGradPPO's (its measurement there). With
        0.15 and ``risk_schedule="none"`` this class stopped at the wall in 9 of 10 seeds of the point navigation
        (greedy CVaR_0.2 -40.54, against -10.87 at its defaults; docs/benchmarks.md, "The novelty phase as an option").
    :param value_baseline: per-step credit for a ranked objective: ``"history"`` subtracts the history baseline
        ``b(s_t, t, G_<t)`` (:class:`~ordergrad_rl.agents.common.history_baseline.HistoryBaseline`, its own small
        network fitted to each rollout's weights after they are used, saved with the model; see
        :class:`~ordergrad_rl.agents.OrderGradPPO`) from each step's episode weight, which stays unbiased. ``True``
        (the value head's ``V(s)``) is refused: this class trains no critic. ``None`` (default since 2026-12-02; off
        before): ``"history"`` for a ranked objective of one pooled batch on categorical actions or on continuous
        actions with a time limit, else off
        (:func:`~ordergrad_rl.agents.common.arguments.default_reinforce_value_baseline`, which gives the measurement:
        the guarded maze 10 of 10 seeds within 1 of its optimum at 300k steps, against 6 of 10). Before this
        class's ranked defaults of 2026-12-01 (256 episodes, no bonus, no sampler) it measured no gain (seeds 0-1,
        300k steps): the lava grid stayed at -6.79 and the maze at the time-out (-40) or on its short path (-9.31).
    :param baseline_lambda: with the history baseline, the ``lambda`` of the weight's lambda-returns over it (see
        :class:`~ordergrad_rl.agents.OrderGradPPO`); default 0.95 with a baseline, ``1.0`` (``w - b_t``,
        unbiased) gives the exact estimator.
    :param ent_coef: entropy bonus coefficient, or a schedule of ``progress_remaining``. ``None`` (default since
        2026-12-01; 0.0 before): for a ranked objective on categorical actions 0.3 decayed linearly to 0 over training
        (:data:`~ordergrad_rl.agents.common.arguments.REINFORCE_RANKED_ENT_COEF`, which gives the measurement: about
        OrderGradPPO's 0.01 per step times the lava grid's episode length, since the policy term sums each episode's
        steps and the bonus averages them), else 0.0 (:func:`~ordergrad_rl.agents.common.arguments.default_ent_coef`).
        Held at 0.3 it reaches the lava grid's optimum but ends the maze on its short path and keeps one-step
        episodes' sampled policy spread; decayed, it reaches the lava grid's optimum in 9 of 10 seeds.
    :param entropy_when_tied: keep the entropy bonus on a rollout whose returns all tie at the best seen (see
        :class:`~ordergrad_rl.agents.OrderGradPPO`); default off.
    :param max_grad_norm: gradient-norm clipping threshold.
    :param n_envs: number of envs. ``None`` (default): ``n_episodes`` envs as one NumPy batch for an env id (or a
        ``gym.make`` env without further wrappers or a render mode) with a native batch (the tail-risk ids), else 1
        env from an id and env objects as they are. An integer builds that many envs from an id.
    :param use_sde: generalized state-dependent exploration (gSDE), as in SB3.
    :param sde_sample_freq: every episode starts with a new gSDE matrix (SB3 keeps one for the whole rollout), so
        that a rollout's episodes are independent draws of the policy, as the estimator needs; ``n > 0`` also
        resamples every env's matrix every ``n`` steps counted from the rollout's start, as SB3 counts them (not from
        each episode's start), -1 never.
    :param rollout_buffer_class: a subclass of :class:`~ordergrad_rl.agents.common.buffers.EpisodicRolloutBuffer`.
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer.
    :param stats_window_size: episodes averaged by ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean``.
    :param tensorboard_log: TensorBoard log dir (``risk/*`` dashboards, see
        :mod:`ordergrad_rl.agents.common.risk_logging`).
    :param monitor_wrapper: wrap a ``gym.Env`` in ``Monitor``.
    :param policy_kwargs: keyword arguments of the policy.
    :param verbose: 0 silent, 1 info, 2 debug.
    :param seed: random seed. Unlike SB3's algorithms, which reset an env id's env unseeded, an id without a native
        batch becomes SB3's ``make_vec_env(id, n_envs, seed)``: with ``seed=None`` it draws the envs' seeds from
        NumPy's global generator (one draw at construction).
    :param device: torch device.
    :param n_steps: SB3's rollout length, refused: a rollout is ``n_episodes`` episodes (the error names the
        ``n_episodes`` that gives about as many steps on the env).
    :param gae_lambda: refused (no critic).
    :param vf_coef: refused (no critic).
    :param use_rms_prop: refused: the optimizer is the policy's, Adam by default (A2C's ``use_rms_prop=False``); for
        A2C's RMSprop pass ``policy_kwargs=dict(optimizer_class=th.optim.RMSprop, optimizer_kwargs=dict(alpha=0.99,
        eps=1e-5, weight_decay=0))``.
    :param rms_prop_eps: refused, as ``use_rms_prop`` (the ``eps`` of ``optimizer_kwargs``).
    :param _init_setup_model: build the networks at construction.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES
    rollout_buffer: EpisodicRolloutBuffer  # type: ignore[assignment]
    ranked_rollout_steps = REINFORCE_RANKED_ROLLOUT_STEPS
    trains_critic = False
    critic_arguments = CRITIC_ARGUMENTS
    default_ranked_ent_coef = default_short_ranked_ent_coef = REINFORCE_RANKED_ENT_COEF

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: AgentEnv | str,
        objective: AnyObjective = "mean",
        k: int | None = None,
        n_episodes: int | None = None,
        learning_rate: float | Schedule = 3e-3,
        gamma: float = 1.0,
        normalize_advantage: bool | Literal["group", "channel", "running"] | None = None,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        risk_schedule: RiskScheduleLike = None,
        untie_tail: bool = True,
        noise_sampler: bool | None = None,
        novelty_phase: float = 0.0,
        value_baseline: bool | Literal["history"] | None = None,
        baseline_lambda: float | None = None,
        ent_coef: float | Schedule | None = None,
        entropy_when_tied: bool = False,
        max_grad_norm: float = 1.0,
        n_envs: int | None = None,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[EpisodicRolloutBuffer] | None = None,
        rollout_buffer_kwargs: dict[str, Any] | None = None,
        stats_window_size: int = 100,
        tensorboard_log: str | None = None,
        monitor_wrapper: bool = True,
        policy_kwargs: dict[str, Any] | None = None,
        verbose: int = 0,
        seed: int | None = None,
        device: th.device | str = "auto",
        n_steps: None = None,
        gae_lambda: None = None,
        vf_coef: None = None,
        use_rms_prop: None = None,
        rms_prop_eps: None = None,
        _init_setup_model: bool = True,
    ) -> None:
        check_env_given(type(self).__name__, env, _init_setup_model)
        self._refuse_sb3_arguments(env, n_envs, n_steps, (gae_lambda, vf_coef))
        for name, value in zip(OPTIMIZER_ARGUMENTS, (use_rms_prop, rms_prop_eps), strict=True):
            if value is not None:
                raise optimizer_argument_error(type(self).__name__, name)
        check_common_arguments(learning_rate, gamma, ent_coef, max_grad_norm, policy_kwargs)
        self._check_value_baseline(value_baseline)
        _, limit = self._init_episodic_algorithm(
            super().__init__, policy, env, objective, k, n_episodes, n_envs, seed, normalize_advantage, reward_to_go,
            group_size, risk_schedule=risk_schedule, untie_tail=untie_tail, entropy_when_tied=entropy_when_tied,
            noise_sampler=noise_sampler, novelty_phase=novelty_phase, learning_rate=learning_rate, gamma=gamma,
            gae_lambda=1.0, ent_coef=ent_coef, vf_coef=0.0,
            max_grad_norm=max_grad_norm, use_sde=use_sde, sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class, rollout_buffer_kwargs=rollout_buffer_kwargs,
            stats_window_size=stats_window_size, tensorboard_log=tensorboard_log, monitor_wrapper=monitor_wrapper,
            policy_kwargs=policy_kwargs, verbose=verbose, device=device,
            supported_action_spaces=(spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary),
        )  # fmt: skip
        # SB3's load builds without an env (no action space); the save's value follows.
        default = hasattr(self, "action_space") and default_reinforce_value_baseline(
            self.objective, self.action_space, self.group_size, limit
        )
        self._init_value_baseline(value_baseline, baseline_lambda, default)
        if _init_setup_model:
            self._setup_model()

    @classmethod
    def _refuse_at_load(cls, kwargs: dict[str, Any], env: Any) -> None:
        """:meth:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin.load`'s refusals (A2C's critic
        arguments ``gae_lambda`` and ``vf_coef`` among them: this class trains no critic), and A2C's optimizer
        arguments ``use_rms_prop`` or ``rms_prop_eps``, as the constructor refuses them (it trains with the policy's
        optimizer)."""
        for name in OPTIMIZER_ARGUMENTS:
            if name in kwargs:
                raise optimizer_argument_error(cls.__name__, name)
        super()._refuse_at_load(kwargs, env)

    def _excluded_save_params(self) -> list[str]:
        # Constants of this class (no critic), left out so that A2C.load of the file gets A2C's own values.
        return [*super()._excluded_save_params(), *CRITIC_ARGUMENTS]

    def train(self) -> None:
        """One gradient step on the whole batch of episodes."""
        self.policy.set_training_mode(True)
        self._update_learning_rate(self.policy.optimizer)
        # batch_size=None: the whole rollout as one sample.
        data = next(self.rollout_buffer.get(batch_size=None))
        actions = data.actions
        if isinstance(self.action_space, spaces.Discrete):
            actions = actions.long().flatten()
        _, log_prob, entropy = evaluate_actions_without_value(self.policy, data.observations, actions)
        # sum over steps / N = (1/N) sum_i sum_t w_it log pi: the episode, not the step, is the sample.
        policy_loss = -(data.advantages * log_prob).sum() / self.rollout_buffer.n_episodes
        entropy_loss = -th.mean(-log_prob) if entropy is None else -th.mean(entropy)
        ent_coef = self._ent_coef_in_force()
        loss = policy_loss + ent_coef * entropy_loss

        self.policy.optimizer.zero_grad()
        loss.backward()
        grad_norm = th.nn.utils.clip_grad_norm_(self.policy.parameters(), self.max_grad_norm)
        self.policy.optimizer.step()
        self._n_updates += 1

        self.logger.record("train/policy_gradient_loss", policy_loss.item())
        self.logger.record("train/entropy_loss", entropy_loss.item())
        self._record_ent_coef(ent_coef)
        self.logger.record("train/loss", loss.item())
        self.logger.record("train/grad_norm", grad_norm.item())
        if hasattr(self.policy, "log_std"):
            self.logger.record("train/std", th.exp(self.policy.log_std).mean().item())
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
