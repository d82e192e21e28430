"""mdBook's include links, expanded as mdBook's ``links`` preprocessor does, so a chapter
reads with the code listings its readers see.

``{{#include file}}``, ``{{#rustdoc_include file}}`` and ``{{#playground file}}`` put a
file's text in the page: whole, its lines ``a:b`` (1-based, either end open), or the part
between ``ANCHOR: name`` and ``ANCHOR_END: name`` (anchor lines never show). For
``rustdoc_include`` the lines outside the part are hidden on the page, so they are left
out here too. ``{{#playground file editable}}`` is a runnable listing: its text comes in
a ``rust`` fence (``rust,editable``). ``{{#title …}}`` shows nothing;
``\\{{#include x}}`` shows as written.

Files are read under ``includes``' rules (the project's own only, each once, a budget
per page); a link to a file that cannot be read shows nothing and is reported
(``includes.unresolved_includes``): mdBook would stop the build, and the directive's text
is no passage of the book. Included files are expanded in turn, ten levels deep at most.
"""

from __future__ import annotations

import re
from pathlib import Path

from .includes import IncludedFiles, line_at

_LINK = re.compile(r"\\\{\{#[^{}]*\}\}|\{\{\s*#([A-Za-z0-9_]+)\s*([^{}]*)\}\}")
_INCLUDES = frozenset({"include", "rustdoc_include", "playground", "playpen"})
_ANCHOR = re.compile(r"ANCHOR(?:_END)?:\s*([\w-]+)")
MAX_DEPTH = 10


def expand_links(text: str, *, page: Path, project: Path, reads: list[Path] | None = None
                 ) -> str:
    """The chapter ``text`` of the file ``page`` with its links expanded (see above); each
    file read is appended to ``reads``, once."""
    if "{{" not in text:
        return text
    return _expand(text, page, 0, IncludedFiles(project, [] if reads is None else reads))


def _expand(text: str, page: Path, depth: int, files: IncludedFiles) -> str:
    folder = page.parent

    def replace(match: re.Match[str]) -> str:
        written = match.group(0)
        if written.startswith("\\"):
            return written[1:]
        kind, args = match.group(1), match.group(2).strip()
        if kind == "title":
            return ""
        if kind not in _INCLUDES:
            return written
        name, _, selector = args.split()[0].partition(":") if args else ("", "", "")
        path = folder / name
        text = files.read(path) if name and depth < MAX_DEPTH else None
        if text is None:
            files.unresolved(page, lambda: line_at(match.string, match.start()), name or written,
                             path if name else None,
                             f"nested more than {MAX_DEPTH} deep" if name and depth >= MAX_DEPTH
                             else None)
            return ""
        content = _expand(_part(text, selector), path, depth + 1, files)
        if kind in ("playground", "playpen"):  # a listing of its own, as mdBook writes it
            info = ",".join(["rust", *args.split()[1:]])
            return f"```{info}\n{content.rstrip(chr(10))}\n```\n"
        return content

    return _LINK.sub(replace, text)


def _part(text: str, selector: str) -> str:
    """The part of a file's text a link names (``path``, ``path:anchor``, ``path:a:b``),
    its anchor lines left out."""
    lines = text.splitlines()
    if selector:
        lines = _selected(lines, selector)
    return "\n".join(line for line in lines if not _ANCHOR.search(line))


def _selected(lines: list[str], selector: str) -> list[str]:
    start, sep, end = selector.partition(":")
    if start.isdigit() or (sep and (not start or start.isdigit())
                           and (not end or end.isdigit())):
        first = max(int(start) - 1, 0) if start else 0
        last = int(end) if sep and end else (len(lines) if sep else first + 1)
        return lines[first:last]
    inside_anchor, kept = False, []
    for line in lines:
        m = _ANCHOR.search(line)
        if m and m.group(1) == selector:
            inside_anchor = "ANCHOR_END" not in line
            continue
        if inside_anchor:
            kept.append(line)
    return kept
