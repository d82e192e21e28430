"""Give every heading of a markdown page the id its generator renders, written as an
explicit ``{#id}`` that the heading-aware chunker takes verbatim.

Headings are rewritten as ATX lines (``## Title {#id}``) so setext headings and closing
``#`` sequences need no special case; everything else is left byte for byte.
"""

from __future__ import annotations

from ..chunk.headings import (
    block_tokens,
    heading_texts,
    inline_text,
    normalize_source,
    split_explicit_id,
)
from .base import HeadingIds


def with_heading_ids(markdown: str, ids: HeadingIds) -> str:
    """``markdown`` with ``{#id}`` on each top-level heading; ids are allocated for every
    heading (nested ones too) in document order, as the generator does."""
    text = normalize_source(markdown)
    tokens = block_tokens(text)
    lines = text.split("\n")
    replacements: dict[int, tuple[int, str]] = {}
    honour = ids.honours_explicit
    for i, tok in enumerate(tokens):
        if tok.type != "heading_open" or tok.map is None:
            continue
        content = tokens[i + 1].content
        if honour:
            _, plain, explicit = heading_texts(content)
        else:  # a written {#id} is literal text for this generator
            plain, explicit = inline_text(content)[1], None
        if ids.reads_source:
            plain = content if explicit is None else split_explicit_id(content)[0]
        anchor = ids(plain.strip(), explicit)
        if int(tok.tag[1:]) in ids.idless_levels:
            anchor = None  # counted, as the generator's slugger does, but never rendered
        if tok.level > 0 or anchor is None:
            continue  # no id, or inside a list or quote: not a section, but it took its id
        body = content if explicit is None else split_explicit_id(content)[0]
        body = " ".join(part.strip() for part in body.split("\n"))
        first, end = tok.map
        replacements[first] = (end, f"{'#' * int(tok.tag[1:])} {body} {{#{anchor}}}")
    if not replacements:
        return markdown
    out: list[str] = []
    line = 0
    while line < len(lines):
        if line in replacements:
            end, heading = replacements[line]
            out.append(heading)
            line = end
            continue
        out.append(lines[line])
        line += 1
    return "\n".join(out)

