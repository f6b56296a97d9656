"""NVIDIA TensorRT, where its plugins need cuDNN.

TensorRT 10 and later (pip ``tensorrt-cu12-libs``/``-cu13-libs``: ``tensorrt_libs/
libnvinfer.so.10``, ``libnvinfer_plugin.so.10``) have no load-time link on cuDNN (TensorRT OSS
CHANGELOG 10.0.0); the plugin library ``dlopen``s ``libcudnn.so.8`` itself when a cuDNN-based
plugin (InstanceNormalization_TRT, GroupNormalizationPlugin) is created
(``plugin/common/cudnnWrapper.cpp``: ``CUDNN_MAJOR 8`` in every release 10.0-11.1), and fails
with "Failed to load libcudnn.so.8." when the loader finds none. TensorRT 8 (``tensorrt-libs``
8.x, ``libnvinfer.so.8``) uses ``libcudnn.so.8`` as a tactic source and in plugins; its NEEDED
entries, when present, are found by the generic scan. Read without importing ``tensorrt``.
"""

from __future__ import annotations

import dataclasses
import os
import re

from ...model import FrameworkBuild
from ...util import pyenv
from .consumer_facts import ConsumerFacts, CudnnRequest, chain_within, dist_info, find_package, norm, scanned
from .generic import EnvironmentScan

_LIB_DISTS = ("tensorrt-cu13-libs", "tensorrt-cu12-libs", "tensorrt-cu11-libs", "tensorrt-libs")
_DISTS = ("tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu11", "tensorrt", "nvidia-tensorrt")
_PLUGIN = re.compile(r"^libnvinfer_plugin\.so\.(\d+)$")


def probe(scan: EnvironmentScan, paths: list[str] | None, top: list[str], notes: list[str]) -> list[ConsumerFacts]:
    libs_dir = find_package("tensorrt_libs", paths)
    py_pkg = find_package("tensorrt", paths)
    if libs_dir is None and py_pkg is None:
        return []
    plugin = None
    major = None
    for d in filter(None, (libs_dir, py_pkg)):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            m = _PLUGIN.match(n)
            if m:
                plugin, major = os.path.join(d, n), int(m.group(1))
                break
        if plugin:
            break
    site = os.path.dirname(os.path.abspath(libs_dir or py_pkg or "."))
    meta = dist_info(site, _LIB_DISTS + _DISTS)
    version = meta[1] if meta else "unknown"
    dist_name = meta[0] if meta else "tensorrt"
    cu = re.search(r"-cu(\d+)", dist_name)
    mod = pyenv.imported("tensorrt")
    row = FrameworkBuild(name="TensorRT", distribution=dist_name, version=version, imported=mod is not None,
                         cuda_compiled=cu.group(1) if cu else None, checker="tensorrt", pip_solvable=False,
                         consumer_library=plugin)
    if plugin is None:
        notes.append(f"TensorRT {version}: no libnvinfer_plugin.so.N beside the Python package; plugins not checked")
        return []
    needed = [(lib, s) for dname in (_LIB_DISTS + _DISTS) for d in [scanned(scan, dname)] if d
              for lib in d.consumers for s in lib.cudnn_needed]
    if needed:  # TensorRT 8: NEEDED entries
        dist = next(d for dname in (_LIB_DISTS + _DISTS) for d in [scanned(scan, dname)] if d)
        reqs = [CudnnRequest(s, lib.path, chain_within(dist, lib.path, top), f"DT_NEEDED of {os.path.basename(lib.path)}")
                for lib, s in needed]
        row = dataclasses.replace(row, cudnn_compiled="8", cudnn_compiled_source=f"the soname {reqs[0].how.split()[-1]} NEEDs")
        return [ConsumerFacts(row=row, alternatives=reqs[:1], distribution=dist.name)]
    if major is not None and major >= 10:
        why = (f"libnvinfer_plugin.so.{major} dlopens libcudnn.so.8 for InstanceNormalization_TRT and "
               "GroupNormalizationPlugin only (plugin/common/cudnnWrapper.cpp)")
        row = dataclasses.replace(row, cudnn_compiled="8", cudnn_compiled_source=why, cudnn_soname="libcudnn.so.8")
        req = CudnnRequest("libcudnn.so.8", plugin, tuple(top),
                           f"dlopen(\"libcudnn.so.8\") by {os.path.basename(plugin)} (cuDNN-based plugins only)")
        return [ConsumerFacts(row=row, alternatives=[req], distribution=norm(dist_name), optional=True)]
    why = f"TensorRT {version} (libnvinfer_plugin.so.{major}) uses libcudnn.so.8 as a tactic source and in plugins"
    row = dataclasses.replace(row, cudnn_compiled="8", cudnn_compiled_source=why, cudnn_soname="libcudnn.so.8")
    req = CudnnRequest("libcudnn.so.8", plugin, tuple(top), f"dlopen(\"libcudnn.so.8\") by {os.path.basename(plugin)}")
    return [ConsumerFacts(row=row, alternatives=[req], distribution=norm(dist_name), optional=True)]
