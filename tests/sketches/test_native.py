"""sketches/native.py: the kernels a DUP002 audit runs, called from numba's machine code without
importing numba, as numba runs them (the same outputs), and numba's way whenever the file is
missing, damaged, foreign, or the kernel reports an error."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dataaudit import _cache
from dataaudit.sketches import native

KERNELS = "dataaudit.sketches.kernels"


@pytest.fixture
def files(tmp_path, monkeypatch):
    """The kernels' files in an empty folder of this test's own."""
    monkeypatch.setattr(_cache, "cache_file", lambda beside, name: tmp_path / name)
    return tmp_path


def test_types_are_numbas():
    numba = pytest.importorskip("numba")
    grid = np.zeros((4, 6), np.uint32)
    values = [
        np.zeros(3, np.uint8),
        np.frombuffer(b"abcdefgh", np.uint8),  # read-only
        grid,
        grid[:, :3],  # neither C nor F
        np.asfortranarray(grid),
        np.zeros(5, bool),
        np.arange(4, dtype=np.int64)[::2],
        np.zeros(2, np.float64),
        5,
        -(2**63),
        2**63,
        1.5,
        True,
        np.bool_(False),
        np.uint64(3),
        np.uint32(7),
        np.int64(-1),
        np.float64(0.5),
    ]
    for value in values:
        assert native.typeof(value) == repr(numba.typeof(value)), value
    for value in ("text", [1], np.zeros(2, ">u8"), np.zeros(2, object), np.array(1.0)):
        assert native.typeof(value) is None


def _band_inputs():
    rng = np.random.default_rng(5)
    sig = rng.integers(0, 2**32, (300, 16), dtype=np.uint64).astype(np.uint32)
    return sig, np.arange(0, 300, 3, dtype=np.int64)


def test_a_kernel_runs_from_its_file_as_numba_runs_it(files):
    sig, idx = _band_inputs()
    first = native.Kernel(KERNELS, "band_keys")
    want = first(sig, idx, 4, 4, np.empty((len(idx), 2), np.uint64))  # numba's way
    assert [p.name.split("-")[0] for p in files.iterdir()] == ["band_keys"]
    again = native.Kernel(KERNELS, "band_keys")  # as a later process: from the file
    out = np.empty((len(idx), 2), np.uint64)
    got = again(sig, idx, 4, 4, out)
    assert got is out and got.tolist() == want.tolist()
    assert [v is not None for v in again._loaded.values()] == [True]


def test_a_scalar_result_comes_back(files):
    from dataaudit.sketches import kernels

    offsets = np.array([0, 3, 6, 8], np.int64)
    values = np.array([1, 2, 3, 1, 2, 4, 1, 3], np.uint32)
    a, b = np.array([0, 0, 1], np.int64), np.array([1, 2, 2], np.int64)
    args = (offsets, values, a, b, np.zeros((3, 0), np.uint32), 0.5, 4.0, np.uint32(2**32 - 1))
    want = np.empty(3)
    merged = kernels.jaccard_pairs(*args, want)
    native.Kernel(KERNELS, "jaccard_pairs")(*args, np.empty(3))  # writes the file
    again = native.Kernel(KERNELS, "jaccard_pairs")
    out = np.empty(3)
    assert again(*args, out) == merged == 3 and out.tolist() == want.tolist()
    assert list(again._loaded.values())[0] is not None


@pytest.mark.parametrize("damage", ["garbage", "another cpu", "cut short"])
def test_a_file_that_does_not_fit_is_numbas_way_and_rewritten(files, damage):
    sig, idx = _band_inputs()
    want = native.Kernel(KERNELS, "band_keys")(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    (path,) = files.iterdir()
    blob = path.read_bytes()
    if damage == "garbage":
        path.write_bytes(b"not a kernel")
    elif damage == "another cpu":  # both names of the processor: LLVM's and /proc/cpuinfo's
        other = blob.replace(native._magic()[1].encode(), b"othercpu", 1)
        path.write_bytes(other.replace(native._host().encode(), b"another processor", 1))
    else:
        path.write_bytes(blob[:-100])
    again = native.Kernel(KERNELS, "band_keys")
    got = again(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    assert got.tolist() == want.tolist()
    assert list(again._loaded.values()) == [None]  # numba ran it
    assert path.read_bytes() == blob  # and the file is whole again


def test_an_argument_of_another_kind_goes_to_numba(files):
    values = np.array([1 + 2j, 3 - 1j])  # complex: numba's, not this module's
    k = native.Kernel("tests.sketches._native_probe", "total")
    assert k(values) == 4 + 1j and k._loaded == {} and list(files.iterdir()) == []


def test_an_error_the_kernel_reports_is_raised_by_numba(files):
    probe = "tests.sketches._native_probe"
    assert native.Kernel(probe, "doubled")(21) == 42  # numba's way; writes the file
    again = native.Kernel(probe, "doubled")
    assert again(21) == 42 and list(again._loaded.values())[0] is not None
    with pytest.raises(ValueError, match="negative"):
        again(-1)


def test_undefined_symbols_of_an_object():
    with pytest.raises(ValueError):
        native.undefined_symbols(b"MZ not an ELF object")


@pytest.mark.parametrize("setting", ["DATAAUDIT_NATIVE_KERNELS=0", "NUMBA_DISABLE_JIT=1"])
def test_the_files_can_be_left_to_numba(files, monkeypatch, setting):
    name, value = setting.split("=")
    sig, idx = _band_inputs()
    want = native.Kernel(KERNELS, "band_keys")(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    monkeypatch.setenv(name, value)
    assert not native.enabled()
    again = native.Kernel(KERNELS, "band_keys")
    got = again(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    assert got.tolist() == want.tolist() and again._loaded == {}


def test_the_files_are_keyed_by_numbas_release_file_without_importlib_metadata(
    monkeypatch, tmp_path
):
    """numba's ``_version.py`` (its release and commit) keys the files; read, not imported. A
    numba without that file is keyed by its version from its metadata."""
    import hashlib
    import importlib.util
    import types
    from importlib import metadata

    real = importlib.util.find_spec("numba")
    here = next(iter(real.submodule_search_locations))
    native._versions.cache_clear()
    try:
        version, llvm, python = native._versions()
        expected = hashlib.sha256((Path(here) / "_version.py").read_bytes())
        assert version == expected.hexdigest() and python == __import__("sys").version
        native._versions.cache_clear()
        elsewhere = types.SimpleNamespace(submodule_search_locations=[str(tmp_path)])
        monkeypatch.setattr(importlib.util, "find_spec", lambda name: elsewhere)
        assert native._versions()[0] == metadata.version("numba")
    finally:
        native._versions.cache_clear()


def test_the_return_value_has_room_for_an_arrays_shape_and_strides():
    """numba returns an array as its struct: five words, then ndim shape and ndim stride words
    (a 2-d array's 72 bytes overran the 64-byte buffer of the first version: heap corruption,
    then a crash in a later call)."""
    two_d = "Array(uint64, 2, 'C', False, aligned=True)"
    assert native._Native(1, [two_d], two_d).size == 72
    assert native._Native(1, ["int64"], "int64").size >= 8


def test_a_kernel_loads_without_llvm_on_the_processor_it_was_compiled_for(files, monkeypatch):
    """The object's relocations are applied by sketches/elf.py when /proc/cpuinfo names the
    processor numba compiled for; on another, LLVM's loader checks numba's own processor
    names (this one's: it still loads)."""
    if native._host() is None or __import__("platform").machine() != "x86_64":
        pytest.skip("elf.py loads x86-64 objects, on a machine with /proc/cpuinfo")
    sig, idx = _band_inputs()
    want = native.Kernel(KERNELS, "band_keys")(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    before = len(native._ELF)
    again = native.Kernel(KERNELS, "band_keys")
    got = again(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    assert got.tolist() == want.tolist() and len(native._ELF) == before + 1
    monkeypatch.setattr(native, "_host", lambda: "another processor")
    third = native.Kernel(KERNELS, "band_keys")
    assert third(sig, idx, 0, 8, np.empty((100, 1), np.uint64)).tolist() == want.tolist()
    assert len(native._ELF) == before + 1 and [v is not None for v in third._loaded.values()] == [
        True
    ]  # LLVM's way


def test_the_elf_loader_refuses_what_it_does_not_handle():
    from dataaudit.sketches import elf

    with pytest.raises(Exception, match="ELF64"):
        elf.load(b"MZ not an ELF object", "f", lambda name: 0)
    arm = bytearray(b"\x7fELF\x02\x01" + bytes(58))
    arm[0x10:0x14] = (1).to_bytes(2, "little") + (183).to_bytes(2, "little")  # aarch64
    with pytest.raises(Exception, match="x86-64"):
        elf.load(bytes(arm), "f", lambda name: 0)


def test_an_object_with_another_relocation_kind_is_left_to_llvm(files):
    """elf.py applies numba's absolute 64-bit relocations only; an object with another kind is
    refused (native.py then loads it with llvmlite)."""
    import struct

    from dataaudit.sketches import elf

    if __import__("platform").machine() != "x86_64":
        pytest.skip("elf.py loads x86-64 objects")
    sig, idx = _band_inputs()
    native.Kernel(KERNELS, "band_keys")(sig, idx, 0, 8, np.empty((100, 1), np.uint64))
    (path,) = files.iterdir()
    blob = path.read_bytes()
    end = blob.index(b"\n", len(native._MAGIC))
    head = __import__("json").loads(blob[len(native._MAGIC) : end])
    obj = bytearray(blob[end + 1 :])
    assert elf.load(bytes(obj), head["symbol"], native._resolve)  # loads as it is
    sections = elf.sections(bytes(obj))
    rela = next(s for s in sections if s[0] == ".rela.ltext")
    (info,) = struct.unpack_from("<Q", obj, rela[3] + 8)
    struct.pack_into("<Q", obj, rela[3] + 8, (info & ~0xFFFFFFFF) | 2)  # R_X86_64_PC32
    with pytest.raises(Exception, match="relocation type 2"):
        elf.load(bytes(obj), head["symbol"], native._resolve)
