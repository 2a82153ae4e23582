"""nbgrad.compile with CUDA tensors: pointwise chains fuse into one CUDA kernel forward and one
per input backward (NOTE [fused regions on CUDA] in compile/fuse.py), with the eager values,
gradients and hooks.  Simulator or GPU (tests/cuda)."""

import numpy as np
import pytest

import nbgrad as T


def _step(log):
    def step(x, w):
        h = (x * w + 1).tanh()
        h.register_hook(lambda g: log.append(round(float(g.sum().item()), 9)))
        loss = (h * h).sum()
        loss.backward()
        return loss

    return step


def _regions(cf):
    return [reg for recs in cf._records.values() for rec in recs for reg in rec.regions]


def test_compiled_step_on_cuda_matches_eager_and_fuses():
    xs = np.linspace(-1, 1, 6)
    x = T.tensor(xs, device="cuda")
    w = T.tensor(xs[::-1].copy(), device="cuda", requires_grad=True)
    log = []
    want = _step(log)(x, w).item()
    want_g, want_log = w.grad.cpu().numpy().copy(), list(log)
    cf = T.compile(_step(log))
    for _ in range(3):
        log.clear()
        w.grad = None
        got = cf(x, w)
        assert got.is_cuda and abs(got.item() - want) < 1e-12
        np.testing.assert_allclose(w.grad.cpu().numpy(), want_g, rtol=1e-12)
        assert w.grad.is_cuda
        assert log == want_log
    assert cf.stats["replays"] == 2
    # x * w + 1 -> tanh is one region (its result has a hook: a breakpoint, so it is the
    # region's output); h * h and the sum stay ops (on CUDA the closing sum is not fused)
    (reg,) = _regions(cf)
    assert reg.cuda and [ev.name for ev in reg.events] == ["mul", "add", "tanh"]
    assert "cuda.jit" in cf.explain()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cuda_region_with_broadcast_inputs_matches_eager(dtype):
    """A bias broadcast over rows, a shared gradient (``relu(h + b)``), a constant scalar and a
    transcendental: the region's backward reduces each input's gradient to its shape."""
    rng = np.random.default_rng(0)
    h0 = rng.standard_normal((5, 7)).astype(dtype)
    b0 = rng.standard_normal(7).astype(dtype)

    def step(h, b):
        y = ((h + b).relu() * 0.5 + h.sigmoid()).exp()
        y.backward(T.ones_like(y))
        return y

    def leaves():
        return (T.tensor(h0, device="cuda", requires_grad=True),
                T.tensor(b0, device="cuda", requires_grad=True))  # fmt: skip

    h, b = leaves()
    want = step(h, b).detach().cpu().numpy()
    want_h, want_b = h.grad.cpu().numpy(), b.grad.cpu().numpy()
    cf = T.compile(step)
    h, b = leaves()
    cf(h, b)  # capture
    h, b = leaves()
    got = cf(h, b)
    assert cf.stats["replays"] == 1
    (reg,) = _regions(cf)
    assert reg.cuda and len(reg.events) == 6
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got.detach().cpu().numpy(), want, **tol)
    np.testing.assert_allclose(h.grad.cpu().numpy(), want_h, **tol)
    np.testing.assert_allclose(b.grad.cpu().numpy(), want_b, **tol)
    assert b.grad.shape == (7,) and b.grad.is_cuda


def test_cuda_region_keeps_in_place_errors():
    """The fused node saves its inputs with their versions: an input modified after the replay
    and before backward is eager mode's error."""
    x = T.tensor(np.linspace(0.1, 1, 4), device="cuda", requires_grad=True)

    def f(x):
        a = x * 1.0
        return a, (a.sin() * 2 + 1).tanh()

    cf = T.compile(f)
    cf(x)
    a, y = cf(x)
    assert cf.stats["replays"] == 1 and _regions(cf)[0].cuda
    with T.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
