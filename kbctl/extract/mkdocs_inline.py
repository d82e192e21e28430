"""MkDocs' inline syntax that shows no text: Material's icon shortcodes
(``:material-check:``, ``:octicons-tag-24:``, drawn as SVG icons by ``pymdownx.emoji``)
and ``attr_list`` lists (``[Start](x){ .md-button }``, a ``{ .annotate }`` line). A
heading's list is cut to the ``{#id}`` it sets, the id kbctl cites. Code is left as
written; emoji shortcodes (``:smile:``) stay, since they show as the emoji they name.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .inline_html import HEADING, code_lines, code_spans

_ICON = re.compile(r":(?:material|octicons|fontawesome|simple)-[a-z0-9-]+:")
_VALUE = r"(?:\"[^\"\n]*\"|'[^'\n]*'|[^\s{}\"']+)"
_ATTR = rf"(?:[#.][\w-]+|[\w-]+={_VALUE})"
# Each attribute starts on a different character from the blanks between them: linear.
_ATTR_LIST = re.compile(rf"\{{:?[ \t]*{_ATTR}(?:[ \t]+{_ATTR})*[ \t]*\}}")


def inline_marks_removed(text: str, *, icons: bool, attr_lists: bool) -> str:
    """``text`` without the icons and attribute lists its MkDocs settings render."""
    if not ((icons and ":" in text) or (attr_lists and "{" in text)):
        return text
    patterns = [p for p, on in ((_ICON, icons), (_ATTR_LIST, attr_lists)) if on]

    def prose(segment: str) -> str:
        for pattern in patterns:
            segment = pattern.sub("", segment)
        return segment

    code = code_lines(text)
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if n in code:
            continue
        explicit = ""
        if attr_lists and HEADING.match(line):
            line, found = split_attr_list(line)
            explicit = f" {{#{found}}}" if found else ""
        lines[n] = _outside_code_spans(line, prose) + explicit
    return "\n".join(lines)


def _outside_code_spans(line: str, change: Callable[[str], str]) -> str:
    spans = code_spans(line) if "`" in line else []
    out: list[str] = []
    last = 0
    for start, end in spans:
        out.append(change(line[last:start]))
        out.append(line[start:end])
        last = end
    out.append(change(line[last:]))
    return "".join(out)


# one attribute of an attr_list list: key=value (quoted or not), #id, or another word
_ATTR_ITEM = re.compile(r"""([^\s=}#.][^\s=}]*)=("[^"]*"|'[^']*'|[^\s}]*)|#([^\s=}]+)|\S+""")


def split_attr_list(text: str) -> tuple[str, str | None]:
    """A heading's text without a trailing attr_list list (`` { #id .class key="v" }``,
    ``{: …}``), and the id it sets. Like attr_list's header pattern, the list opens at the
    first `` {`` whose content starts with neither ``}`` nor a space and runs to a final
    ``}``; found by a scan, so a hostile heading costs linear time."""
    s = text.rstrip(" ")
    if not s.endswith("}"):
        return text, None
    at = s.find(" {")
    while at >= 0:
        inner = s[at + 2:-1]
        body = inner[1:] if inner.startswith(":") else inner
        body = body.lstrip(" ")
        if body and body[0] not in "}\n":
            found = None
            for m in _ATTR_ITEM.finditer(body):  # the last id given wins
                key, value, hashed = m.groups()
                if hashed:
                    found = hashed
                elif key == "id" and value and value.strip("\"'"):
                    found = value.strip("\"'")
            return s[:at].rstrip(" "), found
        at = s.find(" {", at + 1)
    return text, None
