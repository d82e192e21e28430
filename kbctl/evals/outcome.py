"""A judged eval run: the report, its comparison with the baseline and the verdict, decided
once. The JSON report and every rendering read the verdict from here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kbctl.evals.baseline import BaselineDiff
from kbctl.evals.report import report_to_json
from kbctl.evals.run import EvalReport
from kbctl.evals.verdict import Verdict, judge_run


@dataclass(frozen=True)
class EvalOutcome:
    report: EvalReport
    diff: BaselineDiff | None
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return report_to_json(self.report, self.diff, self.verdict)


def judged(report: EvalReport, diff: BaselineDiff | None = None,
           fail_on: str = "any") -> EvalOutcome:
    """The outcome of ``report`` under ``fail_on`` (the one place a run is judged)."""
    return EvalOutcome(report=report, diff=diff, verdict=judge_run(report, diff, fail_on))
