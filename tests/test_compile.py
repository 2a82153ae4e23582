"""nbgrad.compile: capture, replay, fusion, hooks as breakpoints, guards, reads, errors."""

import sys
import types
import warnings

import numpy as np
import pytest

import nbgrad
import nbgrad as T
from nbgrad.bench import workloads as W
from nbgrad.compile import GraphBreak
from nbgrad.testing.op_db import OP_DB, materialize

CASES = [(info, i, s) for info in OP_DB if info.grad for i, s in enumerate(info.samples)]


def _outs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def _loss(outs):
    total = None
    for k, o in enumerate(outs):
        if isinstance(o, nbgrad.Tensor) and o.dtype.is_floating_point and o.requires_grad:
            w = nbgrad.tensor(np.linspace(0.5, 1.5, max(o.numel(), 1))[: o.numel()])
            term = (o.reshape(-1) * w.to(o.dtype)).sum() * (k + 1)
            total = term if total is None else total + term
    return total


@pytest.mark.parametrize("case", CASES, ids=["%s-%d" % (c[0].name, c[1]) for c in CASES])
def test_op_table_compiled_matches_eager(case):
    """Every differentiable op-table sample: the replay's values and gradients are eager's."""
    info, _, sample = case

    def run(fn):
        leaves, args = materialize(nbgrad, sample, "float64", True)
        outs = _outs(fn(*args))
        loss = _loss(outs)
        if loss is not None:
            loss.backward()
        return [o.detach().numpy() for o in outs if isinstance(o, nbgrad.Tensor)], [
            None if t.grad is None else t.grad.numpy() for t in leaves
        ]

    def f(*a):
        return info.fn(nbgrad, *a)

    want = run(f)
    cf = nbgrad.compile(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = run(cf)  # capture (eager)
        got = run(cf)  # replay
    for a, b in zip(first[0] + got[0], want[0] + want[0]):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12, equal_nan=True)
    for a, b in zip(got[1], want[1]):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert cf.stats["replays"] + cf.stats["eager"] == 1


def test_most_op_table_samples_replay():
    """The op table runs through the replay, not the eager fallback (which is also correct)."""
    replayed = eager = 0
    for info, _, sample in CASES[::7]:
        cf = nbgrad.compile(lambda *a, _i=info: _i.fn(nbgrad, *a))
        _, args = materialize(nbgrad, sample, "float64", True)
        cf(*args)
        cf(*args)
        replayed += cf.stats["replays"]
        eager += cf.stats["eager"]
    assert replayed >= 0.9 * (replayed + eager), (replayed, eager)


def gelu(x):
    return 0.5 * x * (1 + T.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def test_gelu_chain_is_one_fused_region_forward_and_backward():
    x = T.randn(257, 3, dtype=T.float64, requires_grad=True)
    cf = T.compile(lambda x: gelu(x).sum())
    cf(x).backward()
    g_eager = x.grad.clone()
    x.grad = None
    y = cf(x)
    # the closing sum joins the region (NOTE [reduction at the end of a region])
    assert y.grad_fn.name() == "CompiledFunctionBackward"
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), g_eager.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.item(), gelu(x).sum().item(), rtol=1e-13)
    rec = next(iter(cf._records.values()))[0]
    assert len(rec.regions) == 1 and len(rec.regions[0].events) == 10
    assert rec.regions[0].reduce and len(rec.events) == 1
    assert "fused[10]" in cf.explain() and "def k(g, p0)" in cf.explain()


def test_fused_broadcasting_and_float32():
    a = T.randn(4, 1, 3, requires_grad=True)
    b = T.randn(5, 1, requires_grad=True)

    def f(a, b):
        return (T.exp(a * b) - b / 2).sigmoid()

    want = f(a, b)
    want.sum().backward()
    ga, gb = a.grad.clone(), b.grad.clone()
    a.grad = b.grad = None
    cf = T.compile(f)
    cf(a, b)
    a.grad = b.grad = None
    y = cf(a, b)
    assert y.dtype is T.float32 and y.shape == (4, 5, 3)
    np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    y.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ga.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.grad.numpy(), gb.numpy(), rtol=1e-5, atol=1e-6)


def test_nan_propagates_through_fused_backward_like_eager():
    x = T.tensor([-1.0, 0.0, 2.0, float("nan"), float("inf")], dtype=T.float64, requires_grad=True)

    def f(x):
        return (T.relu(x) * 3 + 1).log()

    f(x).sum().backward()
    want = x.grad.clone()
    cf = T.compile(f)
    for _ in range(2):
        x.grad = None
        cf(x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), want.numpy())


# -- hooks are breakpoints --------------------------------------------------------------------


def _r(t):  # fused kernels may round differently in the last bit (contraction)
    return [round(v, 9) for v in t.tolist()]


def _hooked_step(log):
    def step(x, w):
        h = x * w
        h.register_hook(lambda g: log.append(("h", _r(g))) or g * 2)
        a = (h + 1).tanh() * 3
        a.retain_grad()
        a.grad_fn.register_prehook(lambda gs: log.append(("pre", _r(gs[0]))))
        a.grad_fn.register_hook(lambda gi, go: log.append(("post", _r(gi[0]))))
        loss = (a * a).sum()
        loss.backward()
        return loss, a

    return step


def test_hooks_fire_in_the_same_order_with_the_same_gradients():
    w = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: log.append(("acc", _r(p.grad))))
    x = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    log = []
    loss, a = _hooked_step(log)(x, w)
    eager_log, eager_a_grad, eager_w = list(log), a.grad.tolist(), w.grad.tolist()
    cf = T.compile(_hooked_step(log))
    for _ in range(3):
        log.clear()
        w.grad = None
        loss, a = cf(x, w)
        assert log == eager_log
        np.testing.assert_allclose(a.grad.tolist(), eager_a_grad, rtol=1e-13)
        np.testing.assert_allclose(w.grad.tolist(), eager_w, rtol=1e-13)
    assert cf.stats == {"captures": 1, "replays": 2, "eager": 0, "invalidations": 0, "resumes": 0}


def test_module_hooks_and_training_step_under_compile():
    def make():
        T.manual_seed(0)
        m = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.Tanh(), T.nn.Linear(8, 2))
        return m, T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

    def run(compiled):
        m, opt = make()
        log = []
        m[1].register_forward_hook(lambda mod, i, o: log.append(("fwd", round(o.sum().item(), 6))))
        m[2].register_full_backward_hook(lambda mod, gi, go: log.append(("bwd", gi[0].shape)))
        x = T.linspace(-1, 1, 12).reshape(3, 4)

        def step(x):
            opt.zero_grad()
            loss = ((m(x) - 0.5) ** 2).mean()
            loss.backward()
            opt.step()
            return loss

        f = T.compile(step) if compiled else step
        losses = [f(x).item() for _ in range(4)]
        return losses, log, [p.detach().numpy().copy() for p in m.parameters()], f

    le, loge, pe, _ = run(False)
    lc, logc, pc, f = run(True)
    assert lc == le and logc == loge
    for a, b in zip(pc, pe):
        np.testing.assert_array_equal(a, b)
    assert f.stats["replays"] == 3


def test_registering_a_hook_after_capture_recaptures():
    x = T.randn(3, dtype=T.float64, requires_grad=True)
    m = T.nn.Linear(3, 2).double()
    cf = T.compile(lambda x: m(x).sum())
    cf(x), cf(x)
    assert cf.stats["replays"] == 1
    seen = []
    handle = m.register_forward_hook(lambda mod, i, o: seen.append(1))
    cf(x)
    assert cf.stats["invalidations"] == 1 and cf.stats["captures"] == 2 and seen == [1]
    cf(x)
    assert seen == [1, 1] and cf.stats["replays"] == 2
    handle.remove()
    cf(x)
    assert cf.stats["invalidations"] == 2 and seen == [1, 1]


# -- guards -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        lambda x: x.detach().reshape(2, 3).requires_grad_(),
        lambda x: x.detach().float().requires_grad_(),
        lambda x: x.detach(),
    ],
    ids=["shape", "dtype", "requires_grad"],
)
def test_guard_failures_recapture(change):
    x = T.randn(6, dtype=T.float64, requires_grad=True)
    cf = T.compile(lambda x: (x.sin() * 2).exp().sum())
    cf(x), cf(x)
    y = change(x)
    got = cf(y)
    assert cf.stats["captures"] == 2
    np.testing.assert_allclose(got.item(), (y.sin() * 2).exp().sum().item(), rtol=1e-6)
    assert got.requires_grad == y.requires_grad
    cf(y)
    assert cf.stats["replays"] == 2


def test_no_grad_is_a_guard():
    x = T.randn(5, dtype=T.float64, requires_grad=True)
    cf = T.compile(lambda x: x.cos().mul(3).sum())
    assert cf(x).requires_grad
    with T.no_grad():
        assert not cf(x).requires_grad
        assert not cf(x).requires_grad
    assert cf(x).requires_grad
    assert cf.stats["captures"] == 2 and cf.stats["replays"] == 2


def test_cache_size_falls_back_to_eager_naming_the_guard():
    cf = T.compile(lambda x: x * 2 + 1, cache_size=2)
    for n in (1, 2):
        cf(T.ones(n))
    with pytest.warns(UserWarning, match="tensor argument 0: shape"):
        r = cf(T.ones(3))
    assert r.tolist() == [3.0, 3.0, 3.0] and cf.stats["eager"] == 1


def test_python_scalar_arguments_are_guarded():
    cf = T.compile(lambda x, s: x * s + s)
    x = T.ones(2)
    assert cf(x, 2.0).tolist() == [4.0, 4.0]
    assert cf(x, 3.0).tolist() == [6.0, 6.0]
    assert cf(x, 3.0).tolist() == [6.0, 6.0]


# -- reads, graph breaks, fullgraph -------------------------------------------------------------


def test_data_dependent_branch_captures_each_path():
    def f(x):
        if (x.sum() > 0).item():
            return x * 2
        return x - 1

    cf = T.compile(f)
    pos, neg = T.ones(3), -T.ones(3)
    assert cf(pos).tolist() == [2.0] * 3
    assert cf(neg).tolist() == [-2.0] * 3  # same guards, other branch: a continuation
    assert cf(pos).tolist() == [2.0] * 3
    assert cf(neg).tolist() == [-2.0] * 3
    assert cf.stats["captures"] == 1 and cf.stats["replays"] == 3 and cf.stats["resumes"] == 2
    rec = next(iter(cf._records.values()))[0]
    assert [(v, len(c.events)) for v, c in next(iter(rec.branches.values()))] == [(False, 1)]


def test_returned_item_is_read_again():
    x = T.tensor([1.0, 2.0])
    cf = T.compile(lambda x: (x * x).sum().item())
    assert cf(x) == 5.0
    x.data[0] = 3.0
    assert cf(x) == 13.0 and cf.stats["replays"] == 1


def test_a_last_read_that_steers_python_is_still_a_guard():
    # nothing recorded follows the read, but Python computes the result from it
    def f(x):
        v = x.sum().item()
        return v if v > 0 else -v

    cf = T.compile(f)
    assert [cf(T.tensor([a, 1.0])) for a in (1.0, -5.0, 2.0, -7.0)] == [2.0, 4.0, 3.0, 6.0]


@pytest.mark.parametrize(
    "tail, guarded",
    [
        (lambda v, w: v, False),  # return loss.item(): only passed on
        (lambda v, w: (v, w), False),
        (lambda v, w: v * 2, True),  # arithmetic on the value
        (lambda v, w: abs(v), True),  # a call into C code
        (lambda v, w: v if v > 2 else w, True),  # a branch
    ],
)
def test_a_last_read_is_guarded_only_when_python_uses_it(tail, guarded):
    # NOTE [a last read needs no guard when nothing uses it]: an opcode watch after the read
    x = T.tensor([1.0, 2.0])
    before = sys.gettrace()

    def f(x):
        s, m = (x * x).sum(), x.max()
        return tail(s.item(), m.item())

    cf = T.compile(f)
    assert cf(x) == tail(5.0, 2.0) and sys.gettrace() is before
    for a in (3.0, 0.5, 3.0):
        x.data[0] = a
        assert cf(x) == tail(a * a + 4.0, max(a, 2.0))
    rec = next(iter(cf._records.values()))[0]
    assert [ev.guard for ev in rec.events if ev.kind == "read"] == [guarded] * 2
    assert (cf.stats["resumes"] > 0) == guarded and cf.stats["captures"] == 1


def test_ops_returning_python_values_are_reads():
    # torch.equal / allclose return a bool: a read, so a change takes the other path
    def f(a, b):
        return a + 1 if T.equal(a, b) else a - 1

    cf = T.compile(f)
    a = T.ones(2)
    assert cf(a, T.ones(2)).tolist() == [2.0, 2.0]
    assert cf(a, T.zeros(2)).tolist() == [0.0, 0.0]
    assert cf(a, T.ones(2)).tolist() == [2.0, 2.0]
    assert "read equal(" in cf.explain()


def _side_effect_step(log):
    w = T.ones(2, requires_grad=True)

    def f(x):
        (w * x).sum().backward()
        log.append("python")
        if (w.grad > 2.5).all():  # decides later work after a side effect
            return x + 1
        return x - 1

    return w, f


def test_read_after_side_effects_resumes_with_a_continuation_per_value():
    # NOTE [graph breaks resume]: the replay cannot undo backward, so a new outcome of the
    # read runs the function again in resume mode and captures what follows as the
    # continuation for that outcome; the next calls with that outcome replay it
    elog, clog = [], []
    we, fe = _side_effect_step(elog)
    wc, fc = _side_effect_step(clog)
    cf = T.compile(fc)
    for i in range(5):
        x = T.full((2,), 1.0 + i % 2)
        assert cf(x).tolist() == fe(x).tolist(), i
        assert wc.grad.tolist() == we.grad.tolist(), i
    # w.grad: 1, 3, 4, 6, 7 -> the read is False, True, True, True, True
    assert cf.stats == {"captures": 1, "replays": 4, "eager": 0, "invalidations": 0,
                        "resumes": 4}  # fmt: skip
    rec = next(iter(cf._records.values()))[0]
    (branches,) = rec.branches.values()
    assert [v for v, _ in branches] == [True] and branches[0][1] is not None
    assert "continuation" in cf.explain()
    # Python code ran at the capture and at the one resume capture; replays do not run it
    assert len(clog) == 2 and len(elog) == 5


def test_resume_without_a_continuation_for_values_past_the_cache_size():
    w = T.ones(2, requires_grad=True)

    def f(x):
        (w * x).sum().backward()
        return x * w.grad.sum().item()  # a new float every call

    we = T.ones(2, requires_grad=True)

    def fe(x):
        (we * x).sum().backward()
        return x * we.grad.sum().item()

    cf = T.compile(f, cache_size=2)
    x = T.ones(2)
    for i in range(6):
        assert cf(x).tolist() == fe(x).tolist(), i
    rec = next(iter(cf._records.values()))[0]
    (branches,) = rec.branches.values()
    assert len(branches) == 3 and branches[-1][1] is None  # two continuations, then eager
    assert "runs eagerly (resumed each time)" in cf.explain()


def test_a_program_that_may_resume_keeps_every_value_unfused():
    # NOTE [a program that may resume keeps every value]: the continuation uses ``a``, which
    # fusion would have made an inner value of a region (never computed on its own)
    w = T.ones(3, dtype=T.float64, requires_grad=True)

    def f(x, log):
        a = x * 2
        b = a.exp().sin()
        (b * w).sum().backward()
        if w.grad.sum().item() < 0:
            log.runs += 1  # (an object: a list argument is guarded by its contents)
            return a + 1
        return b

    cf = T.compile(f)
    x = T.tensor([0.1, 0.2, 0.3], dtype=T.float64)
    log = types.SimpleNamespace(runs=0)
    first = cf(x, log)  # w.grad.sum() > 0: returns b
    assert log.runs == 0
    w.grad = -w.grad * 100  # flip the outcome for the next calls
    for _ in range(3):
        out = cf(x, log)
        np.testing.assert_allclose(out.numpy(), 2 * x.numpy() + 1)
    assert log.runs == 3 and first.shape == (3,)  # w.grad grows: a new value every call
    rec = next(iter(cf._records.values()))[0]
    assert rec.regions == [] and all(d == () for d in rec.drops)
    (branches,) = rec.branches.values()
    assert len(branches) == 3 and all(c is not None for _, c in branches)


def test_resume_raises_when_the_path_before_the_read_changes():
    w = T.ones(2, requires_grad=True)
    state = {"scale": 1.0}

    def f(x):
        y = w * x if state["scale"] == 1.0 else w + x  # Python state, not a guard
        y.sum().backward()
        return x + 1 if w.grad.sum().item() > 3 else x - 1

    cf = T.compile(f)
    cf(T.ones(2))
    state["scale"] = 2.0
    with pytest.raises(RuntimeError, match="same path up to the read"):
        cf(T.ones(2))


def test_fullgraph_raises_naming_the_read_and_line():
    cf = T.compile(lambda x: x * x.sum().item(), fullgraph=True)
    with pytest.raises(RuntimeError, match=r"graph break at Tensor.item\(\).*test_compile.py"):
        cf(T.ones(2))


def test_a_tensor_made_by_a_recorded_creation_call_replays():
    def f(x):
        y = T.from_numpy(np.ones(2)) + 0  # made inside, by a recorded call: fine
        return x + y

    cf = T.compile(f)
    assert cf(T.ones(2)).tolist() == [2.0, 2.0] and cf(T.ones(2)).tolist() == [2.0, 2.0]
    assert cf.stats["replays"] == 1


def test_untracked_code_is_a_graph_break_after_a_compiled_prefix():
    # NOTE [a graph break at untracked code]: the record ends before the first event using a
    # tensor the capture could not see being made; replays run that prefix, then resume
    w = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    log = []

    def f(x):
        h = (x * w).tanh()
        log.append("python")
        n = T.Tensor._make(np.full(3, float(len(log)), np.float64))  # not recorded
        return (h * n).sum()

    cf = T.compile(f)
    for i in range(3):
        x = T.full((3,), i + 1.0, dtype=T.float64)
        w.grad = None
        y = cf(x)
        y.backward()
        h = np.tanh((i + 1.0) * w.detach().numpy())
        np.testing.assert_allclose(y.item(), (h * (i + 1)).sum(), rtol=1e-13)
        np.testing.assert_allclose(w.grad.numpy(), (i + 1.0) ** 2 * (1 - h * h), rtol=1e-12)
    assert cf.stats["captures"] == 1 and cf.stats["replays"] == 2 and cf.stats["resumes"] == 2
    assert len(log) == 3  # the Python after the break runs on every call
    rec = next(iter(cf._records.values()))[0]
    assert [ev.kind for ev in rec.events] == ["op", "op", "break"]  # kept, not fused
    assert "graph break: a tensor made by code nbgrad.compile does not record" in cf.explain()
    with pytest.raises(GraphBreak, match="does not record"):
        T.compile(f, fullgraph=True)(x)


def test_random_ops_draw_new_numbers_on_replay():
    cf = T.compile(lambda x: T.nn.functional.dropout(x, 0.5) + T.randn(4))
    x = T.ones(4)
    a, b = cf(x), cf(x)
    assert not np.array_equal(a.numpy(), b.numpy())


# -- in-place and version counters ------------------------------------------------------------


def test_inplace_error_matches_eager():
    def f(x):
        y = x.exp()
        z = (y * 2).sum()
        y.add_(1)
        return z

    x = T.randn(3, dtype=T.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        f(x).backward()
    cf = T.compile(f)
    for _ in range(2):
        z = cf(x)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.backward()


def test_inplace_on_input_of_fused_region_after_replay_errors():
    x = T.randn(3, dtype=T.float64, requires_grad=True)

    def f(x):
        a = x * 1.0
        return a, (a.sin() * 2 + 1).tanh()

    cf = T.compile(f)
    cf(x)
    a, y = cf(x)
    with T.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_module_compile_in_place_and_double_backward():
    m = T.nn.Sequential(T.nn.Linear(3, 3), T.nn.Tanh()).double()
    x = T.randn(2, 3, dtype=T.float64, requires_grad=True)
    want = m(x)
    m.compile()
    m(x)
    got = m(x)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy())
    assert m.forward.stats["replays"] == 1
    cf = T.compile(lambda x: (x.sin() * x).exp().sum())
    cf(x)
    (g,) = T.autograd.grad(cf(x), x, create_graph=True)
    (gg,) = T.autograd.grad(g.sum(), x)
    y = x.detach().requires_grad_()
    (g2,) = T.autograd.grad((y.sin() * y).exp().sum(), y, create_graph=True)
    (gg2,) = T.autograd.grad(g2.sum(), y)
    np.testing.assert_allclose(gg.numpy(), gg2.numpy(), rtol=1e-12)


def test_decorator_forms():
    @T.compile
    def f(x):
        return x + 1

    @T.compile(fullgraph=True, backend="inductor")
    def g(x):
        return x * 2

    assert f(T.ones(1)).tolist() == [2.0] and g(T.ones(1)).tolist() == [2.0]
    assert f.__name__ == "f"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_regions_take_the_loop_kernel_with_the_same_results(dtype, monkeypatch):
    """>= 4096 contiguous elements and sum's broadcast gradient: the loop-kernel path."""
    import sys

    fuse_mod = sys.modules["nbgrad.compile.fuse"]  # (the package's ``fuse`` is the function)

    loops = []
    real = fuse_mod.cpu_loop
    monkeypatch.setattr(fuse_mod, "cpu_loop", lambda k: loops.append(k) or real(k))
    rng = np.random.default_rng(3)
    x = T.tensor(rng.standard_normal(5000).astype(dtype), requires_grad=True)
    b = T.tensor(rng.standard_normal(5000).astype(dtype), requires_grad=True)

    def f(x, b):
        y = gelu(x) * b + x.sigmoid()
        y.sum().backward()
        return y

    want = f(x, b).detach().numpy()
    gx, gb = x.grad.clone(), b.grad.clone()
    cf = T.compile(f)
    for _ in range(2):
        x.grad = b.grad = None
        got = cf(x, b).detach().numpy()
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got, want, **tol)
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), **tol)
    np.testing.assert_allclose(b.grad.numpy(), gb.numpy(), **tol)
    assert cf.stats["replays"] == 1
    assert len(loops) == 3  # the replay's forward and both input gradients


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_large_regions_run_parallel_kernels_with_bit_identical_results(dtype, monkeypatch):
    """NOTE [parallel fused kernels]: a region at or above ``PARALLEL_MIN`` elements runs its
    prange twins (the loop kernel and the whole-sum kernel) with one thread or two, and every
    value and gradient is the same to the bit either way; eager's within rounding."""
    import sys

    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("Numba has one thread on this machine")
    fuse_mod = sys.modules["nbgrad.compile.fuse"]
    monkeypatch.setattr(fuse_mod, "PARALLEL_MIN", 1 << 16)  # (small shapes in CI)
    used = []
    for name in ("cpu_loop_parallel", "cpu_sum_parallel"):
        real = getattr(fuse_mod, name)
        monkeypatch.setattr(fuse_mod, name, lambda k, n=name, r=real: used.append(n) or r(k))
    n = 3 * 65536 + 4097  # chunks and 4096-blocks with ragged ends
    rng = np.random.default_rng(5)
    x = T.tensor(rng.standard_normal(n).astype(dtype), requires_grad=True)
    b = T.tensor(rng.standard_normal(n).astype(dtype), requires_grad=True)

    def f(x, b):
        y = gelu(x) * b + x.sigmoid()
        s = y.sum()
        s.backward()
        return s, (x * b).tanh()

    cf = T.compile(f)
    cf(x, b)  # the capture (eager)
    before = numba.get_num_threads()
    got = {}
    try:
        for threads in (1, 2):
            numba.set_num_threads(threads)
            used.clear()
            x.grad = b.grad = None
            s, y = cf(x, b)
            got[threads] = (s.detach().numpy(), y.detach().numpy(), x.grad.numpy(), b.grad.numpy())
            assert sorted(set(used)) == ["cpu_loop_parallel", "cpu_sum_parallel"]
    finally:
        numba.set_num_threads(before)
    for serial, parallel in zip(got[1], got[2]):
        assert serial.tobytes() == parallel.tobytes()
    x.grad = b.grad = None
    s, y = f(x, b)
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[2][0], s.detach().numpy(), **tol)
    np.testing.assert_allclose(got[2][1], y.detach().numpy(), **tol)
    np.testing.assert_allclose(got[2][2], x.grad.numpy(), **tol)


def test_parallel_kernels_only_where_they_are_safe(monkeypatch):
    """Serial below the size threshold, under the workqueue layer (not thread-safe) and in a
    child forked after the parent started OpenMP's threads; the thread count does not
    decide (one thread runs the same chunks in turn)."""
    import sys

    import numba

    fuse_mod = sys.modules["nbgrad.compile.fuse"]
    big = fuse_mod.PARALLEL_MIN
    fuse_mod._parallel(big)  # (starts the threading layer)
    layer = fuse_mod._LAYER[0]
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert fuse_mod._parallel(big) is (layer != "workqueue")
    finally:
        numba.set_num_threads(before)
    assert not fuse_mod._parallel(big - 1)
    monkeypatch.setattr(fuse_mod, "_LAYER", ["omp"])
    assert fuse_mod._parallel(big)
    monkeypatch.setattr(fuse_mod, "_LAYER", ["workqueue"])
    assert not fuse_mod._parallel(big)
    monkeypatch.setattr(fuse_mod, "_LAYER", ["omp"])
    fuse_mod._after_fork_in_child()  # (what a forked child runs: the layer started here)
    assert fuse_mod._LAYER == ["forked"] and not fuse_mod._parallel(big)


def test_nested_compiled_functions_and_other_threads_are_not_recorded_twice():
    import threading

    inner = T.compile(lambda x: x.exp() * 2)
    outer = T.compile(lambda x: inner(x).sin() + 1)
    x = T.linspace(0, 1, 5, dtype=T.float64)
    want = ((x.exp() * 2).sin() + 1).numpy()
    errors = []

    def other():
        try:
            for _ in range(50):
                assert (T.ones(3) * 2).tolist() == [2.0, 2.0, 2.0]
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    th = threading.Thread(target=other)
    th.start()
    for _ in range(3):
        np.testing.assert_allclose(outer(x).numpy(), want, rtol=1e-12)
    th.join()
    assert not errors and outer.stats["replays"] == 2
    rec = next(iter(outer._records.values()))[0]
    assert [ev.name for ev in rec.raw] == ["exp", "mul", "sin", "add"]  # inner's, once


def _scalar_graph(n_inputs, n_ops, dtype):
    from nbgrad.bench import workloads

    return workloads.scalar_graph_parts(T, n_inputs, n_ops, dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scalar_graph_lowers_to_one_tape_with_eager_gradients(dtype):
    x, run = _scalar_graph(20, 200, getattr(T, dtype))
    run()
    want = x.grad.numpy().copy()
    y, run2 = _scalar_graph(20, 200, getattr(T, dtype))
    cf = T.compile(run2)
    cf()
    y.grad = None
    cf()  # replay: the whole step is one call of the tape interpreter
    rec = next(iter(cf._records.values()))[0]
    assert [ev.name for ev in rec.events] == ["whole_step"]
    assert "whole-step tape" in cf.explain()
    tol = dict(rtol=1e-5, atol=1e-7) if dtype == "float32" else dict(rtol=1e-13, atol=1e-16)
    np.testing.assert_allclose(y.grad.numpy(), want, **tol)
    cf()  # accumulates, as AccumulateGrad does
    np.testing.assert_allclose(y.grad.numpy(), 2 * want, **tol)


def test_scalar_tape_skips_ops_no_gradient_reaches_and_keeps_nan():
    x = T.tensor([0.0, 1.0, float("nan")], dtype=T.float64, requires_grad=True)

    def step():
        a, b, c = x.unbind(0)
        dead = (a.log() * 0 + c).exp()  # no gradient reaches it: -inf partials stay unused
        (a * b + dead * 0 + b.sigmoid()).backward()

    step()
    want = x.grad.numpy().copy()
    x.grad = None
    cf = T.compile(step)
    cf()
    x.grad = None
    cf()
    np.testing.assert_array_equal(x.grad.numpy(), want)


def test_hook_on_a_lowered_leaf_recaptures_and_fires():
    x, run = _scalar_graph(5, 20, T.float64)
    cf = T.compile(run)
    cf(), cf()
    seen = []
    x.register_hook(lambda g: seen.append(g.shape))
    x.grad = None
    cf()
    assert seen == [(5,)] and cf.stats["invalidations"] == 1
    cf()
    assert seen == [(5,), (5,)]


def test_small_elementwise_step_lowers_per_element_with_eager_gradients():
    rng = np.random.default_rng(5)
    x = T.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = T.tensor(rng.standard_normal((3, 4)), requires_grad=True)

    def step():
        y = x
        for _ in range(4):
            y = (y * w + 0.1).tanh() - x.sigmoid() / 2
        (y * y).sum().backward()

    step()
    gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
    x.grad = w.grad = None
    cf = T.compile(step)
    cf()
    x.grad = w.grad = None
    cf()
    rec = next(iter(cf._records.values()))[0]
    assert [ev.name for ev in rec.events] == ["whole_step"]
    assert x.grad.shape == (3, 4)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(w.grad.numpy(), gw, rtol=1e-13, atol=1e-15)


def test_bad_arguments_raise_and_disable_returns_the_function():
    def f(x):
        return x + 1

    with pytest.raises(TypeError, match="expected a callable"):
        T.compile(3)
    with pytest.raises(ValueError, match="cache_size must be a positive int"):
        T.compile(f, cache_size=0)
    with pytest.raises(TypeError):
        T.compile(f, fulgraph=True)  # a misspelt option is an error, not ignored
    assert T.compile(f, disable=True) is f
    assert T.compile(disable=True)(f) is f


def test_replay_releases_each_value_after_its_last_use():
    # NOTE [release values at their last use]: the replay's peak memory is eager's, not the
    # sum of every intermediate (holding them made the CNN step 1.4x slower than eager)
    import tracemalloc

    x = T.randn(1 << 17, dtype=T.float64)  # 1 MiB

    def f(x):
        a = x.cumsum(0)
        b = a.cumsum(0)
        c = b.cumsum(0)
        d = c.cumsum(0)
        return d.sum()

    cf = T.compile(f)
    cf(x)
    rec = next(iter(cf._records.values()))[0]
    assert [len(d) for d in rec.drops] == [0, 1, 1, 1, 1]  # x, a, b, c: each after its use

    def peak(fn):
        tracemalloc.start()
        fn(x)
        p = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return p

    eager, replay = peak(f), peak(cf)
    assert cf.stats["replays"] >= 1
    assert replay < 2.5 * x.numel() * 8 and replay <= eager * 1.1, (replay, eager)


def test_inputs_with_the_same_gradient_share_one_kernel_and_array():
    # relu(h + b): h's gradient and b's (before it is summed to b's shape) are one expression
    h = T.randn(6, 4, dtype=T.float64, requires_grad=True)
    b = T.randn(4, dtype=T.float64, requires_grad=True)
    f = T.compile(lambda h, b: T.relu(h + b))
    seen = []
    for _ in range(2):
        h.grad = b.grad = None
        y = f(h, b)
        y.register_hook(lambda g: seen.append(g))
        (y * y).sum().backward()
    reg = next(iter(f._records.values()))[0].regions[0]
    assert reg.same_as == [None, 0] and reg.bwd[1] is None
    want = 2 * np.maximum(h.detach().numpy() + b.detach().numpy(), 0)
    np.testing.assert_allclose(h.grad.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), want.sum(0), rtol=1e-12)


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", [T.float32, T.float64])
def test_region_ending_in_a_sum_matches_eager(layout, dtype):
    # the fused sum kernel for contiguous operands; a transposed operand takes the pointwise
    # kernel and eager's sum; NaN and inf reach the result as in eager mode
    a = T.randn(67, 130, dtype=dtype)
    a = a.t() if layout == "transposed" else a.contiguous()
    w = T.randn(a.shape[1], dtype=dtype, requires_grad=True)
    x = a.detach().clone().requires_grad_()

    def f(x, w):
        return ((x * w).sigmoid() - 0.5 * x).sum()

    want = f(x, w)
    want.backward()
    gx, gw = x.grad.clone(), w.grad.clone()
    cf = T.compile(f)
    cf(x, w)
    x.grad = w.grad = None
    got = cf(x, w)
    reg = next(iter(cf._records.values()))[0].regions[0]
    assert reg.reduce and got.shape == () and got.dtype is dtype
    got.backward()
    tol = 1e-12 if dtype is T.float64 else 1e-5
    np.testing.assert_allclose(got.item(), want.item(), rtol=tol)
    np.testing.assert_allclose(x.grad.numpy(), gx.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(w.grad.numpy(), gw.numpy(), rtol=tol, atol=tol)
    with T.no_grad():
        x[3, 4] = float("nan")
    assert np.isnan(cf(x, w).item()) and np.isnan(f(x, w).item())
    with T.no_grad():
        x[3, 4] = float("inf")
    assert cf(x, w).item() == f(x, w).item() == -float("inf")


def test_dropout_draws_a_new_mask_on_every_replay_like_eager():
    # F.dropout's mask comes from the generator (no recorded op): a recorded call, so a replay
    # draws from the same stream as eager calls and gives the same values and gradients
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Dropout(0.5), T.nn.Linear(8, 1))
    x = T.randn(16, 4)

    def step():
        m.zero_grad()
        loss = m(x).square().sum()
        loss.backward()
        return loss.item(), m[0].weight.grad.clone()

    runs = {}
    for name, fn in (("eager", step), ("compiled", T.compile(step))):
        T.manual_seed(1)
        runs[name] = [fn() for _ in range(3)]
    for (le, ge), (lc, gc) in zip(runs["eager"], runs["compiled"]):
        assert le == lc
        np.testing.assert_array_equal(ge.numpy(), gc.numpy())
    assert len({v for v, _ in runs["eager"]}) == 3  # three different masks


def test_inplace_methods_and_setitem_are_replayed():
    def f(x):
        y = (x * 1).add_(1)
        y.mul_(2)
        t = T.zeros(2)
        t[0] = 5.0
        t += y
        return y, t

    cf = T.compile(f)
    x = T.zeros(2)
    for _ in range(3):
        y, t = cf(x)
        assert y.tolist() == [2.0, 2.0] and t.tolist() == [7.0, 2.0]
    assert cf.stats["replays"] == 2


def test_a_region_does_not_run_past_an_inplace_write_of_its_input():
    # a region runs where its last op was: m.add_ between sigmoid and sum would change m first
    def f(a):
        m = a * 1.0
        s = m.sigmoid()
        m.add_(1)
        return s.sum(), m

    cf = T.compile(f)
    a = T.tensor([0.0, 1.0], dtype=T.float64)
    want = f(a)[0].item()
    cf(a)
    got, m = cf(a)
    assert got.item() == want and m.tolist() == [1.0, 2.0]


def test_grad_mode_switched_inside_the_function_is_replayed():
    def f(x):
        with T.no_grad():
            x.add_(1)  # a leaf: allowed under no_grad only
            y = x * 2
        return y, x * 3

    cf = T.compile(f)
    x = T.zeros(2, requires_grad=True)
    for i in range(3):
        y, z = cf(x)
        assert not y.requires_grad and z.requires_grad and T.is_grad_enabled()
        assert x.tolist() == [i + 1.0] * 2
    assert cf.stats["replays"] == 2


@pytest.mark.parametrize("case", ["out", "raises", "saved_hooks"])
def test_what_a_replay_cannot_do_runs_eagerly(case):
    log = []

    def f(x):
        if case == "out":
            o = T.zeros(2)
            T.add(x, 1, out=o)
            return o
        if case == "raises":
            y = x * 2
            try:
                y.sum().backward()  # x needs no grad: raises
            except RuntimeError:
                log.append("caught")
            return y
        with T.autograd.graph.saved_tensors_hooks(lambda t: log.append("pack") or t, lambda t: t):
            y = x * x
        return y

    cf = T.compile(f)
    x = T.ones(2, requires_grad=case == "saved_hooks")
    for _ in range(3):
        assert cf(x).tolist() == f(x).tolist()
    assert cf.stats["replays"] == 0 and cf.stats["eager"] == 2
    why = {"out": "out= argument", "raises": "raised RuntimeError",
           "saved_hooks": "saved_tensors_hooks"}[case]  # fmt: skip
    assert why in cf.explain()
    if case != "out":
        # the Python body ran every time (x * x packs two saved tensors)
        assert len(log) == (12 if case == "saved_hooks" else 6)


def test_nan_constants_fuse_and_a_nan_read_is_the_same_outcome():
    def f(x):
        v = x.sqrt().sum().item()  # NaN every call: one outcome, no graph break
        return (x * float("nan") + float("inf")).sum(), v

    cf = T.compile(f)
    x = T.tensor([-1.0, 1.0])
    for _ in range(3):
        s, v = cf(x)
        assert np.isnan(s.item()) and np.isnan(v)
    assert cf.stats["resumes"] == 0 and cf.stats["replays"] == 2


def test_an_eager_function_that_registers_hooks_stays_eager():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g)
        o = T.zeros(2)
        T.add(x.detach(), 1, out=o)  # an out= write: runs eagerly
        return o

    cf = T.compile(f)
    x = T.ones(2, requires_grad=True)
    for _ in range(4):
        cf(x)
    assert cf.stats["captures"] == 1 and cf.stats["eager"] == 3


def test_tape_leaves_may_be_the_functions_arguments():
    # the scalar graph with its leaf passed in: lowered, and each call reads this call's leaf
    # (values may change between calls; shapes are guarded)
    step = W.scalar_step(T, 12, 60)
    cf = T.compile(step)
    for k in range(3):
        data = np.linspace(-1, 1, 12) * (k + 1)
        a = T.tensor(data, requires_grad=True)
        b = T.tensor(data, requires_grad=True)
        step(a)
        cf(b)
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), rtol=1e-13, atol=1e-16)
    rec = next(iter(cf._records.values()))[0]
    assert [ev.name for ev in rec.events] == ["whole_step"] and cf.stats["replays"] == 2

    def elementwise(x, w):
        return ((x * w).tanh() * x).sum().backward()

    ce = T.compile(elementwise)
    for k in range(3):
        x = T.tensor(np.arange(5.0) + k, requires_grad=True)
        w = T.tensor(np.ones(5) / (k + 1), requires_grad=True)
        x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        elementwise(x2, w2)
        ce(x, w)
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-13)
        np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-13)
    rec = next(iter(ce._records.values()))[0]
    assert [ev.name for ev in rec.events] == ["whole_step"] and ce.stats["replays"] == 2


def test_resume_answers_values_made_before_later_side_effects():
    # NOTE [a program that may resume keeps every value]: a value computed again at the
    # resume would see the in-place write / optimizer step that came after it
    def f(x):
        y = x * 2
        x.add_(1)
        if x.sum().item() > 5:
            return y + 1
        return x * 1

    cf = T.compile(f)
    for v in (0.0, 5.0, 5.0, 5.0):
        a, b = T.full((3,), v), T.full((3,), v)
        assert cf(a).tolist() == f(b).tolist() and a.tolist() == b.tolist()

    w = T.ones(3, requires_grad=True)
    we = T.ones(3, requires_grad=True)

    def step_of(w, opt):
        def step(x):
            opt.zero_grad()
            loss = (x * w).sum()
            loss.backward()
            opt.step()
            return loss + T.Tensor._make(np.zeros((), np.float32))  # untracked: a break

        return step

    cs = T.compile(step_of(w, T.optim.SGD([w], lr=0.1)))
    es = step_of(we, T.optim.SGD([we], lr=0.1))
    for _ in range(4):
        assert cs(T.ones(3)).item() == es(T.ones(3)).item()

    def g(x):
        y = x * 2
        y.retain_grad()
        loss = y.sum()
        loss.backward()
        if loss.item() > 10:
            return y.grad
        return None

    cg = T.compile(g)
    x = T.ones(3, requires_grad=True)
    assert cg(x) is None
    for _ in range(3):
        assert cg(T.full((3,), 5.0, requires_grad=True)).tolist() == [1.0, 1.0, 1.0]


def test_a_resume_leaves_the_profiler_flag_off():
    from nbgrad import _flags

    def f(x):
        y = x * 2
        return y + T.Tensor._make(np.ones(3, np.float32))

    cf = T.compile(f)
    for _ in range(3):
        assert cf(T.ones(3)).tolist() == [3.0] * 3
        assert _flags.PROFILE is False and _flags.CAPTURE is None


def test_a_hook_writing_one_inputs_gradient_in_place_leaves_the_others():
    # eager gives a and b separate gradient arrays here: no shared kernel result
    a = T.full((2000,), 0.5, requires_grad=True)
    b = T.full((2000,), 0.25, requires_grad=True)
    a.register_hook(lambda g: g.mul_(3))

    def f():
        loss = T.relu(a * 1.0 + b * 1.0).sum()
        loss.backward()

    cf = T.compile(f)
    for i in range(3):
        cf()
        assert (a.grad[0].item(), b.grad[0].item()) == (3.0 * (i + 1), i + 1.0)


def test_an_active_tracer_keeps_seeing_the_function():
    lines = []

    def tracer(frame, event, arg):
        if frame.f_code.co_name == "f" and event == "line":
            lines.append(frame.f_lineno)
        return tracer

    def f(x):
        v = x.sum().item()
        w = 1
        return v + w

    cf = T.compile(f)
    sys.settrace(tracer)
    try:  # under a tracer the read stays a guard: the second call resumes, running f again
        got = [cf(T.ones(2) * k) for k in (1, 2)]
        f(T.ones(2))
    finally:
        sys.settrace(None)
    assert got == [3.0, 5.0] and len(lines) == 9 and lines[:3] == lines[3:6] == lines[6:]


def test_values_formatted_into_strings_and_data_dependent_shapes_are_guards():
    def f(x):
        n = x.nonzero().shape[0]
        return str(x.sum()), f"{x.max()}", T.zeros(n) + 1, x[x > 0].shape[0] * T.ones(1)

    cf = T.compile(f)
    for v in ([1.0, 0.0, 0.0], [1.0, 2.0, 0.0], [1.0, 2.0, 3.0], [0.0, 0.0, 0.0], [1.0, 2, 0]):
        got, want = cf(T.tensor(v)), f(T.tensor(v))
        assert got[:2] == want[:2]
        assert [t.tolist() for t in got[2:]] == [t.tolist() for t in want[2:]]


def test_untracked_code_after_a_branch_resumes_eagerly_every_time():
    # the continuation captured for a read's new value meets untracked code: it is not
    # recorded (its constant would be stale), the rest runs eagerly on each such call
    def f(x):
        if x.sum().item() > 3:
            return x + T.Tensor._make(np.full(2, x.sum().item(), np.float32))
        return x - 1

    cf = T.compile(f)
    for v in (1.0, 2.0, 3.0, 4.0):
        assert cf(T.full((2,), v)).tolist() == f(T.full((2,), v)).tolist()
    rec = next(iter(cf._records.values()))[0]
    (branches,) = rec.branches.values()
    assert all(c is None for _, c in branches)


@pytest.mark.parametrize("zero", ["module.zero_grad", "by hand"])
def test_manual_sgd_steps_match_eager(zero):
    # NOTE [whether .grad is None is a guard]: Module.zero_grad and hand-written loops decide
    # on ``p.grad is not None``, which is True from the second step on
    def mk():
        T.manual_seed(0)
        return T.nn.Sequential(T.nn.Linear(4, 8), T.nn.ReLU(), T.nn.Linear(8, 1))

    def step(m, x, y):
        loss = ((m(x) - y) ** 2).mean()
        if zero == "module.zero_grad":
            m.zero_grad()
        else:
            for p in m.parameters():
                if p.grad is not None:
                    p.grad = None
        loss.backward()
        with T.no_grad():
            for p in m.parameters():
                p -= 0.1 * p.grad
        return loss.item()

    x, y = T.randn(16, 4), T.randn(16, 1)
    me, mc = mk(), mk()
    cs = T.compile(step)
    for _ in range(5):
        assert step(me, x, y) == cs(mc, x, y)
    for pe, pc in zip(me.parameters(), mc.parameters()):
        np.testing.assert_array_equal(pe.detach().numpy(), pc.detach().numpy())
    assert cs.stats["captures"] == 1 and cs.stats["replays"] == 4


def test_switching_a_module_between_train_and_eval_captures_again():
    # NOTE [a module's training flag is a guard]: dropout's mask is in the record only in
    # train mode; eval() must not replay it
    T.manual_seed(0)
    m = T.nn.Sequential(T.nn.Linear(2, 4), T.nn.Dropout(0.5), T.nn.Linear(4, 1))
    cm = T.compile(lambda x: m(x))
    x = T.ones(3, 2)
    cm(x)
    m.eval()
    for _ in range(2):
        np.testing.assert_array_equal(cm(x).detach().numpy(), m(x).detach().numpy())
    assert cm.stats["invalidations"] == 1 and cm.stats["replays"] == 1
    m.train()
    cm(x)
    assert cm.stats["invalidations"] == 2


def test_batch_norm_training_step_matches_eager():
    # batch statistics are arrays made outside any op (batch_norm_stats, which also updates
    # the running buffers): a recorded call whose arrays are values, not stale constants
    def mk():
        T.manual_seed(0)
        return T.nn.Sequential(T.nn.Linear(4, 8), T.nn.BatchNorm1d(8), T.nn.ReLU(),
                               T.nn.Linear(8, 1))  # fmt: skip

    def step_of(m):
        opt = T.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            opt.zero_grad()
            loss = ((m(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            return loss.detach()

        return step

    T.manual_seed(1)
    x, y = T.randn(16, 4), T.randn(16, 1)
    me, mc = mk(), mk()
    se, sc = step_of(me), T.compile(step_of(mc))
    for _ in range(4):
        assert se(x, y).item() == sc(x, y).item()
    np.testing.assert_array_equal(me[1].running_mean.numpy(), mc[1].running_mean.numpy())
    np.testing.assert_array_equal(me[1].running_var.numpy(), mc[1].running_var.numpy())
    assert int(mc[1].num_batches_tracked) == 4 and sc.stats["replays"] == 3


def test_an_array_made_by_unrecorded_code_is_a_graph_break():
    import nbgrad.ops.nn.norm as norm

    stats = norm.batch_norm_stats  # bound now: calls through it are not recorded

    def f(x):
        mean, rstd = stats(x, None, None, None, None, True, 0.1, 1e-5)
        return norm.batch_norm(x, None, None, mean, rstd, True, 1e-5)

    cf = T.compile(f)
    x = T.randn(6, 3)
    for k in range(3):
        xk = x * (k + 1)
        np.testing.assert_allclose(cf(xk).numpy(), f(xk).numpy(), rtol=1e-6, atol=1e-6)
    assert "an array made by code nbgrad.compile does not record" in cf.explain()


@pytest.mark.parametrize(
    "act",
    [
        lambda F, h: F.elu(h, alpha=1.5, inplace=True),
        lambda F, h: F.leaky_relu(h, 0.2, inplace=True),
        lambda F, h: F.hardtanh(h, -0.5, 0.7, inplace=True),
        lambda F, h: F.silu(h, inplace=True),
        lambda F, h: F.mish(h, inplace=True),
        lambda F, h: F.relu(h, inplace=True),
    ],
    ids=["elu", "leaky_relu", "hardtanh", "silu", "mish", "relu"],
)
def test_inplace_functional_activations_are_recorded_not_graph_breaks(act):
    """``F.elu(x, inplace=True)`` and the other in-place activations write through
    autograd/inplace.py: recorded as a call and replayed, with eager's values and gradients
    (before, the written tensor was untracked code: a graph break, the rest eager)."""
    F = T.nn.functional
    x = T.tensor(np.linspace(-2, 2, 12).reshape(3, 4), requires_grad=True)

    def f(x):
        h = x * 2
        act(F, h)
        y = (h * 1.25 + 0.5).sin()
        y.sum().backward()
        return y, h

    want = [t.detach().numpy().copy() for t in f(x)]
    want_g = x.grad.numpy().copy()
    cf = T.compile(f)
    for _ in range(2):
        x.grad = None
        got = [t.detach().numpy() for t in cf(x)]
        for a, b in zip(got, want):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(x.grad.numpy(), want_g, rtol=1e-12, atol=1e-14)
    assert cf.stats["replays"] == 1 and cf.stats["resumes"] == 0
    (rec,) = next(iter(cf._records.values()))
    assert [ev.kind for ev in rec.events].count("break") == 0
    assert [ev.name for ev in rec.raw if ev.kind == "call"][0] in ("inplace", "Tensor.relu_")


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs os.fork")
def test_a_child_forked_after_numba_started_its_threads_runs_large_regions(monkeypatch):
    """GNU OpenMP terminates a forked child that runs it after the parent started it (even by
    ``numba.get_num_threads()``, without any parallel kernel): the child runs the plain loop
    kernels, with the parent's results."""
    import os
    import sys

    import numba

    fuse_mod = sys.modules["nbgrad.compile.fuse"]
    monkeypatch.setattr(fuse_mod, "PARALLEL_MIN", 1 << 16)
    numba.get_num_threads()  # starts the threading layer here
    x = T.tensor(np.random.default_rng(0).standard_normal(70000))
    cf = T.compile(lambda x: ((x * 1.5).tanh() + x.sigmoid()) * 2.0)
    want = cf(x).numpy()  # the capture, eager
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 4
        try:
            got = [cf(x).numpy() for _ in range(2)]  # replays
            code = 0 if all(np.allclose(g, want, rtol=1e-12) for g in got) else 3
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
