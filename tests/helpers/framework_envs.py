"""Real framework environments for the real-wheel lane (``tests/realwheels/test_real_loaders.py``), built once
under ``.cache/envs/`` and shared by every scenario, which varies ``PYTHONPATH``,
``LD_LIBRARY_PATH`` and ``--target`` folders instead of building more.

* :func:`torch_env`: a venv with ``torch==2.14.1`` (CUDA 13; it pulls ``nvidia-cudnn-cu13``
  9.24.0.43 and the CUDA 13 libraries: about 5.5 GB; this machine's pip takes them from a local
  copy, elsewhere they are downloaded once), ``packaging`` and ``nvidia-ml-py`` (cudnn-magic's own
  needs for the CLI) and a ``.pth`` file that puts this checkout on its ``sys.path``;
* :func:`target` (re-exported from :mod:`real_wheels`): one wheel ``--no-deps --target`` folder.

A folder is complete when its marker file is there (written last, after pip succeeded); an
``fcntl`` lock per environment keeps parallel test processes from building one twice. A test is
skipped, with pip's last line, only when the wheels cannot be had at all (no index reachable);
any other failure fails it with pip's output.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.real_wheels import CACHE, _pypi_reachable
from helpers.real_wheels import install_wheel as target

REPO = Path(__file__).resolve().parents[2]
ENVS = (REPO / ".cache").resolve() / "envs"  # resolved: a checkout may link .cache to a shared copy
TORCH_VERSION = "2.14.1"

__all__ = [
    "CACHE",
    "ENVS",
    "TF_VERSION",
    "TORCH_VERSION",
    "merged_site",
    "run_py",
    "target",
    "target_with_deps",
    "tf_site",
    "torch_env",
]
TF_VERSION = "2.21.0"


def _pip(py: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-input",
                           "--no-compile", *args], capture_output=True, text=True, timeout=timeout)


def _built_once(folder: Path, what: str, build) -> Path:  # type: ignore[no-untyped-def]
    """``folder``, built by ``build()`` once: complete when its ``.complete`` marker is there (written
    last); an ``fcntl`` lock beside it keeps parallel test processes from building it twice; a
    failed build is removed, and skips the test (pip's last line) only when no index can be reached."""
    marker = folder / ".complete"
    if marker.exists():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        proc = build()
        if proc is not None and proc.returncode != 0:
            out = (proc.stdout + proc.stderr)[-3000:]
            shutil.rmtree(folder, ignore_errors=True)
            if not _pypi_reachable():
                pytest.skip(f"{what} cannot be installed here (no index reachable): "
                            f"{out.strip().splitlines()[-1] if out.strip() else 'pip said nothing'}")
            pytest.fail(f"pip could not install {what}:\n{out}")
        marker.write_text(what + "\n")
    return folder


def torch_env() -> Path:
    """The python of the shared torch 2.14.1 venv (module docstring)."""
    root = ENVS / f"torch-{TORCH_VERSION}"
    py = root / "bin" / "python"

    def build():  # type: ignore[no-untyped-def]
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True, timeout=300)
        proc = _pip(py, f"torch=={TORCH_VERSION}", "packaging", "nvidia-ml-py")
        if proc.returncode == 0:
            Path(site_of(py), "cudnn_magic_checkout.pth").write_text(str(REPO) + "\n")
        return proc

    _built_once(root, f"torch=={TORCH_VERSION}", build)
    return py


def target_with_deps(dist: str, version: str) -> Path:
    """A ``pip install --target`` folder of ``dist==version`` WITH its dependencies (ONNX Runtime
    needs numpy, protobuf, flatbuffers, packaging to import), ``.cache/wheels/<dist>-<version>-with-deps``."""
    folder = CACHE / f"{dist}-{version}-with-deps"
    return _built_once(folder, f"{dist}=={version}",
                       lambda: _pip(Path(sys.executable), "--target", str(folder), f"{dist}=={version}"))


def site_of(py: Path) -> Path:
    """The venv's site-packages."""
    out = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    return Path(out)


def run_py(py: Path, code: str, env: dict[str, str] | None = None, timeout: float = 300) -> dict:
    """Run ``code`` with ``py`` in a child process whose environment is this one's minus
    ``PYTHONPATH``/``LD_LIBRARY_PATH``/``LD_PRELOAD``, plus ``env``; the child prints one JSON object
    on its last stdout line, which is returned (the child's failure fails the test)."""
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "LD_DEBUG")}
    p = subprocess.run([str(py), "-c", code], env={**base, **(env or {})}, capture_output=True, text=True,
                       timeout=timeout, cwd=str(REPO))
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode not in (0, 1) or not lines:
        pytest.fail(f"child failed (exit {p.returncode}):\nstdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        pytest.fail(f"child printed no JSON:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return {}


def merged_site(dest: Path, *folders: Path) -> Path:
    """``dest`` holding every file of ``folders`` (``--target`` folders or site-packages) in order,
    later ones over earlier ones, as hard links (no disk used): what ``pip install`` of each into
    one environment leaves, file for file (pip writes each file of the new wheel over what is there
    and keeps the other's ``RECORD``; docs/facts.md "Two cuDNNs at once")."""
    for src in folders:
        for dirpath, _dirnames, filenames in os.walk(src):
            rel = Path(dirpath).relative_to(src)
            if rel.parts and rel.parts[0] == "__pycache__":
                continue
            (dest / rel).mkdir(parents=True, exist_ok=True)
            for n in filenames:
                d = dest / rel / n
                if d.exists() or d.is_symlink():
                    d.unlink()
                try:
                    os.link(Path(dirpath) / n, d)
                except OSError:
                    shutil.copy2(Path(dirpath) / n, d)
    return dest


#: The files of the TensorFlow wheel its cuDNN story needs: the metadata (its [and-cuda] pins),
#: build_info.py (its CUDA build), the package marker and libtensorflow_framework.so.2, whose
#: tsl::internal::CachedDsoLoader::GetCudnnDsoHandle() is TensorFlow's own cuDNN loader.
TF_MEMBERS = ("tensorflow/__init__.py", "tensorflow/python/platform/build_info.py", "tensorflow/libtensorflow_framework.so.2")


def tf_site() -> Path:
    """A site folder with the real TensorFlow 2.21.0 wheel's files of :data:`TF_MEMBERS` (and its
    ``.dist-info``) and, as ``[and-cuda]`` installs it, the real ``nvidia-cudnn-cu12`` 9.28.0.42
    beside it (hard links of its ``--target`` folder), so the library's RUNPATH
    ``$ORIGIN/../nvidia/cudnn/lib`` finds it. ``.cache/envs/tf-2.21.0-site``."""
    import zipfile

    root = ENVS / f"tf-{TF_VERSION}-site"
    cudnn = target("nvidia-cudnn-cu12", "9.28.0.42")
    dl = (REPO / ".cache").resolve() / "downloads"

    def build():  # type: ignore[no-untyped-def]
        dl.mkdir(parents=True, exist_ok=True)
        whl = sorted(dl.glob(f"tensorflow-{TF_VERSION}-*.whl"))
        if not whl:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--disable-pip-version-check",
                                   "-d", str(dl), f"tensorflow=={TF_VERSION}"], capture_output=True, text=True, timeout=1800)
            whl = sorted(dl.glob(f"tensorflow-{TF_VERSION}-*.whl"))
            if proc.returncode != 0 or not whl:
                return proc if proc.returncode != 0 else subprocess.CompletedProcess([], 1, "", "no wheel downloaded")
        with zipfile.ZipFile(whl[-1]) as z:
            for n in z.namelist():
                if n in TF_MEMBERS or (".dist-info/" in n and n.split("/")[-1] in ("METADATA", "RECORD", "WHEEL")):
                    z.extract(n, root)
        merged_site(root, cudnn)
        return None

    return _built_once(root, f"tensorflow=={TF_VERSION}", build)
