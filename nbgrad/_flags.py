"""NOTE [one flag]: the per-op path checks ``TAPS`` once; it is True only while the profiler,
anomaly mode or saved-tensor hooks need to see every op.  Nobody listening = no extra work."""

TAPS = False


def refresh():
    global TAPS
    from .autograd.anomaly_mode import STATE as anomaly
    from .autograd.graph import _saved_hooks
    TAPS = bool(anomaly.enabled or _saved_hooks.stack)

FWD = False  # a forward-AD dual level is active: ops propagate tangents (autograd/forward_ad)
