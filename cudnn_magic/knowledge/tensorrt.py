"""Family "tensorrt": TensorRT's own cuDNN checks, through every program that embeds it.

TensorRT compares the cuDNN it loaded with the one it was linked against and logs the difference
as a *warning*; it does not stop (NVIDIA's answer on the TensorRT tracker: "This is a warning and
you can ignore it", https://github.com/NVIDIA/TensorRT/issues/3534). It opens ``libcudnn.so.<major>``
by soname, so the major always agrees and only the minor/patch differ; the copy it gets is often
the one another library mapped first (PyTorch's, under torch2trt and Torch-TensorRT: "we typically
default to PyTorch's cuDNN choice", https://github.com/pytorch/TensorRT/issues/2028). A loaded copy
*older* than the linked one may lack kernels or functions TensorRT's cuDNN tactics call (TensorRT 5:
"This mismatch may potentially cause undefined behavior"); a *newer* one of the same major is
normally fine (cuDNN minor releases are backward compatible from cuDNN 7 on). TensorRT 8.6 made
cuDNN an optional tactic source and TensorRT 10 turns it off by default, so there the warning is
about the plugins that still use cuDNN. Catalogue id ``cudnn-version-mismatch``. Wordings, by era
and the logger that prints them:

* TensorRT 5.1 (2019): ``WARNING: TensorRT was compiled against cuDNN 7.5.0 but is linked against
  cuDNN 7.0.5. This mismatch may potentially cause undefined behavior.``
* TensorRT 6-10: ``TensorRT was linked against cuDNN 8.9.0 but loaded cuDNN 8.7.0`` behind each
  logger's prefix: ``[TensorRT] WARNING:`` (Python API <= 7), ``[W] [TRT]`` (trtexec, samples),
  ``[TRT] [W]`` (Python API >= 8, the Stable Diffusion web UI TensorRT extension),
  ``[TensorRT-LLM][WARNING]``, ``TF-TRT Warning: DefaultLogger`` (TensorFlow's trt_logger.cc),
  Triton's ``logging.cc``, mmdeploy's ``TRTNet:``, or bare (tensorrtx, torch2trt).
* Its cuDNN initialization failing: ``safeContext.cpp (124) - Cudnn Error in
  initializeCommonContext: 1 (Could not initialize cudnn, please check cudnn installation.)``
  (``cudnn-init-failed``).

Not cuDNN, though worded alike: ``TensorRT was linked against cuBLAS/cuBLAS LT 11.6.3 but loaded
cuBLAS/cuBLAS LT 11.5.1``, and Myelin's ``Compiled against cuDNN 11.4.1.0 but running against
cuDNN 11.2.1.0`` of TensorRT 8.0-8.2, whose numbers are cuBLASLt releases (no cuDNN 10 or 11
exists; later releases say ``cuBLASLt``, https://github.com/NVIDIA/TensorRT/issues/2580).
"""

from __future__ import annotations

from ..rules.cudnn_version import try_parse
from .signature import sig

_V = r"\d{1,2}(?:\.\d{1,4}){1,3}"


def _side(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """Which side is older decides the weight: an older loaded copy is the risk TensorRT warns of;
    a newer one of the same major is a difference it tolerates (still the mismatch kind)."""
    loaded, linked = try_parse(groups.get("loaded", "")), try_parse(groups.get("compiled", ""))
    if loaded is None or linked is None:
        return None
    if loaded.major != linked.major:
        return "cudnn-version-mismatch", 95.0
    if (loaded.minor or 0, loaded.patch or 0) < (linked.minor or 0, linked.patch or 0):
        return "cudnn-version-mismatch", 90.0
    return "cudnn-version-mismatch", 72.0


def _myelin(groups: dict[str, str], line: str) -> tuple[str | None, float] | None:
    """Myelin of TensorRT 8.0-8.2 calls cuBLASLt "cuDNN": a major of 10 or more is no cuDNN."""
    v = try_parse(groups.get("compiled", "")) or try_parse(groups.get("loaded", ""))
    if v is None or v.major >= 10:
        return (None, 0.0)
    return _side(groups, line)


SUMMARY = (
    "TensorRT compares the cuDNN it loaded with the one it was linked against and only logs a "
    "warning: it goes on with the copy it got. It opens libcudnn by its major's soname, so the "
    "copy is often the one another library (PyTorch, TensorFlow, a system cuDNN on the library "
    "path) mapped first. An older copy than the linked one may lack kernels or functions "
    "TensorRT's cuDNN tactics and plugins call; a newer one of the same major is normally fine "
    "(cuDNN minor releases are backward compatible from 7 on). TensorRT 8.6 made cuDNN an "
    "optional tactic source and TensorRT 10 leaves it off by default."
)

SIGNATURES = (
    sig(
        "tensorrt-linked-but-loaded", "cudnn-version-mismatch", "tensorrt",
        ["against cudnn"],
        [rf"TensorRT was linked against cuDNN (?P<compiled>{_V}) but loaded cuDNN (?P<loaded>{_V})",
         rf"TensorRT was compiled against cuDNN (?P<compiled>{_V}) but is linked against cuDNN (?P<loaded>{_V})"],
        90.0, refine=_side, framework="TensorRT",
        title="TensorRT loaded cuDNN {loaded}, {age} the {compiled} it was linked against "
              "(TensorRT only warns and goes on)",
        title_plain="TensorRT loaded another cuDNN than the one it was linked against (TensorRT only warns)",
        summary=SUMMARY, fixes=("install-matching-cudnn", "import-order", "remove-shadowing-dir"),
        source="TensorRT logger (5.1: 'compiled against cuDNN X but is linked against cuDNN Y'; 6-10: "
               "'linked against cuDNN X but loaded cuDNN Y')",
    ),
    sig(
        "tensorrt-myelin-compiled-against", "cudnn-version-mismatch", "tensorrt",
        ["against cudnn"],
        [rf"Compiled against cuDNN (?P<compiled>{_V}) but running against cuDNN (?P<loaded>{_V})"],
        88.0, refine=_myelin, framework="TensorRT",
        title="TensorRT's Myelin runs against cuDNN {loaded}, {age} the {compiled} it was compiled against",
        title_plain="TensorRT's Myelin runs against another cuDNN than it was compiled against",
        summary=SUMMARY, fixes=("install-matching-cudnn", "import-order", "remove-shadowing-dir"),
        source="TensorRT 8.0-8.2 Myelin graph context ('Error Code 1: Myelin (Compiled against cuDNN X "
               "but running against cuDNN Y.)'; its numbers are cuBLASLt's when the major is 10 or more)",
    ),
    sig(
        "tensorrt-could-not-initialize-cudnn", "cudnn-init-failed", "tensorrt",
        ["cudnn error"],
        [r"Cudnn Error in (?P<call>\w{1,60}):\s{0,2}(?P<status_code>\d{1,4})\s{0,2}\(Could not initialize cudnn",
         r"Could not initialize cudnn, please check cudnn installation"],
        70.0, framework="TensorRT",
        title_plain="TensorRT could not initialize cuDNN (Could not initialize cudnn, please check cudnn installation)",
        summary="TensorRT's cuDNN handle could not be created: usually a cuDNN other than the one TensorRT "
                "was linked against was loaded (look for TensorRT's 'linked against cuDNN X but loaded cuDNN "
                "Y' warning above), or no usable cuDNN, or GPU memory already taken.",
        fixes=("install-matching-cudnn", "remove-shadowing-dir", "restart-kernel"),
        source="TensorRT rtSafe/safeContext.cpp ('Cudnn Error in initializeCommonContext: 1 (Could not "
               "initialize cudnn, please check cudnn installation.)')",
    ),
)
