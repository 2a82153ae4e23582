"""``torch._VF``'s recurrent entry points (``nbgrad._VF``): the time loops of ``nn.RNN``,
``nn.LSTM``, ``nn.GRU`` and the single steps of their ``*Cell`` modules, with PyTorch's
signatures, composed as PyTorch composes them on CPU so that the graph ends in the same nodes
(``StackBackward0`` for outputs and final states, ``CatBackward0`` for bidirectional outputs,
``TransposeBackward0/1`` for ``batch_first``, ``MmBackward0`` for LSTM projections).

Per layer and direction: the input projection of all time steps is one matmul (``F.linear``
over ``(T, B, I)``), unbound into steps; each step is one BLAS matmul for the hidden
projection and one fused cell op (ops/nn/rnn.py: gate nonlinearities and state update in one
Numba kernel, with a hand-written backward kernel).  Packed sequences are not supported."""

from .._missing import missing as _missing
from ..ops.linalg import mm
from ..ops.nn import linear as _linear, rnn as _rnn
from ..ops.shape import cat, stack
from . import functional as F

__all__ = [
    "gru",
    "gru_cell",
    "lstm",
    "lstm_cell",
    "rnn_relu",
    "rnn_relu_cell",
    "rnn_tanh",
    "rnn_tanh_cell",
]


def __getattr__(name):
    raise _missing("nbgrad._VF", name)


# -- one step ----------------------------------------------------------------------------------


def _check_cell(input, hiddens, w_ih, w_hh):
    """PyTorch's check_rnn_cell_forward_input / _hidden."""
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(
            "input has inconsistent input_size: got %d expected %d"
            % (input.shape[1], w_ih.shape[1])
        )
    for k, h in enumerate(hiddens):
        if input.shape[0] != h.shape[0]:
            raise RuntimeError(
                "Input batch size %d doesn't match hidden%d batch size %d"
                % (input.shape[0], k, h.shape[0])
            )
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(
                "hidden%d has inconsistent hidden_size: got %d, expected %d"
                % (k, h.shape[1], w_hh.shape[1])
            )


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step: ``(hy, cy)`` from input (B, I) and ``hx = (h, c)`` (B, H)."""
    if len(hx) != 2:
        raise RuntimeError("lstm_cell expects two hidden states")
    _check_cell(input, hx, w_ih, w_hh)
    xg = F.linear(input, w_ih, b_ih)
    return _rnn.fused_lstm_cell(xg, F.linear(hx[0], w_hh, b_hh), hx[1])


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step: ``hy`` from input (B, I) and hidden state (B, H)."""
    _check_cell(input, (hx,), w_ih, w_hh)
    xg = F.linear(input, w_ih, b_ih)
    return _rnn.fused_gru_cell(xg, F.linear(hx, w_hh, b_hh), hx)


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step ``tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    _check_cell(input, (hx,), w_ih, w_hh)
    xg = F.linear(input, w_ih, b_ih)
    return _rnn.fused_rnn_tanh_cell(xg, F.linear(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman step ``relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    _check_cell(input, (hx,), w_ih, w_hh)
    xg = F.linear(input, w_ih, b_ih)
    return _rnn.fused_rnn_relu_cell(xg, F.linear(hx, w_hh, b_hh))


# -- the time loop -----------------------------------------------------------------------------


def _lstm_step(xg, hg, state):
    h, c = _rnn.fused_lstm_cell(xg, hg, state[1])
    return h, (h, c)


def _gru_step(xg, hg, state):
    h = _rnn.fused_gru_cell(xg, hg, state)
    return h, h


def _tanh_step(xg, hg, state):
    h = _rnn.fused_rnn_tanh_cell(xg, hg)
    return h, h


def _relu_step(xg, hg, state):
    h = _rnn.fused_rnn_relu_cell(xg, hg)
    return h, h


def _layer(step, x, state, w_ih, w_hh, b_ih, b_hh, w_hr, reverse):
    """One direction of one layer over x (T, B, I): ``(outputs (T, B, H), final state)``.

    The input projection of all steps is one matmul.  Where the gates only see the sum of the
    two projections (LSTM, RNN), ``b_hh`` joins ``b_ih`` there, so a step's hidden projection is
    a bare matmul (no per-step bias add, sum and gradient accumulation); the GRU's n gate scales
    the hidden part by r, so its ``b_hh`` stays in the step."""
    if b_hh is not None and step is not _gru_step:
        b_ih, b_hh = b_ih + b_hh, None
    xgs = F.linear(x, w_ih, b_ih).unbind(0)
    w_hh_t = w_hh.t() if b_hh is None else None
    w_hr_t = w_hr.t() if w_hr is not None else None
    h = state[0] if isinstance(state, tuple) else state
    outs = [None] * len(xgs)
    for t in reversed(range(len(xgs))) if reverse else range(len(xgs)):
        hg = mm(h, w_hh_t) if b_hh is None else _linear.addmm(h, w_hh, b_hh)
        h, state = step(xgs[t], hg, state)
        if w_hr_t is not None:  # LSTM with projections: h = (o * tanh(c)) W_hr^T
            h = mm(h, w_hr_t)
            state = (h, state[1])
        outs[t] = h
    return stack(outs, 0), state


def _run(
    mode,
    step,
    input,
    hx,
    params,
    has_biases,
    num_layers,
    dropout,
    train,
    bidirectional,
    batch_first,
):
    lstm = mode == "lstm"
    if lstm:
        if len(hx) != 2:
            raise RuntimeError("lstm expects two hidden states")
        hx = tuple(hx)
    if input.ndim != 3:
        raise RuntimeError("input must have 3 dimensions, got %d" % input.ndim)
    if batch_first:
        input = input.transpose(0, 1)
    if input.shape[0] == 0:
        raise RuntimeError("Expected sequence length to be larger than 0 in RNN")
    proj = lstm and hx[0].shape[-1] != hx[1].shape[-1]
    per = (4 if has_biases else 2) + (1 if proj else 0)
    D = 2 if bidirectional else 1
    params = list(params)
    if len(params) != num_layers * D * per:
        raise RuntimeError(
            "%s: expected %d parameter tensors (%d layers, %d directions, %d each), got %d"
            % (mode, num_layers * D * per, num_layers, D, per, len(params))
        )
    if lstm:
        states = list(zip(hx[0].unbind(0), hx[1].unbind(0)))
    else:
        states = list(hx.unbind(0))
    if len(states) != num_layers * D:
        raise RuntimeError(
            "%s: expected hidden state of size %d in dim 0, got %d"
            % (mode, num_layers * D, len(states))
        )
    layer_input = input
    finals = []
    for layer in range(num_layers):
        outs = []
        for d in range(D):
            k = layer * D + d
            p = params[k * per : (k + 1) * per]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            w_hr = p[-1] if proj else None
            out, final = _layer(step, layer_input, states[k], p[0], p[1], b_ih, b_hh, w_hr, d == 1)
            outs.append(out)
            finals.append(final)
        layer_input = outs[0] if D == 1 else cat(outs, outs[0].ndim - 1)
        if dropout and train and layer < num_layers - 1:
            layer_input = F.dropout(layer_input, dropout, True)
    output = layer_input
    if batch_first:
        output = output.transpose(0, 1) if lstm else _rnn.transpose01_(output)
    if lstm:
        return output, stack([f[0] for f in finals], 0), stack([f[1] for f in finals], 0)
    return output, stack(finals, 0)


def _loop(mode, step, doc):
    """The ``torch._VF`` entry point ``mode`` of a recurrent layer."""

    def f(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first):
        return _run(
            mode,
            step,
            input,
            hx,
            params,
            has_biases,
            num_layers,
            dropout,
            train,
            bidirectional,
            batch_first,
        )

    f.__name__ = f.__qualname__ = mode
    f.__doc__ = doc
    return f


lstm = _loop(
    "lstm",
    _lstm_step,
    "``(output, h_n, c_n)``; ``params`` per layer and direction: w_ih, w_hh[, b_ih, b_hh]"
    "[, w_hr] (projections when h and c differ in size).",
)
gru = _loop(
    "gru",
    _gru_step,
    "``(output, h_n)``; ``params`` per layer and direction: w_ih, w_hh[, b_ih, b_hh].",
)
rnn_tanh = _loop("rnn_tanh", _tanh_step, "``(output, h_n)`` of a tanh Elman RNN.")
rnn_relu = _loop("rnn_relu", _relu_step, "``(output, h_n)`` of a relu Elman RNN.")
