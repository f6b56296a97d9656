"""What a fix needs to know about where it runs: the target interpreter and its pip, this
process's environment, the running kernel (its connection file) and its kernelspec on disk
(:func:`find_running_kernelspec`)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from ..rules.requirement import _DIST_NAME
from ..util.files import load_json_regular, read_regular_whole, regular_dist_version
from ..util.kernelinfo import connection_file

_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")
"""An environment variable name a fix may set."""
BACKUP_TAG = ".cudnn-magic-backup-"
"""What a kernelspec backup's file name carries after ``kernel.json``."""


def _python(context: dict[str, Any]) -> str:
    return str(context.get("python") or sys.executable)


def _pip_check(python: str) -> str | None:
    """None when ``python -m pip`` works, else the reason."""
    if python == sys.executable:
        return None if importlib.util.find_spec("pip") is not None else (
            f"pip is not installed in this kernel's environment ({sys.prefix}); "
            "install it with `python -m ensurepip` or use the environment's own package manager")
    try:
        r = subprocess.run([python, "-m", "pip", "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"cannot run {python}: {exc}"
    return None if r.returncode == 0 else f"pip is not installed for {python}"


def _installed_version(python: str, dist: str) -> str | None:
    """Version of ``dist`` installed for ``python`` (validated), or None."""
    if not _DIST_NAME.match(dist):
        return None
    if python == sys.executable:
        raw = regular_dist_version(dist)
    else:
        code = "import sys, importlib.metadata as m\ntry: print(m.version(sys.argv[1]))\nexcept Exception: pass"
        try:
            raw = subprocess.run([python, "-c", code, dist], capture_output=True, text=True, timeout=60, check=False).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    try:
        return str(Version(raw)) if raw else None
    except InvalidVersion:
        return None


def _pip_extra_args(context: dict[str, Any]) -> list[str]:
    """Allowed extra pip arguments: ``--no-index`` and ``--find-links DIR`` (an existing local
    directory), for offline installs and tests. Anything else is refused."""
    out: list[str] = []
    if context.get("no_index"):
        out.append("--no-index")
    fl = context.get("find_links")
    if fl:
        if not os.path.isdir(str(fl)):
            raise ValueError(f"--find-links must be an existing local directory: {fl!r}")
        out += ["--find-links", os.path.abspath(str(fl))]
    return out


def _connection_file(context: dict[str, Any]) -> str | None:
    if context.get("connection_file"):
        return str(context["connection_file"])
    return connection_file()


def _environ(context: dict[str, Any]) -> dict[str, str]:
    env = context.get("environ")
    return dict(env) if env is not None else dict(os.environ)


def kernel_start_environ(spec: dict[str, Any], base: dict[str, str]) -> dict[str, str]:
    """The environment a kernel started from ``spec`` gets: ``base`` (the server's environment)
    updated with the spec's ``env``, each value's ``${VAR}`` filled from ``base`` with
    ``string.Template.safe_substitute`` (jupyter_client's ``KernelProvisionerBase.pre_launch``,
    ``__apply_env_substitutions``, since jupyter_client 7)."""
    from string import Template  # start-up cost: only when a kernelspec's start is modelled

    env = dict(base)
    spec_env = e if isinstance(e := spec.get("env"), dict) else {}
    for k, v in spec_env.items():
        if isinstance(k, str) and isinstance(v, str):
            env[k] = Template(v).safe_substitute(base)
    return env


def kernel_context(context: dict[str, Any]) -> dict[str, Any] | None:
    """For a shell that names a kernelspec (``cudnn-magic fix ... --kernel NAME``, no kernel
    running here): the context that judges the kernel's start environment instead of the
    shell's (not the shell's own LD_LIBRARY_PATH), i.e. ``context``
    plus ``environ`` (:func:`kernel_start_environ` of the spec over this shell's environment,
    the best stand-in for the server's) and ``kernel_environ`` (those words). None when no
    kernelspec is named, a kernel runs here (its own environment is the one), or the spec is
    not found (the plan then says why)."""
    if not context.get("kernel_name") or context.get("environ") is not None or _connection_file(context):
        return None
    target = find_running_kernelspec(context)
    if isinstance(target, str):
        return None
    words = (f"in the environment kernelspec {target.name!r} starts with (this shell's environment with the "
             "kernelspec's env applied, as jupyter_client applies it)")
    argv = target.spec.get("argv")
    if isinstance(argv, list) and argv and not _same_exe(str(argv[0]), _python(context), target.spec_dir):
        words += f"; its argv[0] {argv[0]} is not {_python(context)}, whose packages were read"
    return {**context, "environ": kernel_start_environ(target.spec, dict(os.environ)), "kernel_environ": words}


def kernelspec_names() -> dict[str, str] | str:
    """Every kernelspec jupyter_client finds (``KernelSpecManager().find_kernel_specs()``: name ->
    resource directory, in its search order), or why they cannot be listed."""
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return "jupyter_client is not installed, so kernelspecs cannot be found"
    try:
        return dict(KernelSpecManager().find_kernel_specs())
    except Exception as exc:  # noqa: BLE001
        return f"listing kernelspecs failed: {exc}"


def unknown_kernelspec(name: str, specs: dict[str, str] | str) -> str | None:
    """Why ``--kernel NAME`` names no kernelspec, given :func:`kernelspec_names`' answer (one
    sentence: the names known, or why none could be listed), or None when ``name`` is one. Pure."""
    if isinstance(specs, dict) and name in specs:
        return None
    known = specs if isinstance(specs, str) else "known: " + (", ".join(sorted(specs)) or "none")
    return f"no kernelspec named {name!r} ({known}; `jupyter kernelspec list` shows them)"


def kernelspecs_setting(name: str) -> list[tuple[str, dict[str, Any]]]:
    """``(kernelspec name, spec)`` of every kernelspec whose ``env`` sets the variable ``name``
    (what a kernel started from it gets on top of the server's environment); unreadable specs
    are left out. Never raises."""
    specs = kernelspec_names()
    if isinstance(specs, str):
        return []
    out = []
    for n, d in specs.items():
        spec = _load_spec(n, d)
        env = spec.get("env") if isinstance(spec, dict) else None
        if isinstance(spec, dict) and isinstance(env, dict) and isinstance(env.get(name), str):
            out.append((n, spec))
    return out


@dataclass(frozen=True)
class KernelSpecTarget:
    """The running kernel's kernelspec and where an edit will be written.

    Attributes:
        name: kernelspec name ("python3").
        spec_dir: the resource directory the spec was found in.
        write_path: the ``kernel.json`` to write (the spec's own, or a user-level copy).
        spec: the spec as JSON (a dict), as it is now.
        original: the bytes of ``write_path`` now (None when it does not exist yet).
        how: how the kernel was identified, in words.
        copy_from: set when writing a user-level copy of a spec found elsewhere.
    """

    name: str
    spec_dir: str
    write_path: str
    spec: dict[str, Any]
    original: bytes | None
    how: str
    copy_from: str | None = None


def _same_exe(a: str, b: str, spec_dir: str = "") -> bool:
    """Does argv[0] ``a`` run interpreter ``b``? jupyter_client replaces a bare ``python``/
    ``python3``/``python3.X`` argv[0] with the server's interpreter (``format_kernel_cmd``), so
    such a spec counts when it lives under this interpreter's prefix."""
    if a in {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}:
        prefix = os.path.realpath(sys.prefix) + os.sep
        return os.path.realpath(b) == os.path.realpath(sys.executable) and os.path.realpath(spec_dir).startswith(prefix)
    found = shutil.which(a) if not os.path.isabs(a) else a
    return bool(found) and os.path.realpath(str(found)) == os.path.realpath(b)


def find_running_kernelspec(context: dict[str, Any] | None = None) -> KernelSpecTarget | str:
    """Find the running kernel's kernelspec (module docstring), or return why not.

    Context keys: ``kernel_name`` (explicit name, e.g. from the CLI ``--kernel``),
    ``connection_file``, ``python`` (the interpreter whose spec to match; default
    ``sys.executable``).
    """
    context = context or {}
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError:
        return "jupyter_client is not installed, so kernelspecs cannot be found"
    ksm = KernelSpecManager()
    try:
        specs = ksm.find_kernel_specs()
    except Exception as exc:  # noqa: BLE001
        return f"listing kernelspecs failed: {exc}"
    python = _python(context)
    name = str(context.get("kernel_name") or "")
    how = "named explicitly"
    if not name:
        cf = _connection_file(context)
        if cf:
            try:
                name = str(load_json_regular(cf).get("kernel_name") or "")
                how = f"kernel_name {name!r} in the connection file {cf}"
            except (OSError, ValueError) as exc:
                return f"cannot read the connection file {cf}: {exc}"
    if not name:
        matches = []
        for n, d in specs.items():
            spec = _load_spec(n, d)
            argv = spec.get("argv") if isinstance(spec, dict) else None
            if isinstance(argv, list) and argv and _same_exe(str(argv[0]), python, d):
                matches.append(n)
        if len(matches) != 1:
            listed = ", ".join(sorted(matches)) or "none"
            return (f"cannot tell which kernelspec started this kernel: no kernel_name in the connection file and "
                    f"{len(matches)} kernelspecs run {python} ({listed}); name it with --kernel NAME")
        name = matches[0]
        how = f"the only kernelspec whose argv[0] is {python}"
    if name not in specs:
        return f"kernelspec {name!r} is not found in {', '.join(ksm.kernel_dirs)}"
    spec_dir = specs[name]
    spec = _load_spec(name, spec_dir)
    if not isinstance(spec, dict):
        return f"kernelspec {name!r} in {spec_dir} cannot be read: {spec}"
    bundled = _is_bundled_native(spec_dir)
    own = os.path.join(spec_dir, "kernel.json")
    if not bundled and _writable(own):
        try:
            original = read_regular_whole(own, 1 << 20)
        except (OSError, ValueError) as exc:
            return f"kernelspec {name!r}: cannot read {own}: {exc}"
        return KernelSpecTarget(name, spec_dir, own, spec, original, how)
    # Read-only or ipykernel's built-in spec: a user-level copy, if it would win the search.
    try:
        # start-up cost: Jupyter's path and kernelspec modules, only on this path
        from jupyter_core.paths import jupyter_data_dir

        user_kernels = os.path.join(jupyter_data_dir(), "kernels")
    except Exception as exc:  # noqa: BLE001
        return f"kernelspec {spec_dir} is read-only and the user data dir is unknown: {exc}"
    dirs = [os.path.normpath(d) for d in ksm.kernel_dirs]
    parent = os.path.normpath(os.path.dirname(spec_dir))
    if os.path.normpath(user_kernels) not in dirs:
        return f"kernelspec {spec_dir} is read-only and {user_kernels} is not on the kernelspec path"
    if not bundled and parent in dirs and dirs.index(parent) < dirs.index(os.path.normpath(user_kernels)):
        return (f"kernelspec {spec_dir} is read-only, and a user-level copy in {user_kernels} would be hidden by it "
                "(the environment's kernels come first, e.g. JUPYTER_PREFER_ENV_PATH)")
    target = os.path.join(user_kernels, name, "kernel.json")
    if os.path.exists(target):
        return f"{target} exists but was not picked for {name!r}; not touching it"
    why = "ipykernel's built-in python3 spec" if bundled else f"read-only {spec_dir}"
    return KernelSpecTarget(name, spec_dir, target, spec, None, how + f"; {why}, so a user-level copy is written",
                            copy_from=spec_dir)


def _load_spec(name: str, spec_dir: str) -> dict[str, Any] | str:
    if _is_bundled_native(spec_dir):
        try:
            # ipykernel's built-in spec has no kernel.json: jupyter_client builds it for that folder
            # from ipykernel.kernelspec.get_kernel_dict() (KernelSpecManager._get_kernel_spec_by_name,
            # what get_kernel_spec calls; used by name here because another "python3" may come
            # first in the search path); the two keys to_dict() adds at their defaults (env {},
            # interrupt_mode "signal") are left out, so the result is get_kernel_dict()'s.
            from jupyter_client.kernelspec import KernelSpecManager  # start-up cost: only this rare case

            spec = KernelSpecManager()._get_kernel_spec_by_name(name, spec_dir).to_dict()
            if spec.get("env") == {}:
                del spec["env"]
            if spec.get("interrupt_mode") == "signal":
                del spec["interrupt_mode"]
            return spec
        except Exception as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"
    try:
        data = load_json_regular(os.path.join(spec_dir, "kernel.json"))
        return data if isinstance(data, dict) else "kernel.json is not a JSON object"
    except (OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"


def _native_resources() -> str | None:
    """ipykernel's ``resources`` folder (``ipykernel.kernelspec.RESOURCES``: where its built-in
    ``python3`` spec is served from), found without importing ipykernel."""
    try:
        spec = importlib.util.find_spec("ipykernel")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(next(iter(spec.submodule_search_locations)), "resources")


def _is_bundled_native(spec_dir: str) -> bool:
    if os.path.exists(os.path.join(spec_dir, "kernel.json")):
        return False
    resources = _native_resources()
    return resources is not None and os.path.normpath(spec_dir) == os.path.normpath(resources)


def _writable(path: str) -> bool:
    """Can the fix edit ``path`` in place? Not when it is a symlink: its target may be shared by
    other kernelspecs, and an atomic replace would turn the link into a file (a user-level copy
    is made instead, or the fix says why it cannot apply)."""
    d = os.path.dirname(path)
    if os.path.islink(path):
        return False
    return os.access(d, os.W_OK) and (not os.path.exists(path) or os.access(path, os.W_OK))


def _dump_spec(spec: dict[str, Any]) -> bytes:
    # jupyter_client's KernelSpecManager.install_kernel_spec writes indent=1.
    return (json.dumps(spec, indent=1, ensure_ascii=False) + "\n").encode("utf-8")
