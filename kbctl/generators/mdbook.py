"""mdBook: ``book.toml``; chapters under ``[book] src`` (default ``src``) listed in
``SUMMARY.md``; ``ch01.md`` → ``ch01.html``, ``README.md`` → ``index.html``.

Heading ids follow mdBook's ``id_from_content``: the heading's text content lowercased,
alphanumerics, ``_`` and ``-`` kept, each whitespace character turned into ``-``,
everything else dropped, ``section`` when nothing is left; repeats get ``-1``, ``-2``….
A written ``{#id}`` is used as is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import CountingIds
from ..extract import dialects
from ..extract.dialects import PageFile
from ..projectfiles import read_config_text
from .base import Generator, Site
from .tomlfile import load_toml

_SUMMARY_LINK = re.compile(r"\]\(\s*<?([^)>\s]+\.md)>?(?:\s+\"[^\"]*\")?\s*\)")
# A chapter's name is read back from its link's ``](`` to the nearest ``[`` on its line,
# at most this far: a hostile line of links costs linear time.
MAX_NAME_CHARS = 500


def id_from_content(text: str) -> str:
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "_-":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


class MdBook(Generator):
    name = "mdbook"
    markers = ("book.toml",)
    rank = 10

    def detect(self, folder: Path) -> Site | None:
        marker = folder / "book.toml"
        if not marker.is_file():
            return None
        config = load_toml(read_config_text(marker) or "")
        book = config.get("book") if isinstance(config.get("book"), dict) else {}
        src = book.get("src") if isinstance(book.get("src"), str) else "src"
        content = folder / src
        return Site(self.name, content, marker, {"src": src, **_summary(content)})

    def default_site(self, root: Path) -> Site:
        """No ``book.toml``: the book's default layout, chapters in ``src/`` when ``root``
        holds that folder and no ``SUMMARY.md`` of its own."""
        content = root / "src" if _is_book_folder(root / "src") and not (
            root / "SUMMARY.md").is_file() else root
        return Site(self.name, content, None, _summary(content))

    def guess(self, folder: Path) -> Site | None:
        """A book without its ``book.toml`` (a checkout of its sources alone): a
        ``SUMMARY.md`` linking chapters, in ``folder`` or in its ``src/``."""
        for content in (folder, folder / "src"):
            settings = _summary(content)
            if settings["chapters"]:
                return Site(self.name, content, None, {
                    **settings, "guessed": f"{content / 'SUMMARY.md'} links its chapters"})
        return None

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        chapters = site.settings.get("chapters")
        if rel.suffix.lower() != ".md":
            return None
        if chapters is not None and rel.as_posix() not in chapters:
            return None  # not in SUMMARY.md: mdBook does not render it
        if rel.stem.lower() == "readme":
            rel = rel.with_name("index.md")
        return rel.with_suffix(".html").as_posix()

    def title(self, site: Site, rel: PurePosixPath, written: str | None) -> str | None:
        """The chapter's name in ``SUMMARY.md``, which mdBook shows as the page's title
        (a chapter may open with an H2, or none), else the one it wrote."""
        return site.settings.get("titles", {}).get(rel.as_posix()) or written

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.mdbook(text, page)

    def heading_ids(self, site: Site) -> CountingIds:
        return CountingIds(id_from_content, empty="section", reserve_explicit=False)


def _is_book_folder(folder: Path) -> bool:
    return (folder / "SUMMARY.md").is_file()


def _summary(content: Path) -> dict[str, Any]:
    """``chapters``: the chapter paths linked from ``SUMMARY.md`` (None when there is no
    summary); ``titles``: each one's name there (its first link wins)."""
    text = read_config_text(content / "SUMMARY.md")
    if text is None:
        return {"chapters": None, "titles": {}}
    titles: dict[str, str] = {}
    for match in _SUMMARY_LINK.finditer(text):
        target = match.group(1).split("#", 1)[0]
        parts = PurePosixPath(target.removeprefix("./")).parts
        if ".." not in parts:
            titles.setdefault(PurePosixPath(*parts).as_posix(), _name(text, match.start()))
    return {"chapters": frozenset(titles), "titles": titles}


def _name(text: str, end: int) -> str:
    """The link text ending at ``end`` (its ``]``), from the nearest ``[`` on its line."""
    start = max(text.rfind("\n", 0, end) + 1, end - MAX_NAME_CHARS)
    opening = text.rfind("[", start, end)
    return text[opening + 1:end].strip() if opening >= 0 else ""


GENERATOR = MdBook()
