"""Markdown documents: YAML front matter and title.

Front matter is metadata, not content: it is removed from the body so it is neither
chunked nor embedded, and its ``title`` wins over the first H1 because sites render it
as the page title.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kbctl.chunk.headings import block_tokens, heading_texts, normalize_source
from kbctl.frontmatter import MAX_FILTER_CHARS, split_front_matter


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
    tokens = block_tokens(normalize_source(body))
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1" and tok.level == 0:
            title = heading_texts(tokens[i + 1].content)[0]
            if title:
                return title
    return None
