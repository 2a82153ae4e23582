"""nll_loss / cross_entropy on CUDA tensors: the same checks, node and saved values as the CPU
path (ops/nn/loss.py ``_nll``), with the kernels' CUDA twins.  Targets are validated on the
device by the twins (one number read back before a kernel indexes with them), and the total
weight of a ``mean`` is read back once (the backward's scale is a Python float, as on the
CPU): one synchronisation per loss call."""

import numpy as np

from ..._tensor import Tensor
from ...kernels.cpu import loss as KL
from ...kernels.cuda import twin
from ...kernels.cuda.array import empty, wrap
from . import device_of

_make = Tensor._make


def _dense(a, dtype, shape):
    return a.astype(dtype, copy=False).reshape(shape).dense()


def nll(x, target, weight, ignore_index, reduction, smoothing, fused, opdef, shape3, tshape):
    from ...kernels.cuda.blockred import sum_f64_cuda  # lazy: the CUDA path loads on first use
    from .xp import ones  # lazy: the CUDA path loads on first use

    device_of(x, target, weight)
    outer, C, inner = shape3
    cd = np.dtype(np.float32) if x._data.dtype == np.float16 else x._data.dtype
    xa = _dense(x._data, cd, shape3)
    t3 = _dense(target._data, np.int64, (outer, inner))
    wa = weight._data.astype(cd, copy=False).contiguous() if weight is not None else ones(C, cd)
    loss = empty((outer, inner), cd)
    wt = empty((outer, inner), cd)
    lse = empty((outer, inner), np.float64)
    if fused and not smoothing and inner == 1:
        total = twin(KL.ce_rows_fwd_cpu)(
            xa.reshape(outer, C),
            t3.reshape(outer),
            wa.dense(),
            int(ignore_index),
            loss.dense().reshape(outer),
            wt.dense().reshape(outer),
            lse.dense().reshape(outer),
        )
    else:
        total = twin(KL.nll_fwd_cpu)(
            xa,
            t3,
            wa.dense(),
            int(ignore_index),
            float(smoothing),
            bool(fused),
            loss.dense(),
            wt.dense(),
            lse.dense(),
        )
    tw = sum_f64_cuda(wt.dense().reshape(outer * inner), empty((1,), np.float64).dense())
    total_w = float(tw.copy_to_host()[0])
    if reduction == "none":
        res = loss.reshape(tshape)
    else:
        tot = wrap(total).reshape(())
        if reduction == "mean":  # float64 total / total weight (0/0: NaN, as the CPU)
            tot = tot / total_w
        res = tot.astype(cd)
    overload = "smoothing" if smoothing > 0 else ("1d" if x.ndim <= 2 else "2d")
    out = opdef.record(
        res.astype(x._data.dtype, copy=False),
        (x,),
        overload=overload,
        saved={"t": target, "w": wa, "lse": lse},
        attrs=(reduction, int(ignore_index), float(smoothing), bool(fused), shape3, total_w),
    )
    if reduction == "none" and smoothing == 0 and (x.ndim == 3 or x.ndim > 4):
        out = out.view(tshape)
    return out


def nll_vjp(node, g, x, ta, wa, gscale):
    """The backward without ``create_graph`` (the CPU's array path)."""
    reduction, ignore_index, smoothing, fused, shape3, _ = node.attrs
    outer, C, inner = shape3
    cd = np.dtype(np.float32) if g._data.dtype == np.float16 else g._data.dtype
    garr = g._data.astype(cd, copy=False)
    if gscale is None:
        gs = garr.reshape(outer, inner).contiguous()
    else:
        gs = (garr.reshape(1, 1) * float(gscale)).astype(cd)
    gx = empty(shape3, cd)
    t3 = _dense(ta, np.int64, (outer, inner))
    lse = node.array("lse")
    xa = _dense(x._data, cd, shape3)
    if fused and not smoothing and inner == 1:
        twin(KL.ce_rows_bwd_cpu)(
            xa.reshape(outer, C),
            t3.reshape(outer),
            wa.astype(cd, copy=False).dense(),
            ignore_index,
            lse.dense().reshape(outer),
            gs.dense().reshape(gs.size),
            gx.dense().reshape(outer, C),
        )
    else:
        twin(KL.nll_bwd_cpu)(
            xa,
            t3,
            wa.astype(cd, copy=False).dense(),
            ignore_index,
            float(smoothing),
            fused,
            lse.dense(),
            gs.dense(),
            gx.dense(),
        )
    return (_make(gx.reshape(x.shape).astype(g._dtype.np, copy=False)),)


def nll_graph_grad(g, x, ta, wa, gscale, ignore_index, smoothing, fused, shape3):
    """The differentiable gradient (``create_graph``) on CUDA: the CPU's ``_nll_graph_grad``
    with its constant one-hot / weight arrays built by device ops instead of numpy."""
    from ... import creation  # lazy: the CUDA path loads on first use
    from .. import pointwise_fns as pw  # lazy: the CUDA path loads on first use

    outer, C, inner = shape3
    dt = x.dtype
    x3 = x.reshape(shape3)
    t = _make(ta.astype(np.int64).reshape(outer, inner))
    valid = t != ignore_index
    tc = pw.where(valid, t, 0)
    classes = creation.arange(C, device=x.device).reshape(1, C, 1)
    onehot = (classes == tc.unsqueeze(1)).to(dt)
    w = _make(wa)
    wt = pw.where(valid, w[tc].to(dt), 0.0).unsqueeze(1)
    gs = g.reshape(outer, 1, inner) if gscale is None else g * gscale
    if fused:
        p = x3.softmax(1)
        gx = (p - onehot) * ((1.0 - smoothing) * wt)
        if smoothing > 0:
            wsum = float(w.sum().item())
            gx = gx + (p * wsum - w.to(dt).reshape(1, C, 1)) * (
                valid.unsqueeze(1).to(dt) * (smoothing / C)
            )
        gx = gx * gs
    else:
        gx = gs * (-(onehot * wt))
    if gscale is not None and gscale != gscale:  # NaN scale: ignored rows keep exact zeros
        gx = pw.where(valid.unsqueeze(1).expand(*shape3), gx, 0.0)
    return gx.reshape(x.shape)
