"""Markdown documents: YAML front matter and title.

Front matter is metadata, not content: it is removed from the body so it is neither
chunked nor embedded, and its ``title`` wins over the first H1 because sites render it
as the page title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kbctl.chunk.headings import block_tokens, heading_texts, normalize_source, over_block_budget
from kbctl.frontmatter import MAX_FILTER_CHARS, split_front_matter

if TYPE_CHECKING:
    from markdown_it.token import Token


@dataclass(frozen=True)
class MarkdownDocument:
    """A markdown file split into metadata and the markdown that gets chunked."""

    title: str | None
    body: str
    front_matter: dict[str, Any] = field(default_factory=dict)
    has_front_matter: bool = False  # a block was there, even an empty one


def parse_markdown_document(text: str) -> MarkdownDocument:
    """Split off YAML front matter (``---`` at the very top) and find the title.

    Raises ``ExtractError`` when the front matter block is not valid YAML. A block that
    is valid YAML but not a mapping is dropped and yields no metadata.
    """
    front_matter, body, has_block = split_front_matter(text)
    return MarkdownDocument(title=_title(front_matter, body), body=body,
                            front_matter=front_matter, has_front_matter=has_block)


def _title(front_matter: dict[str, Any], body: str) -> str | None:
    value = front_matter.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        title = str(value).strip()
        if title and len(title) <= MAX_FILTER_CHARS:  # longer: content, not a page's title
            return title
    return first_h1(normalize_source(body))


# A line that may be or end a titled top-level H1: an ATX "# …" (a tab or four spaces in is
# code), or a setext "===" underline.
_H1_LINE = re.compile(r"^ {0,3}(?:#[ \t]|=+[ \t]*$)", re.MULTILINE)


def first_h1(text: str) -> str | None:
    """The title of the first top-level H1 of normalised ``text`` that has one, as a whole
    parse finds it. Most pages open with their title, so only the lines up to the first
    line that may be an H1, and the one after it (a table's delimiter row turns a
    ``# a | b`` line into a header), are parsed first: block structure before a line never
    depends on the lines after the next one. The whole text is parsed when that prefix has
    no titled H1 there (the line was a comment in a code block)."""
    if over_block_budget(text):
        return None  # read as plain text: it has no headings
    found = _H1_LINE.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start())
    after = text.find("\n", found.end())
    after = -1 if after < 0 else text.find("\n", after + 1)
    if after >= 0:
        title = _h1_title(block_tokens(text[:after + 1], {}), line)
        if title is not None:
            return title
    return _h1_title(block_tokens(text))


def _h1_title(tokens: list[Token], last_line: int | None = None) -> str | None:
    """The title of the first titled top-level H1 in ``tokens``, one starting at
    ``last_line`` at the latest."""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1" and tok.level == 0:
            if last_line is not None and tok.map is not None and tok.map[0] > last_line:
                return None
            title = heading_texts(tokens[i + 1].content)[0]
            if title:
                return title
    return None
