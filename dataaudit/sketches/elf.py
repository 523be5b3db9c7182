"""Load a kernel's relocatable object (x86-64 ELF, numba's large code model) into memory.

numba compiles each kernel to an object file whose code reaches everything it uses through
absolute 64-bit relocations (``R_X86_64_64``; its unwind tables add PC-relative ones, which are
not loaded: nothing unwinds through a kernel), plus common symbols (numba's environment).
Applying those takes a few dozen lines, where LLVM's JIT linker (llvmlite) costs every process
~0.03 s and ~40 MB to load its 180 MB library. An object with anything else (another machine,
another relocation or section kind) is refused, and :mod:`.native` loads it with llvmlite.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from collections.abc import Callable

__all__ = ["load", "sections", "symbols"]

_SHF_ALLOC, _SHF_EXEC = 0x2, 0x4
_SHT_PROGBITS, _SHT_SYMTAB, _SHT_RELA, _SHT_NOBITS = 1, 2, 4, 8
_SHN_UNDEF, _SHN_ABS, _SHN_COMMON = 0, 0xFFF1, 0xFFF2
_R_X86_64_64 = 1
_EM_X86_64 = 62
_PAGE = mmap.PAGESIZE

#: the memory of every object loaded: kernels live as long as the process
_KEPT: list[mmap.mmap] = []


class _Refused(ValueError):
    """Something this loader does not handle: llvmlite loads the object instead."""


def _name(obj: bytes, at: int) -> str:
    return obj[at : obj.index(b"\0", at)].decode()


def _elf64(obj: bytes) -> None:
    if obj[:4] != b"\x7fELF" or obj[4] != 2 or obj[5] != 1:
        raise _Refused("not an ELF64 little-endian object")


def sections(obj: bytes) -> list[tuple]:
    """(name, kind, flags, offset, size, link, info, alignment, entry size) of each section of
    an ELF64 little-endian object (any machine)."""
    _elf64(obj)
    (shoff,) = struct.unpack_from("<Q", obj, 0x28)
    entsize, count, names = struct.unpack_from("<HHH", obj, 0x3A)
    raw = [struct.unpack_from("<IIQQQQIIQQ", obj, shoff + i * entsize) for i in range(count)]
    strings = raw[names][4]
    out = []
    for name, kind, flags, _, offset, size, link, info, align, ent in raw:
        out.append(
            (_name(obj, strings + name), kind, flags, offset, size, link, info, max(align, 1), ent)
        )
    return out


def symbols(obj: bytes, parts: list[tuple]) -> list[tuple[str, int, int, int]]:
    """(name, section index, value, size) of each entry of the object's symbol table (its
    ``sections``)."""
    symtab = next((s for s in parts if s[1] == _SHT_SYMTAB), None)
    if symtab is None:
        raise _Refused("no symbol table")
    _, _, _, offset, length, link, _, _, ent = symtab
    strings = parts[link][3]
    out = []
    for k in range(length // ent):
        name_at, _, _, shndx, value, size = struct.unpack_from("<IBBHQQ", obj, offset + k * ent)
        out.append((_name(obj, strings + name_at), shndx, value, size))
    return out


def _layout(parts: list[tuple]) -> tuple[dict[int, int], int, int]:
    """Offsets of the loaded sections in one mapping: executable ones first, then the others
    from a fresh page (so the code's pages can be made read-only and executable)."""
    where: dict[int, int] = {}
    at = 0
    for executable in (True, False):
        if not executable:
            at = -(-at // _PAGE) * _PAGE
            code_end = at
        for i, (name, kind, flags, _, size, _, _, align, _) in enumerate(parts):
            if not flags & _SHF_ALLOC or name.startswith(".eh_frame"):
                continue
            if bool(flags & _SHF_EXEC) != executable:
                continue
            if kind not in (_SHT_PROGBITS, _SHT_NOBITS):
                raise _Refused(f"section {name} of kind {kind}")
            at = -(-at // align) * align
            where[i] = at
            at += size
    return where, code_end, max(at, 1)


def load(obj: bytes, symbol: str, resolve: Callable[[str], int]) -> int:
    """The address of ``symbol`` in ``obj`` loaded into executable memory, its relocations
    applied (``resolve``: the address of a symbol the object does not define). Raises
    ``_Refused`` (an Exception) for an object it does not handle."""
    _elf64(obj)
    kind, machine = struct.unpack_from("<HH", obj, 0x10)
    if kind != 1 or machine != _EM_X86_64:  # ET_REL on x86-64
        raise _Refused("not an x86-64 relocatable object")
    parts = sections(obj)
    where, code_end, size = _layout(parts)
    table = symbols(obj, parts)
    common: dict[int, int] = {}  # symbol -> its offset: common variables (numba's environment)
    for k, (_, shndx, value, bytes_) in enumerate(table):
        if shndx == _SHN_COMMON:  # value: its alignment
            size = -(-size // max(value, 1)) * max(value, 1)
            common[k] = size
            size += bytes_
    flags = mmap.MAP_PRIVATE | getattr(mmap, "MAP_ANONYMOUS", 0x20)
    memory = mmap.mmap(-1, -(-size // _PAGE) * _PAGE, flags=flags)
    base = ctypes.addressof(ctypes.c_char.from_buffer(memory))
    for i, at in where.items():
        _, kind, _, offset, length, *_ = parts[i]
        if kind == _SHT_PROGBITS:
            memory[at : at + length] = obj[offset : offset + length]
    addresses: list[int | None] = []
    found = None
    for k, (name, shndx, value, _) in enumerate(table):
        if shndx == _SHN_UNDEF:
            addresses.append(resolve(name) if name else 0)
        elif shndx == _SHN_ABS:
            addresses.append(value)
        elif k in common:
            addresses.append(base + common[k])
        elif shndx in where:
            addresses.append(base + where[shndx] + value)
        else:
            addresses.append(None)  # in a section not loaded (unwind tables)
        if name == symbol and shndx in where:
            found = addresses[-1]
    if found is None:
        raise _Refused(f"{symbol} is not defined in a loaded section")
    for _, kind, _, offset, length, _, target, _, ent in parts:
        if kind != _SHT_RELA or target not in where:
            continue
        for k in range(length // ent):
            r_offset, r_info, addend = struct.unpack_from("<QQq", obj, offset + k * ent)
            s = addresses[r_info >> 32]
            if s is None:
                raise _Refused("a relocation against a section not loaded")
            at = where[target] + r_offset
            kind_ = r_info & 0xFFFFFFFF
            if kind_ != _R_X86_64_64:  # the only kind in numba's code (PC-relative ones are
                # in the unwind tables, not loaded): anything else goes to LLVM's linker
                raise _Refused(f"relocation type {kind_}")
            struct.pack_into("<Q", memory, at, (s + addend) & 0xFFFFFFFFFFFFFFFF)
    if code_end:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if libc.mprotect(base, code_end, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
            raise _Refused(f"mprotect failed (errno {ctypes.get_errno()})")
    _KEPT.append(memory)
    return found
