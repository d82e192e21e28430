"""Text written into markdown must stay the text it was: a line of a paragraph that
starts like a heading, a list item, a quote, a setext underline, a fence or an HTML block
would turn into that structure when the markdown is read back. A heading that is not one
gives a section, and an anchor no page has; an HTML block or a fence swallows every later
heading of the page.
"""

from __future__ import annotations

import re

# ``*`` and backticks count too: text from HTML escapes them itself, the reStructuredText
# writer does not.
_LINE_START = re.compile(
    r"^(?=#{1,6}(?:\s|$)|>|[-+*](?:\s|$)|=+\s*$|-+\s*$|~~~|```|<[A-Za-z/!?])", re.M)
# "1. " opens a list; CommonMark escapes it as "1\. " (a backslash before a digit is literal).
_ORDERED_START = re.compile(r"^(\d{1,9})([.)])(?=\s|$)", re.M)


def literal_line_starts(text: str) -> str:
    """``text`` with a backslash where a line's start would read as markdown structure."""
    if _LINE_START.search(text):
        text = _LINE_START.sub("\\\\", text)
    if text[:1].isdigit() or "\n" in text:
        text = _ORDERED_START.sub(r"\1\\\2", text)
    return text
