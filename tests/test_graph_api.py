"""``autograd.graph``: GradientEdge, get_gradient_edge, register_multi_grad_hook,
allow_mutation_on_saved_tensors, disable_saved_tensors_hooks -- the same assertions run on
nbgrad and, when installed, on PyTorch 2.13."""

import pytest
from conftest import needs_torch, torch

import nbgrad


@pytest.fixture(params=["nbgrad", pytest.param("torch", marks=needs_torch)])
def T(request):
    return nbgrad if request.param == "nbgrad" else torch


def test_multi_grad_hook_all_waits_for_what_this_backward_reaches(T):
    g = T.autograd.graph
    a = T.rand(2, 3, requires_grad=True)
    b = T.rand(2, 3, requires_grad=True)
    c, d = a * b, a * b
    log = []
    h = g.register_multi_grad_hook((a, b, c, d), lambda gs: log.append([x is not None for x in gs]))
    c.sum().backward(retain_graph=True)
    c.sum().backward(inputs=(a,), retain_graph=True)
    h.remove()
    c.sum().backward(retain_graph=True)  # removed: no call
    assert log == [[True, True, True, False], [True, False, True, False]]
    # autograd.grad over non-leaves: the tensors whose nodes the backward runs
    h = g.register_multi_grad_hook((c, d), lambda gs: log.append([x is not None for x in gs]))
    T.autograd.grad(c.sum(), (a,), retain_graph=True)
    assert log[-1] == [True, False]
    h.remove()


def test_multi_grad_hook_all_gets_the_gradients(T):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    got = []
    T.autograd.graph.register_multi_grad_hook((a, b), lambda gs: got.append(gs))
    (a * b).sum().backward()
    assert len(got) == 1
    assert got[0][0].tolist() == [3.0, 4.0] and got[0][1].tolist() == [1.0, 2.0]


def test_multi_grad_hook_leaf_under_autograd_grad_is_refused(T):
    a = T.rand(2, requires_grad=True)
    T.autograd.graph.register_multi_grad_hook((a,), lambda gs: None)
    with pytest.raises(RuntimeError, match="A leaf node was passed to _will_engine_execute_node"):
        T.autograd.grad((a * 2).sum(), (a,))


def test_multi_grad_hook_any_fires_once_per_backward(T):
    a = T.rand(2, 3, requires_grad=True)
    b = T.rand(2, 3, requires_grad=True)
    log = []
    T.autograd.graph.register_multi_grad_hook((a, b), lambda g: log.append(g.shape), mode="any")
    (a * b).sum().backward()
    (a * b).sum().backward()
    assert [tuple(s) for s in log] == [(2, 3), (2, 3)]
    with pytest.raises(ValueError, match="Expects mode to be one of"):
        T.autograd.graph.register_multi_grad_hook((a,), lambda g: None, mode="some")


def test_gradient_edge(T):
    g = T.autograd.graph
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    e = g.get_gradient_edge(y)
    assert isinstance(e, g.GradientEdge) and e.output_nr == 0 and e.node is y.grad_fn
    assert g.get_gradient_edge(x).node.name() == "torch::autograd::AccumulateGrad"
    z = (y * y).sum()
    (gy,) = T.autograd.grad(z, e, retain_graph=True)
    assert gy.tolist() == [6.0, 12.0]
    gx, gy2 = T.autograd.grad(z, [g.get_gradient_edge(x), y])
    assert gx.tolist() == [18.0, 36.0] and gy2.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError, match="not possible to get the gradient edge"):
        g.get_gradient_edge(T.ones(2))


def test_allow_mutation_on_saved_tensors(T):
    g = T.autograd.graph
    with g.allow_mutation_on_saved_tensors():
        a = T.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b**2).sum()
        b.sin_()  # b was saved by pow: cloned before the write
        out.backward()
        assert a.grad.tolist() == [[2.0] * 3] * 2
        c = a.clone()
        d = (c * c).sum()
        c[0] = 5.0
        c.zero_()
        d.backward()
        assert a.grad.tolist() == [[4.0] * 3] * 2
    with pytest.raises(RuntimeError, match="cannot be nested"):
        with g.allow_mutation_on_saved_tensors():
            with g.allow_mutation_on_saved_tensors():
                pass
    with g.allow_mutation_on_saved_tensors():
        x = T.ones(2, requires_grad=True)
        y = x.clone()
        z = (y * y).sum()
    with pytest.raises(AssertionError, match="Trying to backward outside"):
        z.backward()


def test_mutation_without_the_context_still_raises(T):
    a = T.ones(2, requires_grad=True)
    b = a.clone()
    out = (b**2).sum()
    b.sin_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_disable_saved_tensors_hooks(T):
    g = T.autograd.graph
    with g.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with g.saved_tensors_hooks(lambda x: x, lambda x: x):
                pass
        with g.disable_saved_tensors_hooks("inner"):
            with pytest.raises(RuntimeError, match="inner"):
                g.saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()
        with pytest.raises(RuntimeError, match="no hooks here"):  # the outer message again
            g.saved_tensors_hooks(lambda x: x, lambda x: x).__enter__()
    with g.saved_tensors_hooks(lambda x: x, lambda x: x):  # enabled again
        pass

    @g.disable_saved_tensors_hooks("decorated")
    def f():
        with g.saved_tensors_hooks(lambda x: x, lambda x: x):
            pass

    with pytest.raises(RuntimeError, match="decorated"):
        f()
