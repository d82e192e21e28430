"""The text a knowledge-base chunk is embedded by: what a reader of the page sees.

A chunk keeps its markdown for display and citation, links and all, but converted docs
pages spell every cross-reference out as an absolute URL
(``[`shutil`](https://docs.example.com/library/shutil.html#module-shutil)``): on a real API
reference a third of a chunk's characters are link destinations. Embedded as they are, they
push the prose out of a small model's input window (all-MiniLM-L6-v2 reads 256 word pieces)
and pull every chunk toward the URLs it shares with the rest of the site. The lexical index
keeps them: there a destination's anchor (``#os.path.splitext``) names the identifier a
sentence refers to, which BM25 can match.
"""

from __future__ import annotations

import re

# An inline link or image: the label (one level of nested brackets, backslash escapes),
# then the destination (``<…>`` or balanced one level of parentheses), if any, and an
# optional title. No two neighbouring parts can take the same characters (a destination
# starts on a non-blank, blanks before it belong to the opening), so matching stays linear
# even on a long run of blanks.
_LABEL = r"\[((?:[^\[\]\\\n]|\\.|\[(?:[^\[\]\\\n]|\\.)*\])*)\]"
_DESTINATION = (r"\(\s*(?:(?:<[^<>\n]*>|(?:[^()\s]|\([^()\s]*\))+)"
                r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*)?\)")
_LINK = re.compile(r"!?" + _LABEL + _DESTINATION)
# A link reference definition line (``[vec]: ../std/vec/struct.Vec.html "Vec"``), as mdBook
# chapters end with; a footnote (``[^1]: text``) is prose and stays.
_DEFINITION = re.compile(
    r"^ {0,3}\[(?!\^)(?:[^\[\]\\\n]|\\.)+\]:[ \t]*(?:<[^<>\n]*>|\S+)"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*(?:\n|$)", re.MULTILINE)


def embedding_text(markdown: str) -> str:
    """``markdown`` with each inline link or image replaced by its label (alt text) and
    link reference definitions dropped."""
    if "](" in markdown:
        markdown = _LINK.sub(r"\1", markdown)
    if "]:" in markdown:
        markdown = _DEFINITION.sub("", markdown)
    return markdown
