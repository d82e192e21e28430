"""Heading-aware markdown chunking.

The document is parsed once with markdown-it; top-level headings (ATX and setext) build a
section tree, and each section's body is cut into chunks made of whole blocks where
possible. Chunk bodies are slices of the source, so markup, tables and lists survive
as written. Each chunk is prefixed with its breadcrumb (``A › B › C``) so a retrieved
chunk still says where it comes from.

Anchors: a trailing ``{#id}`` on the heading line is the heading's real id and is used
verbatim. Other headings get GitHub slugs, deduplicated per document. An explicit id is
reserved (a later slug equal to it gets a suffix) but its heading's text is not counted
as an occurrence of that text's slug, so ``## f {#x}`` followed by ``## f`` yields
``x`` and ``f``, exactly the anchors a renderer honouring the attribute would produce.

Markdown converted from a web page is chunked with ``slug_headings=False``: its ids are the
page's own, written as ``{#id}``, and a heading the page gave no id is cited by its
enclosing section's id (or the page), since a slug of it would name nothing on the page.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from markdown_it.token import Token

from kbctl.chunk.headings import block_tokens, heading_texts, normalize_source
from kbctl.chunk.model import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    clip_title,
    estimate_tokens,
)
from kbctl.chunk.slug import Slugger, slug_plain
from kbctl.chunk.text import Boundaries, Span, budget_chars, chunk_text, pack, split_span

BREADCRUMB_SEPARATOR = " › "
_CLOSING_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[ \t]*")
# A link reference definition on one line (``[guide]: https://… "Title"``): markdown-it
# gives it no token, and a page shows nothing of it.
_REFERENCE = re.compile(r" {0,3}\[[^\]\n]+\]:[ \t]*\S+(?:[ \t]+.*)?")


@dataclass
class _Block:
    first_line: int
    end_line: int  # exclusive
    kind: str  # "paragraph", "fence" (top-level fence) or "other"
    token: Token | None = None
    nested_fences: list[tuple[int, int]] = field(default_factory=list)  # line ranges


@dataclass
class _Section:
    anchor: str | None
    path: tuple[str, ...]
    blocks: list[_Block] = field(default_factory=list)


class _Source:
    """The normalised document with line offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(self, line: int) -> int:
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def line(self, line: int) -> str:
        return self.text[self.offset(line):self.offset(line + 1)].rstrip("\n")

    def span(self, first_line: int, end_line: int) -> Span | None:
        """Lines ``[first_line, end_line)`` with leading blank lines and trailing
        whitespace removed (leading indentation kept: it can be meaningful)."""
        start, end = self.offset(first_line), self.offset(end_line)
        text = self.text
        while end > start and text[end - 1].isspace():
            end -= 1
        if start == end:
            return None
        while True:  # drop whole blank lines in front; `end` guarantees a non-blank one
            newline = text.find("\n", start, end)
            if newline < 0 or text[start:newline].strip():
                return start, end
            start = newline + 1


def chunk_markdown(markdown: str, *, max_tokens: int = DEFAULT_MAX_TOKENS,
                   overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
                   slug_headings: bool = True) -> list[Chunk]:
    """Chunk a markdown document along its headings.

    Every chunk stays within ``max_tokens`` (breadcrumb included) except a piece of a
    code fence that is too large on its own: fences are never split except when the
    fence alone exceeds the budget, and then only at line boundaries, each piece
    re-opened with the same info string and closed. Overlap never crosses a heading.
    A document with no headings and no fences is chunked exactly as ``chunk_text`` does.
    ``slug_headings=False`` anchors only headings with an explicit ``{#id}`` (see above).
    """
    budget, overlap = budget_chars(max_tokens, overlap_tokens)
    src = _Source(normalize_source(markdown))
    env: dict[str, Any] = {}
    tokens = block_tokens(src.text, env)
    if not any(t.type in ("heading_open", "fence") for t in tokens):
        return chunk_text(markdown, max_tokens=max_tokens, overlap_tokens=overlap_tokens)

    sections, fences = _sections(src, tokens, slug_headings, env.get("references"))
    bounds = Boundaries(src.text, line_starts_are_sentences=True, protected=fences)
    chunks: list[Chunk] = []
    for section in sections:
        prefix = _prefix(section.path, budget)
        body_budget = max(1, budget - len(prefix))
        for body in _section_bodies(src, section, body_budget, overlap, bounds):
            text = prefix + body
            chunks.append(Chunk(text=text, anchor=section.anchor, heading_path=section.path,
                                token_count=estimate_tokens(text)))
    if not chunks:  # a page of headings only (a section's index page): they are its text
        for section in sections:
            text = _prefix(section.path, budget).rstrip()
            if text:
                chunks.append(Chunk(text=text, anchor=section.anchor,
                                    heading_path=section.path, token_count=estimate_tokens(text)))
    return chunks


def breadcrumb(path: tuple[str, ...]) -> str:
    """The ``A › B › C`` line that opens every chunk of a section."""
    return BREADCRUMB_SEPARATOR.join(path)


def _prefix(path: tuple[str, ...], budget: int) -> str:
    """Breadcrumb plus blank line. A breadcrumb longer than about half the budget is cut
    and ends with ``…``, so the body always keeps at least half of the chunk."""
    if not path:
        return ""
    crumb = breadcrumb(path)
    cap = (budget - 2) // 2
    if len(crumb) > cap:
        crumb = crumb[: max(0, cap - 1)] + "…"
    return crumb + "\n\n"


def _sections(src: _Source, tokens: list[Token], slug_headings: bool = True,
              references: Mapping[str, Any] | None = None
              ) -> tuple[list[_Section], list[Span]]:
    """Split the token stream into sections; also return every fence's character span."""
    slugger = Slugger()
    sections = [_Section(anchor=None, path=())]
    stack: list[tuple[int, str, str | None]] = []  # (level, title, anchor) of open headings
    fences: list[Span] = []
    covered = 0  # first line not yet assigned to a block or heading
    current: _Block | None = None

    def add_gap(upto: int) -> None:
        """Lines no token covers: blank, or link reference definitions (left out when they
        all read as such: the page shows none of them); anything else is kept."""
        if src.span(covered, upto) is not None and not all(
                _REFERENCE.fullmatch(line) or not line.strip()
                for line in map(src.line, range(covered, upto))):
            sections[-1].blocks.append(_Block(covered, upto, "other"))

    for i, tok in enumerate(tokens):
        if tok.map is None or tok.nesting < 0:
            continue
        first, end = tok.map
        if tok.level > 0:
            if tok.type == "fence" and current is not None:
                current.nested_fences.append((first, end))
                _add_fence_span(src, fences, first, end)
            continue
        add_gap(first)
        covered = end
        if tok.type == "heading_open":
            current = None
            title, plain, explicit = heading_texts(tokens[i + 1].content, references)
            level = int(tok.tag[1:])
            while stack and stack[-1][0] >= level:
                stack.pop()
            anchor: str | None
            if explicit is not None:
                slugger.reserve(explicit)
                anchor = explicit
            elif slug_headings and (slug := slug_plain(plain)):
                anchor = slugger.dedupe(slug)
            else:  # no id of its own (an empty heading has none): its enclosing section's
                anchor = next((a for _, _, a in reversed(stack) if a is not None), None)
            stack.append((level, clip_title(title), anchor))
            # a heading of no text (an empty ``#`` over a logo) names nothing in the path
            sections.append(_Section(anchor=anchor, path=tuple(t for _, t, _ in stack if t)))
            continue
        kind = {"paragraph_open": "paragraph", "fence": "fence"}.get(tok.type, "other")
        current = _Block(first, end, kind, token=tok)
        sections[-1].blocks.append(current)
        if kind == "fence":
            _add_fence_span(src, fences, first, end)
    add_gap(len(src.starts))
    return sections, fences


def _add_fence_span(src: _Source, fences: list[Span], first: int, end: int) -> None:
    span = src.span(first, end)
    if span is not None:
        fences.append(span)


# A paragraph that only labels what follows: a tab's name, an admonition's title
_LABEL = re.compile(r"\*\*[^*\n]{1,200}\*\*:?")


def _section_bodies(src: _Source, section: _Section, budget: int, overlap: int,
                    bounds: Boundaries) -> list[str]:
    """Chunk bodies of one section. An oversized fence ends a run of packed pieces; its
    own pieces follow, and packing restarts after it without overlap."""
    bodies: list[str] = []
    run: list[Iterable[Span]] = []  # the pieces of the blocks since the last flush, lazily
    label: Span | None = None  # a label line ("**npm**", "**Note:**") waiting for its block

    def flush() -> None:
        pieces = itertools.chain.from_iterable(run)
        bodies.extend(src.text[s:e] for s, e in pack(pieces, budget, overlap, bounds))
        run.clear()

    for block in section.blocks:
        span = src.span(block.first_line, block.end_line)
        if span is None:
            continue
        if label is not None:
            if span[1] - label[0] <= budget:  # the label opens its block, in one piece
                run.append(((label[0], span[1]),))
                label = None
                continue
            run.append((label,))
            label = None
        if block.kind == "paragraph" and _LABEL.fullmatch(src.text, *span):
            label = span
        elif span[1] - span[0] <= budget:
            run.append((span,))
        elif block.kind == "fence":
            flush()
            bodies.extend(_fence_pieces(src, block, budget))
        elif block.kind == "paragraph":
            run.append(split_span(src.text, *span, budget))
        else:
            run.append(_line_pieces(src, block, budget))
    if label is not None:
        run.append((label,))
    flush()
    return bodies


def _line_pieces(src: _Source, block: _Block, budget: int) -> Iterator[Span]:
    """Pieces of a large list, table, quote or HTML block: whole lines, with any fence
    nested inside kept together unless it alone exceeds the budget."""
    nested = {first: end for first, end in block.nested_fences}
    line = block.first_line
    while line < block.end_line:
        end = min(nested.get(line, line + 1), block.end_line)
        span = src.span(line, end)
        if span is not None:
            if span[1] - span[0] <= budget:
                yield span
            else:
                for sub in range(line, end):
                    part = src.span(sub, sub + 1)
                    if part is not None:
                        yield from split_span(src.text, *part, budget)
        line = end


# A fence line longer than the budget is a piece of its own, up to this many budgets: a
# minified file or a data dump is one line of megabytes, cut into pieces of that size.
LONE_LINE_BUDGETS = 8


def _within(lines: Iterable[str], room: int) -> Iterator[str]:
    """``lines``, each one longer than ``room`` cut into pieces that fit (at spaces where
    it has them)."""
    for line in lines:
        if len(line) <= room:
            yield line
        else:
            yield from (line[s:e] for s, e in split_span(line, 0, len(line), room))


def _fence_pieces(src: _Source, block: _Block, budget: int) -> list[str]:
    """Split an oversized fence at line boundaries; every piece is a complete fence with
    the original opening line (info string included). A line over the budget is a piece
    of its own, cut when over ``LONE_LINE_BUDGETS`` budgets."""
    assert block.token is not None
    markup = block.token.markup
    opening = src.line(block.first_line)
    last = block.end_line - 1
    m = _CLOSING_FENCE.fullmatch(src.line(last)) if last > block.first_line else None
    closed = m is not None and m.group(1)[0] == markup[0] and len(m.group(1)) >= len(markup)
    content = [src.line(n) for n in range(block.first_line + 1, last if closed else last + 1)]
    while content and not content[-1].strip():
        content.pop()
    closing = opening[: len(opening) - len(opening.lstrip(" "))] + markup
    if not content:
        span = src.span(block.first_line, block.end_line)
        return [src.text[span[0]:span[1]]] if span else []

    pieces: list[str] = []
    fixed = len(opening) + len(closing) + 1  # "\n".join([opening, closing])
    lines: list[str] = []
    size = fixed
    for line in _within(content, LONE_LINE_BUDGETS * budget):
        if lines and size + len(line) + 1 > budget:
            pieces.append("\n".join([opening, *lines, closing]))
            lines, size = [], fixed
        lines.append(line)
        size += len(line) + 1
    pieces.append("\n".join([opening, *lines, closing]))
    return pieces
