"""Process-wide settings fixed at import: the version and where compiled kernels are cached.

NOTE [kernel cache]: nbgrad's kernels (its own ``@njit`` functions and the generated formula
kernels) are cached in one folder of nbgrad's, chosen here without touching the environment:
``NBGRAD_CACHE_DIR``, else a user-set ``NUMBA_CACHE_DIR``, else the platform's user cache folder
(XDG on Linux), else a private folder in the temp dir that must be ours (owner and mode checked,
created 0700), else a fresh ``mkdtemp`` folder; with nothing writable, kernels compile in memory.
The folder is versioned, so a new release never loads kernels compiled from older sources.
``kernels/__init__.py`` points Numba's cache at it for nbgrad's files only (a cache locator):
the user's own Numba caches, ``NUMBA_CACHE_DIR``, ``sys.path`` and environment are left alone.
"""

import os
import stat
import sys
import tempfile

VERSION = "0.1.0"


def _writable(path):
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        probe = os.path.join(path, ".probe-%d" % os.getpid())
        with open(probe, "w"):
            pass
        os.remove(probe)
        return True
    except OSError:
        return False


def user_cache_root():
    """The platform's per-user cache folder (platformdirs conventions)."""
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~\\AppData\\Local")
        return os.path.join(base, "nbgrad", "Cache")
    if sys.platform == "darwin":
        return os.path.join(os.path.expanduser("~/Library/Caches"), "nbgrad")
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "nbgrad")


def is_private(path):
    """True if ``path`` is a real folder (no link) owned by this user and closed to others:
    nothing is imported from a folder another user could have planted."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not (st.st_mode & 0o077) or sys.platform == "win32"


def private_temp_root():
    """``<tmp>/nbgrad-<uid>``, created 0700; if it exists but is not private (another user's,
    or open to others), a fresh ``mkdtemp`` folder instead; None if the temp dir is read-only."""
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    path = os.path.join(tempfile.gettempdir(), "nbgrad-%s" % uid)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    if is_private(path):
        return path
    try:
        return tempfile.mkdtemp(prefix="nbgrad-")
    except OSError:
        return None


def choose_cache_dir(environ=os.environ):
    if environ.get("NBGRAD_DISABLE_CACHE", "") == "1":
        return None
    for user_set in (environ.get("NBGRAD_CACHE_DIR"), environ.get("NUMBA_CACHE_DIR")):
        if user_set:
            return user_set if _writable(user_set) else None
    root = user_cache_root()
    if _writable(os.path.join(root, VERSION)):
        return os.path.join(root, VERSION)
    tmp = private_temp_root()
    if tmp is not None and _writable(os.path.join(tmp, VERSION)):
        return os.path.join(tmp, VERSION)
    return None  # nothing writable: compile in memory


CACHE_DIR = choose_cache_dir()
# Kernels compile with cache=True only when a writable folder exists.
USE_DISK_CACHE = CACHE_DIR is not None
