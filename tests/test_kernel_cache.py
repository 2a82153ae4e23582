"""The kernel cache behaves like a well-kept library's (NOTE [kernel cache] in _config.py):
nbgrad's own folder, no change to the user's environment, a private fallback that must be ours,
in-memory compilation when nothing is writable, a one-line first-compile notice."""

import os
import subprocess
import sys

import pytest

import nbgrad
from nbgrad import _config

UNWRITABLE = "/proc/nbgrad-no-such-dir"  # not creatable even by root

RUN = """
import os, sys
import nbgrad
from nbgrad import _config
x = nbgrad.tensor([1.0, 2.0], requires_grad=True)
(x.sigmoid() * x).sum().backward()
assert abs(x.grad[0].item() - 0.927670) < 1e-5, x.grad
print("CACHE_DIR", _config.CACHE_DIR)
print("NUMBA_CACHE_DIR" in os.environ, any("nbgrad" in p and "cache" in p for p in sys.path))
"""


def _run(env_overrides, code=RUN):
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRAD_CACHE_DIR", "NUMBA_CACHE_DIR")}
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300
    )


def test_import_leaves_the_users_numba_settings_alone():
    assert os.environ.get("NUMBA_CACHE_DIR") is None or "NBGRAD" not in os.environ
    assert not any(p.endswith("nbgrad_gen") or "nbgrad-cache" in p for p in sys.path)
    r = _run({"NBGRAD_CACHE_DIR": os.environ.get("NBGRAD_CACHE_DIR", _config.CACHE_DIR or "")})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "False False"


def test_nothing_writable_chooses_no_folder(monkeypatch):
    monkeypatch.setattr(_config.tempfile, "gettempdir", lambda: UNWRITABLE)
    monkeypatch.setattr(_config.os.path, "expanduser", lambda p: p.replace("~", UNWRITABLE))
    assert _config.choose_cache_dir({"XDG_CACHE_HOME": UNWRITABLE}) is None
    assert _config.choose_cache_dir({"NBGRAD_CACHE_DIR": UNWRITABLE}) is None


def test_no_cache_folder_compiles_in_memory():
    # the path a read-only machine takes: CACHE_DIR None, kernels compiled in memory
    r = _run({"NBGRAD_DISABLE_CACHE": "1", "NBGRAD_QUIET": "1"})
    assert r.returncode == 0, r.stderr
    assert "CACHE_DIR None" in r.stdout


def test_platform_cache_folder_is_versioned(tmp_path):
    r = _run({"XDG_CACHE_HOME": str(tmp_path), "NBGRAD_QUIET": "1"})
    assert r.returncode == 0, r.stderr
    assert "CACHE_DIR %s" % (tmp_path / "nbgrad" / nbgrad.__version__) in r.stdout
    assert (tmp_path / "nbgrad" / nbgrad.__version__ / "numba").is_dir()


def _planted(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    uid = os.getuid()
    planted = tmpdir / ("nbgrad-%d" % uid)
    planted.mkdir()
    return tmpdir, planted


def test_world_writable_fallback_is_refused(tmp_path):
    tmpdir, planted = _planted(tmp_path)
    os.chmod(planted, 0o777)
    r = _run(
        {
            "XDG_CACHE_HOME": UNWRITABLE,
            "HOME": UNWRITABLE,
            "TMPDIR": str(tmpdir),
            "NBGRAD_QUIET": "1",
        }
    )
    assert r.returncode == 0, r.stderr
    cache = r.stdout.split("CACHE_DIR ")[1].split()[0]
    assert not cache.startswith(str(planted) + os.sep) and cache.startswith(str(tmpdir))
    assert not any(planted.iterdir())  # nothing imported from, or written to, the planted folder


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to plant a folder owned by another user")
def test_foreign_owned_fallback_is_refused(tmp_path):
    tmpdir, planted = _planted(tmp_path)
    os.chmod(planted, 0o700)
    os.chown(planted, 12345, 12345)
    assert not _config.is_private(str(planted))
    r = _run(
        {
            "XDG_CACHE_HOME": UNWRITABLE,
            "HOME": UNWRITABLE,
            "TMPDIR": str(tmpdir),
            "NBGRAD_QUIET": "1",
        }
    )
    assert r.returncode == 0, r.stderr
    cache = r.stdout.split("CACHE_DIR ")[1].split()[0]
    assert not cache.startswith(str(planted) + os.sep)


def test_private_fallback_is_created_0700(tmp_path):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    r = _run(
        {
            "XDG_CACHE_HOME": UNWRITABLE,
            "HOME": UNWRITABLE,
            "TMPDIR": str(tmpdir),
            "NBGRAD_QUIET": "1",
        }
    )
    assert r.returncode == 0, r.stderr
    folder = tmpdir / ("nbgrad-%d" % os.getuid())
    assert (os.stat(folder).st_mode & 0o777) == 0o700
    assert "CACHE_DIR %s" % (folder / nbgrad.__version__) in r.stdout


def test_first_compile_notice_once_and_silenceable(tmp_path):
    r = _run({"NBGRAD_CACHE_DIR": str(tmp_path / "c")})
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("nbgrad: compiling kernels on first use") == 1
    r = _run({"NBGRAD_CACHE_DIR": str(tmp_path / "c")})  # warm cache: silent
    assert "compiling" not in r.stderr
    r = _run({"NBGRAD_CACHE_DIR": str(tmp_path / "d"), "NBGRAD_QUIET": "1"})
    assert "compiling" not in r.stderr
