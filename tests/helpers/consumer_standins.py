"""Native stand-ins for the cuDNN consumer tests, built with gcc in the test's tmp dir.

Every library here is a stand-in at the native boundary, and named so in its docstring: a
consumer that NEEDs a cuDNN soname (``libstandin_consumer.so``), a cuDNN main library that opens
its sub-library by soname on the first call like the real 8.x/9.x shim does, sub-libraries that
answer a chosen version. Python-level layouts (``*.dist-info`` with METADATA and RECORD) are
written the way pip writes them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.builders import dist_info
from helpers.support import build_c_library, have_gcc


def need_gcc() -> None:
    if not have_gcc():
        pytest.skip("gcc is needed to build the native stand-ins")


CONSUMER_C = r"""
#include <stddef.h>
size_t cudnnGetVersion(void);
size_t consumer_version(void) { return cudnnGetVersion(); }
"""
LINK_STUB_C = "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return 0; }\n"
# A cuDNN main library stand-in: like the real 8.x/9.x shim it opens its sub-library by soname on
# the first call and forwards the version call to it (0 when the sub-library cannot be opened).
MAIN_STANDIN_C = r"""
#include <dlfcn.h>
#include <stddef.h>
size_t cudnnGetVersion(void) {
  void *h = dlopen(SUBLIB, RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  size_t (*f)(void) = (size_t (*)(void)) dlsym(h, "cudnnGetVersion");
  return f ? f() : 1;
}
"""
SUB_STANDIN_C = "#include <stddef.h>\nsize_t cudnnGetVersion(void) { return VER; }\n"


def link_stub(tmp: Path, soname: str) -> Path:
    d = tmp / f"linkstub-{soname}"
    build_c_library(LINK_STUB_C, d / soname, soname=soname)
    return d


def consumer(tmp: Path, out: Path, soname: str, rpath: str, new_dtags: bool) -> Path:
    """``libstandin_consumer.so``: NEEDs ``soname`` and carries ``rpath`` as RUNPATH (new dtags) or RPATH."""
    stub = link_stub(tmp, soname)
    return build_c_library(CONSUMER_C, out, extra=[f"-L{stub}", f"-l:{soname}", f"-Wl,-rpath,{rpath}",
                                                   "-Wl,--enable-new-dtags" if new_dtags else "-Wl,--disable-new-dtags"])


def main_standin(d: Path, soname: str, sublib: str) -> Path:
    return build_c_library(MAIN_STANDIN_C, d / soname, soname=soname, extra=[f'-DSUBLIB="{sublib}"', "-ldl"])


def sub_standin(d: Path, soname: str, version: str, encoded: int, origin: str = "") -> Path:
    """A sub-library (or main library) stand-in answering ``encoded`` to ``cudnnGetVersion``, in a
    file named like NVIDIA's packages name it (``libcudnn_ops_infer.so.8`` + ``.9.7`` for version
    8.9.7), with the soname link beside it. ``origin``: ``"rpath"`` or ``"runpath"`` gives it that
    ``$ORIGIN`` entry, as the real main libraries carry (``readelf -d``: ``nvidia-cudnn-cu13`` 9.24's
    ``libcudnn.so.9`` has RPATH ``$ORIGIN``, ``nvidia-cudnn-cu12`` 8.9.7's ``libcudnn.so.8`` RUNPATH
    ``$ORIGIN``), so it finds its own sub-libraries first the way they do."""
    real_name = soname + "." + ".".join(version.split(".")[1:])
    extra = [f"-DVER={encoded}"]
    if origin:
        extra += ["-Wl,-rpath,$ORIGIN", "-Wl,--disable-new-dtags" if origin == "rpath" else "-Wl,--enable-new-dtags"]
    real = build_c_library(SUB_STANDIN_C, d / real_name, soname=soname, extra=extra)
    link = d / soname
    if not link.exists():
        link.symlink_to(real.name)
    return real


def standin_site(tmp: Path, jit: Path, new_dtags: bool = True, name: str = "standin-cudnn9-consumer",
                  pkg: str = "standin_consumer") -> tuple[Path, Path]:
    """A site-packages with ``<pkg>/libstandin_consumer.so`` (NEEDs libcudnn.so.9, RUNPATH
    ``$ORIGIN/../nvidia/cudnn_jit/lib``) and ``nvidia/`` -> the real JIT wheel."""
    site = tmp / f"site-{pkg}" / "site-packages"
    (site / pkg).mkdir(parents=True)
    (site / "nvidia").symlink_to(jit / "nvidia", target_is_directory=True)
    lib = consumer(tmp, site / pkg / "libstandin_consumer.so", "libcudnn.so.9", "$ORIGIN/../nvidia/cudnn_jit/lib", new_dtags)
    dist_info(site, name, "1.0", [f"{pkg}/libstandin_consumer.so"])
    return site, lib


# -- PaddlePaddle's real version files (tests/fixtures/SOURCES.md) and a stand-in cuDNN folder ----

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PADDLE_262 = FIXTURES / "paddlepaddle_gpu-2.6.2" / "version__init__.py"
PADDLE_331 = FIXTURES / "paddlepaddle-3.3.1" / "version__init__.py"

def paddle_site(tmp: Path, version_file: Path | str, dist_name: str, version: str, with_lib: bool = True) -> Path:
    """A site-packages holding ``paddle/`` with the real version file and, when gcc is there, a
    stand-in ``paddle/base/libpaddle.so`` (where Paddle 2.6's pybind module lives)."""
    site = tmp / "site-packages"
    (site / "paddle" / "version").mkdir(parents=True)
    (site / "paddle" / "__init__.py").write_text("")
    target = site / "paddle" / "version" / "__init__.py"
    if isinstance(version_file, Path):
        shutil.copy(version_file, target)
    else:
        target.write_text(version_file)
    files = ["paddle/__init__.py", "paddle/version/__init__.py"]
    if with_lib:
        need_gcc()
        build_c_library("int paddle_standin(void){return 0;}\n", site / "paddle" / "base" / "libpaddle.so")
        files.append("paddle/base/libpaddle.so")
    dist_info(site, dist_name, version, files)
    return site


def cudnn_standin_dir(tmp: Path, name: str, version: str, major: int) -> Path:
    """A directory with a stand-in cuDNN ``major`` main library (file ``libcudnn.so.<version>``,
    soname ``libcudnn.so.<major>``, plus ``libcudnn.so`` as cuDNN's dev packages make it) and the
    sub-libraries its first convolution needs, all answering ``version``. The main library carries
    the ``$ORIGIN`` entry the real ones do (RPATH for 9, RUNPATH for 8)."""
    d = tmp / name
    enc = int(version.split(".")[0]) * (10000 if major >= 9 else 1000) + int(version.split(".")[1]) * 100 + int(version.split(".")[2])
    sub_standin(d, f"libcudnn.so.{major}", version, enc, origin="rpath" if major >= 9 else "runpath")
    (d / "libcudnn.so").symlink_to(f"libcudnn.so.{version}")
    subs = ("libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8") if major == 8 else (
        "libcudnn_graph.so.9", "libcudnn_engines_runtime_compiled.so.9")
    for s in subs:
        sub_standin(d, s, version, enc)
    return d
