"""The compiled kernels a near-duplicate audit calls, run without importing numba.

numba's import and its dispatchers' cache loads were ~0.15 s of every process here, a third of
a small audit and ~14% of a 40k-document one (issue 13), and the machine code they load is
already on disk. Once numba has compiled (or loaded) a kernel for a signature, its object code
is kept in a file of our own beside numba's cache; later processes load that object and call
numba's native entry point through ctypes, which releases the GIL as numba's ``nogil`` does.
On x86-64, when /proc/cpuinfo names the processor the file was compiled on, the object's
relocations are applied by :mod:`.elf` (~1 ms per kernel, no LLVM: a 200-document audit
0.355 -> 0.290 s); otherwise it goes into an LLVM JIT with llvmlite (~0.03 s for its import
and ~40 MB for its library, ~1 ms per kernel) after numba's own processor check.

The entry point takes numba's native calling convention: a pointer for the return value, one
for exception info, then each argument in numba's data model (an array as its meminfo, parent,
size, item size, data pointer, shape and strides; meminfo null, so the reference counts it
would take are no-ops). Symbols only numba's Python wrappers use (which this path never calls)
resolve to ``abort`` until numba's own import registers them.

Anything else goes to numba, as before: a kernel or signature without a file, a file written
for another source, numba, llvmlite, Python or CPU (numba's ``magic_tuple``; with :mod:`.elf`,
/proc/cpuinfo's processor), an argument of a kind not handled here, a kernel that reports an
error (numba then raises it), an object neither loader takes, no llvmlite,
a machine other than 64-bit little-endian ELF (Linux, the BSDs), ``NUMBA_DISABLE_JIT`` set,
or ``DATAAUDIT_NATIVE_KERNELS=0``.
"""

from __future__ import annotations

import ctypes
import hashlib
import importlib
import importlib.util
import json
import os
import sys
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "Kernel",
    "band_keys",
    "component_labels",
    "jaccard_pairs",
    "line_opens",
    "mark_shared",
    "scan_rows",
    "sketch_rows",
    "sort_set_rows",
    "xxh3_64_rows",
    "xxh3_64_rows_from_file",
]

_MAGIC = b"dataaudit-native 2\n"
_LOCK = threading.RLock()
_JIT: list[Any] = []  # [llvmlite.binding, its MCJIT engine], made on first load
_ELF: list[int] = []  # the entry points loaded without LLVM (sketches/elf.py)
_SOURCES: dict[str, str] = {}  # module -> hash of the sources its kernels are compiled from
_SCALARS = {
    "bool": ctypes.c_bool,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
    "uint32": ctypes.c_uint32,
    "float64": ctypes.c_double,
}
_RETURNS = {"int64": ctypes.c_int64, "uint64": ctypes.c_uint64, "float64": ctypes.c_double}
_DTYPES = {np.dtype(t): t for t in ("bool", "int8", "int16", "int32", "int64", "uint8")}
_DTYPES.update({np.dtype(t): t for t in ("uint16", "uint32", "uint64", "float32", "float64")})


def enabled() -> bool:
    """Whether kernels may run from their files here (else numba runs them, as before)."""
    return (
        os.environ.get("DATAAUDIT_NATIVE_KERNELS", "1") != "0"
        and os.environ.get("NUMBA_DISABLE_JIT", "0") in ("", "0")
        and sys.maxsize > 2**32
        and sys.byteorder == "little"
    )


def loaded() -> bool:
    """Whether a kernel already runs from its file in this process (another kernel's file
    costs ~1 ms more, not a loader's start)."""
    return bool(_JIT) or bool(_ELF)


def running() -> bool:
    """Whether the compiled kernels already run in this process, from their files or numba's
    (a MinHash or exact-duplicate rule's): another one then costs next to nothing."""
    return loaded() or "dataaudit.sketches.kernels" in sys.modules


def typeof(value: Any) -> str | None:
    """``repr(numba.typeof(value))`` for the kinds of argument the kernels take (native-order
    numeric arrays, Python and numpy scalars); None for any other."""
    if isinstance(value, np.ndarray):
        name = _DTYPES.get(value.dtype)
        if name is None or not value.dtype.isnative or value.ndim == 0:
            return None
        f = value.flags
        layout = "C" if f.c_contiguous else "F" if f.f_contiguous else "A"
        readonly = not f.writeable
        return f"Array({name}, {value.ndim}, '{layout}', {readonly}, aligned={f.aligned})"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, int):
        return "int64" if -(1 << 63) <= value < 1 << 63 else "uint64" if value < 1 << 64 else None
    if isinstance(value, float):
        return "float64"
    if isinstance(value, np.generic):
        return _DTYPES.get(value.dtype)
    return None


def _source_hash(module: str) -> str:
    """What a kernel's machine code is compiled from: its module's file and the constants'."""
    with _LOCK:
        if module not in _SOURCES:
            spec = importlib.util.find_spec(module)
            here = Path(__file__).resolve().parent
            digest = hashlib.sha256()
            for path in (Path(spec.origin), here / "hashing.py", here / "charsets.py"):
                digest.update(path.read_bytes())
            _SOURCES[module] = digest.hexdigest()
        return _SOURCES[module]


@lru_cache(maxsize=1)
def _host() -> str | None:
    """This machine's processor as /proc/cpuinfo names it (vendor, family, model, its feature
    flags) and its architecture, hashed: the object code numba compiled for one processor is
    loaded without LLVM only on one that names the same (LLVM's own check, ``_magic``, would
    load LLVM). None where there is no /proc/cpuinfo."""
    import platform

    try:
        with open("/proc/cpuinfo", "rb") as f:
            first = f.read().split(b"\n\n", 1)[0]
    except OSError:
        return None
    keys = (b"vendor_id", b"cpu family", b"model", b"model name", b"flags")
    lines = [line for line in first.splitlines() if line.split(b":")[0].strip() in keys]
    if not lines:
        return None
    digest = hashlib.sha256(b"\n".join(lines) + platform.machine().encode())
    return digest.hexdigest()[:24]


_PROCESS: list[Any] = []  # ctypes' handle on the process's own symbols


def _resolve(name: str) -> int:
    """The address of a symbol the process has (libc's, Python's), else :func:`_abort`'s."""
    if not _PROCESS:
        _PROCESS.append(ctypes.CDLL(None))
    try:
        return ctypes.cast(getattr(_PROCESS[0], name), ctypes.c_void_p).value or _abort()
    except AttributeError:
        return _abort()


@lru_cache(maxsize=1)
def _abort() -> int:
    """Where symbols only numba's wrappers call resolve until numba registers its own."""
    return ctypes.cast(ctypes.CDLL(None).abort, ctypes.c_void_p).value


@lru_cache(maxsize=1)
def _versions() -> tuple[str, str, str]:
    """numba's version (its ``_version.py``, which names the release and its commit: read, not
    imported, as importlib.metadata would be, ~0.015 s), llvmlite's and Python's."""
    import llvmlite

    spec = importlib.util.find_spec("numba")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("numba is not installed")
    try:
        stamp = Path(next(iter(spec.submodule_search_locations)), "_version.py").read_bytes()
        numba = hashlib.sha256(stamp).hexdigest()
    except OSError:  # a build without versioneer's file
        from importlib import metadata

        numba = metadata.version("numba")
    return numba, llvmlite.__version__, sys.version


def _jit() -> tuple[Any, Any]:
    with _LOCK:
        if not _JIT:
            import llvmlite.binding as ll

            ll.initialize_native_target()
            ll.initialize_native_asmprinter()
            machine = ll.Target.from_default_triple().create_target_machine(jit=True)
            _JIT.extend([ll, ll.create_mcjit_compiler(ll.parse_assembly(""), machine)])
        return _JIT[0], _JIT[1]


def _magic() -> list[Any]:
    """numba's ``magic_tuple`` for this process, as numba computes it (no CPU override)."""
    ll, _ = _jit()
    return [ll.get_process_triple(), ll.get_host_cpu_name(), ll.get_host_cpu_features().flatten()]


def undefined_symbols(obj: bytes) -> list[str]:
    """Names of the undefined symbols of an ELF64 little-endian relocatable object (any
    machine: LLVM's linker takes them all); ValueError if it is not one."""
    from .elf import sections, symbols

    return [name for name, shndx, _, _ in symbols(obj, sections(obj)) if shndx == 0 and name]


class _Native:
    """A kernel's entry point for one signature, called with ctypes."""

    def __init__(self, address: int, args: list[str], returns: str):
        self.arrays = [a.startswith("Array(") for a in args]
        types: list[Any] = [ctypes.c_void_p, ctypes.c_void_p]
        for arg, array in zip(args, self.arrays, strict=True):
            if array:
                ndim = int(arg.split(",")[1])
                types += [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
                types += [ctypes.c_void_p] + [ctypes.c_int64] * (2 * ndim)
            else:
                types.append(_SCALARS[arg])
        self.returns = returns
        # room for the return value: an array's struct is 5 words, then its shape and strides
        # (a 2-d array's 72 bytes overran a fixed 64-byte buffer); scalars take one word
        ndim = int(returns.split(",")[1]) if returns.startswith("Array(") else 0
        self.size = 8 * (5 + 2 * ndim)
        self.call = ctypes.CFUNCTYPE(ctypes.c_int32, *types)(address)

    def __call__(self, args: tuple[Any, ...]) -> tuple[bool, Any]:
        flat: list[Any] = []
        for value, array in zip(args, self.arrays, strict=True):
            if array:
                flat += [None, None, value.size, value.itemsize, value.ctypes.data]
                flat += [*value.shape, *value.strides]
            else:
                flat.append(value.item() if isinstance(value, np.generic) else value)
        out = ctypes.create_string_buffer(self.size)
        error = ctypes.c_void_p()
        if self.call(ctypes.addressof(out), ctypes.addressof(error), *flat) != 0:
            return False, None
        if self.returns == "none":
            return True, None
        if self.returns in _RETURNS:
            return True, _RETURNS[self.returns].from_buffer(out).value
        # an array the kernel was given (``return out``): the one with its data and shape
        data, n = ctypes.c_void_p.from_buffer(out, 32).value, ctypes.c_int64.from_buffer(out, 16)
        for value, array in zip(args, self.arrays, strict=True):
            if array and value.ctypes.data == data and value.size == n.value:
                return True, value
        return False, None


class Kernel:
    """``module.name``, a numba kernel, called through its cached machine code when a file of
    it is there for these arguments' types, else through numba (which then writes the file)."""

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name
        self._loaded: dict[tuple[str, ...], _Native | None] = {}
        self._exported: set[tuple[str, ...]] = set()  # by this process: once per signature
        self._no_elf: set[tuple[str, ...]] = set()  # asked for without LLVM, not loadable so

    def __repr__(self) -> str:
        return f"<native kernel {self.module}.{self.name}>"

    def __call__(self, *args: Any) -> Any:
        types = tuple(typeof(a) for a in args) if enabled() else (None,)
        native = None
        if None not in types:
            native = self._loaded.get(types)  # type: ignore[arg-type]
            if native is None and types not in self._loaded:
                native = self._load(types)  # type: ignore[arg-type]
        if native is not None:
            done, result = native(args)
            if done:
                return result
        dispatcher = getattr(importlib.import_module(self.module), self.name)
        result = dispatcher(*args)
        if native is None and None not in types and types not in self._exported:
            self._exported.add(types)  # type: ignore[arg-type]
            self._export(dispatcher, types)  # type: ignore[arg-type]
        return result

    def from_file(self, *args: Any, llvm: bool = True) -> tuple[bool, Any]:
        """(True, the result) if the kernel ran from its file; (False, None) if it has none
        for these arguments, or reported an error: never numba (for a caller that has a way
        of its own and must not wait for numba's import or compiler). ``llvm=False``: only
        if :mod:`.elf` loads it (~1 ms), not llvmlite (~0.03 s); a refusal is not kept, so
        a later call may still load it with llvmlite."""
        types = tuple(typeof(a) for a in args) if enabled() else (None,)
        if None in types:
            return False, None
        native = self._loaded.get(types)  # type: ignore[arg-type]
        tried = not llvm and types in self._no_elf
        if native is None and types not in self._loaded and not tried:
            native = self._load(types, llvm)  # type: ignore[arg-type]
            if native is None and not llvm:
                self._no_elf.add(types)  # type: ignore[arg-type]
        return (False, None) if native is None else native(args)

    def _path(self, types: tuple[str, ...]) -> Path | None:
        from .._cache import cache_file

        try:
            key = repr((self.module, self.name, types, _source_hash(self.module), _versions()))
        except Exception:  # noqa: BLE001 - no numba or llvmlite installed, an unreadable source
            return None
        digest = hashlib.sha256(key.encode()).hexdigest()[:24]
        return cache_file(Path(__file__).resolve().parent, f"{self.name}-{digest}.native")

    def _load(self, types: tuple[str, ...], llvm: bool = True) -> _Native | None:
        with _LOCK:  # one load per signature, whichever thread asks first
            if types in self._loaded:
                return self._loaded[types]
            native = None
            try:
                path = self._path(types)
                if path is not None and path.is_file():
                    native = self._read(path.read_bytes(), types, llvm)
            except Exception:  # noqa: BLE001 - a damaged or foreign file: numba's way
                native = None
            if native is not None or llvm:
                self._loaded[types] = native
            return native

    def _read(self, blob: bytes, types: tuple[str, ...], llvm: bool = True) -> _Native | None:
        if not blob.startswith(_MAGIC):
            return None
        end = blob.index(b"\n", len(_MAGIC))
        head = json.loads(blob[len(_MAGIC) : end])
        obj = blob[end + 1 :]
        if tuple(head["args"]) != types or len(obj) != head["size"]:
            return None
        if head.get("host") is not None and head["host"] == _host():
            from .elf import load

            try:  # without LLVM: the object's relocations applied here
                address = load(obj, head["symbol"], _resolve)
            except Exception:  # noqa: BLE001 - refused (another kind of object): LLVM's way
                address = 0
            if address:
                _ELF.append(address)
                return _Native(address, head["args"], head["returns"])
        if not llvm or head["magic"] != _magic():
            return None
        ll, engine = _jit()
        with _LOCK:
            for symbol in undefined_symbols(obj):
                if not ll.address_of_symbol(symbol):
                    ll.add_symbol(symbol, _abort())
            engine.add_object_file(ll.ObjectFileRef.from_data(obj))
            engine.finalize_object()
            address = engine.get_function_address(head["symbol"])
        if not address:
            return None
        return _Native(address, head["args"], head["returns"])

    def _export(self, dispatcher: Any, types: tuple[str, ...]) -> None:
        """The object code numba cached for this signature, into this kernel's file."""
        try:
            sig = next(s for s in dispatcher.overloads if tuple(map(repr, s)) == types)
            cres = dispatcher.overloads[sig]
            returns = repr(cres.signature.return_type)
            if returns != "none" and returns not in _RETURNS and not returns.startswith("Array("):
                return
            codegen = cres.target_context.codegen()
            cache = dispatcher._cache
            data = cache._cache_file.load(cache._index_key(sig, codegen))
            name, kind, (obj, *_) = data[0]
            if kind != "object" or list(codegen.magic_tuple()) != _magic():
                return
            undefined_symbols(obj)  # an ELF object: the only kind loaded here
            head = {
                "args": list(types),
                "returns": returns,
                "symbol": cres.fndesc.llvm_func_name,
                "magic": _magic(),
                "host": _host(),
                "size": len(obj),
            }
            path = self._path(types)
        except Exception:  # noqa: BLE001 - numba's internals moved: numba's way, every time
            return
        if path is None:
            return
        from .._cache import write_quietly

        blob = _MAGIC + json.dumps(head).encode() + b"\n" + obj
        write_quietly(path, lambda f: f.write(blob))


_KERNELS = "dataaudit.sketches.kernels"
scan_rows = Kernel(_KERNELS, "scan_rows")
sketch_rows = Kernel(_KERNELS, "sketch_rows")
band_keys = Kernel(_KERNELS, "band_keys")
component_labels = Kernel(_KERNELS, "component_labels")
jaccard_pairs = Kernel(_KERNELS, "jaccard_pairs")
sort_set_rows = Kernel(_KERNELS, "sort_set_rows")
mark_shared = Kernel(_KERNELS, "mark_shared")
line_opens = Kernel(_KERNELS, "line_opens")
_xxh3_rows = Kernel("dataaudit.sketches.xxh3", "_rows")


def _xxh3_args(offsets: np.ndarray, data: np.ndarray) -> tuple:
    """The kernel's arguments: the rows, their output and its scratch (the kernels allocate
    nothing, see the kernels module's docstring)."""
    out = np.empty(len(offsets) - 1, np.uint64)
    return data, np.asarray(offsets, np.int64), out, np.empty(8, np.uint64)


def xxh3_64_rows(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """``xxhash.xxh3_64_intdigest(data[offsets[i]:offsets[i + 1]])`` for every row, as uint64
    (``offsets``: int64, one more than the rows; ``data``: uint8)."""
    args = _xxh3_args(offsets, data)
    if len(args[2]):
        _xxh3_rows(*args)
    return args[2]


def xxh3_64_rows_from_file(offsets: np.ndarray, data: np.ndarray) -> np.ndarray | None:
    """:func:`xxh3_64_rows` if its kernel loads from its file without LLVM or numba (see
    :meth:`Kernel.from_file`), else None."""
    args = _xxh3_args(offsets, data)
    if len(args[2]) and not _xxh3_rows.from_file(*args, llvm=False)[0]:
        return None
    return args[2]
