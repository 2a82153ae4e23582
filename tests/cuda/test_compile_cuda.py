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


def _pointwise_cases():
    from nbgrad.ops.registry import REGISTRY
    from nbgrad.testing.op_db import OP_DB

    cases = []
    for info in OP_DB:
        op = REGISTRY.get(info.name)
        if info.grad and op is not None and op.kind == "pointwise" and op.formula is not None:
            cases.append((info, info.samples[0]))
    return cases


POINTWISE = _pointwise_cases()
FUSED_OPS = set()  # the op names seen inside CUDA regions (checked by the test after these)


@pytest.mark.parametrize("case", POINTWISE, ids=[c[0].name for c in POINTWISE])
def test_pointwise_ops_fuse_on_cuda_with_the_cpu_values_and_gradients(case):
    """Each differentiable pointwise registry op (its first op-table sample, float64), chained
    with three more ops so that it lands in a fused region: the compiled replay on CUDA gives
    the eager CPU values and gradients, with the regions the CPU replay fuses (the fusion
    decisions do not depend on the device; ``where`` and ``masked_fill`` take a bool operand
    and stay ops on both)."""
    from nbgrad.testing.op_db import materialize

    info, sample = case

    def f(*a):
        out = info.fn(T, *a)
        return (out * 1.25 + 0.5).sin()

    def run(fn, device):
        leaves, args = materialize(T, sample, "float64", True)
        if device == "cuda":
            moved = [a.detach().cuda().requires_grad_(a.requires_grad)
                     if isinstance(a, T.Tensor) else a for a in args]  # fmt: skip
            leaves = [a for a in moved if isinstance(a, T.Tensor) and a.requires_grad]
            args = moved
        y = fn(*args)
        y.backward(T.ones_like(y))
        return y.detach().cpu().numpy(), [t.grad.cpu().numpy() if t.grad is not None else None
                                          for t in leaves]  # fmt: skip

    want_y, want_g = run(f, "cpu")
    on_cpu = T.compile(f)
    run(on_cpu, "cpu")
    cf = T.compile(f)
    run(cf, "cuda")  # capture
    got_y, got_g = run(cf, "cuda")
    assert cf.stats["replays"] == 1
    fused = [[ev.name for ev in reg.events] for reg in _regions(cf)]
    assert fused == [[ev.name for ev in reg.events] for reg in _regions(on_cpu)]
    assert all(reg.cuda for reg in _regions(cf))
    FUSED_OPS.update(name for names in fused for name in names)
    np.testing.assert_allclose(got_y, want_y, rtol=1e-10, atol=1e-12, equal_nan=True)
    for a, b in zip(got_g, want_g):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11, equal_nan=True)


def test_most_pointwise_ops_were_fused_on_cuda():
    """Most ops of the table above joined a CUDA region themselves (not only the chain after
    them); runs after it (pytest keeps file order)."""
    ran = [info.name for info, _ in POINTWISE]
    if len(FUSED_OPS) == 0:
        pytest.skip("the parametrized test above did not run in this session")
    inside = [name for name in ran if name in FUSED_OPS]
    assert len(inside) >= 0.85 * len(ran), sorted(set(ran) - FUSED_OPS)
