"""Every cuDNN consumer of the environment, resolved and judged: the engine behind the
"cuDNN consumers" part of ``%cudnn_check``.

:func:`check_consumers` runs the generic scan (:mod:`cudnn_magic.probes.frameworks.generic`), the
framework probes for CTranslate2, PaddlePaddle, MXNet and TensorRT
(:mod:`cudnn_magic.probes.frameworks.extra`), resolves what each consumer's loader will pick for
the cuDNN main library and for every sub-library that library opens at run time
(:mod:`cudnn_magic.probes.loader`, :mod:`cudnn_magic.probes.sublibraries`), and judges each row
and each pair of consumers by the rules of :mod:`cudnn_magic.rules.consumers`. No IPython, no
widgets; nothing is loaded into the process. Never raises.
"""

from __future__ import annotations

import dataclasses
import os
import re
import time
from dataclasses import dataclass, field

from ..model import ConsumerLibrary, Finding, Fix, FrameworkBuild, LibraryCopy, Preload, Resolution, SublibraryPick
from ..probes import libnames
from ..probes.frameworks.consumer_facts import ConsumerFacts, CudnnRequest, chain_within
from ..probes.frameworks.extra import probe_extra_frameworks
from ..probes.frameworks.generic import EnvironmentScan, scan_environment
from ..probes.frameworks.pathfinder import ORDER, ORDER_SOURCE, pathfinder_pick
from ..probes.installed import static_version
from ..probes.loader import interpreter_loaders, resolve_in_chain, search_steps
from ..probes.owners import owner_of
from ..probes.scope import realpath
from ..probes.sublibraries import ANSWERING, main_major, predict_sublibraries
from ..probes.subprocess_probe import query_versions
from ..rules.consumers import ConsumerNeed, clash_findings, judge_consumer
from ..rules.cudnn_version import try_parse
from ..util import pyenv

__all__ = ["ConsumerReport", "check_consumers"]


@dataclass
class ConsumerReport:
    """What :func:`check_consumers` found.

    ``frameworks``: judged rows for CTranslate2, PaddlePaddle, MXNet, TensorRT and every other
    distribution that NEEDs cuDNN; ``consumers``: every consumer library with its picks;
    ``findings``; ``copies``: vendored cuDNN files for the inventory (owner = the vendoring
    distribution); ``owners``: real path -> owner for files of scanned distributions;
    ``resolutions``: one per consumer; ``notes``; ``stats`` (``scan_s``, ``total_s`` in seconds,
    counts).
    """

    frameworks: list[FrameworkBuild] = field(default_factory=list)
    consumers: list[ConsumerLibrary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    copies: list[LibraryCopy] = field(default_factory=list)
    owners: dict[str, str] = field(default_factory=dict)
    resolutions: list[Resolution] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stats: dict[str, float] = field(default_factory=dict)

    def with_owners(self, copies: tuple[LibraryCopy, ...] | list[LibraryCopy]) -> list[LibraryCopy]:
        """``copies`` with owner "system" replaced by the scanned distribution that installed the file."""
        out = []
        for c in copies:
            owner = self.owners.get(realpath(c.path))
            out.append(dataclasses.replace(c, owner=owner) if owner and c.owner in ("system", "") else c)
        return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version_of(path: str, loaded: dict[str, LibraryCopy], owners: dict[str, str]) -> str | None:
    real = realpath(path)
    c = loaded.get(real)
    parsed = libnames.parse_name(os.path.basename(real))
    if parsed and parsed[2] and libnames.is_vendored_name(os.path.basename(real)):
        return parsed[2]  # a vendored copy's name is its version (auditwheel keeps the real file name's)
    if c is not None and c.version:
        return c.version

    try:
        return static_version(real, owners.get(real) or owner_of(path))[0]
    except Exception:  # noqa: BLE001
        return None


def check_consumers(*, frameworks: list[FrameworkBuild] | tuple[FrameworkBuild, ...] = (),
                    loaded: tuple[LibraryCopy, ...] | list[LibraryCopy] = (),
                    installed: tuple[LibraryCopy, ...] | list[LibraryCopy] = (),
                    environ: dict[str, str] | None = None, ldcache: dict[str, list[str]] | None = None,
                    gpus: bool = False, paths: list[str] | None = None, conda: str | bool | None = True,
                    top: list[str] | None = None, skip: frozenset[str] = frozenset()) -> ConsumerReport:
    """Find, resolve and judge every cuDNN consumer (module docstring).

    Args:
        frameworks: rows of the five big frameworks (their consumers are listed under their name
            and take part in the clash analysis; they get no second row).
        loaded: the cuDNN files mapped in this process (reused by the loader; versions).
        installed: the on-disk inventory (where a missing library could come from).
        environ: the environment the process started with (``LD_LIBRARY_PATH``).
        ldcache: the parsed ``ld.so`` cache.
        gpus: a GPU is visible (problems are errors instead of warnings).
        paths: site directories to scan instead of ``sys.path``'s; ``conda``: see
            :func:`~cudnn_magic.probes.frameworks.generic.scan_environment`.
        top: the loaders above an extension module (default: this interpreter's).
        skip: ``.dist-info`` folders the scan leaves out (the what-if: what pip would replace).
    """
    t0 = time.perf_counter()
    rep = ConsumerReport()
    try:
        _check(rep, list(frameworks), list(loaded), list(installed), environ, ldcache, gpus, paths, conda, top, skip)
    except Exception as exc:  # noqa: BLE001 - a probe never raises into the cell
        rep.notes.append(f"cuDNN consumer check failed: {type(exc).__name__}: {exc}")
    rep.stats["total_s"] = time.perf_counter() - t0
    return rep


class _Resolver:
    """Which file each cuDNN request of a consumer gets (the loader model), with the version it
    runs (cuDNN 9's shim: its graph library's) and the sub-libraries it will open."""

    def __init__(self, rep: ConsumerReport, loaded: list[LibraryCopy], env: dict[str, str],
                 ldcache: dict[str, list[str]] | None, top: list[str]) -> None:
        self.rep, self.env, self.ldcache, self.top = rep, env, ldcache, top
        self.mapped = [c.path for c in loaded]
        self.loaded_by_real = {realpath(c.path): c for c in loaded}

    def resolve(self, req: CudnnRequest, label: str, dist_vendored: set[str], legacy: bool, fresh: bool = False,
                preloads: tuple[Preload, ...] = ()) -> tuple[ConsumerLibrary, Resolution]:
        """``req`` resolved for ``label``; ``fresh``: in a process with nothing mapped yet."""
        env, ldcache, top = self.env, self.ldcache, self.top
        m = () if fresh else self.mapped
        if req.loader.startswith("pathfinder:"):
            res = pathfinder_pick(req.loader.split(":", 1)[1], label, environ=env, ldcache=ldcache, mapped=m)[0] or \
                Resolution(label, None, req.soname, None, "cuda-pathfinder does not know cuDNN")
            searched = tuple(f"{step} (cuda-pathfinder's order: {ORDER_SOURCE})" for step in ORDER)
        else:
            res = resolve_in_chain(req.soname, label, req.requester, list(req.chain), environ=env, ldcache=ldcache,
                                   mapped=m, preloads=preloads)
            steps = search_steps(req.requester, list(req.chain), environ=env) if "/" not in req.soname else []
            searched = tuple(f"{s.directory} ({s.why})" for s in steps)
        subs: tuple[SublibraryPick, ...] = ()
        sub_searched: tuple[str, ...] = ()
        version = None
        if res.picked:
            version = _version_of(res.picked, {**{c.path: c for c in self.rep.copies}, **self.loaded_by_real},
                                  self.rep.owners)
            if libnames.is_main(os.path.basename(res.picked)):
                # a preloaded main library was loaded by the consumer's Python code (ctypes), not by the library
                # that NEEDs it: its sub-libraries' RPATH chain is the interpreter's
                sub_chain = (list(top) if res.reason.startswith("preloaded") else
                             ([req.requester] if req.requester else []) + list(req.chain))
                subs = predict_sublibraries(res.opened or res.picked, sub_chain, consumer=label, environ=env, ldcache=ldcache,
                                            mapped=m,
                                            legacy_api=legacy, major=main_major(res.picked) or _major(req.soname))
                sub_searched = tuple(f"{s.directory} ({s.why})"
                                     for s in search_steps(res.opened or res.picked, sub_chain, environ=env))
                major = main_major(res.picked) or _major(req.soname)
                ans = next((s for s in subs if major == 9 and s.soname == ANSWERING[9] and s.path and s.version), None)
                if ans is not None:  # cuDNN 9's shim runs the release of the graph library it opens
                    version = ans.version
        soname = os.path.basename(req.soname) if "/" in req.soname else req.soname
        lib = ConsumerLibrary(
            path=req.requester or "", distribution="", soname=soname, how=req.how, picked=res.picked,
            picked_version=version, why=res.reason, vendored=bool(res.picked and realpath(res.picked) in dist_vendored),
            sublibraries=subs, searched=searched, sublibrary_searched=sub_searched)
        return lib, res

    def first_of(self, alternatives: list[CudnnRequest], label: str, dist_vendored: set[str], legacy: bool,
                 fresh: bool = False) -> tuple[ConsumerLibrary, Resolution]:
        """The first of ``alternatives`` that resolves (a framework tries them in order), else
        the plain name's answer."""
        for req in alternatives:
            got = self.resolve(req, label, dist_vendored, legacy, fresh)
            if got[0].picked:
                return got
        plain = next((r for r in alternatives if "/" not in r.soname), alternatives[-1])
        return self.resolve(plain, label, dist_vendored, legacy, fresh)


def _check(rep: ConsumerReport, frameworks: list[FrameworkBuild], loaded: list[LibraryCopy], installed: list[LibraryCopy],
           environ: dict[str, str] | None, ldcache: dict[str, list[str]] | None, gpus: bool, paths: list[str] | None,
           conda: str | bool | None, top: list[str] | None, skip: frozenset[str] = frozenset()) -> None:
    env = dict(os.environ if environ is None else environ)
    top = interpreter_loaders() if top is None else top
    scan = scan_environment(paths, conda=conda, environ=env, skip=skip)
    rep.notes += scan.notes
    rep.stats.update({f"scan_{k}": v for k, v in scan.stats.items()})
    rep.owners = scan.owner_by_path()
    resolver = _Resolver(rep, loaded, env, ldcache, top)
    # the mapped copies still the files at their paths (not replaced on disk since they were loaded)
    on_disk = {p: c for p, c in resolver.loaded_by_real.items() if not c.replaced}
    have = {realpath(c.path) for c in installed}
    for c in scan.vendored_copies():
        if c.path not in have:
            rep.copies.append(dataclasses.replace(c, loaded=c.path in on_disk))
    _query_unnamed(rep, on_disk, env)
    facts, fnotes = probe_extra_frameworks(scan, paths, top=top, environ=env)
    rep.notes += fnotes
    disk: dict[str, list[tuple[str, str | None]]] = {}
    for c in list(installed) + rep.copies + list(loaded):
        for key in {c.soname, c.name, libnames.soname_of(c.name)}:
            lst = disk.setdefault(key, [])
            if all(d != c.directory for d, _ in lst):
                lst.append((c.directory, c.version))
    needs: list[ConsumerNeed] = []
    known = {_norm(fw.distribution): fw for fw in frameworks}
    covered = _probed_consumers(rep, facts, scan, resolver, disk, gpus, needs, known)
    _generic_consumers(rep, scan, resolver, disk, gpus, needs, known, covered, env, ldcache, top)
    _big_frameworks(rep, frameworks, resolver, needs, top)
    rep.findings += clash_findings(needs, gpus=gpus)


def _probed_consumers(rep: ConsumerReport, facts: list[ConsumerFacts], scan: EnvironmentScan, resolver: _Resolver,
                      disk: dict[str, list[tuple[str, str | None]]], gpus: bool, needs: list[ConsumerNeed],
                      known: dict[str, FrameworkBuild]) -> set[str]:
    """The consumers with a probe of their own (CTranslate2, PaddlePaddle, MXNet, TensorRT...):
    resolved, judged by their own rule; returns the libraries they cover."""
    covered: set[str] = set()
    for f in facts:
        label = f"{f.row.name} {f.row.version}"
        dist = next((d for d in scan.distributions if f.distribution and _norm(d.name) == _norm(f.distribution)), None)
        vend = {realpath(v.path) for v in (dist.vendored if dist else ())}
        upgrade = Fix("upgrade-consumer", f.upgrade[0], f.upgrade[1], True) if f.upgrade else None
        libs: list[ConsumerLibrary] = []
        if f.alternatives:
            # DT_NEEDED requests are separate libraries; dlopen alternatives are tried in order.
            groups = ([[r] for r in f.alternatives] if all(r.how.startswith("DT_NEEDED") for r in f.alternatives)
                      else [f.alternatives])
            for group in groups:
                lib, res = resolver.first_of(group, label, vend, f.legacy_api)
                lib = dataclasses.replace(lib, distribution=label if dist is None else dist.label, framework=f.row.name)
                libs.append(lib)
                rep.resolutions.append(res)
                covered.update(r.requester or "" for r in group)
            fresh_lib, _ = resolver.first_of(groups[0], label, vend, f.legacy_api, fresh=True)
            needs.append(ConsumerNeed(label, _major_of(libs[0]), fresh_lib.sublibraries, fresh_lib.picked, upgrade))
        row = dataclasses.replace(f.row, consumer_library=f.row.consumer_library or (libs[0].path if libs else None))
        judged = judge_consumer(row,
                                libs, gpus=gpus, disk_dirs=_with_search_dirs(disk, libs), optional=f.optional,
                                upgrade=upgrade, unknown=f.unknown)
        rep.frameworks.append(judged.row)
        rep.findings += judged.findings
        rep.consumers += libs
        if f.distribution:
            known[_norm(f.distribution)] = judged.row
    return covered


def _generic_consumers(rep: ConsumerReport, scan: EnvironmentScan, resolver: _Resolver,
                       disk: dict[str, list[tuple[str, str | None]]], gpus: bool, needs: list[ConsumerNeed],
                       known: dict[str, FrameworkBuild], covered: set[str], env: dict[str, str],
                       ldcache: dict[str, list[str]] | None, top: list[str]) -> None:
    """Every other library that NEEDs cuDNN: resolved; judged by the soname rule unless it
    belongs to a framework already judged."""
    for d in scan.distributions:
        vend = {realpath(v.path) for v in d.vendored}
        fw = known.get(_norm(d.name))
        libs: list[ConsumerLibrary] = []
        blocked: list[ConsumerLibrary] = []
        for lib in d.consumers:
            if lib.path in covered:
                continue
            chain = chain_within(d, lib.path, top)
            missing = _not_installed(lib, chain, env, ldcache, scan.native_names, d)
            for soname in lib.cudnn_needed:
                label = f"{fw.name} {fw.version}" if fw else d.label
                c, res = resolver.resolve(CudnnRequest(soname, lib.path, chain, f"DT_NEEDED of {os.path.basename(lib.path)}"),
                                          label, vend, False, preloads=fw.preloads if fw else ())
                c = dataclasses.replace(c, distribution=d.label, framework=fw.name if fw else None, blocked_by=missing)
                (blocked if missing else libs).append(c)
                rep.resolutions.append(res)
        rep.consumers += blocked
        if not libs:
            if blocked and fw is None:  # a library that cannot load at all: its cuDNN is not what stops it
                b = blocked[0]
                rep.frameworks.append(FrameworkBuild(
                    name=d.name, distribution=d.name, version=d.version, imported=_imported(d), cudnn_soname=b.soname,
                    consumer_library=b.path, checker="soname", verdict="not-applicable",
                    detail=(f"{os.path.basename(b.path)} NEEDs {', '.join(b.blocked_by)}, which the loader cannot find and "
                            "nothing installed here provides, so it cannot load at all; its cuDNN is not what stops it "
                            f"(install what provides {b.blocked_by[0]} to use it)")))
            continue
        rep.consumers += libs
        if fw is not None:
            fresh, _ = resolver.resolve(CudnnRequest(libs[0].soname, libs[0].path, chain_within(d, libs[0].path, top)),
                                        f"{fw.name} {fw.version}", vend, False, fresh=True, preloads=fw.preloads)
            needs.append(ConsumerNeed(f"{fw.name} {fw.version}", _major_of(libs[0]), fresh.sublibraries, fresh.picked))
            continue
        first = libs[0]
        major = _major_of(first)
        via_wheel = any("/nvidia/cudnn" in s for s in first.searched)
        row = FrameworkBuild(
            name=d.name, distribution=d.name, version=d.version, imported=_imported(d),
            cudnn_compiled=str(major) if major else None,
            cudnn_compiled_source=f"the soname {os.path.basename(first.path)} NEEDs ({first.soname})",
            cudnn_soname=first.soname, consumer_library=first.path, checker="soname", pip_solvable=via_wheel)
        judged = judge_consumer(row, libs, gpus=gpus, disk_dirs=_with_search_dirs(disk, libs))
        rep.frameworks.append(judged.row)
        rep.findings += judged.findings
        fresh, _ = resolver.resolve(CudnnRequest(first.soname, first.path, chain_within(d, first.path, top)), d.label,
                                    vend, False, fresh=True)
        needs.append(ConsumerNeed(d.label, major, fresh.sublibraries, fresh.picked))


def _big_frameworks(rep: ConsumerReport, frameworks: list[FrameworkBuild], resolver: _Resolver,
                    needs: list[ConsumerNeed], top: list[str]) -> None:
    """The big frameworks that dlopen cuDNN (TensorFlow, JAX...): listed, and in the clash analysis."""
    seen_labels = {n.label for n in needs}
    for fw in frameworks:
        label = f"{fw.name} {fw.version}"
        if label in seen_labels or not fw.consumer_library or not fw.cudnn_soname:
            continue
        req = CudnnRequest(fw.cudnn_soname, fw.consumer_library, tuple(top), f"dlopen by {os.path.basename(fw.consumer_library)}")
        c, _res = resolver.resolve(req, label, set(), False, preloads=fw.preloads)
        rep.consumers.append(dataclasses.replace(c, distribution=f"{fw.distribution} {fw.version}", framework=fw.name))
        fresh, _ = resolver.resolve(req, label, set(), False, fresh=True, preloads=fw.preloads)
        needs.append(ConsumerNeed(label, _major_of(c), fresh.sublibraries, fresh.picked))


#: Libraries a machine with a GPU gets from its driver, never from a distribution: their absence on
#: a machine without one says nothing about a consumer.
_DRIVER_LIBS = ("libcuda.so", "libnvidia-", "libnvcuvid.so", "libnvidia-ml.so")


def _not_installed(lib, chain, env, ldcache, provided, dist) -> tuple[str, ...]:  # type: ignore[no-untyped-def]
    """The non-cuDNN libraries ``lib`` NEEDs that the loader cannot find and that no scanned
    distribution installs (``libnvinfer.so.10`` without TensorRT): ``lib`` cannot load at all."""

    own = {os.path.basename(x.path) for x in dist.libraries} | {x.soname for x in dist.libraries if x.soname}
    out = []
    for n in lib.needed:
        if n.startswith("libcudnn") or n.startswith(_DRIVER_LIBS) or n in provided or n in own:
            continue
        if not resolve_in_chain(n, "", lib.path, list(chain), environ=env, ldcache=ldcache).picked:
            out.append(n)
    return tuple(out)


def _query_unnamed(rep: ConsumerReport, loaded: dict[str, LibraryCopy], env: dict[str, str]) -> None:
    """A vendored main library whose name carries no full version (``libcudnn-0123abcd.so.8``):
    its mapped copy's version when its file is the one mapped (not replaced on disk since), else its
    own ``cudnnGetVersion`` in a child process (a copy without its sub-library aborts there, not
    here; that is recorded as its error)."""

    todo = [i for i, c in enumerate(rep.copies) if c.version is None and c.is_main and c.error is None]
    for i in list(todo):
        m = loaded.get(rep.copies[i].path)
        if m is not None and m.version:
            rep.copies[i] = dataclasses.replace(rep.copies[i], version=m.version, version_source=m.version_source)
            todo.remove(i)
    if not todo:
        return

    res = query_versions([rep.copies[i].path for i in todo], env=env)
    for i in todo:
        c = rep.copies[i]
        r = res.get(c.path)
        v = try_parse(r.version) if r and r.version is not None else None
        if v is not None:
            rep.copies[i] = dataclasses.replace(c, version=str(v), version_source="cudnnGetVersion in a child process")
        elif r and r.error:
            rep.copies[i] = dataclasses.replace(c, error=r.error)


def _with_search_dirs(disk: dict[str, list[tuple[str, str | None]]], libs: list[ConsumerLibrary]
                      ) -> dict[str, list[tuple[str, str | None]]]:
    """``disk`` plus the directories a consumer's own search would try for its main library
    that hold a sub-library its pick cannot find (the wheel its RUNPATH points to, shadowed by an
    earlier directory): the place to put first."""
    out = {k: list(v) for k, v in disk.items()}
    for c in libs:
        dirs = [s.rsplit(" (", 1)[0] for s in c.searched]
        for sub in c.sublibraries:
            if sub.path:
                continue
            for d in dirs:
                p = os.path.join(d, sub.soname)
                if os.path.exists(p):
                    real_dir = os.path.dirname(realpath(p))
                    lst = out.setdefault(sub.soname, [])
                    if all(x != real_dir for x, _ in lst):
                        lst.insert(0, (real_dir, _version_of(p, {}, {})))
    return out


def _major(soname: str) -> int | None:
    p = libnames.parse_name(os.path.basename(soname))
    return p[1] if p else None


def _major_of(c: ConsumerLibrary) -> int | None:
    if c.picked_version:
        v = try_parse(c.picked_version)
        if v is not None:
            return v.major
    return _major(c.soname)


def _imported(d) -> bool:  # type: ignore[no-untyped-def]
    """A module of distribution ``d`` is imported (its top-level package name matches)."""
    name = d.name.replace("-", "_")
    return pyenv.imported(name) is not None
