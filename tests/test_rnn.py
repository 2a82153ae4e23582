"""Recurrent layers (RNN, LSTM, GRU and their cells) against PyTorch: construction, parameter
names, shapes and initialisation; a PyTorch state dict loaded gives the same outputs, final
states, grad_fn names and gradients (float32 and float64, train and eval); errors; float64
finite differences, double backward; dropout between layers.  The fused cell ops themselves
also have op-table rows (testing/op_db_nn.py), which run the table-driven gradient tests."""

import copy
import math
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.autograd import gradcheck, gradgradcheck

# name -> (factory(T), batch_first)
MODULES = {
    "lstm": lambda T: T.nn.LSTM(3, 4),
    "lstm-2-bidir-bf": lambda T: T.nn.LSTM(3, 4, 2, bidirectional=True, batch_first=True),
    "lstm-proj-2": lambda T: T.nn.LSTM(3, 5, 2, proj_size=2),
    "lstm-proj-bidir": lambda T: T.nn.LSTM(3, 5, proj_size=3, bidirectional=True),
    "lstm-nobias": lambda T: T.nn.LSTM(3, 4, bias=False),
    "lstm-dropout": lambda T: T.nn.LSTM(3, 4, 3, dropout=0.4),
    "gru": lambda T: T.nn.GRU(3, 4),
    "gru-2-bidir-bf": lambda T: T.nn.GRU(3, 4, 2, bidirectional=True, batch_first=True),
    "gru-nobias-bf": lambda T: T.nn.GRU(3, 4, bias=False, batch_first=True),
    "rnn-2": lambda T: T.nn.RNN(3, 4, 2),
    "rnn-relu-bidir-bf": lambda T: T.nn.RNN(
        3, 4, nonlinearity="relu", bidirectional=True, batch_first=True
    ),
    "rnn-nobias-relu": lambda T: T.nn.RNN(3, 4, 1, "relu", False),
}
CELLS = {
    "lstmcell": lambda T: T.nn.LSTMCell(3, 4),
    "lstmcell-nobias": lambda T: T.nn.LSTMCell(3, 4, bias=False),
    "grucell": lambda T: T.nn.GRUCell(3, 4),
    "grucell-nobias": lambda T: T.nn.GRUCell(3, 4, False),
    "rnncell": lambda T: T.nn.RNNCell(3, 4),
    "rnncell-relu-nobias": lambda T: T.nn.RNNCell(3, 4, bias=False, nonlinearity="relu"),
}
TOL = {"float64": dict(rtol=1e-10, atol=1e-12), "float32": dict(rtol=2e-5, atol=2e-6)}


def _describe(m):
    return {
        "repr": repr(m).replace("nbgrad.", "torch."),
        "params": [
            (n, tuple(p.shape), str(p.dtype).replace("nbgrad.", "torch."), p._version)
            for n, p in m.named_parameters()
        ],
        "state_dict": list(m.state_dict()),
        "training": m.training,
    }


def _pair(name, dtype, table=MODULES):
    """(torch module, nbgrad module with the torch module's state dict loaded)."""
    torch.manual_seed(0)
    tm = table[name](torch).to(getattr(torch, dtype))
    nm = table[name](nbgrad).to(getattr(nbgrad, dtype))
    nm.load_state_dict({k: nbgrad.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    return tm, nm


def _leaf(T, a, dtype):
    return T.tensor(a, dtype=getattr(T, dtype), requires_grad=True)


def _flat(out):
    """Output tensors of a module call, in order."""
    if isinstance(out, tuple):
        return [t for o in out for t in _flat(o)]
    return [out]


def _compare(t_out, n_out, t_leaves, n_leaves, tol, names=True, seed=3):
    t_out, n_out = _flat(t_out), _flat(n_out)
    assert len(t_out) == len(n_out)
    for a, b in zip(t_out, n_out):
        assert tuple(a.shape) == tuple(b.shape)
        assert str(a.dtype) == str(b.dtype).replace("nbgrad", "torch")
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **tol)
        if names:
            assert b.grad_fn.name() == a.grad_fn.name()
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(tuple(a.shape)) for a in t_out]
    tg = torch.autograd.grad(
        t_out, t_leaves, [torch.tensor(v, dtype=a.dtype) for v, a in zip(vs, t_out)]
    )
    ng = nbgrad.autograd.grad(
        n_out, n_leaves, [nbgrad.tensor(v, dtype=b.dtype) for v, b in zip(vs, n_out)]
    )
    for a, b in zip(tg, ng):
        np.testing.assert_allclose(b.numpy(), a.numpy(), **tol)


# -- construction --------------------------------------------------------------------------------


@needs_torch
@pytest.mark.parametrize("name", list(MODULES) + list(CELLS))
def test_structure_matches_torch(name):
    make = MODULES.get(name) or CELLS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lstm-dropout on 1 layer: none here, but be safe
        tm, nm = make(torch), make(nbgrad)
    assert _describe(nm) == _describe(tm)
    for attr in ("_flat_weights_names", "_all_weights", "mode", "proj_size", "nonlinearity"):
        if hasattr(tm, attr):
            assert getattr(nm, attr) == getattr(tm, attr), attr
    if hasattr(tm, "all_weights"):
        assert [[tuple(p.shape) for p in ws] for ws in nm.all_weights] == [
            [tuple(p.shape) for p in ws] for ws in tm.all_weights
        ]
        assert [tuple(p.shape) for p in nm._flat_weights] == [
            tuple(p.shape) for p in tm._flat_weights
        ]


def test_initialisation_is_uniform_within_one_over_sqrt_hidden():
    nbgrad.manual_seed(0)
    m = nbgrad.nn.LSTM(20, 16, 2, bidirectional=True)
    bound = 1 / math.sqrt(16)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert values.size > 10000
    assert np.all(np.abs(values) <= bound)
    assert abs(values.mean()) < 0.01 and abs(values.std() - bound / math.sqrt(3)) < 0.005
    cell = nbgrad.nn.GRUCell(5, 9)
    assert all(np.all(np.abs(p.detach().numpy()) <= 1 / 3) for p in cell.parameters())
    nbgrad.manual_seed(0)
    again = nbgrad.nn.LSTM(20, 16, 2, bidirectional=True)
    assert all(
        np.array_equal(a.numpy(), b.numpy())
        for a, b in zip(m.state_dict().values(), again.state_dict().values())
    )


def test_reassigned_or_converted_parameters_are_used():
    m = nbgrad.nn.GRU(2, 3)
    x = nbgrad.randn(4, 1, 2)
    m.weight_hh_l0 = nbgrad.nn.Parameter(nbgrad.zeros(9, 3))
    m.bias_hh_l0 = nbgrad.nn.Parameter(nbgrad.zeros(9))
    out, _ = m(x)
    # with W_hh = 0 and b_hh = 0 the first step is the GRU of the input alone
    xr, xz, xn = np.split(
        x[0].numpy() @ m.weight_ih_l0.detach().numpy().T + m.bias_ih_l0.detach().numpy(), 3, 1
    )
    z, n = 1 / (1 + np.exp(-xz)), np.tanh(xn)
    np.testing.assert_allclose(out[0].detach().numpy(), (1 - z) * n, rtol=1e-5, atol=1e-6)
    m.double()
    out, h = m(x.double())
    assert out.dtype is nbgrad.float64 and h.dtype is nbgrad.float64
    c = copy.deepcopy(m)
    np.testing.assert_array_equal(c(x.double())[0].detach().numpy(), out.detach().numpy())


# -- values and gradients against PyTorch ----------------------------------------------------------


def _inputs(name, tm, batched, rng):
    """(x, hx arrays or None) for module ``tm``: T=5 steps, batch 3 (or unbatched)."""
    T_, B = 5, 3
    shape = ((B, T_) if tm.batch_first else (T_, B)) if batched else (T_,)
    x = rng.standard_normal(shape + (tm.input_size,))
    D = 2 if tm.bidirectional else 1
    lead = (tm.num_layers * D,) + ((B,) if batched else ())
    h_size = tm.proj_size or tm.hidden_size
    h = rng.standard_normal(lead + (h_size,)) * 0.5
    if tm.mode == "LSTM":
        return x, (h, rng.standard_normal(lead + (tm.hidden_size,)) * 0.5)
    return x, h


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("name", list(MODULES))
def test_module_matches_torch(name, with_hx, batched, dtype):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "LSTM with projections is not supported ..."
        tm, nm = _pair(name, dtype)
        for mode in ("train", "eval") if tm.dropout == 0 else ("eval",):
            getattr(tm, mode)()
            getattr(nm, mode)()
            rng = np.random.default_rng(1)
            x, hx = _inputs(name, tm, batched, rng)
            t_leaves, n_leaves = [_leaf(torch, x, dtype)], [_leaf(nbgrad, x, dtype)]
            t_args, n_args = [t_leaves[0]], [n_leaves[0]]
            if with_hx:
                hs = hx if isinstance(hx, tuple) else (hx,)
                th = [_leaf(torch, h, dtype) for h in hs]
                nh = [_leaf(nbgrad, h, dtype) for h in hs]
                t_leaves += th
                n_leaves += nh
                t_args.append(tuple(th) if len(hs) == 2 else th[0])
                n_args.append(tuple(nh) if len(hs) == 2 else nh[0])
            t_leaves += list(tm.parameters())
            n_leaves += list(nm.parameters())
            t_out, n_out = tm(*t_args), nm(*n_args)
            # float32 LSTMs run on oneDNN in PyTorch (MkldnnRnnLayerBackward0 nodes)
            names = dtype == "float64" or tm.mode != "LSTM"
            _compare(t_out, n_out, t_leaves, n_leaves, TOL[dtype], names=names)


@needs_torch
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_hx", [True, False])
@pytest.mark.parametrize("name", list(CELLS))
def test_cell_matches_torch(name, with_hx, batched, dtype):
    tm, nm = _pair(name, dtype, CELLS)
    rng = np.random.default_rng(2)
    lead = (3,) if batched else ()
    x = rng.standard_normal(lead + (3,))
    t_leaves, n_leaves = [_leaf(torch, x, dtype)], [_leaf(nbgrad, x, dtype)]
    t_args, n_args = [t_leaves[0]], [n_leaves[0]]
    if with_hx:
        k = 2 if isinstance(tm, torch.nn.LSTMCell) else 1
        hs = [rng.standard_normal(lead + (4,)) for _ in range(k)]
        th = [_leaf(torch, h, dtype) for h in hs]
        nh = [_leaf(nbgrad, h, dtype) for h in hs]
        t_leaves += th
        n_leaves += nh
        t_args.append(tuple(th) if k == 2 else th[0])
        n_args.append(tuple(nh) if k == 2 else nh[0])
    t_leaves += list(tm.parameters())
    n_leaves += list(nm.parameters())
    # the cells' nodes are nbgrad's fused ones (PyTorch: Mul/Add/Tanh/Relu on CPU)
    _compare(tm(*t_args), nm(*n_args), t_leaves, n_leaves, TOL[dtype], names=not batched)


def test_cell_grad_fn_names():
    x = nbgrad.randn(2, 3)
    h, c = nbgrad.nn.LSTMCell(3, 4)(x)
    assert h.grad_fn.name() == c.grad_fn.name() == "ThnnFusedLstmCellBackward0"
    assert h.grad_fn is c.grad_fn
    assert nbgrad.nn.GRUCell(3, 4)(x).grad_fn.name() == "ThnnFusedGruCellBackward0"
    assert nbgrad.nn.RNNCell(3, 4)(x).grad_fn.name() == "FusedRnnTanhCellBackward0"
    relu = nbgrad.nn.RNNCell(3, 4, nonlinearity="relu")
    assert relu(x).grad_fn.name() == "FusedRnnReluCellBackward0"
    # the hidden projection is its own BLAS matmul node, the input projection another
    names = [f.name() if f is not None else None for f, _ in h.grad_fn.next_functions]
    assert names == ["AddmmBackward0", "AddmmBackward0", None]  # c0: zeros, no gradient


@needs_torch
def test_stacked_language_model_trains_like_torch():
    """Embedding -> 2-layer LSTM (dropout 0) -> Linear, cross-entropy, SGD: 5 steps, float64,
    the same losses and parameters as PyTorch."""

    def make(T):
        T.manual_seed(0)
        emb = T.nn.Embedding(7, 5, dtype=T.float64)
        lstm = T.nn.LSTM(5, 6, 2, batch_first=True).to(T.float64)
        head = T.nn.Linear(6, 7, dtype=T.float64)
        return emb, lstm, head

    t_mods, n_mods = make(torch), make(nbgrad)
    for t, n in zip(t_mods, n_mods):
        n.load_state_dict({k: nbgrad.tensor(v.numpy()) for k, v in t.state_dict().items()})
    rng = np.random.default_rng(0)
    seq = rng.integers(0, 7, (4, 9))
    losses = {}
    for T, (emb, lstm, head) in ((torch, t_mods), (nbgrad, n_mods)):
        params = [p for m in (emb, lstm, head) for p in m.parameters()]
        opt = T.optim.SGD(params, lr=0.5)
        x, y = T.tensor(seq[:, :-1]), T.tensor(seq[:, 1:])
        losses[T.__name__] = []
        for _ in range(5):
            out, _ = lstm(emb(x))
            loss = T.nn.functional.cross_entropy(head(out).reshape(-1, 7), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[T.__name__].append(loss.item())
    np.testing.assert_allclose(losses["nbgrad"], losses["torch"], rtol=1e-10)
    assert losses["nbgrad"][-1] < losses["nbgrad"][0]
    for t, n in zip(t_mods, n_mods):
        for (k, a), b in zip(t.state_dict().items(), n.state_dict().values()):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12, err_msg=k)


@needs_torch
@pytest.mark.parametrize("name", ["lstm", "gru-2-bidir-bf", "rnn-2"])
def test_double_backward_matches_torch(name):
    """d/dparams of |d out / d x|^2: the create_graph backward of the fused cells."""
    tm, nm = _pair(name, "float64")
    x = np.random.default_rng(4).standard_normal((2, 5, 3) if tm.batch_first else (5, 2, 3))
    res = []
    for T, m in ((torch, tm), (nbgrad, nm)):
        xt = _leaf(T, x, "float64")
        out = m(xt)[0]
        (gx,) = T.autograd.grad((out * out).sum(), xt, create_graph=True)
        res.append(T.autograd.grad((gx * gx).sum(), [xt] + list(m.parameters())))
    for a, b in zip(*res):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-9, atol=1e-12)


# -- finite differences (float64) ----------------------------------------------------------------


def _params(shapes, rng):
    return [
        nbgrad.tensor(rng.uniform(-0.7, 0.7, s), dtype=nbgrad.float64, requires_grad=True)
        for s in shapes
    ]


@pytest.mark.parametrize("kind", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_cells_gradcheck_and_gradgradcheck(kind):
    rng = np.random.default_rng(5)
    G = {"lstm": 4, "gru": 3}.get(kind, 1)
    x, h, c = _params([(2, 3), (2, 2), (2, 2)], rng)
    w = _params([(G * 2, 3), (G * 2, 2), (G * 2,), (G * 2,)], rng)
    cell = getattr(nbgrad._VF, kind + "_cell")

    def fn(x, h, c, *w):
        return cell(x, (h, c) if kind == "lstm" else h, *w)

    inputs = (x, h, c, *w) if kind == "lstm" else (x, h, *w)
    if kind != "lstm":
        fn = (lambda f: lambda x, h, *w: f(x, h, None, *w))(fn)
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_bidirectional_two_layer_lstm_with_projection_gradcheck():
    rng = np.random.default_rng(6)
    H, P = 3, 2
    x, h0, c0 = _params([(3, 2, 2), (4, 2, P), (4, 2, H)], rng)
    shapes = []
    for layer in range(2):
        for _ in range(2):
            size = 2 if layer == 0 else 2 * P
            shapes += [(4 * H, size), (4 * H, P), (4 * H,), (4 * H,), (P, H)]
    params = _params(shapes, rng)

    def fn(x, h0, c0, *params):
        return nbgrad._VF.lstm(x, (h0, c0), list(params), True, 2, 0.0, True, True, False)

    assert gradcheck(fn, (x, h0, c0, *params))


def test_gru_sequence_gradgradcheck():
    rng = np.random.default_rng(7)
    x, h0 = _params([(2, 3, 2), (1, 2, 2)], rng)  # batch_first: (B=2, T=3, 2)
    params = _params([(6, 2), (6, 2), (6,), (6,)], rng)

    def fn(x, h0, *params):
        return nbgrad._VF.gru(x, h0, list(params), True, 1, 0.0, True, False, True)

    assert gradgradcheck(fn, (x, h0, *params))


# -- dropout between layers ----------------------------------------------------------------------


@needs_torch
def test_dropout_one_zeroes_the_upper_layers_input_like_torch():
    """p=1 drops every element of the lower layer's output: deterministic, so comparable."""
    tm, nm = _pair("lstm-dropout", "float64")
    m_t, m_n = copy.deepcopy(tm), copy.deepcopy(nm)
    m_t.dropout = m_n.dropout = 1.0
    x = np.random.default_rng(8).standard_normal((4, 2, 3))
    xt, xn = _leaf(torch, x, "float64"), _leaf(nbgrad, x, "float64")
    _compare(
        m_t(xt),
        m_n(xn),
        [xt] + list(m_t.parameters()),
        [xn] + list(m_n.parameters()),
        TOL["float64"],
    )


def test_dropout_between_layers_in_training_only():
    nbgrad.manual_seed(0)
    m = nbgrad.nn.GRU(3, 8, 3, dropout=0.5)
    x = nbgrad.randn(6, 4, 3)
    m.eval()
    ev1, ev2 = m(x)[0], m(x)[0]
    np.testing.assert_array_equal(ev1.detach().numpy(), ev2.detach().numpy())
    m.train()
    nbgrad.manual_seed(1)
    tr1 = m(x)[0]
    nbgrad.manual_seed(1)
    tr2 = m(x)[0]
    np.testing.assert_array_equal(tr1.detach().numpy(), tr2.detach().numpy())
    assert not np.allclose(tr1.detach().numpy(), ev1.detach().numpy())
    assert tr1.grad_fn.name() == "StackBackward0"
    tr1.sum().backward()
    assert all(np.all(np.isfinite(p.grad.numpy())) for p in m.parameters())


@needs_torch
def test_dropout_warning_and_errors_match_torch():
    for T in (torch, nbgrad):
        with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
            T.nn.LSTM(3, 4, dropout=0.2)


# -- errors ---------------------------------------------------------------------------------------


def _r(T, *shape):
    return T.zeros(*shape)


ERRORS = {
    "cell-input-size": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 3)),
    "cell-hidden0-batch": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4), (_r(T, 2, 5), _r(T, 3, 5))),
    "cell-hidden0-size": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4), (_r(T, 3, 6), _r(T, 3, 5))),
    "cell-hidden1-size": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4), (_r(T, 3, 5), _r(T, 3, 6))),
    "cell-hidden1-batch": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4), (_r(T, 3, 5), _r(T, 2, 5))),
    "cell-3d": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4, 1)),
    "cell-hx-3d": lambda T: T.nn.LSTMCell(4, 5)(_r(T, 3, 4), (_r(T, 3, 5, 1), _r(T, 3, 5))),
    "grucell-3d": lambda T: T.nn.GRUCell(4, 5)(_r(T, 3, 4, 1)),
    "grucell-hx-3d": lambda T: T.nn.GRUCell(4, 5)(_r(T, 3, 4), _r(T, 3, 5, 1)),
    "grucell-hidden": lambda T: T.nn.GRUCell(4, 5)(_r(T, 3, 4), _r(T, 3, 6)),
    "rnncell-nonlinearity": lambda T: T.nn.RNNCell(4, 5, nonlinearity="foo")(_r(T, 3, 4)),
    "rnn-nonlinearity": lambda T: T.nn.RNN(4, 5, nonlinearity="foo"),
    "gru-proj": lambda T: T.nn.GRU(4, 5, proj_size=2),
    "rnn-proj": lambda T: T.nn.RNN(4, 5, proj_size=2),
    "input-size": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 3)),
    "dtype": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 4).double()),
    "hidden0": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 4), (_r(T, 1, 3, 5), _r(T, 1, 2, 5))),
    "hidden1": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 4), (_r(T, 1, 2, 5), _r(T, 1, 3, 5))),
    "hx-2d": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 4), (_r(T, 2, 5), _r(T, 1, 3, 5))),
    "hx-3d-unbatched": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 4), (_r(T, 1, 2, 5), _r(T, 1, 3, 5))),
    "lstm-4d": lambda T: T.nn.LSTM(4, 5)(_r(T, 3, 2, 4, 1)),
    "empty-seq": lambda T: T.nn.LSTM(4, 5)(_r(T, 0, 2, 4)),
    "gru-hidden": lambda T: T.nn.GRU(4, 5)(_r(T, 3, 2, 4), _r(T, 1, 3, 5)),
    "gru-hx-2d": lambda T: T.nn.GRU(4, 5)(_r(T, 3, 2, 4), _r(T, 3, 5)),
    "gru-hx-3d-unbatched": lambda T: T.nn.GRU(4, 5)(_r(T, 3, 4), _r(T, 1, 1, 5)),
    "gru-4d": lambda T: T.nn.GRU(4, 5)(_r(T, 3, 4, 1, 1)),
    "rnn-4d": lambda T: T.nn.RNN(4, 5)(_r(T, 3, 4, 1, 1)),
    "rnn-hidden-bf": lambda T: T.nn.RNN(4, 5, 2, batch_first=True)(_r(T, 3, 2, 4), _r(T, 1, 3, 5)),
    "proj-hidden": lambda T: T.nn.LSTM(4, 5, proj_size=3)(
        _r(T, 3, 2, 4), (_r(T, 1, 2, 5), _r(T, 1, 2, 5))
    ),
    "dropout-range": lambda T: T.nn.LSTM(4, 5, dropout=2),
    "dropout-bool": lambda T: T.nn.LSTM(4, 5, dropout=True),
    "proj-size": lambda T: T.nn.LSTM(4, 5, proj_size=5),
    "proj-negative": lambda T: T.nn.LSTM(4, 5, proj_size=-1),
    "input-size-float": lambda T: T.nn.LSTM(4.0, 5),
    "hidden-size-float": lambda T: T.nn.LSTM(4, 5.0),
    "input-size-zero": lambda T: T.nn.LSTM(0, 5),
    "hidden-size-zero": lambda T: T.nn.LSTM(4, 0),
    "layers-zero": lambda T: T.nn.LSTM(4, 5, num_layers=0),
    "bias-int": lambda T: T.nn.LSTM(4, 5, bias=1),
    "batch-first-int": lambda T: T.nn.LSTM(4, 5, batch_first=1),
}


@needs_torch
@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_match_torch(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as t_err:
            ERRORS[name](torch)
        with pytest.raises(Exception) as n_err:
            ERRORS[name](nbgrad)
    assert type(n_err.value) is type(t_err.value)
    assert str(n_err.value).replace("nbgrad", "torch") == str(t_err.value)


@needs_torch
def test_empty_batch_and_extreme_values_match_torch():
    tm, nm = _pair("lstm-2-bidir-bf", "float64")
    out, (h, c) = nm(nbgrad.zeros(0, 3, 3, dtype=nbgrad.float64))
    assert tuple(out.shape) == (0, 3, 8) and tuple(h.shape) == tuple(c.shape) == (4, 0, 4)
    # saturated gates (|pre-activation| ~ 1e4): no overflow to NaN, as in PyTorch
    x = np.random.default_rng(9).standard_normal((2, 4, 3)) * 1e4
    xt, xn = _leaf(torch, x, "float64"), _leaf(nbgrad, x, "float64")
    _compare(
        tm(xt), nm(xn), [xt] + list(tm.parameters()), [xn] + list(nm.parameters()), TOL["float64"]
    )


@needs_torch
@pytest.mark.parametrize("name", ["lstm", "gru", "rnn-nobias-relu"])
def test_nan_propagates_like_torch(name):
    tm, nm = _pair(name, "float64")
    x = np.random.default_rng(10).standard_normal((4, 2, 3))
    x[1, 0, 2] = np.nan
    outs = []
    for T, m in ((torch, tm), (nbgrad, nm)):
        xt = _leaf(T, x, "float64")
        out = m(xt)[0]
        out[:, 1].sum().backward()  # batch entry 1 has no NaN: its gradient stays finite
        outs.append((out.detach().numpy(), xt.grad.numpy()))
    for a, b in zip(*outs):
        np.testing.assert_array_equal(np.isnan(b), np.isnan(a))
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


# -- the float32 gate functions (NOTE [vectorised gates] in kernels/cpu/rnn.py) ------------------


def test_float32_gate_functions_are_as_accurate_as_libm():
    from numba import njit

    from nbgrad.kernels.cpu.rnn import _sigmoid, _tanh

    @njit
    def run(x, s, t):
        for i in range(x.size):
            s[i] = _sigmoid(x[i])
            t[i] = _tanh(x[i])

    rng = np.random.default_rng(0)
    x = np.concatenate(
        [rng.standard_normal(20000) * s for s in (1e-3, 0.1, 0.6, 1, 3, 10, 30, 100)]
        + [np.float32([0, -0.0, 1e-40, 0.625, -0.625, 87, -87, 88.5, -88.5, 1e4, -1e4])]
    ).astype(np.float32)
    s, t = np.empty_like(x), np.empty_like(x)
    run(x, s, t)
    xd = x.astype(np.float64)
    with np.errstate(over="ignore"):
        for got, want in ((s, 1 / (1 + np.exp(-xd))), (t, np.tanh(xd))):
            normal = np.abs(want) > np.finfo(np.float32).tiny
            rel = np.abs(got[normal] - want[normal]) / np.abs(want[normal])
            assert rel.max() < 3e-7
            assert np.abs(got - want).max() < 1e-7
    assert s[x == 1e4].item() == 1.0 and s[x == -1e4].item() == 0.0
    assert t[x == 1e4].item() == 1.0 and t[x == -1e4].item() == -1.0
    assert np.all(t[x == 0] == 0) and np.all(s[x == 0] == 0.5)  # (the sign of zero: nsz)
    special = np.float32([np.nan, np.inf, -np.inf])
    s, t = np.empty_like(special), np.empty_like(special)
    run(special, s, t)
    assert np.isnan(s[0]) and np.isnan(t[0])
    assert s[1:].tolist() == [1.0, 0.0] and t[1:].tolist() == [1.0, -1.0]
