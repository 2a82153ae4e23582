"""The fast paths of the CNN kernels (issue 13, docs/performance.md "CNN step"): the 2x2
max-pool kernel, the flat im2col / col2im, batch-wide conv GEMMs with the bias fused into the
layout pass, the per-thread scratch buffers and the graph-free conv backward.

Each fast path is checked against the generic kernel or a numpy reference (bit for bit where
the arithmetic is the same), against PyTorch for values, indices and gradients, against finite
differences in float64, and for the cases that must miss it."""

import threading

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.autograd import gradcheck, gradgradcheck
from nbgrad.kernels.cpu import conv as KC, pool as KP
from nbgrad.ops.nn import conv as conv_ops


def _rng(seed=0):
    return np.random.default_rng(seed)


def _special(shape, dtype, seed=0):
    """Random values with NaNs of both signs, infinities, signed zeros and many ties."""
    rng = _rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    for value, p in ((1.0, 0.2), (np.nan, 0.1), (-np.nan, 0.05), (-0.0, 0.05), (0.0, 0.05)):
        a[rng.random(shape) < p] = value
    a[rng.random(shape) < 0.05] = np.inf
    a[rng.random(shape) < 0.05] = -np.inf
    return a


def _bits(a):
    return a.view(np.int32 if a.dtype == np.float32 else np.int64)


# -- max_pool2d: the 2x2 fast path ---------------------------------------------------------------

POOL_SHAPES = [(1, 2, 2), (3, 4, 4), (5, 7, 9), (2, 6, 3), (64, 26, 26), (700, 4, 4), (9, 11, 2)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", POOL_SHAPES)
def test_maxpool2x2_kernel_matches_generic_kernel_bitwise(shape, dtype):
    """Same values (bit for bit, NaN payload and sign of zero included) and same indices as the
    generic kernel, on NaNs, infinities, signed zeros and ties; odd sizes leave a row/column out."""
    x = _special(shape, dtype, seed=sum(shape))
    P, H, W = shape
    oh, ow = H // 2, W // 2
    out_f, idx_f = np.empty((P, oh, ow), dtype), np.empty((P, oh, ow), np.int64)
    out_g, idx_g = np.empty_like(out_f), np.empty_like(idx_f)
    KP.maxpool2x2_fwd_cpu(x, out_f, idx_f)
    KP.maxpool2d_fwd_cpu(x, out_g, idx_g, 2, 2, 2, 2, 0, 0, 1, 1)
    np.testing.assert_array_equal(_bits(out_f), _bits(out_g))
    np.testing.assert_array_equal(idx_f, idx_g)


def _count_calls(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize(
    "shape, kwargs, fast",
    [
        ((2, 3, 6, 6), dict(kernel_size=2), True),
        ((2, 3, 7, 5), dict(kernel_size=2, stride=2), True),
        ((3, 6, 6), dict(kernel_size=(2, 2), stride=(2, 2)), True),
        ((2, 3, 6, 6), dict(kernel_size=2, ceil_mode=True), True),  # even: no partial window
        ((2, 3, 7, 6), dict(kernel_size=2, ceil_mode=True), False),  # partial last row
        ((2, 3, 6, 6), dict(kernel_size=2, stride=1), False),
        ((2, 3, 6, 6), dict(kernel_size=2, padding=1), False),
        ((2, 3, 6, 6), dict(kernel_size=2, dilation=2), False),
        ((2, 3, 6, 6), dict(kernel_size=3), False),
        ((2, 3, 6, 6), dict(kernel_size=(2, 1), stride=2), False),
    ],
)
def test_max_pool2d_takes_the_fast_path_only_for_full_2x2_windows(monkeypatch, shape, kwargs, fast):
    calls = _count_calls(monkeypatch, KP, "maxpool2x2_fwd_cpu")
    F.max_pool2d(nbgrad.randn(*shape), **kwargs)
    assert len(calls) == (1 if fast else 0)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "shape, kwargs",
    [
        ((2, 3, 8, 8), dict(kernel_size=2)),
        ((2, 3, 9, 7), dict(kernel_size=2)),
        ((3, 5, 4), dict(kernel_size=2)),
        ((2, 2, 6, 8), dict(kernel_size=2, ceil_mode=True)),
        ((2, 2, 7, 8), dict(kernel_size=2, ceil_mode=True)),  # misses the fast path
        ((2, 2, 7, 8), dict(kernel_size=2, stride=1)),  # misses the fast path
    ],
)
def test_max_pool2d_values_indices_and_grads_match_torch(shape, kwargs, dtype):
    """NaN wins (the last NaN of a window), ties pick the first maximum, -0.0 and 0.0 tie:
    values, returned indices and the scattered gradient equal PyTorch's."""
    a = _special(shape, getattr(np, dtype), seed=len(shape) + shape[-1])
    g = (
        _rng(1)
        .standard_normal(F.max_pool2d(nbgrad.tensor(a), **kwargs).shape, dtype=np.float64)
        .astype(dtype)
    )
    res = {}
    for T in (nbgrad, torch):
        x = T.tensor(a, requires_grad=True)
        y, idx = T.nn.functional.max_pool2d(x, return_indices=True, **kwargs)
        y.backward(T.tensor(g))
        res[T.__name__] = (y.detach().numpy(), idx.numpy(), x.grad.numpy())
    (yn, in_, gn), (yt, it, gt) = res["nbgrad"], res["torch"]
    np.testing.assert_array_equal(_bits(yn), _bits(yt))
    np.testing.assert_array_equal(in_, it)
    np.testing.assert_array_equal(gn, gt)


@needs_torch
def test_max_pool2d_fast_path_on_non_contiguous_input_matches_torch():
    a = _special((4, 3, 10, 12), np.float32, seed=5)
    for view in (
        lambda t: t.transpose(2, 3),
        lambda t: t[:, :, 1:, ::2],
        lambda t: t.permute(1, 0, 2, 3),
    ):
        xn, xt = view(nbgrad.tensor(a, requires_grad=True)), view(torch.tensor(a))
        yn, in_ = F.max_pool2d(xn, 2, return_indices=True)
        yt, it = torch.nn.functional.max_pool2d(xt, 2, return_indices=True)
        np.testing.assert_array_equal(_bits(yn.detach().numpy()), _bits(yt.numpy()))
        np.testing.assert_array_equal(in_.numpy(), it.numpy())


def test_max_pool2d_fast_path_gradcheck_float64():
    # distinct values: finite differences are only meaningful away from ties
    a = _rng(2).permutation(2 * 3 * 6 * 7).reshape(2, 3, 6, 7).astype(np.float64) / 7.0
    x = nbgrad.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: F.max_pool2d(t, 2), (x,))
    assert gradgradcheck(lambda t: F.max_pool2d(t, 2), (x,))


def test_max_pool2d_fast_path_indices_are_version_checked():
    x = nbgrad.randn(1, 2, 4, 4, requires_grad=True)
    y, idx = F.max_pool2d(x, 2, return_indices=True)
    idx.add_(0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


# -- im2col / col2im -----------------------------------------------------------------------------


def _np_im2col(x, kh, kw, sh, sw, ph, pw, dh, dw, oh, ow):
    N, C, H, W = x.shape
    cols = np.zeros((C * kh * kw, N * oh * ow), x.dtype)
    for c in range(C):
        for i in range(kh):
            for j in range(kw):
                for n in range(N):
                    for y in range(oh):
                        for z in range(ow):
                            iy, ix = y * sh - ph + i * dh, z * sw - pw + j * dw
                            if 0 <= iy < H and 0 <= ix < W:
                                cols[(c * kh + i) * kw + j, (n * oh + y) * ow + z] = x[n, c, iy, ix]
    return cols


def test_im2col_and_col2im_match_a_reference_over_random_geometries():
    """Strides, dilations, paddings larger than the kernel, outputs past the implied
    bottom/right padding (asymmetric padding); col2im is im2col's adjoint."""
    rng = _rng(3)
    done = 0
    while done < 150:
        N, C = (int(v) for v in rng.integers(1, 3, 2))
        H, W = (int(v) for v in rng.integers(1, 9, 2))
        kh, kw, sh, sw, ph, pw = (int(v) for v in rng.integers(1, 4, 6))
        ph, pw = ph - 1, pw - 1
        dh, dw = (int(v) for v in rng.integers(1, 3, 2))
        oh = (H + 2 * ph - dh * (kh - 1) - 1) // sh + 1 + int(rng.integers(0, 2))
        ow = (W + 2 * pw - dw * (kw - 1) - 1) // sw + 1 + int(rng.integers(0, 2))
        if oh < 1 or ow < 1:
            continue
        args = (kh, kw, sh, sw, ph, pw, dh, dw, oh, ow)
        x = rng.standard_normal((N, C, H, W))
        cols = np.full((C * kh * kw, N * oh * ow), np.nan)
        KC.im2col_cpu(x, cols, *args)
        ref = _np_im2col(x, *args)
        np.testing.assert_array_equal(cols, ref, err_msg=str(args))
        c = rng.standard_normal(cols.shape)
        gx = np.full(x.shape, np.nan)
        KC.col2im_cpu(c, gx, *args)
        np.testing.assert_allclose((x * gx).sum(), (ref * c).sum(), rtol=1e-12, err_msg=str(args))
        done += 1


def test_valid_im2col_and_col2im_match_the_general_kernels():
    """The stride-1 no-padding kernels (whole rows, no clipping), dilations included."""
    rng = _rng(12)
    for N, C, H, W, kh, kw, dh, dw in (
        (3, 2, 7, 9, 3, 3, 1, 1),
        (2, 3, 8, 6, 2, 3, 2, 1),
        (1, 1, 5, 5, 5, 5, 1, 1),
        (2, 2, 4, 9, 1, 4, 1, 2),
    ):
        oh, ow = H - dh * (kh - 1), W - dw * (kw - 1)
        x = rng.standard_normal((N, C, H, W)).astype(np.float32)
        ref = np.empty((C * kh * kw, N * oh * ow), np.float32)
        KC.im2col_cpu(x, ref, kh, kw, 1, 1, 0, 0, dh, dw, oh, ow)
        cols = np.full_like(ref, np.nan)
        KC.im2col_valid_cpu(x, cols, kh, kw, dh, dw, oh, ow)
        np.testing.assert_array_equal(cols, ref)
        c = rng.standard_normal(ref.shape).astype(np.float32)
        g1, g2 = np.full(x.shape, np.nan, np.float32), np.full(x.shape, np.nan, np.float32)
        KC.col2im_cpu(c, g1, kh, kw, 1, 1, 0, 0, dh, dw, oh, ow)
        KC.col2im_valid_cpu(c, g2, kh, kw, dh, dw, oh, ow)
        np.testing.assert_array_equal(g1, g2)


# -- conv2d / conv1d: values and gradients -------------------------------------------------------

CONV_CASES = [
    ((4, 1, 12, 12), (5, 1, 3, 3), dict()),  # one input channel, as the CNN benchmark's first
    ((3, 4, 7, 6), (6, 4, 3, 3), dict(padding=1)),
    ((2, 4, 9, 8), (6, 2, 3, 2), dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2), groups=2)),
    ((2, 6, 5, 5), (6, 1, 3, 3), dict(padding="same", groups=6)),  # depthwise
    ((2, 3, 6, 7), (4, 3, 2, 2), dict(padding="same", dilation=1)),  # asymmetric 'same'
    ((1, 2, 5, 5), (3, 2, 5, 5), dict(padding=2, stride=3)),
    ((2, 3, 4, 4), (2, 3, 1, 1), dict()),
]


def _conv_both(T, xa, wa, ba, kw, x_grad=True, layout=None):
    x = T.tensor(xa, requires_grad=x_grad)
    w = T.tensor(wa, requires_grad=True)
    b = None if ba is None else T.tensor(ba, requires_grad=True)
    xin = x if layout is None else layout(x)
    y = T.nn.functional.conv2d(xin, w, b, **kw)
    g = T.tensor(_rng(9).standard_normal(tuple(y.shape)).astype(xa.dtype))
    y.backward(g)
    grads = [x.grad, w.grad] + ([] if b is None else [b.grad])
    return y.detach().numpy(), [None if t is None else t.numpy() for t in grads]


@needs_torch
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", range(len(CONV_CASES)))
def test_conv2d_values_and_grads_match_torch_float64(case, bias):
    xs, ws, kw = CONV_CASES[case]
    rng = _rng(case)
    xa, wa = rng.standard_normal(xs), rng.standard_normal(ws)
    ba = rng.standard_normal(ws[0]) if bias else None
    yn, gn = _conv_both(nbgrad, xa, wa, ba, kw)
    yt, gt = _conv_both(torch, xa, wa, ba, kw)
    np.testing.assert_allclose(yn, yt, rtol=1e-12, atol=1e-12)
    for a, b in zip(gn, gt):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)


@needs_torch
def test_conv2d_float32_cnn_shapes_match_torch():
    """The benchmark's two convs (1 -> 16 and 16 -> 32 channels, 3x3) in float32."""
    rng = _rng(4)
    for xs, ws in (((8, 1, 28, 28), (16, 1, 3, 3)), ((8, 16, 13, 13), (32, 16, 3, 3))):
        xa = rng.standard_normal(xs).astype(np.float32)
        wa = (rng.standard_normal(ws) / 4).astype(np.float32)
        ba = rng.standard_normal(ws[0]).astype(np.float32)
        yn, gn = _conv_both(nbgrad, xa, wa, ba, {})
        yt, gt = _conv_both(torch, xa, wa, ba, {})
        np.testing.assert_allclose(yn, yt, rtol=1e-5, atol=1e-5)
        for a, b in zip(gn, gt):
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


@needs_torch
def test_conv2d_non_contiguous_inputs_match_torch():
    rng = _rng(6)
    xa = rng.standard_normal((3, 4, 8, 9))
    wa = rng.standard_normal((5, 4, 3, 3))
    for layout in (lambda t: t.transpose(2, 3), lambda t: t[:, :, ::2, 1:], lambda t: t.flip(0)):
        yn, gn = _conv_both(nbgrad, xa, wa, None, dict(padding=1), layout=layout)
        yt, gt = _conv_both(torch, xa, wa, None, dict(padding=1), layout=layout)
        np.testing.assert_allclose(yn, yt, rtol=1e-12, atol=1e-12)
        for a, b in zip(gn, gt):
            np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-11)
    # a non-contiguous weight and bias
    w = nbgrad.tensor(rng.standard_normal((3, 5, 3, 4)), requires_grad=True)
    b = nbgrad.tensor(rng.standard_normal(10)[::2].copy(), requires_grad=True)
    tw, tb = torch.tensor(w.detach().numpy(), requires_grad=True), torch.tensor(b.detach().numpy())
    x = rng.standard_normal((2, 4, 6, 6))
    yn = F.conv2d(nbgrad.tensor(x), w.permute(1, 3, 2, 0), b[::1])
    yt = torch.nn.functional.conv2d(torch.tensor(x), tw.permute(1, 3, 2, 0), tb)
    np.testing.assert_allclose(yn.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_conv2d_gradcheck_and_gradgradcheck_float64():
    rng = _rng(7)
    x = nbgrad.tensor(rng.standard_normal((2, 4, 5, 6)), requires_grad=True)
    w = nbgrad.tensor(rng.standard_normal((6, 2, 3, 2)), requires_grad=True)
    b = nbgrad.tensor(rng.standard_normal(6), requires_grad=True)

    def f(x, w, b):
        return F.conv2d(x, w, b, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)

    assert gradcheck(f, (x, w, b))
    assert gradgradcheck(f, (x, w, b))
    x1 = nbgrad.tensor(rng.standard_normal((2, 3, 9)), requires_grad=True)
    w1 = nbgrad.tensor(rng.standard_normal((4, 3, 3)), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv1d(x, w, stride=2, padding=1), (x1, w1))


def test_conv2d_graph_free_backward_equals_create_graph_backward():
    """The create_graph=False backward (one gradient-row transpose shared by dx, dw and db)
    and the differentiable partial ops give the same gradients."""
    rng = _rng(8)
    xa, wa, ba = (
        rng.standard_normal((3, 4, 7, 6)),
        rng.standard_normal((6, 2, 3, 3)),
        rng.standard_normal(6),
    )
    grads = []
    for create_graph in (False, True):
        x, w, b = (nbgrad.tensor(a, requires_grad=True) for a in (xa, wa, ba))
        y = F.conv2d(x, w, b, padding=1, groups=2)
        gs = nbgrad.autograd.grad((y * y).sum(), (x, w, b), create_graph=create_graph)
        grads.append([g.detach().numpy() for g in gs])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_conv2d_input_gradient_is_not_computed_when_not_needed(monkeypatch):
    """The first conv of a network: its input takes no gradient, so no column GEMM and no
    col2im runs for it; the weight and bias gradients still do."""
    calls = _count_calls(monkeypatch, KC, "col2im_cpu")
    calls_valid = _count_calls(monkeypatch, KC, "col2im_valid_cpu")
    x = nbgrad.randn(2, 1, 8, 8)
    w = nbgrad.randn(4, 1, 3, 3, requires_grad=True)
    b = nbgrad.randn(4, requires_grad=True)
    for padding in (0, 1):  # the valid and the general kernels
        F.conv2d(x, w, b, padding=padding).sum().backward()
    assert calls == calls_valid == [] and w.grad is not None and b.grad is not None
    x.requires_grad_(True)
    for padding in (0, 1):
        F.conv2d(x, w, b, padding=padding).sum().backward()
    assert calls == calls_valid == [1] and x.grad is not None


def test_conv2d_saved_input_and_weight_are_version_checked():
    for target in ("x", "w"):
        x = nbgrad.randn(2, 3, 5, 5, requires_grad=True)
        w = nbgrad.randn(4, 3, 3, 3, requires_grad=True)
        xi, wi = x * 1, w * 1
        y = F.conv2d(xi, wi)
        with nbgrad.no_grad():
            (xi if target == "x" else wi).mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


@needs_torch
def test_conv2d_empty_batch_and_weight_checks_match_torch():
    for T in (nbgrad, torch):
        x = T.zeros(0, 2, 5, 5, requires_grad=True)
        w = T.ones(3, 2, 3, 3, requires_grad=True)
        b = T.ones(3, requires_grad=True)
        y = T.nn.functional.conv2d(x, w, b)
        y.sum().backward()
        assert tuple(y.shape) == (0, 3, 3, 3) and tuple(x.grad.shape) == (0, 2, 5, 5)
        np.testing.assert_array_equal(w.grad.numpy(), np.zeros((3, 2, 3, 3), np.float32))
        np.testing.assert_array_equal(b.grad.numpy(), np.zeros(3, np.float32))
    for xs, ws, groups in (((2, 2, 5, 5), (0, 2, 3, 3), 1), ((2, 4, 5, 5), (1, 2, 3, 3), 2)):
        msgs = []
        for T in (nbgrad, torch):
            with pytest.raises(RuntimeError) as e:
                T.nn.functional.conv2d(T.ones(*xs), T.ones(*ws), groups=groups)
            msgs.append(str(e.value))
        assert msgs[0] == msgs[1]


def test_conv_results_do_not_alias_the_scratch_buffers():
    """Results are fresh arrays: a later, larger convolution (reusing and growing the per-thread
    scratch) leaves earlier results and gradients unchanged."""
    rng = _rng(10)
    x = nbgrad.tensor(rng.standard_normal((2, 3, 6, 6)), requires_grad=True)
    w = nbgrad.tensor(rng.standard_normal((4, 3, 3, 3)), requires_grad=True)
    y = F.conv2d(x, w, padding=1)
    y.sum().backward()
    kept = [t.detach().numpy().copy() for t in (y, x.grad, w.grad)]
    x2 = nbgrad.tensor(rng.standard_normal((4, 3, 20, 20)), requires_grad=True)
    w2 = nbgrad.tensor(rng.standard_normal((8, 3, 5, 5)), requires_grad=True)
    F.conv2d(x2, w2, padding=2).sum().backward()
    for t, ref in zip((y, x.grad, w.grad), kept):
        np.testing.assert_array_equal(t.detach().numpy(), ref)
        for buf in conv_ops._SCRATCH.bufs.values():
            assert not np.shares_memory(t.detach().numpy(), buf)


def test_conv_in_two_threads_matches_serial():
    """Scratch buffers are per thread: convolutions of different sizes running in two threads
    at once give the serial results."""
    rng = _rng(11)
    jobs = [
        (rng.standard_normal((4, 3, 16, 16)), rng.standard_normal((8, 3, 3, 3))),
        (rng.standard_normal((2, 5, 9, 11)), rng.standard_normal((6, 5, 2, 4))),
    ]

    def run(xa, wa):
        x = nbgrad.tensor(xa, requires_grad=True)
        w = nbgrad.tensor(wa, requires_grad=True)
        y = F.conv2d(x, w, padding=1)
        y.sum().backward()
        return y.detach().numpy(), x.grad.numpy(), w.grad.numpy()

    serial = [run(*j) for j in jobs]
    results = [[None] * 20 for _ in jobs]

    def worker(k):
        for r in range(20):
            results[k][r] = run(*jobs[k])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, ref in enumerate(serial):
        for got in results[k]:
            for a, b in zip(got, ref):
                np.testing.assert_array_equal(a, b)
