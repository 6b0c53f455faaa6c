"""Array plumbing of the estimator core, on the Python array API standard (``array-api-compat``).

The estimators are written once against the standard namespace ``xp`` of their input: NumPy, PyTorch, JAX or
CuPy (whichever the caller already imported; nothing here imports them). Outputs follow the input's type,
dtype and device. Three operations the standard lacks get a per-library implementation with a standard-only
fallback: scattering back to batch order (:func:`unsort`), the running maximum that finds runs of ties
(:func:`_running_max`) and stopping gradients (:func:`stop_gradient`). Standard operations take a faster
library call on the hot path: torch's ``sort`` returns values and permutation in one kernel (:func:`stable_sort`),
torch gathers without wrapping negative indices and NumPy/CuPy through flat fancy indexing (:func:`take_sorted`),
and ``exp`` of a temporary runs in place on torch and NumPy (:func:`exp_`). The standard-only paths are tested on
``array-api-strict``.

JAX inside ``jit``/``vmap``/``grad`` passes *tracers*, and ``torch.func.vmap`` batched tensors, whose values cannot be
inspected: for them the value checks (NaN/inf, ties, huge magnitudes) are skipped or done unconditionally
(:func:`is_traced`).
"""

from __future__ import annotations

import functools
import math
import sys
from collections.abc import Callable
from typing import Any

import array_api_compat as compat
import numpy as np

Array = Any  # an array of any array-API library


def host(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn``, a NumPy computation, run as plain Python where torch is loaded, also under ``torch.compile``: dynamo
    compiled it frame by frame, converting the NumPy calls to torch ops, and failed inside torch (on the weight tables
    with "Expected np.nditer base", on GCVaR's weights with "Subtraction ... with a bool tensor")."""
    disabled: list[Callable[..., Any]] = []  # torch.compiler.disable(fn), made once (making it takes ~40 us)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:  # nothing is compiling (and importing dynamo would take a second)
            return fn(*args, **kwargs)
        if not disabled:
            disabled.append(sys.modules["torch"].compiler.disable(fn))
        return disabled[0](*args, **kwargs)

    return wrapper


def is_traced(x: Array) -> bool:
    """True for an array whose values Python cannot inspect: a JAX tracer (inside ``jit``, ``vmap``, ``grad``), or a
    torch tensor batched by ``torch.func.vmap`` (at any depth of ``torch.func`` transforms; under ``torch.func.grad``
    alone the values are known and the checks run)."""
    jax = sys.modules.get("jax")
    if jax is not None and isinstance(x, jax.core.Tracer):
        return True
    return compat.is_torch_array(x) and _is_vmapped(x)


def is_transformed(x: Array) -> bool:
    """True for an array that a function transform traces or differentiates: :func:`is_traced`, or a torch tensor
    wrapped by ``torch.func`` (``grad``, ``jvp``, ``jacrev``, ``jacfwd``, ...), whose values NumPy cannot take."""
    return is_traced(x) or (
        compat.is_torch_array(x) and sys.modules["torch"]._C._functorch.is_functorch_wrapped_tensor(x)
    )


def _is_vmapped(x: Array) -> bool:
    functorch = sys.modules["torch"]._C._functorch
    while functorch.is_functorch_wrapped_tensor(x):
        if functorch.is_batchedtensor(x):
            return True
        x = functorch.get_unwrapped(x)
    return False


def to_numpy(x: Any) -> np.ndarray:
    """A NumPy copy/view of ``x`` (a host or device array of any library, a list, a scalar), without gradients."""
    if compat.is_torch_array(x):
        x = x.detach()
        try:
            return x.cpu().numpy()
        except RuntimeError:  # a concrete tensor inside torch.func.grad/jvp: "Cannot access data pointer of Tensor ..."
            return np.asarray(x.tolist())
    if compat.is_cupy_array(x):
        return x.get()
    return np.asarray(x)


def check_concrete(x: Any, name: str, what: str) -> None:
    """Refuse an array that a function transform is tracing (``jax.jit``, ``jax.vmap``, ``jax.grad``, ``torch.func``)
    where ``what``, a NumPy computation, needs its values: a ``TypeError`` naming ``what``, where the libraries' own
    errors name neither (torch's "Cannot access data pointer of Tensor that doesn't have storage")."""
    if is_transformed(x):
        raise TypeError(
            f"{what} needs the values of {name} (it computes in NumPy), but a function transform (jax.jit, jax.vmap, "
            f"jax.grad or torch.func) is tracing it: call it outside the transform, on concrete arrays"
        )


def to_host(x: Any, name: str, what: str) -> np.ndarray:
    """:func:`to_numpy` of ``x`` after :func:`check_concrete`."""
    check_concrete(x, name, what)
    return to_numpy(x)


def host_float64(x: Any, name: str, what: str) -> np.ndarray:
    """:func:`to_host` of ``x`` as a float64 NumPy array, for ``what``, a NumPy computation. Complex values raise, as
    :func:`real_floating` refuses them (NumPy's cast dropped the imaginary part with only a warning)."""
    values = to_host(x, name, what)
    if np.iscomplexobj(values):
        raise TypeError(f"{name} must be real numbers, got dtype {values.dtype}; pass the real part explicitly")
    return np.asarray(values, dtype=np.float64)


def real_floating(x: Any, name: str) -> tuple[Any, Array]:
    """``(xp, x)`` with ``x`` a real floating array of its own library (lists, scalars and ints become float64 NumPy /
    the library's float64 where ``x``'s device has one). Complex or non-numeric input raises, naming what is
    accepted."""
    if not compat.is_array_api_obj(x) or isinstance(x, np.generic):
        try:
            x = np.asarray(x)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a numeric array of shape [..., N] ({err})") from None
    if isinstance(x, np.ndarray) and x.dtype.kind not in "fiubc":
        raise ValueError(f"{name} must be numeric, got dtype {x.dtype}")
    if isinstance(x, np.ma.MaskedArray) and np.ma.is_masked(x):
        raise ValueError(
            f"{name} is a masked array with masked entries, which OrderGrad would not skip: pass the values to use "
            f"({name}.compressed() for one group, or {name}.filled(value))"
        )
    xp = compat.array_namespace(x)
    if xp.isdtype(x.dtype, "complex floating"):
        raise TypeError(f"{name} must be real numbers, got complex dtype {x.dtype}; pass the real part explicitly")
    if xp.isdtype(x.dtype, "real floating"):
        return xp, x
    info, device = xp.__array_namespace_info__(), compat.device(x)
    floating = info.dtypes(kind="real floating", device=device)
    dtype = floating["float64"] if "float64" in floating else info.default_dtypes(device=device)["real floating"]
    return xp, xp.astype(x, dtype)


def widen(x: Array, xp: Any, *, numpy_float64: bool = True) -> tuple[Array, Any]:
    """``(x in the precision the scans need, the dtype to give results back in or None)``: half-precision rewards
    (float16, bfloat16) are computed in float32, whose 24-bit mantissa the scans need (float16 N = 2000 loses 2%
    relative), and NumPy's float32 (and float16) in float64: NumPy adds a cumulative sum's terms one after another in
    the array's own precision, so its float32 scans lost about N ulps (4.5e-4 of the largest advantage at N = 65536,
    where torch's float32 cumulative sum, accumulated in double, keeps 1e-7). Results return in the input's dtype.

    :param numpy_float64: ``False`` widens only half precision, for NumPy too (to float32).
    """
    bits = xp.finfo(x.dtype).bits
    if numpy_float64 and compat.is_numpy_namespace(xp) and bits < 64:
        return x.astype(np.float64), x.dtype
    if bits >= 32:
        return x, None
    info = xp.__array_namespace_info__()
    return xp.astype(x, info.dtypes(kind="real floating")["float32"]), x.dtype


def narrow(out: Array, dtype: Any, xp: Any, what: str) -> Array:
    """``out`` back in the caller's ``dtype`` (see :func:`widen`; unchanged for ``None``), refusing results that
    overflow it (never inf)."""
    if dtype is None:
        return out
    with np.errstate(over="ignore"):
        narrowed = xp.astype(out, dtype)
    if not is_traced(narrowed) and not bool(xp.all(xp.isfinite(narrowed))):
        raise ValueError(
            f"{what} overflow {dtype} for these rewards; rescale the rewards before calling (every OrderGrad quantity "
            f"is linear in them), or pass them in a wider dtype"
        )
    return narrowed


def check_finite(x: Array, xp: Any, name: str) -> None:
    """Raise, naming ``name``, if ``x`` has a NaN or an infinity (not while JAX traces)."""
    if is_traced(x):
        return
    with np.errstate(over="ignore", invalid="ignore"):
        total = xp.sum(x)  # finite only if every entry is: one cheap reduction for the common case
    if not bool(xp.isfinite(total)) and not bool(xp.all(xp.isfinite(x))):  # NaN or inf, or only the sum overflowed
        raise ValueError(f"{name} contain NaN or inf; OrderGrad needs finite values (check the environment's rewards)")


def _flat_rows(perm: Array, xp: Any) -> Array:
    """NumPy/CuPy: indices of ``perm``'s entries into the flattened ``[..., N]`` array (fancy indexing on a flat view is
    ~2x faster than ``take_along_axis``/``put_along_axis``, which build an index per dimension)."""
    n = perm.shape[-1]
    rows = xp.reshape(xp.arange(perm.size // n, dtype=perm.dtype) * n, perm.shape[:-1] + (1,))
    return perm + rows


def exp_(x: Array, xp: Any) -> Array:
    """``exp(x)``, computed in place on torch and NumPy (``x`` must be a temporary the caller owns): the same values
    without a second array of ``x``'s size."""
    if compat.is_torch_array(x):
        return x.exp_()
    if isinstance(x, np.ndarray):
        return np.exp(x, out=x)
    return xp.exp(x)


def take_sorted(x: Array, perm: Array, xp: Any) -> Array:
    """``x`` gathered along the last axis by a permutation ``perm`` of the same shape (from :func:`stable_sort`)."""
    if compat.is_torch_namespace(xp):  # take_along_axis would first wrap negative indices (perm has none)
        return x.gather(-1, perm)
    if compat.is_numpy_namespace(xp) or compat.is_cupy_namespace(xp):
        return x[perm] if x.ndim == 1 else x.reshape(-1)[_flat_rows(perm, xp)]
    return xp.take_along_axis(x, perm, axis=-1)


def stable_sort(x: Array, xp: Any) -> tuple[Array, Array]:
    """Stable ascending sort along the last axis: ``(values, permutation)``; ties keep their batch order."""
    if compat.is_torch_namespace(xp):  # one kernel for both (argsort + gather would sort, then gather)
        values, perm = x.sort(dim=-1, stable=True)
        return values, perm
    perm = xp.argsort(x, axis=-1, stable=True)
    return take_sorted(x, perm, xp), perm


def _broadcast_index(index: Array, like: Array, xp: Any) -> Array:
    """``index`` (shape ``[..., N]``) broadcast to ``like``'s shape (``[..., N]`` or ``[..., N, C]``)."""
    if like.ndim > index.ndim:
        index = xp.broadcast_to(index[..., None], like.shape)
    return index


def unsort(y: Array, perm: Array, xp: Any) -> Array:
    """Scatter ``y`` (sorted order along the rank axis, shape ``[..., N]`` or ``[..., N, C]``) back to batch order:
    ``out[..., perm[i], ...] = y[..., i, ...]``."""
    axis = perm.ndim - 1
    if compat.is_numpy_namespace(xp) or compat.is_cupy_namespace(xp):
        out = xp.empty_like(y)
        if perm.ndim == 1:  # the common single-group case: plain fancy indexing is fastest
            out[perm] = y
        else:
            trailing = y.shape[perm.ndim :]
            out.reshape((-1,) + trailing)[_flat_rows(perm, xp)] = y
        return out
    index = _broadcast_index(perm, y, xp)
    if compat.is_torch_namespace(xp):
        out = y.new_empty(y.shape)
        if is_traced(y):  # torch.func.vmap batches scatter, not the in-place scatter_ (a slow loop and a warning)
            return out.scatter(axis, index, y)
        return out.scatter_(axis, index, y)
    if compat.is_jax_namespace(xp):
        return xp.put_along_axis(xp.zeros_like(y), index, y, axis=axis, inplace=False)
    inverse = xp.argsort(perm, axis=-1, stable=True)  # standard-only fallback: O(N log N)
    return xp.take_along_axis(y, _broadcast_index(inverse, y, xp), axis=axis)


def _running_max(x: Array, xp: Any) -> Array:
    """Cumulative maximum along the last axis (integer arrays)."""
    if compat.is_numpy_namespace(xp):
        return np.maximum.accumulate(x, axis=-1)
    if compat.is_cupy_namespace(xp):
        return sys.modules["cupy"].maximum.accumulate(x, axis=-1)
    if compat.is_torch_namespace(xp):
        return x.cummax(dim=-1).values
    if compat.is_jax_namespace(xp):
        return sys.modules["jax"].lax.cummax(x, axis=x.ndim - 1)
    shift = 1  # standard-only fallback: Hillis-Steele doubling, O(N log N)
    while shift < x.shape[-1]:
        pad = xp.zeros_like(x[..., :shift])
        x = xp.maximum(x, xp.concat([pad, x[..., :-shift]], axis=-1))
        shift *= 2
    return x


def tie_equalize(sorted_x: Array, y: Array, xp: Any) -> Array:
    """Give every run of equal values in ``sorted_x`` the value of ``y`` at the run's first position.

    Tied positions are interchangeable (App. F.2), so they are equal in exact arithmetic; copying one of them
    makes them bit-identical whatever the rounding of the scans.

    :param sorted_x: ``[..., N]`` ascending along the last axis.
    :param y: ``[..., N]`` or ``[..., N, C]`` in the same sorted order.
    """
    n = sorted_x.shape[-1]
    if n < 2:
        return y
    ties = sorted_x[..., 1:] == sorted_x[..., :-1]
    if not is_traced(sorted_x) and not bool(xp.any(ties)):
        return y
    position = xp.arange(1, n, device=compat.device(y))
    starts = xp.where(ties, xp.zeros_like(position), position)  # index of each position that starts a run
    first = xp.concat([xp.zeros_like(starts[..., :1]), _running_max(starts, xp)], axis=-1)
    return xp.take_along_axis(y, _broadcast_index(first, y, xp), axis=sorted_x.ndim - 1)


def stop_gradient(x: Array, xp: Any) -> Array:
    if compat.is_torch_namespace(xp):
        return x.detach()
    if compat.is_jax_namespace(xp):
        return sys.modules["jax"].lax.stop_gradient(x)
    return x


def constant(table: np.ndarray, like: Array, xp: Any, cache: dict) -> Array:
    """``table`` (float64 NumPy) as an array of ``like``'s library, dtype and device, memoized in ``cache``
    (except while JAX traces: a constant made inside a trace belongs to that trace)."""
    key: tuple[Any, ...]
    if isinstance(like, np.ndarray):
        if like.dtype == np.float64:
            return table
        key = (id(table), like.dtype)
    elif is_traced(like) and not compat.is_torch_array(like):
        return xp.asarray(table, dtype=like.dtype)
    else:
        key = (id(table), like.dtype, str(compat.device(like)))
    if key not in cache:
        # Copy: the float64 tables are read-only and torch warns on non-writable NumPy memory.
        cache[key] = xp.asarray(np.array(table), dtype=like.dtype, device=compat.device(like))
    return cache[key]


def scale_rows(sorted_x: Array, xp: Any) -> Array | None:
    """Per-row power-of-two factors ``s`` (shape ``[..., 1]``) with ``max|x s|`` in ``[1, 2)`` (as far as a normal
    factor allows), or ``None`` when every row is in the safe range (the common case: no extra pass).

    Rows whose largest ``|value|`` lies outside ``[sqrt(tiny), sqrt(max)]`` of their float type are rescaled before
    the scans — exact in floating point — so that gaps, sums and products can neither overflow nor lose bits to
    subnormals; results are scaled back.
    """
    info = xp.finfo(sorted_x.dtype)
    # A constant of the rewards (zero derivative, through floor): without gradient, as its backward held 0 * inf,
    # which torch's anomaly mode reports as NaN.
    x = stop_gradient(sorted_x, xp)
    top = xp.maximum(xp.abs(x[..., :1]), xp.abs(x[..., -1:]))
    unsafe = (top > float(info.max) ** 0.5) | ((top < float(info.smallest_normal) ** 0.5) & (top > 0))
    if not is_traced(sorted_x) and not bool(xp.any(unsafe)):
        return None
    safe = xp.where(top > 0, top, xp.ones_like(top))
    # Exponents are clipped so that the factor itself is a normal number (a subnormal top needs 2^1074).
    limit = float(info.maxexp if hasattr(info, "maxexp") else math.log2(float(info.max))) - 24.0
    exponent = xp.clip(-xp.floor(xp.log2(safe)), min=-limit, max=limit)
    return xp.pow(xp.asarray(2.0, dtype=top.dtype, device=compat.device(top)), exponent)


def unscale(out: Array, scale: Array, xp: Any, what: str) -> Array:
    """``out / scale`` (undoing :func:`scale_rows`), refusing results that overflow their dtype (never inf or NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):  # NumPy's (and array-api-strict's) warnings: the check says it
        out = out / scale
    if not is_traced(out) and not bool(xp.all(xp.isfinite(out))):
        raise ValueError(
            f"{what} overflow {out.dtype} (largest value {float(xp.finfo(out.dtype).max):.3g}) for these rewards; "
            f"rescale the rewards before calling (every OrderGrad quantity is linear in them)"
        )
    return out
