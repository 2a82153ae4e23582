"""The recurrent cells' fused step: gate nonlinearities and state update of one time step as
one op over kernels/cpu/rnn.py, with a hand-written backward kernel.

Inputs are the two gate projections of the step (``xg = x W_ih^T + b_ih``, computed for all
time steps by one matmul, and ``hg = h W_hh^T + b_hh``, one BLAS matmul per step, both outside
this op) and the previous state.  The LSTM and GRU nodes carry the names of PyTorch's fused
cells (``ThnnFusedLstmCellBackward0``, ``ThnnFusedGruCellBackward0``; PyTorch records them on
CUDA, and a graph of a dozen pointwise nodes per step on CPU).  The RNN cells' names are
nbgrad's own.

Each vjp runs the backward kernel when no graph is being built; under ``create_graph`` it
returns the same gradient from nbgrad ops, so double backward and forward-mode AD work."""

from ..._tensor import Tensor
from ...autograd.batching import batched, lead
from ...creation import zeros_like
from ...grad_mode import STATE
from ...kernels.cpu import rnn as KR
from ..cuda import kernel_for, xp_of
from ..registry import LINEAR, internal_op, op
from ..shape import cat
from ._common import carray, check_float, compute_dtype, needs, on_cuda

CPU = {"cpu": KR}
_make = Tensor._make


def _check(fn, gates, chunks, states):
    """Gate arrays (B, chunks * H) and states (B, H) of one float dtype."""
    for t in (gates[0],) + states:
        check_float(t, fn)
    B, H = states[0].shape[0], states[0].shape[-1]
    for t in gates + states:
        if t._dtype is not gates[0]._dtype:
            raise RuntimeError(
                "%s: expected all inputs to have dtype %s, got %s"
                % (fn, gates[0]._dtype._legacy, t._dtype._legacy)
            )
    for t in gates:
        if tuple(t.shape) != (B, chunks * H):
            raise RuntimeError(
                "%s: expected gates of size %s, got %s" % (fn, [B, chunks * H], list(t.shape))
            )
    for t in states:
        if tuple(t.shape) != (B, H):
            raise RuntimeError(
                "%s: expected states of size %s, got %s" % (fn, [B, H], list(t.shape))
            )
    on_cuda(*gates, *states)
    return compute_dtype(gates[0]._dtype)


def _out(a, dt):
    return _make(a.astype(dt, copy=False))


# -- LSTM ------------------------------------------------------------------------------------


def _lstm_vjp(node, grads):
    gh, gc = grads
    if gh is None and gc is None:
        return None, None, None
    if not STATE.enabled:
        ws = node.saved["ws"]
        cd = ws.dtype
        xp = xp_of(ws)
        cx_a = xp.ascontiguousarray(node.array("cx"), dtype=cd)
        B, H = cx_a.shape
        d = xp.empty((B, 4 * H), cd)
        dcx = xp.empty((B, H), cd)
        kernel_for(ws, KR.lstm_cell_bwd_cpu)(
            ws,
            cx_a,
            carray(gh, cd) if gh is not None else cx_a,
            carray(gc, cd) if gc is not None else cx_a,
            gh is not None,
            gc is not None,
            d,
            dcx,
        )
        dt = gc._dtype.np if gh is None else gh._dtype.np
        dg = _out(d, dt)
        return (
            dg if needs(node, 0) else None,
            dg if needs(node, 1) else None,
            _out(dcx, dt) if needs(node, 2) else None,
        )
    xg, hg, cx = node.unpack("xg"), node.unpack("hg"), node.unpack("cx")
    i, f, g, o = (xg + hg).chunk(4, 1)
    i, f, g, o = i.sigmoid(), f.sigmoid(), g.tanh(), o.sigmoid()
    tc = (f * cx + i * g).tanh()
    dc, do = gc, None
    if gh is not None:
        t = gh * o * (1 - tc * tc)
        dc = t if dc is None else dc + t
        do = gh * tc * o * (1 - o)
    dgates = cat(
        [
            dc * g * i * (1 - i),
            dc * cx * f * (1 - f),
            dc * i * (1 - g * g),
            do if do is not None else zeros_like(o),
        ],
        1,
    )
    return (
        dgates if needs(node, 0) else None,
        dgates if needs(node, 1) else None,
        dc * f if needs(node, 2) else None,
    )


@op(
    "fused_lstm_cell",
    "nn",
    node="ThnnFusedLstmCellBackward0",
    vjp=_lstm_vjp,
    args=("xg", "hg", "cx"),
    saves=("xg", "hg", "cx"),
    kernels=CPU,
)
def fused_lstm_cell(input_gates, hidden_gates, cx):
    """One LSTM step from its gate projections (B, 4H) and cell state (B, H): ``(hy, cy)``."""
    cd = _check("fused_lstm_cell", (input_gates, hidden_gates), 4, (cx,))
    B, H = cx.shape
    xa = carray(input_gates, cd)
    xp = xp_of(xa)
    hy = xp.empty((B, H), cd)
    cy = xp.empty((B, H), cd)
    ws = xp.empty((B, 5 * H), cd)
    kernel_for(xa, KR.lstm_cell_fwd_cpu)(xa, carray(hidden_gates, cd), carray(cx, cd), hy, cy, ws)
    dt = cx._dtype.np
    return fused_lstm_cell.op.record(
        (hy.astype(dt, copy=False), cy.astype(dt, copy=False)),
        (input_gates, hidden_gates, cx),
        saved={"ws": ws},
    )


# -- GRU -------------------------------------------------------------------------------------


def _gru_vjp(node, grads):
    gh = grads[0]
    if gh is None:
        return None, None, None
    if not STATE.enabled:
        ws = node.saved["ws"]
        cd = ws.dtype
        xp = xp_of(ws)
        hx_a = xp.ascontiguousarray(node.array("hx"), dtype=cd)
        B, H = hx_a.shape
        dxg = xp.empty((B, 3 * H), cd)
        dhg = xp.empty((B, 3 * H), cd)
        dhx = xp.empty((B, H), cd)
        kernel_for(ws, KR.gru_cell_bwd_cpu)(ws, hx_a, carray(gh, cd), dxg, dhg, dhx)
        dt = gh._dtype.np
        return (
            _out(dxg, dt) if needs(node, 0) else None,
            _out(dhg, dt) if needs(node, 1) else None,
            _out(dhx, dt) if needs(node, 2) else None,
        )
    xg, hg, hx = node.unpack("xg"), node.unpack("hg"), node.unpack("hx")
    xr, xz, xn = xg.chunk(3, 1)
    hr, hz, hn = hg.chunk(3, 1)
    r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
    n = (xn + r * hn).tanh()
    dn = gh * (1 - z) * (1 - n * n)
    dr = dn * hn * r * (1 - r)
    dz = gh * (hx - n) * z * (1 - z)
    return (
        cat([dr, dz, dn], 1) if needs(node, 0) else None,
        cat([dr, dz, dn * r], 1) if needs(node, 1) else None,
        gh * z if needs(node, 2) else None,
    )


@op(
    "fused_gru_cell",
    "nn",
    node="ThnnFusedGruCellBackward0",
    vjp=_gru_vjp,
    args=("xg", "hg", "hx"),
    saves=("xg", "hg", "hx"),
    kernels=CPU,
)
def fused_gru_cell(input_gates, hidden_gates, hx):
    """One GRU step from its gate projections (B, 3H) and hidden state (B, H): ``hy``."""
    cd = _check("fused_gru_cell", (input_gates, hidden_gates), 3, (hx,))
    B, H = hx.shape
    xa = carray(input_gates, cd)
    xp = xp_of(xa)
    hy = xp.empty((B, H), cd)
    ws = xp.empty((B, 4 * H), cd)
    kernel_for(xa, KR.gru_cell_fwd_cpu)(xa, carray(hidden_gates, cd), carray(hx, cd), hy, ws)
    return fused_gru_cell.op.record(
        hy.astype(hx._dtype.np, copy=False),
        (input_gates, hidden_gates, hx),
        saved={"ws": ws},
    )


# -- Elman RNN (tanh, relu) ------------------------------------------------------------------


def _rnn_vjp(bwd, composite):
    def vjp(node, grads):
        g = grads[0]
        out = node.unpack("out")
        if not STATE.enabled:
            cd = compute_dtype(out._dtype)
            oa = carray(out, cd)
            d = xp_of(oa).empty(tuple(out.shape), cd)
            kernel_for(oa, bwd)(oa, carray(g, cd), d)
            dg = _out(d, out._dtype.np)
        else:
            dg = composite(g, out)
        return dg if needs(node, 0) else None, dg if needs(node, 1) else None

    return vjp


def _rnn_cell(name, fwd, input_gates, hidden_gates):
    cd = _check(name, (input_gates,), 1, (hidden_gates,))
    xa = carray(input_gates, cd)
    hy = xp_of(xa).empty(tuple(hidden_gates.shape), cd)
    kernel_for(xa, fwd)(xa, carray(hidden_gates, cd), hy)
    return hy.astype(input_gates._dtype.np, copy=False)


@op(
    "fused_rnn_tanh_cell",
    "nn",
    node="FusedRnnTanhCellBackward0",
    vjp=_rnn_vjp(KR.rnn_tanh_cell_bwd_cpu, lambda g, out: g * (1 - out * out)),
    args=("xg", "hg"),
    saves=("out",),
    kernels=CPU,
)
def fused_rnn_tanh_cell(input_gates, hidden_gates):
    """``tanh(xg + hg)``: one Elman RNN step from its projections (B, H)."""
    hy = _rnn_cell("fused_rnn_tanh_cell", KR.rnn_tanh_cell_fwd_cpu, input_gates, hidden_gates)
    return fused_rnn_tanh_cell.op.record(hy, (input_gates, hidden_gates))


@op(
    "fused_rnn_relu_cell",
    "nn",
    node="FusedRnnReluCellBackward0",
    vjp=_rnn_vjp(KR.rnn_relu_cell_bwd_cpu, lambda g, out: g.masked_fill(out <= 0, 0)),
    args=("xg", "hg"),
    saves=("out",),
    kernels=CPU,
)
def fused_rnn_relu_cell(input_gates, hidden_gates):
    """``relu(xg + hg)``: one Elman RNN step from its projections (B, H)."""
    hy = _rnn_cell("fused_rnn_relu_cell", KR.rnn_relu_cell_fwd_cpu, input_gates, hidden_gates)
    return fused_rnn_relu_cell.op.record(hy, (input_gates, hidden_gates))


# -- the batch_first output of GRU and RNN ----------------------------------------------------


@batched
def _swap01_vjp(node, grads):
    b = len(lead(grads[0]))
    return (grads[0].transpose(b, b + 1),)


@internal_op("rnn_transpose_", "shape", node="TransposeBackward1", vjp=_swap01_vjp, jvp=LINEAR)
def transpose01_(output):
    """``output.transpose_(0, 1)`` as PyTorch's GRU and RNN apply it to their (internal) stacked
    output for ``batch_first``: a new tensor here, recorded as ``TransposeBackward1``."""
    return transpose01_.op.record(output._data.swapaxes(0, 1), (output,))
