"""The op table (nbgrad/testing/op_db.py) on ``device='cuda'``, compared with the CPU.

For every registry op's samples: the same inputs copied to the device, the forward values, the
first derivatives (backward of ``sum(out * w)`` for fixed random ``w``) and, where the CPU table
checks second order, the gradient of ``sum(grad * v)`` built with ``create_graph`` -- all equal
to the CPU results (float64; float32 forward too).  Runs under the simulator
(``NUMBA_ENABLE_CUDASIM=1``, tests/test_cuda_suite.py) or on a GPU (``NBGRAD_CUDA_TESTS=gpu``).

``CUDA_PENDING``: registry ops that do not run on CUDA yet.  Each is a strict xfail, so an op
that starts working fails here until it leaves the list; ``test_no_op_is_pending`` is the
completeness check of issue 15 (it fails for any registry op without a CUDA path, and is marked
as the known gap while the list is not empty).
"""

import numpy as np
import pytest

import nbgrad
from nbgrad.ops.registry import REGISTRY
from nbgrad.testing import op_db
from nbgrad.testing.op_db import OP_DB, materialize

# case ids (op-entry-sample) that do not run on CUDA yet, per test
PENDING_CASES = {
    "all-114-0",
    "allclose-85-0",
    "any-115-0",
    "argsort-164-0",
    "argsort-164-1",
    "argwhere-214-0",
    "batch_norm-273-0",
    "cat-130-0",
    "cat-130-1",
    "chunk-134-0",
    "clamp_max.Tensor-63-0",
    "cross_entropy-280-0",
    "cummax-170-0",
    "cummax-170-1",
    "cummin-171-0",
    "cummin-171-1",
    "cumprod-200-0",
    "cumprod-202-0",
    "cumsum-112-0",
    "cumsum-113-0",
    "diag-176-0",
    "diag-178-1",
    "diagonal-173-0",
    "diagonal-175-1",
    "einsum-186-0",
    "embedding-261-0",
    "embedding_bag-357-0",
    "equal-84-0",
    "flip-136-0",
    "flip-136-1",
    "floor_divide-83-0",
    "fused_gru_cell-267-0",
    "fused_gru_cell-268-0",
    "fused_lstm_cell-264-0",
    "fused_lstm_cell-266-0",
    "fused_rnn_relu_cell-270-0",
    "fused_rnn_tanh_cell-269-0",
    "gather-155-0",
    "gelu-231-1",
    "getitem-148-0",
    "getitem-153-0",
    "glu-317-0",
    "group_norm-338-0",
    "hardtanh-313-0",
    "index_add-215-0",
    "index_add-216-0",
    "index_copy-217-0",
    "index_fill-218-0",
    "index_fill-219-0",
    "index_select-158-0",
    "isclose-86-0",
    "isfinite-82-0",
    "isnan-80-0",
    "kthvalue-168-0",
    "kthvalue-169-1",
    "layer_norm-271-0",
    "lerp.Tensor-55-1",
    "logsumexp-111-0",
    "logsumexp-111-1",
    "masked_fill.Tensor-58-0",
    "masked_scatter-220-0",
    "masked_scatter-220-1",
    "masked_select-160-0",
    "max-96-0",
    "max-98-0",
    "max_pool2d-253-0",
    "mean-90-0",
    "mean-91-0",
    "min-100-0",
    "min-99-0",
    "mish-312-1",
    "msort-165-0",
    "msort-165-1",
    "narrow-139-0",
    "narrow-139-1",
    "nll_loss-286-0",
    "nn.adaptive_avg_pool2d_1x1-347-0",
    "nn.bilinear-244-0",
    "nn.bilinear-245-0",
    "nn.cosine_embedding_loss-334-0",
    "nn.instance_norm-340-0",
    "nn.instance_norm-340-1",
    "nn.l1_loss-279-0",
    "nn.margin_ranking_loss-336-0",
    "nn.normalize-307-0",
    "nn.sdpa_math-297-0",
    "nn.sdpa_math-299-0",
    "nn.smooth_l1_loss_beta0-322-0",
    "nonzero-159-0",
    "pad.circular-306-0",
    "pad.reflect-303-0",
    "pad.replicate-305-0",
    "pow.Tensor-44-0",
    "pow.Tensor-44-1",
    "prelu-316-2",
    "repeat-145-0",
    "repeat_interleave-213-0",
    "roll-137-0",
    "roll-138-0",
    "rpow-45-0",
    "scaled_dot_product_attention-292-0",
    "scatter-156-0",
    "scatter_add-157-0",
    "scatter_reduce-221-0",
    "scatter_reduce-230-0",
    "select-207-0",
    "select-208-0",
    "setitem-154-0",
    "sort-161-0",
    "sort-163-0",
    "split-132-0",
    "split-133-0",
    "stack-131-0",
    "std-106-0",
    "std-107-0",
    "std_mean-205-0",
    "std_mean-206-0",
    "tile-209-0",
    "tile-210-1",
    "topk-166-0",
    "topk-167-1",
    "trace-179-0",
    "trace-179-1",
    "tril-140-0",
    "tril-140-1",
    "triu-141-0",
    "triu-141-1",
    "unbind-135-0",
    "unique-172-0",
    "var-104-0",
    "var-105-0",
    "var_mean-203-0",
    "var_mean-204-0",
    "where-56-1",
    "xlogy-197-0",
    "xlogy-197-1",
    "xlogy.Scalar_Other-199-0",
}
PENDING_F32 = {
    "all-114-0",
    "allclose-85-0",
    "any-115-0",
    "argsort-164-0",
    "argsort-164-1",
    "argwhere-214-0",
    "batch_norm-273-0",
    "cat-130-0",
    "cat-130-1",
    "cummax-170-0",
    "cummax-170-1",
    "cummin-171-0",
    "cummin-171-1",
    "cumprod-200-0",
    "cumprod-202-0",
    "cumsum-112-0",
    "cumsum-113-0",
    "diag-176-0",
    "diag-178-1",
    "diagonal-173-0",
    "diagonal-175-1",
    "div.trunc-68-0",
    "einsum-186-0",
    "equal-84-0",
    "flip-136-0",
    "flip-136-1",
    "floor_divide-83-0",
    "fused_gru_cell-267-0",
    "fused_gru_cell-268-0",
    "fused_lstm_cell-264-0",
    "fused_lstm_cell-266-0",
    "fused_rnn_relu_cell-270-0",
    "fused_rnn_tanh_cell-269-0",
    "gather-155-0",
    "gelu-231-1",
    "getitem-153-0",
    "index_add-215-0",
    "index_add-216-0",
    "index_copy-217-0",
    "index_fill-218-0",
    "index_fill-219-0",
    "index_select-158-0",
    "isclose-86-0",
    "isfinite-82-0",
    "isnan-80-0",
    "kthvalue-168-0",
    "kthvalue-169-1",
    "logsumexp-111-0",
    "logsumexp-111-1",
    "masked_fill.Tensor-58-0",
    "masked_scatter-220-0",
    "masked_scatter-220-1",
    "masked_select-160-0",
    "max-98-0",
    "mean-90-0",
    "mean-91-0",
    "min-100-0",
    "mish-312-1",
    "msort-165-0",
    "msort-165-1",
    "nn.adaptive_avg_pool2d_1x1-347-0",
    "nn.bilinear-244-0",
    "nn.bilinear-245-0",
    "nn.cosine_embedding_loss-334-0",
    "nn.instance_norm-340-0",
    "nn.instance_norm-340-1",
    "nn.l1_loss-279-0",
    "nn.margin_ranking_loss-336-0",
    "nn.sdpa_math-297-0",
    "nn.smooth_l1_loss_beta0-322-0",
    "nonzero-159-0",
    "prelu-316-2",
    "repeat-145-0",
    "repeat_interleave-213-0",
    "roll-137-0",
    "roll-138-0",
    "scatter-156-0",
    "scatter_add-157-0",
    "scatter_reduce-221-0",
    "scatter_reduce-230-0",
    "setitem-154-0",
    "sort-161-0",
    "sort-163-0",
    "stack-131-0",
    "std-106-0",
    "std-107-0",
    "std_mean-205-0",
    "std_mean-206-0",
    "tile-209-0",
    "tile-210-1",
    "topk-166-0",
    "topk-167-1",
    "trace-179-0",
    "trace-179-1",
    "tril-140-0",
    "tril-140-1",
    "triu-141-0",
    "triu-141-1",
    "trunc-21-0",
    "trunc-21-3",
    "unique-172-0",
    "var-104-0",
    "var-105-0",
    "var_mean-203-0",
    "var_mean-204-0",
}
CUDA_PENDING = {c.rsplit("-", 2)[0] for c in PENDING_CASES | PENDING_F32}

CASES = [(info, i, s) for info in OP_DB for i, s in enumerate(info.samples)]
# a few samples per op keep the simulator run short: the first, the smallest, the last
_PICK = {}
for _c in CASES:
    _PICK.setdefault(_c[0].name, []).append(_c)
SELECTED = []
for _name, _cs in _PICK.items():
    chosen = {id(_cs[0]): _cs[0], id(_cs[-1]): _cs[-1]}
    SELECTED.extend(chosen.values())


def case_id(c):
    info, i, _ = c
    return "%s-%d-%d" % (info.name, OP_DB.index(info), i)


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _to_cuda(args):
    out = []
    for a in args:
        if isinstance(a, nbgrad.Tensor):
            out.append(a.detach().cuda().requires_grad_(a.requires_grad))
        elif isinstance(a, (list, tuple)) and any(isinstance(x, nbgrad.Tensor) for x in a):
            out.append(type(a)(_to_cuda(a)))
        else:
            out.append(a)
    return out


def _leaves(args):
    found = []
    for a in args:
        if isinstance(a, nbgrad.Tensor) and a.requires_grad:
            found.append(a)
        elif isinstance(a, (list, tuple)):
            found.extend(_leaves(a))
    return found


def _host(t):
    return t.detach().cpu().numpy() if t.is_cuda else t.detach().numpy()


def _check_close(got, want, tol, what):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_allclose(got, want, err_msg=what, equal_nan=True, **tol)


def _mark(c, pending):
    if case_id(c) in pending:
        return pytest.param(c, marks=pytest.mark.xfail(strict=True, reason="no CUDA path yet"))
    return c


@pytest.mark.parametrize(
    "case", [_mark(c, PENDING_CASES) for c in SELECTED], ids=[case_id(c) for c in SELECTED]
)
def test_op_on_cuda_matches_cpu(case):
    info, _, sample = case
    tol = dict(rtol=1e-9, atol=1e-11)
    # forward and first derivatives, float64
    _, args = materialize(nbgrad, sample, "float64", True)
    cargs = _to_cuda(args)
    ref = _outs(info.fn(nbgrad, *args))
    got = _outs(info.fn(nbgrad, *cargs))
    assert len(got) == len(ref)
    for g, r in zip(got, ref):
        if isinstance(r, nbgrad.Tensor):
            assert g.is_cuda, "%s returned a CPU tensor" % info.name
            assert g.dtype is r.dtype
            _check_close(_host(g), _host(r), tol, "forward")
        else:
            assert g == r
    leaves, cleaves = _leaves(args), _leaves(cargs)
    pairs = [
        (r, g)
        for r, g in zip(ref, got)
        if isinstance(r, nbgrad.Tensor) and r.requires_grad and r.dtype.is_floating_point
    ]
    if not info.grad or not leaves or not pairs:
        return
    rng = np.random.default_rng(3)
    ws = [rng.standard_normal(tuple(r.shape)) for r, _ in pairs]
    loss_cpu = sum((r * nbgrad.tensor(w)).sum() for (r, _), w in zip(pairs, ws))
    loss_gpu = sum((g * nbgrad.tensor(w).cuda()).sum() for (_, g), w in zip(pairs, ws))
    second = info.gradgrad and info in _GRADGRAD
    gr = nbgrad.autograd.grad(loss_cpu, leaves, allow_unused=True, create_graph=second)
    gg = nbgrad.autograd.grad(loss_gpu, cleaves, allow_unused=True, create_graph=second)
    for a, b in zip(gg, gr):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.is_cuda
            _check_close(_host(a), _host(b), tol, "gradient")
    if not second:
        return
    used = [(a, b, lc, lg) for a, b, lc, lg in zip(gg, gr, leaves, cleaves) if b is not None]
    used = [u for u in used if u[1].requires_grad]
    if not used:
        return
    vs = [rng.standard_normal(tuple(b.shape)) for _, b, _, _ in used]
    s_cpu = sum((b * nbgrad.tensor(v)).sum() for (_, b, _, _), v in zip(used, vs))
    s_gpu = sum((a * nbgrad.tensor(v).cuda()).sum() for (a, _, _, _), v in zip(used, vs))
    hr = nbgrad.autograd.grad(s_cpu, leaves, allow_unused=True)
    hg = nbgrad.autograd.grad(s_gpu, cleaves, allow_unused=True)
    for a, b in zip(hg, hr):
        if b is None or a is None:
            continue  # (a zero second derivative may be None on one side, as PyTorch's)
        _check_close(_host(a), _host(b), tol, "second derivative")


# second order on the smallest sample of each op, as the CPU table does
_GRADGRAD = set()
for _name, _cs in _PICK.items():
    if _cs[0][0].gradgrad:
        _GRADGRAD.add(_cs[0][0])


@pytest.mark.parametrize("case", [_mark(c, PENDING_F32) for c in SELECTED], ids=case_id)
def test_op_on_cuda_float32_forward(case):
    info, _, sample = case
    if "float32" not in info.dtypes:
        pytest.skip("float64-only op")
    _, args = materialize(nbgrad, sample, "float32", False)
    ref = _outs(info.fn(nbgrad, *args))
    got = _outs(info.fn(nbgrad, *_to_cuda(args)))
    for g, r in zip(got, ref):
        if isinstance(r, nbgrad.Tensor):
            assert g.is_cuda and g.dtype is r.dtype
            _check_close(_host(g), _host(r), dict(rtol=2e-5, atol=2e-6), "forward float32")


def test_every_registry_op_is_in_the_cuda_table():
    builtin = {n for n in REGISTRY if not n.startswith("elementwise.")}
    missing = builtin - op_db.op_names()
    assert not missing, sorted(missing)
    assert CUDA_PENDING <= {info.name for info in OP_DB}, sorted(CUDA_PENDING)


@pytest.mark.xfail(strict=True, reason="issue 15: registry ops still without a CUDA path")
def test_no_op_is_pending():
    assert not CUDA_PENDING, sorted(CUDA_PENDING)
