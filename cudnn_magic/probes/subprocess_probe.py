"""Query a cuDNN library that is NOT mapped into this process, in a child process.

Loading an unmapped ``libcudnn`` into the kernel is never safe: a copy without its
``libcudnn_graph`` (cuDNN 9) or ``libcudnn_ops_infer`` (cuDNN 8) sub-library aborts the whole
process on the first call ("Invalid handle. Cannot load symbol cudnnGetVersion", exit 134;
docs/facts.md "cuDNN on a machine without a GPU"). The child runs ``python -I -S`` (no site, ~20 ms), loads the
file with ``RTLD_LOCAL|RTLD_NOW``, asks ``cudnnGetVersion``/``cudnnGetProperty``/
``cudnnGetCudartVersion`` and prints one JSON line. If it dies, the signal and its stderr say
why. The script below is a constant of this module; no text from outside is ever executed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import time
from dataclasses import dataclass

from ..knowledge.status_codes import decode_status
from ..util import pyenv
from ..util.files import note_skipped, regular_or_reason

_CHILD = r"""
import ctypes, json, os, sys
path = sys.argv[1]
out = {"path": path}
try:
    lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL | getattr(os, "RTLD_NOW", 2))
except OSError as exc:
    out["load_error"] = str(exc)
    print(json.dumps(out)); sys.stdout.flush(); sys.exit(0)
print(json.dumps({"stage": "loaded"})); sys.stdout.flush()
def call(name, restype=ctypes.c_size_t):
    fn = getattr(lib, name, None)
    if fn is None:
        return None
    fn.restype = restype
    fn.argtypes = []
    return int(fn())
out["version"] = call("cudnnGetVersion")
prop = getattr(lib, "cudnnGetProperty", None)
if prop is not None:
    parts = []
    for t in (0, 1, 2):
        v = ctypes.c_int(-1)
        prop.restype = ctypes.c_int
        st = prop(ctypes.c_int(t), ctypes.byref(v))
        parts.append(v.value if st == 0 else None)
    out["property"] = parts
out["cudart"] = call("cudnnGetCudartVersion")
maps = []
try:
    with open("/proc/self/maps") as fh:
        for line in fh:
            p = line.split(None, 5)
            if len(p) == 6 and "libcudnn" in p[5]:
                q = p[5].strip()
                if q not in maps:
                    maps.append(q)
except OSError:
    pass
out["mapped"] = maps
print(json.dumps(out)); sys.stdout.flush()
"""


@dataclass(frozen=True)
class ChildResult:
    """What the child saw for one library.

    ``version`` is the raw ``cudnnGetVersion()`` integer, ``prop`` the (major, minor, patch)
    from ``cudnnGetProperty``, ``cudart`` the ``cudnnGetCudartVersion()`` integer. ``error`` is
    set when it could not load or died (e.g. "aborted (SIGABRT): Invalid handle. Cannot load
    symbol cudnnGetVersion"). ``mapped`` lists every libcudnn* the child had mapped after the
    calls (shows which sub-libraries were pulled in).
    """

    path: str
    version: int | None = None
    prop: tuple[int | None, ...] | None = None
    cudart: int | None = None
    error: str | None = None
    mapped: tuple[str, ...] = ()


def _parse(path: str, proc_rc: int | None, stdout: str, stderr: str) -> ChildResult:
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    final = None
    for ln in lines:
        try:
            obj = json.loads(ln)
        except ValueError:
            continue
        if "path" in obj:
            final = obj
    tail = " ".join(stderr.strip().splitlines()[-3:])[:400]
    if final is None:
        if proc_rc is None:
            return ChildResult(path, error="timed out")
        if proc_rc < 0:
            import signal  # start-up cost: a child's death is rare; a check that starts none never needs it

            try:
                sig = signal.Signals(-proc_rc).name
            except ValueError:
                sig = str(-proc_rc)
            return ChildResult(path, error=f"the process died ({sig}) while loading or calling it: {tail or 'no message'}")
        return ChildResult(path, error=f"child exited {proc_rc}: {tail or 'no message'}")
    if "load_error" in final:
        return ChildResult(path, error=final["load_error"])
    prop = final.get("property")
    return ChildResult(
        path,
        version=final.get("version"),
        prop=tuple(prop) if prop else None,
        cudart=final.get("cudart"),
        mapped=tuple(final.get("mapped") or ()),
    )


def _would_block(path: str) -> str | None:
    """Why a child must not ``dlopen`` ``path``, or None: it is not a regular file (a FIFO named
    like a library blocks ``dlopen`` in its ``open`` until the child is killed), or its folder,
    where the loader looks for its sub-libraries and dependencies first, holds a FIFO or a device
    named like a library. The refused file is noted as skipped. Never raises."""

    why = regular_or_reason(path)
    if why is not None:
        return f"not loaded: {path} is not a regular file ({why})" if os.path.lexists(path) else f"not loaded: {why}"
    d = os.path.dirname(path)
    try:
        names = [n for n in os.listdir(d) if ".so" in n]
    except OSError:
        return None
    for n in sorted(names):
        p = os.path.join(d, n)
        # a broken link or a folder: skipped by the loader
        if os.path.exists(p) and not os.path.isdir(p) and regular_or_reason(p) is not None:
            return f"not loaded: {p} beside it is not a regular file (the loader would block opening it)"
    return None


def _alone_env(env: dict[str, str], path: str) -> dict[str, str]:
    """``env`` for a child that must load ``path``'s folder alone: ``LD_LIBRARY_PATH`` is that
    folder only and nothing is preloaded, so the shim's sub-libraries come from beside it (a
    shim with RUNPATH ``$ORIGIN`` -- the 9.12 jit wheel's -- would otherwise take a
    ``libcudnn_graph`` from ``LD_LIBRARY_PATH`` first, ``ld.so(8)``)."""
    out = {k: v for k, v in env.items() if k not in ("LD_LIBRARY_PATH", "LD_PRELOAD", "LD_AUDIT")}
    out["LD_LIBRARY_PATH"] = os.path.dirname(path)
    return out


_RESULTS: dict[tuple, ChildResult] = {}
_RESULTS_MAX = 1024


def parallel_limit() -> int:
    """How many child queries run at once: the CPUs this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _file_key(path: str, env: dict[str, str], alone: bool = False) -> tuple | None:
    """What a child's answer depends on: the file's identity and contents as ``stat`` shows them
    (device, inode, size, mtime: the same for every hard link and symbolic link to one file),
    the ``LD_LIBRARY_PATH`` its dependencies are found on, and whether it was loaded with its
    folder alone (then that folder is the ``LD_LIBRARY_PATH``: links to one file from two
    folders are asked once per folder, as the sub-libraries beside each may differ)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    ldp = (_alone_env(env, path) if alone else env).get("LD_LIBRARY_PATH", "")
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, ldp, alone)


def _cacheable(r: ChildResult) -> bool:
    """A timeout, a failed start or a kill from outside says nothing lasting about the file; nor
    does a refusal to start one (a FIFO beside it: checked, and noted, on every query)."""
    e = r.error or ""
    return not (e == "timed out" or e.startswith(("could not start", "not loaded:")) or "SIGKILL" in e or "SIGTERM" in e)


def _may_load(paths: list[str]) -> bool:
    """False (each path noted as not loaded, :func:`~cudnn_magic.files.note_skipped`) when the check
    is about another process whose user this process is not (``cudnn-magic check --pid`` run by
    root): loading a library runs its code, which must never run with more rights than the process
    that could have put it there."""
    if pyenv.may_load_libraries():
        return True
    me = os.geteuid()
    env = pyenv.target()
    who = f"process {env.pid}" if env is not None else "the process checked"
    for p in dict.fromkeys(paths):
        note_skipped(p, f"not loaded: its version is not in the file, and loading it to ask would run its code as this "
                        f"user (uid {me}), not as the user of {who}; run the check as that "
                        "user to have it asked")
    return False


def query_versions(paths: list[str], timeout_s: float = 10.0, env: dict[str, str] | None = None,
                   alone: bool = False, max_parallel: int | None = None) -> dict[str, ChildResult]:
    """Query each library in a child process of its own.

    Answers are cached for the life of this process by the file's (device, inode, size, mtime),
    ``LD_LIBRARY_PATH`` and ``alone`` (:func:`_file_key`), so a second ``%cudnn_check`` starts no
    child for a file already asked and unchanged, and hard links to one file are asked once. At
    most ``max_parallel`` children run at once (default :func:`parallel_limit`, the CPUs): 40
    copies no longer start 40 Pythons together (``benchmarks/bench_version_queries.py``).

    Args:
        paths: absolute paths of ``libcudnn.so*`` main libraries.
        timeout_s: wall-clock limit for the whole batch, in seconds; a child still running then
            is killed and reported as "timed out", one not started yet likewise.
        env: environment for the children (default: this process's).
        alone: load each library with its own folder alone (``LD_LIBRARY_PATH`` set to that
            folder, no preload), so the answer is that folder's cuDNN, not what another
            copy on the search path would answer.
        max_parallel: children at once (default: the CPUs this process may use).

    Returns:
        ``{path: ChildResult}``. Never raises.
    """
    # start-up cost: the thread pool only for parallel version queries
    from concurrent.futures import ThreadPoolExecutor

    if not _may_load(paths):
        return {}
    base = env if env is not None else os.environ.copy()
    out: dict[str, ChildResult] = {}
    todo: dict[tuple, list[str]] = {}
    for p in dict.fromkeys(paths):
        key = _file_key(p, base, alone)
        hit = _RESULTS.get(key) if key is not None else None
        if hit is not None:
            out[p] = dataclasses.replace(hit, path=p)
        else:
            todo.setdefault(key if key is not None else ("path", p), []).append(p)
    if not todo:
        return out
    # start-up cost (subprocess with signal and selectors): only when a version must be asked of
    # a child; a check whose versions are all read from the files or cached starts none
    import subprocess

    deadline = time.monotonic() + timeout_s  # one limit for the whole batch

    def one(path: str) -> ChildResult:
        left = deadline - time.monotonic()
        if left <= 0:
            return ChildResult(path, error="timed out")
        blocked = _would_block(path)
        if blocked is not None:
            return ChildResult(path, error=blocked)
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _CHILD, path],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, errors="replace", env=_alone_env(base, path) if alone else dict(base),
            )
        except OSError as exc:
            return ChildResult(path, error=f"could not start a child process: {exc}")
        try:
            so, se = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            return _parse(path, proc.returncode, so, se)
        except subprocess.TimeoutExpired:
            proc.kill()
            so, se = proc.communicate()
            return _parse(path, None, so, se)

    items = list(todo.items())
    workers = max(1, min(max_parallel or parallel_limit(), len(items)))
    try:
        if workers == 1:
            answers = [one(ps[0]) for _, ps in items]
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cudnn-magic-query") as pool:
                answers = list(pool.map(lambda kv: one(kv[1][0]), items))
    except Exception as exc:  # noqa: BLE001 - a probe never raises
        answers = [ChildResult(ps[0], error=f"could not start a child process: {exc}") for _, ps in items]
    for (key, ps), r in zip(items, answers):
        if key[0] != "path" and _cacheable(r):
            if len(_RESULTS) >= _RESULTS_MAX:
                _RESULTS.clear()
            _RESULTS[key] = r
        for p in ps:
            out[p] = dataclasses.replace(r, path=p)
    return out


# --------------------------------------------------------------------------------------------
# Deep probe: a copy with all its sub-libraries (``%cudnn_check --deep``)

_DEEP_CHILD = r"""
import ctypes, json, os, sys
def emit(o):
    sys.stdout.write(json.dumps(o) + "\n"); sys.stdout.flush()
mode = os.RTLD_LOCAL | getattr(os, "RTLD_NOW", 2)
main, checks, subs = sys.argv[1], sys.argv[2].split(",") if sys.argv[2] else [], sys.argv[3:]
handles = []
for p in subs:
    emit({"stage": "loading " + os.path.basename(p)})
    try:
        handles.append((p, ctypes.CDLL(p, mode=mode)))
        emit({"lib": p, "ok": True})
    except OSError as exc:
        emit({"lib": p, "ok": False, "error": str(exc)})
emit({"stage": "loading " + os.path.basename(main)})
try:
    lib = ctypes.CDLL(main, mode=mode)
    emit({"lib": main, "ok": True})
except OSError as exc:
    emit({"lib": main, "ok": False, "error": str(exc)})
    lib = None
if lib is not None:
    for p, h in handles:
        fn = getattr(h, "cudnnGetVersion", None)
        if fn is not None:
            emit({"stage": "calling cudnnGetVersion in " + os.path.basename(p)})
            fn.restype, fn.argtypes = ctypes.c_size_t, []
            emit({"subversion": p, "value": int(fn())})
    for name in ["cudnnGetVersion"] + checks:
        fn = getattr(lib, name, None)
        if fn is None:
            for p, h in handles:
                fn = getattr(h, name, None)
                if fn is not None:
                    break
        if fn is None:
            emit({"call": name, "absent": True})
            continue
        emit({"stage": "calling " + name})
        fn.restype, fn.argtypes = (ctypes.c_size_t if name == "cudnnGetVersion" else ctypes.c_int), []
        emit({"call": name, "rc": int(fn())})
maps = []
try:
    with open("/proc/self/maps") as fh:
        for line in fh:
            q = line.split(None, 5)
            if len(q) == 6 and "/" in q[5]:
                q = q[5].strip()
                if q not in maps and ".so" in q:
                    maps.append(q)
except OSError:
    pass
emit({"done": True, "mapped": maps})
"""

DEEP_TIMEOUT_S = 60.0
"""Wall-clock limit (seconds) for one deep child: ``RTLD_NOW`` on cuDNN 9's 600 MB
``libcudnn_engines_precompiled`` takes a few seconds on a slow disk."""

#: cuDNN 9 shim exports (``nm -D libcudnn.so.9``, 9.27) and the sub-library each one checks.
VERSION_CHECKS_9 = (("cudnnGraphVersionCheck", "graph"), ("cudnnOpsVersionCheck", "ops"),
                    ("cudnnCnnVersionCheck", "cnn"), ("cudnnAdvVersionCheck", "adv"),
                    ("cudnnSubquadraticOpsVersionCheck", "subquadratic_ops"))
#: cuDNN 8 sub-libraries, all shipped by every cuDNN 8 package, and their version checks.
VERSION_CHECKS_8 = (("cudnnOpsInferVersionCheck", "ops_infer"), ("cudnnOpsTrainVersionCheck", "ops_train"),
                    ("cudnnCnnInferVersionCheck", "cnn_infer"), ("cudnnCnnTrainVersionCheck", "cnn_train"),
                    ("cudnnAdvInferVersionCheck", "adv_infer"), ("cudnnAdvTrainVersionCheck", "adv_train"))
#: sub-libraries without which the copy cannot work at all (cuDNN 9: the first call aborts).
REQUIRED = {9: ("graph",), 8: ("ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train")}
#: cuDNN 9 load order: the graph library first (every other one NEEDs it), engines last.
_ORDER_9 = ("graph", "heuristic", "ops", "cnn", "adv", "subquadratic_ops", "engines_precompiled",
            "engines_runtime_compiled")


@dataclass(frozen=True)
class DeepProblem:
    """One thing the deep probe found about a copy.

    ``kind``: ``missing-file``, ``missing-dependency``, ``undefined-symbol``,
    ``symbol-version``, ``mixed-versions``, ``version-check-failed``, ``other-copy-mapped``,
    ``died`` (signal or timeout), ``load-failed`` (any other loader error) — severity "error";
    ``absent-optional`` (a cuDNN 9 sub-library this package does not ship, e.g. the JIT wheel
    has no ``libcudnn_ops``) and ``no-driver`` (``libcuda.so.1`` missing) — severity "note";
    ``absent-aborts`` (such a sub-library, and the release's ``libcudnn.so.9`` aborts the process
    on a call it serves instead of returning ``CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE``:
    the 9.12 JIT wheel, measured with glibc's ``LD_DEBUG=libs``; 9.27 returns the status) —
    severity "warning".
    ``library`` is the file name concerned (``libcudnn_graph.so.9``, or the function name for
    calls), ``reason`` a sentence with the loader's or cuDNN's own words.
    """

    library: str
    kind: str
    reason: str
    severity: str = "error"


@dataclass(frozen=True)
class DeepResult:
    """The deep probe of one copy: ``loaded`` lists the files the child loaded successfully,
    ``version`` is ``cudnnGetVersion()`` through the main library, ``sub_versions`` what each
    sub-library that exports ``cudnnGetVersion`` answered, ``checks`` maps each version-check
    function to its status (0 = success), ``mapped`` every shared object the child had mapped at
    the end (the dependencies that were pulled in)."""

    path: str
    major: int | None
    problems: tuple[DeepProblem, ...] = ()
    loaded: tuple[str, ...] = ()
    version: int | None = None
    sub_versions: tuple[tuple[str, int], ...] = ()
    checks: tuple[tuple[str, int], ...] = ()
    mapped: tuple[str, ...] = ()

    @property
    def errors(self) -> tuple[DeepProblem, ...]:
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def error(self) -> str | None:
        """The error problems as one sentence per library, or ``None`` when the copy loads."""
        errs = self.errors
        if not errs:
            return None
        return "; ".join(f"{p.library}: {p.reason}" for p in errs)


def _major_of(path: str) -> int | None:
    m = re.search(r"libcudnn\.so\.(\d+)", os.path.basename(path))
    return int(m.group(1)) if m else None


def deep_plan(path: str) -> tuple[int | None, list[str], list[DeepProblem], list[tuple[str, str]]]:
    """Which sub-libraries of the copy at ``path`` to load, in order, what is missing, and
    which version-check functions to call.

    Returns:
        ``(major, sub-library paths, problems found on disk, [(check function, sub-library stem)])``.
    """
    d = os.path.dirname(path)
    major = _major_of(path)
    try:
        names = sorted(os.listdir(d))
    except OSError as exc:
        return major, [], [DeepProblem(os.path.basename(path), "missing-file", f"cannot list {d}: {exc.strerror}")], []
    pat = re.compile(r"^libcudnn_([a-z_]+)\.so\.(\d+)$")
    found: dict[str, str] = {}
    for n in names:
        m = pat.match(n)
        if m and (major is None or int(m.group(2)) == major):
            found[m.group(1)] = os.path.join(d, n)
    problems: list[DeepProblem] = []
    for stem in REQUIRED.get(major or 0, ()):
        if stem not in found:
            versioned = [n for n in names if n.startswith(f"libcudnn_{stem}.so.{major}.")]
            why = (f"only {versioned[0]} is there: the soname link libcudnn_{stem}.so.{major} the loader asks for is missing"
                   if versioned else f"not in {d}")
            problems.append(DeepProblem(f"libcudnn_{stem}.so.{major}", "missing-file", why))
    order = _ORDER_9 if major == 9 else tuple(s for _, s in VERSION_CHECKS_8)
    subs = [found[s] for s in order if s in found] + [found[s] for s in sorted(found) if s not in order]
    checks = list(VERSION_CHECKS_9 if major == 9 else VERSION_CHECKS_8 if major == 8 else ())
    return major, subs, problems, checks


def _classify_load_error(lib: str, msg: str) -> DeepProblem:
    name = os.path.basename(lib)
    m = re.search(r"([^\s:]+): cannot open shared object file", msg)
    if m:
        dep = os.path.basename(m.group(1))
        if dep == name:
            return DeepProblem(name, "missing-file", msg)
        if dep.startswith("libcuda.so"):
            return DeepProblem(name, "no-driver", f"needs {dep}, the NVIDIA driver library, which is not installed "
                               f"here ({msg}); on a machine with the driver this is not a problem", "note")
        return DeepProblem(name, "missing-dependency", f"its dependency {dep} is not found ({msg})")
    m = re.search(r"undefined symbol: (\S+)", msg)
    if m:
        return DeepProblem(name, "undefined-symbol", f"undefined symbol {m.group(1)}: built against another "
                           f"release of a library it uses ({msg})")
    if "version `" in msg and "not found" in msg:
        return DeepProblem(name, "symbol-version", f"needs a newer library than the one found ({msg})")
    return DeepProblem(name, "load-failed", msg)


def _parse_deep(path: str, major: int | None, problems: list[DeepProblem], checks: list[tuple[str, str]],
                subs: list[str], rc: int | None, stdout: str, stderr: str, timeout_s: float) -> DeepResult:
    stage = None
    loaded: list[str] = []
    version = None
    sub_versions: list[tuple[str, int]] = []
    calls: list[tuple[str, int]] = []
    mapped: tuple[str, ...] = ()
    done = False
    stems_present = {re.sub(r"^libcudnn_|\.so\.\d+$", "", os.path.basename(p)) for p in subs} if subs else set()
    for ln in stdout.splitlines():
        try:
            obj = json.loads(ln)
        except ValueError:
            continue
        if "stage" in obj:
            stage = obj["stage"]
        elif "lib" in obj:
            stage = None
            if obj.get("ok"):
                loaded.append(obj["lib"])
            else:
                problems.append(_classify_load_error(obj["lib"], str(obj.get("error", ""))))
        elif "subversion" in obj:
            stage = None
            sub_versions.append((os.path.basename(obj["subversion"]), int(obj["value"])))
        elif "call" in obj:
            stage = None
            if obj.get("absent"):
                continue
            if obj["call"] == "cudnnGetVersion":
                version = int(obj["rc"])
            else:
                calls.append((obj["call"], int(obj["rc"])))
        elif obj.get("done"):
            done = True
            mapped = tuple(obj.get("mapped") or ())
    tail = " ".join(stderr.strip().splitlines()[-3:])[:400]
    if not done:
        if rc is None:
            how = f"timed out after {timeout_s:g} s"
        elif rc < 0:
            import signal  # start-up cost: a child's death is rare; a check that starts none never needs it

            try:
                how = f"the process died ({signal.Signals(-rc).name})"
            except ValueError:
                how = f"the process died (signal {-rc})"
        else:
            how = f"the child exited with status {rc}"
        what = stage or "starting"
        fn = what.split(" ", 1)[-1] if stage and stage.startswith("calling ") else ""
        stem = next((s for f, s in checks if f == fn), "")
        unable = re.search(r"Unable to load any of \{libcudnn_" + re.escape(stem) + r"\.so", stderr) if stem else None
        if unable and stem not in stems_present and stem not in REQUIRED.get(major or 0, ()):
            # the package does not ship it, and this release's shim aborts instead of returning a
            # status (cuDNN 9.12's jit wheel; 9.27's returns ..._SUBLIBRARY_UNAVAILABLE): not a broken install
            problems.append(DeepProblem(
                f"libcudnn_{stem}.so.{major}", "absent-aborts",
                f"not shipped in this package, and this cuDNN release ends the process when a call it serves is "
                f"made: {fn} printed \"{tail}\", then {how}; the sub-libraries after it were not called", "warning"))
        else:
            problems.append(DeepProblem(what.split(" ", 1)[-1] if stage else os.path.basename(path), "died",
                                        f"{how} while {what}: {tail or 'no message'}"))
    for fn, code in calls:
        stem = next((s for f, s in checks if f == fn), "")
        st = decode_status(code, major)
        if code == 0:
            continue
        lib = f"libcudnn_{stem}.so.{major}" if stem and major else fn
        if stem not in stems_present and st.name.endswith(("SUBLIBRARY_UNAVAILABLE", "SUBLIBRARY_LOADING_FAILED")) \
                and stem not in REQUIRED.get(major or 0, ()):
            problems.append(DeepProblem(lib, "absent-optional",
                                        f"not shipped in this package ({fn} returned {st.name}); the cuDNN API calls "
                                        "it serves are unavailable, the graph API works", "note"))
        elif st.name.endswith("VERSION_MISMATCH"):
            problems.append(DeepProblem(lib, "mixed-versions", f"{fn} returned {st.name}: this sub-library is from "
                                        "another cuDNN release than the main library"))
        else:
            problems.append(DeepProblem(lib, "version-check-failed", f"{fn} returned {st.name} ({code})"))
    if version is not None:
        for name, v in sub_versions:
            if v != version:
                problems.append(DeepProblem(name, "mixed-versions", f"reports cuDNN version {v}, the main library "
                                            f"{os.path.basename(path)} reports {version}"))
    own_dir = os.path.dirname(os.path.realpath(path))
    for m in mapped:
        base = os.path.basename(m)
        if base.startswith("libcudnn") and os.path.dirname(os.path.realpath(m)) != own_dir:
            problems.append(DeepProblem(base, "other-copy-mapped", f"the copy in {own_dir} pulled in {m} from "
                                        "another directory: two cuDNN copies mixed in one process"))
    seen: set[tuple[str, str]] = set()
    uniq = []
    for p in problems:
        if (p.library, p.kind) not in seen:
            seen.add((p.library, p.kind))
            uniq.append(p)
    return DeepResult(path, major, tuple(uniq), tuple(loaded), version, tuple(sub_versions), tuple(calls), mapped)


def deep_probe(paths: list[str], timeout_s: float = DEEP_TIMEOUT_S,
               env: dict[str, str] | None = None) -> dict[str, DeepResult]:
    """Load each cuDNN copy WITH all its sub-libraries in its own child process (all at once)
    and report per copy what fails and why. The calling process loads nothing.

    For each main library ``.../libcudnn.so.N`` the child ``dlopen``\\ s (``RTLD_LOCAL|RTLD_NOW``,
    so every symbol and every dependency such as ``libnvrtc``, ``libcublasLt``, ``libz`` or
    ``libcuda`` is resolved at once) each ``libcudnn_*.so.N`` in the same directory, the
    graph library first; then the main library; then calls ``cudnnGetVersion`` through each
    sub-library that exports it and through the main library, and the ``cudnn*VersionCheck``
    functions (cuDNN 9: Graph, Ops, Cnn, Adv, SubquadraticOps; cuDNN 8: Ops/Cnn/Adv Infer/Train).
    Loading the same directory's sub-libraries first makes the main library's own ``dlopen`` of
    ``libcudnn_graph.so.9`` reuse them, as a framework that preloads its wheel's copy does.

    Args:
        paths: main libraries (``libcudnn.so.N`` files).
        timeout_s: wall-clock limit in seconds for all children together (each still running
            then is killed and reported as "timed out").
        env: environment of the children (use the LD_LIBRARY_PATH the kernel started with).

    Returns:
        ``{path: DeepResult}``. Never raises.
    """
    procs: dict[str, tuple] = {}
    if not _may_load(paths):
        return {}
    import subprocess  # start-up cost: only --deep starts these children

    for p in dict.fromkeys(paths):
        major, subs, problems, checks = deep_plan(p)
        blocked = _would_block(p)
        if blocked is not None:
            procs[p] = (None, major, subs, [*problems, DeepProblem(os.path.basename(p), "load-failed", blocked)], checks)
            continue
        try:
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _DEEP_CHILD, p, ",".join(f for f, _ in checks), *subs],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, errors="replace", env=env if env is not None else os.environ.copy(),
            )
        except OSError as exc:
            procs[p] = (None, major, subs, [*problems, DeepProblem(os.path.basename(p), "died",
                                                                   f"could not start a child process: {exc}")], checks)
            continue
        procs[p] = (proc, major, subs, problems, checks)
    out: dict[str, DeepResult] = {}
    deadline = time.monotonic() + timeout_s
    for p, (proc, major, subs, problems, checks) in procs.items():
        if proc is None:
            out[p] = DeepResult(p, major, tuple(problems))
            continue
        try:
            so, se = proc.communicate(timeout=max(0.1, deadline - time.monotonic()))
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            proc.kill()
            so, se = proc.communicate()
            rc = None
        try:
            out[p] = _parse_deep(p, major, list(problems), checks, subs, rc, so, se, timeout_s)
        except Exception as exc:  # noqa: BLE001 - a probe never raises
            out[p] = DeepResult(p, major, (*problems, DeepProblem(os.path.basename(p), "died",
                                                                  f"unreadable child output: {exc}")))
    return out
