"""Attribute lists ending a heading. goldmark's, on in Hugo by default
(``markup.goldmark.parser.attribute.title``): an attribute list ending a heading's last
line, ``## Title {#id .class key="value"}``, is not part of its text. It is cut before
the id is made, and its ``#id`` (or ``id=…``) names the heading; ``{class="x"}`` alone
leaves the id to the text.

The grammar is goldmark's (``parser/attribute.go``): ``#id`` and ``.class`` words, and
``name=value`` pairs whose value is a ``"string"``, a number, a bare word, an ``[array]``
or a nested ``{list}``, separated by spaces or commas. Anything else makes the braces text.

Pandoc's (``header_attributes``, Quarto's headings) are simpler: ``#id``, ``.class``,
``key=value`` (the value quoted, or a run without spaces and quotes) and ``-`` (unnumbered),
separated by white space.
"""

from __future__ import annotations

import re

# How deep values may nest, and how many "{" of one line are tried as a list's start: a
# hostile heading of many braces costs a bounded number of linear scans.
MAX_DEPTH = 8
MAX_OPENERS = 64

_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:.-]*")
_BARE = _NAME
_NUMBER = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]*)?")
_STRING_ESCAPES = {'"': '"', "/": "/", "\\": "\\", "b": "\b", "f": "\f", "n": "\n",
                   "r": "\r", "t": "\t"}


def split_heading_attributes(content: str) -> tuple[str, str | None] | None:
    """(the heading's text without its attribute list, the id the list gives or None), or
    None when the last line of ``content`` ends in no attribute list."""
    head, newline, last = content.rpartition("\n")
    i = tried = 0
    while i < len(last):
        ch = last[i]
        if ch == "\\":
            i += 2 if i + 1 < len(last) and _is_punct(last[i + 1]) else 1
            continue
        if ch == "{":
            tried += 1
            if tried > MAX_OPENERS:
                return None
            parsed = _attribute_list(last, i, 0)
            if parsed is not None and not last[parsed[0]:].strip():
                return head + newline + last[:i].rstrip(), parsed[1] or None
        i += 1
    return None


# One item is one token (an item must be followed by a space or the closing brace), so a
# failed match backtracks over nothing: linear on any line.
_PANDOC_LIST = re.compile(
    r"\{[ \t]*((?:(?:[#.][A-Za-z][\w:.-]*|-|[A-Za-z][\w:.-]*="
    r"(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|[^\s\"'}]+))(?:[ \t]+|(?=\})))*)\}")
_PANDOC_ID = re.compile(r"(?:^|[ \t])#([A-Za-z][\w:.-]*)")
# Where Pandoc reads an attribute list inside a line: after a code span, a link or a span
_INLINE_LIST = re.compile(r"(?<=[`\])])\{")


def split_pandoc_attributes(content: str) -> tuple[str, str | None] | None:
    """As ``split_heading_attributes``, for Pandoc's grammar: the list must end the line,
    after the heading's text; its last ``#id`` names the heading."""
    head, newline, last = content.rpartition("\n")
    start = last.rfind("{")  # the list holds no "{": the last one opens it, if any does
    m = _PANDOC_LIST.match(last, start) if start >= 0 else None
    if m is None or last[m.end():].strip():
        return None
    ids = _PANDOC_ID.findall(m.group(1))
    return head + newline + last[:start].rstrip(), ids[-1] if ids else None


def pandoc_inline_attributes_removed(line: str) -> str:
    """``line`` without the attribute lists that follow its code spans, links and spans
    (`` `f()`{.python} ``, ``[text]{.mark}``), which Pandoc shows nowhere."""
    if "{" not in line:
        return line
    out: list[str] = []
    pos = 0
    for opening in _INLINE_LIST.finditer(line):
        if opening.start() < pos:
            continue
        m = _PANDOC_LIST.match(line, opening.start())
        if m is not None:
            out.append(line[pos:m.start()])
            pos = m.end()
    out.append(line[pos:])
    return "".join(out)


def _is_punct(ch: str) -> bool:
    return ch.isascii() and not ch.isalnum() and ch.isprintable() and not ch.isspace()


def _skip_spaces(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t":
        i += 1
    return i


def _attribute_list(s: str, i: int, depth: int) -> tuple[int, str | None] | None:
    """The end of the list opening at ``s[i] == '{'`` and the id it sets (the last one)."""
    if depth > MAX_DEPTH:
        return None
    i += 1
    found: str | None = None
    while True:
        if i < len(s) and s[i] == "}":
            return i + 1, found
        parsed = _attribute(s, i, depth)
        if parsed is None:
            return None
        i, name, value = parsed
        if name == "id" and isinstance(value, str):
            found = value
        i = _skip_spaces(s, i)
        if i < len(s) and s[i] == ",":
            i = _skip_spaces(s, i + 1)


def _attribute(s: str, i: int, depth: int) -> tuple[int, str, object] | None:
    i = _skip_spaces(s, i)
    if i < len(s) and s[i] in "#.":
        start = j = i + 1
        while j < len(s) and not s[j].isspace() and (not _is_punct(s[j]) or s[j] in "_-:."):
            j += 1
        return j, "id" if s[i] == "#" else "class", s[start:j]
    name = _NAME.match(s, i)
    if name is None:
        return None
    i = _skip_spaces(s, name.end())
    if i >= len(s) or s[i] != "=":
        return None
    parsed = _value(s, _skip_spaces(s, i + 1), depth)
    if parsed is None or (name.group(0) == "class" and not isinstance(parsed[1], str)):
        return None
    return parsed[0], name.group(0), parsed[1]


def _value(s: str, i: int, depth: int) -> tuple[int, object] | None:
    if i >= len(s):
        return None
    ch = s[i]
    if ch == "{":
        nested = _attribute_list(s, i, depth + 1)
        return None if nested is None else (nested[0], None)
    if ch == "[":
        return _array(s, i, depth + 1)
    if ch == '"':
        return _string(s, i + 1)
    if ch in "-+" or ch.isdigit():
        number = _NUMBER.match(s, i)
        return None if number is None else (number.end(), None)
    bare = _BARE.match(s, i)
    return None if bare is None else (bare.end(), bare.group(0))


def _array(s: str, i: int, depth: int) -> tuple[int, object] | None:
    if depth > MAX_DEPTH:
        return None
    i += 1
    first = True
    while True:
        comma = False
        if not first and i < len(s) and s[i] == ",":
            i, comma = i + 1, True
        if i < len(s) and s[i] == "]":
            return None if comma else (i + 1, None)
        parsed = _value(s, _skip_spaces(s, i), depth)
        if parsed is None:
            return None
        i, first = _skip_spaces(s, parsed[0]), False


def _string(s: str, i: int) -> tuple[int, object] | None:
    out: list[str] = []
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i != len(s) - 1:
            escaped = _STRING_ESCAPES.get(s[i + 1])
            out.append(escaped if escaped is not None else "\\")
            i += 2 if escaped is not None else 1
            continue
        if ch == '"':
            return i + 1, "".join(out)
        out.append(ch)
        i += 1
    return None
