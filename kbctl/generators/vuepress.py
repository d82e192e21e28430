"""VuePress: a ``.vuepress/`` folder in the source folder (``docs/.vuepress``). Every
``.md`` file there is a page (not ``.vuepress/`` itself, hidden folders or
``node_modules``): ``guide/install.md`` → ``guide/install.html``, ``README.md`` or
``index.md`` → the folder (``guide/``); front matter ``permalink`` (a path without
placeholders) moves a page.

Heading ids follow the version:
- VuePress 1 (any other config; ``markdown-it-anchor`` 5): VuePress' slugify
  (NFKD, accents, control characters dropped, runs of spaces and punctuation (dashes ``–``
  ``—`` too) → ``-``, trimmed, a leading digit prefixed with ``_``, lowercased); a repeat
  gets ``-2``, ``-3``…; ``{#id}`` is text.
- VuePress 2 (``defineUserConfig``, a bundler; ``markdown-it-anchor`` 9): ``@mdit-vue``'s
  slugify, as VitePress', repeats ``-1``, ``-2``…; emoji shortcodes not counted either,
  and ``{#id}`` is text (VuePress 2 has no attribute plugin, VitePress has).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from ..chunk.anchors import CountingIds
from ..chunk.slug import mdit_vue_slugify
from ..extract import dialects
from ..extract.dialects import PageFile
from ..jsscan import JS_SUFFIXES, without_comments
from ..projectfiles import first_config
from .base import Generator, Site
from .vitepress import without_emoji

_CONFIG_NAMES = ("config.js", "config.ts", "config.mjs", "config.cjs", "config.mts",
                 "config.yml", "config.yaml", "config.toml")
_VERSION_2 = re.compile(r"\bdefineUserConfig\b|@vuepress/bundler|\b(?:vite|webpack)Bundler\b")
_INDEX_STEMS = ("readme", "index")
_SKIPPED = {"node_modules"}


def vuepress1_slugify(text: str) -> str:
    """VuePress 1's slugify: ``@mdit-vue``'s, with en and em dashes as separators too."""
    return mdit_vue_slugify(text.replace("–", " ").replace("—", " "))


class VuePress(Generator):
    name = "vuepress"
    markers = (".vuepress",)
    rank = 50

    def detect(self, folder: Path) -> Site | None:
        config_dir = folder / ".vuepress"
        if not config_dir.is_dir():
            return None
        marker, text = first_config(config_dir, _CONFIG_NAMES) or (config_dir, "")
        if marker.suffix in JS_SUFFIXES:
            text = without_comments(text)
        version = 2 if _VERSION_2.search(text) else 1
        return Site(self.name, folder, marker, {"version": version}, root=folder)

    def default_site(self, root: Path) -> Site:
        return Site(self.name, root, None, {"version": 1})

    def page(self, site: Site, rel: PurePosixPath, front_matter: Mapping[str, Any]) -> str | None:
        if rel.suffix.lower() != ".md" or any(
                p.startswith(".") or p in _SKIPPED for p in rel.parts):
            return None
        permalink = front_matter.get("permalink")
        if isinstance(permalink, str) and permalink.strip() and ":" not in permalink:
            return permalink.strip().lstrip("/")
        parent = "" if rel.parent.as_posix() == "." else rel.parent.as_posix() + "/"
        if rel.stem.lower() in _INDEX_STEMS:
            return parent
        return rel.with_suffix(".html").as_posix()

    def markdown(self, text: str, page: PageFile | None) -> str:
        return dialects.vitepress(text, page)  # VitePress' containers and code imports came from it

    def heading_ids(self, site: Site) -> CountingIds:
        # markdown-it-anchor counts only a heading's text and code (no emoji) and, with no
        # attribute plugin loaded, takes a written {#id} as text; version 5 (VuePress 1)
        # numbers the first repeat -2
        version_1 = site.settings.get("version") != 2
        slug = vuepress1_slugify if version_1 else mdit_vue_slugify
        return CountingIds(lambda text: slug(without_emoji(text)), honour_explicit=False,
                           first_repeat=2 if version_1 else 1)


GENERATOR = VuePress()
