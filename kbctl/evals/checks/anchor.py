"""``anchor``: some retrieved chunk's anchor contains the fragment (case-insensitive)."""

from __future__ import annotations

from collections.abc import Sequence

from .base import Check, CheckResult, Retrieved, listing, read_line

NAME = "anchor"


def run(fragment: str, retrieved: Sequence[Retrieved]) -> CheckResult:
    if not retrieved:
        return CheckResult(NAME, False,
                           f"nothing retrieved; expected a chunk anchor containing '{fragment}'")
    anchored = [chunk for chunk in retrieved if chunk.anchor]
    if not anchored:
        return CheckResult(NAME, False, "no retrieved chunk carries an anchor; expected one "
                           f"containing '{fragment}'")
    needle = fragment.lower()
    for chunk in anchored:
        if chunk.anchor and needle in chunk.anchor.lower():
            return CheckResult(NAME, True,
                               f"rank {chunk.rank} anchor '{chunk.anchor}' contains '{fragment}'")
    got = listing(list(dict.fromkeys(chunk.anchor or "" for chunk in anchored)))
    return CheckResult(NAME, False, f"no chunk anchor contains '{fragment}'; got anchors: {got}")


CHECK = Check(parse=read_line, run=run)
