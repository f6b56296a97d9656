"""``cudnn_magic.util.codecache``: the methods ``dataclasses`` writes for this package's classes are
compiled once per machine in the command line's own process (never in a kernel or a script that
imports the package), and the classes behave exactly as ``dataclasses`` makes them.

Each case runs in a fresh interpreter with its own ``XDG_CACHE_HOME`` (the first process writes
the cache at exit, the next reads it) and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

CHILD = r"""
import builtins, dataclasses, json, sys
compiled = []
real_compile = builtins.compile
def counting(src, *a, **k):
    compiled.append(src if isinstance(src, str) else "")
    return real_compile(src, *a, **k)
builtins.compile = counting
import cudnn_magic.cli  # the command line's process (cudnn-magic, python -m cudnn_magic)
from cudnn_magic.model import Fix, Finding, LibraryCopy
ours = [s for s in compiled if s.startswith("def __create_fn__")]
f1 = Fix("restart-kernel", "Restart", "restart it", True)
f2 = Fix("restart-kernel", "Restart", "restart it", True)
try:
    f1.title = "x"
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
c = LibraryCopy(path="/x/libcudnn.so.9", name="libcudnn.so.9", soname="libcudnn.so.9")
# a user's own dataclass goes through plain exec: never cached, never served from the cache
from cudnn_magic.util import codecache as _codecache
n = len(compiled), len(_codecache._codes or {})
@dataclasses.dataclass
class Mine:
    a: int = 1
mine = (len(compiled), len(_codecache._codes or {})) != n
print(json.dumps({"compiled_ours": len(ours), "eq": f1 == f2, "hash": hash(f1) == hash(f2), "frozen": frozen,
                  "repr": repr(f1), "replace": dataclasses.replace(c, version="9.1.0").version,
                  "fields": [f.name for f in dataclasses.fields(Finding)], "mine_compiled": bool(mine),
                  "mine": repr(Mine())}))
"""


def run(cache: Path) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def cache_files(cache: Path) -> list[Path]:
    """One file per module that has dataclasses (``code/<tag>/<module>.marshal``)."""
    files = sorted((cache / "cudnn_magic" / "code").glob("*/*.marshal"))
    assert files and any(f.name == "cudnn_magic.model.report.marshal" for f in files), files
    return files


def cache_file(cache: Path) -> Path:
    return next(f for f in cache_files(cache) if f.name == "cudnn_magic.model.report.marshal")


def same_classes(got: dict) -> None:
    assert got["eq"] and got["hash"] and got["frozen"]
    assert got["repr"] == "Fix(id='restart-kernel', title='Restart', action='restart it', restart_required=True, " \
                          "applicable=False, reason='')"
    assert got["replace"] == "9.1.0" and got["fields"][:2] == ["id", "severity"]
    assert got["mine"] == "Mine(a=1)" and not got["mine_compiled"]


def test_the_second_process_compiles_none_of_our_generated_methods(tmp_path):
    cache = tmp_path / "xdg"
    first = run(cache)
    assert first["compiled_ours"] > 20
    same_classes(first)
    f = cache_file(cache)
    st = os.lstat(f)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert stat.S_IMODE(os.lstat(f.parent).st_mode) == 0o700
    second = run(cache)
    assert second["compiled_ours"] == 0
    same_classes(second)


@pytest.mark.parametrize("garbage", [b"", b"\x00garbage", b"\xe3\x00\x00", None])
def test_a_corrupt_or_foreign_cache_is_ignored(tmp_path, garbage):
    import marshal

    cache = tmp_path / "xdg"
    run(cache)
    for f in cache_files(cache):
        # None: a valid marshal file that is not {source: code} (a dict of other things)
        f.write_bytes(marshal.dumps({"def __create_fn__(): pass": "not code", 1: 2}) if garbage is None else garbage)
    got = run(cache)
    assert got["compiled_ours"] > 20
    same_classes(got)
    assert run(cache)["compiled_ours"] == 0  # rewritten


def test_a_cache_others_may_write_or_a_link_is_not_used(tmp_path):
    cache = tmp_path / "xdg"
    run(cache)
    f = cache_file(cache)
    os.chmod(f, 0o666)
    assert run(cache)["compiled_ours"] > 10  # the report's classes compiled again
    assert run(cache)["compiled_ours"] == 0  # replaced by one of ours
    victim = tmp_path / "victim"
    victim.write_bytes(f.read_bytes())
    f.unlink()
    f.symlink_to(victim)
    before = victim.read_bytes()
    assert run(cache)["compiled_ours"] > 10  # not read through the link
    assert victim.read_bytes() == before and not f.is_symlink()  # nor written through it


def test_a_changed_modules_old_code_goes(tmp_path):
    """A module's file holds exactly what the last process that compiled for it used: an entry of
    an older version of the module (source text no class makes any more) is not kept."""
    import marshal

    cache = tmp_path / "xdg"
    run(cache)
    f = cache_file(cache)
    codes = marshal.loads(f.read_bytes())
    stale = "def __create_fn__():\n def __init__(self):\n  pass\n return __init__"
    codes.pop(next(iter(codes)))  # one class "changed": its code must be compiled again
    codes[stale] = compile(stale, "<string>", "exec")
    f.write_bytes(marshal.dumps(codes))
    assert run(cache)["compiled_ours"] == 1
    kept = marshal.loads(f.read_bytes())
    assert stale not in kept and len(kept) == len(codes)


def test_a_kernel_or_script_that_imports_the_package_keeps_dataclasses_as_it_is(tmp_path):
    """Only the command line's own process swaps ``dataclasses.exec``: a user's kernel (``%load_ext``
    imports the extension and the result types) or script keeps the standard library untouched,
    and no code cache is read or written for it."""
    child = (
        "import builtins, dataclasses, json\n"
        "import cudnn_magic, cudnn_magic.model, cudnn_magic.shell.extension\n"
        "print(json.dumps({'exec_untouched': getattr(dataclasses, 'exec', builtins.exec) is builtins.exec}))\n")
    cache = tmp_path / "xdg"
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert json.loads(p.stdout.strip().splitlines()[-1]) == {"exec_untouched": True}
    assert not (cache / "cudnn_magic" / "code").exists()
