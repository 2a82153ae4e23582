"""The CUDA side of the indexing ops (ops/indexing.py, ops/index_ops.py): numpy's fancy
indexing, ``take_along_axis``, ``nonzero`` and friends as flat positions computed on the device
(kernels/cuda/gatherlin.py), then one gather or scatter at them (kernels/cuda/index.py).
Indices reach these helpers validated by the ops (on the device, with the CPU's messages)."""

import math

import numpy as np

from ...kernels.cuda import gatherlin as G, index as KI
from ...kernels.cuda.array import DeviceArray, c_strides, empty, from_host, wrap
from ...kernels.cuda.elementwise import assign

__all__ = [
    "dev",
    "flat",
    "check_index",
    "first_bad",
    "count_nonzero",
    "adv_lin",
    "take_flat",
    "scatter_add",
    "scatter_into",
    "nonzero",
    "mask_lin",
    "dim_lin",
    "select_lin",
    "masked_lin",
]


def dev(a):
    """An index array on the device (host index arrays -- lists, CPU tensors -- are copied,
    as PyTorch accepts CPU indices for a CUDA tensor)."""
    return a if type(a) is DeviceArray else from_host(np.asarray(a))


def flat(a, dtype=None):
    """The 1-D dense numba device array of ``a``'s elements (cast to ``dtype``)."""
    if dtype is not None and a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    return a.dense().reshape(a.size)


def check_index(i, n, dim, exc=IndexError, negative=True):
    KI.check_index_device(flat(i), n, dim, exc, negative)


def first_bad(i, lo, hi):
    return KI.first_bad_device(flat(i), lo, hi)


def count_nonzero(a):
    return G.count_nonzero(flat(a))


def mask_lin(m):
    """Flat positions (C order) of the true elements of the device mask ``m`` (1-D)."""
    return G.compact(flat(m))


def nonzero(a):
    """(ndim, count) int64 coordinates of the nonzero elements of ``a`` (C order)."""
    return wrap(G.coords(mask_lin(a), a.shape))


def _rows_of(m, k):
    c = G.coords(mask_lin(m), m.shape)
    return [wrap(c[j]) for j in range(k)]


def adv_lin(shape, arrs):
    """Flat positions in a C-order array of ``shape`` read by numpy's ``a[arrs]`` (index arrays
    validated; masks become their nonzero coordinates, integers 0-d index arrays), shaped as
    the result: an int64 ``DeviceArray``."""
    comps = []  # ("n",) new axis, ("s", slice), ("a", DeviceArray int index)
    for i in arrs:
        if i is None:
            comps.append(("n", None))
        elif i is Ellipsis:
            comps.append(("e", None))
        elif isinstance(i, slice):
            comps.append(("s", i))
        elif isinstance(i, (int, np.integer)):
            comps.append(("a", int(i)))
        else:
            a = dev(i)
            if a.dtype == np.bool_:
                if a.ndim == 0:  # a 0-d mask: a new axis indexed by [0] or []
                    comps.append(("n", None))
                    comps.append(("z", G.count_nonzero(flat(a))))
                else:
                    comps.extend(("a", r) for r in _rows_of(a, a.ndim))
            else:
                comps.append(("a", a))
    used = sum(1 for k, _ in comps if k in ("s", "a"))
    if any(k == "e" for k, _ in comps):
        e = next(j for j, (k, _) in enumerate(comps) if k == "e")
        comps[e : e + 1] = [("s", slice(None))] * (len(shape) - used)
    else:
        comps += [("s", slice(None))] * (len(shape) - used)
    cst = c_strides(shape)
    base = 0
    d = 0
    parts = []  # (kind, size, coef) per component; kind "b" basic, "x" advanced
    adv = []  # (array or int, size, stride)
    for k, v in comps:
        if k == "n":
            parts.append(("b", 1, 0))
        elif k == "z":  # the 0-d mask's index on the new axis just added
            parts.pop()
            parts.append(("x", None, None))
            adv.append((np.zeros(v, np.int64), 1, 0))
        elif k == "s":
            start, stop, step = v.indices(shape[d])
            n = len(range(start, stop, step))
            if n:
                base += start * cst[d]
            parts.append(("b", n, cst[d] * step))
            d += 1
        else:
            parts.append(("x", None, None))
            adv.append((v, shape[d], cst[d]))
            d += 1
    b = np.broadcast_shapes(*[np.shape(a) if not isinstance(a, DeviceArray) else a.shape
                              for a, _, _ in adv])  # fmt: skip
    xs = [j for j, p in enumerate(parts) if p[0] == "x"]
    adjacent = xs == list(range(xs[0], xs[0] + len(xs)))
    basic = [(p[1], p[2]) for p in parts if p[0] == "b"]
    bst = c_strides(b)
    bdims = [(n, 0, s) for n, s in zip(b, bst)]
    if adjacent:
        before = [p for p in parts[: xs[0]]]
        after = [p for p in parts[xs[-1] + 1 :]]
        dims = [(n, c, 0) for _, n, c in before] + bdims + [(n, c, 0) for _, n, c in after]
    else:
        dims = bdims + [(n, c, 0) for n, c in basic]
    rshape = tuple(n for n, _, _ in dims)
    nb = math.prod(b)
    idx = empty((len(adv), max(nb, 1)), np.int64)
    for k, (a, _, _) in enumerate(adv):
        row = DeviceArray(idx.buf, b, c_strides(b), k * max(nb, 1))
        if isinstance(a, DeviceArray):
            assign(row, a)
        elif isinstance(a, int):
            assign(row, a)
        elif a.size:
            assign(row, from_host(a))
    lin = G.adv_lin(
        rshape,
        [c for _, c, _ in dims],
        [s for _, _, s in dims],
        base,
        idx.dense(),
        [n for _, n, _ in adv],
        [s for _, _, s in adv],
    )
    return wrap(lin.reshape(rshape) if rshape else lin.reshape(1)).reshape(rshape)


def take_flat(src, lin):
    """``src.reshape(-1)[lin]`` (``lin`` a validated int64 ``DeviceArray``), shaped as ``lin``."""
    out = empty(lin.shape, src.dtype)
    KI.gather_flat_cuda(flat(src), flat(lin), flat(out))
    return out


def scatter_add(shape, dtype, lin, src):
    """zeros(shape) with ``src`` (broadcast to ``lin``'s shape) added at flat positions."""
    s = src.broadcast_to(lin.shape).astype(dtype)
    return wrap(KI.scatter_add_device(tuple(shape), np.dtype(dtype), flat(lin), flat(s))).reshape(
        shape
    )


def scatter_into(out, lin, src, add):
    """``out.reshape(-1)[lin] (+)= src`` into the C-contiguous ``out`` (``src`` a
    ``DeviceArray`` broadcast to ``lin``'s shape, or a scalar)."""
    if isinstance(src, DeviceArray):
        s = src.broadcast_to(lin.shape).astype(out.dtype)
    else:
        s = empty(lin.shape, out.dtype)
        assign(s, src)
    KI.scatter_flat_device(flat(out), flat(lin), flat(s), add)
    return out


def dim_lin(index, shape, d):
    """Flat positions in a C-order array of ``shape`` that ``gather(d, index)`` reads (the
    validated ``index`` of ``shape``'s rank), shaped as ``index``."""
    ishape = index.shape if index.ndim else (1,)
    lin = G.dim_lin(flat(index, np.int64), ishape, tuple(shape), d)
    return wrap(lin).reshape(index.shape)


def select_lin(idx, shape, d):
    """Flat positions of ``take(a, idx, axis=d)`` for a C-order ``a`` of ``shape`` (``idx``
    1-D, validated; negative entries wrapped), shaped as the result."""
    outer = math.prod(shape[:d])
    inner = math.prod(shape[d + 1 :])
    lin = G.select_lin(flat(idx, np.int64), outer, shape[d], inner)
    return wrap(lin).reshape(tuple(shape[:d]) + (idx.size,) + tuple(shape[d + 1 :]))


def masked_lin(mask, shape):
    """Flat positions (C order) in ``shape`` of the true elements of ``mask`` broadcast to it."""
    m = mask.broadcast_to(shape).contiguous()
    lin = mask_lin(m)
    return wrap(lin) if lin.shape[0] else empty((0,), np.int64)
