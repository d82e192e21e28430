"""Raw HTML in markdown, read as the text a browser shows: comments gone, tags dropped and
the text between them kept, code (fences, indented blocks, code spans) left as written.

Markdown allows HTML anywhere; a page shows ``<kbd>Ctrl</kbd>`` as ``Ctrl``, and an
``<!-- editor's note -->`` or a ``<script>`` block not at all, while a chunk read from the
source would carry them all.

Every scan here is linear in the text, whatever it holds: code spans are paired in one
pass over the backtick runs (a regex with a backreference took seconds for a few KB of
unmatched backticks), a comment is searched for with ``str.find``, and a tag cannot hold
``<``, ``>`` or a brace, so its match never runs past the next one.
"""

from __future__ import annotations

import re

from ..chunk.headings import block_tokens, only_comments
from .template_args import named_values, visible_values

# After the name, one whitespace character opens the attributes, whose alternatives each
# start on a different character: a hostile line costs linear time.
TAG = re.compile(r"</?([A-Za-z][\w.:-]*)((?:\s(?:[^<>{}\"']|\"[^\"]*\"|'[^']*'|\{[^{}]*\})*)?)/?>")
_BACKTICKS = re.compile(r"`+")
# A line opening a fenced code block, for the line-based dialects (its marker: group 1).
FENCE = re.compile(r"[ \t]*(`{3,}|~{3,})")
# An ATX heading: its text gives its id, which the generator takes from the text alone (a
# component's arguments are not part of it), so a heading's tags show nothing.
HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_SCRIPT = re.compile(r"\s*<(?:script|style)\b", re.IGNORECASE)


def code_lines(text: str) -> set[int]:
    """The indexes of the lines of ``text`` inside fenced or indented code blocks."""
    return _block_lines(text)[0]


def _block_lines(text: str) -> tuple[set[int], set[int], dict[int, int]]:
    """(code lines, lines of ``<script>`` and ``<style>`` blocks, which show nothing, and
    the other HTML blocks as {first line: end}, where no markdown, code spans included, is
    read and a tag may span lines)."""
    code: set[int] = set()
    hidden: set[int] = set()
    html: dict[int, int] = {}
    for tok in block_tokens(text):
        if not tok.map:
            continue
        if tok.type in ("fence", "code_block"):
            code.update(range(tok.map[0], tok.map[1]))
        elif tok.type == "html_block" and _SCRIPT.match(tok.content):
            hidden.update(range(tok.map[0], tok.map[1]))
        elif tok.type == "html_block":
            html[tok.map[0]] = tok.map[1]
    return code, hidden, html


def fence_end(lines: list[str], start: int, marker: str, indent: int = 0) -> int:
    """The index of the first line from ``start`` that closes a fence opened by ``marker``
    at ``indent`` (as long a run of its character, nothing else, indented at most three
    more: a deeper one is the fence's content), or ``len(lines)``: never closed."""
    for j in range(start, len(lines)):
        stripped = lines[j].lstrip()
        if (len(lines[j]) - len(stripped) <= indent + 3 and stripped.startswith(marker)
                and not stripped.rstrip().strip(marker[0])):
            return j
    return len(lines)


def fenced(code: str, language: str = "") -> list[str]:
    """``code`` as the lines of a fenced block, its fence longer than any run of backticks
    the code holds."""
    lines = code.split("\n")
    longest = max((len(m.group(0)) for m in _BACKTICKS.finditer(code)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}{language}", *lines, fence]


def code_spans(line: str) -> list[tuple[int, int]]:
    """(start, end) of each code span of ``line``: a run of n backticks up to the next run
    of exactly n (CommonMark). One pass: each length's next run is found by a pointer that
    only moves forward."""
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for index, (start, end) in enumerate(runs):
        by_length.setdefault(end - start, []).append(index)
    pointer: dict[int, int] = {}
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(runs):
        length = runs[i][1] - runs[i][0]
        same, p = by_length[length], pointer.get(length, 0)
        while p < len(same) and same[p] <= i:
            p += 1
        pointer[length] = p
        if p < len(same):
            closer = same[p]
            spans.append((runs[i][0], runs[closer][1]))
            i = closer + 1
        else:
            i += 1
    return spans


def tag_text(match: re.Match[str]) -> str:
    """What a tag shows: nothing, but a component's (``<Listing caption="…">``,
    ``<TabItem label="npm">``: capitalised, as JSX names them) visible arguments."""
    if not match.group(1)[0].isupper():
        return ""
    shown = " ".join(visible_values(match.group(2)))
    if not shown and match.group(1) == "TabItem":  # a tab with no label shows its value
        shown = named_values(match.group(2)).get("value", "").strip()
    return f" {shown} " if shown else ""  # set apart from the words around it


def without_tags(text: str) -> str:
    """``text`` without HTML tags, code spans or not (an HTML block's line)."""
    return TAG.sub(tag_text, text) if "<" in text else text


def without_inline_tags(line: str, *, shown: bool = True) -> str:
    """``line`` without the HTML tags outside its code spans. Whichever starts first, a tag
    or a code span, wins (CommonMark), so a tag whose attribute holds backticks
    (``<Listing caption="`cargo new`">``) goes whole. ``shown=False``: a component shows
    nothing either (a heading's)."""
    if "<" not in line:
        return line
    spans = code_spans(line) if "`" in line else []
    out: list[str] = []
    pos = k = 0
    for m in TAG.finditer(line):
        while k < len(spans) and spans[k][1] <= m.start():
            k += 1
        if k < len(spans) and spans[k][0] < m.start():
            continue  # inside a code span: shown as written
        if _escaped(line, m.start()):
            continue  # "\<App>": the text "<App>", no tag
        out.append(line[pos:m.start()])
        out.append(tag_text(m) if shown else "")
        pos = m.end()
        while k < len(spans) and spans[k][0] < pos:
            k += 1  # a span the tag holds is part of the tag
    out.append(line[pos:])
    return "".join(out)


def _escaped(line: str, at: int) -> bool:
    """Whether ``line[at]`` follows an odd run of backslashes (is escaped)."""
    run = 0
    while at - run > 0 and line[at - run - 1] == "\\":
        run += 1
    return run % 2 == 1


def _without_comments(line: str, in_comment: bool) -> tuple[str, bool]:
    """``line`` without its ``<!-- … -->`` comments outside code spans, and whether a
    comment is still open at its end (``in_comment``: one was open at its start)."""
    pos = 0
    if in_comment:
        end = line.find("-->")
        if end < 0:
            return "", True
        pos = end + 3
    rest = line[pos:]
    spans = code_spans(rest) if "`" in rest else []
    out: list[str] = []
    i = k = 0
    while True:
        start = rest.find("<!--", i)
        if start < 0:
            out.append(rest[i:])
            return "".join(out), False
        while k < len(spans) and spans[k][1] <= start:
            k += 1
        if k < len(spans) and spans[k][0] <= start:  # inside code: shown as written
            out.append(rest[i:spans[k][1]])
            i = spans[k][1]
            continue
        out.append(rest[i:start])
        end = rest.find("-->", start + 4)
        if end < 0:
            return "".join(out), True
        i = end + 3


def html_to_text(text: str) -> str:
    """Markdown with its raw HTML read as a browser shows it (see the module docstring).
    A line that held only a comment is left empty, so no two blocks run together; a
    heading of only comments stays as written, a placeholder some tool fills in."""
    if "<" not in text:
        return text
    code, hidden, html = _block_lines(text)
    lines = text.split("\n")
    in_comment = False
    for n, line in enumerate(lines):
        if n in hidden or (n in code and not in_comment):
            continue
        if in_comment or "<!--" in line:
            heading = None if in_comment else HEADING.match(line)
            if heading is not None and only_comments(line[heading.end():].rstrip("#")):
                continue  # a placeholder heading stays one (``anchors.with_heading_ids``)
            lines[n], in_comment = _without_comments(line, in_comment)
    # a block at once, an HTML block or a paragraph (up to a blank line): a tag, and a code
    # span, may span its lines
    out: list[str] = []
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.append(without_inline_tags("\n".join(paragraph)))
            paragraph.clear()

    n = 0
    while n < len(lines):
        if n in html:
            flush()
            out.append(without_tags("\n".join(lines[n:html[n]])))
            n = html[n]
            continue
        if n in hidden or n in code or not lines[n].strip():
            flush()
            out.append("" if n in hidden else lines[n])
        elif HEADING.match(lines[n]):
            flush()
            out.append(without_inline_tags(lines[n], shown=False))
        else:
            paragraph.append(lines[n])
        n += 1
    flush()
    return "\n".join(out)
