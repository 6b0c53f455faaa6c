"""The batch (sampled-reward) regime: values, include-one, leave-one-out and advantages (paper Sec. 3, App. F).

For a batch of ``N`` rewards and an order-statistic objective of size ``k`` with rank weights ``alpha``:

* ``v_j`` — the expected ``j``-th order statistic of a uniform size-``k`` subset (U-statistic, eq. method-vj-def);
* ``q_{i,j}`` — the same over subsets that contain sample ``i`` (include-one, eq. method-qij-def);
* ``v_j^(-i)`` — the same after removing sample ``i`` (leave-one-out, eq. method-vloo-def);
* ``a_{i,j} = q_{i,j} - v_j^(-i)`` and the collapsed ``a_i = sum_j alpha_j a_{i,j}``, ``v = sum_j alpha_j v_j``.

Every quantity is one stable sort plus a linear scan against weight tables that depend only on
``(N, k, alpha)``, built once in float64 and cached (:mod:`ordergrad_rl.core.weights`). The unbiased
likelihood-ratio gradient is ``(k/N) sum_i a_i grad log p(x_i)`` (eq. og-batch-estimator): the
policy-gradient weight of sample ``i`` is ``k * a_i``. The reparameterization gradient is the gradient
of ``v`` through the sort, ``(W alpha)_m`` for the ``m``-th smallest sample (App. E.2).

Inputs are arrays of shape ``[..., N]`` from any array-API library (NumPy, PyTorch, JAX, CuPy; see
:mod:`ordergrad_rl.core._xp`); leading dimensions are independent groups (one prompt or start state each),
computed together. Outputs follow the input's library, dtype and device. JAX inputs work under ``jit``,
``vmap`` and ``grad``, torch tensors under ``torch.func`` (inside a JAX trace or ``torch.func.vmap`` NaN/inf rewards
cannot be detected and propagate instead of raising).

Rank weights may also be *live* arrays — a torch tensor with ``requires_grad`` or a JAX array being traced —
for learned objectives: the result is then differentiable with respect to ``alpha``, through the rankwise
tables (O(N k) per call; see :func:`~ordergrad_rl.core.weights.check_table_memory`).
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import array_api_compat as compat
import numpy as np

from ordergrad_rl.core import _xp, objectives, weights
from ordergrad_rl.core._xp import Array
from ordergrad_rl.core.objectives import Objective, ObjectiveLike, check_k, resolve_objective
from ordergrad_rl.core.scan import gap_scan, scan, scan_tables
from ordergrad_rl.core.weights import (
    advantage_tables,
    check_sizes,
    check_table_memory,
    collapsed_kernel,
    psum_tables,
    rankwise_kernel,
    value_table,
)

# The peak memory of a rankwise computation (measured with tracemalloc and the peak RSS, tables not yet cached), in
# float64 N x k tables: the float64 tables it builds (kernels and scan tables), their copies in the input's library
# and dtype (all but float64 NumPy inputs; a copy to another dtype passes through a float64 one), and for each group
# of rewards the scan's N x k temporaries and result in the input's dtype (three: NumPy reuses one of them, torch
# does not; none for values, which collapse the ranks).
_RANKWISE_TABLES = {"value": 2, "advantage": 3, "inclusion": 6, "leave_one_out": 4}
_RANKWISE_COPIES = {"value": 1, "advantage": 2, "inclusion": 3, "leave_one_out": 3}
_RANKWISE_PER_GROUP = {"value": 0, "advantage": 3, "inclusion": 3, "leave_one_out": 3}


def is_live(alpha: Any) -> bool:
    """True for rank weights that must stay arrays of their library: a torch tensor that requires grad, or an array
    that a function transform traces or differentiates (``jax.grad``, ``torch.func.jacfwd``, ... with respect to the
    weights)."""
    return (compat.is_torch_array(alpha) and alpha.requires_grad) or _xp.is_transformed(alpha)


def check_live_alpha(alpha: Array, k: Any = None) -> int:
    """The number of rank weights in ``alpha``, a live array (:func:`is_live`), after the checks of
    :func:`check_alpha_values` and of its shape: a 1-D vector, of ``k`` entries where ``k`` is given."""
    if alpha.ndim != 1:
        raise ValueError(f"alpha must be a 1-D vector of rank weights, got shape {tuple(alpha.shape)}")
    size = int(alpha.shape[0])
    if k is not None and check_k(k) != size:
        raise ValueError(f"numeric alpha has k={size} entries; cannot use k={k}")
    check_alpha_values(alpha)
    return size


def check_alpha_values(alpha: Array) -> None:
    """Refuse rank weights given as an array that are not real numbers (``TypeError``) or, where their values are
    known, not finite (``ValueError``), as :meth:`Objective.from_weights` refuses a fixed alpha (live weights gave NaN
    results, or lost their imaginary part with only a warning)."""
    xp = compat.array_namespace(alpha)
    if not xp.isdtype(alpha.dtype, ("real floating", "integral")):
        raise TypeError(f"alpha must contain real numbers (float or int), got dtype {alpha.dtype}")
    if not _xp.is_traced(alpha) and not bool(xp.all(xp.isfinite(alpha))):
        raise ValueError("alpha contains NaN or inf")


def _refuse_live(objective: Any) -> None:
    """A transform's objective is fixed: live weights would silently lose their gradient (and later updates)."""
    if is_live(objective):
        raise ValueError(
            "objective is a live array (a tensor that requires grad, or a JAX tracer), but a transform keeps a fixed "
            "copy of its weights, without gradient: pass learned weights per call, t.value(x, alpha=...) or "
            "t.advantage(x, alpha=...), or to lstat_value / lstat_advantage; .detach() them for a fixed objective"
        )


class OrderStatTransform:
    """OrderGrad batch quantities for a fixed batch size ``n`` and objective, with tables precomputed once.

    >>> import numpy as np
    >>> returns = np.random.default_rng(0).normal(size=(4, 256))   # 4 batches of 256 episode returns
    >>> t = OrderStatTransform(n=256, objective="cvar0.2", k=128)
    >>> weights = 128 * t.advantage(returns)   # per-episode policy-gradient weights
    >>> weights.shape
    (4, 256)
    >>> bool(np.allclose(t.advantage(returns + 5.0), t.advantage(returns)))   # invariant to a shift
    True

    :param n: batch size ``N`` (the last dimension of every input), an integer >= 1.
    :param objective: an :class:`Objective`, a spec string such as ``"cvar0.2@128"`` or a low-to-high alpha vector.
    :param k: order-statistic size when the objective does not fix it (an integer, ``1 <= k <= N``).
    :param method: how collapsed tables are built: ``"auto"``, ``"poly"``, ``"runs"`` or ``"dense"`` (see
        :func:`~ordergrad_rl.core.weights.hypergeom_expectation`); all are exact.
    """

    def __init__(self, n: int, objective: ObjectiveLike, k: int | None = None, method: str = "auto") -> None:
        self.n = check_k(n, name="batch size n")
        if method not in ("auto", "poly", "runs", "dense"):
            raise ValueError(f"method must be 'auto', 'poly', 'runs' or 'dense', got {method!r}")
        _refuse_live(objective)
        self.objective: Objective = resolve_objective(objective, k, check=lambda kk: check_sizes(self.n, kk))
        self.k: int = self.objective.k  # type: ignore[assignment]
        self.alpha = self.objective.weights
        self._method = method
        self._tables: dict[tuple[str, bool], tuple[np.ndarray, ...]] = {}
        self._converted: dict = {}

    def __repr__(self) -> str:
        return f"OrderStatTransform(n={self.n}, objective='{self.objective}')"

    # ------------------------------------------------------------------ tables (float64, cached)
    def _numpy_tables(self, quantity: str, rankwise: bool) -> tuple[np.ndarray, ...]:
        """Float64 tables of ``quantity``: ``(w,)`` for values, ``(E, U)`` for the advantage gap scan and
        ``(E, F, U)`` for the include-one / leave-one-out scan; ``[N]``-like, or ``[N, k]``-like when ``rankwise``."""
        key = (quantity, rankwise)
        if key not in self._tables:
            self._tables[key] = self._build_tables(quantity, rankwise)
        return self._tables[key]

    @_xp.host
    def _build_tables(self, quantity: str, rankwise: bool) -> tuple[np.ndarray, ...]:
        if rankwise:
            kernel = rankwise_kernel(self.k)
        else:
            kernel = collapsed_kernel(self.alpha, self._method, self.objective.polynomial)
        if quantity == "value":
            tables: tuple[np.ndarray, ...] = (value_table(self.n, self.k, kernel),)
        elif quantity == "advantage":
            tables = advantage_tables(self.n, self.k, kernel)
        else:
            tables = scan_tables(*psum_tables(self.n, self.k, quantity, kernel))
        for table in tables:
            table.flags.writeable = False
        return tables

    def _array_tables(self, quantity: str, rankwise: bool, like, xp, alpha) -> list:
        """The tables as arrays of ``like``'s library/dtype/device; collapsed by a live ``alpha`` if given."""
        if alpha is None:
            return [_xp.constant(t, like, xp, self._converted) for t in self._numpy_tables(quantity, rankwise)]
        tables = self._numpy_tables(quantity, rankwise=True)
        weights = xp.astype(alpha, like.dtype)
        return [_xp.constant(t, like, xp, self._converted) @ weights for t in tables]

    @property
    def value_weights(self) -> np.ndarray:
        """``W alpha``: the weight of the ``m``-th smallest sample in ``v^alpha``, shape ``(N,)``, float64.

        It is also the reparameterization gradient of ``v^alpha`` with respect to the sorted rewards.
        """
        return self._numpy_tables("value", rankwise=False)[0]

    # ------------------------------------------------------------------ evaluation
    def _prepare(self, x, detach: bool) -> tuple:
        """``(xp, sorted rewards, permutation, row scale or None, the result dtype or None)`` after the input checks;
        half-precision rewards are computed in float32 and NumPy's float32 in float64 (:func:`~._xp.widen`)."""
        xp, x = _xp.real_floating(x, "rewards")
        if x.ndim == 0 or x.shape[-1] != self.n:
            raise ValueError(f"expected rewards of shape [..., {self.n}] (N={self.n}), got shape {tuple(x.shape)}")
        _xp.check_finite(x, xp, "rewards")
        x, result_dtype = _xp.widen(x, xp)
        if detach:
            x = _xp.stop_gradient(x, xp)
        r, perm = _xp.stable_sort(x, xp)
        return xp, r, perm, _xp.scale_rows(r, xp), result_dtype

    def _check_rankwise_memory(self, quantity: str, rewards, groups: int, what: str) -> None:
        """:func:`~ordergrad_rl.core.weights.check_table_memory` of a computation through the rankwise tables
        (``rewards``: the prepared ``[..., N]`` rewards; ``groups``: the ``[..., N, k]`` results it computes)."""
        copies = 0 if isinstance(rewards, np.ndarray) and rewards.dtype == np.float64 else _RANKWISE_COPIES[quantity]
        share = compat.array_namespace(rewards).finfo(rewards.dtype).bits / 64  # an input-dtype table, in float64s
        on_the_way = 1 if copies and share < 1 else 0
        tables = _RANKWISE_TABLES[quantity] + on_the_way + share * (copies + _RANKWISE_PER_GROUP[quantity] * groups)
        check_table_memory(self.n, self.k, tables, what)

    def _check_alpha(self, alpha, x) -> None:
        if alpha is None:
            return
        if not compat.is_array_api_obj(alpha) or alpha.ndim != 1 or alpha.shape[0] != self.k:
            raise ValueError(f"alpha must be a 1-D array of k={self.k} rank weights, got {type(alpha).__name__}")
        try:
            compat.array_namespace(x, alpha)
        except TypeError:
            raise TypeError(
                f"alpha ({type(alpha).__name__}) and rewards ({type(x).__name__}) must come from the same array library"
            ) from None
        check_alpha_values(alpha)

    def value(self, x: Array, *, alpha: Array | None = None) -> Array:
        """``v^alpha = sum_m R_(m) (W alpha)_m`` (eq. method-v-sorted), shape ``[...]``.

        Differentiable for torch and JAX inputs: the gradient is the reparameterization estimator (App. E.2).

        :param x: rewards, shape ``[..., N]`` (NumPy, PyTorch, JAX or CuPy; leading axes are independent groups).
        :param alpha: optional rank weights replacing the objective's (a live array of ``x``'s library, length
            ``k``): the value is then differentiable with respect to them too.
        """
        self._check_alpha(alpha, x)
        xp, r, _, scale, dtype = self._prepare(x, detach=False)
        if alpha is not None:
            self._check_rankwise_memory("value", r, 0, "value with live rank weights")
        rs = r if scale is None else r * scale
        (w,) = self._array_tables("value", False, rs, xp, alpha)
        out = xp.sum(rs * w, axis=-1)
        return _xp.narrow(out if scale is None else _xp.unscale(out, scale[..., 0], xp, "values"), dtype, xp, "values")

    def orderstats(self, x: Array) -> Array:
        """Rankwise values ``v_j``, ``j = 1..k`` low to high (eq. method-vj-def), shape ``[..., k]``."""
        xp, r, _, scale, dtype = self._prepare(x, detach=False)
        self._check_rankwise_memory("value", r, 0, "orderstats")
        rs = r if scale is None else r * scale
        (w,) = self._array_tables("value", True, rs, xp, None)
        out = rs @ w
        out = out if scale is None else _xp.unscale(out, scale, xp, "order statistics")
        return _xp.narrow(out, dtype, xp, "order statistics")

    def advantage(self, x: Array, *, detach: bool = True, alpha: Array | None = None) -> Array:
        """``a_i^alpha = q_i^alpha - v^(-i),alpha`` (eq. method-a-sorted), shape ``[..., N]``; needs ``k < N``.

        The policy-gradient weight of sample ``i`` is ``k * a_i``. Exactly invariant to adding a constant to the
        rewards; tied rewards get identical advantages. For torch/JAX inputs the result carries no gradient with
        respect to the rewards unless ``detach=False``. ``alpha``: live rank weights, as in :meth:`value`.
        """
        return self._quantity(x, "advantage", rankwise=False, detach=detach, alpha=alpha)

    def rank_advantage(self, x: Array, *, detach: bool = True) -> Array:
        """Rankwise ``a_{i,j}`` for every rank ``j`` (low to high), shape ``[..., N, k]``; needs ``k < N``."""
        return self._quantity(x, "advantage", rankwise=True, detach=detach)

    def inclusion(self, x: Array, *, rankwise: bool = False, detach: bool = True, alpha: Array | None = None) -> Array:
        """Include-one values ``q_i^alpha`` (``[..., N]``), or ``q_{i,j}`` (``[..., N, k]``) when ``rankwise``.

        Defined for ``k <= N`` (at ``k = N`` every subset is the whole batch and ``q_i = v``).
        """
        return self._quantity(x, "inclusion", rankwise=rankwise, detach=detach, alpha=alpha)

    def leave_one_out(
        self, x: Array, *, rankwise: bool = False, detach: bool = True, alpha: Array | None = None
    ) -> Array:
        """Leave-one-out values ``v^(-i),alpha`` (``[..., N]``), or ``v_j^(-i)`` (``[..., N, k]``) when ``rankwise``;
        needs ``k < N``."""
        return self._quantity(x, "leave_one_out", rankwise=rankwise, detach=detach, alpha=alpha)

    def _quantity(self, x, quantity: str, rankwise: bool, detach: bool, alpha=None):
        check_sizes(self.n, self.k, quantity=quantity)
        if rankwise and alpha is not None:
            raise ValueError(
                "rankwise=True gives every rank j, which no rank weights enter; alpha= gives the quantity collapsed by "
                "those weights: pass one of them"
            )
        self._check_alpha(alpha, x)
        xp, r, perm, scale, dtype = self._prepare(x, detach)
        if rankwise or alpha is not None:
            groups = math.prod(r.shape[:-1]) if rankwise else 0
            self._check_rankwise_memory(quantity, r, groups, f"{quantity} (rankwise)")
        rs = r if scale is None else r * scale
        tables = self._array_tables(quantity, rankwise, rs, xp, alpha)
        if quantity == "advantage":
            e, u = tables
            out = gap_scan(rs, e, u, xp, rankwise=rankwise)
        else:
            e, f, u = tables
            out = scan(rs, e, f, u, xp, rankwise=rankwise)
        out = _xp.tie_equalize(r, out, xp)
        what = quantity.replace("_", "-") + " values"
        if scale is not None:
            out = _xp.unscale(out, scale[..., None] if rankwise else scale, xp, what)
        return _xp.narrow(_xp.unsort(out, perm, xp), dtype, xp, what)


@lru_cache(maxsize=64)
def _cached_transform(n: int, objective: Objective) -> OrderStatTransform:
    return OrderStatTransform(n, objective)


def clear_caches() -> None:
    """Forget every cached transform, table and parsed objective (benchmarks time first calls after this)."""
    _cached_transform.cache_clear()
    weights.clear_caches()
    objectives.clear_caches()


def get_transform(
    n: int, objective: ObjectiveLike, k: int | None = None, quantity: str = "value"
) -> OrderStatTransform:
    """The cached :class:`OrderStatTransform` for ``(n, objective, k)`` (tables are built on first use).

    :param n: the batch size ``N``.
    :param objective: a spec, an :class:`~ordergrad_rl.core.Objective` or numeric rank weights.
    :param k: order-statistic size when the objective has no ``@K``.
    :param quantity: what the caller will compute (``"value"`` or ``"advantage"``): ``k`` is checked against ``N``
        for it before any weights are built.
    """
    n = check_k(n, name="batch size n")
    _refuse_live(objective)
    return _cached_transform(n, resolve_objective(objective, k, check=lambda kk: check_sizes(n, kk, quantity=quantity)))


def _batch_size(rewards) -> int:
    shape = getattr(rewards, "shape", None)
    if shape is None:
        shape = np.shape(rewards)
    if len(shape) == 0:
        raise ValueError("rewards must have shape [..., N] with at least one dimension, got a scalar")
    return int(shape[-1])


def _transform_and_alpha(
    rewards, objective: ObjectiveLike, k: int | None, quantity: str
) -> tuple[OrderStatTransform, Any]:
    """The transform for ``rewards`` and, for live rank weights, the weights themselves (else ``None``)."""
    n = _batch_size(rewards)
    if not is_live(objective):
        return get_transform(n, objective, k, quantity), None
    size = check_live_alpha(objective, k)
    # Live weights use the rankwise tables, which do not depend on alpha: any objective of that k will do.
    return get_transform(n, Objective.from_weights(np.full(size, 1.0 / size)), None, quantity), objective


def lstat_value(rewards: Array, objective: ObjectiveLike, k: int | None = None) -> Array:
    """Batch L-statistic value ``v^alpha`` (paper eq. method-v-sorted) of each group, shape ``[...]``.

    :param rewards: ``[..., N]`` array of any array-API library (higher is better); needs ``1 <= k <= N``.
    :param objective: an :class:`Objective`, a spec (``"top2@4"``, ``"cvar0.2"``) or a low-to-high alpha vector
        (a torch tensor with ``requires_grad`` or a traced JAX array makes the value differentiable in alpha).
    :param k: order-statistic size if the objective does not fix it.
    :return: ``E[sum_j alpha_j (R_S)_(j:k)]`` over uniform size-k subsets ``S``; differentiable for torch
        and JAX inputs (the RP estimator, App. E.2).
    """
    transform, alpha = _transform_and_alpha(rewards, objective, k, "value")
    return transform.value(rewards, alpha=alpha)


def lstat_advantage(rewards: Array, objective: ObjectiveLike, k: int | None = None, *, detach: bool = True) -> Array:
    """OrderGrad advantages ``a_i^alpha = q_i^alpha - v^(-i),alpha`` (paper eq. method-a-sorted), shape ``[..., N]``.

    The unbiased likelihood-ratio gradient of ``E[sum_j alpha_j R_(j:k)]`` is
    ``(k/N) sum_i a_i grad log p(x_i)``: the policy-gradient weight of sample ``i`` is ``k * a_i``.

    :param rewards: ``[..., N]`` array of any array-API library; leading dims are independent groups.
        Needs ``1 <= k < N``.
    :param objective: an :class:`Objective`, a spec or a low-to-high alpha vector (live weights as in
        :func:`lstat_value`).
    :param k: order-statistic size if the objective does not fix it.
    :param detach: torch/JAX: return a result without gradient history with respect to the rewards (the default).
    """
    transform, alpha = _transform_and_alpha(rewards, objective, k, "advantage")
    return transform.advantage(rewards, detach=detach, alpha=alpha)
