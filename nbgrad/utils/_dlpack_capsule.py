"""DLPack capsules by hand (ctypes), for memory numpy cannot export or import: CUDA tensors.

numpy implements DLPack for host memory, and nbgrad's CPU tensors use it. A CUDA tensor's
buffer is device memory, so nbgrad builds the ``DLManagedTensor`` itself (``export``) and reads
one from any producer (``read``): the structure is the same for every device, only
``device_type`` differs (kDLCPU = 1, kDLCUDA = 2), which is what lets tests check this module
with host memory against numpy's own DLPack (tests/test_dlpack.py).  Layout: DLPack 0.8
(``dlpack.h``), the legacy unversioned capsule named ``"dltensor"``; a consumer renames it
``"used_dltensor"`` and calls the deleter when done with the memory.
"""

import ctypes

import numpy as np

__all__ = ["export", "read", "KDL_CPU", "KDL_CUDA"]

KDL_CPU, KDL_CUDA = 1, 2
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}  # kDLInt, kDLUInt, kDLFloat, kDLComplex, kDLBool
_KINDS = {v: k for k, v in _CODES.items()}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _Managed(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [
    ("dl_tensor", _Tensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

_LIVE = {}  # address of a DLManagedTensor we exported -> what keeps its memory alive


@_DELETER
def _delete(managed):
    _LIVE.pop(ctypes.addressof(managed.contents), None)


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


# raw-pointer twins of the capsule API for the destructor: the capsule is being freed there, so
# it must not be turned back into a Python object (a new reference to a dying object)
_raw_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_raw_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)


@_CAPSULE_DESTRUCTOR
def _destroy_capsule(capsule):
    # an unconsumed capsule (still named "dltensor") owns its tensor: free it (dlpack.h)
    if _raw_is_valid(capsule, b"dltensor"):
        ptr = _raw_get_pointer(capsule, b"dltensor")
        _delete(ctypes.cast(ptr, ctypes.POINTER(_Managed)))


def export(data_ptr, shape, strides, dtype, device_type, device_id, owner):
    """A ``"dltensor"`` capsule for memory at ``data_ptr`` (element ``strides``), kept alive by
    ``owner`` until the consumer calls the deleter (or the capsule dies unconsumed)."""
    dtype = np.dtype(dtype)
    nd = len(shape)
    shp = (ctypes.c_int64 * max(nd, 1))(*shape)
    st = (ctypes.c_int64 * max(nd, 1))(*strides)
    m = _Managed()
    m.dl_tensor.data = data_ptr
    m.dl_tensor.device = _Device(device_type, device_id)
    m.dl_tensor.ndim = nd
    m.dl_tensor.dtype = _DType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    m.dl_tensor.shape = ctypes.cast(shp, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.strides = ctypes.cast(st, ctypes.POINTER(ctypes.c_int64))
    m.dl_tensor.byte_offset = 0
    m.deleter = _delete
    _LIVE[ctypes.addressof(m)] = (m, shp, st, owner)
    return _api.PyCapsule_New(
        ctypes.addressof(m), b"dltensor", ctypes.cast(_destroy_capsule, ctypes.c_void_p)
    )


class Imported:
    """What ``read`` found: the memory's address, shape, element strides, dtype and device;
    ``release()`` (or garbage collection) hands the memory back to the producer."""

    def __init__(self, managed):
        t = managed.contents.dl_tensor
        self._managed = managed
        self.device_type, self.device_id = t.device.device_type, t.device.device_id
        code, bits, lanes = t.dtype.code, t.dtype.bits, t.dtype.lanes
        if lanes != 1 or code not in _KINDS:
            raise BufferError("DLPack dtype (code %d, %d bits, %d lanes) is not supported"
                              % (code, bits, lanes))  # fmt: skip
        self.dtype = np.dtype("?" if code == 6 else "%s%d" % (_KINDS[code], bits // 8))
        self.shape = tuple(t.shape[i] for i in range(t.ndim))
        if t.strides:
            self.strides = tuple(t.strides[i] for i in range(t.ndim))
        else:  # NULL strides: C order
            acc, st = 1, []
            for n in reversed(self.shape):
                st.append(acc)
                acc *= n
            self.strides = tuple(reversed(st))
        self.ptr = (t.data or 0) + t.byte_offset

    def release(self):
        m, self._managed = self._managed, None
        if m is not None and m.contents.deleter:
            m.contents.deleter(m)

    def __del__(self):
        self.release()


def read(capsule):
    """Take ownership of a ``"dltensor"`` capsule (renamed ``"used_dltensor"``, as dlpack.h
    asks of a consumer) and describe its memory."""
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        raise BufferError("not an unconsumed DLPack capsule ('dltensor')")
    ptr = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    return Imported(ctypes.cast(ptr, ctypes.POINTER(_Managed)))
