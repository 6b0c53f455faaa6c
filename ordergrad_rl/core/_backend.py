"""The few array operations where NumPy and torch differ, so that each estimator is written once.

Everything else in the core uses operators both libraries share (``*``, ``+``, ``.sum``, slicing).
torch is never imported here: a tensor can only reach us if the caller already imported torch.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
from scipy import special

Array = Any  # np.ndarray | torch.Tensor


def is_torch(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def as_float_array(x: Any, name: str) -> Array:
    """Return ``x`` as a floating NumPy array or torch tensor (ints and lists become float64)."""
    if is_torch(x):
        return x if x.is_floating_point() else x.double()
    arr = np.asarray(x)
    if arr.dtype.kind not in "fiub":
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    return arr if arr.dtype.kind == "f" else arr.astype(np.float64)


def check_finite(x: Array, name: str) -> None:
    finite = bool(x.isfinite().all()) if is_torch(x) else bool(np.isfinite(x).all())
    if not finite:
        raise ValueError(f"{name} contain NaN or inf; OrderGrad needs finite values (check the environment's rewards)")


def sort(x: Array) -> tuple[Array, Array]:
    """Stable ascending sort along the last axis: ``(values, permutation)``; ties keep their batch order."""
    if is_torch(x):
        values, perm = x.sort(dim=-1, stable=True)
        return values, perm
    perm = np.argsort(x, axis=-1, kind="stable")
    return np.take_along_axis(x, perm, axis=-1), perm


def unsort(y: Array, perm: Array) -> Array:
    """Scatter ``y`` (sorted order along the rank axis, shape ``[..., N]`` or ``[..., N, C]``) back to batch order."""
    trailing = y.ndim - perm.ndim  # 0 (collapsed) or 1 (rankwise)
    if is_torch(y):
        index = perm[..., None].expand_as(y) if trailing else perm
        return y.new_empty(y.shape).scatter_(perm.ndim - 1, index, y)
    out = np.empty_like(y)
    if perm.ndim == 1:  # the common single-group case: plain fancy indexing is fastest
        out[perm] = y
    else:
        np.put_along_axis(out, perm[..., None] if trailing else perm, y, axis=perm.ndim - 1)
    return out


def cumsum(x: Array, axis: int) -> Array:
    return x.cumsum(dim=axis) if is_torch(x) else np.cumsum(x, axis=axis)


def constant(table: np.ndarray, like: Array, cache: dict) -> Array:
    """``table`` (float64 NumPy) as an array of ``like``'s kind, dtype and device, memoized in ``cache``."""
    if is_torch(like):
        key = (id(table), like.dtype, like.device)
        if key not in cache:
            torch = sys.modules["torch"]
            # Copy: the float64 tables are read-only and torch warns on non-writable NumPy memory.
            cache[key] = torch.tensor(np.array(table), dtype=like.dtype, device=like.device)
        return cache[key]
    if like.dtype == np.float64:
        return table
    key = (id(table), like.dtype)
    if key not in cache:
        cache[key] = table.astype(like.dtype)
    return cache[key]


def tie_average(sorted_x: Array, y: Array) -> Array:
    """Replace ``y`` by its mean over each run of equal values in ``sorted_x`` (exact tie symmetry).

    The estimators give tied rewards equal values in exact arithmetic (App. F.2: tied positions are
    interchangeable); averaging removes the last-bit differences the scans leave behind.

    :param sorted_x: ``[..., N]`` ascending along the last axis.
    :param y: ``[..., N]`` or ``[..., N, C]`` in the same sorted order.
    """
    if is_torch(sorted_x):
        ties = sorted_x[..., 1:] == sorted_x[..., :-1]
        if not bool(ties.any()):
            return y
        torch = sys.modules["torch"]
        starts = torch.ones(sorted_x.shape, dtype=torch.bool, device=sorted_x.device)
        starts[..., 1:] = ~ties
        ids = starts.reshape(-1).cumsum(0) - 1
        flat = y.reshape(ids.numel(), -1)
        sums = flat.new_zeros((int(ids[-1]) + 1, flat.shape[1])).index_add_(0, ids, flat)
        counts = torch.bincount(ids).to(flat.dtype)[:, None]
        return (sums / counts)[ids].reshape(y.shape)
    ties = sorted_x[..., 1:] == sorted_x[..., :-1]
    if not ties.any():
        return y
    starts = np.ones(sorted_x.shape, dtype=bool)
    starts[..., 1:] = ~ties
    starts = np.flatnonzero(starts.reshape(-1))
    flat = y.reshape(sorted_x.size, -1)
    counts = np.diff(np.append(starts, sorted_x.size))
    means = np.add.reduceat(flat, starts, axis=0) / counts[:, None]
    return np.repeat(means, counts, axis=0).reshape(y.shape)


def lgamma(x: Array) -> Array:
    return x.lgamma() if is_torch(x) else special.gammaln(x)


def log_clamped(x: Array, floor: float = -1e4) -> Array:
    """``log(x)`` for ``x >= 0`` with ``log(0)`` replaced by ``floor``: then ``0 * log(0) = 0`` and
    ``exp(s * log(0) + c) = 0`` for ``s >= 1`` and moderate ``c`` (``floor`` is far below any log of a float)."""
    if is_torch(x):
        return x.log().clamp_min(floor)
    with np.errstate(divide="ignore"):
        return np.maximum(np.log(x), floor)


def exp(x: Array) -> Array:
    return x.exp() if is_torch(x) else np.exp(x)


def arange_like(n: int, like: Array) -> Array:
    if is_torch(like):
        return sys.modules["torch"].arange(n, dtype=like.dtype, device=like.device)
    return np.arange(n, dtype=like.dtype)


def flip_cumsum(x: Array, axis: int) -> Array:
    """Reverse cumulative sum along ``axis`` (suffix sums)."""
    if is_torch(x):
        return x.flip(axis).cumsum(dim=axis).flip(axis)
    return np.flip(np.cumsum(np.flip(x, axis), axis=axis), axis)


def concat(parts: list[Array], axis: int) -> Array:
    if is_torch(parts[0]):
        return sys.modules["torch"].cat(parts, dim=axis)
    return np.concatenate(parts, axis=axis)


def zeros_like(x: Array) -> Array:
    return x.new_zeros(x.shape) if is_torch(x) else np.zeros_like(x)


def take_last(x: Array, index: Array) -> Array:
    """``x[..., index]`` gathered along the last axis with a per-row ``index`` of the same leading shape."""
    if is_torch(x):
        return x.gather(-1, index)
    return np.take_along_axis(x, index, axis=-1)
