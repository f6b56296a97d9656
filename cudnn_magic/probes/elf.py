"""Read the dynamic section of an ELF shared object: SONAME, NEEDED, RPATH, RUNPATH.

Pure Python (``struct``), reads at most the headers and the dynamic string table, never loads
the file. Layout per the System V gABI ("Dynamic Section") and glibc's ``elf.h``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

from ..util.files import open_regular

DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
_MAX_DYN = 4096  # dynamic entries read at most


class NotElf(ValueError):
    """The file is not a readable ELF shared object (raised by :func:`read_dynamic`)."""


def _seek(fh: BinaryIO, offset: int) -> None:
    """Seek to ``offset`` (bytes from the start), where an offset no file can reach (2^63 and
    above, from a corrupt header: ``seek`` refuses it with ValueError or OverflowError) is the
    end of the file, so the read that follows finds nothing there, as past any other end."""
    try:
        fh.seek(offset)
    except (OverflowError, ValueError):
        fh.seek(0, 2)


@dataclass(frozen=True)
class ElfDynamic:
    """The loader-relevant facts of one ELF file.

    ``rpath``/``runpath`` are the raw entries (``$ORIGIN`` unexpanded), split on ``:``.
    """

    soname: str | None
    needed: tuple[str, ...]
    rpath: tuple[str, ...]
    runpath: tuple[str, ...]
    machine: int


def read_dynamic(path: str) -> ElfDynamic:
    """Parse ``path``'s dynamic section.

    Raises:
        NotElf: not ELF, truncated, or without a dynamic section (e.g. a text file someone
            named ``libcudnn.so.9``).
        OSError: the file cannot be opened (permissions, broken symlink).
    """
    with open_regular(path) as fh:
        ident = fh.read(16)
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            raise NotElf("not an ELF file")
        is64 = ident[4] == 2
        end = "<" if ident[5] == 1 else ">"
        hdr_fmt = end + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
        hdr = fh.read(struct.calcsize(hdr_fmt))
        if len(hdr) < struct.calcsize(hdr_fmt):
            raise NotElf("truncated ELF header")
        (_type, machine, _ver, _entry, phoff, _shoff, _flags, _ehsize, phentsize, phnum, *_rest) = struct.unpack(
            hdr_fmt, hdr
        )
        ph_fmt = end + ("IIQQQQQQ" if is64 else "IIIIIIII")
        ph_size = struct.calcsize(ph_fmt)
        if phentsize < ph_size or phnum == 0 or phnum > 4096:
            raise NotElf("no program headers")
        loads: list[tuple[int, int, int]] = []  # (vaddr, offset, filesz)
        dyn: tuple[int, int] | None = None
        _seek(fh, phoff)
        table = fh.read(phentsize * phnum)
        if len(table) < phentsize * phnum:
            raise NotElf("truncated program headers")
        for i in range(phnum):
            raw = table[i * phentsize : i * phentsize + ph_size]
            if is64:
                p_type, _fl, p_offset, p_vaddr, _pa, p_filesz, _memsz, _align = struct.unpack(ph_fmt, raw)
            else:
                p_type, p_offset, p_vaddr, _pa, p_filesz, _memsz, _fl, _align = struct.unpack(ph_fmt, raw)
            if p_type == PT_LOAD:
                loads.append((p_vaddr, p_offset, p_filesz))
            elif p_type == PT_DYNAMIC:
                dyn = (p_offset, p_filesz)
        if dyn is None:
            raise NotElf("no dynamic section (not a shared object)")
        ent_fmt = end + ("qQ" if is64 else "iI")
        ent_size = struct.calcsize(ent_fmt)
        _seek(fh, dyn[0])
        data = fh.read(min(dyn[1], _MAX_DYN * ent_size))
        entries: list[tuple[int, int]] = []
        for off in range(0, len(data) - ent_size + 1, ent_size):
            tag, val = struct.unpack(ent_fmt, data[off : off + ent_size])
            if tag == DT_NULL:
                break
            entries.append((tag, val))
        strtab = next((v for t, v in entries if t == DT_STRTAB), None)
        strsz = next((v for t, v in entries if t == DT_STRSZ), 0)
        if strtab is None:
            raise NotElf("dynamic section without a string table")
        str_off = None
        for vaddr, offset, filesz in loads:  # DT_STRTAB is a virtual address
            if vaddr <= strtab < vaddr + filesz:
                str_off = strtab - vaddr + offset
                break
        if str_off is None:
            str_off = strtab
        # Read only the strings the wanted entries point at (a big library's dynamic string table
        # holds every exported symbol: 10+ MB for TensorFlow's, where these names are a few bytes).
        wanted = sorted({v for t, v in entries if t in (DT_NEEDED, DT_SONAME, DT_RPATH, DT_RUNPATH) and v < strsz})
        found: dict[int, bytes] = {}
        for idx in wanted:
            if idx in found:
                continue
            _seek(fh, str_off + idx)
            chunk = fh.read(min(4096, strsz - idx))
            while b"\0" not in chunk and len(chunk) < min(1 << 16, strsz - idx):  # long RPATH lists
                more = fh.read(4096)
                if not more:
                    break
                chunk += more
            stop = chunk.find(b"\0")
            found[idx] = chunk[: stop if stop >= 0 else len(chunk)]

    def s(idx: int) -> str:
        return found.get(idx, b"").decode("utf-8", "replace")

    def split(tag: int) -> tuple[str, ...]:
        out: list[str] = []
        for t, v in entries:
            if t == tag:
                out.extend(p for p in s(v).split(":") if p)
        return tuple(out)

    soname = next((s(v) for t, v in entries if t == DT_SONAME), None)
    return ElfDynamic(
        soname=soname or None,
        needed=tuple(s(v) for t, v in entries if t == DT_NEEDED),
        rpath=split(DT_RPATH),
        runpath=split(DT_RUNPATH),
        machine=machine,
    )


SHT_DYNSYM, SHT_NOBITS = 11, 8
_MAX_DYNSYMS = 1 << 20


def read_symbol_bytes(path: str, name: str, size: int = 4) -> bytes | None:
    """The first ``size`` bytes of the initialised data of the exported (``.dynsym``) symbol
    ``name`` in the file ``path``, read from the file without loading it; None when the file
    exports no such symbol with data in the file.

    Used for version constants a library carries itself (``cudnn_graph_version`` in
    ``libcudnn_graph.so.9``). Layout per the System V gABI ("Section Header", "Symbol Table").

    Raises:
        NotElf: not an ELF file, or its section headers are unreadable.
        OSError: the file cannot be opened.
    """
    want = name.encode()
    with open_regular(path) as fh:
        ident = fh.read(16)
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            raise NotElf("not an ELF file")
        is64 = ident[4] == 2
        end = "<" if ident[5] == 1 else ">"
        hdr_fmt = end + ("HHIQQQIHHHHHH" if is64 else "HHIIIIIHHHHHH")
        hdr = fh.read(struct.calcsize(hdr_fmt))
        if len(hdr) < struct.calcsize(hdr_fmt):
            raise NotElf("truncated ELF header")
        (*_a, shoff, _flags, _eh, _phes, _phn, shentsize, shnum, _shstrndx) = struct.unpack(hdr_fmt, hdr)
        sh_fmt = end + ("IIQQQQIIQQ" if is64 else "IIIIIIIIII")
        sh_size = struct.calcsize(sh_fmt)
        if shoff == 0 or shnum == 0 or shentsize < sh_size or shnum > 65535:
            raise NotElf("no section headers")
        _seek(fh, shoff)
        table = fh.read(shentsize * shnum)
        if len(table) < shentsize * shnum:
            raise NotElf("truncated section headers")
        sections = []
        for i in range(shnum):
            f = struct.unpack(sh_fmt, table[i * shentsize : i * shentsize + sh_size])
            # name, type, flags, addr, offset, size, link, info, addralign, entsize
            sections.append(f)
        dynsym = next((s for s in sections if s[1] == SHT_DYNSYM), None)
        if dynsym is None or dynsym[6] >= len(sections):
            return None
        strtab = sections[dynsym[6]]
        ent = dynsym[9] or (24 if is64 else 16)
        count = min(dynsym[5] // ent, _MAX_DYNSYMS)
        _seek(fh, dynsym[4])
        syms = fh.read(count * ent)
        _seek(fh, strtab[4])
        strings = fh.read(min(strtab[5], 64 << 20))
        sym_fmt = end + ("IBBHQQ" if is64 else "IIIBBH")
        for i in range(count):
            raw = syms[i * ent : i * ent + struct.calcsize(sym_fmt)]
            if len(raw) < struct.calcsize(sym_fmt):
                break
            if is64:
                st_name, _info, _other, shndx, value, _sz = struct.unpack(sym_fmt, raw)
            else:
                st_name, value, _sz, _info, _other, shndx = struct.unpack(sym_fmt, raw)
            if strings[st_name : st_name + len(want) + 1] != want + b"\0":
                continue
            if shndx == 0 or shndx >= len(sections):
                return None  # undefined here, or an absolute/common symbol with no file data
            sec = sections[shndx]
            if sec[1] == SHT_NOBITS or not sec[3] <= value < sec[3] + sec[5]:
                return None
            _seek(fh, value - sec[3] + sec[4])
            data = fh.read(size)
            return data if len(data) == size else None
    return None


SHT_RELA = 4
#: Relocation types that fill a GOT slot with a symbol's address (x86_64: R_X86_64_64,
#: GLOB_DAT, JUMP_SLOT; aarch64: R_AARCH64_ABS64, GLOB_DAT, JUMP_SLOT), per each psABI.
_GOT_TYPES = {62: {1, 6, 7}, 183: {257, 1025, 1026}}


def symbol_slots(path: str, prefix: str) -> tuple[list[tuple[str, int]], list[tuple[int, int]]]:
    """Where a loaded copy of ``path`` keeps the addresses of the symbols it imports whose
    names start with ``prefix``: ``[(name, r_offset)]`` from its ``SHT_RELA`` sections (GOT
    slots, relative to the load base), and the ``PT_LOAD`` ranges ``[(vaddr, memsz)]`` those
    offsets must fall in. Read from the file; 64-bit x86_64/aarch64 only (else empty).

    Raises:
        NotElf: not an ELF file, or its headers are unreadable.
        OSError: the file cannot be opened.
    """
    want = prefix.encode()
    with open_regular(path) as fh:
        ident = fh.read(16)
        if len(ident) < 16 or ident[:4] != b"\x7fELF":
            raise NotElf("not an ELF file")
        if ident[4] != 2 or ident[5] != 1:
            return [], []
        hdr_fmt = "<HHIQQQIHHHHHH"
        hdr = fh.read(struct.calcsize(hdr_fmt))
        if len(hdr) < struct.calcsize(hdr_fmt):
            raise NotElf("truncated ELF header")
        (_t, machine, _v, _e, phoff, shoff, _f, _eh, phentsize, phnum, shentsize, shnum, _si) = struct.unpack(hdr_fmt, hdr)
        types = _GOT_TYPES.get(machine)
        if types is None or not shoff or not shnum or shnum > 65535 or phnum > 4096:
            return [], []
        if phentsize < 56 or shentsize < 64:
            raise NotElf("header entries smaller than the ELF64 structures")
        _seek(fh, phoff)
        ph = fh.read(phentsize * phnum)
        if len(ph) < phentsize * phnum:
            raise NotElf("truncated program headers")
        loads = []
        for i in range(phnum):
            p_type, _fl, _off, vaddr, _pa, _fsz, memsz, _al = struct.unpack("<IIQQQQQQ", ph[i * phentsize: i * phentsize + 56])
            if p_type == PT_LOAD:
                loads.append((vaddr, memsz))
        _seek(fh, shoff)
        table = fh.read(shentsize * shnum)
        if len(table) < shentsize * shnum:
            raise NotElf("truncated section headers")
        secs = [struct.unpack("<IIQQQQIIQQ", table[i * shentsize: i * shentsize + 64]) for i in range(shnum)]
        out: list[tuple[str, int]] = []
        cache: dict[int, tuple[bytes, bytes]] = {}
        for s in secs:
            if s[1] != SHT_RELA or s[6] >= len(secs):
                continue
            symsec = secs[s[6]]
            if symsec[1] != SHT_DYNSYM or symsec[6] >= len(secs):
                continue
            if s[6] not in cache:
                _seek(fh, symsec[4])
                syms = fh.read(min(symsec[5], 64 << 20))
                strsec = secs[symsec[6]]
                _seek(fh, strsec[4])
                cache[s[6]] = (syms, fh.read(min(strsec[5], 64 << 20)))
            syms, strings = cache[s[6]]
            _seek(fh, s[4])
            rel = fh.read(min(s[5], 64 << 20))
            for j in range(0, len(rel) - 23, 24):
                r_offset, r_info, _add = struct.unpack("<QQq", rel[j: j + 24])
                if (r_info & 0xFFFFFFFF) not in types:
                    continue
                sym = r_info >> 32
                raw = syms[sym * 24: sym * 24 + 4]
                if len(raw) < 4:
                    continue
                (st_name,) = struct.unpack("<I", raw)
                if strings[st_name: st_name + len(want)] != want:
                    continue
                end = strings.find(b"\0", st_name)
                out.append((strings[st_name: end if end >= 0 else len(strings)].decode("ascii", "replace"), r_offset))
    return out, loads
