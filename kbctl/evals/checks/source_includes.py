"""``sourceIncludes``: some retrieved chunk matches one of the patterns (the check the
hit rate and MRR are measured on)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Check, CheckResult, Retrieved, listing, matches, quoted, read_patterns

NAME = "sourceIncludes"


def first_match(patterns: Sequence[str],
                retrieved: Sequence[Retrieved]) -> tuple[Retrieved, str] | None:
    for chunk in retrieved:
        for pattern in patterns:
            if matches(chunk, pattern):
                return chunk, pattern
    return None


def first_match_rank(patterns: Sequence[str], retrieved: Sequence[Retrieved]) -> int | None:
    """The rank of the first chunk matching a pattern (``None``: none, or no patterns)."""
    found = first_match(patterns, retrieved) if patterns else None
    return found[0].rank if found is not None else None


def run(patterns: Sequence[str], retrieved: Sequence[Retrieved]) -> CheckResult:
    if not retrieved:
        detail = f"nothing retrieved; expected a chunk matching {quoted(patterns)}"
        return CheckResult(NAME, False, detail)
    found = first_match(patterns, retrieved)
    if found is None:
        got = listing([chunk.citation for chunk in retrieved])
        return CheckResult(NAME, False, f"no chunk matched {quoted(patterns)}; got: {got}")
    chunk, pattern = found
    return CheckResult(NAME, True, f"rank {chunk.rank} matched '{pattern}': {chunk.citation}")


CHECK = Check(parse=read_patterns, run=run)
