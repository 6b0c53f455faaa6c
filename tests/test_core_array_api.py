"""The core uses nothing beyond the Python array API standard: array-api-strict (the standard's reference
implementation, which rejects everything else) runs every estimator, through the standard-only fallbacks of
``_xp`` (scatter by inverse permutation, running maximum by doubling), and matches NumPy exactly."""

import numpy as np
import pytest

xs = pytest.importorskip("array_api_strict")

import ordergrad_rl as og  # noqa: E402

RNG = np.random.default_rng(0)
TIED = RNG.integers(0, 3, size=(3, 12)).astype(float)  # heavy ties: exercises the tie equalization


@pytest.mark.parametrize("spec", ["cvar0.3@5", "gmd@6", "harrelldavis0.4@7", "top2@12"])
def test_batch_quantities_match_numpy(spec):
    t = og.OrderStatTransform(12, spec)
    strict = xs.asarray(TIED)
    calls = ["value", "orderstats", "inclusion"] + (
        ["advantage", "rank_advantage", "leave_one_out"] if t.k < 12 else []
    )
    for name in calls:
        out = getattr(t, name)(strict)
        assert isinstance(out, type(strict))
        np.testing.assert_array_equal(np.asarray(out), getattr(t, name)(TIED))
    np.testing.assert_array_equal(np.asarray(og.lstat_value(strict, spec)), og.lstat_value(TIED, spec))


def test_advantages_and_known_regime_match_numpy():
    np.testing.assert_array_equal(np.asarray(og.lstat_advantage(xs.asarray(TIED), "top2@4")),
                                  og.lstat_advantage(TIED, "top2@4"))  # fmt: skip
    r, p = RNG.normal(size=(4, 5)), RNG.dirichlet(np.ones(5), size=4)
    rs, ps = xs.asarray(r), xs.asarray(p)
    for fn, args in ((og.known_lstat_value, ("bot2@4",)), (og.known_lstat_inclusion, ("gmd@3",)),
                     (og.known_lstat_advantage, ("top2@4",)), (og.known_orderstats, (3,))):  # fmt: skip
        np.testing.assert_array_equal(np.asarray(fn(rs, ps, *args)), fn(r, p, *args))
    np.testing.assert_array_equal(np.asarray(og.known_lstat_value(rs, ps, "max", k=2.5)),
                                  og.known_lstat_value(r, p, "max", k=2.5))  # fmt: skip


def test_outputs_stay_on_the_input_device():
    """Every array the core makes is on its input's device: rewards whose magnitude needs rescaling (1e200, 1e-200)
    raised array-api-strict's "Arrays from two different devices ... can not be combined" off its default device (the
    power-of-two factor was made on the default device)."""
    device = xs.Device("device1")
    for rewards in (TIED, TIED * 1e200, TIED * 1e-200):
        x = xs.asarray(rewards, device=device)
        for out, expected in ((og.lstat_advantage(x, "top2@4"), og.lstat_advantage(rewards, "top2@4")),
                              (og.lstat_value(x, "cvar0.3@5"), og.lstat_value(rewards, "cvar0.3@5")),
                              (og.known_lstat_advantage(x, xs.ones_like(x), "top2@4"),
                               og.known_lstat_advantage(rewards, np.ones_like(rewards), "top2@4"))):  # fmt: skip
            assert out.device == device
            np.testing.assert_array_equal(np.asarray(out.to_device(xs.Device("CPU_DEVICE"))), expected)


def test_integer_rewards_on_a_device_without_float64():
    """Integer rewards are computed in the float64 of their device, or its default float where it has none
    (array-api-strict's "no_float64" device refused the cast to float64 it was given)."""
    device = xs.Device("no_float64")
    x = xs.asarray(TIED.astype(np.int32), device=device)
    for out, expected in ((og.lstat_advantage(x, "top2@4"), og.lstat_advantage(TIED, "top2@4")),
                          (og.known_lstat_value(x, xs.ones((3, 12), device=device), "max@3"),
                           og.known_lstat_value(TIED, np.ones((3, 12)), "max@3"))):  # fmt: skip
        assert out.device == device and out.dtype == xs.float32
        np.testing.assert_allclose(np.asarray(out.to_device(xs.Device("CPU_DEVICE"))), expected, rtol=1e-6, atol=1e-6)
