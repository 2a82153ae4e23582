"""Table-driven op tests: values vs numpy, gradients vs float64 finite differences (directional
for every sample, full Jacobian on the smallest), second derivatives, and torch as oracle."""

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad
from nbgrad.ops.registry import REGISTRY
from nbgrad.testing import op_db
from nbgrad.testing.numeric import directional_check, full_jacobian_check
from nbgrad.testing.op_db import OP_DB, arrays_of, materialize

CASES = [(info, i, s) for info in OP_DB for i, s in enumerate(info.samples)]
GRAD = [c for c in CASES if c[0].grad]


def case_id(c):
    info, i, _ = c
    return "%s-%d-%d" % (info.name, OP_DB.index(info), i)


def _outs(r):
    if isinstance(r, (tuple, list)):
        return list(r)
    return [r]


def _np(x):
    return np.asarray(x)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_forward_matches_numpy(case, dtype):
    info, _, sample = case
    _, args = materialize(nbgrad, sample, dtype, False)
    got = _outs(info.fn(nbgrad, *args))
    ref = info.ref(
        *[
            a.astype(getattr(np, dtype)) if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
            for a in arrays_of(sample)
        ]
    )
    refs = list(ref) if isinstance(ref, tuple) else [ref]
    assert len(got) == len(refs)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    for g, r in zip(got, refs):
        r = np.asarray(r)
        assert g.shape == r.shape, (g.shape, r.shape)
        if r.dtype == bool or r.dtype.kind in "iu":
            np.testing.assert_array_equal(g.numpy(), r)
        else:
            assert g.dtype is getattr(nbgrad, dtype)
            np.testing.assert_allclose(g.detach().numpy(), r, **tol)


_diff_fn = op_db.leaf_fn


@pytest.mark.parametrize("case", GRAD, ids=[case_id(c) for c in GRAD])
def test_grad_directional(case):
    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    ok, num, ana = directional_check(_diff_fn(info, sample, args), leaves, **info.grad_tol)
    assert ok, (num, ana)


SMALLEST = {}
for _c in GRAD:
    SMALLEST.setdefault(id(_c[0]), _c)


@pytest.mark.parametrize(
    "case", list(SMALLEST.values()), ids=[case_id(c) for c in SMALLEST.values()]
)
def test_grad_full_jacobian(case):
    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    ok, num, ana = full_jacobian_check(_diff_fn(info, sample, args), leaves, **info.grad_tol)
    assert ok, "numerical:\n%s\nanalytical:\n%s" % (num, ana)


GRADGRAD = [c for c in SMALLEST.values() if c[0].gradgrad]


@pytest.mark.parametrize("case", GRADGRAD, ids=[case_id(c) for c in GRADGRAD])
def test_second_derivative_directional(case):
    """The backward formulas are differentiable: check d/dx of <v, J(x)> by finite differences."""
    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    fn = _diff_fn(info, sample, args)
    rng = np.random.default_rng(1)

    def first(*xs):
        outs = [o for o in _outs(fn(*xs)) if o.dtype.is_floating_point]
        vs = [nbgrad.tensor(rng.standard_normal(o.shape)) for o in outs]
        rng.bit_generator.state = np.random.default_rng(1).bit_generator.state
        total = sum(((o * o) * v).sum() for o, v in zip(outs, vs))  # squared: non-trivial 2nd order
        gs = nbgrad.autograd.grad(total, xs, create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    gs = first(*leaves)
    if not any(g.requires_grad for g in gs):
        # a step function: PyTorch's gradient is the constant zeros_like(grad), outside the graph
        assert all(not np.any(g.detach().numpy()) for g in gs), info.name
        return
    tol = dict(rtol=1e-4, atol=1e-6)
    tol.update(info.grad_tol)
    ok, num, ana = directional_check(first, leaves, **tol)
    assert ok, (num, ana)


@pytest.mark.parametrize("case", GRAD, ids=[case_id(c) for c in GRAD])
def test_jvp_vjp_consistency(case):
    """<v, J u> from forward-mode AD equals <J^T v, u> from reverse mode (no numerics)."""
    import nbgrad.autograd.forward_ad as fwAD

    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    fn = _diff_fn(info, sample, args)
    rng = np.random.default_rng(5)
    us = [nbgrad.tensor(rng.standard_normal(tuple(x.shape))) for x in leaves]
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x.detach(), u) for x, u in zip(leaves, us)]
        outs = [o for o in _outs(fn(*duals)) if o.dtype.is_floating_point]
        tangents = [fwAD.unpack_dual(o).tangent for o in outs]
    outs_r = [o for o in _outs(fn(*leaves)) if o.dtype.is_floating_point]
    vs = [nbgrad.tensor(rng.standard_normal(tuple(o.shape))) for o in outs_r]
    forward = sum(
        float((t.numpy() * v.numpy()).sum()) for t, v in zip(tangents, vs) if t is not None
    )
    live = [(o, v) for o, v in zip(outs_r, vs) if o.requires_grad]
    grads = (
        nbgrad.autograd.grad([o for o, _ in live], leaves, [v for _, v in live], allow_unused=True)
        if live
        else [None] * len(leaves)
    )
    reverse = sum(float((g.numpy() * u.numpy()).sum()) for g, u in zip(grads, us) if g is not None)
    assert forward == pytest.approx(reverse, rel=1e-7, abs=1e-9)


@pytest.mark.parametrize("case", GRADGRAD, ids=[case_id(c) for c in GRADGRAD])
def test_forward_over_reverse_matches_reverse_over_reverse(case):
    """H u from forward-mode AD through the backward graph (tangents through every backward
    formula, saved outputs included) equals the double-backward H u."""
    import nbgrad.autograd.forward_ad as fwAD

    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    fn = _diff_fn(info, sample, args)
    rng = np.random.default_rng(11)
    us = [nbgrad.tensor(rng.standard_normal(tuple(x.shape))) for x in leaves]
    ws = None

    def scalar(*xs):
        nonlocal ws
        outs = [o for o in _outs(fn(*xs)) if o.dtype.is_floating_point]
        if ws is None:
            ws = [nbgrad.tensor(rng.standard_normal(tuple(o.shape))) for o in outs]
        return sum(((o * o) * w).sum() for o, w in zip(outs, ws))

    gs = nbgrad.autograd.grad(scalar(*leaves), leaves, create_graph=True, allow_unused=True)
    live = [(g, u) for g, u in zip(gs, us) if g is not None and g.requires_grad]
    if not live:
        return
    want = nbgrad.autograd.grad(sum((g * u).sum() for g, u in live), leaves, allow_unused=True)
    with fwAD.dual_level():
        duals = [fwAD.make_dual(x.detach().requires_grad_(True), u) for x, u in zip(leaves, us)]
        gd = nbgrad.autograd.grad(scalar(*duals), duals, create_graph=True, allow_unused=True)
        got = [fwAD.unpack_dual(g).tangent if g is not None else None for g in gd]
    for g, w in zip(got, want):
        if w is None:
            continue
        assert g is not None
        np.testing.assert_allclose(g.detach().numpy(), w.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("case", GRAD, ids=[case_id(c) for c in GRAD])
def test_batched_grad_matches_rows(case):
    """autograd.grad(is_grads_batched=True) equals one unbatched grad per row of v, for every op
    (batch-aware backward or the per-sample fallback: NOTE [batched backward])."""
    info, _, sample = case
    leaves, args = materialize(nbgrad, sample, "float64", True)
    outs = [o for o in _outs(_diff_fn(info, sample, args)(*leaves)) if o.requires_grad]
    if not outs:
        return
    rng = np.random.default_rng(7)
    vs = [nbgrad.tensor(rng.standard_normal((3,) + tuple(o.shape))) for o in outs]
    got = nbgrad.autograd.grad(
        outs, leaves, vs, retain_graph=True, allow_unused=True, is_grads_batched=True
    )
    for k, (x, g) in enumerate(zip(leaves, got)):
        rows = [
            nbgrad.autograd.grad(
                outs, leaves, [v[b] for v in vs], retain_graph=True, allow_unused=True
            )[k]
            for b in range(3)
        ]
        if all(r is None for r in rows):
            assert g is None or not np.any(g.numpy())
            continue
        want = np.stack([r.numpy() if r is not None else np.zeros(x.shape) for r in rows])
        assert tuple(g.shape) == want.shape
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-12, atol=1e-13)


@needs_torch
@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_matches_torch(case):
    info, _, sample = case
    n_leaves, n_args = materialize(nbgrad, sample, "float64", info.grad)
    t_leaves, t_args = materialize(torch, sample, "float64", info.grad)
    n_out = _outs(info.fn(nbgrad, *n_args))
    t_out = _outs(info.fn(torch, *t_args))
    assert len(n_out) == len(t_out)
    for a, b in zip(n_out, t_out):
        assert tuple(a.shape) == tuple(b.shape)
        assert a.dtype.name == str(b.dtype).replace("torch.", "")
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-10, atol=1e-12)
        if b.grad_fn is not None:
            assert a.grad_fn is not None and a.grad_fn.name() == b.grad_fn.name()
        else:
            assert a.grad_fn is None
    if info.grad and n_leaves:
        rng = np.random.default_rng(3)
        diff = [i for i, o in enumerate(t_out) if o.requires_grad]
        vs = [rng.standard_normal(tuple(t_out[i].shape)) for i in diff]
        ng = nbgrad.autograd.grad(
            [n_out[i] for i in diff], n_leaves, [nbgrad.tensor(v) for v in vs], allow_unused=True
        )
        tg = torch.autograd.grad(
            [t_out[i] for i in diff], t_leaves, [torch.tensor(v) for v in vs], allow_unused=True
        )
        for a, b in zip(ng, tg):
            if b is None:
                assert a is None or not np.any(a.numpy())
            else:
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-9, atol=1e-12)


def test_every_registry_op_has_an_op_db_entry():
    # ops users create with nbgrad.elementwise are theirs, not part of the built-in registry
    builtin = {n for n in REGISTRY if not n.startswith("elementwise.")}
    missing = builtin - op_db.op_names()
    assert not missing, "ops without an op_db entry: %s" % sorted(missing)


def test_every_differentiable_op_is_grad_tested():
    tested = {info.name for info in OP_DB if info.grad}
    missing = {
        n for n, op in REGISTRY.items() if op.differentiable and not n.startswith("elementwise.")
    } - tested
    allowed = {"argmax", "argmin", "nonzero"}
    assert not (missing - allowed), sorted(missing - allowed)
