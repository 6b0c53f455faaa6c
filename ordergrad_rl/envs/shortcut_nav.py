"""RiskyShortcutNav: 2-D point navigation, continuous observations and actions, a risky shortcut zone."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from ordergrad_rl.common.arguments import check_float
from ordergrad_rl.envs.noise import BernoulliNoiseMixin
from ordergrad_rl.envs.rendering import check_render_mode, plane_frame
from ordergrad_rl.envs.tabular import ReturnDistribution

STEP_SIZE = 0.1
#: The arena ``[x_low, x_high] x [y_low, y_high]``; positions are clipped to it.
ARENA = ((0.0, 2.0), (-1.0, 1.0))
#: Walls, open rectangles ``((x_low, x_high), (y_low, y_high))``: a band across the arena with two openings.
WALLS = (((0.82, 1.17), (-1.0, -0.15)), ((0.82, 1.17), (0.15, 0.75)))
#: The walls of v2 on: the lower one reaches past the arena's bottom edge. An open rectangle does not hold its edge,
#: so in ``WALLS`` a point clipped to ``y = -1`` slid under the lower wall (v0 and v1, ``sealed_edge=False``).
SEALED_WALLS = ((WALLS[0][0], (ARENA[1][0] - STEP_SIZE, WALLS[0][1][1])), WALLS[1])
#: The risky opening (an open rectangle): every step whose segment enters it may crash.
ZONE = ((0.82, 1.17), (-0.15, 0.15))
START = (0.1, 0.0)
GOAL, GOAL_RADIUS = (1.8, 0.0), 0.15
#: The registered time limit.
MAX_EPISODE_STEPS = 50
#: The fewest steps to the goal through the zone (entering it on steps 8 to 11) and over the wall band.
SHORTCUT_STEPS, SHORTCUT_ZONE_STEPS, DETOUR_STEPS = 16, (8, 9, 10, 11), 23
#: The grid of the progress potential's values: a power of two, so that the potential's differences add up exactly
#: (in float32 too) and a terminated episode's return is exactly what it is without the shaping.
POTENTIAL_GRID = 1.0 / 1024


def progress_potential(position: np.ndarray, progress_reward: float) -> float:
    """The shaping potential ``progress_reward * (|START - GOAL| - |position - GOAL|)`` (0 at the start), rounded to
    :data:`POTENTIAL_GRID`."""
    distance = np.hypot(START[0] - GOAL[0], START[1] - GOAL[1]) - np.hypot(*(position - np.array(GOAL)))
    return float(np.round(progress_reward * distance / POTENTIAL_GRID) * POTENTIAL_GRID)


def segment_hits(start: np.ndarray, end: np.ndarray, box: tuple[tuple[float, float], ...]) -> bool:
    """Whether the segment ``start -> end`` (``[2]`` each) meets the open rectangle ``box`` (Liang-Barsky clipping;
    touching the boundary does not count)."""
    t0, t1 = 0.0, 1.0
    for axis, (low, high) in enumerate(box):
        delta = end[axis] - start[axis]
        if delta == 0.0:
            if not low < start[axis] < high:
                return False
            continue
        a, b = (low - start[axis]) / delta, (high - start[axis]) / delta
        t0, t1 = max(t0, min(a, b)), min(t1, max(a, b))
    return t1 - t0 > 1e-12


def path_return_distribution(
    n_steps: int,
    zone_steps: tuple[int, ...],
    crash_prob: float,
    step_reward: float,
    goal_reward: float,
    crash_reward: float,
) -> ReturnDistribution:
    """The exact return distribution of a path reaching the goal in ``n_steps`` steps that enters the zone on the
    (1-based) steps ``zone_steps``: a crash on step ``j`` returns ``j * step_reward + crash_reward``."""
    return crash_return_distribution(
        zone_steps, crash_prob, step_reward, crash_reward, n_steps * step_reward + goal_reward
    )


def crash_return_distribution(
    zone_steps: Sequence[int], crash_prob: float, step_reward: float, crash_reward: float, survived: float
) -> ReturnDistribution:
    """The exact return distribution of an episode that enters the zone on the (1-based) steps ``zone_steps`` until
    it crashes and returns ``survived`` if it never does: the ``i``-th zone step ``j_i`` crashes with probability
    ``p (1 - p)^(i - 1)`` and returns ``j_i * step_reward + crash_reward`` (a crash ends the episode, and the
    shaping telescopes to 0 on termination)."""
    masses: dict[float, float] = {}
    survive = 1.0
    for j in zone_steps:
        value = j * step_reward + crash_reward
        masses[value] = masses.get(value, 0.0) + survive * crash_prob
        survive *= 1.0 - crash_prob
    masses[survived] = masses.get(survived, 0.0) + survive
    return ReturnDistribution.from_dict({v: p for v, p in masses.items() if p > 0})


class RiskyShortcutNavEnv(BernoulliNoiseMixin, gym.Env[np.ndarray, np.ndarray]):
    """A point moves to a goal past a wall band: through a risky gap (short) or over the band (long).

    ## Description

    The continuous-control member of the known-answer suite::

        y = 1  +------------------+-----+-------------------+
               |                  |     |                   |   top opening: safe, a detour
        y=0.75 |                  |#####|                   |
               |                  |#####|                   |
        y=0.15 |                  |~~~~~|                   |   ~ the zone: each step that enters it
           0   |  S               |~~~~~|             G     |     crashes with probability crash_prob
        -0.15  |                  |#####|                   |
               |                  |#####|                   |
        y = -1 +------------------+-----+-------------------+
              x=0              0.82   1.17                  2

    The point starts at S = (0.1, 0); the goal is the disk of radius 0.15 around G = (1.8, 0). A step moves by
    ``0.1 * a`` for the action ``a`` (clipped to [-1, 1] per axis, then to norm 1); a move whose segment meets a
    wall is cancelled (the point stays, the step is spent), positions are clipped to the arena. A step whose segment
    enters the zone crashes with probability ``crash_prob``: it pays ``crash_reward`` and ends the episode.

    Exact optima (an analysis, not a DP; the assumptions are the dynamics above). Crossing the band takes either the
    zone or the top opening. (1) Through the zone: the goal is 1.58 away, so at least 16 steps; after 7 steps
    x <= 0.8, so no step before the 8th enters the zone, and each step advances x by at most 0.1 through the
    0.35-wide zone, so at least 4 steps enter it, the k-th zone step no earlier than step 7 + k. The straight line
    at full speed meets all of these bounds at once (16 steps, zone on steps 8-11), so its outcome in each crash
    event is at least that of any other path through the zone: it is the best path of the family for every
    objective that is monotone in the return. (2) Over the band: the shortest route, S -> (0.82, 0.75) ->
    (1.17, 0.75) -> the goal disk, is 2.219 long, so at least 23 steps, and 23 are reached (for example, through
    (0.80, 0.77) and (1.19, 0.77)); the return is deterministic. Crash events end the episode, so there is nothing
    for history to react to, and a mixture of paths never beats its best path on the mean or on CVaR (for a fixed
    threshold ``b`` the CVaR objective ``b - E[(b - G)^+] / a`` is linear in the mixture). With the defaults:

    | Policy                         | Mean   | CVaR_0.2 | P(crash) |
    |--------------------------------|--------|----------|----------|
    | shortcut (mean-optimal)        | 10.276 | -4.620   | 0.0587   |
    | detour (CVaR_0.2-optimal)      | 7.000  | 7.000    | 0.0000   |

    (``path_return_distribution`` in this module gives the full distributions.)

    The analysis leaves out the paths that run exactly along a line ``y = +-0.15``, where the zone meets a wall: the
    zone and the walls are open rectangles, so a point on such a line is in neither and crosses the band with no
    crash draw. The actions (0, 0.5625) then (0, 0.9375) put the point at y = 0.15 exactly; 11 moves right along the
    line and 5 to the goal then return 12 in 18 steps, for certain, above both rows of the table. Only exact action
    values reach such a line (a Gaussian policy's samples, clipped to the action box or not, practically never
    do), so the table gives the optima over every other path, the ones the benchmarks measure against; the dynamics
    stay as they are (stored results depend on them).

    The shortcut is a local maximum of CVaR_0.2: moving a share ``w`` of episodes from it to the detour trades
    successes (14) in the tail for the detour's 7 while the crashes stay, slope -16.380
    (``ReturnDistribution.cvar_slope``), down to -7.079 at ``w = 0.150``, back to -4.620 only at ``w = 0.299``.
    So is a policy that stops at the wall beside the gap (v1: a time-out at -43.0): towards the detour the slope is
    0 (its 7 lies above the value at risk, which only the wall's time-outs make up) and towards the shortcut
    -1.901 (its crashes fall below -43).

    ## Action Space

    ``Box(-1, 1, (2,), float32)``: the move (dx, dy) in units of the step size 0.1.

    ## Observation Space

    ``Box([0, -1, 0], [2, 1, 1], (3,), float32)``: the position (x, y) and the elapsed fraction of the time limit
    ``t / 50``.

    ## Rewards

    ``step_reward`` (-1) per step, plus ``goal_reward`` (+30) on reaching the goal disk, plus ``crash_reward`` (-40)
    on a crash. The shortcut scores 14 when it does not crash, the detour 7.

    With ``progress_reward = c > 0`` (``RiskyShortcutNav-v1`` and ``-v2``: c = 10, so that a move of one step size
    straight at the goal earns 1, as much as a step costs) each step also earns the change of the
    potential ``c * (1.7 - |position - G|)`` (:func:`progress_potential`; 1.7 is the start's distance to G), which
    is 0 at the start and is taken as 0 once the episode terminates (Ng et al., 1999, with the terminal potential
    0). The terms telescope: an episode that reaches the goal or crashes returns exactly what it returns without them
    (the potential is rounded to multiples of 1/1024, so the sum is exact in float32 too), and only a time-out gains
    its last potential, ``-50 + c * (1.7 - |position - G|)``, at most ``-50 + 1.55 c`` (-34.5 for c = 10). The
    table above therefore holds for every ``c < 36``, where no time-out reaches the detour's 7. Why v1: with v0's
    sparse goal 1.7 away and Gaussian exploration, no agent of the benchmark suite, SB3's PPO included, reached the
    goal in 300k steps (every return -50), so the task measured exploration and not risk; the potential ranks
    time-outs by how close they end.

    ## Starting State

    (0.1, 0), time 0.

    ## Episode End

    Terminated on reaching the goal disk or on a crash; truncated after 50 steps (the time limit is part of the env:
    the observation carries the time). ``gym.make(id, max_episode_steps=n)`` truncates earlier for ``n < 50``; a
    longer limit raises ``ValueError`` (:class:`~ordergrad_rl.envs.own_horizon.OwnHorizon`: it was silently 50).

    ## Arguments

    ```python
    import gymnasium as gym
    import ordergrad_rl

    env = gym.make("RiskyShortcutNav-v2", crash_prob=0.015)
    ```

    ``crash_prob=0.015`` (a probability in [0, 1]), ``step_reward=-1.0``, ``goal_reward=30.0``,
    ``crash_reward=-40.0`` (finite numbers), ``progress_reward=0.0`` (a finite number >= 0), ``sealed_edge=True`` (the
    lower wall reaches the arena's edge, as in the drawing; ``False``: v0's and v1's gap under it); anything else raises
    ``ValueError`` naming the argument. Each step that
    enters the zone draws one uniform; no other step draws. The step's ``info`` says whether it entered the zone
    (``"zone"``) and whether it crashed (``"crashed"``); ``env.unwrapped.deterministic_return_distribution(act)``
    gives a deterministic policy's exact return distribution. The crash is the env's noise event ``"crash"``
    (:mod:`ordergrad_rl.envs.noise`): ``set_noise_probs({"crash": q})`` makes the following zone steps crash with
    probability ``q``, and each zone step reports ``info["noise"] = {"crash": (1, crashed)}``.

    ## Version History

    * v2: the lower wall reaches past the arena's bottom edge (``sealed_edge=True``); the shaping, the time limit
      and the table are v1's. In v0 and v1 the wall was an open rectangle ending at ``y = -1``, which does not hold
      its edge, so a point clipped to the arena's edge slid under it: a third route, safe and slow (S -> (0.82, -1)
      -> (1.17, -1) -> the goal disk is 2.614 long, so at least 27 steps, a return of at most 3). The optima in the
      table hold there too, but that route is a local optimum the table does not show: the usage line without a level
      schedule ended on it in seed 2 (``reproduce benchmarks``, 300k steps: 34 steps, -4.0). The navigation figures
      in the agents' docstrings are v1 runs (``docs/measurements/nav_v1.json``) but where they say v2; the usage
      line and SB3's PPO end where they did on v1, GCVaR-level's seed 0 on the shortcut instead of at the wall
      (docs/benchmarks.md).
    * v1: ``progress_reward=10`` (the shaping above); the dynamics, the time limit and the table are v0's.
    * v0: Initial version (``progress_reward=0``).
    """

    metadata: dict[str, Any] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        crash_prob: float = 0.015,
        step_reward: float = -1.0,
        goal_reward: float = 30.0,
        crash_reward: float = -40.0,
        progress_reward: float = 0.0,
        render_mode: str | None = None,
        sealed_edge: bool = True,
    ) -> None:
        check_render_mode(render_mode, self.metadata)
        self.render_mode = render_mode
        self.crash_prob = check_float("crash_prob", crash_prob, 0.0, 1.0)
        self.step_reward = check_float("step_reward", step_reward)
        self.goal_reward = check_float("goal_reward", goal_reward)
        self.crash_reward = check_float("crash_reward", crash_reward)
        self.progress_reward = check_float("progress_reward", progress_reward, 0.0)
        if not isinstance(sealed_edge, bool):
            raise ValueError(f"sealed_edge must be True or False, got {sealed_edge!r}")
        self.sealed_edge = sealed_edge
        self.walls = SEALED_WALLS if sealed_edge else WALLS
        for name, bonus in (("goal_reward", self.goal_reward), ("crash_reward", self.crash_reward)):
            if not np.isfinite(self.step_reward + bonus):
                raise ValueError(f"step_reward + {name} overflows: {self.step_reward!r} + {bonus!r}")
        (x_low, x_high), (y_low, y_high) = ARENA
        self.observation_space = spaces.Box(
            np.array([x_low, y_low, 0.0], dtype=np.float32), np.array([x_high, y_high, 1.0], dtype=np.float32)
        )
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self._position = np.array(START)
        self._t = 0
        self._done = True
        self._potential = 0.0

    @property
    def noise_probs(self) -> dict[str, float]:
        """The crash of a zone step (``crash_prob``): the env's one noise event."""
        return {"crash": self.crash_prob}

    def _obs(self) -> np.ndarray:
        return np.array([*self._position, self._t / MAX_EPISODE_STEPS], dtype=np.float32)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._position = np.array(START)
        self._t = 0
        self._done = False
        self._potential = 0.0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        move = np.asarray(action, dtype=np.float64)
        if move.shape != (2,) or not np.isfinite(move).all():
            raise ValueError(f"action must be 2 finite numbers (dx, dy), got {action!r}")
        if self._done:
            raise RuntimeError("step() called on a finished episode: reset the env first")
        move = np.clip(move, -1.0, 1.0)
        move = STEP_SIZE * move / max(1.0, float(np.hypot(*move)))
        (x_low, x_high), (y_low, y_high) = ARENA
        target = np.clip(self._position + move, (x_low, y_low), (x_high, y_high))
        self._t += 1
        reward, terminated, crashed, zone = self.step_reward, False, False, False
        if not any(segment_hits(self._position, target, wall) for wall in self.walls):
            zone = segment_hits(self._position, target, ZONE)
            if zone and self.crash_prob > 0:
                crashed = bool(self.np_random.random() < self.noise_prob("crash"))
            self._position = target
        if crashed:
            reward, terminated = reward + self.crash_reward, True
        elif np.hypot(*(self._position - GOAL)) <= GOAL_RADIUS:
            reward, terminated = reward + self.goal_reward, True
        if self.progress_reward:
            # Potential-based shaping (Ng et al., 1999) with the potential 0 at the start and on termination: the
            # differences telescope, so a terminated episode returns exactly what it would without them.
            after = 0.0 if terminated else progress_potential(self._position, self.progress_reward)
            reward += after - self._potential
            self._potential = after
        truncated = not terminated and self._t >= MAX_EPISODE_STEPS
        self._done = terminated or truncated
        info: dict[str, Any] = {"crashed": crashed, "zone": zone}
        if zone and self.crash_prob > 0:
            info.update(self.noise_info("crash", crashed))
        return self._obs(), float(reward), terminated, truncated, info

    def deterministic_return_distribution(self, act: Callable[[np.ndarray], Any]) -> ReturnDistribution:
        """The exact return distribution of the deterministic policy ``act`` (observation ``[3]`` to action ``[2]``,
        e.g. a trained model's greedy action) under this env's arguments.

        The dynamics are deterministic but for the crash draws, and a crash ends the episode, so one crash-free
        episode fixes everything: the policy meets the zone on the same steps in every episode until it crashes
        (:func:`crash_return_distribution`), and returns what the crash-free episode returned if it never does.
        Runs on a copy of this env; its state and random generator are left alone.
        """
        free = RiskyShortcutNavEnv(
            0.0,
            self.step_reward,
            self.goal_reward,
            self.crash_reward,
            self.progress_reward,
            sealed_edge=self.sealed_edge,
        )
        obs, _ = free.reset()
        zone_steps: list[int] = []
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, info = free.step(act(obs))
            if info["zone"]:
                zone_steps.append(free._t)
            total, done = total + reward, terminated or truncated
        return crash_return_distribution(zone_steps, self.crash_prob, self.step_reward, self.crash_reward, total)

    def render(self) -> np.ndarray | None:
        """``"rgb_array"``: the arena at 100 pixels per unit, walls dark, the risky gap red, the goal green, the
        point dark blue, ``uint8 [200, 200, 3]``."""
        if self.render_mode != "rgb_array":
            return None
        discs = [(GOAL, GOAL_RADIUS, (60, 170, 70)), (tuple(self._position), 0.04, (30, 60, 160))]
        return plane_frame(ARENA, {(70, 70, 70): self.walls, (240, 110, 30): (ZONE,)}, discs)
