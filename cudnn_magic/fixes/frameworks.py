"""Which framework raised, and which fixes are for its users: a TensorFlow snippet is no advice
for a PyTorch error.

Pure: text in, names out; no IPython, no probes. Two questions:

* :func:`raising_framework`: the framework whose code raised, read from the error itself, in
  this order: the exception's qualified type on the traceback's last line
  (``traceback.format_exception`` writes ``torch.OutOfMemoryError``,
  ``jaxlib.xla_extension.XlaRuntimeError``, ``tensorflow.python.framework.errors_impl.InternalError``;
  builtins such as PyTorch's ``RuntimeError`` carry no module), then the innermost frame inside a
  framework's package (``.../site-packages/torch/nn/modules/conv.py``; Keras 3 frames under
  ``keras/src/backend/<name>/`` name their backend), then the words of the message, traceback and
  the two ends of the log, as before.
* :func:`in_play`: the frameworks a fix is chosen for: the one that raised; else, with live
  facts, the frameworks installed (:attr:`~cudnn_magic.model.Report.frameworks`); else None
  (``cudnn-magic explain`` of a pasted log that names none: every fix may fit).
"""

from __future__ import annotations

import re
from typing import Any

#: the frameworks whose fixes differ (the ``framework`` words of the knowledge tables)
TENSORFLOW, PYTORCH, JAX = "TensorFlow", "PyTorch", "JAX"
#: what the diagnosis says for an XLA line that names neither TensorFlow nor JAX
XLA_EITHER = "TensorFlow/JAX (XLA)"

_PACKAGES = {"torch": PYTORCH, "torchvision": PYTORCH, "torchaudio": PYTORCH, "tensorflow": TENSORFLOW,
             "tf_keras": TENSORFLOW, "jax": JAX, "jaxlib": JAX, "flax": JAX, "optax": JAX}
_QUALIFIED_TYPE = re.compile(r"^(torch|tensorflow|jaxlib|jax|tf_keras)\.[\w.]{0,200}?(?:Error|Exception|Exhausted)\b",
                             re.MULTILINE)
_FRAME = re.compile(r"[/\\](torch|torchvision|torchaudio|tensorflow|tf_keras|jaxlib|jax|flax|optax|keras)[/\\]"
                    r"(?:src[/\\]backend[/\\](torch|jax|tensorflow)[/\\])?")
_BACKENDS = {"torch": PYTORCH, "jax": JAX, "tensorflow": TENSORFLOW}


def raising_framework(exception: str, traceback: str, log: str) -> str:
    """The framework that raised: "TensorFlow", "PyTorch", "JAX", or "" when nothing says.

    Args:
        exception: "Type: message" (``str(exc)`` with its type name).
        traceback: the formatted Python traceback (``traceback.format_exception``), or "".
        log: native stderr of the cell, or a pasted log ("" when none); only its two ends
            (64 KiB each) are read.
    """
    tail = traceback[-4096:]
    lines = [ln.strip() for ln in tail.splitlines() if ln.strip()]
    for text in (lines[-1] if lines else "", exception[:300]):
        m = _QUALIFIED_TYPE.search(text)
        if m:
            return _PACKAGES[m.group(1)]
    frames = list(_FRAME.finditer(traceback[-100_000:]))
    if frames:
        backends = [m.group(2) for m in frames if m.group(2)]
        last = frames[-1]
        if last.group(1) != "keras":
            return _PACKAGES[last.group(1)]
        if backends:  # Keras 3 runs on the backend its frames name
            return _BACKENDS[backends[-1]]
        said = exception[:2000].lower()  # Keras 3 re-raises the backend's error with its words
        if "pytorch" in said or "torch." in said:
            return PYTORCH
        if "xlaruntimeerror" in said or "jaxlib" in said:
            return JAX
        return TENSORFLOW  # Keras 2 (or Keras 3's default backend)
    small = (exception[:100_000] + "\n" + traceback[-100_000:]).lower()
    ends = (log[:65_536] + "\n" + log[-65_536:]).lower()
    for text in (small, ends):
        if "xlaruntimeerror" in text or "jaxlib" in text or "jax." in text or "jax_" in text or "/jax/" in text:
            return JAX
        if "tensorflow" in text or "keras" in text:
            return TENSORFLOW
        if "torch" in text:
            return PYTORCH
    return ""


def in_play(framework: str, report: Any = None) -> frozenset[str] | None:
    """The frameworks fixes are chosen for.

    Args:
        framework: the diagnosis's framework ("PyTorch", "TensorFlow/JAX (XLA)", "" ...).
        report: live facts (a :class:`~cudnn_magic.model.Report`) or None.

    Returns:
        The framework that raised (both for an XLA line that names neither); else the
        TensorFlow/PyTorch/JAX builds the report lists; else None: unknown, any fix may fit.
    """
    if framework in (TENSORFLOW, PYTORCH, JAX):
        return frozenset({framework})
    if framework == XLA_EITHER:
        return frozenset({TENSORFLOW, JAX})
    builds = getattr(report, "frameworks", None) or ()
    if not builds:
        return None
    return frozenset(b.name for b in builds if b.name in (TENSORFLOW, PYTORCH, JAX))


def fits(for_frameworks: tuple[str, ...], play: frozenset[str] | None) -> bool:
    """True when a fix meant for ``for_frameworks`` (empty: any) fits the frameworks in play."""
    return not for_frameworks or play is None or bool(play & set(for_frameworks))


__all__ = ["JAX", "PYTORCH", "TENSORFLOW", "XLA_EITHER", "fits", "in_play", "raising_framework"]
