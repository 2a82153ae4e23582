"""Builds compiled kernels from formula strings: generated-source modules, cached on disk.

A formula is a Python expression string over parameter names (an op's arguments ``x``, ``y``,
its result ``out``, scalar attributes ``p``, ``lo``, ...) and the vocabulary of kernels/vocab.py.
``cpu_kernel`` compiles it into a numpy ufunc (``numba.vectorize`` with explicit signatures:
broadcasting, strides and ``out=`` for free); ``cuda_kernel`` into a ``cuda.jit(device=True)``
function inside a grid-stride kernel.  Float literals become ``T(c)`` so float32 maths stays
float32 (NUMBA-NOTES section 0.3).  What the formulas mean is ops' business (ops/formula.py).

NOTE [generated kernel cache]: exec'd code cannot be disk-cached by Numba, so each kernel's
source is written to ``<cache dir>/nbgrad_gen/<name>_<hash of source>.py`` and imported;
``cache=True`` then makes later processes load it in milliseconds instead of compiling (~0.1 s
each).  The source's first line holds a hash of the vocabulary and its binding, because Numba's
cache only checks the generated file: an edited helper must make new modules, not stale hits.
"""

import ast
import copy
import functools
import hashlib
import importlib
import importlib.util
import os
import sys
import tempfile
import threading
import types

from .. import _config
from . import FASTMATH

_GEN_PKG = "nbgrad_gen"
_lock = threading.Lock()
_KERNELS = {}
_HERE = os.path.dirname(os.path.abspath(__file__))
_BINDING = {False: ("cpu", "scalar.py"), True: ("cuda", "scalar.py")}

NUMBA_TYPES = {
    "float32": "float32",
    "float64": "float64",
    "int64": "int64",
    "int32": "int32",
    "bool": "boolean",
    "complex64": "complex64",
    "complex128": "complex128",
    "uint8": "uint8",
    "int8": "int8",
    "int16": "int16",
}
NP_TYPES = {
    "float32": "np.float32",
    "float64": "np.float64",
    "int64": "np.int64",
    "int32": "np.int32",
    "bool": "np.bool_",
    "complex64": "np.complex64",
    "complex128": "np.complex128",
    "uint8": "np.uint8",
    "int8": "np.int8",
    "int16": "np.int16",
}


class _TypedConstants(ast.NodeTransformer):
    """Numeric literal ``c`` -> ``T(c)``; inside a comparison of a complex kernel ``R(c)``, the
    real type (complex numbers do not order: ``fabs(w) < 0.5`` compares reals)."""

    def __init__(self, real_in_compare=False):
        self.real_in_compare = real_in_compare
        self.name = "T"

    def visit_Compare(self, node):
        if not self.real_in_compare:
            return self.generic_visit(node)
        self.name = "R"
        try:
            return self.generic_visit(node)
        finally:
            self.name = "T"

    def visit_Call(self, node):  # a where() inside a comparison computes values again
        if self.name == "R" and isinstance(node.func, ast.Name) and node.func.id == "where":
            self.name = "T"
            try:
                return self.generic_visit(node)
            finally:
                self.name = "R"
        return self.generic_visit(node)

    def visit_Constant(self, node):
        if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return ast.Call(func=ast.Name(id=self.name, ctx=ast.Load()), args=[node], keywords=[])
        return node


def _is_zero(node):
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value == 0
    )


def _is_one(node):
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, (int, float))
        and not isinstance(node.value, bool)
        and node.value == 1
    )


def _is_where(node):
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "where"
        and len(node.args) == 3
    )


def _zero():
    return ast.Constant(0)


class _Select(ast.NodeTransformer):
    """NOTE [select, never multiply by a mask]: in a formula a ``where`` factor selects and a
    literal zero factor is a strong zero, so NaN/Inf in the other factor never leak through a
    branch that is not taken (PyTorch's backward formulas select, ``where(c, g, 0)``):

        u * where(c, a, b)  ->  where(c, u * a, u * b)     (also where(...) * u, where(...) / u)
        -where(c, a, b)     ->  where(c, -a, -b)
        u * 0, 0 * u, 0 / u ->  0                            u * 1, 1 * u -> u

    so ``g * (where(x > 0, 1, 0))`` compiles to ``where(x > 0, g, 0)`` and ``g * (0)`` to ``0``.
    Every binding (CPU, CUDA, the differentiable nbgrad ops of ops/formula.py) evaluates the
    rewritten expression, so they agree on NaN/Inf."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        left, right, op = node.left, node.right, node.op
        if isinstance(op, ast.Mult):
            if _is_zero(left) or _is_zero(right):
                return _zero()
            if _is_one(left):
                return right
            if _is_one(right):
                return left
            if _is_where(right):
                return self._into(right, lambda b: ast.BinOp(left, ast.Mult(), b))
            if _is_where(left):
                return self._into(left, lambda b: ast.BinOp(b, ast.Mult(), right))
        elif isinstance(op, ast.Div):
            if _is_zero(left):
                return _zero()
            if _is_where(left):
                return self._into(left, lambda b: ast.BinOp(b, ast.Div(), right))
        return node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.USub):
            if _is_zero(node.operand):
                return _zero()
            if _is_where(node.operand):
                return self._into(node.operand, lambda b: ast.UnaryOp(ast.USub(), b))
        return node

    def _into(self, where, wrap):
        c, a, b = where.args
        branches = [self.visit(wrap(copy.deepcopy(v))) for v in (a, b)]
        return ast.Call(func=where.func, args=[c] + branches, keywords=[])


@functools.lru_cache(maxsize=None)
def select_form(expr):
    """``expr`` with the select rewrite of NOTE [select, never multiply by a mask] applied."""
    tree = _Select().visit(ast.parse(expr, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def names_in(expr):
    """The names an expression string uses (parameters and vocabulary functions)."""
    return {n.id for n in ast.walk(ast.parse(expr, mode="eval")) if isinstance(n, ast.Name)}


def typed_expr(expr, complex_=False):
    """``expr`` with every numeric literal ``c`` written ``T(c)`` (``T``: the kernel dtype; in
    a comparison of a complex kernel ``R(c)``, its real type)."""
    tree = _TypedConstants(complex_).visit(ast.parse(expr, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


def kernel_source(params, expr, dtype, param_types, cuda=False):
    """Source of a module defining ``k`` (CPU ufunc) or ``f``/``k`` (CUDA device fn + kernel)."""
    cplx = dtype.startswith("complex")
    body = typed_expr(select_form(expr), cplx)
    sig_args = ", ".join(NUMBA_TYPES[param_types.get(p, dtype)] for p in params)
    plist = ", ".join(params)
    lines = [
        "# generated by nbgrad.kernels.build, vocabulary %s -- do not edit" % vocab_hash(cuda),
        "import numpy as np",
        "from nbgrad.kernels.%s.scalar import *" % _BINDING[cuda][0],
        "from numba import cuda" if cuda else "from numba import njit, vectorize",
        "T = %s" % NP_TYPES[dtype],
    ]
    if cplx:
        lines.append("R = %s" % NP_TYPES["float32" if dtype == "complex64" else "float64"])
    lines += [
        "",
    ]
    if not cuda:
        # The formula lives in an njit function inlined (Numba IR) into the ufunc and the loop
        # kernel (LLVM alone leaves a large one out of line, and the loop scalar); division by
        # zero keeps numpy's semantics in both (tests/test_elementwise.py).
        lines += _cpu_module(params, ["    return %s" % body], NUMBA_TYPES[dtype], sig_args)
    else:
        lines += [
            "@cuda.jit(device=True)",
            "def f(%s):" % plist,
            "    return %s" % body,
            "",
            "@cuda.jit",
            "def k(%s, out):" % ", ".join("a_" + p for p in params),
            "    for i in range(cuda.grid(1), out.shape[0], cuda.gridsize(1)):",
            "        out[i] = f(%s)" % ", ".join("a_%s[i]" % p for p in params),
            "",
        ]
    return "\n".join(lines)


def _njit(extra=""):
    """The decorator line of every generated CPU function: fast-math, numpy's error model,
    disk-cached; ``extra`` adds options (``", parallel=True"``)."""
    return "@njit(nogil=True, error_model='numpy', fastmath=set(%r), cache=%s%s)" % (
        sorted(FASTMATH), _config.USE_DISK_CACHE, extra)  # fmt: skip


def _blocks(params):
    """The operands of a loop-kernel call on the block ``b:b + m`` (``sl``: a scalar stays)."""
    return ", ".join("sl(%s, b, m)" % p for p in params)


def _cpu_module(params, body, ret_type, sig_args):
    """The CPU kernel functions: ``f`` (njit, ``body`` lines), the ufunc ``k`` and the loop
    kernel ``kl`` over it."""
    plist = ", ".join(params)
    return [
        _njit(", inline='always'"),
        "def f(%s):" % plist,
        *body,
        "",
        "@vectorize(['%s(%s)'], nopython=True, cache=%s, fastmath=%s)"
        % (ret_type, sig_args, _config.USE_DISK_CACHE, "set(%r)" % sorted(FASTMATH)),
        "def k(%s):" % plist,
        "    return f(%s)" % plist,
        "",
        # NOTE [loop kernels]: numba's ufunc loop does not vectorise a formula with
        # several inlined transcendentals (gelu's backward: 8x slower); this plain loop
        # over contiguous 1-D buffers (or scalars) does.  Compiled on first use only.
        "from nbgrad.kernels.cpu.vformula import at",
        "",
        _njit(),
        "def kl(out_, %s):" % plist,
        "    for i in range(out_.size):",
        "        out_[i] = f(%s)" % ", ".join("at(%s, i)" % p for p in params),
        "",
    ]


@functools.cache
def vocab_hash(cuda=False):
    """16 hex digits of sha1 over kernels/vocab.py and the CPU (or CUDA) binding's source (with
    kernels/cpu/vformula.py, which the CPU binding takes exp, tanh, sigmoid and erf from)."""
    h = hashlib.sha1()
    extra = () if cuda else (("cpu", "vformula.py"),)  # the CPU binding's exp/tanh/...
    for path in (("vocab.py",), _BINDING[cuda]) + extra:
        with open(os.path.join(_HERE, *path), "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]


def _gen_dir():
    """The folder of generated kernel sources (inside the cache folder), or None (in memory)."""
    if _config.CACHE_DIR is None:
        return None
    d = os.path.join(_config.CACHE_DIR, _GEN_PKG)
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def module_name(tag, source):
    """``<tag>_<sha1 of source>``: a changed formula or vocabulary is a new module."""
    return "%s_%s" % (tag, hashlib.sha1(source.encode()).hexdigest()[:16])


def load_module(tag, source):
    """Write ``source`` to the generated-kernel folder (atomically) and import it from there
    (no ``sys.path`` entry: the module is loaded from its file); in memory without a folder."""
    modname = module_name(tag, source)
    full = "%s.%s" % (_GEN_PKG, modname)
    mod = sys.modules.get(full)
    if mod is not None:
        return mod
    d = _gen_dir()
    if d is None:  # nothing writable: compile in memory, nothing cached
        mod = types.ModuleType(full)
        exec(compile(source, "<%s>" % full, "exec"), mod.__dict__)
    else:
        path = os.path.join(d, modname + ".py")
        if not os.path.exists(path):
            # a private temporary file per writer (processes and threads racing on the same
            # kernel each write their own), then an atomic rename: readers see whole files
            fd, tmp = tempfile.mkstemp(prefix=modname, suffix=".tmp", dir=d)
            with os.fdopen(fd, "w") as f:
                f.write(source)
            os.replace(tmp, path)
        spec = importlib.util.spec_from_file_location(full, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[full] = mod  # before running it: Numba's cache records the module by name
        spec.loader.exec_module(mod)
    sys.modules[full] = mod
    return mod


def cpu_kernel(tag, params, expr, dtype, param_types=None):
    """A numba ufunc computing ``expr`` elementwise; compiled once per (tag, dtype)."""
    key = (tag, expr, dtype, params)
    k = _KERNELS.get(key)
    if k is None:
        with _lock:
            k = _KERNELS.get(key)
            if k is None:
                src = kernel_source(params, expr, dtype, param_types or {})
                mod = load_module(_safe(tag), src)
                # call the compiled numpy ufunc directly: DUFunc.__call__ adds ~1.5 us
                k = _KERNELS[key] = getattr(mod.k, "ufunc", mod.k)
                _LOOPS[id(k)] = getattr(mod, "kl", None)
    return k


_LOOPS = {}  # id(ufunc from cpu_kernel) -> its loop kernel (the ufuncs live in _KERNELS)
_SUMS = {}  # id(ufunc from fused_kernel) -> its whole-sum kernel
_PAR_LOOPS = {}  # id(ufunc from fused_kernel) -> its parallel loop kernel
_PAR_SUMS = {}  # id(ufunc from fused_kernel) -> its parallel whole-sum kernel


def cpu_loop(k):
    """The loop kernel ``kl(out, *args)`` (NOTE [loop kernels]) of ufunc ``k`` from
    ``cpu_kernel``: ``out`` and the array arguments contiguous 1-D of one length, scalars
    of the kernel's dtype; None for a ufunc that did not come from ``cpu_kernel``."""
    return _LOOPS.get(id(k))


def cpu_sum(k):
    """The whole-sum kernel ``kr(n, *args)`` of a fused region's ufunc ``k`` (same argument
    rules as ``cpu_loop``; returns a float)."""
    return _SUMS[id(k)]


def cpu_loop_parallel(k):
    """The parallel loop kernel ``klp`` of a fused region's ufunc ``k`` (NOTE [parallel fused
    kernels]; arguments as ``cpu_loop``)."""
    return _PAR_LOOPS[id(k)]


def cpu_sum_parallel(k):
    """The parallel whole-sum kernel ``krp`` of a fused region's ufunc ``k``."""
    return _PAR_SUMS[id(k)]


def cuda_kernel(tag, params, expr, dtype, param_types=None):
    """A grid-stride ``numba.cuda`` kernel ``k(*inputs, out)`` over 1-D buffers."""
    key = ("cuda", tag, expr, dtype, params)
    k = _KERNELS.get(key)
    if k is None:
        with _lock:
            k = _KERNELS.get(key)
            if k is None:
                src = kernel_source(params, expr, dtype, param_types or {}, cuda=True)
                k = _KERNELS[key] = load_module(_safe(tag) + "_cuda", src).k
    return k


def _safe(tag):
    return "".join(c if c.isalnum() else "_" for c in tag)


def fused_source(params, stmts, dtype, whole_sum=False):
    """Source of a module defining the ufunc ``k`` of a fused region (nbgrad.compile): ``stmts``
    is ``[(name, expr), ...]`` evaluated in order over ``params``; the last name is the result.
    Each expression gets the same select rewrite and typed constants as a single formula."""
    body = ["    %s = %s" % (n, typed_expr(select_form(e))) for n, e in stmts]
    body.append("    return %s" % stmts[-1][0])
    nt = NUMBA_TYPES[dtype]
    return "\n".join(
        [
            "# generated by nbgrad.kernels.build (fused region), vocabulary %s -- do not edit"
            % vocab_hash(False),
            "import numpy as np",
            "from nbgrad.kernels.cpu.scalar import *",
            "from numba import njit, vectorize",
            "T = %s" % NP_TYPES[dtype],
            "",
            *_cpu_module(params, body, nt, ", ".join([nt] * len(params))),
            *_parallel_loop_kernel(params),
            *(_sum_kernel(params) if whole_sum else ()),
        ]
    )


# NOTE [parallel fused kernels]: a fused region over a million elements or more runs its loop
# (or whole-sum) kernel in chunks under ``prange`` on Numba's threads (compile/fuse.py
# ``_parallel``).  Chunks of 64K elements (NUMBA-NOTES 3.1: break-even on two cores is
# 16K-64K; a million leaves launch cost and timeslice stalls small beside the work).  The
# chunks are fixed, not a share per thread, and the same kernel runs with one thread, so the
# results do not depend on the thread count.  That is why one thread does not switch back to
# ``kl``: numba 0.61 compiled the chunked call differently from ``kl`` over the whole array,
# and 616 of 200K float64 gradient elements of a GELU region differed in the last bit.  The
# sum kernel keeps one float64 partial per 4096-element block and adds them in block order
# afterwards.  Compiled on first use only (parallel=True compiles about 4x slower than serial,
# NUMBA-NOTES 1.2), i.e. never for a region smaller than that.
PARALLEL_CHUNK = 65536


def _parallel_loop_kernel(params):
    """``klp(out_, *params)``: ``kl`` over chunks of ``PARALLEL_CHUNK`` under ``prange``."""
    return [
        "from numba import prange",
        "from nbgrad.kernels.cpu.vformula import sl",
        "",
        _njit(", parallel=True"),
        "def klp(out_, %s):" % ", ".join(params),
        "    n_ = out_.size",
        "    for c in prange((n_ + %d) // %d):" % (PARALLEL_CHUNK - 1, PARALLEL_CHUNK),
        "        b = c * %d" % PARALLEL_CHUNK,
        "        m = min(%d, n_ - b)" % PARALLEL_CHUNK,
        "        kl(out_[b : b + m], %s)" % _blocks(params),
        "",
    ]


def _sum_kernel(params):
    """``kr(n, *params)``: the sum of ``f`` over ``n`` elements, for a fused region ending in
    a whole-tensor sum (operands as the loop kernel takes them).  Blocks of 4096: the loop
    kernel ``kl`` into a buffer, then reduce.py's ``_row_sum`` (16 float64 partial sums), so
    no result array is written.  Computing ``f`` inside the summing loop, or with an offset
    index, kept LLVM from vectorising the transcendentals: 1.3-1.6x slower than ``kl`` and a
    separate sum (docs/performance.md, "nbgrad.compile")."""
    plist = ", ".join(params)
    return [
        "from nbgrad.kernels.cpu.vformula import sl",
        "from nbgrad.kernels.cpu.reduce import _row_sum",
        "",
        _njit(),
        "def kr(n_, %s):" % plist,
        "    buf = np.empty(4096, T)",
        "    s = 0.0",
        "    for b in range(0, n_, 4096):",
        "        m = min(4096, n_ - b)",
        "        kl(buf[:m], %s)" % _blocks(params),
        "        s += _row_sum(buf, m)",
        "    return s",
        "",
        _njit(", parallel=True"),
        "def krp(n_, %s):" % plist,
        "    nb = (n_ + 4095) // 4096",
        "    part = np.empty(nb, np.float64)",
        "    per = %d // 4096" % PARALLEL_CHUNK,
        "    for c in prange((nb + per - 1) // per):",
        "        buf = np.empty(4096, T)",
        "        for j in range(c * per, min(nb, c * per + per)):",
        "            b = j * 4096",
        "            m = min(4096, n_ - b)",
        "            kl(buf[:m], %s)" % _blocks(params),
        "            part[j] = _row_sum(buf, m)",
        "    s = 0.0",
        "    for j in range(nb):  # block order: the serial kr's additions",
        "        s += part[j]",
        "    return s",
        "",
    ]


def fused_kernel(tag, params, stmts, dtype, whole_sum=False):
    """The numpy ufunc of ``fused_source``; disk-cached like every generated kernel
    (NOTE [generated kernel cache]).  Returns ``(ufunc, source)``; ``cpu_loop(ufunc)`` is its
    loop kernel and, with ``whole_sum`` (a region ending in a sum), ``cpu_sum(ufunc)`` its
    whole-sum kernel."""
    src = fused_source(tuple(params), tuple(stmts), dtype, whole_sum)

    def make():
        mod = load_module(_safe(tag), src)
        k = getattr(mod.k, "ufunc", mod.k)
        _LOOPS[id(k)] = mod.kl
        _PAR_LOOPS[id(k)] = mod.klp
        if whole_sum:
            _SUMS[id(k)] = mod.kr
            _PAR_SUMS[id(k)] = mod.krp
        return k

    return _once(("fused", src), make), src


def _once(key, make):
    """``_KERNELS[key]``, made by ``make()`` once across threads."""
    k = _KERNELS.get(key)
    if k is None:
        with _lock:
            k = _KERNELS.get(key)
            if k is None:
                k = _KERNELS[key] = make()
    return k


def tape_interpreter(kinds, dtype):
    """An ``njit`` interpreter of whole-step tapes (compile/scalar.py): ``kinds`` is
    ``[(forward expr over x, y), (partial expr for x or None), (partial for y or None)]`` per
    instruction code; code ``len(kinds)`` is a softmax block.  Generated once per set of kinds
    and dtype, disk-cached like every kernel.  Returns ``(function, source)``."""

    def ex(e):
        return typed_expr(select_form(e))

    fwd, bwd = [], []
    for c, (f, p0, p1) in enumerate(kinds):
        kw = "if" if c == 0 else "elif"
        fwd += ["        %s k == %d:" % (kw, c), "            x = v[a]", "            y = v[b]"]
        fwd += ["            v[o] = %s" % ex(f)]
        bwd += ["        %s k == %d:" % (kw, c)]
        if p0 is not None:
            bwd += ["            gr[a] += %s" % ex(p0), "            seen[a] = True"]
        if p1 is not None:
            bwd += ["            gr[b] += %s" % ex(p1), "            seen[b] = True"]
        if p0 is None and p1 is None:
            bwd += ["            pass"]
    sm = len(kinds)
    src = "\n".join(
        [
            "# generated by nbgrad.kernels.build (whole-step tape), vocabulary %s -- do not edit"
            % vocab_hash(False),
            "import numpy as np",
            "from nbgrad.kernels.cpu.scalar import *",
            "from numba import njit",
            "T = %s" % NP_TYPES[dtype],
            "",
            _njit(),
            "def p(prog, idx, load, lv, v0, root, nel):",
            "    gl = np.zeros(lv.shape[0], T)",
            "    v = v0.copy()",
            "    gr = np.zeros(v.shape[0], T)",
            "    seen = np.zeros(v.shape[0], np.bool_)",
            "    for e in range(nel):  # one program per element (a row of load's strides)",
            "      v[:] = v0",
            "      for q in range(load.shape[0]):",
            "        v[load[q, 1]] = lv[load[q, 0] + e * load[q, 2]]",
            "      for q in range(prog.shape[0]):",
            "        k = prog[q, 0]",
            "        o = prog[q, 1]",
            "        a = prog[q, 2]",
            "        b = prog[q, 3]",
            *fwd,
            "        else:  # softmax over v[idx[a:a+b]] into v[o:o+b]",
            "            m = v[idx[a]]",
            "            for r in range(1, b):",
            "                t = v[idx[a + r]]",
            "                m = m if m >= t else t",
            "            z = T(0)",
            "            for r in range(b):",
            "                ez = exp(v[idx[a + r]] - m)",
            "                v[o + r] = ez",
            "                z += ez",
            "            for r in range(b):",
            "                v[o + r] = v[o + r] / z",
            "      gr[:] = T(0)",
            "      seen[:] = False",
            "      gr[root] = T(1)",
            "      seen[root] = True",
            "      for q in range(prog.shape[0] - 1, -1, -1):",
            "        k = prog[q, 0]",
            "        o = prog[q, 1]",
            "        a = prog[q, 2]",
            "        b = prog[q, 3]",
            "        if k == %d:" % sm,
            "            d = T(0)",
            "            live = False",
            "            for r in range(b):",
            "                if seen[o + r]:",
            "                    live = True",
            "                    d += gr[o + r] * v[o + r]",
            "            if live:",
            "                for r in range(b):",
            "                    gr[idx[a + r]] += v[o + r] * (gr[o + r] - d)",
            "                    seen[idx[a + r]] = True",
            "            continue",
            "        if not seen[o]:  # no gradient reached this op: it does not run (eager)",
            "            continue",
            "        g = gr[o]",
            "        x = v[a]",
            "        y = v[b]",
            "        out = v[o]",
            *bwd,
            "      for q in range(load.shape[0]):",
            "        gl[load[q, 0] + e * load[q, 2]] += gr[load[q, 1]]",
            "    return gl",
            "",
        ]
    )
    return _once(("tape", src), lambda: load_module("tape_interpreter", src).p), src
