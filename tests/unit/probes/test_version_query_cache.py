"""Child-process version queries (``probes.subprocess_probe.query_versions``) are cached by
the file's (device, inode, size, mtime), ``LD_LIBRARY_PATH`` and ``alone``, ask hard links to
one file once, and never run more children at once than there are CPUs. Real children, real ``dlopen``; the libraries are the
``libcudnn.so.9`` C stand-in (no headers, no wheel: only a child process can tell their
version) and the real cuDNN 9.12 wheel."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading

import pytest

from helpers.support import build_cudnn_standin

pytestmark = pytest.mark.native


class Counting(subprocess.Popen):
    """``subprocess.Popen`` that counts the children started and the most alive at once."""

    lock = threading.Lock()
    started = 0
    alive = 0
    most = 0

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        with Counting.lock:
            Counting.started += 1
            Counting.alive += 1
            Counting.most = max(Counting.most, Counting.alive)

    def communicate(self, *a, **kw):
        try:
            return super().communicate(*a, **kw)
        finally:
            if self.returncode is not None:
                with Counting.lock:
                    Counting.alive -= 1

    @classmethod
    def reset(cls):
        cls.started = cls.alive = cls.most = 0


@pytest.fixture
def counting(monkeypatch):
    from cudnn_magic.probes import subprocess_probe

    monkeypatch.setattr(subprocess, "Popen", Counting)  # the module (imported by the probe when it starts children): gcc counts too
    monkeypatch.setattr(subprocess_probe, "_RESULTS", {}, raising=False)
    return subprocess_probe


def _copies(tmp_path, n: int) -> list[str]:
    first = build_cudnn_standin(tmp_path / "d0", "9.1.0")
    paths = [str(first)]
    for i in range(1, n):
        d = tmp_path / f"d{i}"
        d.mkdir()
        shutil.copy2(first, d / "libcudnn.so.9")
        paths.append(str(d / "libcudnn.so.9"))
    return paths


def test_second_query_starts_no_child_and_a_changed_file_is_asked_again(tmp_path, counting):
    paths = _copies(tmp_path, 5)
    Counting.reset()
    res = counting.query_versions(paths)
    assert {p: r.version for p, r in res.items()} == {p: 90100 for p in paths}
    assert Counting.started == 5
    Counting.reset()
    again = counting.query_versions(paths)
    assert {p: r.version for p, r in again.items()} == {p: 90100 for p in paths}
    assert all(again[p].path == p for p in paths)
    assert Counting.started == 0
    os.unlink(paths[3])
    build_cudnn_standin(tmp_path / "d3", "9.2.0")  # a new file in place of one of them
    Counting.reset()
    third = counting.query_versions(paths)
    assert third[paths[3]].version == 90200 and third[paths[0]].version == 90100
    assert Counting.started == 1


def test_hard_links_and_symlinks_to_one_file_are_asked_once(tmp_path, counting):
    lib = build_cudnn_standin(tmp_path / "a", "9.1.0")
    links = []
    for i in range(4):
        d = tmp_path / f"l{i}"
        d.mkdir()
        os.link(lib, d / "libcudnn.so.9")
        links.append(str(d / "libcudnn.so.9"))
    sym = tmp_path / "s" / "libcudnn.so.9"
    sym.parent.mkdir()
    sym.symlink_to(lib)
    Counting.reset()
    res = counting.query_versions([str(lib), *links, str(sym)])
    assert len(res) == 6 and {r.version for r in res.values()} == {90100}
    assert Counting.started == 1


def test_never_more_children_than_cpus(tmp_path, counting, monkeypatch):
    paths = _copies(tmp_path, 6)
    Counting.reset()
    try:
        res = counting.query_versions(paths, max_parallel=2)
    except TypeError:  # no such argument: then the default must hold the bound
        res = counting.query_versions(paths)
    assert {r.version for r in res.values()} == {90100}
    assert Counting.started == 6 and Counting.most <= 2
    monkeypatch.setattr(counting, "_RESULTS", {}, raising=False)
    Counting.reset()
    counting.query_versions(paths)
    assert Counting.most <= len(os.sched_getaffinity(0))


def test_the_answer_depends_on_ld_library_path_too(tmp_path, counting):
    lib = str(build_cudnn_standin(tmp_path / "a", "9.1.0"))
    Counting.reset()
    counting.query_versions([lib], env=dict(os.environ, LD_LIBRARY_PATH="/x"))
    counting.query_versions([lib], env=dict(os.environ, LD_LIBRARY_PATH="/y"))
    assert Counting.started == 2


def test_real_wheel_answers_once(counting):
    from helpers.real_wheels import install_wheel

    lib = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9"
    Counting.reset()
    r1 = counting.query_versions([str(lib)])[str(lib)]
    r2 = counting.query_versions([str(lib)])[str(lib)]
    assert r1.version == r2.version == 91200, r1
    assert Counting.started == 1


def test_a_folder_loaded_alone_is_its_own_question(tmp_path, counting):
    """``alone=True`` (the child loads the file's folder alone) and the plain query
    are different questions, and so are two folders holding links to one file: the cache keeps
    them apart. Real wheels: the 9.12 shim (RUNPATH ``$ORIGIN``) takes its ``libcudnn_graph``
    from ``LD_LIBRARY_PATH`` first, so with the 9.27 folder there it answers 9.27's number."""
    from helpers.real_wheels import install_wheel

    old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9"
    new_dir = install_wheel("nvidia-cudnn-jit-cu12", "9.27.0.42") / "nvidia" / "cudnn_jit" / "lib"
    env = dict(os.environ, LD_LIBRARY_PATH=str(new_dir))
    Counting.reset()
    plain = counting.query_versions([str(old)], env=env)[str(old)]
    alone = counting.query_versions([str(old)], env=env, alone=True)[str(old)]
    assert plain.version == 92700, plain
    assert alone.version == 91200, alone
    assert Counting.started == 2
    assert counting.query_versions([str(old)], env=env, alone=True)[str(old)].version == 91200
    assert Counting.started == 2  # asked alone before: cached
    bare = tmp_path / "bare"
    bare.mkdir()
    os.link(old, bare / "libcudnn.so.9")  # the same file, in a folder without its sub-libraries
    lone = counting.query_versions([str(bare / "libcudnn.so.9")], env=env, alone=True)[str(bare / "libcudnn.so.9")]
    assert lone.version is None and lone.error, lone
    assert Counting.started == 3
