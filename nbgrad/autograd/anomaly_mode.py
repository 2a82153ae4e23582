"""Anomaly detection switches: ``detect_anomaly``, ``set_detect_anomaly``.

While enabled, nodes record the forward stack at creation and the engine checks each node's
outputs for NaN (engine._apply_anomalous).
"""

import functools
import warnings

from .. import _flags

__all__ = [
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]


class _Anomaly:
    """Process-global, unlike grad mode: PyTorch's anomaly mode is one static flag.
    See NOTE [mode state] in grad_mode.py."""

    enabled = False
    check_nan = True


STATE = _Anomaly()


def is_anomaly_enabled():
    return STATE.enabled


def is_anomaly_check_nan_enabled():
    return STATE.check_nan


def _set(mode, check_nan):
    STATE.enabled = bool(mode)
    STATE.check_nan = bool(check_nan)
    _flags.set_anomaly(STATE.enabled)


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection."""

    def __init__(self, check_nan=True):
        self.prev = STATE.enabled
        self.prev_nan = STATE.check_nan
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime "
            "and should only be enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_nan)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*a, **k):
            with self.__class__(self.check_nan):
                return func(*a, **k)

        return wrapper


class set_detect_anomaly:
    """Set anomaly mode now; also usable as a context manager restoring the previous mode."""

    def __init__(self, mode, check_nan=True):
        self.prev = STATE.enabled
        self.prev_nan = STATE.check_nan
        _set(mode, check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_nan)
        return False
