"""Markdown parsing shared by the chunker and the markdown extractor.

One configured markdown-it parser (CommonMark + GFM tables) so every module agrees on
what is a heading, a fence or a table. Block parsing skips inline parsing (half the cost
on real books); only heading lines are parsed inline, to get their plain text.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

from markdown_it import MarkdownIt
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.rules_block.table import table as gfm_table
from markdown_it.token import Token

_BLOCK_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")
_INLINE_PARSER = MarkdownIt("commonmark").enable("table")


def _table_span(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    """GFM's own table rule, keeping only the table's open and close tokens (with its
    lines): what reads block tokens needs where a table starts and ends, never its cells,
    and a 4 MB table of a million cells made three million tokens (1.4 GB)."""
    # the rule's own first test, made before the rule is wrapped: a table's second line
    # opens with "|", "-" or ":", and the rule is tried at the start of every block and
    # of every paragraph line, which almost never is one
    below = start_line + 1
    if below >= end_line:
        return False
    opens = state.bMarks[below] + state.tShift[below]
    if opens >= state.eMarks[below] or state.src[opens] not in "|-:":
        return False
    push = state.push
    cells: list[Token] = []  # one token takes what the rule sets on tokens it would keep

    def push_span(ttype: str, tag: str, nesting: Literal[-1, 0, 1]) -> Token:
        if ttype in ("table_open", "table_close"):
            return push(ttype, tag, nesting)
        if not cells:  # made on first use: the rule is tried at every paragraph's start
            cells.append(Token("table_cell", "", 0))
        return cells[0]

    state.push = push_span  # type: ignore[method-assign]
    try:
        return gfm_table(state, start_line, end_line, silent)
    finally:
        del state.push


_BLOCK_PARSER.block.ruler.at("table", _table_span, {"alt": ["paragraph", "reference"]})


def normalize_source(text: str) -> str:
    """Apply markdown-it's own input normalisation so token line maps index our lines."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\0", "\ufffd")


# A parsed block costs its tokens ~1 KB, and a short line can be a block: 5 MB of short
# lines (the per-file cap) made 5 million tokens and a 2 GB peak. Past this many lines a
# text is read as plain text. The largest page of the Python docs has 14,000.
MAX_BLOCK_LINES = 60_000


def over_block_budget(text: str) -> bool:
    """Whether ``text`` has too many lines to be parsed as markdown (see ``block_tokens``)."""
    return text.count("\n") >= MAX_BLOCK_LINES


def block_tokens(text: str, env: dict[str, Any] | None = None) -> list[Token]:
    """Block-level token stream of normalised ``text`` (inline tokens keep raw content);
    none for a text over ``MAX_BLOCK_LINES`` lines, which its readers take as plain text
    (no headings, no fences). ``env`` receives the document's link reference definitions
    (``references``), which its inline text needs: ``[docs][ref]`` is a link only where
    ``[ref]: …`` is defined."""
    if over_block_budget(text):
        return []
    if env is not None:  # the chunker's: the last reader of a text, never kept
        return _BLOCK_PARSER.parse(text, env)
    last: tuple[str, list[Token]] | None = getattr(_last_parse, "value", None)
    if last is not None and last[0] == text:
        return last[1]
    tokens = _BLOCK_PARSER.parse(text)
    _last_parse.value = (text, tokens)
    return tokens


# Each thread's last parse: reading a markdown file parses the same text for its title, its
# inline HTML and its heading ids (a third of a book's parses). One text per thread is
# kept, so memory stays bounded; callers only read the tokens, never change them.
_last_parse = threading.local()


def split_explicit_id(content: str) -> tuple[str, str | None]:
    """Split a heading's raw content into (content without the attribute, explicit id).

    Recognises a trailing ``{#id}`` (spaces allowed inside the braces; the id is any run
    of non-space characters except ``}``), not after ``\\`` (escaped) nor ``{``
    (templating such as ``{{#include x}}``). Written as a scan rather than a regex so a
    pathological line costs linear time, not quadratic.
    """
    s = content.rstrip(" \t")
    if not s.endswith("}"):
        return content, None
    end = len(s) - 1
    while end > 0 and s[end - 1] in " \t":
        end -= 1
    run = end
    while run > 0 and not s[run - 1].isspace() and s[run - 1] != "}":
        run -= 1
    # The id lies in s[run:end]; the leftmost valid opener wins (the longest id).
    for hash_pos in range(run, end - 1):
        if s[hash_pos] != "#":
            continue
        brace = hash_pos - 1
        while brace >= 0 and s[brace] in " \t":
            brace -= 1
        if brace >= 0 and s[brace] == "{" and (brace == 0 or s[brace - 1] not in "\\{"):
            return s[:brace].rstrip(), s[hash_pos + 1:end]
    return content, None


def inline_text(markdown: str, references: Mapping[str, Any] | None = None
                ) -> tuple[str, str]:
    """Plain text of inline markdown: markup, HTML tags and link targets dropped;
    ``references``, the document's link reference definitions (``block_tokens``' env),
    make ``[text][label]`` the link it is there.

    Returns (text with image alt text, text without images). The second is what a
    browser's ``textContent`` gives and what GitHub slugs. Entities and escapes are
    decoded; line breaks are kept as ``\\n``.
    """
    with_alt: list[str] = []
    without: list[str] = []
    env = {"references": references} if references else None  # read, never written
    for token in _INLINE_PARSER.parseInline(markdown, env):
        _collect(token.children or [], with_alt, without)
    return "".join(with_alt), "".join(without)


def _collect(tokens: list[Token], with_alt: list[str], without: list[str] | None) -> None:
    for t in tokens:
        if t.type in ("text", "text_special", "code_inline"):
            piece = t.content
        elif t.type in ("softbreak", "hardbreak"):
            piece = "\n"
        else:
            if t.children:
                # Image alt text is visible as a title but not part of textContent.
                _collect(t.children, with_alt, None if t.type == "image" else without)
            continue
        with_alt.append(piece)
        if without is not None:
            without.append(piece)


def heading_texts(content: str, references: Mapping[str, Any] | None = None
                  ) -> tuple[str, str, str | None]:
    """(display title, text to slug, explicit id) of a heading's raw inline content, with
    the document's link ``references`` (see ``inline_text``)."""
    body, explicit = split_explicit_id(content)
    shown, plain = inline_text(body, references)
    title = " ".join(line.strip() for line in shown.split("\n"))
    return title.strip(), plain, explicit


def only_comments(text: str) -> bool:
    """Whether ``text`` (a heading's) is one or more HTML comments and nothing else: a
    placeholder that some tool fills in."""
    rest = text.strip()
    if not rest.startswith("<!--"):
        return False
    while rest.startswith("<!--"):
        end = rest.find("-->", 4)
        if end < 0:
            return False
        rest = rest[end + 3:].lstrip()
    return not rest
