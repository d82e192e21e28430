"""A tiny eval check, to show that a check is one module plus one registry line:
``titleIncludes`` passes when a retrieved chunk's page title contains the text."""

from __future__ import annotations

from collections.abc import Sequence

from kbctl.evals.checks.base import Check, CheckResult, Retrieved, read_line

NAME = "titleIncludes"


def run(text: str, retrieved: Sequence[Retrieved]) -> CheckResult:
    for chunk in retrieved:
        if text.lower() in chunk.title.lower():
            return CheckResult(NAME, True, f"rank {chunk.rank} title '{chunk.title}'")
    return CheckResult(NAME, False, f"no retrieved title contains '{text}'")


CHECK = Check(parse=read_line, run=run)
