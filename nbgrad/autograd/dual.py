"""Forward-AD tangent state: the current dual level and the tensors that carry tangents.

The low half of forward mode (it imports only ``_flags`` and ``_tensor``), so ops can propagate
tangents without importing autograd/forward_ad.py, which sits above ops (it calls autograd.grad).
"""

import numpy as np

from .. import _flags
from .._tensor import Tensor, _bounds, view_positions


class DualState:
    """Process-wide, like PyTorch's forward AD (one dual level at a time)."""

    def __init__(self):
        self.level = -1  # the open dual level; -1 outside ``dual_level()``
        # dual levels entered so far: a tangent saved at one level is never restored at another
        self.generation = 0
        # 1 while every tangent carries a leading batch dim: jacobian(strategy="forward-mode",
        # vectorize=True) pushes all the basis tangents through one forward pass
        self.tangent_batch_dims = 0
        self.duals = []  # tensors given a tangent at this level; their tangents go on exit


DUAL = DualState()


def tangent_of(t):
    """``t``'s tangent at the open dual level, or None.

    NOTE [view tangents]: as in PyTorch, a view's tangent is the same view of its base's
    tangent: a view that has none yet while its base has one gets an alias into the base's
    tangent (the layouts match, see ``zeros_like_layout``), so in-place updates of either are
    seen by both (autograd/inplace.py: ``_write_tangent``)."""
    if not isinstance(t, Tensor):
        return None
    d = t.__dict__
    g = d.get("_fw_grad")
    if g is not None or t._basev is None or DUAL.level < 0:
        return g
    base = t._basev
    tb = base.__dict__.get("_fw_grad")
    if tb is None or not t._dtype.is_inexact:
        return None
    g = _view_tangent(t, base, tb)
    set_tangent(t, g)
    return g


def _view_tangent(view, base, tb):
    """The tangent of ``view`` read from its base's tangent ``tb``: an alias when ``tb`` has
    the base's layout, else a copy of the view's elements."""
    nb = tb._data.ndim - base._data.ndim
    a, b, v = tb._data, base._data, view._data
    if a.shape[nb:] == b.shape and a.strides[nb:] == b.strides and v.itemsize == b.itemsize:
        delta = v.__array_interface__["data"][0] - b.__array_interface__["data"][0]
        shape, strides = a.shape[:nb] + v.shape, a.strides[:nb] + v.strides
        try:
            return Tensor._make(_alias(a, delta, shape, strides))
        except (ValueError, TypeError):
            pass
    pos = np.unravel_index(view_positions(v, b), b.shape)
    return Tensor._make(np.ascontiguousarray(a[(slice(None),) * nb + pos]))


def _alias(arr, delta, shape, strides):
    """An array over ``arr``'s memory starting ``delta`` bytes from its first element; numpy
    checks it stays inside the owning buffer."""
    root = arr
    while isinstance(root.base, np.ndarray):
        root = root.base
    off = arr.__array_interface__["data"][0] + delta - root.__array_interface__["data"][0]
    return np.ndarray(shape, arr.dtype, buffer=root, offset=off, strides=strides)


def zeros_like_layout(p, batch=()):
    """Zeros with exactly the memory layout (strides) of array ``p``, plus leading ``batch``
    dims: PyTorch gives a tangent its primal's layout, so views of both line up."""
    if p.size == 0:
        return np.zeros(tuple(batch) + p.shape, p.dtype)
    lo, hi = _bounds(p)
    span = (hi - lo) // p.itemsize
    n = int(np.prod(batch)) if len(batch) else 1
    buf = np.zeros(n * span, p.dtype)
    off = (p.__array_interface__["data"][0] - lo) // p.itemsize
    bstr, acc = [], span * p.itemsize
    for b in reversed(tuple(batch)):
        bstr.insert(0, acc)
        acc *= b
    return np.lib.stride_tricks.as_strided(
        buf[off:], shape=tuple(batch) + p.shape, strides=tuple(bstr) + p.strides
    )


def set_tangent(t, tangent):
    t._fw_grad = tangent
    DUAL.duals.append(t)
    node = t._grad_fn
    saved = getattr(node, "saved", None) if node is not None else None
    if saved:  # the node saved this very output: its backward must see the tangent too
        for s in saved.values():
            if getattr(s, "is_output", False) and s.data is t._data:
                s.fw = (DUAL.generation, tangent)


def restore_tangent(t, fw):
    """Give an unpacked saved output the tangent its tensor had (same dual level only)."""
    if fw[0] == DUAL.generation and DUAL.level >= 0:
        t._fw_grad = fw[1]
        DUAL.duals.append(t)


def open_level(tangent_batch_dims=0):
    """Start a dual level: from now on ops propagate tangents."""
    if DUAL.level >= 0:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    DUAL.level = 0
    DUAL.generation += 1
    DUAL.tangent_batch_dims = tangent_batch_dims
    _flags.FWD = True
    return DUAL.level


def close_level():
    """End the dual level: every tangent set in it is dropped."""
    for t in DUAL.duals:
        t.__dict__.pop("_fw_grad", None)
    DUAL.duals.clear()
    DUAL.level = -1
    DUAL.tangent_batch_dims = 0
    _flags.FWD = False
