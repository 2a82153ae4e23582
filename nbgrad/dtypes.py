"""dtype objects, PyTorch's type-promotion rules, finfo and the default dtype."""

import builtins  # this module's names float, int, bool are dtypes

import numpy as np

__all__ = [
    "dtype",
    "float16",
    "float32",
    "float64",
    "int32",
    "int64",
    "bool",
    "complex64",
    "complex128",
    "get_default_dtype",
    "set_default_dtype",
    "finfo",
    "result_type",
]


class dtype:
    """``category`` ranks the kinds for promotion: 0 bool, 1 integer, 2 floating, 3 complex.
    Elsewhere test the named predicates instead: ``is_floating_point``, ``is_complex``,
    ``is_inexact`` (floating or complex: can require grad) and ``is_integral`` (bool excluded).
    """

    __slots__ = (
        "name",
        "np",
        "category",
        "itemsize",
        "is_floating_point",
        "is_complex",
        "is_inexact",
        "is_integral",
        "is_signed",
        "c_name",
        "_legacy",
    )

    def __init__(self, name, npdtype, category, legacy, c_name):
        self.name = name
        self.np = np.dtype(npdtype)
        self.category = category
        self.itemsize = self.np.itemsize
        self.is_floating_point = category == 2
        self.is_complex = category == 3
        self.is_inexact = category >= 2
        self.is_integral = category == 1
        self.is_signed = name != "bool"
        self.c_name = c_name  # the C++ type name PyTorch's messages print ("long int")
        self._legacy = legacy  # the name in PyTorch's legacy type strings (FloatTensor)

    def __repr__(self):
        return "nbgrad." + self.name

    def __reduce__(self):
        return (_by_name, (self.name,))

    def to_real(self):
        return {"complex64": float32, "complex128": float64}.get(self.name, self)

    def to_complex(self):
        return {"float32": complex64, "float64": complex128, "float16": complex64}.get(
            self.name, self
        )


float16 = dtype("float16", np.float16, 2, "Half", "c10::Half")
float32 = dtype("float32", np.float32, 2, "Float", "float")
float64 = dtype("float64", np.float64, 2, "Double", "double")
int32 = dtype("int32", np.int32, 1, "Int", "int")
int64 = dtype("int64", np.int64, 1, "Long", "long int")
bool = dtype("bool", np.bool_, 0, "Bool", "bool")  # noqa: A001 - PyTorch's name
complex64 = dtype("complex64", np.complex64, 3, "ComplexFloat", "c10::complex<float>")
complex128 = dtype("complex128", np.complex128, 3, "ComplexDouble", "c10::complex<double>")
# numpy dtypes we accept as storage but PyTorch spells differently
uint8 = dtype("uint8", np.uint8, 1, "Byte", "unsigned char")
int8 = dtype("int8", np.int8, 1, "Char", "signed char")
int16 = dtype("int16", np.int16, 1, "Short", "short int")

half, float, double = float16, float32, float64  # noqa: A001
long, int, cfloat, cdouble = int64, int32, complex64, complex128  # noqa: A001

ALL = (float16, float32, float64, int32, int64, bool, complex64, complex128, uint8, int8, int16)
_FROM_NP = {d.np: d for d in ALL}
_NAMES = {d.name: d for d in ALL}


def _by_name(name):
    return _NAMES[name]


def from_numpy_dtype(npd):
    try:
        return _FROM_NP[np.dtype(npd)]
    except KeyError:
        raise TypeError(
            "can't convert np.ndarray of type %s. The only supported types are: "
            "float64, float32, float16, complex64, complex128, int64, int32, int16, "
            "int8, uint8, and bool." % np.dtype(npd)
        ) from None


def as_dtype(d):
    """Accept an nbgrad dtype, a numpy dtype / type, or a Python type (float, int, bool)."""
    if isinstance(d, dtype):
        return d
    if d is None:
        return None
    if d is builtins.float:
        return _default[0]
    if d is builtins.int:
        return int64
    if d is builtins.bool:
        return bool
    if d is builtins.complex:
        return _default[0].to_complex()
    if isinstance(d, str):
        d = d.replace("torch.", "").replace("nbgrad.", "")
        if d in _NAMES:
            return _NAMES[d]
    return from_numpy_dtype(d)


_default = [float32]


def get_default_dtype():
    return _default[0]


def set_default_dtype(d):
    d = as_dtype(d)
    if d not in (float16, float32, float64):
        raise TypeError("only floating-point types are supported as the default type")
    _default[0] = d


class finfo:
    """Machine limits of a floating dtype (``nbgrad.finfo(nbgrad.float32).eps``)."""

    def __init__(self, type=None):  # noqa: A002 - PyTorch's name
        d = as_dtype(type) if type is not None else _default[0]
        if d.category < 2:
            raise TypeError("finfo() requires a floating point input type.")
        fi = np.finfo(d.to_real().np)
        self.dtype = d.to_real().name
        self.bits = fi.bits
        self.eps = builtins.float(fi.eps)
        self.max = builtins.float(fi.max)
        self.min = builtins.float(fi.min)
        self.tiny = self.smallest_normal = builtins.float(fi.tiny)
        self.resolution = 10.0 ** -builtins.int(fi.precision)

    def __repr__(self):
        return (
            "finfo(resolution=%g, min=%g, max=%g, eps=%g, smallest_normal=%g, tiny=%g, "
            "dtype=%s)"
            % (
                self.resolution,
                self.min,
                self.max,
                self.eps,
                self.smallest_normal,
                self.tiny,
                self.dtype,
            )
        )


# ---------------------------------------------------------------------------------------------
# Type promotion (PyTorch's ResultTypeState): tensors with dims outrank 0-dim tensors, which
# outrank Python scalars, but only within a category (bool < int < float < complex).


def promote_types(a, b):
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == 3 and lo.category == 2:
            return complex128 if (hi is complex128 or lo is float64) else complex64
        return hi
    return _FROM_NP[np.promote_types(a.np, b.np)]


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.category == 3:
        return higher
    if lower.category == 3:
        return higher.to_complex() if higher.category == 2 else lower
    if higher.category == 2:
        return higher
    if higher is bool or lower.category == 2:
        return promote_types(higher, lower)
    return higher


def scalar_dtype(v):
    if isinstance(v, builtins.bool) or isinstance(v, np.bool_):
        return bool
    if isinstance(v, (builtins.int, np.integer)):
        return int64
    if isinstance(v, (builtins.float, np.floating)):
        return _default[0]
    if isinstance(v, (builtins.complex, np.complexfloating)):
        return _default[0].to_complex()
    raise TypeError("unsupported scalar type %s" % type(v).__name__)


def result_type(*operands):
    """Promote Tensors and Python scalars the way PyTorch does."""
    dim = zero = wrapped = None
    for o in operands:
        d = getattr(o, "_dtype", None)
        if d is None:
            if o is None:
                continue
            s = scalar_dtype(o)
            wrapped = s if wrapped is None else promote_types(wrapped, s)
        elif o._data.ndim:
            dim = d if dim is None else promote_types(dim, d)
        else:
            zero = d if zero is None else promote_types(zero, d)
    return _combine(dim, _combine(zero, wrapped))
