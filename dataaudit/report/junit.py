"""JUnit XML: one test case per rule, so CI systems show the audit beside the test results."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from .text import safe


def render_junit(data: dict[str, Any]) -> str:
    results = data["results"]
    suite = ET.Element(
        "testsuite",
        {
            "name": "dataaudit",
            "tests": str(len(results)),
            "failures": str(sum(r["status"] == "fail" for r in results)),
            "errors": str(sum(r["status"] == "error" for r in results)),
            "skipped": str(sum(r["status"] == "skipped" for r in results)),
            "time": f"{data.get('seconds', 0):.3f}",
        },
    )
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "classname": f"dataaudit.{r['code']}",
                "name": r["name"],
                "time": f"{r['seconds']:.3f}",
            },
        )
        # dataset-derived text stays bounded and free of control characters XML cannot carry
        lines = [safe(f"[{f['severity']}] {f['message']}", 300) for f in r["findings"]]
        if r["status"] == "fail":
            el = ET.SubElement(case, "failure", {"message": lines[0] if lines else r["status"]})
            el.text = "\n".join(lines)
        elif r["status"] == "error":
            ET.SubElement(case, "error", {"message": safe(r["message"] or "", 500)})
        elif r["status"] == "skipped":
            ET.SubElement(case, "skipped", {"message": safe(r["message"] or "", 500)})
        elif lines:
            ET.SubElement(case, "system-out").text = "\n".join(lines)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
