"""Bad input gets a ValueError that names the problem, never a silent NaN or a crash deep inside torch."""

import numpy as np
import pytest
import torch

from ordergrad_rl import (
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_inclusion,
    known_lstat_value,
    known_orderstats,
    lstat_advantage,
    lstat_value,
)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("to_torch", [False, True])
def test_non_finite_rewards(bad, to_torch):
    x = np.array([1.0, bad, 2.0, 0.5])
    if to_torch:
        x = torch.from_numpy(x)
    with pytest.raises(ValueError, match="NaN or inf"):
        lstat_advantage(x, "max@2")
    with pytest.raises(ValueError, match="NaN or inf"):
        lstat_value(x, "max@2")


def test_k_versus_n():
    x = np.arange(4.0)
    with pytest.raises(ValueError, match=r"advantages need k < N.*k=4, N=4"):
        lstat_advantage(x, "max@4")
    assert lstat_value(x, "max@4") == 3.0  # values allow k = N
    with pytest.raises(ValueError, match=r"values need k <= N.*k=5, N=4"):
        lstat_value(x, "max@5")
    with pytest.raises(ValueError, match="k must be >= 1"):
        lstat_value(x, "max", k=0)
    with pytest.raises(ValueError, match="needs k"):
        lstat_advantage(x, "cvar0.2")


def test_wrong_shapes():
    t = OrderStatTransform(8, "top2@4")
    with pytest.raises(ValueError, match=r"expected rewards of shape \[\.\.\., 8\]"):
        t.advantage(np.zeros((3, 7)))
    with pytest.raises(ValueError, match="scalar"):
        lstat_advantage(np.float64(1.0), "mean")
    with pytest.raises(ValueError, match="numeric"):
        lstat_advantage(np.array(["a", "b"]), "mean")


def test_known_regime_bad_inputs():
    r = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="same shape"):
        known_lstat_value(r, np.array([0.5, 0.5]), "max@2")
    with pytest.raises(ValueError, match="non-negative"):
        known_lstat_advantage(r, np.array([0.5, -0.1, 0.6]), "max@2")
    with pytest.raises(ValueError, match="positive sum"):
        known_lstat_advantage(r, np.zeros(3), "max@2")
    with pytest.raises(ValueError, match="NaN or inf"):
        known_lstat_advantage(r, np.array([0.5, np.nan, 0.5]), "max@2")
    with pytest.raises(ValueError, match="NaN or inf"):
        known_lstat_value(np.array([1.0, np.inf, 0.0]), np.ones(3), "max@2")
    with pytest.raises(ValueError, match="same array library"):
        known_lstat_value(torch.ones(3), np.ones(3), "max@2")
    with pytest.raises(ValueError, match="k must be >= 1"):
        known_orderstats(r, np.ones(3), 0)
    with pytest.raises(ValueError, match="unknown objective"):
        known_lstat_value(r, np.ones(3), "maxx@2")


# ---------------------------------------------------------------------------------------------- defects of issue 9
@pytest.mark.parametrize("spec", ["max@2", "mean", "gmd@3", "cvar0.5@2"])
def test_rewards_near_the_float_limit_give_finite_exact_advantages(spec):
    """Finite rewards near 1.7e308 used to give NaN (the mean and the scans overflowed): rows are rescaled by a
    power of two internally, which is exact."""
    factor = 2.0**1000
    for x in (np.array([1.7e308, 1.5e308, 1.0e308, 1.2e308, 1.6e308]), np.array([8e307, -8e307, 0.0, 4e307, -2e307])):
        adv = lstat_advantage(x, spec)
        assert np.isfinite(adv).all()
        np.testing.assert_allclose(adv, factor * lstat_advantage(x / factor, spec), rtol=1e-13, atol=0)
        np.testing.assert_allclose(lstat_value(x, spec), factor * lstat_value(x / factor, spec), rtol=1e-13)
    tiny = np.array([5e-324, 0.0, 1e-320, -3e-322])  # subnormal rewards: right up to the subnormal spacing
    np.testing.assert_allclose(lstat_advantage(tiny, spec), lstat_advantage(tiny * factor, spec) / factor, atol=1e-323)


@pytest.mark.parametrize("spec", ["gmd@3", "mean", "max@2", "cvar0.5@4"])
def test_known_regime_rewards_near_the_float_limit_give_finite_exact_results(spec):
    """The known regime had no row rescaling: arms near 1.7e308 gave -inf advantages and include-one values for
    gmd@3 (true values near 1e306), and results that do overflow came back as inf instead of being refused."""
    factor = 2.0**1000
    r, p = np.array([1.7e308, 1.6e308, 1.5e308, 8e307]), np.array([1.0, 2.0, 3.0, 0.5])
    for fn in (known_lstat_value, known_lstat_inclusion, known_lstat_advantage):
        got = fn(r, p, spec)
        assert np.isfinite(got).all(), fn.__name__
        np.testing.assert_allclose(got, factor * fn(r / factor, p, spec), rtol=1e-13, atol=0)
    tiny = np.array([5e-324, 0.0, 1e-320, -3e-322])
    np.testing.assert_allclose(
        known_lstat_advantage(tiny, p, spec), known_lstat_advantage(tiny * factor, p, spec) / factor, atol=1e-323
    )
    with pytest.raises(ValueError, match="overflow float64"):  # R_b - mean is below -1.8e308 for the second arm
        known_lstat_advantage(np.array([1.7e308, -1.7e308, 1.0e308]), np.ones(3), "mean")


def test_overflowing_results_are_refused_not_nan():
    # alpha = [0, 2]: the value 2 * max overflows float64; the transform says so instead of returning inf/NaN
    with pytest.raises(ValueError, match="overflow float64"):
        lstat_value(np.array([1.7e308, 1.0, 2.0]), [0.0, 2.0])
    with pytest.raises(ValueError, match="overflow float64"):
        lstat_advantage(np.array([1.7e308, -1.7e308, 0.0]), [0.0, 2.0])


def test_an_overflow_names_the_dtype_it_overflows():
    """float32 tensors near their limit (3e38) were said to "overflow float64 ... (|rewards| up to ~1e308)"."""
    x = torch.tensor([3e38, -3e38, 0.0])
    with pytest.raises(ValueError, match=r"advantage values overflow torch.float32 \(largest value 3.4e\+38\)"):
        lstat_advantage(x, [0.0, 2.0])
    with pytest.raises(ValueError, match=r"^values overflow torch.float32"):
        known_lstat_value(x, torch.ones(3), [0.0, 4.0])


def test_the_memory_limit_is_read_where_it_is_named(monkeypatch):
    """Every refusal names ordergrad_rl.core.weights.RANKWISE_MAX_BYTES, but the known regime and the rank weights of a
    large k had imported its value: setting it changed the batch regime's limit only."""
    from ordergrad_rl import Objective
    from ordergrad_rl.core import weights

    monkeypatch.setattr(weights, "RANKWISE_MAX_BYTES", 1 << 20)  # 1 MiB
    r, p = np.array([0.0, 1.0, 2.0]), np.ones(3)
    with pytest.raises(ValueError, match=r"above the 0.000977 GiB limit"):
        known_lstat_value(r, p, "cvar0.5", k=10_007)  # k rank weights and tables for 4 thresholds: 1.4 MB
    with pytest.raises(ValueError, match=r"above the 0.000977 GiB limit"):
        Objective.parse("cvar0.37", k=200_003)  # 1.6 MB of rank weights
    monkeypatch.undo()
    assert known_lstat_value(r, p, "cvar0.5", k=10_007) == pytest.approx(1 / 3, abs=1e-3)  # the lower half: 0, 0, 1


def test_complex_rewards_are_refused():
    with pytest.raises(TypeError, match="real numbers, got complex"):
        lstat_advantage(np.array([1.0, 2.0, 3.0j]), "max@2")
    with pytest.raises(TypeError, match="real numbers, got complex"):
        lstat_value(torch.tensor([1.0, 2.0j]), "mean")
    with pytest.raises(TypeError, match="real numbers, got complex"):
        known_lstat_value(np.ones(2), np.array([0.5, 0.5 + 0j]), "max@2")


def test_complex_returns_are_refused_where_numpy_computes():
    """The functions computed in NumPy (GCVaR, the weighted batch, channel objectives) refuse complex returns as the
    array core does: they dropped the imaginary part with only NumPy's ComplexWarning."""
    from ordergrad_rl.core.channels import ChannelObjective
    from ordergrad_rl.core.gcvar import gcvar_weights
    from ordergrad_rl.core.weighted import weighted_lstat_advantage, weighted_lstat_value

    z = np.array([1.0, 2.0 + 1j, 3.0])
    channels = ChannelObjective.parse({"reward": "top1@2", "cost": ("bot1@2", 0.5)})
    calls = {
        "returns": [lambda: gcvar_weights(z, 0.5), lambda: weighted_lstat_advantage(z, np.ones(3), "cvar0.5@2"),
                    lambda: weighted_lstat_value(torch.tensor(z), np.ones(3), "cvar0.5@2")],
        "weights": [lambda: weighted_lstat_value(np.ones(3), z, "cvar0.5@2")],
        r"returns\['cost'\]": [lambda: channels.advantage_weights({"reward": np.ones(3), "cost": z})],
    }  # fmt: skip
    for name, fns in calls.items():
        for fn in fns:
            with pytest.raises(TypeError, match=f"{name} must be real numbers, got dtype complex128"):
                fn()


def test_rankwise_memory_guard_names_the_memory():
    """inclusion(rankwise=True) at N = 1e5, k = 1e4 needs tens of GB: refused up front, naming the size."""
    t = OrderStatTransform(100_000, "cvar0.2@10000")
    x = np.zeros(100_000)
    with pytest.raises(ValueError, match=r"(\d+\.\d) GiB, above the 1 GiB limit") as err:
        t.inclusion(x, rankwise=True)
    assert float(err.value.args[0].split(" GiB")[0].split()[-1]) > 40
    with pytest.raises(ValueError, match="GiB"):
        t.rank_advantage(x)
    with pytest.raises(ValueError, match="GiB"):
        t.orderstats(np.zeros((2, 100_000))[0])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("quantity", ["orderstats", "advantage", "inclusion", "leave_one_out"])
def test_rankwise_memory_guard_bounds_the_peak_memory_of_groups(monkeypatch, quantity, dtype):
    """Every call the guard lets through stays within the limit, groups of rewards included: each group's scan holds
    several N x k temporaries (three for advantages), which the guard counted as one, so rank_advantage of 13 groups
    under a 16-table limit took 42 tables (float64 NumPy: 2.6 GiB under the 1 GiB limit)."""
    import functools
    import tracemalloc

    from ordergrad_rl.core import batch, weights

    n, k = 256, 128
    table = 8 * n * k
    monkeypatch.setattr(weights, "RANKWISE_MAX_BYTES", 16 * table)
    rng = np.random.default_rng(0)
    allowed = []
    for groups in (1, 2, 4, 8, 13):
        batch.clear_caches()  # the guard counts the tables the call builds
        x = rng.normal(size=(groups, n)).astype(dtype)
        t = OrderStatTransform(n, "cvar0.2", k=k)
        call = {
            "orderstats": t.orderstats,
            "advantage": t.rank_advantage,
            "inclusion": functools.partial(t.inclusion, rankwise=True),
            "leave_one_out": functools.partial(t.leave_one_out, rankwise=True),
        }[quantity]
        tracemalloc.start()
        try:
            call(x)
        except ValueError as err:
            assert "GiB, above the" in str(err)
            continue
        finally:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
        allowed.append(groups)
        assert peak <= 16 * table, f"{groups} groups took {peak / table:.1f} tables"
    assert allowed  # the guard does not refuse what fits


def test_k_is_checked_before_any_weights_are_built():
    import time
    import tracemalloc

    tracemalloc.start()
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"k <= N.*k=100000000, N=10"):
        lstat_value(np.zeros(10), "max@100000000")
    with pytest.raises(ValueError, match=r"k < N.*k=100000000, N=10"):
        lstat_advantage(np.zeros(10), "cvar0.2", k=100_000_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * 2**20 and time.perf_counter() - start < 1.0


@pytest.mark.parametrize("n", [2.7, 0, -3, float("inf"), "8", None])
def test_batch_size_must_be_a_positive_integer(n):
    with pytest.raises((TypeError, ValueError), match="batch size n must be"):
        OrderStatTransform(n, "top2@2")


def test_batch_regime_refuses_fractional_k():
    with pytest.raises(ValueError, match="finite integer"):
        OrderStatTransform(8, "top2", k=2.5)
    with pytest.raises(ValueError, match="finite integer"):
        lstat_advantage(np.zeros(8), "top2", k=float("inf"))
    with pytest.raises(ValueError, match="fractional k is defined only in the known"):
        lstat_value(np.zeros(8), "max@2.5")


@pytest.mark.parametrize("k", [float("inf"), float("nan"), 0.5, -2.0, 0])
def test_known_regime_refuses_non_finite_or_small_k(k):
    with pytest.raises(ValueError, match="k must be"):
        known_lstat_value(np.arange(3.0), np.ones(3), "max", k=k)


def test_known_regime_fractional_k_needs_an_anchored_objective():
    with pytest.raises(ValueError, match="fixed number of ranks from one end"):
        known_lstat_value(np.arange(3.0), np.ones(3), "cvar0.2", k=2.5)
    with pytest.raises(ValueError, match="needs k >= 3"):
        known_lstat_value(np.arange(3.0), np.ones(3), "top3", k=2.5)
    with pytest.raises(ValueError, match="finite integer"):
        known_orderstats(np.arange(3.0), np.ones(3), 2.5)
