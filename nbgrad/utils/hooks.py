"""``RemovableHandle`` (what every ``register_*hook`` returns) and ``add_hook`` (how every
registration site inserts).  A leaf module: nbgrad._tensor imports it.

Hook registries are ``dict``s keyed by handle id (insertion ordered), so ``prepend=True`` is a
rebuild with the new id first and removal is a ``pop``.
"""

import itertools
import weakref

__all__ = ["RemovableHandle", "add_hook", "unserializable_hook"]


# Bumped by every hook registration and removal: nbgrad.compile's guard that no hook changed
# since a function was captured (the captured graph may run through a module whose hooks now
# make it opaque).  A list so importers share it.
EPOCH = [0]


class RemovableHandle:
    """Removes its hook from one or more registries; idempotent; a context manager."""

    _ids = itertools.count()
    __slots__ = ("id", "_refs", "__weakref__")

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.id = next(RemovableHandle._ids)
        dicts = [hooks_dict] + (
            list(extra_dict)
            if isinstance(extra_dict, (list, tuple))
            else ([extra_dict] if extra_dict is not None else [])
        )
        self._refs = tuple(_ref(d) for d in dicts)

    def remove(self):
        EPOCH[0] += 1
        for r in self._refs:
            d = r()
            if d is not None:
                d.pop(self.id, None)

    def __getstate__(self):  # the registries are held weakly; a pickle holds them (as PyTorch)
        return (self.id, tuple(r() for r in self._refs))

    def __setstate__(self, state):
        self.id, dicts = state
        self._refs = tuple(_ref(d) for d in dicts if d is not None)
        RemovableHandle._ids = itertools.count(max(next(RemovableHandle._ids), self.id + 1))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class _Strong:
    __slots__ = ("d",)

    def __init__(self, d):
        self.d = d

    def __call__(self):
        return self.d


def _ref(d):
    try:
        return weakref.ref(d)
    except TypeError:  # plain dicts are not weak-referenceable
        return _Strong(d)


class HookDict(dict):
    """A dict that can be weakly referenced (so a handle never keeps a graph alive)."""

    __slots__ = ("__weakref__",)


def prepend_to(d, key):
    """Move ``key`` to the front of ordered dict ``d``."""
    items = list(d.items())
    d.clear()
    for k, v in items:
        if k == key:
            d[k] = v
    for k, v in items:
        if k != key:
            d[k] = v


def add_hook(registry, fn, *, prepend=False, extra=None):
    """Register ``fn`` in ``registry`` and return its handle.  ``extra``: a dict or list of
    dicts holding per-hook flags (``with_kwargs``, ...) that removal must clear too."""
    h = RemovableHandle(registry, extra_dict=extra)
    EPOCH[0] += 1
    registry[h.id] = fn
    if prepend:
        prepend_to(registry, h.id)
    return h


def unserializable_hook(f):
    """Mark a tensor hook as not serialized on purpose: pickling its tensor does not warn."""
    f.__torch_unserializable__ = True
    return f
