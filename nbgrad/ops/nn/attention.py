"""Scaled dot-product attention: the fused op over kernels/cpu/attention.py (what PyTorch's CPU
flash kernel computes, node ``ScaledDotProductFlashAttentionForCpuBackward0``), the choice
between it and the composite ("math") path with PyTorch's rules, and that composite path.

NOTE [attention paths]: PyTorch runs its fused CPU kernel when the inputs are 4-D with equal
batch sizes and head counts (or grouped-query heads with ``enable_gqa``), equal head dims, a 2-D
or 4-D mask that does not require grad, non-empty sequences, unit last-dim strides and no
dropout; otherwise it composes matmul, softmax and dropout ops.  nbgrad makes the same choice,
so values, ``grad_fn`` names and errors follow PyTorch on both paths: the fused op stores no
(L, S) attention matrix in the forward (online softmax, per-row logsumexp saved) and its
backward recomputes the probabilities block by block.  Dropout is only on the composite path,
with the mask drawn from nbgrad's generator (as in PyTorch, where dropout also leaves the fused
kernel).  Under ``create_graph`` the fused op's backward is built from nbgrad ops over the
materialised probabilities, so double backward and forward-mode AD work."""

import math

import numpy as np

from ... import dtypes as _dt
from ..._tensor import Tensor
from ...grad_mode import STATE
from ...kernels.cpu import attention as KA
from ...kernels.cuda.array import DeviceArray
from .. import pointwise_fns as _pw
from ..cuda import kernel_for, xp_of
from ..linalg import matmul
from ..registry import op
from ..softmax import softmax
from ._common import carray, compute_dtype, needs, on_cuda

CPU = {"cpu": KA}
_make = Tensor._make


def default_scale(E, scale):
    """PyTorch's ``calculate_scale``: ``scale`` or 1/sqrt(E) (inf for E == 0)."""
    if scale is not None:
        return float(scale)
    return 1.0 / math.sqrt(E) if E else math.inf


def additive_mask(mask, dtype):
    """A bool mask (True = take part) as PyTorch's ``convert_boolean_attn_mask``: 0 where True,
    -inf where False, in ``dtype``; a float mask unchanged."""
    if mask is None or mask._dtype is not _dt.bool:
        return mask
    m = mask._data
    if type(m) is DeviceArray:
        from ...kernels.cuda.elementwise import run  # lazy: the CUDA path loads on first use

        npd = np.dtype(dtype.np)
        vals = (m, 0.0, -math.inf)
        return _make(
            run(
                "sdpa_mask",
                ("m", "zero", "ninf"),
                "where(m, zero, ninf)",
                npd.name,
                vals,
                param_types={"m": "bool"},
            )
        )
    return _make(np.where(m, 0.0, -np.inf).astype(dtype.np))


def _tril(L, S, like):
    """PyTorch's causal mask (True on and below the diagonal), on ``like``'s device (made
    from the sizes alone)."""
    keep = np.tril(np.ones((L, S), np.bool_))
    if type(like._data) is DeviceArray:
        from ...kernels.cuda.array import from_host  # lazy: the CUDA path loads on first use

        keep = from_host(keep)
    return _make(keep)


def use_fused(q, k, v, mask, dropout_p, enable_gqa):
    """PyTorch's ``use_flash_attention_cpp`` gates, in its order (``mask.size(-2)`` of a 1-D
    mask raises its IndexError here, as there)."""
    if dropout_p > 0.0:
        return False
    if not (q.ndim == 4 and k.ndim == 4 and v.ndim == 4):
        return False
    B, H = q.shape[0], q.shape[1]
    if not (k.shape[0] == B and v.shape[0] == B):
        return False
    if enable_gqa:
        if k.shape[1] != v.shape[1] or k.shape[1] == 0 or H % k.shape[1]:
            return False
    elif not (k.shape[1] == H and v.shape[1] == H):
        return False
    if mask is not None:
        if mask.requires_grad:
            return False
        if mask.size(-2) not in (q.shape[2], 1) or mask.size(-1) not in (k.shape[2], 1):
            return False
        if mask.ndim == 4:
            if mask.shape[0] not in (1, B) or mask.shape[1] not in (1, H):
                return False
        elif mask.ndim != 2:
            return False
    if not (q.shape[3] == k.shape[3] == v.shape[3]):
        return False
    if q.shape[2] == 0 or k.shape[2] == 0:
        return False
    if k.shape[2] != v.shape[2]:  # PyTorch's kernel reads v past its end; the composite path
        return False  # raises matmul's error (docs/differences.md)
    if q.stride(-1) != 1 or k.stride(-1) != 1 or v.stride(-1) != 1:
        return False
    return q._dtype in (_dt.float32, _dt.float64, _dt.float16)


def _mask4(mask, cd, like):
    """The additive mask as a C-contiguous 4-D compute-dtype array, unexpanded."""
    if mask is None:
        return xp_of(like).zeros((1, 1, 1, 1), cd)
    m = mask._data
    if m.ndim == 2:
        m = m.reshape((1, 1) + m.shape)
    return xp_of(m).ascontiguousarray(m, dtype=cd)


def _heads(t, G):
    """Key/value heads repeated for grouped-query attention: (B, Hk, S, E) -> (B, Hk*G, S, E),
    each head G times in a row (``repeat_interleave(G, -3)``)."""
    if G == 1:
        return t
    s = t.shape
    return t.unsqueeze(-3).expand(*s[:-2], G, *s[-2:]).reshape(*s[:-3], s[-3] * G, *s[-2:])


def _fold_heads(t, G):
    """The adjoint of ``_heads``: sum each group of G query heads."""
    if G == 1:
        return t
    s = t.shape
    return t.reshape(*s[:-3], s[-3] // G, G, *s[-2:]).sum(-3)


def safe_softmax(s):
    """PyTorch's ``_safe_softmax`` over the last dim: a row that is all -inf gives zeros (and
    zero gradients), any other row the softmax (NaN stays NaN)."""
    dead = (s == -math.inf).all(-1, keepdim=True)
    d = dead._data
    if type(d) is DeviceArray:
        from ...kernels.cuda.nn import any_true_cuda  # lazy: the CUDA path loads on first use

        found = any_true_cuda(d.contiguous().reshape(-1).dense())
    else:
        found = d.any()
    if not found:
        return softmax(s, -1)
    return _pw.where(dead, 0.0, softmax(_pw.where(dead, 0.0, s), -1))


def probs(q, k, mask, is_causal, scale):
    """softmax(q k^T * scale + mask [causal]) from nbgrad ops (materialised, differentiable)."""
    s = matmul(q, k.transpose(-2, -1)) * scale
    if mask is not None:
        s = s + mask
    if is_causal:
        keep = _tril(q.shape[-2], k.shape[-2], q)
        s = s.masked_fill(keep.logical_not(), -math.inf)
    return safe_softmax(s)


def _fused_grads(node, g, q, k, v, mask, is_causal, scale):
    cd = compute_dtype(q._dtype)
    qa, ka, va = carray(q, cd), carray(k, cd), carray(v, cd)
    xp = xp_of(qa)
    dq, dk, dv = xp.empty_like(qa), xp.empty_like(ka), xp.empty_like(va)
    kernel_for(qa, KA.sdpa_bwd_cpu)(
        qa,
        ka,
        va,
        _mask4(mask, cd, qa),
        is_causal,
        cd.type(scale),
        xp.ascontiguousarray(node.array("out"), dtype=cd),
        carray(g, cd),
        node.array("lse"),
        dq,
        dk,
        dv,
    )
    dt = q._dtype.np
    return tuple(
        _make(a.astype(dt, copy=False)) if needs(node, i) else None
        for i, a in enumerate((dq, dk, dv))
    )


def _sdpa_vjp(node, grads):
    g = grads[0]
    is_causal, scale = node.attrs
    q, k, v = node.unpack("q"), node.unpack("k"), node.unpack("v")
    mask = node.unpack("mask") if node.saved["mask"] is not None else None
    if not STATE.enabled and not needs(node, 3):
        return _fused_grads(node, g, q, k, v, mask, is_causal, scale) + (None,)
    # differentiable form (create_graph, forward mode), and the mask's gradient: dS itself
    G = q.shape[1] // k.shape[1]
    ke, ve = _heads(k, G), _heads(v, G)
    p = probs(q, ke, mask, is_causal, scale)
    dp = matmul(g, ve.transpose(-2, -1))
    ds = p * (dp - (dp * p).sum(-1, keepdim=True))
    gq = gk = gv = gm = None
    if needs(node, 0):
        gq = matmul(ds, ke) * scale
    if needs(node, 1):
        gk = _fold_heads(matmul(ds.transpose(-2, -1), q) * scale, G)
    if needs(node, 2):
        gv = _fold_heads(matmul(p.transpose(-2, -1), g), G)
    if needs(node, 3):  # summed to the mask's shape by the engine
        gm = ds
    return gq, gk, gv, gm


@op(
    "scaled_dot_product_attention",
    "nn",
    node="ScaledDotProductFlashAttentionForCpuBackward0",
    vjp=_sdpa_vjp,
    args=("q", "k", "v", "mask"),
    saves=("q", "k", "v", "mask", "out"),
    kernels=CPU,
    saved_names={
        "query": "q",
        "key": "k",
        "value": "v",
        "output": "out",
        "attn_mask": "mask",
        "logsumexp": "lse",
    },
)
def scaled_dot_product_attention(q, k, v, mask=None, is_causal=False, scale=None):
    """The fused attention of 4-D ``q`` (B, H, L, E), ``k`` (B, Hk, S, E), ``v`` (B, Hk, S, Ev)
    with H a multiple of Hk, an additive float ``mask`` of 2 or 4 dims (each 1 or full) and
    PyTorch's top-left causal mask; ``F.scaled_dot_product_attention`` checks the arguments and
    calls it when PyTorch would run its fused kernel (NOTE [attention paths]).  The mask is an
    input slot too: PyTorch sends a mask that requires grad to the composite path, but a mask
    with a forward-mode tangent reaches this op, and its tangent must not be dropped."""
    on_cuda(q, k, v, mask)
    cd = compute_dtype(q._dtype)
    B, H, L, E = q.shape
    sc = default_scale(E, scale)
    qa, ka, va = carray(q, cd), carray(k, cd), carray(v, cd)
    xp = xp_of(qa)
    out = xp.empty((B, H, L, v.shape[3]), cd)
    lse = xp.empty((B, H, L), cd)
    kernel_for(qa, KA.sdpa_fwd_cpu)(
        qa, ka, va, _mask4(mask, cd, qa), bool(is_causal), cd.type(sc), out, lse
    )
    return scaled_dot_product_attention.op.record(
        out.astype(q._dtype.np, copy=False),
        (q, k, v, mask),
        saved={"lse": _make(lse), "scale": scale, "is_causal": bool(is_causal), "dropout_p": 0.0},
        attrs=(bool(is_causal), sc),
    )


def sdpa_math(q, k, v, mask, dropout_p, is_causal, scale, enable_gqa, dropout):
    """PyTorch's ``_scaled_dot_product_attention_math``, op for op (so the nodes are its nodes):
    q and k each scaled by sqrt(scale), an additive mask added in place, ``_safe_softmax``,
    ``dropout(attn, dropout_p, True)`` when dropout_p > 0, then ``attn @ v``.  float16 runs in
    float32 and is cast back.  ``mask`` is already additive (``additive_mask``)."""
    origin = q._dtype
    if origin is _dt.float16:
        q, k, v = q.to(_dt.float32), k.to(_dt.float32), v.to(_dt.float32)
    negative = scale is not None and scale < 0.0
    sf = math.sqrt(default_scale(q.shape[-1], abs(scale) if negative else scale))
    qs = q * (-sf if negative else sf)
    if is_causal:
        if mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                "is_causal=True"
            )
        mask = additive_mask(_tril(q.shape[-2], k.shape[-2], q), qs._dtype)
    if enable_gqa:
        hq, hk, hv = q.size(-3), k.size(-3), v.size(-3)
        if hk == 0 or hv == 0 or hq % hk or hq % hv:
            raise RuntimeError(
                "Number of heads in key and value must divide the number of heads in "
            )
        k, v = _heads(k, hq // hk), _heads(v, hq // hv)
    attn = matmul(qs, k.transpose(-2, -1) * sf)
    if mask is not None:
        attn = attn.add_(mask)
    attn = safe_softmax(attn)
    if dropout_p > 0.0:
        if dropout_p > 1.0:  # at::dropout's check (a RuntimeError, unlike F.dropout's)
            raise RuntimeError(
                "dropout probability has to be between 0 and 1, but got %g" % dropout_p
            )
        attn = dropout(attn, dropout_p, True)
    out = matmul(attn, v)
    return out.to(origin) if origin is not out._dtype else out


def sdpa_empty(q, k, v):
    """PyTorch's result when the output or the values are empty: zeros of shape
    ``q.shape[:-1] + (Ev,)`` plus ``(q.sum() + k.sum() + v.sum()) * 0``, so each input still
    gets a (zero) gradient."""
    z = _make(xp_of(q._data).zeros(tuple(q.shape[:-1]) + (v.shape[-1],), q._dtype.np))
    return z + (q.sum() + k.sum() + v.sum()) * 0
