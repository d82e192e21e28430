"""Write a starter suite from a KB's top-level sections (``kbctl eval init``).

One case per section: the heading is the question, the section's url is what must be
retrieved and its anchor what the chunk must carry. The output is meant to be edited
(questions phrased the way readers ask) and always loads back cleanly, as YAML or JSON.

A case that could not tell a good ranking from a bad one is left out: a heading that
several sections share ("Summary" in every chapter) asks something no single answer
satisfies, and a url that every other one contains (the site's root) matches any result.
"""

from __future__ import annotations

import bisect
import json
import re
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

import yaml

from kbctl.errors import InputError
from kbctl.evals.model import DEFAULT_TOP_K
from kbctl.evals.suite import SUITE_VERSION

_HEADER = """\
# kbctl eval suite: one case per top-level section of the knowledge base.
# Rephrase each question the way a reader would ask it, then run `kbctl eval` on this file.
# Checks: sourceIncludes (any must match), notSourceIncludes (none may match),
# minScore (top score floor) and anchor (some chunk's anchor contains it).
"""
_MAX_ID = 60


def slug(text: str) -> str:
    """Lowercase ASCII words joined by dashes; ``case`` when nothing is left."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    return words[:_MAX_ID].rstrip("-") or "case"


def _one_line(text: str | None) -> str:
    printable = "".join(ch if ch.isprintable() else " " for ch in text or "")
    return " ".join(printable.split())


def _question(heading: str, url: str, position: int) -> str:
    if _one_line(heading):
        return _one_line(heading)
    return f"What is on {url}?" if url else f"Section {position}"


def _prefixes_of_most(pages: set[str]) -> set[str]:
    """The pages that more than half of ``pages`` (and at least two) start with, counted
    in sorted order (a page's extensions follow it): n log n, where comparing every pair
    took minutes on a KB of 20,000 pages."""
    ordered = sorted(pages)
    most = max(1, len(ordered) // 2)
    return {p for i, p in enumerate(ordered)
            if bisect.bisect_left(ordered, p + "\U0010ffff", lo=i) - i > most}


def scaffold_suite(sections: Sequence[tuple[str, str, str | None]],
                   *, top_k: int = DEFAULT_TOP_K, fmt: str = "yaml",
                   without: Collection[str] = ()) -> str:
    """A suite (``yaml`` or ``json``) with one case per ``(heading, url, anchor)``
    section that can fail, ids unique; the cases ``without`` names are left out (their
    ids are given as if they were there, so the others keep theirs)."""
    if not sections:
        raise InputError("nothing to scaffold: the knowledge base has no sections",
                         hint="ingest some documents first")
    questions = Counter(_one_line(heading).lower() for heading, _, _ in sections)
    pages = {_one_line(url).split("#", 1)[0] for _, url, _ in sections}
    # a page most pages' urls start with (the site's root): almost every result matches it
    # (a pattern matches a substring), so a check on it could hardly fail
    roots = _prefixes_of_most(pages)
    used: set[str] = set()
    cases: list[dict[str, Any]] = []
    for position, (heading, raw_url, raw_anchor) in enumerate(sections, start=1):
        url, anchor = _one_line(raw_url), _one_line(raw_anchor)
        page = url.split("#", 1)[0]
        if _one_line(heading) and questions[_one_line(heading).lower()] > 1:
            continue  # asked of several sections: no one answer is the right one
        if page in roots:
            page = ""
        if not page and not anchor:
            continue
        base = slug(heading or url.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1])
        case_id, n = base, 1
        while case_id in used:
            n += 1
            case_id = f"{base}-{n}"
        used.add(case_id)
        if case_id in without:
            continue
        expect: dict[str, Any] = {}
        if page:
            expect["sourceIncludes"] = page
        if anchor:
            expect["anchor"] = anchor
        cases.append({"id": case_id, "question": _question(heading, url, position),
                      "expect": expect})
    if not cases:
        raise InputError("nothing to scaffold: no section's heading asks for it alone",
                         hint="write the suite's questions by hand")
    body = {"version": SUITE_VERSION, "defaults": {"topK": top_k}, "cases": cases}
    if fmt == "json":
        return json.dumps(body, indent=2, ensure_ascii=False) + "\n"
    dumped = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=1000,
                            default_flow_style=False)
    return _HEADER + dumped
