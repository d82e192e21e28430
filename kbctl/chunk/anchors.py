"""Give every heading of a markdown page the id its generator renders, written as an
explicit ``{#id}`` that the heading-aware chunker takes verbatim; and what such an id
allocator is (``HeadingIds``, with the common rules in ``IdRules`` and ``CountingIds``).

Headings are rewritten as ATX lines (``## Title {#id}``) so setext headings and closing
``#`` sequences need no special case; everything else is left byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from markdown_it.token import Token

from .headings import (
    block_tokens,
    heading_texts,
    inline_text,
    normalize_source,
    only_comments,
    split_explicit_id,
)

# kramdown's block inline attribute list, alone on its line: "{: #id .class key="v"}"
_BLOCK_IAL = re.compile(r"\{:\s*([^{}\n]*)\}")
_IAL_ID = re.compile(r"(?:^|\s)#([A-Za-z][\w:-]*)")


class HeadingIds(Protocol):
    """Per-page id allocator: the id a generator gives each heading, in document order."""

    honours_explicit: bool
    reads_source: bool  # slug the heading's markdown source rather than its rendered text
    idless_levels: frozenset[int]  # levels whose id is allocated but not put on the page
    block_attributes: bool  # kramdown: a "{: #id}" line right after a heading names it
    # a trailing "{#id .class k=v}" is cut and its #id used: the generator's splitter
    # (goldmark's, Pandoc's), returning (text, id) or None when the heading ends in none
    attribute_lists: Callable[[str], tuple[str, str | None] | None] | None
    # definition list terms take ids from the same allocator, in document order (Hugo's
    # autoDefinitionTermID): a heading after a term of its text is numbered past it
    definition_terms: bool

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        """Id of a heading whose rendered text is ``text``; ``explicit`` is a written
        ``{#id}`` attribute (None when absent). None: the heading has no id."""
        ...

    def displayed(self, heading: str) -> str:
        """The heading's markdown as the page shows it (Docsify hides ``:id=name``)."""
        ...


class IdRules:
    """The common answers of a ``HeadingIds``; an allocator overrides what differs."""

    honours_explicit: bool = True
    reads_source: bool = False
    idless_levels: frozenset[int] = frozenset()
    block_attributes: bool = False
    attribute_lists: Callable[[str], tuple[str, str | None] | None] | None = None
    definition_terms: bool = False

    def displayed(self, heading: str) -> str:
        return heading


class CountingIds(IdRules):
    """The common allocator: slug the text, then make it unique with ``-1``, ``-2``…

    ``reserve_explicit`` says whether a written ``{#id}`` blocks later slugs (as
    Python-Markdown and GitHub do) or is simply used (mdBook, Hugo); ``number_explicit``
    numbers a repeated one like a slug (mystmd's labels). ``first_repeat`` is the number
    the first repeat gets (``markdown-it-anchor`` 5 starts at 2). ``empty`` is the id of a
    heading whose text slugs to nothing; None: it has none.
    """

    def __init__(self, slug: Callable[[str], str], *, empty: str | None = "",
                 honour_explicit: bool = True, reserve_explicit: bool = True,
                 number_explicit: bool = False, first_repeat: int = 1,
                 reads_source: bool = False) -> None:
        self.reads_source = reads_source
        self._slug = slug
        self._empty = empty
        self.honours_explicit = self._honour = honour_explicit
        self._reserve = reserve_explicit
        self._number_explicit = number_explicit
        self._first_repeat = first_repeat
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        if explicit is not None and self._honour:
            if not self._number_explicit:
                if self._reserve:
                    self._used.add(explicit)
                return explicit
            base: str | None = explicit
        else:
            base = self._slug(text) or self._empty
        if base is None:
            return None
        # the search for a free suffix resumes where the last one for this base stopped
        # (ids are only ever added), so k equal headings cost O(k), not O(k²)
        n = self._next.get(base, 0)
        candidate = f"{base}-{n}" if n else base
        while candidate in self._used:
            n = max(n + 1, self._first_repeat)
            candidate = f"{base}-{n}"
        self._next[base] = max(n + 1, self._first_repeat)
        self._used.add(candidate)
        return candidate


def with_heading_ids(markdown: str, ids: HeadingIds) -> str:
    """``markdown`` with ``{#id}`` on each top-level heading; ids are allocated for every
    heading (nested ones too) in document order, as the generator does."""
    text = normalize_source(markdown)
    tokens = block_tokens(text)
    lines = text.split("\n")
    replacements: dict[int, tuple[int, str]] = {}
    honour = ids.honours_explicit
    for i, tok in enumerate(tokens):
        if ids.definition_terms and tok.type == "paragraph_open":
            for term in definition_terms(tokens, i):
                ids(inline_text(term)[1].strip())
            continue
        if tok.type != "heading_open" or tok.map is None:
            continue
        content = tokens[i + 1].content
        body = content
        if ids.attribute_lists is not None:
            split = ids.attribute_lists(content)
            body, explicit = split if split is not None else (content, None)
            plain = inline_text(body)[1]
        elif honour:
            _, plain, explicit = heading_texts(content)
            if explicit is not None:
                body = split_explicit_id(content)[0]
        else:  # a written {#id} is literal text for this generator
            plain, explicit = inline_text(content)[1], None
        if ids.reads_source:
            plain = body
        ial_end = None
        if ids.block_attributes and explicit is None:
            explicit, ial_end = _block_ial(tokens, i)
        anchor = ids(plain.strip(), explicit)
        if int(tok.tag[1:]) in ids.idless_levels or only_comments(content):
            # counted, as the generator's slugger does, but never rendered; or a heading of
            # nothing but an HTML comment: a placeholder a project's hook or macro fills
            # in (``<!-- md:setting x -->``), with an id kbctl cannot know, so its section
            # cites the one around it
            anchor = None
        if tok.level > 0 or anchor is None:
            continue  # no id, or inside a list or quote: not a section, but it took its id
        body = ids.displayed(" ".join(part.strip() for part in body.split("\n")))
        first, end = tok.map
        replacements[first] = (ial_end or end,  # the IAL line goes with the heading it names
                               f"{'#' * int(tok.tag[1:])} {body} {{#{anchor}}}")
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


# a definition: ":" then a space, at most three spaces in (four make it code)
_DEFINITION = re.compile(r" {0,3}:[ \t]")


def definition_terms(tokens: list[Token], i: int) -> list[str]:
    """The definition list terms the paragraph ``tokens[i]`` holds, as goldmark (and PHP
    Markdown Extra) reads them: each line before a line that opens a definition, or every
    line when the next block, after one blank line, is a paragraph that opens with one."""
    lines = tokens[i + 1].content.split("\n")
    opens = next((n for n, line in enumerate(lines) if _DEFINITION.match(line)), None)
    if opens is not None:
        return lines[:opens]
    after = i + 3  # paragraph_open, inline, paragraph_close
    if after + 1 < len(tokens) and tokens[after].type == "paragraph_open":
        here, there = tokens[i].map, tokens[after].map
        if (here is not None and there is not None and there[0] == here[1] + 1
                and _DEFINITION.match(tokens[after + 1].content)):
            return lines
    return []


def _block_ial(tokens: list[Token], i: int) -> tuple[str | None, int | None]:
    """The id a kramdown block IAL on the line right after heading ``tokens[i]`` gives it,
    and the line that IAL ends on; (None, None) when there is none."""
    close = i + 2
    if close + 2 >= len(tokens) or tokens[close + 1].type != "paragraph_open":
        return None, None
    para, inline = tokens[close + 1], tokens[close + 2]
    if para.map is None or tokens[i].map is None or para.map[0] != tokens[i].map[1]:
        return None, None
    m = _BLOCK_IAL.fullmatch(inline.content.strip())
    found = _IAL_ID.search(m.group(1)) if m else None
    return (found.group(1), para.map[1]) if found else (None, None)
