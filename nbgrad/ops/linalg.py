"""Linear algebra: matmul mm bmm dot mv outer einsum.  GEMM goes through numpy/BLAS (see
docs/performance.md: 4.5-7x faster than any Numba kernel measured)."""

import math
import string

import numpy as np

from .._tensor import Tensor
from ..autograd.batching import BATCH, batched, lead
from ..creation import contiguous_strides, zeros
from ..grad_mode import STATE
from ..kernels.cuda.array import DeviceArray
from .cuda.linalg import mm_arrays
from .registry import COMPOSITE, FUNCTION, LINEAR, METHOD, OUT, internal_op, op
from .shape import broadcast_shape, restride

FMO = (FUNCTION, METHOD, OUT)
_make = Tensor._make


def _same_dtype(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: %s != %s"
            % (a._dtype.c_name, b._dtype.c_name)
        )


@batched  # matmul broadcasts leading (batch) dims; dot needs the one unsqueeze below
def _matmul_vjp(node, grads):
    g = grads[0]
    need_a = node.next_functions[0][0] is not None
    need_b = node.next_functions[1][0] is not None
    if not STATE.enabled and not BATCH.dims and g._data.ndim == 2:
        # NOTE [per-node cost]: mm without create_graph: two BLAS calls on arrays (the ops
        # below, with their transposes and dispatch, cost ~25 us more per node)
        a, b, ga = node.array("x"), node.array("y"), g._data
        if a.ndim == 2 and b.ndim == 2 and ga.dtype == a.dtype == b.dtype:
            return (
                _make(mm_arrays(ga, b.T)) if need_a else None,
                _make(mm_arrays(a.T, ga)) if need_b else None,
            )
    a, b = node.unpack("x"), node.unpack("y")
    ga = gb = None
    if a.ndim == 1 and b.ndim == 1:
        if g.ndim:
            g = g.unsqueeze(-1)
        ga = g * b if need_a else None
        gb = g * a if need_b else None
    elif a.ndim == 1:
        if need_a:
            ga = (g.unsqueeze(-2) @ b.mT).squeeze(-2)
        if need_b:
            gb = a.unsqueeze(-1) @ g.unsqueeze(-2)
    elif b.ndim == 1:
        if need_a:
            ga = g.unsqueeze(-1) @ b.unsqueeze(-2)
        if need_b:
            gb = (a.mT @ g.unsqueeze(-1)).squeeze(-1)
    else:
        if need_a:
            ga = g @ b.mT
        if need_b:
            gb = a.mT @ g
    return ga, gb


def _fold(a, b, da, db):
    """PyTorch's should_fold: matmul folds the batch of the larger operand into a matrix (mm or
    mv instead of bmm)."""
    larger = da >= db
    if not ((da >= 3 and db <= 2) if larger else (db >= 3 and da <= 2)):
        return False
    if (b if larger else a)._requires_grad:
        return True
    if da == 2:
        return False
    t1 = a._data if larger else np.swapaxes(b._data, -1, -2)
    if t1.size == 0:
        return True
    isz = t1.itemsize
    sh, st = t1.shape, [s // isz for s in t1.strides]
    return all(st[i] == st[i + 1] * sh[i + 1] for i in range(len(sh) - 2))


def _path(a, b):
    """Which kernel PyTorch's matmul reduces to (its node name and its error messages)."""
    da, db = a._data.ndim, b._data.ndim
    if da <= 2 and db <= 2:
        return ("dot", "vm", "mv", "mm")[(da - 1) * 2 + (db - 1)]
    return "fold" if _fold(a, b, da, db) else "bmm"


def _mm_msg(s1, s2):
    return "mat1 and mat2 shapes cannot be multiplied (%dx%d and %dx%d)" % (s1 + s2)


def _mv_msg(mat, vec):
    return "size mismatch, got input (%d), mat (%dx%d), vec (%d)" % (mat[0], mat[0], mat[1], vec)


def _matmul_check(a, b, path):
    """PyTorch's shape, then dtype, errors for matmul on ``path``."""
    sa, sb = a._data.shape, b._data.shape
    if path == "mm":
        if sa[1] != sb[0]:
            raise RuntimeError(_mm_msg(sa, sb))
    elif path == "dot":
        if sa[0] != sb[0]:
            raise RuntimeError(
                "inconsistent tensor size, expected tensor [%d] and src [%d] to have the same "
                "number of elements, but got %d and %d elements respectively"
                % (sa[0], sb[0], sa[0], sb[0])
            )
    elif path == "vm":
        if sa[0] != sb[0]:
            raise RuntimeError(_mm_msg((1,) + sa, sb))
    elif path == "mv":
        if sa[1] != sb[0]:
            raise RuntimeError(_mv_msg(sa, sb[0]))
    elif path == "fold":
        t1, t2, s1, s2 = _folded(a, b)
        if s1[-1] != s2[0]:
            rows = int(np.prod(s1[:-1], dtype=np.int64))
            if len(s2) == 2:
                raise RuntimeError(_mm_msg((rows, s1[-1]), s2))
            raise RuntimeError(_mv_msg((rows, s1[-1]), s2[0]))
    else:  # bmm over the broadcast batch
        m2 = sb[-2] if len(sb) > 1 else sb[0]
        if sa[-1] != m2:
            batch = broadcast_shape([sa[:-2], sb[:-2]])
            n_b = int(np.prod(batch, dtype=np.int64))
            raise RuntimeError(
                "Expected size for first two dimensions of batch2 tensor to be: [%d, %d] but "
                "got: [%d, %d]." % (n_b, sa[-1], n_b, m2)
            )
    if a._dtype is not b._dtype:
        raise RuntimeError(_dtype_msg(a, b, path))


def _folded(a, b):
    """PyTorch's folded operands: the larger one (transposed when it is ``b``) and the other
    (transposed when a matrix), with their shapes."""
    if b.ndim > a.ndim:
        s1 = b._data.shape
        s2 = a._data.shape
        return b, a, s1[:-2] + (s1[-1], s1[-2]), s2[::-1]
    return a, b, a._data.shape, b._data.shape


def _dtype_msg(a, b, path):
    if path == "fold":
        t1, t2, _, s2 = _folded(a, b)
        path = "mm" if len(s2) == 2 else "mv"
        a, b = t1, t2
    if path == "dot":
        return "dot : expected both vectors to have same dtype, but found %s and %s" % (
            a._dtype._legacy,
            b._dtype._legacy,
        )
    if path in ("mm", "vm"):
        return "expected m1 and m2 to have the same dtype, but got: %s != %s" % (
            a._dtype.c_name,
            b._dtype.c_name,
        )
    if path == "mv":
        return "addmv input tensors must have the same dtype, but got %s, %s, and %s" % (
            b._dtype._legacy,
            a._dtype._legacy,
            b._dtype._legacy,
        )
    return "expected scalar type %s but found %s" % (a._dtype._legacy, b._dtype._legacy)


# PyTorch records what matmul reduces to for these shapes
_NODES = {
    "dot": "DotBackward0",
    "mm": "MmBackward0",
    "mv": "MvBackward0",
    "vm": "SqueezeBackward4",
    "batched": "UnsafeViewBackward0",
    "clone": "CloneBackward0",  # 2-D @ >=3-D folded: output.mT.contiguous()
    "transpose": "TransposeBackward0",  # ... when that transpose is already contiguous
}


@op(
    "matmul",
    "linalg",
    node=_NODES,
    vjp=_matmul_vjp,
    args=("x", "y"),
    saves=("x", "y"),
    variants=FMO,
)
def matmul(input, other):
    return _matmul(input, other)


def _matmul(a, b, bmm_op=None):
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(
            "matmul(): argument 'other' (position 2) must be Tensor, not %s" % type(b).__name__
        )
    if not a._data.ndim or not b._data.ndim:
        raise RuntimeError(
            "both arguments to matmul need to be at least 1D, but they are %dD "
            "and %dD" % (a.ndim, b.ndim)
        )
    ea, eb = a, b  # the operands PyTorch's decomposition works on
    if not bmm_op and a._data.ndim == 3 and b._data.ndim == 3:
        ba, bb = a._data.shape[0], b._data.shape[0]
        if ba != bb:  # PyTorch squeezes a broadcast batch of 1 that requires grad
            if ba == 1 and a._requires_grad:
                ea = _squeezed(a)
            elif bb == 1 and b._requires_grad:
                eb = _squeezed(b)
    path = "bmm" if bmm_op else _path(ea, eb)
    _matmul_check(ea, eb, path)
    if path == "fold" and ea._data.ndim == 2:
        n, p = ea._data.shape[0], eb._data.shape[-1]
        if n == 1 or p == 1 or n * p * math.prod(eb._data.shape[:-2]) == 0:
            # PyTorch: matmul(b.mT, a.mT).mT, whose .contiguous() is then a no-op: the result
            # is a transposed *view* (an in-place op on it rebases, AsStridedBackward0)
            a2 = a if ea is a else a.squeeze(0)  # the squeezed batch of 1, recorded
            return _matmul(b.mT, a2.mT).mT
    try:
        arr = mm_arrays(a._data, b._data)
    except ValueError:  # the batch dims do not broadcast: PyTorch's message
        broadcast_shape([a._data.shape[:-2], b._data.shape[:-2]])
        raise
    if arr.size == 0:  # numpy's empty result has 0 strides; PyTorch's is contiguous
        arr = restride(arr, arr.shape, contiguous_strides(arr.shape))
    if bmm_op:  # torch.bmm: its own node
        return bmm_op.record(arr, (a, b))
    overload = path
    if path in ("fold", "bmm"):
        overload = "batched"
        if path == "fold" and ea._data.ndim == 2:  # PyTorch: output.mT().contiguous()
            n, p = arr.shape[-2], arr.shape[-1]
            if n == 1 or p == 1 or arr.size == 0:  # that transpose is contiguous: a view
                overload = "transpose"
                arr = restride(arr, arr.shape, _transposed_strides(arr.shape))
            else:
                overload = "clone"
    return matmul.op.record(arr, (a, b), overload=overload)


def _squeezed(t):
    """``t`` without its leading size-1 dim, for choosing the path only (nothing recorded)."""
    s = Tensor._make(t._data[0])
    s._requires_grad = t._requires_grad
    return s


def _transposed_strides(shape):
    """Strides (elements) of ``c.mT`` for ``c`` contiguous of shape ``shape[:-2] + (p, n)``:
    PyTorch's result of a folded 2-D @ N-D matmul."""
    n, p = shape[-2], shape[-1]
    st = list(contiguous_strides(shape[:-2] + (p, n)))
    st[-1], st[-2] = st[-2], st[-1]
    return tuple(st)


@op("mm", "linalg", variants=FMO, jvp=COMPOSITE)
def mm(input, mat2):
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


@op(
    "bmm",
    "linalg",
    node="BmmBackward0",  # matmul of 3-D tensors records UnsafeViewBackward0
    vjp=_matmul_vjp,
    args=("x", "y"),
    saves=("x", "y"),
    variants=FMO,
)
def bmm(input, mat2):
    if input.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if mat2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if input._data.shape[0] != mat2._data.shape[0]:
        raise RuntimeError(
            "Expected size for first two dimensions of batch2 tensor to be: [%d, "
            "%d] but got: [%d, %d]."
            % (input._data.shape[0], input._data.shape[2], mat2._data.shape[0], mat2._data.shape[1])
        )
    return _matmul(input, mat2, bmm.op)


@op("dot", "linalg", variants=FMO, jvp=COMPOSITE)
def dot(input, other):
    if input.ndim != 1 or other.ndim != 1:
        raise RuntimeError(
            "1D tensors expected, but got %dD and %dD tensors" % (input.ndim, other.ndim)
        )
    if input._dtype is not other._dtype:
        raise RuntimeError(
            "dot : expected both vectors to have same dtype, but found %s and %s"
            % (input._dtype._legacy, other._dtype._legacy)
        )
    return matmul(input, other)


@op("mv", "linalg", variants=FMO, jvp=COMPOSITE)
def mv(input, vec):
    if input.ndim == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            "vector + matrix @ vector expected, got %d, %d, %d" % (1, input.ndim, vec.ndim)
        )
    return matmul(input, vec)


@op("outer", "linalg", variants=(FUNCTION, METHOD), aliases=("ger",))
def outer(input, vec2):
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError("outer: Expected 1-D argument %s, but got %d-D" % (name, v.ndim))
    return input.unsqueeze(1) * vec2.unsqueeze(0)


# -- einsum ------------------------------------------------------------------------------
#
# NOTE [einsum as PyTorch]: the result has PyTorch's top node -- one operand: a permute (then a
# sum over the contracted labels); several operands with no contracted label: their product
# (MulBackward0); otherwise a contraction (EinsumBackward0 under a ViewBackward0).  A label
# repeated within an operand takes that operand's diagonal first, a strided view
# (DiagonalBackward0) whose backward writes the gradient onto the diagonal of zeros
# (DiagonalBackwardBackward0, whose backward is the diagonal again): so gradients of any order
# flow through traces and diagonals.


def _labels_err(msg, *args):
    return RuntimeError("einsum(): " + msg % args)


_SUBLIST = string.ascii_uppercase + string.ascii_lowercase  # PyTorch: 0..25 A-Z, 26..51 a-z


def _sublist_equation(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as an equation string."""

    def letters(sub):
        out = []
        for v in sub:
            if v is Ellipsis:
                out.append("...")
            elif isinstance(v, int) and 0 <= v < 52:
                out.append(_SUBLIST[v])
            else:
                raise _labels_err(
                    "subscript in subscript list is not within the valid range [0, 52)"
                )
        return "".join(out)

    n = len(args) - len(args) % 2
    eq = ",".join(letters(sub) for sub in args[1:n:2])
    if len(args) % 2:
        eq += "->" + letters(args[-1])
    return eq, args[0:n:2]


def _parse(eq, operands):
    """PyTorch's einsum parser: per operand its labels (an ellipsis expanded into free letters,
    right-aligned) and the output labels, with PyTorch's errors."""
    arrow = eq.find("->")
    lhs, rhs_s = (eq, None) if arrow < 0 else (eq[:arrow], eq[arrow + 2 :])
    ins, cur, ells = [], [], []
    i, ell = 0, False
    while i < len(lhs):
        c = lhs[i]
        if c == ".":
            if lhs[i : i + 3] != "...":
                raise _labels_err(
                    "found '.' for operand %d that is not part of any ellipsis", len(ins)
                )
            if ell:
                raise _labels_err(
                    "found '.' for operand %d for which an ellipsis was already found", len(ins)
                )
            cur.append("...")
            ell = True
            i += 3
            continue
        if c == ",":
            ins.append(cur)
            ells.append(ell)
            cur, ell = [], False
        elif c.isalpha() and c.isascii():
            cur.append(c)
        elif c != " ":
            raise _labels_err(
                "invalid subscript given at index %d in the equation string, subscripts must be "
                "in [a-zA-Z]",
                i,
            )
        i += 1
    ins.append(cur)
    ells.append(ell)
    if len(ins) != len(operands):
        raise _labels_err(
            "more operands were provided than specified in the equation"
            if len(operands) > len(ins)
            else "fewer operands were provided than specified in the equation"
        )
    nell = 0
    for k, (s, o) in enumerate(zip(ins, operands)):
        n = len(s) - (1 if ells[k] else 0)
        if ells[k]:
            if n > o.ndim:
                raise _labels_err(
                    "the number of subscripts in the equation (%d) is more than the number of "
                    "dimensions (%d) for operand %d",
                    n,
                    o.ndim,
                    k,
                )
            nell = max(nell, o.ndim - n)
        elif n != o.ndim:
            raise _labels_err(
                "the number of subscripts in the equation (%d) does not match the number of "
                "dimensions (%d) for operand %d and no ellipsis was given",
                n,
                o.ndim,
                k,
            )
    used = set(c for s in ins for c in s if c != "...")
    free = "".join(c for c in string.ascii_letters if c not in used)[:nell]
    full = []
    for s, o, e in zip(ins, operands, ells):
        if e:
            k = o.ndim - (len(s) - 1)
            s = [c for x in s for c in ((free[nell - k :]) if x == "..." else x)]
        full.append("".join(s))
    if rhs_s is None:
        counts = {}
        for s in full:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = free + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in free))
    else:
        rhs, seen_ell = [], False
        j = 0
        while j < len(rhs_s):
            c = rhs_s[j]
            if c == ".":
                if seen_ell:
                    raise _labels_err(
                        "found '.' for output but an ellipsis (...) was already found"
                    )
                if rhs_s[j : j + 3] != "...":
                    raise _labels_err("found '.' for output that is not part of any ellipsis (...)")
                rhs.append(free)
                seen_ell = True
                j += 3
                continue
            if c.isalpha() and c.isascii():
                if c in rhs:
                    raise _labels_err("output subscript %s appears more than once in the output", c)
                if c not in used:
                    raise _labels_err(
                        "output subscript %s does not appear in the equation for any input operand",
                        c,
                    )
                rhs.append(c)
            elif c != " ":
                raise _labels_err(
                    "invalid subscript given at index %d in the equation string, subscripts must "
                    "be in [a-zA-Z]",
                    arrow + 2 + j,
                )
            j += 1
        rhs = "".join(rhs)
    return full, rhs, free


def _sizes(ins, operands, free):
    """Each label's size, with PyTorch's checks: a label repeated in an operand has equal sizes;
    across operands sizes broadcast (1 against n)."""
    size = {}
    for k, (s, o) in enumerate(zip(ins, operands)):
        mine = {}
        for c, n in zip(s, o._data.shape):
            if c in mine and mine[c] != n:
                raise _labels_err(
                    "subscript %s is repeated for operand %d but the sizes don't match, %d != %d",
                    c,
                    k,
                    n,
                    mine[c],
                )
            mine[c] = n
        for c, n in mine.items():
            prev = size.get(c)
            if prev is None or prev == 1:
                size[c] = n
            elif n != 1 and n != prev:
                if c in free:
                    raise _labels_err(
                        "dimension %d covered by ellipsis in operand %dhas size %d which does not "
                        "broadcast with previously seen ellipsis with size %d for the respective "
                        "dimension",
                        free.index(c),
                        k,
                        n,
                        prev,
                    )
                raise _labels_err(
                    "subscript %s has size %d for operand %d which does not broadcast with "
                    "previously seen size %d",
                    c,
                    n,
                    k,
                    prev,
                )
    return size


def _diag_geometry(shape, strides, labels):
    """Shape and strides of the diagonal over repeated ``labels`` of the trailing dims (first
    appearance order), leading dims kept."""
    nb = len(shape) - len(labels)
    uniq = []
    for c in labels:
        if c not in uniq:
            uniq.append(c)
    dshape = list(shape[:nb]) + [0] * len(uniq)
    dstr = list(strides[:nb]) + [0] * len(uniq)
    for k, c in enumerate(labels):
        u = nb + uniq.index(c)
        dshape[u] = shape[nb + k]
        dstr[u] += strides[nb + k]
    return tuple(dshape), tuple(dstr), "".join(uniq)


@batched
def _diagonal_vjp(node, grads):
    (labels,) = node.attrs
    g = grads[0]
    return (_diag_embed(g, lead(g) + node._in_meta[0][0], labels),)


@internal_op("einsum_diagonal", "linalg", node="DiagonalBackward0", vjp=_diagonal_vjp, jvp=LINEAR)
def _diagonal(input, labels):
    """The view of ``input`` over its repeated ``labels``: one dim per distinct label."""
    a = input._data
    isz = a.itemsize
    shape, st, _ = _diag_geometry(a.shape, [s // isz for s in a.strides], labels)
    arr = restride(a, shape, st)
    return _diagonal.op.record(arr, (input,), view_of=input, attrs=(labels,))


@batched
def _diag_embed_vjp(node, grads):
    return (_diagonal(grads[0], node.attrs[0]),)


@internal_op("einsum_diag_embed", "linalg", node="DiagonalBackwardBackward0", vjp=_diag_embed_vjp)
def _diag_embed(g, shape, labels):
    """Zeros of ``shape`` with ``g`` on the diagonal over ``labels`` (the diagonal's adjoint)."""
    out = zeros(shape, dtype=g.dtype, device=g.device)._data
    dshape, st, _ = _diag_geometry(shape, contiguous_strides(shape), labels)
    restride(out, dshape, st)[...] = g._data
    return _diag_embed.op.record(out, (g,), attrs=(labels,))


def _einsum_vjp(node, grads):
    ins, rhs, shapes = node.attrs
    g = grads[0]
    ops = [node.unpack("op%d" % i) for i in range(len(ins))]
    out = []
    for i, (s, shape) in enumerate(zip(ins, shapes)):
        if node.next_functions[i][0] is None:
            out.append(None)
            continue
        others = [(ins[j], ops[j]) for j in range(len(ins)) if j != i]
        avail = set(rhs) | set("".join(o[0] for o in others))
        present = "".join(c for c in s if c in avail)
        gi = einsum(
            "%s->%s" % (",".join([rhs] + [o[0] for o in others]), present),
            g,
            *[o[1] for o in others],
        )
        if present != s:  # letters summed only inside operand i: broadcast back
            sizes = dict(zip(s, shape))
            for k, c in enumerate(s):
                if c not in avail:
                    gi = gi.unsqueeze(k)
            gi = gi.expand(*[-1 if c in avail else sizes[c] for c in s])
        if gi._data.shape != tuple(shape):  # a size-1 label broadcast against size n
            gi = gi.expand(broadcast_shape([gi._data.shape, shape])).sum_to_size(shape)
        out.append(gi)
    return tuple(out)


def _aligned(x, s, rhs):
    """``x`` (labels ``s``, all in ``rhs``) permuted to ``rhs``'s order with size-1 dims for
    the labels it lacks."""
    order = [c for c in rhs if c in s]
    if order != list(s):
        x = x.permute(tuple(s.index(c) for c in order))
    for k, c in enumerate(rhs):
        if c not in s:
            x = x.unsqueeze(k)
    return x


@op("einsum", "linalg", node="EinsumBackward0", vjp=_einsum_vjp, variants=(FUNCTION,))
def einsum(*args):
    if args and isinstance(args[0], Tensor):
        equation, operands = _sublist_equation(args)
    else:
        equation, operands = args[0], args[1:]
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = tuple(operands[0])
    operands = list(operands)
    ins, rhs, free = _parse(equation, operands)
    _sizes(ins, operands, free)
    for k, s in enumerate(ins):
        if len(set(s)) != len(s):  # a repeated label: its diagonal
            operands[k] = _diagonal(operands[k], s)
            ins[k] = "".join(c for i, c in enumerate(s) if c not in s[:i])
    if len(operands) == 1:
        # PyTorch: a permute (output labels first), then a sum over the others
        x, s = operands[0], ins[0]
        summed = [c for c in s if c not in rhs]
        x = x.permute(tuple(s.index(c) for c in list(rhs) + summed))
        if summed:
            x = x.sum(tuple(range(len(rhs), len(s))))
        return x
    if all(c in rhs for s in ins for c in s):
        # no contracted label: PyTorch multiplies the aligned operands
        out = None
        for x, s in zip(operands, ins):
            x = _aligned(x, s, rhs)
            out = x if out is None else out * x
        return out
    dt = operands[0]._dtype
    for o in operands[1:]:
        if o._dtype is not dt:  # PyTorch contracts with bmm, which takes one dtype
            raise RuntimeError(
                "expected scalar type %s but found %s" % (dt._legacy, o._dtype._legacy)
            )
    arrs = [o._data for o in operands]
    if any(type(a) is DeviceArray for a in arrs):  # NOTE [device storage]
        from .cuda import device_of, einsum as cuda_einsum  # lazy: the CUDA path

        device_of(*operands)
        arr = cuda_einsum.einsum(ins, rhs, arrs)
    else:
        arr = np.einsum("%s->%s" % (",".join(ins), rhs), *arrs, optimize=len(arrs) > 2)
        arr = np.asarray(arr)
        if not arr.flags.c_contiguous:
            arr = np.ascontiguousarray(arr)
    raw = einsum.op.record(
        arr,
        operands,
        saved={"op%d" % i: o for i, o in enumerate(operands)},
        attrs=(ins, rhs, [o._data.shape for o in operands]),
    )
    return raw.view(arr.shape)  # PyTorch's einsum result is a view: grad_fn ViewBackward0
