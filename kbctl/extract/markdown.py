"""Markdown documents: YAML front matter and title.

Front matter is metadata, not content: it is removed from the body so it is neither
chunked nor embedded, and its ``title`` wins over the first H1 because sites render it
as the page title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from kbctl.chunk.headings import block_tokens, heading_texts, normalize_source
from kbctl.errors import ExtractError
from kbctl.linefile import LoadError, construct_bounded

_OPENING = re.compile(r"---[ \t]*\r?\n")
_CLOSING = re.compile(r"^(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.MULTILINE)


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


def split_front_matter(text: str) -> tuple[dict[str, Any], str, bool]:
    """(front matter, the text after it, whether there was a block): what a page template
    (HTML, a section page) needs, without reading the body. Raises like
    ``parse_markdown_document``."""
    text = text.removeprefix("\ufeff")
    opening = _OPENING.match(text)
    closing = _CLOSING.search(text, opening.end()) if opening else None
    if not (opening and closing):
        return {}, text, False
    return _load_yaml(text[opening.end():closing.start()]), text[closing.end():], True


def _load_yaml(raw: str) -> dict[str, Any]:
    """The block as a mapping, read as every YAML input of kbctl is: an alias bomb or a
    nesting past the stack is an input error naming the file, never a crash of the run."""
    hint = "fix the block between the leading '---' lines, or remove it"
    try:
        data = construct_bounded(yaml.SafeLoader(raw))
    except LoadError as exc:
        where = f" at line {exc.line + 1}" if exc.line is not None else ""
        raise ExtractError(f"front matter{where}: {exc.message}", hint=hint) from None
    except RecursionError:
        raise ExtractError("invalid YAML front matter: nested too deeply", hint=hint) from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        mark = getattr(exc, "problem_mark", None)
        # +2: the opening `---` is line 1 and YAML marks count from 0.
        where = f" at line {mark.line + 2}, column {mark.column + 1}" if mark else ""
        raise ExtractError(f"invalid YAML front matter{where}: {problem}", hint=hint) from exc
    return data if isinstance(data, dict) else {}


def _title(front_matter: dict[str, Any], body: str) -> str | None:
    value = front_matter.get("title")
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        title = str(value).strip()
        if title:
            return title
    tokens = block_tokens(normalize_source(body))
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h1" and tok.level == 0:
            title = heading_texts(tokens[i + 1].content)[0]
            if title:
                return title
    return None
