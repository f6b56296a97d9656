"""``cudnn-magic crashes`` on a machine where many kernels died: the newest few by default, one
line for each beyond the newest, native log lines cut to the terminal width (whole in ``--json``),
a heading that names the kernel (not "the previous kernel"), and ``--key`` of no record is a usage
error (exit 2), as the README says. Real records throughout: IPython shells that load the
extension and die in ``abort()`` after printing long native lines, one real ipykernel that dies
the same way; the CLI through ``python -m cudnn_magic``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.support import REPO, kernel_env

#: A native log line of 223 bytes, like TensorFlow's and XLA's ``I0000 ...`` lines (the user's
#: report had 71+ lines of 200+ characters in each record).
LONG = b"I0000 00:00:1700000000.123456   12345 some_native_library.cc:123] a long native log line number %d " + b"x" * 120

SHELL = ("from IPython.core.interactiveshell import InteractiveShell\n"
         "ip = InteractiveShell.instance(colors='nocolor')\n"
         "ip.run_cell('%load_ext cudnn_magic')\n"
         "ip.run_cell({cell!r}, store_history=True)\n")

CELL = ("import os, ctypes\n"
        f"for i in range(80): os.write(2, ({LONG!r} % i) + b'\\n')\n"
        "ctypes.CDLL(None).abort()")


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = kernel_env(tmp)
    env.update(extra)
    return env


def _die(tmp: Path, n: int) -> None:
    """``n`` real IPython processes that load the extension, print 80 long native lines and abort;
    each under its own shell, so each has its own record key (``process-<parent pid>``: the capture
    keeps the newest 4 records of one key)."""
    for _ in range(n):
        p = subprocess.run(["sh", "-c", '"$0" -c "$1"; exit $?', sys.executable, SHELL.format(cell=CELL)],
                           capture_output=True, env=_env(tmp), timeout=120)
        assert p.returncode != 0, p.stderr[-2000:]


def _crashes(tmp: Path, *args: str, columns: str = "100") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cudnn_magic", "crashes", *args], capture_output=True, text=True,
                          env=_env(tmp, COLUMNS=columns), cwd=REPO, timeout=120)


@pytest.fixture(scope="module")
def many(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("crashes")
    _die(tmp, 7)
    return tmp


def test_the_newest_five_by_default_the_newest_in_full(many):
    p = _crashes(many)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.startswith("7 crash records under "), out[:300]
    assert "the newest 5 shown (--last N or --all for the 2 older)" in " ".join(out.split("\n\n", 1)[0].split()), out[:300]
    # one record in full, four one-line summaries
    assert out.count(" died at ") == 1, out
    older = out.split("Older (4;", 1)[1].strip().splitlines()[1:]
    assert len(older) == 4 and all("no cuDNN-related cause found" in ln and ", pid " in ln for ln in older), older
    assert len(out.splitlines()) < 60, len(out.splitlines())


def test_all_and_last(many):
    p = _crashes(many, "--all")
    assert p.returncode == 0 and p.stdout.startswith("7 crash records") and "shown" not in p.stdout.split("\n")[0]
    assert p.stdout.count(" died at ") == 1
    assert len(p.stdout.split("Older (6;", 1)[1].strip().splitlines()) == 7
    p = _crashes(many, "--last", "1")
    assert p.returncode == 0 and "Older" not in p.stdout and "the newest 1 shown" in " ".join(p.stdout.split())
    for bad in (["--last", "0"], ["--last", "x"], ["--last", "2", "--all"]):
        p = _crashes(many, *bad)
        assert p.returncode == 2 and "usage:" in p.stderr and p.stdout == "", (bad, p.stderr)


@pytest.mark.parametrize("columns", ["100", "60"])
def test_text_fits_the_terminal_and_json_keeps_the_whole_lines(many, columns):
    p = _crashes(many, columns=columns)
    widths = [len(ln) for ln in p.stdout.splitlines()]
    assert max(widths) <= int(columns), [ln for ln in p.stdout.splitlines() if len(ln) > int(columns)]
    # the glog prefix (time, thread, source line) goes first, then the middle of the message
    cut = [ln for ln in p.stdout.splitlines() if ln.startswith("    \u2026] a long native log line")]
    assert cut and all("\u2026" in ln and ln.endswith(f"x [{len(LONG % 79)} bytes]") for ln in cut[-5:]), cut[-5:]
    recs = json.loads(_crashes(many, "--json").stdout)
    assert len(recs) == 5
    assert (LONG % 79).decode() in recs[0]["log_tail"]
    assert len(json.loads(_crashes(many, "--json", "--all").stdout)) == 7


def test_the_heading_says_which_process_not_the_previous_kernel(many):
    out = _crashes(many).stdout
    assert "the previous kernel" not in out
    assert "cudnn-magic: IPython under process " in out, out[:500]


def test_an_unknown_key_is_exit_2_a_known_key_without_crashes_is_0(many):
    p = _crashes(many, "--key", "nope")
    assert p.returncode == 2 and "no records with key 'nope'" in p.stderr and p.stdout == "", p.stderr
    key = json.loads(_crashes(many, "--json").stdout)[0]["key"]
    p = _crashes(many, "--key", key)
    assert p.returncode == 0 and f"{key}, pid " not in p.stdout.split("\n\n", 1)[0] and " died at " in p.stdout


@pytest.mark.kernel
def test_a_dead_kernel_is_named_by_its_kernel_id_and_connection_file(tmp_path):
    """A Jupyter kernel's record is headed with its id and its connection file (where the user
    finds which notebook it was), not "the previous kernel"."""
    from helpers.kernel_session import KernelSession

    ks = KernelSession(tmp_path)
    try:
        conn = os.path.abspath(ks.km.connection_file)
        ks.run("%load_ext cudnn_magic")
        ks.send(CELL)
        for _ in range(600):
            if not ks.km.is_alive():
                break
            import time

            time.sleep(0.05)
        assert not ks.km.is_alive()
    finally:
        ks.close()
    stem = Path(conn).name[:-len(".json")]  # kernel-<id>.json under a Jupyter server, tmpXXXX.json here
    kernel_id = stem.removeprefix("kernel-")
    p = subprocess.run([sys.executable, "-m", "cudnn_magic", "crashes"], capture_output=True, text=True,
                       env={**kernel_env(tmp_path), "COLUMNS": "200"}, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    head = p.stdout.split("It was running", 1)[0]
    assert f"cudnn-magic: kernel {kernel_id} died at " in head and f"Record: connection file {conn};" in head, head
    recs = json.loads(subprocess.run([sys.executable, "-m", "cudnn_magic", "crashes", "--json"], capture_output=True,
                                     text=True, env=kernel_env(tmp_path), cwd=REPO, timeout=120).stdout)
    assert recs[0]["connection_file"] == conn, recs[0]
