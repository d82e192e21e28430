"""Lines that only set attributes on the block beside them, which a page shows nothing of:
kramdown's block attribute lists (``{: .text-delta }``, ``{: .label .label-green }``, on
for every Jekyll site) and goldmark's (``{.display-6}``, when Hugo's
``markup.goldmark.parser.attribute.block`` turns them on); and kramdown's span attribute
lists, right after the link or emphasis they style (``[Start](#go){: .btn }``).

A list that names an id (``{: #install}``) stays: after a heading it names the heading,
which the generator's id rules read. Code blocks are left as they are.
"""

from __future__ import annotations

import re

from .inline_html import code_lines

# kramdown: "{:" then anything but braces; an attribute list definition ("{:name: …}") too
_KRAMDOWN = re.compile(r"[ \t]{0,3}\{:[^{}\n]*\}[ \t]*")
# goldmark: classes, ids and key=value pairs (a quoted or bare value), nothing else
_ITEM = r"""(?:[.#][\w-]+|[A-Za-z_][\w:.-]*[ \t]*=[ \t]*(?:"[^"\n]*"|[^\s,{}"]+))"""
_GOLDMARK = re.compile(rf"[ \t]{{0,3}}\{{[ \t]*{_ITEM}(?:[ \t,]+{_ITEM})*[ \t]*\}}[ \t]*")
_ID = re.compile(r"(?:^|[\s{:])#[A-Za-z_]|\bid\s*=")
_SPAN = re.compile(r"(?<=[)\]*_\w])\{:[^{}\n`]*\}")
_CODE_SPAN = re.compile(r"(`+)[^`]*?\1")


def without_attribute_lines(text: str, *, kramdown: bool) -> str:
    """``text`` without its lines that are a lone block attribute list naming no id
    (kramdown's syntax, or goldmark's)."""
    if ("{:" if kramdown else "{") not in text:
        return text  # most pages: no markdown parse to find their code blocks
    pattern = _KRAMDOWN if kramdown else _GOLDMARK
    lines = text.split("\n")
    code = code_lines(text)
    for i, line in enumerate(lines):
        if i in code or "{" not in line:
            continue
        if pattern.fullmatch(line) and not _ID.search(line):
            lines[i] = ""
        elif kramdown and "{:" in line:
            lines[i] = _without_spans(line)
    return "\n".join(lines)


def _without_spans(line: str) -> str:
    """``line`` without the span attribute lists outside its code spans."""
    out, at = [], 0
    for span in _CODE_SPAN.finditer(line):
        out += [_SPAN.sub("", line[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join(out) + _SPAN.sub("", line[at:])
