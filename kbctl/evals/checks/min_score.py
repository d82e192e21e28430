"""``minScore``: the best retrieved score reaches the threshold."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Check, CheckResult, Retrieved, read_score

NAME = "minScore"


def _digits(value: float) -> int:
    for digits in range(2, 7):
        if float(f"{value:.{digits}f}") == value:
            return digits
    return 6


def format_pair(value: float, threshold: float) -> tuple[str, str]:
    """At least two decimals, enough to write ``threshold`` as given and to show that the
    two numbers differ when they do."""
    for digits in range(_digits(threshold), 7):
        left, right = f"{value:.{digits}f}", f"{threshold:.{digits}f}"
        if left != right or value == threshold:
            return left, right
    return repr(value), repr(threshold)


def run(threshold: float, retrieved: Sequence[Retrieved]) -> CheckResult:
    if not retrieved:
        return CheckResult(NAME, False,
                           f"nothing retrieved; expected a top score >= {threshold:.2f}")
    top = max(chunk.score for chunk in retrieved)
    shown_top, shown_threshold = format_pair(top, threshold)
    if top >= threshold:
        return CheckResult(NAME, True, f"top score {shown_top} >= {shown_threshold}")
    return CheckResult(NAME, False, f"top score {shown_top} < {shown_threshold}")


CHECK = Check(parse=read_score, run=run)
