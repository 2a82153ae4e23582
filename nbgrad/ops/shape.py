"""Shape and movement ops.  Views share storage, version counter and ``_base`` with their
input; their backward is the inverse movement of the gradient.

NOTE [PyTorch strides]: a view has the strides PyTorch gives it, also on size-1 and size-0
dims where numpy's differ (``_view_strides`` is PyTorch's computeStride), and a new result has
PyTorch's layout: contiguous, or the input's layout where PyTorch preserves it (``clone``,
``flip``, ``to``: ``preserve_array``).  0-dim inputs follow PyTorch: dims wrap in [-1, 0] and
the ops that need a dimension raise PyTorch's error instead of numpy's AxisError.
"""

import numbers

import numpy as np

from .. import dtypes as _dt
from .._tensor import CM_MULTI_OUTPUT, Tensor, _wrap_dim, view_base, view_meta
from ..autograd.batching import BATCH, batched, lead, sum_to
from ..creation import _alloc, contiguous_strides, empty_strided_array, zeros
from ..device import check_device
from ..grad_mode import STATE
from ..kernels.cuda.array import DeviceArray
from . import transfer
from .cuda import device_of
from .registry import FUNCTION, INPLACE, LINEAR, METHOD, OUT, internal_op, new_node, op

_make = Tensor._make
F, M, FM = (FUNCTION,), (METHOD,), (FUNCTION, METHOD)


def _as_strided(a, shape, strides):
    """numpy's as_strided (byte strides); a CUDA array's own view (NOTE [device storage])."""
    if type(a) is DeviceArray:
        return a.as_strided(shape, tuple(s // a.itemsize for s in strides))
    return np.lib.stride_tricks.as_strided(a, shape, strides)


# -- PyTorch's sizes and strides -----------------------------------------------------------------


def _size_args(shape, fn="view"):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    out = []
    for s in shape:
        if type(s) is not int:
            if isinstance(s, Tensor) and s._data.ndim == 0 and s._dtype.is_integral:
                s = int(s._data)
            elif isinstance(s, numbers.Integral) and not isinstance(s, bool):
                s = int(s)
            else:
                raise TypeError(
                    "%s() received an invalid combination of arguments - got (%s), but expected "
                    "one of:" % (fn, ", ".join(type(v).__name__ for v in shape))
                )
        out.append(s)
    return tuple(out)


def _infer(shape, numel):
    """PyTorch's infer_size: at most one -1, no other negative size."""
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s >= 0:
            known *= s
        else:
            raise RuntimeError(
                "invalid shape dimension %d at index %d of shape %s" % (s, i, list(shape))
            )
    if numel == known or (infer is not None and known > 0 and numel % known == 0):
        if infer is None:
            return tuple(shape)
        if known == 0:
            raise RuntimeError(
                "cannot reshape tensor of 0 elements into shape %s because the unspecified "
                "dimension size -1 can be any value and is ambiguous" % list(shape)
            )
        shape = list(shape)
        shape[infer] = numel // known
        return tuple(shape)
    raise RuntimeError("shape '%s' is invalid for input of size %d" % (list(shape), numel))


def _estrides(a):
    """``a``'s strides in elements."""
    isz = a.itemsize
    return tuple(s // isz for s in a.strides)


def _view_strides(shape, strides, newshape):
    """PyTorch's computeStride: the strides of a view of ``shape``/``strides`` (in elements)
    with ``newshape``, or None when no view can have that shape."""
    if not shape:
        return (1,) * len(newshape)
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        if tuple(shape) == tuple(newshape):
            return tuple(strides)
        return contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(shape) - 1, -1, -1):
        tensor_numel *= shape[d]
        if d == 0 or (shape[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_base):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_base = strides[d - 1]
                tensor_numel = view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def restride(a, shape, strides):
    """A view of ``a``'s memory (same first element) with ``shape`` and element ``strides``:
    numpy's own view when its strides agree, else an as_strided view."""
    isz = a.itemsize
    bst = tuple(s * isz for s in strides)
    if a.shape == shape and a.strides == bst:
        return a.view()
    if a.size and type(a) is np.ndarray:
        try:
            v = a.view()
            v.shape = shape
            if v.strides == bst:
                return v
        except (AttributeError, ValueError):
            pass
    return _as_strided(a, shape, bst)


def _dense_nonoverlapping(shape, strides):
    """PyTorch's is_non_overlapping_and_dense."""
    if len(shape) == 1:
        return shape[0] < 2 or strides[0] == 1
    dims = sorted((d for d in range(len(shape)) if shape[d] >= 2), key=lambda d: strides[d])
    need = 1
    for d in dims:
        if strides[d] != need:
            return False
        need *= shape[d]
    return True


def _dense_strides(shape, strides):
    """PyTorch's infer_dense_strides: dense strides in the order of ``strides``."""
    n = len(shape)
    perm = list(range(n - 1, -1, -1))

    def swap(d0, d1):
        s0, s1 = strides[d0], strides[d1]
        if s0 == 0 or s1 == 0:
            return 0
        if s0 != s1:
            return -1 if s0 < s1 else 1
        return 1 if shape[d0] > shape[d1] else 0

    for i in range(1, n):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = swap(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    out = [0] * n
    acc = 1
    for d in perm:
        out[d] = acc
        if shape[d] > 1:
            acc *= shape[d]
    return tuple(out)


def preserve_strides(a):
    """The strides (elements) of PyTorch's ``empty_like(a)`` / ``clone(a)`` (preserve_format)."""
    st = _estrides(a)
    if a.size and any(s < 0 for s in st):  # numpy's negative strides: PyTorch has none
        return _dense_strides(a.shape, tuple(abs(s) for s in st))
    if _dense_nonoverlapping(a.shape, st):
        return st
    return _dense_strides(a.shape, st)


def preserve_array(a, dtype=None):
    """A copy of ``a`` (cast to ``dtype``) with PyTorch's preserve_format layout."""
    npd = a.dtype if dtype is None else dtype
    if type(a) is DeviceArray:  # CUDA copies are dense in C order (NOTE [device storage])
        return a.astype(npd)
    out = a.astype(npd, order="K", copy=True)
    if out.strides == a.strides:  # a is dense: PyTorch keeps its strides, as numpy did
        return out
    want = preserve_strides(a)
    if _estrides(out) == want:
        return out
    res = empty_strided_array(a.shape, want, npd)
    res[...] = a
    return res


def _like_layout(values, a):
    """``values`` (a new array of ``a``'s shape) in the layout of PyTorch's ``empty_like(a)``."""
    want = preserve_strides(a)
    if _estrides(values) == want:
        return values
    res = empty_strided_array(a.shape, want, values.dtype)
    res[...] = values
    return res


def _contig(a):
    """``a`` (a new array) contiguous, with PyTorch's strides also on size-1 dims (numpy keeps
    an input's arbitrary ones there)."""
    a = np.ascontiguousarray(a)
    if 1 in a.shape:
        st = contiguous_strides(a.shape)
        if _estrides(a) != st:
            a = _as_strided(a, a.shape, tuple(s * a.itemsize for s in st))
    return a


def _new(shape, dt):
    """An uninitialised contiguous result of an op (its size comes from existing tensors):
    numpy's, or PyTorch's strides when empty."""
    if 0 in shape:
        return empty_strided_array(shape, contiguous_strides(shape), dt.np)
    return np.empty(shape, dt.np)


def _wrap_dims(dims, nd):
    """Wrap a list of dims; PyTorch's error for a dim given twice."""
    out = []
    for d in dims:
        w = _wrap_dim(d, nd)
        if w in out:
            raise RuntimeError("dim %d appears multiple times in the list of dims" % w)
        out.append(w)
    return tuple(out)


# -- view / reshape ------------------------------------------------------------------------------


@batched
def _reshape_vjp(node, grads):
    g = grads[0]
    return (g.reshape(lead(g) + node.attrs[0]),)


def _view_of(a, shape):
    if a.ndim and a.size and a.flags.c_contiguous and a.strides[-1] == a.itemsize:
        if shape != a.shape:  # numpy gives a new shape of one chunk C strides, as PyTorch
            return a.reshape(shape)
    st = _view_strides(a.shape, _estrides(a), shape)
    return None if st is None else restride(a, shape, st)


@op("view", "shape", node="ViewBackward0", vjp=_reshape_vjp, variants=M, jvp=LINEAR)
def view(input, *shape):
    if (
        len(shape) == 1
        and isinstance(shape[0], (_dt.dtype, type))
        or (len(shape) == 1 and isinstance(shape[0], str))
    ):
        return view_dtype(input, shape[0])
    a = input._data
    shape = _infer(_size_args(shape, "view"), a.size)
    v = _view_of(a, shape)
    if v is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at "
            "least one dimension spans across two contiguous subspaces). Use "
            ".reshape(...) instead."
        )
    return view.op.record(v, (input,), view_of=input, attrs=(a.shape,))


def view_dtype(input, dtype):
    """Not differentiable, so no autograd view (``_base`` None, as PyTorch); it shares the
    storage and the version counter."""
    d = _dt.as_dtype(dtype)
    return _make(input._data.view(d.np), None, 0, input._vc)


@op(
    "reshape",
    "shape",
    node={
        "view": "ViewBackward0",
        "alias": "ReshapeAliasBackward0",
        "copy": "UnsafeViewBackward0",
    },
    vjp=_reshape_vjp,
    variants=FM,
    jvp=LINEAR,
)
def reshape(input, *shape):
    """A view when the strides allow one (ViewBackward0 for a contiguous input,
    ReshapeAliasBackward0 otherwise, as PyTorch), else a contiguous copy: CloneBackward0
    then UnsafeViewBackward0."""
    a = input._data
    shape = _infer(_size_args(shape, "reshape"), a.size)
    v = _view_of(a, shape)
    if v is not None:
        return reshape.op.record(
            v,
            (input,),
            overload="view" if a.flags.c_contiguous else "alias",
            view_of=input,
            attrs=(a.shape,),
        )
    c = clone.op.record(_dense_copy(a), (input,))
    return reshape.op.record(c._data.reshape(shape), (c,), overload="copy", attrs=(a.shape,))


@op("flatten", "shape", variants=FM, jvp=LINEAR)
def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if nd == 0:
        return reshape(input, 1)
    if s == e:
        return input
    shape = input._data.shape
    n = int(np.prod(shape[s : e + 1], dtype=np.int64))  # not -1: ambiguous over 0 elements
    return reshape(input, shape[:s] + (n,) + shape[e + 1 :])


@op("unflatten", "shape", variants=FM, jvp=LINEAR)
def unflatten(input, dim, sizes):
    shape = input._data.shape
    d = _wrap_dim(dim, len(shape))
    sizes = _size_args((sizes,), "unflatten")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    if not shape:
        raise RuntimeError(
            "unflatten got an unexpected error:\nDimension specified as %d but tensor has no "
            "dimensions" % dim
        )
    try:
        sizes = _infer(sizes, shape[d])
    except RuntimeError as e:
        if "is invalid for input of size" not in str(e):
            raise RuntimeError("unflatten got an unexpected error:\n%s" % e) from None
        raise RuntimeError(
            "unflatten: Provided sizes %s don't multiply up to the size of dim %d (%d) in the "
            "input tensor" % (list(sizes), d, shape[d])
        ) from None
    return view(input, shape[:d] + sizes + shape[d + 1 :])


@op(
    "squeeze",
    "shape",
    node={None: "SqueezeBackward0", "dim": "SqueezeBackward1", "dims": "SqueezeBackward2"},
    vjp=_reshape_vjp,
    variants=FM,
    jvp=LINEAR,
)
def squeeze(input, dim=None):
    a = input._data
    shape = a.shape
    if dim is None:
        drop = {i for i, s in enumerate(shape) if s == 1}
        overload = None
    else:
        many = isinstance(dim, (tuple, list))
        dims = _wrap_dims(dim if many else (dim,), len(shape))
        drop = {i for i in dims if i < len(shape) and shape[i] == 1}
        overload = "dims" if many else "dim"
    # indexing keeps the strides of the dims that stay (PyTorch's squeeze)
    arr = a[tuple(0 if i in drop else slice(None) for i in range(len(shape))) + (Ellipsis,)]
    return squeeze.op.record(arr, (input,), overload=overload, view_of=input, attrs=(shape,))


@batched
def _unsqueeze_vjp(node, grads):
    return (grads[0].squeeze(node.attrs[0] + BATCH.dims),)


@op("unsqueeze", "shape", node="UnsqueezeBackward0", vjp=_unsqueeze_vjp, variants=FM, jvp=LINEAR)
def unsqueeze(input, dim):
    a = input._data
    d = _wrap_dim(dim, a.ndim + 1)
    st = list(_estrides(a))
    st.insert(d, 1 if d >= a.ndim else a.shape[d] * st[d])  # PyTorch's stride for the new dim
    arr = restride(a, a.shape[:d] + (1,) + a.shape[d:], tuple(st))
    return unsqueeze.op.record(arr, (input,), view_of=input, attrs=(d,))


@batched
def _transpose_vjp(node, grads):
    a, b = node.attrs
    if a == b:
        return (grads[0],)
    return (grads[0].transpose(a + BATCH.dims, b + BATCH.dims),)


@op(
    "transpose",
    "shape",
    node="TransposeBackward0",
    vjp=_transpose_vjp,
    variants=FM,
    aliases=("swapaxes", "swapdims"),
    jvp=LINEAR,
)
def transpose(input, dim0, dim1):
    a = input._data
    d0, d1 = _wrap_dim(dim0, a.ndim), _wrap_dim(dim1, a.ndim)
    arr = np.swapaxes(a, d0, d1) if a.ndim else a.view()
    return transpose.op.record(arr, (input,), view_of=input, attrs=(d0, d1))


@batched
def _t_vjp(node, grads):
    g = grads[0]
    return (g.transpose(-1, -2) if g.ndim - BATCH.dims == 2 else g,)


@op("t", "shape", node="TBackward0", vjp=_t_vjp, variants=FM, jvp=LINEAR)
def t(input):
    if input._data.ndim > 2:
        raise RuntimeError(
            "t() expects a tensor with <= 2 dimensions, but self is %dD" % input._data.ndim
        )
    return t.op.record(input._data.T, (input,), view_of=input)


@batched
def _permute_vjp(node, grads):
    nb = BATCH.dims
    return (grads[0].permute(tuple(range(nb)) + tuple(d + nb for d in node.attrs[0])),)


@op("permute", "shape", node="PermuteBackward0", vjp=_permute_vjp, variants=FM, jvp=LINEAR)
def permute(input, *dims):
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _size_args(dims, "permute")
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does "
            "not match the length of the desired ordering of dimensions i.e. "
            "input.dim() = %d is not equal to len(dims) = %d" % (nd, len(dims))
        )
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    inv = tuple(int(i) for i in np.argsort(dims))
    return permute.op.record(input._data.transpose(dims), (input,), view_of=input, attrs=(inv,))


@batched
def _alias_vjp(node, grads):
    return (grads[0],)


@internal_op("alias", "shape", node="AliasBackward0", vjp=_alias_vjp, jvp=LINEAR)
def alias(input):
    """A view of all of ``input`` (PyTorch's ``alias``: movedim of a 0-dim tensor)."""
    return alias.op.record(input._data.view(), (input,), view_of=input)


@op("movedim", "shape", variants=FM, aliases=("moveaxis",), jvp=LINEAR)
def movedim(input, source, destination):
    nd = input._data.ndim
    many = isinstance(source, (list, tuple))
    if many != isinstance(destination, (list, tuple)):
        raise TypeError(
            "movedim() received an invalid combination of arguments - got (%s, %s), but "
            "expected one of:" % (type(source).__name__, type(destination).__name__)
        )
    src = list(source) if many else [source]
    dst = list(destination) if many else [destination]
    if len(src) != len(dst):
        raise RuntimeError(
            "movedim: Invalid source or destination dims: source (%s dims) should contain the "
            "same number of dims as destination (%s dims)" % (src, dst)
        )
    ws = [_wrap_dim(s, nd) for s in src]
    wd = [_wrap_dim(s, nd) for s in dst]
    if len(set(ws)) != len(ws):
        raise RuntimeError("movedim: repeated dim in `source` (%s)" % src)
    if len(set(wd)) != len(wd):
        raise RuntimeError("movedim: repeated dim in `destination` (%s)" % dst)
    if nd == 0:
        return alias(input)
    rest = iter(d for d in range(nd) if d not in ws)
    perm = [None] * nd
    for s, d in zip(ws, wd):
        perm[d] = s
    return permute(input, *[p if p is not None else next(rest) for p in perm])


@batched
def _expand_vjp(node, grads):
    return (sum_to(grads[0], node.attrs[0], BATCH.dims),)


@op("expand", "shape", node="ExpandBackward0", vjp=_expand_vjp, variants=M, jvp=LINEAR)
def expand(input, *sizes):
    if not sizes:
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = _size_args(sizes, "expand")
    a = input._data
    shape = a.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            "expand(torch.FloatTensor{%s}, size=%s): the number of sizes provided "
            "(%d) must be greater or equal to the number of dimensions in the "
            "tensor (%d)" % (list(shape), list(sizes), len(sizes), len(shape))
        )
    if not shape and any(s < 0 for s in sizes):
        raise RuntimeError("numel: integer multiplication overflow")
    # PyTorch's infer_expand_geometry, from the last dim: a new leading dim has the stride of
    # a contiguous one unless it really expands (stride 0)
    src = _estrides(a)
    n = len(sizes)
    target, strides = [0] * n, [0] * n
    for i in range(n - 1, -1, -1):
        d = len(shape) - n + i
        size = shape[d] if d >= 0 else 1
        stride = src[d] if d >= 0 else (target[i + 1] * strides[i + 1] if i + 1 < n else 1)
        want = sizes[i]
        if want == -1:
            if d < 0:
                raise RuntimeError(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, "
                    "non-existing dimension %d" % i
                )
            want = size
        if size != want:
            if size != 1:
                raise RuntimeError(
                    "The expanded size of the tensor (%d) must match the existing size (%d) at "
                    "non-singleton dimension %d.  Target sizes: %s.  Tensor sizes: %s"
                    % (want, size, i, list(sizes), list(shape))
                )
            size, stride = want, 0
        target[i], strides[i] = size, stride
    if any(s < 0 for s in target):
        raise RuntimeError("numel: integer multiplication overflow")
    # a writeable stride-0 view (np.broadcast_to's is read-only); in-place writes to it are
    # refused by autograd.inplace.check_inplace with PyTorch's "single memory location" error
    isz = a.itemsize
    arr = _as_strided(a, tuple(target), tuple(st * isz for st in strides))
    return expand.op.record(arr, (input,), view_of=input, attrs=(shape,))


@op("expand_as", "shape", variants=M, jvp=LINEAR)
def expand_as(input, other):
    return expand(input, other._data.shape)


@op("broadcast_to", "shape", variants=FM, jvp=LINEAR)
def broadcast_to(input, size):
    return expand(input, tuple(size))


def broadcast_shape(shapes):
    """PyTorch's infer_size over ``shapes`` (its error names the running shape 'a')."""
    out = ()
    for s in shapes:
        n = max(len(out), len(s))
        res = []
        for i in range(n - 1, -1, -1):
            off = n - 1 - i
            da, db = len(out) - 1 - off, len(s) - 1 - off
            sa = out[da] if da >= 0 else 1
            sb = s[db] if db >= 0 else 1
            if sa != sb and sa != 1 and sb != 1:
                raise RuntimeError(
                    "The size of tensor a (%d) must match the size of tensor b (%d) at "
                    "non-singleton dimension %d" % (sa, sb, i)
                )
            res.append(sb if sa == 1 else sa)
        out = tuple(reversed(res))
    return out


@op("broadcast_tensors", "shape", variants=F)
def broadcast_tensors(*tensors):
    shape = broadcast_shape([t._data.shape for t in tensors])
    return tuple(t if t._data.shape == shape else expand(t, *shape) for t in tensors)


@op("sum_to_size", "shape", variants=M, jvp=LINEAR)
def sum_to_size(input, *size):
    """PyTorch's sum_to_size: ``sum()`` for ``()``, else the broadcast dims summed with
    keepdim and a view dropping the leading ones; ``input`` itself when nothing changes."""
    if not size:
        raise TypeError('sum_to_size() missing 1 required positional arguments: "size"')
    size = _size_args(size, "sum_to_size")
    shape = input._data.shape
    lead_n = len(shape) - len(size)
    if lead_n < 0 or any(s != t and s != 1 for s, t in zip(reversed(size), reversed(shape))):
        raise RuntimeError("size {%s} is not expandable to size {%s}." % (list(size), list(shape)))
    if not size:
        return input.sum()
    dims = list(range(lead_n)) + [
        i for i in range(lead_n, len(shape)) if size[i - lead_n] == 1 and shape[i] != 1
    ]
    r = input.sum(dims, keepdim=True) if dims else input
    return r.view(size) if lead_n else r


# -- split / chunk / unbind / cat / stack ----------------------------------------------------------


@batched
def _split_vjp(node, grads):
    dim, sizes, shape, dtype = node.attrs
    b = lead(next(g for g in grads if g is not None))
    parts = []
    for g, n in zip(grads, sizes):
        if g is None:
            s = list(shape)
            s[dim] = n
            g = zeros(
                b + tuple(s), dtype=dtype, device=next(x for x in grads if x is not None).device
            )
        parts.append(g)
    return (cat(parts, dim + len(b)),)


def _split_views(tensor, d, sizes, overload):
    a = tensor._data
    parts, start = [], 0
    pre = (slice(None),) * d
    for n in sizes:
        parts.append(a[pre + (slice(start, start + n),)])
        start += n
    outs = split.op.record(
        tuple(parts), (tensor,), overload=overload, attrs=(d, sizes, a.shape, tensor._dtype)
    )
    _mark_views(tensor, outs)
    return outs


def _mark_views(tensor, outs):
    """Outputs of a multi-view op are views of the input's base sharing its version counter,
    made with PyTorch's MULTI_OUTPUT_NODE creation meta (NOTE [view creation meta]: in-place
    writes to them are refused, and they cannot follow one to their base)."""
    base = view_base(tensor)
    fast = STATE.enabled and not tensor._cmeta and not tensor._inference
    for o in outs:
        o._vc = tensor._vc
        o._base = base
        if fast:
            o._cmeta = CM_MULTI_OUTPUT
        else:
            view_meta(o, tensor, base, True)


@op(
    "split",
    "shape",
    node={"size": "SplitBackward0", "sizes": "SplitWithSizesBackward0"},
    vjp=_split_vjp,
    variants=FM,
    jvp=LINEAR,
)
def split(tensor, split_size_or_sections, dim=0):
    a = tensor._data
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if isinstance(split_size_or_sections, numbers.Integral) and not isinstance(
        split_size_or_sections, bool
    ):
        s = int(split_size_or_sections)
        if s < 0:
            raise RuntimeError(
                "split expects split_size be non-negative, but got split_size=%d" % s
            )
        d = _wrap_dim(dim, a.ndim)
        n = a.shape[d]
        if s == 0 and n > 0:
            raise RuntimeError(
                "split_size can only be 0 if dimension size is 0, but got dimension size of %d" % n
            )
        k = max(-(-n // s), 1) if s else 1  # PyTorch: at least one split
        sizes = [s] * (k - 1) + [n - s * (k - 1)]
        return _split_views(tensor, d, sizes, "size")
    if not isinstance(split_size_or_sections, (list, tuple)):
        raise TypeError(
            "split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
            "not %s" % type(split_size_or_sections).__name__
        )
    return split_with_sizes(tensor, split_size_or_sections, dim)


def split_with_sizes(tensor, split_sizes, dim=0):
    a = tensor._data
    if a.ndim == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    sizes = list(_size_args((split_sizes,), "split_with_sizes"))
    d = _wrap_dim(dim, a.ndim)
    if any(s < 0 for s in sizes):
        raise RuntimeError(
            "split_with_sizes expects split_sizes have only non-negative entries, but got "
            "split_sizes=%s" % sizes
        )
    if sum(sizes) != a.shape[d]:
        raise RuntimeError(
            "split_with_sizes expects split_sizes to sum exactly to %d (input tensor's size at "
            "dimension %d), but got split_sizes=%s" % (a.shape[d], dim, sizes)
        )
    return _split_views(tensor, d, sizes, "sizes")


@op("chunk", "shape", variants=FM, jvp=LINEAR)
def chunk(input, chunks, dim=0):
    a = input._data
    if a.ndim == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    n = a.shape[_wrap_dim(dim, a.ndim)]
    size = -(-n // chunks)
    if n == 0:  # PyTorch: `chunks` empty pieces (split_with_sizes)
        return split_with_sizes(input, [0] * chunks, dim)
    return split(input, size, dim)


@batched
def _unbind_vjp(node, grads):
    dim, shape, dtype = node.attrs
    if not STATE.enabled and not BATCH.dims:  # NOTE [per-node cost]: arrays, no graph
        parts = [g._data if g is not None else None for g in grads]
        ref = next(p for p in parts if p is not None)
        if type(ref) is np.ndarray and all(
            p is None or (p.dtype == ref.dtype and p.shape == ref.shape) for p in parts
        ):
            zero = None
            for i, p in enumerate(parts):
                if p is None:
                    if zero is None:
                        zero = np.zeros(ref.shape, ref.dtype)
                    parts[i] = zero
            out = np.array(parts) if dim == 0 else np.stack(parts, axis=dim)
            return (_make(out),)
    g0 = next(g for g in grads if g is not None)
    b = lead(g0)
    s = b + shape[:dim] + shape[dim + 1 :]
    z = [g if g is not None else zeros(s, dtype=dtype, device=g0.device) for g in grads]
    return (stack(z, dim + len(b)),)


@op("unbind", "shape", node="UnbindBackward0", vjp=_unbind_vjp, variants=FM, jvp=LINEAR)
def unbind(input, dim=0):
    a = input._data
    d = _wrap_dim(dim, a.ndim)
    if a.ndim == 0:
        raise IndexError("Dimension specified as %d but tensor has no dimensions" % d)
    pre = (slice(None),) * d
    parts = tuple(a[pre + (i, Ellipsis)] for i in range(a.shape[d]))  # views, as PyTorch
    attrs = (d, a.shape, input._dtype)
    if STATE.enabled and input._requires_grad and not input._cmeta and not input._inference:
        # NOTE [per-op cost]: the common case of record + _mark_views in one pass
        op = unbind.op
        node = new_node(op.node, (input,), op.vjp, attrs)
        node._nout = len(parts)
        base = view_base(input)
        vc = input._vc
        outs = tuple(_make(p, node, i, vc, base) for i, p in enumerate(parts))
        for o in outs:
            o._cmeta = CM_MULTI_OUTPUT
        return outs
    outs = unbind.op.record(parts, (input,), attrs=attrs)
    _mark_views(input, outs)
    return outs


@batched
def _cat_vjp(node, grads):
    dim, sizes = node.attrs
    g = grads[0]
    b = lead(g)
    dim += len(b)
    out, start = [], 0
    for n in sizes:
        if n is None:  # a skipped (0,) input: PyTorch's zeros of its shape
            out.append(zeros(b + (0,), dtype=g.dtype, device=g.device))
            continue
        out.append(g.narrow(dim, start, n))
        start += n
    return tuple(out)


def _skipped(t):
    """PyTorch's cat_should_skip_tensor: a 1-dim empty tensor takes no part in cat."""
    return t._data.ndim == 1 and t._data.shape[0] == 0


@op(
    "cat",
    "shape",
    node="CatBackward0",
    vjp=_cat_vjp,
    variants=(FUNCTION, OUT),
    aliases=("concat", "concatenate"),
)
def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(tensors):
        if t._data.ndim == 0:
            raise RuntimeError(
                "zero-dimensional tensor (at position %d) cannot be concatenated" % i
            )
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        dt = _dt.promote_types(dt, t._dtype)
    valid = [t for t in tensors if not _skipped(t)]
    if not valid:
        return cat.op.record(_new((0,), dt), tensors, attrs=(0, [None] * len(tensors)))
    ref = valid[0]._data
    d = _wrap_dim(dim, ref.ndim)
    total = 0
    for i, t in enumerate(tensors):
        if _skipped(t):
            continue
        s = t._data.shape
        if len(s) != ref.ndim:
            raise RuntimeError(
                "Tensors must have same number of dimensions: got %d and %d" % (ref.ndim, len(s))
            )
        for k in range(ref.ndim):
            if k != d and s[k] != ref.shape[k]:
                raise RuntimeError(
                    "Sizes of tensors must match except in dimension %d. Expected size %d but "
                    "got size %d for tensor number %d in the list." % (d, ref.shape[k], s[k], i)
                )
        total += s[d]
    shape = ref.shape[:d] + (total,) + ref.shape[d + 1 :]
    if type(ref) is DeviceArray:  # NOTE [device storage]
        device_of(*valid)
        out = _cuda_shape().cat([t._data for t in valid], d, shape, dt.np)
        sizes = [None if _skipped(t) else t._data.shape[d] for t in tensors]
        return cat.op.record(out, tensors, attrs=(d, sizes))
    out = _new(shape, dt)  # contiguous, as PyTorch (no channels_last in nbgrad)
    if out.size:
        np.concatenate([t._data for t in valid], axis=d, out=out, casting="unsafe")
    sizes = [None if _skipped(t) else t._data.shape[d] for t in tensors]
    return cat.op.record(out, tensors, attrs=(d, sizes))


@batched
def _stack_vjp(node, grads):
    (dim,) = node.attrs
    if not STATE.enabled and not BATCH.dims:  # NOTE [per-node cost]: array views, no graph
        a = grads[0]._data
        pre = (slice(None),) * dim
        return tuple(_make(a[pre + (i, Ellipsis)]) for i in range(a.shape[dim]))
    return tuple(grads[0].unbind(dim + BATCH.dims))


@op("stack", "shape", node="StackBackward0", vjp=_stack_vjp, variants=(FUNCTION, OUT))
def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    d = _wrap_dim(dim, tensors[0]._data.ndim + 1)
    for i, t in enumerate(tensors[1:], 1):
        if t._data.shape != tensors[0]._data.shape:
            raise RuntimeError(
                "stack expects each tensor to be equal size, but got %s at entry 0 "
                "and %s at entry %d" % (list(tensors[0]._data.shape), list(t._data.shape), i)
            )
    dt = t0 = tensors[0]._dtype
    for t in tensors[1:]:
        if t._dtype is not t0:
            dt = _dt.promote_types(dt, t._dtype)
    s = tensors[0]._data.shape
    if type(tensors[0]._data) is DeviceArray:  # NOTE [device storage]
        device_of(*tensors)
        out = _cuda_shape().stack([t._data for t in tensors], d, dt.np)
        return stack.op.record(out, tensors, attrs=(d,))
    if d == 0 and dt is t0:
        # NOTE [per-op cost]: np.array of same-dtype arrays is a contiguous stack in ~0.4 us
        # (np.stack, a Python function: ~3.5 us)
        out = np.array([t._data for t in tensors], dtype=dt.np)
    else:
        out = _new(s[:d] + (len(tensors),) + s[d:], dt)  # contiguous, as PyTorch
        if out.size:
            np.stack([t._data for t in tensors], axis=d, out=out, casting="unsafe")
    return stack.op.record(out, tensors, attrs=(d,))


# -- flip / roll / narrow / tril / triu ----------------------------------------------------------


@batched
def _flip_vjp(node, grads):
    return (grads[0].flip(tuple(d + BATCH.dims for d in node.attrs[0])),)


@op("flip", "shape", node="FlipBackward0", vjp=_flip_vjp, variants=FM, jvp=LINEAR)
def flip(input, *dims_args, dims=None):
    """Always a new tensor (PyTorch), in the input's layout; ``x.flip(0, 2)`` or
    ``flip(x, (0, 2))``."""
    if dims is None:
        if not dims_args:
            raise TypeError('flip() missing 1 required positional arguments: "dims"')
        dims = dims_args[0] if len(dims_args) == 1 else dims_args
    elif dims_args:
        raise TypeError(
            "flip() takes 1 positional argument but %d were given" % (1 + len(dims_args))
        )
    a = input._data
    dims = _wrap_dims(dims if isinstance(dims, (list, tuple)) else (dims,), a.ndim)
    if type(a) is DeviceArray:  # NOTE [device storage]
        return flip.op.record(_cuda_shape().flip(a, dims), (input,), attrs=(dims,))
    out = np.flip(a, dims).copy(order="K") if a.ndim else a.copy()  # always a new tensor
    if out.strides != a.strides:  # PyTorch: empty_like(input), preserve_format
        out = _like_layout(out, a)
    return flip.op.record(out, (input,), attrs=(dims,))


@batched
def _roll_vjp(node, grads):
    shifts, dims = node.attrs
    g = grads[0]
    b = lead(g)
    neg = tuple(-s for s in shifts)
    if dims is None:  # rolled flat: per batch element
        return (g.reshape(b + (-1,)).roll(neg[0], len(b)).reshape(g.shape),)
    return (g.roll(neg, tuple(d + len(b) for d in dims)),)


def _roll_array(a, shifts, dims):
    """PyTorch's roll recursion (roll_common): an empty tensor rolls to a copy before its dims
    are checked, one dim at a time."""
    if a.size == 0:
        return a
    d = dims[0]
    if a.ndim == 0:
        raise IndexError("Dimension specified as %d but tensor has no dimensions" % d)
    d = _wrap_dim(d, a.ndim)
    r = np.roll(a, shifts[0], d) if type(a) is np.ndarray else _cuda_shape().roll(a, shifts[0], d)
    return _roll_array(r, shifts[1:], dims[1:]) if len(dims) > 1 else r


@op("roll", "shape", node="RollBackward0", vjp=_roll_vjp, variants=FM, jvp=LINEAR)
def roll(input, shifts, dims=None):
    a = input._data
    shifts = tuple(shifts) if isinstance(shifts, (list, tuple)) else (shifts,)
    dims = () if dims is None else tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims and len(shifts) == 1:  # the flattened tensor rolls
        if type(a) is DeviceArray:
            arr = _cuda_shape().roll(a.reshape(a.size), shifts[0], 0).reshape(a.shape)
            return roll.op.record(arr, (input,), attrs=(shifts, None))
        arr = np.roll(np.ascontiguousarray(a).reshape(-1), shifts[0]).reshape(a.shape)
        return roll.op.record(arr, (input,), attrs=(shifts, None))
    if len(shifts) != len(dims):
        raise RuntimeError(
            "shifts and dimensions must align. shifts: %d, dims:%d" % (len(shifts), len(dims))
        )
    r = _roll_array(a, shifts, dims)
    arr = preserve_array(a) if a.size == 0 else (_contig(r) if type(r) is np.ndarray else r)
    wdims = tuple(_wrap_dim(d, a.ndim) for d in dims) if a.size else tuple(dims)
    return roll.op.record(arr, (input,), attrs=(shifts, wdims))


@op("narrow", "shape", variants=FM, jvp=LINEAR)
def narrow(input, dim, start, length):
    a = input._data
    if a.ndim == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = _wrap_dim(dim, a.ndim)
    n = a.shape[d]
    if isinstance(start, Tensor):
        if start._data.ndim != 0 or not start._dtype.is_integral:
            raise RuntimeError("start must be an 0-dim integral Tensor.")
        start = int(start._data)
    elif not isinstance(start, numbers.Integral):
        raise TypeError(
            "narrow() received an invalid combination of arguments - got (int, %s, int), but "
            "expected one of:" % type(start).__name__
        )
    if not -n <= start <= n:
        raise IndexError(
            "start out of range (expected to be in range of [%d, %d], but got %d)" % (-n, n, start)
        )
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(
            "start (%d) + length (%d) exceeds dimension size (%d)." % (start, length, n)
        )
    idx = (slice(None),) * d + (slice(start, start + length),)
    from .indexing import basic_index  # cycle: indexing builds on shape's views

    return basic_index(input, idx, "SliceBackward0")


@batched  # tril/triu act on the last two dims
def _tri_vjp(node, grads):
    upper, k = node.attrs
    return (grads[0].triu(k) if upper else grads[0].tril(k),)


@op(
    "tril",
    "shape",
    node="TrilBackward0",
    vjp=_tri_vjp,
    variants=(FUNCTION, METHOD, INPLACE),
    jvp=LINEAR,
)
def tril(input, diagonal=0):
    if input._data.ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    a = input._data
    arr = (
        _contig(np.tril(a, diagonal))
        if type(a) is np.ndarray
        else _cuda_shape().tri(a, diagonal, False)
    )
    return tril.op.record(arr, (input,), attrs=(False, diagonal))


@op(
    "triu",
    "shape",
    node="TriuBackward0",
    vjp=_tri_vjp,
    variants=(FUNCTION, METHOD, INPLACE),
    jvp=LINEAR,
)
def triu(input, diagonal=0):
    if input._data.ndim < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    a = input._data
    arr = (
        _contig(np.triu(a, diagonal))
        if type(a) is np.ndarray
        else _cuda_shape().tri(a, diagonal, True)
    )
    return triu.op.record(arr, (input,), attrs=(True, diagonal))


# -- copies: clone / contiguous / to / repeat ------------------------------------------------------


@batched
def _clone_vjp(node, grads):
    return (grads[0],)


@op("clone", "shape", node="CloneBackward0", vjp=_clone_vjp, variants=FM, jvp=LINEAR)
def clone(input, *, memory_format=None):
    """A copy in the input's layout (PyTorch's preserve_format)."""
    return clone.op.record(preserve_array(input._data), (input,))


@op("contiguous", "shape", node="CloneBackward0", vjp=_clone_vjp, variants=M, jvp=LINEAR)
def contiguous(input, memory_format=None):
    if input._data.flags.c_contiguous:
        return input
    return contiguous.op.record(_dense_copy(input._data), (input,))


def _cuda_shape():
    from .cuda import shape as cuda_shape  # lazy: the CUDA path loads on first use

    return cuda_shape


def _dense_copy(a):
    """A C-contiguous copy of ``a`` (numpy or CUDA)."""
    return np.ascontiguousarray(a) if type(a) is np.ndarray else a.contiguous()


@batched
def _to_vjp(node, grads):
    return (grads[0].to(dtype=node.attrs[0], device=node.attrs[1]),)


@op("to", "shape", node="ToCopyBackward0", vjp=_to_vjp)  # Tensor.to parses its arguments
def to_dtype(input, dtype=None, copy=False, device=None):
    """A copy in ``dtype`` and/or on ``device`` (``input`` itself when nothing changes and
    ``copy`` is False); differentiable: the gradient goes back in the input's dtype and to its
    device."""
    d = input._dtype if dtype is None else _dt.as_dtype(dtype)
    arr = input._data
    src = transfer.array_device(arr)
    dev = src if device is None else check_device(device)
    moved = dev != src
    if d is input._dtype and not copy and not moved:
        return input
    if moved:
        arr = transfer.move(arr, dev)
        if arr.dtype != d.np:
            arr = arr.astype(d.np)
    elif type(arr) is np.ndarray:
        arr = preserve_array(arr, d.np)
    else:
        arr = arr.astype(d.np)  # a dense device copy
    if not d.is_inexact:
        return _make(arr)
    return to_dtype.op.record(arr, (input,), attrs=(input._dtype, src))


@batched
def _repeat_vjp(node, grads):
    shape, reps = node.attrs
    g = grads[0]
    b = lead(g)
    if 0 in reps:  # PyTorch's repeat_backward: zeros (an empty input still sums, in a graph)
        return (zeros(b + tuple(shape), dtype=g.dtype, device=g.device),)
    full = (1,) * (len(reps) - len(shape)) + tuple(shape)
    # (r0, s0, r1, s1, ...) then sum the repeat axes
    split_shape = []
    for r, s in zip(reps, full):
        split_shape += [r, s]
    g = g.reshape(b + tuple(split_shape))
    g = g.sum(tuple(len(b) + k for k in range(0, 2 * len(reps), 2)))
    return (g.reshape(b + tuple(shape)),)


@op("repeat", "shape", node="RepeatBackward0", vjp=_repeat_vjp, variants=M, jvp=LINEAR)
def repeat(input, *sizes):
    if not sizes:
        raise TypeError('repeat() missing 1 required positional arguments: "repeats"')
    reps = _size_args(sizes, "repeat")
    a = input._data
    if len(reps) < a.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    padded = (1,) * (len(reps) - a.ndim) + a.shape
    target = tuple(p * r for p, r in zip(padded, reps))
    for s in target:
        if s < 0:
            raise RuntimeError(
                "Trying to create tensor with negative dimension %d: %s" % (s, list(target))
            )
    if type(a) is DeviceArray:  # NOTE [device storage]
        arr = _cuda_shape().tile(a, reps, target) if reps else a.copy()
    elif 0 in target:
        arr = _alloc(np.empty, target, input._dtype)
    else:
        arr = _alloc(
            lambda shape, npd: _contig(np.tile(a, reps)) if reps else a.copy(),
            target,
            input._dtype,
        )
    return repeat.op.record(arr, (input,), attrs=(a.shape, reps))
