"""The on-disk cache's file names (``util/disk_cache.py``) only spread keys over files: the key is
stored in the file and compared on every read, so two keys that came to share a name (the name is
64 bits of zlib's CRC-32 and Adler-32 of the key) cost a miss, never the other key's answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from cudnn_magic.util import disk_cache


def test_a_name_shared_by_two_keys_is_a_miss_then_rewritten(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    a, b = "pip:/site/a", "pip:/site/b"
    assert disk_cache.store("scan", a, {"who": "a"})
    path_a, path_b = disk_cache._path("scan", a), disk_cache._path("scan", b)
    assert path_a is not None and path_b is not None and path_a != path_b
    assert disk_cache.load("scan", a) == {"who": "a"}
    shutil.copyfile(path_a, path_b)  # as if b's name were a's: the file under b's name holds key a
    os.chmod(path_b, 0o600)
    assert disk_cache.load("scan", b) is None  # a's answer is never b's
    assert disk_cache.store("scan", b, {"who": "b"})
    assert disk_cache.load("scan", b) == {"who": "b"}
    assert disk_cache.load("scan", a) == {"who": "a"}  # a's own file is untouched


def test_names_are_stable_and_spread(tmp_path, monkeypatch):
    """The same key gets the same name in every process (no per-process hash seed), and the
    names of many similar keys (one library each) do not collide."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    names = {disk_cache._path("files", f"/usr/lib/x86_64-linux-gnu/libcudnn_ops.so.9.{i}") for i in range(5000)}
    assert len(names) == 5000
    here = disk_cache._path("rtld", "/lib64/ld-linux-x86-64.so.2")
    code = "from cudnn_magic.util import disk_cache; print(disk_cache._path('rtld', '/lib64/ld-linux-x86-64.so.2'))"
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path), PYTHONHASHSEED="12345")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                           cwd=str(Path(disk_cache.__file__).parents[2])).stdout.strip()
    assert other == here
