"""What a docs generator profile is: how a source file becomes its published page and how
a heading becomes its element id.

A citation ``url#anchor`` is only worth something if it opens the right section of the
live site, and every generator has its own rules for both halves. A ``Generator`` knows
its marker files, reads the settings that change URLs and ids into a ``Site``, and from
that site answers the page of a file, the ids of a page's headings, and how its markdown
reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path, PurePosixPath
from types import MappingProxyType
from typing import Any

from ..chunk.anchors import HeadingIds
from ..extract.dialects import PageFile

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


class Generator:
    """One docs generator, whole: its marker files and detection, the published page of a
    file, the ids of a page's headings, the markdown dialect its pages are written in, the
    text a landing page's front matter shows and what its HTML templates render. A profile
    subclasses this, overrides what its generator does differently, and is registered by
    one line in ``GENERATORS`` (``generators/__init__.py``).

    ``rank`` places the profile in detection (lower first: the most specific markers,
    since a Docusaurus project may also hold a ``_config.yml`` for GitHub Pages); None
    for a profile used only when named (``sphinx-dirhtml``, ``plain``).
    """

    name: str = ""
    markers: tuple[str, ...] = ()
    rank: int | None = None

    def detect(self, folder: Path) -> Site | None:
        """The site whose marker sits in ``folder``, with its settings; else None."""
        return None

    def default_site(self, root: Path) -> Site:
        """The site to use when the generator is chosen but no marker is found."""
        return Site(self.name, root)

    def guess(self, folder: Path) -> Site | None:
        """The site ``folder`` is laid out as although no marker says so; else None."""
        return None

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        """Path of the published page (relative to the site's base URL, no leading ``/``)
        of the content file ``rel``; None when the generator does not publish it.
        ``front_matter`` is ``NO_FRONT_MATTER`` for a file that has none (Jekyll publishes
        such a file as it is, not as a page)."""
        raise NotImplementedError

    def title(self, site: Site, rel: PurePosixPath, written: str | None) -> str | None:
        """The title the generator shows for the page ``rel``, given the one the file
        writes (front matter, first H1)."""
        return written

    def expires(self, site: Site, front_matter: Mapping[str, Any]) -> datetime | None:
        """When the generator stops publishing a page with this front matter; None when
        it never does."""
        return None

    def heading_ids(self, site: Site) -> HeadingIds:
        """A fresh allocator for one page."""
        raise NotImplementedError

    def markdown(self, text: str, page: PageFile | None) -> str:
        """A page's markdown read as its pages show it (the generator's dialect); ``page``
        is None for a page that was not read from the project's files."""
        return text

    def landing(self, front_matter: Mapping[str, Any]) -> str:
        """The text a landing page's front matter shows before its body."""
        return ""

    def template(self, html: str) -> str:
        """An HTML page of the site (one with front matter) as the generator renders it
        for the browser."""
        return html


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
