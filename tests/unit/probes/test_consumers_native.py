"""cuDNN consumers found generically, checked against what glibc really does.

Real parts: the real cuDNN 9 JIT wheels (9.27.0.42 and 9.12.0.46, installed by the test session
into ``.cache/wheels``), the real ``ctranslate2==4.4.0`` wheel, and glibc itself: every
prediction of which file the loader picks (and of the directories it searches, in order) is
compared with a child process that really loads the consumer under ``LD_DEBUG=libs``. Stand-ins
are used only at the native boundary and are named so: small C libraries built here with gcc
that NEED ``libcudnn.so.9`` through a RUNPATH (``libstandin_consumer.so``), a cuDNN main
library that ``dlopen``s its sub-library by soname like the real one, sub-libraries answering
chosen versions.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cudnn_magic.engines.consumer_check import check_consumers
from cudnn_magic.model import LibraryCopy
from cudnn_magic.probes import loader
from cudnn_magic.probes.frameworks.generic import scan_environment
from helpers.builders import dist_info
from helpers.consumer_standins import CONSUMER_C, link_stub, main_standin, need_gcc, standin_site, sub_standin
from helpers.real_wheels import install_wheel
from helpers.support import build_c_library

pytestmark = pytest.mark.native

JIT_NEW, JIT_OLD = ("nvidia-cudnn-jit-cu12", "9.27.0.42"), ("nvidia-cudnn-jit-cu12", "9.12.0.46")

CHILD = r"""
import ctypes, json, sys
out = {"versions": []}
for p in sys.argv[1:]:
    lib = ctypes.CDLL(p)
    f = lib.consumer_version
    f.restype = ctypes.c_size_t
    out["versions"].append(int(f()))
maps = []
for line in open("/proc/self/maps"):
    q = line.split(None, 5)
    if len(q) == 6 and "libcudnn" in q[5] and q[5].strip() not in maps:
        maps.append(q[5].strip())
out["maps"] = maps
print(json.dumps(out))
"""


def _run_child(paths: list[Path], env_extra: dict[str, str] | None = None, debug: bool = False) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_DEBUG")}
    env.update(env_extra or {})
    if debug:
        env["LD_DEBUG"] = "libs"
    p = subprocess.run([sys.executable, "-c", CHILD, *map(str, paths)], capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def _glibc_search(stderr: str, name: str) -> list[str]:
    """The directories glibc searched for ``name`` (``LD_DEBUG=libs``), in order, before the ld.so
    cache; hwcaps/tls/platform subdirectories folded into their base directory."""
    lines = stderr.splitlines()
    start = next(i for i, ln in enumerate(lines) if f"find library={name} " in ln)
    dirs: list[str] = []
    for ln in lines[start + 1:]:
        if "find library=" in ln or "search cache=" in ln or "(system search path)" in ln:
            break
        if "search path=" in ln:
            raw = ln.split("search path=", 1)[1].split("\t")[0].strip()
            entries = [os.path.normpath(e) for e in raw.split(":") if e]
            for e in entries:
                if any(e.startswith(o + "/") for o in entries):  # a hwcaps/tls subdirectory of o
                    continue
                if e not in dirs:
                    dirs.append(e)
    return dirs


def _predicted_dirs(requester: str, chain: list[str], env: dict[str, str]) -> list[str]:
    out: list[str] = []
    for s in loader.search_steps(requester, chain, environ=env):
        if s.directory not in out:
            out.append(s.directory)
    return out


def _same_search(stderr: str, name: str, requester: str, chain: list[str], env: dict[str, str]) -> bool:
    """glibc searched the predicted directories in the predicted order; it stops at the first
    directory holding ``name``, so its list is the predicted one cut after that directory."""
    got = _glibc_search(stderr, name)
    want = _predicted_dirs(requester, chain, env)
    cut = next((i + 1 for i, d in enumerate(want) if os.path.exists(os.path.join(d, name))), len(want))
    assert got == want[:cut], (got, want)
    return True


# ----------------------------------------------------------------------------- generic consumer


def test_generic_consumer_needing_libcudnn9_through_runpath_gets_a_row_and_matches_glibc(tmp_path):
    need_gcc()
    jit = install_wheel(*JIT_NEW)
    site, lib = standin_site(tmp_path, jit)
    assert loader.elf_facts(str(lib)).runpath == ("$ORIGIN/../nvidia/cudnn_jit/lib",)
    rep = check_consumers(paths=[str(site)], conda=False, environ={})
    rows = [f for f in rep.frameworks if f.name == "standin-cudnn9-consumer"]
    assert len(rows) == 1, rep.frameworks
    row = rows[0]
    assert (row.version, row.cudnn_compiled, row.checker, row.verdict) == ("1.0", "9", "soname", "ok"), row
    assert row.cudnn_used == "9.27.0" and "NEEDs fixes the cuDNN major" in row.rule
    c = next(c for c in rep.consumers if c.path == str(lib))
    real_main = os.path.realpath(jit / "nvidia/cudnn_jit/lib/libcudnn.so.9")
    assert c.picked == real_main and c.why == "RUNPATH $ORIGIN/../nvidia/cudnn_jit/lib of libstandin_consumer.so"
    graph = next(s for s in c.sublibraries if s.soname == "libcudnn_graph.so.9")
    assert graph.path == os.path.realpath(jit / "nvidia/cudnn_jit/lib/libcudnn_graph.so.9") and graph.version == "9.27.0"
    assert graph.why.startswith("RPATH $ORIGIN of libcudnn.so.9")
    assert not [f for f in rep.findings if "standin" in f.title]
    # glibc agrees: the consumer's call reaches the real cuDNN 9.27 through exactly those files.
    out, err = _run_child([lib], debug=True)
    assert out["versions"] == [92700]
    assert real_main in out["maps"] and graph.path in out["maps"]
    assert _same_search(err, "libcudnn.so.9", str(lib), [], {})


def test_ld_library_path_beats_runpath_and_the_shim_then_misses_its_graph_library(tmp_path):
    """LD_LIBRARY_PATH comes before RUNPATH: a stand-in cuDNN 9 main library there is picked, and
    its own dlopen of libcudnn_graph.so.9 does not see the consumer's RUNPATH (only the requester's
    counts): predicted, then confirmed by glibc's own search."""
    need_gcc()
    jit = install_wheel(*JIT_NEW)
    site, lib = standin_site(tmp_path, jit)
    shadow = tmp_path / "opt-cudnn"
    main = main_standin(shadow, "libcudnn.so.9", "libcudnn_graph.so.9")
    env = {"LD_LIBRARY_PATH": str(shadow)}
    rep = check_consumers(paths=[str(site)], conda=False, environ=env)
    c = next(c for c in rep.consumers if c.path == str(lib))
    assert c.picked == str(main) and c.why == f"LD_LIBRARY_PATH entry {shadow}"
    graph = next(s for s in c.sublibraries if s.soname == "libcudnn_graph.so.9")
    assert graph.path is None and graph.required
    row = next(f for f in rep.frameworks if f.name == "standin-cudnn9-consumer")
    assert row.verdict == "mismatch"
    f = next(f for f in rep.findings if f.id == "cudnn-sublibrary-load-failed")
    assert "libcudnn_graph.so.9" in f.title and f.severity == "warning"
    assert any((x.id == "add-library-path" and str(jit / "nvidia/cudnn_jit/lib") in x.action) or
               os.path.realpath(jit / "nvidia/cudnn_jit/lib") in x.action for x in f.fixes), f.fixes
    out, err = _run_child([lib], env_extra=env, debug=True)
    assert out["versions"] == [0], "the stand-in shim must fail to open libcudnn_graph.so.9, as predicted"
    assert str(main) in out["maps"] and not [m for m in out["maps"] if "libcudnn_graph" in m]
    assert _same_search(err, "libcudnn.so.9", str(lib), [], env)
    assert _same_search(err, "libcudnn_graph.so.9", str(main), [str(lib), *loader.interpreter_loaders()], env)


def test_rpath_chain_of_the_loader_finds_a_vendored_copy_like_ctranslate2(tmp_path):
    """CTranslate2's layout with stand-ins: ``vend/_ext.so`` (RPATH $ORIGIN/../vend.libs) NEEDs
    ``vend.libs/libvend.so`` (no RPATH), which NEEDs ``vend.libs/libcudnn-0123abcd.so.8.9.7``. The
    vendored copy is found through the loader's RPATH, inventoried as cuDNN 8.9.7 owned by the
    vendoring distribution, and its sub-libraries are looked for from it."""
    need_gcc()
    site = tmp_path / "site-packages"
    libs = site / "vend.libs"
    vendored = main_standin(libs, "libcudnn-0123abcd.so.8.9.7", "libcudnn_ops_infer.so.8")
    inner_stub = link_stub(tmp_path, "libcudnn-0123abcd.so.8.9.7")
    inner = build_c_library(CONSUMER_C, libs / "libvend.so", soname="libvend.so",
                            extra=[f"-L{inner_stub}", "-l:libcudnn-0123abcd.so.8.9.7"])
    ext = build_c_library("#include <stddef.h>\nsize_t consumer_version(void);\nsize_t ext_version(void){return consumer_version();}\n",
                          site / "vend" / "_ext.so", extra=[f"-L{libs}", "-l:libvend.so", "-Wl,-rpath,$ORIGIN/../vend.libs",
                                                            "-Wl,--disable-new-dtags"])
    dist_info(site, "vend", "2.0", ["vend/_ext.so", "vend.libs/libvend.so", "vend.libs/libcudnn-0123abcd.so.8.9.7"])
    (site / "vend" / "__init__.py").write_text("")
    rep = check_consumers(paths=[str(site)], conda=False, environ={})
    assert [(c.name, c.version, c.owner, c.source) for c in rep.copies] == [
        ("libcudnn-0123abcd.so.8.9.7", "8.9.7", "pip: vend 2.0", "vendored by vend 2.0")]
    c = next(c for c in rep.consumers if c.path == str(inner))
    assert c.picked == str(vendored) and c.vendored and c.picked_version == "8.9.7"
    assert c.why == "RPATH $ORIGIN/../vend.libs of _ext.so"
    row = next(f for f in rep.frameworks if f.name == "vend")
    assert (row.cudnn_compiled, row.verdict) == ("8", "mismatch")
    f = next(f for f in rep.findings if f.id == "cudnn-sublibrary-load-failed")
    assert "libcudnn_ops_infer.so.8" in f.title and "libcudnn_cnn_infer.so.8" in f.title
    # glibc: loading _ext.so finds libvend.so and the vendored copy through _ext.so's RPATH.
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "LD_DEBUG")}
    p = subprocess.run([sys.executable, "-c", f"import ctypes; ctypes.CDLL({str(ext)!r})"], env={**env, "LD_DEBUG": "libs"},
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    chain = [str(ext), *loader.interpreter_loaders()]
    assert _same_search(p.stderr, "libcudnn-0123abcd.so.8.9.7", str(inner), chain, {})
    inits = [os.path.normpath(ln.split("calling init:", 1)[1].strip()) for ln in p.stderr.splitlines() if "calling init:" in ln]
    assert str(vendored) in inits, inits


def test_vendored_cuda8_sublibraries_found_mixed_or_older_are_judged(tmp_path):
    need_gcc()
    site = tmp_path / "site-packages"
    libs = site / "vend.libs"
    main_standin(libs, "libcudnn-0123abcd.so.8.9.7", "libcudnn_ops_infer.so.8")
    stub = link_stub(tmp_path, "libcudnn-0123abcd.so.8.9.7")
    build_c_library(CONSUMER_C, site / "vend" / "_ext.so",
                    extra=[f"-L{stub}", "-l:libcudnn-0123abcd.so.8.9.7", "-Wl,-rpath,$ORIGIN/../vend.libs", "-Wl,--disable-new-dtags"])
    dist_info(site, "vend", "2.0", ["vend/_ext.so", "vend.libs/libcudnn-0123abcd.so.8.9.7"])

    def run(ops: str, cnn: str) -> tuple:
        d = tmp_path / f"cudnn8-{ops}-{cnn}"
        sub_standin(d, "libcudnn_ops_infer.so.8", ops, 8000 + int(ops.split(".")[1]) * 100 + int(ops.split(".")[2]))
        sub_standin(d, "libcudnn_cnn_infer.so.8", cnn, 0)
        rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(d)})
        return rep, d

    rep, d = run("8.9.7", "8.9.7")
    c = rep.consumers[0]
    assert {s.soname: s.version for s in c.sublibraries if s.required} == {"libcudnn_ops_infer.so.8": "8.9.7",
                                                                            "libcudnn_cnn_infer.so.8": "8.9.7"}
    assert next(f for f in rep.frameworks if f.name == "vend").verdict == "ok"
    assert not [f for f in rep.findings if f.id == "cudnn-sublibrary-load-failed"]
    out, _ = _run_child([site / "vend" / "_ext.so"], env_extra={"LD_LIBRARY_PATH": str(d)})
    assert out["versions"] == [8907] and str(d / "libcudnn_ops_infer.so.8.9.7") in out["maps"]
    rep, _ = run("8.9.7", "8.6.0")
    f = next(f for f in rep.findings if f.id == "cudnn-sublibrary-load-failed")
    assert f.title.endswith("its cuDNN sub-libraries would come from different releases") and "8.6.0" in f.detail
    rep, _ = run("8.6.0", "8.6.0")
    f = next(f for f in rep.findings if f.id == "cudnn-sublibrary-load-failed")
    assert f.severity == "warning" and "older sub-libraries" in f.title


# ----------------------------------------------------------------------------- consumers in one process


def test_import_order_decides_which_graph_library_serves_two_cuda9_consumers(tmp_path):
    """Two consumers of cuDNN 9 whose RUNPATHs lead to the real 9.27 and 9.12 wheels: the check
    says import order decides, and glibc shows the first one loaded serving both (its 9.27 or
    9.12 answers the other's calls; the other copy is never mapped)."""
    need_gcc()
    new, old = install_wheel(*JIT_NEW), install_wheel(*JIT_OLD)
    site_a, lib_a = standin_site(tmp_path, new, name="standin-consumer-a", pkg="consumer_a")
    site_b, lib_b = standin_site(tmp_path, old, name="standin-consumer-b", pkg="consumer_b")
    rep = check_consumers(paths=[str(site_a), str(site_b)], conda=False, environ={})
    f = next(f for f in rep.findings if f.id == "cudnn-import-order")
    assert "standin-consumer-a 1.0" in f.title and "standin-consumer-b 1.0" in f.title
    assert "9.27.0" in f.detail and "9.12.0" in f.detail and f.severity == "warning"
    assert [x.id for x in f.fixes] == ["import-order", "add-library-path", "separate-kernels"]
    assert "standin-consumer-a" in f.fixes[0].title  # the newer cuDNN first
    out, _ = _run_child([lib_a, lib_b])
    assert out["versions"] == [92700, 92700]
    assert not [m for m in out["maps"] if str(old) in m]
    out, _ = _run_child([lib_b, lib_a])
    assert out["versions"] == [91200, 91200]
    assert not [m for m in out["maps"] if str(new) in m]


def test_ctranslate2_cudnn8_beside_a_cudnn9_consumer_is_the_whisperx_clash(tmp_path):
    need_gcc()
    ct2 = install_wheel("ctranslate2", "4.4.0")
    jit = install_wheel(*JIT_NEW)
    site, _lib = standin_site(tmp_path, jit)
    rep = check_consumers(paths=[str(ct2), str(site)], conda=False, environ={})
    f = next(f for f in rep.findings if f.id == "cudnn-consumer-clash")
    assert f.title == ("CTranslate2 4.4.0 needs cuDNN 8, but this environment's cuDNN is 9 "
                       "(for standin-cudnn9-consumer 1.0)")
    assert "import order does not help" in f.detail and "libcudnn_ops_infer.so.8" in f.detail
    assert [x.id for x in f.fixes] == ["upgrade-consumer", "separate-kernels"]
    assert "ctranslate2>=4.6.3" in f.fixes[0].action
    assert not [g for g in rep.findings if g.id == "cudnn-import-order"]


# ----------------------------------------------------------------------------- the scan itself


def test_scan_reads_only_dynamic_sections_and_caches_by_inode_size_mtime(tmp_path):
    need_gcc()
    jit = install_wheel(*JIT_NEW)
    site, lib = standin_site(tmp_path, jit)
    (site / "plain").mkdir()
    dist_info(site, "pure-python", "1.0", ["plain/__init__.py"])
    scan_environment([str(site)], conda=False)
    before = loader.cache_stats()["elf_reads"]
    s2 = scan_environment([str(site)], conda=False)
    assert loader.cache_stats()["elf_reads"] == before, "a second scan must read no unchanged file"
    assert [d.name for d in s2.distributions] == ["standin-cudnn9-consumer"]
    assert s2.stats["records"] == 2 and s2.stats["native_dists"] == 1
    st = os.stat(lib)
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    scan_environment([str(site)], conda=False)
    assert loader.cache_stats()["elf_reads"] == before + 1


def test_nvidia_cudnn_wheels_are_cudnn_not_consumers(tmp_path):
    jit = install_wheel(*JIT_NEW)
    scan = scan_environment([str(jit)], conda=False)
    assert scan.distributions == [] and scan.stats["native_dists"] == 1


def test_conda_env_consumers_are_found_from_conda_meta(tmp_path):
    """A conda env: ``conda-meta/*.json`` lists each package's files. A package whose library
    NEEDs libcudnn.so.8 (RPATH $ORIGIN, as conda builds link) is a consumer; conda's own ``cudnn``
    package is cuDNN itself."""
    need_gcc()
    prefix = tmp_path / "conda-env"
    lib = prefix / "lib"
    sub_standin(lib, "libcudnn.so.8", "8.9.7", 8907)
    for s in ("libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8"):
        sub_standin(lib, s, "8.9.7", 8907)
    stub = link_stub(tmp_path, "libcudnn.so.8")
    build_c_library(CONSUMER_C, lib / "libdetector.so", extra=[f"-L{stub}", "-l:libcudnn.so.8", "-Wl,-rpath,$ORIGIN",
                                                              "-Wl,--disable-new-dtags"])
    (prefix / "conda-meta").mkdir(parents=True)
    (prefix / "conda-meta" / "detector-1.2-h0.json").write_text(json.dumps(
        {"name": "detector", "version": "1.2", "files": ["lib/libdetector.so", "share/doc/x.txt"]}))
    (prefix / "conda-meta" / "cudnn-8.9.7-h1.json").write_text(json.dumps(
        {"name": "cudnn", "version": "8.9.7", "files": [f"lib/{p.name}" for p in lib.iterdir() if "cudnn" in p.name]}))
    rep = check_consumers(paths=[], conda=str(prefix), environ={})
    row = next(f for f in rep.frameworks if f.name == "detector")
    assert (row.version, row.cudnn_compiled, row.verdict, row.cudnn_used) == ("1.2", "8", "ok", "8.9.7")
    c = next(c for c in rep.consumers if c.framework is None)
    assert c.distribution == "detector 1.2" and c.why == "RPATH $ORIGIN of libdetector.so"
    assert not rep.copies and not rep.findings


def test_vendored_copy_whose_name_has_no_version_is_asked_in_a_child_process(tmp_path):
    need_gcc()
    site = tmp_path / "site-packages"
    build_c_library("#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 8907; }\n",
                    site / "v.libs" / "libcudnn-0123abcd.so.8", soname="libcudnn-0123abcd.so.8")
    stub = link_stub(tmp_path, "libcudnn-0123abcd.so.8")
    build_c_library(CONSUMER_C, site / "v" / "_ext.so", extra=[f"-L{stub}", "-l:libcudnn-0123abcd.so.8",
                                                               "-Wl,-rpath,$ORIGIN/../v.libs", "-Wl,--disable-new-dtags"])
    dist_info(site, "v", "0.1", ["v/_ext.so", "v.libs/libcudnn-0123abcd.so.8"])
    rep = check_consumers(paths=[str(site)], conda=False, environ={})
    assert [(c.name, c.version, c.version_source) for c in rep.copies] == [
        ("libcudnn-0123abcd.so.8", "8.9.7", "cudnnGetVersion in a child process")]
    c = rep.consumers[0]
    assert c.picked_version == "8.9.7" and c.vendored


@pytest.mark.parametrize("replaced", [False, True], ids=["mapped", "replaced-on-disk"])
def test_a_vendored_copy_replaced_on_disk_since_it_was_mapped_is_another_copy(tmp_path, replaced):
    """A process mapped a vendored ``libcudnn-0123abcd.so.8`` (cuDNN 8.6.0), then an upgrade of the
    vendoring wheel wrote another file at that path (the stand-in answering 8.9.7). The file now at
    the path is not the mapped one: its row is not marked loaded and its release is its own (asked
    in a child process), never the mapped copy's. While the file is still the mapped one, the
    mapped copy's release is used and the row is marked loaded."""
    need_gcc()
    site = tmp_path / "site-packages"
    lib = build_c_library("#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 8907; }\n",
                          site / "v.libs" / "libcudnn-0123abcd.so.8", soname="libcudnn-0123abcd.so.8")
    stub = link_stub(tmp_path, "libcudnn-0123abcd.so.8")
    build_c_library(CONSUMER_C, site / "v" / "_ext.so", extra=[f"-L{stub}", "-l:libcudnn-0123abcd.so.8",
                                                               "-Wl,-rpath,$ORIGIN/../v.libs", "-Wl,--disable-new-dtags"])
    dist_info(site, "v", "0.1", ["v/_ext.so", "v.libs/libcudnn-0123abcd.so.8"])
    why = "the file at it is another file than the one mapped; the file there now is cuDNN 8.9.7"
    mapped = LibraryCopy(path=os.path.realpath(lib), name="libcudnn-0123abcd.so.8", soname="libcudnn-0123abcd.so.8",
                         version="8.6.0", version_source="the mapped copy", loaded=True, is_main=True,
                         replaced=why if replaced else None)
    rep = check_consumers(paths=[str(site)], conda=False, environ={}, loaded=[mapped])
    got = [(c.name, c.loaded, c.version, c.version_source) for c in rep.copies]
    if replaced:
        assert got == [("libcudnn-0123abcd.so.8", False, "8.9.7", "cudnnGetVersion in a child process")], got
    else:
        assert got == [("libcudnn-0123abcd.so.8", True, "8.6.0", "the mapped copy")], got
