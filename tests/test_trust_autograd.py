"""Issue #10 (trust), autograd semantics: in-place and views, hooks, custom Functions, grad
mode, forward mode, gradcheck.

Every test that takes the fixture ``T`` runs once with ``nbgrad`` and, when PyTorch (the oracle)
is installed, once more with ``torch``: the same assertions, so each expectation is checked
against PyTorch 2.13 and stays meaningful without it.
"""

import re
import warnings

import numpy as np
import pytest
from conftest import needs_torch, torch

import nbgrad


@pytest.fixture(
    params=[
        pytest.param("nbgrad", id="nbgrad"),
        pytest.param("torch", id="torch", marks=needs_torch),
    ]
)
def T(request):
    return nbgrad if request.param == "nbgrad" else torch


def arr(t):
    return None if t is None else t.detach().numpy()


def fwd(T):
    return T.autograd.forward_ad


# ---------------------------------------------------------------------------------------------
# Hooks on the gradient-accumulator node; backward(inputs=[non_leaf]); undefined gradients


def test_accumulator_prehook_result_is_what_accumulates(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    acc = y.grad_fn.next_functions[0][0]
    seen = []
    acc.register_prehook(lambda g: (seen.append(arr(g[0])), (g[0] * 10,))[1])
    acc.register_hook(lambda gi, go: seen.append((gi, arr(go[0]))))
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [20.0, 20.0])
    np.testing.assert_array_equal(seen[0], [2.0, 2.0])
    assert seen[1][0] == ()
    np.testing.assert_array_equal(seen[1][1], [20.0, 20.0])


def test_accumulator_hook_order_with_tensor_and_post_accumulate_hooks(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    log = []
    x.register_hook(lambda g: log.append(("tensor", arr(g).tolist())))
    acc = y.grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: (log.append(("pre", arr(g[0]).tolist())), (g[0] + 1,))[1])
    x.register_post_accumulate_grad_hook(lambda t: log.append(("postacc", arr(t.grad).tolist())))
    acc.register_hook(lambda gi, go: log.append(("post", arr(go[0]).tolist())))
    y.sum().backward()
    assert log == [
        ("tensor", [2.0, 2.0]),
        ("pre", [2.0, 2.0]),
        ("postacc", [3.0, 3.0]),
        ("post", [3.0, 3.0]),
    ]


def test_accumulator_post_hook_must_return_empty_tuple(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.grad_fn.next_functions[0][0].register_hook(lambda gi, go: (go[0] * 5,))
    with pytest.raises(RuntimeError, match="has returned an incorrect number of values"):
        y.sum().backward()


def test_backward_inputs_non_leaf_runs_its_node_hooks(T):
    """backward(inputs=[y]) retains y's grad and runs y.grad_fn (pre- and post-hooks fire;
    gradients for inputs nobody asked for are None), as PyTorch's exec_info does."""
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * 3
    log = []
    y.grad_fn.register_prehook(lambda g: (log.append(("pre", arr(g[0]).tolist())), (g[0] * 10,))[1])
    y.grad_fn.register_hook(
        lambda gi, go: log.append(("post", [arr(g) for g in gi], arr(go[0]).tolist()))
    )
    z.sum().backward(inputs=[y], retain_graph=True)
    np.testing.assert_array_equal(arr(y.grad), [3.0, 3.0])  # before the pre-hook
    assert y.retains_grad and x.grad is None
    assert log[0] == ("pre", [3.0, 3.0])
    assert log[1][0] == "post" and log[1][1] == [None, None] and log[1][2] == [30.0, 30.0]
    z.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [60.0, 60.0])


def test_autograd_grad_non_leaf_input_does_not_run_its_node(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    log = []
    y.grad_fn.register_prehook(lambda g: log.append("pre"))
    (g,) = T.autograd.grad((y * 3).sum(), [y])
    np.testing.assert_array_equal(arr(g), [3.0, 3.0])
    assert log == []


def _blocker(T):
    class Block(T.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return None

    return Block


def test_node_without_any_gradient_still_runs_with_hooks_seeing_none(T):
    log = []
    x = T.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: log.append(("xhook", g)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("postacc", t.grad)))
    acc = (x * 1).grad_fn.next_functions[0][0]
    acc.register_prehook(lambda g: log.append(("accpre", g)))
    acc.register_hook(lambda gi, go: log.append(("accpost", gi, go)))
    y = x * 3
    y.register_hook(lambda g: log.append(("yhook", g)))
    y.retain_grad()
    y.grad_fn.register_prehook(lambda g: log.append(("ypre", g)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("ypost", gi, go)))
    _blocker(T).apply(y).sum().backward()
    assert log == [
        ("yhook", None),
        ("ypre", (None,)),
        ("ypost", (None, None), (None,)),
        ("xhook", None),
        ("accpre", (None,)),
        ("postacc", None),
        ("accpost", (), (None,)),
    ]
    assert y.grad is None and x.grad is None


def test_function_backward_runs_when_no_output_got_a_gradient(T):
    log = []

    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append(arr(g).tolist())
            return g * 2

    class Fm(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            log.append(g)
            return None if g is None else g * 2

    x = T.tensor([1.0, 2.0], requires_grad=True)
    _blocker(T).apply(F.apply(x)).sum().backward()
    assert log == [[0.0, 0.0]]  # materialized zeros
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0])
    log.clear()
    x = T.tensor([1.0, 2.0], requires_grad=True)
    _blocker(T).apply(Fm.apply(x)).sum().backward()
    assert log == [None] and x.grad is None


def test_hook_replacing_an_undefined_gradient_raises(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: T.ones(2))
    with pytest.raises(RuntimeError, match="can't replace a None gradient with a non-None value"):
        _blocker(T).apply(y).sum().backward()


def test_unused_output_of_multi_output_node_reaches_its_hook_as_none(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    a, b = (x * 2).split(2)
    log = []
    a.register_hook(lambda g: log.append(("a", arr(g).tolist())))
    b.register_hook(lambda g: log.append(("b", g)))
    a.grad_fn.register_prehook(lambda g: log.append(("pre", [arr(t) for t in g])))
    (a * 1).sum().backward()
    assert log[:2] == [("a", [1.0, 1.0]), ("b", None)]
    assert log[2][0] == "pre" and log[2][1][1] is None


# ---------------------------------------------------------------------------------------------
# gradcheck's messages

NOT_REENTRANT = (
    "Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
    "times gives different values, although analytical gradient matches numerical gradient."
    "The tolerance for nondeterminism was 0.0.\n\n"
    "NOTE: If your op relies on non-deterministic operations i.e., it is listed here:\n"
    "https://pytorch.org/docs/stable/generated/torch.use_deterministic_algorithms.html\n"
    "this failure might be expected.\n\n"
    "If you are adding a new operator, please file an issue and then use one of the\n"
    "workarounds. The workaround depends on how your test invokes gradcheck/gradgradcheck.\n"
    "If the test\n"
    "- manually invokes gradcheck/gradgradcheck, then call gradcheck/gradgradcheck\n"
    "  with `nondet_tol=<tol>` as a keyword argument.\n"
    "- is OpInfo-based (e.g., in test_ops_gradients.py), then modify the OpInfo for the test\n"
    "  to have `gradcheck_nondet_tol=<tol>`.\n"
    "- is a Module test (e.g., in common_nn.py), then modify the corresponding\n"
    "  module_test entry to have `gradcheck_nondet_tol=<tol>`\n"
)


def _drifting(T):
    """A backward that adds a growing offset: wrong *and* not reentrant."""
    calls = []

    class Drift(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g * 2 + len(calls) * 1e-3

    return Drift


@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_reports_non_reentrant_backward_before_the_mismatch(T, fast_mode):
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        T.autograd.gradcheck(_drifting(T).apply, (x,), fast_mode=fast_mode)
    assert type(info.value).__name__ == "GradcheckError"
    assert str(info.value) == NOT_REENTRANT
    assert T.autograd.gradcheck(_drifting(T).apply, (x,), raise_exception=False) is False


UNDEFINED_NOTE = 'Please look at "Notes about undefined output gradients" in ' + (
    '"tools/autograd/derivatives.yaml"'
)


def test_gradcheck_undefined_output_grads_must_give_zero_or_undefined(T):
    class NonZero(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return (g if g is not None else T.ones(2, dtype=T.float64)) * 2

    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="New undefined gradient support checking"):
        with pytest.raises(RuntimeError) as info:
            T.autograd.gradcheck(NonZero.apply, (x,))
    assert str(info.value) == (
        "Expected all input grads to be undefined or zero when all output grads are undefined "
        "or zero. " + UNDEFINED_NOTE
    )
    with pytest.warns(UserWarning):
        assert T.autograd.gradcheck(NonZero.apply, (x,), raise_exception=False) is False
    assert T.autograd.gradcheck(NonZero.apply, (x,), check_undefined_grad=False)


def test_gradcheck_backward_that_fails_on_undefined_output_grads(T):
    class Strict(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            if g1 is None and g2 is None:
                raise RuntimeError("undefined")
            return (g1 * 2 if g1 is not None else 0) + (g2 * 3 if g2 is not None else 0)

    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="New undefined gradient support checking"):
        with pytest.raises(RuntimeError) as info:
            T.autograd.gradcheck(Strict.apply, (x,))
    assert str(info.value) == (
        "Expected backward function to handle undefined output grads. " + UNDEFINED_NOTE
    )
    assert str(info.value.__cause__) == "undefined"


def test_gradcheck_materialized_undefined_grads_pass(T):
    class Fine(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):  # zeros arrive for undefined grads (materialize_grads)
            return g1 * 2 + g2 * 3

    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert T.autograd.gradcheck(Fine.apply, (x,))


# ---------------------------------------------------------------------------------------------
# Custom Functions: setup_context inputs, keyword arguments, vjp alias


def _scaled(T, grads):
    class Scaled(T.autograd.Function):
        @staticmethod
        def forward(x, y=None, s=2.0):
            return x * s + (y if y is not None else 0)

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.inputs = inputs
            ctx.s = inputs[2]

        @staticmethod
        def backward(ctx, g):
            return grads(ctx, g)

    return Scaled


def test_setup_context_receives_bound_arguments_with_defaults(T):
    F = _scaled(T, lambda ctx, g: (g * ctx.s, None, None))
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x)
    ctx = y.grad_fn
    assert len(ctx.inputs) == 3 and ctx.inputs[0] is x and ctx.inputs[1] is None
    assert ctx.inputs[2] == 2.0
    assert ctx.needs_input_grad == (True, False, False)
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0])
    x.grad = None
    F.apply(x, s=5.0).sum().backward()  # a keyword becomes its positional slot
    np.testing.assert_array_equal(arr(x.grad), [5.0, 5.0])


def test_function_gradient_count_covers_every_input(T):
    F = _scaled(T, lambda ctx, g: (g * ctx.s,))
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "function ScaledBackward returned an incorrect number of gradients (expected 3, got 1)"
        ),
    ):
        F.apply(x).sum().backward()


def test_function_edges_are_its_tensor_inputs_only(T):
    F = _scaled(T, lambda ctx, g: (g * ctx.s, g, None))
    x = T.tensor([1.0, 2.0], requires_grad=True)
    z = T.tensor([1.0, 1.0], requires_grad=True)
    y = F.apply(x, z)
    assert len(y.grad_fn.next_functions) == 2  # s=2.0 has no edge
    y.sum().backward()
    np.testing.assert_array_equal(arr(z.grad), [1.0, 1.0])
    w = F.apply(x, None, 3.0)
    assert len(w.grad_fn.next_functions) == 1


def test_function_keyword_tensor_arguments_are_inputs(T):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y=None, w=None):
            ctx.needs = ctx.needs_input_grad
            return x * 2 + (y if y is not None else 0)

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    x = T.tensor([1.0, 2.0], requires_grad=True)
    z = T.tensor([1.0, 2.0], requires_grad=True)
    y = F.apply(x, y=z)
    assert y.grad_fn.needs == (True, True) and len(y.grad_fn.next_functions) == 2
    y.sum().backward()
    np.testing.assert_array_equal(arr(z.grad), [1.0, 1.0])


def test_function_non_none_gradient_for_a_non_tensor_input_raises(T):
    F = _scaled(T, lambda ctx, g: (g * ctx.s, None, g))
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="position 3, but the corresponding forward input"):
        F.apply(x).sum().backward()


def test_function_vjp_is_an_alias_of_backward(T):
    class V(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    class Both(V):
        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = T.tensor([1.0, 2.0], requires_grad=True)
    V.apply(x).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0])
    with pytest.raises(
        RuntimeError, match="Implementing both 'backward' and 'vjp' for a custom Function"
    ):
        Both.apply(x).sum().backward()


# ---------------------------------------------------------------------------------------------
# autograd.grad's materialize_grads and inputs; numpy() under no_grad; grad-mode decorators


def test_materialized_grads_require_grad_under_create_graph(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([1.0, 2.0], requires_grad=True)
    gx, gw = T.autograd.grad(x * 2, [x, w], T.ones(2), materialize_grads=True, create_graph=True)
    assert not gx.requires_grad and gw.requires_grad
    np.testing.assert_array_equal(arr(gw), [0.0, 0.0])
    # an output that is itself a leaf (no grad_fn)
    gx, gw = T.autograd.grad(x, [x, w], T.ones(2), materialize_grads=True)
    np.testing.assert_array_equal(arr(gx), [1.0, 1.0])
    np.testing.assert_array_equal(arr(gw), [0.0, 0.0])


def test_grad_inputs_as_dict_and_empty_inputs(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([1.0, 2.0], requires_grad=True)
    got = T.autograd.grad((x * 2).sum(), {"a": x, "b": w}, materialize_grads=True)
    assert list(got) == ["a", "b"]
    np.testing.assert_array_equal(arr(got["a"]), [2.0, 2.0])
    np.testing.assert_array_equal(arr(got["b"]), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty."):
        T.autograd.grad((x * 2).sum(), [])


def test_numpy_of_a_tensor_requiring_grad_under_no_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="Can't call numpy\\(\\) on Tensor that requires grad"):
        x.numpy()
    with T.no_grad():
        np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])
    with T.inference_mode():
        np.testing.assert_array_equal(x.numpy(), [1.0, 2.0])


@pytest.mark.parametrize("make", ["no_grad()", "no_grad", "enable_grad()", "inference_mode()"])
def test_grad_mode_decorating_a_class_warns_and_wraps_it(T, make):
    deco = eval("T." + make)  # noqa: S307 - a fixed expression

    class C:
        def __init__(self):
            self.enabled = T.is_grad_enabled()

    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):
        wrapped = deco(C)
    assert not isinstance(wrapped, type) and wrapped.__name__ == "<lambda>"
    obj = wrapped()
    assert isinstance(obj, C)
    assert obj.enabled == (make == "enable_grad()")


# ---------------------------------------------------------------------------------------------
# mT / T on 0-d and 1-d tensors


def test_mT_of_a_0d_tensor_is_the_tensor_itself(T):
    import nbgrad._tensor_methods as tm

    tm._WARNED.discard("mT0")
    x = T.tensor(3.0, requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y = x.mT
    assert y is x
    if T is nbgrad:  # PyTorch warns once per process
        assert "Tensor.mT is deprecated on 0-D tensors" in str(w[0].message)
    (g,) = T.autograd.grad(x.mT * 2, x)
    assert g.item() == 2.0
    with pytest.raises(RuntimeError, match="tensor.mT is only supported on matrices"):
        T.tensor([1.0, 2.0]).mT


def test_T_of_0d_and_1d_tensors_is_a_permute_view(T):
    for x in (T.tensor(3.0, requires_grad=True), T.tensor([1.0, 2.0], requires_grad=True)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            y = x.T
        assert y is not x and y._base is x
        assert y.grad_fn.name() == "PermuteBackward0"


# ---------------------------------------------------------------------------------------------
# In-place ops and views: retain_grad, leaf views, views following their base (autograd)

W3 = [5.0, 6.0, 7.0]


def test_retain_grad_then_inplace_through_a_view_holds_the_newest_version(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y.retain_grad()
    y[:2].mul_(3)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * T.tensor(W3)).sum().backward()
    np.testing.assert_array_equal(arr(y.grad), W3)
    np.testing.assert_array_equal(arr(x.grad), [15.0, 18.0, 7.0])


def test_inplace_on_a_requires_grad_leaf_view_of_a_no_grad_tensor_raises(T):
    msg = "a view of a leaf Variable that requires grad is being used in an in-place operation."
    base = T.zeros(3)
    v = base[:2]
    v.requires_grad_(True)
    assert v.is_leaf and v._base is base
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v.mul_(2)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v[:1].mul_(2)  # a view of that leaf view
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v.mul_(T.tensor([1.0, 2.0], requires_grad=True))
    with T.no_grad():
        v.add_(1)  # not recorded: allowed
    np.testing.assert_array_equal(arr(base), [1.0, 1.0, 0.0])


def test_views_created_in_no_grad_mode_cannot_be_modified_with_grad(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    for make in (lambda: T.zeros(3), lambda: T.zeros(3, requires_grad=True) * 1):
        base = make()
        with T.no_grad():
            v = base[:2]
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being"):
            v.mul_(x)
    base = T.zeros(3)
    with T.no_grad():
        v = base[:2]
    v.mul_(2)  # nothing requires grad: allowed
    np.testing.assert_array_equal(arr(v), [0.0, 0.0])


def test_a_view_reads_its_base_after_the_base_changed_in_place(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    y.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * T.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 20.0, 0.0])


def test_a_view_reads_its_base_after_a_sibling_view_changed_in_place(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    y[1:].mul_(2)  # element 1 is shared with v
    (v * T.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 20.0, 0.0])


def test_transposed_view_after_base_inplace(T):
    x = T.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = y.t()
    y.mul_(2)
    (v * T.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[2.0, 6.0], [4.0, 8.0]])


def test_view_of_a_no_grad_tensor_requires_grad_once_the_base_gets_history(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = T.zeros(3)
    v = base[:2]
    assert not v.requires_grad
    base.copy_(x)
    assert v.requires_grad and v.grad_fn.name() == "AsStridedBackward0"
    (v * T.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 10.0, 0.0])


def test_leaf_view_follows_its_base_after_a_recorded_inplace(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    base = T.ones(3)
    v = base[:2]
    v.requires_grad_(True)
    base.mul_(x)
    assert v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [1.0, 1.0, 0.0])


def test_views_after_an_unrecorded_inplace_keep_gradients(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 3
    v = y[:2]
    with T.no_grad():
        y.mul_(2)
    (v * 1).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [3.0, 3.0, 0.0])


def test_outputs_of_multi_view_ops_cannot_follow_an_inplace(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    p, q = (x * 1).split(2)
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and is being modified"):
        p.mul_(2)
    a, b, c, d = (x * 1).unbind()
    with pytest.raises(RuntimeError, match="Output 1 of Unbind is a view and is being modified"):
        b.mul_(2)
    y = x * 1
    p, q = y.split([1, 3])
    y.mul_(2)
    with pytest.raises(RuntimeError, match="Output 1 of SplitWithSizes is a view and its base"):
        (q * 1).sum().backward()  # PyTorch raises already when q's grad_fn is read


def test_custom_function_view_outputs_cannot_be_modified_in_place(T):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:2]

        @staticmethod
        def backward(ctx, g):
            return T.cat([g, T.zeros(1)])

    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = F.apply(y)
    with pytest.raises(RuntimeError, match="Output 0 of F is a view and is being modified inplace"):
        v.mul_(2)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="Output 0 of F is a view and its base or another view"):
        (v * 1).sum().backward()


# ---------------------------------------------------------------------------------------------
# How a view was made (PyTorch's CreationMeta): views made under no_grad, outputs of
# split/chunk/unbind, views of views; stale views; detach() aliases

NO_GRAD_BASE_MODIFIED = (
    "A view was created in no_grad mode and its base or another view of its base has been "
    "modified inplace with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the "
    "inplace either both inside the no_grad block (if you don't want the inplace to be tracked) "
    "or both outside (if you want the inplace to be tracked)."
)
MULTI_SUFFIX = (
    " This view is the output of a function that returns multiple views. Such functions do not "
    "allow the output views to be modified inplace. You should replace the inplace operation "
    "by an out-of-place one."
)
NO_GRAD_VIEWS = {
    "getitem": lambda v: v[0],
    "narrow": lambda v: v.narrow(0, 0, 1),
    "t": lambda v: v.t(),
    "transpose": lambda v: v.transpose(0, 1),
    "permute": lambda v: v.permute(1, 0),
    "view": lambda v: v.view(4),
    "reshape": lambda v: v.reshape(4),
    "expand": lambda v: v.expand(3, 2, 2),
    "unsqueeze": lambda v: v.unsqueeze(0),
    "squeeze": lambda v: v[:1].squeeze(0),
    "split": lambda v: v.split(1)[0],
    "chunk": lambda v: v.chunk(2)[1],
    "unbind": lambda v: v.unbind()[1],
}


@pytest.mark.parametrize("make", list(NO_GRAD_VIEWS))
def test_a_no_grad_view_requires_grad_as_its_root_base(T, make):
    """PyTorch: a view without a grad_fn requires grad while its *root* base does, not as the
    tensor it was taken from: a requires-grad leaf view of a tensor that does not require grad
    gives views that do not."""
    x = T.ones(2, 2, requires_grad=True)
    with T.no_grad():
        v = NO_GRAD_VIEWS[make](x)
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    leaf_view = T.ones(4).view(2, 2).requires_grad_()
    with T.no_grad():
        w = NO_GRAD_VIEWS[make](leaf_view)
    assert not w.requires_grad and w.is_leaf
    plain = T.ones(2, 2)
    with T.no_grad():
        u = NO_GRAD_VIEWS[make](plain)
    assert not u.requires_grad
    plain.requires_grad_()  # computed from the base, when asked
    assert u.requires_grad
    plain.requires_grad_(False)
    assert not u.requires_grad


def test_a_no_grad_view_gets_no_gradient_of_its_own(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = T.tensor([1.0, 1.0], requires_grad=True)
    with T.no_grad():
        v = x[1:]
        e = T.broadcast_to(x[:1], (2,))
    assert (v * 2).grad_fn.next_functions == ((None, 0), (None, 0))
    y = v * 2 + e + w
    y.sum().backward()
    assert v.grad is None and e.grad is None and x.grad is None
    np.testing.assert_array_equal(arr(w.grad), [1.0, 1.0])
    v.requires_grad_(True)  # its own flag: now a leaf of its own
    (v * 3).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), [3.0, 3.0])
    assert x.grad is None


def _stale_views(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    with T.no_grad():
        nograd = y[:2]
    split = y.split(2)[1]
    y.mul_(2)
    return x, y, nograd, split


def test_stale_views_refuse_their_grad_fn(T):
    """After an in-place change of their base, a no_grad view and an output of split raise
    when their grad_fn is read (also by is_leaf, or by using them in a recorded op), forever;
    PyTorch prints them with grad_fn=<Invalid>.  The base itself is fine."""
    x, y, nograd, split = _stale_views(T)
    split_msg = (
        "Output 1 of Split is a view and its base or another view of its base has been "
        "modified inplace." + MULTI_SUFFIX
    )
    for v, msg in ((nograd, NO_GRAD_BASE_MODIFIED), (split, split_msg)):
        assert v.requires_grad
        for _ in range(2):
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                v.grad_fn
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                v.is_leaf
        assert "grad_fn=<Invalid>" in repr(v)
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            v * 2
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            v[:1]
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            v.register_hook(lambda g: g)
        with T.no_grad():
            np.testing.assert_array_equal(arr(v * 1), arr(y[:2] if v is nograd else y[2:]))
    nograd.retain_grad()  # it had no grad_fn: a leaf to retain_grad (PyTorch)
    with pytest.raises(RuntimeError, match=re.escape(split_msg)):
        split.retain_grad()
    y.sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 2.0, 2.0, 2.0])


def test_outputs_of_split_go_stale_after_any_write(T):
    """Also an unrecorded write through the view itself, or a write into a tensor that did not
    require grad before (its split outputs then require grad, but cannot follow)."""
    x = T.tensor([[1.0], [2.0]], requires_grad=True)
    p = x.chunk(3, 0)[1]
    with T.no_grad():
        p.clamp_(-0.5, 0.5)
    with pytest.raises(RuntimeError, match="Output 1 of Split is a view and its base"):
        p.is_leaf
    base = T.ones(3, dtype=T.float64)
    q = base.chunk(3, 0)[2]
    assert not q.requires_grad
    base.sub_(T.tensor([1.0], dtype=T.float64, requires_grad=True), alpha=2)
    assert q.requires_grad
    msg = "A view was created in no_grad mode and its base or another view of its base has been"
    with pytest.raises(
        RuntimeError,
        match=re.escape(msg + " modified inplace with grad mode enabled." + MULTI_SUFFIX),
    ):
        q.grad_fn


@pytest.mark.parametrize("op", ["div_", "iadd", "imul"])
def test_inplace_on_a_split_output_of_a_tensor_without_grad_raises(T, op):
    """An output of split/chunk/unbind cannot be written in place with a recorded write even
    when it has no grad_fn (made from a tensor that does not require grad)."""
    a = T.tensor([[1.0], [2.0]], dtype=T.float64)
    p = a.chunk(2, 0)[0]
    w = T.tensor([[2.0]], dtype=T.float64, requires_grad=True)
    msg = (
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled." + MULTI_SUFFIX
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        if op == "div_":
            p.div_(w)
        elif op == "iadd":
            p += w
        else:
            p *= w
    p.mul_(2)  # not recorded: allowed
    np.testing.assert_array_equal(arr(a), [[2.0], [2.0]])
    with T.no_grad():
        s = a.split(1)[0]
    msg = "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
    with pytest.raises(RuntimeError, match=re.escape(msg + " Given that")):
        s.mul_(w)


def test_a_view_of_a_no_grad_view_keeps_its_creation_meta(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    with T.no_grad():
        v = y[:2]
    w = v[:1]  # grad mode: a SliceBackward0, but still a view made in no_grad mode
    assert w.grad_fn.name() == "SliceBackward0"
    msg = (
        "Output 0 of Slice is a view of a view which was created in no_grad mode and is being "
        "modified inplace with grad mode enabled."
    )
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        w.mul_(2)
    u = y.split(2)[0][:1]
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Output 0 of Slice is a view and is being modified inplace." + MULTI_SUFFIX
        ),
    ):
        u.mul_(2)


def test_views_made_in_inference_mode(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    with T.inference_mode():
        v = y[:2]
        s = y.split(1)[0]
    assert not v.is_inference() and v.requires_grad and v.grad_fn is None
    msg = "A view was created in inference mode and is being modified inplace in normal mode."
    for t in (v, s):
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            t.mul_(2)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="A view was created in inference mode and its base"):
        v.grad_fn


def test_a_view_of_an_empty_base_follows_an_inplace(T):
    x = T.zeros((1, 0), dtype=T.float64, requires_grad=True)
    y = T.softmax(x, -2)
    v = y.flatten()
    y.pow_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"


def test_views_follow_a_write_made_before_their_base_required_grad(T):
    """PyTorch's getter compares versions when asked: a view of a tensor written in place before
    it started to require grad follows that write then (or is stale), a newer view does not."""
    b = T.zeros(3)
    v = b[:2]
    with T.no_grad():
        u = b[1:]
    b.add_(1)
    w = b[1:]
    b.requires_grad_()
    assert v.grad_fn.name() == "AsStridedBackward0" and v.requires_grad
    assert w.grad_fn is None and w.requires_grad
    with pytest.raises(RuntimeError, match=re.escape(NO_GRAD_BASE_MODIFIED)):
        u.grad_fn


def test_copyslices_selects_the_overwritten_region(T):
    """The base's gradient in the region written through a view is the op's gradient, copied
    in (PyTorch), so a NaN of the overwritten values' gradient does not leak into it."""
    x = T.tensor([[[1.0]]], dtype=T.float64, requires_grad=True)
    y = T.triu(x, -1)
    v = y[None, ...]
    v[0] = T.tensor([[[1.0]]], dtype=T.float64)
    (v * T.tensor([[[[1.0], [float("nan")]]]], dtype=T.float64)).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [[[0.0]]])
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[1:].mul_(2)
    (y * T.tensor([float("inf"), 1.0, 2.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [float("inf"), 2.0, 4.0])


def test_views_follow_writes_through_detached_aliases(T):
    """detach() shares the version counter: a write through the alias makes the other views
    follow (regenerated, or stale for split outputs), but no CopySlices lands on the original;
    a detached tensor is no view."""
    x = T.tensor([[1.0, 2.0]], requires_grad=True)
    d = x.detach()
    assert d._base is None and not d._is_view()
    u = x.unsqueeze(0)
    p = x.split(1, 1)[0]
    d[0] = T.tensor([5.0, 6.0], requires_grad=True)
    assert u.grad_fn.name() == "AsStridedBackward0"
    with pytest.raises(RuntimeError, match="Output 0 of Split is a view and its base"):
        p.grad_fn
    assert d.grad_fn.name() == "torch::autograd::CopySlices" and x.is_leaf
    y = x * 1
    v = y[0, :1]
    dv = v.detach()
    dv.mul_(T.tensor([3.0], requires_grad=True))
    assert dv.grad_fn.name() == "MulBackward0" and y.grad_fn.name() == "MulBackward0"
    assert v.grad_fn.name() == "AsStridedBackward0"
    leaf_view = y.detach().requires_grad_()
    w = leaf_view.t()
    with T.no_grad():
        y[0, 1:].fill_(0.0)  # w's grad_fn reads leaf_view's accumulator again
    assert w.grad_fn.name() == "AsStridedBackward0"
    (w * 2).sum().backward()
    np.testing.assert_array_equal(arr(leaf_view.grad), [[2.0, 2.0]])


def test_detach_keeps_no_graph_alive():
    import gc
    import weakref

    x = nbgrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    v = y[1:]
    ref = weakref.ref(y)
    d, dv = y.detach(), v.detach()
    del y, v
    gc.collect()
    assert ref() is None
    assert dv.storage_offset() == 1 and dv[1:].storage_offset() == 2 and d.storage_offset() == 0


def test_detach_in_place_refuses_views(T):
    msg = "Can't detach views in-place. Use detach() instead. If you are using DistributedDataPa"
    v = T.zeros(3)[1:]
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        v.detach_()
    v.detach().detach_()  # a detached alias is no view


# ---------------------------------------------------------------------------------------------
# Writes into expanded tensors (internal overlap), fill_ and whole-tensor setitem

INTERNAL = (
    "unsupported operation: more than one element of the written-to tensor refers to a single "
    "memory location. Please clone() the tensor before performing the operation."
)
EXPANDED_OK = {
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_(2.5),
    "tril_": lambda t: t.tril_(),
    "triu_": lambda t: t.triu_(1),
    "setitem_row": lambda t: t.__setitem__(0, 7.0),
}
EXPANDED_RAISE = {
    "fill_tensor": lambda t: t.fill_(t.new_tensor(2.0)),
    "add_": lambda t: t.add_(1),
    "mul_": lambda t: t.mul_(2),
    "copy_": lambda t: t.copy_(t.new_zeros(3, 3)),
    "clamp_": lambda t: t.clamp_(0, 1),
    "setitem_slice": lambda t: t.__setitem__(slice(0, 2), 7.0),
    "setitem_column": lambda t: t.__setitem__((slice(None), 0), 7.0),
    "setitem_all": lambda t: t.__setitem__(Ellipsis, 7.0),
}


@pytest.mark.parametrize("case", list(EXPANDED_OK))
def test_fills_of_an_expanded_tensor_are_allowed(T, case):
    """PyTorch fills and tril_/triu_ an expanded tensor; a memory location shared by several
    elements ends up written when any of them is (its element loop)."""
    t = T.tensor([[1.0, 2.0, 3.0]]).expand(3, 3)
    EXPANDED_OK[case](t)
    want = {
        "zero_": [0.0, 0.0, 0.0],
        "fill_": [2.5, 2.5, 2.5],
        "tril_": [1.0, 0.0, 0.0],
        "triu_": [0.0, 0.0, 0.0],
        "setitem_row": [7.0, 7.0, 7.0],
    }[case]
    np.testing.assert_array_equal(arr(t), [want] * 3)


@pytest.mark.parametrize("case", list(EXPANDED_RAISE))
def test_other_writes_into_an_expanded_tensor_raise(T, case):
    t = T.tensor([[1.0, 2.0, 3.0]]).expand(3, 3)
    with pytest.raises(RuntimeError, match=re.escape(INTERNAL)):
        EXPANDED_RAISE[case](t)


def test_a_copy_of_the_same_data_into_an_expanded_tensor_is_a_no_op(T):
    """PyTorch's copy_ returns early when the source is the destination's very data (same
    address, sizes, strides), before the overlap check; the version still moves."""
    x = T.tensor([1.0, 2.0]).expand(3, 2)
    x.copy_(x)
    x[0:2] = x[1:3]  # along the expanded dim these are the same memory
    x[0] = x[2]  # no overlap in the row itself
    assert x._version == 3
    np.testing.assert_array_equal(arr(x), [[1.0, 2.0]] * 3)
    with pytest.raises(RuntimeError, match=re.escape(INTERNAL)):
        x.copy_(x.clone())


def test_masked_fill_of_an_expanded_tensor_warns(T):
    t = T.tensor([[1.0, 2.0, 3.0]]).expand(2, 3)
    with pytest.warns(UserWarning, match="Use of masked_fill_ on expanded tensors is deprecated"):
        t.masked_fill_(T.tensor([True, False, True]), 5.0)
    np.testing.assert_array_equal(arr(t), [[5.0, 2.0, 5.0]] * 2)
    with pytest.warns(UserWarning, match="Use of index_put_ on expanded tensors is deprecated"):
        t[T.tensor([True, False])] = 0.0
    np.testing.assert_array_equal(arr(t), [[0.0, 0.0, 0.0]] * 2)


def test_zero_of_an_expanded_leaf_view(T):
    x = T.tensor([[1.0]], dtype=T.float64).expand((2, 1)).requires_grad_()
    with T.no_grad():
        x.zero_()
    np.testing.assert_array_equal(arr(x), [[0.0], [0.0]])
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x.zero_()  # grad mode: the leaf-view error comes first


def test_backward_through_a_fill_of_an_expanded_view_raises(T):
    x = T.ones(1, requires_grad=True)
    y = x * 1
    e = y.expand(3)
    e.fill_(2.0)
    assert e.grad_fn.name() == "AsStridedBackward0"
    with pytest.raises(RuntimeError, match=re.escape(INTERNAL)):
        y.sum().backward()


def test_fill_node_names_and_the_fill_value_gradient(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    assert (x * 1).fill_(2).grad_fn.name() == "FillBackward2"
    assert (x * 1).zero_().grad_fn.name() == "ZeroBackward0"
    v = T.tensor(3.0, requires_grad=True)
    y = (x * 1).fill_(v)
    assert y.grad_fn.name() == "FillBackward3"
    (y * T.tensor([2.0, 5.0])).sum().backward()
    assert v.grad.item() == 7.0
    np.testing.assert_array_equal(arr(x.grad), [0.0, 0.0])
    with pytest.raises(RuntimeError, match="fill_ only supports 0-dimension value tensor"):
        (x * 1).fill_(T.ones(1))


SETITEM_NODES = [
    ((), Ellipsis, "CopyBackwards"),  # 0-d: the scalar becomes a 0-d tensor of the same size
    ((), (), "CopyBackwards"),
    ((), None, "CopySlices"),
    ((2,), Ellipsis, "FillBackward3"),
    ((2,), slice(None), "FillBackward3"),
    ((2,), slice(0, 100), "FillBackward3"),
    ((2,), slice(-5, None), "CopySlices"),  # PyTorch only skips a literal 0 start
    ((2,), (Ellipsis, slice(None)), "FillBackward3"),
    ((2,), 0, "CopySlices"),
    ((2, 3), (slice(None), slice(0, 3)), "FillBackward3"),
    ((2, 3), (slice(None), 0), "CopySlices"),
]


@pytest.mark.parametrize("shape,idx,name", SETITEM_NODES, ids=[repr(c[1]) for c in SETITEM_NODES])
def test_setitem_of_the_whole_tensor_writes_the_tensor_itself(T, shape, idx, name):
    """PyTorch's setitem with indices that keep the whole tensor (Ellipsis, full slices) writes
    the tensor itself (copy_ or a fill_ with a 0-d value), else a view of it (CopySlices)."""
    x = T.ones(shape, requires_grad=True)
    y = x * 1
    y[idx] = 3.0
    assert y.grad_fn.name() == "torch::autograd::" * (name.startswith("Copy")) + name
    assert y._version == 1


def test_setitem_of_the_whole_tensor_with_a_tensor_value(T):
    x = T.ones(2, 3, requires_grad=True)
    chains = {}
    for shape in [(3,), (1, 3), (2, 3), (1, 2, 3), (2, 1)]:
        v = T.ones(shape, requires_grad=True)
        y = x * 1
        y[...] = v
        n, chain = y.grad_fn.next_functions[1][0], []
        while n.name() != "torch::autograd::AccumulateGrad":
            chain.append(n.name())
            n = n.next_functions[0][0]
        chains[shape] = (y.grad_fn.name(), chain)
        (y * T.arange(6.0).view(2, 3)).sum().backward()
        want = np.arange(6.0).reshape(2, 3)
        np.testing.assert_array_equal(
            arr(v.grad),
            want.reshape(shape)
            if v.numel() == 6
            else want.sum(0).reshape(shape)
            if shape[-1] == 3
            else want.sum(1).reshape(shape),
        )
    copy = "torch::autograd::CopyBackwards"
    assert chains == {
        (3,): (copy, ["ExpandBackward0", "ViewBackward0"]),
        (1, 3): (copy, ["ExpandBackward0", "ViewBackward0"]),
        (2, 3): (copy, []),
        (1, 2, 3): (copy, ["ViewBackward0"]),
        (2, 1): (copy, ["ExpandBackward0", "ViewBackward0"]),
    }
    leaf = T.ones(2, requires_grad=True)
    msg = "a leaf Variable that requires grad is being used in an in-place operation."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        leaf[...] = 3.0
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        leaf[0] = 3.0


# ---------------------------------------------------------------------------------------------
# In-place on a view of a non-contiguous base that requires grad (CopySlices over as_strided)


BASES = {
    "transposed": lambda x: x.t() * 1,  # elementwise results keep the permuted layout
    "permuted3d": lambda x: x.reshape(2, 3, 2).permute(2, 0, 1) * 1,
}
VIEWS = {
    "row": lambda b: b[1],
    "cols": lambda b: b[..., 1:],
    "strided": lambda b: b[..., ::2],
    "transposed_back": lambda b: b.swapaxes(0, -1),
    "element": lambda b: b[0, 1:2],
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("base", list(BASES))
def test_inplace_on_a_view_of_a_non_contiguous_base(T, base, view):
    """The written region's gradient goes through the in-place op, the rest of the base's
    gradient passes unchanged; checked against the closed form (and PyTorch)."""
    data = np.arange(1.0, 13.0).reshape(3, 4) if base == "transposed" else np.arange(1.0, 13.0)
    x = T.tensor(data, dtype=T.float64, requires_grad=True)
    b = BASES[base](x)
    assert not b.is_contiguous() and b._base is None
    v = VIEWS[view](b)
    v.mul_(3.0)
    w = T.tensor(np.linspace(-1.0, 2.0, b.numel()).reshape(tuple(b.shape)), dtype=T.float64)
    (b * w).sum().backward()
    # closed form: d/dx of sum(w * b) with the view's elements scaled by 3
    scale = np.ones(tuple(b.shape))
    VIEWS[view](scale)[...] = 3.0
    probe = np.arange(x.numel(), dtype=np.float64).reshape(tuple(x.shape))
    pos = BASES[base](nbgrad.tensor(probe)).numpy().astype(int)  # x's index of each b element
    want = np.zeros(x.numel())
    np.add.at(want, pos.reshape(-1), (w.numpy() * scale).reshape(-1))
    np.testing.assert_allclose(arr(x.grad).reshape(-1), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(arr(b), BASES[base](T.tensor(data)).numpy() * scale)


# ---------------------------------------------------------------------------------------------
# Partially overlapping in-place operands (PyTorch's MemoryOverlap checks)

OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)
OVERLAPPING = {
    "add_": lambda x: x[1:].add_(x[:-1]),
    "sub_alpha": lambda x: x[1:].sub_(x[:-1], alpha=2),
    "copy_": lambda x: x[1:].copy_(x[:-1]),
    "transposed": lambda x: x[:4].view(2, 2).add_(x[:4].view(2, 2).t()),
    "element": lambda x: x[1:4].add_(x[2:3].squeeze(0)),  # a 0-d view inside
    "pow_": lambda x: x[1:].pow_(x[:-1]),
    "lt_": lambda x: x[1:].lt_(x[:-1]),
    "lerp_": lambda x: x[1:].lerp_(x[:-1], 0.5),
    "clamp_min_tensor": lambda x: x[1:].clamp_(min=x[:-1]),
    "setitem_slice": lambda x: x.__setitem__(slice(1, None), x[:-1]),
    "setitem_advanced_full": lambda x: x.__setitem__(x.new_tensor([0, 1, 2]).long(), x[:3]),
    "scatter_full": lambda x: x[:3].scatter_(0, x.new_tensor([2, 1, 0]).long(), x[:3]),
}
ALLOWED = {
    "full": lambda x: x.add_(x),
    "same_view": lambda x: x[1:].add_(x[1:]),
    "disjoint": lambda x: x[:3].mul_(x[3:]),
    "interleaved_strided": lambda x: x[::2].mul_(x[1::2]),  # not dense: PyTorch can't tell
    "expanded": lambda x: x[1:4].add_(x[1:2].expand(3) * 0),
    "masked_fill_value": lambda x: x[1:4].masked_fill_(x[1:4] > 2, x[2]),
    "fill_tensor": lambda x: x[1:4].fill_(x[2]),
    "setitem_same_region": lambda x: x.__setitem__(slice(0, 3), x[0:3]),
    "setitem_scalar_tensor": lambda x: x.__setitem__(slice(0, 2), x[1]),
    "copy_full": lambda x: x.copy_(x),
}


@pytest.mark.parametrize("case", list(OVERLAPPING))
def test_partially_overlapping_inplace_raises(T, case):
    x = T.arange(6.0)
    with pytest.raises(RuntimeError, match=re.escape(OVERLAP)):
        OVERLAPPING[case](x)


@pytest.mark.parametrize("case", list(ALLOWED))
def test_inplace_without_partial_overlap_is_allowed(T, case):
    x = T.arange(6.0)
    ALLOWED[case](x)


# ---------------------------------------------------------------------------------------------
# Forward mode: in-place ops on views of dual tensors


def tangent(T, t):
    return arr(fwd(T).unpack_dual(t).tangent)


def test_forward_ad_inplace_on_a_view_updates_the_base_tangent(T):
    with fwd(T).dual_level():
        x = fwd(T).make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([1.0, 1.0, 1.0]))
        y = x * 2
        v = y[:2]
        v.mul_(3)
        np.testing.assert_array_equal(tangent(T, y), [6.0, 6.0, 2.0])
        np.testing.assert_array_equal(tangent(T, v), [6.0, 6.0])
        w = y[1:]  # a view made afterwards reads the updated tangent
        np.testing.assert_array_equal(tangent(T, w), [6.0, 2.0])


def test_forward_ad_views_see_inplace_on_their_base(T):
    with fwd(T).dual_level():
        x = fwd(T).make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([1.0, 1.0, 1.0]))
        y = x * 2
        v = y[:2]
        y.mul_(3)
        np.testing.assert_array_equal(tangent(T, v), [6.0, 6.0])


def test_forward_ad_dual_copied_into_a_view_of_a_plain_tensor(T):
    with fwd(T).dual_level():
        base = T.tensor([1.0, 2.0, 3.0])
        d = fwd(T).make_dual(T.tensor([5.0, 6.0]), T.tensor([1.0, 2.0]))
        v = base[1:]
        v.copy_(d)
        np.testing.assert_array_equal(tangent(T, base), [0.0, 1.0, 2.0])
        np.testing.assert_array_equal(tangent(T, v), [1.0, 2.0])
        plain = T.tensor([1.0, 2.0, 3.0])
        u = plain[:2]
        plain.copy_(fwd(T).make_dual(T.tensor([5.0, 6.0, 7.0]), T.tensor([1.0, 2.0, 3.0])))
        np.testing.assert_array_equal(tangent(T, u), [1.0, 2.0])


def test_forward_ad_row_inplace_and_transposed_views(T):
    with fwd(T).dual_level():
        x = fwd(T).make_dual(T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.ones(2, 2))
        y = x * 1
        y[0].mul_(y[1])
        np.testing.assert_array_equal(tangent(T, y), [[4.0, 6.0], [1.0, 1.0]])
        x = fwd(T).make_dual(T.tensor([[1.0, 2.0], [3.0, 4.0]]), T.tensor([[1.0, 2.0], [3.0, 4.0]]))
        y = x * 1
        v = y.t()
        v[0].mul_(10)
        np.testing.assert_array_equal(tangent(T, y), [[10.0, 2.0], [30.0, 4.0]])
        np.testing.assert_array_equal(tangent(T, v), [[10.0, 30.0], [2.0, 4.0]])


@pytest.mark.parametrize("op", ["zero_", "fill_", "copy_", "setitem"])
def test_forward_ad_inplace_with_a_constant_zeroes_the_tangent(T, op):
    with fwd(T).dual_level():
        x = fwd(T).make_dual(T.tensor([1.0, 2.0, 3.0]), T.tensor([1.0, 1.0, 1.0]))
        y = x * 2
        v = y[1:]
        if op == "zero_":
            v.zero_()
        elif op == "fill_":
            v.fill_(3.0)
        elif op == "copy_":
            v.copy_(T.tensor([5.0, 5.0]))
        else:
            y[0] = 7.0
        want = [0.0, 2.0, 2.0] if op == "setitem" else [2.0, 0.0, 0.0]
        np.testing.assert_array_equal(tangent(T, y), want)


def test_forward_ad_inplace_on_the_dual_writes_the_users_tangent(T):
    with fwd(T).dual_level():
        t = T.tensor([1.0, 1.0, 1.0])
        x = fwd(T).make_dual(T.tensor([1.0, 2.0, 3.0]), t)
        x.mul_(2)
        np.testing.assert_array_equal(tangent(T, x), [2.0, 2.0, 2.0])
        np.testing.assert_array_equal(arr(t), [2.0, 2.0, 2.0])  # PyTorch shares it


def test_forward_ad_tangent_takes_the_primal_layout(T):
    with fwd(T).dual_level():
        p = T.ones(2, 3)
        tt = T.ones(3, 2).t()
        d = fwd(T).make_dual(p, tt)
        assert fwd(T).unpack_dual(d).tangent.stride() == (3, 1)


# ---------------------------------------------------------------------------------------------
# Seeded random programs: views of a (possibly non-contiguous or plain) base, in-place ops on
# the base and on the views, then every view used; compared with PyTorch: values, gradients,
# the views' grad_fn names, tangents, and the error raised (if any).

FUZZ_VIEWS = [
    lambda t: t[1],
    lambda t: t[:, 1:],
    lambda t: t.t(),
    lambda t: t[::2],
    lambda t: t[1:, :2],
    lambda t: t.reshape(-1)[2:7],
    lambda t: t.narrow(1, 1, 2),
    lambda t: t.swapaxes(0, 1)[1:],
    lambda t: t.unsqueeze(0)[0],
]
FUZZ_OPS = [
    lambda v, o: v.mul_(2.5),
    lambda v, o: v.add_(o(v)),
    lambda v, o: v.sigmoid_(),
    lambda v, o: v.copy_(o(v) * 3),
    lambda v, o: v.zero_(),
    lambda v, o: v.mul_(o(v) + 2),
    lambda v, o: v.clamp_(min=0.2),
    lambda v, o: v.__setitem__(0, 1.5),
    lambda v, o: v.retain_grad() if v.requires_grad else None,
    lambda v, o: _no_grad_mul(v),
]


def _no_grad_mul(v):
    with (torch if isinstance(v, torch.Tensor) else nbgrad).no_grad():
        v.mul_(1.5)


def _fuzz_plan(seed):
    import random

    rng = random.Random(seed)
    steps, nv = [], 0
    for _ in range(rng.randint(1, 5)):
        if rng.random() < 0.5 or nv == 0:
            steps.append(("view", nv, rng.randrange(len(FUZZ_VIEWS))))
            nv += 1
        else:
            steps.append(("op", rng.choice(list(range(nv)) + [-1]), rng.randrange(len(FUZZ_OPS))))
    steps.append(("op", rng.choice(list(range(nv)) + [-1]), rng.randrange(len(FUZZ_OPS))))
    return rng.randrange(3), steps, nv


def _fuzz_program(L, seed, forward_mode):
    kind, steps, nv = _fuzz_plan(seed)
    g = np.random.default_rng(seed)
    data, tdata, wdata, wt = (g.standard_normal(s) for s in ((4, 4), (4, 4), 16, 16))
    fw = L.autograd.forward_ad
    if forward_mode:
        fw.enter_dual_level()
        x = fw.make_dual(L.tensor(data, dtype=L.float64), L.tensor(tdata, dtype=L.float64))
        w = fw.make_dual(L.tensor(wdata, dtype=L.float64), L.tensor(wt, dtype=L.float64))
    else:
        x = L.tensor(data, dtype=L.float64, requires_grad=True)
        w = L.tensor(wdata, dtype=L.float64, requires_grad=True)
    try:
        b = [lambda: x * 1, lambda: (x.t() * 1).t(), lambda: L.zeros(4, 4, dtype=L.float64)][kind]()
        views = {}
        for step, a, c in steps:
            if step == "view":
                views[a] = FUZZ_VIEWS[c](b)
            else:
                FUZZ_OPS[c](views.get(a, b), lambda v: w.reshape(-1)[: v.numel()].reshape(v.shape))
            for v in views.values():
                # PyTorch regenerates a view's grad_fn when it is read (nbgrad at the in-place
                # op); reading it here keeps PyTorch's lazy quirk (an in-place op on a view of
                # a no-grad base that got history meanwhile, before any read: "a leaf
                # Variable...") out of the comparison
                v.grad_fn
        outs = [b] + [views[a] for a in range(nv)]
        if forward_mode:
            res = []
            for o in outs:
                t = fw.unpack_dual(o).tangent
                res.append((arr(o), None if t is None else arr(t)))
            return res
        names = [None if v.grad_fn is None else v.grad_fn.name() for v in outs[1:]]
        loss = (b * L.tensor(np.arange(1.0, 17.0).reshape(4, 4), dtype=L.float64)).sum()
        for v in outs[1:]:
            loss = loss + (v * 0.5 + v * v).sum()
        if loss.requires_grad:
            loss.backward()
        retained = [arr(v.grad) if v.retains_grad else None for v in outs]
        return arr(b), arr(x.grad), arr(w.grad), names, retained
    finally:
        if forward_mode:
            fw.exit_dual_level()


def _same(a, b):
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    if a is None or b is None:
        z = a if a is not None else b
        return z is None or not isinstance(z, np.ndarray) or not np.any(z)  # None == zeros
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and np.allclose(a, b, rtol=1e-10, atol=1e-12)
    return a == b


@needs_torch
@pytest.mark.parametrize("forward_mode", [False, True], ids=["reverse", "forward"])
def test_random_inplace_view_programs_match_torch(forward_mode):
    bad = []
    for seed in range(80):
        got = []
        for L in (torch, nbgrad):
            try:
                got.append(("ok", _fuzz_program(L, seed, forward_mode)))
            except Exception as e:  # the same error class and text head as PyTorch
                got.append(("error", type(e).__name__, str(e)[:50]))
        (t, n) = got
        if t[0] != n[0] or not _same(t[1:], n[1:]):
            bad.append((seed, _fuzz_plan(seed), t[0], n[0]))
    assert not bad, bad[:3]


def _mul2_dirty(T):
    class Mul2(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Mul2


def test_custom_function_marking_a_view_dirty_rewrites_the_base_history(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    assert _mul2_dirty(T).apply(v) is v
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    (y * T.tensor([1.0, 10.0, 100.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 20.0, 100.0])


def test_views_follow_a_base_marked_dirty_by_a_custom_function(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[:2]
    _mul2_dirty(T).apply(y)
    assert v.grad_fn.name() == "AsStridedBackward0"
    (v * T.tensor([1.0, 10.0])).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [2.0, 20.0, 0.0])


def test_views_are_regenerated_after_an_unrecorded_inplace_too(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 3
    v, u = y[:2], y[1:]
    with T.no_grad():
        v.mul_(2)
    assert v.grad_fn.name() == "AsStridedBackward0"
    assert u.grad_fn.name() == "AsStridedBackward0"
    assert y.grad_fn.name() == "MulBackward0"
    (u * 1).sum().backward()
    np.testing.assert_array_equal(arr(x.grad), [0.0, 3.0, 3.0, 3.0])
    w = x[:2]  # a view of a leaf
    with T.no_grad():
        x.mul_(1)
    assert w.grad_fn.name() == "AsStridedBackward0"
    assert w.grad_fn.next_functions[0][0].name() == "torch::autograd::AccumulateGrad"


def test_no_grad_views_cannot_be_used_after_their_base_changed(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    with T.no_grad():
        w = y[2:]
    y.mul_(2)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        (w * 1).sum().backward()  # PyTorch raises already when w's grad_fn is read


def test_retain_grad_follows_a_regenerated_view(T):
    x = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    v = y[1:]
    v.retain_grad()
    v.clamp_(min=2.5)  # recorded: v's grad_fn is new
    with T.no_grad():
        v.mul_(1.0)  # not recorded: regenerated again
    (v * v).sum().backward()
    np.testing.assert_array_equal(arr(v.grad), [5.0, 6.0, 8.0])


# -- create_graph: which gradients are in the graph (NOTE [backward nodes]) -------------------


@pytest.mark.parametrize(
    "f, node, x_grad",
    [  # PyTorch's backward of these is one differentiable function of the input
        (lambda F, x: F.relu(x), "ThresholdBackwardBackward0", "zeros"),
        (lambda F, x: F.leaky_relu(x, 0.1), "LeakyReluBackwardBackward0", "zeros"),
        (lambda F, x: F.max_pool2d(x, 2), "MaxPool2DWithIndicesBackwardBackward0", "zeros"),
        (lambda F, x: F.avg_pool2d(x, 2), "AvgPool2DBackwardBackward0", "zeros"),
        (lambda F, x: F.pad(x, (1, 1, 1, 1), mode="reflect"), None, "zeros"),
        (lambda F, x: F.pad(x, (1, 1, 1, 1), mode="replicate"), None, "zeros"),
        (lambda F, x: F.nll_loss(x.reshape(2, 2), _TGT(F)), None, "zeros"),
        (lambda F, x: F.conv2d(x, _ONES(F)), "ConvolutionBackwardBackward0", None),
        # composite formulas in PyTorch: a constant gradient
        (lambda F, x: x.clamp(-1, 1), None, "error"),
        (lambda F, x: x.floor(), None, "error"),
        (lambda F, x: x.sign(), None, "error"),
    ],
)
def test_create_graph_gradients_in_the_graph_as_pytorch(T, f, node, x_grad):
    F = T.nn.functional
    x = T.tensor([[[[0.5, -1.0], [2.0, 3.0]]]], requires_grad=True)
    y = f(F, x)
    (g,) = T.autograd.grad(y, x, T.ones_like(y), create_graph=True)
    if x_grad == "error":
        assert not g.requires_grad
        with pytest.raises(RuntimeError, match="does not require grad"):
            (g * g).sum().backward()
        return
    assert g.requires_grad
    if node is not None:
        assert g.grad_fn.name() == node
    (g * g).sum().backward()
    if x_grad is None:
        assert x.grad is None
    else:
        assert arr(x.grad).tolist() == [[[[0.0, 0.0], [0.0, 0.0]]]]


def _TGT(F):
    return (torch if F.__name__.startswith("torch") else nbgrad).tensor([0, 1])


def _ONES(F):
    return (torch if F.__name__.startswith("torch") else nbgrad).ones(1, 1, 1, 1)


def test_layer_norm_bias_gradient_is_in_the_graph_but_gives_the_input_nothing(T):
    x = T.tensor([[1.0, 2.0, 4.0]], dtype=T.float64, requires_grad=True)
    b = T.zeros(3, dtype=T.float64, requires_grad=True)
    y = T.nn.functional.layer_norm(x, (3,), T.ones(3, dtype=T.float64), b)
    (gb,) = T.autograd.grad(y.sum(), b, create_graph=True)
    assert gb.requires_grad and gb.grad_fn.name() == "NativeLayerNormBackwardBackward0"
    (gb * gb).sum().backward()
    assert x.grad is None and b.grad is None


def test_retained_grad_is_a_contiguous_clone(T):
    """retain_grad stores grad.clone(MemoryFormat::Contiguous), whatever the layout of the
    gradient that reaches it."""
    x = T.ones(2, 2, 1, 1, dtype=T.float64, requires_grad=True)
    y = x * 1.0
    y.retain_grad()
    (y.permute(3, 1, 0, 2) * T.ones(1, 1, 1, 1, dtype=T.float64)).sum().backward()
    assert y.grad.is_contiguous()


def test_masks_and_conditions_have_no_slot_in_the_node(T):
    """PyTorch's WhereBackward0 has two next_functions (self, other) and MaskedFillBackward0
    one: a condition or mask takes no gradient and has no slot."""
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = T.tensor(3.0, requires_grad=True)
    c = T.tensor([False, True])
    w = T.where(c, y, x)
    assert len(w.grad_fn.next_functions) == 2
    w.grad_fn.next_functions[0][0].register_prehook(lambda go: (go[0] * 10,))
    w.sum().backward()
    assert y.grad.item() == 10.0 and arr(x.grad).tolist() == [1.0, 0.0]
    assert len(x.clone().masked_fill(c, 0.0).grad_fn.next_functions) == 1
    assert len(x.clone().masked_fill(c, y).grad_fn.next_functions) == 2


def test_softmax_of_a_0d_tensor_under_create_graph(T):
    x = T.tensor(0.5, dtype=T.float64, requires_grad=True)
    for f in (T.softmax, T.log_softmax):
        (g,) = T.autograd.grad(f(x.clamp(-1, 1), -1), x, create_graph=True)
        assert g.requires_grad and g.item() == 0.0
        (g * g).backward()
        assert x.grad.item() == 0.0


@pytest.mark.parametrize("bshape", [(1, 3), (2, 3), (2, 1), (3,), (1,), ()])
def test_linear_broadcast_bias(T, bshape):
    x = T.ones(2, 2, dtype=T.float64)
    w = T.ones(3, 2, dtype=T.float64, requires_grad=True)
    b = T.ones(bshape, dtype=T.float64, requires_grad=True)
    y = T.nn.functional.linear(x, w, b)
    assert tuple(y.shape) == (2, 3) and y.grad_fn.name() == "AddmmBackward0"
    y.sum().backward()
    assert b.grad.shape == b.shape and b.grad.sum().item() == 6.0


def test_linear_bias_of_too_many_dims(T):
    with pytest.raises(RuntimeError, match="the number of sizes provided"):
        T.nn.functional.linear(T.ones(2, 2), T.ones(3, 2), T.ones(1, 1, 3))
