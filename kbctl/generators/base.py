"""What a docs generator profile is: how a source file becomes its published page and how
a heading becomes its element id.

A citation ``url#anchor`` is only worth something if it opens the right section of the
live site, and every generator has its own rules for both halves. A ``Generator`` knows
its marker files, reads the settings that change URLs and ids into a ``Site``, and from
that site answers two questions: the page of a file, and the ids of a page's headings.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any, Protocol

# a front matter time as generators write it: 2024-01-02, 2024-01-02 10:30:00 +0200, …Z
_WHEN = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T]+(\d{1,2}):(\d{2})(?::(\d{2}))?"
                   r"(?:\.\d+)?)?[ \t]*(?:(Z)|([+-])(\d{2}):?(\d{2}))?")

# The front matter ``page`` gets (compared by identity) for a file read and found to have no
# front matter block, and for a file not read yet (a block is assumed; a rule that its own
# front matter could undo must wait); any other mapping is the file's own.
NO_FRONT_MATTER: Mapping[str, Any] = MappingProxyType({})
UNREAD: Mapping[str, Any] = MappingProxyType({})


@dataclass(frozen=True)
class Site:
    """A generator applied to one project: where its content lives and its settings.

    ``content`` is the folder whose files are published (mdBook's ``src``, MkDocs'
    ``docs_dir``, Hugo's ``content``…); page paths are relative to it. ``marker`` is the
    file that identified the generator (None when it was chosen without one); ``root``
    the project folder, when it is not the marker's (VitePress' is above ``.vitepress/``).
    """

    generator: str
    content: Path
    marker: Path | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    root: Path | None = None
    named: bool = False  # the user named the generator (--generator), not the marker

    @property
    def project(self) -> Path:
        """The project's folder: what its pages may take files from, and where its
        generator's config lives."""
        if self.root is not None:
            return self.root
        return self.marker.parent if self.marker is not None else self.content

    def describe(self) -> str:
        if self.marker is None:
            guessed = self.settings.get("guessed")
            how = (f"assumed with no {self.generator} config file: {guessed}" if guessed
                   else "chosen")
        else:
            how = f"as asked, with the settings of {self.marker}" if self.named else (
                f"detected from {self.marker}")
        return f"{self.generator} ({how})"


class HeadingIds(Protocol):
    """Per-page id allocator: the id a generator gives each heading, in document order."""

    honours_explicit: bool
    reads_source: bool  # slug the heading's markdown source rather than its rendered text
    idless_levels: frozenset[int]  # levels whose id is allocated but not put on the page
    block_attributes: bool  # kramdown: a "{: #id}" line right after a heading names it
    # a trailing "{#id .class k=v}" is cut and its #id used: the generator's splitter
    # (goldmark's, Pandoc's), returning (text, id) or None when the heading ends in none
    attribute_lists: Callable[[str], tuple[str, str | None] | None] | None
    # definition list terms take ids from the same allocator, in document order (Hugo's
    # autoDefinitionTermID): a heading after a term of its text is numbered past it
    definition_terms: bool

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        """Id of a heading whose rendered text is ``text``; ``explicit`` is a written
        ``{#id}`` attribute (None when absent). None: the heading has no id."""
        ...

    def displayed(self, heading: str) -> str:
        """The heading's markdown as the page shows it (Docsify hides ``:id=name``)."""
        ...


class Generator(Protocol):
    """One docs generator: detection, page paths and heading ids. A generator that stops
    publishing a page at a date (Hugo's ``expiryDate``) also has ``expires(site,
    front_matter) -> datetime | None``, which ``generators.expiry`` asks for."""

    name: str
    markers: tuple[str, ...]

    def detect(self, folder: Path) -> Site | None:
        """The site whose marker sits in ``folder``, with its settings; else None."""
        ...

    def default_site(self, root: Path) -> Site:
        """The site to use when the generator is chosen but no marker is found."""
        ...

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        """Path of the published page (relative to the site's base URL, no leading ``/``)
        of the content file ``rel``; None when the generator does not publish it.
        ``front_matter`` is ``NO_FRONT_MATTER`` for a file that has none (Jekyll publishes
        such a file as it is, not as a page)."""
        ...

    def heading_ids(self, site: Site) -> HeadingIds:
        """A fresh allocator for one page."""
        ...


class IdRules:
    """The common answers of a ``HeadingIds``; an allocator overrides what differs."""

    honours_explicit: bool = True
    reads_source: bool = False
    idless_levels: frozenset[int] = frozenset()
    block_attributes: bool = False
    attribute_lists: Callable[[str], tuple[str, str | None] | None] | None = None
    definition_terms: bool = False

    def displayed(self, heading: str) -> str:
        return heading


class CountingIds(IdRules):
    """The common allocator: slug the text, then make it unique with ``-1``, ``-2``…

    ``reserve_explicit`` says whether a written ``{#id}`` blocks later slugs (as
    Python-Markdown and GitHub do) or is simply used (mdBook, Hugo); ``number_explicit``
    numbers a repeated one like a slug (mystmd's labels). ``first_repeat`` is the number
    the first repeat gets (``markdown-it-anchor`` 5 starts at 2). ``empty`` is the id of a
    heading whose text slugs to nothing; None: it has none.
    """

    def __init__(self, slug: Callable[[str], str], *, empty: str | None = "",
                 honour_explicit: bool = True, reserve_explicit: bool = True,
                 number_explicit: bool = False, first_repeat: int = 1,
                 reads_source: bool = False) -> None:
        self.reads_source = reads_source
        self._slug = slug
        self._empty = empty
        self.honours_explicit = self._honour = honour_explicit
        self._reserve = reserve_explicit
        self._number_explicit = number_explicit
        self._first_repeat = first_repeat
        self._used: set[str] = set()
        self._next: dict[str, int] = {}

    def __call__(self, text: str, explicit: str | None = None) -> str | None:
        if explicit is not None and self._honour:
            if not self._number_explicit:
                if self._reserve:
                    self._used.add(explicit)
                return explicit
            base: str | None = explicit
        else:
            base = self._slug(text) or self._empty
        if base is None:
            return None
        # the search for a free suffix resumes where the last one for this base stopped
        # (ids are only ever added), so k equal headings cost O(k), not O(k²)
        n = self._next.get(base, 0)
        candidate = f"{base}-{n}" if n else base
        while candidate in self._used:
            n = max(n + 1, self._first_repeat)
            candidate = f"{base}-{n}"
        self._next[base] = max(n + 1, self._first_repeat)
        self._used.add(candidate)
        return candidate


def front_matter_time(value: Any, zone: tzinfo = timezone.utc) -> datetime | None:
    """A front matter date (a YAML date or timestamp, or a string such as
    ``2024-01-02 10:30:00 +0200``) as an aware time; None when it is none of those. A
    date, or a time without an offset, is taken in ``zone``."""
    if isinstance(value, str):
        value = _parsed_time(value.strip())
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=zone)
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day, tzinfo=zone)
    return None


def _parsed_time(text: str) -> datetime | date | None:
    m = _WHEN.fullmatch(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, utc, sign, off_h, off_m = m.groups()
    try:
        if hour is None:
            return date(int(year), int(month), int(day))
        zone = timezone.utc if utc else None if sign is None else timezone(
            (-1 if sign == "-" else 1) * timedelta(hours=int(off_h), minutes=int(off_m)))
        return datetime(int(year), int(month), int(day), int(hour), int(minute),
                        int(second or 0), tzinfo=zone)
    except ValueError:  # month 13, an offset past a day…
        return None


def is_future(value: Any) -> bool:
    when = front_matter_time(value)
    return when is not None and when > datetime.now(timezone.utc)
