"""Retrieval eval suites: load, run against any retriever, measure, compare, judge."""

from kbctl.evals.baseline import (
    BaselineDiff,
    CaseRef,
    Regression,
    check_tolerances,
    compare_with_baseline,
    load_baseline,
)
from kbctl.evals.model import Case, Defaults, Expect, Suite
from kbctl.evals.report import report_to_json
from kbctl.evals.run import (
    CaseResult,
    CheckResult,
    EvalReport,
    Metrics,
    Retrieved,
    Retriever,
    compute_metrics,
    run_case,
    run_suites,
)
from kbctl.evals.scaffold import scaffold_suite
from kbctl.evals.suite import expand_suite_paths, load_suite, load_suites, parse_suite
from kbctl.evals.verdict import FAIL_ON, Verdict, judge_run, verdict

__all__ = [
    "FAIL_ON",
    "BaselineDiff",
    "Case",
    "CaseRef",
    "CaseResult",
    "CheckResult",
    "Defaults",
    "EvalReport",
    "Expect",
    "Metrics",
    "Regression",
    "Retrieved",
    "Retriever",
    "Suite",
    "Verdict",
    "check_tolerances",
    "compare_with_baseline",
    "compute_metrics",
    "expand_suite_paths",
    "judge_run",
    "load_baseline",
    "load_suite",
    "load_suites",
    "parse_suite",
    "report_to_json",
    "run_case",
    "run_suites",
    "scaffold_suite",
    "verdict",
]
