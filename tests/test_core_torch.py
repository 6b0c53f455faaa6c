"""Torch specifics: dtypes and devices follow the input, the RP gradient through the sort, detaching, and the
known regime's autograd gradient against its likelihood-ratio formula."""

import numpy as np
import pytest
import torch

from ordergrad_rl import (
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_value,
    lstat_advantage,
    lstat_value,
)

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_output_type_dtype_device_follow_input(device, dtype):
    x = torch.randn(5, 16, dtype=dtype, device=device)
    for out in (lstat_advantage(x, "cvar0.25@8"), lstat_value(x, "cvar0.25@8")):
        assert isinstance(out, torch.Tensor) and out.dtype == dtype and out.device.type == device
    r = torch.randn(7, 3, dtype=dtype, device=device)
    p = torch.softmax(torch.randn(7, 3, dtype=dtype, device=device), -1)
    out = known_lstat_advantage(r, p, "max@4")
    assert out.dtype == dtype and out.device.type == device and out.shape == (7, 3)


def test_numpy_dtypes_and_python_lists():
    x32 = np.random.default_rng(0).normal(size=10).astype(np.float32)
    assert lstat_advantage(x32, "top2@4").dtype == np.float32
    np.testing.assert_allclose(
        lstat_advantage(x32, "top2@4"), lstat_advantage(x32.astype(np.float64), "top2@4"), atol=1e-5
    )
    assert lstat_advantage([3, 1, 2, 5], "max@2").dtype == np.float64


def test_float32_is_accurate_for_offset_rewards():
    x = torch.randn(4096, dtype=torch.float64) + 1000.0
    exact = lstat_advantage(x, "cvar0.2@128")
    approx = lstat_advantage(x.float(), "cvar0.2@128").double()
    assert (approx - exact).abs().max() < 1e-3 * exact.abs().max()


def test_rp_gradient_is_value_weights_in_sorted_order():
    t = OrderStatTransform(12, "trim2@7")
    x = torch.randn(12, dtype=torch.float64, requires_grad=True)
    t.value(x).backward()
    ranks = torch.argsort(torch.argsort(x.detach()))
    np.testing.assert_allclose(x.grad.numpy(), t.value_weights[ranks.numpy()], atol=1e-15)


def test_advantage_detached_by_default():
    x = torch.randn(3, 10, requires_grad=True)
    assert not lstat_advantage(x, "top2@4").requires_grad
    attached = lstat_advantage(x, "top2@4", detach=False)
    assert attached.requires_grad
    attached.sum().backward()  # differentiable in the rewards when asked (piecewise linear)
    assert x.grad is not None


def test_known_autograd_gradient_equals_lr_formula():
    """grad vbar^alpha = k sum_b p_b abar_b grad log p_b (eq. app-known-lr-gradient), batched over 2048 states."""
    gen = torch.Generator().manual_seed(0)
    r = torch.randn(2048, 6, generator=gen, dtype=torch.float64)
    logits = torch.randn(2048, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    p = torch.softmax(logits, -1)
    known_lstat_value(r, p, "top3@10").sum().backward()
    adv = known_lstat_advantage(r, p.detach(), "top3@10")
    # d/dlogits of sum_b p_b c_b with c fixed: p * (c - sum_b p_b c_b); here c = k * abar, sum_b p_b abar_b = 0
    expected = 10 * p.detach() * adv
    torch.testing.assert_close(logits.grad, expected, atol=1e-12, rtol=0)
    np.testing.assert_allclose(adv.numpy(), known_lstat_advantage(r.numpy(), p.detach().numpy(), "top3@10"), atol=1e-12)
