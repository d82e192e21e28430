"""MkDocs' snippets (``pymdownx.snippets``), expanded as its preprocessor does, so a page
reads with the files it takes in: a README shown as the home page, a code file shown as a
listing, shared notes.

- ``--8<-- "file.md"`` alone on a line puts the file's lines there, indented as the line;
- a ``--8<--`` line opens a block of file names, one a line, up to the next ``--8<--``
  (a blank name is a blank line, a name starting with ``;`` is left out);
- ``file.py:3:5`` takes lines 3 to 5 (1-based; ``file.py:3`` from 3 on; ranges joined by
  ``,``), ``file.py:name`` the lines between ``--8<-- [start:name]`` and
  ``--8<-- [end:name]``; such marker lines never show;
- ``;--8<-- …`` shows as written, less one ``;``;
- names are found under each ``base_path`` in turn (by default the project folder);
  ``auto_append`` files follow every page; a name found nowhere takes in nothing.

Snippets run before markdown, code blocks included (which is how a file becomes a
listing). Files are read under ``includes``' rules; a file already being expanded is not
expanded again inside itself, and includes nest ten levels deep at most.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from ..projectfiles import inside
from .includes import IncludedFiles, normalized

# The ``(?<!-)`` keeps a search from retrying each dash of a long run: linear time.
_INLINE = re.compile(r"([ \t]*)(;*)-+8<-+[ \t]+(?:\"([^\"\n]+)\"|'([^'\n]+)')")
_BLOCK = re.compile(r"([ \t]*)(;*)-+8<-+")
_SECTION = re.compile(r"(?<![-;])(;*)-+8<-+[ \t]+\[[ \t]*(start|end)[ \t]*:[ \t]*"
                      r"([a-z][-_0-9a-z]*)[ \t]*\]", re.IGNORECASE)
_NAME = re.compile(r"[A-Za-z][-_0-9A-Za-z]*")
_RANGE_CHARS = frozenset("0123456789-:,")
MAX_DEPTH = 10


def expand_snippets(text: str, *, project: Path, base_path: Sequence[str] = (".",),
                    auto_append: Sequence[str] = (), restrict_base_path: bool = True,
                    reads: list[Path] | None = None, page: Path | None = None) -> str:
    """The page ``text`` (of the file ``page``, which names the snippets it cannot
    find) with its snippets expanded (see above), with the extension's settings of those
    names; each file read is appended to ``reads``, once."""
    lines = text.split("\n")
    if auto_append:
        lines += ["", "", "-8<-", *"\n\n".join(auto_append).split("\n"), "-8<-", ""]
    elif "8<-" not in text:
        return text
    files = IncludedFiles(project, [] if reads is None else reads)
    bases = [project / base for base in base_path]
    return "\n".join(_Snippets(files, bases, restrict_base_path, page).expand(
        lines, (), section=False))


class _Snippets:
    def __init__(self, files: IncludedFiles, bases: Sequence[Path], restrict: bool,
                 page: Path | None = None) -> None:
        self.files = files
        self.page = page
        self.bases = bases
        self.restrict = restrict
        self.found: dict[str, Path | None] = {}

    def expand(self, lines: list[str], within: tuple[Path, ...], *, section: bool
               ) -> list[str]:
        out: list[str] = []
        block = False
        for line in lines:
            notation = _INLINE.fullmatch(line) or _BLOCK.fullmatch(line)
            if notation is not None:
                if notation.group(2):  # escaped: shown, less one ";"
                    out.append(line.replace(";", "", 1))
                elif notation.re is _BLOCK:
                    block = not block
                elif not block:  # a name written inline under a block is ignored
                    name = notation.group(3) or notation.group(4)
                    out.extend(self._included(name.strip(), notation.group(1), within))
                continue
            if block:
                name = line.strip()
                if not name:
                    out.append("")
                elif not name.startswith(";"):
                    out.extend(self._included(name, line[:len(line) - len(line.lstrip())],
                                              within))
                continue
            marker = _SECTION.search(line) if not section and "8<-" in line else None
            if marker is None:
                out.append(line)
            elif marker.group(1):  # escaped: shown, less one ";"
                out.append(line[:marker.start(1)] + line[marker.start(1) + 1:])
        return out

    def _included(self, name: str, indent: str, within: tuple[Path, ...]) -> list[str]:
        path, ranges, section = _target(name)
        found = self._find(path) if path and len(within) < MAX_DEPTH else None
        if found is None and path and "://" not in path:
            including = within[-1] if within else self.page
            if including is not None:
                self.files.unresolved(including, None, path, None,
                                      "no such file in the snippets' base_path"
                                      if len(within) < MAX_DEPTH
                                      else f"nested more than {MAX_DEPTH} deep")
        if found is None or found[0] in within:
            return []
        file, text = found
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n") if text else []
        if ranges:
            lines = _lines(lines, ranges)
        elif section:
            lines = _section(lines, section)
        expanded = self.expand(lines, (*within, file), section=section is not None)
        return [indent + line for line in expanded]

    def _find(self, name: str) -> tuple[Path, str] | None:
        """The first base's file of that name, and its text (taken from the budget)."""
        if name not in self.found:  # where a name leads is looked up once a page
            self.found[name] = next(filter(None, (self._in_base(base, name)
                                                  for base in self.bases)), None)
        path = self.found[name]
        text = self.files.read(path) if path is not None else None
        return (path, text) if path is not None and text is not None else None

    def _in_base(self, base: Path, name: str) -> Path | None:
        """The snippet ``name`` in one ``base_path`` entry: a folder holds it, and a file
        entry is itself the snippet its name (from the file's folder) leads to, as
        pymdownx's ``get_snippet_path`` resolves ``base_path: [LICENSE.md]``."""
        if base.is_file():
            candidate = base.parent / name
            try:
                return normalized(base) if candidate.is_file() and candidate.samefile(
                    base) else None
            except OSError:
                return None
        candidate = base / name
        if self.restrict and not inside(base, candidate):
            return None
        return normalized(candidate) if candidate.is_file() else None


def _target(name: str) -> tuple[str, str, str | None]:
    """(path, line ranges, section) of a snippet's name: ``a.py:1:5,8:9``, ``a.py:part``."""
    start = len(name)
    while start > 0 and name[start - 1] in _RANGE_CHARS:
        start -= 1
    colon = name.find(":", start)
    if colon > 0:
        return name[:colon].strip(), name[colon + 1:], None
    colon = name.rfind(":")
    if colon > 0 and _NAME.fullmatch(name[colon + 1:]):
        return name[:colon].strip(), "", name[colon + 1:]
    return name, "", None


def _lines(lines: list[str], ranges: str) -> list[str]:
    total, kept = len(lines), []
    for span in ranges.split(","):
        first, _, last = span.partition(":")
        try:
            start = int(first) if first else None
            end = int(last) if last else None
        except ValueError:
            continue
        if start is not None:
            start = max(total + start, 0) if start < 0 else max(start - 1, 0)
        if end is not None and end < 0:
            end = min(max(total + 1 + end, 0), total)
        kept.extend(lines[start:end])
    return kept


def _section(lines: list[str], name: str) -> list[str]:
    kept: list[str] = []
    started = False
    for line in lines:
        marker = _SECTION.search(line) if "8<-" in line else None
        if marker is not None and marker.group(1):
            line = line[:marker.start(1)] + line[marker.start(1) + 1:]
        elif marker is not None and marker.group(3) == name:
            if marker.group(2).lower() == "end":
                break
            started = True
            continue
        elif marker is not None:
            continue
        if started:
            kept.append(line)
    return kept
