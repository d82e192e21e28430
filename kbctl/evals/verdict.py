"""Whether a run passes, under the chosen ``fail_on`` policy.

``any`` (the default): the run fails on any failed case and on any regression against a
baseline. ``regression``: only regressions fail the run, so a suite can hold cases that
are known to fail; it needs a baseline.
"""

from __future__ import annotations

from dataclasses import dataclass

from kbctl.errors import InputError
from kbctl.evals.baseline import BaselineDiff
from kbctl.evals.run import EvalReport
from kbctl.hygiene import counted

FAIL_ON = ("any", "regression")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    fail_on: str
    reason: str


def check_fail_on(fail_on: str, *, has_baseline: bool) -> None:
    """Refuse a policy that does not exist, or ``regression`` with nothing to compare."""
    if fail_on not in FAIL_ON:
        raise InputError(f"--fail-on must be one of {', '.join(FAIL_ON)}, got '{fail_on}'")
    if fail_on == "regression" and not has_baseline:
        raise InputError("--fail-on regression needs --baseline (a report of an earlier run)")


def judge_run(report: EvalReport, diff: BaselineDiff | None, fail_on: str) -> Verdict:
    """The verdict with a one-line reason for people."""
    check_fail_on(fail_on, has_baseline=diff is not None)
    regressions = len(diff.regressions) if diff is not None else 0
    if fail_on == "regression":
        assert diff is not None  # checked above
        if regressions:
            return Verdict(False, fail_on, f"{counted(regressions, 'regression')} "
                           f"against {diff.source}")
        tolerated = f" ({counted(report.failed, 'failing case')}, none a regression)" \
            if report.failed else ""
        return Verdict(True, fail_on, f"no regression against {diff.source}{tolerated}")
    problems = []
    if report.failed:
        problems.append(f"{report.failed} of {report.total} cases failed")
    if diff is not None and regressions:
        problems.append(f"{counted(regressions, 'regression')} against {diff.source}")
    if problems:
        return Verdict(False, fail_on, "; ".join(problems))
    tail = f", no regression against {diff.source}" if diff is not None else ""
    passed = f"all {report.total} cases passed" if report.total != 1 else "the case passed"
    return Verdict(True, fail_on, f"{passed}{tail}")


def verdict(report: EvalReport, diff: BaselineDiff | None, fail_on: str) -> bool:
    """True when the run passes."""
    return judge_run(report, diff, fail_on).passed
