"""Convolution as one trilinear form T(x, w, y) = <y, conv(x, w)>: conv1d/conv2d, their
geometry, and the three partials whose vjps are each other (kernels/cpu/conv.py + BLAS)."""

import threading
import warnings

import numpy as np

from ..._tensor import Tensor
from ...grad_mode import STATE
from ...kernels.cpu import conv as KC
from ...kernels.cuda.array import DeviceArray
from ..cuda import kernel_for, xp_of
from ..registry import internal_op, op
from ._common import carray, check_float, compute_dtype, needs, on_cuda

CPU = {"cpu": KC}
# C++ type names in PyTorch's messages (kept here until dtype carries its C name)


class _ConvGeom:
    """Shapes and window arithmetic of one convolution (1-D convs use H = KH = 1)."""

    __slots__ = (
        "C",
        "G",
        "H",
        "KH",
        "KW",
        "N",
        "O",
        "OH",
        "OW",
        "W",
        "dh",
        "dtype",
        "dw",
        "ph",
        "pw",
        "sh",
        "sw",
        "ws",
        "xs",
        "ys",
    )

    def x4(self):
        return (self.N, self.C, self.H, self.W)

    def w4(self):
        return (self.O, self.C // self.G, self.KH, self.KW)

    def y4(self):
        return (self.N, self.O, self.OH, self.OW)

    def valid(self):
        """Stride 1, no padding, every tap in range: the whole-row im2col/col2im kernels."""
        return (
            self.sh == self.sw == 1
            and self.ph == self.pw == 0
            and self.OH + self.dh * (self.KH - 1) == self.H
            and self.OW + self.dw * (self.KW - 1) == self.W
        )

    def vargs(self):
        return (self.KH, self.KW, self.dh, self.dw, self.OH, self.OW)

    def kg(self):
        """Rows of one group's column block: C/G * KH * KW."""
        return self.C // self.G * self.KH * self.KW

    def kargs(self):
        return (
            self.KH,
            self.KW,
            self.sh,
            self.sw,
            self.ph,
            self.pw,
            self.dh,
            self.dw,
            self.OH,
            self.OW,
        )


# -- geometry and argument checks (PyTorch's order) --------------------------------------------


def _tuple_arg(v, n, name):
    if isinstance(v, (list, tuple)):
        v = tuple(int(a) for a in v)
        if len(v) == 1 and n > 1:
            v = v * n
        if len(v) != n:
            raise RuntimeError(
                "expected %s to be a single integer value or a list of %d values "
                "to match the convolution dimensions, but got %s=%s" % (name, n, name, list(v))
            )
        return v
    return (int(v),) * n


def _conv_pads(padding, s, d, k, nd):
    """[(before, after)] per spatial dim from an int, a tuple, 'valid' or 'same'."""
    if not isinstance(padding, str):
        return [(v, v) for v in _tuple_arg(padding, nd, "padding")]
    if padding == "valid":
        return [(0, 0)] * nd
    if padding != "same":
        raise RuntimeError("Invalid padding string: '%s'" % padding)
    if any(v != 1 for v in s):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    pads = []
    for kk, dd in zip(k, d):
        total = dd * (kk - 1)
        pads.append((total // 2, total - total // 2))
    if any(dd % 2 == 1 and kk % 2 == 0 for kk, dd in zip(k, d)):
        # stacklevel: the warning names F.conv1d/conv2d, as before the split
        warnings.warn(
            "Using padding='same' with even kernel lengths and odd dilation may "
            "require a zero-padded copy of the input be created",
            UserWarning,
            stacklevel=7,
        )
    return pads


def _check_conv(x, w, b, s, pads, d, groups):
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v < 0 for pr in pads for v in pr):
        raise RuntimeError("negative padding is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    O, C = w.shape[0], x.shape[1]
    if O < groups:
        raise RuntimeError(
            "Given groups=%d, expected weight to be at least %d at dimension 0, but got weight "
            "of size %s instead" % (groups, groups, list(w.shape))
        )
    if O % groups != 0:
        raise RuntimeError(
            "Given groups=%d, expected weight to be divisible by %d at dimension 0, "
            "but got weight of size [%s] instead" % (groups, groups, list(w.shape))
        )
    if C != w.shape[1] * groups:
        raise RuntimeError(
            "Given groups=%d, weight of size %s, expected input%s to have %d "
            "channels, but got %d channels instead"
            % (groups, list(w.shape), list(x.shape), w.shape[1] * groups, C)
        )
    if b is not None and (b.ndim != 1 or b.shape[0] != O):
        raise RuntimeError(
            "Given weight of size %s, expected bias to be 1-dimensional with %d "
            "elements, but got bias of size %s instead" % (list(w.shape), O, list(b.shape))
        )


def _check_conv_dtypes(x, w, b):
    if w._dtype is not x._dtype:
        raise RuntimeError(
            "expected scalar type %s but found %s" % (x._dtype._legacy, w._dtype._legacy)
        )
    if b is not None and b._dtype is not x._dtype:
        raise RuntimeError(
            "Input type (%s) and bias type (%s) should be the same"
            % (x._dtype.c_name, b._dtype.c_name)
        )


def _conv_geometry(x, w, b, stride, padding, dilation, groups, nd):
    """Check the arguments of an ``nd``-d convolution and return its ``_ConvGeom``."""
    check_float(x, "conv%dd" % nd)
    if w.ndim != nd + 2:
        raise RuntimeError(
            "Expected %d-dimensional weight for %d-dimensional input %s, but got "
            "%d-dimensional weight of size %s instead"
            % (nd + 2, nd + 2, list(x.shape), w.ndim, list(w.shape))
        )
    s = _tuple_arg(stride, nd, "stride")
    d = _tuple_arg(dilation, nd, "dilation")
    k, sp = tuple(w.shape[2:]), tuple(x.shape[2:])
    pads = _conv_pads(padding, s, d, k, nd)
    _check_conv(x, w, b, s, pads, d, groups)
    padded = [n + pl + pr for n, (pl, pr) in zip(sp, pads)]
    eff = [dd * (kk - 1) + 1 for kk, dd in zip(k, d)]
    if any(pn < e for pn, e in zip(padded, eff)):
        raise RuntimeError(
            "Calculated padded input size per channel: (%s). Kernel size: (%s). "
            "Kernel size can't be greater than actual input size"
            % (" x ".join(map(str, padded)), " x ".join(map(str, eff)))
        )
    _check_conv_dtypes(x, w, b)
    out = [(pn - e) // ss + 1 for pn, e, ss in zip(padded, eff, s)]
    geo = _ConvGeom()
    geo.N, geo.C, geo.O, geo.G = x.shape[0], x.shape[1], w.shape[0], groups
    geo.xs, geo.ws, geo.ys = tuple(x.shape), tuple(w.shape), (x.shape[0], geo.O) + tuple(out)
    geo.dtype = x._dtype
    if nd == 1:  # a 1-D conv is a 2-D one with H = KH = OH = 1 (no stride, padding, dilation)
        sp, k, out, s, d = (1,) + sp, (1,) + k, [1] + out, (1,) + s, (1,) + d
        pads = [(0, 0)] + pads
    geo.H, geo.W = sp
    geo.KH, geo.KW = k
    geo.OH, geo.OW = out
    geo.sh, geo.sw = s
    geo.ph, geo.pw = pads[0][0], pads[1][0]
    geo.dh, geo.dw = d
    return geo


# -- the three partials as arrays --------------------------------------------------------------

# NOTE [conv GEMMs]: every GEMM is one per group over the whole batch: the columns of all images
# side by side, (C*KH*KW, N*OH*OW), against the weight, so BLAS sees a few large products
# instead of N small ones (per-image GEMMs were 10-20% slower for the CNN benchmark's convs).
# The (O, N*L) product is turned into (N, O, L) by a Numba pass that also adds the bias, and the
# incoming gradient is turned into (O, N*L) once for the input and weight gradients.
#
# NOTE [conv scratch]: the column buffer and the (O, N*L) products are temporaries; they live in
# per-thread scratch arrays reused from call to call (up to _SCRATCH_MAX bytes each).  Freshly
# allocated multi-megabyte arrays are returned to the OS by glibc and page-faulted back on every
# call, which cost more than the copies themselves here (docs/performance.md, "CNN step").  No
# scratch array is ever returned or stored: results are fresh arrays.

_SCRATCH_MAX = 32 << 20


class _Scratch(threading.local):
    def __init__(self):
        self.bufs = {}


_SCRATCH = _Scratch()


def _scratch(slot, shape, dtype, like=None):
    """An uninitialised C-contiguous ``shape`` array in reusable per-thread storage ``slot``
    (on ``like``'s device: CUDA temporaries are fresh device arrays)."""
    if type(like) is DeviceArray:
        return xp_of(like).empty(shape, dtype)
    n = 1
    for v in shape:
        n *= v
    nbytes = n * np.dtype(dtype).itemsize
    if nbytes > _SCRATCH_MAX:
        return np.empty(shape, dtype)
    buf = _SCRATCH.bufs.get(slot)
    if buf is None or buf.nbytes < nbytes:
        buf = _SCRATCH.bufs[slot] = np.empty(max(nbytes, 1 << 16), np.uint8)
    return buf[:nbytes].view(dtype).reshape(shape)


def _im2col(xa, geo, slot="cols"):
    """(C*KH*KW, N*OH*OW) columns of every image side by side (Numba), in scratch."""
    cols = _scratch(slot, (geo.C * geo.KH * geo.KW, geo.N * geo.OH * geo.OW), xa.dtype, xa)
    if cols.size == 0:
        pass
    elif geo.valid():
        kernel_for(xa, KC.im2col_valid_cpu)(xa, cols, *geo.vargs())
    else:
        kernel_for(xa, KC.im2col_cpu)(xa, cols, *geo.kargs())
    return cols


def _matmul(a, b, out):
    """``out[...] = a @ b`` (numpy's BLAS into scratch); on CUDA a fresh product (the tiled
    GEMM of ops/cuda/linalg.py)."""
    if type(a) is DeviceArray:
        from ..cuda.linalg import matmul  # lazy: the CUDA path loads on first use

        return matmul(a, b)
    np.matmul(a, b, out=out)
    return out


_NO_BIAS = {"f": np.empty(0, np.float32), "d": np.empty(0, np.float64)}
_NO_SUM = np.empty(0, np.float64)


def _conv_y_arr(xa, wa, geo, ba=None):
    """y = conv(x, w) (+ b): im2col (Numba), one GEMM per group (BLAS), then the (O, N, L)
    product written as (N, O, L) with the bias added (Numba)."""
    N, G, O, L, Kg = geo.N, geo.G, geo.O, geo.OH * geo.OW, geo.kg()
    cols = _im2col(xa, geo)
    yo = _scratch("prod", (G, O // G, N * L), xa.dtype, xa)
    yo = _matmul(wa.reshape(G, O // G, Kg), cols.reshape(G, Kg, N * L), yo)
    xp = xp_of(xa)
    y = xp.empty(geo.y4(), xa.dtype)
    y3 = y.reshape(N, O, L)
    swap = kernel_for(xa, KC.swap01_bias_cpu)
    if ba is None:
        nob = _NO_BIAS[xa.dtype.char] if xp is np else xp.empty(0, xa.dtype)
        swap(yo.reshape(O, N, L), nob, y3, False)
    else:
        swap(yo.reshape(O, N, L), ba, y3, True)
    return y


def _g_rows(ga, geo, gb=None):
    """y-like ``ga`` (N, O, L) as (G, O/G, N*L) rows (scratch): the GEMM operand of both
    gradients; with ``gb`` (float64, (O,)) the bias gradient is summed in the same pass."""
    N, G, O, L = geo.N, geo.G, geo.O, geo.OH * geo.OW
    gt = _scratch("grows", (O, N, L), ga.dtype, ga)
    rows = kernel_for(ga, KC.grad_rows_cpu)
    if gb is None:
        nos = _NO_SUM if type(ga) is np.ndarray else xp_of(ga).empty(0, np.float64)
        rows(ga.reshape(N, O, L), gt, nos, False)
    else:
        rows(ga.reshape(N, O, L), gt, gb, True)
    return gt.reshape(G, O // G, N * L)


def _conv_x_arr(ga, wa, geo, gt=None):
    """dT/dx given y-like ``ga``: one GEMM per group into the column buffer, then col2im."""
    G, O, Kg, NL = geo.G, geo.O, geo.kg(), geo.N * geo.OH * geo.OW
    if gt is None:
        gt = _g_rows(ga, geo)
    cols = _scratch("cols", (G * Kg, NL), ga.dtype, ga)
    cols = _matmul(wa.reshape(G, O // G, Kg).transpose(0, 2, 1), gt, cols.reshape(G, Kg, NL))
    cols = cols.reshape(G * Kg, NL)
    gx = xp_of(ga).empty(geo.x4(), ga.dtype)
    if gx.size == 0:
        pass
    elif geo.valid():
        kernel_for(ga, KC.col2im_valid_cpu)(cols, gx, *geo.vargs())
    else:
        kernel_for(ga, KC.col2im_cpu)(cols, gx, *geo.kargs())
    return gx


def _conv_w_arr(xa, ga, geo, gt=None):
    """dT/dw given x and y-like ``ga``: im2col, then one GEMM per group over the batch."""
    G, Kg, NL = geo.G, geo.kg(), geo.N * geo.OH * geo.OW
    if NL == 0:
        return xp_of(xa).zeros(geo.w4(), xa.dtype)
    if gt is None:
        gt = _g_rows(ga, geo)
    cols = _im2col(xa, geo)
    if type(xa) is DeviceArray:
        from ..cuda.linalg import matmul  # lazy: the CUDA path loads on first use

        gw = matmul(gt, cols.reshape(G, Kg, NL).transpose(0, 2, 1))
    else:
        gw = np.matmul(gt, cols.reshape(G, Kg, NL).transpose(0, 2, 1))
    return gw.reshape(geo.w4())


# -- the partials as ops: derivatives of any order run the kernels above -----------------------


def _partial_vjp(node, grads):
    kind, geo = node.attrs
    h = grads[0]
    a, b = node.unpack("a"), node.unpack("b")
    na, nb = needs(node, 0), needs(node, 1)
    if kind == "y":  # a = x, b = w
        return (_partial("x", h, b, geo) if na else None, _partial("w", a, h, geo) if nb else None)
    if kind == "x":  # a = y-like, b = w
        return (_partial("y", h, b, geo) if na else None, _partial("w", h, a, geo) if nb else None)
    # kind == "w": a = x, b = y-like
    return (_partial("x", b, h, geo) if na else None, _partial("y", a, h, geo) if nb else None)


_PARTIAL_SHAPE = {"y": "ys", "x": "xs", "w": "ws"}


@internal_op(
    "conv.partial",
    "nn",
    node={
        "y": "ConvolutionBackward0",
        "x": "ConvolutionBackwardBackward0",
        "w": "ConvolutionBackwardBackward0",
    },
    vjp=_partial_vjp,
    args=("a", "b"),
    saves=("a", "b"),
    kernels=CPU,
)
def _partial(kind, a, b, geo):
    """One partial of T: 'y' = conv(a=x, b=w); 'x' = dT/dx (a=y-like, b=w);
    'w' = dT/dw (a=x, b=y-like).  Each is bilinear, and its vjp is two other partials."""
    cd = compute_dtype(geo.dtype)
    if kind == "y":
        arr = _conv_y_arr(carray(a, cd).reshape(geo.x4()), carray(b, cd).reshape(geo.w4()), geo)
    elif kind == "x":
        arr = _conv_x_arr(carray(a, cd).reshape(geo.y4()), carray(b, cd).reshape(geo.w4()), geo)
    else:
        arr = _conv_w_arr(carray(a, cd).reshape(geo.x4()), carray(b, cd).reshape(geo.y4()), geo)
    arr = arr.reshape(getattr(geo, _PARTIAL_SHAPE[kind])).astype(geo.dtype.np, copy=False)
    return _partial.op.record(arr, (a, b), overload=kind, attrs=(kind, geo))


def _conv_vjp(node, grads):
    g = grads[0]
    geo = node.attrs
    x, w = node.unpack("x"), node.unpack("w")
    nx, nw, nb = needs(node, 0), needs(node, 1), needs(node, 2)
    if not STATE.enabled:
        return _conv_vjp_arrays(g, x, w, geo, nx, nw, nb)
    gx = _partial("x", g, w, geo) if nx else None
    gw = _partial("w", x, g, geo) if nw else None
    gb = g.sum((0, 2, 3) if len(geo.ys) == 4 else (0, 2)) if nb else None
    return gx, gw, gb


def _conv_vjp_arrays(g, x, w, geo, nx, nw, nb):
    """The three gradients without a graph (create_graph=False): the gradient rows are made
    once for all three (NOTE [conv GEMMs]); the same values as the partial ops."""
    cd = compute_dtype(g._dtype)
    ga = carray(g, cd)
    out_dt = g._data.dtype
    xp = xp_of(ga)
    sums = xp.zeros(geo.O, np.float64) if nb else None
    gt = None
    if nx or nw or (nb and xp is not np):  # (CUDA: the bias sums come with the rows)
        gt = _g_rows(ga, geo, sums)
    elif nb and ga.size:  # the bias alone: no rows needed, the sums are
        sums = ga.reshape(geo.N, geo.O, -1).sum((0, 2), dtype=np.float64)
    gx = gw = gb = None
    if nw:  # before dx: both use the column scratch
        arr = _conv_w_arr(carray(x, cd).reshape(geo.x4()), ga, geo, gt)
        gw = Tensor._make(arr.reshape(geo.ws).astype(out_dt, copy=False))
    if nx:
        arr = _conv_x_arr(ga, carray(w, cd).reshape(geo.w4()), geo, gt)
        gx = Tensor._make(arr.reshape(geo.xs).astype(out_dt, copy=False))
    if nb:
        gb = Tensor._make(sums.astype(out_dt))
    return gx, gw, gb


def _conv(x, w, b, stride, padding, dilation, groups, nd, opdef):
    geo = _conv_geometry(x, w, b, stride, padding, dilation, groups, nd)
    on_cuda(x, w, b)
    cd = compute_dtype(x._dtype)
    ba = None if b is None else carray(b, cd)
    y = _conv_y_arr(carray(x, cd).reshape(geo.x4()), carray(w, cd).reshape(geo.w4()), geo, ba)
    y = y.reshape(geo.ys).astype(x._dtype.np, copy=False)
    return opdef.record(y, (x, w, b), attrs=geo)


_DECL = {
    "node": "ConvolutionBackward0",
    "vjp": _conv_vjp,
    "args": ("x", "w", "b"),
    "saves": ("x", "w"),
    "kernels": CPU,
    "double": False,  # NOTE [backward nodes]
}


@op("conv1d", "nn", **_DECL)
def conv1d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Batched (N, C, L) input; F.conv1d handles the unbatched form."""
    return _conv(x, w, b, stride, padding, dilation, groups, 1, conv1d.op)


@op("conv2d", "nn", **_DECL)
def conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Batched (N, C, H, W) input; F.conv2d handles the unbatched form."""
    return _conv(x, w, b, stride, padding, dilation, groups, 2, conv2d.op)


# -- transposed convolution: the adjoint of conv2d in its input --------------------------------


def _conv_transpose_geometry(x, w, b, stride, padding, output_padding, groups, dilation):
    """Check ``conv_transpose2d(x, w, b, ...)`` (PyTorch's checks) and return the ``_ConvGeom``
    of the convolution it is the input-adjoint of: that conv maps the (N, C_out, H_out, W_out)
    result to x's (N, C_in, H, W), with the transposed weight (C_in, C_out / groups, kh, kw)
    as its ordinary weight."""
    nd = w.ndim - 2
    if nd != 2:
        raise RuntimeError(
            "expected stride to be a single integer value or a list of %d values to match the "
            "convolution dimensions, but got stride=%s"
            % (nd, list(stride) if isinstance(stride, (list, tuple)) else [stride] * 2)
        )
    s = _tuple_arg(stride, 2, "stride")
    p = _tuple_arg(padding, 2, "padding")
    op_ = _tuple_arg(output_padding, 2, "output_padding")
    d = _tuple_arg(dilation, 2, "dilation")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(v < 0 for v in p):
        raise RuntimeError("negative padding is not supported")
    if any(v < 0 for v in op_):
        raise RuntimeError("negative output_padding is not supported")
    if any(v <= 0 for v in s):
        raise RuntimeError("non-positive stride is not supported")
    if any(v <= 0 for v in d):
        raise RuntimeError("dilation should be greater than zero")
    if any(o >= ss and o >= dd for o, ss, dd in zip(op_, s, d)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            "output_padding_height: %d output_padding_width: %d stride_height: %d "
            "stride_width: %d dilation_height: %d dilation_width: %d" % (op_ + s + d)
        )
    ws = list(w.shape)
    if ws[0] % groups != 0:
        raise RuntimeError(
            "Given groups=%d, expected weight to be divisible by %d at dimension 0, but got "
            "weight of size [%s] instead" % (groups, groups, ws)
        )
    if x.shape[1] != ws[0]:
        raise RuntimeError(
            "Given transposed=1, weight of size %s, expected input%s to have %d channels, but "
            "got %d channels instead" % (ws, list(x.shape), ws[0], x.shape[1])
        )
    C_out = ws[1] * groups
    if b is not None and (b.ndim != 1 or b.shape[0] != C_out):
        raise RuntimeError(
            "Given transposed=1, weight of size %s, expected bias to be 1-dimensional with %d "
            "elements, but got bias of size %s instead" % (ws, C_out, list(b.shape))
        )
    check_float(x, "slow_conv_transpose2d_out_cpu")
    for name, t in (("weight", w), ("bias", b)):
        if t is None or t._dtype is x._dtype:
            continue
        if x._dtype.name == "float32":  # PyTorch's oneDNN path checks first
            raise RuntimeError(
                "Input type (torch.%sTensor) and %s type (torch.%sTensor) should be the same or "
                "input should be a MKLDNN tensor and %s is a dense tensor"
                % (x._dtype._legacy, name, t._dtype._legacy, name)
            )
        raise RuntimeError(
            "expected scalar type %s but found %s" % (x._dtype._legacy, t._dtype._legacy)
        )
    H, W = x.shape[2:]
    KH, KW = ws[2:]
    OH = (H - 1) * s[0] - 2 * p[0] + d[0] * (KH - 1) + op_[0] + 1
    OW = (W - 1) * s[1] - 2 * p[1] + d[1] * (KW - 1) + op_[1] + 1
    if OH < 1 or OW < 1:
        raise RuntimeError(
            "Given input size per channel: (%d x %d). Calculated output size per channel: "
            "(%d x %d). Output size is too small" % (H, W, OH, OW)
        )
    geo = _ConvGeom()
    geo.N, geo.C, geo.O, geo.G = x.shape[0], C_out, ws[0], groups
    geo.xs, geo.ws, geo.ys = (x.shape[0], C_out, OH, OW), tuple(ws), tuple(x.shape)
    geo.dtype = x._dtype
    geo.H, geo.W, geo.KH, geo.KW = OH, OW, KH, KW
    geo.OH, geo.OW = H, W  # the conv's output: the transposed conv's input
    geo.sh, geo.sw = s
    geo.ph, geo.pw = p
    geo.dh, geo.dw = d
    return geo


def _conv_transpose_vjp(node, grads):
    g = grads[0]
    geo = node.attrs
    x, w = node.unpack("x"), node.unpack("w")
    gx = _partial("y", g, w, geo) if needs(node, 0) else None  # conv(g, w)
    gw = _partial("w", g, x, geo) if needs(node, 1) else None
    gb = None
    if needs(node, 2):
        if STATE.enabled:
            gb = g.sum((0, 2, 3))
        else:
            ga = carray(g, compute_dtype(g._dtype)).reshape(geo.N, geo.C, geo.H * geo.W)
            if type(ga) is DeviceArray:  # float64 sums of the gradient rows (grad_rows)
                sums = xp_of(ga).zeros(geo.C, np.float64)
                rows = xp_of(ga).empty((geo.C, geo.N, geo.H * geo.W), ga.dtype)
                kernel_for(ga, KC.grad_rows_cpu)(ga, rows, sums, True)
                gb = Tensor._make(sums.astype(g._data.dtype))
            else:
                gb = Tensor._make(ga.sum(2).sum(0).astype(g._data.dtype, copy=False))
    return gx, gw, gb


@op(
    "conv_transpose2d",
    "nn",
    node="ConvolutionBackward0",
    vjp=_conv_transpose_vjp,
    args=("x", "w", "b"),
    saves=("x", "w"),
    kernels=CPU,
    double=False,  # NOTE [backward nodes]
)
def conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Batched (N, C_in, H, W) input; F.conv_transpose2d handles the unbatched form.  The
    result is the input-gradient of a conv2d (col2im of the GEMM columns), so its derivatives
    are conv2d's partials again."""
    geo = _conv_transpose_geometry(x, w, b, stride, padding, output_padding, groups, dilation)
    on_cuda(x, w, b)
    cd = compute_dtype(x._dtype)
    y = _conv_x_arr(carray(x, cd).reshape(geo.y4()), carray(w, cd).reshape(geo.w4()), geo)
    if b is not None:
        y += carray(b, cd).reshape(1, geo.C, 1, 1)
    y = y.reshape(geo.xs).astype(x._dtype.np, copy=False)
    return conv_transpose2d.op.record(y, (x, w, b), attrs=geo)
