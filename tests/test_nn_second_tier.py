"""Second-tier nn layers (issue 12): group_norm / GroupNorm, instance_norm / InstanceNorm2d,
conv_transpose2d / ConvTranspose2d, adaptive_avg_pool2d / AdaptiveAvgPool2d, interpolate /
Upsample, embedding_bag and dropout2d / Dropout2d.

The op-table rows (nbgrad/testing/op_db_nn.py) already drive values vs numpy, float64 finite
differences, second order, forward mode, batched gradients and PyTorch's values, gradients and
grad_fn names (tests/test_ops.py, tests/test_nn_functional.py); the layer rows in
tests/test_nn_modules.py the modules' structure.  This file adds gradcheck / gradgradcheck,
second derivatives and float32 against PyTorch, PyTorch's index arithmetic of interpolate over
many sizes, errors, running statistics, bag edge cases, dropout masks and PyTorch models loaded
from their state dicts."""

import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.autograd import gradcheck, gradgradcheck

TORCH_F = torch.nn.functional if torch is not None else None


def _rng(seed=0):
    return np.random.default_rng(seed)


def _lib(T):
    return T.nn.functional


def _tensors(T, arrays, dtype, grad):
    out = []
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            t = T.tensor(a, dtype=getattr(T, dtype))
            out.append(t.requires_grad_(grad))
        elif isinstance(a, np.ndarray):
            out.append(T.tensor(a))
        else:
            out.append(a)
    return out


def _np(t):
    return t.detach().numpy()


def _compare(fn, arrays, dtype="float64", second=False, seed=3):
    """Run ``fn(F, *tensors)`` with nbgrad and torch: values, grad_fn name, gradients of a
    random cotangent and (``second``) the gradient of the squared gradient norm."""
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=2e-6)
    res = []
    for T in (nbgrad, torch):
        args = _tensors(T, arrays, dtype, True)
        leaves = [
            a for a in args if isinstance(a, (nbgrad.Tensor, torch.Tensor)) and a.requires_grad
        ]
        y = fn(_lib(T), *args)
        v = T.tensor(_rng(seed).standard_normal(tuple(y.shape)), dtype=y.dtype)
        gs = T.autograd.grad(y, leaves, v, create_graph=second, allow_unused=True)
        hs = None
        live = [g for g in gs if g is not None and g.requires_grad]
        if second and live:  # a linear op's gradient does not depend on its input
            hs = T.autograd.grad(sum((g * g).sum() for g in live), leaves, allow_unused=True)
        res.append((y, gs, hs))
    (y, gs, hs), (ty, tgs, ths) = res
    assert tuple(y.shape) == tuple(ty.shape) and str(y.dtype)[7:] == str(ty.dtype)[6:]
    np.testing.assert_allclose(_np(y), _np(ty), **tol)
    assert y.grad_fn.name() == ty.grad_fn.name()
    for a, b in zip(gs, tgs):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(_np(a), _np(b), **tol)
            assert a.requires_grad == b.requires_grad
    assert (hs is None) == (ths is None)
    if hs is not None:
        for a, b in zip(hs, ths):
            if b is None:
                assert a is None or not np.any(_np(a))
            else:
                np.testing.assert_allclose(_np(a), _np(b), rtol=1e-9, atol=1e-10)
    return y


R = _rng(1)
X4 = R.standard_normal((2, 4, 5, 6))
X3 = R.standard_normal((2, 3, 7))
X5 = R.standard_normal((1, 2, 3, 4, 5))
W4 = R.standard_normal(4)
B4 = R.standard_normal(4)
WT = R.standard_normal((4, 3, 3, 2))
BT = R.standard_normal(6)
EW = R.standard_normal((10, 3))
EI = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 0])
EO = np.array([0, 3, 3, 7])

# name: (fn(F, *args), arrays); every one is compared with PyTorch in float32 and float64
CASES = {
    "group_norm": (lambda F, x, w, b: F.group_norm(x, 2, w, b), [X4, W4, B4]),
    "group_norm_noaffine": (lambda F, x: F.group_norm(x, 2, eps=1e-3), [X3[:, :2].copy()]),
    "group_norm_2d": (lambda F, x: F.group_norm(x, 1), [R.standard_normal((3, 5))]),
    "instance_norm": (lambda F, x, w, b: F.instance_norm(x, weight=w, bias=b), [X4, W4, B4]),
    "instance_norm_1d": (lambda F, x: F.instance_norm(x, eps=1e-3), [X3]),
    "conv_transpose2d": (
        lambda F, x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1, 2, (1, 2)),
        [X4, WT, BT],
    ),
    "conv_transpose2d_plain": (
        lambda F, x, w: F.conv_transpose2d(x, w),
        [X4, R.standard_normal((4, 2, 3, 3))],
    ),
    "conv_transpose2d_unbatched": (
        lambda F, x, w: F.conv_transpose2d(x, w, stride=(3, 1), padding=(1, 0)),
        [X4[0], R.standard_normal((4, 1, 3, 2))],
    ),
    "adaptive_avg_pool2d": (lambda F, x: F.adaptive_avg_pool2d(x, (3, 4)), [X4]),
    "adaptive_avg_pool2d_up": (lambda F, x: F.adaptive_avg_pool2d(x, (7, None)), [X4]),
    "adaptive_avg_pool2d_1x1": (lambda F, x: F.adaptive_avg_pool2d(x, 1), [X4]),
    "nearest_2d": (lambda F, x: F.interpolate(x, scale_factor=(1.7, 0.6)), [X4]),
    "nearest_2d_size": (lambda F, x: F.interpolate(x, size=(11, 4)), [X4]),
    "nearest_exact_2d": (
        lambda F, x: F.interpolate(x, size=(9, 13), mode="nearest-exact"),
        [X4],
    ),
    "nearest_1d": (lambda F, x: F.interpolate(x, scale_factor=2.5), [X3]),
    "nearest_exact_1d": (lambda F, x: F.interpolate(x, size=5, mode="nearest-exact"), [X3]),
    "nearest_3d": (lambda F, x: F.interpolate(x, size=(4, 6, 7)), [X5]),
    "nearest_exact_3d": (
        lambda F, x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
        [X5],
    ),
    "bilinear": (lambda F, x: F.interpolate(x, size=(9, 4), mode="bilinear"), [X4]),
    "bilinear_scale": (
        lambda F, x: F.interpolate(x, scale_factor=(2.3, 0.7), mode="bilinear"),
        [X4],
    ),
    "bilinear_align": (
        lambda F, x: F.interpolate(x, scale_factor=3, mode="bilinear", align_corners=True),
        [X4],
    ),
    "bilinear_recompute": (
        lambda F, x: F.interpolate(
            x, scale_factor=1.3, mode="bilinear", recompute_scale_factor=True
        ),
        [X4],
    ),
    "linear": (lambda F, x: F.interpolate(x, scale_factor=1.6, mode="linear"), [X3]),
    "linear_align": (
        lambda F, x: F.interpolate(x, size=4, mode="linear", align_corners=True),
        [X3],
    ),
    "area_2d": (lambda F, x: F.interpolate(x, size=(3, 4), mode="area"), [X4]),
    "area_1d": (lambda F, x: F.interpolate(x, scale_factor=0.5, mode="area"), [X3]),
    "embedding_bag_mean": (lambda F, i, w, o: F.embedding_bag(i, w, o), [EI, EW, EO]),
    "embedding_bag_sum_pad": (
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode="sum", padding_idx=4),
        [EI, EW, EO],
    ),
    "embedding_bag_max": (
        lambda F, i, w: F.embedding_bag(i, w, mode="max"),
        [EI.reshape(2, 5), EW],
    ),
    "embedding_bag_psw": (
        lambda F, i, w, o, p: F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p),
        [EI, EW, EO, R.standard_normal(10)],
    ),
    "embedding_bag_last_offset": (
        lambda F, i, w, o: F.embedding_bag(i, w, o, include_last_offset=True, padding_idx=-1),
        [EI, EW, np.array([0, 4, 4, 10])],
    ),
    "embedding_bag_freq": (
        lambda F, i, w, o: F.embedding_bag(i, w, o, scale_grad_by_freq=True, padding_idx=2),
        [EI, EW, EO],
    ),
    "embedding_bag_freq_sum": (
        lambda F, i, w, o: F.embedding_bag(i, w, o, mode="sum", scale_grad_by_freq=True),
        [np.array([3, 3, 1, 7, 3, 1, 0, 7]), EW, np.array([0, 2, 2, 6])],
    ),
}


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_match_torch(name, dtype):
    fn, arrays = CASES[name]
    _compare(fn, arrays, dtype)


# PyTorch has no second derivative of embedding_bag (its double backward raises); nbgrad's
# create_graph backward is built from nbgrad ops (tests below)
SECOND = [n for n in CASES if not n.startswith("embedding_bag")]


@needs_torch
@pytest.mark.parametrize("name", SECOND)
def test_second_order_matches_torch(name):
    fn, arrays = CASES[name]
    _compare(fn, arrays, "float64", second=True)


def _leaves(arrays):
    small = []
    for a in arrays:
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            small.append(nbgrad.tensor(a, dtype=nbgrad.float64, requires_grad=True))
        elif isinstance(a, np.ndarray):
            small.append(nbgrad.tensor(a))
        else:
            small.append(a)
    return small


def _gradcheck_args(name):
    fn, arrays = CASES[name]
    args = _leaves(arrays)
    diff = [i for i, a in enumerate(args) if isinstance(a, nbgrad.Tensor) and a.requires_grad]

    def f(*leaves):
        full = list(args)
        for i, t in zip(diff, leaves):
            full[i] = t
        return fn(F, *full)

    return f, tuple(args[i] for i in diff)


# sizes where PyTorch's nearest forward and backward use the same index map (NOTE [upsample
# index maps]): every case above; finite differences check the gradient is the derivative
# scale_grad_by_freq is not the derivative by design
@pytest.mark.parametrize("name", [n for n in CASES if "freq" not in n])
def test_gradcheck(name):
    f, leaves = _gradcheck_args(name)
    assert gradcheck(f, leaves, eps=1e-6, atol=1e-5)


@pytest.mark.parametrize(
    "name",
    [
        "group_norm",
        "instance_norm",
        "conv_transpose2d",
        "adaptive_avg_pool2d",
        "nearest_2d",
        "bilinear",
        "linear",
        "embedding_bag_mean",
        "embedding_bag_psw",
        "embedding_bag_max",
    ],
)
def test_gradgradcheck(name):
    f, leaves = _gradcheck_args(name)
    assert gradgradcheck(f, leaves, eps=1e-6, atol=1e-5)


# -- interpolate: PyTorch's index arithmetic over many sizes --------------------------------------

SIZES_IN = [1, 2, 3, 4, 5, 7, 13, 32, 39]
SIZES_OUT = [1, 2, 3, 5, 6, 8, 11, 33, 41, 55, 82]


def _layout(n_in, nd):
    """An input (2, 2, ...) whose last spatial axis is arange(n_in), the others of size 1/2."""
    shape = (2, 2) + (2,) * (nd - 1) + (n_in,)
    return np.broadcast_to(np.arange(n_in, dtype=np.float64), shape).copy()


def _sizes(n_out, nd):
    return (3,) * (nd - 1) + (n_out,)


def _scales(n_in, n_out, nd, f):
    """Scale factors: 1.5 for the leading spatial axes, about n_out / n_in for the last."""
    return (1.5,) * (nd - 1) + (n_out / n_in * f,)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mode", ["nearest", "nearest-exact"])
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_nearest_index_maps_match_torch(nd, mode, dtype):
    """Exact equality of values and gradients (PyTorch's float index arithmetic, including the
    sizes where its forward reads another source than its backward writes to)."""
    for n_in in SIZES_IN:
        a = _layout(n_in, nd)
        for n_out in SIZES_OUT:
            for kw in (
                {"size": _sizes(n_out, nd)},
                {"scale_factor": _scales(n_in, n_out, nd, 1.01)},
            ):
                outs = []
                for T in (nbgrad, torch):
                    x = T.tensor(a, dtype=getattr(T, dtype), requires_grad=True)
                    y = _lib(T).interpolate(x, mode=mode, **kw)
                    g = T.arange(y.numel(), dtype=x.dtype).reshape(tuple(y.shape))
                    (gx,) = T.autograd.grad(y, x, g)
                    outs.append((_np(y), _np(gx)))
                (y, gx), (ty, tgx) = outs
                assert y.shape == ty.shape, (n_in, kw)
                np.testing.assert_array_equal(y, ty, err_msg=str((n_in, kw)))
                np.testing.assert_array_equal(gx, tgx, err_msg=str((n_in, kw)))


def test_nearest_forward_and_backward_maps_differ_like_torch():
    """39 -> 33 in float64: PyTorch's 1-D forward reads input 13 at output 11 (double
    arithmetic), its backward sends output 11's gradient to input 12 (float arithmetic)."""
    x = nbgrad.arange(39, dtype=nbgrad.float64).reshape(1, 1, 39).requires_grad_()
    y = F.interpolate(x, size=33)
    assert y[0, 0, 11].item() == 13.0
    g = nbgrad.zeros(1, 1, 33, dtype=nbgrad.float64)
    g[0, 0, 11] = 1.0
    (gx,) = nbgrad.autograd.grad(y, x, g)
    assert gx[0, 0, 12].item() == 1.0 and gx[0, 0, 13].item() == 0.0


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("nd", [1, 2])
def test_linear_weights_match_torch(nd, align_corners, dtype):
    mode = "linear" if nd == 1 else "bilinear"
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=1e-6, atol=1e-5)
    rng = _rng(5)
    for n_in in SIZES_IN:
        a = rng.standard_normal((1, 2) + (3,) * (nd - 1) + (n_in,))
        for n_out in SIZES_OUT:
            kws = [{"size": _sizes(n_out, nd)}]
            if not align_corners and int(n_out * 0.97) >= 1:
                kws.append({"scale_factor": _scales(n_in, n_out, nd, 0.97)})
            for kw in kws:
                x = nbgrad.tensor(a, dtype=getattr(nbgrad, dtype), requires_grad=True)
                tx = torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True)
                y = F.interpolate(x, mode=mode, align_corners=align_corners, **kw)
                ty = TORCH_F.interpolate(tx, mode=mode, align_corners=align_corners, **kw)
                g = rng.standard_normal(tuple(ty.shape))
                (gx,) = nbgrad.autograd.grad(y, x, nbgrad.tensor(g, dtype=x.dtype))
                (tgx,) = torch.autograd.grad(ty, tx, torch.tensor(g, dtype=tx.dtype))
                np.testing.assert_allclose(_np(y), _np(ty), **tol, err_msg=str((n_in, kw)))
                np.testing.assert_allclose(_np(gx), _np(tgx), **tol, err_msg=str((n_in, kw)))


@needs_torch
def test_interpolate_special_values_match_torch():
    """NaN and Inf through nearest and bilinear: the weights are applied even where they are 0,
    as in PyTorch, so an Inf neighbour gives NaN at the same places."""
    a = np.array([[[[1.0, np.inf, 2.0], [np.nan, 3.0, -np.inf]]]])
    for kw in (
        {"scale_factor": 2},
        {"size": (3, 5), "mode": "bilinear"},
        {"size": (4, 4), "mode": "bilinear", "align_corners": True},
        {"size": (2, 7), "mode": "nearest-exact"},
    ):
        y = F.interpolate(nbgrad.tensor(a), **kw)
        ty = TORCH_F.interpolate(torch.tensor(a), **kw)
        np.testing.assert_array_equal(_np(y), _np(ty))


@needs_torch
def test_interpolate_float16_and_uint8():
    a = _rng(2).standard_normal((1, 2, 3, 4))
    for kw in ({"scale_factor": 2}, {"size": (5, 7), "mode": "bilinear"}):
        y = F.interpolate(nbgrad.tensor(a, dtype=nbgrad.float16), **kw)
        ty = TORCH_F.interpolate(torch.tensor(a, dtype=torch.float16), **kw)
        assert y.dtype is nbgrad.float16
        np.testing.assert_allclose(_np(y).astype(np.float64), _np(ty).astype(np.float64), atol=2e-3)
    u = (np.arange(12) * 20).reshape(1, 1, 3, 4).astype(np.uint8)
    y = F.interpolate(nbgrad.tensor(u), size=(5, 6))
    ty = TORCH_F.interpolate(torch.tensor(u), size=(5, 6))
    assert y.dtype is nbgrad.uint8
    np.testing.assert_array_equal(_np(y), _np(ty))


# -- errors: PyTorch's exception types and messages ------------------------------------------------

X = "T.randn(2, 4, 5, 5)"
ERRORS = {
    # group_norm
    "gn_groups": "F.group_norm(%s, 3)" % X,
    "gn_zero_groups": "F.group_norm(%s, 0)" % X,
    "gn_negative_groups": "F.group_norm(%s, -2)" % X,
    "gn_1d": "F.group_norm(T.randn(4), 2)",
    "gn_weight": "F.group_norm(%s, 2, T.ones(3))" % X,
    "gn_weight_2d": "F.group_norm(%s, 2, T.ones(2, 2))" % X,
    "gn_bias": "F.group_norm(%s, 2, T.ones(4), T.ones(3))" % X,
    "gn_weight_dtype": "F.group_norm(%s, 2, T.ones(4, dtype=T.float64))" % X,
    "gn_one_value": "F.group_norm(T.randn(1, 4), 4)",
    "gn_int": "F.group_norm(T.ones(2, 4, dtype=T.int64), 2)",
    # instance_norm
    "in_spatial": "F.instance_norm(T.randn(2, 3, 1))",
    "in_2d": "F.instance_norm(T.randn(2, 3))",
    "in_running": "F.instance_norm(%s, T.zeros(3), T.ones(4))" % X,
    "in_no_stats": "F.instance_norm(%s, use_input_stats=False)" % X,
    "in_weight": "F.instance_norm(%s, weight=T.ones(3))" % X,
    "in_module_dim": "T.nn.InstanceNorm2d(4)(T.randn(2, 4))",
    "in_module_features": "T.nn.InstanceNorm2d(3, affine=True)(%s)" % X,
    # conv_transpose2d
    "ct_output_padding": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), output_padding=1)" % X,
    "ct_output_padding_2": (
        "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), stride=2, output_padding=2)" % X
    ),
    "ct_channels": "F.conv_transpose2d(%s, T.randn(3, 3, 3, 3))" % X,
    "ct_bias": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), T.randn(4))" % X,
    "ct_groups": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), groups=3)" % X,
    "ct_groups_zero": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), groups=0)" % X,
    "ct_negative_padding": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), padding=-1)" % X,
    "ct_negative_output_padding": (
        "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), output_padding=-1)" % X
    ),
    "ct_stride": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), stride=0)" % X,
    "ct_stride_3": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), stride=(1, 1, 1))" % X,
    "ct_input_2d": "F.conv_transpose2d(T.randn(4, 5), T.randn(4, 3, 3, 3))",
    "ct_weight_3d": "F.conv_transpose2d(%s, T.randn(4, 3, 3))" % X,
    "ct_padding_str": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), padding='same')" % X,
    "ct_weight_dtype": "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3, dtype=T.float64))" % X,
    "ct_weight_dtype_64": (
        "F.conv_transpose2d(T.randn(2, 4, 5, 5, dtype=T.float64), T.randn(4, 3, 3, 3))"
    ),
    "ct_bias_dtype": (
        "F.conv_transpose2d(%s, T.randn(4, 3, 3, 3), T.randn(3, dtype=T.float64))" % X
    ),
    "ct_module_padding_mode": "T.nn.ConvTranspose2d(2, 3, 3, padding_mode='reflect')",
    "ct_module_output_size": "T.nn.ConvTranspose2d(4, 3, 3, stride=2)(%s, output_size=(20, 20))"
    % X,
    "ct_module_output_size_len": "T.nn.ConvTranspose2d(4, 3, 3)(%s, output_size=[7])" % X,
    # adaptive_avg_pool2d
    "aap_size_3": "F.adaptive_avg_pool2d(%s, (1, 2, 3))" % X,
    "aap_size_list_1": "F.adaptive_avg_pool2d(%s, [2])" % X,
    "aap_2d": "F.adaptive_avg_pool2d(T.randn(4, 5), (2, 2))",
    "aap_5d": "F.adaptive_avg_pool2d(T.randn(1, 1, 4, 5, 5), (2, 2))",
    "aap_negative": "F.adaptive_avg_pool2d(%s, (-1, 2))" % X,
    "aap_empty": "F.adaptive_avg_pool2d(T.randn(2, 3, 0, 5), (2, 2))",
    "aap_int": "F.adaptive_avg_pool2d(T.ones(2, 4, 5, 5, dtype=T.int64), (2, 2))",
    "aap_float_size": "F.adaptive_avg_pool2d(%s, 2.0)" % X,
    # interpolate
    "i_both": "F.interpolate(%s, size=3, scale_factor=2)" % X,
    "i_none": "F.interpolate(%s)" % X,
    "i_align_nearest": "F.interpolate(%s, size=3, align_corners=True)" % X,
    "i_size_len": "F.interpolate(%s, size=(3,))" % X,
    "i_size_float": "F.interpolate(%s, size=(3.0, 2))" % X,
    "i_scale_len": "F.interpolate(%s, scale_factor=(2,))" % X,
    "i_mode": "F.interpolate(%s, scale_factor=2, mode='foo')" % X,
    "i_bilinear_3d": "F.interpolate(T.randn(1, 2, 3), scale_factor=2, mode='bilinear')",
    "i_linear_4d": "F.interpolate(%s, scale_factor=2, mode='linear')" % X,
    "i_2d": "F.interpolate(T.randn(3, 4), scale_factor=2)",
    "i_6d": "F.interpolate(T.randn(1, 1, 1, 1, 1, 1), scale_factor=2)",
    "i_zero_size": "F.interpolate(%s, size=0)" % X,
    "i_small_scale": "F.interpolate(%s, scale_factor=0.1)" % X,
    "i_small_scale_1d": "F.interpolate(T.randn(1, 2, 5), scale_factor=0.1, mode='linear')",
    "i_small_scale_3d": "F.interpolate(T.randn(1, 2, 5, 5, 5), scale_factor=0.1)",
    "i_recompute_size": "F.interpolate(%s, size=3, recompute_scale_factor=True)" % X,
    "i_antialias": "F.interpolate(%s, size=3, antialias=True)" % X,
    "i_empty_channels": "F.interpolate(T.randn(1, 0, 3, 3), size=4)",
    "i_empty_spatial": "F.interpolate(T.randn(1, 2, 0, 3), size=4)",
    "i_long": "F.interpolate(T.ones(2, 4, 5, 5, dtype=T.int64), size=3)",
    "i_long_bilinear": "F.interpolate(T.ones(2, 4, 5, 5, dtype=T.int64), size=3, mode='bilinear')",
    "i_lanczos_align": (
        "F.interpolate(%s, size=3, mode='lanczos', align_corners=True, antialias=True)" % X
    ),
    "i_lanczos": "F.interpolate(%s, size=3, mode='lanczos')" % X,
    # embedding_bag
    "eb_no_offsets": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2))",
    "eb_offsets_2d": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([[0, 1]]))",
    "eb_2d_offsets": "F.embedding_bag(T.tensor([[0, 1]]), T.ones(6, 2), T.tensor([0]))",
    "eb_3d": "F.embedding_bag(T.zeros(1, 2, 3, dtype=T.int64), T.ones(6, 2))",
    "eb_float_indices": "F.embedding_bag(T.tensor([0.0, 1.0]), T.ones(6, 2), T.tensor([0]))",
    "eb_float_offsets": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0.0]))",
    "eb_int_weight": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2, dtype=T.int32), T.tensor([0]))"
    ),
    "eb_weight_1d": "F.embedding_bag(T.tensor([0, 1]), T.ones(6), T.tensor([0]))",
    "eb_psw_mean": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), "
        "per_sample_weights=T.ones(2))"
    ),
    "eb_psw_max": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='max', "
        "per_sample_weights=T.ones(2))"
    ),
    "eb_psw_shape": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='sum', "
        "per_sample_weights=T.ones(3))"
    ),
    "eb_psw_dtype": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='sum', "
        "per_sample_weights=T.ones(2, dtype=T.float64))"
    ),
    "eb_mode": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='min')",
    "eb_max_freq": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='max', "
        "scale_grad_by_freq=True)"
    ),
    "eb_max_sparse": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), mode='max', sparse=True)"
    ),
    "eb_padding_idx": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), padding_idx=6)"
    ),
    "eb_padding_idx_neg": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([0]), padding_idx=-7)"
    ),
    "eb_last_offset_empty": (
        "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([], dtype=T.int64), "
        "include_last_offset=True)"
    ),
    "eb_offsets_list": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), [0])",
    "eb_zero_width": "F.embedding_bag(T.zeros(2, 0, dtype=T.int64), T.ones(6, 2))",
    "eb_offset_start": "F.embedding_bag(T.tensor([0, 1]), T.ones(6, 2), T.tensor([1]))",
    "gn_bias_no_weight": "F.group_norm(%s, 2, None, T.ones(3))" % X,
    # dropout2d
    "d2_p": "F.dropout2d(%s, 1.5)" % X,
    "d2_p_negative": "F.dropout2d(%s, -0.1)" % X,
    "d2_1d": "F.dropout2d(T.randn(5), 0.5)",
    "d2_module_p": "T.nn.Dropout2d(2.0)",
    "gn_module_groups": "T.nn.GroupNorm(3, 4)",
}

# type and message match PyTorch's, except (type only) where PyTorch's message names its
# internal kernel
TYPE_ONLY = {"gn_int", "aap_int", "i_long", "i_long_bilinear"}
TYPE_ONLY.add("eb_2d_offsets")  # the message names the offsets' class: nbgrad's Tensor


def _run(T, code):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            exec(code, {"T": T, "F": T.nn.functional})
        except Exception as e:  # noqa: BLE001 - the type is what the test compares
            return type(e).__name__, str(e)
    return None, None


@needs_torch
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    got = _run(nbgrad, ERRORS[name])
    want = _run(torch, ERRORS[name])
    assert want[0] is not None, "PyTorch does not raise here"
    assert got[0] == want[0], (got, want)
    if name not in TYPE_ONLY:
        assert got[1] == want[1]


def test_unsupported_interpolate_modes_raise_clearly():
    x4 = nbgrad.randn(1, 2, 3, 3)
    for mode, x in (("bicubic", x4), ("trilinear", nbgrad.randn(1, 1, 2, 2, 2))):
        with pytest.raises(NotImplementedError, match="nbgrad: F.interpolate"):
            F.interpolate(x, scale_factor=2, mode=mode)
    with pytest.raises(NotImplementedError, match="antialias=True"):
        F.interpolate(x4, size=5, mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match="'area'"):
        F.interpolate(nbgrad.randn(1, 1, 2, 2, 2), size=3, mode="area")


# -- group norm / instance norm specifics ----------------------------------------------------------


@needs_torch
def test_group_norm_nan_stays_in_its_group_and_empty_batch():
    a = _rng(3).standard_normal((2, 4, 3))
    a[0, 1, 2] = np.nan
    y = F.group_norm(nbgrad.tensor(a), 2)
    ty = TORCH_F.group_norm(torch.tensor(a), 2)
    np.testing.assert_array_equal(np.isnan(_np(y)), np.isnan(_np(ty)))
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-12)
    e = F.group_norm(nbgrad.randn(0, 4, 3, requires_grad=True), 2)
    assert tuple(e.shape) == (0, 4, 3) and e.grad_fn.name() == "NativeGroupNormBackward0"


@needs_torch
def test_group_norm_second_derivative_links_like_torch():
    """Under create_graph the bias gradient of group_norm does not depend on the input: it is
    outside the graph when the incoming gradient is, as in PyTorch's composite backward."""
    a = _rng(4).standard_normal((2, 4, 3))
    res = []
    for T in (nbgrad, torch):
        x = T.tensor(a, requires_grad=True)
        w = T.ones(4, dtype=x.dtype, requires_grad=True)
        b = T.zeros(4, dtype=x.dtype, requires_grad=True)
        gs = T.autograd.grad(_lib(T).group_norm(x, 2, w, b).sum(), (x, w, b), create_graph=True)
        res.append([g.requires_grad for g in gs])
    assert res[0] == res[1]


@needs_torch
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_under_create_graph_are_in_the_graph_like_torch(training):
    """Regression (found through instance_norm): PyTorch's native_batch_norm_backward is one
    differentiable function of the input, so under create_graph every gradient it returns
    requires grad, the bias gradient too (NOTE [backward nodes])."""
    a = _rng(17).standard_normal((3, 2, 4))
    res = []
    for T in (nbgrad, torch):
        x = T.tensor(a, requires_grad=True)
        w = T.ones(2, dtype=x.dtype, requires_grad=True)
        b = T.zeros(2, dtype=x.dtype, requires_grad=True)
        rm, rv = T.zeros(2, dtype=x.dtype), T.ones(2, dtype=x.dtype)
        y = _lib(T).batch_norm(x, rm, rv, w, b, training=training)
        v = T.tensor(_rng(18).standard_normal(a.shape), dtype=x.dtype)  # outside the graph
        gs = T.autograd.grad(y, (x, w, b), v, create_graph=True)
        res.append([(g.requires_grad, _np(g)) for g in gs])
    for (ra, ga), (rb, gb) in zip(*res):
        assert ra == rb
        np.testing.assert_allclose(ga, gb, rtol=1e-10, atol=1e-12)


@needs_torch
@pytest.mark.parametrize("momentum", [0.1, 0.0, 1.0])
def test_instance_norm_running_statistics_match_torch(momentum):
    a = _rng(5).standard_normal((3, 2, 4, 5)) * 2 + 1
    res = []
    for T in (nbgrad, torch):
        rm, rv = T.zeros(2, dtype=T.float64), T.ones(2, dtype=T.float64)
        x = T.tensor(a, requires_grad=True)
        y = _lib(T).instance_norm(x, rm, rv, momentum=momentum)
        v0 = rm._version
        y2 = _lib(T).instance_norm(x, rm, rv, use_input_stats=False)
        res.append((_np(y), _np(rm), _np(rv), _np(y2), v0, rm._version))
    for a_, b_ in zip(res[0][:4], res[1][:4]):
        np.testing.assert_allclose(a_, b_, rtol=1e-12, atol=1e-14)
    assert res[0][4:] == res[1][4:]


@needs_torch
def test_instance_norm2d_module_train_eval_unbatched_match_torch():
    torch.manual_seed(0)
    tm = torch.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    with torch.no_grad():
        tm.weight.uniform_(0.5, 1.5)
        tm.bias.uniform_(-1, 1)
    nm = nbgrad.nn.InstanceNorm2d(3, affine=True, track_running_stats=True, momentum=0.3)
    nm.load_state_dict({k: nbgrad.tensor(_np(v)) for k, v in tm.state_dict().items()})
    rng = _rng(6)
    for shape in ((2, 3, 4, 5), (3, 4, 5)):  # batched, then unbatched
        a = rng.standard_normal(shape).astype(np.float32)
        for train in (True, False):
            nm.train(train)
            tm.train(train)
            y, ty = nm(nbgrad.tensor(a)), tm(torch.tensor(a))
            np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-5, atol=1e-5)
            for k, v in tm.state_dict().items():
                np.testing.assert_allclose(_np(nm.state_dict()[k]), _np(v), rtol=1e-6, atol=1e-7)
    with pytest.warns(UserWarning, match="does not match num_features"):
        nbgrad.nn.InstanceNorm2d(5)(nbgrad.randn(2, 3, 4, 4))


# -- conv_transpose2d specifics --------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("output_size", [None, (9, 10), [2, 3, 10, 9]])
def test_conv_transpose2d_module_output_size_matches_torch(output_size):
    torch.manual_seed(1)
    tm = torch.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1)
    nm = nbgrad.nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1)
    nm.load_state_dict({k: nbgrad.tensor(_np(v)) for k, v in tm.state_dict().items()})
    a = _rng(7).standard_normal((2, 4, 5, 5)).astype(np.float32)
    x, tx = nbgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = nm(x, output_size), tm(tx, output_size)
    assert tuple(y.shape) == tuple(ty.shape)
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-5, atol=1e-5)
    y.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(_np(nm.weight.grad), _np(tm.weight.grad), rtol=1e-5, atol=1e-4)


def test_conv_transpose2d_is_the_adjoint_of_conv2d():
    """<conv_transpose2d(y, w), x> == <y, conv2d(x, w)> for the same geometry."""
    rng = _rng(8)
    x = nbgrad.tensor(rng.standard_normal((2, 4, 9, 8)))
    w = nbgrad.tensor(rng.standard_normal((6, 2, 3, 2)))
    kw = dict(stride=(2, 3), padding=(1, 0), dilation=(1, 2), groups=2)
    y = F.conv2d(x, w, **kw)
    z = nbgrad.tensor(rng.standard_normal(tuple(y.shape)))
    op = tuple(
        n - ((o - 1) * s - 2 * p + d * (k - 1) + 1)
        for n, o, s, p, d, k in zip((9, 8), y.shape[2:], (2, 3), (1, 0), (1, 2), (3, 2))
    )
    xt = F.conv_transpose2d(z, w, output_padding=op, **kw)
    assert tuple(xt.shape) == tuple(x.shape)
    np.testing.assert_allclose((xt * x).sum().item(), (z * y).sum().item(), rtol=1e-12)


# -- adaptive pooling ------------------------------------------------------------------------------


@needs_torch
def test_adaptive_avg_pool2d_edge_sizes_match_torch():
    rng = _rng(9)
    for shape, size in (
        ((2, 0, 5, 5), (2, 2)),
        ((0, 3, 4, 5), (2, 3)),
        ((1, 2, 4, 5), (0, 3)),
        ((3, 5, 5), (2, 2)),
        ((1, 1, 3, 7), (5, 2)),
    ):
        a = rng.standard_normal(shape)
        y = F.adaptive_avg_pool2d(nbgrad.tensor(a), size)
        ty = TORCH_F.adaptive_avg_pool2d(torch.tensor(a), size)
        assert tuple(y.shape) == tuple(ty.shape)
        np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-12)


@needs_torch
def test_adaptive_avg_pool2d_double_backward_node_like_torch():
    a = _rng(10).standard_normal((1, 2, 5, 4))
    res = []
    for T in (nbgrad, torch):
        x = T.tensor(a, requires_grad=True)
        (g,) = T.autograd.grad(_lib(T).adaptive_avg_pool2d(x, (2, 3)).sum(), x, create_graph=True)
        res.append((g.requires_grad, g.grad_fn.name()))
    assert res[0] == res[1] == (True, "AdaptiveAvgPool2DBackwardBackward0")


# -- embedding_bag specifics -----------------------------------------------------------------------


@needs_torch
def test_embedding_bag_edge_cases_match_torch():
    w = _rng(11).standard_normal((6, 2))
    cases = [
        (np.array([0, 1, 2, 3, 4, 5]), np.array([0, 0, 6, 6]), {"mode": "max"}),
        (np.array([0, 1, 2, 3, 4, 5]), np.array([0, 0, 6, 6]), {"mode": "mean"}),
        (np.array([], dtype=np.int64), np.array([0, 0]), {"mode": "sum"}),
        (np.array([1, 1, 2, 3]), np.array([0, 2]), {"mode": "max", "padding_idx": 1}),
        (np.array([1, 1, 1]), np.array([0, 1]), {"mode": "mean", "padding_idx": 1}),
        (np.zeros((0, 3), np.int64), None, {}),
        (np.array([[5, 0, 5]], dtype=np.int32), None, {"mode": "sum"}),
    ]
    # include_last_offset with a single offset: no bag (PyTorch's float64 kernel crashes here)
    y = F.embedding_bag(
        nbgrad.tensor([0, 1, 2]), nbgrad.tensor(w), nbgrad.tensor([0]), include_last_offset=True
    )
    assert tuple(y.shape) == (0, 2)
    for idx, off, kw in cases:
        outs = []
        for T in (nbgrad, torch):
            wt = T.tensor(w, requires_grad=True)
            y = _lib(T).embedding_bag(
                T.tensor(idx), wt, None if off is None else T.tensor(off), **kw
            )
            if y.numel():
                y.sum().backward()
            outs.append((_np(y), None if wt.grad is None else _np(wt.grad)))
        (y, g), (ty, tg) = outs
        assert y.shape == ty.shape, (idx, off, kw)
        np.testing.assert_allclose(y, ty, rtol=1e-12, err_msg=str(kw))
        if tg is not None:
            np.testing.assert_allclose(g, tg, rtol=1e-12, err_msg=str(kw))


@needs_torch
def test_embedding_bag_max_nan_and_max_norm_match_torch():
    w = np.array([[np.nan, 1.0], [2.0, 3.0], [0.0, 5.0]])
    idx, off = [1, 0, 2, 2, 0], [0, 2]
    for first in (False, True):
        order = [0, 1, 2, 2, 0] if first else idx
        y = F.embedding_bag(nbgrad.tensor(order), nbgrad.tensor(w), nbgrad.tensor(off), mode="max")
        ty = TORCH_F.embedding_bag(
            torch.tensor(order), torch.tensor(w), torch.tensor(off), mode="max"
        )
        np.testing.assert_array_equal(_np(y), _np(ty))
    a = _rng(12).standard_normal((6, 3)) * 3
    nw, tw = nbgrad.tensor(a), torch.tensor(a)
    y = F.embedding_bag(nbgrad.tensor([0, 2, 5, 2]), nw, nbgrad.tensor([0, 3]), max_norm=1.0)
    ty = TORCH_F.embedding_bag(torch.tensor([0, 2, 5, 2]), tw, torch.tensor([0, 3]), max_norm=1.0)
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-6)
    np.testing.assert_allclose(_np(nw), _np(tw), rtol=1e-6)


@needs_torch
def test_embedding_bag_backward_reads_current_values_like_torch():
    """After the forward, PyTorch's backward uses the indices' and per-sample weights' current
    values (changed through .data: no version bump) and the bags of the forward."""

    def run(T, change):
        w = T.tensor(_rng(13).standard_normal((5, 2)), requires_grad=True)
        i, o = T.tensor([0, 1, 2, 3]), T.tensor([0, 2])
        p = T.ones(4, dtype=w.dtype, requires_grad=True)
        y = _lib(T).embedding_bag(i, w, o, mode="sum", per_sample_weights=p)
        change(i, o, p)
        y.sum().backward()
        return _np(w.grad), _np(p.grad)

    changes = [
        lambda i, o, p: i.data.__setitem__(0, 4),
        lambda i, o, p: p.data.mul_(2),
        lambda i, o, p: o.data.__setitem__(1, 3),
    ]
    for change in changes:
        for a, b in zip(run(nbgrad, change), run(torch, change)):
            np.testing.assert_allclose(a, b, rtol=1e-12)


@needs_torch
def test_embedding_bag_inplace_changes_are_version_errors():
    for T in (nbgrad, torch):
        w = T.ones(5, 2, requires_grad=True)
        p = T.ones(3)
        y = _lib(T).embedding_bag(
            T.tensor([0, 1, 2]), w, T.tensor([0]), mode="sum", per_sample_weights=p
        )
        p.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_embedding_bag_second_order_through_nbgrad_ops():
    """PyTorch raises on embedding_bag's double backward; nbgrad's create_graph backward is
    built from differentiable ops: d/dp of <dL/dw, v> for per-sample weights p."""
    w = nbgrad.tensor(_rng(14).standard_normal((5, 2)), requires_grad=True)
    p = nbgrad.tensor(_rng(15).standard_normal(4), requires_grad=True)
    i, o = nbgrad.tensor([0, 3, 3, 1]), nbgrad.tensor([0, 3])
    y = F.embedding_bag(i, w, o, mode="sum", per_sample_weights=p)
    (gw,) = nbgrad.autograd.grad((y * y).sum(), w, create_graph=True)
    (gp,) = nbgrad.autograd.grad(gw.sum(), p)
    # S = sum(gw) = sum_k 2 p_k s_b(k), s_b = sum_d y[b, d] = sum_{j in b} p_j t_j with
    # t_j = sum_d w[i_j, d]:  dS/dp_m = 2 s_b(m) + 2 t_m sum_{k in b(m)} p_k
    yv, pv, wv = _np(y), _np(p), _np(w)
    bag, rows = [0, 0, 0, 1], [0, 3, 3, 1]
    t = [wv[r].sum() for r in rows]
    want = [
        2 * yv[bag[m]].sum() + 2 * t[m] * sum(pv[k] for k in range(4) if bag[k] == bag[m])
        for m in range(4)
    ]
    np.testing.assert_allclose(_np(gp), want, rtol=1e-12)


# -- dropout2d -------------------------------------------------------------------------------------


def test_dropout2d_zeroes_whole_channels():
    nbgrad.manual_seed(0)
    x = nbgrad.ones(8, 16, 3, 4, requires_grad=True)
    y = F.dropout2d(x, 0.25)
    a = _np(y).reshape(8, 16, -1)
    assert y.grad_fn.name() == "MulBackward0"
    per_channel = a[..., :1]
    assert np.all((a == 0) | (a == per_channel))
    assert set(np.unique(a)) <= {0.0, np.float32(1 / 0.75)}
    kept = (per_channel != 0).mean()
    assert 0.6 < kept < 0.9
    y.backward(nbgrad.ones_like(y))
    np.testing.assert_array_equal(_np(x.grad), _np(y))
    # 3-D input: channel-wise 1-D dropout over (N, C, L), with PyTorch's warning
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        y3 = F.dropout2d(nbgrad.ones(4, 8, 5), 0.5)
    b = _np(y3)
    assert np.all((b == 0) | (b == b[..., :1]))
    with pytest.warns(UserWarning, match="Received a 2-D input to dropout2d"):
        F.dropout2d(nbgrad.ones(4, 8), 0.5)


def test_dropout2d_eval_p0_p1_inplace_and_module():
    x = nbgrad.randn(2, 3, 4, 4)
    assert F.dropout2d(x, 0.5, training=False) is x
    assert F.dropout2d(x, 0.0) is x
    z = F.dropout2d(x, 1.0)
    assert not np.any(_np(z)) and z is not x
    v = x._version
    y = F.dropout2d(x, 0.5, inplace=True)
    assert y is x and x._version == v + 1
    m = nbgrad.nn.Dropout2d(0.4)
    assert repr(m) == "Dropout2d(p=0.4, inplace=False)"
    m.eval()
    assert m(x) is x
    nbgrad.manual_seed(3)
    a = F.dropout2d(nbgrad.ones(2, 5, 2, 2), 0.5)
    nbgrad.manual_seed(3)
    b = F.dropout2d(nbgrad.ones(2, 5, 2, 2), 0.5)
    np.testing.assert_array_equal(_np(a), _np(b))  # drawn from nbgrad's seeded generator


# -- modules: attributes, reprs, PyTorch models loaded from their state dicts --------------------

MODULES = {
    "GroupNorm": lambda T: T.nn.GroupNorm(2, 6, eps=1e-4),
    "InstanceNorm2d": lambda T: T.nn.InstanceNorm2d(3, affine=True),
    "ConvTranspose2d": lambda T: T.nn.ConvTranspose2d(
        4, 6, (3, 2), stride=(2, 1), padding=1, output_padding=(1, 0), groups=2, dilation=(1, 2)
    ),
    "AdaptiveAvgPool2d": lambda T: T.nn.AdaptiveAvgPool2d((None, 3)),
    "Upsample": lambda T: T.nn.Upsample(scale_factor=(2, 1.5), mode="bilinear"),
    "Upsample-size": lambda T: T.nn.Upsample(size=4, mode="nearest-exact"),
    "Dropout2d": lambda T: T.nn.Dropout2d(0.1, inplace=True),
}
ATTRS = (
    "in_channels out_channels kernel_size stride padding output_padding dilation groups "
    "transposed padding_mode num_groups num_channels eps affine num_features momentum "
    "track_running_stats output_size size scale_factor mode align_corners "
    "recompute_scale_factor name p inplace training"
).split()


@needs_torch
@pytest.mark.parametrize("name", list(MODULES))
def test_module_attributes_and_repr_match_torch(name):
    nm, tm = MODULES[name](nbgrad), MODULES[name](torch)
    assert repr(nm) == repr(tm)
    for attr in ATTRS:
        if hasattr(tm, attr):
            tv, nv = getattr(tm, attr), getattr(nm, attr)
            assert (tuple(nv) if isinstance(nv, list) else nv) == (
                tuple(tv) if isinstance(tv, list) else tv
            ), attr
    assert [(n, tuple(p.shape)) for n, p in nm.named_parameters()] == [
        (n, tuple(p.shape)) for n, p in tm.named_parameters()
    ]


def _decoder(T):
    return T.nn.Sequential(
        T.nn.ConvTranspose2d(4, 8, 3, stride=2, padding=1, output_padding=1),
        T.nn.GroupNorm(2, 8),
        T.nn.ReLU(),
        T.nn.Upsample(scale_factor=2, mode="bilinear"),
        T.nn.Conv2d(8, 6, 3, padding=1),
        T.nn.InstanceNorm2d(6, affine=True),
        T.nn.Upsample(size=(13, 11)),
        T.nn.AdaptiveAvgPool2d((5, 4)),
        T.nn.Flatten(),
        T.nn.Linear(120, 3),
    )


@needs_torch
def test_torch_decoder_state_dict_gives_same_outputs_and_grads():
    torch.manual_seed(2)
    tm = _decoder(torch)
    nm = _decoder(nbgrad)
    nm.load_state_dict({k: nbgrad.tensor(_np(v)) for k, v in tm.state_dict().items()})
    assert repr(nm) == repr(tm)
    a = _rng(16).standard_normal((2, 4, 3, 3)).astype(np.float32)
    x, tx = nbgrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, ty = nm(x), tm(tx)
    np.testing.assert_allclose(_np(y), _np(ty), rtol=1e-4, atol=1e-5)
    y.pow(2).sum().backward()
    ty.pow(2).sum().backward()
    np.testing.assert_allclose(_np(x.grad), _np(tx.grad), rtol=1e-3, atol=1e-5)
    tparams = dict(tm.named_parameters())
    for n, p in nm.named_parameters():
        np.testing.assert_allclose(
            _np(p.grad), _np(tparams[n].grad), rtol=1e-3, atol=1e-5, err_msg=n
        )
