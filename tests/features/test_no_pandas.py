"""The reading and feature paths never import pandas.

pyarrow imports pandas (0.25-0.7 s of a process) on its first ``pa.array``, ``pa.scalar`` or
compute call given a Python scalar when pandas is installed; dataaudit builds those arrays from
buffers instead (``dataaudit/_arrow.py``). Each check runs in a fresh process.
"""

from __future__ import annotations

import json

import pytest

from dataaudit._arrow import mask_array, nulls_like, numeric_array, strings
from tests._fresh import run_python

pytest.importorskip("pandas")

_CHATS = [
    {
        "id": f"c{i}",
        "messages": [
            {"role": "user", "content": text},
            {"role": "assistant", "content": f"Ｒｅｐｌｙ {i}: Straße ﬁne e\u0301"},
        ],
    }
    for i, text in enumerate(["Hello there", "Ünïcödé  text", "日本語のテキストです", "x"] * 20)
]


def test_chat_jsonl_read_features_and_flags_do_not_import_pandas(tmp_path):
    """A chat JSON Lines file (nested records: its first record is not peeked, its first batch
    types the columns), its content hash, its text views, normalized and tokenizable text on non-ASCII rows with
    nulls, and flag columns compacted: pandas stays out. (A split's later files are still
    peeked by their first record, which ``pa.array`` types.)"""
    folder = tmp_path / "train.jsonl"
    folder.write_text("".join(json.dumps(r) + "\n" for r in _CHATS))
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from dataaudit.corpus import load_corpus\n"
        "from dataaudit.features import Batch\n"
        "from dataaudit._arrow import strings\n"
        "from dataaudit.identity import row_hashes\n"
        "from dataaudit.rule import Flags\n"
        f"corpus = load_corpus({str(folder)!r})\n"
        "rows = 0\n"
        "for split, rb in corpus.stream(32):\n"
        "    b = Batch(split, rb, rows, corpus.roles)\n"
        "    rows += rb.num_rows\n"
        "    for name in ('text', 'input_text', 'response_text', 'normalized', 'token_text',\n"
        "                 'char_length', 'blank'):\n"
        "        b.feature(name)\n"
        "    b.feature('normalized', view='response_text')\n"
        "    row_hashes(rb)  # the content hash of nested cells\n"
        "mixed = strings(['Ｆｕｌｌ，', None, 'ÉCOLE  Straße', 'ﬁ e\\u0301', 'plain'])\n"
        "nb = Batch('train', pa.RecordBatch.from_arrays([mixed], ['text']), 0, corpus.roles)\n"
        "from dataaudit.inputs.roles import Roles\n"
        "nb = Batch('train', nb.data, 0, Roles(text='text'))\n"
        "got = nb.feature('normalized').to_pylist()\n"
        "flags = Flags()\n"
        "flags.add('train', [0, 1, 2], detail=['a', 'b', None], id=['x', 'y', 'z'])\n"
        "flags.compact()\n"
        "print(rows, got, 'pandas' in sys.modules)\n"
    )
    out = run_python(code)
    assert out == "80 ['full,', None, 'école strasse', 'fi é', 'plain'] False", out


def test_the_builders_equal_pa_array():
    """strings / mask_array / numeric_array / nulls_like give what pa.array and pa.scalar did."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = ["a", None, "", "Straße", "日本"]
    assert strings(texts).equals(pa.array(texts, pa.large_string()))
    assert strings(texts, pa.string()).equals(pa.array(texts, pa.string()))
    assert strings([]).equals(pa.array([], pa.large_string()))
    with pytest.raises((pa.ArrowInvalid, UnicodeEncodeError)):
        strings(["\ud800"])  # a lone surrogate: reported as pa.array reports it
    with pytest.raises(pa.ArrowTypeError):
        strings([1], pa.string())
    with pytest.raises(TypeError):
        strings(["a"], pa.binary())
    mask = np.array([True, False, True] * 5)
    assert mask_array(mask).equals(pa.array(mask))
    for dtype in (np.int8, np.int64, np.uint64, np.float32, np.float64):
        values = np.arange(7, dtype=dtype)[::2]  # not contiguous
        assert numeric_array(values).equals(pa.array(values))
    with pytest.raises(TypeError):
        numeric_array(np.array(["a"]))
    arr = pa.array(["x", None], pa.large_string())
    kept = pc.if_else(pa.array([True, False]), arr, nulls_like(arr))
    assert kept.equals(pc.if_else(pa.array([True, False]), arr, pa.scalar(None, arr.type)))


def test_float_labels_and_list_ids_do_not_import_pandas():
    """The label feature of float labels with NaN (nulls from ``nulls_like``, not
    ``pa.scalar``) and the flag ids of a list-typed id column (their text from ``strings``, not
    ``pa.array``), in a fresh process whose input arrays are built from buffers."""
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import pyarrow as pa\n"
        "from dataaudit.features import Batch\n"
        "from dataaudit._arrow import numeric_array, strings\n"
        "from dataaudit.inputs.roles import Roles\n"
        "from dataaudit.rules._ids import id_column, ids_at\n"
        "labels = numeric_array(np.array([1.0, np.nan, 2.5, 1.0]))\n"
        "ids = pa.ListArray.from_arrays(numeric_array(np.array([0, 1, 1, 3, 4], np.int32)),\n"
        "                               numeric_array(np.arange(4)))\n"
        "text = strings(['a', 'b', 'c', 'd'])\n"
        "rb = pa.RecordBatch.from_arrays([text, labels, ids], ['text', 'label', 'id'])\n"
        "b = Batch('train', rb, 0, Roles(text='text', label='label', id='id'))\n"
        "lab = b.feature('label')\n"
        "print(lab.values, lab.types, id_column(b).type, ids_at(b, [0, 1, 3]),\n"
        "      'pandas' in sys.modules)\n"
    )
    out = run_python(code)
    assert out == (
        "['1.0', None, '2.5', '1.0'] ['float', 'null', 'float', 'float'] large_string "
        "['[0]', '[]', '[3]'] False"
    ), out


def test_chunked_arrays_without_chunks_do_not_import_pandas():
    """A ChunkedArray with no chunks (an empty table's column) goes through ``one_chunk``, not
    ``combine_chunks``, whose empty array ``pa.array([])`` imports pandas: the JSON text of
    nested cells, the text views and the tokenizable text."""
    code = (
        "import sys\n"
        "import pyarrow as pa\n"
        "from dataaudit._json_text import json_texts\n"
        "from dataaudit.features.normalize import tokenizable_array\n"
        "from dataaudit.features.text import _as_text\n"
        "none = pa.chunked_array([], pa.large_string())\n"
        "nested = pa.chunked_array([], pa.list_(pa.int64()))\n"
        "got = [json_texts(nested), tokenizable_array(none), _as_text(none)]\n"
        "print([(str(a.type), len(a)) for a in got], 'pandas' in sys.modules)\n"
    )
    out = run_python(code)
    assert out == "[('large_string', 0), ('large_string', 0), ('large_string', 0)] False", out
