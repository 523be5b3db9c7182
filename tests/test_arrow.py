"""The Arrow <-> numpy helpers have one home, dataaudit/_arrow.py, that every layer may import."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from dataaudit import _arrow
from tests._fresh import run_python
from tests.rules.test_layering import PACKAGE, imported_modules, module_name


def test_the_helpers_import_nothing_of_dataaudit():
    """Both Arrow homes are top level: ``_arrow`` imports only ``_compute`` (and its names:
    the kernels without pyarrow.compute's import), which imports nothing of dataaudit."""
    found = {}
    for name in ("_arrow.py", "_compute.py"):
        path = PACKAGE / name
        names = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
        ours = (n for n in names if n.startswith("dataaudit"))
        found[name] = sorted(n for n in ours if n.split(".")[:2] != ["dataaudit", "_compute"])
    assert found == {"_arrow.py": [], "_compute.py": []}


def test_the_sketches_do_not_import_the_features():
    files = sorted((PACKAGE / "sketches").rglob("*.py"))
    assert len(files) > 5
    bad = {}
    for path in files:
        names = imported_modules(path.read_text(encoding="utf-8"), module_name(path))
        bad[path.name] = sorted(n for n in names if n.startswith("dataaudit.features"))
    assert {k: v for k, v in bad.items() if v} == {}


def test_string_array_is_the_inverse_of_string_parts():
    texts = ["ab", None, "", "Straße", "日本"]
    for kind in (pa.string(), pa.large_string(), pa.binary(), pa.large_binary()):
        arr = (
            _arrow.strings(texts, kind)
            if "string" in str(kind)
            else pa.array([None if t is None else t.encode() for t in texts], kind)
        )
        sliced = arr.slice(1, 4)
        offsets, data = _arrow.string_parts(sliced)
        large = "large" in str(kind)
        back = _arrow.string_array(
            offsets.astype(np.int64 if large else np.int32), data, kind, _arrow.validity(sliced)
        )
        assert back.type == kind and back.equals(sliced), kind
    assert _arrow.string_array(np.zeros(1, np.int64), b"").equals(pa.array([], pa.large_string()))


def test_string_array_refuses_what_it_cannot_build():
    with pytest.raises(TypeError, match="int32"):
        _arrow.string_array(np.array([0, 2], np.int64), b"ab", pa.string())
    with pytest.raises(TypeError, match="not int64"):
        _arrow.string_array(np.array([0, 2], np.int64), b"ab", pa.int64())
    with pytest.raises(TypeError, match="non-empty"):
        _arrow.string_array(np.zeros(0, np.int64), b"")


def test_nulls_to_sets_the_null_rows_in_place():
    arr = pa.array([1, None, 3, None, 5], pa.int64()).slice(1)
    values = np.arange(4)
    assert _arrow.nulls_to(values, arr, -1) is values
    assert values.tolist() == [-1, 1, -1, 3]
    assert _arrow.nulls_to(np.arange(3), pa.array([1, 2, 3]), -1).tolist() == [0, 1, 2]
    assert _arrow.nulls_to(np.arange(2), pa.nulls(2), 9).tolist() == [9, 9]
    chunked = pa.chunked_array([pa.array([None, "a"]), pa.array(["b", None])])
    assert _arrow.nulls_to(np.zeros(4), chunked, 1.0).tolist() == [1, 0, 0, 1]


def test_one_chunk():
    arr = pa.array([1, 2, 3])
    assert _arrow.one_chunk(arr) is arr
    single = pa.chunked_array([arr])
    assert _arrow.one_chunk(single).equals(arr)
    assert _arrow.one_chunk(single).buffers()[1].address == arr.buffers()[1].address  # no copy
    assert _arrow.one_chunk(pa.chunked_array([arr, arr.slice(1)])).to_pylist() == [1, 2, 3, 2, 3]
    none = _arrow.one_chunk(pa.chunked_array([], pa.large_string()))
    assert none.equals(pa.array([], pa.large_string())) and none.type == pa.large_string()


def test_no_chunks_do_not_import_pandas():
    pytest.importorskip("pandas")
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from dataaudit._arrow import one_chunk, take, validity\n"
        "empty = pa.chunked_array([], pa.large_string())\n"
        "print(len(one_chunk(empty)), validity(empty), len(take(empty, [])), 'pandas' in sys.modules)\n"
    )
    assert run_python(code) == "0 None 0 False"
