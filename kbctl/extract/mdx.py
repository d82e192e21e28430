"""MDX → markdown: what a reader of the rendered page sees, without the code that
renders it.

ESM blocks (``import``/``export`` up to the next blank line) are dropped; JSX tags are
removed and the text between them kept (``<TabItem label="npm">npm i x</TabItem>`` →
``npm i x``); ``{/* comments */}`` go; Docusaurus admonitions (``:::note Title`` …
``:::``) become a labelled paragraph. Code fences and inline code are left untouched.
"""

from __future__ import annotations

import re

from ..chunk.headings import block_tokens, normalize_source

_ESM = re.compile(r"(?:import|export)\b")
# After the name, one whitespace character opens the attributes, whose alternatives each
# start on a different character: a hostile line costs linear time.
_TAG = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s(?:[^<>{}\"']|\"[^\"]*\"|'[^']*'|\{[^{}]*\})*)?/?>")
_COMMENT = re.compile(r"\{/\*.*?\*/\}", re.DOTALL)
_ADMONITION_OPEN = re.compile(r"^(\s*):::+\s*([A-Za-z][\w-]*)(?:\[[^\]]*\])?\s*(.*?)\s*$")
_ADMONITION_CLOSE = re.compile(r"^\s*:::+\s*$")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_LABELS = {"note": "Note", "tip": "Tip", "info": "Info", "caution": "Caution",
           "warning": "Warning", "danger": "Danger", "important": "Important"}


def mdx_to_markdown(text: str) -> str:
    """The markdown an MDX page reads as; fences and code spans stay byte for byte."""
    text = normalize_source(text)
    lines = text.split("\n")
    fenced = _fenced_lines(text)
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
        if _ESM.match(line):
            in_esm = True
            continue
        out.append(_prose_line(line))
    return "\n".join(out)


def _fenced_lines(text: str) -> set[int]:
    lines: set[int] = set()
    for tok in block_tokens(text):
        if tok.type in ("fence", "code_block") and tok.map:
            lines.update(range(tok.map[0], tok.map[1]))
    return lines


def _prose_line(line: str) -> str:
    m = _ADMONITION_OPEN.match(line)
    if m:
        indent, kind, title = m.groups()
        label = _LABELS.get(kind.lower(), kind.capitalize())
        return f"{indent}**{label}{': ' + title if title else ':'}**"
    if _ADMONITION_CLOSE.match(line):
        return ""
    line = _COMMENT.sub("", line)
    parts: list[str] = []
    last = 0
    for span in _CODE_SPAN.finditer(line):
        parts.append(_TAG.sub("", line[last:span.start()]))
        parts.append(span.group(0))
        last = span.end()
    parts.append(_TAG.sub("", line[last:]))
    stripped = "".join(parts)
    return "" if not stripped.strip() and line.strip() else stripped

