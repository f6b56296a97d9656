"""The what-if predicts from the new wheel's own file list (its ``RECORD``), read from
where pip would fetch it, never from the names the installed wheel has.

Real wheels throughout (``nvidia-cudnn-jit-cu12`` 9.27.0.42, ``-cu13`` 9.24.0.43, 68 MB each;
``nvidia-cudnn-cu12`` 8.9.7.29 beside torch 2.14.1's cuDNN 9, read from PyPI itself over HTTPS), the
jit wheels served by a package index on loopback (:mod:`wheel_index`: PEP 503 pages with PEP 658
metadata, as PyPI serves them, every byte counted), and each prediction compared with the real
install that follows it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from cudnn_magic.model import Unavailable
from cudnn_magic.probes import wheel_record as wr
from cudnn_magic.probes.owners import read_record
from helpers.prevention_env import make_venv, run_cli
from helpers.real_wheels import installed_dist_info, wheel_file
from helpers.wheel_index import WheelIndex

pytestmark = [pytest.mark.realwheels, pytest.mark.timeout(1200)]

JIT12, JIT13 = ("nvidia-cudnn-jit-cu12", "9.27.0.42"), ("nvidia-cudnn-jit-cu13", "9.24.0.43")


def _installed_rows(dist: str, version: str) -> set[tuple[str, str | None, int | None]]:
    """The RECORD rows of the real install (``pip install --target``), minus what pip adds at
    install time (INSTALLER, REQUESTED, the RECORD's own row, direct_url.json)."""
    info = installed_dist_info(dist, version)
    rec = read_record(str(info))
    assert rec is not None
    skip = ("/INSTALLER", "/REQUESTED", "/RECORD", "/direct_url.json")
    return {(e.path, e.digest, e.size) for e in rec.entries if not e.path.endswith(skip) and "__pycache__" not in e.path}


def _rows(rec: wr.WheelRecord) -> set[tuple[str, str | None, int | None]]:
    return {(e.path, e.digest, e.size) for e in rec.entries if not e.path.endswith("/RECORD")}


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))


@pytest.mark.parametrize("dist,version", [JIT12, JIT13])
def test_the_record_of_a_local_wheel_is_the_one_pip_installs(dist, version):
    whl = wheel_file(dist, version)
    rec = wr.wheel_record(whl.as_uri(), dist, version)
    assert isinstance(rec, wr.WheelRecord), rec
    assert rec.source == "file" and rec.fetched_bytes == 0
    assert _rows(rec) == _installed_rows(dist, version)


def test_over_http_only_byte_ranges_are_read_and_the_record_is_the_real_one():
    whl = wheel_file(*JIT13)
    with WheelIndex([whl]) as idx:
        rec = wr.wheel_record(idx.file_url(whl.name), *JIT13)
        assert isinstance(rec, wr.WheelRecord), rec
        assert rec.source == "http range"
        assert _rows(rec) == _installed_rows(*JIT13)
        size = whl.stat().st_size
        assert idx.served[whl.name] == rec.fetched_bytes
        assert rec.fetched_bytes < 512 * 1024 < size // 100, (rec.fetched_bytes, size)
        assert all(r.startswith("bytes=") for p, r in idx.requests if p.startswith("/files/"))


def test_a_record_beyond_the_first_range_is_fetched_in_more_ranges(monkeypatch):
    """With blocks smaller than the central directory, the reader must ask for the gaps."""
    monkeypatch.setattr(wr, "BLOCK_BYTES", 512)
    whl = wheel_file(*JIT12)
    with WheelIndex([whl]) as idx:
        rec = wr.wheel_record(idx.file_url(whl.name), *JIT12, use_cache=False)
        assert isinstance(rec, wr.WheelRecord), rec
        assert _rows(rec) == _installed_rows(*JIT12)
        ranged = [r for p, r in idx.requests if p.startswith("/files/")]
        assert len(ranged) > 2 and idx.served[whl.name] == rec.fetched_bytes < 64 * 1024


def test_a_server_without_byte_ranges_is_left_at_once_and_says_why():
    whl = wheel_file(*JIT13)
    with WheelIndex([whl], ranges=False) as idx:
        rec = wr.wheel_record(idx.file_url(whl.name), *JIT13)
        assert isinstance(rec, Unavailable)
        assert "HTTP 200" in rec.reason and "not downloaded" in rec.reason
        assert len([p for p, _ in idx.requests if p.startswith("/files/")]) == 1


def test_credentials_and_unreachable_servers_are_reasons_not_errors():
    whl = wheel_file(*JIT13)
    with WheelIndex([whl], auth=True) as idx:
        rec = wr.wheel_record(idx.file_url(whl.name), *JIT13)
    assert isinstance(rec, Unavailable) and "HTTP 401" in rec.reason and "credentials" in rec.reason
    rec = wr.wheel_record(idx.file_url(whl.name), *JIT13)  # the server is gone
    assert isinstance(rec, Unavailable) and "cannot be reached" in rec.reason
    for url, words in [("https://example.invalid/pkg-1.0.tar.gz", "not a wheel"),
                       ("git+https://example.invalid/x.git", "not a wheel"),
                       ("ftp://example.invalid/x-1.0-py3-none-any.whl", "ftp")]:
        rec = wr.wheel_record(url, "pkg", "1.0")
        assert isinstance(rec, Unavailable) and words in rec.reason, (url, rec)


def test_a_file_that_is_no_zip_is_a_reason(tmp_path):
    fake = tmp_path / "fake-1.0-py3-none-any.whl"
    fake.write_bytes(b"not a zip archive" * 100)
    rec = wr.wheel_record(fake.as_uri(), "fake", "1.0")
    assert isinstance(rec, Unavailable) and "BadZipFile" in rec.reason


def test_the_cache_is_keyed_by_the_archive_hash_and_never_written_through_a_link(tmp_path):
    whl = wheel_file(*JIT13)
    with WheelIndex([whl]) as idx:
        sha = idx.sha256(whl.name)
        first = wr.wheel_record(idx.file_url(whl.name), *JIT13, sha256=sha)
        hits = len(idx.requests)
        again = wr.wheel_record(idx.file_url(whl.name), *JIT13, sha256=sha)
        assert isinstance(again, wr.WheelRecord) and again.source == "cache" and len(idx.requests) == hits
        assert _rows(again) == _rows(first)
        # a link planted where another hash's entry would go: read refuses it, write replaces the link
        victim = tmp_path / "victim"
        victim.write_text("keep me")
        other = "0" * 64
        os.symlink(victim, os.path.join(wr.cache_dir(), other))
        got = wr.wheel_record(idx.file_url(whl.name), *JIT13, sha256=other)
        assert isinstance(got, wr.WheelRecord) and got.source == "http range"
        assert victim.read_text() == "keep me"
        assert not os.path.islink(os.path.join(wr.cache_dir(), other))
        # a hash that is no hex digest never names a file
        assert wr._cached("../../etc/passwd") is None


@pytest.fixture(scope="module")
def jit12_venv(tmp_path_factory):
    return make_venv(tmp_path_factory.mktemp("record"), "nvidia-cudnn-jit-cu12==9.27.0.42")


def _overwrite(findings):
    ow = [f for f in findings if f["id"] == "cudnn-wheel-overwritten"]
    assert len(ow) == 1, findings
    return ow[0]


def test_the_prediction_lists_the_new_wheels_files_and_matches_the_real_install(jit12_venv, tmp_path):
    """jit-cu13 9.24 over jit-cu12 9.27: both write nvidia/cudnn_jit, but 9.24 has no gnn_ops
    headers. The old prediction took 9.27's 21 names; pip really writes 19 over them, and 9.27's
    gnn_ops headers stay 9.27's. The index serves PEP 658 metadata, as PyPI does; the what-if reads
    the wheel's RECORD in byte ranges (pip 23.2, the venv's own, still downloads the whole wheel at
    the end of its dry run: that is pip's doing, not counted here)."""
    whl = wheel_file(*JIT13)
    py = jit12_venv
    with WheelIndex([whl]) as idx:
        proc = run_cli(py, "check", "--json", "--what-if", f"{JIT13[0]}=={JIT13[1]} --no-deps --index-url {idx.url}",
                       isolate_pip_config=True, env_extra={"XDG_CACHE_HOME": str(tmp_path / "c")})
        assert proc.returncode == 1, proc.stderr[-2000:]
        data = json.loads(proc.stdout)
        assert idx.ranged.get(whl.name, 0) < 512 * 1024, "the what-if reads byte ranges, never the whole wheel"
        predicted = _overwrite([f for f in data["predicted_findings"] if f["new"]])
        assert "both list 19 files" in predicted["detail"], predicted["detail"]
        assert any("file list read from the wheel's own RECORD over HTTP" in n for n in data["notes"]), data["notes"]
        pw = data["predicted_wheels_overwritten"][0]
        # the real install, from the same index, then the real check
        real = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--index-url", idx.url,
                               f"{JIT13[0]}=={JIT13[1]}"], capture_output=True, text=True, timeout=600,
                              env={**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": ""})
        assert real.returncode == 0, real.stderr[-2000:]
    try:
        after = run_cli(py, "check", "--json")
        got = json.loads(after.stdout)
        actual = _overwrite(got["findings"])
        assert actual["title"] == predicted["title"]
        assert "both list 19 files" in actual["detail"]
        ow = got["wheels_overwritten"][0]
        assert sorted(ow["files"]) == sorted(pw["files"]) and ow["present"] == pw["present"]
        site = os.path.dirname(os.path.dirname(ow["files"][0]))
        left = sorted(n for n in os.listdir(os.path.join(site, "include")) if "gnn_ops" in n)
        assert left == ["cudnn_gnn_ops.h", "cudnn_gnn_ops_v9.h"], "9.27's own headers stay"
        assert not any("gnn_ops" in p for p in pw["files"])
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-q", "-y", JIT13[0]], capture_output=True, timeout=300)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--force-reinstall",
                        f"{JIT12[0]}=={JIT12[1]}"], capture_output=True, timeout=600)


def test_a_record_that_cannot_be_read_falls_back_to_names_and_says_so(jit12_venv, tmp_path):
    whl = wheel_file(*JIT13)
    with WheelIndex([whl], ranges=False) as idx:
        proc = run_cli(jit12_venv, "check", "--json", "--what-if",
                       f"{JIT13[0]}=={JIT13[1]} --no-deps --index-url {idx.url}", isolate_pip_config=True,
                       env_extra={"XDG_CACHE_HOME": str(tmp_path / "c")})
    data = json.loads(proc.stdout)
    note = next(n for n in data["notes"] if n.startswith(f"{JIT13[0]} {JIT13[1]}: file list"))
    assert "assumed from the files of its folder installed now" in note and "HTTP 200" in note
    assert _overwrite([f for f in data["predicted_findings"] if f["new"]])


def test_cudnn_8_beside_torchs_cudnn_9_leaves_torch_on_9_and_overwrites_headers_only(tmp_path):
    """torch 2.14.1 (cuDNN 9.24, nvidia-cudnn-cu13) + nvidia-cudnn-cu12 8.9.7.29: one folder, but
    8.9.7 ships libcudnn.so.8 and its sub-libraries, no libcudnn.so.9, so torch keeps loading 9.24;
    the files both list are three headers. The old prediction said PyTorch would load 8.9.7."""
    from cudnn_magic.probes import elf
    from helpers.framework_envs import site_of, torch_env

    py = torch_env()
    # from the real index (PyPI): the RECORD of the 0.7 GB wheel is read in byte ranges over HTTPS
    proc = run_cli(py, "check", "--json", "--what-if", "nvidia-cudnn-cu12==8.9.7.29 --no-deps",
                   env_extra={"XDG_CACHE_HOME": str(tmp_path / "c")})
    data = json.loads(proc.stdout)
    note = next(n for n in data["notes"] if n.startswith("nvidia-cudnn-cu12 8.9.7.29: file list"))
    assert "read from the wheel's own RECORD over HTTP" in note, note
    torch_row = next(f for f in data["predicted_frameworks"] if f["name"] == "PyTorch")
    assert torch_row["verdict"] == "ok" and torch_row["cudnn_used"].startswith("9.24"), torch_row
    ow = _overwrite([f for f in data["predicted_findings"] if f["new"]])
    assert ow["severity"] == "warning" and "No library is among them" in ow["detail"], ow
    files = sorted(os.path.basename(p) for p in data["predicted_wheels_overwritten"][0]["files"])
    assert files == ["cudnn.h", "cudnn_backend.h", "cudnn_version.h"]
    # the truth behind it: torch's library NEEDs libcudnn.so.9, and the 8.9.7 wheel's real RECORD has none
    needed = elf.read_dynamic(str(site_of(py) / "torch" / "lib" / "libtorch_cuda.so"))
    assert "libcudnn.so.9" in needed.needed
    real = {os.path.basename(p) for p, _, _ in _installed_rows("nvidia-cudnn-cu12", "8.9.7.29")}
    assert "libcudnn.so.8" in real and "libcudnn.so.9" not in real
