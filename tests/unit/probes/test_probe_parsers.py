"""The pure parsers of probes/ at their edges: glibc's ld.so.cache, a wheel's RECORD, core
metadata (METADATA / PKG-INFO + requires.txt) and the cuDNN pins in it.

Sources: glibc ``sysdeps/generic/dl-cache.h`` (struct cache_file_new: magic "glibc-ld.so.cache"
+ version "1.1", nlibs, len_strings, flags, pad[3], extension_offset, unused[3]; entries of
flags, key, value, osversion, hwcap = 24 bytes; string offsets from the start of the new cache);
the wheel spec (RECORD is CSV: path, "sha256=<urlsafe b64>", size); core metadata 2.x (an RFC 822
header block ending at the first blank line; continuation lines start with whitespace;
``Requires-Dist`` may repeat); setuptools' requires.txt (``[extra:marker]`` sections); PEP 503
names; the torch / tensorflow / jax wheels' Requires-Dist lines quoted in docs/facts.md.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess

import pytest

from cudnn_magic.probes.elf import NotElf, read_dynamic, read_symbol_bytes, symbol_slots
from cudnn_magic.probes.frameworks.common import (
    _is_cudnn_req,
    _pin_specs,
    _pin_version,
    _release,
    read_dist_metadata,
)
from cudnn_magic.probes.loader import read_ldcache
from cudnn_magic.probes.owners import DistRecord, RecordEntry, find_overwritten_wheels, read_record
from cudnn_magic.rules.cudnn_version import CudnnVersion
from helpers.builders import LD_SO_CACHE_MAGIC, ld_so_cache


@pytest.mark.parametrize("prefix", [b"", b"ld.so-1.7.0" + b"\0" * 13])
def test_ldcache_in_cache_order(tmp_path, prefix):
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libcudnn.so.9", "/usr/lib/x86_64-linux-gnu/libcudnn.so.9"),
                              ("libz.so.1", "/lib/x86_64-linux-gnu/libz.so.1"),
                              ("libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9")], prefix=prefix))
    got, note = read_ldcache(str(p))
    assert note is None
    assert got == {"libcudnn.so.9": ["/usr/lib/x86_64-linux-gnu/libcudnn.so.9", "/usr/local/cuda/lib64/libcudnn.so.9"],
                   "libz.so.1": ["/lib/x86_64-linux-gnu/libz.so.1"]}


def test_ldcache_empty_unknown_truncated_unreadable(tmp_path):
    p = tmp_path / "c"
    p.write_bytes(ld_so_cache([]))
    assert read_ldcache(str(p)) == ({}, None)
    p.write_bytes(b"ld.so-1.7.0 and nothing else")
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: unknown format")
    full = ld_so_cache([("libcudnn.so.9", "/x/libcudnn.so.9")])
    p.write_bytes(full[:48 + 10])  # the entry table cut short
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: truncated")
    p.write_bytes(LD_SO_CACHE_MAGIC + b"\1\0")  # nlibs itself cut short
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
import sysconfig  # noqa: E402

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
        r"^([0-9a-f]+)\s+[0-9a-f]+\s+R_X86_64_(?:GLOB_DAT|JUMP_SLOT|64)\s+[0-9a-f]+\s+(\S+)", relocs, re.MULTILINE))
    for prefix in ("", "_", "c", "cudnn", "zz-none"):
        slots, loads = symbol_slots(path, prefix)
        assert sorted(slots) == [w for w in want if w[0].startswith(prefix)]
        want_loads = [(int(v, 16), int(m, 16)) for v, m in re.findall(
            r"^\s*LOAD\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+0x[0-9a-f]+\s+(0x[0-9a-f]+)", _readelf("-l", path), re.MULTILINE)]
        assert loads == want_loads


@needs_readelf
def test_symbol_bytes_as_the_file_holds_them():
    graph = [p for p in ELF_FILES if p.endswith("libcudnn_graph.so.9")]
    if not graph:
        pytest.skip("no nvidia-cudnn wheel in this venv")
    path = graph[0]
    sym = re.search(r"^\s*\d+: ([0-9a-f]+)\s+(\d+) OBJECT\s+GLOBAL\s+DEFAULT\s+(\d+) cudnn_graph_version\b",
                    _readelf("--dyn-syms", path), re.MULTILINE)
    value, size, shndx = int(sym.group(1), 16), int(sym.group(2)), int(sym.group(3))
    sec = re.search(rf"^\s*\[\s*{shndx}\]\s+\S+\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)", _readelf("-S", path), re.MULTILINE)
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


# --------------------------------------------------------------------------------------------------
# ELF classes and byte orders, ldconfig's caches, RECORD quoting, METADATA.
#
# Where the tables above (real little-endian 64-bit libraries against readelf, hand-made
# ld.so.cache files, RECORD lines, METADATA) do not reach: ELF files of the other classes and byte
# orders and the guards against absurd header counts, glibc's ld.so.cache as glibc's own
# ``ldconfig`` writes it, the cache's entry cap and string offsets past its end, RECORD quoting,
# METADATA continuation lines, requires.txt sections and the cuDNN pins. What no test can tell apart
# is in tests/mutation_survivors.md.
# Sources:
# * ELF: the System V gABI ("ELF Header", "Program Header", "Section Header", "Symbol Table",
#   "Dynamic Section"; the 32-bit and 64-bit structures, ELFCLASS32/64 in e_ident[EI_CLASS],
#   ELFDATA2LSB/MSB in e_ident[EI_DATA]; DT_NULL ends the dynamic array; DT_STRTAB is a virtual
#   address; a string table's index 0 is the empty string) and glibc's ``elf.h`` (the numbers);
#   the relocation types are those of the x86_64 and AArch64 psABIs (R_X86_64_64 = 1,
#   GLOB_DAT = 6, JUMP_SLOT = 7, RELATIVE = 8; R_AARCH64_ABS64 = 257, GLOB_DAT = 1025,
#   JUMP_SLOT = 1026, RELATIVE = 1027). The files are built here with ``struct``; binutils'
#   ``readelf`` (an independent reader) is asked to read each kind the same way first.
# * ld.so.cache: glibc ``sysdeps/generic/dl-cache.h`` (struct cache_file_new, 48-byte header,
#   24-byte entries; string offsets count from the start of the new-format header); real caches
#   are written by this machine's ``ldconfig -C`` and read back by ``ldconfig -p -C``.
# * RECORD: PEP 376 / PEP 627 and the wheel spec (a CSV file: path, ``sha256=<urlsafe base64
#   without padding>``, size in bytes; Python's csv quoting doubles a quote inside a quoted field).
# * METADATA: core metadata 2.x (RFC 822 headers ending at the first blank line; continuation
#   lines start with whitespace); setuptools' ``requires.txt`` (``[extra]`` / ``[extra:marker]``
#   / ``[:marker]`` sections); PEP 440 / PEP 508 specifiers; PEP 503 names.
# --------------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# ELF files built per the System V gABI
# --------------------------------------------------------------------------------------------

DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH, DT_DEBUG = 1, 5, 10, 14, 15, 29, 21
PT_NULL, PT_LOAD, PT_DYNAMIC = 0, 1, 2
SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_DYNAMIC, SHT_NOBITS, SHT_DYNSYM = 1, 2, 3, 4, 6, 8, 11
EM_386, EM_X86_64, EM_PPC64, EM_AARCH64 = 3, 62, 21, 183
VBASE = 0x200000  # load address minus file offset of the one PT_LOAD (not 0, so the translation shows)
SYM_VALUE = b"\x15\x27\x00\x00"  # 10005 as a little-endian int, as libcudnn_graph's cudnn_graph_version holds 9.x


def _align(n, a=8):
    return (n + a - 1) // a * a


class Elf:
    """A shared object built with ``struct``; ``sym`` / ``sec`` / ``dyn`` are the parts a test
    may change before :meth:`bytes` lays them out: ``dyn`` [(tag, value or string)], where a str
    value is put in .dynstr and replaced by its index; ``syms`` [(name, kind)] with kind "data"
    (4 bytes in .data), "bss", "undef" or "abs"; ``relocs`` [(symbol name, type)]."""

    def __init__(self, bits=64, order="<", machine=None, needed=("libc.so.6",), soname="libx.so.1", rpath=None,
                 runpath=None, syms=(("cudnn_graph_version", "data"),), relocs=()):
        self.bits, self.order = bits, order
        self.machine = machine if machine is not None else (EM_X86_64 if bits == 64 else EM_386)
        self.dyn = [(DT_NEEDED, n) for n in needed]
        self.dyn += [(DT_SONAME, soname)] if soname is not None else []
        self.dyn += [(DT_RPATH, rpath)] if rpath is not None else []
        self.dyn += [(DT_RUNPATH, runpath)] if runpath is not None else []
        self.syms, self.relocs = list(syms), list(relocs)
        self.strsz_delta = 0          # DT_STRSZ = real size + this
        self.dyn_tail = b""           # raw bytes after the dynamic array, inside PT_DYNAMIC
        self.null = True              # end the dynamic array with DT_NULL
        self.after_null = []          # entries after DT_NULL
        self.extra_phdrs = 0          # PT_NULL program headers appended
        self.ph_pad = self.sh_pad = 0  # e_phentsize / e_shentsize beyond the structure's size
        self.loads = None             # None: one PT_LOAD over .dynstr..end; else callable(layout) -> [(vaddr, off, filesz)]
        self.no_dynamic = False
        self.sym_overrides = {}       # name -> dict(shndx=, value=)
        self.dynsym_link = None       # .dynsym's sh_link (default: .dynstr)
        self.dynsym_entsize = None
        self.dynsym_size_extra = 0
        self.rela_link = None
        self.rela_tail = b""
        self.strtab_tail = b""        # bytes after the last string of .dynstr (inside the file)
        self.strtab_value = None      # DT_STRTAB (default: the address of .dynstr)
        self.dynsym_type = SHT_DYNSYM
        self.dynstr_size_delta = 0    # .dynstr's sh_size = real size + this
        self.extra_dynsyms = 0        # empty symbols put before the named ones
        self.dynstr_pad = b""         # bytes put in .dynstr before the symbols' names
        self.vbase = VBASE            # load address minus file offset
        self.bad_rela_first = False   # section 6 a RELA linked to .dynstr, the real one appended as section 8
        self.trailer = b""

    @property
    def is64(self):
        return self.bits == 64

    def field(self, name):
        """(offset, struct code) of an ELF header field (gABI "ELF Header")."""
        return {64: {"phoff": (32, "Q"), "shoff": (40, "Q"), "phentsize": (54, "H"), "phnum": (56, "H"),
                     "shentsize": (58, "H"), "shnum": (60, "H")},
                32: {"phoff": (28, "I"), "shoff": (32, "I"), "phentsize": (42, "H"), "phnum": (44, "H"),
                     "shentsize": (46, "H"), "shnum": (48, "H")}}[self.bits][name]

    def bytes(self, **header):
        e, is64 = self.order, self.is64
        ehsize, phsz, shsz = (64, 56, 64) if is64 else (52, 32, 40)
        symsz, dynfmt = (24, "qQ") if is64 else (16, "iI")
        dynstr = bytearray(b"\0")

        def add(s):
            if isinstance(s, int):
                return s
            raw = s if isinstance(s, bytes) else s.encode()
            dynstr.extend(raw + b"\0")
            return len(dynstr) - len(raw) - 1

        dyn = [(t, add(v)) for t, v in self.dyn]
        after = [(t, add(v)) for t, v in self.after_null]
        dynstr += self.dynstr_pad
        sym_names = [add(n) for n, _ in self.syms]
        dynstr += self.strtab_tail
        L = {"dynstr_off": ehsize}
        dynsym_off = _align(ehsize + len(dynstr))
        nsyms = 1 + self.extra_dynsyms + len(self.syms)
        dynamic_off = _align(dynsym_off + symsz * nsyms)
        VB = self.vbase
        strtab = ehsize + VB if self.strtab_value is None else self.strtab_value
        full = [(DT_STRTAB, strtab), (DT_STRSZ, len(dynstr) - len(self.strtab_tail) + self.strsz_delta), *dyn]
        full += [(0, 0)] if self.null else []
        full += after
        dynamic = b"".join(struct.pack(e + dynfmt, t, v) for t, v in full) + self.dyn_tail
        data_off = _align(dynamic_off + len(dynamic))
        ndata = sum(1 for _, k in self.syms if k == "data")
        rela_off = _align(data_off + 4 * ndata)
        rela_size = 24 * len(self.relocs) + len(self.rela_tail)
        shstr_off = rela_off + rela_size
        shstr = b"\0.dynstr\0.dynsym\0.dynamic\0.data\0.bss\0.rela.dyn\0.shstrtab\0"
        end = shstr_off + len(shstr)
        bss_addr = VB + _align(end) + 0x1000
        syms, dpos, bpos = [b"\0" * symsz * (1 + self.extra_dynsyms)], data_off, bss_addr
        for (name, kind), noff in zip(self.syms, sym_names):
            shndx, value, size, info = {"data": (1, dpos + VB, 4, 0x11), "bss": (5, bpos, 4, 0x11),
                                        "undef": (0, 0, 0, 0x12), "abs": (0xFFF1, 0x1234, 4, 0x11)}[kind]
            dpos += 4 if kind == "data" else 0
            bpos += 4 if kind == "bss" else 0
            o = self.sym_overrides.get(name, {})
            shndx, value, noff = o.get("shndx", shndx), o.get("value", value), o.get("name", noff)
            syms.append(struct.pack(e + "IBBHQQ", noff, info, 0, shndx, value, size) if is64
                        else struct.pack(e + "IIIBBH", noff, value, size, info, 0, shndx))
        index = {n: i + 1 + self.extra_dynsyms for i, (n, _) in enumerate(self.syms)}
        L["slots"] = []
        rela = b""
        for k, (name, rtype) in enumerate(self.relocs):
            slot = VB + 0x3000 + 8 * k
            L["slots"].append((name, slot))
            sym = name if isinstance(name, int) else index.get(name, 0x7FFF)  # an int: a raw symbol index
            rela += struct.pack(e + "QQq", slot, (sym << 32) | rtype, 0)
        rela += self.rela_tail
        L.update(data_off=data_off, dynamic_off=dynamic_off, rela_off=rela_off)
        loads = [(ehsize + VB, ehsize, end - ehsize)] if self.loads is None else self.loads(L)
        L["loads"] = [(v, f + 0x2000) for v, _o, f in loads]

        def ph(t, off, vaddr, filesz, memsz):
            raw = (struct.pack(e + "IIQQQQQQ", t, 4, off, vaddr, vaddr, filesz, memsz, 0x1000) if is64
                   else struct.pack(e + "IIIIIIII", t, off, vaddr, vaddr, filesz, memsz, 4, 0x1000))
            return raw + b"\0" * self.ph_pad

        phs = [ph(PT_LOAD, o, v, f, f + 0x2000) for v, o, f in loads]
        if not self.no_dynamic:
            phs.append(ph(PT_DYNAMIC, dynamic_off, dynamic_off + VB, len(dynamic), len(dynamic)))
        phs += [ph(PT_NULL, 0, 0, 0, 0)] * self.extra_phdrs

        def sh(name, t, off, size, link=0, info=0, entsize=0, addr=None):
            addr = off + VB if addr is None else addr
            raw = (struct.pack(e + "IIQQQQIIQQ", name, t, 2, addr, off, size, link, info, 8, entsize) if is64
                   else struct.pack(e + "IIIIIIIIII", name, t, 2, addr, off, size, link, info, 4, entsize))
            return raw + b"\0" * self.sh_pad

        # sections: 0 null, 1 .data, 2 .dynsym, 3 .dynstr, 4 .dynamic, 5 .bss, 6 .rela.dyn, 7 .shstrtab
        # (.dynsym's sh_info, 1, is not its sh_link, 3; the data symbols live in section 1)
        shs = [b"\0" * (shsz + self.sh_pad),
               sh(26, SHT_PROGBITS, data_off, 4 * ndata),
               sh(9, self.dynsym_type, dynsym_off, symsz * nsyms + self.dynsym_size_extra,
                  link=3 if self.dynsym_link is None else self.dynsym_link, info=1,
                  entsize=symsz if self.dynsym_entsize is None else self.dynsym_entsize),
               sh(1, SHT_STRTAB, ehsize, len(dynstr) + self.dynstr_size_delta),
               sh(17, SHT_DYNAMIC, dynamic_off, len(dynamic), link=3, entsize=16 if is64 else 8),
               sh(32, SHT_NOBITS, _align(end), 0x100, addr=bss_addr),
               sh(37, SHT_RELA if is64 else SHT_PROGBITS, rela_off, rela_size,
                  link=2 if self.rela_link is None else self.rela_link, entsize=24 if is64 else 0),
               sh(47, SHT_STRTAB, shstr_off, len(shstr), addr=0)]
        if self.bad_rela_first:
            shs.append(shs[6])
            shs[6] = sh(37, SHT_RELA, rela_off, rela_size, link=3, entsize=24)
        phoff = _align(end)
        shoff = _align(phoff + len(b"".join(phs)))
        hdr = dict(phoff=phoff, shoff=shoff, phentsize=phsz + self.ph_pad, phnum=len(phs),
                   shentsize=shsz + self.sh_pad, shnum=len(shs))
        hdr.update(header)
        ehdr = (struct.pack(e + "HHIQQQIHHHHHH", 3, self.machine, 1, 0, hdr["phoff"], hdr["shoff"], 0, ehsize,
                            hdr["phentsize"], hdr["phnum"], hdr["shentsize"], hdr["shnum"], 7) if is64
                else struct.pack(e + "HHIIIIIHHHHHH", 3, self.machine, 1, 0, hdr["phoff"], hdr["shoff"], 0, ehsize,
                                 hdr["phentsize"], hdr["phnum"], hdr["shentsize"], hdr["shnum"], 7))
        ident = b"\x7fELF" + bytes([2 if is64 else 1, 1 if e == "<" else 2, 1]) + b"\0" * 9
        out = bytearray(shoff + len(shs[0]) * len(shs))
        for off, blob in ((0, ident + ehdr), (ehsize, dynstr), (dynsym_off, b"".join(syms)), (dynamic_off, dynamic),
                          (data_off, SYM_VALUE * ndata), (rela_off, rela), (shstr_off, shstr), (phoff, b"".join(phs)),
                          (shoff, b"".join(shs))):
            out[off:off + len(blob)] = blob
        self.layout = L
        return bytes(out) + self.trailer

    def write(self, tmp_path, name="libx.so.1", **header):
        p = tmp_path / name
        p.write_bytes(self.bytes(**header))
        return str(p)


KINDS = [(64, "<"), (64, ">"), (32, "<"), (32, ">")]
KIND_IDS = ["ELF64-LSB", "ELF64-MSB", "ELF32-LSB", "ELF32-MSB"]
needs_binutils_readelf = pytest.mark.skipif(shutil.which("readelf") is None, reason="binutils' readelf is not installed")


@needs_binutils_readelf
@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_readelf_reads_the_built_files_as_the_gabi_says(tmp_path, bits, order):
    """The builder itself, checked by an independent reader (so the tables below test the
    parser, not a private idea of ELF)."""
    path = Elf(bits, order, needed=("libcudnn_graph.so.9", "libc.so.6"), soname="libcudnn.so.9",
               rpath="$ORIGIN:/opt/a", runpath="/b::/c", syms=(("cudnn_graph_version", "data"), ("cudnnCreate", "undef")),
               relocs=[("cudnnCreate", 7)] if bits == 64 else []).write(tmp_path)
    out = subprocess.run(["readelf", "-W", "-h", "-d", "--dyn-syms", path], capture_output=True, text=True).stdout
    assert ("ELF64" if bits == 64 else "ELF32") in out
    assert ("little endian" if order == "<" else "big endian") in out
    assert re.findall(r"\(NEEDED\)\s+Shared library: \[(.*?)\]", out) == ["libcudnn_graph.so.9", "libc.so.6"]
    assert re.findall(r"\(SONAME\)\s+Library soname: \[(.*?)\]", out) == ["libcudnn.so.9"]
    assert re.findall(r"\(RPATH\)\s+Library rpath: \[(.*?)\]", out) == ["$ORIGIN:/opt/a"]
    assert re.findall(r"\(RUNPATH\)\s+Library runpath: \[(.*?)\]", out) == ["/b::/c"]
    assert re.search(r"OBJECT\s+GLOBAL\s+DEFAULT\s+1 cudnn_graph_version", out)
    assert re.search(r"FUNC\s+GLOBAL\s+DEFAULT\s+UND cudnnCreate", out)
    if bits == 64:
        rel = subprocess.run(["readelf", "-W", "-r", path], capture_output=True, text=True).stdout
        assert re.search(r"^0*203000\s+\S+\s+R_X86_64_JUMP_SLOT\s+0+ cudnnCreate", rel, re.MULTILINE)


# --- read_dynamic: every class and byte order (gABI e_ident[EI_CLASS], e_ident[EI_DATA])


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_dynamic_section_of_each_class_and_byte_order(tmp_path, bits, order):
    path = Elf(bits, order, needed=("libcudnn_graph.so.9", "libc.so.6"), soname="libcudnn.so.9",
               rpath="$ORIGIN:/opt/a", runpath="/b::/c").write(tmp_path)
    got = read_dynamic(path)
    assert got.needed == ("libcudnn_graph.so.9", "libc.so.6")
    assert got.soname == "libcudnn.so.9"
    assert got.rpath == ("$ORIGIN", "/opt/a")
    assert got.runpath == ("/b", "/c")  # the empty entry between "::" is dropped
    assert got.machine == (EM_X86_64 if bits == 64 else EM_386)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_no_soname_or_an_empty_one_is_none(tmp_path, bits, order):
    assert read_dynamic(Elf(bits, order, soname=None).write(tmp_path, "a.so")).soname is None
    assert read_dynamic(Elf(bits, order, soname="").write(tmp_path, "b.so")).soname is None


# Program-header guards: e_phentsize below the structure's size, no program header at all, more
# than 4096 of them (the parser's bound), a table cut short by the end of the file.
@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("extra, header, ok", [
    (0, {}, True),
    (4096 - 2, {}, True),           # PT_LOAD + PT_DYNAMIC + 4094 PT_NULL: 4096 headers, the bound itself
    (4096 - 1, {}, False),          # 4097: refused
    (0, {"phnum": 0}, False),
    (0, {"phoff": 1 << 24}, False),  # the table lies past the end of the file
], ids=["normal", "4096-headers", "4097-headers", "no-headers", "table-past-eof"])
def test_program_header_counts(tmp_path, bits, order, extra, header, ok):
    elf = Elf(bits, order, needed=("libcudnn.so.9",))
    elf.extra_phdrs = extra
    path = elf.write(tmp_path, **header)
    if ok:
        assert read_dynamic(path).needed == ("libcudnn.so.9",)
    else:
        with pytest.raises(NotElf):
            read_dynamic(path)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("pad", [-1, 0, 8])
def test_program_header_entry_size(tmp_path, bits, order, pad):
    """e_phentsize may exceed the structure (entries then lie that far apart); below it, the file
    is refused."""
    elf = Elf(bits, order, needed=("libcudnn.so.9",))
    if pad >= 0:
        elf.ph_pad = pad
        assert read_dynamic(elf.write(tmp_path)).needed == ("libcudnn.so.9",)
    else:
        size = 56 if bits == 64 else 32
        with pytest.raises(NotElf):
            read_dynamic(elf.write(tmp_path, phentsize=size - 1))


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_one_program_header_no_pt_load_strtab_is_a_file_offset(tmp_path, bits, order):
    """One program header (PT_DYNAMIC alone) is enough; with no PT_LOAD to translate DT_STRTAB
    through, its value is taken as the file offset."""
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libcudnn_ops.so.9")
    elf.loads = lambda L: []
    elf.strtab_value = 64 if bits == 64 else 52  # .dynstr follows the ELF header
    got = read_dynamic(elf.write(tmp_path))
    assert (got.needed, got.soname) == (("libcudnn.so.9",), "libcudnn_ops.so.9")


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_strtab_translated_through_the_load_that_holds_it(tmp_path, bits, order):
    """DT_STRTAB is a virtual address (gABI): it is mapped back through the PT_LOAD whose
    [p_vaddr, p_vaddr + p_filesz) holds it. A segment ending exactly at it does not; the one
    starting exactly at it does."""
    def loads(L):
        start = L["dynstr_off"]
        return [(VBASE + start - 0x100, 0x40, 0x100),   # ends exactly where .dynstr's address starts
                (VBASE + start, start, 0x400)]         # starts exactly there
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libcudnn.so.9")
    elf.loads = loads
    got = read_dynamic(elf.write(tmp_path))
    assert (got.needed, got.soname) == (("libcudnn.so.9",), "libcudnn.so.9")


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_dynamic_array_ends_at_dt_null(tmp_path, bits, order):
    elf = Elf(bits, order, needed=("libcudnn.so.9",))
    elf.after_null = [(DT_NEEDED, "libafter.so.1")]
    assert read_dynamic(elf.write(tmp_path)).needed == ("libcudnn.so.9",)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("partial", [False, True], ids=["whole-entries", "partial-entry-after"])
def test_dynamic_array_without_dt_null(tmp_path, bits, order, partial):
    """No DT_NULL: every whole entry of the segment counts, the last one too; bytes that do not
    make a whole entry are left out."""
    elf = Elf(bits, order, needed=(), soname=None)
    elf.null = False
    elf.after_null = [(DT_NEEDED, "liblast.so.1")]
    elf.dyn_tail = b"\x01" * ((16 if bits == 64 else 8) - 1) if partial else b""
    assert read_dynamic(elf.write(tmp_path)).needed == ("liblast.so.1",)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("fillers, seen", [(4096 - 3, True), (4096 - 2, False)], ids=["last-read", "one-past"])
def test_at_most_4096_dynamic_entries_are_read(tmp_path, bits, order, fillers, seen):
    """The parser's bound: 4096 entries. After DT_STRTAB, DT_STRSZ and ``fillers`` DT_DEBUG
    entries, the NEEDED is entry 4096 (read) or 4097 (not read)."""
    elf = Elf(bits, order, needed=(), soname=None)
    elf.dyn = [(DT_DEBUG, 0)] * fillers + [(DT_NEEDED, "libcudnn.so.9")]
    assert read_dynamic(elf.write(tmp_path)).needed == (("libcudnn.so.9",) if seen else ())


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_no_dynamic_segment_or_no_string_table(tmp_path, bits, order):
    elf = Elf(bits, order)
    elf.no_dynamic = True
    with pytest.raises(NotElf):
        read_dynamic(elf.write(tmp_path, "a.so"))
    elf = Elf(bits, order)
    raw = bytearray(elf.bytes())
    fmt = order + ("qQ" if bits == 64 else "iI")
    tag, val = struct.unpack_from(fmt, raw, elf.layout["dynamic_off"])
    assert tag == DT_STRTAB
    struct.pack_into(fmt, raw, elf.layout["dynamic_off"], DT_DEBUG, val)
    (tmp_path / "b.so").write_bytes(bytes(raw))
    with pytest.raises(NotElf):
        read_dynamic(str(tmp_path / "b.so"))


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("length", [4095, 4096, 4097, 9000, (1 << 16) - 1, 1 << 16])
def test_long_strings_are_read_whole_up_to_64_kib(tmp_path, bits, order, length):
    """A long RPATH (conda, Bazel) is read in 4 KiB steps until its NUL, whole up to 64 KiB."""
    rpath = ("/p" * length)[:length]
    elf = Elf(bits, order, rpath=rpath, needed=("libz.so.1",))
    got = read_dynamic(elf.write(tmp_path))
    assert got.rpath == (rpath,) and got.needed == ("libz.so.1",)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_a_string_longer_than_64_kib_is_cut_there(tmp_path, bits, order):
    rpath = "/q" * 40000
    got = read_dynamic(Elf(bits, order, rpath=rpath).write(tmp_path))
    assert got.rpath == (rpath[: 1 << 16],)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_strings_end_at_dt_strsz_and_at_the_end_of_the_file(tmp_path, bits, order):
    """DT_STRSZ bounds the table: an index at or past it names nothing; a string running past it
    is cut there. A string running to the end of the file (no NUL) is cut there, without hanging."""
    elf = Elf(bits, order, needed=("libfirst.so.1",), soname="libcudnn.so.9", syms=())
    elf.strsz_delta = -3  # the table ends inside its last string, "libcudnn.so.9": ".9" and the NUL are outside
    got = read_dynamic(elf.write(tmp_path, "a.so"))
    assert got.soname == "libcudnn.so" and got.needed == ("libfirst.so.1",)
    elf = Elf(bits, order, needed=("libfirst.so.1",), soname="libcudnn.so.9", syms=())
    elf.strsz_delta = -len("libcudnn.so.9") - 1  # the SONAME's index is exactly DT_STRSZ
    assert read_dynamic(elf.write(tmp_path, "b.so")).soname is None
    # a string that runs to the end of the file: DT_STRSZ claims far more, the file has no NUL left
    elf = Elf(bits, order, needed=(), soname=None)
    elf.dyn = [(DT_NEEDED, 0)]
    size = len(elf.bytes())
    elf.dyn = [(DT_NEEDED, size - elf.layout["dynstr_off"])]
    elf.strsz_delta = 1 << 20
    elf.trailer = b"libtail.so.1"
    assert read_dynamic(elf.write(tmp_path, "c.so")).needed == ("libtail.so.1",)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_an_empty_string_is_empty_not_the_next_one(tmp_path, bits, order):
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libnext.so.1", rpath="")
    elf.dyn = [(DT_RPATH, ""), (DT_SONAME, "libnext.so.1"), (DT_NEEDED, "libcudnn.so.9")]
    got = read_dynamic(elf.write(tmp_path))
    assert got.rpath == () and got.soname == "libnext.so.1"


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_a_name_that_is_not_utf8_is_replaced_not_raised(tmp_path, bits, order):
    got = read_dynamic(Elf(bits, order, needed=(b"lib\xffx.so.1",)).write(tmp_path))
    assert got.needed == ("lib\ufffdx.so.1",)


# --- read_symbol_bytes: a symbol's initialised bytes (gABI "Symbol Table": st_shndx, st_value
# is a virtual address inside section st_shndx; SHN_UNDEF = 0; SHN_ABS = 0xfff1; SHT_NOBITS
# occupies no file space)

SYMS = (("cudnn_graph_version", "data"), ("cudnn_graph_version_x", "data"), ("cudnn_zero", "bss"),
        ("cudnnCreate", "undef"), ("cudnn_abs", "abs"))


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("name, size, want", [
    ("cudnn_graph_version", 4, SYM_VALUE),
    ("cudnn_graph_version", 2, SYM_VALUE[:2]),
    ("cudnn_graph_version_x", 4, SYM_VALUE),       # the second .data symbol, 4 bytes further
    ("cudnn_graph_versio", 4, None),               # a prefix of a name is not the name
    ("cudnn_zero", 4, None),                       # in .bss (SHT_NOBITS): no bytes in the file
    ("cudnnCreate", 4, None),                      # undefined here (SHN_UNDEF)
    ("cudnn_abs", 4, None),                        # SHN_ABS: no section, no file data
    ("cudnn_no_such", 4, None),
    ("cudnn_graph_version", 1 << 20, None),        # more bytes than the file has after it
])
def test_symbol_bytes_of_each_class_and_byte_order(tmp_path, bits, order, name, size, want):
    path = Elf(bits, order, syms=SYMS).write(tmp_path)
    assert read_symbol_bytes(path, name, size) == want


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("delta, found", [(0, True), (3, True), (4, False), (-1, False)],
                         ids=["first-byte", "last-byte", "one-past", "one-before"])
def test_symbol_value_must_lie_inside_its_section(tmp_path, bits, order, delta, found):
    """[sh_addr, sh_addr + sh_size) of the symbol's section: .data here is 4 bytes."""
    elf = Elf(bits, order)
    elf.bytes()
    elf.sym_overrides["cudnn_graph_version"] = {"value": elf.layout["data_off"] + VBASE + delta}  # .data's sh_addr + delta
    path = elf.write(tmp_path)
    got = read_symbol_bytes(path, "cudnn_graph_version", 1)
    assert got == (SYM_VALUE[delta:delta + 1] if found else None)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("shndx_of, found", [(lambda n: 1, True), (lambda n: n - 1, False), (lambda n: n, False),
                                             (lambda n: n + 1, False)], ids=["data", "last-section", "count", "count+1"])
def test_symbol_section_index_past_the_table_is_no_data(tmp_path, bits, order, shndx_of, found):
    elf = Elf(bits, order)
    elf.sym_overrides["cudnn_graph_version"] = {"shndx": shndx_of(8)}  # 8 section headers
    assert read_symbol_bytes(elf.write(tmp_path), "cudnn_graph_version") == (SYM_VALUE if found else None)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("header, pad, ok", [
    ({}, 0, True), ({}, 8, True),                 # e_shentsize may exceed the structure
    ({"shoff": 0}, 0, False), ({"shnum": 0}, 0, False),
    ("entsize-1", 0, False),                      # e_shentsize below the structure's size
    ({"shoff": 1 << 24}, 0, False),               # the table lies past the end of the file
])
def test_section_header_guards(tmp_path, bits, order, header, pad, ok):
    elf = Elf(bits, order)
    elf.sh_pad = pad
    if header == "entsize-1":
        header = {"shentsize": (64 if bits == 64 else 40) - 1}
    path = elf.write(tmp_path, **header)
    if ok:
        assert read_symbol_bytes(path, "cudnn_graph_version") == SYM_VALUE
    else:
        with pytest.raises(NotElf):
            read_symbol_bytes(path, "cudnn_graph_version")


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_dynsym_without_a_usable_string_table_or_none_at_all(tmp_path, bits, order):
    elf = Elf(bits, order)
    elf.dynsym_link = 8  # sh_link one past the 8 section headers
    assert read_symbol_bytes(elf.write(tmp_path, "a.so"), "cudnn_graph_version") is None
    elf = Elf(bits, order)
    elf.dynsym_link = 7  # the last header (.shstrtab): a string table without this name
    assert read_symbol_bytes(elf.write(tmp_path, "b.so"), "cudnn_graph_version") is None
    elf = Elf(bits, order)
    elf.dynsym_type = SHT_SYMTAB  # only a static symbol table: not what the loader exports
    assert read_symbol_bytes(elf.write(tmp_path, "c.so"), "cudnn_graph_version") is None


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_dynsym_entry_size_zero_means_the_structure_size(tmp_path, bits, order):
    elf = Elf(bits, order, syms=SYMS)
    elf.dynsym_entsize = 0
    assert read_symbol_bytes(elf.write(tmp_path), "cudnn_graph_version_x") == SYM_VALUE


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_dynsym_claiming_more_than_the_file_holds(tmp_path, bits, order):
    """sh_size past the end of the file: the symbols that are there are read, then it stops."""
    elf = Elf(bits, order, syms=SYMS)
    elf.dynsym_size_extra = 1 << 24
    path = elf.write(tmp_path)
    assert read_symbol_bytes(path, "cudnn_graph_version") == SYM_VALUE
    assert read_symbol_bytes(path, "cudnn_not_there") is None


@pytest.mark.parametrize("before, found", [((1 << 20) - 2, True), ((1 << 20) - 1, False)], ids=["last-read", "one-past"])
def test_at_most_2_to_the_20_dynamic_symbols_are_read(tmp_path, before, found):
    """The parser's bound: 1 << 20 symbols (entry 0 the null symbol, then ``before`` empty ones)."""
    elf = Elf(64, "<", syms=(("cudnn_graph_version", "data"),))
    elf.extra_dynsyms = before
    assert read_symbol_bytes(elf.write(tmp_path), "cudnn_graph_version") == (SYM_VALUE if found else None)


# --- symbol_slots: GOT slots of imported symbols (64-bit little-endian x86_64 / aarch64 only)

IMPORTS = (("cudnn_graph_version", "data"), ("cudnnCreate", "undef"), ("cudnnDestroy", "undef"),
           ("cudnnGetVersion", "undef"), ("cudaMalloc", "undef"), ("cudnnBackendCreate", "undef"))


@pytest.mark.parametrize("machine, relocs, want", [
    # per the x86_64 psABI: R_X86_64_64 = 1, GLOB_DAT = 6, JUMP_SLOT = 7 fill a slot with a symbol's
    # address; RELATIVE = 8 and COPY = 5 do not
    (EM_X86_64, [("cudnnCreate", 7), ("cudnnDestroy", 6), ("cudnnGetVersion", 1), ("cudnnBackendCreate", 8),
                 ("cudnn_graph_version", 5), ("cudaMalloc", 7)], ["cudnnCreate", "cudnnDestroy", "cudnnGetVersion"]),
    # per the AArch64 psABI: ABS64 = 257, GLOB_DAT = 1025, JUMP_SLOT = 1026; RELATIVE = 1027, COPY = 1024
    (EM_AARCH64, [("cudnnCreate", 1026), ("cudnnDestroy", 1025), ("cudnnGetVersion", 257),
                  ("cudnnBackendCreate", 1027), ("cudnn_graph_version", 1024), ("cudaMalloc", 1026)],
     ["cudnnCreate", "cudnnDestroy", "cudnnGetVersion"]),
    # the same numbers on x86_64 name other relocations (257 and up are not x86_64 types)
    (EM_X86_64, [("cudnnCreate", 1026), ("cudnnDestroy", 1025), ("cudnnGetVersion", 257)], []),
    (EM_AARCH64, [("cudnnCreate", 7), ("cudnnDestroy", 6), ("cudnnGetVersion", 1)], []),
    (EM_PPC64, [("cudnnCreate", 7), ("cudnnDestroy", 21)], None),  # a machine it does not know: nothing
], ids=["x86_64", "aarch64", "aarch64-types-on-x86_64", "x86_64-types-on-aarch64", "ppc64"])
def test_import_slots_by_machine_and_relocation_type(tmp_path, machine, relocs, want):
    elf = Elf(64, "<", machine=machine, syms=IMPORTS, relocs=relocs)
    path = elf.write(tmp_path)
    slots, loads = symbol_slots(path, "cudnn")
    if want is None:
        assert (slots, loads) == ([], [])
        return
    assert slots == [(n, off) for n, off in elf.layout["slots"] if n in want]
    assert loads == elf.layout["loads"]


@pytest.mark.parametrize("bits, order", KINDS[1:], ids=KIND_IDS[1:])
def test_import_slots_only_of_64_bit_little_endian_files(tmp_path, bits, order):
    elf = Elf(bits, order, syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    assert symbol_slots(elf.write(tmp_path), "cudnn") == ([], [])


@pytest.mark.parametrize("prefix, names", [("cudnn", ["cudnnCreate", "cudnnDestroy"]), ("cudnnD", ["cudnnDestroy"]),
                                           ("", ["cudnnCreate", "cudnnDestroy", "cudaMalloc"]), ("cudnnCreateX", [])])
def test_import_slots_by_name_prefix(tmp_path, prefix, names):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7), ("cudnnDestroy", 6), ("cudaMalloc", 7)])
    slots, _ = symbol_slots(elf.write(tmp_path), prefix)
    assert slots == [(n, off) for n, off in elf.layout["slots"] if n in names]


@pytest.mark.parametrize("extra, header, ok", [
    (0, {}, True), (8, {}, True),
    (4096 - 2, {}, True), (4096 - 1, {}, False),     # 4096 program headers read, 4097 refused
    (0, {"shoff": 0}, False), (0, {"shnum": 0}, False),
], ids=["normal", "8-null-headers", "4096-headers", "4097-headers", "no-sections", "zero-sections"])
def test_import_slot_header_guards(tmp_path, extra, header, ok):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    elf.extra_phdrs = extra
    got = symbol_slots(elf.write(tmp_path, **header), "cudnn")
    assert got == (([("cudnnCreate", elf.layout["slots"][0][1])], elf.layout["loads"]) if ok else ([], []))


def test_import_slots_with_padded_header_entries(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7), ("cudnnDestroy", 6)])
    elf.ph_pad = elf.sh_pad = 8
    elf.extra_phdrs = 2
    slots, loads = symbol_slots(elf.write(tmp_path), "cudnn")
    assert slots == elf.layout["slots"] and loads == elf.layout["loads"]


@pytest.mark.parametrize("change", ["rela-link-past-table", "rela-link-not-dynsym", "dynsym-link-past-table"])
def test_relocation_sections_that_do_not_lead_to_names_are_skipped(tmp_path, change):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    if change == "rela-link-past-table":
        elf.rela_link = 8
    elif change == "rela-link-not-dynsym":
        elf.rela_link = 3  # .dynstr
    else:
        elf.dynsym_link = 8
    assert symbol_slots(elf.write(tmp_path), "cudnn") == ([], elf.layout["loads"])


def test_relocations_naming_a_symbol_past_the_table_or_a_partial_entry_are_skipped(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7), ("not-in-dynsym", 7), ("cudnnDestroy", 6)])
    elf.rela_tail = b"\x07" * 23  # not a whole Elf64_Rela (24 bytes)
    slots, _ = symbol_slots(elf.write(tmp_path), "cudnn")
    assert [n for n, _ in slots] == ["cudnnCreate", "cudnnDestroy"]


def test_a_relocation_section_not_leading_to_names_does_not_hide_the_next(tmp_path):
    """Two SHT_RELA sections (as .rela.dyn and .rela.plt): the first, linked to .dynstr instead
    of a symbol table, is skipped and the second is still read."""
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    elf.bad_rela_first = True
    slots, _ = symbol_slots(elf.write(tmp_path), "cudnn")
    assert slots == elf.layout["slots"]


def test_x32_files_are_not_read_for_import_slots(tmp_path):
    """The x32 ABI: ELFCLASS32 with e_machine EM_X86_64; symbol_slots reads 64-bit files only."""
    elf = Elf(32, "<", machine=EM_X86_64, syms=IMPORTS)
    assert symbol_slots(elf.write(tmp_path), "cudnn") == ([], [])


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("table", ["program", "section"])
def test_a_file_cut_inside_a_header_table(tmp_path, bits, order, table):
    """The file ends 1 byte before the end of its program-header (or section-header) table."""
    elf = Elf(bits, order, syms=IMPORTS, relocs=[("cudnnCreate", 7)] if bits == 64 else [])
    raw = elf.bytes()
    off, code = elf.field("phoff" if table == "program" else "shoff")
    start = struct.unpack_from(order + code, raw, off)[0]
    n = struct.unpack_from(order + "H", raw, elf.field("phnum" if table == "program" else "shnum")[0])[0]
    size = struct.unpack_from(order + "H", raw, elf.field("phentsize" if table == "program" else "shentsize")[0])[0]
    p = tmp_path / "cut.so"
    p.write_bytes(raw[:start + n * size - 1])
    message = f"^truncated {table} headers$"
    if table == "program":
        with pytest.raises(NotElf, match=message):
            read_dynamic(str(p))
    else:
        with pytest.raises(NotElf, match=message):
            read_symbol_bytes(str(p), "cudnn_graph_version")
    if bits == 64 and order == "<":
        with pytest.raises(NotElf, match=message):
            symbol_slots(str(p), "cudnn")


def test_an_import_name_cut_by_the_end_of_its_string_table(tmp_path):
    """.dynstr's sh_size ends inside the last name (no NUL): the name is what the table holds."""
    elf = Elf(64, "<", syms=(("cudnnCreate", "undef"), ("cudnnDestroyTensor", "undef")),
              relocs=[("cudnnCreate", 7), ("cudnnDestroyTensor", 7)])
    elf.dynstr_size_delta = -len("Tensor") - 1
    slots, _ = symbol_slots(elf.write(tmp_path), "cudnn")
    assert [n for n, _ in slots] == ["cudnnCreate", "cudnnDestroy"]


def test_import_slots_truncated_section_table_or_not_elf(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    with pytest.raises(NotElf):
        symbol_slots(elf.write(tmp_path, "a.so", shoff=1 << 24), "cudnn")
    (tmp_path / "b.so").write_bytes(b"\x7fEL" + b"\0" * 100)
    with pytest.raises(NotElf):
        symbol_slots(str(tmp_path / "b.so"), "cudnn")
    (tmp_path / "c.so").write_bytes(elf.bytes()[:40])
    with pytest.raises(NotElf):
        symbol_slots(str(tmp_path / "c.so"), "cudnn")


# --- what the headers' fields are: unsigned (gABI: Elf32_Addr/Off/Word and Elf64_Addr/Off/Xword
# are unsigned), and the sentences a refused file is reported with (probe_installed shows them:
# "not a usable shared library: <reason>")

HIGH = {64: 1 << 63, 32: 0x80000000}  # the first address whose top bit is set


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_addresses_with_the_top_bit_set_are_addresses(tmp_path, bits, order):
    """A library linked at or above 2 GiB (32-bit; prelinked i386 libraries lived there) or
    2^63 (64-bit): its DT_STRTAB, symbol values and section addresses are read as unsigned."""
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libcudnn_ops.so.9", syms=SYMS)
    elf.vbase = HIGH[bits]
    path = elf.write(tmp_path)
    got = read_dynamic(path)
    assert (got.needed, got.soname) == (("libcudnn.so.9",), "libcudnn_ops.so.9")
    assert read_symbol_bytes(path, "cudnn_graph_version_x") == SYM_VALUE


def test_import_slots_and_load_ranges_with_the_top_bit_set(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7), ("cudnnDestroy", 6)])
    elf.vbase = HIGH[64]
    slots, loads = symbol_slots(elf.write(tmp_path), "cudnn")
    assert slots == elf.layout["slots"] and loads == elf.layout["loads"]
    assert all(off >= HIGH[64] for _, off in slots) and loads[0][0] >= HIGH[64]


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_program_header_table_offset_with_the_top_bit_set_is_past_the_end(tmp_path, bits, order):
    with pytest.raises(NotElf, match=r"^truncated program headers$"):
        read_dynamic(Elf(bits, order).write(tmp_path, phoff=HIGH[bits]))


# --- offsets no file can reach (a corrupt header: 2^63 and above) are past the end of the file,
# never an exception of another kind (ValueError "cannot fit 'int' into an offset-sized integer"
# from seek, before the fix) -- probe_installed documents that it never raises


def _far(bits, order, what):
    """A file whose ``what`` offset is 2^63 (ELF64) or 2^31 (ELF32), with the sentence read_dynamic
    / read_symbol_bytes answer."""
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libcudnn_ops.so.9")
    far = HIGH[bits] if bits == 64 else (1 << 32) - 16
    header = {}
    if what == "phoff":
        header["phoff"] = far
    elif what == "shoff":
        header["shoff"] = far
    elif what == "strtab":
        elf.loads = lambda L: []  # DT_STRTAB taken as a file offset
        elf.strtab_value = far
    return elf, header


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_offsets_past_any_file(tmp_path, bits, order):
    elf, header = _far(bits, order, "phoff")
    with pytest.raises(NotElf, match=r"^truncated program headers$"):
        read_dynamic(elf.write(tmp_path, "a.so", **header))
    elf, header = _far(bits, order, "shoff")
    with pytest.raises(NotElf, match=r"^truncated section headers$"):
        read_symbol_bytes(elf.write(tmp_path, "b.so", **header), "cudnn_graph_version")
    elf, header = _far(bits, order, "strtab")
    got = read_dynamic(elf.write(tmp_path, "c.so", **header))
    assert got.needed == ("",) and got.soname is None  # the names lie past the end: empty


def test_import_slots_offsets_past_any_file_or_short_entries(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    for name, header, message in [("a.so", {"phoff": HIGH[64]}, "truncated program headers"),
                                  ("b.so", {"shoff": HIGH[64]}, "truncated section headers"),
                                  ("c.so", {"phentsize": 55}, "header entries smaller than the ELF64 structures"),
                                  ("d.so", {"shentsize": 63}, "header entries smaller than the ELF64 structures")]:
        with pytest.raises(NotElf, match=f"^{message}$"):
            symbol_slots(elf.write(tmp_path, name, **header), "cudnn")


def test_probe_installed_reports_a_corrupt_copy_instead_of_raising(tmp_path):
    from cudnn_magic.probes.installed import probe_installed

    lib = tmp_path / "lib"
    lib.mkdir()
    Elf(64, "<", soname="libcudnn.so.9").write(lib, "libcudnn.so.9", phoff=HIGH[64])
    inv = probe_installed(environ={}, query_unknown=False, ldcache_path=str(tmp_path / "no-cache"), extra_dirs=(str(lib),))
    (copy,) = [c for c in inv.copies if c.path.startswith(str(lib))]
    assert copy.error == "not a usable shared library: truncated program headers"


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_a_huge_sh_link_is_out_of_range_not_counted_from_the_end(tmp_path, bits, order):
    """sh_link is an Elf_Word: 2^32 - 6 is past the 8 section headers (read signed, it would
    name header 2 counted from the end: .dynsym's own string table would still be found)."""
    elf = Elf(bits, order)
    elf.dynsym_link = (1 << 32) - 5  # -5 from the end of 8 headers is 3, .dynstr
    assert read_symbol_bytes(elf.write(tmp_path, "a.so"), "cudnn_graph_version") is None
    if bits == 64 and order == "<":
        elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
        elf.rela_link = (1 << 32) - 6  # -6 from the end is 2, .dynsym
        assert symbol_slots(elf.write(tmp_path, "b.so"), "cudnn") == ([], elf.layout["loads"])


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_a_name_offset_past_the_string_table_names_nothing(tmp_path, bits, order):
    """st_name is an Elf_Word: an offset past the table names nothing (read signed, 2^32 - 20
    would be 20 bytes before the table's end, where "cudnnTail" lies)."""
    elf = Elf(bits, order, syms=(("cudnn_graph_version", "data"), ("cudnnTail", "undef"), ("padpadpad", "undef")),
              relocs=[("cudnn_graph_version", 7)] if bits == 64 else [])
    elf.sym_overrides["cudnn_graph_version"] = {"name": (1 << 32) - 20}
    path = elf.write(tmp_path)
    assert read_symbol_bytes(path, "cudnnTail") is None  # cudnnTail's own symbol is undefined here
    if bits == 64 and order == "<":
        assert symbol_slots(path, "cudnn") == ([], elf.layout["loads"])


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("change, message", [
    ({"data": b"\x7fELF\x02\x01"}, "not an ELF file"),
    ({"data": b"\x7fELF" + b"\x02\x01\x01" + b"\0" * 9 + b"\0" * 20}, "truncated ELF header"),
    ({"phnum": 0}, "no program headers"),
    ({"phnum": 0xFFFF}, "no program headers"),      # PN_XNUM (extended numbering): not followed
    ({"phoff": 1 << 20}, "truncated program headers"),
    ("no-dynamic", "no dynamic section (not a shared object)"),
    ("no-strtab", "dynamic section without a string table"),
], ids=["short-ident", "short-header", "phnum-0", "phnum-PN_XNUM", "phoff-past-end", "no-dynamic", "no-strtab"])
def test_each_refusal_says_why(tmp_path, bits, order, change, message):
    elf = Elf(bits, order)
    p = tmp_path / "libcudnn.so.9"
    if change == "no-dynamic":
        elf.no_dynamic = True
        p.write_bytes(elf.bytes())
    elif change == "no-strtab":
        raw = bytearray(elf.bytes())
        fmt = order + ("qQ" if bits == 64 else "iI")
        struct.pack_into(fmt, raw, elf.layout["dynamic_off"], DT_DEBUG, 0)  # DT_STRTAB comes first
        p.write_bytes(bytes(raw))
    elif "data" in change:
        p.write_bytes(change["data"])
    else:
        p.write_bytes(elf.bytes(**change))
    with pytest.raises(NotElf, match=f"^{re.escape(message)}$"):
        read_dynamic(str(p))


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("change, message", [
    ({"shoff": 0}, "no section headers"), ({"shnum": 0}, "no section headers"),
    ({"shoff": 1 << 20}, "truncated section headers"),
], ids=["shoff-0", "shnum-0", "shoff-past-end"])
def test_each_section_refusal_says_why(tmp_path, bits, order, change, message):
    path = Elf(bits, order).write(tmp_path, **change)
    with pytest.raises(NotElf, match=f"^{re.escape(message)}$"):
        read_symbol_bytes(path, "cudnn_graph_version")
    if bits == 64 and order == "<" and "shoff" in change and change["shoff"]:
        with pytest.raises(NotElf, match=f"^{re.escape(message)}$"):
            symbol_slots(path, "cudnn")


def test_import_slots_refuse_pn_xnum_program_header_counts(tmp_path):
    elf = Elf(64, "<", syms=IMPORTS, relocs=[("cudnnCreate", 7)])
    assert symbol_slots(elf.write(tmp_path, phnum=0xFFFF), "cudnn") == ([], [])


def test_an_import_name_that_is_not_ascii_is_replaced(tmp_path):
    elf = Elf(64, "<", syms=((b"cudnn\xffX", "undef"),), relocs=[(b"cudnn\xffX", 7)])
    slots, _ = symbol_slots(elf.write(tmp_path), "cudnn")
    assert [n for n, _ in slots] == ["cudnn\ufffdX"]


@pytest.fixture(scope="module")
def big_strtab(tmp_path_factory):
    """A library whose .dynstr is larger than 64 MiB, the parsers' bound on what they read of a
    section: names just below the bound are read, names past it are not (a sparse file: the
    names are written 64 MiB into the table, the bytes before them are a hole)."""
    bound = 64 << 20
    at = bound - len("cudnn_graph_version\0cudnnBefore\0") - 2  # "cudnnAfter" crosses the bound
    elf = Elf(64, "<", syms=(("cudnn_graph_version", "data"), ("cudnnBefore", "undef"), ("cudnnAfter", "undef")),
              relocs=[("cudnnBefore", 7), ("cudnnAfter", 7)])
    elf.sym_overrides = {"cudnn_graph_version": {"name": at}, "cudnnBefore": {"name": at + 20},
                         "cudnnAfter": {"name": at + 32}}
    elf.dynstr_size_delta = bound  # .dynstr's sh_size: past the names
    p = tmp_path_factory.mktemp("big") / "libbig.so"
    p.write_bytes(elf.bytes())
    with open(p, "r+b") as fh:
        fh.seek(64 + at)  # .dynstr starts after the 64-byte ELF header
        fh.write(b"cudnn_graph_version\0cudnnBefore\0cudnnAfter\0")
    return str(p), elf.layout


def test_symbols_past_64_mib_of_the_symbol_table_are_not_read(tmp_path):
    """The same bound on .dynsym (symbol_slots, which reads a symbol's st_name, its first 4
    bytes): the symbol starting 16 bytes below 64 MiB is read, the next one, starting 8 bytes
    past it, is not (a sparse file again)."""
    last = (64 << 20) // 24  # 2796202 * 24 = 64 MiB - 16
    elf = Elf(64, "<", syms=(("cudnnNear", "undef"),), relocs=[(last, 7), (last + 1, 7)])
    elf.dynsym_size_extra = 64 << 20
    raw = elf.bytes()
    name = raw.index(b"cudnnNear\0") - 64  # its offset in .dynstr
    p = tmp_path / "libbig.so"
    p.write_bytes(raw)
    dynsym_off = struct.unpack_from("<Q", raw, struct.unpack_from("<Q", raw, 40)[0] + 2 * 64 + 24)[0]  # header 2's sh_offset
    with open(p, "r+b") as fh:
        for idx in (last, last + 1):
            fh.seek(dynsym_off + idx * 24)
            fh.write(struct.pack("<IBBHQQ", name, 0x12, 0, 0, 0, 0))
    slots, _ = symbol_slots(str(p), "cudnn")
    assert slots == [("cudnnNear", elf.layout["slots"][0][1])]


def test_names_past_64_mib_of_the_string_table_are_not_read(big_strtab):
    path, layout = big_strtab
    assert read_symbol_bytes(path, "cudnn_graph_version") == SYM_VALUE
    slots, _ = symbol_slots(path, "cudnn")
    assert slots == [s for s in layout["slots"] if s[0] == "cudnnBefore"]


# --------------------------------------------------------------------------------------------
# glibc's ld.so.cache: as this machine's ldconfig writes it, and its edges
# --------------------------------------------------------------------------------------------


needs_ldconfig = pytest.mark.skipif(not (shutil.which("ldconfig") or os.path.exists("/sbin/ldconfig")),
                                    reason="glibc's ldconfig is not installed")


def _ldconfig():
    return shutil.which("ldconfig") or "/sbin/ldconfig"


def _ldconfig_p(cache):
    """``ldconfig -p -C cache`` as {soname: [paths in cache order]} (glibc's own reader)."""
    out = subprocess.run([_ldconfig(), "-p", "-C", cache], capture_output=True, text=True, check=True).stdout
    got = {}
    for soname, path in re.findall(r"^\t(\S+) \(.*?\) => (.*)$", out, re.MULTILINE):
        got.setdefault(soname, []).append(path)
    return got


@needs_ldconfig
def test_a_cache_written_by_glibcs_ldconfig_reads_as_ldconfig_p_reads_it(tmp_path):
    """Two folders each holding a libcudnn.so.9 (built ELF files with that SONAME) and a
    libcudnn_graph.so.9; ``ldconfig -C`` writes the cache (with this system's trusted folders),
    ``ldconfig -p -C`` reads it back: the parser must agree entry for entry, in order."""
    dirs = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        Elf(64, "<", soname="libcudnn.so.9").write(d, "libcudnn.so.9")
        Elf(64, "<", soname="libcudnn_graph.so.9").write(d, "libcudnn_graph.so.9")
        dirs.append(str(d))
    conf = tmp_path / "ld.so.conf"
    conf.write_text("")
    cache = str(tmp_path / "ld.so.cache")
    r = subprocess.run([_ldconfig(), "-X", "-C", cache, "-f", str(conf), *dirs], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"ldconfig could not write a cache here: {r.stderr.strip()[:200]}")
    want = _ldconfig_p(cache)
    assert len(want["libcudnn.so.9"]) == 2 and len(want["libcudnn_graph.so.9"]) == 2
    got, note = read_ldcache(cache)
    assert note is None
    assert got == want


@pytest.mark.parametrize("n, seen", [(200_000, True), (200_001, False)], ids=["200000-read", "200001-not"])
def test_at_most_200000_cache_entries_are_read(tmp_path, n, seen):
    """The parser's bound on nlibs (this machine's cache holds about 600): the 200,000th entry
    is read, the 200,001st is not."""
    entries = [("libz.so.1", "/lib/libz.so.1")] * (n - 1) + [("libcudnn.so.9", "/opt/cudnn/lib/libcudnn.so.9")]
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache(entries))
    got, note = read_ldcache(str(p))
    assert note is None
    assert ("libcudnn.so.9" in got) is seen
    assert len(got["libz.so.1"]) == min(n - 1, 200_000)


def test_nlibs_larger_than_the_table_is_truncated(tmp_path):
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libcudnn.so.9", "/x/libcudnn.so.9")], n=2)[:48 + 24 + 20])
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: truncated")


@pytest.mark.parametrize("prefix", [b"", b"ld.so-1.7.0\0" + b"\0" * 12 + b"\0" * 7])
def test_strings_count_from_the_new_header_and_are_decoded_leniently(tmp_path, prefix):
    """String offsets count from the new-format header, wherever it starts (after the old
    format's part, when there is one); a path that is not UTF-8 is kept with U+FFFD."""
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libz.so.1", "/lib/libz.so.1"), ("libcudnn.so.9", b"/opt/\xffcudnn/libcudnn.so.9")],
                              prefix=prefix))
    got, note = read_ldcache(str(p))
    assert note is None
    assert got == {"libz.so.1": ["/lib/libz.so.1"], "libcudnn.so.9": ["/opt/\udcffcudnn/libcudnn.so.9"]}  # os.fsdecode: the path round-trips to its bytes


LEFT_OUT = "left out (a name past the end of the file or not NUL-terminated)"


def test_a_string_offset_past_the_end_is_left_out_and_counted_not_raised(tmp_path):
    """An entry whose string offsets point past the end of the file (a cut or corrupt cache)
    is left out and counted in the note; the entries before it are read as written."""
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libcudnn.so.9", "/x/libcudnn.so.9"), (1 << 20, 1 << 20)]))
    got, note = read_ldcache(str(p))
    assert note == f"ld.so cache {p}: 1 entry {LEFT_OUT}"
    assert got == {"libcudnn.so.9": ["/x/libcudnn.so.9"]}


@pytest.mark.parametrize("cut", [0, 1, 5], ids=["cut-at-last-char", "cut-1-before", "cut-5-before"])
def test_a_last_name_without_its_nul_is_left_out_whole_not_shortened(tmp_path, cut):
    """A cache cut inside its last string: the name runs to the end of the file with no NUL.
    It is not read one character short (the old ``data[o:-1]``), it is left out and counted."""
    raw = ld_so_cache([("libz.so.1", "/lib/libz.so.1"), ("libcudnn.so.9", "/x/libcudnn.so.9")])
    assert raw.endswith(b"/x/libcudnn.so.9\0")
    p = tmp_path / "ld.so.cache"
    p.write_bytes(raw[:len(raw) - 1 - cut])
    got, note = read_ldcache(str(p))
    assert got == {"libz.so.1": ["/lib/libz.so.1"]}
    assert note == f"ld.so cache {p}: 1 entry {LEFT_OUT}"


def test_the_key_alone_unreadable_leaves_the_entry_out(tmp_path):
    """Either name unreadable leaves the entry out (a path with no soname, or a soname with no
    path, is not an entry); two such entries are counted as two."""
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libz.so.1", "/lib/libz.so.1"), (1 << 20, "/x/a.so"), ("libcudnn.so.9", 1 << 20)]))
    got, note = read_ldcache(str(p))
    assert got == {"libz.so.1": ["/lib/libz.so.1"]}
    assert note == f"ld.so cache {p}: 2 entries {LEFT_OUT}"


# --------------------------------------------------------------------------------------------
# RECORD lines (PEP 376 / 627: CSV; a quoted field doubles the quotes inside it)
# --------------------------------------------------------------------------------------------

from cudnn_magic.probes.owners import RecordEntry  # noqa: E402

MORE_RECORD_LINES = [
    # line as written, the entry read (None: no entry)
    ('"",sha256=x,1\n', RecordEntry("", "sha256=x", 1)),              # the shortest quoted field: empty
    ('"a",sha256=x,1\n', RecordEntry("a", "sha256=x", 1)),            # one character, quoted
    ('a"",sha256=x,1\n', RecordEntry('a""', "sha256=x", 1)),          # quotes not around the field: as written
    ('"abc,sha256=x,1\n', RecordEntry('"abc', "sha256=x", 1)),        # an opening quote alone: as written
    ('"a""""b",sha256=x,1\n', RecordEntry('a""b', "sha256=x", 1)),    # two doubled quotes: two quotes
    ("a,b.so,sha256=x,5\n", RecordEntry("a,b.so", "sha256=x", 5)),    # unquoted comma: split from the right
    ("lib/a.so,,5\n", RecordEntry("lib/a.so", None, 5)),             # no digest
    ("lib/a.so,sha256=x,\n", RecordEntry("lib/a.so", "sha256=x", None)),  # no size
    ("lib/a.so,sha256=x,5\r\n", RecordEntry("lib/a.so", "sha256=x", 5)),  # CRLF line end
    ("lib/a.so,sha256=x,5\r", RecordEntry("lib/a.so", "sha256=x", 5)),
    ("lib/a.so,sha256=x, 5\n", RecordEntry("lib/a.so", "sha256=x", None)),  # not a plain digit string
    ("lib/a.so,sha256=x,0\n", RecordEntry("lib/a.so", "sha256=x", 0)),
    ("lib/a.so,sha256=x,5 \n", RecordEntry("lib/a.so", "sha256=x", None)),  # only CR/LF are stripped, not blanks
    (",sha256=x,1\n", RecordEntry("", "sha256=x", 1)),                # an empty path field
    ("share/man/X\n", RecordEntry("share/man/X")),                    # a bare path keeps every character
    ("\r\n", None),
]


@pytest.mark.parametrize("line, entry", MORE_RECORD_LINES, ids=[repr(x[0][:24]) for x in MORE_RECORD_LINES])
def test_more_record_lines(tmp_path, line, entry):
    info = tmp_path / "nvidia_cudnn_cu12-9.10.2.21.dist-info"
    info.mkdir()
    (info / "RECORD").write_bytes(("first.py,sha256=a,1\n" + line + "last.py,,\n").encode())
    rec = read_record(str(info))
    assert rec.entries == (RecordEntry("first.py", "sha256=a", 1), *((entry,) if entry else ()), RecordEntry("last.py"))


def test_record_of_a_real_wheel_matches_the_files_it_lists():
    """The RECORD of a wheel pip installed in this venv (packaging's): every listed file with a
    digest has that sha256 and that size on disk (the digest form is ``file_digest``'s)."""
    import packaging

    from cudnn_magic.probes.owners import distributions_in, file_digest

    site = os.path.dirname(os.path.dirname(packaging.__file__))
    dists = [d for d in distributions_in(site, relevant_only=False) if d.name == "packaging"]
    assert len(dists) == 1
    checked = 0
    for e in dists[0].entries:
        if e.digest is None:
            continue
        p = dists[0].abspath(e)
        assert file_digest(p) == e.digest and os.path.getsize(p) == e.size, e.path
        checked += 1
    assert checked >= 10


# --------------------------------------------------------------------------------------------
# METADATA / PKG-INFO + requires.txt, and the cuDNN pins in them
# --------------------------------------------------------------------------------------------

from cudnn_magic.probes.frameworks.common import (  # noqa: E402
    _egg_requires,
)
from cudnn_magic.rules.cudnn_version import CudnnVersion  # noqa: E402


def _info(tmp_path, text, folder="jax_cuda12_plugin-0.7.2.dist-info", name="METADATA", requires=None):
    d = tmp_path / folder
    d.mkdir()
    (d / name).write_text(text, encoding="utf-8")
    if requires is not None:
        (d / "requires.txt").write_text(requires, encoding="utf-8")
    return str(d)


@pytest.mark.parametrize("text, requires", [
    # a continuation line (RFC 822: starts with a space or a tab) joins the header above, one space between
    ("Name: x\nVersion: 1\nRequires-Dist: nvidia-cudnn-cu12>=9.8;\n\tplatform_system == 'Linux'\n",
     ["nvidia-cudnn-cu12>=9.8; platform_system == 'Linux'"]),
    ("Name: x\nVersion: 1\nRequires-Dist: a\n   \tb  \nRequires-Dist: c\n", ["a b", "c"]),
    # no Requires-Dist: none
    ("Name: x\nVersion: 1\nSummary: Requires-Dist: not a header\n", []),
    # header names are case-insensitive, values trimmed
    ("NAME: x\nVERSION: 1\nREQUIRES-DIST:   nvidia-cudnn-cu12==9.1.0.70   \n", ["nvidia-cudnn-cu12==9.1.0.70"]),
    # CRLF line ends
    ("Name: x\r\nVersion: 1\r\nRequires-Dist: a\r\n\r\nRequires-Dist: body\r\n", ["a"]),
    # a PEP 508 direct reference: the colon of the URL belongs to the value (split at the first colon)
    ("Name: x\nVersion: 1\nRequires-Dist: nvidia-cudnn-cu12 @ https://example.org/nvidia_cudnn_cu12-9.1.whl\n",
     ["nvidia-cudnn-cu12 @ https://example.org/nvidia_cudnn_cu12-9.1.whl"]),
])
def test_metadata_requires_dist(tmp_path, text, requires):
    assert read_dist_metadata(_info(tmp_path, text)).requires == requires


def test_metadata_an_indented_first_line_is_a_header_not_a_continuation(tmp_path):
    """Nothing above to continue: the line is read as a header of its own (never an error)."""
    info = read_dist_metadata(_info(tmp_path, "  Name: jax-cuda12-plugin\nVersion: 0.7.2\n"))
    assert (info.name, info.version) == ("jax-cuda12-plugin", "0.7.2")


def test_metadata_without_version_names_the_file(tmp_path):
    d = _info(tmp_path, "Name: x\n")
    with pytest.raises(ValueError, match=re.escape(os.path.join(d, "METADATA")) + " has no Name/Version header"):
        read_dist_metadata(d)


def test_metadata_first_name_and_version_win_and_names_are_normalised(tmp_path):
    info = read_dist_metadata(_info(tmp_path, "Name: Jax_CUDA12..Plugin\nVersion: 0.7.2\nName: other\nVersion: 9\n"))
    assert (info.name, info.version) == ("jax-cuda12-plugin", "0.7.2")  # PEP 503: runs of -_. become one -


@pytest.mark.parametrize("size_extra, ok", [(0, True), (1, False)], ids=["4MiB", "4MiB+1"])
def test_metadata_of_at_most_4_mib(tmp_path, size_extra, ok):
    head = "Name: x\nVersion: 1\n\n"
    d = _info(tmp_path, head + "b" * ((4 << 20) - len(head) + size_extra))
    if ok:
        assert read_dist_metadata(d).version == "1"
    else:
        with pytest.raises(ValueError):
            read_dist_metadata(d)


@pytest.mark.parametrize("requires_txt, want", [
    ("numpy\n  scipy>=1.0  \n", ["numpy", "scipy>=1.0"]),
    # an extra on a requirement ends in "]" without starting with "[": a requirement, not a section
    ("requests[socks]\n[cuda]\nnvidia-cudnn-cu12[all]\n", ["requests[socks]", 'nvidia-cudnn-cu12[all]; extra == "cuda"']),
    ("[and-cuda]\nnvidia-cudnn-cu12==8.9.4.25\n", ['nvidia-cudnn-cu12==8.9.4.25; extra == "and-cuda"']),
    ('[:platform_system == "Linux"]\nnvidia-cudnn-cu12\n', ['nvidia-cudnn-cu12; platform_system == "Linux"']),
    ('[cuda12:platform_system == "Linux"]\nnvidia-cudnn-cu12>=9.1\n',
     ['nvidia-cudnn-cu12>=9.1; extra == "cuda12" and platform_system == "Linux"']),
    ("# comment\n\n[cuda]\n# comment\n\nx\n", ['x; extra == "cuda"']),
    ("[cuda\ny\n", ["[cuda", "y"]),  # not a section header without its closing bracket
    # the extra ends at the first colon; a marker's quoted value may hold colons (platform_version)
    ('[gpu:platform_version == "#1 SMP 10:00"]\nz\n', ['z; extra == "gpu" and platform_version == "#1 SMP 10:00"']),
])
def test_requires_txt_sections(tmp_path, requires_txt, want):
    d = _info(tmp_path, "Name: tensorflow\nVersion: 2.15.0\n", folder="tensorflow-2.15.0.egg-info", name="PKG-INFO",
              requires=requires_txt)
    assert read_dist_metadata(d).requires == want


def test_requires_txt_too_large_or_unreadable_is_no_requirement(tmp_path):
    d = _info(tmp_path, "Name: t\nVersion: 1\nRequires-Dist: numpy\n", folder="t-1.egg-info", name="PKG-INFO",
              requires="x\n" * ((4 << 20) // 2 + 1))
    assert read_dist_metadata(d).requires == ["numpy"]
    assert _egg_requires(str(tmp_path)) == []  # a folder, not a file: OSError
    assert _egg_requires(str(tmp_path / "absent.txt")) == []


@pytest.mark.parametrize("req, specs", [
    ("nvidia-cudnn-cu12 >= 9.1 , < 10", [(">=", "9.1"), ("<", "10")]),
    ("nvidia-cudnn-cu12(>=9.1)", [(">=", "9.1")]),
    ("nvidia-cudnn-cu12[a,b]==9.1.0.70; extra == 'x' and python_version<'3.13'", [("==", "9.1.0.70")]),
    ("nvidia-cudnn-cu12==1!9.1+local", [("==", "1!9.1+local")]),
    ("nvidia-cudnn-cu12>=9.0.0a1", [(">=", "9.0.0a1")]),
    ("nvidia-cudnn-cu12==9.1.0RC1", [("==", "9.1.0RC1")]),  # PEP 440 versions are case-insensitive
    ("nvidia-cudnn-cu12===9.1,>=8", [("===", "9.1"), (">=", "8")]),
    ("nvidia-cudnn-cu12~=9.1.0,!=9.1.1", [("~=", "9.1.0"), ("!=", "9.1.1")]),
    ("nvidia-cudnn-cu12<=9.1", [("<=", "9.1")]),
    ("nvidia-cudnn-cu12; python_version >= '3.9'", []),  # a marker's comparison is no pin
])
def test_more_pin_specs(req, specs):
    assert _pin_specs(req) == specs


@pytest.mark.parametrize("pins, ops, want", [
    # JAX's plugin pins with >= (the jax-cuda12-plugin wheel's metadata: "nvidia-cudnn-cu12>=9.8,<10.0")
    (["nvidia-cudnn-cu12<10.0,>=9.8"], (">=",), (CudnnVersion(9, 8), 0)),
    (["nvidia-cudnn-cu12<10.0,>=9.8"], ("<",), (CudnnVersion(10, 0), 0)),
    (["nvidia-cudnn-cu12~=9.1.0"], ("==", "~="), (CudnnVersion(9, 1, 0), 0)),
    (["nvidia-cudnn-cu12==9.*"], ("==",), (CudnnVersion(9), 0)),
    (["nvidia-cudnn-cu12>=junk", "nvidia-cudnn-cu12>=9.3"], (">=",), (CudnnVersion(9, 3), 1)),
    (["nvidia-cudnn-cu12!=9.1"], ("==",), None),
])
def test_more_pin_versions(pins, ops, want):
    got = _pin_version(pins, ops)
    assert got == (None if want is None else (want[0], pins[want[1]]))


@pytest.mark.parametrize("req, is_cudnn", [
    ("nvidia-cudnn-jit-cu13>=9.12", True), ("nvidia_cudnn_jit_cu12", True), ("NVIDIA.CUDNN.CU12==9", True),
    ("nvidia-cudnn-cu", False), ("nvidia-cudnn-jit", True), ("nvidia-cudnn-cu12-x", False), ("xnvidia-cudnn-cu12", False),
    ("nvidia-cudnn-frontend", False), ("nvidia-cuda-nvrtc-cu12", False), (";nvidia-cudnn-cu12", False),
])
def test_more_cudnn_requirement_names(req, is_cudnn):
    assert _is_cudnn_req(req) is is_cudnn


@pytest.mark.parametrize("version, release", [("9.10.2.21", (9, 10, 2, 21)), ("2.9.1rc1", (2, 9, 1)), ("", None),
                                              ("1.0.post3", (1, 0))])
def test_more_releases(version, release):
    assert _release(version) == release


@needs_ldconfig
def test_the_default_cache_is_etc_ld_so_cache_as_ldconfig_p_reads_it():
    if not os.path.isfile("/etc/ld.so.cache"):
        pytest.skip("no /etc/ld.so.cache on this system")
    got, note = read_ldcache()
    assert note is None
    assert got == _ldconfig_p("/etc/ld.so.cache")


def test_an_unreadable_cache_says_why(tmp_path):
    missing = tmp_path / "none"
    assert read_ldcache(str(missing)) == ({}, f"ld.so cache {missing} unreadable (No such file or directory)")


@pytest.mark.parametrize("where, readable", [("ends-at-64MiB", True), ("starts-at-64MiB", False)])
def test_at_most_64_mib_of_the_cache_file_is_read(tmp_path, where, readable):
    """The parser's bound on what it reads (this machine's cache is about 40 KB)."""
    cache = ld_so_cache([("libcudnn.so.9", "/x/libcudnn.so.9")])
    pad = (64 << 20) - (len(cache) if where == "ends-at-64MiB" else 0)
    p = tmp_path / "ld.so.cache"
    p.write_bytes(b"\1" * pad + cache)
    got, note = read_ldcache(str(p))
    if readable:
        assert (got, note) == ({"libcudnn.so.9": ["/x/libcudnn.so.9"]}, None)
    else:
        assert (got, note) == ({}, f"ld.so cache {p}: unknown format")


def test_the_header_is_the_first_magic_even_when_a_path_repeats_it(tmp_path):
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libz.so.1", "/opt/glibc-ld.so.cache1.1/libz.so.1")]))
    assert read_ldcache(str(p)) == ({"libz.so.1": ["/opt/glibc-ld.so.cache1.1/libz.so.1"]}, None)


def test_nlibs_is_unsigned(tmp_path):
    """nlibs is a uint32_t (dl-cache.h): 0xffffffff is a huge count, not -1 (so: truncated)."""
    p = tmp_path / "ld.so.cache"
    raw = bytearray(ld_so_cache([("libz.so.1", "/lib/libz.so.1")]))
    struct.pack_into("<I", raw, 20, 0xFFFFFFFF)
    p.write_bytes(bytes(raw))
    assert read_ldcache(str(p)) == ({}, f"ld.so cache {p}: truncated")


def test_string_offsets_are_unsigned(tmp_path):
    """key and value are uint32_t offsets (dl-cache.h): 0xffffffff lies past the end of any
    cache, it is not one byte before the header."""
    p = tmp_path / "ld.so.cache"
    p.write_bytes(ld_so_cache([("libz.so.1", "/lib/libz.so.1"), (0xFFFFFFFF, 0xFFFFFFFF)], prefix=b"ld.so-1.7.0" + b"Q" * 13))
    assert read_ldcache(str(p)) == ({"libz.so.1": ["/lib/libz.so.1"]}, f"ld.so cache {p}: 1 entry {LEFT_OUT}")


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_without_dt_strsz_no_name_is_read(tmp_path, bits, order):
    """DT_STRSZ is mandatory beside DT_STRTAB (gABI); without it the table's size is taken as 0:
    the entries are kept, their names read as empty, and nothing raises."""
    elf = Elf(bits, order, needed=("libcudnn.so.9",), soname="libcudnn_ops.so.9")
    raw = bytearray(elf.bytes())
    fmt = order + ("qQ" if bits == 64 else "iI")
    at = elf.layout["dynamic_off"] + struct.calcsize(fmt)  # DT_STRSZ is the second entry
    assert struct.unpack_from(fmt, raw, at)[0] == DT_STRSZ
    struct.pack_into(fmt, raw, at, DT_DEBUG, 0)
    (tmp_path / "a.so").write_bytes(bytes(raw))
    got = read_dynamic(str(tmp_path / "a.so"))
    assert (got.needed, got.soname) == (("",), None)


@pytest.mark.parametrize("bits, order", KINDS, ids=KIND_IDS)
def test_a_name_starting_past_dt_strsz_is_not_read(tmp_path, bits, order):
    """DT_STRSZ ends the table 2 bytes before the SONAME's index (inside the NUL and last
    character of the NEEDED name before it): the SONAME names nothing, the NEEDED is cut."""
    elf = Elf(bits, order, needed=("libfirst.so.1",), soname="libcudnn.so.9", syms=())
    elf.strsz_delta = -len("libcudnn.so.9\0") - 2
    got = read_dynamic(elf.write(tmp_path))
    assert (got.needed, got.soname) == (("libfirst.so.",), None)


# --------------------------------------------------------------------------------------------------
# Wheels that overwrite each other's files (RECORD text).
#
# probes.owners.find_overwritten_wheels at its edges: which files two wheels share, the folder they
# are grouped by, whose files are there now, and the bytes each wheel lists there.
# Sources: PEP 376 / PEP 627 (``RECORD``: one ``path,sha256=<digest>,size`` line per file, paths
# relative to the folder holding the ``.dist-info``; the ``.dist-info`` folder itself is the
# distribution's own); docs/facts.md "Two cuDNNs at once" (``nvidia-cudnn-cu12`` and ``-cu13`` 9.x,
# and the ``-jit-`` pair, install the same ``nvidia/cudnn*/lib/libcudnn*.so.9`` files; pip
# overwrites the earlier install's files, keeps both ``RECORD``s and ``pip check`` says nothing).
# The paths below are those of the real wheels' RECORDs (``nvidia/cudnn/lib/libcudnn.so.9``,
# ``nvidia/cudnn/include/cudnn.h``); the digests are distinct stand-ins, as the judgement is on
# RECORD text only (the real wheels' case is tests/unit/probes/test_two_cudnns.py).
# --------------------------------------------------------------------------------------------------


SITE = "/env/lib/python3.12/site-packages"
LIB = f"{SITE}/nvidia/cudnn/lib"
SHIM, GRAPH, HEADER = "nvidia/cudnn/lib/libcudnn.so.9", "nvidia/cudnn/lib/libcudnn_graph.so.9", "nvidia/cudnn/include/cudnn.h"
CU12, CU13 = ("nvidia-cudnn-cu12", "9.10.2.21"), ("nvidia-cudnn-cu13", "9.13.0.50")


def _dist(key, *entries, root=SITE):
    return DistRecord(key[0], key[1], root, tuple(RecordEntry(p, d, s) for p, d, s in entries))


def _abs(rel):
    return f"{SITE}/{rel}"


def test_one_shared_file_groups_by_its_folder():
    a = _dist(CU12, (SHIM, "sha256=A", 100))
    b = _dist(CU13, (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([b, a], {})
    assert ow.directory == LIB  # one file: the folder holding it
    assert ow.files == (_abs(SHIM),)
    assert ow.distributions == (CU12, CU13)  # sorted, whatever the order given
    assert ow.present is None and ow.mixed is False and ow.evidence == ()
    assert ow.sizes == (100, 120)


def test_several_shared_files_group_by_their_common_folder():
    a = _dist(CU12, (SHIM, "sha256=A1", 100), (HEADER, "sha256=A2", 10))
    b = _dist(CU13, (SHIM, "sha256=B1", 120), (HEADER, "sha256=B2", 20))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.directory == f"{SITE}/nvidia/cudnn"
    assert ow.files == (_abs(HEADER), _abs(SHIM))
    assert ow.sizes == (110, 140)


def test_sizes_count_every_listed_file_in_the_folder_not_only_the_shared_ones():
    a = _dist(CU12, (SHIM, "sha256=A", 100), (GRAPH, "sha256=G", 5000), ("nvidia/other/x.so", "sha256=X", 7))
    b = _dist(CU13, (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.directory == LIB
    assert ow.sizes == (5100, 120)  # nvidia/other is outside the folder; a missing size counts 0


def test_a_missing_size_counts_zero():
    a = _dist(CU12, (SHIM, "sha256=A", None))
    b = _dist(CU13, (SHIM, "sha256=B", 3))
    assert find_overwritten_wheels([a, b], {})[0].sizes == (0, 3)


@pytest.mark.parametrize("a_entries, b_entries", [
    ([(SHIM, "sha256=A", 1)], [(GRAPH, "sha256=B", 1)]),  # different files: nothing shared
    ([("nvidia_cudnn.dist-info/RECORD", None, None)], [("nvidia_cudnn.dist-info/RECORD", None, None)]),  # metadata
    ([], [(SHIM, "sha256=B", 1)]),
])
def test_nothing_shared_is_no_overwrite(a_entries, b_entries):
    assert find_overwritten_wheels([_dist(CU12, *a_entries), _dist(CU13, *b_entries)], {}) == ()


def test_a_different_root_is_a_different_place():
    a = _dist(CU12, (SHIM, "sha256=A", 1))
    b = _dist(CU13, (SHIM, "sha256=B", 1), root="/target")  # pip install --target /target
    assert find_overwritten_wheels([a, b], {}) == ()


C12, C13, NONE = "nvidia-cudnn-cu12 9.10.2.21", "nvidia-cudnn-cu13 9.13.0.50", "no distribution (changed after install)"
PRESENT = [
    # observed digests of (shim, header), who is there now, mixed, evidence in file order: (cudnn.h, libcudnn.so.9)
    (("sha256=A1", "sha256=A2"), CU12, False, (C12, C12)),
    (("sha256=B1", "sha256=B2"), CU13, False, (C13, C13)),
    (("sha256=B1", None), CU13, False, (None, C13)),  # one hashed file decides
    (("sha256=A1", "sha256=B2"), None, True, (C13, C12)),  # some files of each: mixed
    (("sha256=Z", None), None, False, (None, NONE)),
    (("sha256=A1", "sha256=Z"), None, False, (NONE, C12)),  # one file changed after install: undecided
    ((None, None), None, False, (None, None)),
]


@pytest.mark.parametrize("seen, present, mixed, who", PRESENT, ids=[f"{s[0]}-{s[1]}" for s, *_ in PRESENT])
def test_whose_files_are_there_now(seen, present, mixed, who):
    a = _dist(CU12, (SHIM, "sha256=A1", 100), (HEADER, "sha256=A2", 10))
    b = _dist(CU13, (SHIM, "sha256=B1", 120), (HEADER, "sha256=B2", 20))
    observed = {p: d for p, d in zip((_abs(SHIM), _abs(HEADER)), seen) if d is not None}
    (ow,) = find_overwritten_wheels([a, b], observed)
    assert ow.present == present
    assert ow.mixed is mixed
    assert ow.evidence == tuple(f"{name}: sha256 matches the RECORD of {w}"
                                for name, w in zip(("cudnn.h", "libcudnn.so.9"), who) if w is not None)


def test_identical_bytes_decide_nothing():
    # both wheels list the same digest for a file (a header unchanged between releases): its hash
    # cannot tell them apart, so it is no evidence either way
    a = _dist(CU12, (SHIM, "sha256=A", 100), (HEADER, "sha256=SAME", 10))
    b = _dist(CU13, (SHIM, "sha256=B", 120), (HEADER, "sha256=SAME", 10))
    (ow,) = find_overwritten_wheels([a, b], {_abs(HEADER): "sha256=SAME"})
    assert ow.present is None and ow.mixed is False and ow.evidence == ()
    (ow,) = find_overwritten_wheels([a, b], {_abs(HEADER): "sha256=SAME", _abs(SHIM): "sha256=B"})
    assert ow.present == CU13
    assert ow.evidence == ("libcudnn.so.9: sha256 matches the RECORD of nvidia-cudnn-cu13 9.13.0.50",)


def test_three_wheels_two_groups_sorted_by_folder():
    jit12, jit13 = ("nvidia-cudnn-jit-cu12", "9.12.0.46"), ("nvidia-cudnn-jit-cu13", "9.13.0.50")
    jit = "nvidia/cudnn_jit/lib/libcudnn.so.9"
    dists = [_dist(jit13, (jit, "sha256=J13", 5)), _dist(CU13, (SHIM, "sha256=B", 1)),
             _dist(jit12, (jit, "sha256=J12", 4)), _dist(CU12, (SHIM, "sha256=A", 2))]
    first, second = find_overwritten_wheels(dists, {_abs(jit): "sha256=J13"})
    assert (first.directory, first.distributions, first.present) == (LIB, (CU12, CU13), None)
    assert (second.directory, second.distributions, second.present) == (f"{SITE}/nvidia/cudnn_jit/lib", (jit12, jit13), jit13)
    assert second.sizes == (4, 5)


def test_three_wheels_on_one_file_are_one_group():
    cu11 = ("nvidia-cudnn-cu11", "9.1.0.70")
    dists = [_dist(CU12, (SHIM, "sha256=A", 1)), _dist(CU13, (SHIM, "sha256=B", 1)), _dist(cu11, (SHIM, "sha256=C", 1))]
    (ow,) = find_overwritten_wheels(dists, {_abs(SHIM): "sha256=C"})
    assert ow.distributions == (cu11, CU12, CU13)
    assert ow.present == cu11 and ow.mixed is False


def test_the_order_of_a_record_does_not_matter():
    # pip writes the .dist-info lines last, but RECORD order is not specified (PEP 376): a
    # metadata line or a file of one wheel only, before the shared file, hides nothing
    a = _dist(CU12, ("nvidia_cudnn_cu12-9.10.2.21.dist-info/METADATA", "sha256=M", 9), ("nvidia/cudnn/lib/own.so", "sha256=O", 1),
              (SHIM, "sha256=A", 100))
    b = _dist(CU13, ("nvidia/cudnn/lib/also_own.so", "sha256=P", 1), (SHIM, "sha256=B", 120))
    (ow,) = find_overwritten_wheels([a, b], {})
    assert ow.files == (_abs(SHIM),)


def test_groups_come_sorted_by_folder_not_by_name():
    # stand-in names chosen so that name order and folder order differ
    za, zb, ya, yb = ("a-first", "1"), ("a-second", "1"), ("z-first", "1"), ("z-second", "1")
    dists = [_dist(za, ("zzz/lib.so", "sha256=1", 1)), _dist(zb, ("zzz/lib.so", "sha256=2", 1)),
             _dist(ya, ("aaa/lib.so", "sha256=3", 1)), _dist(yb, ("aaa/lib.so", "sha256=4", 1))]
    assert [ow.directory for ow in find_overwritten_wheels(dists, {})] == [f"{SITE}/aaa", f"{SITE}/zzz"]


def test_two_wheels_with_the_same_bytes_both_match():
    # cu11 and cu12 list the same digest for the shim, cu13 another: the file on disk matches both
    cu11 = ("nvidia-cudnn-cu11", "9.1.0.70")
    dists = [_dist(CU12, (SHIM, "sha256=A", 1)), _dist(CU13, (SHIM, "sha256=B", 1)), _dist(cu11, (SHIM, "sha256=A", 1))]
    (ow,) = find_overwritten_wheels(dists, {_abs(SHIM): "sha256=A"})
    assert ow.evidence == ("libcudnn.so.9: sha256 matches the RECORD of nvidia-cudnn-cu11 9.1.0.70 and "
                           "nvidia-cudnn-cu12 9.10.2.21",)
    assert ow.present is None  # the hashes cannot tell cu11 from cu12
