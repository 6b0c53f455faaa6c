"""How steady is a benchmark agent's greedy policy? Its exact CVaR_0.2 after every rollout, on a tabular task.

    python scripts/greedy_trace.py [--task maze] [--method og-cvar] [--seed 0] [--timesteps 300000] [--json PATH]
                                   [--quick]
    python scripts/greedy_trace.py --from-json PATH     # the summary of an earlier --json, without training

Trains one ``reproduce benchmarks`` run (``--task`` among the exact tasks, ``--method`` among its methods) and, after
every rollout, scores the policy exactly as the benchmark does (``benchmarks.exact_score``: forward propagation of
the return distribution through the env's tabular model, greedy and stochastic) and keeps its action probabilities
in every state. Printed: the greedy CVaR_0.2 over training, the share of the rollouts of the last third whose greedy
policy is within the task's epsilon of the optimum, and the states whose greedy action changes during that third,
with their mean action probabilities. The benchmark scores only the policy after the last rollout: where that share
is well below 1, whether a seed "ends at the optimum" is a draw from it. Last, the changes of one state's action
that would raise the final greedy policy's CVaR_0.2 (``tabular.one_state_switches``), with how often the sampled
policy visits that state per episode and its probabilities there: a policy stuck at one rarely visited state (the
lava grid's cell below the start, reached by a slip) shows there; one on another route (a local optimum, one state
at a time) shows none.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from ordergrad_rl.common.options import parser_check_outputs, positive_int, seed_int
from ordergrad_rl.common.progress import progress_bar
from ordergrad_rl.common.reports import markdown_table, write_json
from ordergrad_rl.envs.tabular import TabularMDP, one_state_switches, propagate
from ordergrad_rl.experiments import benchmarks as bench


class Trace(BaseCallback):
    """After every rollout: exact greedy and stochastic CVaR_0.2 and the ``[S, A]`` action probabilities."""

    def __init__(self, env: Any, bar: Any) -> None:
        super().__init__()
        self.env, self.mdp, self.bar = env, env.tabular(), bar
        self.rows: list[dict[str, Any]] = []

    def _on_step(self) -> bool:
        self.bar.update(self.training_env.num_envs)
        return True

    def _on_rollout_end(self) -> None:
        greedy, _ = bench.exact_score(self.model, self.env, self.mdp, True)
        stochastic, _ = bench.exact_score(self.model, self.env, self.mdp, False)
        probs = bench.state_policy(self.model, self.env, self.mdp, False)
        self.rows.append({"timesteps": self.num_timesteps, "greedy": greedy, "stochastic": stochastic,
                          "probabilities": probs.round(4).tolist()})  # fmt: skip


def acting_states(mdp: Any) -> list[int]:
    """The states an episode can act in: reachable from a start state without a terminating transition (the
    maze's walls and its goal are neither)."""
    frontier, seen = [int(s) for s in np.flatnonzero(mdp.start > 0)], set()
    while frontier:
        state = frontier.pop()
        if state not in seen:
            seen.add(state)
            live = (mdp.prob[state] > 0) & ~mdp.terminated[state]  # [A, K]
            frontier += [int(s) for s in mdp.next_state[state][live]]
    return sorted(seen)


def late_summary(
    rows: list[dict[str, Any]], optimum: float, epsilon: float, states: list[int] | None = None
) -> tuple[float, list[list[Any]]]:
    """The share of the last third's rollouts with the greedy policy within ``epsilon`` of ``optimum``, and a row
    ``[state, greedy actions seen (action: rollouts), mean probabilities]`` per state (of ``states``, default all)
    whose greedy action changes."""
    late = rows[-max(1, len(rows) // 3) :]
    share = float(np.mean([row["greedy"] >= optimum - epsilon for row in late]))
    probs = np.array([row["probabilities"] for row in late])  # [rollouts, S, A]
    greedy = probs.argmax(axis=2)
    changing = []
    for state in range(probs.shape[1]) if states is None else states:
        actions, counts = np.unique(greedy[:, state], return_counts=True)
        if len(actions) > 1:
            seen = " ".join(f"{a}:{c}" for a, c in zip(actions, counts, strict=True))
            changing.append([state, seen, " ".join(f"{p:.2f}" for p in probs[:, state].mean(axis=0))])
    return share, changing


#: The one-state changes printed (the best first): a policy that drifts between near-ties has dozens.
SHOWN_SWITCHES = 10


def switch_rows(mdp: TabularMDP, probabilities: np.ndarray, alpha: float = 0.2) -> list[list[Any]]:
    """A row ``[state, greedy action (probability), better action (probability), visits per episode of the sampled
    policy, CVaR after the change]`` for each change of one state's action that raises the CVaR of the greedy policy
    of ``probabilities`` (``[S, A]``), best first."""
    probabilities = np.asarray(probabilities, dtype=np.float64)
    # A trace stores them rounded to 4 decimals: rows sum to 1 only within ~1e-4, which propagate refuses.
    probabilities = probabilities / probabilities.sum(axis=1, keepdims=True)
    greedy = probabilities.argmax(axis=1)
    visits = propagate(mdp, probabilities)[1]
    return [
        [state, f"{greedy[state]} ({probabilities[state, greedy[state]]:.3f})",
         f"{action} ({probabilities[state, action]:.3f})", round(float(visits[state]), 4), value]
        for state, action, value in one_state_switches(mdp, greedy, alpha)
    ]  # fmt: skip


def summarize(task_name: str, rows: list[dict[str, Any]], mdp: TabularMDP) -> float:
    """Print the trace's table, its last third and the final greedy policy's one-state changes; the late share."""
    task = bench.TASKS[task_name]
    assert task.optimum is not None and task.epsilon is not None  # every exact task has them
    every = max(1, len(rows) // 20)
    print(markdown_table(["env steps", "greedy CVaR_0.2", "stochastic CVaR_0.2"],
                         [[r["timesteps"], r["greedy"], r["stochastic"]] for r in rows[::every]]))  # fmt: skip
    share, changing = late_summary(rows, task.optimum, task.epsilon, acting_states(mdp))
    late = max(1, len(rows) // 3)
    print(f"\nlast third ({late} rollouts): greedy within {task.epsilon} of the optimum {task.optimum} in "
          f"{share:.0%}; the policy scored at the end: {rows[-1]['greedy']:.3f}")  # fmt: skip
    if changing:
        print("\nstates (that an episode can act in) whose greedy action changes in the last third:")
        print(markdown_table(["state", "greedy action: rollouts", "mean probabilities"], changing))
    switches = switch_rows(mdp, np.array(rows[-1]["probabilities"]))
    if switches:
        print("\nchanges of one state's action that raise the final greedy policy's CVaR_0.2:")
        header = ["state", "greedy action (prob.)", "better action (prob.)", "visits per episode", "CVaR_0.2 after"]
        print(markdown_table(header, switches[:SHOWN_SWITCHES]))
        if len(switches) > SHOWN_SWITCHES:
            print(f"({len(switches) - SHOWN_SWITCHES} more, each raising it less)")
    else:
        print("\nno change of one state's action raises the final greedy policy's CVaR_0.2")
    return share


#: What each rollout's row of a ``--json`` trace holds.
ROW_KEYS = ("timesteps", "greedy", "stochastic", "probabilities")


def _is_row(row: Any, shape: tuple[int, int]) -> bool:
    """``row`` is a rollout's row of a trace of a task whose probabilities have ``shape``."""
    if not isinstance(row, dict) or not set(ROW_KEYS) <= row.keys():
        return False
    scores = (row["timesteps"], row["greedy"], row["stochastic"])
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in scores):
        return False
    try:
        probabilities = np.asarray(row["probabilities"], dtype=float)
    except (TypeError, ValueError):  # ragged, or not numbers
        return False
    # Rounded to 4 decimals (the trace's precision), each state's row still sums to about 1.
    rows_sum_to_one = np.allclose(probabilities.sum(axis=-1), 1.0, atol=1e-3)
    return probabilities.shape == shape and bool(np.all(probabilities >= 0)) and rows_sum_to_one


def read_trace(path: Path) -> tuple[dict[str, Any], TabularMDP]:
    """The payload of an earlier ``--json`` at ``path`` and its task's tabular model, checked against each other.

    :raises ValueError: ``path`` cannot be read, is not JSON, or is not such a trace (e.g. another script's JSON).
    """
    import gymnasium as gym

    try:
        payload = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"cannot read {path}: {err}") from err
    exact = [name for name, task in bench.TASKS.items() if task.exact]
    what = "the --json of greedy_trace.py"
    if not isinstance(payload, dict) or not {"task", "method", "seed", "rows"} <= payload.keys():
        raise ValueError(f"{path} is not {what}: expected an object with task, method, seed and rows")
    if payload["task"] not in exact:
        raise ValueError(f"{path}: task {payload['task']!r} is not one of the exact tasks {', '.join(exact)}")
    mdp = bench.tabular_model(gym.make(bench.TASKS[payload["task"]].env_id).unwrapped)
    shape = (mdp.n_states, mdp.n_actions)
    rows = payload["rows"]
    if not isinstance(rows, list) or not rows or not all(_is_row(row, shape) for row in rows):
        raise ValueError(
            f"{path} is not {what}: rows must be a non-empty list of {{{', '.join(ROW_KEYS)}}}, the scores numbers "
            f"and the probabilities [states, actions] = {list(shape)} of task {payload['task']}"
        )
    return payload, mdp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    exact = [name for name, task in bench.TASKS.items() if task.exact]
    parser.add_argument("--task", choices=exact, default="maze")
    parser.add_argument("--method", choices=list(bench.METHODS), default="og-cvar")
    parser.add_argument("--seed", type=seed_int, default=0)
    parser.add_argument("--timesteps", type=positive_int, default=None, help="default: the task's budget")
    parser.add_argument("--quick", action="store_true", help="10,000 steps (CI; the numbers mean nothing)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--json", type=Path, default=None, help="write every rollout's scores and probabilities")
    parser.add_argument("--from-json", type=Path, default=None, help="summarize an earlier --json (no training)")
    args = parser.parse_args(argv)
    parser_check_outputs(parser, args)  # --json: before the training, not after it
    th.set_num_threads(1)
    import gymnasium as gym

    if args.from_json is not None:
        try:
            payload, mdp = read_trace(args.from_json)
        except ValueError as err:
            parser.error(f"argument --from-json: {err}")
        print(f"{payload['task']}/{payload['method']}/seed{payload['seed']} ({args.from_json})")
        summarize(payload["task"], payload["rows"], mdp)
        return 0
    task, method = bench.TASKS[args.task], bench.METHODS[args.method]
    timesteps = 10_000 if args.quick else args.timesteps or task.timesteps
    model = bench.build_model(method, args.task, args.seed)
    with progress_bar(f"{args.task}/{args.method}/seed{args.seed}", timesteps, "step", args.quiet) as bar:
        trace = Trace(gym.make(task.env_id).unwrapped, bar)
        model.learn(timesteps, callback=trace)
    rows = trace.rows
    share = summarize(args.task, rows, trace.mdp)
    if args.json is not None:
        payload = {"task": args.task, "method": args.method, "seed": args.seed, "late_share": share, "rows": rows}
        print(f"json: {write_json(args.json, payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
