"""``notSourceIncludes``: no retrieved chunk matches any of the patterns."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Check, CheckResult, Retrieved, matches, quoted, read_patterns

NAME = "notSourceIncludes"


def run(patterns: Sequence[str], retrieved: Sequence[Retrieved]) -> CheckResult:
    if not retrieved:
        return CheckResult(NAME, True, f"nothing retrieved, so nothing matched {quoted(patterns)}")
    offending = [(chunk, pattern) for chunk in retrieved for pattern in patterns
                 if matches(chunk, pattern)]
    if not offending:
        return CheckResult(NAME, True, f"no chunk matched {quoted(patterns)}")
    chunk, pattern = offending[0]
    ranks = sorted({c.rank for c, _ in offending})
    more = f" (matching ranks: {', '.join(map(str, ranks))})" if len(ranks) > 1 else ""
    return CheckResult(NAME, False,
                       f"rank {chunk.rank} matched excluded '{pattern}': {chunk.citation}{more}")


CHECK = Check(parse=read_patterns, run=run)
