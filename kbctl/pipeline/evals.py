"""``kbctl eval`` as one library call: plan (validate and load once), run, compare, judge
once. The retriever is injected; see ``kbctl.evals.run.Retriever``."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path

from kbctl.evals import CaseResult, Retriever, scaffold_suite
from kbctl.evals.outcome import EvalOutcome
from kbctl.evals.plan import EvalPlan, plan_eval, run_plan

__all__ = ["EvalOutcome", "EvalPlan", "plan_eval", "run_eval", "run_plan", "scaffold_suite"]


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
    plan = plan_eval(paths, baseline=baseline, rank_tolerance=rank_tolerance,
                     score_tolerance=score_tolerance, fail_on=fail_on)
    return run_plan(plan, retriever, namespace=namespace, embedder=embedder, clock=clock,
                    on_result=on_result)
