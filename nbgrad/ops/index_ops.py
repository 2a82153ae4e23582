"""Second-tier indexing ops: select, tile, repeat_interleave, argwhere, index_add, index_copy,
index_fill, scatter_reduce, masked_scatter.

Writes at user indices run Numba kernels of kernels/cpu/index.py (``index_put_dim_cpu`` for
index_add/index_copy, ``scatter_reduce_cpu``) that check every index again before writing
(NOTE [user indices]); before them each index is validated with PyTorch's exception type and
message, and again in backward, where the index is a version-checked saved tensor read at its
current value and passed to ops that validate it (index_select, index_fill, gather: NOTE
[saved indices] in ops/indexing.py).
"""

import numpy as np

from .. import dtypes as _dt
from .._devarray import DeviceArray
from .._tensor import Tensor, _wrap_dim
from ..creation import zeros
from ..grad_mode import STATE
from ..kernels.cpu import index as K
from .dispatch import broadcast_error
from .indexing import (
    _basic_vjp,
    _check_gather_index,
    _check_index_tensor,
    _nd,
    _read_index,
    _scatter_lin,
    basic_index,
    gather,
    index_select,
    masked_select,
    nonzero,
    scatter,
    scatter_add,
)
from .pointwise_fns import where
from .registry import FUNCTION, INPLACE, LINEAR, METHOD, OUT, op, result
from .shape import cat
from .sorting import unique

FM = (FUNCTION, METHOD)
FMI = (FUNCTION, METHOD, INPLACE)
FMIO = (FUNCTION, METHOD, INPLACE, OUT)
CPU = {"cpu": K}

_make = Tensor._make


def _cu():
    from .cuda import index  # lazy: the CUDA path loads on first use

    return index


def _xp(a):
    from .cuda import xp_of  # lazy: the CUDA path loads on first use

    return xp_of(a)


def _same_device(*tensors):
    """PyTorch's same-device error when any operand is on CUDA and another is not."""
    if any(type(getattr(t, "_data", None)) is DeviceArray for t in tensors):
        from .cuda import device_of  # lazy: the CUDA path loads on first use

        device_of(*tensors)
        return True
    return False


def _first_bad(idx, lo, hi):
    return (
        K.first_bad(idx, lo, hi) if type(idx) is not DeviceArray else _cu().first_bad(idx, lo, hi)
    )


# -- select / tile / repeat_interleave / argwhere ---------------------------------------------


@op("select", "indexing", node="SelectBackward0", vjp=_basic_vjp, variants=FM, jvp=LINEAR)
def select(input, dim, index):
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap_dim(dim, len(shape))
    i = int(index)
    n = shape[d]
    if not -n <= i < n:
        raise IndexError(
            "select(): index %d out of range for tensor of size %s at dimension %d"
            % (i, list(shape), d)
        )
    return basic_index(input, (slice(None),) * d + (i % n,), "SelectBackward0")


@op("tile", "shape", variants=FM)
def tile(input, *dims):
    """PyTorch's tile: ``repeat`` with the dims padded by ones in front (RepeatBackward0)."""
    if len(dims) == 1 and isinstance(dims[0], (tuple, list, Tensor)):
        dims = tuple(dims[0])
    dims = tuple(int(d) for d in dims)
    nd = input._data.ndim
    if len(dims) < nd:
        dims = (1,) * (nd - len(dims)) + dims
    if not dims:  # a 0-d tensor tiled by (): a copy
        return input.repeat(())
    return input.repeat(*dims)


def _repeat_index(repeats, output_size=None):
    """``torch.repeat_interleave(repeats)``: index ``i`` repeated ``repeats[i]`` times."""
    if repeats._data.ndim != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    if repeats._dtype not in (_dt.int64, _dt.int32):
        raise NotImplementedError(
            "\"repeat_interleave_cpu\" not implemented for '%s'" % repeats._dtype._legacy
        )
    if type(repeats._data) is DeviceArray:
        from ..kernels.cuda import gatherlin  # lazy: the CUDA path loads on first use
        from ..kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use

        r = _cu().flat(repeats._data, np.int64)
        if _cu().first_bad(repeats._data, 0, 2**63 - 1) is not None:
            raise RuntimeError("repeats can not be negative")
        idx = gatherlin.repeat_index(r, repeats._data.dtype)
        if output_size is not None and int(output_size) != idx.shape[0]:
            raise RuntimeError("allocated size does not match required size")
        return _make(wrap(idx))
    r = repeats._data.astype(np.int64, copy=False)
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    total = int(r.sum())
    if output_size is not None and int(output_size) != total:
        raise RuntimeError("allocated size does not match required size")
    return _make(np.repeat(np.arange(r.size, dtype=repeats._data.dtype), r))


@op("repeat_interleave", "indexing", variants=FM)
def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):
    if repeats is None:  # torch.repeat_interleave(repeats)
        return _repeat_index(input, output_size)
    x = input if dim is not None else input.flatten()
    if isinstance(repeats, Tensor):  # IndexSelectBackward0, as PyTorch
        if repeats._dtype not in (_dt.int64, _dt.int32):
            raise NotImplementedError(
                "\"repeat_interleave_cpu\" not implemented for '%s'" % repeats._dtype._legacy
            )
        d = 0 if dim is None else dim
        n = x._data.shape[_wrap_dim(d, x._data.ndim)] if x._data.ndim else 1
        if repeats._data.ndim == 0 or repeats._data.shape == (1,):
            repeats = _make(
                _xp(repeats._data).ascontiguousarray(
                    repeats._data.reshape(1).broadcast_to((n,))
                    if type(repeats._data) is DeviceArray
                    else np.broadcast_to(repeats._data.reshape(1), (n,))
                )
            )
        elif repeats._data.ndim == 1:
            if repeats._data.shape[0] != n:
                raise RuntimeError(
                    "repeats must have the same size as input along dim, but got repeats.size(0)"
                    " = %d and input.size(%d) = %d" % (repeats._data.shape[0], d, n)
                )
        else:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        return index_select(x, d, _repeat_index(repeats, output_size))
    r = int(repeats)
    d = _wrap_dim(0 if dim is None else dim, input._data.ndim)
    if r < 0:
        raise RuntimeError("Repeats must be non-negative")
    # PyTorch's int overload: unsqueeze, expand, a contiguous clone, flatten (ViewBackward0)
    u = x.unsqueeze(d + 1)
    size = list(u.shape)
    size[d + 1] = r
    if output_size is not None and int(output_size) != r * size[d]:
        raise RuntimeError(
            "repeat_interleave: Invalid output_size, expected %d but got %d"
            % (r * size[d], int(output_size))
        )
    e = u.expand(*size)
    c = e.contiguous()  # PyTorch's clone(MemoryFormat::Contiguous): always a copy
    if c is e:
        c = e.clone()
    return c.flatten(d, d + 1)


@op("argwhere", "indexing", variants=FM)
def argwhere(input):
    if input._data.ndim == 0:  # (1, 0) for a nonzero scalar, (0, 0) for zero
        a = input._data
        if type(a) is DeviceArray:
            from .cuda import xp  # lazy: the CUDA path loads on first use

            return _make(xp.zeros((int(bool(a.to_host())), 0), np.int64))
        return _make(np.zeros((int(bool(a)), 0), np.int64))
    return nonzero(input)


# -- index_add / index_copy / index_fill ------------------------------------------------------


def _index_add_bounds(idx, shape, d, fn_index_dtype):
    """PyTorch's index_add_ errors for an out-of-range index: its scatter_add_ fast path
    (RuntimeError with the position) for int64 indices along the first or last dim of a tensor
    of 2+ dims, its own check (IndexError) otherwise."""
    n = _nd(shape)[d]
    bad = _first_bad(idx, 0, n)
    if bad is not None:
        if len(shape) > 1 and d in (0, len(shape) - 1) and fn_index_dtype == np.int64:
            raise RuntimeError(
                "index %d is out of bounds for dimension %d with size %d" % (bad, d, n)
            )
        raise IndexError("index out of range in self")


def _source_grad(g, d, index, sshape, alpha=1):
    """``grad.index_select(dim, index).expand_as(source)`` (a 0-d source: the one element)."""
    if not sshape:
        gs = index_select(g, d, index.reshape(-1)).reshape(())
    else:
        gs = index_select(g, d, index.reshape(-1))
        if tuple(gs.shape) != sshape:
            gs = gs.expand(*sshape)
    return gs if alpha == 1 else gs * alpha


def _saved_index(node, ishape):
    """The saved index at its current value (version-checked; shape and dtype as at the
    forward).  The ops the backward runs with it (index_select, index_fill, gather) validate
    it again before touching memory, with the errors PyTorch's backward gives."""
    return _make(_read_index(node, "index", ishape))


def _index_add_vjp(node, grads):
    d, alpha, shape, sshape, ishape = node.attrs
    g = grads[0]
    gself = g if node.next_functions[0][0] is not None else None
    gsrc = None
    if node.next_functions[1][0] is not None:
        index = _saved_index(node, ishape)
        gsrc = _source_grad(g, d, index, sshape, alpha)
    return (gself, gsrc)


def _vector_index(index, fn, dim_error):
    if not isinstance(index, Tensor):
        raise TypeError(
            "%s(): argument 'index' must be Tensor, not %s" % (fn, type(index).__name__)
        )
    if index._data.ndim > 1:
        raise dim_error
    return index._data.reshape(-1)


@op(
    "index_add",
    "indexing",
    node="IndexAddBackward0",
    vjp=_index_add_vjp,
    variants=FMIO,
    kernels=CPU,
)
def index_add(input, dim, index, source, *, alpha=1):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    if isinstance(index, Tensor) and index._data.ndim > 1:
        raise IndexError(
            "index_add_(): Index is supposed to be a vector, but got dim: %d with type: %s and "
            "size: %s" % (index._data.ndim, index._dtype._legacy, list(index._data.shape))
        )
    if not isinstance(index, Tensor) or index._dtype not in (_dt.int64, _dt.int32):
        raise RuntimeError(
            "index_add_(): Expected dtype int32/int64 for index but got: %s"
            % getattr(getattr(index, "_dtype", None), "_legacy", type(index).__name__)
        )
    idx = index._data.reshape(-1)
    if source._dtype is not input._dtype:
        raise RuntimeError(
            "index_add_(): self (%s) and source (%s) must have the same scalar type"
            % (input._dtype._legacy, source._dtype._legacy)
        )
    sshape = source._data.shape
    if not (d == 0 or d < len(sshape)):
        raise RuntimeError(
            "index_add_(): Indexing dim %d is out of bounds of the source tensor with dim %d"
            % (d, len(sshape))
        )
    ns = sshape[d] if sshape else 1
    if idx.size != ns:
        raise RuntimeError(
            "index_add_(): Number of indices (%d) should be equal to source.size(dim): (%d), "
            "for dim: %d" % (idx.size, ns, d)
        )
    a, b = list(shape), list(sshape)
    if a and b:
        del a[d], b[d]
    if a != b:
        raise RuntimeError(
            "source tensor shape must match self tensor shape, excluding the specified "
            "dimension. Got self.shape = %s source.shape = %s" % (list(shape), list(sshape))
        )
    cuda = _same_device(input, index, source)
    _index_add_bounds(idx, shape, d, idx.dtype)
    out = input._data.copy()
    src = source._data
    if alpha != 1:
        # PyTorch casts alpha to the tensor's type (an integer tensor takes int(alpha))
        al = input._data.dtype.type(alpha) if input._dtype.is_inexact else int(alpha)
        src = src * (al.item() if cuda and hasattr(al, "item") else al)
    if cuda:
        _index_put_dim_cuda(out, d, idx, src, True)
    else:
        K.index_put_dim(out, d, idx, src, True)
    return index_add.op.record(
        out,
        (input, source),
        attrs=(d, alpha, shape, sshape, index._data.shape),
        saved={"index": index},
    )


def _index_put_dim_cuda(out, d, idx, src, accumulate):
    from ..kernels.cuda.index import index_put_dim_device  # lazy: the CUDA path

    cu = _cu()
    s = src.astype(out.dtype) if src.dtype != out.dtype else src.contiguous()
    index_put_dim_device(out.dense(), d, cu.flat(idx, np.int64), s.dense(), accumulate)


def _index_copy_bounds(idx, shape, d, dtype=None):
    n = _nd(shape)[d]
    bad = _first_bad(idx, 0, n)
    if bad is not None:
        raise IndexError(
            "index_copy_(): index %d is out of bounds for dimension %d with size %d" % (bad, d, n)
        )


def _index_copy_vjp(node, grads):
    d, shape, sshape, ishape = node.attrs
    g = grads[0]
    index = _saved_index(node, ishape)
    gself = gsrc = None
    if node.next_functions[0][0] is not None:
        gself = index_fill(g, d, index, 0)
    if node.next_functions[1][0] is not None:
        gsrc = _source_grad(g, d, index, sshape)
    return (gself, gsrc)


@op(
    "index_copy",
    "indexing",
    node="IndexCopyBackward0",
    vjp=_index_copy_vjp,
    variants=FMIO,
    kernels=CPU,
)
def index_copy(input, dim, index, source):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    if isinstance(index, Tensor) and index._data.ndim >= 2:
        raise IndexError(
            "index_copy_(): Index should have dimension 1 or 0 (got %d)" % index._data.ndim
        )
    sshape = source._data.shape
    nidx = index._data.size if isinstance(index, Tensor) else 0
    if not sshape and nidx != 1:
        raise IndexError(
            "index_copy_(): When source is scalar, index should have one element (got %d)" % nidx
        )
    if sshape and shape and len(sshape) != len(shape):
        raise IndexError(
            "index_copy_(): When source and destination are not scalars, their dimensionality "
            "must match. Source dimensionality (%d), destination dimensionality (%d)"
            % (len(sshape), len(shape))
        )
    if not isinstance(index, Tensor) or index._dtype is not _dt.int64:
        raise RuntimeError(
            "index_copy_(): Expected a long tensor for index, but got %s"
            % getattr(getattr(index, "_dtype", None), "_legacy", type(index).__name__)
        )
    if source._dtype is not input._dtype:
        raise RuntimeError(
            "index_copy_(): self and source expected to have the same dtype, but got (self) %s "
            "and (source) %s" % (input._dtype._legacy, source._dtype._legacy)
        )
    a, b = list(shape), list(sshape)
    if a:
        del a[d]
    if b:
        del b[d]
    if a != b:
        raise RuntimeError(
            "index_copy_(): Source/destination tensor must have same slice shapes. Destination "
            "slice shape: %s at dimension %d and source slice shape: %s at dimension 0."
            % (" ".join(map(str, a)), d, " ".join(map(str, b)))
        )
    if sshape and nidx != sshape[d]:
        raise IndexError(
            "index_copy_(): Number of indices (%d) should be equal to source.size(dim) (%d)"
            % (nidx, sshape[d])
        )
    idx = index._data.reshape(-1)
    cuda = _same_device(input, index, source)
    _index_copy_bounds(idx, shape, d)
    out = input._data.copy()
    if cuda:
        _index_put_dim_cuda(out, d, idx, source._data, False)
    else:
        K.index_put_dim(out, d, idx, source._data, False)
    return index_copy.op.record(
        out,
        (input, source),
        attrs=(d, shape, sshape, index._data.shape),
        saved={"index": index},
    )


def _index_fill_bounds(idx, shape, d, dtype=None):
    n = _nd(shape)[d]
    bad = _first_bad(idx, -n, n)  # index_fill wraps negative indices
    if bad is not None:
        raise IndexError("index %d is out of bounds for dimension %d with size %d" % (bad, d, n))


def _index_fill_vjp(node, grads):
    d, shape, ishape = node.attrs
    g = grads[0]
    index = _saved_index(node, ishape)
    gself = gval = None
    if node.next_functions[0][0] is not None:
        gself = index_fill(g, d, index, 0)
    if len(node.next_functions) > 1 and node.next_functions[1][0] is not None:
        # PyTorch: grad.index_select(dim, unique(index)).sum()
        u = unique(index.reshape(-1))
        gval = index_select(g, d, u).sum()
    return (gself, gval) if len(node.next_functions) > 1 else (gself,)


@op(
    "index_fill",
    "indexing",
    node={"value": "IndexFillBackward0", "tensor": "IndexFillBackward1"},
    vjp=_index_fill_vjp,
    variants=FMI,
    kernels=CPU,
)
def index_fill(input, dim, index, value):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    if not isinstance(index, Tensor) or index._dtype is not _dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index._data.ndim > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    vt = None
    if isinstance(value, Tensor):
        if value._data.ndim != 0:
            raise RuntimeError(
                "index_fill_ only supports a 0-dimensional value tensor, but got tensor with %d "
                "dimension(s)." % value._data.ndim
            )
        vt = value
        value = value._data.item() if type(value._data) is not DeviceArray else value.item()
    idx = index._data.reshape(-1)
    cuda = _same_device(input, index)
    _index_fill_bounds(idx, shape, d)
    n = _nd(shape)[d]
    out = input._data.copy()
    if not input._dtype.is_inexact and not isinstance(value, bool):
        value = int(value) if not input._dtype.is_complex else value
    if cuda:
        from ..kernels.cuda.gatherlin import fill_dim  # lazy: the CUDA path loads on first use

        sh = _nd(shape)
        o3 = out.dense().reshape(int(np.prod(sh[:d])), n, int(np.prod(sh[d + 1 :])))
        fill_dim(o3, _cu().flat(idx, np.int64), value)
    else:
        wrapped = np.where(idx < 0, idx + n, idx).astype(np.int64)  # validated above
        out.reshape(_nd(shape))[(slice(None),) * d + (wrapped,)] = np.asarray(value).astype(
            out.dtype
        )
    if vt is not None and input._dtype.is_inexact:
        return index_fill.op.record(
            out,
            (input, vt),
            overload="tensor",
            attrs=(d, shape, index._data.shape),
            saved={"index": index},
        )
    return index_fill.op.record(
        out, (input,), overload="value", attrs=(d, shape, index._data.shape), saved={"index": index}
    )


# -- scatter_reduce ------------------------------------------------------------------------

_REDUCE = {"sum": 0, "prod": 1, "mean": 2, "amax": 3, "amin": 4, "max": 3, "min": 4}
_REDUCE_NAME = {0: "sum", 1: "prod", 2: "mean", 3: "amax", 4: "amin"}


def _identity(mode, dtype):
    """The value positions start from when ``include_self=False``."""
    if mode in (0, 2):
        return dtype.type(0)
    if mode == 1:
        return dtype.type(1)
    if dtype.kind == "f":
        return dtype.type(-np.inf if mode == 3 else np.inf)
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:  # bool
        return dtype.type(mode == 4)
    return dtype.type(info.min if mode == 3 else info.max)


def _scatter_reduce_array(x, d, index, src, mode, include_self):
    """scatter_reduce of ``src`` (cut to the index's shape) into a copy of ``x`` along ``d`` at
    the validated ``index``: one Numba pass, the flat positions computed in the kernel."""
    shape, ishape = _nd(x.shape), _nd(index.shape)
    if type(x) is DeviceArray:
        return _scatter_reduce_cuda(x, d, index, src, mode, include_self)
    out = np.array(x, order="C")
    flat = out.reshape(-1)
    strides = np.cumprod((1,) + tuple(shape[::-1]), dtype=np.int64)[-2::-1]
    outer_off = np.zeros(1, np.int64)  # offsets of the index's outer coordinates in out
    for k in range(d):
        outer_off = (outer_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    inner_off = np.zeros(1, np.int64)
    for k in range(d + 1, len(ishape)):
        inner_off = (inner_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    n_outer, n_inner = outer_off.size, inner_off.size
    i3 = np.ascontiguousarray(index.reshape(ishape), dtype=np.int64).reshape(n_outer, -1, n_inner)
    s3 = src.reshape(_nd(src.shape))[tuple(slice(0, n) for n in ishape)]
    s3 = np.ascontiguousarray(s3, dtype=out.dtype).reshape(i3.shape)
    count = np.zeros(flat.size if mode == 2 else 1, np.int64)
    bad = K.scatter_reduce_cpu(
        flat, i3, s3, outer_off, inner_off, strides[d], mode, include_self,
        _identity(mode, out.dtype), count,
    )  # fmt: skip
    if bad >= 0:
        raise RuntimeError(
            "index %d is out of bounds for the flat buffer being written" % i3.reshape(-1)[bad]
        )
    if mode == 2:  # mean: divided by the number of values (self counts when included)
        c = count + int(include_self)
        c[c == 0] = 1
        c = c.reshape(out.shape)
        if out.dtype.kind in "iu":
            out = np.floor_divide(out, c).astype(out.dtype)
        else:
            out = (out / c).astype(out.dtype)
    return out


def _offsets(shape, ishape, d):
    """(C strides of ``shape``, flat offsets of the index's outer and inner coordinates)."""
    strides = np.cumprod((1,) + tuple(shape[::-1]), dtype=np.int64)[-2::-1]
    outer_off = np.zeros(1, np.int64)
    for k in range(d):
        outer_off = (outer_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    inner_off = np.zeros(1, np.int64)
    for k in range(d + 1, len(ishape)):
        inner_off = (inner_off[:, None] + np.arange(ishape[k]) * strides[k]).reshape(-1)
    return strides, outer_off, inner_off


def _scatter_reduce_cuda(x, d, index, src, mode, include_self):
    """``_scatter_reduce_array`` on the device (the offsets are shape metadata, built on the
    host and copied; the reduction is kernels/cuda/index.py's twin)."""
    from ..kernels.cuda import gatherlin  # lazy: the CUDA path loads on first use
    from ..kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use
    from ..kernels.cuda.index import scatter_reduce_cuda  # lazy: the CUDA path loads on first use
    from .cuda import xp  # lazy: the CUDA path loads on first use

    shape, ishape = _nd(x.shape), _nd(index.shape)
    out = x.astype(x.dtype)  # a dense copy
    flat = out.dense().reshape(out.size)
    strides, outer_off, inner_off = _offsets(shape, ishape, d)
    n_outer, n_inner = outer_off.size, inner_off.size
    i3 = index.reshape(ishape).astype(np.int64).reshape(n_outer, -1, n_inner)
    s3 = src.reshape(_nd(src.shape))[tuple(slice(0, n) for n in ishape)]
    s3 = s3.astype(out.dtype).reshape(i3.shape)
    count = xp.zeros(flat.shape[0] if mode == 2 else 1, np.int64).dense()
    bad = scatter_reduce_cuda(
        flat, i3.dense(), s3.dense(), from_host(outer_off).dense(), from_host(inner_off).dense(),
        int(strides[d]), mode, include_self, _identity(mode, out.dtype), count,
    )  # fmt: skip
    if bad >= 0:
        v = i3.reshape(-1)[bad].to_host()
        raise RuntimeError("index %d is out of bounds for the flat buffer being written" % v)
    if mode == 2:
        gatherlin.mean_divide(flat, count, int(include_self))
    return out


def _delayed_error_vjp(node, grads):
    raise RuntimeError(
        "scatter_reduce(): Double backward is unsupported for src when >1 zeros in src are "
        "scattered to the same position in self"
    )


def _any(t):
    a = t._data
    return bool(np.any(a)) if type(a) is not DeviceArray else _cu().count_nonzero(a) > 0


def _scatter_reduce_vjp(node, grads):
    """PyTorch's scatter_reduce_backward, written in nbgrad ops."""
    d, ishape, mode, include_self = node.attrs
    g = grads[0]
    x, src, res = node.unpack("x"), node.unpack("src"), node.unpack("out")
    index = _saved_index(node, ishape)
    if mode == 0:
        gself, gsrc = g, gather(g, d, index)
    elif mode == 1:
        masked_self = x.masked_fill(x == 0, 1)
        masked_self_result = scatter_reduce(
            masked_self, d, index, src, "prod", include_self=include_self
        )
        gself = g * masked_self_result / masked_self
        src_zero = src == 0
        z = zeros(x.shape, dtype=x.dtype, device=x.device)
        num_zeros = gather(scatter_add(z, d, index, src_zero.to(x.dtype)), d, index)
        single_zero = src_zero.logical_and(num_zeros == 1)  # (bools: the same as &)
        masked_src = src.masked_fill(single_zero, 1)
        masked_src_result = scatter_reduce(
            x, d, index, masked_src, "prod", include_self=include_self
        )
        gsrc = where(
            single_zero,
            gather(g * masked_src_result, d, index),
            gather(g * res, d, index) / src.masked_fill(src_zero, 1),
        )
        if STATE.enabled and _any(num_zeros > 1):
            gsrc = result(gsrc._data, "Error", (gsrc,), _delayed_error_vjp)
    elif mode == 2:
        xp = np if type(g._data) is not DeviceArray else _xp(g._data)
        n = _make(xp.full(g._data.shape, float(include_self), g._data.dtype))
        n = scatter_add(n, d, index, _make(xp.ones(src._data.shape, g._data.dtype)))
        n = n.masked_fill(n == 0, 1)
        gself = g / n
        gsrc = gather(g, d, index) / gather(n, d, index)
    else:
        value = gather(res, d, index)
        self_is = x == res
        src_is = src == value
        count = scatter_add(self_is.to(x.dtype), d, index, src_is.to(x.dtype))
        distributed = g / count
        gself = self_is * distributed
        gsrc = src_is * gather(distributed, d, index)
    if not include_self:
        gself = scatter(gself, d, index, 0.0)
    return (
        gself if node.next_functions[0][0] is not None else None,
        gsrc if node.next_functions[1][0] is not None else None,
    )


@op(
    "scatter_reduce",
    "indexing",
    node="ScatterReduceBackward0",
    vjp=_scatter_reduce_vjp,
    args=("x", "src"),
    saves=("x", "src", "out"),
    variants=FMIO,
    kernels=CPU,
)
def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    _check_index_tensor(index, "scatter")
    mode = _REDUCE.get(reduce)
    if mode is None:
        raise RuntimeError(
            "reduce argument must be either sum, prod, mean, amax or amin, got %s" % reduce
        )
    shape, ishape = input._data.shape, index._data.shape
    d = _wrap_dim(dim, len(shape))
    if not isinstance(src, Tensor):
        raise TypeError(
            "scatter_reduce(): argument 'src' (position 3) must be Tensor, not %s"
            % type(src).__name__
        )
    if src._dtype is not input._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if index._data.size:
        if len(_nd(ishape)) != len(_nd(shape)):
            raise RuntimeError(
                "Index tensor must have the same number of dimensions as self tensor"
            )
        if len(_nd(ishape)) != len(_nd(src._data.shape)):
            raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
        for k, ni in enumerate(_nd(ishape)):
            if (k != d and ni > _nd(shape)[k]) or ni > _nd(src._data.shape)[k]:
                raise RuntimeError(
                    "Expected index %s to be no larger than self %s apart from dimension %d and "
                    "to be no larger size than src %s"
                    % (list(ishape), list(shape), d, list(src._data.shape))
                )
        _check_gather_index(index._data, shape, d)
        out = _scatter_reduce_array(
            input._data, d, index._data, src._data, mode, bool(include_self)
        )
    else:
        out = input._data.copy()
    return scatter_reduce.op.record(
        out,
        (input, src),
        attrs=(d, ishape, mode, bool(include_self)),
        saved={"index": index},
    )


# -- masked_scatter --------------------------------------------------------------------------


def _masked_scatter_vjp(node, grads):
    shape, sshape = node.attrs
    g = grads[0]
    m = node.array("mask")
    try:
        mb = _make(
            np.broadcast_to(m, shape) if type(m) is not DeviceArray else m.broadcast_to(shape)
        )
    except ValueError:
        raise broadcast_error((_make(m), _make(np.empty(shape)))) from None
    gself = gsrc = None
    if node.next_functions[0][0] is not None:
        gself = g.masked_fill(mb, 0.0)
    if node.next_functions[1][0] is not None:
        n = int(np.prod(sshape, dtype=np.int64))
        sel = masked_select(g, mb)
        k = sel.shape[0]
        if k > n:  # the mask gained ones through .data: PyTorch's view of the selection fails
            raise RuntimeError("shape '%s' is invalid for input of size %d" % (list(sshape), k))
        if k < n and type(g._data) is DeviceArray:  # into zeros(n) at 0 .. k-1
            from ..kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use
            from ..kernels.cuda.gatherlin import iota  # lazy: the CUDA path loads on first use

            sel = _scatter_lin(sel, (n,), wrap(iota(k)))
        elif k < n:
            sel = cat([sel, zeros(n - k, dtype=g.dtype)], 0)
        gsrc = sel.reshape(sshape)
    return (gself, gsrc)


@op(
    "masked_scatter",
    "indexing",
    node="MaskedScatterBackward0",
    vjp=_masked_scatter_vjp,
    variants=FMI,
)
def masked_scatter(input, mask, source):
    if not isinstance(mask, Tensor) or mask._dtype is not _dt.bool:
        raise RuntimeError(
            "masked_scatter_ only supports boolean masks, but got mask with dtype %s"
            % getattr(getattr(mask, "_dtype", None), "_legacy", type(mask).__name__)
        )
    if source._dtype is not input._dtype:
        raise RuntimeError(
            "masked_scatter: expected self and source to have same dtypes but got%s and %s"
            % (input._dtype._legacy, source._dtype._legacy)
        )
    try:
        shape = np.broadcast_shapes(input._data.shape, mask._data.shape)
    except ValueError:
        raise broadcast_error((mask, input)) from None
    if _same_device(input, mask, source):
        cu = _cu()
        lin = cu.masked_lin(mask._data, shape)
        count = lin.shape[0]
        if count > source._data.size:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        out = input._data.broadcast_to(shape).astype(input._data.dtype)  # a dense copy
        if count:
            cu.scatter_into(out, lin, source._data.reshape(-1)[:count], False)
    else:
        m = np.broadcast_to(mask._data, shape)
        count = int(np.count_nonzero(m))
        if count > source._data.size:
            raise RuntimeError("Number of elements of source < number of ones in mask")
        out = np.array(np.broadcast_to(input._data, shape), order="C")
        out[m] = np.ascontiguousarray(source._data).reshape(-1)[:count]
    return masked_scatter.op.record(
        out,
        (input, source),
        attrs=(shape, source._data.shape),
        saved={"mask": mask},
    )
