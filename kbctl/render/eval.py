"""The formats of an eval run (table, json, junit, github) and the helpers its renderings
share. Pure functions of the report; the files a CI runner reads are written by
``kbctl.render.writes``; the conventions they share live in ``kbctl.render.cases``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..evals.baseline import BaselineDiff
from ..evals.outcome import EvalOutcome
from ..evals.run import EvalReport
from .cases import case_label, flagged, metrics_text, problem_lines
from .formats import Formats, Rendered, as_json
from .github import github_annotations
from .junit import junit_xml
from .text import plain

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
    shown_first = flagged(report, diff)
    flagged_keys = {result.case.key for result, _ in shown_first}
    rows = shown_first + [(r, None) for r in report.results if r.case.key not in flagged_keys]
    for result, regression in rows:
        case = result.case
        if not result.passed:
            status = Text("FAIL", style="bold red")
        elif regression is not None:
            status = Text("REGRESSED", style="bold yellow")
        else:
            status = Text("pass", style="green")
        problems = problem_lines(result, regression)
        if problems:
            detail = Text(plain("\n".join(problems), keep_newlines=True))
        elif result.checks:
            detail = Text(f"{len(result.checks)} checks passed" if len(result.checks) > 1
                          else f"{result.checks[0].name}: {result.checks[0].detail}",
                          style="dim")
        else:
            detail = Text("no checks declared", style="dim")
        table.add_row(
            status,
            Text(plain(case_label(report, case.suite, case.id))),
            str(result.first_match_rank) if result.first_match_rank is not None else "–",
            f"{result.top_score:.2f}" if result.top_score is not None else "–",
            detail,
        )
    return table


def eval_console(outcome: EvalOutcome, *, verbose: bool = False) -> RenderableType:
    """The table plus totals, metrics, baseline changes and the verdict; ``verbose``
    names every case a baseline change holds, not only the first few."""
    report, diff, verdict = outcome.report, outcome.diff, outcome.verdict
    metrics = report.metrics
    parts: list[RenderableType] = [eval_table(report, diff)]
    summary = Text(
        f"{report.total} cases · {report.passed} passed · {report.failed} failed · "
        f"{metrics_text(metrics)} · {report.duration_ms / 1000:.2f} s"
    )
    parts.append(summary)
    if report.retriever is not None:
        parts.append(Text(plain(f"retriever: {report.retriever.describe()}"), style="dim"))
    parts += [Text(plain(f"  tag {tag} ({m.scored} case{'' if m.scored == 1 else 's'}): "
                         f"{metrics_text(m)}"), style="dim") for tag, m in metrics.by_tag]
    unchecked = [case_label(report, r.case.suite, r.case.id)
                 for r in report.results if r.passed and not r.checks]
    if unchecked:  # a gate they cannot close: an expect block forgotten, most likely
        shown = ", ".join(unchecked[:5]) + (f" and {len(unchecked) - 5} more"
                                            if len(unchecked) > 5 else "")
        parts.append(Text(plain(f"warning: {len(unchecked)} case(s) declare no check and "
                                f"pass whatever is retrieved: {shown}"), style="yellow"))
    if diff is not None:
        count = len(diff.regressions)
        changes = [f"{count} regression" + ("" if count == 1 else "s")]
        for word, refs in (("fixed", diff.fixed), ("added", diff.added),
                           ("removed", diff.removed), ("edited", diff.changed)):
            if refs:
                changes.append(f"{word}: {_named(report, refs, verbose)}")
        parts.append(Text(plain(f"vs {diff.source}: " + " · ".join(changes))))
        parts += [Text(plain(f"warning: {w}"), style="yellow") for w in diff.warnings]
    parts.append(Text(plain(("PASS: " if verdict.passed else "FAIL: ") + verdict.reason),
                      style="bold green" if verdict.passed else "bold red"))
    return Group(*parts)


# Cases a baseline comparison names per kind of change; past it, a count (the JSON
# report's ``diff`` lists every one).
MAX_NAMED_CHANGES = 5


def _named(report: EvalReport, refs: Sequence[Any], verbose: bool = False) -> str:
    """The cases of one kind of change, the first few by name: a suite that grew by a
    hundred cases printed a hundred ids on one line."""
    labels = [case_label(report, r.suite, r.id) for r in refs]
    if len(labels) <= MAX_NAMED_CHANGES or verbose:
        return ", ".join(labels)
    return (f"{len(labels)} cases ({', '.join(labels[:MAX_NAMED_CHANGES - 2])} and "
            f"{len(labels) - MAX_NAMED_CHANGES + 2} more; --verbose or --json lists them "
            f"all)")


def _table(outcome: EvalOutcome, *, verbose: bool = False, **options: Any) -> Rendered:
    return Rendered.stdout(eval_console(outcome, verbose=verbose))


def _junit(outcome: EvalOutcome, **options: Any) -> Rendered:
    return Rendered.stdout(junit_xml(outcome))


def _report(outcome: EvalOutcome, **options: Any) -> Any:
    return outcome.to_json()


def _annotations(outcome: EvalOutcome, *, root: str | None = None,
                 **options: Any) -> Rendered:
    lines = github_annotations(outcome, root=root)
    return Rendered.stdout(*(f"{line}\n" for line in lines))


FORMATS: Formats = {"table": _table, "json": as_json(_report), "junit": _junit,
                    "github": _annotations}
