"""Abbreviation definitions (``*[HTML]: Hyper Text Markup Language``) of Python-Markdown's
``abbr`` extension: the built page shows them only as tooltips on the word, so they are
no text of the page (a snippets ``auto_append`` file of them follows every page)."""

from __future__ import annotations

import re

from .inline_html import code_lines

_DEFINITION = re.compile(r"\*\[[^\]\n]*\][ \t]?:.*")


def abbreviations_removed(text: str) -> str:
    """``text`` without its abbreviation definition lines (code blocks left as written)."""
    if "*[" not in text:
        return text
    code = code_lines(text)
    return "\n".join(line for n, line in enumerate(text.split("\n"))
                     if n in code or not _DEFINITION.fullmatch(line))
