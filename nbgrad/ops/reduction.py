"""Reductions: sum mean prod amax amin max min argmax argmin var std norm logsumexp cumsum all
any.  Forward: Numba kernels over an (outer, n, inner) layout; backward: nbgrad ops."""

import builtins
import collections
import math
import warnings

import numpy as np

from .. import dtypes as _dt
from .._tensor import Tensor, _wrap_dim
from ..autograd.batching import BATCH, batched, lead
from ..autograd.graph import SavedOutput
from ..creation import zeros
from ..grad_mode import STATE, no_grad
from ..kernels.cpu import reduce as K
from ..kernels.cuda import twin
from ..kernels.cuda.array import DeviceArray, empty as cuda_empty
from .cuda import kernel_for, xp_of
from .pointwise_fns import abs as _abs, conj, maximum, minimum, sign, where
from .registry import FUNCTION, INPLACE, LINEAR, METHOD, OUT, op
from .shape import cat

FM, FMO = (FUNCTION, METHOD), (FUNCTION, METHOD, OUT)
CPU = {"cpu": K}

_make = Tensor._make
values_indices = collections.namedtuple("return_types", ["values", "indices"])


def _dims(dim, ndim):
    """Normalise ``dim`` (None, int, or a sequence) to a sorted tuple of distinct dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, (list, tuple)):
        if len(dim) == 0:
            return tuple(range(ndim))
        ds = sorted(_wrap_dim(d, ndim) for d in dim)
        if len(set(ds)) != len(ds):
            raise RuntimeError("dim %d appears multiple times in the list of dims" % ds[0])
        return tuple(ds)
    return (_wrap_dim(dim, ndim),)


def to3d(a, dims):
    """View/copy ``a`` as (outer, n, inner) with the reduced dims in the middle."""
    nd = a.ndim
    if nd == 0:
        return a.reshape(1, 1, 1)
    shape = a.shape
    # math.prod on Python ints: np.prod costs ~5 us a call, three times per reduction
    if dims == tuple(range(dims[0], dims[-1] + 1)) and a.flags.c_contiguous:
        outer = math.prod(shape[: dims[0]])
        n = math.prod(shape[dims[0] : dims[-1] + 1])
        inner = math.prod(shape[dims[-1] + 1 :])
        return a.reshape(outer, n, inner)
    keep = [d for d in range(nd) if d not in dims]
    t = a.transpose(keep + list(dims))
    t = np.ascontiguousarray(t) if type(t) is np.ndarray else t.contiguous()
    outer = math.prod([shape[d] for d in keep])
    n = math.prod([shape[d] for d in dims])
    return t.reshape(outer, n, 1)  # not (outer, -1, 1): ambiguous when outer is 0


def out_shape(shape, dims, keepdim):
    if keepdim:
        return tuple(1 if d in dims else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in dims)


def _run(kernel, a, dims, keepdim, out_dtype, *extra):
    x3 = to3d(a, dims)
    if type(a) is DeviceArray:  # the kernel's CUDA twin (NOTE [device storage])
        out = cuda_empty((x3.shape[0], x3.shape[2]), out_dtype)
        if x3.shape[1] == 0:
            return None, x3
        twin(kernel)(x3.dense(), out.dense(), *extra)
        return out.reshape(out_shape(a.shape, dims, keepdim)), x3
    out = np.empty((x3.shape[0], x3.shape[2]), out_dtype)
    if x3.shape[1] == 0:
        return None, x3
    kernel(x3, out, *extra)
    return out.reshape(out_shape(a.shape, dims, keepdim)), x3


def _arr(a):
    """``a`` as an array: numpy's for scalars and numpy arrays, a CUDA array as it is."""
    return a if type(a) is DeviceArray else np.asarray(a)


def _filled(shape, value, like):
    """A new array of ``shape`` holding ``value``, of ``like``'s dtype and on its device."""
    if type(like) is DeviceArray:
        out = cuda_empty(shape, like.dtype)
        out[...] = value
        return out
    return np.full(shape, value, like.dtype)


def _sqrt(a):
    from ..kernels.cuda.elementwise import run  # lazy: the CUDA path loads on first use

    return run("array_sqrt", ("x",), "sqrt(x)", a.dtype.name, (a,))


def _compute_arr(x):
    a = x._data
    if a.dtype == np.float16:
        return a.astype(np.float32)
    return a


def _unsqueeze_to(g, shape, dims, keepdim, batch=()):
    """Put reduced dims back (as size 1) so ``g`` broadcasts against the input."""
    if not keepdim and len(batch) + len(shape) != g._data.ndim:
        g = g.reshape(batch + tuple(1 if d in dims else s for d, s in enumerate(shape)))
    return g


def _grad_to(g, shape, dims, keepdim):
    """``_unsqueeze_to`` for a gradient, which may carry batch dims (NOTE [batched backward])."""
    return _unsqueeze_to(g, shape, dims, keepdim, lead(g))


# -- sum / mean --------------------------------------------------------------------------------


_FLOAT_KINDS = (np.dtype(np.float32), np.dtype(np.float64))
_ALL_DIMS = [tuple(range(n)) for n in range(8)]


def _sum_kernel(a):
    return K.csum_fwd_cpu if a.dtype.kind == "c" else K.sum_fwd_cpu


def _expanded(g, shape, dims, keepdim):
    """``g`` with the reduced dims put back, expanded to ``shape`` (PyTorch's sum backward).
    NOTE [per-node cost]: without create_graph or a batch this is a plain stride-0 array view
    wrapped as a fresh Tensor (no view op, no graph), ~1 us instead of ~15 us."""
    a = g._data
    if STATE.enabled or BATCH.dims or not a.flags.c_contiguous:
        return _grad_to(g, shape, dims, keepdim).expand(lead(g) + shape)
    if not keepdim and len(shape) != a.ndim:
        a = a.reshape(tuple(1 if d in dims else s for d, s in enumerate(shape)))
    st = a.strides
    strides = tuple(0 if a.shape[d] == 1 and s != 1 else st[d] for d, s in enumerate(shape))
    if type(a) is DeviceArray:
        return _make(a.as_strided(shape, tuple(s // a.itemsize for s in strides)))
    return _make(np.ndarray(shape, a.dtype, a, 0, strides))


def sum_to_array(a, shape):
    """``a`` summed down to ``shape`` (which broadcasts to ``a.shape``) as an array, by the
    ``sum`` kernels: the engine's reducer when no graph is built (NOTE [per-node cost])."""
    extra = a.ndim - len(shape)
    dims = tuple(range(extra)) + tuple(
        extra + i for i, s in enumerate(shape) if s == 1 and a.shape[extra + i] != 1
    )
    if not dims:
        return a.reshape(shape) if type(a) is np.ndarray else a.view_shape(shape)
    if type(a) is not np.ndarray:  # a CUDA array: the sum op (NOTE [device storage])
        return None
    if a.dtype.kind == "c":
        kernel = K.csum_fwd_cpu
    elif a.dtype in _FLOAT_KINDS:
        kernel = K.sum_fwd_cpu
    else:
        return None
    x3 = to3d(a, dims)
    out = np.zeros(shape, a.dtype)  # owns its memory: AccumulateGrad may steal it
    if x3.shape[1]:
        kernel(x3, out.reshape(x3.shape[0], x3.shape[2]))
    return out


@batched
def _sum_vjp(node, grads):
    shape, dims, keepdim = node.attrs
    return (_expanded(grads[0], shape, dims, keepdim),)


@batched
def _mean_vjp(node, grads):
    shape, dims, keepdim, n = node.attrs
    return (_expanded(grads[0], shape, dims, keepdim) / n,)


@op(
    "sum",
    "reduction",
    node={False: "SumBackward0", True: "SumBackward1"},
    vjp=_sum_vjp,
    variants=FMO,
    kernels=CPU,
    jvp=LINEAR,
)
def sum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A001
    x = input
    a = x._data
    if (
        dim is None
        and dtype is None
        and a.dtype in _FLOAT_KINDS
        and type(a) is np.ndarray
        and a.flags.c_contiguous
    ):
        # NOTE [per-op cost]: the whole-tensor sum of a loss, without the general path's
        # dims / dtype / layout bookkeeping
        out = np.zeros((1, 1), a.dtype)
        if a.size:
            K.sum_fwd_cpu(a.reshape(1, a.size, 1), out)
        dims = _ALL_DIMS[a.ndim] if a.ndim < 8 else tuple(range(a.ndim))
        shape = (1,) * a.ndim if keepdim else ()
        return sum.op.record(
            out.reshape(shape), (x,), overload=False, attrs=(a.shape, dims, keepdim)
        )
    dims = _dims(dim, x._data.ndim)
    d = (
        _dt.as_dtype(dtype)
        if dtype is not None
        else (_dt.int64 if not x._dtype.is_inexact else x._dtype)
    )
    a = _compute_arr(x)
    if not d.is_inexact:
        r, _ = _run(K.isum_fwd_cpu, a.astype(np.int64, copy=False), dims, keepdim, np.int64)
    else:
        a = a.astype(_dt.float32.np if d is _dt.float16 else d.np, copy=False)
        r, _ = _run(_sum_kernel(a), a, dims, keepdim, a.dtype)
    if r is None:
        r = _filled(out_shape(x._data.shape, dims, keepdim), 0, a)
    return sum.op.record(
        r.astype(d.np, copy=False),
        (x,),
        overload=dim is not None,
        attrs=(x._data.shape, dims, keepdim),
    )


@op(
    "mean",
    "reduction",
    node={False: "MeanBackward0", True: "MeanBackward1"},
    vjp=_mean_vjp,
    variants=FMO,
    kernels=CPU,
    jvp=LINEAR,
)
def mean(input, dim=None, keepdim=False, *, dtype=None):
    x = input
    if dtype is None and not x._dtype.is_inexact:
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a "
            "floating point or complex dtype. Got: %s" % x._dtype._legacy
        )
    dims = _dims(dim, x._data.ndim)
    n = int(np.prod([x._data.shape[d] for d in dims], dtype=np.int64)) if x._data.ndim else 1
    d = _dt.as_dtype(dtype) or x._dtype
    a = _compute_arr(x).astype(_dt.float32.np if d is _dt.float16 else d.np, copy=False)
    r, _ = _run(_sum_kernel(a), a, dims, keepdim, a.dtype)
    if r is None:
        r = _filled(out_shape(x._data.shape, dims, keepdim), np.nan, a)
    else:
        r = r / a.dtype.type(n) if n else r
    return mean.op.record(
        _arr(r).astype(d.np, copy=False),
        (x,),
        overload=dim is not None,
        attrs=(x._data.shape, dims, keepdim, n),
    )


# -- prod --------------------------------------------------------------------------------------


@batched
def _prod_vjp(node, grads):
    shape, dims, keepdim = node.attrs
    x = node.unpack("x")
    out = node.unpack("out")
    g = _grad_to(grads[0], shape, dims, keepdim)
    o = _unsqueeze_to(out, shape, dims, keepdim)
    if not np.any(x._data == 0):
        return (g * conj(o / x),)  # PyTorch: grad * (result / input).conj()
    # zeros present: product of all the other elements, computed directly (first order only)
    xa = x._data.astype(np.complex128 if x._dtype.is_complex else np.float64)
    others = np.empty_like(xa)
    it = np.nditer(xa, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        sl = tuple(slice(None) if d in dims else idx[d] for d in range(xa.ndim))
        block = np.array(xa[sl])  # a 0-d input indexes to a scalar: keep an array
        pos = tuple(idx[d] for d in range(xa.ndim) if d in dims)
        block[pos] = 1.0
        others[idx] = block.prod()
    return (g * _make(np.conj(others).astype(x._data.dtype)),)


@op(
    "prod",
    "reduction",
    node={False: "ProdBackward0", True: "ProdBackward1"},
    vjp=_prod_vjp,
    saves=("x", "out"),
    variants=FM,
    kernels=CPU,
)
def prod(input, dim=None, keepdim=False, *, dtype=None):
    x = input
    if dim is not None and isinstance(dim, (list, tuple)):
        raise TypeError("prod(): argument 'dim' must be int, not %s" % type(dim).__name__)
    dims = _dims(dim, x._data.ndim)
    d = (
        _dt.as_dtype(dtype)
        if dtype is not None
        else (_dt.int64 if not x._dtype.is_inexact else x._dtype)
    )
    a = _compute_arr(x).astype(_dt.float32.np if d is _dt.float16 else d.np, copy=False)
    r, _ = _run(K.prod_fwd_cpu, a, dims, keepdim, a.dtype)
    if r is None:
        r = _filled(out_shape(x._data.shape, dims, keepdim), 1, a)
    return prod.op.record(
        r.astype(d.np, copy=False),
        (x,),
        overload=dim is not None,
        attrs=(x._data.shape, dims, keepdim),
    )


# -- max / min ---------------------------------------------------------------------------------


@batched
def _evenly_vjp(node, grads):
    """amax/amin: the gradient is shared evenly between tied extremes, PyTorch's
    ``grad / count * mask`` (a multiply: NaN where a NaN input makes the count 0)."""
    shape, dims, keepdim = node.attrs
    x = node.unpack("x")
    out = node.unpack("out")
    g = _grad_to(grads[0], shape, dims, keepdim)
    o = _unsqueeze_to(out, shape, dims, keepdim)
    mask = x == o
    count = mask.sum(dim=dims, keepdim=True)
    return (g / count * mask,)


@batched
def _evenly_select_vjp(node, grads):
    """Full max()/min(): PyTorch's evenly_distribute_backward selects -- the gradient, divided by
    the number of ties, goes to the elements equal to the result (to the NaNs if it is NaN),
    zeros elsewhere, whatever the gradient holds."""
    shape, dims, keepdim = node.attrs
    x = node.unpack("x")
    out = node.unpack("out")
    g = _grad_to(grads[0], shape, dims, keepdim)
    o = _unsqueeze_to(out, shape, dims, keepdim)
    oa = out._data
    has_nan = bool(np.isnan(oa).any()) if type(oa) is np.ndarray else out.isnan().any().item()
    mask = x.isnan() if has_nan else x == o
    count = mask.sum(dim=dims, keepdim=True)
    return (where(mask, g / count, 0.0),)


def _empty_dim_check(x, dim, name, wrapped=False):
    """PyTorch's errors for a reduction without identity (max, argmax, ...) over nothing: no
    ``dim`` and no elements, or a reduced dim of size 0 (named as given, or wrapped)."""
    shape = x._data.shape
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        if x._data.size == 0:
            msg = "%s(): Expected reduction dim to be specified for input.numel() == 0." % name
            if name.startswith("arg"):
                raise IndexError(msg)
            raise RuntimeError(msg + " Specify the reduction dim with the 'dim' argument.")
        return
    for d in dim if isinstance(dim, (list, tuple)) else (dim,):
        w = _wrap_dim(d, len(shape))
        if shape and shape[w] == 0:
            raise IndexError(
                "%s(): Expected reduction dim %d to have non-zero size."
                % (name, w if wrapped else d)
            )


def _no_complex(x, msg, exc=RuntimeError):
    if x._dtype.is_complex:
        raise exc(msg % x._dtype._legacy if "%s" in msg else msg)


def _extreme(x, dim, keepdim, take_max, opdef, overload=None, name=None):
    word = "max" if take_max else "min"
    if name is None:  # max()/min()
        _no_complex(x, "\"%s_all\" not implemented for '%%s'" % word, NotImplementedError)
    else:
        _no_complex(x, "\"%s_values_cpu\" not implemented for '%%s'" % word, NotImplementedError)
    _empty_dim_check(x, dim, name or word)
    dims = _dims(dim, x._data.ndim)
    a = _compute_arr(x)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    r, _ = _run(K.amax_fwd_cpu, a, dims, keepdim, a.dtype, take_max)
    if r is None:  # a reduced dim of size 0 with no elements at all to reduce: empty result
        r = np.empty(out_shape(x._data.shape, dims, keepdim), a.dtype)
    return opdef.record(
        r.astype(x._data.dtype, copy=False),
        (x,),
        overload=overload,
        attrs=(x._data.shape, dims, keepdim),
    )


@op(
    "amax",
    "reduction",
    node="AmaxBackward0",
    vjp=_evenly_vjp,
    saves=("x", "out"),
    variants=FM,
    kernels=CPU,
)
def amax(input, dim=(), keepdim=False):
    return _extreme(input, dim if dim != () else None, keepdim, True, amax.op, name="amax")


@op(
    "amin",
    "reduction",
    node="AminBackward0",
    vjp=_evenly_vjp,
    saves=("x", "out"),
    variants=FM,
    kernels=CPU,
)
def amin(input, dim=(), keepdim=False):
    return _extreme(input, dim if dim != () else None, keepdim, False, amin.op, name="amin")


def _select_vjp(node, grads):
    """max(dim)/min(dim): the gradient goes to the returned index only."""
    shape, dim, keepdim = node.attrs
    g = grads[0]
    if not shape:  # a 0-d input is its own max
        return (g,)
    idx = node.unpack("indices")
    if not keepdim:
        g = g.unsqueeze(dim)
        idx = idx.unsqueeze(dim)
    return (zeros(*shape, dtype=g.dtype, device=g.device).scatter(dim, idx, g),)


def _argext(x, dim, keepdim, take_max):
    name = "argmax" if take_max else "argmin"
    _no_complex(x, "%s(): does not support complex input" % name)
    _empty_dim_check(x, dim, name, wrapped=True)
    dims = _dims(dim, x._data.ndim)
    a = _compute_arr(x)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    r, _ = _run(K.argmax_fwd_cpu, a, dims, keepdim, np.int64, take_max)
    if r is None:  # nothing to reduce and an empty result
        r = np.zeros(out_shape(x._data.shape, dims, keepdim), np.int64)
    return r


def _max_min(input, dim, keepdim, take_max, other, opdef):
    word = "max" if take_max else "min"
    if isinstance(dim, Tensor) or other is not None:
        return (maximum if take_max else minimum)(input, dim if other is None else other)
    if dim is None:
        return _extreme(input, None, False, take_max, opdef, "all")
    nd = input._data.ndim
    d = _wrap_dim(dim, nd)
    _no_complex(input, "%s(): does not support complex input" % word)
    if nd and input._data.shape[d] == 0:
        raise IndexError("%s(): Expected reduction dim %d to have non-zero size." % (word, d))
    if nd == 0:  # a 0-d tensor is its own max over dim 0 (or -1), index 0
        idx = np.zeros((), np.int64)
        vals = input._data.copy()
    else:
        idx = _argext(input, d, keepdim, take_max)
        if type(idx) is DeviceArray:  # the values by the max kernel (NaN first, as argmax)
            a = _compute_arr(input)
            vals, _ = _run(K.amax_fwd_cpu, a, (d,), keepdim, a.dtype, take_max)
            vals = vals.astype(input._data.dtype, copy=False)
        else:
            vals = np.take_along_axis(input._data, idx if keepdim else np.expand_dims(idx, d), d)
            if not keepdim:
                vals = vals.squeeze(d)
    idx_t = _make(idx)
    vals = opdef.record(
        _arr(vals).copy() if type(vals) is DeviceArray else np.asarray(vals, order="C"),
        (input,),
        overload="dim",
        attrs=(input._data.shape, d, keepdim),
        saved={"indices": idx_t},
    )
    return values_indices(vals, idx_t)


# max()/min() share the gradient evenly between tied extremes (saving x and out); max(dim)
# returns indices and sends the gradient to them only
_EXTREME = {"all": _evenly_select_vjp, "dim": _select_vjp}


_EXTREME_SAVES = {"all": ("x", "out"), "dim": ()}


@op(
    "max",
    "reduction",
    node={"all": "MaxBackward1", "dim": "MaxBackward0"},
    vjp=_EXTREME,
    saves=_EXTREME_SAVES,
    variants=FM,
    kernels=CPU,
)
def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    return _max_min(input, dim, keepdim, True, other, max.op)


@op(
    "min",
    "reduction",
    node={"all": "MinBackward1", "dim": "MinBackward0"},
    vjp=_EXTREME,
    saves=_EXTREME_SAVES,
    variants=FM,
    kernels=CPU,
)
def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001
    return _max_min(input, dim, keepdim, False, other, min.op)


@op("argmax", "reduction", variants=FM, kernels=CPU)
def argmax(input, dim=None, keepdim=False):
    if dim is None:
        _no_complex(input, "argmax(): does not support complex input")
        _empty_dim_check(input, None, "argmax")
        r = _argext(input.reshape(-1), 0, False, True)
        return _make(r.reshape((1,) * input._data.ndim if keepdim else ()))
    return _make(_argext(input, dim, keepdim, True))


@op("argmin", "reduction", variants=FM, kernels=CPU)
def argmin(input, dim=None, keepdim=False):
    if dim is None:
        _no_complex(input, "argmin(): does not support complex input")
        _empty_dim_check(input, None, "argmin")
        r = _argext(input.reshape(-1), 0, False, False)
        return _make(r.reshape((1,) * input._data.ndim if keepdim else ()))
    return _make(_argext(input, dim, keepdim, False))


# -- var / std ---------------------------------------------------------------------------------


def _correction(unbiased, correction):
    if correction is not None:
        return float(correction)
    return 1.0 if (unbiased is None or unbiased) else 0.0


def _var_backward(g, x, dims, n, c, full):
    """PyTorch's var_backward: ``2 / (n - c) * g * (x - mean)``; over all elements with no
    degrees of freedom left, ``g * where(x == mean, nan, inf)``."""
    mean = x.mean(dim=dims, keepdim=True)
    if full and n - c <= 0:
        return g * where(x == mean, math.nan, math.inf)
    with np.errstate(divide="ignore"):
        scale = float(np.float64(2.0) / np.float64(n - c))  # inf when n == c, as in C++
    return scale * g * (x - mean)


@batched
def _var_vjp(node, grads):
    shape, dims, keepdim, n, c, full = node.attrs
    g = _grad_to(grads[0], shape, dims, keepdim)
    return (_var_backward(g, node.unpack("x"), dims, n, c, full),)


@batched
def _std_vjp(node, grads):
    """PyTorch's std_backward: ``var_backward(grad / (2 * out))`` with the gradient masked to 0
    where the std is 0 (a constant: 0, not 0/0)."""
    shape, dims, keepdim, n, c, full = node.attrs
    out = _unsqueeze_to(node.unpack("out"), shape, dims, keepdim)
    g = _grad_to(grads[0], shape, dims, keepdim)
    gv = where(out == 0, 0.0, g / (out * 2))
    return (_var_backward(gv, node.unpack("x"), dims, n, c, full),)


def _var_std(x, dim, unbiased, keepdim, correction, take_sqrt, opdef):
    if isinstance(dim, bool):  # var(x, False): the old "unbiased" positional
        unbiased, dim = dim, None
    if not x._dtype.is_inexact:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    c = _correction(unbiased, correction)
    dims = _dims(dim, x._data.ndim)
    n = int(np.prod([x._data.shape[d] for d in dims], dtype=np.int64)) if x._data.ndim else 1
    if n - c <= 0:
        warnings.warn(
            "%s(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel)."
            % ("std" if take_sqrt else "var"),
            UserWarning,
            stacklevel=4,
        )
    a = _compute_arr(x)
    if a.dtype.kind == "c":  # sum |x - mean|^2 / max(0, n - c): real
        a1 = a.reshape(1) if a.ndim == 0 else a
        with np.errstate(all="ignore"):
            m2 = (np.abs(a1 - a1.mean(axis=dims, keepdims=True)) ** 2).sum(
                axis=dims, keepdims=keepdim
            )
            r = m2 / np.float64(builtins.max(0.0, n - c))
        r = r.reshape(out_shape(x._data.shape, dims, keepdim)).astype(a.real.dtype)
    else:
        r, _ = _run(K.var_fwd_cpu, a, dims, keepdim, a.dtype, c)
        if r is None:
            r = _filled(out_shape(x._data.shape, dims, keepdim), np.nan, a)
    if take_sqrt:
        r = np.sqrt(r) if type(r) is not DeviceArray else _sqrt(r)
    full = dim is None or x._data.ndim == 0
    odt = x._dtype.to_real() if x._dtype.is_complex else x._dtype
    return opdef.record(
        _arr(r).astype(odt.np, copy=False),
        (x,),
        attrs=(x._data.shape, dims, keepdim, n, c, full),
    )


@op("var", "reduction", node="VarBackward0", vjp=_var_vjp, saves=("x",), variants=FM, kernels=CPU)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(input, dim, unbiased, keepdim, correction, False, var.op)


@op(
    "std",
    "reduction",
    node="StdBackward0",
    vjp=_std_vjp,
    saves=("x", "out"),
    variants=FM,
    kernels=CPU,
)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std(input, dim, unbiased, keepdim, correction, True, std.op)


# -- norm, logsumexp, cumsum -------------------------------------------------------------------


@batched
def _norm_vjp(node, grads):
    """PyTorch's norm_backward, branch for branch (its masks select, so a NaN/Inf gradient
    does not leak where the norm is 0)."""
    shape, dims, keepdim, p = node.attrs
    x = node.unpack("x")
    out = _unsqueeze_to(node.unpack("out"), shape, dims, keepdim)
    g = _grad_to(grads[0], shape, dims, keepdim)
    if p == 0:
        return (None,)
    if p == 1:
        return (_sgn(x) * g,)
    if p == 2:
        return (g * where(out == 0, 0.0, x / out),)
    ax = _abs(x)
    if math.isinf(p):  # amax(|x|) respecting NaN
        mask = (ax == out) | ax.isnan()
        return (_sgn(x) * ((g / mask.sum(dim=dims, keepdim=True)) * mask),)
    if p < 1:
        scaled = _sgn(x) * where(x == 0, 0.0, ax ** (p - 1))
        return (scaled * g * out ** (1 - p),)
    scaled = _sgn(x) * ax ** (p - 1) if p < 2 else x * ax ** (p - 2)
    return (scaled * where(out == 0, 0.0, g / out ** (p - 1)),)


def _sgn(x):
    """PyTorch's sgn: sign for real tensors (0 at NaN), x / |x| (0 at 0) for complex."""
    if x._dtype.is_complex:
        return where(x == 0, 0.0, x / _abs(x))
    return sign(x)


def _inf_norm_empty_check(x, dim, p):
    msg = "linalg.vector_norm cannot compute the %s norm on " % p
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        raise RuntimeError(msg + "an empty tensor because the operation does not have an identity")
    shape = x._data.shape
    for d in dim if isinstance(dim, (list, tuple)) else (dim,):
        if shape and shape[_wrap_dim(d, len(shape))] == 0:
            raise RuntimeError(
                msg + "the dimension %dbecause this dimension is empty and the operation does not "
                "have an identity" % d  # sic: PyTorch's message has no space before "because"
            )


@op(
    "norm",
    "reduction",
    node="LinalgVectorNormBackward0",
    vjp=_norm_vjp,
    saves=("x", "out"),
    variants=FM,
)
def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    x = input
    if not x._dtype.is_inexact:
        raise RuntimeError(
            "linalg.vector_norm: Expected a floating point or complex tensor as "
            "input. Got %s" % x._dtype._legacy
        )
    if p == "fro" or p is None:
        p = 2.0
    p = float(p)
    dims = _dims(dim, x._data.ndim)
    if math.isinf(p) and x._data.size == 0:  # max/min of nothing: no identity
        _inf_norm_empty_check(x, dim, "inf" if p > 0 else "-inf")
    with no_grad():
        ax = _abs(x)
        if math.isinf(p):
            r = amax(ax, dims, keepdim) if p > 0 else amin(ax, dims, keepdim)
        elif p == 0:
            r = sum((ax != 0).to(x._dtype), dims, keepdim)
        elif p == 1:
            r = sum(ax, dims, keepdim)
        elif p == 2:
            r = sum(ax * ax, dims, keepdim).sqrt()
        else:
            r = sum(ax**p, dims, keepdim) ** (1.0 / p)
    return norm.op.record(r._data, (x,), attrs=(x._data.shape, dims, keepdim, p))


@batched
def _logsumexp_vjp(node, grads):
    shape, dims, keepdim = node.attrs
    x = node.unpack("x")
    out = _unsqueeze_to(node.unpack("out"), shape, dims, keepdim)
    g = _grad_to(grads[0], shape, dims, keepdim)
    return (g * (x - out).exp(),)


@op(
    "logsumexp",
    "reduction",
    node="LogsumexpBackward0",
    vjp=_logsumexp_vjp,
    saves=("x", "out"),
    variants=FM,
    kernels=CPU,
)
def logsumexp(input, dim, keepdim=False):
    x = input
    if not x._dtype.is_inexact:
        x = x.to(_dt._default[0])
    _no_complex(x, "nbgrad: logsumexp of complex tensors is not supported", NotImplementedError)
    dims = _dims(dim, x._data.ndim)
    a = _compute_arr(x)
    r, _ = _run(K.logsumexp_fwd_cpu, a, dims, keepdim, a.dtype)
    if r is None:
        r = _filled(out_shape(x._data.shape, dims, keepdim), -np.inf, a)
    return logsumexp.op.record(
        _arr(r).astype(x._data.dtype, copy=False), (x,), attrs=(x._data.shape, dims, keepdim)
    )


@batched
def _cumsum_vjp(node, grads):
    (dim,) = node.attrs
    if not node._in_meta[0][0]:  # 0-d: the identity
        return (grads[0],)
    dim -= len(node._in_meta[0][0])  # negative: the same with batch dims in front
    return (grads[0].flip(dim).cumsum(dim).flip(dim),)


@op(
    "cumsum",
    "reduction",
    node="CumsumBackward0",
    vjp=_cumsum_vjp,
    variants=FM,
    kernels=CPU,
    jvp=LINEAR,
)
def cumsum(input, dim, *, dtype=None):
    x = input
    d = _wrap_dim(dim, x._data.ndim)
    od = (
        _dt.as_dtype(dtype)
        if dtype is not None
        else (_dt.int64 if not x._dtype.is_inexact else x._dtype)
    )
    a = _compute_arr(x).astype(_dt.float32.np if od is _dt.float16 else od.np, copy=False)
    if a.ndim == 0:
        r = a.copy()
    else:
        xp = xp_of(a)
        x3 = to3d(a, (d,))
        o3 = xp.empty_like(x3)
        if x3.size:
            # PyTorch's CPU accumulator (acc_type): double for float32, complex<double> for
            # complex64; each partial sum is rounded to the result dtype on its own
            acc = {np.float32: np.float64, np.complex64: np.complex128}.get(a.dtype.type)
            kernel_for(a, K.cumsum_fwd_cpu)(x3, o3, (acc or a.dtype.type)(0))
        r = _scan_back(o3, a.shape, d, x3)
    with np.errstate(over="ignore"):  # float16 partial sums beyond its range: inf, quietly
        r = xp_of(r).asarray(r, order="C").astype(od.np, copy=False)  # (0-d stays 0-d)
    return cumsum.op.record(r, (x,), attrs=(d,))


@op("all", "reduction", variants=FM)
def all(input, dim=None, keepdim=False):  # noqa: A001
    if type(input._data) is DeviceArray:
        return _logical_reduce(input, dim, keepdim, True)
    if dim is None:
        return _make(np.asarray(np.all(input._data)))
    axis = _dims(dim, input._data.ndim)
    if input._data.ndim == 0:  # dim 0 or -1 of a 0-d tensor: itself
        axis = None
    return _make(np.asarray(np.all(input._data, axis=axis, keepdims=keepdim)))


@op("any", "reduction", variants=FM)
def any(input, dim=None, keepdim=False):  # noqa: A001
    if type(input._data) is DeviceArray:
        return _logical_reduce(input, dim, keepdim, False)
    if dim is None:
        return _make(np.asarray(np.any(input._data)))
    axis = _dims(dim, input._data.ndim)
    if input._data.ndim == 0:  # dim 0 or -1 of a 0-d tensor: itself
        axis = None
    return _make(np.asarray(np.any(input._data, axis=axis, keepdims=keepdim)))


def _logical_reduce(x, dim, keepdim, is_all):
    """all / any of a CUDA tensor: the min / max kernel over its truth values (NaN counts as
    true, as ``bool(nan)``)."""
    dims = _dims(dim, x._data.ndim) if dim is not None and x._data.ndim else ()
    from ..kernels.cuda.elementwise import run  # lazy: the CUDA path loads on first use

    t = run(
        "truth",
        ("x",),
        "x != 0",
        "float64" if x._dtype.is_inexact else "int64",
        (x._data,),
        out_dtype=np.float64,
    )
    if dim is None:
        dims = tuple(range(t.ndim))
    r, _ = _run(K.amax_fwd_cpu, t, dims, keepdim and dim is not None, t.dtype, not is_all)
    if r is None:  # an empty reduction: all() is True, any() is False
        r = _filled(out_shape(t.shape, dims, keepdim and dim is not None), float(is_all), t)
    return _make(r.astype(np.bool_))


# -- second tier: cumprod, var_mean, std_mean --------------------------------------------------


def _scan_back(o3, shape, d, x3):
    """A scan result over ``to3d(a, (d,))`` (``x3``) back in ``a``'s shape (``shape``)."""
    keep = [k for k in range(len(shape)) if k != d]
    if x3.shape[2] == 1 and keep != list(range(len(shape) - 1)):
        return xp_of(o3).moveaxis(o3.reshape([shape[k] for k in keep] + [shape[d]]), -1, d)
    return o3.reshape(shape)


_WIDE = {"f": np.float64, "c": np.complex128}


def _cumprod_array(a, d):
    """Running products of ``a`` along ``d``, accumulated as PyTorch's CPU kernel does (float64
    for float32, complex128 for complex64, int64 for integers)."""
    if a.ndim == 0:
        return a.copy()
    xp = xp_of(a)
    x3 = to3d(a, (d,))
    o3 = xp.empty(x3.shape, a.dtype)
    if x3.size:
        kernel_for(a, K.cumprod_fwd_cpu)(x3, o3, _WIDE.get(a.dtype.kind, np.int64)(1))
    return xp.asarray(_scan_back(o3, a.shape, d, x3), order="C")


def _reversed_cumsum(t, d):
    return t.flip(d).cumsum(d).flip(d)


def _cumprod_vjp(node, grads):
    """PyTorch's cumprod_backward: with no zero in the input ``reversed_cumsum(out * g) / x``;
    with zeros, an O(n) kernel when no graph is built, else the O(n^2) differentiable sum."""
    (d,) = node.attrs
    g = grads[0]
    x = node.unpack("x")
    shape = x._data.shape
    if x._data.size <= 1 or shape[d] == 1:
        return (g,)
    out = node.unpack("out")
    xc, oc = conj(x), conj(out)
    xa = x._data
    if not (np.any(xa == 0) if type(xa) is np.ndarray else (x == 0).any().item()):
        return (_reversed_cumsum(oc * g, d) / xc,)
    if not STATE.enabled and type(xa) is np.ndarray:
        a = [np.conj(t) if t.dtype.kind == "c" else t for t in (x._data, out._data)]
        wide = _WIDE.get(g._data.dtype.kind, g._data.dtype.type)
        x3, y3, g3 = (to3d(np.asarray(t, wide), (d,)) for t in (a[0], a[1], g._data))
        gi = np.empty(x3.shape, wide)
        K.cumprod_bwd_cpu(x3, y3, g3, gi)
        return (_make(_scan_back(gi, shape, d, x3).astype(g._data.dtype)),)
    n = shape[d]
    ones_shape = list(shape)
    ones_shape[d] = 1
    ones = _make(np.ones(1, g._data.dtype)).expand(*ones_shape)
    parts = []
    for k in range(n):
        if k == 0:
            omega = cat([ones, cumprod(xc.narrow(d, 1, n - 1), d)], d)
        else:
            until = prod(xc.narrow(d, 0, k), d, keepdim=True)
            if k == n - 1:
                omega = until
            else:
                after = cumprod(xc.narrow(d, k + 1, n - k - 1), d)
                omega = cat([until, until.expand_as(after) * after], d)
        parts.append(sum(omega * g.narrow(d, k, n - k), d, keepdim=True))
    return (cat(parts, d),)


@op(
    "cumprod",
    "reduction",
    node="CumprodBackward0",
    vjp=_cumprod_vjp,
    saves=("x", "out"),
    variants=(FUNCTION, METHOD, INPLACE, OUT),
    kernels=CPU,
)
def cumprod(input, dim, *, dtype=None):
    x = input
    d = _wrap_dim(dim, x._data.ndim)
    od = (
        _dt.as_dtype(dtype)
        if dtype is not None
        else (_dt.int64 if not x._dtype.is_inexact else x._dtype)
    )
    if x._dtype is not od:
        x = x.to(od)  # (dtype=: PyTorch casts first; the node is still CumprodBackward0)
    a = _compute_arr(x)
    r = _cumprod_array(a, d).astype(od.np, copy=False)
    return cumprod.op.record(r, (x,), attrs=(d,))


def _mean_grad(g, shape, dims, keepdim, n):
    return _grad_to(g, shape, dims, keepdim).expand(lead(g) + shape) / n


@batched
def _var_mean_vjp(node, grads):
    shape, dims, keepdim, n, c, full = node.attrs
    gvar, gmean = grads
    x = node.unpack("x")
    gx = None
    if gvar is not None:
        gx = _var_backward(_grad_to(gvar, shape, dims, keepdim), x, dims, n, c, full)
    if gmean is not None:
        m = _mean_grad(gmean, shape, dims, keepdim, n)
        gx = m if gx is None else gx + m
    return (gx,)


@batched
def _std_mean_vjp(node, grads):
    shape, dims, keepdim, n, c, full = node.attrs
    gstd, gmean = grads
    gx = None
    if gstd is not None:
        out = _unsqueeze_to(node.unpack("out"), shape, dims, keepdim)
        g = _grad_to(gstd, shape, dims, keepdim)
        gv = where(out == 0, 0.0, g / (out * 2))
        gx = _var_backward(gv, node.unpack("x"), dims, n, c, full)
    if gmean is not None:
        m = _mean_grad(gmean, shape, dims, keepdim, n)
        gx = m if gx is None else gx + m
    return (gx,)


def _var_std_mean(input, dim, unbiased, keepdim, correction, take_sqrt, opdef):
    """(var or std, mean) in one node (VarMeanBackward0 / StdMeanBackward0), as PyTorch."""
    x = input
    if isinstance(dim, bool):  # var_mean(x, False): the old "unbiased" positional
        unbiased, dim = dim, None
    name = "std_mean" if take_sqrt else "var_mean"
    if not x._dtype.is_inexact:
        raise RuntimeError("%s only support floating point and complex dtypes" % name)
    with no_grad(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = _var_std(x, dim, unbiased, keepdim, correction, take_sqrt, var.op)
        m = mean(x, dim, keepdim)
    for w in caught:  # the degrees-of-freedom warning, named as PyTorch's
        msg = str(w.message).replace("std()", name + "()").replace("var()", name + "()")
        warnings.warn(msg, w.category, stacklevel=4)
    dims = _dims(dim, x._data.ndim)
    n = int(np.prod([x._data.shape[k] for k in dims], dtype=np.int64)) if x._data.ndim else 1
    full = dim is None or x._data.ndim == 0
    outs = opdef.record(
        (v._data, m._data.reshape(v._data.shape)),
        (x,),
        attrs=(x._data.shape, dims, keepdim, n, _correction(unbiased, correction), full),
    )
    node = outs[0].grad_fn
    if take_sqrt and node is not None:  # PyTorch saves result0 (the std), version-checked
        node.saved["out"] = SavedOutput(outs[0])
    return outs


@op(
    "var_mean",
    "reduction",
    node="VarMeanBackward0",
    vjp=_var_mean_vjp,
    saves=("x",),
    variants=(FUNCTION,),
    kernels=CPU,
)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std_mean(input, dim, unbiased, keepdim, correction, False, var_mean.op)


@op(
    "std_mean",
    "reduction",
    node="StdMeanBackward0",
    vjp=_std_mean_vjp,
    saves=("x",),
    variants=(FUNCTION,),
    kernels=CPU,
)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    return _var_std_mean(input, dim, unbiased, keepdim, correction, True, std_mean.op)
