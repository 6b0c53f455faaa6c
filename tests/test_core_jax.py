"""JAX inputs: the same estimators under jit, vmap and grad, outputs as JAX arrays, checked against NumPy."""

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from ordergrad_rl import (  # noqa: E402
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_value,
    lstat_advantage,
    lstat_value,
)

REWARDS = np.random.default_rng(0).normal(size=(3, 12))
TOL = 2e-6  # float32 (JAX's default) against float64 NumPy


def _x64():
    enable = getattr(jax, "enable_x64", None)
    if enable is not None:
        return enable(True)
    from jax.experimental import enable_x64  # older JAX

    return enable_x64()


@pytest.mark.parametrize("spec", ["cvar0.3@5", "gmd@6", "harrelldavis0.4@7", "top2@4", "mean"])
def test_jit_and_vmap_match_numpy(spec):
    x = jnp.asarray(REWARDS)
    expected = lstat_advantage(REWARDS, spec)
    eager = lstat_advantage(x, spec)
    assert isinstance(eager, jax.Array) and eager.dtype == jnp.float32 and eager.shape == (3, 12)
    jitted = jax.jit(lambda z: lstat_advantage(z, spec))(x)
    mapped = jax.vmap(lambda z: lstat_advantage(z, spec))(x)
    for out in (eager, jitted, mapped):
        np.testing.assert_allclose(np.asarray(out), expected, atol=TOL)
    np.testing.assert_allclose(np.asarray(jax.jit(lambda z: lstat_value(z, spec))(x)), lstat_value(REWARDS, spec),
                               atol=TOL)  # fmt: skip


def test_float64_when_enabled():
    with _x64():
        x = jnp.asarray(REWARDS, dtype=jnp.float64)
        out = jax.jit(lambda z: lstat_advantage(z, "cvar0.3@5"))(x)
        assert out.dtype == jnp.float64
        np.testing.assert_allclose(np.asarray(out), lstat_advantage(REWARDS, "cvar0.3@5"), atol=1e-13)


def test_grad_of_value_is_the_value_weights_in_sorted_order():
    t = OrderStatTransform(12, "trim2@7")
    grad = jax.grad(lambda z: lstat_value(z, "trim2@7").sum())(jnp.asarray(REWARDS))
    ranks = np.argsort(np.argsort(REWARDS, axis=-1), axis=-1)
    np.testing.assert_allclose(np.asarray(grad), t.value_weights[ranks], atol=1e-7)


def test_grad_with_respect_to_the_rank_weights():
    alpha = jnp.asarray([0.1, 0.5, -0.2, 0.3, 0.3])
    grad = jax.grad(lambda a: lstat_value(jnp.asarray(REWARDS[0]), a))(alpha)
    np.testing.assert_allclose(np.asarray(grad), OrderStatTransform(12, np.asarray(alpha)).orderstats(REWARDS[0]),
                               atol=TOL)  # fmt: skip
    # advantages are linear in alpha: their Jacobian is the rankwise advantage
    jac = jax.jacobian(lambda a: lstat_advantage(jnp.asarray(REWARDS[0]), a))(alpha)
    np.testing.assert_allclose(np.asarray(jac), OrderStatTransform(12, np.asarray(alpha)).rank_advantage(REWARDS[0]),
                               atol=TOL)  # fmt: skip


def test_ties_are_equal_under_jit():
    x = jnp.asarray([1.0, 2.0, 1.0, 3.0, 2.0, 1.0])
    out = np.asarray(jax.jit(lambda z: lstat_advantage(z, "top2@3"))(x))
    assert out[0] == out[2] == out[5] and out[1] == out[4]


def test_known_regime_under_jit():
    rng = np.random.default_rng(1)
    r, logits = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    p = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    fn = jax.jit(lambda r_, p_: known_lstat_advantage(r_, p_, "top2@5"))
    np.testing.assert_allclose(np.asarray(fn(jnp.asarray(r), jnp.asarray(p))), known_lstat_advantage(r, p, "top2@5"),
                               atol=TOL)  # fmt: skip
    # grad of the exact value through softmax: k sum_b p_b abar_b grad log p_b (eq. app-known-lr-gradient)
    grad = jax.grad(lambda z: known_lstat_value(jnp.asarray(r), jax.nn.softmax(z, -1), "top2@5").sum())(
        jnp.asarray(logits)
    )
    np.testing.assert_allclose(np.asarray(grad), 5 * p * known_lstat_advantage(r, p, "top2@5"), atol=1e-5)


def test_nan_checks_are_skipped_only_inside_traces():
    bad = jnp.asarray([1.0, jnp.nan, 0.0])
    with pytest.raises(ValueError, match="NaN or inf"):
        lstat_advantage(bad, "max@2")
    # inside jit the values are unknown while tracing: documented to propagate as NaN instead of raising
    assert np.isnan(np.asarray(jax.jit(lambda z: lstat_advantage(z, "max@2"))(bad))).any()


def test_numpy_only_estimators_refuse_traces_naming_themselves():
    """They failed with JAX's TracerArrayConversionError, which names neither the estimator nor the way out."""
    from ordergrad_rl import Objective
    from ordergrad_rl.core.gcvar import gcvar_weights

    with pytest.raises(TypeError, match="gcvar_weights needs the values of returns.*jax.jit"):
        jax.jit(lambda z: gcvar_weights(z, 0.2))(jnp.asarray(REWARDS))
    with pytest.raises(TypeError, match="an Objective .*lstat_value.*jax.jit"):
        jax.jit(lambda a: Objective.from_weights(a).k)(jnp.ones(3) / 3)
