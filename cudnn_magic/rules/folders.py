"""Whether one folder of cuDNN files is one whole release: judged per cuDNN major (per soname set),
from each file's own version, the ``RECORD`` of the wheel that installed the folder, and what is on
disk. Pure: :mod:`cudnn_magic.model` only.

The rules, and where they come from:

* A folder may hold two majors side by side: ``nvidia-cudnn-cu12`` 8.9.7.29 installed next to the
  ``-cu13`` 9.24 wheel puts ``libcudnn.so.8`` + ``libcudnn_*_infer.so.8`` beside ``libcudnn.so.9`` +
  ``libcudnn_graph.so.9`` (the two wheels share only the headers), and each main library opens its
  own major's sub-libraries by soname (``libcudnn.so.8`` asks for ``libcudnn_ops_infer.so.8``).
  So a folder is judged per major, never across majors (measured on the real wheels:
  ``tests/realwheels/test_real_loaders.py``).
* The release a cuDNN 9 folder answers with is its ``libcudnn_graph.so.9``'s: ``libcudnn.so.9`` is a
  shim that forwards ``cudnnGetVersion`` to the graph library it opens by soname (docs/facts.md "Two
  cuDNNs at once"); a cuDNN 8 folder answers with ``libcudnn_ops_infer.so.8``'s (the 8 main library
  forwards its version call there, measured on ctranslate2 4.4.0's vendored 8.9.7).
* Every other file of that major whose own version differs from that release is a stray file of
  another release (cuDNN's sub-libraries check each other's release: ``cudnn*VersionCheck``,
  ``CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH``), and so is a file whose content differs from the
  ``RECORD`` of the wheel that lists it (replaced after install: its release is unknown, and it is
  not the one the wheel shipped).
* A file the wheel's ``RECORD`` lists in the folder but that is not on disk makes the release
  incomplete (cuDNN 9.23 and later ship ``libcudnn_engines_tensor_ir.so.9`` and ``libcudnn_ext.so.9``;
  the ``RECORD`` says what each release ships, not a hand table).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..model import Finding, Fix, LibraryCopy

__all__ = ["FolderRelease", "folder_findings", "folder_release", "group_folders"]

#: What mixing releases does, measured on the real nvidia-cudnn-cu13 9.12.0.46 and 9.24.0.43 wheels
#: with no GPU (cudnnCreateTensorDescriptor / ConvolutionDescriptor / RNNDescriptor load libcudnn_ops,
#: _cnn and _adv; ``tests/realwheels/test_real_loaders.py``).
SUBLIBRARY_WORDS = ("cuDNN checks its sub-libraries' releases against each other when it loads them: with one "
                    "release's graph library and another's libcudnn_ops or libcudnn_adv the calls that need them return "
                    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, and another release's libcudnn_cnn gives "
                    "CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE or aborts the process (measured with 9.12 and "
                    "9.24, either way round); the first operation that needs such a file fails.")
SHIM_WORDS = ("Only the libcudnn.so.9 shim is of another release: it forwards every call to the graph library it opens "
              "(measured: a 9.12 shim in a 9.24 folder, and the reverse, run the folder's calls), so calls run the "
              "folder's release; still, it is not the set one release ships.")

#: The sub-library whose version a folder answers with, per major (module docstring).
ANSWERING = {9: "libcudnn_graph.so.9", 8: "libcudnn_ops_infer.so.8"}


@dataclass(frozen=True)
class FolderRelease:
    """One major's files in one folder, judged.

    Attributes:
        folder: the folder the files were found in (a folder of soname symlinks keeps its own
            name, though the files it points to lie elsewhere).
        major: the cuDNN major (the soname's number).
        release: the version the folder answers with (its graph library's for 9, ops_infer's for
            8; else the one version all its files share), None when unknown.
        answering: the file that release was read from, "" when none.
        stray: files whose own version differs from ``release``: (copy, its version).
        replaced: files whose content differs from the ``RECORD`` that lists them.
        missing: file names the installing wheel's ``RECORD`` lists here that are not on disk.
        owner: the owner of the folder's files ("pip: nvidia-cudnn-cu13 9.24.0.43"), "" when none.
    """

    folder: str
    major: int | None
    release: str | None
    answering: str = ""
    stray: tuple[tuple[LibraryCopy, str], ...] = ()
    replaced: tuple[LibraryCopy, ...] = ()
    missing: tuple[str, ...] = ()
    owner: str = ""

    @property
    def mixed(self) -> bool:
        return bool(self.stray or self.replaced)


def _major(c: LibraryCopy) -> int | None:
    tail = c.soname.rsplit(".so.", 1)
    return int(tail[1]) if len(tail) == 2 and tail[1].isdigit() else None


def group_folders(present: Mapping[str, Iterable[tuple[str, str]]], copies: Iterable[LibraryCopy]
                  ) -> dict[tuple[str, int | None], list[LibraryCopy]]:
    """``{(folder, major): [copies]}``: the files on disk in each folder (``present``: folder ->
    (name, real path)), matched to their copies by real path (a folder of symbolic links holds the
    files it points to), plus every copy no listed folder holds, under the folder it was found in."""
    by_real = {c.path: c for c in copies}
    out: dict[tuple[str, int | None], list[LibraryCopy]] = {}

    def add(folder: str, c: LibraryCopy) -> None:
        group = out.setdefault((folder, _major(c)), [])
        if all(g.path != c.path for g in group):
            group.append(c)

    placed: set[str] = set()
    for folder, entries in present.items():
        for _name, real in entries:
            c = by_real.get(real)
            if c is not None:
                add(folder, c)
                placed.add(c.path)
    for c in by_real.values():
        if c.path not in placed:
            add(c.found_in or c.directory, c)
    return out


def folder_release(folder: str, major: int | None, copies: list[LibraryCopy],
                   listed: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
                   present: Iterable[str] = ()) -> FolderRelease:
    """Judge one major's files in one folder (module docstring).

    Args:
        folder, major: the group (:func:`group_folders`).
        copies: its files, each with its own version.
        listed: ``{folder: (owner, file names its RECORD lists there)}`` for folders a wheel
            installed (:attr:`cudnn_magic.probes.installed.Inventory.listed`).
        present: the cuDNN file names on disk in the folder (all majors).
    """
    answering = next((c for c in copies if c.name == ANSWERING.get(major or 0) or c.soname == ANSWERING.get(major or 0)), None)
    release = answering.version if answering is not None and answering.version else None
    versions = {c.version for c in copies if c.version}
    if release is None and len(versions) == 1:
        release = next(iter(versions))
    replaced = tuple(c for c in copies if "differs" in (c.owner_evidence or ""))
    if release is not None:
        stray = tuple((c, c.version) for c in copies if c.version and c.version != release and c not in replaced)
    elif len(versions) > 1:  # no answering file: every version is as good as another
        stray = tuple((c, c.version) for c in copies if c.version and c not in replaced)
    else:
        stray = ()
    owner = next((c.owner for c in copies if c.owner and c.owner != "system"), "")
    missing: tuple[str, ...] = ()
    if listed and folder in listed:
        lowner, names = listed[folder]
        on_disk = set(present) | {c.name for c in copies}
        missing = tuple(n for n in names if _name_major(n) == major and n not in on_disk)
        owner = owner or lowner
    return FolderRelease(folder, major, release, answering.name if answering is not None else "", stray, replaced,
                         missing, owner)


def _own(c: LibraryCopy) -> bool:
    """``c.version`` is the file's own (its name, or a constant it carries), not its folder's answer."""
    src = c.version_source or ""
    return src == "file name" or src.endswith("constant in the file")


def _name_major(name: str) -> int | None:
    tail = name.rsplit(".so.", 1)
    return int(tail[1].split(".")[0]) if len(tail) == 2 and tail[1].split(".")[0].isdigit() else None


def folder_findings(copies: Iterable[LibraryCopy], *, listed: Mapping[str, tuple[str, tuple[str, ...]]] | None = None,
                    present: Mapping[str, Iterable[tuple[str, str]]] | None = None,
                    graph_elsewhere: Mapping[str, tuple[str, str, str | None]] | None = None) -> list[Finding]:
    """``cudnn-sublibrary-load-failed`` findings for every folder that is not one whole release of
    a major (module docstring): stray files of another release, files replaced after install,
    files the wheel's ``RECORD`` lists that are gone, and a cuDNN 9 shim with no graph library
    beside it. ``present``: ``{folder: (name, real path) of each cuDNN file on disk}``
    (:attr:`cudnn_magic.probes.installed.Inventory.present`). ``graph_elsewhere``: for a shim with no
    graph library beside it, the one the loader finds next for it (path, why, version), from the
    loader model: then its calls run that one, and the finding says so instead of an abort."""
    out: list[Finding] = []
    present = {k: tuple(v) for k, v in (present or {}).items()}
    groups = group_folders(present, copies)
    majors_in: dict[str, set[int | None]] = {}
    for folder, major in groups:
        majors_in.setdefault(folder, set()).add(major)
    for (folder, major), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)):
        names = tuple(n for n, _ in present.get(folder, ()))
        fr = folder_release(folder, major, group, listed, names)
        tag = f" (cuDNN {major})" if len(majors_in[folder]) > 1 and major is not None else ""
        reinstall = Fix("reinstall-cudnn", "Reinstall cuDNN so every file in the directory comes from one release",
                        f"remove the stray files in {folder} and reinstall the package that owns it"
                        + (f" ({fr.owner})" if fr.owner else ""), True)
        if fr.mixed:
            parts = [f"{c.name} {v} ({c.version_source or 'source unknown'})" for c, v in fr.stray]
            parts += [f"{c.name}{(' ' + c.version) if c.version and _own(c) else ''}: {c.owner_evidence}"
                      for c in fr.replaced]
            head = (f"The folder answers with cuDNN {fr.release} (its {fr.answering}); " if fr.release and fr.answering
                    else "")
            only_shim = all(c.is_main for c in [c for c, _ in fr.stray] + list(fr.replaced)) and major == 9
            why = (SHIM_WORDS if only_shim else SUBLIBRARY_WORDS)
            out.append(Finding(
                "cudnn-sublibrary-load-failed", "warning" if only_shim else "error", f"Mixed cuDNN versions in {folder}{tag}",
                f"{head}{'; '.join(parts)}. {why}", (reinstall,)))
        if fr.missing:
            out.append(Finding(
                "cudnn-sublibrary-load-failed", "error",
                f"{folder} is missing {len(fr.missing)} file{'s' if len(fr.missing) != 1 else ''} of its cuDNN "
                f"{fr.release or major or ''} release".replace("  ", " "),
                f"{fr.owner or 'The wheel'}'s RECORD lists {', '.join(fr.missing)} there, and "
                f"{'it is' if len(fr.missing) == 1 else 'they are'} not on disk. An operation that needs "
                f"{'it' if len(fr.missing) == 1 else 'one of them'} fails to load it (or loads another release's "
                "copy found further down the loader's search).", (reinstall,)))
        mains = [c for c in group if c.is_main and c.soname == "libcudnn.so.9"
                 and not (c.error or "").startswith(("not a usable shared library", "unreadable"))]
        has_graph = any(c.name.startswith("libcudnn_graph.so.9") for c in group) or any(
            n.startswith("libcudnn_graph.so.9") for n in names)
        if mains and not has_graph:
            shim = mains[0]
            copy = "a copy of" in (shim.owner_evidence or "") or shim.owner == "system"
            fix = Fix("reinstall-cudnn", "Reinstall this cuDNN completely",
                      f"{folder} holds only a copy of the shim: remove {shim.path}, or copy the whole set of one release "
                      "there" if copy else f"reinstall the package that owns {folder} ({shim.owner})", True)
            other = (graph_elsewhere or {}).get(shim.path)
            if other is not None:
                gpath, why, gver = other
                out.append(Finding(
                    "cudnn-sublibrary-load-failed", "warning",
                    f"{shim.path} has no libcudnn_graph.so.9 beside it; its calls go to {gpath}",
                    f"The shim opens libcudnn_graph.so.9 by soname, and the loader finds none beside it, then {gpath} "
                    f"({why}{f', cuDNN {gver}' if gver else ''}): what runs is that release, not one shipped with this "
                    "shim.", (fix,)))
            else:
                out.append(Finding(
                    "cudnn-sublibrary-load-failed", "error", f"{shim.path} has no libcudnn_graph.so.9 beside it",
                    "The first cuDNN call through this copy aborts the process (\"Invalid handle. Cannot load symbol "
                    "cudnnGetVersion\") unless another libcudnn_graph.so.9 is already loaded.", (fix,)))
    return out
