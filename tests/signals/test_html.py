"""The signals section of the HTML page: curves as inline SVG with the flagged steps marked,
and every string from the log or the data escaped."""

from __future__ import annotations

from dataaudit.report.html._signals import curve_svg, signals_html

EVIL = "<script>alert(1)</script>"


def section(**extra):
    base = {
        "status": "warn",
        "log": {"path": EVIL, "format": "csv", "steps": 3},
        "order": {"kind": "order file", "path": EVIL},
        "metrics": {"steps": 3, EVIL: 1},
        "curves": {
            "loss": {"step": [1, 2, 3], "value": [1.0, 5.0, None]},
            EVIL: {"step": [1, 2, 3], "value": [1, "<i>x</i>", 2]},
        },
        "findings": [
            {
                "code": "SIG001",
                "name": "loss spike",
                "severity": "warn",
                "message": EVIL,
                "step": 2,
                "steps": [2],
                "data": {},
                "batch": {
                    "step": 2,
                    "rows": 1,
                    "effects": {EVIL: {"value": 1, "random_mean": 0, "random_sd": 1, "z": 9}},
                    "reasons": [],
                },
                "examples": [{"split": "train", "row": 0, "id": EVIL, "text": EVIL, "why": EVIL}],
                "fingerprint": "SIG001-0123456789abcdef",
            }
        ],
    }
    return {"signals": {**base, **extra}}


def test_everything_from_the_log_and_the_data_is_escaped():
    html = signals_html(section(), {"train": 0})
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "<i>" not in html and "&lt;i&gt;" not in html
    assert html.count("<svg") == 2  # loss, and the other curve (its string value skipped)


def test_the_spike_step_is_marked_on_the_curve():
    svg = curve_svg("loss", [(1, 1.0), (2, 5.0), (3, 1.1)], {2: "SIG001"})
    assert svg.count("<circle") == 1 and "SIG001 at step 2: 5" in svg
    assert curve_svg("loss", [], {2: "SIG001"}) == ""


def test_no_section_without_signals():
    assert signals_html({"results": []}, {}) == ""
