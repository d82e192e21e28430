"""Retrieval eval suites: load, run against any retriever, measure, compare, judge."""

from kbctl.evals.baseline import (
    Baseline,
    BaselineDiff,
    CaseRef,
    Regression,
    check_tolerances,
    compare_with_baseline,
    load_baseline,
    parse_baseline,
)
from kbctl.evals.checks import CHECKS, Check
from kbctl.evals.model import Case, Defaults, Expect, Suite
from kbctl.evals.outcome import EvalOutcome, judged
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
from kbctl.evals.verdict import FAIL_ON, Verdict, check_fail_on, judge_run, verdict

__all__ = [
    "CHECKS",
    "FAIL_ON",
    "Baseline",
    "BaselineDiff",
    "Case",
    "Check",
    "CaseRef",
    "CaseResult",
    "CheckResult",
    "Defaults",
    "EvalOutcome",
    "EvalReport",
    "Expect",
    "Metrics",
    "Regression",
    "Retrieved",
    "Retriever",
    "Suite",
    "Verdict",
    "check_fail_on",
    "check_tolerances",
    "compare_with_baseline",
    "compute_metrics",
    "expand_suite_paths",
    "judge_run",
    "judged",
    "load_baseline",
    "load_suite",
    "load_suites",
    "parse_baseline",
    "parse_suite",
    "report_to_json",
    "run_case",
    "run_suites",
    "scaffold_suite",
    "verdict",
]
