"""Recurrent cells: the gate nonlinearities and state update of one time step, forward and
backward, over ``(B, G)`` gate arrays (the input and hidden projections, computed by BLAS
outside) and ``(B, H)`` states.  Gate order is PyTorch's: LSTM ``i f g o``, GRU ``r z n``.

The forward kernels keep the activated gates in a workspace ``ws`` (as PyTorch's fused
cells do), so the backward kernels are plain arithmetic with no transcendentals.  A missing
output gradient (``has_*`` false) contributes nothing, not ``0 * x``: NaN in a gate must not
leak into the gradient of an output that received none (NOTE [select, never multiply by a
mask]).  Constants are typed (``one``) so that float32 maths stays float32.

NOTE [vectorised gates]: libm's ``exp``/``tanh`` are scalar calls (pip llvmlite has no SVML),
and the 5 of them per LSTM element made the forward kernel the largest cost of a step.  For
float32, ``_sigmoid``/``_tanh`` are branch-free Cephes-style ``expf``/``tanhf`` (range
reduction and polynomials) that LLVM vectorises: 10x faster, with the same maximum relative
error as libm over the float32 range (1.4e-7 for sigmoid, 1.6e-7 for tanh, measured on 600k
points against float64), NaN in gives NaN out, and the saturated ends are exact (0, 1, +-1).
float64 keeps libm."""

import numpy as np
from numba import njit, types
from numba.extending import overload

from .. import JIT

_F = np.float32
_LOG2E = _F(1.44269504088896341)
_LN2_HI, _LN2_LO = _F(0.693359375), _F(-2.12194440e-4)
_EXP_P = (
    _F(1.9875691500e-4),
    _F(1.3981999507e-3),
    _F(8.3334519073e-3),
    _F(4.1665795894e-2),
    _F(1.6666665459e-1),
    _F(5.0000001201e-1),
)
_EXP_HI, _EXP_LO = _F(88.0), _F(-87.33654)
_TANH_P = (
    _F(-5.70498872745e-3),
    _F(2.06390887954e-2),
    _F(-5.37397155531e-2),
    _F(1.33314422036e-1),
    _F(-3.33332819422e-1),
)
_ZERO, _HALF, _ONE, _TWO, _INF = _F(0), _F(0.5), _F(1), _F(2), _F(np.inf)


@njit(inline="always")
def _expf(x):
    """Cephes ``expf`` without branches: 2^k * p(r), x = k ln2 + r; inf above 88, 0 below the
    smallest normal (only used where those ends saturate: sigmoid, tanh)."""
    p0, p1, p2, p3, p4, p5 = _EXP_P
    xc = min(max(x, _EXP_LO), _EXP_HI)
    k = np.floor(xc * _LOG2E + _HALF)
    r = xc - k * _LN2_HI - k * _LN2_LO
    y = (((((p0 * r + p1) * r + p2) * r + p3) * r + p4) * r + p5) * (r * r) + r + _ONE
    e = np.int32((np.int32(k) + np.int32(127)) << np.int32(23)).view(np.float32)
    res = y * e
    res = _INF if x > _EXP_HI else res
    res = _ZERO if x < _EXP_LO else res
    return res if x == x else x


@njit(inline="always")
def _tanhf(x):
    """Cephes ``tanhf``: an odd polynomial below |x| = 0.625, 1 - 2 / (e^2|x| + 1) above."""
    t0, t1, t2, t3, t4 = _TANH_P
    a = abs(x)
    z = x * x
    small = ((((t0 * z + t1) * z + t2) * z + t3) * z + t4) * z * x + x
    big = _ONE - _TWO / (_expf(_TWO * a) + _ONE)
    big = big if x >= _ZERO else -big
    return small if a < _F(0.625) else big


def _tanh(x):
    """tanh: vectorisable for float32, libm otherwise (NOTE [vectorised gates])."""
    return np.tanh(x)


def _sigmoid(x):
    """1 / (1 + exp(-x)): vectorisable for float32, libm otherwise."""
    return 1 / (1 + np.exp(-x))


@overload(_tanh, jit_options={"error_model": "numpy"})
def _tanh_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _tanhf(x)
    return lambda x: np.tanh(x)


@overload(_sigmoid, jit_options={"error_model": "numpy"})
def _sigmoid_typed(x):
    if isinstance(x, types.Float) and x.bitwidth == 32:
        return lambda x: _ONE / (_ONE + _expf(-x))
    return lambda x: 1.0 / (1.0 + np.exp(-x))


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
