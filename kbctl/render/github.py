"""An eval run for GitHub Actions: workflow-command annotations, the job summary (markdown)
and step outputs. Pure text; ``kbctl.render.writes`` puts it where the runner looks."""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..evals.baseline import BaselineDiff, CaseRef
from ..evals.outcome import EvalOutcome
from ..evals.run import EvalReport
from ..evals.verdict import Verdict
from .cases import (
    RETRIEVED_SHOWN,
    SUMMARY_FAILURES,
    SUMMARY_ROWS,
    case_label,
    delta_text,
    flagged,
    mrr_text,
    problem_lines,
    rate_text,
    regression_of,
)


def escape_data(text: str) -> str:
    """Workflow-command message escaping (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Workflow-command property escaping: data escaping plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation_path(suite: str, root: str | None = None) -> str:
    """The suite path as GitHub wants it in an annotation: relative to the checkout
    (``root``) when the file lies inside it, normalised (no ``./``). A relative path is
    read from the working directory first: run from ``evals/``, ``gate.yaml`` is
    ``evals/gate.yaml`` to GitHub."""
    path = PurePosixPath(posixpath.normpath(suite.replace("\\", "/")))
    if root and not path.is_absolute():
        path = PurePosixPath(posixpath.normpath(posixpath.join(
            Path.cwd().as_posix(), path.as_posix())))
    if root and path.is_absolute():
        base = PurePosixPath(posixpath.normpath(root.replace("\\", "/")))
        if path.is_relative_to(base):
            path = path.relative_to(base)
    return path.as_posix()


def github_annotations(outcome: EvalOutcome, *, root: str | None = None) -> list[str]:
    """``::error`` lines for cases that fail the run, ``::warning`` for failed cases that
    the ``regression`` policy tolerates; each points at the case's line in its suite
    (see ``annotation_path`` for ``root``)."""
    report, diff, fail_on = outcome.report, outcome.diff, outcome.verdict.fail_on
    out = []
    for result, regression in flagged(report, diff):
        case = result.case
        counts = regression is not None or fail_on != "regression"
        level = "error" if counts else "warning"
        what = "regressed" if regression is not None else "failed"
        title = f"kbctl eval: case {case_label(report, case.suite, case.id)} {what}"
        props = [f"file={escape_property(annotation_path(case.suite, root))}"]
        if case.line is not None:
            props.append(f"line={case.line}")
        props.append(f"title={escape_property(title)}")
        message = "\n".join(problem_lines(result, regression))
        out.append(f"::{level} {','.join(props)}::{escape_data(message)}")
    return out


_PROBLEM_AT = re.compile(r"^\s*(?P<file>[^\s:][^:]*):(?P<line>\d+): (?P<message>.+)$")


def error_annotations(message: str, *, root: str | None = None) -> list[str]:
    """``::error`` lines for a run that could not start (a malformed suite, a missing KB):
    one per ``file:line: problem`` line of ``message``, placed on that line, or one for the
    whole message. Without them a CI log showed exit 2 and nothing on the pull request."""
    title = escape_property("kbctl eval could not run")
    out = []
    for text in message.splitlines():
        at = _PROBLEM_AT.match(text)
        if at is not None:
            where = (f"file={escape_property(annotation_path(at['file'], root))},"
                     f"line={at['line']}")
            out.append(f"::error {where},title={title}::{escape_data(at['message'])}")
    return out or [f"::error title={title}::{escape_data(message)}"]


def error_summary(message: str) -> str:
    """The job summary of a run that could not start."""
    lines = "\n".join(f"    {line}" for line in message.splitlines())
    return f"## ⚠️ kbctl eval could not run\n\n{lines}\n"


def error_output(message: str) -> str:
    """``$GITHUB_OUTPUT`` of a run that could not start: ``verdict=error`` and the error."""
    return _output("verdict", "error") + _output("error", message)


def _output(name: str, value: str) -> str:
    if "\n" not in value and "\r" not in value:
        return f"{name}={value}\n"
    delimiter = "ghadelimiter_" + hashlib.sha256(value.encode("utf-8")).hexdigest()[:20]
    while delimiter in value:
        delimiter += "_"
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def github_output(outcome: EvalOutcome, *, report_path: str | None = None) -> str:
    """Lines for ``$GITHUB_OUTPUT``: passed, failed, total, regressions, verdict
    (``pass``/``fail``), hit_rate, mrr, ndcg and recall (empty when not measured), and
    report (the path
    of the JSON report the caller wrote, when given)."""
    report, diff = outcome.report, outcome.diff
    metrics = report.metrics
    values = [
        ("passed", str(report.passed)),
        ("failed", str(report.failed)),
        ("total", str(report.total)),
        ("regressions", str(len(diff.regressions)) if diff is not None else "0"),
        ("verdict", "pass" if outcome.verdict.passed else "fail"),
        ("hit_rate", "" if metrics.hit_rate is None else f"{metrics.hit_rate:.4f}"),
        ("mrr", "" if metrics.mrr is None else f"{metrics.mrr:.4f}"),
        ("ndcg", "" if metrics.ndcg is None else f"{metrics.ndcg:.4f}"),
        ("recall", "" if metrics.recall is None else f"{metrics.recall:.4f}"),
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


# GitHub drops a step summary over 1 MiB whole ("upload aborted"): questions are shown
# up to this many characters (they may hold 20,000), and the summary is cut to fit.
SUMMARY_QUESTION = 300
MAX_SUMMARY_BYTES = 1000 * 1024


def _question(text: str) -> str:
    return md(text if len(text) <= SUMMARY_QUESTION else text[:SUMMARY_QUESTION] + "…")


def _within_limit(lines: list[str]) -> str:
    """The summary, cut at a line to stay under ``MAX_SUMMARY_BYTES``."""
    text = "\n".join(lines)
    if len(text.encode("utf-8")) <= MAX_SUMMARY_BYTES:
        return text
    kept, size = [], 0
    for line in lines:
        size += len(line.encode("utf-8")) + 1
        if size > MAX_SUMMARY_BYTES - 200:
            break
        kept.append(line)
    return "\n".join([*kept, "", "… cut to fit GitHub's 1 MiB step summary (see the JSON "
                       "report)", ""])


def github_summary(outcome: EvalOutcome) -> str:
    """Markdown for ``$GITHUB_STEP_SUMMARY``: verdict, totals and metrics (with baseline
    deltas), regressions, failed cases with their details, baseline changes, all cases."""
    report, diff, verdict = outcome.report, outcome.diff, outcome.verdict
    icon = "✅" if verdict.passed else "❌"
    lines = [f"## {icon} kbctl eval: {md(verdict.reason)}", ""]
    lines += _totals(report, diff) + _by_tag(report) + _run_line(report)
    if diff is not None:
        lines += _baseline(diff, verdict)
        lines += _regressions(report, diff)
    lines += _failed_cases(report)
    if diff is not None:
        lines += _baseline_changes(report, diff)
    lines += _all_cases(report, diff)
    return _within_limit(lines)


def _totals(report: EvalReport, diff: BaselineDiff | None) -> list[str]:
    """The totals and metrics table, each metric with its change since the baseline."""
    metrics = report.metrics
    then_rate = diff.baseline_hit_rate if diff is not None else None
    then_mrr = diff.baseline_mrr if diff is not None else None
    header = ["Cases", "Passed", "Failed", "Hit rate", "MRR", "nDCG", "Recall"]
    row = [str(report.total), str(report.passed), str(report.failed),
           rate_text(metrics.hit_rate) + delta_text(metrics.hit_rate, then_rate, percent=True),
           mrr_text(metrics.mrr) + delta_text(metrics.mrr, then_mrr, percent=False),
           mrr_text(metrics.ndcg), rate_text(metrics.recall)]
    if diff is not None:
        header.append("Regressions")
        row.append(str(len(diff.regressions)))
    return ["| " + " | ".join(header) + " |",
            "|" + "---:|" * len(header),
            "| " + " | ".join(row) + " |", ""]


def _by_tag(report: EvalReport) -> list[str]:
    by_tag = report.metrics.by_tag
    if not by_tag:
        return []
    return ["| Tag | Cases | Hit rate | MRR | nDCG | Recall |", "|---|" + "---:|" * 5,
            *(f"| {md(tag)} | {m.scored} | {rate_text(m.hit_rate)} | {mrr_text(m.mrr)} | "
              f"{mrr_text(m.ndcg)} | {rate_text(m.recall)} |" for tag, m in by_tag), ""]


def _run_line(report: EvalReport) -> list[str]:
    """Where and how the suite ran: namespace, embedder, suites, version, time, scoring."""
    metrics = report.metrics
    scored = f"metrics over {metrics.scored} cases with sourceIncludes" \
        if metrics.scored else "no case declares sourceIncludes: metrics not measured"
    return [f"Namespace **{md(report.namespace)}** · embedder **{md(report.embedder)}** · "
            f"suites: {', '.join(md(s) for s in report.suites)} · kbctl "
            f"{md(report.kbctl_version)} · {report.duration_ms / 1000:.2f} s · {scored}", ""]


def _baseline(diff: BaselineDiff, verdict: Verdict) -> list[str]:
    """The baseline compared with, its tolerances and what fails the run, and its warnings."""
    score_tol = "off" if diff.score_tolerance is None else f"{diff.score_tolerance:g}"
    lines = [f"Baseline: {md(diff.source)} ({diff.baseline_passed}/"
             f"{diff.baseline_total} passed; rank tolerance {diff.rank_tolerance}, "
             f"score tolerance {score_tol}; fail on: {md(verdict.fail_on)})", ""]
    lines += [f"> ⚠️ {md(w)}" for w in diff.warnings]
    return lines + [""] if diff.warnings else lines


def _regressions(report: EvalReport, diff: BaselineDiff) -> list[str]:
    if not diff.regressions:
        return []
    lines = [f"### Regressions ({len(diff.regressions)})", ""]
    for regression in diff.regressions:
        ref = regression.ref
        lines.append(f"- **{md(case_label(report, ref.suite, ref.id))}** "
                     f"({_where(ref.suite, ref.line)}): "
                     f"{md('; '.join(regression.reasons))}")
    return lines + [""]


def _failed_cases(report: EvalReport) -> list[str]:
    """The first ``SUMMARY_FAILURES`` failed cases: each failed check, what was retrieved."""
    failed = [r for r in report.results if not r.passed]
    if not failed:
        return []
    lines = [f"### Failed cases ({len(failed)})", ""]
    for result in failed[:SUMMARY_FAILURES]:
        case = result.case
        lines.append(f"- **{md(case_label(report, case.suite, case.id))}** "
                     f"({_where(case.suite, case.line)}): {_question(case.question)}")
        lines += [f"  - ❌ {md(check.name)}: {md(check.detail)}" for check in result.failures]
        if result.retrieved:
            shown = ", ".join(f"#{r.rank} {md(r.citation)} ({r.score:.2f})"
                              for r in result.retrieved[:RETRIEVED_SHOWN])
            lines.append(f"  - retrieved: {shown}")
    if len(failed) > SUMMARY_FAILURES:
        lines.append(f"- … and {len(failed) - SUMMARY_FAILURES} more (see the JSON report)")
    return lines + [""]


def _baseline_changes(report: EvalReport, diff: BaselineDiff) -> list[str]:
    lines: list[str] = []
    for title, refs in (("Fixed since the baseline", diff.fixed),
                        ("Added since the baseline", diff.added),
                        ("Removed since the baseline", diff.removed),
                        ("Edited since the baseline", diff.changed)):
        if refs:
            lines += [f"**{title} ({len(refs)}):** {_ref_list(report, refs)}", ""]
    return lines


def _all_cases(report: EvalReport, diff: BaselineDiff | None) -> list[str]:
    """Every case (the first ``SUMMARY_ROWS``) in a folded table."""
    lines = [f"<details><summary>All {report.total} cases</summary>", "",
             "| | Case | Rank | Top score | Question |", "|---|---|---:|---:|---|"]
    for result in report.results[:SUMMARY_ROWS]:
        case = result.case
        status = "❌" if not result.passed else "⚠️" if regression_of(diff, result) else "✅"
        rank = str(result.first_match_rank) if result.first_match_rank is not None else "–"
        top = f"{result.top_score:.3f}" if result.top_score is not None else "–"
        lines.append(f"| {status} | {md(case_label(report, case.suite, case.id))} | {rank} | "
                     f"{top} | {_question(case.question)} |")
    if report.total > SUMMARY_ROWS:
        lines.append(f"| | … {report.total - SUMMARY_ROWS} more | | | |")
    return lines + ["", "</details>", ""]
