"""Every cuDNN on disk that could be picked, and which one the dynamic loader WILL pick.

Where we look (in this order; a file found twice is listed once, under its first source):
pip wheels (``nvidia/cudnn/lib``, ``nvidia/cudnn_jit/lib``, frameworks' own lib dirs) in every
``sys.path`` entry, the conda env, each ``LD_LIBRARY_PATH`` entry, the ``ld.so`` cache
(``/etc/ld.so.cache``), ``CUDA_HOME``/``CUDA_PATH``/``CUDA_ROOT``, ``/usr/local/cuda*`` and the
system library dirs.

Versions come from the file's real name (``libcudnn.so.8.9.7``), the owning wheel, the
``cudnn_version.h`` next to it, or -- for a main library with none of those -- a query in a
child process. An unmapped copy is NEVER loaded into this process (docs/facts.md: a copy without
its sub-library aborts the process on the first call).

Which copy the loader WILL pick is the loader model's answer (:mod:`cudnn_magic.probes.loader`:
glibc's order, the consumer's own preloads, glibc's own default directories); :func:`resolve` is
its one-object form.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import sys
from dataclasses import dataclass, field
from typing import Any

from ..model import LibraryCopy, Resolution
from ..rules.cudnn_version import try_parse
from ..util import pyenv
from . import libnames
from .loader import Preload, elf_facts, expand_entry, read_ldcache, resolve_in_chain
from .owners import Ownership, ownership, pip_version_of
from .scope import exists, listdir, realpath
from .subprocess_probe import query_versions

WHEEL_SUBDIRS = ("nvidia/cudnn/lib", "nvidia/cudnn_jit/lib", "nvidia/cu13/lib", "torch/lib", "paddle/libs",
                 "tensorflow", "jaxlib", "onnxruntime/capi", "ctranslate2.libs", "cupy/.data/lib")
SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
               "/usr/lib64", "/lib64", "/usr/lib", "/lib", "/usr/local/lib", "/usr/lib/wsl/lib")


@dataclass
class Inventory:
    """Result of :func:`probe_installed`: copies on disk, the ld.so cache map, and notes."""

    copies: list[LibraryCopy] = field(default_factory=list)
    ldcache: dict[str, list[str]] = field(default_factory=dict, repr=False)
    notes: list[str] = field(default_factory=list)
    #: folder -> (owner, the cuDNN file names the installing wheel's RECORD lists in it): what
    #: that release ships (cuDNN 9.23+ adds libcudnn_engines_tensor_ir.so.9 and libcudnn_ext.so.9).
    listed: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    #: folder -> (file name, real path) of each cuDNN file on disk in it (a folder of symbolic
    #: links keeps its own entries, though the files lie elsewhere and are listed once).
    present: dict[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)


def _site_dirs() -> list[tuple[str, str]]:
    """Every directory on ``sys.path``, in order, with the kind of entry: a ``site-packages`` /
    ``dist-packages`` (or the user site), or another entry (a ``pip install --target`` folder on
    ``PYTHONPATH``, a folder a ``.pth`` file adds, the working directory). PyTorch's preload walks
    all of them (``torch/__init__.py`` ``_preload_cuda_deps``), so a wheel folder in any of them can be
    the copy a framework loads."""
    seen: list[tuple[str, str]] = []
    names = {d for d, _ in seen}
    for p in pyenv.search_path():
        if not isinstance(p, (str, os.PathLike)):
            continue
        p = os.fspath(p)
        d = os.path.abspath(p or os.curdir)
        if d in names or not os.path.isdir(d):
            continue
        names.add(d)
        if d.endswith(("site-packages", "dist-packages")):
            seen.append((d, ""))
        else:
            seen.append((d, f" (sys.path entry {p or '(working directory)'})"))
    return seen


def candidate_dirs(environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None) -> list[tuple[str, str]]:
    """(directory, source) pairs to search, in reporting order."""
    env = os.environ if environ is None else environ
    dirs: list[tuple[str, str]] = []
    for site, entry in _site_dirs():
        for sub in WHEEL_SUBDIRS:
            dirs.append((os.path.join(site, sub), ("pip wheel" if sub.startswith("nvidia") else "framework lib dir") + entry))
    for prefix in {env.get("CONDA_PREFIX", ""), pyenv.prefix()}:
        if prefix and os.path.isdir(os.path.join(prefix, "conda-meta")):
            dirs.append((os.path.join(prefix, "lib"), "conda env"))
    for entry in env.get("LD_LIBRARY_PATH", "").split(":"):
        if entry:
            dirs.append((entry, "LD_LIBRARY_PATH"))
    for soname, paths in (ldcache or {}).items():
        if soname.startswith("libcudnn"):
            for p in paths:
                dirs.append((os.path.dirname(p), "ld.so cache"))
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT", "CUDNN_PATH", "CUDNN_HOME"):
        v = env.get(var)
        if v:
            dirs += [(os.path.join(v, "lib64"), var), (os.path.join(v, "lib"), var)]
    for root in sorted(glob.glob("/usr/local/cuda*")):
        dirs += [(os.path.join(root, "lib64"), "CUDA toolkit dir"),
                 (os.path.join(root, "targets", "x86_64-linux", "lib"), "CUDA toolkit dir")]
    home = env.get("HOME")
    if home:
        for d in glob.glob(os.path.join(home, ".cupy", "cuda_lib", "*", "cudnn", "*", "lib64")):
            dirs.append((d, "CuPy install_library"))
    dirs += [(d, "system dir") for d in SYSTEM_DIRS]
    return dirs


def probe_installed(environ: dict[str, str] | None = None, mapped: set[str] | None = None,
                    query_unknown: bool = True, ldcache_path: str = "/etc/ld.so.cache",
                    extra_dirs: tuple[str | tuple[str, str], ...] = ()) -> Inventory:
    """Inventory every cuDNN file on disk (see module docstring). Never raises.

    Args:
        environ: environment to read ``LD_LIBRARY_PATH``/``CUDA_HOME`` from (default: this
            process's).
        mapped: real paths whose file now is the one mapped here (their copies are marked
            ``loaded``); a mapped copy replaced on disk since it was loaded is left out by the
            caller, so the file now at its path is listed as another copy.
        query_unknown: ask main libraries of unknown version in child processes, each loading
            its own folder alone.
        ldcache_path: the ``ld.so`` cache file.
        extra_dirs: more folders to list, as folders or (folder, source) pairs: the folders
            of the copies mapped in this process and the frameworks' RPATH/RUNPATH folders,
            which may lie on no search path (a bare folder's source is "folder of a mapped
            copy").
    """
    inv = Inventory()
    if not sys.platform.startswith("linux"):
        inv.notes.append(f"on-disk inventory unavailable on this platform ({sys.platform})")
        return inv
    inv.ldcache, note = read_ldcache(ldcache_path)
    if note:
        inv.notes.append(note)
    mapped = mapped or set()
    seen: dict[str, int] = {}
    unknown: list[int] = []
    dirs = candidate_dirs(environ, inv.ldcache) + [
        (d, "folder of a mapped copy") if isinstance(d, str) else (d[0], d[1]) for d in extra_dirs]
    for d, source in dirs:
        d = os.path.normpath(d)
        try:
            entries = listdir(d)  # unchanged folders are not listed again (by their mtime)
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue
        except OSError as exc:
            if source in ("LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH", "conda env"):
                inv.notes.append(f"could not list {d} ({source}): {exc.strerror or exc}")
            continue
        names = tuple(n for n in sorted(entries) if n.startswith("libcudnn") and libnames.is_cudnn_name(n))
        if names and d not in inv.present:
            inv.present[d] = tuple((n, realpath(os.path.join(d, n))) for n in names)
        for name in names:
            path = os.path.join(d, name)
            real = realpath(path)
            if real in seen:
                continue
            error = None
            if not exists(path):
                inv.notes.append(f"broken symlink {path} -> {os.readlink(path) if os.path.islink(path) else '?'}")
                continue
            facts = elf_facts(real)  # cached by (inode, size, mtime): a second check reads nothing
            if isinstance(facts, str):
                error = (f"not a usable shared library: {facts[len('not a shared library: '):]}"
                         if facts.startswith("not a shared library: ") else facts)
            own = ownership(path)
            owner = own.owner
            if own.dist is not None and d not in inv.listed:
                inv.listed[d] = (owner, _listed_here(own.dist, d))
            version, vsource = static_version(real, owner, own) if error is None else (None, None)
            # Prefer the soname-style name for display (libcudnn.so.9 rather than libcudnn.so.9.1.0)
            copy = LibraryCopy(
                path=real, name=os.path.basename(real), soname=libnames.soname_of(os.path.basename(real)),
                version=version, version_source=vsource, owner=owner, source=source,
                loaded=real in mapped, is_main=libnames.is_main(name), error=error, owner_evidence=own.evidence,
                found_in=d if os.path.dirname(real) != d else None,
            )
            seen[real] = len(inv.copies)
            inv.copies.append(copy)
            if version is None and error is None and copy.is_main:
                unknown.append(len(inv.copies) - 1)
    if unknown and query_unknown:
        res = query_versions([inv.copies[i].path for i in unknown], alone=True)
        for i in unknown:
            c = inv.copies[i]
            r = res.get(c.path)
            if r and r.version is not None and try_parse(r.version):
                inv.copies[i] = dataclasses.replace(c, version=str(try_parse(r.version)),
                                                    version_source="cudnnGetVersion in a child process that loads "
                                                                   "this folder alone")
            elif r and r.error:
                inv.copies[i] = dataclasses.replace(c, error=r.error)
    return inv


def _listed_here(dist: Any, folder: str) -> tuple[str, ...]:
    """The cuDNN library names ``dist``'s RECORD lists directly in ``folder``."""
    out = []
    for e in dist.entries:
        p = dist.abspath(e)
        name = os.path.basename(p)
        if os.path.dirname(p) == folder and name.startswith("libcudnn") and libnames.is_cudnn_name(name):
            out.append(name)
    return tuple(sorted(out))


def static_version(real: str, owner: str, ownership: Ownership | None = None) -> tuple[str | None, str | None]:
    """(version, where it came from) of the file ``real`` itself, without calling it, so that
    no other copy can answer for it. In order:

    1. for a sub-library, the version constant it carries (``cudnn_graph_version``,
       :func:`~cudnn_magic.probes.libnames.embedded_version`): the content wins over a name;
    2. the real file name (``libcudnn.so.8.9.7``);
    3. the owning cuDNN wheel's version when the file's sha256 (or, for large files, size)
       matches that wheel's ``RECORD`` (``ownership.confirmed``);
    4. for a main library, the constant of the ``libcudnn_graph`` beside it on disk (cuDNN 9's
       ``libcudnn.so.9`` is a shim carrying no version of its own);
    5. the ``cudnn_version.h`` next to it (when its major agrees);
    6. the owning wheel's version when its ``RECORD`` lists the file but the content was not
       checked (never when the file differs from the ``RECORD``).

    (None, None) when none of them says (then only a child process that loads the file's
    folder alone can tell)."""
    name = os.path.basename(real)
    parsed = libnames.parse_name(name)
    major = parsed[1] if parsed else None
    is_main = bool(parsed and parsed[0] == "cudnn")
    if not is_main:  # what the file carries wins over what its name says (a renamed file)
        ev = libnames.embedded_version(real)
        if ev:
            return ev, f"{parsed[0]}_version constant in the file" if parsed else "constant in the file"
    if parsed and parsed[2]:
        return parsed[2], "file name"
    pv = pip_version_of(owner)
    wheel = libnames.pip_dist_version_to_cudnn(pv) if pv and "cudnn" in owner else None
    if wheel and ownership is not None and ownership.confirmed:
        return wheel, f"wheel {owner.split(': ', 1)[-1]} ({ownership.evidence})"
    if is_main and major is not None and "differs" not in ((ownership.evidence or "") if ownership else ""):
        graph = os.path.join(os.path.dirname(real), f"libcudnn_graph.so.{major}")
        ev = libnames.embedded_version(graph) if os.path.exists(graph) else None
        if ev:
            return ev, f"cudnn_graph_version of the libcudnn_graph.so.{major} beside it"
    hv = libnames.header_version(os.path.dirname(real))
    if hv and (major is None or hv[0].split(".")[0] == str(major)):
        return hv[0], os.path.basename(hv[1])
    if wheel and (ownership is None or "differs" not in (ownership.evidence or "")):
        if ownership is None:
            return wheel, "wheel version"
        return wheel, f"wheel {owner.split(': ', 1)[-1]} ({ownership.evidence}; content not checked)"
    return None, None


def consumer_dirs(consumer_library: str) -> list[tuple[str, str]]:
    """(folder, source) for each RPATH/RUNPATH entry of ``consumer_library`` (a framework's
    native library), ``$ORIGIN`` expanded: where that framework's own cuDNN lives. Never
    raises."""
    dyn = elf_facts(consumer_library)
    if isinstance(dyn, str):
        return []
    origin = os.path.dirname(consumer_library)
    kind = "RUNPATH" if dyn.runpath else "RPATH"
    name = os.path.basename(consumer_library)
    return [(expand_entry(e, origin)[0], f"{kind} of {name}") for e in (dyn.runpath or dyn.rpath)]


def resolve(soname: str, consumer: str, consumer_library: str | None, *, environ: dict[str, str] | None = None,
            ldcache: dict[str, list[str]] | None = None, mapped: list[str] | None = None,
            preloads: tuple[Preload, ...] | list[Preload] = ()) -> Resolution:
    """Which file ``dlopen(soname)`` from ``consumer_library`` (or a plain ``dlopen`` when None)
    would get: the loader model's :func:`~cudnn_magic.probes.loader.resolve_in_chain` with the
    interpreter as the rest of the chain. Never raises.

    Args:
        soname: e.g. ``libcudnn.so.9``.
        consumer: display name of who asks ("PyTorch").
        consumer_library: path of the ELF object whose RPATH/RUNPATH applies.
        mapped: paths already mapped in this process (a mapped file whose name equals the
            soname, or whose ELF SONAME equals it, is reused by the loader).
        preloads: files the consumer's own code loads by path first (PyTorch's preload).
    """
    return resolve_in_chain(soname, consumer, consumer_library, [], environ=environ, ldcache=ldcache,
                            mapped=tuple(mapped or ()), preloads=preloads)
