"""The CUDA toolkit as context (:mod:`cudnn_magic.probes.toolkit`): found through CUDA_HOME,
/usr/local/cuda, the nvcc on PATH (a link or a wrapper script is read, never run), versioned from
version.json, version.txt or the runtime header; checked against nvcc's own answer where this
machine has one."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest

from cudnn_magic.probes.toolkit import probe_toolkits


def _toolkit(root, *, json_version=None, txt_version=None, cudart=None, nvcc=True):
    (root / "bin").mkdir(parents=True)
    if json_version:
        (root / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": json_version}}))
    if txt_version:
        (root / "version.txt").write_text(f"CUDA Version {txt_version}\n")
    if cudart:
        (root / "include").mkdir()
        (root / "include" / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION  {cudart}\n")
    if nvcc:
        (root / "bin" / "nvcc").write_text("#!/bin/sh\necho not to be run\nexit 3\n")
        (root / "bin" / "nvcc").chmod(0o755)
    return root


@pytest.mark.parametrize("kind,want,source", [
    ("json", "12.4.131", "version.json"), ("txt", "11.0.221", "version.txt"),
    ("header", "13.0", "CUDART_VERSION 13000 in include/cuda_runtime_api.h"), ("none", None, None)])
def test_cuda_home_and_its_version(tmp_path, kind, want, source):
    root = _toolkit(tmp_path / "cuda", json_version="12.4.131" if kind == "json" else None,
                    txt_version="11.0.221" if kind == "txt" else None, cudart=13000 if kind == "header" else None)
    got = [t for t in probe_toolkits({"CUDA_HOME": str(root), "PATH": ""}) if t.root == str(root)]
    assert len(got) == 1 and (got[0].version, got[0].version_source) == (want, source)
    assert got[0].via[0] == "CUDA_HOME" and got[0].nvcc == str(root / "bin" / "nvcc")


def test_an_nvcc_wrapper_on_path_is_read_not_run(tmp_path):
    root = _toolkit(tmp_path / "cuda-12.8", json_version="12.8.93")
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    (wrappers / "nvcc").write_text(f"#!/bin/sh\nexec {root}/bin/nvcc \"$@\"\n")
    (wrappers / "nvcc").chmod(0o755)
    got = [t for t in probe_toolkits({"PATH": str(wrappers)}) if t.root == str(root)]
    assert len(got) == 1 and got[0].version == "12.8.93" and got[0].nvcc == str(wrappers / "nvcc")
    assert got[0].via == (f"nvcc on PATH ({wrappers / 'nvcc'})",)
    link = tmp_path / "links"
    link.mkdir()
    (link / "nvcc").symlink_to(root / "bin" / "nvcc")
    assert any(t.root == str(root) for t in probe_toolkits({"PATH": str(link)}))


def test_nothing_breaks_it(tmp_path):
    (tmp_path / "bin").mkdir()
    (tmp_path / "version.json").write_bytes(b"\xff{not json")
    missing = str(tmp_path / "no-such-toolkit")  # a folder that surely does not exist on this machine
    assert all(t.root != missing for t in probe_toolkits({"CUDA_HOME": missing, "PATH": str(tmp_path)}))
    assert [t.version for t in probe_toolkits({"CUDA_HOME": str(tmp_path), "PATH": ""}) if t.root == str(tmp_path)] == [None]


@pytest.mark.skipif(not shutil.which("nvcc"), reason="no nvcc on this machine's PATH")
def test_the_machines_toolkit_is_what_nvcc_says():
    out = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, timeout=60).stdout
    release = re.search(r"release (\d+\.\d+)", out).group(1)
    got = [t for t in probe_toolkits(dict(os.environ)) if any(v.startswith("nvcc on PATH") for v in t.via)]
    assert len(got) == 1 and got[0].version and got[0].version.startswith(release), (got, out)
