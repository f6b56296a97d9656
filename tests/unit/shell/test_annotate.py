"""The annotation hook in a real ``InteractiveShell`` (in a child process: the capture takes
over fd 2, and IPython's shell is a singleton).

Each scenario runs cells with ``ip.run_cell`` and prints ``@@name`` markers on stdout, where a
plain ``InteractiveShell`` also prints tracebacks and ``display()`` output, so the order of
traceback and annotation is visible in one stream.
"""

from __future__ import annotations

from helpers.shell_child import CUDNN_CELL, MISMATCH, TF_SKIP, run, section


def test_cudnn_error_traceback_then_annotation(tmp_path):
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        mark("err"); cell({CUDNN_CELL!r}); mark("end")
        print("last_value:", type(sys.last_value).__name__, sys.last_value)
        from cudnn_magic.shell.annotate import annotator
        print("tee:", annotator().tee is not None and annotator().tee.active)
    """)
    assert rc == 0, err
    s = section(out, "err")
    tb = s.index("RuntimeError")
    ann = s.index("cudnn-version-mismatch")
    assert tb < ann
    assert s.count("Traceback") == 1 and s.count("DNN library is not found") >= 1
    assert "8.0.5 but source was compiled with: 8.1.0" in s[ann:]
    assert "last_value: RuntimeError Failed to get convolution algorithm" in out
    assert "tee: True" in out
    assert MISMATCH.encode() in err  # the user still sees the native line


def test_value_error_gets_nothing_and_success_is_silent(tmp_path):
    out, err, rc = run(tmp_path, """
        ip.run_line_magic("load_ext", "cudnn_magic")
        from cudnn_magic.shell.annotate import annotator
        tee = annotator().tee
        mark("val"); cell("raise ValueError('bad value')"); mark("ok")
        t0 = tee._token
        for i in range(200): cell("x = 1")
        print("syncs:", tee._token - t0)
        mark("end")
    """)
    assert rc == 0, err
    s = section(out, "val")
    assert s.count("ValueError") >= 1 and s.count("Traceback") == 1 and "cudnn-magic" not in s
    assert "syncs: 0" in out  # quiet successful cells never round-trip to the helper


def test_gpu_unused_warning_on_success(tmp_path):
    src = f"import os\nos.write(2, {TF_SKIP.encode()!r})\nx = 1\n"
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        mark("warn"); r = cell({src!r}); mark("quiet"); cell("y = 2"); mark("end")
        print("success:", r.success)
    """)
    assert rc == 0, err
    from cudnn_magic.engines.diagnose import gpu_unused_warnings

    expected = gpu_unused_warnings(TF_SKIP)
    assert expected, "knowledge base should flag the TF skip lines"
    w = section(out, "warn")
    assert expected[0].id in w and "Skipping registering GPU devices" in w
    assert section(out, "quiet").strip() == ""
    assert "success: True" in out
    assert TF_SKIP.encode() in err


def test_chains_previous_handler_and_unload_restores_it(tmp_path):
    out, err, rc = run(tmp_path, f"""
        BEFORE = os.readlink('/proc/self/fd/2')
        def prev(self, etype, value, tb, tb_offset=None):
            print("PREV HANDLER", etype.__name__)
            self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        ip.set_custom_exc((ZeroDivisionError,), prev)
        before = ip.CustomTB
        ip.run_line_magic("load_ext", "cudnn_magic")
        mark("zero"); cell("1/0"); mark("cudnn"); cell({CUDNN_CELL!r}); mark("unload")
        ip.run_line_magic("unload_ext", "cudnn_magic")
        print("restored:", ip.CustomTB is before, ip.custom_exceptions)
        print("fd2:", os.readlink('/proc/self/fd/2') == BEFORE)
        mark("after"); cell("1/0"); mark("end")
    """)
    assert rc == 0, err
    z = section(out, "zero")
    assert z.count("PREV HANDLER ZeroDivisionError") == 1 and z.count("Traceback") == 1
    c = section(out, "cudnn")
    assert "PREV" not in c and c.index("RuntimeError") < c.index("cudnn-version-mismatch")
    assert "restored: True (<class 'ZeroDivisionError'>,)" in out
    assert "fd2: True" in out
    assert section(out, "after").count("PREV HANDLER") == 1


def test_replaced_handler_falls_back_to_post_run_cell(tmp_path):
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        def other(self, etype, value, tb, tb_offset=None):
            print("OTHER HANDLER")
            self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        ip.set_custom_exc((Exception,), other)
        mark("cudnn"); cell({CUDNN_CELL!r}); mark("unload")
        ip.run_line_magic("unload_ext", "cudnn_magic")
        print("kept other:", ip.custom_exceptions == (Exception,))
        mark("end")
    """)
    assert rc == 0, err
    c = section(out, "cudnn")
    assert c.index("OTHER HANDLER") < c.index("RuntimeError") < c.index("cudnn-version-mismatch")
    assert c.count("Traceback") == 1
    assert "kept other: True" in out


def test_internal_failure_still_shows_traceback_once(tmp_path):
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        import cudnn_magic.engines.diagnose as D
        def boom(*a, **k): raise RuntimeError("knowledge base exploded")
        D.diagnose = boom
        mark("cudnn"); cell({CUDNN_CELL!r}); mark("again"); cell("raise KeyError('k')"); mark("end")
        print("still ours:", ip.custom_exceptions)
    """)
    assert rc == 0, err
    c = section(out, "cudnn")
    assert c.count("Traceback") == 1 and "DNN library is not found" in c
    assert "exploded" not in c and "Custom TB Handler failed" not in out + err.decode(errors="replace")
    assert section(out, "again").count("KeyError") >= 1
    assert "still ours: (<class 'Exception'>,)" in out


def test_keyboard_interrupt_and_syntax_error(tmp_path):
    out, err, rc = run(tmp_path, """
        ip.run_line_magic("load_ext", "cudnn_magic")
        mark("kbd"); cell("raise KeyboardInterrupt"); mark("syntax"); cell("def f(:\\n  pass"); mark("end")
    """)
    assert rc == 0, err
    assert "KeyboardInterrupt" in section(out, "kbd") and "cudnn-magic" not in section(out, "kbd")
    s = section(out, "syntax")
    assert s.count("SyntaxError") >= 1 and "cudnn-magic" not in s


def test_annotate_toggle_and_explain(tmp_path):
    out, err, rc = run(tmp_path, f"""
        ip.run_line_magic("load_ext", "cudnn_magic")
        ip.run_line_magic("cudnn_annotate", "off")
        mark("off"); cell({CUDNN_CELL!r}); mark("explain")
        ex = ip.run_line_magic("cudnn_explain", "")
        print("ids:", [d.id for d in ex.diagnoses])
        b = ex._repr_mimebundle_()
        print("bundle:", sorted(b), "8.0.5" in b["text/plain"])
        ex2 = ip.run_line_magic("cudnn_explain", MISMATCH)
        print("ids2:", [d.id for d in ex2.diagnoses])
        ip.run_line_magic("cudnn_annotate", "on")
        mark("on"); cell({CUDNN_CELL!r}); mark("end")
    """)
    assert rc == 0, err
    assert "cudnn-version-mismatch" not in section(out, "off") and "RuntimeError" in section(out, "off")
    e = section(out, "explain")
    assert "ids: ['cudnn-version-mismatch'" in e
    assert "bundle: ['text/html', 'text/plain'] True" in e
    assert "ids2: ['cudnn-version-mismatch'" in e
    assert "cudnn-version-mismatch" in section(out, "on")


def test_without_capture_still_annotates_from_exception(tmp_path):
    out, err, rc = run(tmp_path, """
        ip.run_line_magic("load_ext", "cudnn_magic")
        mark("err"); cell("raise RuntimeError('Failed to get convolution algorithm. DNN library is not found.')"); mark("end")
        ip.run_line_magic("cudnn_annotate", "")
    """, env={"CUDNN_MAGIC_CAPTURE": "0"})
    assert rc == 0, err
    s = section(out, "err")
    assert s.count("Traceback") == 1 and "cudnn-init-failed" in s
    assert "native stderr capture: off (turned off by CUDNN_MAGIC_CAPTURE)" in out


def test_helper_death_restores_fd2_and_says_so_once(tmp_path):
    out, err, rc = run(tmp_path, f"""
        import signal, time
        BEFORE = os.readlink('/proc/self/fd/2')
        ip.run_line_magic("load_ext", "cudnn_magic")
        from cudnn_magic.shell.annotate import annotator
        tee = annotator().tee
        os.kill(tee.proc.pid, signal.SIGKILL)
        for _ in range(500):
            if not tee.active: break
            time.sleep(0.01)
        mark("c1"); cell("x = 1"); mark("c2"); cell("y = 2"); mark("err"); cell({CUDNN_CELL!r}); mark("end")
        print("fd2 restored:", os.readlink('/proc/self/fd/2') == BEFORE)
    """)
    assert rc == 0, err
    text = err.decode("utf-8", "replace")
    assert text.count("fd-2 capture helper") == 1 and "exited" in text
    assert "fd2 restored: True" in out
    e = section(out, "err")
    assert e.count("Traceback") == 1 and "DNN library is not found" in e
    assert MISMATCH in text  # the native line went straight to the real stderr


def test_cell_magic_explains_a_pasted_multiline_log_without_live_facts(tmp_path):
    out, err, rc = run(tmp_path, """
        ip.run_line_magic("load_ext", "cudnn_magic")
        log = ("I0000 cuda_dnn.cc:500] some noise\\n" + MISMATCH + "\\nTraceback (most recent call last):\\n"
               "RuntimeError: DNN library is not found.")
        ex = ip.run_cell_magic("cudnn_explain", "", log)
        print("ids:", [d.id for d in ex.diagnoses])
        print("facts:", any(e.startswith("fact:") for d in ex.diagnoses for e in d.evidence))
        ex2 = ip.run_cell_magic("cudnn_explain", "--facts", log)
        print("ids2:", [d.id for d in ex2.diagnoses][:1])
        print("none:", ip.run_cell_magic("cudnn_explain", "", "all good").diagnoses)
    """)
    assert rc == 0, err
    assert "ids: ['cudnn-version-mismatch'" in out
    assert "facts: False" in out  # pasted text is explained from its own words
    assert "ids2: ['cudnn-version-mismatch']" in out
    assert "none: []" in out
