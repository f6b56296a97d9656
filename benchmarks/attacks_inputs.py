"""Attacks with hostile input (source trees, quoting, manifests, FIFOs, a hung driver, another
user's record, a restart), rerun against real kernels and the real CLI, each beside the bare
kernel or plain pip where one is the reference. Figures, not pass/fail (the tests do that):
for each attack, what the bare reference does, what cudnn-magic does, whether it held.

* A1  a what-if of a source tree whose setup.py leaves a ``.pth`` file and a marker: plain
      ``pip install --dry-run`` runs it (the attack is real); the what-if must run nothing.
* A2  ``%pip install --force ... "pip; python_version>'3'"`` with the guard on, beside the bare
      kernel's ``%pip`` of the same words: pip must get one requirement.
* A3  ``check --against`` manifests of the right schema with wrong field types: the documented
      ``{"error": {"kind": "not-a-manifest"}}`` for each (held N of M).
* A4  ``check --against`` a FIFO: an answer within 30 s.
* A5  a manifest carrying ESC, BEL, an OSC title sequence and U+202E: none reaches the terminal.
* A6  ``manifest -o OUT`` where OUT is a planted symlink to a victim file: the victim unchanged.
* A7  FIFOs named ``libcudnn.so.9`` on LD_LIBRARY_PATH and as a wheel's ``RECORD``: the check answers.
* A8  NVML hanging in every call (the NVML stand-in, ``hang_s``): ``%gpu_memory`` and the next cell.
* A9  the previous kernel's crash record handed to another user (chown 65534, mode 0777): not shown.
* A10 a graceful restart while a ``subprocess.Popen`` child runs: no "the previous kernel died".

Usage: .venv/bin/python benchmarks/attacks_inputs.py
Prints a markdown table; about two minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from helpers.kernel_session import KernelSession  # noqa: E402

PY = sys.executable
SETUP = ('import os, sysconfig\nfrom setuptools import setup\nopen({m!r}, "w").write("ran")\n'
         'open(os.path.join(sysconfig.get_paths()["purelib"], "zz_attack.pth"), "w").write("import os\\n")\n'
         'setup(name="evilpkg", version="1.0", py_modules=[])\n')


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    e = {**os.environ, **(env or {}), "PIP_CONFIG_FILE": os.devnull}
    return subprocess.run([PY, "-m", "cudnn_magic", *args], capture_output=True, text=True, env=e, timeout=timeout,
                          cwd="/", check=False)


def text_of(cell: Any) -> str:
    return cell.text()


def a1(tmp: Path) -> tuple[str, str, bool]:
    venv = tmp / "venv"
    subprocess.run([PY, "-m", "venv", str(venv)], check=True, capture_output=True)
    vpy = str(venv / "bin" / "python")
    site = Path(subprocess.run([vpy, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=False).stdout.strip())
    (site / "cm.pth").write_text(f"{ROOT}\n")
    subprocess.run([vpy, "-m", "pip", "install", "-q", "packaging", "nvidia-ml-py"], capture_output=True, check=False)
    src, marker = tmp / "evilpkg", tmp / "marker"
    src.mkdir()
    (src / "setup.py").write_text(SETUP.format(m=str(marker)))
    words = f"'evilpkg @ file://{src}' --no-index --no-build-isolation"
    p = subprocess.run([vpy, "-m", "cudnn_magic", "check", "--json", "--what-if", words], capture_output=True, text=True,
                       env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, timeout=300, check=False)
    ours = f"exit {p.returncode}, setup.py ran: {marker.exists()}, .pth left: {(site / 'zz_attack.pth').exists()}"
    held = not marker.exists() and not (site / "zz_attack.pth").exists() and p.returncode == 2
    subprocess.run([vpy, "-m", "pip", "install", "--dry-run", "--no-index", "--no-build-isolation", str(src)],
                   capture_output=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull}, timeout=300, check=False)
    bare = f"plain pip --dry-run: setup.py ran: {marker.exists()}, .pth left: {(site / 'zz_attack.pth').exists()}"
    return bare, ours, held


def a2(tmp: Path) -> tuple[str, str, bool]:
    cell = "%pip install --dry-run --no-deps --no-index \"pip; python_version>'3'\""
    env = {"PIP_CONFIG_FILE": os.devnull}
    bare = KernelSession(tmp / "bare", env)
    try:
        b = text_of(bare.run(cell, timeout=300))
    finally:
        bare.close()
    ks = KernelSession(tmp / "ours", env)
    try:
        ks.run("%load_ext cudnn_magic\n%cudnn_guard on")
        o = text_of(ks.run(cell.replace("install ", "install --force ", 1), timeout=300))
    finally:
        ks.close()
    ok = "Requirement already satisfied: pip" in o and "Invalid requirement" not in o
    return ("one requirement" if "Requirement already satisfied: pip" in b else b[-200:]), \
        ("one requirement" if ok else o[-200:]), ok


def a3(tmp: Path) -> tuple[str, str, bool]:
    base = json.loads(cli("manifest").stdout)
    shapes: list[Callable[[dict], None]] = [
        lambda m: m.update(gpus=[1]), lambda m: m.update(frameworks=[{}]), lambda m: m.update(driver="x"),
        lambda m: m.update(frameworks=[{"name": 1, "version": [], "cudnn_compiled": {}}]),
        lambda m: m.update(cudnn=[{"path": ["a"], "sha256": 3}]), lambda m: m.update(cudnn="x"),
        lambda m: m.update(gpus=[{"name": None, "compute_capability": "9"}]), lambda m: m.update(schema_version="2"),
    ]
    held = 0
    for i, shape in enumerate(shapes):
        m = json.loads(json.dumps(base))
        shape(m)
        f = tmp / f"bad{i}.json"
        f.write_text(json.dumps(m))
        p = cli("check", "--against", str(f), "--json")
        try:
            err = json.loads(p.stdout).get("error") or {}
        except ValueError:
            err = {}
        held += err.get("kind") == "not-a-manifest" and p.returncode == 2 and "Traceback" not in p.stderr
    return "-", f"held {held} of {len(shapes)}", held == len(shapes)


def a4(tmp: Path) -> tuple[str, str, bool]:
    fifo = tmp / "stack.json"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    try:
        p = cli("check", "--against", str(fifo), timeout=30)
        return "-", f"exit {p.returncode} after {time.monotonic() - t0:.1f} s", p.returncode == 2
    except subprocess.TimeoutExpired:
        return "-", "hung (30 s)", False


def a5(tmp: Path) -> tuple[str, str, bool]:
    m = json.loads(cli("manifest").stdout)
    evil = "\x1b]0;pwned\x07\x1b[31m\u202eevil\u0085"
    m.setdefault("frameworks", []).append({"name": evil, "version": evil, "distribution": evil})
    m["cudnn"] = [{"path": "/x/" + evil, "name": "libcudnn.so.9", "version": evil}]
    f = tmp / "evil.json"
    f.write_text(json.dumps(m))
    p = cli("check", "--against", str(f))
    raw = [ch for ch in "\x1b\x07\u202e\u0085" if ch in p.stdout + p.stderr]
    return "-", f"exit {p.returncode}, raw controls in output: {len(raw)}", not raw and p.returncode in (0, 1, 2)


def a6(tmp: Path) -> tuple[str, str, bool]:
    victim = tmp / "victim"
    victim.write_text("keep me")
    out = tmp / "stack.json"
    out.symlink_to(victim)
    p = cli("manifest", "-o", str(out))
    ok = victim.read_text() == "keep me" and not out.is_symlink()
    return "-", f"exit {p.returncode}, victim kept: {victim.read_text() == 'keep me'}, OUT a link: {out.is_symlink()}", ok


def a7(tmp: Path) -> tuple[str, str, bool]:
    lib = tmp / "lib"
    lib.mkdir()
    os.mkfifo(lib / "libcudnn.so.9")
    site = tmp / "site" / "fake_cudnn-1.0.dist-info"
    site.mkdir(parents=True)
    os.mkfifo(site / "RECORD")
    t0 = time.monotonic()
    try:
        p = cli("check", "--json", env={"LD_LIBRARY_PATH": str(lib), "PYTHONPATH": str(tmp / "site")}, timeout=120)
        json.loads(p.stdout)
        return "-", f"answered in {time.monotonic() - t0:.1f} s (exit {p.returncode})", True
    except subprocess.TimeoutExpired:
        return "-", "hung (120 s)", False
    except ValueError:
        return "-", "no report", False


def a8(tmp: Path) -> tuple[str, str, bool]:
    from helpers.nvml_standin import build_nvml_standin

    d = build_nvml_standin(tmp / "nvml")
    cfg = tmp / "nvml.cfg"
    cfg.write_text("hang_s=600\n")
    env = {"LD_LIBRARY_PATH": str(d), "FAKE_NVML_CONFIG": str(cfg)}
    bare = KernelSession(tmp / "bare8", env)
    try:
        bare.run("import threading, pynvml\nthreading.Thread(target=pynvml.nvmlInit, daemon=True).start()")
        t0 = time.monotonic()
        bare.run("print(1)", timeout=10)
        b = f"NVML in a thread: next cell in {time.monotonic() - t0:.1f} s"
    finally:
        bare.close()
    ks = KernelSession(tmp / "ours8", env)
    try:
        ks.run("%load_ext cudnn_magic")
        t0 = time.monotonic()
        try:
            c = ks.run("p = %gpu_memory\np", timeout=30)
            took = time.monotonic() - t0
            t1 = time.monotonic()
            ks.run("print(1)", timeout=10)
            o = (f"%gpu_memory in {took:.1f} s ('NVML is not answering': {'NVML is not answering' in text_of(c)}), "
                 f"next cell in {time.monotonic() - t1:.1f} s")
            ok = took < 10
        except TimeoutError:
            o, ok = "hung (30 s)", False
    finally:
        ks.close()
    return b, o, ok


def _restart_and_load(tmp: Path, before: Callable[[KernelSession], None], now: bool) -> str:
    ks = KernelSession(tmp)
    try:
        ks.run("%load_ext cudnn_magic")
        before(ks)
        ks.km.restart_kernel(now=now)
        time.sleep(1.0)
        ks.kc.stop_channels()
        ks.kc = ks.km.client()
        ks.kc.start_channels()
        ks.kc.wait_for_ready(timeout=60)
        return text_of(ks.run("%load_ext cudnn_magic", timeout=120))
    finally:
        ks.close()


def a9(tmp: Path) -> tuple[str, str, bool]:
    # the record root the extension uses, asked of a kernel with the same environment
    probe = KernelSession(tmp / "k9")
    try:
        where = text_of(probe.run("from cudnn_magic.capture.tee import records_root\nprint('ROOT', records_root())"))
    finally:
        probe.close()
    root = where.split("ROOT ", 1)[1].split()[0] if "ROOT " in where else ""

    def hand_over(ks: KernelSession) -> None:
        ks.send("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        time.sleep(3)
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                p = os.path.join(dirpath, n)
                os.chown(p, 65534, 65534)
                os.chmod(p, 0o777)
    def crash(ks: KernelSession) -> None:
        ks.send("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
        time.sleep(3)
    own = _restart_and_load(tmp / "own9", crash, now=True)  # the same crash, record left as it is: shown
    shown = _restart_and_load(tmp / "k9", hand_over, now=True) if root else "no record root"
    return (f"own record: {'shown' if 'the previous kernel died' in own else 'not shown'}",
            ("shown" if "the previous kernel died" in shown else "not shown"),
            "the previous kernel died" not in shown and "the previous kernel died" in own)


def a10(tmp: Path) -> tuple[str, str, bool]:
    def child(ks: KernelSession) -> None:
        ks.run("import subprocess\np = subprocess.Popen(['sleep', '600'])")
    shown = _restart_and_load(tmp / "k10", child, now=False)
    return "-", ("reported as a crash" if "the previous kernel died" in shown else "no crash reported"), \
        "the previous kernel died" not in shown


ATTACKS = [("A1 what-if of a source tree", a1), ("A2 guard quoting", a2), ("A3 manifest field types", a3),
           ("A4 --against a FIFO", a4), ("A5 control characters from a manifest", a5),
           ("A6 manifest -o through a link", a6), ("A7 FIFOs in the scanned tree", a7), ("A8 NVML hangs", a8),
           ("A9 another user's crash record", a9), ("A10 graceful restart with a child", a10)]


def main() -> int:
    rows = []
    with tempfile.TemporaryDirectory(prefix="attacks28-") as tmp:
        for name, fn in ATTACKS:
            d = Path(tmp) / name.split()[0]
            d.mkdir()
            t0 = time.monotonic()
            try:
                bare, ours, held = fn(d)
            except Exception as exc:  # noqa: BLE001 - an attack that breaks the harness is a row too
                bare, ours, held = "-", f"harness failed: {type(exc).__name__}: {exc}", False
            rows.append((name, bare, ours, held, time.monotonic() - t0))
    print("| attack | reference (bare kernel / plain pip) | cudnn-magic | held | s |")
    print("|---|---|---|---|---|")
    for name, bare, ours, held, s in rows:
        print(f"| {name} | {bare} | {ours} | {'yes' if held else 'NO'} | {s:.0f} |")
    print(f"\nheld {sum(r[3] for r in rows)} of {len(rows)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
