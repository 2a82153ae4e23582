"""Recurrent cells: the gate nonlinearities and state update of one time step, forward and
backward, over ``(B, G)`` gate arrays (the input and hidden projections, computed by BLAS
outside) and ``(B, H)`` states.  Gate order is PyTorch's: LSTM ``i f g o``, GRU ``r z n``.

The forward kernels keep the activated gates in a workspace ``ws`` (as PyTorch's fused
cells do), so the backward kernels are plain arithmetic with no transcendentals.  A missing
output gradient (``has_*`` false) contributes nothing, not ``0 * x``: NaN in a gate must not
leak into the gradient of an output that received none (NOTE [select, never multiply by a
mask]).  Constants are typed (``one``) so that float32 maths stays float32.

NOTE [vectorised gates]: libm's ``exp``/``tanh`` are scalar calls (pip llvmlite has no SVML),
and the 5 of them per LSTM element made the forward kernel the largest cost of a step.  The
gates use kernels/cpu/vmath.py's branch-free ``sigmoid``/``tanh`` (NOTE [vmath]), which LLVM
vectorises: NaN in gives NaN out, and the saturated ends are exact (0, 1, +-1)."""

import numpy as np
from numba import njit

from .. import JIT
from .vmath import sigmoid as _sigmoid, tanh as _tanh


@njit(**JIT)
def lstm_cell_fwd_cpu(xg, hg, cx, hy, cy, ws):
    """c' = f * c + i * g, h' = o * tanh(c') with i, f, o = sigmoid, g = tanh of xg + hg;
    ws (B, 5H) keeps i, f, g, o, tanh(c') for the backward.  One loop per gate block, so each
    loop body is one vectorisable function (3.6x faster in float32 than one fused loop)."""
    B, H = cx.shape
    for b in range(B):
        x = xg[b]
        h = hg[b]
        w = ws[b]
        for j in range(H):
            w[j] = _sigmoid(x[j] + h[j])
        for j in range(H, 2 * H):
            w[j] = _sigmoid(x[j] + h[j])
        for j in range(2 * H, 3 * H):
            w[j] = _tanh(x[j] + h[j])
        for j in range(3 * H, 4 * H):
            w[j] = _sigmoid(x[j] + h[j])
        c0 = cx[b]
        c1 = cy[b]
        h1 = hy[b]
        for j in range(H):
            c1[j] = w[H + j] * c0[j] + w[j] * w[2 * H + j]
        for j in range(H):
            w[4 * H + j] = _tanh(c1[j])
        for j in range(H):
            h1[j] = w[3 * H + j] * w[4 * H + j]


@njit(**JIT)
def lstm_cell_bwd_cpu(ws, cx, ghy, gcy, has_gh, has_gc, dgates, dcx):
    """dgates (B, 4H): the gradient of the pre-activation gates (the same for xg and hg);
    dcx (B, H): of the previous cell state.  No transcendentals: the forward's ws."""
    B, H = cx.shape
    zero = np.zeros(1, dcx.dtype)[0]
    one = np.ones(1, dcx.dtype)[0]
    for b in range(B):
        w = ws[b]
        d = dgates[b]
        for j in range(H):
            i = w[j]
            f = w[H + j]
            g = w[2 * H + j]
            o = w[3 * H + j]
            tc = w[4 * H + j]
            dc = gcy[b, j] if has_gc else zero
            do = zero
            if has_gh:
                gh = ghy[b, j]
                dc = dc + gh * o * (one - tc * tc)
                do = gh * tc
            d[j] = dc * g * i * (one - i)
            d[H + j] = dc * cx[b, j] * f * (one - f)
            d[2 * H + j] = dc * i * (one - g * g)
            d[3 * H + j] = do * o * (one - o)
            dcx[b, j] = dc * f


@njit(**JIT)
def gru_cell_fwd_cpu(xg, hg, hx, hy, ws):
    """r, z = sigmoid, n = tanh(x_n + r * h_n), h' = (h - n) * z + n (PyTorch's CPU form);
    ws (B, 4H) keeps r, z, n, h_n for the backward.  One loop per gate block (see LSTM)."""
    B, H = hx.shape
    for b in range(B):
        x = xg[b]
        h = hg[b]
        w = ws[b]
        for j in range(2 * H):
            w[j] = _sigmoid(x[j] + h[j])
        for j in range(H):
            hn = h[2 * H + j]
            w[3 * H + j] = hn
            w[2 * H + j] = _tanh(x[2 * H + j] + w[j] * hn)
        h0 = hx[b]
        h1 = hy[b]
        for j in range(H):
            n = w[2 * H + j]
            h1[j] = (h0[j] - n) * w[H + j] + n


@njit(**JIT)
def gru_cell_bwd_cpu(ws, hx, ghy, dxg, dhg, dhx):
    """dxg, dhg (B, 3H): gradients of the two projections (they differ in the n gate, where
    the hidden part is scaled by r); dhx (B, H): of the previous state through z."""
    B, H = hx.shape
    one = np.ones(1, dhx.dtype)[0]
    for b in range(B):
        w = ws[b]
        for j in range(H):
            r = w[j]
            z = w[H + j]
            n = w[2 * H + j]
            hn = w[3 * H + j]
            gh = ghy[b, j]
            dn = gh * (one - z) * (one - n * n)
            dr = dn * hn * r * (one - r)
            dz = gh * (hx[b, j] - n) * z * (one - z)
            dxg[b, j] = dr
            dhg[b, j] = dr
            dxg[b, H + j] = dz
            dhg[b, H + j] = dz
            dxg[b, 2 * H + j] = dn
            dhg[b, 2 * H + j] = dn * r
            dhx[b, j] = gh * z


@njit(**JIT)
def rnn_tanh_cell_fwd_cpu(xg, hg, hy):
    B, H = hy.shape
    for b in range(B):
        for j in range(H):
            hy[b, j] = _tanh(xg[b, j] + hg[b, j])


@njit(**JIT)
def rnn_tanh_cell_bwd_cpu(hy, ghy, d):
    B, H = hy.shape
    one = np.ones(1, d.dtype)[0]
    for b in range(B):
        for j in range(H):
            y = hy[b, j]
            d[b, j] = ghy[b, j] * (one - y * y)


@njit(**JIT)
def rnn_relu_cell_fwd_cpu(xg, hg, hy):
    """relu that keeps NaN (PyTorch's clamp_min)."""
    B, H = hy.shape
    for b in range(B):
        for j in range(H):
            v = xg[b, j] + hg[b, j]
            hy[b, j] = 0 if v <= 0 else v


@njit(**JIT)
def rnn_relu_cell_bwd_cpu(hy, ghy, d):
    """PyTorch's threshold_backward: the gradient where the output is not <= 0 (NaN passes)."""
    B, H = hy.shape
    for b in range(B):
        for j in range(H):
            d[b, j] = 0 if hy[b, j] <= 0 else ghy[b, j]
