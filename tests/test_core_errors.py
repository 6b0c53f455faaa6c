"""Bad input gets a ValueError that names the problem, never a silent NaN or a crash deep inside torch."""

import numpy as np
import pytest
import torch

from ordergrad_rl import (
    OrderStatTransform,
    known_lstat_advantage,
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
