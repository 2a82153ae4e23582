"""Grad mode: no_grad, enable_grad, set_grad_enabled, inference_mode (SEMANTICS.md section 9).

Every test takes the fixture ``T``: the library under test.  It runs once with ``nbgrad`` and, when
PyTorch (the oracle) is installed, once more with ``torch`` -- the very same assertions, so
each test is checked against PyTorch and is meaningful on its own without it.
"""

import re
import threading

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
    lib = nbgrad if request.param == "nbgrad" else torch
    assert lib.is_grad_enabled()
    yield lib
    lib.set_grad_enabled(True)  # never leak a disabled mode into other tests


def leaf(T):
    return T.tensor([1.0, 2.0], requires_grad=True)


INPLACE_INFERENCE = (
    "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
    "clone to "
    "get a normal tensor before doing inplace update.See "
    "https://github.com/pytorch/rfcs/pull/17 for "
    "more details."
)


# --------------------------------------------------------------------------------------------
# context managers


def test_no_grad_context(T):
    x = leaf(T)
    with T.no_grad():
        assert not T.is_grad_enabled()
        y = x * 2
    assert T.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert (x * 2).requires_grad


def test_enable_grad_inside_no_grad(T):
    x = leaf(T)
    with T.no_grad():
        with T.enable_grad():
            assert T.is_grad_enabled()
            y = x * 2
        assert not T.is_grad_enabled()
        z = x * 2
    assert y.requires_grad and y.grad_fn.name() == "MulBackward0"
    assert not z.requires_grad


def test_set_grad_enabled_context(T):
    x = leaf(T)
    with T.set_grad_enabled(False):
        assert not T.is_grad_enabled()
        y = x * 2
        with T.set_grad_enabled(True):
            assert T.is_grad_enabled()
            z = x * 2
        assert not T.is_grad_enabled()
    assert T.is_grad_enabled()
    assert not y.requires_grad
    assert z.requires_grad


def test_nesting_restores_each_level(T):
    states = []
    with T.no_grad():
        states.append(T.is_grad_enabled())
        with T.no_grad():
            states.append(T.is_grad_enabled())
            with T.enable_grad():
                states.append(T.is_grad_enabled())
                with T.set_grad_enabled(False):
                    states.append(T.is_grad_enabled())
                states.append(T.is_grad_enabled())
            states.append(T.is_grad_enabled())
        states.append(T.is_grad_enabled())
    states.append(T.is_grad_enabled())
    assert states == [False, False, True, False, True, False, False, True]


@pytest.mark.parametrize("ctx", ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode"])
def test_restored_on_exception(T, ctx):
    make = {
        "no_grad": lambda: T.no_grad(),
        "enable_grad": lambda: T.enable_grad(),
        "set_grad_enabled": lambda: T.set_grad_enabled(False),
        "inference_mode": lambda: T.inference_mode(),
    }[ctx]
    with T.no_grad():
        with pytest.raises(ValueError, match="boom"):
            with make():
                raise ValueError("boom")
        assert not T.is_grad_enabled()
        assert not T.is_inference_mode_enabled()
    with pytest.raises(KeyError):
        with make():
            raise KeyError("k")
    assert T.is_grad_enabled()
    assert not T.is_inference_mode_enabled()


def test_no_grad_object_reusable(T):
    x = leaf(T)
    ng = T.no_grad()
    for _ in range(2):
        with ng:
            assert not T.is_grad_enabled()
            assert not (x * 2).requires_grad
        assert T.is_grad_enabled()


def test_context_manager_enter_returns(T):
    with T.no_grad() as r:
        assert r is None
    with T.enable_grad() as r:
        assert r is None


def test_factory_requires_grad_inside_no_grad(T):
    with T.no_grad():
        t = T.ones(2, requires_grad=True)
        u = T.tensor([1.0], requires_grad=True)
    assert t.requires_grad and t.is_leaf and t.grad_fn is None
    assert u.requires_grad and u.is_leaf
    (t * 3).sum().backward()
    assert t.grad.tolist() == [3.0, 3.0]


def test_no_grad_inplace_on_leaf_allowed(T):
    x = leaf(T)
    with T.no_grad():
        x.mul_(2)
        x[0] = 7.0
    assert x.is_leaf and x.requires_grad and x.grad_fn is None
    assert x.tolist() == [7.0, 4.0]
    assert x._version == 2


# --------------------------------------------------------------------------------------------
# decorators


def test_no_grad_decorator_called(T):
    x = leaf(T)

    @T.no_grad()
    def f(a, k=1):
        """doc"""
        assert not T.is_grad_enabled()
        return a * k

    y = f(x, k=3)
    assert T.is_grad_enabled()
    assert not y.requires_grad and y.tolist() == [3.0, 6.0]
    assert f.__name__ == "f" and f.__doc__ == "doc"


def test_no_grad_decorator_bare(T):
    x = leaf(T)

    @T.no_grad
    def f(a):
        assert not T.is_grad_enabled()
        return a * 2

    y = f(x)
    assert not y.requires_grad
    assert T.is_grad_enabled()
    assert f.__name__ == "f"


def test_enable_grad_decorator(T):
    x = leaf(T)

    @T.enable_grad()
    def f(a):
        return a * 2

    @T.enable_grad
    def g(a):
        return a * 3

    with T.no_grad():
        y = f(x)
        z = g(x)
        assert not T.is_grad_enabled()
    assert y.requires_grad and z.requires_grad


def test_set_grad_enabled_decorator(T):
    x = leaf(T)

    @T.set_grad_enabled(False)
    def f(a):
        assert not T.is_grad_enabled()
        return a * 2

    assert T.is_grad_enabled()  # creating the decorator does not leave grad disabled
    y = f(x)
    assert not y.requires_grad
    assert T.is_grad_enabled()


def test_inference_mode_decorator(T):
    x = leaf(T)

    @T.inference_mode()
    def f(a):
        assert T.is_inference_mode_enabled() and not T.is_grad_enabled()
        return a * 2

    @T.inference_mode
    def g(a):
        assert T.is_inference_mode_enabled()
        return a * 3

    @T.inference_mode(False)
    def h(a):
        assert not T.is_inference_mode_enabled()
        return a * 4

    y, z = f(x), g(x)
    assert y.is_inference() and not y.requires_grad
    assert z.is_inference() and not z.requires_grad
    assert not T.is_inference_mode_enabled()
    w = h(x)
    assert not w.is_inference() and w.requires_grad


def test_decorator_restores_on_exception(T):
    @T.no_grad()
    def f():
        raise RuntimeError("inner")

    with pytest.raises(RuntimeError, match="inner"):
        f()
    assert T.is_grad_enabled()


def test_decorated_generator(T):
    x = leaf(T)
    seen = []

    @T.no_grad()
    def gen(n):
        for i in range(n):
            seen.append(T.is_grad_enabled())
            received = yield x * i
            seen.append(("recv", received, T.is_grad_enabled()))
        return "done"

    g = gen(2)
    outside = []
    a = next(g)
    outside.append(T.is_grad_enabled())
    b = g.send("s")
    outside.append(T.is_grad_enabled())
    with pytest.raises(StopIteration) as info:
        g.send("t")
    assert info.value.value == "done"
    assert seen == [False, ("recv", "s", False), False, ("recv", "t", False)]
    assert outside == [True, True]
    assert not a.requires_grad and not b.requires_grad


def test_decorated_generator_caller_mode_between_next(T):
    @T.enable_grad()
    def gen():
        yield T.is_grad_enabled()
        yield T.is_grad_enabled()

    g = gen()
    with T.no_grad():
        assert next(g) is True
        assert not T.is_grad_enabled()
        assert next(g) is True
        assert not T.is_grad_enabled()


def test_decorated_generator_throw_and_close(T):
    log = []

    @T.no_grad()
    def gen():
        try:
            yield 1
        except ValueError:
            log.append(("caught", T.is_grad_enabled()))
            yield 2
        finally:
            log.append(("finally", T.is_grad_enabled()))

    g = gen()
    assert next(g) == 1
    assert g.throw(ValueError("v")) == 2
    assert T.is_grad_enabled()
    g.close()
    assert T.is_grad_enabled()
    assert log == [("caught", False), ("finally", False)]


# --------------------------------------------------------------------------------------------
# set_grad_enabled as a function


def test_set_grad_enabled_plain_call(T):
    x = leaf(T)
    r = T.set_grad_enabled(False)
    try:
        assert not T.is_grad_enabled()
        assert isinstance(r, T.set_grad_enabled)
        assert not (x * 2).requires_grad
    finally:
        T.set_grad_enabled(True)
    assert T.is_grad_enabled()
    assert (x * 2).requires_grad


def test_set_grad_enabled_plain_call_inside_context(T):
    with T.no_grad():
        T.set_grad_enabled(True)
        assert T.is_grad_enabled()
    assert T.is_grad_enabled()


@pytest.mark.parametrize("bad,tname", [(None, "NoneType"), (1, "int"), ("yes", "str")])
def test_set_grad_enabled_type_error(T, bad, tname):
    with pytest.raises(
        TypeError,
        match=re.escape(
            "set_grad_enabled(): argument 'enabled' (position 1) must be bool, not %s" % tname
        ),
    ):
        T.set_grad_enabled(bad)
    assert T.is_grad_enabled()


# --------------------------------------------------------------------------------------------
# thread locality


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # pragma: no cover - reported by the assertion below
            out["error"] = e

    th = threading.Thread(target=run)
    th.start()
    th.join()
    assert "error" not in out, out.get("error")
    return out["value"]


def test_new_thread_starts_with_grad_enabled_under_no_grad(T):
    x = leaf(T)
    with T.no_grad():
        got = _in_thread(lambda: (T.is_grad_enabled(), (x * 2).requires_grad))
        assert not T.is_grad_enabled()
    assert got == (True, True)


def test_new_thread_after_set_grad_enabled_false(T):
    T.set_grad_enabled(False)
    try:
        got = _in_thread(T.is_grad_enabled)
        assert not T.is_grad_enabled()
    finally:
        T.set_grad_enabled(True)
    assert got is True


def test_thread_changes_do_not_leak(T):
    def body():
        T.set_grad_enabled(False)
        return T.is_grad_enabled()

    assert _in_thread(body) is False
    assert T.is_grad_enabled()


def test_new_thread_inference_mode_off(T):
    with T.inference_mode():
        got = _in_thread(
            lambda: (T.is_inference_mode_enabled(), T.is_grad_enabled(), T.ones(1).is_inference())
        )
        assert T.is_inference_mode_enabled()
    assert got == (False, True, False)


# --------------------------------------------------------------------------------------------
# inference mode


def test_inference_mode_basics(T):
    x = leaf(T)
    assert not T.is_inference_mode_enabled()
    with T.inference_mode():
        assert T.is_inference_mode_enabled()
        assert not T.is_grad_enabled()
        a = T.ones(2)
        b = x * 2
        e = T.ones(2, requires_grad=True)
    assert not T.is_inference_mode_enabled()
    assert T.is_grad_enabled()
    assert a.is_inference()
    assert b.is_inference() and not b.requires_grad and b.grad_fn is None
    assert e.is_inference() and e.requires_grad
    assert not x.is_inference()
    assert b.tolist() == [2.0, 4.0]


def test_inference_mode_enable_grad_inside(T):
    x = leaf(T)
    with T.inference_mode():
        with T.enable_grad():
            assert T.is_grad_enabled()
            c = x * 2
        assert not T.is_grad_enabled()
    assert not c.requires_grad
    assert c.is_inference()


def test_inference_mode_false_nested(T):
    x = leaf(T)
    with T.inference_mode():
        with T.inference_mode(False):
            assert not T.is_inference_mode_enabled()
            assert T.is_grad_enabled()
            d = x * 2
            n = T.ones(2)
        assert T.is_inference_mode_enabled()
    assert d.requires_grad and not d.is_inference()
    assert d.grad_fn.name() == "MulBackward0"
    assert not n.is_inference()


def test_inference_mode_false_at_top_level(T):
    with T.inference_mode(False):
        assert not T.is_inference_mode_enabled()
        assert T.is_grad_enabled()
        assert not T.ones(1).is_inference()


def test_no_grad_is_not_inference(T):
    with T.no_grad():
        assert not T.is_inference_mode_enabled()
        assert not T.ones(2).is_inference()
    assert not T.ones(2).is_inference()


def test_inference_tensor_inplace_inside_allowed(T):
    with T.inference_mode():
        a = T.ones(2)
        a.add_(1)
        a[0] = 5.0
    assert a.tolist() == [5.0, 2.0]


def test_inference_tensor_inplace_outside_error(T):
    with T.inference_mode():
        a = T.ones(2)
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_INFERENCE)):
        a.add_(1)
    with pytest.raises(RuntimeError, match=re.escape(INPLACE_INFERENCE)):
        a[0] = 1.0
    with T.no_grad():
        with pytest.raises(RuntimeError, match=re.escape(INPLACE_INFERENCE)):
            a.mul_(2)


def test_inference_tensor_saved_for_backward_error(T):
    x = leaf(T)
    with T.inference_mode():
        a = T.ones(2)
    with pytest.raises(
        RuntimeError, match=re.escape("Inference tensors cannot be saved for backward.")
    ):
        x * a
    s = x + a  # add saves nothing: allowed
    assert s.requires_grad and not s.is_inference()
    s.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_inference_tensor_requires_grad_error(T):
    with T.inference_mode():
        a = T.ones(2)
    with pytest.raises(
        RuntimeError,
        match=re.escape(
            "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
        ),
    ):
        a.requires_grad_()
    assert not a.requires_grad


def test_inference_tensor_clone_is_normal(T):
    x = leaf(T)
    with T.inference_mode():
        a = T.ones(2)
    c = a.clone()
    assert not c.is_inference()
    c.add_(1)
    y = x * c
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_out_of_place_on_inference_tensor_outside(T):
    with T.inference_mode():
        a = T.ones(2)
    b = a * 3
    assert not b.is_inference()
    assert b.tolist() == [3.0, 3.0]
