"""The usage line on tasks outside the suite: CliffWalking, FrozenLake 8x8, Pendulum, MountainCar, Taxi and more.

    python scripts/outside_probe.py [--task cliffwalking|pendulum|mountaincar|...] [--methods METHOD ...] [--seeds 0]
                                    [--steps 100000] [--limit 100] [--episodes 500] [--exact] [--json out.json]
                                    [--quick]

``--methods`` takes names of :data:`METHODS` (default: all of them).

Each method is trained as a new user would (``PPO("MlpPolicy", env)``, ``OrderGradPPO("MlpPolicy", env,
objective="cvar0.2", ...)``), then scored on the mean of the worst 20% of ``--episodes`` evaluation returns, greedy
and sampled (start seeds 10,000 on, the same for every method).

``--task cliffwalking``: a slippery step goes the intended way with probability 1/3 and to either side with 1/3
each; a step into the cliff pays -100 and returns to the start (it does not end the episode), every step pays -1,
and the goal ends it. ``--exact`` adds the task's exact mean- and CVaR_0.2-optimal values
(:func:`~ordergrad_rl.envs.tabular.cvar_optimum` on the env's own transition table; several minutes at a 100-step
limit).

``--task pendulum``: Gymnasium's Pendulum-v1 (continuous observations and actions) truncated after ``--limit``
steps, 100 by default (its registered limit is 200): at 100 steps its episodes count as short
(:data:`~ordergrad_rl.agents.common.arguments.LONG_EPISODE_STEPS`), with continuous actions and a time limit. Its
return's lower tail is the starts that hang down (a swing-up takes most of the episode).

``--task mountaincar``: Gymnasium's MountainCar-v0 (``--limit 200``, its registered limit): every step pays -1 and
reaching the flag ends the episode, so every episode of a policy that never reaches it returns the limit's -200, tied:
a rollout blind to success until the first one (``novelty_when_blind``; ``og-cvar-nonovelty`` without it).

``--task mountaincarcontinuous`` (MountainCarContinuous-v0, ``--limit 999``) and ``--task lunarlandercontinuous``
(LunarLander-v3 with ``continuous=True``, ``--limit 1000``): long episodes with continuous actions, the action cost in
the return.

``--task rareevent``: :class:`RareEventGrid`, a gridworld made for this probe (a band across the short path where
each entered cell has a rare costly event; mean-optimal straight through, CVaR_0.2-optimal round it; ``--limit 50``).
``--task taxi``: Gymnasium's Taxi-v4 with ``is_rainy=True`` (a move goes its way with probability 0.8 and to either
side with 0.1 each; ``--limit 200``, its registered limit). Both are tabular and scored exactly.

``--task frozenlake8x8``: Gymnasium's slippery 8x8 FrozenLake (``--limit 200``, FrozenLake8x8-v1's): the goal pays 1,
every failure (a hole, or the time limit) 0, so CVaR_0.2 is ``max(0, (p - 0.8) / 0.2)`` for a success rate ``p``:
0 for every policy that fails more than 20% of the time. On the tabular tasks (:data:`TABULAR`) each
run is also scored exactly (``greedy_exact`` and ``sampled_exact``, CVaR_0.2; ``greedy_exact_mean``): the policy's
action probabilities in every state, propagated forward (:func:`exact_scores`); ``--exact`` adds the task's optima.

``--quick`` (CI) trains 1,000 steps on a 30-step limit and scores 20 episodes.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3 import PPO

from ordergrad_rl.agents import OrderGradPPO
from ordergrad_rl.common.provenance import run_provenance
from ordergrad_rl.envs.grid import MOVES, GridEnv
from ordergrad_rl.envs.tabular import TabularMDP, cvar_optimum, mean_optimum
from ordergrad_rl.experiments.benchmarks import STD_FIT_STEP, exact_score, late_linear_ent_coef
from ordergrad_rl.risk import lower_tail_mean

ALPHA = 0.2
#: method name -> OrderGradPPO keyword arguments (``ppo``: SB3's PPO at its defaults). ``og-cvar`` is the usage line,
#: which on short episodes with categorical actions has trained with the history baseline by default since 2026-11-29
#: and on continuous actions with a time limit since 2026-12-02 (``og-cvar-history`` sets it); ``og-cvar-whole`` is
#: the usage line before on CliffWalking, with whole-episode weights, and ``og-cvar-state`` the usage line before on
#: Pendulum, with the value head's ``V(s)``; ``og-cvar-noent`` and ``og-cvar-ent005`` the usage line without its
#: entropy bonus and with half of it (categorical actions only: continuous ones have no bonus by default);
#: ``og-cvar-nonovelty`` the usage line before ``novelty_when_blind`` was its default (2026-12-02); ``og-cvar-novphase``
#: and ``og-cvar-nosched-novphase`` the usage line, with or without its risk schedule, with ``novelty_phase=0.15``.
#: ``og-cvar-n16`` and ``og-cvar-n16-noent``: the usage line at 16 episodes per update (64 at a 100-step limit), with
#: and without its bonus (16 is the usage line's own size at 100k steps and a 100-step limit since 2026-12-05);
#: ``og-cvar-n32``: at 32; ``og-cvar-entlate``: its bonus held over the first 60% of training and decayed linearly to 0
#: over the rest (:func:`~ordergrad_rl.experiments.benchmarks.late_linear_ent_coef`, recorded by its name): the
#: usage line's own bonus on short categorical episodes since 2026-12-03 (CliffWalking), so ``og-cvar-n16`` has it
#: there too since, and the stored ``og-cvar-n16`` runs had the constant 0.01. ``og-cvar-plateau-quarter``: the usage
#: line on long episodes before 2026-12-06, its bonus decayed on the returns' plateaus over a quarter of the budget
#: (a tenth since). ``og-cvar-stdfit``: the usage line with its Gaussian log-std fitted outside the clipped surrogate
#: within ``log(1 + clip_range)`` per update (``log_std_step``; docs/benchmarks.md, "The log-std fitted outside the
#: clip").
METHODS: dict[str, dict[str, Any]] = {
    "ppo": {},
    "og-cvar": {"objective": "cvar0.2"},
    "og-cvar-history": {"objective": "cvar0.2", "value_baseline": "history"},
    "og-cvar-whole": {"objective": "cvar0.2", "value_baseline": False},
    "og-cvar-state": {"objective": "cvar0.2", "value_baseline": True},
    "og-cvar-noent": {"objective": "cvar0.2", "ent_coef": 0.0},
    "og-cvar-ent005": {"objective": "cvar0.2", "ent_coef": 0.005},
    "og-cvar-nonovelty": {"objective": "cvar0.2", "novelty_when_blind": False},
    "og-cvar-novphase": {"objective": "cvar0.2", "novelty_phase": 0.15},
    "og-cvar-nosched-novphase": {"objective": "cvar0.2", "risk_schedule": "none", "novelty_phase": 0.15},
    "og-cvar-n16": {"objective": "cvar0.2", "n_episodes": 16},
    "og-cvar-n32": {"objective": "cvar0.2", "n_episodes": 32},
    "og-cvar-n16-noent": {"objective": "cvar0.2", "n_episodes": 16, "ent_coef": 0.0},
    "og-cvar-entlate": {"objective": "cvar0.2", "ent_coef": late_linear_ent_coef},
    "og-cvar-plateau-quarter": {"objective": "cvar0.2", "entropy_plateau": {"decay_share": 0.25}},
    "og-cvar-plateau": {"objective": "cvar0.2", "entropy_plateau": True},
    "og-cvar-stdfit": {"objective": "cvar0.2", "log_std_step": STD_FIT_STEP},
}
#: task name -> the Gymnasium id and keyword arguments of its env (``max_episode_steps`` comes from ``--limit``).
TASKS: dict[str, tuple[str, dict[str, Any]]] = {
    "cliffwalking": ("CliffWalking-v1", {"is_slippery": True}),
    "pendulum": ("Pendulum-v1", {}),
    "mountaincar": ("MountainCar-v0", {}),
    "mountaincarcontinuous": ("MountainCarContinuous-v0", {}),
    "lunarlandercontinuous": ("LunarLander-v3", {"continuous": True}),
    "frozenlake8x8": ("FrozenLake-v1", {"map_name": "8x8", "is_slippery": True}),
    "taxi": ("Taxi-v4", {"is_rainy": True}),
    "rareevent": ("OutsideRareEventGrid-v0", {}),
}
#: The tasks with a transition table (``env.unwrapped.P``): scored exactly, and solved with ``--exact``.
TABULAR = ("cliffwalking", "frozenlake8x8", "taxi", "rareevent")


class RareEventGrid(GridEnv):
    """A 5 x 8 gridworld made for this probe (not one of the project's envs): the start at row 2, column 0, the goal
    at row 2, column 7 (+10, terminal). Columns 3 and 4 of rows 1-3 (``E``) are a band where each entered cell has a
    rare costly event (probability 0.03: -20, terminal); rows 0 and 4 go round it, 4 steps longer. Every step pays
    -0.5, and a move goes its way with probability 0.9 and to either side with 0.05 each (a move off the grid stays).
    The straight path is mean-optimal and the way round CVaR_0.2-optimal (``--exact``). The project's
    :class:`~ordergrad_rl.envs.grid.GridEnv` steps it from its table ``P``."""

    LAYOUT = ("........", "...EE...", "S..EE..G", "...EE...", "........")
    EVENT_PROB, EVENT_REWARD, GOAL_REWARD, STEP_REWARD, SLIP = 0.03, -20.0, 10.0, -0.5, 0.05
    max_episode_steps = 50

    def __init__(self) -> None:
        self._init_grid(self.LAYOUT, None)
        for state, cell in enumerate(self.cells):
            self.P[state] = {action: self._outcome_list(state, cell, action) for action in range(len(MOVES))}

    @property
    def initial_state_distrib(self) -> np.ndarray:
        """``[S]`` the start distribution, under Gymnasium's toy-text name (:func:`tabular_mdp` reads it)."""
        return np.eye(len(self.cells))[self.start_state]

    def _outcome_list(self, state: int, cell: str, action: int) -> list[tuple[float, int, float, bool]]:
        if cell == "G":
            return [(1.0, state, 0.0, True)]
        outcomes = []
        for way, prob in ((action, 1 - 2 * self.SLIP), ((action + 1) % 4, self.SLIP), ((action + 3) % 4, self.SLIP)):
            target = self._move(state, way)
            if self.cells[target] == "G":
                outcomes.append((prob, target, self.STEP_REWARD + self.GOAL_REWARD, True))
            elif self.cells[target] == "E" and target != state:
                outcomes.append((prob * self.EVENT_PROB, target, self.STEP_REWARD + self.EVENT_REWARD, True))
                outcomes.append((prob * (1 - self.EVENT_PROB), target, self.STEP_REWARD, False))
            else:
                outcomes.append((prob, target, self.STEP_REWARD, False))
        return outcomes


gym.register(
    "OutsideRareEventGrid-v0",
    # ignore[arg-type]: Gymnasium types an entry point taking keyword arguments; gym.make passes this one none.
    entry_point=RareEventGrid,  # type: ignore[arg-type]
    max_episode_steps=RareEventGrid.max_episode_steps,
)


def make_env(limit: int, task: str = "cliffwalking") -> gym.Env:
    """The ``task``'s env (:data:`TASKS`) truncated after ``limit`` steps."""
    env_id, kwargs = TASKS[task]
    return gym.make(env_id, max_episode_steps=limit, **kwargs)


def tail(returns: list[float]) -> dict[str, float]:
    """The mean of the worst ``ALPHA`` share of ``returns`` (and their mean and minimum)."""
    r = np.asarray(returns, dtype=np.float64)
    return {"cvar": lower_tail_mean(r, ALPHA), "mean": float(r.mean()), "min": float(r.min())}


def evaluate(
    predict: Callable[..., Any], limit: int, episodes: int, deterministic: bool, task: str = "cliffwalking"
) -> dict[str, float]:
    """Score ``predict`` on ``episodes`` episodes of ``task`` started from seeds 10,000 on."""
    env, returns = make_env(limit, task), []
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    for i in range(episodes):
        obs, _ = env.reset(seed=10_000 + i)
        done, total = False, 0.0
        while not done:
            action, _ = predict(obs, deterministic=deterministic)
            obs, reward, terminated, truncated, _ = env.step(int(action) if discrete else action)
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    return tail(returns)


def run(method: str, seed: int, steps: int, limit: int, episodes: int, task: str = "cliffwalking") -> dict[str, Any]:
    """Train ``method`` on ``task`` for ``steps`` env steps and score it greedy and sampled."""
    start = time.time()
    env = make_env(limit, task)
    kwargs = METHODS[method]
    model = PPO("MlpPolicy", env, seed=seed) if method == "ppo" else OrderGradPPO("MlpPolicy", env, seed=seed, **kwargs)
    model.learn(steps)
    return {
        "method": method,
        "kwargs": kwargs,
        "seed": seed,
        "steps": steps,
        "timesteps": int(model.num_timesteps),
        "greedy": evaluate(model.predict, limit, episodes, True, task),
        "sampled": evaluate(model.predict, limit, episodes, False, task),
        **(exact_scores(model, env, tabular_mdp(limit, task)) if task in TABULAR else {}),
        "seconds": round(time.time() - start, 1),
        "provenance": run_provenance(),  # it reproduces bit for bit only where this matches
        # the plateau rule in force, as the agent logs it (OrderGradPPO: long categorical episodes; since 2026-12-06)
        **({"entropy_plateau": model.hparams()["entropy_plateau"]} if isinstance(model, OrderGradPPO) else {}),
    }


def tabular_mdp(limit: int, task: str = "cliffwalking") -> TabularMDP:
    """The ``task``'s transition table (``env.unwrapped.P``) as a :class:`TabularMDP` with horizon ``limit``."""
    if task not in TABULAR:
        raise ValueError(f"{task} has no transition table: exact values need one of {TABULAR}")
    env: Any = make_env(limit, task).unwrapped  # a toy-text env's P and initial_state_distrib
    return TabularMDP.from_outcomes(env.P, env.initial_state_distrib, limit)


def exact(limit: int, task: str = "cliffwalking") -> dict[str, float]:
    """The exact mean- and CVaR_0.2-optimal values (history-dependent policies) at the time limit ``limit``."""
    mdp = tabular_mdp(limit, task)
    solution = cvar_optimum(mdp, ALPHA)
    return {"mean_optimum": float(mean_optimum(mdp)[0]), "cvar_optimum": float(solution.value)}


def exact_scores(model: Any, env: gym.Env, mdp: TabularMDP) -> dict[str, float]:
    """A trained model's exact greedy and sampled CVaR_0.2 on a tabular task, and its greedy policy's mean: the
    policy in each state propagated forward, as ``reproduce benchmarks`` scores its tabular tasks
    (:func:`exact_score`)."""
    greedy, greedy_mean = exact_score(model, env, mdp, True)
    sampled, _ = exact_score(model, env, mdp, False)
    return {"greedy_exact": greedy, "sampled_exact": sampled, "greedy_exact_mean": greedy_mean}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cliffwalking", choices=list(TASKS))
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--limit", type=int, default=100, help="the episode limit (max_episode_steps)")
    parser.add_argument("--episodes", type=int, default=500, help="evaluation episodes per score")
    parser.add_argument(
        "--exact", action="store_true", help="also solve a tabular task exactly (cliffwalking: minutes at limit 100)"
    )
    parser.add_argument("--json", help="write the results here")
    parser.add_argument(
        "--quick", action="store_true", help="1,000 steps, a 30-step limit, 20 episodes (CI): drop those options"
    )
    args = parser.parse_args(argv)
    if args.exact and args.task not in TABULAR:
        parser.error(f"--exact solves a transition table; {args.task} has none")
    if args.quick:
        sizes = ("steps", "limit", "episodes")
        given = [f"--{key}" for key in sizes if getattr(args, key) != parser.get_default(key)]
        if given:
            parser.error(f"--quick sets its own sizes (a smoke test); drop {' '.join(given)}, or drop --quick")
        args.steps, args.limit, args.episodes = 1_000, 30, 20
    th.set_num_threads(1)
    env_id, env_kwargs = TASKS[args.task]
    out: dict[str, Any] = {"env": env_id, **env_kwargs, "limit": args.limit, "runs": []}
    if args.exact:
        out.update(exact(args.limit, args.task))
        print(f"exact: mean optimum {out['mean_optimum']:.3f}, CVaR_0.2 optimum {out['cvar_optimum']:.3f}")
    width = max(16, *(len(method) for method in args.methods))  # long method names keep the columns aligned
    header = f"{'method':>{width}} {'seed':>4} {'greedy CVaR_0.2':>16} {'sampled CVaR_0.2':>17}"
    print(header + ("  exact greedy / sampled CVaR_0.2" if args.exact else ""))
    for method in args.methods:
        for seed in args.seeds:
            result = run(method, seed, args.steps, args.limit, args.episodes, args.task)
            out["runs"].append(result)
            line = f"{method:>{width}} {seed:>4} {result['greedy']['cvar']:>16.2f} {result['sampled']['cvar']:>17.2f}"
            if "greedy_exact" in result:
                line += f"  {result['greedy_exact']:.3f} / {result['sampled_exact']:.3f}"
            print(line)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=lambda value: value.__name__)  # a schedule by its name
    return out


if __name__ == "__main__":
    main()
