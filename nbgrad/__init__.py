"""nbgrad: a PyTorch-compatible tensor + autograd library whose kernels are compiled by Numba.

``import nbgrad as torch`` runs code inside the scope of shared/API.md unchanged.
"""

from . import _config  # first: chooses NUMBA_CACHE_DIR before numba is imported

__version__ = _config.VERSION

from . import (
    _tensor_methods,  # noqa: E402,F401  (installs the Tensor surface from REGISTRY)
    dtypes,  # noqa: E402
)
from ._tensor import Size, Tensor  # noqa: E402
from .creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    eye,
    from_dlpack,
    from_numpy,
    full,  # noqa: E402
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)
from .device import device, get_default_device, set_default_device  # noqa: E402
from .dtypes import (
    bool,
    cdouble,
    cfloat,
    complex64,
    complex128,
    double,
    dtype,  # noqa: E402
    finfo,
    float as float,  # noqa: E402,A004
    float16,
    float32,
    float64,
    get_default_dtype,
    half,
    int as int,  # noqa: E402,A004
    int8,
    int16,
    int32,  # noqa: E402,A004
    int64,
    long,
    promote_types,
    result_type,
    set_default_dtype,
    uint8,
)
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,  # noqa: E402
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops.registry import (
    FUNCTION as _FUNCTION,  # noqa: E402,F401
    REGISTRY,
)
from .random import initial_seed, manual_seed, seed  # noqa: E402

# nbgrad.<op>: every registry op that declares a function variant, under its name and aliases
for _op in REGISTRY.values():
    if _FUNCTION in _op.variants:
        for _name in _op.public_names:
            globals()[_name] = _op.fn
del _op, _name
from . import autograd, cuda, utils  # noqa: E402,F401

# loaded once ops are: they sit above ops (NOTE [autograd layering] in autograd/__init__.py)
from .autograd import (
    forward_ad as _forward_ad,  # noqa: E402
    functional as _functional,
)
from .ops.symbolic import elementwise  # noqa: E402

del _forward_ad, _functional
# NOTE [lazy imports]: nn, optim, testing, torch._VF and utils.data/checkpoint/... load on first
# use (PEP 562 ``__getattr__`` below and in nbgrad.utils): ``import nbgrad`` pays only for the
# tensor, the op registry and autograd (issue #13's import-time target)
_LAZY = {"nn": "nbgrad.nn", "optim": "nbgrad.optim", "testing": "nbgrad.testing"}
_LAZY["_VF"] = "nbgrad.nn._vf"  # torch._VF's recurrent entry points
_LAZY["distributed"] = "nbgrad.distributed"  # torch.distributed (mpi4py on use)
from ._missing import missing as _missing  # noqa: E402
from .autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled,  # noqa: E402,F401
    is_anomaly_enabled,
)
from .compile import compile  # noqa: E402
from .serialization import load, save  # noqa: E402

FloatTensor = DoubleTensor = LongTensor = None  # legacy type names are not provided
del FloatTensor, DoubleTensor, LongTensor


def is_tensor(obj):
    return isinstance(obj, Tensor)


def numel(input):
    return input.numel()


def is_floating_point(input):
    return input.is_floating_point()


def is_complex(input):
    return input.is_complex()


def typename(obj):
    return obj.type() if isinstance(obj, Tensor) else type(obj).__name__


def is_inference(input):
    return input.is_inference()


def detach(input):
    return input.detach()


def warmup(dtypes=("float32",)):  # noqa: F811  (the argument shadows the module)
    """Compile (or load from the on-disk cache) the kernels a typical run needs."""
    from ._warmup import warmup as _w  # lazy: the CUDA path loads on first use

    return _w(dtypes)


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is not None:
        import importlib

        value = globals()[name] = importlib.import_module(mod)
        return value
    raise _missing(__name__, name)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
