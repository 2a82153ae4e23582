"""``np.einsum`` for CUDA arrays (labels already parsed, repeated labels already taken as
diagonals by ops/linalg.py): operands contracted pairwise, left to right, each pair as one
batched GEMM (kernels/cuda/linalg.py) after summing the labels only that operand has."""

import math

from ...kernels.cpu import reduce as K
from .linalg import matmul


def _sum_out(s, a, drop):
    """``a`` (labels ``s``) summed over the labels in ``drop``."""
    from ..reduction import _run  # lazy: the CUDA path loads on first use

    dims = tuple(i for i, c in enumerate(s) if c in drop)
    if not dims:
        return s, a
    r, _ = _run(K.sum_fwd_cpu, a, dims, False, a.dtype)
    kept = "".join(c for c in s if c not in drop)
    if r is None:  # an empty summed label
        from .xp import zeros  # lazy: numba.cuda loads with the first CUDA op

        r = zeros(tuple(a.shape[i] for i, c in enumerate(s) if c not in drop), a.dtype)
    return kept, r


def _pair(sa, a, sb, b, keep):
    sa, a = _sum_out(sa, a, {c for c in sa if c not in sb and c not in keep})
    sb, b = _sum_out(sb, b, {c for c in sb if c not in sa and c not in keep})
    size = {c: n for s, x in ((sa, a), (sb, b)) for c, n in zip(s, x.shape)}
    batch = [c for c in sa if c in sb and c in keep]
    contract = [c for c in sa if c in sb and c not in keep]
    ma = [c for c in sa if c not in sb]
    nb = [c for c in sb if c not in sa]

    B = math.prod(size[c] for c in batch)
    M = math.prod(size[c] for c in ma)
    N = math.prod(size[c] for c in nb)
    Kc = math.prod(size[c] for c in contract)
    A = a.transpose([sa.index(c) for c in batch + ma + contract]).reshape(B, M, Kc)
    Bm = b.transpose([sb.index(c) for c in batch + contract + nb]).reshape(B, Kc, N)
    out = matmul(A, Bm).reshape(tuple(size[c] for c in batch + ma + nb))
    return "".join(batch + ma + nb), out


def einsum(ins, rhs, arrays):
    s, cur = ins[0], arrays[0]
    for k in range(1, len(arrays)):
        keep = set(rhs).union(*ins[k + 1 :])
        s, cur = _pair(s, cur, ins[k], arrays[k], keep)
    s, cur = _sum_out(s, cur, {c for c in s if c not in rhs})
    return cur.transpose([s.index(c) for c in rhs]).contiguous() if rhs else cur.reshape(())
