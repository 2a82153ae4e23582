"""``nbgrad.device``: where a tensor's storage lives ("cpu", "cuda", "cuda:N")."""

__all__ = ["device", "get_default_device", "set_default_device"]


class device:
    __slots__ = ("type", "index")
    _cache = {}

    def __new__(cls, spec="cpu", index=None):
        if isinstance(spec, device):
            return spec
        key = (spec, index)
        d = cls._cache.get(key)
        if d is not None:
            return d
        if not isinstance(spec, str):
            raise TypeError("device() expected a string, got %s" % type(spec).__name__)
        typ, _, idx = spec.partition(":")
        if typ not in ("cpu", "cuda"):
            raise RuntimeError(
                "Expected one of cpu, cuda device type at start of device string: " + spec
            )
        if idx:
            if not idx.isdigit():
                raise RuntimeError("Invalid device string: '%s'" % spec)
            index = int(idx)
        d = object.__new__(cls)
        d.type = typ
        d.index = index
        cls._cache[key] = d
        return d

    def __repr__(self):
        if self.index is None:
            return "device(type='%s')" % self.type
        return "device(type='%s', index=%d)" % (self.type, self.index)

    def __str__(self):
        return self.type if self.index is None else "%s:%d" % (self.type, self.index)

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        if not isinstance(other, device):
            return NotImplemented
        return self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))


CPU = device("cpu")


class _DefaultDevice:  # process-wide, as torch.set_default_device's
    device = CPU


DEFAULT = _DefaultDevice()


def get_default_device():
    """The device factory functions use when none is given (``torch.get_default_device``)."""
    return DEFAULT.device


def set_default_device(device):  # PyTorch's argument name
    """Set the device of newly created tensors; None restores the CPU."""
    DEFAULT.device = CPU if device is None else as_device(device)


def as_device(d):
    if d is None:
        return DEFAULT.device
    if isinstance(d, device):
        return d
    if isinstance(d, int):
        return device("cuda", d)
    return device(d)


def check_device(d):
    """The device ``d`` names, after checking it can hold data: the CPU always; a CUDA device
    when ``nbgrad.cuda.is_available()`` (a GPU, or numba's simulator) and the index exists."""
    d = as_device(d)
    if d.type == "cuda":
        from . import cuda  # cycle: nbgrad.cuda builds on tensors; devices are a leaf

        if not cuda.is_available():
            raise RuntimeError(
                "CUDA is not available: nbgrad found no CUDA device "
                "(install the 'cuda' extra and check nbgrad.cuda.is_available())"
            )
        if d.index is not None and d.index >= cuda.device_count():
            raise RuntimeError(
                "CUDA error: invalid device ordinal (nbgrad sees %d device(s))"
                % cuda.device_count()
            )
        if d.index not in (None, 0):
            raise RuntimeError("nbgrad keeps CUDA tensors on device 0 only, got %s" % d)
    return d


def same_device_error(a, b):
    """PyTorch's error for operands on two devices."""
    return RuntimeError(
        "Expected all tensors to be on the same device, but found at least two devices, "
        "%s and %s!" % (a, b)
    )
