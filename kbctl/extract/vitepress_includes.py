"""VitePress' inclusions, expanded as VitePress expands them, so a page reads with the
parts and code files it shows.

- ``<!--@include: ./parts/basics.md-->`` puts that file there (its front matter aside)
  before the page is read, code blocks included: ``{3,}``, ``{,10}``, ``{2,5}`` select
  lines, ``#name`` a region (the lines between ``#region name`` and ``#endregion``
  markers, in the comment styles VitePress knows) or, when the file has no such region,
  the section under its heading of that id;
- ``<<< @/snippets/demo.js{2}`` alone on a line (outside code) becomes a code block of that
  file, in the language its braces name (``{1,2 ts}``) or its extension says; ``#name``
  takes a region, dedented and without its markers.

A path starting ``@`` is under the source root (``srcDir``), any other next to the file
that names it. Files are read under ``includes``' rules; an inclusion that cannot be
read shows nothing (VitePress' ``silent`` reading), one of a file inside itself is left
as written, and inclusions nest ten levels deep at most.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from ..chunk.headings import block_tokens, heading_texts, normalize_source
from ..chunk.slug import mdit_vue_slugify
from ..frontmatter import without_front_matter
from .includes import IncludedFiles, normalized
from .inline_html import FENCE, fence_end, fenced

MAX_DEPTH = 10
# Regions open at once past this are read as plain lines: a closing marker looks through
# the open ones, and a hostile file could open tens of thousands.
MAX_OPEN_REGIONS = 64
# Every scan here is linear in the text, whatever it holds: suffixes are peeled off with
# string methods, and a pattern never retries a run from each of its characters.
_HEAD = re.compile(r"\s*@include:")
_RANGE = re.compile(r"\{(\d*),(\d*)\}$")
_SNIPPET = re.compile(r" {0,3}<<<[ \t]+(\S.*)")
_SNIPPET_REGION = re.compile(r"#([\w.-]+)$")
_LINES = re.compile(r"\d+(?:[,-]\d+)*")
_EXTENSION = re.compile(r"\.([a-zA-Z0-9]+)$")
_BLANK_OR_BRACE = re.compile(r"[\s{]")
# VitePress' region markers, (start, end) per comment style; a name is what follows.
_MARKERS = [
    (re.compile(r"\s*(?://\s*#?|(?:--|::|@?[rR][eE][mM])\s*#)region\b(.*)"),
     re.compile(r"\s*(?://\s*#?|(?:--|::|@?[rR][eE][mM])\s*#)endregion\b(.*)")),
    (re.compile(r"\s*#\s*(?:#\s*|pragma\s+)?[rR]egion\b(.*)"),
     re.compile(r"\s*#\s*(?:#\s*|pragma\s+)?[eE]nd ?[rR]egion\b(.*)")),
    (re.compile(r"\s*<!--\s*#?region\b(.*?)-->"), re.compile(r"\s*<!--\s*#?endregion\b(.*?)-->")),
    (re.compile(r"\s*/\*\s*#region\b(.*?)\*/"), re.compile(r"\s*/\*\s*#endregion\b(.*?)\*/")),
    (re.compile(r"\s*\(\*\s*#region\b(.*?)\*\)"), re.compile(r"\s*\(\*\s*#endregion\b(.*?)\*\)")),
]


def expand_includes(text: str, *, page: Path, source_root: Path, project: Path,
                    reads: list[Path] | None = None) -> str:
    """The page ``text`` of the file ``page`` with its inclusions expanded (see above);
    each file read is appended to ``reads``, once."""
    if "@include:" not in text and "<<<" not in text:
        return text
    includes = _Includes(IncludedFiles(project, [] if reads is None else reads), source_root)
    return includes.snippets(includes.markdown(text, page, (normalized(page),)), page)


class _Includes:
    def __init__(self, files: IncludedFiles, source_root: Path) -> None:
        self.files = files
        self.root = source_root

    def _path(self, written: str, beside: Path) -> Path:
        if written.startswith("@"):
            return normalized(self.root / written[2 if written[1:2] in ("/", "\\") else 1:])
        return normalized(beside.parent / written)

    def markdown(self, text: str, file: Path, within: tuple[Path, ...]) -> str:
        """``text`` of ``file`` with its ``<!--@include: …-->`` comments expanded. The next
        ``-->`` and the next line end are each found once for every comment before them."""
        out: list[str] = []
        pos = start = 0
        close = newline = -1
        while (start := text.find("<!--", start)) >= 0:
            if close < start + 4:
                close = text.find("-->", start + 4)
                if close < 0:
                    break
            head = _HEAD.match(text, start + 4)
            if head is not None and newline < head.end():
                newline = text.find("\n", head.end())
                newline = len(text) if newline < 0 else newline
            if head is None or head.end() > close or newline < close:
                start += 4  # not an inclusion (VitePress reads its path on one line)
                continue
            out.append(text[pos:start])
            out.append(self._included(text[head.end():close].strip(), file, within,
                                      text[start:close + 3]))
            pos = start = close + 3
        out.append(text[pos:])
        return "".join(out)

    def _included(self, written: str, file: Path, within: tuple[Path, ...],
                  comment: str) -> str:
        range_ = _RANGE.search(written)
        if range_:
            written = written[:range_.start()]
        region = _region_suffix(written)
        if region:
            written = written[:-len(region) - 1]
        if not written:
            return comment
        path = self._path(written, file)
        if path in within:
            return comment  # a file inside itself: left as written
        text = self.files.read(path) if len(within) <= MAX_DEPTH else None
        if text is None:
            self.files.unresolved(file, None, written, path, None if len(within) <= MAX_DEPTH
                                  else f"nested more than {MAX_DEPTH} deep")
            return ""
        if path.suffix == ".md" and (region or not range_):
            text = without_front_matter(text)
        lines = text.split("\n")
        if region:
            found = _regions(lines, region)
            lines = found if found is not None else _section(lines, region)
        if range_ and lines:
            first = int(range_.group(1)) if range_.group(1) else 1
            last = int(range_.group(2)) if range_.group(2) else len(lines)
            lines = lines[first - 1:last] if 1 <= first <= last <= len(lines) else []
        content = "\n".join(lines)
        if not content:
            return ""
        return self.markdown(content, path, (*within, path))

    def snippets(self, text: str, page: Path) -> str:
        """``text`` with each ``<<< path`` line outside code made the code block it shows."""
        if "<<<" not in text:
            return text
        lines = text.split("\n")
        out: list[str] = []
        i = 0
        while i < len(lines):
            if fence := FENCE.match(lines[i]):
                end = fence_end(lines, i + 1, fence.group(1), fence.start(1))
                out.extend(lines[i:end + 1])
                i = end + 1
                continue
            snippet = _SNIPPET.fullmatch(lines[i]) if "<<<" in lines[i] else None
            out.extend(self._code(snippet.group(1), page) if snippet else [lines[i]])
            i += 1
        return "\n".join(out)

    def _code(self, written: str, page: Path) -> list[str]:
        written = written.rstrip(" \t")
        title = written.find("[")
        if written.endswith("]") and 0 <= title < len(written) - 2:
            written = written[:title].rstrip()  # a code group's tab title
        language = ""
        brace = written.rfind("{")
        if written.endswith("}") and brace > 0:
            meta = written[brace + 1:-1].split()
            written = written[:brace].rstrip()
            if meta and _LINES.fullmatch(meta[0]):
                meta = meta[1:]
            language = meta[0].split(":")[0] if meta else ""  # "ts:line-numbers"
        region = _SNIPPET_REGION.search(written)
        if region:
            written = written[:region.start()]
        path = self._path(written.strip(), page)
        text = self.files.read(path)
        if text is None:
            self.files.unresolved(page, None, written.strip(), path)
            return []
        lines = text.split("\n")
        if region:
            found = _regions(lines, region.group(1), strip=True)
            if found is None:
                return []
            lines = textwrap.dedent("\n".join(found)).split("\n")
        while lines and not lines[-1].strip():
            lines.pop()
        extension = _EXTENSION.search(path.name)
        return fenced("\n".join(lines), language or (extension.group(1) if extension else ""))


def _marker(line: str, end: bool) -> str | None:
    """The region name a start (``end``: end) marker line gives, or None."""
    for start_marker, end_marker in _MARKERS:
        m = (end_marker if end else start_marker).match(line)
        if m:
            name = m.group(1).strip()
            return name[1:-1] if len(name) > 1 and name[0] == name[-1] == '"' else name
    return None


def _regions(lines: list[str], name: str, *, strip: bool = False) -> list[str] | None:
    """The lines of every region called ``name``, joined (``strip``: without the marker
    lines inside them); None when there is none."""
    opened: list[tuple[str, int]] = []
    spans: list[tuple[int, int]] = []
    for i, line in enumerate(lines):
        if "region" not in line.lower():
            continue
        started = _marker(line, end=False)
        if started is not None:
            if len(opened) < MAX_OPEN_REGIONS:
                opened.append((started, i + 1))
            continue
        ended = _marker(line, end=True) if opened else None
        if ended is None:
            continue
        index = next((k for k in range(len(opened) - 1, -1, -1)
                      if not ended or opened[k][0] == ended), -1)
        if index < 0:
            continue
        closed = opened[index]
        del opened[index:]
        if closed[0] == name and all(n != name for n, _ in opened):
            spans.append((closed[1], i))
    if not spans:
        return None
    kept = [line for first, last in spans for line in lines[first:last]]
    if strip:
        kept = [line for line in kept if "region" not in line.lower() or (
            _marker(line, end=False) is None and _marker(line, end=True) is None)]
    return kept


def _section(lines: list[str], anchor: str) -> list[str]:
    """The lines under the heading whose id is ``anchor``, up to the next heading of its
    level or above; none when no heading has that id."""
    tokens = block_tokens(normalize_source("\n".join(lines)))
    level, first = 0, -1
    for i, token in enumerate(tokens):
        if token.type != "heading_open" or token.level != 0 or token.map is None:
            continue
        depth = int(token.tag[1:])
        if first >= 0 and depth <= level:
            return lines[first:token.map[0]]
        if first < 0:
            _, plain, explicit = heading_texts(tokens[i + 1].content)
            if (explicit or mdit_vue_slugify(plain)) == anchor:
                level, first = depth, token.map[1]
    return lines[first:] if first >= 0 else []


def _region_suffix(written: str) -> str:
    """The region an inclusion names (``part.md#name``): after the first ``#`` past the
    last blank or brace, as VitePress' pattern finds it; "" for none."""
    blanks = [m.start() for m in _BLANK_OR_BRACE.finditer(written)]
    mark = written.find("#", blanks[-1] + 1 if blanks else 0)
    return written[mark + 1:] if 0 <= mark < len(written) - 1 else ""
