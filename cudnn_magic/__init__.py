"""cudnn-magic: see which cuDNN your kernel really loaded, why a cell failed, and how to fix it.

In a notebook::

    %load_ext cudnn_magic
    %cudnn_check

From Python (no IPython needed)::

    import cudnn_magic
    report = cudnn_magic.check()            # Report (cudnn_magic.model)
    diagnoses = cudnn_magic.explain(text)   # Diagnoses: list[Diagnosis], strongest first
    snapshot = cudnn_magic.gpu_memory()     # MemorySnapshot (bytes)
    result = cudnn_magic.what_if("torch==2.14.1")  # WhatIf (pip's dry run: nothing installed)
    saved = cudnn_magic.manifest()          # the verified stack as a JSON-ready dict

Importing this package imports neither IPython, ipywidgets, pynvml nor any framework: each
function below imports its engine (:mod:`cudnn_magic.engines`) when first called, and the
:mod:`cudnn_magic.shell` package is imported by :func:`load_ipython_extension` only. No
submodule of the package shares a name with these functions, so ``cudnn_magic.check`` stays the
function whatever was imported before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .model import display as _display
from .util.version import __version__

if TYPE_CHECKING:  # pragma: no cover
    from .model import Diagnoses, MemorySnapshot, Report, WhatIf
    from .probes.pip_report import PipError

__all__ = ["__version__", "check", "check_pid", "cluster_check", "explain", "gpu_memory", "load_ipython_extension",
           "manifest", "ray_check", "unload_ipython_extension", "what_if"]


def _load_renderer(cls: type) -> None:
    """Load the renderer of a result type on its first display (the render protocol of
    :mod:`cudnn_magic.model.display`); the model itself imports no renderer."""
    from .render import load_renderer  # the package imports nothing until used: `import cudnn_magic` stays free

    load_renderer(cls)


_display.set_loader(_load_renderer)


def check(import_frameworks: bool = False, deep: bool = False) -> Report:
    """Run every probe and return the :class:`~cudnn_magic.model.Report`.

    Args:
        import_frameworks: import installed frameworks for exact runtime answers (slow:
            ``import tensorflow`` alone takes seconds).
        deep: also load each on-disk cuDNN candidate in a child process.

    Never raises for environment problems; they appear in ``report.notes``.
    """
    from .engines.check import run_check  # the package imports nothing until used: `import cudnn_magic` stays free

    return run_check(import_frameworks=import_frameworks, deep=deep)


def explain(text: str | bytes, report: Report | None = None) -> Diagnoses:
    """Explain an error text or log (any mix of traceback and native log lines; ``str``, or the
    ``bytes`` of a log file).

    Returns a :class:`~cudnn_magic.model.Diagnoses` list, strongest first, that displays as an
    annotation in a notebook; empty when nothing is cuDNN-related, with ``.message`` saying so
    when the input is empty or binary (a shared library, an archive: not a log).
    """
    from .engines.diagnose import diagnose  # the package imports nothing until used: `import cudnn_magic` stays free
    from .model import Diagnoses
    from .util.textinput import describe

    info = describe(text if isinstance(text, (bytes, str)) else "")
    if info["kind"] != "text":
        return Diagnoses([], message=f"cudnn-magic: {info['detail']}: nothing to explain.")
    return Diagnoses(diagnose(exception="", log=text, report=report),
                     message="cudnn-magic: nothing cuDNN-related found in the text.")


def gpu_memory() -> MemorySnapshot:
    """One sample of every visible GPU's memory (bytes), via NVML. Never raises: with no
    driver, ``snapshot.error`` says why."""
    from .engines.memory import sample  # the package imports nothing until used: `import cudnn_magic` stays free

    return sample()


def cluster_check(client_or_address: Any, timeout: float = 30.0) -> Any:
    """Run the same probes on every worker of a Dask cluster (``dask.distributed.Client``,
    ``LocalCluster`` or scheduler address); ``timeout`` in seconds per worker.

    Returns a ``ClusterReport`` (one row per worker, values that differ from the majority
    marked). Raises ``cudnn_magic.engines.cluster.ClusterCheckError`` for bad input, an unreachable
    scheduler, or no Dask installed (``pip install 'cudnn-magic[dask]'``).
    """
    # the package imports nothing until used: `import cudnn_magic` stays free
    from .engines.cluster import cluster_check as _cluster_check

    return _cluster_check(client_or_address, timeout=timeout)


def ray_check(address: str | None = None, runtime_env: Any = None, timeout: float = 30.0) -> Any:
    """Run the same probes on every alive node of a Ray cluster, in the job's runtime environment:
    the cluster this process is connected to (``ray.init``; left connected), else ``address``
    (``auto``, ``ray://HOST:10001``, ``HOST:6379``; connected, checked and disconnected by a child
    process, so none of Ray's own output or threads stays here). ``runtime_env`` a dict, JSON text or
    a JSON/YAML file; ``timeout`` in seconds. An interrupt cancels the probe tasks before it propagates.

    Returns a ``ClusterReport`` (one row per node, values that differ from the majority, or with
    none from the head node, marked). Raises ``cudnn_magic.engines.cluster.ClusterCheckError`` for bad
    input, an unreachable cluster, or no Ray installed (``pip install 'cudnn-magic[ray]'``).
    """
    # the package imports nothing until used: `import cudnn_magic` stays free
    from .engines.cluster_ray import ray_check as _ray_check

    return _ray_check(address, runtime_env=runtime_env, timeout=timeout)


def check_pid(pid: int) -> Any:
    """The check of another running process, read from ``/proc/PID`` (nothing is injected into it).

    Returns a ``ProcessReport`` (``.report``: the usual report; ``.process``: what was read of the
    process; ``.to_json()``, ``.text()``). No code of the process runs here except its own proven
    CPython interpreter, isolated (``-I -S``), as its own user (docs/clusters.md). Raises
    ``cudnn_magic.engines.process.ProcessCheckError`` when the process exited, is a kernel thread,
    belongs to another user (without root), or kept replacing its program while it was read.
    """
    # the package imports nothing until used: `import cudnn_magic` stays free
    from .engines.process import check_process

    return check_process(pid)


def what_if(requirements: str, python: str | None = None) -> WhatIf | PipError:
    """Predict what ``pip install REQUIREMENTS`` (one string, as typed after ``pip install``:
    requirements and index options) would do to cuDNN in ``python``'s environment (default:
    this interpreter), with pip's own resolver (``pip install --dry-run --report``; pip 22.2 or
    newer). Nothing is installed.

    Returns a :class:`~cudnn_magic.model.WhatIf` (``.introduced``: the findings the install
    would add; ``.error``: a predicted finding is an error; ``.safer``: a requirement predicted
    error-free, or None), or a :class:`~cudnn_magic.probes.pip_report.PipError` (``.kind``,
    ``.message``: an unparsable requirement, pip too old, no index, a resolver conflict).
    Never raises.
    """
    # the package imports nothing until used: `import cudnn_magic` stays free
    from .engines.whatif import what_if as _what_if

    return _what_if(requirements, python)


def manifest() -> dict[str, Any]:
    """The verified GPU stack of this process as a manifest (the JSON-ready dict that
    ``cudnn-magic manifest`` writes; keys in docs/json.md): driver, GPUs, each main
    cuDNN library with its SHA-256, frameworks with their verdicts, the tracked distributions'
    versions, and the findings. Runs a check (as slow as :func:`check`). Never raises for what
    it cannot read (an unreadable library gets ``"sha256": None``).
    """
    # the package imports nothing until used: `import cudnn_magic` stays free
    from .engines.manifest import live_manifest

    return live_manifest()[0]


def load_ipython_extension(ip: Any) -> None:
    """Called by ``%load_ext cudnn_magic``: register the magics and turn on annotation."""
    from .shell.extension import load  # the package imports nothing until used: `import cudnn_magic` stays free

    load(ip)


def unload_ipython_extension(ip: Any) -> None:
    """Called by ``%unload_ext cudnn_magic``: undo everything ``load_ipython_extension`` did."""
    from .shell.extension import unload  # the package imports nothing until used: `import cudnn_magic` stays free

    unload(ip)
