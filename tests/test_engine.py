"""The backward engine: Tensor.backward, autograd.backward, autograd.grad (SEMANTICS.md sections 3,
7 and 14).

Every test takes the fixture ``T``: the library under test.  It runs once with ``nbgrad`` and, when
PyTorch (the oracle) is installed, once more with ``torch`` -- the very same assertions, so
each test is checked against PyTorch and is meaningful on its own without it.
"""

import re
import sys
import warnings

import pytest
from conftest import needs_torch, torch

import nbgrad
import nbgrad.autograd.graph  # noqa: F401

if torch is not None:
    import torch.autograd.graph  # noqa: F401


@pytest.fixture(
    params=[
        pytest.param("nbgrad", id="nbgrad"),
        pytest.param("torch", id="torch", marks=needs_torch),
    ]
)
def T(request):
    return nbgrad if request.param == "nbgrad" else torch


def leaf(T, values=(1.0, 2.0), **kw):
    return T.tensor(list(values), requires_grad=True, **kw)


SECOND_BACKWARD = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)

CREATE_GRAPH_WARNING = (
    "Using backward() with create_graph=True will create a reference cycle between the parameter "
    "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
    "creating the graph to avoid this. If you have to use this function, make sure to reset the "
    ".grad fields "
    "of your parameters to None after use to break the cycle and avoid the leak."
)


# --------------------------------------------------------------------------------------------
# grad_tensors / grad_outputs


def test_backward_grad_tensors_method(T):
    x = leaf(T)
    (x * 2).backward(T.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]


def test_backward_grad_tensors_function(T):
    x = leaf(T)
    T.autograd.backward(x * 2, grad_tensors=T.tensor([1.0, 10.0]))
    assert x.grad.tolist() == [2.0, 20.0]
    x.grad = None
    T.autograd.backward([x * 3], [T.tensor([1.0, 2.0])])
    assert x.grad.tolist() == [3.0, 6.0]


def test_grad_grad_outputs(T):
    x = leaf(T)
    (g,) = T.autograd.grad(x * 2, x, grad_outputs=T.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 20.0]
    (g,) = T.autograd.grad([x * 2], [x], grad_outputs=[T.tensor([3.0, 1.0])])
    assert g.tolist() == [6.0, 2.0]
    assert x.grad is None  # autograd.grad never touches .grad


@pytest.mark.parametrize("gdtype", ["float64", "int64"])
def test_grad_tensor_of_other_dtype_accepted(T, gdtype):
    x = leaf(T)
    (x * 2).backward(T.tensor([1, 10], dtype=getattr(T, gdtype)))
    assert x.grad.dtype == T.float32
    assert x.grad.tolist() == [2.0, 20.0]
    (g,) = T.autograd.grad(x * 3, x, T.tensor([1.0, 2.0], dtype=T.float64))
    assert g.dtype == T.float32
    assert g.tolist() == [3.0, 6.0]


def test_first_grad_is_not_the_users_grad_tensor(T):
    x = leaf(T)
    g = T.tensor([1.0, 1.0])
    (x * 1).backward(g)
    assert x.grad is not g
    x2 = leaf(T)
    g2 = T.tensor([5.0, 6.0])
    x2.backward(g2)
    assert x2.grad is not g2
    assert x2.grad.tolist() == [5.0, 6.0]
    g2.add_(1)
    assert x2.grad.tolist() == [5.0, 6.0]


def test_shape_mismatch_error(T):
    x = leaf(T)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Mismatch in shape: grad_output[0] has a shape of torch.Size([3]) and output[0] has a "
            "shape of torch.Size([2])."
        ),
    ):
        (x * 2).backward(T.ones(3))
    with pytest.raises(RuntimeError, match=re.escape("Mismatch in shape: grad_output[0]")):
        (x * 2).backward(T.ones(1))
    with pytest.raises(RuntimeError, match=re.escape("Mismatch in shape: grad_output[0]")):
        T.autograd.grad(x * 2, x, grad_outputs=T.ones(3))


# --------------------------------------------------------------------------------------------
# root errors


def test_non_scalar_root_error(T):
    x = leaf(T)
    msg = "grad can be implicitly created only for scalar outputs"
    with pytest.raises(RuntimeError, match=msg):
        (x * 2).backward()
    with pytest.raises(RuntimeError, match=msg):
        T.autograd.backward(x * 2)
    with pytest.raises(RuntimeError, match=msg):
        T.autograd.grad(x * 2, x)


def test_one_element_root_is_accepted(T):
    x1 = T.tensor([3.0], requires_grad=True)
    (x1 * 2).backward()
    assert x1.grad.tolist() == [2.0]
    (g,) = T.autograd.grad(x1 * 5, x1)
    assert g.tolist() == [5.0]


def test_root_not_requiring_grad_error(T):
    x = leaf(T)
    with pytest.raises(
        RuntimeError,
        match=re.escape("element 0 of tensors does not require grad and does not have a grad_fn"),
    ):
        T.ones(()).backward()
    with pytest.raises(
        RuntimeError,
        match=re.escape("element 0 of tensors does not require grad and does not have a grad_fn"),
    ):
        T.autograd.grad(T.ones(()), x)
    with pytest.raises(
        RuntimeError,
        match=re.escape("element 1 of tensors does not require grad and does not have a grad_fn"),
    ):
        T.autograd.backward([(x * 2).sum(), T.ones(())])


# --------------------------------------------------------------------------------------------
# retain_graph


def test_second_backward_error(T):
    x = leaf(T)
    s = (x * 2).sum()
    s.backward()
    with pytest.raises(RuntimeError, match=re.escape(SECOND_BACKWARD)):
        s.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_second_grad_error(T):
    x = leaf(T)
    s = (x * x).sum()
    T.autograd.grad(s, x)
    with pytest.raises(
        RuntimeError, match=re.escape("Trying to backward through the graph a second time")
    ):
        T.autograd.grad(s, x)


def test_retain_graph_allows_second_backward(T):
    x = leaf(T)
    s = (x * 2).sum()
    s.backward(retain_graph=True)
    s.backward()
    assert x.grad.tolist() == [4.0, 4.0]
    s2 = (x * x).sum()
    (g1,) = T.autograd.grad(s2, x, retain_graph=True)
    (g2,) = T.autograd.grad(s2, x)
    assert g1.tolist() == g2.tolist() == [2.0, 4.0]


def test_x_plus_x_can_be_backwarded_twice(T):
    x = leaf(T)
    s = (x + x).sum()
    s.backward()
    s.backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_retain_graph_defaults_to_create_graph(T):
    x = leaf(T)
    s = (x * x).sum()
    T.autograd.grad(s, x, create_graph=True)
    (g,) = T.autograd.grad(s, x)  # graph was retained by create_graph
    assert g.tolist() == [2.0, 4.0]


def test_retain_graph_false_with_create_graph_frees(T):
    x = leaf(T)
    s = (x * x).sum()
    T.autograd.grad(s, x, create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        T.autograd.grad(s, x)


# --------------------------------------------------------------------------------------------
# create_graph / higher order


def test_create_graph_higher_order(T):
    x = leaf(T)
    (g,) = T.autograd.grad((x**3).sum(), x, create_graph=True)
    assert g.tolist() == [3.0, 12.0]
    assert g.requires_grad
    assert g.grad_fn.name() == "MulBackward0"
    assert repr(g) == "tensor([ 3., 12.], grad_fn=<MulBackward0>)"
    (g2,) = T.autograd.grad(g.sum(), x, create_graph=True)
    assert g2.tolist() == [6.0, 12.0]
    (g3,) = T.autograd.grad(g2.sum(), x)
    assert g3.tolist() == [6.0, 6.0]
    assert not g3.requires_grad and g3.grad_fn is None
    assert x.grad is None


def test_without_create_graph_results_do_not_require_grad(T):
    x = leaf(T)
    (g,) = T.autograd.grad((x**3).sum(), x)
    assert not g.requires_grad
    assert g.grad_fn is None
    (x**3).sum().backward()
    assert not x.grad.requires_grad
    assert x.grad.grad_fn is None


def test_backward_create_graph(T):
    x = leaf(T)
    with pytest.warns(UserWarning, match=re.escape(CREATE_GRAPH_WARNING)):
        (x**3).sum().backward(create_graph=True)
    assert x.grad.tolist() == [3.0, 12.0]
    assert x.grad.requires_grad
    assert x.grad.grad_fn.name() == "torch::autograd::CopyBackwards"
    assert type(x.grad.grad_fn).__name__ == "CopyBackwards"
    first = x.grad
    (g2,) = T.autograd.grad(x.grad.sum(), x)
    assert g2.tolist() == [6.0, 12.0]
    # accumulation with create_graph is out of place
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x**2).sum().backward(create_graph=True)
    assert x.grad is not first
    assert x.grad.tolist() == [5.0, 16.0]
    assert x.grad.grad_fn.name() == "AddBackward0"
    assert first.tolist() == [3.0, 12.0]


def test_hessian_vector_product(T):
    x = leaf(T, (1.0, 2.0, 3.0))
    y = (x**2).prod()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    v = T.tensor([1.0, 0.0, 0.0])
    (hv,) = T.autograd.grad(g, x, grad_outputs=v)
    # y = x0^2 x1^2 x2^2 ; d2y/dx0^2 = 2 x1^2 x2^2 = 72 ; d2y/dx0dx1 = 4 x0 x1 x2^2 = 72, dx0dx2
    # = 48
    assert hv.tolist() == [72.0, 72.0, 48.0]


# --------------------------------------------------------------------------------------------
# inputs=


def test_backward_inputs_non_leaf(T):
    x = leaf(T)
    y = x * 3
    (y * y).sum().backward(inputs=[y])
    assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_backward_inputs_non_leaf_then_retains_grad(T):
    # PyTorch implements a non-leaf in `inputs` with retain_grad(): it keeps retaining afterwards
    x = leaf(T)
    y = x * 3
    assert not y.retains_grad
    (y * y).sum().backward(inputs=[y], retain_graph=True)
    assert y.retains_grad
    (y * 2).sum().backward(inputs=[x])
    assert x.grad.tolist() == [6.0, 6.0]
    assert y.grad.tolist() == [8.0, 14.0]


def test_backward_inputs_leaf_and_non_leaf(T):
    x = leaf(T)
    y = x * 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (y * y).sum().backward(inputs=[y, x])
        assert y.grad.tolist() == [6.0, 12.0]
    assert x.grad.tolist() == [18.0, 36.0]


def test_backward_inputs_single_tensor(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    (x * w).sum().backward(inputs=x)
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad is None
    T.autograd.backward((x * w).sum(), inputs=w)
    assert w.grad.tolist() == [1.0, 2.0]
    assert x.grad.tolist() == [3.0, 4.0]


def test_backward_inputs_unused_leaf(T):
    x = leaf(T)
    unused = leaf(T, (5.0, 6.0))
    (x * 2).sum().backward(inputs=[x, unused])
    assert x.grad.tolist() == [2.0, 2.0]
    assert unused.grad is None


def test_backward_inputs_empty_list_error(T):
    x = leaf(T)
    msg = re.escape("`inputs` argument to `backward()` cannot be empty.")
    with pytest.raises(RuntimeError, match=msg):
        (x * 2).sum().backward(inputs=[])
    with pytest.raises(RuntimeError, match=msg):
        T.autograd.backward((x * 2).sum(), inputs=[])


# --------------------------------------------------------------------------------------------
# allow_unused / materialize_grads / only_inputs


def test_grad_unused_input_error(T):
    x = leaf(T)
    w = leaf(T, (1.0,))
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "The differentiated Tensor at index 1 appears to not have been used in the graph. "
            "Set allow_unused=True if this is the desired behavior."
        ),
    ):
        T.autograd.grad((x * 2).sum(), [x, w])


def test_grad_allow_unused(T):
    x = leaf(T)
    w = leaf(T, (1.0,))
    gx, gw = T.autograd.grad((x * 2).sum(), [x, w], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0]
    assert gw is None


def test_grad_materialize_grads(T):
    x = leaf(T)
    w = leaf(T, (1.0,))
    gx, gw = T.autograd.grad((x * 2).sum(), [x, w], materialize_grads=True)
    assert gx.tolist() == [2.0, 2.0]
    assert gw.tolist() == [0.0]
    assert gw.shape == (1,)
    gx, gw = T.autograd.grad((x * 2).sum(), [x, w], allow_unused=True, materialize_grads=True)
    assert gw.tolist() == [0.0]


def test_grad_materialize_grads_with_allow_unused_false_error(T):
    x = leaf(T)
    w = leaf(T, (1.0,))
    with pytest.raises(ValueError, match="allow_unused"):
        T.autograd.grad((x * 2).sum(), [x, w], allow_unused=False, materialize_grads=True)


def test_grad_input_not_requiring_grad_error(T):
    x = leaf(T)
    c = T.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError, match="One of the differentiated Tensors does not require grad"
    ):
        T.autograd.grad((x * c).sum(), [x, c])


def test_grad_non_leaf_input(T):
    x = leaf(T)
    y = x * 3
    (gy,) = T.autograd.grad((y * y).sum(), y)
    assert gy.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_only_inputs_false_future_warning(T):
    x = leaf(T)
    with pytest.warns(
        FutureWarning,
        match=re.escape(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To "
            "accumulate gradient for other parts of the graph, please use torch.autograd.backward."
        ),
    ):
        (g,) = T.autograd.grad((x * 2).sum(), x, only_inputs=False)
    assert g.tolist() == [2.0, 2.0]
    assert x.grad is None


# --------------------------------------------------------------------------------------------
# multiple roots


def test_grad_multiple_roots_summed(T):
    x = leaf(T)
    (g,) = T.autograd.grad([(x * 2).sum(), (x * 3).sum()], x)
    assert g.tolist() == [5.0, 5.0]


def test_backward_multiple_roots_mixed_grad_tensors(T):
    x = leaf(T)
    s = (x * 2).sum()
    v = x * 3
    T.autograd.backward([s, v], [None, T.ones(2)])
    assert x.grad.tolist() == [5.0, 5.0]


def test_backward_multiple_roots_sharing_graph(T):
    x = leaf(T)
    y = x * x
    T.autograd.backward([y.sum(), (y * 2).sum()])
    assert x.grad.tolist() == [6.0, 12.0]


def test_grad_multiple_inputs_returns_tuple(T):
    x = leaf(T)
    w = leaf(T, (3.0, 4.0))
    res = T.autograd.grad((x * w).sum(), (x, w))
    assert isinstance(res, tuple) and len(res) == 2
    assert res[0].tolist() == [3.0, 4.0]
    assert res[1].tolist() == [1.0, 2.0]


# --------------------------------------------------------------------------------------------
# .grad accumulation and layout


def test_grad_accumulates_in_place(T):
    x = leaf(T)
    (x * 2).sum().backward()
    g = x.grad
    ptr = g.data_ptr()
    v0 = g._version
    (x * 3).sum().backward()
    assert x.grad is g
    assert x.grad.data_ptr() == ptr
    assert g._version == v0 + 1
    assert g.tolist() == [5.0, 5.0]


def test_user_assigned_grad_updated_in_place(T):
    x = leaf(T)
    mine = T.tensor([10.0, 20.0])
    x.grad = mine
    (x * 2).sum().backward()
    assert x.grad is mine
    assert mine.tolist() == [12.0, 22.0]
    assert mine._version == 1


def test_grad_reset_to_none_then_fresh(T):
    x = leaf(T)
    (x * 2).sum().backward()
    old = x.grad
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad is not old
    assert x.grad.tolist() == [3.0, 3.0]
    assert old.tolist() == [2.0, 2.0]


def _transposed_leaf(T):
    p = T.zeros(4, 3).t()
    p.requires_grad_()
    return p


@pytest.mark.parametrize("how", ["sum", "mul", "transposed", "contiguous"])
def test_grad_layout_transposed_leaf(T, how):
    p = _transposed_leaf(T)
    assert p.is_leaf and p.stride() == (1, 3)
    if how == "sum":
        p.sum().backward()  # expanded incoming grad
    elif how == "mul":
        (p * 2).sum().backward()
    elif how == "transposed":
        (p.t() * T.ones(4, 3)).sum().backward()
    else:
        p.backward(T.arange(12.0).reshape(3, 4))
    assert p.grad.shape == (3, 4)
    assert p.grad.stride() == p.stride() == (1, 3)
    if how == "contiguous":
        assert p.grad.tolist() == T.arange(12.0).reshape(3, 4).tolist()


def test_grad_layout_non_dense_leaf(T):
    p = T.zeros(3, 6)[:, ::2]
    p.requires_grad_()
    assert p.stride() == (6, 2)
    p.sum().backward()
    assert p.grad.stride() == (3, 1)
    assert p.grad.tolist() == [[1.0, 1.0, 1.0]] * 3


def test_grad_layout_expanded_leaf(T):
    p = T.zeros(3).expand(4, 3)
    p.requires_grad_()
    assert p.stride() == (0, 1)
    (p * 2).sum().backward()
    assert p.grad.shape == (4, 3)
    assert p.grad.stride() == (3, 1)
    assert p.grad.tolist() == [[2.0, 2.0, 2.0]] * 4


def test_existing_grad_layout_is_kept(T):
    # an existing .grad with another layout is accumulated into in place (torch also warns once per
    # process about the layout contract; the warn-once makes that part untestable here)
    p = _transposed_leaf(T)
    g = T.zeros(3, 4)
    p.grad = g
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (p * 2).sum().backward()
    assert p.grad is g
    assert p.grad.stride() == (4, 1)
    assert p.grad.tolist() == [[2.0] * 4] * 3


def test_grad_layout_contiguous_leaf_transposed_grad(T):
    p = T.zeros(3, 4, requires_grad=True)
    (p.t() * T.arange(12.0).reshape(4, 3)).sum().backward()
    assert p.grad.stride() == (4, 1)
    assert p.grad.tolist() == T.arange(12.0).reshape(4, 3).t().tolist()


# --------------------------------------------------------------------------------------------
# execution order / deep graphs


def test_execution_order_chain(T):
    order = []
    x = leaf(T)
    a = x * 2
    b = a * 3
    c = b * 4
    for name, t in (("a", a), ("b", b), ("c", c)):
        t.register_hook(lambda g, name=name: order.append(name))
    c.sum().backward()
    assert order == ["c", "b", "a"]
    assert x.grad.tolist() == [24.0, 24.0]


def test_execution_order_waits_for_all_consumers(T):
    # a is used directly by the root and through b: its hook must run once, after b's, with the sum
    order = []
    x = leaf(T)
    a = x * 2
    b = a * 3
    out = a + b
    a.register_hook(lambda g: order.append(("a", g.tolist())))
    b.register_hook(lambda g: order.append(("b", g.tolist())))
    out.sum().backward()
    assert order == [("b", [1.0, 1.0]), ("a", [4.0, 4.0])]
    assert x.grad.tolist() == [8.0, 8.0]


def test_long_chain_no_recursion_error(T):
    x = leaf(T, (1.0, 2.0))
    y = x
    for _ in range(100000):
        y = y * 1.0
    y.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_long_chain_grad_no_recursion_error(T):
    limit = sys.getrecursionlimit()
    x = leaf(T, (1.0,))
    y = x
    for _ in range(3 * limit):
        y = y + 1.0
    (g,) = T.autograd.grad(y.sum(), x)
    assert g.tolist() == [1.0]
    del y  # freeing a deep graph must not overflow the stack either


# --------------------------------------------------------------------------------------------
# Node API


def test_node_name_and_identity(T):
    x = leaf(T)
    y = (x * 2).sum()
    gf = y.grad_fn
    assert gf.name() == "SumBackward0"
    assert type(gf).__name__ == "SumBackward0"
    assert y.grad_fn is gf
    assert isinstance(gf, T.autograd.graph.Node)
    assert x.grad_fn is None
    assert repr(gf).startswith("<SumBackward0 object at 0x")


def test_next_functions_structure(T):
    a, b, c = leaf(T, (1.0,)), leaf(T, (2.0,)), leaf(T, (3.0,))
    out = (a * b + c).sum()
    nf = out.grad_fn.next_functions
    assert isinstance(nf, tuple) and len(nf) == 1
    add, idx = nf[0]
    assert idx == 0 and add.name() == "AddBackward0"
    (mul, i0), (acc_c, i1) = add.next_functions
    assert (i0, i1) == (0, 0)
    assert mul.name() == "MulBackward0"
    assert acc_c.name() == "torch::autograd::AccumulateGrad"
    assert acc_c.variable is c
    (acc_a, j0), (acc_b, j1) = mul.next_functions
    assert (j0, j1) == (0, 0)
    assert acc_a.variable is a and acc_b.variable is b


@pytest.mark.parametrize("op", ["mul_scalar", "add_scalar", "mul_const_tensor"])
def test_next_functions_none_for_non_grad_inputs(T, op):
    a = leaf(T)
    y = {
        "mul_scalar": lambda: a * 2,
        "add_scalar": lambda: a + 1,
        "mul_const_tensor": lambda: a * T.tensor([3.0, 4.0]),
    }[op]()
    nf = y.grad_fn.next_functions
    assert len(nf) == 2
    assert nf[0][0].name() == "torch::autograd::AccumulateGrad" and nf[0][1] == 0
    assert nf[1] == (None, 0)


def test_next_functions_input_nr_for_multi_output(T):
    a = leaf(T)
    p, q = (a * 1).unbind()
    nf = (q * 2).grad_fn.next_functions
    assert nf[0][0].name() == "UnbindBackward0"
    assert nf[0][1] == 1
    assert nf[1] == (None, 0)
    assert (p * 2).grad_fn.next_functions[0][1] == 0


def test_accumulate_grad_node(T):
    a = leaf(T)
    acc = (a * 1).grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad"
    assert acc.name() == "torch::autograd::AccumulateGrad"
    assert acc.variable is a
    assert acc.next_functions == ()
    assert isinstance(acc, T.autograd.graph.Node)
    assert repr(acc).startswith("<AccumulateGrad object at 0x")
    # the same AccumulateGrad object is reused across graphs
    assert (a * 2).grad_fn.next_functions[0][0] is acc
    assert (a + 5).sum().grad_fn.next_functions[0][0].next_functions[0][0] is acc


def test_node_metadata(T):
    a = leaf(T)
    y = a * 2
    md = y.grad_fn.metadata
    assert type(md) is dict and md == {}
    md["k"] = 1
    assert y.grad_fn.metadata == {"k": 1}
    assert y.grad_fn.metadata is md


def test_next_functions_survive_backward(T):
    a = leaf(T)
    y = (a * a).sum()
    y.backward()
    assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"


def _ops(T):
    import nbgrad.nn.functional  # noqa: F401

    F = T.nn.functional
    a = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = T.tensor([4.0, 5.0, 6.0], requires_grad=True)
    m = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    return F, a, b, m


OP_NAMES = [
    ("a+b", lambda T, F, a, b, m: a + b, "AddBackward0"),
    ("a+1", lambda T, F, a, b, m: a + 1, "AddBackward0"),
    ("a-b", lambda T, F, a, b, m: a - b, "SubBackward0"),
    ("1-a", lambda T, F, a, b, m: 1 - a, "RsubBackward1"),
    ("-a", lambda T, F, a, b, m: -a, "NegBackward0"),
    ("a*2", lambda T, F, a, b, m: a * 2, "MulBackward0"),
    ("2/a", lambda T, F, a, b, m: 2 / a, "MulBackward0"),
    ("outer", lambda T, F, a, b, m: T.outer(a, b), "MulBackward0"),
    ("a/b", lambda T, F, a, b, m: a / b, "DivBackward0"),
    ("a**2", lambda T, F, a, b, m: a**2, "PowBackward0"),
    ("square", lambda T, F, a, b, m: a.square(), "PowBackward0"),
    ("a**b", lambda T, F, a, b, m: a**b, "PowBackward1"),
    ("2**a", lambda T, F, a, b, m: 2**a, "PowBackward2"),
    ("mm", lambda T, F, a, b, m: m @ m, "MmBackward0"),
    ("mv", lambda T, F, a, b, m: T.mv(m, a[:2]), "MvBackward0"),
    ("dot", lambda T, F, a, b, m: T.dot(a, b), "DotBackward0"),
    ("bmm", lambda T, F, a, b, m: T.bmm(m[None], m[None]), "BmmBackward0"),
    ("exp", lambda T, F, a, b, m: a.exp(), "ExpBackward0"),
    ("log1p", lambda T, F, a, b, m: a.log1p(), "Log1PBackward0"),
    ("sigmoid", lambda T, F, a, b, m: a.sigmoid(), "SigmoidBackward0"),
    ("relu", lambda T, F, a, b, m: a.relu(), "ReluBackward0"),
    ("rsqrt", lambda T, F, a, b, m: a.rsqrt(), "RsqrtBackward0"),
    ("sum", lambda T, F, a, b, m: a.sum(), "SumBackward0"),
    ("sum(dim)", lambda T, F, a, b, m: m.sum(0), "SumBackward1"),
    ("sum(dtype)", lambda T, F, a, b, m: a.sum(dtype=T.float64), "SumBackward0"),
    ("mean", lambda T, F, a, b, m: a.mean(), "MeanBackward0"),
    ("mean(dim)", lambda T, F, a, b, m: m.mean(1), "MeanBackward1"),
    ("max()", lambda T, F, a, b, m: a.max(), "MaxBackward1"),
    ("max(dim)", lambda T, F, a, b, m: m.max(0)[0], "MaxBackward0"),
    ("min()", lambda T, F, a, b, m: a.min(), "MinBackward1"),
    ("clamp", lambda T, F, a, b, m: a.clamp(0, 1), "ClampBackward1"),
    ("clamp(min)", lambda T, F, a, b, m: a.clamp(min=0), "ClampBackward1"),
    ("norm", lambda T, F, a, b, m: a.norm(), "LinalgVectorNormBackward0"),
    ("var", lambda T, F, a, b, m: a.var(), "VarBackward0"),
    ("view", lambda T, F, a, b, m: m.view(4), "ViewBackward0"),
    ("reshape", lambda T, F, a, b, m: m.reshape(4), "ViewBackward0"),
    ("reshape(t)", lambda T, F, a, b, m: m.t().reshape(4), "UnsafeViewBackward0"),
    ("flatten", lambda T, F, a, b, m: m.flatten(), "ViewBackward0"),
    ("t", lambda T, F, a, b, m: m.t(), "TBackward0"),
    ("transpose", lambda T, F, a, b, m: m.transpose(0, 1), "TransposeBackward0"),
    ("mT", lambda T, F, a, b, m: m.mT, "TransposeBackward0"),
    ("T", lambda T, F, a, b, m: m.T, "PermuteBackward0"),
    ("permute", lambda T, F, a, b, m: m.permute(1, 0), "PermuteBackward0"),
    ("unsqueeze", lambda T, F, a, b, m: a.unsqueeze(0), "UnsqueezeBackward0"),
    ("squeeze(0)", lambda T, F, a, b, m: a[None].squeeze(0), "SqueezeBackward1"),
    ("expand", lambda T, F, a, b, m: a.expand(2, 3), "ExpandBackward0"),
    ("a[0]", lambda T, F, a, b, m: a[0], "SelectBackward0"),
    ("a[1:]", lambda T, F, a, b, m: m[:, 1:], "SliceBackward0"),
    ("narrow", lambda T, F, a, b, m: a.narrow(0, 1, 2), "SliceBackward0"),
    ("a[idx]", lambda T, F, a, b, m: a[T.tensor([0, 2])], "IndexBackward0"),
    ("a[mask]", lambda T, F, a, b, m: a[a > 1], "IndexBackward0"),
    ("cat", lambda T, F, a, b, m: T.cat([a, b]), "CatBackward0"),
    ("stack", lambda T, F, a, b, m: T.stack([a, b]), "StackBackward0"),
    ("chunk", lambda T, F, a, b, m: a.chunk(3)[0], "SplitBackward0"),
    ("unbind", lambda T, F, a, b, m: a.unbind()[0], "UnbindBackward0"),
    ("where", lambda T, F, a, b, m: T.where(a > 1, a, b), "WhereBackward0"),
    ("gather", lambda T, F, a, b, m: m.gather(1, T.tensor([[0], [1]])), "GatherBackward0"),
    (
        "index_select",
        lambda T, F, a, b, m: a.index_select(0, T.tensor([1])),
        "IndexSelectBackward0",
    ),
    ("masked_fill", lambda T, F, a, b, m: a.masked_fill(a > 1, 0.0), "MaskedFillBackward0"),
    ("clone", lambda T, F, a, b, m: a.clone(), "CloneBackward0"),
    ("contiguous", lambda T, F, a, b, m: m.t().contiguous(), "CloneBackward0"),
    ("double", lambda T, F, a, b, m: a.double(), "ToCopyBackward0"),
    ("softmax", lambda T, F, a, b, m: a.softmax(0), "SoftmaxBackward0"),
    ("log_softmax", lambda T, F, a, b, m: a.log_softmax(0), "LogSoftmaxBackward0"),
    ("mse_loss", lambda T, F, a, b, m: F.mse_loss(a, b), "MseLossBackward0"),
    ("linear", lambda T, F, a, b, m: F.linear(m, m), "MmBackward0"),
    ("linear+bias", lambda T, F, a, b, m: F.linear(m, m, a[:2]), "AddmmBackward0"),
    ("einsum", lambda T, F, a, b, m: T.einsum("i,i->", a, b), "ViewBackward0"),
    ("pow(a,3.)", lambda T, F, a, b, m: T.pow(a, 3.0), "PowBackward0"),
    ("matmul", lambda T, F, a, b, m: T.matmul(m, m), "MmBackward0"),
    ("sin", lambda T, F, a, b, m: a.sin(), "SinBackward0"),
    ("cos", lambda T, F, a, b, m: a.cos(), "CosBackward0"),
    ("tanh", lambda T, F, a, b, m: a.tanh(), "TanhBackward0"),
    ("log", lambda T, F, a, b, m: a.log(), "LogBackward0"),
    ("sqrt", lambda T, F, a, b, m: a.sqrt(), "SqrtBackward0"),
    ("abs", lambda T, F, a, b, m: a.abs(), "AbsBackward0"),
    ("reciprocal", lambda T, F, a, b, m: a.reciprocal(), "ReciprocalBackward0"),
    ("amax", lambda T, F, a, b, m: a.amax(), "AmaxBackward0"),
    ("maximum", lambda T, F, a, b, m: T.maximum(a, b), "MaximumBackward0"),
    ("prod", lambda T, F, a, b, m: a.prod(), "ProdBackward0"),
    ("cumsum", lambda T, F, a, b, m: a.cumsum(0), "CumsumBackward0"),
    ("std", lambda T, F, a, b, m: a.std(), "StdBackward0"),
    ("split", lambda T, F, a, b, m: a.split(1)[0], "SplitBackward0"),
    ("repeat", lambda T, F, a, b, m: a.repeat(2), "RepeatBackward0"),
    ("gelu", lambda T, F, a, b, m: F.gelu(a), "GeluBackward0"),
    ("silu", lambda T, F, a, b, m: F.silu(a), "SiluBackward0"),
    ("softplus", lambda T, F, a, b, m: F.softplus(a), "SoftplusBackward0"),
    ("leaky_relu", lambda T, F, a, b, m: F.leaky_relu(a), "LeakyReluBackward0"),
    ("dropout", lambda T, F, a, b, m: F.dropout(a, 0.5, training=True), "MulBackward0"),
    (
        "cross_entropy",
        lambda T, F, a, b, m: F.cross_entropy(m, T.tensor([0, 1])),
        "NllLossBackward0",
    ),
    ("nll_loss", lambda T, F, a, b, m: F.nll_loss(m, T.tensor([0, 1])), "NllLossBackward0"),
    (
        "bce",
        lambda T, F, a, b, m: F.binary_cross_entropy(a.sigmoid(), T.ones(3)),
        "BinaryCrossEntropyBackward0",
    ),
    ("layer_norm", lambda T, F, a, b, m: F.layer_norm(m, (2,)), "NativeLayerNormBackward0"),
    ("embedding", lambda T, F, a, b, m: F.embedding(T.tensor([1]), m), "EmbeddingBackward0"),
    (
        "conv2d",
        lambda T, F, a, b, m: F.conv2d(m[None, None], m[None, None]),
        "ConvolutionBackward0",
    ),
]


@pytest.mark.parametrize("expr,fn,name", OP_NAMES, ids=[o[0] for o in OP_NAMES])
def test_backward_node_names(T, expr, fn, name):
    F, a, b, m = _ops(T)
    out = fn(T, F, a, b, m)
    assert out.grad_fn is not None, expr
    assert out.grad_fn.name() == name
    assert type(out.grad_fn).__name__ == name


def test_float_on_float32_returns_self(T):
    a = leaf(T)
    assert a.float() is a
    y = a * 1
    assert y.float() is y


def test_inplace_node_names(T):
    x = leaf(T)
    y = x * 1
    y.add_(1)
    assert y.grad_fn.name() == "AddBackward0"
    y.mul_(2)
    assert y.grad_fn.name() == "MulBackward0"
    y[0] = 5.0
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    assert type(y.grad_fn).__name__ == "CopySlices"
    assert repr(y.grad_fn).startswith("<CopySlices object at 0x")
    y.zero_()
    assert y.grad_fn.name() == "ZeroBackward0"
    y.copy_(x)
    assert y.grad_fn.name() == "torch::autograd::CopyBackwards"
    assert type(y.grad_fn).__name__ == "CopyBackwards"
    assert repr(y.grad_fn).startswith("<CopyBackwards object at 0x")


# --------------------------------------------------------------------------------------------
# NOTE [stealing the gradient]: the first gradient becomes .grad without a copy when nothing
# else can see it, as in PyTorch; any other reference makes a copy


def _addr(T, t):
    return t.data_ptr() if T is torch else t._data.__array_interface__["data"][0]


def test_first_grad_is_stolen_when_unseen(T):
    seen = []
    x = T.randn(3, 4, requires_grad=True)
    x.register_hook(lambda g: seen.append(_addr(T, g)))  # an address, not a reference
    (x * 2.0).sum().backward()
    assert _addr(T, x.grad) == seen[0]
    assert x.grad.tolist() == [[2.0] * 4] * 3


def test_grad_kept_by_a_hook_is_copied(T):
    kept = []
    x = T.randn(3, 4, requires_grad=True)
    x.register_hook(lambda g: kept.append(g))
    (x * 2.0).sum().backward()
    assert _addr(T, x.grad) != _addr(T, kept[0])
    x.grad.add_(1.0)  # the hook's tensor is not the .grad
    assert kept[0].tolist() == [[2.0] * 4] * 3


def test_one_gradient_for_two_leaves_is_not_shared(T):
    a = T.randn(3, requires_grad=True)
    b = T.randn(3, requires_grad=True)
    (a + b).sum().backward()  # AddBackward0 passes the same gradient to both leaves
    assert _addr(T, a.grad) != _addr(T, b.grad)
    a.grad.add_(1.0)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_stolen_grad_keeps_the_layout_contract(T):
    x = T.randn(4, 3).t().requires_grad_()  # dense, transposed strides (1, 3)
    (x * 2.0).sum().backward()
    assert x.grad.stride() == x.stride()
    y = T.randn(3, 4)[:, ::2].detach().requires_grad_()  # not dense: a contiguous .grad
    (y * 2.0).sum().backward()
    assert y.grad.stride() == (2, 1)


def test_gradient_kept_by_a_hook_is_not_accumulated_into(T):
    # the engine adds a later gradient in place only into a buffer nobody else holds
    x = T.ones(4, requires_grad=True)
    v = x * 4.0
    u = x * 3.0  # created last: runs first, its gradient is the one the buffer starts with
    kept = []
    u.grad_fn.register_hook(lambda gi, go: kept.append(gi[0]))
    (v + u).sum().backward()
    assert kept[0].tolist() == [3.0] * 4
    assert x.grad.tolist() == [7.0] * 4


def test_accumulated_gradients_of_a_shared_input(T):
    x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = x * 2.0 + x * 3.0 + x.exp() + x  # four gradients meet in one buffer
    y.sum().backward()
    expected = [6.0 + v for v in T.tensor([0.5, -1.0, 2.0]).exp().tolist()]
    assert x.grad.tolist() == pytest.approx(expected)


# -- final callbacks (PyTorch's Variable._execution_engine.queue_callback; DDP's end of backward)


def _queue_callback(T):
    if T is nbgrad:
        return nbgrad.autograd.engine.queue_callback
    return torch.autograd.Variable._execution_engine.queue_callback


def test_queue_callback_outside_backward_error(T):
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward"):
        _queue_callback(T)(lambda: None)


@pytest.mark.parametrize("create_graph", [False, True])
def test_queue_callback_runs_after_every_gradient_in_order(T, create_graph):
    queue, log = _queue_callback(T), []
    x = leaf(T)
    y = leaf(T, (3.0, 4.0))

    def hook(g):
        log.append("hook")

        def cb1():
            log.append(("cb1", T.is_grad_enabled()))
            queue(lambda: log.append("queued by a callback"))

        queue(cb1)
        queue(lambda: log.append(("cb2", x.grad.tolist(), y.grad.tolist())))
        return g

    x.register_hook(hook)
    x.register_post_accumulate_grad_hook(lambda p: log.append("post-accumulate"))
    ((x * 2).sum() + (y * x).sum()).backward(create_graph=create_graph)
    assert log == [
        "hook",
        "post-accumulate",
        ("cb1", create_graph),
        ("cb2", [5.0, 6.0], [1.0, 2.0]),
        "queued by a callback",
    ]
    log.clear()  # callbacks belong to one backward: the next one runs only what it queues
    x.grad = y.grad = None
    (y * 3).sum().backward()
    assert log == []


def test_queue_callback_error_propagates_after_gradients(T):
    x = leaf(T)
    queue = _queue_callback(T)
    x.register_hook(lambda g: queue(lambda: 1 / 0))
    with pytest.raises(ZeroDivisionError):
        (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]
