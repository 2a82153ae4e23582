"""CUDA twins of kernels/cpu/rnn.py: one time step of the LSTM / GRU / Elman cells, forward
and backward, over ``(B, G)`` gate arrays and ``(B, H)`` states on the device.

``foo_cuda`` takes exactly the arguments of ``foo_cpu`` (device arrays of the same shapes and
dtype, the same flags) and writes its outputs in place.  Each ``(b, j)`` element of a cell is
independent of the others, so every kernel is one grid-stride loop over ``B * H`` that does
for one ``(b, j)`` what the CPU's gate loops do (the workspace ``ws`` has the CPU layout, so a
forward on one side and a backward on the other agree).  Typed constants (``one``, ``zero``)
come from the launcher so float32 stays float32.

The gates use libdevice's ``exp``/``tanh`` (``math``'s on a GPU; numpy's under the simulator,
which keep float32 scalars float32 and do not raise on overflow as ``math.exp`` does) where the
CPU uses vmath's branch-free polynomials: both are within a few ulp
of the exact value, so the twins agree to rounding, not bit for bit.  The sigmoid is
vmath's one-sided form (``e = exp(-|x|)``, ``1 / (1 + e)`` or ``e / (1 + e)``): it never
overflows and NaN in gives NaN out.  A missing output gradient (``has_*`` false) contributes
nothing rather than ``0 * x`` (NOTE [select, never multiply by a mask]), as on the CPU.
"""

import math

import numpy as np
from numba import cuda

from .config import SIM, grid

__all__ = [
    "lstm_cell_fwd_cuda",
    "lstm_cell_bwd_cuda",
    "gru_cell_fwd_cuda",
    "gru_cell_bwd_cuda",
    "rnn_tanh_cell_fwd_cuda",
    "rnn_tanh_cell_bwd_cuda",
    "rnn_relu_cell_fwd_cuda",
    "rnn_relu_cell_bwd_cuda",
]

_exp, _tanh = (np.exp, np.tanh) if SIM else (math.exp, math.tanh)


@cuda.jit(device=True)
def _sigmoid(x, one, zero):
    e = _exp(-abs(x))
    return (one if x >= zero else e) / (one + e)


def _consts(a):
    t = a.dtype.type
    return t(1), t(0)


@cuda.jit
def _lstm_fwd(xg, hg, cx, hy, cy, ws, one, zero):
    B, H = cx.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        i = _sigmoid(xg[b, j] + hg[b, j], one, zero)
        f = _sigmoid(xg[b, H + j] + hg[b, H + j], one, zero)
        g = _tanh(xg[b, 2 * H + j] + hg[b, 2 * H + j])
        o = _sigmoid(xg[b, 3 * H + j] + hg[b, 3 * H + j], one, zero)
        ws[b, j] = i
        ws[b, H + j] = f
        ws[b, 2 * H + j] = g
        ws[b, 3 * H + j] = o
        c1 = f * cx[b, j] + i * g
        cy[b, j] = c1
        tc = _tanh(c1)
        ws[b, 4 * H + j] = tc
        hy[b, j] = o * tc


def lstm_cell_fwd_cuda(xg, hg, cx, hy, cy, ws):
    """c' = f * c + i * g, h' = o * tanh(c') with i, f, o = sigmoid, g = tanh of xg + hg;
    ws (B, 5H) keeps i, f, g, o, tanh(c') for the backward."""
    n = cx.shape[0] * cx.shape[1]
    if n == 0:
        return
    _lstm_fwd[grid(n)](xg, hg, cx, hy, cy, ws, *_consts(cx))


@cuda.jit
def _lstm_bwd(ws, cx, ghy, gcy, has_gh, has_gc, dgates, dcx, one, zero):
    B, H = cx.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        i = ws[b, j]
        f = ws[b, H + j]
        g = ws[b, 2 * H + j]
        o = ws[b, 3 * H + j]
        tc = ws[b, 4 * H + j]
        dc = gcy[b, j] if has_gc else zero
        do = zero
        if has_gh:
            gh = ghy[b, j]
            dc = dc + gh * o * (one - tc * tc)
            do = gh * tc
        dgates[b, j] = dc * g * i * (one - i)
        dgates[b, H + j] = dc * cx[b, j] * f * (one - f)
        dgates[b, 2 * H + j] = dc * i * (one - g * g)
        dgates[b, 3 * H + j] = do * o * (one - o)
        dcx[b, j] = dc * f


def lstm_cell_bwd_cuda(ws, cx, ghy, gcy, has_gh, has_gc, dgates, dcx):
    """dgates (B, 4H): the gradient of the pre-activation gates (the same for xg and hg);
    dcx (B, H): of the previous cell state.  No transcendentals: the forward's ws."""
    n = cx.shape[0] * cx.shape[1]
    if n == 0:
        return
    _lstm_bwd[grid(n)](ws, cx, ghy, gcy, bool(has_gh), bool(has_gc), dgates, dcx, *_consts(dcx))


@cuda.jit
def _gru_fwd(xg, hg, hx, hy, ws, one, zero):
    B, H = hx.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        r = _sigmoid(xg[b, j] + hg[b, j], one, zero)
        z = _sigmoid(xg[b, H + j] + hg[b, H + j], one, zero)
        hn = hg[b, 2 * H + j]
        n = _tanh(xg[b, 2 * H + j] + r * hn)
        ws[b, j] = r
        ws[b, H + j] = z
        ws[b, 2 * H + j] = n
        ws[b, 3 * H + j] = hn
        hy[b, j] = (hx[b, j] - n) * z + n


def gru_cell_fwd_cuda(xg, hg, hx, hy, ws):
    """r, z = sigmoid, n = tanh(x_n + r * h_n), h' = (h - n) * z + n (PyTorch's CPU form);
    ws (B, 4H) keeps r, z, n, h_n for the backward."""
    n = hx.shape[0] * hx.shape[1]
    if n == 0:
        return
    _gru_fwd[grid(n)](xg, hg, hx, hy, ws, *_consts(hx))


@cuda.jit
def _gru_bwd(ws, hx, ghy, dxg, dhg, dhx, one):
    B, H = hx.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        r = ws[b, j]
        z = ws[b, H + j]
        n = ws[b, 2 * H + j]
        hn = ws[b, 3 * H + j]
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


def gru_cell_bwd_cuda(ws, hx, ghy, dxg, dhg, dhx):
    """dxg, dhg (B, 3H): gradients of the two projections (they differ in the n gate, where
    the hidden part is scaled by r); dhx (B, H): of the previous state through z."""
    n = hx.shape[0] * hx.shape[1]
    if n == 0:
        return
    _gru_bwd[grid(n)](ws, hx, ghy, dxg, dhg, dhx, _consts(dhx)[0])


@cuda.jit
def _tanh_fwd(xg, hg, hy):
    B, H = hy.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        hy[b, j] = _tanh(xg[b, j] + hg[b, j])


def rnn_tanh_cell_fwd_cuda(xg, hg, hy):
    n = hy.shape[0] * hy.shape[1]
    if n == 0:
        return
    _tanh_fwd[grid(n)](xg, hg, hy)


@cuda.jit
def _tanh_bwd(hy, ghy, d, one):
    B, H = hy.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        y = hy[b, j]
        d[b, j] = ghy[b, j] * (one - y * y)


def rnn_tanh_cell_bwd_cuda(hy, ghy, d):
    n = hy.shape[0] * hy.shape[1]
    if n == 0:
        return
    _tanh_bwd[grid(n)](hy, ghy, d, _consts(d)[0])


@cuda.jit
def _relu_fwd(xg, hg, hy, zero):
    B, H = hy.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        v = xg[b, j] + hg[b, j]
        hy[b, j] = zero if v <= zero else v


def rnn_relu_cell_fwd_cuda(xg, hg, hy):
    """relu that keeps NaN (PyTorch's clamp_min)."""
    n = hy.shape[0] * hy.shape[1]
    if n == 0:
        return
    _relu_fwd[grid(n)](xg, hg, hy, _consts(hy)[1])


@cuda.jit
def _relu_bwd(hy, ghy, d, zero):
    B, H = hy.shape
    for idx in range(cuda.grid(1), B * H, cuda.gridsize(1)):
        b = idx // H
        j = idx - b * H
        d[b, j] = zero if hy[b, j] <= zero else ghy[b, j]


def rnn_relu_cell_bwd_cuda(hy, ghy, d):
    """PyTorch's threshold_backward: the gradient where the output is not <= 0 (NaN passes)."""
    n = hy.shape[0] * hy.shape[1]
    if n == 0:
        return
    _relu_bwd[grid(n)](hy, ghy, d, _consts(d)[1])
