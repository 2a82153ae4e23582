"""PyTorch-style tensor printing: ``tensor([1., 2.], requires_grad=True)``."""

import math

import numpy as np

from . import dtypes as _dt

PRECISION = 4
LINEWIDTH = 80
THRESHOLD = 1000
EDGEITEMS = 3


class _Formatter:
    """Chooses int / fixed / scientific mode from the finite values, like torch._tensor_str."""

    def __init__(self, arr, dtype):
        self.floating = dtype.is_floating_point
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        vals = np.asarray(arr).ravel()
        if not self.floating:
            for v in vals:
                self.max_width = max(self.max_width, len(self._int(v)))
            return
        finite = vals[np.isfinite(vals)].astype(np.float64)
        nz = finite[finite != 0]
        nonzero = np.abs(nz)
        if nz.size and np.any(nz != np.ceil(nz)):
            self.int_mode = False
        if nonzero.size:
            mx, mn = nonzero.max(), nonzero.min()
            if self.int_mode:
                self.sci_mode = mx / mn > 1000.0 or mx > 1e8
            else:
                self.sci_mode = mx / mn > 1000.0 or mx > 1e8 or mn < 1e-4
        # like torch._tensor_str: the width comes from the non-zero finite values only
        for v in nz:
            self.max_width = max(self.max_width, len(self._fmt(v)))

    @staticmethod
    def _int(v):
        if isinstance(v, (bool, np.bool_)):
            return "True" if v else "False"
        return str(int(v))

    def _fmt(self, v):
        if not self.floating:
            return self._int(v)
        v = float(v)
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if self.sci_mode:
            return ("{:.%de}" % PRECISION).format(v)
        if self.int_mode:
            return "{:.0f}.".format(v)
        return ("{:.%df}" % PRECISION).format(v)

    def format(self, v):
        return self._fmt(v).rjust(self.max_width)


def _complex_str(arr):
    re = _Formatter(arr.real, _dt.float64)
    im = _Formatter(arr.imag, _dt.float64)

    class F:
        max_width = re.max_width + im.max_width + 2

        @staticmethod
        def format(v):
            i = im._fmt(v.imag)
            sign = "+" if not i.startswith("-") else "-"
            return (re._fmt(v.real) + sign + i.lstrip("-") + "j").rjust(F.max_width)

    return F


def _summarize(arr):
    if arr.ndim == 0:
        return arr
    if arr.shape[0] > 2 * EDGEITEMS:
        arr = np.concatenate([arr[:EDGEITEMS], arr[-EDGEITEMS:]])
    return np.stack([_summarize(a) for a in arr]) if arr.ndim > 1 else arr


def _str(arr, fmt, indent, summarize):
    if arr.ndim == 0:
        return fmt.format(arr.item())
    if arr.ndim == 1:
        items = (
            [fmt.format(v) for v in arr.tolist()]
            if not summarize or arr.shape[0] <= 2 * EDGEITEMS
            else (
                [fmt.format(v) for v in arr[:EDGEITEMS].tolist()]
                + [" ..."]
                + [fmt.format(v) for v in arr[-EDGEITEMS:].tolist()]
            )
        )
        per_line = max(1, (LINEWIDTH - indent) // (fmt.max_width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    n = arr.shape[0]
    idx = (
        list(range(n))
        if not summarize or n <= 2 * EDGEITEMS
        else list(range(EDGEITEMS)) + [None] + list(range(n - EDGEITEMS, n))
    )
    parts = [("..." if i is None else _str(arr[i], fmt, indent + 1, summarize)) for i in idx]
    sep = "," + "\n" * (arr.ndim - 1) + " " * (indent + 1)
    return "[" + sep.join(parts) + "]"


def tensor_repr(t):
    arr = t._data
    suffixes = []
    if type(arr) is not np.ndarray:  # a CUDA tensor (NOTE [device storage]): read a host copy
        suffixes.append("device='%s'" % arr.device)  # PyTorch: the first suffix
        arr = arr.to_host()
    d = t._dtype
    summarize = arr.size > THRESHOLD
    prefix = "tensor("
    default = d is _dt.get_default_dtype()
    if arr.size == 0:
        body = "[]"
        if arr.ndim != 1:
            suffixes.append("size=%s" % (tuple(arr.shape),))
        if not default:  # nothing to infer an integer dtype from: always shown
            suffixes.append("dtype=nbgrad." + d.name)
    else:
        view = _summarize(arr) if summarize else arr
        if d.is_complex:
            fmt = _complex_str(view)
        else:
            fmt = _Formatter(view.astype(np.float64) if d is _dt.float16 else view, d)
        body = _str(
            arr if d is not _dt.float16 else arr.astype(np.float32), fmt, len(prefix), summarize
        )
    if arr.size and not default and d not in (_dt.int64, _dt.bool, _dt.complex128):
        suffixes.append("dtype=nbgrad." + d.name)
    if t._grad_fn is not None:
        suffixes.append("grad_fn=<%s>" % t._grad_fn.name().replace("torch::autograd::", ""))
    elif t._stale is not None:  # a view whose grad_fn PyTorch refuses to give
        suffixes.append("grad_fn=<Invalid>")
    elif t._requires_grad:
        suffixes.append("requires_grad=True")
    out = prefix + body
    for s in suffixes:
        out += ", " + s
    out += ")"
    if t._is_param:
        out = "Parameter containing:\n" + out
    return out
