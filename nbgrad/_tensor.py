"""class Tensor: storage (a numpy array on CPU), metadata, autograd fields, repr, interop.

Imports only leaf modules.  Maths lives in ops/; the Tensor methods that call it are attached by
_tensor_methods.py, and ``Tensor.backward`` by nbgrad.autograd (it needs the engine).
NOTE [version counter]: ``_vc`` is a one-element list shared by a tensor, its views and its
``detach()``; every in-place write does ``_vc[0] += 1``.  ``.data`` gets a fresh counter.
"""

from __future__ import annotations

import copy
import numbers
import operator
import re
import threading
import warnings
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from . import dtypes as _dt
from ._devarray import DeviceArray
from ._repr import tensor_repr
from .device import CPU, device as _device
from .grad_mode import STATE
from .utils.hooks import HookDict, RemovableHandle, add_hook

__all__ = ["Tensor"]
_FROM_NP = _dt._FROM_NP

_NONLEAF_GRAD_WARNING = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


class Tensor:
    """An n-dimensional array with autograd (``torch.Tensor``): made by ``nbgrad.tensor``,
    ``zeros``, ``rand``, ... or by ops on tensors; its data is a NumPy array on the CPU."""

    __slots__ = (
        "_data",
        "_dtype",
        "_requires_grad",
        "_grad_fn",
        "_output_nr",
        "_vc",
        "_inference",
        "__weakref__",
        "__dict__",
    )
    # Rarely-set fields: class defaults, overridden per instance only when used (cheap creation).
    _grad = _basev = _alias = _views = _accum = _hooks = _post_acc_hooks = None
    _retains_grad = _is_param = False
    # a view's autograd state (NOTE [view creation meta]): how it was made, whether its
    # requires_grad is its own (else its base's), and the grad_fn it had when it went stale
    _cmeta = 0  # CM_DEFAULT
    _own_rg = False
    _stale = None
    __array_priority__ = 1000  # numpy defers to our reflected operators

    # -- construction ---------------------------------------------------------------------
    def __init__(
        self, data: Any = None, *, dtype: _dt.dtype | None = None, requires_grad: bool = False
    ) -> None:
        # Tensor(array) is internal-ish; users call nbgrad.tensor().
        arr = _to_array(data if data is not None else [], dtype)
        Tensor._init(self, arr, None, 0, None, None)
        if requires_grad:
            self.requires_grad_(True)

    @staticmethod
    def _init(self, arr, grad_fn, output_nr, vc, base):
        self._data = arr
        self._dtype = _FROM_NP[arr.dtype]
        self._requires_grad = grad_fn is not None
        self._grad_fn = grad_fn
        self._output_nr = output_nr
        self._vc = vc if vc is not None else [0]
        if base is not None:
            self._basev = base
            _track_view(self, base)
        self._inference = STATE.inference

    @classmethod
    def _make(cls, arr, grad_fn=None, output_nr=0, vc=None, base=None):
        """The internal constructor: wrap a numpy array (no copy, no checks); ``_init``
        inlined (NOTE [per-op cost]: one call less on every op)."""
        t = object.__new__(cls)
        t._data = arr
        t._dtype = _FROM_NP[arr.dtype]
        t._requires_grad = grad_fn is not None
        t._grad_fn = grad_fn
        t._output_nr = output_nr
        t._vc = vc if vc is not None else [0]
        if base is not None:
            t._basev = base
            _track_view(t, base)
        t._inference = STATE.inference
        return t

    def _set_base(self, base):
        self._basev = base
        if base is not None:
            _track_view(self, base)

    # the tensor this one is a view of (None for a base); setting it tracks the view.  A C
    # getter (attrgetter) keeps reads at half the cost of a Python property.
    _base = property(operator.attrgetter("_basev"), _set_base)

    # -- metadata -------------------------------------------------------------------------
    @property
    def dtype(self) -> _dt.dtype:
        """The element type (``nbgrad.float32``, ...)."""
        return self._dtype

    @property
    def shape(self) -> Size:
        """The size of each dimension, as a ``Size`` (a tuple of ints)."""
        return Size(self._data.shape)

    def size(self, dim: int | None = None) -> Size | int:
        """The shape as a ``Size``, or the length of dimension ``dim`` (negative counts from the
        end)."""
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions (``ndimension`` is an alias)."""
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements (``nelement`` is an alias)."""
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """The size of one element in bytes."""
        return self._dtype.itemsize

    def stride(self, dim: int | None = None) -> tuple[int, ...] | int:
        """Strides in elements (not bytes), or the stride of dimension ``dim``."""
        isz = self._data.itemsize
        st = tuple(s // isz for s in self._data.strides)
        if dim is None:
            return st
        return st[_wrap_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """Offset in elements of the first element from the start of its storage."""
        if type(self._data) is DeviceArray:
            return self._data.offset
        root = storage_root(self)
        base = root._data if root._alias is None else root._alias[1]
        return (
            self._data.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        ) // self._data.itemsize

    def data_ptr(self) -> int:
        """The address of the first element (a device address for a CUDA tensor)."""
        d = self._data
        if type(d) is DeviceArray:
            return d.pointer()
        return d.__array_interface__["data"][0]

    def is_contiguous(self, memory_format: Any = None) -> bool:
        """Whether the elements are laid out in C (row-major) order without gaps."""
        return self._data.flags.c_contiguous

    @property
    def device(self) -> _device:
        """Where the data lives: the CPU (a numpy array) or a CUDA device (a ``DeviceArray``,
        NOTE [device storage])."""
        d = self._data
        return d.device if type(d) is DeviceArray else CPU

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a CUDA device."""
        return type(self._data) is DeviceArray

    @property
    def grad_fn(self) -> Any:
        """The node that made this tensor (None for a leaf).  Internals read the slot
        ``_grad_fn``; this getter adds PyTorch's check of a stale view (NOTE [view creation
        meta]): a view that may not follow its base's in-place change raises here."""
        fn = self._grad_fn
        if fn is None and self._stale is not None:
            raise RuntimeError(view_rebase_error(self, True))
        return fn

    def _stale_fn(self):
        """The grad_fn a stale view had (NOTE [view creation meta]); None otherwise."""
        return self._stale[0] if self._stale is not None else None

    @property
    def is_leaf(self) -> bool:
        """True for a tensor not made by a recorded op (``grad_fn`` is None)."""
        if self._grad_fn is not None:
            return False
        if self._stale is not None:
            raise RuntimeError(view_rebase_error(self, True))
        return True

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating point type."""
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is a complex type."""
        return self._dtype.is_complex

    def is_inference(self) -> bool:
        """Whether the tensor was made under ``inference_mode``."""
        return self._inference

    def _is_view(self):
        return self._base is not None

    @property
    def _version(self):
        return self._vc[0]

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is."""
        return self._output_nr

    # -- autograd fields ------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients are recorded for this tensor."""
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(bool(value))

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` in place (leaves only, floating point or complex dtypes); returns
        ``self``."""
        if self._grad_fn is not None or self._stale_fn() is not None:
            if not requires_grad:
                raise RuntimeError(
                    "you can only change requires_grad flags of leaf variables. If you want to use "
                    "a computed variable in a subgraph that doesn't require differentiation use "
                    "var_no_grad = var.detach()."
                )
            return self
        if requires_grad and not self._dtype.is_inexact:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if requires_grad and self._inference and not STATE.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside "
                "InferenceMode is not allowed."
            )
        base = self._basev
        if base is not None:
            # a view's own flag; it also requires grad while its base does (PyTorch)
            self._own_rg = requires_grad
            self._requires_grad = requires_grad or base._requires_grad
        else:
            self._requires_grad = requires_grad
            if self._views:
                sync_views_requires_grad(self)
        return self

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient (None until a backward pass reaches this leaf)."""
        fn = self._grad_fn
        if fn is None and self._stale is not None:
            fn = self._stale[0]  # a stale view counts as what it was
        if fn is not None and not self._retains_grad and self._grad is None:
            warnings.warn(_NONLEAF_GRAD_WARNING, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value: Tensor | None) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    "assigned grad expected to be a Tensor or None but got grad of "
                    "type %s" % type(value).__name__
                )
            if value._data.shape != self._data.shape:
                raise RuntimeError(
                    "attempting to assign a gradient of size '%s' to a tensor of size '%s'. Please "
                    "ensure that the gradient and the tensor are the same size"
                    % (list(value._data.shape), list(self._data.shape))
                )
            if value._dtype is not self._dtype:
                raise RuntimeError(
                    "attempting to assign a gradient with dtype '%s' to a tensor with grad_dtype "
                    "'%s'. The gradient must match the tensor's grad_dtype (defaults to the "
                    "tensor's dtype)." % (value._dtype.c_name, self._dtype._legacy)
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def retains_grad(self) -> bool:
        """Whether ``retain_grad()`` was called on this non-leaf."""
        return self._retains_grad

    def retain_grad(self) -> None:
        """Keep ``.grad`` of this non-leaf tensor after backward (a no-op on a leaf)."""
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self._grad_fn is None or self._retains_grad:
            if self._stale_fn() is not None:  # a stale view that had a grad_fn (PyTorch)
                raise RuntimeError(view_rebase_error(self, True))
            return
        node = self._grad_fn
        if node._retain is None:
            node._retain = {}
        node._retain[self._output_nr] = weakref.ref(self)
        self._retains_grad = True

    def register_hook(self, hook: Callable[[Tensor], Tensor | None]) -> RemovableHandle:
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces
        the gradient.  Returns a handle whose ``remove()`` unregisters it."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:  # a stale view raises
            return self._grad_fn._register_tensor_hook(self._output_nr, hook)
        if self._hooks is None:
            self._hooks = HookDict()
        return add_hook(self._hooks, hook)

    def register_post_accumulate_grad_hook(self, hook: Callable[[Tensor], None]) -> RemovableHandle:
        """Call ``hook(self)`` after a gradient was accumulated into this leaf's ``.grad``."""
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:  # a stale view raises
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        if self._post_acc_hooks is None:
            self._post_acc_hooks = HookDict()
        return add_hook(self._post_acc_hooks, hook)

    def detach(self) -> Tensor:
        """A new leaf sharing data and version counter: no differentiable view (``_base`` is
        None), but an alias of the tensor owning the storage (``_alias``: a weak reference to
        it, which keeps no graph alive, and its array) whose own views follow writes through
        any alias, as PyTorch's shared version counter makes them."""
        t = Tensor._make(self._data, vc=self._vc)
        root = storage_root(self)
        t._alias = (weakref.ref(root), root._data)
        return t

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place (not for views); returns ``self``."""
        if self._basev is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set "
                "as True, gradients are views of DDP buckets, and hence detach_() cannot be "
                "called on these gradients. To fix this error, please refer to the "
                "Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."
            )
        self._grad_fn = None
        self._requires_grad = False
        if self._views:
            sync_views_requires_grad(self)
        return self

    @property
    def data(self) -> Tensor:
        """A tensor sharing the data, outside autograd; assigning replaces the data."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError("data must be a Tensor")
        self._data = value._data
        self._dtype = value._dtype

    # -- interop --------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The data as a NumPy array sharing memory (raises for a tensor that requires grad
        while grad mode is on)."""
        if self._requires_grad and not force and STATE.enabled:  # allowed under no_grad
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use "
                "tensor.detach().numpy() instead."
            )
        if type(self._data) is DeviceArray:
            raise TypeError(
                "can't convert %s device type tensor to numpy. Use Tensor.cpu() to copy the "
                "tensor to host memory first." % self._data.device
            )
        return self._data

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy's array protocol with NumPy 2's ``copy=``: True returns a copy, False raises
        ValueError when one is needed (a dtype change), None copies only then.  A tensor that
        requires grad raises as ``numpy()`` does (PyTorch's error)."""
        arr = self.numpy()
        if dtype is not None and np.dtype(dtype) != arr.dtype:
            if copy is False:
                raise ValueError("Unable to avoid copy while creating an array as requested.")
            return arr.astype(dtype)
        return arr.copy(order="K") if copy else arr

    def __array_wrap__(
        self, array: np.ndarray, context: Any = None, return_scalar: bool = False
    ) -> Tensor:
        """What a NumPy ufunc (``np.exp(t)``) or function (``np.argmax(t)``) returns: a tensor
        sharing the result's memory, 0-d for a scalar result, as PyTorch's ``torch.from_numpy``
        (a bool result becomes uint8, as in PyTorch).  The inputs went through ``__array__``, so a
        tensor that requires grad raised there: nothing is silently detached."""
        if array.dtype == np.bool_:
            array = array.astype(np.uint8)
        _dt.from_numpy_dtype(array.dtype)
        return Tensor._make(array)

    def __dlpack__(
        self,
        *,
        stream: int | None = -1,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """Export as a DLPack capsule sharing memory (``torch.from_dlpack``, ``np.from_dlpack``)."""
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        d = self._data
        if type(d) is DeviceArray:  # device memory: a capsule built by hand (numpy has none)
            from .utils import _dlpack_capsule as dl  # cycle: interop helpers sit above

            if copy:
                d = d.copy()
            from . import cuda  # cycle: nbgrad.cuda (device queries) sits above the tensor

            cuda.synchronize()  # nbgrad's kernels run on the default stream: done before use
            return dl.export(d.pointer(), d.shape, d.estrides, d.dtype, dl.KDL_CUDA, 0, d)
        if stream is not None and stream != -1:
            raise AssertionError("stream should be None on cpu.")
        return self._data.__dlpack__(max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self) -> tuple[int, int]:
        if type(self._data) is DeviceArray:
            return (2, self._data.device.index or 0)  # (kDLCUDA, device)
        return (1, 0)  # (kDLCPU, device 0)

    @property
    def __cuda_array_interface__(self) -> dict:
        """Numba's CUDA Array Interface (version 3) of a CUDA tensor, sharing its memory: how
        CuPy, PyTorch (``torch.as_tensor``) and Numba read it without a copy.  A CPU tensor
        has none (AttributeError, as PyTorch's)."""
        d = self._data
        if type(d) is not DeviceArray:
            raise AttributeError(
                "Can't get __cuda_array_interface__ on non-CUDA tensor type: %s "
                "If CUDA data is required use tensor.cuda() to copy tensor to device memory."
                % self.type()
            )
        if self._requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. "
                "If gradients aren't required, use var.detach() to get Variable that doesn't "
                "require grad."
            )
        base = d.buf.__cuda_array_interface__["data"][0]
        return {
            "shape": d.shape,
            "typestr": d.dtype.str,
            "descr": [("", d.dtype.str)],
            "data": (base + d.offset * d.itemsize if d.size else 0, False),
            "strides": None if d.is_c_contiguous else d.strides,
            "version": 3,
        }

    def item(self) -> Any:
        """The value of a one-element tensor as a Python number."""
        if self._data.size != 1:
            raise RuntimeError(
                "a Tensor with %d elements cannot be converted to Scalar" % self._data.size
            )
        return _host(self._data).reshape(()).item()

    def tolist(self) -> Any:
        """The data as (nested) Python lists of numbers."""
        return _host(self._data).tolist()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def _scalar_check(self):
        if self._data.size != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self._data.reshape(()).item())

    def __float__(self) -> float:
        self._scalar_check()
        return float(
            self._data.reshape(()).item().real
            if self.is_complex()
            else self._data.reshape(()).item()
        )

    def __int__(self) -> int:
        self._scalar_check()
        return int(self._data.reshape(()).item())

    def __index__(self) -> int:
        if not self._dtype.is_integral or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._data.reshape(()).item())

    def __complex__(self) -> complex:
        self._scalar_check()
        return complex(self._data.reshape(()).item())

    def __hash__(self) -> int:
        return id(self)

    # Pickling and copying follow PyTorch: a pickle holds the memory the tensor's elements span,
    # its strides and requires_grad (not .grad, hooks or history: a non-leaf comes back as a
    # leaf); copy.copy shares memory; deepcopy copies it (views copied together stay views of
    # one copy) and .grad.  Public attributes set on the tensor travel in both.
    def __reduce_ex__(self, proto: Any) -> tuple[Any, ...]:
        _warn_unpickled_hooks(self)
        return (
            _rebuild_tensor,
            (type(self), *_span(self._data), self._requires_grad, _user_state(self)),
        )

    def __copy__(self) -> Tensor:
        t = type(self)._make(self._data)
        t._requires_grad = self._requires_grad
        t.__dict__.update(_user_state(self))
        return t

    def __deepcopy__(self, memo: dict[int, Any]) -> Tensor:
        if not self.is_leaf:  # a stale view raises
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                "protocol at the moment.  If you were attempting to deepcopy a module, this may "
                "be because of a torch.nn.utils.weight_norm usage, see "
                "https://github.com/pytorch/pytorch/pull/103001"
            )
        if id(self) in memo:
            return memo[id(self)]
        t = type(self)._make(_deepcopy_data(self._data, memo))
        t._requires_grad = self._requires_grad
        if self._grad is not None:
            t._grad = self._grad.__deepcopy__(memo)
        memo[id(self)] = t
        t.__dict__.update(copy.deepcopy(_user_state(self), memo))
        return t

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        return tensor_repr(self)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return self.item().__format__(spec)
        return object.__format__(self, spec)


_PRUNE_LOCK = threading.Lock()


class _Views(list):
    """Weak references to the live views of a base (NOTE [views follow their base])."""

    cap = 64


def _track_view(view, base):
    """Record a new view of ``base``.

    NOTE [views follow their base]: when an in-place op rewrites the history of a base (or of one
    of its views), PyTorch gives every other view of it a fresh ``AsStridedBackward0`` grad_fn
    reading from the base's new history (autograd/inplace.py: ``refresh_views``); a view
    holding on to its old grad_fn would silently get the gradient of the old version.  So each
    base keeps weak references to its views (pruned as it grows: amortised O(1) per view).
    As in PyTorch, any in-place write (recorded or not) to a base that requires grad, or to
    one of its views, regenerates them, except the views PyTorch forbids to follow (NOTE [view
    creation meta]).
    """
    views = base._views
    if views is None:
        views = base._views = _Views()
        root = base._alias and base._alias[0]()
        if root is not None:  # a detach()ed alias: its views follow writes via its root
            _track_view(base, root)
    views.append(weakref.ref(view))
    if len(views) >= views.cap:
        prune_views(views)


def prune_views(views):
    """Drop the dead references of a base's view list."""
    with _PRUNE_LOCK:  # one pruner at a time; views appended meanwhile are kept
        n = len(views)
        views[:n] = [r for r in views[:n] if r() is not None]
        views.cap = max(64, 2 * len(views))


# NOTE [view creation meta]: PyTorch's CreationMeta, how a view was made; a view made any other
# way than DEFAULT may not follow an in-place change.  NO_GRAD: made with grad mode off;
# INFERENCE: made in inference mode; MULTI_OUTPUT: an output of split/chunk/unbind (their node
# returns several views); CUSTOM_FUNCTION: a view returned by a custom autograd Function.  A
# view of such a view keeps its meta (a stricter new one wins, INFERENCE always).  In-place on
# such a view with the write recorded raises (autograd/inplace.py: check_inplace); after an
# in-place change of its base or of another view (any write: the version counter moved), it is
# *stale* (``_stale``: the grad_fn it had): its ``grad_fn``/``is_leaf`` and using it in a
# recorded op raise, forever, as PyTorch's grad_fn getter does.  A view without a grad_fn
# (made under no_grad, or of a tensor not requiring grad) requires grad while its base does and
# gets no gradient accumulator of its own (its .grad stays None), unless ``requires_grad_()`` was
# called on it (``_own_rg``).
CM_DEFAULT, CM_CUSTOM_FUNCTION, CM_MULTI_OUTPUT, CM_NO_GRAD, CM_INFERENCE = range(5)

_VIEW_SUFFIX = {
    CM_MULTI_OUTPUT: " This view is the output of a function that returns multiple views. Such "
    "functions do not allow the output views to be modified inplace. You should replace the "
    "inplace operation by an out-of-place one.",
    CM_NO_GRAD: " Given that this use case is ambiguous and error-prone, it is forbidden. You can "
    "clarify your code by moving both the view and the inplace either both inside the no_grad "
    "block (if you don't want the inplace to be tracked) or both outside (if you want the "
    "inplace to be tracked).",
    CM_INFERENCE: " Given that this use case is ambiguous and error-prone, it is forbidden. You "
    "can clarify your code by moving both the view and the inplace either both inside the "
    "inference_mode block (if you don't want the inplace to be tracked) or both outside (if you "
    "want the inplace to be tracked).",
    CM_CUSTOM_FUNCTION: " This view was created inside a custom Function (or because an input "
    "was returned as-is) and the autograd logic to handle view+inplace would override the custom "
    "backward associated with the custom Function, leading to incorrect gradients. This behavior "
    "is forbidden. You can fix this by cloning the output of the custom Function.",
}


def storage_root(t):
    """The tensor owning ``t``'s storage: its base, or the tensor it was ``detach()``ed from
    (while that lives)."""
    while True:
        b = t._basev
        if b is None:
            a = t._alias
            b = a and a[0]()
            if b is None:
                return t
        t = b


def view_base(x):
    """The base of a view of ``x``: x's base, or x itself (also for a ``detach()``ed alias,
    which is no differentiable view)."""
    b = x._basev
    return x if b is None else b


def view_meta(t, x, base, multi):
    """Creation meta, requires_grad and inference flag of ``t``, a new view of ``x`` (whose base
    is ``base``): the slow path of view creation (grad mode off, inference, a view of a view
    with a non-default meta, or a multi-output view)."""
    if STATE.inference:
        cm = CM_INFERENCE
    elif not STATE.enabled:
        cm = CM_NO_GRAD
    else:
        cm = CM_MULTI_OUTPUT if multi else CM_DEFAULT
    prev = x._cmeta if x._basev is not None else CM_DEFAULT
    if cm == CM_DEFAULT or prev == CM_INFERENCE:
        cm = prev
    if cm:
        t._cmeta = cm
    if t._grad_fn is None and base._requires_grad:
        t._requires_grad = True
    if t._inference != x._inference:  # a view of a normal tensor stays normal (PyTorch)
        t._inference = x._inference


def view_rebase_error(t, indirect):
    """PyTorch's error (handle_view_on_rebase) for view ``t`` with a non-default creation meta:
    modified in place itself, or (``indirect``) after its base or another view was."""
    cm = t._cmeta
    fn = t._stale[0] if t._stale is not None else t._grad_fn
    what = "its base or another view of its base has been" if indirect else "is being"
    name = fn and re.sub(r"Backward\d*$", "", fn.name())
    if cm in (CM_NO_GRAD, CM_INFERENCE) or fn is None:
        if fn is not None:
            prefix = "Output %d of %s is a view of a view which was created in" % (
                t._output_nr,
                name,
            )
        else:
            prefix = "A view was created in"
        if cm == CM_INFERENCE:
            msg = "%s inference mode and %s modified inplace in normal mode." % (prefix, what)
        else:
            msg = "%s no_grad mode and %s modified inplace with grad mode enabled." % (prefix, what)
    else:
        msg = "Output %d of %s is a view and %s modified inplace." % (t._output_nr, name, what)
    return msg + _VIEW_SUFFIX[cm]


def sync_views_requires_grad(base):
    """``base``'s requires_grad changed: its views without a grad_fn follow (PyTorch computes a
    view's requires_grad from its base's), and those written in place meanwhile now follow that
    write (autograd/inplace.py: ``refresh_views``)."""
    moved = False
    for ref in list(base._views):
        v = ref()
        if v is None or v._basev is not base or v._grad_fn is not None:
            continue
        if v._stale is not None and v._stale[0] is not None:
            continue
        v._requires_grad = v._own_rg or base._requires_grad
        moved = moved or "_moved" in v.__dict__
    if moved and base._requires_grad:
        from .autograd.inplace import refresh_views  # cycle: inplace sits above the tensor

        refresh_views(base, None, True)


class Size(tuple):
    """``tensor.shape``: a tuple that prints like PyTorch's ``torch.Size([2, 3])``."""

    def __repr__(self) -> str:
        return "torch.Size(%s)" % list(self)

    __str__ = __repr__

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        n = 1
        for s in self:
            n *= s
        return n


def _wrap_dim(dim, ndim):
    n = ndim if ndim > 0 else 1
    if not -n <= dim < n:
        raise IndexError(
            "Dimension out of range (expected to be in range of [%d, %d], but got "
            "%d)" % (-n, n - 1, dim)
        )
    return dim + n if dim < 0 else dim


# ---------------------------------------------------------------------------------------------
# Pickling and copying (Tensor.__reduce_ex__ / __copy__ / __deepcopy__)


def _user_state(t):
    """The attributes a user set on ``t`` (public names); ``_``-names are nbgrad's bookkeeping
    (autograd fields, view tracking) and never travel."""
    d = t.__dict__
    return {k: v for k, v in d.items() if not k.startswith("_")} if d else {}


def _span(a):
    """What a pickle holds for array ``a``: a uint8 view of the bytes its elements span (no
    copy; the pickler copies it), ``a``'s byte offset in it, dtype, shape, byte strides and
    whether it is writeable (an expanded tensor is not)."""
    if a.size == 0:
        buf, off = np.empty(0, np.uint8), 0
    else:
        lo, hi = _bounds(a)
        low = tuple(n - 1 if st < 0 else 0 for n, st in zip(a.shape, a.strides))
        first = a[low + (Ellipsis,)].reshape(1).view(np.uint8)  # the lowest element's bytes
        buf = np.lib.stride_tricks.as_strided(first, shape=(hi - lo,), strides=(1,))
        off = a.__array_interface__["data"][0] - lo
    return buf, off, a.dtype.str, a.shape, a.strides, bool(a.flags.writeable)


def _rebuild_tensor(cls, buf, off, dtype, shape, strides, writeable, requires_grad, state):
    """Unpickle a tensor (the inverse of ``Tensor.__reduce_ex__``)."""
    if not (isinstance(buf, np.ndarray) and buf.dtype == np.uint8 and buf.ndim == 1):
        raise TypeError("nbgrad: malformed pickled tensor")
    if not buf.flags.writeable:
        buf = buf.copy()
    arr = np.ndarray(shape, np.dtype(dtype), buffer=buf, offset=off, strides=strides)
    if not arr.dtype.isnative:  # pickled on a machine of the other byte order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    elif not writeable:
        arr.flags.writeable = False
    _dt.from_numpy_dtype(arr.dtype)
    t = Tensor._make.__func__(cls, arr)
    if requires_grad:
        t.requires_grad_(True)
    if state:
        t.__dict__.update(state)
    return t


def _owner(a):
    """The array at the root of ``a``'s ``.base`` chain (through as_strided's DummyArray bases):
    the one owning the memory, shared by every view of it."""
    root = a
    while True:
        b = root.base
        b = b if isinstance(b, np.ndarray) else getattr(b, "base", None)
        if not isinstance(b, np.ndarray):
            return root
        root = b


def _deepcopy_data(a, memo):
    """A copy of ``a`` with its strides; arrays deep-copied together that share memory (a view
    and its base) share the copy, as PyTorch's storage deepcopy does."""
    if a.size == 0:
        return np.ndarray(a.shape, a.dtype, buffer=np.empty(0, np.uint8), strides=a.strides)
    root = _owner(a)
    lo, hi = _bounds(root)
    alo, ahi = _bounds(a)
    if not (root.flags.c_contiguous or root.flags.f_contiguous) or alo < lo or ahi > hi:
        return a.copy(order="K")
    key = ("nbgrad.storage", id(root))
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = (root, root.copy(order="K"))  # holding root keeps its id unique
    new = hit[1].ravel(order="K").view(np.uint8)
    off = a.__array_interface__["data"][0] - lo
    out = np.ndarray(a.shape, a.dtype, buffer=new, offset=off, strides=a.strides)
    if not a.flags.writeable:
        out.flags.writeable = False
    return out


_UNSERIALIZED_HOOK = (
    "backward hook %r on tensor will not be serialized.  If this is expected, you can decorate "
    "the function with @torch.utils.hooks.unserializable_hook to suppress this warning"
)


def _warn_unpickled_hooks(t):
    hooks = t._hooks
    if t.grad_fn is not None:
        th = getattr(t.grad_fn, "_tensor_hooks", None)
        hooks = th.get(t._output_nr) if th else None
    for h in (hooks or {}).values():
        if not hasattr(h, "__torch_unserializable__"):
            warnings.warn(_UNSERIALIZED_HOOK % (h,), UserWarning, stacklevel=3)


# ---------------------------------------------------------------------------------------------
# Array helpers shared with creation.py (it imports them from here: creation sits above Tensor)


def _infer_dtype(data):
    """PyTorch's inference for nested Python data: bool < int64 < default float < complex."""
    kind = -1  # nothing seen: an empty list is the default float dtype
    stack = [data]
    while stack:
        d = stack.pop()
        if isinstance(d, Tensor):
            return None
        if isinstance(d, (list, tuple)):
            stack.extend(d)
        elif isinstance(d, (bool, np.bool_)):
            kind = max(kind, 0)
            continue
        elif isinstance(d, (numbers.Integral,)):
            kind = max(kind, 1)
        elif isinstance(d, numbers.Real):
            kind = max(kind, 2)
        elif isinstance(d, numbers.Complex):
            kind = max(kind, 3)
        else:
            raise TypeError("Could not infer dtype of %s" % type(d).__name__)
    if kind < 0:
        return _dt._default[0]
    return [_dt.bool, _dt.int64, _dt._default[0], _dt._default[0].to_complex()][kind]


def _host(arr):
    """``arr`` as a numpy array: itself on the CPU, a host copy of a CUDA tensor's data."""
    return arr.to_host() if type(arr) is DeviceArray else arr


def _to_array(data, dtype=None):
    dtype = _dt.as_dtype(dtype)
    if isinstance(data, Tensor):
        arr = _host(data._data)
    elif isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, np.generic):
        arr = np.asarray(data)
    else:
        inferred = _infer_dtype(data)
        if inferred is None:  # contains Tensors
            arr = np.array(_untensor(data))
        else:
            try:
                arr = np.array(data, dtype=(dtype or inferred).np)
            except ValueError as e:
                raise ValueError("expected sequence of equal-length lists: %s" % e) from None
            return arr
    if dtype is not None:
        arr = arr.astype(dtype.np)
    elif arr.dtype not in _dt._FROM_NP:
        arr = arr.astype(_dt.from_numpy_dtype(arr.dtype).np)
    return arr


def _untensor(d):
    if isinstance(d, Tensor):
        return d._data
    if isinstance(d, (list, tuple)):
        return [_untensor(x) for x in d]
    return d


def _bounds(a):
    """[lo, hi) byte addresses of ``a``'s elements."""
    lo = hi = a.__array_interface__["data"][0]
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


ERR_PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer "
    "to a single memory location. Please clone() the tensor before performing the operation."
)


def overlap_status(a, b):
    """ "no", "full" or "partial" for arrays ``a`` and ``b``: PyTorch's get_overlap_status
    (non-dense operands, whose overlap is 'too hard' to tell, count as no overlap, as there).
    In-place ops and ``out=`` refuse a "partial" operand."""
    if type(a) is DeviceArray or type(b) is DeviceArray:
        return _device_overlap(a, b)
    if a.size == 0 or b.size == 0 or not np.may_share_memory(a, b):
        return "no"
    if not _dense(a) or not _dense(b):
        return "no"
    (alo, ahi), (blo, bhi) = _bounds(a), _bounds(b)
    if alo == blo and ahi == bhi:
        return "full" if a.strides == b.strides else "partial"
    return "partial" if alo < bhi and blo < ahi else "no"


def _device_overlap(a, b):
    """``overlap_status`` of CUDA arrays: the same buffer and intersecting element extents."""
    if type(a) is not type(b) or a.size == 0 or b.size == 0 or a.buf is not b.buf:
        return "no"
    if not _dense(a) or not _dense(b):
        return "no"

    def extent(x):
        lo = hi = x.offset
        for n, st in zip(x.shape, x.estrides):
            if st < 0:
                lo += (n - 1) * st
            else:
                hi += (n - 1) * st
        return lo, hi + 1

    (alo, ahi), (blo, bhi) = extent(a), extent(b)
    if alo == blo and ahi == bhi:
        return "full" if a.estrides == b.estrides else "partial"
    return "partial" if alo < bhi and blo < ahi else "no"


def view_positions(v, b):
    """Flat (C-order) index in base ``b`` of each element of view ``v`` (which shares its memory);
    any base layout (non-contiguous, permuted, negative strides).  Arrays ``v`` and ``b``."""
    if v.size == 0:
        return np.zeros(v.shape, np.int64)
    isz = b.itemsize
    if v.itemsize != isz or any(s % isz for s in b.strides + v.strides):
        raise RuntimeError(
            "nbgrad: in-place on a view whose element size differs from its base's "
            "(a dtype view) is not supported with autograd"
        )
    lo, hi = _bounds(b)
    vlo, vhi = _bounds(v)
    if vlo < lo or vhi > hi:
        raise RuntimeError("nbgrad: the view's memory is no longer inside its base's storage")
    vptr = v.__array_interface__["data"][0]
    vstr = tuple(s // isz * 8 for s in v.strides)
    as_strided = np.lib.stride_tricks.as_strided
    if b.flags.c_contiguous:
        lin = np.arange(b.size, dtype=np.int64)
        off = (vptr - lo) // isz
        return as_strided(lin[off:], shape=v.shape, strides=vstr).copy()
    buf = np.full((hi - lo) // isz, -1, np.int64)
    boff = (b.__array_interface__["data"][0] - lo) // isz
    bstr = tuple(s // isz * 8 for s in b.strides)
    as_strided(buf[boff:], shape=b.shape, strides=bstr)[...] = np.arange(b.size).reshape(b.shape)
    pos = as_strided(buf[(vptr - lo) // isz :], shape=v.shape, strides=vstr).copy()
    if pos.min() < 0:
        raise RuntimeError("nbgrad: the view's memory is no longer inside its base's storage")
    return pos


def _dense(a):
    """Dense and non-overlapping: a permutation of a contiguous layout (empty_like keeps it)."""
    if a.flags.c_contiguous or a.flags.f_contiguous:
        return True
    pairs = sorted((abs(s), n) for s, n in zip(a.strides, a.shape) if n != 1)
    expected = a.itemsize
    for s, n in pairs:
        if s != expected:
            return False
        expected *= n
    return True
