"""``safetensors`` files of nbgrad tensors: the API of ``safetensors.torch`` (``save_file``,
``load_file``, ``save``, ``load``) over the ``safetensors`` package's NumPy backend.

An optional extra: ``pip install nbgrad[safetensors]`` (or ``pip install safetensors``).  As
``safetensors.torch``, saving refuses non-contiguous tensors and tensors that share memory, and
loading builds new tensors that own their memory.  A safetensors file holds only named tensors
and a str -> str metadata dict, so loading one never runs code.
"""

import os

from .. import dtypes as _dt
from .._tensor import Tensor, _owner
from ..device import check_device

__all__ = ["save", "save_file", "load", "load_file"]


def _backend():
    try:
        import safetensors.numpy as st  # noqa: PLC0415 - an optional dependency
    except ImportError:
        raise ImportError(
            "nbgrad.utils.safetensors needs the safetensors package: "
            "pip install safetensors (or the nbgrad[safetensors] extra)"
        ) from None
    return st


def _arrays(tensors):
    """The checks of ``safetensors.torch`` (same errors), then name -> contiguous array."""
    if not isinstance(tensors, dict):
        raise ValueError(
            "Expected a dict of [str, torch.Tensor] but received %s" % type(tensors).__name__
        )
    owners = {}
    for k, v in tensors.items():
        if not isinstance(v, Tensor):
            raise ValueError(
                "Key `%s` is invalid, expected torch.Tensor but received %s" % (k, type(v))
            )
        if v._data.size:
            owners.setdefault(id(_owner(v._data)), []).append(k)
    failing = [set(names) for names in owners.values() if len(names) > 1]
    if failing:
        raise RuntimeError(
            "\n            Some tensors share memory, this will lead to duplicate memory on disk "
            "and potential differences when loading them again: %s.\n            A potential "
            "way to correctly save your model is to use `save_model`.\n            More "
            "information at https://huggingface.co/docs/safetensors/torch_shared_tensors\n"
            "            " % failing
        )
    out = {}
    for k, v in tensors.items():
        if not v._data.flags.c_contiguous:
            raise ValueError(
                "You are trying to save a non contiguous tensor: `%s` which is not allowed. It "
                "either means you are trying to save tensors which are reference of each other "
                "in which case it's recommended to save only the full tensors, and reslice at "
                "load time, or simply call `.contiguous()` on your tensor to pack it before "
                "saving." % k
            )
        out[k] = v._data
    return out


def _tensors(arrays):
    out = {}
    for k, a in arrays.items():
        _dt.from_numpy_dtype(a.dtype)
        out[k] = Tensor._make(a if a.flags.writeable and a.flags.owndata else a.copy())
    return out


def save(tensors, metadata=None):
    """The bytes of a safetensors file holding ``tensors`` (a dict name -> Tensor)."""
    return _backend().save(_arrays(tensors), metadata=metadata)


def save_file(tensors, filename, metadata=None):
    """Write ``tensors`` (a dict name -> Tensor) to ``filename`` in the safetensors format;
    ``metadata``: an optional dict of str -> str stored in the header."""
    _backend().save_file(_arrays(tensors), os.fspath(filename), metadata=metadata)


def load(data):
    """The tensors of a safetensors file's ``data`` (bytes), as a dict name -> Tensor."""
    return _tensors(_checked(lambda st: st.load(data)))


def load_file(filename, device="cpu"):
    """The tensors of the safetensors file ``filename``, as a dict name -> Tensor."""
    check_device(device)
    return _tensors(_checked(lambda st: st.load_file(os.fspath(filename))))


def _checked(read):
    try:
        return read(_backend())
    except (KeyError, TypeError) as e:  # NumPy has no array type for it (bfloat16, float8)
        raise TypeError(
            "the safetensors file holds a tensor of a dtype nbgrad does not have (%s)" % e
        ) from None
