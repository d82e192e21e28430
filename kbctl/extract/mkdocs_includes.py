"""The ``include-markdown`` plugin of MkDocs, expanded as it expands a page before MkDocs
reads it, so a page reads with the README or the shared part it shows.

``{% include-markdown "../README.md" start="<!--intro-->" end="<!--/intro-->" %}`` puts
the part of the file between the two markers there (the markers themselves aside, Python
escapes such as ``\\n`` read in them), its headings moved down ``heading-offset`` levels;
``{% include "example.yml" %}`` puts a whole file there. Each line is indented as the tag
is (``preserve-includer-indent``). A path is relative to the file that names it; included
Markdown is expanded in turn. Files are read under ``includes``'
rules; a file that cannot be read, or one inside itself, shows nothing, and includes nest
ten levels deep at most.
"""

from __future__ import annotations

import re
from pathlib import Path

from .includes import IncludedFiles, normalized
from .inline_html import code_lines
from .template_args import named_arguments

MAX_DEPTH = 10
# A path cannot hold a quote, a line end or "%", so a scan stops at the next "{%": linear.
_TAG = re.compile(r"""\{%-?\s*include(-markdown)?\s+(['"])([^'"\n%]+)\2([^%]*)-?%\}""")
_ESCAPE = re.compile(r"\\([nt\\'\"])")
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", "'": "'", '"': '"'}
_ATX = re.compile(r"( {0,3})(#{1,6})(?=[ \t]|$)")


def expand_include_markdown(text: str, *, page: Path, project: Path,
                            reads: list[Path] | None = None) -> str:
    """The page ``text`` of the file ``page`` with its includes in place (see above); each
    file read is appended to ``reads``, once."""
    if "include" not in text or "{%" not in text:
        return text
    return _expand(text, page, IncludedFiles(project, [] if reads is None else reads),
                   (normalized(page),))


def _expand(text: str, file: Path, files: IncludedFiles, within: tuple[Path, ...]) -> str:
    def include(m: re.Match[str]) -> str:
        path = normalized(file.parent / m.group(3).strip())
        if path in within or len(within) > MAX_DEPTH:
            return ""
        content = files.read(path)
        if content is None:
            files.unresolved(file, None, m.group(3).strip(), path)  # lines as on disk
            return ""
        options = named_arguments(m.group(4))
        if m.group(1):  # include-markdown: a part, its headings moved, expanded in turn
            content = _between(content, _unescaped(options.get("start", "")),
                               _unescaped(options.get("end", "")))
            offset = options.get("heading-offset", "")
            if offset.lstrip("-").isdigit() and int(offset):
                content = _headings_moved(content, int(offset))
            content = _expand(content, path, files, (*within, path))
        # preserve-includer-indent (the default): each line as indented as the tag
        start = m.start()  # the blanks before the tag, when only they precede it
        while start > 0 and text[start - 1] in " \t":
            start -= 1
        indent = text[start:m.start()]
        if (not indent or (start > 0 and text[start - 1] != "\n")
                or options.get("preserve-includer-indent") == "false"):
            return content
        return content.replace("\n", "\n" + indent)

    return _TAG.sub(include, text)


def _unescaped(marker: str) -> str:
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group(1)], marker)


def _between(text: str, start: str, end: str) -> str:
    """The text after the first ``start`` and up to the next ``end`` (either optional)."""
    if start:
        at = text.find(start)
        if at < 0:
            return ""
        text = text[at + len(start):]
    if end:
        at = text.find(end)
        text = text[:at] if at >= 0 else text
    return text


def _headings_moved(text: str, offset: int) -> str:
    """``text`` with each ATX heading outside code ``offset`` levels deeper (at most 6)."""
    code = code_lines(text)
    lines = text.split("\n")
    for n, line in enumerate(lines):
        if n not in code and (m := _ATX.match(line)):
            level = min(6, max(1, len(m.group(2)) + offset))
            lines[n] = m.group(1) + "#" * level + line[m.end():]
    return "\n".join(lines)
