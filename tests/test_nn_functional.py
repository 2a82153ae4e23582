"""nbgrad.nn.functional: the op-table checks of test_ops.py over OP_DB_NN (values vs numpy,
float64 finite-difference gradients, second derivatives, forward/reverse consistency, torch as
oracle for values, gradients and grad_fn names), plus numerical-stability, error-message,
dropout, batch-norm running-stat and fused-vs-create_graph backward tests."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.nn.functional as F
from nbgrad.ops.registry import REGISTRY
from nbgrad.testing import op_db
from nbgrad.testing.op_db import materialize
from nbgrad.testing.op_db_nn import OP_DB_NN

# The generic checks (values vs numpy, float64 gradients, second order, JVP/VJP consistency,
# torch values/grads/node names) run over OP_DB_NN in tests/test_ops.py, which includes it;
# this file adds what is specific to nn.functional.
CASES = [(info, i, s) for info in OP_DB_NN for i, s in enumerate(info.samples)]
GRAD = [c for c in CASES if c[0].grad]


def case_id(c):
    info, i, _ = c
    return "%s-%d-%d" % (info.name, OP_DB_NN.index(info), i)


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


_diff_fn = op_db.leaf_fn


SMALLEST = {}
for _c in GRAD:
    SMALLEST.setdefault(id(_c[0]), _c)


@pytest.mark.parametrize(
    "case", list(SMALLEST.values()), ids=[case_id(c) for c in SMALLEST.values()]
)
def test_fused_backward_equals_create_graph_backward(case):
    """The Numba backward (create_graph=False) and the differentiable one agree."""
    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    fn = _diff_fn(info, sample, args)
    outs = [o for o in _outs(fn(*leaves)) if o.dtype.is_floating_point and o.requires_grad]
    rng = np.random.default_rng(2)
    vs = [nbgrad.tensor(rng.standard_normal(tuple(o.shape))) for o in outs]
    fused = nbgrad.autograd.grad(outs, leaves, vs, retain_graph=True, allow_unused=True)
    graph = nbgrad.autograd.grad(outs, leaves, vs, create_graph=True, allow_unused=True)
    for a, b in zip(fused, graph):
        if a is None or b is None:
            assert (a is None or not np.any(a.numpy())) and (b is None or not np.any(b.numpy()))
        else:
            np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_every_nn_registry_op_has_an_entry():
    ours = {n for n, op in REGISTRY.items() if op.kind == "nn"} | {
        "gelu",
        "gelu.tanh",
        "silu",
        "softplus",
        "leaky_relu",
    }
    assert ours <= set(REGISTRY)
    missing = ours - {info.name for info in OP_DB_NN if info.grad}
    assert not missing, sorted(missing)


# ---------------------------------------------------------------------------------------------
# numerical stability

BIG = np.array([[1e4, -1e4, 0.0, 5e3], [-1e4, -1e4, -1e4, -1e4], [1e4, 1e4, -1e4, 1e4]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cross_entropy_large_logits_finite(dtype):
    x = nbgrad.tensor(BIG, dtype=getattr(nbgrad, dtype), requires_grad=True)
    t = nbgrad.tensor([1, 2, 2])
    for red in ("mean", "sum", "none"):
        loss = F.cross_entropy(x, t, reduction=red)
        assert np.all(np.isfinite(loss.detach().numpy()))
    loss = F.cross_entropy(x, t, label_smoothing=0.1)
    (g,) = nbgrad.autograd.grad(loss, x)
    assert np.isfinite(loss.item()) and np.all(np.isfinite(g.numpy()))
    lp = F.log_softmax(x, 1)
    assert np.all(np.isfinite(lp.detach().numpy()))


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_large_logits_match_torch(dtype, smoothing):
    t = [1, 2, 2]
    xn = nbgrad.tensor(BIG, dtype=getattr(nbgrad, dtype), requires_grad=True)
    xt = torch.tensor(BIG, dtype=getattr(torch, dtype), requires_grad=True)
    ln = F.cross_entropy(xn, nbgrad.tensor(t), label_smoothing=smoothing)
    lt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), label_smoothing=smoothing)
    rtol = 1e-6 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(ln.item(), lt.item(), rtol=rtol)
    ln.backward()
    lt.backward()
    np.testing.assert_allclose(xn.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=1e-7)
    np.testing.assert_allclose(
        F.log_softmax(xn, 1).detach().numpy(), torch.log_softmax(xt, 1).detach().numpy(), rtol=rtol
    )


def test_bce_with_logits_large_and_bce_clamp():
    x = nbgrad.tensor([1e4, -1e4, 50.0, -50.0], requires_grad=True)
    t = nbgrad.tensor([0.0, 1.0, 1.0, 0.0])
    loss = F.binary_cross_entropy_with_logits(x, t, reduction="none")
    np.testing.assert_allclose(loss.detach().numpy(), [1e4, 1e4, 0, 0], atol=1e-6)
    loss.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [1, -1, 0, 0], atol=1e-6)
    p = nbgrad.tensor([0.0, 1.0])
    out = F.binary_cross_entropy(p, nbgrad.tensor([1.0, 0.0]), reduction="none")
    np.testing.assert_allclose(out.numpy(), [100, 100])  # log clamped at -100, like PyTorch


# ---------------------------------------------------------------------------------------------
# errors (PyTorch's types and messages, raised before any kernel runs)


def _raises(exc, match, fn):
    with pytest.raises(exc, match=match):
        fn()


def test_loss_errors():
    x = nbgrad.randn(3, 4)
    _raises(
        IndexError,
        "Target 5 is out of bounds.",
        lambda: F.cross_entropy(x, nbgrad.tensor([0, 5, 1])),
    )
    _raises(
        IndexError, "Target -1 is out of bounds.", lambda: F.nll_loss(x, nbgrad.tensor([0, -1, 1]))
    )
    F.cross_entropy(x, nbgrad.tensor([0, -100, 1]))  # ignore_index is not out of bounds
    _raises(
        IndexError,
        "Target 7 is out of bounds.",
        lambda: F.nll_loss(nbgrad.randn(2, 3, 4, 4), nbgrad.full((2, 4, 4), 7)),
    )
    _raises(
        ValueError,
        r"Expected input batch_size \(3\) to match target batch_size \(2\)\.",
        lambda: F.cross_entropy(x, nbgrad.tensor([0, 1])),
    )
    _raises(
        RuntimeError,
        "expected target dtype to be Long or Byte, but got Float",
        lambda: F.cross_entropy(x, nbgrad.tensor([0.0, 1, 2])),
    )
    _raises(
        RuntimeError,
        "0D or 1D target tensor expected, multi-target not supported",
        lambda: F.nll_loss(x, nbgrad.zeros(3, 2, dtype=nbgrad.int64)),
    )
    _raises(
        RuntimeError,
        r"Expected target size \[2, 4\], got \[2, 5\]",
        lambda: F.cross_entropy(nbgrad.randn(2, 3, 4), nbgrad.zeros(2, 5, dtype=nbgrad.int64)),
    )
    _raises(
        RuntimeError,
        "weight tensor should be defined either for all 4 classes or no "
        r"classes but got weight tensor of shape: \[3\]",
        lambda: F.cross_entropy(x, nbgrad.tensor([0, 1, 2]), weight=nbgrad.ones(3)),
    )
    _raises(
        ValueError,
        "bogus is not a valid value for reduction",
        lambda: F.cross_entropy(x, nbgrad.tensor([0, 1, 2]), reduction="bogus"),
    )
    _raises(
        RuntimeError,
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5",
        lambda: F.cross_entropy(x, nbgrad.tensor([0, 1, 2]), label_smoothing=1.5),
    )
    _raises(
        RuntimeError,
        "Expected floating point type for target with class probabilities, got Long",
        lambda: F.cross_entropy(x, nbgrad.zeros(3, 4, dtype=nbgrad.int64)),
    )
    _raises(
        ValueError,
        "is deprecated. Please ensure they have the same size.",
        lambda: F.binary_cross_entropy(x.sigmoid(), nbgrad.rand(3, 5)),
    )
    _raises(
        RuntimeError,
        "all elements of input should be between 0 and 1",
        lambda: F.binary_cross_entropy(x * 10, nbgrad.rand(3, 4)),
    )
    _raises(
        ValueError,
        r"Target size \(torch.Size\(\[3, 5\]\)\) must be the same as input "
        r"size \(torch.Size\(\[3, 4\]\)\)",
        lambda: F.binary_cross_entropy_with_logits(x, nbgrad.rand(3, 5)),
    )
    _raises(
        RuntimeError,
        "not differentiable with respect to argument 'weight'",
        lambda: F.nll_loss(x, nbgrad.tensor([0, 1, 2]), weight=nbgrad.ones(4, requires_grad=True)),
    )
    with pytest.warns(UserWarning, match="Using a target size"):
        _raises(
            RuntimeError,
            r"The size of tensor a \(3\) must match the size of tensor b "
            r"\(4\) at non-singleton dimension 0",
            lambda: F.mse_loss(x, nbgrad.randn(4, 4)),
        )


def test_layer_errors():
    _raises(
        RuntimeError,
        r"Given groups=1, weight of size \[8, 3, 3, 3\], expected "
        r"input\[2, 1, 5, 5\] to have 3 channels, but got 1 channels instead",
        lambda: F.conv2d(nbgrad.randn(2, 1, 5, 5), nbgrad.randn(8, 3, 3, 3)),
    )
    _raises(
        RuntimeError,
        r"Calculated padded input size per channel: \(2 x 2\). Kernel size: "
        r"\(3 x 3\). Kernel size can't be greater than actual input size",
        lambda: F.conv2d(nbgrad.randn(2, 1, 2, 2), nbgrad.randn(8, 1, 3, 3)),
    )
    _raises(
        RuntimeError,
        r"Given groups=4, expected weight to be divisible by 4 at dimension 0",
        lambda: F.conv2d(nbgrad.randn(2, 4, 5, 5), nbgrad.randn(6, 2, 3, 3), groups=4),
    )
    _raises(
        RuntimeError,
        r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d",
        lambda: F.conv2d(nbgrad.randn(5, 5), nbgrad.randn(8, 1, 3, 3)),
    )
    _raises(
        RuntimeError,
        "expected bias to be 1-dimensional with 8 elements",
        lambda: F.conv2d(nbgrad.randn(2, 1, 5, 5), nbgrad.randn(8, 1, 3, 3), nbgrad.randn(7)),
    )
    _raises(
        RuntimeError,
        "padding='same' is not supported for strided convolutions",
        lambda: F.conv2d(
            nbgrad.randn(2, 1, 5, 5), nbgrad.randn(8, 1, 3, 3), stride=2, padding="same"
        ),
    )
    _raises(
        RuntimeError,
        "Invalid padding string: 'foo'",
        lambda: F.conv2d(nbgrad.randn(2, 1, 5, 5), nbgrad.randn(8, 1, 3, 3), padding="foo"),
    )
    _raises(
        RuntimeError,
        "non-positive stride is not supported",
        lambda: F.conv1d(nbgrad.randn(2, 1, 5), nbgrad.randn(8, 1, 3), stride=0),
    )
    _raises(
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=2, "
        "kernel_size=3 and dilation=1",
        lambda: F.max_pool2d(nbgrad.randn(2, 1, 5, 5), 3, padding=2),
    )
    _raises(
        RuntimeError,
        r"Given input size: \(1x2x2\). Calculated output size: \(1x0x0\). "
        "Output size is too small",
        lambda: F.avg_pool2d(nbgrad.randn(2, 1, 2, 2), 3),
    )
    _raises(RuntimeError, "non-empty 3D or 4D", lambda: F.max_pool2d(nbgrad.randn(5, 5), 3))
    _raises(
        IndexError,
        "index out of range in self",
        lambda: F.embedding(nbgrad.tensor([0, 5]), nbgrad.randn(5, 3)),
    )
    _raises(
        AssertionError,
        "Padding_idx must be within num_embeddings",
        lambda: F.embedding(nbgrad.tensor([0, 1]), nbgrad.randn(5, 3), padding_idx=5),
    )
    _raises(
        RuntimeError,
        r"Given normalized_shape=\[5\], expected input with shape \[\*, 5\], "
        r"but got input of size\[3, 4\]",
        lambda: F.layer_norm(nbgrad.randn(3, 4), (5,)),
    )
    _raises(
        ValueError,
        "Expected more than 1 value per channel when training",
        lambda: F.batch_norm(nbgrad.randn(1, 3), nbgrad.zeros(3), nbgrad.ones(3), training=True),
    )
    _raises(
        ValueError,
        "dropout probability has to be between 0 and 1, but got 1.5",
        lambda: F.dropout(nbgrad.randn(3), 1.5),
    )
    _raises(
        RuntimeError,
        "Class values must be smaller than num_classes.",
        lambda: F.one_hot(nbgrad.tensor([0, 5]), 3),
    )
    _raises(
        RuntimeError,
        "Class values must be non-negative.",
        lambda: F.one_hot(nbgrad.tensor([0, -1]), 3),
    )
    _raises(
        RuntimeError,
        "Padding length must be divisible by 2",
        lambda: F.pad(nbgrad.randn(3, 4), (1,)),
    )
    _raises(
        RuntimeError,
        "Padding size should be less than the corresponding input dimension",
        lambda: F.pad(nbgrad.randn(2, 3, 4), (5, 5), mode="reflect"),
    )
    _raises(
        NotImplementedError,
        "Unrecognised padding mode foo",
        lambda: F.pad(nbgrad.randn(2, 3, 4), (1, 1), mode="foo"),
    )
    _raises(
        RuntimeError,
        "approximate argument must be either none or tanh.",
        lambda: F.gelu(nbgrad.randn(3), approximate="foo"),
    )
    _raises(
        RuntimeError,
        r"mat1 and mat2 shapes cannot be multiplied \(3x4 and 3x5\)",
        lambda: F.linear(nbgrad.randn(3, 4), nbgrad.randn(5, 3), nbgrad.randn(5)),
    )


# ---------------------------------------------------------------------------------------------
# behaviour beyond the op table


def test_dropout():
    nbgrad.manual_seed(0)
    x = nbgrad.ones(2000, requires_grad=True)
    y = F.dropout(x, 0.25)
    assert y.grad_fn.name() == "MulBackward0"
    vals = set(np.unique(y.detach().numpy()).tolist())
    assert vals <= {0.0, float(np.float32(1 / 0.75))}
    assert 0.2 < float((y.detach().numpy() == 0).mean()) < 0.3
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    assert not np.any(F.dropout(x, 1.0).detach().numpy())
    nbgrad.manual_seed(3)
    a = F.dropout(nbgrad.ones(50), 0.5).numpy()
    nbgrad.manual_seed(3)
    np.testing.assert_array_equal(a, F.dropout(nbgrad.ones(50), 0.5).numpy())
    z = nbgrad.ones(10)
    r = F.dropout(z, 0.5, inplace=True)
    assert r is z and set(np.unique(z.numpy()).tolist()) <= {0.0, 2.0}


@needs_torch
def test_batch_norm_running_stats_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 3, 5))
    rm_n, rv_n = nbgrad.zeros(3, dtype=nbgrad.float64), nbgrad.ones(3, dtype=nbgrad.float64)
    rm_t, rv_t = torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
    for _ in range(2):
        F.batch_norm(nbgrad.tensor(x), rm_n, rv_n, training=True, momentum=0.3)
        torch.nn.functional.batch_norm(torch.tensor(x), rm_t, rv_t, training=True, momentum=0.3)
    np.testing.assert_allclose(rm_n.numpy(), rm_t.numpy(), rtol=1e-12)
    np.testing.assert_allclose(rv_n.numpy(), rv_t.numpy(), rtol=1e-12)


@needs_torch
def test_max_pool_nan_and_indices_match_torch():
    a = np.array([[[[1.0, np.nan, 0.5], [3.0, 2.0, -1.0], [0.0, 4.0, 4.0]]]])
    n_out, n_idx = F.max_pool2d(nbgrad.tensor(a), 2, 1, return_indices=True)
    t_out, t_idx = torch.nn.functional.max_pool2d(torch.tensor(a), 2, 1, return_indices=True)
    np.testing.assert_array_equal(n_out.numpy(), t_out.numpy())
    np.testing.assert_array_equal(n_idx.numpy(), t_idx.numpy())


@needs_torch
def test_embedding_max_norm_matches_torch():
    w = np.random.default_rng(0).standard_normal((5, 3)) * 3
    wn, wt = nbgrad.tensor(w), torch.tensor(w)
    idx = [0, 2, 2, 4]
    on = F.embedding(nbgrad.tensor(idx), wn, max_norm=1.0)
    ot = torch.nn.functional.embedding(torch.tensor(idx), wt, max_norm=1.0)
    np.testing.assert_allclose(on.numpy(), ot.numpy(), rtol=1e-10)
    np.testing.assert_allclose(wn.numpy(), wt.numpy(), rtol=1e-10)


def test_float32_kernels_and_no_grad():
    x = nbgrad.randn(2, 3, 6, 6)
    w = nbgrad.randn(4, 3, 3, 3)
    y = F.conv2d(x, w, padding=1)
    assert y.dtype is nbgrad.float32 and y.grad_fn is None
    with nbgrad.no_grad():
        xr = x.clone().requires_grad_(True)
        assert F.layer_norm(xr, (6,)).grad_fn is None


def test_inplace_activations():
    x = nbgrad.randn(5)
    ref = F.leaky_relu(x, 0.2).numpy()
    r = F.leaky_relu(x, 0.2, inplace=True)
    assert r is x
    np.testing.assert_allclose(x.numpy(), ref)
    y = nbgrad.randn(4)
    ref = F.relu(y).numpy()
    F.relu(y, inplace=True)
    np.testing.assert_allclose(y.numpy(), ref)


@needs_torch
@pytest.mark.parametrize("create_graph", [False, True])
def test_embedding_padding_and_freq_grads_match_torch(create_graph):
    w = np.random.default_rng(0).standard_normal((4, 3))
    idx = [[0, 1, 3], [1, 1, 2]]
    g = np.random.default_rng(1).standard_normal((2, 3, 3))
    for kw in (
        dict(padding_idx=1),
        dict(scale_grad_by_freq=True),
        dict(padding_idx=-1, scale_grad_by_freq=True),
    ):
        wn = nbgrad.tensor(w, requires_grad=True)
        wt = torch.tensor(w, requires_grad=True)
        (gn,) = nbgrad.autograd.grad(
            F.embedding(nbgrad.tensor(idx), wn, **kw),
            wn,
            nbgrad.tensor(g),
            create_graph=create_graph,
        )
        (gt,) = torch.autograd.grad(
            torch.nn.functional.embedding(torch.tensor(idx), wt, **kw), wt, torch.tensor(g)
        )
        np.testing.assert_allclose(gn.detach().numpy(), gt.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    "call, kernel",
    [
        (lambda T, x: T.nn.functional.layer_norm(x, (4,)), "LayerNormKernelImpl"),
        (lambda T, x: T.nn.functional.mse_loss(x, x), "mse_cpu"),
        (lambda T, x: T.nn.functional.batch_norm(x, None, None, training=True), "batch_norm"),
        (
            lambda T, x: T.nn.functional.cross_entropy(x.reshape(2, 16), T.zeros(2).long()),
            "log_softmax_lastdim_kernel_impl",
        ),
        (
            lambda T, x: T.nn.functional.nll_loss(x.reshape(2, 16), T.zeros(2).long()),
            "nll_loss_out_frame",
        ),
    ],
)
def test_integer_inputs_raise_pytorchs_not_implemented_error(call, kernel):
    for T in (nbgrad,) + ((torch,) if torch is not None else ()):
        x = T.ones(1, 2, 4, 4, dtype=T.long)
        with pytest.raises(NotImplementedError, match="\"%s\" not implemented for 'Long'" % kernel):
            call(T, x)
