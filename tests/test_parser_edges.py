"""The pure parsers of probes/ at their edges: glibc's ld.so.cache, a wheel's RECORD, core
metadata (METADATA / PKG-INFO + requires.txt) and the cuDNN pins in it (issue 20: mutation testing).

Sources: glibc ``sysdeps/generic/dl-cache.h`` (struct cache_file_new: magic "glibc-ld.so.cache"
+ version "1.1", nlibs, len_strings, flags, pad[3], extension_offset, unused[3]; entries of
flags, key, value, osversion, hwcap = 24 bytes; string offsets from the start of the new cache);
the wheel spec (RECORD is CSV: path, "sha256=<urlsafe b64>", size); core metadata 2.x (an RFC 822
header block ending at the first blank line; continuation lines start with whitespace;
``Requires-Dist`` may repeat); setuptools' requires.txt (``[extra:marker]`` sections); PEP 503
names; the torch / tensorflow / jax wheels' Requires-Dist lines quoted in docs/facts.md.
"""

from __future__ import annotations

import struct

import pytest

from cudnn_magic.probes.frameworks.common import (
    _is_cudnn_req,
    _pin_specs,
    _pin_version,
    _release,
    read_dist_metadata,
)
from cudnn_magic.probes.loader import read_ldcache
from cudnn_magic.probes.owners import RecordEntry, read_record
from cudnn_magic.rules.cudnn_version import CudnnVersion

MAGIC = b"glibc-ld.so.cache1.1"


def _ldcache(entries, prefix=b""):
    """The bytes of a new-format cache holding ``entries`` [(soname, path)], after ``prefix``
    (the old-format part some glibc versions still write first)."""
    header = 48
    strings = b""
    offsets = []
    table_end = header + 24 * len(entries)
    for key, value in entries:
        k = table_end + len(strings)
        strings += key.encode() + b"\0"
        v = table_end + len(strings)
        strings += value.encode() + b"\0"
        offsets.append((k, v))
    head = MAGIC + struct.pack("<II", len(entries), len(strings)) + b"\0" * 4 + struct.pack("<I", 0) + b"\0" * 12
    assert len(head) == header
    table = b"".join(struct.pack("<iIIIQ", 0x303, k, v, 0, 0) for k, v in offsets)
    return prefix + head + table + strings


@pytest.mark.parametrize("prefix", [b"", b"ld.so-1.7.0" + b"\0" * 13])
def test_ldcache_in_cache_order(tmp_path, prefix):
    p = tmp_path / "ld.so.cache"
    p.write_bytes(_ldcache([("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
                            ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"),
                            ("libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9")], prefix))
    got, note = read_ldcache(str(p))
    assert note is None
    assert got == {"libcudnn.so.9": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"],
                   "libz.so.1": ["/lib/x86_64-linux-gnu/libz.so.1"]}


def test_ldcache_empty_unknown_truncated_unreadable(tmp_path):
    p = tmp_path / "c"
    p.write_bytes(_ldcache([]))
    assert read_ldcache(str(p)) == ({}, None)
    p.write_bytes(b"ld.so-1.7.0 and nothing else")
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: unknown format")
    full = _ldcache([("libcudnn.so.9", "/x/libcudnn.so.9")])
    p.write_bytes(full[:48 + 10])  # the entry table cut short
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: truncated")
    p.write_bytes(MAGIC + b"\1\0")  # nlibs itself cut short
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: truncated")
    got, note = read_ldcache(str(tmp_path / "missing"))
    assert got == {} and note.startswith(f"ld.so cache {tmp_path / 'missing'} unreadable (")


def test_the_real_ldcache_parses():
    got, note = read_ldcache()
    if note is not None:
        pytest.skip(note)
    assert any(k.startswith("libc.so") for k in got)
    assert all(isinstance(v, list) and v and all(p.startswith("/") for p in v) for v in got.values())


RECORD_LINES = [
    # RECORD line, the entry (None: skipped)
    ("nvidia/cudnn/lib/libcudnn.so.9,sha256=AbC_-1,1234\n",
     RecordEntry("nvidia/cudnn/lib/libcudnn.so.9", "sha256=AbC_-1", 1234)),
    ("nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD,,\r\n", RecordEntry("nvidia_cudnn_cu12-9.1.0.70.dist-info/RECORD")),
    ('"odd,name.so",sha256=x,7\n', RecordEntry("odd,name.so", "sha256=x", 7)),
    ('"say ""hi"".txt",sha256=x,0\n', RecordEntry('say "hi".txt', "sha256=x", 0)),
    ('"x",sha256=y,1\n', RecordEntry("x", "sha256=y", 1)),
    ('",sha256=y,1\n', RecordEntry('"', "sha256=y", 1)),  # one quote is no quoting
    ("a.so,sha256=x,notanumber\n", RecordEntry("a.so", "sha256=x", None)),
    ("a.so,sha256=x,-5\n", RecordEntry("a.so", "sha256=x", None)),
    ("only-a-path\n", RecordEntry("only-a-path")),
    ("path,digest-but-no-size\n", RecordEntry("path,digest-but-no-size")),
    ("\n", None), ("", None),
]


@pytest.mark.parametrize("line, entry", RECORD_LINES, ids=[repr(x[0][:30]) for x in RECORD_LINES])
def test_record_lines(tmp_path, line, entry):
    info = tmp_path / "nvidia_cudnn_cu12-9.1.0.70.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("first.py,sha256=a,1\n" + line, encoding="utf-8", newline="")
    rec = read_record(str(info))
    assert rec.entries[0] == RecordEntry("first.py", "sha256=a", 1)
    assert rec.entries[1:] == ((entry,) if entry is not None else ())


def test_record_names_the_distribution_from_its_folder(tmp_path):
    info = tmp_path / "Nvidia_CuDNN_cu12-9.1.0.70.dist-info"
    info.mkdir()
    (info / "RECORD").write_text("", encoding="utf-8")
    rec = read_record(str(info))
    assert (rec.name, rec.version, rec.root, rec.entries, rec.dist_info) == (
        "nvidia-cudnn-cu12", "9.1.0.70", str(tmp_path), (), str(info))
    assert rec.label == "nvidia-cudnn-cu12 9.1.0.70"
    assert rec.abspath(RecordEntry("nvidia/../nvidia/x.so")) == str(tmp_path / "nvidia" / "x.so")
    assert read_record(str(tmp_path / "none-1.0.dist-info")) is None


def _meta(tmp_path, text, folder="torch-2.9.1.dist-info", name="METADATA"):
    d = tmp_path / folder
    d.mkdir()
    (d / name).write_text(text, encoding="utf-8")
    return d


def test_metadata_headers(tmp_path):
    d = _meta(tmp_path, "Metadata-Version: 2.1\nName: Torch_Thing\nVersion: 2.9.1\n"
                        "Requires-Dist: nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\" and\n"
                        "  platform_machine == \"x86_64\"\n"
                        "requires-dist:  filelock \n"
                        "Summary: not: a requirement\n"
                        "\n"
                        "Requires-Dist: in-the-body-not-a-header\n")
    info = read_dist_metadata(str(d))
    assert info.name == "torch-thing"  # PEP 503
    assert info.version == "2.9.1"
    assert info.requires == ['nvidia-cudnn-cu12==9.10.2.21; platform_system == "Linux" and platform_machine == "x86_64"',
                             "filelock"]
    assert info.path == str(d)


@pytest.mark.parametrize("text", ["Name: torch\n", "Version: 1\n", "Name:\nVersion: 1\n", "\nName: torch\nVersion: 1\n",
                                  "Name torch\nVersion 1\n"])
def test_metadata_without_name_or_version_is_refused(tmp_path, text):
    with pytest.raises(ValueError):
        read_dist_metadata(str(_meta(tmp_path, text)))


def test_metadata_too_large_or_missing(tmp_path):
    d = _meta(tmp_path, "Name: x\nVersion: 1\n" + "X: " + "y" * (4 << 20) + "\n")
    with pytest.raises(ValueError):
        read_dist_metadata(str(d))
    with pytest.raises(OSError):
        read_dist_metadata(str(tmp_path / "nothing.dist-info"))


def test_egg_info_requires_txt_sections_become_markers(tmp_path):
    d = _meta(tmp_path, "Name: tensorflow\nVersion: 2.15.0\nRequires-Dist: numpy\n", folder="tensorflow-2.15.0.egg-info",
              name="PKG-INFO")
    (d / "requires.txt").write_text("absl-py>=1.0\n# a comment\n\n[and-cuda]\nnvidia-cudnn-cu12==8.9.4.25\n"
                                    "[:sys_platform == \"linux\"]\nlinux-only\n[gpu:python_version >= \"3.9\"]\ngpuonly\n",
                                    encoding="utf-8")
    info = read_dist_metadata(str(d))
    assert info.requires == ["numpy", "absl-py>=1.0", 'nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"',
                             'linux-only; sys_platform == "linux"',
                             'gpuonly; extra == "gpu" and python_version >= "3.9"']


def test_egg_info_without_requires_txt(tmp_path):
    d = _meta(tmp_path, "Name: x\nVersion: 1\n", folder="x-1.egg-info", name="PKG-INFO")
    assert read_dist_metadata(str(d)).requires == []


@pytest.mark.parametrize("req, specs", [
    ('nvidia-cudnn-cu12<10.0,>=9.3.0.75; extra == "and-cuda"', [("<", "10.0"), (">=", "9.3.0.75")]),
    ("nvidia-cudnn-cu12==9.10.2.21", [("==", "9.10.2.21")]),
    ("nvidia-cudnn-cu12 (==9.1.*)", [("==", "9.1.*")]),
    ("nvidia-cudnn-cu12[extra]~=9.1; python_version >= '3.9'", [("~=", "9.1")]),
    ("nvidia-cudnn-cu12===9.1.0.70", [("===", "9.1.0.70")]),
    ("nvidia-cudnn-cu12!=9.10.0,<=9.11,>9", [("!=", "9.10.0"), ("<=", "9.11"), (">", "9")]),
    ("nvidia-cudnn-cu12", []),
    ("nvidia-cudnn-cu13>=9.12", [(">=", "9.12")]),  # the cu13 in the name is no pin
])
def test_pin_specs(req, specs):
    assert _pin_specs(req) == specs


@pytest.mark.parametrize("req, is_cudnn", [
    ("nvidia-cudnn-cu12==9.1", True), ("nvidia-cudnn-cu13", True), ("nvidia-cudnn-jit-cu12>=9", True),
    ("Nvidia_CuDNN_CU12 ==9.1", True), ("nvidia-cudnn", True), ("nvidia-cudnn-frontend>=1.0", False),
    ("nvidia-cublas-cu12", False), ("  nvidia-cudnn-cu12", True), ("", False), ("nvidia-cudnn-cu12x", False),
])
def test_which_requirements_are_cudnn(req, is_cudnn):
    assert _is_cudnn_req(req) is is_cudnn


@pytest.mark.parametrize("pins, ops, found", [
    (["nvidia-cudnn-cu12==9.10.2.21; platform_system == \"Linux\""], ("==",), (CudnnVersion(9, 10, 2, 21), 0)),
    (["nvidia-cudnn-cu12<10.0,>=9.3.0.75"], (">=",), (CudnnVersion(9, 3, 0, 75), 0)),
    (["nvidia-cudnn-cu12<10.0", "nvidia-cudnn-cu12>=9.1"], (">=", "=="), (CudnnVersion(9, 1), 1)),
    (["nvidia-cudnn-cu12==9.1.*"], ("==",), (CudnnVersion(9, 1), 0)),
    (["nvidia-cudnn-cu12==junk.1", "nvidia-cudnn-cu12==9.2"], ("==",), (CudnnVersion(9, 2), 1)),
    (["nvidia-cudnn-cu12<10"], ("==",), None), ([], ("==",), None),
])
def test_pin_version_takes_the_first_pin_with_the_operator(pins, ops, found):
    got = _pin_version(pins, ops)
    assert got == (None if found is None else (found[0], pins[found[1]]))


@pytest.mark.parametrize("version, release", [
    ("2.22.0.dev20260115", (2, 22, 0)), ("2.9.1+cu128", (2, 9, 1)), ("1", (1,)), ("not a version", None), (None, None),
])
def test_release(version, release):
    assert _release(version) == release


# --- ELF: the parser's answers against binutils' readelf on real shared objects (the system's
# libraries and the real nvidia-cudnn-jit wheel installed in the test venv). Layout per the
# System V gABI; readelf is the independent reader.
import glob  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sysconfig  # noqa: E402

from cudnn_magic.probes.elf import NotElf, read_dynamic, read_symbol_bytes, symbol_slots  # noqa: E402

_SITE = sysconfig.get_paths()["purelib"]
ELF_FILES = [p for p in (
    *sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libssl.so.3")), *sorted(glob.glob("/usr/lib/x86_64-linux-gnu/libz.so.1")),
    *sorted(glob.glob(os.path.join(_SITE, "nvidia", "cudnn*", "lib", "libcudnn.so.9"))),
    *sorted(glob.glob(os.path.join(_SITE, "nvidia", "cudnn*", "lib", "libcudnn_graph.so.9"))),
    *sorted(glob.glob(os.path.join(_SITE, "zmq", "backend", "cython", "_zmq*.so"))),
) if os.path.isfile(p)]
needs_readelf = pytest.mark.skipif(shutil.which("readelf") is None or not ELF_FILES, reason="no readelf or no ELF files")


def _readelf(*args):
    return subprocess.run(["readelf", "-W", *args], capture_output=True, text=True, check=True).stdout


@needs_readelf
@pytest.mark.parametrize("path", ELF_FILES, ids=[os.path.basename(p) for p in ELF_FILES])
def test_dynamic_section_as_readelf_reads_it(path):
    dyn = _readelf("-d", path)
    want_needed = tuple(re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", dyn))
    sonames = re.findall(r"\(SONAME\)\s+Library soname: \[(.*?)\]", dyn)
    rpath = re.findall(r"\(RPATH\)\s+Library rpath: \[(.*?)\]", dyn)
    runpath = re.findall(r"\(RUNPATH\)\s+Library runpath: \[(.*?)\]", dyn)
    got = read_dynamic(path)
    assert got.needed == want_needed
    assert got.soname == (sonames[0] if sonames else None)
    assert got.rpath == (tuple(rpath[0].split(":")) if rpath else ())
    assert got.runpath == (tuple(runpath[0].split(":")) if runpath else ())
    assert got.machine == 62  # EM_X86_64 (readelf -h: "Advanced Micro Devices X86-64")
    assert "X86-64" in _readelf("-h", path)


@needs_readelf
@pytest.mark.parametrize("path", ELF_FILES, ids=[os.path.basename(p) for p in ELF_FILES])
def test_import_slots_as_readelf_reads_them(path):
    relocs = _readelf("-r", path)
    want = sorted((m.group(2).split("@")[0], int(m.group(1), 16)) for m in re.finditer(
        r"^([0-9a-f]+)\s+[0-9a-f]+\s+R_X86_64_(?:GLOB_DAT|JUMP_SLOT|64)\s+[0-9a-f]+\s+(\S+)", relocs, re.M))
    for prefix in ("", "_", "c", "cudnn", "zz-none"):
        slots, loads = symbol_slots(path, prefix)
        assert sorted(slots) == [w for w in want if w[0].startswith(prefix)]
        want_loads = [(int(v, 16), int(m, 16)) for v, m in re.findall(
            r"^\s*LOAD\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", _readelf("-l", path), re.M)]
        assert loads == want_loads


@needs_readelf
def test_symbol_bytes_as_the_file_holds_them():
    graph = [p for p in ELF_FILES if p.endswith("libcudnn_graph.so.9")]
    if not graph:
        pytest.skip("no nvidia-cudnn wheel in this venv")
    path = graph[0]
    sym = re.search(r"^\s*\d+: ([0-9a-f]+)\s+(\d+) OBJECT\s+GLOBAL\s+DEFAULT\s+(\d+) cudnn_graph_version\b",
                    _readelf("--dyn-syms", path), re.M)
    value, size, shndx = int(sym.group(1), 16), int(sym.group(2)), int(sym.group(3))
    sec = re.search(rf"^\s*\[\s*{shndx}\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", _readelf("-S", path), re.M)
    addr, off = int(sec.group(1), 16), int(sec.group(2), 16)
    with open(path, "rb") as fh:
        fh.seek(value - addr + off)
        raw = fh.read(size)
    assert read_symbol_bytes(path, "cudnn_graph_version", size) == raw
    assert read_symbol_bytes(path, "cudnn_graph_version", 2) == raw[:2]
    assert read_symbol_bytes(path, "cudnn_graph_versio") is None  # a prefix is not the name
    assert read_symbol_bytes(path, "cudnnGetVersion_no_such_symbol") is None


@pytest.mark.parametrize("data", [b"", b"\x7fEL", b"not an elf at all, just text", b"\x7fELF\x02\x01\x01" + b"\0" * 9,
                                  b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\0" * 10])
def test_not_elf_or_truncated(tmp_path, data):
    p = tmp_path / "libcudnn.so.9"
    p.write_bytes(data)
    with pytest.raises(NotElf):
        read_dynamic(str(p))
    with pytest.raises(NotElf):
        read_symbol_bytes(str(p), "cudnn_graph_version")
