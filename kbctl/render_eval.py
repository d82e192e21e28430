"""Renderings of an eval run: JUnit XML, GitHub job summary, annotations and outputs, and a
rich table for people. Pure functions of the report; callers decide where text goes.

Conventions shared by all of them: a case is named by its id, or ``suite-path:id`` when the
run used several suite files; a case that passes its checks but regressed against the
baseline counts as a failure wherever a per-case status is shown (JUnit, annotations),
because a regression fails the run under every ``fail_on`` policy.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from kbctl.pipeline.evals import EvalOutcome
    from kbctl.render import Output

from kbctl.errors import EnvironmentFailure, InputError, KbctlError
from kbctl.evals.baseline import BaselineDiff, CaseRef, Regression
from kbctl.evals.run import CaseResult, EvalReport
from kbctl.evals.verdict import judge_run

_SUMMARY_FAILURES = 50
_SUMMARY_ROWS = 300
_RETRIEVED_SHOWN = 3


# --- shared helpers --------------------------------------------------------------------


def case_label(report: EvalReport, suite: str, case_id: str) -> str:
    """``id``, or ``suite:id`` when several suite files ran."""
    return f"{suite}:{case_id}" if report.multi_suite else case_id


def _regression(diff: BaselineDiff | None, result: CaseResult) -> Regression | None:
    return diff.regression_for(result.case.suite, result.case.id) if diff is not None else None


def _problem_lines(result: CaseResult, regression: Regression | None) -> list[str]:
    """Why a case is flagged: its failed checks, then its regression reasons."""
    lines = [f"{check.name}: {check.detail}" for check in result.failures]
    if regression is not None:
        lines += [f"regression: {reason}" for reason in regression.reasons]
    return lines


def _flagged(report: EvalReport, diff: BaselineDiff | None
             ) -> list[tuple[CaseResult, Regression | None]]:
    out = []
    for result in report.results:
        regression = _regression(diff, result)
        if not result.passed or regression is not None:
            out.append((result, regression))
    return out


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _mrr(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _delta(now: float | None, then: float | None, *, percent: bool) -> str:
    if now is None or then is None:
        return ""
    change = (now - then) * (100 if percent else 1)
    if abs(change) < 0.0005:
        return " (±0)"
    sign = "+" if change > 0 else "−"
    text = f"{abs(change):.1f} pts" if percent else f"{abs(change):.3f}"
    return f" ({sign}{text})"


# --- JUnit XML -------------------------------------------------------------------------

_XML_INVALID = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    """Replace characters XML 1.0 cannot carry (escaping of the rest is ElementTree's job)."""
    return _XML_INVALID.sub("\ufffd", text)


def junit_xml(report: EvalReport, diff: BaselineDiff | None = None) -> str:
    """One ``testsuite`` per suite file (name = file stem), one ``testcase`` per case.

    A failed or regressed case gets a ``failure`` whose message is its problems on one line
    and whose text lists every check; ``type`` is ``retrieval-error``, ``check`` or
    ``regression``.
    """
    root = ET.Element("testsuites", {
        "name": "kbctl eval",
        "tests": str(report.total),
        "failures": "0",
        "errors": "0",
        "skipped": "0",
        "time": f"{report.duration_ms / 1000:.3f}",
        "timestamp": report.started_at,
    })
    total_failures = 0
    for path in report.suites:
        results = [r for r in report.results if r.case.suite == path]
        stem = PurePosixPath(path).stem
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
        failures = 0
        for result in results:
            failures += _junit_case(suite_el, stem, result, _regression(diff, result))
        suite_el.set("failures", str(failures))
        total_failures += failures
    root.set("failures", str(total_failures))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'


def _junit_case(parent: ET.Element, stem: str, result: CaseResult,
                regression: Regression | None) -> int:
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
    problems = _problem_lines(result, regression)
    if problems:
        kind = "retrieval-error" if result.error else "check" if not result.passed \
            else "regression"
        failure = ET.SubElement(case_el, "failure",
                                {"message": _xml_text("; ".join(problems)), "type": kind})
        failure.text = _xml_text("\n".join(lines))
    else:
        out = ET.SubElement(case_el, "system-out")
        out.text = _xml_text("\n".join(lines))
    return 1 if problems else 0


# --- GitHub: workflow commands and outputs ---------------------------------------------


def escape_data(text: str) -> str:
    """Workflow-command message escaping (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Workflow-command property escaping: data escaping plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_path(suite: str, root: str | None = None) -> str:
    """The suite path as GitHub wants it in an annotation: relative to the checkout
    (``root``) when the file lies inside it, normalised (no ``./``)."""
    path = PurePosixPath(posixpath.normpath(suite.replace("\\", "/")))
    if root and path.is_absolute():
        base = PurePosixPath(posixpath.normpath(root.replace("\\", "/")))
        if path.is_relative_to(base):
            path = path.relative_to(base)
    return path.as_posix()


def github_annotations(report: EvalReport, diff: BaselineDiff | None = None, *,
                       fail_on: str = "any", root: str | None = None) -> list[str]:
    """``::error`` lines for cases that fail the run, ``::warning`` for failed cases that
    the ``regression`` policy tolerates; each points at the case's line in its suite
    (see ``annotation_path`` for ``root``)."""
    out = []
    for result, regression in _flagged(report, diff):
        case = result.case
        counts = regression is not None or fail_on != "regression"
        level = "error" if counts else "warning"
        what = "regressed" if regression is not None else "failed"
        title = f"kbctl eval: case {case_label(report, case.suite, case.id)} {what}"
        props = [f"file={escape_property(annotation_path(case.suite, root))}"]
        if case.line is not None:
            props.append(f"line={case.line}")
        props.append(f"title={escape_property(title)}")
        message = "\n".join(_problem_lines(result, regression))
        out.append(f"::{level} {','.join(props)}::{escape_data(message)}")
    return out


def _output(name: str, value: str) -> str:
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    delimiter = "ghadelimiter_" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:20]
    while delimiter in value:
        delimiter += "_"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def github_output(report: EvalReport, diff: BaselineDiff | None = None, *,
                  report_path: str | None = None, fail_on: str = "any") -> str:
    """Lines for ``$GITHUB_OUTPUT``: passed, failed, total, regressions, verdict
    (``pass``/``fail``), hit_rate and mrr (empty when not measured), and report (the path
    of the JSON report the caller wrote, when given)."""
    outcome = judge_run(report, diff, fail_on)
    metrics = report.metrics
    values = [
        ("passed", str(report.passed)),
        ("failed", str(report.failed)),
        ("total", str(report.total)),
        ("regressions", str(len(diff.regressions)) if diff is not None else "0"),
        ("verdict", "pass" if outcome.passed else "fail"),
        ("hit_rate", "" if metrics.hit_rate is None else f"{metrics.hit_rate:.4f}"),
        ("mrr", "" if metrics.mrr is None else f"{metrics.mrr:.4f}"),
    ]
    if report_path is not None:
        values.append(("report", report_path))
    return "".join(_output(name, value) for name, value in values)


# --- GitHub: job summary ---------------------------------------------------------------

_MD_ESCAPE = re.compile(r"([\\`*_\[\]|~<>])")


def md(text: str) -> str:
    """One line of user text made inert in GitHub markdown (tables included)."""
    flat = " ".join(text.split())
    return _MD_ESCAPE.sub(r"\\\1", flat.replace("&", "&amp;"))


def _where(suite: str, line: int | None) -> str:
    return md(f"{suite}:{line}" if line is not None else suite)


def _ref_list(report: EvalReport, refs: Iterable[CaseRef]) -> str:
    return ", ".join(md(case_label(report, ref.suite, ref.id)) for ref in refs)


def github_summary(report: EvalReport, diff: BaselineDiff | None = None, *,
                   fail_on: str = "any") -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: verdict, totals and metrics (with baseline
    deltas), regressions, failed cases with their details, baseline changes, all cases."""
    outcome = judge_run(report, diff, fail_on)
    metrics = report.metrics
    icon = "✅" if outcome.passed else "❌"
    lines = [f"## {icon} kbctl eval: {md(outcome.reason)}", ""]

    then_rate = diff.baseline_hit_rate if diff is not None else None
    then_mrr = diff.baseline_mrr if diff is not None else None
    header = ["Cases", "Passed", "Failed", "Hit rate", "MRR"]
    row = [str(report.total), str(report.passed), str(report.failed),
           _rate(metrics.hit_rate) + _delta(metrics.hit_rate, then_rate, percent=True),
           _mrr(metrics.mrr) + _delta(metrics.mrr, then_mrr, percent=False)]
    if diff is not None:
        header.append("Regressions")
        row.append(str(len(diff.regressions)))
    lines += ["| " + " | ".join(header) + " |",
              "|" + "---:|" * len(header),
              "| " + " | ".join(row) + " |", ""]
    scored = f"hit rate and MRR over {metrics.scored} cases with sourceIncludes" \
        if metrics.scored else "no case declares sourceIncludes: hit rate and MRR not measured"
    lines.append(
        f"Namespace **{md(report.namespace)}** · embedder **{md(report.embedder)}** · "
        f"suites: {', '.join(md(s) for s in report.suites)} · kbctl {md(report.kbctl_version)} · "
        f"{report.duration_ms / 1000:.2f} s · {scored}"
    )
    lines.append("")
    if diff is not None:
        score_tol = "off" if diff.score_tolerance is None else f"{diff.score_tolerance:g}"
        lines.append(f"Baseline: {md(diff.source)} ({diff.baseline_passed}/"
                     f"{diff.baseline_total} passed; rank tolerance {diff.rank_tolerance}, "
                     f"score tolerance {score_tol}; fail on: {md(fail_on)})")
        lines.append("")
        lines += [f"> ⚠️ {md(w)}" for w in diff.warnings]
        if diff.warnings:
            lines.append("")

    if diff is not None and diff.regressions:
        lines += [f"### Regressions ({len(diff.regressions)})", ""]
        for regression in diff.regressions:
            ref = regression.ref
            lines.append(f"- **{md(case_label(report, ref.suite, ref.id))}** "
                         f"({_where(ref.suite, ref.line)}): "
                         f"{md('; '.join(regression.reasons))}")
        lines.append("")

    failed = [r for r in report.results if not r.passed]
    if failed:
        lines += [f"### Failed cases ({len(failed)})", ""]
        for result in failed[:_SUMMARY_FAILURES]:
            case = result.case
            lines.append(f"- **{md(case_label(report, case.suite, case.id))}** "
                         f"({_where(case.suite, case.line)}): {md(case.question)}")
            lines += [f"  - ❌ {md(check.name)}: {md(check.detail)}" for check in result.failures]
            if result.retrieved:
                shown = ", ".join(f"#{r.rank} {md(r.citation)} ({r.score:.2f})"
                                  for r in result.retrieved[:_RETRIEVED_SHOWN])
                lines.append(f"  - retrieved: {shown}")
        if len(failed) > _SUMMARY_FAILURES:
            lines.append(f"- … and {len(failed) - _SUMMARY_FAILURES} more (see the JSON report)")
        lines.append("")

    if diff is not None:
        for title, refs in (("Fixed since the baseline", diff.fixed),
                            ("Added since the baseline", diff.added),
                            ("Removed since the baseline", diff.removed),
                            ("Edited since the baseline", diff.changed)):
            if refs:
                lines += [f"**{title} ({len(refs)}):** {_ref_list(report, refs)}", ""]

    lines += [f"<details><summary>All {report.total} cases</summary>", "",
              "| | Case | Rank | Top score | Question |", "|---|---|---:|---:|---|"]
    for result in report.results[:_SUMMARY_ROWS]:
        case = result.case
        status = "❌" if not result.passed else "⚠️" if _regression(diff, result) else "✅"
        rank = str(result.first_match_rank) if result.first_match_rank is not None else "–"
        top = f"{result.top_score:.3f}" if result.top_score is not None else "–"
        lines.append(f"| {status} | {md(case_label(report, case.suite, case.id))} | {rank} | "
                     f"{top} | {md(case.question)} |")
    if report.total > _SUMMARY_ROWS:
        lines.append(f"| | … {report.total - _SUMMARY_ROWS} more | | | |")
    lines += ["", "</details>", ""]
    return "\n".join(lines)


# --- people ----------------------------------------------------------------------------


def eval_table(report: EvalReport, diff: BaselineDiff | None = None) -> Table:
    """Failures and regressions first (input order within), then passing cases."""
    table = Table(title="kbctl eval", title_justify="left", expand=False)
    table.add_column("", no_wrap=True)
    labels = [case_label(report, r.case.suite, r.case.id) for r in report.results]
    # keep ids readable on narrow terminals: the detail column gives way first
    table.add_column("Case", overflow="fold",
                     min_width=min(max((len(label) for label in labels), default=4), 40))
    table.add_column("Rank", justify="right", no_wrap=True)
    table.add_column("Top", justify="right", no_wrap=True)
    table.add_column("Detail", overflow="fold")
    flagged = _flagged(report, diff)
    flagged_keys = {result.case.key for result, _ in flagged}
    rows = flagged + [(r, None) for r in report.results if r.case.key not in flagged_keys]
    for result, regression in rows:
        case = result.case
        if not result.passed:
            status = Text("FAIL", style="bold red")
        elif regression is not None:
            status = Text("REGRESSED", style="bold yellow")
        else:
            status = Text("pass", style="green")
        problems = _problem_lines(result, regression)
        if problems:
            detail = Text("\n".join(problems))
        elif result.checks:
            detail = Text(f"{len(result.checks)} checks passed" if len(result.checks) > 1
                          else f"{result.checks[0].name}: {result.checks[0].detail}",
                          style="dim")
        else:
            detail = Text("no checks declared", style="dim")
        table.add_row(
            status,
            Text(case_label(report, case.suite, case.id)),
            str(result.first_match_rank) if result.first_match_rank is not None else "–",
            f"{result.top_score:.2f}" if result.top_score is not None else "–",
            detail,
        )
    return table


def eval_console(report: EvalReport, diff: BaselineDiff | None = None, *,
                 fail_on: str = "any") -> RenderableType:
    """The table plus totals, metrics, baseline changes and the verdict."""
    outcome = judge_run(report, diff, fail_on)
    metrics = report.metrics
    parts: list[RenderableType] = [eval_table(report, diff)]
    summary = Text(
        f"{report.total} cases · {report.passed} passed · {report.failed} failed · "
        f"hit rate {_rate(metrics.hit_rate)} · MRR {_mrr(metrics.mrr)} · "
        f"{report.duration_ms / 1000:.2f} s"
    )
    parts.append(summary)
    if diff is not None:
        count = len(diff.regressions)
        changes = [f"{count} regression" + ("" if count == 1 else "s")]
        for word, refs in (("fixed", diff.fixed), ("added", diff.added),
                           ("removed", diff.removed), ("edited", diff.changed)):
            if refs:
                names = ", ".join(case_label(report, r.suite, r.id) for r in refs)
                changes.append(f"{word}: {names}")
        parts.append(Text(f"vs {diff.source}: " + " · ".join(changes)))
        parts += [Text(f"warning: {w}", style="yellow") for w in diff.warnings]
    parts.append(Text(("PASS: " if outcome.passed else "FAIL: ") + outcome.reason,
                      style="bold green" if outcome.passed else "bold red"))
    return Group(*parts)


# --- writing the files a CI runner reads ----------------------------------------------


def write_report_file(path: Path, text: str, what: str, *, append: bool = False,
           error: type[KbctlError] = InputError) -> None:
    """Write a report file; a path the user gave is bad input (2), one the runner gave is
    a broken environment (3)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise error(f"{path}: cannot write {what}: {exc.strerror or exc}") from None


def report_text(outcome: EvalOutcome) -> str:
    return json.dumps(outcome.to_json(), indent=2, ensure_ascii=False) + "\n"


def emit_github(outcome: EvalOutcome, out: Output, *, report_path: Path | None,
            json_output: bool) -> None:
    """Annotations (stdout, or stderr beside --json: GitHub reads both), the job summary
    and the step outputs, each where the runner looks for it."""
    fail_on = outcome.verdict.fail_on
    lines = github_annotations(outcome.report, outcome.diff, fail_on=fail_on,
                               root=os.environ.get("GITHUB_WORKSPACE"))
    if lines:
        stream = sys.stderr if json_output else sys.stdout
        stream.write("".join(f"{line}\n" for line in lines))
        stream.flush()
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        text = github_summary(outcome.report, outcome.diff, fail_on=fail_on) + "\n"
        write_report_file(Path(summary), text, "the job summary ($GITHUB_STEP_SUMMARY)",
                          append=True, error=EnvironmentFailure)
    else:
        out.note("GITHUB_STEP_SUMMARY is not set: no job summary written")
    outputs = os.environ.get("GITHUB_OUTPUT")
    if outputs:
        if report_path is None:
            runner_temp = os.environ.get("RUNNER_TEMP") or None
            try:
                fd, name = tempfile.mkstemp(prefix="kbctl-eval-report-", suffix=".json",
                                            dir=runner_temp)
            except OSError as exc:
                raise EnvironmentFailure(f"cannot create the JSON report in "
                                         f"{runner_temp or 'the temp dir'}: {exc}") from None
            os.close(fd)
            report_path = Path(name)
            write_report_file(report_path, report_text(outcome), "the JSON report",
                   error=EnvironmentFailure)
        write_report_file(Path(outputs), github_output(outcome.report, outcome.diff,
                                            report_path=str(report_path.resolve()),
                                            fail_on=fail_on),
               "the step outputs ($GITHUB_OUTPUT)", append=True, error=EnvironmentFailure)
