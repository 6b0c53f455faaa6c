"""Exactness of the estimator core against brute-force enumeration (no self-comparison), and the known regime's
output bits against its reference operation order.

Batch regime: every size-k subset of N <= 9 rewards (with ties), every objective family and random alpha,
both table-building routes. Known regime: every k-tuple of arms. Large N: an independent hypergeometric
implementation (Boost, via scipy) and exact identities.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from ordergrad_rl import (
    Objective,
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_inclusion,
    known_lstat_value,
    known_orderstats,
    lstat_advantage,
    lstat_value,
)
from ordergrad_rl.core.weights import hypergeom_cdf_all_n, hypergeom_expectation

FAMILIES = [
    "mean", "cvar0.3", "uppertail0.5", "quantile0.1", "quantile0.77", "median", "top2", "bot2",
    "max", "min", "rank2", "trim1", "winsor1", "topbot1", "gmd",
    "quantileweibull0.3", "quantileblom0.3", "topquantile0.2", "topquantileblom0.35", "harrelldavis0.3",
    "harrelldavis0", "lmoment2", "lmoment3", "lmoment4", "rangelowertail0.1:0.45", "rangeuppertail0.2:0.6",
    "trimfrac0.1:0.2", "topbot2", "midrangem1",
]  # fmt: skip


def brute_force_batch(rewards: np.ndarray, k: int):
    """``v_j``, ``q_{i,j}``, ``v_j^(-i)`` by enumerating every size-k subset (paper eqs. method-vj/qij/vloo-def)."""
    n = rewards.size
    v = np.zeros(k)
    q = np.zeros((n, k))
    loo = np.zeros((n, k))
    subsets = list(itertools.combinations(range(n), k))
    for subset in subsets:
        ordered = np.sort(rewards[list(subset)])
        v += ordered
        inside = np.zeros(n, dtype=bool)
        inside[list(subset)] = True
        q[inside] += ordered
        loo[~inside] += ordered
    count_with = len(subsets) * k / n  # C(N-1, k-1)
    count_without = len(subsets) - count_with  # C(N-1, k)
    return v / len(subsets), q / count_with, loo / max(count_without, 1)


def _objectives(k: int, rng: np.random.Generator):
    for spec in FAMILIES:
        try:
            obj = Objective.parse(spec, k=k)
        except ValueError:  # e.g. trim1 needs k >= 3
            continue
        if obj.k == k:
            yield obj
    yield Objective.from_weights(rng.normal(size=k))


@pytest.mark.parametrize("n", range(2, 10))
def test_batch_regime_matches_enumeration(n):
    rng = np.random.default_rng(n)
    for k in range(1, n + 1):
        for rewards in (
            rng.normal(size=n),
            rng.integers(0, 3, size=n).astype(float),
        ):  # continuous / heavy ties
            v, q, loo = brute_force_batch(rewards, k)
            for obj in _objectives(k, rng):
                alpha = obj.weights
                methods = ("dense", "runs", "auto") + (("poly",) if obj.polynomial is not None else ())
                for method in methods:
                    t = OrderStatTransform(n, obj, method=method)
                    np.testing.assert_allclose(t.value(rewards), v @ alpha, rtol=0, atol=1e-12)
                    np.testing.assert_allclose(t.orderstats(rewards), v, rtol=0, atol=1e-12)
                    # include-one values are defined at k = N too (every subset is the whole batch: q_i = v)
                    np.testing.assert_allclose(t.inclusion(rewards), q @ alpha, rtol=0, atol=1e-12)
                    if k == n:
                        continue
                    np.testing.assert_allclose(t.leave_one_out(rewards), loo @ alpha, rtol=0, atol=1e-12)
                    np.testing.assert_allclose(t.advantage(rewards), (q - loo) @ alpha, rtol=0, atol=1e-12)
                np.testing.assert_allclose(t.inclusion(rewards, rankwise=True), q, rtol=0, atol=1e-12)
                if k < n:
                    np.testing.assert_allclose(t.leave_one_out(rewards, rankwise=True), loo, rtol=0, atol=1e-12)
                    np.testing.assert_allclose(t.rank_advantage(rewards), q - loo, rtol=0, atol=1e-12)


def test_batched_groups_match_each_group():
    rng = np.random.default_rng(0)
    rewards = rng.normal(size=(3, 4, 7))
    adv = lstat_advantage(rewards, "top2@4")
    val = lstat_value(rewards, "top2@4")
    assert adv.shape == (3, 4, 7) and val.shape == (3, 4)
    for idx in np.ndindex(3, 4):
        _, q, loo = brute_force_batch(rewards[idx], 4)
        alpha = Objective.parse("top2@4").weights
        np.testing.assert_allclose(adv[idx], (q - loo) @ alpha, atol=1e-12)


def test_ties_get_identical_advantages():
    rewards = np.array([1.0, 3.0, 1.0, 2.0, 3.0, 1.0, 0.5, 3.0])
    for spec in ("cvar0.25@4", "top2@4", "gmd@5", "median@3"):
        adv = lstat_advantage(rewards, spec)
        for value in (1.0, 3.0):
            tied = adv[rewards == value]
            assert np.all(tied == tied[0]), spec  # exactly equal, not just close


def brute_force_known(r: np.ndarray, p: np.ndarray, k: int):
    """``vbar_j`` and ``qbar_{b,j}`` by enumerating every k-tuple of arms (App. D definitions)."""
    m = r.size
    v = np.zeros(k)
    q = np.zeros((m, k))
    for draw in itertools.product(range(m), repeat=k):
        prob = np.prod(p[list(draw)])
        ordered = np.sort(r[list(draw)])
        v += prob * ordered
        q[draw[0]] += np.prod(p[list(draw[1:])]) * ordered  # conditional on A_1 = draw[0]
    return v, q


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_known_regime_matches_enumeration(m):
    rng = np.random.default_rng(10 + m)
    for k in range(1, 6):
        for r in (rng.normal(size=m), rng.integers(0, 2, size=m).astype(float)):
            p = rng.dirichlet(np.ones(m))
            if m >= 3:
                p[1] = 0.0  # an arm that is never drawn
                p /= p.sum()
            v, q = brute_force_known(r, p, k)
            np.testing.assert_allclose(known_orderstats(r, p, k), v, atol=1e-12)
            for alpha in [rng.normal(size=k)] + [obj.weights for obj in _objectives(k, rng)]:
                np.testing.assert_allclose(known_lstat_value(r, p, alpha), v @ alpha, atol=1e-12)
                np.testing.assert_allclose(known_lstat_inclusion(r, p, alpha), q @ alpha, atol=1e-12)
                adv = known_lstat_advantage(r, p, alpha)
                np.testing.assert_allclose(adv, q @ alpha - v @ alpha, atol=1e-12)
                np.testing.assert_allclose(known_lstat_advantage(r, p, alpha, rankwise=True), q - v, atol=1e-12)
                np.testing.assert_allclose(known_lstat_inclusion(r, p, alpha, rankwise=True), q, atol=1e-12)
                # mixture identity (Prop. D.2) and its consequence sum_b p_b abar_b = 0
                np.testing.assert_allclose(p @ known_lstat_inclusion(r, p, alpha), v @ alpha, atol=1e-12)
                assert abs(p @ adv) < 1e-12


def test_known_regime_unnormalized_p_and_batched_states():
    rng = np.random.default_rng(3)
    r = rng.normal(size=(5, 6, 4))
    p = rng.uniform(0.1, 2.0, size=(5, 6, 4))
    adv = known_lstat_advantage(r, p, "top2@5")
    assert adv.shape == (5, 6, 4)
    for idx in np.ndindex(5, 6):
        pn = p[idx] / p[idx].sum()
        v, q = brute_force_known(r[idx], pn, 5)
        alpha = Objective.parse("top2@5").weights
        np.testing.assert_allclose(adv[idx], (q - v) @ alpha, atol=1e-12)


def test_value_identities():
    rng = np.random.default_rng(4)
    for spec in ("cvar0.2@50", "gmd@50", "quantile0.3@50", "winsor5@50"):
        t = OrderStatTransform(200, spec)
        # each rank j is supplied by exactly one sorted position: sum_m W[m, j] = 1
        np.testing.assert_allclose(t.value_weights.sum(), t.alpha.sum(), atol=1e-12)
        np.testing.assert_allclose(t.value(np.full(200, 2.5)), 2.5 * t.alpha.sum(), atol=1e-12)
        np.testing.assert_allclose(t.advantage(np.full(200, 2.5)), 0.0, atol=1e-12)
        x = rng.normal(size=200)
        # a_i = q_i - v^(-i) by definition
        np.testing.assert_allclose(t.advantage(x), t.inclusion(x) - t.leave_one_out(x), atol=1e-12)


def test_large_batch_against_independent_hypergeometric():
    """N = 10^5, k = N/2: the O(N) CDF scan against Boost's hypergeometric CDF, and the estimator's identities."""
    n, k = 100_000, 50_000
    m, d = n - 2, k - 2
    for x in (9_999, 24_999):
        cdf = hypergeom_cdf_all_n(x, m, d)
        rows = np.linspace(0, m, 25).astype(int)
        rows = np.unique(np.concatenate([rows, np.arange(2 * x - 300, 2 * x + 300, 25)]))
        np.testing.assert_allclose(cdf[rows], stats.hypergeom.cdf(x, m, rows, d), rtol=0, atol=1e-9)
    t = OrderStatTransform(n, "cvar0.2", k=k)
    x = np.random.default_rng(5).normal(size=n)
    adv = t.advantage(x)
    assert np.isfinite(adv).all() and np.isfinite(t.value(x))
    np.testing.assert_allclose(t.value_weights.sum(), 1.0, atol=1e-9)
    np.testing.assert_allclose(t.advantage(x + 100.0), adv, atol=1e-8)
    # The lower-tail objective only rewards the bottom: the top half of the batch gets the same advantage.
    top = adv[x > np.quantile(x, 0.6)]
    np.testing.assert_allclose(top, top[0], atol=1e-9)


def test_dense_and_runs_routes_agree_at_medium_size():
    alpha = np.zeros(2000)
    alpha[:400] = 1 / 400
    dense = hypergeom_expectation(alpha, 9_998, 1_999, "dense")
    runs = hypergeom_expectation(alpha, 9_998, 1_999, "runs")
    np.testing.assert_allclose(runs, dense, rtol=0, atol=1e-11)


def _reference_known(r, p, objective, k=None, quantity="advantage", rankwise=False):
    """The known regime in its original operation order, one new array per operation (no in-place updates, plain
    ``isfinite`` and ``take_along_axis``): the optimized code must give the same bits."""
    import array_api_compat as compat
    from scipy.special import gammaln

    from ordergrad_rl.core import _xp
    from ordergrad_rl.core.known import _LOG_ZERO, _weights
    from ordergrad_rl.core.objectives import resolve_objective
    from ordergrad_rl.core.scan import scan_tables

    if rankwise:
        end, beta, real_k = "top", None, float(resolve_objective(objective, k).k)
    else:
        end, beta, real_k = _weights(objective, k, 1)
    xp = compat.array_namespace(r)
    r = -r if end == "bottom" else r
    largest = xp.max(p, axis=-1, keepdims=True)
    p = p / xp.where(largest > 0, largest, xp.ones_like(largest))
    p = xp.astype(p / xp.sum(p, axis=-1, keepdims=True), r.dtype)
    r_sorted, perm = _xp.stable_sort(r, xp)
    p_sorted = xp.take_along_axis(p, perm, axis=-1)
    counts, draws = (int(real_k) if beta is None else int(beta.shape[0])), real_k - 1.0
    zero = xp.zeros_like(p_sorted[..., :1])
    cdf = xp.concat([zero, xp.cumulative_sum(p_sorted, axis=-1)], axis=-1)
    survival = xp.concat([xp.flip(xp.cumulative_sum(xp.flip(p_sorted, axis=-1), axis=-1), axis=-1), zero], axis=-1)

    def log(x):
        return xp.where(x > 0, xp.log(xp.where(x > 0, x, xp.ones_like(x))), xp.full_like(x, _LOG_ZERO))

    c = np.arange(counts, dtype=np.float64)
    comb = xp.asarray(gammaln(draws + 1) - gammaln(c + 1) - gammaln(draws - c + 1), dtype=cdf.dtype)
    log_f, log_s = log(cdf), log(survival)
    pmf = xp.exp(comb + xp.asarray(c, dtype=cdf.dtype) * (log_s - log_f)[..., None] + draws * log_f[..., None])
    if rankwise:
        g1 = xp.cumulative_sum(pmf, axis=-1)
        g2 = xp.concat([xp.zeros_like(g1[..., :1]), g1[..., :-1]], axis=-1)
        cdf, survival = cdf[..., None], survival[..., None]
    else:
        if compat.is_array_api_obj(beta) and not isinstance(beta, np.ndarray):
            suffix = xp.flip(xp.cumulative_sum(xp.astype(beta, r_sorted.dtype), axis=0), axis=0)
        else:
            suffix = xp.asarray(np.cumsum(np.asarray(beta)[::-1])[::-1].copy(), dtype=r_sorted.dtype)
        g1 = pmf @ suffix
        g2 = pmf[..., :-1] @ suffix[1:] if counts > 1 else xp.zeros_like(g1)
    table = survival * g2 + cdf * g1
    rows = (slice(1, None), slice(None)) if rankwise else (slice(1, None),)
    before = (slice(None, -1), slice(None)) if rankwise else (slice(None, -1),)
    weights_v = table[(..., *rows)] - table[(..., *before)]
    if quantity == "value":
        r_ = r_sorted[..., :, None] if rankwise else r_sorted
        out = xp.sum(r_ * weights_v, axis=-2 if rankwise else -1)
        out = xp.flip(out, axis=-1) if rankwise else out
    else:
        lower, diag = g2[(..., *rows)] - g2[(..., *before)], g1[(..., *rows)] - g2[(..., *before)]
        upper = g1[(..., *rows)] - g1[(..., *before)]
        if quantity == "advantage":
            lower, diag, upper = lower - weights_v, diag - weights_v, upper - weights_v
        e, f, u = scan_tables(lower, diag, upper)
        rr = r_sorted[..., :, None] if rankwise else r_sorted
        axis = -2 if rankwise else -1
        out = xp.cumulative_sum(rr * e, axis=axis) + rr * f + xp.sum(rr * u, axis=axis, keepdims=True)
        out = _xp.unsort(_xp.tie_equalize(r_sorted, out, xp), perm, xp)
        out = xp.flip(out, axis=-1) if rankwise else out
    return -out if end == "bottom" else out


KNOWN_BITS_CASES = [
    ("top5", 10), ("top2", 4), ("bot2", 6), ("max", 4), ("min", 5), ("rank3", 7), ("cvar0.3", 8), ("quantile0.2", 6),
    ("trim1", 6), ("gmd", 5), ("mean", 3), ("top2", 4.5), ("max", 2.7), ("bot3", 5.25), ("rank2", 3.5), ("top1", 1),
]  # fmt: skip


@pytest.mark.parametrize("library", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_known_regime_bits_match_the_reference_operation_order(library, dtype):
    """In-place updates and the cheaper checks keep every output bit (and the sign of zeros), ties and zeros in p
    included, for every family, numeric and live alpha, fractional k and rankwise."""
    rng = np.random.default_rng(3)
    r = (rng.integers(-3, 4, size=(5, 9)) * 0.5 + (rng.random((5, 9)) < 0.5) * rng.normal(size=(5, 9))).astype(dtype)
    r[:, 0], r[0], r[:, -1] = r[:, 1], -0.0, 0.0  # ties, -0.0 and 0.0
    p = rng.random((5, 9)).astype(dtype)
    p[rng.random((5, 9)) < 0.3], p[:, 2] = 0.0, 0.0
    p[:, 0] += 0.1
    alpha = np.array([0.1, -0.2, 0.5, 0.0, 0.3], dtype=dtype)
    if library == "torch":
        torch = pytest.importorskip("torch")
        r, p, alpha = torch.from_numpy(r), torch.from_numpy(p), torch.from_numpy(alpha)
    elif library == "jax":
        jnp = pytest.importorskip("jax.numpy")
        r, p, alpha = jnp.asarray(r), jnp.asarray(p), jnp.asarray(alpha)

    def same(got, want):
        got, want = np.asarray(got), np.asarray(want)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want))  # -0.0 stays -0.0

    functions = {"value": known_lstat_value, "inclusion": known_lstat_inclusion, "advantage": known_lstat_advantage}
    for quantity, fn in functions.items():
        for spec, k in KNOWN_BITS_CASES:
            same(fn(r, p, spec, k), _reference_known(r, p, spec, k, quantity))
        same(fn(r, p, alpha), _reference_known(r, p, alpha, None, quantity))
        if quantity != "value":
            for spec in ("top2@4", "cvar0.3@6", "min@3"):
                same(fn(r, p, spec, rankwise=True), _reference_known(r, p, spec, None, quantity, rankwise=True))
    same(known_orderstats(r, p, 4), _reference_known(r, p, "max", 4, "value", rankwise=True))
