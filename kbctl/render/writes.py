"""The few writes of the output layer: report files (the JSON report, JUnit) and what a
GitHub runner reads (annotations, the job summary, step outputs), each where its reader
looks for it. Everything written is rendered by the pure formats beside this module."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from ..atomic import write_replacing
from ..errors import EnvironmentFailure, InputError, KbctlError
from ..evals.outcome import EvalOutcome
from . import eval as eval_formats
from .formats import Rendered
from .github import error_annotations, error_output, error_summary, github_output, github_summary
from .output import Output


def write_report_file(path: Path, text: str, what: str, *, append: bool = False,
                      error: type[KbctlError] = InputError) -> None:
    """Write a report file, replacing it whole (a failed write leaves the old one, say the
    baseline the next run reads), or appending to it. A path the user gave is bad input
    (2), one the runner gave is a broken environment (3); a full disk or a failing device
    is the environment's, whoever named the path."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if append:
            with path.open("a", encoding="utf-8") as fh:
                fh.write(text)
        else:
            write_replacing(path, text)
    except OSError as exc:
        kind = EnvironmentFailure if exc.errno in _ENVIRONMENT_ERRNOS else error
        raise kind(f"{path}: cannot write {what}: {exc.strerror or exc}") from None


_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EIO}


def report_text(outcome: EvalOutcome) -> str:
    """The JSON report of a run, as ``--json`` prints it."""
    return eval_formats.FORMATS["json"](outcome).text()


def write_eval_reports(outcome: EvalOutcome, *, save_baseline: Path | None = None,
                       junit: Path | None = None) -> None:
    """The files the user asked for: the JSON report (the next baseline) and JUnit XML."""
    if save_baseline is not None:
        write_report_file(save_baseline, report_text(outcome), "the report (--save-baseline)")
    if junit is not None:
        write_report_file(junit, eval_formats.FORMATS["junit"](outcome).text(),
                          "the JUnit report (--junit)")


def emit_github(outcome: EvalOutcome, out: Output, *, report_path: Path | None,
                json_output: bool) -> None:
    """Annotations (stdout, or stderr beside --json: GitHub reads both), the job summary
    and the step outputs, each where the runner looks for it."""
    annotations = eval_formats.FORMATS["github"](
        outcome, root=os.environ.get("GITHUB_WORKSPACE")).text()
    if annotations:  # through the output layer: a closed or vanished reader is handled there
        out.emit(Rendered.stderr(annotations) if json_output else Rendered.stdout(annotations))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        text = github_summary(outcome) + "\n"
        write_report_file(Path(summary), text, "the job summary ($GITHUB_STEP_SUMMARY)",
                          append=True, error=EnvironmentFailure)
    else:
        out.note("GITHUB_STEP_SUMMARY is not set: no job summary written")
    outputs = os.environ.get("GITHUB_OUTPUT")
    if outputs:
        if report_path is None:
            report_path = _temp_report(outcome)
        write_report_file(Path(outputs),
                          github_output(outcome, report_path=str(report_path.resolve())),
                          "the step outputs ($GITHUB_OUTPUT)", append=True,
                          error=EnvironmentFailure)


def _temp_report(outcome: EvalOutcome) -> Path:
    """The JSON report in the runner's temp dir, for the ``report`` step output."""
    runner_temp = os.environ.get("RUNNER_TEMP") or None
    try:
        fd, name = tempfile.mkstemp(prefix="kbctl-eval-report-", suffix=".json",
                                    dir=runner_temp)
    except OSError as exc:
        raise EnvironmentFailure(f"cannot create the JSON report in "
                                 f"{runner_temp or 'the temp dir'}: {exc}") from None
    os.close(fd)
    path = Path(name)
    write_report_file(path, report_text(outcome), "the JSON report", error=EnvironmentFailure)
    return path


def emit_github_error(message: str, out: Output, *, json_output: bool) -> None:
    """What a runner shows of an eval run that could not start: annotations on the suite's
    lines, the job summary and ``verdict=error``; a file that cannot be written is left
    (the error itself is what the run reports)."""
    annotations = "\n".join(error_annotations(message,
                                              root=os.environ.get("GITHUB_WORKSPACE"))) + "\n"
    out.emit(Rendered.stderr(annotations) if json_output else Rendered.stdout(annotations))
    for variable, text in (("GITHUB_STEP_SUMMARY", error_summary(message) + "\n"),
                           ("GITHUB_OUTPUT", error_output(message))):
        target = os.environ.get(variable)
        if target:
            try:
                write_report_file(Path(target), text, f"${variable}", append=True)
            except KbctlError as exc:
                out.note(f"warning: {exc.message}")
