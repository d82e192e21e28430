"""Hugo's ``permalinks``: a section's pages (or its section pages) published at a pattern
such as ``/:section/:year/:month/:slug/`` instead of their content path.

Read from the config's map forms: ``blog = '/:year/:title/'`` (the pages under ``blog``)
and ``[permalinks.section]`` / ``[permalinks.page]`` tables. A pattern with an attribute
this profile does not know (a Go date layout, ``:sectionslug``) is left to the content
path, as is a page no pattern names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from .base import front_matter_time

PAGE = "page"
SECTION = "section"
_ATTRIBUTE = re.compile(r":\w+(\[.+?\])?")
# Hugo's default ``frontmatter.date``: the first of these the page sets is its date
_DATE_KEYS = ("date", "publishdate", "pubdate", "published", "lastmod", "modified")
_SECTION_PAGES = ("_index.md", "_index.markdown", "_index.html")
_ALLOWED = set("./\\_#+~-@")
# A longer pattern is no page address: a hostile one would cost every page a long scan.
MAX_PATTERN_CHARS = 1024


@dataclass(frozen=True)
class Permalink:
    """One pattern and the pages it names: ``kind`` (page or section) under ``section``
    (a content path such as ``blog`` or ``docs/api``; empty for top-level pages)."""

    kind: str
    section: str
    pattern: str


def permalinks(config: Mapping[str, Any]) -> tuple[Permalink, ...]:
    """The ``permalinks`` of a config (keys lower-cased), the most specific first."""
    raw = config.get("permalinks")
    out: list[Permalink] = []
    for key, value in raw.items() if isinstance(raw, dict) else ():
        if isinstance(value, str):
            out.append(Permalink(PAGE, str(key).strip(" /").lower(), value))
        elif isinstance(value, dict) and key in (PAGE, SECTION):
            out.extend(Permalink(key, str(k).strip(" /").lower(), v)
                       for k, v in value.items() if isinstance(v, str))
    return tuple(sorted(out, key=lambda p: (-p.section.count("/"), -len(p.section), p.kind)))


@dataclass(frozen=True)
class PageFacts:
    """What a pattern can read of one page."""

    content: Path  # the language's content folder
    rel: PurePosixPath  # the file, in that folder
    stem: str  # its name without extension and language
    section_page: bool  # an ``_index`` page
    front_matter: Mapping[str, Any]  # keys lower-cased

    @property
    def path(self) -> str:
        """Hugo's path of the page: ``blog/news/first-post`` (a bundle is its folder)."""
        parts = list(self.rel.parent.parts) if self.rel.parent.as_posix() != "." else []
        if self.stem.lower() not in ("index", "_index"):
            parts.append(self.stem)
        return "/".join(parts).lower().replace(" ", "-")


def expand(links: tuple[Permalink, ...], page: PageFacts) -> str | None:
    """The page's path by the first pattern that names it (no leading ``/``); None when
    none does or its pattern cannot be expanded here."""
    path = page.path
    kind = SECTION if page.section_page else PAGE
    for link in links:
        if link.kind != kind:
            continue
        named = ("/" not in path and path != "") if not link.section else (
            path == link.section or path.startswith(link.section + "/"))
        if named:
            return _expanded(link.pattern, page)
    return None


def _expanded(pattern: str, page: PageFacts) -> str | None:
    if len(pattern) > MAX_PATTERN_CHARS:
        return None
    pattern = pattern.replace("\\:", "\0")
    out = pattern
    for match in _ATTRIBUTE.finditer(pattern):
        value = _attribute(match.group(0)[1:], page)
        if value is None:
            return None
        out = out.replace(match.group(0), value, 1)
    return out.replace("\0", ":").lstrip("/")


def _attribute(name: str, page: PageFacts) -> str | None:
    if name.startswith("sections["):
        return "/".join(_sliced(_sections(page), name[len("sections"):]))
    dated = _DATE_PARTS.get(name)
    if dated is not None:
        return dated(_date(page.front_matter))
    field = _FIELDS.get(name)
    return field(page) if field is not None else None


def _date(front_matter: Mapping[str, Any]) -> datetime:
    for key in _DATE_KEYS:
        when = front_matter_time(front_matter.get(key))
        if when is not None:
            return when
    return datetime(1, 1, 1)


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DATE_PARTS: dict[str, Callable[[datetime], str]] = {
    "year": lambda d: str(d.year),
    "month": lambda d: f"{d.month:02d}",
    "monthname": lambda d: _MONTHS[d.month - 1],
    "day": lambda d: f"{d.day:02d}",
    "weekday": lambda d: str((d.weekday() + 1) % 7),
    "weekdayname": lambda d: _WEEKDAYS[d.weekday()],
    "yearday": lambda d: str(d.timetuple().tm_yday),
}


def urlize(text: str) -> str:
    """Hugo's ``urlize`` of a title or name: letters, digits, marks and ``./_#+~-@`` kept,
    runs of spaces one ``-``, the rest dropped, lower-cased."""
    out: list[str] = []
    hyphen = pending = False
    for ch in text:
        if ch.isalpha() or ch.isdigit() or ch in _ALLOWED or unicodedata.category(ch)[0] == "M":
            hyphen = ch == "-"
            if pending and not hyphen:
                out.append("-")
            pending = False
            out.append(ch)
        elif out and not hyphen and ch.isspace():
            pending = True
    return "".join(out).lower()


def _title(page: PageFacts) -> str:
    title = page.front_matter.get("title")
    return urlize(title) if isinstance(title, str) else ""


def _slug_else(fallback: Callable[[PageFacts], str]) -> Callable[[PageFacts], str]:
    def pick(page: PageFacts) -> str:
        slug = page.front_matter.get("slug")
        return urlize(slug) if isinstance(slug, str) and slug.strip() else fallback(page)
    return pick


def _filename(page: PageFacts) -> str:
    if page.stem.lower() == "_index":
        return ""
    if page.stem.lower() == "index":
        return urlize(page.rel.parent.name)
    return urlize(page.stem)


def _content_base_name(page: PageFacts) -> str:
    bundle = page.stem.lower() in ("index", "_index")
    return urlize(page.rel.parent.name if bundle else page.stem)


def _sections(page: PageFacts) -> list[str]:
    """The page's sections, top first: its top folder, and each folder below that holds a
    section page (a folder without one is no section in Hugo)."""
    bundle = page.stem.lower() == "index" and not page.section_page
    folder = page.rel.parent.parent if bundle else page.rel.parent
    parts = list(folder.parts) if folder.as_posix() != "." else []
    kept = parts[:1]
    for depth in range(2, len(parts) + 1):
        here = page.content.joinpath(*parts[:depth])
        if any((here / name).is_file() for name in _SECTION_PAGES):
            kept = parts[:depth]
    return [p.lower().replace(" ", "-") for p in kept]


def _sliced(items: list[str], cut: str) -> list[str]:
    """Hugo's ``sections[…]``: ``[n]``, ``[last]``, ``[a:b]`` with either end left out."""
    cut = cut.strip().lower()
    if len(cut) < 3 or cut[0] != "[" or cut[-1] != "]":
        return []

    def index(text: str, low: bool) -> int:
        if not text:
            return 0 if low else len(items)
        if text == "last":
            return len(items) - 1
        n = max(int(text), 0) if text.isdigit() else 0
        return (-1 if low else len(items)) if n >= len(items) else n

    inner = cut[1:-1]
    if ":" not in inner:
        n = index(inner, True)
        return [items[n]] if items and n >= 0 else []
    low_text, _, high_text = inner.partition(":")
    low, high = index(low_text, True), index(high_text, False)
    return items[low:high] if 0 <= low <= high else []


_FIELDS: dict[str, Callable[[PageFacts], str]] = {
    "section": lambda page: (_sections(page) or [""])[0],
    "sections": lambda page: "/".join(_sections(page)),
    "title": _title,
    "slug": _slug_else(_title),
    "filename": _filename,
    "slugorfilename": _slug_else(_filename),
    "contentbasename": _content_base_name,
    "slugorcontentbasename": _slug_else(_content_base_name),
}
