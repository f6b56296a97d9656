"""Apply a plan and undo it: the only code of the registry that changes anything (runs pip,
edits a kernelspec, sets this process's environment, restarts the kernel), each change recorded
in the undo journal (:mod:`cudnn_magic.fixes.journal`) first."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from typing import Any, Callable

from packaging.version import InvalidVersion, Version

from ..model.fixes import FixPlan, FixResult, Step
from ..rules.requirement import _CUDNN_DIST
from ..util.files import file_lock
from ..util.kernelinfo import kernel_app as _kernel_app
from .environment import BACKUP_TAG, _load_spec, _python
from .journal import (
    _BACKUP_NAME,
    _CREATED_NAME,
    _NOFOLLOW,
    JournalRefused,
    _atomic_write,
    _journal_load,
    _journal_locked,
    _journal_path,
    _journal_pop,
    _journal_push,
    _journal_save,
    _lock_path,
    _read_or_none,
    _read_regular,
)

# The undo journal (``<state dir>/undo.json``) is a file on disk that anything running as the
# user can write, so undo trusts nothing in it. It re-derives what it may do and refuses the
# rest, each with a message that says why:
#
# * kernelspec records: only the ``kernel.json`` of a kernelspec jupyter_client knows now
#   (``KernelSpecManager().find_kernel_specs()``) or, for a shell whose JUPYTER_* variables differ
#   from the server's, one that still lies, holding a kernelspec (a JSON object with an ``argv``
#   list), in the kernels folder the record names (``kernel_dir``: where the fix wrote it), only
#   if the file is byte-for-byte what the
#   fix wrote, only from a backup named exactly ``kernel.json.cudnn-magic-backup-<stamp>`` in the
#   same folder (opened with ``O_NOFOLLOW`` relative to that folder), and only when the backup
#   differs from the file in nothing but the ``env`` variables that fix sets
#   (:data:`FIX_ENV_VARIABLES`); a copy the fix created is removed only from the user's own
#   kernels folder, with the files it names there;
# * environ records: only a variable that fix sets, only in the process that set it, from that
#   process's memory (never a value read from the journal);
# * pip records: only ``nvidia-cudnn-cuNN`` with a valid version, only with this interpreter or
#   one a kernelspec jupyter_client knows runs (``argv[0]``, resolved as jupyter_client does).
#
# Read-modify-write of a ``kernel.json`` and of the journal happens under an ``fcntl.flock`` on a
# lock file beside it (``.kernel.json.cudnn-magic-lock``, ``.undo.json.cudnn-magic-lock``); an
# apply that finds the file changed since its preview (another kernel applied a fix meanwhile)
# fails and changes nothing. Everything here is one unit: the journal, apply and undo.

FIX_ENV_VARIABLES: dict[str, frozenset[str]] = {
    "remove-shadowing-dir": frozenset({"LD_LIBRARY_PATH"}),
    "allow-memory-growth": frozenset({"TF_FORCE_GPU_ALLOW_GROWTH", "XLA_PYTHON_CLIENT_PREALLOCATE"}),
}


_PIP_FIXES = frozenset({"install-matching-cudnn"})


_ENV_APPLIED: dict[str, list[tuple[str, str | None, str | None]]] = {}




def _write_new(path: str, data: bytes, mode: int) -> None:
    """Create ``path`` with ``data``: ``O_CREAT | O_EXCL | O_NOFOLLOW`` (never through a link,
    never over an existing file). Raises FileExistsError."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    os.close(fd)


def _kernelspec_target(kp: dict[str, Any]) -> tuple[str, bool]:
    """The kernel.json a plan writes (absolute) and whether its folder had to be created (a
    new user-level copy); the folder exists afterwards, for the lock file."""
    path = os.path.normpath(os.path.abspath(kp["path"]))
    d = os.path.dirname(path)
    if kp["expect_sha256"] is None and not os.path.isdir(d):
        os.makedirs(d)
        return path, True
    return path, False


def _check_unchanged(path: str, expect: str | None) -> None:
    """Raise unless ``path`` is still what the preview read (call with its lock held)."""
    current = _read_or_none(path)
    if (hashlib.sha256(current).hexdigest() if current is not None else None) != expect:
        raise RuntimeError(f"{path} changed since the preview (another kernel or program edited it, perhaps "
                           "applying a fix at the same time); nothing was changed: preview the fix again")


def _apply_kernelspec(kp: dict[str, Any], created_dir: bool = False) -> dict[str, Any]:
    """Write the kernelspec edit of a plan (call with the file's lock held, see :func:`apply`):
    only if the file is still what the preview read (else nothing changes and the error says
    so), with a byte-for-byte backup created exclusively beside it."""
    path = os.path.normpath(os.path.abspath(kp["path"]))
    d = os.path.dirname(path)
    _check_unchanged(path, kp["expect_sha256"])
    after = hashlib.sha256(kp["new"]).hexdigest()
    if kp["expect_sha256"] is None:  # a new user-level copy
        src = kp.get("copy_from")
        copied: list[str] = []
        if src and os.path.isdir(src):
            for n in sorted(os.listdir(src)):
                if n.startswith("logo-") and _CREATED_NAME.match(n):
                    try:
                        data, _mode = _read_regular(os.path.join(src, n))
                        _write_new(os.path.join(d, n), data, 0o644)
                        copied.append(os.path.join(d, n))
                    except OSError:
                        continue  # a logo is a bonus
        _atomic_write(path, kp["new"], 0o644)
        return {"kind": "kernelspec", "path": path, "backup": None, "created": [path, *copied],
                "created_dir": d if created_dir else None, "after_sha256": after, "kernel_dir": os.path.dirname(d)}
    current, mode = _read_regular(path)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path + BACKUP_TAG + stamp
    for i in range(1, 10000):
        try:
            _write_new(backup, current, mode)
            break
        except FileExistsError:
            backup = f"{path}{BACKUP_TAG}{stamp}-{i}"
    else:
        raise RuntimeError(f"no free backup name beside {path}")
    _atomic_write(path, kp["new"], mode)
    return {"kind": "kernelspec", "path": path, "backup": backup, "after_sha256": after, "kernel_dir": os.path.dirname(d)}


def _run(argv: tuple[str, ...], stream: Callable[[str], None] | None, output: list[str]) -> int:
    env = dict(os.environ, PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONUNBUFFERED="1", PIP_NO_INPUT="1")
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, bufsize=1, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        line = line.rstrip("\n")
        output.append(line)
        if stream is not None:
            try:
                stream(line)
            except Exception:  # noqa: BLE001 - a display callback never stops the install
                pass
    return proc.wait()


def apply(p: FixPlan, *, stream: Callable[[str], None] | None = None) -> FixResult:
    """Carry out an applicable plan and record how to undo it. Never raises.

    Args:
        p: from :func:`plan` (preview it first).
        stream: called with each line a command prints, as it prints it (pip's output).

    Returns:
        :class:`FixResult`; ``ok`` False with ``error`` when a step failed (steps already done
        stay recorded, so ``undo`` still reverts them), when the kernelspec changed since the
        preview (another kernel applied a fix meanwhile: nothing is changed), or when the undo
        journal cannot be written (the kernelspec edit is then rolled back).
    """
    if not p.applicable:
        return FixResult(p.fix_id, False, error=f"not applicable: {p.reason}")

    done: list[str] = []
    output: list[str] = []
    records: list[dict[str, Any]] = []
    error: str | None = None
    created_dir = False
    kp = p.payload.get("kernelspec") if any(s.kind == "kernelspec" for s in p.steps) else None
    with contextlib.ExitStack() as held:
        if kp is not None:
            # the kernel.json stays locked for the whole apply, and is checked before any step:
            # a conflict (another kernel applied a fix meanwhile) changes nothing at all
            try:
                path, created_dir = _kernelspec_target(kp)
                held.enter_context(file_lock(_lock_path(path), path))
                _check_unchanged(path, kp["expect_sha256"])
            except Exception as exc:  # noqa: BLE001
                return FixResult(p.fix_id, False, error=f"{type(exc).__name__}: {exc}")
        try:
            for s in p.steps:
                _carry_out(p, s, stream=stream, done=done, output=output, records=records, created_dir=created_dir)
        except Exception as exc:  # noqa: BLE001
            error = f"{type(exc).__name__}: {exc}"
        if records:
            try:
                _journal_push(p.fix_id, records)
            except Exception as exc:  # noqa: BLE001 - the change must not stay unrecorded
                held.close()  # (undoing a kernelspec edit takes its lock again)
                undone = _roll_back(p.fix_id, records)
                error = (f"the undo journal could not be written ({exc}); {undone}"
                         + (f". Also: {error}" if error else ""))
                return FixResult(p.fix_id, False, tuple(done), tuple(output), error, "", p.restart_required)
    hint = f"%cudnn_fix --undo {p.fix_id}" if records else ""
    return FixResult(p.fix_id, error is None, tuple(done), tuple(output), error, hint, p.restart_required,
                     fresh_start=any(s.kind == "kernelspec" for s in p.steps))


def _carry_out(p: FixPlan, s: Step, *, stream: Callable[[str], None] | None, done: list[str], output: list[str],
               records: list[dict[str, Any]], created_dir: bool) -> None:
    """Carry out one step of an applicable plan: adds a line per change to ``done`` and how to
    undo it to ``records`` as each change is made (a step that fails midway keeps what it did).
    Raises ``RuntimeError`` for a refused or failed step."""
    if s.kind == "run":
        _run_step(p, s, stream, done, output, records)
    elif s.kind == "set-env":
        _set_env_step(p, s, done, records)
    elif s.kind == "kernelspec":
        rec = _apply_kernelspec(p.payload["kernelspec"], created_dir)
        records.append(rec)
        done.append(f"wrote {rec['path']}" + (f" (backup {rec['backup']})" if rec.get("backup") else " (new)"))
    elif s.kind == "call" and p.payload.get("tf_call"):
        msg = _tf_memory_growth()
        done.append("tf.config.experimental.set_memory_growth(gpu, True) for every GPU" if msg is None
                    else f"TensorFlow: {msg}; the kernelspec env applies at the next start")
    elif s.kind == "restart" and p.fix_id == "restart-kernel":
        _schedule_exit()
        done.append("the kernel stops in a moment; the front end restarts it")


def _run_step(p: FixPlan, s: Step, stream: Callable[[str], None] | None, done: list[str], output: list[str],
              records: list[dict[str, Any]]) -> None:
    """A ``run`` step: only the kernel's own interpreter is run (pip, for a pip fix)."""
    if not s.argv or s.argv[0] != _python(p.context):
        raise RuntimeError("refusing to run a command that is not the kernel's own interpreter")
    rc = _run(s.argv, stream, output)
    if rc != 0:
        raise RuntimeError(f"{' '.join(s.argv[1:4])} exited with status {rc}")
    done.append("ran " + " ".join(shlex.quote(a) for a in s.argv))
    if p.fix_id == "install-matching-cudnn":
        records.append({"kind": "pip", "python": p.payload["python"], "package": p.payload["package"],
                        "previous": p.payload["previous"]})


def _set_env_step(p: FixPlan, s: Step, done: list[str], records: list[dict[str, Any]]) -> None:
    """A ``set-env`` step: only the variables the fix id may set (:data:`FIX_ENV_VARIABLES`), in
    this kernel's environment; ``None`` unsets one."""
    for k, v in s.env:
        if k not in FIX_ENV_VARIABLES.get(p.fix_id, ()):
            raise RuntimeError(f"{p.fix_id} does not set {k}; refusing")
        prev = os.environ.get(k)
        records.append({"kind": "environ", "name": k, "pid": os.getpid()})
        _ENV_APPLIED.setdefault(p.fix_id, []).append((k, prev, v))
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
        done.append(f"set {k}={v} in this kernel")


def _roll_back(fix_id: str, records: list[dict[str, Any]]) -> str:
    """Undo what an apply did when its journal entry could not be written (best effort)."""
    said = []
    for rec in reversed(records):
        try:
            if rec.get("kind") == "pip":
                said.append(f"{rec['package']} stays installed (undo it with {rec['python']} -m pip "
                            + (f"install {rec['package']}=={rec['previous']})" if rec.get("previous")
                               else f"uninstall {rec['package']})"))
            else:
                said.append(_undo_record(fix_id, rec, []))
        except Exception as exc:  # noqa: BLE001
            said.append(f"could not roll back {rec.get('kind')}: {exc}")
    return "rolled back: " + "; ".join(said) if said else "nothing to roll back"


def _tf_memory_growth() -> str | None:
    """set_memory_growth on every GPU; None on success, else why not (already initialized)."""
    tf = sys.modules.get("tensorflow")
    if tf is None:
        return "TensorFlow is not imported"
    try:
        for gpu in tf.config.list_physical_devices("GPU"):
            tf.config.experimental.set_memory_growth(gpu, True)
    except RuntimeError as exc:  # "Physical devices cannot be modified after being initialized"
        return f"GPUs already initialized ({exc})"
    return None


def _schedule_exit(delay_s: float = 0.5, hard_after_s: float = 5.0) -> None:
    """Stop this kernel after ``delay_s`` seconds (after the current reply is sent): stop the
    kernel's IO loop (a clean exit, atexit handlers run), and ``os._exit(0)`` after
    ``hard_after_s`` more seconds if the process is still alive. The Jupyter server's
    KernelRestarter sees the process gone and restarts it with the same connection file
    (jupyter_client ``restarter.py`` ``poll``)."""
    app = _kernel_app()

    def go() -> None:
        time.sleep(delay_s)
        for s in (sys.stdout, sys.stderr):
            try:
                s.flush()
            except Exception:  # noqa: BLE001
                pass
        try:
            kernel = getattr(app, "kernel", None)
            loop = getattr(kernel, "io_loop", None)
            if loop is not None:
                loop.add_callback(loop.stop)
        except Exception:  # noqa: BLE001
            pass
        time.sleep(hard_after_s)
        os._exit(0)

    threading.Thread(target=go, name="cudnn-magic-restart", daemon=True).start()


def undo(fix_id: str) -> FixResult:
    """Revert the last applied plan of ``fix_id`` from the journal (newest record first).
    Never raises.

    Nothing in the journal is trusted (see the comment above :data:`FIX_ENV_VARIABLES`): a
    record that asks for anything the fix never does is refused with the reason, and nothing
    is touched. Kernelspec edits are restored byte-for-byte from the backup (or the created
    copy is removed), unless the file changed since the fix: then nothing is touched and the
    error names the backup. pip installs are reverted by reinstalling the previous version (or
    uninstalling when there was none), with the same interpreter. A record that could not be
    undone goes back into the journal.
    """
    try:
        entry = _journal_pop(fix_id)
    except Exception as exc:  # noqa: BLE001 - a broken journal, or another process holding it
        return FixResult(fix_id, False, error=str(exc))
    if entry is None:
        return FixResult(fix_id, False, error=f"nothing to undo for {fix_id}")
    records = entry.get("records")
    records = list(records) if isinstance(records, list) else []
    done: list[str] = []
    output: list[str] = []
    while records:
        rec = records[-1]
        try:
            done.append(_undo_record(fix_id, rec, output))
        except Exception as exc:  # noqa: BLE001
            entry["records"] = records
            try:
                with _journal_locked():
                    data = _journal_load()
                    stack = data.get(fix_id)
                    if not isinstance(stack, list):
                        stack = data[fix_id] = []
                    stack.append(entry)
                    _journal_save(data)
            except Exception:  # noqa: BLE001
                pass
            msg = str(exc) if isinstance(exc, JournalRefused) else f"{type(exc).__name__}: {exc}"
            return FixResult(fix_id, False, tuple(done), tuple(output), msg)
        records.pop()
    return FixResult(fix_id, True, tuple(done), tuple(output), restart_required=True,
                     fresh_start=any(isinstance(r, dict) and r.get("kind") == "kernelspec"
                                     for r in (entry.get("records") or []) if isinstance(entry.get("records"), list)))


def _refuse(why: str) -> JournalRefused:
    return JournalRefused(f"refused a record of the undo journal {_journal_path()}: {why}; nothing was touched")


def _undo_record(fix_id: str, rec: Any, output: list[str]) -> str:
    if not isinstance(rec, dict):
        raise _refuse("a record that is not a JSON object")
    kind = rec.get("kind")
    if kind == "kernelspec":
        return _undo_kernelspec(fix_id, rec)
    if kind == "environ":
        return _undo_environ(fix_id, rec)
    if kind == "pip":
        return _undo_pip(fix_id, rec, output)
    raise _refuse(f"unknown record kind {kind!r}")


def _known_kernel_jsons() -> dict[str, str]:
    """``{kernel.json path: kernelspec name}`` of every kernelspec jupyter_client finds now."""
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception as exc:  # noqa: BLE001
        raise _refuse(f"the kernelspecs cannot be listed ({exc})") from None
    return {os.path.normpath(os.path.abspath(os.path.join(d, "kernel.json"))): n for n, d in specs.items()}


def _in_recorded_kernel_dir(norm: str, kernel_dir: Any) -> bool:
    """``norm`` is ``<kernel_dir>/<name>/kernel.json`` and holds a kernelspec (a JSON object with
    an ``argv`` list): a kernelspec the server's jupyter_client knew when the fix wrote it, which
    this shell's does not list (other JUPYTER_PATH/JUPYTER_DATA_DIR)."""
    if not isinstance(kernel_dir, str) or "\0" in kernel_dir or os.path.basename(norm) != "kernel.json":
        return False
    if os.path.normpath(os.path.abspath(kernel_dir)) != os.path.dirname(os.path.dirname(norm)):
        return False
    try:
        spec = json.loads(_read_regular(norm)[0].decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return isinstance(spec, dict) and isinstance(spec.get("argv"), list) and bool(spec["argv"])


def _undo_kernelspec(fix_id: str, rec: dict[str, Any]) -> str:
    allowed = FIX_ENV_VARIABLES.get(fix_id)
    if not allowed:
        raise _refuse(f"{fix_id} never edits a kernelspec")
    path = rec.get("path")
    if not isinstance(path, str) or "\0" in path:
        raise _refuse("a kernelspec record without a path")
    norm = os.path.normpath(os.path.abspath(path))
    known = _known_kernel_jsons()
    if norm not in known and not _in_recorded_kernel_dir(norm, rec.get("kernel_dir")):
        raise _refuse(f"{path!r} is not the kernel.json of a kernelspec jupyter_client knows "
                      f"({', '.join(sorted(set(known.values()))) or 'none'}; see `jupyter kernelspec list`)")
    kdir = os.path.dirname(norm)
    backup = rec.get("backup")
    if backup is not None:
        name = os.path.basename(backup) if isinstance(backup, str) else ""
        if (not _BACKUP_NAME.match(name) or "\0" in backup
                or os.path.normpath(os.path.abspath(backup)) != os.path.join(kdir, name)):
            raise _refuse(f"the backup {backup!r} is not a kernel.json.cudnn-magic-backup-<stamp> file beside {norm}")
    with file_lock(_lock_path(norm), norm):
        try:
            current, _mode = _read_regular(norm)
        except FileNotFoundError:
            raise RuntimeError(f"{norm} no longer exists; not touching anything") from None
        if hashlib.sha256(current).hexdigest() != rec.get("after_sha256"):
            raise RuntimeError(f"{norm} changed since the fix; not touching it. Backup: "
                               f"{backup or '(none: the file was created by the fix)'}")
        if backup is None:
            return _remove_created_copy(fix_id, rec, norm, kdir)
        dfd = os.open(kdir, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
        try:
            try:
                old, old_mode = _read_regular(name, dir_fd=dfd)
            except OSError as exc:
                raise _refuse(f"the backup {name} beside {norm} cannot be read as a regular file ({exc})") from None
            changed = _env_difference(old, current)
            if changed is None:
                raise _refuse(f"the backup {name} differs from {norm} outside its env (or is not a kernelspec)")
            if not changed <= allowed:
                raise _refuse(f"the backup {name} differs from {norm} in {', '.join(sorted(changed - allowed))}, "
                              f"which {fix_id} never sets (it sets {', '.join(sorted(allowed))})")
            _atomic_write(norm, old, old_mode)
            os.unlink(name, dir_fd=dfd)
        finally:
            os.close(dfd)
    return f"restored {norm} from {os.path.join(kdir, name)}"


def _env_difference(before: bytes, after: bytes) -> set[str] | None:
    """The ``env`` variables that differ between two kernelspecs, or ``None`` when anything
    else differs (or either is not a JSON object)."""
    try:
        a, b = json.loads(before.decode("utf-8")), json.loads(after.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(a, dict) or not isinstance(b, dict):
        return None
    if {k: v for k, v in a.items() if k != "env"} != {k: v for k, v in b.items() if k != "env"}:
        return None
    ea = e if isinstance(e := a.get("env"), dict) else {}
    eb = e if isinstance(e := b.get("env"), dict) else {}
    return {k for k in set(ea) | set(eb) if ea.get(k) != eb.get(k)}


def _remove_created_copy(fix_id: str, rec: dict[str, Any], norm: str, kdir: str) -> str:
    """Undo a user-level kernelspec copy the fix created: only in the user's own kernels
    folder, only the files the record names there (``kernel.json``, ``logo-*``)."""
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_core.paths import jupyter_data_dir

        user_kernels = os.path.normpath(os.path.abspath(os.path.join(jupyter_data_dir(), "kernels")))
    except Exception as exc:  # noqa: BLE001
        raise _refuse(f"the user's kernels folder is unknown ({exc})") from None
    if os.path.dirname(kdir) != user_kernels:
        raise _refuse(f"{norm} has no backup, but it is not a copy in {user_kernels} (the only place the fix creates one)")
    created = rec.get("created")
    names = []
    for f in created if isinstance(created, list) else []:
        n = os.path.basename(f) if isinstance(f, str) else ""
        if not _CREATED_NAME.match(n) or os.path.normpath(os.path.abspath(f)) != os.path.join(kdir, n):
            raise _refuse(f"the created file {f!r} is not a kernel.json or logo file in {kdir}")
        names.append(n)
    if "kernel.json" not in names:
        names.append("kernel.json")
    dfd = os.open(kdir, os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0))
    try:
        for n in names:
            try:
                os.unlink(n, dir_fd=dfd)  # a link is removed, never followed
            except FileNotFoundError:
                pass
    finally:
        os.close(dfd)
    cd = rec.get("created_dir")
    if isinstance(cd, str) and os.path.normpath(os.path.abspath(cd)) == kdir:
        try:
            os.unlink(_lock_path(norm))
            os.rmdir(kdir)  # only if nothing else is in it
        except OSError:
            pass
    return f"removed {norm}"


def _undo_environ(fix_id: str, rec: dict[str, Any]) -> str:
    name = rec.get("name")
    allowed = FIX_ENV_VARIABLES.get(fix_id, frozenset())
    if name not in allowed:
        raise _refuse(f"{fix_id} sets {', '.join(sorted(allowed)) or 'no environment variable'}, not {name!r}")
    changes = _ENV_APPLIED.get(fix_id) or []
    for i in range(len(changes) - 1, -1, -1):
        n, prev, new = changes[i]
        if n != name:
            continue
        if os.environ.get(n) != new:
            raise RuntimeError(f"{n} changed since the fix (it is {os.environ.get(n)!r} now); not touching it")
        del changes[i]
        if prev is None:
            os.environ.pop(n, None)
            return f"unset {n} in this kernel"
        os.environ[n] = prev
        return f"restored {n}={prev} in this kernel"
    pid = rec.get("pid")
    return (f"{name}: nothing to restore in this process: the fix set it in process "
            f"{pid if isinstance(pid, int) else 'unknown'}, and an environment ends with its process")


def _known_interpreters() -> dict[str, str]:
    """``{path: how it is known}``: this interpreter, and the ``argv[0]`` of every kernelspec
    jupyter_client finds (a bare ``python``/``python3``/``python3.X`` means the interpreter
    jupyter_client runs in, as its ``format_kernel_cmd`` does; a relative name is looked up on
    ``PATH``). Paths are absolute and normalised but links are NOT resolved: a virtual
    environment's ``bin/python`` is a link to the base interpreter, and resolving it would run
    pip outside that environment."""
    def norm(p: str) -> str:
        return os.path.normpath(os.path.abspath(p))

    out = {norm(sys.executable): "this kernel's interpreter"}
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_client.kernelspec import KernelSpecManager

        specs = KernelSpecManager().find_kernel_specs()
    except Exception:  # noqa: BLE001
        return out
    bare = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    for name, d in specs.items():
        spec = _load_spec(name, d)
        argv = spec.get("argv") if isinstance(spec, dict) else None
        if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
            continue
        exe = argv[0]
        found = sys.executable if exe in bare else exe if os.path.isabs(exe) else shutil.which(exe)
        if found and os.path.isfile(found) and os.access(found, os.X_OK):
            out.setdefault(norm(found), f"kernelspec {name!r}")
    return out


def _undo_pip(fix_id: str, rec: dict[str, Any], output: list[str]) -> str:
    if fix_id not in _PIP_FIXES:
        raise _refuse(f"{fix_id} never runs pip")
    python, pkg, prev = rec.get("python"), rec.get("package"), rec.get("previous")
    if not isinstance(pkg, str) or not _CUDNN_DIST.match(pkg):
        raise _refuse(f"{pkg!r} is not a cuDNN distribution (nvidia-cudnn-cuNN)")
    if prev is not None:
        try:
            prev = str(Version(str(prev)))
        except InvalidVersion:
            raise _refuse(f"{prev!r} is not a version") from None
    known = _known_interpreters()
    real = os.path.normpath(os.path.abspath(python)) if isinstance(python, str) and "\0" not in python else None
    if real not in known:
        raise _refuse(f"{python!r} is neither this kernel's interpreter nor the interpreter of a kernelspec "
                      "jupyter_client knows; refusing to run it")
    argv: tuple[str, ...] = ((real, "-m", "pip", "install", f"{pkg}=={prev}") if prev
                             else (real, "-m", "pip", "uninstall", "-y", pkg))
    rc = _run(argv, None, output)
    if rc != 0:
        raise RuntimeError(f"{' '.join(argv[1:5])} exited with status {rc}")
    return "ran " + " ".join(shlex.quote(a) for a in argv)
