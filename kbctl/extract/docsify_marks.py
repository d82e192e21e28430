"""Docsify's sidebar marks in headings, kept for the heading's id; and whether a page is
a Docsify shell (a script of its sets ``$docsify``).

``## Title <!-- {docsify-ignore} -->`` hides a heading from Docsify's sidebar. Docsify 5
slugs the heading's source, comment included (its tag is dropped, the space before it
stays: ``title-``), but kbctl reads raw HTML as a browser shows it and would drop the
comment first; it becomes a mark of text the Docsify profile reads (and never shows).
"""

from __future__ import annotations

import re

from lxml import etree

from ..jsscan import without_comments

# ``<!-- {docsify-ignore} -->`` in a heading, as the markdown reader leaves it for the ids
COMMENTED_IGNORE = "{docsify-ignore:comment}"
_CONFIG = re.compile(r"\$docsify\s*=")
_MARK_IN_HEADING = re.compile(
    r"^(\s{0,3}#{1,6}[ \t].*?)<!--\s*\{docsify-ignore(?:-all)?\}\s*-->", re.MULTILINE)


def ignore_marks_kept(text: str) -> str:
    """``text`` with each heading's ``<!-- {docsify-ignore} -->`` as ``COMMENTED_IGNORE``."""
    if "docsify-ignore" not in text:
        return text
    return _MARK_IN_HEADING.sub(lambda m: m.group(1) + COMMENTED_IGNORE, text)


def is_shell(root: etree._Element | None) -> bool:
    """Whether a parsed page is a Docsify shell: a script of its sets ``$docsify``."""
    return scripts_in(root)[0] is not None


def scripts_in(root: etree._Element | None) -> tuple[str | None, list[str]]:
    """The code of the script that sets ``$docsify`` (None without one) and the sources of
    the scripts that load Docsify."""
    config: str | None = None
    sources: list[str] = []
    for script in root.iter("script") if root is not None else ():
        src = script.get("src")
        if src is not None:
            if "docsify" in src.lower():
                sources.append(src)
        elif config is None and script.text and _CONFIG.search(code := without_comments(
                script.text)):
            config = code
    return config, sources
