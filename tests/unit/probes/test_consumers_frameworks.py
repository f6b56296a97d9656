"""Framework probes for cuDNN consumers that open cuDNN themselves or name it in their own way
(PaddlePaddle, TensorRT, MXNet), the pure consumer rules, and the vendored-name parsing.

PaddlePaddle: the real ``paddle/version/__init__.py`` of ``paddlepaddle-gpu`` 2.6.2 and
``paddlepaddle`` 3.3.1 (fixtures copied from the PyPI wheels; tests/fixtures/SOURCES.md, and the
network test below re-reads them from the wheels). The native libraries Paddle, TensorRT and
MXNet ship are hundreds of MB and need a GPU stack to load, so they are stand-ins built with gcc
(named so), placed where the real wheels put them: ``paddle/base/libpaddle.so``,
``tensorrt_libs/libnvinfer_plugin.so.10``, ``mxnet/libmxnet.so`` (which NEEDs ``libcudnn.so.8``
like the real ``mxnet-cu112`` 1.9.1 does).
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import urllib.request
import zipfile
from pathlib import Path

import pytest

from cudnn_magic.engines.consumer_check import check_consumers
from cudnn_magic.model import ConsumerLibrary, FrameworkBuild, SublibraryPick
from cudnn_magic.probes import libnames
from cudnn_magic.probes.frameworks.paddle import read_version_file
from cudnn_magic.rules.consumers import (
    ConsumerNeed,
    clash_findings,
    ctranslate2_build,
    judge_consumer,
    sublibrary_problems,
)
from helpers.builders import dist_info
from helpers.consumer_standins import (
    PADDLE_262,
    PADDLE_331,
    cudnn_standin_dir,
    link_stub,
    need_gcc,
    paddle_site,
)
from helpers.support import build_c_library

REMOTE = {
    PADDLE_262: ("https://files.pythonhosted.org/packages/84/5c/8d3aa7503980b9c1e0dafa4bc58fdc5ecadb4424c5eec8262f3159aaef55/"
                 "paddlepaddle_gpu-2.6.2-cp311-cp311-manylinux1_x86_64.whl",
                 "e5631999b635300f5c54f528ebd78cae5e5fe45175efdae8c9f4d10efeb8d050"),
    PADDLE_331: ("https://files.pythonhosted.org/packages/c6/df/50cff6a0795ff0ff6f210b5355fe77344a4be455d9d13e5dbaf5e3b9883d/"
                 "paddlepaddle-3.3.1-cp311-cp311-manylinux1_x86_64.whl",
                 "cf46a82c783f997f997256db3380f9db400490ea08b99e55d41939e565b2af6f"),
}


# ----------------------------------------------------------------------------- PaddlePaddle


def test_paddle_version_files_parse_without_import():
    consts, _ = read_version_file(str(_unpacked(PADDLE_262)))
    assert (consts["full_version"], consts["cuda_version"], consts["cudnn_version"]) == ("2.6.2", "11.8", "8.6.0")
    assert "with_pip_cuda_libraries" not in consts
    consts, _ = read_version_file(str(_unpacked(PADDLE_331)))
    assert (consts["cuda_version"], consts["with_pip_cuda_libraries"]) == ("False", "ON")


def _unpacked(fixture: Path) -> Path:
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="paddle-fixture-")) / "paddle"
    (d / "version").mkdir(parents=True)
    shutil.copy(fixture, d / "version" / "__init__.py")
    return d


def test_paddle_262_dlopens_the_unversioned_libcudnn_so_that_no_wheel_ships(tmp_path):
    site = paddle_site(tmp_path, PADDLE_262, "paddlepaddle-gpu", "2.6.2")
    jit_like = cudnn_standin_dir(tmp_path, "wheel-like", "9.27.0", 9)
    (jit_like / "libcudnn.so").unlink()  # pip wheels ship libcudnn.so.N only
    rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(jit_like)}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "PaddlePaddle")
    assert (row.version, row.cudnn_compiled, row.cuda_compiled, row.cudnn_soname) == ("2.6.2", "8.6.0", "11.8", "libcudnn.so")
    assert row.verdict == "unknown" and not row.pip_solvable
    assert "gpu_resources.cc" in row.rule and "dynamic_loader.cc" in row.rule
    f = next(f for f in rep.findings if f.id == "cudnn-library-not-found")
    assert f.title == "PaddlePaddle 2.6.2 will find no libcudnn.so" and f.severity == "warning"
    assert "paddle/base/libpaddle.so" in f.detail and str(jit_like) in f.detail
    c = next(c for c in rep.consumers if c.framework == "PaddlePaddle")
    assert c.picked is None and c.how == 'dlopen("libcudnn.so") by paddle/base/libpaddle.so'


@pytest.mark.parametrize("runtime,verdict,finding", [
    ("8.9.7", "ok", None),
    ("8.4.0", "mismatch", "will load the older 8.4.0"),
    ("9.1.0", "mismatch", "was built with cuDNN 8.6.0 but will load 9.1.0"),
])
def test_paddle_262_judged_by_paddles_own_rule(tmp_path, runtime, verdict, finding):
    site = paddle_site(tmp_path, PADDLE_262, "paddlepaddle-gpu", "2.6.2")
    d = cudnn_standin_dir(tmp_path, f"cudnn-{runtime}", runtime, int(runtime[0]))
    rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(d)}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "PaddlePaddle")
    assert (row.cudnn_used, row.cudnn_used_path, row.verdict) == (runtime, str(d / f"libcudnn.so.{runtime}"), verdict)
    mism = [f for f in rep.findings if f.id == "cudnn-version-mismatch"]
    if finding is None:
        assert not mism and not [f for f in rep.findings if "PaddlePaddle" in f.title]
    else:
        assert len(mism) == 1 and finding in mism[0].title
        if runtime.startswith("8"):
            assert mism[0].severity == "warning" and "may cause serious incompatible bug" in mism[0].detail


def test_paddle_3_pip_cuda_build_opens_the_wheel_dir_by_path(tmp_path):
    """The 3.3.1 file with cuda_version/cudnn_version set as a GPU build's (12.6 / 9.5.1, chosen
    values): Paddle opens site-packages/nvidia/cudnn/lib/libcudnn.so.9 by path first."""
    text = PADDLE_331.read_text().replace("cuda_version     = 'False'", "cuda_version     = '12.6'").replace(
        "cudnn_version    = 'False'", "cudnn_version    = '9.5.1'")
    assert "'12.6'" in text and "'9.5.1'" in text
    site = paddle_site(tmp_path, text, "paddlepaddle-gpu", "3.3.1")
    wheel = cudnn_standin_dir(tmp_path, "nv", "9.10.2", 9)
    (site / "nvidia" / "cudnn").mkdir(parents=True)
    (site / "nvidia" / "cudnn" / "lib").symlink_to(wheel, target_is_directory=True)
    shadow = cudnn_standin_dir(tmp_path, "shadow", "9.1.0", 9)
    rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(shadow)}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "PaddlePaddle")
    assert (row.cudnn_soname, row.cudnn_used, row.verdict, row.pip_solvable) == ("libcudnn.so.9", "9.10.2", "ok", True)
    c = next(c for c in rep.consumers if c.framework == "PaddlePaddle")
    assert c.picked == str(wheel / "libcudnn.so.9.10.2") and c.why == "opened by path"
    assert c.how.startswith("dlopen of FLAGS_cudnn_dir")


def test_paddle_331_cpu_build_needs_no_cudnn(tmp_path):
    site = paddle_site(tmp_path, PADDLE_331, "paddlepaddle", "3.3.1", with_lib=False)
    rep = check_consumers(paths=[str(site)], conda=False, environ={}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "PaddlePaddle")
    assert row.verdict == "not-applicable" and "cuda_version 'False'" in row.detail
    assert not rep.findings and not rep.consumers


class _RangeFile(io.RawIOBase):
    """A remote file read with HTTP range requests (the wheel itself is never downloaded)."""

    def __init__(self, url: str) -> None:
        self.url, self.pos = url, 0
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=20) as r:
            self.size = int(r.headers["Content-Length"])

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.pos

    def seek(self, off: int, whence: int = 0) -> int:
        self.pos = off if whence == 0 else self.pos + off if whence == 1 else self.size + off
        return self.pos

    def readinto(self, b) -> int:  # type: ignore[no-untyped-def]
        if self.pos >= self.size or not len(b):
            return 0
        end = min(self.pos + len(b), self.size) - 1
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={self.pos}-{end}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            data = r.read()
        b[: len(data)] = data
        self.pos += len(data)
        return len(data)


def test_paddle_fixtures_are_the_real_files():
    """Reads paddle/version/__init__.py straight out of the two PyPI wheels (a few range
    requests, about 1 s) and compares it with the fixtures. Skipped when PyPI cannot be reached."""
    for fixture, (url, sha) in REMOTE.items():
        assert hashlib.sha256(fixture.read_bytes()).hexdigest() == sha
        try:
            z = zipfile.ZipFile(io.BufferedReader(_RangeFile(url), buffer_size=1 << 16))
            data = z.read("paddle/version/__init__.py")
        except OSError as exc:
            pytest.skip(f"PyPI cannot be reached to re-read {url.rsplit('/', 1)[-1]}: {exc}")
        assert hashlib.sha256(data).hexdigest() == sha


# ----------------------------------------------------------------------------- TensorRT and MXNet


def test_tensorrt_10_plugins_need_libcudnn8_and_only_they(tmp_path):
    need_gcc()
    site = tmp_path / "site-packages"
    plugin = build_c_library("int trt_plugin_standin(void){return 0;}\n", site / "tensorrt_libs" / "libnvinfer_plugin.so.10",
                             soname="libnvinfer_plugin.so.10")
    (site / "tensorrt_libs" / "__init__.py").write_text("")
    dist_info(site, "tensorrt-cu12-libs", "10.9.0.34", ["tensorrt_libs/__init__.py", "tensorrt_libs/libnvinfer_plugin.so.10"])
    rep = check_consumers(paths=[str(site)], conda=False, environ={}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "TensorRT")
    assert (row.version, row.cuda_compiled, row.cudnn_soname, row.verdict) == ("10.9.0.34", "12", "libcudnn.so.8", "ok")
    assert "cudnnWrapper.cpp" in row.rule
    f = next(f for f in rep.findings if f.id == "cudnn-library-not-found")
    assert f.severity == "warning" and "those plugins fail" in f.detail and "TensorRT 10.9.0.34" in f.title
    d = cudnn_standin_dir(tmp_path, "cudnn8", "8.9.7", 8)
    rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(d)}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "TensorRT")
    assert row.verdict == "ok" and row.cudnn_used == "8.9.7" and not rep.findings
    assert next(c for c in rep.consumers if c.framework == "TensorRT").path == str(plugin)


def test_mxnet_cu112_row_from_the_soname_libmxnet_needs(tmp_path):
    need_gcc()
    site = tmp_path / "site-packages"
    stub = link_stub(tmp_path, "libcudnn.so.8")
    build_c_library("#include <stddef.h>\nsize_t cudnnGetVersion(void);\nsize_t mx(void){return cudnnGetVersion();}\n",
                    site / "mxnet" / "libmxnet.so", extra=[f"-L{stub}", "-l:libcudnn.so.8"])
    (site / "mxnet" / "__init__.py").write_text("")
    dist_info(site, "mxnet-cu112", "1.9.1", ["mxnet/__init__.py", "mxnet/libmxnet.so"])
    rep = check_consumers(paths=[str(site)], conda=False, environ={}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "MXNet")
    assert (row.distribution, row.version, row.cuda_compiled, row.cudnn_compiled) == ("mxnet-cu112", "1.9.1", "11.2", "8")
    assert row.verdict == "unknown" and "CuDNNLibChecks" in row.rule
    assert next(f for f in rep.findings if f.id == "cudnn-library-not-found").title == "MXNet 1.9.1 will find no libcudnn.so.8"
    assert [f.name for f in rep.frameworks] == ["MXNet"], "libmxnet.so must not get a second, generic row"
    d = cudnn_standin_dir(tmp_path, "cudnn8", "8.9.7", 8)
    rep = check_consumers(paths=[str(site)], conda=False, environ={"LD_LIBRARY_PATH": str(d)}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "MXNet")
    assert row.verdict == "ok" and row.cudnn_used == "8.9.7" and not rep.findings


# ----------------------------------------------------------------------------- pure parts


def test_vendored_and_windows_names():
    assert libnames.parse_name("libcudnn-463fd6d5.so.8.9.7") == ("cudnn", 8, "8.9.7")
    assert libnames.parse_name("libcudnn_ops_infer-1a2b3c4d.so.8") == ("cudnn_ops_infer", 8, None)
    assert libnames.parse_name("cudnn64_8.dll") == ("cudnn", 8, None)
    assert libnames.parse_name("cudnn_graph64_9.dll") == ("cudnn_graph", 9, None)
    assert libnames.parse_name("libcudnn-xyz.so.8") is None
    assert libnames.soname_of("libcudnn-463fd6d5.so.8.9.7") == "libcudnn-463fd6d5.so.8.9.7"
    assert libnames.soname_of("libcudnn.so.9.1.0") == "libcudnn.so.9"
    assert libnames.is_vendored_name("cudnn64_9-0a1b2c3d.dll") and not libnames.is_vendored_name("libcudnn.so.9")
    assert libnames.is_main("libcudnn-463fd6d5.so.8.9.7") and not libnames.is_main("cudnn_ops_infer64_8.dll")


def test_ctranslate2_build_table():
    assert ctranslate2_build("4.4.0") == ("12.2", "8.9.7")
    assert ctranslate2_build("3.24.0") == ("11.2", "8.1.1")
    assert ctranslate2_build("4.5.0") == ("12.2", "9.1.0")
    assert ctranslate2_build("4.6.2") == ("12.4", "9.1.0")
    assert ctranslate2_build("4.6.3") == ("12.8", None) and ctranslate2_build("4.8.5") == ("12.8", None)
    assert ctranslate2_build("2.24.0") is None and ctranslate2_build("not a version") is None


def _pick(soname: str, path: str | None, version: str | None, required: bool = True) -> SublibraryPick:
    return SublibraryPick(soname, path, version, "test", required)


def test_sublibrary_problems():
    ok = (_pick("libcudnn_ops_infer.so.8", "/a/x", "8.9.7"), _pick("libcudnn_cnn_infer.so.8", "/a/y", "8.9.7"),
          _pick("libcudnn_adv_infer.so.8", None, None, required=False))
    assert not sublibrary_problems("8.9.7", ok)
    miss = sublibrary_problems("8.9.7", (ok[0], _pick("libcudnn_cnn_infer.so.8", None, None)))
    assert miss.missing == ("libcudnn_cnn_infer.so.8",) and not miss.mixed
    mixed = sublibrary_problems("8.9.7", (ok[0], _pick("libcudnn_cnn_infer.so.8", "/b/y", "8.6.0")))
    assert len(mixed.mixed) == 2
    older = sublibrary_problems("8.9.7", (_pick("libcudnn_ops_infer.so.8", "/a", "8.6.0"), _pick("libcudnn_cnn_infer.so.8", "/a", "8.6.0")))
    assert older.older and not older.mixed
    # cuDNN 9: the shim answers with whatever graph is loaded, so an older shim is no problem.
    assert not sublibrary_problems("9.1.0", (_pick("libcudnn_graph.so.9", "/g", "9.10.2"),))


def test_judge_consumer_without_consumers_is_not_applicable_and_a_gpu_makes_errors():
    row = FrameworkBuild("X", "x", "1.0", checker="soname", cudnn_compiled="9")
    assert judge_consumer(row, [], gpus=False).row.verdict == "not-applicable"
    c = ConsumerLibrary("/p/libx.so", "x 1.0", "libcudnn.so.9", picked=None, why="not found by the loader's search")
    j = judge_consumer(row, [c], gpus=True)
    assert j.row.verdict == "mismatch" and j.findings[0].severity == "error"
    j = judge_consumer(row, [c], gpus=False)
    assert j.row.verdict == "unknown" and j.findings[0].severity == "warning"


def test_clash_findings_only_when_something_breaks():
    ok9 = (_pick("libcudnn_graph.so.9", "/w/g", "9.10.2"),)
    ok8 = (_pick("libcudnn_ops_infer.so.8", "/s/o", "8.9.7"), _pick("libcudnn_cnn_infer.so.8", "/s/c", "8.9.7"))
    broken8 = (_pick("libcudnn_ops_infer.so.8", None, None), _pick("libcudnn_cnn_infer.so.8", None, None))
    # Both majors served: cuDNN 8 and 9 load side by side, nothing to say.
    assert clash_findings([ConsumerNeed("A 1", 8, ok8), ConsumerNeed("B 1", 9, ok9)], gpus=False) == []
    out = clash_findings([ConsumerNeed("CTranslate2 4.4.0", 8, broken8), ConsumerNeed("PyTorch 2.9.1", 9, ok9)], gpus=True)
    assert [f.id for f in out] == ["cudnn-consumer-clash"] and out[0].severity == "error"
    assert "CTranslate2 4.4.0 needs cuDNN 8" in out[0].title and "(for PyTorch 2.9.1)" in out[0].title
    # Same major, same file: no import-order finding; different files: one.
    assert clash_findings([ConsumerNeed("A 1", 9, ok9), ConsumerNeed("B 1", 9, ok9)], gpus=False) == []
    other = (_pick("libcudnn_graph.so.9", "/o/g", "9.1.0"),)
    out = clash_findings([ConsumerNeed("A 1", 9, ok9), ConsumerNeed("B 1", 9, other)], gpus=False)
    assert [f.id for f in out] == ["cudnn-import-order"] and out[0].fixes[0].title == "Import A first"
    # One consumer finds no graph library of its own: it works only after another loaded one.
    none = (_pick("libcudnn_graph.so.9", None, None),)
    out = clash_findings([ConsumerNeed("A 1", 9, ok9), ConsumerNeed("CT2 4.5.0", 9, none)], gpus=False)
    assert "CT2 4.5.0 work only if another consumer has loaded it first" in out[0].detail


def test_paddle_without_a_version_file_is_unknown_not_a_false_finding(tmp_path):
    site = tmp_path / "site-packages"
    (site / "paddle").mkdir(parents=True)
    (site / "paddle" / "__init__.py").write_text("")
    dist_info(site, "paddlepaddle-gpu", "2.0.0", ["paddle/__init__.py"])
    rep = check_consumers(paths=[str(site)], conda=False, environ={}, ldcache={})
    row = next(f for f in rep.frameworks if f.name == "PaddlePaddle")
    assert row.verdict == "unknown" and "no paddle/version/__init__.py" in row.detail
    assert not rep.findings and not rep.consumers


def test_the_faster_whisper_abort_is_explained_with_the_consumer_facts():
    """The most common faster-whisper error (``Could not load library libcudnn_ops_infer.so.8``,
    then the process aborts) with the live facts of a CTranslate2 4.4.0 environment: the
    diagnosis names CTranslate2's vendored cuDNN and offers its upgrade first; the row's
    "mismatch" (its sub-libraries) is not turned into a version-mismatch story."""
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.model import Report
    from helpers.real_wheels import install_wheel

    ct2 = install_wheel("ctranslate2", "4.4.0")
    rep = check_consumers(paths=[str(ct2)], conda=False, environ={})
    report = Report(cudnn_installed=tuple(rep.copies), frameworks=tuple(rep.frameworks), consumers=tuple(rep.consumers),
                    findings=tuple(rep.findings), gpus=())
    log = ("Could not load library libcudnn_ops_infer.so.8. Error: libcudnn_ops_infer.so.8: cannot open shared object "
           "file: No such file or directory\nAborted (core dumped)")
    ds = diagnose("", log, report)
    assert ds[0].id == "cudnn-sublibrary-load-failed"
    assert "fact: CTranslate2 4.4.0: cuDNN 8.9.7 will not find libcudnn_ops_infer.so.8, libcudnn_cnn_infer.so.8" in ds[0].evidence
    assert ds[0].fixes[0].id == "upgrade-consumer" and "ctranslate2>=4.6.3" in ds[0].fixes[0].action
    assert "cudnn-version-mismatch" not in [d.id for d in ds]


def test_consumer_fix_ids_plan_from_the_findings_words():
    from cudnn_magic import fixes
    from cudnn_magic.model import Finding, Fix, Report

    f = Finding("cudnn-sublibrary-load-failed", "warning", "CTranslate2 4.4.0: cuDNN 8.9.7 will not find x", "d",
                (Fix("upgrade-consumer", "Upgrade CTranslate2", "python -m pip install -U 'ctranslate2>=4.6.3'", True),))
    p = fixes.plan("upgrade-consumer", Report(findings=(f,)))
    assert not p.applicable and p.title == "Upgrade CTranslate2" and "ctranslate2>=4.6.3" in p.action
    assert p.restart_required and p.notes == ("cudnn-sublibrary-load-failed: CTranslate2 4.4.0: cuDNN 8.9.7 will not find x",)
    empty = fixes.plan("separate-kernels", Report())
    assert not empty.applicable and "no finding" in empty.reason
    assert {"upgrade-consumer", "add-library-path", "separate-kernels"} <= set(fixes.FIXES)


def test_cli_check_lists_consumers_in_text_and_json(tmp_path):
    import json
    import subprocess
    import sys

    from helpers.real_wheels import install_wheel
    from helpers.support import REPO

    ct2 = install_wheel("ctranslate2", "4.4.0")
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH",)}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(ct2)])
    text = subprocess.run([sys.executable, "-m", "cudnn_magic", "check"], capture_output=True, text=True, env=env, timeout=120)
    assert text.returncode == 0, text.stderr  # no GPU here: the finding is a warning
    assert "cuDNN consumers" in text.stdout and "libcudnn-463fd6d5.so.8.9.7" in text.stdout
    assert "sub-libraries: MISSING libcudnn_ops_infer.so.8, libcudnn_cnn_infer.so.8" in text.stdout
    js = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--json"], capture_output=True, text=True, env=env,
                        timeout=120)
    data = json.loads(js.stdout)
    c = next(c for c in data["consumers"] if c["framework"] == "CTranslate2")
    assert set(c) >= {"path", "distribution", "framework", "soname", "how", "picked", "picked_version", "why", "vendored",
                      "searched", "sublibraries", "sublibrary_searched"}
    assert c["distribution"] == "ctranslate2 4.4.0"
