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
    """Only the CPU stores data today; a CUDA request gets a clear error, never a crash."""
    d = as_device(d)
    if d.type == "cuda":
        from . import cuda  # cycle: nbgrad.cuda builds on tensors; devices are a leaf

        if not cuda.is_available():
            raise RuntimeError(
                "CUDA is not available: nbgrad found no CUDA device "
                "(install the 'cuda' extra and check nbgrad.cuda.is_available())"
            )
        raise RuntimeError(
            "nbgrad: CUDA tensors are not supported yet; only the pointwise "
            "kernel builder targets CUDA (see docs/design.md)"
        )
    return d
