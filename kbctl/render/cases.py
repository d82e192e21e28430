"""What the renderings of an eval run share: case labels, why a case is flagged, and
number formats.

A case is named by its id, or ``suite-path:id`` when the run used several suite files; a
case that passes its checks but regressed against the baseline counts as a failure
wherever a per-case status is shown (JUnit, annotations), because a regression fails the
run under every ``fail_on`` policy.
"""

from __future__ import annotations

from ..evals.baseline import BaselineDiff, Regression
from ..evals.metrics import Metrics
from ..evals.run import CaseResult, EvalReport
from ..search_notes import spelling_notes, synonym_notes
from .text import filter_text

SUMMARY_FAILURES = 50
SUMMARY_ROWS = 300
RETRIEVED_SHOWN = 3


def case_label(report: EvalReport, suite: str, case_id: str) -> str:
    """``id``, or ``suite:id`` when several suite files ran."""
    return f"{suite}:{case_id}" if report.multi_suite else case_id


def regression_of(diff: BaselineDiff | None, result: CaseResult) -> Regression | None:
    return diff.regression_for(result.case.suite, result.case.id) if diff is not None else None


def problem_lines(result: CaseResult, regression: Regression | None) -> list[str]:
    """Why a case is flagged: its failed checks, then its regression reasons."""
    lines = [f"{check.name}: {check.detail}" for check in result.failures]
    if regression is not None:
        lines += [f"regression: {reason}" for reason in regression.reasons]
    if lines:
        lines += spelling_notes(result.corrected, result.unmatched, result.searchable)
        lines += synonym_notes(result.related)
    if lines and not result.retrieved and result.error is None and result.case.filter:
        lines.append(f"searched only passages with {filter_text(result.case.filter)} "
                     "(the case's filter)")
    if lines and result.best_below_min is not None and result.case.min_score is not None:
        lines.append(f"the case's minScore {result.case.min_score:g} cut every result (the "
                     f"best scored {result.best_below_min:.2f})")
    return lines


def flagged(report: EvalReport, diff: BaselineDiff | None
             ) -> list[tuple[CaseResult, Regression | None]]:
    out = []
    for result in report.results:
        regression = regression_of(diff, result)
        if not result.passed or regression is not None:
            out.append((result, regression))
    return out


def rate_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def mrr_text(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def metrics_text(metrics: Metrics) -> str:
    """``hit rate · MRR · nDCG · recall`` on one line, ``n/a`` where not measured."""
    return (f"hit rate {rate_text(metrics.hit_rate)} · MRR {mrr_text(metrics.mrr)} · "
            f"nDCG {mrr_text(metrics.ndcg)} · recall {rate_text(metrics.recall)}")


def delta_text(now: float | None, then: float | None, *, percent: bool) -> str:
    if now is None or then is None:
        return ""
    change = (now - then) * (100 if percent else 1)
    if abs(change) < 0.0005:
        return " (±0)"
    sign = "+" if change > 0 else "−"
    text = f"{abs(change):.1f} pts" if percent else f"{abs(change):.3f}"
    return f" ({sign}{text})"
