"""Forward-AD tangent state: the current dual level and the tensors that carry tangents.

The low half of forward mode (it imports only ``_flags`` and ``_tensor``), so ops can propagate
tangents without importing autograd/forward_ad.py, which sits above ops (it calls autograd.grad).
"""

from .. import _flags
from .._tensor import Tensor


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
    """``t``'s tangent at the open dual level, or None."""
    return t.__dict__.get("_fw_grad") if isinstance(t, Tensor) else None


def set_tangent(t, tangent):
    t._fw_grad = tangent
    DUAL.duals.append(t)
    node = t.grad_fn
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
