"""An eval run's inputs, validated and loaded once, before anything is retrieved: the
policy, the tolerances, the suites and the baseline. A typo costs no embedding call."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbctl.evals.baseline import Baseline, check_tolerances, compare_with_baseline, load_baseline
from kbctl.evals.model import Suite
from kbctl.evals.outcome import EvalOutcome, judged
from kbctl.evals.run import CaseResult, Retriever, run_suites
from kbctl.evals.suite import load_suites
from kbctl.evals.verdict import check_fail_on


@dataclass(frozen=True)
class EvalPlan:
    suites: tuple[Suite, ...]
    baseline: Baseline | None
    rank_tolerance: int
    score_tolerance: float | None
    fail_on: str


def plan_eval(paths: Sequence[str | Path], *, baseline: str | Path | None = None,
              rank_tolerance: int = 0, score_tolerance: float | None = None,
              fail_on: str = "any") -> EvalPlan:
    """Check the policy and tolerances, then load the suites and the baseline."""
    check_fail_on(fail_on, has_baseline=baseline is not None)
    check_tolerances(rank_tolerance, score_tolerance)
    suites = tuple(load_suites(paths))
    past = load_baseline(baseline) if baseline is not None else None
    return EvalPlan(suites, past, rank_tolerance, score_tolerance, fail_on)


def run_plan(plan: EvalPlan, retriever: Retriever, *, namespace: str, embedder: object,
             reranker: object = "none", clock: Callable[[], float] = time.perf_counter,
             on_result: Callable[[CaseResult], None] | None = None) -> EvalOutcome:
    """Run the planned suites, compare with the baseline, judge once."""
    report = run_suites(plan.suites, retriever, namespace=namespace, embedder=embedder,
                        reranker=reranker, clock=clock, on_result=on_result)
    diff = None
    if plan.baseline is not None:
        diff = compare_with_baseline(report, plan.baseline, rank_tolerance=plan.rank_tolerance,
                                     score_tolerance=plan.score_tolerance)
    return judged(report, diff, plan.fail_on)
