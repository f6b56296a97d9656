"""The command line writes what its streams can take, never "internal error: UnicodeEncodeError".

Real subprocesses (``python -m cudnn_magic``, stdout and stderr pipes) under the encodings users
meet: ``PYTHONIOENCODING=ascii``, ``LC_ALL=C`` with the C-locale coercion and UTF-8 mode off (PEP
538/540: ASCII stdio and an ASCII file system encoding, as Python before 3.7 and many containers
had it), and a UTF-8 locale. The report names paths that are not ASCII: a folder ``lib-ü`` and a
folder whose name is not UTF-8 at all (the byte 0xE9), each on ``LD_LIBRARY_PATH`` and holding a
cuDNN stand-in (a tiny C library built here that answers ``cudnnGetVersion`` like libcudnn.so.9),
and ``explain`` reads a Windows log (cp1252 and UTF-16 with a BOM, CRLF line ends) naming
``C:\\Users\\José``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.support import REPO, build_cudnn_standin, have_gcc

ENVS = {
    "ascii": {"PYTHONIOENCODING": "ascii"},
    "C-locale": {"LC_ALL": "C", "LANG": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0", "PYTHONIOENCODING": ""},
    "utf-8": {"LC_ALL": "C.UTF-8", "PYTHONIOENCODING": ""},
}

WINDOWS_LOG = ("2024-05-01 10:00:00.000000: W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not "
               "load dynamic library 'cudnn64_8.dll'; dlerror: cudnn64_8.dll not found\r\n"
               "C:\\Users\\José\\miniconda3\\envs\\tf\\lib\\site-packages\\tensorflow\\python\\client\\session.py:1\r\n"
               "Can’t find cuDNN\r\n")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    if not have_gcc():
        pytest.skip("the cuDNN stand-in is built with gcc, which is not installed")
    base = tmp_path_factory.mktemp("enc")
    utf8 = base / "lib-\u00fc"
    latin = os.path.join(os.fsencode(base), b"lib-caf\xe9")  # not UTF-8: no str names it but surrogateescape's
    utf8.mkdir()
    os.mkdir(latin)
    build_cudnn_standin(utf8, "9.1.0")
    standin = utf8 / "libcudnn.so.9"
    with open(standin, "rb") as src, open(os.path.join(latin, b"libcudnn.so.9"), "wb") as dst:
        dst.write(src.read())
    logs = base / "logs"
    logs.mkdir()
    (logs / "cp1252.log").write_bytes(WINDOWS_LOG.encode("cp1252"))
    (logs / "utf16.log").write_bytes(WINDOWS_LOG.encode("utf-16"))
    return os.fsencode(utf8) + b":" + latin, logs


def _run(args, env_name, ld_library_path):
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LANG", "PYTHONIOENCODING", "PYTHONUTF8")}
    env.update({k: v for k, v in ENVS[env_name].items() if v})
    env["PYTHONPATH"] = str(REPO)
    envb = {os.fsencode(k): os.fsencode(v) for k, v in env.items()}
    envb[b"LD_LIBRARY_PATH"] = ld_library_path
    return subprocess.run([sys.executable, "-m", "cudnn_magic", *args], capture_output=True, env=envb, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("env_name", sorted(ENVS))
def test_check_prints_every_path_in_any_encoding(folders, env_name):
    ldp, _logs = folders
    r = _run(["check"], env_name, ldp)
    out, err = r.stdout, r.stderr
    assert b"internal error" not in err and r.returncode in (0, 1), err[-2000:]
    text = out.decode("utf-8", "surrogateescape")
    if env_name == "utf-8":
        assert "lib-\u00fc" in text
    elif env_name == "ascii":
        assert "lib-\\xfc" in text  # written as an escape, not dropped
        out.decode("ascii")  # nothing the stream cannot take
    else:  # an ASCII file system encoding: the name's two UTF-8 bytes were never decoded
        assert "lib-\\xc3\\xbc" in text
        out.decode("ascii")
    assert "lib-caf\\xe9" in text or "lib-caf\udce9" in text  # the undecodable byte, as a byte
    # LD_LIBRARY_PATH read at start and os.environ decode alike: no change is claimed
    assert "ld-library-path-changed-at-runtime" not in text


@pytest.mark.parametrize("env_name", sorted(ENVS))
def test_check_json_stays_valid_json(folders, env_name):
    ldp, _logs = folders
    r = _run(["check", "--json"], env_name, ldp)
    assert b"internal error" not in r.stderr and r.returncode in (0, 1), r.stderr[-2000:]
    r.stdout.decode("ascii")  # ensure_ascii: valid in every encoding
    data = json.loads(r.stdout)
    paths = {c["path"] for c in data["cudnn_installed"]}
    assert any("lib-\u00fc" in p for p in paths) or any("\udcc3\udcbc" in p for p in paths), paths
    assert any(os.fsencode(p).endswith(b"lib-caf\xe9/libcudnn.so.9") for p in paths if "caf" in p), paths
    assert not any(f["id"] == "ld-library-path-changed-at-runtime" for f in data["findings"])


@pytest.mark.parametrize("log", ["cp1252.log", "utf16.log"])
@pytest.mark.parametrize("env_name", sorted(ENVS))
def test_explain_a_windows_log(folders, env_name, log):
    ldp, logs = folders
    for args in (["explain", str(logs / log)], ["explain", "--json", str(logs / log)]):
        r = _run(args, env_name, ldp)
        assert b"internal error" not in r.stderr and r.returncode == 0, (args, r.stderr[-2000:])
        if "--json" in args:
            data = json.loads(r.stdout)
            assert data["diagnoses"], data
        else:
            text = r.stdout.decode("utf-8", "surrogateescape")
            assert "cudnn64_8.dll" in text
            if env_name != "utf-8":
                r.stdout.decode("ascii")


def test_the_handler_escapes_only_what_the_codec_cannot_take():
    from cudnn_magic.util.textout import HANDLER

    assert "café ’ 😀 \udce9".encode("ascii", HANDLER) == b"caf\\xe9 \\u2019 \\U0001f600 \\xe9"
    assert "café \udce9".encode("latin-1", HANDLER) == b"caf\xe9 \\xe9"
    assert "café".encode("utf-8", HANDLER) == "café".encode()
    with pytest.raises(UnicodeDecodeError):
        b"\xff".decode("utf-8", HANDLER)
