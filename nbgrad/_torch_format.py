"""PyTorch's checkpoint format (``torch.save``'s zip) for ``nbgrad.load`` and
``nbgrad.save(obj, f, format="torch")``.  PyTorch is never imported.

The archive holds ``<name>/data.pkl`` (a protocol-2 pickle of the object), one record
``<name>/data/<key>`` per storage (raw elements), and small records (``byteorder``, ``version``).
Tensors in the pickle are calls to ``torch._utils._rebuild_tensor_v2(storage, offset, size,
stride, requires_grad, hooks)`` whose storage is a persistent id ``("storage", <type>, key,
location, numel)``; tensors that are views of one storage share it.

Reading follows PyTorch's ``weights_only=True`` unpickler (torch/_weights_only_unpickler.py): an
interpreter of a closed set of opcodes that resolves globals from an allow-list (tensor rebuild
functions, Parameter, OrderedDict/Counter, set/complex/bytes/bytearray, torch.Size/device and
dtypes) to nbgrad's own objects; anything else raises ``pickle.UnpicklingError`` and nothing is
called.  Every length is checked against the bytes that exist before anything is allocated.
"""

import collections
import io
import math
import os
import pickle
import struct
import sys
import zipfile

import numpy as np

from . import dtypes as _dt
from ._tensor import Size, Tensor, _bounds, _owner
from .device import as_device, check_device, device as _device
from .nn.parameter import Parameter

__all__ = ["load", "save"]

# nbgrad dtype name <-> PyTorch's typed storage class (torch.FloatStorage, ...)
_STORAGE = {
    "float32": "FloatStorage",
    "float64": "DoubleStorage",
    "float16": "HalfStorage",
    "complex64": "ComplexFloatStorage",
    "complex128": "ComplexDoubleStorage",
    "int8": "CharStorage",
    "int16": "ShortStorage",
    "int32": "IntStorage",
    "int64": "LongStorage",
    "uint8": "ByteStorage",
    "bool": "BoolStorage",
}
# PyTorch dtypes / storages nbgrad has no dtype for: refused by name
_FOREIGN_DTYPES = {
    "bfloat16", "uint16", "uint32", "uint64", "complex32", "chalf", "qint8", "quint8", "qint32",
    "quint4x2", "quint2x4", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "float8_e8m0fnu", "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2",
}  # fmt: skip
_FOREIGN_STORAGES = {"BFloat16Storage", "ComplexHalfStorage", "QInt8Storage", "QUInt8Storage",
                     "QInt32Storage", "QUInt4x2Storage", "QUInt2x4Storage"}  # fmt: skip
_CHUNK = 1 << 24


# ------------------------------------------------------------------------------------------
# reading


class _StorageType:
    """What ``torch.FloatStorage`` etc. (and ``torch.storage.UntypedStorage``) resolve to."""

    def __init__(self, dtype):
        self.dtype = dtype  # an nbgrad dtype, or None for untyped (bytes)


class _Storage:
    """One ``data/<key>`` record: its bytes, element dtype (None: untyped) and location."""

    def __init__(self, raw, dtype, location):
        self.raw, self.dtype, self.location = raw, dtype, location
        self.swapped = set()  # dtypes already byte-swapped in place (a big-endian file)


def _refuse(what):
    return pickle.UnpicklingError(
        "Weights only load failed: %s. nbgrad.load reads what torch.load(weights_only=True) "
        "reads (tensors, Parameters, state dicts, containers, primitive types) and never runs "
        "code from a file." % what
    )


def _unsupported_global(path):
    return _refuse(
        "Unsupported global: GLOBAL %s was not an allowed global by default (it is not a "
        "tensor, container or primitive type)" % path
    )


class _Loader:
    def __init__(self, zf, prefix, label, map_location, byteorder, end):
        self.zf, self.prefix, self.label = zf, prefix, label
        self.map_location = map_location
        self.swap = byteorder != sys.byteorder
        self.end = end  # the file's size: no record can hold more
        self.storages = {}
        self.funcs = ()  # the tensor rebuild functions (_globals fills it)

    # -- persistent ids: storages -------------------------------------------------------
    def storage(self, pid):
        if type(pid) is not tuple or len(pid) != 5 or pid[0] != "storage":
            raise _refuse("persistent id %r is not a storage" % (pid,))
        _, stype, key, location, numel = pid
        if not isinstance(stype, _StorageType) or type(key) is not str or type(numel) is not int:
            raise _refuse("malformed storage persistent id %r" % (pid,))
        if type(location) is not str:
            raise _refuse("malformed storage location %r" % (location,))
        hit = self.storages.get(key)
        if hit is not None:
            return hit
        itemsize = stype.dtype.itemsize if stype.dtype is not None else 1
        if numel < 0 or numel * itemsize > self.end:
            raise self.bad("storage %s claims %d elements, more than the file holds" % (key, numel))
        raw = self.record("data/" + key, numel * itemsize)
        st = self.storages[key] = _Storage(raw, stype.dtype, location)
        return st

    def bad(self, why):
        return RuntimeError("%s is not a valid PyTorch checkpoint: %s" % (self.label, why))

    def record(self, name, nbytes):
        """The bytes of record ``name``, which must hold exactly ``nbytes``."""
        try:
            info = self.zf.getinfo(self.prefix + name)
        except KeyError:
            raise self.bad("record %r is missing" % name) from None
        if info.compress_type != zipfile.ZIP_STORED:
            raise self.bad("record %r is compressed (torch.save stores records)" % name)
        if info.file_size != nbytes or info.compress_size != nbytes:
            raise self.bad("record %r holds %d bytes, expected %d" % (name, info.file_size, nbytes))
        if info.header_offset + 30 + nbytes > self.end:
            raise RuntimeError("%s is truncated: record %r ends past the file" % (self.label, name))
        raw = np.empty(nbytes, np.uint8)
        with self.zf.open(info) as src:  # the zip CRC is checked when the record is read out
            view, got = memoryview(raw), 0
            while got < nbytes:
                chunk = src.read(min(_CHUNK, nbytes - got))
                if not chunk:
                    raise RuntimeError("%s is truncated in record %r" % (self.label, name))
                view[got : got + len(chunk)] = chunk
                got += len(chunk)
            src.read(1)  # reaches the end: the CRC check
        return raw

    # -- tensors --------------------------------------------------------------------------
    def tensor(self, storage, offset, size, stride, dtype=None):
        if not isinstance(storage, _Storage):
            raise _refuse("a tensor's storage is %s" % type(storage).__name__)
        dtype = dtype if dtype is not None else storage.dtype
        if not isinstance(dtype, _dt.dtype):
            raise _refuse("a tensor without a dtype")
        size, stride = _ints(size, "size"), _ints(stride, "stride")
        if type(offset) is not int or offset < 0 or len(size) != len(stride) or len(size) > 64:
            raise _refuse("malformed tensor geometry")
        raw = storage.raw
        isz = dtype.itemsize
        if self.swap and dtype.itemsize > 1 and dtype not in storage.swapped:
            n = raw.size // isz * isz
            raw[:n].view(dtype.np).byteswap(inplace=True)  # complex: each part (NumPy)
            storage.swapped.add(dtype)
        if math.prod(size) == 0:
            buf = np.empty(0, np.uint8)
            arr = np.ndarray(size, dtype.np, buffer=buf, strides=[s * isz for s in stride])
        else:
            extent = offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1
            if extent * isz > raw.size:
                raise self.bad("a tensor reaches past its storage")
            arr = np.ndarray(
                size, dtype.np, buffer=raw, offset=offset * isz, strides=[s * isz for s in stride]
            )
        return self.place(Tensor._make(arr), storage.location)

    def place(self, t, location):
        ml = self.map_location
        if callable(ml) and not isinstance(ml, (str, _device)):
            r = ml(t, location)
            if r is not None:
                return r
            ml = None
        if isinstance(ml, dict):
            ml = ml.get(location, location)
        target = ml if ml is not None else location
        if ml is None and not location.startswith("cpu"):
            from . import cuda  # lazy: nbgrad.cuda loads numba.cuda

            if location.startswith("cuda") and cuda.is_available():
                pass  # restored where it was saved, as PyTorch
            elif location.startswith("cuda"):
                raise RuntimeError(
                    "Attempting to deserialize object on a CUDA device but "
                    "torch.cuda.is_available() is False. If you are running on a CPU-only "
                    "machine, please use torch.load with map_location=torch.device('cpu') to "
                    "map your storages to the CPU."
                )
            raise RuntimeError(
                "%s holds a tensor saved on device %r: pass map_location" % (self.label, location)
            )
        try:
            d = as_device(target)
        except (RuntimeError, TypeError, ValueError) as e:
            raise RuntimeError(
                "%s: cannot map location %r (%s)" % (self.label, target, e)
            ) from None
        check_device(d)
        return t if d.type == "cpu" else t.to(d)

    # -- the allow-listed functions -------------------------------------------------------
    def rebuild_tensor(self, storage, offset, size, stride):
        return self.tensor(storage, offset, size, stride)

    def rebuild_tensor_v2(self, storage, offset, size, stride, requires_grad, hooks, meta=None):
        t = self.tensor(storage, offset, size, stride)
        return _finish(t, requires_grad, hooks, meta)

    def rebuild_tensor_v3(
        self, storage, offset, size, stride, requires_grad, hooks, dtype, meta=None
    ):
        if storage.dtype is not None and storage.dtype is not dtype:
            raise _refuse("a typed storage rebuilt with another dtype")
        t = self.tensor(storage, offset, size, stride, dtype)
        return _finish(t, requires_grad, hooks, meta)


def _ints(v, what):
    if not isinstance(v, (tuple, list)) or not all(type(x) is int and x >= 0 for x in v):
        raise _refuse("malformed tensor %s %r" % (what, v))
    return tuple(v)


def _finish(t, requires_grad, hooks, meta):
    if type(requires_grad) is not bool or not isinstance(hooks, (dict, type(None))):
        raise _refuse("malformed tensor arguments")
    if meta:
        if not isinstance(meta, dict) or set(meta) - {"conj", "neg"}:
            raise _refuse("tensor metadata %r is not supported" % (meta,))
        if meta.get("conj"):
            t = Tensor._make(np.conj(t._data))
        if meta.get("neg"):
            t = Tensor._make(np.negative(t._data))
    if requires_grad:
        t.requires_grad_(True)
    return t


def _set_state(obj, state):
    """PyTorch's ``_set_obj_state`` for a tensor's attributes: public names only."""
    if isinstance(state, tuple) and len(state) == 2:
        state = {**(state[0] or {}), **(state[1] or {})}
    if not isinstance(state, dict):
        raise _refuse("malformed object state")
    for k, v in state.items():
        if type(k) is not str or k.startswith("_") or hasattr(type(obj), k):
            raise _refuse("cannot set attribute %r on a tensor" % (k,))
        setattr(obj, k, v)
    return obj


def _rebuild_parameter(data, requires_grad, hooks, state=None):
    if not isinstance(data, Tensor) or type(requires_grad) is not bool:
        raise _refuse("malformed Parameter")
    p = Parameter(data, requires_grad)
    return _set_state(p, state) if state else p


def _rebuild_from_type(loader):
    def rebuild(func, new_type, args, state):
        if func not in loader.funcs or new_type not in (Tensor, Parameter):
            raise _refuse("_rebuild_from_type_v2 of %r" % (new_type,))
        if type(args) is not tuple:
            raise _refuse("malformed arguments")
        t = func(*args)
        if new_type is Parameter and type(t) is not Parameter:
            t = Parameter(t, t.requires_grad)
        return _set_state(t, state) if state else t

    return rebuild


def _encode(s, encoding="utf-8"):
    if type(s) is not str or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise _refuse("_codecs.encode(%r, %r)" % (type(s).__name__, encoding))
    return s.encode(encoding)


def _bytearray(*args):
    if len(args) > 1 or (args and type(args[0]) not in (bytes, bytearray)):
        raise _refuse("bytearray of %r" % ([type(a).__name__ for a in args],))
    return bytearray(*args)


def _set(items=()):
    if type(items) not in (list, tuple):
        raise _refuse("set of %s" % type(items).__name__)
    return set(items)


def _complex(re=0.0, im=0.0):
    if type(re) not in (int, float) or type(im) not in (int, float):
        raise _refuse("complex of non-numbers")
    return complex(re, im)


def _size(dims=()):
    if type(dims) not in (tuple, list) or not all(type(d) is int for d in dims):
        raise _refuse("torch.Size of %r" % (dims,))
    return Size(dims)


def _device_ctor(kind, index=None):
    if type(kind) is not str or not (index is None or type(index) is int):
        raise _refuse("torch.device of %r" % (kind,))
    return _device(kind) if index is None else _device(kind, index)


def _globals(loader):
    g = {
        "collections.OrderedDict": collections.OrderedDict,
        "collections.Counter": collections.Counter,
        "torch.nn.parameter.Parameter": Parameter,
        "torch.Size": _size,
        "torch.Tensor": Tensor,
        "torch.device": _device_ctor,
        "_codecs.encode": _encode,
        "builtins.bytearray": _bytearray,
        "builtins.set": _set,
        "builtins.complex": _complex,
        "torch._utils._rebuild_tensor": loader.rebuild_tensor,
        "torch._utils._rebuild_tensor_v2": loader.rebuild_tensor_v2,
        "torch._utils._rebuild_tensor_v3": loader.rebuild_tensor_v3,
        "torch._utils._rebuild_parameter": _rebuild_parameter,
        "torch._utils._rebuild_parameter_with_state": _rebuild_parameter,
        "torch.storage.UntypedStorage": _StorageType(None),
    }
    loader.funcs = {
        g[k] for k in g if k.startswith("torch._utils._rebuild") and "parameter" not in k
    }
    g["torch._tensor._rebuild_from_type_v2"] = _rebuild_from_type(loader)
    for name, sname in _STORAGE.items():
        g["torch." + name] = _dt._NAMES[name]
        g["torch." + sname] = _StorageType(_dt._NAMES[name])
    for alias, name in (("float", "float32"), ("double", "float64"), ("half", "float16"),
                        ("long", "int64"), ("int", "int32"), ("short", "int16"),
                        ("cfloat", "complex64"), ("cdouble", "complex128")):  # fmt: skip
        g["torch." + alias] = _dt._NAMES[name]
    return g


class _Unpickler:
    """PyTorch's weights-only unpickler over nbgrad objects (see the module docstring)."""

    def __init__(self, data, loader):
        self.data, self.pos, self.loader = data, 0, loader
        self.globals = _globals(loader)
        self.memo = {}

    def read(self, n):
        if n < 0 or self.pos + n > len(self.data):
            raise _refuse("the pickle is truncated")
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def readline(self):
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise _refuse("the pickle is truncated")
        line = self.data[self.pos : end]
        self.pos = end + 1
        return line.decode("utf-8")

    def find(self, module, name):
        if module == "__builtin__":
            module = "builtins"
        path = "%s.%s" % (module, name)
        g = self.globals.get(path)
        if g is not None:
            return g
        if module == "torch" and (name in _FOREIGN_DTYPES or name in _FOREIGN_STORAGES):
            raise _refuse("the checkpoint holds %s, a dtype nbgrad does not have" % path)
        if path.startswith("torch."):
            raise _refuse(
                "%s is not supported by nbgrad (sparse, quantized, nested, meta and subclass "
                "tensors are not)" % path
            )
        raise _unsupported_global(path)

    def pop_mark(self):
        items = self.stack
        if not self.metastack:
            raise _refuse("MARK expected")
        self.stack = self.metastack.pop()
        return items

    def pop(self):
        if not self.stack:
            raise _refuse("the pickle's stack is empty")
        return self.stack.pop()

    def load(self):
        try:
            return self._load()
        except (TypeError, ValueError, OverflowError, KeyError, IndexError, struct.error) as e:
            raise _refuse("a malformed pickle (%s: %s)" % (type(e).__name__, e)) from None

    def _load(self):
        self.stack, self.metastack = [], []
        st = struct.unpack
        while True:
            op = self.read(1)[0]
            s = self.stack
            if op == 0x80:  # PROTO
                self.read(1)
            elif op == 0x95:  # FRAME (protocol 4): a length we do not need
                self.read(8)
            elif op == 0x2E:  # STOP
                if len(s) != 1 or self.metastack:
                    raise _refuse("malformed pickle")
                return s[0]
            elif op == 0x63:  # GLOBAL
                module = self.readline()
                s.append(self.find(module, self.readline()))
            elif op == 0x93:  # STACK_GLOBAL
                name, module = self.pop(), self.pop()
                if type(name) is not str or type(module) is not str:
                    raise _refuse("STACK_GLOBAL of non-strings")
                s.append(self.find(module, name))
            elif op == 0x52:  # REDUCE
                args, func = self.pop(), self.pop()
                if type(args) is not tuple or not _callable_ok(func, self.globals):
                    raise _refuse("Trying to call reduce for unrecognized function %r" % (func,))
                if func is Tensor or func is Parameter:
                    raise _refuse("calling %s directly" % func.__name__)
                if func in (collections.OrderedDict, collections.Counter) and not (
                    not args or (len(args) == 1 and type(args[0]) in (list, tuple, dict))
                ):  # not an arbitrary iterable: a forged tensor could be iterated for ever
                    raise _refuse("%s of %r" % (func.__name__, [type(a).__name__ for a in args]))
                try:
                    s.append(func(*args))
                except (TypeError, ValueError, OverflowError) as e:
                    raise _refuse("a malformed call (%s: %s)" % (type(e).__name__, e)) from None
            elif op == 0x81:  # NEWOBJ
                args, cls = self.pop(), self.pop()
                if type(args) is not tuple:
                    raise _refuse("malformed NEWOBJ")
                if cls is Parameter and 1 <= len(args) <= 2:
                    s.append(_rebuild_parameter(args[0], args[1] if len(args) > 1 else True, None))
                elif cls in (collections.OrderedDict, collections.Counter) and not args:
                    s.append(cls())
                else:
                    raise _refuse("Can only create new object for nn.Parameter, got %r" % (cls,))
            elif op == 0x62:  # BUILD
                state, inst = self.pop(), s[-1] if s else None
                if type(inst) in (collections.OrderedDict, collections.Counter):
                    if not isinstance(state, dict) or not all(type(k) is str for k in state):
                        raise _refuse("malformed state for %s" % type(inst).__name__)
                    inst.__dict__.update(state)
                else:
                    raise _refuse(
                        "Can only build OrderedDict and Counter objects, but got %s"
                        % type(inst).__name__
                    )
            elif op == 0x61:  # APPEND
                item = self.pop()
                if not s or type(s[-1]) is not list:
                    raise _refuse("can only append to lists")
                s[-1].append(item)
            elif op == 0x65:  # APPENDS
                items = self.pop_mark()
                if not self.stack or type(self.stack[-1]) is not list:
                    raise _refuse("can only extend lists")
                self.stack[-1].extend(items)
            elif op == 0x73:  # SETITEM
                v, k = self.pop(), self.pop()
                _check_dict(s)
                s[-1][k] = v
            elif op == 0x75:  # SETITEMS
                items = self.pop_mark()
                _check_dict(self.stack)
                if len(items) % 2:
                    raise _refuse("odd SETITEMS")
                for i in range(0, len(items), 2):
                    self.stack[-1][items[i]] = items[i + 1]
            elif op == 0x90:  # ADDITEMS (protocol 4)
                items = self.pop_mark()
                if not self.stack or type(self.stack[-1]) is not set:
                    raise _refuse("can only add items to sets")
                self.stack[-1].update(items)
            elif op == 0x28:  # MARK
                self.metastack.append(s)
                self.stack = []
            elif op == 0x74:  # TUPLE
                items = tuple(self.pop_mark())  # (pop_mark switches self.stack)
                self.stack.append(items)
            elif op in (0x85, 0x86, 0x87):  # TUPLE1/2/3
                n = op - 0x84
                if len(s) < n:
                    raise _refuse("the pickle's stack is empty")
                s[-n:] = [tuple(s[-n:])]
            elif op == 0x4E:  # NONE
                s.append(None)
            elif op == 0x88 or op == 0x89:  # NEWTRUE / NEWFALSE
                s.append(op == 0x88)
            elif op == 0x29:  # EMPTY_TUPLE
                s.append(())
            elif op == 0x5D:  # EMPTY_LIST
                s.append([])
            elif op == 0x7D:  # EMPTY_DICT
                s.append({})
            elif op == 0x8F:  # EMPTY_SET
                s.append(set())
            elif op == 0x4A:  # BININT
                s.append(st("<i", self.read(4))[0])
            elif op == 0x4B:  # BININT1
                s.append(self.read(1)[0])
            elif op == 0x4D:  # BININT2
                s.append(st("<H", self.read(2))[0])
            elif op == 0x8A:  # LONG1
                s.append(int.from_bytes(self.read(self.read(1)[0]), "little", signed=True))
            elif op == 0x47:  # BINFLOAT
                s.append(st(">d", self.read(8))[0])
            elif op in (0x58, 0x8C):  # BINUNICODE / SHORT_BINUNICODE
                n = st("<I", self.read(4))[0] if op == 0x58 else self.read(1)[0]
                s.append(str(self.read(n), "utf-8", "surrogatepass"))
            elif op == 0x55:  # SHORT_BINSTRING (Python 2 str: bytes, as torch's encoding='bytes')
                s.append(bytes(self.read(self.read(1)[0])))
            elif op in (0x42, 0x43):  # BINBYTES / SHORT_BINBYTES (protocol 3)
                n = st("<I", self.read(4))[0] if op == 0x42 else self.read(1)[0]
                s.append(bytes(self.read(n)))
            elif op == 0x51:  # BINPERSID
                s.append(self.loader.storage(self.pop()))
            elif op in (0x68, 0x6A):  # BINGET / LONG_BINGET
                i = self.read(1)[0] if op == 0x68 else st("<I", self.read(4))[0]
                if i not in self.memo:
                    raise _refuse("memo key %d is not defined" % i)
                s.append(self.memo[i])
            elif op in (0x71, 0x72):  # BINPUT / LONG_BINPUT
                i = self.read(1)[0] if op == 0x71 else st("<I", self.read(4))[0]
                if not s:
                    raise _refuse("the pickle's stack is empty")
                self.memo[i] = s[-1]
            elif op == 0x94:  # MEMOIZE (protocol 4)
                if not s:
                    raise _refuse("the pickle's stack is empty")
                self.memo[len(self.memo)] = s[-1]
            else:
                raise _refuse("Unsupported operand %d" % op)


def _callable_ok(func, allowed):
    return any(func is v for v in allowed.values()) and callable(func)


def _check_dict(stack):
    if not stack or type(stack[-1]) not in (dict, collections.OrderedDict, collections.Counter):
        raise _refuse("can only set items of dict, collections.OrderedDict, collections.Counter")


def load(fh, first, label, map_location):
    """Read a torch.save zip from ``fh``, of which ``first`` (the opening bytes) was read."""
    fh = _rewound(fh, first)
    try:
        start = fh.tell()
        end = fh.seek(0, os.SEEK_END)
        fh.seek(start)
        zf = zipfile.ZipFile(fh)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error) as e:
        raise RuntimeError(
            "%s looks like a PyTorch checkpoint (a zip archive) but cannot be read as one: %s "
            "(is it truncated or corrupted?)" % (label, e)
        ) from None
    with zf:
        names = zf.namelist()
        prefix = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else None
        if prefix and prefix + "constants.pkl" in names:
            raise RuntimeError(
                "%s is a TorchScript archive (torch.jit.save): nbgrad reads torch.save "
                "checkpoints (save the model's state_dict with torch.save)" % label
            )
        if prefix is None or prefix + "data.pkl" not in names:
            raise RuntimeError("%s is a zip archive but not a PyTorch checkpoint" % label)
        byteorder = "little"
        if prefix + "byteorder" in names:
            info = zf.getinfo(prefix + "byteorder")
            byteorder = zf.read(info).decode("ascii", "replace") if info.file_size < 16 else "?"
            if byteorder not in ("little", "big"):
                raise RuntimeError("%s: unknown byte order %r" % (label, byteorder))
        loader = _Loader(zf, prefix, label, map_location, byteorder, end)
        try:
            pkl = loader.record("data.pkl", zf.getinfo(prefix + "data.pkl").file_size)
            return _Unpickler(memoryview(pkl).tobytes(), loader).load()
        except zipfile.BadZipFile as e:
            raise RuntimeError("%s is corrupted: %s" % (label, e)) from None


def _rewound(fh, first):
    try:
        if fh.seekable():
            fh.seek(-len(first), os.SEEK_CUR)
            return fh
    except (OSError, AttributeError, ValueError):
        pass
    return io.BytesIO(first + fh.read())  # a pipe or socket: zip needs random access


# ------------------------------------------------------------------------------------------
# writing


class _Pickler:
    """Emits the protocol-2 pickle torch.save writes, opcode by opcode (nbgrad objects become
    PyTorch's rebuild calls; no pickle machinery, so nothing else can be written)."""

    def __init__(self):
        self.out = bytearray(b"\x80\x02")
        self.memo = {}  # id(obj) -> memo index
        self.keep = []  # memoised objects stay alive so ids stay unique
        self.storages = []  # [(key, little-endian contiguous array)]
        self.roots = {}  # id(root array) -> key
        self.busy = set()  # tuples being written (a cycle through one cannot be pickled)

    def op(self, b):
        self.out += b

    def put(self, obj):
        i = len(self.memo)
        self.memo[id(obj)] = i
        self.keep.append(obj)
        self.op(b"q" + bytes([i]) if i < 256 else b"r" + struct.pack("<I", i))

    def get(self, obj):
        i = self.memo.get(id(obj))
        if i is None:
            return False
        self.op(b"h" + bytes([i]) if i < 256 else b"j" + struct.pack("<I", i))
        return True

    def glob(self, module, name):
        self.op(b"c%s\n%s\n" % (module.encode(), name.encode()))

    def save(self, obj):
        t = type(obj)
        if obj is None:
            self.op(b"N")
        elif t is bool:
            self.op(b"\x88" if obj else b"\x89")
        elif t is int:
            self.int_(obj)
        elif t is float:
            self.op(b"G" + struct.pack(">d", obj))
        elif t is str:
            b = obj.encode("utf-8", "surrogatepass")
            self.op(b"X" + struct.pack("<I", len(b)) + b)
        elif t is bytes:
            self.call("_codecs", "encode", (obj.decode("latin1"), "latin1"))
        elif t is bytearray:
            self.call("__builtin__", "bytearray", (bytes(obj),))
        elif t is complex:
            self.call("__builtin__", "complex", (obj.real, obj.imag))
        elif isinstance(obj, Tensor):
            if not self.get(obj):
                self.tensor(obj)
                self.put(obj)
        elif isinstance(obj, _dt.dtype):
            self.glob("torch", obj.name)
        elif isinstance(obj, _device):
            self.call(
                "torch", "device", (obj.type,) if obj.index is None else (obj.type, obj.index)
            )
        elif t is Size:
            self.call("torch", "Size", (tuple(obj),))
        elif t in (list, dict, set, collections.OrderedDict):
            if not self.get(obj):
                self.container(obj, t)
        elif t is tuple:
            self.tuple_(obj)
        else:
            raise TypeError(
                "nbgrad.save(format='torch'): cannot save an object of type %s.%s; torch.load"
                "(weights_only=True) reads tensors, Parameters, None, bool, int, float, complex, "
                "str, bytes, dtypes, devices, torch.Size and dict/OrderedDict/list/tuple/set of "
                "them" % (t.__module__, t.__qualname__)
            )

    def int_(self, v):
        if 0 <= v < 256:
            self.op(b"K" + bytes([v]))
        elif 0 <= v < 65536:
            self.op(b"M" + struct.pack("<H", v))
        elif -(2**31) <= v < 2**31:
            self.op(b"J" + struct.pack("<i", v))
        else:
            b = pickle.encode_long(v)
            if len(b) > 255:
                raise OverflowError("nbgrad.save(format='torch'): int too large to save")
            self.op(b"\x8a" + bytes([len(b)]) + b)

    def call(self, module, name, args):
        self.glob(module, name)
        self.tuple_(args)
        self.op(b"R")

    def tuple_(self, items):
        if id(items) in self.busy:
            raise ValueError("nbgrad.save: cannot save a tuple that contains itself")
        self.busy.add(id(items))
        if not items:
            self.op(b")")
        elif len(items) <= 3:
            for v in items:
                self.save(v)
            self.op(bytes([0x84 + len(items)]))  # TUPLE1/2/3
        else:
            self.op(b"(")
            for v in items:
                self.save(v)
            self.op(b"t")
        self.busy.discard(id(items))

    def container(self, obj, t):
        if t is set:
            self.call("__builtin__", "set", (list(obj),))
            self.put(obj)
            return
        if t is collections.OrderedDict:
            self.glob("collections", "OrderedDict")
            self.op(b")R")
        else:
            self.op(b"]" if t is list else b"}")
        self.put(obj)
        items = list(obj) if t is list else [kv for pair in obj.items() for kv in pair]
        step = 1000 if t is list else 2000
        for i in range(0, len(items), step):
            self.op(b"(")
            for v in items[i : i + step]:
                self.save(v)
            self.op(b"e" if t is list else b"u")
        state = getattr(obj, "__dict__", None) if t is collections.OrderedDict else None
        if state:
            self.save(dict(state))
            self.op(b"b")

    def tensor(self, t):
        if isinstance(t, Parameter):
            self.glob("torch._utils", "_rebuild_parameter")
            self.op(b"(")
            self.plain_tensor(t, False)
            self.save(bool(t.requires_grad))
            self.ordered_dict()
            self.op(b"t" + b"R")
        else:
            self.plain_tensor(t, bool(t._requires_grad))

    def ordered_dict(self):
        self.glob("collections", "OrderedDict")
        self.op(b")R")

    def plain_tensor(self, t, requires_grad):
        data = t._data
        if type(data) is not np.ndarray:  # a CUDA tensor: a host copy, saved at its device
            data = data.to_host()
        key, offset, strides, numel = self.storage(data)
        self.glob("torch._utils", "_rebuild_tensor_v2")
        self.op(b"((")
        self.save("storage")
        self.glob("torch", _STORAGE[t._dtype.name])
        self.save(key)
        self.save("cuda:%d" % (t.device.index or 0) if t.is_cuda else "cpu")
        self.save(numel)
        self.op(b"tQ")  # the persistent id tuple, BINPERSID
        self.save(offset)
        self.tuple_(tuple(t._data.shape))
        self.tuple_(strides)
        self.save(requires_grad)
        self.ordered_dict()
        self.op(b"tR")

    def storage(self, a):
        """(key, element offset, element strides, numel) of the storage holding ``a``: the
        memory of the array owning it, shared by every tensor viewing it (as torch.save)."""
        isz = a.itemsize
        strides = tuple(s // isz for s in a.strides)
        root, off = _root(a), 0
        if root is not None and all(s >= 0 and s % isz == 0 for s in a.strides):
            off = a.__array_interface__["data"][0] - root.__array_interface__["data"][0]
            if off % isz or root.nbytes % isz:
                root = None
        else:
            root = None
        if root is None:  # a storage of its own: an empty tensor, negative strides
            root = a.copy(order="K") if a.size else np.empty(0, a.dtype)
            if a.size:
                off, strides = 0, tuple(s // isz for s in root.strides)
        key = self.roots.get((id(root), a.dtype.str))
        if key is None:
            key = self.roots[(id(root), a.dtype.str)] = str(len(self.storages))
            flat = root.ravel(order="K").view(np.uint8).view(a.dtype)
            flat = flat.astype(flat.dtype.newbyteorder("<"), copy=False)
            self.storages.append((key, flat.view(np.uint8)))
            self.keep.append(root)
        return key, off // isz, strides, root.nbytes // isz


def _root(a):
    """The contiguous array owning ``a``'s memory (through as_strided bases), or None."""
    root = _owner(a)
    if a.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    lo = root.__array_interface__["data"][0]
    alo, ahi = _bounds(a)
    return root if lo <= alo and ahi <= lo + root.nbytes else None


def save(obj, f):
    """Write ``obj`` as torch.save does (a zip with data.pkl and one record per storage)."""
    w = _Pickler()
    w.save(obj)
    w.op(b".")
    pkl = np.frombuffer(bytes(w.out), np.uint8)
    sid = str(int.from_bytes(os.urandom(16), "little")).zfill(40)[:40]
    records = [("data.pkl", pkl), (".format_version", b"1"), (".storage_alignment", b"64"),
               ("byteorder", b"little")]  # fmt: skip
    records += [("data/" + k, arr) for k, arr in w.storages]
    records += [("version", b"3\n"), (".data/serialization_id", sid.encode())]
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            _record(zf, f, "archive/" + name, data)


def _record(zf, fh, name, data):
    """One stored record, its data 64-byte aligned in the file as torch.save aligns it."""
    view = memoryview(data)
    n = len(view)
    zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    zi.compress_type = zipfile.ZIP_STORED
    zi.file_size = n
    zip64 = n * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule: it adds a 20-byte field
    try:
        pos = fh.tell()
    except (OSError, AttributeError, ValueError):
        pos = None  # an unseekable stream: no alignment
    if pos is not None:
        header = 30 + len(name.encode("utf-8")) + 4 + (20 if zip64 else 0)
        pad = -(pos + header) % 64
        zi.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # PyTorch's "FB" padding
    with zf.open(zi, "w", force_zip64=zip64) as dst:
        for i in range(0, n, _CHUNK):
            dst.write(view[i : i + _CHUNK])
