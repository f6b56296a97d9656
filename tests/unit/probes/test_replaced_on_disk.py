"""A cuDNN replaced on disk while the kernel runs: ``%pip install -U`` (or a reinstall) in a kernel
that already mapped libcudnn. pip removes the old files (an upgrade in site-packages first renames
them into a stash folder beside them, ``nvidia/cudnn_jit/~ib/``, then deletes it; ``--target
--upgrade`` deletes the old folder and moves the new one in), so ``/proc/self/maps`` names the old
mapping ``... (deleted)`` while the path now holds the new release. The check must report the
release the kernel really runs (read from the mapped copy, never from the new file at its path), say
that a restart loads the new one, and offer the restart only when it changes the release.

Real wheels: nvidia-cudnn-jit-cu12 9.12.0.46 loaded from a folder, then a real ``pip install
--no-deps --upgrade --target`` of the real 9.27.0.42 wheel over it (tests/helpers/real_wheels.py). Version
queries need no GPU.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from helpers.real_wheels import install_wheel, wheel_file
from helpers.support import NOBODY, outputs_text, run_notebook, world_readable_dir

CHECK = "r = %cudnn_check --json\nprint('JSON' + json.dumps(r))"


def _json(cell):
    line = [ln for ln in outputs_text(cell).splitlines() if ln.startswith("JSON{")][-1]
    return json.loads(line[4:])


def _folder_with_912(tmp):
    """A --target folder holding the real 9.12 wheel, as pip left it (a copy: the cache stays)."""
    src = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")
    target = tmp / "site"
    shutil.copytree(src, target)
    return target


LOAD = ("import ctypes, os\n"
        "lib = ctypes.CDLL({shim!r}, mode=os.RTLD_GLOBAL | os.RTLD_NOW)\n"
        "lib.cudnnGetVersion.restype = ctypes.c_size_t\n"
        "print('VERSION', lib.cudnnGetVersion())")
PIP = ("import subprocess, sys\n"
       "r = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-deps', '--no-index', '--upgrade',\n"
       "                    '--disable-pip-version-check', '--target', {target!r}, {wheel!r}],\n"
       "                   capture_output=True, text=True)\n"
       "print('PIP', r.returncode, r.stderr[-2000:])")


@pytest.mark.kernel
def test_upgrade_under_a_running_kernel_reports_the_mapped_release(tmp_path):
    target = _folder_with_912(tmp_path)
    new_wheel = wheel_file("nvidia-cudnn-jit-cu12", "9.27.0.42")
    lib = target / "nvidia" / "cudnn_jit" / "lib"
    shim, graph = str(lib / "libcudnn.so.9"), str(lib / "libcudnn_graph.so.9")
    nb = run_notebook([
        "import json\n%load_ext cudnn_magic",
        LOAD.format(shim=shim),
        CHECK,
        PIP.format(target=str(target), wheel=str(new_wheel)),
        CHECK,
        "%cudnn_check",
        "raise RuntimeError('cuDNN error: CUDNN_STATUS_VERSION_MISMATCH')",
        "print('VERSION', lib.cudnnGetVersion())",
    ], tmp_path, timeout=300)
    assert "VERSION 91200" in outputs_text(nb.cells[1])
    assert "PIP 0" in outputs_text(nb.cells[3]), outputs_text(nb.cells[3])
    assert "VERSION 91200" in outputs_text(nb.cells[7])  # the kernel still runs 9.12
    before, after = _json(nb.cells[2]), _json(nb.cells[4])

    rows = {c["path"]: c for c in before["cudnn_loaded"]}
    assert rows[shim]["version"] == rows[graph]["version"] == "9.12.0"
    assert not any(f["id"] == "cudnn-replaced-on-disk" for f in before["findings"])

    loaded = after["cudnn_loaded"]
    assert sorted(c["path"] for c in loaded) == sorted([shim, graph]), loaded  # no stash path, no duplicate
    rows = {c["path"]: c for c in loaded}
    for p in (shim, graph):
        assert rows[p]["version"] == "9.12.0", rows[p]
        assert rows[p]["replaced_on_disk"] and "9.27.0" in rows[p]["replaced_on_disk"], rows[p]
        assert "9.27" not in (rows[p]["owner"] or ""), rows[p]  # the new wheel does not own the mapped file
    assert "mapped" in rows[graph]["version_source"]
    assert rows[shim]["reached_version"] == "9.12.0"
    assert after["cudnn_in_use"]["version"] == "9.12.0"
    found = [f for f in after["findings"] if f["id"] == "cudnn-replaced-on-disk"]
    assert len(found) == 1, after["findings"]
    assert "9.12.0" in found[0]["title"] and "9.27.0" in found[0]["title"]
    assert "restart" in found[0]["detail"].lower()
    assert [x["id"] for x in found[0]["fixes"]] == ["restart-kernel"]
    # No finding built on the new files' facts as if they were mapped (a mixed folder of 9.12 and 9.27).
    assert not any(f["id"] == "cudnn-sublibrary-load-failed" for f in after["findings"]), after["findings"]
    # The new file at the mapped path is another copy on disk (another inode), with its own release;
    # before the upgrade the file there was the mapped one.
    assert [(c["version"], c["loaded"]) for c in before["cudnn_installed"] if c["path"] == shim] == [("9.12.0", True)]
    now = [c for c in after["cudnn_installed"] if c["path"] == shim]
    assert [(c["version"], c["loaded"], c["main"]) for c in now] == [("9.27.0", False, True)], now

    text = outputs_text(nb.cells[5])
    assert "9.12.0" in text and "replaced" in text
    on_disk = text.split("Other cuDNN copies on disk", 1)[1].split("\n\n", 1)[0]
    assert re.search(r"libcudnn\.so\.9\W+9\.27\.0\W+folder of a mapped copy", on_disk), on_disk
    annotated = outputs_text(nb.cells[6])
    assert "CUDNN_STATUS_VERSION_MISMATCH" in annotated  # the traceback is kept
    assert "9.27.0" not in annotated.split("Traceback")[0] or "replaced" in annotated
    if "cuDNN 9." in annotated:
        assert "9.12.0" in annotated


@pytest.mark.kernel
def test_reinstall_of_the_same_release_offers_no_restart(tmp_path):
    """The same release written again (``--force-reinstall``): the files were replaced but a restart
    loads the same release, so the report says so and offers no restart for it."""
    target = _folder_with_912(tmp_path)
    again = tmp_path / "again"
    shutil.copytree(target, again)
    lib = target / "nvidia" / "cudnn_jit" / "lib"
    swap = (f"import shutil\nshutil.rmtree({str(target / 'nvidia')!r})\n"
            f"shutil.copytree({str(again / 'nvidia')!r}, {str(target / 'nvidia')!r})\nprint('SWAPPED')")
    nb = run_notebook(["import json\n%load_ext cudnn_magic", LOAD.format(shim=str(lib / "libcudnn.so.9")), swap, CHECK],
                      tmp_path, timeout=300)
    assert "SWAPPED" in outputs_text(nb.cells[2])
    data = _json(nb.cells[3])
    rows = {c["path"]: c for c in data["cudnn_loaded"]}
    assert rows[str(lib / "libcudnn_graph.so.9")]["version"] == "9.12.0"
    assert rows[str(lib / "libcudnn_graph.so.9")]["replaced_on_disk"]
    found = [f for f in data["findings"] if f["id"] == "cudnn-replaced-on-disk"]
    assert len(found) == 1 and found[0]["fixes"] == [], found
    assert "same release" in found[0]["detail"]


def _can_open_map_files():
    """Can this process open its own ``/proc/self/map_files/`` entries (root with the capability)?"""
    import os

    with open("/proc/self/maps") as fh:
        rng = next(ln.split()[0] for ln in fh if ln.split()[-1].startswith("/"))
    try:
        os.close(os.open(f"/proc/self/map_files/{rng}", os.O_RDONLY))
        return True
    except OSError:
        return False


_AS_USER = r"""
import ctypes, json, os, shutil, sys
from cudnn_magic.probes.loaded import probe_mapped
lib = ctypes.CDLL(sys.argv[1] + "/libcudnn.so.9", mode=os.RTLD_GLOBAL | os.RTLD_NOW)
lib.cudnnGetVersion.restype = ctypes.c_size_t
lib.cudnnGetVersion()
shutil.rmtree(sys.argv[2]); shutil.copytree(sys.argv[3], sys.argv[2])
st = probe_mapped()
print("JSON" + json.dumps([[c.path, c.version, c.version_source, c.replaced] for c in st.copies]))
"""


@pytest.mark.parametrize("as_nobody", [False, True], ids=["root", "nobody"])
def test_the_mapped_release_is_read_as_root_and_as_an_ordinary_user(tmp_path, as_nobody):
    """``/proc/self/map_files/`` opens only with CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE (proc(5));
    an ordinary user gets EPERM (measured), so the version is then read from the mapped bytes."""
    import os

    from helpers.support import _drop, require_unprivileged_child, unprivileged_env

    if as_nobody:
        require_unprivileged_child()
    elif os.geteuid() != 0:
        pytest.skip("needs root (with CAP_SYS_ADMIN) to open /proc/self/map_files")
    home = world_readable_dir()
    try:
        src = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")
        new = install_wheel("nvidia-cudnn-jit-cu12", "9.27.0.42")
        shutil.copytree(src / "nvidia", home / "nvidia")
        if as_nobody:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(home)], check=True)
        lib = home / "nvidia" / "cudnn_jit" / "lib"
        argv = [sys.executable, "-c", _AS_USER, str(lib), str(home / "nvidia"), str(new / "nvidia")]
        r = subprocess.run([*(_drop() if as_nobody else []), *argv], capture_output=True, text=True, timeout=120,
                           env=unprivileged_env(home), cwd=str(home), stdin=subprocess.DEVNULL)
        assert r.returncode == 0, r.stderr[-3000:]
        rows = {p: (v, src_, rep) for p, v, src_, rep in json.loads(r.stdout.split("JSON", 1)[1])}
        v, how, replaced = rows[str(lib / "libcudnn_graph.so.9")]
        assert v == "9.12.0" and replaced
        assert ("map_files" in how) is (_can_open_map_files() and not as_nobody), how
        assert rows[str(lib / "libcudnn.so.9")][0] == "9.12.0"
    finally:
        shutil.rmtree(home, ignore_errors=True)


# ---------------------------------------------------------------- the pure parts, each way it can go


def _copy(path, version, replaced=None, main=True):
    from cudnn_magic.model import LibraryCopy

    return LibraryCopy(path=path, name=path.rsplit("/", 1)[-1], soname="libcudnn.so.9", version=version,
                       loaded=True, is_main=main, replaced=replaced)


def test_the_finding_offers_a_restart_only_when_it_changes_the_release():
    from cudnn_magic.engines.replaced import replaced_findings

    assert replaced_findings([_copy("/a/libcudnn.so.9", "9.12.0")]) == []
    upgraded = replaced_findings([_copy("/a/libcudnn.so.9", "9.12.0", "gone; the file there now is cuDNN 9.27.0")])
    assert [x.id for x in upgraded[0].fixes] == ["restart-kernel"] and "9.27.0" in upgraded[0].title
    same = replaced_findings([_copy("/a/libcudnn.so.9", "9.12.0", "gone; the file there now is cuDNN 9.12.0")])
    assert same[0].fixes == () and "same release" in same[0].title
    removed = replaced_findings([_copy("/a/libcudnn.so.9", "9.12.0", "gone; no file is there now")])
    assert removed[0].fixes == () and "9.12.0" in removed[0].title
    unknown = replaced_findings([_copy("/a/libcudnn.so.9", None, "gone; the file there now is cuDNN 9.27.0")])
    assert unknown[0].fixes == () and "unknown release" in unknown[0].title


def test_a_mapping_is_the_file_at_its_path_only_by_its_identity(tmp_path):
    import os

    from cudnn_magic.probes.replaced import _Mapping, _why_replaced

    f = tmp_path / "libcudnn_graph.so.9"
    f.write_bytes(b"x")
    st = os.stat(f)
    dev = (os.major(st.st_dev), os.minor(st.st_dev))
    assert _why_replaced(str(f), _Mapping(0, 1, dev, st.st_ino, str(f))) is None
    assert "another file" in _why_replaced(str(f), _Mapping(0, 1, dev, st.st_ino + 1, str(f) + " (deleted)"))
    other_dev = (dev[0] + 1, dev[1])  # overlayfs: maps shows the real file's device, stat the overlay's
    assert _why_replaced(str(f), _Mapping(0, 1, other_dev, 7, str(f))) is None
    assert "deleted or replaced" in _why_replaced(str(f), _Mapping(0, 1, other_dev, 7, str(f) + " (deleted)"))
    stash = str(tmp_path / "~ib" / "libcudnn_graph.so.9")
    assert "now lies at" in _why_replaced(str(f), _Mapping(0, 1, other_dev, 7, stash))
    assert "removed from disk" in _why_replaced(str(tmp_path / "gone.so.9"), _Mapping(0, 1, dev, 1, stash + " (deleted)"))
