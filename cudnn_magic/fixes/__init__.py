"""Fix registry: preview exactly what a fix will do, apply it, undo it. No IPython, no widgets.

The package: :mod:`.catalogue` (the one table of fix ids), :mod:`.plans` (:func:`plan`, the
dispatch to a planner), :mod:`.planners`, :mod:`.advice` (advice-only plans and the fixes a
diagnosis offers), :mod:`.solver` (the one cuDNN requirement every framework accepts),
:mod:`.environment` (interpreter, pip, the running kernel's kernelspec), :mod:`.journal` (the
undo journal), :mod:`.applier` (:func:`apply`, :func:`undo`). The plan model
(:class:`FixPlan`, :class:`FixResult`, :class:`Step`) is :mod:`cudnn_magic.model.fixes`, its
rendering :mod:`cudnn_magic.render.fixes`. The names below are imported on first use, so
``import cudnn_magic.fixes.catalogue`` stays cheap.

Every fix is computed from live facts (the :class:`~cudnn_magic.model.Report`, this process's
environment, the kernelspec on disk), never from a template filled with text from a log:

* requirements are rebuilt from parsed, validated values (:class:`packaging.version.Version`,
  :class:`packaging.specifiers.SpecifierSet`, :class:`packaging.requirements.Requirement`)
  and distribution names are checked against ``environment._DIST_NAME``;
* commands are argument lists run without a shell, and only the kernel's own interpreter
  (``sys.executable``) is targeted;
* kernelspec edits are atomic (temporary file + ``os.replace``), keep a byte-for-byte backup
  (``kernel.json.cudnn-magic-backup-<timestamp>``), are recorded in an undo journal, and only
  ever touch the running kernel's own kernelspec.

Flow: :func:`plan` returns a :class:`FixPlan` (the preview, with every step spelled out);
:func:`apply` carries it out and returns a :class:`FixResult` (what was done, how to undo);
:func:`undo` reverts the last applied plan of a fix id from the journal.

Which kernelspec is "the running kernel's": the connection file jupyter_client writes holds
``kernel_name`` (``jupyter_client/connect.py`` ``write_connection_file``; the
``KernelManager`` passes its ``kernel_name``, and jupyter_server and nbclient use that manager),
and ipykernel knows its connection file (``ipykernel.connect.get_connection_file``). That name
is looked up with ``KernelSpecManager().find_kernel_specs()``. Without a name (a kernel started
by other tooling) the one kernelspec whose ``argv[0]`` is this interpreter is used, and none
when several match. Where the spec is ipykernel's built-in ``python3`` (served from the
package's ``resources`` folder, not a kernels directory) or read-only, a user-level copy is
written to ``JUPYTER_DATA_DIR/kernels/<name>/kernel.json`` when that folder comes earlier in
the kernelspec search path (so it wins); otherwise the fix is not applicable and says why.

Takes effect on a fresh start only: jupyter_client's ``KernelManager`` caches the spec it
started with (``manager.py`` ``kernel_spec`` property) and reuses its provisioner on restart
(``_async_pre_start_kernel``: "will not be None on restarts"), so "Restart Kernel" relaunches
with the environment computed at the first start. A kernelspec ``env`` change applies when the
kernel is shut down and started again (JupyterLab: Kernel > Shut Down Kernel, then pick the
kernel again), or in any new notebook. The previews say so.
"""


from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Public name -> the module of this package (or of the model) that defines it.
_HOMES = {
    "FIXES": ".catalogue", "DIAGNOSIS_WORDED": ".catalogue", "ADVICE_ONLY": ".catalogue", "CATALOGUE": ".catalogue",
    "FixSpec": ".catalogue",
    "FixPlan": "..model.fixes", "FixResult": "..model.fixes", "Step": "..model.fixes", "RESTART_NOTE": "..model.fixes",
    "plan": ".plans", "planner_for": ".plans",
    "apply": ".applier", "undo": ".applier", "FIX_ENV_VARIABLES": ".applier",
    "CudnnNeed": "..rules.requirement", "Solution": ".solver", "framework_need": "..rules.requirement", "solve_cudnn": ".solver",
    "witness": "..rules.requirement", "render_requirement": "..rules.requirement",
    "find_running_kernelspec": ".environment", "KernelSpecTarget": ".environment", "BACKUP_TAG": ".environment",
    "_writable": ".environment", "_is_bundled_native": ".environment",
    "JournalRefused": ".journal",
}

__all__ = [
    "FIXES",
    "CudnnNeed",
    "FixPlan",
    "FixResult",
    "Solution",
    "Step",
    "apply",
    "find_running_kernelspec",
    "framework_need",
    "plan",
    "solve_cudnn",
    "undo",
]


#: The package's modules, reachable as attributes (``fixes.environment``) before anything loaded them.
_SUBMODULES = frozenset({"advice", "applier", "catalogue", "environment", "journal", "planners", "plans", "solver"})



if TYPE_CHECKING:  # the names for type checkers and readers; at run time they load on first use (below)
    from ..model.fixes import RESTART_NOTE as RESTART_NOTE
    from ..model.fixes import FixPlan as FixPlan
    from ..model.fixes import FixResult as FixResult
    from ..model.fixes import Step as Step
    from ..rules.requirement import CudnnNeed as CudnnNeed
    from ..rules.requirement import framework_need as framework_need
    from ..rules.requirement import render_requirement as render_requirement
    from ..rules.requirement import witness as witness
    from .applier import FIX_ENV_VARIABLES as FIX_ENV_VARIABLES
    from .applier import apply as apply
    from .applier import undo as undo
    from .catalogue import ADVICE_ONLY as ADVICE_ONLY
    from .catalogue import CATALOGUE as CATALOGUE
    from .catalogue import DIAGNOSIS_WORDED as DIAGNOSIS_WORDED
    from .catalogue import FIXES as FIXES
    from .catalogue import FixSpec as FixSpec
    from .environment import BACKUP_TAG as BACKUP_TAG
    from .environment import KernelSpecTarget as KernelSpecTarget
    from .environment import _is_bundled_native as _is_bundled_native
    from .environment import _writable as _writable
    from .environment import find_running_kernelspec as find_running_kernelspec
    from .journal import JournalRefused as JournalRefused
    from .plans import plan as plan
    from .plans import planner_for as planner_for
    from .solver import Solution as Solution
    from .solver import solve_cudnn as solve_cudnn


if not TYPE_CHECKING:  # type checkers see the imports above; at run time names load on first use
    def __getattr__(name: str) -> Any:
        if name in _SUBMODULES:
            return importlib.import_module(f".{name}", __name__)
        home = _HOMES.get(name)
        if home is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        return getattr(importlib.import_module(home, __name__), name)

    def __dir__() -> list[str]:
        return sorted(set(globals()) | set(_HOMES))
