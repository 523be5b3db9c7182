"""One helper puts every count's noun in the right number: no "1 classes" in a report."""

from __future__ import annotations

import numpy as np
import pytest

from dataaudit.wording import noun, plural


@pytest.mark.parametrize(
    "n, word, expected",
    [
        (1, "class", "1 class"),
        (2, "class", "2 classes"),
        (0, "row", "0 rows"),
        (1, "sampled row", "1 sampled row"),
        (12000, "row", "12,000 rows"),
        (np.int64(1), "copy", "1 copy"),
        (np.int64(3_000_000), "copy", "3,000,000 copies"),
        (2, "day", "2 days"),
        (3, "match", "3 matches"),
        (2, "index", "2 indexes"),
        (1.5, "token", "1.5 tokens"),
    ],
)
def test_plural(n, word, expected):
    assert plural(n, word) == expected


def test_noun_agrees_verbs_and_takes_an_explicit_plural():
    assert [noun(n, "is", "are") for n in (0, 1, 2)] == ["are", "is", "are"]
    assert plural(2, "datum", "data") == "2 data"


def test_reports_never_say_1_rows():
    import re

    import dataaudit

    data = {"train": [{"text": "ok"}], "test": [{"text": "x"}] * 2}
    report = dataaudit.audit(data, select=["TXT001", "DUP001", "LEN002"])
    for text in (report.summary(), report.to_markdown()):
        assert re.search(r"\b1 rows\b|\b1 findings\b", text) is None, text
    assert "train (train): 1 row," in report.summary()
    assert "train: 1 row ·" in report.to_markdown()
    one = dataaudit.audit({"train": [{"text": "A"}, {"text": " "}]}, select=["TXT001"])
    assert one.data["summary"]["flagged_rows"] == 1
    assert "1 row flagged" in one._repr_html_() and "1 row flagged" in one.summary()
