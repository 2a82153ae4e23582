"""OpInfo entries for ``nbgrad.nn.functional`` (the ops declared in ops/nn/ and the functions
PyTorch composes from other ops).  Same conventions as testing/op_db.py: ``fn(T, ...)``
runs with T = nbgrad or torch, ``ref`` is a plain numpy reference (explicit loops for conv and
pooling)."""

import math

import numpy as np

import nbgrad.nn.functional  # noqa: F401  (makes ``nbgrad.nn.functional`` an attribute)

from .op_db import F, I, N, OpInfo

# ---------------------------------------------------------------------------------------------
# numpy references


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    nd = w.ndim - 2
    if nd == 1:
        x, w = x[:, :, None, :], w[:, :, None, :]
        stride, dilation = (1, stride), (1, dilation)
        padding = padding if isinstance(padding, str) else (0, padding)
    (sh, sw), (dh, dw) = _pair(stride), _pair(dilation)
    N_ = x.shape[0]
    O, Cg, KH, KW = w.shape
    if padding == "same":
        th, tw = dh * (KH - 1), dw * (KW - 1)
        pads = ((th // 2, th - th // 2), (tw // 2, tw - tw // 2))
    elif padding == "valid":
        pads = ((0, 0), (0, 0))
    else:
        ph, pw = _pair(padding)
        pads = ((ph, ph), (pw, pw))
    xp = np.pad(x, ((0, 0), (0, 0)) + pads)
    OH = (xp.shape[2] - dh * (KH - 1) - 1) // sh + 1
    OW = (xp.shape[3] - dw * (KW - 1) - 1) // sw + 1
    out = np.zeros((N_, O, OH, OW), x.dtype)
    Og = O // groups
    for o in range(O):
        g = o // Og
        for i in range(KH):
            for j in range(KW):
                patch = xp[
                    :,
                    g * Cg : (g + 1) * Cg,
                    i * dh : i * dh + sh * (OH - 1) + 1 : sh,
                    j * dw : j * dw + sw * (OW - 1) + 1 : sw,
                ]
                out[:, o] += np.einsum("nchw,c->nhw", patch, w[o, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out[:, :, 0, :] if nd == 1 else out


def _pool_out(n, k, p, s, d, ceil_mode):
    num = n + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)
    out = num // s + 1
    if ceil_mode and (out - 1) * s >= n + p:
        out -= 1
    return out


def np_max_pool2d(x, k, s=None, p=0, d=1, ceil_mode=False, return_indices=False):
    (kh, kw), (ph, pw), (dh, dw) = _pair(k), _pair(p), _pair(d)
    sh, sw = _pair(s if s is not None else k)
    H, W = x.shape[-2:]
    OH, OW = _pool_out(H, kh, ph, sh, dh, ceil_mode), _pool_out(W, kw, pw, sw, dw, ceil_mode)
    out = np.full(x.shape[:-2] + (OH, OW), -np.inf, x.dtype)
    idx = np.zeros(out.shape, np.int64)
    for oy in range(OH):
        for ox in range(OW):
            for i in range(kh):
                for j in range(kw):
                    ih, iw = oy * sh - ph + i * dh, ox * sw - pw + j * dw
                    if 0 <= ih < H and 0 <= iw < W:
                        better = x[..., ih, iw] > out[..., oy, ox]
                        out[..., oy, ox] = np.where(better, x[..., ih, iw], out[..., oy, ox])
                        idx[..., oy, ox] = np.where(better, ih * W + iw, idx[..., oy, ox])
    return (out, idx) if return_indices else out


def np_avg_pool2d(x, k, s=None, p=0, ceil_mode=False, count_include_pad=True, divisor=None):
    (kh, kw), (ph, pw) = _pair(k), _pair(p)
    sh, sw = _pair(s if s is not None else k)
    H, W = x.shape[-2:]
    OH, OW = _pool_out(H, kh, ph, sh, 1, ceil_mode), _pool_out(W, kw, pw, sw, 1, ceil_mode)
    out = np.zeros(x.shape[:-2] + (OH, OW), x.dtype)
    for oy in range(OH):
        for ox in range(OW):
            hs, ws = oy * sh - ph, ox * sw - pw
            he, we = min(hs + kh, H + ph), min(ws + kw, W + pw)
            size = (he - hs) * (we - ws)
            hs, ws, he, we = max(hs, 0), max(ws, 0), min(he, H), min(we, W)
            total = x[..., hs:he, ws:we].sum((-1, -2))
            dv = divisor or (size if count_include_pad else (he - hs) * (we - ws))
            out[..., oy, ox] = total / dv
    return out


def np_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axes, keepdims=True)
    var = x.var(axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (w if w is not None else 1) + (b if b is not None else 0)


def np_batch_norm(x, w=None, b=None, rm=None, rv=None, eps=1e-5):
    axes = (0,) + tuple(range(2, x.ndim))
    shp = (1, -1) + (1,) * (x.ndim - 2)
    mu = x.mean(axes, keepdims=True) if rm is None else rm.reshape(shp)
    var = x.var(axes, keepdims=True) if rv is None else rv.reshape(shp)
    y = (x - mu) / np.sqrt(var + eps)
    if w is not None:
        y = y * w.reshape(shp)
    if b is not None:
        y = y + b.reshape(shp)
    return y


def np_log_softmax(x, axis=None):
    if axis is None:  # the class dim of a loss input
        axis = 0 if x.ndim == 1 else 1
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def _reduce(loss, reduction, denom=None):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.sum() / (loss.size if denom is None else denom)


def np_nll(lp, t, w=None, ignore_index=-100, reduction="mean", smoothing=0.0):
    """lp: log-probs (N, C, ...) or (C,); t: class indices."""
    cdim = 0 if lp.ndim == 1 else 1
    C_ = lp.shape[cdim]
    lpm = np.moveaxis(lp, cdim, -1)
    w = np.ones(C_) if w is None else w
    valid = t != ignore_index
    tc = np.where(valid, t, 0)
    picked = np.take_along_axis(lpm, tc[..., None], -1)[..., 0]
    wt = np.where(valid, w[tc], 0.0)
    loss = -wt * picked
    if smoothing:
        smooth = np.where(valid, -(lpm * w).sum(-1), 0.0)
        loss = (1 - smoothing) * loss + smoothing / C_ * smooth
    return _reduce(loss, reduction, wt.sum()).astype(lp.dtype)


def np_bce(x, t, w=None, reduction="mean"):
    loss = -(t * np.maximum(np.log(x), -100) + (1 - t) * np.maximum(np.log1p(-x), -100))
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction).astype(x.dtype)


def np_bcel(x, t, w=None, pw=None, reduction="mean"):
    lw = 1 + ((pw if pw is not None else 1) - 1) * t
    loss = (1 - t) * x + lw * (np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0))
    if w is not None:
        loss = loss * w
    return _reduce(loss, reduction).astype(x.dtype)


_erf = np.vectorize(math.erf)


def np_gelu(x):
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)))


def np_gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def np_sdpa(q, k, v, mask=None, causal=False, scale=None, gqa=False):
    """softmax(q k^T * scale + mask) v with fully masked rows giving zeros (PyTorch's
    _safe_softmax); a bool mask marks the positions that take part."""
    sc = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    if gqa:
        k = np.repeat(k, q.shape[-3] // k.shape[-3], axis=-3)
        v = np.repeat(v, q.shape[-3] // v.shape[-3], axis=-3)
    s = q @ np.swapaxes(k, -1, -2) * sc
    if mask is not None:
        s = s + (np.where(mask, 0.0, -np.inf) if mask.dtype == bool else mask)
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    m = s.max(-1, keepdims=True)
    dead = m == -np.inf
    e = np.exp(s - np.where(dead, 0.0, m))
    p = np.where(dead, 0.0, e / np.where(dead, 1.0, e.sum(-1, keepdims=True)))
    return (p @ v).astype(q.dtype)


def _np_sigmoid(x):
    return 1 / (1 + np.exp(-x))


def np_rnn(mode, x, hx, params, layers=1, bidirectional=False, batch_first=False):
    """Reference time loop of ``_VF.lstm/gru/rnn_tanh/rnn_relu`` (no dropout): ``hx`` is h0,
    or (h0, c0) for an LSTM; ``params`` flat as PyTorch's (w_ih, w_hh[, b_ih, b_hh][, w_hr])
    per layer and direction.  Returns (output, h_n[, c_n])."""
    lstm = mode == "lstm"
    h0, c0 = hx if lstm else (hx, None)
    D = 2 if bidirectional else 1
    per = len(params) // (layers * D)
    if batch_first:
        x = x.swapaxes(0, 1)
    hn, cn = [], []
    inp = x
    for layer in range(layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            p = params[k * per : (k + 1) * per]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if per >= 4 else (0, 0)
            w_hr = p[-1] if lstm and per in (3, 5) else None
            h, c = h0[k], c0[k] if lstm else None
            out = [None] * inp.shape[0]
            for t in reversed(range(inp.shape[0])) if d else range(inp.shape[0]):
                xg = inp[t] @ w_ih.T + b_ih
                hg = h @ w_hh.T + b_hh
                if lstm:
                    i, f, g, o = np.split(xg + hg, 4, 1)
                    c = _np_sigmoid(f) * c + _np_sigmoid(i) * np.tanh(g)
                    h = _np_sigmoid(o) * np.tanh(c)
                    if w_hr is not None:
                        h = h @ w_hr.T
                elif mode == "gru":
                    xr, xz, xn = np.split(xg, 3, 1)
                    hr, hz, hn_ = np.split(hg, 3, 1)
                    r, z = _np_sigmoid(xr + hr), _np_sigmoid(xz + hz)
                    n = np.tanh(xn + r * hn_)
                    h = (1 - z) * n + z * h
                elif mode == "rnn_tanh":
                    h = np.tanh(xg + hg)
                else:
                    h = np.maximum(xg + hg, 0)
                out[t] = h
            outs.append(np.stack(out))
            hn.append(h)
            cn.append(c)
        inp = np.concatenate(outs, -1)
    out = inp.swapaxes(0, 1) if batch_first else inp
    return (out, np.stack(hn), np.stack(cn)) if lstm else (out, np.stack(hn))


def np_elu(x, alpha=1.0):
    return np.where(x > 0, x, alpha * np.expm1(x))


def np_mish(x):
    return x * np.tanh(np.log1p(np.exp(x)))


def np_smooth_l1(x, t, beta=1.0, reduction="mean", huber=False):
    z = np.abs(x - t)
    if huber:
        loss = np.where(z < beta, 0.5 * z * z, beta * (z - 0.5 * beta))
    else:
        loss = np.where(z < beta, 0.5 * z * z / beta, z - 0.5 * beta)
    return _reduce(loss, reduction)


def np_cosine_similarity(a, b, axis=1, eps=1e-8):
    a, b = np.broadcast_arrays(a, b)
    na = np.maximum(np.sqrt((a * a).sum(axis, keepdims=True)), eps)
    nb = np.maximum(np.sqrt((b * b).sum(axis, keepdims=True)), eps)
    return ((a / na) * (b / nb)).sum(axis)


def np_cosine_embedding(a, b, y, margin=0.0, reduction="mean"):
    cos = (a * b).sum(-1) / np.sqrt(((a * a).sum(-1) + 1e-12) * ((b * b).sum(-1) + 1e-12))
    loss = np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(cos - margin, 0), 0.0)
    return _reduce(loss, reduction).astype(a.dtype)


def _fn(name):
    """fn(T, ...) calling T.nn.functional.<name>."""

    def call(T, *args, **kw):
        return getattr(T.nn.functional, name)(*args, **kw)

    return call


def _F(T):
    return T.nn.functional


def _vf_rnn(mode, layers=1, bidirectional=False, batch_first=False, has_biases=True):
    """(fn, ref) for ``T._VF.<mode>`` over samples (x, h0[, c0], *params)."""

    def split(rest):
        if mode == "lstm":
            return (rest[0], rest[1]), list(rest[2:])
        return rest[0], list(rest[1:])

    def fn(T, x, *rest):
        hx, params = split(rest)
        return getattr(T._VF, mode)(
            x, hx, params, has_biases, layers, 0.0, False, bidirectional, batch_first
        )

    def ref(x, *rest):
        hx, params = split(rest)
        return np_rnn(mode, x, hx, params, layers, bidirectional, batch_first)

    return fn, ref


def _rnn_params(gates, in_size, hidden, layers=1, directions=1, bias=True, proj=0):
    """Sample specs of the flat parameter list (weights in [-0.8, 0.8])."""
    out = []
    h_out = proj or hidden
    for layer in range(layers):
        for _ in range(directions):
            size = in_size if layer == 0 else h_out * directions
            out += [F((gates * hidden, size), -0.8, 0.8), F((gates * hidden, h_out), -0.8, 0.8)]
            if bias:
                out += [F((gates * hidden,), -0.8, 0.8), F((gates * hidden,), -0.8, 0.8)]
            if proj:
                out += [F((proj, hidden), -0.8, 0.8)]
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# samples

X4 = (2, 3, 5, 5)
POS = {"lo": 0.5, "hi": 2.0}
PROB = {"lo": 0.05, "hi": 0.95}

OP_DB_NN = [
    # -- activations (pointwise registry ops) --
    OpInfo("gelu", lambda T, x: _F(T).gelu(x), np_gelu, [(F((3, 4)),), (F(()),)]),
    OpInfo(
        "gelu.tanh", lambda T, x: _F(T).gelu(x, approximate="tanh"), np_gelu_tanh, [(F((3, 4)),)]
    ),
    OpInfo("silu", lambda T, x: _F(T).silu(x), lambda x: x / (1 + np.exp(-x)), [(F((3, 4)),)]),
    OpInfo(
        "softplus", lambda T, x: _F(T).softplus(x), lambda x: np.log1p(np.exp(x)), [(F((3, 4)),)]
    ),
    OpInfo(
        "softplus",
        lambda T, x: _F(T).softplus(x, beta=2.0, threshold=1.5),
        lambda x: np.where(2 * x > 1.5, x, np.log1p(np.exp(2 * x)) / 2),
        [(F((4, 5)),)],
        gradgrad=False,
    ),  # kink at the threshold
    OpInfo(
        "leaky_relu",
        lambda T, x: _F(T).leaky_relu(x, 0.1),
        lambda x: np.where(x > 0, x, 0.1 * x),
        [(F((3, 4)),)],
        gradgrad=False,
    ),
    OpInfo(
        "nn.relu",
        lambda T, x: _F(T).relu(x),
        lambda x: np.maximum(x, 0),
        [(F((3, 4)),)],
        gradgrad=False,
    ),
    OpInfo("nn.tanh", lambda T, x: _F(T).tanh(x), np.tanh, [(F((3,)),)]),
    OpInfo(
        "nn.sigmoid", lambda T, x: _F(T).sigmoid(x), lambda x: 1 / (1 + np.exp(-x)), [(F((3,)),)]
    ),
    OpInfo(
        "nn.softmax",
        lambda T, x: _F(T).softmax(x, dim=1),
        lambda x: np.exp(np_log_softmax(x, 1)),
        [(F((3, 4)),)],
    ),
    OpInfo(
        "nn.log_softmax",
        lambda T, x: _F(T).log_softmax(x, dim=-1),
        lambda x: np_log_softmax(x, -1),
        [(F((2, 3, 4)),)],
    ),
    # -- linear --
    OpInfo(
        "linear",
        lambda T, x, w, b: _F(T).linear(x, w, b),
        lambda x, w, b: x @ w.T + b,
        [
            (F((3, 4)), F((5, 4)), F((5,))),
            (F((2, 3, 4)), F((2, 4)), F((2,))),
            (F((4,)), F((2, 4)), F((2,))),
        ],
    ),
    OpInfo(
        "nn.linear_nobias",
        lambda T, x, w: _F(T).linear(x, w),
        lambda x, w: x @ w.T,
        [(F((3, 4)), F((5, 4))), (F((2, 3, 4)), F((2, 4)))],
    ),
    OpInfo(
        "nn.bilinear",
        lambda T, a, b, w, c: _F(T).bilinear(a, b, w, c),
        lambda a, b, w, c: np.einsum("bi,oij,bj->bo", a, w, b) + c,
        [(F((3, 4)), F((3, 2)), F((5, 4, 2)), F((5,)))],
    ),
    OpInfo(
        "nn.bilinear",
        lambda T, a, b, w: _F(T).bilinear(a, b, w),
        lambda a, b, w: np.einsum("...i,oij,...j->...o", a, w, b),
        [(F((2, 3, 4)), F((2, 3, 2)), F((2, 4, 2)))],
    ),
    # -- convolution --
    OpInfo(
        "conv2d",
        lambda T, x, w, b: _F(T).conv2d(x, w, b, padding=1),
        lambda x, w, b: np_conv(x, w, b, padding=1),
        [(F((1, 2, 4, 4)), F((3, 2, 3, 3)), F((3,))), (F(X4), F((4, 3, 3, 3)), F((4,)))],
    ),
    OpInfo(
        "conv2d",
        lambda T, x, w: _F(T).conv2d(x, w, stride=2, dilation=(1, 2)),
        lambda x, w: np_conv(x, w, stride=2, dilation=(1, 2)),
        [(F((2, 2, 7, 8)), F((3, 2, 2, 3)))],
    ),
    OpInfo(
        "conv2d",
        lambda T, x, w: _F(T).conv2d(x, w, padding=(0, 2), stride=(2, 1), groups=2),
        lambda x, w: np_conv(x, w, padding=(0, 2), stride=(2, 1), groups=2),
        [(F((1, 4, 5, 4)), F((6, 2, 2, 3)))],
    ),
    OpInfo(
        "conv2d",
        lambda T, x, w: _F(T).conv2d(x, w, padding="same"),
        lambda x, w: np_conv(x, w, padding="same"),
        [(F((1, 1, 4, 5)), F((2, 1, 2, 3)))],
    ),
    OpInfo(
        "conv2d",
        lambda T, x, w: _F(T).conv2d(x, w),
        lambda x, w: np_conv(x[None], w)[0],
        [(F((1, 4, 4)), F((2, 1, 3, 3)))],
    ),  # unbatched
    OpInfo(
        "conv1d",
        lambda T, x, w, b: _F(T).conv1d(x, w, b, stride=2, padding=1, dilation=2),
        lambda x, w, b: np_conv(x, w, b, stride=2, padding=1, dilation=2),
        [(F((2, 3, 9)), F((4, 3, 3)), F((4,)))],
    ),
    OpInfo(
        "conv1d",
        lambda T, x, w: _F(T).conv1d(x, w, padding="valid", groups=3),
        lambda x, w: np_conv(x, w, groups=3),
        [(F((1, 3, 6)), F((3, 1, 2)))],
    ),
    # -- pooling --
    OpInfo(
        "max_pool2d",
        lambda T, x: _F(T).max_pool2d(x, 2),
        lambda x: np_max_pool2d(x, 2),
        [(F((1, 2, 4, 4)),), (F(X4),), (F((2, 5, 6)),)],
    ),
    OpInfo(
        "max_pool2d",
        lambda T, x: _F(T).max_pool2d(x, 3, 2, 1, ceil_mode=True),
        lambda x: np_max_pool2d(x, 3, 2, 1, ceil_mode=True),
        [(F((1, 2, 6, 7)),)],
    ),
    OpInfo(
        "max_pool2d",
        lambda T, x: _F(T).max_pool2d(x, (2, 3), (1, 2), (1, 1), dilation=(2, 1)),
        lambda x: np_max_pool2d(x, (2, 3), (1, 2), (1, 1), (2, 1)),
        [(F((1, 1, 5, 6)),)],
    ),
    OpInfo(
        "max_pool2d",
        lambda T, x: _F(T).max_pool2d(x, (2, 3), 2, 1, return_indices=True),
        lambda x: np_max_pool2d(x, (2, 3), 2, 1, return_indices=True),
        [(F((1, 2, 5, 5)),)],
    ),
    OpInfo(
        "avg_pool2d",
        lambda T, x: _F(T).avg_pool2d(x, 2),
        lambda x: np_avg_pool2d(x, 2),
        [(F((1, 2, 4, 4)),), (F(X4),), (F((2, 5, 6)),)],
    ),
    OpInfo(
        "avg_pool2d",
        lambda T, x: _F(T).avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        lambda x: np_avg_pool2d(x, 3, 2, 1, ceil_mode=True),
        [(F((1, 2, 6, 7)),)],
    ),
    OpInfo(
        "avg_pool2d",
        lambda T, x: _F(T).avg_pool2d(x, (2, 3), 2, (1, 1), True, False),
        lambda x: np_avg_pool2d(x, (2, 3), 2, (1, 1), True, False),
        [(F((1, 2, 5, 6)),)],
    ),
    OpInfo(
        "avg_pool2d",
        lambda T, x: _F(T).avg_pool2d(x, 2, 1, divisor_override=3),
        lambda x: np_avg_pool2d(x, 2, 1, divisor=3),
        [(F((1, 1, 3, 4)),)],
    ),
    # -- embedding --
    OpInfo(
        "embedding",
        lambda T, i, w: _F(T).embedding(i, w),
        lambda i, w: w[i],
        [(I([[0, 2, 0], [4, 1, 2]]), F((5, 3)))],
    ),
    # padding_idx's row gets no gradient by design: zero it so finite differences agree
    OpInfo(
        "embedding",
        lambda T, i, w: _F(T).embedding(
            i,
            w * T.tensor([[1.0], [0.0], [1.0], [1.0]], dtype=w.dtype, device=w.device),
            padding_idx=1,
        ),
        lambda i, w: (w * np.array([[1.0], [0.0], [1.0], [1.0]]))[i],
        [(I([0, 1, 3, 1]), F((4, 2)))],
    ),
    # scale_grad_by_freq is not the derivative by design: values only here (grads vs torch in
    # tests/test_nn_functional.py)
    OpInfo(
        "embedding",
        lambda T, i, w: _F(T).embedding(i, w, scale_grad_by_freq=True),
        lambda i, w: w[i],
        [(I([0, 2, 2, 2, 1]), F((3, 2)))],
        grad=False,
    ),
    # -- recurrent: the fused cells, driven through the _VF time loops (node names of the
    # outputs are PyTorch's: Stack/Cat/Transpose; the cells' own nodes are nbgrad's) --
    OpInfo(
        "fused_lstm_cell",
        *_vf_rnn("lstm"),
        [(F((3, 2, 3)), F((1, 2, 2)), F((1, 2, 2))) + _rnn_params(4, 3, 2)],
    ),
    OpInfo(
        "fused_lstm_cell",
        *_vf_rnn("lstm", bidirectional=True, batch_first=True, has_biases=False),
        [(F((2, 3, 3)), F((2, 2, 2)), F((2, 2, 2))) + _rnn_params(4, 3, 2, 1, 2, False)],
    ),
    OpInfo(
        "fused_lstm_cell",
        *_vf_rnn("lstm", layers=2),
        [(F((3, 2, 3)), F((2, 2, 2)), F((2, 2, 3))) + _rnn_params(4, 3, 3, 2, proj=2)],
    ),
    OpInfo(
        "fused_gru_cell",
        *_vf_rnn("gru"),
        [(F((3, 2, 3)), F((1, 2, 2))) + _rnn_params(3, 3, 2)],
    ),
    OpInfo(
        "fused_gru_cell",
        *_vf_rnn("gru", layers=2, bidirectional=True, batch_first=True),
        [(F((2, 3, 2)), F((4, 2, 2))) + _rnn_params(3, 2, 2, 2, 2)],
    ),
    OpInfo(
        "fused_rnn_tanh_cell",
        *_vf_rnn("rnn_tanh", layers=2),
        [(F((3, 2, 3)), F((2, 2, 2))) + _rnn_params(1, 3, 2, 2)],
    ),
    OpInfo(
        "fused_rnn_relu_cell",
        *_vf_rnn("rnn_relu", has_biases=False),
        [(F((4, 2, 3)), F((1, 2, 3))) + _rnn_params(1, 3, 3, bias=False)],
    ),
    # -- normalisation --
    OpInfo(
        "layer_norm",
        lambda T, x, w, b: _F(T).layer_norm(x, (4,), w, b),
        lambda x, w, b: np_layer_norm(x, 1, w, b),
        [(F((3, 4)), F((4,)), F((4,)))],
    ),
    OpInfo(
        "layer_norm",
        lambda T, x: _F(T).layer_norm(x, (3, 4), eps=1e-3),
        lambda x: np_layer_norm(x, 2, eps=1e-3),
        [(F((2, 3, 4)),)],
    ),
    OpInfo(
        "batch_norm",
        lambda T, x, w, b: _F(T).batch_norm(
            x,
            T.zeros(3, dtype=x.dtype, device=x.device),
            T.ones(3, dtype=x.dtype, device=x.device),
            w,
            b,
            training=True,
        ),
        lambda x, w, b: np_batch_norm(x, w, b),
        [(F((4, 3)), F((3,)), F((3,))), (F((2, 3, 2, 2)), F((3,)), F((3,)))],
    ),
    OpInfo(
        "batch_norm",
        lambda T, x: _F(T).batch_norm(x, None, None, training=True, eps=1e-3),
        lambda x: np_batch_norm(x, eps=1e-3),
        [(F((2, 3, 4)),)],
    ),
    OpInfo(
        "batch_norm",
        lambda T, x, w, rm, rv: _F(T).batch_norm(x, rm, rv, w, None),
        lambda x, w, rm, rv: np_batch_norm(x, w, None, rm, rv),
        [(F((2, 3, 4)), F((3,)), N((3,)), N((3,), 0.5, 2.0))],
    ),
    # -- losses --
    OpInfo(
        "mse_loss",
        lambda T, x, t: _F(T).mse_loss(x, t),
        lambda x, t: ((x - t) ** 2).mean(),
        [(F((3, 4)), F((3, 4))), (F(()), F(()))],
    ),
    OpInfo(
        "mse_loss",
        lambda T, x, t: _F(T).mse_loss(x, t, reduction="none"),
        lambda x, t: (x - t) ** 2,
        [(F((3, 4)), F((3, 4)))],
    ),
    OpInfo(
        "mse_loss",
        lambda T, x, t: _F(T).mse_loss(x, t, reduction="sum"),
        lambda x, t: ((x - t) ** 2).sum(),
        [(F((3, 4)), N((3, 4)))],
    ),
    OpInfo(
        "nn.l1_loss",
        lambda T, x, t: _F(T).l1_loss(x, t),
        lambda x, t: np.abs(x - t).mean(),
        [(F((3, 4)), N((3, 4)))],
        gradgrad=False,
    ),
    OpInfo(
        "cross_entropy",
        lambda T, x, t: _F(T).cross_entropy(x, t),
        lambda x, t: np_nll(np_log_softmax(x), t),
        [(F((3, 4)), I([0, 3, 1])), (F((4,)), I(2))],
    ),
    OpInfo(
        "cross_entropy",
        lambda T, x, t, w: _F(T).cross_entropy(x, t, w, ignore_index=1, reduction="sum"),
        lambda x, t, w: np_nll(np_log_softmax(x), t, w, 1, "sum"),
        [(F((4, 3)), I([0, 1, 2, 2]), N((3,), 0.5, 2.0))],
    ),
    OpInfo(
        "cross_entropy",
        lambda T, x, t: _F(T).cross_entropy(x, t, reduction="none"),
        lambda x, t: np_nll(np_log_softmax(x), t, reduction="none"),
        [
            (F((2, 3, 4)), I([[0, 1, 2, 2], [1, 1, 0, 2]])),
            (F((2, 3, 2, 2)), I([[[0, 1], [2, 2]], [[1, 1], [0, 2]]])),
        ],
    ),
    OpInfo(
        "cross_entropy",
        lambda T, x, t, w: _F(T).cross_entropy(x, t, w, label_smoothing=0.2, ignore_index=0),
        lambda x, t, w: np_nll(np_log_softmax(x), t, w, 0, smoothing=0.2),
        [(F((4, 3)), I([0, 1, 2, 2]), N((3,), 0.5, 2.0))],
    ),
    OpInfo(
        "nn.cross_entropy_probs",
        lambda T, x, t: _F(T).cross_entropy(x, t.softmax(1)),
        lambda x, t: -(np_log_softmax(x, 1) * np.exp(np_log_softmax(t, 1))).sum() / 3,
        [(F((3, 4)), F((3, 4)))],
    ),
    OpInfo(
        "nn.cross_entropy_probs",
        lambda T, x, t: _F(T).cross_entropy(x, t, label_smoothing=0.1, reduction="none"),
        lambda x, t: -(np_log_softmax(x, 1) * (t * 0.9 + 0.1 / 4)).sum(1),
        [(F((3, 4)), N((3, 4), 0.0, 1.0))],
    ),
    OpInfo(
        "nll_loss",
        lambda T, x, t: _F(T).nll_loss(x, t),
        lambda x, t: np_nll(x, t),
        [(F((3, 4)), I([0, 3, 1])), (F((2, 3, 2, 2)), I([[[0, 1], [2, 2]], [[1, 1], [0, 2]]]))],
    ),
    OpInfo(
        "nll_loss",
        lambda T, x, t, w: _F(T).nll_loss(x, t, w, reduction="none", ignore_index=2),
        lambda x, t, w: np_nll(x, t, w, 2, "none"),
        [
            (F((4, 3)), I([0, 1, 2, 2]), N((3,), 0.5, 2.0)),
            (F((2, 3, 4)), I([[0, 1, 2, 2], [1, 1, 0, 2]]), N((3,), 0.5, 2.0)),
        ],
    ),
    OpInfo(
        "binary_cross_entropy",
        lambda T, x, t: _F(T).binary_cross_entropy(x, t),
        np_bce,
        [(F((3, 4), **PROB), F((3, 4), **PROB))],
    ),
    OpInfo(
        "binary_cross_entropy",
        lambda T, x, t, w: _F(T).binary_cross_entropy(x, t, w, reduction="none"),
        lambda x, t, w: np_bce(x, t, w, "none"),
        [(F((3, 4), **PROB), N((3, 4), 0, 1), N((4,), 0.5, 2.0))],
    ),
    OpInfo(
        "binary_cross_entropy_with_logits",
        lambda T, x, t: _F(T).binary_cross_entropy_with_logits(x, t),
        np_bcel,
        [(F((3, 4)), F((3, 4), **PROB))],
    ),
    OpInfo(
        "binary_cross_entropy_with_logits",
        lambda T, x, t, w, pw: _F(T).binary_cross_entropy_with_logits(
            x, t, w, reduction="sum", pos_weight=pw
        ),
        lambda x, t, w, pw: np_bcel(x, t, w, pw, "sum"),
        [(F((3, 4)), F((3, 4), **PROB), N((3, 1), 0.5, 2.0), N((4,), 0.5, 2.0))],
    ),
    # -- scaled_dot_product_attention: the fused op (4-D), then the composite path --
    OpInfo(
        "scaled_dot_product_attention",
        lambda T, q, k, v: _F(T).scaled_dot_product_attention(q, k, v),
        np_sdpa,
        [
            (F((1, 2, 3, 4)), F((1, 2, 5, 4)), F((1, 2, 5, 4))),
            (F((2, 1, 4, 3)), F((2, 1, 4, 3)), F((2, 1, 4, 3))),
        ],
    ),
    OpInfo(
        "scaled_dot_product_attention",
        lambda T, q, k, v, m: _F(T).scaled_dot_product_attention(q, k, v, m, scale=0.7),
        lambda q, k, v, m: np_sdpa(q, k, v, m, scale=0.7),
        [
            (F((1, 2, 3, 4)), F((1, 2, 5, 4)), F((1, 2, 5, 4)), N((3, 5))),
            (F((2, 2, 3, 4)), F((2, 2, 5, 4)), F((2, 2, 5, 4)), N((2, 1, 1, 5))),
        ],
    ),
    OpInfo(
        "scaled_dot_product_attention",
        lambda T, q, k, v, m: _F(T).scaled_dot_product_attention(q, k, v, m.bool()),
        lambda q, k, v, m: np_sdpa(q, k, v, m.astype(bool)),
        # a bool mask (from the int one); row 1 of the first batch is fully masked: zeros, and
        # zero gradients
        [
            (
                F((2, 1, 3, 4)),
                F((2, 1, 5, 4)),
                F((2, 1, 5, 4)),
                I([[[[1, 0, 1, 1, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]]], [[[0, 0, 0, 0, 1]] * 3]]),
            )
        ],
    ),
    OpInfo(
        "scaled_dot_product_attention",
        lambda T, q, k, v: _F(T).scaled_dot_product_attention(q, k, v, is_causal=True),
        lambda q, k, v: np_sdpa(q, k, v, causal=True),
        [
            (F((1, 2, 4, 3)), F((1, 2, 4, 3)), F((1, 2, 4, 3))),
            (F((1, 1, 3, 2)), F((1, 1, 5, 2)), F((1, 1, 5, 2))),
        ],
    ),
    OpInfo(
        "scaled_dot_product_attention",
        lambda T, q, k, v: _F(T).scaled_dot_product_attention(q, k, v, enable_gqa=True),
        lambda q, k, v: np_sdpa(q, k, v, gqa=True),
        [(F((1, 4, 3, 2)), F((1, 2, 5, 2)), F((1, 2, 5, 2)))],
    ),
    OpInfo(
        "nn.sdpa_math",
        lambda T, q, k, v, m: _F(T).scaled_dot_product_attention(q, k, v, m),
        lambda q, k, v, m: np_sdpa(q, k, v, m),
        [(F((2, 3, 4)), F((2, 5, 4)), F((2, 5, 3)), N((3, 5)))],
    ),
    OpInfo(
        "nn.sdpa_math",
        lambda T, q, k, v, m: _F(T).scaled_dot_product_attention(q, k, v, m.bool()),
        lambda q, k, v, m: np_sdpa(q, k, v, m.astype(bool)),
        [(F((3, 2)), F((4, 2)), F((4, 2)), I([[1, 0, 1, 1], [0, 0, 0, 0], [1, 1, 0, 0]]))],
    ),
    OpInfo(
        "nn.sdpa_math",
        lambda T, q, k, v, m: _F(T).scaled_dot_product_attention(q, k, v, m),
        lambda q, k, v, m: np_sdpa(q, k, v, m),
        [(F((1, 2, 3, 2)), F((1, 2, 4, 2)), F((1, 2, 4, 2)), F((3, 4)))],  # mask requires grad
    ),
    # -- one_hot, pad, normalize --
    OpInfo(
        "nn.one_hot",
        lambda T, i: _F(T).one_hot(i, 5),
        lambda i: np.eye(5, dtype=np.int64)[i],
        [(I([[0, 4], [2, 2]]),)],
        grad=False,
    ),
    OpInfo(
        "pad",
        lambda T, x: _F(T).pad(x, (1, 2)),
        lambda x: np.pad(x, ((0, 0), (1, 2))),
        [(F((3, 4)),)],
    ),
    OpInfo(
        "pad",
        lambda T, x: _F(T).pad(x, (1, -1, -1, 2), value=1.5),
        lambda x: np.pad(x[:, 1:, :-1], ((0, 0), (0, 2), (1, 0)), constant_values=1.5),
        [(F((2, 3, 4)),)],
    ),
    OpInfo(
        "pad.reflect",
        lambda T, x: _F(T).pad(x, (2, 1, 1, 2), mode="reflect"),
        lambda x: np.pad(x, ((0, 0), (1, 2), (2, 1)), mode="reflect"),
        [(F((2, 3, 4)),)],
    ),
    OpInfo(
        "pad.reflect",
        lambda T, x: _F(T).pad(x, (1, 2), mode="reflect"),
        lambda x: np.pad(x, ((0, 0), (0, 0), (1, 2)), mode="reflect"),
        [(F((1, 2, 4)),)],
    ),
    OpInfo(
        "pad.replicate",
        lambda T, x: _F(T).pad(x, (2, 1, 0, 3), mode="replicate"),
        lambda x: np.pad(x, ((0, 0), (0, 0), (0, 3), (2, 1)), mode="edge"),
        [(F((1, 2, 3, 3)),)],
    ),
    OpInfo(
        "pad.circular",
        lambda T, x: _F(T).pad(x, (2, 1), mode="circular"),
        lambda x: np.pad(x, ((0, 0), (0, 0), (2, 1)), mode="wrap"),
        [(F((1, 2, 4)),)],
    ),
    OpInfo(
        "nn.normalize",
        lambda T, x: _F(T).normalize(x),
        lambda x: x / np.maximum(np.sqrt((x * x).sum(1, keepdims=True)), 1e-12),
        [(F((3, 4)),)],
    ),
    OpInfo(
        "nn.normalize",
        lambda T, x: _F(T).normalize(x, p=1, dim=0),
        lambda x: x / np.maximum(np.abs(x).sum(0, keepdims=True), 1e-12),
        [(F((3, 4)),)],
        gradgrad=False,
    ),
]
OP_DB_NN += [  # second tier: activations, losses, distances
    OpInfo(
        "elu",
        lambda T, x: _F(T).elu(x),
        np_elu,
        [(F((3, 4)),), (F(()),), (F((4, 3), T=True),)],
        kinks=(0.0,),
    ),
    OpInfo(
        "elu",
        lambda T, x: _F(T).elu(x, alpha=0.5),
        lambda x: np_elu(x, 0.5),
        [(F((2, 3, 4)),)],
        kinks=(0.0,),
    ),
    OpInfo(  # in place: EluBackward1, whose backward reads the result
        "elu.result",
        lambda T, x: _F(T).elu(x * 1, alpha=1.5, inplace=True),
        lambda x: np_elu(x, 1.5),
        [(F((3, 4)),), (F((4, 3), T=True),)],
        kinks=(0.0,),
    ),
    OpInfo("mish", lambda T, x: _F(T).mish(x), np_mish, [(F((3, 4), -4, 4),), (F(()),)]),
    OpInfo(
        "hardtanh",
        lambda T, x: _F(T).hardtanh(x, -0.5, 1.2),
        lambda x: np.clip(x, -0.5, 1.2),
        [(F((3, 4)),), (F((4, 3), T=True),)],
        kinks=(-0.5, 1.2),
    ),
    OpInfo(
        "hardtanh",
        lambda T, x: _F(T).relu6(x * 4),
        lambda x: np.clip(x * 4, 0, 6),
        [(F((3, 4)),)],
        kinks=(0.0, 1.5),
    ),
    OpInfo(
        "prelu",
        lambda T, x, w: _F(T).prelu(x, w),
        lambda x, w: np.where(x > 0, x, w.reshape((1, -1) + (1,) * (x.ndim - 2)) * x),
        [(F((2, 3, 4)), F((3,), 0.05, 0.5)), (F((3, 4, 2, 2)), F((4,), -0.5, 0.5))],
        kinks=(0.0,),
    ),
    OpInfo(
        "prelu",
        lambda T, x, w: _F(T).prelu(x, w),
        lambda x, w: np.where(x > 0, x, (w * x).reshape(x.shape)),
        [(F((3, 4)), F((1,))), (F((5,)), F(())), (F(()), F((1,)))],
        kinks=(0.0,),
    ),
    OpInfo(
        "glu",
        lambda T, x: _F(T).glu(x),
        lambda x: x[..., :2] / (1 + np.exp(-x[..., 2:])),
        [(F((3, 4)),), (F((4, 4), T=True),)],
    ),
    OpInfo(
        "glu",
        lambda T, x: _F(T).glu(x, 1),
        lambda x: x[:, :3] / (1 + np.exp(-x[:, 3:])),
        [(F((2, 6, 3)),)],
    ),
    OpInfo(
        "smooth_l1_loss",
        lambda T, x, t: _F(T).smooth_l1_loss(x, t),
        np_smooth_l1,
        [(F((3, 4)), F((3, 4))), (F(()), F(()))],
    ),
    OpInfo(
        "smooth_l1_loss",
        lambda T, x, t: _F(T).smooth_l1_loss(x, t, reduction="none", beta=0.5),
        lambda x, t: np_smooth_l1(x, t, 0.5, "none"),
        [(F((3, 4)), N((3, 4))), (F((4, 3), T=True), F((4, 3), T=True))],
    ),
    OpInfo(
        "smooth_l1_loss",
        lambda T, x, t: _F(T).smooth_l1_loss(x, t, reduction="sum", beta=2.0),
        lambda x, t: np_smooth_l1(x, t, 2.0, "sum"),
        [(F((2, 3, 4)), N((3, 4)))],  # a target that broadcasts (with PyTorch's warning)
    ),
    OpInfo(
        "nn.smooth_l1_loss_beta0",
        lambda T, x, t: _F(T).smooth_l1_loss(x, t, beta=0.0),
        lambda x, t: np.abs(x - t).mean(),
        [(F((3, 4)), N((3, 4)))],
        gradgrad=False,
    ),
    OpInfo(
        "huber_loss",
        lambda T, x, t: _F(T).huber_loss(x, t),
        lambda x, t: np_smooth_l1(x, t, 1.0, huber=True),
        [(F((3, 4)), F((3, 4))), (F(()), F(()))],
    ),
    OpInfo(
        "huber_loss",
        lambda T, x, t: _F(T).huber_loss(x, t, reduction="none", delta=0.7),
        lambda x, t: np_smooth_l1(x, t, 0.7, "none", huber=True),
        [(F((3, 4)), N((3, 4))), (F((4, 3), T=True), N((4, 3)))],
    ),
    OpInfo(
        "nn.huber_loss_weighted",
        lambda T, x, t, w: _F(T).huber_loss(x, t, reduction="sum", delta=0.5, weight=w),
        lambda x, t, w: (np_smooth_l1(x, t, 0.5, "none", huber=True) * w).sum(),
        [(F((3, 4)), N((3, 4)), F((3, 4), 0.5, 2.0))],
    ),
    OpInfo(
        "nn.kl_div",
        lambda T, x, t: _F(T).kl_div(x, t, reduction="batchmean"),
        lambda x, t: (t * np.log(t) - t * x).sum() / x.shape[0],
        [(F((3, 4)), N((3, 4), 0.05, 1.0)), (F((2, 3, 4)), F((2, 3, 4), 0.05, 1.0))],
    ),
    OpInfo(
        "nn.kl_div",
        lambda T, x, t: _F(T).kl_div(x, t, reduction="none", log_target=True),
        lambda x, t: np.exp(t) * (t - x),
        [(F((3, 4)), F((3, 4)))],
    ),
    OpInfo(
        "nn.kl_div",
        lambda T, x, t: _F(T).kl_div(x, t, reduction="sum"),
        lambda x, t: (t * np.log(t) - t * x).sum(),
        [(F((3, 4)), F((4,), 0.05, 1.0))],  # broadcast target that requires grad (xlogy)
    ),
    OpInfo(
        "nn.cosine_similarity",
        lambda T, a, b: _F(T).cosine_similarity(a, b),
        np_cosine_similarity,
        [(F((3, 4)), F((3, 4))), (F((2, 3, 4)), F((3, 4))), (F((3, 4), T=True), F((3, 4)))],
    ),
    OpInfo(
        "nn.cosine_similarity",
        lambda T, a, b: _F(T).cosine_similarity(a, b, dim=-1, eps=1e-3),
        lambda a, b: np_cosine_similarity(a, b, -1, 1e-3),
        [(F((2, 3, 4)), F((4,)))],
    ),
    OpInfo(
        "nn.pairwise_distance",
        lambda T, a, b: _F(T).pairwise_distance(a, b),
        lambda a, b: np.sqrt(((a - b + 1e-6) ** 2).sum(-1)),
        [(F((3, 4)), F((3, 4))), (F((2, 3, 4)), F((4,))), (F((4,)), F((4,)))],
    ),
    OpInfo(
        "nn.pairwise_distance",
        lambda T, a, b: _F(T).pairwise_distance(a, b, p=3.0, eps=0.1, keepdim=True),
        lambda a, b: (np.abs(a - b + 0.1) ** 3).sum(-1, keepdims=True) ** (1 / 3),
        [(F((3, 4)), F((3, 4)))],
    ),
    OpInfo(
        "nn.pairwise_distance",
        lambda T, a, b: _F(T).pairwise_distance(a, b, p=1.0),
        lambda a, b: np.abs(a - b + 1e-6).sum(-1),
        [(F((3, 4)), N((3, 4)))],
        gradgrad=False,
    ),
    OpInfo(
        "nn.cosine_embedding_loss",
        lambda T, a, b, y: _F(T).cosine_embedding_loss(a, b, y),
        np_cosine_embedding,
        [(F((3, 4)), F((3, 4)), I([1, -1, 1])), (F((4,)), F((4,)), I(-1))],
    ),
    OpInfo(
        "nn.cosine_embedding_loss",
        lambda T, a, b, y: _F(T).cosine_embedding_loss(a, b, y, -0.2, reduction="none"),
        lambda a, b, y: np_cosine_embedding(a, b, y, -0.2, "none"),
        [(F((4, 3)), F((4, 3)), I([1, -1, -1, 0]))],
    ),
    OpInfo(
        "nn.margin_ranking_loss",
        lambda T, a, b, y: _F(T).margin_ranking_loss(a, b, y, 0.3),
        lambda a, b, y: np.maximum(-y * (a - b) + 0.3, 0).mean(),
        [(F((5,)), F((5,)), I([1, -1, 1, -1, 1]))],
    ),
    OpInfo(
        "nn.margin_ranking_loss",
        lambda T, a, b, y: _F(T).margin_ranking_loss(a, b, y, reduction="none"),
        lambda a, b, y: np.maximum(-y * (a - b), 0),
        [(F((2, 3)), F((2, 1)), F((1, 3)))],
    ),
]


# ---------------------------------------------------------------------------------------------
# second tier: group / instance norm, transposed convolution, adaptive pooling, upsampling,
# embedding_bag (numpy references with explicit loops)


def np_group_norm(x, G, w=None, b=None, eps=1e-5):
    N, C = x.shape[:2]
    xg = x.reshape(N, G, -1)
    y = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + eps)).reshape(
        x.shape
    )
    shp = (1, C) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shp)
    if b is not None:
        y = y + b.reshape(shp)
    return y


def np_instance_norm(x, w=None, b=None, eps=1e-5):
    axes = tuple(range(2, x.ndim))
    y = (x - x.mean(axes, keepdims=True)) / np.sqrt(x.var(axes, keepdims=True) + eps)
    shp = (1, -1) + (1,) * (x.ndim - 2)
    if w is not None:
        y = y * w.reshape(shp)
    if b is not None:
        y = y + b.reshape(shp)
    return y


def np_conv_transpose2d(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dil=1):
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = (
        _pair(stride),
        _pair(padding),
        _pair(output_padding),
        _pair(dil),
    )
    N, Cin, H, W = x.shape
    _, Cog, KH, KW = w.shape
    OH = (H - 1) * sh - 2 * ph + dh * (KH - 1) + oph + 1
    OW = (W - 1) * sw - 2 * pw + dw * (KW - 1) + opw + 1
    full = np.zeros(
        (N, Cog * groups, OH + 2 * ph + sh * 2 + KH * dh, OW + 2 * pw + sw * 2 + KW * dw)
    )
    Cig = Cin // groups
    for c in range(Cin):
        g = c // Cig
        for i in range(KH):
            for j in range(KW):
                full[
                    :,
                    g * Cog : (g + 1) * Cog,
                    i * dh : i * dh + sh * (H - 1) + 1 : sh,
                    j * dw : j * dw + sw * (W - 1) + 1 : sw,
                ] += np.einsum("nhw,o->nohw", x[:, c], w[c, :, i, j])
    out = full[:, :, ph : ph + OH, pw : pw + OW]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def np_adaptive_avg_pool2d(x, size):
    OH, OW = size
    H, W = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (OH, OW), x.dtype)
    for oy in range(OH):
        hs, he = oy * H // OH, -(-(oy + 1) * H // OH)
        for ox in range(OW):
            ws, we = ox * W // OW, -(-(ox + 1) * W // OW)
            out[..., oy, ox] = x[..., hs:he, ws:we].mean((-1, -2))
    return out


def _np_nearest(n_in, n_out, exact):
    """Source indices in exact arithmetic: floor(i * in / out), or floor((i + 1/2) * in / out)."""
    i = np.arange(n_out)
    return np.minimum(((2 * i + 1) * n_in // (2 * n_out)) if exact else i * n_in // n_out, n_in - 1)


def np_upsample_nearest(x, size, exact=False):
    for k, n_out in enumerate(size):
        ax = x.ndim - len(size) + k
        x = np.take(x, _np_nearest(x.shape[ax], n_out, exact), axis=ax)
    return x


def np_upsample_linear(x, size, align_corners=False):
    for k, n_out in enumerate(size):
        ax = x.ndim - len(size) + k
        n_in = x.shape[ax]
        i = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = i * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            src = np.maximum((i + 0.5) * n_in / n_out - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        lam = np.clip(src - i0, 0, 1)
        shp = [1] * x.ndim
        shp[ax] = n_out
        lam = lam.reshape(shp)
        x = np.take(x, i0, axis=ax) * (1 - lam) + np.take(x, i1, axis=ax) * lam
    return x


def np_embedding_bag(idx, w, offsets=None, mode="mean", psw=None, pad=None, last=False):
    if idx.ndim == 2:
        offsets = np.arange(0, idx.size, idx.shape[1])
        psw = None if psw is None else psw.reshape(-1)
        idx = idx.reshape(-1)
    ends = list(offsets[1:]) + ([] if last else [idx.size])
    out = []
    for s, e in zip(offsets, ends):
        keep = [k for k in range(s, e) if idx[k] != pad]
        rows = w[idx[keep]] * (1.0 if psw is None else psw[keep][:, None])
        if not keep:
            out.append(np.zeros(w.shape[1]))
        elif mode == "sum":
            out.append(rows.sum(0))
        elif mode == "mean":
            out.append(rows.mean(0))
        else:
            out.append(rows.max(0))
    return np.array(out, dtype=w.dtype).reshape(-1, w.shape[1])


OP_DB_NN += [
    OpInfo(
        "group_norm",
        lambda T, x, w, b: _F(T).group_norm(x, 2, w, b),
        lambda x, w, b: np_group_norm(x, 2, w, b),
        [(F((2, 4, 3)), F((4,)), F((4,))), (F((3, 6, 2, 2)), F((6,)), F((6,)))],
    ),
    OpInfo(
        "group_norm",
        lambda T, x: _F(T).group_norm(x, 3, eps=1e-3),
        lambda x: np_group_norm(x, 3, eps=1e-3),
        [(F((2, 3, 4)),), (F((1, 6)),)],
    ),
    OpInfo(
        "nn.instance_norm",
        lambda T, x, w, b: _F(T).instance_norm(x, weight=w, bias=b),
        lambda x, w, b: np_instance_norm(x, w, b),
        [(F((2, 3, 4)), F((3,)), F((3,))), (F((2, 2, 3, 2)), F((2,)), F((2,)))],
    ),
    OpInfo(
        "conv_transpose2d",
        lambda T, x, w, b: _F(T).conv_transpose2d(x, w, b),
        lambda x, w, b: np_conv_transpose2d(x, w, b),
        [(F((1, 2, 3, 3)), F((2, 3, 2, 2)), F((3,))), (F((2, 3, 4, 5)), F((3, 2, 3, 3)), F((2,)))],
    ),
    OpInfo(
        "conv_transpose2d",
        lambda T, x, w: _F(T).conv_transpose2d(x, w, None, 2, 1, 1, 2, (1, 2)),
        lambda x, w: np_conv_transpose2d(x, w, None, 2, 1, 1, 2, (1, 2)),
        [(F((1, 4, 3, 4)), F((4, 1, 3, 2)))],
    ),
    OpInfo(
        "conv_transpose2d",
        lambda T, x, w: _F(T).conv_transpose2d(x, w, stride=(1, 3), output_padding=(0, 2)),
        lambda x, w: np_conv_transpose2d(x, w, stride=(1, 3), output_padding=(0, 2)),
        [(F((1, 2, 3, 3)), F((2, 2, 2, 2)))],
    ),
    OpInfo(
        "conv_transpose2d",
        lambda T, x, w: _F(T).conv_transpose2d(x, w, padding=1),
        lambda x, w: np_conv_transpose2d(x[None], w, padding=1)[0],
        [(F((2, 3, 4)), F((2, 3, 3, 3)))],
    ),  # unbatched
    OpInfo(
        "adaptive_avg_pool2d",
        lambda T, x: _F(T).adaptive_avg_pool2d(x, (2, 3)),
        lambda x: np_adaptive_avg_pool2d(x, (2, 3)),
        [(F((1, 2, 5, 7)),), (F((2, 4, 4)),)],
    ),
    OpInfo(
        "adaptive_avg_pool2d",
        lambda T, x: _F(T).adaptive_avg_pool2d(x, (None, 5)),
        lambda x: np_adaptive_avg_pool2d(x, (x.shape[-2], 5)),
        [(F((1, 2, 3, 3)),)],
    ),
    OpInfo(
        "nn.adaptive_avg_pool2d_1x1",
        lambda T, x: _F(T).adaptive_avg_pool2d(x, 1),
        lambda x: x.mean((-1, -2), keepdims=True),
        [(F((2, 3, 4, 4)),)],
    ),
    OpInfo(
        "upsample_nearest",
        lambda T, x: _F(T).interpolate(x, scale_factor=2),
        lambda x: np_upsample_nearest(x, tuple(2 * n for n in x.shape[2:])),
        [(F((1, 2, 3, 4)),), (F((2, 2, 3)),), (F((1, 1, 2, 2, 3)),)],
    ),
    OpInfo(
        "upsample_nearest",
        lambda T, x: _F(T).interpolate(x, size=(5, 3)),
        lambda x: np_upsample_nearest(x, (5, 3)),
        [(F((1, 2, 3, 4)),)],
    ),
    OpInfo(
        "upsample_nearest",
        lambda T, x: _F(T).interpolate(x, size=(5, 3), mode="nearest-exact"),
        lambda x: np_upsample_nearest(x, (5, 3), exact=True),
        [(F((1, 2, 3, 4)),)],
    ),
    OpInfo(
        "upsample_nearest",
        lambda T, x: _F(T).interpolate(x, size=7, mode="nearest-exact"),
        lambda x: np_upsample_nearest(x, (7,), exact=True),
        [(F((2, 2, 4)),)],
    ),
    OpInfo(
        "upsample_linear",
        lambda T, x: _F(T).interpolate(x, size=(5, 3), mode="bilinear"),
        lambda x: np_upsample_linear(x, (5, 3)),
        [(F((1, 2, 3, 4)),), (F((2, 1, 2, 2)),)],
    ),
    OpInfo(
        "upsample_linear",
        lambda T, x: _F(T).interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
        lambda x: np_upsample_linear(x, tuple(2 * n for n in x.shape[2:]), True),
        [(F((1, 2, 3, 2)),)],
    ),
    OpInfo(
        "upsample_linear",
        lambda T, x: _F(T).interpolate(x, size=7, mode="linear"),
        lambda x: np_upsample_linear(x, (7,)),
        [(F((2, 2, 4)),)],
    ),
    OpInfo(
        "upsample_linear",
        lambda T, x: _F(T).interpolate(x, size=2, mode="linear", align_corners=True),
        lambda x: np_upsample_linear(x, (2,), True),
        [(F((1, 3, 5)),)],
    ),
    OpInfo(
        "nn.interpolate.area",
        lambda T, x: _F(T).interpolate(x, size=(2, 3), mode="area"),
        lambda x: np_adaptive_avg_pool2d(x, (2, 3)),
        [(F((1, 2, 5, 4)),)],
    ),
    OpInfo(
        "embedding_bag",
        lambda T, i, w, o: _F(T).embedding_bag(i, w, o),
        lambda i, w, o: np_embedding_bag(i, w, o),
        [(I([4, 1, 2, 0, 4, 3, 1]), F((5, 3)), I([0, 2, 2, 5]))],
    ),
    OpInfo(
        "embedding_bag",
        lambda T, i, w, o: _F(T).embedding_bag(i, w, o, mode="sum", padding_idx=1),
        lambda i, w, o: np_embedding_bag(i, w, o, "sum", pad=1),
        [(I([4, 1, 2, 0, 4, 3, 1]), F((5, 3)), I([0, 2, 2, 5]))],
    ),
    OpInfo(
        "embedding_bag",
        lambda T, i, w, o: _F(T).embedding_bag(i, w, o, mode="max", include_last_offset=True),
        lambda i, w, o: np_embedding_bag(i, w, o, "max", last=True),
        [(I([4, 1, 2, 0, 4, 3, 1]), F((5, 3)), I([0, 3, 3, 7]))],
    ),
    OpInfo(
        "embedding_bag",
        lambda T, i, w, p: _F(T).embedding_bag(i, w, mode="sum", per_sample_weights=p),
        lambda i, w, p: np_embedding_bag(i, w, mode="sum", psw=p),
        [(I([[0, 2, 2], [3, 1, 0]]), F((4, 2)), F((2, 3)))],
    ),
    OpInfo(
        "embedding_bag",
        lambda T, i, w: _F(T).embedding_bag(i, w, mode="mean", padding_idx=-1),
        lambda i, w: np_embedding_bag(i, w, mode="mean", pad=3),
        [(I([[0, 3, 2], [3, 3, 3]]), F((4, 2)))],
    ),
]


def op_names():
    return {info.name for info in OP_DB_NN}
