"""Frameworks probe: compiled-against cuDNN/CUDA read from real-shaped installed files.

The site-packages trees are built in tmp_path from the exact text of real files (TensorFlow's
``build_info.py`` in each shape ``gen_build_info.py`` has written, ``torch/version.py``, CuPy's
``_wheel.json``, ONNX Runtime's ``build_and_package_info.py``, and ``Requires-Dist`` lines from the
real wheels' METADATA, as quoted in docs/facts.md). Where a real wheel is on this
machine (pip's find-links / local index) the files are taken from it instead. Each package's
``__init__.py`` raises, so any accidental import shows up as a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

from cudnn_magic.probes import frameworks as fw
from cudnn_magic.probes.frameworks import module_constants, probe_frameworks, read_dist_metadata, read_tf_build_info
from helpers import builders
from helpers.builders import write
from helpers.framework_files import by_name, local_wheel, probe_one, unpack

REPO = Path(__file__).resolve().parents[3]

TF_HEADER = '''
# Copyright 2020 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# ==============================================================================
"""Auto-generated module providing information about the build."""
'''

# TF 2.21.0 (tensorflow, Linux x86_64), docs/facts.md "Where each framework's compiled-against versions come from".
TF_221 = TF_HEADER + '''import collections

build_info = collections.OrderedDict([('cpu_compiler', 'clang'), ('cuda_compute_capabilities', ['sm_60', 'sm_70', 'sm_80', 'sm_89', 'compute_90']), ('cuda_version', '12.5.1'), ('cudnn_version', '9'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', False)])
'''
# tensorflow-cpu 2.21.0 (read from the wheel, docs/facts.md "Where each framework's compiled-against versions come from").
TF_CPU_221 = TF_HEADER + '''import collections

build_info = collections.OrderedDict([('is_cuda_build', False), ('is_rocm_build', False), ('is_tensorrt_build', False)])
'''
# TF 2.15 Linux pip wheel shape (OrderedDict; CUDA 12.2, cuDNN major 8).
TF_215 = TF_HEADER + '''import collections

build_info = collections.OrderedDict([('cpu_compiler', '/usr/lib/llvm-17/bin/clang'), ('cuda_compute_capabilities', ['sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '12.2'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])
'''
# TF 2.4 Linux pip wheel shape.
TF_24 = TF_HEADER + '''import collections

build_info = collections.OrderedDict([('cpu_compiler', '/dt7/usr/bin/gcc'), ('cuda_compute_capabilities', ['sm_35', 'sm_50', 'sm_60', 'sm_70', 'sm_75', 'compute_80']), ('cuda_version', '11.0'), ('cudnn_version', '8'), ('is_cuda_build', True), ('is_rocm_build', False), ('is_tensorrt_build', True)])
'''
# TF 2.3 (plain dict; Windows values '64_101' / '64_7' as a real 2.3 wheel wrote them).
TF_23_WIN = TF_HEADER + '''from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

build_info = {'cuda_version': '64_101', 'cudnn_version': '64_7', 'cuda_compute_capabilities': ['sm_35', 'sm_37', 'sm_52', 'sm_60', 'sm_61', 'compute_70'], 'cpu_compiler': 'C:/Program Files (x86)/Microsoft Visual Studio/2019/Community/VC/Tools/MSVC/14.26.28801/bin/HostX64/x64/cl.exe', 'is_rocm_build': False, 'is_cuda_build': True, 'msvcp_dll_names': 'msvcp140.dll,msvcp140_1.dll', 'nvcuda_dll_name': 'nvcuda.dll', 'cudart_dll_name': 'cudart64_101.dll', 'cudnn_dll_name': 'cudnn64_7.dll'}
'''
# TF 1.15 (gen_build_info.py of 1.x: module constants).
TF_115 = '''
# Copyright 2017 The TensorFlow Authors. All Rights Reserved.
"""Generates a Python module containing information about the build."""
from __future__ import absolute_import
from __future__ import division
from __future__ import print_function

is_rocm_build = False
is_cuda_build = True

cuda_version_number = '10.0'
cudnn_version_number = '7'
'''
# TF 1.15 Linux wheels carried only the booleans.
TF_115_LINUX = TF_115.split("cuda_version_number")[0]
TF_MALFORMED = TF_HEADER + "import collections\n\nbuild_info = collections.OrderedDict([('cuda_version', '12.5.1'),\n"

TF_221_REQUIRES = [
    "absl-py>=1.0.0",
    "numpy>=1.26.0",
    'nvidia-cublas-cu12<13.0,>=12.5.3.2; extra == "and-cuda"',
    'nvidia-cuda-runtime-cu12<13.0,>=12.5.82; extra == "and-cuda"',
    'nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',
    'nvidia-nccl-cu12<3.0,>=2.27.7; extra == "and-cuda"',
]
TORCH_291_REQUIRES = [
    "filelock",
    'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',
    'nvidia-cublas-cu12==12.8.4.1; platform_system == "Linux" and platform_machine == "x86_64"',
    'triton==3.5.1; platform_system == "Linux" and platform_machine == "x86_64"',
]
# torch 2.14.1 (the CUDA wheel's METADATA, docs/facts.md "Where each framework's compiled-against versions come from").
TORCH_2141_REQUIRES = [
    "filelock",
    'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvtx]==13.0.3; platform_system == "Linux"',
    'nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',
    'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"',
    'optree>=0.13.0; extra == "optree"',
]
TORCH_VERSION_PY = """from typing import Optional

__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']
__version__ = '{version}'
debug = False
cuda: Optional[str] = {cuda!r}
git_version = '5c4886908584029761b579af026dcfb627c84070'
hip: Optional[str] = None
rocm: Optional[str] = None
xpu: Optional[str] = None
"""
CUPY_13_WHEEL_JSON = (
    '{"cuda": "12.x", "packaging": "pip", "cutensor": {"version": "2.1.0", "min_pypi_version": "2.0.0", '
    '"filenames": ["libcutensor.so.2.1.0"]}, "nccl": {"version": "2.25.1", "min_pypi_version": "2.16.5", '
    '"filenames": ["libnccl.so.2.25.1"]}, "cudnn": {"version": "8.8.1", "min_pypi_version": "8.8.1", '
    '"filenames": ["libcudnn.so.8.8.1", "libcudnn_ops_infer.so.8.8.1", "libcudnn_ops_train.so.8.8.1", '
    '"libcudnn_cnn_infer.so.8.8.1", "libcudnn_cnn_train.so.8.8.1", "libcudnn_adv_infer.so.8.8.1", '
    '"libcudnn_adv_train.so.8.8.1"]}}'
)
ORT_GPU_1311_REQUIRES = [
    "flatbuffers",
    "numpy>=1.21.6",
    'nvidia-cuda-runtime~=13.0; extra == "cuda"',
    'nvidia-cudnn-cu13~=9.0; extra == "cudnn"',
]

BOOBY_TRAP = "raise RuntimeError('the frameworks probe imported {name}')\n"

# ---------------------------------------------------------------------------------------------
# tree builders
# ---------------------------------------------------------------------------------------------





def dist_info(site: Path, name: str, version: str, requires: list[str] = (), extras: list[str] = ()) -> Path:
    """A ``*.dist-info`` with a core-metadata header block like pip writes (a continued header line,
    and a description that mentions ``Requires-Dist`` after the blank line)."""
    return builders.dist_info(
        site, name, version, [], requires=requires, extras=extras, metadata_version="2.4",
        headers=["Summary: test tree", "Classifier: Programming Language :: Python :: 3", "License-File: LICENSE",
                 "  continued license line"],
        description="Long description.\nRequires-Dist: not-a-header==1\n")


def tf_tree(site: Path, build_info: str, dist: str = "tensorflow", version: str = "2.21.0",
            requires: list[str] = (), framework_lib: bool = True) -> Path:
    pkg = site / "tensorflow"
    write(pkg / "__init__.py", BOOBY_TRAP.format(name="tensorflow"))
    write(pkg / "python" / "__init__.py", BOOBY_TRAP.format(name="tensorflow.python"))
    write(pkg / "python" / "platform" / "build_info.py", build_info)
    if framework_lib:
        write(pkg / "libtensorflow_framework.so.2", b"\x7fELF")
    if dist:
        dist_info(site, dist, version, requires)
    return pkg


def torch_tree(site: Path, version: str, cuda: str | None, requires: list[str] = (), libs: list[str] = ()) -> Path:
    pkg = site / "torch"
    write(pkg / "__init__.py", BOOBY_TRAP.format(name="torch"))
    write(pkg / "version.py", TORCH_VERSION_PY.format(version=version, cuda=cuda))
    for lib in libs:
        write(pkg / "lib" / lib, b"\x7fELF")
    dist_info(site, "torch", version, requires)
    return pkg


@pytest.fixture(autouse=True)
def nothing_imported():
    before = {m for m in sys.modules if m.split(".")[0] in ("tensorflow", "torch", "cupy", "cupy_backends", "onnxruntime", "jax", "jaxlib")}
    yield
    after = {m for m in sys.modules if m.split(".")[0] in ("tensorflow", "torch", "cupy", "cupy_backends", "onnxruntime", "jax", "jaxlib")}
    assert after == before, f"the probe imported {sorted(after - before)}"


# ---------------------------------------------------------------------------------------------
# TensorFlow
# ---------------------------------------------------------------------------------------------


def test_tf_221_minor_from_tested_build_table(tmp_path):
    pkg = tf_tree(tmp_path, TF_221, requires=TF_221_REQUIRES)
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert (b.distribution, b.version, b.imported) == ("tensorflow", "2.21.0", False)
    assert b.cudnn_compiled == "9.3"
    assert b.cudnn_compiled_source == (
        "build_info.py cudnn_version '9' + TensorFlow tested build table (cuDNN 9.3, CUDA 12.5 for TF 2.21.0)"
    )
    assert b.cuda_compiled == "12.5.1"
    assert b.cuda_compute_capabilities == ("sm_60", "sm_70", "sm_80", "sm_89", "compute_90")
    assert b.cudnn_soname == "libcudnn.so.9"
    assert b.consumer_library == str(pkg / "libtensorflow_framework.so.2")
    assert b.pins == ('nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',)
    assert b.checker == "tensorflow"
    assert (b.verdict, b.rule, b.cudnn_used) == ("unknown", "", None)  # left to the check engine
    assert notes == []


def test_tf_nightly_minor_from_and_cuda_pin(tmp_path):
    tf_tree(tmp_path, TF_221, dist="tf-nightly", version="2.22.0.dev20260115", requires=TF_221_REQUIRES)
    b, _ = probe_one(tmp_path, "TensorFlow")
    assert (b.distribution, b.version) == ("tf-nightly", "2.22.0.dev20260115")
    assert b.cudnn_compiled == "9.3"
    assert b.cudnn_compiled_source == (
        "build_info.py cudnn_version '9' + tensorflow[and-cuda] pin nvidia-cudnn-cu12<10.0,>=9.3.0.75 (lower bound)"
    )


def test_tf_major_only_when_nothing_else_says(tmp_path):
    tf_tree(tmp_path, TF_221, dist="tensorflow-gpu", version="2.30.0")
    b, _ = probe_one(tmp_path, "TensorFlow")
    assert (b.distribution, b.cudnn_compiled, b.cudnn_soname) == ("tensorflow-gpu", "9", "libcudnn.so.9")
    assert b.cudnn_compiled_source == "build_info.py cudnn_version '9' (major only)"


def test_tf_215_and_24(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    tf_tree(a, TF_215, version="2.15.0")
    tf_tree(b, TF_24, dist="tensorflow-gpu", version="2.4.1")
    t215, _ = probe_one(a, "TensorFlow")
    t24, _ = probe_one(b, "TensorFlow")
    assert (t215.cudnn_compiled, t215.cuda_compiled, t215.checker) == ("8.9", "12.2", "tensorflow")
    assert (t24.cudnn_compiled, t24.cuda_compiled, t24.checker) == ("8.0", "11.0", "tensorflow")
    assert t24.cudnn_soname == "libcudnn.so.8"
    assert "CUDA 11.0 for TF 2.4.1" in t24.cudnn_compiled_source


def test_tf_23_plain_dict_windows_values(tmp_path):
    tf_tree(tmp_path, TF_23_WIN, dist="tensorflow-gpu", version="2.3.1", framework_lib=False)
    b, _ = probe_one(tmp_path, "TensorFlow")
    assert (b.cuda_compiled, b.cudnn_compiled, b.checker) == ("10.1", "7.6", "tensorflow")
    assert b.cudnn_compiled_source.startswith("build_info.py cudnn_version '64_7' + TensorFlow tested build table")
    assert b.consumer_library is None


def test_tf_115_module_constants_legacy_checker(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    tf_tree(a, TF_115, dist="tensorflow-gpu", version="1.15.0")
    tf_tree(b, TF_115_LINUX, version="1.15.5")
    win, linux = probe_one(a, "TensorFlow")[0], probe_one(b, "TensorFlow")[0]
    assert (win.cudnn_compiled, win.cuda_compiled, win.checker) == ("7.4", "10.0", "tensorflow-legacy")
    assert win.cudnn_compiled_source == (
        "build_info.py cudnn_version '7' + TensorFlow tested build table (cuDNN 7.4, CUDA 10.0 for TF 1.15.0)"
    )
    assert (linux.cudnn_compiled, linux.cuda_compiled, linux.checker) == ("7.4", "10.0", "tensorflow-legacy")
    assert linux.cudnn_compiled_source.startswith("TensorFlow tested build table (cuDNN 7.4, CUDA 10.0 for TF 1.15.5)")


def test_tensorflow_cpu_listed_without_cudnn(tmp_path):
    tf_tree(tmp_path, TF_CPU_221, dist="tensorflow-cpu", requires=TF_221_REQUIRES, framework_lib=True)
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert (b.distribution, b.version) == ("tensorflow-cpu", "2.21.0")
    assert (b.cudnn_compiled, b.cudnn_soname, b.consumer_library, b.cuda_compiled) == (None, None, None, None)
    assert "CPU-only" in b.cudnn_compiled_source
    assert b.pins == ('nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"',)  # tensorflow-cpu carries it too
    assert notes == []


def test_tf_malformed_build_info_is_a_note(tmp_path):
    tf_tree(tmp_path, TF_MALFORMED)
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert b.cudnn_compiled is None and b.version == "2.21.0"
    assert len(notes) == 1 and "could not read" in notes[0] and "SyntaxError" in notes[0]


@pytest.mark.parametrize("text, why", [
    ("build_info = make_info()\n", "not a literal"),
    ("import collections\nx = 1\n", "no build_info dict"),
    ("build_info = collections.OrderedDict([('cudnn_version', some_name)])\n", "not a literal"),
    (b"\xff\xfe\x00garbage\x00", ""),
])
def test_tf_unusable_build_info_shapes(tmp_path, text, why):
    tf_tree(tmp_path, "")
    write(tmp_path / "tensorflow" / "python" / "platform" / "build_info.py", text)
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert b.cudnn_compiled is None
    assert len(notes) == 1 and why in notes[0]


def test_tf_missing_build_info_and_no_dist_info(tmp_path):
    write(tmp_path / "tensorflow" / "__init__.py", BOOBY_TRAP.format(name="tensorflow"))
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert (b.version, b.cudnn_compiled) == ("unknown", None)
    assert any("no *.dist-info" in n for n in notes) and any("is missing" in n for n in notes)


def test_leftover_directories_are_ignored(tmp_path):
    write(tmp_path / "torch" / "lib" / "libtorch_cuda.so", b"\x7fELF")  # what pip uninstall can leave
    write(tmp_path / "tensorflow" / "python" / "platform" / "__pycache__" / "x.pyc", b"")
    builds, notes = probe_frameworks(paths=[str(tmp_path)])
    assert builds == []
    assert sorted(n.split(":")[0] for n in notes) == ["PyTorch", "TensorFlow"]
    assert all("left over from an uninstall" in n for n in notes)


def test_tf_two_distributions_over_one_package(tmp_path):
    tf_tree(tmp_path, TF_221, requires=TF_221_REQUIRES)
    dist_info(tmp_path, "tensorflow-cpu", "2.21.0", TF_221_REQUIRES)
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert b.distribution == "tensorflow" and b.cudnn_compiled == "9.3"
    assert any("several distributions install tensorflow/" in n and "tensorflow-cpu 2.21.0" in n for n in notes)


def test_read_tf_build_info_shapes(tmp_path):
    p = write(tmp_path / "b.py", TF_221)
    assert read_tf_build_info(str(p))["cudnn_version"] == "9"
    p = write(tmp_path / "c.py", TF_115)
    assert read_tf_build_info(str(p)) == {"is_cuda_build": True, "is_rocm_build": False,
                                          "cuda_version": "10.0", "cudnn_version": "7"}
    p = write(tmp_path / "d.py", "build_info = dict(cuda_version='11.2', cudnn_version='8')\n")
    assert read_tf_build_info(str(p)) == {"cuda_version": "11.2", "cudnn_version": "8"}
    with pytest.raises(SyntaxError):
        read_tf_build_info(str(write(tmp_path / "e.py", TF_MALFORMED)))


# ---------------------------------------------------------------------------------------------
# PyTorch
# ---------------------------------------------------------------------------------------------


def test_torch_291_wheel_pin(tmp_path):
    pkg = torch_tree(tmp_path, "2.9.1", "12.8", TORCH_291_REQUIRES, libs=["libtorch_cuda.so", "libtorch.so"])
    b, notes = probe_one(tmp_path, "PyTorch")
    assert (b.distribution, b.version, b.imported, b.checker) == ("torch", "2.9.1", False, "pytorch")
    assert b.cudnn_compiled == "9.10.2"
    assert b.cudnn_compiled_source == "wheel pin nvidia-cudnn-cu12==9.10.2.21 (torch METADATA)"
    assert (b.cuda_compiled, b.cudnn_soname, b.cudnn_runtime) == ("12.8", "libcudnn.so.9", None)
    assert b.consumer_library == str(pkg / "lib" / "libtorch_cuda.so")
    assert b.pins == ('nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',)
    assert notes == []


def test_torch_2141_cu13_pin(tmp_path):
    torch_tree(tmp_path, "2.14.1", "13.0", TORCH_2141_REQUIRES, libs=["libtorch_cuda.so"])
    b, _ = probe_one(tmp_path, "PyTorch")
    assert (b.cudnn_compiled, b.cuda_compiled, b.cudnn_soname) == ("9.24.0", "13.0", "libcudnn.so.9")
    assert b.pins == ('nvidia-cudnn-cu13==9.24.0.43; platform_system == "Linux"',)


def test_torch_cpu_build(tmp_path):
    torch_tree(tmp_path, "2.13.0+cpu", None)
    b, notes = probe_one(tmp_path, "PyTorch")
    assert (b.version, b.cudnn_compiled, b.cuda_compiled, b.cudnn_soname, b.consumer_library) == (
        "2.13.0+cpu", None, None, None, None)
    assert b.cudnn_compiled_source == "CPU-only build (torch/version.py cuda is None)"
    assert notes == []


def test_torch_old_wheel_with_bundled_cudnn(tmp_path):
    libs = ["libcudnn.so.8", "libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8", "libtorch_cuda.so"]
    torch_tree(tmp_path, "1.12.1+cu113", "11.3", libs=libs)
    b, _ = probe_one(tmp_path, "PyTorch")
    assert (b.cudnn_compiled, b.cudnn_soname) == ("8", "libcudnn.so.8")
    assert b.cudnn_compiled_source == "cuDNN bundled in torch/lib (libcudnn.so.8)"


def test_torch_bundled_versioned_file_name(tmp_path):
    torch_tree(tmp_path, "1.7.1", "11.0", libs=["libcudnn-3f9a723f.so.8.0.5", "libtorch_cuda.so"])
    b, _ = probe_one(tmp_path, "PyTorch")
    assert b.cudnn_compiled == "8.0.5"


def test_torch_cuda_build_without_pin_is_a_note(tmp_path):
    torch_tree(tmp_path, "2.5.1", "12.4", libs=["libtorch_cuda.so"])
    b, notes = probe_one(tmp_path, "PyTorch")
    assert b.cudnn_compiled is None and b.consumer_library is not None
    assert any("without a cuDNN wheel pin" in n for n in notes)


# ---------------------------------------------------------------------------------------------
# CuPy and ONNX Runtime
# ---------------------------------------------------------------------------------------------


def cupy_tree(site: Path, version: str, dist: str = "cupy-cuda12x", wheel_json: str | None = None,
              cudnn_module: bool = True) -> Path:
    pkg = site / "cupy"
    write(pkg / "__init__.py", BOOBY_TRAP.format(name="cupy"))
    write(pkg / "_version.py", f"__version__ = '{version}'\n")
    if wheel_json is not None:
        write(pkg / ".data" / "_wheel.json", wheel_json)
    write(site / "cupy_backends" / "__init__.py", BOOBY_TRAP.format(name="cupy_backends"))
    if cudnn_module:
        write(site / "cupy_backends" / "cuda" / "libs" / ("cudnn" + sysconfig.get_config_var("EXT_SUFFIX")), b"\x7fELF")
    dist_info(site, dist, version, ["numpy<2.6,>=1.22", "fastrlock>=0.5"])
    return pkg


def test_cupy_13_build_version_from_wheel_json(tmp_path):
    cupy_tree(tmp_path, "13.6.0", wheel_json=CUPY_13_WHEEL_JSON)
    b, notes = probe_one(tmp_path, "CuPy")
    assert (b.distribution, b.version, b.checker, b.imported) == ("cupy-cuda12x", "13.6.0", "cupy", False)
    assert (b.cudnn_compiled, b.cuda_compiled, b.cudnn_soname) == ("8.8.1", "12.x", "libcudnn.so.8")
    assert b.cudnn_compiled_source.startswith("cupy/.data/_wheel.json cudnn version '8.8.1'")
    assert b.consumer_library.endswith("cupy_backends/cuda/libs/cudnn" + sysconfig.get_config_var("EXT_SUFFIX"))
    assert notes == []


def test_cupy_13_without_wheel_json_is_a_note(tmp_path):
    cupy_tree(tmp_path, "13.6.0")
    b, notes = probe_one(tmp_path, "CuPy")
    assert (b.cudnn_compiled, b.cudnn_soname, b.cuda_compiled) == (None, "libcudnn.so.8", "12.x")
    assert any("would load libcudnn" in n for n in notes)


def test_cupy_14_has_no_cudnn(tmp_path):
    cupy_tree(tmp_path, "14.2.0", wheel_json='{"cuda": "12.x", "packaging": "pip"}', cudnn_module=False)
    b, notes = probe_one(tmp_path, "CuPy")
    assert (b.version, b.cudnn_compiled, b.cudnn_soname, b.consumer_library) == ("14.2.0", None, None, None)
    assert "removed in CuPy 14" in b.cudnn_compiled_source
    assert notes == []


def ort_tree(site: Path, dist: str, version: str, info: str | None, provider: bool, requires: list[str] = ()) -> Path:
    pkg = site / "onnxruntime"
    write(pkg / "__init__.py", BOOBY_TRAP.format(name="onnxruntime"))
    if info is not None:
        write(pkg / "capi" / "build_and_package_info.py", info)
    if provider:
        write(pkg / "capi" / "libonnxruntime_providers_cuda.so", b"\x7fELF")
    if dist:
        dist_info(site, dist, version, requires)
    return pkg


def test_ort_gpu_1311_cuda13(tmp_path):
    info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n"
    pkg = ort_tree(tmp_path, "onnxruntime-gpu", "1.31.1", info, True, ORT_GPU_1311_REQUIRES)
    b, notes = probe_one(tmp_path, "ONNX Runtime")
    assert (b.distribution, b.version, b.checker) == ("onnxruntime-gpu", "1.31.1", "onnxruntime")
    assert (b.cudnn_compiled, b.cuda_compiled, b.cudnn_soname) == ("9", "13.0", "libcudnn.so.9")
    assert "1.19 and later are built with cuDNN 9" in b.cudnn_compiled_source
    assert "CUDA-ExecutionProvider" in b.cudnn_compiled_source
    assert b.consumer_library == str(pkg / "capi" / "libonnxruntime_providers_cuda.so")
    assert b.pins == ('nvidia-cudnn-cu13~=9.0; extra == "cudnn"',)
    assert notes == []


@pytest.mark.parametrize("version, cuda, want", [
    ("1.17.1", None, "8"),
    ("1.18.0", "12.2", "8"),
    ("1.18.1", "12.4", "9"),
    ("1.18.1", "11.8", "8"),
    ("1.4.0", None, "7"),
    ("1.20.1", "12.2", "9"),
])
def test_ort_cudnn_major_by_release(tmp_path, version, cuda, want):
    info = f"package_name = 'onnxruntime-gpu'\n__version__ = '{version}'\n" + (f"cuda_version = '{cuda}'\n" if cuda else "")
    ort_tree(tmp_path, "onnxruntime-gpu", version, info, True)
    b, _ = probe_one(tmp_path, "ONNX Runtime")
    assert b.cudnn_compiled == want and b.cudnn_soname == f"libcudnn.so.{want}"


def test_ort_1181_without_cuda_version_is_unknown(tmp_path):
    ort_tree(tmp_path, "onnxruntime-gpu", "1.18.1", None, True)
    b, notes = probe_one(tmp_path, "ONNX Runtime")
    assert b.cudnn_compiled is None
    assert any("1.18.1 shipped CUDA 11.8 + cuDNN 8 and CUDA 12 + cuDNN 9" in n for n in notes)


def test_ort_cudnn_version_key_wins(tmp_path):
    info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.32.0'\ncuda_version = '12.8'\ncudnn_version = '9.8'\n"
    ort_tree(tmp_path, "onnxruntime-gpu", "1.32.0", info, True)
    b, _ = probe_one(tmp_path, "ONNX Runtime")
    assert (b.cudnn_compiled, b.cudnn_compiled_source) == ("9.8", "capi/build_and_package_info.py cudnn_version '9.8'")


def test_ort_cpu_package_and_both_installed(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    ort_tree(a, "onnxruntime", "1.30.0", "package_name = 'onnxruntime'\n__version__ = '1.30.0'\n", False)
    cpu, notes = probe_one(a, "ONNX Runtime")
    assert (cpu.distribution, cpu.cudnn_compiled, cpu.consumer_library) == ("onnxruntime", None, None)
    assert "no CUDA execution provider" in cpu.cudnn_compiled_source and notes == []
    info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.22.0'\ncuda_version = '12.8'\n"
    ort_tree(b, "onnxruntime-gpu", "1.22.0", info, True)
    dist_info(b, "onnxruntime", "1.22.0")
    gpu, notes = probe_one(b, "ONNX Runtime")
    assert (gpu.distribution, gpu.cudnn_compiled) == ("onnxruntime-gpu", "9")
    assert any("several distributions install onnxruntime/" in n and "from onnxruntime-gpu" in n for n in notes)


# ---------------------------------------------------------------------------------------------
# JAX (plugin _versions read from a compiled extension module)
# ---------------------------------------------------------------------------------------------

VERSIONS_STANDIN_C = r"""
/* Stand-in for jax_cuda12_plugin/_versions: the build-version getters as plain constants,
   like jaxlib/cuda/versions.cc returns CUDNN_VERSION / CUDART_VERSION. Built by the tests. */
#include <Python.h>
static PyObject *cudnn_build(PyObject *s, PyObject *a) { return PyLong_FromLong(STANDIN_CUDNN); }
static PyObject *cudart_build(PyObject *s, PyObject *a) { return PyLong_FromLong(STANDIN_CUDART); }
static PyObject *cudnn_get(PyObject *s, PyObject *a) { PyErr_SetString(PyExc_RuntimeError, "cuDNN not found."); return NULL; }
static PyMethodDef M[] = {
  {"cudnn_build_version", cudnn_build, METH_NOARGS, NULL},
  {"cuda_runtime_build_version", cudart_build, METH_NOARGS, NULL},
  {"cudnn_get_version", cudnn_get, METH_NOARGS, NULL},
  {NULL, NULL, 0, NULL}};
static struct PyModuleDef D = {PyModuleDef_HEAD_INIT, "_versions", NULL, -1, M};
PyMODINIT_FUNC PyInit__versions(void) { return PyModule_Create(&D); }
"""


def jax_plugin_tree(site: Path, cudnn: int = 90800, cudart: int = 12090, cu: str = "12") -> Path:
    from helpers.support import build_c_library

    inc = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(inc, "Python.h")):
        pytest.skip("Python headers are needed to build the _versions stand-in")
    plugin = site / f"jax_cuda{cu}_plugin"
    write(plugin / "__init__.py", BOOBY_TRAP.format(name=f"jax_cuda{cu}_plugin"))
    build_c_library(VERSIONS_STANDIN_C, plugin / "_versions.so",
                    extra=[f"-I{inc}", f"-DSTANDIN_CUDNN={cudnn}", f"-DSTANDIN_CUDART={cudart}"])
    write(site / "jax_plugins" / f"xla_cuda{cu}" / "__init__.py", BOOBY_TRAP.format(name="jax_plugins"))
    write(site / "jax_plugins" / f"xla_cuda{cu}" / "xla_cuda_plugin.so", b"\x7fELF")
    dist_info(site, f"jax-cuda{cu}-plugin", "0.10.2", [
        f"jax-cuda{cu}-pjrt==0.10.2",
        f'nvidia-cudnn-cu{cu}<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"',
    ], extras=["with-cuda"])
    write(site / "jax" / "__init__.py", BOOBY_TRAP.format(name="jax"))
    dist_info(site, "jax", "0.10.2")
    return plugin


@pytest.mark.native
def test_jax_plugin_build_versions_by_file_location(tmp_path):
    jax_plugin_tree(tmp_path)
    b, notes = probe_one(tmp_path, "JAX")
    assert (b.distribution, b.version, b.checker, b.imported) == ("jax-cuda12-plugin", "0.10.2", "jax", False)
    assert (b.cudnn_compiled, b.cuda_compiled, b.cudnn_soname) == ("9.8.0", "12.9", "libcudnn.so.9")
    assert b.cudnn_compiled_source == "jax_cuda12_plugin._versions.cudnn_build_version() = 90800"
    assert b.consumer_library == str(tmp_path / "jax_plugins" / "xla_cuda12" / "xla_cuda_plugin.so")
    assert b.pins == ('nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"',)
    assert "jax_cuda12_plugin" not in sys.modules and "jax_cuda12_plugin._versions" not in sys.modules
    assert notes == []


@pytest.mark.native
def test_jax_runtime_only_on_request(tmp_path):
    jax_plugin_tree(tmp_path, cudnn=90100, cudart=12030)
    builds, notes = probe_frameworks(True, paths=[str(tmp_path)])
    b = by_name(builds)["JAX"]
    assert b.cudnn_compiled == "9.1.0" and b.cudnn_runtime is None and b.cuda_compiled == "12.3"
    assert any("cudnn_get_version() failed: RuntimeError: cuDNN not found." in n for n in notes)
    assert any(n.startswith("JAX: import jax failed") for n in notes)  # the booby trap, caught


def test_jax_plugin_unloadable_falls_back_to_pin(tmp_path):
    plugin = tmp_path / "jax_cuda12_plugin"
    write(plugin / "_versions.so", b"not an ELF file")
    dist_info(tmp_path, "jax-cuda12-plugin", "0.10.2",
              ['nvidia-cudnn-cu12<10.0,>=9.8; sys_platform == "linux" and extra == "with-cuda"'])
    b, notes = probe_one(tmp_path, "JAX")
    assert b.cudnn_compiled == "9.8"
    assert b.cudnn_compiled_source.startswith("plugin pin nvidia-cudnn-cu12<10.0,>=9.8 (lower bound")
    assert any("loading" in n and "_versions.so failed" in n for n in notes)


def test_old_jaxlib_local_version_tag(tmp_path):
    write(tmp_path / "jaxlib" / "__init__.py", BOOBY_TRAP.format(name="jaxlib"))
    write(tmp_path / "jaxlib" / "cuda" / "__init__.py", "")
    dist_info(tmp_path, "jaxlib", "0.4.28+cuda12.cudnn89")
    b, _ = probe_one(tmp_path, "JAX")
    assert (b.distribution, b.cudnn_compiled, b.cuda_compiled) == ("jaxlib", "8.9", "12")
    assert b.cudnn_compiled_source == "jaxlib local version tag '0.4.28+cuda12.cudnn89'"


def test_cpu_jaxlib_is_not_listed(tmp_path):
    write(tmp_path / "jaxlib" / "__init__.py", BOOBY_TRAP.format(name="jaxlib"))
    dist_info(tmp_path, "jaxlib", "0.10.2")
    builds, notes = probe_frameworks(paths=[str(tmp_path)])
    assert builds == [] and notes == []


# ---------------------------------------------------------------------------------------------
# whole probe: sys.path mode in a fresh interpreter, never raises, metadata reader
# ---------------------------------------------------------------------------------------------


def full_site(site: Path) -> None:
    tf_tree(site, TF_221, requires=TF_221_REQUIRES)
    torch_tree(site, "2.9.1", "12.8", TORCH_291_REQUIRES, libs=["libtorch_cuda.so"])
    cupy_tree(site, "13.6.0", wheel_json=CUPY_13_WHEEL_JSON)
    info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.31.1'\ncuda_version = '13.0'\n"
    ort_tree(site, "onnxruntime-gpu", "1.31.1", info, True, ORT_GPU_1311_REQUIRES)


def test_sys_path_mode_in_subprocess_imports_nothing(tmp_path):
    site = tmp_path / "site"
    full_site(site)
    code = textwrap.dedent("""
        import json, sys, time
        t = time.perf_counter()
        from cudnn_magic.probes.frameworks import probe_frameworks
        builds, notes = probe_frameworks()
        frameworks = [m for m in sys.modules if m.split('.')[0] in
                      ('tensorflow', 'torch', 'cupy', 'cupy_backends', 'onnxruntime', 'jax', 'importlib_metadata')]
        print(json.dumps({"builds": [[b.name, b.distribution, b.version, b.cudnn_compiled, b.checker] for b in builds],
                          "notes": notes, "imported": frameworks,
                          "metadata_imported": 'importlib.metadata' in sys.modules}))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["imported"] == [] and got["notes"] == []
    assert not got["metadata_imported"]
    rows = {r[0]: r for r in got["builds"]}
    assert rows["TensorFlow"] == ["TensorFlow", "tensorflow", "2.21.0", "9.3", "tensorflow"]
    assert rows["PyTorch"] == ["PyTorch", "torch", "2.9.1", "9.10.2", "pytorch"]
    assert rows["CuPy"] == ["CuPy", "cupy-cuda12x", "13.6.0", "8.8.1", "cupy"]
    assert rows["ONNX Runtime"] == ["ONNX Runtime", "onnxruntime-gpu", "1.31.1", "9", "onnxruntime"]


def test_import_frameworks_failure_is_a_note(tmp_path):
    full_site(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        builds, notes = probe_frameworks(True, paths=[str(tmp_path)])
    finally:
        sys.path.remove(str(tmp_path))
        for m in [m for m in sys.modules if m.split(".")[0] in ("tensorflow", "torch", "cupy", "onnxruntime")]:
            del sys.modules[m]
    assert {b.name for b in builds} == {"TensorFlow", "PyTorch", "CuPy", "ONNX Runtime"}
    assert all(not b.imported for b in builds)
    for label, mod in (("TensorFlow", "tensorflow"), ("PyTorch", "torch"), ("ONNX Runtime", "onnxruntime")):
        assert any(n.startswith(f"{label}: import {mod} failed: RuntimeError: the frameworks probe imported") for n in notes)
    assert any(n.startswith("CuPy: import cupy_backends.cuda.libs.cudnn failed") for n in notes)
    assert by_name(builds)["TensorFlow"].cudnn_compiled == "9.3"  # file facts survive a failed import


def test_never_raises(tmp_path, monkeypatch):
    full_site(tmp_path)

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(fw.tensorflow, "read_tf_build_info", boom)
    monkeypatch.setattr(fw.pytorch, "_bundled_cudnn", boom)
    builds, notes = probe_frameworks(paths=[str(tmp_path)])
    assert {b.name for b in builds} == {"CuPy", "ONNX Runtime"}
    assert "TensorFlow: probe failed: RuntimeError: boom" in notes
    assert "PyTorch: probe failed: RuntimeError: boom" in notes
    assert probe_frameworks(paths=[str(tmp_path / "missing"), "", 3]) == ([], [])  # type: ignore[list-item]


_PROBE_AS_NOBODY = """
import json, os, sys
from cudnn_magic.probes.frameworks import probe_frameworks
site, meta = sys.argv[1], sys.argv[2]
builds, notes = probe_frameworks(paths=[site])
tf = [b.version for b in builds if b.name == "TensorFlow"]
print(json.dumps({"can_read": os.access(meta, os.R_OK), "tf": tf, "notes": notes}))
"""


def test_unreadable_dist_info_is_skipped():
    """The probe runs in a child dropped to ``nobody`` (the suite runs as root, and root reads
    mode-000 files), so the ``METADATA`` really cannot be read there."""
    import shutil

    from helpers.support import run_unprivileged, world_readable_dir

    home = world_readable_dir()
    try:
        site = home / "site"
        tf_tree(site, TF_221, requires=TF_221_REQUIRES)
        for p in [site, *site.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        meta = next(site.glob("tensorflow-*.dist-info")) / "METADATA"
        meta.chmod(0)
        r = run_unprivileged([sys.executable, "-c", _PROBE_AS_NOBODY, str(site), str(meta)], home)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert out["can_read"] is False  # the child really reads nothing: not root, no capability
    assert out["tf"] == ["unknown"] and any("no *.dist-info" in n for n in out["notes"]), out


def test_read_dist_metadata_header_only(tmp_path):
    d = dist_info(tmp_path, "torch", "2.9.1", TORCH_291_REQUIRES)
    m = read_dist_metadata(str(d))
    assert (m.name, m.version) == ("torch", "2.9.1")
    assert m.requires == TORCH_291_REQUIRES  # the body's "Requires-Dist:" line is not a header
    egg = tmp_path / "tensorflow_gpu-1.15.0-py3.7.egg-info"
    write(egg / "PKG-INFO", "Metadata-Version: 1.1\nName: tensorflow-gpu\nVersion: 1.15.0\n")
    write(egg / "requires.txt", "numpy>=1.16\n\n[and-cuda]\nnvidia-cudnn-cu12>=9.3\n")
    m = read_dist_metadata(str(egg))
    assert m.requires == ["numpy>=1.16", 'nvidia-cudnn-cu12>=9.3; extra == "and-cuda"']


def test_module_constants_annotated_assignments(tmp_path):
    p = write(tmp_path / "version.py", TORCH_VERSION_PY.format(version="2.14.1+cu130", cuda="13.0"))
    consts, _ = module_constants(str(p))
    assert consts["__version__"] == "2.14.1+cu130" and consts["cuda"] == "13.0" and consts["hip"] is None


# ---------------------------------------------------------------------------------------------
# real wheels on this machine (pip's find-links / local index), and real installs
# ---------------------------------------------------------------------------------------------

def test_real_tensorflow_cpu_wheel_files(tmp_path):
    whl = local_wheel("tensorflow_cpu-*.whl")
    unpack(whl, tmp_path, [r"tensorflow/python/platform/build_info\.py"])
    b, notes = probe_one(tmp_path, "TensorFlow")
    assert b.distribution == "tensorflow-cpu" and b.cudnn_compiled is None
    assert "CPU-only" in b.cudnn_compiled_source
    assert any(p.startswith("nvidia-cudnn-cu") for p in b.pins)
    assert notes == []


def test_real_torch_cuda_wheel_files(tmp_path):
    whl = local_wheel("torch-2.*-cp*-manylinux*.whl", exclude="+cpu")
    unpack(whl, tmp_path, [r"torch/version\.py", r"torch/__init__\.py"])
    b, notes = probe_one(tmp_path, "PyTorch")
    consts, _ = module_constants(str(tmp_path / "torch" / "version.py"))
    # how it loads cuDNN is read from the wheel's own torch/__init__.py (nothing on this sys.path to preload)
    assert "torch/__init__.py of the installed torch" in b.loading and b.preloads == ()
    assert consts["cuda"] and b.cuda_compiled == consts["cuda"]
    assert b.cudnn_compiled_source.startswith("wheel pin nvidia-cudnn-cu")
    pin = next(p for p in b.pins if "==" in p)
    assert pin.split(";")[0].split("==")[1].startswith(b.cudnn_compiled + ".")  # 9.24.0.43 -> 9.24.0
    assert b.cudnn_soname == f"libcudnn.so.{b.cudnn_compiled.split('.')[0]}" and notes == []


def test_real_torch_cpu_wheel_files(tmp_path):
    whl = local_wheel("torch-*+cpu-*.whl")
    unpack(whl, tmp_path, [r"torch/version\.py"])
    b, notes = probe_one(tmp_path, "PyTorch")
    assert b.version.endswith("+cpu") and b.cudnn_compiled is None and b.cuda_compiled is None
    assert notes == [] and b.cpu_build


def test_a_cpu_build_reads_as_one_in_every_view_and_is_a_finding_beside_a_gpu(tmp_path):
    """torch 2.13.0+cpu (the real wheel's files): "CPU build: no CUDA, no cuDNN" in the text and the
    HTML, cpu_build in the JSON, and framework-cpu-build only where a GPU is present."""
    from cudnn_magic.engines.check import judge_report
    from cudnn_magic.model import Gpu
    from cudnn_magic.render.report import report_html, report_json, report_text

    whl = local_wheel("torch-*+cpu-*.whl")
    unpack(whl, tmp_path, [r"torch/version\.py", r"torch/__init__\.py"])
    b, _ = probe_one(tmp_path, "PyTorch")
    for gpus in ((), (Gpu(0, "NVIDIA H200", compute_capability=(9, 0)),)):
        rep = judge_report(loaded=(), installed=(), frameworks=(b,), driver=None, gpus=gpus)
        text, html_ = report_text(rep), report_html(rep)
        assert "CPU build: no CUDA, no cuDNN" in text and "CPU build: no CUDA, no cuDNN" in html_
        assert "?" not in next(ln for ln in text.splitlines() if ln.startswith("PyTorch "))
        row = report_json(rep)["frameworks"][0]
        assert row["cpu_build"] is True and row["verdict"] == "not-applicable"
        found = [f for f in rep.findings if f.id == "framework-cpu-build"]
        if gpus:
            assert len(found) == 1 and found[0].severity == "warning" and "will not use the GPU" in found[0].title
            assert found[0].fixes[0].id == "install-cudnn-build" and "+cpu" in found[0].fixes[0].action
        else:
            assert found == []


def test_jax_without_its_cuda_plugin_is_a_cpu_build(tmp_path):
    site = tmp_path / "site"
    for name, version in (("jax", "0.10.2"), ("jaxlib", "0.10.2")):
        write(site / name / "__init__.py")
        builders.dist_info(site, name, version)
    b, _ = probe_one(site, "JAX")
    assert b.cpu_build and b.version == "0.10.2" and "without a CUDA plugin" in b.cudnn_compiled_source


def test_real_onnxruntime_wheel_files(tmp_path):
    whl = local_wheel("onnxruntime-*.whl")
    unpack(whl, tmp_path, [r"onnxruntime/capi/build_and_package_info\.py"])
    b, notes = probe_one(tmp_path, "ONNX Runtime")
    assert b.distribution == "onnxruntime" and b.cudnn_compiled is None and notes == []


def test_installed_frameworks_in_this_environment():
    """Whatever is installed in this venv: the probe answers without importing it."""
    builds, notes = probe_frameworks()
    for b in builds:
        assert b.name in ("TensorFlow", "PyTorch", "JAX", "CuPy", "ONNX Runtime")
        assert b.checker in ("tensorflow", "tensorflow-legacy", "pytorch", "jax", "cupy", "onnxruntime")
    assert all(isinstance(n, str) for n in notes)
    import importlib.util

    if importlib.util.find_spec("tensorflow") is not None:
        tf = by_name(builds)["TensorFlow"]
        assert tf.cudnn_compiled_source


EXTRA_SITES = [d for d in os.environ.get("CUDNN_MAGIC_EXTRA_SITE", "").split(os.pathsep) if d]


def run_probe_in_child(code: str, extra: list[str]) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join([*extra, str(REPO)])
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", textwrap.dedent(code)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def findable(name: str) -> bool:
    import importlib.machinery

    return importlib.machinery.PathFinder.find_spec(name, sys.path + EXTRA_SITES) is not None


def test_real_torch_install_before_and_after_import():
    """A real torch (installed in the venv, or in a dir on CUDNN_MAGIC_EXTRA_SITE, e.g.
    ``pip install --no-deps --target DIR torch-2.13.0+cpu...whl``)."""
    if not findable("torch"):
        pytest.skip("no torch installed (set CUDNN_MAGIC_EXTRA_SITE to a --target install)")
    got = run_probe_in_child("""
        import json, sys
        from cudnn_magic.probes.frameworks import probe_frameworks
        before = [b for b in probe_frameworks()[0] if b.name == 'PyTorch'][0]
        was_imported = 'torch' in sys.modules
        import torch
        after = [b for b in probe_frameworks()[0] if b.name == 'PyTorch'][0]
        rt = torch.backends.cudnn.version()
        print(json.dumps({"before": before.__dict__, "after": after.__dict__, "was_imported": was_imported,
                          "version": torch.__version__, "cuda": torch.version.cuda,
                          "runtime": rt}))
    """, EXTRA_SITES)
    before, after = got["before"], got["after"]
    assert not got["was_imported"] and not before["imported"] and after["imported"]
    assert before["version"].split("+")[0] == got["version"].split("+")[0]
    assert before["cuda_compiled"] == got["cuda"] == after["cuda_compiled"]
    if got["cuda"] is None:
        assert before["cudnn_compiled"] is None and after["cudnn_runtime"] is None
    else:
        assert after["cudnn_compiled"] and after["cudnn_runtime"]
        assert after["cudnn_compiled_source"] == "torch._C._cudnn.getCompileVersion() (torch is imported)"


def test_real_jax_plugin_install():
    """A real jax-cuda12/13 plugin (``pip install --no-deps --target DIR jax-cuda12-plugin``)."""
    if not (findable("jax_cuda12_plugin") or findable("jax_cuda13_plugin")):
        pytest.skip("no jax CUDA plugin installed (set CUDNN_MAGIC_EXTRA_SITE to a --target install)")
    got = run_probe_in_child("""
        import json, sys
        from cudnn_magic.probes.frameworks import probe_frameworks
        builds, notes = probe_frameworks()
        maps = [l.split()[-1] for l in open('/proc/self/maps') if 'libcudnn' in l]
        print(json.dumps({"jax": [b.__dict__ for b in builds if b.name == 'JAX'], "notes": notes, "maps": maps,
                          "mods": [m for m in sys.modules if m.split('.')[0] in ('jax', 'jaxlib', 'jax_cuda12_plugin', 'jax_cuda13_plugin')]}))
    """, EXTRA_SITES)
    assert got["jax"] and got["mods"] == [] and got["maps"] == []  # nothing imported, no cuDNN loaded
    from cudnn_magic.rules.cudnn_version import CudnnVersion

    for b in got["jax"]:
        raw = int(b["cudnn_compiled_source"].rsplit("= ", 1)[1])  # "..._versions.cudnn_build_version() = 90800"
        assert str(CudnnVersion.from_int(raw)) == b["cudnn_compiled"]
        assert b["cuda_compiled"] and b["cudnn_soname"] == f"libcudnn.so.{b['cudnn_compiled'].split('.')[0]}"


def test_ort_cuda_build_without_its_provider_library_is_still_a_row(tmp_path):
    # build_and_package_info.py names CUDA, but capi/libonnxruntime_providers_cuda.so is gone: the
    # row keeps what the build info says, with a note, and the probe does not fail on the missing file
    info = "package_name = 'onnxruntime-gpu'\n__version__ = '1.20.1'\ncuda_version = '12.2'\ncudnn_version = '9.1'\n"
    ort_tree(tmp_path, "onnxruntime-gpu", "1.20.1", info, False)
    b, notes = probe_one(tmp_path, "ONNX Runtime")
    assert (b.version, b.cudnn_compiled, b.cuda_compiled, b.consumer_library) == ("1.20.1", "9.1", "12.2", None)
    assert b.loading == ""
    assert any("without capi/libonnxruntime_providers_cuda.so" in n for n in notes), notes
    assert not any("probe failed" in n for n in notes), notes
