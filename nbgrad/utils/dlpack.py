"""``nbgrad.utils.dlpack`` (``torch.utils.dlpack``): DLPack capsules in and out.

``Tensor.__dlpack__`` / ``nbgrad.from_dlpack`` are the protocol most code uses; this module keeps
PyTorch's older capsule functions for code that calls them."""

import enum

from ..creation import from_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """DLPack's device codes (``Tensor.__dlpack_device__()[0]``)."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def to_dlpack(tensor):
    """A DLPack capsule ("dltensor") sharing ``tensor``'s memory, to be consumed once by
    ``from_dlpack`` (here, in PyTorch, NumPy ...).  As PyTorch's, it does not check
    ``requires_grad`` (``Tensor.__dlpack__`` does)."""
    return tensor._data.__dlpack__()
