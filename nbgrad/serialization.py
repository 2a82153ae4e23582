"""``nbgrad.save`` / ``nbgrad.load``: tensors, state dicts and nested containers, no pickle.

``nbgrad.load`` also reads PyTorch checkpoints (``torch.save``'s zip) and ``nbgrad.save(obj, f,
format="torch")`` writes them: see _torch_format.py (a restricted reader, never ``pickle``).

The file format is documented in docs/serialization.md.  In short::

    preamble (48 bytes)  magic, format version, header/data lengths, CRC32s
    header   (JSON)      the nested structure; tensors are references into a table
    padding              zeros up to a 64-byte boundary
    data                 each tensor's elements, C order, little-endian, 64-byte aligned

Loading never executes code: the header is parsed by ``json`` and only the closed set of types
listed in ``_DECODERS`` can be produced; there is no way for a file to name a class or function.
"""

from __future__ import annotations

import base64
import collections
import io
import json
import math
import os
import struct
import zlib
from typing import Any, BinaryIO

import numpy as np

from ._tensor import Tensor
from .device import as_device, device, device as _device
from .dtypes import _NAMES, dtype as _dtype

__all__ = ["save", "load", "FORMAT_VERSION", "MAGIC"]

MAGIC = b"\x89NBG\r\n\x1a\n"  # non-ASCII first byte and CR LF / Ctrl-Z / LF, as PNG does
FORMAT_VERSION = 1
ALIGN = 64
_PREAMBLE = struct.Struct("<8sIIQQIII4x")  # magic ver flags hlen dlen hcrc dcrc pcrc (pad)
PREAMBLE_SIZE = _PREAMBLE.size  # 48
_PCRC_SPAN = 40  # the preamble CRC covers bytes [0, 40)
_MAX_HEADER = 1 << 31
_CHUNK = 1 << 24

# dtype name -> little-endian numpy dtype of the stored elements
_DTYPES = {
    "float16": "<f2",
    "float32": "<f4",
    "float64": "<f8",
    "complex64": "<c8",
    "complex128": "<c16",
    "int8": "i1",
    "int16": "<i2",
    "int32": "<i4",
    "int64": "<i8",
    "uint8": "u1",
    "bool": "|b1",
}


# NOTE [lazy imports]: ``import nbgrad`` loads neither nn nor the torch-format reader; save and
# load import them on first use (docs/performance.md, "import time").
def _parameter_class():
    from .nn.parameter import Parameter  # lazy: import nbgrad does not load nn

    return Parameter


def _torch_format():
    from . import _torch_format as tf  # lazy: only .pt files need it

    return tf


# ------------------------------------------------------------------------------------------
# save


def save(
    obj: Any,
    f: str | os.PathLike[str] | BinaryIO,
    pickle_module: Any = None,
    pickle_protocol: int | None = None,
    _use_new_zipfile_serialization: bool = True,
    _disable_byteorder_record: bool = False,
    *,
    format: str = "nbgrad",
) -> None:
    """Save ``obj`` (a Tensor, or None/bool/int/float/complex/str/bytes, dtype, device, numpy
    array, or a dict/OrderedDict/list/tuple nesting of those) to ``f`` (a path or a writable
    binary file object).  The PyTorch-only keyword arguments are accepted and ignored.

    ``format="torch"`` writes PyTorch's checkpoint format instead (what ``torch.save`` writes,
    read by ``torch.load(f, weights_only=True)``; also sets and torch.Size, but no numpy
    arrays); ``nbgrad.load`` reads both."""
    if format == "torch":
        if _is_path(f):
            with open(os.fspath(f), "wb") as fh:
                _torch_format().save(obj, fh)
        else:
            if not hasattr(f, "write"):
                raise AttributeError("'%s' object has no attribute 'write'" % type(f).__name__)
            _torch_format().save(obj, f)
        return
    if format != "nbgrad":
        raise ValueError("nbgrad.save: format must be 'nbgrad' or 'torch', got %r" % (format,))
    enc = _Encoder()
    root = enc.encode(obj)
    header = json.dumps(
        {
            "format": "nbgrad",
            "version": FORMAT_VERSION,
            "byteorder": "little",
            "root": root,
            "tensors": enc.entries,
        },
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    ).encode("utf-8")
    data_start = _align(PREAMBLE_SIZE + len(header))
    data_len = enc.data_len
    dcrc = 0
    pos = 0
    for arr, off in zip(enc.arrays, enc.offsets):
        if off > pos:
            dcrc = zlib.crc32(bytes(off - pos), dcrc)
        dcrc = zlib.crc32(_as_bytes(arr), dcrc)
        pos = off + arr.nbytes
    if data_len > pos:
        dcrc = zlib.crc32(bytes(data_len - pos), dcrc)
    hcrc = zlib.crc32(header)
    pre = bytearray(_PREAMBLE.pack(MAGIC, FORMAT_VERSION, 0, len(header), data_len, hcrc, dcrc, 0))
    struct.pack_into("<I", pre, _PCRC_SPAN, zlib.crc32(bytes(pre[:_PCRC_SPAN])))

    def write(fh):
        fh.write(bytes(pre))
        fh.write(header)
        fh.write(bytes(data_start - PREAMBLE_SIZE - len(header)))
        pos = 0
        for arr, off in zip(enc.arrays, enc.offsets):
            if off > pos:
                fh.write(bytes(off - pos))
            fh.write(_as_bytes(arr))
            pos = off + arr.nbytes
        if data_len > pos:
            fh.write(bytes(data_len - pos))

    if _is_path(f):
        with open(os.fspath(f), "wb") as fh:
            write(fh)
    else:
        if not hasattr(f, "write"):
            raise AttributeError("'%s' object has no attribute 'write'" % type(f).__name__)
        write(f)


def _align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


def _as_bytes(arr):
    """The raw bytes of a C-contiguous array, without a copy."""
    return arr.reshape(-1).view(np.uint8) if arr.size else b""


class _Encoder:
    def __init__(self):
        self.entries = []  # the "tensors" table of the header
        self.arrays = []  # matching little-endian contiguous arrays
        self.offsets = []
        self.data_len = 0
        self._tensor_ids = {}  # id(tensor) -> index (a tensor saved twice is stored once)
        self._keep = []  # keeps objects alive so ids stay unique while encoding
        self._active = set()  # containers on the current path (cycle detection)

    def _add_array(self, arr, entry):
        le = np.dtype(_DTYPES[entry["dtype"]])
        a = np.asarray(arr, dtype=le)
        if not a.flags.c_contiguous:
            a = a.copy(order="C")
        off = _align(self.data_len)
        entry["offset"] = off
        entry["nbytes"] = int(a.nbytes)
        self.entries.append(entry)
        self.arrays.append(a)
        self.offsets.append(off)
        self.data_len = off + a.nbytes
        return len(self.entries) - 1

    def encode(self, obj):
        if obj is None:
            return {"type": "none"}
        if obj is True or obj is False:
            return {"type": "bool", "value": obj}
        if isinstance(obj, Tensor):
            return {"type": "tensor", "index": self._tensor(obj)}
        t = type(obj)
        if t is int:
            return {"type": "int", "value": obj}
        if t is float:
            return {"type": "float", "value": obj.hex()}
        if t is complex:
            return {"type": "complex", "real": obj.real.hex(), "imag": obj.imag.hex()}
        if t is str:
            return {"type": "str", "value": obj}
        if t in (bytes, bytearray):
            return {"type": "bytes", "value": base64.b64encode(bytes(obj)).decode("ascii")}
        if isinstance(obj, _dtype):
            return {"type": "dtype", "value": obj.name}
        if isinstance(obj, _device):
            return {"type": "device", "value": str(obj)}
        if isinstance(obj, np.ndarray):
            return self._ndarray(obj)
        if isinstance(obj, (np.generic,)) and obj.dtype.name in _DTYPES:
            return {
                "type": "ndarray",
                "index": self._add_array(
                    np.asarray(obj), {"dtype": obj.dtype.name, "shape": [], "scalar": True}
                ),
            }
        if t in (list, tuple, dict, collections.OrderedDict):
            if id(obj) in self._active:
                raise ValueError("nbgrad.save: cannot save a self-referencing container")
            self._active.add(id(obj))
            try:
                if t is list or t is tuple:
                    return {"type": t.__name__, "items": [self.encode(v) for v in obj]}
                node = {
                    "type": "dict" if t is dict else "ordered_dict",
                    "items": [[self._key(k), self.encode(v)] for k, v in obj.items()],
                }
                meta = getattr(obj, "_metadata", None)
                if meta is not None:
                    node["metadata"] = self.encode(meta)
                return node
            finally:
                self._active.discard(id(obj))
        raise TypeError(
            "nbgrad.save: cannot save an object of type %s.%s; supported are "
            "Tensor, Parameter, None, bool, int, float, complex, str, bytes, dtype, "
            "device, numpy arrays and dict/OrderedDict/list/tuple of them"
            % (t.__module__, t.__qualname__)
        )

    def _key(self, k):
        if k is None or type(k) in (bool, int, float, complex, str, bytes):
            return self.encode(k)
        if type(k) is tuple:
            return {"type": "tuple", "items": [self._key(v) for v in k]}
        raise TypeError(
            "nbgrad.save: dict keys must be None, bool, int, float, complex, str, "
            "bytes or tuples of them, got %s" % type(k).__name__
        )

    def _tensor(self, t):
        idx = self._tensor_ids.get(id(t))
        if idx is not None:
            return idx
        arr = t._data
        if type(arr) is not np.ndarray:  # a CUDA tensor: its data, read back to the host
            arr = arr.to_host()
        name = t._dtype.name
        if name not in _DTYPES:  # pragma: no cover - every nbgrad dtype is listed
            raise TypeError("nbgrad.save: unsupported dtype %s" % t._dtype)
        entry = {
            "dtype": name,
            "shape": list(arr.shape),
            "requires_grad": bool(t._requires_grad),
            "kind": "parameter" if isinstance(t, _parameter_class()) else "tensor",
        }
        if t.is_cuda:
            entry["device"] = str(t.device)
        idx = self._add_array(arr, entry)
        self._tensor_ids[id(t)] = idx
        self._keep.append(t)
        return idx

    def _ndarray(self, a):
        if a.dtype.name not in _DTYPES:
            raise TypeError("nbgrad.save: cannot save a numpy array of dtype %s" % a.dtype)
        idx = self._add_array(a, {"dtype": a.dtype.name, "shape": list(a.shape)})
        return {"type": "ndarray", "index": idx}


def _is_path(f):
    return isinstance(f, (str, bytes, os.PathLike))


# ------------------------------------------------------------------------------------------
# load


def load(
    f: str | os.PathLike[str] | BinaryIO,
    map_location: Any = None,
    pickle_module: Any = None,
    *,
    weights_only: bool = True,
    mmap: bool | None = None,
    **pickle_load_args: Any,
) -> Any:
    """Load an object written by :func:`save` (either format) or by ``torch.save`` from ``f``
    (a path or a readable binary file).

    Nothing in the file can cause code to run: only the types listed in docs/serialization.md
    are produced (a PyTorch file is read under ``torch.load(weights_only=True)``'s rules; what
    they refuse raises ``pickle.UnpicklingError``).  ``weights_only`` is accepted for PyTorch
    compatibility; loading is always "weights only".  ``map_location`` may be None, a device or
    device string, a dict mapping a saved location (``"cpu"``, ``"cuda:0"``) to a device, or a
    callable ``(tensor, location) -> tensor or None``.

    A file that is not an nbgrad file, is truncated, or fails a checksum raises RuntimeError.
    """
    if _is_path(f):
        name = os.fsdecode(f) if not isinstance(f, str) else f
        with open(name, "rb") as fh:
            size = None
            try:
                size = os.fstat(fh.fileno()).st_size
            except (OSError, AttributeError, io.UnsupportedOperation):  # pragma: no cover
                pass
            return _load(fh, repr(name), size, map_location)
    if not hasattr(f, "read"):
        raise AttributeError("'%s' object has no attribute 'read'" % type(f).__name__)
    label = (
        repr(getattr(f, "name", None))
        if isinstance(getattr(f, "name", None), str)
        else "the file object"
    )
    return _load(f, label, _remaining(f), map_location)


def _remaining(fh):
    """The bytes left in a seekable stream (what its lengths are checked against), or None for
    one whose size cannot be known (a pipe, a socket): that one is read in bounded chunks."""
    try:
        if not fh.seekable():
            return None
        pos = fh.tell()
        end = fh.seek(0, os.SEEK_END)
    except Exception:  # noqa: BLE001 - any stream that cannot say is read in chunks
        return None
    fh.seek(pos)
    return end - pos if isinstance(end, int) and end >= pos else None


def _read_exact(fh, n, label, what):
    """Read exactly n bytes or raise the 'truncated' error.  The buffer grows with what
    arrives (one chunk at a time), so a forged length cannot make it allocate more."""
    parts = []
    for done, k in _chunks(n):
        buf = bytearray(k)
        _readinto_exact(fh, memoryview(buf), label, what, done, n)
        parts.append(buf)
    return b"".join(parts)


def _skip(fh, n, crc, label, what):
    """Read and checksum n bytes that are not kept (padding); returns the updated CRC."""
    for done, k in _chunks(n):
        buf = bytearray(k)
        _readinto_exact(fh, memoryview(buf), label, what, done, n)
        crc = zlib.crc32(buf, crc)
    return crc


def _chunks(n):
    done = 0
    while done < n:
        k = min(_CHUNK, n - done)
        yield done, k
        done += k


def _readinto_exact(fh, view, label, what, before=0, total=None):
    """Fill ``view`` or raise 'truncated' (``before``/``total``: where this part lies in a read
    of ``total`` bytes, for the message)."""
    n = len(view)
    got = 0
    readinto = getattr(fh, "readinto", None)
    while got < n:
        if readinto is not None:
            k = readinto(view[got : got + _CHUNK])
        else:
            chunk = fh.read(min(_CHUNK, n - got))
            k = len(chunk) if chunk else 0
            if k:
                view[got : got + k] = chunk
        if not k:
            raise RuntimeError(
                "%s is truncated: expected %d bytes of %s but the file ended "
                "after %d; it was not completely written or was cut short"
                % (label, n if total is None else total, what, before + got)
            )
        got += k


def _read_array(fh, dt, shape, nbytes, known, label):
    """One tensor's elements.  ``known``: the stream was checked to hold them, so the array is
    allocated first and read into; otherwise the bytes are read in chunks first."""
    if known or nbytes <= _CHUNK:
        arr = np.empty(shape, dtype=dt)
        if nbytes:
            _readinto_exact(fh, memoryview(arr.reshape(-1).view(np.uint8)), label, "tensor data")
        return arr
    raw = _read_exact(fh, nbytes, label, "tensor data")
    arr = np.empty(shape, dtype=dt)
    arr.reshape(-1).view(np.uint8)[:] = np.frombuffer(raw, np.uint8)
    return arr


def _not_nbgrad(label, head):
    hint = ""
    if head[:1] == b"\x80" or head[:2] in (b"(d", b"(l", b"}q", b"]q", b"cc"):
        hint = (
            " (it looks like a Python pickle, e.g. a PyTorch file saved with "
            "_use_new_zipfile_serialization=False; nbgrad.load never unpickles because "
            "unpickling can run arbitrary code: re-save it with a current torch.save)"
        )
    elif not head:
        hint = " (the file is empty)"
    return RuntimeError(
        "%s is not an nbgrad file: it does not start with the nbgrad magic number%s" % (label, hint)
    )


def _load(fh, label, size, map_location):
    # -- preamble ----------------------------------------------------------------------
    first = fh.read(PREAMBLE_SIZE) or b""
    if first[:4] == b"PK\x03\x04":  # a zip: torch.save's format
        return _torch_format().load(fh, first, label, map_location)
    if len(first) < len(MAGIC):
        if first and MAGIC.startswith(first):
            raise RuntimeError("%s is truncated: it ends inside the nbgrad preamble" % label)
        raise _not_nbgrad(label, first)
    if first[: len(MAGIC)] != MAGIC:
        raise _not_nbgrad(label, first)
    if len(first) < PREAMBLE_SIZE:
        rest = bytearray(PREAMBLE_SIZE - len(first))
        _readinto_exact(fh, memoryview(rest), label, "preamble")
        first = first + bytes(rest)
    _, version, flags, hlen, dlen, hcrc, dcrc, pcrc = _PREAMBLE.unpack(first)
    if zlib.crc32(first[:_PCRC_SPAN]) != pcrc:
        raise RuntimeError("%s is corrupted: checksum mismatch in the preamble" % label)
    if version > FORMAT_VERSION or version < 1:
        raise RuntimeError(
            "%s uses nbgrad file format version %d; this nbgrad reads version %d "
            "(upgrade nbgrad)" % (label, version, FORMAT_VERSION)
        )
    if flags != 0:
        raise RuntimeError("%s uses unsupported format flags %#x" % (label, flags))
    if hlen > _MAX_HEADER:
        raise RuntimeError("%s is corrupted: header length %d is implausible" % (label, hlen))
    data_start = _align(PREAMBLE_SIZE + hlen)
    if size is not None and size < data_start + dlen:
        raise RuntimeError(
            "%s is truncated: its header says %d bytes but the file has %d"
            % (label, data_start + dlen, size)
        )
    # -- header ------------------------------------------------------------------------
    header = _read_exact(fh, hlen, label, "header")
    if zlib.crc32(header) != hcrc:
        raise RuntimeError("%s is corrupted: checksum mismatch in the header" % label)
    try:
        doc = json.loads(header.decode("utf-8"))
    except RecursionError:
        raise RuntimeError("%s is corrupted: the structure is nested too deeply" % label) from None
    except (UnicodeDecodeError, ValueError) as e:
        raise RuntimeError(
            "%s is corrupted: the header is not valid JSON (%s)" % (label, e)
        ) from None
    if (
        not isinstance(doc, dict)
        or doc.get("format") != "nbgrad"
        or "root" not in doc
        or not isinstance(doc.get("tensors"), list)
    ):
        raise RuntimeError("%s is corrupted: malformed header" % label)
    _read_exact(fh, data_start - PREAMBLE_SIZE - hlen, label, "header padding")
    # -- data: read each array straight into its own buffer, checksumming as we go ------
    entries = [_check_entry(e, dlen, label) for e in doc["tensors"]]
    order = sorted(range(len(entries)), key=lambda i: entries[i][2])
    arrays = [None] * len(entries)
    crc, pos = 0, 0
    for i in order:
        dt, shape, off, nbytes = entries[i]
        if off < pos:
            raise RuntimeError("%s is corrupted: overlapping tensor data" % label)
        if off > pos:
            crc = _skip(fh, off - pos, crc, label, "tensor data")
        arr = _read_array(fh, dt, shape, nbytes, size is not None, label)
        if nbytes:
            crc = zlib.crc32(memoryview(arr.reshape(-1).view(np.uint8)), crc)
        arrays[i] = arr
        pos = off + nbytes
    if dlen > pos:
        crc = _skip(fh, dlen - pos, crc, label, "tensor data")
    if crc != dcrc:
        raise RuntimeError("%s is corrupted: checksum mismatch in the tensor data" % label)
    dec = _Decoder(doc["tensors"], arrays, label, map_location)
    try:
        return dec.decode(doc["root"])
    except RecursionError:
        raise RuntimeError("%s is corrupted: the structure is nested too deeply" % label) from None


def _check_entry(e, dlen, label):
    bad = RuntimeError("%s is corrupted: malformed tensor entry in the header" % label)
    if not isinstance(e, dict) or e.get("dtype") not in _DTYPES:
        raise bad
    shape, off, nbytes = e.get("shape"), e.get("offset"), e.get("nbytes")
    if (
        not isinstance(shape, list)
        or len(shape) > 64  # numpy's (and PyTorch's practical) limit
        or not all(type(s) is int and 0 <= s < 2**63 for s in shape)
    ):
        raise bad
    if type(off) is not int or type(nbytes) is not int or off < 0 or nbytes < 0:
        raise bad
    dt = np.dtype(_DTYPES[e["dtype"]])
    if math.prod(shape) * dt.itemsize != nbytes or off + nbytes > dlen:
        raise bad
    if nbytes == 0 and math.prod(s or 1 for s in shape) * dt.itemsize >= 2**63:
        raise bad  # an empty array whose other dims numpy cannot represent
    return dt, tuple(shape), off, nbytes


class _Decoder:
    def __init__(self, entries, arrays, label, map_location):
        self.entries = entries
        self.arrays = arrays
        self.label = label
        self.map_location = map_location
        self.tensors = {}  # index -> Tensor (a tensor referenced twice loads as one object)

    def bad(self, why):
        return RuntimeError("%s is corrupted: %s" % (self.label, why))

    def index(self, node):
        i = node.get("index")
        if type(i) is not int or not 0 <= i < len(self.arrays):
            raise self.bad("tensor reference out of range")
        return i

    def decode(self, node):
        if not isinstance(node, dict):
            raise self.bad("malformed node in the header")
        fn = _DECODERS.get(node.get("type"))
        if fn is None:
            raise self.bad(
                "unknown object type %r in the header (nbgrad.load only builds "
                "tensors and plain containers)" % (node.get("type"),)
            )
        try:
            return fn(self, node)
        except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
            raise self.bad("malformed %r node in the header (%s)" % (node.get("type"), e)) from None

    def tensor(self, node):
        i = self.index(node)
        t = self.tensors.get(i)
        if t is not None:
            return t
        e = self.entries[i]
        t = Tensor._make(_native(self.arrays[i]))
        t = self._map(t, str(e.get("device", "cpu")))
        rg = e.get("requires_grad", False) is True and t._dtype.is_inexact
        if e.get("kind") == "parameter":
            t = _parameter_class()(t, requires_grad=rg)
        elif rg:
            t.requires_grad_(True)
        self.tensors[i] = t
        return t

    def _map(self, t, location="cpu"):
        """``t`` (read into host memory) where ``map_location`` sends a tensor saved at
        ``location``: by default where it was saved (PyTorch's error when that is CUDA and no
        CUDA device is available)."""
        ml = self.map_location
        if callable(ml) and not isinstance(ml, str):
            r = ml(t, location)
            return t if r is None else r
        if isinstance(ml, dict):
            ml = ml.get(location, location)
        target = location if ml is None else ml
        d = as_device(target)
        if d.type == "cuda" and ml is None:
            from . import cuda  # lazy: nbgrad.cuda loads numba.cuda

            if not cuda.is_available():
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but "
                    "torch.cuda.is_available() is False. If you are running on a CPU-only "
                    "machine, please use torch.load with map_location=torch.device('cpu') to "
                    "map your storages to the CPU."
                )
        return t if d.type == "cpu" else t.to(d)

    def ndarray(self, node):
        i = self.index(node)
        a = _native(self.arrays[i])
        if self.entries[i].get("scalar") is True:
            return a[()]
        return a

    def float_(self, node):
        return float.fromhex(_str(node["value"]))

    def dict_(self, node, cls=dict):
        out = cls()
        for pair in node["items"]:
            if not isinstance(pair, list) or len(pair) != 2:
                raise ValueError("dict items must be [key, value] pairs")
            out[self.key(pair[0])] = self.decode(pair[1])
        if "metadata" in node:
            out._metadata = self.decode(node["metadata"])
        return out

    def key(self, node):
        v = self.decode(node)
        if isinstance(v, list):
            raise ValueError("a dict key cannot be a list")
        hash(v)
        return v


def _native(arr):
    """Stored data is little-endian; a big-endian host converts it on load."""
    return arr if arr.dtype.isnative else arr.astype(arr.dtype.newbyteorder("="))


def _str(v):
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _int(v):
    if type(v) is not int:
        raise TypeError("expected an integer")
    return v


def _bool(v):
    if type(v) is not bool:
        raise TypeError("expected a boolean")
    return v


def _items(node):
    items = node["items"]
    if not isinstance(items, list):
        raise TypeError("items must be a list")
    return items


def _dtype_node(dec, node):
    return _NAMES[_str(node["value"])]


def _device_node(dec, node):
    try:
        return device(_str(node["value"]))
    except RuntimeError as e:  # not a device string
        raise ValueError(str(e)) from None


def _tuple_node(dec, node):
    return tuple(dec.decode(v) for v in _items(node))


_DECODERS = {
    "none": lambda dec, node: None,
    "bool": lambda dec, node: _bool(node["value"]),
    "int": lambda dec, node: _int(node["value"]),
    "float": _Decoder.float_,
    "complex": lambda dec, node: complex(
        float.fromhex(_str(node["real"])), float.fromhex(_str(node["imag"]))
    ),
    "str": lambda dec, node: _str(node["value"]),
    "bytes": lambda dec, node: base64.b64decode(_str(node["value"]).encode("ascii"), validate=True),
    "list": lambda dec, node: [dec.decode(v) for v in _items(node)],
    "tuple": _tuple_node,
    "dict": lambda dec, node: dec.dict_(node, dict),
    "ordered_dict": lambda dec, node: dec.dict_(node, collections.OrderedDict),
    "tensor": _Decoder.tensor,
    "ndarray": _Decoder.ndarray,
    "dtype": _dtype_node,
    "device": _device_node,
}
