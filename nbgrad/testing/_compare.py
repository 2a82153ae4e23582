"""``nbgrad.testing.assert_close``: ``torch.testing.assert_close``'s rules and messages."""

import math
from collections.abc import Mapping, Sequence

import numpy as np

from .. import dtypes as _dt
from .._tensor import Size, Tensor

__all__ = ["assert_close"]

# (rtol, atol) per dtype when not given: PyTorch's defaults
_TOLERANCES = {
    "float16": (1e-3, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
}


def _fail(msg, default):
    raise AssertionError(default if msg is None else (msg(default) if callable(msg) else msg))


def _tolerances(dtype, rtol, atol):
    if (rtol is None) != (atol is None):
        raise ValueError(
            "Both 'rtol' and 'atol' must be either specified or omitted, but got "
            "no %s." % ("rtol" if rtol is None else "atol")
        )
    if rtol is None:
        return _TOLERANCES.get(dtype.name, (0.0, 0.0))
    return rtol, atol


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, msg):
    if actual._data.shape != expected._data.shape:
        _fail(
            msg,
            "The values for attribute 'shape' do not match: %r != %r."
            % (Size(actual._data.shape), Size(expected._data.shape)),
        )
    if check_dtype and actual._dtype is not expected._dtype:
        _fail(
            msg,
            "The values for attribute 'dtype' do not match: %s != %s."
            % (actual._dtype, expected._dtype),
        )
    dt = actual._dtype if check_dtype else _dt.promote_types(actual._dtype, expected._dtype)
    rtol, atol = _tolerances(dt, rtol, atol)
    a = np.asarray(actual._data, dtype=np.result_type(actual._data, expected._data))
    b = np.asarray(expected._data, dtype=a.dtype)
    if a.dtype == np.bool_:
        a, b = a.astype(np.int64), b.astype(np.int64)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    bad = ~close
    with np.errstate(all="ignore"):
        diff = np.abs(a - b).astype(np.float64)
        rel = diff / np.abs(b).astype(np.float64)
    nanpos = np.isnan(a) != np.isnan(b) if a.dtype.kind in "fc" else np.zeros_like(bad)
    diff = np.where(nanpos, np.nan, diff)
    rel = np.where(nanpos, np.nan, rel)
    lines = ["Tensor-likes are not close!" if a.ndim else "Scalars are not close!", ""]
    if a.ndim:
        lines.append(
            "Mismatched elements: %d / %d (%.1f%%)"
            % (bad.sum(), bad.size, 100.0 * bad.sum() / bad.size)
        )
        for word, d, tol in (("absolute", diff, atol), ("relative", rel, rtol)):
            flat = np.where(bad, d, -np.inf).ravel()
            k = int(np.nanargmax(np.where(np.isnan(flat), np.inf, flat)))
            idx = np.unravel_index(k, a.shape)
            lines.append(
                "Greatest %s difference: %s at index %s (up to %s allowed)"
                % (word, _num(flat[k]), tuple(int(i) for i in idx), tol)
            )
    else:
        lines += [
            "Expected %s but got %s." % (_num(b.item()), _num(a.item())),
            "Absolute difference: %s (up to %s allowed)" % (_num(diff.item()), atol),
            "Relative difference: %s (up to %s allowed)" % (_num(rel.item()), rtol),
        ]
    _fail(msg, "\n".join(lines))


def _num(v):
    return (
        "nan"
        if isinstance(v, float) and math.isnan(v)
        else repr(float(v))
        if isinstance(v, (float, np.floating))
        else repr(v)
    )


def assert_close(
    actual,
    expected,
    *,
    allow_subclasses=True,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_device=True,
    check_dtype=True,
    check_layout=True,
    check_stride=False,
    msg=None,
):
    """Raise ``AssertionError`` unless ``actual`` and ``expected`` are close: tensors (same
    shape, dtype unless ``check_dtype=False``), Python numbers, or sequences / mappings of
    them; ``|actual - expected| <= atol + rtol * |expected|`` with PyTorch's default
    tolerances per dtype."""
    if isinstance(actual, Tensor) or isinstance(expected, Tensor):
        if not (isinstance(actual, Tensor) and isinstance(expected, Tensor)):
            _fail(
                msg,
                "No comparison pair was able to handle inputs of type %s and %s."
                % (type(actual), type(expected)),
            )
        return _compare_tensors(actual, expected, rtol, atol, equal_nan, check_dtype, msg)
    if isinstance(actual, (bool, int, float, complex)) and isinstance(
        expected, (bool, int, float, complex)
    ):
        if check_dtype and type(actual) is not type(expected):
            _fail(
                msg,
                "The values for attribute 'dtype' do not match: %s != %s."
                % (type(actual), type(expected)),
            )
        rt, at = (
            (1e-7, 1e-7)
            if rtol is None and isinstance(expected, (float, complex))
            else ((0.0, 0.0) if rtol is None else (rtol, atol))
        )
        a, b = Tensor._make(np.asarray(actual)), Tensor._make(np.asarray(expected))
        return _compare_tensors(a, b, rt, at, equal_nan, False, msg)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            _fail(msg, "The keys of the mappings do not match")
        for k in expected:
            assert_close(
                actual[k],
                expected[k],
                rtol=rtol,
                atol=atol,
                equal_nan=equal_nan,
                check_dtype=check_dtype,
                msg=msg,
            )
        return
    if (
        isinstance(actual, Sequence)
        and isinstance(expected, Sequence)
        and not isinstance(actual, str)
    ):
        if len(actual) != len(expected):
            _fail(
                msg, "The length of the sequences mismatch: %d != %d" % (len(actual), len(expected))
            )
        for x, y in zip(actual, expected):
            assert_close(
                x, y, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=check_dtype, msg=msg
            )
        return
    _fail(
        msg,
        "No comparison pair was able to handle inputs of type %s and %s."
        % (type(actual), type(expected)),
    )
