"""Python-Markdown's brace includes, expanded as their preprocessors expand a page before
MkDocs (or Zensical) reads it, so a page reads with the code and text it shows.

- ``{! path !}`` (the ``mdx_include`` and ``markdown_include.include`` extensions) puts the
  file's lines there, anywhere in a line: the first joins the text before the tag, the
  text after it follows the last. ``mdx_include`` also reads ``{!> path !}`` (every line
  indented as the text before the tag), ``{!- … !}`` / ``{!+ … !}`` (included files
  expanded in turn or not: by default they are), ``[ln:3-9,12]`` (those lines; a
  ``.column`` part is read as the whole line) and ``| encoding``; ``\\{! … !}`` shows as
  written, less the backslash. ``markdown_include`` reads ``{!path!lines=3-9 12}``, and
  moves included headings down by ``headingOffset`` (and ``inheritHeadingDepth``).
- ``{* path ln[3:9] hl[4] *}`` alone on a line (``markdown_include_variants``, used by
  FastAPI and its sister projects) shows the file as a Python listing, only the ``ln``
  lines when given, between the comments the page shows for code left out. The page's
  other versions of the file (older Pythons, without ``Annotated``) sit in collapsed
  panels and are left out: they repeat the listing.

Paths are relative to the extension's ``base_path`` (by default the folder MkDocs runs
in, the one holding its config), for nested includes too unless ``mdx_include``'s
``recursive_relative_path`` is on. Files are read under ``includes``' rules; a URL, a
file that cannot be read, or one inside itself shows nothing, and includes nest ten levels
deep at most. A tag is the last ``{!`` before the next closing ``!}``, so each line is
scanned once whatever it holds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .includes import IncludedFiles, normalized
from .inline_html import fenced

MAX_DEPTH = 10
MDX_INCLUDE = "mdx_include"
MARKDOWN_INCLUDE = "markdown_include"
# markdown_include closes with ``!}`` or ``!lines=1 3-5}``
_CLOSE = {MDX_INCLUDE: re.compile(r"!\}"),
          MARKDOWN_INCLUDE: re.compile(r"!(?:lines=([0-9 -]{1,512}))?\}")}
_ATX = re.compile(r"#+")
_VARIANT_OPTION = re.compile(r"\b(\w+)\[([^\]]+)\]")
_LN = "[ln:"


@dataclass(frozen=True)
class BraceIncludes:
    """Which extension reads ``{! … !}`` and its settings (see the module docstring)."""

    extension: str = MDX_INCLUDE
    base_path: str = "."
    recursive: bool | None = True
    relative_to_file: bool = False
    heading_offset: int = 0
    inherit_heading_depth: bool = False


def expand_brace_includes(text: str, *, project: Path, settings: BraceIncludes,
                          reads: list[Path] | None = None, page: Path | None = None) -> str:
    """The page ``text`` (of the file ``page``, which names the includes it cannot
    resolve) with its ``{! … !}`` includes in place; each file read is appended to
    ``reads``, once."""
    if "{!" not in text:
        return text
    files = IncludedFiles(project, [] if reads is None else reads)
    expander = _Braces(files, project / settings.base_path, settings, page)
    return "\n".join(expander.lines(text.split("\n"), None, ()))


def expand_include_variants(text: str, *, project: Path,
                            reads: list[Path] | None = None, page: Path | None = None) -> str:
    """The page ``text`` with each ``{* … *}`` line shown as its listing."""
    if "{*" not in text:
        return text
    files = IncludedFiles(project, [] if reads is None else reads)
    out: list[str] = []
    for line in text.split("\n"):
        tag = line[2:-2].split(None, 1) if line.startswith("{*") and line.endswith(
            "*}") else []
        if not tag:
            out.append(line)
            continue
        content = files.read(normalized(project / tag[0]))
        if content is None and page is not None:
            files.unresolved(page, None, tag[0], normalized(project / tag[0]))
        if content is not None:
            ln = dict(_VARIANT_OPTION.findall(tag[-1] if len(tag) > 1 else "")).get("ln", "")
            out.extend(_listing(content, ln))
    return "\n".join(out)


def _listing(content: str, ln: str) -> list[str]:
    """The listing the page shows: the ``ln`` groups (``3:9,12``) with the comments it
    puts where code is left out, or the whole file."""
    lines = content.splitlines()
    groups: list[tuple[int, int]] = []
    for item in ln.split(","):
        first, _, last = item.strip().partition(":")
        if not first.isdecimal() or not (last or first).isdecimal():
            continue
        groups.append((int(first), int(last or first)))
    groups.sort()
    if not groups or groups == [(0, 0)]:
        return fenced("\n".join(lines), "python")
    shown: list[str] = []
    for i, (start, end) in enumerate(groups):
        if i == 0 and start > 1:
            shown += ["# Code above omitted 👆", ""]
        elif i > 0:
            shown += ["", "# Code here omitted 👈", ""]
        shown += lines[max(start - 1, 0):end]
    if groups[-1][1] < len(lines):
        shown += ["", "# Code below omitted 👇"]
    return fenced("\n".join(shown), "python")


class _Braces:
    def __init__(self, files: IncludedFiles, base: Path, settings: BraceIncludes,
                 page: Path | None = None) -> None:
        self.files = files
        self.page = page
        self.base = base
        self.settings = settings
        self.mdx = settings.extension == MDX_INCLUDE
        self.close = _CLOSE[settings.extension]

    def lines(self, lines: list[str], parent: Path | None, within: tuple[Path, ...]
              ) -> list[str]:
        out: list[str] = []
        depth = ""  # markdown_include: the last heading's marks, for inheritHeadingDepth
        for line in lines:
            if "{!" in line:
                out.extend(self._line(line, parent, within, depth))
                continue
            if self.settings.inherit_heading_depth and (h := _ATX.match(line)):
                depth = h.group(0)
            out.append(line)
        return out

    def _line(self, line: str, parent: Path | None, within: tuple[Path, ...],
              depth: str) -> list[str]:
        """One line with its tags expanded, joined to the text around them as each
        extension joins it. One scan: a tag is each closer's last opener."""
        done: list[str] = []
        current: str | None = None  # the line being built, once a tag was expanded
        pending = ""  # the text since the last tag
        at = 0
        while (close := self.close.search(line, at)) is not None:
            start = line.rfind("{!", at, close.start())
            if start < 0:
                pending += line[at:close.end()]
                at = close.end()
                continue
            pending += line[at:start]
            at = close.end()
            if self.mdx and pending.endswith("\\"):  # escaped: shown, less the backslash
                pending = pending[:-1]
                included: tuple[list[str], bool] | None = ([line[start:at]], False)
            else:
                included = self._tag(line[start + 2:close.start()], close.group(1)
                                     if close.re.groups else None, parent, within, depth)
            if included is None:  # not a tag: shown as written
                pending += line[start:at]
                continue
            lines, indent = included
            if not self.mdx:  # markdown_include: the file's text, stripped, in the line
                current = (current or "") + pending + "\r\n".join(lines).strip()
            elif not lines:  # mdx_include starts a line here
                if current is not None:
                    done.append(current)
                current = pending
            elif current is None and indent:
                shifted = [pending + x for x in lines]
                done += shifted[:-1]
                current = shifted[-1]
            else:
                lines = [(current or "") + pending + lines[0], *lines[1:]]
                done += lines[:-1]
                current = lines[-1]
            pending = ""
        if current is None:
            return [line]
        done.append(current + pending + line[at:])
        return done if self.mdx else "\n".join(done).splitlines() or [""]

    def _tag(self, inner: str, picked: str | None, parent: Path | None,
             within: tuple[Path, ...], depth: str) -> tuple[list[str], bool] | None:
        """The lines a tag's inside names and whether each takes the text before it, or
        None when it is no tag."""
        if self.mdx:
            parsed = _mdx_tag(inner)
            if parsed is None:
                return None
            path, rows, flag, indent = parsed
        else:
            path, rows, flag, indent = inner.strip(), None, "", False
            if not path:
                return None
        file = self._resolve(path, parent)
        lines = self._read(path, file, within)
        if lines is None:
            including = parent or self.page
            if including is not None and "://" not in path and file not in within:
                self.files.unresolved(including, None, path, file,
                                      None if len(within) < MAX_DEPTH
                                      else f"nested more than {MAX_DEPTH} deep")
            return [], indent
        if rows is not None:
            lines = _mdx_rows(lines, rows)
        elif picked is not None:
            lines = _picked_lines(lines, picked)
        if self.mdx:
            recursive = self.settings.recursive  # True: unless "-"; None: with "+"; False: no
            if (flag != "-") if recursive else (recursive is None and flag == "+"):
                lines = self.lines(lines, file, (*within, file))
            return lines, indent
        lines = self.lines(lines, file, (*within, file))
        marks = (depth if self.settings.inherit_heading_depth else "") + "#" * max(
            self.settings.heading_offset, 0)
        if marks:
            lines = [marks + x if x.startswith("#") else x for x in lines]
        return lines, False

    def _resolve(self, path: str, parent: Path | None) -> Path:
        if self.settings.relative_to_file and parent is not None:
            return normalized(parent.parent / path)
        return normalized(self.base / path)

    def _read(self, path: str, file: Path, within: tuple[Path, ...]) -> list[str] | None:
        if "://" in path or file in within or len(within) >= MAX_DEPTH:
            return None  # a URL is never fetched while a folder is read
        text = self.files.read(file)
        if text is None:
            return None
        # mdx_include reads a last line end as an empty line, markdown_include does not
        return (text + "\n").splitlines() if self.mdx else text.splitlines()


def _mdx_tag(inner: str) -> tuple[str, str | None, str, bool] | None:
    """(path, rows, recursion flag, indent) of an ``mdx_include`` tag's inside, or None
    when its grammar does not fit: a path holds no ``[``, ``]`` or ``|``."""
    flag = inner[:1] if inner[:1] in ("+", "-") else ""
    inner = inner[len(flag):]
    indent = inner.startswith(">")
    left, bar, encoding = inner[indent:].partition("|")
    if bar and not encoding:
        return None
    left = left.rstrip()
    rows = None
    if left.endswith("]") and (at := left.rfind(_LN)) >= 0:
        rows = left[at + len(_LN):-1]
        if not rows or rows.strip("0123456789.,-"):
            return None
        left = left[:at]
    path = left.strip()
    if not path or any(c in path for c in "[]|"):
        return None
    return path, rows, flag, indent


def _mdx_rows(lines: list[str], spec: str) -> list[str]:
    """The rows ``3``, ``3-9``, ``3-`` (to the last), ``9-3`` and ``-3`` (from the last,
    reversed) of a ``[ln:…]`` slice, its parts two blank lines apart; a column part reads
    as the whole row, and a slice naming row 0 shows nothing (the extension refuses it)."""
    parts: list[list[str]] = []
    for item in spec.split(","):
        if not item:
            continue
        ends = [end.partition(".")[0] for end in item.split("-")]
        if len(ends) > 2 or any(end == "0" or (end and not end.isdigit()) for end in ends):
            return []
        if len(ends) == 1:
            parts.append(lines[int(ends[0]) - 1:int(ends[0])])
            continue
        last = int(ends[1]) if ends[1] else len(lines)
        first = int(ends[0]) if ends[0] else 1 if not ends[1] else len(lines)
        if first <= last:
            parts.append(lines[first - 1:last])
        else:
            parts.append(lines[last - 1:first][::-1])
    out: list[str] = []
    for i, part in enumerate(parts):
        out += (["", ""] if i else []) + part
    return out


def _picked_lines(lines: list[str], picked: str) -> list[str]:
    """markdown_include's ``lines=1 3-5``: each line or range, clamped to the file."""
    out: list[str] = []
    total = len(lines)
    for block in picked.split():
        first, dash, last = block.partition("-")
        if not first.isdigit() or (dash and not last.isdigit()) or not total:
            continue
        end = min(int(last) if dash else int(first), total)
        start = max(min(int(first), end - 1 if dash else end), 1)
        out += lines[start - 1:end]
    return out
