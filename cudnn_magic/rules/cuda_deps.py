"""Would ``pip install`` of a CUDA library wheel make the name cuDNN asks for resolve? Pure rules
from the real files (read with ``readelf -d`` and ``strings`` from the wheels, and under
``LD_DEBUG=libs``):

* cuDNN's sub-libraries open NVRTC themselves (``dlopen``): cuDNN 8's ``libcudnn_ops_infer.so.8``
  and cuDNN 9's ``libcudnn_graph.so.9`` carry both ``libnvrtc.so.%d`` and the unversioned
  ``libnvrtc.so``; ``libcudnn_engines_precompiled.so.9`` names ``libnvrtc.so.12``. cuBLAS is
  ``libcublas.so.<major>``/``libcublasLt.so.<major>``, zlib ``libz.so.1`` (a ``DT_NEEDED`` of every
  cuDNN 9 sub-library and of cuDNN 8's ``libcudnn_cnn_infer.so.8``). No cuDNN 8.9.7 or 9.x file
  names ``libnvJitLink`` (it is a dependency of other CUDA libraries).
* glibc searches, for a ``dlopen`` by name, the already loaded objects (by their SONAME: a
  framework's preload), ``LD_LIBRARY_PATH`` as the process started, then the calling object's
  ``RUNPATH`` (``ld.so(8)``), then the ld.so cache and the system folders.
* The RUNPATHs: nvidia-cudnn-cu12 8.9.7's sub-libraries have ``$ORIGIN:$ORIGIN/../../cublas/lib:
  $ORIGIN/../../nvrtc/lib`` -- ``nvrtc/lib``, a folder no NVRTC wheel installs; cuDNN 9's cu12
  wheels ``$ORIGIN/../../cuda_nvrtc/lib``, its cu13 wheels add ``$ORIGIN/../../cu13/lib``.
* The wheels install only versioned names: nvidia-cuda-nvrtc-cu12 ``nvidia/cuda_nvrtc/lib/
  libnvrtc.so.12``, nvidia-cublas-cu12 ``nvidia/cublas/lib/libcublas{,Lt}.so.12``, the CUDA 13
  wheels (nvidia-cuda-nvrtc 13.x, nvidia-cublas 13.x) ``nvidia/cu13/lib/libnvrtc.so.13``,
  ``libcublas{,Lt}.so.13`` (read from their RECORD). None ships ``libnvrtc.so`` (the toolkit's
  ``cuda-nvrtc-dev`` package does) or ``libz.so.1``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["WHEELS", "DepAdvice", "dep_advice"]

#: (library stem, CUDA major) -> (pip requirement, folder below site-packages it installs into).
WHEELS = {
    ("nvrtc", 12): ("nvidia-cuda-nvrtc-cu12", "nvidia/cuda_nvrtc/lib"),
    ("nvrtc", 13): ("nvidia-cuda-nvrtc==13.*", "nvidia/cu13/lib"),
    ("cublas", 12): ("nvidia-cublas-cu12", "nvidia/cublas/lib"),
    ("cublasLt", 12): ("nvidia-cublas-cu12", "nvidia/cublas/lib"),
    ("cublas", 13): ("nvidia-cublas==13.*", "nvidia/cu13/lib"),
    ("cublasLt", 13): ("nvidia-cublas==13.*", "nvidia/cu13/lib"),
    ("nvJitLink", 12): ("nvidia-nvjitlink-cu12", "nvidia/nvjitlink/lib"),
    ("nvJitLink", 13): ("nvidia-nvjitlink==13.*", "nvidia/cu13/lib"),
}

_NAME = re.compile(r"^lib(nvrtc|cublasLt|cublas|nvJitLink|z)\.so(?:\.(\d+))?")


@dataclass(frozen=True)
class DepAdvice:
    """What would make ``name`` resolve: ``action`` (one command or step), whether a pip install
    alone does it (``pip_resolves``), and ``why`` in one sentence."""

    name: str
    action: str
    pip_resolves: bool
    why: str


def dep_advice(name: str, cuda_major: int | None, search_dirs: Iterable[str], sites: Iterable[str],
               requester: str = "cuDNN's sub-library") -> DepAdvice:
    """Advice for the missing library ``name`` (``libnvrtc.so.12``, ``libnvrtc.so``,
    ``libcublasLt.so.12``, ``libz.so.1``) that ``requester`` opens.

    Args:
        cuda_major: the CUDA major of the cuDNN build (12, 13), for an unversioned name.
        search_dirs: the folders glibc searches for that request here, real paths: the start
            ``LD_LIBRARY_PATH`` and the requester's RUNPATH, ``$ORIGIN`` expanded.
        sites: the environment's site-packages folders, where a wheel would install.
    """
    m = _NAME.match(name)
    if m is None:
        return DepAdvice(name, f"install the library that provides {name}", False, "not a library cuDNN is known to open")
    stem, ver = m.group(1), m.group(2)
    if stem == "z":
        return DepAdvice(name, "sudo apt-get install zlib1g   # Debian/Ubuntu (dnf install zlib on Fedora/RHEL; "
                               "conda install -c conda-forge zlib in a conda environment)", False,
                         "libz.so.1 is a system library: no pip wheel ships it")
    major = int(ver) if ver else cuda_major
    wheel = WHEELS.get((stem, major or 0))
    if ver is None:  # the unversioned development name
        where = (f"site-packages/{wheel[1]}" if wheel else "the folder that holds the versioned file")
        return DepAdvice(name, f"in {where} (or the CUDA toolkit's lib64): ln -s lib{stem}.so.{major or '<major>'} {name}, "
                               "or install the CUDA toolkit's development package, which adds that link", False,
                         f"no pip wheel ships the unversioned {name} (they ship lib{stem}.so.<major> only), so a pip "
                         "install changes nothing for this request")
    if wheel is None:
        return DepAdvice(name, f"install the CUDA {major} library that provides {name}", False,
                         f"no known pip wheel provides {name}")
    req, folder = wheel
    searched = {os.path.realpath(d) for d in search_dirs}
    targets = [os.path.join(s, folder) for s in sites]
    hit = next((t for t in targets if os.path.realpath(t) in searched), None)
    if hit is not None:
        return DepAdvice(name, f"python -m pip install {req}", True,
                         f"the wheel installs {name} into {hit}, which {requester} searches (its RUNPATH or "
                         "LD_LIBRARY_PATH)")
    first = targets[0] if targets else f"site-packages/{folder}"
    return DepAdvice(name, f"python -m pip install {req}, then export LD_LIBRARY_PATH={first} before starting "
                           "Jupyter (or the program)", False,
                     f"the wheel installs {name} into {first}, which is on no search path of {requester} (its "
                     "RUNPATH and LD_LIBRARY_PATH do not name it), so the install alone changes nothing")
