"""embedding: a row lookup whose backward scatter-adds rows (kernels/cpu/conv.py's index_add),
and the in-place max_norm renormalisation PyTorch applies before it.

The indices are saved as a tensor (NOTE [saved indices] in ops/indexing.py): version-checked,
and range-checked again in backward, since ``.data`` can change them after the forward."""

import numpy as np

from ..._tensor import Tensor
from ...creation import zeros
from ...grad_mode import STATE
from ...kernels.cpu import conv as KC, embedding as KE, index as KI
from ...kernels.cuda.array import DeviceArray
from ..cuda import kernel_for, xp_of
from ..registry import op
from ._common import carray, compute_dtype, needs, on_cuda

_make = Tensor._make


def _embedding_vjp(node, grads):
    g = grads[0]
    V, D, pad_idx, freq, ishape = node.attrs
    idx = node.array("idx")
    if idx.shape != ishape or idx.dtype.kind not in "iu":
        raise RuntimeError("embedding: the indices were replaced after the forward")
    if type(idx) is DeviceArray:
        return (_embedding_vjp_cuda(g, idx, V, D, pad_idx, freq),)
    idx = idx.astype(np.int64).reshape(-1)
    _check_range(idx, V)  # PyTorch skips rows out of range here; nbgrad refuses them
    n = idx.shape[0]
    scale = None
    if freq:
        counts = np.bincount(idx, minlength=V)
        scale = 1.0 / counts[idx]
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        g3 = carray(g, cd).reshape(1, n, D)
        if scale is not None:
            g3 = np.ascontiguousarray(g3 * scale.astype(cd)[None, :, None])
        gw = np.empty((1, V, D), cd)
        KC.index_add_axis1_cpu(g3, idx, gw)
        if pad_idx >= 0:
            gw[0, pad_idx] = 0
        return (_make(gw.reshape(V, D).astype(g._dtype.np, copy=False)),)
    g2 = g.reshape(n, D)
    mult = np.ones(n) if scale is None else scale
    if pad_idx >= 0:
        mult = mult * (idx != pad_idx)
    if scale is not None or pad_idx >= 0:
        g2 = g2 * _make(mult.astype(g._data.dtype).reshape(n, 1))
    index = _make(np.ascontiguousarray(np.broadcast_to(idx.reshape(n, 1), (n, D))))
    return (zeros((V, D), dtype=g.dtype).scatter_add(0, index, g2),)


def _embedding_vjp_cuda(g, idx, V, D, pad_idx, freq):
    """``_embedding_vjp`` for CUDA indices: the same steps, the per-entry multiplier (the
    frequency scale, the padding row's zero) from one kernel (kernels/cuda/nn.py)."""
    from ...kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use
    from ...kernels.cuda.nn import embedding_mult_cuda  # lazy: the CUDA path

    on_cuda(g)
    ia = idx.astype(np.int64).reshape(-1)
    _check_range(ia, V)
    n = ia.shape[0]
    if not STATE.enabled:
        cd = compute_dtype(g._dtype)
        g3 = carray(g, cd).reshape(1, n, D)
        if freq:
            scale = wrap(embedding_mult_cuda(ia.dense(), V, True, -1))
            g3 = (g3 * scale.astype(cd).reshape(1, n, 1)).contiguous()
        gw = xp_of(g3).empty((1, V, D), cd)
        kernel_for(g3, KC.index_add_axis1_cpu)(g3, ia, gw)
        if pad_idx >= 0:
            gw[0, pad_idx] = 0
        return _make(gw.reshape(V, D).astype(g._dtype.np, copy=False))
    g2 = g.reshape(n, D)
    if freq or pad_idx >= 0:
        mult = wrap(embedding_mult_cuda(ia.dense(), V, freq, pad_idx))
        g2 = g2 * _make(mult.astype(g._data.dtype).reshape(n, 1))
    index = _make(ia.reshape(n, 1).broadcast_to((n, D)).contiguous())
    return zeros((V, D), dtype=g.dtype, device=g.device).scatter_add(0, index, g2)


def _check_range(ia, V):
    if type(ia) is DeviceArray:
        from ...kernels.cuda.index import first_bad_device  # lazy: the CUDA path

        bad = first_bad_device(ia.dense(), 0, V)
    else:
        bad = KI.first_bad(ia, 0, V)
    if bad is not None:
        raise IndexError("index out of range in self")


# the indices take no gradient: the node's one input slot is the weight
@op(
    "embedding",
    "nn",
    node="EmbeddingBackward0",
    vjp=_embedding_vjp,
    args=("weight",),
    kernels={"cpu": KC},
)
def embedding(input, weight, padding_idx=-1, scale_grad_by_freq=False):
    """Rows ``weight[input]``; ``padding_idx`` (-1: none) gets no gradient."""
    w = weight._data
    _check_range(input._data, w.shape[0])
    if on_cuda(input, weight):
        from ...kernels.cuda.nn import take_rows_cuda  # lazy: the CUDA path loads on first use

        ia = input._data.astype(np.int64, copy=False).reshape(-1)
        out = xp_of(w).empty((ia.shape[0], w.shape[1]), w.dtype)
        take_rows_cuda(w.dense(), ia.dense(), out.dense())
        out = out.reshape(tuple(input._data.shape) + (w.shape[1],))
    else:
        out = np.take(w, input._data.astype(np.int64, copy=False), axis=0)
    return embedding.op.record(
        out,
        (weight,),
        saved={"idx": input},
        attrs=(w.shape[0], w.shape[1], padding_idx, bool(scale_grad_by_freq), input._data.shape),
    )


def embedding_renorm_(weight, input, max_norm, norm_type):
    """Rescale, in place, the rows of ``weight`` that ``input`` looks up to norm <= max_norm."""
    V = weight.shape[0]
    if on_cuda(weight, input):
        return _renorm_cuda(weight, input, max_norm, norm_type)
    rows = np.unique(input._data.reshape(-1)).astype(np.int64)
    bad = KI.first_bad(rows, -V, V)  # PyTorch selects the sorted unique rows one by one
    if bad is not None:
        raise IndexError(
            "select(): index %d out of range for tensor of size %s at dimension 0"
            % (bad, list(weight.shape))
        )
    _check_range(rows, V)
    w = weight._data
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    if np.any(big):
        scale = max_norm / (norms[big] + 1e-7)
        w[rows[big]] = (w[rows[big]] * scale[:, None]).astype(w.dtype)
        weight._vc[0] += 1


def _renorm_cuda(weight, input, max_norm, norm_type):
    """``embedding_renorm_`` on the device: the same checks (the first bad value of the sorted
    unique indices, found from the min and max read back), then one kernel rescaling each
    looked-up row once (kernels/cuda/nn.py)."""
    from ...kernels.cuda import nn as KN  # lazy: the CUDA path loads on first use

    V = weight.shape[0]
    flat = input._data.astype(np.int64, copy=False).reshape(-1).contiguous().dense()
    if not flat.shape[0]:
        return
    lo, hi = KN.minmax_i64_cuda(flat)
    bad = lo if lo < -V else (KN.min_at_least_cuda(flat, V) if hi >= V else None)
    if bad is not None:
        raise IndexError(
            "select(): index %d out of range for tensor of size %s at dimension 0"
            % (bad, list(weight.shape))
        )
    if lo < 0:
        raise IndexError("index out of range in self")
    w = weight._data
    if not w.is_c_contiguous:
        raise RuntimeError("nbgrad: embedding max_norm needs a contiguous CUDA weight")
    if KN.embedding_renorm_cuda(w.dense(), flat, max_norm, norm_type):
        weight._vc[0] += 1


# -- embedding_bag -----------------------------------------------------------------------------

_BAG_MODES = {"sum": KE.SUM, "mean": KE.MEAN, "max": KE.MAX}


def _offsets_repr(v, t):
    # PyTorch prints offsets[0] as a 0-dim tensor in this message
    return "%d\n[ torch.%sTensor{} ]" % (v, t._dtype._legacy)


def _bags(ia, oa, include_last_offset, offsets=None):
    """Validate the offsets ``oa`` of the flat indices ``ia`` (NOTE [user indices]) and return
    (starts, ends, bag_of): the bags' entry ranges and each entry's bag (-1: none)."""
    if type(ia) is DeviceArray:
        return _bags_cuda(ia, oa, include_last_offset, offsets)
    n = ia.shape[0]
    oa = oa.astype(np.int64, copy=False).reshape(-1)
    if oa.shape[0]:
        if oa[0] != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                "from position 0. However, got %s" % _offsets_repr(int(oa[0]), offsets)
            )
        if oa[-1] > n:
            raise RuntimeError(
                "offsets[-1] can not be greater than input's length %d but got offsets[-1] of %d"
                % (n, int(oa[-1]))
            )
        if KI.first_bad(oa, 0, n + 1) is not None:
            raise IndexError("index out of range in self")
        step = np.diff(oa)
        if np.any(step < 0):
            k = int(np.argmax(step < 0))
            raise RuntimeError(
                "embedding_bag: offsets must be non-decreasing, but got offsets[%d] = %d > "
                "offsets[%d] = %d" % (k, int(oa[k]), k + 1, int(oa[k + 1]))
            )
    if include_last_offset:
        starts, ends = oa[:-1], oa[1:]
    elif oa.shape[0]:
        starts, ends = oa, np.append(oa[1:], n).astype(np.int64)
    else:
        starts = ends = oa
    bag_of = np.full(n, -1, np.int64)
    if starts.shape[0]:
        bag_of[: ends[-1]] = np.repeat(np.arange(starts.shape[0]), ends - starts)
    return np.ascontiguousarray(starts), np.ascontiguousarray(ends), bag_of


def _item(a, i):
    """``int(a[i])``; for a device array one number read back."""
    v = a[i]
    return int(v.to_host() if type(v) is DeviceArray else v)


def _bags_cuda(ia, oa, include_last_offset, offsets):
    """``_bags`` on the device: the same checks in the same order (the numbers a message
    needs read back one by one), the bags' ranges as views of the offsets, ``bag_of`` by a
    kernel."""
    from ...kernels.cuda.index import first_bad_device  # lazy: the CUDA path loads on first use
    from ...kernels.cuda.nn import bag_of_cuda, first_decrease_cuda  # lazy: the CUDA path

    n = ia.shape[0]
    oa = oa.astype(np.int64, copy=False).reshape(-1).contiguous()
    m = oa.shape[0]
    if m:
        first = _item(oa, 0)
        if first != 0:
            raise RuntimeError(
                "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                "from position 0. However, got %s" % _offsets_repr(first, offsets)
            )
        last = _item(oa, m - 1)
        if last > n:
            raise RuntimeError(
                "offsets[-1] can not be greater than input's length %d but got offsets[-1] of %d"
                % (n, last)
            )
        if first_bad_device(oa.dense(), 0, n + 1) is not None:
            raise IndexError("index out of range in self")
        k = first_decrease_cuda(oa.dense())
        if k >= 0:
            raise RuntimeError(
                "embedding_bag: offsets must be non-decreasing, but got offsets[%d] = %d > "
                "offsets[%d] = %d" % (k, _item(oa, k), k + 1, _item(oa, k + 1))
            )
    xp = xp_of(oa)
    if include_last_offset:
        starts, ends = oa[:-1], oa[1:]
    elif m:
        starts, ends = oa, xp.empty(m, np.int64)
        ends[: m - 1] = oa[1:]
        ends[m - 1] = n
    else:
        starts = ends = oa
    starts, ends = starts.contiguous(), ends.contiguous()
    bag_of = xp.full(n, -1, np.int64)
    bag_of_cuda(starts.dense(), ends.dense(), bag_of.dense())
    return starts, ends, bag_of


def _bag_index_error(ia, pos, V, mode):
    v = _item(ia, pos)
    if mode == KE.MAX:
        return RuntimeError(
            "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be %d" % v
        )
    return RuntimeError(
        "Index %d of input takes value %d which is not in the valid range [0, %d)" % (pos, v, V)
    )


def _check_bag_indices(ia, V, mode):
    bad = kernel_for(ia, KI.first_out_of_range_cpu)(ia, 0, V) if ia.shape[0] else -1
    if bad >= 0:
        raise _bag_index_error(ia, bad, V, mode)


def _bag_state(node):
    """The current indices for backward: the saved tensor, version-checked, its values
    validated again (NOTE [saved indices] in ops/indexing.py).  The offsets are version-checked
    too, but the bags are the ones of the forward (as in PyTorch, which saves offset2bag); mode
    'max' reads neither (its gradient goes to the argmax rows saved by the forward)."""
    V, mode, pad, ilo, freq, n, B = node.attrs
    ia = node.unpack("idx")._data
    node.unpack("off")
    if mode == KE.MAX:  # the gradient goes to the saved argmax rows: the indices are not read
        return None, None
    if ia.shape != (n,) or ia.dtype.kind not in "iu":
        raise RuntimeError("embedding_bag: the indices were replaced after the forward")
    ia = ia.astype(np.int64)
    _check_bag_indices(ia, V, mode)
    return ia, node.array("bag_of")


# NOTE [bag frequency scale]: PyTorch's CPU backward of embedding_bag with
# scale_grad_by_freq divides the gradient of the k-th distinct index (in sorted order) by the
# count of ``sorted(indices)[k]``, not by the count of that index itself (it reads the sorted
# array at the group number); nbgrad divides by the same counts so that the gradients match.


def _bag_mult(node, ia, bag_of, psw):
    """Per-entry multiplier of the weight gradient (sum / mean), or None when all ones."""
    V, mode, pad, ilo, freq, n, B = node.attrs
    if type(bag_of) is DeviceArray:
        return _bag_mult_cuda(node, ia, bag_of)
    mult = None
    if mode == KE.MEAN:  # the bag sizes of the forward
        inbag = bag_of >= 0
        mult = np.zeros(n)
        mult[inbag] = 1.0 / np.maximum(node.array("count")[bag_of[inbag]], 1)
    if freq:  # NOTE [bag frequency scale]
        srt = np.sort(ia)
        group = np.searchsorted(np.unique(srt), ia)
        scale = 1.0 / np.bincount(ia, minlength=V)[srt[group]]
        mult = scale if mult is None else mult * scale
    return mult


def _bag_mult_cuda(node, ia, bag_of):
    """``_bag_mult`` on the device (kernels/cuda/nn.py)."""
    from ...kernels.cuda import nn as KN  # lazy: the CUDA path loads on first use

    V, mode, pad, ilo, freq, n, B = node.attrs
    xp = xp_of(bag_of)
    mult = None
    if mode == KE.MEAN:  # the bag sizes of the forward
        mult = xp.empty(n, np.float64)
        KN.bag_mean_mult_cuda(bag_of.dense(), node.array("count").dense(), mult.dense())
    if freq:  # NOTE [bag frequency scale]
        scale = xp.empty(n, np.float64)
        KN.bag_freq_scale_cuda(ia.dense(), V, scale.dense())
        mult = scale if mult is None else mult * scale
    return mult


def _gather(a, pos):
    """``a[pos]`` of a 1-D device array at the int64 positions ``pos`` (in range)."""
    from ...kernels.cuda.index import gather_flat_cuda  # lazy: the CUDA path loads on first use

    out = xp_of(a).empty(pos.shape[0], a.dtype)
    gather_flat_cuda(a.contiguous().dense(), pos.dense(), out.dense())
    return out


def _embedding_bag_graph_cuda(node, g, ia, bag_of, psw):
    """The create_graph gradients of ``_embedding_bag_vjp`` for CUDA arrays: the same ops,
    the positions (``np.nonzero``) from a stable compaction kernel."""
    from ...kernels.cuda import nn as KN  # lazy: the CUDA path loads on first use
    from ...kernels.cuda.array import wrap  # lazy: the CUDA path loads on first use

    V, mode, pad, ilo, freq, n, B = node.attrs
    D = g.shape[1]
    dev = g.device
    if mode == KE.MAX:
        mi = node.array("maxidx")
        if D:  # (maxidx + 1 is 0 exactly for the empty bags' -1)
            full = wrap(KN.nonzero_1d_cuda((mi[:, 0] + 1).dense()))
        else:
            full = xp_of(mi).zeros(0, np.int64)
        rows = g.index_select(0, _make(full))
        index = _make(mi).index_select(0, _make(full))
        gw = zeros((V, D), dtype=g.dtype, device=dev).scatter_add(0, index, rows)
        return gw, None
    pos = wrap(KN.nonzero_1d_cuda(KN.bag_live_cuda(bag_of.dense(), ia.dense(), pad)))
    rows = g.index_select(0, _make(_gather(bag_of, pos)))
    gw = gp = None
    if needs(node, 0):
        r = rows
        mult = _bag_mult(node, ia, bag_of, psw)
        if mult is not None:
            r = r * _make(_gather(mult, pos).astype(g._data.dtype).reshape(-1, 1))
        if psw is not None:
            r = r * psw.index_select(0, _make(pos)).reshape(-1, 1)
        ip = _gather(ia, pos)
        index = ip.reshape(-1, 1).broadcast_to((pos.shape[0], D)).contiguous()
        gw = zeros((V, D), dtype=g.dtype, device=dev).scatter_add(0, _make(index), r)
    if needs(node, 1):
        w = node.unpack("w")
        val = (rows * w.index_select(0, _make(_gather(ia, pos)))).sum(1)
        gp = zeros(n, dtype=g.dtype, device=dev).scatter_add(0, _make(pos), val)
    return gw, gp


def _embedding_bag_vjp(node, grads):
    g = grads[0]
    V, mode, pad, ilo, freq, n, B = node.attrs
    ia, bag_of = _bag_state(node)
    psw = node.unpack("psw") if node.saved.get("psw") is not None else None
    cd = compute_dtype(g._dtype)
    D = g.shape[1]
    gw = gp = None
    if not STATE.enabled:
        ga = carray(g, cd).reshape(B, D)
        xp = xp_of(ga)
        if needs(node, 0):
            out = xp.empty((V, D), cd)
            if mode == KE.MAX:
                maxidx = node.array("maxidx")
                if kernel_for(ga, KE.embedding_bag_max_bwd_cpu)(ga, maxidx, out) >= 0:
                    raise RuntimeError("embedding_bag: a saved max index is out of range")
                bad = -1
            else:
                mult = _bag_mult(node, ia, bag_of, psw)
                if psw is not None:
                    pm = carray(psw, np.float64)
                    mult = pm if mult is None else mult * pm
                mult = xp.ones(n, np.float64) if mult is None else mult
                bwd = kernel_for(ga, KE.embedding_bag_bwd_cpu)
                bad = bwd(ga, ia, bag_of, mult.astype(cd), pad, out)
            if bad >= 0:
                raise _bag_index_error(ia, bad, V, mode)
            gw = _make(out.astype(g._dtype.np, copy=False))
        if needs(node, 1):
            out = xp.empty(n, cd)
            w = node.unpack("w")
            psw_bwd = kernel_for(ga, KE.embedding_bag_psw_bwd_cpu)
            bad = psw_bwd(ga, carray(w, cd), ia, bag_of, pad, out)
            if bad >= 0:
                raise _bag_index_error(ia, bad, V, mode)
            gp = _make(out.astype(g._dtype.np, copy=False))
        return gw, gp
    # create_graph: the same gradients from nbgrad ops (differentiable again)
    if type(g._data) is DeviceArray:
        return _embedding_bag_graph_cuda(node, g, ia, bag_of, psw)
    if mode == KE.MAX:
        mi = node.array("maxidx")
        full = np.nonzero(mi[:, 0] >= 0)[0] if D else np.zeros(0, np.int64)
        rows = g.index_select(0, _make(full))
        gw = zeros((V, D), dtype=g.dtype).scatter_add(0, _make(mi[full]), rows)
        return gw, None
    pos = np.nonzero((bag_of >= 0) & (ia != pad))[0]
    rows = g.index_select(0, _make(bag_of[pos]))
    if needs(node, 0):
        r = rows
        mult = _bag_mult(node, ia, bag_of, psw)
        if mult is not None:
            r = r * _make(mult[pos].astype(g._data.dtype).reshape(-1, 1))
        if psw is not None:
            r = r * psw.index_select(0, _make(pos)).reshape(-1, 1)
        index = np.ascontiguousarray(np.broadcast_to(ia[pos].reshape(-1, 1), (pos.shape[0], D)))
        gw = zeros((V, D), dtype=g.dtype).scatter_add(0, _make(index), r)
    if needs(node, 1):
        w = node.unpack("w")
        val = (rows * w.index_select(0, _make(ia[pos]))).sum(1)
        gp = zeros(n, dtype=g.dtype).scatter_add(0, _make(pos), val)
    return gw, gp


# the indices and offsets take no gradient: the node's input slots are weight and psw
@op(
    "embedding_bag",
    "nn",
    node="EmbeddingBagBackward0",
    vjp=_embedding_bag_vjp,
    args=("weight", "psw"),
    kernels={"cpu": KE},
)
def embedding_bag(
    input,
    weight,
    offsets,
    mode="mean",
    per_sample_weights=None,
    include_last_offset=False,
    padding_idx=-1,
    scale_grad_by_freq=False,
):
    """Per-bag sum / mean / max of the rows ``weight[input]`` (1-D ``input``, bags given by
    ``offsets``); ``padding_idx`` (-1: none) entries are skipped.  F.embedding_bag handles 2-D
    input and PyTorch's argument checks before this one."""
    mode_i = _BAG_MODES[mode]
    on_cuda(input, weight, offsets, per_sample_weights)
    V, D = weight.shape
    ia = input._data.astype(np.int64, copy=False).reshape(-1)
    starts, ends, bag_of = _bags(ia, offsets._data, include_last_offset, offsets)
    _check_bag_indices(ia, V, mode_i)
    B = starts.shape[0]
    cd = compute_dtype(weight._dtype)
    wa = carray(weight, cd)
    psw = per_sample_weights
    xp = xp_of(wa)
    pa = carray(psw, cd) if psw is not None else xp.zeros(0, cd)
    out = xp.empty((B, D), cd)
    maxidx = xp.empty((B, D), np.int64)
    count = xp.empty(B, np.int64)
    bad = kernel_for(wa, KE.embedding_bag_fwd_cpu)(
        wa, ia, starts, ends, pa, psw is not None, mode_i, padding_idx, out, maxidx, count
    )
    if bad >= 0:
        raise _bag_index_error(ia, bad, V, mode_i)
    saved = {"idx": input, "off": offsets, "bag_of": bag_of, "count": count}
    if psw is not None:
        saved["psw"] = psw
        if psw._requires_grad:
            saved["w"] = weight
    if mode_i == KE.MAX:
        saved["maxidx"] = maxidx
    return embedding_bag.op.record(
        out.astype(weight._dtype.np, copy=False),
        (weight, psw),
        saved=saved,
        attrs=(
            V,
            mode_i,
            padding_idx,
            bool(include_last_offset),
            bool(scale_grad_by_freq),
            ia.shape[0],
            B,
        ),
    )
