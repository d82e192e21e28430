"""Docsify's sidebar marks in headings, kept for the heading's id.

``## Title <!-- {docsify-ignore} -->`` hides a heading from Docsify's sidebar. Docsify 5
slugs the heading's source, comment included (its tag is dropped, the space before it
stays: ``title-``), but kbctl reads raw HTML as a browser shows it and would drop the
comment first; it becomes a mark of text the Docsify profile reads (and never shows).
"""

from __future__ import annotations

import re

from ..generators.docsify import COMMENTED_IGNORE

_MARK_IN_HEADING = re.compile(
    r"^(\s{0,3}#{1,6}[ \t].*?)<!--\s*\{docsify-ignore(?:-all)?\}\s*-->", re.MULTILINE)


def ignore_marks_kept(text: str) -> str:
    """``text`` with each heading's ``<!-- {docsify-ignore} -->`` as ``COMMENTED_IGNORE``."""
    if "docsify-ignore" not in text:
        return text
    return _MARK_IN_HEADING.sub(lambda m: m.group(1) + COMMENTED_IGNORE, text)
