"""Shape and movement ops.  Views share storage, version counter and ``_base`` with their
input; their backward is the inverse movement of the gradient."""

import numbers

import numpy as np

from .. import dtypes as _dt
from .._tensor import Tensor, _wrap_dim
from ..autograd.batching import BATCH, batched, lead, sum_to
from ..creation import zeros
from .registry import FUNCTION, INPLACE, LINEAR, METHOD, OUT, op

_make = Tensor._make
F, M, FM = (FUNCTION,), (METHOD,), (FUNCTION, METHOD)


def _size_args(shape):
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(int(s) for s in shape)


def _infer(shape, numel):
    shape = list(shape)
    neg = [i for i, s in enumerate(shape) if s == -1]
    if len(neg) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = 1
    for s in shape:
        if s != -1:
            if s < 0:
                raise RuntimeError("invalid shape dimension %d" % s)
            known *= s
    if neg:
        if known == 0 or numel % known:
            raise RuntimeError("shape '%s' is invalid for input of size %d" % (shape, numel))
        shape[neg[0]] = numel // known
    elif known != numel:
        raise RuntimeError("shape '%s' is invalid for input of size %d" % (shape, numel))
    return tuple(shape)


def _try_view(a, shape):
    v = a.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    return v


@batched
def _reshape_vjp(node, grads):
    g = grads[0]
    return (g.reshape(lead(g) + node.attrs[0]),)


@op("view", "shape", node="ViewBackward0", vjp=_reshape_vjp, variants=M, jvp=LINEAR)
def view(input, *shape):
    if (
        len(shape) == 1
        and isinstance(shape[0], (_dt.dtype, type))
        or (len(shape) == 1 and isinstance(shape[0], str))
    ):
        return view_dtype(input, shape[0])
    shape = _infer(_size_args(shape), input._data.size)
    v = _try_view(input._data, shape)
    if v is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at "
            "least one dimension spans across two contiguous subspaces). Use "
            ".reshape(...) instead."
        )
    return view.op.record(v, (input,), view_of=input, attrs=(input._data.shape,))


def view_dtype(input, dtype):
    d = _dt.as_dtype(dtype)
    return _make(input._data.view(d.np), None, 0, input._vc, input._base or input)


@op(
    "reshape",
    "shape",
    node={"view": "ViewBackward0", "copy": "UnsafeViewBackward0"},
    vjp=_reshape_vjp,
    variants=FM,
    jvp=LINEAR,
)
def reshape(input, *shape):
    shape = _infer(_size_args(shape), input._data.size)
    v = _try_view(input._data, shape)
    if v is not None:
        return reshape.op.record(
            v, (input,), overload="view", view_of=input, attrs=(input._data.shape,)
        )
    return reshape.op.record(
        input._data.reshape(shape), (input,), overload="copy", attrs=(input._data.shape,)
    )


@op("flatten", "shape", variants=FM, jvp=LINEAR)
def flatten(input, start_dim=0, end_dim=-1):
    nd = input._data.ndim
    if nd == 0:
        return reshape(input, 1)
    s = _wrap_dim(start_dim, nd)
    e = _wrap_dim(end_dim, nd)
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return input
    shape = input._data.shape
    return reshape(input, shape[:s] + (-1,) + shape[e + 1 :])


@op("unflatten", "shape", variants=FM, jvp=LINEAR)
def unflatten(input, dim, sizes):
    d = _wrap_dim(dim, input._data.ndim)
    shape = input._data.shape
    return reshape(input, shape[:d] + tuple(sizes) + shape[d + 1 :])


@op(
    "squeeze",
    "shape",
    node={None: "SqueezeBackward0", "dim": "SqueezeBackward1", "dims": "SqueezeBackward2"},
    vjp=_reshape_vjp,
    variants=FM,
    jvp=LINEAR,
)
def squeeze(input, dim=None):
    shape = input._data.shape
    if dim is None:
        new = tuple(s for s in shape if s != 1)
        overload = None
    else:
        dims = dim if isinstance(dim, (tuple, list)) else (dim,)
        dims = {_wrap_dim(d, len(shape)) for d in dims}
        new = tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1))
        overload = "dims" if isinstance(dim, (tuple, list)) else "dim"
    return squeeze.op.record(
        input._data.reshape(new), (input,), overload=overload, view_of=input, attrs=(shape,)
    )


@batched
def _unsqueeze_vjp(node, grads):
    return (grads[0].squeeze(node.attrs[0] + BATCH.dims),)


@op("unsqueeze", "shape", node="UnsqueezeBackward0", vjp=_unsqueeze_vjp, variants=FM, jvp=LINEAR)
def unsqueeze(input, dim):
    d = _wrap_dim(dim, input._data.ndim + 1)
    return unsqueeze.op.record(np.expand_dims(input._data, d), (input,), view_of=input, attrs=(d,))


@batched
def _transpose_vjp(node, grads):
    a, b = node.attrs
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
    nd = input._data.ndim
    a, b = _wrap_dim(dim0, nd), _wrap_dim(dim1, nd)
    return transpose.op.record(
        np.swapaxes(input._data, a, b), (input,), view_of=input, attrs=(a, b)
    )


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
    return (grads[0].permute(*range(nb), *[d + nb for d in node.attrs[0]]),)


@op("permute", "shape", node="PermuteBackward0", vjp=_permute_vjp, variants=FM, jvp=LINEAR)
def permute(input, *dims):
    dims = _size_args(dims)
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


@op("movedim", "shape", variants=FM, aliases=("moveaxis",), jvp=LINEAR)
def movedim(input, source, destination):
    nd = input._data.ndim
    order = list(range(nd))
    src = [_wrap_dim(s, nd) for s in (source if isinstance(source, (list, tuple)) else [source])]
    dst = [
        _wrap_dim(s, nd)
        for s in (destination if isinstance(destination, (list, tuple)) else [destination])
    ]
    rest = [d for d in order if d not in src]
    perm = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return permute(input, *perm)


@batched
def _expand_vjp(node, grads):
    return (sum_to(grads[0], node.attrs[0], BATCH.dims),)


@op("expand", "shape", node="ExpandBackward0", vjp=_expand_vjp, variants=M, jvp=LINEAR)
def expand(input, *sizes):
    sizes = _size_args(sizes)
    shape = input._data.shape
    if len(sizes) < len(shape):
        raise RuntimeError(
            "expand(torch.FloatTensor{%s}, size=%s): the number of sizes provided "
            "(%d) must be greater or equal to the number of dimensions in the "
            "tensor (%d)" % (list(shape), list(sizes), len(sizes), len(shape))
        )
    off = len(sizes) - len(shape)
    target = []
    for i, s in enumerate(sizes):
        if i < off:
            if s < 0:
                raise RuntimeError(
                    "The expanded size of the tensor (%d) isn't allowed in a "
                    "leading, non-existing dimension %d" % (s, i)
                )
            target.append(s)
        else:
            cur = shape[i - off]
            if s == -1:
                s = cur
            if cur != s and cur != 1:
                raise RuntimeError(
                    "The expanded size of the tensor (%d) must match the existing "
                    "size (%d) at non-singleton dimension %d.  Target sizes: %s.  "
                    "Tensor sizes: %s" % (s, cur, i, list(sizes), list(shape))
                )
            target.append(s)
    # a writeable stride-0 view (np.broadcast_to's is read-only); in-place writes to it are
    # refused by autograd.inplace.check_inplace with PyTorch's "single memory location" error
    src = input._data
    strides = [0] * (len(target) - src.ndim) + [
        0 if (s == 1 and t != 1) else st for s, t, st in zip(src.shape, target[off:], src.strides)
    ]
    arr = np.lib.stride_tricks.as_strided(
        src, tuple(target), tuple(strides), writeable=src.flags.writeable
    )
    return expand.op.record(arr, (input,), view_of=input, attrs=(shape,))


@op("expand_as", "shape", variants=M, jvp=LINEAR)
def expand_as(input, other):
    return expand(input, *other._data.shape)


@op("broadcast_to", "shape", variants=FM, jvp=LINEAR)
def broadcast_to(input, size):
    return expand(input, *size)


@op("broadcast_tensors", "shape", variants=F)
def broadcast_tensors(*tensors):
    shape = np.broadcast_shapes(*[t._data.shape for t in tensors])
    return tuple(expand(t, *shape) for t in tensors)


@op("sum_to_size", "shape", variants=M, jvp=LINEAR)
def sum_to_size(input, *size):
    """Sum ``input`` down to ``size`` (the inverse of broadcasting; ``batching.sum_to``)."""
    return sum_to(input, _size_args(size), 0)


@batched
def _split_vjp(node, grads):
    dim, sizes, shape, dtype = node.attrs
    b = lead(next(g for g in grads if g is not None))
    parts = []
    for g, n in zip(grads, sizes):
        if g is None:
            s = list(shape)
            s[dim] = n
            g = zeros(*b, *s, dtype=dtype)
        parts.append(g)
    return (cat(parts, dim + len(b)),)


@op(
    "split",
    "shape",
    node={"size": "SplitBackward0", "sizes": "SplitWithSizesBackward0"},
    vjp=_split_vjp,
    variants=FM,
    jvp=LINEAR,
)
def split(tensor, split_size_or_sections, dim=0):
    d = _wrap_dim(dim, tensor._data.ndim)
    n = tensor._data.shape[d]
    if isinstance(split_size_or_sections, numbers.Integral):
        s = int(split_size_or_sections)
        if s <= 0 and n > 0:
            raise RuntimeError(
                "split_size can only be 0 if dimension size is 0, but got dimension size of %d" % n
            )
        sizes = [s] * (n // s) + ([n % s] if n % s else []) if s else [0]
    else:
        sizes = [int(v) for v in split_size_or_sections]
        if sum(sizes) != n:
            raise RuntimeError(
                "split_with_sizes expects split_sizes to sum exactly to %d "
                "(input tensor's size at dimension %d), but got split_sizes=%s" % (n, d, sizes)
            )
    idx = np.cumsum(sizes)[:-1]
    parts = np.split(tensor._data, idx, axis=d)
    overload = "size" if isinstance(split_size_or_sections, numbers.Integral) else "sizes"
    outs = split.op.record(
        tuple(parts),
        (tensor,),
        overload=overload,
        attrs=(d, sizes, tensor._data.shape, tensor._dtype),
    )
    base = tensor._base if tensor._base is not None else tensor
    for o in outs:
        o._vc = tensor._vc
        o._base = base
    return outs


@op("chunk", "shape", variants=FM, jvp=LINEAR)
def chunk(input, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: %d" % chunks)
    n = input._data.shape[_wrap_dim(dim, input._data.ndim)]
    size = -(-n // chunks) if n else 1
    return split(input, size, dim)


@batched
def _unbind_vjp(node, grads):
    dim, shape, dtype = node.attrs
    b = lead(next(g for g in grads if g is not None))
    s = b + shape[:dim] + shape[dim + 1 :]
    return (stack([g if g is not None else zeros(*s, dtype=dtype) for g in grads], dim + len(b)),)


@op("unbind", "shape", node="UnbindBackward0", vjp=_unbind_vjp, variants=FM, jvp=LINEAR)
def unbind(input, dim=0):
    d = _wrap_dim(dim, input._data.ndim)
    parts = tuple(np.take(input._data, i, axis=d) for i in range(input._data.shape[d]))
    return unbind.op.record(parts, (input,), attrs=(d, input._data.shape, input._dtype))


@batched
def _cat_vjp(node, grads):
    dim, sizes = node.attrs
    g = grads[0]
    dim += BATCH.dims
    out, start = [], 0
    for n in sizes:
        out.append(None if n is None else g.narrow(dim, start, n))
        start += n or 0
    return tuple(out)


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
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    nonempty = [t for t in tensors if not (t._data.ndim == 1 and t._data.shape[0] == 0)]
    keep = {id(t) for t in nonempty}
    ref = nonempty[0] if nonempty else tensors[0]
    d = _wrap_dim(dim, ref._data.ndim)
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        dt = _dt.promote_types(dt, t._dtype)
    for i, t in enumerate(nonempty):
        if t._data.ndim != ref._data.ndim:
            raise RuntimeError(
                "Tensors must have same number of dimensions: got %d and %d"
                % (ref._data.ndim, t._data.ndim)
            )
        for k in range(ref._data.ndim):
            if k != d and t._data.shape[k] != ref._data.shape[k]:
                raise RuntimeError(
                    "Sizes of tensors must match except in dimension %d. Expected "
                    "size %d but got size %d for tensor number %d in the list."
                    % (d, ref._data.shape[k], t._data.shape[k], i)
                )
    arr = (
        np.concatenate([t._data.astype(dt.np, copy=False) for t in nonempty], axis=d)
        if nonempty
        else np.empty((0,), dt.np)
    )
    sizes = [t._data.shape[d] if id(t) in keep else 0 for t in tensors]
    return cat.op.record(arr, tensors, attrs=(d, sizes))


@batched
def _stack_vjp(node, grads):
    (dim,) = node.attrs
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
    dt = tensors[0]._dtype
    for t in tensors[1:]:
        dt = _dt.promote_types(dt, t._dtype)
    arr = np.stack([t._data.astype(dt.np, copy=False) for t in tensors], axis=d)
    return stack.op.record(arr, tensors, attrs=(d,))


@batched
def _flip_vjp(node, grads):
    return (grads[0].flip(tuple(d + BATCH.dims for d in node.attrs[0])),)


@op("flip", "shape", node="FlipBackward0", vjp=_flip_vjp, variants=FM, jvp=LINEAR)
def flip(input, dims):
    dims = dims if isinstance(dims, (list, tuple)) else (dims,)
    nd = input._data.ndim
    dims = tuple(_wrap_dim(d, nd) for d in dims)
    return flip.op.record(np.ascontiguousarray(np.flip(input._data, dims)), (input,), attrs=(dims,))


def _roll_vjp(node, grads):
    shifts, dims = node.attrs
    neg = tuple(-s for s in shifts)
    return (grads[0].roll(neg if dims is not None else neg[0], dims),)


@op("roll", "shape", node="RollBackward0", vjp=_roll_vjp, variants=FM, jvp=LINEAR)
def roll(input, shifts, dims=None):
    if dims is None:
        return roll.op.record(
            np.roll(input._data, shifts),
            (input,),
            attrs=((shifts if not isinstance(shifts, (list, tuple)) else shifts[0],), None),
        )
    shifts = tuple(shifts) if isinstance(shifts, (list, tuple)) else (shifts,)
    dims = tuple(dims) if isinstance(dims, (list, tuple)) else (dims,)
    if len(shifts) != len(dims):
        raise RuntimeError(
            "shifts and dimensions must align. shifts: %d, dims:%d" % (len(shifts), len(dims))
        )
    dims = tuple(_wrap_dim(d, input._data.ndim) for d in dims)
    return roll.op.record(np.roll(input._data, shifts, dims), (input,), attrs=(shifts, dims))


@op("narrow", "shape", variants=FM, jvp=LINEAR)
def narrow(input, dim, start, length):
    d = _wrap_dim(dim, input._data.ndim)
    n = input._data.shape[d]
    if isinstance(start, Tensor):
        start = int(start)
    if start < 0:
        start += n
    if not (0 <= start <= n) or length < 0 or start + length > n:
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
    return tril.op.record(np.tril(input._data, diagonal), (input,), attrs=(False, diagonal))


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
    return triu.op.record(np.triu(input._data, diagonal), (input,), attrs=(True, diagonal))


@batched
def _clone_vjp(node, grads):
    return (grads[0],)


@op("clone", "shape", node="CloneBackward0", vjp=_clone_vjp, variants=FM, jvp=LINEAR)
def clone(input, *, memory_format=None):
    return clone.op.record(np.array(input._data, copy=True, order="K"), (input,))


@op("contiguous", "shape", node="CloneBackward0", vjp=_clone_vjp, variants=M, jvp=LINEAR)
def contiguous(input, memory_format=None):
    if input._data.flags.c_contiguous:
        return input
    return contiguous.op.record(np.ascontiguousarray(input._data), (input,))


@batched
def _to_vjp(node, grads):
    return (grads[0].to(node.attrs[0]),)


@op("to", "shape", node="ToCopyBackward0", vjp=_to_vjp)  # Tensor.to parses its arguments
def to_dtype(input, dtype, copy=False):
    d = _dt.as_dtype(dtype)
    if d is input._dtype and not copy:
        return input
    arr = input._data.astype(d.np)
    if not d.is_inexact:
        return _make(arr)
    return to_dtype.op.record(arr, (input,), attrs=(input._dtype,))


def _repeat_vjp(node, grads):
    shape, reps = node.attrs
    g = grads[0]
    lead = len(reps) - len(shape)
    full = (1,) * lead + tuple(shape)
    # (r0, s0, r1, s1, ...) then sum the repeat axes
    split_shape = []
    for r, s in zip(reps, full):
        split_shape += [r, s]
    g = g.reshape(*split_shape)
    g = g.sum(tuple(range(0, 2 * len(reps), 2)))
    return (g.reshape(shape),)


@op("repeat", "shape", node="RepeatBackward0", vjp=_repeat_vjp, variants=M, jvp=LINEAR)
def repeat(input, *sizes):
    reps = _size_args(sizes)
    if len(reps) < input._data.ndim:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of "
            "dimensions of tensor"
        )
    return repeat.op.record(np.tile(input._data, reps), (input,), attrs=(input._data.shape, reps))
