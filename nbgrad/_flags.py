"""Module-global booleans that the per-op path tests instead of several states.  This module
imports no nbgrad module: the states it summarises push their changes here.

NOTE [one flag]: ``TAPS`` is True while anomaly mode is on or a ``saved_tensors_hooks`` context
is open in any thread.  Readers test it first and the precise state only when it is set:
ops/dispatch.py and ``Function.apply`` (record the forward trace for anomaly mode) and the saved
tensors of autograd/graph.py (look for pack hooks).  Writers: ``autograd.anomaly_mode`` calls
``set_anomaly``; ``saved_tensors_hooks.__enter__``/``__exit__`` call ``count_hook_context``.
"""

import threading

TAPS = False
FWD = False  # a forward-AD dual level is active: ops propagate tangents (autograd/forward_ad)

_lock = threading.Lock()  # TAPS sums two writers that may run in different threads
_anomaly = False
_hook_contexts = 0  # open saved_tensors_hooks contexts, all threads together


def set_anomaly(enabled):
    global _anomaly, TAPS
    with _lock:
        _anomaly = enabled
        TAPS = _anomaly or _hook_contexts > 0


def count_hook_context(delta):
    global _hook_contexts, TAPS
    with _lock:
        _hook_contexts += delta
        TAPS = _anomaly or _hook_contexts > 0


PROFILE = False  # an autograd.profiler.profile is recording (NOTE [profiler flag])


def set_profiling(enabled):
    global PROFILE
    PROFILE = bool(enabled)


# nbgrad.compile is capturing a function (NOTE [capture through the profiler flag]): the active
# capture, which profiler.op_call/leaf_op hand every top-level op call to.  PROFILE is True
# while it is set, so no hot path tests it.
CAPTURE = None
