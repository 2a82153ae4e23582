"""Upsampling for F.interpolate: nearest / nearest-exact over 1-3 spatial dims, linear (1-D) and
bilinear (2-D), forward and backward over kernels/cpu/upsample.py.  Both ops are linear in the
input: each backward is an op whose backward is the forward again (any order of derivative).

NOTE [upsample index maps]: the source index and weight of every output position are computed
here, once per axis, with PyTorch's CPU arithmetic, so that results match it bit for bit where
the index is a floor:
- scale: ``1 / scale_factor`` when a scale factor was given (> 0), else ``in / out``, in the
  compute type (float for float32, double for float64); with ``align_corners`` (linear)
  ``(in - 1) / (out - 1)``.
- nearest, 2-D forward and every nearest backward (PyTorch's ``nearest_idx``): the scale in
  float whatever the dtype, ``out == in`` and ``out == 2 * in`` special-cased, index
  ``floorf(i * scale)``; nearest-exact: ``floorf((i + 0.5) * scale)`` with the product in
  double.
- nearest, 1-D and 3-D forward (PyTorch's generic kernel): the scale in the compute type, index
  ``floorf(scale * i)``; nearest-exact ``floorf(fma(scale, i + 0.5, -0.5) + 0.5)``.  So for
  some sizes PyTorch's forward reads another source than its backward writes to (39 -> 33 in
  float64: output 11 reads input 13, its gradient goes to input 12); nbgrad does the same.
- linear: ``real = fma(scale, i + 0.5, -0.5)`` clamped at 0 (``scale * i`` with
  align_corners), ``i0 = min(floorf(real), in - 1)``, ``i1 = i0 + (i0 < in - 1)``,
  ``l1 = clamp(real - i0, 0, 1)``, ``l0 = 1 - l1``; ``out == in`` copies.
The fused multiply-add is what PyTorch's compiled kernels execute; it is emulated in a wider
type (double for float, long double for double) and rounded once.
"""

import numpy as np

from ..._tensor import Tensor
from ...kernels.cpu import upsample as KU
from ...kernels.cuda.array import DeviceArray
from ..cuda import kernel_for, xp_of
from ..registry import internal_op, op
from ._common import carray, compute_dtype

CPU = {"cpu": KU}
_make = Tensor._make
_AXES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}


class UpGeom:
    """Shapes, index maps and weights of one upsampling (see ``upsample_geometry``)."""

    __slots__ = (
        "P",
        "dtype",
        "fwd",
        "bwd",
        "key",
        "linear",
        "xshape",
        "yshape",
        "in4",
        "out4",
        "dev",  # {"fwd"/"bwd": the maps copied to the device}, made on first CUDA use
    )


def _scale_value(scale, n_in, n_out, cd):
    """PyTorch's compute_scales_value in type ``cd``."""
    if scale is not None and scale > 0:
        return cd(1.0 / scale)
    return cd(n_in) / cd(n_out)


def _wide(cd):
    return np.float64 if cd == np.float32 else np.longdouble


def _fma_half(s, n_out, cd):
    """``fma(s, i + 0.5, -0.5)`` in type ``cd`` for i < n_out (one rounding)."""
    w = _wide(cd)
    return (w(s) * (np.arange(n_out).astype(w) + w(0.5)) - w(0.5)).astype(cd)


def _floorf(real, n_in):
    """``min(floorf(real), n_in - 1)``: floorf rounds its argument to float first."""
    return np.minimum(np.floor(real.astype(np.float32)).astype(np.int64), n_in - 1)


def nearest_map(n_in, n_out, scale, exact, generic, cd):
    """Source index of every output position (NOTE [upsample index maps])."""
    d = np.arange(n_out)
    if generic:
        s = _scale_value(scale, n_in, n_out, cd)
        if exact:
            real = _fma_half(s, n_out, cd)
            real = np.where(real < 0, cd(0), real)
            return _floorf((real + cd(0.5)).astype(cd), n_in)
        return _floorf(s * d.astype(cd), n_in)
    if not exact and n_out == n_in:
        return d
    if not exact and n_out == 2 * n_in:
        return d >> 1
    s = _scale_value(scale, n_in, n_out, np.float32)
    if exact:
        return _floorf((d + 0.5) * np.float64(s), n_in)
    return _floorf(d.astype(np.float32) * s, n_in)


def linear_map(n_in, n_out, scale, align_corners, cd):
    """(i0, i1, l0, l1) per output position (NOTE [upsample index maps])."""
    d = np.arange(n_out)
    if n_out == n_in:
        return d, d.copy(), np.ones(n_out, cd), np.zeros(n_out, cd)
    if align_corners:
        s = cd(n_in - 1) / cd(n_out - 1) if n_out > 1 else cd(0)
        real = s * d.astype(cd)
    else:
        real = _fma_half(_scale_value(scale, n_in, n_out, cd), n_out, cd)
        real = np.where(real < 0, cd(0), real)
    i0 = _floorf(real, n_in)
    l1 = np.minimum(np.maximum(real - i0.astype(cd), cd(0)), cd(1)).astype(cd)
    i1 = i0 + (i0 < n_in - 1)
    return i0, i1, (cd(1) - l1).astype(cd), l1


NEAREST_NODES = {
    (1, False): "UpsampleNearest1DBackward0",
    (2, False): "UpsampleNearest2DBackward0",
    (3, False): "UpsampleNearest3DBackward0",
    (1, True): "UpsampleNearestExact1DBackward0",
    (2, True): "UpsampleNearestExact2DBackward0",
    (3, True): "UpsampleNearestExact3DBackward0",
}
LINEAR_NODES = {1: "UpsampleLinear1DBackward0", 2: "UpsampleBilinear2DBackward0"}
_OP_NAMES = {
    (1, False): "upsample_nearest1d",
    (2, False): "upsample_nearest2d",
    (3, False): "upsample_nearest3d",
    (1, True): "_upsample_nearest_exact1d",
    (2, True): "_upsample_nearest_exact2d",
    (3, True): "_upsample_nearest_exact3d",
    1: "upsample_linear1d",
    2: "upsample_bilinear2d",
}


def _backward_names(nodes):
    return {k: v[: -len("Backward0")] + "BackwardBackward0" for k, v in nodes.items()}


def upsample_geometry(x, out_size, scales, mode, align_corners):
    """Check ``x`` (N, C, *spatial) against ``out_size`` (one int per spatial dim) and return the
    ``UpGeom`` of PyTorch's upsample op for ``mode`` ('nearest', 'nearest-exact', 'linear',
    'bilinear'); ``scales``: the scale factors passed on to the kernel (or None)."""
    nd = x.ndim - 2
    sp, out_size = tuple(x.shape[2:]), tuple(int(v) for v in out_size)
    linear = mode in ("linear", "bilinear")
    exact = mode == "nearest-exact"
    key = nd if linear else (nd, exact)
    dt = x._dtype
    if not (dt.is_floating_point or (not linear and dt.name == "uint8")):
        raise NotImplementedError(
            "\"%s_out_frame\" not implemented for '%s'" % (_OP_NAMES[key], dt._legacy)
        )
    if any(v <= 0 for v in sp + out_size):
        axes = _AXES[nd]
        raise RuntimeError(
            "Input and output sizes should be greater than 0, but got input (%s)%s output (%s)"
            % (
                ", ".join("%s: %d" % a for a in zip(axes, sp)),
                " and" if nd == 1 else "",
                ", ".join("%s: %d" % a for a in zip(axes, out_size)),
            )
        )
    if x.numel() == 0 and int(np.prod(x.shape[1:])) == 0:
        raise RuntimeError(
            "Non-empty %dD data tensor expected but got a tensor with sizes %s"
            % (nd + 2, list(x.shape))
        )
    scales = list(scales) if scales is not None else [None] * nd
    cd = compute_dtype(dt) if dt.is_floating_point else np.dtype(np.float32)
    cd = cd.type
    geo = UpGeom()
    geo.key, geo.linear, geo.dtype = key, linear, dt
    geo.P = int(np.prod(x.shape[:2]))
    geo.xshape, geo.yshape = tuple(x.shape), tuple(x.shape[:2]) + out_size
    pad = (1,) * (3 - nd) if not linear else (1,) * (2 - nd)
    geo.in4 = (geo.P,) + pad + sp
    geo.out4 = (geo.P,) + pad + out_size
    if linear:
        maps = [linear_map(i, o, s, align_corners, cd) for i, o, s in zip(sp, out_size, scales)]
        if nd == 1:  # a dummy H axis
            one = np.zeros(1, np.int64)
            maps = [(one, one, np.ones(1, cd), np.zeros(1, cd))] + maps
        geo.fwd = geo.bwd = tuple(maps[0]) + tuple(maps[1])
        return geo
    generic = nd != 2
    fwd = [nearest_map(i, o, s, exact, generic, cd) for i, o, s in zip(sp, out_size, scales)]
    bwd = [nearest_map(i, o, s, exact, False, cd) for i, o, s in zip(sp, out_size, scales)]
    zero = [np.zeros(1, np.int64)] * (3 - nd)
    geo.fwd, geo.bwd = tuple(zero + fwd), tuple(zero + bwd)
    return geo


def _cd(geo):
    return compute_dtype(geo.dtype) if geo.dtype.is_floating_point else np.dtype(geo.dtype.np)


def _device_maps(geo, which):
    """The index maps and weights ``which`` ('fwd' / 'bwd') as device arrays (copied once per
    geometry: they depend on the shapes alone)."""
    from ...kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use

    dev = getattr(geo, "dev", None)
    if dev is None:
        dev = geo.dev = {}
    maps = dev.get(which)
    if maps is None:
        maps = dev[which] = tuple(from_host(np.asarray(m)) for m in getattr(geo, which))
    return maps


def _run(kernel, a, geo, which, shape):
    maps = getattr(geo, which)
    if type(a) is DeviceArray:
        maps = _device_maps(geo, which)
    out = xp_of(a).empty(shape, a.dtype)
    if out.size:
        kernel = kernel_for(a, kernel)
        if geo.linear:
            kernel(a, *maps, out, geo.key == 2)
        else:
            kernel(a, *maps, out)
    return out


def _fwd_arr(a, geo):
    k = KU.upsample_linear_fwd_cpu if geo.linear else KU.upsample_nearest_fwd_cpu
    out = _run(k, a.reshape(geo.in4), geo, "fwd", geo.out4)
    return out.reshape(geo.yshape).astype(geo.dtype.np, copy=False)


def _bwd_arr(a, geo):
    k = KU.upsample_linear_bwd_cpu if geo.linear else KU.upsample_nearest_bwd_cpu
    out = _run(k, a.reshape(geo.out4), geo, "bwd", geo.in4)
    return out.reshape(geo.xshape).astype(geo.dtype.np, copy=False)


def _vjp(node, grads):
    return (upsample_backward(grads[0], node.attrs),)


def _backward_vjp(node, grads):
    geo = node.attrs
    return ((upsample_linear if geo.linear else upsample_nearest)(grads[0], geo),)


@op("upsample_nearest", "nn", node=NEAREST_NODES, vjp=_vjp, kernels=CPU)
def upsample_nearest(x, geo):
    """Nearest / nearest-exact upsampling of ``x`` over ``geo`` (``upsample_geometry``)."""
    arr = _fwd_arr(carray(x, _cd(geo)), geo)
    return upsample_nearest.op.record(arr, (x,), overload=geo.key, attrs=geo)


@op("upsample_linear", "nn", node=LINEAR_NODES, vjp=_vjp, kernels=CPU)
def upsample_linear(x, geo):
    """Linear (1-D) / bilinear (2-D) upsampling of ``x`` over ``geo``."""
    arr = _fwd_arr(carray(x, _cd(geo)), geo)
    return upsample_linear.op.record(arr, (x,), overload=geo.key, attrs=geo)


@internal_op(
    "upsample_backward",
    "nn",
    node={
        **_backward_names(NEAREST_NODES),
        **{("linear", k): v for k, v in _backward_names(LINEAR_NODES).items()},
    },
    vjp=_backward_vjp,
    args=("g",),
    kernels=CPU,
)
def upsample_backward(g, geo):
    """The adjoint of the upsampling ``geo`` describes: output-shaped ``g`` back to the input."""
    arr = _bwd_arr(carray(g, _cd(geo)), geo)
    key = ("linear", geo.key) if geo.linear else geo.key
    return upsample_backward.op.record(arr, (g,), overload=key, attrs=geo)
