"""nn.Module hook scenarios (SEMANTICS.md section 5) shared by the PyTorch fixture recorder
(scripts/record_hook_fixtures.py) and tests/test_module_hooks.py.  Same conventions as
tests/hook_scenarios.py: ``scenario(T, log)`` with ``T`` = torch or nbgrad."""

import warnings

from hook_scenarios import err, normalize, val

SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


def run(fn, T):
    log = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(T, log)
        except Exception as e:  # noqa: BLE001
            log.append(("uncaught", type(e).__name__, str(e)))
        finally:
            _reset_flag(T)  # the global old/full flag is sticky in PyTorch
        for w in caught:
            if issubclass(w.category, (UserWarning, FutureWarning)) and (
                "hook" in str(w.message) or "backward" in str(w.message)
            ):
                log.append(("warning", w.category.__name__, str(w.message)[:60]))
    return normalize(log)


def _reset_flag(T):
    m = T.nn.modules.module
    if isinstance(getattr(m, "_global_is_full_backward_hook", None), list):
        m._global_is_full_backward_hook[0] = None
    else:
        m._global_is_full_backward_hook = None


def tvals(t):
    return None if t is None else [val(x) for x in t]


def Two(T):
    class M(T.nn.Module):
        def forward(self, x, y, flag):
            return x * y, x + y

    return M()


def Scale(T):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([2.0, 3.0]))

        def forward(self, x, scale=1.0):
            return x * self.w * scale

    return M()


def X(T):
    return T.tensor([1.0, 2.0], requires_grad=True)


def Y(T):
    return T.tensor([3.0, 4.0], requires_grad=True)


@scenario
def m_forward_pre_hook_replaces_args(T, log):
    m = Scale(T)
    m.register_forward_pre_hook(
        lambda mod, args: log.append(("pre", len(args))) or (args[0] * 0 + 1,)
    )
    log.append(("out", val(m(T.tensor([5.0, 5.0])))))
    m2 = Scale(T)
    m2.register_forward_pre_hook(lambda mod, args: args[0] * 2)  # bare value: wrapped
    log.append(("out2", val(m2(T.tensor([1.0, 1.0])))))
    m3 = Scale(T)
    m3.register_forward_pre_hook(lambda mod, args: log.append(("kwonly", len(args))))
    log.append(("out3", val(m3(x=T.ones(2)))))


@scenario
def m_forward_hooks_with_kwargs(T, log):
    m = Scale(T)

    def pre_kw(mod, args, kwargs):
        kwargs = dict(kwargs)
        kwargs["scale"] = 10.0
        return args, kwargs

    def fwd_kw(mod, args, kwargs, out):
        log.append(("fwd_kw", val(kwargs["scale"])))
        return out + 1

    m.register_forward_pre_hook(pre_kw, with_kwargs=True)
    m.register_forward_hook(fwd_kw, with_kwargs=True)
    m.w.data = T.ones(2)
    log.append(("out", val(m(T.ones(2), scale=2.0))))
    bad = Scale(T)
    bad.register_forward_pre_hook(lambda mod, a, k: (T.ones(2),), with_kwargs=True)
    try:
        bad(T.ones(2))
    except RuntimeError as e:
        err(log, e)


@scenario
def m_forward_hook_replaces_output_and_prepend(T, log):
    m = Scale(T)
    m.register_forward_pre_hook(lambda mod, a: log.append(("pre", "A")))
    m.register_forward_pre_hook(lambda mod, a: log.append(("pre", "B")), prepend=True)
    m.register_forward_hook(lambda mod, a, o: log.append(("fwd", "A", val(o))) or o * 0)
    m.register_forward_hook(lambda mod, a, o: log.append(("fwd", "B", val(o))), prepend=True)
    log.append(("out", val(m(T.ones(2)))))
    log.append(("direct", val(m.forward(T.ones(2)))))  # forward() bypasses hooks


@scenario
def m_always_call(T, log):
    class Boom(T.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    m = Boom()
    m.register_forward_hook(lambda mod, a, o: log.append(("always", o)), always_call=True)
    m.register_forward_hook(lambda mod, a, o: log.append(("normal", o)))
    try:
        m(T.ones(2))
    except ValueError as e:
        err(log, e)


@scenario
def m_full_backward_hooks_two_outputs(T, log):
    m = Two(T)
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("bpre", tvals(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bh", tvals(gi), tvals(go))))
    x, y = X(T), Y(T)
    p, s = m(x, y, 3)
    log.append(("name", p.grad_fn.name(), p._is_view()))
    (p.sum() * 2 + s.sum()).backward()
    log.append(("grads", val(x.grad), val(y.grad)))


@scenario
def m_grad_input_zeros_for_no_grad_tensor(T, log):
    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = T.nn.Parameter(T.tensor([2.0, 3.0]))

        def forward(self, x, k, z):
            return x * self.w * k + z

    m = M()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bh", tvals(gi))))
    out = m(T.tensor([1.0, 1.0], requires_grad=True), 5.0, T.tensor([1.0, 1.0]))
    out.sum().backward()


@scenario
def m_unused_output_grad_output_none(T, log):
    m = Two(T)
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bh", tvals(go))))
    p, s = m(X(T), Y(T), 0)
    p.sum().backward()


@scenario
def m_backward_hook_replacement_and_errors(T, log):
    m = Two(T)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 100, None, None))
    x, y = X(T), Y(T)
    p, s = m(x, y, 0)
    p.sum().backward()
    log.append(("grads", val(x.grad), val(y.grad)))
    m2 = Two(T)
    m2.register_full_backward_hook(lambda mod, gi, go: (gi[0],))
    p, s = m2(X(T), Y(T), 0)
    try:
        p.sum().backward()
    except RuntimeError as e:
        err(log, e)
    m3 = Two(T)
    m3.register_full_backward_pre_hook(lambda mod, go: (go[0],))
    p, s = m3(X(T), Y(T), 0)
    try:
        (p + s).sum().backward()
    except RuntimeError as e:
        err(log, e)
    m4 = Scale(T)
    m4.register_full_backward_hook(lambda mod, gi, go: gi[0] * 2)  # bare tensor: iterated
    try:
        m4(X(T)).sum().backward()
    except RuntimeError as e:
        err(log, e)


@scenario
def m_pre_hook_replaces_grad_output(T, log):
    m = Scale(T)
    m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 10,))
    x = X(T)
    m(x).sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def m_fires_per_call_and_nested_order(T, log):
    class Inner(T.nn.Module):
        def forward(self, x):
            return x * 2

    class Outer(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return self.inner(x) * 3

    o = Outer()
    for name, mod in (("outer", o), ("inner", o.inner)):
        mod.register_forward_pre_hook(lambda m_, a, n=name: log.append(("fpre", n)))
        mod.register_forward_hook(lambda m_, a, out, n=name: log.append(("fh", n)))
        mod.register_full_backward_pre_hook(lambda m_, go, n=name: log.append(("bpre", n)))
        mod.register_full_backward_hook(lambda m_, gi, go, n=name: log.append(("bh", n)))
    x = X(T)
    (o(x).sum() + o(x).sum()).backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def m_no_input_requires_grad(T, log):
    m = Scale(T)
    m.register_full_backward_pre_hook(lambda mod, go: log.append(("bpre", tvals(go))))
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bh", tvals(gi), tvals(go))))
    m(T.ones(2)).sum().backward()
    log.append(("w.grad", val(m.w.grad)))


@scenario
def m_dict_output_warns_and_hooks_skip(T, log):
    class D(T.nn.Module):
        def forward(self, x):
            return {"out": x * 2}

    m = D()
    m.register_full_backward_hook(lambda mod, gi, go: log.append(("bh",)))
    x = X(T)
    m(x)["out"].sum().backward()
    log.append(("x.grad", val(x.grad)))


@scenario
def m_inplace_on_hooked_output(T, log):
    m = Scale(T)
    m.register_full_backward_hook(lambda mod, gi, go: None)
    out = m(X(T))
    try:
        out.add_(1)
    except RuntimeError as e:
        err(log, e, phrase="is a view and is being modified inplace")
    m2 = Scale(T)
    m2.register_forward_hook(lambda mod, a, o: None)
    out = m2(X(T))
    out.add_(1)
    log.append(("fwd-only ok", out.grad_fn.name()))


@scenario
def m_global_hooks_order_and_replacement(T, log):
    mm = T.nn.modules.module
    hs = [
        mm.register_module_forward_pre_hook(lambda m, a: log.append(("global fwd pre",))),
        mm.register_module_forward_hook(lambda m, a, o: log.append(("global fwd",)) or o + 1),
        mm.register_module_full_backward_pre_hook(lambda m, go: log.append(("global bwd pre",))),
        mm.register_module_full_backward_hook(lambda m, gi, go: log.append(("global full bwd",))),
    ]
    try:
        m = Scale(T)
        m.register_forward_pre_hook(lambda mod, a: log.append(("module fwd pre",)))
        m.register_forward_hook(lambda mod, a, o: log.append(("module fwd", val(o))))
        m.register_full_backward_pre_hook(lambda mod, go: log.append(("module bwd pre",)))
        m.register_full_backward_hook(lambda mod, gi, go: log.append(("module full bwd",)))
        m(X(T)).sum().backward()
    finally:
        for h in hs:
            h.remove()


@scenario
def m_mixing_old_and_full_hooks(T, log):
    m = Scale(T)
    m.register_full_backward_hook(lambda *a: None)
    try:
        m.register_backward_hook(lambda *a: None)
    except RuntimeError as e:
        err(log, e)
    m = Scale(T)
    m.register_backward_hook(lambda *a: None)
    try:
        m.register_full_backward_hook(lambda *a: None)
    except RuntimeError as e:
        err(log, e)
    mm = T.nn.modules.module
    h = mm.register_module_backward_hook(lambda *a: None)
    h.remove()
    try:
        mm.register_module_full_backward_hook(lambda *a: None)
    except RuntimeError as e:
        err(log, e)
    _reset_flag(T)


@scenario
def m_old_style_backward_hook(T, log):
    class S(T.nn.Module):
        def forward(self, x):
            return (x * 3).sum()

    class D(T.nn.Module):
        def forward(self, x):
            return x * 2

    s = S()
    s.register_backward_hook(lambda m, gi, go: log.append(("old", tvals(gi), tvals(go))))
    s(X(T)).backward()
    d = D()
    d.register_backward_hook(lambda m, gi, go: log.append(("old2", tvals(gi), tvals(go))))
    d(X(T)).sum().backward()


# -- the seed scenarios for global module backward hooks ------------------------


def _net(T):
    class Net(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = Scale(T)
            self.dead = Scale(T)
            self.b = Scale(T)

        def forward(self, x):
            return self.b(self.a(x)) + self.dead(x) * 0

    return Net()


@scenario
def seed_global_hook_gradient_statistics(T, log):
    stats = []
    h = T.nn.modules.module.register_module_full_backward_hook(
        lambda m, gi, go: stats.append(
            (type(m).__name__, val(go[0].norm()), val(go[0].abs().max()))
        )
    )
    try:
        _net(T)(X(T)).sum().backward()
    finally:
        h.remove()
    log.append(("stats", stats))


@scenario
def seed_global_hook_clipping(T, log):
    h = T.nn.modules.module.register_module_full_backward_hook(
        lambda m, gi, go: tuple(g.clamp(-5, 5) if g is not None else None for g in gi)
    )
    try:
        x = X(T)
        _net(T)(x).sum().backward()
        log.append(("x.grad", val(x.grad)))
    finally:
        h.remove()


@scenario
def seed_global_hook_detects_zero_gradients(T, log):
    zero = []
    h = T.nn.modules.module.register_module_full_backward_hook(
        lambda m, gi, go: zero.append(all(g is None or not bool((g != 0).any()) for g in gi))
    )
    try:
        _net(T)(X(T)).sum().backward()
    finally:
        h.remove()
    log.append(("all-zero flags", zero))
