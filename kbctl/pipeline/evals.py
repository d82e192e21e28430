"""``kbctl eval`` as one pipeline call: load suites and baseline, run, compare, judge.

Input is checked before the first retrieval (policy, suite files, baseline), so a typo
costs no embedding calls. The retriever is injected; see ``kbctl.evals.run.Retriever``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbctl.errors import InputError
from kbctl.evals import (
    FAIL_ON,
    BaselineDiff,
    CaseResult,
    EvalReport,
    Retriever,
    Verdict,
    check_tolerances,
    compare_with_baseline,
    judge_run,
    load_baseline,
    load_suites,
    report_to_json,
    run_suites,
    scaffold_suite,
)

__all__ = ["EvalOutcome", "run_eval", "scaffold_suite"]


@dataclass(frozen=True)
class EvalOutcome:
    report: EvalReport
    diff: BaselineDiff | None
    verdict: Verdict

    def to_json(self) -> dict[str, Any]:
        return report_to_json(self.report, self.diff, fail_on=self.verdict.fail_on)


def run_eval(
    paths: Sequence[str | Path],
    retriever: Retriever,
    *,
    namespace: str,
    embedder: object,
    baseline: str | Path | None = None,
    rank_tolerance: int = 0,
    score_tolerance: float | None = None,
    fail_on: str = "any",
    clock: Callable[[], float] = time.perf_counter,
    on_result: Callable[[CaseResult], None] | None = None,
) -> EvalOutcome:
    """Run the suites at ``paths`` and judge them, against ``baseline`` when given."""
    if fail_on not in FAIL_ON:
        raise InputError(f"fail-on must be one of {', '.join(FAIL_ON)}, got {fail_on!r}")
    if fail_on == "regression" and baseline is None:
        raise InputError("fail-on 'regression' needs a baseline report to compare with",
                         hint="give a baseline, or fail on any failed case")
    check_tolerances(rank_tolerance, score_tolerance)
    suites = load_suites(paths)
    past = label = None
    if baseline is not None:
        past, label = load_baseline(baseline), Path(baseline).as_posix()
    report = run_suites(suites, retriever, namespace=namespace, embedder=embedder,
                        clock=clock, on_result=on_result)
    diff = None
    if past is not None and label is not None:
        diff = compare_with_baseline(report, past, rank_tolerance=rank_tolerance,
                                     score_tolerance=score_tolerance, source=label)
    return EvalOutcome(report=report, diff=diff, verdict=judge_run(report, diff, fail_on))
