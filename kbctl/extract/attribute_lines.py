"""Lines that only set attributes on the block beside them, which a page shows nothing of:
kramdown's block attribute lists (``{: .text-delta }``, ``{: .label .label-green }``, on
for every Jekyll site) and goldmark's (``{.display-6}``, when Hugo's
``markup.goldmark.parser.attribute.block`` turns them on).

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


def without_attribute_lines(text: str, *, kramdown: bool) -> str:
    """``text`` without its lines that are a lone block attribute list naming no id
    (kramdown's syntax, or goldmark's)."""
    if "{" not in text:
        return text
    pattern = _KRAMDOWN if kramdown else _GOLDMARK
    lines = text.split("\n")
    code = code_lines(text)
    return "\n".join(
        "" if i not in code and pattern.fullmatch(line) and not _ID.search(line) else line
        for i, line in enumerate(lines))
