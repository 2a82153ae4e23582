"""Losses over kernels/cpu/loss.py: mse_loss, nll_loss, cross_entropy (fused log-softmax +
NLL), binary_cross_entropy(_with_logits).  Each backward runs the fused kernel, or the same
gradient from nbgrad ops when a graph is being built (double backward)."""

import math

import numpy as np

from ... import dtypes as _dt
from ..._tensor import Tensor
from ...autograd.batching import batched
from ...grad_mode import STATE, no_grad
from ...kernels.cpu import index as KI, loss as KL
from ...kernels.cuda.array import DeviceArray
from .. import pointwise_fns as _pw
from ..cuda import kernel_for, xp_of
from ..dispatch import any_strided, torch_layout
from ..registry import internal_op, op
from ._common import carray, check_float, check_no_grad, compute_dtype, needs, on_cuda

CPU = {"cpu": KL}
_make = Tensor._make


def _reduce_scale(reduction, n):
    """The gradient scale of a reduction over ``n`` elements (a mean over none: NaN, as
    PyTorch's ``grad / numel``; it scales an empty gradient, so nothing shows)."""
    if reduction != "mean":
        return 1.0
    return 1.0 / n if n else math.nan


def _reduced(out, total, reduction, n, dtype):
    if reduction == "none":
        return out
    if type(out) is DeviceArray:  # total: the CUDA twin's (1,) float64 device array
        from ...kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use

        tot = wrap(total).reshape(())
        if reduction == "mean":
            if not n:
                return xp_of(out).full((), np.nan, dtype)
            tot = tot / float(n)
        return tot.astype(dtype)
    if reduction == "sum":
        return np.asarray(total, dtype)
    return np.asarray(total / n if n else np.nan, dtype)


@batched
def _div_scalar_vjp(node, grads):
    return (grads[0] / node.attrs,)


@internal_op("div_scalar", "nn", node="DivBackward1", vjp=_div_scalar_vjp)
def div_scalar(t, c):
    """``t / c`` for a Python number ``c`` recorded as PyTorch's Tensor-by-Scalar DivBackward1
    (the mean of F.cross_entropy with class probabilities)."""
    r = t._data / t._data.dtype.type(c)
    return div_scalar.op.record(r if type(r) is DeviceArray else np.asarray(r), (t,), attrs=c)


@batched
def _identity_vjp(node, grads):
    return (grads[0],)


def _with_scalar(f, t, c):
    """``f(t, c)``'s values (PyTorch's promotion) without a node."""
    with no_grad():
        return f(t.detach(), c)._data


@internal_op("add_scalar", "nn", node="AddBackward1", vjp=_identity_vjp)
def add_scalar(t, c):
    """``t + c`` for a Python number ``c`` recorded as ATen's add(Tensor, Scalar)
    (AddBackward1, one input), as PyTorch's C++ composites (pairwise_distance, ...) record it."""
    return add_scalar.op.record(_with_scalar(_pw.add, t, c), (t,))


@internal_op("sub_scalar", "nn", node="SubBackward1", vjp=_identity_vjp)
def sub_scalar(t, c):
    """``t - c`` recorded as ATen's sub(Tensor, Scalar) (SubBackward1)."""
    return sub_scalar.op.record(_with_scalar(_pw.sub, t, c), (t,))


# -- mean squared error ------------------------------------------------------------------------


def _mse_vjp(node, grads):
    g = grads[0]
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    scale = _reduce_scale(reduction, n)
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        xa = carray(x, cd).reshape(-1)
        gx = xp_of(xa).empty(x.shape, cd)
        kernel_for(xa, KL.mse_bwd_cpu)(
            xa,
            carray(t, cd).reshape(-1),
            carray(g, cd).reshape(-1),
            scale,
            gx.reshape(-1),
        )
        gx = gx.astype(g._dtype.np, copy=False)
        return (_make(gx) if needs(node, 0) else None, _make(-gx) if needs(node, 1) else None)
    d = (x - t) * g * (2.0 * scale)
    return (d if needs(node, 0) else None, -d if needs(node, 1) else None)


@op(
    "mse_loss",
    "nn",
    node="MseLossBackward0",
    vjp=_mse_vjp,
    args=("x", "t"),
    saves=("x", "t"),
    kernels=CPU,
)
def mse_loss(x, t, reduction="mean"):
    """Same-shape ``x`` and ``t`` (F.mse_loss broadcasts them first)."""
    dt = _dt.result_type(x, t)
    if not dt.is_inexact:
        raise NotImplementedError("\"mse_cpu\" not implemented for '%s'" % dt._legacy)
    on_cuda(x, t)
    cd = compute_dtype(dt)
    xa = carray(x, cd).reshape(-1)
    out = xp_of(xa).empty(x.shape, cd)
    total = kernel_for(xa, KL.mse_fwd_cpu)(xa, carray(t, cd).reshape(-1), out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(dt.np, copy=False)
    if reduction == "none" and res.ndim > 1 and any_strided((x._data, t._data)):
        res = torch_layout(res, (x._data, t._data))  # a TensorIterator result in PyTorch
    return mse_loss.op.record(res, (x, t), attrs=(reduction, out.size))


# -- negative log-likelihood / cross-entropy (class indices) -----------------------------------


def _check_nll_shapes(x, target):
    if x.ndim < 1:
        raise ValueError("Expected 1 or more dimensions (got %d)" % x.ndim)
    if x.ndim != 1 and (target.ndim == 0 or x.shape[0] != target.shape[0]):
        raise ValueError(
            "Expected input batch_size (%d) to match target batch_size (%d)."
            % (x.shape[0], target.shape[0] if target.ndim else 0)
        )
    if x.ndim <= 2:
        if target.ndim > 1:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        if x.ndim == 1 and target.ndim != 0 and tuple(target.shape) != (1,):
            raise RuntimeError(
                "size mismatch (got input: %s, target: %s)" % (list(x.shape), list(target.shape))
            )
    elif x.ndim == 4:
        if target.ndim != 3:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got "
                "targets of dimension: %d" % target.ndim
            )
        if tuple(target.shape) != (x.shape[0],) + tuple(x.shape[2:]):
            raise RuntimeError(
                "size mismatch (got input: %s , target: %s" % (list(x.shape), list(target.shape))
            )
    else:
        want = (x.shape[0],) + tuple(x.shape[2:])
        if tuple(target.shape) != want:
            raise RuntimeError("Expected target size %s, got %s" % (list(want), list(target.shape)))


def _check_nll(x, target, weight, ignore_index):
    """PyTorch's nll_loss_nd checks, in its order; returns (3-D shape, (outer, inner) targets)."""
    _check_nll_shapes(x, target)
    C = x.shape[0 if x.ndim == 1 else 1]
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != C):
        raise RuntimeError(
            "weight tensor should be defined either for all %d classes or no "
            "classes but got weight tensor of shape: %s" % (C, list(weight.shape))
        )
    if target._dtype not in (_dt.int64, _dt.uint8):
        raise RuntimeError(
            "expected target dtype to be Long or Byte, but got %s" % target._dtype._legacy
        )
    if weight is not None and weight._dtype is not x._dtype:
        raise RuntimeError(
            "expected scalar type %s but found %s" % (x._dtype._legacy, weight._dtype._legacy)
        )
    if x.ndim == 1:
        shape3 = (1, C, 1)
    else:
        shape3 = (x.shape[0], C, math.prod(x._data.shape[2:]))  # (np.prod: ~5 us a call)
    if type(target._data) is DeviceArray:  # validated on the device (ops/cuda/loss.py)
        return shape3, None
    return shape3, _targets(target._data, shape3, ignore_index)


def _targets(ta, shape3, ignore_index):
    """Class-index targets as a fresh (outer, inner) int64 array, every one in [0, C) or the
    ignore_index: the kernels index memory with them.  Forward and backward (NOTE [saved
    indices] in ops/indexing.py: ``.data`` can change a saved target after the forward)."""
    t = np.array(ta, dtype=np.int64, order="C").reshape(shape3[0], shape3[2])
    if KI.first_bad(t, 0, shape3[1]) is not None:  # out of range, or ignored
        flat = t.reshape(-1)
        out = (flat != ignore_index) & ((flat < 0) | (flat >= shape3[1]))
        if out.any():
            raise IndexError("Target %d is out of bounds." % flat[out][0])
    return t


def _nll_graph_grad(g, x, t, wa, gscale, ignore_index, smoothing, fused, shape3):
    """The NLL / cross-entropy gradient from differentiable ops, in the (outer, C, inner) view."""
    outer, C, inner = shape3
    dt = x._data.dtype
    x3 = x.reshape(shape3)
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    onehot = np.zeros(shape3, dt)
    np.put_along_axis(onehot, tc[:, None, :], 1, axis=1)
    wt = np.where(valid, wa[tc], 0).astype(dt)[:, None, :]
    gs = g.reshape(outer, 1, inner) if gscale is None else g * gscale
    if fused:
        p = x3.softmax(1)
        gx = (p - _make(onehot)) * _make(((1.0 - smoothing) * wt).astype(dt))
        if smoothing > 0:
            wsum = float(wa.sum())
            gx = gx + (p * wsum - _make(wa.astype(dt).reshape(1, C, 1))) * _make(
                (valid[:, None, :] * (smoothing / C)).astype(dt)
            )
        gx = gx * gs
    else:
        gx = gs * _make(-onehot * wt)
    if gscale is not None and math.isnan(gscale):
        gx = _pw.where(_make(np.broadcast_to(valid[:, None, :], shape3).copy()), gx, 0.0)
    return gx.reshape(x.shape)


def _nll_vjp(node, grads):
    g = grads[0]
    reduction, ignore_index, smoothing, fused, shape3, total_w = node.attrs
    x = node.unpack("x")
    ta = node.array("t")
    if ta.size != shape3[0] * shape3[2] or ta.dtype.kind not in "iu":
        raise RuntimeError("nll_loss: the target was replaced after the forward")
    wa = node.array("w")
    if type(ta) is DeviceArray:
        return _nll_vjp_cuda(node, g, x, ta, wa, reduction, total_w)
    t = _targets(ta, shape3, ignore_index)
    outer, _, inner = shape3
    if reduction == "none":
        gscale = None
    else:
        # mean over zero total weight: NaN like PyTorch (ignored rows still get exact zeros)
        gscale = (1.0 / total_w if total_w else float("nan")) if reduction == "mean" else 1.0
    if STATE.enabled:
        return (_nll_graph_grad(g, x, t, wa, gscale, ignore_index, smoothing, fused, shape3),)
    cd = compute_dtype(g._dtype)
    if gscale is None:
        gs = carray(g, cd).reshape(outer, inner)
    else:
        gs = (carray(g, cd).reshape(1, 1) * cd.type(gscale)).astype(cd)
    gx = np.empty(shape3, cd)
    if fused and not smoothing and inner == 1:  # rows: the vectorised kernel
        KL.ce_rows_bwd_cpu(
            carray(x, cd).reshape(outer, shape3[1]),
            t.reshape(outer),
            wa.astype(cd, copy=False),
            ignore_index,
            node.array("lse").reshape(outer),
            gs.reshape(-1),
            gx.reshape(outer, shape3[1]),
        )
        return (_make(gx.reshape(x.shape).astype(g._dtype.np, copy=False)),)
    KL.nll_bwd_cpu(
        carray(x, cd).reshape(shape3),
        t,
        wa.astype(cd, copy=False),
        ignore_index,
        float(smoothing),
        fused,
        node.array("lse"),
        gs,
        gx,
    )
    return (_make(gx.reshape(x.shape).astype(g._dtype.np, copy=False)),)


def _nll_vjp_cuda(node, g, x, ta, wa, reduction, total_w):
    if reduction == "none":
        gscale = None
    else:
        gscale = (1.0 / total_w if total_w else float("nan")) if reduction == "mean" else 1.0
    from ..cuda import loss as cuda_loss  # lazy: the CUDA path loads on first use

    if STATE.enabled:
        _, ignore_index, smoothing, fused, shape3, _ = node.attrs
        return (
            cuda_loss.nll_graph_grad(g, x, ta, wa, gscale, ignore_index, smoothing, fused, shape3),
        )
    return cuda_loss.nll_vjp(node, g, x, ta, wa, gscale)


def _nll(x, target, weight, ignore_index, reduction, smoothing, fused, opdef):
    """Checks, the fused kernel, and the node; ``fused``: log-softmax first (cross_entropy)."""
    shape3, t3 = _check_nll(x, target, weight, ignore_index)
    tshape = tuple(target.shape) if x.ndim > 1 else ()
    if type(x._data) is DeviceArray or type(target._data) is DeviceArray:
        from ..cuda.loss import nll  # lazy: the CUDA path loads on first use

        return nll(
            x, target, weight, ignore_index, reduction, smoothing, fused, opdef, shape3, tshape
        )
    cd = compute_dtype(x._dtype)
    wa = carray(weight, cd) if weight is not None else np.ones(shape3[1], cd)
    loss = np.empty((shape3[0], shape3[2]), cd)
    wt = np.empty((shape3[0], shape3[2]), cd)
    lse = np.empty((shape3[0], shape3[2]), np.float64)
    if fused and not smoothing and shape3[2] == 1:  # rows: the vectorised kernel
        n, c = shape3[0], shape3[1]
        total = KL.ce_rows_fwd_cpu(
            carray(x, cd).reshape(n, c),
            t3.reshape(n),
            wa,
            int(ignore_index),
            loss.reshape(n),
            wt.reshape(n),
            lse.reshape(n),
        )
    else:
        total = KL.nll_fwd_cpu(
            carray(x, cd).reshape(shape3),
            t3,
            wa,
            int(ignore_index),
            float(smoothing),
            bool(fused),
            loss,
            wt,
            lse,
        )
    total_w = float(np.add.reduce(wt, axis=None, dtype=np.float64))  # (no wrapper: ~3 us)
    if reduction == "none":
        res = loss.reshape(tshape)
    elif reduction == "sum":
        res = np.asarray(total, cd)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            res = np.asarray(np.float64(total) / total_w, cd)
    # PyTorch's node: label smoothing adds two losses; inputs beyond 2-D go through nll_loss2d
    overload = "smoothing" if smoothing > 0 else ("1d" if x.ndim <= 2 else "2d")
    out = opdef.record(
        res.astype(x._dtype.np, copy=False),
        (x,),
        overload=overload,
        saved={"t": target, "w": wa, "lse": lse},
        attrs=(reduction, int(ignore_index), float(smoothing), bool(fused), shape3, total_w),
    )
    if reduction == "none" and smoothing == 0 and (x.ndim == 3 or x.ndim > 4):
        out = out.view(tshape)  # PyTorch reshapes through nll_loss2d: ViewBackward0
    return out


_NLL_NODES = {"1d": "NllLossBackward0", "2d": "NllLoss2DBackward0"}


@op("nll_loss", "nn", node=_NLL_NODES, vjp=_nll_vjp, saves=("x",), kernels=CPU, double=True)
def nll_loss(x, target, weight=None, ignore_index=-100, reduction="mean"):
    """Log-probabilities ``x`` and class-index targets."""
    check_float(x, "nll_loss_out_frame")
    check_no_grad(weight, "nll_loss_forward", "weight")
    return _nll(x, target, weight, ignore_index, reduction, 0.0, False, nll_loss.op)


@op(
    "cross_entropy",
    "nn",
    node=dict(_NLL_NODES, smoothing="AddBackward0"),
    vjp=_nll_vjp,
    saves=("x",),
    kernels=CPU,
)
def cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Logits ``x`` and class-index targets: one fused log-softmax + NLL kernel each way
    (stable for logits of any magnitude)."""
    check_float(x, "log_softmax_lastdim_kernel_impl")
    check_no_grad(weight, "nll_loss_forward", "weight")
    return _nll(
        x, target, weight, ignore_index, reduction, float(label_smoothing), True, cross_entropy.op
    )


# -- binary cross-entropy ----------------------------------------------------------------------


def _bce_fused_grads(node, g, kernel, extra):
    reduction, n = node.attrs[0], node.attrs[1]
    x, t = node.unpack("x"), node.unpack("t")
    cd = compute_dtype(_dt.result_type(g, x, t))  # (bce_with_logits: t may be wider than x)
    xa = carray(x, cd).reshape(-1)
    xp = xp_of(xa)
    gx = xp.empty(x.shape, cd)
    gt = xp.empty(x.shape, cd)
    kernel_for(xa, kernel)(
        xa,
        carray(t, cd).reshape(-1),
        *extra,
        carray(g, cd).reshape(-1),
        _reduce_scale(reduction, n),
        gx.reshape(-1),
        gt.reshape(-1),
    )
    dt = g._dtype.np
    return (
        _make(gx.astype(dt, copy=False)) if needs(node, 0) else None,
        _make(gt.astype(dt, copy=False)) if needs(node, 1) else None,
    )


def _bce_vjp(node, grads):
    g = grads[0]
    wa = node.array("w")
    if not STATE.enabled:
        return _bce_fused_grads(node, g, KL.bce_bwd_cpu, (wa,))
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    gw = g * _reduce_scale(reduction, n) * _make(wa.astype(x._data.dtype).reshape(x.shape))
    gx = gw * (x - t) / ((1 - x) * x).clamp(min=1e-12) if needs(node, 0) else None
    gt = gw * ((-x).log1p() - x.log()) if needs(node, 1) else None
    return gx, gt


def _bcast_arr(t, shape, cd, like):
    """``t`` broadcast to ``shape`` as a writable contiguous 1-D buffer (ones for None), on
    ``like``'s device."""
    if t is None:
        return xp_of(like).ones(int(np.prod(shape)), cd)
    a = t._data.astype(cd, copy=False)
    if type(a) is DeviceArray:
        return a.broadcast_to(tuple(shape)).contiguous().reshape(-1)
    if a.shape != tuple(shape):
        a = np.array(np.broadcast_to(a, shape), order="C")
    return np.ascontiguousarray(a).reshape(-1)


@op(
    "binary_cross_entropy",
    "nn",
    node="BinaryCrossEntropyBackward0",
    vjp=_bce_vjp,
    args=("x", "t"),
    saves=("x", "t"),
    kernels=CPU,
)
def binary_cross_entropy(x, t, weight=None, reduction="mean"):
    """Probabilities ``x`` in [0, 1]; ``weight`` broadcasts to ``x``."""
    cuda = on_cuda(x, t, weight)
    cd = compute_dtype(x._dtype)
    xa = carray(x, cd).reshape(-1)
    if cuda:
        from ...kernels.cuda.nn import any_outside_unit_cuda  # lazy: the CUDA path

        bad = any_outside_unit_cuda(xa.dense())
    else:
        bad = xa.size and not bool(np.all((xa >= 0) & (xa <= 1)))
    if bad:
        raise RuntimeError("all elements of input should be between 0 and 1")
    wa = _bcast_arr(weight, x.shape, cd, xa)
    out = xp_of(xa).empty(x.shape, cd)
    total = kernel_for(xa, KL.bce_fwd_cpu)(xa, carray(t, cd).reshape(-1), wa, out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(x._dtype.np, copy=False)
    return binary_cross_entropy.op.record(res, (x, t), saved={"w": wa}, attrs=(reduction, out.size))


def _bcel_vjp(node, grads):
    g = grads[0]
    wa, pwa = node.array("w"), node.array("pw")
    if not STATE.enabled:
        return _bce_fused_grads(node, g, KL.bcel_bwd_cpu, (wa, pwa))
    reduction, n = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    dt = x._data.dtype
    shape = tuple(x.shape)
    gw = g * _reduce_scale(reduction, n) * _make(wa.astype(dt).reshape(shape))
    pw = _make(pwa.astype(dt).reshape(shape))
    gx = gt = None
    if needs(node, 0):
        pt = pw * t
        gx = gw * ((pt + 1 - t) * x.sigmoid() - pt)
    if needs(node, 1):
        sp_neg = (-(x.abs())).exp().log1p() + (-x).relu()  # softplus(-x), exact
        gt = gw * ((pw - 1) * sp_neg - x)
    return gx, gt


@op(
    "binary_cross_entropy_with_logits",
    "nn",
    node="BinaryCrossEntropyWithLogitsBackward0",
    vjp=_bcel_vjp,
    args=("x", "t"),
    saves=("x", "t"),
    kernels=CPU,
)
def binary_cross_entropy_with_logits(x, t, weight=None, pos_weight=None, reduction="mean"):
    """Logits ``x``; ``weight`` and ``pos_weight`` broadcast to ``x``.  The result has the
    (floating) target's dtype, as PyTorch's in-place steps on ``1 - target`` give it; the
    maths runs in the promoted dtype of ``x`` and ``t``."""
    on_cuda(x, t, weight, pos_weight)
    cd = compute_dtype(_dt.result_type(x, t))
    shape = tuple(x.shape)
    xa = carray(x, cd).reshape(-1)
    wa = _bcast_arr(weight, shape, cd, xa)
    pwa = _bcast_arr(pos_weight, shape, cd, xa)
    out = xp_of(xa).empty(shape, cd)
    total = kernel_for(xa, KL.bcel_fwd_cpu)(xa, carray(t, cd).reshape(-1), wa, pwa, out.reshape(-1))
    res = _reduced(out, total, reduction, out.size, cd).astype(t._dtype.np, copy=False)
    return binary_cross_entropy_with_logits.op.record(
        res, (x, t), saved={"w": wa, "pw": pwa}, attrs=(reduction, out.size)
    )


# -- smooth L1 / Huber -------------------------------------------------------------------------


def _smooth_l1_vjp(node, grads):
    g = grads[0]
    reduction, n, beta, huber = node.attrs
    x, t = node.unpack("x"), node.unpack("t")
    scale = _reduce_scale(reduction, n)
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        xa = carray(x, cd).reshape(-1)
        gx = xp_of(xa).empty(x.shape, cd)
        kernel_for(xa, KL.smooth_l1_bwd_cpu)(
            xa,
            carray(t, cd).reshape(-1),
            carray(g, cd).reshape(-1),
            cd.type(beta),
            huber,
            scale,
            gx.reshape(-1),
        )
        gx = gx.astype(g._dtype.np, copy=False)
        return (_make(gx) if needs(node, 0) else None, _make(-gx) if needs(node, 1) else None)
    # create_graph: PyTorch's smooth_l1_loss_backward from differentiable ops (NaN stays NaN)
    d = x - t
    cap = beta if huber else 1.0
    inner = d if huber else d / beta
    gd = _pw.where(d >= beta, cap, _pw.where(d <= -beta, -cap, inner)) * g
    if scale != 1.0:
        gd = gd * scale
    return (gd if needs(node, 0) else None, -gd if needs(node, 1) else None)


def _smooth_l1(x, t, reduction, beta, huber, opdef):
    dt = _dt.result_type(x, t)
    if not dt.is_floating_point:
        name = "huber_cpu" if huber else "smooth_l1_cpu"
        raise NotImplementedError("\"%s\" not implemented for '%s'" % (name, dt._legacy))
    on_cuda(x, t)
    cd = compute_dtype(dt)
    xa = carray(x, cd).reshape(-1)
    out = xp_of(xa).empty(x.shape, cd)
    total = kernel_for(xa, KL.smooth_l1_fwd_cpu)(
        xa, carray(t, cd).reshape(-1), cd.type(beta), huber, out.reshape(-1)
    )
    res = _reduced(out, total, reduction, out.size, cd).astype(dt.np, copy=False)
    if reduction == "none" and res.ndim > 1 and any_strided((x._data, t._data)):
        res = torch_layout(res, (x._data, t._data))
    return opdef.record(res, (x, t), attrs=(reduction, out.size, float(beta), huber))


@op(
    "smooth_l1_loss",
    "nn",
    node="SmoothL1LossBackward0",
    vjp=_smooth_l1_vjp,
    args=("x", "t"),
    saves=("x", "t"),
    kernels=CPU,
    double=True,  # NOTE [backward nodes]: smooth_l1_loss_backward
)
def smooth_l1_loss(x, t, reduction="mean", beta=1.0):
    """Same-shape ``x`` and ``t``, ``beta > 0`` (F.smooth_l1_loss broadcasts, checks ``beta``
    and sends ``beta == 0`` to l1_loss, as PyTorch does)."""
    return _smooth_l1(x, t, reduction, beta, False, smooth_l1_loss.op)


@op(
    "huber_loss",
    "nn",
    node="HuberLossBackward0",
    vjp=_smooth_l1_vjp,
    args=("x", "t"),
    saves=("x", "t"),
    kernels=CPU,
    double=True,  # NOTE [backward nodes]: huber_loss_backward
)
def huber_loss(x, t, reduction="mean", delta=1.0):
    """Same-shape ``x`` and ``t``, ``delta > 0`` (checked by F.huber_loss)."""
    return _smooth_l1(x, t, reduction, delta, True, huber_loss.op)
