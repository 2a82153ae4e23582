"""Linear algebra: matmul mm bmm dot mv outer einsum.  GEMM goes through numpy/BLAS (see
docs/performance.md: 4.5-7x faster than any Numba kernel measured)."""

import string

import numpy as np

from .. import dtypes as _dt
from .._fpstate import call_quiet
from .._tensor import Tensor
from ..autograd.batching import batched
from .registry import COMPOSITE, FUNCTION, METHOD, OUT, op

FMO = (FUNCTION, METHOD, OUT)


def _same_dtype(a, b):
    if a._dtype is not b._dtype:
        raise RuntimeError(
            "expected m1 and m2 to have the same dtype, but got: %s != %s"
            % (a._dtype.c_name, b._dtype.c_name)
        )


@batched  # matmul broadcasts leading (batch) dims; dot needs the one unsqueeze below
def _matmul_vjp(node, grads):
    g = grads[0]
    a, b = node.unpack("x"), node.unpack("y")
    need_a = node.next_functions[0][0] is not None
    need_b = node.next_functions[1][0] is not None
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


def _overload(a, b):
    if a.ndim == 1 and b.ndim == 1:
        return "dot"
    if a.ndim == 2 and b.ndim == 2:
        return "mm"
    if a.ndim == 2 and b.ndim == 1:
        return "mv"
    if a.ndim == 1:
        return "vm"
    if a.ndim == 3 and b.ndim == 3:
        return "bmm"
    return "batched"


# PyTorch records what matmul reduces to for these shapes
_NODES = {
    "dot": "DotBackward0",
    "mm": "MmBackward0",
    "mv": "MvBackward0",
    "vm": "SqueezeBackward4",
    "bmm": "BmmBackward0",
    "batched": "UnsafeViewBackward0",
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
    a, b = input, other
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        raise TypeError(
            "matmul(): argument 'other' (position 2) must be Tensor, not %s" % type(b).__name__
        )
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(
            "both arguments to matmul need to be at least 1D, but they are %dD "
            "and %dD" % (a.ndim, b.ndim)
        )
    _same_dtype(a, b)
    ka = a._data.shape[-1]
    kb = b._data.shape[-2] if b.ndim > 1 else b._data.shape[0]
    if ka != kb:
        if a.ndim == 1 and b.ndim == 1:
            raise RuntimeError(
                "inconsistent tensor size, expected tensor [%d] and src [%d] to "
                "have the same number of elements, but got %d and %d elements "
                "respectively" % (ka, kb, ka, kb)
            )
        sa = "x".join(
            map(str, a._data.shape if a.ndim == 2 else (int(np.prod(a._data.shape[:-1])), ka))
        )
        sb = "x".join(
            map(str, b._data.shape if b.ndim == 2 else (kb, b._data.shape[-1] if b.ndim > 1 else 1))
        )
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied (%s and %s)" % (sa, sb))
    try:
        arr = call_quiet(np.matmul, (a._data, b._data))
    except ValueError as e:
        raise RuntimeError("matmul: %s" % e) from None
    return matmul.op.record(arr, (a, b), overload=_overload(a, b))


@op("mm", "linalg", variants=FMO, jvp=COMPOSITE)
def mm(input, mat2):
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    return matmul(input, mat2)


@op("bmm", "linalg", variants=FMO, jvp=COMPOSITE)
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
    return matmul(input, mat2)


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
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(
            "vector + matrix @ vector expected, got %d, %d, %d" % (1, input.ndim, vec.ndim)
        )
    return matmul(input, vec)


@op("outer", "linalg", variants=(FUNCTION, METHOD), aliases=("ger",))
def outer(input, vec2):
    if input.ndim != 1 or vec2.ndim != 1:
        raise RuntimeError("outer: expected 1D tensors")
    return input.unsqueeze(1) * vec2.unsqueeze(0)


# -- einsum ------------------------------------------------------------------------------


def _parse(eq, operands):
    eq = eq.replace(" ", "")
    if "->" in eq:
        lhs, rhs = eq.split("->")
    else:
        lhs, rhs = eq, None
    ins = lhs.split(",")
    if len(ins) != len(operands):
        raise RuntimeError(
            "einsum(): more operands were provided than specified in the equation"
            if len(operands) > len(ins)
            else "einsum(): fewer operands were provided than specified in the equation"
        )
    ell = ""
    if "..." in eq:
        used = set(c for c in eq if c.isalpha())
        free = [c for c in string.ascii_letters if c not in used]
        nell = max(op.ndim - (len(s) - 3) for s, op in zip(ins, operands) if "..." in s)
        ell = "".join(free[:nell])
        ins = [
            s.replace("...", ell[nell - (op.ndim - (len(s) - 3)) :]) if "..." in s else s
            for s, op in zip(ins, operands)
        ]
        if rhs is not None:
            rhs = rhs.replace("...", ell)
    if rhs is None:
        counts = {}
        for s in ins:
            for c in s:
                counts[c] = counts.get(c, 0) + 1
        rhs = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    for s, o in zip(ins, operands):
        if len(s) != o.ndim:
            raise RuntimeError(
                "einsum(): the number of subscripts in the equation (%d) does not "
                "match the number of dimensions (%d) for operand %d and no ellipsis "
                "was given" % (len(s), o.ndim, operands.index(o))
            )
    return ins, rhs


def _einsum_vjp(node, grads):
    ins, rhs, shapes = node.attrs
    g = grads[0]
    ops = [node.unpack("op%d" % i) for i in range(len(ins))]
    out = []
    for i, (s, shape) in enumerate(zip(ins, shapes)):
        if node.next_functions[i][0] is None:
            out.append(None)
            continue
        if len(set(s)) != len(s):
            raise RuntimeError(
                "nbgrad einsum: gradients through repeated subscripts within one "
                "operand (diagonals) are not supported"
            )
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
            gi = gi.expand(*[sizes[c] for c in s])
        out.append(gi)
    return tuple(out)


@op("einsum", "linalg", node="EinsumBackward0", vjp=_einsum_vjp, variants=(FUNCTION,))
def einsum(equation, *operands):
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    ins, rhs = _parse(equation, list(operands))
    if len(operands) == 1 and len(set(ins[0])) == len(ins[0]):
        # one operand: a permute and/or a sum, recorded as those ops (PyTorch does the same)
        x, s = operands[0], ins[0]
        summed = tuple(k for k, c in enumerate(s) if c not in rhs)
        if summed:
            x = x.sum(summed)
            s = "".join(c for c in s if c in rhs)
        if s != rhs:
            x = x.permute(*[s.index(c) for c in rhs])
        return x
    dt = operands[0]._dtype
    for o in operands[1:]:
        dt = _dt.promote_types(dt, o._dtype)
    arrs = [o._data.astype(dt.np, copy=False) for o in operands]
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
