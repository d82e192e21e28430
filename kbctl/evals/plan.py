"""An eval run's inputs, validated and loaded once, before anything is retrieved: the
policy, the tolerances, the suites and the baseline. A typo costs no embedding call."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kbctl.errors import InputError
from kbctl.evals.baseline import Baseline, check_tolerances, compare_with_baseline, load_baseline
from kbctl.evals.model import Suite
from kbctl.evals.outcome import EvalOutcome, judged
from kbctl.evals.retriever import MeasuredRetriever, RetrieverPin
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

    @property
    def pins(self) -> tuple[RetrieverPin, ...]:
        """The retrievers the suites were written for (``defaults.retriever``)."""
        return tuple(suite.defaults.retriever for suite in self.suites
                     if suite.defaults.retriever is not None)


def plan_eval(paths: Sequence[str | Path], *, baseline: str | Path | None = None,
              rank_tolerance: int = 0, score_tolerance: float | None = None,
              fail_on: str = "any",
              reports: Mapping[str, str | Path | None] | None = None) -> EvalPlan:
    """Check the policy and tolerances, then load the suites and the baseline.
    ``reports``: the files the run will write, by the option that names them."""
    check_fail_on(fail_on, has_baseline=baseline is not None)
    check_tolerances(rank_tolerance, score_tolerance)
    suites = tuple(load_suites(paths))
    past = load_baseline(baseline) if baseline is not None else None
    inputs = [(f"the suite {s.path}", Path(s.path)) for s in suites]
    if baseline is not None:
        inputs.append((f"the baseline {Path(baseline).as_posix()}", Path(baseline)))
    _check_reports(reports or {}, inputs)
    return EvalPlan(suites, past, rank_tolerance, score_tolerance, fail_on)


def _check_reports(reports: Mapping[str, str | Path | None],
                   inputs: list[tuple[str, Path]]) -> None:
    """Refuse a report file that is one of the run's inputs, or another report's file: a
    typo in a workflow replaced the baseline with JUnit XML (and the next run failed)."""
    taken = list(inputs)
    for option, target in reports.items():
        if target is None:
            continue
        path = Path(target)
        for what, other in taken:
            if _same_file(path, other):
                raise InputError(f"{option} {path.as_posix()}: that is {what}, which the "
                                 "report would replace", hint=f"give {option} a file of its "
                                 "own")
        taken.append((f"the file of {option}", path))


def _same_file(a: Path, b: Path) -> bool:
    """One file by two names (a link, another spelling), or one path not yet written."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # unreadable, or a symlink loop: left to the writer
        return False


def run_plan(plan: EvalPlan, retriever: Retriever, *, namespace: str, embedder: object,
             reranker: object = "none", measured: MeasuredRetriever | None = None,
             clock: Callable[[], float] = time.perf_counter,
             on_result: Callable[[CaseResult], None] | None = None) -> EvalOutcome:
    """Run the planned suites, compare with the baseline, judge once."""
    report = run_suites(plan.suites, retriever, namespace=namespace, embedder=embedder,
                        reranker=reranker, measured=measured, clock=clock,
                        on_result=on_result)
    diff = None
    if plan.baseline is not None:
        diff = compare_with_baseline(report, plan.baseline, rank_tolerance=plan.rank_tolerance,
                                     score_tolerance=plan.score_tolerance)
    return judged(report, diff, plan.fail_on)
