"""MDX → markdown: what a reader of the rendered page sees, without the code that
renders it.

ESM blocks (``import``/``export`` up to the next blank line) are dropped; JSX tags are
removed and the text between them kept (``<TabItem label="npm">npm i x</TabItem>`` →
``npm i x``); ``{/* comments */}`` go; admonitions (``:::note Title`` or
``:::note[Title]`` … ``:::``) become a labelled paragraph. Code fences and inline code are
left untouched.

Docusaurus reads its ``.md`` pages as MDX too. Starlight's asides and VitePress' custom
containers share the admonition syntax in plain markdown: ``containers_to_markdown``
reads those alone.
"""

from __future__ import annotations

import re

from ..chunk.headings import normalize_source
from .inline_html import HEADING, code_lines, without_inline_tags

_ESM = re.compile(r"(?:import|export)\b")
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
    for n, line in enumerate(lines):
        if n in fenced:
            in_esm = False
            out.append(line)
            continue
        if in_esm:
            in_esm = bool(line.strip())
            continue
        if jsx and _ESM.match(line):
            in_esm = True
            continue
        out.append(_prose_line(line) if jsx else _container_line(line))
    return "\n".join(out)


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

