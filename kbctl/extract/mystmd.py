"""What mystmd does to a page's headings before its MyST is read like Sphinx's: the
heading that opens the page is its title, a ``(label)=`` target names the heading after
it, and a written ``{#id}`` is text.

- An H1 that opens the page (after front matter and ``%`` comments) is the title, not a
  section, unless front matter gives a different title: it goes.
- ``(label)=`` before a heading (blank lines between allowed) becomes that heading's
  ``{#id}`` (mystmd's html id of the label); the target line goes.
- A heading's own trailing ``{#id}`` is escaped, so it reads (and is slugged) as text.

Code blocks are left as they are, the content of other directives read as the page's
(a label there names a heading there); one pass over the lines.
"""

from __future__ import annotations

import re

from ..chunk.headings import inline_text
from ..chunk.slug import myst_html_id
from .inline_html import FENCE, fence_end
from .rst_sphinx import CODE_DIRECTIVES

_HEADING = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*$")
# A MyST target line, ``(label)=``: a label is any run of characters but spaces and
# parentheses (``(intro/reference)=``); Sphinx's MyST and mystmd read it alike.
TARGET_LINE = re.compile(r"[ \t]*\(([^()\s]+)\)=[ \t]*")
_DIRECTIVE_NAME = re.compile(r"\{([\w:.+-]+)\}")
# Directives whose content is code, not the page's markdown
_CODE = CODE_DIRECTIVES | {"myst", "math", "mermaid", "raw", "csv-table"}
MAX_DIRECTIVES = 16
_WRITTEN_ID = re.compile(r"(?<!\\)\{[ \t]*#[^{}\s]+[ \t]*\}[ \t]*$")


def mystmd_headings(text: str, *, title: object = None) -> str:
    """``text`` (a page's body, front matter aside) with its headings as mystmd reads them
    (see above); ``title`` is the front matter's."""
    lines = text.split("\n")
    out: list[str] = []
    label: str | None = None
    directives: list[str] = []  # the fences of the directives open around this line
    opening = True  # nothing but comments and blank lines read yet
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if directives and stripped.startswith(directives[-1]) and not stripped.strip(
                directives[-1][0]):
            directives.pop()  # a directive closes: its content was read as the page's
            out.append(line)
            i += 1
            continue
        fence = FENCE.match(line)
        if fence:
            name = _DIRECTIVE_NAME.match(line, fence.end())
            if (name is not None and name.group(1).split(":")[-1] not in _CODE
                    and len(directives) < MAX_DIRECTIVES):
                directives.append(fence.group(1))  # its content holds headings and labels
                out.append(line)
                i, label, opening = i + 1, None, False
                continue
            end = fence_end(lines, i + 1, fence.group(1), len(line) - len(line.lstrip()))
            out.extend(lines[i:end + 1])
            i, label, opening = end + 1, None, False
            continue
        i += 1
        target = TARGET_LINE.fullmatch(line)
        if target is not None:
            label = target.group(1)
            continue
        heading = _HEADING.fullmatch(line)
        if heading is None:
            if line.strip():
                out.append(line)
                if not line.lstrip().startswith("%"):
                    label, opening = None, False
            else:
                out.append(line)
            continue
        marks, content = heading.group(1), _WRITTEN_ID.sub(
            lambda m: "\\" + m.group(0), heading.group(2) or "")
        if opening and marks == "#" and (
                not isinstance(title, str) or not title.strip()
                or title.strip() == inline_text(content)[1].strip()):
            label = None
            opening = False
            continue  # the page's title
        opening = False
        named = myst_html_id(label) if label else ""
        out.append(f"{marks} {content} {{#{named}}}" if named else f"{marks} {content}")
        label = None
    return "\n".join(out)
