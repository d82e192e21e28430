"""An eval run as JUnit XML, the format CI systems show as test results."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import PurePosixPath

from ..evals.baseline import Regression
from ..evals.outcome import EvalOutcome
from ..evals.run import CaseResult
from .cases import problem_lines, regression_of

_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """Replace characters XML 1.0 cannot carry (escaping of the rest is ElementTree's job)."""
    return _XML_INVALID.sub("\ufffd", text)


def junit_xml(outcome: EvalOutcome) -> str:
    """One ``testsuite`` per suite file (name = file stem, or its path without the suffix
    when two suites share a stem), one ``testcase`` per case.

    A failed or regressed case gets a ``failure`` whose message is its problems on one line
    and whose text lists every check; ``type`` is ``retrieval-error``, ``check`` or
    ``regression``. Under ``--fail-on regression`` a failed case that did not regress does
    not fail the run, so it is ``skipped`` (with the same message), not a ``failure``: a
    JUnit reporter turned the check red for a run that passed.
    """
    tolerated = outcome.verdict.fail_on == "regression"
    report, diff = outcome.report, outcome.diff
    root = ET.Element("testsuites", {
        "name": "kbctl eval",
        "tests": str(report.total),
        "failures": "0",
        "errors": "0",
        "skipped": "0",
        "time": f"{report.duration_ms / 1000:.3f}",
        "timestamp": report.started_at,
    })
    total_failures = total_skipped = 0
    stems = Counter(PurePosixPath(path).stem for path in report.suites)
    for path in report.suites:
        results = [r for r in report.results if r.case.suite == path]
        stem = PurePosixPath(path).stem
        if stems[stem] > 1:  # a/docs.yaml and b/docs.yaml: one name in a CI's test view
            stem = PurePosixPath(path).with_suffix("").as_posix()
        suite_el = ET.SubElement(root, "testsuite", {
            "name": _xml_text(stem),
            "file": _xml_text(path),
            "tests": str(len(results)),
            "failures": "0",
            "errors": "0",
            "skipped": "0",
            "time": f"{sum(r.duration_ms for r in results) / 1000:.3f}",
            "timestamp": report.started_at,
        })
        props = ET.SubElement(suite_el, "properties")
        for name, value in (("namespace", report.namespace), ("embedder", report.embedder),
                            ("kbctlVersion", report.kbctl_version)):
            ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
        failures = skipped = 0
        for result in results:
            kind = _junit_case(suite_el, stem, result, regression_of(diff, result), tolerated)
            failures += kind == "failure"
            skipped += kind == "skipped"
        suite_el.set("failures", str(failures))
        suite_el.set("skipped", str(skipped))
        total_failures += failures
        total_skipped += skipped
    root.set("failures", str(total_failures))
    root.set("skipped", str(total_skipped))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _junit_case(parent: ET.Element, stem: str, result: CaseResult,
                regression: Regression | None, tolerated: bool) -> str | None:
    """Add the case's ``testcase``; ``failure``, ``skipped`` (a failure the run tolerates)
    or None for what it holds."""
    case = result.case
    attrs = {"classname": _xml_text(stem), "name": _xml_text(case.id),
             "file": _xml_text(case.suite), "time": f"{result.duration_ms / 1000:.3f}"}
    if case.line is not None:
        attrs["line"] = str(case.line)
    case_el = ET.SubElement(parent, "testcase", attrs)
    lines = [f"question: {case.question}"]
    lines += [f"[{'pass' if c.passed else 'FAIL'}] {c.name}: {c.detail}" for c in result.checks]
    if regression is not None:
        lines += [f"[REGRESSION] {reason}" for reason in regression.reasons]
    lines += [f"retrieved #{r.rank} {r.score:.3f} {r.citation}" for r in result.retrieved]
    problems = problem_lines(result, regression)
    if problems and tolerated and regression is None:
        ET.SubElement(case_el, "skipped", {"message": _xml_text(
            "failed, not a regression (--fail-on regression): " + "; ".join(problems))})
        out = ET.SubElement(case_el, "system-out")
        out.text = _xml_text("\n".join(lines))
        return "skipped"
    if problems:
        kind = "retrieval-error" if result.error else "check" if not result.passed \
            else "regression"
        failure = ET.SubElement(case_el, "failure",
                                {"message": _xml_text("; ".join(problems)), "type": kind})
        failure.text = _xml_text("\n".join(lines))
        return "failure"
    out = ET.SubElement(case_el, "system-out")
    out.text = _xml_text("\n".join(lines))
    return None
