"""Read the dynamic section of an ELF shared object: SONAME, NEEDED, RPATH, RUNPATH.

Pure Python (``struct``), reads at most the headers and the dynamic string table, never loads
the file. Layout per the System V gABI ("Dynamic Section") and glibc's ``elf.h``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

DT_NULL, DT_NEEDED, DT_STRTAB, DT_STRSZ, DT_SONAME, DT_RPATH, DT_RUNPATH = 0, 1, 5, 10, 14, 15, 29
PT_LOAD, PT_DYNAMIC = 1, 2
_MAX_DYN = 4096  # dynamic entries read at most
_STRING_CHUNK = 256  # bytes read at a time for one string of the dynamic string table
_MAX_STRING = 64 << 10  # longest string read (a RUNPATH of many directories fits)


class NotElf(ValueError):
    """The file is not a readable ELF shared object (raised by :func:`read_dynamic`)."""


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
    with open(path, "rb") as fh:
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
        fh.seek(phoff)
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
        fh.seek(dyn[0])
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
        limit = min(strsz, 16 << 20)

        # Only the strings the entries point at are read (a framework's .dynstr holds every C++
        # symbol name: 10+ MB for TensorFlow, 10 ms to read whole).
        def s(idx: int) -> str:
            if idx >= limit:
                return ""
            fh.seek(str_off + idx)
            raw = b""
            while len(raw) < min(_MAX_STRING, limit - idx):
                chunk = fh.read(min(_STRING_CHUNK, limit - idx - len(raw)))
                if not chunk:
                    break
                raw += chunk
                stop = raw.find(b"\0")
                if stop >= 0:
                    return raw[:stop].decode("utf-8", "replace")
            return raw.decode("utf-8", "replace")

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
