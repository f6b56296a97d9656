"""What a new user meets in the first hour: the public API called twice, usage
errors, binary or empty input, sentences that cite facts, ``install-startup`` options, fixes
that do not apply. Each test failed on the code before its fix. Real processes throughout: the
CLI through ``python -m cudnn_magic``, the API in a fresh interpreter, real cuDNN wheels."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.support import REPO, ended_meta, real_cudnn_lib_dir


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env.update(extra)
    return env


def _cli(*args: str, stdin: bytes | None = b"", timeout: float = 120, env: dict | None = None):
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], input=stdin, capture_output=True,
                          env=env or _env(), cwd=REPO, timeout=timeout)


# --------------------------------------------------------------------------- the public API twice

API_CALLS = {
    "check": "r = cudnn_magic.check(); assert type(r).__name__ == 'Report', type(r)",
    "explain": "d = cudnn_magic.explain('Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED'); "
               "assert d and d[0].id == 'cudnn-init-failed', d",
    "gpu_memory": "s = cudnn_magic.gpu_memory(); assert type(s).__name__ == 'MemorySnapshot', type(s)",
    "manifest": "m = cudnn_magic.manifest(); assert m['schema'] == 'cudnn-magic-manifest', m",
    "what_if": "w = cudnn_magic.what_if('nvidia-cudnn-jit-cu13=9.24'); "
               "assert type(w).__name__ == 'PipError' and w.kind == 'bad-requirement', w",
    "import-engines": "import cudnn_magic.engines.check, cudnn_magic.engines.memory, cudnn_magic.engines.diagnose, "
                      "cudnn_magic.engines.manifest; from cudnn_magic import check as c, manifest as mf; "
                      "import inspect; assert inspect.isfunction(c) and inspect.isfunction(mf), (c, mf)",
}


def _orders() -> list[tuple[str, ...]]:
    """Every call first, and every call last (rotations of both directions): 8 fresh processes."""
    names = list(API_CALLS)
    out = []
    for seq in (names, names[::-1]):
        for i in range(len(seq)):
            out.append(tuple(seq[i:] + seq[:i]))
    return out


@pytest.mark.parametrize("order", _orders(), ids="-".join)
def test_public_api_works_twice_in_every_order(order):
    """Each public function works twice, in any order, also after the engines behind them were
    imported (a submodule named like a function would replace it on the package: a second call
    would raise ``TypeError: 'module' object is not callable``)."""
    body = "import cudnn_magic\n" + "".join(f"{API_CALLS[name]}\n{API_CALLS[name]}\n" for name in order)
    body += "print('ok')\n"
    p = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]


def test_the_public_functions_are_never_shadowed_by_a_submodule():
    """Python's import system sets a package attribute for every submodule it loads, so a
    submodule named like a public function (``cudnn_magic.check`` was once both) would replace
    the function once imported. No submodule has such a name, and importing every engine and
    entry point leaves each public function the function, with its signature."""
    body = ("import importlib, importlib.util, inspect, pkgutil, cudnn_magic\n"
            "names = [n for n in cudnn_magic.__all__ if n != '__version__']\n"
            "clash = [n for n in names if importlib.util.find_spec(f'cudnn_magic.{n}') is not None]\n"
            "assert not clash, clash\n"
            "before = {n: getattr(cudnn_magic, n) for n in names}\n"
            "for m in pkgutil.walk_packages(cudnn_magic.__path__, 'cudnn_magic.'):\n"
            "    if m.name.startswith(('cudnn_magic.engines', 'cudnn_magic.cli')):\n"
            "        importlib.import_module(m.name)\n"
            "assert all(getattr(cudnn_magic, n) is before[n] and inspect.isfunction(before[n]) for n in names)\n"
            "print(list(inspect.signature(cudnn_magic.check).parameters))\n")
    p = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, env=_env(), timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.split() == ["['import_frameworks',", "'deep']"]


# --------------------------------------------------------------------------- --dask with a bad address

@pytest.mark.parametrize("address", ["foo", "tcp://localhost:notaport"])
def test_dask_bad_address_is_one_line_and_quick(address):
    """``cudnn-magic check --dask foo`` said "could not connect ... within 30 s" at once, then hung
    60 s in ``Client.__del__`` and printed ``Exception ignored in ... TimeoutError``."""
    pytest.importorskip("distributed")
    t0 = time.monotonic()
    p = _cli("check", "--dask", address, timeout=50)
    elapsed = time.monotonic() - t0
    err = p.stderr.decode()
    assert p.returncode == 2, err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert "within 30 s" not in err, err
    assert address in err and len(err.strip().splitlines()) == 1, err
    assert elapsed < 30, f"took {elapsed:.1f} s"


# --------------------------------------------------------------------------- binary input

def test_explain_on_a_real_shared_library_says_it_is_binary():
    """cuDNN's own ``libcudnn_graph.so.9`` got seven confident diagnoses."""
    real = real_cudnn_lib_dir()
    if real is None:
        pytest.skip("real cuDNN wheel not installed: pip install --no-deps nvidia-cudnn-jit-cu12")
    lib = real / "libcudnn_graph.so.9"
    p = _cli("explain", str(lib))
    out, err = p.stdout.decode(), p.stderr.decode()
    assert p.returncode == 2, (out, err)
    assert "binary" in err and "ELF" in err and str(lib) in err, err
    assert "[cudnn-" not in out + err
    p = _cli("explain", "--json", str(lib))
    data = json.loads(p.stdout)
    assert data["diagnoses"] == [] and data["input"]["kind"] == "binary", data
    assert "ELF" in data["input"]["detail"]


@pytest.mark.parametrize("kind,head", [("ELF", b"\x7fELF\x02\x01\x01"), ("PE", b"MZ\x90\x00\x03\x00\x00\x00"),
                                       ("gzip", b"\x1f\x8b\x08\x00"), ("zip", b"PK\x03\x04")])
def test_explain_binary_formats_with_cudnn_strings_inside(tmp_path, kind, head):
    body = head + b"\x00" * 60 + b"CUDNN_STATUS_INTERNAL_ERROR\x00Could not create cudnn handle\x00" * 20
    f = tmp_path / "blob"
    f.write_bytes(body)
    p = _cli("explain", str(f))
    assert p.returncode == 2 and kind in p.stderr.decode(), p.stderr
    assert b"[cudnn-" not in p.stdout


def test_explain_random_binary_garbage_yields_nothing(tmp_path):
    import random

    rnd = random.Random(7)
    data = bytes(rnd.getrandbits(8) for _ in range(200_000)) + b"\nCould not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR\n"
    p = _cli("explain", "-", stdin=data)
    assert p.returncode == 2 and b"binary" in p.stderr, p.stderr
    assert p.stderr.count(b"not a") == 1 and p.stderr.count(b"binary") == 1, p.stderr  # said once
    assert b"[cudnn-" not in p.stdout


def test_text_with_a_few_bad_bytes_is_still_a_log():
    """Logs with stray NULs or Latin-1 bytes (a crashed writer, NUL-padded files) stay logs."""
    log = (b"\x00" * 4096 + b"2021-03-01 E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Loaded runtime CuDNN "
           b"library: 8.0.5 but source was compiled with: 8.1.0.  caf\xe9\n" * 3 + b"\x00" * 64)
    p = _cli("explain", "-", stdin=log)
    assert p.returncode == 0, p.stderr
    assert b"[cudnn-version-mismatch]" in p.stdout


def test_python_api_and_magic_say_binary_too():
    from cudnn_magic import explain

    res = explain("\x7fELF\x02\x01\x01" + "\x00" * 100 + "CUDNN_STATUS_INTERNAL_ERROR\x00" * 10)
    assert list(res) == [] and "binary" in res.message and "ELF" in res.message


# --------------------------------------------------------------------------- empty input, terminal input

def test_explain_empty_input_says_so():
    p = _cli("explain", "-", stdin=b"")
    assert p.returncode == 0
    assert b"empty" in p.stdout + p.stderr
    p = _cli("explain", "--json", "-", stdin=b"  \n\n")
    data = json.loads(p.stdout)
    assert data["diagnoses"] == [] and data["input"]["kind"] == "empty"


def test_explain_at_a_terminal_says_what_to_do():
    """With no file at a terminal, ``cudnn-magic explain`` waited silently for stdin."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "cudnn_magic", "explain"], stdin=slave, stdout=subprocess.PIPE,
                            stderr=slave, env=_env(), cwd=REPO)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + 60
    while b"Ctrl-D" not in seen and time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 1.0)
        if r:
            try:
                seen += os.read(master, 4096)
            except OSError:
                break
    assert b"Ctrl-D" in seen and b"paste" in seen.lower(), seen
    os.write(master, b"Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0\n\x04")
    out, _ = proc.communicate(timeout=60)
    os.close(master)
    assert proc.returncode == 0 and b"[cudnn-version-mismatch]" in out, out


# --------------------------------------------------------------------------- sentences need their facts

def test_internal_error_without_facts_claims_nothing_about_memory():
    """``echo CUDNN_STATUS_INTERNAL_ERROR | cudnn-magic explain -`` said "Free memory rules out
    gpu-out-of-memory." with no memory facts at all."""
    p = _cli("explain", "-", stdin=b"CUDNN_STATUS_INTERNAL_ERROR\n")
    out = p.stdout.decode()
    assert "[cudnn-internal-error]" in out
    assert "rules out" not in out and "Free memory" not in out, out


def test_internal_error_with_free_memory_facts_cites_them():
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.model import Driver, Gpu, Report

    gib = 2**30
    report = Report(driver=Driver("550.54.15", "12.4"),
                    gpus=(Gpu(0, "NVIDIA A100", total_bytes=80 * gib, used_bytes=2 * gib, free_bytes=78 * gib),))
    d = diagnose(log="CUDNN_STATUS_INTERNAL_ERROR", report=report)
    top = d[0]
    assert top.id == "cudnn-internal-error"
    assert any("78.0 GiB free" in e for e in top.evidence), top.evidence
    assert "free-gpu-memory" not in [f.id for f in top.fixes]
    full = Report(driver=Driver("550.54.15", "12.4"),
                  gpus=(Gpu(0, "NVIDIA A100", total_bytes=80 * gib, used_bytes=80 * gib - 10, free_bytes=10),))
    ids = [x.id for x in diagnose(log="CUDNN_STATUS_INTERNAL_ERROR", report=full)]
    assert "gpu-out-of-memory" in ids


# --------------------------------------------------------------------------- install-startup options

def test_install_startup_refuses_a_missing_ipython_dir(tmp_path):
    missing = tmp_path / "nonexistent"
    p = _cli("install-startup", "--ipython-dir", str(missing))
    assert p.returncode == 2 and not missing.exists(), p.stdout + p.stderr
    assert b"--ipython-dir" in p.stderr and str(missing).encode() in p.stderr


def test_install_startup_options_exclude_each_other(tmp_path):
    p = _cli("install-startup", "--ipython-dir", str(tmp_path), "--profile-dir", str(tmp_path))
    assert p.returncode == 2
    assert b"not allowed with" in p.stderr
    assert not (tmp_path / "ipython_kernel_config.py").exists()


def test_install_startup_error_names_the_option_used(tmp_path):
    """A file that cannot be written under --profile-dir: the message told to "Use --ipython-dir"."""
    (tmp_path / "ipython_kernel_config.py").mkdir()  # not writable as a file, even for root
    p = _cli("install-startup", "--profile-dir", str(tmp_path))
    assert p.returncode == 2
    err = p.stderr.decode()
    assert "cannot write" in err and "--profile-dir" in err and "Use --ipython-dir" not in err, err


# --------------------------------------------------------------------------- fixes that do not apply

def test_cli_fix_restart_kernel_outside_a_kernel_prints_no_kernel_internals():
    """``cudnn-magic fix restart-kernel`` printed ``get_ipython().kernel.io_loop.stop()``."""
    for args in (("fix", "restart-kernel"), ("fix", "restart-kernel", "--yes")):
        p = _cli(*args)
        out = (p.stdout + p.stderr).decode()
        assert "io_loop" not in out and "get_ipython" not in out, out
        assert out.lower().count("not running in a jupyter kernel") == 1, out
        if "--yes" in args:
            assert "nothing to do" in out.lower() and "FAILED" not in out, out


def test_magic_fix_yes_that_does_not_apply_says_nothing_to_do(tmp_path):
    """``%cudnn_fix ... --yes`` printed the preview, then "FAILED / Error: not applicable"."""
    script = ("from IPython.core.interactiveshell import InteractiveShell\n"
              "ip = InteractiveShell.instance(colors='nocolor')\n"
              "ip.run_line_magic('load_ext', 'cudnn_magic')\n"
              "r = ip.run_line_magic('cudnn_fix', 'restart-kernel --yes')\n"
              "print('@@repr', repr(r))\n")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       env=_env(CUDNN_MAGIC_CAPTURE="0", HOME=str(tmp_path)))
    out = p.stdout
    assert p.returncode == 0, p.stderr[-2000:]
    assert "FAILED" not in out and "not applicable" not in out, out
    assert out.lower().count("nothing to do") == 1, out
    assert "io_loop" not in out, out


# --------------------------------------------------------------------------- our usage errors are not "the last error"

def test_a_mistyped_magic_does_not_replace_the_error_to_explain(tmp_path):
    """A failing cuDNN cell, then ``%cudnn_check --bogus``, then ``%cudnn_explain``: it explained
    the UsageError instead of the cuDNN error."""
    from helpers.shell_child import CUDNN_CELL, run, section

    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        cell({CUDNN_CELL!r})
        mark("bogus"); cell("%cudnn_check --bogus"); cell("%cudnn_fix no-such-fix"); cell("%cudnn_annotate sideways")
        mark("explain"); cell("%cudnn_explain"); mark("other")
        cell("raise KeyError('x')"); cell("%cudnn_explain")
        mark("end")
    """)
    assert rc == 0, err[-3000:]
    assert b"UsageError" in err and b"--bogus" in err, err[-2000:]  # IPython shows usage errors on stderr
    explained = section(out, "explain")
    assert "cudnn-version-mismatch" in explained or "8.0.5" in explained, explained
    assert "nothing cuDNN-related" not in explained, explained
    # an ordinary error of the user's own still becomes the last error
    assert "nothing cuDNN-related found in the last error (KeyError" in section(out, "other"), section(out, "other")


# --------------------------------------------------------------------------- words of the report

def _no_driver_report(**kw):
    from cudnn_magic.model import Finding, Report, Unavailable

    reason = ("NVML Shared Library Not Found: no NVIDIA driver is installed on this machine (libnvidia-ml.so.1 is not "
              "on the loader path) (nvmlInit, NVML error 12)")
    return Report(driver=Unavailable(reason), notes=(f"NVML: {reason}",),
                  findings=(Finding("no-nvidia-driver", "info", "No NVIDIA driver found",
                                    f"{reason}. Frameworks will run on the CPU; cuDNN cannot create a handle."),), **kw)


def test_the_nvml_reason_is_said_once():
    from cudnn_magic.render.report import report_html, report_text

    r = _no_driver_report()
    for out in (report_text(r), report_html(r)):
        assert out.count("NVML error 12") == 1, out
        assert out.count("Shared Library Not Found") == 1, out


def test_no_empty_sections():
    from cudnn_magic.model import LibraryCopy
    from cudnn_magic.render.report import report_html, report_text

    empty = _no_driver_report()
    html = report_html(empty)
    assert "0 main libraries" not in html and "0 sub-libraries" not in html, html
    assert "The table below" not in html and "table below shows" not in html, html
    subs_only = _no_driver_report(cudnn_installed=(
        LibraryCopy("/opt/x/libcudnn_ops.so.9", "libcudnn_ops.so.9", "libcudnn.so.9", "9.1.0", is_main=False,
                    source="system dir"),))
    text = report_text(subs_only)
    section = text.split("Other cuDNN copies on disk", 1)[1]
    assert "library  " not in section and "-------" not in section, section  # no header-only table
    assert "1 sub-library" in section and "/opt/x" in section, section
    assert "0 main libraries" not in report_html(subs_only)


def test_cli_report_speaks_of_this_process():
    """The command line said "mapped in this kernel" and "(restart the kernel after)"."""
    p = _cli("check")
    out = p.stdout.decode()
    assert "this kernel" not in out and "restart the kernel" not in out, out
    p = _cli("explain", "-", stdin=b"Loaded runtime CuDNN library: 8.0.5 but source was compiled with: 8.1.0\n")
    out = p.stdout.decode()
    assert "[cudnn-version-mismatch]" in out and "(restart the program after)" in out, out
    assert "(restart the kernel after)" not in out, out


def test_advice_prose_is_text_and_commands_are_code():
    from cudnn_magic.engines.diagnose import diagnose
    from cudnn_magic.render.diagnosis import diagnoses_html
    from cudnn_magic.render.report import action_html, is_prose

    assert is_prose("Stop other processes on the GPU (%gpu_memory shows them), or lower the batch size.")
    assert is_prose("Import the framework whose cuDNN you need `first`")
    for code in ("python -m pip install nvidia-cudnn-cu12==9.3.0.75", "torch.backends.cudnn.benchmark = False",
                 "import tensorflow as tf; tf.config.experimental.set_memory_growth(gpu, True)",
                 "export LD_LIBRARY_PATH=/usr/local/cuda/lib64", "conda install -c conda-forge cudnn=8.9"):
        assert not is_prose(code), code
        assert action_html(code).startswith("<code"), code
    html = action_html("Put `LD_LIBRARY_PATH` first, then restart.")
    assert "`" not in html and "<code>LD_LIBRARY_PATH</code>" in html and not html.startswith("<code")
    d = diagnose(log="Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR")
    page = diagnoses_html(d)
    assert "`" not in page
    assert '<code style="white-space:pre-wrap">Stop other processes' not in page


def test_long_paths_break_only_after_a_slash():
    from cudnn_magic.model import LibraryCopy, Report
    from cudnn_magic.render.report import report_html

    path = "/home/someone/miniconda3/envs/a-very-long-environment-name/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9"
    r = Report(cudnn_loaded=(LibraryCopy(path, "libcudnn.so.9", "libcudnn.so.9", "9.1.0", owner="pip: x 1", loaded=True),))
    html = report_html(r)
    assert "break-all" not in html
    assert "site-packages/<wbr>nvidia/<wbr>cudnn/<wbr>lib/<wbr>libcudnn.so.9" in html


def test_consumer_paths_break_only_after_a_slash_too():
    """The cuDNN consumers table sets its paths like the rest of the report."""
    from cudnn_magic.model import ConsumerLibrary, Report, SublibraryPick
    from cudnn_magic.render.report import report_html

    lib = "/home/someone/venv/lib/python3.11/site-packages/ctranslate2.libs/libcudnn-74a4c495.so.8.9.7"
    sub = "/home/someone/venv/lib/python3.11/site-packages/ctranslate2.libs/libcudnn_ops_infer-3a2b.so.8"
    c = ConsumerLibrary("/x/libctranslate2.so.4", "ctranslate2 4.4.0", "libcudnn-74a4c495.so.8.9.7", picked=lib,
                        picked_version="8.9.7", sublibraries=(SublibraryPick("libcudnn_ops_infer.so.8", sub, "8.9.7", "vendored beside it"),))
    html = report_html(Report(consumers=(c,)))
    assert "site-packages/<wbr>ctranslate2.libs/<wbr>libcudnn-74a4c495.so.8.9.7" in html, html
    assert "ctranslate2.libs/<wbr>libcudnn_ops_infer-3a2b.so.8" in html


# --------------------------------------------------------------------------- owner of an unpacked wheel

def test_owner_of_an_unpacked_wheel_is_the_wheel(tmp_path):
    """The files of a wheel installed with ``pip --target`` or unzipped into /tmp were labelled
    owner "system"."""
    import shutil

    from cudnn_magic.probes.owners import owner_of, pip_version_of
    from helpers.real_wheels import install_wheel

    target = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46")
    lib = target / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9"
    assert lib.exists()
    owner = owner_of(str(lib))
    assert owner == "wheel: nvidia-cudnn-jit-cu12 9.12.0.46", owner
    assert pip_version_of(owner) == "9.12.0.46"
    unzipped = tmp_path / "w"
    shutil.copytree(target, unzipped, ignore=shutil.ignore_patterns("libcudnn_engines*", "libcudnn_adv*", "libcudnn_cnn*",
                                                                    "libcudnn_heuristic*", "libcudnn_ops*"))
    assert owner_of(str(unzipped / "nvidia" / "cudnn_jit" / "lib" / "libcudnn.so.9")).startswith("wheel: nvidia-cudnn-jit-cu12")
    stray = tmp_path / "libcudnn.so.9"
    stray.write_bytes(b"\x7fELF")
    assert owner_of(str(stray)) == "system"


# --------------------------------------------------------------------------- the crash report of a terminal session

TF_FATAL = ("F0000 00:00:1700000000.000000    4242 cuda_dnn.cc:1234] Check failed: status == CUDNN_STATUS_SUCCESS "
            "(7 vs. 0)Failed to set cuDNN stream.")


def _ipython_in_a_pty(tmp_path, lines: list[bytes], wait: float = 4.0) -> bytes:
    """Terminal IPython (``--simple-prompt``, which writes its prompt to fd 2) in a pseudo
    terminal, typing ``lines``; returns what the terminal showed."""
    import shutil

    ipython = shutil.which("ipython", path=os.path.dirname(sys.executable))
    if ipython is None:
        pytest.skip("no ipython script beside this interpreter")
    env = _env(HOME=str(tmp_path), IPYTHONDIR=str(tmp_path / "ipy"), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"),
               TERM="dumb")
    master, slave = pty.openpty()
    proc = subprocess.Popen([ipython, "--no-banner", "--colors=nocolor", "--simple-prompt"], stdin=slave,
                            stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    seen = b""

    def read_until(pattern: bytes, timeout: float) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while pattern not in seen and time.monotonic() < deadline:
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    return

    try:
        read_until(b"In [1]: ", 60)
        for i, line in enumerate(lines, 2):
            os.write(master, line + b"\n")
            read_until(b"In [%d]: " % i, 60)
        proc.wait(timeout=60)
        read_until(b"\x00", 0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return seen


def test_crash_report_of_a_terminal_session(tmp_path):
    """In terminal IPython the prompt goes to fd 2: the report quoted ``In [2]: F0000 ...`` as
    a native line; and the Python stack listed 13 IPython-internal frames one by one."""
    cell = (b"import ctypes; l = %r; ctypes.CDLL(None).write(2, l, len(l)); ctypes.CDLL(None).abort()"
            % (TF_FATAL.encode() + b"\n"))
    _ipython_in_a_pty(tmp_path, [b"%load_ext cudnn_magic", cell])
    from cudnn_magic.engines.crash import all_crashes, diagnose_record

    recs = all_crashes(root=tmp_path / "rt" / "cudnn-magic")
    assert recs, list((tmp_path / "rt").rglob("*"))
    rec = recs[0]
    diagnose_record(rec)
    text = rec.text()
    assert "In [2]:" not in text, text
    assert "Check failed: status == CUDNN_STATUS_SUCCESS (7 vs. 0)Failed to set cuDNN stream." in text, text  # cut: prefix dropped
    stack = text.split("Fatal Python error", 1)[1]
    assert "interactiveshell.py" not in stack, stack
    assert re.search(r"\d+ frames of IPython", stack), stack
    assert "<module>" in stack or "ipython-input" in stack or "<string>" in stack or "line 1" in stack, stack


# --------------------------------------------------------------------------- what a clean session leaves

def test_a_clean_exit_keeps_only_the_record_of_a_clean_exit(tmp_path):
    """Every session kept its record folder (its native stderr and the last cell's source) for
    days. After a clean exit only ``meta.json`` stays (process ids and times: enough for a later
    crash report to know this session ended cleanly), without the cell's source."""
    script = ("import os\n"
              "from IPython.core.interactiveshell import InteractiveShell\n"
              "ip = InteractiveShell.instance(colors='nocolor')\n"
              "ip.run_cell('%load_ext cudnn_magic')\n"
              "ip.run_cell('import os; os.write(2, b\"a secret native line\\\\n\"); token = \"SECRET-SOURCE\"', store_history=True)\n"
              "from cudnn_magic.shell.annotate import annotator\n"
              "print(annotator().tee.directory)\n")
    rt = tmp_path / "rt"
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                       env=_env(HOME=str(tmp_path), JUPYTER_RUNTIME_DIR=str(rt), IPYTHONDIR=str(tmp_path / "ipy")))
    assert p.returncode == 0, p.stderr[-2000:]
    d = Path(p.stdout.strip().splitlines()[-1])
    meta = ended_meta(d)
    assert meta.get("clean_exit") is True, meta
    time.sleep(0.2)
    assert sorted(x.name for x in d.iterdir()) == ["meta.json"], sorted(x.name for x in d.iterdir())
    raw = (d / "meta.json").read_text()
    assert "SECRET-SOURCE" not in raw and "secret native line" not in raw
    from cudnn_magic.engines.crash import previous_crashes

    assert previous_crashes(d.parent.name, root=d.parent.parent) == []


def test_mistakes_get_the_subcommands_usage_and_a_hint():
    """A mistyped flag or requirement gets its own hint: ``check --jsn`` once printed the top-level usage; ``--what-if "x=9.27"`` printed
    packaging's "Expected semicolon ..." with no hint to use ``==``."""
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--jsn"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 2
    assert p.stderr.startswith("usage: cudnn-magic check ") and "unrecognized arguments: --jsn" in p.stderr, p.stderr
    assert "(did you mean --json?)" in p.stderr, p.stderr
    # a mistyped subcommand, and its flags: the closest name, exit 2 as before; nothing close, no guess
    for argv, said in ((["chek"], "invalid choice: 'chek' (did you mean check?)"),
                       (["crashes", "--lst", "3"], "unrecognized arguments: --lst 3 (did you mean --last?)"),
                       (["xyzzy"], "invalid choice: 'xyzzy' (choose from"),
                       (["memory", "--zzzzzz"], "unrecognized arguments: --zzzzzz\n")):
        p = subprocess.run([sys.executable, "-m", "cudnn_magic", *argv], capture_output=True, text=True, timeout=120)
        assert p.returncode == 2 and said in p.stderr and p.stdout == "", (argv, p.stderr)
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "check", "--what-if", "nvidia-cudnn-jit-cu12=9.27"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "write 'nvidia-cudnn-jit-cu12==9.27'" in p.stderr + p.stdout and "Expected semicolon" not in p.stderr + p.stdout


def test_an_older_copy_on_ld_library_path_hiding_the_envs_own_wheel_is_a_finding_without_a_framework():
    """With no framework installed, ``%cudnn_check`` must not say OK; it once said OK while the real
    9.12 wheel on LD_LIBRARY_PATH hid this environment's own 9.27 wheel (the demo then diagnosed
    9.12 vs 9.27 two cells later). Real wheels; the check in a fresh process, then with the copy
    mapped (``ctypes.CDLL('libcudnn.so.9')``, as a framework's load by name does)."""
    import json
    import subprocess
    import sys

    from helpers.real_wheels import install_wheel
    from helpers.support import real_cudnn_lib_dir

    own = real_cudnn_lib_dir()
    if own is None:
        import pytest

        pytest.skip("the venv's cuDNN wheel is missing: pip install --no-deps nvidia-cudnn-jit-cu12")
    old = install_wheel("nvidia-cudnn-jit-cu12", "9.12.0.46") / "nvidia" / "cudnn_jit" / "lib"
    env = {**__import__("os").environ, "LD_LIBRARY_PATH": str(old)}
    code = ("import json, sys, ctypes\n"
            "if sys.argv[1] == 'mapped': ctypes.CDLL('libcudnn.so.9')\n"
            "import cudnn_magic\nr = cudnn_magic.check()\n"
            "print(json.dumps([[f.id, f.severity, f.title, [x.id for x in f.fixes]] for f in r.findings]))")
    for mode in ("fresh", "mapped"):
        p = subprocess.run([sys.executable, "-c", code, mode], capture_output=True, text=True, env=env, timeout=300,
                           cwd="/")
        found = [f for f in json.loads(p.stdout) if f[0] == "cudnn-shadowed"]
        assert len(found) == 1, (mode, p.stdout, p.stderr[-2000:])
        assert found[0][1] == "warning" and f"LD_LIBRARY_PATH entry {old} shadows this environment's cuDNN 9.27.0" in found[0][2]
        assert found[0][3] == ["remove-shadowing-dir"]
    # and without the older copy, nothing to say
    env.pop("LD_LIBRARY_PATH")
    p = subprocess.run([sys.executable, "-c", code, "fresh"], capture_output=True, text=True, env=env, timeout=300, cwd="/")
    assert not [f for f in json.loads(p.stdout) if f[0] == "cudnn-shadowed"]


def test_button_titles_say_the_action_in_a_few_words():
    """Button labels keep the part that tells them apart; they were once cut there ("Take
    .../nvidia-cudnn-jit-cu1...", "Install cuDNN 9.27 or newer within 9.x (nvidia-cudnn-cu12<1...").
    Real ipywidgets buttons built for real fixes; the whole title stays in the tooltip."""
    import ipywidgets as W

    from cudnn_magic import fixes
    from cudnn_magic.model import Fix, LibraryCopy, Report
    from cudnn_magic.render.fixes import button_label
    from cudnn_magic.ui.fix_buttons import FixPanel

    old = "/home/u/.cache/wheels/nvidia-cudnn-jit-cu12-9.12.0.46/nvidia/cudnn_jit/lib"
    new = "/home/u/venv/lib/python3.11/site-packages/nvidia/cudnn_jit/lib"
    report = Report(cudnn_installed=(LibraryCopy(f"{old}/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", "9.12.0",
                                                 is_main=True),
                                     LibraryCopy(f"{new}/libcudnn.so.9", "libcudnn.so.9", "libcudnn.so.9", "9.27.0",
                                                 is_main=True)))
    cases = [
        (Fix("remove-shadowing-dir", f"Take {old} out of LD_LIBRARY_PATH", "x"),
         "Take the cuDNN 9.12 folder out of LD_LIBRARY_PATH"),
        (Fix("install-matching-cudnn", "Install nvidia-cudnn-cu12<10,>=9.27", "x"),
         "Install cuDNN 9.27 or newer (nvidia-cudnn-cu12)"),
        (Fix("install-matching-cudnn", "Install nvidia-cudnn-cu13==9.24.0.43", "x"), "Install cuDNN 9.24.0 (nvidia-cudnn-cu13)"),
        (Fix("remove-shadowing-dir", f"Put {new} ahead of {old} in LD_LIBRARY_PATH", "x"),
         "Put the cuDNN 9.27 folder ahead of the cuDNN 9.12 folder in…"),
    ]
    for fix, want in cases:
        panel = FixPanel(W, fix, report, {}, lambda *a, **k: fixes.FixPlan(fix.id, fix.title, False, "no"),  # noqa: B023 - used in this iteration
                         lambda *a, **k: None)
        assert panel.button.description == want, (panel.button.description, want)
        assert fix.title in panel.button.tooltip and len(panel.button.description) <= 60
    assert button_label("Install cuDNN 9.27 or newer within 9.x (nvidia-cudnn-cu12<10,>=9.27)") == \
        "Install cuDNN 9.27 or newer within 9.x (nvidia-cudnn-cu12)"
    assert button_label("Take /a/b/c/d out of LD_LIBRARY_PATH") == "Take …/c/d out of LD_LIBRARY_PATH"
