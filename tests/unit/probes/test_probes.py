"""The mapped-library and on-disk probes against a real cuDNN wheel and C stand-ins.

Each scenario runs in a child Python process so the dynamic loader sees the environment
(``LD_LIBRARY_PATH`` is read once, at process start) and this test process stays clean.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers.support import REPO, build_c_library, build_cudnn_standin, require_real_cudnn

pytestmark = pytest.mark.native

FRAMEWORK_LIKE_C = r"""
/* Stand-in for a framework's native library (like libtorch_cuda.so): it NEEDs libcudnn.so.9
   and carries a RUNPATH to the cuDNN it ships with. */
#include <stddef.h>
size_t cudnnGetVersion(void);
size_t framework_cudnn_version(void) { return cudnnGetVersion(); }
"""


def run_py(code: str, env_extra: dict[str, str] | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH",)}
    env["PYTHONPATH"] = str(REPO)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env,
                          timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def header_version(lib_dir: Path) -> str:
    from cudnn_magic.probes.libnames import header_version as hv

    found = hv(str(lib_dir))
    assert found, "the cuDNN wheel ships cudnn_version.h"
    return found[0]


def test_elf_reader_on_real_and_bad_files(tmp_path):
    from cudnn_magic.probes.elf import NotElf, read_dynamic

    d = require_real_cudnn()
    graph = read_dynamic(str(d / "libcudnn_graph.so.9"))
    assert graph.soname == "libcudnn_graph.so.9"
    assert "$ORIGIN" in graph.runpath
    shim = read_dynamic(str(d / "libcudnn.so.9"))
    assert shim.soname == "libcudnn.so.9" and shim.rpath == ("$ORIGIN",)
    bad = tmp_path / "libcudnn.so.9"
    bad.write_text("this is not a library\n")
    with pytest.raises(NotElf):
        read_dynamic(str(bad))
    trunc = tmp_path / "trunc.so"
    trunc.write_bytes((d / "libcudnn.so.9").read_bytes()[:40])
    with pytest.raises(NotElf):
        read_dynamic(str(trunc))


def test_real_cudnn_mapped_like_a_framework_reports_path_version_owner():
    d = require_real_cudnn()
    expected = header_version(d)
    out = run_py(f"""
        import ctypes, json
        lib = ctypes.CDLL({str(d / 'libcudnn.so.9')!r}, mode=ctypes.RTLD_GLOBAL)
        lib.cudnnGetVersion.restype = ctypes.c_size_t
        raw = lib.cudnnGetVersion()
        from cudnn_magic.probes.loaded import probe_loaded
        copies, notes = probe_loaded()
        print(json.dumps({{"raw": raw, "copies": [c.__dict__ for c in copies], "notes": notes}}))
    """)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    main = [c for c in data["copies"] if c["name"] == "libcudnn.so.9"]
    assert len(main) == 1
    assert main[0]["path"] == str(d / "libcudnn.so.9")
    assert main[0]["version"] == expected
    assert "sha256 matches" in main[0]["version_source"]  # the file's own facts, never a call here
    assert main[0]["reached_version"] == expected  # what calls through it reach (RTLD_NOLOAD handle)
    assert main[0]["owner"].startswith("pip: nvidia-cudnn")
    from cudnn_magic.rules.cudnn_version import parse_cudnn_version

    assert str(parse_cudnn_version(data["raw"])) == expected  # the library itself agrees
    assert any(c["name"] == "libcudnn_graph.so.9" for c in data["copies"])


def test_only_the_shim_mapped_is_asked_in_a_child_not_in_this_process():
    d = require_real_cudnn()
    out = run_py(f"""
        import ctypes, json
        ctypes.CDLL({str(d / 'libcudnn.so.9')!r})   # mapped, its libcudnn_graph not yet
        from cudnn_magic.probes.loaded import probe_loaded
        copies, _ = probe_loaded()
        maps = open('/proc/self/maps').read()
        print(json.dumps({{"copies": [c.__dict__ for c in copies], "graph_mapped": 'libcudnn_graph' in maps}}))
    """)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["graph_mapped"] is False  # the probe did not pull the sub-library into this process
    (c,) = data["copies"]
    assert c["version"] == header_version(d)
    assert c["reached_version"] is None  # not asked: its first call would load libcudnn_graph here


def test_shim_without_its_sublibrary_does_not_kill_the_probing_process(tmp_path):
    d = require_real_cudnn()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "libcudnn.so.9").write_bytes((d / "libcudnn.so.9").read_bytes())
    out = run_py(f"""
        import ctypes, json
        ctypes.CDLL({str(broken / 'libcudnn.so.9')!r})
        from cudnn_magic.probes.loaded import probe_loaded
        copies, _ = probe_loaded()
        print(json.dumps([c.__dict__ for c in copies]))
    """)
    (c,) = json.loads(out.stdout.strip().splitlines()[-1])
    # Its version may be known from the file itself (a byte copy of the wheel's shim: RECORD
    # sha256); what its first call does is seen in a child process: it aborts.
    assert c["reached_version"] is None
    assert "died" in c["error"] and "SIGABRT" in c["error"]


def _shadow_setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    d = require_real_cudnn()
    shadow = tmp_path / "system-cudnn-9.1"
    build_cudnn_standin(shadow, "9.1.0")
    fw = build_c_library(FRAMEWORK_LIKE_C, tmp_path / "fwlib" / "libframework_standin.so",
                         extra=[f"-L{shadow}", "-l:libcudnn.so.9", f"-Wl,-rpath,{d}", "-Wl,--enable-new-dtags"])
    return d, shadow, fw


def test_ld_library_path_shadows_the_runpath_copy_and_the_verdict_follows(tmp_path):
    d, shadow, fw = _shadow_setup(tmp_path)
    out = run_py(f"""
        import ctypes, json, os
        from cudnn_magic.engines.check import judge_report
        from cudnn_magic.model import FrameworkBuild
        from cudnn_magic.probes.installed import probe_installed
        from cudnn_magic.probes.loaded import probe_loaded
        tf = FrameworkBuild(name="TensorFlow", distribution="tensorflow", version="2.18.0", cudnn_compiled="9.3",
                            cuda_compiled="12.5.1", cudnn_soname="libcudnn.so.9", consumer_library={str(fw)!r},
                            checker="tensorflow")
        inv = probe_installed()
        before = judge_report(loaded=(), installed=tuple(inv.copies), frameworks=(tf,), driver=None, gpus=(),
                              ldcache=inv.ldcache)
        # Now let the real loader decide: load the framework-like library.
        lib = ctypes.CDLL({str(fw)!r})
        lib.framework_cudnn_version.restype = ctypes.c_size_t
        really = lib.framework_cudnn_version()
        loaded, _ = probe_loaded()
        after = judge_report(loaded=loaded, installed=tuple(inv.copies), frameworks=(tf,), driver=None, gpus=(),
                             ldcache=inv.ldcache)
        from cudnn_magic.render.report import report_json, report_text
        print(json.dumps({{"before": report_json(before), "after": report_json(after), "really": really,
                          "text": report_text(before)}}))
    """, {"LD_LIBRARY_PATH": str(shadow)})
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["really"] == 90100  # the real dynamic loader took the LD_LIBRARY_PATH stand-in
    (res,) = data["before"]["resolutions"]
    assert res["picked"] == str(shadow / "libcudnn.so.9")
    assert res["reason"] == f"LD_LIBRARY_PATH entry {shadow}"
    assert str(d / "libcudnn.so.9") in res["shadowed"]
    for key in ("before", "after"):
        (tf,) = data[key]["frameworks"]
        assert tf["verdict"] == "mismatch", tf
        assert tf["cudnn_used"] == "9.1.0" and tf["cudnn_compiled"] == "9.3"
        assert "IsSourceCompatibleWithCudnnLibrary" in tf["rule"]
        ids = {f["id"] for f in data[key]["findings"]}
        assert "cudnn-version-mismatch" in ids
    ids_before = [f["id"] for f in data["before"]["findings"]]
    assert "cudnn-shadowed" in ids_before
    fixes = {x["id"] for f in data["before"]["findings"] for x in f["fixes"]}
    # The wheel's own copy (in the RUNPATH) would satisfy TensorFlow: the fix is the path, not pip.
    assert "remove-shadowing-dir" in fixes and "install-matching-cudnn" not in fixes
    assert "will load 9.1.0" in data["text"] and "LD_LIBRARY_PATH" in data["text"]
    (after_tf,) = data["after"]["frameworks"]
    assert after_tf["cudnn_used_path"] == str(shadow / "libcudnn.so.9")


def test_without_the_shadow_the_runpath_copy_is_picked_and_ok(tmp_path):
    d, _shadow, fw = _shadow_setup(tmp_path)
    out = run_py(f"""
        import json
        from cudnn_magic.engines.check import judge_report
        from cudnn_magic.model import FrameworkBuild
        from cudnn_magic.probes.installed import probe_installed
        tf = FrameworkBuild(name="TensorFlow", distribution="tensorflow", version="2.18.0", cudnn_compiled="9.3",
                            cudnn_soname="libcudnn.so.9", consumer_library={str(fw)!r}, checker="tensorflow")
        inv = probe_installed()
        r = judge_report(loaded=(), installed=tuple(inv.copies), frameworks=(tf,), driver=None, gpus=(), ldcache=inv.ldcache)
        print(json.dumps([r.frameworks[0].verdict, r.resolutions[0].picked, r.resolutions[0].reason]))
    """)
    verdict, picked, reason = json.loads(out.stdout.strip().splitlines()[-1])
    assert verdict == "ok"
    assert picked == str(d / "libcudnn.so.9")
    assert reason.startswith("RUNPATH")


def test_cudnn8_standin_inventoried_with_version_but_never_loaded(tmp_path):
    old = tmp_path / "cuda-11" / "lib64"
    build_cudnn_standin(old, "8.0.5")
    out = run_py("""
        import json
        from cudnn_magic.probes.installed import probe_installed
        inv = probe_installed()
        maps = open('/proc/self/maps').read()
        print(json.dumps({"copies": [c.__dict__ for c in inv.copies], "mapped": 'libcudnn.so.8' in maps}))
    """, {"LD_LIBRARY_PATH": str(old)})
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["mapped"] is False
    (c,) = [c for c in data["copies"] if c["name"] == "libcudnn.so.8"]
    assert c["version"] == "8.0.5"
    assert c["source"] == "LD_LIBRARY_PATH"
    assert "child process" in c["version_source"]
    assert c["loaded"] is False


def test_bad_environments_complete_and_say_what_they_could_not_read(tmp_path):
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "libcudnn.so.9").write_text("not ELF\n")
    (junk / "libcudnn.so.8").symlink_to(tmp_path / "nowhere" / "libcudnn.so.8.9.7")  # broken symlink
    loop = tmp_path / "loop"
    loop.symlink_to(loop)  # ELOOP
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    bad_tf = tmp_path / "site" / "tensorflow" / "python" / "platform"
    bad_tf.mkdir(parents=True)
    (bad_tf.parent.parent / "__init__.py").write_text("raise SystemExit('must never be imported')\n")
    (bad_tf / "build_info.py").write_text("build_info = {{{ this is not python\n")
    ldp = ":".join([str(junk), str(loop), str(a_file), str(tmp_path / "missing"), ""])
    out = run_py(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path / 'site')!r})
        from cudnn_magic.engines.check import run_check
        from cudnn_magic.probes.loaded import probe_loaded
        from cudnn_magic.render.report import report_json, report_text
        r = run_check()
        text = report_text(r)
        _, note = probe_loaded(maps_path={str(tmp_path / 'no-proc' / 'maps')!r})
        print(json.dumps({{"json": report_json(r), "text_ok": bool(text), "no_proc_note": note,
                          "tf_imported": "tensorflow" in sys.modules}}))
    """, {"LD_LIBRARY_PATH": ldp})
    data = json.loads(out.stdout.strip().splitlines()[-1])
    rep = data["json"]
    junk_copy = [c for c in rep["cudnn_installed"] if c["path"] == str(junk / "libcudnn.so.9")]
    assert junk_copy and "not a usable shared library" in junk_copy[0]["error"]
    assert any("broken symlink" in n for n in rep["notes"])
    assert any(f["id"] == "cudnn-unusable-copy" for f in rep["findings"])
    assert rep["driver"] is None  # no NVML here; the reason is given instead
    assert data["text_ok"] and data["tf_imported"] is False
    assert any("dl_iterate_phdr" in n for n in data["no_proc_note"])


def test_mixed_subversions_and_missing_graph_are_findings(tmp_path):
    from cudnn_magic.engines.check import judge_report
    from cudnn_magic.model import LibraryCopy

    d = str(tmp_path)
    copies = (
        LibraryCopy(f"{d}/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", "9.1.0", source="system dir", is_main=True),
        LibraryCopy(f"{d}/libcudnn_ops.so.9", "libcudnn_ops.so.9", "libcudnn_ops.so.9", "9.3.0", source="system dir",
                    is_main=False),
    )
    r = judge_report(loaded=(), installed=copies, frameworks=(), driver=None, gpus=())
    titles = [f.title for f in r.findings if f.id == "cudnn-sublibrary-load-failed"]
    assert any("Mixed cuDNN versions" in t for t in titles)
    assert any("no libcudnn_graph.so.9" in t for t in titles)


def test_two_directories_mapped_is_a_warning():
    from cudnn_magic.engines.check import judge_report
    from cudnn_magic.model import LibraryCopy

    loaded = (LibraryCopy("/a/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", "9.3.0", loaded=True),
              LibraryCopy("/b/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", "9.3.0", loaded=True))
    r = judge_report(loaded=loaded, installed=(), frameworks=(), driver=None, gpus=())
    assert [f.id for f in r.findings].count("cudnn-multiple-copies-loaded") == 1


def test_ldcache_parser_agrees_with_ldconfig():
    from cudnn_magic.probes.loader import read_ldcache

    cache, note = read_ldcache()
    if note:
        pytest.skip(note)
    proc = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip("ldconfig not available")
    listed = {ln.split(" (")[0].strip() for ln in proc.stdout.splitlines()[1:] if " => " in ln}
    assert listed == set(cache)


def test_ld_library_path_set_at_runtime_is_ignored_like_the_loader_does(tmp_path):
    shadow = tmp_path / "late"
    build_cudnn_standin(shadow, "9.1.0")
    out = run_py(f"""
        import json, os, ctypes
        os.environ["LD_LIBRARY_PATH"] = {str(shadow)!r}   # too late for the loader
        from cudnn_magic.engines.check import run_check
        r = run_check()
        try:
            ctypes.CDLL("libcudnn.so.9")
            loaded = True
        except OSError:
            loaded = False
        print(json.dumps({{"ids": [f.id for f in r.findings], "loader_found_it": loaded}}))
    """)
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data["loader_found_it"] is False  # the real loader ignores the late change...
    assert "ld-library-path-changed-at-runtime" in data["ids"]  # ...and the report says so
