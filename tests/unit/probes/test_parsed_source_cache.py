"""What a check parses out of Python source with ``ast`` (torch's ``__init__.py`` preload rule,
cuda-pathfinder's descriptor catalogue) is kept per file identity, in the process and on disk,
and read again as soon as the file changes: the cache is a speed-up, never the answer."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cudnn_magic.probes import filefacts
from cudnn_magic.probes.frameworks import pathfinder, torch_preload
from cudnn_magic.probes.frameworks.torch_preload import TorchPreloadRule, read_preload_rule

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "torch_init"


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    """An empty on-disk cache of this test's own, and nothing remembered in this process."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for memo in (torch_preload._memo, pathfinder._memo, filefacts._docs):
        memo.clear()
    yield tmp_path
    for memo in (torch_preload._memo, pathfinder._memo, filefacts._docs):
        memo.clear()
    filefacts._dirty.clear()


def _new_process() -> None:
    """What a new process starts from: only what was written to disk."""
    filefacts.flush()
    torch_preload._memo.clear()
    pathfinder._memo.clear()
    filefacts._docs.clear()


def _settled(path: Path, age_s: float = 60.0) -> None:
    """Date the file back, as an installed file is (a file changed within the last 2 s is never
    stored: the "racy" rule)."""
    t = time.time() - age_s
    os.utime(path, (t, t))


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*a):
        calls.append(a)
        return real(*a)

    monkeypatch.setattr(module, name, counted)
    return calls


def _refusing(monkeypatch, module, name):
    def refuse(*a):
        raise AssertionError(f"{name} read the file again")

    monkeypatch.setattr(module, name, refuse)


def test_torch_preload_rule_read_once_then_from_disk_until_the_file_changes(cache, monkeypatch):
    init = cache / "torch" / "__init__.py"
    init.parent.mkdir()
    init.write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    _settled(init)
    calls = _counting(monkeypatch, torch_preload, "_read_preload_rule")
    # another version asked of the same file is another answer (the source names the version);
    # the disk keeps the last one asked
    other = read_preload_rule(str(init), "2.14.0")
    assert isinstance(other, TorchPreloadRule) and "2.14.0" in other.source
    first = read_preload_rule(str(init), "2.14.1")
    assert isinstance(first, TorchPreloadRule) and first.when == "always" and len(calls) == 2
    assert read_preload_rule(str(init), "2.14.1") == first and len(calls) == 2  # the process remembers it

    # the file changes under this process (pip install -U torch in a running kernel): read again
    init.write_bytes((FIXTURES / "2.9.1" / "__init__.py").read_bytes())
    _settled(init, 45.0)
    assert read_preload_rule(str(init), "2.9.1").when == "on-error" and len(calls) == 3
    init.write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    _settled(init, 40.0)
    assert read_preload_rule(str(init), "2.14.1") == first and len(calls) == 4

    _new_process()
    _refusing(monkeypatch, torch_preload, "_read_preload_rule")
    assert read_preload_rule(str(init), "2.14.1") == first  # from disk, equal field for field

    # the file changes (an upgrade to a release that preloads only on error): read again
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "xdg"))
    init.write_bytes((FIXTURES / "2.9.1" / "__init__.py").read_bytes())
    _settled(init, 30.0)
    _new_process()
    changed = read_preload_rule(str(init), "2.9.1")
    assert isinstance(changed, TorchPreloadRule) and changed.when == "on-error"


def test_a_bad_or_foreign_stored_rule_is_not_used(cache, monkeypatch):
    init = cache / "__init__.py"
    init.write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    _settled(init)
    st = os.stat(init)
    for bad in ({"version": "2.14.1", "rule": ["never", "not a list", "", [], False, False, ""]},
                {"version": "2.14.1", "rule": ["never", [1], "", [], False, False, ""]},
                {"version": "2.14.1", "rule": ["never", [], "", [["a"]], False, False, ""]},
                {"version": "2.14.1", "rule": ["never", [], "", [], "no", False, ""]},
                {"version": "2.14.1", "rule": ["never"]},
                {"version": "2.13.0", "why": "kept for another version"},
                "not a mapping"):
        _new_process()
        filefacts.put(str(init), st, torch_preload._FACT, bad)
        got = read_preload_rule(str(init), "2.14.1")
        assert isinstance(got, TorchPreloadRule) and got.when == "always" and got.patterns, bad
    # a well-formed stored rule is used as it is (what makes the rows above meaningful)
    _new_process()
    filefacts.put(str(init), st, torch_preload._FACT,
                  {"version": "2.14.1", "rule": ["never", ["x/{lib_name}"], "kept", [["a", "b"]], True, True, ""]})
    assert read_preload_rule(str(init), "2.14.1") == TorchPreloadRule("never", ("x/{lib_name}",), "kept",
                                                                       (("a", "b"),), True, True, "")


def test_a_read_that_failed_is_tried_again(cache, monkeypatch):
    """A read that failed (too many open files, a FIFO named like the file) is not remembered, in the
    process or on disk: the same file read again a moment later gives its rule."""
    init = cache / "__init__.py"
    init.write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    _settled(init)
    real = torch_preload.read_regular
    failures = [OSError(24, "Too many open files")]

    def flaky(*a):
        if failures:
            raise failures.pop()
        return real(*a)

    monkeypatch.setattr(torch_preload, "read_regular", flaky)
    assert "Too many open files" in read_preload_rule(str(init), "2.14.1")
    filefacts.flush()
    assert not any(torch_preload._FACT in str(v) for d in filefacts._docs.values() for v in d.values())
    assert read_preload_rule(str(init), "2.14.1").when == "always"


def test_a_file_changed_just_now_is_read_every_time(cache, monkeypatch):
    """Within the timestamps' granularity (the "racy" rule) a rewrite can keep size and mtime:
    such a file is neither remembered nor stored."""
    init = cache / "__init__.py"
    init.write_bytes((FIXTURES / "2.14.1" / "__init__.py").read_bytes())
    calls = _counting(monkeypatch, torch_preload, "_read_preload_rule")
    read_preload_rule(str(init), "2.14.1")
    read_preload_rule(str(init), "2.14.1")
    assert len(calls) == 2 and not torch_preload._memo


CATALOG = '''
from .descriptor_spec import DescriptorSpec
DESCRIPTOR_CATALOG = (
    DescriptorSpec(name="cublasLt", linux_sonames=("libcublasLt.so.13", "libcublasLt.so.12"),
                   site_packages_linux=("nvidia/cu13/lib", "nvidia/cublas/lib")),
    DescriptorSpec(name="cudnn", linux_sonames=("libcudnn.so.9",), site_packages_linux=("nvidia/cudnn/lib",),
                   dependencies=("cublasLt",), install_root_env_vars_linux=("CUDNN_PATH",)),
    DescriptorSpec(name="cudnn", linux_sonames=("libcudnn.so.8",), site_packages_linux=("later/lib",)),
)
'''


def _pathfinder_site(root: Path, catalog: str) -> Path:
    site = root / "site"
    (site / "cuda_pathfinder-1.9.1.dist-info").mkdir(parents=True)
    cat = site / "cuda" / "pathfinder" / "_dynamic_libs" / "descriptor_catalog.py"
    cat.parent.mkdir(parents=True)
    cat.write_text(catalog)
    _settled(cat)
    return site


def test_pathfinder_catalogue_read_once_then_from_disk_until_the_file_changes(cache, monkeypatch):
    site = _pathfinder_site(cache, CATALOG)
    calls = _counting(monkeypatch, pathfinder, "_read_catalog")
    cudnn = pathfinder.read_pathfinder(str(site))
    cublas = pathfinder.read_pathfinder(str(site), "cublasLt")
    assert len(calls) == 1  # one parse for both libraries
    assert cudnn.sonames == ("libcudnn.so.9",) and cudnn.dependencies == ("cublasLt",)
    assert cublas.site_dirs == ("nvidia/cu13/lib", "nvidia/cublas/lib")
    assert cudnn.anchor_rel_dirs == ("lib64", "lib")  # a keyword the descriptor leaves out: its default

    _new_process()
    _refusing(monkeypatch, pathfinder, "_read_catalog")
    assert pathfinder.read_pathfinder(str(site)) == cudnn
    assert pathfinder.read_pathfinder(str(site), "cublasLt") == cublas

    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache / "xdg"))
    cat = site / "cuda" / "pathfinder" / "_dynamic_libs" / "descriptor_catalog.py"
    cat.write_text(CATALOG.replace('"libcudnn.so.9",', '"libcudnn.so.10", "libcudnn.so.9",'))
    _settled(cat, 30.0)
    _new_process()
    assert pathfinder.read_pathfinder(str(site)).sonames == ("libcudnn.so.10", "libcudnn.so.9")
    assert "no nccl descriptor" in pathfinder.read_pathfinder(str(site), "nccl")
