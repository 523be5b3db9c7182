"""JUnit XML: one test case per rule, so CI systems show the audit beside the test results."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from .escape import plain
from .signal_results import results_and_signals


def render_junit(data: dict[str, Any]) -> str:
    results = results_and_signals(data)
    gate_failed = not data.get("passed")
    suite = ET.Element(
        "testsuite",
        {
            "name": "dataaudit",
            "tests": str(len(results) + 1),
            "failures": str(sum(r["status"] == "fail" for r in results) + gate_failed),
            "errors": str(sum(r["status"] == "error" for r in results)),
            "skipped": str(sum(r["status"] == "skipped" for r in results)),
            "time": f"{data.get('seconds', 0):.3f}",
        },
    )
    # the gate itself is a test case: it fails with the reasons, including a required rule that
    # was skipped (whose own test case is only "skipped")
    gate = ET.SubElement(
        suite, "testcase", {"classname": "dataaudit.gate", "name": "gate", "time": "0.000"}
    )
    if gate_failed:
        reasons = [plain(r, 300) for r in (data.get("gate") or {}).get("reasons", [])]
        el = ET.SubElement(
            gate,
            "failure",
            {"message": f"gate failed (fail_on={plain(data.get('fail_on'), 10)})"},
        )
        el.text = "\n".join(reasons)
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"dataaudit.{plain(r['code'], 20)}",
                "name": plain(r["name"], 100),
                "time": f"{r['seconds']:.3f}",
            },
        )
        # dataset-derived text stays bounded and free of control characters XML cannot carry
        lines = [plain(f"[{f['severity']}] {f['message']}", 300) for f in r["findings"]]
        if r["status"] == "fail":
            el = ET.SubElement(case, "failure", {"message": lines[0] if lines else r["status"]})
            el.text = "\n".join(lines)
        elif r["status"] == "error":
            ET.SubElement(case, "error", {"message": plain(r["message"] or "", 500)})
        elif r["status"] == "skipped":
            ET.SubElement(case, "skipped", {"message": plain(r["message"] or "", 500)})
        elif lines:
            ET.SubElement(case, "system-out").text = "\n".join(lines)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
