"""The text summary and the HTML header name the engine that ran the audit, from the report's
``engine`` record, escaped like any other report text."""

from __future__ import annotations

import copy

import pytest

import dataaudit
from dataaudit.report.html import render_html
from dataaudit.report.text import engine_text, render_summary


@pytest.fixture(scope="module")
def report():
    return dataaudit.audit([{"text": f"row {i}"} for i in range(5)], select=["TXT001"])


def _with_engine(data: dict, engine: dict | None) -> dict:
    data = copy.deepcopy(data)
    if engine is None:
        data.pop("engine")
    else:
        data["engine"] = engine
    return data


def test_the_summary_and_header_name_a_ray_cluster(report):
    data = _with_engine(report.data, {"name": "ray", "version": "2.60.0", "nodes": 3, "cpus": 64})
    assert "engine: ray 2.60.0 · 3 nodes · 64 CPUs" in render_summary(data).splitlines()
    assert '<span id="engine">engine ray 2.60.0 · 3 nodes · 64 CPUs</span>' in render_html(data)


def test_the_local_engine_shows_its_cpus(report):
    cpus = report.data["engine"]["cpus"]
    expected = f"local · {cpus:,} {'CPU' if cpus == 1 else 'CPUs'}"
    assert engine_text(report.data) == expected
    assert f"engine: {expected}" in render_summary(report.data)


def test_a_report_without_an_engine_shows_none(report):
    data = _with_engine(report.data, None)
    assert engine_text(data) is None
    assert "engine" not in render_summary(data)
    assert 'id="engine"' not in render_html(data)


def test_engine_text_from_a_report_file_is_escaped(report):
    hostile = {"name": "ray", "version": "<script>\x1b[2J", "nodes": 1, "cpus": 2}
    data = _with_engine(report.data, hostile)
    text, page = render_summary(data), render_html(data)
    assert "\x1b" not in text and "ray <script>\\x1b[2J · 1 node · 2 CPUs" in text
    assert "<script>" not in page.split('id="engine"', 1)[1].split("</span>", 1)[0]
