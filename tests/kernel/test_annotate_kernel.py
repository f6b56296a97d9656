"""Annotated error cells in a real ipykernel (nbclient), and in terminal IPython.

One notebook, one kernel: 20 cells that write a real cuDNN log line to fd 2 from native code and
raise; a C stand-in that writes 10 MB to fd 2 while holding the GIL; the GPU-unused note; a plain
ValueError; ``%cudnn_annotate off|on``; ``%cudnn_explain``; ``%unload_ext`` (fd 2 restored,
helper gone); reloading with a previously set custom exception handler (chained).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.support import build_c_library, kernel_env, run_notebook

pytestmark = pytest.mark.kernel

N_REPEAT = 20

SPAM_C = r"""
/* Stand-in for a native library that logs a lot: writes to fd 2 with write(2).
   Called through ctypes.PyDLL, so it runs holding the GIL. */
#include <string.h>
#include <unistd.h>
void standin_spam(long n) {
  char buf[4096];
  memset(buf, 's', sizeof buf); buf[sizeof buf - 1] = '\n';
  while (n > 0) { long k = n < (long)sizeof buf ? n : (long)sizeof buf; ssize_t w = write(2, buf, k); if (w <= 0) return; n -= w; }
}
void standin_log(const char *line) { write(2, line, strlen(line)); }
"""


def mismatch_line(i: int) -> str:
    return (f"2021-03-01 12:00:{i:02d}.000000: E tensorflow/stream_executor/cuda/cuda_dnn.cc:336] Loaded runtime "
            "CuDNN library: 8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major "
            "version and equal or higher minor version.")


TF_SKIP = ("2023-01-01 00:00:00.000000: W tensorflow/core/common_runtime/gpu/gpu_device.cc:1934] Cannot dlopen "
           "some GPU libraries. Please make sure the missing libraries mentioned above are installed properly if "
           "you would like to use GPU. Follow the guide at https://www.tensorflow.org/install/gpu for how to "
           "download and setup the required libraries for your platform.\nSkipping registering GPU devices...\n")

RAISE = 'raise RuntimeError("Failed to get convolution algorithm. This is probably because cuDNN failed to initialize. DNN library is not found.")'


def error_cell(i: int) -> str:
    return (f"line = {(mismatch_line(i) + chr(10)).encode()!r}\n"
            "libc.write(2, line, len(line))\n"
            f"{RAISE}\n")


def kinds(cell) -> list[str]:
    """Output kinds in order: 'stderr'/'stdout', 'error', 'annotation' (a display with our
    text/html), 'widget', 'result', 'display'."""
    out = []
    for o in cell.get("outputs", []):
        t = o["output_type"]
        if t == "stream":
            out.append(o["name"])
        elif t == "error":
            out.append("error")
        elif t in ("display_data", "execute_result"):
            data = o.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data:
                out.append("widget")
            elif "cudnn-magic" in data.get("text/plain", "") or "cudnn-magic" in data.get("text/html", ""):
                out.append("annotation" if t == "display_data" else "result")
            else:
                out.append("display" if t == "display_data" else "result")
    return out


def annotation_text(cell) -> str:
    for o in cell.get("outputs", []):
        if o["output_type"] == "display_data" and "text/html" in o.get("data", {}):
            return o["data"]["text/plain"] + "\n" + o["data"]["text/html"]
    return ""


def stream_text(cell, name: str = "stderr") -> str:
    return "".join(o["text"] for o in cell.get("outputs", []) if o["output_type"] == "stream" and o["name"] == name)


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("annotate_kernel")
    spam = build_c_library(SPAM_C, tmp / "libstandin_spam.so")
    cells: dict[str, int] = {}
    src: list[str] = []

    def add(name: str, code: str) -> None:
        cells[name] = len(src)
        src.append(code)

    add("setup", "import ctypes, os, sys, json\nlibc = ctypes.CDLL(None)\nFD2_BEFORE = os.readlink('/proc/self/fd/2')")
    add("load", "%load_ext cudnn_magic")
    add("state", "from cudnn_magic.shell.annotate import annotator\nA = annotator()\n"
                 "print(json.dumps({'capture': A.tee is not None and A.tee.active, 'pid': A.tee.proc.pid}))")
    for i in range(N_REPEAT):
        add(f"err{i}", error_cell(i))
    add("spam", f"lib = ctypes.PyDLL({str(spam)!r})\nlib.standin_spam(10 << 20)\n"
                f"lib.standin_log({(mismatch_line(59) + chr(10)).encode()!r})\n{RAISE}")
    add("warn", f"os.write(2, {TF_SKIP.encode()!r})\nx = 1")
    add("quiet", "y = 2")
    add("value", "raise ValueError('not a cuDNN problem')")
    add("off", "%cudnn_annotate off")
    add("err_off", error_cell(40))
    add("on", "%cudnn_annotate on")
    add("err_on", error_cell(41))
    add("explain", "%cudnn_explain")
    add("last", "print(type(sys.last_value).__name__, sys.last_value)")
    add("unload", "HPID = A.tee.proc.pid\n%unload_ext cudnn_magic\nimport time\n"
                  "def alive(pid):\n    try:\n        os.kill(pid, 0)\n    except ProcessLookupError:\n        return False\n"
                  "    return open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] != 'Z'\n"
                  "print(json.dumps({'fd2_restored': os.readlink('/proc/self/fd/2') == FD2_BEFORE, "
                  "'helper_alive': alive(HPID), 'custom': [t.__name__ for t in get_ipython().custom_exceptions]}))")
    add("after_unload", error_cell(42))
    add("prev", "def prev(self, etype, value, tb, tb_offset=None):\n    print('PREVIOUS HANDLER RAN')\n"
                "    self.showtraceback((etype, value, tb), tb_offset=tb_offset)\n"
                "get_ipython().set_custom_exc((ZeroDivisionError,), prev)\n%load_ext cudnn_magic")
    add("zero", "1/0")
    add("err_chained", error_cell(43))
    add("unload2", "%unload_ext cudnn_magic\nprint([t.__name__ for t in get_ipython().custom_exceptions])")
    nb = run_notebook(src, tmp, timeout=180, save_as=tmp / "annotated.ipynb")
    return nb, cells


def test_capture_is_on(executed):
    nb, c = executed
    state = json.loads(stream_text(nb.cells[c["state"]], "stdout"))
    assert state["capture"] is True


def test_error_then_annotation_every_time(executed):
    nb, c = executed
    good = 0
    for i in range(N_REPEAT):
        cell = nb.cells[c[f"err{i}"]]
        k = kinds(cell)
        line = mismatch_line(i)
        ann = annotation_text(cell)
        ok = (
            "error" in k and "annotation" in k
            and k.index("error") < k.index("annotation")
            and "stderr" in k and k.index("stderr") < k.index("error")  # native bytes before the traceback
            and line in stream_text(cell)
            and "cudnn-version-mismatch" in ann
            and f"12:00:{i:02d}.000000" in ann  # THIS cell's log line is quoted
            and cell["outputs"][k.index("error")]["ename"] == "RuntimeError"
        )
        good += ok
    assert good == N_REPEAT, f"{good}/{N_REPEAT} cells had stderr < error < annotation with the right id and line"


def test_gil_holding_ten_megabytes(executed):
    nb, c = executed
    cell = nb.cells[c["spam"]]
    k = kinds(cell)
    assert "error" in k and "annotation" in k and k.index("error") < k.index("annotation")
    assert len(stream_text(cell)) >= 10 << 20  # every byte reached the notebook
    assert "cudnn-version-mismatch" in annotation_text(cell)


def test_gpu_unused_note_on_success(executed):
    nb, c = executed
    cell = nb.cells[c["warn"]]
    k = kinds(cell)
    assert "error" not in k and "annotation" in k
    assert "Skipping registering GPU devices" in annotation_text(cell)
    assert kinds(nb.cells[c["quiet"]]) == []


def test_value_error_gets_nothing(executed):
    nb, c = executed
    assert kinds(nb.cells[c["value"]]) == ["error"]


def test_toggle_off_on(executed):
    nb, c = executed
    k_off = kinds(nb.cells[c["err_off"]])
    assert "error" in k_off and "annotation" not in k_off
    k_on = kinds(nb.cells[c["err_on"]])
    assert "annotation" in k_on and k_on.index("error") < k_on.index("annotation")


def test_explain_again(executed):
    nb, c = executed
    cell = nb.cells[c["explain"]]
    res = [o for o in cell["outputs"] if o["output_type"] == "execute_result"]
    assert res and "cudnn-version-mismatch" in res[0]["data"]["text/html"]
    # the captured native line: whole in HTML; in text fitted to the width (its logging prefix, with
    # the timestamp, is the part left out first)
    assert "12:00:41.000000" in res[0]["data"]["text/html"]
    assert "Loaded runtime CuDNN library: 8.0.5" in res[0]["data"]["text/plain"]


def test_last_value_for_debug(executed):
    nb, c = executed
    assert stream_text(nb.cells[c["last"]], "stdout").startswith("RuntimeError Failed to get convolution algorithm")


def test_unload_restores_fd2_and_stops_helper(executed):
    nb, c = executed
    st = json.loads(stream_text(nb.cells[c["unload"]], "stdout"))
    assert st == {"fd2_restored": True, "helper_alive": False, "custom": []}
    assert kinds(nb.cells[c["after_unload"]]) == ["stderr", "error"] or "annotation" not in kinds(nb.cells[c["after_unload"]])


def test_chained_previous_handler(executed):
    nb, c = executed
    z = nb.cells[c["zero"]]
    assert "PREVIOUS HANDLER RAN" in stream_text(z, "stdout") and "error" in kinds(z)
    k = kinds(nb.cells[c["err_chained"]])
    assert "annotation" in k and k.index("error") < k.index("annotation")
    assert "ZeroDivisionError" in stream_text(nb.cells[c["unload2"]], "stdout")


def test_terminal_ipython_prints_text_after_traceback(tmp_path):
    code = ("%load_ext cudnn_magic\n"
            "import ctypes\n"
            f"line = {(mismatch_line(7) + chr(10)).encode()!r}\n"
            "ctypes.CDLL(None).write(2, line, len(line))\n"
            f"{RAISE}\n")
    env = kernel_env(tmp_path)
    p = subprocess.run([sys.executable, "-m", "IPython", "--colors=nocolor", "--no-banner", "-c", code],
                       capture_output=True, env=env, timeout=120, cwd=str(tmp_path))
    out = p.stdout.decode("utf-8", "replace")
    assert p.returncode == 1, p.stderr[-2000:]
    tb = out.index("RuntimeError: Failed to get convolution algorithm")
    ann = out.index("cudnn-version-mismatch")
    assert tb < ann
    assert "12:00:07.000000" in out[ann:] or "8.0.5" in out[ann:]
    assert mismatch_line(7).encode() in p.stderr  # the native line still reached the terminal's stderr
