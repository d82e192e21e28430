"""Starlight, Astro's docs theme: an ``astro.config.*`` that uses ``@astrojs/starlight``;
pages under ``src/content/docs`` (``srcDir`` moves ``src``). A page's slug is its path
with each segment github-slugged (``guide/Install Guide.md`` → ``guide/install-guide``),
``index`` dropped, or its front matter ``slug``; it is served at ``slug/`` (``trailingSlash:
'never'``: ``slug``; ``build.format: 'file'``: ``slug.html``). Files named ``_x``,
``draft: true`` pages and ``404.md`` (the not-found page) are no pages. Heading ids are
Astro's: github-slugger over the heading's text, repeats ``-1``; a ``{#id}`` is text. Astro
5 and older then cut one trailing ``-`` (unless ``experimental.headingIdCompat``); the
project's ``package.json`` says which Astro it builds with, and without one the current
rule (no cut) holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import IdRules
from ..chunk.slug import Slugger, slug_plain
from ..extract.dialects import PageFile
from ..extract.hero import starlight_hero
from ..extract.mdx import containers_to_markdown
from ..jsscan import without_comments
from ..projectfiles import first_config, read_config_json
from .base import Generator, Site

_CONFIG_NAMES = ("astro.config.mjs", "astro.config.ts", "astro.config.mts", "astro.config.js",
                 "astro.config.cjs", "astro.config.cts")
_SRC_DIR = re.compile(r"""\bsrcDir\s*:\s*['"]([^'"\n]+)['"]""")
_TRAILING = re.compile(r"""\btrailingSlash\s*:\s*['"](always|never|ignore)['"]""")
_FORMAT = re.compile(  # build: { format: 'file' }; a brace ends a try, so it is linear
    r"""\bbuild\s*:\s*\{[^{}]*?\bformat\s*:\s*['"](file|directory|preserve)['"]""")
_HEADING_ID_COMPAT = re.compile(r"\bheadingIdCompat\s*:\s*true\b")
_MAJOR = re.compile(r"\d+")
_LAST_CUTTING_MAJOR = 5  # Astro 6 keeps the trailing "-", as GitHub does
_PAGE_SUFFIXES = (".md", ".mdx", ".markdown")


class AstroIds(IdRules):
    """Astro's heading ids. With ``cut_dash`` (Astro 5) the slug is made unique first, then
    loses one trailing ``-``, so ``Bar!`` and a later ``Bar-`` can both be ``bar``, as on
    the page."""

    honours_explicit = False

    def __init__(self, *, cut_dash: bool) -> None:
        self._slugger = Slugger()
        self._cut = cut_dash

    def __call__(self, text: str, explicit: str | None = None) -> str:
        slug = self._slugger.dedupe(slug_plain(text))
        return slug[:-1] if self._cut and slug.endswith("-") else slug


def _astro_major(folder: Path) -> int | None:
    """The major version of Astro the project's ``package.json`` asks for, if it says."""
    manifest = read_config_json(folder / "package.json")
    if not isinstance(manifest, dict):
        return None
    for key in ("dependencies", "devDependencies"):
        deps = manifest.get(key)
        spec = deps.get("astro") if isinstance(deps, dict) else None
        major = _MAJOR.search(spec) if isinstance(spec, str) else None
        if major is not None:
            return int(major.group(0)[:6])
    return None


class Starlight(Generator):
    name = "starlight"
    markers = _CONFIG_NAMES
    rank = 60

    def detect(self, folder: Path) -> Site | None:
        found = first_config(folder, _CONFIG_NAMES)
        marker, text = found if found is not None else (folder, "")
        text = without_comments(text)
        if found is None or "@astrojs/starlight" not in text:
            return None  # no Astro site, or one whose content collections kbctl cannot know
        src = _SRC_DIR.search(text)
        trailing = _TRAILING.search(text)
        build = _FORMAT.search(text)
        major = _astro_major(folder)
        cut = (major is not None and major <= _LAST_CUTTING_MAJOR
               and not _HEADING_ID_COMPAT.search(text))
        settings = {"trailingSlash": trailing.group(1) if trailing else "ignore",
                    "format": build.group(1) if build else "directory", "cutDash": cut}
        content = folder / (src.group(1) if src else "src") / "content" / "docs"
        return Site(self.name, content, marker, settings)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"trailingSlash": "ignore", "format": "directory"})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if (rel.suffix.lower() not in _PAGE_SUFFIXES or rel.name.startswith("_")
                or any(p.startswith(".") for p in rel.parts)):
            return None
        if front_matter.get("draft") is True:
            return None
        given = front_matter.get("slug")
        if isinstance(given, str) and given.strip("/ "):
            slug = given.strip("/ ")
        else:
            slug = "/".join(slug_plain(p) for p in rel.with_suffix("").parts)
            slug = "" if slug == "index" else slug.removesuffix("/index")
        if slug == "404":
            return None  # the not-found page
        if not slug:
            return ""
        if site.settings.get("format") == "file":
            return slug + ".html"
        return slug if site.settings.get("trailingSlash") == "never" else slug + "/"

    def markdown(self, text: str, page: PageFile | None) -> str:
        return containers_to_markdown(text)

    def landing(self, front_matter: Mapping[str, Any]) -> str:
        return starlight_hero(front_matter)

    def heading_ids(self, site: Site) -> AstroIds:
        return AstroIds(cut_dash=bool(site.settings.get("cutDash")))


GENERATOR = Starlight()
