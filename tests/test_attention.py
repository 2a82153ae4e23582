"""scaled_dot_product_attention (the fused Numba kernel and the composite path), the multi-head
attention functional and module, and the Transformer encoder: values and gradients against
float64 finite differences and against PyTorch (state dicts loaded from PyTorch's modules),
grad_fn names, errors, dropout, and the fused forward's memory (no attention matrix)."""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.autograd.forward_ad as fwAD
import nbgrad.nn.functional as F

FUSED = "ScaledDotProductFlashAttentionForCpuBackward0"


def _ns(T):
    """(nn.functional, nn, dtype getter) of nbgrad or torch."""
    return T.nn.functional, T.nn


def _tensor(T, a, dtype, grad):
    if a.dtype == bool:
        return T.tensor(a)
    t = T.tensor(a, dtype=getattr(T, dtype))
    return t.requires_grad_(True) if grad else t


# ---------------------------------------------------------------------------------------------
# scaled_dot_product_attention against PyTorch


def _mask_rows(rng, shape, dead_row=None):
    m = rng.random(shape) < 0.7
    if dead_row is not None:
        m[..., dead_row, :] = False
    return m


def _sdpa_cases():
    rng = np.random.default_rng(0)
    c = []

    def add(name, qs, ks, vs, mask=None, mask_grad=False, **kw):
        c.append((name, qs, ks, vs, mask, mask_grad, kw))

    add("4d", (2, 3, 5, 8), (2, 3, 7, 8), (2, 3, 7, 8))
    add("4d-long", (1, 2, 9, 4), (1, 2, 150, 4), (1, 2, 150, 4))  # several key blocks
    add("causal", (2, 2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 4), is_causal=True)
    add("causal-L>S", (1, 2, 6, 4), (1, 2, 3, 4), (1, 2, 3, 4), is_causal=True)
    add("causal-L<S-long", (1, 1, 4, 4), (1, 1, 130, 4), (1, 1, 130, 4), is_causal=True)
    add("scale", (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), scale=0.3)
    add("scale-negative", (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), scale=-0.5)
    add("scale-zero", (1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4), scale=0.0)
    add("bool-mask-2d", (2, 2, 4, 4), (2, 2, 6, 4), (2, 2, 6, 4), _mask_rows(rng, (4, 6), 2))
    add("bool-mask-4d", (2, 2, 4, 4), (2, 2, 6, 4), (2, 2, 6, 4), _mask_rows(rng, (2, 2, 4, 6), 1))
    add("float-mask-bcast", (2, 3, 4, 4), (2, 3, 6, 4), (2, 3, 6, 4), rng.normal(size=(2, 1, 1, 6)))
    add("float-mask-(L,1)", (2, 3, 4, 4), (2, 3, 6, 4), (2, 3, 6, 4), rng.normal(size=(4, 1)))
    inf_mask = np.where(rng.random((4, 6)) < 0.4, -np.inf, 0.0)
    inf_mask[3] = -np.inf
    add("float-mask-inf", (1, 2, 4, 4), (1, 2, 6, 4), (1, 2, 6, 4), inf_mask)
    add("mask-and-causal", (1, 2, 4, 4), (1, 2, 6, 4), (1, 2, 6, 4), rng.normal(size=(4, 6)),
        is_causal=True)  # fmt: skip
    add("all-masked", (1, 1, 3, 4), (1, 1, 5, 4), (1, 1, 5, 4), np.zeros((3, 5), bool))
    add("gqa", (2, 4, 3, 8), (2, 2, 5, 8), (2, 2, 5, 8), enable_gqa=True)
    add("gqa-mqa", (1, 4, 3, 4), (1, 1, 5, 4), (1, 1, 5, 4), enable_gqa=True, is_causal=True)
    # the composite path (PyTorch's math kernel)
    add("3d", (4, 3, 8), (4, 5, 8), (4, 5, 8))
    add("3d-causal", (4, 3, 8), (4, 5, 8), (4, 5, 8), is_causal=True)
    add("3d-mask", (4, 3, 8), (4, 5, 8), (4, 5, 8), _mask_rows(rng, (3, 5), 0))
    add("2d", (3, 8), (5, 8), (5, 8), rng.normal(size=(5,)))
    add("Ev!=E", (2, 4, 3, 8), (2, 4, 5, 8), (2, 4, 5, 6))
    add("batch-broadcast", (2, 4, 3, 8), (1, 4, 5, 8), (1, 4, 5, 8))
    add("5d", (2, 2, 2, 3, 4), (2, 2, 2, 5, 4), (2, 2, 2, 5, 4), scale=0.4)
    add("3d-mask-on-4d", (2, 4, 3, 8), (2, 4, 5, 8), (2, 4, 5, 8), rng.normal(size=(4, 3, 5)))
    add("mask-requires-grad", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), rng.normal(size=(3, 5)),
        mask_grad=True)  # fmt: skip
    add("gqa-kv-heads-differ", (1, 4, 3, 4), (1, 2, 5, 4), (1, 1, 5, 4), enable_gqa=True)
    add("3d-all-masked", (2, 3, 4), (2, 5, 4), (2, 5, 4), np.zeros((3, 5), bool))
    # empty results: zeros plus (q.sum() + k.sum() + v.sum()) * 0
    add("empty-S", (2, 3, 4), (2, 0, 4), (2, 0, 4))
    add("empty-L", (2, 2, 0, 4), (2, 2, 5, 4), (2, 2, 5, 4))
    add("empty-Ev", (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 0))
    add("empty-batch", (0, 2, 3, 4), (0, 2, 5, 4), (0, 2, 5, 4))
    return c


SDPA_CASES = _sdpa_cases()


def _run_sdpa(T, case, dtype, seed=1):
    name, qs, ks, vs, mask, mask_grad, kw = case
    rng = np.random.default_rng(seed)
    q, k, v = (_tensor(T, rng.normal(size=s), dtype, True) for s in (qs, ks, vs))
    m = None if mask is None else _tensor(T, mask, dtype, mask_grad)
    out = T.nn.functional.scaled_dot_product_attention(q, k, v, m, **kw)
    leaves = [q, k, v] + ([m] if mask_grad else [])
    g = T.tensor(rng.normal(size=tuple(out.shape)), dtype=out.dtype)
    grads = T.autograd.grad(out, leaves, g, allow_unused=True)
    return out, grads


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", SDPA_CASES, ids=[c[0] for c in SDPA_CASES])
def test_sdpa_matches_torch(case, dtype):
    n_out, n_grads = _run_sdpa(nbgrad, case, dtype)
    t_out, t_grads = _run_sdpa(torch, case, dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    assert tuple(n_out.shape) == tuple(t_out.shape)
    assert n_out.dtype.name == str(t_out.dtype).replace("torch.", "")
    assert n_out.grad_fn.name() == t_out.grad_fn.name()
    np.testing.assert_allclose(n_out.detach().numpy(), t_out.detach().numpy(), **tol)
    for a, b in zip(n_grads, t_grads):
        assert tuple(a.shape) == tuple(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol)


def test_sdpa_uses_fused_kernel_where_pytorch_does():
    q = nbgrad.randn(2, 3, 4, 8, requires_grad=True)
    k = nbgrad.randn(2, 3, 5, 8)
    assert F.scaled_dot_product_attention(q, k, k).grad_fn.name() == FUSED
    m = nbgrad.ones(4, 5, dtype=nbgrad.bool)
    assert F.scaled_dot_product_attention(q, k, k, m, is_causal=True).grad_fn.name() == FUSED
    assert F.scaled_dot_product_attention(q[0], k[0], k[0]).grad_fn.name() == "UnsafeViewBackward0"
    with nbgrad.no_grad():  # the fused op without a graph
        assert F.scaled_dot_product_attention(q, k, k).grad_fn is None


@needs_torch
def test_sdpa_node_saves_like_torch():
    nodes = []
    for T in (nbgrad, torch):
        q = T.ones(1, 2, 3, 4, requires_grad=True)
        m = T.zeros(3, 3)
        o = T.nn.functional.scaled_dot_product_attention(q, q[:, :, :3], q[:, :, :3], m, scale=0.5)
        n = o.grad_fn
        assert n._saved_query is q and n._saved_attn_mask is m
        assert tuple(n._saved_output.shape) == (1, 2, 3, 4)
        nodes.append((n._saved_scale, n._saved_is_causal, n._saved_dropout_p))
        nodes.append(n._saved_logsumexp.detach().numpy())
    assert nodes[0] == nodes[2]
    np.testing.assert_allclose(nodes[1], nodes[3], rtol=1e-6)


@needs_torch
def test_sdpa_nan_propagates_like_torch():
    rng = np.random.default_rng(3)
    qa, ka = rng.normal(size=(1, 2, 3, 4)), rng.normal(size=(1, 2, 5, 4))
    qa[0, 0, 1, 0] = np.nan
    ka[0, 1, 2, 3] = np.inf
    outs = []
    for T in (nbgrad, torch):
        q, k = T.tensor(qa, requires_grad=True), T.tensor(ka, requires_grad=True)
        o = T.nn.functional.scaled_dot_product_attention(q, k, k)
        o.sum().backward()
        outs.append((o.detach().numpy(), q.grad.numpy(), k.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_fully_masked_rows_are_zero_with_zero_gradients():
    q = nbgrad.randn(1, 2, 3, 4, dtype=nbgrad.float64, requires_grad=True)
    k = nbgrad.randn(1, 2, 5, 4, dtype=nbgrad.float64, requires_grad=True)
    m = nbgrad.ones(3, 5, dtype=nbgrad.bool)
    m[1] = False
    out = F.scaled_dot_product_attention(q, k, k, m)
    assert out.grad_fn.name() == FUSED
    assert not out[:, :, 1].detach().numpy().any()
    assert np.isfinite(out.detach().numpy()).all()
    out.sum().backward()
    assert not q.grad[:, :, 1].numpy().any() and np.isfinite(k.grad.numpy()).all()


# ---------------------------------------------------------------------------------------------
# finite differences (float64) of the fused op, first and second order


def _fd_inputs(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [
        nbgrad.tensor(rng.normal(size=s), dtype=nbgrad.float64, requires_grad=True) for s in shapes
    ]


FD_CASES = [
    ("plain", [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 4)], {}),
    ("causal", [(2, 1, 4, 3), (2, 1, 4, 3), (2, 1, 4, 3)], dict(is_causal=True)),
    ("bool-mask", [(1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2)], dict(mask="bool")),
    ("float-mask", [(2, 2, 3, 2), (2, 2, 4, 2), (2, 2, 4, 2)], dict(mask="float")),
    (
        "gqa-causal-scale",
        [(1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)],
        dict(enable_gqa=True, is_causal=True, scale=0.8),
    ),  # fmt: skip
]


def _fd_fn(kw):
    kw = dict(kw)
    kind = kw.pop("mask", None)
    mask = None
    if kind == "bool":
        mask = nbgrad.tensor([[True, False, True, True], [False] * 4, [True, True, False, False]])
    elif kind == "float":
        mask = nbgrad.tensor(np.random.default_rng(5).normal(size=(2, 1, 1, 4)))

    def fn(q, k, v):
        out = F.scaled_dot_product_attention(q, k, v, mask, **kw)
        assert out.grad_fn is None or out.grad_fn.name() == FUSED
        return out

    return fn


@pytest.mark.parametrize("case", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_sdpa_gradcheck(case):
    _, shapes, kw = case
    assert nbgrad.autograd.gradcheck(_fd_fn(kw), tuple(_fd_inputs(shapes)))


@pytest.mark.parametrize("case", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_sdpa_gradgradcheck(case):
    _, shapes, kw = case
    assert nbgrad.autograd.gradgradcheck(_fd_fn(kw), tuple(_fd_inputs(shapes)))


@pytest.mark.parametrize("case", FD_CASES, ids=[c[0] for c in FD_CASES])
def test_fused_backward_equals_differentiable_backward(case):
    """The fused Numba backward (create_graph=False) and the backward built from nbgrad ops
    (create_graph=True) give the same gradients."""
    _, shapes, kw = case
    xs = _fd_inputs(shapes, seed=2)
    out = _fd_fn(kw)(*xs)
    g = nbgrad.tensor(np.random.default_rng(4).normal(size=tuple(out.shape)))
    fused = nbgrad.autograd.grad(out, xs, g, retain_graph=True)
    graph = nbgrad.autograd.grad(out, xs, g, create_graph=True)
    for a, b in zip(fused, graph):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_forward_mode_tangent_of_the_mask_is_kept():
    """A mask with a forward-mode tangent (and no requires_grad) takes the fused path; its
    tangent must reach the output (regression: it was dropped)."""
    rng = np.random.default_rng(0)
    q, k, v = (
        nbgrad.tensor(rng.normal(size=s)) for s in ((1, 2, 3, 2), (1, 2, 4, 2), (1, 2, 4, 2))
    )
    m, tm = nbgrad.tensor(rng.normal(size=(3, 4))), nbgrad.tensor(rng.normal(size=(3, 4)))
    with fwAD.dual_level():
        out = F.scaled_dot_product_attention(q, k, v, fwAD.make_dual(m, tm))
        tangent = fwAD.unpack_dual(out).tangent
    eps = 1e-6
    plus = F.scaled_dot_product_attention(q, k, v, m + eps * tm)
    minus = F.scaled_dot_product_attention(q, k, v, m - eps * tm)
    num = (plus - minus).numpy() / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), num, rtol=1e-6, atol=1e-8)


# ---------------------------------------------------------------------------------------------
# no attention matrix in the fused forward and backward


def test_fused_path_stores_no_attention_matrix():
    L = S = 1536
    q = nbgrad.randn(1, 1, L, 16, requires_grad=True)
    k = nbgrad.randn(1, 1, S, 16, requires_grad=True)
    v = nbgrad.randn(1, 1, S, 16, requires_grad=True)
    F.scaled_dot_product_attention(q[:, :, :8], k[:, :, :8], v[:, :, :8]).sum().backward()
    matrix = L * S * 4  # bytes of one float32 (L, S) attention matrix: 9.4 MB
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = F.scaled_dot_product_attention(q, k, v)
        fwd_peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        out.backward(nbgrad.ones_like(out))
        bwd_peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert out.grad_fn.name() == FUSED
    assert fwd_peak < matrix / 8, fwd_peak
    assert bwd_peak < matrix / 4, bwd_peak
    assert np.isfinite(q.grad.numpy()).all()


# ---------------------------------------------------------------------------------------------
# dropout (composite path, nbgrad's generator)


def test_sdpa_dropout_is_dropout_of_the_probabilities():
    rng = np.random.default_rng(0)
    q, k, v = (
        nbgrad.tensor(rng.normal(size=s), requires_grad=True)
        for s in ((2, 2, 4, 4), (2, 2, 6, 4), (2, 2, 6, 4))
    )
    nbgrad.manual_seed(7)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    assert out.grad_fn.name() == "UnsafeViewBackward0"
    nbgrad.manual_seed(7)
    p = nbgrad.softmax(q @ k.transpose(-2, -1) / 2.0, -1)
    want = F.dropout(p, 0.4) @ v
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-6)
    out.sum().backward()
    gq = q.grad.numpy().copy()
    q.grad = None
    want.sum().backward()
    np.testing.assert_allclose(gq, q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_sdpa_dropout_is_unbiased_and_seeded():
    q = nbgrad.randn(1, 1, 3, 4, dtype=nbgrad.float64)
    k = nbgrad.randn(1, 1, 50, 4, dtype=nbgrad.float64)
    v = nbgrad.ones(1, 1, 50, 1, dtype=nbgrad.float64)
    outs = [F.scaled_dot_product_attention(q, k, v, dropout_p=0.3).numpy() for _ in range(400)]
    assert abs(np.mean(outs) - 1.0) < 0.02  # E[dropout(p)] = p: rows still sum to 1
    nbgrad.manual_seed(3)
    a = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    nbgrad.manual_seed(3)
    b = F.scaled_dot_product_attention(q, k, v, dropout_p=0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())


@needs_torch
def test_sdpa_dropout_one_matches_torch():
    outs = []
    for T in (nbgrad, torch):
        q = T.ones(1, 2, 3, 4, dtype=T.float64, requires_grad=True)
        o = T.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
        o.sum().backward()
        outs.append((o.detach().numpy(), q.grad.numpy(), o.grad_fn.name()))
    np.testing.assert_array_equal(outs[0][0], outs[1][0])
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    assert outs[0][2] == outs[1][2]


# ---------------------------------------------------------------------------------------------
# errors (PyTorch's types and messages)


def _err_cases():
    def r(*s, dtype="float32"):
        return lambda T: T.zeros(*s, dtype=getattr(T, dtype))

    q4, k4 = r(2, 4, 3, 8), r(2, 4, 5, 8)
    return [
        ("query-not-tensor", lambda T: ([1.0], k4(T), k4(T)), {}),
        ("key-not-tensor", lambda T: (q4(T), 3, k4(T)), {}),
        ("mask-not-tensor", lambda T: (q4(T), k4(T), k4(T)), dict(attn_mask=[1.0])),
        ("dropout-str", lambda T: (q4(T), k4(T), k4(T)), dict(dropout_p="a")),
        ("causal-int", lambda T: (q4(T), k4(T), k4(T)), dict(is_causal=1)),
        ("scale-str", lambda T: (q4(T), k4(T), k4(T)), dict(scale="a")),
        ("gqa-int", lambda T: (q4(T), k4(T), k4(T)), dict(enable_gqa=1)),
        ("causal-numpy-bool", lambda T: (q4(T), k4(T), k4(T)), dict(is_causal=np.bool_(True))),
        ("dropout-list", lambda T: (q4(T), k4(T), k4(T)), dict(dropout_p=[0.1])),
        ("dtype", lambda T: (q4(T), r(2, 4, 5, 8, dtype="float64")(T), k4(T)), {}),
        ("1d", lambda T: (r(8)(T), r(5, 8)(T), r(5, 8)(T)), {}),
        ("mask-int", lambda T: (q4(T), k4(T), k4(T), T.zeros(3, 5, dtype=T.int64)), {}),
        ("mask-f64-on-f32", lambda T: (q4(T), k4(T), k4(T), T.zeros(3, 5, dtype=T.float64)), {}),
        ("mask-1d", lambda T: (q4(T), k4(T), k4(T), T.zeros(5)), {}),
        ("mask-bad-shape", lambda T: (q4(T), k4(T), k4(T), T.zeros(4, 5)), {}),
        ("mask-5d", lambda T: (q4(T), k4(T), k4(T), T.zeros(1, 2, 4, 3, 5)), {}),
        (
            "mask-and-causal-3d",
            lambda T: (r(4, 3, 8)(T), r(4, 5, 8)(T), r(4, 5, 8)(T), T.zeros(3, 5)),
            dict(is_causal=True),
        ),  # fmt: skip
        ("head-dim", lambda T: (q4(T), r(2, 4, 5, 7)(T), k4(T)), {}),
        ("kv-length-3d", lambda T: (r(4, 3, 8)(T), r(4, 5, 8)(T), r(4, 6, 8)(T)), {}),
        ("batch", lambda T: (q4(T), r(3, 4, 5, 8)(T), r(3, 4, 5, 8)(T)), {}),
        ("heads-no-gqa", lambda T: (q4(T), r(2, 2, 5, 8)(T), r(2, 2, 5, 8)(T)), {}),
        (
            "gqa-not-divisible",
            lambda T: (q4(T), r(2, 3, 5, 8)(T), r(2, 3, 5, 8)(T)),
            dict(enable_gqa=True),
        ),  # fmt: skip
        ("gqa-2d", lambda T: (r(3, 8)(T), r(5, 8)(T), r(5, 8)(T)), dict(enable_gqa=True)),
        ("dropout-negative-fused", lambda T: (q4(T), k4(T), k4(T)), dict(dropout_p=-0.1)),
        ("dropout-too-large", lambda T: (q4(T), k4(T), k4(T)), dict(dropout_p=1.5)),
    ]


ERR_CASES = _err_cases()


@needs_torch
@pytest.mark.parametrize("case", ERR_CASES, ids=[c[0] for c in ERR_CASES])
def test_sdpa_errors_match_torch(case):
    _, make, kw = case
    got = []
    for T in (nbgrad, torch):
        with pytest.raises(Exception) as info:
            T.nn.functional.scaled_dot_product_attention(*make(T), **kw)
        got.append((type(info.value), str(info.value)))
    assert got[0][0] is got[1][0], got
    assert got[0][1] == got[1][1], got


@needs_torch
@pytest.mark.parametrize(
    "kw",
    [
        dict(dropout_p=True),  # a float argument takes bools, numpy numbers, 1-element tensors
        dict(dropout_p=np.float32(0.0), scale=1),
        dict(scale=np.float64(0.5)),
        dict(dropout_p="tensor"),
    ],
)
def test_sdpa_float_arguments_accept_what_torch_accepts(kw):
    outs = []
    for T in (nbgrad, torch):
        T.manual_seed(0)
        q = T.ones(1, 1, 2, 2, dtype=T.float64)
        kw2 = {k: (T.tensor(0.0) if v == "tensor" else v) for k, v in kw.items()}
        outs.append(T.nn.functional.scaled_dot_product_attention(q, q, q, **kw2))
    if kw.get("dropout_p") is True:  # p = 1: everything dropped
        assert not outs[0].numpy().any() and not outs[1].numpy().any()
    else:
        _compare(outs[0], outs[1])


def test_sdpa_rejects_unknown_keyword_and_positional_scale():
    q = nbgrad.zeros(1, 1, 2, 2)
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        F.scaled_dot_product_attention(q, q, q, foo=1)
    with pytest.raises(TypeError, match="positional argument"):
        F.scaled_dot_product_attention(q, q, q, None, 0.0, False, None)


def test_sdpa_kv_length_mismatch_raises_on_the_fused_path_too():
    """PyTorch's fused CPU kernel reads past ``key``'s length into a longer ``value`` without
    a check; nbgrad raises the composite path's error instead (docs/differences.md)."""
    q, k, v = nbgrad.zeros(2, 4, 3, 8), nbgrad.zeros(2, 4, 5, 8), nbgrad.zeros(2, 4, 6, 8)
    with pytest.raises(RuntimeError, match="batch2 tensor"):
        F.scaled_dot_product_attention(q, k, v)


# ---------------------------------------------------------------------------------------------
# MultiheadAttention against PyTorch (state dict loaded from PyTorch's module)


def _load_from_torch(nm, tm):
    nm.load_state_dict({k: nbgrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})


def _compare(a, b, tol=1e-10):
    assert tuple(a.shape) == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


MHA_CASES = [
    ("default", dict(), dict()),
    ("batch-first", dict(batch_first=True), dict()),
    ("kdim-vdim", dict(kdim=5, vdim=3), dict()),
    ("no-bias", dict(bias=False), dict(need_weights=False)),
    ("bias-kv", dict(add_bias_kv=True), dict(kpm="bool", attn_mask="bool2d")),
    ("zero-attn", dict(add_zero_attn=True), dict(kpm="float", need_weights=False)),
    ("per-head-weights", dict(), dict(average_attn_weights=False, attn_mask="float3d")),
    (
        "masks-sdpa",
        dict(batch_first=True),
        dict(kpm="bool", attn_mask="bool2d", need_weights=False),
    ),
    ("causal-hint", dict(), dict(attn_mask="causal", is_causal=True, need_weights=False)),
    ("unbatched", dict(), dict(unbatched=True, kpm="bool")),
    ("self-attention", dict(batch_first=True), dict(self_attn=True, need_weights=False)),
    ("key-is-value", dict(), dict(kv_same=True, kpm="bool")),
    ("eval-dropout", dict(dropout=0.5), dict(eval=True)),
]


def _mha_run(T, ckw, fkw, tm=None):
    L, S, N, E = 3, 4, 2, 8
    nn = T.nn
    m = nn.MultiheadAttention(E, 2, dtype=T.float64, **ckw)
    if tm is not None:
        _load_from_torch(m, tm)
    if fkw.get("eval"):
        m.eval()
    rng = np.random.default_rng(11)
    bf = ckw.get("batch_first", False)
    unb = fkw.get("unbatched", False)

    def shape(n, d):
        if unb:
            return (n, d)
        return (N, n, d) if bf else (n, N, d)

    q = T.tensor(rng.normal(size=shape(L, E)), requires_grad=True)
    if fkw.get("self_attn"):
        S = L
        k = v = q
    else:
        k = T.tensor(rng.normal(size=shape(S, ckw.get("kdim", E))), requires_grad=True)
        v = T.tensor(rng.normal(size=shape(S, ckw.get("vdim", E))), requires_grad=True)
        if fkw.get("kv_same"):  # encoder-decoder attention: one projection for key and value
            v = k
    kw = {a: fkw[a] for a in ("need_weights", "average_attn_weights", "is_causal") if a in fkw}
    kpm = rng.random((N, S)) < 0.3
    kpm[:, 0] = False
    if unb:
        kpm = kpm[0]
    if fkw.get("kpm") == "bool":
        kw["key_padding_mask"] = T.tensor(kpm)
    elif fkw.get("kpm") == "float":
        kw["key_padding_mask"] = T.tensor(np.where(kpm, -1e9, 0.5 * rng.normal(size=kpm.shape)))
    am = fkw.get("attn_mask")
    if am == "bool2d":
        a = rng.random((L, S)) < 0.3
        a[:, 0] = False
        kw["attn_mask"] = T.tensor(a)
    elif am == "float3d":
        kw["attn_mask"] = T.tensor(rng.normal(size=(N * 2, L, S)))
    elif am == "causal":
        kw["attn_mask"] = T.tensor(np.triu(np.full((L, S), -np.inf), 1))
    out, w = m(q, k, v, **kw)
    g = T.tensor(rng.normal(size=tuple(out.shape)))
    leaves = list({id(t): t for t in (q, k, v)}.values()) + list(m.parameters())
    loss = (out * g).sum() + (w.sum() if w is not None else 0)
    grads = T.autograd.grad(loss, leaves, allow_unused=True)
    return m, out, w, grads


@needs_torch
@pytest.mark.parametrize("case", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_matches_torch(case):
    _, ckw, fkw = case
    torch.manual_seed(0)
    tm, t_out, t_w, t_grads = _mha_run(torch, ckw, fkw)
    nm, n_out, n_w, n_grads = _mha_run(nbgrad, ckw, fkw, tm)
    assert [n for n, _ in nm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    _compare(n_out, t_out)
    assert n_out.grad_fn.name() == t_out.grad_fn.name()
    assert (n_w is None) == (t_w is None)
    if t_w is not None:
        _compare(n_w, t_w)
    for a, b in zip(n_grads, t_grads):
        assert (a is None) == (b is None)
        if b is not None:
            _compare(a, b)


@needs_torch
def test_multihead_attention_mismatched_mask_types_warn_like_torch():
    msgs = []
    for T in (nbgrad, torch):
        m = T.nn.MultiheadAttention(4, 2)
        x = T.zeros(3, 1, 4)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            m(x, x, x, key_padding_mask=T.zeros(1, 3, dtype=T.bool), attn_mask=T.zeros(3, 3))
        msgs.append([str(r.message) for r in rec])
    assert msgs[0] == msgs[1] and msgs[0]


MHA_ERRORS = [
    ("embed-zero", lambda T: T.nn.MultiheadAttention(0, 2), None),
    ("not-divisible", lambda T: T.nn.MultiheadAttention(6, 4), None),
    ("query-4d", lambda T: T.nn.MultiheadAttention(4, 2), lambda T: (T.zeros(1, 2, 3, 4),) * 3),
    (
        "key-2d",
        lambda T: T.nn.MultiheadAttention(4, 2),
        lambda T: (T.zeros(3, 1, 4), T.zeros(3, 4), T.zeros(3, 4)),
    ),  # fmt: skip
    ("embed-dim", lambda T: T.nn.MultiheadAttention(4, 2), lambda T: (T.zeros(3, 1, 5),) * 3),
    (
        "kv-shapes",
        lambda T: T.nn.MultiheadAttention(4, 2),
        lambda T: (T.zeros(3, 1, 4), T.zeros(3, 1, 4), T.zeros(2, 1, 4)),
    ),  # fmt: skip
]


@needs_torch
@pytest.mark.parametrize("case", MHA_ERRORS, ids=[c[0] for c in MHA_ERRORS])
def test_multihead_attention_errors_match_torch(case):
    _, make, args = case
    got = []
    for T in (nbgrad, torch):
        with pytest.raises(Exception) as info:
            m = make(T)
            m(*args(T))
        got.append((type(info.value), str(info.value)))
    assert got[0] == got[1]


MHA_CALL_ERRORS = [
    ("attn-mask-2d-shape", dict(attn_mask=lambda T: T.zeros(2, 3))),
    ("attn-mask-3d-shape", dict(attn_mask=lambda T: T.zeros(3, 3, 3))),
    ("attn-mask-4d", dict(attn_mask=lambda T: T.zeros(1, 2, 3, 3))),
    ("attn-mask-int", dict(attn_mask=lambda T: T.zeros(3, 3, dtype=T.int64))),
    ("kpm-shape", dict(key_padding_mask=lambda T: T.zeros(2, 3, dtype=T.bool))),
    ("kpm-3d", dict(key_padding_mask=lambda T: T.zeros(1, 1, 3, dtype=T.bool))),
    ("causal-without-mask", dict(is_causal=lambda T: True)),
]


@needs_torch
@pytest.mark.parametrize("case", MHA_CALL_ERRORS, ids=[c[0] for c in MHA_CALL_ERRORS])
def test_multihead_attention_call_errors_match_torch(case):
    _, kw = case
    got = []
    for T in (nbgrad, torch):
        m = T.nn.MultiheadAttention(4, 2)
        x = T.zeros(3, 1, 4)
        with pytest.raises(Exception) as info:
            m(x, x, x, **{k: f(T) for k, f in kw.items()})
        got.append((type(info.value), str(info.value)))
    assert got[0] == got[1]


# ---------------------------------------------------------------------------------------------
# TransformerEncoderLayer / TransformerEncoder against PyTorch


ENC_CASES = [
    ("post-norm", dict(), dict()),
    ("batch-first-gelu", dict(batch_first=True, activation="gelu"), dict(kpm=True)),
    ("norm-first", dict(norm_first=True), dict(mask="causal")),
    ("no-bias-callable", dict(bias=False, activation="silu"), dict(mask="causal", is_causal=True)),
    ("gelu-module-eps", dict(activation="GELU", layer_norm_eps=1e-3), dict(mask="bool", kpm=True)),
]


def _activation(T, name):
    if name == "silu":
        return T.nn.functional.silu
    if name == "GELU":
        return T.nn.GELU()
    return name


def _encoder_run(T, ckw, fkw, num_layers=2, tm=None, seed=5):
    ckw = dict(ckw)
    if "activation" in ckw:
        ckw["activation"] = _activation(T, ckw["activation"])
    layer = T.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, dtype=T.float64, **ckw)
    enc = T.nn.TransformerEncoder(
        layer,
        num_layers,
        norm=T.nn.LayerNorm(8, dtype=T.float64),
        enable_nested_tensor=False,
    )
    if tm is not None:
        _load_from_torch(enc, tm)
    rng = np.random.default_rng(seed)
    bf = ckw.get("batch_first", False)
    S, N = 5, 3
    x = T.tensor(rng.normal(size=(N, S, 8) if bf else (S, N, 8)), requires_grad=True)
    kw = {}
    if fkw.get("mask") == "causal":
        kw["mask"] = T.tensor(np.triu(np.full((S, S), -np.inf), 1))
    elif fkw.get("mask") == "bool":
        kw["mask"] = T.tensor(np.triu(np.ones((S, S), bool), 2))
    if fkw.get("kpm"):
        kpm = np.zeros((N, S), bool)
        kpm[0, 3:] = True
        kw["src_key_padding_mask"] = T.tensor(kpm)
    if "is_causal" in fkw:
        kw["is_causal"] = fkw["is_causal"]
    out = enc(x, **kw)
    g = T.tensor(rng.normal(size=tuple(out.shape)))
    grads = T.autograd.grad((out * g).sum(), [x] + list(enc.parameters()))
    return enc, out, grads


@needs_torch
@pytest.mark.parametrize("case", ENC_CASES, ids=[c[0] for c in ENC_CASES])
def test_transformer_encoder_matches_torch(case):
    _, ckw, fkw = case
    torch.manual_seed(0)
    te, t_out, t_grads = _encoder_run(torch, ckw, fkw)
    ne, n_out, n_grads = _encoder_run(nbgrad, ckw, fkw, tm=te)
    assert list(ne.state_dict()) == list(te.state_dict())
    _compare(n_out, t_out, 1e-9)
    for a, b in zip(n_grads, t_grads):
        _compare(a, b, 1e-9)


@needs_torch
@pytest.mark.parametrize("layer_kw", [dict(), dict(norm_first=True, batch_first=True)])
def test_transformer_encoder_layer_alone_matches_torch(layer_kw):
    outs = []
    tl = None
    for T in (torch, nbgrad):
        torch.manual_seed(1)
        layer = T.nn.TransformerEncoderLayer(8, 4, 12, dropout=0.2, dtype=T.float64, **layer_kw)
        if tl is None:
            tl = layer
        else:
            _load_from_torch(layer, tl)
        layer.eval()  # dropout off; with grad, PyTorch's fast path is not taken either
        x = T.tensor(np.random.default_rng(2).normal(size=(4, 3, 8)), requires_grad=True)
        out = layer(x, src_mask=T.tensor(np.triu(np.ones((4, 4) if not layer_kw else (3, 3)), 1)))
        out.sum().backward()
        outs.append((out, x.grad))
    for a, b in zip(outs[1], outs[0]):
        _compare(a, b, 1e-9)


@needs_torch
@pytest.mark.parametrize("left_aligned", [True, False])
def test_transformer_encoder_inference_padding_like_torch(left_aligned):
    """Evaluation without grad and a padding mask: PyTorch runs nested tensors and returns
    zeros at padded positions (before the final norm) when the mask is left-aligned."""
    outs = []
    te = None
    for T in (torch, nbgrad):
        torch.manual_seed(3)
        layer = T.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, dtype=T.float64)
        enc = T.nn.TransformerEncoder(layer, 2, norm=T.nn.LayerNorm(8, dtype=T.float64))
        if te is None:
            te = enc
        else:
            _load_from_torch(enc, te)
        enc.eval()
        kpm = np.zeros((3, 5), bool)
        kpm[0, 3:] = True
        kpm[2, 1:] = True
        if not left_aligned:
            kpm[1, 0] = True
        x = T.tensor(np.random.default_rng(4).normal(size=(3, 5, 8)))
        with T.no_grad():
            outs.append(enc(x, src_key_padding_mask=T.tensor(kpm)))
    _compare(outs[1], outs[0], 1e-9)


@needs_torch
@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(batch_first=True),
        dict(batch_first=True, norm_first=True),
        dict(batch_first=True, activation="silu"),
        dict(batch_first=True, bias=False),
    ],
)
def test_transformer_encoder_construction_warnings_match_torch(kw):
    msgs = []
    for T in (nbgrad, torch):
        kw2 = dict(kw)
        if "activation" in kw2:
            kw2["activation"] = _activation(T, kw2["activation"])
        layer = T.nn.TransformerEncoderLayer(8, 2, 16, **kw2)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            enc = T.nn.TransformerEncoder(layer, 2)
        msgs.append(([str(r.message) for r in rec], enc.use_nested_tensor))
    assert msgs[0] == msgs[1]


def test_transformer_encoder_layers_are_independent_copies():
    layer = nbgrad.nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0)
    enc = nbgrad.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
    ps = [enc.layers[i].linear1.weight for i in range(3)]
    assert all(p is not layer.linear1.weight for p in ps)
    assert len({id(p) for p in ps}) == 3
    assert len(list(enc.parameters())) == 3 * len(list(layer.parameters()))
    np.testing.assert_array_equal(ps[0].detach().numpy(), ps[2].detach().numpy())


def test_encoder_is_causal_is_detected_from_the_mask():
    from nbgrad.nn.modules.transformer import _detect_is_causal_mask

    causal = nbgrad.triu(nbgrad.full((4, 4), -math.inf), diagonal=1)
    assert _detect_is_causal_mask(causal, None, 4) is True
    assert _detect_is_causal_mask(causal, None, 5) is False
    assert _detect_is_causal_mask(causal * 0, None, 4) is False
    assert _detect_is_causal_mask(None, True) is True


def test_bad_activation_string():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nbgrad.nn.TransformerEncoderLayer(4, 2, activation="tanh")
