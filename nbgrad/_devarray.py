"""``DeviceArray``: the storage of a CUDA tensor -- a strided view of a 1-D numba device buffer.

NOTE [device storage]: a CUDA tensor's ``_data`` is a ``DeviceArray`` with the attributes the
CPU code reads from a numpy array (``shape dtype ndim size itemsize strides flags``), so the
metadata paths (shape checks, autograd bookkeeping, ``size()``, ``stride()``) are shared.  The
buffer is always a flat ``numba.cuda`` device array; ``shape``, element strides and ``offset``
make views views (``view``/``transpose``/``expand``/``narrow``/basic indexing copy nothing),
the same on a GPU and in the simulator (numba's own device arrays transpose only in 2-D and
cannot express stride 0, so nbgrad keeps its own metadata).  This module sits below the
tensor and imports no CUDA code; its methods that compute call up into
kernels/cuda/elementwise.py, which loads ``numba.cuda`` with the first CUDA op.  Kernels that
want dense operands call ``dense()`` (a view of the buffer when the layout already is C order,
else one strided copy kernel); elementwise kernels read strided operands directly
(kernels/cuda/elementwise.py).
"""

import math

import numpy as np

from .device import CPU, device as _device, same_device_error

__all__ = ["DeviceArray", "CUDA0", "c_strides"]

CUDA0 = _device("cuda", 0)


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "writeable")

    def __init__(self, c, f):
        self.c_contiguous = c
        self.f_contiguous = f
        self.writeable = True


def c_strides(shape):
    st = []
    acc = 1
    for s in reversed(shape):
        st.append(acc)
        acc *= max(int(s), 1)
    return tuple(reversed(st))


class DeviceArray:
    """A strided view (``shape``, element ``estrides``, ``offset``) of the flat device buffer
    ``buf`` holding elements of ``dtype``."""

    __slots__ = ("buf", "shape", "estrides", "offset", "dtype", "__weakref__")
    __array_ufunc__ = None  # numpy operators defer to ours (np.float32(2) * a -> __rmul__)

    def __init__(self, buf, shape, estrides=None, offset=0):
        self.buf = buf
        self.shape = tuple(int(s) for s in shape)
        self.estrides = c_strides(self.shape) if estrides is None else tuple(estrides)
        self.offset = int(offset)
        self.dtype = np.dtype(buf.dtype)

    # -- numpy-like metadata ------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def strides(self):  # bytes, as numpy's
        return tuple(s * self.dtype.itemsize for s in self.estrides)

    @property
    def device(self):
        return CUDA0

    @property
    def is_c_contiguous(self):
        if self.size <= 1:
            return True
        acc = 1
        for s, st in zip(reversed(self.shape), reversed(self.estrides)):
            if s != 1 and st != acc:
                return False
            acc *= s
        return True

    @property
    def flags(self):
        c = self.is_c_contiguous
        f = self.ndim <= 1 and c or self.transpose().is_c_contiguous
        return _Flags(c, f)

    def pointer(self):
        """The device address of the first element (under the simulator: the host address of
        the simulated buffer)."""
        buf = self.buf
        cai = getattr(buf, "__cuda_array_interface__", None)
        base = cai["data"][0] if cai is not None else buf._ary.__array_interface__["data"][0]
        return base + self.offset * self.itemsize

    def item(self):
        """The one element as a Python number (a device-to-host read)."""
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self.to_host().reshape(()).item()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __repr__(self):
        return "DeviceArray(shape=%s, dtype=%s, strides=%s, offset=%d)" % (
            self.shape,
            self.dtype,
            self.estrides,
            self.offset,
        )

    def __array__(self, dtype=None, copy=None):
        # numpy must never read device memory silently (PyTorch: "can't convert cuda:0 ...")
        raise TypeError(
            "can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
            "tensor to host memory first."
        )

    # -- views (no copy) ----------------------------------------------------------------
    def _like(self, shape, estrides, offset):
        return DeviceArray(self.buf, shape, estrides, offset)

    def transpose(self, *axes):
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        if not axes:
            axes = tuple(range(self.ndim - 1, -1, -1))
        return self._like(
            [self.shape[a] for a in axes], [self.estrides[a] for a in axes], self.offset
        )

    @property
    def T(self):
        return self.transpose()

    def swapaxes(self, a, b):
        axes = list(range(self.ndim))
        axes[a], axes[b] = axes[b], axes[a]
        return self.transpose(axes)

    def broadcast_to(self, shape):
        shape = tuple(int(s) for s in shape)
        lead = len(shape) - self.ndim
        if lead < 0:
            raise ValueError("cannot broadcast to fewer dimensions")
        st = [0] * lead
        for i, (s, t) in enumerate(zip(self.shape, self.estrides)):
            want = shape[lead + i]
            if s == want:
                st.append(t)
            elif s == 1:
                st.append(0)
            else:
                raise ValueError(
                    "operands could not be broadcast together with shapes %s %s"
                    % (self.shape, shape)
                )
        return self._like(shape, st, self.offset)

    def view_shape(self, shape):
        """``reshape`` without a copy, or None when the strides cannot express it (numpy's
        attempt_nocopy_reshape: merge runs of dims that are contiguous with each other)."""
        shape = tuple(int(s) for s in shape)
        if math.prod(shape) != self.size:
            raise ValueError("cannot reshape array of size %d into shape %s" % (self.size, shape))
        if self.is_c_contiguous:
            return self._like(shape, c_strides(shape), self.offset)
        # numpy's nocopy-reshape rule on a metadata twin: a 1-byte buffer with these element
        # strides as byte strides (reshape with copy=False reads no memory; it raises when a
        # copy would be needed)
        twin = np.lib.stride_tricks.as_strided(
            np.zeros(1, np.uint8), self.shape, self.estrides, writeable=False
        )
        try:
            v = np.reshape(twin, shape, copy=False)
        except ValueError:
            return None
        return self._like(shape, v.strides, self.offset)

    # numpy's method names, so shape code written for arrays works on both (views only)
    def view(self, dtype=None):
        if dtype is not None and np.dtype(dtype) != self.dtype:
            raise RuntimeError("nbgrad: reinterpreting the dtype of a CUDA tensor is not supported")
        return self._like(self.shape, self.estrides, self.offset)

    def reshape(self, *shape):
        """numpy's reshape: a view when the strides allow one, else a dense copy."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if -1 in shape:
            known = math.prod(s for s in shape if s != -1)
            shape = tuple(self.size // known if s == -1 else s for s in shape)
        v = self.view_shape(shape)
        return v if v is not None else self.contiguous().view_shape(shape)

    def ravel(self):
        return self.reshape(self.size)

    def as_strided(self, shape, estrides):
        """A view with the same first element, ``shape`` and element ``estrides``."""
        return self._like(shape, estrides, self.offset)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        fixed = []
        d = 0
        for k in key:
            if k is None or k is Ellipsis or isinstance(k, slice):
                fixed.append(k)
                if isinstance(k, slice):
                    d += 1
                elif k is Ellipsis:
                    d = self.ndim - sum(1 for j in key[key.index(k) + 1 :] if j is not None)
                continue
            i = int(k)
            if i < 0:
                i += self.shape[d]
            if not 0 <= i < self.shape[d]:
                raise IndexError("index %d is out of bounds for dimension %d" % (int(k), d))
            fixed.append(i)
            d += 1
        return self.getitem_basic(tuple(fixed))

    def getitem_basic(self, key):
        """Basic indexing (ints, slices, None, Ellipsis) as a view; ints already wrapped
        and range-checked by the caller."""
        if not isinstance(key, tuple):
            key = (key,)
        n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
        if any(k is Ellipsis for k in key):
            i = key.index(Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - n_real) + key[i + 1 :]
        key = key + (slice(None),) * (self.ndim - sum(1 for k in key if k is not None))
        shape, st = [], []
        off = self.offset
        d = 0
        for k in key:
            if k is None:
                shape.append(1)
                st.append(0)
                continue
            if isinstance(k, slice):
                start, stop, step = k.indices(self.shape[d])
                n = len(range(start, stop, step))
                shape.append(n)
                st.append(self.estrides[d] * step)
                if n:
                    off += start * self.estrides[d]
            else:
                off += int(k) * self.estrides[d]
            d += 1
        return self._like(shape, st, off)

    # -- arithmetic (numpy's promotion; a kernel per expression) --------------------------
    def _binary(self, other, expr, swap=False):
        from .kernels.cuda.elementwise import run  # cycle: calls up into the CUDA path

        if isinstance(other, np.ndarray):
            if other.ndim:  # host data never joins a device computation silently
                raise same_device_error(CUDA0, CPU)
            other = other[()]
        if isinstance(other, np.generic):
            other = other.item()
        if isinstance(other, DeviceArray):
            dt = np.result_type(self.dtype, other.dtype)
        else:
            dt = np.result_type(self.dtype, other)
        vals = (other, self) if swap else (self, other)
        return run("array_" + expr, ("x", "y"), expr, dt.name, vals)

    def __add__(self, o):
        return self._binary(o, "x + y")

    def __radd__(self, o):
        return self._binary(o, "x + y", True)

    def __sub__(self, o):
        return self._binary(o, "x - y")

    def __rsub__(self, o):
        return self._binary(o, "x - y", True)

    def __mul__(self, o):
        return self._binary(o, "x * y")

    def __rmul__(self, o):
        return self._binary(o, "x * y", True)

    def __truediv__(self, o):
        return self._binary(o, "x / y")

    def __rtruediv__(self, o):
        return self._binary(o, "x / y", True)

    def __neg__(self):
        from .kernels.cuda.elementwise import run  # cycle: calls up into the CUDA path

        return run("array_neg", ("x",), "-x", self.dtype.name, (self,))

    def __setitem__(self, key, value):
        from .kernels.cuda.elementwise import assign  # cycle: calls up into the CUDA path

        if isinstance(value, np.ndarray):
            if value.ndim:  # host data never joins a device array silently
                raise same_device_error(CUDA0, CPU)
            value = value[()]
        if isinstance(value, np.generic):
            value = value.item()
        assign(self[key] if key is not Ellipsis else self, value)

    # -- data movement ------------------------------------------------------------------
    def dense(self):
        """C-contiguous numba device array of ``shape`` (a view of the buffer when the layout
        already is C order): the form kernels with fixed layouts take."""
        if self.is_c_contiguous:
            n = self.size
            return self.buf[self.offset : self.offset + n].reshape(self.shape)
        return self.contiguous().dense()

    def contiguous(self):
        if self.is_c_contiguous:
            return self
        from .kernels.cuda.elementwise import copy_strided  # cycle: kernels build on it

        return copy_strided(self, self.dtype)

    def astype(self, dtype, copy=True):
        dtype = np.dtype(dtype)
        if dtype == self.dtype and not copy:
            return self
        from .kernels.cuda.elementwise import copy_strided  # cycle: calls up into the CUDA path

        return copy_strided(self, dtype)

    def copy(self):
        return self.astype(self.dtype)

    def to_host(self):
        """A numpy copy (C order)."""
        d = self.contiguous()
        n = d.size
        if n == 0:
            return np.empty(d.shape, d.dtype)
        return d.buf[d.offset : d.offset + n].copy_to_host().reshape(d.shape)
