"""The advice each diagnosis offers (``cudnn_magic.fixes.advice``), table by table at its edges.

What a diagnosis offers (``cudnn_magic.fixes.advice``, reached through the public
:func:`cudnn_magic.engines.diagnose.fix_advice` and :func:`cudnn_magic.fixes.plan`) is the command or
sentence the user would act on, so the tables below state it exactly: which cuDNN wheel family
(``nvidia-cudnn-cuXX``) for which cuDNN and CUDA, the pip requirement text, when pip gives way
to conda, which library a missing dependency needs, and which words an advice-only plan shows.

Sources of the facts (each table names its own):
- PyPI release histories (``pip index versions``, checked 2026-12-01): ``nvidia-cudnn-cu11``
  from 8.5.0.96 (and 9.x), ``nvidia-cudnn-cu12`` from 8.8.0.121, ``nvidia-cudnn-cu13`` from
  9.12.0.46 (no cuDNN 8); ``nvidia-cuda-nvrtc-cuXX`` / ``nvidia-cublas-cuXX`` per CUDA major.
- docs/facts.md "Which runtime cuDNN each framework accepts" (NVIDIA's API compatibility: a build
  against X.Y runs on X.Y or newer within X), "Drivers" (the driver floors per CUDA major).
- NVIDIA cuDNN 8 installation guides: Linux links ``libz.so.1``; Windows needs ``zlibwapi.dll``.
- The frameworks' install documentation (TensorFlow ``tensorflow[and-cuda]``, JAX
  ``jax[cuda12]``, PyTorch's cuDNN switches ``torch.backends.cudnn.enabled`` /
  ``torch.backends.cuda.enable_cudnn_sdp``; TF ``TF_FORCE_GPU_ALLOW_GROWTH``, JAX
  ``XLA_PYTHON_CLIENT_PREALLOCATE``).
"""

from __future__ import annotations

import pytest
from packaging.requirements import Requirement

from cudnn_magic import fixes
from cudnn_magic.engines.diagnose import fix_advice
from cudnn_magic.fixes.advice import Facts, offer
from cudnn_magic.fixes.catalogue import FIXES, SPECS
from cudnn_magic.knowledge import scan
from cudnn_magic.model import Finding, Fix, FrameworkBuild, Report


def _hits(text: str) -> list:
    """Real hits of the knowledge scan, as a diagnosis passes them (``(position, Hit)``)."""
    return [(h.position, h) for h in scan(text)]


def _offer(fid: str, versions: dict[str, str] | None = None, framework: str = "", report: Report | None = None) -> Fix:
    """The fix a diagnosis with these facts offers for ``fid`` (it carries that id)."""
    f = fix_advice(fid, versions, framework=framework, report=report)
    assert f is not None and f.id == fid, f
    return f


def _fw(cuda: str | None, name: str = "PyTorch") -> FrameworkBuild:
    return FrameworkBuild(name, name.lower(), "1.0", cudnn_compiled="9.1.0", cuda_compiled=cuda, checker="pytorch")


# --------------------------------------------------------------------------- install-matching-cudnn

PIP = 'python -m pip install "{}"'
CONDA = 'conda install -c conda-forge "{req}"   # or NVIDIA\'s cuDNN {v} archive for your CUDA version'
NO_WHEEL = "no pip wheel of this cuDNN release; install it system-wide or with conda"

# Which wheel family a cuDNN release is named in when the text does not say the CUDA: the usual
# pairing (PyPI: nvidia-cudnn-cu11 has 8.5-8.8 and 9.x, nvidia-cudnn-cu12 8.8 onwards; cuDNN 9 and
# later pair with CUDA 12); below 8.5 no wheel exists, so conda. The requirement is "this release or
# newer within its major" (docs/facts.md: NVIDIA's API compatibility from cuDNN 7).
MATCHING = [
    # versions from the error text, then the pip requirement (None: the conda form)
    ({"compiled": "9.1.0"}, "nvidia-cudnn-cu12<10,>=9.1"),
    ({"compiled": "9.0"}, "nvidia-cudnn-cu12<10,>=9.0"),  # the first cuDNN 9 pairs with 12
    ({"compiled": "10.2"}, "nvidia-cudnn-cu12<11,>=10.2"),  # later majors too (>= 9, not == 9)
    ({"compiled": "8.9"}, "nvidia-cudnn-cu12<9,>=8.9"),  # 8.9 is the edge of the CUDA 12 pairing
    ({"compiled": "8.8"}, "nvidia-cudnn-cu11<9,>=8.8"),  # one below: CUDA 11
    ({"compiled": "8.5"}, "nvidia-cudnn-cu11<9,>=8.5"),  # the first cu11 wheel (8.5.0.96)
    ({"compiled": "8.4"}, None),  # one below: no wheel
    ({"compiled": "8"}, None),  # cuDNN 8, minor unknown: which wheel is not known
    ({"compiled": "7.6"}, None),
    # a CUDA named in the text (or by a framework build) decides the family
    ({"compiled": "8.9", "cuda": "11.8"}, "nvidia-cudnn-cu11<9,>=8.9"),
    ({"compiled": "8.6", "cuda": "12.2"}, "nvidia-cudnn-cu12<9,>=8.6"),
    ({"compiled": "9.1", "cuda": "13.0"}, "nvidia-cudnn-cu13<10,>=9.1"),
    ({"compiled": "9.1", "cuda": "13"}, "nvidia-cudnn-cu13<10,>=9.1"),
    # PyPI has no cuDNN 8 wheel for CUDA 13 (nvidia-cudnn-cu13 starts at 9.12.0.46): the cu12 one,
    # as rules.requirement.wheel_family; and no cuDNN wheel at all for CUDA 10 (nvidia-cudnn-cu10
    # does not exist): the conda form
    ({"compiled": "8.9", "cuda": "13.0"}, "nvidia-cudnn-cu12<9,>=8.9"),
    ({"compiled": "8.9", "cuda": "12.4"}, "nvidia-cudnn-cu12<9,>=8.9"),
    ({"compiled": "9.1", "cuda": "10.2"}, None),
    ({"compiled": "8.6", "cuda": "10.1"}, None),
    ({"compiled": "8.6", "cuda": "11"}, "nvidia-cudnn-cu11<9,>=8.6"),
    ({"compiled": "8.4", "cuda": "11.8"}, None),  # a known CUDA does not make a wheel of 8.4
    ({"compiled": "8", "cuda": "11.8"}, None),  # nor of an 8 whose minor is unknown
    ({"compiled": "9.1", "cuda": "twelve"}, "nvidia-cudnn-cu12<10,>=9.1"),  # unreadable: the pairing
    ({"compiled": "8.6", "cuda": "x.1"}, "nvidia-cudnn-cu11<9,>=8.6"),
    ({"compiled": "9.1", "cuda": ""}, "nvidia-cudnn-cu12<10,>=9.1"),
    # which version the text names: the minimum first, then the compiled-against one
    ({"minimum": "9.3", "compiled": "9.1"}, "nvidia-cudnn-cu12<10,>=9.3"),
    ({"minimum": "garbage", "compiled": "9.1"}, "nvidia-cudnn-cu12<10,>=9.1"),
    ({"minimum": "9", "loaded": "8.9"}, "nvidia-cudnn-cu12<10,>=9"),  # "Update to v9": the major
    # a library name gives the major only: soname, then library, then required
    ({"soname": "libcudnn.so.9"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"soname": "libcudnn_ops.so.9.1.0"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"library": "libcudnn_cnn_infer.so.9"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"required": "9"}, "nvidia-cudnn-cu12<10,>=9"),  # ONNX Runtime "Require cuDNN 9.*"
    ({"soname": "cudnn64_9.dll"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"soname": "libcudnn.so.9", "library": "libcudnn.so.8"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"library": "libcudnn.so.9", "required": "8"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"soname": "libcudnn.so", "library": "libcudnn_ops.so.9"}, "nvidia-cudnn-cu12<10,>=9"),
    ({"compiled": "9.3", "soname": "libcudnn.so.8"}, "nvidia-cudnn-cu12<10,>=9.3"),  # a version beats a name
    ({"soname": "cudnn64_8.dll"}, None),  # cuDNN 8, minor unknown
]


@pytest.mark.parametrize("versions, requirement", MATCHING, ids=[str(v) for v, _ in MATCHING])
def test_install_matching_cudnn_names_the_wheel_of_its_cuda(versions, requirement):
    f = _offer("install-matching-cudnn", versions)
    assert f is not None and f.restart_required is True
    if requirement is not None:
        assert f.action == PIP.format(requirement)
        assert f.applicable is True and f.reason == ""
        req = Requirement(requirement)
        low = next(s.version for s in req.specifier if s.operator == ">=")
        major = low.split(".")[0]
        assert f.title == f"Install cuDNN {low} or newer within {major}.x ({requirement})"
    else:
        assert f.action.startswith('conda install -c conda-forge "cudnn<'), f.action
        assert f.applicable is False and f.reason == NO_WHEEL


@pytest.mark.parametrize("versions, req, short", [
    ({"compiled": "8.4"}, "cudnn<9,>=8.4", "8.4"),
    ({"compiled": "7.6.5"}, "cudnn<8,>=7.6", "7.6"),
    ({"compiled": "8"}, "cudnn<9,>=8", "8"),
    ({"compiled": "8.4", "cuda": "11.8"}, "cudnn<9,>=8.4", "8.4"),
    ({"soname": "cudnn64_8.dll"}, "cudnn<9,>=8", "8"),
    ({"library": "libcudnn_cnn_infer.so.8"}, "cudnn<9,>=8", "8"),
])
def test_without_a_wheel_the_advice_is_conda_or_the_archive(versions, req, short):
    f = _offer("install-matching-cudnn", versions)
    assert f.title == f"Install cuDNN {short} (or newer within {short.split('.')[0]}.x)"
    assert f.action == CONDA.format(req=req, v=short)
    assert (f.applicable, f.restart_required, f.reason) == (False, True, NO_WHEEL)


@pytest.mark.parametrize("versions", [{}, {"soname": "libcudnn.so"}, {"library": "libcudnn.so.123"},
                                      {"compiled": "garbage"}, {"loaded": "9.1.0"}, {"soname": ""}])
def test_install_matching_cudnn_without_a_version_says_it_is_not_known(versions):
    f = _offer("install-matching-cudnn", versions)
    assert f.title == "Install the cuDNN release the framework was built for"
    assert f.action == ("Install the cuDNN major/minor your framework build expects (see %cudnn_check), e.g. the "
                        "framework's own CUDA extra: pip install \"tensorflow[and-cuda]\" / \"jax[cuda12]\", or the "
                        "PyTorch wheel that bundles cuDNN.")
    assert (f.applicable, f.restart_required) == (False, True)
    assert f.reason == "the needed version is not known from the text"


@pytest.mark.parametrize("frameworks, versions, requirement", [
    # no CUDA in the text: the first framework build that says its CUDA decides
    ((_fw("13.0"),), {"compiled": "9.1"}, "nvidia-cudnn-cu13<10,>=9.1"),
    ((_fw(None), _fw("13.0"), _fw("11.8")), {"compiled": "9.1"}, "nvidia-cudnn-cu13<10,>=9.1"),
    ((_fw(""), _fw("11.8")), {"compiled": "8.9"}, "nvidia-cudnn-cu11<9,>=8.9"),
    ((_fw(None),), {"compiled": "8.9"}, "nvidia-cudnn-cu12<9,>=8.9"),  # none says: the pairing
    ((_fw("11.8"),), {"compiled": "9.1", "cuda": "12.4"}, "nvidia-cudnn-cu12<10,>=9.1"),  # the text first
])
def test_the_cuda_of_a_framework_build_picks_the_family(frameworks, versions, requirement):
    f = _offer("install-matching-cudnn", versions, report=Report(frameworks=frameworks))
    assert f.action == PIP.format(requirement)


# --------------------------------------------------------------------------- reinstall-cudnn

# One complete cuDNN of the major the text names: cuDNN 9 and later from the CUDA 12 family,
# cuDNN 8 from CUDA 11's (PyPI: both hold complete releases of those majors).
@pytest.mark.parametrize("versions, major, requirement", [
    ({"compiled": "9.1.0"}, 9, "nvidia-cudnn-cu12<10,>=9"),
    ({"soname": "libcudnn_ops.so.9"}, 9, "nvidia-cudnn-cu12<10,>=9"),
    ({"compiled": "10.0"}, 10, "nvidia-cudnn-cu12<11,>=10"),
    ({"compiled": "8.9.7"}, 8, "nvidia-cudnn-cu11<9,>=8"),
    ({"library": "libcudnn_cnn_infer.so.8"}, 8, "nvidia-cudnn-cu11<9,>=8"),
    ({"soname": "cudnn64_8.dll"}, 8, "nvidia-cudnn-cu11<9,>=8"),
])
def test_reinstall_names_one_complete_release_of_the_major(versions, major, requirement):
    f = _offer("reinstall-cudnn", versions)
    assert f.title == f"Reinstall one complete cuDNN {major}"
    assert f.action == (f'python -m pip install --force-reinstall "{requirement}"   '
                        "# and remove other cuDNN copies from LD_LIBRARY_PATH")
    assert (f.applicable, f.restart_required, f.reason) == (True, True, "")


@pytest.mark.parametrize("versions", [{}, {"compiled": "7.6.5"}, {"soname": "libcudnn.so.7"}, {"compiled": "x"}])
def test_reinstall_without_a_wheel_major_is_advice(versions):
    f = _offer("reinstall-cudnn", versions)
    assert f.title == "Reinstall one complete cuDNN"
    assert f.action == ("Reinstall cuDNN so all libcudnn_* sub-libraries come from the same release, and remove "
                        "other cuDNN copies from LD_LIBRARY_PATH.")
    assert (f.applicable, f.restart_required) == (False, True)
    assert f.reason == "which cuDNN major is not known from the text"


# --------------------------------------------------------------------------- install-cudnn-deps

NVRTC_TITLE = "Install NVRTC, which cuDNN's convolution sub-library loads"
# cuDNN 9's wheels carry RUNPATH $ORIGIN/../../cuda_nvrtc/lib (and ../../cu13/lib for CUDA 13), where
# the NVRTC wheel installs libnvrtc.so.<major> (readelf -d of nvidia-cudnn-cu12 9.28 and the jit wheels)
NVRTC = ("python -m pip install {0}   # cuDNN's pip wheel finds it through its RUNPATH; a cuDNN installed otherwise also "
         "needs LD_LIBRARY_PATH=<site-packages>/{1}")
NVRTC12 = NVRTC.format("nvidia-cuda-nvrtc-cu12", "nvidia/cuda_nvrtc/lib")
# cuDNN 8.9.7's wheel: RUNPATH $ORIGIN/../../nvrtc/lib, a folder no NVRTC wheel installs into
NVRTC8_TITLE = "Install NVRTC and put its folder on LD_LIBRARY_PATH for cuDNN 8"
NVRTC8 = ("python -m pip install {0}, then export LD_LIBRARY_PATH=<site-packages>/nvidia/cuda_nvrtc/lib before starting "
          "Jupyter (or the program)")
NVRTC8_REASON = "cuDNN 8's RUNPATH names no folder an NVRTC wheel installs into: LD_LIBRARY_PATH must"
NVRTC_DLL = ("python -m pip install nvidia-cuda-nvrtc-cu12   # PyTorch adds the wheels' folders "
             "(site-packages\\nvidia\\...\\bin) to the DLL search; otherwise put that folder on PATH")
# the unversioned name: no wheel ships it (they ship libnvrtc.so.<major> only)
UNVERSIONED_TITLE = "Make libnvrtc.so (unversioned) resolvable for cuDNN"
UNVERSIONED = ("In the folder that holds {0} (site-packages/{1} for the pip wheel, the CUDA toolkit's lib64 otherwise): "
               "ln -s {0} libnvrtc.so, or install the CUDA toolkit's NVRTC development package, which adds that link; "
               "when that folder is not on cuDNN's RUNPATH (cuDNN 8's wheels name nvidia/nvrtc/lib, a folder no wheel "
               "installs), also export LD_LIBRARY_PATH to it before starting Jupyter; then restart the kernel")
LINK = "a symbolic link in the environment's files"
CUBLAS_TITLE = "Install cuBLAS, which cuDNN needs"
CUBLAS = "python -m pip install nvidia-cublas-cu{}"
ZLIB_TITLE = "Install zlib (libz.so.1), which cuDNN 8 needs"
ZLIB = ("sudo apt-get install zlib1g   # Debian/Ubuntu (dnf install zlib on Fedora/RHEL), or conda install -c "
        "conda-forge zlib in a conda environment")
ZLIBWAPI_TITLE = "Install zlibwapi.dll next to the cuDNN DLLs"
ZLIBWAPI = ("Put zlibwapi.dll (zlib 1.2.x, x64) in the cuDNN bin directory or another folder on PATH (NVIDIA cuDNN 8 "
            "Windows installation guide).")
DRIVER_TITLE = "Install the NVIDIA driver (libcuda)"
DRIVER = "Install the NVIDIA driver; libcuda.so.1 comes with it."
ALL_TITLE = "Install the libraries cuDNN needs"
ALL = ("cuDNN needs libcublas/libcublasLt and libnvrtc of the same CUDA major: python -m pip install "
       "nvidia-cublas-cu{0} nvidia-cuda-nvrtc-cu{0}")

# The dependency is what cuDNN's loader names (knowledge/loading.py _DEP); the CUDA major of the
# wheel follows the cuDNN major: 9 and later (or unknown) -> CUDA 12, 8 and before -> CUDA 11.
DEPS = [
    # versions, title, action, applicable, reason
    ({"dependency": "libnvrtc.so.12", "compiled": "9.1"}, NVRTC_TITLE, NVRTC12, True, ""),
    ({"dependency": "libnvrtc.so.12"}, NVRTC_TITLE, NVRTC12, True, ""),  # cuDNN unknown: a cuDNN 9 wheel's RUNPATH
    ({"dependency": "libnvrtc.so.13", "compiled": "9.12"}, NVRTC_TITLE,
     NVRTC.format("nvidia-cuda-nvrtc==13.*", "nvidia/cu13/lib"), True, ""),
    ({"dependency": "libnvrtc.so.12", "compiled": "8.9"}, NVRTC8_TITLE, NVRTC8.format("nvidia-cuda-nvrtc-cu12"), False,
     NVRTC8_REASON),
    ({"dependency": "libnvrtc.so.11.2", "library": "libcudnn_cnn_infer.so.8"}, NVRTC8_TITLE,
     NVRTC8.format("nvidia-cuda-nvrtc-cu11"), False, NVRTC8_REASON),
    ({"dependency": "libnvrtc.so", "library": "libcudnn_cnn_infer.so.8"}, UNVERSIONED_TITLE,
     UNVERSIONED.format("libnvrtc.so.<version>", "nvidia/cuda_nvrtc/lib"), False, LINK),
    ({"dependency": "libnvrtc.so"}, UNVERSIONED_TITLE, UNVERSIONED.format("libnvrtc.so.12", "nvidia/cuda_nvrtc/lib"),
     False, LINK),  # cuDNN unknown: CUDA 12
    ({"dependency": "libnvrtc.so", "compiled": "10.0"}, UNVERSIONED_TITLE,
     UNVERSIONED.format("libnvrtc.so.12", "nvidia/cuda_nvrtc/lib"), False, LINK),
    ({"dependency": "libnvrtc.so", "compiled": "7.6"}, UNVERSIONED_TITLE,
     UNVERSIONED.format("libnvrtc.so.<version>", "nvidia/cuda_nvrtc/lib"), False, LINK),
    ({"dependency": "LIBNVRTC.SO"}, UNVERSIONED_TITLE, UNVERSIONED.format("libnvrtc.so.12", "nvidia/cuda_nvrtc/lib"),
     False, LINK),  # case-blind
    ({"dependency": "nvrtc64_120_0.dll"}, NVRTC_TITLE, NVRTC_DLL, True, ""),
    ({"dependency": "libNVRTC-builtins.so.12.4"}, NVRTC_TITLE, NVRTC12, True, ""),  # case-blind
    ({"dependency": "libcublasLt.so.12", "compiled": "9.1"}, CUBLAS_TITLE, CUBLAS.format(12), True, ""),
    ({"dependency": "libcublas.so.11", "compiled": "8.9"}, CUBLAS_TITLE, CUBLAS.format(11), True, ""),
    ({"dependency": "libcublas.so.12", "compiled": "8.9"}, CUBLAS_TITLE, CUBLAS.format(12), True, ""),  # the name's major
    ({"dependency": "libcublaslt.so.13"}, CUBLAS_TITLE, "python -m pip install nvidia-cublas==13.*", True, ""),
    ({"dependency": "cublas64_12.dll"}, CUBLAS_TITLE, CUBLAS.format(12), True, ""),
    ({"dependency": "CUBLASLT64_12.DLL"}, CUBLAS_TITLE, CUBLAS.format(12), True, ""),
    # Linux cuDNN 8 links libz.so.1 (cuDNN 8 Linux installation guide): a system package
    ({"dependency": "libz.so.1"}, ZLIB_TITLE, ZLIB, False, "a system package"),
    ({"dependency": "libz.so"}, ZLIB_TITLE, ZLIB, False, "a system package"),
    ({"dependency": "LIBZ.SO.1"}, ZLIB_TITLE, ZLIB, False, "a system package"),
    # Windows cuDNN 8.3-8.9 needs zlibwapi.dll (cuDNN 8 Windows installation guide): a file copy
    ({"dependency": "zlibwapi.dll"}, ZLIBWAPI_TITLE, ZLIBWAPI, False, "a Windows file copy"),
    ({"dependency": "ZLIBWAPI.DLL"}, ZLIBWAPI_TITLE, ZLIBWAPI, False, "a Windows file copy"),
    # the driver's library: only the driver installs it
    ({"dependency": "libcuda.so.1"}, DRIVER_TITLE, DRIVER, False, "needs administrator rights"),
    ({"dependency": "nvcuda.dll"}, DRIVER_TITLE, DRIVER, False, "needs administrator rights"),
    # nothing named: both libraries of the CUDA major
    ({}, ALL_TITLE, ALL.format(12), True, ""),
    ({"compiled": "9.0"}, ALL_TITLE, ALL.format(12), True, ""),
    ({"compiled": "8.9"}, ALL_TITLE, ALL.format(11), True, ""),
    ({"soname": "libcudnn.so.8"}, ALL_TITLE, ALL.format(11), True, ""),
    ({"dependency": "libfoo.so.1"}, ALL_TITLE, ALL.format(12), True, ""),
    ({"dependency": "xlibz.so.1"}, ALL_TITLE, ALL.format(12), True, ""),  # libz only at the start
    ({"dependency": "libz.sox"}, ALL_TITLE, ALL.format(12), True, ""),  # nor another name after it
]


@pytest.mark.parametrize("versions, title, action, applicable, reason", DEPS, ids=[str(d[0]) for d in DEPS])
def test_install_cudnn_deps_names_the_missing_library(versions, title, action, applicable, reason):
    f = _offer("install-cudnn-deps", versions)
    assert (f.title, f.action) == (title, action)
    assert (f.applicable, f.restart_required, f.reason) == (applicable, True, reason)


def test_zlibwapi_named_only_in_the_matched_lines_is_the_windows_dll():
    """PyTorch's Windows message names zlibwapi.dll without a loader error to take a dependency from."""
    hits = _hits("Could not locate zlibwapi.dll. Please make sure it is in your library path!")
    f = offer("install-cudnn-deps", Facts(hits=hits), None)
    assert f.id == "install-cudnn-deps"
    assert (f.title, f.action, f.reason) == (ZLIBWAPI_TITLE, ZLIBWAPI, "a Windows file copy")
    other = offer("install-cudnn-deps", Facts(hits=_hits("cuDNN Frontend error: No execution plans support the graph")),
                  None)
    assert other.title == ALL_TITLE
    # a named dependency comes first
    f = offer("install-cudnn-deps", Facts(versions={"dependency": "libnvrtc.so"}, hits=hits), None)
    assert f.title == UNVERSIONED_TITLE


def test_a_real_log_gets_the_dependency_of_its_cudnn_major():
    from cudnn_magic.engines.diagnose import diagnose

    for so, cuda in (("8", 11), ("9", 12)):
        log = (f"Could not load library libcudnn_cnn_infer.so.{so}. Error: libcublasLt.so.{cuda}: cannot open shared "
               "object file: No such file or directory")
        fix = next(f for d in diagnose(log=log) for f in d.fixes if f.id == "install-cudnn-deps")
        assert fix.action == CUBLAS.format(cuda)


# --------------------------------------------------------------------------- upgrade-driver

FLOORS = "CUDA 11.x needs >= 450.80.02, 12.x >= 525.60.13, 13.x >= 580 (Linux)."  # docs/facts.md "Drivers"


@pytest.mark.parametrize("versions, title, action", [
    ({"required_driver": "525.60.13", "driver": "470.82.01"}, "Install an NVIDIA driver >= 525.60.13",
     f"Upgrade the NVIDIA driver (now 470.82.01) to 525.60.13 or newer: {FLOORS}"),
    ({"required_driver": "580"}, "Install an NVIDIA driver >= 580", f"Upgrade the NVIDIA driver to 580 or newer: {FLOORS}"),
    ({"driver": "470.82.01"}, "Install a newer NVIDIA driver", f"Upgrade the NVIDIA driver (now 470.82.01): {FLOORS}"),
    ({}, "Install a newer NVIDIA driver", f"Upgrade the NVIDIA driver: {FLOORS}"),
    ({"required_driver": "", "driver": ""}, "Install a newer NVIDIA driver", f"Upgrade the NVIDIA driver: {FLOORS}"),
])
def test_upgrade_driver_says_what_it_knows(versions, title, action):
    f = _offer("upgrade-driver", versions)
    assert (f.title, f.action) == (title, action)
    assert (f.applicable, f.restart_required, f.reason) == (False, True, "needs administrator rights")


# --------------------------------------------------------------------------- per framework

@pytest.mark.parametrize("framework, title, action, applicable", [
    # JAX: XLA_PYTHON_CLIENT_PREALLOCATE (JAX "GPU memory allocation"); TensorFlow: TF_FORCE_GPU_ALLOW_GROWTH
    ("JAX", "Stop JAX from preallocating GPU memory",
     "import os; os.environ[\"XLA_PYTHON_CLIENT_PREALLOCATE\"] = \"false\"   # before importing jax", True),
    ("TensorFlow", "Let TensorFlow allocate GPU memory as needed",
     "import os; os.environ[\"TF_FORCE_GPU_ALLOW_GROWTH\"] = \"true\"   # before importing tensorflow\n"
     "# or: for g in tf.config.list_physical_devices('GPU'): tf.config.experimental.set_memory_growth(g, True)", True),
])
def test_allow_memory_growth_per_framework(framework, title, action, applicable):
    for fw in (framework, "") if framework == "TensorFlow" else (framework,):  # no framework: TensorFlow's words
        f = _offer("allow-memory-growth", framework=fw)
        assert (f.title, f.action) == (title, action)
        assert (f.applicable, f.restart_required, f.reason) == (applicable, True, "")


TF_RNN = ("Keras RNNs take the cuDNN kernel only with the default options: a non-default one (e.g. recurrent_dropout>0, "
          "or tf.keras.layers.RNN(tf.keras.layers.LSTMCell(n))) selects the generic kernel, which also runs on the CPU.")


@pytest.mark.parametrize("framework, text, title, action, applicable, reason", [
    # the cuDNN frontend (PyTorch's cuDNN attention): switch that backend off (torch.backends.cuda)
    ("PyTorch", "cuDNN Frontend error: [cudnn_frontend] Error: No execution plans support the graph.",
     "Disable the cuDNN attention backend", "torch.backends.cuda.enable_cudnn_sdp(False)", True, ""),
    ("TensorFlow", "cuDNN Frontend error: No execution plans support the graph.",
     "Disable the cuDNN attention backend", "torch.backends.cuda.enable_cudnn_sdp(False)", True, ""),
    ("TensorFlow", "", "Use the generic (non-cuDNN) kernel (slower)", TF_RNN, False, "a change to your code"),
    ("TensorFlow", "RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error may appear if you passed in a "
     "non-contiguous input.", "Use the generic (non-cuDNN) kernel (slower)", TF_RNN, False, "a change to your code"),
    ("PyTorch", "", "Run without cuDNN (slower)", "torch.backends.cudnn.enabled = False", True, ""),
    ("", "", "Run without cuDNN (slower)", "torch.backends.cudnn.enabled = False", True, ""),
])
def test_cudnn_fallback_per_framework_and_api(framework, text, title, action, applicable, reason):
    # JAX gets none (it once got PyTorch's switch): XLA lowers GPU convolutions to cuDNN
    assert offer("cudnn-fallback", Facts(framework="JAX"), None) is None
    f = offer("cudnn-fallback", Facts(framework=framework, hits=_hits(text) if text else []), None)
    assert f.id == "cudnn-fallback"
    assert (f.title, f.action) == (title, action)
    assert (f.applicable, f.restart_required, f.reason) == (applicable, False, reason)


@pytest.mark.parametrize("framework, words", [
    # each framework's install documentation
    ("TensorFlow", 'pip install "tensorflow[and-cuda]" (Linux; brings CUDA and cuDNN) instead of a CPU-only '
                   "tensorflow/tensorflow-cpu wheel, then restart the kernel"),
    ("PyTorch", "install a CUDA wheel of PyTorch (they bundle cuDNN; pytorch.org/get-started), or rebuild from source "
                "with cuDNN visible (CUDNN_INCLUDE_DIR/CUDNN_LIBRARY)"),
    ("MXNet", "pip install the CUDA build of MXNet for your CUDA version (mxnet-cu1xx wheels include cuDNN), or "
              "rebuild with USE_CUDNN=1"),
    ("Chainer/CuPy", "pip install the cupy-cuda1xx/cupy-cuda12x wheel for your CUDA and the nvidia-cudnn wheel "
                     "(python -m cupyx.tools.install_library --library cudnn for older CuPy), or reinstall CuPy from "
                     "source after cuDNN is installed"),
    ("Theano", "make cudnn.h and libcudnn visible to Theano: set [dnn] include_path and library_path in .theanorc "
               "(or CPATH/LIBRARY_PATH/LD_LIBRARY_PATH) to the cuDNN install"),
])
def test_install_cudnn_build_per_framework(framework, words):
    f = _offer("install-cudnn-build", framework=framework)
    assert (f.title, f.action) == (f"Install a {framework} build with cuDNN support", words)
    assert (f.applicable, f.restart_required, f.reason) == (False, True, "a different build of the framework")


GENERIC_BUILD = ("install the framework's GPU build that includes cuDNN (or rebuild it with cuDNN found by the build), "
                 "then restart the kernel")


@pytest.mark.parametrize("framework, title", [
    ("", "Install a framework build with cuDNN support"),
    ("PaddlePaddle", "Install a PaddlePaddle build with cuDNN support"),  # no words of its own: the generic ones
])
def test_install_cudnn_build_without_framework_words(framework, title):
    f = _offer("install-cudnn-build", framework=framework)
    assert (f.title, f.action) == (title, GENERIC_BUILD)
    assert (f.applicable, f.restart_required, f.reason) == (False, True, "a different build of the framework")


@pytest.mark.parametrize("framework, title, action, applicable, reason", [
    ("JAX", "Install JAX with CUDA support", 'python -m pip install -U "jax[cuda12]"', True, ""),  # JAX install docs
    ("TensorFlow", "Install a framework build with kernels for this GPU",
     "Install the framework's CUDA build that lists this GPU's compute capability (%cudnn_check shows the build's "
     "cuda_compute_capabilities).", False, "depends on the framework and GPU"),
    ("", "Install a framework build with kernels for this GPU",
     "Install the framework's CUDA build that lists this GPU's compute capability (%cudnn_check shows the build's "
     "cuda_compute_capabilities).", False, "depends on the framework and GPU"),
])
def test_install_cuda_build_per_framework(framework, title, action, applicable, reason):
    f = _offer("install-cuda-build", framework=framework)
    assert (f.title, f.action) == (title, action)
    assert (f.applicable, f.restart_required, f.reason) == (applicable, True, reason)


# --------------------------------------------------------------------------- the fixed wordings

STATIC = [
    # fix id, title, action, restart_required, applicable, reason
    ("remove-shadowing-dir", "Keep other cuDNN copies off the library path",
     "Remove directories holding another libcudnn* from LD_LIBRARY_PATH (PATH on Windows) before starting "
     "Jupyter/Python, e.g. `unset LD_LIBRARY_PATH` for a test, then restart the kernel. %cudnn_check shows which copy "
     "is mapped and which it shadows.", True, False, "the library path is read at process start"),
    ("import-order", "Import the framework whose cuDNN should win first",
     "The first libcudnn loaded serves the whole process: import the framework you need cuDNN for first (e.g. `import "
     "torch` before `import tensorflow`), in a fresh kernel.", True, False, "a change to your code"),
    ("make-contiguous", "Make the input contiguous", "x = x.contiguous()   # before the conv/RNN call",
     False, False, "a change to your code"),
    ("same-device", "Put every operand on the same GPU",
     "model.to(device); x = x.to(device); h0 = h0.to(x.device)   # hidden states too", False, False,
     "a change to your code"),
    ("check-shapes", "Check the input shapes",
     "Make each input at least as large as the kernel (pad it), and check channel counts and layout.",
     False, False, "a change to your code"),
]


@pytest.mark.parametrize("fid, title, action, restart, applicable, reason", STATIC, ids=[s[0] for s in STATIC])
def test_fixed_wordings(fid, title, action, restart, applicable, reason):
    for fw in ("", "PyTorch", "TensorFlow"):
        f = _offer(fid, {"compiled": "9.1"}, framework=fw)
        assert f == Fix(fid, title, action, restart_required=restart, applicable=applicable, reason=reason)


RESERVED = ("TensorFlow and JAX keep the GPU memory they reserved until the process ends: memory they hold comes back "
            "only with a restart of the kernel.")
STICKY = ("Restart the kernel (the CUDA context cannot recover); to find the first failing op, set CUDA_LAUNCH_BLOCKING=1 "
          "before starting.")
TF_AUTOTUNE = 'import os; os.environ["TF_CUDNN_USE_AUTOTUNE"] = "0"   # before importing tensorflow'
XLA_AUTOTUNE = ('import os; os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_gpu_autotune_level=0"'
                "   # before importing jax")


@pytest.mark.parametrize("fid, framework, diagnosis, expected", [
    # the words follow the framework in play; a PyTorch OOM needs no restart
    ("free-gpu-memory", "", "", ("Free GPU memory", "Stop other processes on the GPU (%gpu_memory shows them), drop "
     "large objects (del x; gc.collect(); torch.cuda.empty_cache() in PyTorch), or lower the batch size. " + RESERVED,
     False, False)),
    ("free-gpu-memory", "PyTorch", "", ("Free GPU memory in this kernel", "PyTorch recovers from running out of memory: "
     "del the tensors and models you no longer need (outputs and losses kept in lists too), then gc.collect(); "
     "torch.cuda.empty_cache() (the caching allocator keeps freed blocks), or lower the batch size. "
     "torch.cuda.memory_summary() shows what is held; %gpu_memory shows other processes.", False, False)),
    ("free-gpu-memory", "TensorFlow", "", ("Free GPU memory", "Stop other processes on the GPU (%gpu_memory shows them) "
     "or lower the batch size. " + RESERVED, False, False)),
    ("free-gpu-memory", "JAX", "", ("Free GPU memory", "Stop other processes on the GPU (%gpu_memory shows them) "
     "or lower the batch size. " + RESERVED, False, False)),
    ("restart-kernel", "", "", ("Restart the kernel", STICKY, True, True)),
    ("restart-kernel", "PyTorch", "cudnn-stream-set-failed", ("Restart the kernel", STICKY, True, True)),
    ("restart-kernel", "TensorFlow", "cudnn-execution-failed", ("Restart the kernel", STICKY, True, True)),
    ("restart-kernel", "PyTorch", "gpu-out-of-memory", None),
    ("restart-kernel", "TensorFlow", "gpu-out-of-memory", ("Restart the kernel to release reserved GPU memory",
                                                           RESERVED, True, True)),
    ("restart-kernel", "", "gpu-out-of-memory", ("Restart the kernel to release reserved GPU memory", RESERVED, True, True)),
    ("restart-kernel", "PyTorch", "cudnn-init-failed", ("Restart the kernel", "Restart the kernel once the cause is "
     "fixed: a process keeps the cuDNN it loaded until it ends.", True, True)),
    ("restart-kernel", "JAX", "cudnn-init-failed", ("Restart the kernel", "Restart the kernel once the cause is fixed: "
     "a process keeps the cuDNN it loaded and the GPU memory TensorFlow/JAX reserved until it ends.", True, True)),
    ("disable-cudnn-benchmark", "PyTorch", "", ("Turn off cuDNN autotuning", "torch.backends.cudnn.benchmark = False",
                                                False, True)),
    ("disable-cudnn-benchmark", "TensorFlow", "", ("Turn off cuDNN autotuning", TF_AUTOTUNE, True, True)),
    ("disable-cudnn-benchmark", "JAX", "", ("Turn off cuDNN autotuning", XLA_AUTOTUNE, True, True)),
    ("disable-cudnn-benchmark", "", "", ("Turn off cuDNN autotuning", "PyTorch: torch.backends.cudnn.benchmark = False\n"
     "TensorFlow: " + TF_AUTOTUNE + "\nJAX: " + XLA_AUTOTUNE, False, True)),
])
def test_wordings_per_framework(fid, framework, diagnosis, expected):
    from cudnn_magic.engines.diagnose import _Agg  # the diagnosis's own record of what it knows

    f = offer(fid, _Agg(id=diagnosis, framework=framework), None)
    assert (None if f is None else (f.title, f.action, f.restart_required, f.applicable)) == expected


@pytest.mark.parametrize("fid", ["one-venv-per-cuda", "upgrade-consumer", "add-library-path", "separate-kernels",
                                 "no-such-fix"])
def test_ids_without_diagnosis_wording_offer_nothing(fid):
    # findings (or nothing) word these: a diagnosis offers no text of its own
    assert fix_advice(fid, {"compiled": "9.1"}, framework="PyTorch") is None


# --------------------------------------------------------------------------- advice-only plans

ADVICE_ONLY_NOTE = "advice only: nothing to run from here"
DIAGNOSIS_WORDED = sorted(s.id for s in SPECS.values() if s.words == "diagnosis" and not s.planner)
FINDING_WORDED = sorted(s.id for s in SPECS.values() if s.words == "finding" and not s.planner)


def test_the_advice_worded_ids_are_these():
    # the catalogue (fixes/catalogue.py) decides which plans show whose words
    assert DIAGNOSIS_WORDED == ["check-shapes", "free-gpu-memory", "install-cudnn-build", "install-cudnn-deps",
                                "make-contiguous"]
    assert FINDING_WORDED == ["add-library-path", "remove-sys-path-dir", "separate-kernels", "upgrade-consumer"]


def _assert_advice_plan(p, fid, title, action, restart, notes):
    assert (p.fix_id, p.title, p.applicable, p.reason) == (fid, title, False, ADVICE_ONLY_NOTE)
    assert [(s.kind, s.description, s.snippet, s.argv) for s in p.steps] == [("advice", title, action, ())]
    assert p.restart_required is restart
    assert p.notes == tuple(notes)
    assert p.action == action


@pytest.mark.parametrize("fid", DIAGNOSIS_WORDED)
@pytest.mark.parametrize("restart", [True, False])
def test_a_diagnosis_worded_plan_shows_the_words_of_the_button(fid, restart):
    adv = {"title": "Do this", "action": "run that", "restart_required": restart}
    p = fixes.plan(fid, Report(), context={"advice": adv})
    _assert_advice_plan(p, fid, "Do this", "run that", restart, SPECS[fid].notes)


@pytest.mark.parametrize("fid", DIAGNOSIS_WORDED + FINDING_WORDED)
def test_button_words_without_a_restart_flag_need_no_restart(fid):
    p = fixes.plan(fid, Report(), context={"advice": {"title": "Do this", "action": "run that"}})
    assert (p.title, p.action, p.restart_required) == ("Do this", "run that", False)


BAD_ADVICE = ["Do this", {"title": 1, "action": "run that"}, {"title": "Do this", "action": None},
              {"title": "", "action": "run that"}, {"title": "Do this", "action": ""}, {"action": "run that"},
              {"title": "Do this"}, None]


@pytest.mark.parametrize("fid", DIAGNOSIS_WORDED)
@pytest.mark.parametrize("adv", BAD_ADVICE, ids=[repr(a) for a in BAD_ADVICE])
def test_without_usable_button_words_the_plan_words_the_live_facts(fid, adv):
    p = fixes.plan(fid, Report(), context={"advice": adv, "framework": "PyTorch"})
    f = _offer(fid, framework="PyTorch")
    _assert_advice_plan(p, fid, f.title, f.action, f.restart_required, SPECS[fid].notes)
    assert "run that" not in p.action and p.title != "Do this"


@pytest.mark.parametrize("framework, title", [("PyTorch", "Install a PyTorch build with cuDNN support"),
                                              (None, "Install a framework build with cuDNN support"),
                                              ("", "Install a framework build with cuDNN support")])
def test_the_plan_without_a_diagnosis_takes_the_framework_of_the_context(framework, title):
    ctx = {} if framework is None else {"framework": framework}
    p = fixes.plan("install-cudnn-build", Report(), context=ctx)
    assert p.title == title


def test_the_plan_without_a_diagnosis_takes_the_cuda_of_the_report():
    p = fixes.plan("install-cudnn-deps", Report(frameworks=(_fw("11.8"),)))
    # install-cudnn-deps names the CUDA major of the cuDNN (unknown here: 12), not of a build
    assert p.action == ALL.format(12)
    assert p.restart_required is True


@pytest.mark.parametrize("fid", FINDING_WORDED)
@pytest.mark.parametrize("restart", [True, False])
def test_a_finding_worded_plan_shows_the_words_of_the_button(fid, restart):
    adv = {"title": "Do this", "action": "run that", "restart_required": restart}
    p = fixes.plan(fid, Report(), context={"advice": adv})
    _assert_advice_plan(p, fid, "Do this", "run that", restart, ())


def _finding(fid_: str, title: str, *fx: Fix) -> Finding:
    return Finding(fid_, "error", title, "detail", fx)


@pytest.mark.parametrize("fid", FINDING_WORDED)
@pytest.mark.parametrize("adv", BAD_ADVICE[:6], ids=[repr(a) for a in BAD_ADVICE[:6]])
def test_a_finding_worded_plan_quotes_every_finding_that_offers_it(fid, adv):
    a = Fix(fid, "Install CTranslate2 4.5", "pip install ctranslate2==4.5.0", restart_required=True)
    b = Fix(fid, "Install CTranslate2 4.4", "pip install ctranslate2==4.4.0", restart_required=False)
    other = Fix("reinstall-cudnn", "Reinstall", "pip install x")
    report = Report(findings=(_finding("first", "One", other), _finding("second", "Two", a),
                              _finding("third", "Three", other, a, b), _finding("fourth", "Four", a)))
    p = fixes.plan(fid, report, context={"advice": adv})
    # the first offering finding's title and restart flag; each distinct action once, in order; which findings
    _assert_advice_plan(p, fid, "Install CTranslate2 4.5", "pip install ctranslate2==4.5.0\npip install ctranslate2==4.4.0",
                        True, ["second: Two", "third: Three", "third: Three", "fourth: Four"])


@pytest.mark.parametrize("fid", FINDING_WORDED)
def test_a_finding_worded_plan_takes_the_restart_flag_of_the_first_offer(fid):
    a = Fix(fid, "A", "do a", restart_required=False)
    b = Fix(fid, "B", "do b", restart_required=True)
    p = fixes.plan(fid, Report(findings=(_finding("f1", "One", a), _finding("f2", "Two", b))))
    assert (p.title, p.action, p.restart_required) == ("A", "do a\ndo b", False)


@pytest.mark.parametrize("fid", FINDING_WORDED)
def test_no_finding_offers_it(fid):
    other = Fix("reinstall-cudnn", "Reinstall", "pip install x")
    for report in (Report(), Report(findings=(_finding("f", "F", other),))):
        p = fixes.plan(fid, report)
        assert (p.title, p.applicable, p.reason, p.steps) == (FIXES[fid], False,
                                                             "no finding of the current report offers this fix", ())


# --------------------------------------------------------------------------- the solver's answer

def _pin(name: str, pin: str) -> FrameworkBuild:
    return FrameworkBuild(name, name.lower(), "1.0", checker="tensorflow", pins=(pin,))


def test_three_that_agree_pairwise_but_not_together_keep_each_need():
    """Pairwise every two share a version, all three none (PEP 440 ranges): the answer still names
    what each framework needs, and the plan lists them (the user picks one of the choices)."""
    fws = (_pin("A", "nvidia-cudnn-cu12>=9.1,<9.3"), _pin("B", "nvidia-cudnn-cu12>=9.2,<9.4"),
           _pin("C", "nvidia-cudnn-cu12>=9.1,<9.4,!=9.2.*"))
    sol = fixes.solve_cudnn(fws)
    assert sol.requirement is None
    assert [(n.framework, n.requirement) for n in sol.needs] == [
        ("A 1.0", "nvidia-cudnn-cu12>=9.1,<9.3"), ("B 1.0", "nvidia-cudnn-cu12>=9.2,<9.4"),
        ("C 1.0", "nvidia-cudnn-cu12>=9.1,!=9.2.*,<9.4")]
    p = fixes.plan("install-matching-cudnn", Report(frameworks=fws))
    assert not p.applicable
    assert p.reason == "no single cuDNN satisfies every framework: no single version satisfies A 1.0, B 1.0, C 1.0 together"
    assert [n.split(" (")[0] for n in p.notes] == ["A 1.0: nvidia-cudnn-cu12>=9.1,<9.3", "B 1.0: nvidia-cudnn-cu12>=9.2,<9.4",
                                                   "C 1.0: nvidia-cudnn-cu12>=9.1,!=9.2.*,<9.4"]
    assert [label for label, _ in p.choices] == ["Install nvidia-cudnn-cu12>=9.1,<9.3 (for A)",
                                                 "Install nvidia-cudnn-cu12>=9.2,<9.4 (for B)",
                                                 "Install nvidia-cudnn-cu12>=9.1,!=9.2.*,<9.4 (for C)"]


def test_no_framework_needing_cudnn_has_no_needs_and_no_choices():
    sol = fixes.solve_cudnn([FrameworkBuild("PyTorch", "torch", "2.9.1+cpu", checker="pytorch")])
    assert (sol.requirement, sol.needs, sol.conflicts, sol.choices) == (None, (), ("no installed framework needs cuDNN",), ())
