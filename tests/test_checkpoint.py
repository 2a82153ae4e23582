"""nbgrad.utils.checkpoint: same values and gradients as without checkpointing (both variants),
closure parameters get gradients, dropout masks are replayed, less memory is held."""

import tracemalloc
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.utils.checkpoint import CheckpointError, checkpoint, checkpoint_sequential

MODES = [pytest.param(True, id="reentrant"), pytest.param(False, id="non_reentrant")]


def dropout(x, p=0.5):
    """Dropout drawn from nbgrad's default generator (what F.dropout does)."""
    mask = (nbgrad.rand(*x.shape) > p).to(x.dtype)
    return x * mask / (1 - p)


class Model:
    """Parameters captured by closure, like a Module's."""

    def __init__(self, width=6, seed=0):
        nbgrad.manual_seed(seed)
        self.w1 = nbgrad.randn(width, width, dtype=nbgrad.float64, requires_grad=True)
        self.b1 = nbgrad.randn(width, dtype=nbgrad.float64, requires_grad=True)
        self.w2 = nbgrad.randn(width, width, dtype=nbgrad.float64, requires_grad=True)

    def params(self):
        return [self.w1, self.b1, self.w2]

    def zero(self):
        for p in self.params():
            p.grad = None

    def block(self, x, scale=1.0, drop=False):
        h = (x @ self.w1 + self.b1).tanh()
        if drop:
            h = dropout(h)
        return (h @ self.w2).sigmoid() * scale


def run(model, use_ckpt, mode=None, drop=False, seed=3, **ckpt_kw):
    model.zero()
    nbgrad.manual_seed(seed)
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64, requires_grad=True)
    nbgrad.manual_seed(seed + 100)
    if use_ckpt:
        out = checkpoint(model.block, x, 2.0, drop, use_reentrant=mode, **ckpt_kw)
    else:
        out = model.block(x, 2.0, drop)
    (out * out).sum().backward()
    after = nbgrad.rand(3).numpy().copy()  # the caller's random stream after backward
    return (
        out.detach().numpy().copy(),
        x.grad.numpy().copy(),
        [p.grad.numpy().copy() for p in model.params()],
        after,
    )


def assert_same(a, b):
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_allclose(a[1], b[1], rtol=1e-12, atol=1e-12)
    for ga, gb in zip(a[2], b[2]):
        np.testing.assert_allclose(ga, gb, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(a[3], b[3])


@pytest.mark.parametrize("mode", MODES)
def test_same_values_and_grads_including_closure_parameters(mode):
    m = Model()
    ref = run(m, False)
    got = run(m, True, mode)
    assert_same(ref, got)
    assert all(g is not None and np.abs(g).sum() > 0 for g in got[2])


@pytest.mark.parametrize("mode", MODES)
def test_dropout_masks_are_replayed_with_preserve_rng_state(mode):
    m = Model()
    ref = run(m, False, drop=True)
    got = run(m, True, mode, drop=True)
    assert_same(ref, got)  # also: the caller's RNG stream is untouched
    bad = run(m, True, mode, drop=True, preserve_rng_state=False)
    np.testing.assert_array_equal(bad[0], ref[0])  # forward is the same ...
    assert not np.allclose(bad[2][0], ref[2][0])  # ... but recompute drew a new mask


@pytest.mark.parametrize("mode", MODES)
def test_multiple_outputs_and_non_tensor_args(mode):
    w = nbgrad.randn(3, 3, requires_grad=True)

    def f(x, k, name, y):
        assert name == "tag" and k == 3
        return (x @ w) * k, y.exp(), "not a tensor", None

    def loss(outs):
        a, b, s, n = outs
        assert s == "not a tensor" and n is None
        return (a.sin().sum() + b.sum()) if b is not None else a.sum()

    nbgrad.manual_seed(0)
    x = nbgrad.randn(2, 3, requires_grad=True)
    y = nbgrad.randn(2, requires_grad=True)
    loss(f(x, 3, "tag", y)).backward()
    ref = [x.grad.numpy().copy(), y.grad.numpy().copy(), w.grad.numpy().copy()]
    for t in (x, y, w):
        t.grad = None
    outs = checkpoint(f, x, 3, "tag", y, use_reentrant=mode)
    assert outs[0].requires_grad and outs[1].requires_grad
    loss(outs).backward()
    for r, g in zip(ref, [x.grad, y.grad, w.grad]):
        np.testing.assert_allclose(g.numpy(), r, rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_only_one_output_used(mode):
    w = nbgrad.randn(3, requires_grad=True)
    x = nbgrad.randn(3, requires_grad=True)
    a, b = checkpoint(lambda x: (x * w, x + w), x, use_reentrant=mode)
    a.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w.detach().numpy())
    np.testing.assert_allclose(w.grad.numpy(), x.detach().numpy())


def test_non_reentrant_supports_kwargs_autograd_grad_and_inputs_without_grad():
    m = Model()
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64)  # does not require grad
    out = checkpoint(m.block, x, scale=2.0, use_reentrant=False)
    ref = m.block(x, scale=2.0)
    np.testing.assert_array_equal(out.detach().numpy(), ref.detach().numpy())
    g = nbgrad.autograd.grad(out.sum(), m.params())
    r = nbgrad.autograd.grad(ref.sum(), m.params())
    for a, b in zip(g, r):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    out = checkpoint(m.block, x, scale=2.0, use_reentrant=False)
    m.zero()
    out.sum().backward(inputs=[m.w2])
    assert m.w1.grad is None
    np.testing.assert_allclose(m.w2.grad.numpy(), r[2].numpy(), rtol=1e-12)


def test_reentrant_refuses_autograd_grad_and_inputs_like_pytorch():
    m = Model()
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64, requires_grad=True)
    msg = "use_reentrant=True, torch.utils.checkpoint is incompatible with .grad()"
    with pytest.raises(RuntimeError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        nbgrad.autograd.grad(checkpoint(m.block, x, use_reentrant=True).sum(), [x])
    with pytest.raises(RuntimeError, match="incompatible"):
        checkpoint(m.block, x, use_reentrant=True).sum().backward(inputs=[x])


def test_reentrant_with_no_input_requiring_grad_warns_and_gives_no_grads():
    m = Model()
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        out = checkpoint(m.block, x, use_reentrant=True)
    assert not out.requires_grad


def test_reentrant_rejects_kwargs():
    with pytest.raises(ValueError, match="Unexpected keyword arguments: scale"):
        checkpoint(lambda x, scale: x, nbgrad.ones(1), scale=2, use_reentrant=True)


def test_missing_use_reentrant_warns_and_defaults_to_reentrant():
    x = nbgrad.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        y = checkpoint(lambda t: t.exp(), x)
    assert y.grad_fn.name() == "CheckpointFunctionBackward"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        checkpoint(lambda t: t.exp(), x, use_reentrant=False)


@pytest.mark.parametrize("mode", MODES)
def test_grad_mode_off_just_runs_the_function(mode):
    x = nbgrad.randn(3, requires_grad=True)
    with nbgrad.no_grad():
        y = checkpoint(lambda t: t * 2, x, use_reentrant=mode)
    assert not y.requires_grad


def test_non_reentrant_retain_graph_backward_twice():
    m = Model()
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64, requires_grad=True)
    out = checkpoint(m.block, x, use_reentrant=False).sum()
    out.backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    out.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1, rtol=1e-12)


def test_non_reentrant_determinism_check():
    calls = []

    def f(x):
        calls.append(1)
        n = 3 if len(calls) == 1 else 2  # recomputation saves a different shape
        return (x[:n] * x[:n]).sum()

    x = nbgrad.randn(4, requires_grad=True)
    out = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="different metadata"):
        out.backward()

    calls.clear()

    def g(x):
        calls.append(1)
        y = x * x
        return (y * y if len(calls) == 1 else y).sum()  # recomputation saves fewer tensors

    out = checkpoint(g, nbgrad.randn(4, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="different number of tensors"):
        out.backward()


@pytest.mark.parametrize("mode", MODES)
def test_nested_checkpoints(mode):
    m = Model()
    ref = run(m, False)

    def outer(x, scale, drop):
        h = checkpoint(lambda t: (t @ m.w1 + m.b1).tanh(), x, use_reentrant=mode)
        return (h @ m.w2).sigmoid() * scale

    m.zero()
    nbgrad.manual_seed(3)
    x = nbgrad.randn(4, 6, dtype=nbgrad.float64, requires_grad=True)
    out = checkpoint(outer, x, 2.0, False, use_reentrant=mode)
    (out * out).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ref[1], rtol=1e-12)
    for g, r in zip(m.params(), ref[2]):
        np.testing.assert_allclose(g.grad.numpy(), r, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_checkpoint_sequential(mode):
    nbgrad.manual_seed(0)
    ws = [nbgrad.randn(5, 5, dtype=nbgrad.float64, requires_grad=True) for _ in range(6)]
    fns = [lambda h, w=w: (h @ w).tanh() for w in ws]
    x = nbgrad.randn(2, 5, dtype=nbgrad.float64, requires_grad=True)
    h = x
    for f in fns:
        h = f(h)
    h.sum().backward()
    ref = [w.grad.numpy().copy() for w in ws] + [x.grad.numpy().copy()]
    for t in ws + [x]:
        t.grad = None
    out = checkpoint_sequential(fns, 3, x, use_reentrant=mode)
    np.testing.assert_allclose(out.detach().numpy(), h.detach().numpy(), rtol=1e-12)
    out.sum().backward()
    for t, r in zip(ws + [x], ref):
        np.testing.assert_allclose(t.grad.numpy(), r, rtol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_less_memory_is_held_after_forward(mode):
    nbgrad.manual_seed(0)
    n, width = 8, 128
    ws = [(nbgrad.randn(width, width) / 12).requires_grad_() for _ in range(n)]
    x = nbgrad.randn(64, width, requires_grad=True)

    def chain(h, lo, hi):
        for i in range(lo, hi):
            h = h + (h @ ws[i]).tanh() / 2
        return h

    def held(use_ckpt):
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            if use_ckpt:
                out = checkpoint(chain, x, 0, n, use_reentrant=mode)
            else:
                out = chain(x, 0, n)
            size = tracemalloc.get_traced_memory()[0] - base
        finally:
            tracemalloc.stop()
        out.sum().backward()
        return size, x.grad.numpy().copy()

    held(False)  # warm-up (kernel compilation, caches)
    x.grad = None
    plain, g_plain = held(False)
    x.grad = None
    ck, g_ck = held(True)
    act = 64 * width * 4
    assert plain >= 2 * n * act * 0.9  # two activations per layer are kept ...
    assert ck <= 2.5 * act  # ... against the output and a few small objects
    np.testing.assert_allclose(g_ck, g_plain, rtol=1e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("mode", MODES)
def test_matches_pytorch_checkpoint(mode):
    rng = np.random.default_rng(0)
    w_np, x_np = rng.standard_normal((5, 5)), rng.standard_normal((3, 5))

    def grads(lib, ckpt):
        w = lib.tensor(w_np, requires_grad=True)
        x = lib.tensor(x_np, requires_grad=True)

        def f(x):
            return (x @ w).tanh() * x

        out = ckpt(f, x, use_reentrant=mode)
        out.pow(2).sum().backward()
        return out.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    import torch.utils.checkpoint as tc

    for a, b in zip(grads(nbgrad, checkpoint), grads(torch, tc.checkpoint)):
        np.testing.assert_allclose(a, b, rtol=1e-10)


@pytest.mark.skipif(
    not hasattr(nbgrad.nn, "Dropout") or not hasattr(nbgrad.nn, "Linear"),
    reason="nn.Linear / nn.Dropout not available",
)
@pytest.mark.parametrize("mode", MODES)
def test_modules_with_dropout_inside_checkpoint(mode):
    nn = nbgrad.nn
    nbgrad.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Dropout(0.3), nn.Linear(16, 4))
    x = nbgrad.randn(5, 8, requires_grad=True)

    def step(use_ckpt):
        net.zero_grad()
        x.grad = None
        nbgrad.manual_seed(11)
        out = checkpoint(net, x, use_reentrant=mode) if use_ckpt else net(x)
        out.pow(2).sum().backward()
        return [out.detach().numpy().copy(), x.grad.numpy().copy()] + [
            p.grad.numpy().copy() for p in net.parameters()
        ]

    ref, got = step(False), step(True)
    assert len(ref) == 2 + 4
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
