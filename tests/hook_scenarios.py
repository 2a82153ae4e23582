"""Hook / version-counter / anomaly scenarios shared by the PyTorch fixture recorder
(scripts/record_hook_fixtures.py) and the nbgrad test (tests/test_hooks.py).

Every scenario is ``scenario(T, log)``: ``T`` is the library module (``torch`` or ``nbgrad``),
``log`` a list.  Hooks append ``(kind, name, value)`` tuples, values being ``val(...)`` of the
tensors they see (``tolist()`` rounded to 6 digits, nan/inf as strings); each scenario also
appends its final results.  Expected errors are caught and logged as
``('error', type(e).__name__, message)``: the full message where SEMANTICS.md gives the full
text, otherwise the key phrase (``err(..., phrase=...)`` logs the phrase when it occurs in the
message and the whole message when it does not, so a mismatch shows what was raised).

Covers SEMANTICS.md sections 1, 2, 3, 4, 6 and 10, plus the three seed scenarios of the issue
(gradient-norm logging, clipping with clamp, scaling by a factor read from a captured tensor).
"""

import math
import warnings

SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


# --------------------------------------------------------------------------- helpers


def is_tensor_like(v):
    return hasattr(v, "tolist") and hasattr(v, "requires_grad")


def val(v):
    """A JSON-friendly, exactly comparable rendering of a tensor / tuple / scalar."""
    if v is None:
        return None
    if is_tensor_like(v):
        return val(v.tolist())
    if isinstance(v, (list, tuple)):
        return [val(e) for e in v]
    if isinstance(v, bool):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = round(v, 6)
        return 0.0 if r == 0 else r
    return v


def err(log, e, phrase=None, name="error"):
    msg = str(e)
    if phrase is not None and phrase in msg:
        msg = phrase
    log.append((name, type(e).__name__, msg))


def rec(log, name, ret=None, extra=None):
    """A tensor hook that logs what it sees (and optionally ``extra()``) and returns ``ret(g)``."""

    def hook(g):
        if extra is None:
            log.append(("hook", name, val(g)))
        else:
            log.append(("hook", name, [val(g), val(extra())]))
        return None if ret is None else ret(g)

    return hook


def normalize(obj):
    """Replace 'torch.' by 'nbgrad.' in every string; tuples become lists (JSON shape)."""
    if isinstance(obj, str):
        return obj.replace("torch.", "nbgrad.")
    if isinstance(obj, (list, tuple)):
        return [normalize(e) for e in obj]
    if isinstance(obj, dict):
        return {normalize(k): normalize(v) for k, v in obj.items()}
    return obj


def run(fn, T):
    """Run one scenario; an unexpected exception ends it with an ('uncaught', ...) entry."""
    log = []
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            fn(T, log)
        except Exception as e:  # noqa: BLE001
            log.append(("uncaught", type(e).__name__, str(e)))
        finally:
            try:
                T.autograd.set_detect_anomaly(False)
            except Exception:  # noqa: BLE001
                pass
    return normalize(log)


def X(T):
    return T.tensor([1.0, 2.0], requires_grad=True)


def node_name(n):
    return None if n is None else n.name()


def nf(node):
    """next_functions rendered as [[name_or_None, input_nr], ...]."""
    return [[node_name(n), nr] for n, nr in node.next_functions]


# =========================================================================== §1 register_hook


@scenario
def s1_hook_requires_grad_error(T, log):
    t = T.tensor([1.0, 2.0])
    try:
        t.register_hook(lambda g: None)
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_removable_handle_api(T, log):
    x = X(T)
    h1 = x.register_hook(rec(log, "h1"))
    h2 = x.register_hook(rec(log, "h2"))
    log.append(("isinstance RemovableHandle", None, isinstance(h1, T.utils.hooks.RemovableHandle)))
    log.append(("type name", None, type(h1).__name__))
    log.append(("ids increasing", None, h2.id > h1.id and isinstance(h1.id, int)))
    h1.remove()
    h1.remove()  # idempotent
    log.append(("removed twice", None, "ok"))
    with x.register_hook(rec(log, "ctx")) as h3:
        log.append(("ctx returns handle", None, h3 is not None and h3.id > h2.id))
    (x * 2).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_fire_once_summed_nonleaf(T, log):
    x = X(T)
    y = x * 2
    y.register_hook(rec(log, "y"))
    ((y * 3).sum() + (y * 5).sum() + y.sum()).backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_fire_once_summed_leaf(T, log):
    x = X(T)
    x.register_hook(rec(log, "x"))
    (x * 3 + x * 5).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_leaf_hook_in_autograd_grad(T, log):
    x = X(T)
    x.register_hook(rec(log, "x", ret=lambda g: g * 10))
    res = T.autograd.grad((x * 2).sum(), x)
    log.append(("type", None, type(res).__name__))
    log.append(("grad result", None, val(res)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_nonleaf_hook_in_autograd_grad(T, log):
    x = X(T)
    y = x * 2
    y.register_hook(rec(log, "y", ret=lambda g: g * 10))
    res = T.autograd.grad((y * 3).sum(), [x])
    log.append(("grad result", None, val(res)))


@scenario
def s1_hook_not_fired_unneeded_branch_autograd_grad(T, log):
    x = X(T)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    a = x * 2
    a.register_hook(rec(log, "a"))
    x.register_hook(rec(log, "x"))
    w.register_hook(rec(log, "w"))
    out = a.sum() + (w * 3).sum()
    res = T.autograd.grad(out, [w])
    log.append(("grad result", None, val(res)))
    log.append(("x.grad", None, val(x.grad)))
    log.append(("w.grad", None, val(w.grad)))


@scenario
def s1_backward_inputs_does_not_fire_leaf_hook(T, log):
    x = X(T)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    x.register_hook(rec(log, "x"))
    w.register_hook(rec(log, "w"))
    (x * w).sum().backward(inputs=[w])
    log.append(("x.grad", None, val(x.grad)))
    log.append(("w.grad", None, val(w.grad)))


@scenario
def s1_nonleaf_on_path_fires(T, log):
    x = X(T)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    y = x * 2
    y.register_hook(rec(log, "y"))
    u = w * 1
    u.register_hook(rec(log, "u (not on path to x)"))
    res = T.autograd.grad((y * u).sum(), [x])
    log.append(("grad result", None, val(res)))


@scenario
def s1_replacement_chain_h1_h2_h3(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(rec(log, "h1", ret=lambda g: g * 10))
    y.register_hook(rec(log, "h2"))
    y.register_hook(rec(log, "h3", ret=lambda g: g + 1))
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_invalid_return_size(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(lambda g: T.ones(3))
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_invalid_return_size_named_hook(T, log):
    x = X(T)
    y = x * 1

    def my_hook(g):
        return T.ones(3)

    y.register_hook(my_hook)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_invalid_return_size_leaf(T, log):
    x = X(T)
    x.register_hook(lambda g: T.ones(3))
    try:
        (x * 2).sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_invalid_return_dtype(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(lambda g: g.double())
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_invalid_return_non_tensor(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(lambda g: 1)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_inplace_mul_inside_hook(T, log):
    x = X(T)
    y = x * 1

    def h(g):
        log.append(("hook", "before mul_", val(g)))
        g.mul_(7)

    y.register_hook(h)
    y.register_hook(rec(log, "next hook"))
    (y * 1).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_inplace_mul_inside_hook_leaf(T, log):
    x = X(T)

    def h(g):
        g.mul_(7)

    x.register_hook(h)
    (x * 1).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_inplace_mul_on_expanded_grad_errors(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(lambda g: g.mul_(7))
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_hook_exception_propagates(T, log):
    x = X(T)
    y = x * 1

    def bad(g):
        raise ValueError("boom from hook")

    y.register_hook(bad)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s1_leaf_hook_before_accumulation(T, log):
    x = X(T)
    x.register_hook(rec(log, "x", ret=lambda g: g * 100, extra=lambda: x.grad))
    (x * 2).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_leaf_hook_two_backwards(T, log):
    x = X(T)
    x.register_hook(rec(log, "x", extra=lambda: x.grad))
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_nonleaf_hook_output_flows_into_grad_fn(T, log):
    x = X(T)
    y = x * 3
    y.register_hook(rec(log, "y", ret=lambda g: g * 2))
    y.grad_fn.register_prehook(lambda go: log.append(("prehook", "y.grad_fn", val(go))))
    (y * 1).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


def _retain_case(T, log, order):
    x = X(T)
    y = x * 1
    for step in order:
        if step == "retain":
            y.retain_grad()
        else:
            f = step
            y.register_hook(rec(log, "hook*%d" % f, ret=lambda g, f=f: g * f))
    y.sum().backward()
    log.append(("y.grad", None, val(y.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_retain_grad_then_hook(T, log):
    _retain_case(T, log, ["retain", 10])


@scenario
def s1_hook_then_retain_grad(T, log):
    _retain_case(T, log, [10, "retain"])


@scenario
def s1_hook_retain_grad_hook(T, log):
    _retain_case(T, log, [10, "retain", 3])


@scenario
def s1_retain_grad_visible_timing(T, log):
    x = X(T)
    y = x * 1
    y.retain_grad()
    y.register_hook(rec(log, "tensor hook", extra=lambda: y.grad))
    y.grad_fn.register_prehook(
        lambda go: log.append(("prehook", "y.grad_fn", [val(go), val(y.grad)]))
    )
    y.sum().backward(retain_graph=True)
    log.append(("y.grad after 1", None, val(y.grad)))
    y.sum().backward()
    log.append(("y.grad after 2", None, val(y.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_retain_grad_leaf_noop_and_flags(T, log):
    x = X(T)
    x.retain_grad()
    log.append(("x.retains_grad", None, x.retains_grad))
    y = x * 1
    log.append(("y.retains_grad before", None, y.retains_grad))
    y.retain_grad()
    log.append(("y.retains_grad after", None, y.retains_grad))
    y.retain_grad()  # twice is fine
    y.sum().backward()
    log.append(("y.grad", None, val(y.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_retain_grad_requires_grad_false(T, log):
    t = T.tensor([1.0, 2.0])
    try:
        t.retain_grad()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


@scenario
def s1_nonleaf_grad_access_warning(T, log):
    x = X(T)
    y = x * 1
    y.sum().backward()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        g = y.grad
    log.append(("y.grad", None, val(g)))
    log.append(("n warnings", None, len(w)))
    for item in w:
        msg = str(item.message)
        log.append(
            (
                "warning",
                item.category.__name__,
                [
                    msg.startswith("The .grad attribute of a Tensor that is not a leaf"),
                    msg.startswith(NONLEAF_GRAD_WARNING),
                ],
            )
        )  # torch appends '(Triggered internally ...)'
    # no warning for a leaf or a retained non-leaf
    z = x * 1
    z.retain_grad()
    z.sum().backward()
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        _ = x.grad
        _ = z.grad
    log.append(("warnings for leaf/retained", None, len(w2)))


@scenario
def s1_hooks_before_after_inplace_same_tensor(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(rec(log, "A"))
    y.retain_grad()
    y.mul_(3)
    y.register_hook(rec(log, "B"))
    (y * 5).sum().backward()
    log.append(("y.grad", None, val(y.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_order_across_tensors(T, log):
    x = X(T)
    a = x * 2
    b = a * 3
    c = b * 4
    a.register_hook(rec(log, "a"))
    b.register_hook(rec(log, "b"))
    c.register_hook(rec(log, "c"))
    c.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_remove_before_backward(T, log):
    x = X(T)
    y = x * 1
    h = y.register_hook(rec(log, "removed", ret=lambda g: g * 100))
    y.register_hook(rec(log, "kept"))
    h.remove()
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_remove_sibling_during_backward(T, log):
    x = X(T)
    y = x * 1
    handles = {}

    def h1(g):
        log.append(("hook", "h1", val(g)))
        handles["h2"].remove()

    y.register_hook(h1)
    handles["h2"] = y.register_hook(rec(log, "h2", ret=lambda g: g * 10))
    y.sum().backward(retain_graph=True)
    log.append(("x.grad after 1", None, val(x.grad)))
    y.sum().backward()
    log.append(("x.grad after 2", None, val(x.grad)))


@scenario
def s1_remove_other_tensor_hook_during_backward(T, log):
    x = X(T)
    a = x * 2
    b = a * 3
    handles = {}

    def hb(g):
        log.append(("hook", "b", val(g)))
        handles["a"].remove()

    b.register_hook(hb)
    handles["a"] = a.register_hook(rec(log, "a", ret=lambda g: g * 10))
    b.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_add_hook_inside_hook(T, log):
    x = X(T)
    y = x * 1
    count = [0]

    def adder(g):
        count[0] += 1
        n = count[0]
        log.append(("hook", "adder", val(g)))
        y.register_hook(rec(log, "added#%d" % n, ret=lambda g: g * 10))

    y.register_hook(adder)
    y.sum().backward(retain_graph=True)
    log.append(("x.grad after 1", None, val(x.grad)))
    y.sum().backward()
    log.append(("x.grad after 2", None, val(x.grad)))


@scenario
def s1_self_removing_hook(T, log):
    x = X(T)
    y = x * 1
    handles = {}

    def once(g):
        log.append(("hook", "once", val(g)))
        handles["once"].remove()
        return g * 2

    handles["once"] = y.register_hook(once)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s1_remove_via_context_manager(T, log):
    x = X(T)
    y = x * 1
    with y.register_hook(rec(log, "ctx", ret=lambda g: g * 10)):
        y.sum().backward(retain_graph=True)
    log.append(("x.grad after 1", None, val(x.grad)))
    y.sum().backward()
    log.append(("x.grad after 2", None, val(x.grad)))


@scenario
def s1_grad_mode_inside_hooks(T, log):
    x = X(T)
    y = x * 1
    y.register_hook(lambda g: log.append(("hook", "grad enabled", T.is_grad_enabled())))
    y.sum().backward(retain_graph=True)
    y.sum().backward(create_graph=True)
    log.append(("grad enabled after", None, T.is_grad_enabled()))
    log.append(("x.grad", None, val(x.grad)))


# ================================================================ §2 post-accumulate-grad hooks


@scenario
def s2_post_acc_registration_errors(T, log):
    x = X(T)
    y = x * 1
    try:
        y.register_post_accumulate_grad_hook(lambda t: None)
        log.append(("no error", "non-leaf", None))
    except Exception as e:
        err(log, e)
    t = T.tensor([1.0, 2.0])
    try:
        t.register_post_accumulate_grad_hook(lambda t: None)
        log.append(("no error", "no requires_grad", None))
    except Exception as e:
        err(log, e)


@scenario
def s2_post_acc_order_with_tensor_hook(T, log):
    x = X(T)

    def P(t):
        log.append(("post_acc", "P", [t is x, val(t.grad)]))

    h = x.register_post_accumulate_grad_hook(P)
    log.append(("handle type", None, type(h).__name__))
    x.register_hook(rec(log, "tensor*10", ret=lambda g: g * 10, extra=lambda: x.grad))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s2_post_acc_multiple_in_registration_order(T, log):
    x = X(T)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "P1", val(t.grad))))
    x.register_hook(rec(log, "tensor"))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "P2", val(t.grad))))
    (x * 3).sum().backward()


@scenario
def s2_post_acc_return_tensor_errors(T, log):
    x = X(T)
    x.register_post_accumulate_grad_hook(lambda t: t.grad)
    try:
        (x * 2).sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s2_post_acc_return_str_errors(T, log):
    x = X(T)
    x.register_post_accumulate_grad_hook(lambda t: "oops")
    try:
        (x * 2).sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s2_post_acc_inputs_restriction(T, log):
    x = X(T)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "x", val(t.grad))))
    w.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "w", val(t.grad))))
    (x * w).sum().backward(inputs=[x])
    log.append(("x.grad", None, val(x.grad)))
    log.append(("w.grad", None, val(w.grad)))


@scenario
def s2_post_acc_not_under_autograd_grad(T, log):
    x = X(T)
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "x", val(t.grad))))
    res = T.autograd.grad((x * 2).sum(), x)
    log.append(("grad result", None, val(res)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s2_post_acc_leaf_not_in_graph(T, log):
    x = X(T)
    u = T.tensor([5.0], requires_grad=True)
    u.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "u", val(t.grad))))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "x", val(t.grad))))
    (x * 2).sum().backward()
    log.append(("u.grad", None, val(u.grad)))


@scenario
def s2_post_acc_remove(T, log):
    x = X(T)
    h = x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "removed", None)))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("post_acc", "kept", val(t.grad))))
    h.remove()
    h.remove()
    (x * 2).sum().backward()


@scenario
def s2_optimizer_in_backward(T, log):
    x = X(T)

    def step(t):
        log.append(("post_acc", "step sees grad", val(t.grad)))
        with T.no_grad():
            t.sub_(0.1 * t.grad)
        t.grad = None

    x.register_post_accumulate_grad_hook(step)
    (x * 2).sum().backward()
    log.append(("x", None, val(x)))
    log.append(("repr", None, repr(x)))
    log.append(("x.grad", None, val(x.grad)))
    log.append(("flags", None, [x.is_leaf, x.requires_grad, x.grad_fn is None]))


# ====================================================================== §3 Node API and hooks


@scenario
def s3_node_identity_and_class(T, log):
    a = X(T)
    y = a * 2
    log.append(("a.grad_fn", None, a.grad_fn is None))
    log.append(("same object", None, y.grad_fn is y.grad_fn))
    log.append(("class == name()", None, [type(y.grad_fn).__name__, y.grad_fn.name()]))
    log.append(("isinstance Node", None, isinstance(y.grad_fn, T.autograd.graph.Node)))
    ag = y.grad_fn.next_functions[0][0]
    log.append(
        (
            "AccumulateGrad",
            None,
            [
                type(ag).__name__,
                ag.name(),
                isinstance(ag, T.autograd.graph.Node),
                ag.variable is a,
                list(ag.next_functions),
            ],
        )
    )
    ag2 = (a * 1).grad_fn.next_functions[0][0]
    log.append(("AccumulateGrad reused", None, ag is ag2))
    s = y.sum()
    log.append(("sum node", None, [type(s.grad_fn).__name__, s.grad_fn.name()]))


@scenario
def s3_next_functions(T, log):
    a = T.tensor([1.0, 2.0], requires_grad=True)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    c = T.tensor([5.0, 6.0], requires_grad=True)
    out = (a * b + c).sum()
    s = out.grad_fn
    log.append(("SumBackward0", s.name(), nf(s)))
    add = s.next_functions[0][0]
    log.append(("AddBackward0", add.name(), nf(add)))
    mul = add.next_functions[0][0]
    log.append(("MulBackward0", mul.name(), nf(mul)))
    log.append(("c accumulator", None, add.next_functions[1][0].variable is c))
    log.append(("a*2", None, nf((a * 2).grad_fn)))
    log.append(("a+1", None, nf((a + 1).grad_fn)))
    log.append(("a*const_tensor", None, nf((a * T.tensor([2.0, 2.0])).grad_fn)))
    try:
        p, q = (a * 1).unbind()
        log.append(("(q*2) unbind", None, nf((q * 2).grad_fn)))
        log.append(("(p*2) unbind", None, nf((p * 2).grad_fn)))
    except Exception as e:
        err(log, e)


@scenario
def s3_node_metadata(T, log):
    a = X(T)
    y = a * 2
    md = y.grad_fn.metadata
    log.append(("metadata", None, [type(md).__name__, md == {}]))
    y.grad_fn.metadata["k"] = 1
    log.append(("persistent", None, y.grad_fn.metadata.get("k")))
    log.append(("requires_grad", None, y.grad_fn.requires_grad))


@scenario
def s3_saved_attributes_and_direct_call(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    gf = y.grad_fn
    log.append(("_saved_self is a", None, gf._saved_self is a))
    log.append(("_saved_other is b", None, gf._saved_other is b))
    s = y.sum()
    try:
        log.append(("_saved_self_sym_sizes", None, val(list(s.grad_fn._saved_self_sym_sizes))))
    except Exception as e:
        err(log, e)
    out = gf(T.ones(2))
    log.append(("direct call", type(out).__name__, val(out)))
    s.backward()
    log.append(("a.grad", None, val(a.grad)))
    try:
        gf._saved_self
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e, phrase="backward through the graph a second time")
    log.append(("next_functions after backward", None, nf(gf)))


@scenario
def s3_node_pre_post_hooks_observe(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_prehook(
        lambda go: log.append(("prehook", "y", [type(go).__name__, val(go)]))
    )
    y.grad_fn.register_hook(
        lambda gi, go: log.append(("posthook", "y", [type(gi).__name__, val(gi), val(go)]))
    )
    y.sum().backward()
    log.append(("a.grad", None, val(a.grad)))
    log.append(("b.grad", None, val(b.grad)))


@scenario
def s3_node_pre_post_hooks_replace(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b

    def pre(go):
        log.append(("prehook", "y", val(go)))
        return (go[0] * 10,)

    def post(gi, go):
        log.append(("posthook", "y", [val(gi), val(go)]))
        return (gi[0], None)

    y.grad_fn.register_prehook(pre)
    y.grad_fn.register_hook(post)
    y.sum().backward()
    log.append(("a.grad", None, val(a.grad)))
    log.append(("b.grad", None, val(b.grad)))


@scenario
def s3_posthook_wrong_length(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: (gi[0],))
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s3_prehook_wrong_length(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s3_prehook_bare_tensor(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y = a * b
    y.grad_fn.register_prehook(lambda go: go[0])
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s3_multiple_node_hooks_order(T, log):
    x = X(T)
    y = x * 2
    gf = y.grad_fn
    gf.register_hook(lambda gi, go: log.append(("posthook", "post1", val(gi))))
    gf.register_prehook(lambda go: log.append(("prehook", "pre1", val(go))))
    gf.register_hook(lambda gi, go: log.append(("posthook", "post2", val(gi))))
    gf.register_prehook(lambda go: log.append(("prehook", "pre2", val(go))))
    y.sum().backward()


@scenario
def s3_posthook_none_for_inputs_not_needing_grad(T, log):
    a = X(T)
    b = T.tensor([3.0, 4.0], requires_grad=True)
    y2 = a * 2
    y2.grad_fn.register_hook(lambda gi, go: log.append(("posthook", "a*2", val(gi))))
    y2.sum().backward()
    y = a * b
    y.grad_fn.register_hook(lambda gi, go: log.append(("posthook", "a*b grad wrt a", val(gi))))
    res = T.autograd.grad(y.sum(), [a])
    log.append(("grad result", None, val(res)))


@scenario
def s3_accumulate_grad_hooks(T, log):
    x = X(T)
    y = x * 2
    ag = y.grad_fn.next_functions[0][0]
    ag.register_prehook(
        lambda go: log.append(("prehook", "AccumulateGrad", [val(go), val(x.grad)]))
    )
    ag.register_hook(
        lambda gi, go: log.append(("posthook", "AccumulateGrad", [val(gi), val(go), val(x.grad)]))
    )
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s3_accumulate_grad_prehook_replaces(T, log):
    x = X(T)
    ag = (x * 2).grad_fn.next_functions[0][0]
    ag.register_prehook(lambda go: (go[0] * 10,))
    (x * 2).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s3_node_hook_handles(T, log):
    x = X(T)
    y = x * 2
    h1 = y.grad_fn.register_prehook(lambda go: log.append(("prehook", "removed", None)))
    h2 = y.grad_fn.register_hook(lambda gi, go: log.append(("posthook", "removed", None)))
    y.grad_fn.register_hook(lambda gi, go: log.append(("posthook", "kept", val(gi))))
    log.append(
        (
            "types",
            None,
            [type(h1).__name__, type(h2).__name__, isinstance(h1, T.utils.hooks.RemovableHandle)],
        )
    )
    h1.remove()
    h2.remove()
    h2.remove()
    y.sum().backward()


# ==================================================================== §4 full order


@scenario
def s4_full_hook_order(T, log):
    x = X(T)
    y = x * 2
    z = y * 3
    ag = y.grad_fn.next_functions[0][0]

    def L(name, *vals):
        log.append(("order", name, [val(v) for v in vals]))

    # y: node posthook#1, node prehook#1, tensor hook#1, retain_grad, tensor hook#2, node prehook#2
    y.grad_fn.register_hook(lambda gi, go: L("y.grad_fn posthook#1", gi, go, y.grad))
    y.grad_fn.register_prehook(lambda go: L("y.grad_fn prehook#1", go, y.grad))
    y.register_hook(lambda g: L("y tensor hook#1", g, y.grad))
    y.retain_grad()
    y.register_hook(lambda g: L("y tensor hook#2", g, y.grad))
    y.grad_fn.register_prehook(lambda go: L("y.grad_fn prehook#2", go, y.grad))
    # x: post-acc hook, tensor hook#1, AccumulateGrad posthook, AccumulateGrad prehook, tensor
    # hook#2
    x.register_post_accumulate_grad_hook(lambda t: L("x post-accumulate hook", t.grad))
    x.register_hook(lambda g: L("x tensor hook#1", g, x.grad))
    ag.register_hook(lambda gi, go: L("x AccumulateGrad posthook", gi, go, x.grad))
    ag.register_prehook(lambda go: L("x AccumulateGrad prehook", go, x.grad))
    x.register_hook(lambda g: L("x tensor hook#2", g, x.grad))
    # z: node prehook, node posthook, tensor hook
    z.grad_fn.register_prehook(lambda go: L("z.grad_fn prehook", go, y.grad))
    z.grad_fn.register_hook(lambda gi, go: L("z.grad_fn posthook", gi, go, y.grad))
    z.register_hook(lambda g: L("z tensor hook", g))
    z.sum().backward()
    log.append(("y.grad", None, val(y.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s4_unbind_multi_output_hooks(T, log):
    x = X(T)
    try:
        a, b = (x * 1).unbind()
        b.register_hook(rec(log, "b tensor hook"))
        a.register_hook(rec(log, "a tensor hook"))
        a.grad_fn.register_prehook(lambda go: log.append(("prehook", "UnbindBackward0", val(go))))
        log.append(("same node", None, [a.grad_fn is b.grad_fn, a.grad_fn.name()]))
        (a * 2 + b * 3).backward()
        log.append(("x.grad", None, val(x.grad)))
    except Exception as e:
        err(log, e)


@scenario
def s4_unbind_multi_output_hook_replaces_own_slot(T, log):
    x = X(T)
    try:
        a, b = (x * 1).unbind()
        b.register_hook(rec(log, "b tensor hook *10", ret=lambda g: g * 10))
        a.grad_fn.register_prehook(lambda go: log.append(("prehook", "UnbindBackward0", val(go))))
        a.grad_fn.register_hook(
            lambda gi, go: log.append(("posthook", "UnbindBackward0", [val(gi), val(go)]))
        )
        (a * 2 + b * 3).backward()
        log.append(("x.grad", None, val(x.grad)))
    except Exception as e:
        err(log, e)


@scenario
def s4_unbind_one_output_unused(T, log):
    x = X(T)
    try:
        a, b = (x * 1).unbind()
        a.grad_fn.register_prehook(lambda go: log.append(("prehook", "UnbindBackward0", val(go))))
        (b * 3).backward()
        log.append(("x.grad", None, val(x.grad)))
    except Exception as e:
        err(log, e)


# ============================================================ §6 in-place ops, version counters


def _bump(log, t, name, op):
    before = t._version
    try:
        op()
        log.append(("bump", name, t._version - before))
    except Exception as e:
        err(log, e, name="error in " + name)


@scenario
def s6_version_basic_sequence(T, log):
    t = T.zeros(3)
    log.append(("initial", None, t._version))

    def setitem():
        t[0] = 5.0

    def iadd():
        nonlocal t
        t += 1

    _bump(log, t, "add_", lambda: t.add_(1))
    _bump(log, t, "mul_", lambda: t.mul_(2))
    _bump(log, t, "setitem", setitem)
    _bump(log, t, "zero_", lambda: t.zero_())
    _bump(log, t, "copy_", lambda: t.copy_(T.ones(3)))
    _bump(log, t, "fill_", lambda: t.fill_(2.0))
    _bump(log, t, "+=", iadd)
    log.append(("final", None, [t._version, val(t)]))


@scenario
def s6_version_out_argument(T, log):
    t = T.zeros(3)
    _bump(log, t, "add(t,1,out=t)", lambda: T.add(t, 1, out=t))
    o = T.zeros(3)
    log.append(("fresh out before", None, o._version))
    try:
        T.add(t, 1, out=o)
        log.append(("fresh out after", None, [o._version, val(o)]))
    except Exception as e:
        err(log, e)


@scenario
def s6_version_nn_init(T, log):
    t = T.zeros(3)
    _bump(log, t, "nn.init.normal_", lambda: T.nn.init.normal_(t))


@scenario
def s6_version_compound_and_no_bump(T, log):
    t = T.zeros(3)

    def slice_iadd():
        t[0:2] += 1

    _bump(log, t, "t[0:2] += 1", slice_iadd)
    _bump(log, t, "add_(1).mul_(2)", lambda: t.add_(1).mul_(2))
    _bump(log, t, "t + 1", lambda: t + 1)
    _bump(log, t, "t.exp()", lambda: t.exp())
    _bump(log, t, "requires_grad_()", lambda: t.requires_grad_())
    _bump(log, t, "t.data.add_(1)", lambda: t.data.add_(1))
    log.append(("t", None, val(t)))


@scenario
def s6_version_grad_accumulation(T, log):
    x = X(T)
    (x * 2).sum().backward()
    g = x.grad
    log.append(("grad version 1st", None, g._version))
    (x * 2).sum().backward()
    log.append(("grad version 2nd", None, [g._version, x.grad is g, val(x.grad)]))
    log.append(("x version", None, x._version))


@scenario
def s6_version_views_detach_clone_data(T, log):
    b = T.zeros(4)
    v = b[1:3]
    log.append(("view initial", None, [b._version, v._version]))
    v.add_(1)
    log.append(("after view add_", None, [b._version, v._version]))
    b.mul_(2)
    log.append(("after base mul_", None, [b._version, v._version]))
    d = b.detach()
    d.add_(1)
    log.append(("after detach add_", None, [b._version, d._version, v._version]))
    c = b.clone()
    log.append(("clone", None, c._version))
    c.add_(1)
    log.append(("clone add_ leaves base", None, [b._version, c._version]))
    data = b.data
    data.add_(1)
    log.append(("after .data add_", None, [b._version, data._version]))
    w = b[0:1]
    log.append(("view created later", None, w._version))
    vv = b.view(2, 2)
    vv.zero_()
    log.append(("after view(2,2).zero_", None, [b._version, v._version, w._version, vv._version]))
    log.append(("b", None, val(b)))


@scenario
def s6_saved_output_modified_exp(T, log):
    x = X(T)
    y = x.exp()
    y.add_(1)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_output_modified_twice(T, log):
    x = X(T)
    y = x.exp()
    y.add_(1)
    y.add_(1)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_output_sigmoid_relu(T, log):
    for name in ("sigmoid", "relu"):
        x = X(T)
        y = getattr(x, name)()
        y.mul_(2)
        try:
            y.sum().backward()
            log.append(("no error", name, None))
        except Exception as e:
            err(log, e)


def _mm_case(T, log, modify):
    a = T.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    h = a.mm(a)
    z = h.sin()
    modify(h)
    try:
        z.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_input_modified_add(T, log):
    _mm_case(T, log, lambda h: h.add_(1))


@scenario
def s6_saved_input_modified_mul(T, log):
    _mm_case(T, log, lambda h: h.mul_(2))


@scenario
def s6_saved_input_modified_setitem(T, log):
    def m(h):
        h[0] = 0.0

    _mm_case(T, log, m)


@scenario
def s6_saved_leaf_modified_under_no_grad(T, log):
    x = X(T)
    y = x.sin()
    with T.no_grad():
        x.add_(1)
    log.append(("x version", None, x._version))
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_modified_via_detach_alias(T, log):
    x = X(T)
    y = x.exp()
    y.detach().add_(1)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_modified_under_no_grad(T, log):
    x = X(T)
    y = x.exp()
    with T.no_grad():
        y.add_(1)
    try:
        y.sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_saved_modified_via_data_no_error(T, log):
    x = T.tensor([0.0, 0.0], requires_grad=True)
    y = x.exp()
    y.data.add_(1)
    try:
        y.sum().backward()
        log.append(("x.grad (silently wrong)", None, val(x.grad)))
    except Exception as e:
        err(log, e)


@scenario
def s6_ops_that_do_not_save_do_not_error(T, log):
    x = X(T)
    y = x * 1
    z = y + 2
    y.add_(1)
    try:
        z.sum().backward()
        log.append(("x.grad", "y+2", val(x.grad)))
    except Exception as e:
        err(log, e)
    a = T.tensor([[1.0, 0.0], [0.0, 1.0]], requires_grad=True)
    h = a @ a
    s = h.sigmoid()
    h.add_(1)
    try:
        s.sum().backward()
        log.append(("a.grad", "sigmoid", val(a.grad)))
    except Exception as e:
        err(log, e)


@scenario
def s6_leaf_inplace_errors(T, log):
    def attempt(name, fn):
        x = X(T)
        try:
            fn(x)
            log.append(("no error", name, None))
        except Exception as e:
            err(log, e)
        log.append(("version", name, x._version))

    def setitem(x):
        x[0] = 5.0

    attempt("add_", lambda x: x.add_(1))
    attempt("zero_", lambda x: x.zero_())
    attempt("setitem", setitem)
    attempt("slice add_", lambda x: x[0:1].add_(1))
    attempt("view mul_", lambda x: x.view(2).mul_(2))


@scenario
def s6_leaf_out_argument_errors(T, log):
    x = X(T)
    try:
        T.add(x, 1, out=x)
        log.append(("no error", "add", None))
    except Exception as e:
        err(log, e)
    x = X(T)
    try:
        T.exp(x, out=T.zeros(2))
        log.append(("no error", "exp", None))
    except Exception as e:
        err(log, e)


@scenario
def s6_leaf_inplace_under_no_grad_allowed(T, log):
    x = X(T)
    with T.no_grad():
        x.add_(1)
        x.mul_(2)
    log.append(("x", None, val(x)))
    log.append(("flags", None, [x.is_leaf, x.grad_fn is None, x.requires_grad, x._version]))
    (x * 1).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s6_no_grad_view_modified_with_grad(T, log):
    x = X(T)
    with T.no_grad():
        v = x[0:1]
    log.append(("view flags", None, [v.requires_grad, v.grad_fn is None]))
    try:
        v.mul_(2)
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)


@scenario
def s6_inplace_on_view_of_nonleaf(T, log):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[1:]
    v.mul_(10)
    log.append(("y.grad_fn", None, [type(y.grad_fn).__name__, y.grad_fn.name()]))
    log.append(("v.grad_fn", None, [type(v.grad_fn).__name__, v.grad_fn.name()]))
    log.append(("values", None, [val(y), val(v)]))
    log.append(("versions", None, [y._version, v._version]))
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s6_inplace_on_view_of_nonleaf_backward_through_view(T, log):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    v = y[1:]
    v.mul_(10)
    (v * 2).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s6_inplace_grad_fn_names(T, log):
    def name_of(label, fn):
        x = X(T)
        y = x * 1
        try:
            out = fn(y)
            gf = y.grad_fn
            log.append(("grad_fn", label, [type(gf).__name__, gf.name(), out is y]))
        except Exception as e:
            err(log, e)

    def setitem(y):
        y[0] = 0.0
        return y

    name_of("add_", lambda y: y.add_(1))
    name_of("mul_", lambda y: y.mul_(2))
    name_of("exp_", lambda y: y.exp_())
    name_of("setitem", setitem)
    name_of("zero_", lambda y: y.zero_())
    name_of("copy_", lambda y: y.copy_(T.ones(2)))


@scenario
def s6_inplace_with_requires_grad_operand(T, log):
    x = X(T)
    t = T.zeros(2)
    t.add_(x)
    log.append(("t", None, [t.requires_grad, t.is_leaf, t.grad_fn.name(), t._version]))
    (t * 3).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s6_inplace_grads_through_chain(T, log):
    x = X(T)
    y = x * 2
    y.add_(1)
    y.mul_(3)
    y.sum().backward()
    log.append(("y", None, val(y)))
    log.append(("x.grad", None, val(x.grad)))


# ---------------------------------------------------------------------- saved_tensors_hooks


@scenario
def s6_saved_tensors_hooks_pack_unpack(T, log):
    x = T.tensor([0.0, 0.0], requires_grad=True)  # exact values: sin 0, exp 1, cos 1

    def pack(t):
        log.append(("pack", None, val(t)))
        return ("packed", t)

    def unpack(p):
        log.append(("unpack", p[0], val(p[1])))
        return p[1]

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x.sin()  # saves x
        z = y.exp()  # saves its output
    log.append(("forward done", None, None))
    z.sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s6_saved_tensors_hooks_mul_sets(T, log):
    x = X(T)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    packed, unpacked = [], []

    def pack(t):
        packed.append(val(t))
        return t

    def unpack(t):
        unpacked.append(val(t))
        return t

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * w
    log.append(("packed", None, sorted(packed)))
    y.sum().backward()
    log.append(("unpacked", None, sorted(unpacked)))
    log.append(("grads", None, [val(x.grad), val(w.grad)]))


@scenario
def s6_saved_tensors_hooks_transform(T, log):
    x = X(T)

    def pack(t):
        return t.tolist()

    def unpack(lst):
        log.append(("unpack", None, val(lst)))
        return T.tensor(lst) * 10

    with T.autograd.graph.saved_tensors_hooks(pack, unpack):
        y = x * x
    y.sum().backward()
    log.append(("x.grad", None, val(x.grad)))
    # outside the context nothing is hooked
    (x * x).sum().backward()
    log.append(("x.grad after unhooked", None, val(x.grad)))


@scenario
def s6_saved_tensors_hooks_skip_version_check(T, log):
    x = T.tensor([0.0, 0.0], requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        y = x.exp()
    y.add_(1)
    try:
        y.sum().backward()
        log.append(("x.grad", None, val(x.grad)))
    except Exception as e:
        err(log, e)


# =================================================================== §10 anomaly detection


def _warn_summary(w, first_line_only=True):
    # UserWarnings only (anomaly mode's warnings); stray numeric RuntimeWarnings are checked
    # separately by s10_no_numeric_runtime_warnings
    out = []
    for item in w:
        if not issubclass(item.category, UserWarning):
            continue
        msg = str(item.message)
        out.append([item.category.__name__, msg.split("\n")[0] if first_line_only else msg])
    return out


@scenario
def s10_anomaly_defaults_and_enable_warning(T, log):
    log.append(("defaults", None, [T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()]))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            log.append(("inside", None, [T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()]))
    log.append(("warnings", None, _warn_summary(w, first_line_only=False)))
    log.append(("after", None, [T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()]))
    T.autograd.set_detect_anomaly(True, check_nan=False)
    log.append(
        (
            "set(True, check_nan=False)",
            None,
            [T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()],
        )
    )
    T.autograd.set_detect_anomaly(False)
    log.append(("set(False)", None, [T.is_anomaly_enabled(), T.is_anomaly_check_nan_enabled()]))


@scenario
def s10_anomaly_nan_log(T, log):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            y = T.log(x)  # -inf
            try:
                (y * 0).sum().backward()
                log.append(("no error", None, None))
            except Exception as e:
                err(log, e)
    for item in w:
        msg = str(item.message)
        first = msg.split("\n")[0]
        if first.startswith("Anomaly Detection") or not issubclass(item.category, UserWarning):
            continue
        log.append(
            (
                "warning",
                item.category.__name__,
                [first, msg.startswith("Error detected in LogBackward0"), "y = T.log(x)" in msg],
            )
        )
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s10_anomaly_nan_div_1th_output(T, log):
    a = T.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            try:
                (a / a).sum().backward()
                log.append(("no error", None, None))
            except Exception as e:
                err(log, e)
    log.append(
        (
            "warnings",
            None,
            [s for s in _warn_summary(w) if not s[1].startswith("Anomaly Detection")],
        )
    )


@scenario
def s10_anomaly_check_nan_false(T, log):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with T.autograd.detect_anomaly(check_nan=False):
        try:
            (T.log(x) * 0).sum().backward()
            log.append(("x.grad", None, val(x.grad)))
        except Exception as e:
            err(log, e)


@scenario
def s10_set_detect_anomaly_check_nan_false(T, log):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    T.autograd.set_detect_anomaly(True, check_nan=False)
    try:
        (T.log(x) * 0).sum().backward()
        log.append(("x.grad", None, val(x.grad)))
    except Exception as e:
        err(log, e)
    finally:
        T.autograd.set_detect_anomaly(False)
    x2 = T.tensor([0.0, 1.0], requires_grad=True)
    T.autograd.set_detect_anomaly(True)
    try:
        (T.log(x2) * 0).sum().backward()
        log.append(("no error", None, None))
    except Exception as e:
        err(log, e)
    finally:
        T.autograd.set_detect_anomaly(False)


@scenario
def s10_anomaly_inf_not_flagged_and_forward_nan_not_checked(T, log):
    with T.autograd.detect_anomaly():
        x = T.tensor([0.0], requires_grad=True)
        try:
            T.log(x).sum().backward()
            log.append(("x.grad", "log at 0", val(x.grad)))
        except Exception as e:
            err(log, e)
        u = T.tensor([-1.0], requires_grad=True)
        try:
            f = T.log(u)
            log.append(("forward", "log(-1)", val(f)))
            f.sum().backward()
            log.append(("u.grad", None, val(u.grad)))
        except Exception as e:
            err(log, e)


@scenario
def s10_anomaly_without_mode_no_nan_error(T, log):
    x = T.tensor([0.0, 1.0], requires_grad=True)
    (T.log(x) * 0).sum().backward()
    log.append(("x.grad", None, val(x.grad)))


@scenario
def s10_no_numeric_runtime_warnings(T, log):
    # torch emits no warning for log(0) = -inf, 0 * inf = nan, 0/0 in forward or backward
    x = T.tensor([0.0, 1.0], requires_grad=True)
    a = T.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        (T.log(x) * 0).sum().backward()
        (a / a).sum().backward()
    log.append(("warnings", None, [[item.category.__name__, str(item.message)] for item in w]))
    log.append(("grads", None, [val(x.grad), val(a.grad)]))


@scenario
def s10_anomaly_custom_function_nan(T, log):
    class F(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")

    x = X(T)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            try:
                F.apply(x).sum().backward()
                log.append(("no error", None, None))
            except Exception as e:
                err(log, e)
    log.append(
        (
            "warnings",
            None,
            [s for s in _warn_summary(w) if not s[1].startswith("Anomaly Detection")],
        )
    )


@scenario
def s10_anomaly_inplace_error_hint(T, log):
    x = X(T)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with T.autograd.detect_anomaly():
            y = x.exp()
            y.add_(1)
            try:
                y.sum().backward()
                log.append(("no error", None, None))
            except Exception as e:
                err(log, e)
    log.append(
        (
            "warnings",
            None,
            [s for s in _warn_summary(w) if not s[1].startswith("Anomaly Detection")],
        )
    )


@scenario
def s10_anomaly_hook_sees_nan_grad_then_error(T, log):
    # a tensor hook runs before the node whose output is checked
    x = T.tensor([0.0, 1.0], requires_grad=True)
    with T.autograd.detect_anomaly():
        y = T.log(x)
        y.register_hook(rec(log, "y"))
        try:
            (y * 0).sum().backward()
            log.append(("no error", None, None))
        except Exception as e:
            err(log, e)
    log.append(("x.grad", None, val(x.grad)))


# ========================================================================= seed scenarios


@scenario
def seed_log_gradient_norms(T, log):
    w = T.tensor([3.0, 4.0], requires_grad=True)
    x = T.tensor([1.0, 2.0], requires_grad=True)
    h = x * w
    w.register_hook(lambda g: log.append(("norm", "w", val(g.norm().item()))))
    h.register_hook(lambda g: log.append(("norm", "h", val(g.norm().item()))))
    (h * 2).sum().backward()
    log.append(("w.grad", None, val(w.grad)))
    log.append(("x.grad", None, val(x.grad)))


@scenario
def seed_clip_gradient_with_clamp(T, log):
    x = T.tensor([1.0, 2.0, -3.0], requires_grad=True)
    x.register_hook(rec(log, "clip x", ret=lambda g: g.clamp(-1, 1)))
    (x * T.tensor([2.0, -0.5, -5.0])).sum().backward()
    log.append(("x.grad", None, val(x.grad)))
    z = T.tensor([1.0, 2.0], requires_grad=True)
    y = z * 4
    y.register_hook(rec(log, "clip y", ret=lambda g: g.clamp(min=-2.0, max=2.0)))
    (y * T.tensor([3.0, -0.25])).sum().backward()
    log.append(("z.grad", None, val(z.grad)))


@scenario
def seed_scale_by_captured_tensor_values(T, log):
    w = T.tensor([1.0, 4.0], requires_grad=True)
    # factor chosen from w's values at hook time, captured by the lambda
    w.register_hook(rec(log, "scale", ret=lambda g: g * (0.5 if w.max().item() > 3 else 2.0)))
    (w * 3).sum().backward()
    log.append(("w.grad 1", None, val(w.grad)))
    with T.no_grad():
        w.mul_(0.5)  # now max is 2: the same lambda picks the other factor
    (w * 3).sum().backward()
    log.append(("w.grad 2", None, val(w.grad)))
    # tensor-valued factor: divide by the captured tensor's current values
    v = T.tensor([2.0, 4.0], requires_grad=True)
    y = v * 1
    y.register_hook(rec(log, "divide by v", ret=lambda g: g / v.detach()))
    (y * 8).sum().backward()
    log.append(("v.grad", None, val(v.grad)))
