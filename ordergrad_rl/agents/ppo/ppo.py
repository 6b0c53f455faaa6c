"""OrderGradPPO: SB3's clipped-surrogate PPO update on OrderGrad episode weights (``advantage="q_critic"`` builds
:class:`~ordergrad_rl.agents.ppo_q_critic.OrderGradQCriticPPO`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, Literal

import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.type_aliases import Schedule

from ordergrad_rl.agents.common.arguments import (
    RELATIVE_RANKED_ENT_COEF,
    SHORT_RANKED_ENT_COEF,
    check_advantage,
    check_log_std_step,
    check_ppo_arguments,
)
from ordergrad_rl.agents.common.base_class import sb3_load_options
from ordergrad_rl.agents.common.buffers import EpisodicRolloutBuffer
from ordergrad_rl.agents.common.entropy_plateau import EntropyPlateau
from ordergrad_rl.agents.common.env_util import AgentEnv, check_env_given
from ordergrad_rl.agents.common.episodic import EPISODIC, SelfEpisodic, train_on_episode_weights
from ordergrad_rl.agents.common.log_std_fit import (
    check_log_std_policy,
    fit_log_std,
    log_std_bound_share,
    rollout_means,
)
from ordergrad_rl.agents.common.per_step_baseline import check_value_head
from ordergrad_rl.agents.common.policies import POLICY_ALIASES, value_head_unused
from ordergrad_rl.agents.common.risk_schedules import RiskScheduleLike
from ordergrad_rl.agents.common.saving import read_saved_data
from ordergrad_rl.agents.common.sb3_compat import n_steps_error
from ordergrad_rl.agents.common.tied_critic import TiedCriticMixin
from ordergrad_rl.agents.ppo_q_critic import Q_CRITIC, OrderGradQCriticPPO
from ordergrad_rl.core.channels import AnyObjective

#: OrderGradPPO's default objective (also when it builds an OrderGradQCriticPPO).
DEFAULT_OBJECTIVE = "cvar0.2"


# ignore[misc]: the episodic mixin's normalize_advantage (also "group", "channel", "running") is wider than
# PPO's bool, which train_on_episode_weights lends its update.
class OrderGradPPO(TiedCriticMixin, PPO):  # type: ignore[misc]
    """PPO whose advantages are OrderGrad weights of an order-statistic objective.

    ``advantage="q_critic"`` builds the Q-critic algorithm instead, :class:`~ordergrad_rl.agents.OrderGradQCriticPPO`
    (paper appendix "RL Experiments", Algorithm 1: per-state advantages with a per-action Q critic, ``Discrete``
    actions; the arguments below marked "Q-critic mode" are its own).

    Episodic mode:

    Every rollout collects ``n_episodes`` complete i.i.d. episodes; episode ``i``'s return becomes the weight
    ``w_i = k * a_i`` (paper eq. og-batch-estimator), given to each of its steps as the advantage. The update is
    SB3's ``PPO.train`` unchanged: ``n_epochs`` passes of shuffled ``batch_size``-step minibatches of the clipped
    surrogate, entropy bonus, ``max_grad_norm`` clipping, ``target_kl`` early stop, ``clip_range`` schedules. At
    ratio 1 (the first minibatch) its gradient is ``(1/T) sum_t w_t grad log pi = (N/T) (k/N) sum_i a_i grad log
    p(tau_i)`` for a minibatch of all ``T`` steps: the unbiased estimator, scaled per step as in SB3.

    In episodic mode the value head, built as SB3 builds it (so that a save loads into SB3's ``PPO``, see
    :mod:`ordergrad_rl.agents.common.sb3_compat`), never enters the clipped surrogate. It is fitted in the update's
    minibatches, on its own parameters, as the discounted critic of ``critic_when_tied`` (on by default for a ranked
    objective: ``train/value_loss`` and ``train/explained_variance`` log it), or regressed on the episode weights as
    the ``value_baseline=True``; otherwise its value loss is a constant 0 and it is never trained. Unlike SB3, which
    centres and rescales the advantages of every minibatch of *steps*, ``normalize_advantage`` divides the
    per-*episode* weights by their standard deviation once per rollout (centring over steps would bias the
    estimator towards long episodes).

    :param policy: ``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` or a policy class: episodic mode takes
        any subclass of SB3's ``ActorCriticPolicy`` (its value head unused), Q-critic mode a subclass of
        :class:`~ordergrad_rl.agents.common.policies.OrderGradPolicyMixin`.
    :param env: env id (built with ``make_sb3_vec_env(env, n_envs, seed)``), ``gym.Env`` or ``VecEnv``. Episodic
        mode needs episodes that end: an episode running past ``rollout_buffer_kwargs["max_episode_steps"]``
        (default 100,000, or the env's own ``TimeLimit`` where that is longer) steps raises a ``ValueError`` (give
        the env a ``TimeLimit``).
    :param objective: order-statistic objective spec (``"cvar0.2"``, ``"mean"``, ``"max@8"``, ``"top9@10"`` ...), or
        one per reward channel, ``{"reward": "top2@4", "length": ("bot2@4", 0.4)}`` or its string
        ``"reward=top2@4 + 0.4*length=bot2@4"`` (a channel is the env reward or the episode sum of ``info[name]``,
        :mod:`ordergrad_rl.core.channels`). ``model.objective`` is the parsed, bound
        :class:`~ordergrad_rl.core.Objective` (a :class:`~ordergrad_rl.core.ChannelObjective` for channels).
    :param k: order-statistic size if the spec has no ``@K``; episodic default ``n_episodes // 2``; required in
        Q-critic mode (the number of action draws). ``mean`` has k = 1.
    :param n_episodes: episodic mode: episodes per rollout ``N`` (needs ``k < N``; any number of envs: the first
        ``N`` episodes started are kept). Default: 16 for ``"mean"`` (nothing is ranked: frequent updates win) and,
        for ranked objectives (their signal sits in part of the batch, e.g. the worst ~26 episodes of each
        128-subset for ``cvar0.2``; at least ``2 k``), the largest power of two from 32 to 256 whose episodes hold at
        most 8192 steps at the env's ``TimeLimit``: 256 up to 32 steps (and without a limit), 128 up to 64, 64 up
        to 128, 32 beyond (256 episodes of 500 steps leave a handful of updates per budget); on continuous
        actions with a time limit at most 2048 steps, SB3 PPO's rollout (since 2026-12-02: 32 episodes on the point
        navigation, where the level schedule's mean phase needs the updates: the goal reached in 10 of 10 seeds
        against 8 of 10 at 128, greedy CVaR_0.2 -4.75 against -12.0), see
        :func:`~ordergrad_rl.agents.common.arguments.ranked_n_episodes`,
        :data:`~ordergrad_rl.agents.common.arguments.RANKED_ROLLOUT_STEPS`,
        :data:`~ordergrad_rl.agents.common.arguments.TIMED_BOX_ROLLOUT_STEPS` and
        :data:`~ordergrad_rl.agents.common.arguments.LONG_RANKED_N_EPISODES` for the measurements. On long episodes
        (a ranked objective without ``k``, no groups) the first ``learn`` call halves the 32 to 16 when its
        ``total_timesteps`` holds fewer than 8 rollouts of 32 episodes at the ``TimeLimit`` (below 128k steps at 500,
        256k at 1000): twice the updates where the budget is too short for the policy to settle, the same size
        where it is not (:func:`~ordergrad_rl.agents.common.arguments.budget_n_episodes`, measured there); the
        objective's default ``k`` follows (``n_episodes // 2``), and ``model.n_episodes`` shows the size from then
        on. On short episodes with a ``TimeLimit`` (since 2026-12-05) the first ``learn`` call halves the default,
        not below 16, until ``total_timesteps`` holds 32 rollouts at the limit (at 100k steps 64 episodes on the
        lava grid and the guarded maze, 16 on a 100-step CliffWalking; the suite's 300k budgets keep theirs): more
        updates where a budget holds few (:data:`~ordergrad_rl.agents.common.arguments.SHORT_BUDGET_ROLLOUTS`,
        measured there). Pass ``n_episodes`` to keep a size at any budget (or to size a run trained in pieces,
        ``learn(..., reset_num_timesteps=False)`` in a loop, by its whole budget rather than its first piece's).
        Must stay ``None`` in Q-critic mode.
    :param advantage: ``"episodic"`` (trajectory-level weights from complete episodes, no critic) or
        ``"q_critic"`` (per-state known-regime advantages with a per-action Q critic, ``Discrete`` actions).
    :param n_envs: number of envs. ``None`` (default): for an env id, or a ``gym.Env`` made by ``gym.make`` without
        further wrappers or a render mode, whose env has a native batch (the tail-risk ids), episodic mode runs
        ``n_episodes`` envs as one NumPy batch (about ``n_episodes`` times fewer Python steps, the same episodes in
        distribution); other ids get 1 env and other env objects are used as they are. An integer builds that many
        envs from an id.
    :param learning_rate: as in SB3's PPO.
    :param n_steps: Q-critic mode: steps per env per rollout (default 2048). Not used in episodic mode (a rollout is
        ``n_episodes`` episodes); must stay ``None`` there (the error names the ``n_episodes`` that gives about as
        many steps on the env, measured from its first episodes).
    :param batch_size: minibatch size in steps. Default: episodic mode ``max(64, n_episodes)`` (a minibatch spans
        about as many episodes as the rollout holds, see
        :func:`~ordergrad_rl.agents.common.arguments.default_batch_size`);
        Q-critic mode 64 (SB3's).
    :param n_epochs: passes over the rollout per update.
    :param gamma: discount; default 1.0 (undiscounted episode return) in episodic mode, 0.99 in Q-critic mode. In
        episodic mode a ``gamma < 1`` makes the return each episode is ranked by ``sum_t gamma^t r_t``, discounted
        from its first step (README, "gamma defaults to 1.0").
    :param gae_lambda: lambda of the Q-critic mode's lambda-returns; in episodic mode the GAE lambda of the
        ``critic_when_tied`` critic (the baseline's is ``baseline_lambda``).
    :param clip_range: surrogate clipping parameter (or schedule).
    :param clip_range_vf: value clipping (no effect without a critic; clips ``Q(s, a)`` in Q-critic mode).
    :param normalize_advantage: episodic mode: divide the per-episode weights by their standard deviation (+1e-8;
        ``"group"``: each group's, ``"channel"``: each channel's in each group, see
        :meth:`~ordergrad_rl.agents.common.episodic.EpisodicAlgorithmMixin.episode_weights`; ``"running"``: by the
        root of a running mean square of the weights over the rollouts, decay
        :data:`~ordergrad_rl.agents.common.episodic.RUNNING_DECAY`); Q-critic mode: SB3's centring and scaling of
        each minibatch's advantages. ``None`` (default): ``"running"`` for a ranked objective of one pooled batch on
        episodes of at most 128 steps, else ``True``
        (:func:`~ordergrad_rl.agents.common.arguments.default_normalize_advantage`, which gives the measurements).
        A rollout's own std scales a rare costly episode's weight down to the size of
        the rollouts without one, so the many rollouts without it outweigh the few with it: on a one-step task whose
        risky action crashes with probability 0.02 (safe optimal for the mean and CVaR_0.2; 32 episodes per
        rollout) ``True`` ends on the risky action, ``"running"`` and ``False`` on the safe one
        (tests/test_noise_sampler.py). ``"running"`` on the guarded maze (10 seeds, ``reproduce benchmarks``):
        9 of 10 seeds at the CVaR optimum, greedy CVaR_0.2 -2.39 [-2.57, -2.25], against ``True``'s 7 of 10,
        -3.45 [-4.61, -2.61] (docs/benchmarks.md). A save keeps the scale it was trained with.
    :param reward_to_go: episodic mode, mean objective: credit each step with the rewards from it on, minus the
        other episodes' mean reward-to-go at the same step (unbiased, lower variance; see
        :func:`~ordergrad_rl.agents.common.advantages.reward_to_go_advantages`). ``None`` (default): on for ``"mean"``
        (k = 1), off for ranked objectives, which weight whole episodes (``True`` with one raises ``ValueError``).
    :param group_size: episodic mode: ``G`` episodes per group sharing a start context (GRPO-style groups: a
        rollout is ``n_episodes = n_groups * G`` episodes, ranked within their group; ``k < G``); ``None``
        (default): one pooled batch. The env's ``context_key`` reset option, else a shared reset seed, gives a group
        its context (README, "Groups").
    :param risk_schedule: episodic mode: soft risk, the objective moves from the mean to its target during training
        (``None``, ``"level"``, ``"mixture"``, ``"level:0.6"``, a
        :class:`~ordergrad_rl.agents.common.risk_schedules.RiskSchedule`; see
        :mod:`ordergrad_rl.agents.common.risk_schedules`). ``risk/schedule`` and ``risk/level`` log what is in force.
        Default ``None``: ``"level"`` for a lower tail with a level on long episodes and on continuous actions
        with a time limit (since 2026-12-02: the point navigation from the wall, -40.3, to the goal in 8 of 10
        seeds, -12.0, at 128 episodes per update; 10 of 10, -4.75, at the 32 that are the default there since), else
        no schedule
        (:func:`~ordergrad_rl.agents.common.risk_schedules.default_risk_schedule` gives the measurement); ``"none"`` or
        ``False``: no schedule. On short episodes (measured, ``reproduce benchmarks``): ``"level"`` took the lava grid
        from 2 to 3 of 3 seeds at the CVaR optimum (the defaults reach 10 of 10 over 10 seeds) and the guarded maze from
        -40 to -9.3 (not its optimum -2.0), but took the heavy-tail bandit from 3 of 3 seeds at the optimum to 0 of 3
        (it commits to the mean-optimal arm during the mean phase) and the portfolio's usage line from 95.2% to 89.2%
        profitable over 8 seeds. ``"mixture"`` on top of the other defaults: lava 4 of 4 seeds at the optimum, the
        portfolio 96.1% against 96.7% (seeds 0-9), the point navigation's goal reached safely in 2 of 5 seeds (0 of 5
        without), the maze's short path in 6 of 6 (-9.29; the optimum in none, against 2 of those seeds without) and the
        bandit 0 of 3, as ``"level"``. ``"mixture:0:0.1"`` (10% of the mean's rank weights throughout, ``mean_share``)
        on top of the defaults, 10 seeds: the maze 7 of 10 at the optimum (4 without), lava 5 of 10 (10 without; the
        greedy policy flips in rarely visited cells late in training, the sampled CVaR_0.2 is better, 0.59 against
        0.46), the bandit's greedy policy at the optimum but its sampled one worse (0.21 against 0.996), the point
        navigation's seeds 0 and 2 at the wall as without; on CartPole-v1, Acrobot-v1 and LunarLander-v3 (100k steps, 5
        seeds) greedy tails within 2 of the defaults' on the same seeds (LunarLander's 12 higher), and LunarLander's
        sampled one 20 lower: not a default. The exact reason (``ReturnDistribution.cvar_slope``, the envs' docstrings):
        on the maze, the bandit and the navigation the mean-optimal policy is a local maximum of CVaR_0.2 (slopes -19.9,
        -10.8 and -16.4 towards the CVaR optimum), so a schedule that reaches it in its mean phase stays there; only on
        the lava grid is the slope positive (+5.0). ``"level"`` on long episodes alone, first measured before
        ``entropy_by_untied_share``: CartPole-v1 at 300k broke (10 seeds, 499.4 / 466.4 -> 481.0 / 394.9: solved in the
        mean phase, it trained on tied rollouts until a late chance failure's update broke it, docs/benchmarks.md);
        with that rule it is the long-episode default.
    :param untie_tail: episodic mode: when time-outs (episodes truncated, not terminated) tied at a rollout's lowest
        return fill a lower-tail objective's tail, train that rollout at the level that reaches past the tie,
        ``l' = f + l`` for a share ``f >= l`` of tied time-outs (the mean if ``l' >= 1``;
        :func:`~ordergrad_rl.agents.common.risk_schedules.untied`). Such a tail ranks nothing: CVaR_0.2 of 32
        episodes of which 20 time out gives every episode a zero weight, whatever the other 12 did, so the policy
        never moves toward the episodes that succeed (blindness to success). Applies to CVaR, GCVaR, ``bot``,
        ``min`` and quantiles below the median; ``risk/tied`` logs the share of tied time-outs, ``risk/level`` the
        level trained at. Ties of terminated episodes are ranked as they are (a sure arm's payoff) unless they are the
        floor, the lowest return seen in training (since 2026-12-05): a binary success, as on slippery
        FrozenLake8x8, fails at 0 every time, and CVaR_0.2 ranks nothing until the success rate passes 0.8. Measured
        there (outside the suite, 300k steps, exact scores): without the floor the usage line learned nothing in 3
        of 3 seeds (greedy success 0.0-2.6%); with it, seeds 0-9 reach a greedy success of 66.5% and CVaR_0.2 0.126,
        SB3 PPO 73.3% and 0.149 (paired -0.02 [-0.17, 0.14]). No rollout of the suite's tasks changes (24 runs,
        ``scripts/check_floor_rule.py``; docs/benchmarks.md, "Terminated ties at the floor"). Continuous returns (the
        portfolio, LunarLander) never tie: they train exactly as without it. A tie of time-outs that is
        not the minimum but holds the value at risk, with a few worse episodes below (a costly event) and better ones
        above, trains ``0.9 * target + 0.1 * mean`` instead
        (:func:`~ordergrad_rl.agents.common.risk_schedules.tie_holds_var`; ``risk/tie_at_var`` logs 1): the tail
        keeps ranking the costly episodes and the mean's share ranks the successes above the tie (moving the level
        past it reached the mean and took the guarded maze to its mean-optimal short path).
        Measured (``reproduce benchmarks``, 10 seeds, against the
        rule at the minimum only, the same seeds): the guarded maze 4 -> 7 of 10 seeds at its CVaR optimum (every
        seed reaches it during training, against 7; the three that end off it flip late, which a learning rate
        decayed to 0 does not cure: docs/benchmarks.md),
        lava 10 of 10 bit for bit as before (the rule never fired there); the bandit, CartPole-v1, Acrobot-v1,
        LunarLander-v3, the portfolio and the point navigation never have such a tie (one step; a time limit at the
        best or the lowest return; returns that never tie; the navigation's seed 0, rerun, was bit for bit the
        stored run). A save from before this rule resumes without it. With ``group_size`` the rule reads each group's
        own returns, as a group's objective is its own (since 2026-12-07; before, the pooled rollout's, whose ties
        moved every group's level): a group whose tail ties trains at the level past its tie, the others at the
        target; a floor is the lowest return seen in training, this rollout's other groups included. ``risk/level``
        then logs the mean level over the groups (of those trained at a level), ``risk/tied`` the share of episodes
        tied at their group's lowest return and ``risk/tie_at_var`` the share of groups trained at the mixture (no
        task of the suite has groups).
        Default ``True`` (measured, ``reproduce benchmarks``, against ``untie_tail=False`` on the same seeds, both
        before the entropy default, at ``ent_coef=0.0``):
        Acrobot-v1 (5 seeds, 100k steps) worst-20% mean -395.5 -> -355.9 greedy, -465.7 -> -331.5 sampled; the
        guarded maze 5 of 10 seeds at its CVaR optimum (without it 0 of 2, never the goal); lava (5 seeds),
        CartPole-v1 (5) and the heavy-tail bandit (3) bit for bit unchanged (no tail of tied time-outs arose).
    :param noise_sampler: episodic mode: CeSoR's cross-entropy sampler for an env that exposes its noise
        (:mod:`ordergrad_rl.envs.noise`: ``GuardedMaze-v0``'s guard, ``RiskyShortcutNav``'s crash): the env's events
        are drawn with probabilities fitted to the return's lower tail, every episode carries its likelihood ratio,
        and the objective is estimated on the weighted batch (:mod:`~ordergrad_rl.agents.common.noise_sampler`,
        :func:`~ordergrad_rl.core.weighted.weighted_lstat_advantage`).
        Needs a lower-tail objective with a level, one pooled batch and one channel; ``risk/noise/<event>`` logs the
        sampler's probabilities, ``risk/noise_ess`` the weighted batch's effective size. Default ``None``: on where
        the env exposes its noise and the objective admits the sampler, else off (``hparams()["noise_sampler"]``
        says which); an env without the noise API trains as before. Measured (``reproduce benchmarks``, 300k steps,
        ``og-cvar-noise`` against the usage line without it, ``og-cvar-history``, on the same 24 seeds): the guarded
        maze 24 of 24 at the CVaR optimum against 21 of 24 (the three misses, -40.0, -4.93 and -4.90, end at -2.09,
        -2.08 and -2.09), greedy CVaR_0.2 -2.09 [-2.13, -2.05] against -3.94 [-7.18, -2.13], sampled -2.73 [-2.91,
        -2.59] against -6.23 [-10.77, -2.97] (better in 15 of 24 seeds, paired Wilcoxon p = 0.05), at the optimum
        from a median 135k steps against 150k; the point navigation (10 seeds, its crash exposed) at the wall either
        way, 0 of 10 at the optimum, greedy -40.3 against -37.5 (one seed reaches the goal, -12.0, against two) and
        sampled -41.5 against -41.7. No other task of the suite exposes its noise. Under a level schedule the
        sampler fits the level in force, not the target's (``_noise_level``; since 2026-12-02): fitted to the
        target's tail from the start, it draws the navigation's crash at up to its 50% cap (reached within 25k steps
        in a probe without a schedule) while the mean phase is learning to cross, and the usage line with its new
        schedule default reached the goal in 7 of 10 seeds (-15.6) against 8 of 10 (-12.0) with the fit at the level
        in force (the same seeds). OrderGradREINFORCE has the same default (since 2026-12-01, with its 32-episode
        rollouts: see its docstring), and so have the recurrent and maskable variants (since 2026-12-01).
    :param drift_when_blind: episodic mode: a rollout blind to success (every episode's return the same and no
        other return seen yet, e.g. every Acrobot-v1 episode timed out) gets random zero-mean episode weights, a
        random step in policy space, instead of none (:meth:`_explore_if_blind`). It acts on no rollout of the
        suite's small tasks, CartPole-v1 or LunarLander-v3 (their returns differ from the first rollout on).
        Default ``False``: measured worse (``reproduce benchmarks``, Acrobot-v1, 100k steps, 10 seeds, worst-20%
        mean of 100 evaluation returns, greedy / sampled, against the same seeds without it): at the default 32
        episodes (``og-cvar-drift``) it acted on 7 seeds and left three at -500 where the usage line left one,
        -225.1 / -242.3 against -152.0 / -219.9; at 16 episodes (``og-cvar-n16-drift``) -166.8 / -218.8 against
        -181.0 / -229.2 (seeds 3 and 5 at -500 without it; seed 1 at -500 and seed 9 at -242.4 / -500 with it).
        Its weights replace the history baseline's terms on such a
        rollout, which already explore (``value_baseline``). ``True`` with ``novelty_when_blind=True`` raises
        ``ValueError``.
    :param novelty_when_blind: episodic mode: a rollout blind to success (as for ``drift_when_blind``) gets its
        episodes' novelty as their weights, standardized: how far each episode's states went from the rollout's
        average state (:mod:`~ordergrad_rl.agents.common.novelty`; count-based on one-hot observations), a step
        towards the behaviours that reach new states until one of them ends differently (:meth:`_explore_if_blind`;
        ``train/blind_novelty`` logs 1 on a rollout it acts on). Chance first: it acts once
        :data:`~ordergrad_rl.agents.common.novelty.BLIND_PATIENCE_EPISODES` (96) tied episodes have been trained
        without a success (since 2026-12-03; the count is saved, so a resumed run waits as an uninterrupted one). It
        acts on no rollout of the suite's small tasks, CartPole-v1 or LunarLander-v3. Default ``None``: on for a
        ranked objective unless ``drift_when_blind``
        (:func:`~ordergrad_rl.agents.common.arguments.default_novelty_when_blind`, with the measurement: Acrobot-v1
        at 100k steps from -148.6 / -212.4 to -111.1 / -190.9, worst-20% mean greedy / sampled over 10 seeds, the
        seed that never swung up at -124.5 instead of -500, the other nine bit for bit as without it; at 300k
        -112.7 / -134.7 against -106.9 / -134.3; MountainCar-v0, outside the suite, from -200 in every episode to the
        flag in two of three seeds). A save from before it loads without it.
    :param novelty_phase: episodic mode: the share of training, in ``[0, 1]``, whose rollouts train on their
        episodes' standardized novelty (as ``novelty_when_blind``'s weights) instead of their advantages, whatever
        they rank: directed exploration first, the objective after (``train/novelty_phase`` logs 1 while it acts). It
        counts training's progress as ``risk_schedule`` does, so a resumed ``learn(..., reset_num_timesteps=False)``
        goes on where it was, and a risk schedule runs on through it. Default 0.0 (none), measured at 0.15 (300k
        steps, 10 seeds; docs/benchmarks.md, "The novelty phase as an option"): with ``risk_schedule="none"`` the
        point navigation went from the risky shortcut (exact greedy CVaR_0.2 -3.66) to the safe detour in 10 of 10
        seeds (-0.50), and the lava grid and the guarded maze reached their optima sooner (median 75k and 82.5k steps
        against 112.5k and 135k) with the same final tails; but on Pendulum-v1 at 100 steps (3 seeds, outside the
        suite) the phase without the level schedule lost (-348.8 against -273.0), and with it the navigation lost 2
        seeds short of the goal, so no default has it.
    :param value_baseline: episodic mode: per-step credit for a ranked objective. The value head learns the expected
        episode weight from each state, ``V(s) ~ E[w | s]`` (trained on the weights as its returns), and each step's
        advantage is ``w_i - V(s_t)`` (at ``baseline_lambda=1``; the default 0.95 takes lambda-returns, below): a
        baseline of the state alone, so the estimator stays unbiased, and steps after
        the episode's fate is decided get less credit (lower variance on long episodes). Needs the value head
        (``policy_kwargs`` without ``critic="none"``). ``"history"``: a baseline of the history instead,
        ``b(s_t, t, G_<t)`` with ``G_<t`` the return collected before step ``t``
        (:class:`~ordergrad_rl.agents.common.history_baseline.HistoryBaseline`, its own small network, saved with the
        model; no value head needed; ``train/baseline_loss`` logs its fit, ``train/baseline_explained_variance`` how
        much of each rollout's weight variance its prediction, made before that rollout, explains): what decides an
        episode's rank at step ``t`` is the state *and* what the episode has collected so far (Bauerle and Ott's
        augmented state for CVaR), which ``V(s_t)`` cannot see.
        Unbiased too: ``t`` and ``G_<t`` are known before ``a_t`` is drawn. A rollout whose returns all tie has every
        weight zero, and the baseline's terms, zero only in expectation, would be its whole update. Tied at the
        bottom (every episode timed out, nothing better seen) it keeps them: there the noise explores (dropping them
        took Acrobot-v1 at 100k steps from -150.5 to -206.5, worst-20% greedy mean over 10 seeds, two never swinging
        up; docs/measurements/tied_rollout_baseline_probe.json). Tied at the best return seen (a solved CartPole-v1:
        every episode at the limit) it trains on zero advantages, or on the critic's with ``critic_when_tied`` (below):
        there the baseline's noise moves a converged policy. Measured
        (``reproduce benchmarks``, CartPole-v1, 300k steps, 10 seeds, against keeping the terms): worst-20% greedy
        mean 482.6 -> 499.4 and sampled 438.4 -> 466.4; the three runs that had collapsed (sampled 358.8, 369.8 and
        174.1, greedy 326.3 in the last) end at 500, 500 and 421.3 (greedy 493.7), while seeds 0-3 and 5 and 9 lose
        2 to 74 sampled (500, 500, 500, 481.4, 500, 500 -> 458.1, 498.2, 439.5, 407.6, 478.0, 461.1). No other task
        of the suite ties a whole rollout at the best.
        Default ``None`` (:func:`~ordergrad_rl.agents.common.arguments.default_value_baseline`): ``"history"`` for a
        ranked objective on long episodes (the env's ``TimeLimit`` exceeds 128 steps,
        :func:`~ordergrad_rl.agents.common.arguments.long_episodes`); on short episodes, for a ranked objective of
        one pooled batch, ``"history"`` on categorical actions (the guarded maze's sampled tail better in 22 of 24
        seeds, the same share at the CVaR optimum within one seed; slippery CliffWalking-v1 greedy -120 against
        -220) and on continuous actions with a time limit (since 2026-12-02; ``True`` before: Pendulum-v1 with a
        100-step limit from -565.6 to -273.6, SB3 PPO -306.6, the point navigation even), ``True`` for a ranked
        objective on other continuous (``Box``) actions with a learned log-std (the portfolio; see
        :func:`~ordergrad_rl.agents.common.arguments.default_value_baseline`), else off. Measured (``reproduce
        benchmarks``, 100k steps, 32 episodes per update, worst-20% mean of 100 greedy evaluation returns, the same
        seeds; ``og-cvar-lambda1`` against ``og-cvar-state``, both at ``baseline_lambda=1``): against ``True`` the
        history baseline took CartPole-v1 from
        435.1 to 465.0 (10 seeds) and Acrobot-v1 from -263.0 to -182.4 (10 seeds; 9 of 10 swing up, against 7),
        and left LunarLander-v3 even (-202.4 -> -209.3, 5 seeds); the sampled policies measured the other way on
        CartPole (366.4 -> 349.9) and Acrobot (-260.3 -> -304.0) and better on LunarLander (-66.6 -> -56.5).
        ``True`` itself had taken CartPole-v1 from 262 to 494 over no baseline (2 seeds) and Acrobot-v1 from -500 to
        -355. On short episodes, at the 256-episode default: the portfolio's usage line (continuous actions,
        ``scripts/measure_schedule_portfolio.py``, 20 seeds) is 95.0% profitable without a baseline (lowest seed
        86.7%) and 96.0% with ``True`` (lowest 92.6%), whose per-step credit lets the Gaussian's log-std shrink
        (``"history"``: 94.8%, 10 seeds); the lava grid (categorical) 2 of 5 seeds at the CVaR optimum with ``True``
        against 4 of 5, so categorical actions take the history baseline instead.
    :param baseline_lambda: episodic mode with a per-step baseline: the ``lambda`` of the episode weight's
        lambda-returns over the baseline, ``A_t = sum_u lambda^(u-t) delta_u`` with ``delta_u = b_{u+1} - b_u`` and
        ``w - b_T`` at the last step (GAE with the weight as the episode's final reward,
        :func:`~ordergrad_rl.agents.common.advantages.lambda_advantages`). ``1.0`` gives ``w - b_t``, the unbiased
        estimator; below 1 a step's credit leans on the baseline's later predictions rather than on the episode's
        own outcome, less variance for a bias of the baseline's error (PPO's trade with ``gae_lambda``). Default
        ``None``: :data:`~ordergrad_rl.agents.common.arguments.BASELINE_LAMBDA` (0.95, SB3's ``gae_lambda``) where a
        baseline is on (see there for the measurements); a value given without a baseline raises ``ValueError``.
    :param critic_when_tied: episodic mode: on a rollout whose episodes all return the best return seen (every
        weight of a ranked objective zero, so no gradient: CartPole-v1 at its 500-step limit), train on the GAE
        advantages of a discounted critic, the value head fitted in every rollout's update (its minibatches,
        ``vf_coef``) to the per-step rewards' GAE returns (discount 0.99, ``gae_lambda``), as SB3's PPO sharpens a
        solved policy on its critic; every other rollout trains as without it
        (:mod:`~ordergrad_rl.agents.common.tied_critic`). ``train/tied_critic`` logs 1 on the rollouts it trains,
        ``train/value_loss`` and ``train/explained_variance`` the critic. Default ``None``
        (:func:`~ordergrad_rl.agents.common.arguments.default_critic_when_tied`, which gives the measurement): on for
        a ranked objective where the value head is free (not ``value_baseline=True``, not ``critic="none"``);
        ``True`` there raises ``ValueError``.
    :param ent_coef: entropy coefficient, or a schedule of ``progress_remaining`` (a callable, SB3's convention for
        ``learning_rate``; episodic mode evaluates it at each update, ``train/ent_coef`` logs the value). Default
        ``None``: 0.01 for a ranked objective on categorical actions (``Discrete``, ``MultiDiscrete``,
        ``MultiBinary``; 0.03 relative with ``relative_ent_coef``), else SB3's 0.0
        (:func:`~ordergrad_rl.agents.common.arguments.default_ent_coef`); on short episodes the 0.01 is held over the
        first 60% of training and then decayed linearly to 0, which sharpens the sampled policy's tail (the lava grid,
        the maze, the bandit: :data:`~ordergrad_rl.agents.common.arguments.SHORT_RANKED_ENT_COEF`). The
        tail's gradient drives the probability of a move that the batch's tail does not reward to zero, and once no
        batch samples that move nothing brings it back (exploration collapse). Measured across the suite (the lava
        grid 8 -> 10 of 10 seeds at the CVaR optimum, Acrobot-v1 better, CartPole-v1 and the bandit even, the maze
        and LunarLander-v3 worse): see :data:`~ordergrad_rl.agents.common.arguments.RANKED_ENT_COEF`. On long
        episodes a rollout partly tied at the best return gets the bonus in proportion to its other episodes (see
        ``entropy_when_tied``).
    :param entropy_plateau: episodic mode: decay the entropy bonus while the episode returns stop improving, and
        never restore it (:mod:`~ordergrad_rl.agents.common.entropy_plateau`): after each rollout a one-sided
        Mann-Whitney test of the last 3 rollouts' returns against the 3 before; where they do not rank above them
        (p >= 0.5), the bonus's scale falls by the rollout's steps over a tenth of the budget
        (``train/entropy_scale`` logs it). ``True``: those settings; a dict of settings
        (``{"p_value": 0.1}``, the form the YAML files hold) or an
        :class:`~ordergrad_rl.agents.common.entropy_plateau.EntropyPlateau`: its own; ``False``: the bonus as
        ``ent_coef`` gives it. Default ``None``: on where the long-episode defaults give the constant 0.01
        (:func:`~ordergrad_rl.agents.common.arguments.default_entropy_plateau`, measured there), else off. A save
        from before it loads without it.
    :param relative_ent_coef: episodic mode: weigh the entropy bonus against the policy gradient's scale, as SB3's
        PPO does by normalizing each minibatch's advantages to unit scale before adding it: each update's
        coefficient is ``ent_coef`` times the root mean square of the rollout's per-step advantages (1.0 where every
        episode weight is zero: nothing ranked, the bonus all that moves the policy); ``train/ent_coef`` logs it.
        With ``ent_coef=None`` a ranked objective on categorical actions then gets
        :data:`~ordergrad_rl.agents.common.arguments.RELATIVE_RANKED_ENT_COEF` (0.03). The advantages' scale differs
        between tasks (a median 0.27-0.46 on the lava grid, CartPole-v1, Acrobot-v1, LunarLander-v3 and slippery
        CliffWalking; 0.066 on the guarded maze: ``scripts/measure_advantage_scale.py``), so a fixed coefficient
        weighs about six times more on the maze than on the lava grid. Default ``False``, measured (2026-12-02,
        ``reproduce benchmarks``, ``og-cvar-entrel`` against the usage line, the same seeds 0-9): both reach the
        lava grid's and the maze's CVaR optimum in 10 of 10 seeds, the relative bonus sooner (a median 82,500 steps
        against 112,500 and 90,000 against 135,000), but its sampled tails are lower (lava 0.584 against 0.880,
        lower in 8 of 10 seeds: later in training lava's advantages' scale exceeds 0.33, so the relative bonus is
        the larger there; the maze -2.929 against -2.680), and on Acrobot-v1 at 100k steps its greedy tail is lower
        (-170.0 against -148.6, worst-20% mean of 100 returns; docs/benchmarks.md, "Why no single coefficient served
        both").
    :param entropy_when_tied: episodic mode: keep the entropy bonus on a rollout whose returns all tie at the best
        return seen in training, some earlier episode having done worse (every episode at the time limit of a solved
        task: every weight is zero, nothing is ranked). Default ``False``: such a rollout is updated without the bonus
        (``train/ent_coef`` logs the coefficient in force). The bonus counters the tail's gradient; with none, it is
        the whole update and flattens a converged policy until failures come back. A tie at the bottom (every episode
        timed out, nothing better seen) keeps the bonus: there it is all that explores.
        Measured (``reproduce benchmarks``, against ``True``, the behaviour before, on the same seeds): CartPole-v1
        at 300k steps (seeds 0-4; 3 to 10 of each run's 32-34 rollouts tied at 500) sampled worst-20% mean 394.0 ->
        468.0 (seeds 0-3 at 481-500, seed 4 from 500 to 358.8), greedy 500 in both. A first version that also left
        the bonus out of ties at the bottom kept Acrobot-v1's seed 4 at -500 for 100k steps (-123.4 with it). Lava, the
        maze, the bandit, LunarLander-v3 and the portfolio never tie a whole rollout and train as before.
        A save from before this argument loads with ``True``, as it was trained. On long episodes (the long-episode
        defaults' rule) a rollout *partly* tied at the best return gets the bonus times the share of its other
        episodes (``entropy_by_untied_share``; 31 of 32 CartPole episodes at 500: 1/32 of it): the tail's gradient
        then comes from the one failure while a full bonus on every step held the solved policy stochastic.
        Measured (``reproduce benchmarks``, against the usage line before it, the same seeds): CartPole-v1 at 300k
        steps (10 seeds) sampled worst-20% mean 466.4 -> 496.2 (9 seeds at 500), greedy 499.4 -> 498.1; the rest in
        docs/benchmarks.md ("The entropy bonus on rollouts partly tied at the best"). A save from before it resumes
        without.
    :param log_std_step: episodic mode, ``Box`` actions with SB3's diagonal Gaussian (no gSDE): fit the log-std
        outside the clipped surrogate, which can mute its update (the steps that carry the std's signal, far from the
        mean, leave the clip range first). A number ``delta > 0``: the log-std is frozen in SB3's clipped pass (the
        mean trains through it unchanged), then fitted for ``n_epochs`` passes over the same rollout's minibatches with
        the unclipped surrogate ``-A exp(log N(a; mu_old(s), sigma) - log N(a; mu_old(s), sigma_old))`` (the rollout's
        means, detached) plus the entropy bonus in force, each dimension projected within ``+-delta`` of its value at
        the update's start after every step (:mod:`~ordergrad_rl.agents.common.log_std_fit`; ``log(1 + clip_range)``
        is the move the clip allows nominally). The fit runs its ``n_epochs`` where ``target_kl`` stopped SB3's pass
        early, and takes the policy's Adam steps at the learning rate in force: at SB3's 3e-4 an update of ``M``
        minibatches moves a log-std by at most about ``3e-4 * M * n_epochs``, below ``delta`` on short rollouts.
        ``train/std`` logs the std after the fit, ``train/log_std_change`` the update's mean change of the log-std and
        ``train/log_std_at_bound`` the share of dimensions at the bound. Default ``None``: off, SB3's update. Measured
        at ``log(1.2)`` (docs/benchmarks.md, "The log-std fitted outside the clip"): MountainCarContinuous-v0's
        sampled worst-20% return -20.37 -> -11.88 at 100k steps, but the point navigation's detour configuration
        greedy CVaR_0.2 -0.2 -> -8.6, Pendulum-v1 and the portfolio without a direction: not a default. A save from
        before it loads with it off.
    :param vf_coef: value (Q-critic mode: Q; ``value_baseline``: the baseline's) loss coefficient.
    :param max_grad_norm: gradient-norm clipping threshold.
    :param use_sde: gSDE exploration, as in SB3.
    :param sde_sample_freq: episodic mode: every episode starts with a new gSDE matrix (SB3 keeps one for the whole
        rollout), so that a rollout's episodes are independent draws of the policy, as the estimator needs; ``n > 0``
        also resamples every env's matrix every ``n`` steps counted from the rollout's start, as SB3 counts them (not
        from each episode's start), -1 never. Q-critic mode: SB3's (-1: once per rollout).
    :param rollout_buffer_class: a subclass of :class:`~ordergrad_rl.agents.common.buffers.EpisodicRolloutBuffer`
        (Q-critic mode: of SB3's ``RolloutBuffer``).
    :param rollout_buffer_kwargs: extra keyword arguments of the buffer.
    :param target_kl: early-stop an update when the approximate KL exceeds 1.5 x this.
    :param stats_window_size: episodes averaged by ``rollout/ep_rew_mean`` and ``rollout/ep_len_mean``.
    :param tensorboard_log: TensorBoard log dir (``risk/*`` dashboards, see
        :mod:`ordergrad_rl.agents.common.risk_logging`).
    :param policy_kwargs: keyword arguments of the policy (see :mod:`ordergrad_rl.agents.common.policies`).
    :param verbose: 0 silent, 1 info, 2 debug.
    :param seed: random seed. Unlike SB3's algorithms, which reset an env id's env unseeded, an id without a native
        batch becomes SB3's ``make_vec_env(id, n_envs, seed)``: with ``seed=None`` it draws the envs' seeds from
        NumPy's global generator (one draw at construction).
    :param device: torch device.
    :param _init_setup_model: build the networks at construction.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES
    #: The constructor's signature, set below the class (``inspect.signature`` would read ``__new__``'s).
    __signature__: ClassVar[inspect.Signature]
    #: ``"q_critic"`` constructs an :class:`~ordergrad_rl.agents.OrderGradQCriticPPO` (see ``__new__``).
    advantages: tuple[str, ...] = (EPISODIC, Q_CRITIC)
    default_short_ranked_ent_coef = SHORT_RANKED_ENT_COEF
    budget_sized_rollouts = True
    rollout_buffer: EpisodicRolloutBuffer  # type: ignore[assignment]

    def __init__(
        self,
        policy: str | type[ActorCriticPolicy],
        env: AgentEnv | str,
        objective: AnyObjective = DEFAULT_OBJECTIVE,
        k: int | None = None,
        n_episodes: int | None = None,
        advantage: str = "episodic",
        n_envs: int | None = None,
        learning_rate: float | Schedule = 3e-4,
        n_steps: int | None = None,
        batch_size: int | None = None,
        n_epochs: int = 10,
        gamma: float | None = None,
        gae_lambda: float = 0.95,
        clip_range: float | Schedule = 0.2,
        clip_range_vf: float | Schedule | None = None,
        normalize_advantage: bool | Literal["group", "channel", "running"] | None = None,
        reward_to_go: bool | None = None,
        group_size: int | None = None,
        risk_schedule: RiskScheduleLike = None,
        untie_tail: bool = True,
        noise_sampler: bool | None = None,
        drift_when_blind: bool = False,
        novelty_when_blind: bool | None = None,
        novelty_phase: float = 0.0,
        value_baseline: bool | Literal["history"] | None = None,
        baseline_lambda: float | None = None,
        critic_when_tied: bool | None = None,
        ent_coef: float | Schedule | None = None,
        entropy_when_tied: bool = False,
        relative_ent_coef: bool = False,
        entropy_plateau: bool | EntropyPlateau | dict[str, Any] | None = None,
        log_std_step: float | None = None,
        vf_coef: float = 0.5,
        max_grad_norm: float = 0.5,
        use_sde: bool = False,
        sde_sample_freq: int = -1,
        rollout_buffer_class: type[EpisodicRolloutBuffer] | None = None,
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
        check_env_given(type(self).__name__, env, _init_setup_model)
        check_advantage(advantage, self.advantages)
        if advantage == Q_CRITIC:  # OrderGradPPO(...) builds an OrderGradQCriticPPO (__new__); a subclass cannot
            raise ValueError(
                f"advantage='q_critic' is the algorithm OrderGradQCriticPPO: {type(self).__name__} subclasses "
                "OrderGradPPO (episodic); subclass ordergrad_rl.agents.OrderGradQCriticPPO instead"
            )
        check_ppo_arguments(
            learning_rate,
            gamma,
            ent_coef,
            max_grad_norm,
            policy_kwargs,
            n_epochs,
            clip_range,
            target_kl,
            vf_coef,
            gae_lambda,
            clip_range_vf,
        )
        if n_steps is not None:
            raise n_steps_error(type(self).__name__, n_steps, env, n_envs)
        self._check_value_baseline(value_baseline)
        # Before SB3's constructor, whose _setup_model checks it against the policy it builds (as at load).
        self.log_std_step = check_log_std_step(log_std_step)
        long, limit = self._init_episodic_algorithm(
            super().__init__, policy, env, objective, k, n_episodes, n_envs, seed, normalize_advantage, reward_to_go,
            group_size, risk_schedule=risk_schedule, untie_tail=untie_tail, entropy_when_tied=entropy_when_tied,
            noise_sampler=noise_sampler, drift_when_blind=drift_when_blind, relative_ent_coef=relative_ent_coef,
            novelty_when_blind=novelty_when_blind,
            novelty_phase=novelty_phase, entropy_plateau=entropy_plateau,
            long_episode_defaults=True,
            batch_size=batch_size, learning_rate=learning_rate, n_epochs=n_epochs,
            gamma=gamma, gae_lambda=gae_lambda, clip_range=clip_range,
            clip_range_vf=clip_range_vf, ent_coef=ent_coef,
            vf_coef=vf_coef, max_grad_norm=max_grad_norm, use_sde=use_sde, sde_sample_freq=sde_sample_freq,
            rollout_buffer_class=rollout_buffer_class, rollout_buffer_kwargs=rollout_buffer_kwargs,
            target_kl=target_kl, stats_window_size=stats_window_size, tensorboard_log=tensorboard_log,
            policy_kwargs=policy_kwargs, verbose=verbose, device=device,
        )  # fmt: skip
        check_value_head(value_baseline, policy_kwargs)
        default = self._default_value_baseline(long, policy_kwargs, limit)
        self._init_value_baseline(value_baseline, baseline_lambda, default)
        self._init_critic_when_tied(critic_when_tied, policy_kwargs)
        self.relative_ent_coef = relative_ent_coef
        # The default bonus of a ranked objective, relative (SB3's load builds without an env, ent_coef still None
        # here: the save's values follow).
        if relative_ent_coef and ent_coef is None and self.ent_coef not in (None, 0.0):
            self.ent_coef = RELATIVE_RANKED_ENT_COEF
        if _init_setup_model:
            self._setup_model()

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """``OrderGradPPO(..., advantage="q_critic")`` is an :class:`~ordergrad_rl.agents.OrderGradQCriticPPO`
        (the Q-critic algorithm, its own class since release 0.2); any other ``advantage`` an OrderGradPPO."""
        advantage = kwargs.get("advantage", args[5] if len(args) > 5 else EPISODIC)
        if cls is OrderGradPPO and advantage == Q_CRITIC:
            mine, q_critic = (set(inspect.signature(c).parameters) for c in (OrderGradPPO, OrderGradQCriticPPO))
            episodic_only = sorted(set(kwargs) & mine - q_critic)
            if episodic_only:  # else Python's "unexpected keyword argument" from a class the user did not name
                raise ValueError(
                    f"{', '.join(episodic_only)}: an argument of OrderGradPPO's episodic mode only; "
                    "advantage='q_critic' (OrderGradQCriticPPO) does not take it"
                )
            if len(args) < 3:  # OrderGradPPO's default objective, not OrderGradQCriticPPO's
                kwargs.setdefault("objective", DEFAULT_OBJECTIVE)
            return OrderGradQCriticPPO(*args, **kwargs)
        return super().__new__(cls)

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
        """SB3's ``load`` of an OrderGradPPO save (see :meth:`OrderGradAlgorithmMixin.load`); a save of the Q-critic
        algorithm (``advantage="q_critic"``) loads as the :class:`~ordergrad_rl.agents.OrderGradQCriticPPO` it is.
        Type checkers read the class it is called on, as for the constructor (``OrderGradPPO(...,
        advantage="q_critic")``) and SB3's ``PPO.load``: call ``OrderGradQCriticPPO.load`` for that class's type.

        :raises ValueError: a file of another algorithm, or a saved objective that is not a valid spec.
        """
        kwargs = {**kwargs, **sb3_load_options(custom_objects, print_system_info, force_reset)}
        data = read_saved_data(path)
        if cls is OrderGradPPO and data.get("advantage") == Q_CRITIC:
            return OrderGradQCriticPPO.load(path, env=env, device=device, **kwargs)  # type: ignore[return-value]
        return super().load(path, env=env, device=device, **kwargs)

    def hparams(self) -> dict[str, Any]:
        step = getattr(self, "log_std_step", None)  # absent from saves before it
        return {**super().hparams(), "log_std_step": "none" if step is None else step}

    def _setup_model(self) -> None:
        super()._setup_model()
        # Where the policy is built, at construction and at SB3's load (a log_std_step given to load).
        check_log_std_policy(getattr(self, "log_std_step", None), self.policy)  # absent from saves before it

    def train(self) -> None:
        """SB3's PPO update on the episode weights; the value head runs in it only as the ``value_baseline=True`` or
        the ``critic_when_tied`` critic. With ``log_std_step`` the log-std is left out of it and fitted after it
        (:meth:`_train_with_log_std_fit`)."""
        update = super().train
        if getattr(self, "log_std_step", None) is not None:  # absent from saves before it
            sb3_update = update

            def update() -> None:
                self._train_with_log_std_fit(sb3_update)

        if getattr(self, "value_baseline", False) is True:
            train_on_episode_weights(self, update, critic=True)
            return
        self._train_on_weights(update, value_head_unused(self.policy))

    def _train_with_log_std_fit(self, update: Callable[[], None]) -> None:
        """SB3's ``update`` with the log-std frozen, then the log-std fitted on the same rollout within
        ``+-log_std_step`` of its value at the start (:func:`~ordergrad_rl.agents.common.log_std_fit.fit_log_std`;
        run inside :func:`~ordergrad_rl.agents.common.episodic.train_on_episode_weights`, so ``ent_coef`` is the
        rollout's)."""
        log_std = self.policy.log_std
        means = rollout_means(self.policy, self.rollout_buffer)  # before the mean moves
        start = log_std.detach().clone()
        log_std.requires_grad_(False)
        try:
            update()
        finally:
            log_std.requires_grad_(True)
        delta = float(self.log_std_step)  # type: ignore[arg-type]
        fit_log_std(
            self.policy, self.rollout_buffer, means, start, delta, self.n_epochs, self.batch_size,
            float(self.ent_coef), self.max_grad_norm,  # type: ignore[arg-type]
        )  # fmt: skip
        self.logger.record("train/std", th.exp(log_std).mean().item())  # SB3's, logged before the fit
        self.logger.record("train/log_std_change", (log_std.detach() - start).mean().item())
        self.logger.record("train/log_std_at_bound", log_std_bound_share(log_std, start, delta))


# inspect.signature(OrderGradPPO) would read __new__'s (*args, **kwargs); the constructor's arguments are __init__'s
# (the hyperparameter parsers read them).
OrderGradPPO.__signature__ = inspect.signature(OrderGradPPO.__init__).replace(
    parameters=list(inspect.signature(OrderGradPPO.__init__).parameters.values())[1:]
)
