"""The batch (sampled-reward) regime: values, include-one, leave-one-out and advantages (paper Sec. 3, App. F).

For a batch of ``N`` rewards and an order-statistic objective of size ``k`` with rank weights ``alpha``:

* ``v_j`` — the expected ``j``-th order statistic of a uniform size-``k`` subset (U-statistic, eq. method-vj-def);
* ``q_{i,j}`` — the same over subsets that contain sample ``i`` (include-one, eq. method-qij-def);
* ``v_j^(-i)`` — the same after removing sample ``i`` (leave-one-out, eq. method-vloo-def);
* ``a_{i,j} = q_{i,j} - v_j^(-i)`` and the collapsed ``a_i = sum_j alpha_j a_{i,j}``, ``v = sum_j alpha_j v_j``.

Every quantity is one stable sort plus prefix/suffix scans against weight tables that depend only on
``(N, k, alpha)``, built once in float64 and cached (:mod:`ordergrad_rl.core.weights`). The unbiased
likelihood-ratio gradient is ``(k/N) sum_i a_i grad log p(x_i)`` (eq. og-batch-estimator): the
policy-gradient weight of sample ``i`` is ``k * a_i``. The reparameterization gradient is the gradient
of ``v`` through the sort (torch inputs), ``(W alpha)_m`` for the ``m``-th smallest sample (App. E.2).

Inputs are NumPy arrays or torch tensors of shape ``[..., N]``; leading dimensions are independent groups
(one prompt or start state each), computed together. Outputs follow the input's type, dtype and device.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ordergrad_rl.core import _backend as B
from ordergrad_rl.core.objectives import Objective, ObjectiveLike, resolve_objective
from ordergrad_rl.core.scan import scan, scan_tables
from ordergrad_rl.core.weights import (
    check_sizes,
    collapsed_kernel,
    psum_tables,
    rankwise_kernel,
    value_table,
)


class OrderStatTransform:
    """OrderGrad batch quantities for a fixed batch size ``n`` and objective, with tables precomputed once.

    >>> t = OrderStatTransform(n=256, objective="cvar0.2", k=128)
    >>> weights = 128 * t.advantage(returns)   # per-episode policy-gradient weights, shape [..., 256]

    :param n: batch size ``N`` (the last dimension of every input).
    :param objective: an :class:`Objective`, a spec string such as ``"cvar0.2@128"`` or a low-to-high alpha vector.
    :param k: order-statistic size when the objective does not fix it.
    :param method: how collapsed tables are built: ``"auto"``, ``"dense"`` or ``"runs"`` (see
        :func:`~ordergrad_rl.core.weights.hypergeom_expectation`); all are exact.
    """

    def __init__(self, n: int, objective: ObjectiveLike, k: int | None = None, method: str = "auto") -> None:
        self.objective: Objective = resolve_objective(objective, k)
        self.n = int(n)
        self.k: int = self.objective.k  # type: ignore[assignment]
        check_sizes(self.n, self.k, advantage=False)
        self.alpha = self.objective.weights
        self._method = method
        self._tables: dict[tuple[str, bool], tuple] = {}
        self._converted: dict = {}

    def __repr__(self) -> str:
        return f"OrderStatTransform(n={self.n}, objective='{self.objective}')"

    # ------------------------------------------------------------------ tables (float64, cached)
    def _kernel(self, rankwise: bool):
        return rankwise_kernel(self.k) if rankwise else collapsed_kernel(self.alpha, self._method)

    def _value_table(self, rankwise: bool) -> np.ndarray:
        key = ("value", rankwise)
        if key not in self._tables:
            self._tables[key] = (value_table(self.n, self.k, self._kernel(rankwise)),)
        return self._tables[key][0]

    def _scan_tables(self, quantity: str, rankwise: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(E, F, U)`` with ``out = cumsum(R E) + R F + sum(R U)``, the one-scan form of ``psum(R; L, D, U)``."""
        key = (quantity, rankwise)
        if key not in self._tables:
            lower, diag, upper = psum_tables(self.n, self.k, quantity, self._kernel(rankwise))
            tables = scan_tables(lower, diag, upper)
            for table in tables:
                table.flags.writeable = False
            self._tables[key] = tables
        return self._tables[key]

    @property
    def value_weights(self) -> np.ndarray:
        """``W alpha``: the weight of the ``m``-th smallest sample in ``v^alpha``, shape ``(N,)``, float64.

        It is also the reparameterization gradient of ``v^alpha`` with respect to the sorted rewards.
        """
        return self._value_table(rankwise=False)

    # ------------------------------------------------------------------ evaluation
    def _prepare(self, x) -> tuple:
        x = B.as_float_array(x, "rewards")
        if x.ndim == 0 or x.shape[-1] != self.n:
            raise ValueError(f"expected rewards of shape [..., {self.n}] (N={self.n}), got shape {tuple(x.shape)}")
        B.check_finite(x, "rewards")
        return B.sort(x)

    def _scan(self, r, quantity: str, rankwise: bool):
        check_sizes(self.n, self.k, advantage=True)
        tables = (B.constant(t, r, self._converted) for t in self._scan_tables(quantity, rankwise))
        return scan(r, *tables, rankwise=rankwise)

    def _finish(self, r, perm, out_sorted):
        return B.unsort(B.tie_average(r, out_sorted), perm)

    def value(self, x):
        """``v^alpha = sum_m R_(m) (W alpha)_m`` (eq. method-v-sorted), shape ``[...]``.

        Differentiable for torch inputs: the gradient is the reparameterization estimator (App. E.2).
        """
        r, _ = self._prepare(x)
        return (r * B.constant(self.value_weights, r, self._converted)).sum(-1)

    def orderstats(self, x):
        """Rankwise values ``v_j``, ``j = 1..k`` low to high (eq. method-vj-def), shape ``[..., k]``."""
        r, _ = self._prepare(x)
        return r @ B.constant(self._value_table(rankwise=True), r, self._converted)

    def advantage(self, x, *, detach: bool = True):
        """``a_i^alpha = q_i^alpha - v^(-i),alpha`` (eq. method-a-sorted), shape ``[..., N]``; needs ``k < N``.

        The policy-gradient weight of sample ``i`` is ``k * a_i``. Invariant to adding a constant to the rewards;
        tied rewards get identical advantages. For torch inputs the result is detached unless ``detach=False``.
        """
        return self._quantity(x, "advantage", rankwise=False, detach=detach)

    def rank_advantage(self, x, *, detach: bool = True):
        """Rankwise ``a_{i,j}`` for every rank ``j`` (low to high), shape ``[..., N, k]``; needs ``k < N``."""
        return self._quantity(x, "advantage", rankwise=True, detach=detach)

    def inclusion(self, x, *, rankwise: bool = False, detach: bool = True):
        """Include-one values ``q_i^alpha`` (``[..., N]``), or ``q_{i,j}`` (``[..., N, k]``) when ``rankwise``."""
        return self._quantity(x, "inclusion", rankwise=rankwise, detach=detach)

    def leave_one_out(self, x, *, rankwise: bool = False, detach: bool = True):
        """Leave-one-out values ``v^(-i),alpha`` (``[..., N]``), or ``v_j^(-i)`` (``[..., N, k]``) when ``rankwise``."""
        return self._quantity(x, "leave_one_out", rankwise=rankwise, detach=detach)

    def _quantity(self, x, quantity: str, rankwise: bool, detach: bool):
        if detach and B.is_torch(x):
            x = x.detach()
        r, perm = self._prepare(x)
        if quantity == "advantage":
            # Advantages ignore a common shift; centring keeps float32 scans accurate for offset rewards.
            r = r - r.mean(-1)[..., None]
        return self._finish(r, perm, self._scan(r, quantity, rankwise))


@lru_cache(maxsize=64)
def _cached_transform(n: int, objective: Objective) -> OrderStatTransform:
    return OrderStatTransform(n, objective)


def get_transform(n: int, objective: ObjectiveLike, k: int | None = None) -> OrderStatTransform:
    """The cached :class:`OrderStatTransform` for ``(n, objective, k)`` (tables are built on first use)."""
    return _cached_transform(int(n), resolve_objective(objective, k))


def _batch_size(rewards) -> int:
    shape = getattr(rewards, "shape", None)
    if shape is None:
        shape = np.shape(rewards)
    if len(shape) == 0:
        raise ValueError("rewards must have shape [..., N] with at least one dimension, got a scalar")
    return int(shape[-1])


def lstat_value(rewards, objective: ObjectiveLike, k: int | None = None):
    """Batch L-statistic value ``v^alpha`` (paper eq. method-v-sorted) of each group, shape ``[...]``.

    :param rewards: ``[..., N]`` NumPy array or torch tensor (higher is better); needs ``1 <= k <= N``.
    :param objective: an :class:`Objective`, a spec (``"top2@4"``, ``"cvar0.2"``) or a low-to-high alpha vector.
    :param k: order-statistic size if the objective does not fix it.
    :return: ``E[sum_j alpha_j (R_S)_(j:k)]`` over uniform size-k subsets ``S``; differentiable for torch
        inputs (the RP estimator, App. E.2).
    """
    return get_transform(_batch_size(rewards), objective, k).value(rewards)


def lstat_advantage(rewards, objective: ObjectiveLike, k: int | None = None, *, detach: bool = True):
    """OrderGrad advantages ``a_i^alpha = q_i^alpha - v^(-i),alpha`` (paper eq. method-a-sorted), shape ``[..., N]``.

    The unbiased likelihood-ratio gradient of ``E[sum_j alpha_j R_(j:k)]`` is
    ``(k/N) sum_i a_i grad log p(x_i)``: the policy-gradient weight of sample ``i`` is ``k * a_i``.

    :param rewards: ``[..., N]`` NumPy array or torch tensor; leading dims are independent groups. Needs ``1 <= k < N``.
    :param objective: an :class:`Objective`, a spec or a low-to-high alpha vector.
    :param k: order-statistic size if the objective does not fix it.
    :param detach: torch only: return a tensor without gradient history (the default).
    """
    return get_transform(_batch_size(rewards), objective, k).advantage(rewards, detach=detach)
