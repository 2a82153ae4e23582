"""pad: constant padding (its backward is the same op with negated pads) and the reflect /
replicate / circular modes, which gather along index maps and scatter-add back."""

import numpy as np

from ..._tensor import Tensor
from ...creation import zeros
from ...grad_mode import STATE
from ...kernels.cpu import conv as KC
from ...kernels.cuda.array import DeviceArray
from ..cuda import kernel_for, xp_of
from ..registry import op
from ..shape import preserve_array
from ._common import carray, check_float, compute_dtype

_make = Tensor._make


def _pad_pairs(pad, ndim):
    """[(dim, left, right), ...] from PyTorch's last-dim-first flat pad list."""
    return [(ndim - 1 - i, int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]


def _constant_pad_vjp(node, grads):
    pad, _ = node.attrs
    return (constant_pad_nd(grads[0], tuple(-p for p in pad), 0.0),)


@op("pad", "nn", node="ConstantPadNdBackward0", vjp=_constant_pad_vjp)
def constant_pad_nd(x, pad, value=0.0):
    """Pad (or, for negative pads, crop) with ``value``; ``pad`` is last-dim-first pairs."""
    a = x._data
    shape = list(a.shape)
    src = [slice(None)] * a.ndim
    dst = [slice(None)] * a.ndim
    for d, lo, hi in _pad_pairs(pad, a.ndim):
        n = shape[d]
        new = n + lo + hi
        if new < 0:
            raise RuntimeError(
                "The input size %d, plus negative padding %d and %d resulted in a "
                "negative output size, which is invalid. Check dimension %d of "
                "your input." % (n, lo, hi, d)
            )
        s0, s1 = max(-lo, 0), n - max(-hi, 0)
        d0 = max(lo, 0)
        length = max(s1 - s0, 0)
        src[d] = slice(s0, s0 + length)
        dst[d] = slice(d0, d0 + length)
        shape[d] = new
    if not any(pad):  # PyTorch: self.clone(), which keeps the input's layout
        return constant_pad_nd.op.record(preserve_array(a), (x,), attrs=(pad, value))
    out = xp_of(a).full(shape, value, a.dtype)
    out[tuple(dst)] = a[tuple(src)]
    return constant_pad_nd.op.record(out, (x,), attrs=(pad, value))


def _index_map(n, lo, hi, mode):
    j = np.arange(-lo, n + hi, dtype=np.int64)
    if mode == "reflect":
        j = np.abs(j)
        j = np.where(j >= n, 2 * (n - 1) - j, j)
    elif mode == "replicate":
        j = np.clip(j, 0, n - 1)
    else:
        j = np.mod(j, n)
    return j


def _index_pad_vjp(node, grads):
    g = grads[0]
    maps, in_shape = node.attrs
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        a = carray(g, cd)
        xp = xp_of(a)
        for d, idx in reversed(maps):
            shp = a.shape
            A, B = int(np.prod(shp[:d])), int(np.prod(shp[d + 1 :]))
            out = xp.empty((A, in_shape[d], B), cd)
            kernel_for(a, KC.index_add_axis1_cpu)(a.reshape(A, shp[d], B), idx, out)
            a = out.reshape(shp[:d] + (in_shape[d],) + shp[d + 1 :])
        return (_make(a.astype(g._dtype.np, copy=False)),)
    for d, idx in reversed(maps):
        shp = list(g.shape)
        view = [1] * len(shp)
        view[d] = shp[d]
        xp = xp_of(idx)
        index = _make(xp.ascontiguousarray(xp.broadcast_to(idx.reshape(view), shp)))
        shp[d] = in_shape[d]
        g = zeros(tuple(shp), dtype=g.dtype, device=g.device).scatter_add(d, index, g)
    return (g,)


def _index_pad(x, pad, mode, opdef, overload=None):
    a = x._data
    maps = []
    for d, lo, hi in _pad_pairs(pad, a.ndim):
        n = a.shape[d]
        if mode == "reflect" and (lo >= n or hi >= n):
            raise RuntimeError(
                "Argument #4: Padding size should be less than the corresponding "
                "input dimension, but got: padding (%d, %d) at dimension %d of "
                "input %s" % (lo, hi, d, list(a.shape))
            )
        if mode == "circular" and (lo > n or hi > n):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if n + lo + hi < 0 or (mode == "replicate" and n == 0):
            raise RuntimeError("input tensor must be non-empty and the padded size positive")
        maps.append((d, _index_map(n, lo, hi, mode)))
    if type(a) is DeviceArray:
        return _index_pad_cuda(x, maps, opdef, overload)
    for d, idx in maps:
        a = np.take(a, idx, axis=d)
    return opdef.record(
        np.ascontiguousarray(a), (x,), overload=overload, attrs=(maps, tuple(x.shape))
    )


def _index_pad_cuda(x, maps, opdef, overload):
    """``_index_pad``'s gathers on the device; the index maps (made from the shapes alone) are
    copied to the device once and kept there for backward."""
    from ...kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use
    from ...kernels.cuda.nn import take_axis1_cuda  # lazy: the CUDA path loads on first use

    maps = [(d, from_host(idx)) for d, idx in maps]
    a = x._data
    xp = xp_of(a)
    for d, idx in maps:
        shp = a.shape
        A, B = int(np.prod(shp[:d])), int(np.prod(shp[d + 1 :]))
        out = xp.empty((A, idx.shape[0], B), a.dtype)
        take_axis1_cuda(a.reshape(A, shp[d], B).dense(), idx.dense(), out.dense())
        a = out.reshape(shp[:d] + (idx.shape[0],) + shp[d + 1 :])
    return opdef.record(a, (x,), overload=overload, attrs=(maps, tuple(x.shape)))


def _nd_nodes(name):
    """PyTorch's node per number of padded dims (1-3), e.g. ReflectionPad2DBackward0."""
    return {k: name % k for k in (1, 2, 3)}


CPU = {"cpu": KC}


@op(
    "pad.reflect",
    "nn",
    node=_nd_nodes("ReflectionPad%dDBackward0"),
    vjp=_index_pad_vjp,
    double=True,  # NOTE [backward nodes]
    kernels=CPU,
)
def reflection_pad(x, pad):
    return _index_pad(x, pad, "reflect", reflection_pad.op, len(pad) // 2)


@op(
    "pad.replicate",
    "nn",
    node=_nd_nodes("ReplicationPad%dDBackward0"),
    vjp=_index_pad_vjp,
    double=True,  # NOTE [backward nodes]
    kernels=CPU,
)
def replication_pad(x, pad):
    return _index_pad(x, pad, "replicate", replication_pad.op, len(pad) // 2)


# PyTorch builds circular padding from slice copies: its node is the CopySlices of the last one
@op("pad.circular", "nn", node="torch::autograd::CopySlices", vjp=_index_pad_vjp, kernels=CPU)
def circular_pad(x, pad):
    return _index_pad(x, pad, "circular", circular_pad.op)


_MODES = {"reflect": reflection_pad, "replicate": replication_pad, "circular": circular_pad}


def pad(x, pad, mode="constant", value=None):
    """F.pad: PyTorch's checks, then the op of ``mode``."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2 != 0:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > x.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input "
            "dimension but got padding length %d and input of dimension %d" % (len(pad), x.ndim)
        )
    if mode == "constant":
        return constant_pad_nd(x, pad, 0.0 if value is None else value)
    if value is not None and value != 0:
        raise RuntimeError('Padding mode "%s" doesn\'t take in value argument' % mode)
    if mode not in _MODES:
        raise NotImplementedError("Unrecognised padding mode %s" % mode)
    k = len(pad) // 2
    if x.ndim not in (k + 1, k + 2) or k > 3:
        raise NotImplementedError(
            "Padding size %d is not supported for %dD input tensor." % (len(pad), x.ndim)
        )
    check_float(x, "pad")
    return _MODES[mode](x, pad)
