"""``rgb_array`` frames of the small benchmark envs: grids of coloured cells, bandit arms, a 2-D plane.

SB3 builds an env from an id with ``gym.make(id, render_mode="rgb_array")``, so the registered envs accept that
mode (TargetSum, a text env, refuses it in the way SB3 falls back from); these helpers draw the frames (NumPy only,
``uint8 [H, W, 3]``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np


class RenderModeError(ValueError, TypeError):
    """A render mode the env does not draw. Also a ``TypeError``: SB3's ``make_vec_env`` asks every env id for
    ``render_mode="rgb_array"`` and builds the env without one when that raises a ``TypeError``."""


def check_render_mode(render_mode: str | None, metadata: Mapping[str, Any]) -> None:
    """Raise :class:`RenderModeError` unless ``render_mode`` is ``None`` or one of ``metadata["render_modes"]``."""
    modes = metadata["render_modes"]
    if render_mode not in (None, *modes):
        allowed = f"None or one of {modes}" if modes else "None (the env does not render)"
        raise RenderModeError(f"render_mode must be {allowed}, got {render_mode!r}")


#: Cell colours of the grid layouts: floor, wall, lava, guard, goal, start; the agent is :data:`AGENT`.
CELL_COLORS: dict[str, tuple[int, int, int]] = {
    ".": (220, 220, 220),
    "#": (70, 70, 70),
    "L": (240, 110, 30),
    "X": (200, 40, 40),
    "G": (60, 170, 70),
    "S": (170, 200, 240),
}
AGENT = (30, 60, 160)


def grid_frame(cells: str, n_cols: int, agent: int, size: int = 16) -> np.ndarray:
    """A grid layout (one character per cell, row-major) with the agent's cell highlighted: ``[rows*size,
    cols*size, 3]``."""
    n_rows = len(cells) // n_cols
    image = np.zeros((n_rows * size, n_cols * size, 3), dtype=np.uint8)
    for state, cell in enumerate(cells):
        row, col = divmod(state, n_cols)
        color = AGENT if state == agent else CELL_COLORS.get(cell, CELL_COLORS["."])
        image[row * size + 1 : (row + 1) * size - 1, col * size + 1 : (col + 1) * size - 1] = color
    return image


def arms_frame(n_arms: int, pulled: int | None, size: int = 32) -> np.ndarray:
    """One square per arm, the arm just pulled highlighted: ``[size, n_arms*size, 3]``."""
    image = np.full((size, size * n_arms, 3), 255, dtype=np.uint8)
    margin = size // 8
    for arm in range(n_arms):
        color = (30, 90, 200) if arm == pulled else (200, 200, 200)
        image[margin : size - margin, size * arm + margin : size * (arm + 1) - margin] = color
    return image


Box = tuple[tuple[float, float], tuple[float, float]]


def plane_frame(
    arena: Box,
    boxes: Mapping[tuple[int, int, int], Sequence[Box]],
    discs: Sequence[tuple[tuple[float, float], float, tuple[int, int, int]]],
    pixels_per_unit: int = 100,
) -> np.ndarray:
    """A rectangle ``arena`` with filled axis-aligned ``boxes`` (colour -> boxes) and ``discs`` ((centre, radius,
    colour)) on a white background, y up: ``[H, W, 3]``."""
    (x_low, x_high), (y_low, y_high) = arena
    width, height = round((x_high - x_low) * pixels_per_unit), round((y_high - y_low) * pixels_per_unit)
    image = np.full((height, width, 3), 255, dtype=np.uint8)
    xs = x_low + (np.arange(width) + 0.5) / pixels_per_unit
    ys = y_high - (np.arange(height) + 0.5) / pixels_per_unit
    for color, group in boxes.items():
        for (bx_low, bx_high), (by_low, by_high) in group:
            rows = (ys >= by_low) & (ys <= by_high)
            cols = (xs >= bx_low) & (xs <= bx_high)
            image[np.ix_(rows, cols)] = color
    for (cx, cy), radius, color in discs:
        inside = (xs[None, :] - cx) ** 2 + (ys[:, None] - cy) ** 2 <= radius**2
        image[inside] = color
    return image
