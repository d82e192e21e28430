"""MDX → markdown: what a reader of the rendered page sees, without the code that
renders it.

ESM blocks (``import``/``export`` up to the next blank line) are dropped; JSX tags are
removed and the text between them kept (``<TabItem label="npm">npm i x</TabItem>`` →
``npm i x``), a tag whose attributes run over several lines or hold nested expressions
(``style={{ … }}``) too; ``{/* comments */}`` go; admonitions (``:::note Title`` or
``:::note[Title]`` … ``:::``) become a labelled paragraph. Code fences and inline code are
left untouched.

Docusaurus reads its ``.md`` pages as MDX too. Starlight's asides and VitePress' custom
containers share the admonition syntax in plain markdown: ``containers_to_markdown``
reads those alone.
"""

from __future__ import annotations

import re

from ..chunk.headings import normalize_source
from ..jsscan import JsScanner
from .inline_html import HEADING, TAG, code_lines, tag_text, without_inline_tags

_ESM = re.compile(r"(?:import|export)\b")
# A line that opens with a JSX tag (its name: group 1), which may run over several lines.
_TAG_OPENING = re.compile(r"[ \t]*<([A-Za-z][\w.:-]*)(?=\s|/?>|$)")
MAX_TAG_LINES = 200
# The title is taken greedily and stripped after: a lazy one before "\s*$" would rescan a
# run of spaces from each of its characters.
_ADMONITION_OPEN = re.compile(r"^(\s*):::+\s*([A-Za-z][\w-]*)(?:\[([^\]]*)\])?(.*)$")
_ADMONITION_CLOSE = re.compile(r"^\s*:::+\s*$")
_LABELS = {"note": "Note", "tip": "Tip", "info": "Info", "caution": "Caution",
           "warning": "Warning", "danger": "Danger", "important": "Important",
           "details": "Details"}
# Containers that only arrange what they hold (VitePress): no label of their own.
_UNLABELLED = frozenset({"code-group", "raw", "v-pre"})


def mdx_to_markdown(text: str) -> str:
    """The markdown an MDX page reads as; fences and code spans stay byte for byte."""
    return _read(text, jsx=True)


def containers_to_markdown(text: str) -> str:
    """Plain markdown with ``:::`` containers read as labelled paragraphs, nothing else
    changed (Starlight's asides, VitePress' custom containers)."""
    if ":::" not in text:
        return text
    return _read(text, jsx=False)


def _read(text: str, *, jsx: bool) -> str:
    text = normalize_source(text)
    lines = text.split("\n")
    fenced = code_lines(text)
    out: list[str] = []
    in_esm = False
    n = scan_from = 0  # a tag that did not close: the lines it looked at are not rescanned
    while n < len(lines):
        line = lines[n]
        if n in fenced:
            in_esm = False
            out.append(line)
        elif in_esm:
            in_esm = bool(line.strip())
        elif jsx and _ESM.match(line):
            in_esm = True
        elif (jsx and n >= scan_from and (opening := _TAG_OPENING.match(line))
              and not _whole_tag(line, opening)):
            end = _tag_end(lines, n, opening.start(1))
            if end is None:
                scan_from = n + MAX_TAG_LINES
                out.append(_prose_line(line))
            else:
                last, col = end
                start = opening.start(1) - 1
                tag = " ".join(part.strip() for part in (
                    [line[start:col + 1]] if last == n else
                    [line[start:], *lines[n + 1:last], lines[last][:col + 1]]))
                rest = _prose_line(lines[last][col + 1:])
                out.append(line[:start] + " ".join(p for p in (_shown(tag), rest.strip()) if p))
                out.extend("" for _ in range(n + 1, last + 1))
                n = last
        else:
            out.append(_prose_line(line) if jsx else _container_line(line))
        n += 1
    return "\n".join(out)


def _whole_tag(line: str, opening: re.Match[str]) -> bool:
    """Whether the tag ``line`` opens with is whole there, as the line reader takes tags."""
    tag = TAG.match(line, opening.start(1) - 1)
    return tag is not None and "{{" not in tag.group(0)


def _tag_end(lines: list[str], start: int, col: int) -> tuple[int, int] | None:
    """(line, column) of the ``>`` that closes the JSX tag opened on ``lines[start]`` at
    ``col``: the first one outside strings and ``{…}`` expressions, which may hold ``>``
    (``=>``) and nest (``style={{ … }}``). None when the tag does not close within
    ``MAX_TAG_LINES`` lines."""
    scanner = JsScanner()
    for n in range(start, min(len(lines), start + MAX_TAG_LINES)):
        found = scanner.find(lines[n] + "\n", ">", col if n == start else 0)
        if found >= 0:
            return n, found
    return None


def _shown(tag: str) -> str:
    """What a whole JSX tag shows: its visible arguments (as ``tag_text``), read with its
    ``{…}`` expressions emptied, which no reader sees as text."""
    flat, depth = [], 0
    for c in tag:
        if c == "{":
            depth += 1
            if depth == 1:
                flat.append("{")
        elif c == "}" and depth:
            depth -= 1
            if not depth:
                flat.append("}")
        elif not depth:
            flat.append(c)
    match = TAG.fullmatch("".join(flat))
    return tag_text(match).strip() if match else ""


def _container_line(line: str) -> str:
    """An admonition's opening line as its label, its closing line as nothing."""
    m = _ADMONITION_OPEN.match(line)
    if m:
        indent, kind, bracketed, rest = m.groups()
        title = (bracketed or "").strip() or rest.strip()
        if kind.lower() in _UNLABELLED:
            return f"{indent}{title}" if title else ""
        label = _LABELS.get(kind.lower(), kind.capitalize())
        return f"{indent}**{label}{': ' + title if title else ':'}**"
    if _ADMONITION_CLOSE.match(line):
        return ""
    return line


def _prose_line(line: str) -> str:
    if _ADMONITION_OPEN.match(line) or _ADMONITION_CLOSE.match(line):
        return _container_line(line)
    stripped = without_inline_tags(_without_jsx_comments(line),
                                   shown=not HEADING.match(line))
    return "" if not stripped.strip() and line.strip() else stripped


def _without_jsx_comments(line: str) -> str:
    """``line`` without ``{/* … */}`` comments, found with ``str.find``: linear time."""
    if "{/*" not in line:
        return line
    out: list[str] = []
    pos = 0
    while (start := line.find("{/*", pos)) >= 0:
        end = line.find("*/}", start + 3)
        if end < 0:
            break
        out.append(line[pos:start])
        pos = end + 3
    out.append(line[pos:])
    return "".join(out)

