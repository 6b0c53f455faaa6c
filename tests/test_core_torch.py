"""Torch specifics: dtypes and devices follow the input, the RP gradient through the sort, detaching, and the
known regime's autograd gradient against its likelihood-ratio formula."""

import typing
import warnings

import numpy as np
import pytest
import torch

from ordergrad_rl import (
    Objective,
    OrderStatTransform,
    known_lstat_advantage,
    known_lstat_value,
    known_orderstats,
    lstat_advantage,
    lstat_value,
)
from ordergrad_rl.core import get_transform

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


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_gradients_of_rescaled_rewards_pass_anomaly_mode(dtype):
    # Rewards beyond sqrt(float max) are rescaled by a power of two computed from them: its backward (zero, through
    # floor) held 0 * inf, and torch.autograd.set_detect_anomaly(True) raised "PowBackward1 returned nan values".
    r = torch.tensor([1e30, -1e30, 3.0, 4.0] if dtype == torch.float32 else [1e200, -1e200, 3.0, 4.0], dtype=dtype)
    p = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=dtype)
    with torch.autograd.set_detect_anomaly(True):
        x = r.clone().requires_grad_()
        lstat_value(x, "cvar0.5@2").backward()
        torch.testing.assert_close(x.grad, torch.tensor([0.0, 0.5, 1 / 3, 1 / 6], dtype=dtype))
        x = r.clone().requires_grad_()
        lstat_advantage(x, "cvar0.5@2", detach=False).sum().backward()
        assert torch.isfinite(x.grad).all()
        x = r.clone().requires_grad_()
        known_lstat_value(x, p, "max@4").backward()
        assert torch.isfinite(x.grad).all() and x.grad.sum() == pytest.approx(1.0)


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


def test_live_rank_weights_get_gradients():
    """A learned objective: alpha as a torch tensor with requires_grad. d v / d alpha_j = v_j (the order statistics),
    and the advantages are linear in alpha with Jacobian a_{i,j}."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 12, generator=gen, dtype=torch.float64)
    alpha = torch.tensor([0.1, 0.5, -0.2, 0.3, 0.3], dtype=torch.float64, requires_grad=True)
    static = OrderStatTransform(12, alpha.detach().numpy())
    lstat_value(x, alpha).sum().backward()
    torch.testing.assert_close(alpha.grad, static.orderstats(x).sum(0), atol=1e-13, rtol=0)
    adv = lstat_advantage(x, alpha)
    assert adv.requires_grad
    torch.testing.assert_close(adv.detach(), static.advantage(x), atol=1e-13, rtol=0)
    jac = torch.autograd.functional.jacobian(lambda a: lstat_advantage(x[0], a), alpha.detach())
    torch.testing.assert_close(jac, static.rank_advantage(x[0]), atol=1e-13, rtol=0)
    # known regime: d vbar / d alpha_j = vbar_j
    r = torch.randn(4, 6, generator=gen, dtype=torch.float64)
    p = torch.softmax(torch.randn(4, 6, generator=gen, dtype=torch.float64), -1)
    alpha.grad = None
    known_lstat_value(r, p, alpha).sum().backward()
    torch.testing.assert_close(alpha.grad, known_orderstats(r, p, 5).sum(0), atol=1e-13, rtol=0)
    torch.testing.assert_close(known_lstat_advantage(r, p, alpha).detach(), known_lstat_advantage(r, p, alpha.detach()))


@pytest.mark.parametrize(
    ("function", "parameter"),
    [(f, "objective") for f in (lstat_value, lstat_advantage, known_lstat_value, known_lstat_advantage)]
    + [(OrderStatTransform.__init__, "objective"), (Objective.from_weights, "alpha")],
)
def test_live_rank_weights_type_check_as_an_objective(function, parameter):
    """Users' type checkers read the annotation of ``objective``: it was ``Objective | str | Sequence[float] |
    np.ndarray``, so mypy and pyright refused the torch tensor of a learned objective (above, and the README)."""
    members = typing.get_args(typing.get_type_hints(function)[parameter])
    alpha = torch.ones(3, dtype=torch.float64, requires_grad=True)
    assert any(isinstance(alpha, typing.get_origin(member) or member) for member in members)


def test_a_transform_refuses_live_weights_it_would_detach():
    """OrderStatTransform(n, alpha) with alpha requiring grad kept a detached copy: t.value(x) had no gradient with
    respect to alpha (and would not follow its updates), silently. Per call, alpha= keeps it live."""
    alpha = torch.tensor([0.5, 0.5, 0.0], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0], dtype=torch.float64)
    for make in (OrderStatTransform, get_transform):
        with pytest.raises(ValueError, match=r"live array .* alpha=\.\.\."):
            make(5, alpha)
    transform = OrderStatTransform(5, alpha.detach())
    assert transform.value(x, alpha=alpha).requires_grad
    torch.testing.assert_close(transform.value(x), lstat_value(x, alpha).detach())


def test_rankwise_with_rank_weights_is_refused():
    """inclusion(x, rankwise=True, alpha=...) and leave_one_out(...) returned an [N, N] tensor of meaningless numbers
    (rankwise scan tables already collapsed by alpha): the [N, k] rankwise values need no weights."""
    alpha = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64, requires_grad=True)
    x = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0], dtype=torch.float64)
    transform = OrderStatTransform(5, alpha.detach())
    for quantity in ("inclusion", "leave_one_out"):
        with pytest.raises(ValueError, match="rankwise=True gives every rank"):
            getattr(transform, quantity)(x, rankwise=True, alpha=alpha)
        assert getattr(transform, quantity)(x, rankwise=True).shape == (5, 3)


@pytest.mark.parametrize(
    ("weights", "error", "match"),
    [([0.5, float("nan"), 0.5], ValueError, "alpha contains NaN or inf"),
     ([0.5, 0.0, float("inf")], ValueError, "alpha contains NaN or inf"),
     ([0.5, 0.0, 0.5j], TypeError, "alpha must contain real numbers .*complex64")],
)  # fmt: skip
def test_live_weights_are_checked_as_fixed_weights_are(weights, error, match):
    """Live rank weights (and a transform's alpha=) with NaN/inf or complex entries are refused as a fixed alpha is:
    NaN gave NaN values and advantages silently, complex lost its imaginary part with only a warning."""
    x = torch.tensor([3.0, 1.0, 2.0, 5.0, 4.0], dtype=torch.float64)
    r, p = x[:4], torch.ones(4, dtype=torch.float64)
    bad = torch.tensor(weights)
    live = bad.clone().requires_grad_()
    transform = OrderStatTransform(5, "top2@3")
    calls = [lambda: lstat_value(x, live), lambda: lstat_advantage(x, live), lambda: known_lstat_value(r, p, live),
             lambda: known_lstat_advantage(r, p, live), lambda: transform.value(x, alpha=bad),
             lambda: transform.advantage(x, alpha=bad), lambda: transform.inclusion(x, alpha=bad)]  # fmt: skip
    for call in calls:
        with pytest.raises(error, match=match):
            call()


def test_live_weights_and_rewards_must_share_a_library():
    alpha = torch.ones(3, dtype=torch.float64, requires_grad=True)
    with pytest.raises(TypeError, match="same array library"):
        lstat_value(np.zeros(6), alpha)


def test_forward_mode_transforms_of_the_rank_weights():
    """torch.func.jacfwd and jvp with respect to the rank weights: forward mode wraps them without requires_grad, so
    they were taken for fixed weights and refused ("a function transform ... is tracing it"), where jacrev worked."""
    from torch.func import jacfwd, jacrev, jvp

    x = torch.randn(2, 6, dtype=torch.float64)
    r, p = x[0], torch.ones(6, dtype=torch.float64)
    alpha = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    t = OrderStatTransform(6, alpha)
    known = known_lstat_advantage(r, p, alpha, rankwise=True)
    for fn, expected in ((lambda a: lstat_value(x, a), t.orderstats(x)),
                         (lambda a: lstat_advantage(r, a), t.rank_advantage(r)),
                         (lambda a: t.advantage(r, alpha=a), t.rank_advantage(r)),
                         (lambda a: known_lstat_advantage(r, p, a), known)):  # fmt: skip
        torch.testing.assert_close(jacfwd(fn)(alpha), expected, atol=1e-13, rtol=0)
        torch.testing.assert_close(jacfwd(fn)(alpha), jacrev(fn)(alpha), atol=1e-13, rtol=0)
    value, tangent = jvp(lambda a: lstat_value(x, a), (alpha,), (torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64),))
    torch.testing.assert_close(tangent, t.orderstats(x)[:, 0], atol=1e-13, rtol=0)


def test_fixed_weights_as_a_tensor_inside_torch_func():
    """A fixed alpha tensor (no requires_grad) under torch.func.grad/jacfwd with respect to the rewards: turning it into
    an Objective raised torch's "Cannot access data pointer of Tensor that doesn't have storage"."""
    from torch.func import grad, jacfwd

    x = torch.randn(6, dtype=torch.float64)
    alpha = torch.tensor([0.2, 0.3, 0.5], dtype=torch.float64)
    t = OrderStatTransform(6, [0.2, 0.3, 0.5])
    assert torch.equal(grad(lambda z: lstat_value(z, alpha))(x), grad(t.value)(x))
    assert torch.equal(jacfwd(lambda z: lstat_advantage(z, alpha, detach=False))(x),
                       jacfwd(lambda z: t.advantage(z, detach=False))(x))  # fmt: skip
    p = torch.ones(6, dtype=torch.float64)
    assert torch.equal(grad(lambda z: known_lstat_value(z, p, alpha))(x),
                       grad(lambda z: known_lstat_value(z, p, [0.2, 0.3, 0.5]))(x))  # fmt: skip


def test_batched_groups_stay_fast_and_equal_per_group():
    """[n_groups, G] calls (grouped agents): one call over all groups equals per-group calls."""
    x = torch.randn(512, 16, dtype=torch.float64)
    out = lstat_advantage(x, "top2@4")
    for i in (0, 17, 511):
        torch.testing.assert_close(out[i], lstat_advantage(x[i], "top2@4"), atol=1e-14, rtol=0)


def test_torch_func_vmap_grad_and_jacrev_match_eager():
    """torch.func.vmap batches the value checks' ``bool(...)``, which it refuses: batched rewards skip them (as JAX
    tracers do) and compute the eager numbers, bit for bit, without torch's fallback warnings."""
    from torch.func import grad, jacrev, vmap

    x = torch.randn(4, 9, dtype=torch.float64)
    x[1, 3] = x[1, 5]  # a tie
    t = OrderStatTransform(9, "cvar0.3@4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "not yet implemented the batching rule for aten::scatter_"
        for quantity in ("value", "advantage", "inclusion", "leave_one_out", "orderstats", "rank_advantage"):
            assert torch.equal(vmap(getattr(t, quantity))(x), getattr(t, quantity)(x)), quantity
        assert torch.equal(vmap(lambda z: lstat_advantage(z, "gmd@4"))(x), lstat_advantage(x, "gmd@4"))
        ranks = torch.argsort(torch.argsort(x, dim=-1), dim=-1)
        expected = torch.tensor(t.value_weights)[ranks]
        torch.testing.assert_close(vmap(grad(t.value))(x), expected, atol=1e-15, rtol=0)
        torch.testing.assert_close(jacrev(t.value)(x[0]), expected[0], atol=1e-15, rtol=0)
        # live rank weights batched by vmap: one value per weight vector
        alpha = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]], dtype=torch.float64)
        values = vmap(lambda a: lstat_value(x[0], a))(alpha)
        torch.testing.assert_close(values, torch.stack([lstat_value(x[0], a) for a in alpha]), atol=1e-15, rtol=0)
        r, p = x[:, :5], torch.softmax(x[:, 4:], dim=-1)
        torch.testing.assert_close(
            vmap(lambda a, b: known_lstat_advantage(a, b, "top2@5"))(r, p), known_lstat_advantage(r, p, "top2@5")
        )
    # under torch.func.grad alone the values are known: the checks still run
    with pytest.raises(ValueError, match="NaN or inf"):
        grad(lambda z: lstat_value(z, "cvar0.3@4"))(torch.tensor([1.0, float("nan"), 0.0, 2.0, 3.0]))


def test_numpy_only_estimators_refuse_torch_func_naming_themselves():
    """GCVaR, the weighted batch, channel objectives and Objective's fixed weights compute in NumPy: under
    torch.func they failed with torch's "Cannot access data pointer of Tensor that doesn't have storage"."""
    from torch.func import grad, vmap

    from ordergrad_rl.core import parse_objective
    from ordergrad_rl.core.gcvar import gcvar_weights
    from ordergrad_rl.core.weighted import weighted_lstat_advantage

    x = torch.randn(2, 8, dtype=torch.float64)
    channels = parse_objective({"reward": "top2@4", "length": ("bot2@4", 0.5)})
    calls = {
        "gcvar_weights": lambda z: torch.as_tensor(gcvar_weights(z, 0.2)),
        "weighted_lstat_advantage": lambda z: torch.as_tensor(weighted_lstat_advantage(z, torch.ones(8), "top2@4")),
        "channel objective": lambda z: torch.as_tensor(channels.channel_weights({"reward": z, "length": z})["reward"]),
        "an Objective": lambda z: torch.as_tensor(Objective.from_weights(z).weights),
    }
    for what, call in calls.items():
        with pytest.raises(TypeError, match=f"{what}.*function transform"):
            vmap(call)(x)
        with pytest.raises(TypeError, match=f"{what}.*function transform"):
            grad(lambda z, call=call: call(z).sum())(x[0])
    # outside a transform they take tensors (detached: the weights carry no gradient)
    expected = gcvar_weights(x.numpy(), 0.2)
    np.testing.assert_array_equal(gcvar_weights(x.clone().requires_grad_(), 0.2), expected)


def test_torch_compile_builds_the_tables_eagerly():
    """A first call under torch.compile, with the transform's tables not built yet: dynamo compiled the NumPy code
    that builds them and failed inside torch ("Expected np.nditer base"); with the tables cached it worked."""
    t = OrderStatTransform(9, "cvar0.3@4")
    x = torch.randn(3, 9, dtype=torch.float64)
    compiled = torch.compile(lambda z: (t.advantage(z), t.leave_one_out(z)), backend="eager")
    advantage, leave_one_out = compiled(x)
    assert torch.equal(advantage, t.advantage(x)) and torch.equal(leave_one_out, t.leave_one_out(x))


def test_torch_compile_of_the_known_regime_with_lower_rank_weights():
    """Objectives weighting the lower ranks (cvar, quantiles below the median) passed the weights on as a view of
    the cached alpha, which dynamo cannot take back after a graph break ("Expected np.nditer base")."""
    r = torch.randn(4, 5, dtype=torch.float64)
    p = torch.softmax(torch.randn(4, 5, dtype=torch.float64), dim=-1)
    expected = known_lstat_advantage(r, p, "cvar0.4@7")
    compiled = torch.compile(lambda a, b: known_lstat_advantage(a, b, "cvar0.4@7"), backend="eager")
    assert torch.equal(compiled(r, p), expected)


def test_torch_compile_runs_the_numpy_only_estimators_in_numpy():
    """GCVaR, the weighted batch and channel objectives compute in NumPy: under torch.compile dynamo converted that
    NumPy code to torch ops, failing in GCVaR ("Subtraction ... with a bool tensor") and changing channel weights'
    last bits."""
    from ordergrad_rl.core import parse_objective
    from ordergrad_rl.core.gcvar import gcvar_weights
    from ordergrad_rl.core.weighted import weighted_lstat_advantage

    x = torch.randn(8, dtype=torch.float64)
    channels = parse_objective({"reward": "top2@4", "length": ("bot2@4", 0.5)})

    def weights(z):
        by_channel = channels.channel_weights({"reward": z, "length": z})
        return gcvar_weights(z, 0.25), weighted_lstat_advantage(z, torch.ones(8), "cvar0.3@4"), by_channel["length"]

    expected = weights(x.numpy())
    for out, numpy_out in zip(torch.compile(weights, backend="eager")(x), expected, strict=True):
        np.testing.assert_array_equal(out, numpy_out)
