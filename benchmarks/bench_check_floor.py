"""``cudnn-magic check --json`` against the floor, at 46 to 10,000+ installed distributions.

The floor is a stand-alone script that reads the same facts in the plainest way
(:data:`bench_startup.FLOOR`: the mapped ``libcudnn*``, the ``libcudnn*`` files of every folder
``check`` looks in with their ELF header and ``cudnn_version.h``, the ld.so cache, the frameworks'
metadata, whether NVML loads), plus, as ``check``'s consumer scan does, every ``*.dist-info/RECORD``
on ``sys.path`` and the ``DT_NEEDED`` entries of each native library a RECORD lists
(:data:`CONSUMER_FLOOR`). Both print one JSON document.

Environments (built once under ``benchmarks/``; ``--sizes`` picks them):

* ``small``: ``benchmarks/.venv-small``, a fresh venv with ``pip install . ipykernel`` (cudnn-magic
  and its four dependencies with theirs, and the kernel a notebook runs) and the real
  ``nvidia-cudnn-jit-cu12`` wheel: about 46 distributions;
* ``test``: the test environment ``.venv`` (about 122);
* ``N`` (a number): ``small`` plus a folder on ``PYTHONPATH`` holding ``N - small`` more
  distributions, made from the test environment's own: each ``.dist-info`` (METADATA, WHEEL,
  RECORD) copied under a new name, its RECORD's paths moved into a package folder of its own, and
  every native library it lists there as a hard link of the real file (so each is a real ELF file
  to read; pure-Python files are not made: neither side opens them). cuDNN's wheels and cudnn-magic
  are not cloned (a renamed copy would be one more cuDNN, not one more ordinary distribution).

Every run is a fresh process, the kinds alternating run by run (load hits all alike); wall and CPU
(user + system of the child) medians and min..max, the load average noted. ``check`` runs twice per
round: with an empty ``XDG_CACHE_HOME`` (``cold``: nothing cached on disk, as the first check after
an install) and again with the cache the cold run left (``warm``: a second check in a new process),
the latter set against the floor without the consumer scan. ``--code DIR`` runs another checkout
(``PYTHONPATH``) beside this one.

Usage: .venv/bin/python benchmarks/bench_check_floor.py [--sizes small,test,1045,10045] [--repeat N]
    [--code DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_startup import FLOOR, timed  # noqa: E402

#: The consumer scan in the plainest way: every RECORD on sys.path, each listed native library's
#: DT_NEEDED (program headers -> PT_DYNAMIC -> DT_STRTAB mapped through PT_LOAD -> the names).
CONSUMER_FLOOR = r"""
import struct
def needed(path):
    with open(path, "rb") as fh:
        h = fh.read(64)
        if h[:4] != b"\x7fELF" or h[4] != 2:
            return None
        phoff, = struct.unpack_from("<Q", h, 32); phentsize, phnum = struct.unpack_from("<HH", h, 54)
        fh.seek(phoff); ph = fh.read(phentsize * phnum)
        loads, dyn = [], None
        for i in range(phnum):
            t, _f, off, vaddr, _p, filesz = struct.unpack_from("<IIQQQQ", ph, i * phentsize)
            if t == 1: loads.append((vaddr, off, filesz))
            elif t == 2: dyn = (off, filesz)
        if dyn is None:
            return None
        fh.seek(dyn[0]); d = fh.read(dyn[1])
        ents = [struct.unpack_from("<qQ", d, o) for o in range(0, len(d) - 15, 16)]
        strtab = next(v for t, v in ents if t == 5)
        off = next((strtab - va + o for va, o, sz in loads if va <= strtab < va + sz), strtab)
        out = []
        for t, v in ents:
            if t == 0:
                break
            if t == 1:
                fh.seek(off + v); s = fh.read(256)
                out.append(s[:s.index(b"\0")].decode())
        return out
consumers = []
nrec = nlib = 0
for p in dict.fromkeys(sys.path):
    if not p or not os.path.isdir(p):
        continue
    for e in os.listdir(p):
        if not e.endswith(".dist-info"):
            continue
        try:
            with open(os.path.join(p, e, "RECORD"), "rb") as fh:
                rec = fh.read()
        except OSError:
            continue
        nrec += 1
        for line in rec.split(b"\n"):
            rel = line.rsplit(b",", 2)[0].decode()
            b = os.path.basename(rel)
            if b.endswith(".so") or ".so." in b:
                f = os.path.join(p, rel)
                try:
                    n = needed(f)
                except (OSError, StopIteration, struct.error):
                    continue
                nlib += 1
                if n and any(x.startswith("libcudnn") for x in n):
                    consumers.append((f, n))
facts["consumers"] = consumers
facts["scanned"] = [nrec, nlib]
print(json.dumps(facts))
"""
FLOOR_WITH_CONSUMERS = FLOOR.replace("print(json.dumps(facts))", CONSUMER_FLOOR)
assert FLOOR_WITH_CONSUMERS != FLOOR

def ensure_small() -> Path:
    """``benchmarks/.venv-small``: ``pip install . ipykernel`` plus the real cuDNN jit wheel (built once)."""
    venv = ROOT / "benchmarks" / ".venv-small"
    py = venv / "bin" / "python"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, str(ROOT), "ipykernel"], check=True)
        subprocess.run([*pip, "--no-deps", "nvidia-cudnn-jit-cu12"], check=True)
        (venv / ".complete").write_text("ok\n")
    return py


def count_dists(py: Path, env: dict[str, str]) -> int:
    out = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(len(list(m.distributions())))"],
                         capture_output=True, text=True, env=env, check=True)
    return int(out.stdout.strip())


def make_extra(n: int) -> Path:
    """A folder with ``n`` distributions cloned from the test environment's (module docstring)."""
    folder = ROOT / "benchmarks" / ".venv-small" / f"extra-{n}"
    if (folder / ".complete").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    site = Path(subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    # cuDNN's own wheels and this package are not cloned: a copy under another name would be one
    # more cuDNN (a vendored copy) or one more cudnn-magic, not one more ordinary distribution
    infos = sorted(p for p in site.iterdir() if p.name.endswith(".dist-info") and (p / "RECORD").is_file()
                   and not p.name.lower().startswith(("nvidia_cudnn", "cudnn_magic")))
    for i in range(n):
        src = infos[i % len(infos)]
        name, _, version = src.name[: -len(".dist-info")].partition("-")
        new = f"{name}_c{i}"
        pkg = f"clone{i}"
        dst = folder / f"{new}-{version}.dist-info"
        dst.mkdir()
        for meta in ("METADATA", "WHEEL"):
            if (src / meta).is_file():
                shutil.copyfile(src / meta, dst / meta)
        lines = []
        for line in (src / "RECORD").read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            rel, _, rest = line.partition(",")
            if rel.startswith(src.name + "/"):
                lines.append(f"{dst.name}/{rel[len(src.name) + 1:]},{rest}")
                continue
            new_rel = f"{pkg}/{rel}" if not rel.startswith("..") else rel
            lines.append(f"{new_rel},{rest}")
            base = os.path.basename(rel)
            if re.search(r"\.so(\.\d+)*$", base) and not rel.startswith(".."):
                real = site / rel
                if real.is_file():
                    target = folder / new_rel
                    target.parent.mkdir(parents=True, exist_ok=True)
                    os.link(real, target)
        (dst / "RECORD").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / ".complete").write_text(f"{n}\n")
    return folder


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="small,test,1045,10045")
    ap.add_argument("--repeat", type=int, default=11)
    ap.add_argument("--code", action="append", default=[], help="another checkout, beside this one")
    args = ap.parse_args()
    small = ensure_small()
    base_env = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTEST_CURRENT_TEST", "XDG_CACHE_HOME")}
    codes = [str(ROOT)] + [str(Path(c).resolve()) for c in args.code]
    scratch = Path(tempfile.mkdtemp(prefix="bench-floor-"))
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; median (min..max) of {args.repeat} fresh processes "
          "each, kinds alternating; ms\n")
    print("| distributions | what | wall | CPU | wall vs the floor | load average |")
    print("|---:|---|---:|---:|---:|---:|")
    for size in [s for s in args.sizes.split(",") if s]:
        if size == "test":
            py, extra = ROOT / ".venv" / "bin" / "python", None
        else:
            py = small
            n_small = count_dists(small, base_env)
            extra = make_extra(int(size) - n_small) if size != "small" and int(size) > n_small else None
        env = dict(base_env)
        path = [str(extra)] if extra else []
        n = count_dists(py, dict(env, PYTHONPATH=os.pathsep.join(path)) if path else env)
        kinds: list[tuple[str, list[str], dict[str, str], str | None]] = [
            ("floor (the facts, and every RECORD and DT_NEEDED)", [str(py), "-c", FLOOR_WITH_CONSUMERS],
             dict(env, PYTHONPATH=os.pathsep.join(path)), None),
            ("floor without the consumer scan", [str(py), "-c", FLOOR], dict(env, PYTHONPATH=os.pathsep.join(path)), None),
        ]
        for code in codes:
            tag = "" if code == str(ROOT) else f" ({code})"
            cenv = dict(env, PYTHONPATH=os.pathsep.join([code, *path]))
            kinds.append((f"`check --json`, cold{tag}", [str(py), "-m", "cudnn_magic", "check", "--json"], cenv, "cold"))
            kinds.append((f"`check --json`, warm (a second check){tag}", [str(py), "-m", "cudnn_magic", "check", "--json"],
                          cenv, "warm"))
        times: dict[str, list[tuple[float, float]]] = {k[0]: [] for k in kinds}
        loads = []
        for rnd in range(args.repeat + 1):  # the first round is untimed: bytecode and page cache
            caches = {}
            for name, cmd, e, cache in kinds:
                e = dict(e)
                if cache == "cold":
                    caches[cmd[-1] + e["PYTHONPATH"]] = d = scratch / f"cache-{rnd}-{len(caches)}"
                    e["XDG_CACHE_HOME"] = str(d)
                elif cache == "warm":
                    e["XDG_CACHE_HOME"] = str(caches[cmd[-1] + e["PYTHONPATH"]])
                t = timed(cmd, e, "/")
                if rnd:
                    times[name].append(t)
            loads.append(os.getloadavg()[0])
        floor = statistics.median(w for w, _ in times[kinds[0][0]])
        floor0 = statistics.median(w for w, _ in times[kinds[1][0]])
        for name, _, _, cache in kinds:
            ws = [w * 1e3 for w, _ in times[name]]
            cs = [c * 1e3 for _, c in times[name]]
            ref = floor0 if cache == "warm" else floor
            vs = f"{statistics.median(ws) / ref / 1e3:.2f}x" + (" (of the floor without the scan)" if cache == "warm" else "")
            print(f"| {n:,} | {name} | {statistics.median(ws):.0f} ({min(ws):.0f}..{max(ws):.0f}) | "
                  f"{statistics.median(cs):.0f} ({min(cs):.0f}..{max(cs):.0f}) | {vs} | {statistics.median(loads):.1f} |")
    shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
