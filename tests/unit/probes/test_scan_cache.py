"""The consumer scan's on-disk cache (``cudnn_magic.util.disk_cache``, kind ``scan``): a second
check in a NEW process reads only what changed, and every change a user or pip can make is seen.

Each scan runs in a child process with the same ``XDG_CACHE_HOME`` (the first fills the cache,
the next ones use it), on a site-packages built here: a stand-in consumer library that NEEDs
``libcudnn.so.9`` (built with gcc, named as a stand-in) beside the real cuDNN JIT wheel, and a
pure-Python distribution. What the child reports is how many file lists (``RECORD``) and ELF
files it read, and which consumers it found.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_magic.util import disk_cache
from helpers.builders import dist_info
from helpers.consumer_standins import consumer, link_stub, need_gcc, standin_site
from helpers.real_wheels import install_wheel

pytestmark = pytest.mark.native

JIT = ("nvidia-cudnn-jit-cu12", "9.27.0.42")

SCAN = r"""
import json, sys
from cudnn_magic.probes import loader
from cudnn_magic.probes.frameworks.generic import scan_environment
s = scan_environment([sys.argv[1]], conda=False)
print(json.dumps({"consumers": sorted(f"{d.label}:{l.path.rsplit('/', 1)[-1]}:{','.join(l.cudnn_needed)}"
                                      for d in s.distributions for l in d.consumers),
                  "lists_read": s.stats["lists_read"], "records": s.stats["records"],
                  "elf_reads": loader.cache_stats()["elf_reads"]}))
"""


def scan(site: Path, cache: Path) -> dict:
    """The scan of ``site`` in a new process using the disk cache in ``cache``."""
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run([sys.executable, "-c", SCAN, str(site)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def age(*paths: Path, seconds: float = 60.0) -> None:
    """Move the mtime of ``paths`` back (files changed within ``RACY_S`` are not cached, as git
    treats its racy entries: a second change could keep their size and mtime)."""
    for p in paths:
        st = os.lstat(p)
        t = st.st_mtime_ns - int(seconds * 1e9)
        os.utime(p, ns=(t, t), follow_symlinks=False)


def site_with_consumer(tmp_path: Path) -> tuple[Path, Path]:
    need_gcc()
    site, lib = standin_site(tmp_path, install_wheel(*JIT))
    (site / "plain").mkdir()
    dist_info(site, "pure-python", "1.0", ["plain/__init__.py", "plain/util.py"])
    age(lib, *site.glob("*.dist-info/RECORD"))
    return site, lib


def cache_file(cache: Path) -> Path:
    files = list((cache / "cudnn_magic" / "scan").glob("*.json"))
    assert len(files) == 1, files
    return files[0]


def test_a_second_check_in_a_new_process_reads_nothing_that_did_not_change(tmp_path):
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    first = scan(site, cache)
    assert first["consumers"] == ["standin-cudnn9-consumer 1.0:libstandin_consumer.so:libcudnn.so.9"]
    assert first["lists_read"] == 2 and first["elf_reads"] >= 1
    second = scan(site, cache)
    assert second["consumers"] == first["consumers"]
    assert (second["lists_read"], second["elf_reads"], second["records"]) == (0, 0, 2)
    # written exclusively there: 0700 folders, a 0600 regular file of this user's
    f = cache_file(cache)
    for d in (f.parent, f.parent.parent):
        assert stat.S_IMODE(os.lstat(d).st_mode) == 0o700 and stat.S_ISDIR(os.lstat(d).st_mode)
    st = os.lstat(f)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()


def test_a_reinstalled_wheel_is_read_again(tmp_path):
    """pip replaces a wheel: a new RECORD, a new library that no longer NEEDs cuDNN."""
    site, lib = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    assert scan(site, cache)["consumers"]
    lib.unlink()
    link_stub(tmp_path, "libnothing.so.1")  # the new build links something else
    consumer(tmp_path, lib, "libnothing.so.1", "$ORIGIN", True)
    dist_info(site, "standin-cudnn9-consumer", "1.0", ["standin_consumer/libstandin_consumer.so", "standin_consumer/new.py"])
    age(lib, *site.glob("standin_cudnn9*/RECORD"))
    after = scan(site, cache)
    assert after["consumers"] == [] and after["lists_read"] == 1


def test_a_library_replaced_by_hand_is_read_again(tmp_path):
    """The RECORD is unchanged; the consumer's library file is not (copied over by hand): its new
    DT_NEEDED is seen."""
    site, lib = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    assert scan(site, cache)["consumers"] == ["standin-cudnn9-consumer 1.0:libstandin_consumer.so:libcudnn.so.9"]
    link_stub(tmp_path, "libcudnn.so.8")
    new = consumer(tmp_path, tmp_path / "rebuilt.so", "libcudnn.so.8", "$ORIGIN", True)
    os.replace(new, lib)
    age(lib)
    after = scan(site, cache)
    assert after["consumers"] == ["standin-cudnn9-consumer 1.0:libstandin_consumer.so:libcudnn.so.8"]
    assert after["lists_read"] == 0 and after["elf_reads"] == 1


def test_a_pure_python_distribution_that_gains_a_consumer_is_found(tmp_path):
    """A distribution with no native library at the first scan (its RECORD lists none) is skipped
    after that on its RECORD's key alone; reinstalled with a library that NEEDs cuDNN, it is found."""
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    scan(site, cache)
    lib = consumer(tmp_path, site / "plain" / "_ext.so", "libcudnn.so.9", "$ORIGIN/../nvidia/cudnn_jit/lib", True)
    dist_info(site, "pure-python", "1.1", ["plain/__init__.py", "plain/_ext.so"])  # a new .dist-info folder
    import shutil

    shutil.rmtree(site / "pure_python-1.0.dist-info")
    age(lib, *site.glob("pure_python*/RECORD"))
    after = scan(site, cache)
    assert "pure-python 1.1:_ext.so:libcudnn.so.9" in after["consumers"] and after["lists_read"] == 1


def test_a_file_changed_just_now_is_not_trusted_to_the_cache(tmp_path):
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    record = site / "pure_python-1.0.dist-info" / "RECORD"
    record.write_text(record.read_text() + "plain/more.py,,\n")  # mtime now: within RACY_S
    scan(site, cache)
    assert scan(site, cache)["lists_read"] == 1  # read again: its (size, mtime) may not tell yet
    age(record)
    scan(site, cache)
    assert scan(site, cache)["lists_read"] == 0


@pytest.mark.parametrize("garbage", [b"", b"{not json", b"\x00" * 100, b"[]", b'{"format": 1}'])
def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path, garbage):
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    want = scan(site, cache)["consumers"]
    f = cache_file(cache)
    f.write_bytes(garbage)
    got = scan(site, cache)
    assert got["consumers"] == want and got["lists_read"] == 2
    assert scan(site, cache)["lists_read"] == 0  # rewritten


def test_a_foreign_cache_is_ignored(tmp_path):
    """A cache file whose content claims another key, format or kind, or whose entries lie about a
    RECORD (another inode): what the files say wins."""
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    want = scan(site, cache)["consumers"]
    f = cache_file(cache)
    doc = json.loads(f.read_bytes())
    for bad in ({**doc, "key": "pip:/elsewhere"}, {**doc, "format": doc["format"] + 1}, {**doc, "kind": "other"}):
        f.write_text(json.dumps(bad))
        got = scan(site, cache)
        assert got["consumers"] == want and got["lists_read"] == 2, bad
    lying = json.loads(f.read_bytes())
    for row in lying["value"]["lists"].values():
        row[0][1] += 1  # another inode
        row[3] = []  # "no native library"
    f.write_text(json.dumps(lying))
    got = scan(site, cache)
    assert got["consumers"] == want and got["lists_read"] == 2


def test_a_cache_others_may_write_is_not_read(tmp_path):
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    scan(site, cache)
    f = cache_file(cache)
    os.chmod(f, 0o666)
    assert scan(site, cache)["lists_read"] == 2
    os.chmod(f, 0o600)
    os.chmod(f.parent, 0o777)
    assert scan(site, cache)["lists_read"] == 2


def test_a_planted_link_is_replaced_never_followed(tmp_path):
    """A link planted at the cache file's place (pointing at a file of the user's) is neither read
    nor written through: the victim keeps its bytes, and the link is replaced by the cache file."""
    site, _ = site_with_consumer(tmp_path)
    cache = tmp_path / "xdg"
    scan(site, cache)
    f = cache_file(cache)
    victim = tmp_path / "victim.txt"
    before = f.read_bytes()
    victim.write_bytes(before)  # even a valid cache behind the link is not read
    f.unlink()
    f.symlink_to(victim)
    got = scan(site, cache)
    assert got["lists_read"] == 2
    assert not f.is_symlink() and stat.S_ISREG(os.lstat(f).st_mode)
    assert victim.read_bytes() == before
    # a linked folder is not used at all
    scan_dir = f.parent
    for x in scan_dir.iterdir():
        x.unlink()
    scan_dir.rmdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    scan_dir.symlink_to(elsewhere, target_is_directory=True)
    assert scan(site, cache)["lists_read"] == 2
    assert list(elsewhere.iterdir()) == []
    assert scan(site, cache)["lists_read"] == 2


def test_store_and_load_refuse_what_they_should(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert disk_cache.store("scan", "k", {"a": [1, "\udcff"]}) is True
    assert disk_cache.load("scan", "k") == {"a": [1, "\udcff"]}  # a path that is not UTF-8 comes back
    assert disk_cache.load("scan", "other") is None and disk_cache.load("rtld", "k") is None
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # the XDG spec: ignored, ~/.cache instead
    assert disk_cache.cache_root() == os.path.join(os.path.expanduser("~"), ".cache", "cudnn_magic")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "ro"))
    (tmp_path / "ro").mkdir(mode=0o500)
    if os.geteuid() != 0:  # root writes anyway
        assert disk_cache.store("scan", "k", {}) is False
    assert disk_cache.load("scan", "k") is None


def test_a_home_that_does_not_exist_gets_no_cache_and_is_never_created(tmp_path, monkeypatch):
    """A service account's ``HOME=/nonexistent`` (Debian's ``nobody``; a job started with a bare
    environment) means no home. ``check --pid`` run as root with such an environment created
    ``/nonexistent/.cache/cudnn_magic`` (the scan, file and code caches, and the wheel records)."""
    from cudnn_magic.probes import wheel_record

    home = tmp_path / "nonexistent"
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(home))
    assert disk_cache.cache_root() is None and wheel_record.cache_dir() is None
    assert disk_cache.store("scan", "k", {"a": 1}) is False
    assert disk_cache.load("scan", "k") is None
    wheel_record._remember("0" * 64, "x")
    assert wheel_record._cached("0" * 64) is None
    assert not home.exists()
    home.mkdir()  # an existing home gets its ~/.cache as before
    assert disk_cache.cache_root() == str(home / ".cache" / "cudnn_magic")
    assert disk_cache.store("scan", "k", {"a": 1}) is True and disk_cache.load("scan", "k") == {"a": 1}


# ----------------------------------------------------------------------------- the loader's own facts

RTLD = r"""
import json, subprocess
calls = []
run = subprocess.run
def counted(*a, **k):
    calls.append(a[0][:2])
    return run(*a, **k)
subprocess.run = counted
from cudnn_magic.probes.loader import rtld_facts
f = rtld_facts()
print(json.dumps({"children": len(calls), "facts": [list(f.system_dirs), f.dst_lib, f.platform, list(f.subdirs)]}))
"""


def rtld(cache: Path, **env: str) -> dict:
    e = dict(os.environ, XDG_CACHE_HOME=str(cache), **env)
    p = subprocess.run([sys.executable, "-c", RTLD], capture_output=True, text=True, env=e, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_the_loaders_own_facts_are_asked_once_per_machine(tmp_path):
    """``ld.so --list-diagnostics`` and its ``LD_DEBUG=libs`` search path: two child processes the
    first time, none in the next process; asked again when what they depend on changes
    (``GLIBC_TUNABLES`` can take hardware capabilities away), and when the cache is corrupt."""
    if not any(os.path.exists(r) for r in ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")):
        pytest.skip("no glibc loader at a known place")
    cache = tmp_path / "xdg"
    first = rtld(cache)
    assert first["children"] == 2
    again = rtld(cache)
    assert again == {"children": 0, "facts": first["facts"]}
    tuned = rtld(cache, GLIBC_TUNABLES="glibc.cpu.hwcaps=-AVX2")
    assert tuned["children"] == 2
    for f in (cache / "cudnn_magic" / "rtld").glob("*.json"):
        f.write_bytes(b"[1, 2")
    assert rtld(cache)["children"] == 2
    assert rtld(cache) == {"children": 0, "facts": first["facts"]}


# ----------------------------------------------------------------------------- facts read from files

FACTS = r"""
import json, sys
from cudnn_magic.probes import elf, loader, owners
counts = {"elf": 0, "symbols": 0, "record": 0, "sha256": 0}
def counting(name, module, attr):
    real = getattr(module, attr)
    def wrapped(*a, **k):
        counts[name] += 1
        return real(*a, **k)
    setattr(module, attr, wrapped)
counting("elf", loader, "read_dynamic")
counting("symbols", elf, "read_symbol_bytes")
counting("record", owners, "_record_bytes")
counting("sha256", owners, "file_digest")
from cudnn_magic.probes.installed import probe_installed
from cudnn_magic.probes.scope import check_scope
with check_scope():
    inv = probe_installed(extra_dirs=((sys.argv[1], "test"),), query_unknown=False)
print(json.dumps({"counts": counts, "copies": sorted((c.name, c.version, c.owner, c.owner_evidence) for c in inv.copies)}))
"""


def facts(folder: Path, cache: Path) -> dict:
    env = dict(os.environ, XDG_CACHE_HOME=str(cache))
    p = subprocess.run([sys.executable, "-c", FACTS, str(folder)], capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_what_a_check_read_from_unchanged_files_is_not_read_again_in_a_new_process(tmp_path):
    """The dynamic sections of the cuDNN files, the version constant in the graph library, the
    shim's sha256 and the wheel RECORD's native rows: read by the first process, taken from the
    disk cache by the next (the same inventory), read again for a file that changed."""
    import shutil

    wheel = tmp_path / "wheel"
    shutil.copytree(install_wheel(*JIT), wheel, symlinks=True)
    lib = wheel / "nvidia" / "cudnn_jit" / "lib"
    age(*[p for p in wheel.rglob("*") if p.is_file()])
    cache = tmp_path / "xdg"
    first = facts(lib, cache)
    assert all(first["counts"][k] > 0 for k in ("elf", "symbols", "record", "sha256")), first["counts"]
    assert any(v == "9.27.0" for _, v, _, _ in first["copies"])
    second = facts(lib, cache)
    assert second["counts"] == {"elf": 0, "symbols": 0, "record": 0, "sha256": 0}
    assert second["copies"] == first["copies"]
    graph = lib / "libcudnn_graph.so.9"
    st = os.stat(graph)
    os.utime(graph, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))  # "changed": another mtime, long ago
    third = facts(lib, cache)
    assert third["counts"]["elf"] == 1 and third["counts"]["symbols"] == 1, third["counts"]
    assert third["copies"] == first["copies"]
