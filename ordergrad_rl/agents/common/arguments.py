"""Constructor arguments of the OrderGrad agents: defaults and checks, run before SB3 sees the values, so that a
bad argument raises a ``ValueError`` naming it instead of failing deep inside SB3 or torch later.

* :func:`check_common_arguments` (every algorithm) and :func:`check_ppo_arguments` (the PPO family);
* the episodic sizes: :func:`default_n_episodes`, :func:`default_batch_size`, :func:`episodic_sizes`;
* :func:`check_advantage`, :func:`check_buffer_class`, :func:`check_policy_kwargs`, :func:`check_squash_output`;
* :func:`resolve_baseline_lambda` (OrderGradPPO's ``baseline_lambda``).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.utils import LinearSchedule

from ordergrad_rl.agents.common.advantages import NORMALIZE_MODES, RUNNING
from ordergrad_rl.agents.common.history_baseline import HISTORY
from ordergrad_rl.common.arguments import check_float, check_int, check_number, check_schedule, check_seed
from ordergrad_rl.common.schedules import HeldLinearSchedule
from ordergrad_rl.core import ChannelObjective, Objective

#: Default episodes per rollout for the mean (measured): the mean ranks nothing, so every episode carries signal and
#: frequent updates win. OrderGradPPO (issue 9): CartPole-v1 solved in about SB3 PPO's steps at 16, several times
#: more steps at 64. OrderGradREINFORCE (scripts/measure_reinforce_defaults.py, 3 seeds, equal env steps): CartPole
#: 499 / 468 / 141 and RiskyLavaGrid 4.00 / 3.83 / 3.45 at N = 16 / 64 / 256, ties on the bandit and tail-risk.
MEAN_N_EPISODES = 16
#: ... and for a ranked objective: its signal sits in part of the batch (cvar0.2@128: the worst ~26 of each
#: 128-subset), which must hold enough episodes: the paper's tail-risk batch (measured: 87% profitable deployments
#: at 64 episodes, 95-96% at 256). OrderGradPPO: on envs without a limit or with at most 32 steps
#: (:func:`ranked_n_episodes`).
RANKED_N_EPISODES = 256
#: OrderGradPPO on long episodes (an env whose ``TimeLimit`` exceeds :data:`LONG_EPISODE_STEPS`): 256 episodes of up
#: to 500 steps are 128k steps per update, a handful of updates per budget, so a ranked objective gets 32 episodes
#: per update and a per-step baseline instead (now the history baseline, which measured better than the value
#: baseline: OrderGradPPO's ``value_baseline``). Measured with the value baseline (``reproduce benchmarks``, 100k
#: steps, worst-20% mean of 100 greedy evaluation returns, 5 seeds against 2 at 256): CartPole-v1 75.7 -> 440.4 (262
#: at 32 without the baseline), Acrobot-v1 -500 -> -395.5, LunarLander-v3 -109.4 -> -179.2 greedy but -128.8 ->
#: -50.7 sampled. Not below 128 steps: at 32 episodes with the baseline the portfolio's usage line fell from 95.2% to
#: 72.6% profitable (4 seeds); lava, maze, bandit and the portfolio were measured at 256. Not 16 (``og-cvar-n16``,
#: the usage line since, 10 seeds, greedy / sampled against 32): CartPole-v1 at 300k 499.6 / 495.6 against 500 / 500
#: (sampled lower in 6 of 10 seeds); at 100k no task moved consistently (Acrobot-v1 -181.0 / -229.2 against
#: -152.0 / -219.9, two seeds never swinging up; LunarLander-v3 -93.2 / -43.1 against -125.4 / -35.4). Again on
#: 2026-12-04, with novelty on blind rollouts (every seed swings up): Acrobot-v1 at 100k -108.2 / -149.8 against
#: -111.1 / -190.9, at 300k -110.3 / -148.8 against -112.7 / -134.7 (SB3 PPO -104.1 / -116.6 and -110.8 / -108.9):
#: the gain at 100k is gone by 300k. Nor 16 during the level schedule's mean phase and 32 at its target
#: (``scripts/probe_level_sized_rollouts.py``): CartPole-v1 at 300k 498.6 / 497.7 against 500 / 500. Both in
#: docs/benchmarks.md ("Sixteen episodes per update on long episodes, again"). Nor 16 new episodes ranked with the
#: 16 returns of the rollout before, their weights centred (``scripts/probe_return_pool.py --center``): CartPole-v1
#: at 100k 500.0 / 490.1, but at 300k 499.9 / 494.0, Acrobot-v1 at 300k -110.4 / -160.9 and LunarLander-v3 at 100k
#: -149.7 / -44.7 against -127.7 / -28.2 (docs/benchmarks.md, "Ranking each rollout against a pool"). But 16 where
#: the first ``learn`` call's budget is small, since 2026-12-05 (:data:`SMALL_BUDGET_N_EPISODES`).
LONG_RANKED_N_EPISODES = 32
#: OrderGradPPO's episodes per rollout on long episodes when the first ``learn`` call's budget is small
#: (:func:`budget_n_episodes`): twice the updates where the run ends before the policy settles. Measured
#: (``reproduce benchmarks``, ``og-cvar-n16`` against the usage line at 32, 100k steps, seeds 0-9, worst 20% of 100
#: evaluation returns greedy / sampled, paired 95% bootstrap on the same evaluation envs, 2026-12-05): Acrobot-v1
#: -115.5 / -154.9 against -111.9 / -190.6 (-3.6 [-11.6, 4.4] / +35.6 [2.6, 77.0], sampled higher in 7 of 10),
#: CartPole-v1 495.5 / 489.8 against 496.1 / 478.2 (-0.7 / +11.6; 7 of 10 seeds at 500 / 500 against 5),
#: LunarLander-v3 -113.7 / -34.9 against -133.7 / -29.4 (+20.0 [-95.8, 123.0] / -5.5 [-25.7, 14.3], greedy higher
#: in 8 of 10); SB3 PPO -104.1 / -116.6, 500 / 500 and -128.2 / -84.7. Not at 300k: there 16 lost Acrobot-v1's
#: sampled tail (-148.8 against -134.7) and CartPole-v1's (495.6 against 500.0), so large budgets keep 32
#: (docs/benchmarks.md, "Sixteen episodes per update on long episodes, again", and "Rollouts halved for small
#: budgets on long episodes").
SMALL_BUDGET_N_EPISODES = 16
#: A budget is small when it holds fewer than this many rollouts of the default size at the episode limit
#: (:func:`budget_n_episodes`): between the measured budgets that gain from 16 episodes (100k steps: 6.25 rollouts
#: of 32 at CartPole-v1's and Acrobot-v1's 500 steps, 3.1 at LunarLander-v3's 1000) and those that lose or were not
#: shown to gain (300k: 18.75 and 9.4). Between: LunarLander-v3 at 200k steps (6.25 rollouts, so 16; seeds 0-4)
#: 29.0 / -3.0 against -45.1 / -0.2 at 32 (greedy +74.0 [-22.4, 185.7], sampled -2.9 [-27.7, 14.4]). Above:
#: Acrobot-v1 and CartPole-v1 at 200k steps (12.5 rollouts, so 32; seeds 0-9) -108.5 / -133.7 and 500.0 / 487.2
#: against 16 episodes' -153.3 / -126.1 (greedy lower in 9 of 10) and 474.9 / 473.1.
SMALL_BUDGET_ROLLOUTS = 8
#: On short episodes (at most :data:`LONG_EPISODE_STEPS`) the first ``learn`` call halves OrderGradPPO's default
#: rollout, down to :data:`SMALL_BUDGET_N_EPISODES`, until its budget holds this many rollouts at the episode limit
#: (:func:`budget_n_episodes`): a short task's rollout of 8192 steps at the limit leaves 13-20 updates in 100k steps.
#: At 32 the suite's 300k budgets keep their measured sizes (the lava grid's 256 episodes of 30 steps: 39 rollouts;
#: the maze's 128 of 40: 59; the navigation's 32 of 50: 187). Measured (``reproduce benchmarks``, the usage line at
#: its size before against pinned sizes, seeds 0-9, 100k steps, exact greedy / sampled CVaR_0.2, 2026-12-05): the
#: lava grid at 256 / 128 / 64 episodes 5 / 8 / 10 of 10 seeds at the optimum, -0.62 / 0.61 / 1.07 greedy, -1.13 /
#: 0.34 / 0.64 sampled; the guarded maze at 128 / 64 3 / 7 of 10, -28.6 / -9.8 and -30.7 / -12.0 (paired +18.8
#: [7.5, 30.2] / +18.8 [9.8, 27.9]), and at 150k 10 / 9 of 10 at 64 / 128, sampled -2.51 / -9.02 (+6.5 [0.9,
#: 14.8]); slippery CliffWalking-v1 at a 100-step limit (outside the suite,
#: ``scripts/outside_probe.py``, worst 20% of 500 returns) at 64 / 32 / 16 -113.6 / -110.1 / -102.2 greedy,
#: -262.4 / -207.4 / -174.4 sampled (SB3 PPO -100.2 / -112.0); Pendulum-v1 cut at 100 steps (continuous, seeds 0-4)
#: at 32 / 16 -506.8 / -504.5 and -516.0 / -511.9, even (neither has swung up by 100k). Not 26 or fewer, which keep
#: the lava grid's 256 at 200k: there 128 episodes (32 takes 128 below 245,760 steps) cost 0.09 [-0.17, 0.02] of
#: its sampled tail (lower in 9 of 10; greedy even, 9 of 10 at the optimum either way), while 26 would give it 128
#: at 100k (above) and CliffWalking 32.
SHORT_BUDGET_ROLLOUTS = 32
#: Episode limit (``max_episode_steps``) above which an env counts as long-episode: between the suite's short tasks
#: (bandit 1, lava 30, maze 40, nav 50; the portfolio has a fixed 16-step horizon and no limit) and its long ones
#: (CartPole-v1 and Acrobot-v1 500, LunarLander-v3 1000). 256 episodes of 128 steps are 32k steps per update.
LONG_EPISODE_STEPS = 128
#: OrderGradPPO's rollout for a ranked objective holds at most this many steps at the episode limit
#: (:func:`ranked_n_episodes`, never fewer than 32 episodes): 256 episodes of 40-50 steps left about 25 updates in
#: 300k steps. Measured (``reproduce benchmarks``, the usage line, 300k steps, against 256 episodes on the same
#: seeds): the guarded maze (40 steps, 128 episodes, 10 seeds) finds the CVaR-optimal long path in 7 of 10 seeds
#: against 4 (greedy CVaR_0.2 -14.7 against -25.0; 4 of 10 end within 1 of the optimum either way; 3 hold it
#: late and end off it, their greedy moves near-tied in cells off the path: ``scripts/greedy_trace.py``), the point
#: navigation (50 steps, 128 episodes) reaches its goal safely in 3 of 10 seeds against 0
#: (-34.0 against -42.5; none within 2 of its optimum). Not 4096 (64 episodes on the navigation, 128 on the
#: lava grid): the navigation reached its goal safely in 4 of 10 seeds (greedy -26.3 against -42.5; none within 2 of
#: the optimum), but the lava grid at 128 episodes ended 4 of 5 seeds at its optimum (10 of
#: 10 at 256) with a worse sampled policy (-0.06 against 0.46 on seeds 0-4); the lava grid (30 steps), the bandit
#: and the portfolio (no limit) keep 256 here, and long episodes 32 (:data:`LONG_RANKED_N_EPISODES`). The sb3-contrib
#: variants size theirs the same way since 2026-12-01 (with the noise sampler and the long-episode defaults; 256
#: everywhere before): OrderGradMaskablePPO on the maze (10 seeds, 300k steps) from 5 of 10 within 1 of the optimum
#: and 4 time-outs (greedy -18.0) to 7 of 10 and all on the long path (-2.99); OrderGradRecurrentPPO on CartPole-v1
#: (100k steps, worst 20% of 100 greedy evaluations) from 70.8 (4 seeds) to 304.8 (10 seeds; 32 episodes without the
#: level schedule: 103.7, 4 seeds). Re-measured with the defaults of 2026-12-03 (the history baseline, the running
#: scale, the bonus held and then decayed; ``og-cvar-n64-sched`` on the lava grid and ``og-cvar-n32-sched`` on the
#: maze, the episodes of a 2048-step budget, seeds 0-3, paired with the usage line): both reach the optimum in 4 of 4
#: seeds and sooner (a median 60,000 and 90,000 steps against 112,500 and 135,000), but end with lower sampled tails,
#: the lava grid 0.510 against 1.023 (lower in 4 of 4) and the maze -2.299 against -2.206 (lower in 3 of 4).
RANKED_ROLLOUT_STEPS = 8192
#: The PPO family's ranked rollout budget on continuous actions with a time limit (:func:`timed_box_rollout_steps`,
#: since 2026-12-02), SB3 PPO's 2048-step rollout: 32 episodes on the point navigation's 50 steps, against 128 at
#: :data:`RANKED_ROLLOUT_STEPS`. There the level schedule (:func:`~.risk_schedules.default_risk_schedule`) needs its
#: mean phase to reach the goal before the level narrows, and more updates per budget get it there more often.
#: Measured (``reproduce benchmarks``, RiskyShortcutNav-v1, the usage line, 300k steps, seeds 0-9, greedy CVaR_0.2
#: exact / sampled, Monte Carlo): 128 episodes reach the goal in 8 of 10 seeds, -12.0 [-23.7, -3.8] / -13.9
#: [-25.7, -3.8]; 64 in 9 of 10, -8.5 [-16.3, -4.6] / -7.7 [-18.0, 0.9]; 32 in 10 of 10, -4.75 [-6.68, -2.50] /
#: -3.15 [-8.17, 2.06] (SB3 PPO -4.62 / -5.74). None reaches the CVaR optimum (the detour, 7; seed 5 at 32 takes a
#: detour of 4.0). Long episodes take :data:`LONG_RANKED_N_EPISODES` either way; the suite's other short tasks
#: have categorical actions (the lava grid lost seeds at 128 episodes, see :data:`RANKED_ROLLOUT_STEPS`) and the
#: portfolio no time limit, so nothing else in the suite changes.
TIMED_BOX_ROLLOUT_STEPS = 2048
#: The PPO family's entropy coefficient for a ranked objective on categorical actions, when ``ent_coef`` is not given
#: (:func:`default_ent_coef`). Without it the tail's gradient drives the probability of a move that the batch's tail
#: does not reward to zero, and once no batch samples that move nothing can bring it back (exploration collapse: the
#: lava grid's "stay away" policy, P(up at start) = 0). Measured with OrderGradPPO (``reproduce benchmarks``, the
#: usage line, ``og-cvar``, against ``ent_coef=0.0``, ``og-cvar-noent``, on the same seeds): RiskyLavaGrid-v0 8 -> 10
#: of 10 seeds at the CVaR optimum (greedy CVaR_0.2 -0.14 -> 1.09, sampled -0.36 -> 0.46; the two collapses, -3.51
#: and -6.79, reach 1.07); Acrobot-v1 (5 seeds, 100k steps) worst-20% mean -355.9 -> -214.4 greedy, -331.5 -> -243.2
#: sampled; CartPole-v1 (10 seeds) 424.1 -> 435.1 greedy, 320.6 -> 366.4 sampled; the heavy-tail bandit 3 of 3
#: either way; but GuardedMaze-v0 5 -> 4 of 10 seeds at the optimum and LunarLander-v3 (5 seeds) -179.2 -> -202.4
#: greedy, -50.7 -> -66.6 sampled (intervals overlapping). The portfolio and the point navigation (``Box``) keep 0.0.
#: Measured again with the history baseline, the default on short categorical episodes since (``og-cvar-noent``
#: against ``og-cvar-history``, 300k steps, seeds 0-9): without the bonus the lava grid ends 5 of 10 seeds at the
#: optimum against 10 (the other five at -1.163; greedy -0.04 against 1.09), while the maze reaches it in 10 of 10
#: against 8 (sampled CVaR_0.2 -2.13 against -6.74, better in all 10 seeds). The bonus stays: no single value meets
#: both, and lava's loss is the larger. Lava's five (greedy CVaR_0.2 -1.163, mean 2.848: the exact values of the
#: stationary optimum with one cell changed, and of no other one-cell change) step right into the lava from the cell
#: below the start, which only a slip reaches: early on a lava step there (-17) beats the time-outs (-30) that fill
#: the tail, and once the softmax saturates on it the cell's gradient, proportional to ``1 - pi``, is gone; the
#: bonus keeps it from saturating. Outside the suite, slippery CliffWalking-v1 (``scripts/outside_probe.py``,
#: 100k steps, seeds 0-5) has the bonus's cost: without it the greedy tail is SB3 PPO's (-100.3 against -120.5 with
#: it) and the sampled one -217.3 against -339.9 (PPO -110.4). Half the bonus, 0.005 (``og-cvar-ent005``, seeds
#: 0-9), lands between on every score and meets neither goal: lava 8 of 10 (two in the same trap), the maze 9 of 10
#: (sampled -2.59), CliffWalking -104.8 / -267.4.
RANKED_ENT_COEF = 0.01
#: OrderGradPPO's entropy coefficient for a ranked objective on categorical actions with short episodes (a
#: ``TimeLimit`` of at most :data:`LONG_EPISODE_STEPS`, or none known) when ``ent_coef`` is not given, since
#: 2026-12-03: :data:`RANKED_ENT_COEF` held over the first 60% of training (CeSoR's share, as the level schedule's),
#: then decayed linearly to 0. Held, it keeps the tail's gradient from saturating a move early (the lava grid's trap,
#: :data:`RANKED_ENT_COEF`); gone by the end, it leaves the sampled policy sharp. Measured (``reproduce benchmarks``,
#: ``og-cvar-entlate`` against the usage line with the constant bonus, 300k steps, the same seeds 0-9, greedy /
#: sampled CVaR_0.2, exact; paired 95% bootstrap of the sampled difference): RiskyLavaGrid-v0 1.112 / 1.033 against
#: 1.089 / 0.880 (+0.153 [0.076, 0.236]); GuardedMaze-v0 -2.054 / -2.226 against -2.056 / -2.680 (+0.453 [0.224,
#: 0.712], higher in 10 of 10); the heavy-tail bandit 1.000 / 1.000 against 1.000 / 0.991; every seed at the CVaR
#: optimum on all three either way. Outside the suite, slippery CliffWalking-v1 at 100 steps (100k steps,
#: ``scripts/outside_probe.py``): -113.6 / -262.4 against -124.6 / -351.8 (sampled higher in 10 of 10). Decayed from
#: the start instead (``og-cvar-entdecay``) it loses seeds: lava 9 of 10 (seed 4 in the trap), the maze 7 of 10 (one
#: time-out). Long episodes keep the constant: there LunarLander-v3 lost both tails with it (100k steps, seeds 0-9,
#: -178.3 / -46.9 against -127.7 / -28.2; :func:`default_ent_coef`). OrderGradMaskablePPO's default too since
#: 2026-12-04 (``og-mask-cvar-entlate`` against its constant, the same seeds: lava 1.066 / 0.901 against 0.467 /
#: 0.587, 5 of 5 seeds at the optimum against 4; the maze -3.306 / -3.921 against -2.992 / -4.867, paired sampled
#: +0.946 [0.256, 1.524], 8 of 10 against 7; the bandit 1.000 / 0.999 against 1.000 / 0.997).
#: OrderGradRecurrentPPO keeps the constant (not measured with it).
SHORT_RANKED_ENT_COEF = HeldLinearSchedule(RANKED_ENT_COEF, 0.0, 0.6)
#: OrderGradPPO's entropy coefficient for a ranked objective on categorical actions when ``ent_coef`` is not given and
#: ``relative_ent_coef=True``: the bonus of an update is this times the root mean square of the rollout's per-step
#: advantages, as SB3's PPO weighs its bonus against advantages normalized to unit scale. A fixed coefficient does not
#: weigh the same against the gradient on every task: the per-step advantages' root mean square (after the running
#: weight scale and the history baseline's lambda-returns; the usage line, seed 0, the median over the updates of
#: 60k steps, ``scripts/measure_advantage_scale.py``) is 0.27-0.46 on the lava grid, CartPole-v1, Acrobot-v1,
#: LunarLander-v3 and slippery CliffWalking, but 0.066 on the guarded maze, whose rare guard payments hold the running
#: scale up; 0.03 times a scale of about 0.3 is :data:`RANKED_ENT_COEF` on the tasks of the first group. Measured
#: (``reproduce benchmarks``, ``og-cvar-entrel`` against the usage line, the same seeds 0-9, greedy / sampled
#: CVaR_0.2): the lava grid 1.104 / 0.584 against 1.089 / 0.880 (10 of 10 at the optimum either way, from a median
#: 82,500 steps against 112,500), the maze -2.029 / -2.929 against -2.056 / -2.680 (10 of 10 either way, 90,000 steps
#: against 135,000), Acrobot-v1 at 100k steps -170.0 / -213.0 against -148.6 / -212.4 (worst-20% mean of 100
#: returns): the optimum sooner, the tails lower, so it is not the default (``relative_ent_coef=False``).
RELATIVE_RANKED_ENT_COEF = 0.03
#: OrderGradREINFORCE's ranked rollout holds at most this many steps at the env's episode limit when ``n_episodes`` is
#: not given (:func:`ranked_n_episodes`): 32 episodes on the lava grid (30 steps), the guarded maze (40), the point
#: navigation (50) and long episodes, 256 on the one-step bandit and on an env without a limit (the portfolio). This
#: class takes one gradient step per rollout, and 256 episodes left it 30-40 steps in 300k on the lava grid and the
#: maze. Measured with :data:`REINFORCE_RANKED_ENT_COEF` and the noise sampler, the defaults since 2026-12-01
#: (``reproduce benchmarks``, 300k steps, 10 seeds, exact greedy CVaR_0.2; the runs before: 256 episodes, no bonus,
#: no sampler, seeds 0-1): the lava grid 9 of 10 seeds at the optimum, 0 before (greedy 1.07-1.12 in the nine, sampled
#: 1.05-1.12; -6.79 and -17.4 before); the guarded maze 10 of 10 on the CVaR-optimal long path, 6 within 1 of the
#: optimum (greedy -2.03 to -3.34; 8 of 10 at 600k steps; a time-out, -40, before); CartPole-v1 (3 seeds, 100k
#: steps) worst-20% mean 468.2 greedy, 256.2 sampled, against 56.7 and 28.7. Not 32 everywhere: on the one-step
#: bandit 32 episodes with the bonus left the sure arm late in 3 of 10 seeds (without it, ``og-reinforce-n32``: 3 of
#: seeds 2-9), and on the portfolio (no limit, ``Box`` actions, no bonus) 32 episodes took the usage line from 93.6%
#: to 81.7% profitable (seeds 0-9, 200k steps, lowest seed 90.2% -> 65.2%;
#: ``scripts/measure_schedule_portfolio.py --agent reinforce --normalize-advantage default``).
REINFORCE_RANKED_ROLLOUT_STEPS = 1024
#: OrderGradREINFORCE's entropy coefficient for a ranked objective on categorical actions, when ``ent_coef`` is not
#: given: 0.3 decayed linearly to 0 over training (SB3's ``LinearSchedule``). 0.3 is about OrderGradPPO's 0.01 per
#: step times the lava grid's 30 steps: this class sums each episode's log-probabilities and averages the entropy
#: over the steps. Without it the lava grid's 32-episode runs end at the shortcut-like -6.79 (2 of 2), with 0.3 held
#: they reach the optimum (10 of 10) but the maze ends on its short path (-9.29, 2 of 2) and one-step episodes keep a
#: spread sampled policy (the bandit's sampled CVaR_0.2 -1.65 against 1.00). Decayed, it explores early and is gone
#: by the end: the lava grid's sampled CVaR_0.2 1.05-1.12 against 0.85 held. Decayed over the first half of training
#: instead (the same seeds): the lava grid 7 of 10, the maze 6 of 10, the bandit at 32 episodes 6 of 10 (7 with the
#: linear decay).
REINFORCE_RANKED_ENT_COEF = LinearSchedule(0.3, 0.0, 1.0)
#: OrderGradPPO's ``baseline_lambda`` when a per-step baseline is on: the ``lambda`` of the weight's lambda-returns
#: over the baseline (:func:`~ordergrad_rl.agents.common.advantages.lambda_advantages`), SB3's ``gae_lambda`` default,
#: not tuned. Measured against lambda = 1 (``w - b_t``, unbiased) with the long-episode defaults' history baseline
#: (``reproduce benchmarks``, 100k steps, worst-20% mean of 100 evaluation returns, the same seeds; ``og-cvar``
#: against ``og-cvar-lambda1``): CartPole-v1 (10 seeds) 465.0 -> 491.3 greedy, 349.9 -> 435.6 sampled; Acrobot-v1
#: (10 seeds) -182.4 -> -150.5 greedy, -304.0 -> -219.6 sampled; LunarLander-v3 (5 seeds) -209.3 -> -170.5 greedy,
#: -56.5 -> -25.5 sampled. Over 32 whole episodes the weight of an episode says little about any one of its several
#: hundred steps; the baseline's step-to-step changes say more. Not measured on short episodes, where the defaults
#: have no baseline.
BASELINE_LAMBDA = 0.95
#: Smallest default minibatch, SB3's PPO default.
MIN_BATCH_SIZE = 64


def check_common_arguments(
    learning_rate: Any, gamma: Any, ent_coef: Any, max_grad_norm: Any, policy_kwargs: Any
) -> None:
    """The constructor arguments every OrderGrad algorithm shares, checked before SB3 uses them
    (:data:`ARGUMENT_CHECKS`).

    :raises ValueError: naming the first bad argument.
    """
    check_arguments(
        learning_rate=learning_rate,
        gamma=gamma,
        ent_coef=ent_coef,
        max_grad_norm=max_grad_norm,
        policy_kwargs=policy_kwargs,
    )


def check_gamma(gamma: Any) -> None:
    """``ValueError`` unless ``gamma`` is ``None`` (the algorithm's default) or a number in ``(0, 1]``."""
    if gamma is not None:
        check_number("gamma", gamma)
        if not 0.0 < gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], got {gamma}")


def check_ent_coef(ent_coef: Any) -> None:
    """``ValueError`` unless ``ent_coef`` is ``None`` (the algorithm's default, the episodic agents'
    :func:`default_ent_coef`), a finite number or a schedule (the episodic agents evaluate it at each update)."""
    if ent_coef is not None:
        check_schedule("ent_coef", ent_coef, minimum=-math.inf)


def check_max_grad_norm(max_grad_norm: Any) -> None:
    """``ValueError`` unless ``max_grad_norm`` is a number > 0 (``inf``: no clipping)."""
    check_number("max_grad_norm", max_grad_norm, allow_inf=True)
    if max_grad_norm <= 0:
        raise ValueError(f"max_grad_norm must be > 0, got {max_grad_norm}")


def check_target_kl(target_kl: Any) -> None:
    """``ValueError`` unless ``target_kl`` is ``None`` or a finite number > 0: SB3 stops an epoch at ``approx_kl >
    1.5 * target_kl``, so NaN never stops it and a value <= 0 stops it at once."""
    if target_kl is not None:
        check_float("target_kl", target_kl, 1e-12)


def check_clip_range_vf(clip_range_vf: Any) -> None:
    """``ValueError`` unless ``clip_range_vf`` is ``None`` (no value clipping) or a positive number or schedule."""
    if clip_range_vf is not None:
        check_schedule("clip_range_vf", clip_range_vf, minimum=1e-12)


def check_normalize_advantage(normalize_advantage: Any) -> None:
    """``ValueError`` unless ``normalize_advantage`` is one of the episodic modes (``True``, ``False``, ``"group"``,
    ``"channel"``, ``"running"``) or ``None`` (the default); the string ``"False"`` is refused, not read as true."""
    if normalize_advantage is not None and normalize_advantage not in NORMALIZE_MODES:
        raise ValueError(
            f"normalize_advantage must be True, False, 'group', 'channel' or 'running', got {normalize_advantage!r}"
        )


def check_log_std_step(log_std_step: Any) -> float | None:
    """``log_std_step`` as a ``float``, or ``None`` (off).

    :raises ValueError: naming ``log_std_step`` unless it is ``None`` or a finite number > 0.
    """
    if log_std_step is None:
        return None
    try:
        value = check_float("log_std_step", log_std_step, 0.0)
    except ValueError:
        value = 0.0
    if value == 0.0:
        raise ValueError(
            "log_std_step must be None (off) or a finite number > 0 (the largest change of each log-std per update, "
            f"e.g. math.log(1 + clip_range)), got {log_std_step!r}"
        )
    return value


def check_batch_size(batch_size: Any) -> None:
    """``ValueError`` unless ``batch_size`` is ``None`` (the algorithm's default) or an integer >= 2: a 1-step
    minibatch has no spread to normalize or clip against."""
    if batch_size is not None:
        check_int("batch_size", batch_size, 2)


def check_flag(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is ``True`` or ``False``."""
    if not isinstance(value, bool):
        raise ValueError(f"{name} must be True or False, got {value!r}")


def check_optional_flag(name: str, value: Any) -> None:
    """``ValueError`` naming ``name`` unless ``value`` is ``True``, ``False`` or ``None`` (the default)."""
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"{name} must be True, False or None, got {value!r}")


#: SB3 policy arguments that take a class (or a function that builds the object, e.g. a ``functools.partial``).
POLICY_CLASS_ARGUMENTS = ("activation_fn", "features_extractor_class", "optimizer_class")


def check_policy_kwargs(policy_kwargs: Any) -> None:
    """``policy_kwargs`` must be ``None`` or a dict with string keys; ``net_arch`` a list of layer sizes or a dict
    ``pi=[...], vf=[...]`` (or SB3's older ``[dict(pi=..., vf=...)]``); ``log_std_init`` a finite number; the
    :data:`POLICY_CLASS_ARGUMENTS` a class or function (SB3 failed on others deep inside torch: a YAML mapping's
    ``activation_fn: nn.ReLU`` is the text ``"nn.ReLU"``).

    :raises ValueError: the first problem found, naming the key.
    """
    if policy_kwargs is None:
        return
    if not isinstance(policy_kwargs, Mapping):
        raise ValueError(f"policy_kwargs must be a dict of policy arguments, got {type(policy_kwargs).__name__}")
    for key in policy_kwargs:
        if not isinstance(key, str):
            raise ValueError(f"policy_kwargs keys must be argument names (str), got {key!r}")
    if "net_arch" in policy_kwargs:
        _check_net_arch(policy_kwargs["net_arch"])
    if "log_std_init" in policy_kwargs:
        check_number("policy_kwargs['log_std_init']", policy_kwargs["log_std_init"])
    for key in POLICY_CLASS_ARGUMENTS:
        if key in policy_kwargs and not callable(policy_kwargs[key]):
            raise ValueError(
                f"policy_kwargs[{key!r}] must be a class or function (torch.nn.ReLU, not the text 'nn.ReLU'), got "
                f"{policy_kwargs[key]!r}"
            )


def check_squash_output(policy_kwargs: Mapping[str, Any] | None, use_sde: bool) -> None:
    """``ValueError`` for ``policy_kwargs["squash_output"]`` without ``use_sde``: SB3 squashes only gSDE's actions
    (its policy asserts it, deep inside the model's construction); without gSDE, actions are clipped to the bounds."""
    if policy_kwargs and policy_kwargs.get("squash_output") and not use_sde:
        raise ValueError(
            "policy_kwargs squash_output=True needs use_sde=True: SB3 squashes only gSDE's actions (tanh, then "
            "scaled to the action space's bounds); without gSDE they are clipped to the bounds"
        )


def _check_net_arch(net_arch: Any) -> None:
    def layers(value: Any, where: str) -> None:
        if not isinstance(value, list | tuple) or not all(
            isinstance(size, int | np.integer) and not isinstance(size, bool) and size > 0 for size in value
        ):
            raise ValueError(f"policy_kwargs['net_arch']{where} must be a list of positive layer sizes, got {value!r}")

    if net_arch is None:
        return
    if isinstance(net_arch, list | tuple) and len(net_arch) == 1 and isinstance(net_arch[0], Mapping):
        net_arch = net_arch[0]  # SB3's older format [dict(pi=..., vf=...)]
    if isinstance(net_arch, Mapping):
        for key, value in net_arch.items():
            if key not in ("pi", "vf", "qf"):
                raise ValueError(f"policy_kwargs['net_arch'] keys are 'pi' and 'vf', got {key!r}")
            layers(value, f"[{key!r}]")
        return
    layers(net_arch, "")


def check_buffer_kwargs(buffer_kwargs: Any) -> None:
    """``ValueError`` unless ``rollout_buffer_kwargs`` is ``None`` or a dict of buffer arguments."""
    if buffer_kwargs is not None and not isinstance(buffer_kwargs, Mapping):
        raise ValueError(f"rollout_buffer_kwargs must be a dict of buffer arguments, got {buffer_kwargs!r}")


#: The check of each constructor argument whose valid values do not depend on the other arguments, by name: the
#: constructors run them (:func:`check_arguments`), and ``load`` runs the same ones on the arguments it is given
#: (SB3's ``load`` sets them on the model without running the constructor), so that ``load(path, gamma=2.0)`` raises
#: the constructor's ``ValueError``. An algorithm replaces an entry where its constructor checks the argument its own
#: way (:meth:`~ordergrad_rl.agents.common.base_class.OrderGradAlgorithmMixin.argument_checks`).
ARGUMENT_CHECKS: dict[str, Callable[[Any], object]] = {
    "learning_rate": partial(check_schedule, "learning_rate"),
    "gamma": check_gamma,
    "ent_coef": check_ent_coef,
    "max_grad_norm": check_max_grad_norm,
    "policy_kwargs": check_policy_kwargs,
    "n_epochs": partial(check_int, "n_epochs", minimum=1),
    "clip_range": partial(check_schedule, "clip_range", minimum=1e-12),  # 0 would freeze the policy
    "target_kl": check_target_kl,
    "vf_coef": partial(check_float, "vf_coef", low=0.0),
    "gae_lambda": partial(check_float, "gae_lambda", low=0.0, high=1.0),
    "clip_range_vf": check_clip_range_vf,
    "batch_size": check_batch_size,
    "seed": check_seed,
    "normalize_advantage": check_normalize_advantage,
    "untie_tail": partial(check_flag, "untie_tail"),
    "entropy_when_tied": partial(check_flag, "entropy_when_tied"),
    "drift_when_blind": partial(check_flag, "drift_when_blind"),
    "relative_ent_coef": partial(check_flag, "relative_ent_coef"),
    "noise_sampler": partial(check_optional_flag, "noise_sampler"),
    "novelty_when_blind": partial(check_optional_flag, "novelty_when_blind"),
    "critic_when_tied": partial(check_optional_flag, "critic_when_tied"),
    "reward_to_go": partial(check_optional_flag, "reward_to_go"),
    "novelty_phase": partial(check_float, "novelty_phase", low=0.0, high=1.0),
    "log_std_step": check_log_std_step,
    "rollout_buffer_kwargs": check_buffer_kwargs,
    # SB3 resamples gSDE's matrix every n > 0 steps, and reads its default -1 and 0 alike as never.
    "sde_sample_freq": partial(check_int, "sde_sample_freq", minimum=-1),
}


def check_arguments(checks: Mapping[str, Callable[[Any], object]] = ARGUMENT_CHECKS, **values: Any) -> None:
    """Run the check of each argument in ``values`` (by name, in order) that ``checks`` holds.

    :raises ValueError: naming the first bad argument.
    """
    for name, value in values.items():
        check = checks.get(name)
        if check is not None:
            check(value)


def long_episodes(objective: Objective | ChannelObjective, limit: int | None) -> bool:
    """Whether the PPO family's long-episode defaults apply (OrderGradPPO's and the sb3-contrib variants'): a ranked
    objective (k != 1) on an env whose episode limit exceeds :data:`LONG_EPISODE_STEPS` (an env without a known limit
    keeps the short-episode defaults)."""
    return objective.k != 1 and limit is not None and limit > LONG_EPISODE_STEPS


def timed_box(action_space: spaces.Space | None, limit: int | None) -> bool:
    """Whether an env has continuous (``Box``) actions and a known episode limit: every episodic agent's level schedule
    is on there at any episode length (:func:`~.risk_schedules.default_risk_schedule`), and the PPO family's rollout
    is at most :data:`TIMED_BOX_ROLLOUT_STEPS` (:func:`timed_box_rollout_steps`)."""
    return limit is not None and isinstance(action_space, spaces.Box)


def timed_box_rollout_steps(rollout_steps: int, action_space: spaces.Space | None, limit: int | None) -> int:
    """The PPO family's ranked rollout budget on ``action_space`` with the episode ``limit``: ``rollout_steps``, at
    most :data:`TIMED_BOX_ROLLOUT_STEPS` on continuous actions with a time limit (:func:`timed_box`)."""
    return min(rollout_steps, TIMED_BOX_ROLLOUT_STEPS) if timed_box(action_space, limit) else rollout_steps


def ranked_n_episodes(limit: int | None, rollout_steps: int = RANKED_ROLLOUT_STEPS) -> int:
    """The episodes per rollout for a ranked objective on an env whose episodes last at most ``limit`` steps: the
    largest power of two whose episodes hold at most ``rollout_steps`` steps at the limit, within
    [:data:`LONG_RANKED_N_EPISODES`, :data:`RANKED_N_EPISODES`]; :data:`RANKED_N_EPISODES` for an env without a known
    limit.
    The PPO family's (OrderGradPPO and the sb3-contrib variants), at :data:`RANKED_ROLLOUT_STEPS`: 256 up to 32
    steps, 128 up to 64, 64 up to 128 and 32 beyond (the long episodes, :data:`LONG_EPISODE_STEPS`).
    OrderGradREINFORCE's, at :data:`REINFORCE_RANKED_ROLLOUT_STEPS`: 256 up to 4 steps, 128 up to 8, 64 up to 16 and
    32 beyond.
    """
    if limit is None:
        return RANKED_N_EPISODES
    n = 2 ** math.floor(math.log2(rollout_steps / limit))  # below 1 past rollout_steps: the floor applies
    return int(min(RANKED_N_EPISODES, max(LONG_RANKED_N_EPISODES, n)))


def sized_by_budget(objective: Objective | ChannelObjective, limit: int | None, group_size: int | None) -> bool:
    """Whether a default ``n_episodes`` waits for the first ``learn`` call's budget (:func:`budget_n_episodes`, in an
    algorithm that sizes by it): on an env with a known episode ``limit``, for a ranked objective whose ``k`` comes
    from the rollout size (no ``k`` given, no ``@K``), without groups."""
    # An unbound objective is ranked: the mean is bound (k = 1).
    return limit is not None and group_size is None and isinstance(objective, Objective) and not objective.is_bound


def budget_n_episodes(n_episodes: int, total_timesteps: int, limit: int | None, n_envs: int = 1) -> int:
    """The episodes per rollout OrderGradPPO and the sb3-contrib variants take for their first ``learn`` call's
    ``total_timesteps`` when ``n_episodes`` was not given: ``n_episodes`` halved, not below
    :data:`SMALL_BUDGET_N_EPISODES` nor ``n_envs`` (never more than ``n_episodes``; ``n_episodes`` without a known
    limit), until the budget holds this many rollouts at the episode ``limit``. Not below ``n_envs`` because every
    env steps until the rollout's last episode ends: 16 episodes on 32 envs take the steps of 32 and keep half.

    - on long episodes (``limit`` above :data:`LONG_EPISODE_STEPS`) :data:`SMALL_BUDGET_ROLLOUTS`: with 32 episodes,
      16 below 128k steps at a limit of 500 (CartPole-v1, Acrobot-v1), below 256k at 1000 (LunarLander-v3);
    - on short ones :data:`SHORT_BUDGET_ROLLOUTS`: at 100k steps 64 episodes on the lava grid (30 steps, 256 by
      default) and the guarded maze (40 steps, 128), 16 on a 100-step CliffWalking (64).
    """
    if limit is None:
        return n_episodes
    # One rule, two thresholds: long episodes' default (32) reaches the floor (16) in one halving.
    rollouts = SMALL_BUDGET_ROLLOUTS if limit > LONG_EPISODE_STEPS else SHORT_BUDGET_ROLLOUTS
    floor = max(SMALL_BUDGET_N_EPISODES, n_envs)
    while n_episodes > floor and total_timesteps < rollouts * n_episodes * limit:
        n_episodes = max(n_episodes // 2, floor)
    return n_episodes


def default_n_episodes(
    objective: Objective | ChannelObjective,
    group_size: int | None = None,
    limit: int | None = None,
    rollout_steps: int = RANKED_ROLLOUT_STEPS,
) -> int:
    """The episodic agents' episodes per rollout when ``n_episodes`` is not given: :data:`MEAN_N_EPISODES` for the mean,
    :func:`ranked_n_episodes` of the env's episode ``limit`` and ``rollout_steps`` for any ranked objective, at least
    ``2 k`` if the objective fixes ``k``; with ``group_size``, rounded up to a multiple of it.

    :param objective: the parsed objective (:func:`~ordergrad_rl.core.channels.parse_agent_objective`; GCVaR targets
        the CVaR of its level and gets that objective's default).
    :param limit: the env's episode limit (``max_episode_steps``); ``None``: unknown.
    :param rollout_steps: the most steps a ranked rollout holds at the limit (the algorithm's: the PPO family's
        :data:`RANKED_ROLLOUT_STEPS`, OrderGradREINFORCE's :data:`REINFORCE_RANKED_ROLLOUT_STEPS`).
    """
    if objective.k == 1:  # the mean (k = 1 ranks nothing)
        n = MEAN_N_EPISODES
    else:
        ranked = ranked_n_episodes(limit, rollout_steps)
        n = max(ranked, 2 * objective.k) if objective.is_bound else ranked  # type: ignore[operator]
    if group_size is not None and not isinstance(group_size, bool) and isinstance(group_size, int) and group_size > 0:
        n = -(-n // group_size) * group_size
    return n


def default_ent_coef(
    objective: Objective | ChannelObjective,
    action_space: spaces.Space,
    ranked: float | Schedule = RANKED_ENT_COEF,
) -> float | Schedule:
    """The episodic agents' ``ent_coef`` when it is ``None``: ``ranked`` (the PPO family's :data:`RANKED_ENT_COEF`,
    OrderGradPPO's :data:`SHORT_RANKED_ENT_COEF` on short episodes, OrderGradREINFORCE's
    :data:`REINFORCE_RANKED_ENT_COEF`) for a ranked objective (k != 1) on categorical actions
    (``Discrete``, ``MultiDiscrete``, ``MultiBinary``), else SB3's 0.0. The mean keeps 0.0, SB3's
    PPO default, with which it solves CartPole-v1 in SB3 PPO's budget (:data:`MEAN_N_EPISODES`). Continuous
    actions keep 0.0: a Gaussian policy's entropy grows without bound with its log-std, which already drifts up
    under PPO's clipping on the tail-risk portfolio (measured 1 -> 5, ``zoo/hyperparams/ordergrad_ppo.yml``);
    the bonus was not measured there.

    Not decayed over training on long episodes: decayed linearly to 0 (``reproduce benchmarks``,
    ``og-cvar-entdecay``: the usage line with ``ent_coef=lambda p: 0.01 * p``, against the usage line, the same seeds,
    300k steps, worst-20% mean of 100 evaluation returns, greedy / sampled) it took Acrobot-v1 from -112.7 / -134.7
    to -99.0 / -116.5 (10 seeds, rerun 2026-12-04; SB3 PPO on the same envs -111.6 / -116.0) but LunarLander-v3
    from 77.4 / -9.0 to -66.8 / 1.8 (5 seeds), and moved no 100k cell consistently; held over the first 60% and
    decayed after (``og-cvar-entlate``) it kept less of Acrobot's gain (-110.6 / -120.6) and at 100k steps lost
    LunarLander's tails (-178.3 / -46.9 against -127.7 / -28.2, seeds 0-9, paired sampled -18.7 [-36.6, -0.9];
    greedy 50 behind SB3 PPO's -128.2, where the usage line is even with it), the schedule OrderGradPPO takes on
    short episodes (:data:`SHORT_RANKED_ENT_COEF`). Nor at the budgets that halve the rollout
    (:data:`SMALL_BUDGET_N_EPISODES`, 100k steps, 16 episodes, seeds 0-9, 2026-12-05): decayed linearly it took
    Acrobot-v1 from -115.5 / -154.9 to -110.1 / -143.3 and CartPole-v1 from 495.5 / 489.8 to 499.3 / 496.9, within
    the intervals, and LunarLander-v3 from -113.7 / -34.9 to -199.7 / -73.5 (sampled -38.6 [-65.2, -10.9]).

    Kept on long episodes since ``novelty_when_blind`` explores their blind rollouts (``og-cvar-sched-noent``, the
    usage line with ``ent_coef=0.0``, 100k steps, the same seeds, greedy / sampled): CartPole-v1 499.9 / 495.9
    against 496.1 / 478.2 (10 seeds), but Acrobot-v1 -158.4 / -211.4 against -111.1 / -190.9 (10 seeds; one never
    swings up) and LunarLander-v3 -143.2 / -41.5 against -113.1 / -17.4 (5 seeds).
    """
    categorical = isinstance(action_space, (spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary))
    return ranked if objective.k != 1 and categorical else 0.0


def default_entropy_plateau(long: bool, default_bonus: bool) -> bool:
    """OrderGradPPO's ``entropy_plateau`` when it is ``None``: on where the long-episode defaults apply and
    ``ent_coef`` took the default constant bonus (:func:`default_ent_coef`, a ranked objective on categorical
    actions), else off. Short episodes keep their held-then-decayed bonus (:data:`SHORT_RANKED_ENT_COEF`) alone, and
    an ``ent_coef`` the user gave is theirs. With the plateau decay on top (``og-cvar-plateau-fast``, 300k steps,
    seeds 0-9, 2026-12-06) the lava grid ends at the CVaR optimum in 7 of 10 seeds against 9: its returns stop rising
    while the trap's cell is unsettled, and the decayed bonus leaves seeds in the trap. Outside the suite it took
    slippery CliffWalking-v1 at 100k steps from -102.2 / -174.4 to -100.0 / -148.3 (SB3 PPO -100.2 / -112.0).

    Measured (``reproduce benchmarks``, the usage line with the plateau decay against the constant bonus, the same
    seeds 0-9 and evaluation envs, worst-20% mean of 100 returns, greedy / sampled, paired 95% bootstrap): Acrobot-v1
    at 300k steps -104.9 / -119.2 against -112.7 / -134.7 (sampled +15.5 [2.5, 29.1]; SB3 PPO on the same envs
    -111.6 / -116.0), where the returns plateau from 30-50% of the budget and the constant bonus widened the policy
    again; LunarLander-v3, still improving, keeps most of its bonus: 100k -133.7 / -29.4 against -127.7 / -28.2
    (6 of 10 seeds bit for bit), 300k (seeds 0-4) 67.4 / -2.1 against 77.4 / -9.0; CartPole-v1 300k 500.0 / 499.7
    against 500.0 / 500.0, 100k bit for bit (the returns still rise at the end); Acrobot-v1 100k -111.9 / -190.6
    against -111.5 / -190.5 (8 seeds bit for bit). A bonus decayed by the clock instead (``og-cvar-entdecay``) fixed
    Acrobot at 300k and lost LunarLander at 300k (77.4 -> -66.8 greedy) and the 100k cells (:func:`default_ent_coef`).
    docs/benchmarks.md, "The entropy bonus decayed on the returns' plateaus". Those runs decayed it over a quarter of
    the budget; a tenth since 2026-12-06 (:data:`~ordergrad_rl.agents.common.entropy_plateau.PLATEAU_DECAY_SHARE`,
    measured there: Acrobot-v1's sampled tail at 300k +13.6, the other cells within their intervals).
    """
    return long and default_bonus


def default_novelty_when_blind(objective: Objective | ChannelObjective, drift_when_blind: bool) -> bool:
    """OrderGradPPO's ``novelty_when_blind`` when it is ``None``: on for a ranked objective (k != 1) unless
    ``drift_when_blind`` takes such rollouts. A rollout blind to success ranks nothing, so the tail's estimate
    gives no direction; the mean's reward-to-go still has one and keeps it.

    Measured (``reproduce benchmarks``, Acrobot-v1, seeds 0-9, worst-20% mean of 100 evaluation returns, greedy /
    sampled; SB3 PPO -104.1 / -116.6 at 100k steps, -110.8 / -108.9 at 300k): at 100k -111.1 / -190.9 against
    -148.6 / -212.4 without it, at 300k -112.7 / -134.7 against -106.9 / -134.3 (seeds 3-9 rerun without it on the
    same evaluation envs, ``og-cvar-nonovelty``). Seed 3, whose 192 uniform episodes never swung up, ends at
    -124.5 / -285.0 at 100k against -500; it is the only seed of the ten that waits out
    :data:`~ordergrad_rl.agents.common.novelty.BLIND_PATIENCE_EPISODES` (the others swing up by chance after 1-3 blind
    rollouts of 32 episodes and train bit for bit as without it). From the first blind rollout (the default of
    2026-12-02) it acted on seeds 3-9: -116.8 / -164.0 at 100k, -117.9 / -141.7 at 300k (greedy lower on 5 of
    seeds 3-9, by 15.8 on average over the seven). It is the default because a task whose every episode ties until
    a success otherwise may never leave the uniform policy: outside the suite, MountainCar-v0 at 100k steps (seeds 0-2,
    ``scripts/outside_probe.py``) reached the flag in every greedy episode of two seeds (worst-20% mean -145.7 and
    -156.1; mean return -140.8, -151.9, -178.5) against -200 in every episode without it and for SB3 PPO. No
    rollout of the suite's other tasks is blind (their first rollout's returns already differ), so they train as
    before.
    """
    return objective.k != 1 and not drift_when_blind


def default_reward_to_go(objective: Objective | ChannelObjective, group_size: int | None) -> bool:
    """The episodic algorithms' ``reward_to_go`` when it is ``None``: on for the pooled mean of the reward (k = 1, one
    channel, no ``group_size``), whose per-step reward-to-go is its own credit; off for a ranked or multi-channel
    objective (whole-episode returns) and in groups (GRPO's whole-episode advantages)."""
    whole_episodes = isinstance(objective, ChannelObjective) or objective.k != 1
    return not whole_episodes and group_size is None


def default_normalize_advantage(
    objective: Objective | ChannelObjective,
    group_size: int | None,
    gcvar_alpha: float | None = None,
    long: bool = False,
) -> bool | str:
    """OrderGradPPO's ``normalize_advantage`` when it is ``None``: ``"running"`` (the episode weights over a running
    scale across rollouts) for a ranked OrderGrad objective (k != 1) of one channel and one pooled batch on short
    episodes; else ``True`` (each rollout's std; the long-episode defaults, :func:`long_episodes`, keep it, as do
    groups (GRPO's per-batch scale), the mean (its per-step reward-to-go scale) and GCVaR (a peer method, the scale it
    was measured with)).

    A rollout's own std scales a rare costly episode's weight down to the size of the rollouts without one, so the
    many rollouts without it outweigh the few with it. Measured (``reproduce benchmarks``, the usage line with
    ``"running"`` against it, the same seeds, 300k steps): the guarded maze 7 -> 9 of 10 seeds at the CVaR optimum
    (greedy CVaR_0.2 -3.45 -> -2.39), lava 10 of 10 either way (sampled CVaR_0.2 0.455 -> 0.710), the heavy-tail
    bandit 10 of 10 either way; the portfolio's usage line (200k steps, seeds 0-9) 96.6% -> 97.1% profitable. Not
    on long episodes (100k steps): LunarLander-v3 ended lower (seeds 0-3, sampled worst-20% mean -23.2 -> -78.4),
    Acrobot-v1 even (seeds 0-4), CartPole-v1 higher only in its sampled tail (5 seeds, 483.8 -> 495.7; greedy 500.0
    -> 499.6). The benchmark record (docs/benchmarks.md, "A rare costly event and each rollout's std") gives the rest.
    """
    ranked = isinstance(objective, Objective) and objective.k != 1 and gcvar_alpha is None
    return RUNNING if ranked and group_size is None and not long else True


def default_value_baseline(
    objective: Objective | ChannelObjective,
    action_space: spaces.Space,
    long: bool,
    policy_kwargs: Mapping[str, Any] | None = None,
    group_size: int | None = None,
    limit: int | None = None,
) -> bool | str:
    """OrderGradPPO's ``value_baseline`` when it is ``None``: ``"history"`` on long episodes (:func:`long_episodes`:
    a ranked objective and a ``TimeLimit`` above :data:`LONG_EPISODE_STEPS`); on short ones, for a ranked objective
    of one pooled batch (no ``group_size``), ``"history"`` on categorical actions and on continuous (``Box``) actions
    with a time limit (``limit``, :func:`timed_box`; since 2026-12-02); ``True`` (``V(s)``) for a ranked objective on
    other continuous actions (without a time limit, or in groups) whose Gaussian log-std is learned, where the policy
    has its value head (``policy_kwargs`` without ``critic="none"`` or ``learn_log_std=False``); else off.

    Why the history baseline on continuous actions with a time limit: there the weight of an episode depends on how
    much time is left and on what the episode has collected so far, which ``V(s)`` cannot see and ``b(s, t, G_<t)``
    does. Measured (the usage line with ``value_baseline="history"`` against the default of before, ``V(s)``, the
    same seeds, 300k steps): outside the suite, Pendulum-v1 with a 100-step limit (``scripts/outside_probe.py --task
    pendulum``, worst-20% mean of 100 greedy evaluation returns, seeds 0-4) from -565.6 (-520 to -590: it barely
    learns; mean return -502) to -273.6 (-270 to -277; mean -137), SB3 PPO -306.6 (-288 to -335), sampled -572.2 ->
    -285.8 (PPO -316.8); the point navigation (``reproduce benchmarks``, seeds 0-9) reaches its goal in 10 of 10
    either way, greedy CVaR_0.2 -3.66 [-4.62, -1.73] against -4.75 [-6.68, -2.50], sampled -4.53 [-10.23, 1.54]
    against -3.15 [-8.17, 2.06], and 1 of 10 at the CVaR optimum (seed 5's detour, 5.0, within 2 of 7) against none.
    Long episodes already had it (Pendulum-v1 at its 200-step limit: -273 to -281 over seeds 0-2, SB3 PPO -330 to
    -429); the portfolio (no limit) keeps ``V(s)``.

    Why continuous actions: a Gaussian policy draws fresh noise at every step, and a whole-episode weight says nothing
    about any one step's draw, so its log-std learns from noise (on the tail-risk portfolio it starts at 1 and
    ends at a median 1.05 per action dimension after 200k steps) and the deterministic policy a user deploys is not
    the one trained; ``w - V(s_t)`` ties a step's credit to what happened after it (median 0.95; lower in all 20
    seeds, summed over the dimensions). Measured with the usage line on
    SyntheticTailRisk-v0 (200k steps, 256 deterministic deployment paths per seed,
    ``scripts/measure_schedule_portfolio.py --value-baseline``, the same seeds): seeds 0-9 95.2% -> 96.7% profitable,
    seeds 10-19 94.7% -> 95.4%; over the 20, 95.0% -> 96.0% and the lowest seed 86.7% -> 92.6% (3 seeds below 92%
    without, none with). The point navigation, the suite's other continuous task, did not discriminate in its v0 (no
    method reached its goal); v1 takes the history baseline since 2026-12-02 (above). Without a time limit a fixed
    log-std (``learn_log_std=False``, the tail-risk hyperparameter entry's) keeps whole-episode weights: there is no
    noise scale to learn, and it was measured without. About 25% more wall time per step on the portfolio (the value
    head's regression), as SB3's PPO spends on its own.

    Why the history baseline on short categorical episodes (``value_baseline`` of OrderGradPPO has the method):
    a step that costs at once (a cliff, a guard) gets its own credit, where a whole-episode weight gives every step of
    the episode the same. Measured (``reproduce benchmarks``, 300k steps, ``og-cvar-history`` against the usage line
    with whole-episode weights on the same seeds): the guarded maze (24 seeds) 21 of 24 at the CVaR optimum against
    22, greedy CVaR_0.2 -3.94 against -3.95 (median -2.09 against -2.33), sampled better in 22 of 24 seeds (median
    -2.90 against -5.14; paired Wilcoxon p = 0.002), at the optimum from a median 150k steps against 232k; the lava
    grid (10 seeds) 10 of 10 either way, sampled 0.880 against 0.710; the heavy-tail bandit (10) even. Outside the
    suite, slippery CliffWalking-v1 (100-step limit, 100k steps, ``scripts/outside_probe.py``): greedy -120.5
    against -220.0 over seeds 0-5 (SB3 PPO -100.3), sampled -339.9 against -550.9 (PPO -110.4). The state
    baseline ``V(s)`` had measured worse on lava (2 of 5 seeds at the optimum against 4). Groups (``group_size``:
    GRPO-style prompts) keep whole-episode weights: not measured with it. Its regression costs 6-8% more wall time
    per step (30k steps of the bandit, the lava grid and the maze, one thread, best of 3 against
    ``value_baseline=False``).
    """
    if long:
        return HISTORY
    if objective.k == 1:
        return False
    if timed_box(action_space, limit) and group_size is None:
        return HISTORY
    if isinstance(action_space, spaces.Box):
        kwargs = policy_kwargs or {}
        return kwargs.get("critic") != "none" and bool(kwargs.get("learn_log_std", True))
    return HISTORY if group_size is None else False


def check_critic_when_tied(
    critic_when_tied: Any, value_baseline: bool | str, policy_kwargs: Mapping[str, Any] | None
) -> None:
    """``ValueError`` naming ``critic_when_tied`` unless it is ``True``, ``False`` or ``None``, or for ``True`` where
    the value head is taken (``value_baseline=True``, whose targets are the episode weights) or absent
    (``policy_kwargs["critic"] == "none"``)."""
    check_optional_flag("critic_when_tied", critic_when_tied)
    if critic_when_tied and value_baseline is True:
        raise ValueError(
            "critic_when_tied=True fits the value head to discounted returns, which value_baseline=True regresses on "
            "the episode weights: use one of them (value_baseline='history' is a baseline network of its own)"
        )
    if critic_when_tied and (policy_kwargs or {}).get("critic") == "none":
        raise ValueError("critic_when_tied=True needs the value head: drop policy_kwargs['critic']='none'")


def default_critic_when_tied(
    objective: Objective | ChannelObjective, value_baseline: bool | str, policy_kwargs: Mapping[str, Any] | None
) -> bool:
    """OrderGradPPO's and OrderGradMaskablePPO's ``critic_when_tied`` when it is ``None``: on for a ranked objective
    (k != 1) where the value head is free (not ``value_baseline=True``, not ``critic="none"``). The mean keeps its
    reward-to-go, per-step credit that does not vanish on a rollout tied at the best. OrderGradMaskablePPO's measured
    the same way: docs/benchmarks.md, "The tied critic in OrderGradMaskablePPO".

    Measured (``reproduce benchmarks``, the usage line, worst-20% mean of 100 evaluation returns, greedy / sampled):
    CartPole-v1 at 100k steps over seeds 0-19 from 497.5 / 480.3 to 500.0 / 498.5 with the critic fitted in a pass
    of its own (sampled +18.2 [4.8, 42.2] paired; SB3 PPO 500.0 / 500.0), 500.0 / 494.7 fitted in the update's
    minibatches as now (-3.8 [-9.5, 0.0] against the pass of its own, only the minibatches' order differs); at 300k
    (seeds 0-4) 500.0 / 500.0 and 500.0 / 499.6. It acts only where a whole rollout ties at the best return seen:
    no other task of the suite does (the lava grid's and the maze's risky paths pay more than their optima,
    continuous returns never tie), so their runs are bit for bit what they were. It costs the critic's forward,
    backward and Adam step in each minibatch of the update, on every task: the usage line on CartPole-v1 at 1.21x
    SB3 PPO's wall time per step, about 0.12x more than without it (``scripts/bench_agents.py``).
    docs/benchmarks.md, "A discounted critic on rollouts tied at the best" and "The tied critic fitted in the
    update's minibatches".
    """
    free = value_baseline is not True and (policy_kwargs or {}).get("critic") != "none"
    return objective.k != 1 and free


def default_reinforce_value_baseline(
    objective: Objective | ChannelObjective,
    action_space: spaces.Space,
    group_size: int | None = None,
    limit: int | None = None,
) -> bool | str:
    """OrderGradREINFORCE's ``value_baseline`` when it is ``None`` (since 2026-12-02; off before): ``"history"`` for a
    ranked objective (k != 1) of one pooled batch (no ``group_size``) on categorical actions or on continuous actions
    with a time limit (``limit``, :func:`timed_box`, as OrderGradPPO's :func:`default_value_baseline`), else off.

    This class takes one gradient step per rollout of whole-episode weights: on the guarded maze a step wasted on
    the long path costs its episode little next to the weight's noise over 32 episodes, and the greedy path kept a
    detour (4 of 10 seeds more than 1 from the optimum at 300k steps, 2 at 600k and 1M). The history baseline
    credits a step with what the weight did after it. Measured (``reproduce benchmarks``, the usage line with the
    baseline, ``og-reinforce-cvar``, against it without, ``og-reinforce-cvar no-hist``, seeds 0-9, 300k steps,
    greedy CVaR_0.2 exact, [95% bootstrap intervals]): the guarded maze 10 of 10 seeds within 1 of the optimum
    against 6 (greedy -2.09 [-2.15, -2.05] against -2.79 [-3.08, -2.46], sampled -2.09 against -2.81; at the optimum
    from a median 173k steps); the lava grid 9 of 10 either way (greedy 0.61 [-0.32, 1.09] against 0.30 [-1.28,
    1.11], sampled 0.60 against 0.29); the heavy-tail bandit 10 of 10 either way (1.000, from 15k steps);
    CartPole-v1 (100k steps, worst-20% mean of 100 evaluation returns) greedy 437.9 against 410.2, sampled 239.8
    against 227.7 (intervals overlapping). On continuous actions with a time limit (added the same day, after
    OrderGradPPO's measurement there) the point navigation (seeds 0-9) reaches its goal in 10 of 10 seeds against 7,
    greedy -7.61 [-10.31, -5.36] against -18.58 [-29.53, -8.45], sampled -15.38 [-22.24, -9.05] against -29.35;
    Pendulum-v1 with a 100-step limit (``scripts/outside_probe.py``'s protocol, seeds 0-2) -544.0 against -624.6
    (SB3 PPO -303.4: this class learns little there either way); at Pendulum-v1's own 200-step limit (the same
    protocol, seeds 0-2) -1161.2, -1196.3 and -1127.7, against -1236.8 and -1209.7 without it (seeds 0-1; SB3 PPO
    -330 to -429). On the navigation's v2 (its lower wall sealed, 2026-12-02) the usage line reaches the goal in 9
    of 10 seeds, greedy -10.87 [-18.78, -5.69]. Continuous actions without a time limit keep
    whole-episode weights: the portfolio's usage line was not measured with it. The mean's reward-to-go is its own
    per-step credit; groups (GRPO-style prompts) keep whole-episode weights, as OrderGradPPO's.
    """
    # OrderGradPPO's rule for a policy without a value head on short episodes: this class trains no critic, so V(s)
    # is out, and it takes no long-episode defaults.
    return default_value_baseline(objective, action_space, False, {"critic": "none"}, group_size, limit)


def default_batch_size(n_episodes: int) -> int:
    """``max(64, n_episodes)``: SB3's 64, raised so that a minibatch of random steps spans about as many episodes as
    the rollout holds (each episode's weight is one unit of signal in episodic mode; measured on the tail-risk task:
    at 128 episodes, 87% profitable deployments with 64-step minibatches, 95% with 128)."""
    return max(MIN_BATCH_SIZE, n_episodes)


def check_n_episodes(n_episodes: int) -> int:
    """``n_episodes`` as an int, or a ``ValueError`` if it is not an integer >= 2 (episodes ranked per update)."""
    return check_int("n_episodes", n_episodes, 2)


def episodic_sizes(
    objective: Objective | ChannelObjective,
    n_episodes: int | None,
    batch_size: int | None,
    group_size: int | None = None,
    limit: int | None = None,
    rollout_steps: int = RANKED_ROLLOUT_STEPS,
) -> tuple[int, int]:
    """Checked ``(n_episodes, batch_size)`` of a PPO-family algorithm in episodic mode, with the defaults
    :func:`default_n_episodes` and :func:`default_batch_size`.

    :param objective: the parsed objective.
    :param limit: the env's episode limit and ``rollout_steps`` the algorithm's budget at it
        (:func:`default_n_episodes`).
    :raises ValueError: ``n_episodes < 2`` or a ``batch_size`` below 2.
    """
    if n_episodes is None:
        n_episodes = default_n_episodes(objective, group_size, limit, rollout_steps)
    n_episodes = check_n_episodes(n_episodes)
    batch_size = default_batch_size(n_episodes) if batch_size is None else batch_size
    check_batch_size(batch_size)
    return n_episodes, batch_size


def check_ppo_arguments(
    learning_rate: Any,
    gamma: Any,
    ent_coef: Any,
    max_grad_norm: Any,
    policy_kwargs: Any,
    n_epochs: Any,
    clip_range: Any,
    target_kl: Any = None,
    vf_coef: Any = 0.0,
    gae_lambda: Any = 1.0,
    clip_range_vf: Any = None,
) -> None:
    """:func:`check_common_arguments` and PPO's own ``n_epochs``, ``clip_range``, ``target_kl``, ``vf_coef``,
    ``gae_lambda`` and ``clip_range_vf`` (the last three where the algorithm takes them; their defaults pass).

    :raises ValueError: naming the first bad argument.
    """
    check_common_arguments(learning_rate, gamma, ent_coef, max_grad_norm, policy_kwargs)
    check_arguments(
        n_epochs=n_epochs,
        clip_range=clip_range,
        target_kl=target_kl,
        vf_coef=vf_coef,
        gae_lambda=gae_lambda,
        clip_range_vf=clip_range_vf,
    )


def check_buffer_class(buffer_class: Any, expected: type) -> type:
    """``buffer_class`` (``expected`` when ``None``) if it subclasses ``expected``.

    :raises ValueError: naming ``rollout_buffer_class`` otherwise.
    """
    if buffer_class is None:
        return expected
    if not (isinstance(buffer_class, type) and issubclass(buffer_class, expected)):
        raise ValueError(f"rollout_buffer_class must subclass {expected.__name__}, got {buffer_class!r}")
    return buffer_class


def check_advantage(advantage: str, supported: tuple[str, ...]) -> None:
    """``ValueError`` naming the supported modes (and the closest one) if ``advantage`` is not one of them."""
    if advantage in supported:
        return
    close = difflib.get_close_matches(str(advantage), supported, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ValueError(f"unknown advantage {advantage!r}{hint}; expected one of {supported}")


def resolve_baseline_lambda(baseline_lambda: float | None, value_baseline: bool | str) -> float:
    """OrderGradPPO's ``baseline_lambda`` in force: :data:`BASELINE_LAMBDA` by default where a per-step baseline is
    on, 1.0 where none is.

    :raises ValueError: not a number in ``[0, 1]``, or given without a per-step baseline (it would do nothing).
    """
    if baseline_lambda is None:
        return BASELINE_LAMBDA if value_baseline else 1.0
    check_number("baseline_lambda", baseline_lambda)
    if not 0.0 <= baseline_lambda <= 1.0:
        raise ValueError(f"baseline_lambda must be in [0, 1], got {baseline_lambda}")
    if not value_baseline:
        raise ValueError(
            f"baseline_lambda={baseline_lambda} needs a per-step baseline, but value_baseline is off (short "
            "episodes or value_baseline=False): pass value_baseline='history' or True, or drop baseline_lambda"
        )
    return float(baseline_lambda)
