"""Fusion: chains of pointwise ops in a captured program become one generated Numba kernel.

A *region* is a set of recorded pointwise-op events (float32/float64, every tensor operand of
the result's dtype and device) joined through *internal* values: values produced in the region
whose every use is another event of the region, and that nothing else sees (no hook, read,
call, or the function's result).  Each region has one result.  Its forward is one ufunc built
from the registry's formula strings, one statement per op (``kernels/build.py:fused_kernel``),
so memory is read and written once; its backward is one ufunc per input needing a gradient,
which recomputes the forward statements and accumulates ``g * partial`` through them in
reverse, from the registry's partial strings.  The replay records one node for the region,
``CompiledFunctionBackward`` (torch.compile's name), saving the region's inputs with their
versions, so in-place errors stay errors.

NOTE [fused regions on CUDA]: a region of CUDA tensors is the same statements compiled by the
CUDA elementwise generator (kernels/cuda/elementwise.py: one device function, grid-stride
kernels that read strided and broadcast operands where they lie), forward and per-input
backward: one launch each instead of one per op.  The CPU-only parts: the closing whole-tensor
sum (on CUDA it stays its own op), the loop and parallel kernels.

NOTE [hooks are breakpoints]: a value a hook is registered on (tensor hook, retain_grad, node
hook) is never internal, so every hook sees the tensor and gradient eager mode gives it; the
backward between breakpoints is fused.
"""

import ast
import math
import os

import numba
import numpy as np

from .._devarray import DeviceArray
from .._tensor import Tensor
from ..grad_mode import STATE
from ..kernels.build import (
    cpu_loop,
    cpu_loop_parallel,
    cpu_sum,
    cpu_sum_parallel,
    fused_kernel,
)
from ..kernels.cpu.reduce import sum_fwd_cpu
from ..ops import dispatch
from ..ops.formula import partials_of
from ..ops.registry import result
from .capture import Event, Ref, refs, resolve

_FNS = (dispatch.binary, dispatch.unary, dispatch.pointwise)
_FLOATS = ("float32", "float64")


def _operands(ev):
    """``(op, [operand], attrs)`` of a pointwise-op event, or None when it is something else."""
    if ev.kind != "op" or ev.fn not in _FNS or ev.kwargs:
        return None
    a = ev.args
    if ev.fn is dispatch.binary:
        op, operands, attrs = a[0], [a[1], a[2]], ()
    elif ev.fn is dispatch.unary:
        op, operands, attrs = a[0], [a[1]], tuple(a[2]) if len(a) > 2 else ()
    else:
        if len(a) > 3 and a[3]:  # contiguous=True (masked_fill): a layout request
            return None
        op, operands, attrs = a[0], list(a[1]), tuple(a[2]) if len(a) > 2 else ()
    if op.kind != "pointwise" or op.bool_args or op.formula is None:
        return None
    return op, operands, attrs


def fusible(ev, vals):
    """Whether a recorded event can join a region (``vals``: the capture's tensors by index)."""
    got = _operands(ev)
    if got is None or ev.mutates or not isinstance(ev.outs, Ref):
        return False
    op, operands, attrs = got
    out = vals[ev.outs.i]
    dt = out._dtype.name
    kind = type(out._data)  # NOTE [fused regions on CUDA]: a numpy array or a DeviceArray
    if dt not in _FLOATS or (kind is not np.ndarray and kind is not DeviceArray):
        return False
    if len(operands) != len(op.args) or len(attrs) != len(op.attrs):
        return False
    for a in operands:
        if isinstance(a, (Ref, Tensor)):  # a value, or a constant (a parameter, a closure)
            t = vals[a.i] if isinstance(a, Ref) else a
            if not isinstance(t, Tensor):  # a value read into Python (it may change)
                return False
            if t._dtype.name != dt or type(t._data) is not kind:  # (a CPU 0-d operand)
                return False
        elif type(a) not in (int, float):  # a bool/complex scalar
            return False
    return all(type(v) in (int, float) for v in attrs)


def _num(v):
    """A Python number as kernel source: ``nan``/``inf`` as numpy's names (a bare ``nan`` is
    no name in the generated module)."""
    f = float(v)
    if f != f:
        return "np.nan"
    if f in (float("inf"), float("-inf")):
        return "np.inf" if f > 0 else "(-np.inf)"
    return repr(f)


def _key(a):
    """The identity of an operand: a value index, or ``('c', id)`` for a constant tensor."""
    return a.i if isinstance(a, Ref) else ("c", id(a))


class Region:
    """A fused region: ``events`` (in program order), ``inputs`` (operand keys, see ``_key``),
    ``out`` (a value index)."""

    def __init__(self, events, inputs, out, dtype, needs, share=True, cuda=False):
        self.events = events  # all of them, for explain() and the create_graph path
        self.cuda = cuda
        self.inputs = inputs
        self.out = out
        self.dtype = dtype
        self.needs = needs  # per input: whether its gradient is computed
        # NOTE [reduction at the end of a region]: a region may end in a whole-tensor sum of
        # its pointwise result; the forward then sums f over the elements without writing
        # them (``kr``), and the backward is the pointwise one with the 0-d gradient
        # broadcast (sum's derivative), so only the pointwise events make statements
        self.reduce = _full_sum(events[-1])
        self.body = events[:-1] if self.reduce else events
        self.body_out = events[-1].args[0].i if self.reduce else out
        params = ["p%d" % k for k in range(len(inputs))]
        name = {v: p for v, p in zip(inputs, params)}
        self.fwd_stmts = []
        for n, ev in enumerate(self.body):
            op, operands, attrs = _operands(ev)
            env = {}
            for argname, a in zip(op.args, operands):
                env[argname] = name[_key(a)] if type(a) not in (int, float) else _num(a)
            for attr, v in zip(op.attrs, attrs):
                env[attr] = _num(v) if type(v) is float else repr(v)
            tname = "t%d" % n
            self.fwd_stmts.append((tname, _subst(op.formula, env)))
            name[ev.outs.i] = tname
        self.params = params
        tag = "fused_" + "_".join(_opname(ev) for ev in events[:6])
        self.fwd, self.fwd_src = self._kernel(tag, params, self.fwd_stmts, self.reduce)
        self.bwd, self.bwd_src, self.bwd_stmts = [], [], []
        # NOTE [one kernel per distinct gradient]: inputs whose gradients are the same
        # expression (``relu(h + b)``: h's and b's, before b's is reduced to its shape) share
        # one kernel and one result array, as PyTorch's AddBackward passes one grad to both.
        # Not when a hook could see an input's gradient (``share`` False): eager mode may
        # give the two inputs separate arrays (``a * 1.0 + b * 1.0``), and a hook writing
        # one in place must not change the other.
        self.same_as = [None] * len(inputs)
        made = {}  # resolved gradient name -> the first input that computes it
        for k in range(len(inputs)):
            kern = src = stmts = None
            if needs[k]:
                stmts = self._backward_stmts(name, k)
                target = _resolve_alias(stmts) if share else k
                if target in made:
                    self.same_as[k] = made[target]
                else:
                    made[target] = k
                    kern, src = self._kernel(tag + "_bwd%d" % k, ["g"] + params, stmts)
            self.bwd.append(kern)
            self.bwd_src.append(src)
            self.bwd_stmts.append(stmts if kern is not None else None)
        self.nodename = "CompiledFunctionBackward"

    def _kernel(self, tag, params, stmts, whole_sum=False):
        """``(kernel, source)`` of one fused function: the CPU ufunc (with its loop and sum
        kernels), or on CUDA the plan ``_exec`` hands to the elementwise kernels (compiled
        there on first use; the source is shown for operands that are all device arrays,
        what a region's inputs and gradient always are)."""
        if not self.cuda:
            return fused_kernel(tag, params, stmts, self.dtype, whole_sum)
        from ..kernels.cuda import elementwise  # lazy: numba.cuda (the first CUDA op loaded it)

        plan = (tag + "_cuda", tuple(params), tuple(stmts))
        return plan, elementwise.fused_source(plan[1], plan[2], self.dtype)

    def _exec(self, kern, arrays):
        """Run a kernel of ``_kernel`` on the operands (arrays of the region's device)."""
        if not self.cuda:
            return _call(kern, arrays)
        from ..kernels.cuda import elementwise  # lazy: numba.cuda, as above

        return elementwise.run(kern[0], kern[1], kern[2], self.dtype, arrays)

    def _backward_stmts(self, name, k):
        """Forward statements, then reverse accumulation of ``g`` to input ``k``."""
        stmts = list(self.fwd_stmts)
        grad = {self.body_out: "g"}  # value index -> the statement name of its gradient so far
        count = [0]

        def fresh():
            count[0] += 1
            return "b%d" % count[0]

        for n in range(len(self.body) - 1, -1, -1):
            ev = self.body[n]
            gname = grad.get(ev.outs.i)
            if gname is None:
                continue
            op, operands, attrs = _operands(ev)
            parts = partials_of(op)
            env = {"g": gname, "out": "t%d" % n}
            for argname, a in zip(op.args, operands):
                env[argname] = name[_key(a)] if type(a) not in (int, float) else _num(a)
            for attr, v in zip(op.attrs, attrs):
                env[attr] = _num(v) if type(v) is float else repr(v)
            for j, a in enumerate(operands):
                if type(a) in (int, float) or parts[j] is None:
                    continue
                term = _subst(parts[j].expr, env)
                b = fresh()
                prev = grad.get(_key(a))
                stmts.append((b, term if prev is None else "%s + (%s)" % (prev, term)))
                grad[_key(a)] = b
        target = grad.get(self.inputs[k])
        stmts.append(("r", target if target is not None else "g * 0.0"))
        return stmts

    def explain(self):
        lines = ["region %s -> v%d: %s" % (
            ", ".join("v%d" % i if type(i) is int else "const" for i in self.inputs), self.out,
            " -> ".join(_opname(ev) for ev in self.events))]  # fmt: skip
        lines.append(self.fwd_src)
        for s in self.bwd_src:
            if s is not None:
                lines.append(s)
        return "\n".join(lines)

    # -- replay ----------------------------------------------------------------------------
    def run(self, *tensors):
        arrays = [t._data for t in tensors]
        out = _sum(self.fwd, arrays) if self.reduce else self._exec(self.fwd, arrays)
        if not STATE.enabled or not any(t._requires_grad for t in tensors):
            return Tensor._make(out)
        saved = {"p%d" % k: t for k, t in enumerate(tensors)}
        return result(out, self.nodename, list(tensors), self._vjp, saved=saved, attrs=self)

    def _vjp(self, node, grads):
        g = grads[0]
        if STATE.enabled:  # create_graph: the same ops again, differentiably
            return self._vjp_graph(node, g)
        arrays = [node.array("p%d" % k) for k in range(len(self.inputs))]
        garr = g._data
        if garr.dtype != arrays[0].dtype and not self.cuda:  # (CUDA kernels cast on load)
            garr = garr.astype(arrays[0].dtype)
        outs = []

        done = {}
        for k, (edge, kern) in enumerate(zip(node.next_functions, self.bwd)):
            j = self.same_as[k]
            if edge[0] is None or (kern is None and j is None):
                outs.append(None)
                continue
            if j is not None:
                r = done.get(j)
                if r is None:
                    r = done[j] = self._exec(self.bwd[j], [garr] + arrays)
            else:
                r = done[k] = self._exec(kern, [garr] + arrays)
            outs.append(Tensor._make(r))
        return tuple(outs)

    def _vjp_graph(self, node, g):
        from ..autograd import grad as autograd_grad  # cycle: autograd imports ops

        ins = [node.unpack("p%d" % k) for k in range(len(self.inputs))]
        vals = {i: t for i, t in zip(self.inputs, ins) if type(i) is int}
        for ev in self.events:  # the recorded calls again (constants are themselves)
            vals[ev.outs.i] = ev.fn(*resolve(ev.args, vals))
        want = [t for t, e in zip(ins, node.next_functions) if e[0] is not None]
        got = iter(autograd_grad(vals[self.out], want, g, create_graph=True, allow_unused=True))
        return tuple(next(got) if e[0] is not None else None for e in node.next_functions)


def _resolve_alias(stmts):
    """The canonical name of ``r`` (the last statement) by value numbering: a statement whose
    right side, with names replaced by their canonical names, equals an earlier one's (or is
    just a name) is that earlier statement (``b2 = b1 * 1`` and ``b3 = b1 * 1``)."""
    canon, seen = {}, {}
    for name, rhs in stmts:
        key = _subst(rhs, canon)
        if key.isidentifier():
            canon[name] = key
        else:
            canon[name] = seen.setdefault(key, name)
    return canon[stmts[-1][0]]


def _flat(arrays, shape):
    """The operands as the loop kernels take them: each contiguous with ``shape`` (1-D) or one
    value broadcast (a scalar); None when one is neither."""
    flat = []
    for a in arrays:
        if a.shape == shape and a.flags.c_contiguous:
            flat.append(a.reshape(-1))
        elif a.size and not any(a.strides):  # one value broadcast (stride 0 everywhere)
            flat.append(a.reshape(-1)[0])
        else:
            return None
    return flat


PARALLEL_MIN = 1 << 20  # elements (NOTE [parallel fused kernels] in kernels/build.py)
_LAYER = [None]  # Numba's threading layer once started; "forked": a child forked after that


def _after_fork_in_child():
    """A child forked after the parent started Numba's threading layer (a parallel kernel,
    ``numba.set_num_threads``, ``numba.get_num_threads``) cannot run OpenMP: GNU OpenMP
    terminates it.  Such a child runs the plain loop kernels."""
    from numba.np.ufunc import parallel

    if parallel._is_initialized:
        _LAYER[0] = "forked"


if hasattr(os, "register_at_fork"):  # (POSIX)
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _parallel(n):
    """Whether a region of ``n`` elements runs its parallel kernel: a million elements or
    more, a thread-safe threading layer (workqueue aborts the process when two Python threads
    run parallel kernels, NUMBA-NOTES 3.2), and not in a child forked after its parent started
    the layer (``_after_fork_in_child``).  Not the thread count: with one thread
    (``numba.set_num_threads(1)``) the same kernel runs its chunks in turn, so a result does
    not depend on the thread count (NOTE [parallel fused kernels])."""
    if n < PARALLEL_MIN:
        return False
    layer = _LAYER[0]
    if layer is None:
        numba.get_num_threads()  # (starts the threading layer)
        layer = _LAYER[0] = numba.threading_layer()
    return layer != "workqueue" and layer != "forked"


def _call(kern, arrays):
    """``kern(*arrays)``, through its loop kernel when every operand is contiguous with the
    result's shape or a broadcast scalar (sum's gradient) and the work is large enough to pay
    for the checks (NOTE [loop kernels]: transcendentals vectorise there, not in the ufunc)."""
    a0 = arrays[0]
    if max([a.size for a in arrays]) >= 4096:  # (the gradient of a closing sum is 0-d)
        shape = np.broadcast_shapes(*[a.shape for a in arrays])
        flat = _flat(arrays, shape)
        if flat and any(type(f) is np.ndarray for f in flat):
            out = np.empty(shape, a0.dtype)
            loop = cpu_loop_parallel(kern) if _parallel(out.size) else cpu_loop(kern)
            loop(out.reshape(-1), *flat)
            return out
    r = kern(*arrays)
    return r if type(r) is np.ndarray else np.asarray(r)


def _sum(kern, arrays):
    """The 0-d sum of ``kern(*arrays)``: one pass that writes no elements when the operands
    suit the loop kernels, else the pointwise result summed as eager ``sum`` does."""
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    flat = _flat(arrays, shape)
    dtype = arrays[0].dtype
    if flat is not None:
        n = math.prod(shape)
        total = cpu_sum_parallel(kern) if _parallel(n) else cpu_sum(kern)
        return np.asarray(total(n, *flat), dtype)
    r = _call(kern, arrays)
    out = np.zeros((1, 1), dtype)
    if r.size:
        sum_fwd_cpu(np.ascontiguousarray(r).reshape(1, r.size, 1), out)
    return out.reshape(())


def _opname(ev):
    got = _operands(ev)
    return got[0].name if got is not None else ev.name


def _hooked(t):
    """Whether a hook may see ``t``'s gradient (its own, its node's or its leaf's)."""
    n = t._grad_fn
    return bool(t._hooks or t._post_acc_hooks) or (
        n is not None and (n._tensor_hooks or n._pre_hooks or n._post_hooks or n._retain)
    )


def _full_sum(ev):
    """Whether ``ev`` is ``x.sum()`` of a value (every element, no dtype): what a region may end
    in (NOTE [reduction at the end of a region])."""
    return (
        ev.kind == "op"
        and ev.name == "sum"
        and len(ev.args) == 1
        and not ev.kwargs
        and type(ev.args[0]) is Ref
        and type(ev.outs) is Ref
        and not ev.mutates
    )


class _Rename(ast.NodeTransformer):
    def __init__(self, env):
        self.env = env

    def visit_Name(self, node):
        r = self.env.get(node.id)
        if r is None:
            return node
        return ast.parse(r, mode="eval").body


def _subst(expr, env):
    tree = _Rename(env).visit(ast.parse(expr, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def fuse(cap, outputs_used):
    """Replace fusible chains in ``cap.events`` by 'fused' events.  ``outputs_used``: value
    indices the function's result holds.  Returns the new event list and the regions."""
    events = cap.events
    vals = cap.keep
    # a node hook sees its node's own gradients: that op stays an eager node
    ok = [fusible(ev, vals) and ev.outs.i not in cap.node_hooked for ev in events]
    producer = {ev.outs.i: n for n, ev in enumerate(events) if ok[n]}
    # a whole-tensor sum of a pointwise value may end that value's region (NOTE [reduction
    # at the end of a region]); nothing joins after it (its result is no producer here)
    ends = {
        n
        for n, ev in enumerate(events)
        if _full_sum(ev)
        and ev.args[0].i in producer
        and ev.outs.i not in cap.node_hooked
        and vals[ev.outs.i]._dtype is vals[ev.args[0].i]._dtype
        and type(vals[ev.args[0].i]._data) is np.ndarray  # (CUDA: the sum stays its own op)
    }
    uses = {}
    for n, ev in enumerate(events):
        for r in refs((ev.args, ev.kwargs)):
            uses.setdefault(r, []).append(n)
    # a region runs where its last event was: no call (an optimizer step, backward) or
    # in-place write may lie between two of its events, or an input could change under it
    impure = [0]
    for ev in events:
        impure.append(impure[-1] + (ev.kind == "call" or bool(ev.mutates)))
    internal = set()
    for v, n in producer.items():
        us = uses.get(v, [])
        if (
            us
            and v not in outputs_used
            and v not in cap.boundary
            and all((ok[u] or u in ends) and u > n for u in us)
            and len(set(us)) == len(us) == 1  # one consumer: one result per region
            and impure[us[0]] == impure[n + 1]  # nothing impure in between
            and events[us[0]].mode == events[n].mode  # one grad mode
        ):
            internal.add(v)
    # union events joined by internal values; each group is a region with one result
    group = list(range(len(events)))

    def find(a):
        while group[a] != a:
            group[a] = group[group[a]]
            a = group[a]
        return a

    for v in internal:
        a, b = find(producer[v]), find(uses[v][0])
        group[a] = b
    members = {}
    for n in range(len(events)):
        if ok[n] or (n in ends and events[n].args[0].i in internal):
            members.setdefault(find(n), []).append(n)
    out_events, regions = [], []
    placed = {}
    for root, ns in members.items():
        if len(ns) < 2:
            continue
        last = max(ns)
        evs = [events[n] for n in sorted(ns)]
        produced = {ev.outs.i for ev in evs}
        inputs, operands = [], []
        for ev in evs:
            got = _operands(ev)
            for a in got[1] if got is not None else ():  # (a closing sum reads the region)
                if type(a) in (int, float) or _key(a) in produced or _key(a) in inputs:
                    continue
                inputs.append(_key(a))
                operands.append(a)
        res = events[last].outs.i
        dtype = vals[res]._dtype.name
        needs = [(vals[a.i] if isinstance(a, Ref) else a)._requires_grad for a in operands]
        share = not any(
            _hooked(vals[a.i] if isinstance(a, Ref) else a)
            or (isinstance(a, Ref) and a.i in cap.boundary)
            for a in operands
        )
        cuda = type(vals[res]._data) is DeviceArray
        reg = Region(evs, inputs, res, dtype, needs, share, cuda)
        ev = Event("fused", "fused[%d]" % len(evs), reg.run, tuple(operands), None, Ref(res),
                   None)  # fmt: skip
        ev.region = reg
        ev.mode = events[last].mode
        placed[last] = ev
        for n in ns:
            placed.setdefault(n, None)
        regions.append(reg)
    for n, ev in enumerate(events):
        if n in placed:
            if placed[n] is not None:
                out_events.append(placed[n])
        else:
            out_events.append(ev)
    return out_events, regions


__all__ = ["Region", "fuse", "fusible"]
