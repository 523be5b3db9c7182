"""dataaudit._compute's kernels give what pyarrow.compute's wrappers give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from dataaudit import _compute
from tests._fresh import run_python

TEXT = pa.chunked_array(
    [["a\\b", 'say "hi"', None, ""], ["x,y", "line\nbreak", "ünï", None]], pa.large_string()
)


@pytest.mark.parametrize("positions", [np.array([3, 0, 5]), [3, 0, 5], pa.array([3, 0, 5])])
def test_take_is_pyarrows_for_every_kind_of_positions(positions):
    table = pa.table({"t": TEXT, "n": pa.chunked_array([[1, 2, 3, 4], [5, 6, 7, 8]])})
    want = pc.take(table, pa.array([3, 0, 5]))
    assert _compute.take(table, positions).equals(want)
    assert _compute.take(TEXT, positions).equals(pc.take(TEXT, pa.array([3, 0, 5])))
    with pytest.raises(IndexError):
        _compute.take(TEXT, [8])  # bounds checked, as pc.take


def test_cast_is_pyarrows_safe_cast():
    ints = pa.array([1, None, 300])
    assert _compute.cast(ints, pa.large_string()).equals(pc.cast(ints, pa.large_string()))
    assert _compute.cast(TEXT, pa.large_string()) is TEXT  # already that type
    with pytest.raises(pa.ArrowInvalid):
        _compute.cast(ints, pa.uint8())  # 300 overflows: safe, as pc.cast


def test_the_string_kernels_are_pyarrows():
    splits = pa.array(["train", "test"], pa.string())
    names = pa.array(["test", None, "val", "train"], pa.string())
    assert _compute.is_in_positions(names, splits).equals(pc.index_in(names, value_set=splits))
    assert _compute.slice_codeunits(TEXT, 0, 3).equals(pc.utf8_slice_codeunits(TEXT, 0, 3))
    assert _compute.replace_substring(TEXT, '"', '""').equals(pc.replace_substring(TEXT, '"', '""'))
    assert _compute.matches_regex(TEXT, '^$|[,"\r\n]').equals(
        pc.match_substring_regex(TEXT, '^$|[,"\r\n]')
    )
    empty = pa.scalar("-", pa.large_string())
    assert _compute.call("coalesce", TEXT, empty).equals(pc.fill_null(TEXT, empty))


def test_the_kernels_do_not_import_pyarrow_compute_until_pc_is_used():
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from dataaudit import _compute\n"
        "from dataaudit._arrow import strings\n"  # pa.array of a list imports pyarrow.compute
        "t = pa.Table.from_arrays([strings(['x', 'yy', None])], names=['a'])\n"
        "_compute.take(t, [2, 0]); _compute.cast(t['a'], pa.large_string())\n"
        "_compute.call('utf8_length', t['a'])\n"
        "before = 'pyarrow.compute' in sys.modules\n"
        "n = _compute.pc.utf8_length(t['a'])\n"
        "print(before, 'pyarrow.compute' in sys.modules, n.to_pylist())\n"
    )
    assert run_python(code) == "False True [1, 2, None]"
