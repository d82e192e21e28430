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

from ..projectfiles import read_config_text
from .base import CountingIds, Site
from .tomlfile import load_toml

_SUMMARY_LINK = re.compile(r"\]\(\s*<?([^)>\s]+\.md)>?(?:\s+\"[^\"]*\")?\s*\)")


def id_from_content(text: str) -> str:
    out = []
    for ch in text.strip().lower():
        if ch.isalnum() or ch in "_-":
            out.append(ch)
        elif ch.isspace():
            out.append("-")
    return "".join(out)


class MdBook:
    name = "mdbook"
    markers = ("book.toml",)

    def detect(self, folder: Path) -> Site | None:
        marker = folder / "book.toml"
        if not marker.is_file():
            return None
        config = load_toml(read_config_text(marker) or "")
        book = config.get("book") if isinstance(config.get("book"), dict) else {}
        src = book.get("src") if isinstance(book.get("src"), str) else "src"
        content = folder / src
        return Site(self.name, content, marker, {"src": src, "chapters": _chapters(content)})

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"chapters": _chapters(root)})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        chapters = site.settings.get("chapters")
        if rel.suffix.lower() != ".md":
            return None
        if chapters is not None and rel.as_posix() not in chapters:
            return None  # not in SUMMARY.md: mdBook does not render it
        if rel.stem.lower() == "readme":
            rel = rel.with_name("index.md")
        return rel.with_suffix(".html").as_posix()

    def heading_ids(self, site: Site) -> CountingIds:
        return CountingIds(id_from_content, empty="section", reserve_explicit=False)


def _chapters(content: Path) -> frozenset[str] | None:
    """Chapter paths linked from ``SUMMARY.md`` (None when there is no summary)."""
    text = read_config_text(content / "SUMMARY.md")
    if text is None:
        return None
    found = set()
    for match in _SUMMARY_LINK.finditer(text):
        target = match.group(1).split("#", 1)[0]
        parts = PurePosixPath(target.removeprefix("./")).parts
        if ".." not in parts:
            found.add(PurePosixPath(*parts).as_posix())
    return frozenset(found)


GENERATOR = MdBook()
